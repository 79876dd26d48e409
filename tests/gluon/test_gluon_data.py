"""gluon.data: datasets and their views, the samplers, and the in-process DataLoader."""
import numpy as np
import pytest

import symgraph as mx
from symgraph.gluon import data as gdata
from symgraph.gluon.data.dataloader import default_batchify_fn, default_mp_batchify_fn


# ----------------------------------------------------------------------------- datasets
def test_array_dataset_of_arrays_lists_and_ndarrays():
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    y = mx.nd.array([5, 6, 7, 8])           # 1-D NDArray: read as NumPy
    names = ['a', 'b', 'c', 'd']
    ds = gdata.ArrayDataset(x, y, names)
    assert len(ds) == 4
    xi, yi, ni = ds[2]
    np.testing.assert_array_equal(xi, x[2])
    assert isinstance(yi, np.float32) and yi == 7 and ni == 'c'
    single = gdata.ArrayDataset(mx.nd.array(x))
    assert isinstance(single[1], mx.nd.NDArray) and single[1].shape == (3,)
    with pytest.raises(ValueError, match='same length'):
        gdata.ArrayDataset(x, [1, 2])
    with pytest.raises(ValueError, match='at least 1'):
        gdata.ArrayDataset()


def test_simple_dataset_and_iteration():
    ds = gdata.SimpleDataset([3, 1, 4])
    assert len(ds) == 3 and ds[1] == 1 and list(ds) == [3, 1, 4]


def test_transform_lazy_and_eager():
    calls = []

    def double(x, y):
        calls.append(x)
        return x * 2, y
    ds = gdata.ArrayDataset([1, 2, 3], ['a', 'b', 'c'])
    lazy = ds.transform(double)
    assert calls == []
    assert lazy[1] == (4, 'b') and calls == [2]
    eager = ds.transform(double, lazy=False)
    assert calls == [2, 1, 2, 3]
    assert isinstance(eager, gdata.SimpleDataset) and list(eager) == [(2, 'a'), (4, 'b'),
                                                                     (6, 'c')]
    assert list(gdata.SimpleDataset([1, 2]).transform(lambda v: -v)) == [-1, -2]
    assert list(ds.transform_first(lambda v: v + 10)) == [(11, 'a'), (12, 'b'), (13, 'c')]
    with pytest.raises(TypeError, match='callable'):
        ds.transform(3)


def test_filter_shard_take_sample():
    ds = gdata.SimpleDataset(list(range(10)))
    assert list(ds.filter(lambda v: v % 3 == 0)) == [0, 3, 6, 9]
    shards = [list(ds.shard(3, i)) for i in range(3)]
    assert shards == [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]]
    assert list(ds.take(3)) == [0, 1, 2]
    assert list(ds.take(None)) == list(range(10)) == list(ds.take(100))
    assert list(ds.sample(gdata.SequentialSampler(3, start=4))) == [4, 5, 6]
    with pytest.raises(TypeError, match='Invalid sampler type'):
        ds.sample([1, 2])
    with pytest.raises(ValueError, match='out of bound'):
        ds.shard(2, 2)
    with pytest.raises(ValueError, match='greater than 0'):
        ds.shard(0, 0)


# ----------------------------------------------------------------------------- samplers
def test_sequential_and_random_samplers():
    assert list(gdata.SequentialSampler(4)) == [0, 1, 2, 3]
    assert len(gdata.SequentialSampler(4, 2)) == 4
    np.random.seed(3)
    rs = gdata.RandomSampler(20)
    first, second = list(rs), list(rs)
    assert sorted(first) == list(range(20)) and first != second and len(rs) == 20
    assert all(isinstance(i, int) for i in first)
    with pytest.raises(ValueError, match='length'):
        gdata.SequentialSampler(-1)


def test_filter_sampler():
    ds = gdata.SimpleDataset(['a', 'bb', 'ccc', 'dd'])
    s = gdata.FilterSampler(lambda v: len(v) == 2, ds)
    assert list(s) == [1, 3] and len(s) == 2


@pytest.mark.parametrize('last_batch, batches', [
    ('keep', [[0, 1, 2], [3, 4, 5], [6]]),
    ('discard', [[0, 1, 2], [3, 4, 5]]),
])
def test_batch_sampler(last_batch, batches):
    bs = gdata.BatchSampler(gdata.SequentialSampler(7), 3, last_batch)
    assert list(bs) == batches and len(bs) == len(batches)


def test_batch_sampler_rollover_carries_the_rest_into_the_next_epoch():
    bs = gdata.BatchSampler(gdata.SequentialSampler(7), 3, 'rollover')
    assert len(bs) == 2
    assert list(bs) == [[0, 1, 2], [3, 4, 5]]
    assert len(bs) == 2             # (1 left + 7) // 3
    assert list(bs) == [[6, 0, 1], [2, 3, 4]]
    assert list(bs) == [[5, 6, 0], [1, 2, 3], [4, 5, 6]]


def test_batch_sampler_errors():
    with pytest.raises(ValueError, match="'keep', 'discard', or 'rollover'"):
        gdata.BatchSampler(gdata.SequentialSampler(3), 2, 'drop')
    with pytest.raises(ValueError, match='batch_size'):
        gdata.BatchSampler(gdata.SequentialSampler(3), 0)


# ----------------------------------------------------------------------------- DataLoader
def test_dataloader_batches_in_order_with_the_last_batch_kept():
    x = np.arange(20, dtype=np.float32).reshape(10, 2)
    y = np.arange(10, dtype=np.int32)
    loader = gdata.DataLoader(gdata.ArrayDataset(x, y), batch_size=4)
    batches = list(loader)
    assert len(loader) == 3 and len(batches) == 3
    assert [b[0].shape for b in batches] == [(4, 2), (4, 2), (2, 2)]
    np.testing.assert_array_equal(np.concatenate([b[0].asnumpy() for b in batches]), x)
    assert batches[0][1].dtype == np.int32
    np.testing.assert_array_equal(np.concatenate([b[1].asnumpy() for b in batches]), y)
    assert len(list(loader)) == 3           # a second epoch


def test_dataloader_shuffles_every_epoch_and_discards():
    ds = gdata.SimpleDataset(np.arange(10, dtype=np.float32))
    np.random.seed(0)
    loader = gdata.DataLoader(ds, batch_size=3, shuffle=True, last_batch='discard')
    a = np.concatenate([b.asnumpy() for b in loader])
    b = np.concatenate([b.asnumpy() for b in loader])
    assert len(a) == len(b) == 9 and len(loader) == 3
    assert not np.array_equal(a, b)
    assert len(set(a.tolist())) == 9


def test_dataloader_of_ndarray_samples_and_a_custom_batchify():
    ds = gdata.ArrayDataset(mx.nd.array(np.arange(12).reshape(6, 2)))
    batch = next(iter(gdata.DataLoader(ds, batch_size=4)))
    assert isinstance(batch, mx.nd.NDArray) and batch.shape == (4, 2)
    lists = list(gdata.DataLoader(gdata.SimpleDataset([1, 2, 3]), batch_size=2,
                                  batchify_fn=lambda samples: list(samples)))
    assert lists == [[1, 2], [3]]
    sampler = gdata.BatchSampler(gdata.SequentialSampler(3, start=1), 2, 'keep')
    got = [b.asnumpy().tolist() for b in gdata.DataLoader(gdata.SimpleDataset([0, 10, 20, 30]),
                                                          batch_sampler=sampler)]
    assert got == [[10, 20], [30]]


def test_dataloader_with_worker_threads():
    # worker processes and their shared memory: tests/gluon/test_dataloader_workers.py
    ds = gdata.SimpleDataset(np.arange(6, dtype=np.float32))
    loader = gdata.DataLoader(ds, batch_size=4, num_workers=2, thread_pool=True)
    assert [b.asnumpy().tolist() for b in loader] == [[0, 1, 2, 3], [4, 5]]


def test_dataloader_pin_memory():
    loader = gdata.DataLoader(gdata.SimpleDataset([[1.0], [2.0]]), batch_size=2,
                              pin_memory=True)
    batch = next(iter(loader))
    assert batch.context == mx.Context('cpu_pinned', 0)


def test_dataloader_argument_errors():
    ds = gdata.SimpleDataset([1, 2, 3])
    sampler = gdata.SequentialSampler(3)
    with pytest.raises(ValueError, match='batch_size must be specified'):
        gdata.DataLoader(ds)
    with pytest.raises(ValueError, match='shuffle must not be specified'):
        gdata.DataLoader(ds, batch_size=2, shuffle=True, sampler=sampler)
    with pytest.raises(ValueError, match='must not be specified if batch_sampler'):
        gdata.DataLoader(ds, batch_size=2, batch_sampler=gdata.BatchSampler(sampler, 2))
    with pytest.raises(ValueError, match='timeout must be positive'):
        gdata.DataLoader(ds, batch_size=2, timeout=0)
    with pytest.raises(TypeError, match='len\\(\\) and \\[\\]'):
        gdata.DataLoader(iter([1, 2]), batch_size=2)
    with pytest.raises(TypeError, match='batchify_fn must be callable'):
        gdata.DataLoader(ds, batch_size=2, batchify_fn='stack')


def test_default_batchify_functions():
    x = default_batchify_fn([(np.ones(2), 1, 0.5), (np.zeros(2), 0, 1.5)])
    assert [type(v) for v in x] == [mx.nd.NDArray] * 3
    assert x[0].shape == (2, 2) and x[1].dtype == np.int64 and x[2].dtype == np.float64
    shared = default_mp_batchify_fn([(mx.nd.ones(2), 1), (mx.nd.zeros(2), 0)])
    assert all(v.context == mx.Context('cpu_shared', 0) for v in shared)
    np.testing.assert_array_equal(shared[0].asnumpy(), [[1, 1], [0, 0]])
