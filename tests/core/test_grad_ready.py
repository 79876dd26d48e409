"""Executor.set_grad_ready_callback: each argument's gradient is reported once per backward,
as soon as it is final, in backward order, with the value backward leaves in it."""
import numpy as np
import pytest

import symgraph as mx
from symgraph.base import ArgumentTypeError


def _mlp():
    data = mx.sym.Variable('data')
    h = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=6, name='fc1'),
                          act_type='tanh')
    h = mx.sym.Activation(mx.sym.FullyConnected(h, num_hidden=5, name='fc2'), act_type='relu')
    return mx.sym.SoftmaxOutput(mx.sym.FullyConnected(h, num_hidden=3, name='fc3'),
                                name='softmax')


def _bind(sym, grad_req='write', ctx=None, **shapes):
    exe = sym.simple_bind(ctx or mx.cpu(), grad_req=grad_req, **shapes)
    rng = np.random.RandomState(0)
    for name, arr in exe.arg_dict.items():
        if name == 'softmax_label':
            arr[:] = rng.randint(0, 3, arr.shape)
        else:
            arr[:] = rng.normal(0, 0.5, arr.shape)
    return exe


def test_gradients_are_reported_final_in_backward_order_and_unchanged():
    sym = _mlp()
    plain = _bind(sym, data=(4, 7))
    plain.forward(is_train=True)
    plain.backward()
    want = {n: g.asnumpy() for n, g in plain.grad_dict.items() if g is not None}

    exe = _bind(sym, data=(4, 7))
    seen = []
    # what the array holds at the moment it is reported, and what the others hold then
    exe.set_grad_ready_callback(lambda j, name, g: seen.append(
        (j, name, g.asnumpy().copy(), exe.grad_dict['fc1_weight'].asnumpy().copy())))
    exe.forward(is_train=True)
    exe.backward()
    names = [s[1] for s in seen]
    # the last layer first, the data's gradient (not requested? it is: grad_req='write')
    # last among those that depend on fc1
    assert names.index('fc3_weight') < names.index('fc2_weight') < names.index('fc1_weight')
    assert names.index('fc3_bias') < names.index('fc2_bias') < names.index('fc1_bias')
    assert sorted(names) == sorted(want)                     # every gradient, once
    assert [s[0] for s in seen] == exe.grad_ready_order
    assert [exe._arg_names[j] for j in exe.grad_ready_order] == names
    for j, name, value, fc1_then in seen:
        np.testing.assert_array_equal(value, want[name])     # final when reported
        np.testing.assert_array_equal(exe.grad_dict[name].asnumpy(), want[name])
        if name == 'fc3_weight':
            # reported before backward reached fc1: fc1's gradient was not written yet
            assert not np.array_equal(fc1_then, want['fc1_weight'])
    # bitwise the same gradients as without the callback
    for name, g in want.items():
        np.testing.assert_array_equal(exe.grad_dict[name].asnumpy(), g)
    # a second backward reports again; removing the callback stops the reports
    seen.clear()
    exe.forward(is_train=True)
    exe.backward()
    assert len(seen) == len(want)
    exe.set_grad_ready_callback(None)
    seen.clear()
    exe.forward(is_train=True)
    exe.backward()
    assert seen == []
    for name, g in want.items():
        np.testing.assert_array_equal(exe.grad_dict[name].asnumpy(), g)


def test_add_reports_the_accumulated_gradient_and_null_is_not_reported():
    sym = _mlp()
    reqs = {'data': 'null', 'fc1_weight': 'add', 'fc1_bias': 'add', 'fc2_weight': 'write',
            'fc2_bias': 'null', 'fc3_weight': 'add', 'fc3_bias': 'write',
            'softmax_label': 'null'}
    plain = _bind(sym, grad_req=reqs, data=(4, 7))
    exe = _bind(sym, grad_req=reqs, data=(4, 7))
    got = {}
    exe.set_grad_ready_callback(lambda j, name, g: got.setdefault(name, []).append(
        g.asnumpy().copy()))
    for e in (plain, exe):
        for _ in range(2):
            e.forward(is_train=True)
            e.backward()
    assert sorted(got) == ['fc1_bias', 'fc1_weight', 'fc2_weight', 'fc3_bias', 'fc3_weight']
    for name, values in got.items():
        assert len(values) == 2
        np.testing.assert_array_equal(values[1], plain.grad_dict[name].asnumpy())
    # 'add': the second report holds twice the first
    np.testing.assert_allclose(got['fc1_weight'][1], 2 * got['fc1_weight'][0], rtol=1e-6)


@pytest.mark.parametrize('buffered', [True, False])
def test_fan_out_gradient_is_reported_after_its_last_contribution(buffered):
    # w feeds two branches: its gradient is the sum of both, final only after both ran
    data = mx.sym.Variable('data')
    w = mx.sym.Variable('w')
    a = mx.sym.FullyConnected(data, weight=w, num_hidden=4, no_bias=True, name='a')
    b = mx.sym.FullyConnected(mx.sym.tanh(a), weight=w, num_hidden=4, no_bias=True, name='b')
    loss = mx.sym.MakeLoss(mx.sym.sum(b * b) + mx.sym.sum(mx.sym.Variable('u') * a))
    plain = _bind(loss, data=(3, 4), w=(4, 4), u=(3, 4))
    plain.forward(is_train=True)
    plain.backward()
    exe = _bind(loss, data=(3, 4), w=(4, 4), u=(3, 4))
    exe._use_buffers = buffered     # gradients summed in the storage plan's buffers, or not
    got = {}
    exe.set_grad_ready_callback(lambda j, name, g: got.__setitem__(name, g.asnumpy().copy()))
    exe.forward(is_train=True)
    exe.backward()
    for name in ('w', 'data', 'u'):
        np.testing.assert_array_equal(got[name], plain.grad_dict[name].asnumpy())


def test_callback_with_a_monitor_and_a_bad_callback():
    exe = _bind(_mlp(), data=(2, 7))
    mon, ready = [], []
    exe.set_monitor_callback(lambda name, arr: mon.append(name))
    exe.set_grad_ready_callback(lambda j, name, g: ready.append(name))
    exe.forward(is_train=True)
    exe.backward()
    assert any(n.endswith('_backward_output') for n in mon) and len(ready) == 8
    with pytest.raises(ArgumentTypeError, match='must be callable'):
        exe.set_grad_ready_callback(3)


def test_gradients_bound_on_another_context_are_copied_back_before_the_report():
    sym = _mlp()
    exe = sym.simple_bind(mx.cpu(1), data=(2, 7))
    args = {n: a.copyto(mx.cpu(0)) for n, a in exe.arg_dict.items()}
    grads = {n: g.copyto(mx.cpu(0)) for n, g in exe.grad_dict.items() if g is not None}
    rng = np.random.RandomState(1)
    for name, arr in args.items():
        arr[:] = rng.randint(0, 3, arr.shape) if name == 'softmax_label' else \
            rng.normal(0, 0.5, arr.shape)
    exe = sym.bind(mx.cpu(1), args, args_grad=grads)
    got = {}
    exe.set_grad_ready_callback(lambda j, name, g: got.__setitem__(name, (
        g.context, g.asnumpy().copy())))
    exe.forward(is_train=True)
    exe.backward()
    for name, (ctx, value) in got.items():
        assert ctx == mx.cpu(0)
        np.testing.assert_array_equal(value, grads[name].asnumpy())
        assert np.abs(value).sum() > 0 or name == 'softmax_label'


@pytest.mark.gpu
@pytest.mark.skipif(mx.context.num_gpus() < 1, reason='needs a CUDA GPU')
def test_gradients_on_a_gpu_are_reported_final_and_unchanged():
    sym = _mlp()
    plain = _bind(sym, ctx=mx.gpu(0), data=(4, 7))
    plain.forward(is_train=True)
    plain.backward()
    exe = _bind(sym, ctx=mx.gpu(0), data=(4, 7))
    got = {}
    exe.set_grad_ready_callback(lambda j, name, g: got.__setitem__(name, (
        g.context, g.asnumpy().copy())))
    exe.forward(is_train=True)
    exe.backward()
    assert sorted(got) == sorted(n for n, g in plain.grad_dict.items() if g is not None)
    for name, (ctx, value) in got.items():
        assert ctx == mx.gpu(0)
        np.testing.assert_array_equal(value, plain.grad_dict[name].asnumpy())


def test_without_a_listener_the_backward_code_has_no_reports():
    import linecache
    exe = _bind(_mlp(), data=(2, 7))
    buffered = exe._use_buffers
    _, plain, _ = exe._plan.backward_fn(0, buffered=buffered, ready=False)
    _, ready, _ = exe._plan.backward_fn(0, buffered=buffered, ready=True)
    plain_src = ''.join(linecache.getlines(plain))
    ready_src = ''.join(linecache.getlines(ready))
    assert 'R(' not in plain_src
    assert ready_src.count('    R(') == 8           # one per argument with a gradient
    # the same lines otherwise, only moved
    strip = sorted(l for l in ready_src.splitlines()[1:] if 'R(' not in l)
    assert strip == sorted(plain_src.splitlines()[1:])
