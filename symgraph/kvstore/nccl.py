"""The ``'nccl'`` key-value store (MXNet's ``KVStoreNCCL``): the values pushed from the GPUs
of this process are summed with NCCL (:func:`symgraph.dist.nccl.clique`: one communicator
per GPU, one grouped all-reduce per key) instead of symgraph's ring; otherwise it is the
``'device'`` store (the sum stays on the GPUs, the optimizer runs there).

Every value must be on a distinct GPU, as NCCL needs one rank per device; CPU values and
gradient compression are refused with a clear error, as in MXNet.
"""
from ..dist.nccl import clique
from ..base import ArgumentError
from .base import NCCL_TYPES
from .kvstore import KVStore

__all__ = ['NCCLKVStore']


def _devices(vals, what):
    devices = []
    for v in vals:
        if v.context.device_type != 'gpu':
            raise ArgumentError("%s: the 'nccl' kvstore reduces GPU arrays, got one on %s "
                                "(use 'local' or 'device' for CPU contexts)" % (what, v.context))
        devices.append(v.context.device_id)
    return devices


class NCCLKVStore(KVStore):
    """A store over the GPUs of this process, reduced with NCCL (``create('nccl')``)."""

    def __init__(self, name='nccl'):
        super().__init__('device')
        self._type = name

    @staticmethod
    def _allreduce_inplace(vals):
        clique(_devices(vals, 'push')).allreduce([v._data for v in vals])

    @staticmethod
    def _reduce_devices(vals):
        copies = []
        for v in vals:
            with v.context.device_scope():
                copies.append(v.copy())
        NCCLKVStore._allreduce_inplace(copies)
        return copies[0]

    def set_gradient_compression(self, compression_params):
        """Refused: MXNet's NCCL store has no gradient compression either."""
        raise ArgumentError("Gradient compression is not supported for the 'nccl' kvstore; "
                            "use a 'device' kvstore")


NCCL_TYPES['nccl'] = NCCLKVStore
