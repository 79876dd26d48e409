"""The DataLoader (MXNet's ``mx.gluon.data.DataLoader``), after MXNet 1.9.1's
``python/mxnet/gluon/data/dataloader.py``: mini-batches of a dataset, drawn by a
:class:`~.sampler.BatchSampler` and stacked by a batchify function.

With ``num_workers=0`` the batches are made in the calling process. With ``num_workers > 0``
they are made by worker processes (``thread_pool=True``: threads) that hand them over through
shared memory, ``prefetch`` batches ahead (see :mod:`.workers` for the transport, the start
methods and the shutdown rules): the pool lives with the DataLoader, across epochs, and is
stopped when the DataLoader is garbage-collected, at exit, or by :meth:`DataLoader.close`.
A worker's exception is raised again in this process, with the worker's traceback as its
``__cause__``; a batch that takes longer than ``timeout`` seconds stops the pool and raises
:class:`DataLoaderTimeoutError`; a worker process that dies (killed, out of memory) while a
batch is awaited stops the pool and raises :class:`~.workers.WorkerDiedError` within a
fraction of a second.
"""
import multiprocessing
import numbers

import numpy as np

from ... import ndarray as nd
from ...context import Context, num_gpus
from ...ndarray import NDArray
from ...base import ArgumentError, ArgumentTypeError, SymgraphError
from . import sampler as _sampler
from . import workers as _workers

__all__ = ['DataLoader', 'DataLoaderTimeoutError', 'default_batchify_fn',
           'default_mp_batchify_fn']


class DataLoaderTimeoutError(SymgraphError, multiprocessing.TimeoutError, TimeoutError):
    """A worker took longer than the DataLoader's ``timeout`` for a batch (MXNet raises
    ``multiprocessing.TimeoutError``, a base of this class, as is the builtin
    ``TimeoutError``)."""


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
    batch = default_batchify_fn(data)
    if batch.context.device_type == 'cpu':
        # the batch is new and nobody else's: relabel it rather than copy it (the worker's
        # transport puts it in shared memory)
        return NDArray(batch._data, shared)
    return batch.as_in_context(shared)


#: dtypes whose batches the workers stack straight into shared memory
_STACKABLE = frozenset(np.dtype(t) for t in ('float16', 'float32', 'float64', 'uint8', 'int8',
                                              'int32', 'int64'))


def _shared_plan(data):
    """:func:`default_mp_batchify_fn`'s batch for a worker's transport, its NDArray fields
    left as :class:`~.workers.Stacked` (stacked in the batch file itself: one copy of the
    pixels rather than a stack and a copy); None where a field is not CPU NDArrays of one
    shape and dtype (then the function itself runs, and reports what is wrong)."""
    first = data[0]
    if isinstance(first, NDArray):
        arrays = []
        for x in data:
            if type(x) is not NDArray or type(x._data) is not np.ndarray or \
                    x.context.device_type != 'cpu':
                return None
            arrays.append(np.ascontiguousarray(x._data))
        shape, dtype = arrays[0].shape, arrays[0].dtype
        if dtype not in _STACKABLE or any(a.shape != shape or a.dtype != dtype
                                          for a in arrays):
            return None
        return _workers.Stacked(arrays, ('cpu_shared', 0))
    if isinstance(first, tuple):
        fields = [_shared_plan(list(field)) for field in zip(*data)]
        return None if any(f is None for f in fields) else fields
    return default_mp_batchify_fn(data)


default_mp_batchify_fn.shared_plan = _shared_plan


def _as_in_context(data, ctx):
    """``data`` (an NDArray or nested lists of them) moved to ``ctx``."""
    if isinstance(data, NDArray):
        return data.as_in_context(ctx)
    if isinstance(data, (list, tuple)):
        return [_as_in_context(d, ctx) for d in data]
    return data


_PINNED_BY_CUPY = []


def _pinned_empty(shape, dtype):
    """A host array for a pinned batch: page-locked CuPy memory (fast, asynchronous copies
    to the GPU) when CuPy sees a GPU, else ordinary memory (pinning means nothing then)."""
    if not _PINNED_BY_CUPY:
        _PINNED_BY_CUPY.append(num_gpus() > 0)
    if _PINNED_BY_CUPY[0]:
        import cupyx                    # only where a GPU is used: CuPy is optional
        return cupyx.empty_pinned(shape, dtype)
    return np.empty(shape, dtype)


def _pin(data, device_id):
    """``data`` (an NDArray or nested lists of them) copied to ``cpu_pinned(device_id)``."""
    if isinstance(data, NDArray):
        ctx = Context('cpu_pinned', device_id)
        if data.context == ctx:
            return data
        src = data.asnumpy()
        host = _pinned_empty(src.shape, src.dtype)
        host[...] = src
        return NDArray(host, ctx)
    if isinstance(data, (list, tuple)):
        return [_pin(d, device_id) for d in data]
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
        Makes a batch from a list of samples (default :func:`default_batchify_fn`;
        :func:`default_mp_batchify_fn` in worker processes; see also :mod:`.batchify`).
    num_workers : int, default 0
        Worker processes that make the batches (0: in this process). Their batches come
        back through shared memory, with the context ``cpu_shared(0)`` as in MXNet.
    pin_memory : bool, default False
        Copy the batches to ``cpu_pinned(pin_device_id)`` (page-locked CuPy memory when a
        GPU is visible, for faster copies to it).
    pin_device_id : int, default 0
    prefetch : int, optional
        How many batches the workers make ahead (default ``2 * num_workers``).
    thread_pool : bool, default False
        Threads instead of processes (no pickling, no shared memory; for datasets whose
        work releases the GIL, such as image decoding).
    timeout : float, default 120
        Seconds to wait for a worker's batch before stopping the pool with
        :class:`DataLoaderTimeoutError`.
    try_nopython : bool, optional
        Accepted for MXNet 2.0 compatibility (its C++ data path); no effect.
    auto_reload : bool, default False
        Start the next epoch's prefetching at once (at construction and at the end of each
        epoch), as MXNet's ``auto_reload``.
    multiprocessing_context : str, optional
        The workers' start method ('fork', 'spawn', 'forkserver'; a symgraph addition,
        PyTorch's name). Default: ``SYMGRAPH_DATALOADER_START_METHOD`` or 'fork' where the
        platform has it, as MXNet. Other than 'fork', the dataset and ``batchify_fn`` must
        be picklable.

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
                 prefetch=None, thread_pool=False, timeout=120, try_nopython=None,
                 auto_reload=False, multiprocessing_context=None):
        self._pool = None
        self._iter = None
        if isinstance(timeout, bool) or not isinstance(timeout, numbers.Real) or \
                not timeout > 0:
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
        self._try_nopython = try_nopython
        if multiprocessing_context is not None and \
                multiprocessing_context not in multiprocessing.get_all_start_methods():
            raise ArgumentError('multiprocessing_context must be one of %s, got %r'
                                % (multiprocessing.get_all_start_methods(),
                                   multiprocessing_context))
        self._start_method = multiprocessing_context
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
        if isinstance(num_workers, bool) or not isinstance(num_workers, numbers.Integral):
            raise ArgumentTypeError('num_workers must be an int, got %r' % (num_workers,))
        self._num_workers = max(int(num_workers), 0)
        self._prefetch = max(0, int(prefetch) if prefetch is not None
                             else 2 * self._num_workers)
        if batchify_fn is None:
            batchify_fn = default_mp_batchify_fn if self._num_workers > 0 and \
                not thread_pool else default_batchify_fn
        elif not callable(batchify_fn):
            raise ArgumentTypeError('batchify_fn must be callable, got %s'
                                    % type(batchify_fn).__name__)
        self._batchify_fn = batchify_fn
        self.auto_reload = auto_reload
        if self.auto_reload:
            self.refresh()

    def __iter__(self):
        if self._iter is None:
            self.refresh()
        batches, self._iter = self._iter, None     # one epoch is never served twice
        try:
            for batch in batches:
                yield batch
        finally:
            # also when the loop is left early or the iterator dropped: the batches still
            # on their way are discarded and their shared memory freed
            if isinstance(batches, _workers.BatchStream):
                batches.close()
        if self._iter is None and self.auto_reload:
            self.refresh()

    def _same_process_iter(self):
        for batch in self._batch_sampler:
            ret = self._batchify_fn([self._dataset[idx] for idx in batch])
            if self._pin_memory:
                ret = _pin(ret, self._pin_device_id)
            yield ret

    def _finish(self, batch):
        return _pin(batch, self._pin_device_id) if self._pin_memory else batch

    def _timed_out(self):
        """Stop the pool (a new one starts with the next epoch); the error to raise."""
        self.close()
        msg = ('DataLoader: no batch from the workers in {} seconds. Possible causes: a slow '
               'dataset or transform (raise `timeout`), or a worker that died (killed, out of '
               'memory)'.format(self._timeout))
        if not self._thread_pool:
            msg += ', or shared memory (/dev/shm) too small for the batches'
        return DataLoaderTimeoutError(msg)

    def _prefetch_iter(self):
        if self._num_workers == 0:
            return self._same_process_iter()
        if self._pool is None or not self._pool.alive:
            self._pool = _workers.WorkerPool(self._num_workers, self._dataset,
                                             self._batchify_fn, self._thread_pool,
                                             self._start_method)
        return _workers.BatchStream(self._pool, self._batch_sampler, self._prefetch,
                                    self._timeout, self._finish, self._timed_out)

    def refresh(self):
        """Start the next epoch's iterator (and its prefetching) now."""
        if isinstance(self._iter, _workers.BatchStream):
            self._iter.close()
        self._iter = self._prefetch_iter()

    def clean(self):
        """Drop the prefetched iterator; the next ``iter()`` starts a new one."""
        if isinstance(self._iter, _workers.BatchStream):
            self._iter.close()
        self._iter = None

    def close(self):
        """Stop the worker processes (or threads) now; the next epoch starts new ones."""
        self.clean()
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    def __len__(self):
        return len(self._batch_sampler)
