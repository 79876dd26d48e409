"""The densities ``_random_pdf_*`` (ops/random_pdf.py): OpCases with float64 numeric
gradients, and values and gradients against MXNet 1.9.1 (tests/golden/make_amp_multi.py)."""
import math

import numpy as np
import pytest

import symgraph as mx
from harness import OpCase, case_tests
from symgraph.base import MXNetError
from symgraph.opdef import ShapeError
import _golden_amp_multi as golden


def _lgamma(x):
    return np.vectorize(math.lgamma)(x)


def _u(lo, hi, shape):
    return lambda r, d: r.uniform(lo, hi, shape).astype(d)


def _inputs(*makers):
    return lambda r, s, d: [m(r, d) for m in makers]


def _counts(shape):
    return lambda r, d: r.randint(0, 6, shape).astype(d)


def _dirichlet(r, d):
    return r.dirichlet([1.0, 2.0, 3.0], (2, 4)).astype(d)


_NORMAL = lambda x, u, s: np.exp(-(x - u[..., None]) ** 2 / (2 * s[..., None] ** 2)) / (  # noqa
    np.sqrt(2 * np.pi) * s[..., None])


def _nb(x, k, p):
    k, p = k[..., None], p[..., None]
    return np.exp(_lgamma(x + k) - _lgamma(x + 1) - _lgamma(k) + k * np.log(p)
                  + x * np.log(1 - p))


CASES = [
    OpCase('_random_pdf_uniform', {}, shapes=[(2, 3), (2,), (2,)],
           inputs=_inputs(_u(0.2, 0.8, (2, 3)), _u(-1, 0, (2,)), _u(1, 2, (2,))),
           ref=lambda x, lo, hi: np.broadcast_to(1 / (hi - lo)[:, None], x.shape)),
    OpCase('_random_pdf_normal', {}, shapes=[(2, 3, 2), (2, 3), (2, 3)],
           inputs=_inputs(_u(-1, 1, (2, 3, 2)), _u(-1, 1, (2, 3)), _u(0.5, 2, (2, 3))),
           ref=_NORMAL, rtol=1e-5),
    OpCase('_random_pdf_normal', {'is_log': True}, shapes=[(3, 4), (3,), (3,)],
           inputs=_inputs(_u(-1, 1, (3, 4)), _u(-1, 1, (3,)), _u(0.5, 2, (3,))),
           ref=lambda x, u, s: np.log(_NORMAL(x, u, s)), rtol=1e-5),
    OpCase('_random_pdf_gamma', {}, shapes=[(2, 4), (2,), (2,)],
           inputs=_inputs(_u(0.2, 3, (2, 4)), _u(1, 3, (2,)), _u(0.5, 2, (2,))),
           ref=lambda x, a, b: np.exp(a[:, None] * np.log(b[:, None]) + (a[:, None] - 1)
                                      * np.log(x) - b[:, None] * x - _lgamma(a)[:, None]),
           rtol=1e-5),
    OpCase('_random_pdf_exponential', {'is_log': True}, shapes=[(3, 2), (3,)],
           inputs=_inputs(_u(0.1, 2, (3, 2)), _u(0.5, 2, (3,))),
           ref=lambda x, lam: np.log(lam[:, None]) - lam[:, None] * x),
    OpCase('_random_pdf_poisson', {}, shapes=[(2, 3), (2,)], grad=(1,),
           inputs=_inputs(_counts((2, 3)), _u(1, 4, (2,))),
           ref=lambda x, lam: np.exp(x * np.log(lam[:, None]) - _lgamma(x + 1)
                                     - lam[:, None]), rtol=1e-5),
    OpCase('_random_pdf_negative_binomial', {}, shapes=[(2, 3), (2,), (2,)], grad=(1, 2),
           inputs=_inputs(_counts((2, 3)), _u(1, 4, (2,)), _u(0.2, 0.8, (2,))),
           ref=_nb, rtol=1e-5),
    OpCase('_random_pdf_generalized_negative_binomial', {'is_log': True},
           shapes=[(2, 3), (2,), (2,)], grad=(1, 2),
           inputs=_inputs(_counts((2, 3)), _u(1, 4, (2,)), _u(0.2, 1.5, (2,))),
           ref=lambda x, mu, a: np.log(_nb(x, 1 / a, 1 / (mu * a + 1))), rtol=1e-5),
    OpCase('_random_pdf_dirichlet', {}, shapes=[(2, 4, 3), (2, 3)],
           inputs=_inputs(_dirichlet, _u(0.5, 3, (2, 3))),
           ref=lambda x, a: np.exp(((a[:, None] - 1) * np.log(x)).sum(-1)
                                   + _lgamma(a.sum(-1))[:, None]
                                   - _lgamma(a).sum(-1)[:, None]), rtol=1e-5),
]

test_forward, test_gradient = case_tests(CASES)


@pytest.mark.parametrize('name', golden.names(('pdf_',)))
def test_against_mxnet(name):
    """Computed in float64 and rounded once, where MXNet's kernels work in float: within a
    few float32 rounding steps of MXNet (float64: of MXNet's float PI-based constant)."""
    golden.check(name, rtol=2e-5 if not name.endswith('f64') else 1e-12, atol=1e-7)


def test_aliases_and_shapes():
    x = mx.nd.array([[0.1, 0.2, 0.3]])
    y = mx.nd.random_pdf_exponential(x, mx.nd.array([2.0]))
    assert y.shape == (1, 3)
    s = mx.sym.random_pdf_dirichlet(mx.sym.var('s'), mx.sym.var('a'), name='d')
    assert s.infer_shape(s=(2, 5, 3), a=(2, 3))[1] == [(2, 5)]
    assert s.list_arguments() == ['s', 'a']


def test_mismatched_shapes_are_refused():
    with pytest.raises((ShapeError, MXNetError), match='leading part'):
        mx.nd.random_pdf_normal(mx.nd.ones((3, 2)), mx.nd.zeros((2,)), mx.nd.ones((2,)))
    with pytest.raises((ShapeError, MXNetError), match='sigma'):
        mx.nd.random_pdf_normal(mx.nd.ones((3, 2)), mx.nd.zeros((3,)), mx.nd.ones((2,)))
