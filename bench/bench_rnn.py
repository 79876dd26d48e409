"""LSTM training step with the fused ``RNN`` operator, against MXNet 1.9.1 in the same run.

    python bench/bench_rnn.py                                   # symgraph only
    python bench/bench_rnn.py --mxnet /work/mxvenv/bin/python   # + MXNet (oneDNN kernels)
    python bench/bench_rnn.py --profile                         # + cProfile of symgraph
    python bench/bench_rnn.py --numpy-rnn                       # + symgraph's NumPy RNN
    python bench/bench_rnn.py --projection 128                  # + LSTMP workloads
    python bench/bench_rnn.py --dtype bfloat16                  # symgraph in bfloat16

Workload (float32, CPU): ``mx.sym.RNN(mode='lstm', num_layers=2, state_size=256)`` over
data (T=35, N=32, C=256) with ``state_outputs``, bound with ``simple_bind`` (grad_req
'write' for data, parameters and states); one step is ``forward(is_train=True)`` and
``backward`` with fixed head gradients for the output and both states.  A second
workload runs the same layer bidirectionally.

The workload code is written once against the MXNet 1.x API: with ``--mxnet`` the same
file runs again under that interpreter (``--worker``, ``import mxnet as mx``), so shapes,
parameters, data and head gradients (NumPy ``RandomState``) are identical; each workload
prints a check value (sum |d parameters|) that must agree between the frameworks.
Times are the best of several rounds after a warm-up; both frameworks get the same
number of threads (``--threads``, default 2: OMP_NUM_THREADS for MXNet and for
symgraph's oneDNN, whose RNN primitives run the layer, OpenBLAS's threads for NumPy).
MXNet runs with its default oneDNN (MKLDNN) RNN kernels only: with MXNET_MKLDNN_ENABLED=0
its CPU ``_backward_RNN`` fails in 1.9.1 (``Check failed: in_data.size() == num_inputs
(4 vs. 3)`` for an LSTM), so there is no other CPU path to compare with.

``--projection P`` adds the LSTM with ``projection_size=P`` (LSTMP): a training step
(symgraph only: MXNet 1.9.1's CPU build has no LSTMP training) and an inference forward
(MXNet: its native CPU kernel; its oneDNN path takes no projection). ``--dtype bfloat16``
runs symgraph's workloads in bfloat16 (data, parameters, states, head gradients: oneDNN's
bf16 RNN with AVX-512 BF16); MXNet 1.9.1 has no bfloat16 RNN (a bf16 network runs its RNN
in float32, AMP's FP32_FUNCS), so its column stays the float32 step, and the check values
then agree within bfloat16 rounding only. A second symgraph column then times the other
route of ``routing.RNN_BF16`` (oneDNN's bf16 RNN primitives, or float32 ones on widened
copies, rounded: the default).
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

mx = None           # symgraph, or mxnet in a --worker process
T, N, C, H, LAYERS = 35, 32, 256, 256, 2
OPTS = {'projection': None, 'dtype': 'float32'}     # set by main() / the worker's argv


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


def lstm_exe(bidirectional, projection=None, train=True):
    """A bound 2-layer LSTM (LSTMP with ``projection``) with deterministic inputs and
    parameters in ``OPTS['dtype']``, and its head grads."""
    d = 2 if bidirectional else 1
    kw = {} if projection is None else {'projection_size': projection}
    P = H if projection is None else projection
    net = mx.sym.RNN(mx.sym.var('data'), mx.sym.var('parameters'), mx.sym.var('state'),
                     mx.sym.var('state_cell'), mode='lstm', state_size=H, num_layers=LAYERS,
                     bidirectional=bidirectional, state_outputs=True, name='lstm', **kw)
    dtype = OPTS['dtype']
    exe = net.simple_bind(mx.cpu(), grad_req='write' if train else 'null', data=(T, N, C),
                          type_dict={k: dtype for k in net.list_arguments()},
                          state=(LAYERS * d, N, P), state_cell=(LAYERS * d, N, H))
    rng = np.random.RandomState(0)
    bound = 1.0 / np.sqrt(H)
    for name in net.list_arguments():
        a = exe.arg_dict[name]
        a[:] = rng.uniform(-bound if name == 'parameters' else -1,
                           bound if name == 'parameters' else 1, a.shape)
    heads = [mx.nd.array(rng.uniform(-1, 1, o.shape), dtype=dtype) for o in exe.outputs]
    return exe, heads


def _abs_sum(a):
    return float(np.abs(a.asnumpy().astype(np.float64)).sum())


def workloads():
    """name -> (description, zero-argument setup returning (fn, repeat, rounds, check))."""
    def train(bidirectional, projection=None):
        def setup():
            exe, heads = lstm_exe(bidirectional, projection)
            exe.forward(is_train=True)
            exe.backward(heads)
            check = _abs_sum(exe.grad_dict['parameters'])

            def step():
                exe.forward(is_train=True)
                exe.backward(heads)
            return step, 5, 3, check
        return setup

    def infer(bidirectional, projection):
        def setup():
            exe, _ = lstm_exe(bidirectional, projection, train=False)
            check = _abs_sum(exe.forward(is_train=False)[0])

            def step():
                exe.forward(is_train=False)
            return step, 10, 3, check
        return setup

    tag = '' if OPTS['dtype'] == 'float32' else ' ' + OPTS['dtype']
    out = [('lstm_train', 'LSTM 2x256, T=35, N=32: fwd+bwd' + tag, train(False)),
           ('bilstm_train', 'BiLSTM 2x256, T=35, N=32: fwd+bwd' + tag, train(True))]
    P = OPTS['projection']
    if P:
        out += [('lstmp_train', 'LSTMP 2x256/%d: fwd+bwd%s' % (P, tag), train(False, P)),
                ('lstmp_infer', 'LSTMP 2x256/%d: inference%s' % (P, tag), infer(False, P))]
    return out


class Runner:
    """Sets each workload up once (on first use) and times it on demand."""

    def __init__(self, sync):
        self.sync = sync
        self.setups = {key: setup for key, _, setup in workloads()}
        self.ready = {}

    def measure(self, key):
        if key not in self.ready:
            try:
                self.ready[key] = self.setups[key]()
            except Exception as e:      # (MXNet: no LSTMP training on its CPU build)
                if mx.__name__ != 'mxnet':
                    raise
                self.ready[key] = str(e).strip().splitlines()[-1][:80]
        if isinstance(self.ready[key], str):
            return {'ms': None, 'check': None, 'error': self.ready[key]}
        fn, repeat, rounds, check = self.ready[key]
        return {'ms': 1e3 * best_of(fn, repeat, rounds, self.sync), 'check': check}


class NumpyRnnRunner(Runner):
    """A :class:`Runner` whose RNN runs on the NumPy path (oneDNN's RNN primitives routed
    off while it measures: ``symgraph.backend.onednn.routing.RNN_MODES``)."""

    def measure(self, key):
        from symgraph.backend.onednn import routing
        modes = routing.RNN_MODES
        routing.RNN_MODES = ()
        try:
            return super().measure(key)
        finally:
            routing.RNN_MODES = modes


class Bf16RouteRunner(Runner):
    """A :class:`Runner` with ``routing.RNN_BF16`` (oneDNN's bf16 RNN primitives, or
    float32 ones on widened copies and rounded) the other way round while it measures."""

    def measure(self, key):
        from symgraph.backend.onednn import routing
        routing.RNN_BF16 = not routing.RNN_BF16
        try:
            return super().measure(key)
        finally:
            routing.RNN_BF16 = not routing.RNN_BF16


class Worker:
    """This script under another interpreter (MXNet), timing workloads on request."""

    def __init__(self, python, mkldnn, threads):
        env = dict(os.environ, OMP_NUM_THREADS=str(threads),
                   MXNET_MKLDNN_ENABLED='1' if mkldnn else '0',
                   MXNET_STORAGE_FALLBACK_LOG_VERBOSE='0', MXNET_SUBGRAPH_VERBOSE='0')
        extra = [] if not OPTS['projection'] else ['--projection', str(OPTS['projection'])]
        # (always float32: MXNet 1.9.1 has no bfloat16 RNN)
        self.proc = subprocess.Popen([python, os.path.abspath(__file__), '--worker'] + extra,
                                     env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True)

    def measure(self, key):
        self.proc.stdin.write(key + '\n')
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit('the MXNet worker died (see its messages above)')
        return json.loads(line)

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def serve(sync):
    """Worker loop: read workload names from stdin, answer one JSON line each."""
    runner = Runner(sync)
    for line in sys.stdin:
        print(json.dumps(runner.measure(line.strip())), flush=True)


def profile(top=16):
    """cProfile each symgraph workload: where the time goes, by function."""
    import cProfile
    import pstats
    for _, desc, setup in workloads():
        fn, repeat, _, _ = setup()
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(repeat):
            fn()
        prof.disable()
        st = pstats.Stats(prof)
        total = st.total_tt
        print('\n=== %s: %.1f ms per call under cProfile' % (desc, 1e3 * total / repeat))
        print('  own time, any function')
        for (path, line, func), (_, ncalls, tt, _, _) in sorted(
                st.stats.items(), key=lambda kv: -kv[1][2])[:top]:
            print('  %5.1f%%  %7d calls  %-28s %s:%d'
                  % (100 * tt / total, ncalls // repeat, func,
                     os.path.basename(path) or path, line))


def main(argv=None):
    global mx
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--mxnet', help='python interpreter with mxnet 1.9.1 for a reference')
    ap.add_argument('--threads', type=int, default=2,
                    help='threads for each framework (OpenBLAS / OpenMP)')
    ap.add_argument('--passes', type=int, default=2,
                    help='interleaved passes over the frameworks; the best is kept')
    ap.add_argument('--profile', action='store_true', help='cProfile the symgraph side')
    ap.add_argument('--numpy-rnn', action='store_true',
                    help="also time symgraph's NumPy RNN path (oneDNN's RNN primitives off), "
                    'interleaved with the rest')
    ap.add_argument('--projection', type=int, default=None, metavar='P',
                    help='add LSTMP workloads (projection_size=P): training (symgraph only) '
                    'and inference')
    ap.add_argument('--dtype', default='float32', choices=('float32', 'bfloat16'),
                    help="symgraph's data and parameter type (MXNet's stays float32)")
    ap.add_argument('--worker', action='store_true', help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    OPTS['projection'] = args.projection
    if not args.worker:
        OPTS['dtype'] = args.dtype
    if args.worker:         # under the MXNet interpreter: the same workloads
        import mxnet
        mx = mxnet
        serve(mx.nd.waitall)
        return
    # NumPy's OpenBLAS reads its thread count when it loads (this module imported NumPy
    # already): start again with the count in the environment
    # (and oneDNN's OpenMP threads theirs: the RNN runs on oneDNN's RNN primitives)
    if os.environ.get('OPENBLAS_NUM_THREADS') != str(args.threads) \
            or os.environ.get('OMP_NUM_THREADS') != str(args.threads):
        os.environ['OPENBLAS_NUM_THREADS'] = str(args.threads)
        os.environ['OMP_NUM_THREADS'] = str(args.threads)
        argv = sys.argv[1:] if argv is None else list(argv)
        os.execv(sys.executable, [sys.executable, os.path.abspath(__file__)] + argv)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
    import symgraph
    mx = symgraph
    print('%d cores, %d threads per framework, load average %.1f; ms per step, best round '
          'of %d interleaved passes; symgraph in %s' % (
              os.cpu_count(), args.threads, os.getloadavg()[0], args.passes, args.dtype))
    runners = [('symgraph', Runner(lambda: None))]
    if args.dtype == 'bfloat16':
        from symgraph.backend.onednn import routing
        runners.append(('symgraph, ' + ('bf16 as float32+round' if routing.RNN_BF16
                                        else "oneDNN's bf16 RNN"),
                        Bf16RouteRunner(lambda: None)))
    if args.numpy_rnn:
        runners.append(('symgraph, NumPy RNN path', NumpyRnnRunner(lambda: None)))
    if args.mxnet:
        runners.append(('MXNet 1.9.1, MKLDNN on (default)' if args.dtype == 'float32'
                        else 'MXNet 1.9.1 (float32: no bf16 RNN)',
                        Worker(args.mxnet, True, args.threads)))
    table = workloads()
    res = {}
    for _ in range(args.passes):
        for key, _, _ in table:
            for name, runner in runners:
                r = runner.measure(key)
                best = res.setdefault((name, key), r)
                if r['ms'] is not None and r['ms'] < best['ms']:
                    res[(name, key)] = r
    for _, runner in runners[1:]:
        if isinstance(runner, Worker):
            runner.close()
    load = os.getloadavg()[0]
    print('load average at the end %.1f%s' % (load, ' (above the core count: other work '
                                              'shares the CPU, times are noisy)'
                                              if load > os.cpu_count() else ''))
    head = '%-36s %10s' % ('workload', 'symgraph')
    for name, _ in runners[1:]:
        head += ' | %-29s' % name
    print(head)
    for key, desc, _ in table:
        ours = res[('symgraph', key)]['ms']
        line = '%-36s %7.1f ms' % (desc, ours)
        for name, _ in runners[1:]:
            ref = res[(name, key)]['ms']
            line += (' | %7.1f ms  ratio %5.2fx' % (ref, ours / ref) if ref is not None
                     else ' | %-29s' % 'n/a (refused)')
        print(line)
    if len(runners) > 1:
        print("ratio = symgraph / that column's time (below 1: symgraph is faster)")
    print('check values (sum |d parameters|; inference: sum |output|), which must agree%s:'
          % ('' if args.dtype == 'float32' else ' within bfloat16 rounding'))
    for key, _, _ in table:
        print('  %-14s' % key + ''.join(
            '  %s %s' % (name.split(',')[-1].strip(), 'n/a' if res[(name, key)]['check']
                         is None else '%.6g' % res[(name, key)]['check'])
            for name, _ in runners))
    if args.profile:
        profile()


if __name__ == '__main__':
    main()
