"""Matrix products: ``dot``, ``batch_dot`` and ``khatri_rao``.

``dot`` follows MXNet's N-D rule: ``lhs`` is viewed as 2-D (all axes but the last, the last)
and ``rhs`` as (the first axis, all others); ``transpose_a`` / ``transpose_b`` move the
contracted axis of a view to the other end. Two vectors give shape (1,).

``khatri_rao(arg0, ...)``: the column-wise Kronecker product of (M_k, N) matrices; no
gradient (as in MXNet). Deliberate difference: it requires 2-D inputs in shape inference
and float inputs in type inference (MXNet accepts more there and fails at run time).
"""
from math import prod

import numpy as np

from symgraph.opdef import (Operator, Param, ShapeError, TypeInferenceError, register, same_type,
                            unify_shape)
from symgraph.base import ArgumentError, ParameterError

_STYPES = (None, 'None', 'csr', 'default', 'row_sparse')


def _split(shape, first):
    """Split a shape into (kept, contracted) per MXNet's dot rule.

    ``first`` says whether the contracted axis is the first one (lhs with transpose_a,
    rhs without transpose_b) or the last one.
    """
    shape = tuple(shape)
    if len(shape) == 1:
        return (), shape
    return (shape[1:], shape[:1]) if first else (shape[:-1], shape[-1:])


class _DotBase(Operator):
    transpose_a = Param(bool, False, doc='transpose the first input before the product')
    transpose_b = Param(bool, False, doc='transpose the second input before the product')
    forward_stype = Param(str, None, doc='storage type hint of the output (dense only here)')

    def check(self):
        if self.forward_stype not in _STYPES:
            raise ArgumentError('forward_stype must be one of None, csr, default, row_sparse')

    def list_arguments(self):
        return ['lhs', 'rhs']


@register
class Dot(_DotBase):
    """Dot product of two arrays (see the module docstring for N-D inputs)."""

    name = 'dot'

    infer_shape_uses_outputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        a, b = in_shapes[:2]
        if a is None or b is None:
            return [a, b], [None], []
        ka, ca = _split(a, self.transpose_a)
        kb, cb = _split(b, not self.transpose_b)
        if len(a) == 1 and len(b) == 1:
            ka = kb = ()
        pa, pb = prod(ca), prod(cb)
        if pa and pb and pa != pb:
            raise ShapeError('dot: %r %s and %r %s do not match (transpose_a=%s, '
                             'transpose_b=%s)' % ('lhs', tuple(a), 'rhs', tuple(b),
                                                  self.transpose_a, self.transpose_b))
        out = tuple(ka) + tuple(kb)
        return [a, b], [out or (1,)], []

    def _mats(self, a, b):
        """2-D views (M, K) and (K, N) of the operands, and the output shape."""
        ka, _ = _split(a.shape, self.transpose_a)
        kb, _ = _split(b.shape, not self.transpose_b)
        if a.ndim == 1:
            a2 = a.reshape(1, -1)
        elif self.transpose_a:
            a2 = a.reshape(a.shape[0], -1).T
        else:
            a2 = a.reshape(-1, a.shape[-1])
        if b.ndim == 1:
            b2 = b.reshape(-1, 1)
        elif self.transpose_b:
            b2 = b.reshape(-1, b.shape[-1]).T
        else:
            b2 = b.reshape(b.shape[0], -1)
        return a2, b2, (tuple(ka) + tuple(kb)) or (1,)

    def forward(self, xp, inputs, aux, is_train):
        a, b = inputs
        a2, b2, out = self._mats(a, b)
        return [xp.matmul(a2, b2).reshape(out)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        a, b = inputs
        a2, b2, _ = self._mats(a, b)
        g = out_grads[0].reshape(a2.shape[0], b2.shape[1])
        ga = gb = None
        if need[0]:
            ga = xp.matmul(g, b2.T)
            ga = (ga.T if self.transpose_a and a.ndim > 1 else ga).reshape(a.shape)
        if need[1]:
            gb = xp.matmul(a2.T, g)
            gb = (gb.T if self.transpose_b and b.ndim > 1 else gb).reshape(b.shape)
        return [ga, gb]


@register
class BatchDot(_DotBase):
    """Batched matrix product over the leading axes: (..., M, K) x (..., K, N)."""

    name = 'batch_dot'

    infer_shape_uses_outputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        a, b = in_shapes[:2]
        if a is None or b is None:
            return [a, b], [None], []
        if len(a) < 3 or len(a) != len(b):
            raise ShapeError('batch_dot: %r %s and %r %s must both be at least 3-D with the '
                             'same number of dimensions' % ('lhs', tuple(a), 'rhs', tuple(b)))
        if not a[-1] or not b[-2]:
            # MXNet's BatchDotShape infers nothing until lhs's last and rhs's second-last
            # dimensions are known (whatever the transposes; its test_infer_shape.py)
            return [a, b], [None], []
        m, ka = (a[-1], a[-2]) if self.transpose_a else (a[-2], a[-1])
        kb, n = (b[-1], b[-2]) if self.transpose_b else (b[-2], b[-1])
        batch = []
        for x, y in zip(a[:-2], b[:-2]):
            if x and y and x != y:
                raise ShapeError('batch_dot: batch dimensions of %r %s and %r %s differ'
                                 % ('lhs', tuple(a), 'rhs', tuple(b)))
            batch.append(x or y)
        if ka and kb and ka != kb:
            raise ShapeError('batch_dot: %r %s and %r %s do not match (transpose_a=%s, '
                             'transpose_b=%s)' % ('lhs', tuple(a), 'rhs', tuple(b),
                                                  self.transpose_a, self.transpose_b))
        return [a, b], [tuple(batch) + (m, n)], []

    def forward(self, xp, inputs, aux, is_train):
        a, b = inputs
        a = xp.swapaxes(a, -1, -2) if self.transpose_a else a
        b = xp.swapaxes(b, -1, -2) if self.transpose_b else b
        return [xp.matmul(a, b)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        a, b = inputs
        g = out_grads[0]
        t = (lambda m: xp.swapaxes(m, -1, -2))
        ga = gb = None
        if need[0]:
            # d(A' B) / dA' = G B'^T, with A' = A or A^T
            bb = t(b) if self.transpose_b else b
            ga = xp.matmul(g, t(bb))
            ga = t(ga) if self.transpose_a else ga
        if need[1]:
            aa = t(a) if self.transpose_a else a
            gb = xp.matmul(t(aa), g)
            gb = t(gb) if self.transpose_b else gb
        return [xp.ascontiguousarray(ga) if ga is not None else None,
                xp.ascontiguousarray(gb) if gb is not None else None]


@register
class KhatriRao(Operator):
    """Column-wise Kronecker product of ``num_args`` matrices (M_k, N) -> (prod M_k, N)."""

    name = 'khatri_rao'
    key_var_num_args = 'num_args'
    num_args = Param(int, doc='Number of input matrices.')
    no_grad = True

    def check(self):
        if self.num_args < 1:
            raise ParameterError('khatri_rao needs num_args >= 1, got %d' % self.num_args)

    def list_arguments(self):
        return ['arg%d' % i for i in range(self.num_args)]

    infer_shape_uses_outputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        shapes = list(in_shapes[:self.num_args])
        cols = None
        for k, s in enumerate(shapes):
            if s is None:
                continue
            if len(s) != 2:
                raise ShapeError('khatri_rao: argument %r has shape %s but must be a matrix'
                                 % ('arg%d' % k, tuple(s)))
            try:
                cols = unify_shape(cols, s[1:])
            except ShapeError:
                raise ShapeError('khatri_rao: argument %r has %d columns but the other '
                                 'inputs %d' % ('arg%d' % k, s[1], cols[0])) from None
        if any(s is None for s in shapes):
            return shapes, [None], []
        return shapes, [(int(np.prod([s[0] for s in shapes])), cols[0])], []

    def infer_type(self, in_types):
        t = same_type(self, in_types)
        if t is not None and t not in (np.float32, np.float64):
            raise TypeInferenceError('khatri_rao: inputs have type %s; MXNet implements '
                                     'float32 and float64' % t.name)
        return [t] * self.num_args, [t], []

    def forward(self, xp, inputs, aux, is_train):
        out = inputs[0]
        for x in inputs[1:]:            # one step per input matrix
            out = (out[:, None, :] * x[None, :, :]).reshape(-1, x.shape[1])
        return [out.copy() if out is inputs[0] else out]
