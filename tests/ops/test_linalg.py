"""Linear algebra (ops/linalg.py) against NumPy references, plus shape rules, errors and the
``mx.nd.linalg`` / ``mx.sym.linalg`` namespaces; golden values and gradients from MXNet
1.9.1 are in tests/golden (``linalg_*`` cases).

Inputs are well conditioned: SPD matrices for potrf, nonsingular ones (some with a negative
determinant) for inverse/det/slogdet, triangular factors with a diagonal of magnitude >= 1.5
for trsm/potri. The triangle an operator does not read is filled with other random numbers,
so that the forward and the gradient show it is ignored.
"""
import itertools

import numpy as np
import pytest

import symgraph as mx
from harness import case_tests, OpCase
from symgraph.base import MXNetError
from symgraph.opdef import ShapeError, TypeInferenceError, get_op
from symgraph.opdef import positional_params


def _t(m):
    return np.swapaxes(m, -1, -2)


def _in64(ref):
    """A reference computed in float64 and given back in the inputs' type."""
    def f(*xs):
        out = ref(*[x.astype(np.float64) for x in xs])
        outs = out if isinstance(out, list) else [out]
        res = [np.asarray(o).astype(xs[0].dtype) for o in outs]
        return res if isinstance(out, list) else res[0]
    return f


# ----------------------------------------------------------------------------------
# input makers (float64; the harness casts)
# ----------------------------------------------------------------------------------
def _triangular(lower=True, garbage=True):
    """A triangular factor with a diagonal of magnitude in [1.5, 2.5] (either sign) and small
    off-diagonal entries; the other triangle holds unrelated numbers unless not ``garbage``."""
    def make(rng, shapes, dtype):
        s = shapes[0]
        n = s[-1]
        a = rng.uniform(-0.5, 0.5, s)
        d = rng.uniform(1.5, 2.5, s[:-1]) * rng.choice([-1, 1], s[:-1])
        a[..., np.arange(n), np.arange(n)] = d
        keep = np.tril(a) if lower else np.triu(a)
        other = rng.uniform(-3, 3, s)
        a = keep + ((np.triu(other, 1) if lower else np.tril(other, -1)) if garbage else 0)
        return [a] + [rng.uniform(-1, 1, t) for t in shapes[1:]]
    return make


def _spd(garbage=True):
    """Symmetric positive definite matrices ``M M^T / n + I``; with ``garbage`` the upper
    triangle is replaced by unrelated numbers (potrf reads the lower one only)."""
    def make(rng, shapes, dtype):
        s = shapes[0]
        n = s[-1]
        m = rng.uniform(-1, 1, s)
        a = np.matmul(m, _t(m)) / n + np.eye(n)
        if garbage:
            a = np.tril(a) + np.triu(rng.uniform(-3, 3, s), 1)
        return [a]
    return make


def _nonsingular(rng, shapes, dtype):
    """``D (R + 2.5 I)``: R uniform(-0.5, 0.5), D a random +-1 diagonal (negative
    determinants too)."""
    s = shapes[0]
    n = s[-1]
    a = rng.uniform(-0.5, 0.5, s) + 2.5 * np.eye(n)
    sign = rng.choice([-1.0, 1.0], s[:-1])
    return [a * sign[..., :, None]]


def _positive_diag(rng, shapes, dtype):
    s = shapes[0]
    a = rng.uniform(-1, 1, s)
    n = s[-1]
    a[..., np.arange(n), np.arange(n)] = rng.uniform(0.5, 2.0, s[:-1])
    return [a]


# ----------------------------------------------------------------------------------
# references
# ----------------------------------------------------------------------------------
def _gemm_ref(ta=False, tb=False, alpha=1.0, beta=1.0, axis=-2, with_c=True):
    def f(a, b, c=None):
        ax = axis % a.ndim
        a2, b2 = np.moveaxis(a, ax, -2), np.moveaxis(b, ax, -2)
        a2 = _t(a2) if ta else a2
        b2 = _t(b2) if tb else b2
        out = np.moveaxis(alpha * (a2 @ b2), -2, ax)
        return out + beta * c if with_c else out
    return f


def _syrk_ref(transpose=False, alpha=1.0):
    return lambda a: alpha * (_t(a) @ a if transpose else a @ _t(a))


def _op_tri(a, lower, transpose):
    tri = np.tril(a) if lower else np.triu(a)
    return _t(tri) if transpose else tri


def _trmm_ref(transpose=False, rightside=False, lower=True, alpha=1.0):
    def f(a, b):
        oa = _op_tri(a, lower, transpose)
        return alpha * (b @ oa if rightside else oa @ b)
    return f


def _trsm_ref(transpose=False, rightside=False, lower=True, alpha=1.0):
    def f(a, b):
        inv = np.linalg.inv(_op_tri(a, lower, transpose))
        return alpha * (b @ inv if rightside else inv @ b)
    return f


def _potrf_ref(a):
    return np.linalg.cholesky(np.tril(a) + _t(np.tril(a, -1)))


def _potri_ref(a):
    low = np.tril(a)
    return np.linalg.inv(low @ _t(low))


def _per_matrix(fn):
    def f(a):
        out = fn(a)
        return np.reshape(out, a.shape[:-2] or (1,))
    return f


def _slogdet_ref(a):
    sign, logdet = np.linalg.slogdet(a)
    shape = a.shape[:-2] or (1,)
    return [sign.reshape(shape), logdet.reshape(shape)]


def _symmetric_numeric_grad(ref, eps=1e-6):
    """``grad_ref`` for potrf: central differences of ``sum(w * ref(A))`` over the lower
    triangle (all that the forward reads), made symmetric.

    MXNet's potrf gradient is the symmetric ``0.5 L^-T copyLTU(L^T dL) L^-1``, the gradient
    of ``potrf((A + A^T) / 2)``; the plain numeric gradient of a lower-triangle reader
    instead has ``g_ij + g_ji`` below the diagonal and zeros above it. With N that numeric
    gradient, ``(N + N^T) / 2`` is MXNet's form, so the check compares with that (and the
    executor-level numeric check of test_registry does not apply to this operator).
    """
    def grad_ref(inputs, outputs, out_grads):
        a = inputs[0].astype(np.float64).copy()
        w = out_grads[0]
        num = np.zeros_like(a)
        rows, cols = np.tril_indices(a.shape[-1])
        for batch in np.ndindex(*a.shape[:-2]):
            for i, j in zip(rows, cols):
                k = batch + (i, j)
                old = a[k]
                a[k] = old + eps
                lp = float((w * ref(a)).sum())
                a[k] = old - eps
                lm = float((w * ref(a)).sum())
                a[k] = old
                num[k] = (lp - lm) / (2 * eps)
        return [(num + _t(num)) / 2]
    return grad_ref


# ----------------------------------------------------------------------------------
# cases
# ----------------------------------------------------------------------------------
_LOOSE = dict(rtol=1e-4, atol=1e-5)       # float32 factorisations against float64 NumPy

CASES = [
    OpCase('_linalg_gemm', {}, [(3, 4), (4, 5), (3, 5)], ref=_gemm_ref()),
    OpCase('_linalg_gemm', dict(transpose_a=True, alpha=0.7, beta=-1.5),
           [(2, 4, 3), (2, 4, 5), (2, 3, 5)], ref=_gemm_ref(True, alpha=0.7, beta=-1.5)),
    OpCase('_linalg_gemm', dict(transpose_b=True, beta=0.0),
           [(2, 2, 3, 4), (2, 2, 5, 4), (2, 2, 3, 5)], ref=_gemm_ref(tb=True, beta=0.0)),
    OpCase('linalg_gemm', dict(transpose_a=True, transpose_b=True, alpha=2.0),
           [(4, 3), (5, 4), (3, 5)], ref=_gemm_ref(True, True, alpha=2.0)),
    OpCase('_linalg_gemm', dict(axis=0, transpose_b=True), [(3, 2, 4), (5, 2, 4), (3, 2, 5)],
           ref=_gemm_ref(tb=True, axis=0)),
    OpCase('_linalg_gemm', dict(axis=-3, transpose_a=True, alpha=0.5),
           [(2, 4, 2, 3), (2, 4, 2, 5), (2, 3, 2, 5)],
           ref=_gemm_ref(True, alpha=0.5, axis=-3)),
    OpCase('_linalg_gemm2', {}, [(3, 4), (4, 5)], ref=_gemm_ref(with_c=False)),
    OpCase('_linalg_gemm2', dict(transpose_a=True), [(2, 4, 3), (2, 4, 5)],
           ref=_gemm_ref(True, with_c=False)),
    OpCase('_linalg_gemm2', dict(transpose_b=True, alpha=-0.5), [(2, 3, 3, 4), (2, 3, 5, 4)],
           ref=_gemm_ref(tb=True, alpha=-0.5, with_c=False)),
    OpCase('linalg_gemm2', dict(transpose_a=True, transpose_b=True), [(4, 3), (5, 4)],
           ref=_gemm_ref(True, True, with_c=False)),
    OpCase('_linalg_gemm2', dict(axis=0), [(3, 2, 4), (4, 2, 5)],
           ref=_gemm_ref(axis=0, with_c=False)),
    OpCase('_linalg_gemm2', dict(axis=1, transpose_a=True, transpose_b=True),
           [(2, 4, 3, 3), (2, 5, 3, 4)],
           ref=_gemm_ref(True, True, axis=1, with_c=False)),
    OpCase('_linalg_syrk', {}, [(3, 4)], ref=_syrk_ref()),
    OpCase('_linalg_syrk', dict(transpose=True, alpha=0.5), [(3, 4)],
           ref=_syrk_ref(True, 0.5)),
    OpCase('linalg_syrk', dict(alpha=-2.0), [(2, 2, 3, 2)], ref=_syrk_ref(alpha=-2.0)),
    OpCase('_linalg_syrk', dict(transpose=True), [(2, 4, 3)], ref=_syrk_ref(True)),
]

for _tr, _rs, _lo in itertools.product((False, True), repeat=3):
    _kw = dict(transpose=_tr, rightside=_rs, lower=_lo)
    _b = (2, 4, 3) if _rs else (2, 3, 4)
    CASES += [
        OpCase('_linalg_trmm', _kw, [(2, 3, 3), _b], inputs=_triangular(_lo),
               ref=_trmm_ref(**_kw)),
        OpCase('_linalg_trsm', _kw, [(2, 3, 3), _b], inputs=_triangular(_lo),
               ref=_in64(_trsm_ref(**_kw)), **_LOOSE),
    ]

CASES += [
    OpCase('_linalg_trmm', dict(alpha=1.5), [(3, 3), (3, 2)], inputs=_triangular(),
           ref=_trmm_ref(alpha=1.5)),
    OpCase('linalg_trmm', dict(rightside=True, lower=False, alpha=-0.5),
           [(2, 2, 4, 4), (2, 2, 3, 4)], inputs=_triangular(False),
           ref=_trmm_ref(rightside=True, lower=False, alpha=-0.5)),
    OpCase('_linalg_trsm', dict(alpha=1.5), [(3, 3), (3, 2)], inputs=_triangular(),
           ref=_in64(_trsm_ref(alpha=1.5)), **_LOOSE),
    OpCase('linalg_trsm', dict(transpose=True, lower=False, alpha=-0.5),
           [(2, 2, 4, 4), (2, 2, 4, 3)], inputs=_triangular(False),
           ref=_in64(_trsm_ref(True, lower=False, alpha=-0.5)), **_LOOSE),
]

for _s in [(3, 3), (2, 4, 4), (2, 1, 3, 3)]:
    CASES += [
        OpCase('_linalg_potrf', {}, [_s], inputs=_spd(), ref=_in64(_potrf_ref),
               grad_ref=_symmetric_numeric_grad(_potrf_ref), **_LOOSE),
        OpCase('_linalg_potri', {}, [_s], inputs=_triangular(), ref=_in64(_potri_ref),
               **_LOOSE),
        OpCase('_linalg_inverse', {}, [_s], inputs=_nonsingular, ref=_in64(np.linalg.inv),
               **_LOOSE),
        OpCase('_linalg_det', {}, [_s], inputs=_nonsingular,
               ref=_in64(_per_matrix(np.linalg.det)), **_LOOSE),
        OpCase('_linalg_slogdet', {}, [_s], inputs=_nonsingular, ref=_in64(_slogdet_ref),
               **_LOOSE),
        OpCase('_linalg_sumlogdiag', {}, [_s], inputs=_positive_diag,
               ref=_in64(_per_matrix(lambda a: np.log(np.diagonal(a, 0, -2, -1)).sum(-1))),
               **_LOOSE),
    ]

CASES += [
    OpCase('linalg_potrf', {}, [(4, 4)], inputs=_spd(garbage=False), ref=_in64(_potrf_ref),
           grad_ref=_symmetric_numeric_grad(_potrf_ref), **_LOOSE),
    OpCase('linalg_potri', {}, [(4, 4)], inputs=_triangular(garbage=False),
           ref=_in64(_potri_ref), **_LOOSE),
    OpCase('linalg_inverse', {}, [(1, 1)], inputs=_nonsingular, ref=_in64(np.linalg.inv),
           **_LOOSE),
    OpCase('linalg_det', {}, [(4, 4)], inputs=_nonsingular,
           ref=_in64(_per_matrix(np.linalg.det)), **_LOOSE),
    OpCase('linalg_slogdet', {}, [(4, 4)], inputs=_nonsingular, ref=_in64(_slogdet_ref),
           **_LOOSE),
    OpCase('linalg_sumlogdiag', {}, [(1, 1)], inputs=_positive_diag,
           ref=_in64(_per_matrix(lambda a: np.log(np.diagonal(a, 0, -2, -1)).sum(-1))),
           **_LOOSE),
]


test_forward, test_gradient = case_tests(CASES)


# ----------------------------------------------------------------------------------
# MXNet's documented examples, identities and semantics
# ----------------------------------------------------------------------------------
def test_mxnet_doc_examples():
    a = mx.nd.array([[1.0, 2.0], [3.0, 4.0]])
    assert mx.nd.linalg.extracttrian(a).asnumpy().tolist() == [1.0, 3.0, 4.0]
    assert mx.nd.linalg.extracttrian(a, lower=False).asnumpy().tolist() == [1.0, 2.0, 4.0]
    assert mx.nd.linalg.extracttrian(a, 1).asnumpy().tolist() == [2.0]
    assert mx.nd.linalg.extracttrian(a, -1).asnumpy().tolist() == [3.0]
    v = mx.nd.array([1.0, 2.0, 3.0])
    assert mx.nd.linalg.maketrian(v).asnumpy().tolist() == [[1, 0], [2, 3]]
    assert mx.nd.linalg.maketrian(v, lower=False).asnumpy().tolist() == [[1, 2], [0, 3]]
    assert mx.nd.linalg.maketrian(v, offset=1).asnumpy().tolist() == \
        [[0, 1, 2], [0, 0, 3], [0, 0, 0]]
    assert mx.nd.linalg.maketrian(v, offset=-1).asnumpy().tolist() == \
        [[0, 0, 0], [1, 0, 0], [2, 3, 0]]
    assert mx.nd.linalg.extractdiag(a, 1).asnumpy().tolist() == [2.0]
    assert mx.nd.linalg.makediag(mx.nd.array([1.0, 2.0]), -1).asnumpy().tolist() == \
        [[0, 0, 0], [1, 0, 0], [0, 2, 0]]
    spd = mx.nd.array([[4.0, 1.0], [1.0, 4.25]])
    np.testing.assert_allclose(mx.nd.linalg.potrf(spd).asnumpy(), [[2.0, 0.0], [0.5, 2.0]])
    np.testing.assert_allclose(mx.nd.linalg.sumlogdiag(mx.nd.array([[1.0, 1.0],
                                                                    [1.0, 7.0]])).asnumpy(),
                               [np.log(7.0)], rtol=1e-6)


def test_identities_between_operators():
    rng = np.random.RandomState(0)
    spd = _spd(garbage=False)(rng, [(2, 4, 4)], 'float64')[0]
    b = rng.uniform(-1, 1, (2, 4, 3))
    A, B = mx.nd.array(spd, dtype='float64'), mx.nd.array(b, dtype='float64')
    low = mx.nd.linalg.potrf(A)
    np.testing.assert_allclose(mx.nd.linalg.potri(low).asnumpy(), np.linalg.inv(spd),
                               rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(mx.nd.linalg.syrk(low).asnumpy(), spd, rtol=1e-12)
    np.testing.assert_allclose(2 * mx.nd.linalg.sumlogdiag(low).asnumpy(),
                               np.linalg.slogdet(spd)[1], rtol=1e-12)
    back = mx.nd.linalg.trsm(low, mx.nd.linalg.trmm(low, B, alpha=2.0), alpha=0.5)
    np.testing.assert_allclose(back.asnumpy(), b, rtol=1e-10, atol=1e-12)
    tri = mx.nd.linalg.maketrian(mx.nd.linalg.extracttrian(low))
    np.testing.assert_array_equal(tri.asnumpy(), low.asnumpy())


def test_triangle_not_read_is_ignored():
    rng = np.random.RandomState(1)
    a = _triangular()(rng, [(3, 3)], 'float64')[0]
    b = rng.uniform(-1, 1, (3, 2))
    for name in ('trmm', 'trsm'):
        f = getattr(mx.nd.linalg, name)
        x = f(mx.nd.array(a, dtype='float64'), mx.nd.array(b, dtype='float64'))
        y = f(mx.nd.array(np.tril(a), dtype='float64'), mx.nd.array(b, dtype='float64'))
        np.testing.assert_array_equal(x.asnumpy(), y.asnumpy())
    spd = _spd()(rng, [(3, 3)], 'float64')[0]
    full = np.tril(spd) + _t(np.tril(spd, -1))
    np.testing.assert_allclose(mx.nd.linalg.potrf(mx.nd.array(spd, dtype='float64')).asnumpy(),
                               np.linalg.cholesky(full), rtol=1e-12)


def test_potrf_gradient_is_symmetric_and_that_of_the_symmetrised_input():
    rng = np.random.RandomState(2)
    spd = _spd(garbage=False)(rng, [(4, 4)], 'float64')[0]
    w = rng.uniform(-1, 1, (4, 4))
    op = get_op('_linalg_potrf')()
    low = op.forward(np, [spd], [], True)[0]
    g = op.backward(np, [w], [None], [low], [], [True])[0]
    np.testing.assert_allclose(g, g.T, rtol=1e-12)
    # d/dA of sum(w * potrf((A + A^T) / 2)), elementwise central differences
    eps, num = 1e-6, np.zeros_like(spd)
    for k in np.ndindex(4, 4):
        d = np.zeros_like(spd)
        d[k] = eps
        lp = (w * _potrf_ref((spd + d + (spd + d).T) / 2)).sum()
        lm = (w * _potrf_ref((spd - d + (spd - d).T) / 2)).sum()
        num[k] = (lp - lm) / (2 * eps)
    np.testing.assert_allclose(g, num, rtol=1e-5, atol=1e-8)


def test_slogdet_sign_has_no_gradient():
    a = _nonsingular(np.random.RandomState(3), [(3, 3)], 'float64')[0]
    op = get_op('_linalg_slogdet')()
    outs = op.forward(np, [a], [], True)
    g = op.backward(np, [np.ones(1), np.zeros(1)], [a], outs, [], [True])[0]
    assert not g.any()


# ----------------------------------------------------------------------------------
# namespaces, names, shapes, errors
# ----------------------------------------------------------------------------------
def test_namespaces_and_node_names_as_in_mxnet():
    a, b, c = mx.sym.var('a'), mx.sym.var('b'), mx.sym.var('c')
    with mx.name.NameManager():
        assert mx.sym.linalg.gemm2(a, b).list_outputs() == ['gemm20_output']
        assert mx.sym.linalg.gemm(a, b, c).list_arguments() == ['a', 'b', 'c']
        assert mx.sym.linalg_gemm2(a, b).list_outputs() == ['linalg_gemm20_output']
        assert mx.sym.linalg.det(a).list_outputs() == ['det0_output0']
        assert mx.sym.linalg.slogdet(a).list_outputs() == ['slogdet0_output0',
                                                           'slogdet0_output1']
    assert 'gemm2' in dir(mx.sym.linalg) and 'potrf' in dir(mx.nd.linalg)
    x = mx.nd.array(np.eye(2) * 3)
    assert mx.nd.linalg.gemm2(x, x).asnumpy().tolist() == [[9, 0], [0, 9]]
    assert mx.nd.linalg_gemm2(x, x, True, False, 2.0).asnumpy().tolist() == [[18, 0], [0, 18]]


@pytest.mark.parametrize('name, kw, shapes, out', [
    ('gemm2', {}, [(2, 3, 4), (2, 4, 5)], [(2, 3, 5)]),
    ('gemm2', dict(axis=0), [(3, 6, 4), (4, 6, 5)], [(3, 6, 5)]),
    ('gemm2', dict(axis=0, transpose_b=True), [(3, 6, 4), (5, 6, 4)], [(3, 6, 5)]),
    ('gemm2', dict(axis=-3), [(2, 3, 6, 4), (2, 4, 6, 5)], [(2, 3, 6, 5)]),
    ('gemm', {}, [(2, 3, 4), (2, 4, 5), (2, 3, 5)], [(2, 3, 5)]),
    ('syrk', {}, [(2, 3, 4)], [(2, 3, 3)]),
    ('syrk', dict(transpose=True), [(2, 3, 4)], [(2, 4, 4)]),
    ('trmm', dict(rightside=True), [(3, 3), (2, 3)], [(2, 3)]),
    ('det', {}, [(3, 3)], [(1,)]),
    ('det', {}, [(2, 5, 3, 3)], [(2, 5)]),
    ('slogdet', {}, [(2, 3, 3)], [(2,), (2,)]),
    ('extractdiag', dict(offset=1), [(2, 3, 3)], [(2, 2)]),
    ('extracttrian', dict(offset=-2), [(3, 3)], [(1,)]),
    ('makediag', dict(offset=-4), [(3, 4)], [(3, 8, 8)]),
    ('maketrian', dict(offset=3), [(4, 3)], [(4, 5, 5)]),
])
def test_shapes_as_in_mxnet(name, kw, shapes, out):
    args = [mx.sym.var('v%d' % i) for i in range(len(shapes))]
    sym = getattr(mx.sym.linalg, name)(*args, **kw)
    got = sym.infer_shape(**{'v%d' % i: s for i, s in enumerate(shapes)})[1]
    assert got == out


def test_gemm_fills_c_from_a_and_b():
    sym = mx.sym.linalg.gemm(mx.sym.var('a'), mx.sym.var('b'), mx.sym.var('c'))
    args, outs, _ = sym.infer_shape_partial(a=(2, 3, 4), b=(2, 4, 5))
    assert args == [(2, 3, 4), (2, 4, 5), (2, 3, 5)] and outs == [(2, 3, 5)]


@pytest.mark.parametrize('name, kw, shapes, match', [
    ('gemm2', {}, [(2, 3, 4), (3, 4, 5)], 'same shape except'),
    ('gemm2', {}, [(3, 4), (5, 5)], 'do not fit'),
    ('gemm2', {}, [(2, 3, 4), (4, 5)], 'same number of dimensions'),
    ('gemm2', dict(axis=-1), [(3, 4), (4, 5)], 'invalid row axis -1'),
    ('gemm', {}, [(2, 3, 4), (2, 4, 5), (2, 3, 6)], 'C has shape'),
    ('trsm', {}, [(3, 4), (4, 2)], 'square'),
    ('trsm', {}, [(3, 3), (4, 2)], 'does not fit'),
    ('potrf', {}, [(3,)], 'at least 2 dimensions'),
    ('inverse', {}, [(3, 4)], 'square'),
    ('det', {}, [(3, 4)], 'square'),
    ('extractdiag', dict(offset=3), [(3, 3)], 'offset 3 is out of range'),
    ('extracttrian', dict(offset=-4), [(2, 3, 3)], 'offset -4 is out of range'),
    ('maketrian', {}, [(2, 5)], 'm \\(m \\+ 1\\) / 2'),
])
def test_shape_errors(name, kw, shapes, match):
    args = [mx.sym.var('v%d' % i) for i in range(len(shapes))]
    sym = getattr(mx.sym.linalg, name)(*args, name='la', **kw)
    with pytest.raises(ShapeError, match=match):
        sym.infer_shape(**{'v%d' % i: s for i, s in enumerate(shapes)})


def test_only_float32_and_float64():
    sym = mx.sym.linalg.potrf(mx.sym.var('a'))
    assert sym.infer_type(a='float64')[1] == [np.float64]
    for t in ('float16', 'int32'):
        with pytest.raises(TypeInferenceError, match='float32 and float64'):
            sym.infer_type(a=t)
        with pytest.raises(MXNetError, match='float32 and float64'):
            mx.nd.linalg.gemm2(mx.nd.ones((2, 2), dtype=t), mx.nd.ones((2, 2), dtype=t))


def test_lapack_failures_are_mxnet_errors():
    with pytest.raises(MXNetError, match='not symmetric positive definite'):
        mx.nd.linalg.potrf(mx.nd.array([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(MXNetError, match='singular'):
        mx.nd.linalg.inverse(mx.nd.array([[1.0, 2.0], [2.0, 4.0]]))
    # MXNet's potri fails too; its trsm gives inf there (BLAS does not check), here an error
    for f in (mx.nd.linalg.potri, lambda a: mx.nd.linalg.trsm(a, mx.nd.ones((2, 2)))):
        with pytest.raises(MXNetError, match='triangular matrix is singular'):
            f(mx.nd.array([[1.0, 0.0], [2.0, 0.0]]))
    sign, logdet = mx.nd.linalg.slogdet(mx.nd.array([[1.0, 2.0], [2.0, 4.0]]))
    assert sign.asnumpy()[0] == 0 and logdet.asnumpy()[0] == -np.inf
    assert mx.nd.linalg.det(mx.nd.array([[0.0, 1.0], [1.0, 0.0]])).asnumpy().tolist() == [-1]


def test_parameter_order_of_mxnet():
    assert positional_params(get_op('_linalg_gemm')) == [
        'transpose_a', 'transpose_b', 'alpha', 'beta', 'axis']
    assert positional_params(get_op('_linalg_gemm2')) == [
        'transpose_a', 'transpose_b', 'alpha', 'axis']
    for name in ('_linalg_trmm', '_linalg_trsm'):
        assert positional_params(get_op(name)) == ['transpose', 'rightside', 'lower',
                                                    'alpha']
    assert positional_params(get_op('_linalg_syrk')) == ['transpose', 'alpha']
    assert positional_params(get_op('_linalg_extracttrian')) == ['offset', 'lower']
    assert positional_params(get_op('_linalg_maketrian')) == ['offset', 'lower']
