"""Bases and integer arithmetic shared by the elementwise families (a helper module).

``Unary`` is the base of ``ops/unary.py`` and ``ops/special.py``; ``c_divide`` and
``python_mod`` give MXNet's integer division and modulo to ``ops/scalar.py`` and
``ops/binary.py``.
"""
import numbers

import numpy as np

from symgraph.opdef import Operator


class Unary(Operator):
    """y = f(x); subclasses give ``fn(xp, x)`` (or ``ufunc``) and ``grad(xp, x, y, dy)``."""

    needs_inputs = True
    needs_outputs = False
    inplace = ((0, 0),)
    #: name of the ``xp`` function computing the forward, when there is one
    ufunc = None
    #: the ``xp`` function keeps integer dtypes (no cast back needed)
    keeps_dtype = False

    def fn(self, xp, x):
        return getattr(xp, self.ufunc)(x).astype(x.dtype, copy=False)

    def grad(self, xp, x, y, dy):
        raise NotImplementedError

    def forward(self, xp, inputs, aux, is_train):
        return [self.fn(xp, inputs[0])]

    def fast_forward(self, xp, is_train, in_dtypes=None):
        if self.ufunc is not None and type(self).fn is Unary.fn:
            f = getattr(xp, self.ufunc)
            if self.keeps_dtype:
                return f
            return lambda x: f(x).astype(x.dtype, copy=False)
        fn = self.fn
        return lambda x: fn(xp, x)

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        if not need[0]:
            return [None]
        x = inputs[0] if inputs else None
        y = outputs[0] if outputs else None
        return [self.grad(xp, x, y, out_grads[0])]


class ZeroGrad(Unary):
    """A piecewise-constant function: MXNet gives it a zero gradient."""

    needs_inputs = False
    no_grad = True

    def grad(self, xp, x, y, dy):
        return xp.zeros_like(dy)


def c_divide(xp, a, b):
    """Integer a / b truncated towards zero, as in C (0 where b == 0)."""
    with np.errstate(divide='ignore', invalid='ignore'):
        q = xp.floor_divide(a, b)
        r = a - q * b
    return q + ((r != 0) & ((a < 0) != (b < 0)) & (b != 0)).astype(q.dtype)


def python_mod(xp, a, b):
    """a mod b with the divisor's sign, and 0 where b == 0, as MXNet's ``mod`` (NumPy
    gives NaN for floats, and warns). Floats follow MXNet's formula through ``fmod`` to the
    sign of a zero result too (0 mod -1 is +0, -0 mod 1 is -0, -2 mod -2 is -0)."""
    fa = getattr(a, 'dtype', None) is not None and a.dtype.kind == 'f'
    fb = getattr(b, 'dtype', None) is not None and b.dtype.kind == 'f'
    if fa or fb or isinstance(a, float) or isinstance(b, float):
        return _mxnet_fmod_mod(xp, a, b)
    if isinstance(b, numbers.Number):
        return xp.zeros_like(a) if b == 0 else xp.mod(a, b)
    zero = b == 0
    r = xp.mod(a, xp.where(zero, xp.ones_like(b), b))
    return xp.where(zero, xp.zeros_like(r), r)


def _mxnet_fmod_mod(xp, a, b):
    """MXNet's mshadow_op::mod for floats: fmod of magnitudes, then shifted by b where the
    signs differ and the remainder is not zero; 0 where b == 0."""
    dt = (a if hasattr(a, 'dtype') else b).dtype
    a, b = xp.asarray(a, dtype=dt), xp.asarray(b, dtype=dt)
    zero = xp.zeros((), dt)
    with np.errstate(invalid='ignore', divide='ignore'):
        f_pos = xp.fmod(xp.abs(a), xp.abs(b))          # fmod(-a, b) or fmod(a, -b) etc.
        neg_a, neg_b = a < 0, b < 0
        # b > 0: a >= 0 -> fmod(a, b); a < 0 -> -fmod(-a, b) + (that != 0 ? b : 0)
        # b < 0: a < 0 -> -fmod(-a, -b); a >= 0 -> fmod(a, -b) + (that != 0 ? b : 0)
        shift = xp.where(f_pos != 0, b, zero)
        r = xp.where(neg_a, -f_pos, xp.fmod(a, xp.abs(b)))
        r = xp.where(neg_a != neg_b, r + shift, r)
    return xp.where(b == 0, zero, r).astype(dt, copy=False)
