"""mx.contrib.svrg_optimization (MXNet 1.9.1's SVRGModule and _SVRGOptimizer): the full
gradient is the batch gradients' mean at the snapshot, and an SVRG step moves the weights by
-lr * (g(w) - g(w_snapshot) + full_gradient), checked against NumPy on a linear regression."""
import numpy as np
import pytest

import symgraph as mx
from symgraph.contrib.svrg_optimization.svrg_module import SVRGModule
from symgraph.contrib.svrg_optimization.svrg_optimizer import _SVRGOptimizer

LR = 0.01


def _network(x, y, batch_size):
    di = mx.io.NDArrayIter(x, y, batch_size=batch_size, shuffle=False,
                           label_name='lin_reg_label')
    fc = mx.sym.FullyConnected(data=mx.sym.var('data'), name='fc1', num_hidden=1)
    lro = mx.sym.LinearRegressionOutput(data=fc, label=mx.sym.var('lin_reg_label'),
                                        name='lro')
    mod = SVRGModule(symbol=lro, data_names=['data'], label_names=['lin_reg_label'],
                     update_freq=2)
    mod.bind(data_shapes=di.provide_data, label_shapes=di.provide_label)
    mod.init_params(initializer=mx.init.One())
    mod.init_optimizer(kvstore='local', optimizer='sgd',
                       optimizer_params=(('learning_rate', LR),))
    return di, mod


def _grads(w, b, x, y):
    """LinearRegressionOutput's gradients (rescale_grad 1/batch is the optimizer's)."""
    d = x.dot(w.T)[:, 0] + b[0] - y           # d loss / d output, per example
    return d[:, None].T.dot(x), np.array([d.sum()])


def test_full_gradient_and_one_svrg_step_match_numpy():
    rng = np.random.RandomState(0)
    x = rng.randint(1, 5, [10, 2]).astype(np.float32)
    y = x.dot(np.array([1.0, 2.0], dtype=np.float32))
    di, mod = _network(x, y, batch_size=5)
    arg, _ = mod.get_params()          # One() sets the weight; the bias starts at 0
    w0, b0 = arg['fc1_weight'].asnumpy(), arg['fc1_bias'].asnumpy()
    np.testing.assert_array_equal(w0, [[1, 1]])
    mod.update_full_grads(di)
    full = [_grads(w0, b0, x[i:i + 5], y[i:i + 5]) for i in (0, 5)]
    full_w = (full[0][0] + full[1][0]) / 2
    full_b = (full[0][1] + full[1][1]) / 2
    np.testing.assert_allclose(mod._param_dict[0]['fc1_weight'].asnumpy(), full_w, rtol=1e-5)
    np.testing.assert_allclose(mod._param_dict[0]['fc1_bias'].asnumpy(), full_b, rtol=1e-5)

    di.reset()
    batch = next(di)
    mod.forward_backward(batch)           # the snapshot equals w: g(w) - g(snapshot) = 0
    mod.update()
    arg, _ = mod.get_params()
    np.testing.assert_allclose(arg['fc1_weight'].asnumpy(), w0 - LR / 5 * full_w, rtol=1e-5)
    np.testing.assert_allclose(arg['fc1_bias'].asnumpy(), b0 - LR / 5 * full_b, rtol=1e-5)

    # second step: the weights moved, the snapshot (and full gradient) stayed
    w1, b1 = arg['fc1_weight'].asnumpy(), arg['fc1_bias'].asnumpy()
    batch = next(di)
    mod.forward_backward(batch)
    mod.update()
    gw, gb = _grads(w1, b1, x[5:], y[5:])
    sw, sb = _grads(w0, b0, x[5:], y[5:])
    arg, _ = mod.get_params()
    np.testing.assert_allclose(arg['fc1_weight'].asnumpy(),
                               w1 - LR / 5 * (gw - sw + full_w), rtol=1e-4)
    np.testing.assert_allclose(arg['fc1_bias'].asnumpy(),
                               b1 - LR / 5 * (gb - sb + full_b), rtol=1e-4)


def test_fit_reduces_the_error():
    rng = np.random.RandomState(1)
    x = rng.randint(1, 5, [100, 2]).astype(np.float32)
    y = x.dot(np.array([1.0, 2.0], dtype=np.float32))
    di, mod = _network(x, y, batch_size=10)
    metric = mx.metric.create('mse')
    mod.score(di, metric)
    before = metric.get()[1]
    mod.fit(di, eval_metric='mse', optimizer='sgd', optimizer_params=(('learning_rate', LR),),
            num_epoch=4, force_init=True, initializer=mx.init.One())
    metric.reset()
    di.reset()
    mod.score(di, metric)
    assert metric.get()[1] < before / 10


def test_update_freq_is_checked():
    sym = mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=1)
    with pytest.raises(TypeError):
        SVRGModule(sym, label_names=None, update_freq=None)
    with pytest.raises(ValueError):
        SVRGModule(sym, label_names=None, update_freq=0)


def test_svrg_optimizer_routes_full_keys_to_the_assignment_optimizer():
    opt = _SVRGOptimizer(default_optimizer='sgd', learning_rate=0.5, momentum=0.9,
                         param_idx2name={0: 'w', 1: 'w_full'})
    assert isinstance(opt.default_opt, mx.optimizer.SGD) and opt.default_opt.momentum == 0.9
    w, g = mx.nd.ones((2,)), mx.nd.full((2,), 4.0)
    opt.update(1, w, g, opt.create_state(1, w))
    np.testing.assert_array_equal(w.asnumpy(), [4, 4])       # assigned
    w = mx.nd.ones((2,))
    opt.update(0, w, g, opt.create_state(0, w))
    np.testing.assert_allclose(w.asnumpy(), [-1, -1])        # 1 - 0.5 * 4
    with pytest.raises(KeyError):
        opt.update(7, w, g, None)
