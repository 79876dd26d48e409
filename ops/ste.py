"""Operators with a deliberately different gradient (MXNet's contrib): the straight-through
estimators ``_contrib_round_ste`` and ``_contrib_sign_ste`` (the forward of ``round`` /
``sign``, the gradient of the identity) and ``_contrib_gradientmultiplier`` (the identity,
its gradient scaled by ``scalar``; a negative scalar makes a gradient reversal layer).

As MXNet 1.9.1: ``round_ste`` rounds half away from zero; ``gradientmultiplier`` computes
the gradient ``scalar * dy`` in the head gradient's dtype and accepts ``is_int`` without
using it.
"""
from symgraph.opdef import Param, register

from ._elemwise import Unary


class _Identity(Unary):
    """The identity gradient (straight through)."""

    needs_inputs = False

    def grad(self, xp, x, y, dy):
        return dy


@register
class RoundSTE(_Identity):
    """``round(x)`` forward (half away from zero), identity gradient."""

    name = '_contrib_round_ste'

    def fn(self, xp, x):
        if x.dtype.kind in 'iub':
            return x.copy()
        t = xp.trunc(x)
        return t + xp.where(xp.abs(x - t) >= 0.5, xp.sign(x), 0).astype(x.dtype, copy=False)


@register
class SignSTE(_Identity):
    """``sign(x)`` forward, identity gradient."""

    name = '_contrib_sign_ste'

    def fn(self, xp, x):
        return xp.sign(x).astype(x.dtype, copy=False)


@register
class GradientMultiplier(_Identity):
    """The identity, its gradient multiplied by ``scalar``."""

    name = '_contrib_gradientmultiplier'
    scalar = Param(float, 1.0, doc='the factor of the gradient')
    is_int = Param(bool, True, doc='accepted as MXNet does; not used')

    def fn(self, xp, x):
        return x.copy()

    def fast_forward(self, xp, is_train, in_dtypes=None):
        return lambda x: x

    def grad(self, xp, x, y, dy):
        return (dy * dy.dtype.type(self.scalar)).astype(dy.dtype, copy=False)
