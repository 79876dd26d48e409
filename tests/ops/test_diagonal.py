"""diag (ops/diagonal.py) against loop references, plus
their shape rules and errors (values from MXNet 1.9.1 are in tests/golden, cases shapex_*)."""
import numpy as np
import pytest

import symgraph as mx
from _refs import F16, _infer, X
from harness import case_tests, OpCase
from symgraph.opdef import ShapeError


def _diag_ref(k=0, axis1=0, axis2=1):
    def ref(x):
        if x.ndim == 1:
            n = x.shape[0] + abs(k)
            out = np.zeros((n, n), x.dtype)
            for i in range(x.shape[0]):
                out[i + max(-k, 0), i + max(k, 0)] = x[i]
            return out
        a1, a2 = axis1 % x.ndim, axis2 % x.ndim
        rest = [i for i in range(x.ndim) if i not in (a1, a2)]
        vals = []
        for i in range(x.shape[a1] + x.shape[a2]):
            r, c = i + max(-k, 0), i + max(k, 0)
            if r >= x.shape[a1] or c >= x.shape[a2]:
                break
            idx = [slice(None)] * x.ndim
            idx[a1], idx[a2] = r, c
            vals.append(x[tuple(idx)])
        return np.stack(vals, axis=-1).reshape([x.shape[i] for i in rest] + [len(vals)])
    return ref


CASES = [
    OpCase('diag', {}, [(4,)], ref=_diag_ref()),
    OpCase('diag', dict(k=2), [(3,)], ref=_diag_ref(2)),
    OpCase('diag', dict(k=-1), [(3,)], ref=_diag_ref(-1)),
    OpCase('diag', {}, [(3, 4)], ref=_diag_ref()),
    OpCase('diag', dict(k=1), [(3, 4)], ref=_diag_ref(1), dtypes=F16),
    OpCase('diag', dict(k=-2), [(4, 3)], ref=_diag_ref(-2)),
    OpCase('diag', dict(axis1=2, axis2=0), [(2, 3, 4)], ref=_diag_ref(0, 2, 0)),
    OpCase('diag', dict(k=1, axis1=-1, axis2=1), [(2, 3, 4)], ref=_diag_ref(1, -1, 1)),
]


test_forward, test_gradient = case_tests(CASES)


def test_diag_shapes_and_errors_as_in_mxnet():
    assert _infer(mx.sym.diag(X, k=-2), x=(3,)) == [(5, 5)]
    assert _infer(mx.sym.diag(X, k=4), x=(3, 4)) == [(0,)]      # empty, as MXNet
    assert _infer(mx.sym.diag(X, k=-3), x=(3, 4)) == [(0,)]
    assert _infer(mx.sym.diag(X), x=(2, 3, 4)) == [(4, 2)]
    for k in (5, -4):
        with pytest.raises(ShapeError, match='does not exist'):
            mx.sym.diag(X, k=k).infer_shape(x=(3, 4))
    with pytest.raises(ShapeError, match='same axis'):
        mx.sym.diag(X, axis1=1, axis2=-2).infer_shape(x=(2, 3, 4))
    with pytest.raises(ShapeError, match='out of range'):
        mx.sym.diag(X, axis1=3).infer_shape(x=(2, 3, 4))
    out = mx.nd.diag(mx.nd.array([1, 2, 3], dtype='int32'))
    assert out.dtype == np.int32 and out.asnumpy().tolist() == np.diag([1, 2, 3]).tolist()
