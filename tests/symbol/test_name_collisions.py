"""Two different Variables with one name in a graph (issue 14): MXNet accepts them and binds
them ambiguously; symgraph refuses, naming the name and where both were created. Sharing one
Variable, compositions and JSON files written by MXNet keep working."""
import copy
import inspect
import json
import pickle
import re

import numpy as np
import pytest

import symgraph as mx
from symgraph.base import MXNetError, NameCollisionError

HERE = __file__.rsplit('/', 1)[-1]


def _lineno():
    """The caller's line: where the node on that line was created."""
    return inspect.currentframe().f_back.f_lineno


def _assert_names_both(err, name, line_a, line_b):
    msg = str(err)
    assert repr(name) in msg
    # both places (in graph order), as file:line of this test file
    places = re.findall(r'(\S+\.py):(\d+)', msg)
    assert sorted((p.rsplit('/', 1)[-1], int(n)) for p, n in places) == \
        sorted([(HERE, line_a), (HERE, line_b)]), msg


def test_two_layers_with_one_name_are_refused_naming_both_places():
    a, b = mx.sym.var('a'), mx.sym.var('b')
    fc_a = mx.sym.FullyConnected(a, num_hidden=4, name='fc1'); line_a = _lineno()  # noqa: E702
    fc_b = mx.sym.FullyConnected(b, num_hidden=4, name='fc1'); line_b = _lineno()  # noqa: E702
    net = fc_a + fc_b       # building is free: the check runs where the whole graph is used
    for use in (net.list_arguments, net.list_auxiliary_states, net.list_inputs,
                lambda: net.infer_shape(a=(2, 3), b=(2, 5)), lambda: net.infer_type(a='float32'),
                lambda: net.simple_bind(mx.cpu(), a=(2, 3), b=(2, 5)),
                lambda: copy.deepcopy(net), lambda: pickle.dumps(net)):
        with pytest.raises(NameCollisionError) as info:
            use()
        assert isinstance(info.value, ValueError) and isinstance(info.value, MXNetError)
        _assert_names_both(info.value, 'fc1_weight', line_a, line_b)
    with pytest.raises(ValueError, match="'fc1_weight'"):
        mx.sym.Group([fc_a, fc_b])


def test_two_variables_with_one_name_are_refused():
    x1 = mx.sym.var('x'); line_a = _lineno()  # noqa: E702
    x2 = mx.sym.var('x'); line_b = _lineno()  # noqa: E702
    with pytest.raises(NameCollisionError) as info:
        (x1 * x2).list_arguments()
    _assert_names_both(info.value, 'x', line_a, line_b)
    with pytest.raises(NameCollisionError) as info:
        mx.sym.Group([x1, x2])
    _assert_names_both(info.value, 'x', line_a, line_b)
    # an explicit Variable colliding with an automatic one
    w = mx.sym.var('fc_weight'); line_w = _lineno()  # noqa: E702
    d = mx.sym.var('d')
    fc = mx.sym.FullyConnected(d, num_hidden=2, name='fc'); line_fc = _lineno()  # noqa: E702
    with pytest.raises(NameCollisionError) as info:
        (fc + w).infer_shape(d=(1, 2))
    _assert_names_both(info.value, 'fc_weight', line_fc, line_w)


def test_composition_bringing_a_name_again_is_refused():
    x = mx.sym.var('x')
    net = mx.sym.FullyConnected(x, num_hidden=2, name='fc'); line_a = _lineno()  # noqa: E702
    other = mx.sym.var('fc_bias'); line_b = _lineno()  # noqa: E702
    with pytest.raises(NameCollisionError) as info:
        net(x=other * 2)
    _assert_names_both(info.value, 'fc_bias', line_a, line_b)


def test_the_same_variable_twice_and_explicit_weight_sharing_are_fine():
    x = mx.sym.var('x')
    assert (x * x + x).list_arguments() == ['x']
    w, bias = mx.sym.var('w'), mx.sym.var('bias')
    h1 = mx.sym.FullyConnected(mx.sym.var('a'), weight=w, bias=bias, num_hidden=3, name='l1')
    h2 = mx.sym.FullyConnected(mx.sym.var('b'), weight=w, bias=bias, num_hidden=3, name='l2')
    net = mx.sym.Group([h1, h2])
    assert net.list_arguments() == ['a', 'w', 'bias', 'b']
    wv = np.arange(6.0, dtype=np.float32).reshape(3, 2)
    outs = net.eval(a=mx.nd.ones((1, 2)), b=mx.nd.ones((1, 2)) * 2, w=mx.nd.array(wv),
                    bias=mx.nd.zeros(3))
    np.testing.assert_allclose(outs[1].asnumpy(), 2 * outs[0].asnumpy())


def test_operator_nodes_sharing_a_name_are_left_alone():
    # outputs named alike are confusing but bind nothing ambiguously (MXNet allows them)
    x, y = mx.sym.var('x'), mx.sym.var('y')
    g = mx.sym.Group([mx.sym.exp(x, name='f'), mx.sym.exp(y, name='f')])
    assert g.list_outputs() == ['f_output', 'f_output']
    assert g.list_arguments() == ['x', 'y']


def test_group_of_compositions_shares_the_copied_weights():
    # MXNet's compose copies the Variables it keeps: a group of two compositions lists the
    # weights twice; they are one parameter, bound by name (golden: graphs.names_compose)
    x, y, z = mx.sym.var('x'), mx.sym.var('y'), mx.sym.var('z')
    fc = mx.sym.FullyConnected(x, num_hidden=2, name='fc')
    g = mx.sym.Group([fc(x=y), fc(x=z)])
    assert g.list_arguments() == ['y', 'fc_weight', 'fc_bias', 'z', 'fc_weight', 'fc_bias']
    again = copy.deepcopy(g)        # no warning: same-named Variables of a copy are one
    assert again.list_arguments() == g.list_arguments()
    assert pickle.loads(pickle.dumps(g)).list_arguments() == g.list_arguments()


def _two_fc1_json():
    """The JSON MXNet 1.9.1 writes for ``FC(a, name='fc1') + FC(b, name='fc1')``."""
    nodes = [
        {'op': 'null', 'name': 'a', 'inputs': []},
        {'op': 'null', 'name': 'fc1_weight', 'inputs': []},
        {'op': 'null', 'name': 'fc1_bias', 'inputs': []},
        {'op': 'FullyConnected', 'name': 'fc1', 'attrs': {'num_hidden': '4'},
         'inputs': [[0, 0, 0], [1, 0, 0], [2, 0, 0]]},
        {'op': 'null', 'name': 'b', 'inputs': []},
        {'op': 'null', 'name': 'fc1_weight', 'inputs': []},
        {'op': 'null', 'name': 'fc1_bias', 'inputs': []},
        {'op': 'FullyConnected', 'name': 'fc1', 'attrs': {'num_hidden': '4'},
         'inputs': [[4, 0, 0], [5, 0, 0], [6, 0, 0]]},
        {'op': 'elemwise_add', 'name': '_plus0', 'inputs': [[3, 0, 0], [7, 0, 0]]},
    ]
    return json.dumps({'nodes': nodes, 'arg_nodes': [0, 1, 2, 4, 5, 6],
                       'node_row_ptr': list(range(10)), 'heads': [[8, 0, 0]],
                       'attrs': {'mxnet_version': ['int', 10901]}})


def test_json_with_same_named_variables_warns_and_loads(tmp_path):
    text = _two_fc1_json()
    with pytest.warns(UserWarning, match=r"'fc1_weight' at nodes 1, 5; 'fc1_bias' at nodes "
                                         r"2, 6"):
        sym = mx.sym.load_json(text)
    assert sym.list_arguments() == ['a', 'fc1_weight', 'fc1_bias', 'b', 'fc1_weight',
                                    'fc1_bias']
    path = tmp_path / 'm-symbol.json'
    path.write_text(text)
    with pytest.warns(UserWarning, match=re.escape(str(path))):
        sym = mx.sym.load(str(path))
    # usable as MXNet uses it: bound by name, the two get one array
    arg_shapes, out_shapes, _ = sym.infer_shape(a=(2, 3), b=(2, 3))
    assert out_shapes == [(2, 4)]
    out = sym.eval(a=mx.nd.ones((2, 3)), b=mx.nd.ones((2, 3)),
                   fc1_weight=mx.nd.ones((4, 3)), fc1_bias=mx.nd.zeros(4))[0]
    np.testing.assert_allclose(out.asnumpy(), np.full((2, 4), 6.0))
    assert sym.tojson() and copy.deepcopy(sym).list_arguments() == sym.list_arguments()


def test_the_engine_stays_usable_after_a_refusal():
    a, b = mx.sym.var('a'), mx.sym.var('b')
    bad = mx.sym.FullyConnected(a, num_hidden=4, name='fc1') + \
        mx.sym.FullyConnected(b, num_hidden=4, name='fc1')
    with pytest.raises(NameCollisionError):
        bad.list_arguments()
    good = mx.sym.FullyConnected(a, num_hidden=4, name='fc1') + \
        mx.sym.FullyConnected(b, num_hidden=4, name='fc2')
    assert good.list_arguments() == ['a', 'fc1_weight', 'fc1_bias', 'b', 'fc2_weight',
                                     'fc2_bias']
    exe = good.simple_bind(mx.cpu(), a=(2, 3), b=(2, 3))
    exe.forward()
    assert exe.outputs[0].shape == (2, 4)


def test_a_deep_graph_is_checked_in_linear_time():
    # 3000 layers: building is not quadratic (no check per operator call), one listing is
    x = mx.sym.var('data')
    for i in range(3000):
        x = mx.sym.FullyConnected(x, num_hidden=2, name='fc%d' % i)
    assert len(x.list_arguments()) == 1 + 2 * 3000
    y = mx.sym.FullyConnected(x, num_hidden=2, name='fc17')
    with pytest.raises(NameCollisionError, match="'fc17_weight'"):
        y.list_arguments()
