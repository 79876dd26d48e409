"""The oneDNN backend's int8 kernels (symgraph/backend/onednn/int8.py): exact int32 sums
of uint8/int8 data and int8 weights against NumPy's integer products, the cases they
decline, and the quantized operators giving the same bits with and without them."""
import numpy as np
import pytest

from symgraph.backend import onednn
from symgraph.opdef import get_op

RNG = np.random.RandomState(11)


def _backend():
    be = onednn.backend()
    if be is None:
        pytest.skip('oneDNN not loaded')
    return be


def _conv_ref(x, w, b, stride, pad):
    op = get_op('Convolution')(kernel=w.shape[2:], num_filter=w.shape[0], stride=stride,
                               pad=pad, no_bias=True)
    y = op.forward(np, [x.astype(np.float64), w.astype(np.float64)], [], False)[0]
    if b is not None:
        y = y + b.reshape(1, -1, *([1] * (y.ndim - 2)))
    return y.astype(np.int64)


@pytest.mark.parametrize('dtype', ['uint8', 'int8'])
@pytest.mark.parametrize('stride,pad,bias', [((1, 1), (1, 1), True), ((2, 2), (0, 0), False),
                                             ((1, 2), (1, 0), True)])
def test_int8_conv_is_exact(dtype, stride, pad, bias):
    be = _backend()
    lo, hi = (0, 256) if dtype == 'uint8' else (-128, 128)
    x = RNG.randint(lo, hi, (3, 16, 11, 9)).astype(dtype)
    w = RNG.randint(-128, 128, (24, 16, 3, 3)).astype(np.int8)
    b = RNG.randint(-5000, 5000, 24).astype(np.int32) if bias else None
    y = be.int8_conv(x, w, b, stride, pad, (1, 1), 1)
    assert y is not None and y.dtype == np.int32
    np.testing.assert_array_equal(y, _conv_ref(x, w, b, stride, pad))


@pytest.mark.parametrize('dtype', ['uint8', 'int8'])
def test_int8_matmul_is_exact(dtype):
    be = _backend()
    lo, hi = (0, 256) if dtype == 'uint8' else (-128, 128)
    x = RNG.randint(lo, hi, (33, 257)).astype(dtype)
    w = RNG.randint(-128, 128, (19, 257)).astype(np.int8)
    y = be.int8_matmul(x, w)
    np.testing.assert_array_equal(y, x.astype(np.int64) @ w.astype(np.int64).T)


def test_declines_what_it_does_not_take():
    be = _backend()
    w = np.ones((4, 3, 3, 3), np.int8)
    assert be.int8_conv(np.ones((2, 3, 8, 8), np.float32), w, None, (1, 1), (1, 1), (1, 1),
                        1) is None
    assert be.int8_matmul(np.ones((2, 3), np.int8), np.ones((4, 3), np.uint8)) is None
    assert be.int8_matmul(np.ones((1, 2), np.int8), np.ones((1, 2), np.int8)) is None  # tiny


def test_quantized_conv_same_bits_with_and_without_the_kernel(monkeypatch):
    from symgraph.ops import quantized_nn
    x = RNG.randint(0, 256, (2, 8, 10, 10)).astype(np.uint8)
    w = RNG.randint(-128, 128, (16, 8, 3, 3)).astype(np.int8)
    b = RNG.randint(-128, 128, 16).astype(np.int8)
    r = [np.float32([v]) for v in (0.0, 2.0, -0.5, 0.5, -0.1, 0.1)]
    op = get_op('_contrib_quantized_conv')(kernel=(3, 3), num_filter=16, pad=(1, 1))
    with_kernel = op.forward(np, [x, w, b] + r, [], False)
    monkeypatch.setattr(quantized_nn, '_kernel', lambda name: None)
    without = op.forward(np, [x, w, b] + r, [], False)
    for a, c in zip(with_kernel, without):
        np.testing.assert_array_equal(a, c)
