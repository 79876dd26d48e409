"""BatchNorm and contrib BatchNormWithReLU (ops/norm.py) against naive references
(test_shape_inference_and_errors also checks LayerNorm's shapes).

References loop over channels / samples / windows on purpose: they share no code with the
vectorised operators.
"""
import numpy as np
import pytest

import symgraph as mx
from _refs import F32, numeric_grad_of_first_output
from harness import case_tests, OpCase
from symgraph.opdef import MXNetError, ShapeError, get_op


def _bn_inputs(rng, shapes, dtype):
    """data, gamma, beta, moving_mean, moving_var (positive)."""
    data, c = shapes[0], shapes[1]
    return [rng.uniform(-1, 1, data) * 2 + 0.5, rng.uniform(0.5, 1.5, c),
            rng.uniform(-1, 1, c), rng.uniform(-0.5, 0.5, c), rng.uniform(0.5, 1.5, c)]


def bn_ref(axis=1, eps=1e-3, fix_gamma=True, train=False, use_global_stats=False,
           output_mean_var=False):
    def ref(x, g, b, mm, mv):
        x = x.astype(np.float64)
        ax = axis % x.ndim
        out = np.empty_like(x)
        means, invs = [], []
        for c in range(x.shape[ax]):
            xc = np.take(x, c, axis=ax)
            if train and not use_global_stats:
                m = xc.sum() / xc.size
                v = ((xc - m) ** 2).sum() / xc.size
            else:
                m, v = float(mm[c]), float(mv[c])
            inv = 1.0 / np.sqrt(v + F32(eps))
            gc = 1.0 if fix_gamma else float(g[c])
            idx = [slice(None)] * x.ndim
            idx[ax] = c
            out[tuple(idx)] = (xc - m) * inv * gc + float(b[c])
            means.append(m)
            invs.append(inv)
        return [out, np.array(means), np.array(invs)] if output_mean_var else out
    return ref


def bn_executor_grad_ref(axis=1, eps=1e-3, fix_gamma=True):
    """MXNet's executor runs BatchNorm's backward in training mode even after an inference
    forward: the batch-statistics formula, applied with the moving statistics."""
    def grad_ref(inputs, outputs, out_grads):
        x, g, b, mm, mv = inputs
        dy = out_grads[0]
        ax = axis % x.ndim
        dx = np.empty_like(x)
        dg = np.zeros(x.shape[ax])
        db = np.zeros(x.shape[ax])
        for c in range(x.shape[ax]):
            xc, dyc = np.take(x, c, axis=ax), np.take(dy, c, axis=ax)
            inv = 1.0 / np.sqrt(mv[c] + F32(eps))
            xhat = (xc - mm[c]) * inv
            gc = 1.0 if fix_gamma else g[c]
            d = dyc * gc
            idx = [slice(None)] * x.ndim
            idx[ax] = c
            dx[tuple(idx)] = inv * (d - d.mean() - xhat * (d * xhat).mean())
            dg[c] = 0.0 if fix_gamma else (dyc * xhat).sum()
            db[c] = dyc.sum()
        return [dx, dg, db]
    return grad_ref


def _bn_case(data, axis=1, train=False, grad_ref=None, **attrs):
    c = data[axis % len(data)]
    kw = dict(attrs)
    if axis != 1:
        kw['axis'] = axis
    ref = bn_ref(axis=axis, train=train, **attrs)
    if grad_ref == 'executor':
        grad_ref = bn_executor_grad_ref(axis=axis, eps=attrs.get('eps', 1e-3),
                                        fix_gamma=attrs.get('fix_gamma', True))
    elif grad_ref == 'first':
        grad_ref = numeric_grad_of_first_output(ref, 3)
    return OpCase('BatchNorm', kw, shapes=[data, (c,), (c,), (c,), (c,)], ref=ref,
                  inputs=_bn_inputs, grad=(0, 1, 2), grad_ref=grad_ref, is_train=train,
                  rtol=1e-4, atol=1e-5, grad_rtol=1e-4, grad_atol=1e-6,
                  id='BatchNorm[%s,train=%s]%s' % (kw, train, data))


BN_CASES = [
    _bn_case((4, 3, 2, 5), train=True, fix_gamma=False),
    _bn_case((4, 3, 2, 5), train=True),                       # fix_gamma: zero gamma grad
    _bn_case((5, 3), train=True, fix_gamma=False, eps=1e-5),
    _bn_case((2, 3, 5, 4), axis=-1, train=True, fix_gamma=False),   # NHWC
    _bn_case((2, 3, 5, 4), axis=3, train=True, fix_gamma=False),
    _bn_case((3, 4, 5), axis=2, train=True, fix_gamma=False),
    _bn_case((3, 4, 5), axis=0, train=True, fix_gamma=False),
    _bn_case((4, 3, 2, 5), train=True, fix_gamma=False, use_global_stats=True),
    _bn_case((4, 3, 2, 5), train=False, fix_gamma=False, use_global_stats=True),
    _bn_case((4, 3, 2, 5), train=False, fix_gamma=False, grad_ref='executor'),
    _bn_case((4, 3, 2), train=False, grad_ref='executor'),
    _bn_case((4, 3, 2), train=True, fix_gamma=False, output_mean_var=True,
             grad_ref='first'),
    _bn_case((4, 3, 2), train=False, fix_gamma=False, output_mean_var=True,
             use_global_stats=True, grad_ref='first'),
]


# _contrib_BatchNormWithReLU: BatchNorm's reference followed by relu, with the numeric
# gradient of that composition. No golden data: MXNet 1.9.1's CPU build has no compute for
# this operator without oneDNN and crashes with it.
def _relu_of(ref):
    def f(*args):
        out = ref(*args)
        if isinstance(out, list):
            return [np.maximum(out[0], 0)] + out[1:]
        return np.maximum(out, 0)
    return f


def _bnrelu_case(data, train, axis=1, **attrs):
    c = data[axis % len(data)]
    kw = dict(attrs, axis=axis)
    ref = _relu_of(bn_ref(axis=axis, train=train, **attrs))
    full = _relu_of(bn_ref(axis=axis, train=train, output_mean_var=True, **attrs))
    return OpCase('_contrib_BatchNormWithReLU', kw, shapes=[data, (c,), (c,), (c,), (c,)],
                  ref=ref, inputs=_bn_inputs, grad=(0, 1, 2), is_train=train,
                  grad_ref=numeric_grad_of_first_output(full, 3), rtol=1e-4, atol=1e-5,
                  id='BatchNormWithReLU[%s,train=%s]%s' % (kw, train, data))


BNRELU_CASES = [
    _bnrelu_case((4, 3, 2, 5), True, fix_gamma=False, eps=1e-5),
    _bnrelu_case((4, 3, 5), True),
    _bnrelu_case((3, 4), True, axis=-1, fix_gamma=False),
]

CASES = BN_CASES + BNRELU_CASES


test_forward, test_gradient = case_tests(CASES)


@pytest.mark.parametrize('dtype', ['float32', 'float64'])
@pytest.mark.parametrize('axis', [1, -1])
def test_batchnorm_moving_stats_after_training_steps(dtype, axis):
    rng = np.random.RandomState(3)
    op = get_op('BatchNorm')(momentum=0.8, fix_gamma=False, axis=axis)
    shape = (4, 3, 5) if axis == 1 else (4, 5, 3)
    g, b = np.ones(3, dtype), np.zeros(3, dtype)
    mm, mv = np.zeros(3, dtype), np.ones(3, dtype)
    exp_m, exp_v = np.zeros(3), np.ones(3)
    for _ in range(3):
        x = rng.uniform(-2, 3, shape).astype(dtype)
        op.forward(np, [x, g, b], [mm, mv], True)
        xc = np.moveaxis(x.astype(np.float64), axis, 0).reshape(3, -1)
        for c in range(3):
            m = xc[c].mean()
            v = ((xc[c] - m) ** 2).mean()             # biased (population) variance
            exp_m[c] = exp_m[c] * F32(0.8) + m * (1 - F32(0.8))
            exp_v[c] = exp_v[c] * F32(0.8) + v * (1 - F32(0.8))
    tol = 1e-5 if dtype == 'float32' else 1e-12
    np.testing.assert_allclose(mm, exp_m, rtol=tol)
    np.testing.assert_allclose(mv, exp_v, rtol=tol)
    # inference and use_global_stats leave the running statistics alone
    before = mm.copy(), mv.copy()
    op.forward(np, [x, g, b], [mm, mv], False)
    get_op('BatchNorm')(use_global_stats=True, axis=axis).forward(np, [x, g, b], [mm, mv], True)
    np.testing.assert_array_equal(mm, before[0])
    np.testing.assert_array_equal(mv, before[1])


def test_batchnorm_fix_gamma_ignores_gamma_values():
    op = get_op('BatchNorm')()
    x = np.random.RandomState(0).rand(4, 2).astype('f')
    aux = [np.zeros(2, 'f'), np.ones(2, 'f')]
    a = op.forward(np, [x, np.full(2, 5.0, 'f'), np.zeros(2, 'f')], aux, True)[0]
    b = op.forward(np, [x, np.ones(2, 'f'), np.zeros(2, 'f')], aux, True)[0]
    np.testing.assert_array_equal(a, b)


def test_batchnorm_fix_gamma_writes_one_into_gamma():
    # as MXNet 1.9.1's BatchNorm, in training and in inference (seen: gamma 2 -> 1)
    for is_train in (True, False):
        gamma = np.full(2, 2.0, 'f')
        get_op('BatchNorm')().forward(np, [np.ones((3, 2), 'f'), gamma, np.zeros(2, 'f')],
                                      [np.zeros(2, 'f'), np.ones(2, 'f')], is_train)
        np.testing.assert_array_equal(gamma, [1, 1])
    gamma = np.full(2, 2.0, 'f')
    get_op('BatchNorm')(fix_gamma=False).forward(
        np, [np.ones((3, 2), 'f'), gamma, np.zeros(2, 'f')],
        [np.zeros(2, 'f'), np.ones(2, 'f')], True)
    np.testing.assert_array_equal(gamma, [2, 2])


def test_batchnorm_float16_uses_float32_parameters():
    op = get_op('BatchNorm')(fix_gamma=False)
    _, outs, aux = op.infer_shape([(2, 3, 4), None, None, None, None])
    assert outs == [(2, 3, 4), (3,), (3,)] and aux == [(3,), (3,)]
    args, outs, aux = op.infer_type([np.dtype('float16'), None, None, None, None])
    assert args[1] == np.float32 and outs[0] == np.float16 and aux[0] == np.float32
    x = np.random.RandomState(0).rand(2, 3, 4).astype(np.float16)
    p = [np.ones(3, 'f'), np.zeros(3, 'f')]
    out = op.forward(np, [x] + p, [np.zeros(3, 'f'), np.ones(3, 'f')], True)
    assert out[0].dtype == np.float16 and out[1].dtype == np.float32
    np.testing.assert_allclose(out[0], bn_ref(fix_gamma=False, train=True)(
        x, p[0], p[1], None, None), atol=2e-3)


def test_shape_inference_and_errors():
    bn = get_op('BatchNorm')(axis=-1)
    assert bn.infer_shape([(2, 0, 4), None, (4,), None, None])[0][0] == (2, 0, 4)
    assert bn.infer_shape([(2, 3, 0), (4,), None, None, None])[0][0] == (2, 3, 4)
    with pytest.raises(ShapeError):
        get_op('BatchNorm')().infer_shape([(2,), None, None, None, None])
    with pytest.raises(ShapeError):
        get_op('BatchNorm')().infer_shape([(2, 3), (4,), None, None, None])
    ln = get_op('LayerNorm')(axis=1, output_mean_var=True)
    assert ln.infer_shape([(2, 5, 3), None, None]) == (
        [(2, 5, 3), (5,), (5,)], [(2, 5, 3), (2, 1, 3), (2, 1, 3)], [])
    assert ln.num_visible_outputs() == 3
    assert get_op('LayerNorm')().num_visible_outputs() == 1
    with pytest.raises(ShapeError):
        get_op('InstanceNorm')().infer_shape([(2, 3), None, None])
    with pytest.raises(ShapeError):
        get_op('L2Normalization')(mode='channel').infer_shape([(2, 3)])
    with pytest.raises(ShapeError):
        get_op('LRN')(nsize=3).infer_shape([(2, 3, 4)])
    with pytest.raises(MXNetError):
        get_op('LRN')(nsize=4)
    assert get_op('_npx_batch_norm') is get_op('BatchNorm')
    assert get_op('BatchNorm')(output_mean_var=True).list_outputs() == ['output', 'mean', 'var']


def test_names_and_outputs_are_batchnorms():
    s = mx.sym.contrib.BatchNormWithReLU(mx.sym.var('x'), name='bn')
    assert s.list_arguments() == ['x', 'bn_gamma', 'bn_beta']
    assert s.list_auxiliary_states() == ['bn_moving_mean', 'bn_moving_var']
    assert s.list_outputs() == ['bn_output']
    ex = s.simple_bind(mx.cpu(), x=(4, 2, 3))
    ex.forward(is_train=True, x=mx.nd.array(np.random.RandomState(0).normal(size=(4, 2, 3))))
    out = ex.outputs[0].asnumpy()
    assert out.min() == 0 and (out == 0).mean() > 0.3      # relu of a normalised batch
