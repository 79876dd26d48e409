"""The mx.test_utils helpers MXNet programs and MXNet's unit tests import (environment,
set_env_var, discard_stderr, random_sample, retry, same_array, list_gpus,
assert_almost_equal_with_err, check_consistency) and the mx.base names."""
import os
import sys

import numpy as np
import pytest

import symgraph as mx
from symgraph import base
from symgraph import test_utils as tu

VAR = 'SYMGRAPH_TEST_UTILS_VAR'


def test_environment_as_context_manager_restores_even_on_error(monkeypatch):
    monkeypatch.setenv(VAR, 'before')
    with tu.environment(VAR, 'inside'):
        assert os.environ[VAR] == 'inside'
    assert os.environ[VAR] == 'before'
    with pytest.raises(RuntimeError):
        with tu.environment({VAR: None, VAR + '2': 'x'}):
            assert VAR not in os.environ and os.environ[VAR + '2'] == 'x'
            raise RuntimeError('boom')
    assert os.environ[VAR] == 'before' and VAR + '2' not in os.environ


def test_environment_as_decorator(monkeypatch):
    monkeypatch.delenv(VAR, raising=False)

    @tu.environment(VAR, '7')
    def read():
        return os.environ[VAR]
    assert read() == '7' and read() == '7'
    assert VAR not in os.environ


def test_environment_rejects_other_arguments():
    with pytest.raises(TypeError, match='one dict arg or two args'):
        with tu.environment(VAR):
            pass


def test_set_env_var_returns_the_previous_value(monkeypatch):
    monkeypatch.delenv(VAR, raising=False)
    assert tu.set_env_var(VAR, 'a', default_val='unset') == 'unset'
    assert tu.set_env_var(VAR, 'b') == 'a' and os.environ[VAR] == 'b'
    monkeypatch.delenv(VAR)


def test_discard_stderr_drops_what_reaches_the_descriptor(capfd):
    with tu.discard_stderr():
        print('hidden', file=sys.stderr)
        os.write(sys.stderr.fileno(), b'hidden too\n')
    print('shown', file=sys.stderr)
    err = capfd.readouterr().err
    assert 'hidden' not in err and 'shown' in err


def test_random_sample_follows_numpys_global_state():
    np.random.seed(3)
    got = tu.random_sample(list(range(10)), 4)
    np.random.seed(3)
    ref = list(range(10))
    np.random.shuffle(ref)
    assert got == ref[:4]
    with pytest.raises(ValueError, match='k=11'):
        tu.random_sample(list(range(10)), 11)


def test_retry_reruns_failing_assertions():
    calls = []

    def flaky():
        calls.append(1)
        assert len(calls) >= 3
    tu.retry(3)(flaky)()
    assert len(calls) == 3
    calls.clear()
    with pytest.raises(AssertionError):
        tu.retry(2)(flaky)()
    assert len(calls) == 2
    with pytest.raises(ValueError, match='positive int'):
        tu.retry(0)


def test_same_array_tells_shared_memory_from_a_copy():
    a = mx.nd.array([1.0, 2.0, 3.0])
    assert tu.same_array(a, a)
    assert not tu.same_array(a, a.copy())
    np.testing.assert_array_equal(a.asnumpy(), [1, 2, 3])        # left as it was


def test_list_gpus_counts_the_visible_gpus():
    assert list(tu.list_gpus()) == list(range(mx.context.num_gpus()))


def test_assert_almost_equal_with_err_allows_a_fraction_of_mismatches():
    a = np.zeros(10, np.float32)
    b = a.copy()
    b[3] = 1.0
    tu.assert_almost_equal_with_err(a, b, etol=0.2)
    b[[5, 7]] = 2.0
    with pytest.raises(AssertionError, match=r'Error rate 0.300000 exceeds etol=0.200000 .* '
                                             r'3 of 10 elements differ.*at \(5,\)'):
        tu.assert_almost_equal_with_err(a, b, etol=0.2)
    with pytest.raises(AssertionError):
        tu.assert_almost_equal_with_err(a, b)            # etol 0: plain assert_almost_equal


def _mlp():
    data = mx.sym.Variable('data')
    fc = mx.sym.FullyConnected(data, num_hidden=4, name='fc')
    return mx.sym.SoftmaxOutput(mx.sym.Activation(fc, act_type='tanh'), name='sm')


def test_check_consistency_over_contexts_and_dtypes():
    ctx_list = [{'ctx': mx.cpu(0), 'data': (3, 5), 'type_dict': {'data': np.float64}},
                {'ctx': mx.cpu(1), 'data': (3, 5), 'type_dict': {'data': np.float32}},
                {'ctx': mx.cpu(0), 'data': (3, 5), 'type_dict': {'data': np.float32}}]
    np.random.seed(0)
    gt = tu.check_consistency(_mlp(), ctx_list)
    assert gt['sm_output'].dtype == np.float64                   # the most precise is truth
    assert set(gt) == {'sm_output', 'data', 'fc_weight', 'fc_bias', 'sm_label'}


def test_check_consistency_finds_a_different_symbol(capsys):
    other = mx.sym.SoftmaxOutput(mx.sym.Activation(
        mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=4, name='fc'),
        act_type='sigmoid'), name='sm')
    ctx_list = [{'ctx': mx.cpu(0), 'data': (3, 5)}, {'ctx': mx.cpu(0), 'data': (3, 5)}]
    with pytest.raises(AssertionError):
        tu.check_consistency([_mlp(), other], ctx_list)
    assert 'Predict Err: ctx 1 vs ctx 0 at sm_output' in capsys.readouterr().out
    tu.check_consistency([_mlp(), other], ctx_list, raise_on_err=False)
    with pytest.raises(ValueError, match='at least 2'):
        tu.check_consistency(_mlp(), ctx_list[:1])
    with pytest.raises(ValueError, match='2 symbols for 3 contexts'):
        tu.check_consistency([_mlp(), other], ctx_list + ctx_list[:1])


def test_base_names_programs_import():
    assert base.py_str(b'caf\xc3\xa9') == 'café' and base.py_str('x') == 'x'
    assert base._as_list(3) == [3] and base._as_list((1, 2)) == (1, 2)
    assert isinstance(np.int64(1), base.integer_types) and isinstance(3, base.integer_types)
    assert isinstance(np.float32(1), base.numeric_types)
    assert isinstance('a', base.string_types)
    assert base.mx_real_t is np.float32
    assert mx.base.MXNetError is mx.MXNetError


def test_not_implemented_for_symbol_says_what_mxnet_says():
    def asnumpy():
        pass
    e = base.NotImplementedForSymbol(asnumpy, 'asnumpy', 1, 'a')
    assert isinstance(e, NotImplementedError) and isinstance(e, mx.MXNetError)
    assert str(e) == ("Function asnumpy (namely operator \"asnumpy\") with arguments "
                      "(<class 'int'>, <class 'str'>) is not implemented for Symbol and only "
                      "available in NDArray.")


def test_data_dir_follows_mxnet_home(monkeypatch, tmp_path):
    monkeypatch.setenv('MXNET_HOME', str(tmp_path))
    assert base.data_dir() == str(tmp_path)
    monkeypatch.delenv('MXNET_HOME')
    assert base.data_dir() == os.path.join(os.path.expanduser('~'), '.mxnet')
