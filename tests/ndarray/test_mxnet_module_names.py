"""Names MXNet 1.9.1's unit tests import from symgraph's modules under MXNet's module paths
(``from mxnet.ndarray.ndarray import py_slice`` in test_ndarray.py)."""
import symgraph as mx
from symgraph.ndarray.ndarray import py_slice


def test_py_slice_is_the_builtin_slice():
    assert py_slice is slice
    a = mx.nd.arange(6)
    assert a[py_slice(1, 3)].asnumpy().tolist() == [1, 2]
