"""Rendering without a system Graphviz: ``pip install "symgraph[render]"`` brings
graphviz-pure, a static dot-compatible program, which ``plot_network(...).render()`` /
``.pipe()``, Jupyter's picture and ``python -m symgraph plot`` use when no ``dot`` is on
PATH. Without either, the error says what to install.

Checked against real Graphviz (2.43) on the visualisation test graphs (resnet20,
resnet18_v1, an MLP; whole and collapsed): the same node and edge elements and the same
text labels, the drawing's size within a quarter of dot's.
"""
import html
import os
import re
import shutil

import pytest

import symgraph as mx
from symgraph import visualization
from symgraph.__main__ import main

graphviz = pytest.importorskip('graphviz')
from graphviz.backend import dot_command  # noqa: E402

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESNET20 = os.path.join(HERE, 'golden', 'viz', 'resnet20-symbol.json')


@pytest.fixture
def no_system_dot(monkeypatch, tmp_path):
    """PATH without any dot (an empty folder), the graphviz package's program reset."""
    monkeypatch.setenv('PATH', str(tmp_path / 'empty_bin'))
    monkeypatch.setattr(dot_command, 'DOT_BINARY', dot_command.DOT_BINARY.__class__('dot'))
    assert shutil.which('dot') is None


def _bundled():
    try:
        import importlib.metadata as md
        md.version('graphviz-pure')
    except Exception:       # noqa: BLE001 -- any failure means "not installed"
        return False
    return True


needs_bundled = pytest.mark.skipif(not _bundled(), reason='graphviz-pure is not installed '
                                   '(pip install "symgraph[render]")')


def _net():
    data = mx.sym.var('data')
    fc = mx.sym.FullyConnected(data, num_hidden=10, name='fc1')
    act = mx.sym.Activation(fc, act_type='relu', name='relu1')
    return mx.sym.SoftmaxOutput(act, name='softmax')


def _drawn(source):
    """The SVG <title>s dot gives a DOT source: the graph, clusters, nodes, 'a->b' edges."""
    title = re.match(r'digraph (\w+) \{', source).group(1)
    clusters = re.findall(r'subgraph (cluster_\w+) \{', source)
    nodes = re.findall(r'^\s+(\w+) \[', source, re.M)
    edges = ['%s->%s' % e for e in re.findall(r'^\s+(\w+) -> (\w+)', source, re.M)]
    return sorted([title] + clusters + nodes + edges)


def _titles(svg):
    return sorted(html.unescape(t) for t in re.findall(r'<title>(.*?)</title>', svg))


@needs_bundled
def test_render_uses_graphviz_pure_without_dot(no_system_dot, tmp_path):
    prog = visualization.dot_program()
    assert prog is not None and os.path.basename(prog).startswith('graphviz-pure')
    dot = mx.viz.plot_network(_net(), shape={'data': (2, 5)}, save_format='svg')
    svg = dot.pipe(format='svg').decode('utf-8')
    # every node and edge of the DOT source is drawn, with its label
    assert _titles(svg) == _drawn(dot.source) and len(_titles(svg)) >= 8
    assert 'FullyConnected' in svg and '10' in svg
    out = dot.render(str(tmp_path / 'net'))
    with open(out, encoding='utf-8') as f:
        assert out.endswith('.svg') and f.read().startswith(('<?xml', '<svg'))
    png = dot.pipe(format='png')
    assert png[:8] == b'\x89PNG\r\n\x1a\n'


@needs_bundled
def test_cli_plot_without_dot(no_system_dot, tmp_path, capsys):
    out = str(tmp_path / 'r20.svg')
    assert main(['plot', RESNET20, '--shape', 'data=1,3,32,32', '-o', out]) == 0
    with open(out, encoding='utf-8') as f:
        svg = f.read()
    source = mx.viz.plot_network(mx.sym.load(RESNET20), title='r20',
                                 shape={'data': (1, 3, 32, 32)}).source
    assert _titles(svg) == _drawn(source) and len(_titles(svg)) > 150
    # pdf: graphviz-pure has none; a clear error, not a broken file
    pdf = str(tmp_path / 'r20.pdf')
    assert main(['plot', RESNET20, '-o', pdf]) == 1
    assert 'pdf output needs the system Graphviz' in capsys.readouterr().err
    assert not os.path.exists(pdf)


def test_clear_error_without_any_program(no_system_dot, monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(visualization, 'BUNDLED_DOT', 'no-such-graphviz-program')
    assert visualization.dot_program() is None
    out = str(tmp_path / 'net.png')
    assert main(['plot', RESNET20, '-o', out]) == 1
    err = capsys.readouterr().err
    assert 'pip install "symgraph[render]"' in err and 'apt-get install graphviz' in err
    assert not os.path.exists(out)
    # Jupyter's picture falls back to the text repr
    assert visualization.repr_svg(_net()) is None


def test_system_dot_is_preferred(monkeypatch, tmp_path):
    fake = tmp_path / 'bin'
    fake.mkdir()
    (fake / 'dot').write_text('#!/bin/sh\nexit 0\n')
    (fake / 'dot').chmod(0o755)
    monkeypatch.setenv('PATH', str(fake))
    monkeypatch.setattr(dot_command, 'DOT_BINARY', dot_command.DOT_BINARY.__class__('dot'))
    assert visualization.dot_program() == str(fake / 'dot')
    assert str(dot_command.DOT_BINARY) == 'dot'     # left to find the system dot by name
