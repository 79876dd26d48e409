"""All-reduce of GPU arrays with NCCL, through CuPy's ``cupy.cuda.nccl``.

* :func:`clique` (:class:`DeviceClique`): the GPUs of this process (the ``'nccl'`` kvstore,
  as MXNet's): one communicator per device from ``NcclCommunicator.initAll``, the calls of
  one all-reduce made between ``groupStart`` and ``groupEnd`` (one thread drives every
  device, which NCCL needs a group for).
* :class:`ProcessNccl`: one GPU per process of an MPI job (``'dist_sync'`` /
  ``'dist_device_sync'`` with GPU contexts): rank 0's ``get_unique_id()`` is broadcast
  over MPI (:class:`symgraph.dist.mpi.Communicator`), every process makes its
  ``NcclCommunicator(size, id, rank)``. An all-reduce is enqueued on the device's current
  stream, then waited for by polling an event until the communicator's timeout
  (``SYMGRAPH_DIST_TIMEOUT``); past it the NCCL communicator is aborted and
  :class:`~symgraph.dist.mpi.DistTimeoutError` names the ranks that do not answer over
  MPI, so a dead peer cannot hang the job.

CuPy (and its NCCL) is imported when one of these is made, never at import of this module.
"""
import time

import numpy

from ..base import ArgumentError, ArgumentTypeError
from .mpi import DistTimeoutError

__all__ = ['import_nccl', 'DeviceClique', 'clique', 'ProcessNccl', 'NCCL_DTYPES']

#: the dtypes reduced with NCCL, and the names of their NCCL codes
NCCL_DTYPES = {numpy.dtype(numpy.float16): 'NCCL_FLOAT16',
               numpy.dtype(numpy.float32): 'NCCL_FLOAT32',
               numpy.dtype(numpy.float64): 'NCCL_FLOAT64',
               numpy.dtype(numpy.int32): 'NCCL_INT32',
               numpy.dtype(numpy.int64): 'NCCL_INT64'}


def import_nccl():
    """``(cupy, cupy.cuda.nccl)``, or an ImportError saying what to install."""
    from symgraph.cuda import import_cupy
    cupy = import_cupy()
    try:
        from cupy.cuda import nccl
    except ImportError as err:
        raise ImportError('NCCL is not available to CuPy (%s): install it, e.g. '
                          'pip install nvidia-nccl-cu12 for cupy-cuda12x' % err) from None
    if not nccl.available:
        raise ImportError('CuPy was built without NCCL (cupy.cuda.nccl.available is False)')
    return cupy, nccl


def _code(nccl, dtype):
    try:
        return getattr(nccl, NCCL_DTYPES[numpy.dtype(dtype)])
    except KeyError:
        raise ArgumentTypeError('NCCL all-reduce supports %s, not %s' % (
            ', '.join(sorted(d.name for d in NCCL_DTYPES)), numpy.dtype(dtype))) from None


def _check_arrays(cupy, arrays, what):
    first = arrays[0]
    for a in arrays:
        if not isinstance(a, cupy.ndarray):
            raise ArgumentTypeError('%s takes CuPy arrays (GPU contexts), got %s'
                                    % (what, type(a).__name__))
        if a.shape != first.shape or a.dtype != first.dtype:
            raise ArgumentError('%s needs arrays of one shape and dtype: %r %s vs %r %s'
                                % (what, a.shape, a.dtype, first.shape, first.dtype))
        if not a.flags.c_contiguous:
            raise ArgumentError('%s works in place on C-contiguous arrays' % what)


class DeviceClique:
    """NCCL communicators over distinct GPUs of this process (``ncclCommInitAll``).

    Parameters
    ----------
    devices : list of int
        Distinct GPU ids.
    """

    def __init__(self, devices):
        self.devices = [int(d) for d in devices]
        if len(set(self.devices)) != len(self.devices):
            raise ArgumentError('NCCL needs distinct GPUs, got devices %s (several contexts '
                                "on one GPU: use the 'device' kvstore)" % self.devices)
        self._cupy, self._nccl = import_nccl()
        self.comms = self._nccl.NcclCommunicator.initAll(list(self.devices))

    def allreduce(self, arrays):
        """Sum ``arrays`` (``arrays[k]`` on ``devices[k]``) in place, leaving the sum in
        each; the work is queued on each device's current stream."""
        cupy, nccl = self._cupy, self._nccl
        arrays = list(arrays)
        if len(arrays) != len(self.devices):
            raise ArgumentError('NCCL all-reduce over %d devices got %d arrays'
                                % (len(self.devices), len(arrays)))
        _check_arrays(cupy, arrays, 'NCCL all-reduce')
        for a, d in zip(arrays, self.devices):
            if a.device.id != d:
                raise ArgumentError('NCCL all-reduce: an array on gpu(%d) where gpu(%d) was '
                                    'expected' % (a.device.id, d))
        if arrays[0].size == 0:
            return arrays
        code = _code(nccl, arrays[0].dtype)
        nccl.groupStart()
        try:
            for comm, a, d in zip(self.comms, arrays, self.devices):
                with cupy.cuda.Device(d):
                    comm.allReduce(a.data.ptr, a.data.ptr, a.size, code, nccl.NCCL_SUM,
                                   cupy.cuda.get_current_stream().ptr)
        finally:
            nccl.groupEnd()
        return arrays


_cliques = {}


def clique(devices):
    """The :class:`DeviceClique` of these GPUs (made once per process)."""
    key = tuple(int(d) for d in devices)
    found = _cliques.get(key)
    if found is None:
        found = _cliques[key] = DeviceClique(key)
    return found


class ProcessNccl:
    """NCCL between the processes of an MPI job, one GPU each.

    Parameters
    ----------
    comm : symgraph.dist.mpi.Communicator
        The processes (its rank and size; the unique id travels over it; its timeout
        bounds every all-reduce).
    device : int
        This process's GPU.
    """

    def __init__(self, comm, device):
        self._cupy, self._nccl = import_nccl()
        self.comm = comm
        self.device = int(device)
        uid = numpy.zeros(128, numpy.int8)
        if comm.rank == 0:
            uid[:] = self._nccl.get_unique_id()
        comm.bcast(uid, root=0)
        with self._cupy.cuda.Device(self.device):
            self._nccl_comm = self._nccl.NcclCommunicator(comm.size,
                                                          tuple(int(v) for v in uid),
                                                          comm.rank)
        #: how many NCCL all-reduces ran (tests and the bench)
        self.num_calls = 0

    def allreduce(self, array):
        """Sum ``array`` (a CuPy array on :attr:`device`) over the processes, in place;
        waits for the result, raising DistTimeoutError after the communicator's timeout."""
        event = self.start_allreduce(array)
        if event is not None:
            self._wait(event, 'NCCL all-reduce of %d %s values' % (array.size, array.dtype))
        return array

    def start_allreduce(self, array):
        """Queue the sum of ``array`` over the processes on the current stream, in place,
        and return at once: an event to hand to :meth:`wait` (None when there is nothing
        to do). Work queued later on the stream sees the sum."""
        cupy, nccl = self._cupy, self._nccl
        _check_arrays(cupy, [array], 'NCCL all-reduce')
        if array.device.id != self.device:
            raise ArgumentError('NCCL all-reduce of this process runs on gpu(%d), got an '
                                'array on gpu(%d)' % (self.device, array.device.id))
        if array.size == 0 or self.comm.size == 1:
            return None
        with cupy.cuda.Device(self.device):
            stream = cupy.cuda.get_current_stream()
            self._nccl_comm.allReduce(array.data.ptr, array.data.ptr, array.size,
                                      _code(nccl, array.dtype), nccl.NCCL_SUM, stream.ptr)
            self.num_calls += 1
            return stream.record()

    def wait(self, event, what='NCCL all-reduce'):
        """Wait for an event of :meth:`start_allreduce`, raising DistTimeoutError after the
        communicator's timeout."""
        if event is not None:
            self._wait(event, what)

    def _wait(self, event, what):
        deadline = time.monotonic() + self.comm.timeout
        while not event.done:
            if time.monotonic() >= deadline:
                self._nccl_comm.abort()
                missing = self.comm._find_missing()
                message = ('%s did not complete within %g s (SYMGRAPH_DIST_TIMEOUT); %s; '
                           'this is rank %d' % (
                               what, self.comm.timeout,
                               'ranks %s do not answer' % missing if missing else
                               'every rank answers over MPI', self.comm.rank))
                self.comm._mark_broken(message, missing)
                raise DistTimeoutError(message, missing)
            time.sleep(0.0005)
