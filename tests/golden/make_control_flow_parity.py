"""Golden data from MXNet 1.9.1 for control-flow bodies that MXNet's own
test_contrib_control_flow.py exercises and symgraph got wrong: a body that lists one entry
as two outputs, a while_loop whose body reads as a free variable the entry a loop variable
starts from, foreach over 1-D data, and a while_loop whose condition is false at once.

    MXNET_MKLDNN_ENABLED=0 $MXNET_PYTHON tests/golden/make_control_flow_parity.py

writes tests/golden/data/control_flow_parity.json (per case: the attributes MXNet gives
the control-flow node, the output shapes) and control_flow_parity.npz
(``<case>/in/<name>``, ``<case>/out/<i>``, ``<case>/head/<i>``, ``<case>/grad/<name>``).
tests/symbol/test_control_flow_parity.py builds the same graphs with symgraph (``CASES``
takes the module, ``mx`` either) and compares.
"""
import json
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def foreach_repeated_output(mx):
    """``out`` is both the step output and the new state (MXNet sums both head
    gradients inside the body). (With ``x * states[0]`` in ``out`` MXNet's data gradient
    is right at the last step only: see docs/differences.md, control flow.)"""
    data, s, v = mx.sym.var('data'), mx.sym.var('s'), mx.sym.var('v')

    def body(x, states):
        out = x * v + states[0] * 0.5
        return out, [out]
    outs, st = mx.sym.contrib.foreach(body, data, [s])
    return mx.sym.Group([outs * 2, st[0] * 3]), {'data': (4, 3), 's': (3,), 'v': (3,)}


def while_repeated_output(mx):
    """test_while_loop_for_foreach's case 1: ``func`` returns ``(out, out)``."""
    s, a, b = mx.sym.var('s'), mx.sym.var('a'), mx.sym.var('b')

    def func(s):
        out = a * 1.5 + b * 2.5 - s * 3.5
        return out, out
    outs, st = mx.sym.contrib.while_loop(lambda s: (s < 1e35).prod(), func, [s],
                                         max_iterations=3)
    return (mx.sym.Group([outs[0] * 2, st[0] * 3]),
            {'s': (2, 3), 'a': (2, 3), 'b': (2, 3)})


def cond_repeated_output(mx):
    """Both outputs of each branch are one entry."""
    a, x = mx.sym.var('a'), mx.sym.var('x')

    def then():
        y = a * x
        return [y, y]

    def other():
        y = a - x
        return [y, y]
    outs = mx.sym.contrib.cond(mx.sym.sum(a) < 100, then, other)
    return mx.sym.Group([outs[0] * 2, outs[1] * 3]), {'a': (2, 3), 'x': (2, 3)}


def while_free_reads_loop_init(mx):
    """test_uniq_name's WhileLayer2: the second loop's body reads the first loop's
    results, which are also where its loop variables start: MXNet gives them node inputs
    of their own, which the loop does not update."""
    x = mx.sym.var('x')

    def cond(s1, s2):
        s = mx.sym.squeeze(s1.slice_axis(axis=0, begin=0, end=1))
        return s == s
    states = [x, x + 1]
    _, first = mx.sym.contrib.while_loop(
        cond, lambda s1, s2: (s1 + 1, [s1, s2]), states, max_iterations=5)
    outs, st = mx.sym.contrib.while_loop(
        cond, lambda s1, s2: (s1 + 1, [s1 + first[0], s2 + first[1]]), first,
        max_iterations=5)
    return mx.sym.Group([outs[0]] + st), {'x': (3,)}


def foreach_1d_data(mx):
    """test_foreach's step16: the slices of 1-D data are arrays of shape (1,)."""
    data, s = mx.sym.var('data'), mx.sym.var('s')
    outs, st = mx.sym.contrib.foreach(
        lambda x, states: ([x[0] * states[0]], [states[0] * 2]), [data], [s])
    return mx.sym.Group(outs + st), {'data': (4,), 's': (1,)}


def while_false_at_once(mx):
    """test_while_loop_for_foreach's case 1.3: the body never runs. Only the final loop
    variable is read (MXNet 1.9.1 leaves the step output without a shape then, and an
    operator reading it fails: "InferShape failed in operator _mulscalar")."""
    s, a, b = mx.sym.var('s'), mx.sym.var('a'), mx.sym.var('b')

    def func(s):
        out = a * 2.5 * b + s * 0.3
        return out, out
    _, st = mx.sym.contrib.while_loop(lambda s: (s > 1e35).prod(), func, [s],
                                      max_iterations=20)
    return st[0] * 3, {'s': (2, 3), 'a': (2, 3), 'b': (2, 3)}


CASES = {f.__name__: f for f in (foreach_repeated_output, while_repeated_output,
                                 cond_repeated_output, while_free_reads_loop_init,
                                 foreach_1d_data, while_false_at_once)}
#: cases MXNet 1.9.1 runs forward only (binding for backward fails: "Check failed:
#: g.GetAttr<size_t>("storage_type_num_unknown_nodes") == 0U" in _while_loop2_backward)
FORWARD_ONLY = {'while_free_reads_loop_init'}


def fixed_inputs(shapes):
    rng = np.random.RandomState(5)
    return {k: rng.uniform(-1, 1, s).astype('float32') for k, s in sorted(shapes.items())}


def heads_for(shapes):
    rng = np.random.RandomState(9)
    return [rng.uniform(-1, 1, s).astype('float32') for s in shapes]


def control_flow_attrs(sym):
    """The op, attributes and number of inputs of each control-flow node of ``sym``'s
    JSON, in the JSON's order (the names count per process)."""
    nodes = json.loads(sym.tojson())['nodes']
    return [dict(n['attrs'], op=n['op'], inputs=len(n['inputs'])) for n in nodes
            if n['op'] in ('_foreach', '_while_loop', '_cond')]


def run(mx, sym, vals, heads=None, backward=True):
    """(outputs, {name: gradient}, head gradients) of a training forward and, unless
    ``backward`` is false, a backward from the head gradients (by default ``heads_for``
    the output shapes)."""
    args = {k: mx.nd.array(vals[k]) for k in sym.list_arguments()}
    grads = {k: mx.nd.zeros(v.shape) for k, v in args.items()} if backward else None
    ex = sym.bind(mx.cpu(), args, args_grad=grads)
    outs = [o.asnumpy() for o in ex.forward(is_train=backward)]
    if not backward:
        return outs, {}, [None] * len(outs)
    if heads is None:
        heads = heads_for([o.shape for o in outs])
    ex.backward([mx.nd.array(h) for h in heads])
    return outs, {k: g.asnumpy() for k, g in grads.items()}, heads


def main():
    import mxnet as mx
    meta, arrays = {}, {}
    for name, build in CASES.items():
        sym, shapes = build(mx)
        vals = fixed_inputs(shapes)
        outs, grads, heads = run(mx, sym, vals, backward=name not in FORWARD_ONLY)
        # (MXNet infers a while_loop's or cond's output shapes only once bound)
        meta[name] = {'attrs': control_flow_attrs(sym), 'arguments': sym.list_arguments(),
                      'out_shapes': [list(o.shape) for o in outs]}
        for k, v in vals.items():
            arrays['%s/in/%s' % (name, k)] = v
        for j, (o, h) in enumerate(zip(outs, heads)):
            arrays['%s/out/%d' % (name, j)] = o
            if h is not None:
                arrays['%s/head/%d' % (name, j)] = h
        for k, g in grads.items():
            arrays['%s/grad/%s' % (name, k)] = g
    with open(os.path.join(HERE, 'data', 'control_flow_parity.json'), 'w') as f:
        json.dump(meta, f, indent=1, sort_keys=True)
    np.savez_compressed(os.path.join(HERE, 'data', 'control_flow_parity.npz'), **arrays)


if __name__ == '__main__':
    os.environ['MXNET_MKLDNN_ENABLED'] = '0'
    os.environ.setdefault('MXNET_STORAGE_FALLBACK_LOG_VERBOSE', '0')
    main()
    os._exit(0)     # MXNet 1.9.1 may hang at interpreter exit
