"""mx.rnn cells against MXNet 1.9.1 (tests/golden/data/rnn_cells.*, made by
tests/golden/make_rnn_cells.py from the configurations in cell_configs.py): argument and
output names, inferred shapes, forward values, unpacked weights; FusedRNNCell.unfuse()
against the fused cell; RNN checkpoints."""
import json
import os
import sys
import warnings

import numpy as np
import pytest

import symgraph as mx

sys.path.insert(0, os.path.dirname(__file__))
from cell_configs import CELLS, DATA_SHAPE, LENGTH, flatten   # noqa: E402

GOLDEN = os.path.join(os.path.dirname(os.path.dirname(__file__)), 'golden', 'data')
with open(os.path.join(GOLDEN, 'rnn_cells.json')) as _f:
    META = json.load(_f)['cells']
STORE = np.load(os.path.join(GOLDEN, 'rnn_cells.npz'))


def _unroll(name, begin_state=None):
    with mx.name.NameManager(), warnings.catch_warnings():
        warnings.simplefilter('ignore', UserWarning)     # FusedRNNCell's NTC advice
        cell, layout = CELLS[name](mx)
        if begin_state is not None:
            begin_state = (cell.begin_state(init_sym=begin_state)
                           if isinstance(cell, mx.rnn.ModifierCell)
                           else cell.begin_state(func=begin_state))
        outs, states = cell.unroll(LENGTH, mx.sym.var('data'), layout=layout,
                                   merge_outputs=True, begin_state=begin_state)
    return cell, layout, mx.sym.Group([outs] + flatten(states))


@pytest.mark.parametrize('name', sorted(CELLS))
def test_cell_matches_mxnet(name):
    want = META[name]
    cell, layout, sym = _unroll(name)
    assert sym.list_arguments() == want['arguments']
    assert sym.list_outputs() == want['outputs']
    arg_shapes, out_shapes, _ = sym.infer_shape(data=DATA_SHAPE[layout])
    assert [list(s) for s in arg_shapes] == want['arg_shapes']
    assert [list(s) for s in out_shapes] == want['out_shapes']
    args = {n: mx.nd.array(STORE[name + '|arg|' + n]) for n in want['arguments']}
    # the default begin states (and zoneout's first previous output) are
    # mx.sym.zeros(shape=(0, H)): their batch size comes from shape inference, as in MXNet
    assert any(n['op'] == '_zeros' for n in json.loads(sym.tojson())['nodes'])
    exe = sym.bind(mx.cpu(), args)
    for i, o in enumerate(exe.forward(is_train=False)):
        np.testing.assert_allclose(o.asnumpy(), STORE['%s|out|%d' % (name, i)],
                                   rtol=1e-5, atol=1e-6)
    unpacked = cell.unpack_weights({n: v for n, v in args.items() if n != 'data'})
    assert sorted(unpacked) == want['unpacked']
    for n, v in unpacked.items():
        np.testing.assert_array_equal(v.asnumpy(), STORE[name + '|unpacked|' + n])
    packed = cell.pack_weights(unpacked)
    assert sorted(packed) == sorted(n for n in args if n != 'data')
    for n, v in packed.items():
        np.testing.assert_array_equal(v.asnumpy(), args[n].asnumpy())


@pytest.mark.parametrize('mode, bi', [('lstm', False), ('gru', True), ('rnn_tanh', True),
                                      ('rnn_relu', False)])
def test_unfuse_equals_fused(mode, bi):
    fused = mx.rnn.FusedRNNCell(4, num_layers=2, mode=mode, bidirectional=bi, prefix='f_',
                                get_next_state=True)
    x = mx.sym.var('data')
    unfused = fused.unfuse()
    # begin states as variables: random ones test more than the default zeros would
    out_f, _ = fused.unroll(5, x, layout='TNC', merge_outputs=True,
                            begin_state=fused.begin_state(func=mx.sym.Variable))
    out_u, _ = unfused.unroll(5, x, layout='TNC', merge_outputs=True,
                              begin_state=unfused.begin_state(func=mx.sym.Variable))
    shapes = dict(zip(out_f.list_arguments(), out_f.infer_shape(data=(5, 3, 6))[0]))
    rng = np.random.RandomState(0)
    args = {n: mx.nd.array(rng.uniform(-0.5, 0.5, s)) for n, s in shapes.items()}
    yf = out_f.bind(mx.cpu(), args).forward()[0].asnumpy()
    uargs = unfused.pack_weights(
        fused.unpack_weights({n: v for n, v in args.items() if 'begin_state' not in n}))
    ushapes = dict(zip(out_u.list_arguments(), out_u.infer_shape(data=(5, 3, 6))[0]))
    fstates = [v.asnumpy() for n, v in sorted(args.items()) if 'begin_state' in n]
    ustate_names = [n for n in out_u.list_arguments() if 'begin_state' in n]
    # the fused states are (layers*directions, N, H) stacks of the unfused cells' states
    stack = {k: a for k, a in zip(('h', 'c'), fstates)}
    per_cell = 2 if mode == 'lstm' else 1
    for i, n in enumerate(ustate_names):
        cell_idx, which = divmod(i, per_cell)
        src = stack['h'] if which == 0 else stack['c']
        uargs[n] = mx.nd.array(src[cell_idx].reshape(ushapes[n]))
    yu = out_u.bind(mx.cpu(), uargs).forward()[0].asnumpy()
    np.testing.assert_allclose(yu, yf, rtol=1e-5, atol=1e-6)


def test_fused_initializer_sets_forget_bias():
    cell = mx.rnn.FusedRNNCell(3, num_layers=1, mode='lstm', prefix='f_', forget_bias=2.5)
    out, _ = cell.unroll(2, mx.sym.var('data'), layout='TNC', merge_outputs=True)
    exe = out.simple_bind(mx.cpu(), data=(2, 1, 4))
    arg = exe.arg_dict['f_parameters']
    mx.init.Xavier()(mx.init.InitDesc('f_parameters', attrs=out.attr_dict()['f_parameters']),
                     arg)
    un = cell.unpack_weights({'f_parameters': arg})
    np.testing.assert_array_equal(un['f_l0_i2h_f_bias'].asnumpy(), 2.5)
    assert np.abs(un['f_l0_i2h_i_weight'].asnumpy()).sum() > 0


def test_begin_state_and_state_info():
    cell = mx.rnn.LSTMCell(5, prefix='c_')
    assert cell.state_info == [{'shape': (0, 5), '__layout__': 'NC'}] * 2
    states = cell.begin_state()
    assert [s.name for s in states] == ['c_begin_state_0', 'c_begin_state_1']
    assert states[0].attr('__layout__') == 'NC'
    cell.reset()
    assert cell.begin_state()[0].name == 'c_begin_state_0'


def test_rnn_checkpoint_round_trip(tmp_path):
    cell = mx.rnn.FusedRNNCell(3, num_layers=1, mode='gru', prefix='g_')
    out, _ = cell.unroll(2, mx.sym.var('data'), layout='TNC', merge_outputs=True)
    shapes = dict(zip(out.list_arguments(), out.infer_shape(data=(2, 1, 4))[0]))
    arg = {'g_parameters': mx.nd.array(np.arange(shapes['g_parameters'][0], dtype='f'))}
    prefix = str(tmp_path / 'm')
    mx.rnn.save_rnn_checkpoint(cell, prefix, 3, out, arg, {})
    with pytest.warns(UserWarning, match='entries the symbol does not use'):
        _, saved, _ = mx.model.load_checkpoint(prefix, 3)
    assert 'g_l0_i2h_r_weight' in saved and 'g_parameters' not in saved
    with pytest.warns(UserWarning, match='entries the symbol does not use'):
        _, loaded, _ = mx.rnn.load_rnn_checkpoint(cell, prefix, 3)
    np.testing.assert_array_equal(loaded['g_parameters'].asnumpy(),
                                  arg['g_parameters'].asnumpy())
    cb = mx.rnn.do_rnn_checkpoint(cell, prefix, period=2)
    cb(1, out, arg, {})
    assert os.path.exists(prefix + '-0002.params')


def test_bucket_sentence_iter():
    sentences = [['a', 'b', 'c'], ['b', 'c'], ['a', 'c', 'c', 'b'], ['c'], ['a', 'b']] * 4
    enc, vocab = mx.rnn.encode_sentences(sentences, invalid_label=0, start_label=1)
    assert sorted(vocab) == ['\n', 'a', 'b', 'c'] and vocab['\n'] == 0
    it = mx.rnn.BucketSentenceIter(enc, batch_size=4, buckets=[2, 4], invalid_label=0)
    assert it.default_bucket_key == 4
    keys = set()
    for batch in it:
        keys.add(batch.bucket_key)
        d, lab = batch.data[0].asnumpy(), batch.label[0].asnumpy()
        assert d.shape == (4, batch.bucket_key)
        np.testing.assert_array_equal(lab[:, :-1], d[:, 1:])
    assert keys == {2, 4}
