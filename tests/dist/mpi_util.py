"""Running small worker scripts under ``python -m symgraph.launch`` for the MPI tests.

Every run is bounded (``subprocess.run(timeout=...)``); the tests skip when mpi4py or
mpiexec is missing.
"""
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))


def need_mpi():
    """Skip unless mpi4py and an mpiexec are there."""
    pytest.importorskip('mpi4py')
    from symgraph.launch import find_mpiexec
    try:
        return find_mpiexec()
    except FileNotFoundError as err:
        pytest.skip(str(err))


def launch(tmp_path, n, source, args=(), timeout=None, bound=120, launcher_args=()):
    """Run ``source`` (a script's text) in ``n`` workers; the CompletedProcess."""
    need_mpi()
    script = tmp_path / 'worker.py'
    script.write_text(textwrap.dedent(source))
    cmd = [sys.executable, '-m', 'symgraph.launch', '-n', str(n)]
    if timeout is not None:
        cmd += ['--timeout', str(timeout)]
    cmd += list(launcher_args) + [sys.executable, str(script)] + [str(a) for a in args]
    env = dict(os.environ, PYTHONPATH=ROOT, OMP_NUM_THREADS='1')
    env.pop('SYMGRAPH_DIST_TIMEOUT', None)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=str(tmp_path), env=env)
    try:
        out, err = proc.communicate(timeout=bound)
    except subprocess.TimeoutExpired:
        # the launcher stops mpiexec and the workers on SIGTERM
        proc.terminate()
        try:
            proc.communicate(timeout=15)
        finally:
            proc.kill()
            proc.communicate()
        raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def check(proc):
    """Assert a run succeeded, showing its output otherwise."""
    assert proc.returncode == 0, 'rc %d\nstdout:\n%s\nstderr:\n%s' % (
        proc.returncode, proc.stdout[-4000:], proc.stderr[-4000:])
    return proc
