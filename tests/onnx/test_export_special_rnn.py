"""ONNX export of the fused RNN operator (symgraph/onnx/_convert_rnn.py): every mode,
layers, directions, sequence lengths and state outputs against symgraph's forward in
ONNX Runtime; a word language model (Embedding + LSTM + FullyConnected, MXNet's
example/rnn/word_lm) and a CTC model's forward (without the loss) as deploy graphs."""
import numpy as np
import pytest

import symgraph as mx
from onnx_special_check import check, export

pytest.importorskip('onnx')
pytest.importorskip('onnxruntime')

_GATES = {'lstm': 4, 'gru': 3, 'rnn_tanh': 1, 'rnn_relu': 1}


def _param_size(mode, layers, dirs, c, h):
    g = _GATES[mode]
    size = 0
    for layer in range(layers):
        size_in = c if layer == 0 else dirs * h
        size += dirs * g * h * (size_in + h + 2)
    return size


def _rnn_graph(mode, layers, bidir, state_outputs, use_len, h):
    args = [mx.sym.var('data'), mx.sym.var('params'), mx.sym.var('state')]
    if mode == 'lstm':
        args.append(mx.sym.var('cell'))
    if use_len:
        args.append(mx.sym.var('len'))
    return mx.sym.RNN(*args, mode=mode, state_size=h, num_layers=layers,
                      bidirectional=bidir, state_outputs=state_outputs,
                      use_sequence_length=use_len, p=0.3)


@pytest.mark.parametrize('mode', ['lstm', 'gru', 'rnn_tanh', 'rnn_relu'])
@pytest.mark.parametrize('layers,bidir', [(1, False), (2, True)])
@pytest.mark.parametrize('given', [True, False])
def test_rnn_modes(mode, layers, bidir, given):
    rng = np.random.RandomState(0)
    t, n, c, h = 5, 3, 4, 6
    d = 2 if bidir else 1
    sym = _rnn_graph(mode, layers, bidir, True, False, h)
    params = {'params': (0.4 * rng.standard_normal(_param_size(mode, layers, d, c, h)))
              .astype(np.float32)}
    inputs = {'data': rng.standard_normal((t, n, c)).astype(np.float32),
              'state': rng.standard_normal((layers * d, n, h)).astype(np.float32)}
    if mode == 'lstm':
        inputs['cell'] = rng.standard_normal((layers * d, n, h)).astype(np.float32)
    if not given:           # the packed vector as a graph input: split by ONNX nodes
        inputs.update(params)
        params = {}
    check(sym, inputs, params)


@pytest.mark.parametrize('mode', ['lstm', 'gru'])
def test_rnn_sequence_length(mode):
    rng = np.random.RandomState(1)
    t, n, c, h = 6, 4, 3, 5
    sym = _rnn_graph(mode, 2, True, True, True, h)
    params = {'params': (0.4 * rng.standard_normal(_param_size(mode, 2, 2, c, h)))
              .astype(np.float32)}
    inputs = {'data': rng.standard_normal((t, n, c)).astype(np.float32),
              'state': rng.standard_normal((4, n, h)).astype(np.float32),
              'len': np.array([6, 2, 4, 1], np.float32)}
    if mode == 'lstm':
        inputs['cell'] = rng.standard_normal((4, n, h)).astype(np.float32)
    check(sym, inputs, params)


def test_rnn_projection_is_a_clear_error():
    from symgraph.onnx import ExportError
    args = [mx.sym.var(k) for k in ('data', 'params', 'state', 'cell')]
    sym = mx.sym.RNN(*args, mode='lstm', state_size=6, num_layers=1, projection_size=3)
    shapes = dict(data=(4, 2, 3), state=(1, 2, 3), cell=(1, 2, 6))
    arg_shapes, _, _ = sym.infer_shape(**shapes)
    inputs = {k: np.zeros(s, np.float32) for k, s in zip(sym.list_arguments(), arg_shapes)}
    with pytest.raises(ExportError, match='projection'):
        export(sym, inputs)


def _word_lm(vocab=20, embed=8, hidden=8, layers=2):
    """MXNet's example/rnn/word_lm model (its deploy graph): Embedding, a fused LSTM,
    FullyConnected decoder over every step."""
    data = mx.sym.var('data')
    emb = mx.sym.Embedding(data, input_dim=vocab, output_dim=embed, name='embed')
    emb = mx.sym.transpose(emb, axes=(1, 0, 2))             # NT -> TNC
    params = mx.sym.var('lstm_parameters')
    state = mx.sym.var('lstm_state')
    cell = mx.sym.var('lstm_state_cell')
    out = mx.sym.RNN(emb, params, state, cell, mode='lstm', state_size=hidden,
                     num_layers=layers, state_outputs=True, p=0.2, name='lstm')
    pred = mx.sym.reshape(out[0], shape=(-1, hidden))
    pred = mx.sym.FullyConnected(pred, num_hidden=vocab, name='decoder')
    return mx.sym.Group([mx.sym.softmax(pred), out[1], out[2]])


def test_word_language_model():
    rng = np.random.RandomState(2)
    vocab, n, t, hidden, layers = 20, 3, 7, 8, 2
    sym = _word_lm(vocab, 8, hidden, layers)
    shapes = dict(data=(n, t), lstm_state=(layers, n, hidden),
                  lstm_state_cell=(layers, n, hidden))
    arg_shapes, _, _ = sym.infer_shape(**shapes)
    params = {k: (0.3 * rng.standard_normal(s)).astype(np.float32)
              for k, s in zip(sym.list_arguments(), arg_shapes) if k not in shapes}
    inputs = {'data': rng.randint(0, vocab, (n, t)).astype(np.float32),
              'lstm_state': rng.standard_normal(shapes['lstm_state']).astype(np.float32),
              'lstm_state_cell': rng.standard_normal(shapes['lstm_state']).astype(np.float32)}
    check(sym, inputs, params)


def test_ctc_model_forward():
    """A CTC model (MXNet's example/ctc LSTM-OCR style) exported without its loss: the
    per-step class scores CTCLoss would read."""
    rng = np.random.RandomState(3)
    n, t, feat, hidden, classes = 2, 9, 5, 6, 7
    data = mx.sym.var('data')                                   # (N, T, feat)
    x = mx.sym.transpose(data, axes=(1, 0, 2))
    out = mx.sym.RNN(x, mx.sym.var('rnn_params'), mx.sym.var('rnn_state'),
                     mx.sym.var('rnn_cell'), mode='lstm', state_size=hidden, num_layers=1,
                     bidirectional=True, name='rnn')
    pred = mx.sym.FullyConnected(mx.sym.reshape(out, shape=(-1, 2 * hidden)),
                                 num_hidden=classes, name='pred')
    scores = mx.sym.softmax(mx.sym.reshape(pred, shape=(t, n, classes)), axis=-1)
    arg_shapes, _, _ = scores.infer_shape(data=(n, t, feat), rnn_state=(2, n, hidden),
                                          rnn_cell=(2, n, hidden))
    params = {k: (0.3 * rng.standard_normal(s)).astype(np.float32)
              for k, s in zip(scores.list_arguments(), arg_shapes)
              if k not in ('data', 'rnn_state', 'rnn_cell')}
    inputs = {'data': rng.standard_normal((n, t, feat)).astype(np.float32),
              'rnn_state': np.zeros((2, n, hidden), np.float32),
              'rnn_cell': np.zeros((2, n, hidden), np.float32)}
    check(scores, inputs, params)


@pytest.mark.parametrize('cls', ['LSTM', 'GRU'])
def test_gluon_rnn_layer_export(cls, tmp_path):
    """A hybridized Gluon recurrent layer's export: its weights reach RNN through
    _rnn_param_concat, so the packed vector is split by ONNX nodes."""
    rng = np.random.RandomState(4)
    layer = getattr(mx.gluon.rnn, cls)(6, num_layers=2, bidirectional=True, input_size=4)
    layer.initialize(mx.init.Uniform(0.5))
    layer.hybridize()
    x = rng.standard_normal((5, 3, 4)).astype(np.float32)
    layer(mx.nd.array(x))
    layer.export(str(tmp_path / 'rnn'))
    sym = mx.sym.load(str(tmp_path / 'rnn-symbol.json'))
    params = {k.split(':', 1)[1]: v.asnumpy()
              for k, v in mx.nd.load(str(tmp_path / 'rnn-0000.params')).items()}
    inputs = {'data0': x}
    for k in ('data1', 'data2')[:2 if cls == 'LSTM' else 1]:     # the begin states
        inputs[k] = rng.standard_normal((4, 3, 6)).astype(np.float32)
    assert set(inputs) | set(params) == set(sym.list_arguments())
    check(sym, inputs, params)


@pytest.mark.parametrize('name', ['lstm', 'bilstm', 'gru', 'rnn_states'])
def test_mxnet_exported_gluon_rnn_files(name):
    """Gluon recurrent layers as MXNet 1.9.1 exported them (tests/golden/data/rnn_export):
    ONNX Runtime's outputs against MXNet's own."""
    import os
    base = os.path.join(os.path.dirname(__file__), '..', 'golden', 'data', 'rnn_export')
    sym = mx.sym.load(os.path.join(base, name + '-symbol.json'))
    params = {k.split(':', 1)[1]: v.asnumpy()
              for k, v in mx.nd.load(os.path.join(base, name + '-0000.params')).items()}
    expected = np.load(os.path.join(base, 'expected.npz'))
    inputs = {'data0': expected[name + '|data']}
    if name + '|state' in expected:
        inputs['data1'] = expected[name + '|state']
    else:       # begin states not given: zeros, as the Gluon layer makes them
        arg_shapes, _, _ = sym.infer_shape(data0=inputs['data0'].shape)
        for k, s in zip(sym.list_arguments(), arg_shapes):
            if k not in params and k != 'data0':
                inputs[k] = np.zeros(s, np.float32)
    _, got = check(sym, inputs, params)
    for j, o in enumerate(got):
        np.testing.assert_allclose(o, expected['%s|out|%d' % (name, j)], rtol=1e-4,
                                   atol=1e-5)


def _rnn_golden():
    import json
    import os
    base = os.path.join(os.path.dirname(__file__), '..', 'golden', 'data')
    with open(os.path.join(base, 'rnn_op.json')) as f:
        cases = json.load(f)['cases']
    return cases, dict(np.load(os.path.join(base, 'rnn_op.npz')))


RNN_CASES, RNN_ARRAYS = _rnn_golden()


@pytest.mark.parametrize('name', sorted(RNN_CASES))
def test_mxnet_rnn_golden_cases(name):
    """MXNet 1.9.1's RNN outputs (tests/golden/make_rnn.py: every mode, 1-2 layers, both
    directions, state outputs, sequence lengths) against ONNX Runtime's run of the
    export; LSTM projection cases are export errors."""
    case = RNN_CASES[name]
    attrs = case['attrs']
    order = ['data', 'parameters', 'state', 'state_cell', 'sequence_length']
    inputs = {k: RNN_ARRAYS['%s|in|%s' % (name, k)] for k in order
              if '%s|in|%s' % (name, k) in RNN_ARRAYS}
    sym = mx.sym.RNN(*[mx.sym.var(k) for k in order if k in inputs], name='rnn', **attrs)
    params = {'parameters': inputs.pop('parameters')}
    if 'projection_size' in attrs:
        from symgraph.onnx import ExportError
        with pytest.raises(ExportError, match='projection'):
            export(sym, inputs, params)
        return
    _, got = check(sym, inputs, params)
    for j, o in enumerate(got):
        np.testing.assert_allclose(o, RNN_ARRAYS['%s|out|%d' % (name, j)], rtol=1e-4,
                                   atol=1e-5, err_msg='output %d' % j)
