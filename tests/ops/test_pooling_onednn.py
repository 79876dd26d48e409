"""Every Pooling OpCase of test_pooling.py through oneDNN (float32), the size limits of
the backend's routing (``symgraph.backend.onednn.routing.POOL_MIN``) lifted.

Cases oneDNN takes (max and average pooling, not global, except average pooling whose
'full'-convention overhang would count in the divisor) must call it -- forward once,
backward once; global average pooling its forward only -- and match the reference forward and the NumPy path's float64 gradients
(ties included: the gradient goes to the first maximum, as MXNet's). The others must not
call it and still pass. Max pooling's workspace is taken from the oneDNN forward of the
same output, or made anew when that forward ran elsewhere; the same through simple_bind.
"""
import gc

import numpy as np
import pytest

from harness import parametrize_cases
from test_pooling import CASES
from symgraph.backend.onednn import routing
from symgraph.ops.pooling import pool_out_size

import symgraph as mx

POOL_CASES = [c for c in CASES if c.op == 'Pooling']


@pytest.fixture
def backend(onednn_backend, monkeypatch):
    monkeypatch.setattr(routing, 'POOL_MIN', {'forward': (1, 0), 'backward_max': (1, 0),
                                              'backward_avg': (1, 0)})
    monkeypatch.setattr(routing, 'POOL_GLOBAL_MIN', 0)
    return onednn_backend


def _taken(op, shape):
    """Whether oneDNN should take this case, from the parameters alone."""
    if op.global_pool or op.pool_type not in ('max', 'avg') or op.layout in (
            'NWC', 'NHWC', 'NDHWC'):
        # channels-last runs through the same path on a moved view; counted separately
        return op.layout in ('NWC', 'NHWC', 'NDHWC') and op.pool_type in ('max', 'avg') \
            and not op.global_pool
    if op.pool_type == 'avg' and op.count_include_pad is not False:
        spatial = shape[2:]
        stride = op.stride or (1,) * len(spatial)
        pad = op.pad or (0,) * len(spatial)
        for s, k, t, p in zip(spatial, op.kernel, stride, pad):
            o = pool_out_size(s, k, t, p, op.pooling_convention)
            if (o - 1) * t + k - s - p > p and p:
                return False
    return True


def _run(case, dtype):
    op = case.make_op()
    inputs = case.make_inputs(dtype)
    outs = op.forward(np, inputs, [], True)
    dy = np.random.RandomState(5).uniform(-1, 1, outs[0].shape).astype(dtype)
    grads = op.backward(np, [dy], inputs, outs, [], [True])
    return op, inputs, outs, dy, grads


@parametrize_cases(POOL_CASES)
def test_case_through_onednn(case, backend):
    before = dict(backend.calls)
    op, inputs, outs, dy, grads = _run(case, 'float32')
    used = {k: backend.calls.get(k, 0) - before.get(k, 0)
            for k in ('pool_forward', 'pool_backward')}
    taken = _taken(op, case.shapes[0])
    if op.global_pool and op.pool_type == 'avg':
        # global average pooling: oneDNN's forward (one window over S), NumPy's backward
        assert used['pool_backward'] == 0, used
        if op.layout not in ('NWC', 'NHWC', 'NDHWC'):
            assert used['pool_forward'] == 1, used
    elif taken:
        assert used['pool_forward'] >= 1 and used['pool_backward'] == 1, used
    else:
        assert used == {'pool_forward': 0, 'pool_backward': 0}, used
    _, out_shapes, _ = op.infer_shape([a.shape for a in inputs])
    assert outs[0].shape == tuple(out_shapes[0]) and outs[0].dtype == np.float32
    np.testing.assert_allclose(outs[0], case.ref(*inputs), rtol=case.rtol, atol=case.atol)
    if case.grad == ():
        return
    # the gradient against the NumPy path in float64 on the same values and head gradient
    op64 = case.make_op()
    x64 = inputs[0].astype(np.float64)
    y64 = op64.forward(np, [x64], [], True)
    ref = op64.backward(np, [dy.astype(np.float64)], [x64], y64, [], [True])[0]
    assert grads[0].shape == inputs[0].shape and grads[0].dtype == np.float32
    np.testing.assert_allclose(grads[0], ref, rtol=1e-5, atol=1e-6)
    if case.grad_ref is not None:       # ties: the first maximum takes the gradient
        expected = case.grad_ref(inputs, outs, [dy])
        np.testing.assert_allclose(grads[0], expected[0], rtol=1e-5, atol=1e-6)


def test_max_workspace_kept_or_remade(backend):
    """Backward uses the workspace the Step kept from the oneDNN forward that made this
    very output; a forward that ran elsewhere (or an output it did not make) gets a fresh
    one."""
    from symgraph.ops.pooling import Pooling
    op = Pooling(kernel=(3, 3), stride=(2, 2), pad=(1, 1))
    step = op.bind(mx.cpu(), [(2, 4, 9, 9)], [np.dtype(np.float32)])
    kept = step.state                       # the Step's own: nothing module-level
    assert len(kept) == 0 and step.shareable
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, (2, 4, 9, 9)).astype(np.float32)
    dy = rng.uniform(-1, 1, (2, 4, 5, 5)).astype(np.float32)
    before = dict(backend.calls)
    y = step.forward([x], True)[0]
    assert kept.get(y, x) is not None
    g1 = step.backward([dy], [x], [y], [], [True])[0]
    assert backend.calls['pool_forward'] - before.get('pool_forward', 0) == 1
    # an equal output that is another array: the workspace is made again
    g2 = step.backward([dy], [x], [y.copy()], [], [True])[0]
    assert backend.calls['pool_forward'] - before.get('pool_forward', 0) == 2
    np.testing.assert_array_equal(g1, g2)
    # another Step (another node) has none of this one's
    other = op.bind(mx.cpu(), [(2, 4, 9, 9)], [np.dtype(np.float32)])
    assert other.state.get(y, x) is None
    # the same output from other data: no workspace of the first forward is taken
    assert kept.get(y, x.copy()) is None
    # an output that died is never matched (its entry goes once the Step's table is full)
    del y
    gc.collect()
    y2 = np.zeros((2, 4, 5, 5), np.float32)
    assert kept.get(y2, x) is None
    for _ in range(2 * kept.limit):
        step.forward([x], True)
    assert len(kept) <= kept.limit



def _net(pool_kw):
    data = mx.sym.var('data')
    h = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4, pad=(1, 1), name='c')
    h = mx.sym.Pooling(h, name='p', **pool_kw)
    return mx.sym.MakeLoss(mx.sym.sum(h * h))


def _grads(pool_kw):
    exe = _net(pool_kw).simple_bind(mx.cpu(), data=(2, 3, 10, 10))
    rng = np.random.RandomState(3)
    for arr in exe.arg_dict.values():
        arr[:] = rng.uniform(-0.5, 0.5, arr.shape)
    exe.forward(is_train=True)
    exe.backward()
    gc.collect()
    return exe.outputs[0].asnumpy(), {k: v.asnumpy() for k, v in exe.grad_dict.items()}


@pytest.mark.parametrize('pool_kw', [dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1)),
                                     dict(kernel=(3, 3), stride=(1, 1), pool_type='avg')])
def test_simple_bind_with_and_without_onednn(pool_kw, monkeypatch, backend):
    before = backend.calls.get('pool_backward', 0)
    out, grads = _grads(pool_kw)
    assert backend.calls.get('pool_backward', 0) == before + 1
    monkeypatch.setattr(routing, 'POOL_MIN', {})
    ref_out, ref_grads = _grads(pool_kw)
    assert backend.calls.get('pool_backward', 0) == before + 1
    np.testing.assert_allclose(out, ref_out, rtol=1e-5)
    for k in ref_grads:
        np.testing.assert_allclose(grads[k], ref_grads[k], rtol=1e-4, atol=1e-6, err_msg=k)
