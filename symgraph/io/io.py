"""The data iterator protocol (MXNet 1.9.1's ``mxnet.io.io``): DataDesc, DataBatch, the
DataIter base that every training loop and Module reads, and the iterators that wrap
other iterators (ResizeIter, PrefetchingIter).

NDArrayIter is in :mod:`symgraph.io.ndarray_iter`; the iterators MXNet implements in C++
(CSVIter, LibSVMIter, MNISTIter, their base MXDataIter) in :mod:`symgraph.io.native`.
"""
from collections import namedtuple
import threading

import numpy as np
from ..base import ArgumentError, ArgumentTypeError, UnknownNameError, UsageError

__all__ = ['DataDesc', 'DataBatch', 'DataIter', 'ResizeIter', 'PrefetchingIter']

mx_real_t = np.float32


class DataDesc(namedtuple('DataDesc', ['name', 'shape'])):
    """Name, shape, type and layout of one input (data or label) of a model.

    A ``(name, shape)`` namedtuple, so it compares and unpacks as the pair, with ``dtype``
    and ``layout`` as further attributes. ``layout`` says what the axes of ``shape`` are:
    ``'NCHW'`` (the default) for images, ``'NTC'`` for sequences; ``N`` is the batch axis.

    Parameters
    ----------
    name : str
        Data name.
    shape : tuple of int
        Data shape.
    dtype : numpy dtype, optional
        Data type (float32 by default).
    layout : str, optional
        Data layout.

    Examples
    --------
    >>> import symgraph as mx
    >>> d = mx.io.DataDesc('data', (32, 3, 8, 8))
    >>> d
    DataDesc[data,(32, 3, 8, 8),<class 'numpy.float32'>,NCHW]
    >>> d == ('data', (32, 3, 8, 8)), d.name, d.layout
    (True, 'data', 'NCHW')
    """

    def __new__(cls, name, shape, dtype=mx_real_t, layout='NCHW'):
        ret = super(DataDesc, cls).__new__(cls, name, shape)
        ret.dtype = dtype
        ret.layout = layout
        return ret

    def __repr__(self):
        return 'DataDesc[%s,%s,%s,%s]' % (self.name, self.shape, self.dtype, self.layout)

    def _replace(self, **kwargs):
        """A copy with fields replaced; keeps ``dtype`` and ``layout`` (MXNet's copy lost
        them)."""
        return DataDesc(kwargs.pop('name', self.name), kwargs.pop('shape', self.shape),
                        kwargs.pop('dtype', self.dtype), kwargs.pop('layout', self.layout))

    def __getnewargs__(self):
        return (self.name, self.shape, self.dtype, self.layout)

    @staticmethod
    def get_batch_axis(layout):
        """The axis of the batch in ``layout`` (0 for None, -1 if it has no ``N``).

        Parameters
        ----------
        layout : str or None
            Layout string, e.g. ``'NCHW'``.

        Returns
        -------
        int
            The batch axis; -1 means the whole array is copied to every device.
        """
        if layout is None:
            return 0
        return layout.find('N')

    @staticmethod
    def get_list(shapes, types):
        """DataDescs from ``(name, shape)`` pairs and, optionally, ``(name, dtype)`` pairs.

        Parameters
        ----------
        shapes : list of (str, tuple)
        types : list of (str, dtype) or None

        Returns
        -------
        list of DataDesc
        """
        if types is not None:
            type_dict = dict(types)
            return [DataDesc(x[0], x[1], type_dict[x[0]]) for x in shapes]
        return [DataDesc(x[0], x[1]) for x in shapes]


class DataBatch(object):
    """One batch of data: what a :class:`DataIter` returns from ``next()``.

    Parameters
    ----------
    data : list of NDArray
        The input data, each with ``batch_size`` examples along its batch axis.
    label : list of NDArray, optional
        The labels.
    pad : int, optional
        How many examples at the end of the batch are padding (ignored in prediction).
    index : numpy.ndarray, optional
        The indices of the examples in the batch.
    bucket_key : int, optional
        The bucket key, for BucketingModule.
    provide_data : list of DataDesc, optional
        Descriptions of ``data`` (name, shape, dtype, layout).
    provide_label : list of DataDesc, optional
        Descriptions of ``label``.
    """

    def __init__(self, data, label=None, pad=None, index=None,
                 bucket_key=None, provide_data=None, provide_label=None):
        if data is not None and not isinstance(data, (list, tuple)):
            raise ArgumentTypeError('DataBatch: data must be a list of NDArrays, got %s'
                                    % type(data).__name__)
        if label is not None and not isinstance(label, (list, tuple)):
            raise ArgumentTypeError('DataBatch: label must be a list of NDArrays, got %s'
                                    % type(label).__name__)
        self.data = data
        self.label = label
        self.pad = pad
        self.index = index
        self.bucket_key = bucket_key
        self.provide_data = provide_data
        self.provide_label = provide_label

    def __str__(self):
        data_shapes = [d.shape for d in self.data]
        if self.label:
            label_shapes = [l.shape for l in self.label]
        else:
            label_shapes = None
        return '{}: data shapes: {} label shapes: {}'.format(
            self.__class__.__name__, data_shapes, label_shapes)


class DataIter(object):
    """The base class of data iterators: an iterator of :class:`DataBatch`.

    A subclass either overrides ``next`` (and ``reset``, ``provide_data``,
    ``provide_label``), or ``iter_next`` with ``getdata``/``getlabel``/``getpad``/
    ``getindex``, which the default ``next`` assembles into a DataBatch.

    Parameters
    ----------
    batch_size : int, optional
        The number of examples in a batch.
    """

    def __init__(self, batch_size=0):
        self.batch_size = batch_size

    def __iter__(self):
        return self

    def reset(self):
        """Go back to the beginning of the data."""
        pass

    def next(self):
        """The next batch.

        Returns
        -------
        DataBatch

        Raises
        ------
        StopIteration
            At the end of the data.
        """
        if self.iter_next():
            return DataBatch(data=self.getdata(), label=self.getlabel(),
                             pad=self.getpad(), index=self.getindex())
        raise StopIteration

    def __next__(self):
        return self.next()

    def iter_next(self):
        """Move to the next batch; whether there was one."""
        pass

    def getdata(self):
        """The data of the current batch (list of NDArray)."""
        pass

    def getlabel(self):
        """The labels of the current batch (list of NDArray)."""
        pass

    def getindex(self):
        """The indices of the current batch's examples (numpy array), or None."""
        return None

    def getpad(self):
        """The number of padding examples in the current batch."""
        pass


class ResizeIter(DataIter):
    """A data iterator resized to ``size`` batches per epoch (restarting the inner one
    when it runs out, cutting it short otherwise).

    Parameters
    ----------
    data_iter : DataIter
        The iterator to resize.
    size : int
        The number of batches per epoch.
    reset_internal : bool
        Whether ``reset`` also resets ``data_iter``.

    Examples
    --------
    >>> import symgraph as mx
    >>> it = mx.io.ResizeIter(mx.io.NDArrayIter(mx.nd.ones((100, 10)), batch_size=25), 2)
    >>> [b.data[0].shape for b in it]
    [(25, 10), (25, 10)]
    """

    def __init__(self, data_iter, size, reset_internal=True):
        super(ResizeIter, self).__init__()
        self.data_iter = data_iter
        self.size = size
        self.reset_internal = reset_internal
        self.cur = 0
        self.current_batch = None
        self.provide_data = data_iter.provide_data
        self.provide_label = data_iter.provide_label
        self.batch_size = data_iter.batch_size
        if hasattr(data_iter, 'default_bucket_key'):
            self.default_bucket_key = data_iter.default_bucket_key

    def reset(self):
        self.cur = 0
        if self.reset_internal:
            self.data_iter.reset()

    def iter_next(self):
        if self.cur == self.size:
            return False
        try:
            self.current_batch = self.data_iter.next()
        except StopIteration:
            self.data_iter.reset()
            self.current_batch = self.data_iter.next()
        self.cur += 1
        return True

    def getdata(self):
        return self.current_batch.data

    def getlabel(self):
        return self.current_batch.label

    def getindex(self):
        return self.current_batch.index

    def getpad(self):
        return self.current_batch.pad


class _Prefetcher(object):
    """The state the prefetching threads share with a :class:`PrefetchingIter`.

    The threads hold this object, not the PrefetchingIter, so that the iterator can be
    collected (and its ``__del__`` stop the threads) while they run.
    """

    def __init__(self, iters):
        n = len(iters)
        self.iters = iters
        self.started = True
        self.data_ready = [threading.Event() for _ in range(n)]
        self.data_taken = [threading.Event() for _ in range(n)]
        for e in self.data_taken:
            e.set()
        self.next_batch = [None] * n
        self.errors = [None] * n
        # stop() and a thread finishing a fetch must not interleave: a thread that cleared
        # data_taken just after stop() set it would wait for ever (and close() with it)
        self._lock = threading.Lock()
        self.threads = [threading.Thread(target=self.run, args=(i,), daemon=True,
                                         name='PrefetchingIter-%d' % i) for i in range(n)]
        for t in self.threads:
            t.start()

    def run(self, i):
        """Thread body: fetch the next batch of ``iters[i]`` each time it was taken."""
        while True:
            self.data_taken[i].wait()
            if not self.started:
                break
            try:
                self.next_batch[i] = self.iters[i].next()
            except StopIteration:
                self.next_batch[i] = None
            except BaseException as err:   # handed to the consumer, raised there
                self.next_batch[i] = None
                self.errors[i] = err
            with self._lock:
                if not self.started:
                    break
                self.data_taken[i].clear()
                self.data_ready[i].set()

    def stop(self):
        with self._lock:
            self.started = False
            for e in self.data_taken:
                e.set()
        for t in self.threads:
            if t is not threading.current_thread():
                t.join()


class PrefetchingIter(DataIter):
    """Prefetches the batches of one or more iterators, each in a background thread.

    With several iterators, each batch joins their data and labels (in order).

    Parameters
    ----------
    iters : DataIter or list of DataIter
        The iterators to prefetch from.
    rename_data : None or list of dict
        For the i-th iterator, a map ``{'original_name': 'new_name'}`` with an entry for
        each of its ``provide_data``.
    rename_label : None or list of dict
        The same for the labels.

    Notes
    -----
    The threads stop when the iterator is garbage-collected (as in MXNet) or when
    :meth:`close` is called (symgraph's addition, also used by ``with``). An exception
    raised by a source iterator in its thread is raised again by ``next``.

    Examples
    --------
    >>> import symgraph as mx
    >>> it1 = mx.io.NDArrayIter({'data': mx.nd.ones((100, 10))}, batch_size=25)
    >>> it2 = mx.io.NDArrayIter({'data': mx.nd.ones((100, 10))}, batch_size=25)
    >>> piter = mx.io.PrefetchingIter([it1, it2],
    ...                               rename_data=[{'data': 'data_1'}, {'data': 'data_2'}])
    >>> piter.provide_data
    [DataDesc[data_1,(25, 10),<class 'numpy.float32'>,NCHW], \
DataDesc[data_2,(25, 10),<class 'numpy.float32'>,NCHW]]
    >>> piter.close()
    """

    def __init__(self, iters, rename_data=None, rename_label=None):
        super(PrefetchingIter, self).__init__()
        self._prefetcher = None
        if not isinstance(iters, list):
            iters = [iters]
        if not iters:
            raise ArgumentError('PrefetchingIter needs at least one iterator')
        self.n_iter = len(iters)
        self.iters = iters
        for what, rename in (('rename_data', rename_data), ('rename_label', rename_label)):
            if rename is not None and (not isinstance(rename, (list, tuple))
                                       or len(rename) != self.n_iter):
                raise ArgumentError('PrefetchingIter: %s must be a list of %d dicts (one per '
                                    'iterator), got %r' % (what, self.n_iter, rename))
        self.rename_data = rename_data
        self.rename_label = rename_label
        self.batch_size = self.provide_data[0][1][0]
        self.current_batch = [None for _ in range(self.n_iter)]
        self._prefetcher = _Prefetcher(iters)
        # MXNet's attribute names, shared with the threads
        self.data_ready = self._prefetcher.data_ready
        self.data_taken = self._prefetcher.data_taken
        self.next_batch = self._prefetcher.next_batch
        self.prefetch_threads = self._prefetcher.threads

    @property
    def started(self):
        """Whether the prefetching threads run."""
        return self._prefetcher is not None and self._prefetcher.started

    def close(self):
        """Stop and join the prefetching threads (idempotent)."""
        if self._prefetcher is not None and self._prefetcher.started:
            self._prefetcher.stop()

    def __del__(self):
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @staticmethod
    def _renamed(descs, renames, what):
        if renames is None:
            return descs
        out = []
        for r, (i, descs_i) in zip(renames, enumerate(descs)):
            for x in descs_i:
                x = x if isinstance(x, DataDesc) else DataDesc(*x)
                if x.name not in r:
                    raise UnknownNameError('PrefetchingIter: %s[%d] has no entry for %r (it has %s)'
                                           % (what, i, x.name, sorted(r)))
                out.append(DataDesc(r[x.name], x.shape, x.dtype))
        return out

    @property
    def provide_data(self):
        descs = [i.provide_data for i in self.iters]
        if self.rename_data is None:
            return sum(descs, [])
        return self._renamed(descs, self.rename_data, 'rename_data')

    @property
    def provide_label(self):
        descs = [i.provide_label for i in self.iters]
        if self.rename_label is None:
            return sum(descs, [])
        return self._renamed(descs, self.rename_label, 'rename_label')

    def _check_running(self):
        if not self.started:
            raise UsageError('PrefetchingIter was closed')

    def reset(self):
        self._check_running()
        for e in self.data_ready:
            e.wait()
        self._prefetcher.errors[:] = [None] * self.n_iter
        for i in self.iters:
            i.reset()
        for e in self.data_ready:
            e.clear()
        for e in self.data_taken:
            e.set()

    def iter_next(self):
        self._check_running()
        for e in self.data_ready:
            e.wait()
        errors = self._prefetcher.errors
        for i, err in enumerate(errors):
            if err is not None:
                errors[i] = None
                for e in self.data_ready:      # let the threads fetch again after a reset
                    e.clear()
                for e in self.data_taken:
                    e.set()
                raise err
        ended = [b is None for b in self.next_batch]
        if any(ended):
            if not all(ended):
                raise ArgumentError('PrefetchingIter: the iterators have different numbers of '
                                    'batches (iterators %s ended, the others did not)'
                                    % [i for i, e in enumerate(ended) if e])
            return False
        for batch in self.next_batch:
            if batch.pad != self.next_batch[0].pad:
                raise ArgumentError('PrefetchingIter: the iterators pad their batches '
                                    'differently (%s)' % [b.pad for b in self.next_batch])
        self.current_batch = DataBatch(sum([batch.data for batch in self.next_batch], []),
                                       sum([batch.label for batch in self.next_batch], []),
                                       self.next_batch[0].pad,
                                       self.next_batch[0].index,
                                       provide_data=self.provide_data,
                                       provide_label=self.provide_label)
        for e in self.data_ready:
            e.clear()
        for e in self.data_taken:
            e.set()
        return True

    def next(self):
        if self.iter_next():
            return self.current_batch
        raise StopIteration

    def getdata(self):
        return self.current_batch.data

    def getlabel(self):
        return self.current_batch.label

    def getindex(self):
        return self.current_batch.index

    def getpad(self):
        return self.current_batch.pad

