"""Symbol JSON from old MXNet versions (upgraded as MXNet 1.9.1 does) and malformed JSON.

The expected results come from MXNet 1.9.1 loading the same hand-written files:
tests/golden/make_json_legacy.py wrote them under tests/golden/data/json_legacy/.
"""
import json
import os

import numpy as np
import pytest

import symgraph as mx
from symgraph import opdef
from symgraph.graph import json_format
from symgraph.graph.json_format import SymbolFormatError

DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), 'golden', 'data',
                    'json_legacy')
CASES = sorted(f[:-5] for f in os.listdir(DATA) if f.endswith('.json')
               and f != 'fills_missing_inputs.json')


def _golden(case):
    with open(os.path.join(DATA, case + '.json')) as f:
        return json.load(f)


def _nodes_of(sym):
    return [{'op': n['op'], 'name': n['name'], 'attrs': n.get('attrs', {}),
             'inputs': [e[:2] for e in n['inputs']]} for n in json.loads(sym.tojson())['nodes']]


def test_golden_cases_are_present():
    assert len(CASES) >= 12


@pytest.mark.parametrize('case', CASES)
def test_old_file_names_and_attributes_match_mxnet(case):
    g = _golden(case)
    sym = mx.sym.load_json(g['json'])
    assert sym.list_arguments() == g['arguments']
    assert sym.list_outputs() == g['outputs']
    assert sym.list_auxiliary_states() == g['aux']
    assert sym.attr_dict() == g['attr_dict']
    # what a re-save writes: the upgraded attributes, appended Variables in MXNet's order
    assert _nodes_of(sym) == g['nodes']


@pytest.mark.parametrize('case', CASES)
def test_old_file_shapes_and_forward_match_mxnet(case):
    g = _golden(case)
    sym = mx.sym.load_json(g['json'])
    shapes = {k: tuple(v) for k, v in g['shapes'].items()}
    arg_s, out_s, aux_s = sym.infer_shape(**shapes)
    assert [[list(s) for s in arg_s], [list(s) for s in out_s],
            [list(s) for s in aux_s]] == g['infer_shape']
    args = {k: mx.nd.array(np.array(v, np.float32)) for k, v in g['inputs'].items()}
    aux = {k: mx.nd.array(np.array(v, np.float32)) for k, v in g['aux_inputs'].items()}
    exe = sym.bind(mx.cpu(), args, aux_states=aux, grad_req='null')
    outs = exe.forward(is_train=False)
    assert len(outs) == len(g['forward'])
    for o, want in zip(outs, g['forward']):
        np.testing.assert_allclose(o.asnumpy(), np.array(want), rtol=1e-5, atol=1e-6)


def test_resaved_old_file_is_current_and_loads_unchanged():
    sym = mx.sym.load_json(_golden('hidden_v800')['json'])
    text = sym.tojson()
    doc = json.loads(text)
    assert doc['attrs'] == {'mxnet_version': ['int', json_format.MXNET_VERSION]}
    assert all('lr_mult' not in n.get('attrs', {}) and 'ctx_group' not in n.get('attrs', {})
               for n in doc['nodes'])
    again = mx.sym.load_json(text)
    assert again.tojson() == text
    assert again.attr_dict() == sym.attr_dict()


def test_current_file_is_not_upgraded():
    # 1.9.1 files keep plain keys as written, no initializers or Variables are added
    doc = json.loads(_golden('bn_aux_v904')['json'])
    doc['attrs'] = {'mxnet_version': ['int', 10901]}
    doc['nodes'][0]['attr'] = {'ctx_group': 'a'}
    sym = mx.sym.load_json(json.dumps(doc))
    assert sym.attr_dict()['x'] == {'ctx_group': 'a'}
    assert 'mean' not in sym.attr_dict()
    short = json.loads(_golden('missing_inputs_v800')['json'])
    short['attrs'] = {'mxnet_version': ['int', 10901]}
    with pytest.raises(SymbolFormatError, match='has 2 inputs but the operator takes 3'):
        mx.sym.load_json(json.dumps(short))


def test_operator_input_key_on_current_file_is_still_unknown():
    doc = json.loads(_golden('hidden_v10900')['json'])
    doc['attrs']['mxnet_version'] = ['int', 10901]
    with pytest.raises(mx.MXNetError, match='weight_lr_mult'):
        mx.sym.load_json(json.dumps(doc))


def test_operators_that_fill_missing_inputs_match_mxnet_probe():
    with open(os.path.join(DATA, 'fills_missing_inputs.json')) as f:
        probe = json.load(f)
    fills = json_format._FILLS_MISSING_INPUTS
    wrong = sorted(n for n, r in probe.items() if r in ('append', 'none')
                   and (opdef.get_op(n).name in fills) != (r == 'append'))
    assert wrong == []
    assert fills <= {opdef.get_op(n).name for n in probe}


def test_old_file_short_node_of_operator_mxnet_leaves_short_is_an_error():
    # MXNet loads exp with no input and fails at inference; here the load fails
    text = json.dumps({'nodes': [{'op': 'null', 'name': 'x', 'inputs': []},
                                 {'op': 'exp', 'name': 'e', 'inputs': []}],
                       'arg_nodes': [0], 'heads': [[1, 0]]})
    with pytest.raises(SymbolFormatError, match=r"node 1 \(e, operator exp\) has 0 inputs"):
        mx.sym.load_json(text)


# --- malformed structure ----------------------------------------------------------------

def _doc(nodes, heads=((1, 0, 0),), arg_nodes=None, **extra):
    d = {'nodes': nodes, 'heads': [list(h) for h in heads]}
    if arg_nodes is not None:
        d['arg_nodes'] = arg_nodes
    d.update(extra)
    return json.dumps(d)


X = {'op': 'null', 'name': 'x', 'inputs': []}


def _exp(**kw):
    return dict({'op': 'exp', 'name': 'e', 'inputs': [[0, 0, 0]]}, **kw)


@pytest.mark.parametrize('text, match', [
    (_doc([X, _exp(op=[])]), r'node 1 \(e\): "op" must be a string, got \[\]'),
    (_doc([X, _exp(op={})]), r'node 1 \(e\): "op" must be a string, got \{\}'),
    (_doc([X, _exp(op=None)]), r'"op" must be a string, got None'),
    (_doc([dict(X, name=99), _exp()]), r'node 0: "name" must be a string, got 99'),
    (_doc([dict(X, name=None), _exp()]), r'node 0: "name" must be a string, got None'),
    (_doc([dict(X, name=True), _exp()]), r'node 0: "name" must be a string, got True'),
    (_doc([X, _exp(inputs=5)]), r'node 1 \(e\): "inputs" must be a list, got 5'),
    (_doc([X, _exp(inputs=None)]), r'node 1 \(e\): "inputs" must be a list, got None'),
    (_doc([X, _exp(inputs=1.5)]), r'"inputs" must be a list, got 1.5'),
    (_doc([X, _exp(inputs=[[0, '0', 0]])]), r"node 1 \(e\) has a bad input entry \[0, '0', 0\]"),
    (_doc([X, _exp(inputs=[[0, [], 0]])]), r'node 1 \(e\) has a bad input entry \[0, \[\], 0\]'),
    (_doc([X, _exp(inputs=[[False, 0, 0]])]), r'bad input entry \[False, 0, 0\]'),
    (_doc([X, _exp(inputs=[[0, True, 0]])]), r'bad input entry \[0, True, 0\]'),
    (_doc([X, _exp(inputs=[[0, 0, 0.0]])]), r'bad input entry \[0, 0, 0.0\]'),
    (_doc([X, _exp(inputs=[[0, 0, 0, 0]])]), r'bad input entry \[0, 0, 0, 0\]'),
    (_doc([X, _exp(inputs=[[0]])]), r'bad input entry \[0\]'),
    (_doc([X, _exp(inputs=[[0, -1, 0]])]), r"node 1 \(e\) reads output -1 of 'x'"),
    (_doc([X, _exp()], heads=[[1, 0.0, 0]]), r'bad head entry \[1, 0.0, 0\]'),
    (_doc([X, _exp()], heads=[[1, '0', 0]]), r"bad head entry \[1, '0', 0\]"),
    (_doc([X, _exp()], heads=[[True, 0, 0]]), r'bad head entry \[True, 0, 0\]'),
    (_doc([X, _exp()], heads=[[-1, 0, 0]]), r'bad head entry \[-1, 0, 0\].*has 2 nodes'),
    (_doc([X, _exp()], heads=[[2, 0, 0]]), r'bad head entry \[2, 0, 0\].*has 2 nodes'),
    (_doc([X, _exp()], heads=[[1, 1, 0]]), r'head \[1, 1\] reads a missing output'),
    (_doc([X, {'op': 'null', 'name': 'y', 'inputs': [[0, 0, 0]]}]),
     r'node 1 \(y\) is a variable \("op": "null"\) but has inputs \[\[0, 0, 0\]\]'),
    (_doc([X, _exp()], arg_nodes=[0, 2]), r'bad arg_nodes entry 2 \(the file has 2 nodes\)'),
    (_doc([X, _exp()], arg_nodes=[-1]), r'bad arg_nodes entry -1'),
    (_doc([X, _exp()], arg_nodes=['0']), r"bad arg_nodes entry '0'"),
    (_doc([X, _exp()], arg_nodes=[1]), r"arg_nodes entry 1 is node 'e', which is not a variable"),
    (_doc([X, _exp()], arg_nodes=5), r'"arg_nodes" must be a list, got 5'),
    (_doc([X, _exp()], attrs={'mxnet_version': 900}), r'bad "mxnet_version" 900'),
    (_doc([X, _exp()], attrs={'mxnet_version': ['str', 'x']}), r'bad "mxnet_version"'),
    (_doc([X, _exp()], attrs=[]), r'graph "attrs" must be an object'),
])
def test_malformed_structure_is_a_format_error(text, match):
    with pytest.raises(SymbolFormatError, match=match):
        mx.sym.load_json(text)


def test_well_formed_baseline_of_malformed_cases_loads():
    # the cases above each break one thing in this file
    sym = mx.sym.load_json(_doc([X, _exp()], arg_nodes=[0],
                                attrs={'mxnet_version': ['int', 10901]}))
    assert sym.list_arguments() == ['x'] and sym.list_outputs() == ['e_output']
