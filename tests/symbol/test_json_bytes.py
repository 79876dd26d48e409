"""The text ``Symbol.tojson()`` and ``Symbol.save`` write is byte for byte MXNet 1.9.1's.

MXNet's ``example/image-classification/common/fit.py`` asserts, when training resumes,
that the network built in code and the one loaded from the checkpoint give the same
``tojson()``; that needs MXNet's layout exactly (attributes sorted by key, ``", "`` item
separators with a trailing space, one-line containers, entry versions, hidden outputs in
``node_row_ptr``). Golden text: every graph MXNet wrote for tests/golden
(``compute.json``, ``names.json``, ``control_flow.json``, the ``*-symbol.json`` files) and
``data/json_bytes.json`` (``make_json_bytes.py``).
"""
import glob
import json
import os
import sys
import warnings

import pytest

import symgraph as mx

GOLDEN = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'golden')
DATA = os.path.join(GOLDEN, 'data')
if GOLDEN not in sys.path:
    sys.path.insert(0, GOLDEN)
import graphs  # noqa: E402
import make_json_bytes  # noqa: E402


def _load(name):
    with open(os.path.join(DATA, name), encoding='utf-8') as f:
        return json.load(f)


COMPUTE = _load('compute.json')
NAMES = {k: v for k, v in _load('names.json').items() if 'error' not in v}
CONTROL_FLOW = _load('control_flow.json')
BYTES = _load('json_bytes.json')['cases']
CASES = {c.name: c for c in graphs.COMPUTE_CASES}
#: compute graphs with a Custom operator that tests/golden registers in its own test module
NEEDS_CUSTOM = {k for k, v in COMPUTE.items() if '"Custom"' in v['json']}
SYMBOL_FILES = sorted(os.path.relpath(p, DATA) for p in glob.glob(
    os.path.join(DATA, '**', '*-symbol.json'), recursive=True))


def _first_difference(ours, theirs):
    for k, (a, b) in enumerate(zip(ours.splitlines(), theirs.splitlines())):
        if a != b:
            return 'line %d: symgraph %r, MXNet %r' % (k + 1, a, b)
    return 'lengths %d and %d' % (len(ours), len(theirs))


def assert_same_text(ours, theirs, what):
    assert ours == theirs, '%s: %s' % (what, _first_difference(ours, theirs))


def _quiet_load(text):
    with warnings.catch_warnings():
        # some golden graphs share Variable names on purpose (a warning says so)
        warnings.simplefilter('ignore', UserWarning)
        return mx.sym.load_json(text)


@pytest.mark.parametrize('case', sorted(set(COMPUTE) - NEEDS_CUSTOM))
def test_compute_graph_written_back_unchanged(case):
    text = COMPUTE[case]['json']
    assert_same_text(_quiet_load(text).tojson(), text, case)


@pytest.mark.parametrize('case', sorted(set(COMPUTE) - NEEDS_CUSTOM))
def test_compute_graph_built_in_code_gives_mxnets_text(case):
    assert_same_text(graphs.fresh_build(mx, CASES[case].build).tojson(),
                     COMPUTE[case]['json'], case)


@pytest.mark.parametrize('case', sorted(NAMES))
def test_names_graph_built_and_loaded(case):
    text = NAMES[case]['json']
    assert_same_text(graphs.fresh_build(mx, graphs.NAME_CASES[case]).tojson(), text, case)
    assert_same_text(_quiet_load(text).tojson(), text, case + ' loaded')


@pytest.mark.parametrize('case', sorted(CONTROL_FLOW))
def test_control_flow_subgraphs_written_back_unchanged(case):
    text = CONTROL_FLOW[case]['json']
    assert_same_text(_quiet_load(text).tojson(), text, case)


@pytest.mark.parametrize('path', SYMBOL_FILES)
def test_symbol_files_written_back_unchanged(path, tmp_path):
    with open(os.path.join(DATA, path), encoding='utf-8') as f:
        text = f.read()
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', UserWarning)
        sym = mx.sym.load(os.path.join(DATA, path))
    # AMP-converted files keep their casts (MXNet saved them with remove_amp_cast=False)
    keep_casts = '"amp_cast"' in text or '"amp_multicast"' in text
    assert_same_text(sym.tojson(remove_amp_cast=not keep_casts), text, path)
    out = tmp_path / 'again-symbol.json'
    sym.save(str(out), remove_amp_cast=not keep_casts)
    assert out.read_bytes() == text.encode('utf-8')


@pytest.mark.parametrize('case', sorted(make_json_bytes.CASES))
def test_layout_cases_built_in_code(case, tmp_path):
    sym = make_json_bytes.build(mx, case)
    assert_same_text(sym.tojson(), BYTES[case]['tojson'], case)
    path = tmp_path / (case + '-symbol.json')
    sym.save(str(path))
    assert path.read_bytes() == BYTES[case]['file'].encode('utf-8')
    # and the same text after a round trip through the file (fit.py's assertion)
    assert mx.sym.load(str(path)).tojson() == sym.tojson()


@pytest.mark.parametrize('case', sorted(k for k in BYTES if k.startswith('legacy/')))
def test_old_files_upgraded_as_mxnet_writes_them(case):
    doc = _load(os.path.join('json_legacy', case[len('legacy/'):]))
    text = doc['json'] if isinstance(doc['json'], str) else json.dumps(doc['json'])
    assert_same_text(_quiet_load(text).tojson(), BYTES[case]['tojson'], case)


def test_attrs_sorted_whatever_the_keyword_order():
    x = mx.sym.var('x')
    a = mx.sym.Pooling(x, pool_type='max', kernel=(2, 2), stride=(2, 2), name='p')
    b = mx.sym.Pooling(x, stride=(2, 2), kernel=(2, 2), pool_type='max', name='p')
    assert a.tojson() == b.tojson()
    node = json.loads(a.tojson())['nodes'][1]
    assert list(node['attrs']) == ['kernel', 'pool_type', 'stride']


def test_versions_count_updates_of_shared_auxiliary_states():
    text = make_json_bytes.build(mx, 'shared_aux').tojson()
    nodes = json.loads(text)['nodes']
    bn = {n['name']: n['inputs'] for n in nodes if n['op'] == 'BatchNorm'}
    # moving_mean / moving_var: read at version 1 by bn1 and 2 by bn2, then 2 by reshape
    assert [e[2] for e in bn['bn1'][3:]] == [1, 1]
    assert [e[2] for e in bn['bn2'][3:]] == [2, 2]
    reshape = next(n for n in nodes if n['op'] == 'Reshape')
    assert reshape['inputs'][0][2] == 2


def test_control_characters_raw_and_lone_surrogates_escaped(tmp_path):
    """As dmlc, control characters other than \\t \\n \\r are written raw (and read back);
    a lone surrogate, which no MXNet string holds, is written as a \\u escape so that the
    file can be encoded."""
    x = mx.sym.var('a\x01b\ud800c')
    text = x.tojson()
    assert '"a\x01b\\ud800c"' in text
    assert mx.sym.load_json(text).name == 'a\x01b\ud800c'
    path = tmp_path / 's-symbol.json'
    x.save(str(path))
    assert mx.sym.load(str(path)).tojson() == text
