"""Property-based tests of the executor's plans: on random graphs (fan-out, sums that
hand their head gradient on, views, in-place activations, convolutions, BatchNorm,
arguments feeding several nodes) a training step computes, bit for bit, the outputs,
gradients and auxiliary states of the same step without the executor's buffers, a
monitor callback is shown the same arrays at every node, and a gradient-ready callback
(the all-reduce overlap's) sees each gradient final; an
inference forward with the inference passes (folding, fusion, layouts) gives the plain
plan's outputs to float32 rounding, also after the parameters change.

The buffers are shared by liveness and written in place; an array that outlives the
buffer it lies in is what this looks for (an argument's gradient handed on as a buffer and
overwritten by a later step was such a bug, found 2026-11-27). The steps after the first
replay the CPU backend's recorded calls on the buffers (``BackendCore.record``), with an
evaluation forward between steps, which keeps no relu masks for the next training
forward (a replay that wrote through a dead mask's address was such a bug, found
2026-11-27 by tests/module/test_module_golden.py)."""
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import symgraph as mx

SHAPE = (2, 4, 5, 5)

#: node kinds: name -> number of operands
KINDS = {'add': 2, 'add_relu': 2, 'mul': 2, 'sub': 2, 'relu': 1, 'tanh': 1, 'sigmoid': 1,
         'conv': 1, 'bn': 1, 'bn_relu': 1, 'bn_fixed': 1, 'view': 1, 'block': 1, 'scale': 1,
         'pool': 1, 'gpool': 1, 'fc': 1, 'split': 2, 'square': 1, 'flip': 1}


def _node(kind, ops, k):
    a = ops[0]
    b = ops[1] if len(ops) > 1 else None
    name = 'n%d' % k
    if kind == 'add':
        return a + b
    if kind == 'add_relu':
        return mx.sym.Activation(a + b, act_type='relu', name=name)
    if kind == 'mul':
        return a * b
    if kind in ('relu', 'tanh', 'sigmoid'):
        return mx.sym.Activation(a, act_type=kind, name=name)
    if kind == 'conv':
        return mx.sym.Convolution(a, num_filter=SHAPE[1], kernel=(3, 3), pad=(1, 1),
                                  name=name)
    if kind in ('bn', 'bn_relu', 'bn_fixed'):
        # ('bn_fixed': MXNet's default fix_gamma, then relu)
        y = mx.sym.BatchNorm(a, fix_gamma=kind == 'bn_fixed', name=name)
        return mx.sym.Activation(y, act_type='relu', name=name + '_r') \
            if kind != 'bn' else y
    if kind == 'view':
        return mx.sym.Reshape(mx.sym.Reshape(a, shape=(SHAPE[0], -1)), shape=SHAPE)
    if kind == 'block':
        return mx.sym.BlockGrad(a) + a
    if kind == 'sub':
        return a - b
    if kind == 'pool':
        return mx.sym.Pooling(a, kernel=(3, 3), pad=(1, 1), pool_type='max', name=name)
    if kind == 'gpool':     # global average pooling, broadcast back over the window
        g = mx.sym.Pooling(a, kernel=(1, 1), global_pool=True, pool_type='avg', name=name)
        return mx.sym.broadcast_to(g, shape=SHAPE) * a
    if kind == 'fc':        # on the last axis: the shape stays
        return mx.sym.FullyConnected(a, num_hidden=SHAPE[-1], flatten=False, name=name)
    if kind == 'split':     # two outputs that are views of one concatenation
        parts = mx.sym.SliceChannel(mx.sym.Concat(a, b, dim=1), num_outputs=2, axis=1,
                                    name=name)
        return parts[0] * parts[1]
    if kind == 'square':
        return mx.sym.square(a)
    if kind == 'flip':
        return mx.sym.transpose(mx.sym.transpose(a, axes=(0, 1, 3, 2)), axes=(0, 1, 3, 2))
    return a * 0.5


def _draw_graph(draw):
    """(number of arguments, [(node kind, operand picks)], number of heads)."""
    n_args = draw(st.integers(1, 3))
    steps = draw(st.lists(st.tuples(st.sampled_from(sorted(KINDS)),
                                    st.lists(st.integers(0, 10 ** 6), min_size=2,
                                             max_size=2)),
                          min_size=1, max_size=9))
    return n_args, steps, draw(st.integers(1, 3))


@st.composite
def graphs(draw):
    n_args, steps, n_heads = _draw_graph(draw)
    # one req for all, or per argument ('null' too; a seed picks them)
    grad_req = draw(st.sampled_from(['write', 'add', 'mixed'])) + \
        ':%d' % draw(st.integers(0, 10 ** 6))
    fusion = draw(st.sampled_from(['0', '1']))
    layout = draw(st.sampled_from(['0', '1']))
    # with a monitor callback (on outputs, or on inputs and outputs) in the buffered run
    monitor = draw(st.sampled_from(['', 'outputs', 'all']))
    # and/or a gradient-ready callback (each gradient reported once final, as the
    # all-reduce overlap has it)
    ready = draw(st.sampled_from(['', '+ready']))
    return n_args, steps, n_heads, grad_req, fusion, layout + monitor + ready


def _build(n_args, steps, n_heads):
    pool = [mx.sym.var('a%d' % i) for i in range(n_args)]
    for k, (kind, picks) in enumerate(steps):
        ops = [pool[p % len(pool)] for p in picks[:KINDS[kind]]]
        pool.append(_node(kind, ops, k))
    heads = pool[-n_heads:]
    # every head is an output the user gets a head gradient for
    return mx.sym.Group([h * 1.0 for h in heads])


def _reqs(net, grad_req):
    """'write', 'add', or per argument ('mixed:<seed>': write, add or null each)."""
    kind, _, seed = grad_req.partition(':')
    if kind != 'mixed':
        return kind
    rng = np.random.RandomState(int(seed or 0))
    return {name: rng.choice(['write', 'add', 'null']) for name in net.list_arguments()}


def _step(net, grad_req, buffered, monitor='', ready=False):
    shapes = {name: SHAPE for name in net.list_arguments() if name.startswith('a')}
    exe = net.simple_bind(mx.cpu(), grad_req=_reqs(net, grad_req), **shapes)
    exe._use_buffers = buffered
    seen = []
    if monitor:
        # (reads every array it is shown, as a user's statistics would)
        exe.set_monitor_callback(lambda name, arr: seen.append(arr.asnumpy().copy()),
                                 monitor_all=monitor == 'all')
    reported = {}
    if ready:
        exe.set_grad_ready_callback(
            lambda j, name, g: reported.__setitem__(name, g.asnumpy().copy()))
    rng = np.random.RandomState(0)
    for name, arr in sorted(exe.arg_dict.items()):
        arr[:] = rng.uniform(-1, 1, arr.shape)
    for g in exe.grad_arrays:
        if g is not None:
            g[:] = rng.uniform(-1, 1, g.shape)      # 'add' adds to these
    got = []
    for k in range(3):
        if k == 1:      # evaluation between steps (Module.fit's): no masks kept for it
            got += [o.asnumpy().copy() for o in exe.forward(is_train=False)]
        outs = exe.forward(is_train=True)
        exe.backward([mx.nd.array(rng.uniform(-1, 1, o.shape)) for o in outs])
        got += [o.asnumpy().copy() for o in outs]
        got += [g.asnumpy().copy() for g in exe.grad_arrays if g is not None]
        for name, g in reported.items():        # final when reported
            np.testing.assert_array_equal(g, exe.grad_dict[name].asnumpy(), err_msg=name)
        reported.clear()
        got += [a.asnumpy().copy() for a in exe.aux_arrays]
    return exe, got + seen


@settings(deadline=None)      # (examples: the profile, tests/conftest.py)
@given(graphs())
# what it shrank the two argument-gradient bugs to: a0 + a0 hands its gradient on to a0,
# which the fused add + relu also reads; that add returns one array for n0 and a0
@example((1, [('add', [0, 0]), ('add_relu', [0, 1])], 2, 'write:0', '1', '0'))
@example((1, [('add', [0, 0]), ('add_relu', [1, 0]), ('add', [1, 2])], 1, 'write:0', '1',
          '0'))
# channels-last buffers (oneDNN's other kernels): values in the hundreds, one element near
# zero off by 1.5e-4 (the absolute tolerance was not scaled to the array)
@example((3, [('pool', [1, 0]), ('add', [0, 0]), ('conv', [22108, 0]), ('gpool', [245, 0]),
              ('square', [244, 0]), ('add', [0, 0])], 2, 'write:0', '0', '1'))
def test_random_graphs_step_alike_with_and_without_the_buffers(case):
    n_args, steps, n_heads, grad_req, fusion, layout = case
    layout, monitor, ready = layout[:1], layout[1:].replace('+ready', ''), '+ready' in layout
    with pytest.MonkeyPatch.context() as mp:
        # C-order buffers ('0'): the same kernels as the unbuffered run, hence the same
        # bits; channels last: oneDNN's other kernels, the same values to rounding
        mp.setenv('SYMGRAPH_TRAINING_LAYOUT', layout)
        mp.setenv('SYMGRAPH_TRAINING_FUSION', fusion)
        # (the evaluation forward between steps runs the plain plan in both runs)
        mp.setenv('SYMGRAPH_INFERENCE_PASSES', 'none')
        net = _build(n_args, steps, n_heads)
        # (a monitored plan runs every node unfused, so both runs are monitored alike)
        exe, planned = _step(net, grad_req, True, monitor, ready)
        _, own = _step(net, grad_req, False, monitor)
    assert len(planned) == len(own)
    for k, (u, v) in enumerate(zip(planned, own)):
        if layout == '0':
            np.testing.assert_array_equal(u, v, err_msg='array %d of %s' % (k, case))
        else:
            # (to float32 rounding of the array's scale: squares of sums reach hundreds,
            # and an element near zero among them keeps their absolute error)
            scale = max(1.0, float(np.abs(v).max())) if v.size else 1.0
            np.testing.assert_allclose(u, v, rtol=1e-4, atol=1e-4 * scale,
                                       err_msg='array %d of %s' % (k, case))


@st.composite
def inference_graphs(draw):
    return _draw_graph(draw) + (draw(st.integers(0, 10 ** 6)), draw(st.integers(0, 1)))


def _infer(net, passes, seed, n_changed):
    """Outputs of three inference forwards: twice on the same values (the second may
    replay what the first worked out), then after new values in every other argument and
    auxiliary state from ``n_changed`` (0 or 1) on (folded weights must follow them)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv('SYMGRAPH_INFERENCE_PASSES', passes)
        shapes = {name: SHAPE for name in net.list_arguments() if name.startswith('a')}
        exe = net.simple_bind(mx.cpu(), grad_req='null', **shapes)
    rng = np.random.RandomState(seed)
    for name, arr in sorted(exe.arg_dict.items()):
        arr[:] = rng.uniform(-1, 1, arr.shape)
    for name, arr in sorted(exe.aux_dict.items()):
        arr[:] = rng.uniform(0.5, 1.5, arr.shape) if name.endswith('var') \
            else rng.uniform(-0.5, 0.5, arr.shape)
    got = []
    for k in range(3):
        if k == 2:
            for name in sorted(exe.arg_dict)[n_changed::2]:
                exe.arg_dict[name][:] = rng.uniform(-1, 1, exe.arg_dict[name].shape)
            for name in sorted(exe.aux_dict)[n_changed::2]:
                exe.aux_dict[name][:] = rng.uniform(0.5, 1.5, exe.aux_dict[name].shape)
        got += [o.asnumpy().copy() for o in exe.forward(is_train=False)]
    return got


@settings(deadline=None)
@given(inference_graphs())
# a folded BatchNorm whose statistics and gamma change between two forwards
@example((1, [('conv', [0, 0]), ('bn', [1, 0])], 1, 0, 0))
def test_random_graphs_infer_alike_with_and_without_the_inference_passes(case):
    """Dead nodes dropped, BatchNorm folded, sums and activations fused, channels-last
    runs: the outputs of the plain plan to float32 rounding, also after the parameters
    change between two forwards."""
    n_args, steps, n_heads, seed, n_changed = case
    net = _build(n_args, steps, n_heads)
    fused, plain = _infer(net, 'all', seed, n_changed), _infer(net, 'none', seed, n_changed)
    for k, (u, v) in enumerate(zip(fused, plain)):
        np.testing.assert_allclose(u, v, rtol=2e-4, atol=2e-4,
                                   err_msg='output %d of %s' % (k, case))
