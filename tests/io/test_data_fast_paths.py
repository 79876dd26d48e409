"""The data pipeline's fast paths (issue 30's speed work) give what the general paths give:
the direct JPEG decoder against Pillow's ``Image.open``, Compose's NumPy ``ToTensor`` +
``Normalize`` against the operators, the DataLoader workers' stacking in the batch file
against the batchify function, the sequential reader's large buffer against the indexed
reader; and the resize kernels the operators now share (nearest as OpenCV indexes it,
cubic / area / Lanczos in ``_image_resize``)."""
import io
import os

import numpy as np
import pytest

import symgraph as mx
from symgraph import autograd, recordio
from symgraph.gluon.data import dataloader as dl
from symgraph.gluon.data.vision import transforms as T

Image = pytest.importorskip('PIL.Image')


def _jpeg(img, **kw):
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, 'JPEG', **kw)
    return buf.getvalue()


def _image(h, w, seed=0):
    rs = np.random.RandomState(seed)
    yy, xx = np.mgrid[0:h, 0:w]
    base = np.stack([xx * 3.0, yy * 5.0, (xx + yy) * 2.0], -1) + rs.randint(-40, 40, (h, w, 3))
    return np.clip(base, 0, 255).astype(np.uint8)


@pytest.mark.parametrize('kw', [{}, {'progressive': True}, {'subsampling': 0},
                                {'subsampling': 1}, {'quality': 40, 'optimize': True}])
def test_direct_jpeg_decode_equals_pillow(kw, monkeypatch):
    monkeypatch.setattr(recordio, '_USE_OPENCV', False)
    data = _jpeg(_image(37, 53), **kw)
    want = np.asarray(Image.open(io.BytesIO(data)).convert('RGB'))
    rgbx = recordio._decode_jpeg_rgbx(data)
    assert rgbx.shape == (37, 53, 4)
    np.testing.assert_array_equal(rgbx[..., :3], want)
    rgb = recordio._decode_jpeg_rgb(memoryview(data))
    assert rgb.flags.c_contiguous and rgb.shape == (37, 53, 3)
    np.testing.assert_array_equal(rgb, want)


def test_thread_kept_jpeg_buffers_decode_as_pillow(monkeypatch):
    """ImageRecordIter's per-thread decoder (a buffer kept per image size, dropped beyond
    _KEEP_SIZES sizes) gives Image.open's pixels; another thread gets its own buffers."""
    import threading
    from symgraph.io import _image_decode
    monkeypatch.setattr(_image_decode, '_KEEP_SIZES', 2)
    decode = _image_decode._rgbx_decoder()
    sizes = [(37, 53), (37, 53), (20, 31), (37, 53), (12, 9), (37, 53)]
    got_all = []                            # (kept alive: ids stay distinct)
    for i, (h, w) in enumerate(sizes):
        data = _jpeg(_image(h, w, seed=i), progressive=i % 2 == 1)
        got = decode(memoryview(data))
        want = np.asarray(Image.open(io.BytesIO(data)).convert('RGB'))
        assert got.shape == (h, w, 4)
        np.testing.assert_array_equal(got[..., :3], want)
        got_all.append(got)
    # the (37, 53) images share a buffer until a third size drops the kept ones
    assert got_all[1] is got_all[0] and got_all[3] is got_all[0]
    assert got_all[5] is not got_all[0]
    data = _jpeg(_image(37, 53, seed=7))
    main = decode(data)
    other = []
    thread = threading.Thread(target=lambda: other.append(decode(data)))
    thread.start()
    thread.join()
    assert other[0] is not main
    np.testing.assert_array_equal(other[0], main)
    for bad in (_jpeg(_image(9, 9)[..., 0]), data[:len(data) // 2], b'', b'\xff\xd8\xff'):
        assert decode(bad) is None          # gray, truncated, not a JPEG


@pytest.mark.parametrize('kw', [{}, {'progressive': True}, {'subsampling': 0},
                                {'quality': 40, 'optimize': True}])
def test_opencv_jpeg_decode_within_one_grey_level_of_pillow(kw, monkeypatch):
    pytest.importorskip('cv2')
    data = _jpeg(_image(37, 53), **kw)
    want = np.asarray(Image.open(io.BytesIO(data)).convert('RGB')).astype(int)
    img, rgb = recordio._decode_jpeg_cv(memoryview(data))
    assert img.shape == (37, 53, 3)
    assert np.abs((img if rgb else img[..., ::-1]) - want).max() <= 1
    got = recordio._decode_jpeg_rgb(data)
    assert got.flags.c_contiguous and np.abs(got - want).max() <= 1
    for bad in (_jpeg(_image(9, 9)[..., 0]), data[:len(data) // 2], b'', b'\xff\xd8\xff'):
        assert recordio._decode_jpeg_cv(bad) is None    # gray, truncated, not a JPEG
    monkeypatch.setattr(recordio, '_USE_OPENCV', False)
    assert recordio._decode_jpeg_cv(data) is None


def test_image_record_iter_with_opencv_within_one_grey_level(tmp_path, monkeypatch):
    pytest.importorskip('cv2')
    rec = _records(str(tmp_path / 'c'), [_image(20 + i % 3, 22, seed=i) for i in range(9)])

    def batches(opencv):
        monkeypatch.setattr(recordio, '_USE_OPENCV', opencv)
        it = mx.io.ImageRecordIter(path_imgrec=rec, path_imgidx=str(tmp_path / 'c.idx'),
                                   batch_size=4, data_shape=(3, 18, 20), rand_crop=True,
                                   rand_mirror=True, dtype='uint8', preprocess_threads=2)
        return [b.data[0].asnumpy().astype(int) for b in it]
    for a, b in zip(batches(True), batches(False)):
        assert np.abs(a - b).max() <= 1


def test_decoding_threads_read_records_as_the_reader(tmp_path):
    from symgraph.io._record_batches import _Spans
    magic = recordio._MAGIC_BYTES
    # records split where their payload holds the magic number, an empty one, records the
    # index leaves out (gaps between the runs)
    payloads = [b'a' * 5, b'xxxx' + magic + b'yy', b'', magic * 3, b'q' * 70, b'z' * 3,
                b'end' + magic]
    w = recordio.MXRecordIO(str(tmp_path / 's.rec'), 'w')
    offsets = []
    for p in payloads:
        offsets.append(w._file.tell())
        w.write(p)
    w.close()
    keys = [0, 1, 2, 3, 5, 6]
    with open(tmp_path / 's.idx', 'w') as f:
        f.writelines('%d\t%d\n' % (k, offsets[k]) for k in keys)
    reader = recordio.MXIndexedRecordIO(str(tmp_path / 's.idx'), str(tmp_path / 's.rec'), 'r')
    spans = _Spans(reader, keys)
    for positions in ([0, 1, 2, 3, 4, 5], [5, 4, 3, 2, 1, 0], [2, 3, 4], [4], [0, 0, 1]):
        assert spans.read(positions) == [payloads[keys[p]] for p in positions]
    spans.close()


def test_direct_jpeg_decode_declines_what_it_does_not_handle():
    img = _image(20, 30)
    gray = _jpeg(img[..., 0])
    png = io.BytesIO()
    Image.fromarray(img).save(png, 'PNG')
    cmyk = io.BytesIO()
    Image.fromarray(img).convert('CMYK').save(cmyk, 'JPEG')
    full = _jpeg(img)
    for data in (gray, png.getvalue(), cmyk.getvalue(), full[:len(full) // 2], full[:3],
                 b'', b'\xff\xd8\xff\xe0\x00'):
        assert recordio._decode_jpeg_rgbx(data) is None
    assert recordio._jpeg_size(full) == (20, 30)


def _records(path, images, fmt='JPEG'):
    w = recordio.MXIndexedRecordIO(path + '.idx', path + '.rec', 'w')
    for i, img in enumerate(images):
        buf = io.BytesIO()
        Image.fromarray(img).save(buf, fmt)
        w.write_idx(i, recordio.pack(recordio.IRHeader(0, float(i % 3), i, 0),
                                     buf.getvalue()))
    w.close()
    return path + '.rec'


def test_image_record_dataset_decodes_as_imdecode(tmp_path):
    images = [_image(24, 20 + i, seed=i) for i in range(4)]
    for fmt in ('JPEG', 'PNG'):
        rec = _records(str(tmp_path / fmt), images, fmt)
        ds = mx.gluon.data.vision.ImageRecordDataset(rec)
        raw = mx.gluon.data.RecordFileDataset(rec)
        for i in range(len(ds)):
            got, label = ds[i]
            want = mx.image.imdecode(recordio.unpack(raw[i])[1], 1)
            assert (got.shape, got.dtype, got.context) == (want.shape, want.dtype,
                                                           want.context)
            np.testing.assert_array_equal(got.asnumpy(), want.asnumpy())
            assert label == float(i % 3)


@pytest.mark.parametrize('shape', [(9, 7, 3), (2, 9, 7, 3), (9, 7, 1)])
@pytest.mark.parametrize('mean,std', [((0.485, 0.456, 0.406), (0.229, 0.224, 0.225)),
                                      (0.5, 0.25), ([0.1], [2.0])])
def test_compose_to_tensor_normalize_equals_the_operators(shape, mean, std):
    if shape[-1] == 1 and isinstance(mean, tuple):
        mean, std = mean[:1], std[:1]
    x = mx.nd.array(np.random.RandomState(1).randint(0, 256, shape), dtype='uint8')
    fast = T.Compose([T.ToTensor(), T.Normalize(mean, std)])
    assert type(fast[0]) is mx.gluon.nn.HybridSequential        # MXNet's grouping kept
    ref = mx.gluon.nn.HybridSequential()
    ref.add(T.ToTensor(), T.Normalize(mean, std))               # the operators, imperative
    got, want = fast(x), ref(x)
    assert (got.shape, got.dtype, got.context) == (want.shape, want.dtype, want.context)
    np.testing.assert_array_equal(got.asnumpy(), want.asnumpy())
    # a second call with other values (the cached per-channel values follow the block)
    fast[0][1]._mean = 0.0
    ref[1]._mean = 0.0
    np.testing.assert_array_equal(fast(x).asnumpy(), ref(x).asnumpy())


def test_compose_fast_path_leaves_recording_and_hooks_to_the_graph():
    x = mx.nd.array(np.arange(27).reshape(3, 3, 3), dtype='float32')
    tf = T.Compose([T.ToTensor(), T.Normalize(0.5, 0.5)])
    x.attach_grad()
    with autograd.record():
        y = tf(x)
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), np.full((3, 3, 3), 2 / 255.), rtol=1e-6)
    seen = []
    tf[0].register_forward_hook(lambda block, inp, out: seen.append(out.shape))
    tf(mx.nd.array(np.zeros((4, 5, 3)), dtype='uint8'))
    assert seen == [(3, 4, 5)]


def test_workers_stack_in_the_batch_file_as_batchify(tmp_path):
    rec = _records(str(tmp_path / 'a'), [_image(16, 16, seed=i) for i in range(10)])
    ds = mx.gluon.data.vision.ImageRecordDataset(rec).transform_first(
        T.Compose([T.ToTensor(), T.Normalize(0.5, 0.2)]))
    samples = [ds[i] for i in range(5)]
    plan = dl._shared_plan(samples)
    assert isinstance(plan[0], mx.gluon.data.workers.Stacked)
    path, tree = mx.gluon.data.workers.to_shared(plan, str(tmp_path))
    got = mx.gluon.data.workers.from_shared(path, tree)
    want = dl.default_mp_batchify_fn(samples)
    for g, w in zip(got, want):
        assert (g.shape, g.dtype, g.context) == (w.shape, w.dtype, w.context)
        np.testing.assert_array_equal(g.asnumpy(), w.asnumpy())
    assert not os.path.exists(path)
    # ragged samples: no plan (the batchify function reports the error)
    assert dl._shared_plan([mx.nd.ones((2,)), mx.nd.ones((3,))]) is None
    loaders = [list(mx.gluon.data.DataLoader(ds, batch_size=4, num_workers=n))
               for n in (0, 2)]
    for (x0, y0), (x2, y2) in zip(*loaders):
        np.testing.assert_array_equal(x0.asnumpy(), x2.asnumpy())
        np.testing.assert_array_equal(y0.asnumpy(), y2.asnumpy())


def test_sequential_and_indexed_readers_agree(tmp_path):
    rs = np.random.RandomState(3)
    blobs = [rs.bytes(int(n)) for n in rs.randint(1, 300000, 12)] + [recordio._MAGIC_BYTES * 3]
    idx, rec = str(tmp_path / 'r.idx'), str(tmp_path / 'r.rec')
    w = recordio.MXIndexedRecordIO(idx, rec, 'w')
    for i, b in enumerate(blobs):
        w.write_idx(i, b)
    w.close()
    seq = recordio.MXRecordIO(rec, 'r')
    assert [seq.read() for _ in range(len(blobs) + 1)] == blobs + [None]
    ind = recordio.MXIndexedRecordIO(idx, rec, 'r')
    assert [ind.read_idx(k) for k in reversed(range(len(blobs)))] == blobs[::-1]


def test_nearest_resize_indexes_as_opencv():
    # rows 6 -> 34: OpenCV's floor(17 * (1 / (34 / 6))) is 2 (MXNet 1.9.1 gives 2);
    # floor(17 * 6 / 34) would be 3
    x = mx.nd.array(np.repeat(np.arange(6)[:, None, None], 5, 1).repeat(3, 2), dtype='uint8')
    for y in (mx.nd._internal._cvimresize(x, w=5, h=34, interp=0),
              mx.nd.image.resize(x, size=(5, 34), interp=0)):
        assert y.asnumpy()[16:19, 0, 0].tolist() == [2, 2, 3]


@pytest.mark.parametrize('interp', [2, 3, 4])
@pytest.mark.parametrize('size', [(5, 7), (13, 11), (4, 6)])
@pytest.mark.parametrize('dtype', ['uint8', 'float32'])
def test_image_resize_takes_cubic_area_lanczos(interp, size, dtype):
    imgs = np.stack([_image(8, 10, seed=s) for s in range(2)]).astype(dtype)
    got = mx.nd.image.resize(mx.nd.array(imgs, dtype=dtype), size=size, interp=interp)
    assert got.shape == (2, size[1], size[0], 3) and got.dtype == np.dtype(dtype)
    for i in range(2):
        want = mx.image.imresize(mx.nd.array(imgs[i], dtype=dtype), size[0], size[1],
                                 interp=interp)
        np.testing.assert_array_equal(got[i].asnumpy(), want.asnumpy())
    with pytest.raises(mx.base.MXNetError, match='unknown interpolation'):
        mx.nd.image.resize(mx.nd.array(imgs[0], dtype=dtype), size=size, interp=7)


def test_image_resize_cubic_gradient_is_the_adjoint():
    x = mx.nd.array(np.random.RandomState(0).rand(6, 5, 1), dtype='float64')
    head = np.random.RandomState(1).rand(4, 7, 1)
    x.attach_grad()
    with autograd.record():
        y = mx.nd.image.resize(x, size=(7, 4), interp=2)
    y.backward(mx.nd.array(head, dtype='float64'))
    # <R x, h> = <x, R^T h> for the linear resize R
    lhs = float((y.asnumpy() * head).sum())
    rhs = float((x.asnumpy() * x.grad.asnumpy()).sum())
    assert abs(lhs - rhs) < 1e-9 * max(1.0, abs(lhs))


@pytest.mark.parametrize('kw', [
    dict(data_shape=(3, 16, 18), rand_crop=True, rand_mirror=True, preprocess_threads=2),
    dict(data_shape=(3, 16, 16), mean_r=123, mean_g=117, mean_b=104, std_r=58, std_g=57,
         std_b=57, mirror=True),
    dict(data_shape=(3, 20, 18), rand_crop=True, shuffle=True, dtype='uint8', seed=3),
    dict(data_shape=(3, 20, 20), rand_mirror=True, scale=1 / 255., dtype='int8')])
def test_image_record_iter_crop_fast_path_equals_the_general_path(tmp_path, monkeypatch, kw):
    from symgraph.io import _image_decode
    # JPEGs of several sizes (one smaller than data_shape: resized, the general path), a
    # PNG (the general path)
    images = [_image(20 + i % 3, 22 + i % 5, seed=i) for i in range(21)] + [_image(12, 14)]
    rec = _records(str(tmp_path / 'j'), images)
    png = io.BytesIO()
    Image.fromarray(_image(21, 23, seed=9)).save(png, 'PNG')
    w = recordio.MXIndexedRecordIO(str(tmp_path / 'j.idx'), rec, 'w')
    for i, img in enumerate(images):
        w.write_idx(i, recordio.pack(recordio.IRHeader(0, float(i), i, 0), _jpeg(img)))
    w.write_idx(len(images), recordio.pack(recordio.IRHeader(0, 7.0, 99, 0), png.getvalue()))
    w.close()

    def batches(fast):
        monkeypatch.setattr(_image_decode, '_FAST_CROP', fast)
        it = mx.io.ImageRecordIter(path_imgrec=rec, path_imgidx=str(tmp_path / 'j.idx'),
                                   batch_size=5, **kw)
        out = []
        for _ in range(2):
            it.reset()
            out += [(b.data[0].asnumpy(), b.label[0].asnumpy(), b.pad) for b in it]
        return out
    fast, slow = batches(True), batches(False)
    assert len(fast) == len(slow) == 10
    for (x0, y0, p0), (x1, y1, p1) in zip(fast, slow):
        assert x0.dtype == x1.dtype and p0 == p1
        np.testing.assert_array_equal(x0, x1)
        np.testing.assert_array_equal(y0, y1)
