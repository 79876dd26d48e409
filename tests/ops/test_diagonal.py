"""diag and linalg extractdiag / makediag / extracttrian / maketrian (ops/diagonal.py) against
loop references, plus their shape rules and errors (values from MXNet 1.9.1 are in tests/golden,
cases shapex_* and linalg_*); test_linalg.py's namespace and doc-example tests also call the
linalg ones."""
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


# linalg.extractdiag / makediag / extracttrian / maketrian (golden values and gradients from
# MXNet 1.9.1: tests/golden, linalg_* cases)
def _trian_rc(n, offset, lower):
    """MXNet's order: lower triangles row by row, upper ones column by column."""
    if offset < 0 or (offset == 0 and lower):
        return [(i, j) for i in range(n) for j in range(n) if j <= i + offset]
    return [(i, j) for j in range(n) for i in range(n) if j >= i + offset]


def _extracttrian_ref(offset=0, lower=True):
    def f(a):
        rc = _trian_rc(a.shape[-1], offset, lower)
        return np.stack([a[..., i, j] for i, j in rc], axis=-1)
    return f


def _maketrian_ref(offset=0, lower=True):
    def f(v):
        m = int(round((np.sqrt(8 * v.shape[-1] + 1) - 1) / 2))
        n = m + abs(offset)
        out = np.zeros(v.shape[:-1] + (n, n), v.dtype)
        for k, (i, j) in enumerate(_trian_rc(n, offset, lower)):
            out[..., i, j] = v[..., k]
        return out
    return f


def _makediag_ref(offset=0):
    def f(v):
        n = v.shape[-1] + abs(offset)
        out = np.zeros(v.shape[:-1] + (n, n), v.dtype)
        for k in range(v.shape[-1]):
            out[..., k + max(-offset, 0), k + max(offset, 0)] = v[..., k]
        return out
    return f


LINALG_CASES = []
for _off in (0, 2, -1):
    LINALG_CASES += [
        OpCase('_linalg_extractdiag', dict(offset=_off), [(4, 4)],
               ref=lambda a, o=_off: np.diagonal(a, o, -2, -1)),
        OpCase('_linalg_extractdiag', dict(offset=_off), [(2, 3, 4, 4)],
               ref=lambda a, o=_off: np.diagonal(a, o, -2, -1)),
        OpCase('_linalg_makediag', dict(offset=_off), [(3,)], ref=_makediag_ref(_off)),
        OpCase('_linalg_makediag', dict(offset=_off), [(2, 3, 2)], ref=_makediag_ref(_off)),
    ]
for _off, _lo in ((0, True), (0, False), (1, True), (-2, False), (3, True)):
    LINALG_CASES += [
        OpCase('_linalg_extracttrian', dict(offset=_off, lower=_lo), [(4, 4)],
               ref=_extracttrian_ref(_off, _lo)),
        OpCase('_linalg_extracttrian', dict(offset=_off, lower=_lo), [(2, 3, 4, 4)],
               ref=_extracttrian_ref(_off, _lo)),
        OpCase('_linalg_maketrian', dict(offset=_off, lower=_lo), [(6,)],
               ref=_maketrian_ref(_off, _lo)),
        OpCase('_linalg_maketrian', dict(offset=_off, lower=_lo), [(2, 3, 10)],
               ref=_maketrian_ref(_off, _lo)),
    ]
LINALG_CASES += [
    OpCase('linalg_extractdiag', {}, [(1, 1)], ref=lambda a: np.diagonal(a, 0, -2, -1)),
    OpCase('linalg_makediag', dict(offset=1), [(1,)], ref=_makediag_ref(1)),
    OpCase('linalg_extracttrian', {}, [(1, 1)], ref=_extracttrian_ref()),
    OpCase('linalg_maketrian', dict(lower=False), [(1,)], ref=_maketrian_ref(0, False)),
]


test_forward, test_gradient = case_tests(CASES + LINALG_CASES)


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
