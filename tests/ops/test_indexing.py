"""batch_take (ops/indexing.py) against a loop reference, plus its shape, type and index
rules (golden values from MXNet 1.9.1 are in tests/golden/graphs_compute_indexing_extra.py)."""
import numpy as np
import pytest

import symgraph as mx
from _refs import _v, _with_index
from harness import case_tests, OpCase
from symgraph.opdef import ShapeError, TypeInferenceError


def _batch_take_ref(a, indices):
    rows = a.reshape(-1, a.shape[-1])
    flat = indices.reshape(-1)
    out = [rows[r, min(max(int(flat[r]), 0), a.shape[-1] - 1)] for r in range(len(flat))]
    return np.array(out, a.dtype).reshape(indices.shape)


CASES = [
    OpCase('batch_take', {}, [(4, 3), (4,)], ref=_batch_take_ref, grad=(),
           inputs=_with_index([0, 2, 5, -1], dtype='int32')),
    OpCase('batch_take', {}, [(2, 3, 4), (3, 2)], ref=_batch_take_ref, grad=(),
           inputs=_with_index([[0, 1], [2, 3], [3, 0]], dtype='int32')),
]


test_forward, test_gradient = case_tests(CASES)


def test_batch_take_rules():
    a, i = _v('a', 'i')
    b = mx.sym.batch_take(a, i, name='b')
    assert b.infer_shape(a=(2, 3, 4), i=(3, 2))[1] == [(3, 2)]
    assert b.infer_type(a='float64')[0] == [np.float64, np.int32]
    with pytest.raises(ShapeError, match="'indices' has shape \\(5,\\)"):
        b.infer_shape(a=(3, 4), i=(5,))
    with pytest.raises(ShapeError, match='at least 2'):
        b.infer_shape(a=(3,), i=(3,))
    with pytest.raises(TypeInferenceError, match='int32'):
        b.infer_type(a='float32', i='float32')
    out = mx.nd.batch_take(mx.nd.array(np.arange(12.0).reshape(3, 4)),
                           mx.nd.array([0, 100, -50], dtype='int32'))
    np.testing.assert_array_equal(out.asnumpy(), [0, 7, 8])            # clipped, as MXNet
