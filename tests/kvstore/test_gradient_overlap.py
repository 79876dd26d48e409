"""GradientOverlap's bookkeeping in one process: a stand-in communicator plays a second
worker identical to this one (every sum doubles), so the overlapped path and the plain one
must give bitwise the same parameters. The real 2-process runs are in
tests/dist/test_overlap.py."""
import numpy as np
import pytest

import symgraph as mx
from symgraph.kvstore.dist import DistKVStore


class TwinComm:
    """Two identical workers: a sum over them doubles; records what was started."""
    rank, size, algorithm, timeout, thread_multiple = 0, 2, 'mpi', 5.0, True

    def __init__(self):
        self.started = []       # sizes of the started all-reduces
        self.waited = 0
        self.pending = []

    def duplicate(self, algorithm=None):
        return self

    def bcast(self, array, root=0):
        return array

    def allreduce(self, array):
        array *= 2
        return array

    def iallreduce(self, array):
        self.started.append(array.size)
        self.pending.append(array)
        return len(self.started)

    def test(self, requests):
        return False

    def wait(self, requests, what=''):
        # the sum "arrives" only now: an array read before the wait would be wrong
        for a in self.pending:
            a *= 2
        self.pending = []
        self.waited += 1

    def barrier(self):
        pass


def _net():
    data = mx.sym.Variable('data')
    h = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=16, name='fc1'),
                          act_type='tanh')
    h = mx.sym.Activation(mx.sym.FullyConnected(h, num_hidden=12, name='fc2'),
                          act_type='relu')
    return mx.sym.SoftmaxOutput(mx.sym.FullyConnected(h, num_hidden=3, name='fc3'),
                                name='softmax')


def _module(overlap, ndev=1, grad_req='write', bucket_bytes=300, update_on_kvstore='1',
            monkeypatch=None):
    if monkeypatch is not None:
        monkeypatch.setenv('MXNET_UPDATE_ON_KVSTORE', update_on_kvstore)
    comm = TwinComm()
    kv = DistKVStore('dist_sync', comm=comm, bucket_bytes=bucket_bytes, overlap=overlap)
    mod = mx.mod.Module(_net(), context=[mx.cpu(i) for i in range(ndev)])
    mod.bind([('data', (8, 10))], [('softmax_label', (8,))], grad_req=grad_req)
    mx.random.seed(0)
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(kvstore=kv, optimizer='sgd',
                       optimizer_params={'learning_rate': 0.2, 'momentum': 0.9})
    return mod, kv, comm


def _batches(n=3):
    rng = np.random.RandomState(0)
    return [mx.io.DataBatch([mx.nd.array(rng.uniform(-1, 1, (8, 10)))],
                            [mx.nd.array(rng.randint(0, 3, 8))]) for _ in range(n)]


def _params(mod):
    return {k: v.asnumpy() for k, v in mod.get_params()[0].items()}


@pytest.mark.parametrize('ndev, update_on_kvstore', [(1, '1'), (2, '1'), (2, '0')])
def test_overlapped_steps_equal_plain_steps(monkeypatch, ndev, update_on_kvstore):
    runs = {}
    for overlap in (False, True):
        mod, kv, comm = _module(overlap, ndev, update_on_kvstore=update_on_kvstore,
                                monkeypatch=monkeypatch)
        for b in _batches():
            mod.forward_backward(b)
            mod.update()
        runs[overlap] = _params(mod), kv, comm, mod
    (plain, kv0, _, mod0), (over, kv1, comm1, mod1) = runs[False], runs[True]
    assert mod0._overlap is None and kv0.num_overlapped == 0
    ov = mod1._overlap
    # buckets in backward order, each of one dtype and <= 300 bytes but for lone big ones
    assert ov.keys.index('fc3_weight') < ov.keys.index('fc2_weight') < \
        ov.keys.index('fc1_weight')
    assert len(ov.buckets) >= 4
    assert kv1.num_overlapped == 3 * len(ov.buckets) == len(comm1.started)
    assert comm1.waited == 3            # one wait per update
    for name in plain:
        np.testing.assert_array_equal(over[name], plain[name])


def test_buckets_start_while_backward_runs():
    mod, kv, comm = _module(True)
    b = _batches(1)[0]
    mod.forward_backward(b)
    ov = mod._overlap
    # each bucket started with its last gradient's report, the first long before the end
    assert ov.started_at == list(np.cumsum([len(b) for b in ov.buckets]))
    assert ov.started_at[0] <= 2 < len(ov.keys)
    # neighbours in backward order, at most 300 bytes unless alone
    assert [i for b in ov.buckets for i in b] == list(range(len(ov.keys)))
    sizes = {k: g[0].size * 4 for k, g in zip(mod._exec_group.param_names,
                                             mod._exec_group.grad_arrays)}
    for b in ov.buckets:
        assert len(b) == 1 or sum(sizes[ov.keys[i]] for i in b) <= 300
    mod.update()
    assert ov.started_at == []


def test_a_second_backward_before_the_update_drops_the_first_sums():
    got = {}
    for overlap in (False, True):
        mod, kv, comm = _module(overlap)
        b1, b2 = _batches(2)
        mod.forward_backward(b1)
        mod.forward_backward(b2)        # overwrites the gradients ('write')
        mod.update()
        got[overlap] = _params(mod)
    assert comm.waited == 2             # the dropped round was waited for, then the update
    for name in got[False]:
        np.testing.assert_array_equal(got[True][name], got[False][name])


def test_a_push_of_other_values_between_backward_and_update_leaves_overlap_aside():
    got = {}
    for overlap in (False, True):
        mod, kv, comm = _module(overlap, update_on_kvstore='0')
        mod.forward_backward(_batches(1)[0])
        # a push of one of the keys with other arrays: the round is dropped, the push and
        # the update run as without overlap
        kv.push('fc3_bias', mx.nd.zeros((3,)))
        mod.update()
        got[overlap] = _params(mod), kv.num_overlapped
    for name in got[False][0]:
        np.testing.assert_array_equal(got[True][0][name], got[False][0][name])
    assert got[True][1] > 0


@pytest.mark.parametrize('why', ['add', 'env', 'ring', 'compression'])
def test_overlap_is_off_where_it_cannot_apply(monkeypatch, why):
    overlap = None
    if why == 'env':
        monkeypatch.setenv('SYMGRAPH_DIST_OVERLAP', '0')
    if why == 'ring':
        monkeypatch.setattr(TwinComm, 'algorithm', 'ring')
        overlap = True
    if why == 'compression':
        comm = TwinComm()
        kv = DistKVStore('dist_device_sync', comm=comm, overlap=True)
        kv.init('w', mx.nd.zeros(3))
        kv.set_gradient_compression({'type': '2bit', 'threshold': 0.5})
        assert kv.gradient_overlap(['w'], [[mx.nd.zeros(3)]]) is None
        return
    comm = TwinComm()
    kv = DistKVStore('dist_sync', comm=comm, overlap=overlap)
    mod = mx.mod.Module(_net(), context=mx.cpu())
    mod.bind([('data', (8, 10))], [('softmax_label', (8,))],
             grad_req='add' if why == 'add' else 'write')
    mod.init_params()
    mod.init_optimizer(kvstore=kv)
    assert mod._overlap is None
    b = _batches(1)[0]
    mod.forward_backward(b)
    mod.update()
    assert kv.num_overlapped == 0
