"""mx.viz.plot_memory (symgraph/viz/memory.py) and the CLI subcommands ``memory`` and
``diff`` (symgraph/__main__.py): the drawing's peak is the plan's, its bands are the
storage plan's buffers, and the commands run on files."""
import os
import re
import tracemalloc
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import symgraph as mx
from symgraph.__main__ import main

from harness import resnet_block    # (tests/conftest.py puts tests/ops on the path)


def _debug_numbers(exe):
    text = exe.debug_str()
    planned = int(re.search(r'planned_bytes=(\d+)', text).group(1))
    measured = re.search(r'measured_peak_bytes=(\w+)', text).group(1)
    return planned, (None if measured == 'untraced' else int(measured))


def _trained(shape=(4, 4, 8, 8)):
    exe = resnet_block().simple_bind(mx.cpu(), data=shape)
    tracemalloc.start()
    try:
        exe.forward(is_train=True, data=np.random.rand(*shape))
        exe.backward()
    finally:
        tracemalloc.stop()
    return exe


def test_peak_is_the_plans_and_the_measured_peak_is_debug_strs():
    exe = _trained()
    mp = mx.viz.plot_memory(exe)
    planned, measured = _debug_numbers(exe)
    assert mp.peak_bytes == planned == exe._plan.storage().peak_bytes
    assert mp.measured == measured is not None
    # the peak again from the bands: the arena plus the operators' own arrays alive at the
    # fullest step, which is the step the report names
    own = [sum(b.nbytes for b in mp.bands if b.kind == 'array' and b.first <= t <= b.last)
           for t in range(len(mp.steps))]
    assert mp.arena_bytes + max(own) == mp.peak_bytes
    assert own[mp.peak_step] == max(own)
    label, name, op, loc = mp.steps[mp.peak_step]
    assert 'Planned peak: %d B' % mp.peak_bytes in mp.text() or \
        '(%d B)' % mp.peak_bytes in mp.text()
    assert "held by node %r (%s, created at %s)" % (name, op, loc) in mp.text()
    assert 'harness.py' in loc


def test_steps_are_forward_then_backward_and_bands_are_the_buffers():
    exe = _trained()
    plan = exe._plan
    st = plan.storage()
    mp = mx.viz.plot_memory(exe)
    n_fwd, n_bwd = len(plan.steps), len(plan.bwd_steps)
    assert len(mp.steps) == n_fwd + n_bwd + 1
    assert [s[1] for s in mp.steps[:n_fwd]] == [n.name for n in plan.steps]
    assert all(s[2].startswith('_backward_') for s in mp.steps[n_fwd:-1])
    buffers = [b for b in mp.bands if b.kind in ('activation', 'gradient')]
    assert sorted(b.offset for b in buffers) == sorted(st.offset)
    assert {b.kind for b in buffers} == {'activation', 'gradient'}
    # two buffers share bytes at one step only in place (the plan's invariant, as drawn)
    for i, a in enumerate(buffers):
        for b in buffers[i + 1:]:
            if a.offset < b.offset + b.nbytes and b.offset < a.offset + a.nbytes:
                if a.first <= b.last and b.first <= a.last:
                    assert a.inplace_of == b.name or b.inplace_of == a.name, (a, b)
    # what sharing saved: every buffer alone >= reuse >= the arena the plan took
    assert mp.unshared_bytes >= mp.reuse_bytes >= mp.arena_used > 0
    assert mp.unshared_bytes > mp.arena_used        # this network reuses its buffers


def test_in_place_pairs_are_found_and_counted():
    # the sum takes over the storage of the FullyConnected output that dies there
    y = mx.sym.FullyConnected(mx.sym.var('a'), num_hidden=16, name='f')
    z = mx.sym.elemwise_add(y, mx.sym.FullyConnected(mx.sym.var('b'), num_hidden=16,
                                                     name='g'), name='sum')
    z = mx.sym.elemwise_add(mx.sym.relu(z), y, name='out')
    exe = z.simple_bind(mx.cpu(), a=(4, 8), b=(4, 8), grad_req='null')
    mp = mx.viz.plot_memory(exe)
    pairs = [b for b in mp.bands if b.inplace_of]
    assert [(b.name, b.inplace_of) for b in pairs] == [('sum_output', 'g_output')]
    for b in pairs:
        src = [a for a in mp.bands if a.name == b.inplace_of][0]
        assert src.offset == b.offset and src.last == b.first
    assert '%d in-place pair(s)' % len(pairs) in mp.text()
    assert mp.reuse_bytes >= mp.arena_used


def test_svg_is_one_document_with_a_band_per_buffer(tmp_path):
    exe = _trained()
    mp = mx.viz.plot_memory(exe, output=str(tmp_path / 'm.svg'))
    root = ET.parse(str(tmp_path / 'm.svg')).getroot()
    ns = '{http://www.w3.org/2000/svg}'
    tips = [t.text for t in root.iter(ns + 'title')]
    for b in mp.bands:
        if b.offset is not None:
            assert any(t.startswith('%s: %d bytes' % (b.name, b.nbytes)) for t in tips), b
    assert 'planned peak %d B' % mp.peak_bytes in ET.tostring(root, encoding='unicode') or \
        '(%d B)' % mp.peak_bytes in ET.tostring(root, encoding='unicode')
    mp.save(str(tmp_path / 'm.txt'))
    assert (tmp_path / 'm.txt').read_text().startswith('Memory plan:')


def test_inference_plan_and_bad_input():
    exe = resnet_block().simple_bind(mx.cpu(), data=(2, 4, 8, 8), grad_req='null')
    mp = mx.viz.plot_memory(exe)
    assert not mp.is_train and len(mp.steps) == mp.n_forward + 1
    assert all(b.kind != 'gradient' for b in mp.bands)
    with pytest.raises(TypeError, match='executor'):
        mx.viz.plot_memory(resnet_block())


def test_cli_memory(tmp_path, capsys):
    sym_file = str(tmp_path / 'net-symbol.json')
    resnet_block().save(sym_file)
    out = str(tmp_path / 'mem.svg')
    assert main(['memory', sym_file, '--shape', 'data=2,4,8,8', '--train', '-o', out]) == 0
    text = capsys.readouterr().out
    net = resnet_block()
    req = {n: 'null' if n in ('data', 'softmax_label') else 'write'
           for n in net.list_arguments()}
    exe = net.simple_bind(mx.cpu(), data=(2, 4, 8, 8), grad_req=req)
    peak = exe._plan.storage().peak_bytes
    assert 'Planned peak: %d B' % peak in text
    assert 'backward' in text and os.path.getsize(out) > 0
    ET.parse(out)
    assert main(['memory', sym_file]) == 1
    assert 'needs the input shapes' in capsys.readouterr().err
