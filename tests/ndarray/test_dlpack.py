"""DLPack exchange as MXNet 1.9.1 has it (NDArray.to_dlpack_for_read/_for_write,
mx.nd.from_dlpack / to_dlpack_for_*), both ways with NumPy 2 arrays, without copies."""
import numpy as np
import pytest

import symgraph as mx

#: NumPy 2 imports DLPack arrays writable; NumPy 1.x always read-only
NUMPY2 = int(np.__version__.split('.')[0]) >= 2


def test_round_trip_through_a_capsule_shares_memory():
    x = mx.nd.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    y = mx.nd.from_dlpack(mx.nd.to_dlpack_for_write(x))
    assert y.shape == (2, 3) and y.dtype == np.float32 and y.context == mx.cpu()
    if NUMPY2:
        y[:] = 5
        np.testing.assert_array_equal(x.asnumpy(), np.full((2, 3), 5, np.float32))
    else:       # NumPy 1.x makes every array it imports through DLPack read-only
        with pytest.raises(ValueError):
            y[:] = 5
        x[:] = 5
        np.testing.assert_array_equal(y.asnumpy(), np.full((2, 3), 5, np.float32))
    r = mx.nd.from_dlpack(x.to_dlpack_for_read())
    np.testing.assert_array_equal(r.asnumpy(), x.asnumpy())
    with pytest.raises(ValueError):         # a read capsule gives a read-only array
        r[0, 0] = 3
    x[0, 0] = 1
    assert r.asnumpy()[0, 0] == 1


def test_numpy_reads_an_ndarray_and_an_ndarray_wraps_numpy():
    x = mx.nd.arange(4)
    a = np.from_dlpack(x)
    assert np.shares_memory(a, x._data)
    if NUMPY2:
        a[1] = 10                               # NumPy 2 asks for a versioned capsule
        assert x.asnumpy()[1] == 10
    else:       # NumPy 1.x imports read-only
        with pytest.raises(ValueError):
            a[1] = 10
    assert x.__dlpack_device__() == (1, 0)
    b = np.arange(6.0).reshape(2, 3)
    z = mx.nd.from_dlpack(b)
    b[0, 0] = 9
    assert z.asnumpy()[0, 0] == 9 and z.dtype == np.float64
    np.testing.assert_array_equal(mx.nd.from_dlpack(x).asnumpy(), x.asnumpy())


def test_a_capsule_is_consumed_once_and_other_objects_are_refused():
    c = mx.nd.ones((2,)).to_dlpack_for_read()
    mx.nd.from_dlpack(c)
    with pytest.raises(ValueError, match='consumed only once'):
        mx.nd.from_dlpack(c)
    with pytest.raises(TypeError):
        mx.nd.from_dlpack([1, 2])


def test_torch_both_ways():
    torch = pytest.importorskip('torch')
    t = torch.arange(4, dtype=torch.float32)
    x = mx.nd.from_dlpack(t)
    t[0] = 7
    assert x.asnumpy()[0] == 7
    u = torch.utils.dlpack.from_dlpack(x.to_dlpack_for_read())
    assert u.tolist() == x.asnumpy().tolist()
