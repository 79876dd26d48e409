"""More unary math: inverse and hyperbolic trigonometry, logarithms in base 2 and 10, cube
roots, angle conversion, and the special functions ``erf``, ``erfinv``, ``gamma``,
``gammaln`` (computed in ``_specfun.py``).

The special functions are evaluated in float64 whatever the input dtype and cast back
(MXNet keeps the input dtype; it computes float16 and integers in float32). At the poles
of gamma MXNet gives ``nan`` (negative integers) or ``+-inf`` (zero, by its sign),
``gammaln`` gives ``+inf``, and digamma gives the largest finite value of the dtype
(Cephes' MAXNUM), which is what the gradients of gamma and gammaln see there.
"""
import math

import numpy as np

from symgraph.opdef import register

from . import _specfun as sf
from ._elemwise import Unary

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
# MXNet multiplies by float32 constants even in float64: 180/pi divided in float32 (it is
# not float32(180/pi)), and float32(pi/180)
_DEGREES = float(np.float32(180.0) / np.float32(math.pi))
_RADIANS = float(np.float32(math.pi / 180.0))
# the gradients of erf and erfinv in MXNet use sqrt of a float32 pi, in float32
# (3e-8 relative off); kept so that float64 gradients agree with MXNet's to the last bits
_MX_SQRT_PI = float(np.sqrt(np.float32(math.pi)))


def _work(x):
    """``x`` as float64, the precision the special functions are evaluated in."""
    return x.astype(np.float64, copy=False)


def _cast_back(xp, r, dtype):
    """float64 result to ``dtype``; values past the range of float32/float16 become +-inf
    (what MXNet's float32 arithmetic gives) without NumPy's overflow-in-cast warning."""
    dtype = np.dtype(dtype)
    if dtype.kind == 'f' and dtype.itemsize < 8:
        big = float(np.finfo(dtype).max)
        r = xp.where(xp.abs(r) > big, xp.copysign(math.inf, r), r)   # NaN stays NaN
    return r.astype(dtype, copy=False)


def _pole_value(dtype):
    dtype = np.dtype(dtype)
    return float(np.finfo(dtype if dtype.kind == 'f' else np.float32).max)


# --- operators --------------------------------------------------------------------------
@register
class Arcsin(Unary):
    name, ufunc = 'arcsin', 'arcsin'

    def grad(self, xp, x, y, dy):
        return dy / xp.sqrt(1.0 - x * x)


@register
class Arccos(Unary):
    name, ufunc = 'arccos', 'arccos'

    def grad(self, xp, x, y, dy):
        return -dy / xp.sqrt(1.0 - x * x)


@register
class Arcsinh(Unary):
    name, ufunc = 'arcsinh', 'arcsinh'

    def grad(self, xp, x, y, dy):
        return dy / xp.hypot(x, 1.0)       # x * x + 1 would overflow float32 early


@register
class Arccosh(Unary):
    name, ufunc = 'arccosh', 'arccosh'

    def grad(self, xp, x, y, dy):
        return dy / xp.sqrt(x * x - 1.0)


@register
class Arctanh(Unary):
    name, ufunc = 'arctanh', 'arctanh'

    def grad(self, xp, x, y, dy):
        return dy / (1.0 - x * x)


@register
class Sinh(Unary):
    name, ufunc = 'sinh', 'sinh'

    def grad(self, xp, x, y, dy):
        return dy * xp.cosh(x)


@register
class Cosh(Unary):
    name, ufunc = 'cosh', 'cosh'

    def grad(self, xp, x, y, dy):
        return dy * xp.sinh(x)


@register
class Log2(Unary):
    name, ufunc = 'log2', 'log2'

    def grad(self, xp, x, y, dy):
        return dy / (x * _LN2)


@register
class Log10(Unary):
    name, ufunc = 'log10', 'log10'

    def grad(self, xp, x, y, dy):
        return dy / (x * _LN10)


@register
class Cbrt(Unary):
    """Cube root; d/dx = 1 / (3 y**2) (from the output, as MXNet)."""

    name, ufunc = 'cbrt', 'cbrt'
    needs_inputs, needs_outputs = False, True

    def grad(self, xp, x, y, dy):
        return dy / (3.0 * y * y)


@register
class Rcbrt(Unary):
    """1 / cbrt(x); d/dx = -1 / (3 x cbrt(x))."""

    name = 'rcbrt'

    def fn(self, xp, x):
        return (1.0 / xp.cbrt(x)).astype(x.dtype, copy=False)

    def grad(self, xp, x, y, dy):
        return -dy / (3.0 * x * xp.cbrt(x))


@register
class Degrees(Unary):
    """Radians to degrees, with MXNet's float32 constant 180/pi."""

    name = 'degrees'
    needs_inputs = False

    def fn(self, xp, x):
        return (x * _DEGREES).astype(x.dtype, copy=False)

    def grad(self, xp, x, y, dy):
        return dy * _DEGREES


@register
class Radians(Unary):
    """Degrees to radians, with MXNet's float32 constant pi/180."""

    name = 'radians'
    needs_inputs = False

    def fn(self, xp, x):
        return (x * _RADIANS).astype(x.dtype, copy=False)

    def grad(self, xp, x, y, dy):
        return dy * _RADIANS


@register
class Erf(Unary):
    """The error function; d/dx = 2/sqrt(pi) exp(-x**2)."""

    name, aliases = 'erf', ('_npx_erf',)

    def fn(self, xp, x):
        return _cast_back(xp, sf.erf(xp, _work(x)), x.dtype)

    def grad(self, xp, x, y, dy):
        a = xp.minimum(xp.abs(x), 40.0)     # exp(-1600) is 0 already; x * x may overflow
        return dy * ((2.0 / _MX_SQRT_PI) * xp.exp(-a * a))


@register
class Erfinv(Unary):
    """The inverse error function; d/dx = sqrt(pi)/2 exp(y**2) (from the output)."""

    name, aliases = 'erfinv', ('_npx_erfinv',)
    needs_inputs, needs_outputs = False, True

    def fn(self, xp, x):
        return _cast_back(xp, sf.erfinv(xp, _work(x)), x.dtype)

    def grad(self, xp, x, y, dy):
        return dy * ((0.5 * _MX_SQRT_PI) * xp.exp(y * y))


@register
class Gamma(Unary):
    """The gamma function; d/dx = gamma(x) digamma(x)."""

    name, aliases = 'gamma', ('_npx_gamma',)
    needs_inputs, needs_outputs = True, True

    def fn(self, xp, x):
        return _cast_back(xp, sf.gamma(xp, _work(x)), x.dtype)

    def grad(self, xp, x, y, dy):
        psi = sf.digamma(xp, _work(x), _pole_value(x.dtype))
        return _cast_back(xp, dy * (y * psi), dy.dtype)


@register
class Gammaln(Unary):
    """log|gamma(x)|; d/dx = digamma(x)."""

    name, aliases = 'gammaln', ('_npx_gammaln',)

    def fn(self, xp, x):
        return _cast_back(xp, sf.gammaln(xp, _work(x)), x.dtype)

    def grad(self, xp, x, y, dy):
        psi = sf.digamma(xp, _work(x), _pole_value(x.dtype))
        return _cast_back(xp, dy * psi, dy.dtype)
