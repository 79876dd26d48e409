"""Thread pools: NumPy's OpenBLAS matmul followed by a oneDNN convolution, and each alone.

    python bench/bench_onednn.py

OpenBLAS's worker threads spin for a while after a GEMM and oneDNN's OpenMP (GNU libgomp)
threads after a parallel region; on a machine with as many cores as threads each pool can
take the cores the other one needs. Each variant runs in a fresh process (the pools read
their settings at start): symgraph's default (its loader starts libgomp with
``OMP_WAIT_POLICY=passive``), libgomp spinning (``active``, and its own default of 300,000
spins), and OpenBLAS on one thread. Printed: ms per matmul alone,
per convolution alone, and per (matmul, convolution) pair, with the matmul in NumPy
(OpenBLAS) and in oneDNN (what FullyConnected uses for large products); the pair should
cost the sum.
"""
import os
import subprocess
import sys
import time

import numpy as np

VARIANTS = [('defaults (libgomp passive)', {}),
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


def main():
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
