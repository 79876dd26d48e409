"""``python -m symgraph summary|plot`` on symbol files written by MXNet 1.9.1."""
import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

import symgraph as mx
from symgraph.__main__ import main

GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'golden', 'viz')
GLUON = os.path.join(GOLDEN, 'resnet18_v1-symbol.json')
SYMBOL_API = os.path.join(GOLDEN, 'resnet20-symbol.json')
with open(os.path.join(GOLDEN, 'summary.json')) as _f:
    SUMMARY = json.load(_f)

needs_dot = pytest.mark.skipif(shutil.which('dot') is None,
                               reason='the Graphviz dot program is not installed')
SVG = '{http://www.w3.org/2000/svg}'


def svg_classes(path):
    root = ET.parse(str(path)).getroot()
    count = {}
    for g in root.iter(SVG + 'g'):
        count[g.get('class')] = count.get(g.get('class'), 0) + 1
    return count


def test_module_entry_point_summary_matches_mxnet():
    out = subprocess.run([sys.executable, '-m', 'symgraph', 'summary', GLUON,
                          '--shape', 'data=1,3,224,224'], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout == SUMMARY['file:resnet18_v1-symbol.json']['text']


def test_summary_of_symbol_api_file(capsys):
    assert main(['summary', SYMBOL_API, '--shape', 'data=(1, 3, 32, 32)']) == 0
    assert capsys.readouterr().out == SUMMARY['file:resnet20-symbol.json']['text']
    assert main(['summary', SYMBOL_API, '--shape', 'data=1x3x32x32', '--count', 'all',
                 '--line-length', '90']) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[0] == '_' * 90
    assert 'Total params: 272544' in text


@needs_dot
@pytest.mark.parametrize('ext', ['svg', 'png', 'pdf'])
def test_plot_mxnet_file(tmp_path, capsys, ext):
    out = tmp_path / ('graph.' + ext)
    assert main(['plot', GLUON, '--shape', 'data=1,3,224,224', '-o', str(out)]) == 0
    assert 'wrote' in capsys.readouterr().out
    data = out.read_bytes()
    magic = {'svg': b'<?xml', 'png': b'\x89PNG', 'pdf': b'%PDF'}[ext]
    assert data.startswith(magic) and len(data) > 10000
    if ext == 'svg':
        count = svg_classes(out)
        # resnet18_v1: 20 Convolution, 20 BatchNorm, 17 Activation, 8 additions, 2 Pooling,
        # 1 FullyConnected, and the data; every operator reads one tensor, additions two
        assert count['node'] == 68 + 1 and count['cluster'] == 4
        assert count['edge'] == 68 + 8
        assert b'>64x56x56<' in data


@needs_dot
def test_plot_options(tmp_path, capsys):
    out = tmp_path / 'collapsed.svg'
    assert main(['plot', SYMBOL_API, '--shape', 'data=1,3,32,32', '-o', str(out),
                 '--collapse', '1']) == 0
    count = svg_classes(out)
    assert count['node'] == 3 + 8 + 2 and 'cluster' not in count
    flat = tmp_path / 'flat.svg'
    assert main(['plot', SYMBOL_API, '-o', str(flat), '--no-clusters',
                 '--show-weights']) == 0
    count = svg_classes(flat)
    assert 'cluster' not in count
    sym = mx.sym.load(SYMBOL_API)
    ops = [n for n in sym._order() if n.op is not None]
    # every Variable is drawn: data, label, weights, biases, gammas, betas, moving stats
    assert count['node'] == len(ops) + len(sym.list_inputs())
    assert count['edge'] == sum(len(n.inputs) for n in ops)


def test_plot_dot_source_needs_no_graphviz_program(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv('PATH', str(tmp_path))          # no dot on PATH
    # nor graphviz-pure (the symgraph[render] extra; tests/core/test_render_extra.py)
    monkeypatch.setattr(mx.visualization, 'BUNDLED_DOT', 'no-such-graphviz-program')
    out = tmp_path / 'g.gv'
    assert main(['plot', GLUON, '-o', str(out), '--title', 'resnet']) == 0
    text = out.read_text()
    assert text.startswith('digraph resnet {') and 'subgraph cluster_resnetv10_stage1' in text
    assert main(['plot', GLUON, '-o', str(tmp_path / 'g.svg')]) == 1
    assert 'dot' in capsys.readouterr().err


def test_cli_errors(tmp_path, capsys):
    assert main(['summary', str(tmp_path / 'missing.json')]) == 1
    assert 'missing.json' in capsys.readouterr().err
    assert main(['summary', GLUON, '--shape', 'data=1,3']) == 1
    assert 'resnetv10_conv0_fwd' in capsys.readouterr().err
    assert main(['summary', GLUON, '--shape', 'label=1']) == 1
    assert 'not an input' in capsys.readouterr().err
    assert main(['plot', GLUON, '-o', str(tmp_path / 'g.xyz')]) == 1
    assert '--format' in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(['summary', GLUON, '--shape', 'data'])
    assert e.value.code == 2
    assert 'NAME=D1,D2' in capsys.readouterr().err
