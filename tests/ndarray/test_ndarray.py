"""NDArray basics and mx.nd operator calls."""
import numpy as np
import pytest

import symgraph as mx


def test_array_dtype_rules():
    # MXNet 1.9.1: float32 for any non-NDArray source (NumPy arrays of every dtype too)
    # unless dtype is given; an NDArray source keeps its dtype
    for dt in (np.float64, np.float16, np.int64, np.int32, np.uint8):
        assert mx.nd.array(np.zeros(3, dtype=dt)).dtype == np.float32, dt
    assert mx.nd.array(np.zeros(3), dtype='float64').dtype == np.float64
    assert mx.nd.array(np.zeros(3), dtype='int32').dtype == np.int32
    assert mx.nd.array([1, 2]).dtype == np.float32
    assert mx.nd.array(mx.nd.zeros(3, dtype='int32')).dtype == np.int32


def test_creation_and_context():
    a = mx.nd.zeros((2, 3))
    assert a.shape == (2, 3) and a.context == mx.cpu() and not a.asnumpy().any()
    assert mx.nd.ones((2,)).asnumpy().tolist() == [1, 1]
    assert mx.nd.full((2,), 7).asnumpy().tolist() == [7, 7]
    assert not mx.nd.empty((4,)).asnumpy().any()                 # never uninitialised
    np.testing.assert_allclose(mx.nd.arange(0, 6, 2).asnumpy(), [0, 2, 4])
    assert mx.nd.arange(3, repeat=2).shape == (6,)


def test_slicing_shares_memory_and_assignment():
    a = mx.nd.zeros((3, 4))
    b = a[1]
    b[:] = 5
    assert a.asnumpy()[1].tolist() == [5] * 4
    a[0, 1:3] = mx.nd.array([1, 2])
    assert a.asnumpy()[0].tolist() == [0, 1, 2, 0]
    a[:] = np.ones((3, 4))
    assert a.asnumpy().sum() == 12


def test_arithmetic_and_inplace_keep_dtype():
    a = mx.nd.array([1, 2, 3])
    assert ((a + 1) * 2 - a / 2).asnumpy().tolist() == [3.5, 5.0, 6.5]
    assert (a ** 2).dtype == np.float32
    assert (1 - a).asnumpy().tolist() == [0, -1, -2]
    assert (a > 1).asnumpy().tolist() == [0, 1, 1]
    a += 1
    assert a.asnumpy().tolist() == [2, 3, 4]
    assert mx.nd.array([3.5]).asscalar() == 3.5
    with pytest.raises(ValueError):
        a.asscalar()


def test_copyto_as_in_context_astype():
    a = mx.nd.array([1, 2])
    b = mx.nd.zeros((2,))
    a.copyto(b)
    assert b.asnumpy().tolist() == [1, 2]
    c = a.copyto(mx.cpu())
    c[:] = 0
    assert a.asnumpy().tolist() == [1, 2]
    assert a.as_in_context(mx.cpu()) is a
    assert a.astype('int32').dtype == np.int32
    with pytest.raises(ValueError):
        a.copyto(mx.nd.zeros((3,)))


def test_imperative_operators():
    x = mx.nd.array([[1, -2], [3, -4]])
    assert mx.nd.relu(x).asnumpy().tolist() == [[1, 0], [3, 0]]
    assert mx.nd.sum(x, axis=1).asnumpy().tolist() == [-1, -1]
    y = mx.nd.FullyConnected(x, mx.nd.ones((3, 2)), mx.nd.zeros((3,)), num_hidden=3)
    assert y.shape == (2, 3)
    out = mx.nd.zeros((2, 2))
    mx.nd.abs(x, out=out)
    assert out.asnumpy().tolist() == [[1, 2], [3, 4]]
    assert x.exp().shape == (2, 2)


def test_save_load_round_trip(tmp_path):
    f = str(tmp_path / 'a.params')
    mx.nd.save(f, {'arg:w': mx.nd.array([[1, 2]]), 'aux:m': mx.nd.array([3], dtype='float64')})
    d = mx.nd.load(f)
    assert d['arg:w'].asnumpy().tolist() == [[1, 2]] and d['aux:m'].dtype == np.float64
    mx.nd.save(f, [mx.nd.ones((2,))])
    assert isinstance(mx.nd.load(f), list)
    with pytest.raises(TypeError):
        mx.nd.save(f, {'a': np.ones(2)})


def test_gpu_without_cupy_or_device_fails_clearly():
    if mx.context.num_gpus() > 0:
        pytest.skip('a GPU is present')
    with pytest.raises(mx.MXNetError, match='GPU|CuPy|cupy'):
        mx.nd.zeros((2,), ctx=mx.gpu(0))


def test_eye_and_linspace():
    np.testing.assert_array_equal(mx.nd.eye(2, 3, 1).asnumpy(), np.eye(2, 3, 1))
    assert mx.nd.eye(3).shape == (3, 3) and mx.nd.eye(3).dtype == np.float32
    np.testing.assert_allclose(mx.nd.linspace(0, 1, 5).asnumpy(), np.linspace(0, 1, 5))
    assert mx.nd.linspace(0, 1, 4, endpoint=False, dtype='float64').dtype == np.float64


def test_functional_arithmetic_dispatches_as_mxnet():
    a = mx.nd.array([[1, 2], [3, 4]])
    b = mx.nd.array([10, 20])
    np.testing.assert_array_equal(mx.nd.add(a, b).asnumpy(), [[11, 22], [13, 24]])
    np.testing.assert_array_equal(mx.nd.subtract(3, a).asnumpy(), [[2, 1], [0, -1]])
    np.testing.assert_array_equal(mx.nd.divide(a, 2).asnumpy(), [[0.5, 1], [1.5, 2]])
    np.testing.assert_array_equal(mx.nd.lesser(2, a).asnumpy(), [[0, 0], [1, 1]])
    np.testing.assert_array_equal(mx.nd.maximum(a, b).asnumpy(), [[10, 20], [10, 20]])
    np.testing.assert_array_equal(mx.nd.power(2, a).asnumpy(), [[2, 4], [8, 16]])
    assert mx.nd.add(1, 2) == 3 and mx.nd.greater(2, 1) == 1.0
    ints = mx.nd.array([7, -7], dtype='int32')
    np.testing.assert_array_equal(mx.nd.divide(ints, 2.5).asnumpy(), [3, -3])  # 2.5 -> 2
    assert mx.nd.moveaxis(mx.nd.zeros((2, 3, 4)), 0, -1).shape == (3, 4, 2)
    src = np.arange(4.0)
    shared = mx.nd.from_numpy(src)
    shared[0] = 9       # (MXNet makes src read-only: test_mxnet_parity_ndarray.py)
    assert src[0] == 9
    with pytest.raises(ValueError, match='C-contiguous'):
        mx.nd.from_numpy(np.zeros((3, 3))[:, 1])


def test_operator_results_never_alias_their_inputs():
    """mx.nd.<op> gives a new array even where the operator returns a view (MXNet)."""
    a = mx.nd.array([[1, 2], [3, 4]])
    flat = mx.nd.Flatten(a)
    rev = mx.nd.reverse(a, axis=0)
    a[:] = 0
    np.testing.assert_array_equal(flat.asnumpy(), [[1, 2], [3, 4]])
    np.testing.assert_array_equal(rev.asnumpy(), [[3, 4], [1, 2]])
    view = a.reshape((4,))             # NDArray.reshape shares memory, as in MXNet
    a[:] = 5
    assert view.asnumpy().tolist() == [5, 5, 5, 5]
