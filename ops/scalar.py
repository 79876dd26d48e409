"""Array-with-scalar operators: ``_plus_scalar``, ``_rminus_scalar``, ``_power_scalar`` ...

``x + 2`` on a Symbol makes ``_plus_scalar`` with ``scalar=2``; the ``_r*`` forms put the
scalar on the left (``2 - x`` is ``_rminus_scalar``). The parameter is a float here; the
JSON keeps the string the user gave (``'2'``, ``'-1.0'``), which the core stores.
``is_int`` is accepted as MXNet 1.9.1 does and ignored: the result always has the array's
dtype. On integer arrays MXNet first casts the scalar to the array's type (truncating: an
int32 array times 1.5 is the array times 1) and computes in integer arithmetic: ``/`` is C's
division (truncating towards zero), ``%`` takes the divisor's sign, powers are taken in
floating point and truncated back. Integer division or modulo by zero gives 0 here (MXNet
1.9.1 dies of SIGFPE).
"""
import math

import numpy as np

from symgraph.opdef import Operator, Param, register

from ._elemwise import c_divide, python_mod


def _int_scalar(s, dtype):
    """The scalar as MXNet's ``DType(scalar)`` for an integer dtype (truncated)."""
    return np.array(s).astype(dtype)[()]


class _Scalar(Operator):
    """y = f(x, scalar); subclasses give ``ufunc`` (and ``reverse``) and ``grad``."""

    scalar = Param(float, 1.0, doc='Scalar input value')
    is_int = Param(bool, True, doc='Indicate whether scalar input is int type')
    needs_inputs = True
    needs_outputs = False
    inplace = ((0, 0),)
    #: name of the ``xp`` function computing the forward
    ufunc = None
    #: the scalar is the left operand: f(scalar, x)
    reverse = False
    #: on integer arrays: 'exact' (the ufunc on the truncated scalar), 'cdiv' (C division)
    #: or 'float' (in float64, then truncated)
    int_mode = 'exact'

    def fn(self, xp, x, s):
        f = getattr(xp, self.ufunc)
        return f(s, x) if self.reverse else f(x, s)

    def int_fn(self, xp, x):
        """The forward on an integer array, with MXNet's integer semantics."""
        s = _int_scalar(self.scalar, x.dtype)
        a, b = (s, x) if self.reverse else (x, s)
        if self.int_mode == 'cdiv':
            return c_divide(xp, a, b)
        if self.int_mode == 'float':
            a, b = (np.float64(v) if v is s else v.astype(np.float64) for v in (a, b))
            with np.errstate(divide='ignore', invalid='ignore', over='ignore'):
                return getattr(xp, self.ufunc)(a, b).astype(x.dtype)
        with np.errstate(divide='ignore', invalid='ignore'):
            return getattr(xp, self.ufunc)(a, b)

    def grad(self, xp, x, y, dy, s):
        raise NotImplementedError

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        if x.dtype.kind in 'iu':
            return [self.int_fn(xp, x).astype(x.dtype, copy=False)]
        return [self.fn(xp, x, self.scalar).astype(x.dtype, copy=False)]

    def _fast_float(self, xp):
        """The forward of a float array (a Python float keeps its dtype)."""
        s = self.scalar
        if type(self).fn is not _Scalar.fn:
            fn = self.fn
            return lambda x: fn(xp, x, s).astype(x.dtype, copy=False)
        f = getattr(xp, self.ufunc)
        if self.reverse:
            return lambda x: f(s, x).astype(x.dtype, copy=False)
        return lambda x: f(x, s).astype(x.dtype, copy=False)

    def fast_forward(self, xp, is_train, in_dtypes=None):
        # where the executor knows the dtype: no per-call check on the hot path
        if in_dtypes and in_dtypes[0] is not None and np.dtype(in_dtypes[0]).kind in 'fc':
            return self._fast_float(xp)
        floats, ints = self._fast_float(xp), self.int_fn

        def run(x):
            # integer arrays follow MXNet's integer rules
            if x.dtype.kind in 'iu':
                return ints(xp, x).astype(x.dtype, copy=False)
            return floats(x)
        return run

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        if not need[0]:
            return [None]
        x = inputs[0] if inputs else None
        y = outputs[0] if outputs else None
        return [self.grad(xp, x, y, out_grads[0], self.scalar)]


class _ScalarCompare(_Scalar):
    """0/1 in the input dtype; zero gradient."""

    no_grad = True
    needs_inputs = False

    def grad(self, xp, x, y, dy, s):
        return xp.zeros_like(dy)


# --- arithmetic ---------------------------------------------------------------------
@register
class PlusScalar(_Scalar):
    name, aliases, ufunc = '_plus_scalar', ('_PlusScalar',), 'add'
    needs_inputs = False

    def grad(self, xp, x, y, dy, s):
        return dy


@register
class MinusScalar(_Scalar):
    name, aliases, ufunc = '_minus_scalar', ('_MinusScalar',), 'subtract'
    needs_inputs = False

    def grad(self, xp, x, y, dy, s):
        return dy


@register
class RMinusScalar(_Scalar):
    name, aliases, ufunc = '_rminus_scalar', ('_RMinusScalar',), 'subtract'
    reverse = True
    needs_inputs = False

    def grad(self, xp, x, y, dy, s):
        return -dy


@register
class MulScalar(_Scalar):
    name, aliases, ufunc = '_mul_scalar', ('_MulScalar',), 'multiply'
    needs_inputs = False

    def grad(self, xp, x, y, dy, s):
        return dy * s


@register
class DivScalar(_Scalar):
    name, aliases, ufunc = '_div_scalar', ('_DivScalar',), 'true_divide'
    needs_inputs = False
    int_mode = 'cdiv'

    def grad(self, xp, x, y, dy, s):
        return dy / s


@register
class RDivScalar(_Scalar):
    name, aliases, ufunc = '_rdiv_scalar', ('_RDivScalar',), 'true_divide'
    reverse = True
    int_mode = 'cdiv'

    def grad(self, xp, x, y, dy, s):
        return dy * (-s / (x * x))


@register
class ModScalar(_Scalar):
    name, aliases, ufunc = '_mod_scalar', ('_ModScalar',), 'mod'
    needs_inputs = False

    def fn(self, xp, x, s):
        return python_mod(xp, x, s)

    def grad(self, xp, x, y, dy, s):
        return dy


@register
class RModScalar(_Scalar):
    """scalar mod x; d/dx = -floor(scalar / x)."""

    name, aliases, ufunc = '_rmod_scalar', ('_RModScalar',), 'mod'
    reverse = True

    def fn(self, xp, x, s):
        return python_mod(xp, s, x)

    def grad(self, xp, x, y, dy, s):
        return -dy * xp.floor(s / x)


@register
class PowerScalar(_Scalar):
    name, aliases, ufunc = '_power_scalar', ('_PowerScalar',), 'power'
    int_mode = 'float'

    def grad(self, xp, x, y, dy, s):
        return dy * (s * xp.power(x, s - 1.0))


@register
class RPowerScalar(_Scalar):
    """scalar ** x; d/dx = y * log(scalar)."""

    name, aliases, ufunc = '_rpower_scalar', ('_RPowerScalar',), 'power'
    reverse = True
    int_mode = 'float'
    needs_inputs, needs_outputs = False, True

    def grad(self, xp, x, y, dy, s):
        log_s = math.log(s) if s > 0 else (-math.inf if s == 0 else math.nan)
        return dy * y * log_s


@register
class MaximumScalar(_Scalar):
    """The gradient passes where x >= scalar (ties included, as in MXNet)."""

    name, aliases, ufunc = '_maximum_scalar', ('_MaximumScalar',), 'maximum'

    def grad(self, xp, x, y, dy, s):
        return dy * (x >= s)


@register
class MinimumScalar(_Scalar):
    """The gradient passes where x <= scalar (ties included, as in MXNet)."""

    name, aliases, ufunc = '_minimum_scalar', ('_MinimumScalar',), 'minimum'

    def grad(self, xp, x, y, dy, s):
        return dy * (x <= s)


@register
class HypotScalar(_Scalar):
    name, aliases, ufunc = '_hypot_scalar', ('_HypotScalar',), 'hypot'
    int_mode = 'float'
    needs_outputs = True

    def grad(self, xp, x, y, dy, s):
        return dy * x / y


# --- comparisons and logic -------------------------------------------------------------
@register
class EqualScalar(_ScalarCompare):
    name, aliases, ufunc = '_equal_scalar', ('_EqualScalar',), 'equal'


@register
class NotEqualScalar(_ScalarCompare):
    name, aliases, ufunc = '_not_equal_scalar', ('_NotEqualScalar',), 'not_equal'


@register
class GreaterScalar(_ScalarCompare):
    name, aliases, ufunc = '_greater_scalar', ('_GreaterScalar',), 'greater'


@register
class GreaterEqualScalar(_ScalarCompare):
    name, aliases = '_greater_equal_scalar', ('_GreaterEqualScalar',)
    ufunc = 'greater_equal'


@register
class LesserScalar(_ScalarCompare):
    name, aliases, ufunc = '_lesser_scalar', ('_LesserScalar',), 'less'


@register
class LesserEqualScalar(_ScalarCompare):
    name, aliases, ufunc = '_lesser_equal_scalar', ('_LesserEqualScalar',), 'less_equal'


@register
class LogicalAndScalar(_ScalarCompare):
    name, aliases = '_logical_and_scalar', ('_LogicalAndScalar',)
    ufunc = 'logical_and'


@register
class LogicalOrScalar(_ScalarCompare):
    name, aliases = '_logical_or_scalar', ('_LogicalOrScalar',)
    ufunc = 'logical_or'


@register
class LogicalXorScalar(_ScalarCompare):
    name, aliases = '_logical_xor_scalar', ('_LogicalXorScalar',)
    ufunc = 'logical_xor'

