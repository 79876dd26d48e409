"""Module.fit throughput against the plain executor loop, in the same run.

    python bench/bench_module.py [--epochs 10] [--only mlp|resnet] [--ctx cpu|gpu]

Two workloads on generated data:

* ``mlp``: an MLP 784-512-512-10 (ReLU, SoftmaxOutput), batch 128, 4,096 samples;
* ``resnet``: the CIFAR-style ResNet-14 of bench_cnn.py (3x32x32, widths 16/32/64,
  BatchNorm), batch 32, 512 samples.

Each is trained by ``mx.mod.Module.fit`` (``mx.io.NDArrayIter``, SGD with momentum 0.9
and wd 1e-4, the ``'acc'`` metric updated every batch, no callbacks) and by the plain
executor loop: ``simple_bind``, ``forward(is_train=True, data=..., softmax_label=...)``
on slices of the same arrays, ``backward`` and the same ``sgd_mom_update`` operator per
parameter (with MXNet's Module rules: ``rescale_grad = 1 / batch``, wd on weights and
gammas only).  Both start from the same parameters; the script checks that they end
with the same parameters, so both loops do the same arithmetic.  Epochs of the two are
interleaved and the best epoch of each counts; samples/s is training samples per second
of one epoch.  The target: the Module layer costs at most 5% (Module time / loop time
<= 1.05).
"""
import argparse
import logging
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import symgraph as mx  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_cnn  # noqa: E402
bench_cnn.mx = mx           # its graphs are written against a module-level ``mx``
resnet = bench_cnn.resnet

LR, MOMENTUM, WD = 0.05, 0.9, 1e-4
TARGET = 1.05


def mlp():
    data = mx.sym.var('data')
    h = mx.sym.FullyConnected(data, num_hidden=512, name='fc1')
    h = mx.sym.Activation(h, act_type='relu', name='relu1')
    h = mx.sym.FullyConnected(h, num_hidden=512, name='fc2')
    h = mx.sym.Activation(h, act_type='relu', name='relu2')
    h = mx.sym.FullyConnected(h, num_hidden=10, name='fc3')
    return mx.sym.SoftmaxOutput(h, name='softmax')


WORKLOADS = {
    'mlp': (mlp, (784,), 128, 4096),
    'resnet': (resnet, (3, 32, 32), 32, 512),
}


def make_data(shape, n, seed=0):
    rng = np.random.RandomState(seed)
    x = rng.uniform(-1, 1, (n,) + shape).astype(np.float32)
    y = rng.randint(0, 10, n).astype(np.float32)
    return x, y


def initial_params(net, data_shape, ctx):
    """Xavier-like weights, zero biases, BatchNorm as MXNet's initializers set it."""
    arg_shapes, _, aux_shapes = net.infer_shape(data=data_shape)
    rng = np.random.RandomState(1)
    args = {}
    for name, shape in zip(net.list_arguments(), arg_shapes):
        if name in ('data', 'softmax_label'):
            continue
        if name.endswith('_weight'):
            fan_in = int(np.prod(shape[1:]))
            args[name] = rng.uniform(-1, 1, shape) * np.sqrt(3.0 / fan_in)
        elif name.endswith('_gamma'):
            args[name] = np.ones(shape)
        else:
            args[name] = np.zeros(shape)
    aux = {name: (np.zeros if name.endswith('_mean') else np.ones)(shape)
           for name, shape in zip(net.list_auxiliary_states(), aux_shapes)}
    return ({k: mx.nd.array(v, ctx=ctx) for k, v in args.items()},
            {k: mx.nd.array(v, ctx=ctx) for k, v in aux.items()})


class PlainLoop:
    """simple_bind + forward/backward + sgd_mom_update per parameter."""

    def __init__(self, net, x, y, batch, ctx):
        self.x, self.y, self.batch = x, y, batch
        # as Module binds: no gradient for the data and the label
        reqs = {k: 'null' if k in ('data', 'softmax_label') else 'write'
                for k in net.list_arguments()}
        self.exe = net.simple_bind(ctx, grad_req=reqs, data=(batch,) + x.shape[1:],
                                   softmax_label=(batch,))
        args, aux = initial_params(net, (batch,) + x.shape[1:], ctx)
        self.exe.copy_params_from(args, aux)
        self.params = [(k, self.exe.arg_dict[k], self.exe.grad_dict[k],
                        mx.nd.zeros(self.exe.arg_dict[k].shape, ctx=ctx),
                        WD if k.endswith(('_weight', '_gamma')) else 0.0)
                       for k in net.list_arguments() if k not in ('data', 'softmax_label')]

    def epoch(self):
        exe, b = self.exe, self.batch
        for start in range(0, len(self.x) - b + 1, b):
            exe.forward(is_train=True, data=self.x[start:start + b],
                        softmax_label=self.y[start:start + b])
            exe.backward()
            for _, w, g, m, wd in self.params:
                mx.nd.sgd_mom_update(w, g, m, out=w, lr=LR, momentum=MOMENTUM, wd=wd,
                                     rescale_grad=1.0 / b)
        exe.outputs[0].wait_to_read()

    def get_params(self):
        return {k: w.asnumpy() for k, w, _, _, _ in self.params}


class ModuleFit:
    """Module.fit, one epoch per call (bound, initialized and optimizer set up once)."""

    def __init__(self, net, x, y, batch, ctx):
        self.it = mx.io.NDArrayIter(x, y, batch)
        self.mod = mx.mod.Module(net, context=ctx)
        self.mod.bind(self.it.provide_data, self.it.provide_label)
        args, aux = initial_params(net, (batch,) + x.shape[1:], ctx)
        self.mod.init_params(arg_params=args, aux_params=aux)
        self.mod.init_optimizer(optimizer='sgd', optimizer_params={
            'learning_rate': LR, 'momentum': MOMENTUM, 'wd': WD})
        self.metric = mx.metric.create('acc')
        self.n = 0

    def epoch(self):
        self.mod.fit(self.it, eval_metric=self.metric, begin_epoch=self.n,
                     num_epoch=self.n + 1)
        self.n += 1

    def get_params(self):
        return {k: v.asnumpy() for k, v in self.mod.get_params()[0].items()}


def bench(name, epochs, ctx):
    build, shape, batch, n = WORKLOADS[name]
    x, y = make_data(shape, n)
    plain = PlainLoop(build(), x, y, batch, ctx)
    module = ModuleFit(build(), x, y, batch, ctx)
    times = {'plain': [], 'module': []}
    cpu = {'plain': [], 'module': []}
    for _ in range(epochs):
        for key, runner in (('plain', plain), ('module', module)):
            t, c = time.perf_counter(), time.process_time()
            runner.epoch()
            times[key].append(time.perf_counter() - t)
            cpu[key].append(time.process_time() - c)
    want, got = plain.get_params(), module.get_params()
    diff = max(float(np.abs(got[k] - want[k]).max()) for k in want)
    best = {k: min(v) for k, v in times.items()}
    return {'workload': name, 'batch': batch, 'samples': n, 'max_param_diff': diff,
            'plain_samples_per_s': n / best['plain'], 'module_samples_per_s': n / best['module'],
            'ratio': best['module'] / best['plain'],
            'median_ratio': float(np.median(times['module']) / np.median(times['plain'])),
            'cpu_ratio': min(cpu['module']) / min(cpu['plain'])}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--epochs', type=int, default=10)
    ap.add_argument('--only', choices=sorted(WORKLOADS))
    ap.add_argument('--ctx', default='cpu', choices=('cpu', 'gpu'))
    args = ap.parse_args(argv)
    ctx = mx.gpu(0) if args.ctx == 'gpu' else mx.cpu(0)
    # fit's per-epoch lines and its "already bound/initialized" on each call
    logging.getLogger().setLevel(logging.ERROR)
    warnings.simplefilter('ignore')
    print('%-8s %6s %8s %12s %14s %7s %7s %7s %10s'
          % ('workload', 'batch', 'samples', 'loop samp/s', 'Module samp/s', 'ratio',
             'median', 'cpu', 'param diff'))
    failed = False
    for name in ([args.only] if args.only else sorted(WORKLOADS)):
        r = bench(name, args.epochs, ctx)
        print('%-8s %6d %8d %12.1f %14.1f %7.3f %7.3f %7.3f %10.2g'
              % (name, r['batch'], r['samples'], r['plain_samples_per_s'],
                 r['module_samples_per_s'], r['ratio'], r['median_ratio'],
                 r['cpu_ratio'], r['max_param_diff']))
        failed |= r['ratio'] > TARGET or r['max_param_diff'] > 1e-4
    print('ratio: Module time / loop time, best epoch of each (median: of the medians; '
          'cpu: of the process CPU time); target ratio <= %.2f' % TARGET)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
