"""Inference passes (symgraph/graph/passes.py): BatchNorm folding, post-op fusion and dead
nodes give the unfused graph's outputs to float32 rounding, each switched by
SYMGRAPH_INFERENCE_PASSES and reported by debug_str; the folded weights are cached while
the arguments are unchanged and folded again when the user changes them."""
import gc
import json
import os
import sys

import numpy as np
import pytest

import symgraph as mx
from symgraph.backend import onednn
from symgraph.graph.passes import ENV, PASSES, enabled_passes

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
GLUON = os.path.join(ROOT, 'tests', 'golden', 'data', 'gluon_export')


@pytest.fixture(params=['onednn', 'numpy'])
def backend(request, monkeypatch):
    """Each test runs with oneDNN (where installed) and with the backend forced off."""
    if request.param == 'numpy':
        monkeypatch.setenv('SYMGRAPH_ONEDNN', '0')
    else:
        monkeypatch.delenv('SYMGRAPH_ONEDNN', raising=False)
    onednn.reset()
    if request.param == 'onednn' and onednn.backend() is None:
        pytest.skip('oneDNN is not available on this machine')
    yield request.param
    onednn.reset()


def _resnet():
    sys.path.insert(0, os.path.join(ROOT, 'bench'))
    try:
        import bench_cnn
    finally:
        sys.path.pop(0)
    bench_cnn.mx = mx
    return bench_cnn.resnet()


def _fill(exe, seed=5):
    """Random data, weights and BatchNorm statistics far from the identity."""
    rng = np.random.RandomState(seed)
    for k, a in exe.arg_dict.items():
        if k.endswith('label'):
            a[:] = rng.randint(0, 10, a.shape)
        elif k.endswith('gamma'):
            a[:] = rng.uniform(0.5, 1.5, a.shape)
        elif k.endswith('weight'):
            a[:] = rng.uniform(-1, 1, a.shape) * np.sqrt(3.0 / np.prod(a.shape[1:]))
        else:
            a[:] = rng.uniform(-0.5, 0.5, a.shape)
    for k, a in exe.aux_dict.items():
        a[:] = rng.uniform(0.5, 1.5, a.shape) if 'var' in k else rng.uniform(-0.3, 0.3, a.shape)


def _bind(sym, passes, monkeypatch, **shapes):
    monkeypatch.setenv(ENV, passes)
    exe = sym.simple_bind(mx.cpu(), grad_req='null', **shapes)
    _fill(exe)
    return exe


def _logits(sym):
    """The network with its FullyConnected output as a second head (before softmax)."""
    return mx.sym.Group([sym, sym.get_internals()['fc_output']])


def _close(got, want, what):
    scale = np.abs(want).max()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * scale, err_msg=what)


def test_enabled_passes_parsing(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    assert enabled_passes() == PASSES
    assert enabled_passes('none') == enabled_passes('0') == enabled_passes('') == ()
    assert enabled_passes('fuse, fold_bn') == ('fold_bn', 'fuse')
    with pytest.raises(ValueError, match="%s='fold_b': unknown word 'fold_b'; .*dead_nodes, "
                       "fold_bn, fuse, layout" % ENV):
        enabled_passes('fold_b')
    monkeypatch.setenv(ENV, 'fold')
    with pytest.raises(ValueError, match=ENV):
        mx.sym.var('x').simple_bind(mx.cpu(), x=(2,))


def test_resnet_matches_unfused(backend, monkeypatch):
    """bench_cnn.py's CIFAR ResNet: every BatchNorm folded, every conv + BN (+ add) +
    relu one fused node, the outputs (logits and softmax) as without passes."""
    net = _logits(_resnet())
    ref = _bind(net, 'none', monkeypatch, data=(4, 3, 32, 32))
    ref.forward(is_train=False)
    exe = _bind(net, 'all', monkeypatch, data=(4, 3, 32, 32))
    exe.forward(is_train=False)
    for k in range(2):
        _close(exe.outputs[k].asnumpy(), ref.outputs[k].asnumpy(), 'output %d' % k)
    text = exe.debug_str()
    assert 'fold_bn: 15 per-channel affine node(s) (BatchNorm) folded' in text
    assert '6 x Convolution + BatchNorm(folded) + elemwise_add(sum) + Activation(relu)' in text
    assert '7 x Convolution + BatchNorm(folded) + Activation(relu)' in text
    assert 'inference plan: 19 operator steps (bound plan: 53)' in text
    assert 'Inference passes: none' in ref.debug_str()
    if backend == 'onednn':
        assert onednn.backend().calls.get('conv_forward_fused', 0) >= 15


@pytest.mark.parametrize('passes,lines', [
    ('fold_bn', ['fold_bn: 15 per-channel', '15 x Convolution + BatchNorm(folded)\n']),
    # every conv of the ResNet is followed by BatchNorm, which only fold_bn takes
    ('fuse', ['fuse: 0 fused node(s)', 'the bound plan (nothing to rewrite)']),
    ('dead_nodes', ['dead_nodes: 0 bypassed or removed',
                    'the bound plan (nothing to rewrite)']),
])
def test_each_pass_alone(passes, lines, monkeypatch):
    net = _resnet()
    ref = _bind(net, 'none', monkeypatch, data=(2, 3, 32, 32))
    ref.forward(is_train=False)
    exe = _bind(net, passes, monkeypatch, data=(2, 3, 32, 32))
    exe.forward(is_train=False)
    _close(exe.outputs[0].asnumpy(), ref.outputs[0].asnumpy(), passes)
    text = exe.debug_str() + '\n'
    for line in lines:
        assert line in text, (line, text[-800:])
    assert 'fold_bn' not in text.split('Inference passes')[1] or 'fold_bn' in passes


def test_weights_changed_by_the_user_are_folded_again(backend, monkeypatch):
    """The cache holds while nothing changes (no new fold) and is dropped when a weight,
    a BatchNorm parameter or a running statistic changes; references to the inputs are
    dropped and garbage collected between calls."""
    net = _logits(_resnet())
    ref = _bind(net, 'none', monkeypatch, data=(2, 3, 32, 32))
    exe = _bind(net, 'all', monkeypatch, data=(2, 3, 32, 32))
    plan = exe._passes.plan()
    states = [st.state for st in plan.bound.values()
              if isinstance(st.state, dict) and 'token' in st.state]
    assert len(states) == 15

    def check(what):
        ref.forward(is_train=False)
        exe.forward(is_train=False)
        gc.collect()
        for k in range(2):
            _close(exe.outputs[k].asnumpy(), ref.outputs[k].asnumpy(), what)
        return [s['token'] for s in states]

    def const_reorders():
        if backend != 'onednn':
            return None
        prims = [p for s in states for p in s['primitives'].values() if p is not None]
        assert len(prims) == 15         # one per layer, holding its reordered weights
        return sum(p.const_reorders for p in prims)

    first = check('first')
    reorders = const_reorders()
    assert reorders in (None, 15)
    assert check('again') == first                      # cached: no fold, no reorder
    assert const_reorders() == reorders
    rng = np.random.RandomState(9)
    for name, arrays in [('stage2_unit1_a_conv_weight', 'arg'), ('stem_bn_gamma', 'arg'),
                         ('stage3_unit2_b_bn_moving_var', 'aux'),
                         ('stage1_unit1_b_bn_beta', 'arg')]:
        for e in (ref, exe):
            d = e.arg_dict if arrays == 'arg' else e.aux_dict
            d[name][:] = rng.uniform(0.5, 1.5, d[name].shape)
            rng = np.random.RandomState(9)
        tokens = check(name)
        assert sum(a != b for a, b in zip(tokens, first)) == 1, name
        if backend == 'onednn':         # that layer's weights reordered again, once
            assert const_reorders() == reorders + 1, name
            reorders += 1
        first = tokens
    # new data only: no fold
    for e in (ref, exe):
        e.arg_dict['data'][:] = 0.25
    assert check('data') == first


def test_training_and_gradient_executors_keep_the_bound_plan(monkeypatch):
    net = _resnet()
    monkeypatch.setenv(ENV, 'all')
    exe = net.simple_bind(mx.cpu(), data=(2, 3, 32, 32))
    _fill(exe)
    exe.forward(is_train=False)             # backward may follow: MXNet allows it
    exe.backward()
    assert not exe._passes._built
    inf = net.simple_bind(mx.cpu(), grad_req='null', data=(2, 3, 32, 32))
    _fill(inf)
    seen = []
    inf.set_monitor_callback(lambda name, arr: seen.append(name))
    inf.forward(is_train=False)
    assert not inf._passes._built and 'stem_bn_output' in seen


def test_dead_nodes_dropout_blockgrad_and_label(backend, monkeypatch):
    data, label = mx.sym.var('data'), mx.sym.var('label')
    h = mx.sym.FullyConnected(data, num_hidden=6, name='fc1')
    h = mx.sym.BatchNorm(h, fix_gamma=False, name='bn1')
    h = mx.sym.Dropout(h, p=0.5, name='drop')
    h = mx.sym.BlockGrad(h, name='stop')
    h = mx.sym.FullyConnected(h, num_hidden=4, name='fc2')
    out = mx.sym.SoftmaxOutput(h, label=label * 2 + 1, name='sm')
    ref = _bind(out, 'none', monkeypatch, data=(5, 7), label=(5,))
    ref.forward(is_train=False)
    exe = _bind(out, 'all', monkeypatch, data=(5, 7), label=(5,))
    exe.forward(is_train=False)
    _close(exe.outputs[0].asnumpy(), ref.outputs[0].asnumpy(), 'output')
    text = exe.debug_str()
    assert 'dead_nodes: 4 bypassed or removed (drop, stop, ' in text, text[-600:]
    assert '1 x FullyConnected + BatchNorm(folded)' in text
    assert 'inference plan: 3 operator steps (bound plan: 8)' in text


@pytest.mark.parametrize('act', [dict(act_type='sigmoid'), dict(act_type='tanh'),
                                 'leaky', 'elu', 'gelu'])
def test_conv_activation_post_ops(act, backend, monkeypatch):
    data = mx.sym.var('data')
    h = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=5, name='c1')
    h = mx.sym.Activation(h, name='a', **act) if isinstance(act, dict) else \
        mx.sym.LeakyReLU(h, act_type=act, slope=0.2, name='a')
    h = mx.sym.Convolution(h, kernel=(1, 3), stride=(2, 1), num_filter=4, no_bias=True,
                           num_group=1, name='c2')
    h = mx.sym.BatchNorm(h, fix_gamma=True, name='bn')     # gamma written to 1, as MXNet
    ref = _bind(h, 'none', monkeypatch, data=(2, 3, 9, 8))
    ref.forward(is_train=False)
    exe = _bind(h, 'all', monkeypatch, data=(2, 3, 9, 8))
    exe.forward(is_train=False)
    _close(exe.outputs[0].asnumpy(), ref.outputs[0].asnumpy(), str(act))
    np.testing.assert_array_equal(exe.arg_dict['bn_gamma'].asnumpy(), 1)
    assert 'fuse: 2 fused node(s)' in exe.debug_str()


def test_conv1d_and_3d_fold(backend, monkeypatch):
    for shape, kernel in [((2, 3, 11), (3,)), ((1, 2, 5, 6, 4), (3, 2, 2))]:
        data = mx.sym.var('data')
        h = mx.sym.Convolution(data, kernel=kernel, num_filter=4, name='c')
        h = mx.sym.BatchNorm(h, fix_gamma=False, name='bn')
        h = mx.sym.Activation(h, act_type='relu', name='r') + mx.sym.var('skip')
        h = mx.sym.Activation(h, act_type='relu', name='r2')
        ref = _bind(h, 'none', monkeypatch, data=shape)
        ref.forward(is_train=False)
        exe = _bind(h, 'all', monkeypatch, data=shape)
        exe.forward(is_train=False)
        _close(exe.outputs[0].asnumpy(), ref.outputs[0].asnumpy(), str(shape))
        assert '1 x Convolution + BatchNorm(folded) + Activation(relu) + ' \
            'elemwise_add(sum) + Activation(relu)' in exe.debug_str()


def test_gluon_checkpoint_with_and_without_passes(backend, monkeypatch):
    """MXNet's exported ResNet-style HybridBlock (tests/golden, with Dropout) matches
    MXNet's output with every pass and with none."""
    with np.load(os.path.join(GLUON, 'expected.npz')) as z:
        x, want = z['data'], z['output']
    sym, args, auxs = mx.model.load_checkpoint(os.path.join(GLUON, 'model'), 0)
    for passes in ('all', 'none'):
        monkeypatch.setenv(ENV, passes)
        exe = sym.simple_bind(mx.cpu(), grad_req='null', data=x.shape)
        exe.arg_dict['data'][:] = x
        for k, v in args.items():
            exe.arg_dict[k][:] = v
        for k, v in auxs.items():
            exe.aux_dict[k][:] = v
        exe.forward(is_train=False)
        np.testing.assert_allclose(exe.outputs[0].asnumpy(), want, rtol=1e-4, atol=1e-5)
    with open(os.path.join(GLUON, 'meta.json')) as f:
        assert json.load(f)['outputs'] == sym.list_outputs()


def test_layer_primitives_go_with_the_executor(monkeypatch):
    """The primitives holding a layer's reordered weights live in the executor's state:
    dropping the executor frees them (rebinding in a loop does not pile them up)."""
    import weakref
    monkeypatch.delenv('SYMGRAPH_ONEDNN', raising=False)
    onednn.reset()
    if onednn.backend() is None:
        pytest.skip('oneDNN is not available on this machine')
    data = mx.sym.var('data')
    h = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4, name='c')
    h = mx.sym.Activation(mx.sym.BatchNorm(h, name='bn'), act_type='relu', name='r')
    refs = []
    for _ in range(3):
        exe = _bind(h, 'all', monkeypatch, data=(2, 3, 8, 8))
        exe.forward(is_train=False)
        prims = [p for s in _states(exe) if isinstance(s, dict)
                 for p in s['primitives'].values() if p is not None]
        assert len(prims) == 1
        refs.append(weakref.ref(prims[0]))
        del exe, prims
        gc.collect()
    assert all(r() is None for r in refs)
    onednn.reset()


@pytest.mark.gpu
@pytest.mark.skipif(mx.context.num_gpus() == 0, reason='needs a CUDA GPU and CuPy')
def test_gpu_inference_plan_matches_cpu(monkeypatch):
    """On a GPU the passes fold and fuse too (the fused operators' CuPy path: folding on
    the device, the consumers' own forward for the post-ops)."""
    net = _logits(_resnet())
    results = []
    for ctx, passes in ((mx.cpu(), 'none'), (mx.gpu(0), 'all')):
        monkeypatch.setenv(ENV, passes)
        exe = net.simple_bind(ctx, grad_req='null', data=(2, 3, 32, 32))
        _fill(exe)
        exe.forward(is_train=False)
        exe.forward(is_train=False)         # the cached fold
        results.append([o.asnumpy() for o in exe.outputs])
    assert 'fold_bn: 15 per-channel' in exe.debug_str()
    for got, want in zip(results[1], results[0]):
        _close(got, want, 'gpu')


_CREATED = []


@mx.operator.register('t_passes_double')
class _DoubleProp(mx.operator.CustomOpProp):
    def __init__(self):
        super().__init__(need_top_grad=True)

    def list_arguments(self):
        return ['data']

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        _CREATED.append(ctx)
        return _Double()


class _Double(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0] * 2)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0] * 2)


def test_custom_operator_made_once_per_bind(monkeypatch):
    """A node the passes leave as it is shares the bound plan's state: the inference plan
    makes no second CustomOp (MXNet makes one per node and bind)."""
    data = mx.sym.var('data')
    h = mx.sym.Dropout(mx.sym.FullyConnected(data, num_hidden=3, name='fc'), name='drop')
    h = mx.sym.Custom(h, op_type='t_passes_double', name='dbl')
    del _CREATED[:]
    exe = _bind(h, 'all', monkeypatch, data=(2, 4))
    exe.forward(is_train=False)
    assert len(_CREATED) == 1
    assert 'dead_nodes: 1 bypassed or removed (drop)' in exe.debug_str()
    ref = _bind(h, 'none', monkeypatch, data=(2, 4))
    ref.forward(is_train=False)
    _close(exe.outputs[0].asnumpy(), ref.outputs[0].asnumpy(), 'custom')


# ------------------------------------------------------------------ the layout pass
def _require_onednn(monkeypatch):
    monkeypatch.delenv('SYMGRAPH_ONEDNN', raising=False)
    onednn.reset()
    if onednn.backend() is None:
        pytest.skip('oneDNN is not available on this machine')


def _resnet_with_and_without_passes(monkeypatch, batch):
    """(executor without passes, executor with all), the ResNet with its logits as a second
    head, each run forward once at inference."""
    net = _logits(_resnet())
    ref = _bind(net, 'none', monkeypatch, data=(batch, 3, 32, 32))
    ref.forward(is_train=False)
    exe = _bind(net, 'all', monkeypatch, data=(batch, 3, 32, 32))
    exe.forward(is_train=False)
    return ref, exe


def _states(exe):
    """The states of the inference plan's Steps."""
    return [st.state for st in exe._passes.plan().bound.values()]


def _fused_primitives(exe):
    return [p for s in _states(exe) if isinstance(s, dict)
            for p in s['primitives'].values() if p is not None]


def test_layout_keeps_resnet_activations_channels_last(monkeypatch):
    """Every fused convolution of the ResNet writes channels last into the storage plan's
    buffers; the next ones read it as it lies, so the only reorder left in the run is the
    3-channel input's (and the constant weights'); the six residual sums take their
    residual's buffer in place; the outputs are the unfused graph's."""
    _require_onednn(monkeypatch)
    ref, exe = _resnet_with_and_without_passes(monkeypatch, 4)
    exe.forward(is_train=False)
    for k in range(2):
        _close(exe.outputs[k].asnumpy(), ref.outputs[k].asnumpy(), 'output %d' % k)
        assert exe.outputs[k].asnumpy().flags.c_contiguous
    assert 'layout: 15 output(s) kept channels last' in exe.debug_str()
    plan = exe._passes.plan()
    st = plan.storage()
    assert st.layouts.count('channels_last') == 15
    views = plan.allocate()
    for v, lay in zip(views, st.layouts):
        if lay == 'channels_last':
            assert v.strides[1] == 4 and not v.flags.c_contiguous
    prims = _fused_primitives(exe)
    assert len(prims) == 15
    assert sum(len(p.before) + len(p.after) for p in prims) == 1     # the stem's data
    # the residual sums run in place: output and residual share an offset
    slot = {k: i for i, k in enumerate(st.keys)}
    inplace = 0
    for n in plan.steps:
        op = plan.run_op[id(n)]
        for j, i in op.inplace:
            src, out = plan.in_entries(n)[j], plan.out_entries(n)[i]
            if src in slot and out in slot:
                inplace += st.offset[slot[src]] == st.offset[slot[out]]
    assert inplace == 6


def test_layout_stops_at_heads_and_at_operators_wanting_c_order(monkeypatch):
    """A head keeps C order, and so does an output read by an operator that does not take
    channels-last data (Flatten); the values are right either way. Pooling takes it and
    passes it on. ``layout`` is switched off by leaving it out of the variable."""
    _require_onednn(monkeypatch)
    data = mx.sym.var('data')
    a = mx.sym.Activation(mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=16,
                                             name='c1'), act_type='relu', name='r1')
    p = mx.sym.Pooling(a, kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type='max',
                       name='pool')
    c2 = mx.sym.Convolution(p, kernel=(3, 3), pad=(1, 1), num_filter=16, name='c2')
    c3 = mx.sym.Convolution(c2, kernel=(1, 1), num_filter=8, name='c3')
    flat = mx.sym.Flatten(mx.sym.Convolution(c3, kernel=(1, 1), num_filter=4, name='c4'))
    net = mx.sym.Group([flat, c3])
    shapes = dict(data=(2, 8, 48, 48))   # pooling 73,728 elements: oneDNN (ONEDNN_MIN)
    ref = _bind(net, 'none', monkeypatch, **shapes)
    ref.forward(is_train=False)
    exe = _bind(net, 'all', monkeypatch, **shapes)
    exe.forward(is_train=False)
    for k in range(2):
        _close(exe.outputs[k].asnumpy(), ref.outputs[k].asnumpy(), 'output %d' % k)
    text = exe.debug_str()
    # r1 (c1 + relu) and pool write channels last; c2 too (c3 reads it); c3 is a head
    # and c4 feeds Flatten: both C order
    assert 'layout: 3 output(s) kept channels last between the operators reading it ' \
           '(r1, pool, c2)' in text, text
    off = _bind(net, 'dead_nodes,fold_bn,fuse', monkeypatch, **shapes)
    off.forward(is_train=False)
    assert 'layout:' not in off.debug_str()
    _close(off.outputs[0].asnumpy(), ref.outputs[0].asnumpy(), 'no layout pass')


def test_layout_pass_without_onednn_changes_nothing(monkeypatch):
    monkeypatch.setenv('SYMGRAPH_ONEDNN', '0')
    onednn.reset()
    exe = _bind(_resnet(), 'layout', monkeypatch, data=(2, 3, 32, 32))
    exe.forward(is_train=False)
    assert 'layout: 0 output(s) kept' in exe.debug_str()
    assert 'the bound plan (nothing to rewrite)' in exe.debug_str()
    onednn.reset()


def test_operators_not_asked_read_channels_last_arrays_correctly(monkeypatch):
    """A consumer whose oneDNN path declines at run time (here: the backend refuses every
    fused convolution) computes from the channels-last array with NumPy, correctly."""
    _require_onednn(monkeypatch)
    ref, exe = _resnet_with_and_without_passes(monkeypatch, 2)
    be = onednn.backend()
    real = be.conv_forward_fused
    calls = []

    def every_other(*a, **k):
        calls.append(1)
        return real(*a, **k) if len(calls) % 2 else None
    # (operators get their kernels from the backend's kernel table: cpu_kernel)
    monkeypatch.setitem(onednn.KERNEL_TABLE, 'conv_forward_fused', every_other)
    exe.forward(is_train=False)
    assert len(calls) == 15
    for k in range(2):
        _close(exe.outputs[k].asnumpy(), ref.outputs[k].asnumpy(), 'output %d' % k)


def test_fold_cache_compares_bits():
    """The fold cache's check: a memcmp for C-contiguous NumPy arrays (one changed element,
    a sign of zero or a dtype is a change; the same NaN is not), array_equal otherwise."""
    from symgraph.opdef import same_bits
    a = np.linspace(-1, 1, 1001).astype(np.float32)
    assert same_bits(np, a, a.copy())
    b = a.copy()
    b[500] = np.nextafter(b[500], np.float32(1))
    assert not same_bits(np, a, b)
    z = np.zeros(4, np.float32)
    assert not same_bits(np, z, -z)
    assert not same_bits(np, a, a.astype(np.float64))
    n = np.array([1.0, np.nan])
    assert same_bits(np, n, n.copy())
    assert same_bits(np, a[::2], a[::2].copy()) and not same_bits(np, a[::2], b[::2])


def test_fused_convolutions_replay_their_last_call(monkeypatch):
    """A second inference forward runs each fused convolution's primitive on the arrays of
    its last call without working the call out anew (Backend.conv_forward_fused's memo),
    and still reads what the arrays hold now: new data in the same input array, and
    weights the user changed (folded again into new arrays, so no replay there)."""
    _require_onednn(monkeypatch)
    ref, exe = _resnet_with_and_without_passes(monkeypatch, 2)
    be = onednn.backend()
    asked = []
    real = type(be).primitive
    monkeypatch.setattr(type(be), 'primitive',
                        lambda self, key, build, cache=None: (asked.append(key[0]),
                                                              real(self, key, build,
                                                                   cache))[1])
    rng = np.random.RandomState(7)
    for step in range(3):
        for e in (ref, exe):
            e.arg_dict['data'][:] = rng.uniform(-1, 1, (2, 3, 32, 32)) if e is ref \
                else ref.arg_dict['data']
        if step == 2:       # the user changes a weight: that layer is folded again
            w = ref.arg_dict['stage2_unit1_a_conv_weight']
            w[:] = w.asnumpy() * 0.5
            exe.arg_dict['stage2_unit1_a_conv_weight'][:] = w
        del asked[:]
        for e in (ref, exe):
            e.forward(is_train=False)
        for k in range(2):
            _close(exe.outputs[k].asnumpy(), ref.outputs[k].asnumpy(), 'step %d' % step)
        memos = [s['memo'] for s in _states(exe) if isinstance(s, dict) and 'memo' in s]
        assert len(memos) == 15 and all(len(m) == 1 for m in memos)
        fused = asked.count('conv_forward_fused')
        assert fused == (1 if step == 2 else 0), (step, fused)
