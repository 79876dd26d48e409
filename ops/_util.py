"""Small helpers shared by several operator families (a helper module, not a family).

``Layout`` is the base of the one-input rearrangements of ``ops/shape.py`` and
``ops/rearrange.py``.

The names here are public to ``ops/`` so that families import them from this module
instead of from each other.
"""
import numpy as np

from symgraph.opdef import Operator, ShapeError, TypeInferenceError


def _libc_memcmp():
    try:
        import ctypes
        fn = ctypes.CDLL(None).memcmp
    except (OSError, AttributeError, TypeError):       # no C library to ask (Windows)
        return None
    fn.restype = ctypes.c_int
    fn.argtypes = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)
    return fn


_MEMCMP = _libc_memcmp()


def same_bits(xp, a, b):
    """Whether ``a`` and ``b`` hold the same values bit for bit (same shape and dtype):
    a ``memcmp`` for C-contiguous NumPy arrays (no temporary; NaNs of one bit pattern
    compare equal), else ``array_equal`` (which is stricter with NaN: never equal, the
    conservative answer for a cache check)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if _MEMCMP is not None and xp is np and a.flags.c_contiguous and b.flags.c_contiguous:
        return a.nbytes == 0 or _MEMCMP(a.ctypes.data, b.ctypes.data, a.nbytes) == 0
    return bool(xp.array_equal(a, b))


class Snapshot:
    """Copies of some arrays, to tell later whether arrays hold the same bits
    (:func:`same_bits`). Where the arrays asked about are the very objects snapshotted
    (an executor's arguments, asked every forward) and C-contiguous NumPy arrays, the
    check is one ``memcmp`` per array on addresses worked out once."""

    def __init__(self, xp, arrays):
        self.xp = xp
        self.arrays = list(arrays)
        self.copies = [a.copy() for a in self.arrays]
        self.direct = None
        if _MEMCMP is not None and xp is np and all(
                a.flags.c_contiguous for a in self.arrays + self.copies):
            self.direct = [(a.ctypes.data, c.ctypes.data, a.nbytes)
                           for a, c in zip(self.arrays, self.copies) if a.nbytes]

    def same(self, arrays):
        """Whether ``arrays`` hold the snapshot's bits (same shapes and dtypes)."""
        if len(arrays) != len(self.copies):
            return False
        if self.direct is not None and all(a is b for a, b in zip(arrays, self.arrays)):
            cmp = _MEMCMP
            return all(cmp(p, q, n) == 0 for p, q, n in self.direct)
        return all(same_bits(self.xp, c, a) for c, a in zip(self.copies, arrays))


def norm_axis(axis, ndim, what='axis'):
    """Map a possibly negative ``axis`` into ``[0, ndim)``.

    Parameters
    ----------
    axis : int
        The axis as the user gave it (``-1`` is the last).
    ndim : int
        Number of dimensions of the array the axis indexes.
    what : str
        How the error names the axis (``'axis'``, ``'dim1'``, ``'diag: axis'`` ...).

    Raises
    ------
    ShapeError
        When ``axis`` is outside ``[-ndim, ndim)``.
    """
    a = axis + ndim if axis < 0 else axis
    if not 0 <= a < ndim:
        raise ShapeError('%s %d is out of range for an array of %d dimensions'
                         % (what, axis, ndim))
    return a


def f32(v):
    """A parameter as MXNet's C ``float`` holds it (as a Python float).

    MXNet declares ``eps``, ``momentum``, thresholds ... as ``float`` while Python gives a
    double; rounding through float32 reproduces its numbers.
    """
    return float(np.float32(v))


def acc(x):
    """The array in its accumulation type (float16 is computed in float32)."""
    return x.astype(np.float32) if x.dtype == np.float16 else x


def sliced_len(sl, n):
    """Length of the Python slice ``sl`` over a dimension of length ``n`` (0 when unknown)."""
    return len(range(*sl.indices(n))) if n else 0


def float_only(op, t):
    """``t``, refused unless floating point (MXNet: 'only support floating point types')."""
    if t is not None and np.dtype(t).kind != 'f':
        raise TypeInferenceError('this operation only supports floating point types, not %s'
                                 % np.dtype(t).name)
    return t


class Layout(Operator):
    """Single-input, single-output rearrangement: subclasses give the shape map.

    Backward uses only the input's shape, but the planner keeps the input either way.
    """

    def out_shape(self, s):
        raise NotImplementedError

    infer_shape_uses_outputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        s = in_shapes[0]
        out = None if s is None else self.out_shape(tuple(s))
        return [s], [out], []


def scatter_add(xp, target, index, values):
    """``target[index] += values`` accumulating repeated indices, for NumPy and CuPy.

    NumPy and CuPy >= 13 have ``xp.add.at``; older CuPy has ``ndarray.scatter_add``.
    """
    at = getattr(xp.add, 'at', None)
    if at is not None:
        at(target, index, values)
    else:
        target.scatter_add(index, values)
    return target
