"""``_histogram`` (ops/sorting.py) against NumPy, plus its Python wrappers
(``mx.nd.histogram``, ``mx.sym.histogram``) and errors. Values seen on MXNet 1.9.1 are pinned
below; the golden cases are ``splitidx_*`` in tests/golden/graphs_compute_split_index.py."""
import numpy as np
import pytest

import symgraph as mx
from _refs import given
from harness import case_tests, OpCase


_HIST = np.array([0, 1, 1, 2.5, 3, 4, 5, 5.5, -1, 10, np.nan])


CASES = [
    OpCase('_histogram', dict(bin_cnt=4, range=(0, 5)), [(11,)], inputs=given(_HIST),
           ref=lambda x: [np.array([3, 0, 2, 2]), np.array([0, 1.25, 2.5, 3.75, 5])],
           grad=()),
    OpCase('_histogram', dict(bin_cnt=3), [(2, 4)],
           inputs=given([[1, 2, 3, 3.5], [0.5, 2.25, 1.75, 3.0]]),
           ref=lambda x: list(np.histogram(x, 3)), grad=()),
    OpCase('_histogram', {}, [(11,), (5,)], inputs=given(_HIST, [0, 1, 2, 5, 6]),
           ref=lambda x, b: [np.array([1, 2, 3, 2]), b], grad=()),
]


test_forward, test_gradient = case_tests(CASES)


def test_histogram_wrappers_as_in_mxnet():
    x = mx.nd.array(_HIST)
    cnt, edges = mx.nd.histogram(x, bins=4, range=(0, 5))
    assert cnt.dtype == np.int64 and edges.dtype == np.float32
    np.testing.assert_array_equal(cnt.asnumpy(), [3, 0, 2, 2])
    cnt, _ = mx.nd.histogram(x, bins=mx.nd.array([0, 1, 2, 5, 6]))
    np.testing.assert_array_equal(cnt.asnumpy(), [1, 2, 3, 2])
    with pytest.warns(UserWarning, match='range is not specified'):
        cnt, edges = mx.nd.histogram(mx.nd.array([0, 1, 1, 2.5, 3, 4, 5, 5.5, -1, 10]), bins=5)
    np.testing.assert_array_equal(cnt.asnumpy(), [4, 2, 3, 0, 1])
    np.testing.assert_allclose(edges.asnumpy(), [-1, 1.2, 3.4, 5.6, 7.8, 10], rtol=1e-6)
    with pytest.raises(ValueError, match='integer or an NDArray'):
        mx.nd.histogram(x, bins=2.5)
    a = mx.sym.var('a')
    with pytest.raises(ValueError, match='null range'):
        mx.sym.histogram(a, bins=5)
    s = mx.sym.histogram(a, bins=4, range=(0, 5))
    assert s.list_arguments() == ['a']
    assert s.list_outputs() == ['_histogram0_output0', '_histogram0_output1']
    assert s.infer_shape(a=(10,))[1] == [(4,), (5,)]
    assert s.infer_type(a='float64')[1] == [np.int64, np.float64]
    s = mx.sym.histogram(a, bins=mx.sym.var('b'))
    assert s.list_arguments() == ['a', 'b']
    assert s.infer_shape(a=(2, 5), b=(5,))[1] == [(4,), (5,)]
