"""ONNX ``Loop`` imported as ``while_loop``: graphs with ``mx.sym.contrib.while_loop``
exported (as ONNX Loop, symgraph/onnx/_convert_control.py), imported back by
mx.onnx.import_model and run here give the same outputs (stacked step outputs padded to
max_iterations included); a hand-written Loop that reads its iteration number and stops
by its own condition; the refusal of a Loop without a constant trip count."""
import numpy as np
import pytest

import symgraph as mx
from onnx_special_check import export, forward, run_onnx

onnx = pytest.importorskip('onnx')
pytest.importorskip('onnxruntime')


def _run_imported(model, inputs):
    sym, args, aux = mx.onnx.import_model(model)
    assert any(n['op'] == '_while_loop' for n in __import__('json').loads(
        sym.tojson())['nodes'])
    arrays = dict(args, **{k: mx.nd.array(v, dtype=v.dtype) for k, v in inputs.items()
                           if k in sym.list_arguments()})
    exe = sym.bind(mx.cpu(), arrays, aux_states=aux, grad_req='null')
    return [o.asnumpy() for o in exe.forward(is_train=False)]


def _same(ref, got):
    assert len(ref) == len(got)
    for r, g in zip(ref, got):
        assert r.shape == g.shape, (r.shape, g.shape)
        np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-6)


def _counting_loop(max_iterations):
    """s, i: while i < n: s = s * 0.9 + x * i, out = s + w, i += 1 (x, w outer values)."""
    x = mx.sym.Variable('x')
    w = mx.sym.Variable('w')
    n = mx.sym.Variable('n')
    s0 = mx.sym.Variable('s0')
    i0 = mx.sym.Variable('i0')

    def cond(s, i):
        return i < n

    def func(s, i):
        s2 = s * 0.9 + mx.sym.broadcast_mul(x, i)
        return [s2 + w, mx.sym.sum(s2)], [s2, i + 1]
    outs, states = mx.sym.contrib.while_loop(cond, func, [s0, i0],
                                             max_iterations=max_iterations)
    return mx.sym.Group(list(outs) + list(states))


@pytest.mark.parametrize('n_stop', [3.0, 5.0, 9.0])     # stops early, at, past max
def test_while_loop_round_trip(n_stop):
    rng = np.random.RandomState(0)
    sym = _counting_loop(5)
    inputs = {'x': rng.randn(2, 3).astype(np.float32),
              'w': rng.randn(2, 3).astype(np.float32),
              'n': np.array([n_stop], np.float32),
              's0': rng.randn(2, 3).astype(np.float32),
              'i0': np.array([0.0], np.float32)}
    ref = forward(sym, inputs)
    model = export(sym, inputs)
    assert any(node.op_type == 'Loop' for node in model.graph.node)
    _same(ref, run_onnx(model, inputs))
    got = _run_imported(model, inputs)
    _same(ref, got)
    steps = int(min(n_stop, 5))
    assert np.abs(got[0][steps:]).max(initial=0) == 0          # zero padding
    assert got[3][0] == steps


def test_while_loop_with_parameters_round_trip():
    """A recurrent cell in the body, its weights params (initializers read in the body)."""
    data = mx.sym.Variable('data')
    h0 = mx.sym.Variable('h0')

    def cond(h, i):
        return i < 4

    def func(h, i):
        h2 = mx.sym.tanh(mx.sym.FullyConnected(mx.sym.concat(h, data, dim=1), num_hidden=4,
                                               name='cell'))
        return [h2], [h2, i + 1]
    outs, states = mx.sym.contrib.while_loop(cond, func, [h0, mx.sym.zeros((1,))],
                                             max_iterations=6)
    sym = mx.sym.Group([outs[0], states[0]])
    rng = np.random.RandomState(1)
    inputs = {'data': rng.randn(2, 3).astype(np.float32),
              'h0': rng.randn(2, 4).astype(np.float32)}
    params = {'cell_weight': rng.randn(4, 7).astype(np.float32) * 0.5,
              'cell_bias': rng.randn(4).astype(np.float32) * 0.1}
    ref = forward(sym, inputs, params)
    model = export(sym, inputs, params)
    _same(ref, _run_imported(model, inputs))


def _hand_loop(trip_count):
    """A Loop as other exporters write it: scalar trip count and condition, the body
    reading the iteration number and setting its condition (stop when acc > 10)."""
    h = onnx.helper
    f, i64, b = onnx.TensorProto.FLOAT, onnx.TensorProto.INT64, onnx.TensorProto.BOOL
    body = h.make_graph(
        [h.make_node('Cast', ['it'], ['itf'], to=f),
         h.make_node('Add', ['acc_in', 'itf'], ['acc1']),
         h.make_node('Mul', ['acc1', 'x'], ['acc_out']),
         h.make_node('ReduceSum', ['acc_out'], ['total'], keepdims=0),
         h.make_node('Less', ['total', 'ten'], ['cond_out']),
         h.make_node('Identity', ['acc_out'], ['scan_out'])],
        'body',
        [h.make_tensor_value_info('it', i64, []), h.make_tensor_value_info('c', b, []),
         h.make_tensor_value_info('acc_in', f, [3])],
        [h.make_tensor_value_info('cond_out', b, []),
         h.make_tensor_value_info('acc_out', f, [3]),
         h.make_tensor_value_info('scan_out', f, [3])],
        [onnx.numpy_helper.from_array(np.array(10.0, np.float32), 'ten')])
    graph = h.make_graph(
        [h.make_node('Loop', ['M', 'c0', 'a0'], ['final', 'stacked'], body=body)],
        'g', [h.make_tensor_value_info('a0', f, [3]), h.make_tensor_value_info('x', f, [3])],
        [h.make_tensor_value_info('final', f, [3]),
         h.make_tensor_value_info('stacked', f, [None, 3])],
        [onnx.numpy_helper.from_array(np.array(trip_count, np.int64), 'M'),
         onnx.numpy_helper.from_array(np.array(True), 'c0')])
    return h.make_model(graph, opset_imports=[h.make_opsetid('', 17)])


def test_hand_written_loop_reading_its_iteration_number():
    model = _hand_loop(6)
    onnx.checker.check_model(model, full_check=True)
    inputs = {'a0': np.array([0.5, -1.0, 2.0], np.float32),
              'x': np.array([1.1, 0.9, 1.2], np.float32)}
    final, stacked = run_onnx(model, inputs)
    assert 1 < stacked.shape[0] < 6                  # it stopped by its condition
    got = _run_imported(model, inputs)
    np.testing.assert_allclose(got[0], final, rtol=1e-6)
    rows = stacked.shape[0]
    np.testing.assert_allclose(got[1][:rows], stacked, rtol=1e-6)
    assert got[1].shape == (6, 3) and not got[1][rows:].any()   # padded to M


def test_loop_without_constant_trip_count_is_refused():
    model = _hand_loop(6)
    model.graph.input.append(onnx.helper.make_tensor_value_info(
        'M', onnx.TensorProto.INT64, []))
    del model.graph.initializer[0]
    with pytest.raises(NotImplementedError, match='Loop.*constant trip count'):
        mx.onnx.import_model(model)
