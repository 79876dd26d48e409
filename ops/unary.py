"""Unary elementwise operators: ``exp``, ``log``, ``sqrt``, ``relu``, ``clip``, ``Cast`` ...

Each operator is one small class: the forward function and its derivative, written once
for NumPy and CuPy through ``xp``. Backward uses the forward output where that is
cheaper (``exp``, ``sigmoid``, ``tanh``), which the class declares for the planner.

MXNet keeps the input dtype for every math function (``exp`` of an int32 array is int32),
so results are cast back where the array function would promote (NumPy turns integers
into float64 for transcendental functions). Non-differentiable functions (``sign``,
``floor``, ``round``...) give a zero gradient, as MXNet does.

``_contrib_div_sqrt_dim``: ``data / DType(sqrt(data.shape[-1]))`` (integers divide with
truncation by the truncated root, as MXNet does).
"""
import math
import warnings

import numpy as np

from symgraph.opdef import Operator, Param, register, np_dtype

from ._elemwise import Unary, ZeroGrad
from ._util import f32


# --- exponentials and powers ------------------------------------------------------
@register
class Exp(Unary):
    name, ufunc = 'exp', 'exp'
    needs_inputs, needs_outputs = False, True

    def grad(self, xp, x, y, dy):
        return dy * y


@register
class Log(Unary):
    name, ufunc = 'log', 'log'

    def grad(self, xp, x, y, dy):
        return dy / x


@register
class Log1p(Unary):
    name, ufunc = 'log1p', 'log1p'

    def grad(self, xp, x, y, dy):
        return dy / (x + 1.0)


@register
class Expm1(Unary):
    name, ufunc = 'expm1', 'expm1'
    needs_inputs, needs_outputs = False, True

    def grad(self, xp, x, y, dy):
        return dy * (y + 1.0)


@register
class Sqrt(Unary):
    name, ufunc = 'sqrt', 'sqrt'
    needs_inputs, needs_outputs = False, True

    def grad(self, xp, x, y, dy):
        return dy * 0.5 / y


@register
class Rsqrt(Unary):
    """1 / sqrt(x); d/dx = -y**3 / 2."""

    name = 'rsqrt'
    needs_inputs, needs_outputs = False, True

    def fn(self, xp, x):
        return (1.0 / xp.sqrt(x)).astype(x.dtype, copy=False)

    def grad(self, xp, x, y, dy):
        return dy * (-0.5 * y * y * y)


@register
class Square(Unary):
    name, ufunc, keeps_dtype = 'square', 'square', True

    def grad(self, xp, x, y, dy):
        return dy * (2.0 * x)


@register
class Reciprocal(Unary):
    name, ufunc = 'reciprocal', 'reciprocal'
    needs_inputs, needs_outputs = False, True

    def fn(self, xp, x):
        # xp.reciprocal is integer division for integer arrays; MXNet computes 1/x
        return (1.0 / x).astype(x.dtype, copy=False)

    def grad(self, xp, x, y, dy):
        return -dy * y * y


# --- sign and magnitude -------------------------------------------------------------
@register
class Negative(Unary):
    name, ufunc, keeps_dtype = 'negative', 'negative', True
    needs_inputs = False

    def grad(self, xp, x, y, dy):
        return -dy


@register
class Abs(Unary):
    name, ufunc, keeps_dtype = 'abs', 'abs', True

    def grad(self, xp, x, y, dy):
        return dy * xp.sign(x)


@register
class Sign(ZeroGrad):
    name, ufunc, keeps_dtype = 'sign', 'sign', True


@register
class Floor(ZeroGrad):
    name, ufunc = 'floor', 'floor'


@register
class Ceil(ZeroGrad):
    name, ufunc = 'ceil', 'ceil'


@register
class Round(ZeroGrad):
    """Round half away from zero (MXNet), not half to even (NumPy's ``round``)."""

    name = 'round'

    def fn(self, xp, x):
        if x.dtype.kind in 'iub':     # integers are already round (NumPy 1.x trunc gives floats)
            return x.copy()
        t = xp.trunc(x)
        # x - trunc(x) is exact in floating point, so the halfway test is exact too
        return t + xp.where(xp.abs(x - t) >= 0.5, xp.sign(x), 0).astype(x.dtype, copy=False)


@register
class Rint(ZeroGrad):
    """MXNet's ``rint``: floor(x) + 1 when the fraction is above one half (2.5 -> 2)."""

    name = 'rint'

    def fn(self, xp, x):
        f = xp.floor(x)
        return f + (x - f > 0.5).astype(x.dtype)


@register
class Trunc(ZeroGrad):
    name, ufunc = 'trunc', 'trunc'


@register
class Fix(ZeroGrad):
    name, ufunc = 'fix', 'trunc'   # numpy.fix is deprecated in NumPy 2.5; same rounding


# --- trigonometric ---------------------------------------------------------------------
@register
class Sin(Unary):
    name, ufunc = 'sin', 'sin'

    def grad(self, xp, x, y, dy):
        return dy * xp.cos(x)


@register
class Cos(Unary):
    name, ufunc = 'cos', 'cos'

    def grad(self, xp, x, y, dy):
        return -dy * xp.sin(x)


@register
class Tan(Unary):
    name, ufunc = 'tan', 'tan'
    needs_inputs, needs_outputs = False, True

    def grad(self, xp, x, y, dy):
        return dy * (y * y + 1.0)


@register
class Arctan(Unary):
    name, ufunc = 'arctan', 'arctan'

    def grad(self, xp, x, y, dy):
        return dy / (x * x + 1.0)


# --- activations -----------------------------------------------------------------------
@register
class Relu(Unary):
    name = 'relu'
    needs_inputs, needs_outputs = False, True

    def fn(self, xp, x):
        return xp.maximum(x, 0)

    def fast_forward(self, xp, is_train, in_dtypes=None):
        maximum = xp.maximum
        return lambda x: maximum(x, 0)

    def grad(self, xp, x, y, dy):
        # MXNet's relu_grad passes a NaN through (NaN, not 0, where the input was NaN)
        return xp.where(y != y, y, dy * (y > 0))


@register
class Sigmoid(Unary):
    """1 / (1 + exp(-x)), evaluated through exp(-|x|) so that no exp overflows."""

    name = 'sigmoid'
    needs_inputs, needs_outputs = False, True

    def fn(self, xp, x):
        e = xp.exp(-xp.abs(x))
        r = 1.0 / (e + 1.0)
        return xp.where(x >= 0, r, e * r).astype(x.dtype, copy=False)

    def grad(self, xp, x, y, dy):
        return dy * y * (1.0 - y)


@register
class Tanh(Unary):
    name, ufunc = 'tanh', 'tanh'
    needs_inputs, needs_outputs = False, True

    def grad(self, xp, x, y, dy):
        return dy * (1.0 - y * y)


@register
class Softsign(Unary):
    name = 'softsign'

    def fn(self, xp, x):
        return (x / (xp.abs(x) + 1.0)).astype(x.dtype, copy=False)

    def grad(self, xp, x, y, dy):
        d = xp.abs(x) + 1.0
        return dy / (d * d)


@register
class Clip(Unary):
    """Clip to [a_min, a_max]; the gradient passes where a_min <= x <= a_max (MXNet)."""

    name = 'clip'
    a_min = Param(float, doc='Minimum value')
    a_max = Param(float, doc='Maximum value')

    def check(self):
        if self.a_min > self.a_max:
            warnings.warn('clip: a_min=%g is above a_max=%g, so every value becomes a_max or '
                          'a_min (as in MXNet); the bounds are likely swapped'
                          % (self.a_min, self.a_max), stacklevel=4)

    def fn(self, xp, x):
        # MXNet's order (it matters when a_min > a_max): above a_max, else below a_min
        lo, hi = self.a_min, self.a_max
        if x.dtype.kind in 'iu':
            lo, hi = (np.array(v).astype(x.dtype)[()] for v in (lo, hi))
        return xp.where(x > hi, hi, xp.where(x < lo, lo, x)).astype(x.dtype, copy=False)

    def grad(self, xp, x, y, dy):
        return dy * ((x >= self.a_min) & (x <= self.a_max))


# --- copies, casts and constants -------------------------------------------------------
@register
class Copy(Unary):
    name, aliases = '_copy', ('identity',)
    needs_inputs = False

    def fn(self, xp, x):
        return x.copy()

    def grad(self, xp, x, y, dy):
        return dy


@register
class BlockGrad(ZeroGrad):
    """Identity forward, zero gradient: stops back-propagation into its input."""

    name, aliases = 'BlockGrad', ('stop_gradient',)

    def fn(self, xp, x):
        return x.copy()


@register
class ZerosLike(ZeroGrad):
    name = 'zeros_like'
    inplace = ()

    def fn(self, xp, x):
        return xp.zeros_like(x)


@register
class OnesLike(ZeroGrad):
    name = 'ones_like'
    inplace = ()

    def fn(self, xp, x):
        return xp.ones_like(x)


@register
class LogicalNot(ZeroGrad):
    """1 where x == 0 else 0, in the input's dtype."""

    name = 'logical_not'

    def fn(self, xp, x):
        return (x == 0).astype(x.dtype)


@register
class Cast(Unary):
    """Cast to ``dtype``; the gradient is cast back to the input's dtype."""

    name, aliases = 'Cast', ('cast',)
    dtype = Param('dtype', doc='Output data type.',
                  choices=[np_dtype(t) for t in ('float16', 'float32', 'float64', 'uint8',
                                                 'int8', 'int32', 'int64', 'bool')]
                  + ['bfloat16'])         # (last: compared by name, see Param.parse)
    inplace = ()

    def fn(self, xp, x):
        return x.astype(self.dtype)

    def fast_forward(self, xp, is_train, in_dtypes=None):
        t = self.dtype
        return lambda x: x.astype(t)

    def infer_type(self, in_types):
        return [in_types[0]], [self.dtype], []

    def grad(self, xp, x, y, dy):
        return dy.astype(x.dtype, copy=False)


@register
class DivSqrtDim(Operator):
    """``data / sqrt(data.shape[-1])``."""

    name = '_contrib_div_sqrt_dim'
    needs_inputs = False

    @staticmethod
    def _root(dt, n):
        return dt.type(math.sqrt(n))

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        r = self._root(x.dtype, x.shape[-1])
        if x.dtype.kind in 'iu':         # C integer division: truncation toward zero
            return [xp.trunc(x / r).astype(x.dtype)]
        return [x / r]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        g = out_grads[0]
        return [g / self._root(g.dtype, g.shape[-1])]


# --- the worked example of docs/operators.md ----------------------------------------
@register
class Quadratic(Unary):
    """``a * x**2 + b * x + c`` elementwise (``mx.sym.contrib.quadratic``).

    As MXNet 1.9.1 computes it: ``a``, ``b`` and ``c`` are C floats, float16 and integer
    data are computed in float32 and the result cast back (integers truncate).
    """

    name = '_contrib_quadratic'
    a = Param(float, 0.0, doc='coefficient of the quadratic term')
    b = Param(float, 0.0, doc='coefficient of the linear term')
    c = Param(float, 0.0, doc='constant term')

    def fn(self, xp, x):
        w = _float32_unless_wider(x)
        y = f32(self.a) * w * w + f32(self.b) * w + f32(self.c)
        return y.astype(x.dtype, copy=False)

    def grad(self, xp, x, y, dy):
        w = _float32_unless_wider(x)
        dx = _float32_unless_wider(dy) * (2.0 * f32(self.a) * w + f32(self.b))
        return dx.astype(dy.dtype, copy=False)


def _float32_unless_wider(x):
    """``x`` as MXNet's ``float`` arithmetic sees it: float64 stays, the rest is float32."""
    return x if x.dtype == np.float64 else x.astype(np.float32)
