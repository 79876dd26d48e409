"""``mx.nd.contrib.isinf`` / ``isfinite`` / ``isnan`` and ``rand_zipfian``, after MXNet
1.9.1's ``python/mxnet/ndarray/contrib.py``: Python functions over the operators. The
tests are 1.0 where they hold and 0.0 elsewhere, in the data's dtype (MXNet's
comparisons)."""
import math

import numpy as np

from ..context import current_context
from .ndarray import logical_and, random

__all__ = ['isinf', 'isfinite', 'isnan', 'rand_zipfian']


def isinf(data):
    """1 where ``data`` is +-inf.

    Examples
    --------
    >>> import numpy as np
    >>> import symgraph as mx
    >>> mx.nd.contrib.isinf(mx.nd.array([np.inf, -np.inf, np.nan, 1])).asnumpy()
    array([1., 1., 0., 0.], dtype=float32)
    """
    return data.abs() == np.inf


def isfinite(data):
    """1 where ``data`` is neither inf nor NaN."""
    return logical_and(data.abs() != np.inf, data == data)


def isnan(data):
    """1 where ``data`` is NaN."""
    return data != data


def zipfian(uniform, true_classes, num_sampled, range_max):
    """``rand_zipfian`` over either API: ``uniform(low, high, shape, dtype)`` draws (mx.nd's
    or mx.sym's); ``true_classes`` an NDArray or a Symbol."""
    if not isinstance(num_sampled, (int, np.integer)) or num_sampled < 1:
        raise ValueError('rand_zipfian: num_sampled must be a positive int, got %r'
                         % (num_sampled,))
    if not isinstance(range_max, (int, np.integer)) or range_max < 1:
        raise ValueError('rand_zipfian: range_max must be a positive int, got %r'
                         % (range_max,))
    log_range = math.log(range_max + 1)
    rand = uniform(0, log_range, (num_sampled,), 'float64')
    # within [0, range_max) even where exp(log(range_max + 1)) - 1 rounds up to range_max
    sampled = (rand.exp() - 1).astype('int64') % range_max
    true_cls = true_classes.astype('float64')
    count_true = ((true_cls + 2.0) / (true_cls + 1.0)).log() / log_range * num_sampled
    sampled_fp64 = sampled.astype('float64')
    count_sampled = ((sampled_fp64 + 2.0) / (sampled_fp64 + 1.0)).log() / log_range \
        * num_sampled
    return sampled, count_true, count_sampled


def rand_zipfian(true_classes, num_sampled, range_max, ctx=None):
    """Draw ``num_sampled`` classes (with replacement) from the approximately log-uniform
    (Zipfian) distribution over ``[0, range_max)``, P(class) = (log(class + 2) -
    log(class + 1)) / log(range_max + 1), as MXNet's candidate sampler.

    Returns
    -------
    (sampled_classes, expected_count_true, expected_count_sampled)
        int64 (num_sampled,); float64 like ``true_classes``; float64 (num_sampled,): the
        expected number of times each true / sampled class is drawn.

    Examples
    --------
    >>> import symgraph as mx
    >>> s, ct, cs = mx.nd.contrib.rand_zipfian(mx.nd.array([3]), 4, 5)
    >>> s.shape, s.dtype.__name__, round(float(ct.asscalar()), 6)
    ((4,), 'int64', 0.498155)
    """
    ctx = current_context() if ctx is None else ctx

    def uniform(low, high, shape, dtype):
        return random.uniform(low, high, shape=shape, dtype=dtype, ctx=ctx)
    return zipfian(uniform, true_classes.as_in_context(ctx), num_sampled, range_max)
