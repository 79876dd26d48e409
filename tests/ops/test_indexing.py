"""take, Embedding, one_hot, where, batch_take, ``_ravel_multi_index``, ``_unravel_index``,
``_contrib_index_array`` and ``_contrib_boolean_mask`` (ops/indexing.py) against NumPy / loop
references, plus their shape, type and index rules (golden values from MXNet 1.9.1 are in
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


def _indices(idx):
    """Input maker: a float array and fixed (float) indices."""
    def make(rng, shapes, dtype):
        return [rng.uniform(-1, 1, shapes[0]), np.asarray(idx, dtype='float64')]
    return make

def _take_ref(axis, mode):
    def f(a, idx):
        i = np.trunc(idx).astype(np.int64)
        n = a.shape[axis]
        i = np.clip(i, 0, n - 1) if mode == 'clip' else np.mod(i, n)
        return np.take(a, i, axis=axis)
    return f

def _emb_inputs(idx, input_dim, output_dim):
    def make(rng, shapes, dtype):
        return [np.asarray(idx, dtype='float64'), rng.uniform(-1, 1, (input_dim, output_dim))]
    return make

def _emb_ref(input_dim):
    def f(d, w):
        return w[np.clip(np.trunc(d).astype(np.int64), 0, input_dim - 1)]
    return f

def _one_hot_ref(depth, on, off, dtype):
    def f(idx):
        i = np.trunc(idx).astype(np.int64)
        out = np.full(idx.shape + (depth,), off, dtype=dtype)
        for pos in np.ndindex(idx.shape):
            if 0 <= i[pos] < depth:
                out[pos + (i[pos],)] = on
        return out
    return f

def _where_inputs(cond):
    def make(rng, shapes, dtype):
        return [np.asarray(cond, dtype='float64')] + [rng.uniform(-1, 1, s) for s in shapes[1:]]
    return make

def _where_ref(c, x, y):
    m = c.reshape(c.shape + (1,) * (x.ndim - c.ndim)) != 0
    return np.where(m, x, y)


TAKE_CASES = [
    OpCase('take', {}, [(5, 3), (2, 3)], inputs=_indices([[0, 7, -2], [4, 4, 1.5]]),
           ref=_take_ref(0, 'clip'), grad=(0,)),
    OpCase('take', dict(mode='wrap', axis=-1), [(2, 5, 3), (5,)],
           inputs=_indices([2, 0, 2, -4, 3.7]), ref=_take_ref(-1, 'wrap'), grad=(0,)),
    OpCase('take', dict(mode='wrap', axis=1), [(2, 5, 3), (2, 2)],
           inputs=_indices([[6, -1], [1, 1]]), ref=_take_ref(1, 'wrap'), grad=(0,)),
    OpCase('take', dict(mode='raise', axis=1), [(2, 5, 3), (4,)],
           inputs=_indices([2, 0, 2, 4]), ref=_take_ref(1, 'clip'), grad=(0,)),
    OpCase('Embedding', dict(input_dim=5, output_dim=3, dtype='float64'), [(2, 3), (5, 3)],
           inputs=_emb_inputs([[0, 4, 4], [7, -1, 2.5]], 5, 3), ref=_emb_ref(5), grad=(1,),
           dtypes=('float64',)),
    OpCase('Embedding', dict(input_dim=4, output_dim=2, dtype='float64'), [(5,), (4, 2)],
           inputs=_emb_inputs([3, 1, 3, 3, 0], 4, 2), ref=_emb_ref(4), grad=(1,),
           dtypes=('float64',)),
    OpCase('one_hot', dict(depth=4, on_value=2.5, off_value=-1, dtype='float64'), [(2, 3)],
           inputs=lambda rng, s, d: [np.array([[0, 3, -1], [5, 1.9, 2]])],
           ref=_one_hot_ref(4, 2.5, -1, 'float64'), grad=()),
    OpCase('one_hot', dict(depth=3), [(4,)], inputs=lambda rng, s, d: [np.array([2, 0, 0, 1])],
           ref=_one_hot_ref(3, 1, 0, 'float32'), grad=()),
    OpCase('where', {}, [(3, 4), (3, 4), (3, 4)],
           inputs=_where_inputs([[1, 0, 0, 2], [0, 0, 1, 1], [1, 1, 1, 0]]),
           ref=_where_ref, grad=(1, 2)),
    OpCase('where', {}, [(3,), (3, 2), (3, 2)], inputs=_where_inputs([1, 0, -2]),
           ref=_where_ref, grad=(1, 2)),
]


test_forward, test_gradient = case_tests(TAKE_CASES + CASES + RAVEL_CASES + INDEX_ARRAY_CASES)


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


def test_embedding_fills_weight_and_checks_it():
    op = get_op('Embedding')(input_dim=7, output_dim=3)
    ins, outs, _ = op.infer_shape([(4, 2), None])
    assert ins[1] == (7, 3) and outs == [(4, 2, 3)]
    with pytest.raises(ShapeError, match="'weight'"):
        op.infer_shape([(4, 2), (7, 4)])


def test_embedding_types():
    op = get_op('Embedding')(input_dim=3, output_dim=2, dtype='float64')
    ins, outs, _ = op.infer_type([np.dtype('int32'), None])
    assert ins == [np.dtype('int32'), np.dtype('float64')] and outs == [np.dtype('float64')]
    op = get_op('Embedding')(input_dim=3, output_dim=2)
    assert op.infer_type([np.dtype('float64'), None])[1] == [np.dtype('float32')]
    # a given weight's type wins over dtype, as in MXNet 1.9.1 (float16 exports keep
    # dtype='float32' on their Embedding nodes)
    assert op.infer_type([np.dtype('float32'), np.dtype('float16')])[1] == [np.dtype('float16')]
    w = np.arange(6, dtype='float32').reshape(3, 2)
    out, = op.forward(np, [np.array([2, 0], dtype='float32'), w], [], False)
    assert out.dtype == np.float32 and out.tolist() == [[4, 5], [0, 1]]


def test_where_shapes():
    op = get_op('where')()
    assert op.infer_shape([(3,), (3, 4), None]) == ([(3,), (3, 4), (3, 4)], [(3, 4)], [])
    with pytest.raises(ShapeError, match="'condition'"):
        op.infer_shape([(2, 4), (3, 4), (3, 4)])


def test_take_raise_mode_out_of_range():
    op = get_op('take')(mode='raise')
    with pytest.raises(MXNetError):
        op.forward(np, [np.zeros((3, 2)), np.array([0.0, 3.0])], [], False)


def test_take_gradient_accumulates_repeated_indices():
    op = get_op('take')(axis=1)
    a = np.zeros((2, 3))
    idx = np.array([[2, 2], [2, 0]], dtype='float64')
    g = np.ones((2, 2, 2))
    ga, gi = op.backward(np, [g], [a, idx], None, [], [True, True])
    np.testing.assert_array_equal(ga, [[1, 0, 3], [1, 0, 3]])
    np.testing.assert_array_equal(gi, np.zeros_like(idx))


def test_embedding_gradient_accumulates_and_clips():
    op = get_op('Embedding')(input_dim=3, output_dim=2)
    w = np.zeros((3, 2), dtype='float32')
    d = np.array([0, 0, 9, -4], dtype='float32')    # 9 -> row 2, -4 -> row 0
    g = np.arange(8, dtype='float32').reshape(4, 2)
    gd, gw = op.backward(np, [g], [d, w], None, [], [False, True])
    np.testing.assert_array_equal(gw, [[0 + 2 + 6, 1 + 3 + 7], [0, 0], [4, 5]])
    assert gd is None and gw.dtype == np.float32


def test_embedding_weight_through_symbol():
    x = mx.sym.var('x')
    e = mx.sym.Embedding(x, input_dim=7, output_dim=3, name='e')
    args, outs, _ = e.infer_shape(x=(4, 2))
    assert args == [(4, 2), (7, 3)] and outs == [(4, 2, 3)]
