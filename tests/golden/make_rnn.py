"""Golden data of the fused ``RNN`` operator and Gluon-exported recurrent checkpoints from
the real MXNet 1.9.1.

Run from the repository root with MXNet's interpreter::

    $MXNET_PYTHON tests/golden/make_rnn.py

(oneDNN on: with ``MXNET_MKLDNN_ENABLED=0`` MXNet 1.9.1's CPU RNN fails on its own
``state_outputs``: "Check failed: out_data.size() == num_outputs (2 vs. 1)").

Writes ``tests/golden/data/rnn_op.npz`` and ``rnn_op.json``: for every case (mode, layers,
direction, state_outputs), the inputs, MXNet's outputs (``mx.sym.RNN`` bound with
``simple_bind``, forward in training mode) and the gradients of data, parameters and states
for random head gradients, and MXNet's output names. MXNet's CPU operator has no
``use_sequence_length`` (cuDNN only): those cases run every sequence on its own, cut to its
length, through MXNet (outputs padded with zeros, parameter gradients summed). Projection
(LSTMP) runs on MXNet's CPU in inference only: forward outputs only.
"""
import json
import os

import numpy as np
import mxnet as mx

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, 'data')
T, N, C, H = 4, 3, 5, 4


def run(attrs, arrays, heads_seed, train=True):
    """MXNet's outputs and gradients of one RNN call; ``arrays`` by argument name."""
    names = list(arrays)
    sym = mx.sym.RNN(name='rnn', **{k: mx.sym.var(k) for k in names}, **attrs)
    exe = sym.simple_bind(mx.cpu(), grad_req='write' if train else 'null',
                          **{k: v.shape for k, v in arrays.items()})
    for k, v in arrays.items():
        exe.arg_dict[k][:] = v
    outs = [o.asnumpy() for o in exe.forward(is_train=train)]
    grads = {}
    if train:
        rng = np.random.RandomState(heads_seed)
        heads = [rng.uniform(-1, 1, o.shape).astype(np.float32) for o in outs]
        exe.backward([mx.nd.array(h) for h in heads])
        grads = {k: exe.grad_dict[k].asnumpy() for k in names}
        return sym.list_outputs(), outs, heads, grads
    return sym.list_outputs(), outs, [], grads


def inputs(attrs, seed):
    """Random inputs with MXNet's shape inference giving the parameter size."""
    rng = np.random.RandomState(seed)
    names = ['data', 'parameters', 'state'] + (['state_cell'] if attrs['mode'] == 'lstm'
                                               else [])
    sym = mx.sym.RNN(name='rnn', **{k: mx.sym.var(k) for k in names}, **attrs)
    shapes, _, _ = sym.infer_shape(data=(T, N, C))
    return {k: rng.uniform(-1, 1, s).astype(np.float32)
            for k, s in zip(sym.list_arguments(), shapes)}


def main():
    store, meta = {}, {}
    seed = 0
    for mode in ('rnn_relu', 'rnn_tanh', 'lstm', 'gru'):
        for layers in (1, 2):
            for bi in (False, True):
                for so in (False, True):
                    seed += 1
                    attrs = dict(mode=mode, state_size=H, num_layers=layers,
                                 bidirectional=bi, state_outputs=so)
                    case = '%s_l%d_%s_%s' % (mode, layers, 'bi' if bi else 'uni',
                                             'so' if so else 'out')
                    arrays = inputs(attrs, seed)
                    names, outs, heads, grads = run(attrs, arrays, seed + 1000)
                    meta[case] = dict(attrs=attrs, outputs=names, kind='full')
                    for k, v in arrays.items():
                        store[case + '|in|' + k] = v
                    for i, o in enumerate(outs):
                        store['%s|out|%d' % (case, i)] = o
                        store['%s|head|%d' % (case, i)] = heads[i]
                    for k, v in grads.items():
                        store[case + '|grad|' + k] = v
    # projection: inference only on MXNet's CPU
    for layers, bi in ((1, False), (2, True)):
        seed += 1
        attrs = dict(mode='lstm', state_size=H, num_layers=layers, bidirectional=bi,
                     state_outputs=True, projection_size=2)
        case = 'lstmp_l%d_%s' % (layers, 'bi' if bi else 'uni')
        arrays = inputs(attrs, seed)
        names, outs, _, _ = run(attrs, arrays, 0, train=False)
        meta[case] = dict(attrs=attrs, outputs=names, kind='forward')
        for k, v in arrays.items():
            store[case + '|in|' + k] = v
        for i, o in enumerate(outs):
            store['%s|out|%d' % (case, i)] = o
    # sequence lengths: each sequence alone through MXNet, cut to its length
    for mode, layers, bi in (('lstm', 2, True), ('gru', 1, True), ('rnn_tanh', 2, False),
                             ('lstm', 1, False)):
        seed += 1
        attrs = dict(mode=mode, state_size=H, num_layers=layers, bidirectional=bi,
                     state_outputs=True)
        case = 'seqlen_%s_l%d_%s' % (mode, layers, 'bi' if bi else 'uni')
        arrays = inputs(attrs, seed)
        lengths = np.array([4, 2, 1][:N], dtype=np.float32)
        rng = np.random.RandomState(seed + 1000)
        D = 2 if bi else 1
        heads = [rng.uniform(-1, 1, (T, N, D * H)).astype(np.float32),
                 rng.uniform(-1, 1, (layers * D, N, H)).astype(np.float32)]
        if mode == 'lstm':
            heads.append(rng.uniform(-1, 1, (layers * D, N, H)).astype(np.float32))
        outs = [np.zeros(h.shape, np.float32) for h in heads]
        grads = {k: np.zeros(v.shape, np.float32) for k, v in arrays.items()}
        for b, n in enumerate(lengths.astype(int)):
            one = {'data': arrays['data'][:n, b:b + 1], 'parameters': arrays['parameters']}
            for k in ('state', 'state_cell'):
                if k in arrays:
                    one[k] = arrays[k][:, b:b + 1]
            sym = mx.sym.RNN(name='rnn', **{k: mx.sym.var(k) for k in one}, **attrs)
            exe = sym.simple_bind(mx.cpu(), grad_req='write',
                                  **{k: v.shape for k, v in one.items()})
            for k, v in one.items():
                exe.arg_dict[k][:] = v
            o = exe.forward(is_train=True)
            outs[0][:n, b] = o[0].asnumpy()[:, 0]
            for i in range(1, len(o)):
                outs[i][:, b] = o[i].asnumpy()[:, 0]
            hb = [heads[0][:n, b:b + 1]] + [h[:, b:b + 1] for h in heads[1:]]
            exe.backward([mx.nd.array(h) for h in hb])
            grads['data'][:n, b] = exe.grad_dict['data'].asnumpy()[:, 0]
            grads['parameters'] += exe.grad_dict['parameters'].asnumpy()
            for k in ('state', 'state_cell'):
                if k in arrays:
                    grads[k][:, b] = exe.grad_dict[k].asnumpy()[:, 0]
        arrays['sequence_length'] = lengths
        meta[case] = dict(attrs=dict(attrs, use_sequence_length=True), kind='full',
                          outputs=sym.list_outputs())
        for k, v in arrays.items():
            store[case + '|in|' + k] = v
        for i, o in enumerate(outs):
            store['%s|out|%d' % (case, i)] = o
            store['%s|head|%d' % (case, i)] = heads[i]
        for k, v in grads.items():
            store[case + '|grad|' + k] = v
    # names of the outputs as MXNet lists them, and the inferred shapes
    shapes = {}
    for mode in ('lstm', 'gru'):
        for so in (False, True):
            for seq in (False, True):
                s = mx.sym.RNN(mx.sym.var('x'), state_size=6, num_layers=2, mode=mode,
                               bidirectional=True, state_outputs=so, use_sequence_length=seq,
                               name='r')
                a, o, _ = s.infer_shape(x=(7, 3, 5))
                shapes['%s_%s_%s' % (mode, so, seq)] = dict(
                    arguments=s.list_arguments(), outputs=s.list_outputs(),
                    arg_shapes=a, out_shapes=o)
    s = mx.sym.RNN(mx.sym.var('x'), state_size=6, num_layers=3, mode='lstm',
                   projection_size=2, state_outputs=True, name='r')
    a, o, _ = s.infer_shape(x=(7, 3, 5))
    shapes['lstmp'] = dict(arguments=s.list_arguments(), outputs=s.list_outputs(),
                           arg_shapes=a, out_shapes=o)
    np.savez_compressed(os.path.join(OUT, 'rnn_op.npz'), **store)
    with open(os.path.join(OUT, 'rnn_op.json'), 'w') as f:
        json.dump(dict(cases=meta, symbols=shapes, mxnet=mx.__version__), f, indent=1,
                  sort_keys=True)


def gluon_exports():
    """Gluon recurrent layers, hybridized and exported, with MXNet's outputs."""
    out = os.path.join(OUT, 'rnn_export')
    os.makedirs(out, exist_ok=True)
    expected, meta = {}, {}
    layers = {
        'lstm': lambda: mx.gluon.rnn.LSTM(5, num_layers=2, input_size=3),
        'gru': lambda: mx.gluon.rnn.GRU(4, num_layers=1, layout='NTC'),
        'bilstm': lambda: mx.gluon.rnn.LSTM(4, num_layers=1, bidirectional=True),
        'rnn_states': lambda: mx.gluon.rnn.RNN(3, num_layers=2, activation='relu'),
    }
    for k, (name, make) in enumerate(sorted(layers.items())):
        mx.random.seed(k)
        net = make()
        net.initialize(mx.init.Uniform(0.5))
        net.hybridize()
        rng = np.random.RandomState(k)
        x = mx.nd.array(rng.uniform(-1, 1, (3, 2, 3)).astype(np.float32))
        if name == 'rnn_states':
            states = [mx.nd.array(rng.uniform(-1, 1, (2, 2, 3)).astype(np.float32))]
            y, hy = net(x, states)
            outs = [y] + hy
        else:
            outs = [net(x)]
        net.export(os.path.join(out, name))
        sym, args, aux = mx.model.load_checkpoint(os.path.join(out, name), 0)
        expected[name + '|data'] = x.asnumpy()
        if name == 'rnn_states':
            expected[name + '|state'] = states[0].asnumpy()
        for i, o in enumerate(outs):
            expected['%s|out|%d' % (name, i)] = o.asnumpy()
        meta[name] = dict(arguments=sym.list_arguments(), outputs=sym.list_outputs(),
                          ops=sorted({n['op'] for n in json.loads(sym.tojson())['nodes']}))
    np.savez_compressed(os.path.join(out, 'expected.npz'), **expected)
    with open(os.path.join(out, 'meta.json'), 'w') as f:
        json.dump(meta, f, indent=1, sort_keys=True)


if __name__ == '__main__':
    main()
    gluon_exports()
