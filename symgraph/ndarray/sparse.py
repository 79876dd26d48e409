"""``mx.nd.sparse``: MXNet's sparse storage types, which symgraph does not have.

symgraph stores every array dense. This module exists so that MXNet-era code and tests that
import it (``import mxnet.ndarray.sparse as mxsps``) load; making a sparse array raises
:class:`~symgraph.base.NotSupportedError` naming the call, and the dense cases
(``zeros(stype='default', ...)``) work. See docs/differences.md.
"""
from ..base import NotSupportedError
from . import ndarray as _nd

__all__ = ['CSRNDArray', 'RowSparseNDArray', 'BaseSparseNDArray', 'csr_matrix',
           'row_sparse_array', 'zeros', 'empty', 'array']


def _refuse(what):
    raise NotSupportedError('%s: sparse storage (csr, row_sparse) is not supported; symgraph '
                            'stores every array dense (use mx.nd.array / .tostype("default"))'
                            % what)


class BaseSparseNDArray(_nd.NDArray):
    """The base of MXNet's sparse arrays; no instance can be made here."""

    __slots__ = ()

    def __init__(self, *args, **kwargs):  # pylint: disable=super-init-not-called
        _refuse(type(self).__name__)


class CSRNDArray(BaseSparseNDArray):
    """MXNet's compressed sparse row array (not supported)."""

    __slots__ = ()


class RowSparseNDArray(BaseSparseNDArray):
    """MXNet's row-sparse array (not supported)."""

    __slots__ = ()


def csr_matrix(*args, **kwargs):
    """Refused: see the module docstring."""
    _refuse('mx.nd.sparse.csr_matrix')


def row_sparse_array(*args, **kwargs):
    """Refused: see the module docstring."""
    _refuse('mx.nd.sparse.row_sparse_array')


def zeros(stype, shape, ctx=None, dtype=None, **kwargs):
    """Zeros of ``stype``: 'default' is a dense array; a sparse type is refused."""
    if stype != 'default':
        _refuse("mx.nd.sparse.zeros(stype=%r)" % (stype,))
    return _nd.zeros(shape, ctx=ctx, dtype=dtype, **kwargs)


def empty(stype, shape, ctx=None, dtype=None):
    """As :func:`zeros` (a new array is zero-filled here)."""
    return zeros(stype, shape, ctx, dtype)


def array(source_array, ctx=None, dtype=None):
    """A dense copy of a dense source; a SciPy sparse matrix is refused."""
    if hasattr(source_array, 'tocsr') or hasattr(source_array, 'indptr'):
        _refuse('mx.nd.sparse.array of a sparse matrix')
    return _nd.array(source_array, ctx=ctx, dtype=dtype)
