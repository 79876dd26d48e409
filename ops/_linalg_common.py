"""Shared rules of the linalg operators (``ops/linalg.py``, ``ops/linalg_trian.py``)."""
import numpy as np

from symgraph.opdef import Operator, ShapeError, TypeInferenceError, same_type, unify_shape
from symgraph.base import ArgumentError

_FLOATS = (np.dtype('float32'), np.dtype('float64'))
_SINGULAR = 'the input matrix is singular'
_SINGULAR_TRI = 'the triangular matrix is singular (a zero on its diagonal)'


def _t(xp, m):
    """The transpose of every matrix of a batch."""
    return xp.swapaxes(m, -1, -2)


def _tri(xp, m, lower):
    return xp.tril(m) if lower else xp.triu(m)


def _lapack(xp, op, why, fn, *args):
    """``fn(*args)`` with a LAPACK failure (a singular matrix) as MXNetError saying ``why``."""
    try:
        return fn(*args)
    except (np.linalg.LinAlgError, xp.linalg.LinAlgError) as e:
        raise ArgumentError('%s failed: %s [%s]' % (op.name, why, e)) from None


def _dim(a, b, what):
    """Unify two dimensions (0 = unknown)."""
    if a and b and a != b:
        raise ShapeError(what % (a, b))
    return a or b


def _matrices(op, s, name='A', square=False):
    """Check that shape ``s`` is a (batch of) matrix/matrices; None when unknown."""
    if s is None:
        return None
    s = tuple(s)
    if len(s) < 2:
        raise ShapeError('%s: input %r must have at least 2 dimensions (a matrix or a batch '
                         'of matrices), got %s' % (op.name, name, s))
    if square and s[-1] and s[-2] and s[-1] != s[-2]:
        raise ShapeError('%s: input %r must hold square matrices (last two dimensions equal), '
                         'got %s' % (op.name, name, s))
    if square:
        n = s[-1] or s[-2]
        s = s[:-2] + (n, n)
    return s


def _batch_of(s):
    """The output shape of a per-matrix scalar (det, sumlogdiag): (1,) for one matrix."""
    return tuple(s[:-2]) or (1,)


class _Linalg(Operator):
    """Common rules: inputs named as in MXNet, float32/float64 only, one type for all."""

    needs_inputs = True
    needs_outputs = False

    def list_arguments(self):
        return ['A']

    def infer_type(self, in_types):
        t = same_type(self, in_types)
        if t is not None and np.dtype(t) not in _FLOATS:
            raise TypeInferenceError('%s supports only float32 and float64 inputs, got %s'
                                     % (self.name, np.dtype(t).name))
        n = len(self.list_arguments())
        return [t] * n, [t] * self.output_count(), []

    def _check_dtype(self, arrays):
        for a in arrays:
            if a.dtype not in _FLOATS:
                raise TypeInferenceError('%s: this operation only supports 32-bit and 64-bit '
                                         'floating point, got %s' % (self.name, a.dtype))


class _SameShape(_Linalg):
    """Square matrices in, the same shape out (potrf, potri, inverse)."""

    infer_shape_uses_outputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        s = in_shapes[0]
        if out_shapes and out_shapes[0] is not None:
            s = unify_shape(s, out_shapes[0], '%s: input and output shapes' % self.name)
        s = _matrices(self, s, square=True)
        return [s], [s], []
