"""The iterators MXNet 1.9.1 implements in C++ (CSVIter, LibSVMIter, MNISTIter), here in
Python over NumPy, and MXDataIter, their base class as in MXNet.

As in MXNet they take keyword arguments only (values may be Python values or MXNet's
strings, e.g. ``data_shape='(3,)'``, ``shuffle='1'``), read the first batch when they are
created (so a bad file fails at once), and batch as MXNet's ``BatchLoader`` does:
with ``round_batch=True`` a short last batch is filled from the start of the data, its
``pad`` tells how many, and the next pass goes on after those rows; with ``round_batch=
False`` the rest of a short batch keeps the rows of the previous batch (MXNet reuses its
buffer), and ``pad`` tells how many.

Differences from MXNet: the files are read synchronously when the iterator is made
(``prefetch_buffer`` and ``ctx`` are accepted and ignored), so a ``reset()`` before the
end of a pass restarts at the first row (MXNet's depends on how far its prefetch thread
has read); the batches are NDArrays on the CPU (LibSVMIter's are CSRNDArrays, dense-backed,
as MXNet's); rows that MXNet reads as garbage (a field that is not a number, an index out
of the shape, a duplicated index) are errors naming the file and line; MNISTIter also
reads gzipped idx files and checks their magic numbers.
"""
import logging
import warnings

import numpy as np

from .. import ndarray as nd
from ..context import cpu
from .io import DataBatch, DataDesc, DataIter
from . import formats
from ..base import ArgumentError

__all__ = ['MXDataIter', 'CSVIter', 'LibSVMIter', 'MNISTIter']

# parameters of MXNet's other C++ iterators that scripts pass to these (MXNet ignores
# unknown keywords): ignored silently; any other unknown keyword is warned about
_OTHER_ITER_PARAMS = frozenset([
    'input_shape', 'data_shape', 'label_shape', 'shuffle', 'seed', 'num_parts', 'part_index',
    'round_batch', 'flat', 'silent', 'verbose', 'preprocess_threads', 'label_width',
    'shuffle_chunk_size', 'shuffle_chunk_seed', 'path_imgrec', 'path_imglist', 'path_imgidx',
    'mean_img', 'mean_r', 'mean_g', 'mean_b', 'std_r', 'std_g', 'std_b', 'scale',
    'rand_crop', 'rand_mirror', 'resize', 'num_workers'])


class MXDataIter(DataIter):
    """The base of the iterators MXNet implements in C++ (``isinstance(it,
    mx.io.MXDataIter)`` holds for CSVIter, LibSVMIter and MNISTIter as in MXNet).

    In MXNet it wraps a C++ iterator handle. Here ``handle`` is the Python object that
    makes the batches: it has ``before_first()``, ``next() -> bool`` and, for the current
    batch, NumPy ``data`` and ``label`` arrays, ``pad`` and ``index``. The first batch is
    read when the iterator is made, to learn the shapes; ``next`` returns it first.

    Parameters
    ----------
    handle : object
        The batch maker described above.
    data_name : str, optional
        Name of the data (``provide_data``), 'data' by default.
    label_name : str, optional
        Name of the label (``provide_label``), 'softmax_label' by default.
    """

    def __init__(self, handle, data_name='data', label_name='softmax_label', **_):
        super(MXDataIter, self).__init__()
        self.handle = handle
        # debug option, used to test the speed with io effect eliminated
        self._debug_skip_load = False
        self._debug_at_begin = True
        # load the first batch to get shape information
        self.first_batch = None
        self.first_batch = self.next()
        data = self.first_batch.data[0]
        label = self.first_batch.label[0]
        self.provide_data = [DataDesc(data_name, data.shape, data.dtype)]
        self.provide_label = [DataDesc(label_name, label.shape, label.dtype)]
        self.batch_size = data.shape[0]

    def debug_skip_load(self):
        """From now on return the first batch again and again (to time a network
        without the cost of reading data)."""
        self._debug_skip_load = True
        logging.info('Set debug_skip_load to be true, will simply return first batch')

    def reset(self):
        self._debug_at_begin = True
        self.first_batch = None
        self.handle.before_first()

    def next(self):
        if self._debug_skip_load and not self._debug_at_begin:
            return DataBatch(data=[self.getdata()], label=[self.getlabel()],
                             pad=self.getpad(), index=self.getindex())
        if self.first_batch is not None:
            batch = self.first_batch
            self.first_batch = None
            return batch
        self._debug_at_begin = False
        if self.handle.next():
            return DataBatch(data=[self.getdata()], label=[self.getlabel()],
                             pad=self.getpad(), index=self.getindex())
        raise StopIteration

    def iter_next(self):
        if self.first_batch is not None:
            return True
        return bool(self.handle.next())

    def getdata(self):
        d = self.handle.data
        return nd.array(d, ctx=cpu(), dtype=d.dtype)

    def getlabel(self):
        d = self.handle.label
        return nd.array(d, ctx=cpu(), dtype=d.dtype)

    def getindex(self):
        index = self.handle.index
        return None if index is None or not len(index) else np.array(index, np.uint64)

    def getpad(self):
        return int(self.handle.pad)


class _BatchLoader(object):
    """MXNet's ``BatchLoader`` over examples held in memory: ``fields`` are arrays with
    one row per example (data, label); see the module docstring for ``round_batch``."""

    def __init__(self, fields, batch_size, round_batch, what):
        self.fields = fields
        self.n = len(fields[0])
        self.batch_size = batch_size
        self.round_batch = round_batch
        self.what = what
        self.buffers = [np.zeros((batch_size,) + f.shape[1:], f.dtype) for f in fields]
        self.index = np.zeros(batch_size, np.uint64)
        self.pos = 0
        self.num_overflow = 0
        self.pad = 0

    def before_first(self):
        if not self.round_batch or self.num_overflow == 0:
            self.pos = 0
        else:        # the wrapped batch already began the next pass
            self.num_overflow = 0

    def _copy(self, dst, src, count):
        for buf, f in zip(self.buffers, self.fields):
            buf[dst:dst + count] = f[src:src + count]
        self.index[dst:dst + count] = np.arange(src, src + count, dtype=np.uint64)

    def next(self):
        self.pad = 0
        if self.num_overflow != 0:
            return False
        top = min(self.batch_size, self.n - self.pos)
        if top <= 0:
            return False
        self._copy(0, self.pos, top)
        self.pos += top
        if top == self.batch_size:
            return True
        if self.round_batch:
            need = self.batch_size - top
            if need > self.n:
                raise ArgumentError('%s: batch_size %d is too large for the %d examples of the '
                                    'data with round_batch=True (a batch may take the data at '
                                    'most twice)' % (self.what, self.batch_size, self.n))
            self._copy(top, 0, need)
            self.pos = need
            self.num_overflow = need
            self.pad = need
        else:
            self.pad = self.batch_size - top
        return True

    @property
    def data(self):
        return self.buffers[0]

    @property
    def label(self):
        return self.buffers[1]


class _MNISTLoader(object):
    """MXNet's MNISTIter proper: whole batches only, no padding, index all zeros."""

    def __init__(self, images, labels, batch_size):
        self.images, self.labels, self.batch_size = images, labels, batch_size
        self.loc = 0
        self.pad = 0
        self.index = np.zeros(batch_size, np.uint64)
        self.data = self.label = None

    def before_first(self):
        self.loc = 0

    def next(self):
        if self.loc + self.batch_size > len(self.images):
            return False
        s = slice(self.loc, self.loc + self.batch_size)
        self.data, self.label = self.images[s], self.labels[s]
        self.loc += self.batch_size
        return True


# ------------------------------------------------------------------ parameters
def _check_unknown(name, kwargs):
    unknown = sorted(k for k in kwargs if k not in _OTHER_ITER_PARAMS)
    if unknown:
        warnings.warn('%s: unknown argument(s) %s are ignored (as MXNet ignores them)'
                      % (name, ', '.join(repr(k) for k in unknown)), stacklevel=3)


def _as_int(value, what, low=None):
    try:
        if isinstance(value, bool) or float(value) != int(float(value)):
            raise ValueError
        v = int(float(value))
    except (TypeError, ValueError):
        raise ArgumentError('%s must be an integer, got %r' % (what, value)) from None
    if low is not None and v < low:
        raise ArgumentError('%s must be at least %d, got %r' % (what, low, value))
    return v


def _as_bool(value, what):
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in ('1', 'true'):
            return True
        if lowered in ('0', 'false'):
            return False
    elif isinstance(value, (bool, int, np.integer)) and value in (0, 1):
        return bool(value)
    raise ArgumentError('%s must be a boolean (True/False, 1/0), got %r' % (what, value))


def _as_shape(value, what):
    if isinstance(value, str):
        text = value.strip().strip('()[]').strip()
        parts = [p for p in text.replace(' ', '').split(',') if p]
    elif isinstance(value, (list, tuple)):
        parts = list(value)
    else:
        parts = [value]
    try:
        shape = tuple(_as_int(p, what, 1) for p in parts)
    except ValueError:
        shape = ()
    if not shape:
        raise ArgumentError('%s must be a shape of positive integers, e.g. (3,), got %r'
                            % (what, value))
    return shape


def _as_dtype(value, what, allowed):
    """``value`` as a NumPy dtype among ``allowed`` (names); None or 'None' means
    float32, as MXNet's iterators read."""
    if value is None or (isinstance(value, str) and value == 'None'):
        return np.dtype(np.float32)
    try:
        dt = np.dtype(value)
    except TypeError:
        dt = None
    if dt is None or dt.name not in allowed:
        raise ArgumentError('%s: dtype %r is not supported; use one of None, %s'
                            % (what, value, ', '.join(repr(a) for a in allowed)))
    return dt


def _check_parts(name, num_parts, part_index):
    num_parts = _as_int(num_parts, '%s: num_parts' % name, 1)
    part_index = _as_int(part_index, '%s: part_index' % name, 0)
    if part_index >= num_parts:
        raise ArgumentError('%s: part_index %d must be below num_parts %d'
                            % (name, part_index, num_parts))
    return num_parts, part_index


def _label_rows(labels, label_shape):
    """Labels of one value per example come out as ``(batch,)`` (MXNet's iterators do
    so whatever shape of size 1 ``label_shape`` is), others as ``(batch,) + shape``."""
    n = labels.shape[0]
    if int(np.prod(label_shape)) == 1:
        return labels.reshape(n)
    return labels.reshape((n,) + tuple(label_shape))


def _match_rows(name, data, data_what, labels, label_what):
    """Data and label files must have as many rows (MXNet fails on fewer labels and
    ignores extra ones: warned)."""
    if len(labels) < len(data):
        raise ArgumentError('%s: %s has %d rows but %s only %d'
                            % (name, data_what, len(data), label_what, len(labels)))
    if len(labels) > len(data):
        warnings.warn('%s: %s has %d rows but %s %d: the extra labels are ignored'
                      % (name, label_what, len(labels), data_what, len(data)), stacklevel=3)
        labels = labels[:len(data)]
    return labels


# ------------------------------------------------------------------ iterators
class CSVIter(MXDataIter):
    """Batches from CSV files: each row is one example, reshaped to ``data_shape``.

    Parameters
    ----------
    data_csv : str
        The CSV file, or a directory whose files are all read (in name order).
    data_shape : tuple of int
        The shape of one example; each row has ``prod(data_shape)`` values.
    batch_size : int
        Batch size.
    label_csv : str, optional
        The labels' CSV file (or directory); 'NULL' (default): all labels are 0.
    label_shape : tuple of int, optional
        The shape of one label, (1,) by default (labels then come as ``(batch,)``).
    round_batch : bool, optional
        Fill a short last batch from the start of the data (default True); see the
        module docstring.
    prefetch_buffer, ctx : optional
        Accepted for MXNet's signature; ignored (the data is read in memory).
    dtype : {None, 'float32', 'int32', 'int64'}, optional
        The type of data and labels (None: float32).
    data_name, label_name : str, optional
        The names in ``provide_data`` / ``provide_label``.

    Examples
    --------
    >>> import os, tempfile, symgraph as mx
    >>> path = os.path.join(tempfile.mkdtemp(), 'data.csv')
    >>> with open(path, 'w') as f:
    ...     _ = f.write('1,2,3\\n2,3,4\\n3,4,5\\n4,5,6\\n')
    >>> it = mx.io.CSVIter(data_csv=path, data_shape=(3,), batch_size=3)
    >>> [(b.data[0].asnumpy()[:, 0].tolist(), b.pad) for b in it]
    [([1.0, 2.0, 3.0], 0), ([4.0, 1.0, 2.0], 2)]
    >>> it.reset()          # the wrapped rows began the next pass
    >>> [(b.data[0].asnumpy()[:, 0].tolist(), b.pad) for b in it]
    [([3.0, 4.0, 1.0], 1)]
    """

    def __init__(self, *, data_csv, data_shape, batch_size, label_csv='NULL',
                 label_shape=(1,), round_batch=True, prefetch_buffer=4, ctx='gpu',
                 dtype=None, data_name='data', label_name='softmax_label', **kwargs):
        _check_unknown('CSVIter', kwargs)
        data_shape = _as_shape(data_shape, 'CSVIter: data_shape')
        label_shape = _as_shape(label_shape, 'CSVIter: label_shape')
        batch_size = _as_int(batch_size, 'CSVIter: batch_size', 1)
        round_batch = _as_bool(round_batch, 'CSVIter: round_batch')
        dt = _as_dtype(dtype, 'CSVIter', ('float32', 'int32', 'int64'))
        data = formats.read_csv(data_csv, data_shape, dt, 'CSVIter: data_csv')
        if not len(data):
            raise ArgumentError('CSVIter: data_csv %r has no rows' % (data_csv,))
        if label_csv is None or label_csv == 'NULL':
            labels = np.zeros((len(data),), dt)
        else:
            labels = formats.read_csv(label_csv, label_shape, dt, 'CSVIter: label_csv')
            labels = _match_rows('CSVIter', data, 'data_csv %r' % (data_csv,),
                                 labels, 'label_csv %r' % (label_csv,))
            labels = _label_rows(labels, label_shape)
        loader = _BatchLoader([data, labels], batch_size, round_batch, 'CSVIter')
        super(CSVIter, self).__init__(loader, data_name=data_name, label_name=label_name)


class LibSVMIter(MXDataIter):
    """Batches from LibSVM files (zero-based indices), as dense arrays.

    Each line is ``label index:value index:value ...``. Without ``label_libsvm`` the
    labels are those first numbers (``label_shape`` must then be (1,)); with it, the
    label of each example is the ``index:value`` row of that file (its first numbers are
    ignored), of shape ``label_shape``.

    Parameters
    ----------
    data_libsvm : str
        The LibSVM file, or a directory whose files are all read (in name order).
    data_shape : tuple of int
        ``(num_features,)``: one dimension only.
    batch_size : int
        Batch size.
    label_libsvm : str, optional
        A LibSVM file of labels; 'NULL' (default): the labels of ``data_libsvm``.
    label_shape : tuple of int, optional
        The shape of one label, (1,) by default.
    num_parts, part_index : int, optional
        Read only part ``part_index`` of ``num_parts``, split by bytes as MXNet does (the
        parts need not hold the same number of lines).
    round_batch : bool, optional
        Must be True, as in MXNet: a short last batch is filled from the start.
    prefetch_buffer, ctx : optional
        Accepted for MXNet's signature; ignored.
    dtype : {None, 'float32'}, optional
        The data type (MXNet 1.9.1 reads LibSVM as float32 only).
    data_name, label_name : str, optional
        The names in ``provide_data`` / ``provide_label``.

    Examples
    --------
    >>> import os, tempfile, symgraph as mx
    >>> path = os.path.join(tempfile.mkdtemp(), 'data.t')
    >>> with open(path, 'w') as f:
    ...     _ = f.write('1.0 0:0.5 2:1.2\\n-2.0\\n-3.0 0:0.6 1:2.4 2:1.2\\n4 2:-1.2\\n')
    >>> it = mx.io.LibSVMIter(data_libsvm=path, data_shape=(3,), batch_size=3)
    >>> b = it.next()
    >>> b.data[0].asnumpy().tolist()[0], b.label[0].asnumpy().tolist()
    ([0.5, 0.0, 1.2000000476837158], [1.0, -2.0, -3.0])
    """

    def __init__(self, *, data_libsvm, data_shape, batch_size, label_libsvm='NULL',
                 label_shape=(1,), num_parts=1, part_index=0, round_batch=True,
                 prefetch_buffer=4, ctx='gpu', dtype=None, data_name='data',
                 label_name='softmax_label', **kwargs):
        _check_unknown('LibSVMIter', kwargs)
        data_shape = _as_shape(data_shape, 'LibSVMIter: data_shape')
        label_shape = _as_shape(label_shape, 'LibSVMIter: label_shape')
        batch_size = _as_int(batch_size, 'LibSVMIter: batch_size', 1)
        num_parts, part_index = _check_parts('LibSVMIter', num_parts, part_index)
        if not _as_bool(round_batch, 'LibSVMIter: round_batch'):
            raise ArgumentError("LibSVMIter: round_batch=False is not supported (MXNet: "
                                "sparse batch loader doesn't support round_batch == false)")
        _as_dtype(dtype, 'LibSVMIter', ('float32',))
        if len(data_shape) != 1:
            raise ArgumentError('LibSVMIter: data_shape must have one dimension, got %s'
                                % (data_shape,))
        no_label_file = label_libsvm is None or label_libsvm == 'NULL'
        if no_label_file and int(np.prod(label_shape)) != 1:
            raise ArgumentError('LibSVMIter: label_shape is expected to be (1,) when '
                                'label_libsvm is not given, got %s' % (label_shape,))
        if not no_label_file and len(label_shape) != 1:
            raise ArgumentError('LibSVMIter: label_shape must have one dimension, got %s'
                                % (label_shape,))
        labels, data = formats.read_libsvm(data_libsvm, data_shape[0],
                                           'LibSVMIter: data_libsvm', num_parts, part_index)
        if not len(data):
            raise ArgumentError('LibSVMIter: data_libsvm %r has no rows (in part %d of %d)'
                                % (data_libsvm, part_index, num_parts))
        if not no_label_file:
            _, labels = formats.read_libsvm(label_libsvm, label_shape[0],
                                            'LibSVMIter: label_libsvm', num_parts,
                                            part_index)
            labels = _match_rows('LibSVMIter', data, 'data_libsvm %r' % (data_libsvm,),
                                 labels, 'label_libsvm %r' % (label_libsvm,))
        labels = _label_rows(labels, label_shape)
        loader = _BatchLoader([data, labels], batch_size, True, 'LibSVMIter')
        self._csr_label = not no_label_file
        super(LibSVMIter, self).__init__(loader, data_name=data_name, label_name=label_name)

    def getdata(self):
        """The batch's data as a CSRNDArray (as MXNet's; dense-backed: ndarray/sparse.py)."""
        return super(LibSVMIter, self).getdata().tostype('csr')

    def getlabel(self):
        """The batch's labels: a CSRNDArray when read from ``label_libsvm`` (as MXNet's)."""
        label = super(LibSVMIter, self).getlabel()
        return label.tostype('csr') if self._csr_label and label.ndim == 2 else label


class MNISTIter(MXDataIter):
    """Batches of MNIST from its idx files (``train-images-idx3-ubyte`` and
    ``train-labels-idx1-ubyte``, optionally gzipped), images scaled to [0, 1) by 1/256
    as MXNet does.

    Only whole batches are returned (the rest of the data is left out, ``pad`` is 0).
    With ``shuffle`` the examples are put in a random order once, when the iterator is
    made, exactly as MXNet's ``std::shuffle`` with ``seed`` orders them.

    Parameters
    ----------
    image : str, optional
        The images' idx3-ubyte file.
    label : str, optional
        The labels' idx1-ubyte file.
    batch_size : int, optional
        Batch size (128).
    shuffle : bool, optional
        Shuffle the examples (True).
    flat : bool, optional
        Give images as ``(batch, rows*cols)`` instead of ``(batch, 1, rows, cols)``.
    seed : int, optional
        The seed of the shuffle (0).
    silent : bool, optional
        Do not log the ``MNISTIter: load ...`` line (False).
    num_parts, part_index : int, optional
        Read only part ``part_index`` of ``num_parts`` equal parts.
    prefetch_buffer, ctx : optional
        Accepted for MXNet's signature; ignored.
    dtype : {None, 'float32'}, optional
        The data type (MXNet 1.9.1 gives float32 only).
    data_name, label_name : str, optional
        The names in ``provide_data`` / ``provide_label``.
    """

    def __init__(self, *, image='./train-images-idx3-ubyte',
                 label='./train-labels-idx1-ubyte', batch_size=128, shuffle=True,
                 flat=False, seed=0, silent=False, num_parts=1, part_index=0,
                 prefetch_buffer=4, ctx='gpu', dtype=None, data_name='data',
                 label_name='softmax_label', **kwargs):
        _check_unknown('MNISTIter', kwargs)
        batch_size = _as_int(batch_size, 'MNISTIter: batch_size', 1)
        shuffle = _as_bool(shuffle, 'MNISTIter: shuffle')
        flat = _as_bool(flat, 'MNISTIter: flat')
        silent = _as_bool(silent, 'MNISTIter: silent')
        seed = _as_int(seed, 'MNISTIter: seed')
        num_parts, part_index = _check_parts('MNISTIter', num_parts, part_index)
        _as_dtype(dtype, 'MNISTIter', ('float32',))
        images = formats.read_idx_images(image, num_parts, part_index)
        labels = formats.read_idx_labels(label, num_parts, part_index)
        if len(images) != len(labels):
            raise ArgumentError('MNISTIter: image file %r has %d images but label file %r '
                                '%d labels' % (image, len(images), label, len(labels)))
        if batch_size > len(images):
            raise ArgumentError('MNISTIter: batch_size %d is larger than the %d images of %r '
                                '(MNISTIter returns whole batches only)'
                                % (batch_size, len(images), image))
        count, rows, cols = images.shape
        if shuffle:
            order = formats.std_shuffle_permutation(count, seed)
            images, labels = images[order], labels[order]
        data = images.astype(np.float32) * np.float32(1.0 / 256.0)
        if flat:
            data = data.reshape(count, rows * cols)
            shape = '(%d,%d)' % (batch_size, rows * cols)
        else:
            data = data.reshape(count, 1, rows, cols)
            shape = '(%d,1,%d,%d)' % (batch_size, rows, cols)
        if not silent:
            logging.getLogger(__name__).info('MNISTIter: load %d images, shuffle=%d, '
                                             'shape=%s', count, int(shuffle), shape)
        loader = _MNISTLoader(data, labels.astype(np.float32), batch_size)
        super(MNISTIter, self).__init__(loader, data_name=data_name, label_name=label_name)
