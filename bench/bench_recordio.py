"""Sequential RecordIO reading against ``dd`` on the same file (issue 30's target: at least
80% of the read speed dd reports)::

    python bench/bench_recordio.py [--mb 1024] [--passes 5] [--dir /tmp]

Writes a ``.rec`` of ``--mb`` MiB (records of 20-120 KB of random bytes, 70 KB on
average) with ``mx.recordio.MXRecordIO`` and syncs it to disk (write-back no longer
competes with the reads), reads it once with each (not counted: both then read the page
cache), then runs ``dd if=FILE of=/dev/null bs=1M`` and a ``read()`` loop over the file
``--passes`` times each, in pairs whose order alternates (dd first, then ours first: a
drift of the machine's speed does not favour either). dd's rate is the one dd reports
(the bytes over the seconds it prints, without the start of the process), ours is the
file's size over the loop's time (from the open). It prints both rates and their ratio
per pair and for the best passes, with the median of the per-pair ratios (the figure to
quote: on a shared machine the rates swing by tens of per cent from one second to the
next, and pass to pass) and of the CPU-time ratios (dd's CPU seconds, its start
included, over ours; counted in scheduler ticks, coarse for a short pass). Pass
``--cold`` as root to drop the caches before every read: then the disk, not the reader,
sets the pace.
"""
import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import symgraph as mx  # noqa: E402


def _drop_caches():
    subprocess.run(['sync'], check=True)
    with open('/proc/sys/vm/drop_caches', 'w') as f:
        f.write('3\n')


def _cpu(who):
    use = resource.getrusage(who)
    return use.ru_utime + use.ru_stime


def _dd(path):
    """(MB/s as dd reports it: bytes over its own seconds, in MiB/s; dd's CPU seconds)."""
    c = _cpu(resource.RUSAGE_CHILDREN)
    out = subprocess.run(['dd', 'if=' + path, 'of=/dev/null', 'bs=1M'], check=True,
                         capture_output=True, text=True, env=dict(os.environ, LC_ALL='C'))
    cpu = _cpu(resource.RUSAGE_CHILDREN) - c
    m = re.search(r'^(\d+) bytes .* copied, ([\d.]+) s', out.stderr, re.M)
    if m is None:
        raise RuntimeError('cannot parse the report of dd: %r' % out.stderr)
    return int(m.group(1)) / 2 ** 20 / float(m.group(2)), cpu


def _ours(path, size):
    """(MB/s of a read() loop over the file, its CPU seconds)."""
    t, c = time.perf_counter(), _cpu(resource.RUSAGE_SELF)
    rec = mx.recordio.MXRecordIO(path, 'r')
    while rec.read() is not None:
        pass
    rec.close()
    return size / (time.perf_counter() - t), _cpu(resource.RUSAGE_SELF) - c


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--mb', type=int, default=1024)
    parser.add_argument('--passes', type=int, default=5)
    parser.add_argument('--dir', default=tempfile.gettempdir())
    parser.add_argument('--cold', action='store_true')
    args = parser.parse_args(argv)
    path = os.path.join(args.dir, 'bench_recordio.rec')
    rng = np.random.RandomState(0)
    blobs = [rng.bytes(int(n)) for n in rng.randint(20000, 120000, 64)]
    total = 0
    with mx.recordio.MXRecordIO(path, 'w') as rec:
        while total < args.mb << 20:
            for b in blobs:
                rec.write(b)
                total += len(b)
    fd = os.open(path, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)
    size = os.path.getsize(path) / 2 ** 20
    best_dd = best_ours = 0
    ratios, cpu_ratios = [], []
    try:
        if not args.cold:
            _dd(path)
            _ours(path, size)
        for i in range(args.passes):
            got = {}
            for who in (('dd', 'ours') if i % 2 == 0 else ('ours', 'dd')):
                if args.cold:
                    _drop_caches()
                got[who] = _dd(path) if who == 'dd' else _ours(path, size)
            (dd, dd_cpu), (ours, ours_cpu) = got['dd'], got['ours']
            best_dd, best_ours = max(best_dd, dd), max(best_ours, ours)
            ratios.append(ours / dd)
            cpu_ratios.append(dd_cpu / max(ours_cpu, 1e-9))
            print('pass %d (%s first): dd %.0f MB/s, MXRecordIO.read %.0f MB/s, ratio %.2f '
                  '(CPU %.2f)' % (i, 'dd' if i % 2 == 0 else 'ours', dd, ours, ours / dd,
                                  cpu_ratios[-1]))
        print('best: dd %.0f MB/s, MXRecordIO.read %.0f MB/s, ratio %.2f (%.0f MB file)'
              % (best_dd, best_ours, best_ours / best_dd, size))
        print('median of the passes: ratio %.2f, CPU ratio (dd CPU / ours) %.2f'
              % (statistics.median(ratios), statistics.median(cpu_ratios)))
    finally:
        os.remove(path)


if __name__ == '__main__':
    main()
