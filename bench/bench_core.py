"""Executor overhead and MLP training step, each against a reference in the same run.

    python bench/bench_core.py                  # symgraph vs bare NumPy
    python bench/bench_core.py --mxnet /path/to/mxnet-venv/bin/python   # + MXNet 1.9.1

1. A chain of 400 small elementwise operators on a (16, 16) array: microseconds per
   node through the executor, against a bare NumPy loop calling the same ufuncs
   (target: at most 2x).
2. An MLP training step (784-512-512-10, batch 128, SoftmaxOutput, SGD), against the
   same computation written by hand in NumPy (and MXNet 1.9.1 when given).
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import symgraph as mx  # noqa: E402

CHAIN = 400
REPEAT = 300


def best_of(fn, repeat, rounds=5):
    best = float('inf')
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(repeat):
            fn()
        best = min(best, (time.perf_counter() - t) / repeat)
    return best


def chain_symbol():
    y = mx.sym.var('x')
    for i in range(CHAIN):
        k = i % 4
        if k == 0:
            y = mx.sym.tanh(y)
        elif k == 1:
            y = y * 1.5
        elif k == 2:
            y = y + 0.1
        else:
            y = mx.sym.abs(y)
    return y


def bare_chain(x):
    y = x
    for _ in range(CHAIN // 4):
        y = np.tanh(y)
        y = y * 1.5
        y = y + 0.1
        y = np.abs(y)
    return y


def bench_chain():
    x = np.random.RandomState(0).uniform(-1, 1, (16, 16)).astype(np.float32)
    exe = chain_symbol().simple_bind(mx.cpu(), grad_req='null', x=(16, 16))
    exe.arg_dict['x'][:] = x
    np.testing.assert_allclose(exe.forward()[0].asnumpy(), bare_chain(x), rtol=1e-5)
    t_exe = best_of(exe.forward, REPEAT)
    t_np = best_of(lambda: bare_chain(x), REPEAT)
    return {'executor_us_per_node': 1e6 * t_exe / CHAIN, 'numpy_us_per_node': 1e6 * t_np / CHAIN,
            'ratio': t_exe / t_np}


def mlp_symbol():
    data = mx.sym.var('data')
    h = mx.sym.FullyConnected(data, num_hidden=512, name='fc1')
    h = mx.sym.Activation(h, act_type='relu', name='relu1')
    h = mx.sym.FullyConnected(h, num_hidden=512, name='fc2')
    h = mx.sym.Activation(h, act_type='relu', name='relu2')
    h = mx.sym.FullyConnected(h, num_hidden=10, name='fc3')
    return mx.sym.SoftmaxOutput(h, name='softmax')


def mlp_params(rng):
    shapes = [('fc1_weight', (512, 784)), ('fc1_bias', (512,)), ('fc2_weight', (512, 512)),
              ('fc2_bias', (512,)), ('fc3_weight', (10, 512)), ('fc3_bias', (10,))]
    return {k: (rng.uniform(-0.05, 0.05, s)).astype(np.float32) for k, s in shapes}


#: parameters get gradients, the data and the labels do not (in every framework here)
NO_INPUT_GRAD = {k: 'write' for k in ('fc1_weight', 'fc1_bias', 'fc2_weight', 'fc2_bias',
                                      'fc3_weight', 'fc3_bias')}


def bench_mlp_symgraph(batch=128, lr=0.1):
    rng = np.random.RandomState(0)
    exe = mlp_symbol().simple_bind(mx.cpu(), grad_req=NO_INPUT_GRAD, data=(batch, 784))
    for k, v in mlp_params(rng).items():
        exe.arg_dict[k][:] = v
    exe.arg_dict['data'][:] = rng.rand(batch, 784)
    exe.arg_dict['softmax_label'][:] = rng.randint(0, 10, batch)
    params = [(exe.arg_dict[k]._data, exe.grad_dict[k]._data) for k in exe.grad_dict
              if k not in ('data', 'softmax_label')]

    def step():
        exe.forward(is_train=True)
        exe.backward()
        for w, g in params:
            w -= (lr / batch) * g
    return best_of(step, 10, rounds=3)


def bench_mlp_numpy(batch=128, lr=0.1):
    rng = np.random.RandomState(0)
    p = mlp_params(rng)
    x = rng.rand(batch, 784).astype(np.float32)
    y = rng.randint(0, 10, batch)

    def step():
        h1 = np.maximum(x @ p['fc1_weight'].T + p['fc1_bias'], 0)
        h2 = np.maximum(h1 @ p['fc2_weight'].T + p['fc2_bias'], 0)
        z = h2 @ p['fc3_weight'].T + p['fc3_bias']
        e = np.exp(z - z.max(axis=1, keepdims=True))
        prob = e / e.sum(axis=1, keepdims=True)
        d3 = prob.copy()
        d3[np.arange(batch), y] -= 1
        g3w, g3b = d3.T @ h2, d3.sum(0)
        d2 = (d3 @ p['fc3_weight']) * (h2 > 0)
        g2w, g2b = d2.T @ h1, d2.sum(0)
        d1 = (d2 @ p['fc2_weight']) * (h1 > 0)
        g1w, g1b = d1.T @ x, d1.sum(0)
        for k, g in (('fc1_weight', g1w), ('fc1_bias', g1b), ('fc2_weight', g2w),
                     ('fc2_bias', g2b), ('fc3_weight', g3w), ('fc3_bias', g3b)):
            p[k] -= (lr / batch) * g
    return best_of(step, 10, rounds=3)


MXNET_SCRIPT = r'''
import json, time, numpy as np, mxnet as mx
def best_of(fn, repeat, rounds):
    best = float('inf')
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(repeat): fn()
        mx.nd.waitall()
        best = min(best, (time.perf_counter() - t) / repeat)
    return best
y = mx.sym.var('x')
for i in range(400):
    k = i % 4
    y = (mx.sym.tanh(y) if k == 0 else y * 1.5 if k == 1 else y + 0.1 if k == 2
         else mx.sym.abs(y))
exe = y.simple_bind(mx.cpu(), grad_req='null', x=(16, 16))
chain = best_of(lambda: exe.forward()[0].wait_to_read(), 300, 5)
data = mx.sym.var('data')
h = mx.sym.FullyConnected(data, num_hidden=512, name='fc1')
h = mx.sym.Activation(h, act_type='relu')
h = mx.sym.FullyConnected(h, num_hidden=512, name='fc2')
h = mx.sym.Activation(h, act_type='relu')
h = mx.sym.FullyConnected(h, num_hidden=10, name='fc3')
net = mx.sym.SoftmaxOutput(h, name='softmax')
req = {k: 'write' for k in net.list_arguments() if k not in ('data', 'softmax_label')}
exe = net.simple_bind(mx.cpu(), grad_req=req, data=(128, 784))
rng = np.random.RandomState(0)
for k, a in exe.arg_dict.items():
    a[:] = rng.uniform(-0.05, 0.05, a.shape)
exe.arg_dict['softmax_label'][:] = rng.randint(0, 10, 128)
keys = [k for k in exe.grad_dict if k not in ('data', 'softmax_label')]
def step():
    exe.forward(is_train=True); exe.backward()
    for k in keys:
        exe.arg_dict[k][:] -= (0.1 / 128) * exe.grad_dict[k]
mlp = best_of(step, 10, 3)
print(json.dumps({'chain_us_per_node': 1e6 * chain / 400, 'mlp_ms': 1e3 * mlp}))
'''


def run_mxnet(python):
    env = dict(os.environ, MXNET_MKLDNN_ENABLED='0', OMP_NUM_THREADS=str(os.cpu_count()))
    out = subprocess.run([python, '-c', MXNET_SCRIPT], capture_output=True, text=True,
                         env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--mxnet', help='python interpreter with mxnet 1.9.1 for a reference')
    args = ap.parse_args(argv)
    c = bench_chain()
    print('executor overhead, chain of %d elementwise ops on (16, 16):' % CHAIN)
    print('  symgraph executor  %.3f us/node' % c['executor_us_per_node'])
    print('  bare NumPy loop    %.3f us/node' % c['numpy_us_per_node'])
    print('  ratio              %.2fx   (target <= 2x)' % c['ratio'])
    t_sg = bench_mlp_symgraph()
    t_np = bench_mlp_numpy()
    print('MLP 784-512-512-10 training step, batch 128:')
    print('  symgraph           %.2f ms' % (1e3 * t_sg))
    print('  hand-written NumPy %.2f ms   ratio %.2fx' % (1e3 * t_np, t_sg / t_np))
    if args.mxnet:
        m = run_mxnet(args.mxnet)
        print('MXNet 1.9.1 (same machine, MKLDNN off):')
        print('  chain              %.3f us/node   symgraph/MXNet %.2fx'
              % (m['chain_us_per_node'], c['executor_us_per_node'] / m['chain_us_per_node']))
        print('  MLP step           %.2f ms       symgraph/MXNet %.2fx'
              % (m['mlp_ms'], 1e3 * t_sg / m['mlp_ms']))


if __name__ == '__main__':
    main()
