"""Inverse/hyperbolic trigonometry, log2/log10, cube roots, angles and the special functions
(erf, erfinv, gamma, gammaln) against independent references (MXNet 1.9.1 semantics).

References: NumPy for the elementary functions; Python's ``math`` (erf, gamma, lgamma) and
``statistics.NormalDist`` (erfinv) for the special functions. SciPy, when installed, is
used only for the accuracy measurements at many points at the end.
"""
import math
import statistics

import numpy as np
import pytest

from harness import case_tests, OpCase, parametrize_cases
from symgraph.opdef import get_op
from symgraph.ops import _specfun as sf


def uniform(lo, hi):
    return lambda rng, shapes, dtype: [rng.uniform(lo, hi, s) for s in shapes]


def fixed(*values):
    return lambda rng, shapes, dtype: [np.asarray(v, dtype=np.float64) for v in values]


def _elementwise(f):
    """A NumPy reference from a scalar ``math`` function, in float64, in the input dtype."""
    def ref(x):
        out = np.array([f(float(v)) for v in x.ravel()], dtype=np.float64)
        return out.reshape(x.shape).astype(x.dtype)
    return ref


def _erfinv_scalar(y):
    # erf(x) = 2 Phi(x sqrt 2) - 1, so erfinv(y) = Phi^-1((1 + y) / 2) / sqrt 2
    return statistics.NormalDist().inv_cdf((1.0 + y) / 2.0) / math.sqrt(2.0)


def _gamma_scalar(x):
    try:
        return math.gamma(x)
    except ValueError:                  # the poles
        return math.copysign(math.inf, x) if x == 0 else math.nan


def _lgamma_scalar(x):
    try:
        return math.lgamma(x)
    except ValueError:
        return math.inf


ERF = _elementwise(math.erf)
ERFINV = _elementwise(_erfinv_scalar)
GAMMA = _elementwise(_gamma_scalar)
GAMMALN = _elementwise(_lgamma_scalar)
DEGREES = 57.2957763671875          # MXNet's float32 180/pi (see special.py)
RADIANS = 0.01745329238474369       # float32(pi/180)


def _away_from_integers(lo, hi):
    """Inputs of gamma/gammaln on both sides of 0.5, kept off the poles."""
    def make(rng, shapes, dtype):
        x = rng.uniform(lo, hi, shapes[0])
        frac = x - np.round(x)
        return [np.where(np.abs(frac) < 0.1, x + 0.25, x)]
    return make


def _ints(values):
    return lambda rng, shapes, dtype: [np.asarray(values, dtype=np.int32)]


CASES = [
    OpCase('arcsin', shapes=[(3, 5)], ref=np.arcsin, inputs=uniform(-0.9, 0.9)),
    OpCase('arccos', shapes=[(4, 3)], ref=np.arccos, inputs=uniform(-0.9, 0.9)),
    OpCase('arcsinh', shapes=[(2, 3, 4)], ref=np.arcsinh, inputs=uniform(-4, 4)),
    OpCase('arccosh', shapes=[(3, 4)], ref=np.arccosh, inputs=uniform(1.1, 5)),
    OpCase('arctanh', shapes=[(5, 2)], ref=np.arctanh, inputs=uniform(-0.9, 0.9)),
    OpCase('sinh', shapes=[(3, 5)], ref=np.sinh, inputs=uniform(-3, 3)),
    OpCase('cosh', shapes=[(2, 7)], ref=np.cosh, inputs=uniform(-3, 3)),
    OpCase('log2', shapes=[(3, 4)], ref=np.log2, inputs=uniform(0.2, 8)),
    OpCase('log10', shapes=[(4, 3)], ref=np.log10, inputs=uniform(0.2, 50)),
    OpCase('cbrt', shapes=[(3, 5)], ref=np.cbrt, inputs=uniform(0.3, 8)),
    OpCase('cbrt', shapes=[(7,)], ref=np.cbrt, inputs=uniform(-8, -0.3)),
    OpCase('rcbrt', shapes=[(5, 3)], ref=lambda x: 1 / np.cbrt(x), inputs=uniform(0.3, 8)),
    OpCase('rcbrt', shapes=[(2, 3)], ref=lambda x: 1 / np.cbrt(x), inputs=uniform(-8, -0.3)),
    OpCase('degrees', shapes=[(3, 4)], ref=lambda x: x * DEGREES, inputs=uniform(-4, 4)),
    OpCase('radians', shapes=[(4, 3)], ref=lambda x: x * RADIANS, inputs=uniform(-400, 400)),
    OpCase('erf', shapes=[(3, 5)], ref=ERF, inputs=uniform(-3, 3)),
    # both sides of |x| = 1 and 8 (the approximation's branches) and the far tail
    OpCase('erf', shapes=[(12,)], ref=ERF, grad_atol=1e-12, inputs=fixed(
        [-9.0, -7.9, -2.5, -1.01, -0.99, -1e-4, 1e-4, 0.99, 1.01, 7.99, 8.01, 27.0])),
    OpCase('erfinv', shapes=[(4, 3)], ref=ERFINV, inputs=uniform(-0.95, 0.95)),
    OpCase('erfinv', shapes=[(10,)], ref=ERFINV, rtol=1e-6, eps=1e-9, grad_rtol=1e-3,
           inputs=fixed([-0.99999, -0.9999, -0.51, -0.49, -1e-5, 1e-5, 0.49, 0.51,
                         0.999, 0.99999])),
    OpCase('gamma', shapes=[(3, 4)], ref=GAMMA, inputs=uniform(0.5, 5)),
    OpCase('gamma', shapes=[(2, 5)], ref=GAMMA, inputs=_away_from_integers(-4.5, 0.5)),
    OpCase('gammaln', shapes=[(4, 3)], ref=GAMMALN, inputs=uniform(0.5, 20)),
    OpCase('gammaln', shapes=[(5, 2)], ref=GAMMALN, inputs=_away_from_integers(-4.5, 0.5)),
    OpCase('_npx_erf', shapes=[(2, 3)], ref=ERF),
    OpCase('_npx_erfinv', shapes=[(3, 2)], ref=ERFINV),
    OpCase('_npx_gamma', shapes=[(2, 2)], ref=GAMMA, inputs=uniform(0.5, 3)),
    OpCase('_npx_gammaln', shapes=[(2, 2)], ref=GAMMALN, inputs=uniform(0.5, 3)),
    # edges as MXNet gives them: gamma is nan at negative integers and +-inf at +-0,
    # gammaln +inf at the poles; erfinv +-inf at +-1 and nan outside
    OpCase('gamma', shapes=[(7,)], grad=(), ref=lambda x: np.array(
        [np.nan, np.nan, -np.inf, np.inf, 1.0, 120.0, np.inf]).astype(x.dtype),
        inputs=fixed([-3.0, -1.0, -0.0, 0.0, 1.0, 6.0, 200.0])),
    OpCase('gammaln', shapes=[(6,)], grad=(), ref=lambda x: np.array(
        [np.inf, np.inf, np.inf, 0.0, 0.0, np.inf]).astype(x.dtype),
        inputs=fixed([-3.0, 0.0, -np.inf, 1.0, 2.0, np.inf])),
    OpCase('erfinv', shapes=[(6,)], grad=(), ref=lambda x: np.array(
        [np.nan, -np.inf, 0.0, np.inf, np.nan, np.nan]).astype(x.dtype),
        inputs=fixed([-1.5, -1.0, 0.0, 1.0, 2.0, np.nan])),
    OpCase('erf', shapes=[(5,)], grad=(), ref=lambda x: np.array(
        [-1.0, 0.0, 1.0, 1.0, np.nan]).astype(x.dtype),
        inputs=fixed([-np.inf, 0.0, 30.0, np.inf, np.nan])),
    # MXNet keeps integer dtypes (computing in float32 and truncating)
    OpCase('gamma', shapes=[(7,)], dtypes=('int32',), inputs=_ints([1, 2, 3, 4, 5, 6, 7]),
           ref=lambda x: np.array([1, 1, 2, 6, 24, 120, 720], dtype=np.int32)),
    OpCase('degrees', shapes=[(4,)], dtypes=('int32',), inputs=_ints([1, 2, 3, -2]),
           ref=lambda x: np.array([57, 114, 171, -114], dtype=np.int32)),
    OpCase('sinh', shapes=[(4,)], dtypes=('int32',), inputs=_ints([1, 2, 3, -2]),
           ref=lambda x: np.array([1, 3, 10, -3], dtype=np.int32)),
    OpCase('erf', shapes=[(3,)], dtypes=('int32',), inputs=_ints([0, 1, 3]),
           ref=lambda x: np.zeros(3, np.int32)),
    # float16 is computed in higher precision and rounded once
    OpCase('gamma', shapes=[(2, 3)], dtypes=('float16',), ref=GAMMA, inputs=uniform(0.5, 4)),
    OpCase('erfinv', shapes=[(3, 2)], dtypes=('float16',), ref=ERFINV),
]


test_forward, test_gradient = case_tests(CASES)


@parametrize_cases(CASES)
def test_fast_forward_matches_forward(case):
    op = case.make_op()
    fast = op.fast_forward(np, False)
    for dtype in case.dtypes:
        inputs = case.make_inputs(dtype)
        expected = op.forward(np, list(inputs), [], False)[0]
        got = fast(*inputs)
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize('alias, name', [('_npx_erf', 'erf'), ('_npx_erfinv', 'erfinv'),
                                         ('_npx_gamma', 'gamma'),
                                         ('_npx_gammaln', 'gammaln')])
def test_aliases(alias, name):
    assert get_op(alias) is get_op(name)


def _backward(name, x, y=None):
    op = get_op(name)()
    if y is None:
        y = op.forward(np, [x], [], False)[0]
    return op.backward(np, [np.ones_like(x)], [x], [y], [], [True])[0]


@pytest.mark.parametrize('dtype', ['float32', 'float64'])
def test_mxnet_constants(dtype):
    # MXNet 1.9.1 (CPU): degrees(1) is 57.2957763671875 and the gradients of erf and
    # erfinv use a float32 sqrt(pi), also in float64
    one = np.ones(1, dtype)
    assert get_op('degrees')().forward(np, [one], [], False)[0][0] == np.dtype(dtype).type(
        DEGREES)
    assert _backward('radians', one)[0] == np.dtype(dtype).type(RADIANS)
    zero = np.zeros(1, dtype)
    want = np.array([1.1283791331978021, 0.8862269521], dtype)
    np.testing.assert_array_equal(_backward('erf', zero), want[0])
    np.testing.assert_allclose(_backward('erfinv', zero), want[1], rtol=1e-9)


def test_gradients_at_the_poles_match_mxnet():
    # MXNet's digamma gives DBL_MAX at the poles (Cephes); gamma's gradient multiplies it
    x = np.array([-2.0, -0.0, 0.0, 1.0])
    np.testing.assert_array_equal(_backward('gammaln', x)[:3], np.finfo(np.float64).max)
    np.testing.assert_allclose(_backward('gammaln', x)[3], -0.5772156649015329, rtol=1e-14)
    g = _backward('gamma', x)
    assert np.isnan(g[0]) and g[1] == -np.inf and g[2] == np.inf
    assert _backward('gammaln', x.astype(np.float32))[0] == np.finfo(np.float32).max


def test_float32_overflow_is_inf():
    # gamma(36) is past float32's range: inf, as in MXNet, with no warning (errors here)
    y = get_op('gamma')().forward(np, [np.array([35.0, 36.0, -40.5], np.float32)], [],
                                  False)[0]
    assert y.dtype == np.float32
    assert np.isfinite(y[0]) and y[1] == np.inf and y[2] == 0.0


def test_special_values_raise_no_warnings():
    # pytest turns warnings into errors: the special functions must not emit any
    x = np.array([-np.inf, -1e300, -171.5, -2.0, -1.5, -1e-300, -0.0, 0.0, 1e-300, 0.5, 1.0,
                  1.5, 171.7, 1e300, np.inf, np.nan])
    for f in (sf.erf, sf.erfinv, sf.gamma, sf.gammaln):
        f(np, x)
    sf.digamma(np, x, 1.0)
    x32 = np.array([-np.inf, -1e30, -2.0, -0.0, 0.5, 1.0, 1e30, np.inf, np.nan], np.float32)
    for name in ('erf', 'erfinv', 'gammaln'):
        _backward(name, x32)


@pytest.mark.parametrize('name', ['erf', 'erfinv', 'gamma', 'gammaln'])
def test_float32_is_the_rounded_float64(name):
    # computed in float64 and rounded once: within one float32 ulp of the float64 result
    rng = np.random.RandomState(5)
    lo, hi = (-0.999, 0.999) if name == 'erfinv' else (0.2, 30) if name == 'gamma' \
        else (-4, 4)
    x = rng.uniform(lo, hi, 500).astype(np.float32)
    op = get_op(name)()
    y32 = op.forward(np, [x], [], False)[0]
    y64 = op.forward(np, [x.astype(np.float64)], [], False)[0]
    np.testing.assert_allclose(y32, y64, rtol=6e-8, atol=1e-45)


# --- accuracy against SciPy at many points (float64) -------------------------------------

def _rel(got, want, floor=0.0):
    return float(np.max(np.abs(got - want) / np.maximum(np.abs(want), floor)))


@pytest.fixture(scope='module')
def special():
    return pytest.importorskip('scipy.special')


def test_erf_accuracy(special):
    rng = np.random.RandomState(0)
    x = np.concatenate([rng.uniform(-6, 6, 20000), np.linspace(-1.5, 1.5, 3001),
                        10.0 ** rng.uniform(-300, 0, 500)])
    assert _rel(sf.erf(np, x), special.erf(x), 1e-300) < 1e-15
    a = np.concatenate([rng.uniform(0, 26, 20000), [0.0, 1.0, 8.0]])
    # Cephes' own erfc reaches 6e-14 near x = 25; 1e-13 is the bound of the method
    assert _rel(sf._erfc_pos(np, a), special.erfc(a), 1e-300) < 1e-13


def test_erfinv_accuracy(special):
    rng = np.random.RandomState(1)
    tails = 1.0 - 10.0 ** rng.uniform(-16, -0.3, 5000)
    y = np.concatenate([rng.uniform(-1, 1, 20000), tails, -tails,
                        10.0 ** rng.uniform(-300, 0, 500)])
    y = y[(np.abs(y) < 1) & (y != 0)]
    assert _rel(sf.erfinv(np, y), special.erfinv(y)) < 1e-14


def test_gamma_accuracy(special):
    rng = np.random.RandomState(2)
    x = np.concatenate([rng.uniform(0.5, 10, 10000), rng.uniform(-30, 0.5, 10000),
                        rng.uniform(10, 171.6, 5000), 10.0 ** rng.uniform(-300, 0, 500)])
    x = x[np.floor(x) != x]
    assert _rel(sf.gamma(np, x), special.gamma(x)) < 2e-13
    n = np.arange(1.0, 172.0)
    assert _rel(sf.gamma(np, n), special.gamma(n)) < 1e-15   # exact factorials


def test_gammaln_accuracy(special):
    rng = np.random.RandomState(3)
    x = np.concatenate([rng.uniform(0.5, 10, 10000), rng.uniform(-30, 0.5, 10000),
                        10.0 ** rng.uniform(0, 305, 2000), 10.0 ** rng.uniform(-300, 0, 500)])
    x = x[np.floor(x) != x]
    # relative where |gammaln| >= 1; absolute near its zeros at 1 and 2 (where Lanczos
    # cannot be relative)
    assert _rel(sf.gammaln(np, x), special.gammaln(x), 1.0) < 1e-14


def test_digamma_accuracy(special):
    rng = np.random.RandomState(4)
    x = np.concatenate([rng.uniform(0, 20, 10000), rng.uniform(-30, 0, 10000),
                        10.0 ** rng.uniform(-300, 300, 2000)])
    x = x[np.floor(x) != x]
    assert _rel(sf.digamma(np, x, 0.0), special.digamma(x), 1.0) < 1e-12
    far = x[np.abs(x - np.round(x)) > 0.05]
    pos = far[far > 2]
    assert _rel(sf.digamma(np, pos, 0.0), special.digamma(pos)) < 1e-14


def test_erf_against_math_erf_and_keeps_float32():
    """The one erf of ops/ (GELU's too): float64 to 2e-7 at least, float32 stays float32."""
    x = np.linspace(-6, 6, 2001)
    np.testing.assert_allclose(sf.erf(np, x), np.vectorize(math.erf)(x), rtol=0, atol=2e-7)
    assert sf.erf(np, x.astype('float32')).dtype == np.float32
