"""``_contrib_calibrate_entropy`` (ops/calibrate.py) against a float64 loop reference of MXNet
1.9.1's KL threshold search (calibrate.cc: counts truncated, the slice's first count left
out of q, q spread by the slice's nonzero counts) and against MXNet 1.9.1's own values
(tests/golden/make_calibrate.py, data/calibrate.npz: the threshold exact, the divergence to
float32 rounding; also golden cases splitidx_calibrate* and ops15)."""
import os

import numpy as np
import pytest

import symgraph as mx
from harness import case_tests, OpCase
from symgraph.base import ParameterError
from symgraph.opdef import ShapeError, get_op

GOLDEN = np.load(os.path.join(os.path.dirname(__file__), os.pardir, 'golden', 'data',
                              'calibrate.npz'))
GOLDEN_CASES = sorted({k.split('/')[0] for k in GOLDEN.files})


def _smooth(p, eps=1e-4):
    z = [v == 0 for v in p]
    nz = len(p) - sum(z)
    eps1 = eps * sum(z) / nz
    return [eps if zero else v - eps1 for v, zero in zip(p, z)]


def _kl(p, q):
    sp, sq = sum(p), sum(q)
    return sum(a / sp * np.log((a / sp) / (b / sq)) for a, b in zip(p, q) if a > 0)


def _ref(nq):
    def ref(hist, edges):
        h = [float(v) for v in hist]
        n = len(h)
        zero = n // 2
        results = []
        for i in range(nq // 2, zero + 1):
            lo, hi = zero - i, zero + i + 1
            p = h[lo:hi]
            p[0] += sum(h[:lo])
            p[-1] += sum(h[hi:])
            sl = [0] + [int(v) for v in h[lo + 1:hi]]     # MXNet: size_t, bin lo to p only
            m = len(sl) // nq
            q = [0.0] * len(sl)
            for j in range(nq):
                a, b = j * m, (len(sl) if j == nq - 1 else (j + 1) * m)
                total = sum(sl[a:b])
                norm = sum(1 for k in range(a, b) if sl[k] != 0)
                for k in range(a, b):
                    if norm and p[k] != 0:
                        q[k] = total / norm
            results.append((_kl(_smooth(p), _smooth(q)), float(edges[hi])))
        d, t = min(results, key=lambda r: r[0])
        return [np.array([t], np.float32), np.array([d], np.float32)]
    return ref


def _hist(n, nonzero):
    def make(rng, shapes, dtype):
        h, _ = np.histogram(rng.normal(size=5000), bins=n, range=(-4, 4))
        h = h * (rng.uniform(size=n) < nonzero)
        return [h.astype(dtype), np.linspace(-3, 3, n + 1).astype(dtype)]
    return make


CASES = [
    OpCase('_contrib_calibrate_entropy', {'num_quantized_bins': 31}, [(129,), (130,)],
           inputs=_hist(129, 1.0), ref=_ref(31), grad=(), rtol=1e-4, atol=1e-7),
    OpCase('_contrib_calibrate_entropy', {'num_quantized_bins': '15'}, [(101,), (102,)],
           inputs=_hist(101, 0.5), ref=_ref(15), grad=(), rtol=1e-4, atol=1e-7),
]

test_forward, test_gradient = case_tests(CASES)


def test_shapes_and_errors():
    s = mx.sym.contrib.calibrate_entropy(mx.sym.var('h'), mx.sym.var('e'), name='c')
    assert s.list_outputs() == ['c_threshold', 'c_divergence']
    assert s.infer_shape(h=(1001,), e=(1002,))[1] == [(1,), (1,)]
    with pytest.raises(ShapeError, match='one more entry'):
        get_op('_contrib_calibrate_entropy')().infer_shape([(1001,), (1001,)])
    with pytest.raises(ShapeError, match='fewer bins'):
        get_op('_contrib_calibrate_entropy')().infer_shape([(101,), (102,)])


@pytest.mark.parametrize('name', GOLDEN_CASES)
def test_mxnet_values(name):
    h, e = GOLDEN[name + '/hist'], GOLDEN[name + '/hist_edges']
    th, d = mx.nd.contrib.calibrate_entropy(mx.nd.array(h), mx.nd.array(e),
                                            num_quantized_bins=int(GOLDEN[name + '/nq']))
    np.testing.assert_array_equal(th.asnumpy(), GOLDEN[name + '/threshold'])
    # float32 sums in MXNet's order; numpy's float32 log may differ from logf by an ulp
    np.testing.assert_allclose(d.asnumpy(), GOLDEN[name + '/divergence'], rtol=2e-5,
                               atol=1e-10)


def test_value_errors():
    e = mx.nd.array(np.linspace(-1, 1, 8))
    for bad in (-1.0, np.nan, np.inf):
        h = np.ones(7, np.float32)
        h[2] = bad
        with pytest.raises(ParameterError, match='finite counts >= 0'):
            mx.nd.contrib.calibrate_entropy(mx.nd.array(h), e, num_quantized_bins=3)
    with pytest.raises(ShapeError, match='odd number of bins'):
        mx.nd.contrib.calibrate_entropy(mx.nd.ones(8), mx.nd.ones(9), num_quantized_bins=3)
