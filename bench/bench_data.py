"""The data pipeline against MXNet 1.9.1 in the same run (issue 30's speed targets)::

    python bench/bench_data.py --mxnet <mxnet-venv>/bin/python [--images 2000]

Writes ``--images`` JPEG images of 64x64 (quality 90, smooth gradients plus noise) into a
``.rec``/``.idx`` pair in a temporary directory, then times, in images per second (the
best of ``--passes`` full passes after one warm-up pass):

Each rate comes with the CPU microseconds per image (this process's threads and its
worker processes, least over the passes): less sensitive to other load than the rate.

- ``record_iter``: ``mx.io.ImageRecordIter(data_shape=(3, 56, 56), batch_size=64,
  rand_crop=True, rand_mirror=True, preprocess_threads=2)``;
- ``loader0`` / ``loader2``: ``gluon.data.DataLoader`` over
  ``vision.ImageRecordDataset(...).transform_first(Compose([ToTensor(), Normalize(...)]))``
  with ``batch_size=64`` and ``num_workers`` 0 / 2 (the issue asks ``loader2`` >= 1.7 x
  ``loader0``), timed in turn: a warm-up pass of each, then ``--loader-passes`` rounds of
  one pass of each (the best rate, the least CPU; the ratio of each round's pair and the
  cores each loader kept busy are printed with the bound on the ratio).

``--only record_iter`` times the record iterator alone (the DataLoader runs are skipped).
MXNet decodes with its engine's OpenMP thread count whatever ``preprocess_threads`` says
(half the cores without OMP_NUM_THREADS: one on 2 cores; it logs 'use 1 threads for
decoding'; src/io/iter_image_recordio_2.cc, src/engine/openmp.cc).

The file runs itself under MXNet's interpreter (``--worker``, ``import mxnet as mx``) on
the same files. Each framework runs alone (2 cores). Colour JPEGs are decoded by OpenCV
where ``cv2`` imports (``symgraph[image-fast]``), else by Pillow: say which in results.
"""
import argparse
import io
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np


def write_records(mx, directory, count):
    from PIL import Image
    rs = np.random.RandomState(0)
    yy, xx = np.mgrid[0:64, 0:64]
    rec = mx.recordio.MXIndexedRecordIO(os.path.join(directory, 'b.idx'),
                                        os.path.join(directory, 'b.rec'), 'w')
    for i in range(count):
        base = np.stack([xx * 4.0, yy * 4.0, (xx + yy) * 2.0 + rs.randint(0, 60)], -1)
        img = np.clip(base + rs.randint(-30, 31, base.shape), 0, 255).astype(np.uint8)
        buf = io.BytesIO()
        Image.fromarray(img).save(buf, format='JPEG', quality=90)
        rec.write_idx(i, mx.recordio.pack(mx.recordio.IRHeader(0, i % 10, i, 0),
                                          buf.getvalue()))
    rec.close()


def _child_cpu(pid, fields, tick):
    """CPU seconds of the live process ``pid``: its threads' run time in nanoseconds from
    /proc/PID/task/*/schedstat where the kernel has it, else utime + stime in clock ticks
    (10 ms: two DataLoader workers read at the start and the end of a 0.2 s pass made the
    per-image figure, and the bound below, wrong by up to ~10%)."""
    try:
        total = 0
        for tid in os.listdir('/proc/%s/task' % pid):
            with open('/proc/%s/task/%s/schedstat' % (pid, tid)) as f:
                total += int(f.read().split()[0])
        return total / 1e9
    except (OSError, ValueError, IndexError):
        return (int(fields[11]) + int(fields[12])) / tick


def _children():
    """The process ids of this process's live children: from /proc/self/task/*/children
    (one small file per thread; the whole /proc, read stat by stat, took ~5 ms, inside the
    timed loader passes), else by their parent id in /proc/*/stat."""
    pids = set()
    try:
        for tid in os.listdir('/proc/self/task'):
            with open('/proc/self/task/%s/children' % tid) as f:
                pids.update(f.read().split())
        return pids
    except OSError:
        pass
    me = str(os.getpid())
    for pid in os.listdir('/proc') if os.path.isdir('/proc') else ():
        if not pid.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % pid) as f:
                if f.read().rsplit(')', 1)[1].split()[1] == me:    # the parent's id
                    pids.add(pid)
        except OSError:
            continue
    return pids


def _cpu_seconds():
    """CPU seconds of this process and of its live child processes (DataLoader workers,
    read from /proc: their CPU counts in RUSAGE_CHILDREN only once they are waited for)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    total = own.ru_utime + own.ru_stime
    tick = os.sysconf('SC_CLK_TCK')
    for pid in _children():
        try:
            with open('/proc/%s/stat' % pid) as f:
                fields = f.read().rsplit(')', 1)[1].split()
        except OSError:
            continue
        total += _child_cpu(pid, fields, tick)
    return total


def _rate(make_batches, count, passes):
    """(the best images per second, the least CPU microseconds per image) over ``passes``
    passes (a pass may be shorter than ``count``: after a wrapped last batch, MXNet's next
    pass starts after the wrap). CPU time, all threads and worker processes, is less
    sensitive to other load on the machine than the wall-clock rate."""
    best, cpu = 0.0, float('inf')
    for p in range(passes + 1):
        start, cpu0 = time.perf_counter(), _cpu_seconds()
        seen = 0
        for n in make_batches():
            seen += n
        elapsed, used = time.perf_counter() - start, _cpu_seconds() - cpu0
        assert seen >= count * 0.5, (seen, count)
        if p:                               # the first pass warms up (and starts workers)
            best = max(best, seen / elapsed)
            cpu = min(cpu, used / seen * 1e6)
    return best, cpu


def run(mx, directory, count, passes, only=None, loader_passes=5):
    rec, idx = os.path.join(directory, 'b.rec'), os.path.join(directory, 'b.idx')
    out = {}
    it = mx.io.ImageRecordIter(path_imgrec=rec, path_imgidx=idx, data_shape=(3, 56, 56),
                               batch_size=64, rand_crop=True, rand_mirror=True,
                               preprocess_threads=2)

    def record_iter():
        it.reset()
        for batch in it:
            batch.data[0].wait_to_read()
            yield 64 - batch.pad
    out['record_iter'] = _rate(record_iter, count, passes)
    if only == 'record_iter':
        return out
    vision = mx.gluon.data.vision
    tf = vision.transforms.Compose([vision.transforms.ToTensor(),
                                    vision.transforms.Normalize((0.485, 0.456, 0.406),
                                                                (0.229, 0.224, 0.225))])
    ds = vision.ImageRecordDataset(rec).transform_first(tf)
    loaders = {'loader%d' % w: mx.gluon.data.DataLoader(ds, batch_size=64, num_workers=w)
               for w in (0, 2)}

    def batches(loader):
        def make():
            for x, _ in loader:
                x.wait_to_read()
                yield x.shape[0]
        return make
    out['loader_passes'] = _rates_in_turn({k: batches(v) for k, v in loaders.items()},
                                          count, loader_passes)
    for key, runs in out['loader_passes'].items():
        out[key] = (max(r[0] for r in runs), min(r[1] for r in runs))
    for loader in loaders.values():
        if hasattr(loader, 'close'):        # (MXNet 1.9.1's has no close)
            loader.close()
    return out


def _rates_in_turn(makers, count, passes):
    """{name: [(images per second, CPU microseconds per image) of each pass]}: one warm-up
    pass of each, then ``passes`` rounds of one pass of each maker in turn, so that other
    load on the machine falls on both loaders alike (timed one after the other, a burst
    of load during one loader's passes moved the ratio of the two by tens of per cent)."""
    runs = {name: [] for name in makers}
    for p in range(passes + 1):
        for name, make_batches in makers.items():
            cpu0 = _cpu_seconds()
            start = time.perf_counter()
            seen = sum(make_batches())
            elapsed, used = time.perf_counter() - start, _cpu_seconds() - cpu0
            assert seen >= count * 0.5, (seen, count)
            if p:                           # the first round warms up (and starts workers)
                runs[name].append((seen / elapsed, used / seen * 1e6))
    return runs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--mxnet', help="MXNet 1.9.1's python, to run the same workloads")
    ap.add_argument('--images', type=int, default=2000)
    ap.add_argument('--passes', type=int, default=2)
    ap.add_argument('--loader-passes', type=int, default=5,
                    help='rounds of one loader0 pass and one loader2 pass, in turn')
    ap.add_argument('--only', choices=['record_iter'],
                    help='time only this part (the DataLoader runs are skipped)')
    ap.add_argument('--worker', help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:                         # under MXNet's interpreter
        import mxnet as mx
        print(json.dumps(run(mx, args.worker, args.images, args.passes, args.only,
                             args.loader_passes)))
        sys.stdout.flush()
        os._exit(0)                         # MXNet may hang at interpreter exit
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
    import symgraph as mx
    with tempfile.TemporaryDirectory() as directory:
        write_records(mx, directory, args.images)
        results = {'symgraph': run(mx, directory, args.images, args.passes, args.only,
                                   args.loader_passes)}
        if args.mxnet:
            env = dict(os.environ, MXNET_MKLDNN_ENABLED='0')
            proc = subprocess.run([args.mxnet, os.path.abspath(__file__), '--worker',
                                   directory, '--images', str(args.images),
                                   '--passes', str(args.passes),
                                   '--loader-passes', str(args.loader_passes)] +
                                  (['--only', args.only] if args.only else []),
                                  env=env, stdout=subprocess.PIPE, check=True, text=True)
            results['mxnet'] = json.loads(proc.stdout.strip().splitlines()[-1])
    passes = {name: res.pop('loader_passes', None) for name, res in results.items()}
    print('images/s   ' + '  '.join('%12s' % k for k in results['symgraph']))
    for name, res in results.items():
        print('%-10s ' % name + '  '.join('%12.0f' % v[0] for v in res.values()))
    print('CPU us/img ' + '  '.join('%12s' % k for k in results['symgraph']))
    for name, res in results.items():
        print('%-10s ' % name + '  '.join('%12.1f' % v[1] for v in res.values()))
    sym = results['symgraph']
    if 'loader2' in sym:
        _loader_bounds(sym, passes['symgraph'])
    if 'mxnet' in results:
        for key, value in sym.items():
            print('%s symgraph / mxnet: %.2f (CPU per image %.2f)'
                  % (key, value[0] / results['mxnet'][key][0],
                     value[1] / results['mxnet'][key][1]))


def _loader_bounds(sym, runs):
    """The workers' gain, and what bounds it. The bound: the in-process loader keeps one
    core busy, two workers at most two, so on two free cores the workers' gain is at most
    2 x CPU per image loader0 / loader2 (the CPU per image moves little with other load,
    unlike the rates; it rises when two processes run at once on the two cores). It holds
    where loader0 did keep one core busy: ``busy``, rate x CPU per image, says how many
    cores each loader kept busy (loader0's drops below 1.00 when it is preempted, loader2's
    below 2.00 when a worker waits or is preempted); ratio = bound x busy2 / 2 / busy0."""
    pairs = [b[0] / a[0] for a, b in zip(runs['loader0'], runs['loader2'])]
    print('loader2 / loader0 (symgraph): %.2f best/best; per round %s, median %.2f'
          % (sym['loader2'][0] / sym['loader0'][0], ' '.join('%.2f' % r for r in pairs),
             statistics.median(pairs)))
    print('loader2 / loader0 bound on two free cores, 2 x CPU per image loader0 / loader2: '
          '%.2f' % (2 * sym['loader0'][1] / sym['loader2'][1]))
    print('cores kept busy, median of the rounds: loader0 %.2f, loader2 %.2f'
          % tuple(statistics.median(r[0] * r[1] / 1e6 for r in runs[k])
                  for k in ('loader0', 'loader2')))


if __name__ == '__main__':
    main()
