"""Positional parameters bind as in MXNet 1.9.1's generated functions: after the inputs, in
the order of data/signatures.json (from make_signatures.py)."""
import json
import os

import numpy as np
import pytest

import symgraph as mx
from symgraph.base import MXNetError
from symgraph.opdef import get_op
from symgraph.opdef import positional_params

with open(os.path.join(os.path.dirname(__file__), 'data', 'signatures.json')) as _f:
    SIGNATURES = json.load(_f)['signatures']
#: MXNet signatures that are wrong in MXNet itself
MXNET_BUGS = {
    # the generated _linspace(start, stop, step, repeat, infer_range, ...) is _arange's;
    # MXNet 1.9.1 fails on _linspace(0, 1, 5) with "Cannot find argument 'step'", while the
    # operator's parameters (and mx.sym.linspace) are start, stop, num, endpoint
    '_linspace',
}
FIXED = sorted(n for n, sig in SIGNATURES.items()
               if not any(p.startswith('*') for p in sig) and n not in MXNET_BUGS)


@pytest.mark.parametrize('name', FIXED)
def test_parameter_order_matches_mxnet(name):
    sig = SIGNATURES[name]
    cls = get_op(name)
    assert [p for p in positional_params(cls) if p in sig] == \
        [p for p in sig if p in cls._params]
    # MXNet lists its inputs first: none of its parameters may be missing here
    first = next((i for i, p in enumerate(sig) if p in cls._params), len(sig))
    assert all(p in cls._params for p in sig[first:]), sig


def test_positional_parameters_in_mx_nd():
    x = mx.nd.array([0.5, 1.0, 3.0])
    np.testing.assert_array_equal(mx.nd.clip(x, 0.75, 2.0).asnumpy(), [0.75, 1.0, 2.0])
    np.testing.assert_array_equal(x.clip(0.75, 2.0).asnumpy(), [0.75, 1.0, 2.0])
    assert mx.nd.one_hot(mx.nd.array([0, 2]), 3).shape == (2, 3)
    assert x.expand_dims(0).shape == (1, 3) and x.tile((2,)).shape == (6,)
    top = mx.nd.topk(mx.nd.array([[3, 1, 2]]), 1, 2, 'value')   # axis, k, ret_typ
    np.testing.assert_array_equal(top.asnumpy(), [[3, 2]])


def test_positional_parameters_in_mx_sym_give_mxnets_json():
    data, w, b = mx.sym.var('data'), mx.sym.var('w'), mx.sym.var('b')
    by_pos = mx.sym.Convolution(data, w, b, (3, 3), (1, 1), (1, 1), (1, 1), 4, name='c')
    by_kw = mx.sym.Convolution(data, w, b, kernel=(3, 3), stride=(1, 1), dilate=(1, 1),
                               pad=(1, 1), num_filter=4, name='c')
    assert by_pos.tojson() == by_kw.tojson()


def test_positional_parameter_errors():
    x = mx.nd.array([1.0])
    # after axis come out and name, as in MXNet's mx.nd.expand_dims(data, axis, out, name)
    with pytest.raises(MXNetError, match='4 positional parameters given but it takes 3'):
        mx.nd.expand_dims(x, 0, None, 'e', 1)
    with pytest.raises(MXNetError, match="'a_min' given twice"):
        mx.nd.clip(x, 0.0, a_min=1.0, a_max=2.0)
    with pytest.raises(MXNetError, match='inputs must come before parameters'):
        mx.sym.clip(mx.sym.var('x'), 0.0, mx.sym.var('y'))
