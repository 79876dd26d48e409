"""mx.autograd: the tape recorded by mx.nd, its backward, higher order, errors.

Each imperative gradient is held to the executor's gradient of the same operator (the
symbolic path, itself checked against MXNet's golden data and finite differences) and to
central finite differences in float64.
"""
import numpy as np
import pytest

import symgraph as mx
from symgraph import autograd as ag


def _numeric(f, x, eps=1e-6):
    g = np.zeros_like(x)
    it = np.nditer(x, flags=['multi_index'])
    for _ in it:
        i = it.multi_index
        old = x[i]
        x[i] = old + eps
        fp = f(x)
        x[i] = old - eps
        fm = f(x)
        x[i] = old
        g[i] = (fp - fm) / (2 * eps)
    return g


#: (operator call, input shapes, input sampler): y = op(*xs); loss = sum(y * w)
CASES = [
    ('exp', lambda a: mx.nd.exp(a), [(2, 3)]),
    ('tanh', lambda a: mx.nd.tanh(a), [(3, 2)]),
    ('sigmoid', lambda a: mx.nd.sigmoid(a), [(4,)]),
    ('log', lambda a: mx.nd.log(mx.nd.abs(a) + 1.0), [(2, 2)]),
    ('broadcast_mul', lambda a, b: a * b, [(2, 3), (1, 3)]),
    ('broadcast_div', lambda a, b: a / (mx.nd.abs(b) + 1.0), [(2, 3), (2, 1)]),
    ('broadcast_sub', lambda a, b: a - b, [(3, 1), (1, 4)]),
    ('dot', lambda a, b: mx.nd.dot(a, b), [(2, 3), (3, 4)]),
    ('dot_t', lambda a, b: mx.nd.dot(a, b, transpose_a=True), [(3, 2), (3, 4)]),
    ('FullyConnected', lambda x, w, b: mx.nd.FullyConnected(x, w, b, num_hidden=4),
     [(2, 3), (4, 3), (4,)]),
    ('sum_axis', lambda a: mx.nd.sum(a, axis=1), [(2, 3, 2)]),
    ('mean', lambda a: mx.nd.mean(a, axis=(0, 2), keepdims=True), [(2, 3, 2)]),
    ('Convolution', lambda x, w, b: mx.nd.Convolution(x, w, b, kernel=(3, 3), num_filter=2,
                                                      pad=(1, 1)),
     [(1, 2, 5, 4), (2, 2, 3, 3), (2,)]),
    ('Pooling', lambda x: mx.nd.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type='avg'),
     [(1, 2, 4, 4)]),
    ('softmax', lambda a: mx.nd.softmax(a, axis=-1), [(2, 5)]),
    ('slice_getitem', lambda a: a[1:3] * a[0], [(4, 3)]),
    ('reshape_T', lambda a: a.reshape((3, 2)).T * 2.0, [(2, 3)]),
    ('scalar_ops', lambda a: (2.0 - a) * 3.0 / 4.0 + a ** 2, [(3,)]),
    ('concat', lambda a, b: mx.nd.concat(a, b, dim=1), [(2, 1), (2, 3)]),
    ('LeakyReLU', lambda a: mx.nd.LeakyReLU(a, act_type='elu'), [(2, 4)]),
]


@pytest.mark.parametrize('name,fn,shapes', CASES, ids=[c[0] for c in CASES])
def test_gradient_matches_finite_differences(name, fn, shapes):
    rng = np.random.RandomState(0)
    xs = [rng.uniform(-1, 1, s) for s in shapes]
    xs_nd = [mx.nd.array(x, dtype='float64') for x in xs]
    for x in xs_nd:
        x.attach_grad()
    with ag.record():
        y = fn(*xs_nd)
    w = rng.uniform(-1, 1, y.shape)
    y.backward(mx.nd.array(w, dtype='float64'))
    for k, x in enumerate(xs):
        def f(v, k=k):
            args = [mx.nd.array(v if j == k else xs[j], dtype='float64')
                    for j in range(len(xs))]
            return float((fn(*args).asnumpy() * w).sum())
        expect = _numeric(f, x.copy())
        np.testing.assert_allclose(xs_nd[k].grad.asnumpy(), expect, rtol=1e-5, atol=1e-7,
                                   err_msg='%s: input %d' % (name, k))


def test_gradient_equals_the_executors():
    """The tape and a bound executor run the same operator backward: equal gradients."""
    rng = np.random.RandomState(1)
    x = rng.randn(2, 3, 6, 6).astype(np.float32)
    w = rng.randn(4, 3, 3, 3).astype(np.float32)
    g = rng.randn(2, 4, 2, 2).astype(np.float32)
    data, weight = mx.sym.var('data'), mx.sym.var('weight')
    s = mx.sym.Pooling(mx.sym.relu(mx.sym.Convolution(data, weight, kernel=(3, 3),
                                                      num_filter=4, no_bias=True)),
                       kernel=(2, 2), stride=(2, 2), pool_type='max')
    ex = s.bind(mx.cpu(), {'data': mx.nd.array(x), 'weight': mx.nd.array(w)},
                args_grad={'data': mx.nd.zeros(x.shape), 'weight': mx.nd.zeros(w.shape)})
    ex.forward(is_train=True)
    ex.backward(mx.nd.array(g))
    xd, wd = mx.nd.array(x), mx.nd.array(w)
    xd.attach_grad()
    wd.attach_grad()
    with ag.record():
        y = mx.nd.Pooling(mx.nd.relu(mx.nd.Convolution(xd, wd, kernel=(3, 3), num_filter=4,
                                                       no_bias=True)),
                          kernel=(2, 2), stride=(2, 2), pool_type='max')
    y.backward(mx.nd.array(g))
    np.testing.assert_allclose(y.asnumpy(), ex.outputs[0].asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(xd.grad.asnumpy(), ex.grad_dict['data'].asnumpy(), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(wd.grad.asnumpy(), ex.grad_dict['weight'].asnumpy(), rtol=1e-5,
                               atol=1e-5)


def test_grad_req_add_write_null():
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad(grad_req='add')
    for _ in range(3):
        with ag.record():
            y = x * x
        y.backward()
    assert x.grad.asnumpy().tolist() == [6.0, 12.0]
    x.attach_grad(grad_req='write')
    for _ in range(2):
        with ag.record():
            y = x * x
        y.backward()
    assert x.grad.asnumpy().tolist() == [2.0, 4.0]
    z = mx.nd.array([1.0])
    z.attach_grad(grad_req='null')
    with ag.record():
        y = (z * 3) + (x * 1)
    y.backward()
    assert z.grad.asnumpy().tolist() == [0.0]
    assert x.grad.asnumpy().tolist() == [1.0, 1.0]


def test_fan_out_sums_and_shared_subexpressions():
    x = mx.nd.array([0.5, -1.5])
    x.attach_grad()
    with ag.record():
        a = mx.nd.exp(x)
        y = a * a + a * x + mx.nd.sin(a)
    y.backward()
    xn = np.array([0.5, -1.5], np.float32)
    an = np.exp(xn)
    expect = 2 * an * an + an * xn + an + np.cos(an) * an
    np.testing.assert_allclose(x.grad.asnumpy(), expect, rtol=1e-5)


def test_scopes_and_flags():
    assert not ag.is_recording() and not ag.is_training()
    with ag.record():
        assert ag.is_recording() and ag.is_training()
        with ag.pause():
            assert not ag.is_recording() and not ag.is_training()
            with ag.train_mode():
                assert ag.is_training()
        with ag.predict_mode():
            assert not ag.is_training() and ag.is_recording()
    with ag.record(train_mode=False):
        assert not ag.is_training()
    assert ag.set_recording(True) is False
    assert ag.set_recording(False) is True
    assert ag.set_training(True) is False
    assert ag.set_training(False) is True


def test_dropout_follows_training_mode():
    x = mx.nd.ones((2000,))
    x.attach_grad()
    with ag.record():
        y = mx.nd.Dropout(x, p=0.5)
    kept = y.asnumpy() != 0
    assert 0.4 < kept.mean() < 0.6
    np.testing.assert_allclose(y.asnumpy()[kept], 2.0)
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), kept * 2.0)
    with ag.record(train_mode=False):
        y = mx.nd.Dropout(x, p=0.5)
    np.testing.assert_allclose(y.asnumpy(), 1.0)


def test_batchnorm_batch_statistics_in_training():
    rng = np.random.RandomState(0)
    x = mx.nd.array(rng.randn(4, 3, 2, 2))
    gamma, beta = mx.nd.ones((3,)), mx.nd.zeros((3,))
    mm, mv = mx.nd.zeros((3,)), mx.nd.ones((3,))
    x.attach_grad()
    with ag.record():
        y = mx.nd.BatchNorm(x, gamma, beta, mm, mv, fix_gamma=False)
    # normalised with the batch's statistics; the moving ones moved
    np.testing.assert_allclose(y.asnumpy().mean(axis=(0, 2, 3)), 0, atol=1e-5)
    assert not np.allclose(mm.asnumpy(), 0)
    y.backward()
    # the gradient of a normalisation of a constant head sums to zero per channel
    np.testing.assert_allclose(x.grad.asnumpy().sum(axis=(0, 2, 3)), 0, atol=1e-4)


def test_variable_not_reached_gets_zeros_from_grad():
    x, z = mx.nd.array([1.0, 2.0]), mx.nd.array([5.0])
    x.attach_grad()
    z.attach_grad()
    with ag.record():
        y = x * 2
    gx, gz = ag.grad(y, [x, z])
    assert gx.asnumpy().tolist() == [2.0, 2.0]
    assert gz.asnumpy().tolist() == [0.0]


def test_grad_leaves_grad_arrays_alone_and_retains():
    x = mx.nd.array([3.0])
    x.attach_grad()
    with ag.record():
        y = x * x * x
    g1 = ag.grad(y, x, retain_graph=True)[0]
    g2 = ag.grad(y, x)[0]
    assert g1.asnumpy().tolist() == g2.asnumpy().tolist() == [27.0]
    assert x.grad.asnumpy().tolist() == [0.0]


HIGHER = [
    ('sin', mx.nd.sin, lambda x: -np.sin(x)),
    ('cos', mx.nd.cos, lambda x: -np.cos(x)),
    ('tan', mx.nd.tan, lambda x: 2 * np.tan(x) / np.cos(x) ** 2),
    ('tanh', mx.nd.tanh, lambda x: -2 * np.tanh(x) * (1 - np.tanh(x) ** 2)),
    ('exp', mx.nd.exp, np.exp),
    ('log', mx.nd.log, lambda x: -1 / x ** 2),
    ('log2', mx.nd.log2, lambda x: -1 / (x ** 2 * np.log(2))),
    ('log10', mx.nd.log10, lambda x: -1 / (x ** 2 * np.log(10))),
    ('square', mx.nd.square, lambda x: 2 + 0 * x),
    ('sqrt', mx.nd.sqrt, lambda x: -0.25 * x ** -1.5),
    ('reciprocal', mx.nd.reciprocal, lambda x: 2 / x ** 3),
    ('sigmoid', mx.nd.sigmoid,
     lambda x: (lambda s: s * (1 - s) * (1 - 2 * s))(1 / (1 + np.exp(-x)))),
    ('arctan', mx.nd.arctan, lambda x: -2 * x / (1 + x ** 2) ** 2),
    ('arcsin', mx.nd.arcsin, lambda x: x / (1 - x ** 2) ** 1.5),
    ('log1p', mx.nd.log1p, lambda x: -1 / (1 + x) ** 2),
    ('expm1', mx.nd.expm1, np.exp),
    ('rsqrt', mx.nd.rsqrt, lambda x: 0.75 * x ** -2.5),
    ('relu', mx.nd.relu, lambda x: 0 * x),
    ('power', lambda x: x ** 3, lambda x: 6 * x),
]


@pytest.mark.parametrize('name,fn,d2', HIGHER, ids=[h[0] for h in HIGHER])
def test_second_order(name, fn, d2):
    xn = np.array([0.2, 0.5, 0.7], np.float64)
    x = mx.nd.array(xn, dtype='float64')
    x.attach_grad()
    with ag.record():
        y = fn(x)
        dy = ag.grad(y, x, create_graph=True)[0]
    dy.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), d2(xn), rtol=1e-6, atol=1e-9)


def test_second_order_of_dense_and_products():
    """d/dx sum(d/dx sum(tanh(W x)))): through FullyConnected, broadcast and reductions."""
    rng = np.random.RandomState(3)
    wn, xn = rng.randn(3, 4), rng.randn(2, 4)
    w, x = mx.nd.array(wn, dtype='float64'), mx.nd.array(xn, dtype='float64')
    x.attach_grad()
    w.attach_grad()

    def first(xv):
        t = np.tanh(xv @ wn.T)
        return ((1 - t ** 2) @ wn).sum()
    with ag.record():
        y = mx.nd.tanh(mx.nd.FullyConnected(x, w, num_hidden=3, no_bias=True)).sum()
        gx = ag.grad(y, x, create_graph=True)[0]
        z = gx.sum()
    z.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), _numeric(first, xn.copy()), rtol=1e-5)


def test_create_graph_names_an_operator_without_a_rule():
    x = mx.nd.array([[1.0, 2.0]])
    x.attach_grad()
    with ag.record():
        y = mx.nd.topk(x, ret_typ='value', k=1) if False else mx.nd.sort(x)
        with pytest.raises(NotImplementedError, match='sort'):
            ag.grad(y, x, create_graph=True)


def test_backward_twice_needs_retain_graph():
    x = mx.nd.array([2.0])
    x.attach_grad()
    with ag.record():
        y = mx.nd.exp(x)
    y.backward(retain_graph=True)
    y.backward()
    with pytest.raises(RuntimeError, match='retain_graph=True'):
        y.backward()


def test_backward_of_an_unrecorded_array_says_what_to_do():
    with pytest.raises(RuntimeError, match=r'autograd.record\(\)'):
        mx.nd.ones((2,)).backward()


def test_in_place_write_refused_while_recording():
    x = mx.nd.ones((3,))
    x.attach_grad()
    with ag.record():
        y = x * 2
        with pytest.raises(ValueError, match='in-place'):
            y += 1
        with pytest.raises(ValueError, match='in-place'):
            x[:] = 0
        with pytest.raises(ValueError, match='in-place'):
            mx.nd.exp(x, out=y)
    # an array outside the graph can still be written
    with ag.record():
        z = mx.nd.zeros((3,))
        z[:] = 1
        z += x
    z.backward()
    assert x.grad.asnumpy().tolist() == [1.0, 1.0, 1.0]


def test_backward_refuses_an_input_written_since_naming_the_operator():
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad()
    with ag.record():
        y = mx.nd.exp(x) * x
    x[:] = 7
    with pytest.raises(ValueError, match='broadcast_mul'):
        y.backward()


def test_detach_cuts_the_graph():
    x = mx.nd.array([2.0])
    x.attach_grad()
    with ag.record():
        y = x * x
        z = y.detach() * x
    z.backward()
    assert x.grad.asnumpy().tolist() == [4.0]


def test_mark_variables_and_backward_of_several_heads():
    x, gx = mx.nd.array([1.0, 2.0]), mx.nd.zeros((2,))
    ag.mark_variables([x], [gx])
    with ag.record():
        a = x * 3
        b = x * x
    ag.backward([a, b], [mx.nd.ones((2,)), mx.nd.array([1.0, 10.0])])
    assert gx.asnumpy().tolist() == [5.0, 43.0]
    assert x.grad is gx


def test_function():
    class Sigmoid(ag.Function):
        def forward(self, x):
            y = 1 / (1 + mx.nd.exp(-x))
            self.save_for_backward(y)
            return y

        def backward(self, dy):
            y, = self.saved_tensors
            return dy * y * (1 - y)
    x = mx.nd.array([-1.0, 0.0, 2.0])
    x.attach_grad()
    with ag.record():
        y = Sigmoid()(x) * 2
    y.backward()
    s = 1 / (1 + np.exp(-np.array([-1.0, 0.0, 2.0])))
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * s * (1 - s), rtol=1e-6)
    f = Sigmoid()
    f(x)
    with pytest.raises(RuntimeError, match='once'):
        f(x)


def test_custom_op_inside_record():
    class Scale(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], in_data[0] * 3)

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            assert req[0] == 'write'
            self.assign(in_grad[0], req[0], out_grad[0] * 3)

    @mx.operator.register('ag_scale3')
    class ScaleProp(mx.operator.CustomOpProp):
        def __init__(self):
            super().__init__(need_top_grad=True)

        def create_operator(self, ctx, shapes, dtypes):
            return Scale()
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad()
    with ag.record():
        y = mx.nd.Custom(x, op_type='ag_scale3') * x
    y.backward()
    assert x.grad.asnumpy().tolist() == [6.0, 12.0]


def test_loss_operator_makes_its_own_head_gradient():
    x = mx.nd.array([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0]])
    x.attach_grad()
    with ag.record():
        out = mx.nd.SoftmaxOutput(x, mx.nd.array([2, 0]))
    out.backward()
    p = np.exp(x.asnumpy())
    p /= p.sum(axis=1, keepdims=True)
    p[0, 2] -= 1
    p[1, 0] -= 1
    np.testing.assert_allclose(x.grad.asnumpy(), p, rtol=1e-6)


def test_get_symbol():
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad()
    with ag.record():
        y = mx.nd.exp(x) * 2 + x
    s = ag.get_symbol(y)
    assert s.list_arguments() == ['var0']
    out = s.eval(mx.cpu(), var0=mx.nd.array([1.0, 2.0]))[0]
    np.testing.assert_allclose(out.asnumpy(), y.asnumpy())


def test_no_recording_outside_record():
    x = mx.nd.array([1.0])
    x.attach_grad()
    y = x * 2
    assert y._ag is None


def test_second_order_of_arcsinh_has_the_right_sign():
    """MXNet 1.9.1's test_higher_order_grad expects +x/(x^2+1)^1.5, the wrong sign;
    finite differences of arcsinh' side with us (docs/differences.md)."""
    xn = np.array([0.3, -0.7])
    x = mx.nd.array(xn, dtype='float64')
    x.attach_grad()
    with ag.record():
        g = ag.grad(mx.nd.arcsinh(x), x, create_graph=True)[0]
    g.backward()
    d1 = lambda v: 1 / np.sqrt(v ** 2 + 1)  # noqa: E731
    numeric = (d1(xn + 1e-6) - d1(xn - 1e-6)) / 2e-6
    np.testing.assert_allclose(x.grad.asnumpy(), numeric, rtol=1e-6)
    assert (x.grad.asnumpy() * xn < 0).all()


def test_second_order_of_dropout_is_zero_and_third_order_runs():
    x = mx.nd.array(np.linspace(-1, 1, 50))
    x.attach_grad()
    with ag.record():
        y = mx.nd.Dropout(x, p=0.5)
        g1 = ag.grad(y, x, create_graph=True, retain_graph=True)[0]
        g2 = ag.grad(g1, x, create_graph=True, retain_graph=True)[0]
    kept = y.asnumpy() != 0
    np.testing.assert_allclose(g1.asnumpy(), kept * 2.0)
    np.testing.assert_allclose(g2.asnumpy(), 0.0)


def test_fresh_grad_flag():
    x, y = mx.nd.ones((2,)), mx.nd.ones((2,))
    ag.mark_variables([x, y], [mx.nd.zeros((2,)), mx.nd.zeros((2,))])
    assert not x._fresh_grad and not y._fresh_grad
    with ag.record():
        z = x.detach() + y
    z.backward()
    assert y._fresh_grad and not x._fresh_grad
    y._fresh_grad = False
    assert not y._fresh_grad
    with pytest.raises(AttributeError):
        mx.nd.ones((1,))._fresh_grad = True


def test_zeros_and_ones_take_mxnet_attribute_keywords():
    assert mx.nd.zeros((2,), __layout__='NC').asnumpy().tolist() == [0.0, 0.0]
    assert mx.nd.ones_like(mx.nd.zeros((2,)), name='x').asnumpy().tolist() == [1.0, 1.0]
    with pytest.raises(KeyError):
        mx.nd.zeros((2,), layout='NC')


def test_zeros_like_of_a_recorded_array_is_recorded_with_a_zero_gradient():
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad()
    with ag.record():
        y = x * 2 + mx.nd.ones_like(x)
    y.backward()
    assert x.grad.asnumpy().tolist() == [2.0, 2.0]


def test_sparse_grad_stype_and_mx_np_refuse():
    # sparse gradients are dense-backed sparse arrays (tests/ndarray/test_sparse_dense_backed.py)
    x = mx.nd.ones((2,))
    x.attach_grad(stype='row_sparse')
    assert x.grad.stype == 'row_sparse'
    assert mx.nd.sparse.zeros('csr', (2, 2)).stype == 'csr'
    with pytest.raises(ValueError, match='stype'):
        x.attach_grad(stype='coo')
    with pytest.raises(NotImplementedError, match='mx.np'):
        mx.np.zeros
    assert not hasattr(mx.np, 'ones')
    assert mx.nd.sparse.zeros('default', (2,)).asnumpy().tolist() == [0.0, 0.0]
