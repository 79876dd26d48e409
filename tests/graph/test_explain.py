"""Symbol.explain_shape (symgraph/graph/explain.py): the chain of rules that gave a shape,
re-run with a recorder over the very sweep of symgraph/graph/infer.py, and the two sides
of a conflict."""
import re

import pytest

import symgraph as mx
from symgraph.base import UnknownNameError

from harness import resnet_block


def _mlp():
    data = mx.sym.var('data')
    fc1 = mx.sym.FullyConnected(data, num_hidden=128, name='fc1')
    act = mx.sym.Activation(fc1, act_type='relu', name='relu1')
    return mx.sym.FullyConnected(act, num_hidden=10, name='fc2')


def test_fc_weight_chain_names_the_rule_the_inputs_and_the_dimensions():
    why = _mlp().explain_shape('fc1_weight', data=(32, 784))
    assert why.shape == (128, 784) == _mlp().infer_shape(data=(32, 784))[0][1]
    assert [(r.node, r.kind) for r in why.chain] == [('data', 'given'), ('fc1', 'rule')]
    last = why.chain[-1]
    assert last.entry == 'fc1_weight' and last.op == 'FullyConnected'
    assert last.fixed == [0, 1] and last.old is None
    assert ('data', (32, 784)) in last.seen and ('weight', None) in last.seen
    # the rule's own file:line, and the user's line that made the node
    assert re.search(r'ops/nn\.py:\d+$', last.rule_location)
    assert 'test_explain.py:' in last.location
    text = str(why)
    assert text.splitlines()[0] == 'fc1_weight: (128, 784)'
    assert 'FullyConnected.infer_shape' in text and 'given by the caller' in text


def test_chain_follows_the_data_through_the_layers_in_order():
    why = _mlp().explain_shape('fc2_weight', data=(32, 784))
    assert why.shape == (10, 128)
    assert [r.entry for r in why.chain] == ['data', 'fc1_output', 'relu1_output',
                                            'fc2_weight']
    # each record depends only on what was known before it
    for i, r in enumerate(why.chain):
        assert all(d.index < r.index for d in why.chain[:i])


def test_conv_weight_and_output():
    data = mx.sym.var('data')
    conv = mx.sym.Convolution(data, kernel=(3, 5), num_filter=8, pad=(1, 0), name='conv1')
    why = conv.explain_shape('conv1_weight', data=(2, 3, 10, 12))
    assert why.shape == (8, 3, 3, 5)
    assert why.chain[-1].op == 'Convolution' and why.chain[-1].fixed == [0, 1, 2, 3]
    out = conv.explain_shape('conv1_output', data=(2, 3, 10, 12))
    assert out.shape == (2, 8, 10, 8) == conv.infer_shape(data=(2, 3, 10, 12))[1][0]
    assert re.search(r'ops/conv\.py:\d+', str(out))


def test_reshape_then_fc():
    data = mx.sym.var('data')
    flat = mx.sym.Reshape(data, shape=(0, -1), name='flat')
    fc = mx.sym.FullyConnected(flat, num_hidden=7, flatten=False, name='fc')
    why = fc.explain_shape('fc_weight', data=(2, 3, 4))
    assert why.shape == (7, 12)
    assert [(r.entry, r.op) for r in why.chain] == [
        ('data', 'Variable'), ('flat_output', 'Reshape'), ('fc_weight', 'FullyConnected')]
    assert why.chain[1].seen[0] == ('data', (2, 3, 4))


def test_broadcast_output_and_a_shape_learnt_backwards():
    a, b = mx.sym.var('a'), mx.sym.var('b')
    out = mx.sym.broadcast_add(a, b, name='badd')
    why = out.explain_shape('badd', a=(3, 1), b=(1, 4))
    assert why.shape == (3, 4)
    assert [r.entry for r in why.chain] == ['a', 'b', 'badd_output']
    # an elementwise operator tells an unknown input from the other one
    s = a + b
    why = s.explain_shape('a', b=(2, 3))
    assert why.shape == (2, 3)
    assert [r.entry for r in why.chain] == ['b', 'a']
    assert why.chain[-1].op == 'elemwise_add' and why.chain[-1].fixed == [0, 1]


def test_a_variable_shape_attribute_is_named_as_such():
    w = mx.sym.var('w', shape=(4, 6))
    fc = mx.sym.FullyConnected(mx.sym.var('data'), weight=w, num_hidden=4, no_bias=True,
                               name='fc')
    why = fc.explain_shape('data', data=(5, 0))
    assert why.shape == (5, 6)
    kinds = [(r.entry, r.kind) for r in why.chain]
    assert ('w', 'attribute') in kinds and ('data', 'given') in kinds
    # data learnt its second dimension from the weight: that record fixes dimension 1 only
    learnt = [r for r in why.chain if r.entry == 'data' and r.kind == 'rule']
    assert learnt and learnt[0].fixed == [1] and learnt[0].old == (5, 0)


def test_conflict_raised_by_a_rule_names_both_inputs():
    a, b = mx.sym.var('a'), mx.sym.var('b')
    out = mx.sym.broadcast_add(a, b, name='badd')
    why = out.explain_shape('badd', a=(3, 2), b=(3, 4))
    assert why.conflict is not None and why.shape is None
    c = why.conflict
    assert c['node'] == 'badd' and c['op'] == 'broadcast_add'
    assert [(r.entry, r.new) for r in c['earlier']] == [('a', (3, 2)), ('b', (3, 4))]
    text = str(why)
    assert 'could not be broadcast' in text and 'The rule that disagreed' in text


def test_conflict_between_two_rules_on_one_entry():
    @mx.operator.register('explain_wants3')
    class _Wants3(mx.operator.CustomOpProp):
        def __init__(self):
            super().__init__(need_top_grad=True)

        def list_arguments(self):
            return ['data']

        def infer_shape(self, in_shape):
            return [(3,)], [(3,)], []

    a = mx.sym.var('a')
    out = mx.sym.Custom(mx.sym.relu(a, name='r'), op_type='explain_wants3', name='c')
    why = out.explain_shape('a', a=(2,))
    c = why.conflict
    # the two rules: relu said (2,), the custom operator's rule says (3,)
    assert c['rule'].node == 'c' and c['rule'].new == (3,) and c['rule'].old == (2,)
    assert [(r.node, r.entry, r.new) for r in c['earlier']] == [('r', 'r_output', (2,))]
    assert [r.entry for r in c['chain']] == ['a', 'r_output']
    assert 'would be (3,) (it holds (2,))' in str(why)
    assert c['rule'].rule == "Custom(op_type='explain_wants3').infer_shape"


def test_unknown_name_and_unknown_shape():
    with pytest.raises(UnknownNameError, match='nope'):
        _mlp().explain_shape('nope', data=(2, 3))
    why = _mlp().explain_shape('fc1_weight')
    assert why.shape is None and why.chain == []
    assert 'nothing tells its shape' in str(why)


def test_explain_agrees_with_infer_shape_on_a_resnet_block():
    net = resnet_block()
    names = net.list_arguments()
    shapes = dict(zip(names, net.infer_shape(data=(2, 4, 8, 8))[0]))
    for name in names:
        assert net.explain_shape(name, data=(2, 4, 8, 8)).shape == shapes[name]
