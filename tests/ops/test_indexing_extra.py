"""gather_nd, scatter_nd, batch_take, choose_element_0index, fill_element_0index, khatri_rao,
contrib index_copy / div_sqrt_dim / arange_like / AdaptiveAvgPooling2D (ops/gather_scatter.py,
ops/indexing.py, ops/dot.py, ops/unary.py, ops/init.py, ops/resize.py) against loop
references, plus their shape, type and index rules (golden values from MXNet 1.9.1 are in
tests/golden/graphs_compute_indexing_extra.py)."""
import itertools
import math

import numpy as np
import pytest

import symgraph as mx
from harness import case_tests, OpCase
from symgraph.base import MXNetError
from symgraph.opdef import ShapeError, TypeInferenceError, get_op


def _with_index(index, pos=1, dtype=None):
    """Inputs: uniform data, with the fixed ``index`` array at position ``pos``."""
    def make(rng, shapes, dt):
        arrs = [rng.uniform(-1, 1, s) for s in shapes]
        arrs[pos] = np.array(index, dtype=dtype or dt)
        return arrs
    return make


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


def _batch_take_ref(a, indices):
    rows = a.reshape(-1, a.shape[-1])
    flat = indices.reshape(-1)
    out = [rows[r, min(max(int(flat[r]), 0), a.shape[-1] - 1)] for r in range(len(flat))]
    return np.array(out, a.dtype).reshape(indices.shape)


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


def _khatri_rao_ref(*mats):
    n = mats[0].shape[1]
    cols = []
    for j in range(n):
        col = np.ones(1)
        for m in mats:
            col = np.kron(col, m[:, j])
        cols.append(col)
    return np.stack(cols, axis=1).astype(mats[0].dtype)


def _arange_like_ref(start=0.0, step=1.0, repeat=1, axis=None):
    def ref(x):
        shape = x.shape if axis is None else (x.shape[axis],)
        n = int(np.prod(shape))
        vals = [x.dtype.type(start) + x.dtype.type(i // repeat) * x.dtype.type(step)
                for i in range(n)]
        return np.array(vals, x.dtype).reshape(shape)
    return ref


def _adaptive_ref(oh, ow):
    def ref(x):
        n, c, h, w = x.shape
        out = np.zeros((n, c, oh, ow), x.dtype)
        for i in range(oh):
            h0, h1 = (i * h) // oh, math.ceil((i + 1) * h / oh)
            for j in range(ow):
                w0, w1 = (j * w) // ow, math.ceil((j + 1) * w / ow)
                out[:, :, i, j] = x[:, :, h0:h1, w0:w1].mean(axis=(2, 3))
        return out
    return ref


F16 = ('float16', 'float32', 'float64')
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
    OpCase('batch_take', {}, [(4, 3), (4,)], ref=_batch_take_ref, grad=(),
           inputs=_with_index([0, 2, 5, -1], dtype='int32')),
    OpCase('batch_take', {}, [(2, 3, 4), (3, 2)], ref=_batch_take_ref, grad=(),
           inputs=_with_index([[0, 1], [2, 3], [3, 0]], dtype='int32')),
    OpCase('choose_element_0index', {}, [(3, 4), (3,)], grad=(0,),
           ref=lambda x, i: x[np.arange(3), i.astype(int)],
           inputs=_with_index([3, 0, 1.5])),
    OpCase('fill_element_0index', {}, [(3, 4), (3,), (3,)], ref=_fill_ref, grad=(),
           inputs=_with_index([1, 3.7, 0], pos=2)),
    OpCase('_contrib_index_copy', {}, [(5, 3), (2,), (2, 3)], ref=_index_copy_ref,
           grad=(0, 2), inputs=_with_index([4, 1.7]), dtypes=F16),
    OpCase('_contrib_index_copy', {}, [(4, 2, 3), (3,), (3, 2, 3)], ref=_index_copy_ref,
           grad=(0, 2), inputs=_with_index([0, 3, 2], dtype='int64')),
    OpCase('_contrib_index_copy', {}, [(4,), (1,), (1,)], ref=_index_copy_ref,
           grad=(0, 2), inputs=_with_index([2])),
    OpCase('khatri_rao', dict(num_args=1), [(3, 2)], ref=_khatri_rao_ref, grad=()),
    OpCase('khatri_rao', dict(num_args=2), [(2, 3), (4, 3)], ref=_khatri_rao_ref, grad=()),
    OpCase('khatri_rao', dict(num_args=3), [(2, 2), (3, 2), (2, 2)], ref=_khatri_rao_ref, grad=()),
    OpCase('_contrib_div_sqrt_dim', {}, [(3, 4)], ref=lambda x: x / 2.0, dtypes=F16),
    OpCase('_contrib_div_sqrt_dim', {}, [(2, 3, 5)], ref=lambda x: x / np.sqrt(5.0)),
    OpCase('_contrib_arange_like', {}, [(3, 4)], ref=_arange_like_ref(), grad=()),
    OpCase('_contrib_arange_like', dict(start=2, step=0.5, repeat=2), [(3, 4)],
           ref=_arange_like_ref(2, 0.5, 2), grad=()),
    OpCase('_contrib_arange_like', dict(start=2, step=3, repeat=2), [(3, 4)], dtypes=F16,
           ref=_arange_like_ref(2, 3, 2), grad=()),
    OpCase('_contrib_arange_like', dict(axis=-2, repeat=2, start=1.5), [(3, 4)],
           ref=_arange_like_ref(1.5, 1, 2, -2), grad=()),
    OpCase('_contrib_arange_like', dict(axis=1, step=-3), [(2, 5, 3)],
           ref=_arange_like_ref(0, -3, 1, 1), grad=()),
    OpCase('_contrib_AdaptiveAvgPooling2D', dict(output_size=(3, 2)), [(2, 2, 5, 7)],
           ref=_adaptive_ref(3, 2), dtypes=F16),
    OpCase('_contrib_AdaptiveAvgPooling2D', {}, [(1, 3, 4, 3)], ref=_adaptive_ref(1, 1)),
    OpCase('_contrib_AdaptiveAvgPooling2D', dict(output_size=3), [(1, 2, 4, 5)],
           ref=_adaptive_ref(3, 3)),
    OpCase('_contrib_AdaptiveAvgPooling2D', dict(output_size=(5, 4)), [(1, 1, 3, 2)],
           ref=_adaptive_ref(5, 4)),
]


test_forward, test_gradient = case_tests(CASES)


def _infer(sym, **shapes):
    return sym.infer_shape(**shapes)


def _v(*names):
    return [mx.sym.var(n) for n in names]


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


def test_choose_element_0index_is_pick():
    x, i = _v('x', 'i')
    sym = mx.sym.choose_element_0index(x, i, axis=0, keepdims=True, mode='wrap', name='c')
    assert '"op": "pick"' in sym.tojson()
    assert get_op('choose_element_0index') is get_op('pick')


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


def test_khatri_rao_rules():
    a, b = _v('a', 'b')
    k = mx.sym.khatri_rao(a, b, name='k')
    assert k.list_attr()['num_args'] == '2'
    assert mx.sym.khatri_rao(num_args=2, name='z').list_arguments() == ['z_arg0', 'z_arg1']
    assert k.infer_shape(a=(2, 3), b=(4, 3))[1] == [(8, 3)]
    with pytest.raises(ShapeError, match="'arg1' has 2 columns but the other inputs 3"):
        k.infer_shape(a=(2, 3), b=(4, 2))
    with pytest.raises(ShapeError, match='must be a matrix'):
        k.infer_shape(a=(3,), b=(3,))
    with pytest.raises(TypeInferenceError, match='float32 and float64'):
        k.infer_type(a='float16', b='float16')
    out = mx.nd.khatri_rao(mx.nd.array([[1, -1], [2, -3]]), mx.nd.array([[1, 4], [2, 5],
                                                                         [3, 6]]))
    np.testing.assert_array_equal(out.asnumpy(), [[1, -4], [2, -5], [3, -6], [2, -12],
                                                  [4, -15], [6, -18]])   # MXNet's doc example


def test_div_sqrt_dim_through_contrib_and_integers():
    sym = mx.sym.contrib.div_sqrt_dim(mx.sym.var('x'))
    assert '"op": "_contrib_div_sqrt_dim"' in sym.tojson()
    x = mx.nd.array([[3, -3, 5, 7, 8, 9, 10, 11, 12]], dtype='int32')
    np.testing.assert_array_equal(mx.nd.contrib.div_sqrt_dim(x).asnumpy(),
                                  [[1, -1, 1, 2, 2, 3, 3, 3, 4]])   # MXNet 1.9.1's values


def test_arange_like_rules():
    x = mx.sym.var('x')
    s = mx.sym.contrib.arange_like(x, axis=1, name='a')
    assert s.infer_shape(x=(2, 3))[1] == [(3,)]
    with pytest.raises(ShapeError, match='axis=3 is out of range'):
        mx.sym.contrib.arange_like(x, axis=3).infer_shape(x=(2, 3))
    assert s.infer_type(x='float16')[1] == [np.float16]
    ints = mx.nd.contrib.arange_like(mx.nd.zeros((3, 4), dtype='int32'), step=0.5)
    assert ints.dtype == np.int32 and not ints.asnumpy().any()    # step cast to int first
    half = mx.nd.contrib.arange_like(mx.nd.zeros((5,), dtype='float16'), start=2.5, step=2.9)
    np.testing.assert_array_equal(half.asnumpy(), [2, 4, 6, 8, 10])   # as MXNet 1.9.1
    # positional parameters: start, step, repeat, ctx, axis
    sym = mx.sym.contrib.arange_like(x, 1.0, 2.0, 3, '', 0, name='p')
    assert sym.list_attr() == {'start': '1.0', 'step': '2.0', 'repeat': '3', 'ctx': '',
                               'axis': '0'}


def test_adaptive_avg_pooling_shapes():
    x = mx.sym.var('x')
    pool = mx.sym.contrib.AdaptiveAvgPooling2D
    for size, hw in [((), (1, 1)), (3, (3, 3)), ((3,), (3, 3)), ((3, 2), (3, 2)),
                     ((8, 9), (8, 9)), ((1, 2, 3), (1, 1))]:          # as MXNet 1.9.1
        assert pool(x, output_size=size).infer_shape(x=(2, 3, 5, 7))[1] == [(2, 3) + hw]
    with pytest.raises(ShapeError, match='4-D'):
        pool(x, output_size=2).infer_shape(x=(2, 5, 7))
    with pytest.raises(TypeInferenceError, match='floating point'):
        pool(x).infer_type(x='int32')
    out = mx.nd.contrib.AdaptiveAvgPooling2D(mx.nd.array(np.arange(35.0).reshape(1, 1, 5, 7)),
                                             output_size=(3, 2))
    np.testing.assert_array_equal(out.asnumpy()[0, 0], [[5, 8], [15.5, 18.5], [26, 29]])
