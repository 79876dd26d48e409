"""Optimizer states pickled in MXNet 1.9.1's format, readable by both.

MXNet's ``Updater.get_states`` (and ``KVStore.save_optimizer_states``,
``Module.save_optimizer_states``) writes ``pickle.dumps(states)`` or ``pickle.dumps((states,
optimizer))``, where each NDArray pickles as ``mxnet.ndarray.ndarray.NDArray(None)`` with the
state ``{'handle': <the array in MXNet's single-array save format>}``, and the optimizer as
an instance of its ``mxnet.optimizer.optimizer`` class with its ``__dict__``.

:func:`dumps` writes exactly that structure from symgraph objects (NDArrays, symgraph's
optimizers and learning rate schedulers under their MXNet names), so MXNet 1.9.1 loads it;
:func:`loads` reads such pickles, from MXNet or from :func:`dumps`, mapping MXNet's classes
to symgraph's. symgraph's NDArray class itself is left as it is: the mapping lives in the
pickler and unpickler here.
"""
import io
import pickle
import struct

from .. import ndarray as nd
from .. import lr_scheduler
from ..ndarray import NDArray
from .optimizer import Optimizer
from ..base import ArgumentTypeError

__all__ = ['dumps', 'loads', 'ndarray_to_raw_bytes', 'ndarray_from_raw_bytes']

#: the header of MXNet's NDArray list files (``mx.nd.save``), and the pickle protocol that
#: MXNet 1.9.1 (Python 3.8) writes by default
_LIST_MAGIC = 0x112
PROTOCOL = 4

_MX_NDARRAY = ('mxnet.ndarray.ndarray', 'NDArray')
_MX_OPTIMIZER_MODULE = 'mxnet.optimizer.optimizer'
_MX_CONTRIB_MODULE = 'mxnet.optimizer.contrib'
_MX_LR_MODULE = 'mxnet.lr_scheduler'
#: optimizers defined by MXNet 1.9.1, by the module that defines them there
_MX_OPTIMIZERS = {
    _MX_OPTIMIZER_MODULE: ('AdaDelta', 'AdaGrad', 'Adam', 'Adamax', 'DCASGD', 'FTML', 'Ftrl',
                           'LARS', 'LBSGD', 'NAG', 'Nadam', 'Optimizer', 'RMSProp', 'SGD',
                           'SGLD', 'Signum', 'LAMB', 'Test', 'ccSGD'),
    _MX_CONTRIB_MODULE: ('GroupAdaGrad',),
}
_MX_SCHEDULERS = ('LRScheduler', 'FactorScheduler', 'MultiFactorScheduler', 'PolyScheduler',
                  'CosineScheduler')


def ndarray_to_raw_bytes(array):
    """``array`` in MXNet's single-array format (``MXNDArraySaveRawBytes``): one record of
    an ``mx.nd.save`` file, without the list header and the name table."""
    buf = io.BytesIO()
    nd.save(buf, [array])
    return buf.getvalue()[24:-8]


def ndarray_from_raw_bytes(raw):
    """The NDArray (on the CPU) of bytes written by :func:`ndarray_to_raw_bytes` or MXNet."""
    blob = struct.pack('<QQQ', _LIST_MAGIC, 0, 1) + bytes(raw) + struct.pack('<Q', 0)
    return nd.load_frombuffer(blob)[0]


class _PickledNDArray(NDArray):
    """What ``mxnet.ndarray.ndarray.NDArray`` unpickles to: ``NDArray(None)`` and then its
    ``{'handle': bytes}`` state, as MXNet's ``__reduce__`` / ``__setstate__``."""

    __slots__ = ()

    def __init__(self, handle=None):  # pylint: disable=super-init-not-called
        if handle is not None:
            raise pickle.UnpicklingError('NDArray pickle with an unexpected argument')

    def __setstate__(self, state):
        if not isinstance(state, dict) or 'handle' not in state:
            raise pickle.UnpicklingError('an MXNet NDArray pickle holds {"handle": bytes}, '
                                         'not %r' % (type(state).__name__,))
        arr = ndarray_from_raw_bytes(state['handle'])
        self._data, self._ctx = arr._data, arr._ctx
        self._ag, self._ver = None, 0


def _aliases():
    """{symgraph class: (MXNet module, MXNet name)} and the reverse mapping."""
    ours = {}
    for module, names in _MX_OPTIMIZERS.items():
        for name in names:
            klass = Optimizer if name == 'Optimizer' else \
                Optimizer.opt_registry.get(name.lower())
            # a user's class registered under a built-in name is not MXNet's class
            if klass is not None and klass.__module__.startswith('symgraph.'):
                ours[klass] = (module, name)
    for name in _MX_SCHEDULERS:
        ours[getattr(lr_scheduler, name)] = (_MX_LR_MODULE, name)
    theirs = {v: k for k, v in ours.items()}
    theirs[_MX_NDARRAY] = _PickledNDArray
    return ours, theirs


class _MXNetPickler(pickle._Pickler):   # pylint: disable=protected-access
    """The pure-Python pickler (whose ``save_global`` can be overridden), writing symgraph's
    NDArrays, optimizers and schedulers under MXNet's module paths."""

    def __init__(self, file, protocol):
        super().__init__(file, protocol)
        self._ours, _ = _aliases()

    def reducer_override(self, obj):
        if isinstance(obj, NDArray):
            return (_PickledNDArray, (None,), {'handle': bytearray(ndarray_to_raw_bytes(obj))})
        return NotImplemented

    def save_global(self, obj, name=None):
        if obj is _PickledNDArray:
            alias = _MX_NDARRAY
        else:
            try:
                alias = self._ours.get(obj)
            except TypeError:       # unhashable
                alias = None
        if alias is None:
            return super().save_global(obj, name)
        module, qualname = alias
        if self.proto >= 4:
            self.save(module)
            self.save(qualname)
            self.write(pickle.STACK_GLOBAL)
        else:
            self.write(pickle.GLOBAL + module.encode('utf-8') + b'\n'
                       + qualname.encode('utf-8') + b'\n')
        self.memoize(obj)
        return None


class _MXNetUnpickler(pickle.Unpickler):
    """Maps MXNet's NDArray, optimizer and scheduler classes to symgraph's."""

    def __init__(self, file):
        super().__init__(file)
        _, self._theirs = _aliases()

    def find_class(self, module, name):
        if module == 'mxnet' or module.startswith('mxnet.'):
            klass = self._theirs.get((module, name))
            if klass is None:
                raise pickle.UnpicklingError(
                    'the pickle refers to MXNet\'s %s.%s, which symgraph has no counterpart '
                    'for' % (module, name))
            return klass
        return super().find_class(module, name)


def _plain(obj, memo=None):
    """``obj`` with every unpickled MXNet NDArray made a plain NDArray; dicts, lists and
    optimizers are changed in place, so objects shared in the pickle stay shared (MXNet's
    ``_index_update_count`` is one of ``_all_index_update_counts``' dicts)."""
    memo = {} if memo is None else memo
    if id(obj) in memo:
        return memo[id(obj)]
    if isinstance(obj, _PickledNDArray):
        out = NDArray(obj._data, obj._ctx)
    elif isinstance(obj, tuple):
        out = tuple(_plain(o, memo) for o in obj)
    else:
        out = obj
        memo[id(obj)] = out          # before recursing: cycles end here
        if isinstance(obj, list):
            obj[:] = [_plain(o, memo) for o in obj]
        elif isinstance(obj, dict):
            for k, v in list(obj.items()):
                obj[k] = _plain(v, memo)
        elif isinstance(obj, Optimizer):
            _plain(obj.__dict__, memo)
    memo[id(obj)] = out
    return out


def dumps(obj, protocol=PROTOCOL):
    """Pickle ``obj`` (states, or ``(states, optimizer)``) in MXNet 1.9.1's format.

    Parameters
    ----------
    obj : object
        Built of NDArrays, numbers, tuples, lists, dicts, optimizers and schedulers.
    protocol : int
        The pickle protocol (MXNet 1.9.1 on Python 3.8 writes 4).

    Returns
    -------
    bytes
    """
    buf = io.BytesIO()
    _MXNetPickler(buf, protocol).dump(obj)
    return buf.getvalue()


def loads(data):
    """Unpickle optimizer states written by MXNet 1.9.1 or :func:`dumps`.

    Raises
    ------
    pickle.UnpicklingError
        The pickle refers to an MXNet class symgraph does not have, or is not a pickle.
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise ArgumentTypeError('optimizer states are bytes (a pickle), got %s'
                                % type(data).__name__)
    return _plain(_MXNetUnpickler(io.BytesIO(data)).load())
