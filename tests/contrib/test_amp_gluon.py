"""AMP for Gluon (symgraph/contrib/amp/gluon_amp.py, loss_scaler.py): the dynamic loss
scale against a reference of the rule (2**16 to start, halved and the step skipped on
overflow, doubled after 2000 clean steps), scaled and unscaled steps equal to plain ones,
the imperative loss outputs' grad_scale, a float16 network trained with it, and
convert_hybrid_block."""
import json
import os

import numpy as np
import pytest

import symgraph as mx
from symgraph import autograd
from symgraph.contrib import amp
from symgraph.contrib.amp import amp as amp_module
from symgraph.contrib.amp.loss_scaler import LossScaler
from symgraph.gluon import Parameter, Trainer, nn
import gluon_trainer_probes as probes
from test_golden import assert_same_graph


@pytest.fixture
def amp_on():
    amp.init()
    yield
    amp_module._uninit()


def _param(value=1.0, name='w', shape=(3,), dtype='float32'):
    p = Parameter(name, shape=shape, init=mx.init.Constant(value), dtype=dtype)
    p.initialize()
    return p


def _backward_scaled(trainer, params, grads):
    with autograd.record():
        loss = mx.nd.add_n(*[(p.data() * mx.nd.array(g, dtype=p.dtype)).sum()
                             for p, g in zip(params, grads)])
        with amp.scale_loss(loss, trainer) as scaled:
            autograd.backward(scaled)


# ----------------------------------------------------------------------------- the scaler
def _reference_scales(overflows, init=2. ** 16, seq_len=2000, max_scale=2. ** 24):
    """The factor used at each step, by the rule (a new factor from the next step on)."""
    scale, clean, used = init, 0, []
    for bad in overflows:
        used.append(scale)
        if bad:
            scale, clean = scale / 2, 0
        else:
            clean += 1
            if clean == seq_len:
                scale, clean = min(max_scale, scale * 2), 0
    return used


class _FakeParam:
    def __init__(self, finite):
        self._grad = [mx.nd.array([1.0, np.inf if not finite else 2.0])]


@pytest.mark.parametrize('seed', [0, 1])
def test_loss_scale_follows_the_rule(seed):
    rng = np.random.RandomState(seed)
    overflows = list(rng.rand(60) < 0.15) + [False] * 100
    scaler = LossScaler(scale_seq_len=4, max_scale=2. ** 17)
    used = []
    for bad in overflows:
        used.append(scaler.loss_scale)
        assert scaler.has_overflow([_FakeParam(not bad)]) == bad
    assert used == _reference_scales(overflows, seq_len=4, max_scale=2. ** 17)
    assert used[-1] == 2. ** 17          # capped


def test_defaults_are_mxnets():
    s = LossScaler()
    assert s.loss_scale == 2. ** 16 and s._scale_seq_len == 2000 and \
        s._max_loss_scale == 2. ** 24
    used = []
    for _ in range(2001):
        used.append(s.loss_scale)
        s.has_overflow([_FakeParam(True)])
    assert used[1999] == 2. ** 16 and used[2000] == 2. ** 17


def test_overflow_check_spans_contexts_and_chunks():
    many = [mx.nd.ones(2, ctx=mx.cpu(i % 2)) for i in range(450)]
    assert LossScaler.all_finite(many)
    many[437] = mx.nd.array([0.0, np.nan], ctx=mx.cpu(1))
    assert not LossScaler.all_finite(many)


# ----------------------------------------------------------------------------- Trainer
def test_init_trainer_requires_amp_init_and_a_trainer():
    w = _param()
    t = Trainer([w], 'sgd')
    with pytest.raises(RuntimeError, match='amp.init'):
        amp.init_trainer(t)
    amp.init()
    try:
        with pytest.raises(TypeError, match='only compatible with Gluon Trainer'):
            amp.init_trainer(mx.optimizer.SGD())
        with pytest.raises(TypeError, match='should be a Gluon Trainer'):
            amp.init_trainer('sgd')
        with pytest.raises(RuntimeError, match='init_trainer'):
            amp.scale_loss(mx.nd.ones(1), t)
        amp.init_trainer(t)
        # the first trainer gets init()'s scaler, later ones their own
        assert t._amp_loss_scaler is amp_module._loss_scaler
        t2 = Trainer([_param(name='v')], 'sgd')
        amp.init_trainer(t2)
        assert t2._amp_loss_scaler is not t._amp_loss_scaler
        assert t2._amp_loss_scaler.loss_scale == 2. ** 16
    finally:
        amp_module._uninit()


def test_scaled_steps_equal_plain_steps(amp_on):
    rng = np.random.RandomState(0)
    grads = [[rng.normal(size=3).astype(np.float32), rng.normal(size=(2, 2)).astype(np.float32)]
             for _ in range(4)]
    runs = []
    for use_amp in (False, True):
        params = [_param(0.5, 'a'), _param(-0.25, 'b', (2, 2))]
        t = Trainer(params, 'sgd', {'learning_rate': 0.1, 'momentum': 0.9,
                                    'rescale_grad': 0.5})
        if use_amp:
            amp.init_trainer(t)
        for g in grads:
            if use_amp:
                _backward_scaled(t, params, g)
                # the gradients hold the scale until the step divides it out
                np.testing.assert_allclose(params[0].grad().asnumpy(), g[0] * 2. ** 16,
                                           rtol=1e-6)
            else:
                with autograd.record():
                    loss = mx.nd.add_n(*[(p.data() * mx.nd.array(x)).sum()
                                         for p, x in zip(params, g)])
                loss.backward()
            t.step(4)
        runs.append([p.data().asnumpy() for p in params])
    for plain, scaled in zip(*runs):
        np.testing.assert_array_equal(plain, scaled)


def test_overflow_skips_the_step_and_halves_the_scale(amp_on):
    w = _param(1.0)
    t = Trainer([w], 'sgd', {'learning_rate': 1.0})
    amp.init_trainer(t)
    _backward_scaled(t, [w], [np.ones(3, np.float32)])
    w.grad()[1] = np.inf                        # as a float16 overflow leaves it
    t.step(1)
    np.testing.assert_array_equal(w.data().asnumpy(), np.ones(3))       # skipped
    assert t._amp_loss_scaler.loss_scale == 2. ** 15
    # the next loss is scaled by the halved factor, and the step divides that out
    _backward_scaled(t, [w], [np.full(3, 0.5, np.float32)])
    np.testing.assert_allclose(w.grad().asnumpy(), np.full(3, 0.5 * 2. ** 15))
    t.step(1)
    np.testing.assert_allclose(w.data().asnumpy(), np.full(3, 0.5))


def test_scale_loss_of_a_list(amp_on):
    w = _param(2.0)
    t = Trainer([w], 'sgd', {'learning_rate': 1.0})
    amp.init_trainer(t)
    with autograd.record():
        losses = [w.data().sum(), (w.data() * 3).sum()]
        with amp.scale_loss(losses, t) as scaled:
            assert [float(s.asscalar()) for s in scaled] == [6 * 2. ** 16, 18 * 2. ** 16]
            autograd.backward(scaled)
    t.step(2)
    np.testing.assert_allclose(w.data().asnumpy(), np.full(3, 2.0 - 4.0 / 2))


def test_unscale_then_clip(amp_on):
    w = _param(0.0)
    t = Trainer([w], 'sgd', {'learning_rate': 1.0})
    amp.init_trainer(t)
    _backward_scaled(t, [w], [np.array([3.0, 0.0, 4.0], np.float32)])
    amp.unscale(t)
    np.testing.assert_allclose(w.grad().asnumpy(), [3.0, 0.0, 4.0])
    assert t._scale == 1.0
    mx.gluon.utils.clip_global_norm([w.grad()], 1.0)
    t.step(1)
    np.testing.assert_allclose(w.data().asnumpy(), [-0.6, 0.0, -0.8], rtol=1e-5)


def test_imperative_loss_outputs_scale_their_gradient(amp_on):
    x = mx.nd.array([[1.0, 2.0, 0.5], [0.1, 0.2, 0.3]])
    label = mx.nd.array([2, 0])
    x.attach_grad()
    with autograd.record():
        out = mx.nd.SoftmaxOutput(x, label)
    out.backward()
    p = np.exp(x.asnumpy()) / np.exp(x.asnumpy()).sum(1, keepdims=True)
    p[[0, 1], [2, 0]] -= 1
    np.testing.assert_allclose(x.grad.asnumpy(), p * 2. ** 16, rtol=1e-4)
    with autograd.record():
        out = mx.nd.SoftmaxOutput(x, label, grad_scale=0.5)
    out.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), p * 2. ** 15, rtol=1e-4)


def test_a_float16_network_trains_with_dynamic_loss_scaling(amp_on):
    rng = np.random.RandomState(0)
    x = rng.normal(size=(64, 6)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(np.float32)
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(16, activation='relu'), nn.Dense(2))
    net.initialize(mx.init.Xavier())
    net.cast('float16')
    net.hybridize()
    t = Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.5, 'multi_precision': True})
    amp.init_trainer(t)
    loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    data, label = mx.nd.array(x, dtype='float16'), mx.nd.array(y, dtype='float16')
    losses = []
    for _ in range(30):
        # float16 gradients overflow at first, on purpose: NumPy's warnings about it are
        # what AMP's overflow check deals with
        with np.errstate(over='ignore', invalid='ignore'):
            with autograd.record():
                loss = loss_fn(net(data), label)
                with amp.scale_loss(loss, t) as scaled:
                    autograd.backward(scaled)
            t.step(64)
        losses.append(float(loss.astype('float32').mean().asscalar()))
    assert all(p.data().dtype == np.float16 for p in net.collect_params().values())
    # 2**16 overflows float16's gradients at first: steps are skipped (the loss stays), the
    # scale falls until they fit
    assert t._amp_loss_scaler.loss_scale < 2. ** 16
    assert losses[1] == losses[0]
    assert losses[-1] < 0.5 * losses[0]


# ----------------------------------------------------------------------------- convert
def _net():
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(8, activation='relu'), nn.BatchNorm(), nn.Dense(3))
    net.initialize(mx.init.Xavier())
    return net


@pytest.mark.parametrize('optional', [False, True])
def test_convert_hybrid_block_runs_in_float16(optional):
    net = _net()
    net.hybridize()
    x = mx.nd.array(np.random.RandomState(1).normal(size=(4, 5)))
    want = net(x).asnumpy()
    converted = amp.convert_hybrid_block(net, cast_optional_params=optional)
    assert isinstance(converted, mx.gluon.SymbolBlock)
    # its graph is convert_symbol's of the block's traced graph
    expected = amp.convert_symbol(net._cached_graph[1], data_names=['data'],
                                  cast_optional_params=optional)
    inputs, sym = converted._cached_graph
    assert [i.name for i in inputs] == ['data']
    assert sym.tojson(remove_amp_cast=False) == expected.tojson(remove_amp_cast=False)
    assert 'amp_cast' in sym.tojson(remove_amp_cast=False)
    dtypes = {k.split('_', 1)[1]: np.dtype(v.dtype).name
              for k, v in converted.collect_params().items()}
    low = 'float16' if optional else 'float32'
    assert dtypes == {'dense0_weight': low, 'dense0_bias': low, 'dense1_weight': low,
                      'dense1_bias': low, 'batchnorm0_gamma': 'float32',
                      'batchnorm0_beta': 'float32', 'batchnorm0_running_mean': 'float32',
                      'batchnorm0_running_var': 'float32'}
    # the values are the block's, rounded to their new type
    src = net.collect_params()
    for k, p in converted.collect_params().items():
        np.testing.assert_array_equal(
            p.data().asnumpy(), src[k].data().asnumpy().astype(dtypes[k.split('_', 1)[1]]))
    got = converted(x)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-2, atol=1e-2)


def test_convert_hybrid_block_needs_a_run_hybridized_block():
    net = _net()
    with pytest.raises(RuntimeError, match='hybridize'):
        amp.convert_hybrid_block(net)
    with pytest.raises(TypeError, match='HybridBlock'):
        amp.convert_hybrid_block(nn.Sequential())


@pytest.mark.parametrize('update_on_kvstore', [True, False])
def test_overflow_skips_the_step_with_a_store(amp_on, update_on_kvstore):
    """With two contexts the overflow is found before the store sums (and, when it runs
    the optimizer, applies) the gradients: the weights stay on every context."""
    ctxs = [mx.cpu(0), mx.cpu(1)]
    w = Parameter('w', shape=(3,), init=mx.init.Constant(1.0))
    w.initialize(ctx=ctxs)
    t = Trainer([w], 'sgd', {'learning_rate': 1.0}, update_on_kvstore=update_on_kvstore)
    amp.init_trainer(t)
    for k, ctx in enumerate(ctxs):
        with autograd.record():
            loss = (w.data(ctx) * (k + 1)).sum()
            with amp.scale_loss(loss, t) as scaled:
                autograd.backward(scaled)
    w.grad(mx.cpu(1))[0] = np.nan
    t.step(1)
    assert t._update_on_kvstore is update_on_kvstore
    for d in w.list_data():
        np.testing.assert_array_equal(d.asnumpy(), np.ones(3))
    for k, ctx in enumerate(ctxs):
        with autograd.record():
            loss = (w.data(ctx) * (k + 1)).sum()
            with amp.scale_loss(loss, t) as scaled:
                autograd.backward(scaled)
    t.step(1)
    for d in w.list_data():
        np.testing.assert_allclose(d.asnumpy(), np.full(3, 1.0 - 3.0))


@pytest.mark.parametrize('hybridize', [True, False])
def test_mxnets_amp_tutorial_loop(amp_on, hybridize):
    """MXNet's AMP tutorial: amp.init() before a float32 network is built, so that its
    layers run in float16 (imperatively, or in the traced graph with amp_cast nodes)."""
    rng = np.random.RandomState(0)
    x = rng.normal(size=(64, 6)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(np.float32)
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(16, activation='relu'), nn.Dense(2))
    net.initialize(mx.init.Xavier())
    if hybridize:
        net.hybridize()
    t = Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.5})
    amp.init_trainer(t)
    loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    data, label = mx.nd.array(x), mx.nd.array(y)
    losses = []
    for _ in range(20):
        with np.errstate(over='ignore', invalid='ignore'):
            with autograd.record():
                out = net(data)
                loss = loss_fn(out, label)
                with amp.scale_loss(loss, t) as scaled:
                    autograd.backward(scaled)
            t.step(64)
        losses.append(float(loss.astype('float32').mean().asscalar()))
    assert out.dtype == np.float16
    assert all(p.data().dtype == np.float32 for p in net.collect_params().values())
    if hybridize:
        assert 'amp_cast' in net._cached_graph[1].tojson(remove_amp_cast=False)
    assert t._amp_loss_scaler.loss_scale < 2. ** 16
    assert losses[-1] < 0.5 * losses[0]


GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'golden', 'data',
                      'gluon_trainer', 'convert_hybrid_block.json')


@pytest.mark.parametrize('optional', [False, True])
def test_convert_hybrid_block_gives_mxnets_graph_and_dtypes(optional):
    """tests/golden/gluon_trainer_probes.py's convert_case: the converted SymbolBlock's
    graph (amp_cast nodes, names, __dtype__) and parameter types equal MXNet 1.9.1's."""
    with open(GOLDEN) as f:
        want = json.load(f)['optional_%s' % optional]
    with mx.name.NameManager():
        block = amp.convert_hybrid_block(probes.convert_net(mx), cast_optional_params=optional)
    assert_same_graph(block._cached_graph[1].tojson(remove_amp_cast=False), want['json'],
                      'convert_hybrid_block(cast_optional_params=%s)' % optional)
    assert {k: np.dtype(v.dtype).name for k, v in block.collect_params().items()} == \
        want['dtypes']
