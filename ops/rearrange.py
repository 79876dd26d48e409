"""Copies of the data in a new arrangement: ``tile``, ``repeat``, ``Pad`` (``pad``),
``reverse`` (``flip``), ``depth_to_space`` and ``space_to_depth``. Backward is the inverse
rearrangement (summing over the copies for ``tile`` and ``repeat``).

MXNet 1.9.1 semantics:

* ``Pad`` takes 4-D or 5-D input and pads only the spatial axes: ``pad_width`` has
  ``2 * ndim`` entries ``(before_0, after_0, ...)`` whose first four are zero. Modes
  'constant' (``constant_value``), 'edge' (repeat the border) and 'reflect' (mirror
  without repeating the border, NumPy's 'reflect'; each width below the axis length).
  Floating point types only.
* ``reverse`` flips the axes in ``axis`` (a tuple; an axis given twice flips back).
  Negative axes are rejected: MXNet fails on them at run time.
* ``depth_to_space`` / ``space_to_depth`` (4-D NCHW, ``block_size`` b): channel index
  ``(b1 * b + b2) * C' + c`` maps to pixel ``(h * b + b1, w * b + b2)`` and back.

Deliberate differences: shape errors MXNet only raises at run time (a negative or out of
range ``reverse`` axis) are raised by shape inference here; partially known shapes
propagate unknown dimensions (MXNet 1.9.1 turns an unknown -1 into wrong sizes or
errors, e.g. ``Pad`` of an unknown height gives height ``pad - 1``).
"""
from math import prod

import numpy as np

from symgraph.base import ParameterError
from symgraph.opdef import (Operator, Param, ShapeError, TypeInferenceError, register,
                            shape_known)

from ._util import Layout, norm_axis


# --- Pad ---------------------------------------------------------------------------
def _pad_index(n, before, after, mode):
    """Source index of each output position along one axis (edge / reflect)."""
    j = np.arange(-before, n + after)
    if mode == 'edge':
        return np.clip(j, 0, n - 1)
    j = np.abs(j)
    return np.where(j > n - 1, 2 * (n - 1) - j, j)


@register
class Pad(Operator):
    """Pad the spatial axes of 4-D / 5-D data (see the module docstring)."""

    name = 'Pad'
    aliases = ('pad',)
    needs_inputs = False
    mode = Param(str, doc='padding type', choices=('constant', 'edge', 'reflect'))
    pad_width = Param('shape', doc='(before_1, after_1, ..., before_N, after_N)')
    constant_value = Param(float, 0.0, doc='the value of constant padding')

    def _pairs(self, ndim):
        return [(self.pad_width[2 * i], self.pad_width[2 * i + 1]) for i in range(ndim)]

    def infer_shape(self, in_shapes):
        s = in_shapes[0]
        if s is None:
            return [None], [None], []
        s = tuple(s)
        if len(s) not in (4, 5):
            raise ShapeError('Pad: only 4-D or 5-D input is supported, data has shape %s'
                             % (s,))
        if any(self.pad_width[:4]):
            raise ShapeError('Pad: padding on the first two axes must be zero, got '
                             'pad_width=%s' % (self.pad_width,))
        if len(self.pad_width) != 2 * len(s):
            raise ShapeError('Pad: pad_width %s needs %d entries for data of shape %s'
                             % (self.pad_width, 2 * len(s), s))
        out = []
        for d, (b, a) in zip(s, self._pairs(len(s))):
            if b < 0 or a < 0:
                raise ShapeError('Pad: negative pad_width %s' % (self.pad_width,))
            if self.mode == 'reflect' and d > 0 and (b >= d or a >= d):
                raise ShapeError('Pad: reflect padding must be smaller than the axis, got '
                                 'pad_width=%s for data of shape %s' % (self.pad_width, s))
            out.append(d + b + a if d > 0 else 0)
        return [s], [tuple(out)], []

    def infer_type(self, in_types):
        t = in_types[0]
        if t is not None and np.dtype(t).kind != 'f':
            raise TypeInferenceError('Pad: only floating point types are supported, data '
                                     'has type %s' % np.dtype(t).name)
        return [t], [t], []

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        pairs = self._pairs(x.ndim)
        if self.mode == 'constant':
            shape = tuple(d + b + a for d, (b, a) in zip(x.shape, pairs))
            out = xp.full(shape, self.constant_value, dtype=x.dtype)
            out[tuple(slice(b, b + d) for d, (b, _) in zip(x.shape, pairs))] = x
            return [out]
        for ax in range(2, x.ndim):
            b, a = pairs[ax]
            if b or a:
                x = xp.take(x, xp.asarray(_pad_index(x.shape[ax], b, a, self.mode)), axis=ax)
        return [x]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        g = out_grads[0]
        pairs = self._pairs(g.ndim)
        if self.mode == 'constant':
            return [g[tuple(slice(b, d - a) for d, (b, a) in zip(g.shape, pairs))]]
        for ax in range(g.ndim - 1, 1, -1):
            b, a = pairs[ax]
            if b or a:
                n = g.shape[ax] - b - a
                idx = _pad_index(n, b, a, self.mode)
                m = xp.asarray((idx[:, None] == np.arange(n)[None, :]).astype(g.dtype))
                g = xp.moveaxis(xp.tensordot(g, m, axes=([ax], [0])), -1, ax)
        return [g]


# --- reverse -------------------------------------------------------------------------
@register
class Reverse(Operator):
    """Reverse the order of elements along the axes in ``axis``."""

    name = 'reverse'
    aliases = ('flip',)
    needs_inputs = False
    axis = Param('shape', doc='the axes to reverse')

    def _check(self, ndim):
        for a in self.axis:
            if not 0 <= a < ndim:
                raise ShapeError('reverse: axis %d is out of range for data with %d '
                                 'dimensions (MXNet accepts no negative axis here)'
                                 % (a, ndim))

    infer_shape_uses_outputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        s = in_shapes[0]
        if s is None and out_shapes:
            s = out_shapes[0]
        if s is not None:
            self._check(len(s))
        return [s], [s], []

    def _flip(self, x):
        self._check(x.ndim)
        odd = {a for a in self.axis if self.axis.count(a) % 2}
        return x[tuple(slice(None, None, -1) if i in odd else slice(None)
                       for i in range(x.ndim))]

    def forward(self, xp, inputs, aux, is_train):
        return [self._flip(inputs[0])]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        return [self._flip(out_grads[0])]


# --- depth_to_space / space_to_depth -----------------------------------------------------
class _Block(Operator):
    needs_inputs = False
    block_size = Param(int, doc='blocks of [block_size, block_size] are moved')

    def check(self):
        if self.block_size < 1:
            raise ParameterError('%s: block_size must be a positive integer, got %d'
                                 % (self.name, self.block_size))

    def infer_shape(self, in_shapes):
        s = in_shapes[0]
        if s is None:
            return [None], [None], []
        s = tuple(s)
        if len(s) != 4:
            raise ShapeError('%s: data must be 4-D, got shape %s' % (self.name, s))
        return [s], [self.out_shape(s)], []

    def _checked(self, x):
        """``x``, refused where a dimension is 0 (MXNet: "cannot be 0"; inference reads a
        0 as an unknown size, so only the array itself tells)."""
        if 0 in x.shape:
            raise ShapeError('%s: data of shape %s has a dimension of size 0'
                             % (self.name, tuple(x.shape)))
        return x


def _to_space(xp, x, b):
    n, c, h, w = x.shape
    y = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    return y.reshape(n, c // (b * b), h * b, w * b)


def _to_depth(xp, x, b):
    n, c, h, w = x.shape
    y = x.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4)
    return y.reshape(n, c * b * b, h // b, w // b)


@register
class DepthToSpace(_Block):
    """Move channel blocks into ``block_size x block_size`` spatial blocks."""

    name = 'depth_to_space'

    def out_shape(self, s):
        b = self.block_size
        if s[1] > 0 and s[1] % (b * b):
            raise ShapeError('depth_to_space: channels %d of data %s are not a multiple of '
                             'block_size^2 = %d' % (s[1], s, b * b))
        return (s[0], s[1] // (b * b), s[2] * b, s[3] * b)

    def forward(self, xp, inputs, aux, is_train):
        return [_to_space(xp, self._checked(inputs[0]), self.block_size)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        return [_to_depth(xp, out_grads[0], self.block_size)]


@register
class SpaceToDepth(_Block):
    """Move ``block_size x block_size`` spatial blocks into channels."""

    name = 'space_to_depth'

    def out_shape(self, s):
        b = self.block_size
        for ax, what in ((2, 'height'), (3, 'width')):
            if s[ax] > 0 and s[ax] % b:
                raise ShapeError('space_to_depth: %s %d of data %s is not a multiple of '
                                 'block_size %d' % (what, s[ax], s, b))
        return (s[0], s[1] * b * b, s[2] // b, s[3] // b)

    def forward(self, xp, inputs, aux, is_train):
        return [_to_depth(xp, self._checked(inputs[0]), self.block_size)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        return [_to_space(xp, out_grads[0], self.block_size)]


@register
class Tile(Layout):
    """Repeat the whole array ``reps`` times along each axis (NumPy's ``tile``)."""

    name = 'tile'
    reps = Param('shape', doc='repetitions per axis')

    def _full(self, ndim):
        n = max(ndim, len(self.reps))
        return (1,) * (n - len(self.reps)) + tuple(self.reps), n - ndim

    def out_shape(self, s):
        reps, pad = self._full(len(s))
        s = (1,) * pad + tuple(s)
        return tuple(d * r for d, r in zip(s, reps))

    def forward(self, xp, inputs, aux, is_train):
        return [xp.tile(inputs[0], self._full(inputs[0].ndim)[0])]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        x = inputs[0]
        reps, pad = self._full(x.ndim)
        s = (1,) * pad + tuple(x.shape)
        # view the gradient as (r0, s0, r1, s1, ...) and sum over the copies
        inter = []
        for r, d in zip(reps, s):
            inter += [r, d]
        g = out_grads[0].reshape(inter).sum(axis=tuple(range(0, 2 * len(s), 2)))
        return [g.reshape(x.shape)]


@register
class Repeat(Layout):
    """Repeat each element ``repeats`` times along ``axis`` (flattened when None)."""

    name = 'repeat'
    repeats = Param(int, doc='repetitions of each element')
    axis = Param(int, None, doc='axis to repeat along; None repeats the flattened array')

    def out_shape(self, s):
        if self.axis is None:
            return (prod(s) * self.repeats,) if shape_known(s) else (0,)
        a = norm_axis(self.axis, len(s))
        return tuple(s[:a]) + (s[a] * self.repeats,) + tuple(s[a + 1:])

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        if self.axis is None:
            return [xp.repeat(x.reshape(-1), self.repeats)]
        return [xp.repeat(x, self.repeats, axis=norm_axis(self.axis, x.ndim))]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        x = inputs[0]
        g = out_grads[0]
        if self.axis is None:
            return [g.reshape(-1, self.repeats).sum(axis=1).reshape(x.shape)]
        a = norm_axis(self.axis, x.ndim)
        g = g.reshape(x.shape[:a] + (x.shape[a], self.repeats) + x.shape[a + 1:])
        return [g.sum(axis=a + 1)]
