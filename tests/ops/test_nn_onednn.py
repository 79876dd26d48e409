"""Every Activation / LeakyReLU OpCase of test_nn.py through oneDNN (float32) where
the backend's routing takes the kind (relu, sigmoid; leaky, elu, gelu), the size
limits (symgraph/backend/onednn/routing.py) lifted. Each such case must call oneDNN's eltwise forward and backward once and
match the reference forward and the NumPy path's float64 gradient; the other kinds must not
call it. Wide-range inputs (saturation, overflow of exp) match the NumPy path to float32
rounding, and the limits keep small arrays on NumPy."""
import numpy as np
import pytest

from harness import parametrize_cases
from test_nn import CASES
from symgraph.backend import onednn
from symgraph.backend.onednn import routing
from symgraph.opdef import cpu_backend
from symgraph.ops import nn

ROUTED = ('relu', 'sigmoid', 'leaky', 'elu', 'gelu')
ACT_CASES = [c for c in CASES if c.op in ('Activation', 'LeakyReLU')]


def _lift(monkeypatch):
    monkeypatch.setattr(routing, 'ELTWISE_FORWARD_MIN',
                        {k: 0 for k in routing.ELTWISE_FORWARD_MIN})
    monkeypatch.setattr(routing, 'ELTWISE_BACKWARD_MIN',
                        {k: 0 for k in routing.ELTWISE_BACKWARD_MIN})
    monkeypatch.setattr(routing, 'RELU_BACKWARD_FROM_OUTPUT_MIN', 0)


def _no_route(monkeypatch):
    monkeypatch.setattr(routing, 'ELTWISE_FORWARD_MIN', {})
    monkeypatch.setattr(routing, 'ELTWISE_BACKWARD_MIN', {})
    monkeypatch.setattr(routing, 'RELU_BACKWARD_FROM_OUTPUT_MIN', None)


@pytest.fixture
def backend(onednn_backend, monkeypatch):
    _lift(monkeypatch)
    return onednn_backend


def _refused(backend, name, size):
    """Primitives ``name`` for ``size`` elements that this machine's oneDNN declined (cached
    as None by the backend): ops/nn.py handed the work over, and oneDNN's CPU dispatch,
    which differs by ISA (AVX2, AVX-512, AMX), may decline an algorithm; the NumPy path
    then runs. Routing is asserted as "executed or declined", the same on every ISA."""
    return sum(1 for k, p in backend._thread().cache.items()
               if p is None and k[0] == name and k[1] == size)


def _run(op, inputs, dtype, is_train, seed=7):
    n = len(op.list_arguments())
    outs = op.forward(np, inputs[:n], [], is_train)
    dy = np.random.RandomState(seed).uniform(-1, 1, outs[0].shape).astype(dtype)
    og = [dy] + [None] * (len(outs) - 1)
    return outs, op.backward(np, og, inputs[:n], outs, [], [True] * n)


@parametrize_cases(ACT_CASES)
def test_case_through_onednn(case, backend):
    op = case.make_op()
    before = dict(backend.calls)
    inputs = case.make_inputs('float32')
    outs, grads = _run(op, inputs, np.float32, case.is_train)
    size = inputs[0].size
    used = {k: backend.calls.get(k, 0) - before.get(k, 0) + _refused(backend, k, size)
            for k in ('eltwise_forward', 'eltwise_backward')}
    routed = op.act_type in ROUTED
    # Activation's backward reads its output and runs in NumPy (oneDNN's reads the input)
    bwd = int(routed and case.op == 'LeakyReLU')
    assert used == ({'eltwise_forward': 1, 'eltwise_backward': bwd} if routed else
                    {'eltwise_forward': 0, 'eltwise_backward': 0}), used
    if case.ref is not None:
        expected = case.ref(*inputs)
        expected = expected if isinstance(expected, (list, tuple)) else [expected]
        np.testing.assert_allclose(outs[0], expected[0], rtol=case.rtol, atol=case.atol)
    if case.grad == () or not routed:
        return
    _, grads64 = _run(case.make_op(), [a.astype(np.float64) for a in inputs], np.float64,
                      case.is_train)
    assert grads[0].dtype == np.float32 and grads[0].shape == inputs[0].shape
    np.testing.assert_allclose(grads[0], grads64[0], rtol=1e-5, atol=1e-6)


#: absolute error allowed besides rtol 1e-6 against float64, for oneDNN and NumPy alike:
#: sigmoid's tail below 1e-37 is flushed by oneDNN; gelu's 1 + erf(x / sqrt 2) cancels in
#: float32 for x < -2 (NumPy's path errs by 4.2e-7 there, oneDNN's by 3.4e-7)
WIDE_ATOL = {'relu': 0, 'sigmoid': 1e-37, 'leaky': 0, 'elu': 1e-7, 'gelu': 5e-7}
#: ulps of 1 that float32 gelu may lose in 1 + erf(x / sqrt 2) for x < 0, where the sum
#: cancels: erf's own error and the rounding of the sum (measured on -90..90: oneDNN's
#: AVX-512 kernel 3.8 ulps, its AVX2 one 2.7, the NumPy path 0.9); twice the worst
GELU_ULPS = 8


def _cancellation_atol(kind, x, dy=None):
    """Elementwise absolute error allowed besides ``WIDE_ATOL``: for gelu, GELU_ULPS ulps
    of 1 scaled by what multiplies the cancelled sum (0.5 |x| forward, 0.5 |dy| in the
    gradient) where x < 0; 0 for the others, whose formulas do not cancel."""
    if kind != 'gelu':
        return 0.0
    scale = 0.5 * np.abs(x) if dy is None else 0.5 * np.abs(dy)
    return np.where(x < 0, GELU_ULPS * np.finfo(np.float32).eps * scale, 0.0)


def _assert_within(got, want, rtol, atol):
    """|got - want| <= rtol |want| + atol, atol elementwise (assert_allclose takes one)."""
    bad = np.abs(got.astype(np.float64) - want) > rtol * np.abs(want) + atol
    assert not bad.any(), '%d elements off, first at %d: %r, float64 %r (allowed %.3g)' % (
        bad.sum(), np.argmax(bad), got[bad][0], want[bad][0],
        np.broadcast_to(rtol * np.abs(want) + atol, want.shape)[bad][0])


@pytest.mark.parametrize('kind', sorted(WIDE_ATOL))
def test_wide_range_within_float32_rounding(kind, backend, monkeypatch):
    """-90 .. 90 (exp overflows and underflows, tails saturate): oneDNN's forward and
    backward are as close to the float64 result as the NumPy path's float32 ones."""
    act = kind in ('relu', 'sigmoid')
    op = nn.Activation(act_type=kind) if act else nn.LeakyReLU(act_type=kind, slope=0.3)
    x = np.linspace(-90, 90, 18001, dtype=np.float32)
    dy = np.random.RandomState(1).uniform(-1, 1, x.shape).astype(np.float32)

    def run(x, dy):
        y = op.forward(np, [x], [], False)[0]
        return y, op.backward(np, [dy], [x], [y], [], [True])[0]
    before = backend.calls.get('eltwise_forward', 0)
    y, g = run(x, dy)
    assert backend.calls.get('eltwise_forward', 0) + \
        _refused(backend, 'eltwise_forward', x.size) == before + 1
    y64, g64 = run(x.astype(np.float64), dy.astype(np.float64))
    _no_route(monkeypatch)
    y0, g0 = run(x, dy)
    for got in (y, y0):
        _assert_within(got, y64, 1e-6, WIDE_ATOL[kind] + _cancellation_atol(kind, x))
    for got in (g, g0):     # 1 - s cancels: an error of 1 ulp of 1 (6e-8) times |dy|
        _assert_within(got, g64, 1e-5, max(WIDE_ATOL[kind], 1.2e-7)
                       + _cancellation_atol(kind, x, dy))


def test_softrelu_stays_on_numpy(backend):
    """oneDNN 3.2's soft_relu errs by up to 7.6e-6 absolute for x < -3.85 (where the
    result is below 0.02; at x = -87 it gives 7.6e-6 for 1.7e-38): not routed."""
    assert 'softrelu' not in routing.ELTWISE_FORWARD_MIN
    before = backend.calls.get('eltwise_forward', 0)
    x = np.linspace(-90, 90, 1 << 17, dtype=np.float32)
    y = nn.Activation(act_type='softrelu').forward(np, [x], [], False)[0]
    assert backend.calls.get('eltwise_forward', 0) == before
    np.testing.assert_allclose(y, np.logaddexp(0, x.astype(np.float64)), rtol=1e-6,
                               atol=1e-37)


def test_small_arrays_stay_on_numpy(monkeypatch):
    monkeypatch.delenv('SYMGRAPH_ONEDNN', raising=False)
    onednn.reset()
    be = cpu_backend()
    if be is None:
        pytest.skip('oneDNN is not available on this machine')
    before = be.calls.get('eltwise_forward', 0)
    x = np.ones(100, np.float32)
    nn.Activation(act_type='sigmoid').forward(np, [x], [], False)
    big = np.ones(routing.ELTWISE_FORWARD_MIN['sigmoid'], np.float32)
    nn.Activation(act_type='sigmoid').forward(np, [big], [], False)
    assert be.calls.get('eltwise_forward', 0) == before + 1
    onednn.reset()


def _channels_last(a):
    nd = a.ndim
    return np.ascontiguousarray(np.moveaxis(a, 1, -1)).transpose(
        (0, nd - 1) + tuple(range(1, nd - 1)))


@pytest.mark.parametrize('lay', [None, 'channels_last'])
def test_relu_writes_and_reads_the_plan_buffers_as_they_lie(backend, lay):
    """relu into a training plan's buffer (C order or channels last, in place too) and its
    gradient from the output (relu_use_dst_for_bwd) into the data gradient's buffer, which
    may be the output's own storage: oneDNN's values, the layouts kept, no copy."""
    op = nn.Activation(act_type='relu')
    rng = np.random.RandomState(3)
    x = rng.uniform(-1, 1, (2, 8, 4, 4)).astype(np.float32)
    dy = rng.uniform(-1, 1, x.shape).astype(np.float32)
    conv = _channels_last if lay else np.array
    fwd, bwd = backend.calls.get('eltwise_forward', 0), \
        backend.calls.get('relu_backward_from_output', 0)
    xs, out = conv(x), conv(np.zeros_like(x))
    y = op.forward(np, [xs], [], True, out=[out])[0]
    assert y is out
    np.testing.assert_array_equal(y, np.maximum(x, 0))
    xi = conv(x)                    # in place: the output is the input's storage
    assert op.forward(np, [xi], [], True, out=[xi])[0] is xi
    np.testing.assert_array_equal(xi, np.maximum(x, 0))
    gs, dest = conv(dy), conv(np.zeros_like(x))
    g = op.backward(np, [gs], [None], [y], [], [True], grad_out=[dest])[0]
    assert g is dest
    np.testing.assert_array_equal(g, dy * (x > 0))
    g2 = op.backward(np, [gs], [None], [y], [], [True], grad_out=[y])[0]   # over y
    assert g2 is y
    np.testing.assert_array_equal(g2, dy * (x > 0))
    assert backend.calls['eltwise_forward'] == fwd + 2
    assert backend.calls['relu_backward_from_output'] == bwd + 2
    # mixed layouts: NumPy, same values
    g3 = op.backward(np, [np.array(dy)], [None], [_channels_last(np.maximum(x, 0))], [],
                     [True], grad_out=[np.zeros_like(x)])[0]
    np.testing.assert_array_equal(g3, dy * (x > 0))
    assert backend.calls['relu_backward_from_output'] == bwd + 2
