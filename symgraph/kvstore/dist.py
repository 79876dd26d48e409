"""The multi-process key-value stores ``'dist_sync'`` and ``'dist_device_sync'`` (MXNet's
``KVStoreDist`` with synchronous updates), over MPI.

Start the workers with ``python -m symgraph.launch -n N python train.py``. There are no
parameter servers: each worker keeps its own copy of the store, and what MXNet's servers did
is done by every worker alike:

* ``init``: the values of rank 0 are broadcast, so every worker starts from rank 0's;
* ``push``: the values of each key are summed over the worker's devices first (on the CPU
  for ``'dist_sync'``, with the ring over the devices for ``'dist_device_sync'``, as the
  local stores do), then over the workers (:meth:`symgraph.dist.mpi.Communicator.allreduce`);
  without an optimizer the store keeps the sum, with one (``set_optimizer``) every worker
  applies the same update to the same summed gradient, so the weights stay identical;
* ``pull`` copies the stored value out; ``pushpull`` is push then pull.

Keys pushed together (a list) are fused: their values are packed into buckets of at most
``SYMGRAPH_DIST_BUCKET_MB`` megabytes (default 25) per dtype, one all-reduce per bucket
rather than one per key. ``'dist_async'`` is refused: there is no server to apply updates
asynchronously.

When the summed values of a push are on GPUs (one process per GPU), the sum over the
workers runs with NCCL (:class:`symgraph.dist.nccl.ProcessNccl`: rank 0's unique id
broadcast over MPI), the buckets packed on the GPU, nothing copied to the host;
``SYMGRAPH_DIST_NCCL=0`` sends them through the host and MPI instead. Every worker must
use the same kind of context.
"""
import os

import numpy

from ..context import cpu
from ..ndarray import NDArray
from ..dist.mpi import world
from ..dist.nccl import ProcessNccl
from .base import MULTI_PROCESS_TYPES
from .kvstore import KVStore, _pairs

__all__ = ['DistKVStore', 'DIST_TYPES', 'current']

#: the types this store is created for (``'dist_sync_device'`` is MXNet's alias)
DIST_TYPES = ('dist_sync', 'dist_device_sync', 'dist_sync_device')
DEFAULT_BUCKET_MB = 25.0

_created = []


def current():
    """The multi-process store made last in this process, or None (checkpoints are
    written by its rank 0 only)."""
    return _created[-1] if _created else None


def _bucket_bytes():
    text = os.environ.get('SYMGRAPH_DIST_BUCKET_MB', '').strip()
    try:
        mb = float(text) if text else DEFAULT_BUCKET_MB
    except ValueError:
        raise ValueError('SYMGRAPH_DIST_BUCKET_MB must be a number of megabytes, got %r'
                         % text) from None
    if not mb > 0:
        raise ValueError('SYMGRAPH_DIST_BUCKET_MB must be > 0, got %r' % text)
    return int(mb * 1024 * 1024)


def _host_copy(array):
    """A C-contiguous NumPy copy of an NDArray's data (from any device)."""
    data = array._data
    if not isinstance(data, numpy.ndarray):
        data = data.get()
    return numpy.array(data, copy=True, order='C')


class DistKVStore(KVStore):
    """A key-value store over the worker processes of an MPI job (``'dist_sync'``,
    ``'dist_device_sync'``); made by :func:`symgraph.kvstore.create`.

    Parameters
    ----------
    name : str
        The type.
    comm : symgraph.dist.mpi.Communicator, optional
        The workers (by default :func:`symgraph.dist.mpi.world`: all processes of the job,
        which SyncBatchNorm's statistics then span too).
    bucket_bytes : int, optional
        The most bytes fused into one all-reduce (``SYMGRAPH_DIST_BUCKET_MB``, default 25 MB).
    """

    #: Module's helpers push all keys in one call, which this store fuses into buckets
    fuses_lists = True

    def __init__(self, name='dist_sync', comm=None, bucket_bytes=None):
        if name not in DIST_TYPES:
            raise ValueError('DistKVStore: unknown type %r; the types are %s'
                             % (name, ', '.join(map(repr, DIST_TYPES))))
        super().__init__('local')
        self._type = name
        self._device_comm = 'device' in name
        self._comm = world() if comm is None else comm
        self.bucket_bytes = _bucket_bytes() if bucket_bytes is None else int(bucket_bytes)
        if self.bucket_bytes < 1:
            raise ValueError('bucket_bytes must be >= 1, got %r' % (bucket_bytes,))
        #: how many collectives the store ran (for tests and the bench)
        self.num_collectives = 0
        #: how many of them ran with NCCL
        self.num_nccl_collectives = 0
        self._nccl = {}             # GPU id -> ProcessNccl
        _created.append(self)

    # ----------------------------------------------------------------- fused collectives
    def _fused(self, arrays, collective):
        """Run ``collective(flat_numpy_array)`` over ``arrays`` (NumPy, in place), packed
        into buckets of one dtype and at most :attr:`bucket_bytes` (an array larger than
        that goes alone, unpacked)."""
        buckets, by_dtype = [], {}
        for a in arrays:
            if a.size == 0:
                continue
            if a.nbytes >= self.bucket_bytes:
                buckets.append([a])
                continue
            open_bucket = by_dtype.get(a.dtype)
            if open_bucket is None or \
                    sum(b.nbytes for b in open_bucket) + a.nbytes > self.bucket_bytes:
                open_bucket = by_dtype[a.dtype] = []
                buckets.append(open_bucket)
            open_bucket.append(a)
        for bucket in buckets:
            self.num_collectives += 1
            if len(bucket) == 1:
                collective(bucket[0].reshape(-1))
                continue
            flat = numpy.concatenate([b.reshape(-1) for b in bucket])
            collective(flat)
            start = 0
            for b in bucket:
                b.reshape(-1)[...] = flat[start:start + b.size]
                start += b.size

    @staticmethod
    def _set(target, host):
        """``target[:] = host`` for an NDArray on any device."""
        target[:] = NDArray(host, cpu(0)) if target.context.device_type != 'cpu' else host

    # ----------------------------------------------------------------- operations
    def init(self, key, value):
        """Initialise keys; every worker gets rank 0's values (broadcast).

        Parameters
        ----------
        key : int, str, or list of int or str
            The keys.
        value : NDArray or list of NDArray
            One value per key.
        """
        super().init(key, value)
        keys = []
        for k, _ in _pairs(key, value, 'init'):
            keys.append(k)
        hosts = [_host_copy(self._store[k]) for k in keys]
        self._fused(hosts, lambda flat: self._comm.bcast(flat, root=0))
        for k, h in zip(keys, hosts):
            self._set(self._store[k], h)

    def push(self, key, value, priority=0):
        """Push values: summed over this worker's devices, then over the workers (fused
        into buckets); with an optimizer every worker updates its weights from the sum.

        Parameters
        ----------
        key : int, str, or list of int or str
            The keys.
        value : NDArray, list of NDArray, or list of list of NDArray
            Per key, an NDArray or a list of NDArrays (one per device).
        priority : int, optional
            Accepted for MXNet compatibility; operations run in order.
        """
        work = []
        for k, vals in self._grouped(_pairs(key, value, 'push')):
            stored = self._stored(k)
            self._check_shapes(k, stored, vals, 'push')
            work.append((k, stored, self._merge(k, vals)))
        if work and self._use_nccl([m for _, _, m in work]):
            for (k, stored, _), total in zip(work, self._nccl_sum([m for _, _, m in work])):
                self._apply(k, stored, total)
            return
        hosts = [_host_copy(merged) for _, _, merged in work]
        self._fused(hosts, self._comm.allreduce)
        for (k, stored, merged), h in zip(work, hosts):
            if merged.context.device_type == 'cpu':
                total = NDArray(h, merged.context)
            else:
                total = NDArray(h, cpu(0)).copyto(merged.context)
            self._apply(k, stored, total)

    # ----------------------------------------------------------------- NCCL (GPUs)
    @staticmethod
    def _use_nccl(arrays):
        """Whether the sum over the workers of ``arrays`` runs with NCCL: every array on
        a GPU and ``SYMGRAPH_DIST_NCCL`` not ``0``."""
        if os.environ.get('SYMGRAPH_DIST_NCCL', '').strip() == '0':
            return False
        return all(a.context.device_type == 'gpu' for a in arrays)

    def _nccl_of(self, device):
        found = self._nccl.get(device)
        if found is None:
            found = self._nccl[device] = ProcessNccl(self._comm, device)
        return found

    def _nccl_sum(self, arrays):
        """New NDArrays holding the sums over the workers of ``arrays`` (GPU NDArrays),
        packed per GPU and dtype into buckets of at most :attr:`bucket_bytes`, one NCCL
        all-reduce per bucket."""
        out = [None] * len(arrays)
        groups = {}
        for i, a in enumerate(arrays):
            groups.setdefault((a.context.device_id, numpy.dtype(a.dtype).str), []).append(i)
        for (device, _), idx in sorted(groups.items()):
            ctx = arrays[idx[0]].context
            buckets, size = [[]], 0
            for i in idx:
                nbytes = arrays[i]._data.nbytes
                if buckets[-1] and size + nbytes > self.bucket_bytes:
                    buckets.append([])
                    size = 0
                buckets[-1].append(i)
                size += nbytes
            with ctx.device_scope():
                xp = ctx.xp
                for bucket in buckets:
                    flat = xp.concatenate([arrays[i]._data.reshape(-1) for i in bucket])
                    if flat.size:
                        self._nccl_of(device).allreduce(flat)
                        self.num_collectives += 1
                        self.num_nccl_collectives += 1
                    start = 0
                    for i in bucket:
                        a = arrays[i]
                        out[i] = NDArray(flat[start:start + a.size].reshape(a.shape), ctx)
                        start += a.size
        return out

    def pushpull(self, key, value, out=None, priority=0):
        """:meth:`push` then :meth:`pull` into ``out`` (or back into ``value``)."""
        self.push(key, value, priority)
        self.pull(key, out if out is not None else value, priority)

    def save_optimizer_states(self, fname, dump_optimizer=False):
        """Save the optimizer states: rank 0 writes ``fname`` (the states are the same in
        every worker), then every worker waits for it (a barrier)."""
        updater = self._updater_or_error()
        if self.rank == 0:
            with open(fname, 'wb') as fout:
                fout.write(updater.get_states(dump_optimizer))
        self._barrier()

    def allreduce_host(self, array):
        """Sum a NumPy array over the workers, in place (Module.fit's logged metrics)."""
        self.num_collectives += 1
        return self._comm.allreduce(array)

    # ----------------------------------------------------------------- the workers
    @property
    def rank(self):
        """The rank of this worker, in ``[0, num_workers)``."""
        return self._comm.rank

    @property
    def num_workers(self):
        """The number of workers."""
        return self._comm.size

    def _barrier(self):
        """Wait until every worker has called it (fails after the timeout, naming the
        missing workers)."""
        self._comm.barrier()

    barrier = _barrier

    def _send_command_to_servers(self, head, body):
        raise ValueError('a %r kvstore has no servers: the workers reduce over MPI' % self.type)


for _name in DIST_TYPES:
    MULTI_PROCESS_TYPES[_name] = DistKVStore
