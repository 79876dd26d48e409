"""Operator parameters are checked as MXNet 1.9.1's parameter parser checks them (each
case raises there too): no 'None' or '' for a number that is not optional, no '2.0' or
'1e3' or True for an int, lower bounds."""
import json

import pytest

import symgraph as mx
from symgraph.base import MXNetError


@pytest.mark.parametrize('value, match', [
    (0, "value 0 for parameter 'num_hidden' should be greater equal to 1"),
    (-1, 'should be greater equal to 1'),
    ('None', "parameter 'num_hidden': expected int, got 'None'"),
    ('', "parameter 'num_hidden': expected int, got ''"),
    (True, 'expected an int, got True'),
    ('2.0', "expected an int, got '2.0'"),
    ('1e3', "expected an int, got '1e3'"),
])
def test_bad_int_parameters_are_refused_at_creation(value, match):
    with pytest.raises(MXNetError, match=match):
        mx.sym.FullyConnected(mx.sym.var('x'), num_hidden=value)
    assert mx.sym.FullyConnected(mx.sym.var('x'), num_hidden='3').attr('num_hidden') == '3'


def test_num_filter_has_a_lower_bound_and_optional_ints_take_none():
    with pytest.raises(MXNetError, match='num_filter'):
        mx.sym.Convolution(mx.sym.var('x'), kernel=(3, 3), num_filter=0)
    s = mx.sym.slice_axis(mx.sym.var('x'), axis=0, begin=1, end=None)
    assert s.infer_shape(x=(4, 2))[1] == [(3, 2)]


def test_a_json_file_with_none_for_a_required_int_is_refused_clearly():
    doc = json.loads(mx.sym.FullyConnected(mx.sym.var('x'), num_hidden=2, name='fc').tojson())
    for node in doc['nodes']:
        if node['op'] == 'FullyConnected':
            node['attrs']['num_hidden'] = 'None'
    with pytest.raises(MXNetError, match="num_hidden.*'None'"):
        mx.sym.load_json(json.dumps(doc))


def test_storage_types_are_mxnets_and_unknown_ones_are_refused():
    # sparse variables declare MXNet's storage type code (dense-backed arrays bind to them)
    assert mx.sym.var('x', stype='csr').list_attr() == {'__storage_type__': '2'}
    assert mx.sym.var('x', stype='row_sparse').list_attr() == {'__storage_type__': '1'}
    with pytest.raises(MXNetError, match="unknown storage type 'dense'"):
        mx.sym.var('x', stype='dense')


def test_group_slices_follow_mxnet():
    sp = mx.sym.SliceChannel(mx.sym.var('x'), num_outputs=3, name='sp')
    assert sp[0:2].list_outputs() == ['sp_output0', 'sp_output1']
    assert sp[::2].list_outputs() == ['sp_output0', 'sp_output2']
    with pytest.raises(IndexError):
        sp[1:10]
    with pytest.raises(TypeError, match='selects no output'):
        sp[3:]
