"""Golden data for the control-flow operators (_foreach, _while_loop, _cond) from
MXNet 1.9.1, and MXNet's check of the files symgraph writes for the same graphs.

    MXNET_MKLDNN_ENABLED=0 $MXNET_PYTHON tests/golden/make_control_flow.py

writes tests/golden/data/control_flow.json and control_flow.npz: JSON as MXNet writes it,
argument/output names, inferred shapes, forward outputs, the input gradients for a fixed
head gradient (``<case>/grad/<name>``) and, for the foreach cases, a float64
central-difference gradient of MXNet's own forward (``<case>/numgrad/<name>``): MXNet's
backward of foreach_two_states disagrees with it (see README, differences from MXNet).

    python tests/golden/make_control_flow.py --write-ours          # symgraph's venv
    MXNET_MKLDNN_ENABLED=0 $MXNET_PYTHON tests/golden/make_control_flow.py \
        --verify-ours > tests/golden/ours_control_flow/mxnet_verified.txt

The first writes, with symgraph, ``tests/golden/ours_control_flow/<case>-symbol.json`` and
``<case>-io.npz`` (``in:<name>``, ``out:<i>``, ``head:<i>``, ``grad:<name>``); the second
loads them with MXNet, runs forward and backward on the same inputs and compares.
tests/ops/test_control_flow.py checks that symgraph still writes those files unchanged.
"""
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OURS = os.path.join(HERE, 'ours_control_flow')
#: rows of while_sum's step output the loop writes (MXNet leaves the rest uninitialised)
WRITTEN_ROWS = {'while_sum': {0: 5}}
#: cases given a float64 central-difference gradient of MXNet's forward: not while_sum (its
#: uninitialised padding), not cond (MXNet 1.9.1 fails to bind _cond in float64: "Incompatible
#: attr in node identity0 at 0-th output: expected float64, got float32")
NUMGRAD_CASES = ('rnn_foreach', 'foreach_two_states')

if __name__ == '__main__' and '--write-ours' in sys.argv:
    sys.path.insert(0, os.path.join(HERE, '..', '..'))
    import symgraph as mx
elif __name__ == '__main__':
    os.environ['MXNET_MKLDNN_ENABLED'] = '0'
    os.environ.setdefault('MXNET_STORAGE_FALLBACK_LOG_VERBOSE', '0')
    import mxnet as mx


def rnn_foreach(mx):
    data, init, w, b = (mx.sym.var(n) for n in ('data', 'init', 'w', 'b'))

    def body(x, states):
        h = mx.sym.tanh(mx.sym.FullyConnected(x, weight=w, bias=b, num_hidden=4)
                        + states[0])
        return h, [h * 0.5]
    out, st = mx.sym.contrib.foreach(body, data, [init])
    return mx.sym.Group([out, st[0]]), {'data': (5, 2, 3), 'init': (2, 4)}


def foreach_two_states(mx):
    data, s1, s2 = mx.sym.var('data'), mx.sym.var('s1'), mx.sym.var('s2')
    outer = mx.sym.var('v')

    def body(x, states):
        a = x * states[0] + outer
        return [a, a * 2], [states[1] + a, mx.sym.sin(states[0])]
    outs, st = mx.sym.contrib.foreach(body, data, [s1, s2])
    return mx.sym.Group(outs + st), {'data': (4, 3), 's1': (3,), 's2': (3,), 'v': (3,)}


def while_sum(mx):
    i, s, w = mx.sym.var('i'), mx.sym.var('s'), mx.sym.var('w')
    outs, st = mx.sym.contrib.while_loop(
        lambda i, s: i <= 5, lambda i, s: ([i * s * w], [i + 1, s + i * w]), [i, s],
        max_iterations=8)
    return mx.sym.Group(outs + st), {'i': (1,), 's': (1,), 'w': (1,)}


def cond_scalar(mx, then):
    a, b, x = mx.sym.var('a'), mx.sym.var('b'), mx.sym.var('x')
    pred = mx.sym.sum(a) < b if then else mx.sym.sum(a) > b
    out = mx.sym.contrib.cond(pred, lambda: (a + 5) * x,
                              lambda: mx.sym.broadcast_mul(mx.sym.sin(a - x), b))
    return out, {'a': (2, 3), 'b': (1,), 'x': (2, 3)}


CASES = {'rnn_foreach': rnn_foreach, 'foreach_two_states': foreach_two_states,
         'while_sum': while_sum, 'cond_then': lambda mx: cond_scalar(mx, True),
         'cond_else': lambda mx: cond_scalar(mx, False)}


def fixed_inputs(name, shapes):
    rng = np.random.RandomState(7)
    vals = {k: rng.uniform(-1, 1, s).astype('float32') for k, s in shapes.items()}
    if name == 'while_sum':
        vals = {'i': np.array([1], 'float32'), 's': np.array([0.5], 'float32'),
                'w': np.array([0.75], 'float32')}
    if name.startswith('cond'):
        vals['b'] = np.array([0.25], 'float32')
    return vals


def numeric_grad(ex, names, heads, eps=1e-6):
    """Central differences of sum(output * head) over the float64 arguments of ``ex``."""
    out = {}
    for k in names:
        arr = ex.arg_dict[k]
        base = arr.asnumpy().copy()
        g = np.zeros_like(base)
        for idx in np.ndindex(base.shape):
            vals = []
            for d in (eps, -eps):
                x = base.copy()
                x[idx] += d
                arr[:] = x
                vals.append(sum((o.asnumpy() * h).sum()
                                for o, h in zip(ex.forward(is_train=False), heads)))
            g[idx] = (vals[0] - vals[1]) / (2 * eps)
        arr[:] = base
        out[k] = g
    return out


def run(sym, vals, heads, dtype='float32'):
    """Forward (training) and backward: (outputs, {name: gradient}, executor)."""
    args = {k: mx.nd.array(vals[k], dtype=dtype) for k in sym.list_arguments()}
    grads = {k: mx.nd.zeros(v.shape, dtype=dtype) for k, v in args.items()}
    ex = sym.bind(mx.cpu(), args, args_grad=grads)
    outs = [o.asnumpy() for o in ex.forward(is_train=True)]
    if heads is not None:
        ex.backward([mx.nd.array(h, dtype=dtype) for h in heads])
    return outs, {k: g.asnumpy() for k, g in grads.items()}, ex


def main():
    meta, arrays = {}, {}
    for name, build in CASES.items():
        sym, shapes = build(mx)
        arg_shapes, out_shapes, _ = sym.infer_shape_partial(**shapes)
        assert arg_shapes is not None, name
        vals = fixed_inputs(name, dict(zip(sym.list_arguments(), arg_shapes)))
        outs, _, _ = run(sym, vals, None)
        rng = np.random.RandomState(11)
        heads = [rng.uniform(-1, 1, o.shape).astype('float32') for o in outs]
        outs, grads, _ = run(sym, vals, heads)
        meta[name] = {'json': sym.tojson(), 'arguments': sym.list_arguments(),
                      'outputs': sym.list_outputs(), 'shapes': shapes,
                      'arg_shapes': [list(s) for s in arg_shapes],
                      'out_shapes': [list(s) for s in out_shapes]}
        for k, v in vals.items():
            arrays['%s/in/%s' % (name, k)] = v
        for j, (o, h) in enumerate(zip(outs, heads)):
            arrays['%s/out/%d' % (name, j)] = o
            arrays['%s/head/%d' % (name, j)] = h
        for k, g in grads.items():
            arrays['%s/grad/%s' % (name, k)] = g
        if name in NUMGRAD_CASES:
            _, _, ex = run(sym, vals, None, 'float64')
            num = numeric_grad(ex, sym.list_arguments(), [h.astype('float64') for h in heads])
            for k, g in num.items():
                arrays['%s/numgrad/%s' % (name, k)] = g
    with open(os.path.join(HERE, 'data', 'control_flow.json'), 'w') as f:
        json.dump(meta, f, indent=1, sort_keys=True)
    np.savez_compressed(os.path.join(HERE, 'data', 'control_flow.npz'), **arrays)


def write_ours(sg, directory):
    """With symgraph (``sg``): each case's symbol and its inputs, outputs, head gradients
    and input gradients, for MXNet to check (``--verify-ours``)."""
    os.makedirs(directory, exist_ok=True)
    # subgraph names (cond_pred0, ...) count per process, as MXNet's AttrScope does: start
    # them from 0 here, and leave the caller's counters as they were
    counters = sg.AttrScope._subgraph_names
    kept = dict(counters)
    try:
        counters.clear()
        _write_ours(sg, directory)
    finally:
        counters.clear()
        counters.update(kept)


def _write_ours(sg, directory):
    for name, build in CASES.items():
        with sg.name.NameManager():         # automatic names start from 0 every time
            sym, shapes = build(sg)
        arg_shapes, _, _ = sym.infer_shape(**shapes)
        vals = fixed_inputs(name, dict(zip(sym.list_arguments(), arg_shapes)))
        args = {k: sg.nd.array(vals[k]) for k in sym.list_arguments()}
        grads = {k: sg.nd.zeros(v.shape) for k, v in args.items()}
        ex = sym.bind(sg.cpu(), args, args_grad=grads)
        outs = [o.asnumpy() for o in ex.forward(is_train=True)]
        rng = np.random.RandomState(11)
        heads = [rng.uniform(-1, 1, o.shape).astype('float32') for o in outs]
        ex.backward([sg.nd.array(h) for h in heads])
        io = {'in:' + k: v for k, v in vals.items()}
        io.update(('out:%d' % j, o) for j, o in enumerate(outs))
        io.update(('head:%d' % j, h) for j, h in enumerate(heads))
        io.update(('grad:' + k, g.asnumpy()) for k, g in grads.items())
        sym.save(os.path.join(directory, name + '-symbol.json'))
        np.savez(os.path.join(directory, name + '-io.npz'), **io)


def _err(got, want):
    return float(np.max(np.abs(got - want) / (1e-4 + 1e-4 * np.abs(want)), initial=0))


def verify_ours(directory):
    """Load symgraph's files with MXNet: forward must equal ours; each gradient must equal
    MXNet's backward or, where that differs, MXNet's own float64 central differences."""
    failures, n = 0, 0
    for name in sorted(CASES):
        path = os.path.join(directory, name + '-symbol.json')
        n += 1
        try:
            ok, msg = _verify_one(name, path)
        except Exception as exc:    # report and go on: one line per file
            ok, msg = False, '%s: %s' % (type(exc).__name__, str(exc).splitlines()[-1:])
        failures += not ok
        print('%-4s %s: %s' % ('OK' if ok else 'FAIL', name, msg))
    print('%d file(s), %d failure(s)' % (n, failures))
    return 1 if failures else 0


def _verify_one(name, path):
    sym = mx.sym.load(path)
    data = dict(np.load(path[:-len('-symbol.json')] + '-io.npz'))
    vals = {k[3:]: v for k, v in data.items() if k.startswith('in:')}
    heads = [data['head:%d' % j] for j in range(len(sym.list_outputs()))]
    outs, grads, _ = run(sym, vals, heads)
    worst, notes = 0.0, []
    for j, o in enumerate(outs):
        want = data['out:%d' % j]
        rows = WRITTEN_ROWS.get(name, {}).get(j)
        if rows is not None:
            o, want = o[:rows], want[:rows]
        if o.shape != want.shape:
            return False, 'out:%d shape %s != %s' % (j, o.shape, want.shape)
        worst = max(worst, _err(o, want))
        if worst > 1:
            return False, 'out:%d max abs err %.3g' % (j, float(np.max(np.abs(o - want))))
    numeric = None
    for k, g in sorted(grads.items()):
        want = data['grad:' + k]
        err = _err(g, want)
        if err > 1:
            if numeric is None:
                _, _, ex = run(sym, vals, None, 'float64')
                numeric = numeric_grad(ex, sym.list_arguments(),
                                       [h.astype('float64') for h in heads])
            err = _err(numeric[k], want)
            if err > 1:
                return False, 'grad:%s max abs err %.3g (MXNet backward), %.3g (MXNet ' \
                    'central differences)' % (k, float(np.max(np.abs(g - want))),
                                              float(np.max(np.abs(numeric[k] - want))))
            notes.append(k)
        worst = max(worst, err)
    msg = 'forward and gradients match (worst error / tolerance %.3g)' % worst
    if notes:
        msg += '; gradients of %s checked against MXNet\'s float64 central differences ' \
               '(its backward differs)' % ', '.join(notes)
    return True, msg


if __name__ == '__main__':
    if '--write-ours' in sys.argv:
        write_ours(mx, OURS)
        print('wrote', OURS)
    elif '--verify-ours' in sys.argv:
        sys.exit(verify_ours(OURS))
    else:
        main()
