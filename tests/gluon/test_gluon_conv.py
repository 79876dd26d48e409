"""gluon.nn's convolution, pooling and padding layers: outputs, input and weight gradients,
names and reprs against MXNet 1.9.1 (tests/golden/gluon_nn_probes.py), imperative and
hybridized, and their exported symbol files; deferred weight shapes; float64 gradients
against finite differences; the arguments MXNet refuses."""
import numpy as np
import pytest

import symgraph as mx
from symgraph import autograd
from symgraph.gluon import nn
import gluon_nn_probes as probes

CASES = sorted(n for n in probes.LAYERS
               if n.startswith(('conv', 'maxpool', 'avgpool', 'global', 'reflectionpad')))


@pytest.mark.parametrize('case', CASES)
def test_layer_equals_mxnet(case):
    probes.check_layer(mx, case)


@pytest.mark.parametrize('case', CASES)
def test_hybridized_layer_equals_mxnet(case):
    probes.check_layer(mx, case, hybridize=True)


@pytest.mark.parametrize('case', CASES)
def test_layer_on_symbols_makes_mxnets_graph(case):
    assert probes.layer_symbol(mx, case) == probes.golden()[0]['layers'][case]['symbol']


@pytest.mark.parametrize('case', CASES)
def test_exported_symbol_file_equals_mxnets(case, tmp_path):
    want = probes.golden()[0]['layers'][case]['exported']
    assert probes.exported_nodes(mx, case, str(tmp_path)) == want


def test_golden_cases_cover_every_layer():
    made = {type(probes.LAYERS[c][0](mx)).__name__ for c in CASES}
    assert made == set(nn.conv_layers.__all__)


#: (layer, its weight's shape before any data, as MXNet 1.9.1 gives it: 0 is unknown)
@pytest.mark.parametrize('make, shape', [
    (lambda: nn.Conv2D(6, 3, groups=3), (6, 0, 3, 3)),
    (lambda: nn.Conv2D(6, 3, groups=3, in_channels=9), (6, 3, 3, 3)),
    (lambda: nn.Conv2DTranspose(4, 3), (0, 4, 3, 3)),
    (lambda: nn.Conv1DTranspose(4, 2, in_channels=3), (3, 4, 2)),
    (lambda: nn.Conv3DTranspose(4, 2, groups=2, in_channels=6), (6, 2, 2, 2, 2)),
    (lambda: nn.Conv3D(2, (1, 2, 3)), (2, 0, 1, 2, 3))], ids=str)
def test_weight_shape_before_data(make, shape):
    assert make().weight.shape == shape


def test_deferred_weight_shape_comes_from_the_data():
    layer = nn.Conv2D(6, 3, groups=3)
    layer.initialize()
    assert layer(mx.nd.ones((1, 9, 5, 5))).shape == (1, 6, 3, 3)
    assert layer.weight.shape == (6, 3, 3, 3)
    assert repr(layer) == 'Conv2D(3 -> 6, kernel_size=(3, 3), stride=(1, 1), groups=3)'


def _numeric_grad(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        old = x[i]
        x[i] = old + eps
        hi = f(x)
        x[i] = old - eps
        lo = f(x)
        x[i] = old
        g[i] = (hi - lo) / (2 * eps)
    return g


@pytest.mark.parametrize('make, shape', [
    (lambda: nn.Conv1D(2, 3, strides=2, padding=1, dilation=2), (2, 3, 7)),
    (lambda: nn.Conv2D(4, 2, groups=2, activation='sigmoid'), (1, 2, 4, 3)),
    (lambda: nn.Conv2DTranspose(2, 3, strides=2, output_padding=1), (1, 3, 2, 3)),
    (lambda: nn.AvgPool2D(3, 2, padding=1, ceil_mode=True, count_include_pad=False),
     (1, 2, 5, 6)),
    (lambda: nn.GlobalAvgPool3D(), (1, 2, 2, 3, 2)),
    (lambda: nn.ReflectionPad2D(1), (1, 1, 3, 4))],
    ids=['conv1d', 'conv2d_groups', 'conv2d_transpose', 'avgpool_ceil', 'globalavg3d',
         'reflectionpad'])
def test_float64_gradients_are_numeric(make, shape):
    rng = np.random.RandomState(0)
    layer = make()
    layer.initialize(mx.init.Uniform(0.5))
    layer.cast('float64')
    x0 = rng.standard_normal(shape)
    head = rng.standard_normal(layer(mx.nd.array(x0, dtype='float64')).shape)
    params = list(layer.collect_params().values())
    x = mx.nd.array(x0, dtype='float64')
    x.attach_grad()
    with autograd.record():
        y = layer(x)
    y.backward(mx.nd.array(head, dtype='float64'))

    def f(xv):
        return float((layer(mx.nd.array(xv, dtype='float64')).asnumpy() * head).sum())

    np.testing.assert_allclose(x.grad.asnumpy(), _numeric_grad(f, x0.copy()), rtol=1e-6,
                               atol=1e-8)
    for p in params:
        w0 = p.data().asnumpy().copy()

        def fw(wv, p=p):
            p.set_data(mx.nd.array(wv, dtype='float64'))
            return f(x0)

        want = _numeric_grad(fw, w0.copy())
        p.set_data(mx.nd.array(w0, dtype='float64'))
        np.testing.assert_allclose(p.grad().asnumpy(), want, rtol=1e-6, atol=1e-8,
                                   err_msg=p.name)


def test_max_pooling_reflection_padding_against_numpy():
    x0 = np.arange(2 * 3 * 4, dtype=np.float32).reshape(1, 2, 3, 4) % 7
    got = nn.ReflectionPad2D(2)(mx.nd.array(x0)).asnumpy()
    np.testing.assert_array_equal(got, np.pad(x0, ((0, 0), (0, 0), (2, 2), (2, 2)),
                                              mode='reflect'))
    got = nn.GlobalMaxPool2D()(mx.nd.array(x0)).asnumpy()
    np.testing.assert_array_equal(got, x0.max(axis=(2, 3), keepdims=True))


@pytest.mark.parametrize('make, match', [
    (lambda: nn.Conv1DTranspose(2, 3, layout='NWC'), 'NCW'),
    (lambda: nn.Conv2D(2, (3, 3, 3)), 'kernel_size'),
    (lambda: nn.Conv2DTranspose(2, 3, output_padding=(1, 1, 1)), 'output_padding'),
    (lambda: nn.Conv3D(2, 3, layout='NCHW'), 'NCDHW'),
    (lambda: nn.MaxPool2D(layout='NCW'), 'NCHW'),
    (lambda: nn.AvgPool1D((2, 2)), 'pool_size'),
    (lambda: nn.GlobalAvgPool3D(layout='NCHW'), 'NCDHW'),
    (lambda: nn.ReflectionPad2D((1, 2)), 'padding')], ids=str)
def test_bad_arguments_are_value_errors(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_channels_last_transposed_convolution_is_refused_when_made():
    # Deconvolution computes channels-first layouts only (MXNet 1.9.1's CPU build refuses
    # its channels-last layouts at the first forward) and says so when the layer is made;
    # channels-last convolutions: tests/gluon/test_gluon_channels_last.py
    with pytest.raises(ValueError, match='layout'):
        nn.Conv2DTranspose(2, 3, layout='NHWC', in_channels=3)


@pytest.mark.parametrize('make, nchw', [
    (lambda: nn.MaxPool2D(layout='NHWC'), lambda: nn.MaxPool2D()),
    (lambda: nn.AvgPool1D(3, 2, padding=1, layout='NWC'), lambda: nn.AvgPool1D(3, 2, 1)),
    (lambda: nn.GlobalAvgPool3D(layout='NDHWC'), lambda: nn.GlobalAvgPool3D())], ids=str)
def test_channels_last_pooling_is_channels_first_pooling_transposed(make, nchw):
    rng = np.random.RandomState(3)
    layer, ref = make(), nchw()
    nd = len(layer._kwargs['layout']) - 2        # spatial dimensions
    x = rng.standard_normal((2,) + (5,) * nd + (3,)).astype(np.float32)
    to_first = (0, nd + 1) + tuple(range(1, nd + 1))
    to_last = (0,) + tuple(range(2, nd + 2)) + (1,)
    want = ref(mx.nd.array(x.transpose(to_first))).asnumpy().transpose(to_last)
    np.testing.assert_allclose(layer(mx.nd.array(x)).asnumpy(), want, rtol=1e-6)
