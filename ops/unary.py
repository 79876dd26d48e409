"""Unary elementwise math: ``exp``, ``log``, ``sqrt``, ``relu``, ``sigmoid`` ...

Each operator is one small class: the forward function and its derivative, written once
for NumPy and CuPy through ``xp``. Backward uses the forward output where that is
cheaper (``exp``, ``sigmoid``, ``tanh``), which the class declares for the planner.
"""
from symgraph.opdef import Operator, register


class _Unary(Operator):
    """y = f(x); subclasses give ``fn(xp, x)`` and ``grad(xp, x, y, dy)``."""

    needs_inputs = True
    needs_outputs = False
    inplace = ((0, 0),)

    def fn(self, xp, x):
        raise NotImplementedError

    def grad(self, xp, x, y, dy):
        raise NotImplementedError

    def forward(self, xp, inputs, aux, is_train):
        return [self.fn(xp, inputs[0])]

    def fast_forward(self, xp, is_train):
        fn = self.fn
        return lambda x: fn(xp, x)

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        x = inputs[0] if inputs else None
        y = outputs[0] if outputs else None
        return [self.grad(xp, x, y, out_grads[0])]


@register
class Exp(_Unary):
    name = 'exp'
    needs_inputs, needs_outputs = False, True

    def fn(self, xp, x):
        return xp.exp(x)

    def grad(self, xp, x, y, dy):
        return dy * y


@register
class Log(_Unary):
    name = 'log'

    def fn(self, xp, x):
        return xp.log(x)

    def grad(self, xp, x, y, dy):
        return dy / x
