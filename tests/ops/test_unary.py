"""Unary elementwise operators against NumPy references (MXNet 1.9.1 semantics)."""
import numpy as np
import pytest

import symgraph as mx
from _refs import F16
from harness import case_tests, check_fast_forward, OpCase, parametrize_cases
from symgraph.base import MXNetError
from symgraph.opdef import get_op


def _pos(rng, shapes, dtype):
    return [rng.uniform(0.5, 2.0, s) for s in shapes]


def avoid(*points, lo=-1.0, hi=1.0, margin=0.05):
    """Input maker: uniform(lo, hi) moved at least ``margin`` away from ``points`` (kinks)."""
    def make(rng, shapes, dtype):
        out = []
        for s in shapes:
            x = rng.uniform(lo, hi, s)
            for p in points:
                near = np.abs(x - p) < margin
                x[near] = p + np.where(x[near] >= p, 2, -2) * margin
            out.append(x)
        return out
    return make


def fixed(*values):
    """Input maker: given values (in the case's dtype) for edge semantics."""
    return lambda rng, shapes, dtype: [np.asarray(v, dtype=np.float64) for v in values]


def _ints(rng, shapes, dtype):
    return [rng.randint(-5, 6, s).astype(np.int32) for s in shapes]


def _zero_grad(inputs, outputs, out_grads):
    return [np.zeros_like(x) for x in inputs]


_HALVES = [[-2.5, -1.5, -0.5, 0.5, 1.5, 2.5], [-0.7, 0.7, 0.2, -0.2, 1.49, -1.51]]

CASES = [
    OpCase('exp', shapes=[(3, 5)], ref=np.exp),
    OpCase('exp', shapes=[(7,)], ref=np.exp),
    OpCase('log', shapes=[(2, 3, 4)], ref=np.log, inputs=_pos),
    OpCase('log1p', shapes=[(3, 5)], ref=np.log1p, inputs=_pos),
    OpCase('expm1', shapes=[(2, 7)], ref=np.expm1),
    OpCase('sqrt', shapes=[(4, 3)], ref=np.sqrt, inputs=_pos),
    OpCase('rsqrt', shapes=[(3, 2, 2)], ref=lambda x: 1 / np.sqrt(x), inputs=_pos),
    OpCase('square', shapes=[(5, 2)], ref=np.square),
    OpCase('reciprocal', shapes=[(3, 4)], ref=lambda x: 1 / x, inputs=avoid(0, margin=0.2)),
    OpCase('negative', shapes=[(1, 5)], ref=np.negative),
    OpCase('abs', shapes=[(3, 5)], ref=np.abs, inputs=avoid(0)),
    OpCase('sign', shapes=[(4, 3)], ref=np.sign, inputs=avoid(0)),
    OpCase('sign', shapes=[(3,)], ref=np.sign, inputs=fixed([-2.0, 0.0, 3.0]), grad=()),
    OpCase('floor', shapes=[(3, 5)], ref=np.floor, inputs=avoid(0, lo=-2, hi=2)),
    OpCase('ceil', shapes=[(3, 5)], ref=np.ceil, inputs=avoid(0, lo=-2, hi=2)),
    OpCase('trunc', shapes=[(2, 5)], ref=np.trunc, inputs=avoid(0, lo=-2, hi=2)),
    OpCase('fix', shapes=[(5, 2)], ref=np.trunc, inputs=avoid(0, lo=-2, hi=2)),
    # MXNet rounds halves away from zero; NumPy's round would give 2 for 2.5
    OpCase('round', shapes=[(2, 6)], inputs=fixed(_HALVES), grad=(),
           ref=lambda x: np.where(x >= 0, np.floor(x + 0.5), np.ceil(x - 0.5))),
    OpCase('round', shapes=[(3, 4)], ref=lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5),
           inputs=avoid(-0.5, 0.5)),
    # MXNet's rint rounds halves down (2.5 -> 2, -0.5 -> -1)
    OpCase('rint', shapes=[(2, 6)], inputs=fixed(_HALVES), grad=(),
           ref=lambda x: np.ceil(x - 0.5)),
    OpCase('rint', shapes=[(4, 3)], ref=np.rint, inputs=avoid(-0.5, 0.5)),
    OpCase('sin', shapes=[(3, 5)], ref=np.sin),
    OpCase('cos', shapes=[(2, 3, 2)], ref=np.cos),
    OpCase('tan', shapes=[(3, 4)], ref=np.tan),
    OpCase('arctan', shapes=[(4, 3)], ref=np.arctan),
    OpCase('relu', shapes=[(3, 5)], ref=lambda x: np.maximum(x, 0), inputs=avoid(0)),
    OpCase('relu', shapes=[(3,)], ref=lambda x: np.maximum(x, 0), inputs=fixed([-1, 0, 2]),
           grad_ref=lambda i, o, g: [g[0] * (i[0] > 0)], grad=(0,)),
    OpCase('sigmoid', shapes=[(3, 5)], ref=lambda x: 1 / (1 + np.exp(-x))),
    OpCase('sigmoid', shapes=[(6,)], inputs=fixed([-50, -20, -3, 3, 20, 50]), grad=(),
           ref=lambda x: (1 / (1 + np.exp(-x.astype(np.float64)))), rtol=1e-6, atol=0),
    OpCase('tanh', shapes=[(4, 3)], ref=np.tanh),
    # the worked example of docs/operators.md
    OpCase('_contrib_quadratic', {'a': 0.3, 'b': -1.1, 'c': 2.0}, shapes=[(3, 5)],
           ref=lambda x: np.float32(0.3) * x * x + np.float32(-1.1) * x + np.float32(2.0)),
    OpCase('_contrib_quadratic', {'a': '1', 'b': '2', 'c': '3'}, shapes=[(2, 2)],
           inputs=fixed([[1, 2], [3, 4]]), ref=lambda x: x * x + 2 * x + 3),
    OpCase('_contrib_quadratic', {'a': 0.5, 'b': -1.0, 'c': 2.0}, shapes=[(2, 3)], grad=(),
           dtypes=('int32',), inputs=fixed([[-1, 0, 2], [3, 0, 1]]),
           ref=lambda x: np.array([[3, 2, 2], [3, 2, 1]], dtype=np.int32)),
    OpCase('softsign', shapes=[(3, 4)], ref=lambda x: x / (1 + np.abs(x)), inputs=avoid(0)),
    OpCase('clip', {'a_min': -0.4, 'a_max': 0.5}, shapes=[(4, 5)],
           ref=lambda x: np.clip(x, -0.4, 0.5), inputs=avoid(-0.4, 0.5)),
    # MXNet JSON writes integer bounds without a point (ReLU6)
    OpCase('clip', {'a_min': '0', 'a_max': '6'}, shapes=[(2, 3, 5)],
           ref=lambda x: np.clip(x, 0, 6), inputs=avoid(0, 6, lo=-3, hi=9)),
    # the gradient passes at the bounds themselves (a_min <= x <= a_max)
    OpCase('clip', {'a_min': -1, 'a_max': 2}, shapes=[(5,)], grad=(0,),
           ref=lambda x: np.clip(x, -1, 2), inputs=fixed([-2, -1, 0, 2, 3]),
           grad_ref=lambda i, o, g: [g[0] * np.array([0, 1, 1, 1, 0])]),
    OpCase('_copy', shapes=[(3, 4)], ref=lambda x: x),
    OpCase('identity', shapes=[(2, 3, 1)], ref=lambda x: x),
    OpCase('BlockGrad', shapes=[(3, 4)], ref=lambda x: x, grad_ref=_zero_grad),
    OpCase('stop_gradient', shapes=[(5,)], ref=lambda x: x, grad_ref=_zero_grad),
    OpCase('zeros_like', shapes=[(3, 4)], ref=np.zeros_like),
    OpCase('ones_like', shapes=[(2, 5)], ref=np.ones_like),
    OpCase('logical_not', shapes=[(4,)], inputs=fixed([0, 1.5, -2, 0]),
           ref=lambda x: (x == 0).astype(x.dtype), grad_ref=_zero_grad),
    OpCase('Cast', {'dtype': 'float64'}, shapes=[(3, 4)], ref=lambda x: x.astype(np.float64)),
    OpCase('cast', {'dtype': 'float16'}, shapes=[(2, 5)], grad=(),
           ref=lambda x: x.astype(np.float16)),
    # float to int truncates toward zero; the gradient is the head gradient cast back
    OpCase('Cast', {'dtype': 'int32'}, shapes=[(3, 5)], inputs=avoid(0, lo=-3, hi=3),
           ref=lambda x: np.trunc(x).astype(np.int32), grad=(0,),
           grad_ref=lambda i, o, g: [g[0].astype(i[0].dtype)]),
    OpCase('Cast', {'dtype': 'uint8'}, shapes=[(2, 3)], inputs=_pos, grad=(),
           ref=lambda x: np.trunc(x).astype(np.uint8)),
    # MXNet keeps integer dtypes through math functions
    OpCase('exp', shapes=[(2, 3)], inputs=_ints, dtypes=('int32',),
           ref=lambda x: np.exp(x).astype(np.int32)),
    OpCase('sqrt', shapes=[(7,)], inputs=lambda r, s, d: [r.randint(0, 50, s[0])],
           dtypes=('int32',), ref=lambda x: np.sqrt(x).astype(np.int32)),
    OpCase('abs', shapes=[(3, 3)], inputs=_ints, dtypes=('int32',), ref=np.abs),
    OpCase('relu', shapes=[(3, 3)], inputs=_ints, dtypes=('int32',),
           ref=lambda x: np.maximum(x, 0)),
    OpCase('round', shapes=[(3, 3)], inputs=_ints, dtypes=('int32',), ref=lambda x: x),
]


DIV_SQRT_DIM_CASES = [
    OpCase('_contrib_div_sqrt_dim', {}, [(3, 4)], ref=lambda x: x / 2.0, dtypes=F16),
    OpCase('_contrib_div_sqrt_dim', {}, [(2, 3, 5)], ref=lambda x: x / np.sqrt(5.0)),
]


test_forward, test_gradient = case_tests(CASES + DIV_SQRT_DIM_CASES)


@parametrize_cases(CASES)
def test_fast_forward_matches_forward(case):
    assert check_fast_forward(case), 'unary operators give the executor a bare function'


@parametrize_cases(CASES)
def test_unknown_shapes_and_types_pass_through(case):
    op = case.make_op()
    assert op.infer_shape([None])[1] == [None]
    assert op.infer_shape([(2, 0, 3)])[1] == [(2, 0, 3)]
    _, out_types, _ = op.infer_type([None])
    assert out_types[0] is None or op.name == 'Cast'


def test_cast_infers_output_type_only():
    op = get_op('cast')(dtype='float16')
    assert op.infer_type([np.dtype('float64')]) == ([np.dtype('float64')],
                                                   [np.dtype('float16')], [])
    assert op.infer_type([None])[1] == [np.dtype('float16')]


def test_output_does_not_alias_input():
    # identity-like operators must give the executor a fresh array
    x = np.arange(6.0).reshape(2, 3)
    for name in ('_copy', 'BlockGrad', 'Cast'):
        kw = {'dtype': 'float64'} if name == 'Cast' else {}
        y = get_op(name)(**kw).fast_forward(np, False)(x)
        assert not np.shares_memory(x, y), name


@pytest.mark.parametrize('name, kwargs, match', [
    ('clip', {'a_min': 0}, 'a_max'),
    ('Cast', {'dtype': 'complex64'}, 'dtype'),
])
def test_bad_parameters(name, kwargs, match):
    with pytest.raises(MXNetError, match=match):
        get_op(name)(**kwargs)


def test_aliases_are_the_same_operator():
    assert get_op('identity') is get_op('_copy')
    assert get_op('stop_gradient') is get_op('BlockGrad')
    assert get_op('cast') is get_op('Cast')
    assert get_op('identity').name == '_copy'


def test_div_sqrt_dim_through_contrib_and_integers():
    sym = mx.sym.contrib.div_sqrt_dim(mx.sym.var('x'))
    assert '"op": "_contrib_div_sqrt_dim"' in sym.tojson()
    x = mx.nd.array([[3, -3, 5, 7, 8, 9, 10, 11, 12]], dtype='int32')
    np.testing.assert_array_equal(mx.nd.contrib.div_sqrt_dim(x).asnumpy(),
                                  [[1, -1, 1, 2, 2, 3, 3, 3, 4]])   # MXNet 1.9.1's values
