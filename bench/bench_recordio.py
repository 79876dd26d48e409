"""Sequential RecordIO reading against ``dd`` on the same file (issue 30's target: at least
80% of the read speed dd reports)::

    python bench/bench_recordio.py [--mb 1024] [--passes 3] [--dir /tmp]

Writes a ``.rec`` of ``--mb`` MiB (records of 20-120 KB of random bytes) with
``mx.recordio.MXRecordIO``, then alternates ``dd if=FILE of=/dev/null bs=1M`` and a
``read()`` loop over the file, ``--passes`` times each, and prints the MB/s of both and
their ratio per pass and for the best passes, with the median of the per-pass ratios and
of the CPU-time ratios (dd's CPU seconds / ours: on a shared machine the rates swing by
tens of per cent from one second to the next, CPU time much less). Both read the page cache once the file has
been read once (pass ``--cold`` as root to drop the caches before every read: then the
disk, not the reader, sets the pace).
"""
import argparse
import os
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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--mb', type=int, default=1024)
    parser.add_argument('--passes', type=int, default=3)
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
    size = os.path.getsize(path) / 2 ** 20
    best_dd = best_ours = 0
    ratios, cpu_ratios = [], []
    try:
        for i in range(args.passes):
            if args.cold:
                _drop_caches()
            t, c = time.perf_counter(), _cpu(resource.RUSAGE_CHILDREN)
            subprocess.run(['dd', 'if=' + path, 'of=/dev/null', 'bs=1M'], check=True,
                           capture_output=True)
            dd = size / (time.perf_counter() - t)
            dd_cpu = _cpu(resource.RUSAGE_CHILDREN) - c
            if args.cold:
                _drop_caches()
            rec = mx.recordio.MXRecordIO(path, 'r')
            t, c = time.perf_counter(), _cpu(resource.RUSAGE_SELF)
            while rec.read() is not None:
                pass
            ours = size / (time.perf_counter() - t)
            ours_cpu = _cpu(resource.RUSAGE_SELF) - c
            rec.close()
            best_dd, best_ours = max(best_dd, dd), max(best_ours, ours)
            ratios.append(ours / dd)
            cpu_ratios.append(dd_cpu / ours_cpu)
            print('pass %d: dd %.0f MB/s, MXRecordIO.read %.0f MB/s, ratio %.2f (CPU %.2f)'
                  % (i, dd, ours, ours / dd, cpu_ratios[-1]))
        print('best: dd %.0f MB/s, MXRecordIO.read %.0f MB/s, ratio %.2f (%.0f MB file)'
              % (best_dd, best_ours, best_ours / best_dd, size))
        print('median of the passes: ratio %.2f, CPU ratio (dd CPU / ours) %.2f'
              % (statistics.median(ratios), statistics.median(cpu_ratios)))
    finally:
        os.remove(path)


if __name__ == '__main__':
    main()
