"""Random sampling operators: ``_random_uniform``, ``_random_normal``, ``_random_randint``,
``_random_exponential``, ``_random_gamma``, ``_random_poisson``, the negative binomials
(no inputs, distribution parameters as scalars), their ``_random_*_like`` forms (the shape
and dtype of an input), the ``_sample_*`` family (one distribution per element of the
parameter arrays; ``_sample_multinomial``, ``_sample_unique_zipfian`` in
``ops/sample.py``) and ``_shuffle`` (rows of the input in random order).

They draw from NumPy's global generator on the CPU and CuPy's on a GPU, both seeded by
``mx.random.seed``; the numbers differ from MXNet's generator, the distributions do not.
No gradient flows through them. The output dtype is float32 unless ``dtype`` says
otherwise (int32 for randint).
"""
import numpy as np

from symgraph.opdef import Operator, Param, ShapeError, np_dtype, random_state, register
from symgraph.base import ParameterError

_FLOATS = [None] + [np_dtype(t) for t in ('float16', 'float32', 'float64')]


class _Random(Operator):
    """No inputs: ``shape`` samples of one distribution."""

    shape = Param('shape', (), doc='output shape')
    ctx = Param(str, None, doc='ignored: the executor context decides')
    dtype = Param('dtype', None, doc='output dtype (None: float32)', choices=_FLOATS)
    no_grad = True
    needs_inputs = False
    default_dtype = np.float32

    def list_arguments(self):
        return []

    def out_dtype(self):
        return np.dtype(self.dtype if self.dtype is not None else self.default_dtype)

    def infer_shape(self, in_shapes):
        return [], [tuple(self.shape)], []

    def infer_type(self, in_types):
        return [], [self.out_dtype()], []

    def draw(self, xp, size):
        raise NotImplementedError

    def forward(self, xp, inputs, aux, is_train):
        return [self.draw(xp, tuple(self.shape)).astype(self.out_dtype(), copy=False)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        return []


@register
class RandomUniform(_Random):
    name, aliases = '_random_uniform', ('random_uniform', 'uniform')
    low = Param(float, 0.0, doc='lower bound (included)')
    high = Param(float, 1.0, doc='upper bound (excluded)')
    param_order = ('low', 'high', 'shape', 'ctx', 'dtype')

    def check(self):
        if self.high < self.low:
            raise ParameterError('_random_uniform: high (%g) < low (%g)' % (self.high, self.low))

    def draw(self, xp, size):
        return random_state(xp).uniform(self.low, self.high, size)


@register
class RandomNormal(_Random):
    name, aliases = '_random_normal', ('random_normal', 'normal')
    loc = Param(float, 0.0, doc='mean')
    scale = Param(float, 1.0, doc='standard deviation')
    param_order = ('loc', 'scale', 'shape', 'ctx', 'dtype')

    def check(self):
        if self.scale < 0:
            raise ParameterError('_random_normal: scale must be >= 0, got %g' % self.scale)

    def draw(self, xp, size):
        return random_state(xp).normal(self.loc, self.scale, size)


@register
class RandomRandint(_Random):
    name, aliases = '_random_randint', ('random_randint',)
    low = Param(int, doc='lower bound (included)')
    high = Param(int, doc='upper bound (excluded)')
    dtype = Param('dtype', None, doc='int32 (default) or int64',
                  choices=[None, np_dtype('int32'), np_dtype('int64')])
    param_order = ('low', 'high', 'shape', 'ctx', 'dtype')
    default_dtype = np.int32

    def check(self):
        if self.high <= self.low:
            raise ParameterError('_random_randint: high (%d) must exceed low (%d)'
                                 % (self.high, self.low))

    def draw(self, xp, size):
        return random_state(xp).randint(self.low, self.high, size)


@register
class RandomExponential(_Random):
    name, aliases = '_random_exponential', ('random_exponential',)
    lam = Param(float, 1.0, doc='rate (1 / mean)')
    param_order = ('lam', 'shape', 'ctx', 'dtype')

    def check(self):
        if self.lam <= 0:
            raise ParameterError('_random_exponential: lam must be > 0, got %g' % self.lam)

    def draw(self, xp, size):
        return random_state(xp).exponential(1.0 / self.lam, size)


@register
class RandomGamma(_Random):
    name, aliases = '_random_gamma', ('random_gamma',)
    alpha = Param(float, 1.0, doc='shape')
    beta = Param(float, 1.0, doc='scale')
    param_order = ('alpha', 'beta', 'shape', 'ctx', 'dtype')

    def check(self):
        if self.alpha <= 0 or self.beta <= 0:
            raise ParameterError('_random_gamma: alpha and beta must be > 0, got %g and %g'
                                 % (self.alpha, self.beta))

    def draw(self, xp, size):
        return random_state(xp).gamma(self.alpha, self.beta, size)


@register
class RandomPoisson(_Random):
    name, aliases = '_random_poisson', ('random_poisson',)
    lam = Param(float, 1.0, doc='mean')
    param_order = ('lam', 'shape', 'ctx', 'dtype')

    def check(self):
        if self.lam < 0:
            raise ParameterError('_random_poisson: lam must be >= 0, got %g' % self.lam)

    def draw(self, xp, size):
        return random_state(xp).poisson(self.lam, size)


@register
class RandomNegativeBinomial(_Random):
    """Failures before ``k`` successes of probability ``p``."""

    name, aliases = '_random_negative_binomial', ('random_negative_binomial',)
    k = Param(int, 1, doc='successes to wait for')
    p = Param(float, 1.0, doc='success probability')
    param_order = ('k', 'p', 'shape', 'ctx', 'dtype')

    def check(self):
        if self.k <= 0 or not 0 < self.p <= 1:
            raise ParameterError('_random_negative_binomial: needs k > 0 and 0 < p <= 1, got '
                                 'k=%d p=%g' % (self.k, self.p))

    def draw(self, xp, size):
        return random_state(xp).negative_binomial(self.k, self.p, size)


@register
class RandomGeneralizedNegativeBinomial(_Random):
    """Poisson counts whose mean is gamma distributed: mean ``mu``, dispersion
    ``alpha`` (``alpha = 0``: Poisson of mean ``mu``)."""

    name = '_random_generalized_negative_binomial'
    aliases = ('random_generalized_negative_binomial',)
    mu = Param(float, 1.0, doc='mean')
    alpha = Param(float, 1.0, doc='dispersion')
    param_order = ('mu', 'alpha', 'shape', 'ctx', 'dtype')

    def check(self):
        if self.mu < 0 or self.alpha < 0:
            raise ParameterError('_random_generalized_negative_binomial: needs mu >= 0 and '
                                 'alpha >= 0, got mu=%g alpha=%g' % (self.mu, self.alpha))

    def draw(self, xp, size):
        rng = random_state(xp)
        if self.alpha == 0:
            return rng.poisson(self.mu, size)
        return rng.poisson(rng.gamma(1.0 / self.alpha, self.alpha * self.mu, size))


class _Sample(Operator):
    """One distribution per element of the (equal-shaped) parameter arrays: the output
    has shape ``params.shape + shape``."""

    shape = Param('shape', (), doc='samples per distribution')
    dtype = Param('dtype', None, doc='output dtype (None: float32)', choices=_FLOATS)
    no_grad = True
    needs_inputs = False

    def infer_shape(self, in_shapes):
        shapes = [None if x is None else tuple(x) for x in in_shapes]
        p = next((x for x in shapes if x is not None), None)
        for n, x in zip(self.list_arguments(), shapes):
            if x is not None and x != p:
                raise ShapeError('%s: parameter arrays differ in shape: %r is %s but %s was '
                                 'expected' % (self.name, n, x, p))
        if p is None:
            return shapes, [None], []
        return [p] * len(shapes), [tuple(p) + tuple(self.shape)], []

    def infer_type(self, in_types):
        t = np.dtype(self.dtype) if self.dtype is not None else np.dtype(np.float32)
        return list(in_types), [t], []

    def _expand(self, a):
        return a.reshape(a.shape + (1,) * len(self.shape))

    def forward(self, xp, inputs, aux, is_train):
        params = [self._expand(x.astype(np.float64)) for x in inputs]
        size = inputs[0].shape + tuple(self.shape)
        t = np.dtype(self.dtype) if self.dtype is not None else np.dtype(np.float32)
        return [self.draw(xp, *params, size).astype(t, copy=False)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        return [xp.zeros_like(x) if n else None for x, n in zip(inputs, need)]


@register
class SampleUniform(_Sample):
    name, aliases = '_sample_uniform', ('sample_uniform',)

    def list_arguments(self):
        return ['low', 'high']

    def draw(self, xp, low, high, size):
        return low + (high - low) * random_state(xp).random_sample(size)


@register
class SampleNormal(_Sample):
    name, aliases = '_sample_normal', ('sample_normal',)

    def list_arguments(self):
        return ['mu', 'sigma']

    def draw(self, xp, mu, sigma, size):
        return mu + sigma * random_state(xp).standard_normal(size)


@register
class SampleGamma(_Sample):
    """Gamma of shape ``alpha`` and *scale* ``beta`` (mean alpha * beta)."""
    name, aliases = '_sample_gamma', ('sample_gamma',)

    def list_arguments(self):
        return ['alpha', 'beta']

    def draw(self, xp, alpha, beta, size):
        return random_state(xp).gamma(alpha, 1.0, size) * beta


@register
class SampleExponential(_Sample):
    """Exponential of *rate* ``lam`` (mean 1 / lam)."""
    name, aliases = '_sample_exponential', ('sample_exponential',)

    def list_arguments(self):
        return ['lam']

    def draw(self, xp, lam, size):
        return random_state(xp).standard_exponential(size) / lam


@register
class SamplePoisson(_Sample):
    name, aliases = '_sample_poisson', ('sample_poisson',)

    def list_arguments(self):
        return ['lam']

    def draw(self, xp, lam, size):
        return random_state(xp).poisson(xp.broadcast_to(lam, size))


@register
class SampleNegativeBinomial(_Sample):
    """Failures before ``k`` successes of probability ``p`` (a gamma-Poisson mixture, as
    MXNet draws it, so that ``k`` need not be an integer)."""
    name, aliases = '_sample_negative_binomial', ('sample_negative_binomial',)

    def list_arguments(self):
        return ['k', 'p']

    def draw(self, xp, k, p, size):
        rng = random_state(xp)
        lam = rng.gamma(xp.broadcast_to(k, size), 1.0) * ((1 - p) / p)
        return rng.poisson(lam)


@register
class SampleGeneralizedNegativeBinomial(_Sample):
    """Gamma-Poisson of mean ``mu`` and dispersion ``alpha`` (Poisson where alpha is 0)."""
    name = '_sample_generalized_negative_binomial'
    aliases = ('sample_generalized_negative_binomial',)

    def list_arguments(self):
        return ['mu', 'alpha']

    def draw(self, xp, mu, alpha, size):
        rng = random_state(xp)
        mu, alpha = xp.broadcast_to(mu, size), xp.broadcast_to(alpha, size)
        safe = xp.where(alpha > 0, alpha, 1.0)
        lam = xp.where(alpha > 0, rng.gamma(1.0 / safe, 1.0) * (mu * safe), mu)
        return rng.poisson(lam)


class _RandomLike(Operator):
    """A ``_random_*`` distribution with the shape and dtype of ``data``."""

    no_grad = True
    needs_inputs = False
    same_shape_io = True

    def infer_shape(self, in_shapes):
        s = None if in_shapes[0] is None else tuple(in_shapes[0])
        return [s], [s], []

    def infer_type(self, in_types):
        return [in_types[0]], [in_types[0]], []

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        return [self.draw(xp, x.shape).astype(x.dtype, copy=False)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        return [xp.zeros_like(inputs[0]) if need[0] else None]


def _like(base):
    body = {k: v for k, v in vars(base).items() if isinstance(v, Param)}
    body.update(name=base.name + '_like', check=base.check, draw=base.draw,
                __doc__='``%s`` with the shape and dtype of ``data``.' % base.name,
                __module__=__name__)
    if base.param_order:
        body['param_order'] = tuple(k for k in base.param_order
                                    if k not in ('shape', 'ctx', 'dtype'))
    return register(type(base.__name__ + 'Like', (_RandomLike,), body))


for _base in (RandomUniform, RandomNormal, RandomGamma, RandomExponential, RandomPoisson,
              RandomNegativeBinomial, RandomGeneralizedNegativeBinomial):
    _like(_base)


@register
class Shuffle(Operator):
    """The rows (first axis) of ``data`` in a random order."""

    name, aliases = '_shuffle', ('shuffle',)
    no_grad = True
    needs_inputs = False

    def infer_shape(self, in_shapes):
        return list(in_shapes), [in_shapes[0]], []

    def infer_type(self, in_types):
        return list(in_types), [in_types[0]], []

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        if x.ndim == 0 or x.shape[0] < 2:
            return [x.copy()]
        return [x[random_state(xp).permutation(x.shape[0])]]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        return [xp.zeros_like(inputs[0]) if need[0] else None]
