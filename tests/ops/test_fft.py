"""``_contrib_fft`` / ``_contrib_ifft`` (ops/fft.py) against loop references written from
MXNet 1.9.1's documentation and CUDA sources; test_shapes_and_errors also checks
``_contrib_count_sketch`` (its rows are in test_gather_scatter.py). No golden data: MXNet 1.9.1
runs these on the GPU only (its CPU build fails: "Not Implemented")."""
import cmath

import numpy as np
import pytest

import symgraph as mx
from harness import case_tests, OpCase
from symgraph.base import MXNetError
from symgraph.opdef import ShapeError, get_op


def _dft_ref(x):
    d = x.shape[-1]
    out = np.empty(x.shape[:-1] + (2 * d,))
    for idx in np.ndindex(*x.shape[:-1]):
        for k in range(d):
            z = sum(x[idx + (n,)] * cmath.exp(-2j * cmath.pi * k * n / d) for n in range(d))
            out[idx + (2 * k,)], out[idx + (2 * k + 1,)] = z.real, z.imag
    return out


def _idft_ref(x):
    d = x.shape[-1] // 2
    out = np.empty(x.shape[:-1] + (d,))
    for idx in np.ndindex(*x.shape[:-1]):
        for n in range(d):
            z = sum((x[idx + (2 * k,)] + 1j * x[idx + (2 * k + 1,)])
                    * cmath.exp(2j * cmath.pi * k * n / d) for k in range(d))
            out[idx + (n,)] = z.real                              # no 1 / d, as MXNet
    return out


CASES = [
    OpCase('_contrib_fft', {}, [(3, 5)], ref=_dft_ref, rtol=1e-4, atol=1e-5),
    OpCase('_contrib_fft', {'compute_size': 4}, [(2, 1, 2, 4)], ref=_dft_ref, rtol=1e-4,
           atol=1e-5),
    OpCase('_contrib_ifft', {}, [(3, 8)], ref=_idft_ref, rtol=1e-4, atol=1e-5),
    OpCase('_contrib_ifft', {}, [(1, 2, 2, 6)], ref=_idft_ref, rtol=1e-4, atol=1e-5),
]


test_forward, test_gradient = case_tests(CASES)


def test_ifft_of_fft_is_d_times_the_input():
    x = np.random.RandomState(0).uniform(-1, 1, (4, 6))
    y = mx.nd.contrib.ifft(mx.nd.contrib.fft(mx.nd.array(x, dtype='float64'))).asnumpy()
    np.testing.assert_allclose(y, 6 * x, rtol=1e-12, atol=1e-12)


def test_shapes_and_errors():
    assert mx.sym.contrib.fft(mx.sym.var('x')).infer_shape(x=(2, 5))[1] == [(2, 10)]
    with pytest.raises(ShapeError, match='2-D'):
        get_op('_contrib_fft')().infer_shape([(2, 3, 4)])
    with pytest.raises(ShapeError, match='must be even'):
        get_op('_contrib_ifft')().infer_shape([(2, 5)])
    s = mx.sym.contrib.count_sketch(mx.sym.var('x'), mx.sym.var('h'), mx.sym.var('s'),
                                    out_dim=5)
    assert s.infer_shape(x=(3, 7))[0] == [(3, 7), (1, 7), (1, 7)]
    with pytest.raises(MXNetError, match='outside'):
        mx.nd.contrib.count_sketch(mx.nd.ones((1, 2)), mx.nd.array([[0, 5]]),
                                   mx.nd.array([[1, 1]]), out_dim=5)
