"""Data parallelism: one process, several devices (and the home of MPI/NCCL to come).

:mod:`.allreduce`
    the ring all-reduce schedule and its NumPy and CuPy backends.
:mod:`.workers`
    one worker thread per device, the rendezvous where collective operators meet, and
    the :class:`symgraph.opdef.DeviceGroup` each worker runs under.
:mod:`.executor_group`
    :class:`DataParallelExecutor`: the batch split over devices, gradients all-reduced.
"""
from .allreduce import Step, ring_schedule, allreduce, NumpyRing
from .workers import Rendezvous, rendezvous, current_rank
from .executor_group import DataParallelExecutor

__all__ = ['Step', 'ring_schedule', 'allreduce', 'NumpyRing', 'Rendezvous', 'rendezvous',
           'current_rank', 'DataParallelExecutor']
