"""Every Convolution / Deconvolution OpCase of test_conv.py through oneDNN (float32).

For each case: the output shape equals the inferred one, the forward matches the loop
reference, and the gradients of data, weight and bias match the NumPy path's in float64;
each of the three oneDNN calls is counted, so a silent fallback to NumPy fails the test.
The same through ``simple_bind`` for one network, and with the backend forced off; results
computed into offered arrays (``writes_into``) are those arrays, bit-identical to the others.
"""
import numpy as np
import pytest

from harness import parametrize_cases
from test_conv import CASES
from symgraph.backend import onednn
from symgraph.opdef import cpu_backend

import symgraph as mx


@pytest.fixture(params=['default', 'blocked'])
def backend(monkeypatch, request):
    # 'blocked': data with few channels goes in oneDNN's blocked layout too (by default it
    # stays plain below Backend.PLAIN_DATA_BELOW channels per group), so that both
    # layouts run every case
    monkeypatch.delenv('SYMGRAPH_ONEDNN', raising=False)
    if request.param == 'blocked':
        from symgraph.backend.onednn.conv import Backend
        monkeypatch.setattr(Backend, 'PLAIN_DATA_BELOW', 0)
    onednn.reset()
    be = cpu_backend()
    if be is None:
        pytest.skip('oneDNN is not available on this machine')
    yield be
    onednn.reset()


@pytest.fixture
def numpy_only(monkeypatch):
    monkeypatch.setenv('SYMGRAPH_ONEDNN', '0')
    onednn.reset()
    assert cpu_backend() is None
    yield
    monkeypatch.delenv('SYMGRAPH_ONEDNN')
    onednn.reset()


def _run(case, dtype, seed=0):
    op = case.make_op()
    inputs = case.make_inputs(dtype)
    n = len(op.list_arguments())
    outs = op.forward(np, inputs[:n], [], True)
    dy = np.random.RandomState(seed + 1).uniform(-1, 1, outs[0].shape).astype(dtype)
    grads = op.backward(np, [dy], inputs[:n], outs, [], [True] * n)
    return op, inputs, outs, grads


@parametrize_cases(CASES)
def test_case_through_onednn(case, backend):
    before = dict(backend.calls)
    op, inputs, outs, grads = _run(case, 'float32')
    used = {k: backend.calls.get(k, 0) - before.get(k, 0) for k in
            ('conv_forward', 'conv_backward_data', 'conv_backward_weights')}
    assert used == {'conv_forward': 1, 'conv_backward_data': 1,
                    'conv_backward_weights': 1}, used
    _, out_shapes, _ = op.infer_shape([a.shape for a in inputs])
    assert outs[0].shape == tuple(out_shapes[0]) and outs[0].dtype == np.float32
    np.testing.assert_allclose(outs[0], case.ref(*inputs), rtol=case.rtol, atol=case.atol)
    # gradients against the NumPy path in float64 on the same values
    _, _, _, ref_grads = _run(case, 'float64')
    assert backend.calls['conv_forward'] == before.get('conv_forward', 0) + 1
    for i, (g, r) in enumerate(zip(grads, ref_grads)):
        assert g.shape == inputs[i].shape and g.dtype == np.float32
        np.testing.assert_allclose(g, r, rtol=1e-4, atol=2e-5, err_msg='input %d' % i)


@parametrize_cases(CASES[:3] + CASES[-3:])
def test_case_with_backend_forced_off(case, numpy_only):
    _, inputs, outs, grads = _run(case, 'float32')
    np.testing.assert_allclose(outs[0], case.ref(*inputs), rtol=case.rtol, atol=case.atol)
    _, _, _, ref_grads = _run(case, 'float64')
    for g, r in zip(grads, ref_grads):
        np.testing.assert_allclose(g, r, rtol=1e-4, atol=2e-5)


def _run_into(case, dtype, seed=0):
    """:func:`_run` with every result offered an array (``out=``/``grad_out=``, as the
    executor's buffers are), filled with NaN so that a partial write shows."""
    op = case.make_op()
    inputs = case.make_inputs(dtype)
    n = len(op.list_arguments())
    _, out_shapes, _ = op.infer_shape([a.shape for a in inputs])
    out = [np.full(out_shapes[0], np.nan, dtype)]
    outs = op.forward(np, inputs[:n], [], True, out=out)
    dy = np.random.RandomState(seed + 1).uniform(-1, 1, outs[0].shape).astype(dtype)
    grad_out = [np.full(a.shape, np.nan, dtype) for a in inputs[:n]]
    grads = op.backward(np, [dy], inputs[:n], outs, [], [True] * n, grad_out=grad_out)
    return outs, grads, out, grad_out


@pytest.mark.parametrize('path', ['onednn', 'numpy-float32', 'numpy-float64'])
@parametrize_cases(CASES)
def test_results_computed_into_offered_arrays_are_bit_identical(case, path, monkeypatch):
    """writes_into: the output and the data and weight gradients are the arrays offered
    (no copy by the executor), with exactly the values computed without them."""
    monkeypatch.setenv('SYMGRAPH_ONEDNN', '1' if path == 'onednn' else '0')
    onednn.reset()
    try:
        be = cpu_backend()
        if path == 'onednn' and be is None:
            pytest.skip('oneDNN is not available on this machine')
        dtype = 'float64' if path.endswith('64') else 'float32'
        before = dict(be.calls) if be is not None else {}
        outs, grads, out, grad_out = _run_into(case, dtype)
        if be is not None:
            assert all(be.calls.get(k, 0) == before.get(k, 0) + 1 for k in
                       ('conv_forward', 'conv_backward_data', 'conv_backward_weights'))
        _, _, _, ref_grads = _run(case, dtype)
        ref_outs = _run(case, dtype)[2]
    finally:
        onednn.reset()
    assert outs[0] is out[0]
    np.testing.assert_array_equal(outs[0], ref_outs[0])
    for i in (0, 1):
        assert grads[i] is grad_out[i], 'input %d' % i
    for g, r in zip(grads, ref_grads):
        np.testing.assert_array_equal(g, r)


def _net_grads():
    data = mx.sym.var('data')
    h = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=8, name='c1')
    h = mx.sym.Activation(h, act_type='relu')
    h = mx.sym.Convolution(h, kernel=(3, 3), stride=(2, 2), num_filter=4, num_group=2,
                           name='c2')
    h = mx.sym.Deconvolution(h, kernel=(2, 2), stride=(2, 2), num_filter=3, name='d1')
    out = mx.sym.MakeLoss(mx.sym.sum(h * h))
    exe = out.simple_bind(mx.cpu(), data=(2, 3, 9, 9))
    rng = np.random.RandomState(3)
    for name, arr in exe.arg_dict.items():
        arr[:] = rng.uniform(-0.5, 0.5, arr.shape)
    exe.forward(is_train=True)
    exe.backward()
    return exe.outputs[0].asnumpy(), {k: v.asnumpy() for k, v in exe.grad_dict.items()}


def test_simple_bind_with_and_without_onednn(monkeypatch):
    monkeypatch.setenv('SYMGRAPH_ONEDNN', '0')
    onednn.reset()
    ref_out, ref_grads = _net_grads()
    monkeypatch.delenv('SYMGRAPH_ONEDNN')
    onednn.reset()
    be = cpu_backend()
    if be is None:
        pytest.skip('oneDNN is not available on this machine')
    out, grads = _net_grads()
    assert be.calls.get('conv_forward', 0) >= 3 and be.calls.get('conv_backward_weights') >= 3
    np.testing.assert_allclose(out, ref_out, rtol=1e-4)
    for k in ref_grads:
        np.testing.assert_allclose(grads[k], ref_grads[k], rtol=1e-4, atol=1e-5, err_msg=k)
    onednn.reset()
