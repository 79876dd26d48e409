"""Every softmax / log_softmax OpCase of test_softmax.py through oneDNN (float32) where
ops/softmax.py asks the kernel (no temperature, no length, no other dtype) and the backend
takes it (the last axis), the backend's size limit lifted: the forward calls oneDNN once
and matches the reference, the gradient (NumPy: oneDNN's backward was slower) matches
float64. The other cases must not call it. Wide-range rows match the NumPy path to float32
rounding."""
import numpy as np
import pytest

from harness import parametrize_cases
from test_softmax import CASES, SOFTMAX_CASES
from symgraph.backend import onednn
from symgraph.opdef import cpu_backend
from symgraph.ops import softmax as sm

ROWS = [c for c in CASES + SOFTMAX_CASES if c.op in ('softmax', 'log_softmax')]


@pytest.fixture
def backend(onednn_backend, monkeypatch):
    # (the size limits are the backend's routing)
    monkeypatch.setattr(onednn.layers, 'LIMITS', dict(onednn.layers.LIMITS, softmax=0,
                                                      log_softmax=0))
    return onednn_backend


def _routed(op, ndim):
    return op.axis % ndim == ndim - 1 and op.temperature in (None, 1.0) \
        and not op.use_length and (op.dtype is None or np.dtype(op.dtype) == np.float32)


def _run(case, dtype):
    op = case.make_op()
    inputs = case.make_inputs(dtype)
    n = len(op.list_arguments())
    outs = op.forward(np, inputs[:n], [], False)
    dy = np.random.RandomState(4).uniform(-1, 1, outs[0].shape).astype(outs[0].dtype)
    return op, inputs, outs, op.backward(np, [dy], inputs[:n], outs, [], [True] * n)


@parametrize_cases(ROWS)
def test_case_through_onednn(case, backend):
    before = backend.calls.get('softmax_forward', 0)
    op, inputs, outs, grads = _run(case, 'float32')
    routed = _routed(op, inputs[0].ndim)
    assert backend.calls.get('softmax_forward', 0) == before + routed
    np.testing.assert_allclose(outs[0], case.ref(*inputs), rtol=1e-5, atol=1e-6)
    _, _, outs64, grads64 = _run(case, 'float64')
    np.testing.assert_allclose(grads[0], grads64[0], rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize('log', [False, True])
def test_wide_range_within_float32_rounding(log, backend, monkeypatch):
    rng = np.random.RandomState(0)
    x = (rng.standard_normal((37, 1000)) * np.logspace(-3, 2, 37)[:, None]).astype(np.float32)
    op = (sm.LogSoftmax if log else sm.Softmax)(axis=-1)
    before = backend.calls.get('softmax_forward', 0)
    y = op.forward(np, [x], [], False)[0]
    assert backend.calls.get('softmax_forward', 0) == before + 1
    y64 = op.forward(np, [x.astype(np.float64)], [], False)[0]
    monkeypatch.setattr(onednn.layers, 'LIMITS', dict(onednn.layers.LIMITS, softmax=None,
                                                      log_softmax=None))
    y0 = op.forward(np, [x], [], False)[0]
    # log_softmax is x - (max + log sum): its rounding is that of the row's inputs (one
    # ulp of max |x| is 1.5e-5 on the rows of scale 100); softmax's is relative
    eps = np.finfo(np.float32).eps
    bound = 2e-6 * np.abs(y64) + (2 * eps * np.abs(x).max(axis=1, keepdims=True) if log
                                  else 1e-9)
    for got in (y, y0):
        assert np.isfinite(got).all()
        assert (np.abs(got - y64) <= bound).all(), np.abs(got - y64).max()


def test_other_axes_and_small_arrays_stay_on_numpy(monkeypatch):
    monkeypatch.delenv('SYMGRAPH_ONEDNN', raising=False)
    onednn.reset()
    be = cpu_backend()
    if be is None:
        pytest.skip('oneDNN is not available on this machine')
    before = be.calls.get('softmax_forward', 0)
    big = np.ones((64, onednn.layers.LIMITS['softmax'] // 64), np.float32)
    sm.Softmax(axis=0).forward(np, [big], [], False)
    sm.Softmax(axis=-1).forward(np, [big[:, :10]], [], False)
    assert be.calls.get('softmax_forward', 0) == before
    sm.Softmax(axis=-1).forward(np, [big], [], False)
    assert be.calls.get('softmax_forward', 0) == before + 1
    onednn.reset()
