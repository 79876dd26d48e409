"""Loss heads (ops/loss.py): forward values and MXNet 1.9.1's own gradients.

The expected gradients below restate MXNet's formulas element by element (checked against
MXNet 1.9.1 itself when this file was written); they do not call the operators.
"""
import numpy as np
import pytest

import symgraph as mx
from harness import case_tests, OpCase
from symgraph.opdef import ShapeError, TypeInferenceError, get_op
from _refs import F16, GN
from symgraph.opdef import positional_params


def _sm(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _labels(label, scale=2.0):
    """Input maker: data uniform(-scale, scale) and the given labels (as floats)."""
    def make(rng, shapes, dtype):
        return [rng.uniform(-scale, scale, shapes[0]), np.asarray(label, dtype='float64')]
    return make


def _soft_labels(rng, shapes, dtype):
    return [rng.uniform(-1, 1, shapes[0]), rng.dirichlet(np.ones(shapes[0][-1]), shapes[0][0])]


def _flat_softmax(x, lab):
    return _sm(x.reshape(x.shape[0], -1), 1).reshape(x.shape)


def _rows_grad(y, lab, grad_scale=1.0, normalization='null', use_ignore=False,
               ignore_label=-1.0, smooth_alpha=0.0, out_grad=False):
    """MXNet's gradient for rows of y (R, K) with one label per row (extra labels unused
    but counted for normalisation)."""
    r, k = y.shape
    t = np.full((r, k), smooth_alpha / (k - 1) if smooth_alpha else 0.0)
    g = np.empty_like(y)
    for i in range(r):
        li = int(lab[i])
        if 0 <= li < k:
            t[i, li] = 1.0 - smooth_alpha
        g[i] = y[i] - t[i]
        if use_ignore and lab[i] == ignore_label:
            g[i] = 0
    valid = max(sum(int(v) != int(ignore_label) for v in lab), 1)
    div = {'null': 1, 'batch': lab.size, 'valid': valid}[normalization]
    g = g * grad_scale / div
    return g * y if out_grad else g


def _so_grad(**kw):
    def f(inputs, outputs, out_grads):
        x, lab = inputs
        y = outputs[0]
        if kw.get('preserve_shape'):
            y2 = y.reshape(-1, y.shape[-1])
        else:
            y2 = y.reshape(y.shape[0], -1)
        args = {k: v for k, v in kw.items() if k != 'preserve_shape'}
        return [_rows_grad(y2, lab.reshape(-1), **args).reshape(y.shape), None]
    return f


def _multi_grad(grad_scale=1.0, normalization='null', use_ignore=False, ignore_label=-1.0):
    def f(inputs, outputs, out_grads):
        x, lab = inputs
        y = outputs[0]
        n, k = y.shape[:2]
        y3 = y.reshape(n, k, -1)
        lab2 = lab.reshape(n, -1)
        s = y3.shape[2]
        g = y3.copy()
        for i in range(n):
            for j in range(s):
                c = int(lab2[i, j])
                if 0 <= c < k:
                    g[i, c, j] -= 1
                if use_ignore and lab2[i, j] == ignore_label:
                    g[i, :, j] = 0
        if normalization == 'valid':
            scale = grad_scale / max(int((lab2.astype(int) != int(ignore_label)).sum()), 1)
        else:
            scale = grad_scale / s / (n if normalization == 'batch' else 1)
        return [(g * scale).reshape(y.shape), None]
    return f


def _prob_grad(grad_scale=1.0):
    def f(inputs, outputs, out_grads):
        return [(outputs[0] - inputs[1]) * grad_scale, None]
    return f


def _regression(kind, grad_scale=1.0):
    def grad(inputs, outputs, out_grads):
        x, lab = inputs
        y = outputs[0]
        d = y - lab.reshape(y.shape)
        d = np.sign(d) if kind == 'mae' else d
        return [d * grad_scale / (lab.size / lab.shape[0]), np.zeros_like(lab)]
    return grad


def _sigmoid(x, lab=None):
    return 1 / (1 + np.exp(-x))


def _make_loss_grad(grad_scale=1.0, normalization='null', valid_thresh=0.0):
    def f(inputs, outputs, out_grads):
        x = inputs[0]
        div = {'null': 1, 'batch': x.shape[0],
               'valid': max(int((x > valid_thresh).sum()), 1)}[normalization]
        return [np.full(x.shape, grad_scale / div)]
    return f


LAB5 = [1, 5, -1, 2, 2]
SO = 'SoftmaxOutput'
CASES = [
    OpCase(SO, {}, [(5, 6), (5,)], inputs=_labels(LAB5), ref=_flat_softmax, grad=(0,),
           grad_ref=_so_grad()),
    OpCase('Softmax', dict(normalization='batch'), [(5, 6), (5,)], inputs=_labels(LAB5),
           ref=_flat_softmax, grad=(0,), grad_ref=_so_grad(normalization='batch')),
    OpCase(SO, dict(normalization='valid'), [(5, 6), (5,)], inputs=_labels(LAB5),
           ref=_flat_softmax, grad=(0,), grad_ref=_so_grad(normalization='valid')),
    OpCase(SO, dict(use_ignore=True, normalization='valid'), [(5, 6), (5,)],
           inputs=_labels(LAB5), ref=_flat_softmax, grad=(0,),
           grad_ref=_so_grad(use_ignore=True, normalization='valid')),
    OpCase(SO, dict(use_ignore=True, ignore_label=2, normalization='batch', grad_scale=0.5),
           [(5, 6), (5,)], inputs=_labels(LAB5), ref=_flat_softmax, grad=(0,),
           grad_ref=_so_grad(use_ignore=True, ignore_label=2, normalization='batch',
                             grad_scale=0.5)),
    OpCase(SO, dict(smooth_alpha=0.2, grad_scale=2.0), [(5, 6), (5,)], inputs=_labels(LAB5),
           ref=_flat_softmax, grad=(0,), grad_ref=_so_grad(smooth_alpha=0.2, grad_scale=2.0)),
    OpCase(SO, dict(smooth_alpha=0.1, use_ignore=True, ignore_label=2, normalization='valid'),
           [(5, 6), (5,)], inputs=_labels(LAB5), ref=_flat_softmax, grad=(0,),
           grad_ref=_so_grad(smooth_alpha=0.1, use_ignore=True, ignore_label=2,
                             normalization='valid')),
    OpCase(SO, dict(out_grad=True, grad_scale=0.7), [(3, 4), (3,)], inputs=_labels([3, 2, 0]),
           ref=_flat_softmax, grad=(0,), grad_ref=_so_grad(out_grad=True, grad_scale=0.7)),
    # N-D data without multi_output: forward over all but axis 0; MXNet's backward takes one
    # label per batch row (the first N labels) but normalises with all of them
    OpCase(SO, dict(normalization='batch'), [(4, 3, 5), (4, 3)],
           inputs=_labels([[3, 0, 1], [1, 1, 4], [4, 1, 2], [0, 2, 0]]),
           ref=_flat_softmax, grad=(0,), grad_ref=_so_grad(normalization='batch')),
    OpCase(SO, dict(preserve_shape=True, normalization='valid'), [(4, 3, 5), (4, 3)],
           inputs=_labels([[3, 0, 1], [1, -1, 4], [4, 1, 2], [0, 2, 0]]),
           ref=lambda x, lab: _sm(x, -1), grad=(0,),
           grad_ref=_so_grad(preserve_shape=True, normalization='valid')),
    OpCase(SO, {}, [(3, 4), (3, 4)], inputs=_soft_labels, ref=_flat_softmax, grad=(0,),
           grad_ref=_prob_grad()),
    OpCase(SO, dict(grad_scale=3.0, smooth_alpha=0.3), [(3, 4), (3, 4)], inputs=_soft_labels,
           ref=_flat_softmax, grad=(0,), grad_ref=_prob_grad(3.0)),
] + [
    OpCase(SO, dict(kw, multi_output=True), [(2, 4, 3, 2), lshape],
           inputs=_labels(np.array([[0, 3, 3, 1, -1, 2], [1, 1, 0, 2, 3, 1]]).reshape(lshape)),
           ref=lambda x, lab: _sm(x, 1), grad=(0,),
           grad_ref=_multi_grad(**{k: v for k, v in kw.items() if k != 'smooth_alpha'}))
    for kw, lshape in [({}, (2, 6)), (dict(normalization='batch'), (2, 3, 2)),
                       (dict(normalization='valid', use_ignore=True, ignore_label=1), (2, 6)),
                       (dict(normalization='valid'), (2, 6)),
                       # MXNet ignores smooth_alpha with multi_output
                       (dict(smooth_alpha=0.3, grad_scale=3.0), (2, 1, 3, 2))]
] + [
    OpCase('LinearRegressionOutput', dict(grad_scale=1.5), [(4, 3), (4, 3)],
           ref=lambda x, lab: x, grad_ref=_regression('linear', 1.5)),
    OpCase('LinearRegressionOutput', {}, [(4, 1), (4,)], ref=lambda x, lab: x,
           grad_ref=_regression('linear')),
    OpCase('LinearRegressionOutput', {}, [(2, 3, 2), (2, 6)], ref=lambda x, lab: x,
           grad_ref=_regression('linear')),
    OpCase('LogisticRegressionOutput', dict(grad_scale=1.5), [(4, 3), (4, 3)], ref=_sigmoid,
           grad_ref=_regression('logistic', 1.5)),
    OpCase('LogisticRegressionOutput', {}, [(5, 1), (5,)], ref=_sigmoid,
           grad_ref=_regression('logistic')),
    OpCase('MAERegressionOutput', dict(grad_scale=1.5), [(4, 3), (4, 3)],
           ref=lambda x, lab: x, grad_ref=_regression('mae', 1.5)),
    OpCase('MAERegressionOutput', {}, [(2, 3, 2), (2, 6)], ref=lambda x, lab: x,
           grad_ref=_regression('mae')),
    OpCase('MakeLoss', {}, [(3, 4)], ref=lambda x: x, grad_ref=_make_loss_grad()),
    OpCase('MakeLoss', dict(grad_scale=2.0, normalization='batch'), [(3, 4)],
           ref=lambda x: x, grad_ref=_make_loss_grad(2.0, 'batch')),
    OpCase('MakeLoss', dict(normalization='valid', valid_thresh=0.2), [(3, 5)],
           ref=lambda x: x, grad_ref=_make_loss_grad(normalization='valid', valid_thresh=0.2)),
    OpCase('MakeLoss', dict(normalization='valid', valid_thresh=5.0), [(2, 3)],
           ref=lambda x: x, grad_ref=_make_loss_grad(normalization='valid', valid_thresh=5.0)),
    OpCase('make_loss', {}, [(3, 4)], ref=lambda x: x,
           grad_ref=lambda i, o, g: [np.ones_like(i[0])]),
]


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


SVM = 'SVMOutput'


SCE_SVM_SMOOTH_L1_CASES = [
    OpCase('smooth_l1', {}, [(3, 4)], inputs=_spread(2.0), ref=_smooth_l1_ref(), dtypes=F16),
    OpCase('smooth_l1', dict(scalar=2.0), [(3, 4)], inputs=_spread(1.0),
           ref=_smooth_l1_ref(2.0)),
    OpCase('smooth_l1', dict(scalar=0.5), [(2, 3, 2)], inputs=_spread(6.0),
           ref=_smooth_l1_ref(0.5)),
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
]


test_forward, test_gradient = case_tests(CASES + SCE_SVM_SMOOTH_L1_CASES)


def test_every_loss_is_a_loss_head():
    for name in (SO, 'LinearRegressionOutput', 'LogisticRegressionOutput',
                 'MAERegressionOutput', 'MakeLoss', 'make_loss'):
        assert get_op(name)().is_loss, name
    assert get_op(SO)(out_grad=True).is_loss


def test_label_names():
    x = mx.sym.var('x')
    assert mx.sym.SoftmaxOutput(x, name='sm').list_arguments() == ['x', 'sm_label']
    assert mx.sym.LinearRegressionOutput(x, name='lr').list_arguments() == ['x', 'lr_label']
    assert mx.sym.MakeLoss(x, name='ml').list_arguments() == ['x']


@pytest.mark.parametrize('attrs, data, label', [
    ({}, (4, 3), (4,)),
    ({}, (4, 3, 5), (4, 3)),
    (dict(preserve_shape=True), (4, 3, 5), (4, 3)),
    (dict(multi_output=True), (4, 3, 5, 6), (4, 30)),
])
def test_softmax_output_label_inference(attrs, data, label):
    """Shapes observed on MXNet 1.9.1."""
    ins, outs, _ = get_op(SO)(**attrs).infer_shape([data, None])
    assert ins == [data, label] and outs == [data]


def test_softmax_output_label_mismatch():
    with pytest.raises(ShapeError, match="'label'"):
        get_op(SO)().infer_shape([(4, 3), (5,)])
    with pytest.raises(ShapeError, match="'label'"):
        get_op(SO)(multi_output=True).infer_shape([(4, 3, 5), (4, 15)])
    # a label of the data's shape is a probability target; the other multi_output forms
    op = get_op(SO)(multi_output=True)
    for lab in [(4, 3, 5), (4, 5), (4, 1, 5)]:
        assert op.infer_shape([(4, 3, 5), lab])[0][1] == lab


def test_regression_label_inference():
    op = get_op('LinearRegressionOutput')()
    assert op.infer_shape([(4, 1), None])[0] == [(4, 1), (4,)]
    assert op.infer_shape([(4, 3), None])[0] == [(4, 3), (4, 3)]
    assert op.infer_shape([(4, 3), (4, 3, 1)])[0] == [(4, 3), (4, 3, 1)]
    assert op.infer_shape([None, (4, 3)])[1] == [None]
    for bad in [(4,), (12,), (2, 6)]:
        with pytest.raises(ShapeError, match="'label'"):
            op.infer_shape([(4, 3), bad])


def test_symbol_fills_label():
    x = mx.sym.var('x')
    args, outs, _ = mx.sym.SoftmaxOutput(x, name='sm').infer_shape(x=(2, 5))
    assert args == [(2, 5), (2,)] and outs == [(2, 5)]
    args, _, _ = mx.sym.LogisticRegressionOutput(x, name='lr').infer_shape(x=(3, 1))
    assert args == [(3, 1), (3,)]


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
    assert positional_params(get_op(SVM)) == ['margin', 'regularization_coefficient',
                                               'use_linear']
    assert positional_params(get_op(GN)) == ['num_groups', 'eps', 'output_mean_var']
    assert positional_params(get_op('softmin')) == ['axis', 'temperature', 'dtype',
                                                     'use_length']
