"""The MXNet unit-test harness (scripts/run_mxnet_unittests.py) checked on its own.

The alias package and a small MXNet-style test file run here without MXNet's sources; the
run over MXNet's real files needs them (``MXNET_SRC``: a git directory with tag 1.9.1 or a
checkout) and is skipped without.
"""
import json
import os
import subprocess
import sys
import textwrap

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SCRIPT = os.path.join(ROOT, 'scripts', 'run_mxnet_unittests.py')


def _run(code, **env):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.join(HERE, 'alias'), os.path.join(HERE, 'shims')]), **env)
    return subprocess.run([sys.executable, '-c', textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=300)


def test_the_alias_package_is_symgraph_module_for_module():
    proc = _run("""
        import sys
        import mxnet as mx
        import symgraph
        import mxnet.ndarray
        import mxnet.symbol as S
        from mxnet.test_utils import *
        from mxnet.base import MXNetError
        from mxnet.ndarray import NDArray
        from mxnet.ndarray.random import uniform
        import mxnet.util
        from mxnet.util import np_shape
        from nose.tools import assert_raises, ok_, raises, make_decorator
        assert mx is symgraph and sys.modules['mxnet'] is symgraph
        assert mxnet.ndarray is symgraph.ndarray and S is symgraph.symbol
        assert mxnet.util is symgraph.util and np_shape is symgraph.util.np_shape
        assert sys.modules['mxnet.ndarray'] is symgraph.ndarray
        assert NDArray is symgraph.ndarray.NDArray and MXNetError is symgraph.MXNetError
        assert uniform is symgraph.nd.random.uniform
        # no second copy of any symgraph module under the mxnet name
        dupes = [k for k, m in sys.modules.items() if k.startswith('mxnet.')
                 and sys.modules.get('symgraph.' + k[6:], m) is not m]
        assert not dupes, dupes
        assert isinstance(mx.nd.ones((2,)), mxnet.ndarray.NDArray)
        assert sys is __import__('sys') and np is __import__('numpy')
        try:
            import mxnet.no_such_module
        except ModuleNotFoundError as err:
            print('missing:', err)
        else:
            raise AssertionError('mxnet.no_such_module imported')
        print('ok')
    """)
    assert proc.returncode == 0, proc.stderr
    assert 'missing:' in proc.stdout and proc.stdout.rstrip().endswith('ok')


SNIPPET = '''
import time
import mxnet as mx
from mxnet.test_utils import *
from nose.tools import raises, assert_raises
from common import with_seed


@with_seed()
def test_passes():
    x = mx.nd.ones((2, 3))
    assert_almost_equal((x * 2).asnumpy(), np.full((2, 3), 2.0))


def test_uses_numpy_aliases_numpy_2_removed():
    assert np.int(3.7) == 3 and np.product([2, 3]) == 6 and np.alltrue([1, 1])


def test_fails():
    assert mx.nd.ones((2,)).asnumpy().sum() == 3, 'two ones do not make three'


@raises(ValueError)
def test_raises_as_nose_says():
    raise ValueError('expected')


def test_hangs():
    time.sleep(60)


def test_skipped():
    import pytest
    pytest.skip('not here')


def test_crashes():
    import os
    import signal
    os.kill(os.getpid(), signal.SIGKILL)


def test_after_the_crash():
    assert mx.nd.zeros((1,)).asnumpy()[0] == 0
'''

COMMON = '''
import functools
import mxnet as mx
import numpy as np
from nose.tools import make_decorator


def with_seed(seed=None):
    def decorate(f):
        @make_decorator(f)
        def wrapped(*args, **kwargs):
            np.random.seed(0)
            mx.random.seed(0)
            return f(*args, **kwargs)
        return wrapped
    return decorate
'''


def test_the_runner_tables_an_mxnet_style_file(tmp_path):
    unit = tmp_path / 'tests' / 'python' / 'unittest'
    unit.mkdir(parents=True)
    (unit / 'test_snippet.py').write_text(SNIPPET)
    (unit / 'common.py').write_text(COMMON)
    (unit / 'test_broken.py').write_text('from mxnet.no_such_module import thing\n')
    (unit / 'pytest.ini').write_text('[pytest]\n')
    passing = tmp_path / 'passing.json'
    passing.write_text(json.dumps({'files': {'test_snippet.py': [
        'test_snippet.py::test_passes', 'test_snippet.py::test_fails',
        'test_snippet.py::test_raises_as_nose_says', 'test_snippet.py::test_hangs']}}))
    out = tmp_path / 'out.json'
    proc = subprocess.run(
        [sys.executable, SCRIPT, '--tests-dir', str(unit), '--test-timeout', '3',
         '--passing', str(passing), '--out', str(out), '--write-passing',
         str(tmp_path / 'written.json'), 'snippet', 'test_broken.py', 'missing_file'],
        capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    table = json.loads(out.read_text())['files']
    tests = {k.split('::')[1]: v for k, v in table['test_snippet.py']['tests'].items()}
    assert {k: v['outcome'] for k, v in tests.items()} == {
        'test_passes': 'passed', 'test_fails': 'failed',
        'test_uses_numpy_aliases_numpy_2_removed': 'passed', 'test_raises_as_nose_says': 'passed',
        'test_hangs': 'failed', 'test_skipped': 'skipped', 'test_crashes': 'failed',
        'test_after_the_crash': 'passed'}
    assert 'died' in tests['test_crashes']['message']
    assert 'two ones do not make three' in tests['test_fails']['message']
    assert 'TimeoutError' in tests['test_hangs']['message']
    assert tests['test_hangs']['seconds'] < 30
    assert table['test_broken.py']['collect_errors'], table['test_broken.py']
    lines = proc.stdout.splitlines()
    snippet = next(line for line in lines if line.startswith('test_snippet.py'))
    assert "2/4    of MXNet's passing ( 50.0%)" in snippet
    assert 'passed 4, failed 3, errors 0, skipped 1' in snippet
    assert any(line.startswith('test_broken.py') and 'IMPORT ERROR' in line for line in lines)
    assert any(line.startswith('test_missing_file.py') and 'missing' in line for line in lines)
    assert lines[-1].startswith('TOTAL') and "2/4" in lines[-1]
    written = json.loads((tmp_path / 'written.json').read_text())['files']
    assert written['test_snippet.py'] == ['test_snippet.py::test_after_the_crash',
                                          'test_snippet.py::test_passes',
                                          'test_snippet.py::test_raises_as_nose_says',
                                          'test_snippet.py::'
                                          'test_uses_numpy_aliases_numpy_2_removed']


def test_the_stored_mxnet_results_list_the_issue_files():
    with open(os.path.join(HERE, 'mxnet_1.9.1_passing.json')) as f:
        files = json.load(f)['files']
    assert {'test_attr.py', 'test_symbol.py', 'test_operator.py'} <= set(files)
    # a file outside tests/python/unittest is keyed with its folder ('onnx/test_node.py'),
    # its tests by the file's own name, as pytest names them in that folder
    assert all(t.startswith(name.rpartition('/')[2] + '::')
               for name, tests in files.items() for t in tests)
    assert {'onnx/test_operators.py', 'quantization/test_quantization.py',
            'mkl/test_bf16_operator.py', 'test_profiler.py'} <= set(files)


@pytest.mark.skipif(not os.environ.get('MXNET_SRC'),
                    reason="MXNet's sources are not here (set MXNET_SRC to a git directory "
                           'with tag 1.9.1 or a checkout)')
def test_mxnets_own_test_attr_passes_through_the_alias(tmp_path):
    out = tmp_path / 'out.json'
    proc = subprocess.run([sys.executable, SCRIPT, '--mxnet-src', os.environ['MXNET_SRC'],
                           '--out', str(out), 'attr'], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    tests = json.loads(out.read_text())['files']['test_attr.py']['tests']
    assert len(tests) >= 4
    assert all(t['outcome'] == 'passed' for t in tests.values()), tests
