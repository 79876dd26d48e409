"""DataLoader with worker processes and threads (symgraph/gluon/data/dataloader.py and
workers.py) and the batchify helpers (batchify.py): batches equal to the in-process ones for
every sampler and last_batch setting, the shared-memory transport, errors and timeouts from
workers, clean shutdown (no child process or shared-memory file left), and Stack/Pad/Tuple
against NumPy. Each test takes a few seconds at most on two cores."""
import gc
import multiprocessing
import os
import pickle
import signal
import threading
import time

import numpy as np
import pytest

import symgraph as mx
from symgraph.gluon import data as gdata
from symgraph.gluon.data import batchify, workers
from symgraph.gluon.data.dataloader import DataLoaderTimeoutError

FORK = 'fork' in multiprocessing.get_all_start_methods()
needs_fork = pytest.mark.skipif(not FORK, reason='the fork start method is not available')


class ExitAt(gdata.Dataset):
    """Sample ``bad`` ends its worker process at once (as the OOM killer would)."""

    def __init__(self, n, bad):
        self._n, self._bad = n, bad

    def __len__(self):
        return self._n

    def __getitem__(self, i):
        if i == self._bad and multiprocessing.parent_process() is not None:
            os._exit(3)
        return np.float32(i)


class SlowAt(gdata.Dataset):
    """Samples i -> (i * ones(3), i); index ``bad`` raises or sleeps (picklable: spawn)."""

    def __init__(self, n, bad=None, sleep=None):
        self._n, self._bad, self._sleep = n, bad, sleep

    def __len__(self):
        return self._n

    def __getitem__(self, i):
        if i == self._bad:
            if self._sleep:
                time.sleep(self._sleep)
            else:
                _fail_deep_inside(i)
        return np.full(3, i, dtype=np.float32), i


def _fail_deep_inside(i):
    raise ValueError('sample %d is corrupt' % i)


def _no_children(timeout=5.0):
    """True once this process has no live child process (waits up to ``timeout``)."""
    end = time.time() + timeout
    while multiprocessing.active_children():
        if time.time() > end:
            return False
        time.sleep(0.05)
    return True


def _empty_dir(path, timeout=5.0):
    end = time.time() + timeout
    while os.path.isdir(path) and os.listdir(path):
        if time.time() > end:
            return False
        time.sleep(0.05)
    return True


def _values(loader, epochs=1):
    out = []
    for _ in range(epochs):
        for batch in loader:
            out.append([b.asnumpy() if isinstance(b, mx.nd.NDArray) else b for b in batch])
    return out


def _same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert len(x) == len(y)
        for u, v in zip(x, y):
            assert u.dtype == v.dtype and u.shape == v.shape
            np.testing.assert_array_equal(u, v)


@pytest.fixture(autouse=True)
def _leaves_no_child():
    yield
    gc.collect()
    assert _no_children(), multiprocessing.active_children()


@needs_fork
@pytest.mark.parametrize('last_batch', ['keep', 'discard', 'rollover'])
@pytest.mark.parametrize('shuffle', [False, True])
def test_worker_batches_equal_in_process_batches(last_batch, shuffle):
    ds = gdata.ArrayDataset(np.arange(46, dtype=np.float32).reshape(23, 2),
                            np.arange(23, dtype=np.int64))
    got = {}
    for workers_ in (0, 2):
        np.random.seed(7)       # RandomSampler draws in this process, from NumPy's state
        loader = gdata.DataLoader(ds, batch_size=5, shuffle=shuffle, last_batch=last_batch,
                                  num_workers=workers_)
        got[workers_] = _values(loader, epochs=2)     # rollover carries over an epoch
    _same(got[0], got[2])
    assert len(got[0]) == {'keep': 10, 'discard': 8, 'rollover': 9}[last_batch]


@needs_fork
@pytest.mark.parametrize('prefetch', [0, 1, None])
def test_worker_batches_with_samplers_and_prefetch(prefetch):
    ds = SlowAt(17)
    batch_sampler = gdata.BatchSampler(gdata.FilterSampler(lambda s: s[1] % 3 != 1, ds), 4,
                                       'keep')
    ref = _values(gdata.DataLoader(ds, batch_sampler=batch_sampler))
    loader = gdata.DataLoader(ds, batch_sampler=batch_sampler, num_workers=2,
                              prefetch=prefetch)
    got = _values(loader)
    _same(ref, got)
    assert got[0][1].tolist() == [0, 2, 3, 5]
    assert len(loader) == len(ref) == 3


@needs_fork
def test_worker_batches_come_through_shared_memory():
    ds = gdata.SimpleDataset(np.arange(24, dtype=np.float64).reshape(6, 4))
    loader = gdata.DataLoader(ds, batch_size=4, num_workers=1)
    first, second = list(loader)
    # MXNet's workers hand batches over in shared CPU memory: context cpu_shared(0)
    assert first.context == mx.Context('cpu_shared', 0) and first.dtype == np.float64
    np.testing.assert_array_equal(first.asnumpy(), np.arange(16).reshape(4, 4))
    np.testing.assert_array_equal(second.asnumpy(), np.arange(16, 24).reshape(2, 4))
    first[:] = 1                      # a batch is an ordinary, writable array
    assert (first.asnumpy() == 1).all() and (second.asnumpy()[0, 0] == 16)
    assert _empty_dir(loader._pool.directory)      # the files are unlinked once mapped
    loader.close()


@needs_fork
def test_worker_slots_are_recycled_but_never_under_a_live_batch():
    ds = gdata.SimpleDataset(np.arange(400, dtype=np.float32).reshape(100, 4))
    loader = gdata.DataLoader(ds, batch_size=4, num_workers=2, prefetch=2)
    for epoch in range(2):
        kept = None
        for i, batch in enumerate(loader):
            # each batch holds its own rows, also while a kept one is alive
            np.testing.assert_array_equal(batch.asnumpy()[:, 0], np.arange(16 * i, 16 * i + 16, 4))
            if i == 3:
                kept = batch[1:3]           # a view keeps the whole slot busy
            del batch
        np.testing.assert_array_equal(kept.asnumpy()[:, 0], [52, 56])
        del kept
    # 50 batches went through a handful of slots (2 workers, 4 prefetched, 1 kept)
    assert len(loader._pool._maps._maps) <= 2 * 6
    assert _empty_dir(loader._pool.directory)      # the slot files are unlinked once mapped
    loader.close()


def test_transport_pickles_descriptions_not_arrays(tmp_path):
    big = np.random.RandomState(0).rand(256, 512).astype(np.float32)      # 512 KiB
    batch = [mx.nd.array(big), (np.arange(3, dtype=np.int16), 'label'), {'k': 7}]
    path, tree = workers.to_shared(batch, str(tmp_path))
    assert len(pickle.dumps(tree)) < 1024 and os.path.getsize(path) >= big.nbytes
    x, (y, name), extra = workers.from_shared(path, tree)
    assert not os.path.exists(path)                 # unlinked, still mapped
    np.testing.assert_array_equal(x.asnumpy(), big)
    assert x.context == mx.cpu() and y.dtype == np.int16 and y.tolist() == [0, 1, 2]
    assert name == 'label' and extra == {'k': 7}
    assert workers.from_shared(*workers.to_shared([1, 'a'], str(tmp_path))) == [1, 'a']


@needs_fork
def test_worker_exception_is_raised_with_the_worker_traceback():
    loader = gdata.DataLoader(SlowAt(12, bad=6), batch_size=4, num_workers=2)
    it = iter(loader)
    assert next(it)[1].asnumpy().tolist() == [0, 1, 2, 3]
    with pytest.raises(ValueError, match='sample 6 is corrupt') as info:
        next(it)
    cause = str(info.value.__cause__)
    assert 'Traceback' in cause and '_fail_deep_inside' in cause and '__getitem__' in cause
    directory = loader._pool.directory
    del it
    gc.collect()
    assert _empty_dir(directory)    # the batch prefetched after the failed one is freed
    # the pool survives a dataset's error: the next epoch runs (and fails at the same place)
    assert [b[1].shape for b in gdata.DataLoader(SlowAt(8, bad=9), batch_size=4,
                                                 num_workers=2)] == [(4,), (4,)]
    with pytest.raises(ValueError):
        list(loader)


@needs_fork
def test_dropping_an_iterator_mid_epoch_leaves_no_process_or_file():
    loader = gdata.DataLoader(SlowAt(40), batch_size=2, num_workers=2, prefetch=6)
    it = iter(loader)
    next(it)
    assert len(multiprocessing.active_children()) == 2
    directory = loader._pool.directory
    del it
    gc.collect()
    assert _empty_dir(directory)            # prefetched batches dropped on arrival
    del loader
    gc.collect()
    assert _no_children() and not os.path.exists(directory)
    for batch in gdata.DataLoader(SlowAt(40), batch_size=2, num_workers=2):
        break                                # the loader is a temporary here
    del batch
    gc.collect()
    assert _no_children()


@needs_fork
def test_timeout_raises_and_stops_the_pool():
    loader = gdata.DataLoader(SlowAt(8, bad=4, sleep=3), batch_size=4, num_workers=2,
                              timeout=0.5)
    start = time.time()
    with pytest.raises(DataLoaderTimeoutError, match='in 0.5 seconds') as info:
        list(loader)
    assert isinstance(info.value, multiprocessing.TimeoutError)       # MXNet's error
    assert isinstance(info.value, TimeoutError) and time.time() - start < 2.5
    assert _no_children(1.0)
    with pytest.raises(ValueError, match='timeout must be positive'):
        gdata.DataLoader(SlowAt(2), batch_size=1, num_workers=1, timeout=-1)


@needs_fork
def test_ctrl_c_while_waiting_interrupts_and_workers_survive():
    loader = gdata.DataLoader(SlowAt(8, bad=0, sleep=1.5), batch_size=4, num_workers=2)
    it = iter(loader)
    children = multiprocessing.active_children()

    def ctrl_c():           # a terminal's Ctrl-C reaches the whole process group
        for child in children:
            os.kill(child.pid, signal.SIGINT)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Timer(0.3, ctrl_c).start()
    with pytest.raises(KeyboardInterrupt):
        next(it)
    assert all(c.is_alive() for c in children)      # workers ignore SIGINT
    del it
    assert [b[1].asnumpy().tolist() for b in gdata.DataLoader(SlowAt(8), batch_size=4,
                                                              num_workers=1)] == \
        [[0, 1, 2, 3], [4, 5, 6, 7]]
    loader.close()
    assert _no_children()


def test_thread_pool_batches_and_errors():
    ds = SlowAt(11)
    ref = _values(gdata.DataLoader(ds, batch_size=3))
    loader = gdata.DataLoader(ds, batch_size=3, num_workers=2, thread_pool=True)
    got = _values(loader)
    _same(ref, got)
    assert not multiprocessing.active_children()         # threads, not processes
    with pytest.raises(ValueError, match='sample 4 is corrupt'):
        list(gdata.DataLoader(SlowAt(6, bad=4), batch_size=2, num_workers=2,
                              thread_pool=True))
    loader.close()


@needs_fork
def test_pin_memory_and_auto_reload_with_workers():
    ds = SlowAt(6)
    loader = gdata.DataLoader(ds, batch_size=4, num_workers=1, pin_memory=True,
                              auto_reload=True, try_nopython=True)
    for _ in range(2):
        x, y = next(iter(loader))
        assert x.context == mx.cpu_pinned(0) and y.asnumpy().tolist() == [0, 1, 2, 3]
    loader.close()


@pytest.mark.skipif('spawn' not in multiprocessing.get_all_start_methods(),
                    reason='no spawn start method')
def test_spawn_start_method():
    ds = SlowAt(7)
    loader = gdata.DataLoader(ds, batch_size=3, num_workers=1,
                              multiprocessing_context='spawn',
                              batchify_fn=batchify.Tuple(batchify.Stack(), batchify.Stack()))
    _same(_values(gdata.DataLoader(ds, batch_size=3)), _values(loader))
    loader.close()
    with pytest.raises(ValueError, match='multiprocessing_context must be one of'):
        gdata.DataLoader(ds, batch_size=3, multiprocessing_context='telepathy')


def test_stack_pad_tuple_values():
    rs = np.random.RandomState(1)
    samples = [(rs.rand(n, 2).astype(np.float32), np.int64(n)) for n in (3, 1, 4)]
    x, n = batchify.Tuple(batchify.Pad(pad_val=-1), batchify.Stack())(samples)
    ref = np.full((3, 4, 2), -1, dtype=np.float32)
    for i, (a, _) in enumerate(samples):
        ref[i, :len(a)] = a
    np.testing.assert_array_equal(x.asnumpy(), ref)
    assert x.dtype == np.float32 and n.dtype == np.int64 and n.asnumpy().tolist() == [3, 1, 4]
    # axis, ret_length, dtype and round_to as GluonNLP
    padded, lengths = batchify.Pad(axis=1, ret_length=True, dtype='float64', round_to=4)(
        [np.ones((2, 3)), np.ones((2, 5))])
    assert padded.shape == (2, 2, 8) and padded.dtype == np.float64
    assert padded.asnumpy()[0, :, 3:].sum() == 0 and padded.asnumpy()[1, :, :5].sum() == 10
    assert lengths.dtype == np.int32 and lengths.asnumpy().tolist() == [3, 5]
    stacked = batchify.Stack()([mx.nd.ones((2,)), mx.nd.zeros((2,))])
    assert stacked.asnumpy().tolist() == [[1, 1], [0, 0]]
    assert batchify.Stack(dtype='int32')([[1, 2]]).dtype == np.int32
    group = batchify.Group([batchify.List(), batchify.Stack()])(samples)
    assert isinstance(group[0], list) and len(group[0]) == 3
    d = batchify.Dict({'a': batchify.Stack()})([{'a': 1}, {'a': 2}])
    assert d['a'].asnumpy().tolist() == [1, 2]


def test_batchify_errors_name_the_problem():
    with pytest.raises(ValueError, match='one shape'):
        batchify.Stack()([np.ones(2), np.ones(3)])
    with pytest.raises(ValueError, match='differ in axes other than 0'):
        batchify.Pad()([np.ones((2, 3)), np.ones((2, 4))])
    with pytest.raises(ValueError, match='axis 2 is out of range'):
        batchify.Pad(axis=2)([np.ones((2, 3))])
    with pytest.raises(ValueError, match='rank >= 1'):
        batchify.Pad()([1, 2])
    with pytest.raises(ValueError, match='2 fields'):
        batchify.Tuple(batchify.Stack(), batchify.Stack())([(1, 2, 3)])
    with pytest.raises(TypeError, match='not callable'):
        batchify.Tuple(batchify.Stack(), 3)
    with pytest.raises(ValueError, match='lack the keys'):
        batchify.Dict({'a': batchify.Stack()})([{'b': 1}])


@needs_fork
def test_workers_with_batchify_helpers():
    samples = [np.arange(n, dtype=np.int32) for n in (1, 4, 2, 3, 5)]
    ds = gdata.ArrayDataset(gdata.SimpleDataset(samples), np.arange(5))
    fn = batchify.Tuple(batchify.Pad(pad_val=9, ret_length=True), batchify.Stack())
    ref = gdata.DataLoader(ds, batch_size=2, batchify_fn=fn)
    got = gdata.DataLoader(ds, batch_size=2, batchify_fn=fn, num_workers=2)
    for (ra, rb), (ga, gb) in zip(ref, got):
        _same([[r.asnumpy() for r in ra]], [[g.asnumpy() for g in ga]])
        np.testing.assert_array_equal(rb.asnumpy(), gb.asnumpy())
    assert ga[0].context == mx.cpu()      # the context the worker's batch had


def test_start_method_default_and_environment(monkeypatch):
    monkeypatch.delenv('SYMGRAPH_DATALOADER_START_METHOD', raising=False)
    assert workers.default_start_method() == ('fork' if FORK else
                                              multiprocessing.get_start_method())
    monkeypatch.setenv('SYMGRAPH_DATALOADER_START_METHOD', 'spawn')
    assert workers.default_start_method() == 'spawn'
    monkeypatch.setenv('SYMGRAPH_DATALOADER_START_METHOD', 'teleport')
    with pytest.raises(ValueError, match='SYMGRAPH_DATALOADER_START_METHOD must be fork'):
        workers.default_start_method()


@needs_fork
def test_a_worker_that_dies_is_an_error_not_a_hang():
    loader = gdata.DataLoader(ExitAt(12, bad=5), batch_size=2, num_workers=2, timeout=60)
    start = time.time()
    with pytest.raises(workers.WorkerDiedError, match='exited with code 3'):
        list(loader)
    assert time.time() - start < 10              # not the 60 s timeout
    assert _no_children()                        # the pool is stopped
    # the next epoch starts a new pool (and meets the same sample)
    with pytest.raises(RuntimeError):
        list(loader)
    loader.close()
