"""Training fusion (graph/passes.py fuse_for_training): a CPU plan that computes gradients
runs BatchNorm and the relu reading it as one operator (one oneDNN pass forward, the relu
mask applied inside BatchNorm's backward), with the unfused plan's values, and binds the
unfused plan where a monitor wants to see every node."""
import numpy as np
import pytest

import symgraph as mx
from symgraph.backend import onednn

needs_onednn = pytest.mark.skipif(mx.opdef.cpu_backend() is None,
                                  reason='needs the oneDNN backend')


def _net(fix_gamma=False, use_global_stats=False, act='relu', extra_reader=False,
         bn_head=False):
    x = mx.sym.Convolution(mx.sym.var('data'), kernel=(3, 3), pad=(1, 1), num_filter=8,
                           no_bias=True, name='conv')
    bn = mx.sym.BatchNorm(x, fix_gamma=fix_gamma, use_global_stats=use_global_stats,
                          name='bn')
    h = mx.sym.Activation(bn, act_type=act, name='act')
    if extra_reader:
        h = h + mx.sym.sigmoid(bn)
    h2 = mx.sym.Convolution(h, kernel=(1, 1), num_filter=4, name='conv2')
    h2 = mx.sym.Activation(mx.sym.BatchNorm(h2, name='bn2'), act_type='relu', name='act2')
    out = mx.sym.FullyConnected(mx.sym.Flatten(h2), num_hidden=3, name='fc')
    out = mx.sym.SoftmaxOutput(out, name='softmax')
    return mx.sym.Group([out, bn]) if bn_head else out


def _bind(net, monkeypatch, fusion, shape=(4, 5, 6, 6), grad_req='write'):
    monkeypatch.setenv('SYMGRAPH_TRAINING_FUSION', '1' if fusion else '0')
    exe = net.simple_bind(mx.cpu(), grad_req=grad_req, data=shape)
    rng = np.random.RandomState(0)
    for name, a in sorted(exe.arg_dict.items()):
        a[:] = rng.randint(0, 3, a.shape) if name.endswith('label') else \
            rng.uniform(-1, 1, a.shape)
    for name, a in exe.aux_dict.items():
        a[:] = rng.uniform(0.5, 1.5, a.shape) if name.endswith('var') else \
            rng.uniform(-0.5, 0.5, a.shape)
    for g in exe.grad_arrays:
        if g is not None:
            g[:] = 0
    return exe


def _step(exe, is_train=True):
    outs = [o.asnumpy().copy() for o in exe.forward(is_train=is_train)]
    exe.backward([mx.nd.ones(o.shape) for o in exe.outputs])   # (a loss ignores its own)
    return outs + [g.asnumpy().copy() for g in exe.grad_arrays if g is not None] \
        + [a.asnumpy().copy() for a in exe.aux_arrays]


def _close(got, want):
    """Equal to float32 rounding of sums over the batch (a gradient that is zero in exact
    arithmetic, a bias before BatchNorm, comes out as rounding noise of either order)."""
    assert len(got) == len(want)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=2e-5)


def _fused(exe):
    line = [l for l in exe.debug_str().splitlines() if l.startswith('Training fusion')]
    assert len(line) == 1 and '(SYMGRAPH_TRAINING_FUSION)' in line[0]
    return line[0]


@needs_onednn
@pytest.mark.parametrize('grad_req', ['write', 'add'])
@pytest.mark.parametrize('fix_gamma', [False, True])
def test_fused_plan_gives_the_unfused_values(grad_req, fix_gamma, monkeypatch):
    net = _net(fix_gamma=fix_gamma)
    exe = _bind(net, monkeypatch, True, grad_req=grad_req)
    assert _fused(exe).endswith('2 fused node(s) (act, act2)')
    assert [n.name for n in exe._plan.steps if n.op.name == 'BatchNorm'] == []
    ref = _bind(net, monkeypatch, False, grad_req=grad_req)
    assert _fused(ref).endswith(': 0 fused node(s)')
    be = mx.opdef.cpu_backend()
    before = be.calls.get('batch_norm_backward', 0)
    for _ in range(2):      # 'add' accumulates; the running statistics move twice
        _close(_step(exe), _step(ref))
    # oneDNN's fused primitives ran: batch-norm keys with the relu flag (0x8)
    flagged = [k for k in be.cached_primitives()
               if k[0] in ('batch_norm_forward', 'batch_norm_backward') and k[3] & 8]
    assert {k[0] for k in flagged} == {'batch_norm_forward', 'batch_norm_backward'}
    assert be.calls['batch_norm_backward'] > before


@needs_onednn
def test_backward_after_an_inference_forward_masks_from_the_output(monkeypatch):
    """No training forward, no oneDNN mask: backward masks the head gradient with the
    output (y > 0) and runs BatchNorm's own backward, as the unfused plan does."""
    net = _net()
    exe, ref = _bind(net, monkeypatch, True), _bind(net, monkeypatch, False)
    _step(exe), _step(ref)          # a training forward first: a mask exists, then goes
    _close(_step(exe, is_train=False), _step(ref, is_train=False))


@needs_onednn
def test_use_global_stats_is_fused_and_masks_from_the_output(monkeypatch):
    net = _net(use_global_stats=True)
    exe, ref = _bind(net, monkeypatch, True), _bind(net, monkeypatch, False)
    assert 'act (' not in _fused(exe) and '(act,' in _fused(exe)
    _close(_step(exe), _step(ref))


@needs_onednn
@pytest.mark.parametrize('kw', [dict(act='tanh'), dict(extra_reader=True),
                                dict(bn_head=True)])
def test_not_fused_where_the_batchnorm_output_is_seen_or_the_consumer_is_no_relu(
        kw, monkeypatch):
    exe = _bind(_net(**kw), monkeypatch, True)
    assert _fused(exe).endswith('1 fused node(s) (act2)')
    assert 'bn' in [n.name for n in exe._plan.steps]
    ref = _bind(_net(**kw), monkeypatch, False)
    _close(_step(exe), _step(ref))


@needs_onednn
def test_a_monitor_binds_the_unfused_plan_and_sees_batchnorm_before_relu(monkeypatch):
    exe = _bind(_net(), monkeypatch, True)
    ref = _bind(_net(), monkeypatch, False)
    _step(exe)
    seen = {}
    exe.set_monitor_callback(lambda name, arr: seen.setdefault(name, arr.asnumpy().copy()))
    assert _fused(exe).endswith(': 0 fused node(s)')
    with pytest.raises(mx.base.MXNetError, match='forward first'):
        exe.backward()      # the fused plan's forward arrays are gone with it
    _step(ref)
    _close(_step(exe), _step(ref))
    assert (seen['bn_output'] < 0).any() and (seen['act_output'] >= 0).all()
    assert 'bn_backward_output0' in seen and 'act_backward_output' in seen


def test_no_fusion_without_gradients_on_another_device_or_without_onednn(monkeypatch):
    # an inference-only executor (the inference passes fold BatchNorm instead)
    monkeypatch.delenv('SYMGRAPH_TRAINING_FUSION', raising=False)
    exe = _net().simple_bind(mx.cpu(), grad_req='null', data=(2, 5, 6, 6))
    assert _fused(exe).endswith(': 0 fused node(s)')
    # the backend off: BatchNorm declines (its fusion pays off through oneDNN only)
    monkeypatch.setenv('SYMGRAPH_ONEDNN', '0')
    onednn.reset()
    try:
        exe = _bind(_net(), monkeypatch, True)
        assert _fused(exe).endswith(': 0 fused node(s)')
        _step(exe)
    finally:
        monkeypatch.delenv('SYMGRAPH_ONEDNN')
        onednn.reset()


def test_batchnorm_with_relu_mask_belongs_to_one_forward():
    """The mask oneDNN kept is used only for the output and the data it was made from, and
    an inference forward into that output forgets it. It is the Step's: another Step (node)
    of the same operator has none of it."""
    from symgraph.ops import norm
    op = norm.BatchNormWithReLU()
    shapes = [(2, 3, 4, 4), (3,), (3,), (3,), (3,)]
    step = op.bind(mx.cpu(), shapes, [np.dtype(np.float32)] * 5)
    masks = step.state.masks
    x, y = np.ones((2, 3, 4, 4), np.float32), np.ones((2, 3, 4, 4), np.float32)
    ws = np.zeros(8, np.uint8)
    masks.keep(y, x, ws)
    assert masks.get(y, x) is ws
    assert masks.get(y, x.copy()) is None and masks.get(y.copy(), x) is None
    assert op.bind(mx.cpu(), shapes, [np.dtype(np.float32)] * 5).state.masks.get(y, x) is None
    gamma, beta = np.ones(3, np.float32), np.zeros(3, np.float32)
    stats = [np.zeros(3, np.float32), np.ones(3, np.float32)]
    op.forward(np, [x, gamma, beta], stats, False, out=[y, None, None], state=step.state)
    assert masks.get(y, x) is None
    # an output that died leaves a dead entry, never matched, dropped once it is full
    masks.keep(y, x, ws)
    del y
    assert masks.get(np.ones((2, 3, 4, 4), np.float32), x) is None
    for _ in range(2 * masks.limit):
        masks.keep(np.ones(1, np.float32), x, ws)
    assert len(masks) <= masks.limit


@needs_onednn
def test_legacy_batchnorm_v1_is_left_alone(monkeypatch):
    x = mx.sym.Convolution(mx.sym.var('data'), kernel=(3, 3), num_filter=4, name='conv')
    x = mx.sym.Activation(mx.sym.BatchNorm_v1(x, name='bn'), act_type='relu', name='act')
    exe = _bind(mx.sym.MakeLoss(mx.sym.sum(x)), monkeypatch, True)
    assert _fused(exe).endswith(': 0 fused node(s)')


# --------------------------------------------------------- residual add, then relu
def _res_net(consumer='relu', extra_reader=False, broadcast=False, shortcut_first=False,
             branch_read=False):
    """A residual block: conv-bn-relu-conv-bn, plus the block's input, then ``consumer``
    (``shortcut_first``: the input as lhs; ``branch_read``: the branch also read
    elsewhere)."""
    x = mx.sym.Convolution(mx.sym.var('data'), kernel=(3, 3), pad=(1, 1), num_filter=8,
                           no_bias=True, name='stem')
    x = mx.sym.Activation(mx.sym.BatchNorm(x, fix_gamma=False, name='stem_bn'),
                          act_type='relu', name='stem_relu')
    h = mx.sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=8, no_bias=True,
                           name='a')
    h = mx.sym.Activation(mx.sym.BatchNorm(h, fix_gamma=False, name='a_bn'),
                          act_type='relu', name='a_relu')
    h = mx.sym.Convolution(h, kernel=(3, 3), pad=(1, 1), num_filter=8, no_bias=True,
                           name='b')
    h = mx.sym.BatchNorm(h, fix_gamma=False, name='b_bn')
    lhs, rhs = (x, h) if shortcut_first else (h, x)
    s = mx.sym.broadcast_add(lhs, rhs, name='sum') if broadcast else \
        mx.sym.elemwise_add(lhs, rhs, name='sum')
    y = mx.sym.Activation(s, act_type=consumer, name='out_act')
    if extra_reader:
        y = y + mx.sym.sigmoid(s)
    if branch_read:
        y = y * mx.sym.tanh(h)
    # (pooling reads channels last: the sum's output and gradient lie as its inputs do)
    y = mx.sym.Pooling(y, global_pool=True, kernel=(1, 1), pool_type='avg', name='pool')
    out = mx.sym.FullyConnected(mx.sym.Flatten(y), num_hidden=3, name='fc')
    return mx.sym.SoftmaxOutput(out, name='softmax')


@needs_onednn
@pytest.mark.parametrize('onednn_sizes', [True, False])
@pytest.mark.parametrize('grad_req', ['write', 'add'])
def test_residual_add_and_relu_run_as_one_node(onednn_sizes, grad_req, monkeypatch):
    """elemwise_add read only by a relu runs as one node (oneDNN's binary primitive with a
    relu post-op, or NumPy below its size), with the unfused values: forward bit for bit,
    and both inputs get the masked gradient."""
    from symgraph.backend.onednn import routing
    size = 1 if onednn_sizes else 1 << 40
    monkeypatch.setattr(routing, 'ADD_RELU_MIN', size)
    monkeypatch.setattr(routing, 'RELU_BACKWARD_FROM_OUTPUT_MIN', size)
    net = _res_net()
    exe = _bind(net, monkeypatch, True, shape=(4, 5, 12, 12), grad_req=grad_req)
    assert _fused(exe).endswith('3 fused node(s) (stem_relu, a_relu, out_act)')
    ops = {n.name: n.op.name for n in exe._plan.steps if n.op is not None}
    assert ops['out_act'] == '_sg_elemwise_add_relu' and 'sum' not in ops
    ref = _bind(net, monkeypatch, False, shape=(4, 5, 12, 12), grad_req=grad_req)
    be = mx.opdef.cpu_backend()
    before = (be.calls.get('add', 0), be.calls.get('relu_backward_from_output', 0))
    for _ in range(2):
        _close(_step(exe), _step(ref))
    after = (be.calls.get('add', 0), be.calls.get('relu_backward_from_output', 0))
    assert (after > before) if onednn_sizes else (after[0] == before[0])
    if onednn_sizes:
        assert after[0] == before[0] + 2 and after[1] >= before[1] + 2


@needs_onednn
@pytest.mark.parametrize('kw', [dict(consumer='tanh'), dict(extra_reader=True),
                                dict(broadcast=True)])
def test_residual_add_not_fused_where_its_sum_is_seen_or_no_relu_follows(kw, monkeypatch):
    exe = _bind(_res_net(**kw), monkeypatch, True, shape=(2, 5, 6, 6))
    assert 'out_act' not in _fused(exe)
    assert '_sg_elemwise_add_relu' not in [n.op.name for n in exe._plan.steps if n.op]
    ref = _bind(_res_net(**kw), monkeypatch, False, shape=(2, 5, 6, 6))
    _close(_step(exe), _step(ref))


@pytest.mark.parametrize('layout', ['c', 'channels_last'])
@pytest.mark.parametrize('into', [None, 'new', 'lhs', 'rhs'])
@pytest.mark.parametrize('dtype', [np.float32, np.float64])
def test_add_relu_operator_forward_backward(layout, into, dtype, monkeypatch):
    """The fused operator against NumPy's add and maximum, through oneDNN (float32, any
    size here) and NumPy (float64), into a new array, a given one, or either input's own
    storage (in place), in C order and lying channels last; backward against the
    numerical gradient of sum(w * relu(a + b))."""
    from symgraph.backend.onednn import routing
    from symgraph.ops import binary
    monkeypatch.setattr(routing, 'ADD_RELU_MIN', 1)
    monkeypatch.setattr(routing, 'RELU_BACKWARD_FROM_OUTPUT_MIN', 1)
    rng = np.random.RandomState(3)
    shape = (2, 3, 4, 5)

    def make():
        if layout == 'c':
            return rng.uniform(-1, 1, shape).astype(dtype)
        return np.ascontiguousarray(rng.uniform(-1, 1, shape).astype(dtype)
                                    .transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    a, b = make(), make()
    a.flat[0], b.flat[0] = 1.0, -1.0       # a sum of exactly zero: relu gives 0
    want = np.maximum(a + b, 0)
    op = binary.ElemwiseAddReLU()
    be = mx.opdef.cpu_backend()
    n0 = be.calls.get('add', 0) if be else 0
    dest = {None: None, 'new': np.empty_like(a), 'lhs': a, 'rhs': b}[into]
    a0, b0 = a.copy(), b.copy()
    y, = op.forward(np, [a, b], [], True, out=[dest])
    np.testing.assert_array_equal(y, want)
    if dest is not None:
        assert y is dest
    if be is not None and dtype == np.float32:
        assert be.calls['add'] == n0 + 1
    # backward from the output alone
    w = rng.uniform(-1, 1, shape).astype(dtype)
    ga, gb = op.backward(np, [w], [], [y], [], [True, True])
    np.testing.assert_array_equal(ga, w * (want > 0))
    np.testing.assert_array_equal(gb, ga)
    eps = 1e-3
    a64, b64 = a0.astype(np.float64), b0.astype(np.float64)
    num = np.zeros(shape)
    for i in np.ndindex(*shape):
        if abs(a64[i] + b64[i]) < 2 * eps:
            num[i] = w[i] * (a64[i] + b64[i] > 0)       # at the kink: the convention
            continue
        for sgn in (1, -1):
            p = a64.copy()
            p[i] += sgn * eps
            num[i] += sgn * (w * np.maximum(p + b64, 0)).sum() / (2 * eps)
    np.testing.assert_allclose(ga, num, rtol=1e-4, atol=1e-5)
    # only one gradient wanted: written into the array offered for it
    g1 = np.empty(shape, dtype)
    got = op.backward(np, [w], [], [y], [], [False, True], grad_out=[None, g1])
    assert got[0] is None and got[1] is g1
    np.testing.assert_array_equal(g1, ga)
    # both offered arrays of their own: both hold the values (the executor may sum into
    # one in place)
    g0, g1 = np.empty(shape, dtype), np.empty(shape, dtype)
    got = op.backward(np, [w], [], [y], [], [True, True], grad_out=[g0, g1])
    assert got[0] is g0 and got[1] is g1
    np.testing.assert_array_equal(g0, ga)
    np.testing.assert_array_equal(g1, ga)


def _offers(exe, name):
    """Argument positions the storage plan offers a gradient buffer at node ``name``'s
    backward step."""
    plan = exe._plan
    t = [n.name for n in reversed(plan.bwd_steps)].index(name)
    return sorted(j for (t2, j) in plan.storage().grad_offer if t2 == t)


@needs_onednn
@pytest.mark.parametrize('kw, offered', [({}, [0]), (dict(shortcut_first=True), [1]),
                                         (dict(branch_read=True), [0, 1])])
def test_residual_gradient_is_one_array_for_both_inputs(kw, offered, monkeypatch):
    """Both inputs of the fused sum get one gradient array (the grad_same rule): the plan
    offers a buffer to the input whose gradient has no other contribution (the branch,
    lhs or rhs) and lets the other alias it, with no copy; where both have other
    readers, each is offered its own (a copy), and the values stay the unfused ones."""
    net = _res_net(**kw)
    exe = _bind(net, monkeypatch, True, shape=(2, 5, 6, 6))
    assert 'out_act' in _fused(exe)
    assert _offers(exe, 'out_act') == offered
    ref = _bind(net, monkeypatch, False, shape=(2, 5, 6, 6))
    for _ in range(2):
        _close(_step(exe), _step(ref))
