"""``from mxnet.test_utils import *`` hands on what MXNet 1.9.1's does (its module has no
``__all__``): the modules it imports and the helpers MXNet's unit tests use; and those
helpers behave as MXNet's."""
import numpy as np
import pytest

import symgraph as mx


def _star():
    namespace = {}
    exec('from symgraph.test_utils import *', namespace)
    return namespace


def test_star_import_gives_mxnets_modules_and_helpers():
    ns = _star()
    import os
    import sys
    import time
    assert ns['sys'] is sys and ns['os'] is os and ns['time'] is time
    assert ns['np'] is np and ns['rnd'] is np.random and ns['npt'] is np.testing
    assert ns['mx'] is mx
    assert ns['use_np'] is mx.util.use_np
    assert ns['Features'] is mx.runtime.Features
    for name in ('environment', 'compare_optimizer', 'compare_ndarray_tuple',
                 'gen_buckets_probs_with_ppf', 'verify_generator', 'chi_square_check',
                 'is_aarch64_run', 'discard_stderr', 'rand_shape_nd', 'DummyIter',
                 'assert_almost_equal_with_err', 'check_symbolic_forward',
                 'check_symbolic_backward', 'check_numeric_gradient', 'array', 'Symbol',
                 'default_context', 'same_symbol_structure', 'effective_dtype', 'logging',
                 'json', 'OrderedDict', 'contextmanager', 'Context', 'current_context'):
        assert name in ns, name
    assert not any(k.startswith('_') and k != '__builtins__' for k in ns)


def test_generator_checks_accept_a_right_and_refuse_a_wrong_distribution():
    ss = pytest.importorskip('scipy.stats')
    tu = mx.test_utils
    buckets, probs = tu.gen_buckets_probs_with_ppf(lambda x: ss.norm.ppf(x, 0, 1), 5)
    assert len(buckets) == 5 and probs == [0.2] * 5
    assert buckets[0][0] == -np.inf and buckets[-1][1] == np.inf
    np.random.seed(0)
    good = tu.verify_generator(lambda n: np.random.normal(0, 1, size=n), buckets, probs,
                               nsamples=20000)
    assert len(good) == 5
    with pytest.raises(AssertionError, match='Generator test fails'):
        tu.verify_generator(lambda n: np.random.normal(0.3, 1, size=n), buckets, probs,
                            nsamples=20000)
    # discrete buckets: the values themselves
    p, obs, exp = tu.chi_square_check(lambda n: np.random.randint(0, 2, size=n), [0, 1],
                                      [0.5, 0.5], nsamples=10000)
    assert obs.sum() == 10000 and list(exp) == [5000, 5000] and p > 1e-4
    # 7 buckets of 10001 samples: MXNet's integer expected counts sum to 10000, which SciPy
    # >= 1.9 refused (ValueError) before the counts were rescaled
    b7, p7 = tu.gen_buckets_probs_with_ppf(lambda x: ss.norm.ppf(x, 0, 1), 7)
    p, obs, exp = tu.chi_square_check(lambda n: np.random.normal(0, 1, size=n), b7, p7,
                                      nsamples=10001)
    assert obs.sum() == 10001 and exp.sum() == 7 * 1428 and p > 1e-4
    assert tu.mean_check(lambda n: np.random.normal(2, 1, size=n), 2, 1, nsamples=10000)
    assert not tu.mean_check(lambda n: np.random.normal(2.5, 1, size=n), 2, 1, nsamples=10000)
    assert tu.var_check(lambda n: np.random.normal(0, 2, size=n), 2, nsamples=20000)


def test_compare_optimizer_passes_for_equal_and_fails_for_different_optimizers():
    tu = mx.test_utils
    opt1 = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9)
    opt2 = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9)
    tu.compare_optimizer(opt1, opt2, (3, 4), np.float32)
    with pytest.raises(AssertionError):
        tu.compare_optimizer(mx.optimizer.SGD(learning_rate=0.1),
                             mx.optimizer.SGD(learning_rate=0.2), (3, 4), np.float32)
    # sparse weights and gradients for opt2, their dense copies for opt1 (as MXNet's): without
    # weight decay the lazy update equals the dense one (its values against MXNet's:
    # tests/ndarray/test_sparse_dense_backed.py)
    tu.compare_optimizer(mx.optimizer.SGD(learning_rate=0.1),
                         mx.optimizer.SGD(learning_rate=0.1), (3, 4), np.float32,
                         w_stype='row_sparse', g_stype='row_sparse')
    with pytest.raises(AssertionError):
        tu.compare_optimizer(mx.optimizer.SGD(learning_rate=0.1),
                             mx.optimizer.SGD(learning_rate=0.2), (3, 4), np.float32,
                             w_stype='row_sparse', g_stype='row_sparse')


def test_compare_ndarray_tuple_walks_nested_tuples():
    tu = mx.test_utils
    a = mx.nd.array([1, 2])
    tu.compare_ndarray_tuple((a, (a, None)), (a.copy(), (a.copy(), a)))
    with pytest.raises(AssertionError):
        tu.compare_ndarray_tuple((a, (a,)), (a, (a + 1,)))


def test_dummy_iter_repeats_the_first_batch():
    it = mx.io.NDArrayIter(np.arange(12, dtype=np.float32).reshape(6, 2), batch_size=2)
    dummy = mx.test_utils.DummyIter(it)
    first = dummy.next()
    assert dummy.next() is first and next(dummy) is first
    assert dummy.batch_size == 2 and dummy.provide_data == it.provide_data


def test_collapse_sum_like_and_same_symbol_structure():
    tu = mx.test_utils
    a = np.arange(24.).reshape(2, 3, 4)
    np.testing.assert_array_equal(tu.collapse_sum_like(a, (3, 1)),
                                  a.sum(axis=(0, 2)).reshape(3, 1))
    x = mx.sym.var('x')
    assert tu.same_symbol_structure(mx.sym.relu(x), mx.sym.relu(mx.sym.var('y')))
    assert not tu.same_symbol_structure(mx.sym.relu(x), mx.sym.sigmoid(x))
