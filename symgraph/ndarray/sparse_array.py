"""MXNet's sparse array classes, stored dense: :class:`CSRNDArray` and :class:`RowSparseNDArray`.

After MXNet 1.9.1's ``python/mxnet/ndarray/sparse.py`` (the classes' API). symgraph keeps the
values of a sparse array in a dense array of its full shape (``_data``, as every NDArray), so
every operator reads it unchanged; no memory is saved. What MXNet's sparse formats hold
besides the values, the *structure* (a row_sparse array's row indices, a csr array's column
indices and row pointers), is either

* kept as given (``row_sparse_array((data, indices))``, ``csr_matrix((data, indices,
  indptr))``, a SciPy matrix, ``row_sparse_pull``'s rows, a sparse gradient's rows): then
  explicitly stored zeros stay stored, as in MXNet; or
* worked out from the values (the non-zero rows, the non-zero entries in row-major order)
  when none was given, or after the array was written since it was given (the array's write
  counter ``_ver`` tells).

``.data``/``.indices``/``.indptr`` are new dense NDArrays made from the values and that
structure (int64 indices, as MXNet's). Operators on sparse arrays return dense arrays, except
the functions of ``mx.nd.sparse`` that MXNet documents with sparse results (see
``sparse.py``) and the methods here (``copy``, ``copyto``, ``tostype``, a csr row slice,
multiplication and division by a scalar). See docs/differences.md.
"""
import numbers

import numpy as np

from ..base import ArgumentError, ArgumentTypeError, MXNetError
from ..context import Context
from . import ndarray as _nd

__all__ = ['BaseSparseNDArray', 'CSRNDArray', 'RowSparseNDArray', 'SPARSE_STYPES',
           'rsp_rows', 'csr_structure', 'make_sparse', 'retain_rows', 'sum_row_sparse',
           'pulled_rows']

SPARSE_STYPES = ('row_sparse', 'csr')


def _host(x):
    """A NumPy view or copy of a NumPy/CuPy array."""
    return x if isinstance(x, np.ndarray) else x.get()


def rsp_rows(dense):
    """The rows of ``dense`` (NumPy/CuPy, ndim >= 1) holding a non-zero value, sorted int64."""
    d = _host(dense)
    if d.ndim == 0 or d.shape[0] == 0:
        return np.zeros(0, np.int64)
    nz = (d != 0).reshape(d.shape[0], -1).any(axis=1)
    return np.flatnonzero(nz).astype(np.int64)


def csr_structure(dense):
    """(indices, indptr) of the non-zero entries of a 2-D array in row-major order, int64."""
    d = _host(dense)
    rows, cols = np.nonzero(d)
    indptr = np.zeros(d.shape[0] + 1, np.int64)
    np.cumsum(np.bincount(rows, minlength=d.shape[0]), out=indptr[1:])
    return cols.astype(np.int64), indptr


class BaseSparseNDArray(_nd.NDArray):
    """The base of MXNet's sparse arrays: an NDArray whose values are stored dense, with
    the sparse structure kept as given or worked out from the values (module docstring)."""

    # _sp: the structure as given (row_sparse: indices; csr: (indices, indptr)), valid while
    # _ver equals _sp_ver (a write into the array makes it be worked out from the values)
    __slots__ = ('_sp', '_sp_ver')

    def __init__(self, data, ctx=None, structure=None):
        super().__init__(data, ctx)
        self._set_structure(structure)

    def _set_structure(self, structure):
        self._sp = structure
        self._sp_ver = self._ver

    def _given(self):
        """The structure as given, or None where it is worked out from the values."""
        return self._sp if self._sp is not None and self._sp_ver == self._ver else None

    def _aux(self, values, dtype=np.int64):
        with self._ctx.device_scope():
            return _nd.NDArray(self._ctx.xp.asarray(np.asarray(values, dtype)), self._ctx)

    def __repr__(self):
        return '\n<%s %s @%s>' % (type(self).__name__, 'x'.join(map(str, self.shape)),
                                  self._ctx)

    def _same(self, data, ctx, structure):
        return type(self)(data, ctx, structure)

    def copy(self):
        """A copy of the same storage type and structure."""
        with self._ctx.device_scope():
            return self._same(self._data.copy(), self._ctx, self._given())

    def copyto(self, other):
        """Copy into an NDArray (its own storage type keeps; a sparse one of this type
        takes this structure) or onto a Context (a new array of this type)."""
        if isinstance(other, Context):
            with other.device_scope():
                data = other.xp.array(_nd._to_xp(self._data, other), copy=True)
            return self._same(data, other, self._given())
        if isinstance(other, _nd.NDArray):
            if other is self:
                return other
            given = self._given()
            super().copyto(other)
            if isinstance(other, type(self)):
                other._set_structure(given)
            return other
        raise ArgumentTypeError('copyto does not support type %s' % type(other))

    def detach(self):
        """The same values (shared memory) and structure outside the recorded graph."""
        return self._same(self._data, self._ctx, self._given())

    def astype(self, dtype, copy=True):
        """A copy of another dtype, of the same storage type and structure."""
        if not copy and np.dtype(dtype) == self._data.dtype:
            return self
        with self._ctx.device_scope():
            return self._same(self._data.astype(np.dtype(dtype)), self._ctx, self._given())

    def tostype(self, stype):
        """This array as ``stype``: 'default' a dense copy; its own type a copy; csr <->
        row_sparse is refused, as MXNet's cast_storage refuses it."""
        if stype == 'default':
            with self._ctx.device_scope():
                return _nd.NDArray(self._data.copy(), self._ctx)
        if stype == self.stype:
            return self.copy()
        if stype in SPARSE_STYPES:
            raise ArgumentError('cast_storage from %s to %s is not supported'
                             % (self.stype, stype))
        raise ArgumentError('tostype: unknown storage type %r (default, row_sparse, csr)'
                         % (stype,))

    def _scalar_keep(self, other, op):
        """``self op scalar`` keeping this storage type (MXNet's sparse scalar operators)."""
        with self._ctx.device_scope():
            data = op(self._data, self._data.dtype.type(other))
            return self._same(data.astype(self._data.dtype, copy=False), self._ctx,
                              self._given())

    def __mul__(self, other):
        if isinstance(other, numbers.Number) and not isinstance(other, bool) \
                and not _nd._AG.recording:
            return self._scalar_keep(other, np.multiply)
        return super().__mul__(other)

    __rmul__ = __mul__

    def __truediv__(self, other):
        if isinstance(other, numbers.Number) and not isinstance(other, bool) \
                and not _nd._AG.recording and other != 0:
            return self._scalar_keep(other, np.true_divide)
        return super().__truediv__(other)

    __div__ = __truediv__

    def reshape(self, *shape, **kwargs):
        raise MXNetError('reshape is not supported for %s (sparse storage); '
                         'tostype("default") first' % type(self).__name__)

    def check_format(self, full_check=True):
        """Check the structure (as MXNet's ``check_format``): raises
        :class:`~symgraph.base.MXNetError` where it is not a valid one. A structure worked
        out from the values is always valid."""
        given = self._given()
        if given is not None:
            self._check_structure(given, full_check)

    @property
    def _num_aux(self):
        return len(self._aux_types)


class CSRNDArray(BaseSparseNDArray):
    """A 2-D array in MXNet's compressed sparse row format (values stored dense)."""

    __slots__ = ()
    _aux_types = [np.int64, np.int64]

    @property
    def stype(self):
        return 'csr'

    def _structure(self):
        given = self._given()
        return given if given is not None else csr_structure(self._data)

    @property
    def indices(self):
        """The column index of each stored value (int64)."""
        return self._aux(self._structure()[0])

    @property
    def indptr(self):
        """Where each row's stored values start in :attr:`data`, and their end (int64)."""
        return self._aux(self._structure()[1])

    @property
    def data(self):
        """The stored values in row-major order (explicitly stored zeros included)."""
        indices, indptr = self._structure()
        rows = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
        d = _host(self._data)[rows, indices]
        return self._aux(d, d.dtype)

    def _check_structure(self, given, full_check):
        indices, indptr = given
        rows, cols = self.shape
        if indptr.shape != (rows + 1,) or indptr[0] != 0 or indptr[-1] != len(indices):
            raise MXNetError('check_format: csr indptr of shape %s does not fit %d rows and '
                             '%d stored values' % (indptr.shape, rows, len(indices)))
        if not full_check:
            return
        if (np.diff(indptr) < 0).any():
            raise MXNetError('check_format: csr indptr is not non-decreasing')
        if len(indices) and (indices.min() < 0 or indices.max() >= cols):
            raise MXNetError('check_format: csr column indices must lie in [0, %d)' % cols)
        for r in range(rows):
            seg = indices[indptr[r]:indptr[r + 1]]
            if (np.diff(seg) <= 0).any():
                raise MXNetError('check_format: csr column indices of row %d are not sorted '
                                 'and unique' % r)

    def __getitem__(self, key):
        """Rows: ``a[i]`` and ``a[i:j]`` are csr arrays (MXNet's ``slice`` on axis 0)."""
        if isinstance(key, numbers.Integral) and not isinstance(key, bool):
            begin = key + self.shape[0] if key < 0 else key
            return self[begin:begin + 1]
        if isinstance(key, slice):
            if key.step is not None:
                raise ArgumentError('CSRNDArray only supports continuous slicing on axis 0')
            if key.start is None and key.stop is None:
                return self
            begin, end, _ = key.indices(self.shape[0])
            given = self._given()
            structure = None
            if given is not None:
                indices, indptr = given
                structure = (indices[indptr[begin]:indptr[max(end, begin)]].copy(),
                             indptr[begin:max(end, begin) + 1] - indptr[begin])
            with self._ctx.device_scope():
                return CSRNDArray(self._data[begin:end].copy(), self._ctx, structure)
        if isinstance(key, tuple):
            raise ArgumentError('Multi-dimension indexing is not supported')
        raise ArgumentError('Undefined behaviour for {}'.format(key))

    def asscipy(self):
        """A ``scipy.sparse.csr_matrix`` of the same structure and values."""
        try:
            import scipy.sparse as spsp   # optional dependency, only this method needs it
        except ImportError as e:
            raise ImportError('asscipy needs scipy (pip install scipy)') from e
        indices, indptr = self._structure()
        return spsp.csr_matrix((self.data.asnumpy(), indices, indptr), shape=self.shape,
                               dtype=self._data.dtype)


class RowSparseNDArray(BaseSparseNDArray):
    """An array in MXNet's row-sparse format (values stored dense): a set of stored rows."""

    __slots__ = ()
    _aux_types = [np.int64]

    @property
    def stype(self):
        return 'row_sparse'

    def _rows(self):
        given = self._given()
        return given if given is not None else rsp_rows(self._data)

    @property
    def indices(self):
        """The stored rows (int64): as given, else the rows holding a non-zero value."""
        return self._aux(self._rows())

    @property
    def data(self):
        """The stored rows' values, shape ``(len(indices),) + shape[1:]``."""
        d = _host(self._data)[self._rows()]
        return self._aux(d, d.dtype)

    def _check_structure(self, given, full_check):
        if given.ndim != 1:
            raise MXNetError('check_format: row_sparse indices must be 1-D')
        if full_check and len(given):
            if given.min() < 0 or given.max() >= self.shape[0]:
                raise MXNetError('check_format: row_sparse indices must lie in [0, %d)'
                                 % self.shape[0])
            if (np.diff(given) <= 0).any():
                raise MXNetError('check_format: row_sparse indices are not sorted and unique')

    def __getitem__(self, key):
        if isinstance(key, slice) and key.start is None and key.stop is None \
                and key.step is None:
            return self
        if isinstance(key, tuple):
            raise ArgumentError('Multi-dimension indexing is not supported')
        raise ArgumentError('RowSparseNDArray only supports [:] for __getitem__')

    def retain(self, indices):
        """The rows ``indices`` of this array (``mx.nd.sparse.retain``)."""
        return retain_rows(self, indices)


def retain_rows(arr, indices):
    """A RowSparseNDArray storing the rows ``indices`` (in their order) with ``arr``'s values
    where ``arr`` stores them, zeros elsewhere."""
    if not isinstance(arr, RowSparseNDArray):
        raise ArgumentTypeError('retain: data must be a RowSparseNDArray, got %s' % type(arr).__name__)
    # MXNet's _sparse_retain stores the requested rows as given (order kept, a row the
    # input does not store held as zeros)
    rows = np.asarray(_host(indices._data) if isinstance(indices, _nd.NDArray) else indices)
    rows = rows.astype(np.int64).reshape(-1)
    if len(rows) and (rows.min() < 0 or rows.max() >= arr.shape[0]):
        raise IndexError('retain: row indices must lie in [0, %d)' % arr.shape[0])
    keep = np.intersect1d(arr._rows(), rows)
    ctx = arr.context
    with ctx.device_scope():
        out = ctx.xp.zeros_like(arr._data)
        if len(keep):
            sel = ctx.xp.asarray(keep)
            out[sel] = arr._data[sel]
    return RowSparseNDArray(out, ctx, rows)


def sum_row_sparse(total, vals):
    """The dense sum ``total`` of the RowSparseNDArrays ``vals`` as a RowSparseNDArray
    holding the union of their rows (MXNet's row_sparse reduction)."""
    rows = np.unique(np.concatenate([v._rows() for v in vals])).astype(np.int64)
    return RowSparseNDArray(total._data, total.context, rows)


def pulled_rows(stored, rows):
    """The rows ``row_sparse_pull`` of ``rows`` from ``stored`` holds: the requested ones
    (unique, sorted) that ``stored`` stores (every one for a dense stored value)."""
    rows = np.unique(np.asarray(rows, np.int64))
    if isinstance(stored, RowSparseNDArray):
        rows = np.intersect1d(stored._rows(), rows)
    return rows.astype(np.int64)


def make_sparse(stype, data, ctx, structure=None):
    """A sparse array of ``stype`` over the dense ``data`` (NumPy/CuPy, owned by it)."""
    if stype == 'row_sparse':
        return RowSparseNDArray(data, ctx, structure)
    if stype == 'csr':
        if data.ndim != 2:
            raise ArgumentError('csr storage needs a 2-D array, got shape %s' % (data.shape,))
        return CSRNDArray(data, ctx, structure)
    raise ArgumentError("unknown sparse storage type %r (row_sparse, csr)" % (stype,))
