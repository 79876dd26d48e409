"""Start N worker processes for data-parallel training: ``python -m symgraph.launch``.

The command line follows MXNet's ``tools/launch.py``::

    python -m symgraph.launch -n 2 [--launcher local|mpi|ssh] [-H hostfile] [--timeout S] \\
        python train.py --kv-store dist_sync

The workers are started by ``mpiexec`` (MPICH's Hydra, from the ``mpich`` wheel: ``pip install
"symgraph[mpi]"``); they find each other through MPI, so there are no servers and no scheduler
(``-s`` is accepted and ignored). Each worker gets MXNet's variables ``DMLC_ROLE=worker``,
``DMLC_NUM_WORKER``, ``DMLC_WORKER_ID`` (= its MPI rank) and ``DMLC_NUM_SERVER=0``, and
``SYMGRAPH_DIST_TIMEOUT`` (``--timeout``): a worker that dies or never arrives makes the others
fail within that many seconds, naming it, instead of hanging.

``--launcher local`` (the default without a hostfile) runs every worker on this machine;
``mpi`` and ``ssh`` spread them over the hosts of ``-H hostfile`` (Hydra's format: one host a
line, ``host:slots`` allowed). Ctrl-C (SIGINT) or SIGTERM stops every worker. The exit status
is mpiexec's: 0 when every worker succeeded.
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys

from . import config

__all__ = ['find_mpiexec', 'build_command', 'main']

#: seconds the launcher waits for mpiexec to stop the workers after forwarding a Ctrl-C
STOP_GRACE = 5.0


def find_mpiexec():
    """The path of ``mpiexec``: ``$SYMGRAPH_MPIEXEC``, else the one beside this Python (the
    mpich wheel installs it into the environment's bin), else the one in the mpich wheel's
    files, else one on ``PATH``.

    Raises
    ------
    FileNotFoundError
        None found.
    """
    env = config.path('MPIEXEC')
    if env:
        if not os.access(env, os.X_OK):
            raise FileNotFoundError('%s=%r is not an executable file'
                                    % (config.env_name('MPIEXEC'), env))
        return env
    beside = os.path.join(os.path.dirname(sys.executable), 'mpiexec')
    if os.access(beside, os.X_OK):
        return beside
    try:
        from importlib import metadata
        files = metadata.files('mpich') or []
    except Exception:           # noqa: BLE001 -- no mpich wheel
        files = []
    for f in files:
        if str(f).replace('\\', '/').endswith('bin/mpiexec'):
            path = str(f.locate())
            if os.access(path, os.X_OK):
                return path
    found = shutil.which('mpiexec')
    if found:
        return found
    raise FileNotFoundError('mpiexec not found: pip install "symgraph[mpi]" (the mpich wheel '
                            'provides it) or set SYMGRAPH_MPIEXEC to its path')


def _parser():
    p = argparse.ArgumentParser(
        prog='python -m symgraph.launch',
        description='Launch a distributed (data-parallel) job over MPI, with the command line '
                    "of MXNet's tools/launch.py.")
    p.add_argument('-n', '--num-workers', required=True, type=int,
                   help='number of worker processes to launch')
    p.add_argument('-s', '--num-servers', type=int,
                   help='accepted for MXNet compatibility and ignored: the workers reduce '
                        'among themselves over MPI, there are no servers')
    p.add_argument('-H', '--hostfile', type=str,
                   help='the hostfile of the machines to launch on (mpi/ssh launchers)')
    p.add_argument('--launcher', type=str, default=None, choices=['local', 'mpi', 'ssh'],
                   help="how to launch: 'local' (this machine, the default without a "
                        "hostfile), 'mpi' or 'ssh' (the hosts of -H)")
    p.add_argument('--timeout', type=float, default=None,
                   help='seconds a collective waits for a missing worker before failing '
                        '(sets SYMGRAPH_DIST_TIMEOUT; default: its value, else 300)')
    p.add_argument('--env', action='append', default=[], metavar='NAME=VALUE',
                   help='an environment variable for every worker (repeatable)')
    p.add_argument('--mpiexec', type=str, default=None, help='the mpiexec to use')
    p.add_argument('command', nargs=argparse.REMAINDER,
                   help='the command each worker runs, e.g. python train.py --kv-store '
                        'dist_sync')
    return p


def build_command(args, mpiexec):
    """The mpiexec command line for parsed ``args``: one MPMD section per rank, so that
    each rank gets its own ``DMLC_WORKER_ID``."""
    n = args.num_workers
    cmd = [mpiexec, '-disable-auto-cleanup']
    launcher = args.launcher or ('mpi' if args.hostfile else 'local')
    if launcher == 'local':
        if args.hostfile:
            raise ValueError('--launcher local runs on this machine; drop -H %s or use '
                             '--launcher mpi' % args.hostfile)
        cmd += ['-launcher', 'fork']
    else:
        if not args.hostfile:
            raise ValueError('--launcher %s needs -H hostfile' % launcher)
        if not os.path.isfile(args.hostfile):
            raise FileNotFoundError('hostfile %r not found' % args.hostfile)
        cmd += ['-f', args.hostfile, '-launcher', 'ssh']
    env = [('DMLC_ROLE', 'worker'), ('DMLC_NUM_WORKER', str(n)), ('DMLC_NUM_SERVER', '0')]
    if args.timeout is not None:
        env.append((config.env_name('DIST_TIMEOUT'), repr(float(args.timeout))))
    for item in args.env:
        name, sep, value = item.partition('=')
        if not sep or not name:
            raise ValueError('--env takes NAME=VALUE, got %r' % item)
        env.append((name, value))
    for rank in range(n):
        if rank:
            cmd.append(':')
        cmd += ['-n', '1']
        for name, value in env + [('DMLC_WORKER_ID', str(rank))]:
            cmd += ['-env', name, value]
        cmd += list(args.command)
    return cmd


def _stop(proc):
    """Forward an interrupt to mpiexec (Hydra stops the workers), then kill what is left of
    its process group."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGINT)
    except ProcessLookupError:
        return
    try:
        proc.wait(STOP_GRACE)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def main(argv=None):
    """Run the launcher; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command and args.command[0] == '--':
        args.command = args.command[1:]
    if not args.command:
        parser.error('the command to launch is missing')
    if args.num_workers < 1:
        parser.error('-n/--num-workers must be >= 1, got %d' % args.num_workers)
    if args.timeout is not None and not args.timeout > 0:
        parser.error('--timeout must be > 0 seconds, got %g' % args.timeout)
    if args.num_servers:
        print('symgraph.launch: -s %d ignored: the workers reduce over MPI, there are no '
              'servers' % args.num_servers, file=sys.stderr)
    try:
        cmd = build_command(args, args.mpiexec or find_mpiexec())
    except (ValueError, FileNotFoundError) as err:
        parser.error(str(err))
    # mpiexec in its own session: Ctrl-C reaches the launcher only, which stops the job
    proc = subprocess.Popen(cmd, start_new_session=True)

    def _on_term(signum, frame):
        raise KeyboardInterrupt

    previous = {signal.SIGTERM: signal.signal(signal.SIGTERM, _on_term),
                # even where the launcher was started with SIGINT ignored (in the background)
                signal.SIGINT: signal.signal(signal.SIGINT, signal.default_int_handler)}
    try:
        return proc.wait()
    except KeyboardInterrupt:
        _stop(proc)
        return 130
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


if __name__ == '__main__':
    sys.exit(main())
