"""slice_like (ops/slicing.py) against loop references, plus
their shape rules and errors (values from MXNet 1.9.1 are in tests/golden, cases shapex_*)."""
import numpy as np
import pytest

import symgraph as mx
from _refs import _infer, X, Y
from harness import case_tests, OpCase
from symgraph.opdef import ShapeError


def _slice_like_ref(axes):
    def ref(x, like):
        ax = [a % x.ndim for a in axes] or range(x.ndim)
        return x[tuple(slice(0, like.shape[i]) if i in ax else slice(None)
                       for i in range(x.ndim))]
    return ref


CASES = [
    OpCase('slice_like', {}, [(4, 5, 3), (2, 3, 3)], ref=_slice_like_ref(()), grad=(0,)),
    OpCase('slice_like', dict(axes=(0, -1)), [(4, 5, 6), (2, 7, 4)],
           ref=_slice_like_ref((0, -1)), grad=(0,)),
    OpCase('slice_like', dict(axes=(1,)), [(3, 5), (1, 2, 9)], ref=_slice_like_ref((1,)),
           grad=(0,)),
]


test_forward, test_gradient = case_tests(CASES)


def test_slice_like_shapes_and_errors():
    sl = mx.sym.slice_like
    assert _infer(sl(X, Y), x=(4, 5, 6), y=(2, 3, 4)) == [(2, 3, 4)]
    assert _infer(sl(X, Y, axes=(0,)), x=(4, 5, 6), y=(2, 3)) == [(2, 5, 6)]
    assert _infer(sl(X, Y, axes=(1, -1)), x=(4, 5, 6), y=(2, 3, 4)) == [(4, 3, 4)]
    with pytest.raises(ShapeError, match='same number of dimensions'):
        sl(X, Y).infer_shape(x=(4, 5, 6), y=(2, 3))
    with pytest.raises(ShapeError, match='exceeds shape_like'):
        sl(X, Y, axes=(2,)).infer_shape(x=(4, 5, 6), y=(2, 3))
    with pytest.raises(ShapeError, match='exceeds data'):
        sl(X, Y, axes=(3,)).infer_shape(x=(4, 5, 6), y=(2, 3, 4))
    with pytest.raises(ShapeError, match='longer'):
        sl(X, Y).infer_shape(x=(4, 5, 6), y=(2, 3, 7))
    types = sl(X, Y).infer_type(x='float32', y='int32')
    assert types[0] == [np.float32, np.int32] and types[1] == [np.float32]
