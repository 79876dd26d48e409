"""What bench/bench_bf16.py and bench/bench_int8.py share (issue 32): the two networks
(random weights, written once against the MXNet 1.x API and run by both frameworks), one
network bound in float32 and in the reduced precision a script's ``convert`` makes, the
timing, the MXNet worker process and the same-run table. Each script gives its target
dtype, its conversion and the MXNet modules its worker imports to :func:`main`.
"""
import argparse
import importlib
import json
import os
import subprocess
import sys
import time

import numpy as np

mx = None           # symgraph, or mxnet in a --worker process


def resnet14():
    """bench_cnn.py's CIFAR ResNet-14 (3 stages of 2 basic blocks, 16/32/64 channels)."""
    def conv_bn(x, width, kernel, stride, name, relu=True):
        pad = (kernel // 2, kernel // 2)
        x = mx.sym.Convolution(x, kernel=(kernel, kernel), stride=(stride, stride), pad=pad,
                               num_filter=width, no_bias=True, name=name + '_conv')
        x = mx.sym.BatchNorm(x, fix_gamma=False, eps=2e-5, momentum=0.9, name=name + '_bn')
        return mx.sym.Activation(x, act_type='relu', name=name + '_relu') if relu else x

    x = conv_bn(mx.sym.var('data'), 16, 3, 1, 'stem')
    width_in = 16
    for stage, width in enumerate((16, 32, 64)):
        for block in range(2):
            name = 'stage%d_unit%d' % (stage + 1, block + 1)
            stride = 2 if stage > 0 and block == 0 else 1
            h = conv_bn(x, width, 3, stride, name + '_a')
            h = conv_bn(h, width, 3, 1, name + '_b', relu=False)
            if stride != 1 or width_in != width:
                x = conv_bn(x, width, 1, stride, name + '_proj', relu=False)
            x = mx.sym.Activation(h + x, act_type='relu', name=name + '_relu')
            width_in = width
    x = mx.sym.Pooling(x, global_pool=True, pool_type='avg', kernel=(1, 1), name='pool')
    x = mx.sym.FullyConnected(mx.sym.Flatten(x), num_hidden=10, name='fc')
    return mx.sym.softmax(x, name='prob'), (64, 3, 32, 32)


def resnet50():
    """The Gluon model zoo's ResNet-50 v1, traced to a Symbol."""
    net = mx.gluon.model_zoo.vision.resnet50_v1()
    net.hybridize()
    sym = net(mx.sym.var('data'))
    return mx.sym.softmax(sym, name='prob'), (16, 3, 224, 224)


NETS = {'resnet14': resnet14, 'resnet50': resnet50}


def params(sym, shape, seed=0):
    """Random parameters; BatchNorm statistics near 1 / 0 so activations stay finite."""
    rng = np.random.RandomState(seed)
    arg_shapes, _, aux_shapes = sym.infer_shape(data=shape)
    arg, aux = {}, {}
    for name, s in zip(sym.list_arguments(), arg_shapes):
        if name == 'data':
            continue
        if name.endswith('gamma'):
            v = rng.uniform(0.5, 1.0, s)
        elif name.endswith(('beta', 'bias')):
            v = rng.normal(0, 0.05, s)
        else:
            v = rng.normal(0, (2.0 / max(1, int(np.prod(s[1:])))) ** 0.5, s)
        arg[name] = mx.nd.array(v.astype(np.float32))
    for name, s in zip(sym.list_auxiliary_states(), aux_shapes):
        v = rng.uniform(0.8, 1.2, s) if name.endswith('var') else rng.normal(0, 0.05, s)
        aux[name] = mx.nd.array(v.astype(np.float32))
    return arg, aux


class Setup:
    """One network bound in float32 and in ``target`` (``convert(mx, sym, arg, aux,
    shape, rng)`` -> the converted sym, arg, aux; ``rng`` drew the input, from ``low``)."""

    def __init__(self, key, target, convert, low):
        sym, shape = NETS[key]()
        arg, aux = params(sym, shape)
        rng = np.random.RandomState(1)
        x = mx.nd.array(rng.uniform(low, 1, shape).astype(np.float32))
        self.exes = {'float32': self._bind(sym, arg, aux, x)}
        csym, carg, caux = convert(mx, sym, dict(arg), dict(aux), shape, rng)
        self.exes[target] = self._bind(csym, carg, caux, x)
        outs = {k: self.run(k) for k in self.exes}
        # the reduced precision agrees with float32 on the top class for most rows
        self.agree = float(np.mean(outs['float32'].argmax(1) == outs[target].argmax(1)))

    @staticmethod
    def _bind(sym, arg, aux, x):
        args = dict(arg, data=x)
        return sym.bind(mx.cpu(), {k: args[k] for k in sym.list_arguments()},
                        aux_states={k: aux[k] for k in sym.list_auxiliary_states()},
                        grad_req='null')

    def run(self, dtype):
        out = self.exes[dtype].forward(is_train=False)[0]
        return out.asnumpy().astype(np.float32)


def best_ms(fn, repeat, rounds):
    fn()
    best = float('inf')
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(repeat):
            fn()
        best = min(best, (time.perf_counter() - t) / repeat)
    return 1e3 * best


class Local:
    def __init__(self, target, convert, low):
        self.setups = {}
        self.setup_args = (target, convert, low)

    def measure(self, key, dtype, repeat):
        if key not in self.setups:
            self.setups[key] = Setup(key, *self.setup_args)
        s = self.setups[key]
        return {'ms': best_ms(lambda: s.run(dtype), repeat, 1), 'agree': s.agree}


class Worker:
    """This script under MXNet's interpreter, answering one JSON line per request."""

    def __init__(self, python, script, threads):
        env = dict(os.environ, OMP_NUM_THREADS=str(threads), MXNET_SUBGRAPH_VERBOSE='0',
                   MXNET_STORAGE_FALLBACK_LOG_VERBOSE='0')
        self.proc = subprocess.Popen([python, os.path.abspath(script), '--worker'],
                                     env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True)

    def measure(self, key, dtype, repeat):
        self.proc.stdin.write('%s %s %d\n' % (key, dtype, repeat))
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit('the MXNet worker died (see its messages above)')
        return json.loads(line)

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def serve(local):
    for line in sys.stdin:
        key, dtype, repeat = line.split()
        print(json.dumps(local.measure(key, dtype, int(repeat))), flush=True)




def main(doc, script, target, short, convert, low=0.0, worker_modules=(), paired=False):
    """The command line of a script: ``target`` ('bfloat16', 'int8') is timed against
    float32 (column label ``short``); ``worker_modules`` are imported in the MXNet worker
    (``mxnet.contrib.amp``); ``paired`` prints the median of the rounds' back-to-back
    symgraph/MXNet ratios beside the best-of ratio."""
    global mx
    ap = argparse.ArgumentParser(description=doc.split('\n')[0])
    ap.add_argument('--mxnet', help='an interpreter with MXNet 1.9.1 (same-run comparison)')
    ap.add_argument('--threads', type=int, default=2)
    ap.add_argument('--rounds', type=int, default=3)
    ap.add_argument('--nets', default='resnet14,resnet50')
    ap.add_argument('--worker', action='store_true', help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        import mxnet
        for name in worker_modules:
            importlib.import_module(name)
        mx = mxnet
        serve(Local(target, convert, low))
        return
    os.environ['OMP_NUM_THREADS'] = str(args.threads)
    import symgraph
    mx = symgraph
    runners = {'symgraph': Local(target, convert, low)}
    if args.mxnet:
        runners['mxnet'] = Worker(args.mxnet, script, args.threads)
    repeats = {'resnet14': 5, 'resnet50': 2}
    best = {}
    pairs = {}          # (net, dtype) -> per-round symgraph/MXNet ratios
    try:
        for _ in range(args.rounds):
            for key in args.nets.split(','):
                for dtype in ('float32', target):
                    ms = {}
                    for name, r in runners.items():
                        # the other framework's OpenMP threads spin a while after its
                        # last call (Intel OpenMP's KMP_BLOCKTIME: 200 ms): let them sleep
                        time.sleep(0.3)
                        got = r.measure(key, dtype, repeats[key])
                        ms[name] = got['ms']
                        k = (key, dtype, name)
                        if k not in best or got['ms'] < best[k]['ms']:
                            best[k] = got
                    if 'mxnet' in ms:
                        pairs.setdefault((key, dtype), []).append(
                            ms['symgraph'] / ms['mxnet'])
    finally:
        if 'mxnet' in runners:
            runners['mxnet'].close()
    print('%d threads, best of %d rounds (ms per batch)' % (args.threads, args.rounds))
    for key in args.nets.split(','):
        for name in runners:
            f32, low_p = best[(key, 'float32', name)], best[(key, target, name)]
            print('%-9s %-8s float32 %8.1f  %s %8.1f  %s/f32 %.2f  top-1 agreement %.2f'
                  % (key, name, f32['ms'], target, low_p['ms'], short,
                     low_p['ms'] / f32['ms'], low_p['agree']))
        if 'mxnet' in runners:
            for dtype in ('float32', target):
                ours, theirs = best[(key, dtype, 'symgraph')], best[(key, dtype, 'mxnet')]
                line = '%-9s %-8s symgraph/MXNet %.2f' % (key, dtype,
                                                           ours['ms'] / theirs['ms'])
                if paired:
                    ratios = sorted(pairs[(key, dtype)])
                    line += (" (best of each); median of the rounds' back-to-back ratios "
                             '%.2f (range %.2f-%.2f)' % (ratios[len(ratios) // 2],
                                                         ratios[0], ratios[-1]))
                print(line)
