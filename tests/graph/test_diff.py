"""mx.viz.diff (symgraph/graph/diff.py matches, symgraph/viz/diff.py draws) and
``python -m symgraph diff``: the right nodes added, removed and changed when automatic
names shifted or a prefix changed, parameters paired through renamed weights."""
import os
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import symgraph as mx
from symgraph.__main__ import main

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')
sys.path.insert(0, os.path.join(ROOT, 'scripts'))
import make_diff_example  # noqa: E402

SVG = '{http://www.w3.org/2000/svg}'


def cnn(filters=16, batchnorm=False, shift=0, act='relu'):
    with mx.name.NameManager():
        for _ in range(shift):
            mx.sym.Convolution(mx.sym.var('x'), kernel=(1, 1), num_filter=1)
            mx.sym.Activation(mx.sym.var('x'), act_type='relu')
        x = mx.sym.Convolution(mx.sym.var('data'), kernel=(3, 3), num_filter=8)
        x = mx.sym.Activation(x, act_type='relu')
        if batchnorm:
            x = mx.sym.BatchNorm(x)
        x = mx.sym.Convolution(x, kernel=(3, 3), num_filter=filters)
        x = mx.sym.Activation(x, act_type=act)
        x = mx.sym.FullyConnected(x, num_hidden=10)
        return mx.sym.SoftmaxOutput(x, name='softmax')


def _names(nodes):
    return sorted(n.name for n in nodes)


def test_identical_graphs():
    d = mx.viz.diff(cnn(), cnn())
    assert d.same and not d.renamed and len(d.match) == len(d.order_a)
    assert 'No differences.' in d.text()


def test_shifted_auto_names_match_node_for_node():
    a, b = cnn(), cnn(shift=1)
    d = mx.viz.diff(a, b)
    assert d.same and not d.added and not d.removed and not d.changed
    pairs = {(c.name_a, c.name_b) for c in d.renamed}
    assert ('convolution0', 'convolution1') in pairs
    assert ('convolution1', 'convolution2') in pairs
    assert ('convolution1_weight', 'convolution2_weight') in pairs
    assert ('activation1', 'activation2') in pairs
    # every node of B is paired with the node of A at its place
    for b_node in d.order_b:
        a_node = d.match[id(b_node)]
        assert (a_node.op is None) == (b_node.op is None)
        assert a_node.op is None or a_node.op == b_node.op


def test_a_changed_attribute_under_shifted_names_is_one_change():
    d = mx.viz.diff(cnn(), cnn(filters=32, shift=1))
    assert not d.added and not d.removed
    assert [(c.name_a, c.name_b, c.attrs) for c in d.changed] == [
        ('convolution1', 'convolution2', {'num_filter': ('16', '32')})]
    assert '~ convolution2 (was convolution1): num_filter: 16 -> 32' in d.text()
    d = mx.viz.diff(cnn(), cnn(act='tanh', shift=1))
    assert [(c.name_b, c.attrs) for c in d.changed] == [
        ('activation2', {'act_type': ('relu', 'tanh')})]


def test_a_prefix_change_matches_by_structure():
    def net():
        x = mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=4, name='fc1')
        return mx.sym.FullyConnected(mx.sym.relu(x, name='act'), num_hidden=2, name='fc2')
    with mx.name.Prefix('v1_'):
        a = net()
    with mx.name.Prefix('v2_'):
        b = net()
    d = mx.viz.diff(a, b)
    assert d.same
    assert {(c.name_a, c.name_b) for c in d.renamed} >= {
        ('v1_fc1', 'v2_fc1'), ('v1_fc1_weight', 'v2_fc1_weight'), ('v1_act', 'v2_act')}


def test_an_inserted_node_is_added_and_its_reader_changed_and_back():
    d = mx.viz.diff(cnn(), cnn(batchnorm=True, shift=1))
    assert _names(d.added) == ['batchnorm0', 'batchnorm0_beta', 'batchnorm0_gamma',
                               'batchnorm0_moving_mean', 'batchnorm0_moving_var']
    assert not d.removed
    assert [(c.name_b, c.inputs) for c in d.changed] == [
        ('convolution2', [(0, 'activation0_output', 'batchnorm0_output')])]
    # the other way round: removed, and the reader's input changes back
    d = mx.viz.diff(cnn(batchnorm=True, shift=1), cnn())
    assert _names(d.removed) == ['batchnorm0', 'batchnorm0_beta', 'batchnorm0_gamma',
                                 'batchnorm0_moving_mean', 'batchnorm0_moving_var']
    assert not d.added and len(d.changed) == 1


def test_insert_and_attribute_change_at_once():
    d = mx.viz.diff(cnn(), cnn(filters=32, batchnorm=True, shift=1))
    assert not d.removed and len(d.added) == 5
    (c,) = d.changed
    assert c.name_a == 'convolution1' and c.name_b == 'convolution2'
    assert c.attrs == {'num_filter': ('16', '32')} and c.inputs[0][0] == 0


def test_a_replaced_operator_is_removed_and_added():
    x = mx.sym.var('data')
    a = mx.sym.FullyConnected(mx.sym.Activation(x, act_type='relu', name='act'),
                              num_hidden=3, name='fc')
    b = mx.sym.FullyConnected(mx.sym.LeakyReLU(x, slope=0.1, name='act'), num_hidden=3,
                              name='fc')
    d = mx.viz.diff(a, b)
    # same name, another operator: one node changed in its operator
    assert [(c.name_b, c.op) for c in d.changed] == [('act', ('Activation', 'LeakyReLU'))]
    assert not d.added and not d.removed


def test_parameters_paired_through_renamed_weights():
    a, b = cnn(), cnn(filters=32, shift=1)
    rng = np.random.RandomState(0)
    sa = dict(zip(a.list_arguments(), a.infer_shape(data=(1, 3, 10, 10))[0]))
    sb = dict(zip(b.list_arguments(), b.infer_shape(data=(1, 3, 10, 10))[0]))
    pa = {'arg:' + k: rng.rand(*s).astype(np.float32) for k, s in sa.items()
          if k not in ('data', 'softmax_label')}
    pb = {'arg:convolution1_weight': pa['arg:convolution0_weight'].copy(),
          'arg:convolution1_bias': pa['arg:convolution0_bias'] + np.float32(0.5),
          'arg:convolution2_weight': rng.rand(*sb['convolution2_weight']).astype(np.float32),
          'arg:fullyconnected0_weight': mx.nd.array(
              rng.rand(*sb['fullyconnected0_weight'])),
          'aux:extra': np.zeros(2, np.float32)}
    d = mx.viz.diff(a, b, pa, pb)
    got = {(p.name_a, p.name_b): p for p in d.params}
    bias = got[('convolution0_bias', 'convolution1_bias')]
    assert bias.max_abs_diff == pytest.approx(0.5, abs=1e-6)
    assert ('convolution0_weight', 'convolution1_weight') not in got     # equal values
    w = got[('convolution1_weight', 'convolution2_weight')]
    assert w.shape_a == (16, 8, 3, 3) and w.shape_b == (32, 8, 3, 3)
    assert got[(None, 'extra')].shape_b == (2,)
    assert got[('convolution1_bias', None)].shape_a == (16,)
    assert got[('fullyconnected0_bias', None)]
    text = d.text()
    assert 'convolution1_bias (was convolution0_bias): values differ, max abs diff 0.5' in text
    with pytest.raises(TypeError, match='must be an array'):
        mx.viz.diff(a, b, {'w': [1, 2]}, {})


def test_svg_colours_the_changes():
    d = mx.viz.diff(cnn(batchnorm=True), cnn(filters=32, shift=1))
    root = ET.fromstring(d.svg().split('\n', 1)[1])
    rects = {}
    for r in root.iter(SVG + 'rect'):
        tip = r.find(SVG + 'title')
        if tip is not None:
            rects[tip.text.split(':', 1)[0] + ':' + tip.text.split(':')[1].split()[0]] = r
    removed = [r for k, r in rects.items() if k.startswith('removed:')]
    # the BatchNorm (its four Variables go with it: not drawn)
    assert len(removed) == 1 and 'removed:batchnorm0' in rects
    assert all(r.get('stroke-dasharray') == '5,3' for r in removed)
    changed = [r for k, r in rects.items() if k.startswith('changed:')]
    assert len(changed) == 1 and changed[0].get('fill') == '#fde7c8'
    assert d._repr_svg_() == d.svg()


def test_bad_arguments():
    with pytest.raises(TypeError, match='sym_a must be a Symbol'):
        mx.viz.diff('a.json', cnn())


def test_cli_diff(tmp_path, capsys):
    fa, fb = str(tmp_path / 'a-symbol.json'), str(tmp_path / 'b-symbol.json')
    cnn().save(fa)
    cnn(shift=1).save(fb)
    assert main(['diff', fa, fb]) == 0              # names alone differ
    assert 'renamed only' in capsys.readouterr().out
    cnn(filters=32, shift=1).save(fb)
    pa, pb = str(tmp_path / 'a.params'), str(tmp_path / 'b.params')
    mx.nd.save(pa, {'arg:fullyconnected0_bias': mx.nd.zeros(10)})
    mx.nd.save(pb, {'arg:fullyconnected0_bias': mx.nd.ones(10)})
    out = str(tmp_path / 'd.svg')
    assert main(['diff', fa, fb, '--params', pa, pb, '-o', out, '--no-renames']) == 2
    text = capsys.readouterr().out
    assert 'num_filter: 16 -> 32' in text and 'max abs diff 1' in text
    assert 'Renamed only' not in text
    ET.parse(out)
    assert main(['diff', fa, fb, '--params', pa, str(tmp_path / 'nope.params')]) == 1
    assert 'nope.params' in capsys.readouterr().err
    assert main(['diff', fa, fb, '-o', str(tmp_path / 'd.png')]) == 1


def test_committed_example_is_what_the_script_makes(tmp_path):
    out = str(tmp_path / 'ex.svg')
    make_diff_example.main([out])
    with open(out) as f:
        made = f.read()
    with open(os.path.join(ROOT, 'docs', 'diff_example.svg')) as f:
        assert f.read() == made, 'run python scripts/make_diff_example.py'
    d = make_diff_example.example()
    assert len(d.added) == 5 and len(d.changed) == 1 and not d.removed


def _resnet(blocks, prefix):
    """A small residual network with ``blocks`` units per stage, names under ``prefix``."""
    with mx.name.Prefix(prefix):
        x = mx.sym.Convolution(mx.sym.var('data'), kernel=(3, 3), num_filter=8, name='stem')
        for s, n in enumerate(blocks):
            for u in range(n):
                stride = (2, 2) if s and not u else (1, 1)
                h = mx.sym.Convolution(x, kernel=(3, 3), pad=(1, 1), stride=stride,
                                       num_filter=8 << s)
                h = mx.sym.Activation(mx.sym.BatchNorm(h), act_type='relu')
                h = mx.sym.BatchNorm(mx.sym.Convolution(h, kernel=(3, 3), pad=(1, 1),
                                                        num_filter=8 << s))
                short = x if not (s and not u) else mx.sym.Convolution(
                    x, kernel=(1, 1), stride=stride, num_filter=8 << s)
                x = mx.sym.Activation(h + short, act_type='relu')
        return mx.sym.FullyConnected(mx.sym.flatten(x), num_hidden=10, name='fc')


def test_deeper_network_with_another_prefix_is_the_shallow_one_plus_units():
    # (ResNet-18 against ResNet-34 in small: one more unit in each stage, names shifted)
    a, b = _resnet((2, 2), 'v1_'), _resnet((3, 3), 'v2_')
    d = mx.viz.diff(a, b)
    assert not d.removed
    n_op = lambda s: sum(n.op is not None for n in s.graph().order)  # noqa: E731
    added_ops = [n for n in d.added if n.op is not None]
    assert len(added_ops) == n_op(b) - n_op(a) == 2 * 7
    # every operator of A is matched to one of B with the same operator and attributes
    attrs = {}
    for b_node in d.order_b:
        a_node = d.match.get(id(b_node))
        if a_node is not None and a_node.op is not None:
            assert a_node.op == b_node.op, (a_node, b_node)
            attrs[a_node.name] = b_node.name
    assert len(attrs) == n_op(a)
    # the only changes: where the new units were wired in
    assert all(c.inputs and not c.attrs and not c.op for c in d.changed)
    assert attrs['v1_fc'] == 'v2_fc'
