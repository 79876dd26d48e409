"""Gluon and autograd against MXNet 1.9.1 in the same run (issue 28's speed targets):

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE \\
        python bench/bench_gluon.py --mxnet <mxnet-venv>/bin/python

Workloads (float32, CPU, both frameworks on the same number of threads):

- ``hybrid``: the CIFAR ResNet-14 of bench/bench_cnn.py written as HybridBlocks, one
  training step at batch 32: ``autograd.record()``, SoftmaxCrossEntropyLoss, ``backward``,
  ``Trainer(sgd, momentum=0.9).step``, hybridized with ``static_alloc=True,
  static_shape=True``.
- ``imperative``: the same step, not hybridized (every operator through ``mx.nd`` and the
  tape).
- ``module``: the same network as a Symbol under ``mx.mod.Module`` (forward_backward +
  update, sgd with momentum): the symbolic step the hybridized one is held to (x 1.05).
- ``record_call``: microseconds per ``mx.nd.relu(x)`` on a (16, 16) array inside
  ``autograd.record()`` with ``x.attach_grad()`` (the tape's per-call overhead).

The file runs itself under the other interpreter (``--worker``, ``import mxnet as mx``);
parameters and data come from the same NumPy seeds. The frameworks take turns, pass by
pass; each time is the best over the passes.

``--phases N`` (symgraph only, in this process) splits the hybridized step and the Module
step into phases: the Python calls of each (cProfile, one step after warm-up: all calls,
and those of Python functions alone), which no load on the machine changes, and the median
milliseconds over ``N`` steps of each, the two steps taking turns.
"""
import argparse
import cProfile
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

mx = None
CORES = len(os.sched_getaffinity(0))
BATCH = 32


def resnet_block_classes():
    gluon, nn = mx.gluon, mx.gluon.nn

    class ConvBN(gluon.HybridBlock):
        def __init__(self, width, kernel, stride, relu=True, **kw):
            super().__init__(**kw)
            with self.name_scope():
                self.conv = nn.Conv2D(width, kernel, stride, kernel // 2, use_bias=False)
                self.bn = nn.BatchNorm(epsilon=2e-5, momentum=0.9)
            self.relu = relu

        def hybrid_forward(self, F, x):
            x = self.bn(self.conv(x))
            return F.Activation(x, act_type='relu') if self.relu else x

    class Unit(gluon.HybridBlock):
        def __init__(self, width, stride, project, **kw):
            super().__init__(**kw)
            with self.name_scope():
                self.a = ConvBN(width, 3, stride)
                self.b = ConvBN(width, 3, 1, relu=False)
                self.proj = ConvBN(width, 1, stride, relu=False) if project else None

        def hybrid_forward(self, F, x):
            h = self.b(self.a(x))
            s = self.proj(x) if self.proj is not None else x
            return F.Activation(h + s, act_type='relu')

    class ResNet14(gluon.HybridBlock):
        def __init__(self, **kw):
            super().__init__(**kw)
            with self.name_scope():
                self.features = nn.HybridSequential()
                self.features.add(ConvBN(16, 3, 1))
                width_in = 16
                for stage, width in enumerate((16, 32, 64)):
                    for block in range(2):
                        stride = 2 if stage > 0 and block == 0 else 1
                        self.features.add(Unit(width, stride, stride != 1 or width_in != width))
                        width_in = width
                self.features.add(nn.GlobalAvgPool2D(), nn.Flatten())
                self.out = nn.Dense(10)

        def hybrid_forward(self, F, x):
            return self.out(self.features(x))
    return ResNet14


def data():
    rng = np.random.RandomState(0)
    x = mx.nd.array(rng.uniform(-1, 1, (BATCH, 3, 32, 32)))
    y = mx.nd.array(rng.randint(0, 10, BATCH))
    return x, y


def gluon_step(hybridize):
    net = resnet_block_classes()()
    net.initialize(mx.init.Xavier(rnd_type='uniform', magnitude=2.0))
    if hybridize:
        net.hybridize(static_alloc=True, static_shape=True)
    x, y = data()
    loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = mx.gluon.Trainer(net.collect_params(), 'sgd',
                               {'learning_rate': 0.05, 'momentum': 0.9})

    def step():
        with mx.autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(BATCH)
    return step, lambda: float(loss_fn(net(x), y).mean().asscalar())


def module_step():
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import bench_cnn
    bench_cnn.mx = mx
    sym = bench_cnn.resnet()
    mod = mx.mod.Module(sym, data_names=['data'], label_names=['softmax_label'])
    x, y = data()
    batch = mx.io.DataBatch([x], [y])
    mod.bind(data_shapes=[('data', x.shape)], label_shapes=[('softmax_label', y.shape)])
    mod.init_params(mx.init.Xavier(rnd_type='uniform', magnitude=2.0))
    mod.init_optimizer(optimizer='sgd', optimizer_params={'learning_rate': 0.05,
                                                          'momentum': 0.9})

    def step():
        mod.forward_backward(batch)
        mod.update()
    return step, lambda: 0.0


def record_call():
    x = mx.nd.array(np.random.RandomState(0).randn(16, 16))
    x.attach_grad()
    n = 1000

    def run():
        with mx.autograd.record():
            for _ in range(n):
                mx.nd.relu(x)
    return run, lambda: 0.0, 1e6 / n


WORKLOADS = {
    'hybrid': ('Gluon ResNet-14 step, hybridized (static), batch 32, ms',
               lambda: gluon_step(True) + (1e3,)),
    'imperative': ('Gluon ResNet-14 step, imperative, batch 32, ms',
                   lambda: gluon_step(False) + (1e3,)),
    'module': ('Module ResNet-14 step (sgd momentum), batch 32, ms',
               lambda: module_step() + (1e3,)),
    'record_call': ('relu (16,16) under record(), us per call', record_call),
}


def sync():
    mx.nd.waitall()


def _phased_gluon():
    """The hybridized step as (phase name, function) pairs."""
    net = resnet_block_classes()()
    net.initialize(mx.init.Xavier(rnd_type='uniform', magnitude=2.0))
    net.hybridize(static_alloc=True, static_shape=True)
    x, y = data()
    loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = mx.gluon.Trainer(net.collect_params(), 'sgd',
                               {'learning_rate': 0.05, 'momentum': 0.9})
    held = {}

    def forward():
        with mx.autograd.record():
            held['out'] = net(x)

    def loss():
        with mx.autograd.record():
            held['loss'] = loss_fn(held['out'], y)
    return [('record+forward', forward), ('loss', loss),
            ('backward', lambda: held['loss'].backward()),
            ('Trainer.step', lambda: trainer.step(BATCH))]


def _phased_module():
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import bench_cnn
    bench_cnn.mx = mx
    mod = mx.mod.Module(bench_cnn.resnet(), data_names=['data'],
                        label_names=['softmax_label'])
    x, y = data()
    batch = mx.io.DataBatch([x], [y])
    mod.bind(data_shapes=[('data', x.shape)], label_shapes=[('softmax_label', y.shape)])
    mod.init_params(mx.init.Xavier(rnd_type='uniform', magnitude=2.0))
    mod.init_optimizer(optimizer='sgd', optimizer_params={'learning_rate': 0.05,
                                                          'momentum': 0.9})
    return [('Module.forward_backward', lambda: mod.forward_backward(batch)),
            ('Module.update', mod.update)]


def _calls(fn):
    """(all calls, Python-function calls) of one run of ``fn``."""
    prof = cProfile.Profile()
    prof.enable()
    fn()
    prof.disable()
    prof.create_stats()
    calls = [(k[0], v[1]) for k, v in prof.stats.items()]
    return sum(n for _, n in calls), sum(n for f, n in calls if f != '~')


def phases(steps):
    """Print the phases of the hybridized and the Module steps (see ``--phases``)."""
    import symgraph as mx_
    global mx
    mx = mx_
    runs = {'hybrid': _phased_gluon(), 'module': _phased_module()}
    for _ in range(3):
        for ph in runs.values():
            for _, fn in ph:
                fn()
    counts = {}
    for ph in runs.values():
        for name, fn in ph:
            counts[name] = _calls(fn)
    times = {}
    for _ in range(steps):
        for ph in runs.values():
            for name, fn in ph:
                t = time.perf_counter()
                fn()
                times.setdefault(name, []).append(1e3 * (time.perf_counter() - t))
    print('%-26s %8s %8s %10s' % ('phase', 'calls', 'Python', 'median ms'))
    for key, ph in runs.items():
        total = [0, 0, 0.0]
        for name, _ in ph:
            c, py = counts[name]
            med = statistics.median(times[name])
            total = [total[0] + c, total[1] + py, total[2] + med]
            print('%-26s %8d %8d %10.2f' % (name, c, py, med))
        print('%-26s %8d %8d %10.2f' % ('%s step' % key, total[0], total[1], total[2]))


def measure(ready, key, repeat):
    fn, check, scale = ready[key]
    fn()
    sync()
    t = time.perf_counter()
    for _ in range(repeat):
        fn()
    sync()
    return scale * (time.perf_counter() - t) / repeat


def serve():
    ready = {}
    for line in sys.stdin:
        key, repeat = line.split()
        if key not in ready:
            ready[key] = WORKLOADS[key][1]()
        print(json.dumps(measure(ready, key, int(repeat))), flush=True)


class Worker:
    def __init__(self, python, framework):
        env = dict(os.environ, OMP_NUM_THREADS=str(CORES), BENCH_FRAMEWORK=framework)
        self.proc = subprocess.Popen([python, os.path.abspath(__file__), '--worker'],
                                     env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True)

    def measure(self, key, repeat):
        self.proc.stdin.write('%s %d\n' % (key, repeat))
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit('a worker died (see its messages above)')
        return json.loads(line)

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def main():
    global mx
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--mxnet', help='interpreter with mxnet 1.9.1')
    p.add_argument('--passes', type=int, default=6)
    p.add_argument('--repeat', type=int, default=5)
    p.add_argument('--only', help='comma-separated workloads')
    p.add_argument('--phases', type=int, metavar='N',
                   help='symgraph only: calls and median times of the steps\' phases')
    p.add_argument('--worker', action='store_true', help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.phases:
        phases(args.phases)
        return
    if args.worker:
        if os.environ.get('BENCH_FRAMEWORK') == 'mxnet':
            import mxnet as mx_
        else:
            import symgraph as mx_
        mx = mx_
        serve()
        return
    keys = args.only.split(',') if args.only else list(WORKLOADS)
    workers = {'symgraph': Worker(sys.executable, 'symgraph')}
    if args.mxnet:
        workers['mxnet'] = Worker(args.mxnet, 'mxnet')
    best = {}
    for _ in range(args.passes):
        for key in keys:
            for name, w in workers.items():
                if name == 'mxnet' and key == 'module_only':
                    continue
                t = w.measure(key, args.repeat if key != 'record_call' else 3)
                best[(name, key)] = min(best.get((name, key), float('inf')), t)
    for w in workers.values():
        w.close()
    print('%d cores (%s threads each), best of %d passes' % (CORES, CORES, args.passes))
    print('%-58s %10s %10s %7s' % ('workload', 'symgraph', 'mxnet', 'ratio'))
    for key in keys:
        ours = best[('symgraph', key)]
        theirs = best.get(('mxnet', key))
        print('%-58s %10.2f %10s %7s' % (
            WORKLOADS[key][0], ours, '-' if theirs is None else '%.2f' % theirs,
            '-' if theirs is None else '%.2f' % (ours / theirs)))
    if ('symgraph', 'hybrid') in best and ('symgraph', 'module') in best:
        print('symgraph hybridized / symgraph Module step: %.3f'
              % (best[('symgraph', 'hybrid')] / best[('symgraph', 'module')]))


if __name__ == '__main__':
    main()
