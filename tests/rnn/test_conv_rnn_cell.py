"""mx.rnn.ConvRNNCell / ConvLSTMCell / ConvGRUCell (MXNet 1.9.1's test_rnn.py test_convrnn,
test_convlstm, test_convgru): parameter and output names, state shapes, and two unrolled steps
against a NumPy reference of the cells' equations."""
import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view

import symgraph as mx

SHAPE = (2, 3, 6, 5)
HIDDEN = 4


def _conv(x, w, b, pad):
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    win = sliding_window_view(x, w.shape[2:], axis=(2, 3))        # N, C, H, W, kh, kw
    return np.einsum('nchwij,fcij->nfhw', win, w) + b[None, :, None, None]


def _leaky(x):
    return np.where(x > 0, x, 0.2 * x)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _run(cell, steps=2, seed=0):
    inputs = [mx.sym.Variable('rnn_t%d_data' % i) for i in range(steps)]
    outputs, _ = cell.unroll(steps, inputs)
    group = mx.sym.Group(outputs)
    rng = np.random.RandomState(seed)
    shapes = {'rnn_t%d_data' % i: SHAPE for i in range(steps)}
    arg_shapes, _, _ = group.infer_shape(**shapes)
    args = {n: rng.uniform(-0.5, 0.5, s).astype(np.float32)
            for n, s in zip(group.list_arguments(), arg_shapes)}
    outs = group.bind(mx.cpu(), {k: mx.nd.array(v) for k, v in args.items()}).forward()
    return group, args, [o.asnumpy() for o in outs]


@pytest.mark.parametrize('cls', [mx.rnn.ConvRNNCell, mx.rnn.ConvLSTMCell, mx.rnn.ConvGRUCell])
def test_names_and_shapes_as_mxnet(cls):
    cell = cls(input_shape=(1, 3, 16, 10), num_hidden=10, prefix='rnn_')
    inputs = [mx.sym.Variable('rnn_t%d_data' % i) for i in range(3)]
    outputs = mx.sym.Group(cell.unroll(3, inputs)[0])
    assert sorted(cell.params._params) == ['rnn_h2h_bias', 'rnn_h2h_weight', 'rnn_i2h_bias',
                                           'rnn_i2h_weight']
    assert outputs.list_outputs() == ['rnn_t0_out_output', 'rnn_t1_out_output',
                                      'rnn_t2_out_output']
    shapes = {'rnn_t%d_data' % i: (1, 3, 16, 10) for i in range(3)}
    assert outputs.infer_shape(**shapes)[1] == [(1, 10, 16, 10)] * 3
    assert cell.state_info[0]['shape'] == (0, 10, 16, 10)


def test_conv_rnn_cell_matches_numpy():
    _, a, outs = _run(mx.rnn.ConvRNNCell(SHAPE, HIDDEN, prefix='rnn_'))
    h = np.zeros((SHAPE[0], HIDDEN) + SHAPE[2:], np.float32)
    for t in range(2):
        h = _leaky(_conv(a['rnn_t%d_data' % t], a['rnn_i2h_weight'], a['rnn_i2h_bias'], 1)
                   + _conv(h, a['rnn_h2h_weight'], a['rnn_h2h_bias'], 1))
        np.testing.assert_allclose(outs[t], h, rtol=1e-4, atol=1e-5)


def test_conv_lstm_cell_matches_numpy():
    _, a, outs = _run(mx.rnn.ConvLSTMCell(SHAPE, HIDDEN, prefix='rnn_'))
    h = c = np.zeros((SHAPE[0], HIDDEN) + SHAPE[2:], np.float32)
    for t in range(2):
        g = (_conv(a['rnn_t%d_data' % t], a['rnn_i2h_weight'], a['rnn_i2h_bias'], 1)
             + _conv(h, a['rnn_h2h_weight'], a['rnn_h2h_bias'], 1))
        i, f, cc, o = np.split(g, 4, axis=1)
        c = _sigmoid(f) * c + _sigmoid(i) * _leaky(cc)
        h = _sigmoid(o) * _leaky(c)
        np.testing.assert_allclose(outs[t], h, rtol=1e-4, atol=1e-5)


def test_conv_gru_cell_matches_numpy():
    _, a, outs = _run(mx.rnn.ConvGRUCell(SHAPE, HIDDEN, prefix='rnn_'))
    h = np.zeros((SHAPE[0], HIDDEN) + SHAPE[2:], np.float32)
    for t in range(2):
        ir, iz, ih = np.split(_conv(a['rnn_t%d_data' % t], a['rnn_i2h_weight'],
                                    a['rnn_i2h_bias'], 1), 3, axis=1)
        hr, hz, hh = np.split(_conv(h, a['rnn_h2h_weight'], a['rnn_h2h_bias'], 1), 3, axis=1)
        r, z = _sigmoid(ir + hr), _sigmoid(iz + hz)
        h = (1 - z) * _leaky(ih + r * hh) + z * h
        np.testing.assert_allclose(outs[t], h, rtol=1e-4, atol=1e-5)


def test_even_h2h_kernel_is_refused():
    with pytest.raises(ValueError, match='odd'):
        mx.rnn.ConvRNNCell(SHAPE, HIDDEN, h2h_kernel=(2, 3))
