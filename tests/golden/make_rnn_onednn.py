"""Golden data of the fused ``RNN`` cases the oneDNN path added (projection, bfloat16),
from the real MXNet 1.9.1.

Run from the repository root with MXNet's interpreter::

    $MXNET_PYTHON tests/golden/make_rnn_onednn.py

Writes ``tests/golden/data/rnn_onednn.npz``; tests/backend/test_onednn_rnn.py reads it.

* ``lstmp_*``: LSTM with ``projection_size`` (H=6, P=3, T=5, N=3, C=4), one and two
  layers, one and two directions, with state outputs: inputs and MXNet's outputs. MXNet's
  CPU build runs projection in inference only (its native kernel; training is "No
  training support for LSTM with projection on CPU currently", and its oneDNN path takes
  no projection), so forward outputs only.
* ``bf16_*``: MXNet 1.9.1 has no bfloat16 RNN ("Unknown type enum 12"); its bf16 AMP lists
  RNN among the FP32_FUNCS, so a bfloat16 network runs the RNN in float32 on its bfloat16
  inputs widened. These cases are that: inputs rounded to bfloat16 (stored as float32),
  and MXNet's float32 outputs and the gradients of every input for random head
  gradients (LSTM and GRU, two layers, bidirectional; training mode).
"""
import os

import numpy as np
import mxnet as mx

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, 'data')
T, N, C = 5, 3, 4
BF16 = np.dtype([('bfloat16', np.uint16)])      # MXNet's name of the type


def names_of(mode):
    return ['data', 'parameters', 'state'] + (['state_cell'] if mode == 'lstm' else [])


def inputs(attrs, seed, bf16=False):
    rng = np.random.RandomState(seed)
    names = names_of(attrs['mode'])
    sym = mx.sym.RNN(name='rnn', **{k: mx.sym.var(k) for k in names}, **attrs)
    shapes, _, _ = sym.infer_shape(data=(T, N, C))
    out = {}
    for k, s in zip(sym.list_arguments(), shapes):
        a = rng.uniform(-1, 1, s).astype(np.float32)
        if k == 'parameters':
            a *= 0.5 / np.sqrt(attrs['state_size'])
        if bf16:
            # rounded to bfloat16 by MXNet itself (amp_cast: nearest, ties to even)
            a = mx.nd.amp_cast(mx.nd.amp_cast(mx.nd.array(a), dtype=BF16),
                               dtype='float32').asnumpy()
        out[k] = a
    return out


def run(attrs, arrays, train, heads_seed=0):
    names = list(arrays)
    sym = mx.sym.RNN(name='rnn', **{k: mx.sym.var(k) for k in names}, **attrs)
    exe = sym.simple_bind(mx.cpu(), grad_req='write' if train else 'null',
                          **{k: v.shape for k, v in arrays.items()})
    for k, v in arrays.items():
        exe.arg_dict[k][:] = v
    outs = [o.asnumpy() for o in exe.forward(is_train=train)]
    if not train:
        return outs, [], {}
    rng = np.random.RandomState(heads_seed)
    heads = [rng.uniform(-1, 1, o.shape).astype(np.float32) for o in outs]
    exe.backward([mx.nd.array(h) for h in heads])
    return outs, heads, {k: exe.grad_dict[k].asnumpy() for k in names}


def main():
    store = {}
    seed = 100
    for layers, bi in ((1, False), (2, False), (1, True), (2, True)):
        seed += 1
        attrs = dict(mode='lstm', state_size=6, projection_size=3, num_layers=layers,
                     bidirectional=bi, state_outputs=True)
        case = 'lstmp_l%d_%s' % (layers, 'bi' if bi else 'uni')
        arrays = inputs(attrs, seed)
        outs, _, _ = run(attrs, arrays, False)
        for k, v in arrays.items():
            store[case + '|in|' + k] = v
        for i, o in enumerate(outs):
            store['%s|out|%d' % (case, i)] = o
    for mode in ('lstm', 'gru'):
        seed += 1
        attrs = dict(mode=mode, state_size=8, num_layers=2, bidirectional=True,
                     state_outputs=True)
        case = 'bf16_%s' % mode
        arrays = inputs(attrs, seed, bf16=True)
        outs, heads, grads = run(attrs, arrays, True, seed + 1000)
        for k, v in arrays.items():
            store[case + '|in|' + k] = v
        for i, o in enumerate(outs):
            store['%s|out|%d' % (case, i)] = o
            store['%s|head|%d' % (case, i)] = heads[i]
        for k, v in grads.items():
            store[case + '|grad|' + k] = v
    np.savez_compressed(os.path.join(OUT, 'rnn_onednn.npz'), **store)


if __name__ == '__main__':
    main()
