"""Reductions: ``sum``, ``_square_sum``, ``mean``, ``max``, ``min``, ``prod``, ``nansum``,
``nanprod``, ``norm``, ``argmax``, ``argmin``, ``argmax_channel``, ``pick``, ``moments`` and
``cumsum``.

MXNet's rules, kept here: ``axis=None`` or ``axis=()`` reduces every axis, ``exclude``
reduces every axis *not* listed, and a reduction to a scalar has shape ``(1,)``, never
``()``. ``max``/``min`` send the gradient to every element equal to the result (all
ties), ``prod`` computes it as ``y / x`` (so a zero input gives NaN, as in MXNet), and
``argmax``/``argmin`` return indices in the input's dtype. ``topk``, ``sort`` and
``argsort`` are in ``ops/sorting.py``.

* ``moments``: ``mean`` and ``var`` (population variance, ``mean((x - mean)^2)``) over
  ``axes`` (required in effect: empty axes are an error; duplicates too), outputs
  ``output0`` and ``output1``. Integer inputs give truncated integer results.
* ``cumsum`` (operator ``_np_cumsum``, input ``a``): running sum along ``axis`` (the
  flattened input when None) in ``dtype`` (default: the input's; bool gives int64). The
  gradient is the reversed running sum of the head gradient, in the input's dtype.
  Deliberate difference: ``cumsum`` accepts negative axes (MXNet 1.9.1 checks
  ``axis >= -ndim`` but then fails at run time on them).
"""
from math import prod

import numpy as np

from symgraph.base import ParameterError
from symgraph.opdef import Operator, Param, ShapeError, register, np_dtype, unify_shape

from ._util import norm_axis


def normalize_axes(axis, ndim, what='axis'):
    """``axis`` (int, tuple or None) as a sorted tuple of non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    out = []
    for a in axes:
        if not -ndim <= a < ndim:
            raise ShapeError('%s %d is out of range for data with %d dimensions'
                             % (what, a, ndim))
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ShapeError('%s %s has duplicates' % (what, tuple(axes)))
    return tuple(sorted(out))


def reduced_shape(shape, axes, keepdims):
    """``shape`` without ``axes`` (or with 1 there if ``keepdims``); () becomes (1,)."""
    if keepdims:
        out = tuple(1 if i in axes else d for i, d in enumerate(shape))
    else:
        out = tuple(d for i, d in enumerate(shape) if i not in axes)
    return out or (1,)


def _expand(xp, g, shape):
    """``g`` broadcast to ``shape`` as an array that owns its memory."""
    return xp.broadcast_to(g, shape).copy()


class _ReduceBase(Operator):
    """Reduce ``data`` over ``axes(ndim)``; subclasses give ``reduce`` and ``grad``."""

    # backward needs at least the input's shape
    needs_inputs = True

    def axes(self, ndim):
        raise NotImplementedError

    def out_dtype_of(self, x):
        return x.dtype

    def infer_shape(self, in_shapes):
        s = in_shapes[0]
        if s is None:
            return [None], [None], []
        return [s], [reduced_shape(s, self.axes(len(s)), self.keepdims)], []

    def reduce(self, xp, x, axes):
        """The reduction with ``keepdims=True``."""
        raise NotImplementedError

    def grad(self, xp, x, yk, dyk, axes):
        """d/dx given the output ``yk`` and its gradient ``dyk`` in keepdims shape."""
        raise NotImplementedError

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        axes = self.axes(x.ndim)
        y = self.reduce(xp, x, axes).astype(self.out_dtype_of(x), copy=False)
        return [y.reshape(reduced_shape(x.shape, axes, self.keepdims))]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        if not need[0]:
            return [None]
        x = inputs[0]
        axes = self.axes(x.ndim)
        kshape = reduced_shape(x.shape, axes, True)
        y = outputs[0] if outputs else None
        yk = None if y is None else y.reshape(kshape)
        return [self.grad(xp, x, yk, out_grads[0].reshape(kshape), axes)]


class _Reduce(_ReduceBase):
    """A reduction with MXNet's ``axis``, ``keepdims`` and ``exclude``."""

    axis = Param('axis', None, doc='The axis or axes along which to perform the reduction.')
    keepdims = Param(bool, False, doc='Keep the reduced axes with size 1.')
    exclude = Param(bool, False, doc='Reduce over the axes NOT in axis instead.')

    def axes(self, ndim):
        if self.axis is None or self.axis == ():
            return tuple(range(ndim))
        axes = normalize_axes(self.axis, ndim)
        if self.exclude:
            axes = tuple(i for i in range(ndim) if i not in axes)
        return axes


@register
class SquareSum(_Reduce):
    """``sum(data ** 2)`` over the axes (MXNet's ``_square_sum``, which its CPU build runs on
    row_sparse data only: here on dense data, as its GPU and dense fallback define it)."""

    name = '_square_sum'

    def reduce(self, xp, x, axes):
        return xp.sum(x * x, axis=axes, keepdims=True)

    def grad(self, xp, x, yk, dyk, axes):
        return (2 * x * dyk).astype(x.dtype, copy=False)


@register
class Sum(_Reduce):
    name, aliases = 'sum', ('sum_axis',)

    def reduce(self, xp, x, axes):
        return xp.sum(x, axis=axes, keepdims=True)

    def grad(self, xp, x, yk, dyk, axes):
        return _expand(xp, dyk, x.shape)


@register
class Mean(_Reduce):
    name = 'mean'

    def reduce(self, xp, x, axes):
        return xp.mean(x, axis=axes, keepdims=True)

    def grad(self, xp, x, yk, dyk, axes):
        n = 1
        for a in axes:
            n *= x.shape[a]
        return _expand(xp, dyk / float(n), x.shape)


@register
class Max(_Reduce):
    name, aliases = 'max', ('max_axis',)
    needs_outputs = True

    def reduce(self, xp, x, axes):
        return xp.max(x, axis=axes, keepdims=True)

    def grad(self, xp, x, yk, dyk, axes):
        return dyk * (x == yk)


@register
class Min(_Reduce):
    name, aliases = 'min', ('min_axis',)
    needs_outputs = True

    def reduce(self, xp, x, axes):
        return xp.min(x, axis=axes, keepdims=True)

    def grad(self, xp, x, yk, dyk, axes):
        return dyk * (x == yk)


@register
class Prod(_Reduce):
    name = 'prod'
    needs_outputs = True

    def reduce(self, xp, x, axes):
        return xp.prod(x, axis=axes, keepdims=True)

    def grad(self, xp, x, yk, dyk, axes):
        return dyk * yk / x


@register
class Nansum(_Reduce):
    """Sum treating NaN as 0; NaN inputs get a zero gradient."""

    name = 'nansum'

    def reduce(self, xp, x, axes):
        return xp.sum(xp.where(xp.isnan(x), 0, x), axis=axes, keepdims=True)

    def grad(self, xp, x, yk, dyk, axes):
        return xp.where(xp.isnan(x), 0, dyk)


@register
class Nanprod(_Reduce):
    """Product treating NaN as 1; NaN inputs get a zero gradient."""

    name = 'nanprod'
    needs_outputs = True

    def reduce(self, xp, x, axes):
        return xp.prod(xp.where(xp.isnan(x), 1, x), axis=axes, keepdims=True)

    def grad(self, xp, x, yk, dyk, axes):
        return xp.where(xp.isnan(x), 0, dyk * yk / x)


@register
class Norm(_ReduceBase):
    """L1 or L2 norm over ``axis`` (elementwise, also for two axes), as MXNet computes it."""

    name = 'norm'
    ord = Param(int, 2, doc='Order of the norm: 1 or 2.', choices=(1, 2))
    axis = Param('axis', None, doc='The axis or axes along which to compute the norm.')
    out_dtype = Param('dtype', None, doc='The data type of the output.',
                      choices=[np_dtype(t) for t in ('float16', 'float32', 'float64',
                                                     'int32', 'int64', 'int8')])
    keepdims = Param(bool, False, doc='Keep the reduced axes with size 1.')
    needs_outputs = True

    def axes(self, ndim):
        return normalize_axes(self.axis, ndim)

    def out_dtype_of(self, x):
        return x.dtype if self.out_dtype is None else self.out_dtype

    def infer_type(self, in_types):
        t = in_types[0]
        return [t], [self.out_dtype if self.out_dtype is not None else t], []

    def reduce(self, xp, x, axes):
        if self.ord == 1:
            return xp.sum(xp.abs(x), axis=axes, keepdims=True)
        # scaled by the largest magnitude, as MXNet: no overflow or underflow of x * x
        m = xp.max(xp.abs(x), axis=axes, keepdims=True) if x.size else \
            xp.zeros_like(xp.sum(x, axis=axes, keepdims=True))
        safe = xp.where(m > 0, m, xp.ones_like(m))
        return m * xp.sqrt(xp.sum((x / safe) ** 2, axis=axes, keepdims=True))

    def grad(self, xp, x, yk, dyk, axes):
        if self.ord == 1:
            return dyk * xp.sign(x)
        return dyk * x / yk.astype(x.dtype, copy=False)


# --- index of the extreme value ----------------------------------------------------------
class _ArgReduce(Operator):
    """Index of the max/min along one axis, in the input's dtype; zero gradient."""

    no_grad = True
    needs_inputs = True
    func = 'argmax'

    def axis_keep(self):
        """(axis or None, keepdims)."""
        return self.axis, self.keepdims

    def infer_shape(self, in_shapes):
        s = in_shapes[0]
        if s is None:
            return [None], [None], []
        axis, keep = self.axis_keep()
        return [s], [reduced_shape(s, normalize_axes(axis, len(s)), keep)], []

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        axis, keep = self.axis_keep()
        f = getattr(xp, self.func)
        out = f(x.reshape(-1)) if axis is None else f(x, axis=axis)
        shape = reduced_shape(x.shape, normalize_axes(axis, x.ndim), keep)
        return [xp.asarray(out).astype(x.dtype).reshape(shape)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        return [xp.zeros_like(inputs[0]) if need[0] else None]


@register
class Argmax(_ArgReduce):
    name = 'argmax'
    axis = Param('axis', None, doc='The axis along which to search; None flattens.')
    keepdims = Param(bool, False, doc='Keep the reduced axis with size 1.')

    def check(self):
        if isinstance(self.axis, tuple):
            raise ParameterError('%s: axis must be an int or None, got %s'
                                 % (self.name, self.axis))


@register
class Argmin(Argmax):
    name, func = 'argmin', 'argmin'


@register
class ArgmaxChannel(_ArgReduce):
    """argmax along axis 1."""

    name = 'argmax_channel'

    def axis_keep(self):
        return 1, False


# --- pick ------------------------------------------------------------------------------------
@register
class Pick(Operator):
    """Pick ``data[..., index[...], ...]`` along ``axis``; indices are clipped or wrapped.

    ``index`` is truncated toward zero (MXNet casts it to int); the gradient goes to the
    picked elements, and ``index`` gets a zero gradient.
    """

    name = 'pick'
    aliases = ('choose_element_0index',)       # MXNet 1.9.1's old name, same operator
    axis = Param('axis', -1, doc='The axis to pick the elements along.')
    keepdims = Param(bool, False, doc='Keep the picked axis with size 1.')
    mode = Param(str, 'clip', doc='How out-of-bound indices behave.', choices=('clip', 'wrap'))
    needs_inputs = True

    def check(self):
        if self.axis is None or isinstance(self.axis, tuple):
            raise ParameterError('pick: axis must be an int (axis=None is not supported by '
                                 'MXNet either), got %s' % (self.axis,))

    def list_arguments(self):
        return ['data', 'index']

    def infer_shape(self, in_shapes):
        data, index = in_shapes[:2]
        if data is None:
            return [data, index], [None], []
        axes = normalize_axes(self.axis, len(data))
        expected = reduced_shape(data, axes, False)
        if index is None:
            index = expected
        elif tuple(index) != reduced_shape(data, axes, True):
            # with keepdims MXNet also accepts the index in keepdims shape
            try:
                index = unify_shape(index, expected)
            except ShapeError:
                raise ShapeError('index has shape %s but data of shape %s needs %s for '
                                 'axis %d' % (tuple(index), tuple(data), expected,
                                              self.axis)) from None
        return [data, index], [reduced_shape(data, axes, self.keepdims)], []

    def infer_type(self, in_types):
        # the index has its own dtype (MXNet does not infer it)
        return list(in_types[:2]), [in_types[0]], []

    def _index(self, xp, x, index):
        """Integer indices in keepdims shape."""
        axis = normalize_axes(self.axis, x.ndim)[0]
        n = x.shape[axis]
        idx = index.astype('int64')
        idx = xp.clip(idx, 0, n - 1) if self.mode == 'clip' else xp.mod(idx, n)
        return axis, idx.reshape(reduced_shape(x.shape, (axis,), True))

    def forward(self, xp, inputs, aux, is_train):
        x, index = inputs
        axis, idx = self._index(xp, x, index)
        y = xp.take_along_axis(x, idx, axis)
        return [y.reshape(reduced_shape(x.shape, (axis,), self.keepdims))]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        x, index = inputs
        gx = None
        if need[0]:
            axis, idx = self._index(xp, x, index)
            gx = xp.zeros_like(x)
            xp.put_along_axis(gx, idx, out_grads[0].reshape(idx.shape), axis)
        return [gx, xp.zeros_like(index) if need[1] else None]


# --- cumsum ------------------------------------------------------------------------------
@register
class Cumsum(Operator):
    """Running sum along ``axis`` (the flattened input when None)."""

    name = '_np_cumsum'
    aliases = ('cumsum',)
    axis = Param(int, None, doc='axis of the running sum; None flattens the input')
    dtype = Param('dtype', None, doc='output and accumulator type',
                  choices=('float16', 'float32', 'float64', 'int32', 'int64', 'int8'))

    def list_arguments(self):
        return ['a']

    def infer_shape(self, in_shapes):
        s = in_shapes[0]
        if s is None:
            return [None], [None], []
        s = tuple(s)
        if self.axis is None:
            return [s], [(prod(s),) if all(d > 0 for d in s) else None], []
        norm_axis(self.axis, len(s), 'cumsum: axis')
        return [s], [s], []

    def _out_type(self, t):
        if self.dtype is not None:
            return np.dtype(self.dtype)
        return np.dtype('int64') if np.dtype(t) == np.bool_ else np.dtype(t)

    def infer_type(self, in_types):
        t = in_types[0]
        return [t], [None if t is None else self._out_type(t)], []

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        dt = self._out_type(x.dtype)
        if self.axis is None:
            return [xp.cumsum(x.reshape(-1), dtype=dt)]
        return [xp.cumsum(x, axis=norm_axis(self.axis, x.ndim, 'cumsum: axis'), dtype=dt)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        x, g = inputs[0], out_grads[0]
        ax = 0 if self.axis is None else norm_axis(self.axis, x.ndim, 'cumsum: axis')
        r = xp.flip(xp.cumsum(xp.flip(g, axis=ax), axis=ax), axis=ax)
        return [r.reshape(x.shape).astype(x.dtype, copy=False)]


# --- moments ------------------------------------------------------------------------------
@register
class Moments(Operator):
    """Mean and (population) variance over ``axes``."""

    name = 'moments'
    needs_outputs = True
    axes = Param('shape', None, doc='axes along which to compute mean and variance')
    keepdims = Param(bool, False, doc='keep the reduced axes with length 1')

    def list_outputs(self):
        return ['output0', 'output1']

    def _axes(self, ndim):
        if not self.axes:
            raise ShapeError('moments: empty axes are not supported; pass all axes for '
                             'global moments')
        axes = sorted(norm_axis(a, ndim, 'moments: axis') for a in self.axes)
        for a, b in zip(axes, axes[1:]):
            if a == b:
                raise ShapeError('moments: duplicate axes %s' % (self.axes,))
        return tuple(axes)

    def _out(self, s):
        axes = self._axes(len(s))
        if self.keepdims:
            return tuple(1 if i in axes else d for i, d in enumerate(s))
        out = tuple(d for i, d in enumerate(s) if i not in axes)
        return out or (1,)

    def infer_shape(self, in_shapes):
        s = in_shapes[0]
        if s is None:
            return [None], [None, None], []
        o = self._out(tuple(s))
        return [tuple(s)], [o, o], []

    def infer_type(self, in_types):
        t = in_types[0]
        return [t], [t, t], []

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        axes = self._axes(x.ndim)
        n = 1
        for a in axes:
            n *= x.shape[a]
        out = self._out(x.shape)
        if x.dtype.kind in 'iub':
            mean = xp.trunc(x.sum(axis=axes, keepdims=True, dtype=np.int64) / n)
            mean = mean.astype(np.int64)
            var = xp.trunc(((x - mean) ** 2).sum(axis=axes, dtype=np.int64) / n)
            return [mean.astype(x.dtype).reshape(out), var.astype(x.dtype).reshape(out)]
        xc = x.astype(np.float32) if x.dtype == np.float16 else x
        mean = xc.mean(axis=axes, keepdims=True)
        var = ((xc - mean) ** 2).mean(axis=axes)
        return [mean.astype(x.dtype, copy=False).reshape(out),
                var.astype(x.dtype, copy=False).reshape(out)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        x = inputs[0]
        axes = self._axes(x.ndim)
        keep = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
        n = 1
        for a in axes:
            n *= x.shape[a]
        gm, gv = out_grads[0], out_grads[1]
        mean = outputs[0].reshape(keep)
        g = xp.zeros(x.shape, dtype=x.dtype)
        if gm is not None:
            g = g + gm.reshape(keep) / x.dtype.type(n)
        if gv is not None:
            g = g + gv.reshape(keep) * (x - mean) * x.dtype.type(2.0 / n)
        return [g.astype(x.dtype, copy=False)]
