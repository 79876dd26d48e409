"""mx.viz: print_summary against MXNet 1.9.1, plot_network rendered with dot, networkx.

Golden data: ``tests/golden/viz/`` made by ``tests/golden/make_viz_golden.py`` with the
real MXNet from the builders of ``tests/golden/viz_graphs.py``.
"""
import contextlib
import io
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import symgraph as mx

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, '..', 'golden')
sys.path.insert(0, GOLDEN)
import viz_graphs  # noqa: E402

with open(os.path.join(GOLDEN, 'viz', 'summary.json')) as _f:
    SUMMARY = json.load(_f)
with open(os.path.join(GOLDEN, 'viz', 'plot.json')) as _f:
    PLOT = json.load(_f)

needs_dot = pytest.mark.skipif(shutil.which('dot') is None,
                               reason='the Graphviz dot program is not installed')
SVG_NS = '{http://www.w3.org/2000/svg}'


def build(name):
    return getattr(viz_graphs, name)(mx)


def summary_text(sym, shape, **kwargs):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert mx.viz.print_summary(sym, shape=shape, **kwargs) is None
    return buf.getvalue()


def total_of(text):
    return int(re.search(r'^Total params: (\d+)$', text, re.M).group(1))


# ---------------------------------------------------------------------- print_summary
TEXT_CASES = sorted(k for k, v in SUMMARY.items() if 'text' in v and 'builder' in v)


@pytest.mark.parametrize('case', TEXT_CASES)
def test_print_summary_text_matches_mxnet(case):
    g = SUMMARY[case]
    text = summary_text(build(g['builder']), g['shape'], **g['kwargs'])
    assert text == g['text']
    assert total_of(text) == g['total_params']


@pytest.mark.parametrize('case', ['resnet18', 'resnet50'])
def test_print_summary_totals_match_mxnet(case):
    g = SUMMARY[case]
    rows, total = mx.viz.summary(build(g['builder']), g['shape'])
    assert total == g['total_params']
    assert total == sum(r['params'] for r in rows)


def test_lenet_counts_by_hand():
    rows, total = mx.viz.summary(build('lenet'), {'data': (1, 1, 28, 28)})
    counts = {r['name']: r['params'] for r in rows if r['params']}
    assert counts == {'conv1': 20 * 1 * 5 * 5 + 20, 'conv2': 50 * 20 * 5 * 5 + 50,
                      'fc1': 500 * 800 + 500, 'fc2': 10 * 500 + 10}
    assert total == sum(counts.values()) == SUMMARY['lenet']['total_params']


def test_count_all_counts_every_parameter_once():
    # MXNet counts FullyConnected on a 4-D input as (channels + 1) x num_hidden
    g = SUMMARY['conv_fc']
    sym = build('conv_fc')
    _, mxnet_total = mx.viz.summary(sym, g['shape'])
    rows, total = mx.viz.summary(sym, g['shape'], count='all')
    assert mxnet_total == g['total_params'] == 137
    assert total == (4 * 3 * 3 * 3 + 4) + (5 * 4 * 6 * 6 + 5)
    arg_shapes, _, _ = sym.infer_shape(**g['shape'])
    learnable = sum(int(np.prod(s)) for n, s in zip(sym.list_arguments(), arg_shapes)
                    if n.endswith(('_weight', '_bias')))
    assert total == learnable
    assert [r['params'] for r in rows] == [0, 112, 0, 725, 0]
    # and agrees with MXNet where MXNet counts right
    for case in ('mlp', 'lenet', 'resnet20'):
        g = SUMMARY[case]
        assert mx.viz.summary(build(g['builder']), g['shape'], count='all')[1] == \
            g['total_params']


def test_count_modes_on_shared_weights_and_other_layers():
    data = mx.sym.var('data')
    w = mx.sym.var('shared_weight')
    a = mx.sym.FullyConnected(data, weight=w, num_hidden=4, no_bias=True, name='a')
    b = mx.sym.FullyConnected(a, weight=mx.sym.var('w2'), num_hidden=4, no_bias=True,
                              name='b')
    c = mx.sym.FullyConnected(b, weight=w, num_hidden=4, no_bias=True, name='c')
    d = mx.sym.LeakyReLU(c, act_type='prelu', name='prelu')
    shape = {'data': (2, 4)}
    rows, total = mx.viz.summary(d, shape)
    assert [r['params'] for r in rows] == [0, 16, 16, 16, 0]
    assert total == 48                       # MXNet: a shared weight counted per use
    rows, total = mx.viz.summary(d, shape, count='all')
    assert [r['params'] for r in rows] == [0, 16, 16, 0, 4]
    assert total == 36                       # each Variable once, PReLU's gamma too


def test_summary_rows_list_every_input_layer():
    rows, _ = mx.viz.summary(build('resnet'), {'data': (1, 3, 32, 32)})
    plus = {r['name']: r for r in rows}['stage1_unit2_plus']
    assert plus['previous'] == ['stage1_unit2_conv2', 'stage1_unit1_plus']
    assert plus['out_shape'] == (16, 32, 32)
    assert rows[0] == {'name': 'data', 'op': 'null', 'out_shape': (3, 32, 32),
                       'params': 0, 'previous': []}


def test_summary_multi_output_layer_shows_first_output():
    x = mx.sym.SliceChannel(mx.sym.var('data'), num_outputs=2, name='split')
    y = mx.sym.elemwise_add(x[0], x[1], name='add')
    rows, _ = mx.viz.summary(y, {'data': (3, 4, 5)})
    assert [(r['name'], r['out_shape']) for r in rows] == \
        [('data', (4, 5)), ('split', (2, 5)), ('add', (2, 5))]
    assert rows[2]['previous'] == ['split', 'split']


def test_summary_errors():
    with pytest.raises(ValueError, match='incomplete.*data'):
        mx.viz.print_summary(build('mlp'), shape={'softmax_label': (1,)})
    with pytest.raises(ValueError, match='not an input'):
        mx.viz.print_summary(build('mlp'), shape={'dta': (1, 100)})
    with pytest.raises(ValueError, match='count'):
        mx.viz.summary(build('mlp'), count='some')
    with pytest.raises(TypeError):
        mx.viz.print_summary('fc1')


# ---------------------------------------------------------------------- DOT source
_ITEM = re.compile(r'^\t(?P<tail>"(?:[^"\\]|\\.)*"|[^\s\[]+)'
                   r'(?:\s*->\s*(?P<head>"(?:[^"\\]|\\.)*"|[^\s\[]+))?'
                   r'\s*\[(?P<attrs>(?:[^\]"]|"(?:[^"\\]|\\.)*")*)\]', re.M)
_ATTR = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|[^\s"]+)')


def parse_dot(source):
    """Nodes {id: attrs} and edges [(tail, head, attrs)] of a graphviz-made DOT text."""
    unq = lambda s: s[1:-1] if s.startswith('"') else s  # noqa: E731
    nodes, edges = {}, []
    for m in _ITEM.finditer(source):
        attrs = {k: unq(v) for k, v in _ATTR.findall(m.group('attrs'))}
        if m.group('head'):
            edges.append((unq(m.group('tail')), unq(m.group('head')), attrs))
        elif unq(m.group('tail')) not in ('node', 'edge', 'graph'):
            nodes[unq(m.group('tail'))] = attrs
    return nodes, edges


#: where symgraph's drawing deliberately differs from MXNet's: (case, node) -> ours
DEVIATIONS = {
    # SoftmaxOutput gets the softmax family's colour (MXNet meant it for its 'Softmax')
    (case, 'softmax'): {'fillcolor': '#b3de69'} for case in PLOT}
# a global pooling says so instead of showing the kernel it ignores
DEVIATIONS['resnet20', 'pool1'] = {'label': 'Pooling\navg, global'}


@pytest.mark.parametrize('case', sorted(PLOT))
def test_plot_network_draws_what_mxnet_draws(case):
    g = PLOT[case]
    dot = mx.viz.plot_network(build(g['builder']), cluster=False, **g['kwargs'])
    theirs_nodes, theirs_edges = parse_dot(g['source'])
    ours_nodes, ours_edges = parse_dot(dot.source)
    assert theirs_nodes and theirs_edges
    for name, attrs in theirs_nodes.items():
        for key in ('label', 'fillcolor', 'shape', 'style'):
            want = DEVIATIONS.get((case, name), {}).get(key, attrs[key])
            assert ours_nodes[name][key] == want, (name, key)
    strip = lambda es: sorted((t, h, a['label'], a['dir'], a['arrowtail'])  # noqa: E731
                              for t, h, a in es)
    assert strip(ours_edges) == strip(theirs_edges)
    if g['kwargs'].get('hide_weights', True):
        assert set(ours_nodes) == set(theirs_nodes)
    else:
        # MXNet leaves shown weights to graphviz's implicit nodes; ours are drawn ovals
        extra = set(ours_nodes) - set(theirs_nodes)
        assert extra == {'fc%d_%s' % (i, k) for i in (1, 2, 3) for k in ('weight', 'bias')}
        assert all(ours_nodes[n]['shape'] == 'oval' for n in extra)


def test_plot_labels_for_more_operators():
    data = mx.sym.var('data')
    x = mx.sym.Deconvolution(data, kernel=(4, 4), stride=(2, 2), num_filter=8, name='up')
    x = mx.sym.Pooling(x, kernel=(3, 3), pool_type='avg', name='pool')
    x = mx.sym.LeakyReLU(x, act_type='elu', name='elu')
    x = mx.sym.Dropout(x, p=0.25, name='drop')
    x = mx.sym.Embedding(mx.sym.var('tokens'), input_dim=100, output_dim=16,
                         name='embed') + mx.sym.sum(x)
    nodes, _ = parse_dot(mx.viz.plot_network(x).source)
    assert nodes['up']['label'] == 'Deconvolution\n4x4/2x2, 8'
    assert nodes['up']['fillcolor'] == nodes['embed']['fillcolor'] == '#fb8072'
    assert nodes['pool']['label'] == 'Pooling\navg, 3x3/1'
    assert nodes['elu']['label'] == 'LeakyReLU\nelu'
    assert nodes['drop']['label'] == 'Dropout\np=0.25'
    assert nodes['embed']['label'] == 'Embedding\n100x16'
    assert 'up_weight' not in nodes and 'embed_weight' not in nodes


def test_plot_custom_op_is_labelled_with_op_type():
    class ScaleProp(mx.operator.CustomOpProp):
        def list_arguments(self):
            return ['data']

        def infer_shape(self, in_shape):
            return in_shape, [in_shape[0]], []

    mx.operator.register('viz_test_scale')(ScaleProp)
    x = mx.sym.Custom(mx.sym.var('data'), op_type='viz_test_scale', name='cs')
    nodes, edges = parse_dot(mx.viz.plot_network(x, shape={'data': (2, 3)}).source)
    assert nodes['cs']['label'] == 'viz_test_scale'
    assert [(t, h, a['label']) for t, h, a in edges] == [('cs', 'data', '3')]


def test_plot_shape_errors_and_user_node_attrs():
    with pytest.raises(ValueError, match='incomplete'):
        mx.viz.plot_network(build('mlp'), shape={'softmax_label': (1,)})
    dot = mx.viz.plot_network(build('mlp'), node_attrs={'shape': 'oval', 'fixedsize': 'false'})
    nodes, _ = parse_dot(dot.source)
    assert nodes['fc1']['shape'] == 'oval' and nodes['fc1']['fixedsize'] == 'false'
    assert dot.format == 'pdf' and dot.name == 'plot'


def test_plot_names_that_graphviz_would_misread():
    data = mx.sym.var('in:put')
    a = mx.sym.relu(data, name='same')
    b = mx.sym.relu(a, name='same')
    nodes, edges = parse_dot(mx.viz.plot_network(b).source)
    assert len(nodes) == 3 and len(edges) == 2
    assert {a['label'] for a in nodes.values()} == {'in:put', 'same'}
    assert all(':' not in t and ':' not in h for t, h, _ in edges)


# ---------------------------------------------------------------------- clusters
def test_clusters_from_name_prefixes():
    cl = mx.viz.clusters(build('resnet'))
    stages = {p for p, c in cl.items() if c['depth'] == 1}
    units = {p for p, c in cl.items() if c['depth'] == 2}
    assert stages == {('stage%d' % i,) for i in (1, 2, 3)}
    assert units == {('stage%d' % i, 'unit%d' % j) for i in (1, 2, 3) for j in (1, 2, 3)}
    assert cl[('stage2', 'unit1')]['label'] == 'unit1'
    assert cl[('stage2', 'unit1')]['parent'] == ('stage2',)
    assert sorted(cl[('stage1', 'unit1')]['members']) == sorted(
        'stage1_unit1_' + s for s in
        'bn1 relu1 conv1 bn2 relu2 conv2 sc plus'.split())
    # Gluon names: the prefix shared by every node makes no cluster, '_fwd' is no token
    gl = mx.viz.clusters(mx.sym.load(os.path.join(GOLDEN, 'viz', 'resnet18_v1-symbol.json')))
    assert sorted(gl) == [('resnetv10', 'stage%d' % i) for i in (1, 2, 3, 4)]
    assert gl[('resnetv10', 'stage3')]['label'] == 'stage3'
    # flat networks and scattered prefixes make none
    assert mx.viz.clusters(build('lenet')) == {}
    x = mx.sym.var('data')
    for name in ('relu_a', 'conv_a', 'relu_b'):
        x = mx.sym.relu(x, name=name)
    assert mx.viz.clusters(x) == {}


# ---------------------------------------------------------------------- rendering
def svg_facts(svg_bytes):
    """Nodes (title -> text lines), edges (title -> text) and cluster labels of an SVG."""
    root = ET.fromstring(svg_bytes)
    nodes, edges, clusters = {}, {}, []
    for g in root.iter(SVG_NS + 'g'):
        cls = g.get('class')
        title = g.find(SVG_NS + 'title')
        texts = [t.text for t in g.iter(SVG_NS + 'text')]
        if cls == 'node':
            nodes[title.text] = texts
        elif cls == 'edge':
            edges[title.text] = texts
        elif cls == 'cluster':
            clusters.append(texts[0] if texts else None)
    return nodes, edges, clusters


def png_size(data):
    assert data[:8] == b'\x89PNG\r\n\x1a\n'
    return struct.unpack('>II', data[16:24])


@needs_dot
def test_render_mlp_svg_and_png(tmp_path):
    dot = mx.viz.plot_network(build('mlp'), shape={'data': (1, 100)}, save_format='svg')
    path = dot.render(filename='mlp', directory=str(tmp_path), cleanup=True)
    with open(path, 'rb') as f:
        nodes, edges, clusters = svg_facts(f.read())
    assert sorted(nodes) == sorted(['data', 'fc1', 'relu1', 'fc2', 'relu2', 'fc3',
                                    'softmax_label', 'softmax'])
    assert len(edges) == 7 and clusters == []
    assert nodes['fc1'] == ['FullyConnected', '128']
    assert nodes['relu2'] == ['Activation', 'relu']
    assert edges['fc1->data'] == ['100'] and edges['relu1->fc1'] == ['128']
    assert edges['softmax->fc3'] == ['10']
    w, h = png_size(dot.pipe(format='png'))
    assert 100 < w < h            # one column of boxes, data at the bottom
    nodes, edges, _ = svg_facts(mx.viz.plot_network(build('mlp'), hide_weights=False)
                                .pipe(format='svg'))
    assert len(nodes) == 14 and len(edges) == 13
    assert nodes['fc2_weight'] == ['fc2_weight']


@needs_dot
def test_render_lenet_with_shapes_and_dtypes():
    dot = mx.viz.plot_network(build('lenet'), shape={'data': (1, 1, 28, 28)},
                              dtype={'data': np.float32})
    nodes, edges, _ = svg_facts(dot.pipe(format='svg'))
    assert len(nodes) == 13 and len(edges) == 12
    assert nodes['conv2'] == ['Convolution', '5x5/1, 50']
    assert nodes['pool1'] == ['Pooling', 'max, 2x2/2x2']
    assert edges['fc1->flatten'] == ['800(float32)']
    assert edges['pool2->tanh2'] == ['50x8x8(float32)']


@needs_dot
def test_render_resnet_clusters_and_collapse(tmp_path):
    sym = build('resnet')
    shape = {'data': (1, 3, 32, 32)}
    n_ops = sum(1 for n in sym._order() if n.op is not None)
    nodes, edges, clusters = svg_facts(mx.viz.plot_network(sym, shape=shape)
                                       .pipe(format='svg'))
    assert n_ops == 2 + (3 * 8 + 6 * 7) + 6                # stem, 9 units, head
    assert len(nodes) == n_ops + 2                       # + data and softmax_label
    # every operator reads one tensor, the 9 additions two, the loss also its label
    assert len(edges) == n_ops + 9 + 1
    assert sorted(clusters) == sorted(['stage1', 'stage2', 'stage3'] + ['unit1', 'unit2',
                                                                        'unit3'] * 3)
    # inside a cluster a layer named by its name shows the part after the prefix
    assert nodes['stage2_unit3_bn1'] == ['bn1']
    assert nodes['stage2_unit1_sc'] == ['Convolution', '1x1/2x2, 32']
    assert edges['stage3_unit1_bn1->stage2_unit3_plus'] == ['32x16x16']
    flat_nodes, flat_edges, flat_clusters = svg_facts(
        mx.viz.plot_network(sym, shape=shape, cluster=False).pipe(format='svg'))
    assert flat_clusters == [] and flat_nodes.keys() == nodes.keys()
    assert len(flat_edges) == len(edges)
    assert flat_nodes['stage2_unit3_bn1'] == ['stage2_unit3_bn1']

    dot = mx.viz.plot_network(sym, shape=shape, collapse=2)
    png = dot.pipe(format='png')
    (tmp_path / 'resnet20.png').write_bytes(png)
    nodes, edges, clusters = svg_facts(dot.pipe(format='svg'))
    groups = {k: v for k, v in nodes.items() if k.startswith('group#')}
    assert len(groups) == 9
    assert groups['group#stage1_unit1'] == ['unit1', '8 operators']
    assert groups['group#stage2_unit2'] == ['unit2', '7 operators']
    assert sorted(clusters) == ['stage1', 'stage2', 'stage3']
    assert len(nodes) == 9 + (n_ops - 3 * (8 + 7 + 7)) + 2
    # edges between units carry the tensor between them, once
    assert edges['group#stage2_unit1->group#stage1_unit3'] == ['16x32x32']
    assert edges['group#stage1_unit1->conv0'] == ['16x32x32']
    assert edges['bn1->group#stage3_unit3'] == ['64x8x8']
    # data-bn_data-conv0-unit, 8 between units, unit-bn1, 5 to the loss, the label
    assert len(edges) == 3 + 8 + 1 + 5 + 1
    stage = svg_facts(mx.viz.plot_network(sym, collapse=['stage2'])
                      .pipe(format='svg'))[0]
    assert stage['group#stage2'] == ['stage2', '22 operators']
    with pytest.raises(ValueError, match='no cluster named'):
        mx.viz.plot_network(sym, collapse=['stage9'])


@needs_dot
def test_render_mxnet_written_resnet_png(tmp_path):
    sym = mx.sym.load(os.path.join(GOLDEN, 'viz', 'resnet18_v1-symbol.json'))
    dot = mx.viz.plot_network(sym, shape={'data': (1, 3, 224, 224)}, save_format='png')
    path = dot.render(filename='resnet18', directory=str(tmp_path), cleanup=True)
    with open(path, 'rb') as f:
        w, h = png_size(f.read())
    assert 200 < w < 1500 and h > 5000
    nodes, edges, clusters = svg_facts(dot.pipe(format='svg'))
    assert sorted(clusters) == ['stage1', 'stage2', 'stage3', 'stage4']
    assert nodes['resnetv10_stage1_batchnorm0_fwd'] == ['batchnorm0']
    assert nodes['resnetv10_dense0_fwd'] == ['FullyConnected', '1000']
    assert nodes['resnetv10_pool1_fwd'] == ['Pooling', 'avg, global']
    assert edges['resnetv10_dense0_fwd->resnetv10_pool1_fwd'] == ['512x1x1']


# ---------------------------------------------------------------------- networkx
def test_to_networkx_nodes_edges_and_algorithms():
    import networkx as nx
    sym = build('resnet')
    g = sym.to_networkx(shape={'data': (1, 3, 32, 32)})
    assert isinstance(g, nx.DiGraph) and nx.is_directed_acyclic_graph(g)
    assert set(g) == set(sym.list_inputs()) | {n.name for n in sym._order()}
    conv = g.nodes['stage2_unit1_conv1']
    assert conv['op'] == 'Convolution' and conv['kind'] == 'op'
    assert conv['params']['num_filter'] == 32 and conv['params']['stride'] == (2, 2)
    assert conv['shapes'] == [(1, 32, 16, 16)] and conv['num_params'] == 32 * 16 * 9
    assert g.nodes['stage2_unit1_bn1_moving_var']['kind'] == 'aux'
    assert g.nodes['stage2_unit1_conv1_weight']['kind'] == 'param'
    assert g.nodes['data']['kind'] == 'input' and g.nodes['softmax_label']['kind'] == 'input'
    e = g.edges['stage2_unit1_conv1_weight', 'stage2_unit1_conv1']
    assert e['inputs'] == ['weight'] and e['shape'] == (32, 16, 3, 3) and e['output'] == 0
    assert sum(d.get('num_params', 0) for _, d in g.nodes(data=True)) == \
        SUMMARY['resnet20']['total_params']
    # the longest chain of layers from the data to the loss
    ops = g.subgraph(n for n, d in g.nodes(data=True) if d['kind'] in ('op', 'input'))
    assert nx.dag_longest_path(ops)[0] == 'data'
    assert nx.dag_longest_path(ops)[-1] == 'softmax'
    assert list(nx.topological_sort(g))[-1] == 'softmax'


def test_to_networkx_repeated_inputs_names_and_dtypes():
    x = mx.sym.var('x')
    y = mx.sym.elemwise_mul(x, x, name='sq')
    y = mx.sym.relu(y, name='sq')
    g = mx.viz.to_networkx(y, dtype={'x': 'float64'})
    assert sorted(g) == ['sq', 'sq#1', 'x']
    assert g.edges['x', 'sq']['inputs'] == ['lhs', 'rhs']
    assert g.nodes['sq#1']['dtypes'] == [np.dtype('float64')]
    assert 'shapes' not in g.nodes['x']


# ---------------------------------------------------------------------- Jupyter, imports
@needs_dot
def test_repr_svg():
    svg = build('lenet')._repr_svg_()
    nodes, edges, _ = svg_facts(svg.encode('utf-8'))
    assert len(nodes) == 13 and len(edges) == 12


def test_repr_svg_falls_back_without_dot(monkeypatch):
    import graphviz

    def no_dot(self, *a, **k):
        raise graphviz.ExecutableNotFound(['dot', '-Tsvg'])
    monkeypatch.setattr(graphviz.Digraph, 'pipe', no_dot)
    assert build('mlp')._repr_svg_() is None
    monkeypatch.setitem(sys.modules, 'graphviz', None)
    assert build('mlp')._repr_svg_() is None
    with pytest.raises(ImportError, match='graphviz'):
        mx.viz.plot_network(build('mlp'))


def test_core_imports_without_graphviz_and_networkx():
    code = ("import sys; sys.modules['graphviz'] = None; sys.modules['networkx'] = None\n"
            "import symgraph as mx\n"
            "fc = mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=3, name='fc')\n"
            "mx.viz.print_summary(fc, shape={'data': (2, 5)})\n"
            "assert fc._repr_svg_() is None\n")
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert 'Total params: 18' in out.stdout


@needs_dot
def test_resnet50_collapsed_to_units_stays_small():
    sym = build('resnet50')
    dot = mx.viz.plot_network(sym, shape={'data': (1, 3, 224, 224)}, collapse=2)
    nodes, edges, clusters = svg_facts(dot.pipe(format='svg'))
    units = sorted(k for k in nodes if k.startswith('group#'))
    assert len(units) == 3 + 4 + 6 + 3
    assert nodes['group#stage3_unit6'] == ['unit6', '10 operators']
    assert sorted(clusters) == ['stage1', 'stage2', 'stage3', 'stage4']
    assert len(nodes) == 16 + 5 + 6 + 2          # units, stem, head, data and label
    assert edges['group#stage4_unit1->group#stage3_unit6'] == ['1024x14x14']
    w, h = png_size(dot.pipe(format='png'))
    assert w < 600 and h < 6000
