"""gluon.nn's basic layers and activations: forward outputs, input and parameter gradients,
running statistics, parameter names and reprs against MXNet 1.9.1
(tests/golden/gluon_nn_probes.py), imperative and hybridized; the symbols the layers make
with ``F = mx.sym`` and the symbol files they export; Dropout's training behaviour;
containers and errors."""
import numpy as np
import pytest

import symgraph as mx
from symgraph import autograd
from symgraph.gluon import nn
import gluon_nn_probes as probes

CONV = ('conv', 'maxpool', 'avgpool', 'global', 'reflectionpad')
CONTRIB = ('hybridconcurrent', 'concurrent', 'identity', 'pixelshuffle', 'syncbatchnorm')
CASES = sorted(n for n in probes.LAYERS if not n.startswith(CONV + CONTRIB))
HYBRID = [n for n in CASES if probes.LAYERS[n][2]]


# ----------------------------------------------------------------------------- golden
@pytest.mark.parametrize('case', CASES)
def test_layer_equals_mxnet(case):
    probes.check_layer(mx, case)


@pytest.mark.parametrize('case', HYBRID)
def test_hybridized_layer_equals_mxnet(case):
    probes.check_layer(mx, case, hybridize=True)


@pytest.mark.parametrize('case', HYBRID)
def test_layer_on_symbols_makes_mxnets_graph(case):
    meta = probes.golden()[0]['layers'][case]
    assert probes.layer_symbol(mx, case) == meta['symbol']


@pytest.mark.parametrize('case', HYBRID)
def test_exported_symbol_file_equals_mxnets(case, tmp_path):
    want = probes.golden()[0]['layers'][case]['exported']
    assert probes.exported_nodes(mx, case, str(tmp_path)) == want


def test_golden_cases_cover_every_layer():
    layers = set(nn.basic_layers.__all__ + nn.activations.__all__)
    numeric = {type(probes.LAYERS[c][0](mx)).__name__ for c in probes.LAYERS}
    reprs = {type(make(mx)).__name__ for make in probes.REPRS.values()}
    # Dropout's training output is random and MXNet's native build lacks
    # BatchNormWithReLU: both are tested below against their definitions; Sequential
    # runs in the golden 'concurrent' case (its subclass) and below
    assert layers - numeric == {'Dropout', 'BatchNormReLU', 'Sequential'}
    assert layers - reprs - numeric == {'Sequential'}


@pytest.mark.parametrize('case', sorted(probes.REPRS))
def test_repr_equals_mxnet(case):
    with mx.name.NameManager():
        block = probes.REPRS[case](mx)
    assert repr(block) == probes.golden()[0]['reprs'][case]


def test_automatic_names_equal_mxnet():
    names = probes.golden()[0]['names']
    with mx.name.NameManager():
        net = probes._names_net(mx)
        two = probes._names_two(mx)
    assert list(net.collect_params().keys()) == names['net']
    assert [net.prefix] + [c.prefix for c in net._children.values()] + \
        [c.prefix for c in net[4]._children.values()] == names['net_prefixes']
    assert [b.prefix for b in two] == names['top_level']
    assert [list(b.collect_params().keys()) for b in two] == names['top_level_params']


def test_default_initializers():
    with mx.name.NameManager():
        bn, dense, prelu = nn.BatchNorm(in_channels=3), nn.Dense(2, in_units=3), nn.PReLU()
        ln = nn.LayerNorm(in_channels=4)
    for block in (bn, dense, prelu, ln):
        block.initialize(mx.init.Zero())
    np.testing.assert_array_equal(bn.gamma.data().asnumpy(), np.ones(3))
    np.testing.assert_array_equal(bn.running_var.data().asnumpy(), np.ones(3))
    np.testing.assert_array_equal(bn.running_mean.data().asnumpy(), np.zeros(3))
    np.testing.assert_array_equal(ln.gamma.data().asnumpy(), np.ones(4))
    np.testing.assert_array_equal(prelu.alpha.data().asnumpy(), [0.25])
    np.testing.assert_array_equal(dense.weight.data().asnumpy(), np.zeros((2, 3)))
    assert [bn.gamma.grad_req, bn.running_mean.grad_req] == ['write', 'null']
    assert nn.BatchNorm(scale=False, center=False).gamma.grad_req == 'null'


# ----------------------------------------------------------------------------- numerics
def _numeric_grad(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        old = x[i]
        x[i] = old + eps
        hi = f(x)
        x[i] = old - eps
        lo = f(x)
        x[i] = old
        g[i] = (hi - lo) / (2 * eps)
    return g


@pytest.mark.parametrize('make', [
    lambda: nn.Dense(3, activation='tanh', in_units=4, dtype='float64'),
    lambda: nn.LayerNorm(in_channels=4),
    lambda: nn.GroupNorm(2),
    lambda: nn.ELU(0.5), lambda: nn.GELU(), lambda: nn.Swish(0.7),
    lambda: nn.PReLU(in_channels=2)],
    ids=['dense', 'layernorm', 'groupnorm', 'elu', 'gelu', 'swish', 'prelu'])
def test_float64_input_gradient_is_numeric(make):
    rng = np.random.RandomState(0)
    block = make()
    block.initialize(mx.init.Uniform(0.5))
    block.cast('float64')
    x0 = rng.standard_normal((3, 2, 4) if not isinstance(block, nn.Dense) else (3, 4))
    block(mx.nd.array(x0, dtype='float64'))
    head = rng.standard_normal(block(mx.nd.array(x0, dtype='float64')).shape)

    def f(x):
        return float((block(mx.nd.array(x, dtype='float64')).asnumpy() * head).sum())

    x = mx.nd.array(x0, dtype='float64')
    x.attach_grad()
    with autograd.record():
        y = block(x)
    y.backward(mx.nd.array(head, dtype='float64'))
    assert x.grad.dtype == np.float64
    np.testing.assert_allclose(x.grad.asnumpy(), _numeric_grad(f, x0.copy()), rtol=1e-6,
                               atol=1e-8)


def test_selu_gradient_is_mxnets():
    # MXNet 1.9.1's LeakyReLU(selu) gradient below 0 is lambda * (out + alpha), not the
    # derivative lambda * alpha * exp(x); the operator matches it (golden 'selu' case)
    lam, alpha = 1.0507009873554805, 1.6732632423543772
    x0 = np.array([-2.0, -0.5, 0.5, 2.0])
    x = mx.nd.array(x0, dtype='float64')
    x.attach_grad()
    with autograd.record():
        y = nn.SELU()(x)
    y.backward()
    out = lam * np.where(x0 > 0, x0, alpha * np.expm1(x0))
    np.testing.assert_allclose(y.asnumpy(), out, rtol=1e-12)
    np.testing.assert_allclose(x.grad.asnumpy(), np.where(x0 > 0, lam, lam * (out + alpha)),
                               rtol=1e-12)


def test_batchnorm_relu_is_relu_of_batchnorm():
    rng = np.random.RandomState(1)
    x0 = rng.standard_normal((4, 3, 5)).astype(np.float32)
    head = rng.standard_normal(x0.shape).astype(np.float32)
    results = []
    for fused in (True, False):
        block = nn.BatchNormReLU() if fused else nn.BatchNorm()
        block.initialize()
        block.gamma.set_data(mx.nd.array([0.5, -1.0, 2.0]))
        block.beta.set_data(mx.nd.array([0.1, 0.2, -0.3]))
        x = mx.nd.array(x0)
        x.attach_grad()
        with autograd.record():
            y = block(x)
            if not fused:
                y = mx.nd.relu(y)
        y.backward(mx.nd.array(head))
        results.append([y.asnumpy(), x.grad.asnumpy(), block.gamma.grad().asnumpy(),
                        block.running_mean.data().asnumpy()])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_batchnorm_cast_to_float16_keeps_float32_parameters():
    bn = nn.BatchNorm(in_channels=2)
    bn.initialize()
    bn.cast('float16')
    assert np.dtype(bn.gamma.dtype) == np.float32
    assert bn(mx.nd.ones((2, 2), dtype='float16')).dtype == np.float16
    bn.cast('float64')
    assert np.dtype(bn.gamma.dtype) == np.float64


def test_dense_infers_in_units_from_last_axis_without_flatten():
    layer = nn.Dense(4, flatten=False)
    layer.initialize()
    assert layer(mx.nd.ones((2, 3, 5))).shape == (2, 3, 4)
    assert layer.weight.shape == (4, 5)
    assert repr(layer) == 'Dense(5 -> 4, linear)'


def test_embedding_sparse_grad_gives_the_dense_gradient():
    idx = mx.nd.array([[0, 2, 2], [4, 0, 1]])
    grads = []
    for sparse in (False, True):
        emb = nn.Embedding(5, 3, sparse_grad=sparse)
        emb.initialize()
        emb.weight.set_data(mx.nd.arange(15).reshape((5, 3)))
        with autograd.record():
            y = emb(idx)
        y.backward()
        np.testing.assert_array_equal(y.asnumpy(), np.arange(15).reshape(5, 3)[[[0, 2, 2],
                                                                                [4, 0, 1]]])
        grads.append(emb.weight.grad().asnumpy())
    np.testing.assert_array_equal(grads[0], grads[1])
    np.testing.assert_array_equal(grads[0][:, 0], [2, 1, 2, 0, 1])


# ----------------------------------------------------------------------------- Dropout
def test_dropout_drops_and_scales_in_training_only():
    mx.random.seed(3)
    x = mx.nd.ones((200, 50))
    drop = nn.Dropout(0.3)
    np.testing.assert_array_equal(drop(x).asnumpy(), x.asnumpy())      # predict mode
    with autograd.record():
        y = drop(x).asnumpy()
    np.testing.assert_allclose(np.unique(y), [0.0, 1 / 0.7], rtol=1e-6)
    assert abs((y == 0).mean() - 0.3) < 0.02
    with autograd.record(train_mode=False):
        np.testing.assert_array_equal(drop(x).asnumpy(), x.asnumpy())


def test_dropout_axes_share_the_mask_and_rate_zero_is_identity():
    mx.random.seed(4)
    x = mx.nd.ones((6, 40, 5))
    with autograd.record():
        y = nn.Dropout(0.5, axes=(2,))(x).asnumpy()
        z = nn.Dropout(0)(x).asnumpy()
    assert (y == y[:, :, :1]).all() and 0 < (y == 0).mean() < 1
    np.testing.assert_array_equal(z, x.asnumpy())
    with mx.name.NameManager():
        out = nn.Dropout(0.5)(mx.sym.var('data'))
    assert out.list_outputs() == ['dropout0_fwd_output']


def test_dropout_gradient_follows_its_mask():
    mx.random.seed(5)
    x = mx.nd.ones((30, 20))
    x.attach_grad()
    with autograd.record():
        y = nn.Dropout(0.4)(x)
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), y.asnumpy(), rtol=1e-6)


# ----------------------------------------------------------------------------- containers
def test_sequential_indexing_slicing_and_length():
    with mx.name.NameManager():
        net = nn.HybridSequential()
        with net.name_scope():
            net.add(nn.Dense(3), nn.Activation('relu'), nn.Dense(2))
    assert len(net) == 3 and isinstance(net[1], nn.Activation)
    head = net[:2]
    assert type(head) is nn.HybridSequential and len(head) == 2
    assert head.prefix == net.prefix and head[0] is net[0]
    net.initialize()
    x = mx.nd.ones((2, 4))
    np.testing.assert_allclose(net[2](head(x)).asnumpy(), net(x).asnumpy(), rtol=1e-6)


def test_sequential_of_hybrid_blocks_warns_on_hybridize():
    net = nn.Sequential()
    net.add(nn.Dense(3))
    with pytest.warns(UserWarning, match='Consider using HybridSequential'):
        net.hybridize()


def test_sequential_runs_a_plain_block_child():
    net = nn.Sequential()
    net.add(nn.Dense(3, in_units=2), nn.Lambda(lambda x: x * 2))
    net.initialize(mx.init.One())
    np.testing.assert_array_equal(net(mx.nd.ones((1, 2))).asnumpy(), [[4, 4, 4]])


def test_lambdas_take_several_inputs():
    add = nn.HybridLambda(lambda F, x, y: F.broadcast_add(x, y))
    assert repr(add) == 'HybridLambda(<lambda>)'
    np.testing.assert_array_equal(add(mx.nd.ones((2, 1)), mx.nd.ones((1, 3))).asnumpy(),
                                  np.full((2, 3), 2.0))
    out = add(mx.sym.var('a'), mx.sym.var('b'))
    assert out.list_arguments() == ['a', 'b']
    np.testing.assert_array_equal(nn.Lambda('broadcast_mul')(mx.nd.ones((2, 1)) * 3,
                                                             mx.nd.ones((1, 2))).asnumpy(),
                                  np.full((2, 2), 3.0))


# ----------------------------------------------------------------------------- errors
def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match='not found in ndarray'):
        nn.Lambda('no_such_operator')
    with pytest.raises(ValueError, match='symbol/ndarray'):
        nn.HybridLambda('no_such_operator')
    with pytest.raises(TypeError, match='Unrecognized function'):
        nn.Lambda(3)
    with pytest.raises(ValueError, match='no less than 0'):
        nn.LeakyReLU(-0.1)
    with pytest.raises(ValueError):
        nn.Activation('no_such_activation')(mx.nd.ones((2,)))
