"""Time box_nms on clustered random boxes, ours against MXNet's ``contrib.box_nms``.

Usage::

    python bench/bench_nms.py [--mxnet /path/to/python-with-mxnet] [--repeat 5]

MXNet runs in a subprocess of the given interpreter (it needs its own NumPy), on the
same boxes (passed through a temporary ``.npy`` file).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

SIZES = (2000, 10000)
CONFIGS = ({}, {'id_index': 0})


def make_boxes(n, seed=0, clusters=30, size=1000.0):
    """(n, 6) rows (class, score, x1, y1, x2, y2): 80% jittered around cluster centres, so
    many boxes overlap, 20% spread over the image."""
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


_MXNET_SCRIPT = r'''
import json, sys, time, numpy as np, mxnet as mx
res = {}
for path, kw, repeat in json.loads(sys.argv[1]):
    d = mx.nd.array(np.load(path))
    out = mx.nd.contrib.box_nms(d, **kw)
    out.wait_to_read()
    t = time.perf_counter()
    for _ in range(repeat):
        mx.nd.contrib.box_nms(d, **kw).wait_to_read()
    res[path + json.dumps(kw)] = ((time.perf_counter() - t) / repeat,
                                  int((out.asnumpy()[:, 0] >= 0).sum()))
print(json.dumps(res))
'''


def time_ours(data, kw, repeat):
    from symgraph.opdef import get_op
    import symgraph  # noqa: F401  (registers the operators)
    op = get_op('_contrib_box_nms')(**kw)
    out = op.forward(np, [data], [], False)[0]
    t = time.perf_counter()
    for _ in range(repeat):
        op.forward(np, [data], [], False)
    return (time.perf_counter() - t) / repeat, int((out[:, 0] >= 0).sum())


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--mxnet', help='a Python interpreter with mxnet installed')
    p.add_argument('--repeat', type=int, default=5)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        jobs = []
        for n in SIZES:
            path = os.path.join(tmp, 'boxes%d.npy' % n)
            np.save(path, make_boxes(n))
            jobs += [(path, kw, args.repeat) for kw in CONFIGS]
        mx = {}
        if args.mxnet:
            env = dict(os.environ, MXNET_MKLDNN_ENABLED='0')
            run = subprocess.run([args.mxnet, '-c', _MXNET_SCRIPT, json.dumps(jobs)],
                                 capture_output=True, text=True, env=env, check=True)
            mx = json.loads(run.stdout.strip().splitlines()[-1])
        print('%7s  %-16s %10s %10s %7s  %s'
              % ('boxes', 'params', 'ours ms', 'mxnet ms', 'ratio', 'kept (ours/mxnet)'))
        for path, kw, _ in jobs:
            data = np.load(path)
            t, kept = time_ours(data, kw, args.repeat)
            m = mx.get(path + json.dumps(kw))
            print('%7d  %-16s %10.2f %10s %7s  %d/%s' % (
                len(data), json.dumps(kw), t * 1e3, '%.2f' % (m[0] * 1e3) if m else '-',
                '%.2fx' % (m[0] / t) if m else '-', kept, m[1] if m else '-'))
    return 0


if __name__ == '__main__':
    sys.exit(main())
