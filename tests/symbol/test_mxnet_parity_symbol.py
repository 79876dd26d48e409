"""Symbol behaviours MXNet 1.9.1's own tests/python/unittest/test_symbol.py relies on
(issue 29). MXNet-made values come from tests/golden/make_mxnet_parity_opA.py."""
import json
import os

import pytest

import symgraph as mx

GOLDEN = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'golden',
                      'data', 'mxnet_parity_opA.json')


@pytest.fixture(scope='module')
def golden():
    with open(GOLDEN) as f:
        return json.load(f)


def _net():
    w = mx.sym.var('weight', shape=(128, 0))
    return mx.sym.FullyConnected(mx.sym.var('data'), w, num_hidden=128)


@pytest.mark.parametrize('flag', [False, True])
def test_tojson_marks_np_shape_semantics_as_mxnet(golden, flag):
    with mx.np_shape(flag):
        text = _net().tojson()
    assert text == golden['np_shape_json']['on' if flag else 'off']
    assert ('is_np_shape' in json.loads(text)['attrs']) == flag


def test_legacy_file_zero_dims_stay_unknown_under_np_shape(golden, tmp_path):
    fname = str(tmp_path / 'net.json')
    with open(fname, 'w') as f:
        f.write(golden['np_shape_json']['off'])
    for flag in (False, True):
        with mx.np_shape(flag):
            arg, out, aux = mx.sym.load(fname).infer_shape(data=(10, 784))
        assert arg == [(10, 784), (128, 784), (128,)] and out == [(10, 128)] and aux == []
