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
    init('fc_weight', w)
    init('other_weight', other)
    assert w.asnumpy().sum() == 6 and other.asnumpy().sum() == 0
    with pytest.raises(mx.MXNetError, match='shape'):
        init('fc_weight', mx.nd.zeros((3, 3)))
    with pytest.raises(mx.MXNetError, match='default_init'):
        mx.init.Load({'a': mx.nd.ones(1)})('b', mx.nd.zeros(1))
