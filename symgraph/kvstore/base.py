"""KVStoreBase and the registry of Python key-value stores (MXNet's ``kvstore/base.py``);
``create`` is in :mod:`symgraph.kvstore.kvstore`."""
import warnings

from ..ndarray import NDArray
from ..base import ArgumentError, ArgumentTypeError

__all__ = ['KVStoreBase', 'TestStore', 'LOCAL_TYPES', 'MULTI_PROCESS', 'MULTI_PROCESS_TYPES',
           'NCCL_TYPES']

#: the single-process store types: 'local*' reduce on the CPU, '*device*' on the devices
LOCAL_TYPES = ('local', 'device', 'local_update_cpu', 'local_allreduce_cpu',
               'local_allreduce_device')
#: names of multi-process stores
MULTI_PROCESS = ('dist', 'horovod', 'byteps', 'p3')
#: the multi-process types create() makes: name -> class (filled by kvstore/dist.py)
MULTI_PROCESS_TYPES = {}
#: 'nccl' -> its class (filled by kvstore/nccl.py)
NCCL_TYPES = {}


class KVStoreBase(object):
    """An abstract key-value store interface for data parallel training."""

    #: the capability :meth:`is_capable` is asked about by Module
    OPTIMIZER = 'optimizer'
    kv_registry = {}

    def broadcast(self, key, value, out, priority=0):
        """Broadcast ``value`` (rank 0's) to ``out``."""
        raise NotImplementedError()

    def pushpull(self, key, value, out=None, priority=0):
        """Sum ``value`` over devices (and workers) into ``out`` (``value`` if None)."""
        raise NotImplementedError()

    def set_optimizer(self, optimizer):
        """Register an optimizer with the store."""
        raise NotImplementedError()

    def is_capable(self, capability):
        """Whether the store supports ``capability`` (e.g. ``KVStoreBase.OPTIMIZER``)."""
        raise NotImplementedError()

    def save_optimizer_states(self, fname, dump_optimizer=False):
        """Save the optimizer (updater) states to ``fname``."""
        raise NotImplementedError()

    def load_optimizer_states(self, fname):
        """Load the optimizer (updater) states from ``fname``."""
        raise NotImplementedError()

    @property
    def type(self):
        """The type of this store."""
        raise NotImplementedError()

    @property
    def rank(self):
        """The rank of this worker, in ``[0, num_workers)``."""
        raise NotImplementedError()

    @property
    def num_workers(self):
        """The number of workers."""
        raise NotImplementedError()

    @staticmethod
    def register(klass):
        """Register a store class under its lower-cased name (for :func:`create`)."""
        if not isinstance(klass, type):
            raise ArgumentTypeError('register takes a KVStore class, got %r' % (klass,))
        name = klass.__name__.lower()
        if name in KVStoreBase.kv_registry:
            warnings.warn('WARNING: New kvstore %s.%s is overriding '
                          'existing kvstore %s.%s' %
                          (klass.__module__, klass.__name__,
                           KVStoreBase.kv_registry[name].__module__,
                           KVStoreBase.kv_registry[name].__name__))
        KVStoreBase.kv_registry[name] = klass
        return klass


@KVStoreBase.register
class TestStore(KVStoreBase):
    """A key-value store for testing (MXNet's ``teststore``): one worker, no state;
    ``pushpull`` sums the values on the first one's context."""

    def broadcast(self, key, value, out, priority=0):
        out = out if isinstance(out, list) else [out]
        for o in out:
            o[:] = value

    def pushpull(self, key, value, out=None, priority=0):
        ctx = value[0].context if isinstance(value, list) else value.context
        if isinstance(value, NDArray):
            if out is not None:
                out = out if isinstance(out, list) else [out]
                for o in out:
                    o[:] = value
        else:
            reduced_value = sum([val.as_in_context(ctx) for val in value])
            if out is None:
                for v in value:
                    v[:] = reduced_value
            else:
                out = out if isinstance(out, list) else [out]
                for o in out:
                    o[:] = reduced_value

    @staticmethod
    def is_capable(capability):
        if capability.lower() == KVStoreBase.OPTIMIZER:
            return False
        raise ArgumentError('Unknown capability: {}'.format(capability))

    @property
    def type(self):
        return 'teststore'

    @property
    def rank(self):
        return 0

    @property
    def num_workers(self):
        return 1

    def set_optimizer(self, optimizer):
        raise NotImplementedError()

    def save_optimizer_states(self, fname, dump_optimizer=False):
        raise NotImplementedError()

    def load_optimizer_states(self, fname):
        raise NotImplementedError()
