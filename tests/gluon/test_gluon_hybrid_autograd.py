"""autograd through hybridized blocks (issue 28): get_symbol inlines the traced graph (its
operators against MXNet 1.9.1's, tests/golden/gluon_get_symbol_probes.py), higher-order
gradients replay it (against the imperative block and finite differences), and the plain
backward's gradient arrays."""
import json

import numpy as np
import pytest

import symgraph as mx
from symgraph.base import NotSupportedError, UsageError
import gluon_get_symbol_probes as probes

with open(probes.OUT) as _f:
    GOLDEN = json.load(_f)


class DenseTanh(mx.gluon.HybridBlock):
    """tanh(Dense(x)): FullyConnected and tanh both have recordable gradients."""

    def __init__(self, units=3, in_units=4, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.d = mx.gluon.nn.Dense(units, in_units=in_units)

    def hybrid_forward(self, F, x):
        return F.tanh(self.d(x))


def _net(hybridize, cls=DenseTanh, seed=1, **kw):
    mx.random.seed(seed)
    net = cls(**kw)
    net.initialize(mx.init.Uniform(0.5))
    if hybridize:
        net.hybridize()
    return net


def _x(shape=(2, 4), seed=0):
    x = mx.nd.array(np.random.RandomState(seed).randn(*shape))
    x.attach_grad()
    return x


# --------------------------------------------------------------------- get_symbol
@pytest.mark.parametrize('case', probes.CASES)
def test_get_symbol_inlines_the_hybridized_graph_as_mxnet(case):
    res, inputs = probes.record(mx, case)
    s = mx.autograd.get_symbol(res)
    # MXNet 1.9.1 inlines a block's graph of at most inline_limit operators (else it keeps a
    # _CachedOp node): symgraph always inlines, and matches MXNet's inlined graph
    want = GOLDEN[case]
    assert probes.describe(s) == want['inlined']
    if '_CachedOp' not in want['default']['ops']:
        assert want['default'] == want['inlined']
    # the variables are the call's inputs: data, then the Parameters in the graph's order
    n_args = len(s.list_arguments())
    assert s.list_arguments() == ['var%d' % k for k in range(n_args)]
    assert s.list_auxiliary_states() == ['var%d' % (n_args + k)
                                         for k in range(len(s.list_auxiliary_states()))]
    args = dict(zip(s.list_arguments(), [a.copy() for a in inputs[:n_args]]))
    aux = dict(zip(s.list_auxiliary_states(), [a.copy() for a in inputs[n_args:]]))
    out = s.bind(mx.cpu(), args, aux_states=aux).forward(is_train=True)[0]
    np.testing.assert_allclose(out.asnumpy(), res.asnumpy(), rtol=1e-5, atol=1e-6)


def test_get_symbol_ignores_inline_limit():
    res, _ = probes.record(mx, 'two_outputs_sum', inline_limit=0)
    assert probes.describe(mx.autograd.get_symbol(res)) == GOLDEN['two_outputs_sum']['inlined']


def test_get_symbol_after_backward_names_the_freed_graph():
    net = _net(True)
    x = _x()
    with mx.autograd.record():
        y = net(x)
    y.backward()
    with pytest.raises(NotSupportedError, match='retain_graph'):
        mx.autograd.get_symbol(y)


# --------------------------------------------------------------------- higher order
def _second_order(net, x, head=None):
    """z = sum(dL/dx ** 2), L = sum(head * net(x)); backward of z into x and the
    Parameters. Returns (dL/dx, x.grad, weight.grad, bias.grad)."""
    with mx.autograd.record():
        y = net(x)
        g = mx.autograd.grad(y, [x], head_grads=head, create_graph=True,
                             retain_graph=True)[0]
        z = (g * g).sum()
    z.backward()
    return (g.asnumpy(), x.grad.asnumpy(), net.d.weight.grad().asnumpy(),
            net.d.bias.grad().asnumpy())


def _numeric_second_order(x, w, b, head, eps=1e-6):
    """The same quantities in float64 with central differences of z(x, w, b)."""
    def z_and_g(x, w, b):
        y = np.tanh(x @ w.T + b)
        g = ((1 - y * y) * head) @ w
        return (g * g).sum(), g

    def num(f, a):
        out = np.zeros_like(a)
        for i in np.ndindex(a.shape):
            d = np.zeros_like(a)
            d[i] = eps
            out[i] = (f(a + d) - f(a - d)) / (2 * eps)
        return out
    _, g = z_and_g(x, w, b)
    return (g, num(lambda v: z_and_g(v, w, b)[0], x), num(lambda v: z_and_g(x, v, b)[0], w),
            num(lambda v: z_and_g(x, w, v)[0], b))


@pytest.mark.parametrize('with_head', [False, True])
def test_second_order_through_a_hybridized_block(with_head):
    head = np.random.RandomState(3).randn(2, 3).astype(np.float32) if with_head else \
        np.ones((2, 3), np.float32)
    hg = mx.nd.array(head) if with_head else None
    imperative = _second_order(_net(False), _x(), hg)
    net = _net(True)
    hybrid = _second_order(net, _x(), hg)
    for a, b in zip(hybrid, imperative):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    x = _x().asnumpy().astype(np.float64)
    w = net.d.weight.data().asnumpy().astype(np.float64)
    b = net.d.bias.data().asnumpy().astype(np.float64)
    for got, want in zip(hybrid, _numeric_second_order(x, w, b, head.astype(np.float64))):
        np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-5)


def test_second_order_with_respect_to_a_parameter_and_after_imperative_ops():
    # the block reads x * 2 (an imperative node before it); grad w.r.t. the weight
    def run(hybridize):
        net = _net(hybridize)
        x = _x()
        w = net.d.weight.data()
        with mx.autograd.record():
            y = net(x * 2).sum()
            gw = mx.autograd.grad(y, [w], create_graph=True, retain_graph=True)[0]
            z = (gw * gw).sum()
        z.backward()
        return gw.asnumpy(), x.grad.asnumpy(), net.d.weight.grad().asnumpy()
    for a, b in zip(run(True), run(False)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert np.abs(run(True)[1]).max() > 0


def test_second_order_through_two_calls_of_one_block_sums_both():
    def run(hybridize):
        net = _net(hybridize)
        x = _x()
        with mx.autograd.record():
            y = net(x) + net(x * x)
            g = mx.autograd.grad(y, [x], create_graph=True, retain_graph=True)[0]
            z = (g * g).sum()
        z.backward()
        return g.asnumpy(), x.grad.asnumpy(), net.d.weight.grad().asnumpy()
    for a, b in zip(run(True), run(False)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_create_graph_leaves_the_first_order_paths_alone():
    # grad without create_graph and the plain backward after a create_graph call
    net = _net(True)
    x = _x()
    with mx.autograd.record():
        y = net(x)
    gx = mx.autograd.grad(y, [x], retain_graph=True)[0].asnumpy()
    ref = _net(False)
    xr = _x()
    with mx.autograd.record():
        yr = ref(xr)
    yr.backward()
    np.testing.assert_allclose(gx, xr.grad.asnumpy(), rtol=1e-6)


def test_create_graph_refuses_an_operator_without_a_rule_before_running():
    mx.random.seed(0)
    net = mx.gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(mx.gluon.nn.Dense(3, in_units=4), mx.gluon.nn.BatchNorm(in_channels=3))
    net.initialize(mx.init.Uniform(0.5))
    net.hybridize()
    x = _x((5, 4))
    with mx.autograd.record():
        y = net(x)
    before = net[1].running_mean.data().asnumpy().copy()
    with mx.autograd.record():
        with pytest.raises(NotSupportedError, match='BatchNorm'):
            mx.autograd.grad(y, [x], create_graph=True, retain_graph=True)
    np.testing.assert_array_equal(net[1].running_mean.data().asnumpy(), before)


def test_create_graph_refuses_a_dropout_drawn_in_training_mode():
    class Drop(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            return F.tanh(F.Dropout(x, p=0.5))
    net = Drop()
    net.hybridize()
    x = _x()
    with mx.autograd.record():
        y = net(x)
        with pytest.raises(NotSupportedError, match='Dropout'):
            mx.autograd.grad(y, [x], create_graph=True, retain_graph=True)
    # in predict mode Dropout is the identity: replayed, differentiated twice
    with mx.autograd.record(train_mode=False):
        y = net(x)
        g = mx.autograd.grad(y, [x], create_graph=True, retain_graph=True,
                             train_mode=False)[0]
        z = g.sum()
    z.backward()
    t = np.tanh(x.asnumpy())
    np.testing.assert_allclose(g.asnumpy(), 1 - t * t, rtol=1e-5)
    np.testing.assert_allclose(x.grad.asnumpy(), -2 * t * (1 - t * t), rtol=1e-4,
                               atol=1e-6)


# --------------------------------------------------------------------- first order
def test_grad_results_outlive_the_next_backward():
    # grad() hands out arrays the executor will not write again (the plain backward
    # lends its own, which the tape copies at once)
    net = _net(True)
    x = _x()
    with mx.autograd.record():
        y = net(x)
    g1 = mx.autograd.grad(y, [x, net.d.weight.data()])
    kept = [g.asnumpy().copy() for g in g1]
    for _ in range(2):
        with mx.autograd.record():
            y2 = net(x * 3)
        y2.backward()
    for g, k in zip(g1, kept):
        np.testing.assert_array_equal(g.asnumpy(), k)


def test_plain_backward_steps_keep_one_executor_and_match_imperative():
    hyb, imp = _net(True), _net(False)
    th = mx.gluon.Trainer(hyb.collect_params(), 'sgd', {'learning_rate': 0.1,
                                                      'momentum': 0.9})
    ti = mx.gluon.Trainer(imp.collect_params(), 'sgd', {'learning_rate': 0.1,
                                                      'momentum': 0.9})
    rng = np.random.RandomState(5)
    for _ in range(4):
        x = mx.nd.array(rng.randn(2, 4))
        for net, tr in ((hyb, th), (imp, ti)):
            with mx.autograd.record():
                loss = (net(x) * net(x)).sum()
            loss.backward()
            tr.step(2)
    for p, q in zip(hyb.collect_params().values(), imp.collect_params().values()):
        np.testing.assert_allclose(p.data().asnumpy(), q.data().asnumpy(), rtol=1e-5,
                                   atol=1e-6)
        np.testing.assert_allclose(p.grad().asnumpy(), q.grad().asnumpy(), rtol=1e-5,
                                   atol=1e-6)
    # two calls under one record(): two executors of one signature, bound once each
    assert hyb._cached_op.num_binds == 2


def test_grad_req_add_accumulates_through_the_lent_arrays():
    net = _net(True)
    net.collect_params().setattr('grad_req', 'add')
    x = _x()
    for _ in range(3):
        with mx.autograd.record():
            y = net(x)
        y.backward()
    ref = _net(False)
    xr = _x()
    with mx.autograd.record():
        yr = ref(xr)
    yr.backward()
    np.testing.assert_allclose(net.d.weight.grad().asnumpy(),
                               3 * ref.d.weight.grad().asnumpy(), rtol=1e-5)


def test_get_symbol_of_a_plain_array_is_refused():
    with pytest.raises(UsageError):
        mx.autograd.get_symbol(mx.nd.ones((2,)))


@pytest.mark.parametrize('shared', [False, True])
def test_plain_backward_writes_the_gradients_of_variables_read_once_or_sums_them(shared):
    # read only by the block, a variable's gradient is written by the executor itself; a
    # weight also read by an imperative op (or a head) gets the sum of both
    def run(hybridize):
        net = _net(hybridize)
        x = _x()
        w = net.d.weight.data()
        for _ in range(2):      # the second step writes over the first's gradients
            with mx.autograd.record():
                y = (net(x) * 2).sum()
                if shared:
                    y = y + (w * w).sum()
            y.backward()
        return x.grad.asnumpy(), w.grad.asnumpy(), net.d.bias.grad().asnumpy()
    for a, b in zip(run(True), run(False)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_backward_of_a_parameter_head_beside_the_block():
    net = _net(True)
    x = _x()
    w = net.d.weight.data()
    with mx.autograd.record():
        y = net(x).sum()
    mx.autograd.backward([y, w], head_grads=[None, mx.nd.ones(w.shape) * 5])
    ref = _net(False)
    with mx.autograd.record():
        yr = ref(_x()).sum()
    yr.backward()
    np.testing.assert_allclose(w.grad.asnumpy(), ref.d.weight.grad().asnumpy() + 5,
                               rtol=1e-5)


def test_backward_refuses_an_input_written_in_place_since_the_call():
    # the executor's backward reads the caller's array itself: tanh's gradient would be
    # computed from the new values
    net = _net(True)
    x = _x()
    with mx.autograd.record():
        y = net(x)
    x[:] = 5
    with pytest.raises(ValueError, match="input 'data'.*%s" % net.name):
        y.backward()


def test_second_order_of_an_elementwise_graph_matches_finite_differences():
    # a graph MXNet 1.9.1 keeps as a _CachedOp node, where it refuses create_graph
    class Elementwise(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            return F.tanh(x) * F.sin(x) + F.exp(x * 0.5)

    def run(hybridize):
        net = Elementwise()
        if hybridize:
            net.hybridize()
        x = mx.nd.array(np.linspace(-1, 1, 6).reshape(2, 3))
        x.attach_grad()
        with mx.autograd.record():
            g = mx.autograd.grad(net(x), [x], create_graph=True, retain_graph=True)[0]
            z = (g * g).sum()
        z.backward()
        return g.asnumpy(), x.grad.asnumpy()
    hybrid, imperative = run(True), run(False)
    for a, b in zip(hybrid, imperative):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)

    def first(v):
        t = np.tanh(v)
        return (1 - t * t) * np.sin(v) + t * np.cos(v) + 0.5 * np.exp(0.5 * v)
    x = np.linspace(-1, 1, 6).reshape(2, 3)
    eps = 1e-6
    num = (first(x + eps) ** 2 - first(x - eps) ** 2) / (2 * eps)
    np.testing.assert_allclose(hybrid[0], first(x), rtol=1e-5)
    np.testing.assert_allclose(hybrid[1], num, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize('hybridize', [False, True])
def test_trainer_steps_a_block_with_a_constant(hybridize):
    # (MXNet's test_gluon.py test_constant) a Constant's grad_req is always 'null': the
    # Trainer skips it
    class WithConstant(mx.gluon.HybridBlock):
        def __init__(self, **kw):
            super().__init__(**kw)
            self.const = self.params.get_constant('const', np.asarray([[1, 2], [3, 4]]))

        def hybrid_forward(self, F, x, const):
            return x + const
    net = WithConstant()
    net.initialize()
    if hybridize:
        net.hybridize()
    trainer = mx.gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 1.0})
    x = mx.nd.ones((2, 2))
    x.attach_grad()
    with mx.autograd.record():
        y = net(x)
    y.backward()
    trainer.step(1)
    np.testing.assert_array_equal(net.const.data().asnumpy(), [[1, 2], [3, 4]])
    np.testing.assert_array_equal(x.grad.asnumpy(), np.ones((2, 2)))
