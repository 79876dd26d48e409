"""'dist_sync' / 'dist_device_sync' with GPU contexts, one process per GPU: the sum over the
workers runs with NCCL (rank 0's unique id broadcast over MPI). In CI the workers run on
the strict CuPy stand-in (SYMGRAPH_STRICT_CUPY, inherited by the launched processes),
whose NcclCommunicator checks the unique id and routes through MPI. Every run is
bounded."""
import json
import os

import numpy as np
import pytest

from symgraph.context import num_gpus
from mpi_util import launch, check

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(num_gpus() < 2, reason='needs two CUDA GPUs')]

CUDA_TESTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'cuda')

WORKER = '''
import json, os, sys
if os.environ.get('SYMGRAPH_STRICT_CUPY'):
    sys.path.insert(0, %r)
    import strict_cupy
    strict_cupy.install(int(os.environ['SYMGRAPH_STRICT_CUPY']))
import numpy as np
import symgraph as mx
kind, mode = sys.argv[1], sys.argv[2]
kv = mx.kv.create(kind)
r, n = kv.rank, kv.num_workers
gpu = mx.gpu(r)                              # one process per GPU
out = {}
if mode == 'sum':
    kv.init([3, 4], [mx.nd.full((2, 3), 10.0 * (r + 1)), mx.nd.full((5,), 1.0)])
    vals = [mx.nd.full((2, 3), r + 1.0, ctx=gpu), mx.nd.array(np.arange(5) * (r + 1), ctx=gpu)]
    kv.pushpull([3, 4], vals)
    out['sum'] = [v.asnumpy().tolist() for v in vals]
    out['ctx'] = [str(v.context) for v in vals]
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.5, momentum=0.9))
    w = [mx.nd.zeros((2, 3), ctx=gpu), mx.nd.zeros((5,), ctx=gpu)]
    for step in range(2):
        kv.pushpull([3, 4], [mx.nd.full((2, 3), float(r + step), ctx=gpu),
                             mx.nd.full((5,), 1.0, ctx=gpu)], out=w)
    out['sgd'] = [x.asnumpy().tolist() for x in w]
else:                                        # Module.fit, one GPU per process
    d = np.load(sys.argv[3])
    per = d['x'].shape[0] // n
    it = mx.io.NDArrayIter(d['x'][r * per:(r + 1) * per], d['y'][r * per:(r + 1) * per], 4)
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.Activation(
        mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=8, name='fc1'), act_type='tanh'),
        num_hidden=3, name='fc2'), name='softmax')
    mod = mx.mod.Module(net, context=gpu)
    mod.fit(it, num_epoch=2, kvstore=kv, optimizer='sgd',
            arg_params={k: mx.nd.array(d[k]) for k in
                        ('fc1_weight', 'fc1_bias', 'fc2_weight', 'fc2_bias')},
            optimizer_params={'learning_rate': 0.3, 'momentum': 0.9})
    out['params'] = {k: v.asnumpy().tolist() for k, v in mod.get_params()[0].items()}
out['nccl'] = kv.num_nccl_collectives
out['overlapped'] = kv.num_overlapped
with open('out%%d.json' %% r, 'w') as f:
    json.dump(out, f)
''' % CUDA_TESTS


@pytest.mark.parametrize('kind', ['dist_sync', 'dist_device_sync'])
def test_gpu_values_are_summed_over_processes_with_nccl(tmp_path, kind):
    check(launch(tmp_path, 2, WORKER, args=[kind, 'sum']))
    outs = [json.loads((tmp_path / ('out%d.json' % r)).read_text()) for r in range(2)]
    w, mom = 3.0, 0.0           # the stored 'sum' value, then SGD on 0+1 and 1+2
    for g in (1.0, 3.0):
        mom = 0.9 * mom - 0.5 * g
        w += mom
    w2, mom = 3.0 * np.arange(5), 0.0
    for g in (2.0, 2.0):
        mom = 0.9 * mom - 0.5 * g
        w2 = w2 + mom
    for r, o in enumerate(outs):
        assert o['sum'] == [[[3.0] * 3] * 2, (np.arange(5) * 3.0).tolist()]
        assert o['ctx'] == ['gpu(%d)' % r] * 2
        np.testing.assert_allclose(o['sgd'][0], [[w] * 3] * 2, rtol=1e-6)
        np.testing.assert_allclose(o['sgd'][1], w2, rtol=1e-6)
        assert o['nccl'] == 3           # one fused NCCL all-reduce per pushpull of 2 keys


def test_two_gpu_processes_fit_equals_one_process_on_the_combined_batch(tmp_path):
    import symgraph as mx
    rng = np.random.RandomState(0)
    d = {'x': rng.uniform(-1, 1, (16, 5)).astype('f'), 'y': rng.randint(0, 3, 16).astype('f'),
         'fc1_weight': rng.uniform(-0.5, 0.5, (8, 5)).astype('f'),
         'fc1_bias': np.zeros(8, 'f'), 'fc2_weight': rng.uniform(-0.5, 0.5, (3, 8)).astype('f'),
         'fc2_bias': np.zeros(3, 'f')}
    np.savez(tmp_path / 'in.npz', **d)
    check(launch(tmp_path, 2, WORKER, args=['dist_sync', 'fit', tmp_path / 'in.npz']))
    outs = [json.loads((tmp_path / ('out%d.json' % r)).read_text()) for r in range(2)]
    assert outs[0]['nccl'] > 0
    # one process on the combined batch: rows of both shards per step, in shard order
    x = np.concatenate([np.concatenate([d['x'][r * 8 + b * 4:r * 8 + b * 4 + 4]
                                        for r in range(2)]) for b in range(2)])
    y = np.concatenate([np.concatenate([d['y'][r * 8 + b * 4:r * 8 + b * 4 + 4]
                                        for r in range(2)]) for b in range(2)])
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.Activation(
        mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=8, name='fc1'), act_type='tanh'),
        num_hidden=3, name='fc2'), name='softmax')
    mod = mx.mod.Module(net, context=mx.cpu())
    it = mx.io.NDArrayIter(x, y, 8)
    mod.fit(it, num_epoch=2, kvstore='local', optimizer='sgd',
            arg_params={k: mx.nd.array(d[k]) for k in
                        ('fc1_weight', 'fc1_bias', 'fc2_weight', 'fc2_bias')},
            optimizer_params={'learning_rate': 0.3, 'momentum': 0.9})
    want = {k: v.asnumpy() for k, v in mod.get_params()[0].items()}
    for o in outs:
        for k, v in want.items():
            np.testing.assert_allclose(o['params'][k], v, rtol=1e-5, atol=1e-6, err_msg=k)


def test_overlapped_nccl_all_reduce_gives_the_same_parameters(tmp_path, monkeypatch):
    """The buckets' NCCL all-reduces queued during backward (SYMGRAPH_DIST_OVERLAP=1, the
    default) give bitwise the parameters of the all-reduce at the update (=0)."""
    rng = np.random.RandomState(1)
    d = {'x': rng.uniform(-1, 1, (16, 5)).astype('f'), 'y': rng.randint(0, 3, 16).astype('f'),
         'fc1_weight': rng.uniform(-0.5, 0.5, (8, 5)).astype('f'),
         'fc1_bias': np.zeros(8, 'f'), 'fc2_weight': rng.uniform(-0.5, 0.5, (3, 8)).astype('f'),
         'fc2_bias': np.zeros(3, 'f')}
    np.savez(tmp_path / 'in.npz', **d)
    monkeypatch.setenv('SYMGRAPH_DIST_BUCKET_MB', '0.0001')    # ~100 bytes: 3 buckets
    runs = {}
    for overlap in ('0', '1'):
        monkeypatch.setenv('SYMGRAPH_DIST_OVERLAP', overlap)
        check(launch(tmp_path, 2, WORKER, args=['dist_device_sync', 'fit',
                                                tmp_path / 'in.npz']))
        runs[overlap] = [json.loads((tmp_path / ('out%d.json' % r)).read_text())
                         for r in range(2)]
    for r in range(2):
        assert runs['0'][r]['overlapped'] == 0
        assert runs['1'][r]['overlapped'] > 0
        assert runs['0'][r]['nccl'] > 0
        assert runs['1'][r]['nccl'] == runs['1'][r]['overlapped']    # all during backward
        for k, v in runs['0'][r]['params'].items():
            np.testing.assert_array_equal(np.array(runs['1'][r]['params'][k], 'f'),
                                          np.array(v, 'f'), err_msg=k)
