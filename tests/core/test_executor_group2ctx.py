"""``group2ctx``: the inputs of a ``ctx_group`` live on the group's context, as MXNet 1.9.1
places them (its test_multi_device_exec.py and test_module.py's ctx-group tests), while
every operator runs on the executor's context: the values equal an executor without
groups."""
import numpy as np
import pytest

import symgraph as mx


def _mlp():
    with mx.AttrScope(ctx_group='stage1'):
        data = mx.sym.Variable('data')
        fc1 = mx.sym.FullyConnected(data, name='fc1', num_hidden=6)
        act1 = mx.sym.Activation(fc1, name='relu1', act_type='relu')
    with mx.AttrScope(ctx_group='stage2'):
        fc2 = mx.sym.FullyConnected(act1, name='fc2', num_hidden=3)
        out = mx.sym.SoftmaxOutput(mx.sym.BatchNorm(fc2, name='bn'), name='softmax')
    return out, set(act1.list_arguments())


def _run(exe, values):
    for k, v in values.items():
        exe.arg_dict[k][:] = v
    outs = [o.asnumpy() for o in exe.forward(is_train=True)]
    exe.backward()
    return outs, {k: g.asnumpy() for k, g in exe.grad_dict.items() if g is not None}


@pytest.mark.parametrize('grad_req', ['write', 'null_data'])
def test_arrays_live_on_their_group_context_and_values_are_unchanged(grad_req):
    sym, stage1 = _mlp()
    group2ctx = {'stage1': mx.cpu(1), 'stage2': mx.cpu(2)}
    req = 'write' if grad_req == 'write' else {
        k: 'null' if k == 'data' else 'write' for k in sym.list_arguments()}
    exe = sym.simple_bind(mx.cpu(0), group2ctx=group2ctx, data=(4, 5), grad_req=req)
    plain = sym.simple_bind(mx.cpu(0), data=(4, 5), grad_req=req)
    for name, arr, grad in zip(sym.list_arguments(), exe.arg_arrays, exe.grad_arrays):
        want = group2ctx['stage1' if name in stage1 else 'stage2']
        assert arr.context == want, name
        assert grad is None or grad.context == want, name
    for name, arr in zip(sym.list_auxiliary_states(), exe.aux_arrays):
        assert arr.context == mx.cpu(2), name
    rng = np.random.RandomState(0)
    values = {k: rng.uniform(-1, 1, a.shape).astype('float32')
              for k, a in plain.arg_dict.items()}
    values['softmax_label'] = np.array([0, 1, 2, 1], 'float32')
    outs, grads = _run(exe, values)
    ref_outs, ref_grads = _run(plain, values)
    for o, r in zip(outs, ref_outs):
        np.testing.assert_array_equal(o, r)
    assert sorted(grads) == sorted(ref_grads)
    for k in grads:
        # (fix_gamma: gamma's gradient is 0; the label's too)
        assert np.abs(grads[k]).sum() > 0 or k in ('softmax_label', 'bn_gamma'), k
        np.testing.assert_array_equal(grads[k], ref_grads[k], err_msg=k)
    # the running statistics (auxiliary states on stage2's context) were updated
    assert np.abs(exe.aux_dict['bn_moving_mean'].asnumpy()).sum() > 0
    np.testing.assert_array_equal(exe.aux_dict['bn_moving_mean'].asnumpy(),
                                  plain.aux_dict['bn_moving_mean'].asnumpy())


def test_module_input_gradients_on_the_group_contexts():
    with mx.AttrScope(ctx_group='dev1'):
        a = mx.sym.Variable('a') * 2
    with mx.AttrScope(ctx_group='dev2'):
        c = a + mx.sym.Variable('b') * 3
    grads = {}
    for groups in (None, {'dev1': mx.cpu(1), 'dev2': mx.cpu(2)}):
        mod = mx.mod.Module(c, context=[mx.cpu(0)], data_names=['a', 'b'], label_names=None,
                            group2ctxs=groups)
        mod.bind(data_shapes=[('a', (2, 5)), ('b', (2, 5))], inputs_need_grad=True)
        mod.init_params()
        mod.forward(mx.io.DataBatch(data=[mx.nd.ones((2, 5)), mx.nd.ones((2, 5))]),
                    is_train=True)
        mod.backward([mx.nd.ones((2, 5))])
        grads[groups is None] = mod.get_input_grads()
    assert [g.context for g in grads[False]] == [mx.cpu(1), mx.cpu(2)]
    for g, want in zip(grads[False], (2., 3.)):
        np.testing.assert_array_equal(g.asnumpy(), np.full((2, 5), want))
    for g, ref in zip(grads[False], grads[True]):
        np.testing.assert_array_equal(g.asnumpy(), ref.asnumpy())


def test_group2ctx_value_must_be_a_context():
    with mx.AttrScope(ctx_group='g'):
        x = mx.sym.Variable('x') * 2
    with pytest.raises(TypeError, match="group2ctx\\['g'\\] must be a Context"):
        x.simple_bind(mx.cpu(), group2ctx={'g': 'cpu(1)'}, x=(2,))
