"""NDArray behaviours MXNet 1.9.1's test_ndarray.py checks: moveaxis with several axes
(as NumPy's), concatenate (MXNet's older concat), bool() of an empty array."""
import numpy as np
import pytest

import symgraph as mx


@pytest.mark.parametrize('source, destination', [
    (0, 2), (-1, 0), ([0, 1], [2, 3]), ([2, 3], [0, 1]), ([0, 1, 2], [2, 3, 0]),
    ([3, 0], [1, 0]), (range(4), range(4)), ([0, -1], [0, -1])])
def test_moveaxis_as_numpy(source, destination):
    a = np.arange(24.0).reshape(4, 1, 2, 3)
    got = mx.nd.moveaxis(mx.nd.array(a), source, destination).asnumpy()
    np.testing.assert_array_equal(got, np.moveaxis(a, source, destination))


def test_moveaxis_refuses_bad_axes():
    x = mx.nd.zeros((1, 2, 3))
    with pytest.raises(ValueError):
        mx.nd.moveaxis(x, 3, 0)
    with pytest.raises(ValueError):
        mx.nd.moveaxis(x, [0, 1], [1])


def test_concatenate_joins_along_an_axis():
    parts = [np.random.uniform(size=s).astype(np.float32)
             for s in [(2, 3, 4), (2, 2, 4), (2, 1, 4)]]
    got = mx.nd.concatenate([mx.nd.array(p) for p in parts], axis=1)
    np.testing.assert_array_equal(got.asnumpy(), np.concatenate(parts, axis=1))
    one = mx.nd.ones((2,))
    assert mx.nd.concatenate([one], always_copy=False) is one
    with pytest.raises(ValueError):
        mx.nd.concatenate([])


def test_bool_of_empty_zero_and_one():
    assert not bool(mx.nd.array([]))
    assert not bool(mx.nd.zeros((1,)))
    assert bool(mx.nd.ones((1,)))
    with pytest.raises(ValueError):
        bool(mx.nd.ones((2,)))
