"""Loss heads (ops/loss.py): forward values and MXNet 1.9.1's own gradients.

The expected gradients below restate MXNet's formulas element by element (checked against
MXNet 1.9.1 itself when this file was written); they do not call the operators.
"""
import numpy as np
import pytest

import symgraph as mx
from harness import case_tests, OpCase
from symgraph.opdef import ShapeError, get_op


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


test_forward, test_gradient = case_tests(CASES)


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
