"""Sparse test data of ``mx.test_utils``: ``rand_sparse_ndarray`` and the sparse cases of
``rand_ndarray``, after MXNet 1.9.1's ``python/mxnet/test_utils.py`` (uniform values in
[0, 1) on rows (row_sparse) or entries (csr) drawn with probability ``density``; a density
drawn at random when none is given). The arrays are symgraph's dense-backed sparse arrays
(``mx.nd.sparse``), their structure kept as drawn.
"""
import numpy as np
import numpy.random as rnd

from ..context import current_context
from ..ndarray import sparse as _sparse

__all__ = ['rand_sparse_ndarray']


def rand_sparse_ndarray(shape, stype, density=None, dtype=None, distribution=None,
                        data_init=None, rsp_indices=None, modifier_func=None,
                        shuffle_csr_indices=False, ctx=None):
    """A random sparse array and its parts: ``(arr, (values, indices))`` for row_sparse,
    ``(arr, (indptr, indices, values))`` for csr, as MXNet's. ``distribution`` other than
    'uniform' is refused (ValueError)."""
    ctx = ctx if ctx else current_context()
    density = rnd.rand() if density is None else density
    dtype = np.float32 if dtype is None else dtype
    if distribution not in (None, 'uniform'):
        raise ValueError('rand_sparse_ndarray: distribution %r is not supported (uniform)'
                         % (distribution,))
    if stype == 'row_sparse':
        if rsp_indices is not None:
            indices = np.asarray(rsp_indices)
            if len(indices) > shape[0]:
                raise ValueError('rand_sparse_ndarray: more row indices than rows')
        else:
            indices = np.argwhere(rnd.rand(shape[0]) < density).flatten()
        if indices.shape[0] == 0:
            return (_sparse.zeros('row_sparse', shape, ctx=ctx, dtype=dtype),
                    (np.array([], dtype=dtype), np.array([])))
        val = rnd.rand(indices.shape[0], *shape[1:]).astype(dtype)
        if data_init is not None:
            val.fill(data_init)
        if modifier_func is not None:
            val = np.vectorize(modifier_func)(val).astype(dtype)
        arr = _sparse.row_sparse_array((val, indices), shape=shape, dtype=dtype, ctx=ctx)
        return arr, (val, indices)
    if stype == 'csr':
        if len(shape) != 2:
            raise ValueError('rand_sparse_ndarray: csr needs a 2-D shape, got %s' % (shape,))
        mask = rnd.rand(*shape) < density
        rows, cols = np.nonzero(mask)
        val = rnd.rand(len(rows)).astype(dtype)
        if data_init is not None:
            val.fill(data_init)
        if modifier_func is not None:
            val = np.vectorize(modifier_func)(val).astype(dtype)
        indptr = np.zeros(shape[0] + 1, np.int64)
        np.cumsum(np.bincount(rows, minlength=shape[0]), out=indptr[1:])
        arr = _sparse.csr_matrix((val, cols, indptr), shape=shape, dtype=dtype, ctx=ctx)
        return arr, (indptr, cols, val)
    raise ValueError('rand_sparse_ndarray: unknown storage type %r (row_sparse, csr)'
                     % (stype,))
