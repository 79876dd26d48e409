"""mx.kv against MXNet 1.9.1 (``optimizer_cases.run_kvstore``, data in
``tests/golden/data/optimizer.npz``): sums over two and three devices, pushpull in place,
an optimizer running in 'local' and 'device' stores with str keys, and 2-bit compression
with its residuals over one and two devices and under an optimizer."""
import os

import numpy as np
import pytest

import symgraph as mx
import optimizer_cases as cases

with np.load(os.path.join(os.path.dirname(__file__), '..', 'golden', 'data',
                          'optimizer.npz')) as _z:
    GOLD = {k[3:]: _z[k] for k in _z.files if k.startswith('kv/')}

GOT = cases.run_kvstore(mx)

#: 'device' stores sum three or more values with the ring all-reduce, whose float32 rounding
#: may differ from MXNet's ElementwiseSum in the last bit
TOLERANCE = {'device/pushpull3': 1e-6}


def test_same_entries():
    assert sorted(GOT) == sorted(GOLD)


@pytest.mark.parametrize('key', sorted(GOLD))
def test_matches_mxnet(key):
    got, want = GOT[key], GOLD[key]
    assert got.dtype == want.dtype and got.shape == want.shape
    if key in TOLERANCE:
        np.testing.assert_allclose(got, want, rtol=TOLERANCE[key], atol=1e-7)
    else:
        np.testing.assert_array_equal(got, want, err_msg=key)


def test_compression_sends_only_threshold_multiples():
    for key, value in GOT.items():
        if key.startswith('2bit1/'):
            assert set(np.unique(value)) <= {-0.5, 0.0, 0.5}, key
        if key.startswith('2bit2/'):
            assert set(np.unique(value)) <= {-1.0, -0.5, 0.0, 0.5, 1.0}, key
