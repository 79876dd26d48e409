"""khatri_rao (ops/dot.py) against a column-wise Kronecker reference, plus its shape and
type rules (golden values from MXNet 1.9.1 are in tests/golden/graphs_compute_indexing_extra.py)."""
import numpy as np
import pytest

import symgraph as mx
from _refs import _v
from harness import case_tests, OpCase
from symgraph.opdef import ShapeError, TypeInferenceError


def _khatri_rao_ref(*mats):
    n = mats[0].shape[1]
    cols = []
    for j in range(n):
        col = np.ones(1)
        for m in mats:
            col = np.kron(col, m[:, j])
        cols.append(col)
    return np.stack(cols, axis=1).astype(mats[0].dtype)


CASES = [
    OpCase('khatri_rao', dict(num_args=1), [(3, 2)], ref=_khatri_rao_ref, grad=()),
    OpCase('khatri_rao', dict(num_args=2), [(2, 3), (4, 3)], ref=_khatri_rao_ref, grad=()),
    OpCase('khatri_rao', dict(num_args=3), [(2, 2), (3, 2), (2, 2)], ref=_khatri_rao_ref, grad=()),
]


test_forward, test_gradient = case_tests(CASES)


def test_khatri_rao_rules():
    a, b = _v('a', 'b')
    k = mx.sym.khatri_rao(a, b, name='k')
    assert k.list_attr()['num_args'] == '2'
    assert mx.sym.khatri_rao(num_args=2, name='z').list_arguments() == ['z_arg0', 'z_arg1']
    assert k.infer_shape(a=(2, 3), b=(4, 3))[1] == [(8, 3)]
    with pytest.raises(ShapeError, match="'arg1' has 2 columns but the other inputs 3"):
        k.infer_shape(a=(2, 3), b=(4, 2))
    with pytest.raises(ShapeError, match='must be a matrix'):
        k.infer_shape(a=(3,), b=(3,))
    with pytest.raises(TypeInferenceError, match='float32 and float64'):
        k.infer_type(a='float16', b='float16')
    out = mx.nd.khatri_rao(mx.nd.array([[1, -1], [2, -3]]), mx.nd.array([[1, 4], [2, 5],
                                                                         [3, 6]]))
    np.testing.assert_array_equal(out.asnumpy(), [[1, -4], [2, -5], [3, -6], [2, -12],
                                                  [4, -15], [6, -18]])   # MXNet's doc example
