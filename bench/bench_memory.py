"""Memory stays flat: a long training loop and many re-binds do not grow the process.

Two loops, each measured after a warm-up (first-use allocations, NumPy's and the allocator's
pools settle there):

* a 10,000-step training loop of a small MLP with the plain executor (forward, backward and
  an SGD update through NDArray arithmetic);
* 1,000 re-binds: ``simple_bind`` of a small CNN, each followed by a training forward and
  backward (so each bind compiles its plan) and then dropped.

The resident set size (``/proc/self/statm``; ``ru_maxrss`` where there is no /proc) is read
after a ``gc.collect()`` at the end of the warm-up and at the end; the script prints the
figures and exits 1 if either loop grew by more than the limit (5 MB).

With ``--mxnet PYTHON`` (Linux: it reads ``/proc/self/status`` and resets the high-water
mark through ``/proc/self/clear_refs``) it also measures the peak memory of training, in a
fresh process per framework: the CIFAR ResNet of bench_cnn.py at batch 64, the peak
resident set over ``simple_bind`` and 3 training steps (forward, backward, SGD update)
above the resident set before the bind, for symgraph and for MXNet 1.9.1 (MKLDNN on, and
off) under the given interpreter, and prints the ratio (target: at most 1.0).

Usage::

    python bench/bench_memory.py [--steps 10000] [--binds 1000] [--limit-mb 5]
    python bench/bench_memory.py --mxnet /work/mxvenv/bin/python --steps 0 --binds 0
"""
import argparse
import gc
import os
import resource
import sys
import time

import numpy as np

mx = None           # symgraph (imported in main: an MXNet worker process runs without it)

MB = 1024 * 1024


def rss_bytes():
    """Current resident set size (peak size where /proc is not available)."""
    try:
        with open('/proc/self/statm') as f:
            return int(f.read().split()[1]) * os.sysconf('SC_PAGE_SIZE')
    except OSError:
        scale = 1 if sys.platform == 'darwin' else 1024
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale


def settled_rss():
    gc.collect()
    return rss_bytes()


def mlp():
    x = mx.sym.Variable('data')
    h = mx.sym.Activation(mx.sym.FullyConnected(x, num_hidden=64, name='fc1'),
                          act_type='relu', name='relu1')
    h = mx.sym.FullyConnected(h, num_hidden=10, name='fc2')
    return mx.sym.SoftmaxOutput(h, name='softmax')


def small_cnn():
    x = mx.sym.Variable('data')
    c = mx.sym.Convolution(x, kernel=(3, 3), num_filter=8, pad=(1, 1), name='conv1')
    c = mx.sym.BatchNorm(c, name='bn1')
    c = mx.sym.Activation(c, act_type='relu', name='relu1')
    c = mx.sym.Pooling(c, kernel=(2, 2), stride=(2, 2), pool_type='max', name='pool1')
    f = mx.sym.FullyConnected(mx.sym.Flatten(c), num_hidden=10, name='fc1')
    return mx.sym.SoftmaxOutput(f, name='softmax')


def training_loop(steps, warmup):
    """RSS after ``warmup`` steps and after ``steps``; the accuracy on a training batch."""
    exe = mlp().simple_bind(mx.cpu(), data=(32, 100))
    rng = np.random.RandomState(0)
    for name, arr in exe.arg_dict.items():
        if name.endswith('_weight'):
            arr[:] = rng.normal(0, 0.1, arr.shape)
    x = rng.normal(0, 1, (512, 100)).astype(np.float32)
    y = (x[:, :10].argmax(axis=1)).astype(np.float32)
    params = [n for n in exe.arg_dict if n.endswith(('_weight', '_bias'))]
    before = None
    for step in range(steps):
        if step == warmup:
            before = settled_rss()
        k = (step * 32) % 512
        exe.arg_dict['data'][:] = x[k:k + 32]
        exe.arg_dict['softmax_label'][:] = y[k:k + 32]
        exe.forward(is_train=True)
        exe.backward()
        for n in params:
            exe.arg_dict[n][:] = exe.arg_dict[n] - (0.1 / 32) * exe.grad_dict[n]
    after = settled_rss()
    exe.arg_dict['data'][:] = x[:32]
    exe.forward(is_train=False)
    acc = float((exe.outputs[0].asnumpy().argmax(axis=1) == y[:32]).mean())
    return before, after, acc


def rebinds(binds, warmup):
    """RSS after ``warmup`` binds and after ``binds`` more."""
    sym = small_cnn()
    rng = np.random.RandomState(1)
    x = rng.uniform(-1, 1, (8, 3, 16, 16)).astype(np.float32)
    before = None
    for k in range(warmup + binds):
        if k == warmup:
            before = settled_rss()
        exe = sym.simple_bind(mx.cpu(), data=x.shape)
        exe.arg_dict['data'][:] = x
        exe.forward(is_train=True)
        exe.backward()
        del exe
    return before, settled_rss()


def _status(key):
    with open('/proc/self/status') as f:
        for ln in f:
            if ln.startswith(key):
                return int(ln.split()[1]) * 1024
    raise KeyError(key)


def peak_worker(framework):
    """In a fresh process: peak RSS over simple_bind + 3 ResNet training steps at batch 64
    above the RSS before the bind (printed as JSON)."""
    import json
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import bench_cnn
    if framework == 'mxnet':
        import mxnet as fw
        sync = fw.nd.waitall
    else:
        fw, sync = mx, (lambda: None)
    bench_cnn.mx = fw
    net = bench_cnn.resnet()
    gc.collect()
    before = _status('VmRSS')
    with open('/proc/self/clear_refs', 'w') as f:
        f.write('5')            # the high-water mark restarts from the current RSS
    exe = bench_cnn.bind(net, (64, 3, 32, 32))
    step = bench_cnn.train_step_fn(exe, 64)
    for _ in range(3):
        step()
        sync()
    print(json.dumps({'peak_mb': (_status('VmHWM') - before) / MB,
                      'after_mb': (_status('VmRSS') - before) / MB}))


def peak_table(python):
    """Peak-memory runs of symgraph and MXNet (MKLDNN on and off), each in its own
    process; returns symgraph's ratio to MXNet's default."""
    import json
    import subprocess
    here = os.path.abspath(__file__)
    runs = [('symgraph', sys.executable, 'symgraph', {}),
            ('MXNet 1.9.1, MKLDNN on', python, 'mxnet', {'MXNET_MKLDNN_ENABLED': '1'}),
            ('MXNet 1.9.1, MKLDNN off', python, 'mxnet', {'MXNET_MKLDNN_ENABLED': '0'})]
    res = {}
    ncores = str(len(os.sched_getaffinity(0)))
    for name, py, fw, extra in runs:
        env = dict(os.environ, OMP_NUM_THREADS=ncores, MXNET_SUBGRAPH_VERBOSE='0',
                   MXNET_STORAGE_FALLBACK_LOG_VERBOSE='0', **extra)
        out = subprocess.run([py, here, '--peak-worker', fw], env=env, check=True,
                             stdout=subprocess.PIPE, text=True).stdout
        res[name] = json.loads(out.strip().splitlines()[-1])
    print('peak RSS over simple_bind + 3 training steps of the CIFAR ResNet, batch 64 '
          '(above the RSS before the bind):')
    ours = res['symgraph']['peak_mb']
    for name, r in res.items():
        print('  %-26s +%6.1f MiB (after the steps +%.1f MiB)  symgraph / this %.2f'
              % (name, r['peak_mb'], r['after_mb'], ours / r['peak_mb']))
    return ours / res['MXNet 1.9.1, MKLDNN on']['peak_mb']


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--steps', type=int, default=10000)
    ap.add_argument('--binds', type=int, default=1000)
    ap.add_argument('--limit-mb', type=float, default=5.0)
    ap.add_argument('--mxnet', help='python interpreter with mxnet 1.9.1: also compare the '
                    'peak memory of ResNet training')
    ap.add_argument('--peak-worker', choices=('symgraph', 'mxnet'), help=argparse.SUPPRESS)
    args = ap.parse_args()
    global mx
    if args.peak_worker != 'mxnet':
        import symgraph
        mx = symgraph
    if args.peak_worker:
        peak_worker(args.peak_worker)
        return 0
    failed = False
    if args.mxnet:
        peak_table(args.mxnet)
    if not args.steps and not args.binds:
        return 0

    t0 = time.perf_counter()
    warm = min(1000, args.steps // 5)
    before, after, acc = training_loop(args.steps, warm)
    grow = (after - before) / MB
    failed |= grow > args.limit_mb
    print('training loop: %d MLP steps (warm-up %d): RSS %.1f MB -> %.1f MB, growth %+.2f MB '
          '(%.1f s, accuracy %.2f)' % (args.steps, warm, before / MB, after / MB, grow,
                                       time.perf_counter() - t0, acc))

    t0 = time.perf_counter()
    warm = min(100, args.binds // 5)
    before, after = rebinds(args.binds, warm)
    grow = (after - before) / MB
    failed |= grow > args.limit_mb
    print('re-binds: %d simple_bind + forward/backward of a small CNN (warm-up %d): RSS '
          '%.1f MB -> %.1f MB, growth %+.2f MB (%.1f s)'
          % (args.binds, warm, before / MB, after / MB, grow, time.perf_counter() - t0))
    print('limit %.1f MB: %s' % (args.limit_mb, 'FAILED' if failed else 'ok'))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
