"""Where the ResNet-14 CPU training step spends its time (issue 13's analysis).

    python bench/where_time_goes.py replay          # the step against its primitives alone
    python bench/where_time_goes.py kernels --mxnet /path/to/mxnet-venv/bin/python

``replay``: the oneDNN primitive calls of one training step (batch 32) are recorded with
their arrays and replayed back to back in the same process, alternating with the real step;
the median of the paired ratios replay / step bounds what any dispatch (executor, operators,
the NumPy work around the primitives) could gain. ``--infer`` does the same for an inference
forward (batch 64).

``kernels``: oneDNN's own timing of every primitive (``ONEDNN_VERBOSE=1``; MXNet's
``MKLDNN_VERBOSE=1``) over 6 steps after 3 warm-up ones, summed per primitive kind and
propagation, ms per step, for symgraph and (with ``--mxnet``) MXNet 1.9.1. Verbose timing
slows the frameworks unequally: compare kinds, not totals with wall times.
"""
import argparse
import collections
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = '=== steps'
STEPS = 6       # kernels: the steps timed (after 3 warm-up ones)


def _workload(mx, infer):
    sys.path.insert(0, HERE)
    import bench_cnn as b
    b.mx = mx
    if infer:
        exe = b.bind(b.resnet(), (64, 3, 32, 32), grad_req='null')
        return lambda: exe.forward(is_train=False)
    exe = b.bind(b.resnet(), (32, 3, 32, 32))
    return b.train_step_fn(exe, 32)


def replay(infer, rounds):
    sys.path.insert(0, os.path.join(HERE, '..'))
    import symgraph as mx
    from symgraph.backend.onednn import _core
    step = _workload(mx, infer)
    for _ in range(3):
        step()
    # every call runs through execute_at: execute passes the addresses of its arrays
    # (kept here, alive, for the replay), the backend's replays of recorded calls those
    # of arrays it found alive (the executor's, which outlive the replay too)
    execute, execute_at = _core.Primitive.execute, _core.Primitive.execute_at
    calls, alive = [], []

    def keep(prim, thread, arrays, token=None):
        alive.append(list(arrays))
        return execute(prim, thread, arrays, token)

    def record(prim, thread, ptrs, token=None):
        ptrs = list(ptrs)
        calls.append((prim, thread, ptrs, token))
        return execute_at(prim, thread, ptrs, token)
    _core.Primitive.execute, _core.Primitive.execute_at = keep, record
    try:
        step()
    finally:
        _core.Primitive.execute, _core.Primitive.execute_at = execute, execute_at

    def again():
        for prim, thread, ptrs, token in calls:
            execute_at(prim, thread, ptrs, token)
    best = {'step': [], 'replay': []}
    for r in range(rounds):
        pair = (('step', step), ('replay', again))
        for name, fn in (pair if r % 2 == 0 else pair[::-1]):
            fn()
            times = []
            for _ in range(3):
                t = time.perf_counter()
                fn()
                times.append(time.perf_counter() - t)
            best[name].append(min(times))
    ratios = sorted(a / b for a, b in zip(best['replay'], best['step']))
    print('%s: %d primitive calls; step %.2f ms, primitives alone %.2f ms (best of %d '
          'rounds); replay / step median %.3f (%.2f-%.2f)'
          % ('inference' if infer else 'training step', len(calls),
             min(best['step']) * 1e3, min(best['replay']) * 1e3, rounds,
             statistics.median(ratios), ratios[0], ratios[-1]))


def _verbose_worker(framework):
    if framework == 'mxnet':
        import mxnet as mx
        sync = mx.nd.waitall
    else:
        sys.path.insert(0, os.path.join(HERE, '..'))
        import symgraph as mx

        def sync():
            pass
    step = _workload(mx, False)
    for _ in range(3):
        step()
    sync()
    print(MARK, flush=True)
    for _ in range(STEPS):
        step()
    sync()


def _per_kind(text, steps=STEPS):
    total = collections.defaultdict(float)
    count = collections.Counter()
    for line in text.split(MARK, 1)[-1].splitlines():
        fields = line.split(',')
        if len(fields) < 6 or 'exec' not in fields[:3]:
            continue
        i = fields.index('exec')
        key = (fields[i + 2], fields[i + 4])
        total[key] += float(fields[-1]) / steps
        count[key] += 1
    return total, count


def kernels(mxnet):
    runs = {'symgraph': [sys.executable]}
    if mxnet:
        runs['MXNet'] = [mxnet]
    got = {}
    for name, exe in runs.items():
        env = dict(os.environ, ONEDNN_VERBOSE='1', MKLDNN_VERBOSE='1', OMP_NUM_THREADS='2')
        out = subprocess.run(exe + [os.path.abspath(__file__), '--verbose-worker',
                                    'mxnet' if name == 'MXNet' else 'symgraph'],
                             env=env, capture_output=True, text=True, check=True).stdout
        got[name] = _per_kind(out)
    keys = sorted({k for t, _ in got.values() for k in t},
                  key=lambda k: -max(t.get(k, 0) for t, _ in got.values()))
    print('%-22s %-18s' % ('primitive', 'propagation')
          + ''.join('%22s' % ('%s ms (calls)' % n) for n in got))
    for k in keys:
        print('%-22s %-18s' % k + ''.join(
            '%22s' % ('%.2f (%d)' % (t.get(k, 0.0), c[k] // STEPS)) for t, c in got.values()))
    print('%-41s' % 'total' + ''.join('%22.1f' % sum(t.values()) for t, _ in got.values()))


def main():
    if len(sys.argv) > 2 and sys.argv[1] == '--verbose-worker':
        _verbose_worker(sys.argv[2])
        return
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('what', choices=['replay', 'kernels'])
    ap.add_argument('--infer', action='store_true', help='replay: an inference forward')
    ap.add_argument('--rounds', type=int, default=20)
    ap.add_argument('--mxnet', help='kernels: python of a venv with mxnet 1.9.1')
    args = ap.parse_args()
    if args.what == 'replay':
        replay(args.infer, args.rounds)
    else:
        kernels(args.mxnet)


if __name__ == '__main__':
    main()
