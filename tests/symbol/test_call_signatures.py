"""Positional arguments bind as in MXNet 1.9.1's ``mx.sym`` and ``mx.nd`` functions.

MXNet's generated operator functions take the inputs, then the parameters, then ``name``,
``attr``, ``out`` (``mx.sym``) or ``out``, ``name`` (``mx.nd``), all by position:
SimpleDet calls ``mx.sym.stop_gradient(data, "rpn_cls_label_blockgrad")``. Golden:
``tests/golden/data/call_signatures.json`` (``make_call_signatures.py``: MXNet's
``inspect.signature`` of every public function of ``mx.sym``/``mx.nd`` and their
``contrib``/``linalg``/``random``/``image`` namespaces).
"""
import inspect
import json
import os

import numpy as np
import pytest

import symgraph as mx
from symgraph import opdef
from symgraph.base import MXNetError
from symgraph.opdef import positional_params, split_positional

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'golden',
                    'data', 'call_signatures.json')
with open(DATA) as _f:
    FUNCTIONS = json.load(_f)['functions']
TRAILING = {'sym': ('name', 'attr', 'out'), 'nd': ('out', 'name')}


def _op(name):
    try:
        return opdef.get_op(name)
    except MXNetError:
        return None


#: generated functions of operators symgraph registers, with fixed arguments (no *data)
OP_FUNCTIONS = sorted(k for k, v in FUNCTIONS.items() if v['op'] and _op(v['op'])
                      and not any(kind == '*' for _, kind in v['params']))
#: functions written in Python (zeros, Group, random.normal...) symgraph also has
HAND_WRITTEN = sorted(k for k, v in FUNCTIONS.items() if not v['op'])
#: hand-written functions whose positional parameters differ from MXNet's, and why
KNOWN_DIFFERENT = {
    'nd.zeros': 'no stype (symgraph has dense arrays only)',
    'nd.from_numpy': 'no array_cls (no mx.np arrays)',
    'nd.power': 'lhs, rhs as the other arithmetic functions (MXNet: base, exp)',
    'sym.Group': 'no create_fn (one Symbol class)',
    'sym.random.multinomial': "shares mx.nd's signature (out before dtype)",
    'sym.contrib.uniform': 'mx.contrib namespaces: issue 29, first list',
    'nd.contrib.uniform': 'mx.contrib namespaces: issue 29, first list',
    'nd.contrib.adamw_update': 'mx.contrib namespaces: issue 29, first list',
    'nd.contrib.mp_adamw_update': 'mx.contrib namespaces: issue 29, first list',
    'nd.contrib.multi_adamw_update': 'mx.contrib namespaces: issue 29, first list',
    'nd.contrib.multi_mp_adamw_update': 'mx.contrib namespaces: issue 29, first list',
    'nd.contrib.multi_lamb_update': 'mx.contrib namespaces: issue 29, first list',
    'nd.contrib.multi_mp_lamb_update': 'mx.contrib namespaces: issue 29, first list',
}


def _positional(params):
    return [p for p, kind in params if kind == 'pos']


def test_the_table_is_whole():
    assert len(OP_FUNCTIONS) > 600 and 'sym.BlockGrad' in OP_FUNCTIONS
    assert FUNCTIONS['sym.BlockGrad']['params'][1:4] == [['name', 'pos'], ['attr', 'pos'],
                                                         ['out', 'pos']]


@pytest.mark.parametrize('key', OP_FUNCTIONS)
def test_operator_function_binds_like_mxnets(key):
    """After the inputs, MXNet's positional parameters are exactly ours, then the trailing
    name/attr/out; and the binding code puts each value there."""
    rec = FUNCTIONS[key]
    kind = key.split('.')[0]
    cls = _op(rec['op'])
    trailing = TRAILING[kind]
    names = _positional(rec['params'])
    first = next((i for i, p in enumerate(names) if p in cls._params or p in trailing),
                 len(names))
    theirs = names[first:]
    assert theirs == list(positional_params(cls)) + list(trailing)
    values = ['v%d' % i for i in range(len(theirs))]
    inputs, kwargs = split_positional(cls, ['in'] + values, lambda a: a == 'in', {},
                                          trailing=trailing)
    assert inputs == ['in'] and kwargs == dict(zip(theirs, values))
    with pytest.raises(MXNetError, match='positional parameters given but it takes %d'
                       % len(theirs)):
        split_positional(cls, ['in'] + values + ['x'], lambda a: a == 'in', {},
                             trailing=trailing)


@pytest.mark.parametrize('key', HAND_WRITTEN)
def test_hand_written_functions_take_mxnets_positional_parameters(key):
    kind, *path = key.split('.')
    obj = mx.sym if kind == 'sym' else mx.nd
    for p in path:
        obj = getattr(obj, p, None)
        if obj is None:
            pytest.skip('%s is not in symgraph (issue 29, first list)' % key)
    theirs = _positional(FUNCTIONS[key]['params'])
    ours = [p.name for p in inspect.signature(obj).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if key in KNOWN_DIFFERENT:
        assert ours[:len(theirs)] != theirs, '%s now matches: drop it from KNOWN_DIFFERENT' % key
        return
    assert ours[:len(theirs)] == theirs


def test_positional_name_attr_in_mx_sym():
    data = mx.sym.var('data')
    g = mx.sym.stop_gradient(data, 'rpn_cls_label_blockgrad')
    assert g.name == 'rpn_cls_label_blockgrad'
    assert mx.sym.BlockGrad(data, 'g').list_outputs() == ['g_output']
    c = mx.sym.clip(data, 0.0, 1.0, 'c', {'__mark__': 'yes'})
    assert c.name == 'c' and c.attr('__mark__') == 'yes'
    by_pos = mx.sym.Convolution(data, None, None, (3, 3), (1, 1), (1, 1), (1, 1), 4, 1, 1024,
                                False, 'off', True, 'NCHW', 'conv', {'__lr_mult__': '2'})
    by_kw = mx.sym.Convolution(data, kernel=(3, 3), stride=(1, 1), dilate=(1, 1),
                               pad=(1, 1), num_filter=4, num_group=1, workspace=1024,
                               no_bias=False, cudnn_tune='off', cudnn_off=True,
                               layout='NCHW', name='conv', attr={'__lr_mult__': '2'})
    assert by_pos.tojson() == by_kw.tojson()
    with pytest.raises(MXNetError, match="'name' given twice"):
        mx.sym.BlockGrad(data, 'g', name='h')


def test_positional_out_name_in_mx_nd():
    x = mx.nd.array([0.5, 2.0, 3.0])
    y = mx.nd.zeros((3,))
    r = mx.nd.clip(x, 1.0, 2.0, y)
    assert r is y
    np.testing.assert_array_equal(y.asnumpy(), [1.0, 2.0, 2.0])
    np.testing.assert_array_equal(mx.nd.BlockGrad(x, None, 'g').asnumpy(), x.asnumpy())


def test_an_array_after_the_inputs_is_an_input_not_out():
    """Inputs are told by type: mx.nd.BlockGrad(x, y) is two inputs here (an error naming
    them), where MXNet binds y to out."""
    x, y = mx.nd.ones((2,)), mx.nd.zeros((2,))
    with pytest.raises(MXNetError, match='2 inputs given but it takes 1'):
        mx.nd.BlockGrad(x, y)
