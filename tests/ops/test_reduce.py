"""Reductions, arg-reductions, pick, cumsum and moments (ops/reduce.py; MXNet 1.9.1 semantics)."""
import numpy as np
import pytest

import symgraph as mx
from _refs import F16, _infer, _v, _with_index, X
from harness import case_tests, OpCase, parametrize_cases
from symgraph.base import MXNetError
from symgraph.opdef import ShapeError, get_op


def scalar1(f):
    """MXNet gives a reduction to a scalar the shape (1,)."""
    return lambda x: np.asarray(f(x)).reshape(1)


def away0(rng, shapes, dtype):
    return [np.sign(rng.uniform(-1, 1, s) + 1e-9) * rng.uniform(0.5, 1.5, s) for s in shapes]


def with_nan(rng, shapes, dtype):
    x = rng.uniform(0.5, 1.5, shapes[0])
    x.reshape(-1)[::3] = np.nan
    return [x]


def tied_rows(rng, shapes, dtype):
    """Each row's maximum and minimum appear twice."""
    x = np.round(rng.uniform(-3, 3, shapes[0]))
    x[:, 0] = x.max(axis=1)
    x[:, -1] = x.min(axis=1)
    return [x]


def ints(rng, shapes, dtype):
    return [rng.randint(-9, 10, s).astype(np.int32) for s in shapes]


def zero_grads(inputs, outputs, out_grads):
    return [np.zeros_like(x) for x in inputs]


def extreme_grad(f):
    """MXNet's max/min gradient: every element equal to the result gets it (axis 1)."""
    def grad(inputs, outputs, out_grads):
        x = inputs[0]
        return [out_grads[0][:, None] * (x == f(x, axis=1, keepdims=True))]
    return grad


def nan_grad(inputs, outputs, out_grads):
    return [np.where(np.isnan(inputs[0]), 0, out_grads[0][:, None])]


def nanprod_grad(inputs, outputs, out_grads):
    x = inputs[0]
    y = np.nanprod(x, axis=1, keepdims=True)
    return [np.where(np.isnan(x), 0, out_grads[0][:, None] * y / np.where(np.isnan(x), 1, x))]


S3 = (2, 3, 4)
CASES = []
for _name, _f, _make in [('sum', np.sum, None), ('mean', np.mean, None),
                         ('max', np.max, None), ('min', np.min, None),
                         ('prod', np.prod, away0)]:
    CASES += [
        OpCase(_name, shapes=[S3], ref=scalar1(_f), inputs=_make),
        OpCase(_name, {'axis': 1}, shapes=[S3], ref=lambda x, f=_f: f(x, axis=1),
               inputs=_make),
        OpCase(_name, {'axis': (0, 2)}, shapes=[S3], ref=lambda x, f=_f: f(x, axis=(0, 2)),
               inputs=_make),
        OpCase(_name, {'axis': -1, 'keepdims': True}, shapes=[(3, 5)], inputs=_make,
               ref=lambda x, f=_f: f(x, axis=-1, keepdims=True)),
        OpCase(_name, {'axis': 1, 'exclude': True}, shapes=[S3], inputs=_make,
               ref=lambda x, f=_f: f(x, axis=(0, 2))),
        OpCase(_name, {'keepdims': True}, shapes=[(3, 1, 2)], inputs=_make,
               ref=lambda x, f=_f: f(x, keepdims=True)),
        OpCase(_name, {'axis': 0}, shapes=[(7,)], ref=scalar1(_f), inputs=_make),
    ]
CASES += [
    # MXNet JSON strings; axis=() reduces every axis, even with exclude
    OpCase('sum', {'axis': '(0, 2)', 'keepdims': 'True'}, shapes=[S3],
           ref=lambda x: x.sum(axis=(0, 2), keepdims=True)),
    OpCase('sum', {'axis': '()'}, shapes=[(3, 4)], ref=scalar1(np.sum)),
    OpCase('sum', {'axis': (), 'exclude': True}, shapes=[(3, 4)], ref=scalar1(np.sum)),
    OpCase('sum', {'axis': (0, 1, 2), 'exclude': True}, shapes=[S3], ref=lambda x: x),
    OpCase('sum_axis', {'axis': 0}, shapes=[(5, 3)], ref=lambda x: x.sum(0)),
    OpCase('max_axis', {'axis': 1}, shapes=[(4, 5)], ref=lambda x: x.max(1)),
    OpCase('min_axis', {'axis': 0}, shapes=[(4, 5)], ref=lambda x: x.min(0)),
    OpCase('max', {'axis': 1}, shapes=[(4, 5)], inputs=tied_rows, ref=lambda x: x.max(1),
           grad_ref=extreme_grad(np.max)),
    OpCase('min', {'axis': 1}, shapes=[(4, 5)], inputs=tied_rows, ref=lambda x: x.min(1),
           grad_ref=extreme_grad(np.min)),
    OpCase('nansum', {'axis': 1}, shapes=[(3, 4)], inputs=with_nan, grad_ref=nan_grad,
           ref=lambda x: np.nansum(x, axis=1)),
    OpCase('nanprod', {'axis': 1}, shapes=[(3, 4)], inputs=with_nan, grad_ref=nanprod_grad,
           ref=lambda x: np.nanprod(x, axis=1)),
    OpCase('nansum', shapes=[(3, 4)], ref=scalar1(np.nansum)),
    OpCase('nanprod', {'axis': 0}, shapes=[(3, 4)], inputs=away0,
           ref=lambda x: np.nanprod(x, axis=0)),
    # integer data: the mean truncates, the sum stays int32
    OpCase('mean', {'axis': 1}, shapes=[(3, 4)], inputs=ints, dtypes=('int32',),
           ref=lambda x: np.trunc(x.mean(1)).astype(np.int32)),
    OpCase('sum', shapes=[(3, 4)], inputs=ints, dtypes=('int32',),
           ref=lambda x: x.sum().astype(np.int32).reshape(1)),
    # norm: elementwise L1/L2 over the axes (also for a pair of axes)
    OpCase('norm', shapes=[S3], ref=scalar1(lambda x: np.sqrt((x * x).sum()))),
    OpCase('norm', {'ord': 1, 'axis': 1}, shapes=[(3, 5)], inputs=away0,
           ref=lambda x: np.abs(x).sum(1)),
    OpCase('norm', {'ord': '1', 'axis': '(0, 1)'}, shapes=[(3, 5)], inputs=away0,
           ref=scalar1(lambda x: np.abs(x).sum())),
    OpCase('norm', {'axis': (0, 2), 'keepdims': True}, shapes=[S3],
           ref=lambda x: np.sqrt((x * x).sum(axis=(0, 2), keepdims=True))),
    OpCase('norm', {'axis': -1}, shapes=[(4, 3)], ref=lambda x: np.linalg.norm(x, axis=-1)),
    OpCase('norm', {'keepdims': True}, shapes=[(2, 3)],
           ref=lambda x: np.sqrt((x * x).sum(keepdims=True))),
    OpCase('norm', {'out_dtype': 'float64'}, shapes=[(3, 4)], dtypes=('float32',),
           ref=scalar1(lambda x: np.sqrt((x.astype(np.float64) ** 2).sum()))),
]

# --- argmax / argmin / pick --------------------------------------------------------------------
for _name, _f in [('argmax', np.argmax), ('argmin', np.argmin)]:
    CASES += [
        OpCase(_name, shapes=[(3, 4)], ref=lambda x, f=_f: np.asarray(f(x), x.dtype).reshape(1)),
        OpCase(_name, {'axis': 1}, shapes=[(3, 4)],
               ref=lambda x, f=_f: f(x, axis=1).astype(x.dtype)),
        OpCase(_name, {'axis': 0, 'keepdims': True}, shapes=[S3],
               ref=lambda x, f=_f: f(x, axis=0)[None].astype(x.dtype)),
        OpCase(_name, {'axis': -1}, shapes=[S3],
               ref=lambda x, f=_f: f(x, axis=-1).astype(x.dtype)),
        OpCase(_name, {'keepdims': True}, shapes=[(2, 3)],
               ref=lambda x, f=_f: np.asarray(f(x), x.dtype).reshape(1, 1)),
        # ties: the first occurrence, indices in the input dtype
        OpCase(_name, {'axis': 1}, shapes=[(4, 5)], inputs=tied_rows, grad_ref=zero_grads,
               ref=lambda x, f=_f: f(x, axis=1).astype(x.dtype)),
        OpCase(_name, {'axis': 0}, shapes=[(4, 3)], inputs=ints, dtypes=('int32',),
               ref=lambda x, f=_f: f(x, axis=0).astype(np.int32)),
    ]
CASES.append(OpCase('argmax_channel', shapes=[(3, 5)], ref=lambda x: x.argmax(1).astype(x.dtype)))
CASES.append(OpCase('argmax_channel', shapes=[S3], ref=lambda x: x.argmax(1).astype(x.dtype)))


def pick_inputs(index):
    return lambda rng, shapes, dtype: [rng.uniform(-1, 1, shapes[0]),
                                       np.asarray(index, dtype=np.float64)]


def pick_ref(axis, mode, keepdims=False):
    def ref(x, index):
        n = x.shape[axis]
        i = np.trunc(index).astype(np.int64)
        i = np.clip(i, 0, n - 1) if mode == 'clip' else np.mod(i, n)
        kshape = list(x.shape)
        kshape[axis] = 1
        out = np.take_along_axis(x, i.reshape(kshape), axis)
        # without keepdims the output has the index's shape ((1,) for 1-d data)
        return out if keepdims else out.reshape(index.shape)
    return ref


# fractional indices (truncated, as MXNet casts them) keep the numeric gradient of index 0
CASES += [
    OpCase('pick', shapes=[(3, 4), (3,)], inputs=pick_inputs([0.5, 5.5, -1.5]),
           ref=pick_ref(1, 'clip')),
    OpCase('pick', {'mode': 'wrap'}, shapes=[(3, 4), (3,)], inputs=pick_inputs([0.5, 5.5, -1.5]),
           ref=pick_ref(1, 'wrap')),
    OpCase('pick', {'axis': 0, 'keepdims': True}, shapes=[(3, 5), (5,)],
           inputs=pick_inputs([0.2, 2.7, 1.1, 9.5, -3.5]), ref=pick_ref(0, 'clip', True)),
    OpCase('pick', {'axis': 1, 'mode': 'wrap'}, shapes=[S3, (2, 4)],
           inputs=pick_inputs([[0.5, 1.5, 2.5, 3.5], [-1.5, 4.5, 7.5, 1.2]]),
           ref=pick_ref(1, 'wrap')),
    OpCase('pick', {'axis': '-1', 'keepdims': 'True'}, shapes=[S3, (2, 3)],
           inputs=pick_inputs([[0.5, 1.5, 2.5], [3.5, 0.1, 2.2]]), ref=pick_ref(2, 'clip', True)),
    OpCase('pick', {'axis': 0}, shapes=[(4,), (1,)], inputs=pick_inputs([2.5]),
           ref=pick_ref(0, 'clip')),
]


PICK_ALIAS_CASES = [
    OpCase('choose_element_0index', {}, [(3, 4), (3,)], grad=(0,),
           ref=lambda x, i: x[np.arange(3), i.astype(int)],
           inputs=_with_index([3, 0, 1.5])),
]


def _cumsum_ref(axis=None, dtype=None):
    def ref(x):
        x = x.reshape(-1) if axis is None else x
        ax = 0 if axis is None else axis % x.ndim
        out = np.zeros(x.shape, dtype or x.dtype)
        acc = np.zeros(x.shape[:ax] + x.shape[ax + 1:], dtype or x.dtype)
        for i in range(x.shape[ax]):
            acc = acc + np.take(x, i, axis=ax)
            idx = [slice(None)] * x.ndim
            idx[ax] = i
            out[tuple(idx)] = acc
        return out
    return ref


def _moments_ref(axes, keepdims=False):
    def ref(x):
        ax = tuple(a % x.ndim for a in axes)
        n = np.prod([x.shape[a] for a in ax])
        mean = x.astype(np.float64).sum(axis=ax, keepdims=True) / n
        var = ((x - mean) ** 2).sum(axis=ax, keepdims=keepdims) / n
        mean = mean if keepdims else mean.reshape(var.shape)
        return [mean.astype(x.dtype), var.astype(x.dtype)]
    return ref


CUMSUM_MOMENTS_CASES = [
    OpCase('cumsum', {}, [(2, 3, 2)], ref=_cumsum_ref()),
    OpCase('cumsum', dict(axis=1), [(2, 3, 4)], ref=_cumsum_ref(1)),
    OpCase('_np_cumsum', dict(axis=-1), [(3, 4)], ref=_cumsum_ref(-1)),
    OpCase('cumsum', dict(axis=0, dtype='float64'), [(4, 3)], ref=_cumsum_ref(0, 'float64')),
    OpCase('moments', dict(axes=(1,)), [(2, 3, 4)], ref=_moments_ref((1,)), dtypes=F16),
    OpCase('moments', dict(axes=(0, 2), keepdims=True), [(2, 3, 4)],
           ref=_moments_ref((0, 2), True)),
    OpCase('moments', dict(axes=(-1, 0)), [(3, 5)], ref=_moments_ref((-1, 0))),
]


SQUARE_SUM_CASES = [
    OpCase('_square_sum', {'axis': 1}, [(3, 4)], ref=lambda x: (x * x).sum(axis=1)),
    OpCase('_square_sum', {'axis': (0,), 'keepdims': True, 'exclude': True}, [(2, 3, 4)],
           ref=lambda x: (x * x).sum(axis=(1, 2), keepdims=True)),
    OpCase('_square_sum', {}, [(2, 3)], ref=lambda x: np.array([(x * x).sum()])),
]


test_forward, test_gradient = case_tests(CASES + PICK_ALIAS_CASES + CUMSUM_MOMENTS_CASES
                                         + SQUARE_SUM_CASES)


@parametrize_cases(CASES)
def test_unknown_shapes_do_not_crash(case):
    op = case.make_op()
    n = len(op.list_arguments())
    _, out, _ = op.infer_shape([None] * n)
    assert all(s is None for s in out)
    op.infer_type([None] * n)


# --- shape inference and errors ------------------------------------------------------------------
@pytest.mark.parametrize('name, kwargs, shape, out', [
    ('sum', {'axis': 1}, (2, 0, 3), (2, 3)),
    ('sum', {'axis': 1, 'keepdims': True}, (0, 4, 3), (0, 1, 3)),
    ('max', {'axis': -1, 'exclude': True}, (2, 3, 4), (4,)),
    ('norm', {'axis': (0, 1, 2)}, (2, 3, 4), (1,)),
    ('argmax', {'axis': 0}, (4,), (1,)),
    ('argmax_channel', {}, (2, 3, 4), (2, 4)),
])
def test_shape_inference(name, kwargs, shape, out):
    assert get_op(name)(**kwargs).infer_shape([shape])[1][0] == out


def test_pick_shapes():
    op = get_op('pick')(axis=0)
    assert op.infer_shape([(3, 4), None]) == ([(3, 4), (4,)], [(4,)], [])
    op = get_op('pick')(axis=0, keepdims=True)
    assert op.infer_shape([(3, 4), (1, 4)])[1] == [(1, 4)]
    assert op.infer_shape([None, (4,)])[1] == [None]
    with pytest.raises(ShapeError, match=r'index.*\(3,\).*\(3, 4\).*\(4,\)'):
        get_op('pick')(axis=0).infer_shape([(3, 4), (3,)])
    assert get_op('pick')().list_arguments() == ['data', 'index']


@pytest.mark.parametrize('name, kwargs, shape, match', [
    ('sum', {'axis': 3}, (2, 3, 4), 'axis 3 is out of range'),
    ('sum', {'axis': (1, -2)}, (2, 3, 4), 'duplicates'),
    ('mean', {'axis': -4}, (2, 3, 4), 'out of range'),
    ('norm', {'axis': 2}, (2, 3), 'out of range'),
    ('argmax', {'axis': 2}, (2, 3), 'out of range'),
])
def test_shape_errors(name, kwargs, shape, match):
    with pytest.raises(ShapeError, match=match):
        get_op(name)(**kwargs).infer_shape([shape])


@pytest.mark.parametrize('name, kwargs, match', [
    ('pick', {'axis': None}, 'axis'),
    ('pick', {'mode': 'raise'}, 'mode'),
    ('norm', {'ord': 3}, 'ord'),
    ('norm', {'exclude': True}, 'exclude'),
    ('argmax', {'axis': (0, 1)}, 'axis'),
])
def test_bad_parameters(name, kwargs, match):
    with pytest.raises(MXNetError, match=match):
        get_op(name)(**kwargs)


def test_aliases():
    assert get_op('sum_axis').name == 'sum'
    assert get_op('max_axis').name == 'max'
    assert get_op('min_axis').name == 'min'


def test_gradients_own_their_memory():
    # a broadcast view would be read-only and would alias other positions
    x = np.ones((2, 3))
    g = get_op('sum')(axis=1).backward(np, [np.ones(2)], [x], [np.full(2, 3.0)], [], [True])
    assert g[0].flags.writeable and g[0].flags.owndata


def test_choose_element_0index_is_pick():
    x, i = _v('x', 'i')
    sym = mx.sym.choose_element_0index(x, i, axis=0, keepdims=True, mode='wrap', name='c')
    assert '"op": "pick"' in sym.tojson()
    assert get_op('choose_element_0index') is get_op('pick')


def test_cumsum_types_shapes_and_json():
    with mx.name.NameManager():
        sym = mx.sym.cumsum(X, axis=1)
    assert '"op": "_np_cumsum"' in sym.tojson() and sym.list_outputs() == ['cumsum0_output']
    assert _infer(mx.sym.cumsum(X), x=(2, 3, 4)) == [(24,)]
    assert mx.sym.cumsum(X, dtype='float64').infer_type(x='float32')[1] == [np.float64]
    assert mx.sym.cumsum(X).infer_type(x='int8')[1] == [np.int8]
    assert mx.sym.cumsum(X).infer_type(x='bool')[1] == [np.int64]
    with pytest.raises(ShapeError, match='out of range'):
        mx.sym.cumsum(X, axis=3).infer_shape(x=(2, 3, 4))
    with pytest.raises(MXNetError, match='dtype'):
        mx.sym.cumsum(X, dtype='uint8')
    out = mx.nd.cumsum(mx.nd.array([[1, 2], [3, 4]], dtype='int32'), axis=0)
    assert out.dtype == np.int32 and out.asnumpy().tolist() == [[1, 2], [4, 6]]
    assert mx.sym.cumsum(name='c').list_arguments() == ['c_a']


def test_moments_outputs_and_errors():
    sym = mx.sym.moments(X, axes=(2, 0), name='m')
    assert sym.list_outputs() == ['m_output0', 'm_output1']
    assert _infer(sym, x=(2, 3, 4)) == [(3,), (3,)]
    assert _infer(mx.sym.moments(X, axes=(0, 1, 2)), x=(2, 3, 4)) == [(1,), (1,)]
    for kw, match in ((dict(), 'empty axes'), (dict(axes=(1, 1)), 'duplicate'),
                      (dict(axes=(3,)), 'out of range'), (dict(axes=()), 'empty axes')):
        with pytest.raises(ShapeError, match=match):
            mx.sym.moments(X, **kw).infer_shape(x=(2, 3, 4))
    # integer data: truncated mean and variance, as MXNet (values from MXNet 1.9.1)
    a = (np.arange(24).reshape(2, 3, 4) ** 1.5).astype(np.int32)
    mean, var = mx.nd.moments(mx.nd.array(a, dtype='int32'), axes=(0,))
    assert mean.dtype == np.int32
    assert mean.asnumpy().ravel()[:6].tolist() == [20, 23, 27, 31, 36, 40]
    assert var.asnumpy().ravel()[:6].tolist() == [420, 506, 625, 702, 784, 870]


def test_moments_gradient_of_one_output_through_the_executor():
    sym = mx.sym.moments(X, axes=(1,))[1]
    exe = sym.simple_bind(mx.cpu(), x=(2, 3))
    x = np.random.RandomState(0).rand(2, 3)
    exe.forward(is_train=True, x=x)
    exe.backward([mx.nd.ones((2,))])
    m = x.mean(1, keepdims=True)
    np.testing.assert_allclose(exe.grad_dict['x'].asnumpy(), 2 * (x - m) / 3, rtol=1e-5)
