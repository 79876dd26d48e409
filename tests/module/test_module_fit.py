"""mx.mod.Module with an optimizer: init_optimizer (rescale_grad, weight decay only on
weights, kvstores), update on one and several devices, optimizer states in files, fit's
arguments and callbacks, and bad input (a clear error naming the thing, the module usable
afterwards).  The values against MXNet are in test_module_golden.py."""
import os

import numpy as np
import pytest

import symgraph as mx


def fit_ready(net, x, y, batch=4, context=None, **kwargs):
    it = mx.io.NDArrayIter(x, y, batch)
    mod = mx.mod.Module(net, context=context or mx.cpu())
    mod.bind(it.provide_data, it.provide_label)
    mod.init_params(mx.init.Xavier(), **kwargs)
    return mod, it


def params_np(mod):
    return {k: v.asnumpy() for k, v in mod.get_params()[0].items()}


def test_optimizer_by_name_gets_rescale_and_weight_decay_on_weights_only(net, data):
    mod, it = fit_ready(net, *data)
    mod.init_optimizer(optimizer='sgd', optimizer_params={'learning_rate': 0.1, 'wd': 0.5})
    opt = mod._optimizer
    assert opt.rescale_grad == pytest.approx(1.0 / 4)
    assert mod._kvstore is None and not mod._update_on_kvstore
    assert opt.idx2name == dict(enumerate(['fc1_weight', 'fc1_bias', 'fc2_weight',
                                           'fc2_bias']))
    # one step with zero gradients: only weight decay moves the parameters
    before = params_np(mod)
    for g in mod._exec_group.grad_arrays:
        g[0][:] = 0
    mod.update()
    after = params_np(mod)
    np.testing.assert_allclose(after['fc1_weight'], before['fc1_weight'] * (1 - 0.1 * 0.5),
                               rtol=1e-6)
    np.testing.assert_array_equal(after['fc1_bias'], before['fc1_bias'])


def test_init_optimizer_twice_logs_mxnets_warning(net, data, root_log):
    mod, _ = fit_ready(net, *data)
    mod.init_optimizer()
    first = mod._optimizer
    mod.init_optimizer(optimizer='adam')
    assert 'optimizer already initialized, ignoring...' in root_log.messages('WARNING')
    assert mod._optimizer is first
    mod.init_optimizer(optimizer='adam', force_init=True)
    assert isinstance(mod._optimizer, mx.optimizer.Adam)


def test_optimizer_object_with_other_rescale_is_warned(net, data):
    mod, _ = fit_ready(net, *data)
    sgd = mx.optimizer.SGD(learning_rate=0.1)
    with pytest.warns(UserWarning, match=r'rescale_grad is not normalized to '
                                         r'1.0/batch_size/num_workers \(1.0 vs. 0.25\)'):
        mod.init_optimizer(optimizer=sgd)
    assert mod._optimizer is sgd and sgd.idx2name      # idx2name filled in, as MXNet


def test_unknown_optimizer_is_named_and_the_module_stays_usable(net, data):
    it = mx.io.NDArrayIter(*data, batch_size=4)
    mod = mx.mod.Module(net)
    with pytest.raises(ValueError, match='sgdd'):
        mod.fit(it, optimizer='sgdd', num_epoch=1)
    assert not mod.optimizer_initialized
    with pytest.raises(TypeError, match='Optimizer'):
        mod.init_optimizer(optimizer=42)
    with pytest.warns(UserWarning, match='Parameters already initialized'):   # as MXNet
        mod.fit(it, optimizer='sgd', num_epoch=1)
    assert mod.optimizer_initialized


def test_unknown_optimizer_parameter_is_named(net, data):
    it = mx.io.NDArrayIter(*data, batch_size=4)
    mod = mx.mod.Module(net)
    with pytest.raises(TypeError, match="unknown parameter.*'learnig_rate'"):
        mod.fit(it, optimizer_params={'learnig_rate': 0.1}, num_epoch=1)
    assert not mod.optimizer_initialized
    mod.init_optimizer(optimizer_params={'learning_rate': 0.1})


@pytest.mark.parametrize('kvstore', ['nonexist', 'locl'])
@pytest.mark.parametrize('ndev', [1, 2])
def test_unknown_kvstore_is_named_and_the_module_stays_usable(net, data, kvstore, ndev):
    x, y = data
    it = mx.io.NDArrayIter(x, y, 4)
    mod = mx.mod.Module(net, context=[mx.cpu(i) for i in range(ndev)])
    # MXNet ignores an unknown type on one device and makes a 'local' store of it on
    # several, silently
    with pytest.raises(ValueError, match="kvstore %r is not a kvstore type" % kvstore):
        mod.fit(it, kvstore=kvstore, num_epoch=1)
    assert not mod.optimizer_initialized
    with pytest.warns(UserWarning, match='Parameters already initialized'):   # as MXNet
        mod.fit(it, kvstore='local', num_epoch=1)


def test_dist_async_kvstore_is_refused(net, data):
    # dist_sync over MPI processes: tests/dist/test_kvstore_dist.py
    mod, it = fit_ready(net, *data)
    with pytest.raises(ValueError, match="'dist_async' is not supported"):
        mod.init_optimizer(kvstore='dist_async')
    mod.init_optimizer(kvstore='local')


def test_update_before_init_optimizer(net, data):
    mod, it = fit_ready(net, *data)
    mod.forward_backward(next(iter(it)))
    with pytest.raises(mx.mod.ModuleStateError, match='call init_optimizer first'):
        mod.update()
    mod.init_optimizer()
    mod.update()


def test_module_reshape_keeps_the_optimizer():
    # MXNet's test_module_reshape, on two devices
    data = mx.sym.Variable('data')
    sym = mx.sym.FullyConnected(data, num_hidden=20, name='fc')
    dshape = (7, 20)
    mod = mx.mod.Module(sym, ('data',), None, context=[mx.cpu(0), mx.cpu(1)])
    mod.bind(data_shapes=[('data', dshape)])
    mod.init_params()
    mod.init_optimizer(optimizer_params={'learning_rate': 1})
    mod.forward(mx.io.DataBatch(data=[mx.nd.ones(dshape)], label=None))
    mod.backward([mx.nd.ones(dshape)])
    mod.update()
    assert mod.get_outputs()[0].shape == dshape
    assert (mod.get_params()[0]['fc_bias'].asnumpy() == -1).all()
    dshape = (14, 20)
    mod.reshape(data_shapes=[('data', dshape)])
    mod.forward(mx.io.DataBatch(data=[mx.nd.ones(dshape)], label=None))
    mod.backward([mx.nd.ones(dshape)])
    mod.update()
    assert mod.get_outputs()[0].shape == dshape
    assert (mod.get_params()[0]['fc_bias'].asnumpy() == -3).all()


@pytest.mark.parametrize('ndev', [1, 2])
def test_save_load_with_optimizer_states(ndev, tmp_path):
    # MXNet's test_save_load
    sym = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=100)
    with pytest.warns(UserWarning, match="'softmax_label' is not found"):
        mod = mx.mod.Module(sym, ('data',), context=[mx.cpu(i) for i in range(ndev)])
    with pytest.warns(UserWarning, match="label_shapes don't match"):
        mod.bind(data_shapes=[('data', (10, 10))])
    mod.init_params()
    mod.init_optimizer(optimizer_params={'learning_rate': 0.1, 'momentum': 0.9})
    mod.update()
    prefix = str(tmp_path / 'test')
    mod.save_checkpoint(prefix, 0, save_optimizer_states=True)
    assert os.path.exists(prefix + '-0000.states')
    with pytest.warns(UserWarning, match="'softmax_label' is not found"):
        mod2 = mx.mod.Module.load(prefix, 0, load_optimizer_states=True,
                                  data_names=('data',))
    with pytest.warns(UserWarning, match="label_shapes don't match"):
        mod2.bind(data_shapes=[('data', (10, 10))])
    mod2.init_optimizer(optimizer_params={'learning_rate': 0.1, 'momentum': 0.9})
    assert mod._symbol.tojson() == mod2._symbol.tojson()
    for k, v in mod.get_params()[0].items():
        np.testing.assert_array_equal(v.asnumpy(), mod2.get_params()[0][k].asnumpy())
    # (mod2 is on one device: the store's states load into a device updater)
    states1 = (mod._kvstore._updater if ndev > 1 else mod._updater).states
    states2 = mod2._updater.states
    assert set(states1) == set(states2) and states1
    for k in states1:
        np.testing.assert_array_equal(states1[k].asnumpy(), states2[k].asnumpy())


def test_several_devices_through_each_kvstore_path(net, data, monkeypatch):
    """kvstore 'local' and 'device' (updates in the store) and MXNET_UPDATE_ON_KVSTORE=0
    (gradients summed by the store, updates on each device) all equal one device."""
    x, y = data

    def train(ndev, kvstore='local'):
        it = mx.io.NDArrayIter(x, y, 8)
        mod = mx.mod.Module(net, context=[mx.cpu(i) for i in range(ndev)])
        mod.fit(it, optimizer='sgd', kvstore=kvstore, num_epoch=3, arg_params=start,
                optimizer_params={'learning_rate': 0.2, 'momentum': 0.9, 'wd': 0.01})
        return mod
    mx.random.seed(0)
    single = mx.mod.Module(net)
    single.bind([('data', (8, 5))], [('softmax_label', (8,))])
    single.init_params(mx.init.Xavier())
    start = {k: v.copy() for k, v in single.get_params()[0].items()}
    want = params_np(train(1))
    for kv in ('local', 'device'):
        mod = train(2, kv)
        assert mod._update_on_kvstore and mod._kvstore.type == kv
        for k, v in params_np(mod).items():
            np.testing.assert_allclose(v, want[k], rtol=1e-5, atol=1e-7, err_msg=kv + k)
    monkeypatch.setenv('MXNET_UPDATE_ON_KVSTORE', '0')
    mod = train(2)
    assert mod._kvstore is not None and not mod._update_on_kvstore
    # each device updates its own copy, with the summed gradient: the copies agree
    copies = mod._exec_group.param_arrays[0]
    np.testing.assert_array_equal(copies[0].asnumpy(), copies[1].asnumpy())
    for k, v in params_np(mod).items():
        np.testing.assert_allclose(v, want[k], rtol=1e-5, atol=1e-7, err_msg=k)


def test_fit_callbacks_and_validation_metric(net, data, root_log):
    x, y = data
    train_it = mx.io.NDArrayIter(x, y, 4)
    val_it = mx.io.NDArrayIter(x[:10], y[:10], 4)
    mod = mx.mod.Module(net)
    seen = {'batch': [], 'epoch': [], 'eval_end': [], 'eval_batch': []}
    mod.fit(train_it, eval_data=val_it, eval_metric='acc', validation_metric='ce',
            num_epoch=2, optimizer_params={'learning_rate': 0.1},
            batch_end_callback=[lambda p: seen['batch'].append((p.epoch, p.nbatch)),
                                mx.callback.Speedometer(4, frequent=2)],
            epoch_end_callback=lambda e, s, a, x_: seen['epoch'].append((e, sorted(a))),
            eval_end_callback=lambda p: seen['eval_end'].append((p.epoch, p.nbatch)),
            eval_batch_end_callback=lambda p: seen['eval_batch'].append(p.nbatch))
    assert seen['batch'] == [(e, b) for e in range(2) for b in range(5)]
    assert seen['epoch'] == [(e, ['fc1_bias', 'fc1_weight', 'fc2_bias', 'fc2_weight'])
                             for e in range(2)]
    assert seen['eval_end'] == [(0, 3), (1, 3)]
    assert seen['eval_batch'] == [0, 1, 2] * 2
    info = root_log.messages('INFO')
    for e in range(2):
        assert any(m.startswith('Epoch[%d] Train-accuracy=' % e) for m in info)
        assert any(m.startswith('Epoch[%d] Time cost=' % e) for m in info)
        assert any(m.startswith('Epoch[%d] Validation-cross-entropy=' % e) for m in info)
    speed = [m for m in info if 'Speed:' in m]
    assert speed and speed[0].startswith('Epoch[0] Batch [0-2]\tSpeed: ')
    assert speed[0].split('\t')[-1].startswith('accuracy=')


def test_fit_needs_num_epoch(net, data):
    mod = mx.mod.Module(net)
    with pytest.raises(ValueError, match='num_epoch'):
        mod.fit(mx.io.NDArrayIter(*data, batch_size=4))


def test_fit_with_monitor(net, data, root_log):
    x, y = data
    mon = mx.mon.Monitor(2, pattern='fc2.*')
    mod = mx.mod.Module(net)
    mod.fit(mx.io.NDArrayIter(x, y, 4), num_epoch=1, monitor=mon)
    lines = [m for m in root_log.messages('INFO') if m.startswith('Batch:')]
    # every second batch of 5 (MXNet's Monitor numbers them 1, 3, 5)
    assert {int(m.split()[1]) for m in lines} == {1, 3, 5}
    assert any('fc2_output' in m for m in lines) and \
        not any('fc1' in m for m in lines)


def test_checkpoint_callback_with_optimizer_states(net, data, tmp_path):
    x, y = data
    it = mx.io.NDArrayIter(x, y, 4)
    mod = mx.mod.Module(net)
    prefix = str(tmp_path / 'ck')
    mod.fit(it, num_epoch=2, optimizer_params={'learning_rate': 0.1, 'momentum': 0.9},
            epoch_end_callback=mx.callback.module_checkpoint(mod, prefix,
                                                             save_optimizer_states=True))
    assert sorted(os.listdir(str(tmp_path))) == ['ck-0001.params', 'ck-0001.states',
                                                 'ck-0002.params', 'ck-0002.states',
                                                 'ck-symbol.json']
    # resuming from epoch 2's files continues the same run as one more epoch would
    resumed = mx.mod.Module.load(prefix, 2, load_optimizer_states=True)
    with pytest.warns(UserWarning, match='Parameters already initialized'):
        resumed.fit(it, num_epoch=3, begin_epoch=2,
                    optimizer_params={'learning_rate': 0.1, 'momentum': 0.9})
    with pytest.warns(UserWarning, match='Parameters already initialized'):
        mod.fit(it, num_epoch=3, begin_epoch=2,
                optimizer_params={'learning_rate': 0.1, 'momentum': 0.9})
    for k, v in params_np(mod).items():
        np.testing.assert_allclose(params_np(resumed)[k], v, rtol=1e-6, atol=1e-8)


def test_fit_force_init_and_force_rebind(net, data):
    x, y = data
    it = mx.io.NDArrayIter(x, y, 4)
    mod = mx.mod.Module(net)
    mod.fit(it, num_epoch=1, initializer=mx.init.Zero())
    trained = params_np(mod)
    assert trained['fc2_bias'].any()
    mod.fit(mx.io.NDArrayIter(x, y, 5), num_epoch=1, initializer=mx.init.Zero(),
            force_rebind=True, force_init=True)
    assert [d.shape for d in mod.data_shapes] == [(5, 5)]
    assert not np.allclose(params_np(mod)['fc2_bias'], trained['fc2_bias'])


def test_compression_params_reach_the_kvstore(net, data):
    x, y = data
    mod = mx.mod.Module(net, context=[mx.cpu(0), mx.cpu(1)],
                        compression_params={'type': '2bit', 'threshold': 0.5})
    mod.fit(mx.io.NDArrayIter(x, y, 4), num_epoch=1, kvstore='device')
    assert mod._kvstore._compression is not None
    # MXNet's local store refuses compression too
    mod = mx.mod.Module(net, context=[mx.cpu(0), mx.cpu(1)],
                        compression_params={'type': '2bit', 'threshold': 0.5})
    with pytest.raises(ValueError, match='Gradient compression is not supported'):
        mod.fit(mx.io.NDArrayIter(x, y, 4), num_epoch=1, kvstore='local')


def test_rebinding_keeps_the_trained_parameters(net, data):
    x, y = data
    mod, it = fit_ready(net, x, y)
    mod.init_optimizer(optimizer_params={'learning_rate': 0.5})
    for batch in it:
        mod.forward_backward(batch)
        mod.update()
    trained = {k: v.asnumpy() for k, v in mod._exec_group.execs[0].arg_dict.items()
               if k.startswith('fc')}
    # (MXNet copies the parameters of its last sync, from before these updates)
    mod.bind([('data', (2, 5))], [('softmax_label', (2,))], force_rebind=True)
    for k, v in trained.items():
        np.testing.assert_array_equal(mod._exec_group.execs[0].arg_dict[k].asnumpy(), v)
    # a rebinding that fails leaves the module bound as it was
    with pytest.raises(ValueError, match='Too many slices|batch size'):
        mod.bind([('data', (2, 5))], [('softmax_label', (3,))], force_rebind=True)
    assert mod.binded and [d.shape for d in mod.data_shapes] == [(2, 5)]
    mod.forward(mx.io.DataBatch([mx.nd.array(x[:2])], [mx.nd.array(y[:2])]))
