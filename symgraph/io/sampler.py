"""A sampler that shards the examples over the workers of a multi-process job, as PyTorch's
``torch.utils.data.DistributedSampler`` does.

Every worker makes one with the same arguments (but its own ``rank``); each draws the same
order of the ``N`` examples (shuffled by ``numpy.random.RandomState(seed + epoch)`` with
``shuffle``, else ``0 .. N-1``), pads it by wrapping around to ``total_size`` (a multiple
of ``num_replicas``) or, with ``drop_last``, cuts it to one, and takes every
``num_replicas``-th index from ``rank`` on. So every worker gets ``num_samples`` indices,
as many as the others (a worker with a batch more would wait for the others in its
all-reduce), and together they cover every example.

Use it with :class:`~symgraph.io.NDArrayIter` (``sampler=``), whose ``reset`` moves the
sampler to the next epoch (so ``Module.fit`` reshuffles every epoch) unless
:meth:`DistributedSampler.set_epoch` was called since the last epoch began; or iterate it
yourself and call ``set_epoch`` before each epoch, as with PyTorch.
"""
import math
import os

import numpy as np

from ..base import ArgumentError, ArgumentTypeError

__all__ = ['DistributedSampler', 'job_rank_and_size']

#: (size, rank) variables of the launchers, in the order they are looked at:
#: symgraph.launch and MXNet's tools/launch.py, MPICH (Hydra), Open MPI
_ENV = (('DMLC_NUM_WORKER', 'DMLC_WORKER_ID'), ('PMI_SIZE', 'PMI_RANK'),
        ('OMPI_COMM_WORLD_SIZE', 'OMPI_COMM_WORLD_RANK'))


def job_rank_and_size():
    """``(rank, size)`` of this worker from its launcher's environment
    (``python -m symgraph.launch`` sets ``DMLC_WORKER_ID``/``DMLC_NUM_WORKER``; plain
    ``mpiexec`` sets MPICH's or Open MPI's variables); ``(0, 1)`` outside a job."""
    for size_var, rank_var in _ENV:
        size, rank = os.environ.get(size_var), os.environ.get(rank_var)
        if size is not None and rank is not None:
            try:
                return int(rank), int(size)
            except ValueError:
                raise ArgumentError('%s=%r and %s=%r must be integers'
                                    % (rank_var, rank, size_var, size)) from None
    return 0, 1


def _int(name, value, minimum):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ArgumentTypeError('DistributedSampler: %s must be an int, got %r'
                                % (name, value))
    if value < minimum:
        raise ArgumentError('DistributedSampler: %s must be >= %d, got %d'
                            % (name, minimum, value))
    return int(value)


class DistributedSampler:
    """The indices of this worker's share of ``dataset`` (PyTorch's DistributedSampler).

    Parameters
    ----------
    dataset : int or sized
        The number of examples, or anything with ``len()`` (an array, a dataset).
    num_replicas : int, optional
        The number of workers (default: the launcher's, see :func:`job_rank_and_size`;
        ``kv.num_workers`` of a ``'dist_sync'`` kvstore is the same number).
    rank : int, optional
        This worker's rank in ``[0, num_replicas)`` (default: the launcher's; ``kv.rank``).
    shuffle : bool, optional
        Shuffle the examples every epoch (default True), the same way in every worker.
    seed : int, optional
        The seed of the shuffle; the generator of an epoch is seeded ``seed + epoch``.
    drop_last : bool, optional
        Drop the tail that does not divide evenly over the workers instead of padding
        with examples from the start.

    Attributes
    ----------
    num_samples : int
        The number of indices each worker gets per epoch (``len(sampler)``).
    total_size : int
        ``num_samples * num_replicas``.
    epoch : int
        The epoch whose order :meth:`__iter__` gives.

    Notes
    -----
    The shuffled orders are NumPy's, not PyTorch's (another generator); the sharding,
    the padding and ``drop_last`` are PyTorch's.

    Examples
    --------
    >>> s = DistributedSampler(10, num_replicas=3, rank=2, shuffle=False)
    >>> list(s), len(s)
    ([2, 5, 8, 1], 4)
    """

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0,
                 drop_last=False):
        if isinstance(dataset, (int, np.integer)) and not isinstance(dataset, bool):
            n = int(dataset)
        else:
            try:
                n = len(dataset)
            except TypeError:
                raise ArgumentTypeError('DistributedSampler: dataset must be a number of '
                                        'examples or have a len(), got %s'
                                        % type(dataset).__name__) from None
        self.num_examples = _int('the number of examples', n, 0)
        env_rank, env_size = job_rank_and_size()
        self.num_replicas = _int('num_replicas', env_size if num_replicas is None
                                 else num_replicas, 1)
        self.rank = _int('rank', env_rank if rank is None else rank, 0)
        if self.rank >= self.num_replicas:
            raise ArgumentError('DistributedSampler: invalid rank %d, rank should be in the '
                                'interval [0, %d]' % (self.rank, self.num_replicas - 1))
        self.shuffle = bool(shuffle)
        self.seed = _int('seed', seed, 0)
        self.drop_last = bool(drop_last)
        self.epoch = 0
        self._epoch_set = False
        n, r = self.num_examples, self.num_replicas
        if self.drop_last and n % r:
            self.num_samples = math.ceil((n - r) / r)
        else:
            self.num_samples = math.ceil(n / r)
        self.total_size = self.num_samples * r
        if n == 0 and self.total_size:
            raise ArgumentError('DistributedSampler: no examples to shard')

    def set_epoch(self, epoch):
        """Make :meth:`__iter__` give the order of ``epoch`` (call it before each epoch
        when you iterate the sampler yourself; every worker must use the same epoch)."""
        self.epoch = _int('epoch', epoch, 0)
        self._epoch_set = True

    def next_epoch(self):
        """Move to the next epoch, unless :meth:`set_epoch` was called since the last
        one began (what :class:`~symgraph.io.NDArrayIter`'s ``reset`` does)."""
        if not self._epoch_set:
            self.epoch += 1
        self._epoch_set = False

    def indices(self):
        """This worker's indices for the current epoch (a NumPy int64 array)."""
        n = self.num_examples
        if self.shuffle:
            order = np.random.RandomState(self.seed + self.epoch).permutation(n)
        else:
            order = np.arange(n)
        if self.total_size > n:
            # pad by wrapping around (repeatedly where the padding exceeds the examples)
            order = np.resize(order, self.total_size)
        else:
            order = order[:self.total_size]
        return order[self.rank:self.total_size:self.num_replicas].astype(np.int64)

    def __iter__(self):
        return iter(self.indices().tolist())

    def __len__(self):
        return self.num_samples

    def __repr__(self):
        return ('DistributedSampler(%d examples, num_replicas=%d, rank=%d, shuffle=%s, seed=%d, '
                'drop_last=%s, epoch=%d)' % (self.num_examples, self.num_replicas, self.rank,
                                              self.shuffle, self.seed, self.drop_last,
                                              self.epoch))
