"""Custom operators against MXNet 1.9.1 (data from ``make_custom_golden.py``).

The same op and graph code runs with ``mx`` = symgraph; names, shape inference, JSON,
forward outputs, gradients (with 'write', 'add' and 'null' reqs), aux states and the req
lists the ops saw must match what MXNet recorded.
"""
import json
import os
import sys

import numpy as np
import pytest

import symgraph as mx

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
import make_custom_golden as golden  # noqa: E402

with open(os.path.join(HERE, 'custom', 'graph.json')) as _f:
    META = json.load(_f)
ARRAYS = dict(np.load(os.path.join(HERE, 'custom', 'graph.npz')))
LOG = []
golden.define_ops(mx, LOG)


@pytest.fixture
def log():
    LOG.clear()
    yield LOG


def _close(got, want, what):
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=what)
    assert got.dtype == want.dtype, what


def test_names_and_shape_inference(log):
    sym = golden.build_graph(mx)
    got = json.loads(json.dumps(golden.describe(sym)))
    for key in ('list_arguments', 'list_outputs', 'list_auxiliary_states', 'infer_shape',
                'infer_shape_partial_data_only', 'internals'):
        assert got[key] == META[key], key


def test_json_matches_mxnet(log):
    ours = json.loads(golden.build_graph(mx).tojson())
    theirs = META['json']
    assert [n['op'] for n in ours['nodes']] == [n['op'] for n in theirs['nodes']]
    assert [n['name'] for n in ours['nodes']] == [n['name'] for n in theirs['nodes']]
    for a, b in zip(ours['nodes'], theirs['nodes']):
        assert a.get('attrs', {}) == b.get('attrs', {}), a['name']
        assert [e[:2] for e in a['inputs']] == [e[:2] for e in b['inputs']], a['name']
    assert ours['arg_nodes'] == theirs['arg_nodes']
    assert [h[:2] for h in ours['heads']] == [h[:2] for h in theirs['heads']]


@pytest.mark.parametrize('source', ['built', 'mxnet_json'])
def test_forward_backward_match_mxnet(source, log):
    sym = golden.build_graph(mx) if source == 'built' else \
        mx.sym.load_json(json.dumps(META['json']))
    got = golden.run(mx, sym, log)
    assert sorted(got) == sorted(ARRAYS)
    for k in sorted(ARRAYS):
        if k.startswith(('arg:', 'head:')):
            np.testing.assert_array_equal(got[k], ARRAYS[k])
        else:
            _close(got[k], ARRAYS[k], k)
    # what the ops saw: is_train as int, forward and backward reqs, create_operator args
    want = [e for e in META['log'] if e[0] != 'ss.prop']
    assert [e for e in json.loads(json.dumps(log)) if e[0] != 'ss.prop'] == want
