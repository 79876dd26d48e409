"""``_linalg_gelqf`` and ``_linalg_syevd`` (ops/linalg_factor.py) against NumPy references,
their defining identities, MXNet's docstring examples and shape rules. MXNet 1.9.1's values
(forward, gradients, which triangle syevd reads) are in tests/golden, cases
splitidx_gelqf* / splitidx_syevd*."""
import numpy as np
import pytest

import symgraph as mx
from harness import case_tests, OpCase
from symgraph.opdef import ShapeError, TypeInferenceError, get_op


def _gelqf_ref(a):
    """Per matrix: LAPACK's QR of A^T (the reflectors of gelqf) transposed."""
    a = a.astype(np.float64)
    q = np.empty_like(a)
    lo = np.empty(a.shape[:-1] + a.shape[-2:-1], np.float64)
    for b in np.ndindex(*a.shape[:-2]):
        qt, r = np.linalg.qr(a[b].T)
        q[b], lo[b] = qt.T, r.T
    return [q, lo]


def _syevd_ref(a):
    """Per matrix: eigenvalues ascending, eigenvector rows with their largest entry > 0."""
    a = a.astype(np.float64)
    u = np.empty_like(a)
    w = np.empty(a.shape[:-1])
    for b in np.ndindex(*a.shape[:-2]):
        sym = np.tril(a[b]) + np.tril(a[b], -1).T         # the lower triangle is read
        vals, vecs = np.linalg.eigh(sym)
        w[b] = vals
        for i in range(len(vals)):
            row = vecs[:, i]
            u[b + (i,)] = -row if row[np.argmax(np.abs(row))] < 0 else row
    return [u, w]


def _wide(rng, shapes, dtype):
    return [rng.uniform(-1, 1, shapes[0]) + np.eye(*shapes[0][-2:])]


def _symmetric(garbage):
    def make(rng, shapes, dtype):
        s = shapes[0]
        m = rng.uniform(-1, 1, s)
        a = m + np.swapaxes(m, -1, -2) + np.diag(np.arange(s[-1]) * 1.5)  # distinct eigvals
        if garbage:
            a = np.tril(a) + np.triu(rng.uniform(-3, 3, s), 1)
        return [a]
    return make


def _syevd_grad_ref(inputs, outputs, out_grads, eps=1e-6):
    """Central differences over the lower triangle, symmetrized: MXNet's gradient is that
    of ``syevd((A + A^T) / 2)`` (see ops/linalg_factor.py)."""
    a = inputs[0].astype(np.float64).copy()

    def f():
        u, w = _syevd_ref(a)
        return float((out_grads[0] * u).sum() + (out_grads[1] * w).sum())
    num = np.zeros_like(a)
    for b in np.ndindex(*a.shape[:-2]):
        for i, j in zip(*np.tril_indices(a.shape[-1])):
            k = b + (i, j)
            old = a[k]
            a[k] = old + eps
            fp = f()
            a[k] = old - eps
            fm = f()
            a[k] = old
            num[k] = (fp - fm) / (2 * eps)
    return [(num + np.swapaxes(num, -1, -2)) / 2]


_LOOSE = dict(rtol=1e-4, atol=1e-5)
CASES = [
    OpCase('_linalg_gelqf', {}, [(3, 5)], inputs=_wide, ref=_gelqf_ref, **_LOOSE),
    OpCase('linalg_gelqf', {}, [(2, 2, 4)], inputs=_wide, ref=_gelqf_ref, **_LOOSE),
    OpCase('_linalg_gelqf', {}, [(3, 3)], inputs=_wide, ref=_gelqf_ref, **_LOOSE),
    OpCase('_linalg_syevd', {}, [(4, 4)], inputs=_symmetric(True), ref=_syevd_ref,
           grad_ref=_syevd_grad_ref, **_LOOSE),
    OpCase('_linalg_syevd', {}, [(2, 3, 3)], inputs=_symmetric(False), ref=_syevd_ref,
           grad_ref=_syevd_grad_ref, **_LOOSE),
]

test_forward, test_gradient = case_tests(CASES)


def test_gelqf_identities_and_mxnet_example():
    a = np.random.RandomState(3).uniform(-1, 1, (2, 3, 5))
    q, lo = (o.asnumpy() for o in mx.nd.linalg.gelqf(mx.nd.array(a, dtype='float64')))
    np.testing.assert_allclose(np.matmul(lo, q), a, atol=1e-12)
    np.testing.assert_allclose(np.matmul(q, np.swapaxes(q, 1, 2)), [np.eye(3)] * 2, atol=1e-12)
    assert np.all(np.triu(lo, 1) == 0)
    # MXNet 1.9.1's docstring example
    q, lo = mx.nd.linalg.gelqf(mx.nd.array([[1., 2., 3.], [4., 5., 6.]]))
    np.testing.assert_allclose(q.asnumpy(), [[-0.26726124, -0.53452248, -0.80178373],
                                             [0.87287156, 0.21821789, -0.43643578]], rtol=1e-5)
    np.testing.assert_allclose(lo.asnumpy(), [[-3.74165739, 0.], [-8.55235974, 1.96396101]],
                               rtol=1e-5)


def test_syevd_identities_and_mxnet_example():
    u, w = mx.nd.linalg.syevd(mx.nd.array([[[1., 2.], [2., 4.]], [[1., 2.], [2., 5.]]]))
    np.testing.assert_allclose(u.asnumpy(), [[[0.89442719, -0.4472136], [0.4472136, 0.89442719]],
                                             [[0.92387953, -0.38268343],
                                              [0.38268343, 0.92387953]]], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w.asnumpy(), [[0., 5.], [0.17157288, 5.82842712]], atol=1e-5)
    a = _symmetric(False)(np.random.RandomState(0), [(5, 5)], 'float64')[0]
    u, w = (o.asnumpy() for o in mx.nd.linalg.syevd(mx.nd.array(a, dtype='float64')))
    np.testing.assert_allclose(u @ a, np.diag(w) @ u, atol=1e-12)
    assert np.all(np.diff(w) > 0)


def test_shapes_names_and_errors():
    x = mx.sym.var('x')
    s = mx.sym.linalg.gelqf(x, name='lq')
    assert s.list_outputs() == ['lq_output0', 'lq_output1']
    assert s.infer_shape(x=(4, 2, 5))[1] == [(4, 2, 5), (4, 2, 2)]
    s = mx.sym.linalg.syevd(x, name='ev')
    assert s.infer_shape(x=(3, 4, 4))[1] == [(3, 4, 4), (3, 4)]
    with pytest.raises(ShapeError, match='no more rows than columns'):
        get_op('_linalg_gelqf')().infer_shape([(5, 3)])
    with pytest.raises(ShapeError, match='square'):
        get_op('_linalg_syevd')().infer_shape([(3, 4)])
    with pytest.raises(TypeInferenceError, match='float32 and float64'):
        get_op('_linalg_syevd')().infer_type([np.dtype('int32')])
    assert not hasattr(mx.sym, 'linalg_syevd')      # no such alias in MXNet 1.9.1
