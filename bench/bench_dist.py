"""All-reduce between processes: MPI's Allreduce against symgraph's ring over MPI
point-to-point, and a data-parallel ResNet training step on 1 and 2 processes.

    python bench/bench_dist.py            # launches itself with python -m symgraph.launch
    python bench/bench_dist.py -n 4 --sizes-mb 1 16

1. All-reduce of float32 buffers of 1 MB to 256 MB over N processes (default 2), through
   :class:`symgraph.dist.mpi.Communicator` (``algorithm='mpi'``: ``MPI_Iallreduce``;
   ``'ring'``: reduce-scatter then all-gather over ``Isend``/``Irecv``). Reported per size:
   the time (best of the rounds, the slowest rank of each round), the algorithm bandwidth
   ``algbw = bytes / time`` and the bus bandwidth ``busbw = algbw * 2 (N - 1) / N`` (NCCL's
   convention: what each link carries).
2. A training step (forward, backward, gradient all-reduce through the ``'dist_sync'``
   kvstore, SGD update) of the small ResNet of bench_cnn.py at batch 32 per process, on 1
   process and on 2; weak scaling: 2 processes do twice the work per step. Each process
   pins itself to one core (``os.sched_setaffinity``) with OMP_NUM_THREADS=1.

3. Overlap of the gradient all-reduce with backward (``SYMGRAPH_DIST_OVERLAP``): the same
   training step over 2 processes with the buckets' all-reduces started during backward and
   with all of them at the update, in one run: each worker holds both modules (same
   parameters, one ``'dist_sync'`` store each) and alternates their steps, so both see the
   same load. ``--overlap-model`` picks the ResNet (``resnet``) or an MLP of large layers
   (``mlp``: 512 inputs, 4 x 2048 units, 52 MB of gradients), ``--bucket-mb`` the bucket size (a
   gradient set smaller than one bucket has nothing to overlap).

Processes share the machine's memory bandwidth; on a 2-core machine shared with other jobs
the figures are noisy: compare them within one run.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _pin():
    rank = int(os.environ.get('DMLC_WORKER_ID', '0'))
    if hasattr(os, 'sched_setaffinity'):
        cpus = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpus[rank % len(cpus)]})


def allreduce_worker(sizes_mb, rounds):
    from symgraph.dist.mpi import Communicator
    comm = Communicator(timeout=600)
    out = []
    for mb in sizes_mb:
        n = int(mb * 1024 * 1024) // 4
        buf = np.ones(n, np.float32)
        for algorithm in ('mpi', 'ring'):
            comm.allreduce(buf, algorithm=algorithm)      # warm-up
            times = []
            for _ in range(rounds):
                comm.barrier()
                t = time.perf_counter()
                comm.allreduce(buf, algorithm=algorithm)
                took = np.array([time.perf_counter() - t])
                comm.allreduce(took)          # (summed: the slowest bounds the mean)
                times.append(took[0] / comm.size)
            best = min(times)
            algbw = n * 4 / best / 1e9
            out.append({'mb': mb, 'algorithm': algorithm, 'ms': best * 1e3,
                        'algbw_GBs': algbw, 'busbw_GBs': algbw * 2 * (comm.size - 1) /
                        comm.size})
    if comm.rank == 0:
        print(json.dumps({'allreduce': out, 'n': comm.size}))


def _resnet(mx):
    def conv_bn(x, ch, stride, name, act=True):
        x = mx.sym.Convolution(x, num_filter=ch, kernel=(3, 3), stride=(stride, stride),
                               pad=(1, 1), no_bias=True, name=name + '_conv')
        x = mx.sym.BatchNorm(x, name=name + '_bn')
        return mx.sym.Activation(x, act_type='relu') if act else x

    x = conv_bn(mx.sym.var('data'), 16, 1, 'stem')
    for stage, ch in enumerate((16, 32, 64)):
        for block in range(2):
            stride = 2 if stage and not block else 1
            name = 's%db%d' % (stage, block)
            y = conv_bn(conv_bn(x, ch, stride, name + 'a'), ch, 1, name + 'b', act=False)
            if stride != 1:
                x = mx.sym.Convolution(x, num_filter=ch, kernel=(1, 1), stride=(2, 2),
                                       no_bias=True, name=name + '_proj')
            x = mx.sym.Activation(x + y, act_type='relu')
    x = mx.sym.Pooling(x, global_pool=True, pool_type='avg', kernel=(1, 1))
    x = mx.sym.FullyConnected(mx.sym.flatten(x), num_hidden=10, name='fc')
    return mx.sym.SoftmaxOutput(x, name='softmax')


def step_worker(steps, batch, kvstore):
    import symgraph as mx
    _pin()
    kv = mx.kv.create(kvstore) if kvstore else None
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, (batch, 3, 32, 32)).astype('f')
    y = rng.randint(0, 10, batch).astype('f')
    mod = mx.mod.Module(_resnet(mx), context=mx.cpu())
    mod.bind([('data', x.shape)], [('softmax_label', y.shape)])
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(kvstore=kv, optimizer='sgd', optimizer_params={'learning_rate': 0.05})
    b = mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)])
    times = []
    for i in range(steps + 1):
        if kv is not None:
            kv.barrier()
        t = time.perf_counter()
        mod.forward_backward(b)
        mod.update()
        mod.get_params()
        if i:
            times.append(time.perf_counter() - t)
    if kv is None or kv.rank == 0:
        print(json.dumps({'step_ms': min(times) * 1e3, 'median_ms':
                          float(np.median(times)) * 1e3,
                          'workers': kv.num_workers if kv else 1}))


def _mlp(mx):
    x = mx.sym.var('data')
    for k in range(4):
        x = mx.sym.Activation(mx.sym.FullyConnected(x, num_hidden=2048, name='fc%d' % k),
                              act_type='relu')
    x = mx.sym.FullyConnected(x, num_hidden=10, name='fc')
    return mx.sym.SoftmaxOutput(x, name='softmax')


def overlap_worker(steps, batch, model, bucket_mb):
    """One training step with and without overlap, alternated in each worker."""
    import symgraph as mx
    from symgraph.kvstore.dist import DistKVStore
    _pin()
    rng = np.random.RandomState(0)
    shape = (batch, 3, 32, 32) if model == 'resnet' else (batch, 512)
    x = rng.uniform(-1, 1, shape).astype('f')
    y = rng.randint(0, 10, batch).astype('f')
    b = mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)])
    mods, stores = {}, {}
    for overlap in (False, True):
        kv = stores[overlap] = DistKVStore('dist_sync', overlap=overlap,
                                           bucket_bytes=int(bucket_mb * 1024 * 1024))
        mod = mods[overlap] = mx.mod.Module(_resnet(mx) if model == 'resnet' else _mlp(mx),
                                            context=mx.cpu())
        mod.bind([('data', x.shape)], [('softmax_label', y.shape)])
        mx.random.seed(0)
        mod.init_params(mx.init.Xavier())
        mod.init_optimizer(kvstore=kv, optimizer='sgd',
                           optimizer_params={'learning_rate': 0.01})
    times = {False: [], True: []}
    for i in range(steps + 1):
        for overlap in (False, True):
            kv, mod = stores[overlap], mods[overlap]
            kv.barrier()
            t = time.perf_counter()
            mod.forward_backward(b)
            mod.update()
            took = np.array([time.perf_counter() - t])
            kv.allreduce_host(took)         # the mean over the workers
            if i:
                times[overlap].append(took[0] / kv.num_workers)
    same = all(np.array_equal(a.asnumpy(), mods[True].get_params()[0][k].asnumpy())
               for k, a in mods[False].get_params()[0].items())
    ov = mods[True]._overlap
    if stores[True].rank == 0:
        grads = sum(g[0].size * 4 for g in mods[True]._exec_group.grad_arrays)
        print(json.dumps({'model': model, 'grad_mb': grads / 2 ** 20, 'bucket_mb': bucket_mb,
                          'buckets': len(ov.buckets) if ov is not None else 0,
                          'off_ms': float(np.median(times[False])) * 1e3,
                          'on_ms': float(np.median(times[True])) * 1e3,
                          'off_min_ms': min(times[False]) * 1e3,
                          'on_min_ms': min(times[True]) * 1e3,
                          'same_params': bool(same)}))


def _launch(n, args):
    env = dict(os.environ, PYTHONPATH=ROOT, OMP_NUM_THREADS='1')
    cmd = [sys.executable, '-m', 'symgraph.launch', '-n', str(n), '--timeout', '600',
           sys.executable, os.path.abspath(__file__), '--worker'] + args
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True,
                         timeout=3600).stdout
    return [json.loads(l) for l in out.splitlines() if l.startswith('{')]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('-n', type=int, default=2, help='processes for the all-reduce')
    p.add_argument('--sizes-mb', type=float, nargs='+', default=[1, 4, 16, 64, 256])
    p.add_argument('--rounds', type=int, default=5)
    p.add_argument('--steps', type=int, default=5)
    p.add_argument('--batch', type=int, default=32)
    p.add_argument('--worker', choices=['allreduce', 'step', 'overlap'])
    p.add_argument('--kvstore', default='')
    p.add_argument('--overlap-model', choices=['resnet', 'mlp'], default='mlp',
                   help='the network of the overlap comparison')
    p.add_argument('--bucket-mb', type=float, default=4.0,
                   help='bucket size of the overlap comparison')
    p.add_argument('--only', choices=['allreduce', 'scaling', 'overlap'], nargs='+',
                   default=['allreduce', 'scaling', 'overlap'], help='the parts to run')
    args = p.parse_args()
    if args.worker == 'overlap':
        return overlap_worker(args.steps, args.batch, args.overlap_model, args.bucket_mb)
    if args.worker == 'allreduce':
        return allreduce_worker(args.sizes_mb, args.rounds)
    if args.worker == 'step':
        return step_worker(args.steps, args.batch, args.kvstore)

    if 'allreduce' in args.only:
        res = _launch(args.n, ['allreduce', '--rounds', str(args.rounds), '--sizes-mb'] +
                      [str(s) for s in args.sizes_mb])[0]
        print('All-reduce of float32 buffers over %d processes (best of %d)'
              % (res['n'], args.rounds))
        print('%9s %6s %10s %12s %12s' % ('size', 'algo', 'time ms', 'algbw GB/s',
                                          'busbw GB/s'))
        for r in res['allreduce']:
            print('%6g MB %6s %10.2f %12.3f %12.3f' % (r['mb'], r['algorithm'], r['ms'],
                                                      r['algbw_GBs'], r['busbw_GBs']))
    step = ['--steps', str(args.steps), '--batch', str(args.batch)]
    if 'scaling' in args.only:
        one = _launch(1, ['step'] + step)[0]
        two = _launch(2, ['step'] + step + ['--kvstore', 'dist_sync'])[0]
        print('ResNet training step, batch %d per process, one core each:' % args.batch)
        print('  1 process: %.1f ms   2 processes (dist_sync): %.1f ms   throughput x%.2f'
              % (one['step_ms'], two['step_ms'], 2 * one['step_ms'] / two['step_ms']))
    if 'overlap' in args.only:
        r = _launch(2, ['overlap'] + step + ['--overlap-model', args.overlap_model,
                                             '--bucket-mb', str(args.bucket_mb)])[0]
        print('%s training step over 2 processes (dist_sync, batch %d per process, %.1f MB '
              'of gradients in %d buckets of <= %g MB), alternated in one run, median '
              '(min) of %d:' % (r['model'], args.batch, r['grad_mb'], r['buckets'],
                                r['bucket_mb'], args.steps))
        print('  all-reduce at the update: %.1f ms (%.1f)   overlapped with backward: '
              '%.1f ms (%.1f)   ratio x%.2f   same parameters: %s'
              % (r['off_ms'], r['off_min_ms'], r['on_ms'], r['on_min_ms'],
                 r['off_ms'] / r['on_ms'], r['same_params']))


if __name__ == '__main__':
    main()
