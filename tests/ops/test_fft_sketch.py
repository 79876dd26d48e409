"""``_contrib_fft`` / ``_contrib_ifft`` (ops/fft.py) and ``_contrib_count_sketch``
(ops/gather_scatter.py) against loop references written from MXNet 1.9.1's documentation and
CUDA sources. No golden data: MXNet 1.9.1 runs these three on the GPU only (its CPU build
fails: "Not Implemented")."""
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


def _sketch_inputs(h, s):
    def make(rng, shapes, dtype):
        return [rng.uniform(-1, 1, shapes[0]), np.array([h], np.float64),
                np.array([s], np.float64)]
    return make


def _sketch_ref(out_dim):
    def ref(x, h, s):
        out = np.zeros((x.shape[0], out_dim))
        for n, j in np.ndindex(*x.shape):
            out[n, int(h[0, j])] += s[0, j] * x[n, j]
        return out
    return ref


CASES = [
    OpCase('_contrib_fft', {}, [(3, 5)], ref=_dft_ref, rtol=1e-4, atol=1e-5),
    OpCase('_contrib_fft', {'compute_size': 4}, [(2, 1, 2, 4)], ref=_dft_ref, rtol=1e-4,
           atol=1e-5),
    OpCase('_contrib_ifft', {}, [(3, 8)], ref=_idft_ref, rtol=1e-4, atol=1e-5),
    OpCase('_contrib_ifft', {}, [(1, 2, 2, 6)], ref=_idft_ref, rtol=1e-4, atol=1e-5),
    OpCase('_contrib_count_sketch', {'out_dim': 4}, [(3, 6), (1, 6), (1, 6)],
           inputs=_sketch_inputs([0, 3, 1, 3, 2, 0], [1, -1, 1, 1, -1, 1]),
           ref=_sketch_ref(4), grad=(0,)),
    OpCase('_contrib_count_sketch', {'out_dim': 7, 'processing_batch_size': 2},
           [(5, 4), (1, 4), (1, 4)], inputs=_sketch_inputs([6, 6, 0, 2], [-1, -1, 1, -1]),
           ref=_sketch_ref(7), grad=(0,)),
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
