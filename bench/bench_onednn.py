"""Thread pools: NumPy's OpenBLAS matmul followed by a oneDNN convolution, and each alone;
and with ``--ops`` the per-operator routing table.

    python bench/bench_onednn.py
    python bench/bench_onednn.py --ops      # oneDNN / NumPy time per operator and size

``--ops`` times Pooling, the activations and softmax through each operator's own forward
and backward, once with its oneDNN size limits lifted and once with them cleared (the
NumPy path), alternating the two in every round; the ratio is what the backend's routing
tables were set from: symgraph/backend/onednn/routing.py (``POOL_MIN``,
``ELTWISE_FORWARD_MIN``, ``ELTWISE_BACKWARD_MIN``, ``RELU_BACKWARD_FROM_OUTPUT_MIN``) and
symgraph/backend/onednn/layers.py (``LIMITS``: softmax, LRN).

OpenBLAS's worker threads spin for a while after a GEMM and oneDNN's OpenMP (GNU libgomp)
threads after a parallel region; on a machine with as many cores as threads each pool can
take the cores the other one needs. Each variant runs in a fresh process (the pools read
their settings at start): symgraph's default (its loader starts libgomp with
``GOMP_SPINCOUNT=30000``, a short spin), threads that sleep at once (``passive``), libgomp
spinning (``active``, and its own default of 300,000 spins), and OpenBLAS on one thread.
Printed: ms per matmul alone, per convolution alone, and per (matmul, convolution) pair,
with the matmul in NumPy (OpenBLAS) and in oneDNN (what FullyConnected uses for large
products); the pair should cost the sum.
"""
import os
import subprocess
import sys
import time

import numpy as np

VARIANTS = [('defaults (libgomp spins 30000)', {}),
            ('OMP_WAIT_POLICY=passive', {'OMP_WAIT_POLICY': 'passive'}),
            ('OMP_WAIT_POLICY=active', {'OMP_WAIT_POLICY': 'active'}),
            ('libgomp default spinning', {'GOMP_SPINCOUNT': '300000'}),
            ('OPENBLAS_NUM_THREADS=1', {'OPENBLAS_NUM_THREADS': '1'})]


def best(fn, repeat=20, rounds=5):
    fn()
    out = float('inf')
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(repeat):
            fn()
        out = min(out, (time.perf_counter() - t) / repeat)
    return 1e3 * out


def measure():
    """One line: matmul, convolution, pair (ms), in this process."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
    from symgraph.opdef import cpu_backend
    from symgraph.ops._conv_impl import conv_forward
    if cpu_backend() is None:
        raise SystemExit('oneDNN is not available')
    rng = np.random.RandomState(0)
    a = rng.rand(64, 1024).astype(np.float32)
    b = rng.rand(1024, 1024).astype(np.float32)
    x = rng.rand(32, 32, 16, 16).astype(np.float32)
    w = rng.rand(32, 32, 3, 3).astype(np.float32)

    def mm():
        return a @ b

    def conv():
        return conv_forward(np, x, w, None, (1, 1), (1, 1), (1, 1), 1)

    def pair():
        mm()
        conv()

    def dnnl_mm():
        return cpu_backend().matmul(a, b)

    def dnnl_pair():
        dnnl_mm()
        conv()
    return best(mm), best(conv), best(pair), best(dnnl_mm), best(dnnl_pair)


def _ops_table():
    """[(label, make_op, shape, backward?)] of the --ops measurements."""
    from symgraph.ops.nn import Activation, LeakyReLU
    from symgraph.ops.pooling import Pooling
    from symgraph.ops.softmax import LogSoftmax, Softmax
    rows = []
    for shape, kw in [((64, 20, 24, 24), dict(kernel=(2, 2), stride=(2, 2))),
                      ((8, 8, 8, 8), dict(kernel=(2, 2), stride=(2, 2))),
                      ((32, 64, 56, 56), dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1))),
                      ((32, 64, 28, 28), dict(kernel=(3, 3), pad=(1, 1), pool_type='avg'))]:
        label = 'Pooling %s %s' % (kw.get('pool_type', 'max'), 'x'.join(map(str, kw['kernel'])))
        rows.append((label, lambda kw=kw: Pooling(**kw), shape))
    for n in (1 << 12, 1 << 14, 1 << 16, 1 << 18, 1 << 20):
        for a in ('relu', 'sigmoid', 'tanh', 'softrelu'):
            rows.append(('Activation %s' % a, lambda a=a: Activation(act_type=a), (n,)))
        for a in ('leaky', 'elu', 'gelu'):
            rows.append(('LeakyReLU %s' % a, lambda a=a: LeakyReLU(act_type=a, slope=0.2),
                         (n,)))
    for shape in ((64, 10), (64, 100), (64, 1000), (256, 4096)):
        rows.append(('softmax', lambda: Softmax(axis=-1), shape))
        rows.append(('log_softmax', lambda: LogSoftmax(axis=-1), shape))
    return rows


def ops():
    """Print oneDNN / NumPy time of each operator's forward and backward (same run)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
    from symgraph.opdef import cpu_backend
    from symgraph.backend.onednn import layers, routing
    if cpu_backend() is None:
        raise SystemExit('oneDNN is not available')
    # (module, table, lifted value, cleared value)
    tables = [(routing, 'POOL_MIN', {'forward': (1, 0), 'backward_max': (1, 0),
                                     'backward_avg': (1, 0)}, {}),
              (routing, 'ELTWISE_FORWARD_MIN', {'relu': 0, 'sigmoid': 0, 'softrelu': 0,
                                                'elu': 0, 'gelu': 0}, {}),
              (routing, 'ELTWISE_BACKWARD_MIN', {'relu': 0, 'elu': 0, 'gelu': 0}, {}),
              (routing, 'RELU_BACKWARD_FROM_OUTPUT_MIN', 0, None),
              (layers, 'LIMITS', {'softmax': 0, 'log_softmax': 0, 'lrn': 0}, {})]
    saved = [(m, k, getattr(m, k)) for m, k, _, _ in tables]

    def route(on):
        for m, k, lifted, cleared in tables:
            setattr(m, k, (dict(lifted) if isinstance(lifted, dict) else lifted) if on
                    else cleared)
    rng = np.random.RandomState(0)
    print('%-22s %-18s %10s %10s %6s | %10s %10s %6s' % (
        'operator', 'shape', 'fwd numpy', 'oneDNN', 'ratio', 'bwd numpy', 'oneDNN', 'ratio'))
    try:
        for label, make, shape in _ops_table():
            op = make()
            x = rng.standard_normal(shape).astype(np.float32)
            y = op.forward(np, [x], [], True)
            dy = rng.standard_normal(y[0].shape).astype(np.float32)

            def fwd():
                return op.forward(np, [x], [], True)

            def bwd():
                return op.backward(np, [dy], [x], y, [], [True])
            times = {}
            for _ in range(3):          # alternate: load changes hit both alike
                for on in (False, True):
                    route(on)
                    for name, fn in (('f', fwd), ('b', bwd)):
                        t = best(fn, repeat=3, rounds=2)
                        times[(name, on)] = min(times.get((name, on), t), t)
            print('%-22s %-18s %8.3f ms %7.3f ms %6.2f | %7.3f ms %7.3f ms %6.2f' % (
                label, 'x'.join(map(str, shape)), times[('f', False)], times[('f', True)],
                times[('f', True)] / times[('f', False)], times[('b', False)],
                times[('b', True)], times[('b', True)] / times[('b', False)]))
    finally:
        for m, k, v in saved:
            setattr(m, k, v)
    print('ratio = oneDNN / NumPy (below 1: oneDNN faster); backward of softmax and tanh '
          'always runs on NumPy, so its ratio is about 1')


def main():
    if '--ops' in sys.argv:
        ops()
        return
    if '--child' in sys.argv:
        print('%.3f %.3f %.3f %.3f %.3f' % measure())
        return
    cores = len(os.sched_getaffinity(0))
    print('%d cores; ms per call, best of 5 rounds' % cores)
    print('%-26s %8s %8s %8s %8s | %12s %8s %8s' % (
        'variant', 'matmul', 'conv', 'pair', 'pair/sum', 'oneDNN matmul', 'pair', 'pair/sum'))
    for name, env in VARIANTS:
        env = dict(os.environ, OMP_NUM_THREADS=str(cores), **env)
        out = subprocess.run([sys.executable, os.path.abspath(__file__), '--child'], env=env,
                             capture_output=True, text=True, check=True).stdout
        mm, conv, pair, dmm, dpair = map(float, out.split())
        print('%-26s %8.2f %8.2f %8.2f %8.2f | %12.2f %8.2f %8.2f'
              % (name, mm, conv, pair, pair / (mm + conv), dmm, dpair, dpair / (dmm + conv)))


if __name__ == '__main__':
    main()
