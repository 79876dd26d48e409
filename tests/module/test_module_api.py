"""mx.mod.Module without an optimizer: binding, parameters, forward/backward, outputs,
reshaping, several devices, states, monitors, files, and bad input (a clear error, the
module usable afterwards).  Training is in test_module_fit.py."""
import os

import numpy as np
import pytest

import symgraph as mx


def bound(net, x, y, batch=4, context=None, **kwargs):
    it = mx.io.NDArrayIter(x, y, batch)
    mod = mx.mod.Module(net, context=context or mx.cpu(), **kwargs)
    mod.bind(it.provide_data, it.provide_label)
    return mod, it


def plain_forward(net, args, aux, x, y=None):
    exe = net.simple_bind(mx.cpu(), data=x.shape, grad_req='write')
    exe.copy_params_from(args, aux)
    kw = {'data': x}
    if y is not None:
        kw['softmax_label'] = y
    out = exe.forward(is_train=True, **kw)[0].asnumpy()
    exe.backward()
    return out, {k: g.asnumpy() for k, g in exe.grad_dict.items() if g is not None}


# ---------------------------------------------------------------------- binding
def test_names_and_shapes(net, data):
    mod = mx.mod.Module(net)
    assert mod.data_names == ['data'] and mod.label_names == ['softmax_label']
    assert mod.output_names == ['softmax_output']
    assert mod.symbol is net and not mod.binded
    mod, _ = bound(net, *data)
    assert mod.binded and mod.for_training and not mod.params_initialized
    assert [(d.name, d.shape) for d in mod.data_shapes] == [('data', (4, 5))]
    assert [(d.name, d.shape) for d in mod.label_shapes] == [('softmax_label', (4,))]
    assert mod.output_shapes == [('softmax_output', (4, 3))]


def test_bind_again_logs_mxnets_warning(net, data, root_log):
    mod, it = bound(net, *data)
    mod.bind(it.provide_data, it.provide_label)
    assert 'Already bound, ignoring bind()' in root_log.messages('WARNING')
    mod.bind([('data', (2, 5))], [('softmax_label', (2,))], force_rebind=True)
    assert mod.output_shapes == [('softmax_output', (2, 3))]


def test_state_errors_name_the_missing_step(net, data):
    mod = mx.mod.Module(net)
    with pytest.raises(mx.mod.ModuleStateError, match='bind'):
        mod.init_params()
    mod, it = bound(net, *data)
    with pytest.raises(AssertionError, match='initialize its parameters'):  # MXNet's type
        mod.forward(next(iter(it)))
    mod.init_params()
    with pytest.raises(RuntimeError, match='init_optimizer'):
        mod.update()
    mod.forward(next(iter(it)))          # still usable
    assert mod.get_outputs()[0].shape == (4, 3)


def test_init_params_twice_warns(net, data):
    mod, _ = bound(net, *data)
    mod.init_params()
    with pytest.warns(UserWarning, match='Parameters already initialized and '
                                         'force_init=False. init_params call ignored.'):
        mod.init_params()
    mod.init_params(force_init=True)


def test_initializer_and_given_params(net, data, params):
    args, aux = params(net, (4, 5))
    mod, _ = bound(net, *data)
    mod.init_params(mx.init.Zero(), arg_params={'fc1_weight': args['fc1_weight']},
                    allow_missing=True)
    got, _ = mod.get_params()
    np.testing.assert_array_equal(got['fc1_weight'].asnumpy(), args['fc1_weight'].asnumpy())
    assert not got['fc2_weight'].asnumpy().any()
    assert sorted(got) == ['fc1_bias', 'fc1_weight', 'fc2_bias', 'fc2_weight']
    # the module's parameters are copies, not the caller's arrays
    args['fc1_weight'][:] = 7
    assert not (mod.get_params()[0]['fc1_weight'].asnumpy() == 7).any()


def test_missing_parameter_is_mxnets_runtime_error_and_changes_nothing(net, data, params):
    args, aux = params(net, (4, 5))
    mod, _ = bound(net, *data)
    mod.init_params(arg_params=args)
    partial = {k: v * 2 for k, v in args.items() if k != 'fc2_bias'}
    with pytest.raises(RuntimeError, match='fc2_bias is not presented'):
        mod.set_params(partial, {})
    # nothing was set, not even the parameters before the missing one
    np.testing.assert_array_equal(mod.get_params()[0]['fc1_weight'].asnumpy(),
                                  args['fc1_weight'].asnumpy())
    mod.set_params(partial, {}, allow_missing=True)
    np.testing.assert_array_equal(mod.get_params()[0]['fc1_weight'].asnumpy(),
                                  2 * args['fc1_weight'].asnumpy())
    np.testing.assert_array_equal(mod.get_params()[0]['fc2_bias'].asnumpy(),
                                  args['fc2_bias'].asnumpy())


def test_extra_parameters(net, data, params):
    args, _ = params(net, (4, 5))
    extra = dict(args, fc3_weight=mx.nd.ones((2, 2)))
    mod, _ = bound(net, *data)
    with pytest.warns(UserWarning, match=r"\['fc3_weight'\] are not parameters"):
        mod.init_params(arg_params=extra)       # MXNet ignores them silently
    mod.set_params(extra, {}, allow_extra=True)
    with pytest.raises(ValueError, match='Find name "fc3_weight" that is not in the '
                                         'arguments'):
        mod.set_params(extra, {}, allow_missing=True)
    mod.set_params(extra, {}, allow_missing=True, allow_extra=True)


def test_misshapen_parameter_is_named(net, data, params):
    args, _ = params(net, (4, 5))
    args['fc2_weight'] = mx.nd.ones((3, 7))
    mod, it = bound(net, *data)
    with pytest.raises(ValueError, match=r"'fc2_weight' has shape \(3, 7\) but the module "
                                         r"needs \(3, 8\)"):
        mod.init_params(arg_params=args)
    assert not mod.params_initialized
    mod.init_params()
    mod.forward(next(iter(it)))


# ---------------------------------------------------------------------- computing
def test_forward_backward_equal_the_plain_executor(net, data, params):
    x, y = data
    args, aux = params(net, (4, 5))
    mod, it = bound(net, x, y)
    mod.init_params(arg_params=args, aux_params=aux)
    batch = next(iter(it))
    mod.forward_backward(batch)
    out, grads = plain_forward(net, args, aux, x[:4], y[:4])
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), out, rtol=1e-6)
    for name, g in zip(mod._exec_group.param_names, mod._exec_group.grad_arrays):
        np.testing.assert_allclose(g[0].asnumpy(), grads[name], rtol=1e-5, atol=1e-7)


def test_forward_with_other_batch_sizes_reshapes(net, data, params):
    x, y = data
    args, aux = params(net, (4, 5))
    mod, it = bound(net, x, y)
    mod.init_params(arg_params=args)
    for n in (3, 7, 4, 3):
        mod.forward(mx.io.DataBatch([mx.nd.array(x[:n])], [mx.nd.array(y[:n])]),
                    is_train=True)
        mod.backward()
        out, grads = plain_forward(net, args, aux, x[:n], y[:n])
        np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), out, rtol=1e-6)
        np.testing.assert_allclose(mod._exec_group.grad_arrays[0][0].asnumpy(),
                                   grads['fc1_weight'], rtol=1e-5, atol=1e-7)
        assert [d.shape for d in mod.data_shapes] == [(n, 5)]
    # the reshaped executors share the parameters of the bound ones
    execs = mod._exec_group._default_execs + mod._exec_group.execs
    assert len({id(e.arg_dict['fc1_weight']) for e in execs}) == 1


def test_forward_reshapes_without_provide_data():
    # MXNet's test_forward_reshape, last part: a batch with data only
    from collections import namedtuple
    Batch = namedtuple('Batch', ['data'])
    out = mx.sym.Variable('data') * 2
    mod = mx.mod.Module(symbol=out, label_names=None)
    mod.bind(data_shapes=[('data', (1, 10))])
    mod.init_params()
    mod.forward(Batch([mx.nd.ones((1, 10))]))
    assert mod.get_outputs()[0].shape == (1, 10)
    mod.forward(Batch([mx.nd.ones((3, 5))]))
    np.testing.assert_array_equal(mod.get_outputs()[0].asnumpy(), np.full((3, 5), 2.0))


def test_predict_removes_padding_and_merges(net, data, params):
    x, y = data
    args, aux = params(net, (4, 5))
    it = mx.io.NDArrayIter(x[:18], y[:18], 4)     # last batch padded by 2
    mod = mx.mod.Module(net)
    mod.bind(it.provide_data, it.provide_label, for_training=False)
    mod.init_params(arg_params=args)
    want = plain_forward(net, args, aux, x[:18])[0]
    pred = mod.predict(it)
    assert isinstance(pred, mx.nd.NDArray) and pred.shape == (18, 3)
    np.testing.assert_allclose(pred.asnumpy(), want, rtol=1e-6)
    as_list = mod.predict(it, always_output_list=True)
    assert isinstance(as_list, list) and as_list[0].shape == (18, 3)
    per_batch = mod.predict(it, merge_batches=False)
    assert [b[0].shape for b in per_batch] == [(4, 3)] * 4 + [(2, 3)]
    assert mod.predict(it, num_batch=2).shape == (8, 3)
    got = [(o[0].shape, i) for o, i, _ in mod.iter_predict(it)]
    assert got == [((4, 3), 0), ((4, 3), 1), ((4, 3), 2), ((4, 3), 3), ((2, 3), 4)]
    one = mod.predict(x[:4])        # an array is one batch
    np.testing.assert_allclose(one.asnumpy(), want[:4], rtol=1e-6)
    with pytest.raises(ValueError, match='eval_data must be of type NDArray or DataIter'):
        mod.predict([x])


def test_score(net, data, params):
    x, y = data
    args, _ = params(net, (4, 5))
    mod, it = bound(net, x, y)
    mod.init_params(arg_params=args)
    prob = plain_forward(net, args, {}, x)[0]
    acc = float((prob.argmax(1) == y).mean())
    assert mod.score(it, 'acc') == [('accuracy', pytest.approx(acc))]
    calls = []
    res = mod.score(it, ['acc', 'ce'], num_batch=2,
                    batch_end_callback=lambda p: calls.append(p.nbatch),
                    score_end_callback=lambda p: calls.append(('end', p.nbatch)))
    assert [n for n, _ in res] == ['accuracy', 'cross-entropy']
    assert calls == [0, 1, ('end', 2)]


@pytest.mark.parametrize('work_load', [None, [1, 1], [1, 3]])
def test_several_devices_equal_one(net, data, params, work_load):
    x, y = data
    args, aux = params(net, (8, 5))
    one, it = bound(net, x, y, batch=8)
    one.init_params(arg_params=args)
    two, _ = bound(net, x, y, batch=8, context=[mx.cpu(0), mx.cpu(1)],
                   work_load_list=work_load)
    two.init_params(arg_params=args)
    if work_load == [1, 3]:
        assert two._exec_group.slices == [slice(0, 2), slice(2, 8)]
    batch = next(iter(it))
    for mod in (one, two):
        mod.forward_backward(batch)
    np.testing.assert_allclose(two.get_outputs()[0].asnumpy(),
                               one.get_outputs()[0].asnumpy(), rtol=1e-6)
    per_dev = two.get_outputs(merge_multi_context=False)[0]
    assert [o.context for o in per_dev] == [mx.cpu(0), mx.cpu(1)]
    for g1, g2 in zip(one._exec_group.grad_arrays, two._exec_group.grad_arrays):
        total = sum(g.asnumpy() for g in g2)
        np.testing.assert_allclose(total, g1[0].asnumpy(), rtol=1e-5, atol=1e-6)


def test_work_load_list_must_match_contexts(net):
    with pytest.raises(ValueError, match='work_load_list has 3 entries for 2 contexts'):
        mx.mod.Module(net, context=[mx.cpu(0), mx.cpu(1)], work_load_list=[1, 1, 1])
    mod = mx.mod.Module(net, context=[mx.cpu(i) for i in range(3)])
    with pytest.raises(ValueError, match='Too many slices'):
        mod.bind([('data', (2, 5))], [('softmax_label', (2,))])
    assert not mod.binded
    mod.bind([('data', (3, 5))], [('softmax_label', (3,))])


def test_input_grads_on_two_devices():
    # MXNet's test_module_input_grads
    a = mx.sym.Variable('a', __layout__='NC')
    b = mx.sym.Variable('b', __layout__='NC')
    c = mx.sym.Variable('c', __layout__='NC')
    c = a + 2 * b + 3 * c
    net = mx.mod.Module(c, data_names=['b', 'c', 'a'], label_names=None,
                        context=[mx.cpu(0), mx.cpu(1)])
    net.bind(data_shapes=[['b', (5, 5)], ['c', (5, 5)], ['a', (5, 5)]],
             label_shapes=None, inputs_need_grad=True)
    net.init_params()
    net.forward(data_batch=mx.io.DataBatch(data=[mx.nd.ones((5, 5))] * 3))
    net.backward(out_grads=[mx.nd.ones((5, 5))])
    b_grad, c_grad, a_grad = [g.asnumpy() for g in net.get_input_grads()]
    assert (a_grad == 1).all() and (b_grad == 2).all() and (c_grad == 3).all()
    assert [g.shape for g in net.get_input_grads(merge_multi_context=False)[0]] == \
        [(2, 5), (3, 5)]       # MXNet's split: round(2.5) == 2, the rest to the last


def test_layout_picks_the_batch_axis():
    # MXNet's test_module_layout
    # (MXNet's test passes __layout__='TNC' as a keyword, which symgraph's operators
    # refuse; attr= gives the same attribute)
    sym = mx.sym.Activation(data=mx.sym.Variable('data'), act_type='relu',
                            attr={'__layout__': 'TNC'})
    dshape = (3, 8, 7)
    mod = mx.mod.Module(sym, ('data',), None, context=[mx.cpu(0), mx.cpu(1)])
    mod.bind(data_shapes=[mx.io.DataDesc('data', dshape, layout='TNC')])
    mod.init_params()
    mod.forward(mx.io.DataBatch(data=[mx.nd.ones(dshape)], label=None))
    mod.backward([mx.nd.ones(dshape)])
    assert mod.get_outputs()[0].shape == dshape
    for x in mod.get_outputs(merge_multi_context=False)[0]:
        assert x.shape == (3, 4, 7)


def test_float16_module():
    # MXNet's test_module_dtype
    dshape = (3, 8, 7)
    sym = mx.sym.Activation(data=mx.sym.Variable('data'), act_type='relu',
                            attr={'__layout__': 'TNC'})
    mod = mx.mod.Module(sym, ('data',), None, context=[mx.cpu(0), mx.cpu(1)])
    mod.bind(data_shapes=[mx.io.DataDesc('data', dshape, np.float16, layout='TNC')])
    mod.init_params()
    mod.forward(mx.io.DataBatch(data=[mx.nd.ones(dshape, dtype=np.float16)], label=None))
    mod.backward([mx.nd.ones(dshape, dtype=np.float16)])
    assert all(x.dtype == np.float16 for x in mod.get_outputs())


def test_states():
    data = mx.sym.var('data')
    state = mx.sym.var('state')
    out = mx.sym.FullyConnected(data, num_hidden=3, name='fc') + state
    mod = mx.mod.Module(out, label_names=None, state_names=['state'],
                        context=[mx.cpu(0), mx.cpu(1)])
    mod.bind([('data', (4, 2))], for_training=False)
    mod.init_params(mx.init.Zero())
    mod.set_states(value=1)
    mod.forward(mx.io.DataBatch([mx.nd.zeros((4, 2))], []))
    np.testing.assert_array_equal(mod.get_outputs()[0].asnumpy(), np.ones((4, 3)))
    states = mod.get_states(merge_multi_context=False)
    assert [s.shape for s in states[0]] == [(2, 3), (2, 3)]
    mod.set_states(states=[[mx.nd.full((2, 3), 2), mx.nd.full((2, 3), 5)]])
    mod.forward(mx.io.DataBatch([mx.nd.zeros((4, 2))], []))
    np.testing.assert_array_equal(mod.get_outputs()[0].asnumpy()[:, 0], [2, 2, 5, 5])
    with pytest.raises(ValueError, match='Only one of states & value'):
        mod.set_states(states=states, value=1)


def test_fixed_params_and_grad_req(net, data):
    mod, it = bound(net, *data, fixed_param_names=['fc1_weight'])
    mod.init_params()
    group = mod._exec_group
    assert group.grad_req['fc1_weight'] == 'null' and group.grad_req['fc2_weight'] == 'write'
    assert group.grad_req['data'] == 'null' and group.grad_req['softmax_label'] == 'null'
    assert group.grad_arrays[group.param_names.index('fc1_weight')] == [None]
    acc = mx.mod.Module(net)
    acc.bind(it.provide_data, it.provide_label, grad_req='add')
    acc.init_params()
    batch = next(iter(it))
    acc.forward_backward(batch)
    first = acc._exec_group.grad_arrays[0][0].asnumpy().copy()
    acc.forward_backward(batch)
    np.testing.assert_allclose(acc._exec_group.grad_arrays[0][0].asnumpy(), 2 * first,
                               rtol=1e-6)


def test_monitor_sees_every_output(net, data):
    mon = mx.mon.Monitor(1, pattern='.*')
    mod, it = bound(net, *data)
    mod.install_monitor(mon)
    mod.init_params()
    mon.tic()
    mod.forward(next(iter(it)))
    names = {name for _, name, _ in mon.toc()}
    assert {'fc1_output', 'relu1_output', 'fc2_output', 'softmax_output'} <= names
    # executors made by a reshape keep the monitor, as MXNet's
    mon.tic()
    mod.forward(mx.io.DataBatch([mx.nd.ones((2, 5))], [mx.nd.ones((2,))]))
    assert 'fc1_output' in {name for _, name, _ in mon.toc()}


def test_save_and_load_params(net, data, params, tmp_path):
    args, _ = params(net, (4, 5))
    mod, _ = bound(net, *data)
    mod.init_params(arg_params=args)
    fname = str(tmp_path / 'p.params')
    mod.save_params(fname)
    assert sorted(mx.nd.load(fname)) == ['arg:fc1_bias', 'arg:fc1_weight', 'arg:fc2_bias',
                                         'arg:fc2_weight']
    other, _ = bound(net, *data)
    other.init_params(mx.init.Zero())
    other.load_params(fname)
    for k, v in other.get_params()[0].items():
        np.testing.assert_array_equal(v.asnumpy(), args[k].asnumpy())


def test_checkpoint_round_trip_without_optimizer(net, data, params, tmp_path, root_log):
    args, _ = params(net, (4, 5))
    mod, it = bound(net, *data)
    mod.init_params(arg_params=args)
    prefix = str(tmp_path / 'ck')
    mod.save_checkpoint(prefix, 3)
    assert ('INFO', 'Saved checkpoint to "%s-0003.params"' % prefix) in root_log.lines
    assert sorted(os.listdir(str(tmp_path))) == ['ck-0003.params', 'ck-symbol.json']
    loaded = mx.mod.Module.load(prefix, 3)
    assert loaded.params_initialized and not loaded.binded
    loaded.bind(it.provide_data, it.provide_label, for_training=False)
    np.testing.assert_allclose(loaded.predict(it).asnumpy(), mod.predict(it).asnumpy())


def test_checkpoint_missing_a_parameter(net, data, params, tmp_path):
    args, _ = params(net, (4, 5))
    prefix = str(tmp_path / 'ck')
    del args['fc2_bias']
    mx.model.save_checkpoint(prefix, 1, net, args, {})
    with pytest.warns(UserWarning, match="lacks parameters of the symbol: \\['fc2_bias'\\]"):
        loaded = mx.mod.Module.load(prefix, 1)
    with pytest.raises(RuntimeError, match=r"lack \['fc2_bias'\].*allow_missing=True"):
        loaded.bind([('data', (4, 5))], [('softmax_label', (4,))])
    assert not loaded.binded
    # MXNet's way: the checkpoint's parameters with allow_missing
    with pytest.warns(UserWarning, match='lacks parameters'):
        _, arg_params, aux_params = mx.model.load_checkpoint(prefix, 1)
    mod, it = bound(net, *data)
    with pytest.raises(RuntimeError, match='fc2_bias is not presented'):
        mod.init_params(arg_params=arg_params, aux_params=aux_params)
    mod.init_params(mx.init.Zero(), arg_params=arg_params, aux_params=aux_params,
                    allow_missing=True)
    assert not mod.get_params()[0]['fc2_bias'].asnumpy().any()


# ---------------------------------------------------------------------- bad input
def test_data_names_must_match(net):
    with pytest.raises(ValueError, match="input with name 'x' is not found"):
        mx.mod.Module(net, data_names=['x'])
    mod = mx.mod.Module(net)
    with pytest.raises(ValueError, match="don't match names specified by data_names"):
        mod.bind([('x', (4, 5))], [('softmax_label', (4,))])
    assert not mod.binded
    mod.bind([('data', (4, 5))], [('softmax_label', (4,))])


def test_label_name_the_symbol_lacks(data):
    x, y = data
    net = mx.sym.LinearRegressionOutput(
        mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=1, name='fc'), name='lro')
    with pytest.warns(UserWarning, match="input with name 'softmax_label' is not found"):
        mod = mx.mod.Module(net)        # MXNet's warning
    it = mx.io.NDArrayIter(x, y, 4)     # its label is softmax_label
    with pytest.raises(ValueError, match=r"label 'softmax_label' .* is not an argument of "
                                         r"the symbol.*'lro_label'"):
        mod.bind(it.provide_data, it.provide_label)
    assert not mod.binded
    with pytest.warns(UserWarning, match="label_shapes don't match names specified by "
                                         "label_names"):
        mod.bind(it.provide_data)       # usable: bound without labels (MXNet's warning)
    assert mod.binded
    good = mx.mod.Module(net, label_names=['lro_label'])
    it = mx.io.NDArrayIter(x, {'lro_label': y}, 4)
    good.bind(it.provide_data, it.provide_label)
    good.init_params()
    good.forward_backward(next(iter(it)))


def test_batch_of_the_wrong_feature_size(net, data):
    x, y = data
    mod, it = bound(net, x, y)
    mod.init_params()
    wrong = mx.io.NDArrayIter(np.ones((8, 6), np.float32), y[:8], 4)
    with pytest.raises(mx.base.MXNetError, match=r"\('data', \(4, 6\)\).*bound to "
                                                 r"\[\('data', \(4, 5\)\)\].*fc1_weight"):
        mod.forward(next(iter(wrong)))
    with pytest.raises(mx.base.MXNetError, match=r'\(4, 6\)'):
        mod.score(wrong, 'acc')
    # the module is unchanged and usable
    assert [d.shape for d in mod.data_shapes] == [(4, 5)]
    mod.forward(next(iter(it)))
    assert mod.get_outputs()[0].shape == (4, 3)


def test_batch_that_contradicts_its_provide_data(net, data):
    x, y = data
    mod, it = bound(net, x, y)
    mod.init_params()
    bad = mx.io.DataBatch([mx.nd.ones((4, 6))], [mx.nd.ones((4,))],
                          provide_data=[('data', (4, 5))],
                          provide_label=[('softmax_label', (4,))])
    with pytest.raises(mx.base.MXNetError, match=r"input 'data' has shape \(4, 6\) but the "
                                                 r"module is bound to \(4, 5\)"):
        mod.forward(bad)
    mod.forward(next(iter(it)))


def test_dropout_on_several_devices_repeats_after_seeding():
    net = mx.sym.SoftmaxOutput(mx.sym.Dropout(mx.sym.FullyConnected(
        mx.sym.var('data'), num_hidden=6, name='fc'), p=0.5), name='softmax')
    outs = []
    for _ in range(2):
        mod = mx.mod.Module(net, context=[mx.cpu(0), mx.cpu(1)])
        mod.bind([('data', (8, 4))], [('softmax_label', (8,))])
        mod.init_params(mx.init.One())
        mx.random.seed(42)
        mod.forward(mx.io.DataBatch([mx.nd.ones((8, 4))], [mx.nd.zeros((8,))]))
        outs.append(mod.get_outputs()[0].asnumpy())
    np.testing.assert_array_equal(outs[0], outs[1])
    # each device draws its own mask: the two halves differ
    assert not np.array_equal(outs[0][:4], outs[0][4:])


def test_pre_sliced_batches_one_per_device(net, data, params):
    """A list of DataBatches, one per device (MXNet's pre-sliced input), equals the whole
    batch split by the module."""
    x, y = data
    args, _ = params(net, (8, 5))
    whole, it = bound(net, x, y, batch=8, context=[mx.cpu(0), mx.cpu(1)])
    whole.init_params(arg_params=args)
    whole.forward_backward(next(iter(it)))
    parts = [mx.io.DataBatch([mx.nd.array(x[k:k + 4])], [mx.nd.array(y[k:k + 4])])
             for k in (0, 4)]
    sliced, _ = bound(net, x, y, batch=8, context=[mx.cpu(0), mx.cpu(1)])
    sliced.init_params(arg_params=args)
    sliced.forward(parts, is_train=True)
    sliced.backward()
    np.testing.assert_allclose(sliced.get_outputs()[0].asnumpy(),
                               whole.get_outputs()[0].asnumpy(), rtol=1e-6)
    for g1, g2 in zip(whole._exec_group.grad_arrays, sliced._exec_group.grad_arrays):
        for a, b in zip(g1, g2):
            np.testing.assert_allclose(b.asnumpy(), a.asnumpy(), rtol=1e-6, atol=1e-8)
    acc = mx.metric.Accuracy()
    sliced.update_metric(acc, [b.label for b in parts], pre_sliced=True)
    want = mx.metric.Accuracy()
    whole.update_metric(want, [mx.nd.array(y[:8])])
    assert acc.get() == want.get()
    with pytest.raises(ValueError, match='same shape'):
        sliced.forward([parts[0], mx.io.DataBatch([mx.nd.ones((3, 5))], [])])
