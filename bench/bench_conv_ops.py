"""Time Convolution and Pooling forward+backward in symgraph (and optionally MXNet).

Usage::

    python bench/bench_conv_ops.py [--mxnet /work/mxvenv/bin/python] [--repeat 20]

The MXNet part runs as a subprocess of the given interpreter (``mx.nd`` + autograd, the
same shapes) so that the two libraries never share a process. Times are medians in ms.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

# (name, op, attrs, data shape); weights and biases follow from the attributes
CASES = [
    ('conv3x3 b32 16->16 32x32', 'Convolution',
     dict(kernel=(3, 3), pad=(1, 1), num_filter=16), (32, 16, 32, 32)),
    ('conv3x3 s2 b32 16->32 32x32', 'Convolution',
     dict(kernel=(3, 3), pad=(1, 1), stride=(2, 2), num_filter=32), (32, 16, 32, 32)),
    ('lenet conv1 b64 1->20 5x5 28x28', 'Convolution',
     dict(kernel=(5, 5), num_filter=20), (64, 1, 28, 28)),
    ('lenet conv2 b64 20->50 5x5 12x12', 'Convolution',
     dict(kernel=(5, 5), num_filter=50), (64, 20, 12, 12)),
    ('maxpool 2x2 s2 b64 20x24x24', 'Pooling',
     dict(kernel=(2, 2), stride=(2, 2), pool_type='max'), (64, 20, 24, 24)),
    ('maxpool 3x3 s2 p1 b32 16x32x32', 'Pooling',
     dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type='max'), (32, 16, 32, 32)),
    ('global avgpool b32 64x8x8', 'Pooling',
     dict(kernel=(1, 1), global_pool=True, pool_type='avg'), (32, 64, 8, 8)),
]


def _median_ms(fn, repeat):
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times)) * 1e3


def bench_symgraph(repeat):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
    from symgraph.opdef import get_op
    rng = np.random.RandomState(0)
    res = {}
    for name, opname, attrs, dshape in CASES:
        op = get_op(opname)(**attrs)
        shapes, _, _ = op.infer_shape([dshape] + [None] * (len(op.list_arguments()) - 1))
        ins = [rng.uniform(-1, 1, s).astype(np.float32) for s in shapes]
        need = [True] * len(ins)
        y = op.forward(np, ins, [], True)
        dy = [np.ones_like(y[0])]
        fwd = _median_ms(lambda: op.forward(np, ins, [], True), repeat)
        bwd = _median_ms(lambda: op.backward(np, dy, ins, y, [], need), repeat)
        res[name] = (fwd, bwd)
    return res


_MX_SCRIPT = r'''
import json, sys, time
import numpy as np
import mxnet as mx
cases, repeat = json.loads(sys.argv[1]), int(sys.argv[2])
def median_ms(fn):
    fn()
    ts = []
    for _ in range(repeat):
        t = time.perf_counter(); fn(); ts.append(time.perf_counter() - t)
    return float(np.median(ts)) * 1e3
res = {}
for name, opname, attrs, dshape in cases:
    attrs = {k: tuple(v) if isinstance(v, list) else v for k, v in attrs.items()}
    sym = getattr(mx.sym, opname)(mx.sym.var('data'), **attrs)
    shapes = sym.infer_shape(data=tuple(dshape))[0]
    ins = [mx.nd.array(np.random.uniform(-1, 1, s)) for s in shapes]
    for a in ins:
        a.attach_grad()
    f = lambda: getattr(mx.nd, opname)(*ins, **attrs).wait_to_read()
    def fb():
        with mx.autograd.record():
            y = getattr(mx.nd, opname)(*ins, **attrs)
        y.backward(mx.nd.ones_like(y))
        mx.nd.waitall()
    fwd = median_ms(f)
    res[name] = (fwd, median_ms(fb) - fwd)
print(json.dumps(res))
'''


def bench_mxnet(python, repeat, mkldnn):
    env = dict(os.environ, MXNET_STORAGE_FALLBACK_LOG_VERBOSE='0',
               MXNET_MKLDNN_ENABLED='1' if mkldnn else '0')
    out = subprocess.run([python, '-c', _MX_SCRIPT, json.dumps(CASES), str(repeat)],
                         capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--mxnet', help='python interpreter with MXNet 1.9.1 installed')
    ap.add_argument('--repeat', type=int, default=20)
    args = ap.parse_args()
    cols = [('symgraph', bench_symgraph(args.repeat))]
    if args.mxnet:
        cols.append(('mxnet', bench_mxnet(args.mxnet, args.repeat, True)))
        cols.append(('mxnet-nomkldnn', bench_mxnet(args.mxnet, args.repeat, False)))
    print('forward / backward / total in ms (median of %d)' % args.repeat)
    print('%-34s' % 'case' + ''.join('%24s' % c for c, _ in cols))
    for name, _, _, _ in CASES:
        cells = ''.join('%24s' % ('%.2f / %.2f / %.2f' % (r[name][0], r[name][1],
                                                          r[name][0] + r[name][1]))
                        for _, r in cols)
        print('%-34s%s' % (name, cells))


if __name__ == '__main__':
    main()
