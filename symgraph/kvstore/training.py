"""The kvstore helpers of MXNet 1.9.1's ``model.py`` that Module uses, with MXNet's names and
behaviour: ``_create_kvstore``, ``_initialize_kvstore``, ``_update_params_on_kvstore``,
``_update_params_on_kvstore_nccl`` and ``_update_params``.

:mod:`symgraph.model` re-exports them under the same names, where MXNet has them (and
where Module imports them from).
"""
import os

from .base import KVStoreBase
from .kvstore import create
from ..base import ArgumentTypeError

__all__ = ['_create_kvstore', '_initialize_kvstore', '_update_params_on_kvstore',
           '_update_params_on_kvstore_nccl', '_update_params']

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
    elif isinstance(kvstore, KVStoreBase):
        kv = kvstore
    elif isinstance(kvstore, str):
        if num_device == 1 and 'dist' not in kvstore:
            # no need to use kv for single device and single machine
            kv = None
        else:
            kv = create(kvstore)
            if kvstore == 'local':
                # automatically select a proper local
                max_size = max(int(_prod(param.shape)) for param in arg_params.values())
                if max_size > 1024 * 1024 * 16:
                    update_on_kvstore = False
    else:
        raise ArgumentTypeError('kvstore must be KVStore, str or None, got %s'
                                % type(kvstore).__name__)

    if kv is None:
        update_on_kvstore = False
    else:
        update_on_kvstore &= kv.is_capable(KVStoreBase.OPTIMIZER)
    return (kv, update_on_kvstore)


def _prod(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def _initialize_kvstore(kvstore, param_arrays, arg_params, param_names, update_on_kvstore):
    """Initialise the store with the parameters (broadcast to the devices when the store
    runs the optimizer, or when it spans several processes)."""
    for idx, param_on_devs in enumerate(param_arrays):
        name = param_names[idx]
        if not update_on_kvstore:
            kvstore.init(name, arg_params[name])
            if getattr(kvstore, 'fuses_lists', False):
                # a multi-process store: every worker starts from rank 0's values (MXNet
                # leaves each worker with its own, which diverge unless seeded alike)
                kvstore.pull(name, out=param_on_devs)
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
    store runs the optimizer. A store that fuses lists (``'dist_sync'``) gets every key in
    one call."""
    if getattr(kvstore, 'fuses_lists', False):
        valid = [i for i, g in enumerate(grad_arrays) if g[0] is not None]
        if valid:
            kvstore.pushpull([param_names[i] for i in valid], [grad_arrays[i] for i in valid],
                             out=[param_arrays[i] for i in valid])
        return
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
    fused = kvstore and getattr(kvstore, 'fuses_lists', False)
    if fused:
        # a store that fuses lists ('dist_sync') sums every gradient in one call
        valid = [i for i, g in enumerate(grad_arrays) if g[0] is not None]
        if valid:
            kvstore.pushpull([param_names[i] for i in valid], [grad_arrays[i] for i in valid])
    for i, pair in enumerate(zip(param_arrays, grad_arrays)):
        arg_list, grad_list = pair
        if grad_list[0] is None:
            continue
        index = i
        if kvstore and not fused:
            name = param_names[index]
            kvstore.pushpull(name, grad_list, priority=-index)
        for k, p in enumerate(zip(arg_list, grad_list)):
            w, g = p
            updates[k].append((index * num_device + k, g, w))
    for dev_updates in updates:
        if dev_updates:
            i, w, g = zip(*dev_updates)
            updater(i, w, g)
