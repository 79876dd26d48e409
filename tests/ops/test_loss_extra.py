"""smooth_l1, softmax_cross_entropy, SVMOutput (ops/loss.py), hard_sigmoid (ops/nn.py),
softmin (ops/softmax.py) and GroupNorm (ops/norm_layers.py).

References are written element by element from MXNet 1.9.1's formulas (checked against
MXNet 1.9.1 when this file was written); they do not call the operators.
"""
import numpy as np
import pytest

import symgraph as mx
from harness import case_tests, OpCase
from symgraph.opdef import ShapeError, TypeInferenceError, get_op


def _sm(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _smooth_l1_ref(sigma=1.0):
    def f(x):
        out = np.empty_like(x)
        for i, v in np.ndenumerate(x):
            if abs(v) < 1.0 / sigma ** 2:
                out[i] = 0.5 * (sigma * v) ** 2
            else:
                out[i] = abs(v) - 0.5 / sigma ** 2
        return out
    return f


def _spread(scale):
    """Inputs uniform(-scale, scale) kept away from the kinks (numeric gradients)."""
    def make(rng, shapes, dtype):
        x = rng.uniform(-scale, scale, shapes[0])
        return [x]
    return make


def _hard_sigmoid_ref(alpha=0.2, beta=0.5):
    return lambda x: np.minimum(np.maximum(alpha * x + beta, 0), 1)


def _hs_inputs(rng, shapes, dtype):
    # 3.7 and -3.3 lie outside the linear part for the default alpha and beta
    x = rng.uniform(-2, 2, shapes[0])
    x.flat[0], x.flat[1] = 3.7, -3.3
    return [x]


def _labels(label, scale=2.0):
    def make(rng, shapes, dtype):
        return [rng.uniform(-scale, scale, shapes[0]), np.asarray(label, dtype='float64')]
    return make


def _sce_ref(x, lab):
    p = _sm(x, 1)
    return np.array([-sum(np.log(p[i, int(lab[i])]) for i in range(x.shape[0]))])


def _sce_grad(inputs, outputs, out_grads):
    x, lab = inputs
    g = _sm(x, 1)
    for i in range(x.shape[0]):
        g[i, int(lab[i])] -= 1
    return [g * out_grads[0][0], None]


def _svm_grad(margin=1.0, coef=1.0, linear=False):
    def f(inputs, outputs, out_grads):
        x, lab = inputs
        k = x.shape[-1]
        x2 = x.reshape(-1, k)
        lab1 = lab.reshape(-1)
        g = np.zeros_like(x2)
        for r in range(x2.shape[0]):
            for j in range(k):
                v = x2[r, j]
                if j == int(lab1[r]):
                    g[r, j] = -coef * (margin > v) if linear else \
                        -coef * 2 * (margin - v) * (margin > v)
                else:
                    g[r, j] = coef * (margin > -v) if linear else \
                        coef * 2 * (margin + v) * (margin > -v)
        return [g.reshape(x.shape), None]
    return f


def _group_norm_ref(num_groups=1, eps=1e-5, output_mean_var=False):
    def f(x, gamma, beta):
        n, c = x.shape[:2]
        per = c // num_groups
        out = np.empty_like(x)
        mean = np.empty((n, num_groups))
        std = np.empty((n, num_groups))
        for i in range(n):
            for g in range(num_groups):
                block = x[i, g * per:(g + 1) * per]
                mean[i, g] = block.mean()
                std[i, g] = np.sqrt(block.var() + eps)
                out[i, g * per:(g + 1) * per] = \
                    (block - mean[i, g]) / std[i, g] * gamma[g] + beta[g]
        return [out, mean, std] if output_mean_var else out
    return f


def _first_output_grad(ref, n_args, eps=1e-6):
    """Central differences of sum(dy * ref(...)[0]): MXNet gives the extra visible outputs
    (mean, std) no gradient."""
    def grad_ref(inputs, outputs, out_grads):
        res = []
        for i in range(n_args):
            g = np.zeros_like(inputs[i])
            for k in range(g.size):
                for sgn in (1, -1):
                    args = [a.copy() for a in inputs]
                    args[i].reshape(-1)[k] += sgn * eps
                    g.reshape(-1)[k] += sgn * float((ref(*args)[0] * out_grads[0]).sum()) \
                        / (2 * eps)
            res.append(g)
        return res
    return grad_ref


def _gn_inputs(rng, shapes, dtype):
    return [rng.uniform(-1, 1, shapes[0]), rng.uniform(0.5, 1.5, shapes[1]),
            rng.uniform(-1, 1, shapes[2])]


SVM = 'SVMOutput'
F16 = ('float16', 'float32', 'float64')
GN = 'GroupNorm'
CASES = [
    OpCase('smooth_l1', {}, [(3, 4)], inputs=_spread(2.0), ref=_smooth_l1_ref(), dtypes=F16),
    OpCase('smooth_l1', dict(scalar=2.0), [(3, 4)], inputs=_spread(1.0),
           ref=_smooth_l1_ref(2.0)),
    OpCase('smooth_l1', dict(scalar=0.5), [(2, 3, 2)], inputs=_spread(6.0),
           ref=_smooth_l1_ref(0.5)),
    OpCase('hard_sigmoid', {}, [(3, 4)], inputs=_hs_inputs, ref=_hard_sigmoid_ref(), dtypes=F16),
    OpCase('hard_sigmoid', dict(alpha=0.5, beta=0.2), [(2, 5)], inputs=_hs_inputs,
           ref=_hard_sigmoid_ref(0.5, 0.2)),
    OpCase('softmin', {}, [(2, 3, 4)], ref=lambda x: _sm(-x), dtypes=F16),
    OpCase('softmin', dict(axis=0, temperature=2.5), [(2, 3, 4)],
           ref=lambda x: _sm(-x / 2.5, 0)),
    OpCase('softmin', dict(axis=1, dtype='float64'), [(3, 5)], ref=lambda x: _sm(-x, 1)),
    OpCase('softmax_cross_entropy', {}, [(3, 4), (3,)], inputs=_labels([1, 3, 0]),
           ref=_sce_ref, grad=(0,), dtypes=F16),
    OpCase('softmax_cross_entropy', {}, [(5, 2), (5,)], inputs=_labels([1, 0, 0, 1, 1], 4.0),
           ref=_sce_ref, grad=(0,)),
    OpCase('softmax_cross_entropy', {}, [(3, 4), (3,)], inputs=_labels([1, 3, 0]),
           ref=_sce_ref, grad=(0,), grad_ref=_sce_grad, id='softmax_cross_entropy[grad_ref]'),
    OpCase(SVM, {}, [(3, 4), (3,)], inputs=_labels([1, 3, 0]), ref=lambda x, lab: x,
           grad=(0,), grad_ref=_svm_grad(), dtypes=F16),
    OpCase(SVM, dict(use_linear=True), [(3, 4), (3,)], inputs=_labels([1, 3, 0]),
           ref=lambda x, lab: x, grad=(0,), grad_ref=_svm_grad(linear=True)),
    OpCase(SVM, dict(margin=0.5, regularization_coefficient=2.0), [(4, 3), (4,)],
           inputs=_labels([2, 0, -1, 7]), ref=lambda x, lab: x, grad=(0,),
           grad_ref=_svm_grad(0.5, 2.0)),
    # N-D data: one label per row of the last axis
    OpCase(SVM, dict(use_linear=True, margin=0.7), [(2, 3, 2), (2, 3)],
           inputs=_labels([[5, 0, 1], [3, 1, 1]]), ref=lambda x, lab: x, grad=(0,),
           grad_ref=_svm_grad(0.7, linear=True)),
    OpCase(GN, {}, [(2, 4, 3), (1,), (1,)], inputs=_gn_inputs, ref=_group_norm_ref()),
    OpCase(GN, dict(num_groups=2), [(2, 4, 3), (2,), (2,)], inputs=_gn_inputs,
           ref=_group_norm_ref(2), dtypes=F16),
    OpCase(GN, dict(num_groups=3, eps=1e-3, output_mean_var=True), [(2, 6, 2, 2), (3,), (3,)],
           inputs=_gn_inputs, ref=_group_norm_ref(3, 1e-3, True),
           grad_ref=_first_output_grad(_group_norm_ref(3, 1e-3, True), 3)),
    OpCase(GN, dict(num_groups=4), [(3, 4, 5), (4,), (4,)], inputs=_gn_inputs,
           ref=_group_norm_ref(4)),
]


test_forward, test_gradient = case_tests(CASES)


def test_values_seen_on_mxnet():
    np.testing.assert_allclose(mx.nd.smooth_l1(mx.nd.array([-2, -0.5, 0.2, 3])).asnumpy(),
                               [1.5, 0.125, 0.02, 2.5], rtol=1e-6)
    np.testing.assert_allclose(
        mx.nd.smooth_l1(mx.nd.array([-2, -0.5, 0.2, 3]), scalar=2).asnumpy(),
        [1.875, 0.375, 0.08, 2.875], rtol=1e-6)
    np.testing.assert_allclose(mx.nd.hard_sigmoid(mx.nd.array([-3, -2.5, 0, 2.5, 3])).asnumpy(),
                               [0, 0, 0.5, 1, 1])
    np.testing.assert_allclose(mx.nd.softmin(mx.nd.array([[1, 2, 3]]), temperature=2).asnumpy(),
                               [[0.5064804, 0.3071959, 0.18632373]], rtol=1e-6)


def test_svm_gradient_seen_on_mxnet():
    """MXNet 1.9.1's L1 gradient: labels out of range match no class."""
    x = np.array([[[0.761, 0.122], [0.444, 0.334], [1.494, -0.205]],
                  [[0.313, -0.854], [-2.553, 0.654], [0.864, -0.742]]])
    lab = np.array([[5, 0, 1], [3, 1, 1]])
    op = get_op(SVM)(use_linear=True)
    g = op.backward(np, [None], [x, lab.astype(float)], [x], [], [True, False])[0]
    np.testing.assert_array_equal(g, [[[1, 1], [-1, 1], [1, -1]], [[1, 1], [0, -1], [1, -1]]])


def test_loss_heads_and_arguments():
    x = mx.sym.var('x')
    assert get_op(SVM)().is_loss
    assert not get_op('softmax_cross_entropy')().is_loss
    assert mx.sym.SVMOutput(x, name='svm').list_arguments() == ['x', 'svm_label']
    args, outs, _ = mx.sym.SVMOutput(x, name='svm').infer_shape(x=(2, 3, 2))
    assert args == [(2, 3, 2), (2, 3)] and outs == [(2, 3, 2)]
    s = mx.sym.GroupNorm(x, num_groups=2, name='gn')
    assert s.list_arguments() == ['x', 'gn_gamma', 'gn_beta']
    assert s.list_outputs() == ['gn_output']
    args, outs, _ = s.infer_shape(x=(2, 4, 3))
    assert args == [(2, 4, 3), (2,), (2,)] and outs == [(2, 4, 3)]
    s = mx.sym.GroupNorm(x, num_groups=2, output_mean_var=True, name='gn')
    assert s.list_outputs() == ['gn_output', 'gn_mean', 'gn_std']
    assert s.infer_shape(x=(2, 4, 3))[1] == [(2, 4, 3), (2, 2), (2, 2)]
    s = mx.sym.softmax_cross_entropy(x, mx.sym.var('l'))
    assert s.infer_shape(x=(3, 4), l=(3,))[1] == [(1,)]
    assert mx.sym.softmin(x, name='sm').list_arguments() == ['x']


@pytest.mark.parametrize('name, attrs, shapes, match', [
    ('softmax_cross_entropy', {}, [(3, 4, 2), (3,)], "'data'"),
    ('softmax_cross_entropy', {}, [(3, 4), (3, 1)], "'label'"),
    ('softmax_cross_entropy', {}, [(3, 4), (2,)], "'label'"),
    (SVM, {}, [(3, 4), (4,)], "'label'"),
    (GN, {}, [(2, 4), None, None], "'data'"),
    (GN, dict(num_groups=3), [(2, 4, 3), None, None], 'num_groups'),
    (GN, dict(num_groups=2), [(2, 4, 3), (4,), None], "'gamma'"),
    ('softmin', dict(use_length=True), [(2, 3)], 'length'),
])
def test_shape_errors(name, attrs, shapes, match):
    """The checks MXNet 1.9.1 makes (2-D data and 1-D label for softmax_cross_entropy,
    rank >= 3 and C % num_groups == 0 for GroupNorm, gamma of (num_groups,))."""
    with pytest.raises(ShapeError, match=match):
        get_op(name)(**attrs).infer_shape(list(shapes))


def test_uniform_types():
    f32, f64 = np.dtype('float32'), np.dtype('float64')
    for name in ('softmax_cross_entropy', SVM):
        assert get_op(name)().infer_type([f64, None]) == ([f64, f64], [f64], [])
        with pytest.raises(TypeInferenceError):
            get_op(name)().infer_type([f64, f32])
    assert get_op('softmin')(dtype='float64').infer_type([f32])[1] == [f64]


def test_positional_parameters():
    assert get_op(SVM).positional_params() == ['margin', 'regularization_coefficient',
                                               'use_linear']
    assert get_op(GN).positional_params() == ['num_groups', 'eps', 'output_mean_var']
    assert get_op('softmin').positional_params() == ['axis', 'temperature', 'dtype',
                                                     'use_length']
