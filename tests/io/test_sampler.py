"""DistributedSampler: PyTorch's sharding, padding, drop_last and epochs; NDArrayIter with
a sampler."""
import numpy as np
import pytest

import symgraph as mx
from symgraph.io import DistributedSampler
from symgraph.io.sampler import job_rank_and_size


def _shards(n, r, **kw):
    return [list(DistributedSampler(n, num_replicas=r, rank=k, **kw)) for k in range(r)]


def torch_reference(n, r, rank, drop_last, order):
    """PyTorch 2.x's DistributedSampler.__iter__ with the order given (its code, with
    torch.randperm replaced by ``order``)."""
    if drop_last and n % r != 0:
        num_samples = int(np.ceil((n - r) / r))
    else:
        num_samples = int(np.ceil(n / r))
    total_size = num_samples * r
    indices = list(order)
    if not drop_last:
        padding_size = total_size - len(indices)
        if padding_size <= len(indices):
            indices += indices[:padding_size]
        else:
            indices += (indices * int(np.ceil(padding_size / len(indices))))[:padding_size]
    else:
        indices = indices[:total_size]
    assert len(indices) == total_size
    indices = indices[rank:total_size:r]
    assert len(indices) == num_samples
    return indices


def test_unshuffled_shards_are_strided_and_padded_from_the_start():
    assert _shards(10, 3, shuffle=False) == [[0, 3, 6, 9], [1, 4, 7, 0], [2, 5, 8, 1]]
    assert _shards(10, 3, shuffle=False, drop_last=True) == [[0, 3, 6], [1, 4, 7], [2, 5, 8]]
    assert _shards(9, 3, shuffle=False, drop_last=True) == [[0, 3, 6], [1, 4, 7], [2, 5, 8]]
    # more workers than twice the examples: the padding wraps around repeatedly
    assert _shards(2, 5, shuffle=False) == [[0], [1], [0], [1], [0]]
    assert [len(DistributedSampler(10, 3, k)) for k in range(3)] == [4, 4, 4]


@pytest.mark.parametrize('n', [1, 2, 7, 12, 13])
@pytest.mark.parametrize('r', [1, 2, 3, 5])
@pytest.mark.parametrize('drop_last', [False, True])
@pytest.mark.parametrize('shuffle', [False, True])
def test_matches_pytorchs_algorithm(n, r, drop_last, shuffle):
    seed, epoch = 3, 2
    order = (np.random.RandomState(seed + epoch).permutation(n) if shuffle
             else np.arange(n)).tolist()
    for k in range(r):
        s = DistributedSampler(list(range(n)), num_replicas=r, rank=k, shuffle=shuffle,
                               seed=seed, drop_last=drop_last)
        s.set_epoch(epoch)
        assert list(s) == torch_reference(n, r, k, drop_last, order)
        assert len(s) == s.num_samples and s.total_size == s.num_samples * r


def test_shuffle_is_the_same_in_every_worker_and_changes_with_the_epoch():
    shards = _shards(12, 3, seed=7)
    assert sorted(sum(shards, [])) == list(range(12))       # a partition of the examples
    assert shards == _shards(12, 3, seed=7)
    assert shards != _shards(12, 3, seed=8)
    s = DistributedSampler(12, 3, 0, seed=7)
    first = list(s)
    s.set_epoch(1)
    second = list(s)
    assert first != second
    s.set_epoch(0)
    assert list(s) == first


def test_next_epoch_unless_set_by_hand():
    s = DistributedSampler(8, 2, 0)
    s.next_epoch()
    assert s.epoch == 1
    s.set_epoch(5)
    s.next_epoch()                  # the epoch set by hand is the one that begins
    assert s.epoch == 5
    s.next_epoch()
    assert s.epoch == 6


@pytest.mark.parametrize('kw, exc, text', [
    (dict(num_replicas=2, rank=2), ValueError, r'invalid rank 2, rank should be in the '
                                               r'interval \[0, 1\]'),
    (dict(num_replicas=0, rank=0), ValueError, 'num_replicas must be >= 1'),
    (dict(num_replicas=2, rank=-1), ValueError, 'rank must be >= 0'),
    (dict(num_replicas=2.0, rank=0), TypeError, 'num_replicas must be an int'),
    (dict(num_replicas=2, rank=0, seed=-1), ValueError, 'seed must be >= 0')])
def test_bad_arguments(kw, exc, text):
    with pytest.raises(exc, match=text):
        DistributedSampler(10, **kw)
    with pytest.raises(TypeError, match='number of examples or have a len'):
        DistributedSampler(object(), 1, 0)


def test_defaults_come_from_the_launcher(monkeypatch):
    for v in ('DMLC_NUM_WORKER', 'DMLC_WORKER_ID', 'PMI_SIZE', 'PMI_RANK',
              'OMPI_COMM_WORLD_SIZE', 'OMPI_COMM_WORLD_RANK'):
        monkeypatch.delenv(v, raising=False)
    assert job_rank_and_size() == (0, 1)
    monkeypatch.setenv('PMI_SIZE', '4')
    monkeypatch.setenv('PMI_RANK', '1')
    assert job_rank_and_size() == (1, 4)
    monkeypatch.setenv('DMLC_NUM_WORKER', '3')
    monkeypatch.setenv('DMLC_WORKER_ID', '2')
    s = DistributedSampler(10, shuffle=False)
    assert (s.num_replicas, s.rank, list(s)) == (3, 2, [2, 5, 8, 1])


# ----------------------------------------------------------------------------- NDArrayIter
def _epoch_rows(it):
    return np.concatenate([b.data[0].asnumpy()[:b.data[0].shape[0] - b.pad, 0]
                           for b in it]).astype(int).tolist()


def test_ndarray_iter_iterates_the_samplers_indices():
    x = np.arange(10, dtype='f').reshape(10, 1) * np.ones((1, 2), 'f')
    y = np.arange(10, dtype='f') + 100
    s = DistributedSampler(10, num_replicas=3, rank=1, shuffle=False)
    it = mx.io.NDArrayIter(x, y, batch_size=2, sampler=s)
    batches = list(it)
    assert [b.data[0].asnumpy()[:, 0].tolist() for b in batches] == [[1, 4], [7, 0]]
    assert [b.label[0].asnumpy().tolist() for b in batches] == [[101, 104], [107, 100]]
    assert it.provide_data[0].shape == (2, 2)


def test_ndarray_iter_reset_moves_to_the_next_epoch():
    x = np.arange(12, dtype='f').reshape(12, 1)
    s = DistributedSampler(12, num_replicas=2, rank=0, seed=4)
    it = mx.io.NDArrayIter(x, None, batch_size=3, sampler=s)
    want = []
    for epoch in range(3):
        ref = DistributedSampler(12, num_replicas=2, rank=0, seed=4)
        ref.set_epoch(epoch)
        want.append(list(ref))
    got = [_epoch_rows(it)]
    it.reset()
    got.append(_epoch_rows(it))
    it.reset()
    got.append(_epoch_rows(it))
    assert got == want and s.epoch == 2
    s.set_epoch(0)                  # set by hand: the reset begins that epoch
    it.reset()
    assert _epoch_rows(it) == want[0]


def test_module_fit_reshuffles_every_epoch():
    """Module.fit resets the iterator after each epoch: the sampler gives a new order."""
    x = np.arange(8, dtype='f').reshape(8, 1)
    seen = []

    class Recording(mx.io.NDArrayIter):
        def next(self):
            batch = super().next()
            seen.append(batch.data[0].asnumpy()[:, 0].astype(int).tolist())
            return batch
    s = DistributedSampler(8, num_replicas=2, rank=1, seed=1)
    it = Recording(x, np.zeros(8, 'f'), batch_size=4, sampler=s, label_name='lro_label')
    net = mx.sym.LinearRegressionOutput(mx.sym.FullyConnected(mx.sym.var('data'),
                                                              num_hidden=1), name='lro')
    mod = mx.mod.Module(net, label_names=['lro_label'])
    mod.fit(it, num_epoch=3, optimizer='sgd')
    want = []
    for epoch in range(3):
        ref = DistributedSampler(8, num_replicas=2, rank=1, seed=1)
        ref.set_epoch(epoch)
        want.append(list(ref))
    assert seen == want


@pytest.mark.parametrize('kw, exc, text', [
    (dict(shuffle=True), ValueError, 'shuffle=True or a sampler, not both'),
    (dict(num_parts=2, part_index=0), ValueError, 'num_parts/part_index or a sampler'),
])
def test_ndarray_iter_refuses_a_sampler_with_its_own_sharding(kw, exc, text):
    with pytest.raises(exc, match=text):
        mx.io.NDArrayIter(np.zeros((4, 1)), None, 2, sampler=DistributedSampler(4, 2, 0),
                          **kw)


def test_ndarray_iter_checks_the_samplers_length():
    with pytest.raises(ValueError, match='sampler was made for 5 examples, the data has 4'):
        mx.io.NDArrayIter(np.zeros((4, 1)), None, 2, sampler=DistributedSampler(5, 2, 0))
    with pytest.raises(TypeError, match='DistributedSampler'):
        mx.io.NDArrayIter(np.zeros((4, 1)), None, 2, sampler=[0, 1])
