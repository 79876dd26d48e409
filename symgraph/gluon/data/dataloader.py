"""The DataLoader (MXNet's ``mx.gluon.data.DataLoader``), after MXNet 1.9.1's
``python/mxnet/gluon/data/dataloader.py``: mini-batches of a dataset, drawn by a
:class:`~.sampler.BatchSampler` and stacked by a batchify function.

Batches are made in the calling process. ``num_workers > 0`` is accepted and runs in
process too, with a warning: worker processes (and the shared-memory transport of batches)
come with the full data pipeline, a separate issue.
"""
import warnings

import numpy as np

from ... import ndarray as nd
from ...context import Context
from ...ndarray import NDArray
from ...base import ArgumentError, ArgumentTypeError
from . import sampler as _sampler

__all__ = ['DataLoader', 'default_batchify_fn', 'default_mp_batchify_fn']


def default_batchify_fn(data):
    """Stack a list of samples into a batch: NDArrays with ``nd.stack``, tuples element by
    element (a list of batches), anything else through ``numpy.asarray`` into an NDArray
    of the same dtype.

    Examples
    --------
    >>> import symgraph as mx
    >>> batchify = mx.gluon.data.dataloader.default_batchify_fn
    >>> x, y = batchify([(mx.nd.ones(2), 1), (mx.nd.zeros(2), 0)])
    >>> x.shape, y.asnumpy().tolist()
    ((2, 2), [1, 0])
    """
    if isinstance(data[0], NDArray):
        return nd.stack(*data)
    if isinstance(data[0], tuple):
        return [default_batchify_fn(list(i)) for i in zip(*data)]
    data = np.asarray(data)
    return nd.array(data, dtype=data.dtype)


def default_mp_batchify_fn(data):
    """:func:`default_batchify_fn` with the batch in shared CPU memory (``cpu_shared``),
    as MXNet's workers hand it over."""
    shared = Context('cpu_shared', 0)
    if isinstance(data[0], tuple):
        return [default_mp_batchify_fn(list(i)) for i in zip(*data)]
    return default_batchify_fn(data).as_in_context(shared)


def _as_in_context(data, ctx):
    """``data`` (an NDArray or nested lists of them) moved to ``ctx``."""
    if isinstance(data, NDArray):
        return data.as_in_context(ctx)
    if isinstance(data, (list, tuple)):
        return [_as_in_context(d, ctx) for d in data]
    return data


class DataLoader(object):
    """Mini-batches of a dataset.

    Parameters
    ----------
    dataset : Dataset
        The samples (NumPy arrays and NDArrays serve as datasets as they are).
    batch_size : int
        The size of a mini-batch (needed unless ``batch_sampler`` is given).
    shuffle : bool, default False
        Draw the samples in a new random order at each epoch.
    sampler : Sampler, optional
        The order of the samples (not with ``shuffle``).
    last_batch : {'keep', 'discard', 'rollover'}, default 'keep'
        What to do with a last batch shorter than ``batch_size`` (see
        :class:`~.sampler.BatchSampler`).
    batch_sampler : Sampler, optional
        Gives the lists of indices of the batches (then none of ``batch_size``,
        ``shuffle``, ``sampler``, ``last_batch``).
    batchify_fn : callable, optional
        Makes a batch from a list of samples (default :func:`default_batchify_fn`).
    num_workers : int, default 0
        Worker processes: accepted, but the batches are made in this process (a warning
        says so).
    pin_memory : bool, default False
        Copy the batches to ``cpu_pinned(pin_device_id)``.
    pin_device_id : int, default 0
    prefetch, thread_pool, timeout, auto_reload
        Accepted for MXNet compatibility (they tune the workers); ``timeout`` must be > 0.

    Examples
    --------
    >>> import numpy as np, symgraph as mx
    >>> ds = mx.gluon.data.ArrayDataset(np.arange(10).reshape(5, 2), np.arange(5))
    >>> [(x.shape, y.shape) for x, y in mx.gluon.data.DataLoader(ds, batch_size=2)]
    [((2, 2), (2,)), ((2, 2), (2,)), ((1, 2), (1,))]
    """

    def __init__(self, dataset, batch_size=None, shuffle=False, sampler=None,
                 last_batch=None, batch_sampler=None, batchify_fn=None,
                 num_workers=0, pin_memory=False, pin_device_id=0,
                 prefetch=None, thread_pool=False, timeout=120, auto_reload=False):
        if not timeout > 0:
            raise ArgumentError('timeout must be positive, given {}'.format(timeout))
        try:
            length = len(dataset)
        except TypeError:
            raise ArgumentTypeError('DataLoader needs a dataset with len() and [], got %s'
                                    % type(dataset).__name__) from None
        self._dataset = dataset
        self._pin_memory = pin_memory
        self._pin_device_id = pin_device_id
        self._thread_pool = thread_pool
        self._timeout = timeout
        if batch_sampler is None:
            if batch_size is None:
                raise ArgumentError('batch_size must be specified unless batch_sampler is '
                                    'specified')
            if sampler is None:
                sampler = _sampler.RandomSampler(length) if shuffle \
                    else _sampler.SequentialSampler(length)
            elif shuffle:
                raise ArgumentError('shuffle must not be specified if sampler is specified')
            batch_sampler = _sampler.BatchSampler(sampler, batch_size,
                                                  last_batch if last_batch else 'keep')
        elif batch_size is not None or shuffle or sampler is not None or \
                last_batch is not None:
            raise ArgumentError('batch_size, shuffle, sampler and last_batch must not be '
                                'specified if batch_sampler is specified.')
        self._batch_sampler = batch_sampler
        if isinstance(num_workers, bool) or not isinstance(num_workers, int):
            raise ArgumentTypeError('num_workers must be an int, got %r' % (num_workers,))
        self._num_workers = max(num_workers, 0)
        if self._num_workers > 0:
            warnings.warn('DataLoader(num_workers=%d): symgraph has no data-loading workers '
                          'yet; the batches are made in this process' % self._num_workers,
                          UserWarning, stacklevel=2)
        self._prefetch = max(0, int(prefetch) if prefetch is not None
                             else 2 * self._num_workers)
        if batchify_fn is None:
            batchify_fn = default_batchify_fn
        elif not callable(batchify_fn):
            raise ArgumentTypeError('batchify_fn must be callable, got %s'
                                    % type(batchify_fn).__name__)
        self._batchify_fn = batchify_fn
        self.auto_reload = auto_reload

    def __iter__(self):
        for batch in self._batch_sampler:
            ret = self._batchify_fn([self._dataset[idx] for idx in batch])
            if self._pin_memory:
                ret = _as_in_context(ret, Context('cpu_pinned', self._pin_device_id))
            yield ret

    def __len__(self):
        return len(self._batch_sampler)
