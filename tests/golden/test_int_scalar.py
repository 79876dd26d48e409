"""Scalar arithmetic on integer and float16 arrays, symbolic and ``mx.nd``, against MXNet
1.9.1 (data/int_scalar.json from make_int_scalar.py): the scalar is cast to the array's
dtype first, ``/`` truncates, ``%`` takes the divisor's sign."""
import json
import os

import numpy as np
import pytest

import symgraph as mx

from int_scalar_ops import OPS

with open(os.path.join(os.path.dirname(__file__), 'data', 'int_scalar.json')) as _f:
    GOLDEN = json.load(_f)['cases']


@pytest.mark.parametrize('case', GOLDEN, ids=lambda c: '%s-%s-%s' % (c['dtype'], c['scalar'],
                                                                     c['op']))
def test_scalar_op_matches_mxnet(case):
    dt, s, fn = case['dtype'], case['scalar'], OPS[case['op']]
    arr = mx.nd.array(case['input'], dtype=dt)
    exe = fn(mx.sym.var('x'), s).bind(mx.cpu(), {'x': arr})
    with np.errstate(invalid='ignore', divide='ignore'):   # float16 powers of negatives
        got_sym = exe.forward()[0]
        got_nd = fn(arr, s)
    for got, want, want_dt in ((got_sym, case['symbol'], case['symbol_dtype']),
                               (got_nd, case['nd'], case['nd_dtype'])):
        assert got.dtype.__name__ == want_dt
        np.testing.assert_array_equal(got.asnumpy(), np.array(want, dtype=dt))


def test_in_place_scalar_ops_on_integer_arrays_follow_the_same_rules():
    a = mx.nd.array([-7, 3, 5], dtype='int32')
    a += 1.5
    np.testing.assert_array_equal(a.asnumpy(), [-6, 4, 6])
    a /= 2
    np.testing.assert_array_equal(a.asnumpy(), [-3, 2, 3])
    a *= 2.9
    np.testing.assert_array_equal(a.asnumpy(), [-6, 4, 6])
    assert a.dtype == np.int32
