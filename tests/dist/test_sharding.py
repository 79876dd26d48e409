"""NDArrayIter(num_parts=, part_index=) and NDArrayIter(sampler=DistributedSampler):
one shard per worker, equal sizes."""
import numpy as np
import pytest

import symgraph as mx


def _rows(it):
    it.reset()
    return np.concatenate([b.data[0].asnumpy()[:b.data[0].shape[0] - b.pad, 0]
                           for b in it]).tolist()


def test_parts_are_contiguous_equal_and_padded_from_the_start():
    x = np.arange(10, dtype='f').reshape(10, 1)
    y = np.arange(10, dtype='f')
    parts = [mx.io.NDArrayIter(x, y, 2, num_parts=3, part_index=k) for k in range(3)]
    assert [_rows(p) for p in parts] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 0, 1]]
    assert [sum(1 for _ in p) for p in (it for it in parts if not it.reset())] == [2, 2, 2]
    parts[2].reset()
    labels = [b.label[0].asnumpy().tolist() for b in parts[2]]
    assert labels == [[8, 9], [0, 1]]
    # one part is the whole data
    assert _rows(mx.io.NDArrayIter(x, y, 5, num_parts=1, part_index=0)) == list(range(10))


def test_parts_keep_the_dtype_and_shuffle_within_the_part():
    x = np.arange(12, dtype='f').reshape(12, 1)
    it = mx.io.NDArrayIter(mx.nd.array(x, dtype='float64'), None, 3, num_parts=2,
                           part_index=1)
    assert next(iter(it)).data[0].dtype == np.float64
    mx.random.seed(0)
    np.random.seed(0)
    it = mx.io.NDArrayIter(x, None, 3, shuffle=True, num_parts=2, part_index=1)
    assert sorted(_rows(it)) == list(range(6, 12))


@pytest.mark.parametrize('kw, exc, text', [
    ({'num_parts': 2, 'part_index': 2}, ValueError,
     'part_index 2 must lie in \\[0, num_parts=2\\)'),
    ({'num_parts': 0, 'part_index': 0}, ValueError, 'part_index 0 must lie'),
    ({'num_parts': 2.0, 'part_index': 0}, TypeError, 'num_parts must be an int'),
    ({'num_parts': 2, 'part_index': True}, TypeError, 'part_index must be an int')])
def test_bad_parts(kw, exc, text):
    with pytest.raises(exc, match=text):
        mx.io.NDArrayIter(np.zeros((4, 1)), None, 2, **kw)


SAMPLER_WORKER = """
import sys
import numpy as np
import symgraph as mx
kv = mx.kv.create('dist_sync')
x = np.arange(11, dtype='f').reshape(11, 1)
# rank and size from the launcher (DMLC_WORKER_ID / DMLC_NUM_WORKER)
s = mx.io.DistributedSampler(11, seed=5)
assert (s.rank, s.num_replicas) == (kv.rank, kv.num_workers), (s, kv.rank)
it = mx.io.NDArrayIter(x, None, batch_size=2, sampler=s)
epochs = []
for epoch in range(2):
    rows, batches = [], 0
    for b in it:
        rows += b.data[0].asnumpy()[:2 - b.pad, 0].astype(int).tolist()
        batches += 1
    # every worker has as many batches: the all-reduce of each one meets the others
    total = np.array([batches], 'f')
    kv.allreduce_host(total)
    assert total[0] == batches * kv.num_workers, (total, batches)
    epochs.append(rows)
    it.reset()
np.save('rows%d.npy' % kv.rank, np.array(epochs))
"""


def test_sampler_over_two_launched_workers_partitions_the_examples(tmp_path):
    from mpi_util import launch, check
    check(launch(tmp_path, 2, SAMPLER_WORKER))
    rows = [np.load(tmp_path / ('rows%d.npy' % r)) for r in range(2)]
    for epoch in range(2):
        got = sorted(rows[0][epoch].tolist() + rows[1][epoch].tolist())
        # 11 examples over 2 workers: 6 each, one example padded from the order's start
        assert len(rows[0][epoch]) == len(rows[1][epoch]) == 6
        assert set(got) == set(range(11)) and len(got) == 12
    assert rows[0][0].tolist() != rows[0][1].tolist()      # reshuffled in the 2nd epoch
