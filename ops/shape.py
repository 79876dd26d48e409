"""Shape manipulation: ``Flatten``, ``Reshape``, ``transpose``, ``SwapAxis``, ``expand_dims``,
``squeeze``, ``reshape_like``, ``shape_array``, ``size_array`` and ``cast_storage`` (dense).

None of these operators computes anything: forward is a view or a copy of the data in a new
layout, and backward is the inverse rearrangement. Copies into a new arrangement (``tile``,
``repeat``, ``Pad``, ``reverse``, ``depth_to_space``...) live in
:mod:`symgraph.ops.rearrange`, joining and slicing in :mod:`symgraph.ops.slicing`,
index-driven gathers in :mod:`symgraph.ops.indexing`.

* ``reshape_like`` gives ``lhs`` the shape ``lhs[:lhs_begin] + rhs[rhs_begin:rhs_end] +
  lhs[lhs_end:]``; both ranges must be non-empty; ``rhs`` gets a zero gradient.
* ``shape_array`` / ``size_array``: the input's shape (``(ndim,)``) and size (``(1,)``)
  as int64; no gradient.

Shape rules follow MXNet 1.9.1. Where MXNet also infers inputs from a known output, the
rule takes an optional ``out_shapes`` (``infer_shape(in_shapes, out_shapes=None)``).
"""
from math import prod

import numpy as np

from symgraph.base import MXNetError
from symgraph.opdef import (Operator, Param, ShapeError, np_dtype, register, shape_known,
                            unify_shape)

from ._util import Layout, norm_axis


def _out(out_shapes, i=0):
    return None if not out_shapes else out_shapes[i]


@register
class Flatten(Layout):
    """Collapse all axes but the first: ``(d0, d1, ..., dk) -> (d0, d1*...*dk)``."""

    name = 'Flatten'
    aliases = ('flatten',)

    def out_shape(self, s):
        if len(s) == 0:
            return None
        return (s[0], prod(s[1:]) if all(d > 0 for d in s[1:]) else 0)

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        return [x.reshape(x.shape[0], -1)]

    def fast_forward(self, xp, is_train, in_dtypes=None):
        return lambda x: x.reshape(x.shape[0], -1)

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        return [out_grads[0].reshape(inputs[0].shape)]


def infer_reshape(spec, dshape, reverse=False):
    """MXNet's ``Reshape`` special values applied to ``dshape`` (-1 marks unknown dims).

    0 copies a dimension, -1 infers one, -2 copies all remaining, -3 merges two, -4 splits
    one into the next two values. With ``reverse`` the special values are matched from
    the right.
    """
    src = list(dshape)[::-1] if reverse else list(dshape)
    spec = list(spec)[::-1] if reverse else list(spec)
    out, j, inf, i = [], 0, -1, 0
    while i < len(spec):
        p = spec[i]
        if p == 0:
            if j >= len(src):
                raise ShapeError('Reshape: shape %s copies a dimension the input %s lacks'
                                 % (tuple(spec), tuple(dshape)))
            out.append(src[j])
            j += 1
        elif p == -1:
            if inf >= 0:
                raise ShapeError('Reshape: one and only one dim can be inferred')
            inf = len(out)
            out.append(1)
            j += 1
        elif p == -2:
            out.extend(src[j:])
            j = len(src)
        elif p == -3:
            if j + 1 >= len(src):
                raise ShapeError('Reshape: -3 needs two input dimensions, input is %s'
                                 % (tuple(dshape),))
            d1, d2 = src[j], src[j + 1]
            out.append(-1 if d1 == -1 or d2 == -1 else d1 * d2)
            j += 2
        elif p == -4:
            if i + 2 >= len(spec) or j >= len(src):
                raise ShapeError('Reshape: -4 needs an input dimension and two values')
            d0, d1, d2 = src[j], spec[i + 1], spec[i + 2]
            j += 1
            i += 2
            if d1 == -1 and d2 == -1:
                raise ShapeError('Reshape: split dims cannot both be -1')
            if d0 != -1:
                d1 = d0 // d2 if d1 == -1 else d1
                d2 = d0 // d1 if d2 == -1 else d2
                if d1 * d2 != d0:
                    raise ShapeError('Reshape: split dims %d, %d do not divide original '
                                     'dim %d' % (d1, d2, d0))
            out += [d1, d2]
        elif p > 0:
            out.append(p)
            j += 1
        else:
            raise ShapeError('Reshape: invalid shape value %d' % p)
        i += 1
    if inf >= 0:
        if all(d > 0 for d in dshape) and all(d > 0 for d in out):
            if prod(dshape) % prod(out):
                raise ShapeError('Reshape: cannot infer -1: size %d is not a multiple of %d'
                                 % (prod(dshape), prod(out)))
            out[inf] = prod(dshape) // prod(out)
        else:
            out[inf] = -1
    return tuple(out[::-1] if reverse else out)


@register
class Reshape(Layout):
    """Reshape with MXNet's special values (see :func:`infer_reshape`)."""

    name = 'Reshape'
    aliases = ('reshape',)
    shape = Param('shape', (), doc='The target shape')
    reverse = Param(bool, False, doc='match special values from right to left')
    target_shape = Param('shape', (), doc='(Deprecated) target shape; one 0 is inferred')
    keep_highest = Param(bool, False, doc='(Deprecated) keep the first input dimension')

    def _target(self, dshape):
        if self.shape:
            return infer_reshape(self.shape, dshape, self.reverse)
        if not self.target_shape:
            raise ShapeError('Reshape: shape is not given')
        t = list(self.target_shape)
        if self.keep_highest:
            t[0] = dshape[0]
        if t.count(0) > 1:
            raise ShapeError('Reshape: one and only one dim can be 0 in target_shape')
        if 0 in t:
            if any(d < 0 for d in dshape):
                t[t.index(0)] = -1
            else:
                rest = prod([d for d in t if d != 0])
                t[t.index(0)] = prod(dshape) // rest
        return tuple(t)

    infer_shape_uses_outputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        d = in_shapes[0]
        o = _out(out_shapes)
        if d is None:
            return [None], [o], []
        dm = tuple(-1 if x == 0 else x for x in d)
        om = list(self._target(dm))
        if o is not None and len(o) == len(om):
            om = [x if x > 0 else (y if y > 0 else -1) for x, y in zip(om, o)]
        dm = list(dm)
        # MXNet's ReverseReshapeInferShape: one unknown dimension on either side is
        # deduced from the total size of the other.
        if om.count(-1) == 0 and dm.count(-1) == 1:
            rest = prod([x for x in dm if x > 0])
            dm[dm.index(-1)] = prod(om) // rest
        elif dm.count(-1) == 0 and om.count(-1) == 1:
            rest = prod([x for x in om if x > 0])
            om[om.index(-1)] = prod(dm) // rest
        if -1 not in dm and -1 not in om and prod(dm) != prod(om):
            raise ShapeError('Reshape: target shape %s has size %d but input %r has shape '
                             '%s (size %d)' % (tuple(om), prod(om), 'data', tuple(dm),
                                               prod(dm)))
        fix = (lambda s: tuple(0 if x < 0 else x for x in s))
        return [fix(dm)], [fix(om)], []

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        return [x.reshape(self._target(x.shape))]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        return [out_grads[0].reshape(inputs[0].shape)]


@register
class Transpose(Layout):
    """Permute axes; empty ``axes`` reverses them."""

    name = 'transpose'
    needs_inputs = False
    axes = Param('shape', (), doc='target axis order; empty reverses the axes')

    def _axes(self, ndim):
        if not self.axes:
            return tuple(range(ndim - 1, -1, -1))
        if len(self.axes) != ndim or sorted(self.axes) != list(range(ndim)):
            raise ShapeError('transpose: axes %s is not a permutation of the %d axes of '
                             'input %r' % (self.axes, ndim, 'data'))
        return self.axes

    infer_shape_uses_outputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        d, o = in_shapes[0], _out(out_shapes)
        if d is None and o is None:
            return [None], [None], []
        ax = self._axes(len(d if d is not None else o))
        inv = [0] * len(ax)
        for i, a in enumerate(ax):
            inv[a] = i
        if o is not None:
            d = unify_shape(d, tuple(o[i] for i in inv), 'transpose input %r' % 'data')
        return [d], [tuple(d[a] for a in ax)], []

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        return [xp.transpose(x, self._axes(x.ndim))]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        g = out_grads[0]
        ax = self._axes(g.ndim)
        inv = [0] * len(ax)
        for i, a in enumerate(ax):
            inv[a] = i
        return [xp.transpose(g, inv)]


@register
class SwapAxis(Layout):
    """Interchange two axes."""

    name = 'SwapAxis'
    aliases = ('swapaxes',)
    needs_inputs = False
    dim1 = Param(int, 0, doc='the first axis to be swapped')
    dim2 = Param(int, 0, doc='the second axis to be swapped')

    def _perm(self, ndim):
        a, b = norm_axis(self.dim1, ndim, 'dim1'), norm_axis(self.dim2, ndim, 'dim2')
        p = list(range(ndim))
        p[a], p[b] = p[b], p[a]
        return p

    infer_shape_uses_outputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        d, o = in_shapes[0], _out(out_shapes)
        if d is None and o is None:
            return [None], [None], []
        p = self._perm(len(d if d is not None else o))
        if o is not None:
            d = unify_shape(d, tuple(o[i] for i in p), 'SwapAxis input %r' % 'data')
        return [d], [tuple(d[i] for i in p)], []

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        return [xp.transpose(x, self._perm(x.ndim))]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        g = out_grads[0]
        return [xp.transpose(g, self._perm(g.ndim))]


@register
class ExpandDims(Layout):
    """Insert a new axis of length 1 at ``axis`` (range [-ndim-1, ndim])."""

    name = 'expand_dims'
    axis = Param(int, doc='position of the new axis')

    def _axis(self, ndim):
        return norm_axis(self.axis, ndim + 1)

    infer_shape_uses_outputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        d, o = in_shapes[0], _out(out_shapes)
        if d is None and o is not None:
            a = norm_axis(self.axis, len(o))
            d = tuple(o[:a]) + tuple(o[a + 1:])
        if d is None:
            return [None], [None], []
        a = self._axis(len(d))
        return [d], [tuple(d[:a]) + (1,) + tuple(d[a:])], []

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        return [xp.expand_dims(x, self._axis(x.ndim))]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        return [out_grads[0].reshape(inputs[0].shape)]


@register
class Squeeze(Layout):
    """Remove axes of length 1 (all of them, or those in ``axis``); never returns ()."""

    name = 'squeeze'
    axis = Param('axis', None, doc='axes to remove; each must have length 1')

    def out_shape(self, s):
        if self.axis is None:
            if any(d == 0 for d in s):
                return None
            out = tuple(d for d in s if d != 1)
        else:
            axes = self.axis if isinstance(self.axis, tuple) else (self.axis,)
            axes = {norm_axis(a, len(s)) for a in axes}
            for a in axes:
                if s[a] not in (1, 0):
                    raise ShapeError('squeeze: axis %d of input %r has length %d, not 1'
                                     % (a, 'data', s[a]))
            out = tuple(d for i, d in enumerate(s) if i not in axes)
        # MXNet keeps at least one dimension
        return out or (1,)

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        return [x.reshape(self.out_shape(x.shape))]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        return [out_grads[0].reshape(inputs[0].shape)]


def _bounds(begin, end, ndim, bname, ename):
    b = 0 if begin is None else begin
    b = b + ndim if b < 0 else b
    e = ndim if end is None else (end + ndim if end < 0 else end)
    if e > ndim:
        raise ShapeError('reshape_like: invalid end %s=%s for %d dimensions'
                         % (ename, end, ndim))
    if b < 0:
        raise ShapeError('reshape_like: invalid begin %s=%s for %d dimensions'
                         % (bname, begin, ndim))
    if not b < e:
        raise ShapeError('reshape_like: invalid range %s=%s, %s=%s (empty for %d '
                         'dimensions)' % (bname, begin, ename, end, ndim))
    return b, e


@register
class ReshapeLike(Operator):
    """Replace ``lhs[lhs_begin:lhs_end]``'s dimensions by ``rhs[rhs_begin:rhs_end]``'s."""

    name = 'reshape_like'
    lhs_begin = Param(int, None, doc='first lhs dimension replaced (default 0)')
    lhs_end = Param(int, None, doc='end of the replaced lhs dimensions (default ndim)')
    rhs_begin = Param(int, None, doc='first rhs dimension used (default 0)')
    rhs_end = Param(int, None, doc='end of the used rhs dimensions (default ndim)')

    def list_arguments(self):
        return ['lhs', 'rhs']

    def _out(self, lhs, rhs):
        lb, le = _bounds(self.lhs_begin, self.lhs_end, len(lhs), 'lhs_begin', 'lhs_end')
        rb, re = _bounds(self.rhs_begin, self.rhs_end, len(rhs), 'rhs_begin', 'rhs_end')
        out = tuple(lhs[:lb]) + tuple(rhs[rb:re]) + tuple(lhs[le:])
        if shape_known(lhs) and shape_known(out) and prod(lhs) != prod(out):
            raise ShapeError('reshape_like: cannot reshape lhs of shape %s to %s (from rhs '
                             '%s): the sizes differ' % (tuple(lhs), out, tuple(rhs)))
        return out

    def infer_shape(self, in_shapes):
        lhs, rhs = in_shapes[0], in_shapes[1]
        if lhs is None or rhs is None:
            return [lhs, rhs], [None], []
        return [tuple(lhs), tuple(rhs)], [self._out(lhs, rhs)], []

    def infer_type(self, in_types):
        return [in_types[0], in_types[1]], [in_types[0]], []

    def forward(self, xp, inputs, aux, is_train):
        return [inputs[0].reshape(self._out(inputs[0].shape, inputs[1].shape))]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        return [out_grads[0].reshape(inputs[0].shape) if need[0] else None,
                xp.zeros_like(inputs[1]) if need[1] else None]


# --- shape_array / size_array ---------------------------------------------------------
class _ShapeInfo(Operator):
    no_grad = True

    def infer_type(self, in_types):
        return [in_types[0]], [np_dtype('int64')], []

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        return [xp.zeros_like(inputs[0]) if need[0] else None]


@register
class ShapeArray(_ShapeInfo):
    """The shape of the input as a 1-D int64 array."""

    name = 'shape_array'

    def infer_shape(self, in_shapes):
        s = in_shapes[0]
        return [s], [None if s is None else (len(s),)], []

    def forward(self, xp, inputs, aux, is_train):
        return [xp.asarray(np.asarray(inputs[0].shape, dtype=np.int64))]


@register
class SizeArray(_ShapeInfo):
    """The number of elements of the input as a (1,) int64 array."""

    name = 'size_array'

    def infer_shape(self, in_shapes):
        return [in_shapes[0]], [(1,)], []

    def forward(self, xp, inputs, aux, is_train):
        return [xp.asarray(np.asarray([inputs[0].size], dtype=np.int64))]


@register
class CastStorage(Operator):
    """``cast_storage``: the dense array unchanged for ``stype='default'``.

    symgraph has dense storage only: 'csr' and 'row_sparse' (MXNet's sparse storage types)
    are refused with an error naming them.
    """

    name = 'cast_storage'
    stype = Param(str, doc="storage type: 'default' (dense); 'csr' and 'row_sparse' are "
                  "refused", choices=['csr', 'default', 'row_sparse'])
    needs_inputs = False
    inplace = ((0, 0),)

    def check(self):
        if self.stype != 'default':
            raise MXNetError("cast_storage: stype=%r is sparse storage, which symgraph does "
                             "not support (dense arrays only: stype='default')" % self.stype)

    def forward(self, xp, inputs, aux, is_train):
        return [inputs[0]]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        return [out_grads[0] if need[0] else None]
