"""``_contrib_quantize`` / ``_contrib_dequantize`` (ops/quantize.py): the operator harness
against a NumPy reference of MXNet 1.9.1's formulas, and MXNet-made values
(tests/golden/make_mxnet_parity_opA.py)."""
import json
import os

import numpy as np
import pytest

import symgraph as mx
from symgraph.opdef import get_op

from harness import OpCase, case_tests

GOLDEN = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'golden',
                      'data', 'mxnet_parity_opA.json')


def _ranged(lo, hi, quantized=None):
    def make(rng, shapes, dtype):
        x = rng.uniform(lo, hi, size=shapes[0]).astype(np.float32)
        if quantized is not None:
            x = rng.randint(-127 if quantized == 'int8' else 0, 128 if quantized == 'int8'
                            else 256, size=shapes[0]).astype(quantized)
        return [x, np.array([lo], np.float32), np.array([hi], np.float32)]
    return make


def _quantize_ref(out_type):
    def ref(x, lo, hi):
        x, lo, hi = x.astype(np.float64), float(lo[0]), float(hi[0])
        if out_type == 'int8':
            real = max(abs(lo), abs(hi))
            q = np.sign(x) * np.minimum(np.abs(x) * 127 / real + 0.5, 127)
            return [np.trunc(q).astype(np.int8), np.float32([-real]), np.float32([real])]
        q = np.trunc((x - lo) * 255 / (hi - lo) + 0.5)
        return [q.astype(np.uint8), np.float32([lo]), np.float32([hi])]
    return ref


def _dequantize_ref(q, lo, hi):
    lo, hi = float(lo[0]), float(hi[0])
    if q.dtype == np.int8:
        return q * (max(abs(lo), abs(hi)) / 127)
    return q * ((hi - lo) / 255) + lo


CASES = [
    OpCase('_contrib_quantize', {'out_type': 'int8'}, [(3, 5), (1,), (1,)],
           inputs=_ranged(-2.0, 1.5), ref=_quantize_ref('int8'), dtypes=('float32',),
           input_dtypes=('float32', 'float32', 'float32'), grad=()),
    OpCase('_contrib_quantize', {}, [(4, 2, 3), (1,), (1,)], inputs=_ranged(-0.5, 3.0),
           ref=_quantize_ref('uint8'), dtypes=('float32',),
           input_dtypes=('float32', 'float32', 'float32'), grad=()),
    OpCase('_contrib_dequantize', {}, [(3, 5), (1,), (1,)],
           inputs=_ranged(-2.0, 1.5, 'int8'), ref=_dequantize_ref, dtypes=('float32',),
           input_dtypes=('int8', 'float32', 'float32'), grad=(), rtol=1e-6),
    OpCase('_contrib_dequantize', {'out_type': 'float32'}, [(2, 7), (1,), (1,)],
           inputs=_ranged(-0.5, 3.0, 'uint8'), ref=_dequantize_ref, dtypes=('float32',),
           input_dtypes=('uint8', 'float32', 'float32'), grad=(), rtol=1e-6),
]

test_forward, test_gradient = case_tests(CASES)


def test_against_mxnet():
    with open(GOLDEN) as f:
        golden = json.load(f)['quantize']
    data = np.array(golden['data'], np.float32)
    for lo, hi, out_type, q, qmin, qmax, back in golden['cases']:
        x = mx.nd.array(np.clip(data, lo, hi))
        got = mx.nd.contrib.quantize(x, mx.nd.array([lo]), mx.nd.array([hi]),
                                     out_type=out_type)
        assert got[0].dtype == np.dtype(out_type)
        if out_type == 'uint8' and lo != 0:
            # MXNet's CPU wheel quantizes to uint8 with its oneDNN kernel, which maps
            # [0, max(|min|, |max|)] and clips negatives; symgraph follows MXNet's reference
            # kernel, which maps [min_range, max_range] (docs/differences.md)
            continue
        np.testing.assert_array_equal(got[0].asnumpy(), np.array(q, out_type))
        assert (got[1].asscalar(), got[2].asscalar()) == (np.float32(qmin), np.float32(qmax))
        deq = mx.nd.contrib.dequantize(*got, out_type='float32').asnumpy()
        if out_type == 'int8':
            # MXNet's CPU wheel dequantizes with its oneDNN kernel, q * real / 127.5; the
            # reference kernel symgraph follows divides by 127 (docs/differences.md)
            np.testing.assert_allclose(deq * 127 / 127.5, back, rtol=1e-6, atol=1e-7)
        else:
            # (its oneDNN uint8 kernel ignores min_range: q * max(|min|, |max|) / 255.5)
            real = max(abs(qmin), abs(qmax))
            np.testing.assert_allclose(np.array(q) * np.float32(real / 255.5), back,
                                       rtol=1e-6)
            np.testing.assert_allclose(deq, np.array(q) * ((qmax - qmin) / 255) + qmin,
                                       rtol=1e-6, atol=1e-7)


def test_symbol_outputs_and_errors():
    s = mx.sym.contrib.quantize(mx.sym.var('x'), mx.sym.var('lo'), mx.sym.var('hi'),
                                out_type='int8', name='q')
    assert s.list_outputs() == ['q_output0', 'q_output1', 'q_output2']     # MXNet's names
    _, out, _ = s.infer_shape(x=(2, 3), lo=(1,), hi=(1,))
    assert out == [(2, 3), (1,), (1,)]
    assert s.infer_type(x='float32', lo='float32', hi='float32')[1] == [np.int8, np.float32,
                                                                        np.float32]
    with pytest.raises(mx.MXNetError, match='must hold one value'):
        get_op('_contrib_quantize')().infer_shape([(2, 3), (2,), (1,)])
    with pytest.raises(mx.MXNetError, match='float32'):
        mx.nd.contrib.quantize(mx.nd.ones((2,), dtype='float64'), mx.nd.zeros((1,)),
                               mx.nd.ones((1,)))
    with pytest.raises(mx.MXNetError, match='out_type'):
        mx.nd.contrib.quantize(mx.nd.ones((2,)), mx.nd.zeros((1,)), mx.nd.ones((1,)),
                               out_type='int32')
