"""Samplers of dataset indices (MXNet's ``mx.gluon.data`` samplers), after MXNet 1.9.1's
``python/mxnet/gluon/data/sampler.py``.

A sampler is an iterable of indices with a length; :class:`BatchSampler` groups another
sampler's indices into lists, and decides what happens to a last, short batch.
"""
import numpy as np

from ...base import ArgumentError, ArgumentTypeError

__all__ = ['Sampler', 'SequentialSampler', 'RandomSampler', 'FilterSampler', 'BatchSampler']

#: what :class:`BatchSampler` may do with a last batch shorter than ``batch_size``
LAST_BATCH = ('keep', 'discard', 'rollover')


def _check_count(value, what, minimum=0):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ArgumentError('%s must be an int >= %d, got %r' % (what, minimum, value))
    return int(value)


def check_last_batch(last_batch):
    """``last_batch`` if it is one of :data:`LAST_BATCH`, else a ValueError naming them."""
    if last_batch not in LAST_BATCH:
        raise ArgumentError("last_batch must be one of 'keep', 'discard', or 'rollover', "
                            "but got %r" % (last_batch,))
    return last_batch


class Sampler(object):
    """The base class of samplers: subclasses define ``__iter__`` and ``__len__``."""

    def __iter__(self):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """The indices ``start, start + 1, ..., start + length - 1`` in order.

    Parameters
    ----------
    length : int
        The number of indices.
    start : int, default 0
        The first index.

    Examples
    --------
    >>> import symgraph as mx
    >>> list(mx.gluon.data.SequentialSampler(3, start=2))
    [2, 3, 4]
    """

    def __init__(self, length, start=0):
        self._length = _check_count(length, 'length')
        self._start = _check_count(start, 'start')

    def __iter__(self):
        return iter(range(self._start, self._start + self._length))

    def __len__(self):
        return self._length


class RandomSampler(Sampler):
    """The indices ``0 .. length - 1`` in a random order, new at each iteration (drawn
    from NumPy's global random state, as MXNet).

    Parameters
    ----------
    length : int
        The number of indices.
    """

    def __init__(self, length):
        self._length = _check_count(length, 'length')

    def __iter__(self):
        indices = np.arange(self._length)
        np.random.shuffle(indices)
        return iter(indices.tolist())

    def __len__(self):
        return self._length


class FilterSampler(Sampler):
    """The indices of the samples of ``dataset`` for which ``fn(sample)`` is true (worked
    out once, when the sampler is made).

    Parameters
    ----------
    fn : callable
        Takes a sample, returns a bool.
    dataset : Dataset
        The dataset to filter.
    """

    def __init__(self, fn, dataset):
        if not callable(fn):
            raise ArgumentTypeError('FilterSampler needs a callable, got %s'
                                    % type(fn).__name__)
        self._fn = fn
        self._dataset = dataset
        self._indices = [i for i in range(len(dataset)) if fn(dataset[i])]

    def __iter__(self):
        return iter(self._indices)

    def __len__(self):
        return len(self._indices)


class BatchSampler(Sampler):
    """Lists of ``batch_size`` indices of another sampler.

    Parameters
    ----------
    sampler : Sampler
        The source of the indices.
    batch_size : int
        The size of a batch.
    last_batch : {'keep', 'discard', 'rollover'}, default 'keep'
        What to do with a last batch shorter than ``batch_size``: ``'keep'`` yields it,
        ``'discard'`` drops it, ``'rollover'`` keeps its indices for the start of the next
        iteration.

    Examples
    --------
    >>> import symgraph as mx
    >>> sampler = mx.gluon.data.SequentialSampler(10)
    >>> list(mx.gluon.data.BatchSampler(sampler, 3, 'keep'))
    [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    >>> rolling = mx.gluon.data.BatchSampler(sampler, 3, 'rollover')
    >>> list(rolling), list(rolling)
    ([[0, 1, 2], [3, 4, 5], [6, 7, 8]], [[9, 0, 1], [2, 3, 4], [5, 6, 7]])
    """

    def __init__(self, sampler, batch_size, last_batch='keep'):
        self._sampler = sampler
        self._batch_size = _check_count(batch_size, 'batch_size', 1)
        self._last_batch = check_last_batch(last_batch)
        self._prev = []

    def __iter__(self):
        batch, self._prev = self._prev, []
        for i in self._sampler:
            batch.append(i)
            if len(batch) == self._batch_size:
                yield batch
                batch = []
        if batch:
            if self._last_batch == 'keep':
                yield batch
            elif self._last_batch == 'rollover':
                self._prev = batch

    def __len__(self):
        if self._last_batch == 'keep':
            return (len(self._sampler) + self._batch_size - 1) // self._batch_size
        if self._last_batch == 'discard':
            return len(self._sampler) // self._batch_size
        return (len(self._prev) + len(self._sampler)) // self._batch_size
