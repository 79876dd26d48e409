"""The storage plan runs: intermediate results live in the executor's buffers (in place
where the plan proves it safe, shared by liveness), with the same values as without them."""
import re
import tracemalloc

import numpy as np
import pytest

import symgraph as mx
from symgraph.base import UsageError


def _conv_bn(x, width, stride, name, relu=True):
    x = mx.sym.Convolution(x, kernel=(3, 3), stride=(stride, stride), pad=(1, 1),
                           num_filter=width, no_bias=True, name=name + '_conv')
    x = mx.sym.BatchNorm(x, fix_gamma=False, name=name + '_bn')
    return mx.sym.Activation(x, act_type='relu', name=name + '_relu') if relu else x


def _resnet():
    """Two residual stages (one projection shortcut), global pooling, FC, softmax."""
    x = _conv_bn(mx.sym.var('data'), 4, 1, 'stem')
    for k, (width, stride) in enumerate(((4, 1), (8, 2))):
        h = _conv_bn(_conv_bn(x, width, stride, 'u%d_a' % k), width, 1, 'u%d_b' % k,
                     relu=False)
        if stride != 1:
            x = _conv_bn(x, width, stride, 'u%d_proj' % k, relu=False)
        x = mx.sym.Activation(h + x, act_type='relu', name='u%d_relu' % k)
    x = mx.sym.Pooling(x, global_pool=True, pool_type='avg', kernel=(1, 1), name='pool')
    x = mx.sym.FullyConnected(mx.sym.Flatten(x), num_hidden=3, name='fc')
    return mx.sym.SoftmaxOutput(x, name='softmax')


def _fan_out_net():
    """Fan-out, a tanh head also read later, sigmoid/softrelu, sums, BlockGrad, Reshape."""
    x = mx.sym.var('x')
    h = mx.sym.FullyConnected(x, num_hidden=6, name='fc1')
    a = mx.sym.Activation(h, act_type='tanh', name='t')
    b = mx.sym.Activation(h, act_type='sigmoid', name='s')
    c = mx.sym.Activation(a + b, act_type='softrelu', name='sr')
    d = mx.sym.Reshape(c * a, shape=(-1, 3, 2)) + mx.sym.BlockGrad(b).reshape((-1, 3, 2))
    return mx.sym.Group([a, mx.sym.sum(d * d, axis=(1, 2))])


def _run(net, shapes, use_buffers, steps=2, grad_req='write', seed=0):
    exe = net.simple_bind(mx.cpu(), grad_req=grad_req, **shapes)
    exe._use_buffers = use_buffers
    rng = np.random.RandomState(seed)
    for name, a in sorted(exe.arg_dict.items()):
        a[:] = rng.randint(0, 3, a.shape) if name.endswith('label') else \
            rng.uniform(-1, 1, a.shape)
    for g in exe.grad_arrays:
        if g is not None:
            g[:] = 0
    results = []
    for _ in range(steps):
        outs = exe.forward(is_train=True)
        heads = [rng.uniform(-1, 1, o.shape) for o in outs]
        exe.backward([mx.nd.array(h) for h in heads])
        results.append([o.asnumpy().copy() for o in outs]
                       + [g.asnumpy().copy() for g in exe.grad_arrays if g is not None]
                       + [a.asnumpy().copy() for a in exe.aux_arrays])
    results.append([o.asnumpy().copy() for o in exe.forward(is_train=False)])
    return exe, results


@pytest.mark.parametrize('net, shapes, grad_req', [
    (_resnet, {'data': (3, 2, 8, 8)}, 'write'),
    (_resnet, {'data': (3, 2, 8, 8)}, 'add'),
    (_fan_out_net, {'x': (4, 5)}, 'write'),
])
def test_results_are_identical_with_and_without_the_buffers(net, shapes, grad_req,
                                                            monkeypatch):
    # (the buffers' channels-last layouts change oneDNN's kernels, hence the roundings:
    # test_training_layouts_keep_activations_channels_last compares those)
    monkeypatch.setenv('SYMGRAPH_TRAINING_LAYOUT', '0')
    be = mx.opdef.cpu_backend()
    borrowed = be._thread().borrowed if be is not None else 0
    exe, planned = _run(net(), shapes, True, grad_req=grad_req)
    assert exe._pool is not None and len(exe._plan.storage().keys) > 0
    if be is not None and net is _resnet:
        # oneDNN's reorder buffers came from the free part of the buffers
        assert be._thread().borrowed > borrowed
    _, own = _run(net(), shapes, False, grad_req=grad_req)
    for a, b in zip(planned, own):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize('grad_req', ['write', 'add'])
def test_training_layouts_keep_activations_channels_last(grad_req, monkeypatch):
    """With oneDNN, a training plan lays the activations its convolutions, BatchNorms,
    relus and sums pass between them out channels last, and their gradients too; heads
    stay in C order; the values are those of C-order buffers to float32 rounding."""
    be = mx.opdef.cpu_backend()
    if be is None:
        pytest.skip('needs the oneDNN backend')
    monkeypatch.setenv('SYMGRAPH_TRAINING_FUSION', '0')    # every node of the graph, named
    exe, got = _run(_resnet(), {'data': (3, 8, 8, 8)}, True, grad_req=grad_req)
    st = exe._plan.storage()
    lay = {}
    for k, layout in zip(st.keys, st.layouts):
        e = k if isinstance(k, int) else k[1]
        node, i = exe._plan.entry_info[e]
        if i == 0:
            lay[(node.name, isinstance(k, tuple))] = layout
    for name in ('stem_conv', 'stem_bn', 'stem_relu', 'u0_a_conv', 'u0_b_bn', 'u0_relu',
                 'u1_proj_conv'):
        assert lay.get((name, False)) == 'channels_last', name
    # gradients lie as their activations (those that are buffers)
    assert [v for (n, g), v in lay.items() if g and lay.get((n, False)) == 'channels_last'
            and v != 'channels_last'] == []
    assert lay[('stem_relu', True)] == 'channels_last'
    # the head and what global pooling makes stay in C order
    assert lay.get(('pool', False)) is None and lay.get(('softmax', False)) is None
    views = {k: v for k, v in zip(st.keys, exe._pool)}
    k = next(k for k, (n, _) in ((k, exe._plan.entry_info[k]) for k in st.keys
                                 if isinstance(k, int)) if n.name == 'stem_conv')
    assert not views[k].flags.c_contiguous and views[k].strides[1] == 4
    # oneDNN wrote straight into them: primitives keyed with a channels-last output
    keys = [k for k in be.cached_primitives() if k[0] == 'conv_forward']
    assert any(k[-1] == 'channels_last' for k in keys)
    monkeypatch.setenv('SYMGRAPH_TRAINING_LAYOUT', '0')
    exe0, want = _run(_resnet(), {'data': (3, 8, 8, 8)}, True, grad_req=grad_req)
    assert set(exe0._plan.storage().layouts) == {None}
    assert 'Training layouts (SYMGRAPH_TRAINING_LAYOUT): 0 buffer(s)' in exe0.debug_str()
    n = sum(lay == 'channels_last' for lay in st.layouts)
    assert n > 10 and 'Training layouts (SYMGRAPH_TRAINING_LAYOUT): %d buffer(s) channels ' \
        'last' % n in exe.debug_str()
    for a, b in zip(got, want):
        for x, y in zip(a, b):
            np.testing.assert_allclose(x, y, rtol=2e-5, atol=2e-6)


def test_buffers_overlap_only_where_lifetimes_do_not_and_in_place_pairs_share_one(
        monkeypatch):
    monkeypatch.setenv('SYMGRAPH_TRAINING_FUSION', '0')    # BatchNorm, then relu in place
    exe, _ = _run(_resnet(), {'data': (3, 2, 8, 8)}, True, steps=1)
    st = exe._plan.storage()
    assert len({id(v.base) for v in exe._pool}) == 1        # one arena
    assert exe._pool[0].base.nbytes == st.arena
    assert len(exe._pool) == len(st.keys) + len(st.lend)
    assert all(v.ctypes.data % 64 == 0 for v in exe._pool)
    # two buffered entries share memory exactly when the plan gives them overlapping spans
    n = len(st.keys)
    for i in range(n):
        for j in range(i + 1, n):
            if st.nbytes[i] and st.nbytes[j]:
                same = st.offset[i] < st.offset[j] + st.nbytes[j] and \
                    st.offset[j] < st.offset[i] + st.nbytes[i]
                assert np.shares_memory(exe._pool[i], exe._pool[j]) == same
    names = {exe._plan.entry_info[k][0].name: st.offset[i]
             for i, k in enumerate(st.keys) if isinstance(k, int)
             and exe._plan.entry_info[k][1] == 0}
    # relu after BatchNorm runs in place (BatchNorm's output dies there), and so does the
    # residual sum followed by its relu
    assert names['stem_relu'] == names['stem_bn']
    assert names['u0_relu'] == names[[n for n in names if n.startswith('_plus')][0]]
    assert st.arena < sum(st.nbytes)


@pytest.mark.parametrize('layouts', ['0', '1'])
def test_scratch_lent_around_a_convolution_overlaps_no_buffer_live_at_that_step(layouts,
                                                                               monkeypatch):
    """Convolution and BatchNorm (oneDNN reorders at their edges) are lent scratch at each
    of their forward and backward steps, none overlapping a buffer live there. With the
    training layouts, a BatchNorm whose data and output lie channels last reorders
    nothing and is lent nothing, and a convolution only room for its weights."""
    monkeypatch.setenv('SYMGRAPH_TRAINING_LAYOUT', layouts)
    exe, _ = _run(_resnet(), {'data': (3, 2, 8, 8)}, True, steps=1)
    st = exe._plan.storage()
    if mx.opdef.cpu_backend() is None:
        assert not st.lend     # nothing to lend to
        return
    lenders = ('Convolution', 'BatchNorm', '_contrib_BatchNormWithReLU')
    if layouts == '0':
        assert len(st.lend) == sum(n.op.name in lenders for n in exe._plan.steps) + \
            sum(n.op.name in lenders for n in exe._plan.bwd_steps)
    else:
        steps = dict(enumerate(exe._plan.steps))
        lent = {steps[s].op.name for (kind, s) in st.lend_slot if kind == 'f'}
        assert lent == {'Convolution'}
        conv = next(n for n in exe._plan.steps if n.name == 'u0_a_conv')
        op = exe._plan.run_op[id(conv)]
        shapes = [exe._plan.shapes[e] for e in exe._plan.in_entries(conv)]
        out = [exe._plan.shapes[e] for e in exe._plan.out_entries(conv)]
        last = (['channels_last'] + [None] * (len(shapes) - 1), ['channels_last'])
        scratch = mx.graph.rules.SCRATCH_BYTES.ask
        assert scratch(op, shapes, out, [np.float32] * len(shapes), last) < \
            scratch(op, shapes, out, [np.float32] * len(shapes)) / 2
    for step, slot in st.lend_slot.items():
        T = st.lend_step[step]
        lent = exe._pool[slot]
        assert lent.nbytes > 0
        for i, k in enumerate(st.keys):
            b, d = st.lifetimes[k]
            if b <= T <= d and st.nbytes[i]:
                assert not np.shares_memory(lent, exe._pool[i]), (step, k)
    assert mx.opdef.cpu_backend()._thread().lent is None       # taken back after each step


def test_a_failing_step_takes_the_lent_scratch_back(monkeypatch):
    be = mx.opdef.cpu_backend()
    if be is None:
        pytest.skip('no CPU backend to lend to')
    exe = _resnet().simple_bind(mx.cpu(), data=(3, 2, 8, 8))
    exe.forward(is_train=True)
    from symgraph.ops import conv

    def broken(*a, **k):
        assert be._thread().lent is not None        # lent during the step
        raise RuntimeError('broken convolution')
    monkeypatch.setattr(conv, 'conv_forward', broken)
    with pytest.raises(Exception, match='broken convolution'):
        exe.forward(is_train=True)
    assert be._thread().lent is None


def test_arena_is_the_peak_of_live_buffers_when_smaller_arrays_free_room_for_a_larger():
    """The placement over one arena: storage freed by two small arrays serves one twice
    their size (separate blocks reused by size could not), and the arena is no larger than
    the most bytes live at once."""
    from symgraph.graph.storage import _place
    # a, b (100 bytes each) die at step 1; c (200 bytes) is born at step 2 while d (64)
    # lives on; e takes c's storage in place at step 3 (c dies there), f must not
    birth = {'a': 0, 'b': 0, 'd': 0, 'c': 2, 'e': 3, 'f': 3}
    death = {'a': 1, 'b': 1, 'd': 5, 'c': 3, 'e': 4, 'f': 4}
    sizes = {'a': 100, 'b': 100, 'd': 64, 'c': 200, 'e': 200, 'f': 200}
    keys = sorted(birth, key=lambda k: (birth[k], k))
    arena, off = _place(keys, birth, death, sizes, {'e': ['c']})
    assert all(o % 64 == 0 for o in off.values())
    assert off['c'] < 256 and off['d'] >= 256      # c where a and b were
    assert off['e'] == off['c']
    spans = {k: (off[k], off[k] + sizes[k]) for k in keys}
    for x in keys:
        for y in keys:
            live_together = x < y and birth[y] <= death[x] and birth[x] <= death[y]
            if live_together and {x, y} != {'c', 'e'}:
                assert spans[x][1] <= spans[y][0] or spans[y][1] <= spans[x][0], (x, y)
    peak = max(sum(-(-sizes[k] // 64) * 64 for k in keys if birth[k] <= t <= death[k]
                   and not (k == 'c' and t == 3)) for t in range(6))
    assert arena == peak == 64 + 256 + 256      # d, e, f at step 3


def test_in_place_never_overwrites_a_head_an_argument_or_an_array_read_later():
    x = mx.sym.var('x')
    y = mx.sym.BatchNorm(x, name='bn')
    r1 = mx.sym.Activation(y, act_type='relu', name='r1')     # y is also an output
    r2 = mx.sym.Activation(x, act_type='relu', name='r2')     # x is the user's argument
    z = mx.sym.BatchNorm(x, name='bn2')
    r3 = mx.sym.Activation(z, act_type='relu', name='r3') + z  # z read after the relu
    exe = mx.sym.Group([y, r1, r2, r3]).simple_bind(mx.cpu(), x=(4, 3))
    xv = np.random.RandomState(0).uniform(-1, 1, (4, 3)).astype(np.float32)
    outs = [o.asnumpy() for o in exe.forward(is_train=True, x=xv)]
    zn = (xv - xv.mean(0)) / np.sqrt(xv.var(0) + 1e-3)
    np.testing.assert_allclose(outs[0], zn, rtol=1e-4, atol=1e-5)
    assert (outs[0] < 0).any()
    np.testing.assert_allclose(outs[1], np.maximum(zn, 0), rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(exe.arg_dict['x'].asnumpy(), xv)
    np.testing.assert_allclose(outs[3], np.maximum(zn, 0) + zn, rtol=1e-4, atol=1e-5)


def test_outputs_the_user_holds_are_refreshed_by_the_next_forward_as_in_mxnet():
    # MXNet 1.9.1's executor writes every forward into the same output arrays: an output
    # NDArray kept from the first forward shows the second forward's values (checked
    # against mxnet 1.9.1: exe.outputs[0] held across forward calls changes)
    x = mx.sym.var('x')
    exe = mx.sym.Activation(x * 2, act_type='relu').simple_bind(mx.cpu(), x=(3,))
    held = exe.forward(x=np.array([1.0, -1.0, 2.0]))[0]
    first = held.asnumpy().copy()
    exe.forward(x=np.array([3.0, 3.0, 3.0]))
    np.testing.assert_array_equal(first, [2, 0, 4])
    np.testing.assert_array_equal(held.asnumpy(), [6, 6, 6])
    assert held is exe.outputs[0]
    # intermediate buffers never are the user's: the arguments keep their values
    np.testing.assert_array_equal(exe.arg_dict['x'].asnumpy(), [3, 3, 3])


def test_backward_uses_the_forward_arrays_up():
    exe, _ = _run(_resnet(), {'data': (2, 2, 8, 8)}, True, steps=1)
    exe.forward(is_train=True)
    exe.backward()
    with pytest.raises(UsageError, match='used up'):
        exe.backward()
    exe.forward(is_train=True)
    exe.backward()          # a new forward makes backward possible again


def test_buffers_are_allocated_once_and_reused():
    exe, _ = _run(_resnet(), {'data': (2, 2, 8, 8)}, True, steps=1)
    pool = exe._pool
    ids = [id(v) for v in pool]
    exe.forward(is_train=True)
    exe.backward()
    assert exe._pool is pool and [id(v) for v in exe._pool] == ids


def test_debug_str_shows_planned_and_measured_bytes():
    exe = _resnet().simple_bind(mx.cpu(), data=(4, 2, 8, 8))
    s = exe.debug_str()
    assert 'measured_peak_bytes=untraced' in s and 'allocated_bytes=none' in s
    # a first step untraced: compiling the plan, creating primitives and the operators'
    # workspaces are one-off allocations (how many depends on what ran before in the process)
    exe.forward(is_train=True)
    exe.backward()
    tracemalloc.start()
    try:
        exe.forward(is_train=True)
        exe.backward()
    finally:
        tracemalloc.stop()
    s = exe.debug_str()
    planned = int(re.search(r'planned_bytes=(\d+)', s).group(1))
    buffers, allocated, peak = map(int, re.search(
        r'buffer_bytes=(\d+) allocated_bytes=(\d+) measured_peak_bytes=(\d+)', s).groups())
    assert buffers == allocated == exe._plan.storage().planned_bytes > 0
    # the buffers and every array the run made besides them: at least what the plan
    # needs at its peak, and within a few times of it (the operators' temporaries)
    assert planned <= peak < 4 * planned
    assert '(buffer ' in s and '(own array)' in s


def test_planned_peak_and_naive_bytes_are_the_storage_runs_own():
    """debug_str's planned peak is the storage run's (its arena and the arrays it leaves to
    the operators, alive at its fullest step), and what a run then measures; naive is every
    array of the run in storage of its own. Ten squarings of one array of N bytes: in
    inference two live at a time; training keeps all ten for backward and adds their
    gradients."""
    x = mx.sym.var('x')
    y = x
    for _ in range(10):
        y = y * y
    nbytes = 100 * 1000 * 4
    for grad_req in ('null', 'write'):
        exe = y.simple_bind(mx.cpu(), grad_req=grad_req, x=(100, 1000))
        og = [mx.nd.ones((100, 1000))]
        for traced in (False, True):      # the first step untraced (one-off allocations)
            if traced:
                tracemalloc.start()
            try:
                exe.forward(is_train=grad_req == 'write')
                if grad_req == 'write':
                    exe.backward(og)
            finally:
                if traced:
                    tracemalloc.stop()
        s = exe.debug_str()
        st = exe._plan.storage()
        planned, naive = map(int, re.search(r'planned_bytes=(\d+) naive_bytes=(\d+)',
                                            s).groups())
        peak = int(re.search(r'measured_peak_bytes=(\d+)', s).group(1))
        assert (planned, naive) == (st.peak_bytes, st.naive_bytes)
        assert 'Total %d MB allocated' % (planned >> 20) in s
        if grad_req == 'null':
            # (the arena rounds each buffer up to 64 bytes and starts at a 64-byte boundary)
            assert naive == 10 * nbytes and 2 * nbytes <= planned <= 2 * nbytes + 256
            assert planned <= peak <= planned + 4096
        else:
            # ten products and the gradients of the nine intermediates (x's is the user's);
            # backward reads every product, so little is shared: about naive (+ alignment)
            assert naive == 19 * nbytes and 10 * nbytes <= planned <= naive + 256
            assert planned <= peak < 2 * planned


def test_a_summed_gradient_takes_its_buffer_only_from_the_first_sum(monkeypatch):
    """A gradient with several contributions: the first is another array (the residual
    sum passes its gradient on as is), so the buffer that sums them lives from the step
    of the second one."""
    # (unfused: the training fusion runs the sum and its relu as one node, which writes
    # the gradient it passes on into a buffer of its own)
    monkeypatch.setenv('SYMGRAPH_TRAINING_FUSION', '0')
    exe, _ = _run(_resnet(), {'data': (3, 2, 8, 8)}, True, steps=1)
    plan, st = exe._plan, exe._plan.storage()
    n_fwd = len(plan.steps)
    summed = [k for k in st.keys if st.mode[k] == 'sum']
    assert summed
    for k in summed:
        e = k[1]
        steps = sorted(n_fwd + t for t, n in enumerate(reversed(plan.bwd_steps))
                       if e in plan.in_entries(n)[:len(n.op.list_arguments())])
        assert len(steps) >= 2
        assert st.lifetimes[k][0] == steps[1], plan.entry_info[e][0].name


def _fan_into_fcs(first_identity):
    """h = relu(FC(x)) read by three FullyConnected layers (and, with ``first_identity``,
    by the sum as such): its gradient has three or four contributions."""
    x = mx.sym.var('x')
    h = mx.sym.Activation(mx.sym.FullyConnected(x, num_hidden=64, name='fc0'),
                          act_type='relu', name='h')
    y = sum(mx.sym.FullyConnected(h, num_hidden=64, name='fc%d' % k) for k in (1, 2, 3))
    return y + h if first_identity else y


@pytest.mark.parametrize('first_identity', [False, True])
def test_every_contribution_to_a_summed_gradient_is_computed_into_a_planned_buffer(
        first_identity):
    """Contributions after the first go into the sum's buffer (the second, where the first
    is another array) or into a buffer of their own for that step, not into new arrays:
    backward allocates nothing of the gradient's size, and the values are those of the
    run without buffers, bit for bit. (1024 rows: NumPy 1.26's ufuncs and reductions take
    iteration buffers of up to 8192 elements, 35-45 KB here, which is no array of the
    gradient's size but was more than half of a 256-row one.)"""
    shapes = {'x': (1024, 32)}
    exe, planned = _run(_fan_into_fcs(first_identity), shapes, True, steps=2)
    _, own = _run(_fan_into_fcs(first_identity), shapes, False, steps=2)
    for a, b in zip(planned, own):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
    plan, st = exe._plan, exe._plan.storage()
    h = next(e for e, (n, _) in enumerate(plan.entry_info) if n.name == 'h')
    nbytes = plan.nbytes(h)
    own_buffers = [k for k in st.keys if isinstance(k, tuple) and k[0] == 'gt']
    # the sum's buffer takes the first contribution, or the second where the first is the
    # identity's (another array); each later one has a buffer of its own
    assert st.mode[('g', h)] == ('sum' if first_identity else 'into')
    assert ('g', h) in st.grad_offer.values()
    assert len(own_buffers) == 2
    assert all(k[1] == h and st.lifetimes[k][0] == st.lifetimes[k][1] for k in own_buffers)
    heads = [mx.nd.ones(o.shape) for o in exe.outputs]
    tracemalloc.start()
    try:
        exe.forward(is_train=True)
        exe.backward(heads)
    finally:
        tracemalloc.stop()
    # (the arrays made during backward, besides the buffers, at their peak)
    assert exe._peak[1] < nbytes / 2, (exe._peak, nbytes)


def test_an_entry_taken_twice_by_one_operator_gets_two_gradient_buffers():
    """FullyConnected(a, weight=a): both contributions to a's gradient come from one step;
    each is computed into a buffer of its own (one buffer offered for both positions
    would hold the last one written)."""
    x = mx.sym.var('x')
    a = mx.sym.tanh(x * 1.0)
    y = mx.sym.FullyConnected(a, weight=a, num_hidden=6, no_bias=True, name='fc')
    exe, planned = _run(y, {'x': (6, 6)}, True, steps=1)
    _, own = _run(y, {'x': (6, 6)}, False, steps=1)
    for p, o in zip(planned, own):
        for u, v in zip(p, o):
            np.testing.assert_array_equal(u, v)
    # against NumPy: y = a a^T, d/da sum(g * y) = g a + g^T a
    rng = np.random.RandomState(0)
    xv = rng.uniform(-1, 1, (6, 6))
    g = np.random.RandomState(1).uniform(-1, 1, (6, 6))
    av = np.tanh(xv)
    exe.arg_dict['x'][:] = xv
    exe.forward(is_train=True)
    exe.backward([mx.nd.array(g)])
    want = (g @ av + g.T @ av) * (1 - av * av)
    np.testing.assert_allclose(exe.grad_dict['x'].asnumpy(), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('act', ['relu', 'tanh', 'sigmoid', 'softrelu'])
def test_activation_gradient_lies_over_the_output_it_reads_last(act):
    """Activation's grad_inplace rule: the gradient of its input takes the output's storage (the
    output dies at that backward step), with the values of the run without buffers."""
    x = mx.sym.var('x')
    h = mx.sym.FullyConnected(x, num_hidden=16, name='fc1')
    y = mx.sym.FullyConnected(mx.sym.Activation(h, act_type=act, name='act'),
                              num_hidden=4, name='fc2') * 2.0
    # (a head's producer keeps its inputs to the end: the head could be a view of them)
    exe, planned = _run(y, {'x': (8, 5)}, True)
    _, own = _run(y, {'x': (8, 5)}, False)
    for p, o in zip(planned, own):
        for u, v in zip(p, o):
            np.testing.assert_array_equal(u, v)
    plan, st = exe._plan, exe._plan.storage()
    ent = {n.name: e for e, (n, _) in enumerate(plan.entry_info)}
    out, grad = st.slot[ent['act']], st.slot[('g', ent['fc1'])]
    assert st.offset[out] == st.offset[grad]
    assert np.shares_memory(exe._pool[out], exe._pool[grad])


def test_placement_by_size_and_lifetime_when_birth_order_splits_the_storage():
    """By birth, a small early array takes the bottom and a long-lived one lies above it;
    the larger array born later finds no gap. Placed largest size x lifetime first, the
    arena is the peak of live bytes."""
    from symgraph.graph.storage import _place
    birth = {'a': 0, 'b': 0, 'c': 2, 'd': 4, 'e': 5}
    death = {'a': 1, 'b': 5, 'c': 3, 'd': 5, 'e': 6}
    sizes = {'a': 64, 'b': 64, 'c': 128, 'd': 128, 'e': 128}
    keys = sorted(birth, key=lambda k: (birth[k], k))
    arena, off = _place(keys, birth, death, sizes, {'e': ['d']})
    assert off['e'] == off['d']
    for x in keys:
        for y in keys:
            if x < y and birth[y] <= death[x] and birth[x] <= death[y] \
                    and {x, y} != {'d', 'e'}:
                assert off[x] + sizes[x] <= off[y] or off[y] + sizes[y] <= off[x], (x, y)
    peak = max(sum(sizes[k] for k in keys if birth[k] <= t <= death[k]
                   and not (k == 'd' and t == 5)) for t in range(7))
    assert arena == peak == 192


def _argument_into_a_sum(twice, c):
    """relu(a + conv0(d)) * conv2(conv0(d)): the sum hands its head gradient on to the
    argument ``a`` as is (a buffer of the plan's), while conv0's output gets a second
    contribution later; with ``twice`` ``a`` also feeds a convolution (two contributions
    of an argument)."""
    a, d = mx.sym.var('a'), mx.sym.var('d')
    x = mx.sym.Convolution(d, num_filter=c, kernel=(3, 3), pad=(1, 1), name='c0')
    y = mx.sym.Activation(a + x, act_type='relu', name='r')
    x2 = mx.sym.Convolution(x, num_filter=c, kernel=(3, 3), pad=(1, 1), name='c2')
    if twice:
        x2 = x2 + mx.sym.Convolution(a, num_filter=c, kernel=(3, 3), pad=(1, 1), name='ca')
    return mx.sym.MakeLoss(mx.sym.sum(y * x2))


@pytest.mark.parametrize('fusion', ['0', '1'])
@pytest.mark.parametrize('twice', [False, True])
@pytest.mark.parametrize('grad_req', ['write', 'add'])
@pytest.mark.parametrize('size, layout', [((2, 4, 6), '0'), ((4, 16, 16), '0'),
                                          ((4, 16, 16), '1')])
def test_an_argument_gradient_handed_on_from_a_buffer_survives_its_reuse(
        fusion, twice, grad_req, size, layout, monkeypatch):
    """An argument's gradient that is a buffer of the plan's (elemwise_add passes its head
    gradient on) reaches the user's array intact, though later steps reuse that buffer:
    the values of the run without buffers, and d/da of sum(relu(a + x) * x2) =
    (a + x > 0) * x2. (Until 2026-11-27 the later steps overwrote it: with the training
    fusion off, a's gradient was wrong by the size of the values.)"""
    monkeypatch.setenv('SYMGRAPH_TRAINING_LAYOUT', layout)
    monkeypatch.setenv('SYMGRAPH_TRAINING_FUSION', fusion)
    n, c, hw = size
    shapes = {'a': (n, c, hw, hw), 'd': (n, 3, hw, hw)}
    exe, planned = _run(_argument_into_a_sum(twice, c), shapes, True, grad_req=grad_req)
    assert len(exe._plan.storage().keys) > 0
    _, own = _run(_argument_into_a_sum(twice, c), shapes, False, grad_req=grad_req)
    for p, o in zip(planned, own):
        for u, v in zip(p, o):
            if layout == '0':
                np.testing.assert_array_equal(u, v)
            else:       # (channels-last buffers: oneDNN's other kernels round otherwise)
                np.testing.assert_allclose(u, v, rtol=1e-4, atol=1e-4)
    if twice or grad_req != 'write':
        return
    # against the formula, from the forward values of another executor
    probe = mx.sym.Group([mx.sym.Convolution(mx.sym.var('d'), num_filter=c, kernel=(3, 3),
                                             pad=(1, 1), name='c0')])
    c2 = mx.sym.Convolution(probe, num_filter=c, kernel=(3, 3), pad=(1, 1), name='c2')
    ref = mx.sym.Group([probe, c2]).simple_bind(mx.cpu(), grad_req='null', d=shapes['d'])
    for k, v in ref.arg_dict.items():
        v[:] = exe.arg_dict[k]
    xv, x2v = (o.asnumpy() for o in ref.forward(is_train=False))
    av = exe.arg_dict['a'].asnumpy()
    exe.forward(is_train=True)
    exe.backward()
    np.testing.assert_allclose(exe.grad_dict['a'].asnumpy(), (av + xv > 0) * x2v,
                               rtol=1e-5, atol=1e-5)
