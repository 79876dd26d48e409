"""Every LRN OpCase of test_norm_layers.py through oneDNN (float32), the size limit
lifted. oneDNN computes LRN's output only where nobody reads the hidden ``tmp_norm``: the
inference variant the inference passes run (LRNInference). It must call oneDNN once per
case and match the reference; the registered LRN (training, monitor, gradients) never
calls it."""
import numpy as np
import pytest

from harness import parametrize_cases
from test_norm_layers import LRN_CASES
from symgraph.backend import onednn
from symgraph.ops.norm_layers import LRN, LRNInference
from symgraph.graph.rules import instead

import symgraph as mx


@pytest.fixture
def backend(onednn_backend, monkeypatch):
    monkeypatch.setitem(onednn.layers.LIMITS, 'lrn', 0)     # (the backend's routing)
    return onednn_backend


@parametrize_cases(LRN_CASES)
def test_case_through_onednn(case, backend):
    inputs = case.make_inputs('float32')
    op = case.make_op()
    variant = instead(op, 'unread', (1,))
    assert isinstance(variant, LRNInference) and instead(op, 'unread', ()) is op
    before = backend.calls.get('lrn_forward', 0)
    y, hidden = variant.forward(np, inputs, [], False)
    assert backend.calls.get('lrn_forward', 0) == before + 1 and hidden is None
    assert y.dtype == np.float32 and y.shape == inputs[0].shape
    np.testing.assert_allclose(y, case.ref(*inputs), rtol=1e-5, atol=1e-6)
    # the registered operator stays on NumPy, tmp_norm included
    outs = op.forward(np, inputs, [], True)
    op.backward(np, [np.ones_like(y)], inputs, outs, [], [True])
    assert backend.calls.get('lrn_forward', 0) == before + 1
    np.testing.assert_allclose(outs[0], y, rtol=1e-5, atol=1e-6)


def test_wide_range_within_float32_rounding(backend):
    rng = np.random.RandomState(0)
    x = (rng.standard_normal((4, 16, 9, 9)) * np.logspace(-3, 2, 16)[:, None, None]
         ).astype(np.float32)
    attrs = dict(nsize=5, alpha=0.3, beta=0.75, knorm=1.0)
    y = LRNInference(**attrs).forward(np, [x], [], False)[0]
    y64 = LRN(**attrs).forward(np, [x.astype(np.float64)], [], False)[0]
    y0 = LRN(**attrs).forward(np, [x], [], False)[0]
    for got in (y, y0):
        np.testing.assert_allclose(got, y64, rtol=2e-6, atol=1e-9)


def test_inference_plan_runs_the_variant(backend, monkeypatch):
    data = mx.sym.var('data')
    h = mx.sym.Convolution(data, kernel=(3, 3), num_filter=8, name='c')
    h = mx.sym.LRN(h, nsize=5, alpha=0.2, beta=0.75, knorm=2.0, name='lrn')
    h = mx.sym.Pooling(h, kernel=(2, 2), stride=(2, 2), name='p')
    outs = {}
    for passes in ('none', 'all'):
        monkeypatch.setenv('SYMGRAPH_INFERENCE_PASSES', passes)
        exe = h.simple_bind(mx.cpu(), grad_req='null', data=(2, 3, 10, 10))
        exe.arg_dict['data'][:] = np.random.RandomState(1).uniform(-2, 2, (2, 3, 10, 10))
        exe.arg_dict['c_weight'][:] = np.random.RandomState(2).uniform(-1, 1, (8, 3, 3, 3))
        before = backend.calls.get('lrn_forward', 0)
        exe.forward(is_train=False)
        outs[passes] = exe.outputs[0].asnumpy()
        assert backend.calls.get('lrn_forward', 0) == before + (passes == 'all')
    assert 'dead_nodes: 1 node(s) skip unread outputs (lrn)' in exe.debug_str()
    np.testing.assert_allclose(outs['all'], outs['none'], rtol=1e-5, atol=1e-6)
