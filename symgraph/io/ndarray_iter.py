"""NDArrayIter: batches from arrays in memory, exactly as MXNet 1.9.1 cuts them."""
import warnings

import numpy as np

from ..ndarray import NDArray
from .. import ndarray as nd
from .io import DataBatch, DataDesc, DataIter
from .sampler import DistributedSampler
from ..ndarray.sparse import CSRNDArray
from .utils import _init_data, _getdata_by_idx, _slice_along_batch_axis, _is_h5py
from ..base import ArgumentError

__all__ = ['NDArrayIter']

_LAST_BATCH_HANDLES = ('pad', 'discard', 'roll_over')


class NDArrayIter(DataIter):
    """Batches from NDArrays, NumPy arrays (or h5py Datasets) in memory.

    Parameters
    ----------
    data : array, list of arrays or dict of str to array
        The input data. A single array is named ``data_name``; a list of several is named
        ``_0_<data_name>``, ``_1_<data_name>``, ...; dict entries keep their names. The
        arrays are taken in the order of their sorted names.
    label : array, list of arrays or dict of str to array, optional
        The labels, named after ``label_name`` in the same way.
    batch_size : int
        Batch size.
    shuffle : bool, optional
        Shuffle the examples at construction and at every ``reset`` (with
        ``numpy.random.shuffle``, as MXNet: a seeded NumPy gives MXNet's order).
        Not with h5py Datasets.
    last_batch_handle : {'pad', 'discard', 'roll_over'}
        What to do with a last, incomplete batch: ``'pad'`` fills it with examples from
        the start (``pad`` tells how many); ``'discard'`` drops it; ``'roll_over'`` keeps
        its examples for the first batch of the next epoch (after ``reset``).
    data_name, label_name : str, optional
        Names of a single data / label array.
    layout : str, optional
        The data layout; its ``N`` is the batch axis.
    num_parts, part_index : int, optional (keyword only; not in MXNet's NDArrayIter)
        Iterate over part ``part_index`` of ``num_parts`` (one per worker of a
        multi-process job: ``kv.num_workers``, ``kv.rank``): contiguous parts of
        ``ceil(N / num_parts)`` examples, the last ones padded with examples from the start,
        so that every worker gets as many batches as the others (a worker with one batch
        more would wait for the others in its all-reduce).
    sampler : DistributedSampler, optional (keyword only; not in MXNet's NDArrayIter)
        Iterate over the examples the sampler gives, in its order (a
        :class:`~symgraph.io.DistributedSampler`: this worker's shard, shuffled the same
        way in every worker). Each ``reset`` moves it to its next epoch (a new order),
        unless its ``set_epoch`` was called since the epoch began. Not with ``shuffle``
        or ``num_parts``.

    Notes
    -----
    As in MXNet, NumPy inputs (of any dtype) become float32 NDArrays, NDArrays keep their
    dtype until a shuffle, which makes every array float32. CSR inputs (CSRNDArray, SciPy
    csr matrices) give CSRNDArray batches (dense-backed) with ``last_batch_handle='discard'``
    only, as MXNet's; row_sparse inputs are refused.

    Examples
    --------
    >>> import symgraph as mx, numpy as np
    >>> it = mx.io.NDArrayIter(np.arange(10).reshape(5, 2), np.arange(5), batch_size=2)
    >>> [(b.data[0].shape, b.pad) for b in it]
    [((2, 2), 0), ((2, 2), 0), ((2, 2), 1)]
    >>> it.provide_label
    [DataDesc[softmax_label,(2,),<class 'numpy.float32'>,NCHW]]
    """

    def __init__(self, data, label=None, batch_size=1, shuffle=False,
                 last_batch_handle='pad', data_name='data',
                 label_name='softmax_label', layout='NCHW', *, num_parts=1, part_index=0,
                 sampler=None):
        super(NDArrayIter, self).__init__(batch_size)
        if last_batch_handle not in _LAST_BATCH_HANDLES:
            raise ArgumentError("NDArrayIter: last_batch_handle must be one of %s, got %r"
                                % (', '.join("'%s'" % h for h in _LAST_BATCH_HANDLES),
                                   last_batch_handle))
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) \
                or batch_size < 1:
            raise ArgumentError('NDArrayIter: batch_size must be a positive integer, got %r'
                                % (batch_size,))
        if not isinstance(layout, str) or 'N' not in layout:
            raise ArgumentError("NDArrayIter: layout %r has no batch axis 'N'" % (layout,))
        self.data = _init_data(data, allow_empty=False, default_name=data_name)
        self.label = _init_data(label, allow_empty=True, default_name=label_name)
        if any(isinstance(v, CSRNDArray) for _, v in self.data + self.label) \
                and last_batch_handle != 'discard':
            raise NotImplementedError("`NDArrayIter` only supports ``CSRNDArray`` with "
                                      "`last_batch_handle` set to `discard`.")
        batch_axis = layout.find('N')
        lengths = []
        for k, v in self.data + self.label:
            if len(v.shape) <= batch_axis:
                raise ArgumentError("NDArrayIter: %r has shape %s, which has no batch axis %d "
                                    "(layout %r)" % (k, tuple(v.shape), batch_axis, layout))
            lengths.append((k, v.shape[batch_axis]))
        _check_lengths(lengths)
        if shuffle and any(_is_h5py(v) for _, v in self.data + self.label):
            raise ArgumentError('NDArrayIter: shuffle=True is not supported with h5py Datasets')
        num_data = lengths[0][1]
        if (num_parts, part_index) != (1, 0):
            if sampler is not None:
                raise ArgumentError('NDArrayIter: give num_parts/part_index or a sampler, '
                                    'not both (the sampler shards already)')
            num_data = self._shard(num_data, num_parts, part_index, batch_axis)
        self._sampler = None
        if sampler is not None:
            num_data = self._take_sampler(sampler, shuffle, num_data)
        if last_batch_handle != 'pad' and batch_size > num_data:
            # MXNet yields no batch at all with 'discard', and with 'roll_over' fails in
            # the third epoch (slicing past the end)
            raise ArgumentError("NDArrayIter: batch_size %d is larger than the %d examples of "
                                "the data, which last_batch_handle=%r cannot handle (use 'pad')"
                                % (batch_size, num_data, last_batch_handle))

        self.idx = np.arange(num_data)
        self.shuffle = shuffle
        self.last_batch_handle = last_batch_handle
        self.batch_size = batch_size
        self.cursor = -self.batch_size
        self.num_data = num_data
        self.layout = layout
        # shuffle
        self.reset()

        self.data_list = [x[1] for x in self.data] + [x[1] for x in self.label]
        self.num_source = len(self.data_list)
        # used for 'roll_over'
        self._cache_data = None
        self._cache_label = None

    def _take_sampler(self, sampler, shuffle, num_data):
        """Keep the whole arrays aside for ``sampler``; the length of an epoch."""
        if not isinstance(sampler, DistributedSampler):
            raise TypeError('NDArrayIter: sampler must be a symgraph.io.DistributedSampler, '
                            'got %s' % type(sampler).__name__)
        if shuffle:
            raise ArgumentError('NDArrayIter: give shuffle=True or a sampler, not both (the '
                                'sampler shuffles: DistributedSampler(shuffle=True))')
        if sampler.num_examples != num_data:
            raise ArgumentError('NDArrayIter: the sampler was made for %d examples, the data '
                                'has %d' % (sampler.num_examples, num_data))
        if any(_is_h5py(v) for _, v in self.data + self.label):
            raise ArgumentError('NDArrayIter: a sampler is not supported with h5py Datasets')
        self._sampler = sampler
        self._sampler_fresh = True
        self._whole = (self.data, self.label)
        return len(sampler)

    def _sample(self):
        """This epoch's examples, in the sampler's order."""
        if self._sampler_fresh:
            self._sampler_fresh = False
        else:
            self._sampler.next_epoch()
        rows = self._sampler.indices()
        axis = self.layout.find('N')
        self.data, self.label = [
            [(k, nd.array(np.take(v.asnumpy(), rows, axis=axis), dtype=v.dtype))
             for k, v in arrays] for arrays in self._whole]

    def _shard(self, num_data, num_parts, part_index, axis):
        """Keep part ``part_index`` of ``num_parts`` of every array; the new length."""
        for what, v in (('num_parts', num_parts), ('part_index', part_index)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise TypeError('NDArrayIter: %s must be an int, got %r' % (what, v))
        if num_parts < 1 or not 0 <= part_index < num_parts:
            raise ValueError('NDArrayIter: part_index %d must lie in [0, num_parts=%d)'
                             % (part_index, num_parts))
        if any(_is_h5py(v) for _, v in self.data + self.label):
            raise ValueError('NDArrayIter: num_parts is not supported with h5py Datasets')
        size = -(-num_data // num_parts)
        rows = np.arange(part_index * size, (part_index + 1) * size) % num_data
        self.data = [(k, nd.array(np.take(v.asnumpy(), rows, axis=axis), dtype=v.dtype))
                     for k, v in self.data]
        self.label = [(k, nd.array(np.take(v.asnumpy(), rows, axis=axis), dtype=v.dtype))
                      for k, v in self.label]
        return size

    def _descs(self, arrays):
        batch_axis = self.layout.find('N')
        return [DataDesc(k, tuple(list(v.shape[:batch_axis]) + [self.batch_size]
                                  + list(v.shape[batch_axis + 1:])),
                         _dtype_of(v), layout=self.layout)
                for k, v in arrays]

    @property
    def provide_data(self):
        """The name, shape, dtype and layout of each data array of a batch."""
        return self._descs(self.data)

    @property
    def provide_label(self):
        """The name, shape, dtype and layout of each label array of a batch."""
        return self._descs(self.label)

    def hard_reset(self):
        """Go back to the start, dropping what ``'roll_over'`` kept."""
        if self._sampler is not None:
            self._sample()
        if self.shuffle:
            self._shuffle_data()
        self.cursor = -self.batch_size
        self._cache_data = None
        self._cache_label = None

    def reset(self):
        """Go back to the start (after the examples ``'roll_over'`` carries over)."""
        if self._sampler is not None:
            self._sample()
        if self.shuffle:
            self._shuffle_data()
        # the range below indicates the last batch
        if self.last_batch_handle == 'roll_over' and \
                self.num_data - self.batch_size < self.cursor < self.num_data:
            # (self.cursor - self.num_data) is what the last batch has
            self.cursor = self.cursor - self.num_data - self.batch_size
        else:
            self.cursor = -self.batch_size

    def iter_next(self):
        """Move the cursor by ``batch_size``; whether it is still within the data."""
        self.cursor += self.batch_size
        return self.cursor < self.num_data

    def next(self):
        """The next batch."""
        if not self.iter_next():
            raise StopIteration
        data = self.getdata()
        label = self.getlabel()
        # an incomplete last batch ends the epoch; it is kept for the next one
        if data[0].shape[self.layout.find('N')] != self.batch_size:
            self._cache_data = data
            self._cache_label = label
            raise StopIteration
        return DataBatch(data=data, label=label, pad=self.getpad(), index=None)

    def _getdata(self, data_source, start=None, end=None):
        """Rows ``start:end`` of each array of ``data_source``."""
        assert start is not None or end is not None, 'should at least specify start or end'
        start = start if start is not None else 0
        if end is None:
            # (MXNet: the array's own length, which takes a longer label's extra rows into
            # the padded last batch; the examples end at num_data)
            end = self.num_data if data_source else 0
        s = slice(start, end)
        return [
            _slice_along_batch_axis(x[1], s, self.layout.find('N'))
            if isinstance(x[1], (np.ndarray, NDArray)) else
            # h5py (reads only indices in increasing order)
            nd.array(x[1][sorted(self.idx[s])][[
                list(self.idx[s]).index(i) for i in sorted(self.idx[s])]])
            for x in data_source
        ]

    def _concat(self, first_data, second_data):
        """Join two lists of arrays along the batch axis."""
        if (not first_data) or (not second_data):
            return first_data if first_data else second_data
        assert len(first_data) == len(second_data), 'data source should contain the same size'
        return [nd.concat(first_data[i], second_data[i], dim=self.layout.find('N'))
                for i in range(len(first_data))]

    def _tile(self, data, repeats):
        if not data:
            return []
        res = []
        for datum in data:
            reps = [1] * len(datum.shape)
            reps[self.layout.find('N')] = repeats
            res.append(nd.tile(datum, reps=tuple(reps)))
        return res

    def _batchify(self, data_source):
        """The current batch of ``data_source`` (MXNet's three cases)."""
        assert self.cursor < self.num_data, 'DataIter needs reset.'
        # first batch of the next epoch with 'roll_over'
        if self.last_batch_handle == 'roll_over' and -self.batch_size < self.cursor < 0:
            assert self._cache_data is not None or self._cache_label is not None, \
                'next epoch should have cached data'
            cache_data = self._cache_data if self._cache_data is not None \
                else self._cache_label
            second_data = self._getdata(data_source, end=self.cursor + self.batch_size)
            if self._cache_data is not None:
                self._cache_data = None
            else:
                self._cache_label = None
            return self._concat(cache_data, second_data)
        # last batch with 'pad'
        if self.last_batch_handle == 'pad' and self.cursor + self.batch_size > self.num_data:
            pad = self.batch_size - self.num_data + self.cursor
            first_data = self._getdata(data_source, start=self.cursor)
            if pad > self.num_data:
                repeats = pad // self.num_data
                second_data = self._tile(self._getdata(data_source, end=self.num_data),
                                         repeats)
                if pad % self.num_data != 0:
                    second_data = self._concat(
                        second_data, self._getdata(data_source, end=pad % self.num_data))
            else:
                second_data = self._getdata(data_source, end=pad)
            return self._concat(first_data, second_data)
        # normal case (or the incomplete last batch)
        if self.cursor + self.batch_size < self.num_data:
            end_idx = self.cursor + self.batch_size
        else:
            end_idx = self.num_data
        return self._getdata(data_source, self.cursor, end_idx)

    def getdata(self):
        """The data of the current batch."""
        return self._batchify(self.data)

    def getlabel(self):
        """The labels of the current batch."""
        return self._batchify(self.label)

    def getpad(self):
        """How many examples of the current batch are padding (for ``'roll_over'``, how
        many in the first batch of an epoch came from the previous one)."""
        if self.last_batch_handle == 'pad' and self.cursor + self.batch_size > self.num_data:
            return self.cursor + self.batch_size - self.num_data
        if self.last_batch_handle == 'roll_over' and -self.batch_size < self.cursor < 0:
            return -self.cursor
        return 0

    def _shuffle_data(self):
        """Shuffle the index (in place, so orders compound as in MXNet) and the data."""
        np.random.shuffle(self.idx)
        batch_axis = self.layout.find('N')
        self.data = _getdata_by_idx(self.data, self.idx, batch_axis)
        self.label = _getdata_by_idx(self.label, self.idx, batch_axis)


def _check_lengths(lengths):
    """The first data array gives the number of examples, as in MXNet: an array with fewer
    is an error (MXNet cuts short batches from it), one with more a warning (MXNet reads
    its first rows and ignores the rest, likely a mistake). ``lengths``: (name, examples)
    of the data then the label arrays."""
    first, n = lengths[0]
    short = ['%r has %d' % kn for kn in lengths if kn[1] < n]
    if short:
        raise ArgumentError('NDArrayIter: %r has %d examples (which every data and label '
                            'array needs), but %s' % (first, n, ', '.join(short)))
    longer = ['%r has %d' % kn for kn in lengths if kn[1] > n]
    if longer:
        warnings.warn('NDArrayIter: %r has %d examples but %s: only their first %d rows are '
                      'read, as in MXNet' % (first, n, ', '.join(longer), n), stacklevel=3)


def _dtype_of(v):
    """The dtype of an array as MXNet reports it (``numpy.float32``, the type)."""
    dt = v.dtype
    return dt.type if isinstance(dt, np.dtype) else dt
