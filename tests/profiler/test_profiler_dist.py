"""mx.profiler in distributed training: the kvstore's all-reduce buckets (a push's fused
buckets, and the buckets overlapping backward) on the kvstore's row of each worker's
trace. Two MPI workers (skipped without mpi4py or mpiexec)."""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'dist'))

from mpi_util import launch, check  # noqa: E402

WORKER = '''
import os
import numpy as np
import symgraph as mx
from symgraph.kvstore.dist import DistKVStore
rank = int(os.environ['DMLC_WORKER_ID'])
mx.profiler.set_config(profile_all=True, filename='trace%d.json' % rank,
                       continuous_dump=False)
mx.profiler.set_state('run')
# a push of several keys: fused into buckets of at most 64 bytes
kv = DistKVStore('dist_sync', bucket_bytes=64, overlap=False)
keys = [0, 1, 2]
kv.init(keys, [mx.nd.zeros((8,)) for _ in keys])
kv.push(keys, [mx.nd.ones((8,)) * (rank + 1) for _ in keys])
out = [mx.nd.zeros((8,)) for _ in keys]
kv.pull(keys, out=out)
assert float(out[0].asnumpy()[0]) == 3.0
# a Module step whose gradient buckets start during backward
kv2 = DistKVStore('dist_sync', bucket_bytes=256, overlap=True)
data = mx.sym.Variable('data')
net = mx.sym.FullyConnected(data, num_hidden=16, name='fc1')
net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(net, num_hidden=4, name='fc2'),
                           name='softmax')
mod = mx.mod.Module(net)
rng = np.random.RandomState(rank)
it = mx.io.NDArrayIter(rng.uniform(-1, 1, (16, 10)).astype('f'),
                       rng.randint(0, 4, 16).astype('f'), 8)
mod.fit(it, num_epoch=1, kvstore=kv2, optimizer='sgd',
        optimizer_params={'learning_rate': 0.1})
mx.profiler.set_state('stop')
mx.profiler.dump()
'''


def test_kvstore_buckets_on_the_kvstore_row(tmp_path):
    check(launch(tmp_path, 2, WORKER, timeout=90))
    for rank in range(2):
        with open(str(tmp_path / ('trace%d.json' % rank))) as f:
            events = json.load(f)['traceEvents']
        kv = [e for e in events if e.get('cat') == 'kvstore']
        # the push: 3 keys of 32 bytes in buckets of at most 64 bytes (its first two
        # buckets' events; Module's initial broadcasts have buckets too)
        pushed = [(e['name'], e['args']['bytes'], e['args']['keys']) for e in kv
                  if e['name'].startswith('allreduce bucket')]
        assert pushed[:2] == [('allreduce bucket 0', 64, 2), ('allreduce bucket 1', 32, 1)]
        overlapped = [e for e in kv if e['name'].startswith('Iallreduce bucket')]
        assert overlapped and all(e['args']['bytes'] <= 256 or e['args']['keys'] == 1
                                  for e in overlapped)
        assert {e['tid'] for e in kv} == {2}
        rows = {(e['tid'], e['args']['name']) for e in events if e['name'] == 'thread_name'}
        assert (2, 'kvstore / MPI all-reduce') in rows
        # the steps' backward ran meanwhile on the executor's row
        assert any(e['name'] == '_backward_FullyConnected' for e in events)
