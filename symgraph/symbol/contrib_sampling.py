"""``mx.sym.contrib.rand_zipfian``, after MXNet 1.9.1's ``python/mxnet/symbol/contrib.py``:
the graph of ``mx.nd.contrib.rand_zipfian`` (one implementation over both APIs,
ndarray/contrib_math.py)."""
from ..ndarray.contrib_math import zipfian
from .symbol import Symbol, random

__all__ = ['rand_zipfian']


def rand_zipfian(true_classes, num_sampled, range_max):
    """The Symbols ``(sampled_classes, expected_count_true, expected_count_sampled)`` of
    :func:`symgraph.ndarray.contrib_math.rand_zipfian` for the Symbol ``true_classes``."""
    if not isinstance(true_classes, Symbol):
        raise TypeError('rand_zipfian: true_classes must be a Symbol, got %s'
                        % type(true_classes).__name__)

    def uniform(low, high, shape, dtype):
        return random.uniform(low, high, shape=shape, dtype=dtype)
    return zipfian(uniform, true_classes, num_sampled, range_max)
