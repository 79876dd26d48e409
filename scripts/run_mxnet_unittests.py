#!/usr/bin/env python
"""Run MXNet 1.9.1's own unit-test files against symgraph, through an ``mxnet`` alias.

The test files come from MXNet's sources (a git directory, bare or not, with the tag, or a
checkout holding ``tests/python/unittest``) and are copied into a temporary folder with
``tests/python/common`` and ``tests/python/train`` beside them (test_module.py imports from
both), as MXNet lays them out. Each file then runs in a pytest
child of its own, with ``tests/mxnet_unittests/alias`` (``import mxnet`` gives symgraph)
and ``tests/mxnet_unittests/shims`` (the parts of nose MXNet's tests import) first on the
path, a time limit per test and one per file. The result is a table per test (JSON) and one
line per file: how many of the tests that pass on real MXNet 1.9.1 pass here.

With ``--reference`` the alias is left out and the interpreter given by ``--python`` (one
with mxnet 1.9.1 and pytest installed) runs the same files: that run, with
``--write-passing``, makes ``tests/mxnet_unittests/mxnet_1.9.1_passing.json``.

Examples::

    python scripts/run_mxnet_unittests.py --mxnet-src /path/to/mxnet.git
    python scripts/run_mxnet_unittests.py --mxnet-src $MXNET_SRC test_attr test_symbol
    python scripts/run_mxnet_unittests.py --mxnet-src $MXNET_SRC --reference \\
        --python /path/to/mxnet-venv/bin/python --write-passing \\
        tests/mxnet_unittests/mxnet_1.9.1_passing.json
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HARNESS = os.path.join(ROOT, 'tests', 'mxnet_unittests')
PASSING = os.path.join(HARNESS, 'mxnet_1.9.1_passing.json')
TAG = '1.9.1'
TEST_DIRS = ('tests/python/unittest', 'tests/python/common', 'tests/python/train',
             'tests/python/quantization', 'tests/python/mkl', 'tests/python-pytest/onnx')
#: test files outside tests/python/unittest are named with one of these folder prefixes
#: ('onnx/test_operators'); their results are keyed 'onnx/test_operators.py'
FOLDERS = {'onnx': 'tests/python-pytest/onnx', 'quantization': 'tests/python/quantization',
           'mkl': 'tests/python/mkl'}

#: the default unit-test files of issue 29 (MXNet's symbolic and imperative API)
ISSUE_FILES = (
    'attr', 'symbol', 'executor', 'infer_shape', 'infer_type', 'ndarray', 'operator',
    'contrib_operator', 'module', 'optimizer', 'metric', 'io', 'init', 'viz', 'kvstore',
    'model_parallel', 'exc_handling', 'random', 'rnn', 'engine', 'multi_device_exec',
    'kvstore_custom', 'contrib_optimizer', 'contrib_krprod', 'contrib_hawkesll',
    'contrib_control_flow', 'contrib_svrg_module', 'contrib_svrg_optimizer', 'dlpack')
#: Gluon and autograd files (others' work in progress)
GLUON_FILES = (
    'gluon', 'autograd', 'gluon_rnn', 'gluon_trainer', 'gluon_data', 'gluon_data_vision',
    'gluon_contrib', 'gluon_save', 'gluon_utils', 'loss', 'contrib_autograd',
    'gluon_batch_processor', 'gluon_estimator', 'gluon_event_handler', 'higher_order_grad',
    'thread_local')
#: issue 31 (ONNX), issue 32 (int8 and bfloat16 on the CPU), issue 33 (profiler)
ONNX_FILES = ('onnx/test_operators', 'onnx/test_node')
QUANTIZATION_FILES = ('quantization/test_quantization', 'mkl/test_quantization_mkldnn',
                      'mkl/test_subgraph')
BF16_FILES = ('mkl/test_bf16_operator', 'mkl/test_contrib_amp')
SETS = {'issue': ISSUE_FILES, 'gluon': GLUON_FILES, 'all': ISSUE_FILES + GLUON_FILES,
        'onnx': ONNX_FILES, 'quantization': QUANTIZATION_FILES, 'bf16': BF16_FILES,
        'profiler': ('profiler',)}

PYTEST_INI = """[pytest]
markers =
    seed: set the random seeds
    serial: a test that needs more resources
    remote_required: needs internet access
    gpu: needs a GPU
    integration: integration test
    garbage_expected: leaks ndarray references
"""


def file_name(name):
    """'attr', 'test_attr' or 'test_attr.py' -> 'test_attr.py'; 'onnx/test_node' ->
    'onnx/test_node.py' (a folder of :data:`FOLDERS`)."""
    folder, _, base = name.replace(os.sep, '/').rpartition('/')
    folder = folder.rpartition('/')[2]
    if folder in FOLDERS:
        return folder + '/' + file_name(base)
    name = base
    if not name.startswith('test_'):
        name = 'test_' + name
    return name if name.endswith('.py') else name + '.py'


def _is_git_dir(path):
    return os.path.isfile(os.path.join(path, 'HEAD')) and os.path.isdir(
        os.path.join(path, 'objects'))


def extract(src, dest, tag=TAG):
    """Copy MXNet's ``tests/python/{unittest,common}`` from ``src`` into ``dest``.

    ``src`` is a git directory (bare, or a clone's ``.git``), a clone, or a folder that
    holds ``tests/python/unittest``. Returns ``dest/tests/python/unittest``.
    """
    git_dir = src if _is_git_dir(src) else os.path.join(src, '.git')
    if os.path.isdir(os.path.join(src, 'tests', 'python', 'unittest')):
        for sub in TEST_DIRS:
            if os.path.isdir(os.path.join(src, sub)):
                shutil.copytree(os.path.join(src, sub), os.path.join(dest, sub),
                                dirs_exist_ok=True)
    elif _is_git_dir(git_dir):
        git = ['git', '--git-dir', git_dir]
        listing = subprocess.run(git + ['ls-tree', '-r', '-z', tag, '--'] + list(TEST_DIRS),
                                 check=True, capture_output=True).stdout.decode()
        for entry in filter(None, listing.split('\0')):
            meta, path = entry.split('\t', 1)
            mode, kind, sha = meta.split()
            if kind != 'blob':
                continue
            blob = subprocess.run(git + ['cat-file', 'blob', sha], capture_output=True)
            if blob.returncode:          # a blob missing from a partial mirror
                continue
            out = os.path.join(dest, path)
            os.makedirs(os.path.dirname(out), exist_ok=True)
            if mode == '120000':         # quantization/common.py -> ../unittest/common.py
                os.symlink(blob.stdout.decode(), out)
                continue
            with open(out, 'wb') as f:
                f.write(blob.stdout)
    else:
        raise FileNotFoundError('no MXNet test files in %r: give a git directory with tag %s '
                                'or a folder holding tests/python/unittest' % (src, tag))
    unit = os.path.join(dest, 'tests', 'python', 'unittest')
    if not os.path.isdir(unit):
        raise FileNotFoundError('%r has no tests/python/unittest at %s' % (src, tag))
    os.makedirs(os.path.join(dest, 'tests', 'data'), exist_ok=True)
    # test_image.py writes its list files into ./data (the children run in unit/)
    os.makedirs(os.path.join(dest, 'tests', 'python', 'unittest', 'data'), exist_ok=True)
    for sub in (unit,) + tuple(os.path.join(dest, d) for d in FOLDERS.values()):
        if os.path.isdir(sub):
            with open(os.path.join(sub, 'pytest.ini'), 'w') as f:
                f.write(PYTEST_INI)
    return unit


def run_dir(unit, name):
    """(folder to run ``name`` in, file name there) for a :func:`file_name` result."""
    folder, _, base = name.rpartition('/')
    if not folder:
        return unit, name
    root = os.path.dirname(os.path.dirname(os.path.dirname(unit)))
    return os.path.join(root, FOLDERS[folder]), base


def _read_results(path):
    tests, collect_errors, started = {}, [], []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                try:
                    rec = json.loads(line)
                except ValueError:       # a line cut short by a killed child
                    continue
                if 'collect_error' in rec:
                    collect_errors.append(rec['message'])
                elif 'start' in rec:
                    started.append(rec['start'])
                else:
                    tests[rec['test']] = {'outcome': rec['outcome'],
                                          'message': rec['message'],
                                          'seconds': rec['seconds']}
    return tests, collect_errors, started


def _pytest(cmd, unit_dir, env, results, timeout):
    """One pytest child: (returncode or None when killed at ``timeout``, output tail); it
    appends to ``results``, which keeps every child's lines of the file."""
    try:
        proc = subprocess.run(cmd, cwd=unit_dir, env=env, capture_output=True, text=True,
                              timeout=timeout)
        return proc.returncode, (proc.stdout + proc.stderr)[-2000:]
    except subprocess.TimeoutExpired as err:
        out = err.stdout or ''
        return None, (out.decode(errors='replace') if isinstance(out, bytes) else out)[-2000:]


def run_file(unit_dir, name, python, reference, test_timeout, file_timeout, extra=(),
             restarts=20):
    """Run one test file in pytest children; returns its record (tests, errors, timing).

    A child killed at ``file_timeout`` seconds, or dying in native code, leaves the test it
    was running marked failed; a new child then runs the tests not run yet (``--deselect``
    of the finished ones), up to ``restarts`` times.
    """
    fd, results = tempfile.mkstemp(prefix='mxu-', suffix='.jsonl')
    os.close(fd)
    paths = [os.path.join(HARNESS, 'shims'), HARNESS]
    if not reference:
        paths.insert(0, os.path.join(HARNESS, 'alias'))
    env = dict(os.environ, MXU_RESULTS=results, MXU_TIMEOUT=str(test_timeout),
               MXNET_HOME=os.path.join(os.path.dirname(os.path.dirname(unit_dir)), 'data'),
               PYTHONPATH=os.pathsep.join(paths + [os.environ.get('PYTHONPATH', '')]),
               PYTHONDONTWRITEBYTECODE='1')
    cmd = [python, '-m', 'pytest', '-q', '-p', 'no:cacheprovider', '-p', 'harness_plugin',
           '-p', 'mxu_downloads',
           '-c', os.path.join(unit_dir, 'pytest.ini'), '--rootdir', unit_dir,
           '-o', 'console_output_style=classic', '--tb=no', name] + list(extra)
    start = time.time()
    tests, collect_errors, timed_out, tails = {}, [], False, []
    for attempt in range(restarts + 1):
        deselect = [a for t in tests for a in ('--deselect', t)]
        returncode, tail = _pytest(cmd + deselect, unit_dir, env, results, file_timeout)
        tails.append(tail)
        new, errors, started = _read_results(results)
        new.update(tests)                 # the killed tests' verdicts stay
        tests = new
        if attempt == 0:
            collect_errors = errors
        killed = returncode is None
        timed_out = timed_out or killed
        unfinished = [t for t in started if t not in tests]
        if not (killed or (returncode is not None and returncode < 0)) or not unfinished:
            break
        why = ('the file ran past its time limit (%ss) during this test' % file_timeout
               if killed else 'the test process died (exit %s)' % returncode)
        for t in unfinished:
            tests[t] = {'outcome': 'failed', 'message': why, 'seconds': None}
    os.unlink(results)
    return {'tests': tests, 'collect_errors': collect_errors, 'returncode': returncode,
            'timed_out': timed_out, 'seconds': round(time.time() - start, 1),
            'output_tail': tails[-1] if (collect_errors or returncode not in (0, 1)) else ''}


def counts(record):
    out = {'passed': 0, 'failed': 0, 'error': 0, 'skipped': 0}
    for t in record['tests'].values():
        key = t['outcome'] if t['outcome'] in out else 'error'
        out[key] += 1
    return out


def summary_line(name, record, passing):
    """One line: ours against the tests that pass on MXNet (``passing``, a set, or None)."""
    c = counts(record)
    ok = {t for t, r in record['tests'].items() if r['outcome'] == 'passed'}
    head = '%-34s' % name
    if record['collect_errors']:
        head += ' IMPORT ERROR (%s)' % record['collect_errors'][0][:80]
    if record['timed_out']:
        head += ' FILE TIMED OUT'
    tail = 'passed %d, failed %d, errors %d, skipped %d' % (
        c['passed'], c['failed'], c['error'], c['skipped'])
    if passing is None:
        return '%s %s' % (head, tail)
    both = len(ok & passing)
    pct = 100.0 * both / len(passing) if passing else 100.0
    return '%s %4d/%-4d of MXNet\'s passing (%5.1f%%); %s' % (head, both, len(passing), pct,
                                                             tail)


def _write_json(path, table):
    tmp = path + '.tmp'
    with open(tmp, 'w') as f:
        json.dump(table, f, indent=1, sort_keys=True)
    os.replace(tmp, path)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('files', nargs='*', help="test files ('attr', 'test_attr.py'); "
                    'default: the --set')
    ap.add_argument('--set', choices=sorted(SETS), default='all',
                    help='named list of files when none are given (default: all)')
    ap.add_argument('--mxnet-src', default=os.environ.get('MXNET_SRC'),
                    help='MXNet git directory or checkout (default: $MXNET_SRC)')
    ap.add_argument('--tests-dir', help='an already extracted tests/python/unittest to use')
    ap.add_argument('--tag', default=TAG)
    ap.add_argument('--python', default=sys.executable, help='interpreter of the children')
    ap.add_argument('--reference', action='store_true',
                    help='run without the alias (real MXNet in --python)')
    ap.add_argument('--test-timeout', type=float, default=120, help='seconds per test')
    ap.add_argument('--file-timeout', type=float, default=1800, help='seconds one pytest child of a file may run; a file that takes longer goes on '
                    'in a new child from the next test (default 1800)')
    ap.add_argument('--out', help='write the per-test table (JSON) here')
    ap.add_argument('--passing', default=PASSING,
                    help="MXNet's passing tests to compare with (JSON)")
    ap.add_argument('--write-passing', help='write the passing tests of this run (JSON)')
    ap.add_argument('--keep', action='store_true', help='keep the temporary folder')
    ap.add_argument('--from-table', nargs='+', metavar='TABLE',
                    help='run nothing: read the per-test tables of earlier runs (--out files; '
                         "a later table's result of a test wins) and summarise / write them")
    ap.add_argument('-k', dest='keyword', help="pytest's -k, passed on")
    args = ap.parse_args(argv)

    names = [file_name(f) for f in (args.files or SETS[args.set])]
    tmp = None
    stored = {}
    if args.from_table:
        for path in args.from_table:
            with open(path) as f:
                for name, record in json.load(f)['files'].items():
                    if name in stored:      # a later table's tests replace the same tests
                        record = dict(record, tests=dict(stored[name]['tests'],
                                                         **record['tests']))
                    stored[name] = record
        names = [n for n in names if n in stored] if args.files else sorted(stored)
        unit = None
    elif args.tests_dir:
        unit = os.path.abspath(args.tests_dir)
    else:
        if not args.mxnet_src:
            ap.error('give --mxnet-src (or set MXNET_SRC) or --tests-dir')
        tmp = tempfile.mkdtemp(prefix='mxnet-unittests-')
        unit = extract(args.mxnet_src, tmp, args.tag)
    passing = None
    if not args.reference and args.passing and os.path.exists(args.passing):
        with open(args.passing) as f:
            passing = {k: set(v) for k, v in json.load(f)['files'].items()}
    extra = ['-k', args.keyword] if args.keyword else []

    table = {'mxnet_tag': args.tag, 'reference': args.reference, 'python': args.python,
             'files': {}}
    total_ok = total_ref = 0
    try:
        for name in names:
            if unit is None:
                record = stored[name]
            elif not os.path.exists(os.path.join(*run_dir(unit, name))):
                print('%-34s missing from the MXNet sources' % name, flush=True)
                continue
            else:
                record = run_file(*run_dir(unit, name), args.python, args.reference,
                                  args.test_timeout, args.file_timeout, extra)
            table['files'][name] = record
            ref = passing.get(name, set()) if passing is not None else None
            if ref is not None:
                total_ref += len(ref)
                total_ok += sum(1 for t in ref if record['tests'].get(t, {}).get('outcome')
                                == 'passed')
            print(summary_line(name, record, ref), flush=True)
            if args.out:            # after every file, so that a long run can be read early
                _write_json(args.out, table)
    finally:
        if tmp and not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
        elif tmp:
            print('tests kept in', unit)
    if passing is not None:
        print('%-34s %4d/%-4d of MXNet\'s passing (%.1f%%)' % (
            'TOTAL', total_ok, total_ref, 100.0 * total_ok / max(total_ref, 1)))
    if args.out:
        _write_json(args.out, table)
    if args.write_passing:
        old = {}
        if os.path.exists(args.write_passing):
            with open(args.write_passing) as f:
                old = json.load(f).get('files', {})
        for name, record in table['files'].items():
            old[name] = sorted(t for t, r in record['tests'].items()
                               if r['outcome'] == 'passed')
        with open(args.write_passing, 'w') as f:
            json.dump({'mxnet': args.tag, 'python': 'MXNet %s on CPU' % args.tag,
                       'files': dict(sorted(old.items()))}, f, indent=1)
            f.write('\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
