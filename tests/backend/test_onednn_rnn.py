"""The fused RNN operator through oneDNN's RNN primitives (symgraph/backend/onednn/rnn.py):
outputs, states and every gradient equal the NumPy path's (the reference, checked against
MXNet's golden files in test_rnn.py) at float32 rounding, for every mode, stacked and
bidirectional; a backward without the forward's kept workspaces runs oneDNN's training
forward again; the cases the kernels do not take stay on NumPy."""
import numpy as np
import pytest

import symgraph as mx
from symgraph.backend import onednn
from symgraph.backend.onednn import routing
from symgraph.opdef import Kept, get_op

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


@pytest.mark.parametrize('kw', [dict(projection_size=3), dict(p=0.3),
                                dict(lstm_state_clip_min=-0.5, lstm_state_clip_max=0.5),
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
