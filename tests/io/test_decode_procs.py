"""ImageRecordIter's decoding processes (symgraph/io/_decode_procs.py): the same batches as
the decoding threads (shuffled, wrapped, reset mid-pass, several threads, the detection
iterator), batches kept by the caller are never overwritten, a worker's exception is
raised in the main process with the worker's traceback, a killed worker is reported, and
closing leaves no process or shared-memory file."""
import io
import multiprocessing
import os
import signal
import time

import numpy as np
import pytest

import symgraph as mx
from symgraph import recordio
from symgraph.io import _decode_procs, _record_batches

Image = pytest.importorskip('PIL.Image')
pytestmark = pytest.mark.skipif(not _decode_procs.available(),
                                reason='decoding processes need the fork start method')


def _jpeg(h, w, seed):
    rs = np.random.RandomState(seed)
    yy, xx = np.mgrid[0:h, 0:w]
    img = np.stack([xx * 5.0, yy * 7.0, (xx + yy) * 3.0], -1) + rs.randint(-30, 30, (h, w, 3))
    buf = io.BytesIO()
    Image.fromarray(np.clip(img, 0, 255).astype(np.uint8)).save(buf, 'JPEG')
    return buf.getvalue()


@pytest.fixture(scope='module')
def rec(tmp_path_factory):
    d = tmp_path_factory.mktemp('procs')
    w = recordio.MXIndexedRecordIO(str(d / 'r.idx'), str(d / 'r.rec'), 'w')
    for i in range(27):
        w.write_idx(i, recordio.pack(recordio.IRHeader(0, float(i), i, 0),
                                     _jpeg(20 + i % 3, 21 + i % 4, i)))
    w.close()
    return str(d / 'r.rec'), str(d / 'r.idx')


def _make(rec, processes, monkeypatch, **kw):
    monkeypatch.setattr(_record_batches, '_PROCESSES', processes)
    monkeypatch.setattr(_decode_procs, 'MIN_RECORDS', 0)
    args = dict(path_imgrec=rec[0], path_imgidx=rec[1], data_shape=(3, 18, 18),
                batch_size=4, rand_crop=True, rand_mirror=True, preprocess_threads=2)
    args.update(kw)
    it = mx.io.ImageRecordIter(**args)
    assert (it.handle._procs is not None) == processes
    return it


def _passes(it, n=3, stop_early=None):
    out = []
    for p in range(n):
        it.reset()
        for i, b in enumerate(it):
            out.append((b.data[0].asnumpy().copy(), b.label[0].asnumpy().copy(), b.pad))
            if stop_early is not None and p == 0 and i == stop_early:
                break                   # reset mid-pass: the prefetched batches are dropped
    return out


@pytest.mark.parametrize('kw', [{}, dict(shuffle=True, seed=4), dict(round_batch=False),
                                dict(preprocess_threads=3, prefetch_buffer=1, dtype='uint8'),
                                dict(resize=24, mean_r=120, std_r=50)])
def test_processes_give_the_batches_of_the_threads(rec, monkeypatch, kw):
    threads = _passes(_make(rec, False, monkeypatch, **kw), stop_early=2)
    it = _make(rec, True, monkeypatch, **kw)
    procs = _passes(it, stop_early=2)
    assert len(threads) == len(procs) > 14
    for (x0, y0, p0), (x1, y1, p1) in zip(threads, procs):
        assert x0.dtype == x1.dtype and p0 == p1
        np.testing.assert_array_equal(x0, x1)
        np.testing.assert_array_equal(y0, y1)
    it.close()


def test_kept_batches_are_not_overwritten_and_slots_are_reused(rec, monkeypatch):
    it = _make(rec, True, monkeypatch, prefetch_buffer=2)
    kept, copies = [], []
    for b in it:                        # every batch of a pass kept while the rest come
        kept.append((b.data[0], b.label[0]))
        copies.append((b.data[0].asnumpy().copy(), b.label[0].asnumpy().copy()))
    for (x, y), (cx, cy) in zip(kept, copies):
        np.testing.assert_array_equal(x.asnumpy(), cx)
        np.testing.assert_array_equal(y.asnumpy(), cy)
    del kept, x, y
    made = it.handle._procs._slots._count
    assert made >= len(copies)
    for _ in range(4):
        it.reset()
        for b in it:
            pass
    assert it.handle._procs._slots._count == made           # no new slot after the first
    it.close()


def test_a_worker_error_is_raised_with_its_traceback(tmp_path, monkeypatch):
    w = recordio.MXIndexedRecordIO(str(tmp_path / 'b.idx'), str(tmp_path / 'b.rec'), 'w')
    for i in range(8):
        payload = _jpeg(20, 20, i) if i != 5 else b'\xff\xd8 not a jpeg'
        w.write_idx(i, recordio.pack(recordio.IRHeader(0, float(i), i, 0), payload))
    w.close()
    it = _make((str(tmp_path / 'b.rec'), str(tmp_path / 'b.idx')), True, monkeypatch)
    assert next(it).label[0].asnumpy().tolist() == [0, 1, 2, 3]
    with pytest.raises(Exception) as info:
        next(it)
    assert 'Traceback' in str(info.value.__cause__)
    procs = list(it.handle._procs._procs)
    it.close()
    assert all(p.exitcode is not None for p in procs)


def test_a_killed_worker_is_reported_and_close_leaves_nothing(rec, monkeypatch):
    it = _make(rec, True, monkeypatch)
    pool = it.handle._procs
    directory, procs = pool._directory, list(pool._procs)
    next(it)
    assert os.path.isdir(directory) and len(multiprocessing.active_children()) >= 2
    os.kill(procs[0].pid, signal.SIGKILL)
    procs[0].join(5)
    with pytest.raises(RuntimeError, match='decoding process %d exited' % procs[0].pid):
        for _ in range(10):
            it.reset()
            for b in it:
                pass
    it.close()
    end = time.time() + 5
    while any(p.is_alive() for p in procs) and time.time() < end:
        time.sleep(0.05)
    assert not any(p.is_alive() for p in procs) and not os.path.exists(directory)
