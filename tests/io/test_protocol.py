"""DataDesc, DataBatch, the DataIter protocol (and user subclasses of it), ResizeIter,
PrefetchingIter."""
import gc
import pickle
import threading

import numpy as np
import pytest

import symgraph as mx


# ----------------------------------------------------------------------- DataDesc
def test_datadesc_is_a_name_shape_pair_with_dtype_and_layout():
    d = mx.io.DataDesc('data', (2, 3))
    assert d == ('data', (2, 3)) and tuple(d) == ('data', (2, 3))
    name, shape = d
    assert (name, shape) == ('data', (2, 3)) and d[1] == (2, 3)
    assert d.dtype is np.float32 and d.layout == 'NCHW'
    assert repr(d) == "DataDesc[data,(2, 3),<class 'numpy.float32'>,NCHW]"
    assert str(d) == repr(d)
    e = mx.io.DataDesc('x', (4, 5, 6), np.int32, layout='TNC')
    assert repr(e) == "DataDesc[x,(4, 5, 6),<class 'numpy.int32'>,TNC]"
    assert hash(d) == hash(('data', (2, 3)))


def test_datadesc_copies_keep_dtype_and_layout():
    e = mx.io.DataDesc('x', (4, 5), np.int32, layout='NT')
    r = e._replace(shape=(8, 5))
    assert (r.name, r.shape, r.dtype, r.layout) == ('x', (8, 5), np.int32, 'NT')
    p = pickle.loads(pickle.dumps(e))
    assert (p.name, p.shape, p.dtype, p.layout) == ('x', (4, 5), np.int32, 'NT')


def test_datadesc_static_helpers():
    assert mx.io.DataDesc.get_batch_axis('NCHW') == 0
    assert mx.io.DataDesc.get_batch_axis('TNC') == 1
    assert mx.io.DataDesc.get_batch_axis(None) == 0
    assert mx.io.DataDesc.get_batch_axis('CHW') == -1
    lst = mx.io.DataDesc.get_list([('a', (1, 2)), ('b', (3,))],
                                  [('a', np.int32), ('b', np.float16)])
    assert [repr(x) for x in lst] == ["DataDesc[a,(1, 2),<class 'numpy.int32'>,NCHW]",
                                      "DataDesc[b,(3,),<class 'numpy.float16'>,NCHW]"]
    assert [x.dtype for x in mx.io.DataDesc.get_list([('a', (1,))], None)] == [np.float32]


# ---------------------------------------------------------------------- DataBatch
def test_databatch_fields_and_str():
    b = mx.io.DataBatch([mx.nd.zeros((2, 3))], [mx.nd.zeros((2,))], pad=1,
                        index=np.array([4, 5]), bucket_key=7,
                        provide_data=[mx.io.DataDesc('data', (2, 3))])
    assert b.pad == 1 and b.bucket_key == 7 and list(b.index) == [4, 5]
    assert b.provide_label is None and b.provide_data[0].name == 'data'
    assert str(b) == 'DataBatch: data shapes: [(2, 3)] label shapes: [(2,)]'
    assert str(mx.io.DataBatch([mx.nd.zeros((1,))])) == \
        'DataBatch: data shapes: [(1,)] label shapes: None'
    with pytest.raises(TypeError, match='data must be a list of NDArrays'):
        mx.io.DataBatch(mx.nd.zeros((1,)))
    with pytest.raises(TypeError, match='label must be a list of NDArrays'):
        mx.io.DataBatch([mx.nd.zeros((1,))], mx.nd.zeros((1,)))


# ----------------------------------------------------------------------- DataIter
class CountIter(mx.io.DataIter):
    """MXNet's own pattern for a user iterator: override next/reset/provide_*."""

    def __init__(self, n, batch_size):
        super().__init__(batch_size)
        self.n, self.cur = n, 0

    @property
    def provide_data(self):
        return [mx.io.DataDesc('data', (self.batch_size, 2))]

    @property
    def provide_label(self):
        return [mx.io.DataDesc('softmax_label', (self.batch_size,))]

    def reset(self):
        self.cur = 0

    def next(self):
        if self.cur >= self.n:
            raise StopIteration
        self.cur += 1
        return mx.io.DataBatch([mx.nd.full((self.batch_size, 2), self.cur)],
                               [mx.nd.zeros((self.batch_size,))], pad=0)


class GetIter(mx.io.DataIter):
    """The other pattern: iter_next + getdata/getlabel/getpad/getindex."""

    def __init__(self):
        super().__init__(batch_size=2)
        self.i = 0

    def iter_next(self):
        self.i += 1
        return self.i <= 2

    def getdata(self):
        return [mx.nd.full((2, 1), self.i)]

    def getlabel(self):
        return [mx.nd.zeros((2,))]

    def getpad(self):
        return self.i - 1

    def reset(self):
        self.i = 0


def test_user_iterator_by_next():
    it = CountIter(3, 4)
    assert iter(it) is it and it.batch_size == 4
    assert [b.data[0].asnumpy()[0, 0] for b in it] == [1, 2, 3]
    assert list(it) == []
    it.reset()
    assert next(it).data[0].asnumpy()[0, 0] == 1


def test_user_iterator_by_getters():
    it = GetIter()
    batches = list(it)
    assert [(b.data[0].asnumpy()[0, 0], b.pad, b.index) for b in batches] == \
        [(1, 0, None), (2, 1, None)]


def test_base_defaults():
    it = mx.io.DataIter()
    assert it.batch_size == 0 and it.getindex() is None
    assert it.iter_next() is None and it.getpad() is None
    with pytest.raises(StopIteration):
        it.next()


# ---------------------------------------------------------------------- ResizeIter
def _labels(it):
    return [b.label[0].asnumpy().tolist() for b in it]


def test_resize_longer_and_shorter():
    base = mx.io.NDArrayIter(np.zeros((6, 1)), np.arange(6), batch_size=2)
    it = mx.io.ResizeIter(base, 5)
    assert it.provide_data == base.provide_data and it.batch_size == 2
    assert _labels(it) == [[0, 1], [2, 3], [4, 5], [0, 1], [2, 3]]
    it.reset()
    assert _labels(it) == [[0, 1], [2, 3], [4, 5], [0, 1], [2, 3]]
    short = mx.io.ResizeIter(mx.io.NDArrayIter(np.zeros((6, 1)), np.arange(6),
                                               batch_size=2), 2, reset_internal=False)
    assert _labels(short) == [[0, 1], [2, 3]]
    short.reset()        # the inner iterator goes on where it was
    assert _labels(short) == [[4, 5], [0, 1]]


def test_resize_keeps_bucket_key_and_pad():
    base = mx.io.NDArrayIter(np.zeros((5, 1)), np.arange(5), batch_size=2)
    base.default_bucket_key = 9
    it = mx.io.ResizeIter(base, 3)
    assert it.default_bucket_key == 9
    assert [(b.pad, it.getpad()) for b in it] == [(0, 0), (0, 0), (1, 1)]


# ----------------------------------------------------------------- PrefetchingIter
def _no_prefetch_threads():
    return not any(t.name.startswith('PrefetchingIter') for t in threading.enumerate())


def test_prefetching_equals_its_source():
    def make():
        return mx.io.NDArrayIter(np.arange(14.0).reshape(7, 2), np.arange(7), batch_size=3,
                                 last_batch_handle='roll_over')
    ref, src = make(), make()
    with mx.io.PrefetchingIter(src) as it:
        assert it.provide_data == ref.provide_data and it.batch_size == 3
        for _ in range(3):
            want = [(b.data[0].asnumpy().tolist(), b.label[0].asnumpy().tolist(), b.pad)
                    for b in ref]
            got = [(b.data[0].asnumpy().tolist(), b.label[0].asnumpy().tolist(), b.pad)
                   for b in it]
            assert got == want and len(got) >= 2
            assert it.getpad() == want[-1][2]
            ref.reset()
            it.reset()
    assert _no_prefetch_threads()


def test_prefetching_several_with_renames():
    it1 = mx.io.NDArrayIter({'data': np.zeros((4, 2))}, {'l': np.zeros(4)}, batch_size=2)
    it2 = mx.io.NDArrayIter({'data': np.ones((4, 3))}, {'l': np.ones(4)}, batch_size=2)
    it = mx.io.PrefetchingIter([it1, it2], rename_data=[{'data': 'a'}, {'data': 'b'}],
                               rename_label=[{'l': 'la'}, {'l': 'lb'}])
    try:
        assert [repr(d) for d in it.provide_data] == [
            "DataDesc[a,(2, 2),<class 'numpy.float32'>,NCHW]",
            "DataDesc[b,(2, 3),<class 'numpy.float32'>,NCHW]"]
        assert [d.name for d in it.provide_label] == ['la', 'lb']
        batches = list(it)
        assert len(batches) == 2
        b = batches[0]
        assert [d.shape for d in b.data] == [(2, 2), (2, 3)]
        assert b.data[1].asnumpy().sum() == 6 and len(b.label) == 2
        assert [d.name for d in b.provide_data] == ['a', 'b']
    finally:
        it.close()
    assert _no_prefetch_threads()


def test_prefetching_threads_stop_when_collected():
    it = mx.io.PrefetchingIter(mx.io.NDArrayIter(np.zeros((4, 2)), batch_size=2))
    next(it)
    del it
    gc.collect()
    assert _no_prefetch_threads()


def test_prefetching_errors():
    a = mx.io.NDArrayIter(np.zeros((4, 2)), batch_size=2)
    with pytest.raises(KeyError, match=r"rename_data\[0\] has no entry for 'data'"):
        mx.io.PrefetchingIter([a], rename_data=[{'x': 'y'}])
    with pytest.raises(ValueError, match='rename_data must be a list of 1 dicts'):
        mx.io.PrefetchingIter([a], rename_data={'data': 'y'})
    with pytest.raises(ValueError, match='at least one iterator'):
        mx.io.PrefetchingIter([])
    b = mx.io.NDArrayIter(np.zeros((6, 2)), batch_size=2)
    c = mx.io.NDArrayIter(np.zeros((4, 2)), batch_size=2)
    it = mx.io.PrefetchingIter([b, c])
    try:
        next(it), next(it)
        with pytest.raises(ValueError, match='different numbers of batches'):
            next(it)
    finally:
        it.close()
    with pytest.raises(RuntimeError, match='closed'):
        next(it)
    assert _no_prefetch_threads()


class _Failing(CountIter):
    def next(self):
        if self.cur == 1:
            self.cur += 1
            raise OSError('disk gone')
        return super().next()


def test_prefetching_reraises_source_errors():
    it = mx.io.PrefetchingIter(_Failing(3, 2))
    try:
        next(it)
        with pytest.raises(OSError, match='disk gone'):
            next(it)
        assert next(it).data[0].asnumpy()[0, 0] == 3     # usable afterwards
        it.reset()
        assert next(it).data[0].asnumpy()[0, 0] == 1
    finally:
        it.close()
    assert _no_prefetch_threads()


def test_module_namespace():
    for name in ('DataDesc', 'DataBatch', 'DataIter', 'NDArrayIter', 'ResizeIter',
                 'PrefetchingIter', 'CSVIter', 'LibSVMIter', 'MNISTIter', 'MXDataIter'):
        assert getattr(mx.io, name).__name__ == name
    assert mx.io.io.DataBatch is mx.io.DataBatch
    assert mx.io.ImageRecordIter.__name__ == 'ImageRecordIter'     # io/image_record.py
    assert mx.io.ImageDetRecordIter.__name__ == 'ImageDetRecordIter'
    with pytest.raises(AttributeError, match="ImageRecordIter_v1 .* is not available in "
                                             "symgraph"):
        mx.io.ImageRecordIter_v1
    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        mx.io.Nope


def test_prefetching_close_during_a_fetch_returns():
    """close() while a thread is inside next(): the thread must not clear the stop signal
    after stop() set it (it then waited for ever, and close() with it: seen as a hung suite)."""
    import time

    class Slow(mx.io.NDArrayIter):
        def next(self):
            calls.append(1)
            if len(calls) == 2:                   # the fetch after the first batch was taken
                second.set()
            time.sleep(0.2)
            return super().next()

    for _ in range(3):
        calls, second = [], threading.Event()
        it = mx.io.PrefetchingIter(Slow(np.zeros((8, 2), np.float32), batch_size=2))
        next(it)                                  # the thread now fetches the second batch
        assert second.wait(5)                     # inside the slow next()
        closer = threading.Thread(target=it.close, daemon=True)
        closer.start()
        closer.join(10)
        assert not closer.is_alive(), 'PrefetchingIter.close() hung'
