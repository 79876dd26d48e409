"""amp_cast and amp_multicast (ops/amp.py): OpCases, and values, dtypes and gradients
against MXNet 1.9.1 (tests/golden/make_amp_multi.py)."""
import numpy as np
import pytest

import symgraph as mx
from harness import OpCase, case_tests
from symgraph.base import MXNetError
import _golden_amp_multi as golden

CASES = [
    OpCase('amp_cast', {'dtype': 'float16'}, shapes=[(3, 4)], dtypes=('float32',),
           grad=(), ref=lambda x: x.astype(np.float16), rtol=1e-3, atol=1e-3),
    # float64 passes through (only float16/float32 are cast), so its gradient is checked
    OpCase('amp_cast', {'dtype': 'float32'}, shapes=[(2, 5)], dtypes=('float64',),
           ref=lambda x: x),
    OpCase('amp_cast', {'dtype': 'float16'}, shapes=[(2, 3)], dtypes=('int32',), grad=(),
           inputs=lambda r, s, d: [np.arange(6, dtype=d).reshape(2, 3)], ref=lambda x: x),
    OpCase('amp_multicast', {'num_outputs': 2}, shapes=[(2, 3), (4,)], dtypes=('float64',),
           ref=lambda a, b: [a, b]),
    OpCase('amp_multicast', {'num_outputs': 2, 'cast_narrow': True}, shapes=[(2, 3), (4,)],
           grad=(), dtypes=('float32',),
           inputs=lambda r, s, d: [r.uniform(-1, 1, s[0]).astype(np.float16),
                                   r.uniform(-1, 1, s[1]).astype(d)],
           ref=lambda a, b: [a, b.astype(np.float16)], rtol=1e-3, atol=1e-3),
]

test_forward, test_gradient = case_tests(CASES)


@pytest.mark.parametrize('name', golden.names(('amp_',)))
def test_against_mxnet(name):
    golden.check(name)


def test_multicast_widens_to_float32_and_keeps_other_types():
    a = mx.nd.array([1, 2], dtype='float16')
    b = mx.nd.array([1, 2], dtype='float32')
    c = mx.nd.array([1, 2], dtype='int32')
    outs = mx.nd.amp_multicast(a, b, c, num_outputs=3)
    assert [o.dtype for o in outs] == [np.float32, np.float32, np.int32]
    outs = mx.nd.amp_multicast(a, b, num_outputs=2, cast_narrow=True)
    assert [o.dtype for o in outs] == [np.float16, np.float16]


def test_symbol_inference_and_json_names_follow_mxnet():
    x = mx.sym.var('x')
    y = mx.sym.amp_multicast(x, mx.sym.var('z'), num_outputs=2, name='mc')
    assert y.list_outputs() == ['mc_output0', 'mc_output1']
    _, out_types, _ = y.infer_type(x='float16', z='float32')
    assert out_types == [np.float32, np.float32]
    c = mx.sym.amp_cast(x, dtype='float16', name='c')
    assert c.infer_type(x='float32')[1] == [np.float16]
    assert c.infer_type(x='float64')[1] == [np.float64]
    assert mx.sym.load_json(c.tojson()).tojson() == c.tojson()


def test_bad_parameters_are_refused():
    with pytest.raises(MXNetError, match='dtype'):
        mx.nd.amp_cast(mx.nd.ones(2), dtype='complex64')
    with pytest.raises(MXNetError, match='num_outputs'):
        mx.nd.amp_multicast(mx.nd.ones(2), num_outputs=0)


def test_tojson_and_save_remove_the_casts_that_feed_other_nodes_as_mxnet(tmp_path):
    """MXNet's RemoveAmpCast pass: inputs fed by amp_cast / amp_multicast are rewired to
    the casts' inputs; casts that are graph outputs stay (MXNet 1.9.1 writes
    ``['x', 'op']`` for amp_cast(amp_cast(x, name='to16'), name='op'))."""
    import json
    x, w = mx.sym.var('x'), mx.sym.var('w')
    h = mx.sym.amp_cast(x, dtype='float16', name='to16')
    y = mx.sym.amp_cast(h, dtype='float32', name='op')
    assert [n['name'] for n in json.loads(y.tojson())['nodes']] == ['x', 'op']
    kept = json.loads(y.tojson(remove_amp_cast=False))['nodes']
    assert [n['name'] for n in kept] == ['x', 'to16', 'op']
    a, b = mx.sym.amp_multicast(x, w, num_outputs=2, name='mc')
    z = mx.sym.elemwise_add(a, mx.sym.relu(b, name='r'), name='sum')
    nodes = json.loads(z.tojson())['nodes']
    assert [n['name'] for n in nodes] == ['x', 'w', 'r', 'sum']
    assert nodes[2]['inputs'] == [[1, 0, 0]] and nodes[3]['inputs'] == [[0, 0, 0], [2, 0, 0]]
    z.save(str(tmp_path / 'a.json'))
    assert 'amp_multicast' not in (tmp_path / 'a.json').read_text()
    z.save(str(tmp_path / 'b.json'), remove_amp_cast=False)
    assert 'amp_multicast' in (tmp_path / 'b.json').read_text()
    import copy
    assert 'amp_multicast' in copy.deepcopy(z).tojson(remove_amp_cast=False)
