"""Legacy operators (ops/legacy.py) against loop references, plus shape rules and errors;
golden values from MXNet 1.9.1 are in tests/golden (legacy_*)."""
import json
import os

import numpy as np
import pytest

import symgraph as mx
from _refs import _infer, X, Y
from harness import case_tests, OpCase
from symgraph.opdef import MXNetError, ShapeError, TypeInferenceError, get_op
from symgraph.opdef import param_names


def _conv_ref(stride=(1, 1), pad=(0, 0), no_bias=False):
    def ref(x, w, b=None):
        n, c, h, wd = x.shape
        f, _, kh, kw = w.shape
        xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])))
        oh = (h + 2 * pad[0] - kh) // stride[0] + 1
        ow = (wd + 2 * pad[1] - kw) // stride[1] + 1
        out = np.zeros((n, f, oh, ow))
        for i in range(oh):
            for j in range(ow):
                win = xp[:, :, i * stride[0]:i * stride[0] + kh, j * stride[1]:j * stride[1] + kw]
                for k in range(f):
                    out[:, k, i, j] = (win * w[k]).sum(axis=(1, 2, 3))
        if not no_bias:
            out += b.reshape(1, -1, 1, 1)
        return out.astype(x.dtype)
    return ref


def _pool_ref(kernel, stride, pool_type):
    def ref(x):
        n, c, h, w = x.shape
        oh, ow = (h - kernel[0]) // stride[0] + 1, (w - kernel[1]) // stride[1] + 1
        out = np.zeros((n, c, oh, ow), x.dtype)
        f = {'max': np.max, 'avg': np.mean, 'sum': np.sum}[pool_type]
        for i in range(oh):
            for j in range(ow):
                out[:, :, i, j] = f(x[:, :, i * stride[0]:i * stride[0] + kernel[0],
                                      j * stride[1]:j * stride[1] + kernel[1]], axis=(2, 3))
        return out
    return ref


def _bn_ref(train, fix_gamma=True, eps=1e-3, output_mean_var=False):
    def ref(x, g, b, mm, mv):
        c = x.shape[1]
        out = np.zeros(x.shape, np.float64)
        means, vars_ = np.zeros(c), np.zeros(c)
        for k in range(c):
            xk = x[:, k].astype(np.float64)
            m, v = (xk.mean(), xk.var()) if train else (mm[k], mv[k])
            gk = 1.0 if fix_gamma else g[k]
            out[:, k] = (xk - m) / np.sqrt(v + eps) * gk + b[k]
            means[k], vars_[k] = m, v
        res = [out.astype(x.dtype)]
        if output_mean_var:
            res += [means.astype(x.dtype), vars_.astype(x.dtype)]
        return res
    return ref


def _pos_inputs(rng, shapes, dtype):
    return [rng.uniform(0.5, 2.0, s).astype(dtype) for s in shapes]


def _bn_inputs(rng, shapes, dtype):
    return [rng.normal(0.5, 2.0, shapes[0]).astype(dtype)] + \
        [rng.uniform(0.5, 1.5, s).astype(dtype) for s in shapes[1:]]


def _slice_assign_ref(x, y):
    out = x.copy()
    for i in range(2):
        for j in range(3):
            out[1 + i, 2 * j] = y[i, j]
    return out


def _slice_assign_scalar_ref(x):
    out = x.copy()
    for i in range(2):
        for j in range(2, 5):
            out[i, j] = 7
    return out


def _kl_grad_ref(target, penalty, momentum):
    def grad_ref(inputs, outs, out_grads):
        x, avg = inputs
        g = np.zeros_like(x)
        for j in range(x.shape[1]):
            a = momentum * avg[j] + (1 - momentum) * x[:, j].mean()
            g[:, j] = out_grads[0][:, j] + penalty * (-target / a + (1 - target) / (1 - a))
        return [g]
    return grad_ref


def _kl_inputs(rng, shapes, dtype):
    return [rng.uniform(0.1, 0.9, s).astype(dtype) for s in shapes]


CASES = [
    OpCase('IdentityAttachKLSparseReg', {}, shapes=[(3, 4), (4,)], ref=lambda x, a: x,
           inputs=_kl_inputs, grad=(0,), grad_ref=_kl_grad_ref(0.1, 0.001, 0.9),
           is_train=True),
    OpCase('IdentityAttachKLSparseReg', dict(sparseness_target=0.2, penalty=0.01,
                                             momentum=0.7),
           shapes=[(5, 2), (2,)], ref=lambda x, a: x, inputs=_kl_inputs, grad=(0,),
           grad_ref=_kl_grad_ref(0.2, 0.01, 0.7), is_train=True),
    OpCase('Convolution_v1', dict(kernel=(3, 3), num_filter=3), shapes=[(2, 2, 5, 5),
           (3, 2, 3, 3), (3,)], ref=_conv_ref(), rtol=1e-4, atol=1e-5),
    OpCase('Convolution_v1', dict(kernel=(2, 3), num_filter=2, stride=(2, 1), pad=(1, 1),
                                  no_bias=True),
           shapes=[(1, 3, 5, 4), (2, 3, 2, 3)], ref=_conv_ref((2, 1), (1, 1), True),
           rtol=1e-4, atol=1e-5),
    OpCase('Pooling_v1', dict(kernel=(2, 2), stride=(2, 1)), shapes=[(2, 3, 4, 5)],
           ref=_pool_ref((2, 2), (2, 1), 'max')),
    OpCase('Pooling_v1', dict(kernel=(3, 2), pool_type='avg'), shapes=[(1, 2, 5, 4)],
           ref=_pool_ref((3, 2), (1, 1), 'avg')),
    OpCase('Pooling_v1', dict(kernel=(2, 2), pool_type='sum', stride=(2, 2)),
           shapes=[(1, 2, 4, 6)], ref=_pool_ref((2, 2), (2, 2), 'sum')),
    OpCase('BatchNorm_v1', {}, shapes=[(4, 3, 2, 2), (3,), (3,), (3,), (3,)],
           ref=_bn_ref(True), inputs=_bn_inputs, grad=(0, 1, 2), is_train=True,
           rtol=1e-4, atol=1e-5, grad_rtol=1e-4),
    OpCase('BatchNorm_v1', dict(fix_gamma=False, eps=1e-4, output_mean_var=True),
           shapes=[(6, 3), (3,), (3,), (3,), (3,)],
           ref=_bn_ref(True, False, 1e-4, True), inputs=_bn_inputs, grad=(),
           is_train=True, rtol=1e-4, atol=1e-5),
    OpCase('BatchNorm_v1', dict(fix_gamma=False, eps=1e-4),
           shapes=[(6, 3), (3,), (3,), (3,), (3,)], ref=_bn_ref(True, False, 1e-4),
           inputs=_bn_inputs, grad=(0, 1, 2), is_train=True, rtol=1e-4, atol=1e-5,
           grad_rtol=1e-4),
    OpCase('BatchNorm_v1', dict(fix_gamma=False, use_global_stats=True),
           shapes=[(3, 2, 2, 3), (2,), (2,), (2,), (2,)], ref=_bn_ref(False, False),
           inputs=_bn_inputs, grad=(0, 1, 2), is_train=True, rtol=1e-4, atol=1e-5),
    OpCase('_identity_with_attr_like_rhs', shapes=[(3, 4), (3, 4)], ref=lambda a, b: a),
    OpCase('_scatter_plus_scalar', dict(scalar=2.5), ref=lambda a: a + np.float32(2.5)),
    OpCase('_scatter_minus_scalar', dict(scalar=1.5), ref=lambda a: a - np.float32(1.5)),
    OpCase('_scatter_elemwise_div', shapes=[(3, 4), (3, 4)], ref=lambda a, b: a / b,
           inputs=_pos_inputs),
    OpCase('_grad_add', shapes=[(3, 4), (3, 4)], ref=lambda a, b: a + b, grad=()),
    OpCase('_slice_assign', dict(begin=(1, None), end=(3, None), step=(1, 2)),
           shapes=[(4, 5), (2, 3)], ref=_slice_assign_ref, grad=()),
    OpCase('_crop_assign_scalar', dict(scalar=7, begin=(0, -3), end=(2, None)),
           shapes=[(4, 5)], ref=_slice_assign_scalar_ref, grad=()),
]


def _crop_ref(h=None, w=None, offset=(0, 0), center=False):
    def ref(x, *like):
        hh, ww = (like[0].shape[2], like[0].shape[3]) if like else (h, w)
        oy, ox = ((x.shape[2] - hh) // 2, (x.shape[3] - ww) // 2) if center else offset
        out = np.empty(x.shape[:2] + (hh, ww), x.dtype)
        for i in range(hh):
            for j in range(ww):
                out[:, :, i, j] = x[:, :, oy + i, ox + j]
        return out
    return ref


CROP_CASES = [
    OpCase('Crop', dict(num_args=1, h_w=(2, 3), offset=(1, 2)), [(2, 2, 5, 6)],
           ref=_crop_ref(2, 3, (1, 2))),
    OpCase('Crop', dict(num_args=1, h_w=(3, 2), center_crop=True), [(1, 2, 6, 5)],
           ref=_crop_ref(3, 2, center=True)),
    OpCase('Crop', dict(num_args=2, offset=(2, 1)), [(2, 2, 5, 6), (1, 3, 3, 4)],
           ref=_crop_ref(offset=(2, 1)), grad=(0,)),
    OpCase('Crop', dict(num_args=2, center_crop=True), [(1, 2, 5, 6), (2, 1, 2, 2)],
           ref=_crop_ref(center=True), grad=(0,)),
]


def _onehot_inputs(rng, shapes, dtype):
    return [np.array([1.7, -1.0, 5.0, 0.0, 3.99], np.float32), rng.uniform(-1, 1, (5, 4))]


def _onehot_ref(lhs, rhs):
    out = np.zeros(rhs.shape, rhs.dtype)
    for i, v in enumerate(lhs):
        if 0 <= int(v) < rhs.shape[1]:
            out[i, int(v)] = 1
    return out


#: the legacy imperative NDArray functions (``_set_value`` has no inputs and takes its shape
#: from out= or the consumer: tested below)
NDARRAY_FUNCTION_CASES = [
    OpCase('_copyto', {}, [(3, 4)], ref=lambda x: x,
           dtypes=('float32', 'float64', 'int32', 'uint8')),
    OpCase('_onehot_encode', {}, [(5,), (5, 4)], inputs=_onehot_inputs, ref=_onehot_ref,
           grad=(), dtypes=('float32', 'float64')),
]

test_forward, test_gradient = case_tests(CASES + CROP_CASES + NDARRAY_FUNCTION_CASES)

_GOLDEN = np.load(os.path.join(os.path.dirname(__file__), os.pardir, 'golden', 'data',
                               'hawkes_cv.npz'))


@pytest.mark.parametrize('dtype', ['float32', 'float64', 'int32', 'float16', 'uint8'])
def test_ndarray_functions_match_mxnet(dtype):
    """NDArray.copyto's ``_copyto(x, out=y)`` and sparse ``x[:] = v``'s ``_set_value(v,
    out=y)`` cast into out's dtype as MXNet 1.9.1 (tests/golden/make_hawkes_cv.py)."""
    x = _GOLDEN['copyto_%s/in0' % dtype]
    y = mx.nd.zeros((2, 2), dtype=dtype)
    assert mx.nd._internal._copyto(mx.nd.array(x), out=y) is y
    want = _GOLDEN['copyto_%s/out0' % dtype]
    assert y.dtype == want.dtype
    np.testing.assert_array_equal(y.asnumpy(), want)
    y = mx.nd.zeros((2, 3), dtype=dtype)
    assert mx.nd._internal._set_value(2.75, out=y) is y
    np.testing.assert_array_equal(y.asnumpy(), _GOLDEN['set_value_%s/out0' % dtype])
    y = mx.nd.zeros((2, 3), dtype=dtype)
    mx.nd._internal._set_value(src=2.75, out=y)
    np.testing.assert_array_equal(y.asnumpy(), _GOLDEN['set_value_%s/out0' % dtype])


def test_onehot_encode_matches_mxnet():
    out = mx.nd.ones((5, 4))
    res = mx.nd.onehot_encode(mx.nd.array(_GOLDEN['onehot_encode/in0']), out)
    assert res is out
    np.testing.assert_array_equal(out.asnumpy(), _GOLDEN['onehot_encode/out0'])


def test_ndarray_functions_in_graphs_and_errors():
    # _set_value takes its shape from the consumer (MXNet's node cannot be bound at all)
    y = mx.sym._internal._set_value(src=2.5) + mx.sym.var('a')
    ex = y.simple_bind(mx.cpu(), a=(2, 3))
    np.testing.assert_array_equal(ex.forward(a=mx.nd.ones((2, 3)))[0].asnumpy(),
                                  np.full((2, 3), 3.5, np.float32))
    assert json.loads(mx.sym._internal._set_value(src=2.5).tojson())['nodes'][0]['op'] == \
        '_set_value'
    with pytest.warns(UserWarning, match='Cannot decide shape'), \
            pytest.raises(MXNetError, match='cannot infer the shapes'):
        mx.sym._internal._set_value(src=1.0).simple_bind(mx.cpu())
    with pytest.raises(MXNetError, match='out= is required'):
        mx.nd._internal._set_value(1.0)
    # _copyto's gradient is the head gradient
    y = mx.sym._internal._copyto(mx.sym.var('a') * 2)
    ex = y.simple_bind(mx.cpu(), a=(2, 2))
    ex.forward(is_train=True, a=mx.nd.ones((2, 2)))
    ex.backward(mx.nd.ones((2, 2)) * 3)
    np.testing.assert_array_equal(ex.grad_dict['a'].asnumpy(), np.full((2, 2), 6.0))
    with pytest.raises(ShapeError, match='out=\\(3, 2\\)'):
        mx.nd._internal._copyto(mx.nd.ones((2, 2)), out=mx.nd.zeros((3, 2)))
    # _onehot_encode composes here (MXNet 1.9.1: "Not enough argument"); float32 only
    y = mx.sym._internal._onehot_encode(mx.sym.var('i'), mx.sym.var('o'))
    assert y.infer_shape(o=(3, 4))[0] == [(3,), (3, 4)]
    with pytest.raises(TypeInferenceError, match='only support float32'):    # as MXNet
        mx.nd.onehot_encode(mx.nd.array([1, 0], dtype='int32'), mx.nd.zeros((2, 3)))
    with pytest.raises(ShapeError, match='2 entries but rhs 3 rows'):
        mx.nd.onehot_encode(mx.nd.array([1, 0]), mx.nd.zeros((3, 3)))


def test_aliases_and_json_names():
    assert get_op('_crop_assign') is get_op('_slice_assign')
    assert get_op('_crop_assign_scalar') is get_op('_slice_assign_scalar')
    x = mx.sym.var('x')
    s = mx.sym._internal._crop_assign_scalar(x, scalar=1, begin=(0,), end=(1,))
    assert '_slice_assign_scalar' in s.tojson()


def test_legacy_parameter_sets():
    assert set(param_names(get_op('Pooling_v1'))) == {
        'kernel', 'pool_type', 'global_pool', 'pooling_convention', 'stride', 'pad'}
    assert set(param_names(get_op('BatchNorm_v1'))) == {
        'eps', 'momentum', 'fix_gamma', 'use_global_stats', 'output_mean_var'}
    with pytest.raises(MXNetError):
        get_op('Pooling_v1')(kernel=(2, 2), pool_type='lp')
    with pytest.raises(MXNetError):
        get_op('Pooling_v1')(kernel=(2, 2), p_value=2)
    with pytest.raises(MXNetError):
        get_op('BatchNorm_v1')(axis=1)
    with pytest.raises(MXNetError):
        get_op('Convolution_v1')(kernel=(3,), num_filter=1)


def test_batchnorm_v1_outputs_and_moving_stats_in_backward():
    x = mx.sym.var('x')
    s = mx.sym.BatchNorm_v1(x, name='bn', fix_gamma=False, momentum=0.8,
                            output_mean_var=True)
    assert s.list_outputs() == ['bn_output', 'bn_mean', 'bn_var']
    assert s.list_auxiliary_states() == ['bn_moving_mean', 'bn_moving_var']
    rng = np.random.default_rng(0)
    data = rng.normal(size=(4, 3, 2, 2)).astype(np.float32)
    e = s.simple_bind(mx.cpu(), x=data.shape)
    e.arg_dict['x'][:] = data
    e.aux_dict['bn_moving_var'][:] = 1
    out = e.forward(is_train=True)
    np.testing.assert_allclose(out[2].asnumpy(), data.var(axis=(0, 2, 3)), rtol=1e-5)
    # the forward alone leaves the moving statistics alone ...
    np.testing.assert_allclose(e.aux_dict['bn_moving_var'].asnumpy(), 1)
    e.backward([mx.nd.ones(data.shape), mx.nd.zeros((3,)), mx.nd.zeros((3,))])
    # ... and backward updates them
    np.testing.assert_allclose(e.aux_dict['bn_moving_var'].asnumpy(),
                               0.8 + 0.2 * data.var(axis=(0, 2, 3)), rtol=1e-5)
    np.testing.assert_allclose(e.aux_dict['bn_moving_mean'].asnumpy(),
                               0.2 * data.mean(axis=(0, 2, 3)), rtol=1e-5, atol=1e-7)


def test_shape_rules_and_errors():
    x, y = mx.sym.var('x'), mx.sym.var('y')
    s = mx.sym._internal._slice_assign(x, y, begin=(1,), end=(3,))
    _, out, _ = s.infer_shape(x=(4, 5))
    assert out == [(4, 5)]
    assert s.infer_shape(x=(4, 5))[0] == [(4, 5), (2, 5)]
    with pytest.raises((ShapeError, MXNetError)):
        s.infer_shape(x=(4, 5), y=(3, 5))
    with pytest.raises((ShapeError, MXNetError)):
        mx.sym.BatchNorm_v1(x).infer_shape(x=(2, 3, 4))
    with pytest.raises((ShapeError, MXNetError)):
        mx.sym._internal._identity_with_attr_like_rhs(x, y).infer_shape(x=(2, 3), y=(3, 2))
    with pytest.raises((ShapeError, MXNetError)):
        mx.sym.IdentityAttachKLSparseReg(x).infer_shape(x=(2, 3, 4))
    k = mx.sym.IdentityAttachKLSparseReg(x, name='k')
    assert k.list_auxiliary_states() == ['k_moving_avg']
    assert k.infer_shape(x=(2, 3))[2] == [(3,)]
    p = mx.sym.Pooling_v1(x, kernel=(2, 2), global_pool=True, pool_type='avg')
    assert p.infer_shape(x=(2, 3, 5, 4))[1] == [(2, 3, 1, 1)]


def test_crop_arguments_shapes_and_errors_as_in_mxnet():
    sym = mx.sym.Crop(X, Y, name='c')
    assert sym.list_arguments() == ['x', 'y']
    assert mx.sym.Crop(name='c', num_args=2).list_arguments() == ['c_arg0', 'c_arg1']
    assert '"num_args": "2"' in sym.tojson()
    assert _infer(sym, x=(1, 2, 5, 6), y=(3, 3, 2, 2)) == [(1, 2, 2, 2)]
    crop1 = mx.sym.Crop(X, h_w=(2, 3), offset=(3, 3))
    assert '"num_args": "1"' in crop1.tojson()
    assert _infer(crop1, x=(1, 2, 5, 6)) == [(1, 2, 2, 3)]
    with pytest.raises(ShapeError, match='offset'):
        mx.sym.Crop(X, h_w=(2, 3), offset=(4, 0)).infer_shape(x=(1, 1, 5, 6))
    with pytest.raises(ShapeError, match='offset'):
        mx.sym.Crop(X, h_w=(2, 3), offset=(-1, 0)).infer_shape(x=(1, 1, 5, 6))
    with pytest.raises(ShapeError, match='exceeds'):
        mx.sym.Crop(X, h_w=(6, 3)).infer_shape(x=(1, 1, 5, 6))
    with pytest.raises(ShapeError, match='at least 1'):
        mx.sym.Crop(X, num_args=1).infer_shape(x=(1, 1, 5, 6))
    with pytest.raises(ShapeError, match='smaller'):
        mx.sym.Crop(X, Y).infer_shape(x=(1, 1, 5, 6), y=(1, 1, 6, 2))
    with pytest.raises(ShapeError, match='4-D'):
        mx.sym.Crop(X, h_w=(2, 2)).infer_shape(x=(1, 5, 6))
    with pytest.raises(MXNetError, match='1 or 2'):
        mx.sym.Crop(X, Y, X)
    out = mx.nd.Crop(mx.nd.array(np.arange(30).reshape(1, 1, 5, 6)), num_args=1,
                     h_w=(4, 4), center_crop=True)
    assert out.asnumpy()[0, 0, :, 0].tolist() == [1, 7, 13, 19]


def test_mxnet_written_copyto_graph_loads():
    y = mx.sym.load_json(str(_GOLDEN['json_copyto/attrs']))
    out = y.bind(mx.cpu(), {'x': mx.nd.array([[1.5, 2.0]])}).forward()[0]
    np.testing.assert_array_equal(out.asnumpy(), [[1.5, 2.0]])
