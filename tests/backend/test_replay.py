"""The CPU backend's replays (``BackendCore.record`` / ``replay``): an operator's call on the
very arrays of an earlier one runs that call's primitives again without working the call
out anew. The recorded calls live in the memo the caller passes (its Step's
``replays``): the backend keeps no table of its own. A replay must never run on anything
but those arrays, alive: a new array, a dead one (its memory reused), another Step's memo,
or a call that made arrays of its own are worked out afresh."""
import gc
import threading

import numpy as np
import pytest

import symgraph as mx
from symgraph.backend import onednn
from symgraph.opdef import cpu_backend
from symgraph.ops._conv_impl import conv_forward


def _available():
    be = onednn.backend()
    if be is None:
        pytest.skip('oneDNN is not available on this machine')
    return be


def Owner():
    """Stands for a Step's memo (:attr:`symgraph.opdef.Step.replays`)."""
    return {}


def _replays(be, monkeypatch):
    """A list that grows by one for each replay the backend runs."""
    done = []
    replay = type(be).replay

    def counted(self, memo, tag, arrays):
        ok = replay(self, memo, tag, arrays)
        if ok:
            done.append(tag)
        return ok
    monkeypatch.setattr(type(be), 'replay', counted)
    # (operators get the kernel from the backend's kernel table, cpu_kernel's)
    monkeypatch.setitem(onednn.KERNEL_TABLE, 'replay', counted.__get__(be))
    return done


def _conv_checked(x, w, y, site):
    """A 3x3 convolution (pad 1) of x into y at ``site``, checked against float64 NumPy."""
    got = conv_forward(np, x, w, None, (1, 1), (1, 1), (1, 1), 1, dest=y, site=site)
    want = conv_forward(np, x.astype(np.float64), w.astype(np.float64), None, (1, 1),
                        (1, 1), (1, 1), 1)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    return got


@pytest.fixture
def counted(monkeypatch):
    """(the backend, the list of its replays, a call site's memo)."""
    be = _available()
    return be, _replays(be, monkeypatch), Owner()


def test_a_call_on_the_same_arrays_is_replayed_with_their_new_values(counted):
    be, done, owner = counted
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, (2, 8, 6, 6)).astype(np.float32)
    w = rng.uniform(-1, 1, (4, 8, 3, 3)).astype(np.float32)
    y = np.empty((2, 4, 6, 6), np.float32)
    before = be.calls.get('conv_forward', 0)
    for k in range(4):
        x[...] = rng.uniform(-1, 1, x.shape)        # new values, the same arrays
        w[...] = rng.uniform(-1, 1, w.shape)
        assert _conv_checked(x, w, y, (owner, 'f')) is y
    assert done == ['f'] * 3            # recorded by the first call, replayed after
    assert be.calls['conv_forward'] - before == 4       # replays are counted too


def test_new_arrays_in_any_place_are_worked_out_afresh(counted):
    """Another data array (another shape), another destination: no replay, exact values."""
    _, done, owner = counted
    rng = np.random.RandomState(1)
    w = rng.uniform(-1, 1, (4, 8, 3, 3)).astype(np.float32)
    for k, shape in enumerate([(2, 8, 6, 6), (2, 8, 6, 6), (3, 8, 5, 7), (2, 8, 6, 6)]):
        x = rng.uniform(-1, 1, shape).astype(np.float32)
        y = np.empty((shape[0], 4) + shape[2:], np.float32)
        _conv_checked(x, w, y, (owner, 'f'))
    assert done == []


def test_one_operator_in_two_executors_replays_for_each(counted):
    """A symbol bound twice (two executors alternating, as a training and an evaluation
    module may) shares its operators: each executor's arrays keep their own recording."""
    _, done, owner = counted
    rng = np.random.RandomState(6)
    w = rng.uniform(-1, 1, (4, 8, 3, 3)).astype(np.float32)
    sets = [(rng.uniform(-1, 1, s).astype(np.float32),
             np.empty((s[0], 4) + s[2:], np.float32)) for s in [(2, 8, 6, 6), (3, 8, 5, 5)]]
    for _ in range(3):
        for x, y in sets:
            x[...] = rng.uniform(-1, 1, x.shape)
            assert _conv_checked(x, w, y, (owner, 'f')) is y
    assert done == ['f'] * 4        # each recorded once, then replayed twice


def test_threads_replay_their_own_calls_of_one_site(counted):
    """One operator on two threads (Module's device threads share the symbol), each on
    arrays of its own: each thread records and replays its own calls."""
    _, done, owner = counted
    errors = []

    def work(seed, shape):
        try:
            rng = np.random.RandomState(seed)
            x = np.empty(shape, np.float32)
            w = np.empty((4, 8, 3, 3), np.float32)
            y = np.empty((shape[0], 4) + shape[2:], np.float32)
            for _ in range(5):
                x[...] = rng.uniform(-1, 1, x.shape)
                w[...] = rng.uniform(-1, 1, w.shape)
                assert _conv_checked(x, w, y, (owner, 'f')) is y
        except Exception as e:      # (reported in the main thread)
            errors.append(e)
    threads = [threading.Thread(target=work, args=(k, s))
               for k, s in enumerate([(2, 8, 6, 6), (3, 8, 7, 5)])]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert done == ['f'] * 8        # 4 replays a thread


def test_a_dead_array_matches_neither_none_nor_a_new_array_at_its_address(monkeypatch):
    """What a replay guards against: a destination that died (its memory free, its id
    reusable) must not be written through the recorded address, whether the next call
    offers no array in its place or a new one."""
    be = _available()
    rng = np.random.RandomState(2)
    owner = Owner()
    a = rng.uniform(-1, 1, 4096).astype(np.float32)
    b = rng.uniform(-1, 1, 4096).astype(np.float32)

    def kept():
        out = np.empty(4096, np.float32)
        assert be.record(owner, 't', (a, b, out), lambda: be.add(a, b, out=out), 2) is out
        assert be.replay(owner, 't', (a, b, out))       # kept
    kept()      # its destination dies with the call
    gc.collect()
    assert not be.replay(owner, 't', (a, b, None))
    for _ in range(20):     # new arrays, some likely at the dead one's id and address
        new = np.empty(4096, np.float32)
        assert not be.replay(owner, 't', (a, b, new))


def test_the_calls_live_in_the_callers_memo_only():
    """Another memo (another Step) replays nothing of this one's; the backend keeps no
    table: a memo dropped with its Step takes its recorded calls along."""
    be = _available()
    a = np.ones(4096, np.float32)
    out = np.empty_like(a)
    memo = Owner()
    be.record(memo, 't', (a, a, out), lambda: be.add(a, a, out=out), 2)
    assert be.replay(memo, 't', (a, a, out))
    assert len(memo) == 1
    others = [Owner() for _ in range(50)]
    assert not any(be.replay(o, 't', (a, a, out)) for o in others)
    assert not any(hasattr(be._local, k) for k in ('replays', 'memo'))
    memo.clear()
    assert not be.replay(memo, 't', (a, a, out))


def test_a_memo_drops_the_calls_of_dead_arrays_at_its_limit():
    """A Step that mx.nd shares sees new arrays at each call: its memo keeps at most
    MEMO_LIMIT calls, dropping those whose arrays died first."""
    from symgraph.backend.onednn._core import MEMO_LIMIT
    be = _available()
    memo = Owner()
    a = np.ones(64, np.float32)
    live = []
    for k in range(MEMO_LIMIT + 10):
        out = np.empty_like(a)
        be.record(memo, 't', (out, a, out), lambda: be.add(a, a, out=out), 2)
        if k % 2:
            live.append(out)
    assert len(memo) <= MEMO_LIMIT
    assert be.replay(memo, 't', (live[-1], a, live[-1]))


def test_calls_that_make_their_own_arrays_are_not_kept():
    be = _available()
    rng = np.random.RandomState(3)
    owner = Owner()
    a = rng.uniform(-1, 1, 4096).astype(np.float32)
    # a result of its own (no destination offered)
    y = be.record(owner, 'new', (a, a, None), lambda: be.add(a, a), 2)
    np.testing.assert_array_equal(y, a + a)
    assert not be.replay(owner, 'new', (a, a, None))
    # data the call copied first (Fortran order: oneDNN is handed a C-order copy)
    x = np.asfortranarray(rng.uniform(-1, 1, (2, 8, 6, 6)).astype(np.float32))
    w = rng.uniform(-1, 1, (4, 8, 3, 3)).astype(np.float32)
    dest = np.empty((2, 4, 6, 6), np.float32)
    _conv_checked(x, w, dest, (owner, 'copy'))
    assert not be.replay(owner, 'copy', (x, w, None, dest))
    # a call that declines (None) keeps nothing either
    assert be.record(owner, 'no', (a, a[:10], None), lambda: be.add(a, a[:10]), 2) is None
    assert not be.replay(owner, 'no', (a, a[:10], None))


def test_calls_with_constant_arguments_are_not_kept():
    """Constant weights are reordered again when the caller's token changes: a replay
    would repeat the recorded token, so such calls are never kept."""
    be = _available()
    rng = np.random.RandomState(4)
    owner = Owner()
    x = rng.uniform(-1, 1, (2, 8, 6, 6)).astype(np.float32)
    w = rng.uniform(-1, 1, (4, 8, 3, 3)).astype(np.float32)
    b = np.zeros(4, np.float32)
    y = np.empty((2, 4, 6, 6), np.float32)
    got = be.record(owner, 'c', (x, w, b, y), lambda: be.conv_forward_fused(
        x, w, b, (1, 1), (1, 1), (1, 1), 1, y.shape, token=1, out=y), 3)
    assert got is y
    assert not be.replay(owner, 'c', (x, w, b, y))


def test_a_recording_inside_another_keeps_only_the_outer_one():
    be = _available()
    owner = Owner()
    a = np.full(4096, 2.0, np.float32)
    out1, out2 = np.empty_like(a), np.empty_like(a)

    def outer():
        be.record(owner, 'inner', (a, a, out1), lambda: be.add(a, a, out=out1), 2)
        return be.add(out1, a, out=out2)
    assert be.record(owner, 'outer', (a, a, out1, out2), outer, 3) is out2
    assert not be.replay(owner, 'inner', (a, a, out1))
    a[...] = 3.0
    assert be.replay(owner, 'outer', (a, a, out1, out2))      # both primitives again
    np.testing.assert_array_equal(out2, np.full(4096, 9.0, np.float32))


def test_switched_off_nothing_is_kept(monkeypatch):
    be = _available()
    assert be.replays
    be.replays = False
    owner = Owner()
    a = np.ones(4096, np.float32)
    out = np.empty_like(a)
    be.record(owner, 't', (a, a, out), lambda: be.add(a, a, out=out), 2)
    be.replays = True
    assert not be.replay(owner, 't', (a, a, out))
    # SYMGRAPH_ONEDNN_REPLAY=0 at load switches it off
    monkeypatch.setenv('SYMGRAPH_ONEDNN_REPLAY', '0')
    onednn.reset()
    be = _available()
    assert not be.replays
    be.record(owner, 't', (a, a, out), lambda: be.add(a, a, out=out), 2)
    assert not be.replay(owner, 't', (a, a, out))
    np.testing.assert_array_equal(out, a + a)


# ------------------------------------------------------------------ whole training steps
def _net(fix_gamma):
    """A residual block with every replayed operator: convolutions, BatchNorm (+ relu,
    fused in training), a residual add + relu; then max pooling, a convolution, global
    average pooling (its gradient into the plan's channels-last buffer), FullyConnected."""
    x = mx.sym.var('data')
    h = mx.sym.Convolution(x, num_filter=8, kernel=(3, 3), pad=(1, 1), no_bias=True,
                           name='c1')
    h = mx.sym.BatchNorm(h, fix_gamma=fix_gamma, name='bn1')
    h = mx.sym.Activation(h, act_type='relu', name='r1')
    h = mx.sym.Convolution(h, num_filter=8, kernel=(3, 3), pad=(1, 1), name='c2')
    h = mx.sym.BatchNorm(h, fix_gamma=fix_gamma, name='bn2')
    s = mx.sym.Convolution(x, num_filter=8, kernel=(1, 1), name='proj')
    h = mx.sym.Activation(h + s, act_type='relu', name='r2')
    h = mx.sym.Pooling(h, kernel=(2, 2), stride=(2, 2), pool_type='max', name='p')
    h = mx.sym.Convolution(h, num_filter=16, kernel=(3, 3), pad=(1, 1), name='c3')
    h = mx.sym.Pooling(h, kernel=(1, 1), global_pool=True, pool_type='avg', name='gp')
    h = mx.sym.FullyConnected(h, num_hidden=5, name='fc')
    return mx.sym.SoftmaxOutput(h, name='softmax')


def _train(be, on, fix_gamma, rebind):
    """Seven steps (an inference forward before the third, as evaluation in
    ``Module.fit`` has it), rebinding before the fifth when ``rebind`` (the first
    executor's arrays die: their ids and memory are free for the second's): every output,
    gradient, argument and auxiliary state along the way."""
    if be is not None:
        be.replays = on
    net = _net(fix_gamma)
    rng = np.random.RandomState(5)
    got = []

    def bind():
        exe = net.simple_bind(mx.cpu(), data=(4, 3, 12, 12), grad_req={
            k: 'null' if k in ('data', 'softmax_label') else 'write'
            for k in net.list_arguments()})
        for k, a in sorted(exe.arg_dict.items()):
            a[:] = rng.randint(0, 5, a.shape) if k == 'softmax_label' \
                else rng.uniform(-0.5, 0.5, a.shape)
        return exe
    exe = bind()
    for step in range(7):
        if rebind and step == 4:
            params = {k: a.asnumpy() for k, a in exe.arg_dict.items()}
            aux = {k: a.asnumpy() for k, a in exe.aux_dict.items()}
            del exe
            gc.collect()
            junk = [np.full((4, 8, 12, 12), np.nan, np.float32) for _ in range(8)]
            exe = bind()
            for k, v in params.items():
                exe.arg_dict[k][:] = v
            for k, v in aux.items():
                exe.aux_dict[k][:] = v
            del junk
        exe.arg_dict['data'][:] = rng.uniform(-1, 1, (4, 3, 12, 12))
        if step == 2:
            got.append(exe.forward(is_train=False)[0].asnumpy().copy())
        got.append(exe.forward(is_train=True)[0].asnumpy().copy())
        exe.backward()
        got += [g.asnumpy().copy() for g in exe.grad_arrays if g is not None]
        for k, a in sorted(exe.arg_dict.items()):
            if k not in ('data', 'softmax_label'):
                a -= 0.1 * exe.grad_dict[k]
        got += [a.asnumpy().copy() for a in exe.aux_arrays]
    return got


@pytest.mark.parametrize('fix_gamma', [False, True])
@pytest.mark.parametrize('rebind', [False, True])
def test_training_steps_alike_bit_for_bit_with_replays_on_and_off(monkeypatch, fix_gamma,
                                                                   rebind):
    be = _available()
    done = _replays(be, monkeypatch)
    off = _train(be, False, fix_gamma, rebind)
    assert done == []
    on = _train(be, True, fix_gamma, rebind)
    # every convolution (forward, both gradients), BatchNorm (with and without relu,
    # forward and backward) and the add + relu (forward and backward) replayed
    kinds = {t if isinstance(t, str) else t[0] for t in done}
    assert {'f', 'fr', 'bd', 'bw', 'b'} <= kinds, kinds
    assert len(off) == len(on)
    for k, (u, v) in enumerate(zip(off, on)):
        np.testing.assert_array_equal(u, v, err_msg='array %d' % k)
    # and both are right: NumPy's values (the backend off) to float32 rounding
    monkeypatch.setenv('SYMGRAPH_ONEDNN', '0')
    onednn.reset()
    assert cpu_backend() is None
    ref = _train(None, False, fix_gamma, rebind)
    assert len(ref) == len(on)
    for k, (u, v) in enumerate(zip(ref, on)):
        np.testing.assert_allclose(v, u, rtol=1e-3, atol=1e-4, err_msg='array %d' % k)


def test_the_recorded_calls_live_in_the_plans_steps():
    """After training steps each replaying node's Step holds its own recorded calls (the
    convolutions, BatchNorm, relu, the add + relu), none of another's; a second executor of
    the same symbol has Steps of its own, whose memos start empty; a Step of an operator
    without replays has none."""
    be = _available()
    assert be.replays
    net = _net(False)

    def bind():
        exe = net.simple_bind(mx.cpu(), data=(4, 3, 12, 12))
        for k, a in sorted(exe.arg_dict.items()):
            a[:] = np.random.RandomState(0).uniform(-0.5, 0.5, a.shape)
        return exe

    def memos(exe):
        plan = exe._plan
        got = {}
        for n in plan.steps:
            step = plan.step(n)
            memo = step.replays if step.replays is not None else \
                getattr(step.state, 'replays', None)
            got[n.op.name] = got.get(n.op.name, []) + [memo]
        return got
    exe = bind()
    for _ in range(2):
        exe.forward(is_train=True)
        exe.backward()
    got = memos(exe)
    bn = got.get('BatchNorm', []) + got.get('_contrib_BatchNormWithReLU', [])
    assert len(got['Convolution']) == 4 and len(bn) == 2
    for memo in got['Convolution'] + bn:
        assert memo         # every one of them recorded its calls
    # (relu's gradient and the add + relu of arrays this small stay on NumPy: their
    # Steps hold a memo, empty)
    for name in ('Activation', '_sg_elemwise_add_relu'):
        assert all(m is not None for m in got.get(name, ())), name
    all_memos = [m for ms in got.values() for m in ms if m is not None]
    assert len({id(m) for m in all_memos}) == len(all_memos)
    assert all(m is None for m in got['Pooling'])
    other = bind()
    theirs = [m for ms in memos(other).values() for m in ms if m is not None]
    assert theirs and not any(theirs)
    assert not {id(m) for m in theirs} & {id(m) for m in all_memos}
