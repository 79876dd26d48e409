"""Golden data for the control-flow operators (_foreach, _while_loop, _cond) from
MXNet 1.9.1: JSON as MXNet writes it, argument/output names, inferred shapes, forward
outputs and the input gradients for a fixed head gradient.

    MXNET_MKLDNN_ENABLED=0 /work/mxvenv/bin/python tests/golden/make_control_flow.py

writes tests/golden/data/control_flow.json and control_flow.npz.
"""
import json
import os

import numpy as np
import mxnet as mx

HERE = os.path.dirname(os.path.abspath(__file__))


def rnn_foreach():
    data, init, w, b = (mx.sym.var(n) for n in ('data', 'init', 'w', 'b'))

    def body(x, states):
        h = mx.sym.tanh(mx.sym.FullyConnected(x, weight=w, bias=b, num_hidden=4)
                        + states[0])
        return h, [h * 0.5]
    out, st = mx.sym.contrib.foreach(body, data, [init])
    return mx.sym.Group([out, st[0]]), {'data': (5, 2, 3), 'init': (2, 4)}


def foreach_two_states():
    data, s1, s2 = mx.sym.var('data'), mx.sym.var('s1'), mx.sym.var('s2')
    outer = mx.sym.var('v')

    def body(x, states):
        a = x * states[0] + outer
        return [a, a * 2], [states[1] + a, mx.sym.sin(states[0])]
    outs, st = mx.sym.contrib.foreach(body, data, [s1, s2])
    return mx.sym.Group(outs + st), {'data': (4, 3), 's1': (3,), 's2': (3,), 'v': (3,)}


def while_sum():
    i, s, w = mx.sym.var('i'), mx.sym.var('s'), mx.sym.var('w')
    outs, st = mx.sym.contrib.while_loop(
        lambda i, s: i <= 5, lambda i, s: ([i * s * w], [i + 1, s + i * w]), [i, s],
        max_iterations=8)
    return mx.sym.Group(outs + st), {'i': (1,), 's': (1,), 'w': (1,)}


def cond_scalar(then):
    a, b, x = mx.sym.var('a'), mx.sym.var('b'), mx.sym.var('x')
    pred = mx.sym.sum(a) < b if then else mx.sym.sum(a) > b
    out = mx.sym.contrib.cond(pred, lambda: (a + 5) * x, lambda: mx.sym.broadcast_mul(mx.sym.sin(a - x), b))
    return out, {'a': (2, 3), 'b': (1,), 'x': (2, 3)}


CASES = {'rnn_foreach': rnn_foreach, 'foreach_two_states': foreach_two_states,
         'while_sum': while_sum, 'cond_then': lambda: cond_scalar(True),
         'cond_else': lambda: cond_scalar(False)}


def fixed_inputs(name, shapes):
    rng = np.random.RandomState(7)
    vals = {k: rng.uniform(-1, 1, s).astype('float32') for k, s in shapes.items()}
    if name == 'while_sum':
        vals = {'i': np.array([1], 'float32'), 's': np.array([0.5], 'float32'),
                'w': np.array([0.75], 'float32')}
    if name.startswith('cond'):
        vals['b'] = np.array([0.25], 'float32')
    return vals


def main():
    meta, arrays = {}, {}
    for name, build in CASES.items():
        sym, shapes = build()
        arg_shapes, out_shapes, _ = sym.infer_shape_partial(**shapes)
        assert arg_shapes is not None, name
        vals = fixed_inputs(name, dict(zip(sym.list_arguments(), arg_shapes)))
        args = {k: mx.nd.array(vals[k]) for k in sym.list_arguments()}
        grads = {k: mx.nd.zeros(v.shape) for k, v in args.items()}
        ex = sym.bind(mx.cpu(), args, args_grad=grads)
        outs = ex.forward(is_train=True)
        rng = np.random.RandomState(11)
        heads = [rng.uniform(-1, 1, o.shape).astype('float32') for o in outs]
        ex.backward([mx.nd.array(h) for h in heads])
        meta[name] = {'json': sym.tojson(), 'arguments': sym.list_arguments(),
                      'outputs': sym.list_outputs(), 'shapes': shapes,
                      'arg_shapes': [list(s) for s in arg_shapes],
                      'out_shapes': [list(s) for s in out_shapes]}
        for k, v in vals.items():
            arrays['%s/in/%s' % (name, k)] = v
        for j, (o, h) in enumerate(zip(outs, heads)):
            arrays['%s/out/%d' % (name, j)] = o.asnumpy()
            arrays['%s/head/%d' % (name, j)] = h
        for k, g in grads.items():
            arrays['%s/grad/%s' % (name, k)] = g.asnumpy()
    with open(os.path.join(HERE, 'data', 'control_flow.json'), 'w') as f:
        json.dump(meta, f, indent=1, sort_keys=True)
    np.savez_compressed(os.path.join(HERE, 'data', 'control_flow.npz'), **arrays)


if __name__ == '__main__':
    main()
