"""ONNX export of the control-flow operators (symgraph/onnx/_convert_control.py):
foreach as Scan, while_loop as Loop, cond as If, on graphs built here and on the graphs
MXNet 1.9.1 wrote (tests/golden/data/control_flow.json), against symgraph's forward in
ONNX Runtime."""
import json
import os

import numpy as np
import pytest

import symgraph as mx
from onnx_special_check import check

pytest.importorskip('onnx')
pytest.importorskip('onnxruntime')

GOLDEN = os.path.join(os.path.dirname(__file__), '..', 'golden', 'data')
with open(os.path.join(GOLDEN, 'control_flow.json')) as _f:
    META = json.load(_f)
ARRAYS = dict(np.load(os.path.join(GOLDEN, 'control_flow.npz')))


@pytest.mark.parametrize('name', sorted(META))
def test_mxnet_written_control_flow_graphs(name):
    """The foreach/while_loop/cond graphs as MXNet 1.9.1 wrote them; the weights of the
    foreach bodies are given as params (initializers read from the bodies' outer
    scope)."""
    sym = mx.sym.load_json(META[name]['json'])
    vals = {k: ARRAYS['%s/in/%s' % (name, k)].astype(np.float32)
            for k in sym.list_arguments()}
    params = {k: v for k, v in vals.items() if k in ('w', 'b')}
    inputs = {k: v for k, v in vals.items() if k not in params}
    check(sym, inputs, params)


def test_foreach_states_data_and_free_inputs():
    rng = np.random.RandomState(0)
    data, d2, init, init2, w = (mx.sym.var(n) for n in ('data', 'd2', 'init', 'init2', 'w'))

    def body(xs, states):
        x, y = xs
        h = mx.sym.broadcast_mul(mx.sym.tanh(mx.sym.dot(x, w) + states[0]), mx.sym.sum(y))
        return [h, h + 1, y * 2], [h, states[1] + mx.sym.sum(x)]
    outs, st = mx.sym.contrib.foreach(body, [data, d2], [init, init2])
    sym = mx.sym.Group(list(outs) + list(st))
    check(sym, {'data': rng.standard_normal((4, 2, 3)).astype(np.float32),
                'd2': rng.standard_normal(4).astype(np.float32),     # steps of shape (1,)
                'init': rng.standard_normal((2, 5)).astype(np.float32),
                'init2': rng.standard_normal(1).astype(np.float32),
                'w': rng.standard_normal((3, 5)).astype(np.float32)})


@pytest.mark.parametrize('start', [0.0, 3.0, 9.0])
def test_while_loop_padding_and_early_stop(start):
    """Stopped by the condition (start 3: 3 of 6 rows), by max_iterations (start 0), or
    before the first step (start 9: zeros)."""
    i, s, c = mx.sym.var('i'), mx.sym.var('s'), mx.sym.var('c')
    outs, st = mx.sym.contrib.while_loop(
        lambda i, s: i < 6, lambda i, s: ([mx.sym.broadcast_mul(i, s), s + c],
                                           [i + 1, s * 0.5 + c]), [i, s],
        max_iterations=6)
    sym = mx.sym.Group(list(outs) + list(st))
    ref, _ = check(sym, {'i': np.array([start], np.float32),
                         's': np.array([1.0, -2.0, 0.5], np.float32),
                         'c': np.array([0.25, 1.0, 2.0], np.float32)})
    if start == 9.0:
        assert not ref[0].any()


@pytest.mark.parametrize('sign', [1.0, -1.0])
def test_cond_branches(sign):
    a, b, x = mx.sym.var('a'), mx.sym.var('b'), mx.sym.var('x')
    out = mx.sym.contrib.cond(mx.sym.sum(a) > b,
                              lambda: [(a + 5) * x, a],
                              lambda: [mx.sym.broadcast_mul(mx.sym.sin(a - x), b), x * 2])
    sym = mx.sym.Group(list(out))
    check(sym, {'a': sign * np.array([1.0, 2.0, 3.0], np.float32),
                'b': np.array([0.5], np.float32),
                'x': np.array([0.1, -0.2, 0.3], np.float32)})


PARITY = dict(np.load(os.path.join(GOLDEN, 'control_flow_parity.npz')))


@pytest.mark.parametrize('name', ['foreach_repeated_output', 'while_repeated_output',
                                  'cond_repeated_output', 'while_free_reads_loop_init',
                                  'foreach_1d_data', 'while_false_at_once'])
def test_mxnet_parity_cases_against_mxnet_outputs(name):
    """The edge cases of MXNet's own control-flow tests (tests/golden/
    make_control_flow_parity.py: repeated outputs, a loop reading another's results,
    1-D data, a loop whose condition is false at once): ONNX Runtime's outputs against
    MXNet 1.9.1's (both while loops here run to max_iterations: no padding rows)."""
    import make_control_flow_parity as cases
    sym, shapes = cases.CASES[name](mx)
    _, got = check(sym, cases.fixed_inputs(shapes))
    for j, o in enumerate(got):
        np.testing.assert_allclose(o, PARITY['%s/out/%d' % (name, j)], rtol=1e-5, atol=1e-6)
