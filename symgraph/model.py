"""Checkpoints in MXNet's layout: ``prefix-symbol.json`` and ``prefix-%04d.params``."""
from __future__ import annotations

import logging
import warnings
from collections import namedtuple

from . import ndarray as nd
from . import symbol as sym
from .base import MissingFileError
from .ndarray.serialization import ParamsFormatError
# MXNet's model-level kvstore helpers, which Module imports from here as from MXNet's
# model.py (defined in symgraph.kvstore.training)
from .kvstore.training import (_create_kvstore, _initialize_kvstore,  # noqa: F401
                               _update_params_on_kvstore, _update_params_on_kvstore_nccl,
                               _update_params)
from .kvstore import dist as _dist

__all__ = ['save_checkpoint', 'load_checkpoint', 'load_params', 'check_params']

log = logging.getLogger(__name__)

#: what ``fit``/``score`` pass to batch-end and eval-end callbacks (MXNet's namedtuple,
#: whose type name is ``BatchEndParams``)
BatchEndParam = namedtuple('BatchEndParams', ['epoch', 'nbatch', 'eval_metric', 'locals'])


def _dist_rank0_writes():
    """In a multi-process job (a ``'dist_sync'`` store exists): whether this is rank 0, the
    one worker that writes checkpoints. Outside one: True."""
    store = _dist.current()
    return store is None or store.num_workers == 1 or store.rank == 0


def _dist_barrier():
    store = _dist.current()
    if store is not None and store.num_workers > 1:
        store.barrier()


def save_checkpoint(prefix, epoch, symbol, arg_params, aux_params, remove_amp_cast=True):
    """Write ``prefix-symbol.json`` (if a symbol is given) and ``prefix-<epoch>.params``.

    In a multi-process job (a ``'dist_sync'`` kvstore) only rank 0 writes (the parameters
    are the same in every worker), and every worker waits for it (a barrier)."""
    if not _dist_rank0_writes():
        _dist_barrier()
        return
    if symbol is not None:
        symbol.save('%s-symbol.json' % prefix, remove_amp_cast=remove_amp_cast)
    save_dict = {('arg:%s' % k): v.as_in_context(v.context) for k, v in arg_params.items()}
    save_dict.update({('aux:%s' % k): v for k, v in aux_params.items()})
    param_name = '%s-%04d.params' % (prefix, epoch)
    nd.save(param_name, save_dict)
    log.info('Saved checkpoint to "%s"', param_name)
    _dist_barrier()


def load_params(prefix, epoch):
    """``(arg_params, aux_params)`` from ``prefix-<epoch>.params``."""
    fname = '%s-%04d.params' % (prefix, epoch)
    try:
        save_dict = nd.load(fname)
    except FileNotFoundError as e:
        if isinstance(e, MissingFileError):
            raise
        raise MissingFileError(e.errno, 'load_params: no such file (epoch %d of checkpoint %r)'
                               % (epoch, prefix), fname) from None
    if not save_dict:
        # what MXNet writes for a graph without parameters (a header and no arrays; it
        # loads as an empty list): MXNet 1.9.1 returns empty dicts and warns
        warnings.warn("Params file '%s' is empty" % fname, stacklevel=2)
        return {}, {}
    if not isinstance(save_dict, dict):
        raise ParamsFormatError('%s holds an unnamed list of arrays, not a checkpoint' % fname)
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
