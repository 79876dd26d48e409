"""Neural-network layers (ops/nn.py): FullyConnected, Activation, LeakyReLU, Dropout and
hard_sigmoid."""
import math

import numpy as np
import pytest

import symgraph as mx
from _refs import F16
from harness import case_tests, OpCase
from symgraph.opdef import ShapeError, cpu_backend, get_op

SELU_A, SELU_L = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
_erf = np.vectorize(math.erf)


def _fc(flatten=True, bias=True):
    def f(x, w, b=None):
        x2 = x.reshape(x.shape[0], -1) if flatten else x
        out = x2 @ w.T
        return out + b.reshape(-1) if bias else out
    return f


def _scaled(k=3.0):
    """Inputs spread over (-k, k) so both sides of kinks and saturations are exercised."""
    def make(rng, shapes, dtype):
        return [rng.uniform(-k, k, s) for s in shapes]
    return make


def _away_from_zero(rng, shapes, dtype):
    # kinked activations: keep central differences off the kink at 0
    x = rng.uniform(0.05, 2.0, shapes[0]) * rng.choice([-1, 1], shapes[0])
    return [x] + [rng.uniform(0.1, 0.9, s) for s in shapes[1:]]


def _act(kind):
    return {
        'relu': lambda x: np.maximum(x, 0),
        'sigmoid': lambda x: 1 / (1 + np.exp(-x)),
        'tanh': np.tanh,
        'softrelu': lambda x: np.log1p(np.exp(x)),
        'softsign': lambda x: x / (1 + np.abs(x)),
    }[kind]


def _selu_grad_ref(inputs, outputs, out_grads):
    # MXNet 1.9.1's selu gradient for x <= 0 is lambda * (out + alpha) (not the derivative)
    x, y, g = inputs[0], outputs[0], out_grads[0]
    return [g * np.where(x > 0, SELU_L, SELU_L * (y + SELU_A))]


def _prelu_ref(x, gamma):
    gb = gamma.reshape((1, -1) + (1,) * (x.ndim - 2))
    return np.where(x > 0, x, x * gb)


CASES = [
    OpCase('FullyConnected', dict(num_hidden=5), [(2, 3, 4), (5, 12), (5,)], ref=_fc()),
    OpCase('FullyConnected', dict(num_hidden=5, flatten=False), [(2, 3, 4), (5, 4), (5,)],
           ref=_fc(False)),
    OpCase('FullyConnected', dict(num_hidden=3, no_bias=True), [(4, 7), (3, 7)],
           ref=_fc(bias=False)),
    OpCase('FullyConnected', dict(num_hidden=1), [(1, 2), (1, 2), (1, 1)], ref=_fc()),
    OpCase('LeakyReLU', dict(act_type='leaky', slope=0.1), [(3, 5)], inputs=_away_from_zero,
           ref=lambda x: np.where(x > 0, x, 0.1 * x)),
    OpCase('LeakyReLU', {}, [(4,)], inputs=_away_from_zero,
           ref=lambda x: np.where(x > 0, x, 0.25 * x)),
    OpCase('LeakyReLU', dict(act_type='elu', slope=0.7), [(3, 5)], inputs=_away_from_zero,
           ref=lambda x: np.where(x > 0, x, 0.7 * (np.exp(x) - 1))),
    OpCase('LeakyReLU', dict(act_type='selu'), [(3, 5)], inputs=_away_from_zero,
           ref=lambda x: SELU_L * np.where(x > 0, x, SELU_A * (np.exp(x) - 1)),
           grad_ref=_selu_grad_ref),
    OpCase('LeakyReLU', dict(act_type='gelu'), [(3, 5)], inputs=_scaled(3.0),
           ref=lambda x: 0.5 * x * (1 + _erf(x / np.sqrt(2))), rtol=1e-5, atol=3e-7),
    OpCase('LeakyReLU', dict(act_type='rrelu', lower_bound=0.1, upper_bound=0.3), [(3, 4)],
           inputs=_away_from_zero,
           ref=lambda x: [np.where(x > 0, x, 0.2 * x), np.zeros_like(x)]),
    OpCase('LeakyReLU', dict(act_type='rrelu'), [(3, 4)], inputs=_away_from_zero,
           is_train=True, grad=(),
           no_ref='random slopes: test_nn.py::test_rrelu_training_draws_slopes_in_bounds'),
    OpCase('LeakyReLU', dict(act_type='prelu'), [(2, 3, 4), (3,)], inputs=_away_from_zero,
           ref=_prelu_ref),
    OpCase('LeakyReLU', dict(act_type='prelu'), [(2, 3), (1,)], inputs=_away_from_zero,
           ref=_prelu_ref),
    OpCase('Dropout', dict(p=0.3), [(3, 4)], ref=lambda x: x),
    OpCase('Dropout', dict(p=0.5, mode='always', axes=(1,)), [(3, 4)], grad=(),
           no_ref='a random mask: test_nn.py::test_dropout_axes_share_mask'),
    OpCase('Dropout', dict(p=0.4), [(3, 5)], is_train=True, grad=(),
           no_ref='a random mask: test_nn.py::test_dropout_training_mask'),
] + [OpCase('Activation', dict(act_type=a), [(3, 5)], inputs=_away_from_zero, ref=_act(a))
     for a in ('relu', 'sigmoid', 'tanh', 'softrelu', 'softsign')]


def _hard_sigmoid_ref(alpha=0.2, beta=0.5):
    return lambda x: np.minimum(np.maximum(alpha * x + beta, 0), 1)


def _hs_inputs(rng, shapes, dtype):
    # 3.7 and -3.3 lie outside the linear part for the default alpha and beta
    x = rng.uniform(-2, 2, shapes[0])
    x.flat[0], x.flat[1] = 3.7, -3.3
    return [x]


HARD_SIGMOID_CASES = [
    OpCase('hard_sigmoid', {}, [(3, 4)], inputs=_hs_inputs, ref=_hard_sigmoid_ref(), dtypes=F16),
    OpCase('hard_sigmoid', dict(alpha=0.5, beta=0.2), [(2, 5)], inputs=_hs_inputs,
           ref=_hard_sigmoid_ref(0.5, 0.2)),
]


test_forward, test_gradient = case_tests(CASES + HARD_SIGMOID_CASES)


def test_softrelu_does_not_overflow():
    op = get_op('Activation')(act_type='softrelu')
    y, = op.forward(np, [np.array([-800.0, 0.0, 800.0])], [], False)
    np.testing.assert_allclose(y, [0.0, math.log(2), 800.0])


def test_fully_connected_fills_weight_and_bias():
    op = get_op('FullyConnected')(num_hidden=5)
    ins, outs, _ = op.infer_shape([(4, 3, 2), None, None])
    assert ins == [(4, 3, 2), (5, 6), (5,)] and outs == [(4, 5)]
    op = get_op('FullyConnected')(num_hidden=5, flatten=False)
    ins, outs, _ = op.infer_shape([(4, 3, 2), None, None])
    assert ins == [(4, 3, 2), (5, 2), (5,)] and outs == [(4, 3, 5)]
    # nothing is known without data (as in MXNet)
    assert op.infer_shape([None, (5, 6), None])[1] == [None]


@pytest.mark.parametrize('dtype', ['float32', 'float64'])
@pytest.mark.parametrize('attrs, shapes', [
    (dict(num_hidden=5), [(2, 3, 4), (5, 12), (5,)]),
    (dict(num_hidden=5, flatten=False), [(2, 3, 4), (5, 4), (5,)]),
    (dict(num_hidden=3, no_bias=True), [(4, 7), (3, 7)]),
    (dict(num_hidden=64), [(32, 64, 2), (64, 128), (64,)]),     # large: oneDNN's matmul
])
def test_fully_connected_computes_into_offered_arrays_bit_identically(attrs, shapes, dtype):
    """writes_into: the output (2-D products) and the data and weight gradients are the
    arrays offered, with exactly the values computed without them."""
    op = get_op('FullyConnected')(**attrs)
    be = cpu_backend()
    calls = be.calls.get('matmul', 0) if be is not None else 0
    rng = np.random.RandomState(5)
    ins = [rng.uniform(-1, 1, s).astype(dtype) for s in shapes]
    n = len(ins)
    _, out_shapes, _ = op.infer_shape([a.shape for a in ins])
    ref, = op.forward(np, ins, [], True)
    out = [np.full(out_shapes[0], np.nan, dtype)]
    y, = op.forward(np, ins, [], True, out=out)
    np.testing.assert_array_equal(y, ref)
    if ins[0].ndim == 2 or attrs.get('flatten', True):
        assert y is out[0]
    dy = rng.uniform(-1, 1, y.shape).astype(dtype)
    ref_grads = op.backward(np, [dy], ins, [y], [], [True] * n)
    grad_out = [np.full(a.shape, np.nan, dtype) for a in ins]
    grads = op.backward(np, [dy], ins, [y], [], [True] * n, grad_out=grad_out)
    assert grads[0] is grad_out[0] and grads[1] is grad_out[1]
    for g, r in zip(grads, ref_grads):
        np.testing.assert_array_equal(g, r)
    if be is not None and dtype == 'float32' and attrs['num_hidden'] == 64:
        assert be.calls['matmul'] == calls + 6      # each product, with and without


def test_fully_connected_shape_errors_name_argument():
    op = get_op('FullyConnected')(num_hidden=5)
    with pytest.raises(ShapeError, match="'weight'"):
        op.infer_shape([(4, 3), (5, 6), None])
    with pytest.raises(ShapeError, match="'bias'"):
        op.infer_shape([(4, 6), None, (4,)])
    # (num_hidden, 1) bias is accepted, as in MXNet
    assert op.infer_shape([(4, 6), None, (5, 1)])[0][2] == (5, 1)


def test_fully_connected_names_and_symbol_inference():
    x = mx.sym.var('x')
    fc = mx.sym.FullyConnected(x, num_hidden=3, name='fc')
    assert fc.list_arguments() == ['x', 'fc_weight', 'fc_bias']
    assert mx.sym.FullyConnected(x, num_hidden=3, no_bias=True, name='fc').list_arguments() \
        == ['x', 'fc_weight']
    args, outs, _ = fc.infer_shape(x=(2, 5))
    assert args == [(2, 5), (3, 5), (3,)] and outs == [(2, 3)]


def test_prelu_gamma_inference():
    op = get_op('LeakyReLU')(act_type='prelu')
    assert op.list_arguments() == ['data', 'gamma']
    assert op.infer_shape([(4, 3, 2), None])[0] == [(4, 3, 2), (3,)]
    assert op.infer_shape([(4, 3), (1,)])[0] == [(4, 3), (1,)]
    with pytest.raises(ShapeError, match="'gamma'"):
        op.infer_shape([(4, 3, 2), (2,)])
    assert get_op('LeakyReLU')().list_arguments() == ['data']


def test_rrelu_training_draws_slopes_in_bounds():
    op = get_op('LeakyReLU')(act_type='rrelu', lower_bound=0.2, upper_bound=0.4)
    assert op.list_outputs() == ['output', 'mask'] and op.num_visible_outputs() == 2
    x = -np.ones((50, 40))
    np.random.seed(0)
    y, mask = op.forward(np, [x], [], True)
    assert 0.2 <= mask.min() and mask.max() < 0.4 and mask.std() > 0.03
    np.testing.assert_allclose(y, -mask)
    g, = op.backward(np, [np.ones_like(x), None], [x], [y, mask], [], [True])
    np.testing.assert_allclose(g, mask)


def test_dropout_training_mask():
    op = get_op('Dropout')(p=0.25)
    assert op.list_outputs() == ['output', 'mask'] and op.num_visible_outputs() == 1
    x = np.random.RandomState(0).uniform(1, 2, (200, 50)).astype('float32')
    np.random.seed(1)
    y, mask = op.forward(np, [x], [], True)
    assert y.dtype == np.float32 and mask.dtype == np.float32
    assert set(np.unique(mask).tolist()) == {0.0, np.float32(1 / 0.75)}
    assert abs((mask == 0).mean() - 0.25) < 0.02
    np.testing.assert_allclose(y, x * mask)
    g, = op.backward(np, [np.ones_like(x), None], [x], [y, mask], [], [True])
    np.testing.assert_array_equal(g, mask)
    # inference: identity; mode='always' drops in inference too
    np.testing.assert_array_equal(op.forward(np, [x], [], False)[0], x)
    y, _ = get_op('Dropout')(p=0.5, mode='always').forward(np, [x], [], False)
    assert (y == 0).mean() > 0.4


def test_dropout_axes_share_mask():
    op = get_op('Dropout')(p=0.5, axes=(0, 2))
    np.random.seed(2)
    _, mask = op.forward(np, [np.ones((4, 30, 3))], [], True)
    assert (mask == mask[:1, :, :1]).all() and 0 < (mask == 0).mean() < 1


