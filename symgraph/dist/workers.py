"""Per-device worker threads and their rendezvous.

* :class:`Rendezvous` (:func:`rendezvous`): the meeting point where the ndev
  copies of one operator (``contrib.SyncBatchNorm``, keyed by its ``key``)
  exchange per-channel sums through :func:`~.allreduce.allreduce`, with a timeout
  instead of a deadlock;
* :func:`run_on_devices`: one thread per device; each runs under its
  :class:`symgraph.opdef.DeviceGroup` member, the declared hook through which
  collective operators reach the others (they never import this package).
"""
import threading
import time

import numpy

from ..base import ArgumentError, UsageError
from ..opdef import DeviceGroup, using_device_group
from .allreduce import allreduce

__all__ = ['Rendezvous', 'rendezvous', 'current_rank', 'run_on_devices', 'SYNC_TIMEOUT']

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
    """Shared by the worker threads of one call: the first failure, and the rendezvous
    of this call's collectives (so that two groups never meet at one key)."""

    def __init__(self):
        self.error = None
        self._lock = threading.Lock()
        self._rendezvous = {}

    def rendezvous(self, key, ndev):
        """The :class:`Rendezvous` of ``key`` for this call."""
        with self._lock:
            r = self._rendezvous.get(key)
            if r is None:
                r = self._rendezvous[key] = Rendezvous(key, ndev)
            elif r.ndev != int(ndev):
                raise ArgumentError('rendezvous key %r is in use with ndev=%d, asked with '
                                    'ndev=%d' % (key, r.ndev, int(ndev)))
            return r


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
            raise ArgumentError('a rendezvous needs ndev >= 1, got %r' % (ndev,))
        self.key = key
        self.ndev = int(ndev)
        self._cond = threading.Condition()
        self._round = 0
        self._pending = {}     # rank -> array of the round being gathered
        self._done = {}        # round -> {rank: array} of finished rounds not yet collected
        self._error = {}       # round -> exception raised by the all-reduce
        self._processes = None  # the ProcessGroup of the round being gathered, if any

    def allreduce(self, array, rank=None, timeout=None, processes=None):
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
        processes : symgraph.opdef.ProcessGroup, optional
            Also sum over these processes (once per round, by the last device to arrive,
            after the sum over the devices).

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
                raise ArgumentError('rendezvous %r: rank %d is outside 0..%d (ndev=%d); the '
                                    'operator runs on more devices than its ndev says'
                                    % (self.key, rank, self.ndev - 1, self.ndev))
            if rank in self._pending:
                raise UsageError('rendezvous %r: two participants claim rank %d in one round'
                                 % (self.key, rank))
            my_round = self._round
            if processes is not None:
                self._processes = processes
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
                        raise UsageError('rendezvous %r abandoned: another device failed (%s)'
                                         % (self.key, failed))
                    raise UsageError(
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
            raise UsageError('rendezvous %r: all-reduce failed: %s' % (self.key, error))
        return out

    def _finish(self):
        """All arrived (lock held): sum, publish the round, wake the others."""
        ranks = sorted(self._pending)
        arrays = [self._pending[r] for r in ranks]
        try:
            allreduce(arrays)
            if self._processes is not None:
                total = self._processes.allreduce(arrays[0].copy())
                for a in arrays:
                    _assign(a, total)
        except Exception as e:  # every participant reports it, none hangs
            self._error[self._round] = e
        self._processes = None
        self._done[self._round] = dict(zip(ranks, arrays))
        self._pending = {}
        self._round += 1
        self._cond.notify_all()


def _assign(dst, src):
    """``dst[...] = src`` for NumPy or CuPy arrays (src on the host or a device)."""
    if isinstance(dst, numpy.ndarray):
        dst[...] = src if isinstance(src, numpy.ndarray) else src.get()
    elif isinstance(src, numpy.ndarray):
        dst.set(src)
    else:
        dst[...] = src


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
            raise ArgumentError('rendezvous key %r is in use with ndev=%d, asked with ndev=%d'
                                % (key, r.ndev, int(ndev)))
    return r


class _Member(DeviceGroup):
    """One device of a data-parallel call, as its operators see it (opdef's hook):
    collectives meet at the rendezvous of their key in this call (a lone device has
    nothing to meet)."""

    def __init__(self, rank, size, state):
        self.rank = rank
        self.size = size
        self._state = state

    def allreduce(self, key, ndev, array, processes=None):
        if int(ndev) != self.size:
            raise ArgumentError('rendezvous %r: ndev=%d but the group has %d devices'
                                % (key, int(ndev), self.size))
        return self._state.rendezvous(key, ndev).allreduce(array, rank=self.rank,
                                                           processes=processes)


def run_on_devices(fns):
    """Run ``fns[k]()`` in one thread per device k; re-raise the first failure."""
    state = _GroupState()
    if len(fns) == 1:
        _local.rank, _local.group = 0, None
        try:
            with using_device_group(_Member(0, 1, state)):
                return [fns[0]()]
        finally:
            _local.rank = None
    results = [None] * len(fns)
    errors = [None] * len(fns)

    def work(k):
        _local.rank, _local.group = k, state
        try:
            with using_device_group(_Member(k, len(fns), state)):
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
