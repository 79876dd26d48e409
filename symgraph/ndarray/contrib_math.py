"""``mx.nd.contrib.isinf`` / ``isfinite`` / ``isnan``, after MXNet 1.9.1's
``python/mxnet/ndarray/contrib.py``: Python functions over the comparison operators, 1.0
where the test holds and 0.0 elsewhere, in the data's dtype (MXNet's comparisons)."""
import numpy as np

from .ndarray import logical_and

__all__ = ['isinf', 'isfinite', 'isnan']


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
