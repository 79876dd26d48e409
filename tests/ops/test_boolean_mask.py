"""``_contrib_boolean_mask`` (ops/indexing.py): data-dependent output length, so it is tested
here rather than through the OpCase table (listed in test_registry.TESTED_ELSEWHERE). Values
seen on MXNet 1.9.1 (``mx.nd.contrib.boolean_mask`` and a bound symbol's backward) are
pinned below."""
import numpy as np
import pytest

import symgraph as mx
from symgraph.base import MXNetError
from symgraph.opdef import ShapeError, get_op

X = np.array([[-1.5, -0.5, 0.5], [1.5, 2.5, 0.2]], np.float32)


def test_forward_as_mxnet():
    x = mx.nd.array(X)
    np.testing.assert_array_equal(mx.nd.contrib.boolean_mask(x, mx.nd.array([0, 1])).asnumpy(),
                                  X[1:])
    assert mx.nd.contrib.boolean_mask(x, mx.nd.array([0, 0])).shape == (0, 3)
    # any nonzero index keeps the row (MXNet: 0.5 and -1 both keep)
    np.testing.assert_array_equal(
        mx.nd.contrib.boolean_mask(x, mx.nd.array([0.5, -1])).asnumpy(), X)
    y = mx.nd.contrib.boolean_mask(mx.nd.array(np.arange(24.).reshape(4, 3, 2)),
                                   mx.nd.array([1, 0, 1, 0], dtype='int32'))
    np.testing.assert_array_equal(y.asnumpy(), np.arange(24.).reshape(4, 3, 2)[[0, 2]])


def test_gradient_as_mxnet_and_numeric():
    op = get_op('_contrib_boolean_mask')()
    idx = np.array([0.0, 1.0])
    gd, gi = op.backward(np, [np.full((1, 3), 3.0)], [X.astype(np.float64), idx], None, [],
                         [True, True])
    np.testing.assert_array_equal(gd, [[0, 0, 0], [3, 3, 3]])      # MXNet 1.9.1's values
    np.testing.assert_array_equal(gi, [0, 0])
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, (5, 2))
    idx = np.array([1, 0, 1, 1, 0.0])
    w = rng.uniform(-1, 1, (3, 2))
    g = op.backward(np, [w], [x, idx], None, [], [True, False])[0]
    num = np.zeros_like(x)
    for k in np.ndindex(*x.shape):
        for sgn in (1, -1):
            xx = x.copy()
            xx[k] += sgn * 1e-6
            num[k] += sgn * (op.forward(np, [xx, idx], [], False)[0] * w).sum() / 2e-6
    np.testing.assert_allclose(g, num, rtol=1e-6, atol=1e-8)


def test_shapes_and_errors():
    op = get_op('_contrib_boolean_mask')()
    assert op.infer_shape([(4, 3), (4,)])[1] == [None]           # known only at run time
    with pytest.raises(ShapeError, match='must have the length'):
        op.infer_shape([(4, 3), (5,)])
    with pytest.raises(ShapeError, match='must be 1-D'):
        op.infer_shape([(4, 3), (4, 1)])
    with pytest.raises(MXNetError, match='axis=1 is not supported'):
        mx.nd.contrib.boolean_mask(mx.nd.array(X), mx.nd.array([1, 0, 1]), axis=1)
    assert op.infer_type([np.dtype('float64'), np.dtype('int32')])[1] == [np.float64]
