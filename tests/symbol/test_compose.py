"""Symbol composition, ``net(data=other)`` (names and JSON against MXNet are in
tests/golden: graphs.names_compose)."""
import numpy as np
import pytest

import symgraph as mx
from symgraph.base import MXNetError


def test_composed_graph_computes_with_the_replacement():
    x, y = mx.sym.var('x'), mx.sym.var('y')
    net = mx.sym.FullyConnected(x, num_hidden=2, name='fc')
    composed = net(x=y * 2)
    assert composed.list_arguments() == ['y', 'fc_weight', 'fc_bias']
    assert net.list_arguments() == ['x', 'fc_weight', 'fc_bias']     # the original stays
    w = np.arange(6.0).reshape(2, 3)
    out = composed.eval(y=mx.nd.ones((1, 3)), fc_weight=mx.nd.array(w),
                        fc_bias=mx.nd.zeros(2))[0]
    np.testing.assert_allclose(out.asnumpy(), 2 * w.sum(1)[None])


def test_compose_renames_the_head():
    x, y = mx.sym.var('x'), mx.sym.var('y')
    net = mx.sym.Activation(x, act_type='relu', name='act')
    assert net(x=y, name='act2').list_outputs() == ['act2_output']


def test_compose_errors_name_the_problem():
    x, y = mx.sym.var('x'), mx.sym.var('y')
    net = mx.sym.exp(x)
    with pytest.raises(MXNetError, match="'q' is not an input.*\\['x'\\]"):
        net(q=y)
    with pytest.raises(MXNetError, match='group of 2 outputs'):
        net(x=mx.sym.Group([x, y]))
    with pytest.raises(TypeError, match='must be a Symbol'):
        net(x=3)
    with pytest.raises(MXNetError, match='by keyword'):
        net(y)
