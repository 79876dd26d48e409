"""``_sample_multinomial`` and ``_sample_unique_zipfian`` (ops/sample.py): OpCases,
distribution checks with fixed seeds and generous thresholds (the numbers differ from
MXNet's generator), and the get_prob gradient against MXNet 1.9.1."""
import numpy as np
import pytest

import symgraph as mx
from harness import OpCase, case_tests
from symgraph.base import MXNetError
import _golden_amp_multi as golden


def _probs(r, s, d):
    p = r.uniform(0.1, 1, s[0])
    return [(p / p.sum(-1, keepdims=True)).astype(d)]


#: why the rows have no reference value
FREQUENCIES = 'random draws: test_sample.py::test_multinomial_frequencies'

CASES = [
    OpCase('_sample_multinomial', {'shape': (4,)}, shapes=[(2, 3)], grad=(),
           inputs=_probs, dtypes=('float32', 'float64'), no_ref=FREQUENCIES),
    OpCase('_sample_multinomial', {'get_prob': True, 'dtype': 'float32'}, shapes=[(5,)],
           grad=(), inputs=_probs, no_ref=FREQUENCIES),
    OpCase('_sample_unique_zipfian', {'range_max': 50, 'shape': (3, 6)}, shapes=[], grad=(),
           dtypes=('int64',),
           no_ref='random draws: test_sample.py::test_unique_zipfian_is_unique_and_log_uniform'),
]

test_forward, test_gradient = case_tests(CASES)


def test_get_prob_gradient_against_mxnet():
    golden.check('multinomial_get_prob')


def _chi2(counts, expected):
    return float(((counts - expected) ** 2 / expected).sum())


def test_multinomial_frequencies():
    mx.random.seed(3)
    p = np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]], np.float32)
    n = 20000
    s, logp = mx.nd.random.multinomial(mx.nd.array(p), shape=n, get_prob=True)
    assert s.dtype == np.int32 and s.shape == (2, n) and logp.shape == (2, n)
    s = s.asnumpy()
    for row in range(2):
        counts = np.bincount(s[row], minlength=3)
        # 2 degrees of freedom: P(chi2 > 20) < 5e-5
        assert _chi2(counts, p[row] * n) < 20, counts
        np.testing.assert_allclose(logp.asnumpy()[row], np.log(p[row][s[row]]), rtol=1e-6)
    one = mx.nd.random.multinomial(mx.nd.array([0.0, 0.0, 1.0]))
    assert one.shape == (1,) and one.asnumpy().tolist() == [2]      # MXNet: (1,)


def test_multinomial_gradient_in_an_executor():
    data = mx.sym.var('p')
    s = mx.sym.random.multinomial(data, shape=(2,), get_prob=True)
    loss = mx.sym.make_loss(mx.sym.sum(s[1]))
    p = mx.nd.array([[0.0, 1.0], [1.0, 0.0]])
    exe = loss.simple_bind(mx.cpu(), p=(2, 2))
    exe.forward(is_train=True, p=p)
    exe.backward()
    # d/dp sum(log p[idx]) = count / p at the drawn index
    np.testing.assert_allclose(exe.grad_dict['p'].asnumpy(), [[0, 2], [2, 0]])


def test_unique_zipfian_is_unique_and_log_uniform():
    mx.random.seed(5)
    samples, tries = mx.nd._internal._sample_unique_zipfian(range_max=1000, shape=(400, 10))
    s = samples.asnumpy()
    assert s.dtype == np.int64 and tries.dtype == np.int64 and tries.shape == (400,)
    assert all(len(set(row)) == 10 for row in s)
    assert s.min() >= 0 and s.max() < 1000
    assert (tries.asnumpy() >= 10).all()
    # round(exp(u log 1000)) - 1: class 0 has log(1.5)/log(1000) = 5.9%, so it is in about
    # half the rows of ~11 draws (MXNet 1.9.1, seeded: 0.49); classes >= 500 together have
    # 1 - log(500.5)/log(1000) = 10% of the draws (MXNet: 0.107)
    assert 0.35 < (s == 0).any(axis=1).mean() < 0.65
    assert 0.06 < (s >= 500).mean() < 0.16
    assert 10 <= tries.asnumpy().mean() < 13


def test_zipfian_refuses_more_samples_than_classes():
    with pytest.raises(MXNetError, match='distinct'):
        mx.nd._internal._sample_unique_zipfian(range_max=5, shape=(1, 6))
    with pytest.raises(MXNetError, match='batch_size'):
        mx.nd._internal._sample_unique_zipfian(range_max=5, shape=(6,))
