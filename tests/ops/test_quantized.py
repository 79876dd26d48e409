"""The int8 operators of ops/quantized.py: the operator harness against NumPy references
written from MXNet 1.9.1's formulas (float64 arithmetic, integer semantics checked
exactly), and every quantized operator (those of ops/quantized_nn.py too) against MXNet's
own outputs on the same inputs (tests/golden/make_quantization.py: MXNet's CPU build, its
oneDNN kernels). ops/quantized_nn.py's harness cases: tests/ops/test_quantized_nn.py."""
import json
import os

import numpy as np
import pytest

import symgraph as mx
from symgraph.opdef import get_op

from harness import OpCase, case_tests

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'golden',
                    'data', 'quantization')
with open(os.path.join(DATA, 'ops.json')) as _f:
    GOLDEN = json.load(_f)
GOLDEN_NPZ = np.load(os.path.join(DATA, 'ops.npz'))


def _golden_case(k):
    n_in = sum(1 for f in GOLDEN_NPZ.files if f.startswith('%d:in' % k))
    n_out = sum(1 for f in GOLDEN_NPZ.files if f.startswith('%d:out' % k))
    return ([GOLDEN_NPZ['%d:in%d' % (k, i)] for i in range(n_in)],
            [GOLDEN_NPZ['%d:out%d' % (k, i)] for i in range(n_out)])


@pytest.mark.parametrize('k', range(len(GOLDEN)),
                         ids=['%d-%s' % (k, g['op'][9:]) for k, g in enumerate(GOLDEN)])
def test_against_mxnet(k):
    """Each operator's integer output equal to MXNet's (the ranges to float32 rounding)."""
    g = GOLDEN[k]
    inputs, want = _golden_case(k)
    op = get_op(g['op'])(**g['attrs'])
    n = len(op.list_arguments())
    if g['op'] == '_contrib_quantized_batch_norm':
        # MXNet's inputs list the moving statistics before the ranges; symgraph's last
        inputs = [inputs[k] for k in (0, 1, 2, 5, 6, 3, 4)]
    got = op.forward(np, [a.copy() for a in inputs[:n]], [a.copy() for a in inputs[n:]],
                     False)
    assert len(got) == len(want)
    assert got[0].dtype == want[0].dtype
    assert got[0].shape == want[0].shape
    np.testing.assert_array_equal(got[0], want[0])
    for a, b in zip(got[1:], want[1:]):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    # the inferred shapes and dtypes are those of the arrays
    _, out_shapes, _ = op.infer_shape([a.shape for a in inputs])
    _, out_types, _ = op.infer_type([a.dtype for a in inputs])
    assert [tuple(s) for s in out_shapes] == [a.shape for a in want]
    assert list(out_types) == [a.dtype for a in want]


# --- NumPy references ---------------------------------------------------------------------

def _sat(x, dtype):
    info = np.iinfo(dtype)
    return np.clip(np.rint(x), info.min, info.max).astype(dtype)


def _ints(dtype, *shape_index):
    def make(rng, shapes, _):
        out = []
        for i, s in enumerate(shapes):
            if i in shape_index:
                lo, hi = (-128, 128) if dtype[i] == 'int8' else (0, 256)
                out.append(rng.randint(lo, hi, size=s).astype(dtype[i]))
            else:
                out.append(None)
        return out
    return make


def _case_inputs(arrays):
    return lambda rng, shapes, dtype: [a.copy() for a in arrays]


def _f(v):
    return np.array([v], np.float32)


def _quantize_v2_ref(out_type, lo=None, hi=None):
    def ref(x):
        x64 = x.astype(np.float64)
        a, b = (x.min(), x.max()) if lo is None else (lo, hi)
        real = max(abs(a), abs(b))
        if out_type == 'int8':
            return [_sat(x64 * np.float32(127.5 / real), np.int8), _f(-real), _f(real)]
        return [_sat(x64 * np.float32(255.5 / real), np.uint8), _f(a), _f(b)]
    return ref


def _requantize_ref(x, lo, hi):
    first = max(abs(lo[0]), abs(hi[0])) / 2147483647.0
    real = max(abs(x.min()), abs(x.max())) * max(abs(lo[0]), abs(hi[0])) / 2147483647.0
    return [_sat(x * first * 127.0 / real, np.int8), _f(-real), _f(real)]


def _pool_ref(x, lo, hi):
    n, c, h, w = x.shape
    y = x[:, :, :h // 2 * 2, :w // 2 * 2].reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))
    return [y, lo, hi]


def _add_ref(a, b, alo, ahi, blo, bhi):
    ra, rb = max(abs(alo[0]), abs(ahi[0])), max(abs(blo[0]), abs(bhi[0]))
    total = ra + rb
    y = a * (ra * 2147483647 / (total * 127.5)) + b * (rb * 2147483647 / (total * 127.5))
    return [_sat(y, np.int32), _f(-total), _f(total)]


def _mul_ref(a, b, alo, ahi, blo, bhi):
    top = np.float32(max(abs(alo[0]), abs(ahi[0])) / 127 * max(abs(blo[0]), abs(bhi[0])) / 127
                     * 2147483647)
    return [a.astype(np.int32) * b.astype(np.int32), _f(-top), _f(top)]


def _concat_ref(a, b, alo, ahi, blo, bhi):
    lo, hi = min(0, alo[0], blo[0]), max(0, ahi[0], bhi[0])
    out_scale = 127.5 / max(abs(lo), abs(hi))
    parts = [_sat(a * (out_scale / (127.5 / max(abs(alo[0]), abs(ahi[0])))), np.int8),
             _sat(b * (out_scale / (255.5 / max(abs(blo[0]), abs(bhi[0])))), np.int8)]
    return [np.concatenate(parts, axis=1), _f(lo), _f(hi)]


R = np.random.RandomState(7)
_X = R.uniform(-2, 1.5, size=(2, 3, 4, 5)).astype(np.float32)
_ACC = R.randint(-50000, 50000, size=(3, 7)).astype(np.int32)
_I8 = R.randint(-128, 128, size=(2, 3, 4, 5)).astype(np.int8)
_U8 = R.randint(0, 256, size=(2, 3, 4, 5)).astype(np.uint8)
_W = R.randint(-128, 128, size=(4, 3, 3, 3)).astype(np.int8)
_B = R.randint(-128, 128, size=(4,)).astype(np.int8)
_FW = R.randint(-128, 128, size=(6, 60)).astype(np.int8)
_FB = R.randint(-128, 128, size=(6,)).astype(np.int8)
_R = [_f(-1.0), _f(2.0)]

def _case(op, attrs, arrays, ref):
    """An OpCase over fixed arrays (their shapes and dtypes: the ranges are float32)."""
    return OpCase(op, attrs, [a.shape for a in arrays], inputs=_case_inputs(arrays), ref=ref,
                  grad=(), dtypes=('float32',), input_dtypes=[a.dtype.name for a in arrays])


CASES = [
    _case('_contrib_quantize_v2', {}, [_X], _quantize_v2_ref('int8')),
    _case('_contrib_quantize_v2', {'out_type': 'uint8'}, [np.abs(_X)],
          _quantize_v2_ref('uint8')),
    _case('_contrib_quantize_v2', {'min_calib_range': -1.0, 'max_calib_range': 0.5}, [_X],
          _quantize_v2_ref('int8', -1.0, 0.5)),
    _case('_contrib_quantize_v2', {'out_type': 'auto', 'min_calib_range': 0.0,
                                   'max_calib_range': 1.25}, [np.abs(_X)],
          _quantize_v2_ref('uint8', 0.0, 1.25)),
    _case('_contrib_requantize', {}, [_ACC, _f(-500.0), _f(800.0)], _requantize_ref),
    _case('_contrib_quantized_pooling', {'kernel': (2, 2), 'stride': (2, 2)}, [_I8] + _R,
          _pool_ref),
    _case('_contrib_quantized_act', {'act_type': 'relu'}, [_I8] + _R,
          lambda x, lo, hi: [np.maximum(x, 0), lo, hi]),
    _case('_contrib_quantized_flatten', {}, [_U8] + _R,
          lambda x, lo, hi: [x.reshape(2, 60), lo, hi]),
    _case('_contrib_quantized_elemwise_add', {},
          [_I8, _I8[::-1].copy(), _f(-1.0), _f(2.0), _f(-0.5), _f(0.25)], _add_ref),
    _case('_contrib_quantized_elemwise_mul', {},
          [_I8, _I8[::-1].copy(), _f(-1.0), _f(2.0), _f(-0.5), _f(0.25)], _mul_ref),
    _case('_contrib_quantized_concat', {'num_args': 2, 'dim': 1},
          [_I8, _U8, _f(-1.0), _f(1.0), _f(0.0), _f(3.0)], _concat_ref),
]

test_forward, test_gradient = case_tests(CASES)


def test_errors_name_the_problem():
    with pytest.raises(mx.MXNetError, match='relu'):
        get_op('_contrib_quantized_act')(act_type='tanh')
    with pytest.raises(mx.MXNetError, match='pool_type'):
        get_op('_contrib_quantized_pooling')(kernel=(2, 2), pool_type='sum')
    with pytest.raises(mx.MXNetError, match='int32'):
        mx.nd.contrib.requantize(mx.nd.ones((2,), dtype='int8'), mx.nd.zeros((1,)),
                                 mx.nd.ones((1,)))
    with pytest.raises(mx.MXNetError, match='one value'):
        get_op('_contrib_quantized_act')(act_type='relu').infer_shape([(2, 3), (2,), (1,)])
    with pytest.raises(mx.MXNetError, match='min_calib_range'):
        op = get_op('_contrib_quantized_batch_norm')()
        op.forward(np, [_I8, _f(1.0).repeat(3), _f(0.0).repeat(3), _f(-1.0), _f(1.0)],
                   [np.zeros(3, np.float32), np.ones(3, np.float32)], False)


def test_int8_round_trip_is_within_one_step():
    """quantize_v2 then dequantize gives back the data within one quantization step."""
    x = mx.nd.array(_X)
    q, lo, hi = mx.nd.contrib.quantize_v2(x, min_calib_range=-2.0, max_calib_range=2.0)
    back = mx.nd.contrib.dequantize(q, lo, hi).asnumpy()
    assert np.abs(back - np.clip(_X, -2, 2)).max() <= 2.0 / 127 + 1e-6
