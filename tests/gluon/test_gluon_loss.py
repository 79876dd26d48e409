"""gluon.loss: every loss of MXNet 1.9.1 (with weight, batch_axis, sample_weight and the
options) against MXNet's outputs and input gradients (tests/golden/gluon_nn_probes.py),
imperative and hybridized; float64 gradients through autograd against finite differences;
NumPy references of the definitions; errors."""
import numpy as np
import pytest

import symgraph as mx
from symgraph import autograd
from symgraph.gluon import loss as gloss
import gluon_nn_probes as probes

CASES = sorted(probes.LOSSES)


@pytest.mark.parametrize('case', CASES)
def test_loss_equals_mxnet(case):
    probes.check_loss(mx, case)


@pytest.mark.parametrize('case', [c for c in CASES if probes.hybridizable_loss(c)])
def test_hybridized_loss_equals_mxnet(case):
    probes.check_loss(mx, case, hybridize=True)


def test_golden_cases_cover_every_loss():
    made = {type(probes.LOSSES[c][0](mx)).__name__ for c in CASES}
    assert made == set(gloss.__all__) - {'Loss', 'SigmoidBCELoss', 'SoftmaxCELoss'}


def _numeric_grad(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        old = x[i]
        x[i] = old + eps
        hi = f()
        x[i] = old - eps
        lo = f()
        x[i] = old
        g[i] = (hi - lo) / (2 * eps)
    return g


@pytest.mark.parametrize('case', CASES)
def test_float64_gradients_are_numeric(case):
    """Every differentiable input's autograd gradient, in float64, against central
    differences of the loss weighted by the golden head gradient."""
    _, _, losses = probes.golden()
    want = losses[case]
    loss = probes.LOSSES[case][0](mx)
    arrays = {i: want['in|%d' % i].astype(np.float64)
              for i, spec in enumerate(probes.LOSSES[case][1]) if spec is not None}
    head = want['head'].astype(np.float64)

    def value():
        args, _ = probes.loss_inputs(mx, case, arrays)
        return float((loss(*args).asnumpy() * head).sum())

    args, diff = probes.loss_inputs(mx, case, arrays)
    with autograd.record():
        out = loss(*args)
    assert out.dtype == np.float64
    out.backward(mx.nd.array(head, dtype='float64'))
    assert diff
    for i, nd in diff:
        np.testing.assert_allclose(nd.grad.asnumpy(), _numeric_grad(value, arrays[i]),
                                   rtol=1e-5, atol=1e-7,
                                   err_msg='%s: gradient of input %d' % (case, i))


# ----------------------------------------------------------------------------- definitions
def test_l2_l1_huber_against_numpy_with_batch_axis_and_sample_weight():
    rng = np.random.RandomState(0)
    pred, label = rng.standard_normal((4, 3, 2)), rng.standard_normal((4, 3, 2))
    sw = rng.uniform(0.5, 1.5, (1, 3, 1))
    P, L, S = (mx.nd.array(a, dtype='float64') for a in (pred, label, sw))
    d = label - pred
    got = gloss.L2Loss(weight=3.0, batch_axis=1)(P, L, S).asnumpy()
    np.testing.assert_allclose(got, (1.5 * d * d * sw).mean(axis=(0, 2)), rtol=1e-12)
    got = gloss.L1Loss(batch_axis=2)(P, L).asnumpy()
    np.testing.assert_allclose(got, np.abs(d).mean(axis=(0, 1)), rtol=1e-12)
    a = np.abs(d)
    huber = np.where(a > 0.5, a - 0.25, a * a)
    got = gloss.HuberLoss(rho=0.5)(P, L).asnumpy()
    np.testing.assert_allclose(got, huber.mean(axis=(1, 2)), rtol=1e-12)


def test_softmax_ce_against_numpy():
    rng = np.random.RandomState(1)
    pred = rng.standard_normal((3, 4, 5))
    label = rng.randint(0, 4, (3, 5))
    logp = pred - np.log(np.exp(pred).sum(axis=1, keepdims=True))
    want = -np.take_along_axis(logp, label[:, None, :], axis=1)[:, 0, :].mean(axis=1)
    got = gloss.SoftmaxCELoss(axis=1)(mx.nd.array(pred, dtype='float64'),
                                      mx.nd.array(label, dtype='float64')).asnumpy()
    np.testing.assert_allclose(got, want, rtol=1e-12)
    dense = np.eye(4)[label].transpose(0, 2, 1)
    got = gloss.SoftmaxCELoss(axis=1, sparse_label=False)(
        mx.nd.array(pred, dtype='float64'), mx.nd.array(dense, dtype='float64')).asnumpy()
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_sigmoid_bce_is_stable_for_large_logits():
    pred = mx.nd.array([[1000.0, -1000.0, 30.0]])
    label = mx.nd.array([[1.0, 0.0, 0.0]])
    got = gloss.SigmoidBCELoss()(pred, label).asnumpy()
    np.testing.assert_allclose(got, [30.0 / 3], rtol=1e-6)


def test_ctc_loss_against_a_single_path():
    # one time step, one label: the only path is that label, loss = -log softmax(label)
    pred = np.array([[[0.5, 1.5, -0.3]]])          # NTC, alphabet 2 + blank (last)
    got = gloss.CTCLoss()(mx.nd.array(pred), mx.nd.array([[1]])).asnumpy()
    want = -(pred[0, 0, 1] - np.log(np.exp(pred[0, 0]).sum()))
    np.testing.assert_allclose(got, [want], rtol=1e-5)


def test_poisson_nll_full_is_differentiable_under_record():
    # MXNet 1.9.1 writes ``loss += stirling_factor`` in place and fails under record()
    pred = mx.nd.array([[1.0, 2.0], [3.0, 0.5]], dtype='float64')
    target = mx.nd.array([[4.0, 2.0], [3.0, 1.0]], dtype='float64')
    pred.attach_grad()
    with autograd.record():
        out = gloss.PoissonNLLLoss(from_logits=False, compute_full=True)(pred, target)
    out.backward()
    t, p = target.asnumpy(), pred.asnumpy()
    stirling = np.where(t > 1, t * np.log(t) - t + 0.5 * np.log(2 * np.pi * t), 0)
    np.testing.assert_allclose(out.asnumpy(), [(p - t * np.log(p + 1e-8) + stirling).mean()],
                               rtol=1e-12)
    np.testing.assert_allclose(pred.grad.asnumpy(), (1 - t / (p + 1e-8)) / 4, rtol=1e-12)


def test_reprs():
    assert repr(gloss.L2Loss()) == 'L2Loss(batch_axis=0, w=1.0)'
    assert repr(gloss.CTCLoss(layout='TNC', label_layout='TN')) == \
        'CTCLoss(batch_axis=1, w=None)'
    assert gloss.SigmoidBCELoss is gloss.SigmoidBinaryCrossEntropyLoss
    assert gloss.SoftmaxCELoss is gloss.SoftmaxCrossEntropyLoss


def test_bad_arguments():
    with pytest.raises(ValueError, match="'NTC' and 'TNC'"):
        gloss.CTCLoss(layout='NCT')
    with pytest.raises(ValueError, match="'NT' and 'TN'"):
        gloss.CTCLoss(label_layout='TT')
    with pytest.raises(ValueError, match='signed or binary'):
        gloss.LogisticLoss(label_format='pm1')
    with pytest.raises(TypeError, match='weight must be a number'):
        gloss.L1Loss(weight='2')(mx.nd.ones((2, 2)), mx.nd.ones((2, 2)))
    with pytest.raises(ValueError, match='one shape'):
        gloss.SDMLLoss()(mx.nd.ones((2, 3)), mx.nd.ones((3, 3)))
    with pytest.raises(NotImplementedError):
        gloss.Loss(None, 0)(mx.nd.ones((1,)))
