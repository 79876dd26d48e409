"""mx.nd.contrib.isinf / isfinite / isnan as MXNet 1.9.1's (its test_ndarray.py
test_ndarray_is_inf / _is_finite / _is_nan): NumPy's answers as 0/1 in the data's dtype."""
import numpy as np
import pytest

import symgraph as mx


@pytest.mark.parametrize('name', ['isinf', 'isfinite', 'isnan'])
@pytest.mark.parametrize('dtype', [np.float32, np.float64])
def test_matches_numpy(name, dtype):
    a = np.random.RandomState(0).uniform(-3, 3, (3, 4)).astype(dtype)
    a[0, 0], a[0, 1], a[1, 0], a[1, 1] = np.inf, -np.inf, np.nan, 5
    out = getattr(mx.nd.contrib, name)(mx.nd.array(a, dtype=dtype))
    assert out.dtype == dtype and out.shape == a.shape
    np.testing.assert_array_equal(out.asnumpy(), getattr(np, name)(a).astype(dtype))
