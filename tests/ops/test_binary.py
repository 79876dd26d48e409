"""Same-shape and broadcasting binary operators, add_n and contrib allclose (ops/binary.py;
MXNet 1.9.1 semantics)."""
import numpy as np
import pytest

import symgraph as mx
from _refs import given
from harness import case_tests, check_fast_forward, OpCase, parametrize_cases
from symgraph.base import MXNetError
from symgraph.opdef import ShapeError, get_op


# --- input makers ---------------------------------------------------------------------
def apart(rng, shapes, dtype):
    """lhs and rhs at least 0.05 apart (no ties for max/min)."""
    a, b = [rng.uniform(-1, 1, s) for s in shapes]
    close = np.abs(a - b) < 0.05
    return [np.where(close, a + 0.1 * np.sign(a - b + 1e-3), a), b]


def with_ties(rng, shapes, dtype):
    """rhs equals lhs at about half the positions (broadcast shapes allowed)."""
    a, b = [np.round(rng.uniform(-2, 2, s)) for s in shapes]
    return [a, b]


def divisor(rng, shapes, dtype):
    a, b = [rng.uniform(-1, 1, s) for s in shapes]
    return [a, np.sign(b + 1e-9) * rng.uniform(0.5, 1.5, np.shape(b))]


def mod_inputs(rng, shapes, dtype):
    """rhs away from 0 and lhs / rhs away from integers (no wrap-around nearby)."""
    q = rng.uniform(-3, 3, shapes[0])   # lhs must have the output's shape
    q = np.where(np.abs(q - np.round(q)) < 0.1, q + 0.25, q)
    b = np.sign(rng.uniform(-1, 1, shapes[1]) + 1e-9) * rng.uniform(0.5, 1.5, shapes[1])
    return [q * b, b]


def power_inputs(rng, shapes, dtype):
    return [rng.uniform(0.5, 2, shapes[0]), rng.uniform(-1.5, 1.5, shapes[1])]


def logical(rng, shapes, dtype):
    return [rng.choice([-1.5, 0.0, 0.5], s) for s in shapes]


def away0(rng, shapes, dtype):
    return [np.sign(rng.uniform(-1, 1, s) + 1e-9) * rng.uniform(0.3, 1.5, s) for s in shapes]


def ints(rng, shapes, dtype):
    return [rng.randint(-7, 8, s).astype(np.int32) for s in shapes]


def zero_grads(inputs, outputs, out_grads):
    return [np.zeros_like(x) for x in inputs]


# --- same-shape and broadcasting binary operators -------------------------------------------
ARITH = [  # name, broadcast name, reference, input maker
    ('elemwise_add', 'broadcast_add', np.add, None),
    ('elemwise_sub', 'broadcast_sub', np.subtract, None),
    ('elemwise_mul', 'broadcast_mul', np.multiply, None),
    ('elemwise_div', 'broadcast_div', np.divide, divisor),
    ('_mod', 'broadcast_mod', np.mod, mod_inputs),
    ('_power', 'broadcast_power', np.power, power_inputs),
    ('_maximum', 'broadcast_maximum', np.maximum, apart),
    ('_minimum', 'broadcast_minimum', np.minimum, apart),
    ('_hypot', 'broadcast_hypot', np.hypot, away0),
]
COMPARE = [
    ('_equal', 'broadcast_equal', np.equal, with_ties),
    ('_not_equal', 'broadcast_not_equal', np.not_equal, with_ties),
    ('_greater', 'broadcast_greater', np.greater, with_ties),
    ('_greater_equal', 'broadcast_greater_equal', np.greater_equal, with_ties),
    ('_lesser', 'broadcast_lesser', np.less, with_ties),
    ('_lesser_equal', 'broadcast_lesser_equal', np.less_equal, with_ties),
    ('_logical_and', 'broadcast_logical_and', np.logical_and, logical),
    ('_logical_or', 'broadcast_logical_or', np.logical_or, logical),
    ('_logical_xor', 'broadcast_logical_xor', np.logical_xor, logical),
]
SAME_SHAPES = [[(3, 4), (3, 4)], [(2, 3, 5), (2, 3, 5)], [(7,), (7,)]]
BROADCAST_SHAPES = [[(2, 3, 4), (1, 3, 1)], [(3, 1), (1, 4)], [(2, 3), (3,)],
                    [(1,), (2, 3)], [(5,), (5,)]]


def _as_dtype_of(f):
    return lambda a, b: f(a, b).astype(a.dtype)


CASES = []
for _name, _bname, _f, _make in ARITH:
    for _shapes in SAME_SHAPES[:2]:
        CASES.append(OpCase(_name, shapes=_shapes, ref=_f, inputs=_make))
    for _shapes in BROADCAST_SHAPES:
        if _make is mod_inputs and np.broadcast_shapes(*_shapes) != _shapes[0]:
            continue
        CASES.append(OpCase(_bname, shapes=_shapes, ref=_f, inputs=_make))
for _name, _bname, _f, _make in COMPARE:
    # ties make a numeric gradient meaningless; MXNet's gradient is zero
    CASES.append(OpCase(_name, shapes=SAME_SHAPES[0], ref=_as_dtype_of(_f), inputs=_make,
                        grad_ref=zero_grads))
    CASES.append(OpCase(_bname, shapes=BROADCAST_SHAPES[0], ref=_as_dtype_of(_f),
                        inputs=_make, grad_ref=zero_grads))
    CASES.append(OpCase(_bname, shapes=BROADCAST_SHAPES[2], ref=_as_dtype_of(_f),
                        inputs=_make, grad_ref=zero_grads))

CASES += [
    # aliases
    OpCase('_plus', shapes=SAME_SHAPES[2], ref=np.add),
    OpCase('_Minus', shapes=SAME_SHAPES[2], ref=np.subtract),
    OpCase('_Mul', shapes=SAME_SHAPES[2], ref=np.multiply),
    OpCase('broadcast_plus', shapes=BROADCAST_SHAPES[1], ref=np.add),
    OpCase('broadcast_minus', shapes=BROADCAST_SHAPES[2], ref=np.subtract),
    # ties: the gradient goes to lhs where lhs >= rhs (max) or lhs <= rhs (min)
    OpCase('_maximum', shapes=SAME_SHAPES[0], ref=np.maximum, inputs=with_ties,
           grad_ref=lambda i, o, g: [g[0] * (i[0] >= i[1]), g[0] * (i[0] < i[1])]),
    OpCase('_minimum', shapes=SAME_SHAPES[0], ref=np.minimum, inputs=with_ties,
           grad_ref=lambda i, o, g: [g[0] * (i[0] <= i[1]), g[0] * (i[0] > i[1])]),
    OpCase('broadcast_maximum', shapes=[(2, 3), (2, 1)], ref=np.maximum, inputs=with_ties,
           grad_ref=lambda i, o, g: [g[0] * (i[0] >= i[1]),
                                     (g[0] * (i[0] < i[1])).sum(1, keepdims=True)]),
    # integer arrays: division truncates toward zero, comparisons stay int32
    OpCase('elemwise_div', shapes=SAME_SHAPES[0], dtypes=('int32',),
           inputs=lambda r, s, d: [r.randint(-9, 10, s[0]).astype(np.int32),
                                   r.choice([-3, -2, 2, 3], s[1]).astype(np.int32)],
           ref=lambda a, b: np.trunc(a / b).astype(np.int32)),
    OpCase('broadcast_add', shapes=BROADCAST_SHAPES[0], dtypes=('int32',), inputs=ints,
           ref=np.add),
    OpCase('broadcast_greater', shapes=BROADCAST_SHAPES[1], dtypes=('int32',), inputs=ints,
           ref=_as_dtype_of(np.greater)),
]
for _n in (1, 2, 3, 4):
    CASES.append(OpCase('add_n', {'num_args': _n}, shapes=[(3, 5)] * _n,
                        ref=lambda *xs: sum(xs[1:], xs[0])))
CASES.append(OpCase('ElementWiseSum', {'num_args': '3'}, shapes=[(2, 3, 2)] * 3,
                    ref=lambda a, b, c: a + b + c))

ALLCLOSE_CASES = [
    OpCase('_contrib_allclose', {'rtol': 0.5, 'atol': 0.1}, [(2, 3), (2, 3)],
           inputs=given([[1, 2, 3], [4, 5, 6]], [[1.2, 2.5, 4], [5, 6, 7]]),
           ref=lambda a, b: np.array(1, np.uint8), grad=()),
    OpCase('_contrib_allclose', {}, [(2, 3), (2, 3)],
           inputs=given([[1, 2, 3], [4, 5, 6]], [[1, 2, 3], [4, 5, 6.001]]),
           ref=lambda a, b: np.array(0, np.uint8), grad=()),
    OpCase('_contrib_allclose', {'equal_nan': False}, [(2,), (2,)],
           inputs=given([np.nan, 1], [np.nan, 1]), ref=lambda a, b: np.array(0, np.uint8),
           grad=()),
    OpCase('_contrib_allclose', {}, [(2,), (2,)],
           inputs=given([np.nan, 1], [np.nan, 1]), ref=lambda a, b: np.array(1, np.uint8),
           grad=()),
]


test_forward, test_gradient = case_tests(CASES + ALLCLOSE_CASES)


@parametrize_cases(CASES)
def test_fast_forward_matches_forward(case):
    if not check_fast_forward(case):
        assert case.make_op().name in ('broadcast_to', 'broadcast_axis', 'broadcast_like')


@parametrize_cases(CASES)
def test_unknown_shapes_do_not_crash(case):
    op = case.make_op()
    op.infer_shape([None] * len(op.list_arguments()))
    op.infer_type([None] * len(op.list_arguments()))


# --- shape inference ----------------------------------------------------------------------------
def test_elemwise_shape_mismatch_names_argument_and_shapes():
    with pytest.raises(ShapeError, match=r"'rhs'.*\(3, 2\).*\(2, 3\)"):
        get_op('elemwise_add')().infer_shape([(2, 3), (3, 2)])


def test_add_n_shape_mismatch_names_argument():
    with pytest.raises(ShapeError, match=r"'arg2'.*\(3, 2\)"):
        get_op('add_n')(num_args=3).infer_shape([(2, 3), None, (3, 2)])


def test_broadcast_mismatch_names_both_shapes():
    with pytest.raises(ShapeError, match=r"'lhs'.*\(2, 3\).*'rhs'.*\(4, 3\)"):
        get_op('broadcast_mul')().infer_shape([(2, 3), (4, 3)])


def test_elemwise_fills_unknown_inputs():
    op = get_op('elemwise_mul')()
    assert op.infer_shape([None, (2, 3)]) == ([(2, 3), (2, 3)], [(2, 3)], [])
    assert op.infer_shape([(2, 0), (0, 3)])[1] == [(2, 3)]
    op = get_op('add_n')(num_args=3)
    assert op.infer_shape([None, (4,), None])[0] == [(4,)] * 3


@pytest.mark.parametrize('lhs, rhs, out', [
    ((2, 3), (3,), (2, 3)),
    ((2, 1, 4), (3, 1), (2, 3, 4)),
    ((2, 0), (1, 3), (2, 0)),      # an unknown dimension stays unknown (MXNet)
    ((2, 1), (0, 3), (0, 3)),
    ((2, 3), None, None),          # MXNet does not guess the other input
])
def test_broadcast_shape_inference(lhs, rhs, out):
    in_shapes, out_shapes, _ = get_op('broadcast_add')().infer_shape([lhs, rhs])
    assert out_shapes == [out]
    assert in_shapes == [lhs, rhs]


# --- structure and parameters -----------------------------------------------------------------
def test_argument_names():
    assert get_op('elemwise_add')().list_arguments() == ['lhs', 'rhs']
    assert get_op('broadcast_like')().list_arguments() == ['lhs', 'rhs']
    assert get_op('ElementWiseSum')(num_args=3).list_arguments() == ['arg0', 'arg1', 'arg2']
    assert get_op('_plus_scalar')(scalar=1).list_arguments() == ['data']
    with pytest.raises(MXNetError, match='num_args'):
        get_op('add_n')()


@pytest.mark.parametrize('alias, name', [
    ('_plus', 'elemwise_add'), ('_Plus', 'elemwise_add'), ('_add', 'elemwise_add'),
    ('_minus', 'elemwise_sub'), ('_sub', 'elemwise_sub'), ('_Div', 'elemwise_div'),
    ('_Mod', '_mod'), ('_Power', '_power'), ('_Maximum', '_maximum'),
    ('_Minimum', '_minimum'), ('_Equal', '_equal'), ('_Not_Equal', '_not_equal'),
    ('_Greater_Equal', '_greater_equal'), ('_Lesser', '_lesser'), ('_Hypot', '_hypot'),
    ('_Logical_And', '_logical_and'), ('ElementWiseSum', 'add_n'),
    ('broadcast_plus', 'broadcast_add'), ('broadcast_minus', 'broadcast_sub'),
    ('broadcast_axes', 'broadcast_axis'), ('_MinusScalar', '_minus_scalar'),
    ('_RPowerScalar', '_rpower_scalar'), ('_NotEqualScalar', '_not_equal_scalar'),
    ('_LesserEqualScalar', '_lesser_equal_scalar'), ('_LogicalXorScalar',
                                                     '_logical_xor_scalar'),
])
def test_aliases(alias, name):
    assert get_op(alias).name == name


def test_broadcast_twins_do_not_steal_aliases():
    assert get_op('_mul').name == 'elemwise_mul'
    assert get_op('_maximum').name == '_maximum'


def test_scalar_parameter_parses_mxnet_strings():
    op = get_op('_plus_scalar')(scalar='2')
    assert op.scalar == 2.0 and isinstance(op.scalar, float)
    assert get_op('_mul_scalar')(scalar='-1.0').scalar == -1.0
    x = np.ones((2, 2), np.float32)
    assert op.fast_forward(np, False)(x).dtype == np.float32


def test_allclose_shape_and_errors():
    s = mx.sym.contrib.allclose(mx.sym.var('a'), mx.sym.var('b'))
    assert s.infer_shape(a=(2, 3), b=(2, 3))[1] == [()]
    assert s.infer_type(a='float64', b='float64')[1] == [np.uint8]
    with pytest.raises(ShapeError, match='same shape'):
        get_op('_contrib_allclose')().infer_shape([(2, 3), (1,)])
    # float32 arithmetic as MXNet's: x + 1e-5 is not within atol=1e-5 everywhere
    x = mx.nd.array([[-1.5, -0.5, 0.5], [1.5, 2.5, 0.2]])
    assert mx.nd.contrib.allclose(x, x + 1e-5, rtol=0, atol=1e-5).asscalar() == 0
    assert mx.nd.contrib.allclose(x, x + 1e-6).asscalar() == 1
