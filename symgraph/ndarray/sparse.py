"""``mx.nd.sparse``: MXNet's sparse storage types (csr, row_sparse), stored dense.

After MXNet 1.9.1's ``python/mxnet/ndarray/sparse.py``. The arrays (``sparse_array.py``)
keep their values in a dense array of the full shape, so every operator works on them and no
memory is saved; the API and the values are MXNet's (``stype``, ``.data``, ``.indices``,
``.indptr``, ``tostype``, ``asscipy``, ``check_format``, ``retain``, ``save``/``load``).

Storage types of results (MXNet's registry, for the cases kept; everything else is dense):

* ``cast_storage`` / ``tostype``: the type asked for (csr <-> row_sparse refused);
* ``dot``: ``dot(csr.T, dense or row_sparse)`` is row_sparse, other pairs dense; a
  ``forward_stype`` given wins;
* ``dot(dense, csr)`` is csr;
* ``add``/``subtract``/``multiply`` of two arrays of one sparse type and shape: that type
  (structures as ``_binary`` says); ``multiply``/``divide`` with a sparse left operand and a
  dense or scalar right one (broadcast): the left one's type and structure;
* ``retain``, ``zeros``, ``empty``, ``array``, ``csr_matrix``, ``row_sparse_array``: sparse.
"""
import numbers

import numpy as np

from ..base import ArgumentError, ArgumentTypeError
from ..context import current_context
from . import ndarray as _nd
from .serialization import StoredSparse
from .sparse_array import (BaseSparseNDArray, CSRNDArray, RowSparseNDArray, SPARSE_STYPES,
                           make_sparse, retain_rows)
from .sparse_update import LAZY_FUNCTIONS, _sparse_adagrad

__all__ = ['CSRNDArray', 'RowSparseNDArray', 'BaseSparseNDArray', 'csr_matrix',
           'row_sparse_array', 'zeros', 'empty', 'array', 'cast_storage', 'retain', 'dot',
           'add', 'subtract', 'multiply', 'divide', 'add_n', 'elemwise_add', 'elemwise_sub',
           'elemwise_mul', 'adagrad_update', 'negative', 'abs', 'sqrt', 'square', 'sum', 'mean']


def _is_sp_scipy(x):
    """A SciPy sparse matrix (recognised by its methods: scipy is optional)."""
    return hasattr(x, 'tocsr') and hasattr(x, 'nnz') and not isinstance(x, _nd.NDArray)


def _default_dtype(src, dtype):
    """MXNet's ``_prepare_default_dtype``: the source's dtype for an NDArray, a NumPy array
    or a SciPy matrix, float32 otherwise."""
    if dtype is not None:
        return np.dtype(dtype)
    if isinstance(src, (_nd.NDArray, np.ndarray)) or _is_sp_scipy(src):
        return np.dtype(src.dtype)
    return np.dtype(np.float32)


def _np(x, dtype=None):
    a = x.asnumpy() if isinstance(x, _nd.NDArray) else np.asarray(x)
    return a if dtype is None else a.astype(dtype)


def _check_shape(s1, s2):
    if s1 and s2 and tuple(s1) != tuple(s2):
        raise ArgumentError('Shape mismatch detected. %s v.s. %s' % (tuple(s1), tuple(s2)))


def _on(ctx, dense_np, stype, structure=None):
    ctx = current_context() if ctx is None else ctx
    with ctx.device_scope():
        data = ctx.xp.asarray(dense_np)
        if data is dense_np:
            data = data.copy()
    return make_sparse(stype, data, ctx, structure)


# ----------------------------------------------------------------------- construction
def _csr_from_definition(data, indices, indptr, shape, ctx, dtype):
    dtype = _default_dtype(data, dtype)
    data = _np(data, dtype)
    indices = _np(indices, np.int64)
    indptr = _np(indptr, np.int64)
    if shape is None:
        if indices.shape[0] == 0:
            raise ArgumentError('invalid shape')
        shape = (len(indptr) - 1, int(indices.max()) + 1)
    if data.ndim != 1 or indptr.ndim != 1 or indices.ndim != 1 or indptr.shape[0] == 0 \
            or len(shape) != 2:
        raise ArgumentError('invalid shape')
    if len(data) != len(indices) or indptr[-1] != len(indices) or len(indptr) != shape[0] + 1:
        raise ArgumentError('csr_matrix: %d values, %d column indices and indptr of length %d '
                         '(ending at %d) do not make a %s matrix'
                         % (len(data), len(indices), len(indptr), indptr[-1], tuple(shape)))
    if len(indices) and (indices.min() < 0 or indices.max() >= shape[1]):
        raise ArgumentError('csr_matrix: column indices must lie in [0, %d)' % shape[1])
    dense = np.zeros(shape, dtype)
    rows = np.repeat(np.arange(shape[0]), np.diff(indptr))
    np.add.at(dense, (rows, indices), data)
    return _on(ctx, dense, 'csr', (indices, indptr))


def csr_matrix(arg1, shape=None, ctx=None, dtype=None):
    """A :class:`CSRNDArray` from ``(data, indices, indptr)``, ``(data, (row, col))``
    (COO; duplicates summed), ``(M, N)`` (all zero), a SciPy sparse matrix, a CSRNDArray
    or a dense array-like, as MXNet's ``csr_matrix``."""
    if isinstance(arg1, tuple):
        if len(arg1) == 2:
            if isinstance(arg1[1], tuple) and len(arg1[1]) == 2:
                data, (row, col) = arg1
                data, row, col = _np(data), _np(row, np.int64), _np(col, np.int64)
                if shape is None:
                    shape = (int(row.max()) + 1, int(col.max()) + 1)
                order = np.lexsort((col, row))
                row, col, data = row[order], col[order], data[order]
                # duplicates summed, as SciPy's coo -> csr conversion (MXNet's route)
                first = np.ones(len(row), bool)
                first[1:] = (row[1:] != row[:-1]) | (col[1:] != col[:-1])
                starts = np.flatnonzero(first)
                summed = np.add.reduceat(data, starts) if len(data) else data
                row, col = row[starts], col[starts]
                indptr = np.zeros(shape[0] + 1, np.int64)
                np.cumsum(np.bincount(row, minlength=shape[0]), out=indptr[1:])
                # (MXNet goes through SciPy: the data's own dtype, float64 for a list)
                return _csr_from_definition(summed, col, indptr, shape, ctx,
                                            dtype or summed.dtype)
            _check_shape(arg1, shape)
            return empty('csr', arg1, ctx=ctx, dtype=dtype)
        if len(arg1) == 3:
            return _csr_from_definition(arg1[0], arg1[1], arg1[2], shape, ctx, dtype)
        raise ArgumentError('Unexpected length of input tuple: %d' % len(arg1))
    if isinstance(arg1, CSRNDArray) or _is_sp_scipy(arg1):
        _check_shape(arg1.shape, shape)
        return array(arg1, ctx=ctx, dtype=dtype)
    if isinstance(arg1, RowSparseNDArray):
        raise ArgumentError('Unexpected input type: RowSparseNDArray')
    dtype = _default_dtype(arg1, dtype)
    dense = _np(arg1, dtype)
    _check_shape(dense.shape, shape)
    return cast_storage(_nd.array(dense, ctx=ctx, dtype=dtype), 'csr')


def row_sparse_array(arg1, shape=None, ctx=None, dtype=None):
    """A :class:`RowSparseNDArray` from ``(data, indices)`` (the rows ``indices`` hold
    ``data``), a shape (all zero), a RowSparseNDArray or a dense array-like."""
    if isinstance(arg1, tuple):
        if len(arg1) < 2:
            raise ArgumentError('Unexpected length of input tuple: %d' % len(arg1))
        if len(arg1) > 2 or all(isinstance(d, numbers.Integral) for d in arg1):
            _check_shape(arg1, shape)
            return empty('row_sparse', arg1, ctx=ctx, dtype=dtype)
        data, indices = arg1
        dtype = _default_dtype(data, dtype)
        data, indices = _np(data, dtype), _np(indices, np.int64)
        if shape is None:
            if indices.shape[0] == 0:
                raise ArgumentError('invalid shape')
            shape = (int(indices[-1]) + 1,) + data.shape[1:]
        shape = tuple(shape)
        if data.ndim != len(shape) or indices.ndim != 1 or int(np.prod(shape[1:])) == 0:
            raise ArgumentError('invalid shape')
        if data.shape != (len(indices),) + shape[1:]:
            raise ArgumentError('row_sparse_array: data of shape %s does not hold %d rows of '
                             'shape %s' % (data.shape, len(indices), shape[1:]))
        if len(indices) and (indices.min() < 0 or indices.max() >= shape[0]):
            raise ArgumentError('row_sparse_array: row indices must lie in [0, %d)' % shape[0])
        dense = np.zeros(shape, dtype)
        dense[indices] = data
        return _on(ctx, dense, 'row_sparse', indices)
    if isinstance(arg1, RowSparseNDArray):
        _check_shape(arg1.shape, shape)
        return array(arg1, ctx=ctx, dtype=dtype)
    if isinstance(arg1, CSRNDArray):
        raise ArgumentError('Unexpected input type: CSRNDArray')
    dtype = _default_dtype(arg1, dtype)
    dns = _nd.array(_np(arg1, dtype), dtype=dtype)
    if ctx is not None and dns.context != ctx:
        dns = dns.as_in_context(ctx)
    _check_shape(dns.shape, shape)
    return cast_storage(dns, 'row_sparse')


def zeros(stype, shape, ctx=None, dtype=None, **kwargs):
    """All-zero array of ``stype`` ('default' gives a dense NDArray); a sparse one stores
    nothing (empty indices)."""
    if stype == 'default':
        return _nd.zeros(shape, ctx=ctx, dtype=dtype, **kwargs)
    if stype not in SPARSE_STYPES:
        raise ArgumentError('zeros: unknown storage type %r (default, row_sparse, csr)'
                         % (stype,))
    shape = (shape,) if isinstance(shape, numbers.Integral) else tuple(shape)
    dtype = np.dtype(np.float32 if dtype is None else dtype)
    structure = np.zeros(0, np.int64) if stype == 'row_sparse' else (
        np.zeros(0, np.int64), np.zeros(shape[0] + 1, np.int64))
    res = _on(ctx, np.zeros(shape, dtype), stype, structure)
    out = kwargs.get('out')
    if out is not None:
        res.copyto(out)
        return out
    return res


def empty(stype, shape, ctx=None, dtype=None):
    """As :func:`zeros` (symgraph never hands out uninitialised memory)."""
    return zeros(stype, shape, ctx, dtype)


def array(source_array, ctx=None, dtype=None):
    """A sparse copy of a sparse NDArray or of a SciPy sparse matrix (as a csr array,
    its structure kept); dense sources are refused, as MXNet refuses them."""
    if isinstance(source_array, _nd.NDArray):
        if source_array.stype == 'default':
            raise ArgumentError('Please use `tostype` to create RowSparseNDArray or CSRNDArray '
                             'from an NDArray')
        ctx = current_context() if ctx is None else ctx
        dtype = _default_dtype(source_array, dtype)
        res = source_array.copyto(ctx)
        return res if np.dtype(res.dtype) == dtype else res.astype(dtype)
    if _is_sp_scipy(source_array):
        csr = source_array.tocsr()
        return _csr_from_definition(csr.data, csr.indices, csr.indptr, csr.shape, ctx,
                                    _default_dtype(source_array, dtype))
    if isinstance(source_array, (np.ndarray, np.generic)):
        raise ArgumentError('Please use mx.nd.array to create an NDArray with source_array of '
                         'type %s' % type(source_array))
    raise ArgumentError('Unexpected source_array type: %s' % type(source_array))


# ----------------------------------------------------------------------- operators
def cast_storage(data, stype, out=None, **kwargs):
    """``mx.nd.cast_storage``: ``data`` as ``stype`` (default, row_sparse, csr); the
    structure is worked out from the values (explicit zeros are not stored)."""
    if not isinstance(data, _nd.NDArray):
        raise ArgumentTypeError('cast_storage: data must be an NDArray, got %s' % type(data).__name__)
    if stype not in ('default',) + SPARSE_STYPES:
        raise ArgumentError("cast_storage: stype must be 'default', 'row_sparse' or 'csr', got %r"
                         % (stype,))
    if isinstance(data, BaseSparseNDArray):
        res = data.tostype(stype)
    elif stype == 'default':
        res = data.copy()
    else:
        if stype == 'csr' and data.ndim != 2:
            raise ArgumentError('cast_storage: csr storage needs a 2-D array, got shape %s'
                             % (data.shape,))
        with data.context.device_scope():
            res = make_sparse(stype, data._data.copy(), data.context)
    if out is not None:
        res.copyto(out)
        return out
    return res


def retain(data, indices, out=None, **kwargs):
    """``mx.nd.sparse.retain``: the stored rows of a RowSparseNDArray that ``indices``
    names (the others zero, not stored)."""
    res = retain_rows(data, indices)
    if out is not None:
        res.copyto(out)
        return out
    return res


def _as_stype(res, stype, structure=None):
    """The dense operator result ``res`` as ``stype``; an autograd entry moves with it."""
    if stype == 'default' or isinstance(res, BaseSparseNDArray):
        return res
    sp = make_sparse(stype, res._data, res.context, structure)
    sp._ag, res._ag = res._ag, None
    return sp


def dot(lhs, rhs, transpose_a=False, transpose_b=False, forward_stype=None, **kwargs):
    """``mx.nd.sparse.dot``: MXNet's ``dot`` (values computed dense); the result's storage
    type as MXNet's registry gives it (module docstring)."""
    res = _nd.invoke('dot', (lhs, rhs), dict(kwargs, transpose_a=transpose_a,
                                             transpose_b=transpose_b))
    if forward_stype not in (None, 'None'):
        stype = forward_stype
    elif lhs.stype == 'csr' and transpose_a and rhs.stype in ('default', 'row_sparse'):
        stype = 'row_sparse'
    elif lhs.stype == 'default' and rhs.stype == 'csr' and not transpose_a \
            and not transpose_b:
        stype = 'csr'
    else:
        stype = 'default'
    return _as_stype(res, stype)


def _binary(name, lhs, rhs):
    """``name`` (add, subtract, multiply, divide) with MXNet's result storage and structure
    (checked against MXNet 1.9.1, tests/golden/make_sparse_dense_backed.py): row_sparse
    ``+`` stores the rows the sum holds, ``-`` the union of both operands' rows, ``*`` the
    rows both store; csr with csr: the entries the result holds; a sparse left operand
    ``*`` or ``/`` a dense or scalar right one keeps its own structure."""
    res = getattr(_nd, name)(lhs, rhs)
    ls = lhs.stype if isinstance(lhs, _nd.NDArray) else 'default'
    rs = rhs.stype if isinstance(rhs, _nd.NDArray) else 'default'
    if ls != 'default' and ls == rs and lhs.shape == rhs.shape and name != 'divide':
        structure = None
        if ls == 'row_sparse' and name == 'subtract':
            structure = np.union1d(lhs._rows(), rhs._rows()).astype(np.int64)
        elif ls == 'row_sparse' and name == 'multiply':
            structure = np.intersect1d(lhs._rows(), rhs._rows()).astype(np.int64)
        return _as_stype(res, ls, structure)
    if ls != 'default' and rs == 'default' and name in ('multiply', 'divide'):
        return _as_stype(res, ls, lhs._given())
    return res


def add(lhs, rhs):
    """``lhs + rhs`` (broadcast); two arrays of one sparse type and shape give that type."""
    return _binary('add', lhs, rhs)


def subtract(lhs, rhs):
    """``lhs - rhs`` (broadcast); two arrays of one sparse type and shape give that type."""
    return _binary('subtract', lhs, rhs)


def multiply(lhs, rhs):
    """``lhs * rhs`` (broadcast); a sparse left operand keeps its type (dense/scalar right
    operand, or one of the same type)."""
    return _binary('multiply', lhs, rhs)


def divide(lhs, rhs):
    """``lhs / rhs`` (broadcast); a sparse left operand over a dense or scalar right one
    keeps its type and structure."""
    return _binary('divide', lhs, rhs)


def _dense_op(name):
    def fn(*args, **kwargs):
        return _nd.invoke(name, args, kwargs)
    fn.__name__ = name
    fn.__doc__ = 'MXNet\'s ``%s`` on the values (a dense result).' % name
    return fn


def _keep_op(name):
    """A unary operator that keeps zeros zero: keeps its input's sparse type."""
    def fn(data, *args, **kwargs):
        res = _nd.invoke(name, (data,) + args, kwargs)
        return _as_stype(res, data.stype if isinstance(data, _nd.NDArray) else 'default')
    fn.__name__ = name
    fn.__doc__ = 'MXNet\'s ``%s``: keeps the storage type (it keeps zeros zero).' % name
    return fn


def add_n(*args, **kwargs):
    """The sum of the arrays: row_sparse where all are row_sparse, else dense."""
    res = _nd.invoke('add_n', args, kwargs)
    if args and all(isinstance(a, RowSparseNDArray) for a in args):
        return _as_stype(res, 'row_sparse')
    return res


elemwise_add = add
elemwise_sub = subtract
elemwise_mul = multiply
negative = _keep_op('negative')
abs = _keep_op('abs')                     # pylint: disable=redefined-builtin
sqrt = _keep_op('sqrt')
square = _keep_op('square')
sum = _dense_op('sum')                    # pylint: disable=redefined-builtin
mean = _dense_op('mean')


def _tostype(arr, stype):
    """NDArray.tostype of a dense array (installed into ndarray.py below)."""
    return cast_storage(arr, stype)


def _wrap_stored(stype, dense, ctx, structure):
    """A sparse array from a loaded ``.params`` record (its structure kept)."""
    return _on(ctx, dense, stype, structure)


def _stored(arr):
    """The StoredSparse record ``mx.nd.save`` writes for a sparse array."""
    structure = arr._given()
    if structure is None:
        structure = arr._rows() if arr.stype == 'row_sparse' else arr._structure()
    return StoredSparse.make(arr.stype, arr.asnumpy(), structure)


def _make(stype, data, ctx):
    """A sparse array over ``data`` whose structure is worked out from its values."""
    return make_sparse(stype, data, ctx)


adagrad_update = _sparse_adagrad


_nd.install_sparse(functions=dict(LAZY_FUNCTIONS, cast_storage=cast_storage),
                   tostype=_tostype, zeros=zeros, wrap_stored=_wrap_stored, stored=_stored,
                   make=_make)
