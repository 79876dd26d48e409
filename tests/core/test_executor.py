"""Executors: bind, forward/backward, grad_req, errors, monitor, plan."""
import re

import numpy as np
import pytest

import symgraph as mx


def _net():
    x = mx.sym.var('x')
    w = mx.sym.var('w')
    h = mx.sym.FullyConnected(x, weight=w, num_hidden=4, no_bias=True, name='fc')
    return mx.sym.tanh(h, name='t') * 2.0


def _bind(grad_req='write', **kw):
    rng = np.random.RandomState(0)
    x = mx.nd.array(rng.randn(3, 5))
    w = mx.nd.array(rng.randn(4, 5))
    args = {'x': x, 'w': w}
    grads = {'x': mx.nd.zeros((3, 5)), 'w': mx.nd.zeros((4, 5))}
    return _net().bind(mx.cpu(), args, args_grad=grads, grad_req=grad_req, **kw), x, w


def test_forward_backward_values():
    exe, x, w = _bind()
    out = exe.forward(is_train=True)[0].asnumpy()
    xv, wv = x.asnumpy(), w.asnumpy()
    h = xv @ wv.T
    np.testing.assert_allclose(out, 2 * np.tanh(h), rtol=1e-5)
    og = np.random.RandomState(1).randn(3, 4).astype(np.float32)
    exe.backward([mx.nd.array(og)])
    dh = og * 2 * (1 - np.tanh(h) ** 2)
    np.testing.assert_allclose(exe.grad_dict['x'].asnumpy(), dh @ wv, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(exe.grad_dict['w'].asnumpy(), dh.T @ xv, rtol=1e-4, atol=1e-6)


def test_grad_req_add_and_null():
    exe, x, w = _bind(grad_req={'x': 'null', 'w': 'add'})
    og = mx.nd.ones((3, 4))
    exe.forward(is_train=True)
    exe.backward([og])
    g1 = exe.grad_dict['w'].asnumpy().copy()
    exe.forward(is_train=True)
    exe.backward([og])
    np.testing.assert_allclose(exe.grad_dict['w'].asnumpy(), 2 * g1, rtol=1e-5)
    # the array bound for 'x' stays listed (as MXNet) and is never written
    np.testing.assert_array_equal(exe.grad_dict['x'].asnumpy(), np.zeros((3, 5)))
    # simple_bind allocates none for 'null': the key is there with None, as in MXNet
    exe = _net().simple_bind(mx.cpu(), grad_req={'x': 'null', 'w': 'write'}, x=(3, 5))
    assert sorted(exe.grad_dict) == ['w', 'x'] and exe.grad_dict['x'] is None


def test_fan_out_gradients_are_summed():
    x = mx.sym.var('x')
    y = x * x + x
    exe = y.simple_bind(mx.cpu(), x=(2, 3))
    exe.arg_dict['x'][:] = np.arange(6).reshape(2, 3)
    exe.forward(is_train=True)
    exe.backward([mx.nd.ones((2, 3))])
    np.testing.assert_allclose(exe.grad_dict['x'].asnumpy(),
                               2 * np.arange(6).reshape(2, 3) + 1)


def test_grads_are_zero_before_backward_and_outputs_before_forward():
    exe = _net().simple_bind(mx.cpu(), x=(3, 5))
    assert not exe.grad_dict['w'].asnumpy().any()
    assert not exe.outputs[0].asnumpy().any()


def test_arrays_share_memory_with_executor():
    exe = _net().simple_bind(mx.cpu(), x=(3, 5))
    exe.arg_dict['w'][:] = 1.0
    exe.arg_dict['x'][:] = 0.5
    out = exe.outputs[0]
    exe.forward()
    assert exe.outputs[0] is out
    np.testing.assert_allclose(out.asnumpy(), 2 * np.tanh(2.5), rtol=1e-6)
    exe.forward(x=np.zeros((3, 5)))
    assert not out.asnumpy().any()


def test_bind_errors():
    net = _net()
    with pytest.raises(mx.MXNetError, match="'w'.*missing|missing.*'w'"):
        net.bind(mx.cpu(), {'x': mx.nd.zeros((3, 5))})
    with pytest.raises(ValueError):
        net.bind(mx.cpu(), [mx.nd.zeros((3, 5))])
    with pytest.warns(UserWarning, match='extra'):
        net.bind(mx.cpu(), {'x': mx.nd.zeros((3, 5)), 'w': mx.nd.zeros((4, 5)),
                            'extra': mx.nd.zeros(1)})
    with pytest.raises(mx.base.ShapeError, match="fc.*FullyConnected.*weight"):
        net.bind(mx.cpu(), {'x': mx.nd.zeros((3, 5)), 'w': mx.nd.zeros((4, 6))})
    with pytest.raises(mx.MXNetError, match='grad_req'):
        net.simple_bind(mx.cpu(), grad_req='bogus', x=(3, 5))


def test_backward_needs_head_gradient_unless_loss():
    exe = _net().simple_bind(mx.cpu(), x=(3, 5))
    exe.forward(is_train=True)
    with pytest.raises(mx.MXNetError, match='MakeLoss'):
        exe.backward()
    loss = mx.sym.MakeLoss(mx.sym.sum(_net()))
    exe = loss.simple_bind(mx.cpu(), x=(3, 5))
    exe.forward(is_train=True)
    exe.backward()


def test_backward_before_any_forward_is_an_error():
    exe = _net().simple_bind(mx.cpu(), x=(3, 5))
    with pytest.raises(mx.MXNetError, match='forward'):
        exe.backward([mx.nd.ones((3, 4))])
    # after an inference forward backward runs, as in MXNet (values against MXNet in
    # tests/golden/test_semantics.py)
    exe.forward(is_train=False)
    exe.backward([mx.nd.ones((3, 4))])
    # an executor without gradients keeps nothing for backward
    exe = _net().simple_bind(mx.cpu(), grad_req='null', x=(3, 5))
    exe.forward(is_train=False)
    with pytest.raises(mx.MXNetError, match='forward'):
        exe.backward([mx.nd.ones((3, 4))])


def test_head_gradient_shape_checked():
    exe = _net().simple_bind(mx.cpu(), x=(3, 5))
    exe.forward(is_train=True)
    with pytest.raises(mx.MXNetError, match='head gradient'):
        exe.backward([mx.nd.ones((4, 3))])


def test_monitor_callback_sees_every_output():
    exe = _net().simple_bind(mx.cpu(), x=(3, 5))
    seen = []
    exe.set_monitor_callback(lambda name, arr: seen.append((name, arr.shape)))
    exe.forward()
    names = [n for n, _ in seen]
    assert names == ['fc_output', 't_output', '_mulscalar0_output'] or \
        names[:2] == ['fc_output', 't_output']
    seen.clear()
    exe.set_monitor_callback(lambda name, arr: seen.append(name), monitor_all=True)
    exe.forward()
    assert 'x' in seen and 'w' in seen


def test_reshape_and_copy_params_from():
    exe = _net().simple_bind(mx.cpu(), x=(3, 5))
    exe.copy_params_from({'w': mx.nd.ones((4, 5))})
    new = exe.reshape(x=(2, 5))
    assert new.arg_dict['w'] is exe.arg_dict['w']
    assert new.forward()[0].shape == (2, 4)
    with pytest.raises(mx.MXNetError, match='allow_up_sizing'):
        exe.reshape(x=(7, 5))
    assert exe.reshape(allow_up_sizing=True, x=(7, 5)).forward()[0].shape == (7, 4)
    with pytest.raises(ValueError, match='nope'):
        exe.copy_params_from({'nope': mx.nd.ones(1)})
    exe.copy_params_from({'nope': mx.nd.ones(1)}, allow_extra_params=True)


def test_debug_str_reports_planned_and_naive_bytes():
    x = mx.sym.var('x')
    y = x
    for _ in range(20):
        y = mx.sym.relu(y + 1)
    exe = y.simple_bind(mx.cpu(), x=(64, 64))
    s = exe.debug_str()
    planned, naive = map(int, re.search(r'planned_bytes=(\d+) naive_bytes=(\d+)', s).groups())
    assert 0 < planned < naive
    assert 'created at' in s


def test_error_inside_forward_names_node_and_engine_stays_usable():
    x = mx.sym.var('x')
    idx = mx.sym.var('i')
    y = mx.sym.take(x, idx, mode='raise', name='tk')
    exe = y.simple_bind(mx.cpu(), x=(3, 2), i=(2,))
    exe.arg_dict['i'][:] = [0, 7]
    with pytest.raises(mx.MXNetError, match="tk"):
        exe.forward()
    exe.arg_dict['i'][:] = [0, 1]
    assert exe.forward()[0].shape == (2, 2)


def test_dtype_float64_runs_in_float64():
    exe = _net().simple_bind(mx.cpu(), type_dict={'x': 'float64'}, x=(3, 5))
    assert exe.arg_dict['w'].dtype == np.float64
    assert exe.forward()[0].dtype == np.float64


def test_numeric_gradient_checker_catches_a_wrong_gradient():
    from symgraph.opdef import Operator, register

    @register
    class _BadSquare(Operator):
        name = '_test_bad_square'

        def forward(self, xp, inputs, aux, is_train):
            return [inputs[0] ** 2]

        def backward(self, xp, out_grads, inputs, outputs, aux, need):
            return [out_grads[0] * inputs[0]]        # wrong: should be 2x

    s = mx.sym._test_bad_square(mx.sym.var('x'))
    with pytest.raises(AssertionError):
        mx.test_utils.check_numeric_gradient(s, [np.random.rand(3, 2) + 0.5])
    mx.test_utils.check_numeric_gradient(mx.sym.square(mx.sym.var('x')),
                                         [np.random.rand(3, 2) + 0.5])


def test_variable_and_repeated_heads():
    x = mx.sym.var('x')
    y = mx.sym.exp(x)
    exe = mx.sym.Group([x, y, y]).simple_bind(mx.cpu(), x=(2,))
    exe.arg_dict['x'][:] = [0, 1]
    outs = exe.forward(is_train=True)
    np.testing.assert_allclose(outs[0].asnumpy(), [0, 1])
    # an output listed twice takes the last head gradient only, as MXNet 1.9.1 (which
    # gives [6, 14.5914] here), and a warning names it
    with pytest.warns(UserWarning, match=r'exp\d+_output is listed more than once'):
        exe.backward([mx.nd.ones((2,)), mx.nd.ones((2,)) * 2, mx.nd.ones((2,)) * 5])
    np.testing.assert_allclose(exe.grad_dict['x'].asnumpy(), 1 + 5 * np.exp([0, 1]),
                               rtol=1e-6)


def test_inference_frees_intermediates_after_last_use():
    import tracemalloc
    x = mx.sym.var('x')
    y = x
    for _ in range(20):
        y = mx.sym.relu(y + 1.0)
    exe = y.simple_bind(mx.cpu(), grad_req='null', x=(1000, 1000))    # 4 MB per array
    exe.forward()
    tracemalloc.start()
    exe.forward()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    # 40 intermediate arrays of 4 MB exist in turn; at most a few are alive at once
    assert peak < 4 * 4_000_000, 'peak %d bytes: intermediates were kept alive' % peak
    # the storage run plans the same: a few arrays at its fullest step, far below one
    # array per entry (no gradients here, so its lifetimes are the inference ones)
    st = exe._plan.storage()
    assert st.peak_bytes <= 3 * 4_000_000 < st.naive_bytes
