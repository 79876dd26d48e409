"""mx.io.ImageRecordIter (symgraph/io/image_record.py) against MXNet 1.9.1's batches for the
deterministic settings (tests/golden/make_image_record.py: PNG and JPEG records, resize,
crop, pad, mirror, gray, mean/std/scale, uint8/int8, parts with and without an index,
several labels, an image list), and the random augmentations by their properties."""
import io
import json
import os

import numpy as np
import pytest

import symgraph as mx

pytest.importorskip('PIL')

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, '..', 'golden', 'data', 'image_record')
with open(os.path.join(DATA, 'cases.json')) as _f:
    CASES = json.load(_f)['cases']


def _args(args):
    return {k: (os.path.join(DATA, v) if k.startswith('path_') else v)
            for k, v in args.items()}


@pytest.fixture(scope='module')
def golden():
    return np.load(os.path.join(DATA, 'batches.npz'))


def _iter(**kwargs):
    base = dict(path_imgrec=os.path.join(DATA, 'png.rec'),
                path_imgidx=os.path.join(DATA, 'png.idx'), data_shape=(3, 16, 16),
                batch_size=5)
    base.update(kwargs)
    return mx.io.ImageRecordIter(**base)


def _images():
    """The decoded pixels of png.rec's records (H, W, 3) uint8 RGB, by Pillow."""
    from PIL import Image
    rec = mx.recordio.MXIndexedRecordIO(os.path.join(DATA, 'png.idx'),
                                        os.path.join(DATA, 'png.rec'), 'r')
    out = [np.asarray(Image.open(io.BytesIO(mx.recordio.unpack(rec.read_idx(k))[1]))
                      .convert('RGB')) for k in rec.keys]
    rec.close()
    return out


@pytest.mark.parametrize('name', sorted(CASES))
def test_batches_equal_mxnet(name, golden):
    case = CASES[name]
    args = _args(case['args'])
    it = mx.io.ImageRecordIter(**args)
    round_batch = args.get('round_batch', True)
    std = min(args.get('std_' + c, 1.0) for c in 'rgb')
    grey = args.get('scale', 1.0) / std           # one grey level in output units
    for epoch in range(case['epochs']):
        if epoch:
            it.reset()
        batches = list(it)
        count = len([k for k in golden.files
                     if k.startswith('%s/%d/' % (name, epoch)) and k.endswith('/pad')])
        assert len(batches) == count
        for b, batch in enumerate(batches):
            key = '%s/%d/%d/' % (name, epoch, b)
            data, ref = batch.data[0].asnumpy(), golden[key + 'data']
            assert data.dtype == ref.dtype and data.shape == ref.shape
            label = batch.label[0].asnumpy()
            assert label.shape == golden[key + 'label'].shape
            if round_batch:
                assert batch.pad == int(golden[key + 'pad'])
                valid = len(data)
            else:
                # MXNet reports pad 0 and leaves stale rows; symgraph counts them in pad
                valid = len(data) - batch.pad
                assert valid > 0 and int(golden[key + 'pad']) == 0
            np.testing.assert_array_equal(label[:valid], golden[key + 'label'][:valid])
            diff = np.abs(data[:valid].astype(np.float64) - ref[:valid])
            # PNG pixels are exact; JPEG and resized ones within one grey level
            assert diff.max() <= grey * 1.0001 + 1e-5, (key, diff.max())
            assert (diff <= 1e-4 * max(grey, 1)).mean() > 0.97, key
    assert it.provide_data[0].shape == golden['%s/0/0/data' % name].shape
    assert it.provide_label[0].name == 'softmax_label'


def test_no_idx_and_parts_split_the_records():
    labels = {}
    for idx in (True, False):
        parts = []
        for part in range(3):
            it = _iter(batch_size=1, num_parts=3, part_index=part, round_batch=False,
                       **({} if idx else {'path_imgidx': ''}))
            parts.append([float(b.label[0].asnumpy()[0]) for b in it])
        assert sorted(sum(parts, [])) == [1.5 * i for i in range(10)]
        labels[idx] = parts
    assert [len(p) for p in labels[True]] == [4, 4, 2]      # by record count
    assert [len(p) for p in labels[False]] == [4, 3, 3]     # by bytes (dmlc-core)


def test_shuffle_is_a_new_permutation_each_epoch_and_seeded():
    def epochs(seed):
        it = _iter(batch_size=2, shuffle=True, seed=seed)
        out = []
        for e in range(3):
            if e:
                it.reset()
            out.append([x for b in it for x in b.label[0].asnumpy().tolist()])
        return out
    a, b = epochs(3), epochs(3)
    assert a == b
    assert all(sorted(e) == [1.5 * i for i in range(10)] for e in a)
    assert a[0] != a[1] and epochs(4) != a


def test_random_crop_and_mirror_are_crops_of_the_image():
    imgs = _images()
    it = _iter(batch_size=10, rand_crop=True, rand_mirror=True, dtype='uint8', seed=1)
    mirrored, offsets = 0, set()
    for epoch in range(6):
        if epoch:
            it.reset()
        batch = next(iter(it))
        for i, out in enumerate(batch.data[0].asnumpy()):
            img = imgs[int(batch.label[0].asnumpy()[i] / 1.5)]
            h, w = img.shape[:2]
            if h < 16 or w < 16:
                continue                    # enlarged first (checked by the golden cases)
            hwc = out.transpose(1, 2, 0)
            found = [(y, x, m) for y in range(h - 15) for x in range(w - 15)
                     for m in (False, True)
                     if np.array_equal((hwc[:, ::-1] if m else hwc), img[y:y + 16, x:x + 16])]
            assert found, (epoch, i)
            mirrored += found[0][2]
            offsets.add(found[0][:2])
    assert 10 < mirrored < 38 and len(offsets) > 10        # about half, many offsets


def test_threads_do_not_change_the_batches_and_seed_aug_repeats():
    kw = dict(rand_crop=True, rand_mirror=True, brightness=0.3, contrast=0.3,
              saturation=0.3, pca_noise=0.1, max_rotate_angle=10, seed_aug=5)
    one = [b.data[0].asnumpy() for b in _iter(preprocess_threads=1, **kw)]
    four = [b.data[0].asnumpy() for b in _iter(preprocess_threads=4, prefetch_buffer=1, **kw)]
    assert len(one) == 2
    for a, b in zip(one, four):
        np.testing.assert_array_equal(a, b)
    plain = [b.data[0].asnumpy() for b in _iter()]
    assert not np.array_equal(one[0], plain[0])
    assert one[0].min() >= 0 and one[0].max() <= 255


def test_color_jitter_keeps_pixels_in_range_and_varies():
    it = _iter(batch_size=10, brightness=0.5, contrast=0.5, saturation=0.5, dtype='uint8')
    plain = next(iter(_iter(batch_size=10, dtype='uint8'))).data[0].asnumpy().astype(float)
    jitter = next(iter(it)).data[0].asnumpy().astype(float)
    ratio = jitter.mean(axis=(1, 2, 3)) / plain.mean(axis=(1, 2, 3))
    assert ratio.min() > 0.3 and ratio.max() < 1.7 and ratio.std() > 0.02


def test_float16_and_label_shapes():
    it = mx.io.ImageRecordIter(path_imgrec=os.path.join(DATA, 'multi.rec'),
                               data_shape=(3, 16, 16), batch_size=4, label_width=2,
                               dtype='float16')
    batch = next(iter(it))
    assert batch.data[0].dtype == np.float16 and batch.label[0].shape == (4, 2)
    assert batch.label[0].asnumpy()[1].tolist() == [1, 9]
    assert isinstance(it, mx.io.MXDataIter)
    u8 = mx.io.ImageRecordUInt8Iter(path_imgrec=os.path.join(DATA, 'png.rec'),
                                    data_shape=(3, 16, 16), batch_size=2)
    assert next(iter(u8)).data[0].dtype == np.uint8


def test_errors_name_the_problem(tmp_path):
    with pytest.raises(FileNotFoundError, match='path_imgrec'):
        mx.io.ImageRecordIter(path_imgrec=str(tmp_path / 'no.rec'), data_shape=(3, 8, 8),
                              batch_size=2)
    with pytest.raises(ValueError, match='data_shape'):
        _iter(data_shape=(2, 16, 16))
    with pytest.raises(ValueError, match='batch_size is required|batch_size'):
        mx.io.ImageRecordIter(path_imgrec=os.path.join(DATA, 'png.rec'), data_shape=(3, 8, 8))
    with pytest.raises(TypeError, match="unknown argument.*'flavour'"):
        _iter(flavour=1)
    with pytest.raises(ValueError, match='label_width must be 1'):
        _iter(label_width=2)
    with pytest.raises(ValueError, match='2 labels but label_width is 3'):
        mx.io.ImageRecordIter(path_imgrec=os.path.join(DATA, 'multi.rec'),
                              data_shape=(3, 16, 16), batch_size=2, label_width=3)
    with pytest.raises(ValueError, match='part_index 3 must be less than num_parts 3'):
        _iter(num_parts=3, part_index=3)
    with pytest.raises(ValueError, match='inter_method'):
        _iter(inter_method=7)
    bad = tmp_path / 'bad.rec'
    bad.write_bytes(b'\x00' * 16)
    with pytest.raises(ValueError, match='bad magic number'):
        mx.io.ImageRecordIter(path_imgrec=str(bad), data_shape=(3, 8, 8), batch_size=1)


def test_module_fit_consumes_the_iterator():
    it = _iter(batch_size=5, scale=1.0 / 255)
    data = mx.sym.Variable('data')
    net = mx.sym.FullyConnected(mx.sym.flatten(data), num_hidden=14)   # labels 0 .. 13.5
    net = mx.sym.SoftmaxOutput(net, name='softmax')
    mod = mx.mod.Module(net, context=mx.cpu())
    mod.fit(it, num_epoch=2, optimizer='sgd', eval_metric='acc')
    assert 0 <= mod.score(it, 'acc')[0][1] <= 1
    assert mod.predict(it).shape == (10, 14)


def test_hls_round_trip_and_shifts():
    from symgraph.io.image_record import _hls_to_rgb, _rgb_to_hls
    import colorsys
    rs = np.random.RandomState(0)
    img = rs.randint(0, 256, (6, 7, 3)).astype(np.uint8)
    h, l, s = _rgb_to_hls(img)
    for (y, x) in [(0, 0), (3, 4), (5, 6)]:
        rh, rl, rsat = colorsys.rgb_to_hls(*(img[y, x] / 255.0))
        assert abs(h[y, x] - rh * 180) <= 1 and abs(l[y, x] - rl * 255) <= 1
        assert abs(s[y, x] - rsat * 255) <= 1
    assert np.abs(_hls_to_rgb(h, l, s).astype(int) - img).max() <= 3       # 8-bit HLS
    # lightness up by 40 at most, hue and saturation kept: brighter pixels on average
    out = next(iter(_iter(batch_size=10, random_l=40, dtype='uint8', seed=2))).data[0]
    plain = next(iter(_iter(batch_size=10, dtype='uint8'))).data[0]
    diff = out.asnumpy().astype(float).mean(axis=(1, 2, 3)) - \
        plain.asnumpy().astype(float).mean(axis=(1, 2, 3))
    assert np.abs(diff).max() < 45 and diff.std() > 1


def test_random_contrast_and_illumination_scale_each_image():
    mean = dict(mean_r=100, mean_g=110, mean_b=120)
    plain = next(iter(_iter(batch_size=10, **mean))).data[0].asnumpy()
    out = next(iter(_iter(batch_size=10, max_random_contrast=0.3, max_random_illumination=5,
                          **mean))).data[0].asnumpy()
    for a, b in zip(plain, out):
        # b = a * contrast + light, per image, contrast in [0.7, 1.3], light in [-5, 5]
        slope, offset = np.polyfit(a.ravel(), b.ravel(), 1)
        assert 0.7 - 1e-4 <= slope <= 1.3 + 1e-4 and abs(offset) <= 5 + 1e-3
        np.testing.assert_allclose(b, slope * a + offset, atol=1e-3)


def test_mean_img_is_created_then_read(tmp_path):
    path = str(tmp_path / 'mean.bin')
    it = _iter(batch_size=10, mean_img=path)
    assert os.path.isfile(path)
    mean = mx.nd.load(path)['mean_img'].asnumpy()
    raw = next(iter(_iter(batch_size=10))).data[0].asnumpy()
    np.testing.assert_allclose(mean, raw.mean(axis=0), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(next(iter(it)).data[0].asnumpy(), raw - mean, atol=1e-4)
    again = _iter(batch_size=10, mean_img=path, scale=0.5)          # read, not made again
    np.testing.assert_allclose(next(iter(again)).data[0].asnumpy(), (raw - mean) * 0.5,
                               atol=1e-4)
    mx.nd.save(path, {'mean_img': mx.nd.zeros((3, 8, 8))})
    with pytest.raises(ValueError, match='not data_shape'):
        _iter(mean_img=path)


def test_seed_aug_as_mxnet_test_io(tmp_path):
    # MXNet's test_io.py test_ImageRecordIter_seed_augmentation, on our records: the same
    # seed_aug gives the same batches, another seed_aug other batches
    kw = dict(mean_img=str(tmp_path / 'mean.bin'), shuffle=False, data_shape=(3, 14, 14),
              batch_size=3, rand_crop=True, rand_mirror=True, max_random_scale=1.3,
              max_random_illumination=3, max_rotate_angle=10, random_l=50, random_s=40,
              random_h=10, max_shear_ratio=2)
    first = [b.data[0].asnumpy().astype(np.uint8) for b in _iter(seed_aug=3, **kw)]
    second = [b.data[0].asnumpy().astype(np.uint8) for b in _iter(seed_aug=3, **kw)]
    other = [b.data[0].asnumpy().astype(np.uint8) for b in _iter(seed_aug=4, **kw)]
    assert len(first) == len(second) == len(other) == 4
    assert all(np.array_equal(a, b) for a, b in zip(first, second))
    assert not all(np.array_equal(a, b) for a, b in zip(first, other))
