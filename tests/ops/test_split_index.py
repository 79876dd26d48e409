"""``_split_v2`` (ops/slicing.py), ``_ravel_multi_index`` / ``_unravel_index``
(ops/indexing.py), ``_scatter_set_nd`` (ops/gather_scatter.py), ``_histogram``
(ops/sorting.py), ``_zeros_without_dtype`` (ops/init.py) and ``cast_storage``
(ops/shape.py) against NumPy references, plus their Python wrappers (``mx.nd.split_v2``,
``mx.sym.histogram`` ...) and errors. Values seen on MXNet 1.9.1 are pinned below; the
golden cases are ``splitidx_*`` in tests/golden/graphs_compute_split_index.py."""
import warnings

import numpy as np
import pytest

import symgraph as mx
from harness import case_tests, OpCase
from symgraph.base import MXNetError
from symgraph.opdef import ShapeError, get_op


def given(*arrays):
    """Inputs: the given arrays, lists in the case's dtype (NumPy integer arrays kept)."""
    def make(rng, shapes, dtype):
        return [a if isinstance(a, np.ndarray) and a.dtype.kind in 'iu' else
                np.asarray(a, dtype=dtype) for a in arrays]
    return make


def _pieces(bounds, axis, squeeze=False):
    def ref(x):
        out = []
        for b, e in bounds:
            p = np.take(x, range(b, e), axis=axis)
            out.append(np.squeeze(p, axis) if squeeze else p)
        return out
    return ref


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


def _set_ref(lhs, rhs, ind):
    out = lhs.copy()
    i = np.trunc(ind).astype(np.int64)
    out[tuple(i)] = rhs
    return out


_LHS = np.arange(24, dtype=np.float64).reshape(3, 4, 2)
_HIST = np.array([0, 1, 1, 2.5, 3, 4, 5, 5.5, -1, 10, np.nan])

CASES = [
    OpCase('_split_v2', dict(indices=(0, 1, 3), axis=1), [(2, 5, 3)],
           ref=_pieces([(0, 1), (1, 3), (3, 5)], 1)),
    OpCase('_split_v2', dict(indices='(0, 2)', axis=-1), [(3, 2, 5)],
           ref=_pieces([(0, 2), (2, 5)], 2)),
    OpCase('_split_v2', dict(indices=(0,), sections=3, axis=0, squeeze_axis=True), [(3, 4)],
           ref=_pieces([(0, 1), (1, 2), (2, 3)], 0, squeeze=True)),
    OpCase('_split_v2', dict(indices=(0, 1, 2), axis=2, squeeze_axis=True), [(2, 4, 3)],
           ref=_pieces([(0, 1), (1, 2), (2, 3)], 2, squeeze=True)),
    OpCase('_split_v2', dict(indices=(0, 2, 2), axis=1), [(2, 4)],
           ref=_pieces([(0, 2), (2, 2), (2, 4)], 1), id='_split_v2[empty piece]'),
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
    OpCase('_scatter_set_nd', dict(shape=(3, 4, 2)), [(3, 4, 2), (2, 2), (2, 2)],
           inputs=given(_LHS, [[100, 101], [200, 201]], [[0, 2], [1, 3]]),
           ref=_set_ref, grad=()),
    OpCase('_scatter_set_nd', dict(shape=(3, 4, 2)), [(3, 4, 2), (3,), (3, 3)],
           inputs=given(_LHS, [7, 8, 9], [[0, 2, 1], [1, 3, 0], [1, 0, 1]]),
           ref=_set_ref, grad=()),
    OpCase('_histogram', dict(bin_cnt=4, range=(0, 5)), [(11,)], inputs=given(_HIST),
           ref=lambda x: [np.array([3, 0, 2, 2]), np.array([0, 1.25, 2.5, 3.75, 5])],
           grad=()),
    OpCase('_histogram', dict(bin_cnt=3), [(2, 4)],
           inputs=given([[1, 2, 3, 3.5], [0.5, 2.25, 1.75, 3.0]]),
           ref=lambda x: list(np.histogram(x, 3)), grad=()),
    OpCase('_histogram', {}, [(11,), (5,)], inputs=given(_HIST, [0, 1, 2, 5, 6]),
           ref=lambda x, b: [np.array([1, 2, 3, 2]), b], grad=()),
    OpCase('_zeros_without_dtype', dict(shape=(2, 3)), [], ref=lambda: np.zeros((2, 3)),
           dtypes=('float32',)),
    OpCase('_zeros_without_dtype', dict(shape=(4,), dtype=6), [],
           ref=lambda: np.zeros(4, np.int64), dtypes=('float32',)),
    OpCase('cast_storage', dict(stype='default'), [(3, 4)], ref=lambda x: x),
]

test_forward, test_gradient = case_tests(CASES)


def test_split_v2_wrappers_as_in_mxnet():
    a = mx.nd.array(np.arange(30).reshape(2, 5, 3))
    out = mx.nd.split_v2(a, (1, 3), axis=1)
    assert [o.shape for o in out] == [(2, 1, 3), (2, 2, 3), (2, 2, 3)]
    np.testing.assert_array_equal(out[1].asnumpy(), a.asnumpy()[:, 1:3])
    assert [o.shape for o in a.split_v2(5, axis=1)] == [(2, 1, 3)] * 5
    with pytest.raises(ValueError, match='equal division'):
        mx.nd.split_v2(a, 2, axis=1)
    with pytest.raises(ValueError, match='int or tuple'):
        mx.nd.split_v2(a, [1, 2])
    x = mx.sym.var('x')
    s = mx.sym.split_v2(x, (1, 3), axis=1)
    # MXNet 1.9.1: names, shapes and attributes of the node
    assert s.list_outputs() == ['_split_v20_output0', '_split_v20_output1',
                                '_split_v20_output2']
    assert s.infer_shape(x=(2, 5, 3))[1] == [(2, 1, 3), (2, 2, 3), (2, 2, 3)]
    attrs = s.attr_dict()['_split_v20']
    assert attrs['indices'] == '[0, 1, 3]' and attrs['sections'] == '0'
    s = x.split_v2(3, axis=-1, squeeze_axis=True)
    assert s.infer_shape(x=(2, 5, 3))[1] == [(2, 5)] * 3
    assert mx.sym.load_json(s.tojson()).tojson() == s.tojson()


@pytest.mark.parametrize('attrs, shape, match', [
    (dict(indices=(0, 3, 2), axis=1), (2, 5), r'piece 1 \[3, 2\)'),
    (dict(indices=(0, 7), axis=1), (2, 5), r'piece 0 \[0, 7\)'),
    (dict(indices=(2, 4), axis=1), (2, 5), 'must start with 0'),
    (dict(indices=(0,), sections=3, axis=1), (2, 5), 'not divisible by sections=3'),
    (dict(indices=(0, 2), axis=1, squeeze_axis=True), (2, 5), 'pieces of length 1'),
    (dict(indices=(0, 2), axis=2), (2, 5), 'axis 2 is out of range'),
])
def test_split_v2_shape_errors(attrs, shape, match):
    with pytest.raises(ShapeError, match=match):
        get_op('_split_v2')(**attrs).infer_shape([shape])


def test_split_v2_parameter_errors_and_absent_head_gradients():
    with pytest.raises(MXNetError, match='indices'):
        get_op('_split_v2')(axis=1)
    with pytest.raises(MXNetError, match='give indices'):
        get_op('_split_v2')(indices=())
    op = get_op('_split_v2')(indices=(0, 1, 3), axis=1)
    x = np.arange(10.0).reshape(2, 5)
    g = op.backward(np, [None, np.ones((2, 2)), None], [x], None, [], [True])[0]
    np.testing.assert_array_equal(g, [[0, 1, 1, 0, 0]] * 2)


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


def test_scatter_set_nd_errors():
    op = get_op('_scatter_set_nd')(shape=(3, 4))
    with pytest.raises(ShapeError, match="'rhs' has shape"):
        op.infer_shape([(3, 4), (3,), (2, 2)])
    with pytest.raises(ShapeError, match="'lhs' has shape"):
        op.infer_shape([(4, 4), (2,), (2, 2)])
    with pytest.raises(MXNetError, match='out of range'):
        op.forward(np, [np.zeros((3, 4)), np.ones(2), np.array([[0, 3], [1, 1]])], [], False)


def test_histogram_wrappers_as_in_mxnet():
    x = mx.nd.array(_HIST)
    cnt, edges = mx.nd.histogram(x, bins=4, range=(0, 5))
    assert cnt.dtype == np.int64 and edges.dtype == np.float32
    np.testing.assert_array_equal(cnt.asnumpy(), [3, 0, 2, 2])
    cnt, _ = mx.nd.histogram(x, bins=mx.nd.array([0, 1, 2, 5, 6]))
    np.testing.assert_array_equal(cnt.asnumpy(), [1, 2, 3, 2])
    with pytest.warns(UserWarning, match='range is not specified'):
        cnt, edges = mx.nd.histogram(mx.nd.array([0, 1, 1, 2.5, 3, 4, 5, 5.5, -1, 10]), bins=5)
    np.testing.assert_array_equal(cnt.asnumpy(), [4, 2, 3, 0, 1])
    np.testing.assert_allclose(edges.asnumpy(), [-1, 1.2, 3.4, 5.6, 7.8, 10], rtol=1e-6)
    with pytest.raises(ValueError, match='integer or an NDArray'):
        mx.nd.histogram(x, bins=2.5)
    a = mx.sym.var('a')
    with pytest.raises(ValueError, match='null range'):
        mx.sym.histogram(a, bins=5)
    s = mx.sym.histogram(a, bins=4, range=(0, 5))
    assert s.list_arguments() == ['a']
    assert s.list_outputs() == ['_histogram0_output0', '_histogram0_output1']
    assert s.infer_shape(a=(10,))[1] == [(4,), (5,)]
    assert s.infer_type(a='float64')[1] == [np.int64, np.float64]
    s = mx.sym.histogram(a, bins=mx.sym.var('b'))
    assert s.list_arguments() == ['a', 'b']
    assert s.infer_shape(a=(2, 5), b=(5,))[1] == [(4,), (5,)]


def test_zeros_without_dtype_and_cast_storage_errors():
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        z = mx.nd._internal._zeros_without_dtype(shape=(2, 3))
    assert z.dtype == np.float32 and z.shape == (2, 3)
    with pytest.raises(MXNetError, match='type flags'):
        mx.nd._internal._zeros_without_dtype(shape=(2,), dtype=12)
    for stype in ('csr', 'row_sparse'):
        with pytest.raises(MXNetError, match="stype='%s' is sparse storage" % stype):
            mx.nd.cast_storage(mx.nd.ones((2, 2)), stype=stype)
    with pytest.raises(MXNetError, match='stype'):
        mx.nd.cast_storage(mx.nd.ones((2, 2)), stype='dense')
