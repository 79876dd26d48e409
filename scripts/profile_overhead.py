#!/usr/bin/env python
"""What mx.profiler costs on the ResNet training step (issue 33: at most 10% on, nothing
measurable off):

    python scripts/profile_overhead.py [--pairs 12] [--workload module|hybrid]
                                       [--single-thread]

The workloads are bench/bench_gluon.py's: ``module`` (the CIFAR ResNet-14 as a Symbol
under Module: forward_backward + update, batch 32) and ``hybrid`` (the same network as
hybridized Gluon blocks with autograd and a Trainer). Steps alternate profiling off and on
(``profile_all=True``: operators, imperative calls, the C API names, memory, oneDNN
primitives), each timed alone, wall and CPU time (this process, all its threads); the
ratios of the medians and of the minima are printed. ``--single-thread`` runs oneDNN on
one thread (``OMP_NUM_THREADS=1``) and takes the main thread's CPU time, which others'
load on the machine hardly moves. On a machine others load, wall-time ratios move by more
than the profiler costs, so the script also prints what the profiler
adds by construction: the records one profiled step makes times the cost of one record
(a clock reading and an append, the best of a few loops), against the fastest step off.
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, 'bench'))
if '--single-thread' in sys.argv:
    # (read by libgomp when oneDNN loads, at import: one thread computes everything, so
    # that its CPU time is the step's work whatever else loads the machine)
    os.environ['OMP_NUM_THREADS'] = '1'

import symgraph as mx  # noqa: E402
import bench_gluon  # noqa: E402

bench_gluon.mx = mx


def report(what, off, on):
    ratios = [b / a for a, b in zip(off, on)]
    print('%s: off median %.2f ms (min %.2f), on median %.2f ms (min %.2f)'
          % (what, statistics.median(off) * 1e3, min(off) * 1e3, statistics.median(on) * 1e3,
             min(on) * 1e3))
    print('  on/off: ratio of medians %.3f, of minima %.3f, median of pairs %.3f'
          % (statistics.median(on) / statistics.median(off), min(on) / min(off),
             statistics.median(ratios)))


def record_cost():
    """Seconds one record costs the thread that makes it (a clock reading and an append,
    what each step, call and primitive adds while profiling): the best of a few loops."""
    from symgraph.profiler import _recorder as rec
    n, best = 20000, float('inf')
    for _ in range(5):
        rec.take_events()
        t0 = time.perf_counter()
        for _ in range(n):
            rec.record('x', 'operator', rec.now(), rec.now())
        best = min(best, (time.perf_counter() - t0) / n)
    rec.take_events()
    return best


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--pairs', type=int, default=12,
                    help='steps timed off and on, alternating step by step')
    ap.add_argument('--workload', choices=('module', 'hybrid'), default='module')
    ap.add_argument('--single-thread', action='store_true',
                    help="OMP_NUM_THREADS=1 and the main thread's CPU time "
                         '(time.thread_time) as the measure: robust on a loaded machine')
    args = ap.parse_args(argv)
    cpu_clock = time.thread_time if args.single_thread else time.process_time
    from symgraph.profiler import _recorder as rec
    step = (bench_gluon.module_step() if args.workload == 'module'
            else bench_gluon.gluon_step(True))[0]
    off, on = [], []
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, 'profile.json')
        mx.profiler.set_config(profile_all=True, filename=trace, continuous_dump=False,
                               aggregate_stats=True)
        for _ in range(2):      # warm up both variants (the instrumented code is generated)
            step()
            mx.profiler.set_state('run')
            step()
            mx.profiler.set_state('stop')
        records = len(rec.take_events()) // 2
        for r in range(args.pairs):
            for mode in (('off', 'on') if r % 2 == 0 else ('on', 'off')):
                if mode == 'on':
                    mx.profiler.set_state('run')
                t0, c0 = time.perf_counter(), cpu_clock()
                step()
                took = (time.perf_counter() - t0, cpu_clock() - c0)
                if mode == 'on':
                    mx.profiler.set_state('stop')
                (on if mode == 'on' else off).append(took)
        mx.profiler.set_state('run')
        mx.profiler.dump()
        size = os.path.getsize(trace)
    print('workload %s: %d steps off and %d on, alternating step by step (profile_all)'
          % (args.workload, args.pairs, args.pairs))
    report('wall', [w for w, _ in off], [w for w, _ in on])
    report('cpu (main thread)' if args.single_thread else 'cpu (all threads)',
           [c for _, c in off], [c for _, c in on])
    cost = record_cost()
    best = min(c for _, c in off)
    print('records per step: %d, one record %.2f us: %.3f ms per step, %.2f%% of the '
          'fastest step off (%.1f ms CPU)' % (records, cost * 1e6, records * cost * 1e3,
                                              100 * records * cost / best, best * 1e3))
    print('trace file: %d kB for %d steps' % (size // 1000, args.pairs + 2))
    return 0


if __name__ == '__main__':
    sys.exit(main())
