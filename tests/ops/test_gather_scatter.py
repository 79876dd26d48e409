"""gather_nd, scatter_nd, ``_scatter_set_nd``, fill_element_0index, contrib index_copy and
count_sketch (ops/gather_scatter.py) against loop references, plus their shape, type and index
rules (golden values from MXNet 1.9.1 are in tests/golden/graphs_compute_indexing_extra.py and
graphs_compute_split_index.py; none for count_sketch, which MXNet 1.9.1 runs on the GPU
only)."""
import itertools

import numpy as np
import pytest

import symgraph as mx
from _refs import F16, _v, _with_index, given
from harness import case_tests, OpCase
from symgraph.base import MXNetError
from symgraph.opdef import ShapeError, get_op


def _gather_ref(data, indices):
    m = indices.shape[0]
    ys = indices.shape[1:]
    out = np.zeros(ys + data.shape[m:], data.dtype)
    for y in itertools.product(*[range(n) for n in ys]):
        pos = []
        for k in range(m):
            x = float(indices[(k,) + y])
            pos.append(int(x + data.shape[k] if x < 0 else x))
        out[y] = data[tuple(pos)]
    return out


def _scatter_ref(shape):
    def ref(data, indices):
        m = indices.shape[0]
        out = np.zeros(shape, data.dtype)
        for y in itertools.product(*[range(n) for n in indices.shape[1:]]):
            out[tuple(int(indices[(k,) + y]) for k in range(m))] = data[y]
        return out
    return ref


def _fill_ref(lhs, mhs, rhs):
    out = lhs.copy()
    for r in range(lhs.shape[0]):
        out[r, int(rhs[r])] = mhs[r]
    return out


def _index_copy_ref(old, idx, new):
    out = old.copy()
    for r in range(len(idx)):
        out[int(idx[r])] = new[r]
    return out


CASES = [
    OpCase('gather_nd', {}, [(2, 3, 4), (2, 5)], ref=_gather_ref, grad=(0,), dtypes=F16,
           inputs=_with_index([[1, 0, -1, 0.7, -0.5], [2, 0, -3, 1.5, 1]])),
    OpCase('gather_nd', {}, [(2, 3, 4), (3, 2, 2)], ref=_gather_ref, grad=(0,),
           inputs=_with_index([[[0, 1], [1, 1]], [[2, 0], [2, 2]], [[3, 0], [3, 1]]])),
    OpCase('gather_nd', {}, [(4, 3), (1, 3)], ref=_gather_ref, grad=(0,),
           inputs=_with_index([[3, 0, 2]], dtype='int32')),
    OpCase('scatter_nd', dict(shape=(3, 4, 2)), [(5, 2), (2, 5)], ref=_scatter_ref((3, 4, 2)),
           grad=(0,), inputs=_with_index([[0, 2, 1, 2, 0], [1, 3, 0, 0, 3.9]]), dtypes=F16),
    OpCase('scatter_nd', dict(shape=(4, 3)), [(2, 2), (2, 2, 2)], ref=_scatter_ref((4, 3)),
           grad=(0,), inputs=_with_index([[[0, 3], [1, 2]], [[0, 2], [1, 0]]])),
    OpCase('scatter_nd', dict(shape=(5,)), [(3,), (1, 3)], ref=_scatter_ref((5,)),
           grad=(0,), inputs=_with_index([[4, 0, 2]], dtype='int64')),
    OpCase('fill_element_0index', {}, [(3, 4), (3,), (3,)], ref=_fill_ref, grad=(),
           inputs=_with_index([1, 3.7, 0], pos=2)),
    OpCase('_contrib_index_copy', {}, [(5, 3), (2,), (2, 3)], ref=_index_copy_ref,
           grad=(0, 2), inputs=_with_index([4, 1.7]), dtypes=F16),
    OpCase('_contrib_index_copy', {}, [(4, 2, 3), (3,), (3, 2, 3)], ref=_index_copy_ref,
           grad=(0, 2), inputs=_with_index([0, 3, 2], dtype='int64')),
    OpCase('_contrib_index_copy', {}, [(4,), (1,), (1,)], ref=_index_copy_ref,
           grad=(0, 2), inputs=_with_index([2])),
]


def _set_ref(lhs, rhs, ind):
    out = lhs.copy()
    i = np.trunc(ind).astype(np.int64)
    out[tuple(i)] = rhs
    return out


_LHS = np.arange(24, dtype=np.float64).reshape(3, 4, 2)


SCATTER_SET_ND_CASES = [
    OpCase('_scatter_set_nd', dict(shape=(3, 4, 2)), [(3, 4, 2), (2, 2), (2, 2)],
           inputs=given(_LHS, [[100, 101], [200, 201]], [[0, 2], [1, 3]]),
           ref=_set_ref, grad=()),
    OpCase('_scatter_set_nd', dict(shape=(3, 4, 2)), [(3, 4, 2), (3,), (3, 3)],
           inputs=given(_LHS, [7, 8, 9], [[0, 2, 1], [1, 3, 0], [1, 0, 1]]),
           ref=_set_ref, grad=()),
]


def _sketch_inputs(h, s):
    def make(rng, shapes, dtype):
        return [rng.uniform(-1, 1, shapes[0]), np.array([h], np.float64),
                np.array([s], np.float64)]
    return make


def _sketch_ref(out_dim):
    def ref(x, h, s):
        out = np.zeros((x.shape[0], out_dim))
        for n, j in np.ndindex(*x.shape):
            out[n, int(h[0, j])] += s[0, j] * x[n, j]
        return out
    return ref


COUNT_SKETCH_CASES = [
    OpCase('_contrib_count_sketch', {'out_dim': 4}, [(3, 6), (1, 6), (1, 6)],
           inputs=_sketch_inputs([0, 3, 1, 3, 2, 0], [1, -1, 1, 1, -1, 1]),
           ref=_sketch_ref(4), grad=(0,)),
    OpCase('_contrib_count_sketch', {'out_dim': 7, 'processing_batch_size': 2},
           [(5, 4), (1, 4), (1, 4)], inputs=_sketch_inputs([6, 6, 0, 2], [-1, -1, 1, -1]),
           ref=_sketch_ref(7), grad=(0,)),
]


test_forward, test_gradient = case_tests(CASES + SCATTER_SET_ND_CASES + COUNT_SKETCH_CASES)


def test_gather_nd_shapes_and_errors():
    d, i = _v('d', 'i')
    g = mx.sym.gather_nd(d, i, name='g')
    assert g.infer_shape(d=(2, 3, 4), i=(2, 5, 6))[1] == [(5, 6, 4)]
    assert g.infer_shape(d=(2, 3, 4), i=(3, 2))[1] == [(2,)]
    with pytest.raises(ShapeError, match="'g'.*at least 2 dimensions"):
        g.infer_shape(d=(2, 3, 4), i=(3,))
    with pytest.raises(ShapeError, match='4 indices exceed the 3 dimensions'):
        g.infer_shape(d=(2, 3, 4), i=(4, 2))
    assert g.infer_type(d='float64', i='float32')[1] == [np.float64]


@pytest.mark.parametrize('bad', [1.5, 2, -2.5])
def test_gather_nd_checks_float_indices_as_mxnet_does(bad):
    data = mx.nd.array(np.arange(24.0).reshape(2, 3, 4))
    with pytest.raises(MXNetError, match='index %g is out of bounds for axis 0 with size 2'
                       % bad):
        mx.nd.gather_nd(data, mx.nd.array([[bad], [0]]))


def test_gather_nd_wraps_negative_indices_then_truncates():
    data = mx.nd.array(np.arange(24.0).reshape(2, 3, 4))
    out = mx.nd.gather_nd(data, mx.nd.array([[-0.5, -2, 0.9], [0, 0, 0]])).asnumpy()
    np.testing.assert_array_equal(out[:, 0], [12, 0, 0])      # as MXNet 1.9.1 gives


def test_gather_nd_gradient_accumulates_repeats_and_wraps():
    op = get_op('gather_nd')()
    data = np.zeros((2, 3))
    idx = np.array([[1, 1, -1], [2, 2, 1]], dtype=np.float32)
    g = op.backward(np, [np.ones(3)], [data, idx], None, [], [True, True])
    np.testing.assert_array_equal(g[0], [[0, 0, 0], [0, 1, 2]])
    assert not g[1].any() and g[1].dtype == np.float32


def test_scatter_nd_shapes_and_errors():
    d, i = _v('d', 'i')
    s = mx.sym.scatter_nd(d, i, shape=(2, 3, 4), name='s')
    assert s.infer_shape(d=(5, 6, 4), i=(2, 5, 6))[1] == [(2, 3, 4)]
    assert s.infer_shape(d=(5, 6), i=(3, 5, 6))[1] == [(2, 3, 4)]
    assert s.infer_shape_partial(i=(2, 5))[0] == [(5, 4), (2, 5)]
    with pytest.raises(ShapeError, match="'data' has shape \\(5, 7, 4\\).*need \\(5, 6, 4\\)"):
        s.infer_shape(d=(5, 7, 4), i=(2, 5, 6))
    with pytest.raises(ShapeError, match='4 indices exceed'):
        s.infer_shape(d=(5, 6, 4), i=(4, 5, 6))
    with pytest.raises(MXNetError, match='required parameter'):
        mx.sym.scatter_nd(d, i)


def test_scatter_nd_last_write_wins_and_checks_range():
    data = mx.nd.array([[1, 2], [3, 4], [5, 6]])
    out = mx.nd.scatter_nd(data, mx.nd.array([[1, 0, 1.99]]), shape=(2, 2))
    np.testing.assert_array_equal(out.asnumpy(), [[3, 4], [5, 6]])   # MXNet 1.9.1's result
    for bad in (-1, 2):
        with pytest.raises(MXNetError, match='scatter_nd.*out of range'):
            mx.nd.scatter_nd(data, mx.nd.array([[1, 0, bad]]), shape=(2, 2))


def test_scatter_nd_gradient_is_gather_nd():
    op = get_op('scatter_nd')(shape=(2, 2))
    head = np.array([[1.0, 2.0], [3.0, 4.0]])
    g = op.backward(np, [head], [np.zeros((3, 2)), np.array([[1.0, 0, 1]])], None, [],
                    [True, False])
    np.testing.assert_array_equal(g[0], [[3, 4], [1, 2], [3, 4]])      # as MXNet


def test_fill_element_0index_rules():
    lhs, mhs, rhs = _v('l', 'm', 'r')
    f = mx.sym.fill_element_0index(lhs, mhs, rhs, name='f')
    assert f.list_arguments() == ['l', 'm', 'r']
    assert f.infer_shape_partial(l=(3, 4))[0] == [(3, 4), (3,), (3,)]
    with pytest.raises(ShapeError, match="'mhs' has shape \\(3, 1\\) but must be 1-D"):
        f.infer_shape(l=(3, 4), m=(3, 1), r=(3,))
    with pytest.raises(ShapeError, match="'rhs' has 2 rows"):
        f.infer_shape(l=(3, 4), m=(3,), r=(2,))
    a = mx.nd.array(np.arange(12.0).reshape(3, 4))
    with pytest.raises(MXNetError, match="'rhs' holds 4, out of range"):
        mx.nd.fill_element_0index(a, mx.nd.array([1, 2, 3]), mx.nd.array([0, 4, 1]))


def test_index_copy_rules():
    o, i, n = _v('o', 'i', 'n')
    c = mx.sym.contrib.index_copy(o, i, n, name='c')
    assert c.infer_shape(o=(5, 3, 2), i=(2,), n=(2, 3, 2))[1] == [(5, 3, 2)]
    with pytest.raises(ShapeError, match="'index_vector' has 2 entries but 'new_tensor' has 3"):
        c.infer_shape(o=(5, 3), i=(2,), n=(3, 3))
    with pytest.raises(ShapeError, match="'index_vector' has shape \\(2, 1\\)"):
        c.infer_shape(o=(5, 3), i=(2, 1), n=(2, 3))
    with pytest.raises(ShapeError, match="'new_tensor' has shape \\(2, 4\\)"):
        c.infer_shape(o=(5, 3), i=(2,), n=(2, 4))
    with pytest.raises(ShapeError, match="'new_tensor' has shape \\(2, 3, 1\\)"):
        c.infer_shape(o=(5, 3), i=(2,), n=(2, 3, 1))
    old = mx.nd.array(np.arange(15.0).reshape(5, 3))
    new = mx.nd.array(-np.arange(6.0).reshape(2, 3) - 1)
    out = mx.nd.contrib.index_copy(old, mx.nd.array([4, 4]), new).asnumpy()
    np.testing.assert_array_equal(out[4], [-4, -5, -6])                 # last write wins
    with pytest.raises(MXNetError, match="'index_vector' holds -1, out of range"):
        mx.nd.contrib.index_copy(old, mx.nd.array([4, -1]), new)


def test_index_copy_gradient_with_repeated_rows_as_mxnet():
    op = get_op('_contrib_index_copy')()
    head = np.arange(15.0).reshape(5, 3) + 1
    g = op.backward(np, [head], [np.zeros((5, 3)), np.array([4.0, 4.0]), np.zeros((2, 3))],
                    None, [], [True, True, True])
    np.testing.assert_array_equal(g[0][4], [0, 0, 0])
    np.testing.assert_array_equal(g[0][:4], head[:4])
    np.testing.assert_array_equal(g[2], [[13, 14, 15], [13, 14, 15]])
    assert not g[1].any()


def test_scatter_set_nd_errors():
    op = get_op('_scatter_set_nd')(shape=(3, 4))
    with pytest.raises(ShapeError, match="'rhs' has shape"):
        op.infer_shape([(3, 4), (3,), (2, 2)])
    with pytest.raises(ShapeError, match="'lhs' has shape"):
        op.infer_shape([(4, 4), (2,), (2, 2)])
    with pytest.raises(MXNetError, match='out of range'):
        op.forward(np, [np.zeros((3, 4)), np.ones(2), np.array([[0, 3], [1, 1]])], [], False)
