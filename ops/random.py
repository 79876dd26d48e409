"""Random sampling operators: ``_random_uniform``, ``_random_normal``, ``_random_randint``,
``_random_exponential``, ``_random_gamma``, ``_random_poisson`` (no inputs, distribution
parameters as scalars), ``_sample_uniform`` and ``_sample_normal`` (one distribution per
element of their inputs) and ``_shuffle`` (rows of the input in random order).

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
        a, b = in_shapes
        if a is not None and b is not None and tuple(a) != tuple(b):
            raise ShapeError('%s: parameter arrays differ in shape: %s and %s'
                             % (self.name, tuple(a), tuple(b)))
        p = a if a is not None else b
        if p is None:
            return list(in_shapes), [None], []
        return [p, p], [tuple(p) + tuple(self.shape)], []

    def infer_type(self, in_types):
        t = np.dtype(self.dtype) if self.dtype is not None else np.dtype(np.float32)
        return list(in_types), [t], []

    def _expand(self, a):
        return a.reshape(a.shape + (1,) * len(self.shape))

    def forward(self, xp, inputs, aux, is_train):
        a, b = (self._expand(x.astype(np.float64)) for x in inputs)
        size = inputs[0].shape + tuple(self.shape)
        t = np.dtype(self.dtype) if self.dtype is not None else np.dtype(np.float32)
        return [self.draw(xp, a, b, size).astype(t, copy=False)]

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
