"""gluon.contrib.cnn's deformable convolution layers against MXNet 1.9.1
(tests/golden/gluon_deformable_probes.py): parameter names and shapes, hybridized forward,
and the gradients of the input and of every parameter (MXNet's CPU kernels give none for
the modulated layer: there the input's gradient is checked by a directional difference)."""
import os

import numpy as np
import pytest

import symgraph as mx
import gluon_deformable_probes as probes

GOLDEN = np.load(probes.OUT)


def _run(case):
    layer = probes.build(mx, case)
    x = GOLDEN[case + '/x']
    layer(mx.nd.array(x))
    params = layer.collect_params()
    assert list(params.keys()) == GOLDEN[case + '/names'].tolist()
    for name, p in params.items():
        p.set_data(mx.nd.array(GOLDEN['%s/param/%s' % (case, name)]))
    xa = mx.nd.array(x)
    xa.attach_grad()
    with mx.autograd.record():
        y = layer(xa)
    return layer, params, xa, y


@pytest.mark.parametrize('case', sorted(probes.CASES))
def test_forward_and_gradients_match_mxnet(case):
    layer, params, xa, y = _run(case)
    np.testing.assert_allclose(y.asnumpy(), GOLDEN[case + '/y'], rtol=1e-4, atol=1e-5)
    if case + '/dx' not in GOLDEN:
        pytest.skip('MXNet 1.9.1 computes no gradient of %s on CPU' % case)
    y.backward(mx.nd.array(GOLDEN[case + '/dy']))
    np.testing.assert_allclose(xa.grad.asnumpy(), GOLDEN[case + '/dx'], rtol=1e-4, atol=1e-5)
    for name, p in params.items():
        np.testing.assert_allclose(p.grad().asnumpy(), GOLDEN['%s/grad/%s' % (case, name)],
                                   rtol=1e-4, atol=1e-4, err_msg=name)


def test_modulated_input_gradient_is_the_directional_difference():
    case = 'modulated_3x3'
    layer, _, xa, y = _run(case)
    dy = mx.nd.array(np.random.RandomState(0).uniform(-1, 1, y.shape))
    y.backward(dy)
    v = np.random.RandomState(1).uniform(-1, 1, xa.shape)
    x = xa.asnumpy().astype(np.float64)

    def loss(t):
        out = layer(mx.nd.array(x + t * v)).asnumpy().astype(np.float64)
        return (out * dy.asnumpy()).sum()
    eps = 1e-3
    numeric = (loss(eps) - loss(-eps)) / (2 * eps)
    analytic = (xa.grad.asnumpy().astype(np.float64) * v).sum()
    np.testing.assert_allclose(analytic, numeric, rtol=2e-2, atol=2e-3)


def test_channels_last_is_refused_when_made():
    with pytest.raises(ValueError, match="layout 'NHWC'"):
        mx.gluon.contrib.cnn.DeformableConvolution(4, kernel_size=3, layout='NHWC')
    with pytest.raises(ValueError, match='kernel_size'):
        mx.gluon.contrib.cnn.ModulatedDeformableConvolution(4, kernel_size=(3, 3, 3))


def test_repr_names_the_mapping():
    layer = mx.gluon.contrib.cnn.DeformableConvolution(4, kernel_size=3, padding=1,
                                                        activation='relu', use_bias=False)
    assert repr(layer) == ('DeformableConvolution(None -> 4, kernel_size=(3, 3), '
                           'stride=(1, 1), padding=(1, 1), bias=False, Activation(relu))')
