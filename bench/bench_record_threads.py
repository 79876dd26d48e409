"""Where ImageRecordIter's time goes, per thread, against MXNet 1.9.1 (issue 30)::

    python bench/bench_record_threads.py --mxnet <mxnet-venv>/bin/python [--passes 8]

bench_data.py's ``record_iter`` workload (2,000 JPEGs of 64x64 -> 3x56x56, rand_crop,
rand_mirror, preprocess_threads=2, batch_size=64), timed per thread: the CPU microseconds
per image of each thread of the process (from /proc/self/task, over ``--passes`` passes
after a warm-up pass). Unlike images per second, these move less with other load on the
machine (contention still inflates them somewhat: compare the two frameworks in one run),
and they bound the rate on free cores: a pipeline makes at most
1e6 / (its busiest thread's CPU per image) images per second, and at most
cores x 1e6 / (its total CPU per image). MXNet decodes in one thread on 2 cores (its
engine's OpenMP count, half the cores, whatever preprocess_threads says), so its busiest
thread is the bound there; ours splits the decoding between ``preprocess_threads`` threads.
Linux only. ``--opencv`` lets symgraph decode with ``cv2`` where it imports (the default
here is Pillow, to measure the path without the extra).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_data  # noqa: E402  (the same records)


def _threads():
    """{thread id: CPU seconds} of this process's threads."""
    out, tick = {}, os.sysconf('SC_CLK_TCK')
    for tid in os.listdir('/proc/self/task'):
        try:
            with open('/proc/self/task/%s/schedstat' % tid) as f:
                out[tid] = int(f.read().split()[0]) / 1e9
        except (OSError, ValueError, IndexError):
            with open('/proc/self/task/%s/stat' % tid) as f:
                fields = f.read().rsplit(')', 1)[1].split()
            out[tid] = (int(fields[11]) + int(fields[12])) / tick
    return out


def run(mx, directory, passes):
    it = mx.io.ImageRecordIter(path_imgrec=os.path.join(directory, 'b.rec'),
                               path_imgidx=os.path.join(directory, 'b.idx'),
                               data_shape=(3, 56, 56), batch_size=64, rand_crop=True,
                               rand_mirror=True, preprocess_threads=2)
    for _ in it:                        # warm-up (threads started, caches filled)
        pass
    before, start, count = _threads(), time.perf_counter(), 0
    for _ in range(passes):
        it.reset()
        for batch in it:
            batch.data[0].wait_to_read()
            count += 64 - batch.pad
    wall, after = time.perf_counter() - start, _threads()
    per = sorted(((after[t] - before.get(t, 0.0)) / count * 1e6 for t in after),
                 reverse=True)
    return {'rate': count / wall, 'threads': [round(x, 1) for x in per if x >= 0.5]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--mxnet', help="MXNet 1.9.1's python, to run the same workload")
    ap.add_argument('--images', type=int, default=2000)
    ap.add_argument('--passes', type=int, default=8)
    ap.add_argument('--opencv', action='store_true',
                    help='decode with cv2 where it imports (default: Pillow)')
    ap.add_argument('--worker', help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:                     # under MXNet's interpreter
        import mxnet as mx
        print(json.dumps(run(mx, args.worker, args.passes)))
        sys.stdout.flush()
        os._exit(0)                     # MXNet may hang at interpreter exit
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
    import symgraph as mx
    from symgraph import recordio
    if not args.opencv:
        recordio._USE_OPENCV = False
    with tempfile.TemporaryDirectory() as directory:
        bench_data.write_records(mx, directory, args.images)
        results = {'symgraph': run(mx, directory, args.passes)}
        if args.mxnet:
            env = dict(os.environ, MXNET_MKLDNN_ENABLED='0')
            proc = subprocess.run([args.mxnet, os.path.abspath(__file__), '--worker',
                                   directory, '--passes', str(args.passes)],
                                  env=env, stdout=subprocess.PIPE, check=True, text=True)
            results['mxnet'] = json.loads(proc.stdout.strip().splitlines()[-1])
    decoder = 'OpenCV' if args.opencv and recordio._opencv_jpeg() else 'Pillow'
    bounds = {}
    for name, res in results.items():
        busiest, total = res['threads'][0], sum(res['threads'])
        bounds[name] = 1e6 / max(busiest, total / 2)
        label = name + (' (%s)' % decoder if name == 'symgraph' else '')
        print('%-18s %6.0f images/s; CPU us/img per thread: %s (total %.1f); bound on 2 '
              'free cores %.0f images/s' % (label, res['rate'],
                                            ' '.join('%.1f' % x for x in res['threads']),
                                            total, bounds[name]))
    if 'mxnet' in results:
        print('symgraph / mxnet: images/s %.2f (this run, under its load), bound on 2 free '
              'cores %.2f' % (results['symgraph']['rate'] / results['mxnet']['rate'],
                              bounds['symgraph'] / bounds['mxnet']))


if __name__ == '__main__':
    main()
