"""Small helpers shared by several operator families (a helper module, not a family).

``Layout`` is the base of the one-input rearrangements of ``ops/shape.py`` and
``ops/rearrange.py``.

The names here are public to ``ops/`` so that families import them from this module
instead of from each other.
"""
import numpy as np

from symgraph.opdef import CPU_KERNELS, Operator, ShapeError, TypeInferenceError, cpu_kernel, \
    is_bfloat16


class _Kernels:
    """The CPU backend's kernels by attribute (``KERNELS.conv_forward``): what
    :func:`symgraph.opdef.cpu_kernel` gives for the name (the ``CpuKernels`` protocol), None
    where no backend is loaded."""

    __slots__ = ()

    def __getattr__(self, name):
        if name not in CPU_KERNELS:         # (introspection: __wrapped__, __len__, ...)
            raise AttributeError(name)
        return cpu_kernel(name)

    @staticmethod
    def loaded():
        """Whether a CPU backend is loaded (its kernels are there to ask)."""
        return cpu_kernel('record') is not None


#: the CPU kernels by attribute; operators hold this, never the backend object
KERNELS = _Kernels()


#: float32's dtype: arrays of it are compared by identity (``a.dtype is F32``) on hot paths
F32 = np.dtype(np.float32)


def on_backend(site, arrays, run, result=None):
    """``run()``, a call of the CPU kernels that computes into offered ``arrays`` and
    returns ``arrays[result]`` (an index, default the last: the destination; or a tuple of
    indexes for a tuple of results), or None where it declines.

    The one record/replay path of the operators: with a ``site`` ((memo, tag): the
    ``replays`` dict of the operator's Step, :attr:`symgraph.opdef.Step.replays`, or
    another Step state's, and which of its calls) and the first result's array offered,
    the backend replays the call it recorded in that memo on these very arrays (then their
    results are returned without ``run()``), else records this one there for the next time
    (the ``record`` and ``replay`` kernels; ``BackendCore.record``). The backend keeps no
    table of its own: the recorded calls live and die with the Step. Every input must hold
    this call's values before it asks: a replay runs the primitives at once."""
    if result is None:
        result = len(arrays) - 1
    first = result if isinstance(result, int) else result[0]
    if site is None or site[0] is None or arrays[first] is None:
        return run()
    replay = cpu_kernel('replay')
    if replay is None:
        return run()
    if replay(site[0], site[1], arrays):
        return arrays[result] if isinstance(result, int) else tuple(arrays[i] for i in result)
    return cpu_kernel('record')(site[0], site[1], arrays, run, result)


def relu_grad_from_output(xp, y, g, dest, site=None):
    """g * (y > 0), relu's gradient from its output ``y``: through the CPU kernel where it
    takes y (the backend's routing: its size), else in NumPy; into ``dest`` (an offered
    array of g's shape and dtype, which may be y's storage) where given. ``site``:
    (the Step's replays, tag) of a call into ``dest`` the backend records and replays on
    the same arrays (:func:`on_backend`)."""
    takes = cpu_kernel('takes') if xp is np else None
    if takes is not None and g.dtype == y.dtype and y.dtype is F32 \
            and takes('relu_backward_from_output', y.size):
        # oneDNN's relu backward from the output, where y, g and dest share a layout
        kern = cpu_kernel('relu_backward_from_output')
        dx = on_backend(site, (y, g, dest), lambda: kern(y, g, out=dest))
        if dx is not None:
            return dx
    if dest is not None and not xp.may_share_memory(dest, g):
        # the mask (1.0 or 0.0) in dest itself, then the product: the values of
        # g * (y > 0), without a mask array of the activation's size
        xp.greater(y, 0, out=dest)
        return xp.multiply(g, dest, out=dest)
    if dest is not None:
        return xp.multiply(g, y > 0, out=dest)
    return g * (y > 0).astype(g.dtype)


def lies_channels_last(layouts):
    """Whether the storage plan's ``layouts`` ((input layouts, output layouts), or None:
    unknown, see the ``scratch_bytes`` rule table) put the data (input 0) and output 0
    channels last, which oneDNN's primitives take as they lie (no reorder, no scratch for one)."""
    return layouts is not None and layouts[0][:1] == ['channels_last'] \
        and layouts[1][:1] == ['channels_last']


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
    if t is not None and np.dtype(t).kind != 'f' and not is_bfloat16(t):
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
