"""topk, sort, argsort and ``_histogram`` (ops/sorting.py) against NumPy, plus their shape
rules, errors and Python wrappers (``mx.nd.histogram``, ``mx.sym.histogram``). Values seen on
MXNet 1.9.1 are pinned below; the golden cases are ``splitidx_*`` in
tests/golden/graphs_compute_split_index.py. test_topk_outputs also pins norm's out_dtype."""
import numpy as np
import pytest

import symgraph as mx
from symgraph.base import ParameterError
from _refs import given
from harness import case_tests, OpCase, parametrize_cases
from symgraph.base import MXNetError
from symgraph.opdef import ShapeError, get_op


_HIST = np.array([0, 1, 1, 2.5, 3, 4, 5, 5.5, -1, 10, np.nan])


CASES = [
    OpCase('_histogram', dict(bin_cnt=4, range=(0, 5)), [(11,)], inputs=given(_HIST),
           ref=lambda x: [np.array([3, 0, 2, 2]), np.array([0, 1.25, 2.5, 3.75, 5])],
           grad=()),
    OpCase('_histogram', dict(bin_cnt=3, range=(0.5, 3.5)), [(2, 4)],
           inputs=given([[1, 2, 3, 3.5], [0.5, 2.25, 1.75, 3.0]]),
           ref=lambda x: list(np.histogram(x, 3, range=(0.5, 3.5))), grad=()),
    OpCase('_histogram', {}, [(11,), (5,)], inputs=given(_HIST, [0, 1, 2, 5, 6]),
           ref=lambda x, b: [np.array([1, 2, 3, 2]), b], grad=()),
]


def ints(rng, shapes, dtype):
    return [rng.randint(-9, 10, s).astype(np.int32) for s in shapes]


# --- topk / sort / argsort ------------------------------------------------------------------------
def order(x, axis, ascend):
    key = x if ascend else -x
    return np.argsort(key, axis=axis, kind='stable')


def topk_ref(ret_typ, k, axis=-1, ascend=False, dtype=np.float32):
    def ref(x):
        v = x.reshape(-1) if axis is None else x
        ax = 0 if axis is None else axis
        n = v.shape[ax]
        idx = np.take(order(v, ax, ascend), np.arange(k if k >= 1 else n), axis=ax)
        if ret_typ == 'mask':
            mask = np.zeros_like(v)
            np.put_along_axis(mask, idx, 1, ax)
            return mask.reshape(x.shape)
        values = np.take_along_axis(v, idx, ax)
        return {'indices': idx.astype(dtype), 'value': values,
                'both': [values, idx.astype(dtype)]}[ret_typ]
    return ref


def dups(rng, shapes, dtype):
    """Many equal values: ties must keep their input order."""
    return [rng.randint(0, 3, shapes[0]).astype(np.float64)]


SORT_CASES = [
    OpCase('topk', shapes=[(3, 5)], ref=topk_ref('indices', 1)),
    OpCase('topk', {'k': 2, 'ret_typ': 'value'}, shapes=[(3, 5)], ref=topk_ref('value', 2)),
    OpCase('topk', {'k': 2, 'ret_typ': 'both', 'axis': 0}, shapes=[(4, 3)],
           ref=topk_ref('both', 2, axis=0)),
    OpCase('topk', {'k': 3, 'ret_typ': 'mask'}, shapes=[(2, 5, 3)],
           ref=topk_ref('mask', 3)),
    OpCase('topk', {'k': 2, 'ret_typ': 'indices', 'is_ascend': True, 'axis': 1},
           shapes=[(2, 5, 3)], ref=topk_ref('indices', 2, axis=1, ascend=True)),
    OpCase('topk', {'k': '3', 'ret_typ': 'both', 'axis': 'None', 'dtype': 'int32'},
           shapes=[(3, 4)], ref=topk_ref('both', 3, axis=None, dtype=np.int32)),
    OpCase('topk', {'k': 0, 'ret_typ': 'value', 'is_ascend': True}, shapes=[(2, 4)],
           ref=topk_ref('value', 0, ascend=True)),
    OpCase('topk', {'k': 4, 'ret_typ': 'indices'}, shapes=[(3, 6)], inputs=dups, grad=(),
           ref=topk_ref('indices', 4)),
    OpCase('topk', {'k': 4, 'ret_typ': 'indices', 'is_ascend': True}, shapes=[(3, 6)],
           inputs=dups, grad=(), ref=topk_ref('indices', 4, ascend=True)),
    OpCase('topk', {'k': 2, 'ret_typ': 'value'}, shapes=[(4, 3)], inputs=ints,
           dtypes=('int32',), ref=topk_ref('value', 2)),
    OpCase('sort', shapes=[(3, 5)], ref=lambda x: np.sort(x, axis=-1)),
    OpCase('sort', {'axis': 0, 'is_ascend': False}, shapes=[(4, 3)],
           ref=lambda x: -np.sort(-x, axis=0)),
    OpCase('sort', {'axis': None}, shapes=[(2, 3)], ref=lambda x: np.sort(x.reshape(-1))),
    OpCase('argsort', shapes=[(3, 5)], ref=lambda x: order(x, -1, True).astype(np.float32)),
    OpCase('argsort', {'axis': 0, 'is_ascend': False, 'dtype': 'int64'}, shapes=[(4, 3)],
           ref=lambda x: order(x, 0, False)),
    OpCase('argsort', {'axis': None}, shapes=[(2, 3)],
           ref=lambda x: order(x.reshape(-1), 0, True).astype(np.float32)),
    OpCase('argsort', {'is_ascend': False}, shapes=[(3, 6)], inputs=dups, grad=(),
           ref=lambda x: order(x, -1, False).astype(np.float32)),
]


test_forward, test_gradient = case_tests(SORT_CASES + CASES)


@parametrize_cases(SORT_CASES)
def test_unknown_shapes_do_not_crash(case):
    op = case.make_op()
    n = len(op.list_arguments())
    _, out, _ = op.infer_shape([None] * n)
    assert all(s is None for s in out)
    op.infer_type([None] * n)


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
    # the operator itself, as MXNet 1.9.1's: bin_cnt and range together or not at all
    # (MXNet: "cnt and range should both or neither specified")
    for kw in ({'bin_cnt': 3}, {'range': (0, 1)}):
        with pytest.raises(ParameterError, match='bin_cnt and range must both'):
            mx.nd._internal._histogram(x, **kw)
    s = mx.sym.histogram(a, bins=4, range=(0, 5))
    assert s.list_arguments() == ['a']
    assert s.list_outputs() == ['_histogram0_output0', '_histogram0_output1']
    assert s.infer_shape(a=(10,))[1] == [(4,), (5,)]
    assert s.infer_type(a='float64')[1] == [np.int64, np.float64]
    s = mx.sym.histogram(a, bins=mx.sym.var('b'))
    assert s.list_arguments() == ['a', 'b']
    assert s.infer_shape(a=(2, 5), b=(5,))[1] == [(4,), (5,)]


@pytest.mark.parametrize('name, kwargs, shape, out', [
    ('topk', {'k': 2, 'axis': 0, 'ret_typ': 'both'}, (3, 4), (2, 4)),
    ('topk', {'k': 2, 'axis': None, 'ret_typ': 'mask'}, (3, 4), (3, 4)),
    ('sort', {'axis': None}, (2, 3), (6,)),
])
def test_shape_inference(name, kwargs, shape, out):
    assert get_op(name)(**kwargs).infer_shape([shape])[1][0] == out


def test_topk_outputs():
    def outs(ret_typ):
        op = get_op('topk')(ret_typ=ret_typ, k=2)
        return op.list_outputs(), op.num_visible_outputs()
    assert outs('indices') == (['output'], 1)
    assert outs('mask') == (['output'], 1)
    assert outs('value') == (['output0', 'output1'], 1)
    assert outs('both') == (['output0', 'output1'], 2)
    assert get_op('sort')().num_visible_outputs() == 1
    f64, f32 = np.dtype('float64'), np.dtype('float32')
    assert get_op('topk')(ret_typ='both').infer_type([f64])[1] == [f64, f32]
    assert get_op('topk')(ret_typ='mask').infer_type([f64])[1] == [f64]
    assert get_op('argsort')().infer_type([f64])[1] == [f32]
    assert get_op('norm')(out_dtype='float64').infer_type([f32])[1] == [f64]


@pytest.mark.parametrize('name, kwargs, shape, match', [
    ('topk', {'k': 5}, (2, 3), 'k=5'),
    ('sort', {'axis': 2}, (2, 3), 'out of range'),
])
def test_shape_errors(name, kwargs, shape, match):
    with pytest.raises(ShapeError, match=match):
        get_op(name)(**kwargs).infer_shape([shape])


@pytest.mark.parametrize('name, kwargs, match', [
    ('topk', {'ret_typ': 'values'}, 'ret_typ'),
])
def test_bad_parameters(name, kwargs, match):
    with pytest.raises(MXNetError, match=match):
        get_op(name)(**kwargs)
