"""Every BatchNorm OpCase of test_norm.py through oneDNN (float32) where it applies
(channels on axis 1): forward against the reference, outputs (mean, inverse std) and the
running statistics, and the gradients against the NumPy path in float64. Each oneDNN call
is counted, so a silent fallback fails; the other axes must stay on NumPy."""
import numpy as np
import pytest

from harness import parametrize_cases
from test_norm import BN_CASES


@pytest.fixture
def backend(onednn_backend):
    return onednn_backend


def _run(case, dtype):
    op = case.make_op()
    inputs = case.make_inputs(dtype)
    args, aux = inputs[:3], [a.copy() for a in inputs[3:]]
    outs = op.forward(np, [a.copy() for a in args], aux, case.is_train)
    dy = np.random.RandomState(9).uniform(-1, 1, outs[0].shape).astype(dtype)
    og = [dy] + [np.zeros_like(o) for o in outs[1:]]
    grads = op.backward(np, og, args, outs, aux, [True] * 3)
    return op, inputs, outs, aux, grads


@parametrize_cases(BN_CASES)
def test_batchnorm_case_through_onednn(case, backend):
    before = dict(backend.calls)
    op, inputs, outs, aux, grads = _run(case, 'float32')
    used = {k: backend.calls.get(k, 0) - before.get(k, 0)
            for k in ('batch_norm_forward', 'batch_norm_backward')}
    on_axis_1 = op.axis % len(case.shapes[0]) == 1
    assert used == ({'batch_norm_forward': 1, 'batch_norm_backward': 1} if on_axis_1 else
                    {'batch_norm_forward': 0, 'batch_norm_backward': 0}), used
    expected = case.ref(*inputs)
    expected = expected if isinstance(expected, (list, tuple)) else [expected]
    for o, e in zip(outs[:op.num_visible_outputs()], expected):
        np.testing.assert_allclose(o, e, rtol=1e-4, atol=1e-5)
    _, _, outs64, aux64, grads64 = _run(case, 'float64')
    for o, e in zip(outs, outs64):          # hidden mean and inverse std too
        np.testing.assert_allclose(o, e, rtol=1e-4, atol=1e-5)
    for a, e in zip(aux, aux64):            # running statistics
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-6)
    for i, (g, e) in enumerate(zip(grads, grads64)):
        assert g.dtype == np.float32 and g.shape == inputs[i].shape
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=2e-5, err_msg='input %d' % i)


def test_batch_norm_runs_oneDNN_jit_kernel_channels_last(onednn_backend):
    """The primitive runs channels last (reorders at its edges), where oneDNN has its jit
    kernel; on plain NCHW it only had the generic ncsp one, 2-4x slower."""
    from symgraph.backend.onednn import _lib
    be = onednn_backend
    rng = np.random.RandomState(2)
    x = rng.randn(4, 16, 6, 5).astype(np.float32)
    g, b = rng.rand(16).astype(np.float32), rng.randn(16).astype(np.float32)
    y, mean, var = be.batch_norm_forward(x, g, b, 1e-3)
    np.testing.assert_allclose(mean, x.mean(axis=(0, 2, 3)), rtol=1e-5, atol=1e-6)
    want = (x - x.mean(axis=(0, 2, 3), keepdims=True)) / np.sqrt(
        x.var(axis=(0, 2, 3), keepdims=True) + 1e-3) * g.reshape(1, -1, 1, 1) \
        + b.reshape(1, -1, 1, 1)
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5)
    dx, dg, db = be.batch_norm_backward(x, np.ones_like(x), g, mean, var, 1e-3, False)
    np.testing.assert_allclose(db, np.full(16, x[:, 0].size, np.float32), rtol=1e-5)
    names = [_lib.impl_name(be.lib, p.pd) for k, p in be.cached_primitives().items()
             if k[0].startswith('batch_norm') and k[1] == x.shape]
    assert len(names) == 2
    assert not any(n.startswith(('ncsp', 'ref')) for n in names), names


def _channels_last(a):
    nd = a.ndim
    return np.ascontiguousarray(np.moveaxis(a, 1, -1)).transpose(
        (0, nd - 1) + tuple(range(1, nd - 1)))


def test_batch_norm_takes_and_writes_channels_last_buffers_as_they_lie(onednn_backend):
    """A training plan's channels-last buffers: data, dy and the offered outputs lie
    channels last and the primitives take them so (no reorder at either edge), with the
    C-order calls' values; with no output offered, the result lies as the data does."""
    be = onednn_backend
    rng = np.random.RandomState(6)
    x = rng.randn(4, 16, 6, 5).astype(np.float32)
    dy = rng.randn(*x.shape).astype(np.float32)
    g, b = rng.rand(16).astype(np.float32), rng.randn(16).astype(np.float32)
    y0, mean0, var0 = be.batch_norm_forward(x, g, b, 1e-3)
    dx0, dg0, db0 = be.batch_norm_backward(x, dy, g, mean0, var0, 1e-3, False)
    xl, dyl = _channels_last(x), _channels_last(dy)
    out = _channels_last(np.zeros_like(x))
    y, mean, var = be.batch_norm_forward(xl, g, b, 1e-3, out=out)
    assert y is out
    dxo = _channels_last(np.zeros_like(x))
    dx, dg, db = be.batch_norm_backward(xl, dyl, g, mean, var, 1e-3, False, dx_out=dxo)
    assert dx is dxo
    y2 = be.batch_norm_forward(xl, g, b, 1e-3)[0]
    assert not y2.flags.c_contiguous and y2.strides[1] == 4
    for got, want in ((y, y0), (y2, y0), (mean, mean0), (var, var0), (dx, dx0), (dg, dg0),
                      (db, db0)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    for k, p in be.cached_primitives().items():
        if k[0].startswith('batch_norm') and k[1] == x.shape and \
                set(k[-3 if k[0] == 'batch_norm_backward' else -2:]) == {'channels_last'}:
            assert not p.before and not p.after, k


@pytest.mark.parametrize('use_global_stats', [False, True])
def test_batchnorm_writes_its_statistics_and_parameter_gradients_into_offered_arrays(
        use_global_stats, onednn_backend):
    """The executor's offered arrays (``out=``, ``grad_out=``) take the mean, the inverse
    std, dgamma and dbeta as they are (no copy by the executor), with the values of a call
    offered nothing; the running statistics move as that call moves them."""
    from symgraph.ops import norm
    rng = np.random.RandomState(4)
    x = rng.randn(4, 8, 5, 5).astype(np.float32)
    dy = rng.randn(*x.shape).astype(np.float32)
    g, b = rng.rand(8).astype(np.float32) + 0.5, rng.randn(8).astype(np.float32)
    op = norm.BatchNorm(fix_gamma=False, use_global_stats=use_global_stats, momentum=0.8)
    stats = [rng.randn(8).astype(np.float32), rng.rand(8).astype(np.float32) + 0.5]
    aux0 = [a.copy() for a in stats]
    want = op.forward(np, [x, g, b], aux0, True)
    wgrad = op.backward(np, [dy, None, None], [x, g, b], want, aux0, [True] * 3)
    before = dict(onednn_backend.calls)
    offered = [np.empty_like(x), np.empty(8, np.float32), np.empty(8, np.float32)]
    aux = [a.copy() for a in stats]
    got = op.forward(np, [x, g, b], aux, True, out=offered)
    assert all(o is a for o, a in zip(got, offered))
    goff = [np.empty_like(x), np.empty(8, np.float32), np.empty(8, np.float32)]
    grads = op.backward(np, [dy, None, None], [x, g, b], got, aux, [True] * 3,
                        grad_out=goff)
    assert all(o is a for o, a in zip(grads, goff))
    assert onednn_backend.calls['batch_norm_forward'] == before['batch_norm_forward'] + 1
    for a, w in zip(got + aux + grads, want + aux0 + wgrad):
        np.testing.assert_array_equal(a, w)
    if not use_global_stats:
        assert not np.array_equal(aux[0], stats[0])      # the running mean moved
