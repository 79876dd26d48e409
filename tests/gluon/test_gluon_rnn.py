"""gluon.rnn: the fused layers and the cells against MXNet 1.9.1 (outputs, states and
gradients on fixed parameters, names, MXNet's saved file; tests/golden/gluon_zoo_probes.py),
projection and state clipping against a NumPy LSTM, the unfused stack against the fused
layer, hybridization, dropout kinds in training, and the errors."""
import json
import os

import numpy as np
import pytest

import symgraph as mx
from symgraph import autograd
from symgraph.gluon import rnn
from symgraph.gluon.contrib.rnn import LSTMPCell
from symgraph.gluon.contrib import rnn as crnn
from symgraph.gluon.contrib.rnn.rnn_cell import dynamic_unroll
import gluon_zoo_probes as probes

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'golden', 'data',
                    'gluon_zoo')
GOLDEN = np.load(os.path.join(DATA, 'rnn.npz'))
with open(os.path.join(DATA, 'rnn_names.json')) as _f:
    NAMES = json.load(_f)


def assert_golden(prefix, got, rtol=1e-5, atol=1e-6):
    want = sorted(k[len(prefix):] for k in GOLDEN.files if k.startswith(prefix))
    assert sorted(got) == want
    for key in want:
        np.testing.assert_allclose(got[key], GOLDEN[prefix + key], rtol=rtol, atol=atol,
                                   err_msg=prefix + key)


# ----------------------------------------------------------------------------- golden
@pytest.mark.parametrize('case', sorted(probes.LAYER_CASES))
def test_layer_outputs_states_and_gradients_equal_mxnets(case):
    assert_golden('layer/%s/' % case, probes.run_layer(mx, case))


@pytest.mark.parametrize('case', sorted(probes.CELL_CASES))
def test_cell_unroll_outputs_states_and_gradients_equal_mxnets(case):
    assert_golden('cell/%s/' % case, probes.run_cell(mx, case))


@pytest.mark.parametrize('case', sorted(probes.LAYER_CASES))
def test_hybridized_layer_gradients_equal_mxnets(case):
    layer = probes.make_layer(mx, case)
    x, states = probes.layer_inputs(mx, layer, case)
    layer(x, states) if states else layer(x)
    probes.fill_params(mx, layer)
    layer.hybridize()
    assert_golden('layer/%s/' % case, probes.run_layer(mx, case, layer))


def test_cell_steps_equal_mxnets():
    assert_golden('step/', probes.step_cell(mx))


def test_layer_loads_mxnets_file_with_unfused_names(tmp_path):
    layer = probes.make_layer(mx, 'lstm_2l_bi')
    layer.load_parameters(os.path.join(DATA, 'lstm_bi.params'))
    assert_golden('saved_layer/', probes.run_layer(mx, 'lstm_2l_bi', layer))
    # and writes the same names MXNet does
    layer.save_parameters(str(tmp_path / 'again.params'))
    ours = mx.nd.load(str(tmp_path / 'again.params'))
    theirs = mx.nd.load(os.path.join(DATA, 'lstm_bi.params'))
    assert sorted(ours) == sorted(theirs) == NAMES['LSTM']['saved']
    for k in ours:
        np.testing.assert_array_equal(ours[k].asnumpy(), theirs[k].asnumpy())


@pytest.mark.parametrize('kind', ['RNNCell', 'LSTMCell', 'GRUCell', 'BidirectionalCell',
                                  'RNN', 'LSTM', 'GRU'])
def test_symbolic_graphs_and_names_equal_mxnets(kind):
    # names of arguments, outputs and parameters, and the graph's JSON text (its SHA-1)
    got = probes.symbol_names(mx)[kind]
    assert got == NAMES[kind]


# ----------------------------------------------------------------------------- NumPy
def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _lstm_reference(x, params, prefix, h0, c0, proj, clip):
    """One-layer unidirectional LSTM(P) in NumPy, time major."""
    W = {k: params[prefix + k].data().asnumpy().astype(np.float64)
         for k in ('l0_i2h_weight', 'l0_h2h_weight', 'l0_i2h_bias', 'l0_h2h_bias')}
    h, c, outs = h0[0].astype(np.float64), c0[0].astype(np.float64), []
    for t in range(x.shape[0]):
        g = x[t] @ W['l0_i2h_weight'].T + W['l0_i2h_bias'] + h @ W['l0_h2h_weight'].T \
            + W['l0_h2h_bias']
        i, f, gg, o = np.split(g, 4, axis=1)
        c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(gg)
        if clip is not None:
            c = np.clip(c, *clip)
        h = _sigmoid(o) * np.tanh(c)
        if proj:
            h = h @ params[prefix + 'l0_h2r_weight'].data().asnumpy().astype(np.float64).T
        outs.append(h)
    return np.stack(outs), h, c


@pytest.mark.parametrize('proj,clip', [(3, None), (None, (-0.3, 0.25)), (2, (-0.5, 0.5))])
def test_lstm_projection_and_state_clip_against_numpy(proj, clip):
    kwargs = {'projection_size': proj}
    if clip:
        kwargs.update(state_clip_min=clip[0], state_clip_max=clip[1])
    layer = rnn.LSTM(5, input_size=4, **kwargs)
    layer.initialize(mx.init.Uniform(0.8))
    names = sorted(layer.collect_params().keys())
    assert ('lstm0_l0_h2r_weight' in names) == bool(proj)
    if proj:
        assert layer.l0_h2r_weight.shape == (proj, 5)
        assert layer.l0_h2h_weight.shape == (20, proj)
    x = probes.data((6, 2, 4), 40) * 3
    h0, c0 = [probes.data(info['shape'], 41 + i) for i, info in enumerate(layer.state_info(2))]
    assert h0.shape == (1, 2, proj or 5) and c0.shape == (1, 2, 5)
    out, (hn, cn) = layer(mx.nd.array(x), [mx.nd.array(h0), mx.nd.array(c0)])
    ref_out, ref_h, ref_c = _lstm_reference(x, layer.collect_params(), 'lstm0_', h0, c0,
                                            proj, clip)
    np.testing.assert_allclose(out.asnumpy(), ref_out, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(hn.asnumpy()[0], ref_h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(cn.asnumpy()[0], ref_c, rtol=1e-5, atol=1e-6)
    if clip:
        assert cn.asnumpy().min() >= clip[0] - 1e-7 and cn.asnumpy().max() <= clip[1] + 1e-7


def test_ntc_layout_is_tnc_swapped():
    tnc = rnn.GRU(4, num_layers=2, bidirectional=True, input_size=3)
    ntc = rnn.GRU(4, num_layers=2, bidirectional=True, input_size=3, layout='NTC',
                  params=tnc.collect_params())
    tnc.initialize()
    x = mx.nd.array(probes.data((5, 2, 3), 42))
    out_t = tnc(x)
    out_n = ntc(mx.nd.swapaxes(x, 0, 1))
    assert out_n.shape == (2, 5, 8)
    np.testing.assert_allclose(out_n.asnumpy().swapaxes(0, 1), out_t.asnumpy(), rtol=1e-6)


@pytest.mark.parametrize('mode', ['rnn_tanh', 'lstm', 'gru'])
def test_unfused_stack_equals_fused_layer(mode):
    cls = {'rnn_tanh': lambda: rnn.RNN(4, 2, activation='tanh', bidirectional=True,
                                       input_size=3),
           'lstm': lambda: rnn.LSTM(4, 2, bidirectional=True, input_size=3),
           'gru': lambda: rnn.GRU(4, 2, bidirectional=True, input_size=3)}[mode]
    layer = cls()
    layer.initialize(mx.init.Uniform(0.5))
    x = mx.nd.array(probes.data((5, 2, 3), 43))
    stack = layer._unfuse()
    out, _ = stack.unroll(5, x, layout='TNC', merge_outputs=True)
    np.testing.assert_allclose(out.asnumpy(), layer(x).asnumpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('mode', ['lstm', 'gru'])
def test_sequence_length_layer_equals_unfused_unroll_with_valid_length(mode):
    cls = rnn.LSTM if mode == 'lstm' else rnn.GRU
    layer = cls(4, input_size=3, bidirectional=True, use_sequence_length=True)
    layer.initialize(mx.init.Uniform(0.5))
    x = mx.nd.array(probes.data((5, 2, 3), 54))
    vl = mx.nd.array([3, 5])
    out, states = layer(x, layer.begin_state(2), vl)
    assert not out.asnumpy()[3:, 0].any()
    want, want_states = layer._unfuse().unroll(5, x, layout='TNC', merge_outputs=True,
                                               valid_length=vl)
    np.testing.assert_allclose(out.asnumpy(), want.asnumpy(), rtol=1e-5, atol=1e-6)
    # the fused states are (layers x directions, N, H); the stack's, one per cell and kind
    per_dir = [s[d] for d in range(2) for s in states]
    for g, w in zip(per_dir, want_states):
        np.testing.assert_allclose(g.asnumpy(), w.asnumpy(), rtol=1e-5, atol=1e-6)


def test_deferred_input_size_and_repr():
    layer = rnn.LSTM(6, num_layers=2, bidirectional=True, dropout=0.2)
    assert repr(layer) == 'LSTM(None -> 6, TNC, num_layers=2, dropout=0.2, bidirectional)'
    layer.initialize()
    layer(mx.nd.ones((3, 2, 7)))
    assert layer.l0_i2h_weight.shape == (24, 7)
    assert layer.l1_i2h_weight.shape == (24, 12)
    assert repr(layer) == 'LSTM(7 -> 6, TNC, num_layers=2, dropout=0.2, bidirectional)'
    cell = rnn.GRUCell(5)
    assert repr(cell) == 'GRUCell(None -> 15)'
    assert repr(rnn.RNNCell(3, input_size=2)) == 'RNNCell(2 -> 3, tanh)'
    assert repr(rnn.DropoutCell(0.5)) == 'DropoutCell(rate=0.5, axes=())'


# ----------------------------------------------------------------------------- hybridize
def test_hybridized_layer_and_cells_equal_imperative():
    layer = rnn.LSTM(5, num_layers=2, input_size=3)
    layer.initialize(mx.init.Uniform(0.5))
    x = mx.nd.array(probes.data((4, 2, 3), 44))
    states = layer.begin_state(2)
    want_out, want_states = layer(x, states)
    layer.hybridize()
    got_out, got_states = layer(x, states)
    np.testing.assert_allclose(got_out.asnumpy(), want_out.asnumpy(), rtol=1e-6, atol=1e-7)
    for g, w in zip(got_states, want_states):
        np.testing.assert_allclose(g.asnumpy(), w.asnumpy(), rtol=1e-6, atol=1e-7)

    cell = rnn.GRUCell(4, input_size=3)
    cell.initialize(mx.init.Uniform(0.5))
    xs = mx.nd.array(probes.data((2, 3), 45))
    h = [mx.nd.array(probes.data((2, 4), 46))]
    want, _ = cell(xs, h)
    cell.hybridize()
    got, new_h = cell(xs, h)
    np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(new_h[0].asnumpy(), want.asnumpy(), rtol=1e-6, atol=1e-7)


class _BiLSTM(mx.gluon.HybridBlock):
    """A bidirectional cell unrolled inside hybrid_forward (MXNet's own test's block)."""

    def __init__(self, length, **kwargs):
        super().__init__(**kwargs)
        self.length = length
        with self.name_scope():
            self.bi = rnn.BidirectionalCell(rnn.LSTMCell(6, prefix='rnn_l0_'),
                                            rnn.GRUCell(6, prefix='rnn_r0_'),
                                            output_prefix='lstm_bi_')

    def hybrid_forward(self, F, inputs, valid_len):
        return self.bi.unroll(self.length, inputs, valid_length=valid_len, layout='NTC',
                              merge_outputs=True)


@pytest.mark.parametrize('length,valid', [(1, [1, 1, 1]), (4, [4, 1, 3])])
def test_hybridized_bidirectional_unroll_with_valid_length(length, valid):
    net = _BiLSTM(length)
    net.initialize(mx.init.Uniform(0.5))
    x = mx.nd.array(probes.data((3, length, 5), 49))
    vl = mx.nd.array(valid)
    want_out, want_states = net(x, vl)
    net.hybridize()
    got_out, got_states = net(x, vl)
    assert got_out.shape == (3, length, 12)
    np.testing.assert_allclose(got_out.asnumpy(), want_out.asnumpy(), rtol=1e-5, atol=1e-6)
    for g, w in zip(got_states, want_states):
        np.testing.assert_allclose(g.asnumpy(), w.asnumpy(), rtol=1e-5, atol=1e-6)
    # padded steps are zeros, in both directions
    out = got_out.asnumpy()
    for i, n in enumerate(valid):
        assert not out[i, n:].any()


def test_begin_state_names_and_functions():
    cell = rnn.LSTMCell(4)
    states = cell.begin_state(func=mx.sym.var)
    assert [s.name for s in states] == ['lstm0_begin_state_0', 'lstm0_begin_state_1']
    ones = cell.begin_state(batch_size=3, func=mx.nd.ones)
    assert [s.shape for s in ones] == [(3, 4), (3, 4)]
    assert ones[0].asnumpy().min() == 1
    layer = rnn.GRU(4, num_layers=3)
    assert [s.name for s in layer.begin_state(func=mx.sym.var)] == ['gru0_h0_0']
    assert layer.begin_state(2)[0].shape == (3, 2, 4)


# ----------------------------------------------------------------------------- training
def test_dropout_cell_in_training_scales_or_drops():
    cell = rnn.DropoutCell(0.5)
    x = mx.nd.array(np.abs(probes.data((20, 30), 47)) + 0.1)
    with autograd.record():
        out, states = cell(x, [])
    out = out.asnumpy()
    kept = out != 0
    assert 0.3 < kept.mean() < 0.7 and states == []
    np.testing.assert_allclose(out[kept], 2 * x.asnumpy()[kept], rtol=1e-6)
    # in inference it passes values through
    np.testing.assert_array_equal(cell(x, [])[0].asnumpy(), x.asnumpy())


def test_zoneout_keeps_previous_values_in_training():
    base = rnn.RNNCell(50, input_size=4)
    cell = rnn.ZoneoutCell(base, zoneout_outputs=0.5, zoneout_states=0.5)
    cell.initialize(mx.init.Uniform(0.5))
    x = mx.nd.array(probes.data((2, 3, 4), 48))
    with autograd.record():
        outs, _ = cell.unroll(3, x, layout='NTC', merge_outputs=False)
    base._modified = False
    plain, _ = base.unroll(3, x, layout='NTC', merge_outputs=False)
    base._modified = True
    o0, p0 = outs[0].asnumpy(), plain[0].asnumpy()
    # at the first step a zoned-out output is the zero "previous" output
    assert np.all((o0 == 0) | np.isclose(o0, p0))
    assert 0.2 < (o0 == 0).mean() < 0.8


def test_variational_dropout_masks_shared_over_time_and_reset():
    cell = rnn.VariationalDropoutCell(rnn.GRUCell(6, input_size=4), drop_inputs=0.5,
                                      drop_states=0.5, drop_outputs=0.5)
    cell.initialize()
    x = mx.nd.ones((3, 5, 4))
    with autograd.record():
        cell.unroll(5, x, layout='NTC')
    masks = [cell.drop_inputs_mask, cell.drop_states_mask, cell.drop_outputs_mask]
    for m in masks:
        vals = np.unique(m.asnumpy())
        assert set(vals.tolist()) <= {0.0, 2.0}
    cell.reset()
    assert cell.drop_inputs_mask is None and cell.drop_outputs_mask is None


# ----------------------------------------------------------------------------- errors
def test_errors():
    with pytest.raises(ValueError, match='layout'):
        rnn.LSTM(4, layout='NCT')
    layer = rnn.GRU(4, input_size=3)
    layer.initialize()
    with pytest.raises(ValueError, match=r'Invalid recurrent state shape.*\(1, 2, 4\)'):
        layer(mx.nd.ones((5, 2, 3)), mx.nd.ones((1, 3, 4)))
    bi = rnn.BidirectionalCell(rnn.GRUCell(3), rnn.GRUCell(3))
    with pytest.raises(NotImplementedError, match='unroll'):
        bi(mx.nd.ones((2, 3)), bi.begin_state(batch_size=2))
    base = rnn.LSTMCell(3)
    rnn.ResidualCell(base)
    with pytest.raises(RuntimeError, match='modifier'):
        base.begin_state(batch_size=2)
    with pytest.raises(ValueError, match='already modified'):
        rnn.ZoneoutCell(base)
    with pytest.raises(TypeError, match='rate'):
        rnn.DropoutCell('0.5')
    with pytest.raises(TypeError, match='bidirectional'):
        rnn.ZoneoutCell(rnn.BidirectionalCell(rnn.GRUCell(3), rnn.GRUCell(3)))
    cell = rnn.GRUCell(3)
    cell.initialize()
    with pytest.raises(ValueError, match='length=4'):
        cell.unroll(4, mx.nd.ones((2, 3, 5)), layout='NTC')
    with pytest.raises(ValueError, match='inputs=None'):
        cell.unroll(4, None)


# ----------------------------------------------------------------------------- contrib
@pytest.mark.parametrize('bidirectional', [False, True])
def test_lstmp_cells_equal_fused_projected_lstm(bidirectional):
    fused = rnn.LSTM(6, projection_size=3, num_layers=2, bidirectional=bidirectional,
                     input_size=4, prefix='lstm0_')
    stack = rnn.HybridSequentialRNNCell(prefix='lstm0_')
    with stack.name_scope():
        for i in range(2):
            if bidirectional:
                stack.add(rnn.BidirectionalCell(LSTMPCell(6, 3, prefix='l%d_' % i),
                                                LSTMPCell(6, 3, prefix='r%d_' % i)))
            else:
                stack.add(LSTMPCell(6, 3, prefix='l%d_' % i))
    fused.initialize(mx.init.Uniform(0.6))
    stack.initialize()
    x = mx.nd.array(probes.data((4, 2, 4), 50))
    stack.unroll(4, x, layout='TNC')            # shapes known
    stack_params = stack.collect_params()
    assert sorted(stack_params.keys()) == sorted(fused.collect_params().keys())
    for name, p in fused.collect_params().items():
        stack_params[name].set_data(p.data())
    begin = fused.begin_state(2)
    out, states = fused(x, begin)
    want, _ = stack.unroll(4, x, begin_state=stack.begin_state(batch_size=2), layout='TNC',
                           merge_outputs=True)
    assert out.shape == (4, 2, 3 * (2 if bidirectional else 1))
    np.testing.assert_allclose(out.asnumpy(), want.asnumpy(), rtol=1e-5, atol=1e-6)
    assert repr(LSTMPCell(6, 3, input_size=4)) == 'LSTMPCell(4 -> 24 -> 3)'


def test_conv_cells_shapes_repr_and_errors():
    cell = crnn.Conv2DGRUCell((0, 6, 5), 4, 3, 3)
    assert cell.prefix == 'conv_gru0_'
    assert cell.i2h_weight.shape == (12, 0, 3, 3) and cell.h2h_weight.shape == (12, 4, 3, 3)
    assert cell.state_info(2) == [{'shape': (2, 4, 4, 3), '__layout__': 'NCHW'}]
    assert repr(cell) == 'Conv2DGRUCell(None -> 12, tanh, NCHW)'
    cell.initialize()
    out, states = cell.unroll(2, mx.nd.ones((3, 2, 7, 6, 5)), merge_outputs=True)
    assert out.shape == (3, 2, 4, 4, 3) and cell.i2h_weight.shape == (12, 7, 3, 3)
    with pytest.raises(ValueError, match='odd'):
        crnn.Conv1DLSTMCell((2, 7), 3, 3, 2)
    with pytest.raises(ValueError, match='length 3'):
        crnn.Conv3DRNNCell((1, 3, 4, 4), 2, (1, 3), 3)


class _DynamicUnroll(mx.gluon.HybridBlock):
    def __init__(self, cell_type, layout, **kwargs):
        super().__init__(**kwargs)
        self.layout = layout
        with self.name_scope():
            self.cell = cell_type(6, prefix='rnn_')

    def hybrid_forward(self, F, inputs, states, valid_length):
        return dynamic_unroll(self.cell, inputs, states, valid_length=valid_length,
                              layout=self.layout)


@pytest.mark.parametrize('kind,layout', [('LSTMCell', 'TNC'), ('GRUCell', 'NTC'),
                                         ('RNNCell', 'NTC')])
def test_dynamic_unroll_equals_unroll(kind, layout):
    # imperative only: hybridized, the cell's output (also its state) is a repeated output
    # of foreach's graph, which the executor's backward plan does not take yet (reported)
    cell_type = getattr(rnn, kind)
    n_states = 2 if kind == 'LSTMCell' else 1
    x = mx.nd.array(probes.data((4, 3, 5) if layout == 'TNC' else (3, 4, 5), 51))
    vl = mx.nd.array([2, 4, 1])
    states = [mx.nd.array(probes.data((3, 6), 52 + i)) for i in range(n_states)]
    block = _DynamicUnroll(cell_type, layout)
    block.initialize(mx.init.Uniform(0.5))
    x.attach_grad()
    with autograd.record():
        out, new_states = block(x, states, vl)
        loss = (out * mx.nd.array(probes.data(out.shape, 53))).sum()
    loss.backward()
    got_grad = x.grad.asnumpy().copy()
    with autograd.record():
        want, want_states = block.cell.unroll(4, x, states, layout=layout, valid_length=vl,
                                              merge_outputs=True)
        loss = (want * mx.nd.array(probes.data(want.shape, 53))).sum()
    loss.backward()
    assert np.abs(want.asnumpy()).max() > 0.05
    np.testing.assert_allclose(out.asnumpy(), want.asnumpy(), rtol=1e-5, atol=1e-6)
    for g, w in zip(new_states, want_states):
        np.testing.assert_allclose(g.asnumpy(), w.asnumpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_grad, x.grad.asnumpy(), rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------------------- export
def test_exported_lstm_block_equals_mxnets_and_imports(tmp_path):
    out = probes.export_layer(mx, str(tmp_path / 'tagger'))
    np.testing.assert_allclose(out, GOLDEN['export/out'], rtol=1e-5, atol=1e-6)
    with open(str(tmp_path / 'tagger-symbol.json')) as f:
        ours = json.load(f)
    with open(os.path.join(DATA, 'lstm_tagger-symbol.json')) as f:
        theirs = json.load(f)
    assert ours['nodes'] == theirs['nodes'] and ours['heads'] == theirs['heads']
    saved = mx.nd.load(str(tmp_path / 'tagger-0000.params'))
    want = mx.nd.load(os.path.join(DATA, 'lstm_tagger-0000.params'))
    assert sorted(saved) == sorted(want)
    # MXNet's exported files run here as a SymbolBlock
    block = mx.gluon.SymbolBlock.imports(os.path.join(DATA, 'lstm_tagger-symbol.json'),
                                         ['data'], os.path.join(DATA,
                                                                'lstm_tagger-0000.params'))
    got = block(mx.nd.array(probes.data((probes.N, probes.T, probes.C), 60))).asnumpy()
    np.testing.assert_allclose(got, GOLDEN['export/out'], rtol=1e-5, atol=1e-6)
