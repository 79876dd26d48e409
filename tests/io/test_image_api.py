"""mx.image (symgraph/image/: functions, augmenters, ImageIter) against MXNet 1.9.1's outputs
(tests/golden/make_image_api.py): decoding, imresize with every interpolation, crops,
borders, normalisation, rotation, the augmenters and ImageIter under the same seeds of
Python's ``random`` and NumPy (MXNet draws from both, so the draws are MXNet's), dumps();
then the distributions of the random augmenters and the errors."""
import json
import os
import random

import numpy as np
import pytest

import symgraph as mx

pytest.importorskip('PIL')

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, '..', 'golden', 'data', 'image_api')
with open(os.path.join(DATA, 'cases.json')) as _f:
    CASES = json.load(_f)
IMGS = sorted(os.listdir(os.path.join(DATA, 'imgs')))


@pytest.fixture(scope='module')
def gold():
    return np.load(os.path.join(DATA, 'golden.npz'))


@pytest.fixture(scope='module')
def src(gold):
    return gold['src']


def seeded(seed, fn):
    random.seed(seed)
    np.random.seed(seed)
    return fn()


def close_u8(ours, theirs, level=1, share=0.05):
    """uint8 results of OpenCV's fixed-point kernels: within ``level`` grey levels, and
    different in at most ``share`` of the values."""
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
    diff = np.abs(ours.astype(np.int64) - theirs.astype(np.int64))
    assert diff.max() <= level, diff.max()
    assert (diff > 0).mean() <= share, (diff > 0).mean()


# ---------------------------------------------------------------- decoding
@pytest.mark.parametrize('k', range(len(IMGS)))
def test_imread_imdecode_match_mxnet(gold, k):
    path = os.path.join(DATA, 'imgs', IMGS[k])
    np.testing.assert_array_equal(mx.image.imread(path).asnumpy(), gold['imread/%d' % k])
    np.testing.assert_array_equal(mx.image.imread(path, flag=0).asnumpy(),
                                  gold['imread_gray/%d' % k])
    with open(path, 'rb') as f:
        raw = f.read()
    np.testing.assert_array_equal(mx.image.imdecode(raw, to_rgb=0).asnumpy(),
                                  gold['imdecode_bgr/%d' % k])
    np.testing.assert_array_equal(mx.image.imdecode(bytearray(raw), to_rgb=0).asnumpy(),
                                  gold['imdecode_bgr/%d' % k])


def test_decode_errors():
    with pytest.raises(TypeError, match='bytes'):
        mx.image.imdecode('not bytes')
    with pytest.raises(mx.base.MXNetError):
        mx.image.imdecode(b'clearly not image content')
    with pytest.raises(FileNotFoundError):
        mx.image.imread('/no/such/dir/image.jpg')


# ---------------------------------------------------------------- resizing
@pytest.mark.parametrize('interp', range(5))
def test_imresize_matches_mxnet(gold, src, interp):
    for w, h in CASES['resizes']:
        theirs = gold['imresize/uint8/%d/%d/%d' % (w, h, interp)]
        ours = mx.image.imresize(mx.nd.array(src, dtype='uint8'), w, h, interp=interp)
        if interp == 0:
            np.testing.assert_array_equal(ours.asnumpy(), theirs)
        else:
            close_u8(ours.asnumpy(), theirs)
        key = 'imresize/float32/%d/%d/%d' % (w, h, interp)
        if key in gold.files:
            ours = mx.image.imresize(mx.nd.array(src, dtype='float32'), w, h, interp=interp)
            np.testing.assert_allclose(ours.asnumpy(), gold[key], rtol=1e-5, atol=1e-3)


def test_imresize_out_and_errors(src):
    img = mx.nd.array(src, dtype='uint8')
    for interp in (0, 2, 3):
        out = mx.nd.zeros((7, 9, 3), dtype='uint8')
        res = mx.image.imresize(img, 9, 7, interp=interp, out=out)
        assert res is out
        np.testing.assert_array_equal(out.asnumpy(),
                                      mx.image.imresize(img, 9, 7, interp=interp).asnumpy())
    with pytest.raises(ValueError, match='w and h'):
        mx.image.imresize(img, 0, 5, interp=2)
    with pytest.raises(ValueError, match='height, width, channels'):
        mx.image.imresize(img[0], 4, 5, interp=3)
    with pytest.raises(NotImplementedError, match='int32'):
        mx.image.imresize(img.astype('int32'), 4, 5, interp=4)
    with pytest.raises(ValueError, match='interp'):
        mx.image.resize_short(img, 5, interp=7)


def test_resize_short_matches_mxnet(gold, src):
    img = mx.nd.array(src, dtype='uint8')
    for size, interp in CASES['resize_short']:
        ours = mx.image.resize_short(img, size, interp).asnumpy()
        close_u8(ours, gold['resize_short/%d/%d' % (size, interp)])
        assert min(ours.shape[:2]) == size


# ---------------------------------------------------------------- crops, borders, normalising
def test_crops_match_mxnet(gold, src):
    img = mx.nd.array(src, dtype='uint8')
    for j, (x0, y0, w, h, size, interp) in enumerate(CASES['fixed_crop']):
        ours = mx.image.fixed_crop(img, x0, y0, w, h, None if size is None else tuple(size),
                                   interp).asnumpy()
        close_u8(ours, gold['fixed_crop/%d' % j])
    for j, (size, interp) in enumerate(CASES['center_crop']):
        out, rect = mx.image.center_crop(img, tuple(size), interp)
        assert rect == tuple(gold['center_crop_rect/%d' % j])
        close_u8(out.asnumpy(), gold['center_crop/%d' % j])
    ours = [mx.image.scale_down(tuple(a), tuple(b)) for a, b in CASES['scale_down']]
    assert ours == [tuple(r) for r in gold['scale_down']]


def test_copy_make_border_matches_mxnet(gold, src):
    img = mx.nd.array(src, dtype='uint8')
    for j, (t, b, l, r, typ) in enumerate(CASES['borders']):
        ours = mx.image.copyMakeBorder(img, t, b, l, r, type=typ, values=[9, 99, 199])
        np.testing.assert_array_equal(ours.asnumpy(), gold['border/%d' % j])


def test_color_normalize_matches_mxnet(gold, src):
    mean, std = np.array([100.5, 120.25, 90.0]), np.array([50.0, 60.5, 55.25])
    img = mx.nd.array(src, dtype='float32')
    ours = mx.image.color_normalize(img, mx.nd.array(mean), mx.nd.array(std))
    assert ours is img                                          # in place, as MXNet
    np.testing.assert_allclose(ours.asnumpy(), gold['color_normalize'], rtol=1e-6)
    ours = mx.image.color_normalize(mx.nd.array(src, dtype='float32'), mx.nd.array(mean))
    np.testing.assert_allclose(ours.asnumpy(), gold['color_normalize_mean'], rtol=1e-6)


# ---------------------------------------------------------------- rotation
def test_imrotate_matches_mxnet(gold, src):
    chw = mx.nd.array(src[:12, :14].transpose(2, 0, 1).astype(np.float32) / 255)
    for j, (angle, zoom_in, zoom_out) in enumerate(CASES['imrotate']):
        ours = mx.image.imrotate(chw, angle, zoom_in=zoom_in, zoom_out=zoom_out)
        np.testing.assert_allclose(ours.asnumpy(), gold['imrotate/%d' % j], atol=1e-5)
    batch = mx.nd.stack(chw, chw * 0.5, chw[::-1])
    ours = mx.image.imrotate(batch, mx.nd.array([10, -45, 180]))
    np.testing.assert_allclose(ours.asnumpy(), gold['imrotate_batch'], atol=1e-5)
    ours = seeded(5, lambda: mx.image.random_rotate(batch, (-20, 20)))
    np.testing.assert_allclose(ours.asnumpy(), gold['random_rotate'], atol=1e-5)


def test_imrotate_errors():
    img = mx.nd.ones((3, 4, 5))
    with pytest.raises(ValueError, match='zoom_in'):
        mx.image.imrotate(img, 5, zoom_in=True, zoom_out=True)
    with pytest.raises(TypeError, match='float32'):
        mx.image.imrotate(img.astype('float64'), 5)
    with pytest.raises(TypeError, match='scalar'):
        mx.image.imrotate(img, mx.nd.array([1, 2]))
    with pytest.raises(ValueError, match='3D and 4D'):
        mx.image.imrotate(mx.nd.ones((4, 5)), 5)
    with pytest.raises(ValueError, match='number of images'):
        mx.image.imrotate(mx.nd.ones((2, 3, 4, 5)), mx.nd.array([1, 2, 3]))


def test_imrotate_quarter_turn_is_exact():
    # a 90-degree turn of a square image samples the pixel centres: a plain rotation,
    # counter-clockwise as displayed (np.rot90's direction)
    img = np.arange(2 * 5 * 5, dtype=np.float32).reshape(2, 5, 5)
    ours = mx.image.imrotate(mx.nd.array(img), 90).asnumpy()
    np.testing.assert_allclose(ours, np.rot90(img, k=1, axes=(1, 2)), atol=1e-4)


# ---------------------------------------------------------------- random functions, seeded
def test_random_crops_reproduce_mxnet_draws(gold, src):
    img = mx.nd.array(src, dtype='uint8')
    rects = seeded(1, lambda: [mx.image.random_crop(img, (10, 12), 2)[1] for _ in range(6)])
    assert rects == [tuple(r) for r in gold['random_crop_rects']]
    outs = seeded(1, lambda: [mx.image.random_crop(img, (10, 12), 2)[0].asnumpy()
                              for _ in range(6)])
    np.testing.assert_array_equal(np.stack(outs), gold['random_crop'])
    outs = seeded(2, lambda: [mx.image.random_crop(img, (40, 30), 1)[0].asnumpy()
                              for _ in range(2)])
    close_u8(np.stack(outs), gold['random_crop_up'])
    rects = seeded(3, lambda: [mx.image.random_size_crop(img, (14, 14), 0.3, (0.75, 1.33),
                                                         2)[1] for _ in range(6)])
    assert rects == [tuple(r) for r in gold['random_size_crop_rects']]
    outs = seeded(3, lambda: [mx.image.random_size_crop(img, (14, 14), 0.3, (0.75, 1.33),
                                                        2)[0].asnumpy() for _ in range(6)])
    close_u8(np.stack(outs), gold['random_size_crop'])
    rects = seeded(4, lambda: [mx.image.random_size_crop(img, (14, 14), (5.0, 6.0),
                                                         (1.0, 1.0), 2)[1] for _ in range(2)])
    assert rects == [tuple(r) for r in gold['random_size_crop_fallback']]   # centre crop


def _augmenters():
    eigval = np.array([55.46, 4.794, 1.148])
    eigvec = np.array([[-0.5675, 0.7192, 0.4009], [-0.5808, -0.0045, -0.8140],
                       [-0.5836, -0.6948, 0.4203]])
    return {
        'resize': mx.image.ResizeAug(15, 2),
        'force_resize': mx.image.ForceResizeAug((17, 9), 3),
        'random_crop': mx.image.RandomCropAug((11, 9), 1),
        'random_sized_crop': mx.image.RandomSizedCropAug((12, 12), (0.2, 0.9), (0.5, 2.0), 2),
        'center_crop': mx.image.CenterCropAug((12, 8), 4),
        'brightness': mx.image.BrightnessJitterAug(0.4),
        'contrast': mx.image.ContrastJitterAug(0.4),
        'saturation': mx.image.SaturationJitterAug(0.4),
        'hue': mx.image.HueJitterAug(0.3),
        'color_jitter': mx.image.ColorJitterAug(0.3, 0.3, 0.3),
        'lighting': mx.image.LightingAug(0.1, eigval, eigvec),
        'color_normalize': mx.image.ColorNormalizeAug([1.0, 2.0, 3.0], [2.0, 4.0, 8.0]),
        'gray': mx.image.RandomGrayAug(0.5),
        'flip': mx.image.HorizontalFlipAug(0.5),
        'cast': mx.image.CastAug('float64'),
    }


@pytest.mark.parametrize('name', CASES['augs'])
def test_augmenter_reproduces_mxnet(gold, src, name):
    aug = _augmenters()[name]
    assert json.dumps(aug.dumps()) == str(gold['dumps/' + name])
    img = (mx.nd.array(src[:8, :10], dtype='float32') if name in CASES['float_augs']
           else mx.nd.array(src, dtype='uint8'))
    n = 1 if name == 'cast' else 4
    ours = seeded(7, lambda: np.stack([aug(img.copy()).asnumpy() for _ in range(n)]))
    theirs = gold['aug/' + name]
    if ours.dtype == np.uint8:
        close_u8(ours, theirs)
    else:
        assert ours.dtype == theirs.dtype
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-3)


def test_sequential_and_random_order():
    img = mx.nd.array(np.arange(2 * 3 * 3, dtype=np.float32).reshape(2, 3, 3))
    seq = mx.image.SequentialAug([mx.image.BrightnessJitterAug(0.0),
                                  mx.image.ColorNormalizeAug([1.0, 1.0, 1.0], None)])
    np.testing.assert_allclose(seq(img.copy()).asnumpy(), img.asnumpy() - 1)
    assert seq.dumps() == ['sequentialaug', [seq.ts[0].dumps(), seq.ts[1].dumps()]]
    # the same two commuting steps in any order give the same image
    add, mul = mx.image.ColorNormalizeAug([-2.0] * 3, None), mx.image.CastAug('float32')
    order = mx.image.RandomOrderAug([add, mul])
    seen = set()
    for seed in range(20):
        random.seed(seed)
        np.testing.assert_allclose(order(img.copy()).asnumpy(), img.asnumpy() + 2)
        seen.add(tuple(type(t).__name__ for t in order.ts))
    assert len(seen) == 2                       # both orders were drawn


@pytest.mark.parametrize('j', range(len(CASES['create'])))
def test_create_augmenter_matches_mxnet(gold, j):
    kw = dict(CASES['create'][j])
    kw['data_shape'] = tuple(kw['data_shape'])
    if isinstance(kw.get('mean'), list):
        kw['mean'] = np.array(kw['mean'])
    ours = [a.dumps() for a in mx.image.CreateAugmenter(**kw)]
    assert json.dumps(ours) == str(gold['create/%d' % j])


def test_create_augmenter_errors():
    with pytest.raises(ValueError, match='rand_crop'):
        mx.image.CreateAugmenter((3, 8, 8), rand_resize=True)
    with pytest.raises(ValueError, match='mean'):
        mx.image.CreateAugmenter((3, 8, 8), mean=np.array([1.0, 2.0]))
    with pytest.raises(TypeError, match='min_areaa'):
        mx.image.RandomSizedCropAug((4, 4), 0.1, (1, 1), min_areaa=0.2)


# ---------------------------------------------------------------- distributions
def test_random_augmenter_distributions():
    random.seed(0)
    np.random.seed(0)
    n = 2000
    ones = mx.nd.ones((1, 1, 3))
    # brightness: a factor uniform on [0.6, 1.4]
    f = np.array([mx.image.BrightnessJitterAug(0.4)(ones.copy()).asnumpy()[0, 0, 0]
                  for _ in range(n)])
    assert f.min() >= 0.6 and f.max() <= 1.4
    assert abs(f.mean() - 1.0) < 0.02 and abs(f.var() - 0.8 ** 2 / 12) < 0.005
    # flip and gray: Bernoulli(p)
    img = mx.nd.array(np.arange(6, dtype=np.float32).reshape(1, 2, 3))
    flips = np.mean([mx.image.HorizontalFlipAug(0.3)(img).asnumpy()[0, 0, 0] == 3
                     for _ in range(n)])
    assert abs(flips - 0.3) < 0.04
    grays = np.mean([np.ptp(mx.image.RandomGrayAug(0.2)(img).asnumpy()[0, 0]) < 1e-6
                     for _ in range(n)])
    assert abs(grays - 0.2) < 0.04
    # lighting: the added RGB offset is eigvec @ (alpha * eigval), alpha ~ N(0, 0.1)
    eigval = np.array([55.46, 4.794, 1.148])
    eigvec = np.array([[-0.5675, 0.7192, 0.4009], [-0.5808, -0.0045, -0.8140],
                       [-0.5836, -0.6948, 0.4203]])
    zeros = mx.nd.zeros((1, 1, 3))
    offs = np.array([mx.image.LightingAug(0.1, eigval, eigvec)(zeros.copy()).asnumpy()[0, 0]
                     for _ in range(n)])
    alphas = np.linalg.solve(eigvec, offs.T).T / eigval
    assert np.all(np.abs(alphas.mean(axis=0)) < 0.01)
    assert np.all(np.abs(alphas.std(axis=0) - 0.1) < 0.01)
    # random crops: every position equally likely
    big = mx.nd.zeros((6, 7, 1), dtype='uint8')
    xs = [mx.image.random_crop(big, (4, 3))[1][:2] for _ in range(n)]
    counts = np.zeros((4, 4))
    for x0, y0 in xs:
        counts[y0, x0] += 1
    assert counts.min() > n / 16 * 0.6 and counts.max() < n / 16 * 1.4
    # random sized crops: the area fraction in [area], aspect ratio log-uniform in [ratio]
    src = mx.nd.zeros((100, 100, 1), dtype='uint8')
    rects = [mx.image.random_size_crop(src, (10, 10), (0.2, 0.6), (0.5, 2.0))[1]
             for _ in range(500)]
    areas = np.array([w * h / 1e4 for _, _, w, h in rects])
    ratios = np.log([w / h for _, _, w, h in rects])
    assert areas.min() > 0.18 and areas.max() < 0.62 and abs(areas.mean() - 0.4) < 0.02
    assert abs(ratios.mean()) < 0.06 and np.abs(ratios).max() < np.log(2) + 0.05


def test_hue_keeps_gray_and_luma():
    # the YIQ hue rotation leaves gray pixels gray and keeps each pixel's luma (Y), up to
    # the rounding of MXNet's 3-digit RGB<->YIQ matrices (not exact inverses: 0.3% here)
    random.seed(3)
    img = np.random.RandomState(0).uniform(0, 255, (4, 5, 3)).astype(np.float32)
    img[0] = 77.0
    out = mx.image.HueJitterAug(0.5)(mx.nd.array(img)).asnumpy()
    np.testing.assert_allclose(out[0], 77.0, rtol=0.003)
    luma = np.array([0.299, 0.587, 0.114])
    np.testing.assert_allclose(out @ luma, img @ luma, rtol=0.003, atol=0.3)
    assert np.abs(out[1:] - img[1:]).max() > 10            # colours did change


# ---------------------------------------------------------------- ImageIter
def _iter_kwargs(spec):
    kw = {k: v for k, v in spec.items() if k not in ('source', 'epochs')}
    kw['data_shape'] = tuple(kw['data_shape'])
    rec, idx = os.path.join(DATA, 'images.rec'), os.path.join(DATA, 'images.idx')
    if spec['source'] == 'rec':
        kw['path_imgrec'] = rec
    elif spec['source'] == 'rec_idx':
        kw.update(path_imgrec=rec, path_imgidx=idx)
    elif spec['source'] == 'lst':
        kw.update(path_imglist=os.path.join(DATA, 'images.lst'),
                  path_root=os.path.join(DATA, 'imgs'))
    else:
        kw.update(imglist=[[float(k) / 2, os.path.join(DATA, 'imgs', n)]
                           for k, n in enumerate(IMGS)], path_root='')
    return kw


@pytest.mark.parametrize('name', sorted(CASES['iters']))
def test_image_iter_matches_mxnet(gold, name):
    spec = CASES['iters'][name]
    random.seed(11)
    np.random.seed(11)
    it = mx.image.ImageIter(**_iter_kwargs(spec))
    assert it.provide_data[0][1] == (spec['batch_size'],) + tuple(spec['data_shape'])
    for epoch in range(spec['epochs']):
        n = 0
        for b, batch in enumerate(it):
            key = 'iter/%s/%d/%d' % (name, epoch, b)
            assert key + '/data' in gold.files, '%s: more batches than MXNet' % key
            assert batch.pad == int(gold[key + '/pad'])
            np.testing.assert_array_equal(batch.label[0].asnumpy(), gold[key + '/label'])
            theirs = gold[key + '/data']
            # resized pixels: within a grey level (x 1/std after normalising)
            np.testing.assert_allclose(batch.data[0].asnumpy(), theirs, rtol=0, atol=1.01)
            assert np.mean(batch.data[0].asnumpy() != theirs) < 0.05
            n += 1
        assert 'iter/%s/%d/%d/data' % (name, epoch, n) not in gold.files, 'fewer batches'
        it.reset()


def test_image_iter_errors(tmp_path):
    with pytest.raises(ValueError, match='path_imgrec, path_imglist or imglist'):
        mx.image.ImageIter(2, (3, 8, 8))
    with pytest.raises(ValueError, match='3 channels'):
        mx.image.ImageIter(2, (1, 8, 8), imglist=[[0, 'a.png']])
    with pytest.raises(ValueError, match='last_batch_handle'):
        mx.image.ImageIter(2, (3, 8, 8), imglist=[[0, 'a.png']], last_batch_handle='drop')
    with pytest.raises(ValueError, match='dtype'):
        mx.image.ImageIter(2, (3, 8, 8), imglist=[[0, 'a.png']], dtype='uint8')
    with pytest.raises(ValueError, match='path_imgidx'):
        mx.image.ImageIter(2, (3, 8, 8), path_imgrec=os.path.join(DATA, 'images.rec'),
                           shuffle=True)
    it = mx.image.ImageIter(2, (3, 8, 8), imglist=[[0, 'missing.png']],
                            path_root=str(tmp_path))
    with pytest.raises(FileNotFoundError, match='missing.png'):
        it.next()
    (tmp_path / 'bad.png').write_bytes(b'not an image')
    it = mx.image.ImageIter(2, (3, 8, 8), imglist=[[0, 'bad.png']], path_root=str(tmp_path))
    with pytest.raises(RuntimeError, match='Broken image filename: bad.png'):
        it.next()
    lst = tmp_path / 'x.lst'
    lst.write_text('0\tone\timg.png\n')
    with pytest.raises(ValueError, match='line 1'):
        mx.image.ImageIter(2, (3, 8, 8), path_imglist=str(lst))


def test_hard_reset_drops_the_rolled_over_images():
    kw = _iter_kwargs(dict(source='rec_idx', batch_size=4, data_shape=[3, 8, 8],
                           label_width=2, last_batch_handle='roll_over'))
    it = mx.img.ImageIter(**kw)
    labels = [b.label[0].asnumpy()[:, 0].tolist() for b in it]
    assert labels == [[0, 1, 2, 3]]                     # 6 images: 2 kept for the next epoch
    it.reset()
    assert it.next().label[0].asnumpy()[:, 0].tolist() == [4, 5, 0, 1]
    for _ in it:
        pass
    it.hard_reset()                                     # the kept ones are dropped
    assert it.next().label[0].asnumpy()[:, 0].tolist() == [0, 1, 2, 3]
