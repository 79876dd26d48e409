"""Helpers of :mod:`symgraph.io` (MXNet's ``mxnet.io.utils``): bringing the inputs of
:class:`~symgraph.io.NDArrayIter` into one canonical form, and reordering them.
"""
from collections import OrderedDict
import sys

import numpy as np

from ..ndarray import NDArray
from ..ndarray.sparse import CSRNDArray, array as sparse_array
from .. import ndarray as nd
from ..base import ArgumentError, ArgumentTypeError

__all__ = []


def _h5py_dataset_type():
    """``h5py.Dataset`` if h5py has been imported (a Dataset cannot exist otherwise), else
    None: symgraph neither needs nor imports h5py."""
    h5py = sys.modules.get('h5py')
    return getattr(h5py, 'Dataset', None) if h5py is not None else None


def _is_h5py(v):
    dataset = _h5py_dataset_type()
    return dataset is not None and isinstance(v, dataset)


def _is_sparse(v):
    """A SciPy sparse matrix or an MXNet-style sparse NDArray (CSR / row_sparse)."""
    sparse = sys.modules.get('scipy.sparse')
    if sparse is not None and sparse.issparse(v):
        return True
    return getattr(v, 'stype', 'default') not in ('default', None)


def _init_data(data, allow_empty, default_name):
    """Convert ``data`` (an array, a list of arrays or a dict name -> array) into MXNet's
    canonical form: a list of ``(name, NDArray)`` sorted by name.

    As MXNet: a single array is named ``default_name``, a list of several ``_<i>_<name>``;
    a NumPy array (of any dtype) or anything array-like becomes a float32 NDArray, an
    NDArray is kept as it is; an ``h5py.Dataset`` is kept and read batch by batch.
    """
    if data is None:
        if not allow_empty:
            raise ArgumentTypeError('NDArrayIter needs data: got None for %r' % default_name)
        data = []
    if isinstance(data, (np.ndarray, NDArray)) or _is_h5py(data) or _is_sparse(data):
        data = [data]
    if isinstance(data, tuple):
        data = list(data)
    if isinstance(data, list):
        if not data and not allow_empty:
            raise ArgumentError('NDArrayIter needs data: %r is an empty list' % default_name)
        if len(data) == 1:
            data = OrderedDict([(default_name, data[0])])
        else:
            data = OrderedDict([('_%d_%s' % (i, default_name), d) for i, d in enumerate(data)])
    if not isinstance(data, dict):
        raise ArgumentTypeError('Input must be NDArray, numpy.ndarray, h5py.Dataset a list of them '
                                'or dict with them as values; got %s for %r'
                                % (type(data).__name__, default_name))
    out = {}
    for k, v in data.items():
        if _is_sparse(v):
            if getattr(v, 'stype', None) == 'row_sparse' or not (
                    isinstance(v, CSRNDArray) or hasattr(v, 'tocsr')):
                raise ArgumentTypeError('%r is a %s: NDArrayIter takes csr sparse data '
                                        '(CSRNDArray, scipy.sparse.csr_matrix) only, as MXNet'
                                        % (k, type(v).__name__))
            if not isinstance(v, CSRNDArray):      # SciPy: a (dense-backed) CSRNDArray
                v = sparse_array(v.tocsr())
        if not isinstance(v, NDArray) and not _is_h5py(v):
            try:
                v = nd.array(v)
            except Exception as err:     # as MXNet: whatever fails, a TypeError naming k
                raise ArgumentTypeError(("Invalid type '%s' for %s, " % (type(v), k)) +
                                        'should be NDArray, numpy.ndarray or h5py.Dataset') from err
        if len(v.shape) == 0:
            raise ArgumentError('%r is a scalar (shape ()): NDArrayIter needs arrays whose '
                                'first axis runs over the examples' % (k,))
        out[k] = v
    return list(sorted(out.items()))


def _has_instance(data, dtype):
    """Whether an array of ``data`` (a list of ``(name, array)``) is a ``dtype``."""
    return any(isinstance(arr, dtype) for _, arr in data)


def _getdata_by_idx(data, idx, batch_axis=0):
    """``data`` reordered by ``idx`` along the batch axis. As MXNet, each NDArray comes
    back as a new float32 NDArray on its own context (``mx.nd.array`` of the NumPy
    result); an h5py Dataset is left as it is (it is read in index order instead)."""
    shuffle_data = []
    for k, v in data:
        if _is_h5py(v):
            shuffle_data.append((k, v))
        elif isinstance(v, CSRNDArray):      # (MXNet: a CSRNDArray of the reordered rows)
            shuffle_data.append((k, nd.array(np.take(v.asnumpy(), idx, axis=batch_axis),
                                             v.context, dtype=v.dtype).tostype('csr')))
        else:
            shuffle_data.append((k, nd.array(np.take(v.asnumpy(), idx, axis=batch_axis),
                                             v.context)))
    return shuffle_data


def _slice_along_batch_axis(data, s, batch_axis):
    """``data[s]`` along ``batch_axis`` (a new NDArray, MXNet's ``slice_axis``)."""
    if batch_axis == 0 and isinstance(data, NDArray):
        # the same new array without an operator call (the iterator's per-batch cost)
        return data[s.start:s.stop].copy()
    return data.slice_axis(axis=batch_axis, begin=s.start, end=s.stop)
