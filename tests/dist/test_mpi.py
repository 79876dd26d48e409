"""symgraph.dist.mpi (collectives between processes) and symgraph.launch, over real MPI
processes started by the launcher (mpi4py and the mpich wheel); every run is bounded."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from symgraph import launch as launcher
from mpi_util import launch, check, need_mpi, ROOT

RING_VS_MPI = '''
import sys
import numpy as np
from symgraph.dist.mpi import Communicator
comm = Communicator(timeout=60)
n, me = comm.size, comm.rank
assert n == int(sys.argv[1])
bad = []
for dtype in (np.float16, np.float32, np.float64):
    for length in (0, 1, n - 1, n + 1, 7 * n + 3, 1001, 4099):
        def data(rank, integer):
            rng = np.random.RandomState(1000 * rank + length)
            if integer:   # exact in every dtype and every summation order
                return rng.randint(-60, 60, size=length).astype(dtype)
            return rng.uniform(-1, 1, size=length).astype(dtype)
        for integer in (True, False):
            ring = data(me, integer)
            ref = ring.copy()
            comm.allreduce(ring, algorithm='ring')
            comm.allreduce(ref, algorithm='mpi')
            exact = sum(data(r, integer).astype(np.float64) for r in range(n))
            if integer:
                ok = (ring == ref).all() and (ring == exact).all()
            else:
                tol = 2e-2 if dtype == np.float16 else 1e-5
                ok = np.allclose(ring, ref, rtol=tol, atol=tol) and \\
                    np.allclose(ring, exact, rtol=tol, atol=tol)
                if n == 2:      # a + b: one addition, the same in both algorithms
                    ok = ok and (ring == ref).all()
            if not ok or ring.dtype != dtype:
                bad.append((str(np.dtype(dtype)), length, integer))
# every rank holds the same result after the ring
probe = np.arange(10, dtype=np.float32) * (me + 1)
comm.allreduce(probe, algorithm='ring')
copy = probe.copy()
comm.bcast(copy, root=n - 1)
assert (copy == probe).all()
with open('result%d' % me, 'w') as f:      # (stdout lines of ranks may interleave)
    f.write('bad %s' % bad)
assert not bad, bad
'''


@pytest.mark.parametrize('n', [2, 3, 4])
def test_ring_over_mpi_equals_mpi_allreduce(tmp_path, n):
    check(launch(tmp_path, n, RING_VS_MPI, args=[n]))
    results = [(tmp_path / ('result%d' % r)).read_text() for r in range(n)]
    assert results == ['bad []'] * n


DEAD = '''
import json, os, sys, time
import numpy as np
from symgraph.dist.mpi import Communicator, DistTimeoutError
comm = Communicator()
x = np.ones(1000, np.float32)
comm.allreduce(x)                   # a first step every rank takes
assert x[0] == comm.size
comm.barrier()
if comm.rank == 1:
    if sys.argv[1] == 'dies':
        os._exit(3)                 # dies mid-step, without a word to MPI
    time.sleep(600)                 # never arrives
start = time.monotonic()
try:
    comm.allreduce(x, algorithm=sys.argv[2])
except DistTimeoutError as err:
    report = {'rank': comm.rank, 'elapsed': time.monotonic() - start,
              'missing': list(err.missing), 'message': str(err)}
    with open('report%d.json' % comm.rank, 'w') as f:
        json.dump(report, f)
    raise
'''


@pytest.mark.parametrize('how, algorithm', [('dies', 'mpi'), ('dies', 'ring'),
                                            ('hangs', 'mpi')])
def test_a_dead_or_missing_worker_makes_the_others_fail_naming_it(tmp_path, how, algorithm):
    start = time.monotonic()
    proc = launch(tmp_path, 3, DEAD, args=[how, algorithm], timeout=2, bound=60)
    took = time.monotonic() - start
    assert proc.returncode != 0
    reports = sorted(tmp_path.glob('report*.json'))
    assert [p.name for p in reports] == ['report0.json', 'report2.json'], \
        (proc.stdout, proc.stderr)
    for p in reports:
        report = json.loads(p.read_text())
        assert report['missing'] == [1]
        assert 'rank 1 of 3 did not take part within 2 s' in report['message']
        # within the timeout (plus scheduling slack on a loaded 2-core machine)
        assert report['elapsed'] < 2.0 + 1.0
    assert 'DistTimeoutError' in proc.stderr
    # no hang: the worker stuck outside MPI is stopped by the survivors' MPI_Abort
    assert took < 50


def test_launcher_sets_mxnet_variables_and_the_timeout(tmp_path):
    source = '''
    import os
    from mpi4py import MPI
    env = [os.environ.get(k) for k in ('DMLC_ROLE', 'DMLC_NUM_WORKER', 'DMLC_WORKER_ID',
                                       'DMLC_NUM_SERVER', 'SYMGRAPH_DIST_TIMEOUT', 'EXTRA')]
    with open('env%d' % MPI.COMM_WORLD.Get_rank(), 'w') as f:
        f.write(' '.join(env))
    '''
    check(launch(tmp_path, 3, source, timeout=7.5, launcher_args=["--env", "EXTRA=x=y"]))
    lines = [(tmp_path / ('env%d' % r)).read_text() for r in range(3)]
    assert lines == ['worker 3 %d 0 7.5 x=y' % r for r in range(3)]


def test_launcher_passes_a_worker_failure_on(tmp_path):
    proc = launch(tmp_path, 2, 'import sys; sys.exit(0)\n')
    check(proc)
    proc = launch(tmp_path, 2, 'import os, sys\nsys.exit(int(os.environ["DMLC_WORKER_ID"]) * 5)\n')
    assert proc.returncode != 0


def test_ctrl_c_on_the_launcher_stops_every_worker(tmp_path):
    need_mpi()
    script = tmp_path / 'sleeper.py'
    script.write_text('import os, time\n'
                      'open("pid%s" % os.environ["DMLC_WORKER_ID"], "w").write(str(os.getpid()))\n'
                      'time.sleep(300)\n')
    env = dict(os.environ, PYTHONPATH=ROOT)
    proc = subprocess.Popen([sys.executable, '-m', 'symgraph.launch', '-n', '2', sys.executable,
                             str(script)], cwd=str(tmp_path), env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while len(list(tmp_path.glob('pid*'))) < 2 or \
                any(not p.read_text() for p in tmp_path.glob('pid*')):
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.1)
        pids = [int(p.read_text()) for p in tmp_path.glob('pid*')]
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=launcher.STOP_GRACE + 10) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    time.sleep(0.2)
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)         # gone, and reaped (a zombie would still answer)


class _Args:
    def __init__(self, **kw):
        self.__dict__.update(dict(num_workers=2, hostfile=None, launcher=None, timeout=None,
                                  env=[], command=['python', 'train.py']), **kw)


def test_build_command_one_section_per_rank():
    cmd = launcher.build_command(_Args(timeout=3), '/bin/mpiexec')
    assert cmd[:4] == ['/bin/mpiexec', '-disable-auto-cleanup', '-launcher', 'fork']
    sections = ' '.join(cmd[4:]).split(' : ')
    assert len(sections) == 2
    for rank, section in enumerate(sections):
        assert section.startswith('-n 1 ')
        assert '-env DMLC_WORKER_ID %d' % rank in section
        assert '-env SYMGRAPH_DIST_TIMEOUT 3.0' in section
        assert section.endswith('python train.py')


def test_build_command_hostfile(tmp_path):
    hosts = tmp_path / 'hosts'
    hosts.write_text('localhost:2\n')
    cmd = launcher.build_command(_Args(hostfile=str(hosts)), 'mpiexec')
    assert cmd[1:6] == ['-disable-auto-cleanup', '-f', str(hosts), '-launcher', 'ssh']
    with pytest.raises(ValueError, match='--launcher local runs on this machine'):
        launcher.build_command(_Args(hostfile=str(hosts), launcher='local'), 'mpiexec')
    with pytest.raises(ValueError, match='needs -H hostfile'):
        launcher.build_command(_Args(launcher='mpi'), 'mpiexec')
    with pytest.raises(FileNotFoundError, match='nohosts'):
        launcher.build_command(_Args(hostfile=str(tmp_path / 'nohosts')), 'mpiexec')
    with pytest.raises(ValueError, match='NAME=VALUE'):
        launcher.build_command(_Args(env=['JUSTNAME']), 'mpiexec')


def test_launcher_command_line_errors(capsys):
    with pytest.raises(SystemExit):
        launcher.main(['-n', '2'])
    assert 'the command to launch is missing' in capsys.readouterr().err
    with pytest.raises(SystemExit):
        launcher.main(['-n', '0', 'python'])
    assert '-n/--num-workers must be >= 1' in capsys.readouterr().err
    with pytest.raises(SystemExit):
        launcher.main(['-n', '2', '--timeout', '-1', 'python'])
    assert '--timeout must be > 0' in capsys.readouterr().err


def test_find_mpiexec_env(monkeypatch, tmp_path):
    monkeypatch.setenv('SYMGRAPH_MPIEXEC', str(tmp_path / 'missing'))
    with pytest.raises(FileNotFoundError, match='SYMGRAPH_MPIEXEC'):
        launcher.find_mpiexec()


def test_communicator_argument_errors(tmp_path):
    source = '''
    import numpy as np, os
    from symgraph.dist.mpi import Communicator, env_timeout
    def raises(exc, text, f, *a, **k):
        try:
            f(*a, **k)
        except exc as err:
            assert text in str(err), str(err)
        else:
            raise AssertionError('no %s' % exc.__name__)
    raises(ValueError, "unknown all-reduce algorithm 'tree'", Communicator, algorithm='tree')
    raises(ValueError, 'timeout must be > 0', Communicator, timeout=0)
    os.environ['SYMGRAPH_DIST_TIMEOUT'] = 'soon'
    raises(ValueError, "SYMGRAPH_DIST_TIMEOUT must be a number of seconds, got 'soon'",
           env_timeout)
    os.environ['SYMGRAPH_DIST_TIMEOUT'] = '4'
    comm = Communicator()
    assert comm.timeout == 4.0 and comm.algorithm == 'mpi'
    raises(TypeError, 'takes a NumPy array', comm.allreduce, [1.0])
    raises(ValueError, 'C-contiguous', comm.allreduce, np.ones((4, 4))[:, 1])
    raises(TypeError, 'ring all-reduce supports float16', comm.allreduce,
           np.ones(3, np.int32), algorithm='ring')
    raises(ValueError, 'root 5 is not a rank', comm.bcast, np.ones(3), root=5)
    x = np.arange(5, dtype=np.int32)
    comm.allreduce(x)               # MPI's all-reduce takes integers
    assert (x == np.arange(5) * comm.size).all()
    open('ok%d' % comm.rank, 'w').close()
    '''
    check(launch(tmp_path, 2, source))
    assert sorted(p.name for p in tmp_path.glob('ok*')) == ['ok0', 'ok1']


CRASH = '''
import time
import numpy as np
from symgraph.dist.mpi import Communicator, DistWorkerError
comm = Communicator()          # timeout: 60 s, far above what the test allows
comm.barrier()
if comm.rank == 0:
    raise ValueError('a bug in rank 0')
start = time.monotonic()
try:
    comm.allreduce(np.ones(4))
except DistWorkerError as err:
    with open('report%d.txt' % comm.rank, 'w') as f:
        f.write('%s|%.2f|%s' % (list(err.missing), time.monotonic() - start, err))
    raise
'''


def test_a_worker_dying_of_an_exception_makes_the_others_fail_at_once(tmp_path):
    proc = launch(tmp_path, 2, CRASH, timeout=60, bound=40)
    assert proc.returncode != 0
    assert 'ValueError: a bug in rank 0' in proc.stderr
    missing, took, message = (tmp_path / 'report1.txt').read_text().split('|')
    assert missing == '[0]' and float(took) < 10
    assert 'rank 0 of 2 failed (it reported an error' in message
