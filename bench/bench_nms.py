"""``box_nms`` on the CPU, symgraph against MXNet 1.9.1's ``contrib.box_nms`` in the same run.

Usage::

    python bench/bench_nms.py --mxnet /work/mxvenv/bin/python [--threads 2] [--rounds 7]
    python bench/bench_nms.py --only uniform_2000,crowd_2000
    python bench/bench_nms.py --overlap-thresh 0     # every overlap suppresses

MXNet runs in a worker process of the given interpreter (it needs its own NumPy) with
``MXNET_MKLDNN_ENABLED=0`` and ``OMP_NUM_THREADS=--threads``; symgraph runs here with its
BLAS/OpenMP pools set to the same count (its NMS is NumPy, one thread). The inputs are
made once here and sent to the worker in a ``.npy`` file. Rounds of the two alternate
(each round: ``reps`` calls), and each side's best round is reported, with the ratio
symgraph / MXNet (below 1: symgraph faster) and a check that both kept the same rows.
``--cpu-time`` reports process CPU time instead of wall time (steadier on a busy machine;
MXNet's OpenMP threads that spin are counted too).

Workloads (rows [id, score, x1, y1, x2, y2], float32, ``overlap_thresh`` 0.5 unless
``--overlap-thresh`` says otherwise, ``valid_thresh`` 0, ``topk`` -1):

* ``uniform_N`` (issue 13): scores uniform, corners uniform in the unit square, sides
  uniform in 0.02-0.2; one batch, no class id.
* ``crowd_N``: every box centred in a 0.1 x 0.1 square, sides 0.1-0.3 (all overlap).
* ``duplicates_2000``: near-duplicates of 5 objects (centres jittered by 1% of the image,
  sides 0.2 +- 10%): a detector's raw output before NMS.
* ``clusters_10000``: 30 clustered objects plus 20% spread boxes, 5 classes, per-class
  suppression (``id_index`` 0).
* ``batch4x2000_cls20``: batch 4 of 2,000 uniform boxes, 20 classes, ``id_index`` 0,
  ``force_suppress`` False.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np


def _rows(ids, score, x1, y1, w, h):
    return np.stack([ids, score, x1, y1, x1 + w, y1 + h], -1).astype(np.float32)


def uniform(n, seed=0, batch=1, classes=1):
    rng = np.random.RandomState(seed)
    shape = (batch, n)
    xy = rng.uniform(0, 1, shape + (2,))
    wh = rng.uniform(0.02, 0.2, shape + (2,))
    ids = rng.randint(0, classes, shape) if classes > 1 else np.zeros(shape)
    return _rows(ids, rng.uniform(0, 1, shape), xy[..., 0], xy[..., 1], wh[..., 0],
                 wh[..., 1])


def crowd(n, seed=1):
    rng = np.random.RandomState(seed)
    c = rng.uniform(0.45, 0.55, (1, n, 2))
    wh = rng.uniform(0.1, 0.3, (1, n, 2))
    xy = c - wh / 2
    return _rows(np.zeros((1, n)), rng.uniform(0, 1, (1, n)), xy[..., 0], xy[..., 1],
                 wh[..., 0], wh[..., 1])


def duplicates(n, seed=2, objects=5):
    rng = np.random.RandomState(seed)
    obj = rng.uniform(0.2, 0.8, (objects, 2))
    wh = 0.2 * rng.uniform(0.9, 1.1, (1, n, 2))
    xy = obj[rng.randint(0, objects, (1, n))] + rng.normal(0, 0.01, (1, n, 2)) - wh / 2
    return _rows(np.zeros((1, n)), rng.uniform(0, 1, (1, n)), xy[..., 0], xy[..., 1],
                 wh[..., 0], wh[..., 1])


def make_boxes(n, seed=0, clusters=30, size=1000.0):
    """(n, 6) rows (class, score, x1, y1, x2, y2): 80% jittered around cluster centres, so
    many boxes overlap, 20% spread over the image (also used by bench_gpu.py)."""
    rng = np.random.RandomState(seed)
    centres = rng.uniform(0.1 * size, 0.9 * size, (clusters, 2))
    scale = rng.uniform(0.03 * size, 0.2 * size, (clusters, 2))
    k = rng.randint(0, clusters, n)
    c = centres[k] + rng.normal(0, 0.08, (n, 2)) * scale[k] * 2
    wh = scale[k] * rng.uniform(0.6, 1.4, (n, 2))
    spread = rng.rand(n) < 0.2
    c[spread] = rng.uniform(0, size, (spread.sum(), 2))
    out = np.empty((n, 6), np.float32)
    out[:, 0] = rng.randint(0, 5, n)
    out[:, 1] = rng.rand(n)
    out[:, 2:4] = c - wh / 2
    out[:, 4:6] = c + wh / 2
    return out


#: name -> (make data, box_nms keyword arguments, calls per round)
WORKLOADS = {
    'uniform_2000': (lambda: uniform(2000), {}, 10),
    'uniform_10000': (lambda: uniform(10000), {}, 1),
    'crowd_2000': (lambda: crowd(2000), {}, 10),
    'crowd_10000': (lambda: crowd(10000), {}, 2),
    'duplicates_2000': (lambda: duplicates(2000), {}, 10),
    'clusters_10000': (lambda: make_boxes(10000)[None], {'id_index': 0}, 1),
    'batch4x2000_cls20': (lambda: uniform(2000, seed=3, batch=4, classes=20),
                          {'id_index': 0, 'force_suppress': False}, 3),
}
BASE = {'overlap_thresh': 0.5, 'valid_thresh': 0.0, 'topk': -1}

_WORKER = r'''
import json, sys, time
import numpy as np, mxnet as mx
clock = time.process_time if sys.argv[1] == 'cpu' else time.perf_counter
ready = {}
for line in sys.stdin:
    name, path, kw, reps = json.loads(line)
    if name not in ready:
        d = mx.nd.array(np.load(path))
        f = (lambda d=d, kw=kw: mx.nd.contrib.box_nms(d, **kw).wait_to_read())
        out = mx.nd.contrib.box_nms(d, **kw).asnumpy()
        ready[name] = (f, [int((out[..., 0] >= 0).sum()), float(np.where(out >= 0, out, 0).sum())])
    f, check = ready[name]
    t = clock()
    for _ in range(reps):
        f()
    print(json.dumps([(clock() - t) / reps, check]), flush=True)
'''


def symgraph_fn(data, kw):
    from symgraph.opdef import get_op
    __import__('symgraph')                  # registers the operators
    op = get_op('_contrib_box_nms')(**kw)
    out = op.forward(np, [data], [], False)[0]
    check = [int((out[..., 0] >= 0).sum()), float(np.where(out >= 0, out, 0).sum())]
    return (lambda: op.forward(np, [data], [], False)), check


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--mxnet', help='a Python interpreter with mxnet 1.9.1 installed')
    p.add_argument('--threads', type=int, default=2)
    p.add_argument('--rounds', type=int, default=7)
    p.add_argument('--only', help='comma-separated workload names')
    p.add_argument('--cpu-time', action='store_true', help='process CPU time, not wall')
    p.add_argument('--overlap-thresh', type=float, default=BASE['overlap_thresh'],
                   help='box_nms overlap_thresh of every workload (default 0.5)')
    args = p.parse_args()
    names = args.only.split(',') if args.only else list(WORKLOADS)
    clock = time.process_time if args.cpu_time else time.perf_counter
    threads = str(args.threads)
    for var in ('OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS'):
        os.environ[var] = threads
    worker = None
    if args.mxnet:
        env = dict(os.environ, MXNET_MKLDNN_ENABLED='0', OMP_NUM_THREADS=threads)
        worker = subprocess.Popen(
            [args.mxnet, '-c', _WORKER, 'cpu' if args.cpu_time else 'wall'], env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    print('box_nms, overlap_thresh %g, %s, best of %d rounds, %d threads, MXNet 1.9.1 with '
          'MXNET_MKLDNN_ENABLED=0' % (args.overlap_thresh, 'CPU time' if args.cpu_time
                                       else 'wall time', args.rounds, args.threads))
    print('%-20s %10s %10s %7s  %s' % ('workload', 'ours ms', 'mxnet ms', 'ratio',
                                        'kept (ours/mxnet)'))
    ratios = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            make, kw, reps = WORKLOADS[name]
            kw = dict(BASE, **kw)
            kw['overlap_thresh'] = args.overlap_thresh
            data = make()
            path = os.path.join(tmp, name + '.npy')
            np.save(path, data)
            fn, check = symgraph_fn(data, kw)
            ours, theirs, mcheck = float('inf'), float('inf'), None
            for _ in range(args.rounds):
                if worker:
                    worker.stdin.write(json.dumps([name, path, kw, reps]) + '\n')
                    worker.stdin.flush()
                    sec, mcheck = json.loads(worker.stdout.readline())
                    theirs = min(theirs, sec)
                t = clock()
                for _ in range(reps):
                    fn()
                ours = min(ours, (clock() - t) / reps)
            same = mcheck is None or (mcheck[0] == check[0]
                                      and abs(mcheck[1] - check[1]) <= 1e-6 * abs(check[1]))
            ratio = ours / theirs if worker else None
            if ratio:
                ratios.append(ratio)
            print('%-20s %10.2f %10s %7s  %d/%s%s' % (
                name, ours * 1e3, '%.2f' % (theirs * 1e3) if worker else '-',
                '%.2f' % ratio if ratio else '-', check[0],
                mcheck[0] if mcheck else '-', '' if same else '  OUTPUTS DIFFER'))
            if not same:
                raise SystemExit('symgraph and MXNet disagree on %s' % name)
    if worker:
        worker.stdin.close()
        worker.wait()
        print('geomean ratio %.2f' % float(np.exp(np.mean(np.log(ratios)))))
    return 0


if __name__ == '__main__':
    sys.exit(main())
