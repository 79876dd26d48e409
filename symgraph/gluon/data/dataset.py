"""Datasets (MXNet's ``mx.gluon.data`` datasets), after MXNet 1.9.1's
``python/mxnet/gluon/data/dataset.py``.

A dataset is anything with ``__getitem__`` and ``__len__`` (NumPy arrays and NDArrays
serve as they are); :class:`Dataset` adds the lazy views ``transform``,
``transform_first``, ``filter``, ``shard``, ``take`` and ``sample``.
``RecordFileDataset`` comes with the full data pipeline (a separate issue).
"""
import numpy as np

from ...ndarray import NDArray
from ...base import ArgumentError, ArgumentTypeError
from .sampler import Sampler, SequentialSampler, FilterSampler

__all__ = ['Dataset', 'SimpleDataset', 'ArrayDataset']


class Dataset(object):
    """The base class of datasets: subclasses define ``__getitem__`` (the i-th sample)
    and ``__len__``."""

    def __getitem__(self, idx):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError

    def filter(self, fn):
        """A dataset of the samples for which ``fn(sample)`` is true.

        Examples
        --------
        >>> import symgraph as mx
        >>> list(mx.gluon.data.SimpleDataset(list(range(6))).filter(lambda x: x % 2))
        [1, 3, 5]
        """
        return _SampledDataset(self, FilterSampler(fn, self))

    def shard(self, num_shards, index):
        """The ``index``-th of ``num_shards`` contiguous parts of this dataset (the first
        ``len % num_shards`` parts are one sample longer). Shard before shuffling, so that
        every worker of a distributed job reads its own samples.

        Examples
        --------
        >>> import symgraph as mx
        >>> [list(mx.gluon.data.SimpleDataset(list(range(5))).shard(2, i)) for i in (0, 1)]
        [[0, 1, 2], [3, 4]]
        """
        for value, what in ((num_shards, 'num_shards'), (index, 'index')):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise ArgumentTypeError('%s must be an int, got %r' % (what, value))
        if num_shards <= 0:
            raise ArgumentError('Number of shards must be greater than 0, got %d' % num_shards)
        if not 0 <= index < num_shards:
            raise ArgumentError('Shard index out of bound: %d out of %d' % (index, num_shards))
        length = len(self)
        shard_len, rest = divmod(length, num_shards)
        start = shard_len * index + min(index, rest)
        end = start + shard_len + (index < rest)
        return _SampledDataset(self, SequentialSampler(end - start, start))

    def take(self, count):
        """A dataset of the first ``count`` samples (all of them when ``count`` is None or
        larger than the dataset)."""
        if count is None or count > len(self):
            count = len(self)
        return _SampledDataset(self, SequentialSampler(count))

    def sample(self, sampler):
        """A dataset of the samples at the indices ``sampler`` gives (drawn once)."""
        if not isinstance(sampler, Sampler):
            raise ArgumentTypeError('Invalid sampler type: %s. Expected gluon.data.Sampler '
                                    'instead.' % type(sampler))
        return _SampledDataset(self, sampler)

    def transform(self, fn, lazy=True):
        """A dataset of ``fn(sample)`` (``fn(*sample)`` for a tuple sample).

        Parameters
        ----------
        fn : callable
            The transformation.
        lazy : bool, default True
            Transform each sample when it is read; with False, transform them all now
            (a random ``fn`` then gives the same result at every epoch).
        """
        if not callable(fn):
            raise ArgumentTypeError('transform needs a callable, got %s' % type(fn).__name__)
        trans = _LazyTransformDataset(self, fn)
        if lazy:
            return trans
        return SimpleDataset([trans[i] for i in range(len(trans))])

    def transform_first(self, fn, lazy=True):
        """:meth:`transform` of the first element of each sample only (the data, not the
        label).

        Examples
        --------
        >>> import symgraph as mx
        >>> ds = mx.gluon.data.ArrayDataset([1, 2], ['a', 'b'])
        >>> list(ds.transform_first(lambda x: 10 * x))
        [(10, 'a'), (20, 'b')]
        """
        return self.transform(_TransformFirstClosure(fn), lazy)

    def __iter__(self):
        # indexing until IndexError would run past the end of arrays that wrap around
        for i in range(len(self)):
            yield self[i]


class SimpleDataset(Dataset):
    """A dataset over anything with ``len()`` and ``[]`` (a list, an array).

    Parameters
    ----------
    data : dataset-like object
    """

    def __init__(self, data):
        self._data = data

    def __len__(self):
        return len(self._data)

    def __getitem__(self, idx):
        return self._data[idx]


class _LazyTransformDataset(Dataset):
    """A dataset transformed sample by sample when read."""

    def __init__(self, data, fn):
        self._data = data
        self._fn = fn

    def __len__(self):
        return len(self._data)

    def __getitem__(self, idx):
        item = self._data[idx]
        if isinstance(item, tuple):
            return self._fn(*item)
        return self._fn(item)


class _TransformFirstClosure(object):
    """A callable object rather than a closure, so that it pickles (for worker
    processes)."""

    def __init__(self, fn):
        self._fn = fn

    def __call__(self, x, *args):
        if args:
            return (self._fn(x),) + args
        return self._fn(x)


class _SampledDataset(Dataset):
    """The samples of a dataset at the indices of a sampler (drawn once)."""

    def __init__(self, dataset, sampler):
        self._dataset = dataset
        self._sampler = sampler
        self._indices = list(iter(sampler))

    def __len__(self):
        return len(self._indices)

    def __getitem__(self, idx):
        return self._dataset[self._indices[idx]]


class ArrayDataset(Dataset):
    """A dataset of several dataset-like objects of one length (arrays, lists, datasets):
    sample ``i`` is ``(x1[i], x2[i], ...)``, or ``x1[i]`` for one object. A 1-D NDArray is
    read as a NumPy array (its samples are NumPy scalars), as MXNet does.

    Parameters
    ----------
    *args : dataset-like objects

    Examples
    --------
    >>> import numpy as np, symgraph as mx
    >>> ds = mx.gluon.data.ArrayDataset(np.arange(6).reshape(3, 2), [7, 8, 9])
    >>> len(ds), ds[1][0].tolist(), ds[1][1]
    (3, [2, 3], 8)
    """

    def __init__(self, *args):
        if not args:
            raise ArgumentError('ArrayDataset needs at least 1 array')
        self._length = len(args[0])
        self._data = []
        for i, data in enumerate(args):
            if len(data) != self._length:
                raise ArgumentError('All arrays must have the same length; array[0] has length '
                                    '%d while array[%d] has %d.' % (self._length, i, len(data)))
            if isinstance(data, NDArray) and len(data.shape) == 1:
                data = data.asnumpy()
            self._data.append(data)

    def __getitem__(self, idx):
        if len(self._data) == 1:
            return self._data[0][idx]
        return tuple(data[idx] for data in self._data)

    def __len__(self):
        return self._length
