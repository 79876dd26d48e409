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

Overlap of communication with backward (:meth:`DistKVStore.gradient_overlap`, which Module
sets up): the executors report each gradient as soon as it is final
(:meth:`symgraph.executor.Executor.set_grad_ready_callback`); the gradients are packed into
buckets in that order (backward order, the same in every worker), and the all-reduce of a
bucket starts (MPI ``Iallreduce`` on a communicator of its own, or NCCL queued on the GPU's
stream) as soon as all its gradients are final on every device of the worker, while the
backward of the earlier layers goes on. The update (``push``/``pushpull`` of those keys)
waits for the all-reduces and applies the sums, which are the same values the store would
compute without overlap. ``SYMGRAPH_DIST_OVERLAP=0`` (or ``kv.overlap = False`` before
``init_optimizer``) turns it off; it is also off with the ring all-reduce
(``SYMGRAPH_DIST_ALLREDUCE=ring``), with gradient compression, and with several devices per
worker when MPI was not initialised with ``THREAD_MULTIPLE``.

When the summed values of a push are on GPUs (one process per GPU), the sum over the
workers runs with NCCL (:class:`symgraph.dist.nccl.ProcessNccl`: rank 0's unique id
broadcast over MPI), the buckets packed on the GPU, nothing copied to the host;
``SYMGRAPH_DIST_NCCL=0`` sends them through the host and MPI instead. Every worker must
use the same kind of context.
"""
import atexit
import threading

import numpy

from .. import config
from ..base import atomic_write
from ..context import cpu
from ..ndarray import NDArray
from ..dist.mpi import world
from ..dist.nccl import ProcessNccl
from ..profiler import _recorder as _prof
from .base import MULTI_PROCESS_TYPES
from .kvstore import KVStore, _pairs

__all__ = ['DistKVStore', 'GradientOverlap', 'DIST_TYPES', 'current', 'env_overlap']

#: the types this store is created for (``'dist_sync_device'`` is MXNet's alias)
DIST_TYPES = ('dist_sync', 'dist_device_sync', 'dist_sync_device')
DEFAULT_BUCKET_MB = 25.0

_created = []


def current():
    """The multi-process store made last in this process, or None (checkpoints are
    written by its rank 0 only)."""
    return _created[-1] if _created else None


def _bucket_bytes():
    return int(config.number('DIST_BUCKET_MB', DEFAULT_BUCKET_MB) * 1024 * 1024)


def env_overlap():
    """Whether ``SYMGRAPH_DIST_OVERLAP`` allows overlapping the all-reduce with backward
    (default yes; ``0`` turns it off)."""
    return config.flag('DIST_OVERLAP')


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
    overlap : bool, optional
        Whether :meth:`gradient_overlap` overlaps the all-reduce with backward
        (``SYMGRAPH_DIST_OVERLAP``, default True).
    """

    #: Module's helpers push all keys in one call, which this store fuses into buckets
    fuses_lists = True

    def __init__(self, name='dist_sync', comm=None, bucket_bytes=None, overlap=None):
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
        #: how many of them were started during backward (overlapped)
        self.num_overlapped = 0
        #: whether :meth:`gradient_overlap` sets up overlap (``SYMGRAPH_DIST_OVERLAP``)
        self.overlap = env_overlap() if overlap is None else bool(overlap)
        self._overlaps = []         # the GradientOverlap objects made for this store
        self._grad_comm = None      # their communicator (a duplicate of the store's)
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
        for k, bucket in enumerate(buckets):
            self.num_collectives += 1
            t0 = _prof.now() if _prof.active else None
            if len(bucket) == 1:
                collective(bucket[0].reshape(-1))
                if t0 is not None:
                    _record_bucket(k, bucket, t0)
                continue
            flat = numpy.concatenate([b.reshape(-1) for b in bucket])
            collective(flat)
            if t0 is not None:      # (mx.profiler: the bucket on the kvstore's row)
                _record_bucket(k, bucket, t0)
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
        pairs = _pairs(key, value, 'push')
        for overlap in self._overlaps:
            if overlap._consume(pairs):
                return
        work = []
        for k, vals in self._grouped(pairs):
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
        if not config.flag('DIST_NCCL'):
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

    # ----------------------------------------------------------------- overlap
    def gradient_overlap(self, keys, grads):
        """Set up the overlap of the all-reduce with backward for gradients that a later
        :meth:`push` (or :meth:`pushpull`) of ``keys`` sends; None where it is off (see
        the module's notes) or useless (one worker). A collective call: every worker makes
        it at the same point, with the same keys.

        Parameters
        ----------
        keys : list of int or str
            The keys, in the order backward makes their gradients final (the order the
            buckets are formed and started in).
        grads : list of list of NDArray
            Per key, its gradient array on every device (for the sizes and dtypes).

        Returns
        -------
        GradientOverlap or None
            Call its :meth:`GradientOverlap.ready` as each gradient becomes final.
        """
        if not self.overlap or self.num_workers == 1 or self._compression is not None:
            return None
        if not keys:
            return None
        ndev = len(grads[0])
        on_gpu = [a.context.device_type == 'gpu' for g in grads for a in g]
        nccl = all(on_gpu) and self._use_nccl([g[0] for g in grads])
        if not nccl and self._comm.algorithm != 'mpi':
            return None     # the ring has no non-blocking form
        if ndev > 1 and not self._comm.thread_multiple:
            return None     # the device threads would call MPI
        for k in keys:
            self._stored(k)
        if nccl:
            for device in sorted({a.context.device_id for g in grads for a in g}):
                self._nccl_of(device)
        elif self._grad_comm is None:
            self._grad_comm = self._comm.duplicate(algorithm='mpi')
        found = GradientOverlap(self, list(keys), grads, nccl)
        self._overlaps.append(found)
        if not _live_overlaps:
            # (registered after the communicators' own exit handler, so it runs before it)
            atexit.register(_drain_overlaps)
        _live_overlaps.append(found)
        return found

    def pushpull(self, key, value, out=None, priority=0):
        """:meth:`push` then :meth:`pull` into ``out`` (or back into ``value``)."""
        self.push(key, value, priority)
        self.pull(key, out if out is not None else value, priority)

    def save_optimizer_states(self, fname, dump_optimizer=False):
        """Save the optimizer states: rank 0 writes ``fname`` (the states are the same in
        every worker), then every worker waits for it (a barrier)."""
        updater = self._updater_or_error()
        if self.rank == 0:
            states = updater.get_states(dump_optimizer)
            with atomic_write(fname, 'wb') as fout:
                fout.write(states)
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


class GradientOverlap:
    """The all-reduce of gradient buckets started while backward still runs; made by
    :meth:`DistKVStore.gradient_overlap`.

    The keys are packed, in the order given (backward order), into buckets of neighbours of
    one dtype and at most the store's ``bucket_bytes`` (a larger gradient alone). Each backward reports
    every (key, device) once through :meth:`ready` (from any thread); when every gradient of
    a bucket is final on every device and the buckets before it have started, its values
    are summed over the devices (as :meth:`DistKVStore.push` does), packed and their sum
    over the workers started. The store's next ``push`` of these keys with these arrays
    waits for the sums and applies them; a push of anything else, or after a backward that
    did not report everything, leaves the overlap aside (what was started is waited for
    and dropped) and runs as without it. A key reported twice starts a new round (a second
    backward before the update): the sums of the first are dropped.
    """

    def __init__(self, store, keys, grads, nccl):
        self.store = store
        self.keys = keys
        self.nccl = nccl
        self.num_devices = len(grads[0])
        self._index = {k: i for i, k in enumerate(keys)}
        self._lock = threading.Lock()
        # consecutive runs of the order: a bucket holds neighbours only (so that it is
        # complete early in backward), of one dtype and device, at most bucket_bytes
        limit = store.bucket_bytes
        buckets, size, last_group = [], 0, None
        for i, g in enumerate(grads):
            a = g[0]
            nbytes = a.size * numpy.dtype(a.dtype).itemsize
            group = (numpy.dtype(a.dtype).str, a.context.device_type, a.context.device_id)
            if not buckets or group != last_group or size + nbytes > limit:
                buckets.append([])
                size = 0
            buckets[-1].append(i)
            size += nbytes
            last_group = group
        #: the buckets: lists of key positions, in the order they start
        self.buckets = buckets
        self._bucket_of = {i: b for b, members in enumerate(buckets) for i in members}
        #: per round, how many reports had come when each bucket started (tests)
        self.started_at = []
        self._reset()

    def _reset(self):
        self._reported = set()
        self._arrays = [[None] * self.num_devices for _ in self.keys]
        self._left = [self.num_devices] * len(self.keys)
        self._bucket_left = [len(b) for b in self.buckets]
        self._next = 0
        self._started = []          # (bucket, flat buffer, request or event, merged)
        self._started_t = {}        # bucket -> when it started (while profiling)
        self.started_at = []

    # ----------------------------------------------------------------- backward side
    def ready(self, key_index, device, grad):
        """Gradient ``grad`` of key ``keys[key_index]`` on device ``device`` (its position
        among the worker's devices) is final; starts the buckets that are now complete.
        Thread-safe."""
        with self._lock:
            slot = (key_index, device)
            if slot in self._reported:      # a new backward before the update
                self._drop()
            self._reported.add(slot)
            self._arrays[key_index][device] = grad
            self._left[key_index] -= 1
            if self._left[key_index] == 0:
                self._bucket_left[self._bucket_of[key_index]] -= 1
            while self._next < len(self.buckets) and self._bucket_left[self._next] == 0:
                self._start(self._next)
                self._next += 1
            if not self.nccl and self._started:
                # MPI moves non-blocking collectives on only inside its calls
                self.store._grad_comm.test([s[2] for s in self._started])

    def _start(self, b):
        store = self.store
        merged = [store._merge(self.keys[i], self._arrays[i]) for i in self.buckets[b]]
        if self.nccl:
            ctx = merged[0].context
            with ctx.device_scope():
                flat = ctx.xp.concatenate([m._data.reshape(-1) for m in merged])
                handle = store._nccl_of(ctx.device_id).start_allreduce(flat)
            store.num_nccl_collectives += 1
        else:
            flat = numpy.concatenate([(m._data if isinstance(m._data, numpy.ndarray)
                                       else m._data.get()).reshape(-1) for m in merged])
            handle = store._grad_comm.iallreduce(flat)
        store.num_collectives += 1
        store.num_overlapped += 1
        self._started.append((b, flat, handle, merged))
        if _prof.active:        # (mx.profiler: from its start until it is waited for)
            self._started_t[b] = _prof.now()
        self.started_at.append(len(self._reported))

    def _wait_started(self):
        store = self.store
        what = 'overlapped all-reduce of %d gradient buckets' % len(self._started)
        if self.nccl:
            for _, flat, handle, merged in self._started:
                store._nccl_of(merged[0].context.device_id).wait(handle, what)
        else:
            store._grad_comm.wait([s[2] for s in self._started], what)
        if self._started_t:
            for b, flat, _, _ in self._started:
                if b in self._started_t:
                    _prof.record('Iallreduce bucket %d' % b, 'kvstore', self._started_t[b],
                                 _prof.now(), {'bytes': int(flat.nbytes),
                                               'keys': len(self.buckets[b])},
                                 row=_prof.KVSTORE_ROW)
            self._started_t.clear()

    def _drop(self):
        """Wait for what was started (every worker started it) and forget the round."""
        try:
            self._wait_started()
        finally:
            self._reset()

    # ----------------------------------------------------------------- update side
    def _consume(self, pairs):
        """``push`` of ``pairs`` [(key, [NDArray per device])]: if they are this overlap's
        keys with the arrays the last backward reported, wait for the sums and apply them
        (True); else False, dropping a round this push does not finish."""
        with self._lock:
            if not self._reported:
                return False
            mine = len(pairs) == len(self.keys) and all(
                k in self._index and len(v) == self.num_devices and
                all(a is b for a, b in zip(v, self._arrays[self._index[k]]))
                for k, v in pairs)
            if not mine or self._next < len(self.buckets):
                if mine or {k for k, _ in pairs} & set(self._index):
                    self._drop()
                return False
            try:
                self._wait_started()
                totals = {}
                for b, flat, _, merged in self._started:
                    start = 0
                    for i, m in zip(self.buckets[b], merged):
                        part = flat[start:start + m.size].reshape(m.shape)
                        start += m.size
                        if self.nccl or m.context.device_type == 'cpu':
                            totals[self.keys[i]] = NDArray(part, m.context)
                        else:
                            totals[self.keys[i]] = NDArray(part, cpu(0)).copyto(m.context)
            finally:
                self._reset()
        store = self.store
        for k, _ in store._grouped(pairs):
            store._apply(k, store._stored(k), totals[k])
        return True


def _record_bucket(k, bucket, t0):
    """mx.profiler: a bucket's all-reduce (a push's), on the kvstore's row."""
    _prof.record('allreduce bucket %d' % k, 'kvstore', t0, _prof.now(),
                 {'bytes': int(sum(b.nbytes for b in bucket)), 'keys': len(bucket)},
                 row=_prof.KVSTORE_ROW)


_live_overlaps = []


def _drain_overlaps():
    """atexit: wait for all-reduces still running (MPI must not finalize under them)."""
    for overlap in _live_overlaps:
        try:
            with overlap._lock:
                overlap._drop()
        except Exception:       # noqa: BLE001 -- exiting; a broken job reports elsewhere
            pass



for _name in DIST_TYPES:
    MULTI_PROCESS_TYPES[_name] = DistKVStore
