"""MXNet's binary NDArray list format: the ``.params`` files of ``mx.nd.save`` / ``mx.nd.load``.

This module works on NumPy arrays; ``mx.nd.save``/``mx.nd.load`` wrap it with NDArrays.

Layout, as MXNet 1.9.1 writes it (``src/ndarray/ndarray.cc``, ``NDArray::Save``), all
little-endian::

    uint64 0x112 (kMXAPINDArrayListMagic), uint64 reserved (0)
    uint64 number of arrays, then each array:
        uint32 magic        0xF993FAC9 (V2); 0xF993FACA (V3) when saved under np-shape semantics
        int32  storage type 0 dense, 1 row_sparse, 2 csr
        [sparse only: storage shape]
        shape               int32 ndim, then ndim x int64
        context             int32 dev_type (1 cpu, 2 gpu, ...), int32 dev_id
        int32  type flag    0 float32, 1 float64, 2 float16, 3 uint8, 4 int32, 5 int8,
                            6 int64, 7 bool, 12 bfloat16
        [sparse only: per aux array int32 type flag + shape]
        raw data, C order   [sparse only: then the aux arrays' data]
    uint64 number of names (0, or the number of arrays), then each: uint64 length, UTF-8 bytes

Older records are read as MXNet's loader reads them: V1 (magic 0xF993FAC8, shape as above,
no storage type) and the legacy record without magic (uint32 ndim, ndim x uint32 dims).

Behaviours worth knowing (checked against MXNet 1.9.1):

* A file with names loads as a dict (order kept; a repeated name keeps its first position and
  its last value, as MXNet's ``dict(...)`` does); without names, or from an empty dict, as a list.
* A 0-d array is written as MXNet's legacy mode writes it (V2, ndim 0, followed by its data).
  MXNet 1.9.1 reads such a record back only under global np-shape semantics; its legacy-mode
  loader takes ndim 0 for "no array" and then fails; we read the data.
* V3 records load whatever the caller's mode; MXNet loads them only under np-shape semantics.
* The context a record names (e.g. gpu(1)) is ignored: arrays load onto the host.
* Bytes after the names are ignored, as MXNet ignores them.
* Sparse records (row_sparse, csr) load as :class:`StoredSparse`: the dense values, with the
  storage type and the structure as stored; ``save`` writes one back as MXNet does.
* bfloat16 data (type flag 12) loads as ``ml_dtypes.bfloat16`` arrays (or, if asked,
  widened to float32 or as the raw uint16 bit patterns, or refused); bfloat16 arrays are
  written with that flag. Uninitialised arrays are reported with the array's name rather
  than loaded. A truncated or corrupt record is reported by its index
  (``array #3``): the names are stored after all the arrays.
"""
from __future__ import annotations

import io
import mmap
import os
import stat
import struct
import sys

import numpy as np

from ..base import MissingFileError, MXNetError, atomic_write, bfloat16 as _bf16_dtype, \
    is_bfloat16

__all__ = ['ParamsFormatError', 'StoredSparse', 'save_arrays', 'load_arrays', 'dumps_arrays',
           'loads_arrays']

LIST_MAGIC = 0x112
V1_MAGIC = 0xF993FAC8
V2_MAGIC = 0xF993FAC9
V3_MAGIC = 0xF993FACA

# mshadow type flags -> NumPy dtypes (little-endian, as in the file)
_FLAG_TO_DTYPE = {
    0: np.dtype('<f4'), 1: np.dtype('<f8'), 2: np.dtype('<f2'), 3: np.dtype('u1'),
    4: np.dtype('<i4'), 5: np.dtype('i1'), 6: np.dtype('<i8'), 7: np.dtype('?'),
    # known to mshadow though MXNet's Python front end cannot make them
    8: np.dtype('<i2'), 9: np.dtype('<u2'), 10: np.dtype('<u4'), 11: np.dtype('<u8'),
}
_BFLOAT16 = 12
_FLAG_NAMES = {0: 'float32', 1: 'float64', 2: 'float16', 3: 'uint8', 4: 'int32', 5: 'int8',
               6: 'int64', 7: 'bool', 8: 'int16', 9: 'uint16', 10: 'uint32', 11: 'uint64',
               12: 'bfloat16'}
# what MXNet 1.9.1's Python front end can hold, by (kind, itemsize)
_DTYPE_TO_FLAG = {('f', 4): 0, ('f', 8): 1, ('f', 2): 2, ('u', 1): 3, ('i', 4): 4,
                  ('i', 1): 5, ('i', 8): 6, ('b', 1): 7}
_STORAGE = {0: 'default', 1: 'row_sparse', 2: 'csr'}
_NUM_AUX = {0: 0, 1: 1, 2: 2}
# a legacy record starts with its ndim; anything larger is not a plausible legacy header
_LEGACY_MAX_NDIM = 64
# NumPy 2 arrays have at most 64 dimensions
_MAX_NDIM = 64
_CPU = 1


class ParamsFormatError(MXNetError, ValueError):
    """A ``.params`` byte stream that is not a readable MXNet NDArray list."""


# ---------------------------------------------------------------------------------------------
# reading

class _Reader:
    """Cursor over the file bytes; every read checks what remains before touching memory."""

    __slots__ = ('buf', 'pos', 'size', 'source', 'where', 'context', 'np_shape')

    def __init__(self, buf, source, np_shape=None):
        self.buf = buf
        self.pos = 0
        self.size = len(buf)
        self.source = source
        self.where = ''        # 'array #3: ' while reading an array record
        #: (dev_type, dev_id) the last dense record was saved from
        self.context = None
        #: the reader's np-shape semantics (MXNet refuses a V3 record outside them and any
        #: other record inside them), or None: no check
        self.np_shape = np_shape

    def fail(self, msg):
        raise ParamsFormatError('%s: %s%s' % (self.source, self.where, msg))

    def need(self, nbytes, what):
        remain = self.size - self.pos
        if nbytes > remain:
            self.fail('truncated: %s needs %d bytes, %d remain (at offset %d)'
                      % (what, nbytes, remain, self.pos))

    def unpack(self, fmt, what):
        n = struct.calcsize(fmt)
        self.need(n, what)
        vals = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += n
        return vals if len(vals) > 1 else vals[0]

    def dims(self, ndim, fmt, what):
        # checked against the remaining bytes first: a corrupt ndim never allocates
        size = struct.calcsize(fmt)
        self.need(ndim * size, '%s (%d dims)' % (what, ndim))
        dims = struct.unpack_from('<%d%s' % (ndim, fmt), self.buf, self.pos)
        self.pos += ndim * size
        return tuple(dims)

    def shape(self, what):
        """A TShape: int32 ndim (-1 = unknown), then int64 dims."""
        ndim = self.unpack('<i', what + ' ndim')
        if ndim == -1:
            return None
        if ndim < 0:
            self.fail('%s: invalid ndim %d' % (what, ndim))
        dims = self.dims(ndim, 'q', what)
        if any(d < 0 for d in dims):
            self.fail('%s: negative dimension in %s' % (what, dims))
        return dims

    def take(self, nbytes, what):
        self.need(nbytes, what)
        start = self.pos
        self.pos += nbytes
        return start


class _Record:
    """One parsed array record: the array, or why it cannot be one."""

    __slots__ = ('array', 'problem')

    def __init__(self, array=None, problem=None):
        self.array = array
        self.problem = problem


def _itemsize(r, flag, what):
    if flag == _BFLOAT16:
        return 2
    dt = _FLAG_TO_DTYPE.get(flag)
    if dt is None:
        r.fail('%s: unknown type flag %d (known: %s)'
               % (what, flag, ', '.join('%d %s' % kv for kv in sorted(_FLAG_NAMES.items()))))
    return dt.itemsize


def _read_data(r, flag, shape, bfloat16):
    """Data of a dense array: one copy out of the file bytes."""
    itemsize = _itemsize(r, flag, 'type flag')
    name = _FLAG_NAMES[flag]
    if len(shape) > _MAX_NDIM:
        r.fail('shape has %d dimensions; NumPy arrays have at most %d' % (len(shape), _MAX_NDIM))
    count = 1
    # bytes spanned by the non-zero dims: NumPy needs it to fit intp, for the widest array
    # made here (bfloat16 is widened through uint32 to float32: 4 bytes an element)
    extent = 4 if flag == _BFLOAT16 else itemsize
    for d in shape:
        count *= d
        extent *= max(d, 1)
    start = r.take(count * itemsize, 'data of %s array of shape %s' % (name, shape))
    if extent > sys.maxsize:
        # only a zero-size array gets here (its data fit): NumPy still cannot shape it
        r.fail('%s array of shape %s cannot be made: its dimensions span %d bytes'
               % (name, shape, extent))
    if flag == _BFLOAT16:
        if bfloat16 == 'error':
            return _Record(problem="has dtype bfloat16, refused (bfloat16='error'); load "
                                   "with bfloat16='bfloat16' (the default), 'float32' "
                                   "(exact widening) or 'raw' (the uint16 bit patterns)")
        bits = np.frombuffer(r.buf, np.dtype('<u2'), count, start)
        if bfloat16 == 'raw':
            return _Record(bits.astype(np.uint16).reshape(shape))
        if bfloat16 == 'bfloat16':
            return _Record(bits.astype(np.uint16).view(_bf16_dtype()).reshape(shape))
        # bfloat16 is the upper half of a float32
        wide = bits.astype(np.uint32) << 16
        return _Record(wide.view(np.float32).reshape(shape))
    dt = _FLAG_TO_DTYPE[flag]
    if count == 0:
        return _Record(np.empty(shape, dt.newbyteorder('=')))
    if dt.kind == 'b':
        # any non-zero byte is True (as MXNet's C++ bool); a bool array holding byte 2
        # would compare unequal to True
        return _Record((np.frombuffer(r.buf, np.uint8, count, start) != 0).reshape(shape))
    arr = np.frombuffer(r.buf, dt, count, start).astype(dt.newbyteorder('='))
    return _Record(arr.reshape(shape))


def _read_dense_tail(r):
    # where it lived (mx.nd.load loads onto the host; unpickling onto that device if any)
    r.context = r.unpack('<ii', 'context (dev_type, dev_id)')
    return r.unpack('<i', 'type flag')


def _read_v2(r, bfloat16):
    stype = r.unpack('<i', 'storage type')
    if stype not in _STORAGE:
        r.fail('unknown storage type %d (known: 0 default, 1 row_sparse, 2 csr)' % stype)
    nad = _NUM_AUX[stype]
    sshape = r.shape('storage shape') if nad else None
    shape = r.shape('shape')
    if shape is None:
        return _Record(problem='is an uninitialised NDArray (unknown shape, ndim -1)')
    # MXNet 1.9.1 writes ndim 0 (a 0-d array) followed by its data, in V2 and V3 alike
    flag = _read_dense_tail(r)
    if nad == 0:
        return _read_data(r, flag, shape, bfloat16)
    # sparse: the stored values, then the aux arrays (row_sparse: row indices; csr: indptr,
    # column indices), made into the dense values with the structure beside them
    aux = []
    for i in range(nad):
        aux_flag = r.unpack('<i', 'aux type %d' % i)
        aux_shape = r.shape('aux shape %d' % i)
        aux.append((aux_flag, aux_shape or ()))
    name = _STORAGE[stype]
    values = _read_data(r, flag, sshape or (), bfloat16)
    auxs = []
    for i, (fl, shp) in enumerate(aux):
        if _FLAG_TO_DTYPE.get(fl, np.dtype('f4')).kind not in 'iu':
            r.fail('%s aux array %d has type flag %d, not an integer type' % (name, i, fl))
        if len(shp) != 1:
            r.fail('%s aux array %d has shape %s, not 1-D' % (name, i, shp))
        auxs.append(_read_data(r, fl, shp, bfloat16).array.astype(np.int64))
    if values.problem is not None:
        return values
    try:
        return _Record(StoredSparse.from_parts(name, shape, values.array, auxs))
    except ValueError as e:
        r.fail('%s array of shape %s: %s' % (name, shape, e))


def _read_legacy(r, magic, bfloat16):
    if magic == V1_MAGIC:
        ndim = r.unpack('<i', 'V1 shape ndim')
        if ndim < 0:
            r.fail('V1 shape: invalid ndim %d' % ndim)
        shape = r.dims(ndim, 'q', 'V1 shape')
        if any(d < 0 for d in shape):
            r.fail('V1 shape: negative dimension in %s' % (shape,))
    else:
        if magic > _LEGACY_MAX_NDIM:
            r.fail('unknown array record magic 0x%08X (expected 0x%08X; 0x%08X, 0x%08X or a '
                   'legacy ndim <= %d in older files)'
                   % (magic, V2_MAGIC, V3_MAGIC, V1_MAGIC, _LEGACY_MAX_NDIM))
        ndim = magic
        shape = r.dims(ndim, 'I', 'legacy shape')
    if ndim == 0:
        # writers of these formats mark an uninitialised array with ndim 0 and stop there
        return _Record(problem='is an uninitialised NDArray (ndim 0 in a pre-V2 record)')
    flag = _read_dense_tail(r)
    return _read_data(r, flag, shape, bfloat16)


def _read_record(r, bfloat16):
    magic = r.unpack('<I', 'record magic')
    if r.np_shape is not None and (magic == V3_MAGIC) != r.np_shape:
        # MXNet 1.9.1's NDArray::Load: the record's semantics must be the reader's
        r.fail('the array was saved with np-shape semantics %s and is loaded with them %s; '
               'load it in the same semantics (mx.np_shape(%s))'
               % ('on' if magic == V3_MAGIC else 'off', 'on' if r.np_shape else 'off',
                  magic == V3_MAGIC))
    if magic in (V2_MAGIC, V3_MAGIC):
        return _read_v2(r, bfloat16)
    return _read_legacy(r, magic, bfloat16)


def _guess_kind(head):
    if head.startswith(b'PK\x03\x04'):
        return ' (it looks like a zip/.npz archive)'
    if head.startswith(b'\x93NUMPY'):
        return ' (it looks like a NumPy .npy file)'
    if head.lstrip()[:1] in (b'{', b'['):
        return ' (it looks like JSON text, e.g. a -symbol.json file)'
    return ''


def _parse(buf, source, bfloat16, np_shape=None):
    if bfloat16 not in ('bfloat16', 'error', 'float32', 'raw'):
        raise ValueError("bfloat16 must be 'bfloat16', 'error', 'float32' or 'raw', not %r"
                         % (bfloat16,))
    r = _Reader(buf, source, np_shape)
    head = bytes(buf[:16])
    if len(head) < 8 or struct.unpack_from('<Q', head)[0] != LIST_MAGIC:
        found = ('0x%X' % struct.unpack_from('<Q', head)[0] if len(head) >= 8
                 else 'only %d bytes' % len(head))
        r.fail('not an MXNet NDArray file: header should be 0x%X (kMXAPINDArrayListMagic), '
               'found %s%s' % (LIST_MAGIC, found, _guess_kind(head)))
    r.pos = 8
    r.unpack('<Q', 'reserved header field')
    count = r.unpack('<Q', 'array count')
    # every record holds at least its 4-byte magic: a larger count is corrupt, not big
    if count * 4 > r.size - r.pos:
        r.fail('array count %d cannot fit in the %d bytes that remain' % (count, r.size - r.pos))
    records = []
    for i in range(count):
        r.where = 'array #%d: ' % i
        records.append(_read_record(r, bfloat16))
    r.where = ''
    nnames = r.unpack('<Q', 'name count')
    if nnames not in (0, count):
        r.fail('%d names for %d arrays (MXNet needs none or one per array)' % (nnames, count))
    names = []
    for i in range(nnames):
        r.where = 'name #%d: ' % i
        length = r.unpack('<Q', 'name length')
        start = r.take(length, 'name text')
        try:
            names.append(bytes(buf[start:start + length]).decode('utf-8'))
        except UnicodeDecodeError as err:
            r.fail('name is not UTF-8 (%s)' % err)
    r.where = ''
    for i, rec in enumerate(records):
        if rec.problem is not None:
            label = 'array %r (#%d)' % (names[i], i) if names else 'array #%d' % i
            r.fail('%s %s' % (label, rec.problem))
    arrays = [rec.array for rec in records]
    if not names:
        return arrays
    out = {}
    for name, arr in zip(names, arrays):
        out[name] = arr
    return out


def loads_arrays(data, bfloat16='bfloat16', source='<bytes>', np_shape=None):
    """Parse the bytes of an MXNet NDArray file (``mx.nd.load_frombuffer``).

    Parameters
    ----------
    data : bytes-like
        The whole file content.
    bfloat16 : {'bfloat16', 'error', 'float32', 'raw'}
        What to do with bfloat16 arrays: load them as ``ml_dtypes.bfloat16`` arrays, raise,
        widen exactly to float32, or return the uint16 bit patterns.
    source : str
        Name used in error messages.
    np_shape : bool or None
        The reader's np-shape semantics: as MXNet, a record saved under them (magic
        0xF993FACA) loads only with True, any other only with False; None checks nothing.

    Returns
    -------
    list of numpy.ndarray or dict of str to numpy.ndarray
        A dict when the file holds names, else a list (as ``mx.nd.load``).

    Raises
    ------
    ParamsFormatError
        Not an NDArray file, truncated or corrupt, or holding arrays symgraph cannot represent
        (uninitialised, or bfloat16 with ``bfloat16='error'``); the message names the source
        and the array.

    Examples
    --------
    >>> import numpy as np
    >>> blob = dumps_arrays({'w': np.ones((2, 3), np.float32)})
    >>> loads_arrays(blob)['w'].shape
    (2, 3)
    """
    try:
        if isinstance(data, str):     # text would be a file read in text mode
            raise TypeError
        view = memoryview(data)
    except TypeError:
        raise TypeError('the bytes of an NDArray file are needed (bytes, bytearray, mmap or '
                        'another buffer), not %s' % type(data).__name__) from None
    # release the views even on error: an mmap cannot be closed while a view of it lives
    with view, view.cast('B') as buf:
        return _parse(buf, source, bfloat16, np_shape)


def _bytes_view(data):
    try:
        if isinstance(data, str):     # text would be a file read in text mode
            raise TypeError
        return memoryview(data)
    except TypeError:
        raise TypeError('the bytes of an NDArray record are needed (bytes, bytearray or '
                        'another buffer), not %s' % type(data).__name__) from None


def dumps_record(array, np_shape=False):
    """The bytes of one dense array record without the file's list header and names
    (MXNet's ``MXNDArraySaveRawBytes``: what ``NDArray.__getstate__`` pickles).

    >>> import numpy as np
    >>> len(dumps_record(np.zeros(3, np.float32)))     # 32 record header + 12 data
    44
    """
    (head, parts), = _prepare([array], V3_MAGIC if np_shape else V2_MAGIC)[0]
    return head + b''.join(np.ascontiguousarray(a).reshape(-1).view(np.uint8).tobytes()
                           for a in parts)


def loads_record(data, source='<pickled NDArray>', np_shape=None):
    """One array record (:func:`dumps_record`, or MXNet's raw bytes of an NDArray):
    ``(numpy array, (dev_type, dev_id) it was saved from)``.

    Raises
    ------
    ParamsFormatError
        Truncated or corrupt bytes, bytes left over, or an array symgraph cannot hold.
    """
    with _bytes_view(data) as view, view.cast('B') as buf:
        r = _Reader(buf, source, np_shape)
        rec = _read_record(r, 'bfloat16')
        if rec.problem is not None:
            r.fail('the array %s' % rec.problem)
        if r.pos != r.size:
            r.fail('%d bytes left over after the array record' % (r.size - r.pos))
        return rec.array, r.context


def load_arrays(fname, bfloat16='bfloat16', np_shape=None):
    """Load the arrays of an MXNet ``.params`` / ``mx.nd.save`` file.

    Parameters
    ----------
    fname : str, os.PathLike or binary file object
        Where to read from; a file object is read from its current position to its end.
    bfloat16 : {'bfloat16', 'error', 'float32', 'raw'}
        See :func:`loads_arrays`.
    np_shape : bool or None
        See :func:`loads_arrays`.

    Returns
    -------
    list of numpy.ndarray or dict of str to numpy.ndarray
        A dict (in file order) when the file holds names, else a list. A checkpoint written by
        ``mx.model.save_checkpoint`` has names ``'arg:<name>'`` and ``'aux:<name>'``.

    Raises
    ------
    ParamsFormatError
        See :func:`loads_arrays`.
    """
    if hasattr(fname, 'read'):
        return loads_arrays(fname.read(), bfloat16, getattr(fname, 'name', '<file object>'),
                            np_shape)
    source = os.fspath(fname)
    try:
        f = open(source, 'rb')
    except FileNotFoundError as e:
        raise MissingFileError(e.errno, 'mx.nd.load: no such file', source) from None
    with f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_size == 0:
            # a pipe or device cannot be mapped (and reports size 0)
            return loads_arrays(f.read(), bfloat16, source, np_shape)
        # map the file rather than read it: each array is then copied once, straight out of
        # the page cache, and a large checkpoint does not sit in memory twice
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            return loads_arrays(mm, bfloat16, source, np_shape)


# ---------------------------------------------------------------------------------------------
# writing

def _items(data):
    """(names or None, arrays) from what ``mx.nd.save`` accepts."""
    if isinstance(data, np.ndarray):
        data = [data]
    if isinstance(data, dict):
        names = list(data.keys())
        for k in names:
            if not isinstance(k, str):
                raise TypeError('array names must be str, got %r of type %s'
                                % (k, type(k).__name__))
        return names, list(data.values())
    if isinstance(data, (list, tuple)):
        return None, list(data)
    raise TypeError('data must be an array, a list of arrays or a dict of str to array, '
                    'not %s' % type(data).__name__)


#: the largest dense array a sparse record may load into (symgraph stores sparse arrays
#: dense): a guard against a corrupt shape asking for more memory than the machine has
#: (a module setting: assign it to load larger ones)
SPARSE_MAX_DENSE_BYTES = 2 ** 34


class StoredSparse(np.ndarray):
    """The dense values of a sparse record (a NumPy array) with its storage type and
    structure: ``stype`` 'row_sparse' (``structure``: the row indices) or 'csr'
    (``structure``: (column indices, indptr)), all int64. Arrays derived from one are
    plain dense values (``stype`` 'default')."""

    stype = 'default'
    structure = None

    @classmethod
    def make(cls, stype, dense, structure):
        """A StoredSparse of the dense values ``dense`` with that structure."""
        a = np.asarray(dense).view(cls)
        a.stype = stype
        a.structure = structure
        return a

    @classmethod
    def from_parts(cls, stype, shape, values, aux):
        """From a record's stored values and aux arrays (ValueError where they do not
        fit the shape, or where the dense array of the shape cannot be made)."""
        if stype == 'row_sparse':
            rows = aux[0]
            if values.shape != (len(rows),) + tuple(shape[1:]) or (
                    len(rows) and (rows.min() < 0 or rows.max() >= shape[0])):
                raise ValueError('stored rows %s do not fit' % (values.shape,))
            dense = cls._dense(shape, values.dtype)
            dense[rows] = values
            return cls.make(stype, dense, rows)
        indptr, indices = aux
        if len(shape) != 2 or values.ndim != 1 or indptr.shape != (shape[0] + 1,) or len(indices) != len(values) \
                or (len(indices) and (indices.min() < 0 or indices.max() >= shape[1])) \
                or (indptr[0] != 0 or indptr[-1] != len(indices) or (np.diff(indptr) < 0).any()):
            raise ValueError('indptr %s, column indices %s and values %s do not fit'
                             % (indptr.shape, indices.shape, values.shape))
        dense = cls._dense(shape, values.dtype)
        dense[np.repeat(np.arange(shape[0]), np.diff(indptr)), indices] = values
        return cls.make(stype, dense, (indices, indptr))

    @staticmethod
    def _dense(shape, dtype):
        """The zero array the values go into: symgraph stores sparse arrays dense, so a
        sparse record needs its full shape's memory (at most SPARSE_MAX_DENSE_BYTES)."""
        nbytes = int(np.prod(shape, dtype=object)) * np.dtype(dtype).itemsize
        if nbytes > SPARSE_MAX_DENSE_BYTES:
            raise ValueError('its dense values would take %d bytes (symgraph stores sparse '
                             'arrays dense; at most %d: symgraph.ndarray.serialization.'
                             'SPARSE_MAX_DENSE_BYTES)' % (nbytes, SPARSE_MAX_DENSE_BYTES))
        try:
            return np.zeros(shape, dtype)
        except MemoryError:
            raise ValueError('its dense values (%d bytes) do not fit in memory '
                             '(symgraph stores sparse arrays dense)' % nbytes) from None

    def parts(self):
        """(storage code, stored values, aux arrays) as MXNet writes them."""
        dense = np.asarray(self)
        if self.stype == 'row_sparse':
            rows = np.asarray(self.structure, np.int64)
            return 1, dense[rows], [rows]
        indices, indptr = (np.asarray(x, np.int64) for x in self.structure)
        rows = np.repeat(np.arange(dense.shape[0]), np.diff(indptr))
        return 2, dense[rows, indices], [indptr, indices]


def _shape_bytes(shape):
    return struct.pack('<i%dq' % len(shape), len(shape), *shape)


def _prepare(data, magic):
    """Validate everything and build (header bytes, contiguous little-endian array) per record.

    Done before anything is written, so a bad dtype never leaves half a file behind.
    """
    names, arrays = _items(data)
    records = []
    for i, arr in enumerate(arrays):
        a = np.asarray(arr)
        flag = _BFLOAT16 if a.dtype.kind == 'V' and is_bfloat16(a.dtype) \
            else _DTYPE_TO_FLAG.get((a.dtype.kind, a.dtype.itemsize))
        if flag is None:
            label = 'array %r' % names[i] if names else 'array #%d' % i
            raise TypeError('%s has dtype %s, which MXNet NDArray files cannot hold '
                            '(supported: float32, float64, float16, bfloat16, uint8, int8, '
                            'int32, int64, bool)' % (label, a.dtype))
        if getattr(arr, 'stype', 'default') != 'default':
            code, values, aux = arr.parts()
            values = np.asarray(values, dtype=_FLAG_TO_DTYPE[flag], order='C')
            aux = [np.asarray(x, dtype='<i8', order='C') for x in aux]
            head = (struct.pack('<Ii', magic, code) + _shape_bytes(values.shape)
                    + _shape_bytes(a.shape) + struct.pack('<iii', _CPU, 0, flag)
                    + b''.join(struct.pack('<i', 6) + _shape_bytes(x.shape) for x in aux))
            records.append((head, [values] + aux))
            continue
        # (not ascontiguousarray: it turns a 0-d array into shape (1,))
        if flag == _BFLOAT16:       # its bits, little-endian
            a = np.asarray(a, order='C').view(np.uint16).astype('<u2', copy=False)
        else:
            a = np.asarray(a, dtype=_FLAG_TO_DTYPE[flag], order='C')
        head = struct.pack('<Iii%dqiii' % a.ndim, magic, 0, a.ndim, *a.shape, _CPU, 0, flag)
        records.append((head, [a]))
    encoded = [n.encode('utf-8') for n in names] if names else []
    return records, encoded


def _write(out, records, names):
    out.write(struct.pack('<QQQ', LIST_MAGIC, 0, len(records)))
    for head, parts in records:
        out.write(head)
        for a in parts:
            if a.size:
                # raw bytes of the array itself: no intermediate bytes object
                out.write(a.reshape(-1).view(np.uint8))
    out.write(struct.pack('<Q', len(names)))
    for n in names:
        out.write(struct.pack('<Q', len(n)))
        out.write(n)


def dumps_arrays(data, np_shape=False):
    """The bytes ``mx.nd.save`` would write for ``data``.

    Parameters
    ----------
    data : numpy.ndarray, list of arrays or dict of str to array
        A dict keeps its order and writes the names; a single array is saved as a list of one.
    np_shape : bool
        Write records as MXNet does under np-shape semantics (``mx.util.np_shape(True)``,
        magic 0xF993FACA). MXNet then loads the file only under np-shape semantics.

    Returns
    -------
    bytes

    Examples
    --------
    >>> import numpy as np
    >>> blob = dumps_arrays([np.zeros(3, np.float32)])
    >>> len(blob)     # 24 list header + 32 record header + 12 data + 8 name count
    76
    """
    buf = io.BytesIO()
    _write(buf, *_prepare(data, V3_MAGIC if np_shape else V2_MAGIC))
    return buf.getvalue()


def save_arrays(fname, data, np_shape=False):
    """Write ``data`` in MXNet's NDArray file format (what ``mx.nd.save`` writes).

    Parameters
    ----------
    fname : str, os.PathLike or binary file object
        Destination.
    data : numpy.ndarray, list of arrays or dict of str to array
        See :func:`dumps_arrays`. Supported dtypes: float32, float64, float16, bfloat16,
        uint8, int8, int32, int64 and bool. Arrays are written as if they lived on ``cpu(0)``.
    np_shape : bool
        See :func:`dumps_arrays`.

    Raises
    ------
    TypeError
        A name that is not a str, or an array of an unsupported dtype (before anything is
        written to a named file).
    """
    # prepared first: bad input fails before the file is created or truncated
    prepared = _prepare(data, V3_MAGIC if np_shape else V2_MAGIC)
    if hasattr(fname, 'write'):
        _write(fname, *prepared)
        return
    # all or nothing: a save killed half way leaves the previous file (atomic_write)
    with atomic_write(os.fspath(fname), 'wb') as f:
        _write(f, *prepared)
