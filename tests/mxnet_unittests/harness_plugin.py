"""pytest plugin of the MXNet unit-test harness: a per-test time limit and a results log.

Loaded with ``-p harness_plugin`` by ``scripts/run_mxnet_unittests.py`` in the child pytest
that runs MXNet's test files. Environment:

``MXU_RESULTS``  file to which one JSON line per finished test (and per failed collection)
                 is appended and flushed at once, so that a child killed mid-file (a hang
                 in native code, a crash) still leaves every earlier result behind.
``MXU_TIMEOUT``  seconds one test may run (setup, call and teardown each) before it fails
                 with ``TimeoutError``; SIGALRM, so it interrupts Python code only.

MXNet 1.9.1's tests were written for NumPy < 1.24: they use the aliases NumPy 1.24 and 2.0
removed (``np.int``, ``np.float``, ``np.bool``, ``np.product``, ``np.alltrue``...). The
plugin puts back the ones missing in the running NumPy (``MXU_NUMPY_ALIASES=0``: not), so
that a symgraph run on NumPy 2 fails a test for what symgraph does, not for what NumPy
removed; under MXNet's own NumPy 1.23 nothing is missing and nothing changes.
"""
import json
import os
import signal
import warnings

import pytest

_PHASES = ('setup', 'call', 'teardown')

#: NumPy names MXNet 1.9.1's tests use that NumPy 1.24 / 2.0 removed, and what they meant
_NUMPY_ALIASES = {'int': int, 'float': float, 'bool': bool, 'object': object, 'str': str,
                  'complex': complex, 'long': int, 'unicode': str, 'float_': 'float64',
                  'complex_': 'complex128', 'NaN': 'nan', 'NAN': 'nan', 'Inf': 'inf',
                  'Infinity': 'inf', 'infty': 'inf', 'PINF': 'inf', 'NINF': None,
                  'product': 'prod', 'cumproduct': 'cumprod', 'alltrue': 'all',
                  'sometrue': 'any', 'round_': 'round', 'asfarray': None, 'in1d': 'isin'}


def _restore_numpy_aliases(np):
    for name, value in _NUMPY_ALIASES.items():
        try:
            with warnings.catch_warnings():      # NumPy 2 warns about some removed names
                warnings.simplefilter('ignore')
                getattr(np, name)
            continue                     # still there (NumPy < 1.24 / < 2.0)
        except AttributeError:
            pass
        if name == 'NINF':
            value = -np.inf
        elif name == 'asfarray':
            def value(a, dtype=np.float64):
                return np.asarray(a, dtype=dtype if np.issubdtype(dtype, np.inexact)
                                  else np.float64)
        elif isinstance(value, str):
            value = getattr(np, value)
        setattr(np, name, value)


def pytest_configure(config):
    if os.environ.get('MXU_NUMPY_ALIASES', '1') != '0':
        import numpy
        _restore_numpy_aliases(numpy)


def _limit():
    return float(os.environ.get('MXU_TIMEOUT', '0') or 0)


def _on_alarm(signum, frame):
    raise TimeoutError('test ran past the harness time limit (%ss)' % _limit())


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    limit = _limit()
    if limit > 0:
        old = signal.signal(signal.SIGALRM, _on_alarm)
    try:
        yield
    finally:
        if limit > 0:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)


def _timed(hook_name):
    @pytest.hookimpl(hookwrapper=True)
    def wrapper(item, *args):
        limit = _limit()
        if limit > 0:
            signal.setitimer(signal.ITIMER_REAL, limit)
        try:
            yield
        finally:
            if limit > 0:
                signal.setitimer(signal.ITIMER_REAL, 0)
    wrapper.__name__ = hook_name
    return wrapper


pytest_runtest_setup = _timed('pytest_runtest_setup')
pytest_runtest_call = _timed('pytest_runtest_call')
pytest_runtest_teardown = _timed('pytest_runtest_teardown')

_state = {}


def _write(record):
    path = os.environ.get('MXU_RESULTS')
    if not path:
        return
    with open(path, 'a') as f:
        f.write(json.dumps(record) + '\n')
        f.flush()


def _message(report):
    """The exception's one-line message (type and text), cut to 300 characters."""
    crash = getattr(report.longrepr, 'reprcrash', None)
    if crash is not None:
        text = crash.message
    elif isinstance(report.longrepr, tuple):       # a skip: (file, line, reason)
        text = str(report.longrepr[2])
    else:
        text = str(report.longrepr or '').strip().splitlines()[-1:] or ['']
        text = text[0] if isinstance(text, list) else text
    return ' '.join(text.split())[:300]


def pytest_runtest_logreport(report):
    state = _state.setdefault(report.nodeid, {'outcome': None, 'message': '', 'seconds': 0.0})
    state['seconds'] += report.duration
    if report.when == 'setup':
        if report.failed:
            state.update(outcome='error', message=_message(report))
        elif report.skipped:
            state.update(outcome='skipped', message=_message(report))
    elif report.when == 'call':
        if hasattr(report, 'wasxfail'):
            state.update(outcome='xfailed' if report.skipped else 'xpassed')
        elif report.failed:
            state.update(outcome='failed', message=_message(report))
        elif report.skipped:
            state.update(outcome='skipped', message=_message(report))
        else:
            state['outcome'] = 'passed'
    elif report.when == 'teardown':
        if report.failed and state['outcome'] in (None, 'passed'):
            state.update(outcome='error', message=_message(report))
        _write({'test': report.nodeid, 'outcome': state['outcome'] or 'error',
                'message': state['message'], 'seconds': round(state['seconds'], 3)})


def pytest_runtest_logstart(nodeid, location):
    # a test that starts and never finishes (the child killed or crashed) is found by this
    _write({'start': nodeid})


def pytest_collectreport(report):
    if report.failed:
        _write({'collect_error': report.nodeid, 'message': _message(report)})
