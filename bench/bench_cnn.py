"""The CPU workloads of issue 13 (training steps, inference, bind, executor overhead, box
NMS, peak memory), against MXNet 1.9.1 in the same run: one command gives the whole table,

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE \
        python bench/bench_cnn.py --mxnet <mxnet-venv>/bin/python

with the ratio to each reference, their geometric mean and the worst workload.

    python bench/bench_cnn.py                                   # symgraph only
    python bench/bench_cnn.py --mxnet /work/mxvenv/bin/python   # + MXNet, MKLDNN on and off
    python bench/bench_cnn.py --profile                         # + cProfile of symgraph
    python bench/bench_cnn.py --only lenet_train,resnet_train,resnet_infer
    python bench/bench_cnn.py --mxnet ... --passes 12 --rounds 1  # alternate round by round

symgraph runs twice: in this process with its CPU backend (oneDNN, when installed) and in a
worker process with ``SYMGRAPH_ONEDNN=0`` (the NumPy path); ``--no-onednn-off`` skips the
latter.

Workloads (float32, CPU; data and labels get no gradient, as Module binds them):

0. MLP 784-512-512-10 (relu) training step, batch 64.
1. LeNet training step, batch 64, 1x28x28: conv 5x5 20, tanh, max-pool 2, conv 5x5 50,
   tanh, max-pool 2, FC 500, tanh, FC 10, SoftmaxOutput; forward(is_train=True),
   backward and an SGD update of every parameter.
2. A small ResNet on 32x32x3: 3x3 conv 16 + BatchNorm + relu, three stages of two basic
   blocks (16, 32, 64 channels; stride 2 and a 1x1 projection shortcut at the start of
   stages 2 and 3), global average pooling, FC 10, SoftmaxOutput. A training step at
   batch 32 (as above) and inference (forward(is_train=False)) at batch 64, for symgraph
   with its inference passes (BatchNorm folding, conv + add + relu fused; the default) and
   without (``SYMGRAPH_INFERENCE_PASSES=none``, ``resnet_infer_nopasses``), whose ratio
   is printed; MXNet runs the same inference for both keys; and its ``simple_bind`` at
   batch 64 with gradients (shape and type inference, allocation of arguments and
   gradients, the plan; check value: the number of arrays bound).
3. ``contrib.box_nms`` on 2,000 and 10,000 boxes (batch 1, rows [id, score, x1, y1, x2,
   y2], overlap_thresh 0.5, per-class suppression with id_index=0): boxes cluster
   around objects, as a detector's raw output does (dense clusters); and on 2,000 and
   10,000 boxes spread uniformly (rows [score, x1, y1, x2, y2], corners uniform in the unit
   square, sides 0.02-0.2, no classes, overlap_thresh 0.5, valid_thresh 0, topk -1).
4. A chain of 400 tiny elementwise operators on (16, 16) (tanh, *1.5, +0.1, abs):
   microseconds per node of a forward, the executor's overhead.
5. Peak memory: how far the resident set's peak grows over 3 ResNet training steps at
   batch 64 after bind (MiB; a fresh process per framework, ``/proc/self/clear_refs``).

The workload code below is written once against the MXNet 1.x API: with ``--mxnet`` the
same file runs again under that interpreter (``--worker``, ``import mxnet as mx``), so
graphs, shapes, parameters and data (NumPy ``RandomState``) are identical. Each
workload also prints a check value (a gradient sum, the number of boxes kept) that must
agree between the frameworks. Times are the best of several rounds after a warm-up (the
frameworks take turns workload by workload in each pass; with ``--rounds 1`` and many passes,
round by round: on a shared machine whose slow phases last seconds, a pass of several rounds
could fall wholly on one framework);
MXNet runs with OMP_NUM_THREADS set to the number of cores, once with its default
oneDNN (MKLDNN) kernels and once with MXNET_MKLDNN_ENABLED=0.
"""
import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

mx = None           # symgraph, or mxnet in a --worker process
#: the cores this process may run on (``taskset`` narrows them): every framework's thread count
CORES = len(os.sched_getaffinity(0))
LR = 0.05


def best_of(fn, repeat, rounds, sync):
    """Seconds per call: best round of ``repeat`` calls, after one warm-up call."""
    fn()
    sync()
    best = float('inf')
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(repeat):
            fn()
        sync()
        best = min(best, (time.perf_counter() - t) / repeat)
    return best


# ------------------------------------------------------------------------- networks
def lenet():
    data = mx.sym.var('data')
    h = mx.sym.Convolution(data, kernel=(5, 5), num_filter=20, name='conv1')
    h = mx.sym.Activation(h, act_type='tanh', name='tanh1')
    h = mx.sym.Pooling(h, pool_type='max', kernel=(2, 2), stride=(2, 2), name='pool1')
    h = mx.sym.Convolution(h, kernel=(5, 5), num_filter=50, name='conv2')
    h = mx.sym.Activation(h, act_type='tanh', name='tanh2')
    h = mx.sym.Pooling(h, pool_type='max', kernel=(2, 2), stride=(2, 2), name='pool2')
    h = mx.sym.Flatten(h, name='flatten')
    h = mx.sym.FullyConnected(h, num_hidden=500, name='fc1')
    h = mx.sym.Activation(h, act_type='tanh', name='tanh3')
    h = mx.sym.FullyConnected(h, num_hidden=10, name='fc2')
    return mx.sym.SoftmaxOutput(h, name='softmax')


def _conv_bn(x, width, kernel, stride, name, relu=True):
    pad = (kernel // 2, kernel // 2)
    x = mx.sym.Convolution(x, kernel=(kernel, kernel), stride=(stride, stride), pad=pad,
                           num_filter=width, no_bias=True, name=name + '_conv')
    x = mx.sym.BatchNorm(x, fix_gamma=False, eps=2e-5, momentum=0.9, name=name + '_bn')
    return mx.sym.Activation(x, act_type='relu', name=name + '_relu') if relu else x


def resnet():
    x = _conv_bn(mx.sym.var('data'), 16, 3, 1, 'stem')
    width_in = 16
    for stage, width in enumerate((16, 32, 64)):
        for block in range(2):
            name = 'stage%d_unit%d' % (stage + 1, block + 1)
            stride = 2 if stage > 0 and block == 0 else 1
            h = _conv_bn(x, width, 3, stride, name + '_a')
            h = _conv_bn(h, width, 3, 1, name + '_b', relu=False)
            if stride != 1 or width_in != width:
                x = _conv_bn(x, width, 1, stride, name + '_proj', relu=False)
            x = mx.sym.Activation(h + x, act_type='relu', name=name + '_relu')
            width_in = width
    x = mx.sym.Pooling(x, global_pool=True, pool_type='avg', kernel=(1, 1), name='pool')
    x = mx.sym.FullyConnected(mx.sym.Flatten(x), num_hidden=10, name='fc')
    return mx.sym.SoftmaxOutput(x, name='softmax')


def mlp():
    """MLP 784-512-512-10 with relu."""
    h = mx.sym.var('data')
    for i, width in enumerate((512, 512)):
        h = mx.sym.FullyConnected(h, num_hidden=width, name='fc%d' % (i + 1))
        h = mx.sym.Activation(h, act_type='relu', name='relu%d' % (i + 1))
    h = mx.sym.FullyConnected(h, num_hidden=10, name='fc3')
    return mx.sym.SoftmaxOutput(h, name='softmax')


#: length of the chain of tiny elementwise operators (executor overhead per node)
CHAIN = 400


def chain():
    """CHAIN elementwise operators on a (16, 16) array: tanh, *1.5, +0.1, abs, ..."""
    y = mx.sym.var('data')
    for i in range(CHAIN):
        k = i % 4
        y = (mx.sym.tanh(y) if k == 0 else y * 1.5 if k == 1 else y + 0.1 if k == 2
             else mx.sym.abs(y))
    return y


def bind(net, data_shape, grad_req='write'):
    """Bind with deterministic parameters (He-uniform weights, BN statistics 0 and 1); the
    data and the labels get no gradient, as Module binds them."""
    rng = np.random.RandomState(0)
    if grad_req == 'write':
        grad_req = {k: 'null' if k in ('data', 'softmax_label') else 'write'
                    for k in net.list_arguments()}
    exe = net.simple_bind(mx.cpu(), grad_req=grad_req, data=data_shape)
    for name in net.list_arguments():
        a = exe.arg_dict[name]
        if name == 'data':
            a[:] = rng.uniform(-1, 1, a.shape)
        elif name == 'softmax_label':
            a[:] = rng.randint(0, 10, a.shape)
        elif name.endswith('gamma'):
            a[:] = 1.0
        elif name.endswith('weight'):
            bound = np.sqrt(6.0 / int(np.prod(a.shape[1:])))
            a[:] = rng.uniform(-bound, bound, a.shape)
        else:
            a[:] = 0.0
    for name, a in exe.aux_dict.items():
        a[:] = 1.0 if name.endswith('var') else 0.0
    return exe


def train_step_fn(exe, batch):
    params = [(exe.arg_dict[k], g) for k, g in exe.grad_dict.items()
              if k not in ('data', 'softmax_label')]
    scale = LR / batch      # SoftmaxOutput's gradient is summed over the batch

    def step():
        exe.forward(is_train=True)
        exe.backward()
        for w, g in params:
            w -= scale * g
    return step


def grad_check(exe, name):
    """One forward/backward from the initial parameters: sum |d loss / d name|."""
    exe.forward(is_train=True)
    exe.backward()
    return float(np.abs(exe.grad_dict[name].asnumpy()).sum())


# ------------------------------------------------------------------------- boxes
def make_boxes(n, seed=0):
    """(1, n, 6) rows [id, score, x1, y1, x2, y2]: n boxes jittered around n / 20 objects
    of 20 classes in a 1000x1000 image, scores uniform (a detector's raw output)."""
    rng = np.random.RandomState(seed)
    n_obj = max(1, n // 20)
    centre = rng.uniform(0, 1000, (n_obj, 2))
    size = rng.uniform(20, 200, (n_obj, 2))
    cls = rng.randint(0, 20, n_obj)
    obj = rng.randint(0, n_obj, n)
    c = centre[obj] + rng.normal(0, 0.1, (n, 2)) * size[obj]
    s = size[obj] * rng.uniform(0.8, 1.25, (n, 2))
    rows = np.stack([cls[obj], rng.uniform(0, 1, n), c[:, 0] - s[:, 0] / 2,
                     c[:, 1] - s[:, 1] / 2, c[:, 0] + s[:, 0] / 2, c[:, 1] + s[:, 1] / 2], 1)
    return rows.astype(np.float32)[None]


def make_uniform_boxes(n, seed=0):
    """(1, n, 5) rows [score, x1, y1, x2, y2]: scores uniform, corners uniform in the unit
    square, sides uniform in 0.02-0.2 (the workload of issue 13)."""
    rng = np.random.RandomState(seed)
    lo = rng.uniform(0, 1, (n, 2))
    side = rng.uniform(0.02, 0.2, (n, 2))
    rows = np.concatenate([rng.uniform(0, 1, (n, 1)), lo, lo + side], 1)
    return rows.astype(np.float32)[None]


def nms_uniform_exe(n):
    net = mx.sym.contrib.box_nms(mx.sym.var('data'), overlap_thresh=0.5, valid_thresh=0,
                                 topk=-1, coord_start=1, score_index=0, id_index=-1,
                                 name='nms')
    exe = net.simple_bind(mx.cpu(), grad_req='null', data=(1, n, 5))
    exe.arg_dict['data'][:] = make_uniform_boxes(n)
    return exe


def peak_rss_probe():
    """MiB by which the peak resident set grows over 3 ResNet training steps at batch 64,
    from just after the bind (so the first step's one-time costs count: primitives, code
    pages, the plan's buffers), then ``waitall`` (run in a fresh process:
    ``--memory-probe``)."""
    import gc
    exe = bind(resnet(), (64, 3, 32, 32))
    step = train_step_fn(exe, 64)
    gc.collect()

    def status(field):
        with open('/proc/self/status') as f:
            return next(int(ln.split()[1]) for ln in f if ln.startswith(field))
    base = status('VmRSS:')
    with open('/proc/self/clear_refs', 'w') as f:    # resets VmHWM, the peak, to now
        f.write('5')
    for _ in range(3):
        step()
    sync()
    return (status('VmHWM:') - base) / 1024.0


def sync():
    """Wait for the framework's pending work (MXNet's engine is asynchronous)."""
    if hasattr(mx.nd, 'waitall'):
        mx.nd.waitall()


def nms_exe(n):
    data = mx.sym.var('data')
    net = mx.sym.contrib.box_nms(data, overlap_thresh=0.5, coord_start=2, score_index=1,
                                 id_index=0, force_suppress=False, name='nms')
    exe = net.simple_bind(mx.cpu(), grad_req='null', data=(1, n, 6))
    exe.arg_dict['data'][:] = make_boxes(n)
    return exe


# ------------------------------------------------------------------------- runs
def workloads(sync):
    """name -> (description, zero-argument setup returning (fn, repeat, rounds, check))."""
    def lenet_train():
        exe = bind(lenet(), (64, 1, 28, 28))
        check = grad_check(exe, 'conv1_weight')
        return train_step_fn(exe, 64), 10, 3, check

    def resnet_train():
        exe = bind(resnet(), (32, 3, 32, 32))
        check = grad_check(exe, 'stem_conv_weight')
        return train_step_fn(exe, 32), 4, 3, check

    def resnet_infer(passes=None):
        def setup():
            # symgraph reads SYMGRAPH_INFERENCE_PASSES at bind (MXNet ignores it)
            old = os.environ.get('SYMGRAPH_INFERENCE_PASSES')
            if passes is not None:
                os.environ['SYMGRAPH_INFERENCE_PASSES'] = passes
            try:
                exe = bind(resnet(), (64, 3, 32, 32), grad_req='null')
            finally:
                if passes is not None and old is None:
                    del os.environ['SYMGRAPH_INFERENCE_PASSES']
                elif passes is not None:
                    os.environ['SYMGRAPH_INFERENCE_PASSES'] = old
            out = exe.forward(is_train=False)[0].asnumpy()
            check = float((out * np.arange(10)).sum())      # expected class, summed
            return (lambda: exe.forward(is_train=False)), 10, 3, check
        return setup

    def resnet_bind():
        net = resnet()
        exe = net.simple_bind(mx.cpu(), data=(64, 3, 32, 32))
        check = len(exe.arg_dict) + len(exe.aux_dict)

        def fn():
            net.simple_bind(mx.cpu(), data=(64, 3, 32, 32))
        return fn, 3, 3, check

    def nms(n):
        def setup():
            exe = nms_exe(n)
            out = exe.forward()[0].asnumpy()
            return (lambda: exe.forward()), (20 if n <= 2000 else 5), 3, \
                int((out[0, :, 0] != -1).sum())
        return setup

    def mlp_train():
        exe = bind(mlp(), (64, 784))
        check = grad_check(exe, 'fc1_weight')
        return train_step_fn(exe, 64), 20, 3, check

    def chain_fwd():
        exe = chain().simple_bind(mx.cpu(), grad_req='null', data=(16, 16))
        exe.arg_dict['data'][:] = np.random.RandomState(0).uniform(-1, 1, (16, 16))
        check = float(exe.forward()[0].asnumpy().sum())
        # microseconds per node, reported in the 'ms' column's place
        return (lambda: exe.forward()[0].wait_to_read()), 50, 5, check, 1e3 / CHAIN, 'us/node'

    def nms_uniform(n):
        def setup():
            exe = nms_uniform_exe(n)
            out = exe.forward()[0].asnumpy()
            return (lambda: exe.forward()), (10 if n <= 2000 else 3), 3, \
                int((out[0, :, 0] != -1).sum())
        return setup

    return [('mlp_train', 'MLP 784-512-512-10 training step, batch 64', mlp_train),
            ('lenet_train', 'LeNet training step, batch 64', lenet_train),
            ('resnet_train', 'ResNet-14 training step, batch 32', resnet_train),
            ('resnet_infer', 'ResNet-14 inference, batch 64', resnet_infer()),
            ('resnet_infer_nopasses', 'ResNet-14 inference, passes off', resnet_infer('none')),
            ('resnet_bind', 'ResNet-14 simple_bind, batch 64', resnet_bind),
            ('chain', 'chain of %d tiny elementwise nodes' % CHAIN, chain_fwd),
            ('nms_uniform_2000', 'box_nms, 2,000 uniform boxes', nms_uniform(2000)),
            ('nms_uniform_10000', 'box_nms, 10,000 uniform boxes', nms_uniform(10000)),
            ('nms_2000', 'box_nms, 2,000 clustered boxes', nms(2000)),
            ('nms_10000', 'box_nms, 10,000 clustered boxes', nms(10000)),
            ('resnet_memory', 'ResNet-14 peak RSS growth, 3 steps @64', MEMORY)]


#: the memory workload's setup: measured in a fresh process of the same interpreter
MEMORY = 'memory'


class Runner:
    """Sets each workload up once (on first use) and times it on demand."""

    def __init__(self, sync):
        self.sync = sync
        self.setups = {key: setup for key, _, setup in workloads(sync)}
        self.ready = {}

    def measure(self, key, rounds=None):
        if self.setups[key] is MEMORY:
            # a fresh process of this interpreter, with this process's environment
            out = subprocess.run([sys.executable, os.path.abspath(__file__), '--memory-probe'],
                                 check=True, stdout=subprocess.PIPE, text=True).stdout
            return {'ms': float(out.split()[-1]), 'check': 0, 'unit': 'MiB'}
        if key not in self.ready:
            self.ready[key] = self.setups[key]()
        fn, repeat, default_rounds, check, *scale_unit = self.ready[key]
        rounds = rounds or default_rounds
        scale, unit = scale_unit or (1.0, 'ms')
        return {'ms': scale * 1e3 * best_of(fn, repeat, rounds, self.sync), 'check': check,
                'unit': unit}


class Worker:
    """This script under another interpreter (MXNet), or symgraph with oneDNN off
    (``python=None``), timing workloads on request."""

    def __init__(self, python, mkldnn):
        env = dict(os.environ, OMP_NUM_THREADS=str(CORES),
                   MXNET_MKLDNN_ENABLED='1' if mkldnn else '0',
                   MXNET_STORAGE_FALLBACK_LOG_VERBOSE='0', MXNET_SUBGRAPH_VERBOSE='0')
        flag = '--worker'
        env['BENCH_FRAMEWORK'] = 'mxnet'
        if python is None:
            env['BENCH_FRAMEWORK'] = 'symgraph'
            python, flag = sys.executable, '--worker-symgraph'
            env['SYMGRAPH_ONEDNN'] = '0'
        self.proc = subprocess.Popen([python, os.path.abspath(__file__), flag],
                                     env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True)

    def measure(self, key, rounds=None):
        self.proc.stdin.write('%s %d\n' % (key, rounds or 0))
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit('the MXNet worker died (see its messages above)')
        return json.loads(line)

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def passes_ratio(runner, rounds=8, calls=3):
    """ResNet inference with and without the inference passes, alternating in blocks of
    ``calls`` calls (in this process, oneDNN as loaded): a change in the machine's load
    hits both alike, which the best-of rounds above cannot promise on a busy machine."""
    with_fn, without_fn = (runner.ready[k][0] for k in ('resnet_infer',
                                                         'resnet_infer_nopasses'))
    times = {True: [], False: []}
    for _ in range(rounds):
        for on, fn in ((True, with_fn), (False, without_fn)):
            fn()
            t = time.perf_counter()
            for _ in range(calls):
                fn()
            times[on].append((time.perf_counter() - t) / calls)
    ratios = sorted(a / b for a, b in zip(times[True], times[False]))
    return ('inference passes, alternating blocks of %d calls x %d: best %.2f ms with, %.2f ms '
            'without; median ratio %.2f (range %.2f-%.2f)'
            % (calls, rounds, 1e3 * min(times[True]), 1e3 * min(times[False]),
               ratios[len(ratios) // 2], ratios[0], ratios[-1]))


def serve(sync):
    """Worker loop: read workload names from stdin, answer one JSON line each."""
    runner = Runner(sync)
    for line in sys.stdin:
        key, rounds = line.split()
        print(json.dumps(runner.measure(key, int(rounds) or None)), flush=True)


def profile(top=14):
    """cProfile each symgraph workload: where the time goes, by function."""
    import cProfile
    import pstats
    for key, desc, setup in workloads(lambda: None):
        if setup is MEMORY:
            continue
        fn, repeat = setup()[:2]
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(repeat):
            fn()
        prof.disable()
        st = pstats.Stats(prof)
        total = st.total_tt
        print('\n=== %s: %.1f ms per call under cProfile' % (desc, 1e3 * total / repeat))
        rows = sorted(st.stats.items(), key=lambda kv: -kv[1][3])
        print('  cumulative, symgraph functions (nested: fractions overlap)')
        shown = 0
        for (path, line, func), (_, _, tt, ct, _) in rows:
            if shown >= top or ('/ops/' not in path and '/symgraph/' not in path
                                and 'symgraph-plan' not in path):
                continue
            print('  %5.1f%%  %-30s %s:%d' % (100 * ct / total, func,
                                              os.path.basename(path), line))
            shown += 1
        print('  own time, any function')
        for (path, line, func), (_, _, tt, ct, _) in sorted(st.stats.items(),
                                                            key=lambda kv: -kv[1][2])[:top]:
            print('  %5.1f%%  %-30s %s:%d' % (100 * tt / total, func,
                                              os.path.basename(path) or path, line))


def machine():
    """The CPU's model name and NumPy's float32 GEMM rate on this machine."""
    model = '?'
    try:
        with open('/proc/cpuinfo') as f:
            model = next((ln.split(':', 1)[1].strip() for ln in f
                          if ln.startswith('model name')), '?')
    except OSError:
        pass
    a = np.random.RandomState(0).rand(2048, 2048).astype(np.float32)
    a @ a
    t = min(best_of(lambda: a @ a, 3, 3, lambda: None) for _ in range(2))
    return 'CPU %s; NumPy sgemm 2048^3: %.0f GFLOP/s' % (model, 2 * 2048 ** 3 / t / 1e9)


def main(argv=None):
    global mx
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--mxnet', help='python interpreter with mxnet 1.9.1 for a reference')
    ap.add_argument('--no-mkldnn-off', action='store_true',
                    help='with --mxnet, skip the run with MXNET_MKLDNN_ENABLED=0')
    ap.add_argument('--passes', type=int, default=2,
                    help='interleaved passes over the frameworks; the best is kept')
    ap.add_argument('--rounds', type=int, default=None,
                    help='timed rounds per workload in each pass (default: the '
                         "workload's own, 3-5); --passes 12 --rounds 1 alternates the "
                         'frameworks round by round, so that a slow phase of the machine '
                         'that lasts seconds does not fall on one framework only')
    ap.add_argument('--profile', action='store_true', help='cProfile the symgraph side')
    ap.add_argument('--no-onednn-off', action='store_true',
                    help='skip the symgraph run with its oneDNN backend off')
    ap.add_argument('--only', help='comma-separated workload keys (default: all)')
    ap.add_argument('--worker', action='store_true', help=argparse.SUPPRESS)
    ap.add_argument('--worker-symgraph', action='store_true', help=argparse.SUPPRESS)
    ap.add_argument('--memory-probe', action='store_true', help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker or (args.memory_probe and os.environ.get('BENCH_FRAMEWORK') == 'mxnet'):
        import mxnet        # under the MXNet interpreter: the same workloads
        mx = mxnet
        if args.memory_probe:
            print('%.3f' % peak_rss_probe())
            return
        serve(mx.nd.waitall)
        return
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
    import symgraph
    mx = symgraph
    if args.memory_probe:
        print('%.3f' % peak_rss_probe())
        return
    if args.worker_symgraph:
        serve(lambda: None)
        return
    from symgraph.opdef import cpu_backend
    be = cpu_backend()
    print(machine())
    print('%d cores, load average %.1f; ms per call, best round of %d interleaved passes%s'
          % (CORES, os.getloadavg()[0], args.passes,
             ' of %d round(s) each' % args.rounds if args.rounds else ''))
    print('symgraph CPU backend: %s' % ('oneDNN %s (%s)' % ('.'.join(map(str, be.version)),
                                                           be.path) if be else 'none (NumPy)'))
    runners = [('symgraph', Runner(lambda: None))]
    if be is not None and not args.no_onednn_off:
        runners.append(('symgraph, oneDNN off', Worker(None, False)))
    if args.mxnet:
        runners.append(('MXNet 1.9.1, MKLDNN on (default)', Worker(args.mxnet, True)))
        if not args.no_mkldnn_off:
            runners.append(('MXNet 1.9.1, MKLDNN off', Worker(args.mxnet, False)))
    table = workloads(None)
    if args.only:
        keys = args.only.split(',')
        unknown = set(keys) - {k for k, _, _ in table}
        if unknown:
            raise SystemExit('unknown workloads %s; known: %s'
                             % (sorted(unknown), ', '.join(k for k, _, _ in table)))
        table = [t for t in table if t[0] in keys]
    res = {}
    per_pass = collections.defaultdict(list)    # (name, key) -> time of each pass
    # framework by framework within each workload, pass after pass: a change in the
    # machine's load then hits every framework alike
    for _ in range(args.passes):
        for key, _, _ in table:
            for name, runner in runners:
                r = runner.measure(key, args.rounds)
                per_pass[(name, key)].append(r['ms'])
                best = res.setdefault((name, key), r)
                if r['ms'] < best['ms']:
                    res[(name, key)] = r
    for _, runner in runners[1:]:
        runner.close()
    load = os.getloadavg()[0]
    print('load average at the end %.1f%s' % (load, ' (above the core count: other work '
                                              'shares the CPU, times are noisy)'
                                              if load > CORES else ''))
    head = '%-34s %10s' % ('workload', 'symgraph')
    for name, _ in runners[1:]:
        head += ' | %-29s' % name
    print(head)
    ratios = {name: {} for name, _ in runners[1:]}
    for key, desc, _ in table:
        ours = res[('symgraph', key)]
        unit = ours.get('unit', 'ms')
        line = '%-44s %8.2f %-7s' % (desc, ours['ms'], unit)
        for name, _ in runners[1:]:
            ref = res[(name, key)]['ms']
            ratios[name][key] = ours['ms'] / ref if ref > 0 else float('nan')
            line += ' | %8.2f %-7s ratio %5.2fx' % (ref, unit, ratios[name][key])
        print(line)
    if len(runners) > 1 and args.passes > 1:
        # each pass measures the frameworks one right after the other: the median of
        # those paired ratios holds where a slow phase falls on one side's best rounds
        print('median of the per-pass ratios (each pass measures the frameworks back to '
              'back):')
        for key, desc, _ in table:
            ours = per_pass[('symgraph', key)]
            line = '  %-42s' % desc
            for name, _ in runners[1:]:
                pr = sorted(a / b for a, b in zip(ours, per_pass[(name, key)]) if b > 0)
                if pr:
                    line += ' | %s %5.2fx (%4.2f-%4.2f)' % (
                        name, statistics.median(pr), pr[0], pr[-1])
            print(line)
    if len(runners) > 1:
        print('ratio = symgraph / other (time, or peak memory growth; below 1: symgraph '
              'is better)')
        for name, _ in runners[1:]:
            times = [r for k, r in ratios[name].items()
                     if k not in ('resnet_memory', 'resnet_infer_nopasses') and r == r
                     and r > 0]
            if times:
                geo = float(np.exp(np.mean(np.log(times))))
                worst = max(((k, r) for k, r in ratios[name].items()
                             if k != 'resnet_infer_nopasses'), key=lambda kv: kv[1])
                print('against %s: geomean of time ratios %.2f over %d workloads; worst %s '
                      '%.2fx' % (name, geo, len(times), worst[0], worst[1]))
    keys = {k for k, _, _ in table}
    if {'resnet_infer', 'resnet_infer_nopasses'} <= keys:
        for name, _ in runners:
            if name.startswith('symgraph'):
                on, off = (res[(name, k)]['ms'] for k in ('resnet_infer',
                                                          'resnet_infer_nopasses'))
                print('inference passes (%s): ResNet-14 inference %.2f ms with, %.2f ms '
                      'without, ratio %.2f' % (name, on, off, on / off))
        print(passes_ratio(runners[0][1]))
    print('check values (gradient sums, boxes kept), which must agree:')
    for key, _, _ in table:
        print('  %-14s' % key + ''.join('  %s %.6g' % (name.split(',')[-1].strip(),
                                                       res[(name, key)]['check'])
                                        for name, _ in runners))
    if args.profile:
        profile()


if __name__ == '__main__':
    main()
