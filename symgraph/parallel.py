"""Ring all-reduce over one array per device.

The schedule is written once, as a pure function :func:`ring_schedule` of the
number of devices and the buffer length, and executed by two backends:

* NumPy: the "devices" are NumPy arrays in one process (reference and tests);
* CuPy: one array per GPU (or several logical devices on one GPU), with a
  stream per rank, peer copies between devices and
  :func:`symgraph.cuda.loader.ring_add` for the additions.

Each buffer is flattened and cut into N chunks (uneven when N does not divide
the length: chunk k is ``[k * L // N, (k + 1) * L // N)``).  Reduce-scatter:
in round r = 0 .. N-2 device i sends chunk (i - r) mod N to device i + 1,
which adds it to its own; afterwards device i holds the full sum of chunk
(i + 1) mod N.  All-gather: in round r device i sends chunk (i + 1 - r) mod N
to device i + 1, which overwrites its copy.  Within a round every device sends
one chunk and receives another, so the steps of a round are independent.

There is no small-size fallback: the ring is correct for every length,
including lengths below N (some chunks are then empty and skipped).

On top of the ring this module has what data parallelism needs:

* :class:`Rendezvous` (:func:`rendezvous`): the meeting point where the ndev
  copies of one operator (``contrib.SyncBatchNorm``, keyed by its ``key``)
  exchange per-channel sums through :func:`allreduce`, with a timeout instead
  of a deadlock;
* :class:`DataParallelExecutor`: one executor per context with the batch split
  along axis 0, forward and backward of all devices in threads (one per
  device, as MXNet's executor group does), parameter gradients all-reduced.
"""
import collections
import threading
import time

import numpy

from .base import MXNetError
from .context import Context
from .ndarray import NDArray
from .opdef import DeviceGroup, using_device_group, using_random_state

__all__ = ['Step', 'ring_schedule', 'allreduce', 'NumpyRing', 'Rendezvous', 'rendezvous',
           'current_rank', 'DataParallelExecutor']

#: One transfer: in round ``round`` of phase ``'reduce'`` (dst += src) or
#: ``'gather'`` (dst = src), elements [start, stop) of the flat buffers.
Step = collections.namedtuple('Step', 'phase round src dst start stop')

_DTYPES = (numpy.float16, numpy.float32, numpy.float64)


def ring_schedule(n_devices, length):
    """The ring all-reduce steps for ``n_devices`` buffers of ``length``.

    Parameters
    ----------
    n_devices : int
        N >= 1.
    length : int
        Elements per buffer, >= 0.

    Returns
    -------
    list of Step
        2 (N - 1) rounds in order; steps that move an empty chunk are left
        out.  N = 1 gives no step.

    Examples
    --------
    >>> for step in ring_schedule(2, 5):
    ...     print(tuple(step))
    ('reduce', 0, 0, 1, 0, 2)
    ('reduce', 0, 1, 0, 2, 5)
    ('gather', 1, 0, 1, 2, 5)
    ('gather', 1, 1, 0, 0, 2)
    """
    n, length = int(n_devices), int(length)
    if n < 1 or length < 0:
        raise ValueError('ring_schedule needs n_devices >= 1 and length >= 0')
    bounds = [length * k // n for k in range(n + 1)]
    steps = []
    for phase, first, rounds in (('reduce', 0, 0), ('gather', 1, n - 1)):
        for r in range(n - 1):
            for i in range(n):
                chunk = (i + first - r) % n
                start, stop = bounds[chunk], bounds[chunk + 1]
                if start < stop:
                    steps.append(Step(phase, rounds + r, i, (i + 1) % n, start, stop))
    return steps


def _rounds(steps):
    """The steps grouped by round, rounds in order."""
    grouped = collections.OrderedDict()
    for step in steps:
        grouped.setdefault(step.round, []).append(step)
    return list(grouped.values())


class NumpyRing:
    """Runs the schedule on NumPy arrays standing for devices.

    Parameters
    ----------
    add : callable, optional
        ``add(dst_chunk, src_chunk)`` adding in place; NumPy's ``+=`` by
        default (the tests pass the emulated ``ring_add`` kernel).
    """

    def __init__(self, add=None):
        self.add = add if add is not None else _numpy_add

    def run(self, flats, steps):
        for round_steps in _rounds(steps):
            for s in round_steps:
                dst = flats[s.dst][s.start:s.stop]
                src = flats[s.src][s.start:s.stop]
                if s.phase == 'reduce':
                    self.add(dst, src)
                else:
                    dst[...] = src


def _numpy_add(dst, src):
    numpy.add(dst, src, out=dst)


class _CupyRing:
    """Runs the schedule on CuPy arrays, one stream per rank.

    Every rank (every buffer) gets a non-blocking stream on its buffer's
    device, so that ranks sharing one GPU (N logical devices on one GPU, how
    the ring is tested on a single GPU) still run their steps of a round
    concurrently and exercise the same synchronisation as N GPUs.  A step runs
    on the receiving rank's stream: for a reduce step the chunk is staged on
    the receiving device (peer copy) unless both buffers share a device, then
    added with the ``ring_add`` kernel; a gather step is one device-to-device
    copy.  Between rounds every stream waits for the events of its two
    neighbours, since a round reads chunks the previous one wrote and writes
    chunks earlier rounds read (see :meth:`_barrier`).
    """

    def run(self, flats, steps):
        from symgraph.cuda import import_cupy, loader
        cupy = import_cupy()

        devices = [a.device.id for a in flats]
        streams = []
        for d in devices:
            with cupy.cuda.Device(d):
                streams.append(cupy.cuda.Stream(non_blocking=True))
        # the streams start after the work already queued on the callers' streams
        self._barrier(cupy, devices, streams, first=True)
        keep_alive = []
        for round_steps in _rounds(steps):
            for s in round_steps:
                dst_dev, src_dev = devices[s.dst], devices[s.src]
                dst = flats[s.dst][s.start:s.stop]
                src = flats[s.src][s.start:s.stop]
                with cupy.cuda.Device(dst_dev), streams[s.dst]:
                    if s.phase == 'gather':
                        dst.data.copy_from_device_async(src.data, dst.nbytes)
                        continue
                    if src_dev != dst_dev:
                        staged = cupy.empty_like(dst)
                        staged.data.copy_from_device_async(src.data, dst.nbytes)
                        keep_alive.append(staged)
                        src = staged
                    loader.ring_add(dst, src)
            self._barrier(cupy, devices, streams)
        for d, stream in zip(devices, streams):
            with cupy.cuda.Device(d):
                stream.synchronize()
        del keep_alive

    @staticmethod
    def _barrier(cupy, devices, streams, first=False):
        """Order the next round after the work it depends on.

        A rank's stream reads only its left neighbour's buffer and writes only
        its own, which only its right neighbour reads; so each stream waits
        for the events of its two neighbours, 2N waits a round rather than
        N^2.  (The left waits alone order everything by transitivity: a write
        of round N-1+r to a chunk that the right neighbour read in round r
        comes N-1 left-hops later.  The right wait is that write-after-read
        edge made explicit; the strict stand-in shows no failure without it,
        and fails 13 to 24 GPU tests without the left one.)

        ``first``: every stream waits instead for the work queued on the
        callers' current streams (one per device), so the ring starts after
        the buffers are written.
        """
        if first:
            events = []
            for d in sorted(set(devices)):
                with cupy.cuda.Device(d):
                    events.append(cupy.cuda.get_current_stream().record())
            waits = [events] * len(streams)
        else:
            events = []
            for d, stream in zip(devices, streams):
                with cupy.cuda.Device(d):
                    events.append(stream.record())
            n = len(streams)
            waits = [[events[j] for j in sorted({(i - 1) % n, (i + 1) % n} - {i})]
                     for i in range(n)]
        for d, stream, wait in zip(devices, streams, waits):
            with cupy.cuda.Device(d):
                for event in wait:
                    stream.wait_event(event)


def _is_cupy(a):
    return type(a).__module__.split('.')[0] == 'cupy'


def allreduce(arrays, backend=None):
    """Sum equal-shaped arrays, one per device, leaving the sum in each.

    Parameters
    ----------
    arrays : list of array
        N >= 1 C-contiguous arrays of one shape and dtype (float16, float32
        or float64): all NumPy arrays, or all CuPy arrays (on any devices,
        several may share one).
    backend : object, optional
        Something with ``run(flat_buffers, steps)``; by default
        :class:`NumpyRing` for NumPy arrays and the CuPy ring for CuPy arrays.

    Returns
    -------
    list of array
        ``arrays`` itself, updated in place.

    Examples
    --------
    >>> import numpy as np
    >>> bufs = [np.arange(5.0) * (k + 1) for k in range(3)]
    >>> allreduce(bufs)[2]
    array([ 0.,  6., 12., 18., 24.])
    """
    arrays = list(arrays)
    if not arrays:
        raise ValueError('allreduce needs at least one array')
    first = arrays[0]
    for a in arrays:
        if a.shape != first.shape or a.dtype != first.dtype:
            raise ValueError('allreduce needs arrays of one shape and dtype: %r %s vs %r %s'
                             % (a.shape, a.dtype, first.shape, first.dtype))
        if not a.flags.c_contiguous:
            raise ValueError('allreduce works in place on C-contiguous arrays')
    if first.dtype not in [numpy.dtype(d) for d in _DTYPES]:
        raise TypeError('allreduce supports float16, float32 and float64, not %s'
                        % first.dtype)
    kinds = {_is_cupy(a) for a in arrays}
    if len(kinds) > 1:
        raise TypeError('allreduce cannot mix NumPy and CuPy arrays')
    if backend is None:
        backend = _CupyRing() if kinds.pop() else NumpyRing()
    steps = ring_schedule(len(arrays), first.size)
    if steps:
        backend.run([a.reshape(-1) for a in arrays], steps)
    return arrays


# ---------------------------------------------------------------------------
# rendezvous of the devices of one data-parallel step

#: Seconds a device waits at a :class:`Rendezvous` for the others before it
#: gives up with an error (a missing device would otherwise hang forever).
SYNC_TIMEOUT = 60.0

_local = threading.local()
_registry_lock = threading.Lock()
_registry = {}


def current_rank():
    """Rank of the device whose work this thread runs, or None.

    :class:`DataParallelExecutor` sets it in each worker thread, so that
    operators meeting at a :class:`Rendezvous` take the slot of their device
    rather than their arrival order (the exchanged sums are then combined in
    the same order at every step).
    """
    return getattr(_local, 'rank', None)


class _GroupState:
    """Shared by the worker threads of one call; set when a worker fails."""

    def __init__(self):
        self.error = None


class Rendezvous:
    """Where ``ndev`` threads meet to sum one array each.

    Every participant calls :meth:`allreduce` with an array of one shape and
    dtype; the last to arrive runs :func:`allreduce` over all of them (in rank
    order) and every participant gets its own array back holding the sum.  The
    object is reused round after round.

    Parameters
    ----------
    key : str
        Name used in error messages (the operator's ``key``).
    ndev : int
        Number of participants per round.
    """

    def __init__(self, key, ndev):
        if int(ndev) < 1:
            raise ValueError('a rendezvous needs ndev >= 1, got %r' % (ndev,))
        self.key = key
        self.ndev = int(ndev)
        self._cond = threading.Condition()
        self._round = 0
        self._pending = {}     # rank -> array of the round being gathered
        self._done = {}        # round -> {rank: array} of finished rounds not yet collected
        self._error = {}       # round -> exception raised by the all-reduce

    def allreduce(self, array, rank=None, timeout=None):
        """Contribute ``array`` and return the sum over all participants.

        Parameters
        ----------
        array : array
            NumPy or CuPy, C-contiguous; it is summed in place and returned.
        rank : int, optional
            The slot of this participant (0 .. ndev-1); by default
            :func:`current_rank`, else the arrival order.
        timeout : float, optional
            Seconds to wait for the others; default :data:`SYNC_TIMEOUT`.

        Raises
        ------
        MXNetError
            When not all ``ndev`` participants arrive in time, naming the key
            and how many did, or when another worker of the same
            :class:`DataParallelExecutor` call failed.
        """
        timeout = SYNC_TIMEOUT if timeout is None else float(timeout)
        group = getattr(_local, 'group', None)
        with self._cond:
            if rank is None:
                rank = current_rank()
            if rank is None:
                rank = len(self._pending)
            if not 0 <= rank < self.ndev:
                raise MXNetError('rendezvous %r: rank %d is outside 0..%d (ndev=%d); the '
                                 'operator runs on more devices than its ndev says'
                                 % (self.key, rank, self.ndev - 1, self.ndev))
            if rank in self._pending:
                raise MXNetError('rendezvous %r: two participants claim rank %d in one round'
                                 % (self.key, rank))
            my_round = self._round
            self._pending[rank] = array
            if len(self._pending) == self.ndev:
                self._finish()
            deadline = time.monotonic() + timeout
            while my_round not in self._done:
                left = deadline - time.monotonic()
                failed = group.error if group is not None else None
                if left <= 0 or failed is not None:
                    arrived = len(self._pending)
                    del self._pending[rank]
                    if failed is not None:
                        raise MXNetError('rendezvous %r abandoned: another device failed (%s)'
                                         % (self.key, failed))
                    raise MXNetError(
                        'rendezvous %r timed out after %g s: %d of %d devices arrived; every '
                        'device must run the operator (is ndev right, and do all executors '
                        'run forward/backward concurrently?)'
                        % (self.key, timeout, arrived, self.ndev))
                self._cond.wait(min(left, 0.05))
            results = self._done[my_round]
            out = results.pop(rank)
            if not results:
                del self._done[my_round]
            error = self._error.get(my_round)
            if error is not None and not results:
                del self._error[my_round]
        if error is not None:
            raise MXNetError('rendezvous %r: all-reduce failed: %s' % (self.key, error))
        return out

    def _finish(self):
        """All arrived (lock held): sum, publish the round, wake the others."""
        ranks = sorted(self._pending)
        arrays = [self._pending[r] for r in ranks]
        try:
            allreduce(arrays)
        except Exception as e:  # every participant reports it, none hangs
            self._error[self._round] = e
        self._done[self._round] = dict(zip(ranks, arrays))
        self._pending = {}
        self._round += 1
        self._cond.notify_all()


def rendezvous(key, ndev):
    """The process-wide :class:`Rendezvous` for ``key`` (created on first use).

    Operators of one data-parallel step use the same ``key`` on every device;
    a key reused with a different ``ndev`` is an error.
    """
    with _registry_lock:
        r = _registry.get(key)
        if r is None:
            r = _registry[key] = Rendezvous(key, ndev)
        elif r.ndev != int(ndev):
            raise MXNetError('rendezvous key %r is in use with ndev=%d, asked with ndev=%d'
                             % (key, r.ndev, int(ndev)))
    return r


class _Member(DeviceGroup):
    """One device of a data-parallel call, as its operators see it (opdef's hook):
    collectives meet at the process-wide :func:`rendezvous` of their key."""

    def __init__(self, rank):
        self.rank = rank

    def allreduce(self, key, ndev, array):
        return rendezvous(key, ndev).allreduce(array, rank=self.rank)


def _run_on_devices(fns):
    """Run ``fns[k]()`` in one thread per device k; re-raise the first failure."""
    if len(fns) == 1:
        _local.rank, _local.group = 0, None
        try:
            with using_device_group(_Member(0)):
                return [fns[0]()]
        finally:
            _local.rank = None
    state = _GroupState()
    results = [None] * len(fns)
    errors = [None] * len(fns)

    def work(k):
        _local.rank, _local.group = k, state
        try:
            with using_device_group(_Member(k)):
                results[k] = fns[k]()
        except BaseException as e:  # reported to the caller below
            errors[k] = e
            if state.error is None:
                state.error = 'device %d: %s: %s' % (k, type(e).__name__, e)
        finally:
            _local.rank = _local.group = None
    threads = [threading.Thread(target=work, args=(k,), name='symgraph-device-%d' % k,
                                daemon=True) for k in range(len(fns))]
    for t in threads:
        t.start()
    try:
        for t in threads:
            t.join()
    except BaseException:
        # e.g. Ctrl-C in join(): make the workers leave their rendezvous and finish, so
        # that none stays registered there to corrupt or block the next call
        if state.error is None:
            state.error = 'the calling thread was interrupted'
        for t in threads:
            t.join()
        raise
    first = [e for e in errors if e is not None]
    if first:
        # the device that failed first, not the others' 'abandoned' errors
        primary = [e for e in first if 'abandoned: another device failed' not in str(e)]
        raise (primary or first)[0]
    return results


# ---------------------------------------------------------------------------
# data-parallel executor group


def _split_sizes(batch, n):
    """Batch slice sizes: as even as possible, the first ones one larger."""
    return [batch // n + (1 if k < batch % n else 0) for k in range(n)]


class DataParallelExecutor:
    """One executor per context, the batch split along axis 0 (MXNet's executor group).

    Parameters
    ----------
    symbol : Symbol
    contexts : list of Context
        All CPU contexts (``mx.cpu(0), mx.cpu(1), ...``: logical devices in
        one process) or all GPU contexts (several may name one GPU).
    grad_req : str, list or dict
        As for ``simple_bind``.
    type_dict : dict, optional
        As for ``simple_bind``.
    **data_shapes
        Full-batch shapes of the inputs split along axis 0 (data and labels).
        Every other argument is a parameter, replicated on every device.

    Notes
    -----
    ``forward`` and ``backward`` run every device's executor in its own
    thread, so operators that meet at a :class:`Rendezvous`
    (``contrib.SyncBatchNorm``) see all devices of the step.  After backward
    the gradients of the parameters are summed over the devices with
    :func:`allreduce`, so every device holds the gradient of the whole batch (the
    parameter gradients of one dtype are views of one flat buffer per device, so a
    step runs one all-reduce per dtype, not one per parameter);
    the gradients of the split inputs stay per device (see
    :meth:`get_input_grads`).  A batch that the devices do not divide evenly
    gives the first devices one sample more.

    Examples
    --------
    >>> import symgraph as mx
    >>> net = mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=3, name='fc')
    >>> group = DataParallelExecutor(net, [mx.cpu(0), mx.cpu(1)], data=(5, 4))
    >>> [e.arg_dict['data'].shape for e in group.execs]
    [(3, 4), (2, 4)]
    """

    def __init__(self, symbol, contexts, grad_req='write', type_dict=None, **data_shapes):
        self.contexts = [Context(c) for c in contexts]
        if not self.contexts:
            raise MXNetError('DataParallelExecutor needs at least one context')
        if len({c.is_gpu for c in self.contexts}) > 1:
            raise MXNetError('DataParallelExecutor needs all-CPU or all-GPU contexts, got %s'
                             % self.contexts)
        if not data_shapes:
            raise MXNetError('DataParallelExecutor needs the shapes of the batch inputs '
                             '(e.g. data=(32, 3, 224, 224))')
        batches = {tuple(s)[0] for s in data_shapes.values()}
        if len(batches) != 1:
            raise MXNetError('batch inputs disagree on the batch size: %s' % data_shapes)
        self.batch_size = batches.pop()
        n = len(self.contexts)
        if self.batch_size < n:
            raise MXNetError('a batch of %d cannot be split over %d devices'
                             % (self.batch_size, n))
        self.symbol = symbol
        self.data_names = list(data_shapes)
        self.slices = []
        start = 0
        for size in _split_sizes(self.batch_size, n):
            self.slices.append(slice(start, start + size))
            start += size
        names = symbol.list_arguments()
        self.param_names = [k for k in names if k not in data_shapes]
        self.execs = []
        self._buckets = []          # per device: the flat gradient buffers, one per dtype
        for ctx, sl in zip(self.contexts, self.slices):
            shapes = {k: (sl.stop - sl.start,) + tuple(s)[1:] for k, s in data_shapes.items()}
            exe, buckets = _bind_bucketed(symbol, ctx, grad_req, type_dict, shapes,
                                          set(self.param_names))
            self.execs.append(exe)
            self._buckets.append(buckets)
        reqs = self.execs[0]._grad_req
        self._reqs = dict(zip(names, reqs))
        self._rngs = [None] * n     # per device: its random generator (see _seeded)

    # ------------------------------------------------------------------ values
    def set_params(self, arg_params, aux_params=None, allow_extra=False):
        """Copy parameters (dicts of NDArrays or NumPy arrays) onto every device."""
        for exe in self.execs:
            exe.copy_params_from({k: _nd(v) for k, v in arg_params.items()},
                                 {k: _nd(v) for k, v in (aux_params or {}).items()},
                                 allow_extra_params=allow_extra)

    def forward(self, is_train=False, **data):
        """Copy the full-batch inputs' slices to the devices, then run forward on all.

        Keyword arguments are full-batch arrays of inputs named in
        ``data_shapes``.
        """
        for k in data:
            if k not in self.data_names:
                raise MXNetError('forward: %r is not a batch input of the group (%s)'
                                 % (k, self.data_names))
        for k, v in data.items():
            v = v.asnumpy() if isinstance(v, NDArray) else numpy.asarray(v)
            self._check_batch('forward: input %r' % k, v, self._full_shape(k))
            for exe, sl in zip(self.execs, self.slices):
                exe.arg_dict[k][:] = v[sl]
        _run_on_devices(self._seeded([lambda exe=exe: exe.forward(is_train=is_train)
                                      for exe in self.execs]))
        return self.get_outputs()

    def backward(self, out_grads=None):
        """Backward on every device, then sum the parameter gradients over the devices.

        ``out_grads``: full-batch head gradients (split like the outputs), or None for
        loss outputs.
        """
        heads = [None] * len(self.execs)
        if out_grads is not None:
            og = out_grads if isinstance(out_grads, (list, tuple)) else [out_grads]
            og = [g.asnumpy() if isinstance(g, NDArray) else numpy.asarray(g) for g in og]
            if len(og) > len(self.execs[0].outputs):
                raise MXNetError('backward: %d head gradients for %d outputs'
                                 % (len(og), len(self.execs[0].outputs)))
            for i, g in enumerate(og):
                per = self.execs[0].outputs[i].shape
                self._check_batch('backward: head gradient %d' % i, g,
                                  (self.batch_size,) + tuple(per[1:]))
            heads = [[NDArray(numpy.ascontiguousarray(g[sl])) for g in og]
                     for sl in self.slices]
        if len(self.execs) == 1:
            _run_on_devices(self._seeded([lambda: self.execs[0].backward(heads[0])]))
            return
        # grad_req='add': all-reduce only this step's contribution.  The accumulated
        # gradients are set aside and zeroed, so each device's step gradient is exact
        # (taking the old value off afterwards would lose low bits to cancellation),
        # and put back unchanged if backward fails.
        before = {}
        for k in self.param_names:
            if self._reqs[k] == 'add':
                before[k] = []
                for exe in self.execs:
                    with exe._ctx.device_scope():
                        g = exe.grad_dict[k]._data
                        before[k].append(g.copy())
                        g[...] = 0
        try:
            _run_on_devices(self._seeded([lambda exe=exe, h=h: exe.backward(h)
                                          for exe, h in zip(self.execs, heads)]))
        except BaseException:
            for k, olds in before.items():
                for exe, old in zip(self.execs, olds):
                    with exe._ctx.device_scope():
                        exe.grad_dict[k]._data[...] = old
            raise
        # one all-reduce per bucket: every parameter gradient of a dtype lives in one
        # flat buffer per device (their NDArrays are views of it)
        for flats in zip(*self._buckets):
            allreduce(list(flats))
        for k, olds in before.items():
            for exe, old in zip(self.execs, olds):
                with exe._ctx.device_scope():
                    exe.grad_dict[k]._data += old

    def _seeded(self, fns):
        """Wrap each device's work to draw from that device's own generator.

        The seeds come from the global generator, on the calling thread, so
        that after ``mx.random.seed`` a step's random numbers (Dropout masks,
        samplers) do not depend on the order the device threads run in.
        """
        seeds = numpy.random.randint(0, 2 ** 31 - 1, size=len(fns))

        def wrap(k, fn):
            def run():
                exe = self.execs[k]
                xp = exe._ctx.xp
                with exe._ctx.device_scope():
                    state = self._rngs[k]
                    if state is None:
                        state = self._rngs[k] = xp.random.RandomState(int(seeds[k]))
                    else:
                        state.seed(int(seeds[k]))
                    with using_random_state(xp, state):
                        return fn()
            return run
        return [wrap(k, fn) for k, fn in enumerate(fns)]

    def _full_shape(self, name):
        per = self.execs[0].arg_dict[name].shape
        return (self.batch_size,) + tuple(per[1:])

    @staticmethod
    def _check_batch(what, value, want):
        # the slices would broadcast or drop rows of a wrong-sized batch silently
        if tuple(value.shape) != tuple(want):
            raise MXNetError('%s has shape %s, the group was bound for %s'
                             % (what, tuple(value.shape), tuple(want)))

    # ------------------------------------------------------------------ results
    def get_params(self, arg_params, aux_params):
        """Copy the parameters and auxiliary states into the given dicts, on the CPU.

        As MXNet's executor group does: each value is the average over the devices
        (the parameters are equal on every device; the auxiliary states, such as
        BatchNorm's moving statistics, are kept per device and differ).
        """
        for names, dst, get in ((self.param_names, arg_params, lambda e: e.arg_dict),
                                (self.execs[0]._aux_names, aux_params, lambda e: e.aux_dict)):
            for k in names:
                total = sum(get(exe)[k].asnumpy().astype(numpy.float64) for exe in self.execs)
                value = (total / len(self.execs)).astype(get(self.execs[0])[k].dtype)
                if k in dst and isinstance(dst[k], NDArray):
                    dst[k][:] = value
                else:
                    dst[k] = NDArray(value)

    def get_outputs(self, merge=True):
        """Outputs concatenated along axis 0 into CPU arrays (``merge``), or per device."""
        per = [[exe.outputs[i] for exe in self.execs] for i in range(len(self.execs[0].outputs))]
        if not merge:
            return per
        return [NDArray(numpy.concatenate([o.asnumpy() for o in outs], axis=0))
                for outs in per]

    def get_input_grads(self, merge=True):
        """Gradients of the batch inputs, concatenated on the CPU (``merge``) or per device."""
        per = [[exe.grad_dict[k] for exe in self.execs] for k in self.data_names
               if self.execs[0].grad_dict.get(k) is not None]
        if not merge:
            return per
        return [NDArray(numpy.concatenate([g.asnumpy() for g in grads], axis=0))
                for grads in per]

    @property
    def grad_dict(self):
        """Parameter gradients (summed over the devices: device 0's copy)."""
        return {k: g for k, g in self.execs[0].grad_dict.items()
                if k in self.param_names and g is not None}

    @property
    def aux_dict(self):
        """Auxiliary states of device 0 (each device keeps its own; :meth:`get_params`
        averages them, as MXNet's executor group does)."""
        return self.execs[0].aux_dict


def _bind_bucketed(symbol, ctx, grad_req, type_dict, shapes, params):
    """``simple_bind``, with the gradients of ``params`` as views of one flat zeroed
    buffer per dtype (in argument order); returns (executor, [flat buffers])."""
    exe = symbol.simple_bind(ctx, grad_req=grad_req, type_dict=type_dict, **shapes)
    names = exe._arg_names
    groups = collections.OrderedDict()
    for k, (name, g) in enumerate(zip(names, exe.grad_arrays)):
        if g is not None and name in params:
            groups.setdefault(numpy.dtype(g.dtype), []).append(k)
    if not groups:
        return exe, []
    grads = list(exe.grad_arrays)
    buckets = []
    with ctx.device_scope():
        xp = ctx.xp
        for dtype, ks in groups.items():
            flat = xp.zeros(sum(grads[k].size for k in ks), dtype=dtype)
            start = 0
            for k in ks:
                shape, size = grads[k].shape, grads[k].size
                grads[k] = NDArray(flat[start:start + size].reshape(shape), ctx)
                start += size
            buckets.append(flat)
    exe = symbol.bind(ctx, exe.arg_arrays, args_grad=grads, grad_req=exe._grad_req,
                      aux_states=exe.aux_arrays)
    return exe, buckets


def _nd(v):
    return v if isinstance(v, NDArray) else NDArray(numpy.asarray(v))
