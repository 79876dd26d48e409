"""The Optimizer base, registry and Updater: MXNet's rules for learning rates, weight decay
and update counts, multi-precision states, and clear errors for bad input."""
import pickle

import numpy as np
import pytest

import symgraph as mx
from symgraph.optimizer import pickling

MXNET_OPTIMIZERS = ['adadelta', 'adagrad', 'adam', 'adamax', 'ccsgd', 'dcasgd', 'ftml', 'ftrl',
                    'groupadagrad', 'lamb', 'lars', 'lbsgd', 'nadam', 'nag', 'rmsprop', 'sgd',
                    'sgld', 'signum', 'test']


#: what importing mx.contrib.svrg_optimization adds to the registry, in MXNet as here
SVRG = {'_svrgoptimizer', '_assignmentoptimizer'}


def test_registry_has_mxnets_optimizers_and_adamw():
    assert sorted(set(mx.optimizer.Optimizer.opt_registry) - SVRG) == \
        sorted(MXNET_OPTIMIZERS + ['adamw'])
    assert mx.optimizer.create is mx.optimizer.Optimizer.create_optimizer
    assert type(mx.optimizer.create('SGD')) is mx.optimizer.SGD
    assert type(mx.optimizer.create('AdamW')) is mx.optimizer.contrib.AdamW


def test_unknown_name_is_a_value_error_listing_the_names():
    with pytest.raises(ValueError, match=r"Cannot find optimizer sgdd \(registered "
                                         r"optimizers: (_\w+, )*adadelta, .*sgd, sgld"):
        mx.optimizer.create('sgdd')
    with pytest.raises(TypeError, match='name must be a str'):
        mx.optimizer.create(None)


def test_unknown_parameter_is_a_type_error_naming_it():
    with pytest.raises(TypeError, match=r"optimizer SGD got unknown parameter\(s\) 'momentumm'"
                                        r"; it takes .*lazy_update, learning_rate, .*momentum"):
        mx.optimizer.create('sgd', momentumm=0.9)
    with pytest.raises(TypeError, match="Adam got unknown parameter.*'beta3'"):
        mx.optimizer.Adam(beta3=0.1)
    with pytest.raises(TypeError, match='param_idx2name should be a dict'):
        mx.optimizer.SGD(param_idx2name=['a'])


def test_register_and_override_warning():
    @mx.optimizer.register
    class Mine(mx.optimizer.Optimizer):
        pass
    try:
        assert type(mx.optimizer.create('MINE')) is Mine
        with pytest.warns(UserWarning, match='New optimizer .*Mine is overriding existing'):
            mx.optimizer.register(type('Mine', (mx.optimizer.Optimizer,), {}))
    finally:
        del mx.optimizer.Optimizer.opt_registry['mine']
    with pytest.raises(TypeError):
        mx.optimizer.register(42)


def test_default_learning_rate_and_scheduler_override(capsys):
    assert mx.optimizer.Optimizer().learning_rate == 0.01
    sched = mx.lr_scheduler.FactorScheduler(step=10, base_lr=0.5)
    opt = mx.optimizer.SGD(learning_rate=0.1, lr_scheduler=sched)
    # MXNet prints (not warns) this UserWarning
    assert 'has been overwritten by ``learning_rate``' in capsys.readouterr().out
    assert sched.base_lr == 0.1 and opt.learning_rate == 0.1
    with pytest.raises(UserWarning, match='LRScheduler of the optimizer has already'):
        opt.set_learning_rate(0.2)
    plain = mx.optimizer.SGD(learning_rate=0.1)
    plain.set_learning_rate(0.3)
    assert plain.learning_rate == 0.3
    with pytest.raises(DeprecationWarning):
        plain.set_lr_scale({})


def test_wd_only_on_weight_and_gamma_with_names():
    names = {0: 'fc_weight', 1: 'fc_bias', 2: 'bn_gamma', 3: 'bn_beta'}
    opt = mx.optimizer.SGD(wd=0.1, param_idx2name=names)
    assert opt._get_wds([0, 1, 2, 3]) == [0.1, 0.0, 0.1, 0.0]
    # without names (a directly made updater) every parameter decays
    assert mx.optimizer.SGD(wd=0.1)._get_wds([0, 1]) == [0.1, 0.1]
    # LARS decays only *_weight
    lars = mx.optimizer.LARS(wd=0.1, param_idx2name=names)
    assert lars._get_wds([0, 2]) == [0.1, 0.0]


def test_multipliers_from_symbol_attributes_and_by_name_or_index():
    data = mx.sym.var('data')
    w = mx.sym.var('fc_weight', lr_mult=2.0, wd_mult=0.5)
    net = mx.sym.FullyConnected(data, weight=w, num_hidden=3, name='fc')
    names = {0: 'fc_weight', 1: 'fc_bias'}
    opt = mx.optimizer.SGD(learning_rate=0.1, wd=0.01, sym=net, param_idx2name=names)
    assert opt._get_lrs([0, 1]) == [pytest.approx(0.2), 0.1]
    assert opt._get_wds([0, 1]) == [pytest.approx(0.005), 0.0]
    opt.set_lr_mult({'fc_bias': 3.0, 0: 10.0})
    assert opt._get_lrs([0, 1]) == [pytest.approx(1.0), pytest.approx(0.3)]
    opt.set_wd_mult({'fc_bias': 1.0})
    assert opt._get_wds([1]) == [0.01]


def test_update_counts_per_index_and_device():
    opt = mx.optimizer.SGD(begin_num_update=10)
    opt._update_count(0)
    opt._update_count([0, 1])
    assert opt._index_update_count == {0: 12, 1: 11} and opt.num_update == 12
    opt._set_current_context(1)
    opt._update_count(0)
    assert opt._all_index_update_counts[1] == {0: 11} and opt.num_update == 12


def test_updater_creates_states_once_and_converts_bytes_keys():
    opt = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9)
    upd = mx.optimizer.get_updater(opt)
    w = mx.nd.ones((2, 2))
    upd(b'w', mx.nd.ones((2, 2)), w)
    state = upd.states['w']
    upd('w', mx.nd.ones((2, 2)), w)
    assert upd.states['w'] is state
    np.testing.assert_allclose(w.asnumpy(), 1 - 0.1 - (0.9 * 0.1 + 0.1), rtol=1e-6)


def test_multi_precision_states_and_float16_warning():
    w16 = mx.nd.array([1.0, 2.0], dtype='float16')
    sgd = mx.optimizer.SGD(momentum=0.9, multi_precision=True)
    mom, w32 = sgd.create_state_multi_precision(0, w16)
    assert mom.dtype == np.float32 and w32.dtype == np.float32
    adam = mx.optimizer.Adam(multi_precision=True)
    w32, (mean, var) = adam.create_state_multi_precision(0, w16)
    assert w32.dtype == np.float32 and mean.dtype == np.float32
    with pytest.warns(UserWarning, match='Accumulating with float16'):
        mx.optimizer.SGD().create_state_multi_precision(0, w16)
    with pytest.warns(UserWarning, match='multi_precision=True option of the optimizer'):
        mx.optimizer.Adam().create_state_multi_precision(0, w16)


def test_multi_precision_update_keeps_the_master_copy():
    w16 = mx.nd.array([1.0, 2.0], dtype='float16')
    upd = mx.optimizer.get_updater(mx.optimizer.Adam(learning_rate=1e-4, multi_precision=True))
    for _ in range(3):
        upd(0, mx.nd.array([1.0, -1.0], dtype='float16'), w16)
    w32 = upd.states[0][0]
    assert w16.dtype == np.float16
    np.testing.assert_array_equal(w16.asnumpy(), w32.asnumpy().astype(np.float16))
    assert w32.asnumpy()[0] < 1.0 and w16.asnumpy()[0] < 1.0


def test_updater_rejects_bad_input():
    upd = mx.optimizer.get_updater(mx.optimizer.SGD())
    with pytest.raises(ValueError, match=r'weight \(2, 2\), grad \(3,\)'):
        upd(0, mx.nd.ones((3,)), mx.nd.ones((2, 2)))
    with pytest.raises(TypeError, match='gradient must be an NDArray, got ndarray'):
        upd(0, np.ones((2, 2)), mx.nd.ones((2, 2)))
    with pytest.raises(ValueError, match='2 indices, 1 gradients and 2 weights'):
        upd([0, 1], [mx.nd.ones(2)], [mx.nd.ones(2), mx.nd.ones(2)])
    with pytest.raises(TypeError, match='Updater needs an Optimizer'):
        mx.optimizer.Updater('sgd')
    # the updater is still usable
    w = mx.nd.ones((2,))
    upd(0, mx.nd.ones((2,)), w)
    np.testing.assert_allclose(w.asnumpy(), 0.99, rtol=1e-6)


def test_states_round_trip_with_and_without_optimizer():
    opt = mx.optimizer.Adam(learning_rate=0.1, wd=0.01,
                            lr_scheduler=mx.lr_scheduler.PolyScheduler(5, base_lr=0.1))
    upd = mx.optimizer.get_updater(opt)
    w = mx.nd.array([1.0, 2.0])
    upd(0, mx.nd.array([0.5, 0.5]), w)
    other = mx.optimizer.get_updater(mx.optimizer.Adam())
    other.set_states(upd.get_states())
    assert isinstance(other.optimizer, mx.optimizer.Adam) and other.optimizer.lr == 0.001
    np.testing.assert_array_equal(other.states[0][0].asnumpy(), upd.states[0][0].asnumpy())
    assert other.states_synced == {0: False}
    other.set_states(upd.get_states(dump_optimizer=True))
    assert other.optimizer.lr == 0.1 and other.optimizer.num_update == 1
    assert isinstance(other.optimizer.lr_scheduler, mx.lr_scheduler.PolyScheduler)
    w2 = w.copy()
    upd(0, mx.nd.array([0.5, 0.5]), w)
    other(0, mx.nd.array([0.5, 0.5]), w2)
    np.testing.assert_array_equal(w.asnumpy(), w2.asnumpy())


def test_states_move_to_the_weights_context():
    upd = mx.optimizer.get_updater(mx.optimizer.SGD(momentum=0.9))
    upd(0, mx.nd.ones((2,)), mx.nd.ones((2,)))
    other = mx.optimizer.get_updater(mx.optimizer.SGD(momentum=0.9))
    other.set_states(upd.get_states())
    w = mx.nd.ones((2,), ctx=mx.cpu(1))
    other(0, mx.nd.ones((2,), ctx=mx.cpu(1)), w)
    assert other.states[0].context == mx.cpu(1)


def test_pickles_use_mxnets_class_names():
    blob = pickling.dumps({0: mx.nd.array([1.0, 2.0]), 1: None,
                           2: (mx.nd.zeros((2,)), mx.optimizer.SGD())})
    assert b'mxnet.ndarray.ndarray' in blob and b'mxnet.optimizer.optimizer' in blob
    assert b'symgraph' not in blob
    back = pickling.loads(blob)
    assert type(back[0]) is mx.nd.NDArray and back[1] is None
    assert type(back[2][1]) is mx.optimizer.SGD


def test_raw_bytes_are_mxnets_single_array_format():
    a = mx.nd.array([[1.5, -2.0, 3.25]], dtype='float64')
    raw = pickling.ndarray_to_raw_bytes(a)
    # magic 0xF993FAC9, stype 0, ndim 2, dims 1 and 3, cpu(0), float64 (flag 1), data
    assert raw[:4] == bytes.fromhex('c9fa93f9') and len(raw) == 4 + 4 + 4 + 16 + 8 + 4 + 24
    back = pickling.ndarray_from_raw_bytes(raw)
    assert back.dtype == np.float64
    np.testing.assert_array_equal(back.asnumpy(), a.asnumpy())


def test_bad_pickles_are_reported():
    upd = mx.optimizer.get_updater(mx.optimizer.SGD())
    bad = pickle.dumps(0).replace(b'K\x00', b'')       # not a pickle any more
    with pytest.raises(Exception):
        upd.set_states(bad)
    unknown = b'cmxnet.gluon.foo\nBar\n.'       # GLOBAL mxnet.gluon.foo Bar; STOP
    with pytest.raises(pickle.UnpicklingError, match=r"MXNet's mxnet.gluon.foo.Bar"):
        upd.set_states(unknown)
    with pytest.raises(TypeError, match='must unpickle to a dict'):
        upd.set_states(pickling.dumps([1, 2]))
    with pytest.raises(TypeError, match='bytes'):
        upd.set_states('not bytes')


def test_sgld_adds_gaussian_noise_with_sqrt_lr_scale():
    opt = mx.optimizer.SGLD(learning_rate=0.04, wd=0.1, rescale_grad=0.5)
    w = mx.nd.array(np.linspace(-1, 1, 6))
    g = mx.nd.array(np.linspace(2, -2, 6))
    w0 = w.asnumpy()
    mx.random.seed(3)
    opt.update(0, w, g, None)
    mx.random.seed(3)
    noise = mx.nd.random.normal(0, 0.2, shape=(6,)).asnumpy()
    want = (w0 + np.float32(-0.02) * (g.asnumpy() * np.float32(0.5) + np.float32(0.1) * w0)) \
        + noise
    np.testing.assert_allclose(w.asnumpy(), want, rtol=1e-6, atol=1e-7)


def test_dcasgd_with_momentum_runs():
    # MXNet 1.9.1 fails here ("truth value of an NDArray ... ambiguous")
    opt = mx.optimizer.DCASGD(learning_rate=0.1, momentum=0.9, lamda=0.1)
    w, g = mx.nd.array([1.0, 2.0]), mx.nd.array([0.5, -0.5])
    state = opt.create_state(0, w)
    opt.update(0, w, g, state)
    np.testing.assert_allclose(state[0].asnumpy(), [-0.05, 0.05], rtol=1e-6)
    np.testing.assert_allclose(w.asnumpy(), [0.95, 2.05], rtol=1e-6)


def test_adadelta_scales_the_gradient_in_place_as_mxnet():
    opt = mx.optimizer.AdaDelta(rescale_grad=0.5)
    w, g = mx.nd.ones((2,)), mx.nd.array([2.0, 4.0])
    opt.update(0, w, g, opt.create_state(0, w))
    np.testing.assert_array_equal(g.asnumpy(), [1.0, 2.0])


def test_group_adagrad_refuses_weight_decay_and_other_ranks():
    opt = mx.optimizer.contrib.GroupAdaGrad(wd=0.1)
    w = mx.nd.ones((2, 2))
    with pytest.raises(ValueError, match='Weight decay is not supported'):
        opt.update(0, w, mx.nd.ones((2, 2)), opt.create_state(0, w))
    with pytest.raises(ValueError, match=r'2-D weights; index 0 has shape \(3,\)'):
        opt.create_state(0, mx.nd.ones((3,)))


def test_signum_without_momentum_is_signsgd():
    opt = mx.optimizer.Signum(learning_rate=0.1, momentum=0.0)
    w = mx.nd.array([1.0, 1.0, 1.0])
    assert opt.create_state(0, w) is None
    opt.update(0, w, mx.nd.array([3.0, -0.1, 0.0]), None)
    np.testing.assert_allclose(w.asnumpy(), [0.9, 1.1, 1.0], rtol=1e-6)


def test_lbsgd_logs_through_the_root_logger(caplog):
    with caplog.at_level('INFO'):
        mx.optimizer.LBSGD(batch_scale=2)
    assert caplog.records[0].getMessage() == 'Running Large-Batch SGD Algorithm'
    assert caplog.records[1].getMessage().startswith('(Batch_scale=2.000000, warmup_epochs=5')


def test_loading_a_pickled_optimizer_that_does_not_aggregate():
    # MXNet keeps aggregating with the loaded optimizer's aggregate_num 0 and never ends
    adam = mx.optimizer.get_updater(mx.optimizer.Adam())
    adam([0], [mx.nd.ones((2,))], [mx.nd.ones((2,))])
    upd = mx.optimizer.get_updater(mx.optimizer.SGD())
    assert upd.aggregate_updates
    upd.set_states(adam.get_states(dump_optimizer=True))
    assert not upd.aggregate_updates
    w = mx.nd.ones((2,))
    upd([0], [mx.nd.ones((2,))], [w])
    assert upd.optimizer.num_update == 2
