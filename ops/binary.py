"""Binary operators: same-shape (``elemwise_add``...), broadcasting (``broadcast_add``...),
``add_n`` and ``_contrib_allclose``. The ``*_scalar`` forms are in ``ops/scalar.py``;
``broadcast_to``, ``broadcast_axis`` and ``broadcast_like`` in ``ops/broadcast.py``.

A same-shape operator ``F`` and its broadcasting twin share the math: the twin is
``class BroadcastF(_Broadcast, F)``, which only changes shape inference (NumPy rules,
as MXNet's ``BinaryBroadcastShape``) and sums each gradient back to its input's shape.

Results keep the input dtype as MXNet does: comparisons give 0/1 in that dtype, integer
division truncates.
"""
import numpy as np

from symgraph.base import ParameterError
from symgraph.opdef import Operator, Param, ShapeError, Step, cpu_kernel, register, \
    reduce_to_shape

from ._elemwise import c_divide, python_mod
from ._util import F32, on_backend, relu_grad_from_output


class _Binary(Operator):
    """y = f(lhs, rhs); subclasses give ``ufunc`` (or ``fn``) and ``grads``."""

    needs_inputs = True
    needs_outputs = False
    inplace = ((0, 0), (1, 0))
    #: name of the ``xp`` function computing the forward
    ufunc = None
    #: the ``xp`` function keeps integer dtypes (no cast back needed)
    keeps_dtype = True

    def list_arguments(self):
        return ['lhs', 'rhs']

    def fn(self, xp, a, b):
        y = getattr(xp, self.ufunc)(a, b)
        return y if self.keeps_dtype else y.astype(a.dtype, copy=False)

    def grads(self, xp, a, b, y, dy):
        """Gradients of lhs and rhs, in the (broadcast) output shape."""
        raise NotImplementedError

    def forward(self, xp, inputs, aux, is_train):
        return [self.fn(xp, inputs[0], inputs[1])]

    def fast_forward(self, xp, is_train, in_dtypes=None):
        if type(self).fn is not _Binary.fn:
            fn = self.fn
            return lambda a, b: fn(xp, a, b)
        f = getattr(xp, self.ufunc)
        if self.keeps_dtype:
            return f
        return lambda a, b: f(a, b).astype(a.dtype, copy=False)

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        a, b = inputs if inputs else (None, None)
        y = outputs[0] if outputs else None
        ga, gb = self.grads(xp, a, b, y, out_grads[0])
        return [ga if need[0] else None, gb if need[1] else None]


class _Compare(_Binary):
    """Comparisons and logical functions: 0/1 in the input dtype, zero gradients."""

    no_grad = True

    def fn(self, xp, a, b):
        return getattr(xp, self.ufunc)(a, b).astype(a.dtype)

    def fast_forward(self, xp, is_train, in_dtypes=None):
        f = getattr(xp, self.ufunc)
        return lambda a, b: f(a, b).astype(a.dtype)

    def grads(self, xp, a, b, y, dy):
        return xp.zeros_like(a), xp.zeros_like(b)


# --- same-shape arithmetic ---------------------------------------------------------
@register
class ElemwiseAdd(_Binary):
    name, aliases, ufunc = 'elemwise_add', ('_plus', '_Plus', '_add'), 'add'
    needs_inputs = False

    def grads(self, xp, a, b, y, dy):
        return dy, dy


class ElemwiseAddReLU(ElemwiseAdd):
    """relu(lhs + rhs): what a CPU training plan runs for ``elemwise_add`` whose output
    only a relu reads (the ``fuse_training_post_op`` row of ``ops/_cpu_rules.py``). Forward is one
    oneDNN binary primitive with a relu post-op where the backend takes the arrays (else
    NumPy's add and maximum, the unfused values bit for bit); backward masks the head
    gradient by the output, as relu's backward does, and gives it to both inputs."""

    name = '_sg_elemwise_add_relu'
    aliases = ()
    needs_inputs = False
    needs_outputs = True
    #: (its gradients are one array, which may lie over the output backward reads: the
    #: grad_same and grad_inplace rows of ops/_cpu_rules.py)
    writes_into = True

    def fast_forward(self, xp, is_train, in_dtypes=None):
        return None

    def bind(self, ctx, in_shapes, in_dtypes):
        """A Step holding the CPU backend's recorded calls into the executor's arrays
        (:attr:`symgraph.opdef.Step.replays`), passed back as ``replays=``."""
        return Step(self, ctx, replays=True)

    def forward(self, xp, inputs, aux, is_train, out=None, replays=None):
        a, b = inputs
        dest = out[0] if out and out[0] is not None and out[0].dtype == a.dtype \
            and out[0].shape == a.shape else None
        # one oneDNN binary primitive where the backend's routing takes a (its size)
        takes = cpu_kernel('takes') if xp is np else None
        if takes is not None and a.dtype is F32 and takes('add', a.size, 'relu'):
            add = cpu_kernel('add')
            y = on_backend((replays, 'f'), (a, b, dest),
                           lambda: add(a, b, relu=True, out=dest))
            if y is not None:
                return [y]
        y = xp.add(a, b, out=dest)      # (NumPy's ufuncs handle an out overlapping an input)
        xp.maximum(y, y.dtype.type(0), out=y)
        return [y]

    def backward(self, xp, out_grads, inputs, outputs, aux, need, grad_out=None,
                 replays=None):
        g, y = out_grads[0], outputs[0]
        # the array offered for a wanted gradient (the plan offers one: grad_same)
        dest = next((d for d, nd in zip(grad_out or (), need) if nd and d is not None
                     and d.dtype == g.dtype and d.shape == g.shape), None)
        dx = relu_grad_from_output(xp, y, g, dest, site=(replays, 'b'))
        # an argument offered an array of its own gets the values there (the executor may
        # sum into one offered array in place, which must not change the other's)
        grads = []
        for k in range(2):
            d = grad_out[k] if grad_out and need[k] else None
            if d is not None and d is not dx and d.shape == dx.shape:
                d[...] = dx
                grads.append(d)
            else:
                grads.append(dx if need[k] else None)
        return grads


@register
class ElemwiseSub(_Binary):
    name, aliases, ufunc = 'elemwise_sub', ('_minus', '_Minus', '_sub'), 'subtract'
    needs_inputs = False

    def grads(self, xp, a, b, y, dy):
        return dy, -dy


@register
class ElemwiseMul(_Binary):
    name, aliases, ufunc = 'elemwise_mul', ('_mul', '_Mul'), 'multiply'

    def grads(self, xp, a, b, y, dy):
        return dy * b, dy * a


@register
class ElemwiseDiv(_Binary):
    name, aliases, ufunc = 'elemwise_div', ('_div', '_Div'), 'true_divide'
    keeps_dtype = False

    def fn(self, xp, a, b):
        if a.dtype.kind in 'iu':     # C's division, truncating (0 where b == 0)
            return c_divide(xp, a, b).astype(a.dtype, copy=False)
        return xp.true_divide(a, b).astype(a.dtype, copy=False)

    def grads(self, xp, a, b, y, dy):
        return dy / b, -dy * a / (b * b)


@register
class Mod(_Binary):
    """Python's modulo (the result has the divisor's sign), as MXNet computes it."""

    name, aliases, ufunc = '_mod', ('_Mod',), 'mod'

    def fn(self, xp, a, b):
        return python_mod(xp, a, b)

    def grads(self, xp, a, b, y, dy):
        if a.dtype.kind in 'iu':
            # integer floor division, 0 where b is 0 (a / b in floating point made inf and
            # NaN there, and NaN * 0 poisons an integer head gradient of 0)
            zero = b == 0
            q = xp.floor_divide(a, xp.where(zero, 1, b))
            q[zero] = 0
            return dy, -dy * q
        with np.errstate(divide='ignore', invalid='ignore'):    # inf and NaN, as MXNet
            return dy, -dy * xp.floor(a / b)


@register
class Power(_Binary):
    name, aliases, ufunc = '_power', ('_Power',), 'power'
    needs_outputs = True

    def fn(self, xp, a, b):
        if a.dtype.kind in 'iu':     # taken in floating point and truncated, as MXNet
            with np.errstate(divide='ignore', over='ignore', invalid='ignore'):
                return xp.power(a.astype(np.float64), b.astype(np.float64)).astype(a.dtype)
        return xp.power(a, b)

    def grads(self, xp, a, b, y, dy):
        return dy * b * xp.power(a, b - 1), dy * y * xp.log(a)


@register
class Maximum(_Binary):
    """On ties the gradient goes to lhs (MXNet: lhs where lhs >= rhs, rhs where lhs < rhs:
    neither where one is NaN)."""

    name, aliases, ufunc = '_maximum', ('_Maximum',), 'maximum'

    def grads(self, xp, a, b, y, dy):
        return dy * (a >= b), dy * (a < b)


@register
class Minimum(_Binary):
    """On ties the gradient goes to lhs (MXNet: lhs where lhs <= rhs, rhs where lhs > rhs:
    neither where one is NaN)."""

    name, aliases, ufunc = '_minimum', ('_Minimum',), 'minimum'

    def grads(self, xp, a, b, y, dy):
        return dy * (a <= b), dy * (a > b)


@register
class Hypot(_Binary):
    name, aliases, ufunc = '_hypot', ('_Hypot',), 'hypot'
    needs_outputs = True
    keeps_dtype = False

    def grads(self, xp, a, b, y, dy):
        return dy * a / y, dy * b / y


# --- same-shape comparisons and logic ---------------------------------------------------
@register
class Equal(_Compare):
    name, aliases, ufunc = '_equal', ('_Equal',), 'equal'


@register
class NotEqual(_Compare):
    name, aliases, ufunc = '_not_equal', ('_Not_Equal',), 'not_equal'


@register
class Greater(_Compare):
    name, aliases, ufunc = '_greater', ('_Greater',), 'greater'


@register
class GreaterEqual(_Compare):
    name, aliases, ufunc = '_greater_equal', ('_Greater_Equal',), 'greater_equal'


@register
class Lesser(_Compare):
    name, aliases, ufunc = '_lesser', ('_Lesser',), 'less'


@register
class LesserEqual(_Compare):
    name, aliases, ufunc = '_lesser_equal', ('_Lesser_Equal',), 'less_equal'


@register
class LogicalAnd(_Compare):
    name, aliases, ufunc = '_logical_and', ('_Logical_And',), 'logical_and'


@register
class LogicalOr(_Compare):
    name, aliases, ufunc = '_logical_or', ('_Logical_Or',), 'logical_or'


@register
class LogicalXor(_Compare):
    name, aliases, ufunc = '_logical_xor', ('_Logical_Xor',), 'logical_xor'


# --- n-ary sum ----------------------------------------------------------------------------
@register
class AddN(Operator):
    """Sum of ``num_args`` same-shape arrays (arguments ``arg0``, ``arg1``, ...)."""

    name, aliases = 'add_n', ('ElementWiseSum',)
    num_args = Param(int, doc='Number of inputs to be summed.')
    needs_inputs = False
    inplace = ((0, 0),)

    def check(self):
        if self.num_args < 1:
            raise ParameterError('add_n needs num_args >= 1, got %d' % self.num_args)

    def list_arguments(self):
        return ['arg%d' % i for i in range(self.num_args)]

    def forward(self, xp, inputs, aux, is_train):
        return [self.fast_forward(xp, is_train)(*inputs)]

    def fast_forward(self, xp, is_train, in_dtypes=None):
        if self.num_args == 2:
            return xp.add

        def add_n(*xs):
            out = xs[0].copy() if len(xs) == 1 else xs[0] + xs[1]
            for x in xs[2:]:
                out += x
            return out
        return add_n

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        return [out_grads[0] if n else None for n in need]


# --- broadcasting ------------------------------------------------------------------------
def broadcast_shapes(lhs, rhs, names=('lhs', 'rhs')):
    """The broadcast shape of two partial shapes (NumPy rules; 0 = unknown dimension).

    A dimension stays unknown when either side's is unknown, as in MXNet.
    """
    if lhs is None or rhs is None:
        return None
    lhs, rhs = tuple(lhs), tuple(rhs)
    if lhs == rhs:
        return lhs
    n = max(len(lhs), len(rhs))
    out = []
    for x, y in zip((1,) * (n - len(lhs)) + lhs, (1,) * (n - len(rhs)) + rhs):
        if x == 0 or y == 0:
            out.append(0)
        elif x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            raise ShapeError('operands could not be broadcast together: %r has shape %s '
                             'and %r has shape %s' % (names[0], lhs, names[1], rhs))
    return tuple(out)


class _Broadcast(_Binary):
    """Mixin making a same-shape binary operator broadcast (put it first in the bases)."""

    aliases = ()
    needs_inputs = True
    # an input smaller than the output cannot lend it its storage
    inplace = ()

    def infer_shape(self, in_shapes):
        return list(in_shapes[:2]), [broadcast_shapes(in_shapes[0], in_shapes[1])], []

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        ga, gb = super().backward(xp, out_grads, inputs, outputs, aux, need)
        a, b = inputs
        return [None if ga is None else reduce_to_shape(xp, ga, a.shape),
                None if gb is None else reduce_to_shape(xp, gb, b.shape)]


@register
class BroadcastAdd(_Broadcast, ElemwiseAdd):
    name, aliases = 'broadcast_add', ('broadcast_plus',)


@register
class BroadcastSub(_Broadcast, ElemwiseSub):
    name, aliases = 'broadcast_sub', ('broadcast_minus',)


@register
class BroadcastMul(_Broadcast, ElemwiseMul):
    name = 'broadcast_mul'


@register
class BroadcastDiv(_Broadcast, ElemwiseDiv):
    name = 'broadcast_div'


@register
class BroadcastMod(_Broadcast, Mod):
    name = 'broadcast_mod'


@register
class BroadcastPower(_Broadcast, Power):
    name = 'broadcast_power'


@register
class BroadcastMaximum(_Broadcast, Maximum):
    name = 'broadcast_maximum'


@register
class BroadcastMinimum(_Broadcast, Minimum):
    name = 'broadcast_minimum'


@register
class BroadcastHypot(_Broadcast, Hypot):
    name = 'broadcast_hypot'


@register
class BroadcastEqual(_Broadcast, Equal):
    name = 'broadcast_equal'


@register
class BroadcastNotEqual(_Broadcast, NotEqual):
    name = 'broadcast_not_equal'


@register
class BroadcastGreater(_Broadcast, Greater):
    name = 'broadcast_greater'


@register
class BroadcastGreaterEqual(_Broadcast, GreaterEqual):
    name = 'broadcast_greater_equal'


@register
class BroadcastLesser(_Broadcast, Lesser):
    name = 'broadcast_lesser'


@register
class BroadcastLesserEqual(_Broadcast, LesserEqual):
    name = 'broadcast_lesser_equal'


@register
class BroadcastLogicalAnd(_Broadcast, LogicalAnd):
    name = 'broadcast_logical_and'


@register
class BroadcastLogicalOr(_Broadcast, LogicalOr):
    name = 'broadcast_logical_or'


@register
class BroadcastLogicalXor(_Broadcast, LogicalXor):
    name = 'broadcast_logical_xor'


@register
class AllClose(Operator):
    """1 (uint8, shape ``()``) when every ``|a - b| <= atol + rtol * |b|`` (``contrib.allclose``).

    As MXNet 1.9.1: a and b of one shape (no broadcasting), the difference computed in
    their dtype and ``rtol``/``atol`` as C floats; with ``equal_nan`` two NaNs are equal,
    otherwise any NaN gives 0. No gradient.
    """

    name = '_contrib_allclose'
    rtol = Param(float, 1e-05, doc='relative tolerance')
    atol = Param(float, 1e-08, doc='absolute tolerance')
    equal_nan = Param(bool, True, doc='whether two NaNs compare equal')
    no_grad = True
    needs_inputs = False

    def list_arguments(self):
        return ['a', 'b']

    def infer_shape(self, in_shapes):
        a, b = in_shapes
        if a is not None and b is not None and tuple(a) != tuple(b):
            raise ShapeError('_contrib_allclose: inputs %r %s and %r %s must have the same '
                             'shape' % ('a', tuple(a), 'b', tuple(b)))
        s = a if a is not None else b
        return [s, s], [()], []

    def infer_type(self, in_types):
        t = in_types[0] if in_types[0] is not None else in_types[1]
        return [t, t], [np.dtype(np.uint8)], []

    def forward(self, xp, inputs, aux, is_train):
        a, b = inputs
        dt = a.dtype if a.dtype.kind == 'f' else np.dtype(np.float64)
        a, b = a.astype(dt, copy=False), b.astype(dt, copy=False)
        tol = np.float32(self.atol).astype(dt) + np.float32(self.rtol).astype(dt) * xp.abs(b)
        close = xp.abs(a - b) <= tol
        na, nb = xp.isnan(a), xp.isnan(b)
        close = xp.where(na | nb, (na & nb) if self.equal_nan else False, close)
        return [xp.asarray(close.all(), dtype=np.uint8)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        return [None, None]
