"""``_contrib_round_ste``, ``_contrib_sign_ste``, ``_contrib_gradientmultiplier``
(ops/ste.py), ``_contrib_index_array`` (ops/indexing.py), ``_contrib_allclose``
(ops/binary.py) and ``_square_sum`` (ops/reduce.py) against NumPy references. MXNet 1.9.1's
values are golden cases splitidx_* (tests/golden/graphs_compute_split_index.py);
``_square_sum`` has none: MXNet's CPU build runs it on row_sparse data only."""
import numpy as np
import pytest

import symgraph as mx
from harness import case_tests, OpCase
from symgraph.opdef import ShapeError, get_op


def given(*arrays):
    def make(rng, shapes, dtype):
        return [np.asarray(a, dtype=dtype) for a in arrays]
    return make


def _ones_grad(inputs, outputs, out_grads):
    return [out_grads[0]]


def _round_half_away(x):
    return np.where(x >= 0, np.floor(x + 0.5), -np.floor(-x + 0.5))


def _index_ref(axes=None):
    def ref(x):
        out = np.empty(x.shape + (x.ndim if axes is None else len(axes),), np.int64)
        for pos in np.ndindex(*x.shape):
            out[pos] = [pos[a] for a in (range(x.ndim) if axes is None else axes)]
        return out
    return ref


_H = [[-1.5, -0.5, 0.5, 0.0], [1.5, 2.5, 0.2, -0.7], [3.49, -2.51, 7.0, -0.0]]
CASES = [
    OpCase('_contrib_round_ste', {}, [(3, 4)], inputs=given(_H), ref=_round_half_away,
           grad_ref=_ones_grad),
    OpCase('_contrib_round_ste', {}, [(2, 5)], ref=_round_half_away, grad_ref=_ones_grad),
    OpCase('_contrib_sign_ste', {}, [(3, 4)], inputs=given(_H), ref=np.sign,
           grad_ref=_ones_grad),
    OpCase('_contrib_gradientmultiplier', {'scalar': -2.5}, [(3, 4)], ref=lambda x: x,
           grad_ref=lambda i, o, g: [g[0] * -2.5]),
    OpCase('_contrib_gradientmultiplier', {'scalar': '0.5', 'is_int': 'False'}, [(2, 3)],
           ref=lambda x: x, grad_ref=lambda i, o, g: [g[0] * 0.5]),
    OpCase('_contrib_gradientmultiplier', {'scalar': 2}, [(2, 3)], dtypes=('int32',),
           inputs=given([[-1, 0, 3], [4, -5, 6]]), ref=lambda x: x, grad=()),
    OpCase('_contrib_index_array', {}, [(2, 3)], ref=_index_ref(), grad=()),
    OpCase('_contrib_index_array', {'axes': (2, -3)}, [(2, 3, 4)], ref=_index_ref((2, 0)),
           grad=()),
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
    OpCase('_square_sum', {'axis': 1}, [(3, 4)], ref=lambda x: (x * x).sum(axis=1)),
    OpCase('_square_sum', {'axis': (0,), 'keepdims': True, 'exclude': True}, [(2, 3, 4)],
           ref=lambda x: (x * x).sum(axis=(1, 2), keepdims=True)),
    OpCase('_square_sum', {}, [(2, 3)], ref=lambda x: np.array([(x * x).sum()])),
]

test_forward, test_gradient = case_tests(CASES)


def test_gradient_multiplier_through_the_executor():
    x = mx.sym.var('x')
    y = mx.sym.contrib.gradientmultiplier(x, scalar=-1.0) * 3
    ex = y.simple_bind(mx.cpu(), x=(2, 2))
    ex.forward(is_train=True, x=mx.nd.ones((2, 2)))
    ex.backward(mx.nd.ones((2, 2)))
    np.testing.assert_array_equal(ex.grad_dict['x'].asnumpy(), -3 * np.ones((2, 2)))


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


def test_index_array_errors():
    with pytest.raises(ShapeError, match='index_array: axes entry 3'):
        get_op('_contrib_index_array')(axes=(3,)).infer_shape([(2, 3)])
