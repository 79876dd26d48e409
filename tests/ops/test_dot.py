"""dot, batch_dot and khatri_rao (ops/dot.py) against NumPy / column-wise Kronecker references,
plus their shape and type rules (khatri_rao's golden values from MXNet 1.9.1 are in
tests/golden/graphs_compute_indexing_extra.py)."""
import numpy as np
import pytest

import symgraph as mx
from _refs import _v
from harness import case_tests, OpCase
from symgraph.opdef import ShapeError, TypeInferenceError, get_op


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


def _dot_ref(ta=False, tb=False):
    def f(a, b):
        a2 = a.reshape(a.shape[0], -1).T if ta and a.ndim > 1 else a
        b2 = b.reshape(-1, b.shape[-1]).T if tb and b.ndim > 1 else b
        if ta and a.ndim > 1:
            out = np.tensordot(a2, b2, axes=1).reshape(a.shape[1:] + b2.shape[1:])
        else:
            out = np.tensordot(a2, b2, axes=1)
        if tb and b.ndim > 1:
            out = out.reshape(out.shape[:out.ndim - 1] + b.shape[:-1])
        return out.reshape(out.shape or (1,))
    return f

def _bdot_ref(ta=False, tb=False):
    def f(a, b):
        a = np.swapaxes(a, -1, -2) if ta else a
        b = np.swapaxes(b, -1, -2) if tb else b
        return np.einsum('...ij,...jk->...ik', a, b)
    return f


DOT_CASES = [
    OpCase('dot', {}, [(2, 3, 4), (4, 5, 2)], ref=_dot_ref()),
    OpCase('dot', dict(transpose_a=True), [(2, 3, 4), (2, 5)], ref=_dot_ref(True)),
    OpCase('dot', dict(transpose_b=True), [(2, 3, 4), (5, 2, 4)], ref=_dot_ref(False, True)),
    OpCase('dot', dict(transpose_a=True, transpose_b=True), [(3, 2), (4, 3)],
           ref=lambda a, b: a.T @ b.T),
    OpCase('dot', {}, [(4,), (4,)], ref=lambda a, b: np.array([a @ b])),
    OpCase('dot', {}, [(4,), (4, 3)], ref=lambda a, b: a @ b),
    OpCase('dot', dict(transpose_b=True), [(2, 4), (4,)], ref=lambda a, b: a @ b),
    OpCase('batch_dot', {}, [(2, 3, 4), (2, 4, 5)], ref=_bdot_ref()),
    OpCase('batch_dot', dict(transpose_a=True, transpose_b=True), [(2, 4, 3), (2, 5, 4)],
           ref=_bdot_ref(True, True)),
    OpCase('batch_dot', dict(transpose_b=True), [(2, 3, 3, 4), (2, 3, 5, 4)],
           ref=_bdot_ref(False, True)),
]


test_forward, test_gradient = case_tests(CASES + DOT_CASES)


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


@pytest.mark.parametrize('a, b, ta, tb, out', [
    ((2, 3, 4), (4, 5, 6), False, False, (2, 3, 5, 6)),
    ((2, 3, 4), (2, 5, 6), True, False, (3, 4, 5, 6)),
    ((2, 3, 4), (5, 6, 4), False, True, (2, 3, 5, 6)),
    ((4,), (4,), False, False, (1,)),
    ((4,), (4, 3), True, False, (3,)),
    ((1, 4), (1, 3), True, False, (4, 3)),
])
def test_dot_shapes(a, b, ta, tb, out):
    """Shapes observed on MXNet 1.9.1."""
    op = get_op('dot')(transpose_a=ta, transpose_b=tb)
    assert op.infer_shape([a, b])[1] == [out]


def test_dot_shape_errors():
    with pytest.raises(ShapeError, match="'lhs'"):
        get_op('dot')().infer_shape([(2, 3), (4, 5)])
    with pytest.raises(ShapeError, match="'lhs'"):
        get_op('batch_dot')().infer_shape([(2, 3, 4), (3, 4, 5)])
