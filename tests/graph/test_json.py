"""MXNet JSON: round trips, files in MXNet 0.x/1.x layouts, corrupt input."""
import json

import numpy as np
import pytest

import symgraph as mx
from symgraph.graph.json_format import SymbolFormatError


def _net():
    data = mx.sym.var('data', shape=(0, 6))
    h = mx.sym.FullyConnected(data, num_hidden=4, name='fc', attr={'__lr_mult__': '2'})
    h = mx.sym.Activation(h, act_type='relu', name='act')
    return mx.sym.SoftmaxOutput(h, name='sm')


def test_round_trip_keeps_everything():
    s = _net()
    text = s.tojson()
    doc = json.loads(text)
    assert doc['attrs'] == {'mxnet_version': ['int', 10901]}
    assert [n['op'] for n in doc['nodes']] == ['null', 'null', 'null', 'FullyConnected',
                                                'Activation', 'null', 'SoftmaxOutput']
    assert doc['nodes'][3]['attrs'] == {'num_hidden': '4', '__lr_mult__': '2'}
    assert doc['arg_nodes'] == [0, 1, 2, 5]
    assert doc['heads'] == [[6, 0, 0]]
    s2 = mx.sym.load_json(text)
    assert s2.tojson() == text
    assert s2.list_arguments() == s.list_arguments()
    assert s2.infer_shape(data=(3, 6)) == s.infer_shape(data=(3, 6))


def test_save_and_load_file(tmp_path):
    s = _net()
    f = tmp_path / 'model-symbol.json'
    s.save(str(f))
    assert mx.sym.load(str(f)).tojson() == s.tojson()


def test_partial_shape_attribute_zero_means_unknown():
    s = mx.sym.load_json(_net().tojson())
    arg, out, _ = s.infer_shape(data=(5, 6))
    assert out == [(5, 4)]


def test_legacy_param_attr_keys_and_versions():
    legacy = {
        'nodes': [
            {'op': 'null', 'name': 'x', 'param': {}, 'inputs': [], 'backward_source_id': -1},
            {'op': 'null', 'name': 'fc_weight', 'param': {}, 'inputs': []},
            {'op': 'null', 'name': 'fc_bias', 'param': {}, 'inputs': []},
            {'op': 'FullyConnected', 'name': 'fc',
             'param': {'num_hidden': '3', 'no_bias': 'False'}, 'attr': {'ctx_group': 'a'},
             'inputs': [[0, 0], [1, 0], [2, 0]]},
            {'op': 'Activation', 'name': 'relu', 'param': {'act_type': 'relu'},
             'inputs': [[3, 0, 1]]}],
        'arg_nodes': [0, 1, 2], 'heads': [[4, 0]]}
    s = mx.sym.load_json(json.dumps(legacy))
    assert s.list_arguments() == ['x', 'fc_weight', 'fc_bias']
    assert s.infer_shape(x=(2, 5))[1] == [(2, 3)]
    assert s.get_internals()['fc_output'].attr('ctx_group') == 'a'


def test_names_are_free_text_and_round_trip():
    x = mx.sym.var('in put/0')
    y = mx.sym.exp(x, name='resnetv10_conv0_fwd (odd) name')
    assert mx.sym.load_json(y.tojson()).list_outputs() == ['resnetv10_conv0_fwd (odd) name_output']


@pytest.mark.parametrize('text, match', [
    ('', 'not valid JSON'),
    ('{"nodes": [', 'not valid JSON'),
    ('[1, 2]', 'not an MXNet symbol'),
    ('{"nodes": [{"op": "null"}], "heads": [[0, 0, 0]]}', 'malformed'),
    ('{"nodes": [{"op": "exp", "name": "e", "inputs": [[5, 0, 0]]}], "heads": [[0, 0, 0]]}',
     'bad input entry'),
    ('{"nodes": [{"op": "null", "name": "x", "inputs": []}], "heads": [[3, 0, 0]]}',
     'bad head'),
    ('{"nodes": [{"op": "NoSuchOp", "name": "n", "inputs": []}], "heads": [[0, 0, 0]]}',
     'not registered'),
    ('{"nodes": [{"op": "null", "name": "x", "inputs": []}, {"op": "exp", "name": "e", '
     '"inputs": []}], "heads": [[1, 0, 0]]}', 'has 0 inputs'),
    ('{"nodes": [{"op": "null", "name": "x", "inputs": []}], "heads": []}', 'no outputs'),
])
def test_corrupt_json_is_rejected_clearly(text, match):
    with pytest.raises(SymbolFormatError, match=match):
        mx.sym.load_json(text)


def test_truncated_file_at_every_length_never_crashes_oddly():
    text = _net().tojson()
    for k in range(0, len(text), 7):
        try:
            mx.sym.load_json(text[:k])
        except SymbolFormatError:
            pass


def test_unknown_parameter_in_file_is_an_error_naming_node():
    doc = json.loads(_net().tojson())
    doc['nodes'][3]['attrs']['num_hiden'] = '3'
    with pytest.raises(mx.MXNetError, match="'fc'.*num_hiden"):
        mx.sym.load_json(json.dumps(doc))


def test_json_of_gluon_style_export_values():
    # booleans as 'True', ints in float fields: ReLU6 as clip(0, 6)
    doc = {'nodes': [{'op': 'null', 'name': 'data', 'inputs': []},
                     {'op': 'clip', 'name': 'relu6_fwd', 'attrs': {'a_min': '0', 'a_max': '6'},
                      'inputs': [[0, 0, 0]]}],
           'arg_nodes': [0], 'node_row_ptr': [0, 1, 2], 'heads': [[1, 0, 0]],
           'attrs': {'mxnet_version': ['int', 10600]}}
    s = mx.sym.load_json(json.dumps(doc))
    exe = s.bind(mx.cpu(), {'data': mx.nd.array([-1, 3, 9])})
    np.testing.assert_allclose(exe.forward()[0].asnumpy(), [0, 3, 6])
