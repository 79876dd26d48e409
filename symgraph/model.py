"""Checkpoints in MXNet's layout: ``prefix-symbol.json`` and ``prefix-%04d.params``."""
from __future__ import annotations

import logging
import os
import warnings
from collections import namedtuple

from . import kvstore as kvs
from . import ndarray as nd
from . import symbol as sym
from .base import MXNetError

__all__ = ['save_checkpoint', 'load_checkpoint', 'load_params', 'check_params']

log = logging.getLogger(__name__)

#: what ``fit``/``score`` pass to batch-end and eval-end callbacks (MXNet's namedtuple,
#: whose type name is ``BatchEndParams``)
BatchEndParam = namedtuple('BatchEndParams', ['epoch', 'nbatch', 'eval_metric', 'locals'])


def save_checkpoint(prefix, epoch, symbol, arg_params, aux_params, remove_amp_cast=True):
    """Write ``prefix-symbol.json`` (if a symbol is given) and ``prefix-<epoch>.params``."""
    if symbol is not None:
        symbol.save('%s-symbol.json' % prefix)
    save_dict = {('arg:%s' % k): v.as_in_context(v.context) for k, v in arg_params.items()}
    save_dict.update({('aux:%s' % k): v for k, v in aux_params.items()})
    param_name = '%s-%04d.params' % (prefix, epoch)
    nd.save(param_name, save_dict)
    log.info('Saved checkpoint to "%s"', param_name)


def load_params(prefix, epoch):
    """``(arg_params, aux_params)`` from ``prefix-<epoch>.params``."""
    fname = '%s-%04d.params' % (prefix, epoch)
    save_dict = nd.load(fname)
    if not isinstance(save_dict, dict):
        raise MXNetError('%s holds an unnamed list of arrays, not a checkpoint' % fname)
    arg_params, aux_params = {}, {}
    for k, v in save_dict.items():
        tp, sep, name = k.partition(':')
        if not sep or tp not in ('arg', 'aux'):
            # MXNet skips such entries silently; they are likely a mistake
            warnings.warn('%s: entry %r is neither arg:<name> nor aux:<name>; skipped'
                          % (fname, k), stacklevel=2)
            continue
        (arg_params if tp == 'arg' else aux_params)[name] = v
    return arg_params, aux_params


#: argument names that are parameters by MXNet's naming rules (initializers use the same)
PARAM_SUFFIXES = ('_weight', '_bias', '_gamma', '_beta')


def check_params(symbol, arg_params, aux_params, source='checkpoint'):
    """Warn about parameters the symbol needs but ``source`` lacks, and about entries of
    ``source`` the symbol does not use; MXNet accepts both silently."""
    args, aux = symbol.list_arguments(), symbol.list_auxiliary_states()
    missing = [n for n in args if n.endswith(PARAM_SUFFIXES) and n not in arg_params]
    missing += [n for n in aux if n not in aux_params]
    unused = [n for n in arg_params if n not in args] + \
        [n for n in aux_params if n not in aux]
    if missing:
        warnings.warn('%s lacks parameters of the symbol: %s (they keep whatever the '
                      'executor holds)' % (source, missing), stacklevel=3)
    if unused:
        warnings.warn('%s has entries the symbol does not use: %s' % (source, unused),
                      stacklevel=3)
    return missing, unused


def load_checkpoint(prefix, epoch):
    """``(symbol, arg_params, aux_params)`` of a checkpoint written by MXNet or symgraph.

    Warns when the parameter file lacks a parameter or auxiliary state of the symbol
    (``*_weight``, ``*_bias``, ``*_gamma``, ``*_beta`` and every auxiliary state), or holds
    entries the symbol does not use.
    """
    symbol = sym.load('%s-symbol.json' % prefix)
    arg_params, aux_params = load_params(prefix, epoch)
    check_params(symbol, arg_params, aux_params,
                 source='checkpoint %s-%04d.params' % (prefix, epoch))
    return symbol, arg_params, aux_params


# ---------------------------------------------------------------------------------------------
# The kvstore helpers Module uses (MXNet 1.9.1's model._create_kvstore, _initialize_kvstore,
# _update_params_on_kvstore(_nccl), _update_params), with MXNet's names and behaviour.

def _create_kvstore(kvstore, num_device, arg_params):
    """``(kvstore or None, update_on_kvstore)`` for Module.

    Parameters
    ----------
    kvstore : KVStoreBase, str or None
        A store, or its type: with one device and a non-dist type no store is made.
    num_device : int
        The number of devices.
    arg_params : dict of str to NDArray
        The parameters (a ``'local'`` store does not update parameters of more than
        16M elements itself).
    """
    update_on_kvstore = bool(int(os.getenv('MXNET_UPDATE_ON_KVSTORE', "1")))
    if kvstore is None:
        kv = None
    elif isinstance(kvstore, kvs.KVStoreBase):
        kv = kvstore
    elif isinstance(kvstore, str):
        if num_device == 1 and 'dist' not in kvstore:
            # no need to use kv for single device and single machine
            kv = None
        else:
            kv = kvs.create(kvstore)
            if kvstore == 'local':
                # automatically select a proper local
                max_size = max(int(_prod(param.shape)) for param in arg_params.values())
                if max_size > 1024 * 1024 * 16:
                    update_on_kvstore = False
    else:
        raise TypeError('kvstore must be KVStore, str or None, got %s' % type(kvstore).__name__)

    if kv is None:
        update_on_kvstore = False
    else:
        update_on_kvstore &= kv.is_capable(kvs.KVStoreBase.OPTIMIZER)
    return (kv, update_on_kvstore)


def _prod(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def _initialize_kvstore(kvstore, param_arrays, arg_params, param_names, update_on_kvstore):
    """Initialise the store with the parameters (broadcast to the devices when the store
    runs the optimizer)."""
    for idx, param_on_devs in enumerate(param_arrays):
        name = param_names[idx]
        if not update_on_kvstore:
            kvstore.init(name, arg_params[name])
        else:
            kvstore.broadcast(name, arg_params[name], out=param_on_devs)


def _update_params_on_kvstore_nccl(param_arrays, grad_arrays, kvstore, param_names):
    """Push the gradients and pull the updated weights, in batches of keys."""
    valid_indices = [index for index, grad_list in
                     enumerate(grad_arrays) if grad_list[0] is not None]
    valid_grad_arrays = [grad_arrays[i] for i in valid_indices]
    valid_param_arrays = [param_arrays[i] for i in valid_indices]
    valid_param_names = [param_names[i] for i in valid_indices]
    size = len(valid_grad_arrays)
    start = 0
    batch = int(os.getenv('MXNET_UPDATE_AGGREGATION_SIZE', '16'))
    while start < size:
        end = start + batch if start + batch < size else size
        kvstore.pushpull(valid_param_names[start:end], valid_grad_arrays[start:end],
                         out=valid_param_arrays[start:end], priority=-start)
        start = end


def _update_params_on_kvstore(param_arrays, grad_arrays, kvstore, param_names):
    """Push each parameter's gradients (one per device) and pull the updated weights: the
    store runs the optimizer."""
    for index, pair in enumerate(zip(param_arrays, grad_arrays)):
        arg_list, grad_list = pair
        if grad_list[0] is None:
            continue
        name = param_names[index]
        kvstore.pushpull(name, grad_list, out=arg_list, priority=-index)


def _update_params(param_arrays, grad_arrays, updater, num_device,
                   kvstore=None, param_names=None):
    """Sum the gradients through the store (if any), then run ``updater`` on every device's
    copy; the index of parameter i on device k is ``i*num_device + k``, as MXNet's."""
    updates = [[] for _ in range(num_device)]
    for i, pair in enumerate(zip(param_arrays, grad_arrays)):
        arg_list, grad_list = pair
        if grad_list[0] is None:
            continue
        index = i
        if kvstore:
            name = param_names[index]
            kvstore.pushpull(name, grad_list, priority=-index)
        for k, p in enumerate(zip(arg_list, grad_list)):
            w, g = p
            updates[k].append((index * num_device + k, g, w))
    for dev_updates in updates:
        if dev_updates:
            i, w, g = zip(*dev_updates)
            updater(i, w, g)
