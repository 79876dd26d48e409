"""The profiler's SVG timeline (symgraph.profiler.render_svg) and the README's picture."""
import json
import os
import re
import xml.etree.ElementTree as ET

import pytest

from symgraph.profiler import render_svg

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')
SVG = '{http://www.w3.org/2000/svg}'


def _trace():
    pid, main, dnn = 7, 100, 1
    return {'traceEvents': [
        {'name': 'process_name', 'ph': 'M', 'pid': pid, 'args': {'name': 'worker'}},
        {'name': 'thread_name', 'ph': 'M', 'pid': pid, 'tid': main,
         'args': {'name': 'MainThread'}},
        {'name': 'thread_name', 'ph': 'M', 'pid': pid, 'tid': dnn,
         'args': {'name': 'oneDNN primitives (OpenMP team)'}},
        {'name': 'Convolution', 'cat': 'operator', 'ph': 'X', 'ts': 1000.0, 'dur': 600.0,
         'pid': pid, 'tid': main},
        {'name': 'brgconv:avx2', 'cat': 'oneDNN', 'ph': 'X', 'ts': 1100.0, 'dur': 400.0,
         'pid': pid, 'tid': dnn},
        {'name': 'MyOp', 'cat': 'operator', 'ph': 'X', 'ts': 1600.0, 'dur': 300.0,
         'pid': pid, 'tid': main},
        {'name': 'MyOp::pure_python', 'cat': 'Custom Operator', 'ph': 'X', 'ts': 1650.0,
         'dur': 200.0, 'pid': pid, 'tid': main},
        {'name': 'relu', 'cat': 'operator', 'ph': 'B', 'ts': 1900.0, 'pid': pid, 'tid': main},
        {'name': 'relu', 'cat': 'operator', 'ph': 'E', 'ts': 2000.0, 'pid': pid, 'tid': main},
        {'name': 'Memory: cpu/0', 'cat': 'Device Storage', 'ph': 'C', 'ts': 1000.0,
         'pid': pid, 'tid': main, 'args': {'Memory: cpu/0': 4096}},
        {'name': 'Memory: cpu/0', 'cat': 'Device Storage', 'ph': 'C', 'ts': 1600.0,
         'pid': pid, 'tid': main, 'args': {'Memory: cpu/0': 8192}},
    ]}


def _rects(root):
    """(x, y, width, name) of every event's rectangle (the background excluded)."""
    out = []
    for r in root.iter(SVG + 'rect'):
        title = r.find(SVG + 'title')
        if title is not None:
            out.append((float(r.get('x')), float(r.get('y')), float(r.get('width')),
                        title.text.split(' (')[0]))
    return out


def test_rows_events_nesting_and_counters(tmp_path):
    path = tmp_path / 'trace.svg'
    svg = render_svg(_trace(), str(path), width=1230, title='t')
    assert path.read_text() == svg
    root = ET.fromstring(svg)
    lanes = [t.text for t in root.iter(SVG + 'text') if t.get('class') == 'lane']
    assert lanes == ['MainThread', 'oneDNN primitives (OpenMP team)', 'Memory: cpu/0']
    rects = {name: (x, y, w) for x, y, w, name in _rects(root)}
    assert set(rects) == {'Convolution', 'brgconv:avx2', 'MyOp', 'MyOp::pure_python', 'relu'}
    # the time axis: 1000..2000 us over 1000 px (1230 - 210 label - 20 margin)... scaled
    x0, plot = 230.0, 1230 - 230 - 20
    scale = plot / 1000.0
    assert rects['Convolution'][0] == pytest.approx(x0)
    assert rects['Convolution'][2] == pytest.approx(600 * scale, abs=0.01)
    assert rects['relu'][0] == pytest.approx(x0 + 900 * scale, abs=0.01)  # B/E paired
    # siblings: one event starting where the last ended stays on its level
    assert rects['MyOp'][1] == rects['Convolution'][1] == rects['relu'][1]
    # nested: the custom operator's Python code one level below its node, same row
    assert rects['MyOp::pure_python'][1] == rects['MyOp'][1] + 18
    # the oneDNN row below the main thread's
    assert rects['brgconv:avx2'][1] > rects['MyOp::pure_python'][1]
    counter = [p for p in root.iter(SVG + 'path') if p.get('class') == 'counter']
    assert len(counter) == 1
    ticks = [t.text for t in root.iter(SVG + 'text') if t.get('class') == 'axis']
    assert ticks[0] == '0 ms' and ticks[-1] == '1 ms'


def test_crop_and_bad_input(tmp_path):
    svg = render_svg(_trace(), start=1600, end=2000)
    names = {n for _, _, _, n in _rects(ET.fromstring(svg))}
    assert 'MyOp' in names and 'brgconv:avx2' not in names
    with pytest.raises(TypeError, match='traceEvents'):
        render_svg(42)
    with pytest.raises(ValueError, match='no duration or counter'):
        render_svg({'traceEvents': [{'ph': 'M', 'name': 'process_name', 'pid': 1}]})
    p = tmp_path / 'x.json'
    p.write_text(json.dumps(_trace()))
    assert render_svg(str(p)).startswith('<svg')


def test_the_readme_picture_is_our_renderers_svg():
    # made by scripts/render_trace.py (a profiled training step of a CNN with a custom
    # operator); rerun it to refresh the picture
    with open(os.path.join(ROOT, 'docs', 'profile_trace.svg')) as f:
        text = f.read()
    root = ET.fromstring(text)
    names = {n for _, _, _, n in _rects(root)}
    assert {'Convolution', '_backward_Convolution', 'sigmoid_py', '_backward_sigmoid_py',
            'sigmoid_py::pure_python', 'sgd_update'} <= names
    lanes = [t.text for t in root.iter(SVG + 'text') if t.get('class') == 'lane']
    assert 'MainThread' in lanes and 'Memory: cpu/0' in lanes
    assert re.search(r'symgraph profile', text)
