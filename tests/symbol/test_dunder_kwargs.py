"""Operator functions take ``__key__`` keyword arguments (and MXNet's plain attribute keys,
``lr_mult``...) as node attributes, as MXNet 1.9.1's generated functions do (checked there:
``mx.sym.FullyConnected(d, num_hidden=4, __layout__='NC')`` gives list_attr
``{'__layout__': 'NC', 'num_hidden': '4'}`` and JSON attrs of the same; ``lr_mult=2`` is
stored as ``__lr_mult__`` and listed both ways; attr= overrides the keyword; ``mx.nd``
functions accept and drop ``__key__`` arguments but refuse ``lr_mult``)."""
import json

import numpy as np
import pytest

import symgraph as mx
from symgraph.base import MXNetError


def _node_attrs(sym):
    return [n['attrs'] for n in json.loads(sym.tojson())['nodes'] if n['op'] != 'null']


def test_dunder_keyword_is_a_node_attribute():
    d = mx.sym.var('d')
    s = mx.sym.FullyConnected(d, num_hidden=4, name='fc', __layout__='NC')
    assert s.list_attr() == {'__layout__': 'NC', 'num_hidden': '4'}
    assert s.attr('__layout__') == 'NC'
    assert _node_attrs(s) == [{'__layout__': 'NC', 'num_hidden': '4'}]
    # the inputs MXNet creates inherit the node's attributes
    assert s.attr_dict()['fc_weight'] == {'__layout__': 'NC', 'num_hidden': '4'}
    z = mx.sym.zeros(shape=(0, 4), __layout__='NC')
    assert z.list_attr() == {'__layout__': 'NC', 'dtype': 'float32', 'shape': '(0, 4)'}
    a = mx.sym.Activation(d, act_type='relu', __layout__='NC', __x__=3)
    assert _node_attrs(a) == [{'__layout__': 'NC', '__x__': '3', 'act_type': 'relu'}]


@pytest.mark.parametrize('key', ['lr_mult', '__lr_mult__'])
def test_plain_attribute_keyword_is_stored_as_dunder(key):
    s = mx.sym.FullyConnected(mx.sym.var('d'), num_hidden=4, name='fc', **{key: 2})
    assert s.list_attr() == {'__lr_mult__': '2', 'lr_mult': '2', 'num_hidden': '4'}
    assert _node_attrs(s) == [{'__lr_mult__': '2', 'num_hidden': '4'}]


def test_attr_and_scope_override_the_keyword():
    d = mx.sym.var('d')
    s = mx.sym.FullyConnected(d, num_hidden=4, name='fc', __lr_mult__=2,
                              attr={'__lr_mult__': '3'})
    assert s.list_attr() == {'num_hidden': '4', '__lr_mult__': '3', 'lr_mult': '3'}
    with mx.AttrScope(__layout__='X'):
        s = mx.sym.FullyConnected(d, num_hidden=4, name='fc', __layout__='NC')
    assert s.list_attr() == {'num_hidden': '4', '__layout__': 'X'}


def test_other_plain_keywords_are_still_unknown_parameters():
    with pytest.raises(MXNetError, match="unknown parameter 'foo'"):
        mx.sym.Activation(mx.sym.var('d'), act_type='relu', foo=3)


def test_ndarray_functions_drop_dunder_keywords():
    x, w, b = mx.nd.ones((2, 3)), mx.nd.ones((4, 3)), mx.nd.ones((4,))
    r = mx.nd.FullyConnected(x, w, b, num_hidden=4, __layout__='NC', __foo__=2)
    np.testing.assert_array_equal(r.asnumpy(), np.full((2, 4), 4.0))
    assert mx.nd.relu(mx.nd.ones((2, 2)), __layout__='NC').shape == (2, 2)
    assert mx.nd._internal._zeros(shape=(2, 2), __layout__='NC').shape == (2, 2)
    with pytest.raises(MXNetError, match="unknown parameter 'lr_mult'"):
        mx.nd.FullyConnected(x, w, b, num_hidden=4, lr_mult=2)
