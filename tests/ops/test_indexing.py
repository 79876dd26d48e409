"""batch_take, ``_ravel_multi_index``, ``_unravel_index``, ``_contrib_index_array`` and
``_contrib_boolean_mask`` (ops/indexing.py) against loop references, plus their shape, type
and index rules (golden values from MXNet 1.9.1 are in
tests/golden/graphs_compute_indexing_extra.py and graphs_compute_split_index.py)."""
import numpy as np
import pytest

import symgraph as mx
from _refs import _v, _with_index, given
from harness import case_tests, OpCase
from symgraph.base import MXNetError
from symgraph.opdef import ShapeError, TypeInferenceError, get_op


def _batch_take_ref(a, indices):
    rows = a.reshape(-1, a.shape[-1])
    flat = indices.reshape(-1)
    out = [rows[r, min(max(int(flat[r]), 0), a.shape[-1] - 1)] for r in range(len(flat))]
    return np.array(out, a.dtype).reshape(indices.shape)


CASES = [
    OpCase('batch_take', {}, [(4, 3), (4,)], ref=_batch_take_ref, grad=(),
           inputs=_with_index([0, 2, 5, -1], dtype='int32')),
    OpCase('batch_take', {}, [(2, 3, 4), (3, 2)], ref=_batch_take_ref, grad=(),
           inputs=_with_index([[0, 1], [2, 3], [3, 0]], dtype='int32')),
]


def _ravel_ref(shape):
    def ref(x):
        i = np.trunc(x).astype(np.int64)
        r = np.zeros(x.shape[1:], np.int64)
        for j, n in enumerate(shape):
            r = r * n + i[j]
        return r.astype(x.dtype)
    return ref


def _unravel_ref(shape):
    def ref(x):
        rows = []
        for v in np.trunc(x).astype(np.int64).reshape(-1):
            col = []
            for n in reversed(shape[1:]):
                q = int(v / n)              # C division
                col.append(v - q * n)
                v = q
            rows.append([v] + col[::-1])
        return np.array(rows, np.int64).T.reshape((len(shape),) + x.shape).astype(x.dtype)
    return ref


RAVEL_CASES = [
    OpCase('_ravel_multi_index', dict(shape=(7, 6)), [(2, 5)],
           inputs=given([[3, 6, 6, -1, 7], [4, 5, 1, 2, 9]]),
           ref=lambda x: np.array([22, 41, 37, -4, 51], x.dtype), grad=()),
    OpCase('ravel_multi_index', dict(shape=(4, 3, 5)), [(3, 4)],
           inputs=given([[2, 1, 3, 0], [1, 2, 0, 2], [0, 4, 3, 1]]),
           ref=_ravel_ref((4, 3, 5)), grad=()),
    OpCase('ravel_multi_index', dict(shape=(7, 6)), [(2, 3)],
           inputs=given([[2.5, 1.7, -1], [3.9, 0.5, 2.5]]),
           ref=lambda x: np.array([15, 6, -3], x.dtype), grad=(), dtypes=('float32',),
           id='ravel_multi_index[truncated at every step, MXNet 1.9.1]'),
    OpCase('_ravel_multi_index', dict(shape=(5, 6)), [(2, 3)], dtypes=('int32', 'int64'),
           inputs=given(np.array([[1, 2, 4], [0, 5, 3]], np.int32)),
           ref=_ravel_ref((5, 6)), grad=()),
    OpCase('_unravel_index', dict(shape=(7, 6)), [(6,)],
           inputs=given([22, 41, 37, 50, -1, 3.7]),
           ref=lambda x: np.array([[3, 6, 6, 8, 0, 0], [4, 5, 1, 2, -1, 3]], x.dtype),
           grad=()),
    OpCase('unravel_index', dict(shape=(-1, 3, 4)), [(6,)],
           inputs=given([0, 13, 25, 7, 30, 11.5]), ref=_unravel_ref((-1, 3, 4)), grad=()),
]


def _index_ref(axes=None):
    def ref(x):
        out = np.empty(x.shape + (x.ndim if axes is None else len(axes),), np.int64)
        for pos in np.ndindex(*x.shape):
            out[pos] = [pos[a] for a in (range(x.ndim) if axes is None else axes)]
        return out
    return ref


INDEX_ARRAY_CASES = [
    OpCase('_contrib_index_array', {}, [(2, 3)], ref=_index_ref(), grad=()),
    OpCase('_contrib_index_array', {'axes': (2, -3)}, [(2, 3, 4)], ref=_index_ref((2, 0)),
           grad=()),
]


test_forward, test_gradient = case_tests(CASES + RAVEL_CASES + INDEX_ARRAY_CASES)


def test_batch_take_rules():
    a, i = _v('a', 'i')
    b = mx.sym.batch_take(a, i, name='b')
    assert b.infer_shape(a=(2, 3, 4), i=(3, 2))[1] == [(3, 2)]
    assert b.infer_type(a='float64')[0] == [np.float64, np.int32]
    with pytest.raises(ShapeError, match="'indices' has shape \\(5,\\)"):
        b.infer_shape(a=(3, 4), i=(5,))
    with pytest.raises(ShapeError, match='at least 2'):
        b.infer_shape(a=(3,), i=(3,))
    with pytest.raises(TypeInferenceError, match='int32'):
        b.infer_type(a='float32', i='float32')
    out = mx.nd.batch_take(mx.nd.array(np.arange(12.0).reshape(3, 4)),
                           mx.nd.array([0, 100, -50], dtype='int32'))
    np.testing.assert_array_equal(out.asnumpy(), [0, 7, 8])            # clipped, as MXNet


def test_ravel_unravel_errors_and_zero_gradient():
    with pytest.raises(MXNetError, match='shape must be given'):
        mx.nd.ravel_multi_index(mx.nd.ones((2, 3)))
    with pytest.raises(ShapeError, match='must have 2 rows'):
        get_op('_ravel_multi_index')(shape=(3, 4)).infer_shape([(3, 5)])
    with pytest.raises(ShapeError, match='two-dimensional'):
        get_op('_ravel_multi_index')(shape=(3, 4)).infer_shape([(2, 5, 1)])
    with pytest.raises(ShapeError, match='one-dimensional'):
        get_op('_unravel_index')(shape=(3, 4)).infer_shape([(2, 5)])
    x = mx.sym.var('x')
    for s, v in ((mx.sym.ravel_multi_index(x, shape=(7, 6)), [[1, 2, 3], [0, 1, 2]]),
                 (mx.sym.unravel_index(x, shape=(7, 6)), [1, 2, 3])):
        ex = s.simple_bind(mx.cpu(), x=np.shape(v))
        ex.forward(is_train=True, x=mx.nd.array(v))
        ex.backward(mx.nd.ones(ex.outputs[0].shape))
        np.testing.assert_array_equal(ex.grad_dict['x'].asnumpy(), np.zeros(np.shape(v)))


def test_index_array_errors():
    with pytest.raises(ShapeError, match='index_array: axes entry 3'):
        get_op('_contrib_index_array')(axes=(3,)).infer_shape([(2, 3)])


# ``_contrib_boolean_mask``: data-dependent output length, so it is tested here rather than
# through the OpCase table (listed in test_registry.TESTED_ELSEWHERE). Values seen on MXNet
# 1.9.1 (``mx.nd.contrib.boolean_mask`` and a bound symbol's backward) are pinned below.
_BM_X = np.array([[-1.5, -0.5, 0.5], [1.5, 2.5, 0.2]], np.float32)


def test_boolean_mask_forward_as_mxnet():
    x = mx.nd.array(_BM_X)
    np.testing.assert_array_equal(mx.nd.contrib.boolean_mask(x, mx.nd.array([0, 1])).asnumpy(),
                                  _BM_X[1:])
    assert mx.nd.contrib.boolean_mask(x, mx.nd.array([0, 0])).shape == (0, 3)
    # any nonzero index keeps the row (MXNet: 0.5 and -1 both keep)
    np.testing.assert_array_equal(
        mx.nd.contrib.boolean_mask(x, mx.nd.array([0.5, -1])).asnumpy(), _BM_X)
    y = mx.nd.contrib.boolean_mask(mx.nd.array(np.arange(24.).reshape(4, 3, 2)),
                                   mx.nd.array([1, 0, 1, 0], dtype='int32'))
    np.testing.assert_array_equal(y.asnumpy(), np.arange(24.).reshape(4, 3, 2)[[0, 2]])


def test_boolean_mask_gradient_as_mxnet_and_numeric():
    op = get_op('_contrib_boolean_mask')()
    idx = np.array([0.0, 1.0])
    gd, gi = op.backward(np, [np.full((1, 3), 3.0)], [_BM_X.astype(np.float64), idx], None, [],
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


def test_boolean_mask_shapes_and_errors():
    op = get_op('_contrib_boolean_mask')()
    assert op.infer_shape([(4, 3), (4,)])[1] == [None]           # known only at run time
    with pytest.raises(ShapeError, match='must have the length'):
        op.infer_shape([(4, 3), (5,)])
    with pytest.raises(ShapeError, match='must be 1-D'):
        op.infer_shape([(4, 3), (4, 1)])
    with pytest.raises(MXNetError, match='axis=1 is not supported'):
        mx.nd.contrib.boolean_mask(mx.nd.array(_BM_X), mx.nd.array([1, 0, 1]), axis=1)
    assert op.infer_type([np.dtype('float64'), np.dtype('int32')])[1] == [np.float64]
