"""kvstore 'dist_sync' / 'dist_device_sync' over MPI processes, and Module.fit across
processes: equal to one process training on the combined batch. Every run is bounded."""
import json
import logging

import numpy as np
import pytest

import symgraph as mx
from mpi_util import launch, check

KV_API = '''
import json, os, sys
import numpy as np
import symgraph as mx
kind = sys.argv[1]
kv = mx.kv.create(kind)
r, n = kv.rank, kv.num_workers
ctxs = [mx.cpu(0), mx.cpu(1)]
out = {'type': kv.type, 'rank': r, 'num_workers': n,
       'env': int(os.environ['DMLC_WORKER_ID'])}
# init: rank 0's value wins
kv.init(3, mx.nd.full((2, 3), 10.0 * (r + 1)))
kv.init([5, 6], [mx.nd.full((4,), r + 1.0), mx.nd.full((5,), -(r + 1.0))])
o = mx.nd.zeros((2, 3))
kv.pull(3, out=o)
out['init'] = o.asnumpy().tolist()
# push: sum over devices, then over workers
kv.push(3, [mx.nd.full((2, 3), r + 1.0, ctx=c) for c in ctxs])
kv.pull(3, out=o)
out['push'] = o.asnumpy().tolist()
# pushpull of a list: fused into one collective
before = kv.num_collectives
vals = [mx.nd.full((4,), 1.0 + r), mx.nd.full((5,), 2.0 * (r + 1))]
kv.pushpull([5, 6], vals)
out['pushpull'] = [v.asnumpy().tolist() for v in vals]
out['fused'] = kv.num_collectives - before
# a tiny bucket size: one collective per key
kv.bucket_bytes = 16
before = kv.num_collectives
kv.pushpull([5, 6], vals)
out['unfused'] = kv.num_collectives - before
out['twice'] = [v.asnumpy().tolist() for v in vals]
# set_optimizer: every worker applies the same update to the summed gradient
kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.5, momentum=0.9))
w = mx.nd.zeros((2, 3))
for step in range(2):
    kv.pushpull(3, mx.nd.full((2, 3), float(r + step)), out=w)
out['sgd'] = w.asnumpy().tolist()
kv.save_optimizer_states('states.bin')
out['states_exists'] = os.path.exists('states.bin')
kv.barrier()
with open('out%d.json' % r, 'w') as f:
    json.dump(out, f)
'''


@pytest.mark.parametrize('kind', ['dist_sync', 'dist_device_sync'])
def test_dist_kvstore_api_over_two_processes(tmp_path, kind):
    check(launch(tmp_path, 2, KV_API, args=[kind]))
    outs = [json.loads((tmp_path / ('out%d.json' % r)).read_text()) for r in range(2)]
    for r, o in enumerate(outs):
        assert (o['type'], o['rank'], o['num_workers'], o['env']) == (kind, r, 2, r)
        assert o['init'] == [[10.0] * 3] * 2
        # devices: 2 * (r + 1) per worker; workers: 2 * 1 + 2 * 2
        assert o['push'] == [[6.0] * 3] * 2
        assert o['pushpull'] == [[3.0] * 4, [6.0] * 5]
        assert o['fused'] == 1
        assert o['unfused'] == 2
        assert o['twice'] == [[6.0] * 4, [12.0] * 5]
    # SGD with momentum from w = 10 (the stored 'push' value was replaced by the sum 6:
    # the weight is the stored value); gradients summed over workers: step 0: 0 + 1,
    # step 1: 1 + 2
    w, mom = 6.0, 0.0
    for g in (1.0, 3.0):
        mom = 0.9 * mom - 0.5 * g
        w += mom
    for o in outs:
        np.testing.assert_allclose(o['sgd'], [[w] * 3] * 2, rtol=1e-6)
    assert (tmp_path / 'states.bin').exists()


def test_dist_async_and_unknown_types_are_refused():
    with pytest.raises(ValueError, match="'dist_async' is not supported.*use 'dist_sync'"):
        mx.kv.create('dist_async')
    with pytest.raises(ValueError, match="'horovod' is not available; the multi-process types "
                                         "are 'dist_device_sync'"):
        mx.kv.create('horovod')


NETS = '''
def make_net(mx, kind):
    data = mx.sym.Variable('data')
    if kind == 'cnn':
        h = mx.sym.Convolution(mx.sym.reshape(data, shape=(-1, 1, 2, 5)), kernel=(2, 2),
                               pad=(1, 1), num_filter=4, name='conv')
        h = mx.sym.Activation(mx.sym.BatchNorm(h, fix_gamma=False, name='bn'),
                              act_type='relu')
        return mx.sym.SoftmaxOutput(mx.sym.FullyConnected(h, num_hidden=3, name='fc2'),
                                    name='softmax')
    return mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.Activation(
        mx.sym.FullyConnected(data, num_hidden=16, name='fc1'), act_type='tanh'),
        num_hidden=3, name='fc2'), name='softmax')
'''
exec(NETS)

FIT = NETS + '''
import json, os, sys
import numpy as np
import symgraph as mx
ndev, kind, steps = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
net_kind = sys.argv[5]
import logging
logging.basicConfig(level=logging.INFO, filename='log%d.txt' % int(os.environ['DMLC_WORKER_ID']),
                    format='%(message)s')
data = np.load(sys.argv[4])
kv = mx.kv.create(kind)
r, n = kv.rank, kv.num_workers
assert kv._comm.algorithm == os.environ.get('SYMGRAPH_DIST_ALLREDUCE', 'mpi')
assert mx.model._create_kvstore(kv, ndev, {})[1] == (
    os.environ.get('MXNET_UPDATE_ON_KVSTORE', '1') == '1')
x, y = data['x'], data['y']
per = x.shape[0] // n
x, y = x[r * per:(r + 1) * per], y[r * per:(r + 1) * per]
net = make_net(mx, net_kind)
it = mx.io.NDArrayIter(x, y, per // steps)
mod = mx.mod.Module(net, context=[mx.cpu(i) for i in range(ndev)])
# rank 1 starts from other parameters: init broadcasts rank 0's
args = {k[4:]: mx.nd.array(v + r) for k, v in data.items() if k.startswith('arg:')}
os.makedirs('ckpt%d' % r)
local = []
mod.fit(it, num_epoch=2, kvstore=kv, optimizer='sgd',
        optimizer_params={'learning_rate': 0.5, 'momentum': 0.9, 'wd': 0.01},
        arg_params=args, epoch_end_callback=mx.callback.do_checkpoint('ckpt%d/m' % r),
        batch_end_callback=lambda p: local.append(p.eval_metric.get()[1]))
mod.save_checkpoint('ckpt%d/mod' % r, 7, save_optimizer_states=True)
assert mod._optimizer.rescale_grad == 1.0 / (per // steps * n)
arg, aux = mod.get_params()
np.savez('params%d.npz' % r, **{k: v.asnumpy() for k, v in arg.items()})
np.savez('aux%d.npz' % r, **{k: v.asnumpy() for k, v in aux.items()})
json.dump(local[steps - 1::steps], open('local%d.json' % r, 'w'))
'''


def _reference(data, steps, n, net_kind='mlp', ndev=1):
    """One process (``ndev`` devices), batch = the workers' batches side by side."""
    x, y = data['x'], data['y']
    per = x.shape[0] // n
    b = per // steps
    order = np.concatenate([np.arange(r * per + s * b, r * per + (s + 1) * b)
                            for s in range(steps) for r in range(n)])
    net = make_net(mx, net_kind)  # noqa: F821 -- defined by exec(NETS)
    it = mx.io.NDArrayIter(x[order], y[order], b * n)
    mod = mx.mod.Module(net, context=[mx.cpu(i) for i in range(ndev)])
    args = {k[4:]: mx.nd.array(v) for k, v in data.items() if k.startswith('arg:')}
    mod.fit(it, num_epoch=2, kvstore='local', optimizer='sgd',
            optimizer_params={'learning_rate': 0.5, 'momentum': 0.9, 'wd': 0.01},
            arg_params=args)
    arg, aux = mod.get_params()
    if net_kind == 'mlp':
        return {k: v.asnumpy() for k, v in arg.items()}
    return {k: v.asnumpy() for k, v in arg.items()}, {k: v.asnumpy() for k, v in aux.items()}


@pytest.mark.parametrize('ndev, kind, update_on_kvstore, algorithm', [
    (1, 'dist_sync', '1', 'mpi'), (2, 'dist_sync', '1', 'ring'),
    (2, 'dist_device_sync', '0', 'mpi')])
def test_two_process_fit_equals_one_process_on_the_combined_batch(tmp_path, monkeypatch, caplog,
                                                                  ndev, kind, update_on_kvstore,
                                                                  algorithm):
    monkeypatch.setenv('MXNET_UPDATE_ON_KVSTORE', update_on_kvstore)
    monkeypatch.setenv('SYMGRAPH_DIST_ALLREDUCE', algorithm)
    rng = np.random.RandomState(0)
    steps, n = 2, 2
    data = {'x': rng.uniform(-1, 1, (32, 10)).astype('f'),
            'y': rng.randint(0, 3, 32).astype('f'),
            'arg:fc1_weight': rng.normal(0, 0.3, (16, 10)).astype('f'),
            'arg:fc1_bias': np.zeros(16, 'f'),
            'arg:fc2_weight': rng.normal(0, 0.3, (3, 16)).astype('f'),
            'arg:fc2_bias': np.zeros(3, 'f')}
    data['y'][16:] = 0      # rank 1's shard: one class (the workers' own accuracies differ)
    np.savez(tmp_path / 'data.npz', **data)
    check(launch(tmp_path, n, FIT, args=[ndev, kind, steps, tmp_path / 'data.npz', 'mlp'],
                 bound=180))
    got = [dict(np.load(tmp_path / ('params%d.npz' % r))) for r in range(n)]
    caplog.set_level(logging.INFO)
    ref = _reference(data, steps, n)
    # the logged training metric is the global one: the same on both workers, and the one
    # process's on the combined batch
    want = [r.getMessage() for r in caplog.records if 'Train-accuracy' in r.getMessage()]
    assert len(want) == 2
    for r in range(n):
        logged = [l for l in (tmp_path / ('log%d.txt' % r)).read_text().splitlines()
                  if 'Train-accuracy' in l]
        assert logged == want
    # (each worker's own accuracy differs: the test sees the reduction)
    local = [json.loads((tmp_path / ('local%d.json' % r)).read_text()) for r in range(n)]
    assert local[0] != local[1]
    assert ['Epoch[%d] Train-accuracy=%f' % (e, (a + b) / 2)
            for e, (a, b) in enumerate(zip(*local))] == want
    for name in ref:
        np.testing.assert_array_equal(got[0][name], got[1][name])   # workers agree exactly
        np.testing.assert_allclose(got[0][name], ref[name], rtol=1e-5, atol=1e-6)
        assert not np.allclose(ref[name], data['arg:' + name])       # it did train
    # checkpoints: rank 0 only
    assert sorted(p.name for p in (tmp_path / 'ckpt0').iterdir()) == [
        'm-0001.params', 'm-0002.params', 'm-symbol.json', 'mod-0007.params',
        'mod-0007.states', 'mod-symbol.json']
    assert list((tmp_path / 'ckpt1').iterdir()) == []
    saved = mx.nd.load(str(tmp_path / 'ckpt0' / 'm-0002.params'))
    np.testing.assert_array_equal(saved['arg:fc1_weight'].asnumpy(), got[0]['fc1_weight'])


def test_the_dist_training_example_runs_as_the_readme_says(tmp_path):
    import os
    example = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'examples',
                           'train_dist.py')
    source = 'import runpy, sys\nsys.argv = [%r] + sys.argv[1:]\n' \
             'runpy.run_path(%r, run_name="__main__")\n' % (example, example)
    (tmp_path / 'ck').mkdir()
    proc = check(launch(tmp_path, 2, source, args=['--kv-store', 'dist_sync', '--epochs', '3',
                                                   '--target', '0.8', '--prefix',
                                                   tmp_path / 'ck' / 'lenet'],
                        timeout=60, bound=240))
    import re
    # (rc 0: both reached --target; the ranks' stdout lines may interleave, so only the
    # well-formed ones are compared: the same parameters give the same accuracy)
    accs = re.findall(r'rank (\d) of 2: test accuracy ([\d.]+)\n', proc.stdout)
    assert accs and len({a for _, a in accs}) == 1, proc.stdout
    assert sorted(p.name for p in (tmp_path / 'ck').iterdir()) == [
        'lenet-0001.params', 'lenet-0002.params', 'lenet-0003.params', 'lenet-symbol.json']


def test_cnn_with_batchnorm_two_processes_equal_one_process_with_two_devices(tmp_path):
    """BatchNorm normalises each device's slice: 2 processes x 1 device train as 1 process x
    2 devices on the combined batch; the moving statistics are each worker's own (MXNet's
    behaviour), and their mean is what the 2-device module reports."""
    rng = np.random.RandomState(3)
    steps, n = 2, 2
    data = {'x': rng.uniform(-1, 1, (32, 10)).astype('f'),
            'y': rng.randint(0, 3, 32).astype('f'),
            'arg:conv_weight': rng.normal(0, 0.5, (4, 1, 2, 2)).astype('f'),
            'arg:conv_bias': np.zeros(4, 'f'),
            'arg:bn_gamma': np.ones(4, 'f'), 'arg:bn_beta': np.zeros(4, 'f'),
            'arg:fc2_weight': rng.normal(0, 0.3, (3, 72)).astype('f'),
            'arg:fc2_bias': np.zeros(3, 'f')}
    np.savez(tmp_path / 'data.npz', **data)
    check(launch(tmp_path, n, FIT, args=[1, 'dist_sync', steps, tmp_path / 'data.npz', 'cnn'],
                 bound=180))
    got = [dict(np.load(tmp_path / ('params%d.npz' % r))) for r in range(n)]
    aux = [dict(np.load(tmp_path / ('aux%d.npz' % r))) for r in range(n)]
    ref, ref_aux = _reference(data, steps, n, 'cnn', ndev=2)
    for name in ref:
        np.testing.assert_array_equal(got[0][name], got[1][name])
        np.testing.assert_allclose(got[0][name], ref[name], rtol=1e-5, atol=1e-6)
    assert not np.allclose(aux[0]['bn_moving_mean'], aux[1]['bn_moving_mean'])
    for name in ref_aux:
        np.testing.assert_allclose((aux[0][name] + aux[1][name]) / 2, ref_aux[name],
                                   rtol=1e-5, atol=1e-6)
