"""The fused RNN operator through oneDNN's RNN primitives (symgraph/backend/onednn/rnn.py):
outputs, states and every gradient equal the NumPy path's (the reference, checked against
MXNet's golden files in test_rnn.py) at float32 rounding, for every mode, stacked and
bidirectional, with projection (LSTMP) and with dropout between layers; a backward without
the forward's kept workspaces runs oneDNN's training forward again; bfloat16 runs oneDNN's
bf16 kernels where the CPU has AVX-512 BF16 and float32-and-round elsewhere, within
bfloat16 rounding of MXNet 1.9.1 (tests/golden/make_rnn_onednn.py); state clipping and
sequence lengths stay on NumPy."""
import os

import numpy as np
import pytest

import symgraph as mx
from symgraph.backend import onednn
from symgraph.backend.onednn import _lib, routing
from symgraph.opdef import Kept, bfloat16, get_op

GOLDEN = os.path.join(os.path.dirname(__file__), '..', 'golden', 'data', 'rnn_onednn.npz')

MODES = ('lstm', 'gru', 'rnn_tanh', 'rnn_relu')


@pytest.fixture
def backend(monkeypatch):
    """The backend (freshly loaded by conftest.py), the RNN's modes all routed."""
    be = onednn.backend()
    if be is None:
        pytest.skip('oneDNN is not available on this machine')
    monkeypatch.setattr(routing, 'RNN_MODES', MODES)
    return be


def _refused(backend):
    """Whether this machine's oneDNN declined an RNN primitive (cached as None): the NumPy
    path then ran, which the comparisons below accept (oneDNN's CPU dispatch differs by
    ISA)."""
    return any(p is None and k[0] in ('rnn_forward', 'rnn_backward')
               for k, p in backend._thread().cache.items())


def _inputs(op, T, N, C, seed=0):
    rng = np.random.RandomState(seed)
    shapes, _, _ = op.infer_shape([(T, N, C)] + [None] * (len(op.list_arguments()) - 1))
    ins = [rng.uniform(-1, 1, s).astype(np.float32) for s in shapes]
    ins[1] *= 0.5 / np.sqrt(op.state_size)
    return ins


def _step(op, ins, is_train=True, state=None, seed=1):
    outs = op.forward(np, ins, [], is_train, state=state)
    rng = np.random.RandomState(seed)
    heads = [rng.uniform(-1, 1, o.shape).astype(np.float32) for o in outs[:-1]]
    grads = op.backward(np, heads + [None], ins, outs, [], [True] * len(ins), state=state)
    return outs[:-1], grads


def _both(monkeypatch, backend, op, ins, **kw):
    calls = dict(backend.calls)
    got = _step(op, ins, state=Kept(), **kw)
    ran = {k: backend.calls.get(k, 0) - calls.get(k, 0) for k in ('rnn_forward',
                                                                   'rnn_backward')}
    monkeypatch.setattr(routing, 'RNN_MODES', ())
    want = _step(op, ins, state=Kept(), **kw)
    monkeypatch.setattr(routing, 'RNN_MODES', MODES)
    return got, want, ran


def _close(got, want):
    for a, b in zip(got[0] + got[1], want[0] + want[1]):
        assert (a is None) == (b is None)
        if a is not None:
            scale = max(1.0, float(np.abs(b).max()))
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=2e-6 * scale)


@pytest.mark.parametrize('mode', MODES)
@pytest.mark.parametrize('layers,bidirectional', [(1, False), (2, False), (1, True),
                                                  (3, True)])
def test_matches_numpy_path(mode, layers, bidirectional, backend, monkeypatch):
    op = get_op('RNN')(mode=mode, state_size=6, num_layers=layers,
                       bidirectional=bidirectional, state_outputs=True)
    ins = _inputs(op, T=5, N=3, C=4)
    got, want, ran = _both(monkeypatch, backend, op, ins)
    _close(got, want)
    if not _refused(backend):
        assert ran == {'rnn_forward': layers, 'rnn_backward': layers}


@pytest.mark.parametrize('mode', ['lstm', 'gru'])
def test_without_state_outputs_and_kept_workspace(mode, backend, monkeypatch):
    """No state outputs (the states' head gradients are zero), and no state kept: the
    backward runs oneDNN's training forward again for its workspaces."""
    op = get_op('RNN')(mode=mode, state_size=5, num_layers=2, bidirectional=True)
    ins = _inputs(op, T=4, N=2, C=3, seed=3)
    calls = dict(backend.calls)
    outs = op.forward(np, ins, [], False)        # inference: nothing kept
    dy = np.random.RandomState(4).uniform(-1, 1, outs[0].shape).astype(np.float32)
    got = op.backward(np, [dy, None], ins, outs, [], [True] * len(ins))
    monkeypatch.setattr(routing, 'RNN_MODES', ())
    outs_np = op.forward(np, ins, [], True)
    want = op.backward(np, [dy, None], ins, outs_np, [], [True] * len(ins))
    _close(([outs[0]], got), ([outs_np[0]], want))
    if not _refused(backend):
        assert backend.calls['rnn_forward'] - calls.get('rnn_forward', 0) == 4
        assert backend.calls['rnn_backward'] - calls.get('rnn_backward', 0) == 2


def test_gradient_numerically(backend):
    """The oneDNN path's parameter and data gradients against central differences of its
    own forward (float32: a loose tolerance)."""
    op = get_op('RNN')(mode='lstm', state_size=3, num_layers=2, state_outputs=True)
    ins = _inputs(op, T=3, N=2, C=2, seed=5)
    ins[1] *= 4
    rng = np.random.RandomState(6)
    outs = op.forward(np, ins, [], True, state=Kept())
    heads = [rng.uniform(-1, 1, o.shape).astype(np.float32) for o in outs[:-1]]

    def loss():
        o = op.forward(np, ins, [], False)
        return sum(float((a.astype(np.float64) * h).sum()) for a, h in zip(o, heads))

    state = Kept()
    outs = op.forward(np, ins, [], True, state=state)
    grads = op.backward(np, heads + [None], ins, outs, [], [True] * len(ins), state=state)
    eps = 1e-2
    for which in (0, 1, 2, 3):
        flat = ins[which].reshape(-1)
        for i in rng.choice(flat.size, size=min(6, flat.size), replace=False):
            old = flat[i]
            flat[i] = old + eps
            up = loss()
            flat[i] = old - eps
            down = loss()
            flat[i] = old
            num = (up - down) / (2 * eps)
            assert abs(grads[which].reshape(-1)[i] - num) <= 2e-3 + 2e-2 * abs(num), \
                (which, i, grads[which].reshape(-1)[i], num)


@pytest.mark.parametrize('kw', [dict(lstm_state_clip_min=-0.5, lstm_state_clip_max=0.5),
                                dict(use_sequence_length=True)])
def test_cases_not_taken_stay_on_numpy(kw, backend):
    op = get_op('RNN')(mode='lstm', state_size=4, num_layers=2, state_outputs=True, **kw)
    ins = _inputs(op, T=3, N=2, C=3)
    if op.use_sequence_length:
        ins[-1] = np.array([3, 2], np.float32)
    calls = dict(backend.calls)
    _step(op, ins, state=Kept())
    assert backend.calls.get('rnn_forward', 0) == calls.get('rnn_forward', 0)
    assert backend.calls.get('rnn_backward', 0) == calls.get('rnn_backward', 0)


def test_executor_training_steps_keep_the_workspace(backend, monkeypatch):
    """A bound LSTM trained for steps (weights changing between them) through oneDNN: each
    backward reads its own forward's workspaces (one training forward per step), and the
    gradients equal the NumPy path's."""
    def bind():
        s = mx.sym.RNN(mx.sym.var('data'), mx.sym.var('parameters'), mx.sym.var('state'),
                       mx.sym.var('state_cell'), mode='lstm', state_size=8, num_layers=2,
                       state_outputs=True, name='lstm')
        exe = s.simple_bind(mx.cpu(), grad_req='write', data=(4, 3, 5), state=(2, 3, 8),
                            state_cell=(2, 3, 8))
        rng = np.random.RandomState(0)
        for name, a in exe.arg_dict.items():
            a[:] = rng.uniform(-0.3, 0.3, a.shape)
        heads = [mx.nd.array(rng.uniform(-1, 1, o.shape)) for o in exe.outputs]
        return exe, heads

    def train(steps=3):
        exe, heads = bind()
        seen = []
        for _ in range(steps):
            exe.forward(is_train=True)
            exe.backward(heads)
            g = exe.grad_dict['parameters'].asnumpy()
            seen.append(g.copy())
            p = exe.arg_dict['parameters']
            p[:] = p.asnumpy() - 0.5 * g
        return seen

    calls = dict(backend.calls)
    got = train()
    ran = backend.calls.get('rnn_forward', 0) - calls.get('rnn_forward', 0)
    monkeypatch.setattr(routing, 'RNN_MODES', ())
    want = train()
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    if not _refused(backend):
        assert ran == 3 * 2       # two layers a step, no forward run again for a backward


def test_workspaces_are_reused_and_entries_bounded(backend):
    """The Step keeps the workspaces of a few calls only, and a forward takes those of a
    call whose output is gone instead of allocating (fresh tens of MB each call cost page
    faults)."""
    op = get_op('RNN')(mode='lstm', state_size=4, num_layers=2, state_outputs=True)
    step = op.bind(None, None, None)
    state = step.state
    ins = _inputs(op, T=3, N=2, C=3)
    seen = {}           # id -> the workspace itself (held: ids stay unique)
    for _ in range(6):
        outs, grads = _step(op, ins, state=state)
        del outs, grads
        for _, _, v in list(state._entries.values()):
            seen.update((id(ws), ws) for _, _, ws in v[0])
    assert len(state._entries) <= 2
    if not _refused(backend):
        assert 2 <= len(seen) <= 4      # two layers' workspaces, in at most two sets


# ---------------------------------------------------------------------- projection (LSTMP)
@pytest.mark.parametrize('layers,bidirectional', [(1, False), (2, False), (1, True),
                                                  (2, True)])
def test_projection_matches_numpy_path(layers, bidirectional, backend, monkeypatch):
    op = get_op('RNN')(mode='lstm', state_size=6, projection_size=3, num_layers=layers,
                       bidirectional=bidirectional, state_outputs=True)
    ins = _inputs(op, T=5, N=3, C=4, seed=7)
    got, want, ran = _both(monkeypatch, backend, op, ins)
    assert got[0][0].shape == (5, 3, (2 if bidirectional else 1) * 3)
    _close(got, want)
    if not _refused(backend):
        assert ran == {'rnn_forward': layers, 'rnn_backward': layers}


def _golden(case):
    data = np.load(GOLDEN)
    pre = case + '|'
    ins = {k[len(pre) + 3:]: data[k] for k in data.files if k.startswith(pre + 'in|')}
    outs = [data['%s|out|%d' % (case, i)] for i in range(3)
            if '%s|out|%d' % (case, i) in data.files]
    heads = [data['%s|head|%d' % (case, i)] for i in range(3)
             if '%s|head|%d' % (case, i) in data.files]
    grads = {k[len(pre) + 5:]: data[k] for k in data.files if k.startswith(pre + 'grad|')}
    return ins, outs, heads, grads


@pytest.mark.parametrize('case', ['lstmp_l1_uni', 'lstmp_l2_uni', 'lstmp_l1_bi',
                                  'lstmp_l2_bi'])
def test_projection_against_mxnet(case, backend):
    """LSTMP's forward on oneDNN against MXNet 1.9.1's (inference: MXNet's CPU build has
    no LSTMP training); the layout of MXNet's h2r weights is oneDNN's projection read
    through strides."""
    ins, want, _, _ = _golden(case)
    layers, bi = int(case.split('_')[1][1]), case.endswith('bi')
    op = get_op('RNN')(mode='lstm', state_size=6, projection_size=3, num_layers=layers,
                       bidirectional=bi, state_outputs=True)
    calls = dict(backend.calls)
    args = [ins[k] for k in op.list_arguments()]
    outs = op.forward(np, args, [], False)[:-1]
    for a, b in zip(outs, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    if not _refused(backend):
        assert backend.calls['rnn_forward'] - calls.get('rnn_forward', 0) == layers


def test_projection_gradient_numerically(backend):
    """LSTMP's gradients on oneDNN (every input, the h2r weights among the parameters)
    against central differences of its forward, bidirectional over two layers."""
    op = get_op('RNN')(mode='lstm', state_size=4, projection_size=2, num_layers=2,
                       bidirectional=True, state_outputs=True)
    ins = [a.astype(np.float64).astype(np.float32) for a in _inputs(op, T=3, N=2, C=3,
                                                                     seed=8)]
    ins[1] *= 4
    rng = np.random.RandomState(9)
    state = Kept()
    calls = dict(backend.calls)
    outs = op.forward(np, ins, [], True, state=state)
    heads = [rng.uniform(-1, 1, o.shape).astype(np.float32) for o in outs[:-1]]
    grads = op.backward(np, heads + [None], ins, outs, [], [True] * len(ins), state=state)
    if not _refused(backend):
        assert backend.calls['rnn_backward'] - calls.get('rnn_backward', 0) == 2

    def loss():
        o = op.forward(np, ins, [], False)
        return sum(float((a.astype(np.float64) * h).sum()) for a, h in zip(o, heads))

    # the h2r weights of the first layer's two directions, and a few others
    G, H, P, C = 4, 4, 2, 3
    ds0 = G * H * C + G * H * P + P * H
    picks = {1: [G * H * (C + P), G * H * (C + P) + 5, ds0 + G * H * (C + P) + 3]}
    eps = 1e-2
    for which in (0, 1, 2, 3):
        flat = ins[which].reshape(-1)
        idx = list(rng.choice(flat.size, size=min(6, flat.size), replace=False))
        for i in idx + picks.get(which, []):
            old = flat[i]
            flat[i] = old + eps
            up = loss()
            flat[i] = old - eps
            down = loss()
            flat[i] = old
            num = (up - down) / (2 * eps)
            assert abs(grads[which].reshape(-1)[i] - num) <= 2e-3 + 2e-2 * abs(num), \
                (which, i, grads[which].reshape(-1)[i], num)


# ---------------------------------------------------------------------- dropout
@pytest.mark.parametrize('mode,bidirectional,proj', [('lstm', False, None),
                                                     ('gru', True, None),
                                                     ('lstm', True, 2)])
def test_dropout_between_layers_matches_numpy_path(mode, bidirectional, proj, backend,
                                                   monkeypatch):
    """p > 0 in training: oneDNN layer by layer, the masks between layers drawn as the
    NumPy path draws them (a seeded run drops the same positions), in the forward and,
    multiplied into the gradient, in the backward; the dropout does drop."""
    op = get_op('RNN')(mode=mode, state_size=5, num_layers=3, bidirectional=bidirectional,
                       state_outputs=True, p=0.4, projection_size=proj)
    ins = _inputs(op, T=4, N=3, C=3, seed=10)
    calls = dict(backend.calls)
    np.random.seed(11)
    got = _step(op, ins, state=Kept())
    ran = backend.calls.get('rnn_backward', 0) - calls.get('rnn_backward', 0)
    monkeypatch.setattr(routing, 'RNN_MODES', ())
    np.random.seed(11)
    want = _step(op, ins, state=Kept())
    _close(got, want)
    np.random.seed(12)
    other = _step(op, ins, state=Kept())
    assert not np.allclose(other[0][0], want[0][0])     # other masks, other outputs
    no_drop = get_op('RNN')(mode=mode, state_size=5, num_layers=3, state_outputs=True,
                            bidirectional=bidirectional, projection_size=proj)
    assert not np.allclose(_step(no_drop, ins)[0][0], want[0][0])
    if not _refused(backend):
        assert ran == 3


def test_dropout_backward_without_kept_state_reads_the_reserve_masks(backend,
                                                                     monkeypatch):
    """A training forward with dropout whose state is gone: the backward runs oneDNN's
    training forward again with the masks the forward wrote to the reserve."""
    op = get_op('RNN')(mode='lstm', state_size=4, num_layers=2, p=0.5)
    ins = _inputs(op, T=3, N=2, C=3, seed=13)
    dy = np.random.RandomState(14).uniform(-1, 1, (3, 2, 4)).astype(np.float32)
    np.random.seed(15)
    outs = op.forward(np, ins, [], True)          # nothing kept
    got = op.backward(np, [dy, None], ins, outs, [], [True] * len(ins))
    monkeypatch.setattr(routing, 'RNN_MODES', ())
    np.random.seed(15)
    outs_np = op.forward(np, ins, [], True)
    want = op.backward(np, [dy, None], ins, outs_np, [], [True] * len(ins))
    _close(([outs[0]], got), ([outs_np[0]], want))


def test_dropout_inference_is_the_plain_stack(backend, monkeypatch):
    op = get_op('RNN')(mode='lstm', state_size=4, num_layers=2, p=0.5, state_outputs=True)
    plain = get_op('RNN')(mode='lstm', state_size=4, num_layers=2, state_outputs=True)
    ins = _inputs(op, T=3, N=2, C=3, seed=16)
    a = op.forward(np, ins, [], False)
    b = plain.forward(np, ins, [], False)
    for x, y in zip(a[:-1], b[:-1]):
        np.testing.assert_array_equal(x, y)


# ---------------------------------------------------------------------- bfloat16
def _native_bf16(backend, monkeypatch):
    """oneDNN's bf16 RNN primitives routed on (``routing.RNN_BF16``, off by default: not
    faster than float32-and-round here), or a skip below AVX-512 BF16."""
    if not _lib.has_bf16(_lib.effective_isa(backend.lib)):
        pytest.skip("oneDNN has no native bfloat16 kernels on this CPU's ISA")
    monkeypatch.setattr(routing, 'RNN_BF16', True)


def _bf16_close(got, want, tol=0.015, mean_tol=0.002):
    """bfloat16 against float32: every element within ``tol`` of the array's largest
    magnitude (8 bits of mantissa, rounded at each step and layer), and the mean error
    well below it."""
    for a, b in zip(got, want):
        assert (a is None) == (b is None)
        if a is None:
            continue
        a = np.asarray(a, np.float32)
        scale = max(1.0, float(np.abs(b).max()))
        err = np.abs(a - b)
        assert err.max() <= tol * scale, (err.max(), scale)
        assert err.mean() <= mean_tol * scale, (err.mean(), scale)


@pytest.mark.parametrize('mode', MODES)
def test_bf16_kernels_match_float32(mode, backend, monkeypatch):
    """bfloat16 data, parameters and states through oneDNN's bf16 RNN (AVX-512 BF16):
    outputs and gradients in bfloat16, within bfloat16 rounding of the float32 NumPy path
    on the same (rounded) values."""
    _native_bf16(backend, monkeypatch)
    bf = bfloat16()
    op = get_op('RNN')(mode=mode, state_size=8, num_layers=2, bidirectional=True,
                       state_outputs=True)
    ins = [a.astype(bf) for a in _inputs(op, T=5, N=3, C=4, seed=17)]
    calls = dict(backend.calls)
    outs, grads = _step(op, ins, state=Kept())
    assert backend.calls['rnn_forward'] - calls.get('rnn_forward', 0) == 2
    assert backend.calls['rnn_backward'] - calls.get('rnn_backward', 0) == 2
    assert all(o.dtype == bf for o in outs) and all(g.dtype == bf for g in grads)
    monkeypatch.setattr(routing, 'RNN_MODES', ())
    want = _step(op, [a.astype(np.float32) for a in ins], state=Kept())
    _bf16_close(outs + grads, want[0] + want[1])


def test_bf16_projection_inference_on_onednn(backend, monkeypatch):
    """bfloat16 LSTMP: oneDNN's bf16 forward in inference; training (oneDNN 3.2 has no
    bf16 LSTMP backward) computes in float32 and rounds."""
    _native_bf16(backend, monkeypatch)
    bf = bfloat16()
    op = get_op('RNN')(mode='lstm', state_size=8, projection_size=4, num_layers=2,
                       bidirectional=True, state_outputs=True)
    ins = [a.astype(bf) for a in _inputs(op, T=5, N=3, C=4, seed=18)]
    calls = dict(backend.calls)
    outs = op.forward(np, ins, [], False)[:-1]
    assert backend.calls['rnn_forward'] - calls.get('rnn_forward', 0) == 2
    got = _step(op, ins, state=Kept())
    monkeypatch.setattr(routing, 'RNN_MODES', ())
    want = _step(op, [a.astype(np.float32) for a in ins], state=Kept())
    assert all(o.dtype == bf for o in outs + got[0] + got[1])
    _bf16_close(outs, want[0])
    _bf16_close(got[0] + got[1], want[0] + want[1])


def test_bf16_without_kernels_computes_in_float32_and_rounds(backend, monkeypatch):
    """bfloat16 where no bf16 kernel runs (here: every RNN sent to NumPy): the float32
    path on widened copies, results rounded to bfloat16: exactly the float32 results
    rounded."""
    bf = bfloat16()
    monkeypatch.setattr(routing, 'RNN_MODES', ())
    op = get_op('RNN')(mode='lstm', state_size=5, num_layers=2, state_outputs=True)
    ins = [a.astype(bf) for a in _inputs(op, T=4, N=2, C=3, seed=19)]
    outs, grads = _step(op, ins, state=Kept())
    want = _step(op, [a.astype(np.float32) for a in ins], state=Kept())
    for a, b in zip(outs + grads, want[0] + want[1]):
        assert a.dtype == bf
        np.testing.assert_array_equal(a.astype(np.float32), b.astype(bf).astype(np.float32))


@pytest.mark.parametrize('bf16_kernels', [False, True])
@pytest.mark.parametrize('mode', ['lstm', 'gru'])
def test_bf16_against_mxnet(mode, bf16_kernels, backend, monkeypatch):
    """Against MXNet 1.9.1, which runs RNN in float32 in a bfloat16 network (AMP's
    FP32_FUNCS; it has no bf16 RNN): its outputs and gradients on the bfloat16-rounded
    inputs, which this operator's bfloat16 results (float32 and rounded, by default; or
    oneDNN's bf16 kernels, with AVX-512 BF16) must match within bfloat16 rounding."""
    if bf16_kernels:
        _native_bf16(backend, monkeypatch)
    bf = bfloat16()
    ins, want, heads, grads = _golden('bf16_' + mode)
    op = get_op('RNN')(mode=mode, state_size=8, num_layers=2, bidirectional=True,
                       state_outputs=True)
    names = op.list_arguments()
    args = [ins[k].astype(bf) for k in names]
    state = Kept()
    outs = op.forward(np, args, [], True, state=state)
    got = op.backward(np, [h.astype(bf) for h in heads] + [None], args, outs, [],
                      [True] * len(args), state=state)
    _bf16_close(outs[:-1] + got, want + [grads[k] for k in names])


@pytest.mark.parametrize('p', [0.0, 0.3])
def test_bf16_routed_off_runs_float32_kernels_and_rounds(p, backend, monkeypatch):
    """``routing.RNN_BF16`` off: a bfloat16 RNN runs oneDNN's float32 primitives on
    widened copies, the backward on the float32 copies and workspaces its forward kept
    (no forward again), and its results are exactly theirs rounded (with dropout: the
    same masks for the same seed)."""
    bf = bfloat16()
    monkeypatch.setattr(routing, 'RNN_BF16', False)
    op = get_op('RNN')(mode='gru', state_size=5, num_layers=2, bidirectional=True,
                       state_outputs=True, p=p)
    ins = [a.astype(bf) for a in _inputs(op, T=4, N=2, C=3, seed=20)]
    calls = dict(backend.calls)
    np.random.seed(21)
    outs, grads = _step(op, ins, state=Kept())
    if not _refused(backend):
        assert backend.calls['rnn_forward'] - calls.get('rnn_forward', 0) == 2
        assert backend.calls['rnn_backward'] - calls.get('rnn_backward', 0) == 2
    np.random.seed(21)
    want = _step(op, [a.astype(np.float32) for a in ins], state=Kept())
    for a, b in zip(outs + grads, want[0] + want[1]):
        assert a.dtype == bf
        np.testing.assert_array_equal(a.astype(np.float32), b.astype(bf).astype(np.float32))
