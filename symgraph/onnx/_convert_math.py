"""ONNX converters of the arithmetic: elementwise and broadcast binary operators, their
``_scalar`` forms, comparisons and logic (MXNet returns 0/1 in the input's dtype, ONNX
bools: cast back), the unary math functions, ``dot``/``batch_dot``, ``add_n``,
``smooth_l1``.

After MXNet 1.9.1's ``python/mxnet/onnx/mx2onnx/_op_translations/`` for the node each
operator becomes; MXNet's rounding (``round`` half away from zero) and modulo (the sign
of the divisor) are spelled out where ONNX's differ.
"""
import math

import numpy as np

from ._common import bool_of, cast, reshape, scalar_const, to_shape
from ._registry import converter

# ---------------------------------------------------------------------- binary
_ARITH = {'Add': ('elemwise_add', 'broadcast_add', '_grad_add'),
          'Sub': ('elemwise_sub', 'broadcast_sub'),
          'Mul': ('elemwise_mul', 'broadcast_mul'),
          'Div': ('elemwise_div', 'broadcast_div'),
          'Pow': ('_power', 'broadcast_power'),
          'Max': ('_maximum', 'broadcast_maximum'),
          'Min': ('_minimum', 'broadcast_minimum')}
_ARITH_OF = {name: op for op, names in _ARITH.items() for name in names}

_COMPARE = {'Equal': ('_equal', 'broadcast_equal'),
            'NotEqual': ('_not_equal', 'broadcast_not_equal'),
            'Greater': ('_greater', 'broadcast_greater'),
            'GreaterOrEqual': ('_greater_equal', 'broadcast_greater_equal'),
            'Less': ('_lesser', 'broadcast_lesser'),
            'LessOrEqual': ('_lesser_equal', 'broadcast_lesser_equal')}
_COMPARE_OF = {name: op for op, names in _COMPARE.items() for name in names}

_LOGIC = {'And': ('_logical_and', 'broadcast_logical_and'),
          'Or': ('_logical_or', 'broadcast_logical_or'),
          'Xor': ('_logical_xor', 'broadcast_logical_xor')}
_LOGIC_OF = {name: op for op, names in _LOGIC.items() for name in names}


def _arith(g, op_type, a, b, out, dtype):
    if op_type == 'Pow' and np.dtype(dtype).kind in 'iu':
        # ONNX Pow of integers is there, but ORT's kernels want a float exponent path
        af, bf = cast(g, a, np.float64), cast(g, b, np.float64)
        return cast(g, g.add('Pow', [af, bf])[0], dtype, out)
    return g.add(op_type, [a, b], [out])[0]


def _compare(g, op_type, a, b, out, out_dtype):
    if op_type == 'NotEqual':
        r = g.add('Not', [g.add('Equal', [a, b])[0]])[0]
    else:
        r = g.add(op_type, [a, b])[0]
    return cast(g, r, out_dtype, out)


def _logic(g, op_type, a, b, out, in_dtypes, out_dtype):
    r = g.add(op_type, [bool_of(g, a, in_dtypes[0]), bool_of(g, b, in_dtypes[1])])[0]
    return cast(g, r, out_dtype, out)


def _mod(g, a, b, out, dtype):
    """MXNet's mod: the result takes the divisor's sign (Python's %), and x mod 0 is 0."""
    zero = scalar_const(g, 0, dtype)
    b_zero = g.add('Equal', [b, zero])[0]
    safe_b = g.add('Where', [b_zero, scalar_const(g, 1, dtype), b])[0]
    if np.dtype(dtype).kind in 'iu':
        r = g.add('Mod', [a, safe_b], 1, fmod=0)[0]
    else:
        r = g.add('Mod', [a, safe_b], 1, fmod=1)[0]
        # fmod has the dividend's sign: add b where r != 0 and sign(r) != sign(b)
        r_neg = g.add('Less', [r, zero])[0]
        b_neg = g.add('Less', [safe_b, zero])[0]
        nonzero = g.add('Not', [g.add('Equal', [r, zero])[0]])[0]
        differ = g.add('And', [g.add('Xor', [r_neg, b_neg])[0], nonzero])[0]
        r = g.add('Where', [differ, g.add('Add', [r, safe_b])[0], r])[0]
    return g.add('Where', [b_zero, zero, r], [out])[0]


def _hypot(g, a, b, out):
    s = g.add('Add', [g.add('Mul', [a, a])[0], g.add('Mul', [b, b])[0]])[0]
    return g.add('Sqrt', [s], [out])[0]


def _binary(g, node, a, b, out):
    name = node.op.name
    dtype = g.in_dtype(node, 0)
    key = name[:-len('_scalar')] if name.endswith('_scalar') else name
    key = key.replace('_r', '_', 1) if key in ('_rminus', '_rdiv', '_rpower', '_rmod') else key
    key = {'_plus': 'elemwise_add', '_minus': 'elemwise_sub', '_mul': 'elemwise_mul',
           '_div': 'elemwise_div'}.get(key, key)
    if key in _ARITH_OF:
        return _arith(g, _ARITH_OF[key], a, b, out, dtype)
    if key in _COMPARE_OF:
        return _compare(g, _COMPARE_OF[key], a, b, out, g.out_dtype(node, 0))
    if key in _LOGIC_OF:
        dtypes = [g.in_dtype(node, i) if i < len(node.inputs) else dtype for i in (0, 1)]
        return _logic(g, _LOGIC_OF[key], a, b, out, dtypes, g.out_dtype(node, 0))
    if key in ('_mod', 'broadcast_mod'):
        return _mod(g, a, b, out, dtype)
    if key in ('_hypot', 'broadcast_hypot'):
        return _hypot(g, a, b, out)
    g.error(node, 'no ONNX form for %s' % name)


_BINARY = sorted(set(_ARITH_OF) | set(_COMPARE_OF) | set(_LOGIC_OF) |
                 {'_mod', 'broadcast_mod', '_hypot', 'broadcast_hypot'})


@converter(*_BINARY)
def _binary_op(g, node):
    a, b = g.inputs(node)
    _binary(g, node, a, b, g.outputs(node)[0])


_SCALAR = ['_plus_scalar', '_minus_scalar', '_rminus_scalar', '_mul_scalar', '_div_scalar',
           '_rdiv_scalar', '_power_scalar', '_rpower_scalar', '_maximum_scalar',
           '_minimum_scalar', '_mod_scalar', '_rmod_scalar', '_hypot_scalar',
           '_equal_scalar', '_not_equal_scalar', '_greater_scalar', '_greater_equal_scalar',
           '_lesser_scalar', '_lesser_equal_scalar', '_logical_and_scalar',
           '_logical_or_scalar', '_logical_xor_scalar']


@converter(*_SCALAR)
def _scalar_op(g, node):
    x, = g.inputs(node)
    dtype = g.in_dtype(node, 0)
    s = scalar_const(g, g.attr(node, 'scalar'), dtype)
    reverse = node.op.name in ('_rminus_scalar', '_rdiv_scalar', '_rpower_scalar',
                               '_rmod_scalar')
    a, b = (s, x) if reverse else (x, s)
    _binary(g, node, a, b, g.outputs(node)[0])


@converter('add_n')
def _add_n(g, node):
    g.add('Sum', g.inputs(node), g.outputs(node))


# ---------------------------------------------------------------------- unary
_UNARY = {'abs': 'Abs', 'negative': 'Neg', 'sqrt': 'Sqrt', 'exp': 'Exp', 'log': 'Log',
          'sin': 'Sin', 'cos': 'Cos', 'tan': 'Tan', 'arcsin': 'Asin', 'arccos': 'Acos',
          'arctan': 'Atan', 'sinh': 'Sinh', 'cosh': 'Cosh', 'arcsinh': 'Asinh',
          'arccosh': 'Acosh', 'arctanh': 'Atanh', 'ceil': 'Ceil', 'floor': 'Floor',
          'sign': 'Sign', 'reciprocal': 'Reciprocal', 'erf': 'Erf'}


@converter(*_UNARY)
def _unary(g, node):
    g.add(_UNARY[node.op.name], g.inputs(node), g.outputs(node))


def _scaled_log(g, x, out, dtype, base):
    return g.add('Div', [g.add('Log', [x])[0], scalar_const(g, math.log(base), dtype)], [out])


@converter('log2', 'log10', 'log1p', 'expm1', 'square', 'rsqrt', 'cbrt', 'rcbrt', 'round',
           'rint', 'fix', 'trunc', 'degrees', 'radians', 'logical_not')
def _unary_composed(g, node):
    x, = g.inputs(node)
    out = g.outputs(node)[0]
    dtype = g.in_dtype(node, 0)
    name = node.op.name
    one = scalar_const(g, 1, dtype) if np.dtype(dtype).kind != 'b' else None
    if name == 'log2':
        _scaled_log(g, x, out, dtype, 2.0)
    elif name == 'log10':
        _scaled_log(g, x, out, dtype, 10.0)
    elif name == 'log1p':
        g.add('Log', [g.add('Add', [x, one])[0]], [out])
    elif name == 'expm1':
        g.add('Sub', [g.add('Exp', [x])[0], one], [out])
    elif name == 'square':
        g.add('Mul', [x, x], [out])
    elif name == 'rsqrt':
        g.add('Reciprocal', [g.add('Sqrt', [x])[0]], [out])
    elif name in ('cbrt', 'rcbrt'):
        root = g.add('Pow', [g.add('Abs', [x])[0], scalar_const(g, 1.0 / 3.0, dtype)])[0]
        signed = g.add('Mul', [g.add('Sign', [x])[0], root],
                       [out] if name == 'cbrt' else 1)[0]
        if name == 'rcbrt':
            g.add('Reciprocal', [signed], [out])
    elif name in ('round', 'fix', 'trunc'):
        # round: half away from zero (ONNX Round is half to even); fix/trunc: toward zero
        mag = g.add('Abs', [x])[0]
        if name == 'round':
            mag = g.add('Add', [mag, scalar_const(g, 0.5, dtype)])[0]
        g.add('Mul', [g.add('Sign', [x])[0], g.add('Floor', [mag])[0]], [out])
    elif name == 'rint':
        # MXNet's rint: ties go to the floor (ONNX Round: to even)
        lo, hi = g.add('Floor', [x])[0], g.add('Ceil', [x])[0]
        down = g.add('LessOrEqual', [g.add('Sub', [x, lo])[0], g.add('Sub', [hi, x])[0]])[0]
        g.add('Where', [down, lo, hi], [out])
    elif name in ('degrees', 'radians'):
        k = 180.0 / math.pi if name == 'degrees' else math.pi / 180.0
        g.add('Mul', [x, scalar_const(g, k, dtype)], [out])
    elif name == 'logical_not':
        r = g.add('Not', [bool_of(g, x, dtype)])[0]
        cast(g, r, g.out_dtype(node, 0), out)


@converter('smooth_l1')
def _smooth_l1(g, node):
    """MXNet's smooth_l1: 0.5 (s x)^2 where |x| < 1/s^2, else |x| - 0.5/s^2."""
    x, = g.inputs(node)
    dtype = g.in_dtype(node, 0)
    s2 = float(g.attr(node, 'scalar')) ** 2
    ax = g.add('Abs', [x])[0]
    small = g.add('Less', [ax, scalar_const(g, 1.0 / s2, dtype)])[0]
    quad = g.add('Mul', [g.add('Mul', [x, x])[0], scalar_const(g, 0.5 * s2, dtype)])[0]
    lin = g.add('Sub', [ax, scalar_const(g, 0.5 / s2, dtype)])[0]
    g.add('Where', [small, quad, lin], g.outputs(node))


@converter('_contrib_quadratic')
def _quadratic(g, node):
    x, = g.inputs(node)
    dtype = g.in_dtype(node, 0)
    a, b, c = (scalar_const(g, g.attr(node, k), dtype) for k in 'abc')
    ax2 = g.add('Mul', [a, g.add('Mul', [x, x])[0]])[0]
    bx = g.add('Mul', [b, x])[0]
    g.add('Add', [g.add('Add', [ax2, bx])[0], c], g.outputs(node))


# ---------------------------------------------------------------------- products
@converter('dot')
def _dot(g, node):
    a, b = g.inputs(node)
    out = g.outputs(node)[0]
    sa, sb = g.in_shape(node, 0), g.in_shape(node, 1)
    ta, tb = g.attr(node, 'transpose_a'), g.attr(node, 'transpose_b')
    if ta and len(sa) > 1:
        a = g.add('Transpose', [a], 1, perm=list(range(len(sa)))[::-1])[0]
        sa = sa[::-1]
    if tb and len(sb) > 1:
        b = g.add('Transpose', [b], 1, perm=list(range(len(sb)))[::-1])[0]
        sb = sb[::-1]
    if len(sa) == 2 and len(sb) == 2:
        g.add('MatMul', [a, b], [out])
        return
    # contract a's last axis with b's first: both as matrices, then the MXNet shape
    a2 = reshape(g, a, [-1, sa[-1]])
    b2 = reshape(g, b, [sb[0], -1])
    to_shape(g, g.add('MatMul', [a2, b2])[0], g.out_shape(node, 0), out)


@converter('batch_dot')
def _batch_dot(g, node):
    a, b = g.inputs(node)
    rank = len(g.in_shape(node, 0))
    perm = list(range(rank - 2)) + [rank - 1, rank - 2]
    if g.attr(node, 'transpose_a'):
        a = g.add('Transpose', [a], 1, perm=perm)[0]
    if g.attr(node, 'transpose_b'):
        b = g.add('Transpose', [b], 1, perm=perm)[0]
    g.add('MatMul', [a, b], g.outputs(node))
