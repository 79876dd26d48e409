"""Densities of the sampling distributions, ``_random_pdf_*`` (``mx.nd.random_pdf_normal``,
MXNet 1.9.1 ``src/operator/random/pdf_op.h``), with their gradients.

``sample`` has the parameters' shape plus trailing sample dimensions (Dirichlet: plus the
``k`` categories last, which the output drops); the output has the samples' shape and
holds the density or, with ``is_log``, its logarithm, as MXNet's kernels compute them:
no support check for the uniform (``1 / (high - low)`` everywhere), gamma with ``beta`` a
*rate* (``beta^a x^(a-1) e^(-beta x) / Gamma(a)``; ``_sample_gamma``'s beta is a scale, as
MXNet's), negative binomial in MXNet's parameterisation. The parameter gradients are summed
over the sample dimensions; the gradient of the discrete densities with respect to the
sample is 0, as MXNet's.
"""
import math

import numpy as np

from symgraph.opdef import MXNetError, Operator, Param, ShapeError, register

from ._specfun import digamma, gammaln


#: sqrt(2 * PI) with MXNet's float PI
_SQRT_2PI = math.sqrt(2.0 * float(np.float32(math.pi)))


def _wide(x):
    """float16/float32 arrays are computed in float64 (then rounded once)."""
    return x.astype(np.float64) if x.dtype.itemsize < 8 else x


def _psi(xp, x):
    return digamma(xp, x, np.nan)


class _Pdf(Operator):
    """sample + parameter arrays -> density of each sample."""

    is_log = Param(bool, False, doc='If set, compute the density of the log-probability '
                                    'instead of the probability.')
    params = ()
    vparm = False                 # Dirichlet: the last sample axis is the category
    needs_inputs = True
    needs_outputs = True

    def list_arguments(self):
        return ['sample'] + list(self.params)

    def infer_shape(self, in_shapes):
        shapes = [None if s is None else tuple(s) for s in in_shapes]
        p = next((s for s in shapes[1:] if s is not None), None)
        for n, s in zip(self.params, shapes[1:]):
            if s is not None and s != p:
                raise ShapeError('%s: parameter %r has shape %s but %r has %s'
                                 % (self.name, n, s, self.params[0], p))
        x = shapes[0]
        if x is not None and p is not None:
            nd = len(p)
            if nd > len(x) or x[:nd - 1 if self.vparm else nd] != p[:nd - 1 if self.vparm
                                                                  else nd] \
                    or (self.vparm and x[-1] != p[-1]):
                raise ShapeError('%s: the parameters\' shape %s must be the leading part of '
                                 'the sample shape %s' % (self.name, p, x))
        out = None if x is None else (x[:-1] if self.vparm else x)
        return [x] + [p] * len(self.params), [out], []

    def infer_type(self, in_types):
        t = next((np.dtype(x) for x in in_types if x is not None), None)
        if t is not None and t.kind != 'f':
            raise MXNetError('%s: only floating point inputs are supported, not %s'
                             % (self.name, t.name))
        return [t] * len(in_types), [t], []

    def _bcast(self, x, p):
        """p reshaped to broadcast against x (trailing sample axes)."""
        return p.reshape(p.shape + (1,) * (x.ndim - p.ndim))

    def forward(self, xp, inputs, aux, is_train):
        x = _wide(inputs[0])
        ps = [self._bcast(x, p).astype(x.dtype, copy=False) for p in inputs[1:]]
        lp = self.logpdf(xp, x, *ps)
        return [(lp if self.is_log else xp.exp(lp)).astype(inputs[0].dtype, copy=False)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        x = _wide(inputs[0])
        ps = [self._bcast(x, p).astype(x.dtype, copy=False) for p in inputs[1:]]
        scaling = _wide(out_grads[0]) if self.is_log else \
            _wide(out_grads[0]) * _wide(outputs[0])
        gs = self.grads(xp, x, *ps)
        res = [(scaling * gs[0]).astype(inputs[0].dtype, copy=False) if need[0] else None]
        for p, g, n in zip(inputs[1:], gs[1:], need[1:]):
            if n:
                g = scaling * g
                res.append(g.reshape(p.shape + (-1,)).sum(axis=-1).astype(p.dtype))
            else:
                res.append(None)
        return res


def _zero(xp, x):
    return xp.zeros_like(x)


@register
class PdfUniform(_Pdf):
    """1 / (high - low) (no support check, as MXNet)."""
    name, aliases = '_random_pdf_uniform', ('random_pdf_uniform',)
    params = ('low', 'high')

    def logpdf(self, xp, x, lo, hi):
        return -xp.log(hi - lo) + _zero(xp, x)

    def grads(self, xp, x, lo, hi):
        return _zero(xp, x), 1 / (hi - lo) + _zero(xp, x), 1 / (lo - hi) + _zero(xp, x)


@register
class PdfNormal(_Pdf):
    name, aliases = '_random_pdf_normal', ('random_pdf_normal',)
    params = ('mu', 'sigma')

    def logpdf(self, xp, x, u, s):
        t = x.dtype.type
        # MXNet's PI is a float constant
        return (t(-0.5) * (x - u) * (x - u)) / (s * s) - xp.log(t(_SQRT_2PI) * s)

    def grads(self, xp, x, u, s):
        s2 = s * s
        return (u - x) / s2, (x - u) / s2, ((x - u) * (x - u) - s2) / (s2 * s)


@register
class PdfGamma(_Pdf):
    """alpha shape, beta *rate*, as MXNet's pdf kernel."""
    name, aliases = '_random_pdf_gamma', ('random_pdf_gamma',)
    params = ('alpha', 'beta')

    def logpdf(self, xp, x, a, b):
        return a * xp.log(b) + (a - 1) * xp.log(x) - b * x - gammaln(xp, a)

    def grads(self, xp, x, a, b):
        return (a - 1) / x - b, xp.log(b) + xp.log(x) - _psi(xp, a), a / b - x


@register
class PdfExponential(_Pdf):
    name, aliases = '_random_pdf_exponential', ('random_pdf_exponential',)
    params = ('lam',)

    def logpdf(self, xp, x, lam):
        return xp.log(lam) - lam * x

    def grads(self, xp, x, lam):
        return -lam + _zero(xp, x), 1 / lam - x


@register
class PdfPoisson(_Pdf):
    name, aliases = '_random_pdf_poisson', ('random_pdf_poisson',)
    params = ('lam',)

    def logpdf(self, xp, x, lam):
        return (x * xp.log(lam) - gammaln(xp, x + 1)) - lam

    def grads(self, xp, x, lam):
        return _zero(xp, x), x / lam - 1


def _nb_logpdf(xp, x, k, p):
    return (gammaln(xp, x + k) - gammaln(xp, x + 1) - gammaln(xp, k)) + k * xp.log(p) \
        + x * xp.log(1 - p)


def _nb_grads(xp, x, k, p):
    return (_psi(xp, x + k) - _psi(xp, k)) + xp.log(p), k / p - x / (1 - p)


@register
class PdfNegativeBinomial(_Pdf):
    name, aliases = '_random_pdf_negative_binomial', ('random_pdf_negative_binomial',)
    params = ('k', 'p')

    def logpdf(self, xp, x, k, p):
        return _nb_logpdf(xp, x, k, p)

    def grads(self, xp, x, k, p):
        return (_zero(xp, x),) + _nb_grads(xp, x, k, p)


@register
class PdfGeneralizedNegativeBinomial(_Pdf):
    """Negative binomial with limit 1/alpha and probability 1/(mu*alpha + 1)."""
    name = '_random_pdf_generalized_negative_binomial'
    aliases = ('random_pdf_generalized_negative_binomial',)
    params = ('mu', 'alpha')

    def logpdf(self, xp, x, mu, alpha):
        return _nb_logpdf(xp, x, 1 / alpha, 1 / (mu * alpha + 1))

    def grads(self, xp, x, mu, alpha):
        den = mu * alpha + 1
        gl, gp = _nb_grads(xp, x, 1 / alpha, 1 / den)
        return _zero(xp, x), -gp * alpha / (den * den), \
            -gl / (alpha * alpha) - gp * mu / (den * den)


@register
class PdfDirichlet(_Pdf):
    """Samples (..., k) on the simplex, alpha (..., k): density of each sample."""
    name, aliases = '_random_pdf_dirichlet', ('random_pdf_dirichlet',)
    params = ('alpha',)
    vparm = True

    def _alpha(self, x, a):
        # a: (s..., k) -> (s..., 1..., k) against x (s..., m..., k)
        return a.reshape(a.shape[:-1] + (1,) * (x.ndim - a.ndim) + a.shape[-1:])

    def forward(self, xp, inputs, aux, is_train):
        x, a = _wide(inputs[0]), inputs[1]
        a = self._alpha(x, a.astype(x.dtype, copy=False))
        lp = ((a - 1) * xp.log(x)).sum(axis=-1) + (gammaln(xp, a.sum(axis=-1))
                                                   - gammaln(xp, a).sum(axis=-1))
        return [(lp if self.is_log else xp.exp(lp)).astype(inputs[0].dtype, copy=False)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        x, a0 = _wide(inputs[0]), inputs[1]
        a = self._alpha(x, a0.astype(x.dtype, copy=False))
        og = _wide(out_grads[0])
        scaling = (og if self.is_log else og * _wide(outputs[0]))[..., None]
        gx = (scaling * (a - 1) / x).astype(inputs[0].dtype) if need[0] else None
        ga = None
        if need[1]:
            g = scaling * (xp.log(x) + (_psi(xp, a.sum(axis=-1, keepdims=True))
                                        - _psi(xp, a)))
            lead = a0.ndim - 1
            axes = tuple(range(lead, x.ndim - 1))
            ga = g.sum(axis=axes).astype(a0.dtype) if axes else g.astype(a0.dtype)
        return [gx, ga]
