"""Collectives between processes over MPI (mpi4py), with a timeout instead of a hang.

:class:`Communicator` wraps an MPI communicator (``MPI.COMM_WORLD`` by default) and offers
the three collectives data-parallel training needs, on C-contiguous NumPy arrays, in place:

* :meth:`Communicator.allreduce` -- the sum over all processes, by MPI's own
  ``Iallreduce`` (``algorithm='mpi'``) or by symgraph's ring (``algorithm='ring'``): the
  schedule of :func:`symgraph.dist.allreduce.ring_schedule` run over MPI point-to-point,
  reduce-scatter then all-gather, each round one send to the right neighbour and one receive
  from the left (``Isend``/``Irecv``, the non-blocking form of ``Sendrecv``);
* :meth:`Communicator.bcast` (``Ibcast``) and :meth:`Communicator.barrier` (``Ibarrier``).

Every operation is non-blocking underneath and waited for by polling with a deadline of
``timeout`` seconds (``SYMGRAPH_DIST_TIMEOUT``, default 300). A process that dies or never
arrives therefore cannot hang the others: when the deadline passes, the waiting process asks
every other process, on a separate communicator, whether it is alive (processes that are
themselves waiting in a collective answer at once); the ranks that do not answer within a
short grace are named in the :class:`DistTimeoutError` it raises.

A failed process (its collective timed out, or it dies of an uncaught exception: a
``sys.excepthook`` is installed) tells every other process so before it exits, without
finalizing MPI (which could wait for the dead rank). Each process runs a watchdog thread
that receives this: a process waiting in a collective then raises at once
(:class:`DistTimeoutError` naming the missing ranks, or :class:`DistWorkerError` naming the
failed one), any other process (one hung outside MPI) is ended, so ``mpiexec`` and the
launcher return.

mpi4py is imported when a communicator is made, never at import of this module.
"""
import atexit
import os
import sys
import threading
import time

import numpy

from .. import config
from ..base import MXNetError
from ..opdef import ProcessGroup, set_process_group
from .allreduce import ring_schedule

__all__ = ['Communicator', 'DistTimeoutError', 'DistWorkerError', 'MPIProcessGroup', 'world',
           'import_mpi',
           'env_timeout', 'DEFAULT_TIMEOUT', 'ALGORITHMS']

#: seconds a collective waits for the other processes unless SYMGRAPH_DIST_TIMEOUT says
DEFAULT_TIMEOUT = 300.0
#: the all-reduce algorithms of :meth:`Communicator.allreduce`
ALGORITHMS = ('mpi', 'ring')

_TAG_RING = 11
_TAG_PROBE = 21
_TAG_ANSWER = 22
_TAG_FAILED = 23
_DTYPES = (numpy.float16, numpy.float32, numpy.float64)


class DistTimeoutError(MXNetError, TimeoutError):
    """A collective that did not complete within the timeout.

    Attributes
    ----------
    missing : tuple of int
        The ranks that did not answer (dead, or busy outside the collective).
    """

    def __init__(self, message, missing=()):
        super().__init__(message)
        self.missing = tuple(missing)


class DistWorkerError(MXNetError, RuntimeError):
    """Another worker failed (an uncaught exception, or its collective timed out) while
    this one waited for it in a collective.

    Attributes
    ----------
    missing : tuple of int
        The rank that reported the failure.
    """

    def __init__(self, message, missing=()):
        super().__init__(message)
        self.missing = tuple(missing)


def _ranks(ranks):
    return 'rank%s %s' % ('s' if len(ranks) > 1 else '', ', '.join(str(r) for r in ranks))


def import_mpi():
    """``mpi4py.MPI`` (which initialises MPI), or an ImportError saying what to install."""
    try:
        from mpi4py import MPI
    except ImportError as err:
        raise ImportError('multi-process training needs mpi4py and an MPI library: '
                          'pip install "symgraph[mpi]" (mpi4py and the mpich wheel); '
                          '(%s)' % err) from None
    return MPI


def env_timeout(default=DEFAULT_TIMEOUT):
    """The timeout in seconds from ``SYMGRAPH_DIST_TIMEOUT`` (``default`` when unset)."""
    return float(config.number('DIST_TIMEOUT', default))


def _check_timeout(timeout):
    if timeout is None:
        return env_timeout()
    try:
        value = float(timeout)
    except (TypeError, ValueError):
        raise TypeError('timeout must be a number of seconds, got %r' % (timeout,)) from None
    if not value > 0:
        raise ValueError('timeout must be > 0 seconds, got %r' % (timeout,))
    return value


_broken = []
_live = []


def _exit_if_broken():
    """atexit: a process whose collective timed out must not finalize MPI (that may wait for
    the dead rank forever): it tells the others that the job failed, then exits at once."""
    if not _broken:
        return
    comm = _broken[0]
    sys.stdout.flush()
    sys.stderr.flush()
    comm._tell_failed(comm._missing)
    os._exit(1)


def _excepthook(kind, value, tb):
    """sys.excepthook while a communicator lives: after the traceback, a worker dying of an
    uncaught exception tells the others (who then fail at once instead of after the
    timeout) and exits without finalizing MPI (which could wait for them)."""
    _previous_hook[0](kind, value, tb)
    comms = [c for c in _live if c.size > 1]
    if not comms:
        return
    sys.stdout.flush()
    sys.stderr.flush()
    for comm in comms:
        comm._tell_failed(comm._missing)
    os._exit(1)


_previous_hook = []


def _stop_watchdogs():
    """atexit (normal exit): stop the watchdog threads before MPI is finalized."""
    for comm in _live:
        comm._stop_watchdog()


class Communicator:
    """Collectives over the processes of an MPI communicator, with a timeout.

    Parameters
    ----------
    comm : mpi4py.MPI.Comm, optional
        The processes (``MPI.COMM_WORLD`` by default); it is duplicated, so the traffic of
        this object never meets the caller's.
    timeout : float, optional
        Seconds a collective waits for the others (``SYMGRAPH_DIST_TIMEOUT``, default 300).
    algorithm : {'mpi', 'ring'}, optional
        The all-reduce: MPI's ``Iallreduce`` or symgraph's ring over point-to-point
        (``SYMGRAPH_DIST_ALLREDUCE``, default ``'mpi'``).

    Examples
    --------
    Under ``python -m symgraph.launch -n 2 python script.py``::

        comm = Communicator()
        x = numpy.full(4, comm.rank + 1.0)
        comm.allreduce(x)          # x is now [3., 3., 3., 3.] in both processes
    """

    def __init__(self, comm=None, timeout=None, algorithm=None):
        mpi = import_mpi()
        self._mpi = mpi
        if algorithm is None:
            algorithm = config.choice('DIST_ALLREDUCE')
        self.algorithm = self._check_algorithm(algorithm)
        self.timeout = _check_timeout(timeout)
        base = mpi.COMM_WORLD if comm is None else comm
        self._comm = base.Dup()
        self._diag = base.Dup()
        self.rank = self._comm.Get_rank()
        self.size = self._comm.Get_size()
        self.broken = None
        self._seq = 0
        self._probe_buf = numpy.zeros(1, numpy.int64)
        self._probe_req = None
        self._waiting = False
        self._peer_failed = None
        self._missing = ()
        self._ctl = base.Dup()
        self._watchdog = None
        self._stop = threading.Event()
        if self.size > 1 and mpi.Query_thread() == mpi.THREAD_MULTIPLE:
            self._watchdog = threading.Thread(target=self._watch, daemon=True,
                                              name='symgraph-dist-watchdog')
            self._watchdog.start()
        if not _live:
            atexit.register(_stop_watchdogs)
            _previous_hook.append(sys.excepthook)
            sys.excepthook = _excepthook
        _live.append(self)

    def duplicate(self, algorithm=None):
        """A new communicator over the same processes (a collective call), with this one's
        timeout: its traffic never meets this one's, so operations started on it may stay
        in flight while this one runs others, in any order."""
        return Communicator(self._comm, timeout=self.timeout,
                            algorithm=self.algorithm if algorithm is None else algorithm)

    @property
    def thread_multiple(self):
        """Whether MPI was initialised with ``THREAD_MULTIPLE`` (any thread may call it)."""
        return self._mpi.Query_thread() == self._mpi.THREAD_MULTIPLE

    @staticmethod
    def _check_algorithm(algorithm):
        if algorithm not in ALGORITHMS:
            raise ValueError('unknown all-reduce algorithm %r; the algorithms are %s'
                             % (algorithm, ', '.join(map(repr, ALGORITHMS))))
        return algorithm

    @property
    def grace(self):
        """Seconds a timed-out process waits for the others to answer its probe."""
        return min(1.0, 0.2 * self.timeout)

    # ----------------------------------------------------------------- collectives
    def allreduce(self, array, algorithm=None):
        """Sum ``array`` over all processes, in place.

        Parameters
        ----------
        array : numpy.ndarray
            C-contiguous, of one shape and dtype in every process (float16, float32 or
            float64 for the ring; MPI's all-reduce takes any numeric dtype).
        algorithm : {'mpi', 'ring'}, optional
            Overrides the communicator's algorithm for this call.

        Returns
        -------
        numpy.ndarray
            ``array``, holding the sum.

        Raises
        ------
        DistTimeoutError
            Some process did not take part within the timeout (named in the message).
        """
        algorithm = self.algorithm if algorithm is None else self._check_algorithm(algorithm)
        self._check_array(array, 'allreduce')
        if self.size == 1 or array.size == 0:
            return array
        if algorithm == 'ring':
            if array.dtype not in [numpy.dtype(d) for d in _DTYPES]:
                raise TypeError('the ring all-reduce supports float16, float32 and float64, '
                                'not %s' % array.dtype)
            self._ring(array.reshape(-1))
            return array
        req = self._comm.Iallreduce(self._mpi.IN_PLACE, array, op=self._mpi.SUM)
        self._wait([req], 'allreduce of %d %s values' % (array.size, array.dtype))
        return array

    def iallreduce(self, array):
        """Start summing ``array`` over all processes, in place, and return at once (MPI's
        ``Iallreduce``; the ring has no non-blocking form here). Hand the request to
        :meth:`wait`; ``array`` must stay untouched until then.

        Parameters
        ----------
        array : numpy.ndarray
            C-contiguous, of one shape and dtype in every process.

        Returns
        -------
        request or None
            None when there is nothing to wait for (one process, or an empty array).
        """
        self._check_array(array, 'iallreduce')
        if self.size == 1 or array.size == 0:
            return None
        return self._comm.Iallreduce(self._mpi.IN_PLACE, array, op=self._mpi.SUM)

    def test(self, requests):
        """Let MPI progress ``requests`` (from :meth:`iallreduce`; MPI moves non-blocking
        collectives on only inside its calls); whether all of them are done."""
        requests = [r for r in requests if r is not None]
        return not requests or self._mpi.Request.Testall(requests)

    def wait(self, requests, what='the started collectives'):
        """Wait for ``requests`` (from :meth:`iallreduce`) with the communicator's timeout.

        Raises
        ------
        DistTimeoutError
            Some process did not take part within the timeout (named in the message).
        """
        requests = [r for r in requests if r is not None]
        if self.broken is not None:
            raise MXNetError('%s: this communicator failed earlier (%s); the job must be '
                             'restarted' % (what, self.broken))
        if requests:
            self._wait(requests, what)

    def bcast(self, array, root=0):
        """Overwrite ``array`` with ``root``'s, in place, in every process.

        Raises
        ------
        DistTimeoutError
            Some process did not take part within the timeout.
        """
        self._check_array(array, 'bcast')
        if not 0 <= int(root) < self.size:
            raise ValueError('bcast: root %r is not a rank in [0, %d)' % (root, self.size))
        if self.size == 1 or array.size == 0:
            return array
        req = self._comm.Ibcast(array, root=int(root))
        self._wait([req], 'bcast of %d %s values from rank %d' % (array.size, array.dtype,
                                                                  root))
        return array

    def barrier(self):
        """Wait until every process has called it.

        Raises
        ------
        DistTimeoutError
            Some process did not arrive within the timeout.
        """
        if self.size == 1:
            return
        self._wait([self._comm.Ibarrier()], 'barrier')

    def abort(self, errorcode=1):
        """``MPI_Abort``: stop every process of the job."""
        self._comm.Abort(errorcode)

    # ----------------------------------------------------------------- failure
    def _watch(self):
        """The watchdog thread: when another rank says the job failed, end this process
        unless it is waiting in a collective (which then raises DistWorkerError)."""
        buf = numpy.zeros(self.size + 1, numpy.int64)
        status = self._mpi.Status()
        req = self._ctl.Irecv(buf, source=self._mpi.ANY_SOURCE, tag=_TAG_FAILED)
        while not self._stop.is_set():
            if req.Test(status):
                if self._peer_failed is None:
                    self._peer_failed = (status.Get_source(),
                                         tuple(int(r) for r in buf[1:1 + int(buf[0])]))
                if self.broken is None and not self._waiting:
                    sys.stderr.write('symgraph.dist: rank %d stops: rank %d failed (an '
                                     'error, or a rank that died or hung)\n'
                                     % (self.rank, status.Get_source()))
                    sys.stderr.flush()
                    os._exit(1)
                req = self._ctl.Irecv(buf, source=self._mpi.ANY_SOURCE, tag=_TAG_FAILED)
            self._stop.wait(0.05)
        req.Cancel()
        req.Wait()

    def _stop_watchdog(self):
        """Stop the watchdog and cancel the pending probe receive (before MPI is
        finalized)."""
        if self.broken is not None:
            return
        if self._watchdog is not None:
            self._stop.set()
            self._watchdog.join()
            self._watchdog = None
        if self._probe_req is not None:
            self._probe_req.Cancel()
            self._probe_req.Wait()
            self._probe_req = None

    def _tell_failed(self, missing=()):
        """Tell every other rank that this one failed, and which ranks it found missing
        (waiting :attr:`grace` at most for the messages to leave)."""
        note = numpy.full(self.size + 1, -1, numpy.int64)
        note[0] = len(missing)
        note[1:1 + len(missing)] = missing
        reqs = [self._ctl.Isend(note, dest=r, tag=_TAG_FAILED)
                for r in range(self.size) if r != self.rank]
        deadline = time.monotonic() + self.grace
        while reqs and time.monotonic() < deadline:
            reqs = [r for r in reqs if not r.Test()]
            time.sleep(0.001)

    def _check_array(self, array, what):
        if self.broken is not None:
            raise MXNetError('%s: this communicator failed earlier (%s); the job must be '
                             'restarted' % (what, self.broken))
        if not isinstance(array, numpy.ndarray):
            raise TypeError('%s takes a NumPy array, got %s' % (what, type(array).__name__))
        if not array.flags.c_contiguous or not array.flags.writeable:
            raise ValueError('%s works in place on a writeable C-contiguous array' % what)

    # ----------------------------------------------------------------- the ring
    def _ring(self, flat):
        """The ring schedule, this rank's part: per round one chunk sent right and one
        received from the left (added in the reduce-scatter, copied in the all-gather)."""
        n, me = self.size, self.rank
        right, left = (me + 1) % n, (me - 1) % n
        steps = ring_schedule(n, flat.size)
        rounds = {}
        for s in steps:
            rounds.setdefault(s.round, []).append(s)
        scratch = numpy.empty(flat.size // n + 1, flat.dtype)
        for r in sorted(rounds):
            send = [s for s in rounds[r] if s.src == me]
            recv = [s for s in rounds[r] if s.dst == me]
            reqs = []
            # a schedule step moves a non-empty chunk; empty chunks have no step on
            # either side, so both ends agree on which messages exist
            for s in recv:
                target = flat[s.start:s.stop] if s.phase == 'gather' else \
                    scratch[:s.stop - s.start]
                reqs.append(self._comm.Irecv(target, source=left, tag=_TAG_RING))
            for s in send:
                reqs.append(self._comm.Isend(flat[s.start:s.stop], dest=right,
                                             tag=_TAG_RING))
            self._wait(reqs, 'ring all-reduce of %d %s values (round %d)'
                       % (flat.size, flat.dtype, r))
            for s in recv:
                if s.phase == 'reduce':
                    chunk = flat[s.start:s.stop]
                    numpy.add(chunk, scratch[:s.stop - s.start], out=chunk)

    # ----------------------------------------------------------------- waiting
    def _wait(self, reqs, what):
        """Poll ``reqs`` until done, answering the probes of timed-out peers; past the
        deadline, find the missing ranks and raise."""
        self._seq += 1
        self._waiting = True
        try:
            self._wait_or_raise(reqs, what)
        finally:
            self._waiting = False

    def _wait_or_raise(self, reqs, what):
        mpi = self._mpi
        start = time.monotonic()
        deadline = start + max(self.timeout - self.grace, 0.0)
        spin_until = start + 0.05
        while True:
            if mpi.Request.Testall(reqs):
                return
            self._answer_probes()
            if self._peer_failed is not None:
                self._fail_for_peer(what)
            now = time.monotonic()
            if now >= deadline:
                break
            # spin for a short while (MPI progresses only inside Test), then back off
            time.sleep(0 if now < spin_until else 0.0005)
        missing = self._find_missing()
        for req in reqs:
            try:
                req.Cancel()
            except Exception:     # noqa: BLE001 -- collectives cannot be cancelled
                pass
        if missing:
            who = _ranks(missing)
            message = ('%s: %s of %d did not take part within %g s (SYMGRAPH_DIST_TIMEOUT): '
                       'dead or stuck outside the collective; this is rank %d'
                       % (what, who, self.size, self.timeout, self.rank))
        else:
            message = ('%s did not complete within %g s (SYMGRAPH_DIST_TIMEOUT) although '
                       'every rank answered; this is rank %d' % (what, self.timeout,
                                                                  self.rank))
        self._mark_broken(message, missing)
        raise DistTimeoutError(message, missing)

    def _fail_for_peer(self, what):
        rank, missing = self._peer_failed
        if missing:
            message = ('%s: %s of %d did not take part within %g s (SYMGRAPH_DIST_TIMEOUT), '
                       'as rank %d found; this is rank %d'
                       % (what, _ranks(missing), self.size, self.timeout, rank, self.rank))
            self._mark_broken(message, missing)
            raise DistTimeoutError(message, missing)
        message = ('%s: rank %d of %d failed (it reported an error; see its traceback); this '
                   'is rank %d' % (what, rank, self.size, self.rank))
        self._mark_broken(message, ())
        raise DistWorkerError(message, (rank,))

    def _mark_broken(self, message, missing):
        self.broken = message
        self._missing = tuple(missing)
        if not _broken:
            _broken.append(self)
            atexit.register(_exit_if_broken)

    def _answer_probes(self):
        """Tell a peer that probes us (it timed out) that we are alive and waiting."""
        mpi = self._mpi
        while True:
            if self._probe_req is None:
                self._probe_req = self._diag.Irecv(self._probe_buf, source=mpi.ANY_SOURCE,
                                                   tag=_TAG_PROBE)
            status = mpi.Status()
            if not self._probe_req.Test(status):
                return
            self._probe_req = None
            answer = numpy.array([self._seq], numpy.int64)
            self._diag.Isend(answer, dest=status.Get_source(), tag=_TAG_ANSWER)

    def _find_missing(self):
        """The ranks that do not answer a probe within :attr:`grace` seconds."""
        others = [r for r in range(self.size) if r != self.rank]
        probe = numpy.array([self._seq], numpy.int64)
        answers = {r: numpy.zeros(1, numpy.int64) for r in others}
        recvs = {r: self._diag.Irecv(answers[r], source=r, tag=_TAG_ANSWER) for r in others}
        for r in others:
            self._diag.Isend(probe, dest=r, tag=_TAG_PROBE)
        deadline = time.monotonic() + self.grace
        pending = set(others)
        while pending and time.monotonic() < deadline:
            for r in list(pending):
                if recvs[r].Test():
                    pending.discard(r)
            self._answer_probes()
            time.sleep(0.001)
        return sorted(pending)


class MPIProcessGroup(ProcessGroup):
    """The processes of a :class:`Communicator`, as operators see them
    (:func:`symgraph.opdef.process_group`: SyncBatchNorm's statistics span them)."""

    def __init__(self, comm):
        self.comm = comm
        self.rank = comm.rank
        self.size = comm.size

    def allreduce(self, array):
        """The sum over the processes: a NumPy array in place, a CuPy one through the
        host (a new array)."""
        if isinstance(array, numpy.ndarray):
            if array.flags.c_contiguous and array.flags.writeable:
                return self.comm.allreduce(array)
            host = numpy.ascontiguousarray(array)
            return self.comm.allreduce(host)
        host = numpy.ascontiguousarray(array.get())
        self.comm.allreduce(host)
        out = array.copy()
        out.set(host)
        return out


_world = []


def world():
    """The :class:`Communicator` over all processes of the job (``MPI.COMM_WORLD``), made on
    first use; it also becomes the :func:`symgraph.opdef.process_group` of this process, so
    that collective operators (SyncBatchNorm) span the processes."""
    if not _world:
        comm = Communicator()
        _world.append(comm)
        set_process_group(MPIProcessGroup(comm) if comm.size > 1 else None)
    return _world[0]
