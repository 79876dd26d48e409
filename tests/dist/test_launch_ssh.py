"""``python -m symgraph.launch --launcher ssh -H hostfile`` without remote machines: a fake
``ssh`` on PATH records how Hydra calls it (one connection per host of the hostfile, with
its proxy command) and runs the command here; the workers still meet over MPI and get
their rank, world size and timeout. Bounded."""
import os
import stat

from mpi_util import launch, check

FAKE_SSH = '''#!/bin/sh
# records its arguments and the host, then runs the remote command on this machine
echo "ARGS $*" >> "$FAKE_SSH_LOG"
while [ $# -gt 0 ]; do
  case "$1" in
    -o|-p|-l|-i) shift 2 ;;
    -*) shift ;;
    *) echo "HOST $1" >> "$FAKE_SSH_LOG"; shift; break ;;
  esac
done
exec sh -c "$*"
'''

WORKER = '''
import os
import numpy as np
from symgraph.dist.mpi import world
c = world()
x = np.full(2, c.rank + 1.0)
c.allreduce(x)
with open('out%d.txt' % c.rank, 'w') as f:
    f.write('%d %s %s %s %s' % (c.rank, os.environ['DMLC_WORKER_ID'],
                                os.environ['DMLC_NUM_WORKER'],
                                os.environ['SYMGRAPH_DIST_TIMEOUT'], x.tolist()))
'''


def test_ssh_launcher_connects_to_every_host_of_the_hostfile(tmp_path, monkeypatch):
    bindir = tmp_path / 'bin'
    bindir.mkdir()
    ssh = bindir / 'ssh'
    ssh.write_text(FAKE_SSH)
    ssh.chmod(ssh.stat().st_mode | stat.S_IEXEC)
    log = tmp_path / 'ssh.log'
    hostfile = tmp_path / 'hosts'
    # Hydra's format: host[:slots], comments and blank lines allowed
    hostfile.write_text('# two machines\nnodeA:1\n\nnodeB:1\n')
    monkeypatch.setenv('PATH', '%s%s%s' % (bindir, os.pathsep, os.environ['PATH']))
    monkeypatch.setenv('FAKE_SSH_LOG', str(log))
    check(launch(tmp_path, 2, WORKER, timeout=30,
                 launcher_args=['--launcher', 'ssh', '-H', str(hostfile)]))
    lines = log.read_text().splitlines()
    hosts = sorted(line.split()[1] for line in lines if line.startswith('HOST '))
    assert hosts == ['nodeA', 'nodeB']
    calls = [line for line in lines if line.startswith('ARGS ')]
    # each host runs Hydra's proxy from this environment, which connects back to mpiexec
    assert len(calls) == 2 and all('hydra_pmi_proxy' in c and '--control-port' in c
                                   for c in calls), calls
    outs = sorted((tmp_path / ('out%d.txt' % r)).read_text() for r in range(2))
    assert outs == ['0 0 2 30.0 [3.0, 3.0]', '1 1 2 30.0 [3.0, 3.0]']


def test_ssh_launcher_needs_an_existing_hostfile(tmp_path):
    proc = launch(tmp_path, 2, 'print(1)', launcher_args=['--launcher', 'ssh'])
    assert proc.returncode == 2 and '--launcher ssh needs -H hostfile' in proc.stderr
    proc = launch(tmp_path, 2, 'print(1)',
                  launcher_args=['--launcher', 'ssh', '-H', str(tmp_path / 'none')])
    assert proc.returncode == 2 and 'not found' in proc.stderr
