"""mx.io.ImageDetRecordIter (symgraph/io/image_det_record.py) against MXNet 1.9.1's batches
for the deterministic settings (tests/golden/make_image_det_record.py: resize modes force /
shrink / fit, resize, mirror, gray, mean/std/scale, nearest, label padding, an image list,
parts, round_batch off), and the random augmentations (crop samplers, pad, mirror) against
the distributions of the sizes and boxes MXNet drew."""
import io
import json
import os

import numpy as np
import pytest

import symgraph as mx

pytest.importorskip('PIL')

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, '..', 'golden', 'data', 'image_det_record')
with open(os.path.join(DATA, 'cases.json')) as _f:
    CASES = json.load(_f)['cases']
DETERMINISTIC = sorted(k for k in CASES if not k.startswith('stat_'))
RANDOM = sorted(k for k in CASES if k.startswith('stat_'))


def _args(args):
    return {k: (os.path.join(DATA, v) if k.startswith('path_') else v)
            for k, v in args.items()}


@pytest.fixture(scope='module')
def golden():
    return np.load(os.path.join(DATA, 'batches.npz'))


def _iter(**kwargs):
    base = dict(path_imgrec=os.path.join(DATA, 'det.rec'), data_shape=(3, 32, 32),
                batch_size=4)
    base.update(kwargs)
    return mx.io.ImageDetRecordIter(**base)


@pytest.mark.parametrize('name', DETERMINISTIC)
def test_batches_equal_mxnet(name, golden):
    case = CASES[name]
    args = _args(case['args'])
    it = mx.io.ImageDetRecordIter(**args)
    std = min([args.get('std_' + c, 0.0) or 1.0 for c in 'rgb'])
    grey = args.get('scale', 1.0) / std           # one grey level in output units
    # bilinear resizes are within a grey level of OpenCV's; two resizes within two
    levels = 2 if args.get('resize', -1) > 0 else 1
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
            assert data.dtype == ref.dtype == np.float32 and data.shape == ref.shape
            label = batch.label[0].asnumpy()
            assert label.shape == golden[key + 'label'].shape
            assert batch.pad == int(golden[key + 'pad'])
            valid = len(data) - (0 if args.get('round_batch', True) else batch.pad)
            # labels (sizes, lengths, boxes, padding) are exact
            np.testing.assert_array_equal(label[:valid], golden[key + 'label'][:valid])
            diff = np.abs(data[:valid].astype(np.float64) - ref[:valid])
            assert diff.max() <= levels * grey * 1.0001 + 1e-5, (key, diff.max())
            assert (diff <= 1e-4 * max(grey, 1)).mean() > 0.98, key
    assert it.provide_data[0].shape == golden['%s/0/0/data' % name].shape
    assert it.provide_label[0].shape == golden['%s/0/0/label' % name].shape
    assert it.provide_label[0].name == 'softmax_label'


def _labels_of(name):
    case = CASES[name]
    it = mx.io.ImageDetRecordIter(seed=3, **_args(case['args']))
    out = []
    for epoch in range(case['epochs']):
        if epoch:
            it.reset()
        out += [b.label[0].asnumpy() for b in it]
    return np.concatenate(out)


@pytest.mark.parametrize('name', RANDOM)
def test_random_augmentations_draw_as_mxnet(name, golden):
    """The crops / pads / mirrors drawn (seen as the image size and the object's box in the
    label) follow MXNet's distributions: two-sample Kolmogorov-Smirnov tests."""
    from scipy.stats import ks_2samp
    ours, ref = _labels_of(name), golden[name + '/labels']
    assert ours.shape == ref.shape
    # columns: rows, cols of the augmented image; x0, y0, x1, y1 of the object
    for col in (1, 2, 7, 8, 9, 10):
        if np.all(ref[:, col] == ref[0, col]):
            assert np.all(ours[:, col] == ref[0, col]), col
            continue
        p = ks_2samp(ours[:, col], ref[:, col]).pvalue
        assert p > 1e-3, (name, col, p)
    # how often the image is left as it is (no crop / pad drawn, or every trial failed)
    same = lambda a: ((a[:, 1] == 40) & (a[:, 2] == 60)).mean()
    assert abs(same(ours) - same(ref)) < 0.08, (same(ours), same(ref))


def test_color_draws_as_mxnet(golden):
    """Hue / saturation / illumination / contrast, each with probability 0.5: the
    per-channel means of the images follow MXNet's (2,000 draws each side)."""
    from scipy.stats import ks_2samp
    case = CASES['stat_color']
    it = mx.io.ImageDetRecordIter(seed=3, **_args(case['args']))
    means = []
    for epoch in range(case['epochs']):
        if epoch:
            it.reset()
        means += [b.data[0].asnumpy().mean(axis=(2, 3)) for b in it]
    ours, ref = np.concatenate(means), golden['stat_color/means']
    assert ours.shape == ref.shape == (2000, 3)
    plain = next(_iter(path_imgrec=os.path.join(DATA, 'stat.rec'), data_shape=(3, 40, 60),
                       batch_size=1)).data[0].asnumpy().mean(axis=(2, 3))[0]
    for c in range(3):
        se = np.sqrt((ours[:, c].var() + ref[:, c].var()) / len(ref))
        assert abs(ours[:, c].mean() - ref[:, c].mean()) < 3 * se, c
        assert abs(ours[:, c].std() / ref[:, c].std() - 1) < 0.05, c
        # MXNet's sample is one realisation of its mt19937 stream: a loose threshold
        assert ks_2samp(ours[:, c], ref[:, c]).pvalue > 1e-4, c
        # about 1/16 of the images draw no change at all (each effect skipped or zero)
        unchanged = np.isclose(ours[:, c], plain[c]).mean()
        assert abs(unchanged - np.isclose(ref[:, c], plain[c]).mean()) < 0.03


def test_mirror_probability_and_boxes():
    labels = _labels_of('stat_mirror')
    flipped = np.isclose(labels[:, 7], 1 - 0.6)
    assert np.all(flipped | np.isclose(labels[:, 7], 0.2))
    assert 0.24 < flipped.mean() < 0.36                       # rand_mirror_prob=0.3
    np.testing.assert_allclose(labels[flipped, 9], 1 - 0.2, rtol=1e-6)


def test_crop_keeps_boxes_inside_and_projects_them():
    labels = _labels_of('stat_crop')
    box = labels[:, 7:11]
    assert np.all(box >= 0) and np.all(box <= 1)
    assert np.all(box[:, 2] > box[:, 0]) and np.all(box[:, 3] > box[:, 1])
    # the 'center' emit mode keeps the object only if its centre is in the crop, so the
    # object (0.2..0.6 x 0.3..0.8 of 60x40) is always there
    assert np.all(labels[:, 3] == 7)
    assert np.all(labels[:, 1] <= 40) and np.all(labels[:, 2] <= 60)


def test_pad_fills_with_fill_value():
    it = mx.io.ImageDetRecordIter(path_imgrec=os.path.join(DATA, 'stat.rec'),
                                  data_shape=(3, 160, 160), batch_size=20,
                                  resize_mode='shrink', rand_pad_prob=1, max_pad_scale=3,
                                  fill_value=50, seed=1)
    batch = next(it)
    data, label = batch.data[0].asnumpy(), batch.label[0].asnumpy()
    padded = 0
    for img, lab in zip(data, label):
        rows, cols = int(lab[1]), int(lab[2])
        if (rows, cols) == (40, 60):
            continue
        padded += 1
        inside = img[:, :rows, :cols]
        assert np.all(img[:, rows:, :] == 0) and np.all(img[:, :, cols:] == 0)
        # the object's box, projected, still covers the source image's object
        x0, y0 = lab[7] * cols, lab[8] * rows
        assert 0 <= x0 < cols and 0 <= y0 < rows
        assert (inside == 50).all(axis=0).mean() > 0.2     # the border is fill_value
    assert padded > 14      # a scale below 1.05 pads nothing (about 1 in 40)


def test_color_augmentations_change_pixels_within_range():
    plain = next(_iter()).data[0].asnumpy()
    it = _iter(random_contrast_prob=1, max_random_contrast=0.5, random_hue_prob=1,
               max_random_hue=20, random_saturation_prob=0.5, max_random_saturation=30,
               random_illumination_prob=0.5, max_random_illumination=30, seed=5)
    jitter = next(it).data[0].asnumpy()
    assert jitter.shape == plain.shape and not np.array_equal(jitter, plain)
    assert jitter.min() >= 0 and jitter.max() <= 255
    # contrast alone scales every pixel by 1 + U(-0.5, 0.5) (saturated at 255)
    contrast = next(_iter(random_contrast_prob=1, max_random_contrast=0.5, batch_size=8))
    ratio = contrast.data[0].asnumpy().mean(axis=(1, 2, 3)) / \
        next(_iter(batch_size=8)).data[0].asnumpy().mean(axis=(1, 2, 3))
    assert ratio.min() > 0.45 and ratio.max() < 1.55 and ratio.std() > 0.05


def test_threads_do_not_change_the_batches_and_shuffle_is_seeded():
    kw = dict(rand_crop_prob=0.8, min_crop_scales=0.3, rand_pad_prob=0.5, max_pad_scale=2,
              rand_mirror_prob=0.5, random_contrast_prob=0.5, max_random_contrast=0.3,
              shuffle=True, seed=11, batch_size=3)
    one = [(b.data[0].asnumpy(), b.label[0].asnumpy())
           for b in _iter(preprocess_threads=1, **kw)]
    four = [(b.data[0].asnumpy(), b.label[0].asnumpy())
            for b in _iter(preprocess_threads=4, prefetch_buffer=1, **kw)]
    assert len(one) == 3
    for (d1, l1), (d4, l4) in zip(one, four):
        np.testing.assert_array_equal(d1, d4)
        np.testing.assert_array_equal(l1, l4)
    ids = lambda seed: [int(i) for b in _iter(shuffle=True, seed=seed, batch_size=8)
                        for i in b.index]
    assert sorted(ids(1)) == list(range(8)) and ids(1) == ids(1) and ids(1) != ids(2)


def test_multiple_samplers_broadcast_and_mismatch():
    it = _iter(rand_crop_prob=1, num_crop_sampler=3, min_crop_scales=(0.1, 0.3, 0.5),
               max_crop_scales=1.0, max_crop_trials='(5, 10, 15)')
    assert next(it).label[0].shape == (4, 26)
    with pytest.raises(ValueError, match='min_crop_scales has 2 values for 3 crop sampler'):
        _iter(num_crop_sampler=3, min_crop_scales=(0.1, 0.2))
    with pytest.raises(ValueError, match='max_crop_scales > min_crop_scales'):
        _iter(min_crop_scales=0.5, max_crop_scales=0.5)


def _write_rec(path, labels, size=(10, 12)):
    from PIL import Image
    rec = mx.recordio.MXRecordIO(str(path), 'w')
    for i, label in enumerate(labels):
        buf = io.BytesIO()
        Image.fromarray(np.full(size + (3,), 30 * i, np.uint8)).save(buf, 'PNG')
        rec.write(mx.recordio.pack(mx.recordio.IRHeader(0, label, i, 0), buf.getvalue()))
    rec.close()
    return str(path)


def test_errors_name_the_problem(tmp_path):
    with pytest.raises(FileNotFoundError, match='path_imgrec'):
        mx.io.ImageDetRecordIter(path_imgrec=str(tmp_path / 'no.rec'), data_shape=(3, 8, 8),
                                 batch_size=2)
    with pytest.raises(ValueError, match='data_shape'):
        _iter(data_shape=(2, 16, 16))
    with pytest.raises(NotImplementedError, match='RGBA'):
        _iter(data_shape=(4, 16, 16))
    with pytest.raises(ValueError, match='batch_size is required'):
        mx.io.ImageDetRecordIter(path_imgrec=os.path.join(DATA, 'det.rec'),
                                 data_shape=(3, 8, 8))
    with pytest.raises(TypeError, match="unknown argument.*'flavour'"):
        _iter(flavour=1)
    with pytest.raises(ValueError, match='label_pad_width 10 is smaller than the widest '
                                         'label, 22'):
        _iter(label_pad_width=10)
    with pytest.raises(ValueError, match='resize_mode must be one of force, shrink, fit'):
        _iter(resize_mode='stretch')
    with pytest.raises(ValueError, match='has 7 labels but label_width is 12'):
        _iter(label_width=12)
    short = _write_rec(tmp_path / 'short.rec', [[2, 5, 1, 0.1, 0.1, 0.5]] * 2)
    with pytest.raises(ValueError, match='at least 7 values.*got 6 .image 0'):
        next(mx.io.ImageDetRecordIter(path_imgrec=short, data_shape=(3, 8, 8), batch_size=2))
    ragged = _write_rec(tmp_path / 'ragged.rec', [[2, 5, 1, 0.1, 0.1, 0.5, 0.5, 3]] * 2)
    with pytest.raises(ValueError, match='does not hold whole objects of 5'):
        next(mx.io.ImageDetRecordIter(path_imgrec=ragged, data_shape=(3, 8, 8),
                                      batch_size=2))
    plain = _write_rec(tmp_path / 'plain.rec', [1.0, 2.0])
    with pytest.raises(ValueError, match='holds no detection label'):
        mx.io.ImageDetRecordIter(path_imgrec=plain, data_shape=(3, 8, 8), batch_size=2)


def test_mean_img_is_made_then_subtracted(tmp_path):
    mean_file = str(tmp_path / 'mean.nd')
    it = _iter(mean_img=mean_file, batch_size=8)
    assert os.path.isfile(mean_file)
    mean = mx.nd.load(mean_file)['mean_img'].asnumpy()
    plain = next(_iter(batch_size=8)).data[0].asnumpy()
    np.testing.assert_allclose(mean, plain.mean(axis=0), rtol=1e-5, atol=1e-3)
    np.testing.assert_allclose(next(it).data[0].asnumpy(), plain - mean, atol=1e-3)


def test_module_fit_consumes_the_iterator():
    it = _iter(batch_size=4, scale=1.0 / 255, data_name='data', label_name='label')
    data = mx.sym.Variable('data')
    out = mx.sym.LinearRegressionOutput(
        mx.sym.FullyConnected(mx.sym.Flatten(data), num_hidden=26), mx.sym.Variable('label'))
    mod = mx.mod.Module(out, data_names=['data'], label_names=['label'])
    mod.fit(it, num_epoch=2, optimizer_params={'learning_rate': 0.001})
    assert mod.get_outputs()[0].shape == (4, 26)


def test_hls_conversion_is_opencvs(golden):
    """The colour draws' RGB <-> HLS (image_record's helpers) against OpenCV's 8-bit
    conversion (MXNet's cv::cvtColor) on 4,096 random pixels."""
    from symgraph.io.image_record import _hls_to_rgb, _rgb_to_hls
    h, l, s = _rgb_to_hls(golden['hls/rgb'])
    ref = golden['hls/hls'].astype(np.int32)
    np.testing.assert_array_equal(l, ref[..., 1])
    for ours, c in ((h, 0), (s, 2)):
        diff = np.abs(ours - ref[..., c])
        assert diff.max() <= 1 and (diff > 0).mean() < 1e-3, c
    shifted = golden['hls/shifted'].astype(np.int32)
    back = _hls_to_rgb(shifted[..., 0], shifted[..., 1], shifted[..., 2])
    np.testing.assert_array_equal(back, golden['hls/back'])
