"""Data parallelism: one process, several devices and several processes (MPI).

:mod:`.allreduce`
    the ring all-reduce schedule and its NumPy and CuPy backends.
:mod:`.workers`
    one worker thread per device, the rendezvous where collective operators meet, and
    the :class:`symgraph.opdef.DeviceGroup` each worker runs under.
:mod:`.executor_group`
    :class:`DataParallelExecutor`: the batch split over devices, gradients all-reduced.
:mod:`.mpi`
    :class:`Communicator`: collectives between processes over MPI (mpi4py, imported when
    one is made), MPI's all-reduce or the ring over point-to-point, with a timeout.
"""
from .allreduce import Step, ring_schedule, allreduce, NumpyRing
from .workers import Rendezvous, rendezvous, current_rank
from .executor_group import DataParallelExecutor
from .mpi import Communicator, DistTimeoutError, DistWorkerError

__all__ = ['Step', 'ring_schedule', 'allreduce', 'NumpyRing', 'Rendezvous', 'rendezvous',
           'current_rank', 'DataParallelExecutor', 'Communicator', 'DistTimeoutError',
           'DistWorkerError']
