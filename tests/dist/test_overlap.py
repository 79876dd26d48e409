"""The all-reduce of gradient buckets overlapping backward ('dist_sync', 'dist_device_sync'):
the buckets start while backward runs, and the parameters after N steps are bitwise those of
training without overlap. Every run is bounded."""
import json

import numpy as np
import pytest

from mpi_util import launch, check

WORKER = '''
import json, os, sys
import numpy as np
import symgraph as mx
from symgraph.kvstore.dist import DistKVStore
ndev, kind, net_kind, bucket_bytes = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
mx.random.seed(0)
rng = np.random.RandomState(0)
rank = int(os.environ['DMLC_WORKER_ID'])

def make_net():
    data = mx.sym.Variable('data')
    if net_kind == 'mlp':
        h = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=64, name='fc1'),
                              act_type='tanh')
        h = mx.sym.Activation(mx.sym.FullyConnected(h, num_hidden=48, name='fc2'),
                              act_type='relu')
    else:
        h = mx.sym.Convolution(mx.sym.reshape(data, shape=(-1, 1, 4, 5)), kernel=(3, 3),
                               pad=(1, 1), num_filter=6, name='conv')
        bn = mx.sym.contrib.SyncBatchNorm if net_kind == 'syncbn' else mx.sym.BatchNorm
        h = mx.sym.Activation(bn(h, fix_gamma=False, name='bn'), act_type='relu')
    return mx.sym.SoftmaxOutput(mx.sym.FullyConnected(h, num_hidden=5, name='out'),
                                name='softmax')

x = rng.uniform(-1, 1, (2, 24, 20)).astype('f')[rank]
y = rng.randint(0, 5, (2, 24)).astype('f')[rank]
out = {}
for overlap in (False, True):
    kv = DistKVStore(kind, bucket_bytes=bucket_bytes, overlap=overlap)
    mod = mx.mod.Module(make_net(), context=[mx.cpu(i) for i in range(ndev)])
    it = mx.io.NDArrayIter(x, y, 8)
    mx.random.seed(1 + rank)     # different initial values: init broadcasts rank 0's
    mod.fit(it, num_epoch=2, kvstore=kv, optimizer='sgd',
            optimizer_params={'learning_rate': 0.3, 'momentum': 0.9, 'wd': 0.01},
            initializer=mx.init.Xavier())
    arg, aux = mod.get_params()
    np.savez('params%d_%d.npz' % (rank, overlap),
             **{k: v.asnumpy() for k, v in list(arg.items()) + list(aux.items())})
    ov = mod._overlap
    out[str(overlap)] = {
        'overlapped': kv.num_overlapped, 'collectives': kv.num_collectives,
        'buckets': None if ov is None else [[ov.keys[i] for i in b] for b in ov.buckets],
        'order': None if ov is None else ov.keys}
    if ov is not None:
        # one more step by hand: where in backward each bucket started
        batch = next(iter(mx.io.NDArrayIter(x, y, 8)))
        mod.forward_backward(batch)
        out['started_at'] = list(ov.started_at)
        out['reports'] = len(ov.keys) * ndev
        mod.update()
        out['after_update'] = list(ov.started_at)
json.dump(out, open('out%d.json' % rank, 'w'))
'''


def _run(tmp_path, ndev, kind, net, bucket_bytes, env=None, monkeypatch=None):
    if env:
        for k, v in env.items():
            monkeypatch.setenv(k, v)
    check(launch(tmp_path, 2, WORKER, args=[ndev, kind, net, bucket_bytes], timeout=60,
                 bound=240))
    outs = [json.loads((tmp_path / ('out%d.json' % r)).read_text()) for r in range(2)]
    params = {(r, o): dict(np.load(tmp_path / ('params%d_%d.npz' % (r, o))))
              for r in range(2) for o in range(2)}
    return outs, params


@pytest.mark.parametrize('ndev, kind, net, update_on_kvstore', [
    (1, 'dist_sync', 'mlp', '1'),
    (2, 'dist_device_sync', 'mlp', '0'),
    (1, 'dist_sync', 'syncbn', '1')])
def test_overlap_gives_the_parameters_of_training_without_it(tmp_path, monkeypatch, ndev,
                                                             kind, net, update_on_kvstore):
    monkeypatch.setenv('MXNET_UPDATE_ON_KVSTORE', update_on_kvstore)
    # ~6 KB buckets: the MLP's gradients go in several buckets
    outs, params = _run(tmp_path, ndev, kind, net, 6000)
    for r in range(2):
        off, on = outs[r]['False'], outs[r]['True']
        assert off['overlapped'] == 0 and off['buckets'] is None
        assert on['overlapped'] > 0
        # backward order: the output layer's gradients first, the first layer's last
        order = on['order']
        first = 'conv_weight' if net != 'mlp' else 'fc1_weight'
        assert order.index('out_weight') < order.index(first)
        if net == 'mlp':
            assert len(on['buckets']) >= 3
            # started during backward: the first bucket before the last gradient came
            assert outs[r]['started_at'][0] < outs[r]['reports']
            assert len(outs[r]['started_at']) == len(on['buckets'])
            assert outs[r]['after_update'] == []      # the update consumed the round
        # every step (2 epochs x 3 batches) started each bucket during backward
        assert on['overlapped'] == 6 * len(on['buckets'])
    for name in params[0, 0]:
        np.testing.assert_array_equal(params[0, 1][name], params[0, 0][name])  # bitwise
        np.testing.assert_array_equal(params[1, 1][name], params[0, 1][name])  # workers agree
        np.testing.assert_array_equal(params[1, 0][name], params[0, 0][name])


SWITCH = '''
import json, os
import numpy as np
import symgraph as mx
kv = mx.kv.create('dist_sync')
net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=3),
                           name='softmax')
mod = mx.mod.Module(net, context=mx.cpu())
mod.fit(mx.io.NDArrayIter(np.ones((4, 5), 'f'), np.zeros(4, 'f'), 2), num_epoch=1,
        kvstore=kv)
json.dump([kv.overlap, kv.num_overlapped, kv.num_collectives],
          open('sw%s.json' % os.environ['DMLC_WORKER_ID'], 'w'))
'''


@pytest.mark.parametrize('value', ['0', '1'])
def test_the_switch_turns_overlap_off(tmp_path, monkeypatch, value):
    monkeypatch.setenv('SYMGRAPH_DIST_OVERLAP', value)
    check(launch(tmp_path, 2, SWITCH, timeout=60, bound=120))
    for r in range(2):
        overlap, overlapped, collectives = json.loads((tmp_path / ('sw%d.json' % r)).read_text())
        assert overlap is (value == '1')
        assert collectives > 2      # init, one bucket per step, the metric
        assert overlapped == (2 if value == '1' else 0)     # one bucket in each of 2 steps


def test_the_switch_is_checked(monkeypatch):
    from symgraph.kvstore.dist import env_overlap
    monkeypatch.delenv('SYMGRAPH_DIST_OVERLAP', raising=False)
    assert env_overlap() is True
    monkeypatch.setenv('SYMGRAPH_DIST_OVERLAP', '0')
    assert env_overlap() is False
    monkeypatch.setenv('SYMGRAPH_DIST_OVERLAP', 'off')     # symgraph.config's off words
    assert env_overlap() is False
    monkeypatch.setenv('SYMGRAPH_DIST_OVERLAP', 'maybe')
    with pytest.raises(ValueError, match="SYMGRAPH_DIST_OVERLAP must be 0 or 1 .*got 'maybe'"):
        env_overlap()


DEAD = '''
import json, os, sys, time
import numpy as np
import symgraph as mx
from symgraph.dist.mpi import DistTimeoutError
kv = mx.kv.create('dist_sync')
kv.bucket_bytes = 400
net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.Activation(mx.sym.FullyConnected(
    mx.sym.Variable('data'), num_hidden=32, name='fc1'), act_type='relu'), num_hidden=3,
    name='fc2'), name='softmax')
mod = mx.mod.Module(net, context=mx.cpu())
mod.bind([('data', (4, 8))], [('softmax_label', (4,))])
mod.init_params()
mod.init_optimizer(kvstore=kv)
batch = mx.io.DataBatch([mx.nd.ones((4, 8))], [mx.nd.zeros(4)])
mod.forward_backward(batch)
mod.update()                         # a first step both take
mod.forward(batch)
if kv.rank == 1:
    os._exit(3)                      # dies before its backward, without a word to MPI
mod.backward()                       # rank 0 starts its buckets
assert kv.num_overlapped > 2
start = time.monotonic()
try:
    mod.update()
except DistTimeoutError as err:
    json.dump({'elapsed': time.monotonic() - start, 'missing': list(err.missing),
               'message': str(err)}, open('report.json', 'w'))
    raise
'''


def test_a_worker_dying_during_backward_makes_the_update_fail_naming_it(tmp_path):
    proc = launch(tmp_path, 2, DEAD, timeout=2, bound=60)
    assert proc.returncode != 0
    report = json.loads((tmp_path / 'report.json').read_text())
    assert report['missing'] == [1], (proc.stdout, proc.stderr)
    assert 'overlapped all-reduce' in report['message']
    assert 'rank 1 of 2 did not take part within 2 s' in report['message']
    assert report['elapsed'] < 2.0 + 1.0
    assert 'DistTimeoutError' in proc.stderr
