"""Checkpoints: save/load round trip, warnings for missing or unused parameters,
initializers' name dispatch."""
import warnings

import numpy as np
import pytest

import symgraph as mx


def _net():
    x = mx.sym.var('data')
    h = mx.sym.FullyConnected(x, num_hidden=3, name='fc')
    h = mx.sym.BatchNorm(h, name='bn')
    return mx.sym.SoftmaxOutput(h, name='sm')


def _params():
    args = {'fc_weight': mx.nd.ones((3, 4)), 'fc_bias': mx.nd.zeros((3,)),
            'bn_gamma': mx.nd.ones((3,)), 'bn_beta': mx.nd.zeros((3,))}
    aux = {'bn_moving_mean': mx.nd.zeros((3,)), 'bn_moving_var': mx.nd.ones((3,))}
    return args, aux


def test_round_trip_without_warnings(tmp_path):
    prefix = str(tmp_path / 'net')
    args, aux = _params()
    mx.model.save_checkpoint(prefix, 3, _net(), args, aux)
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        sym, a2, x2 = mx.model.load_checkpoint(prefix, 3)
    assert sym.tojson() == _net().tojson()
    assert sorted(a2) == sorted(args) and sorted(x2) == sorted(aux)
    np.testing.assert_array_equal(a2['fc_weight'].asnumpy(), np.ones((3, 4)))


def test_missing_parameter_and_unused_entry_warn_by_name(tmp_path):
    prefix = str(tmp_path / 'net')
    args, aux = _params()
    del args['fc_bias']
    del aux['bn_moving_var']
    args['old_layer_weight'] = mx.nd.ones((2,))
    mx.model.save_checkpoint(prefix, 0, _net(), args, aux)
    with pytest.warns(UserWarning) as rec:
        mx.model.load_checkpoint(prefix, 0)
    text = ' '.join(str(w.message) for w in rec)
    assert "fc_bias" in text and "bn_moving_var" in text and "old_layer_weight" in text
    assert 'data' not in text.split('lacks')[1].split('(')[0]   # inputs are not parameters


def test_params_file_that_is_a_list_is_rejected(tmp_path):
    prefix = str(tmp_path / 'net')
    _net().save(prefix + '-symbol.json')
    mx.nd.save(prefix + '-0000.params', [mx.nd.ones((1,))])
    with pytest.raises(mx.MXNetError, match='list'):
        mx.model.load_checkpoint(prefix, 0)


def test_initializer_dispatch_by_name():
    init = mx.init.Zero()
    gamma, w, mv = mx.nd.zeros((3,)), mx.nd.ones((2, 2)), mx.nd.zeros((3,))
    init(mx.init.InitDesc('bn_gamma'), gamma)
    init(mx.init.InitDesc('fc_weight'), w)
    init(mx.init.InitDesc('bn_moving_var'), mv)
    assert gamma.asnumpy().tolist() == [1, 1, 1]          # gamma stays 1 even with Zero()
    assert w.asnumpy().sum() == 0 and mv.asnumpy().tolist() == [1, 1, 1]
    x = mx.nd.zeros((4, 5))
    mx.init.Xavier()(mx.init.InitDesc('fc_weight'), x)
    assert np.abs(x.asnumpy()).max() <= np.sqrt(3.0 / 4.5) + 1e-6 and x.asnumpy().std() > 0
    desc = mx.init.InitDesc('w', attrs={'__init__': mx.init.Constant(0.5).dumps()})
    init(desc, x)
    assert np.all(x.asnumpy() == 0.5)
    assert mx.init.Xavier(magnitude=2.0).dumps() == \
        '["xavier", {"rnd_type": "uniform", "factor_type": "avg", "magnitude": 2.0}]'
    with pytest.raises(mx.MXNetError, match='Unknown initialization pattern'):
        init(mx.init.InitDesc('mystery'), x)
