"""Channels-last Gluon convolution and pooling layers (``layout`` NWC, NHWC, NDHWC).

The layers' weights have MXNet 1.9.1's shapes; their outputs and gradients, imperative and
hybridized, are those of the channels-first layer with the same weights with the channel
axis moved (the operators' values against MXNet: tests/ops/test_conv_channels_last.py);
``export`` writes MXNet's graph (golden: tests/golden/make_channels_last.py).
"""
import json
import os

import numpy as np
import pytest

import symgraph as mx
from symgraph.gluon import nn

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                    'golden', 'data', 'channels_last.json')
with open(DATA) as _f:
    META = json.load(_f)

FIRST = {'NWC': 'NCW', 'NHWC': 'NCHW', 'NDHWC': 'NCDHW'}


def _to_last(a):
    return np.moveaxis(a, 1, -1)


def _to_first(a):
    return np.moveaxis(a, -1, 1)


def _pair(make, layout):
    """The layer channels last and channels first, with the same parameter values."""
    last, first = make(layout), make(FIRST[layout])
    last.initialize(mx.init.Uniform(1.0))
    first.initialize()
    return last, first


def _copy_params(last, first, shape_first):
    """Gives ``first`` ``last``'s parameter values (weights with the channel axis moved),
    after a forward has settled deferred shapes."""
    first(mx.nd.zeros(shape_first))
    for (_, p), (_, q) in zip(sorted(last.collect_params().items()),
                              sorted(first.collect_params().items())):
        v = p.data().asnumpy()
        q.set_data(mx.nd.array(_to_first(v) if v.ndim > 2 else v))


def _forward_backward(layer, x, dy):
    x = mx.nd.array(x)
    x.attach_grad()
    with mx.autograd.record():
        y = layer(x)
    y.backward(mx.nd.array(dy))
    grads = {n.split('_', 1)[1]: p.grad().asnumpy()
             for n, p in layer.collect_params().items()}
    return y.asnumpy(), x.grad.asnumpy(), grads


CONV = [
    ('NWC', lambda lay: nn.Conv1D(6, 3, strides=2, padding=1, groups=2, layout=lay), (2, 9, 4)),
    ('NHWC', lambda lay: nn.Conv2D(5, (3, 2), dilation=(2, 1), padding=1, activation='relu',
                                   layout=lay), (2, 8, 7, 3)),
    ('NHWC', lambda lay: nn.Conv2D(4, 1, use_bias=False, layout=lay, in_channels=6),
     (1, 4, 5, 6)),
    ('NDHWC', lambda lay: nn.Conv3D(4, (2, 3, 3), strides=(1, 2, 1), layout=lay),
     (1, 4, 6, 5, 3)),
]


@pytest.mark.parametrize('hybridize', [False, True], ids=['imperative', 'hybridized'])
@pytest.mark.parametrize('layout, make, shape', CONV, ids=[c[0] + str(i) for i, c in
                                                           enumerate(CONV)])
def test_channels_last_convolution_is_channels_first_moved(layout, make, shape, hybridize):
    rng = np.random.RandomState(0)
    last, first = _pair(make, layout)
    x = rng.uniform(-1, 1, shape).astype(np.float32)
    last(mx.nd.array(x))                             # settles deferred shapes
    _copy_params(last, first, _to_first(x).shape)
    if hybridize:
        last.hybridize()
        first.hybridize()
    y = last(mx.nd.array(x)).asnumpy()
    dy = rng.uniform(-1, 1, y.shape).astype(np.float32)
    y, dx, grads = _forward_backward(last, x, dy)
    yf, dxf, gradsf = _forward_backward(first, _to_first(x), _to_first(dy))
    np.testing.assert_allclose(y, _to_last(yf), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dx, _to_last(dxf), rtol=1e-5, atol=1e-5)
    for name, g in grads.items():
        want = gradsf[name]
        np.testing.assert_allclose(g, _to_last(want) if want.ndim > 2 else want,
                                   rtol=1e-4, atol=1e-4)


def test_weight_shapes_are_mxnets():
    # MXNet 1.9.1: (channels, *kernel, in_channels / groups); deferred until the data
    # gives the channels
    assert nn.Conv2D(16, (3, 3), layout='NHWC', in_channels=4).weight.shape == (16, 3, 3, 4)
    assert nn.Conv3D(16, (3, 3, 3), layout='NDHWC', in_channels=4).weight.shape == \
        (16, 3, 3, 3, 4)
    layer = nn.Conv1D(6, 3, groups=2, layout='NWC')
    assert layer.weight.shape == (6, 3, 0)
    layer.initialize()
    assert layer(mx.nd.ones((1, 8, 4))).shape == (1, 6, 6)
    assert layer.weight.shape == (6, 3, 2)


def test_mxnets_channels_last_layers_are_made():
    # MXNet's test_gluon.py::test_conv makes these (it runs them on GPUs only)
    layer = nn.Conv2D(16, (3, 3), layout='NHWC', in_channels=4)
    layer.initialize()
    assert layer(mx.nd.ones((1, 10, 10, 4))).shape == (1, 8, 8, 16)
    layer = nn.Conv3D(16, (3, 3, 3), layout='NDHWC', in_channels=4)
    layer.initialize()
    assert layer(mx.nd.ones((1, 10, 10, 10, 4))).shape == (1, 8, 8, 8, 16)


def _net(layout='NHWC'):
    """tests/golden/make_channels_last.py's network (or its channels-first twin)."""
    net = nn.HybridSequential(prefix='cl_')
    with net.name_scope():
        net.add(nn.Conv2D(8, 3, padding=1, layout=layout, in_channels=3, activation='relu'))
        net.add(nn.MaxPool2D(2, layout=layout))
        net.add(nn.Conv2D(4, (1, 3), strides=(1, 2), layout=layout, in_channels=8,
                          use_bias=False))
        net.add(nn.AvgPool2D(2, layout=layout, count_include_pad=False))
        net.add(nn.GlobalMaxPool2D(layout=layout))
        net.add(nn.Flatten())
        net.add(nn.Dense(3, in_units=4))
    return net


def test_export_writes_mxnets_graph(tmp_path):
    net = _net()
    net.initialize()
    net.hybridize()
    x = np.random.RandomState(1).uniform(-1, 1, (2, 8, 10, 3)).astype(np.float32)
    y = net(mx.nd.array(x))
    net.export(str(tmp_path / 'cl'))
    with open(str(tmp_path / 'cl-symbol.json')) as f:
        assert json.load(f) == json.loads(META['gluon_symbol_json'])
    assert {k: list(v.shape) for k, v in net.collect_params().items()} == \
        META['gluon_params']
    # the exported files run again as a SymbolBlock, with the network's values
    back = mx.gluon.SymbolBlock.imports(str(tmp_path / 'cl-symbol.json'), ['data'],
                                        str(tmp_path / 'cl-0000.params'))
    np.testing.assert_allclose(back(mx.nd.array(x)).asnumpy(), y.asnumpy(), rtol=1e-5,
                               atol=1e-6)


def test_channels_last_network_is_channels_first_network_moved():
    rng = np.random.RandomState(2)
    last, first = _net('NHWC'), _net('NCHW')
    last.initialize(mx.init.Uniform(1.0))
    first.initialize()
    x = rng.uniform(-1, 1, (2, 8, 10, 3)).astype(np.float32)
    _copy_params(last, first, _to_first(x).shape)
    for net in (last, first):
        net.hybridize()
    dy = rng.uniform(-1, 1, (2, 3)).astype(np.float32)
    y, dx, grads = _forward_backward(last, x, dy)
    yf, dxf, gradsf = _forward_backward(first, _to_first(x), dy)
    np.testing.assert_allclose(y, yf, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dx, _to_last(dxf), rtol=1e-5, atol=1e-5)
    for name, g in grads.items():
        want = gradsf[name]
        np.testing.assert_allclose(g, _to_last(want) if want.ndim > 2 else want,
                                   rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize('make', [
    lambda: nn.Conv1DTranspose(2, 3, layout='NWC'),
    lambda: nn.Conv2DTranspose(2, 3, layout='NHWC', in_channels=3),
    lambda: nn.Conv3DTranspose(2, 3, layout='NDHWC', in_channels=3),
])
def test_channels_last_transposed_layers_are_refused_when_made(make):
    # MXNet 1.9.1's CPU build fails them at the first forward (docs/differences.md)
    with pytest.raises(ValueError, match='layout'):
        make()
