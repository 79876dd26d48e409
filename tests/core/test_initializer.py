"""mx.init additions: Bilinear, LSTMBias, Load (the name dispatch and the other
initializers are tested with checkpoints in test_model.py)."""
import numpy as np
import pytest

import symgraph as mx


def test_bilinear_and_lstm_bias_fill_as_mxnet():
    # values printed by MXNet 1.9.1 for the same calls
    a = mx.nd.zeros((2, 1, 4, 4))
    mx.init.Bilinear()(mx.init.InitDesc('up_weight'), a)
    row = [0.0625, 0.1875, 0.1875, 0.0625]
    np.testing.assert_allclose(a.asnumpy()[1, 0, 0], row)
    np.testing.assert_allclose(a.asnumpy()[0, 0, 1], [0.1875, 0.5625, 0.5625, 0.1875])
    # as a Variable's init (called directly, the name rule zeroes a *_bias, as in MXNet)
    b = mx.nd.zeros((8,))
    desc = mx.init.InitDesc('lstm_bias', {'__init__': mx.init.LSTMBias(2.0).dumps()})
    mx.init.Xavier()(desc, b)
    np.testing.assert_array_equal(b.asnumpy(), [0, 0, 2, 2, 0, 0, 0, 0])
    mx.init.LSTMBias(2.0)(mx.init.InitDesc('lstm_bias'), b)
    np.testing.assert_array_equal(b.asnumpy(), 0)


def test_an_upsampling_net_initialises_its_bilinear_weight():
    """UpSampling marks its weight ["bilinear", {}]: any global initializer uses it."""
    net = mx.sym.UpSampling(mx.sym.var('data'), scale=2, sample_type='bilinear',
                            num_filter=2, name='up')
    exe = net.simple_bind(mx.cpu(), data=(1, 2, 3, 3))
    attrs = net.attr_dict()
    init = mx.init.Xavier()
    init(mx.init.InitDesc('up_weight', attrs['up_weight']), exe.arg_dict['up_weight'])
    np.testing.assert_allclose(exe.arg_dict['up_weight'].asnumpy()[0, 0, 0],
                               [0.0625, 0.1875, 0.1875, 0.0625])


def test_load_initializer(tmp_path):
    path = str(tmp_path / 'p.params')
    mx.nd.save(path, {'arg:fc_weight': mx.nd.ones((2, 3)), 'aux:bn_moving_var': mx.nd.ones(2)})
    init = mx.init.Load(path, default_init=mx.init.Zero())
    w, other = mx.nd.zeros((2, 3)), mx.nd.ones((4,))
    init(mx.init.InitDesc('fc_weight'), w)
    init(mx.init.InitDesc('other_weight'), other)
    assert w.asnumpy().sum() == 6 and other.asnumpy().sum() == 0
    with pytest.raises(mx.MXNetError, match='shape'):
        init('fc_weight', mx.nd.zeros((3, 3)))
    with pytest.raises(mx.MXNetError, match='default_init'):
        mx.init.Load({'a': mx.nd.ones(1)})('b', mx.nd.zeros(1))


class _MyInit(mx.init.Initializer):
    def _init_weight(self, _, arr):
        arr[:] = 0.1

    def _init_bias(self, _, arr):
        arr[:] = 1

    def _init_gamma(self, _, arr):
        arr[:] = 5


def test_subclasses_fill_biases_gammas_and_betas_through_their_methods():
    """As MXNet: __call__ dispatches to _init_bias/_init_gamma/... (values from MXNet's
    register docstring pattern; symgraph wrote 0 and 1 directly, ignoring overrides)."""
    init = mx.init.register(mx.init.alias('myinit_test')(_MyInit))()
    arrays = {n: mx.nd.zeros((3,)) for n in ('fc_bias', 'bn_gamma', 'bn_beta', 'x_min')}
    arrays['fc_weight'] = mx.nd.zeros((2, 3))
    for n, a in arrays.items():
        init(mx.init.InitDesc(n), a)
    assert arrays['fc_bias'].asnumpy().tolist() == [1, 1, 1]
    assert arrays['bn_gamma'].asnumpy().tolist() == [5, 5, 5]
    assert arrays['bn_beta'].asnumpy().tolist() == [0, 0, 0]
    np.testing.assert_allclose(arrays['fc_weight'].asnumpy(), 0.1)
    assert isinstance(mx.init.create('myinit_test'), _MyInit)
    assert mx.init.Xavier() == mx.init.Xavier() and mx.init.Xavier() != mx.init.Uniform()


def test_legacy_string_names_follow_mxnet_rules_with_a_deprecation_warning():
    init = mx.init.Uniform()
    cases = {'upsampling0_weight': (1, 1, 4, 4), 'stn_loc_weight': (6, 3),
             'stn_loc_bias': (6,), 'bn_moving_inv_var': (2,), 'bn_moving_avg': (2,)}
    got = {}
    for name, shape in cases.items():
        a = mx.nd.ones(shape)
        with pytest.warns(DeprecationWarning, match='deprecated'):
            init(name, a)
        got[name] = a.asnumpy()
    a = mx.nd.zeros((1, 1, 4, 4))
    mx.init.Bilinear()(mx.init.InitDesc('up_weight'), a)
    np.testing.assert_array_equal(got['upsampling0_weight'], a.asnumpy())
    assert (got['stn_loc_weight'] == 0).all()
    assert got['stn_loc_bias'].tolist() == [1, 0, 0, 0, 1, 0]
    assert (got['bn_moving_inv_var'] == 0).all() and (got['bn_moving_avg'] == 0).all()
    with pytest.warns(DeprecationWarning), pytest.raises(TypeError, match='string'):
        init(5, mx.nd.ones(2))


def test_create_takes_mxnet_registry_forms():
    x = mx.init.create('xavier', magnitude=2)
    assert isinstance(x, mx.init.Xavier) and x.magnitude == 2
    n = mx.init.create({'initializer': 'normal', 'sigma': 0.3})
    assert isinstance(n, mx.init.Normal) and n.sigma == 0.3
    assert mx.init.create('{"initializer": "one"}') == mx.init.One()
    assert mx.init.create(initializer='zero') == mx.init.Zero()
    with pytest.raises(TypeError):
        mx.init.create(mx.init.One(), 3)


def test_constant_arrays_serialise_and_bad_settings_are_refused():
    w = mx.sym.var('w', init=mx.init.Constant(mx.nd.ones((2,))))
    assert w.attr('__init__') == '["constant", {"value": [1.0, 1.0]}]'
    a = mx.nd.zeros((2,))
    mx.init.Zero()(mx.init.InitDesc('w', w.list_attr()), a)
    assert a.asnumpy().tolist() == [1, 1]
    with pytest.raises(ValueError, match='2 patterns but 1 initializers'):
        mx.init.Mixed(['bias', '.*'], [mx.init.Zero()])
    with pytest.raises(ValueError, match="rand_type must be 'uniform' or 'normal'"):
        mx.init.Orthogonal(rand_type='x')
    with pytest.raises(ValueError, match='float16, float32 or float64'):
        mx.init.Uniform(5)(mx.init.InitDesc('fc_weight'), mx.nd.zeros((2, 2), dtype='int32'))
    with pytest.raises(ValueError, match='Unknown initialization pattern'):
        mx.init.Uniform()(mx.init.InitDesc('mystery'), a)
    with pytest.raises(TypeError, match='subclass'):
        mx.init.register(int)
