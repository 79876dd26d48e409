"""``dynamic=True`` with ``dynamic_input_shapes`` declaring axes other than the batch
(a sequence length) as free: models whose converters keep those sizes symbolic run in
ONNX Runtime at several sizes and match symgraph's forward at each; a graph whose ONNX
form would fold a size that follows from a declared dynamic axis is refused with an
ExportError naming the symgraph node (symgraph/onnx/_dynamic_axes.py)."""
import numpy as np
import pytest

import symgraph as mx
from onnx_special_check import forward, run_onnx

onnx = pytest.importorskip('onnx')
pytest.importorskip('onnxruntime')

from symgraph.onnx.export import export_onnx_model  # noqa: E402


def _export(sym, params, shapes, dims):
    model = export_onnx_model(sym, params, shapes, dynamic=True, dynamic_input_shapes=dims)
    onnx.checker.check_model(model, full_check=True)
    return model


def _compare(ref, got):
    assert len(ref) == len(got)
    for r, o in zip(ref, got):
        assert r.shape == o.shape, (r.shape, o.shape)
        np.testing.assert_allclose(o, r, rtol=1e-4, atol=1e-5 * max(1.0, np.abs(r).max()))


def _word_lm(vocab, embed, hidden, layers, mode='lstm'):
    """MXNet's example/rnn/word_lm deploy graph: Embedding, a fused RNN over TNC,
    the steps flattened into rows for the FullyConnected decoder."""
    data = mx.sym.var('data')
    emb = mx.sym.Embedding(data, input_dim=vocab, output_dim=embed, name='embed')
    emb = mx.sym.transpose(emb, axes=(1, 0, 2))
    args = [emb, mx.sym.var('rnn_parameters'), mx.sym.var('rnn_state')]
    if mode == 'lstm':
        args.append(mx.sym.var('rnn_state_cell'))
    out = mx.sym.RNN(*args, mode=mode, state_size=hidden, num_layers=layers,
                     state_outputs=True, name='rnn')
    pred = mx.sym.reshape(out[0], shape=(-1, hidden))
    pred = mx.sym.FullyConnected(pred, num_hidden=vocab, name='decoder')
    return mx.sym.Group([mx.sym.softmax(pred)] + [out[k] for k in range(1, len(args) - 1)])


def test_language_model_with_free_batch_and_sequence():
    """The batch free too: at axis 0 of data and axis 1 of the begin states."""
    rng = np.random.RandomState(5)
    vocab, n, t, hidden, layers = 13, 2, 4, 5, 1
    sym = _word_lm(vocab, 3, hidden, layers, 'lstm')
    state = (layers, n, hidden)
    arg_shapes, _, _ = sym.infer_shape(data=(n, t), rnn_state=state)
    names = ['data', 'rnn_state', 'rnn_state_cell']
    params = {k: (0.4 * rng.standard_normal(s)).astype(np.float32)
              for k, s in zip(sym.list_arguments(), arg_shapes) if k not in names}
    model = _export(sym, params, [(n, t), state, state],
                    [('N', 'T'), (layers, 'N', hidden), (layers, 'N', hidden)])
    for batch, length in ((n, t), (5, 3), (1, 8)):
        inputs = {k: rng.standard_normal((layers, batch, hidden)).astype(np.float32)
                  for k in names[1:]}
        inputs['data'] = rng.randint(0, vocab, (batch, length)).astype(np.float32)
        _compare(forward(sym, inputs, params), run_onnx(model, inputs))


@pytest.mark.parametrize('mode', ['lstm', 'gru'])
def test_language_model_at_two_sequence_lengths(mode):
    rng = np.random.RandomState(0)
    vocab, n, t, hidden, layers = 17, 3, 5, 6, 2
    sym = _word_lm(vocab, 4, hidden, layers, mode)
    state = (layers, n, hidden)
    names = [k for k in sym.list_arguments() if k == 'data' or 'state' in k]
    arg_shapes, _, _ = sym.infer_shape(data=(n, t), rnn_state=state)
    params = {k: (0.4 * rng.standard_normal(s)).astype(np.float32)
              for k, s in zip(sym.list_arguments(), arg_shapes) if k not in names}
    shapes = [(n, t) if k == 'data' else state for k in names]
    dims = [(n, 'seq') if k == 'data' else state for k in names]
    model = _export(sym, params, shapes, dims)
    sig = model.graph.input[0].type.tensor_type.shape.dim
    assert sig[0].dim_value == n and sig[1].dim_param == 'seq'
    for length in (t, 2, 11):
        inputs = {k: rng.standard_normal(state).astype(np.float32) for k in names}
        inputs['data'] = rng.randint(0, vocab, (n, length)).astype(np.float32)
        ref = forward(sym, inputs, params)
        assert ref[0].shape == (length * n, vocab)
        _compare(ref, run_onnx(model, inputs))


def test_flatten_and_fully_connected_over_a_free_sequence_axis():
    """FC with flatten=False over (N, T, C), a Reshape merging N and T, Flatten of a
    (N*T, C, 1) view: T free, batch free."""
    rng = np.random.RandomState(1)
    data = mx.sym.var('data')
    h = mx.sym.FullyConnected(data, num_hidden=5, flatten=False, name='fc1')
    h = mx.sym.reshape(h, shape=(-3, 0, 1))                 # (N*T, 5, 1)
    h = mx.sym.Flatten(h)
    sym = mx.sym.FullyConnected(mx.sym.relu(h), num_hidden=3, name='fc2')
    arg_shapes, _, _ = sym.infer_shape(data=(2, 4, 6))
    params = {k: rng.standard_normal(s).astype(np.float32)
              for k, s in zip(sym.list_arguments(), arg_shapes) if k != 'data'}
    model = _export(sym, params, [(2, 4, 6)], [(None, None, 6)])
    for shape in ((2, 4, 6), (3, 7, 6), (1, 1, 6)):
        inputs = {'data': rng.standard_normal(shape).astype(np.float32)}
        _compare(forward(sym, inputs, params), run_onnx(model, inputs))


def test_reshape_codes_and_open_slices_keep_the_sequence_free():
    """reshape (0, -1) and slice_axis with end None / negative bounds write no size."""
    rng = np.random.RandomState(4)
    data = mx.sym.var('data')
    h = mx.sym.slice_axis(data, axis=1, begin=1, end=None)
    h = mx.sym.slice_axis(h, axis=1, begin=-3, end=-1)
    sym = mx.sym.reshape(mx.sym.tanh(h), shape=(0, -1), name='merge_steps')
    model = _export(sym, {}, [(2, 6, 3)], [(None, 'T', 3)])
    for shape in ((2, 6, 3), (4, 9, 3), (1, 4, 3)):
        inputs = {'data': rng.standard_normal(shape).astype(np.float32)}
        ref = forward(sym, inputs)
        assert ref[0].shape == (shape[0], 6)
        _compare(ref, run_onnx(model, inputs))


def test_a_folded_sequence_size_is_an_error_naming_the_node():
    """reshape (0, -3) merges T and C: the converter writes T*C as a constant."""
    data = mx.sym.var('data')
    flat = mx.sym.reshape(data, shape=(0, -3), name='merge_steps')
    sym = mx.sym.sum(mx.sym.tanh(flat), axis=1)
    with pytest.raises(mx.onnx.ExportError, match=r"merge_steps.*Reshape.*depends on the "
                                                  r"dynamic axes.*axis 1 of 'data'"):
        export_onnx_model(sym, {}, [(2, 4, 3)], dynamic=True,
                          dynamic_input_shapes=[(None, None, 3)])
    # the same graph with only the batch free exports (and the check stays out of it)
    model = _export(sym, {}, [(2, 4, 3)], [(None, 4, 3)])
    x = np.random.RandomState(2).standard_normal((5, 4, 3)).astype(np.float32)
    _compare(forward(sym, {'data': x}), run_onnx(model, {'data': x}))


def test_folded_size_deep_in_a_graph_names_its_node():
    """split of the sequence axis into 2 parts: each part's size is written."""
    data = mx.sym.var('data')
    h = mx.sym.FullyConnected(data, num_hidden=4, flatten=False, name='proj')
    parts = mx.sym.split(mx.sym.relu(h), num_outputs=2, axis=1, name='halves')
    sym = parts[0] - parts[1]
    rng = np.random.RandomState(3)
    params = {'proj_weight': rng.standard_normal((4, 3)).astype(np.float32),
              'proj_bias': np.zeros(4, np.float32)}
    with pytest.raises(mx.onnx.ExportError, match=r"'halves' \(operator SliceChannel"):
        export_onnx_model(sym, params, [(2, 4, 3)], dynamic=True,
                          dynamic_input_shapes=[(None, 'T', 3)])


def test_a_graph_that_takes_no_other_size_is_an_error():
    """reshape to an explicit (N, 12): no other T fits, said at export."""
    data = mx.sym.var('data')
    sym = mx.sym.reshape(data, shape=(0, 12), name='merge_steps')
    with pytest.raises(mx.onnx.ExportError, match=r"does not accept other sizes of the "
                                                  r"dynamic axes.*axis 1 of 'data'.*"
                                                  r"merge_steps"):
        export_onnx_model(sym, {}, [(2, 4, 3)], dynamic=True,
                          dynamic_input_shapes=[(None, None, 3)])
