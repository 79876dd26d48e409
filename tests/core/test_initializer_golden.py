"""``mx.init`` against MXNet 1.9.1 on the same calls (tests/golden/init_probes.py, data
from tests/golden/make_init.py): deterministic initializers value for value, random ones by
distribution (MXNet draws from its own generator), ``dumps()`` text, error classes."""
import json
import math
import os

import numpy as np
import pytest

import symgraph as mx
import init_probes

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, '..', 'golden', 'data', 'init.json')) as _f:
    GOLDEN = json.load(_f)['probes']

#: where symgraph deliberately differs from MXNet 1.9.1: probe -> (MXNet's, symgraph's)
#: - MXNet checks with ``assert``; symgraph raises its typed errors (MXNetError and the
#:   fitting builtin, see symgraph/base.py)
#: - ``moving_mean``/``moving_var`` are filled by name (MXNet needs their ``__init__``
#:   attribute, which its BatchNorm sets; a bare InitDesc fails there)
#: - MXNet's FusedRNN looks a string ``init`` up in the wrong registry, so an
#:   ``mx.init.FusedRNN(init=...)`` cannot be recreated from its own ``dumps()`` (KeyError)
ERROR_DIFFERENCES = {
    'err:create_unknown': ('AssertionError', 'ValueError'),
    'err:load_missing': ('AssertionError', 'KeyError'),
    'err:load_shape': ('AssertionError', 'ValueError'),
    'err:moving_mean_by_name': ('ValueError', None),
    'err:fusedrnn_from_dumps': ('KeyError', None),
}


@pytest.fixture(scope='module')
def ours():
    # automatic names counted from 0 (leakyrelu0_gamma), whatever ran before in the process
    with mx.name.NameManager():
        return init_probes.run(mx)


def test_every_probe_is_compared(ours):
    assert sorted(ours) == sorted(GOLDEN)
    assert len([k for k in GOLDEN if k.startswith('val:')]) > 80


@pytest.mark.parametrize('key', sorted(k for k in GOLDEN if k.startswith(('val:', 'str:'))))
def test_deterministic_values_match_mxnet(ours, key):
    want, got = GOLDEN[key], ours[key]
    if isinstance(want, list) and key.startswith('val:'):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    else:
        assert got == want


@pytest.mark.parametrize('key', sorted(k for k in GOLDEN if k.startswith('err:')))
def test_errors_match_mxnet(ours, key):
    if key in ERROR_DIFFERENCES:
        mxnet_gives, we_give = ERROR_DIFFERENCES[key]
        assert GOLDEN[key] == mxnet_gives
        assert ours[key] == we_give
    else:
        assert ours[key] == GOLDEN[key]


def test_fusedrnn_recreated_from_its_dumps_fills_as_the_original():
    """MXNet 1.9.1 fails here (ERROR_DIFFERENCES); symgraph gives the original's values."""
    init = mx.init.FusedRNN(mx.init.Constant(0.5), 2, 1, 'lstm', forget_bias=3.0)
    again = mx.init.create(init.dumps())
    assert isinstance(again, mx.init.FusedRNN) and again.dumps() == init.dumps()
    a, b = mx.nd.zeros((48,)), mx.nd.zeros((48,))
    init._init_weight(mx.init.InitDesc('p', global_init=mx.init.Zero()), a)
    again._init_weight(mx.init.InitDesc('p', global_init=mx.init.Zero()), b)
    np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    assert sorted(set(a.asnumpy().tolist())) == [0.0, 0.5, 3.0]


def test_constant_dumps_leaves_json_in_kwargs():
    """MXNet's test_const_init_dumps: dumps() stores an array value as a list in _kwargs."""
    init = mx.init.Constant(mx.nd.ones((2, 1)))
    assert init.dumps() == json.dumps(['constant', init._kwargs])
    assert init._kwargs == {'value': [[1.0], [1.0]]}
    init = mx.init.Constant(np.float32(0.5))       # MXNet: not JSON serialisable
    assert init.dumps() == '["constant", {"value": 0.5}]'


def _uniform(key):
    return key.startswith(('stat:uniform', 'stat:xavier_default', 'stat:xavier_uniform',
                           'stat:xavier_3d'))


@pytest.mark.parametrize('key', sorted(k for k in GOLDEN if k.startswith('stat:')))
def test_random_initializers_draw_mxnet_distributions(ours, key):
    want, got = GOLDEN[key], ours[key]
    assert got['shape'] == want['shape'] and got['dtype'] == want['dtype']
    assert got['same_seed_same_values'] and want['same_seed_same_values']
    n, sd = want['size'], want['std']
    # two independent samples of n values: 6 standard errors of the difference
    assert abs(got['mean'] - want['mean']) <= 6 * sd * math.sqrt(2.0 / n), (got, want)
    assert abs(got['std'] / sd - 1) <= 6 * math.sqrt(1.0 / n), (got, want)
    if _uniform(key):
        # both fill [-scale, scale]: the extremes of n draws sit about 2 scale / n inside
        scale = max(-want['min'], want['max'])
        for v in (got['min'], got['max']):
            assert scale * (1 - 1e-3) <= abs(v) <= scale * (1 + 20.0 / n), (got, want)
    if 'gram_dev' in want:
        assert want['gram_dev'] < 1e-5 and got['gram_dev'] < 1e-5
