"""mx.image.ImageDetIter and the detection augmenters (symgraph/image/detection.py) against
MXNet 1.9.1 (tests/golden/make_image_det_iter.py): with Python's and NumPy's generators
seeded as there, the same batches (labels exact, pixels within a grey level), the same crop
and pad proposals, and the label parsing, reshaping and errors."""
import json
import os
import random

import numpy as np
import pytest

import symgraph as mx
from symgraph.image import detection as det

pytest.importorskip('PIL')

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, '..', 'golden', 'data', 'image_det_iter')
with open(os.path.join(DATA, 'cases.json')) as _f:
    CASES = json.load(_f)['cases']
LST = os.path.join(DATA, 'det.lst')


@pytest.fixture(scope='module')
def golden():
    return np.load(os.path.join(DATA, 'batches.npz'))


def _kwargs(args):
    out = dict(args)
    for key in ('data_shape', 'area_range', 'pad_val', 'aspect_ratio_range'):
        if key in out:
            out[key] = tuple(out[key])
    return out


def _seeded_iter(case):
    random.seed(case['seed'])
    np.random.seed(case['seed'])
    return mx.image.ImageDetIter(path_imglist=LST, path_root=DATA, **_kwargs(case['args']))


@pytest.mark.parametrize('name', sorted(CASES))
def test_batches_equal_mxnet(name, golden):
    case = CASES[name]
    it = _seeded_iter(case)
    assert it.label_shape == tuple(golden[name + '/label_shape'])
    grey = 1.0 / 57.12 if case['args'].get('std') else 1.0
    for epoch in range(2):
        if epoch:
            it.reset()
        batches = list(it)
        keys = [k for k in golden.files if k.startswith('%s/%d/' % (name, epoch))
                and k.endswith('/pad')]
        assert len(batches) == len(keys), (name, epoch)
        for b, batch in enumerate(batches):
            key = '%s/%d/%d/' % (name, epoch, b)
            assert batch.pad == int(golden[key + 'pad'])
            label = batch.label[0].asnumpy()
            np.testing.assert_allclose(label, golden[key + 'label'], rtol=1e-6, atol=1e-7,
                                       err_msg=key)
            data, ref = batch.data[0].asnumpy(), golden[key + 'data']
            assert data.shape == ref.shape and data.dtype == np.float32
            diff = np.abs(data - ref)
            # bilinear resizes within one grey level of OpenCV's (two resizes: two)
            levels = 2 if case['args'].get('resize') else 1
            assert diff.max() <= levels * grey + 1e-4, (key, diff.max())
            assert (diff <= 1e-4).mean() > 0.9, key


@pytest.mark.parametrize('kind', ['crop', 'pad'])
def test_proposals_equal_mxnet(kind, golden):
    crop = det.DetRandomCropAug(min_object_covered=0.3, aspect_ratio_range=(0.5, 2.0),
                                area_range=(0.1, 1.0), min_eject_coverage=0.4,
                                max_attempts=20)
    pad = det.DetRandomPadAug(aspect_ratio_range=(0.6, 1.6), area_range=(1.0, 3.0),
                              max_attempts=20)
    labels = [([[1, 0.1, 0.2, 0.5, 0.6], [2, 0.4, 0.3, 0.9, 0.95]], 40, 60),
              ([[0, 0.0, 0.0, 1.0, 1.0]], 33, 27),
              ([[3, 0.6, 0.1, 0.7, 0.3, 0.5], [1, 0.2, 0.5, 0.45, 0.9, 1.5],
                [2, 0.1, 0.1, 0.9, 0.2, 2.5]], 50, 50)]
    found = 0
    for k, (rows, h, w) in enumerate(labels):
        flat, pos = golden['%s/%d' % (kind, k)], 0
        label = np.array(rows, np.float32)
        for seed in range(60):
            n = int(flat[pos])
            ref = flat[pos + 1:pos + 1 + n]
            pos += 1 + n
            random.seed(seed)
            out = crop._random_crop_proposal(label, h, w) if kind == 'crop' else \
                pad._random_pad_proposal(label, h, w)
            assert ref[0] == seed
            if len(ref) == 1:
                assert out == (), (k, seed)
                continue
            found += 1
            assert tuple(out[:4]) == tuple(ref[1:5]), (k, seed)
            np.testing.assert_allclose(out[4].ravel(), ref[5:], rtol=1e-6, atol=1e-7)
    assert found > 60          # most seeds find a region


def test_flip_and_select_augmenters():
    img = mx.nd.array(np.arange(24).reshape(2, 4, 3), dtype='uint8')
    label = np.array([[1, 0.1, 0.2, 0.4, 0.9]], np.float32)
    out, lab = det.DetHorizontalFlipAug(1.0)(img, label.copy())
    np.testing.assert_array_equal(out.asnumpy(), img.asnumpy()[:, ::-1])
    np.testing.assert_allclose(lab, [[1, 0.6, 0.2, 0.9, 0.9]], rtol=1e-6)
    out, lab = det.DetHorizontalFlipAug(0.0)(img, label.copy())
    np.testing.assert_array_equal(lab, label)
    skip = det.DetRandomSelectAug([det.DetHorizontalFlipAug(1.0)], skip_prob=1)
    assert skip(img, label)[1] is label
    assert det.DetRandomSelectAug([]).skip_prob == 1
    with pytest.raises(ValueError, match='DetAugmenter in aug_list only'):
        det.DetRandomSelectAug([mx.image.CastAug()])
    with pytest.raises(TypeError, match='invalid Augmenter'):
        det.DetBorrowAug(det.DetHorizontalFlipAug(0.5))
    borrow = det.DetBorrowAug(mx.image.CastAug())
    out, lab = borrow(img, label)
    assert out.dtype == np.float32 and lab is label
    assert borrow.dumps()[0] == 'detborrowaug' and 'castaug' in borrow.dumps()[1]
    assert json.loads(det.DetHorizontalFlipAug(0.5).dumps()) == ['dethorizontalflipaug',
                                                                {'p': 0.5}]


def test_crop_and_pad_keep_boxes_on_the_objects():
    """Boxes map to the same pixels after a crop or pad (property over many seeds)."""
    img = np.zeros((40, 60, 3), np.uint8)
    img[8:24, 6:30] = 255                     # the object: x 0.1..0.5, y 0.2..0.6
    label = np.array([[1, 0.1, 0.2, 0.5, 0.6]], np.float32)
    crop = det.DetRandomCropAug(min_object_covered=0.5, area_range=(0.2, 1.0))
    pad = det.DetRandomPadAug(area_range=(1.0, 3.0), pad_val=(0, 0, 0))
    changed = 0
    for seed in range(30):
        random.seed(seed)
        for aug in (crop, pad):
            out, lab = aug(mx.nd.array(img, dtype='uint8'), label.copy())
            out = out.asnumpy()
            h, w = out.shape[:2]
            changed += (h, w) != (40, 60)
            x0, y0, x1, y1 = lab[0, 1] * w, lab[0, 2] * h, lab[0, 3] * w, lab[0, 4] * h
            inside = out[int(np.ceil(y0)):int(y1), int(np.ceil(x0)):int(x1)]
            assert inside.size and inside.mean() > 250, (seed, type(aug).__name__)
            assert out.sum() / 255 <= 16 * 24 * 3 + 1
    assert changed > 40


def test_create_det_augmenter_and_multi_crop():
    augs = det.CreateDetAugmenter((3, 30, 30), resize=40, rand_crop=0.5, rand_pad=0.5,
                                  rand_gray=0.1, rand_mirror=True, mean=True, std=True,
                                  brightness=0.1, contrast=0.1, saturation=0.1, pca_noise=0.1,
                                  hue=0.1, min_object_covered=[0.1, 0.3, 0.5])
    names = [type(a).__name__ if not isinstance(a, det.DetBorrowAug)
             else type(a.augmenter).__name__ for a in augs]
    assert names == ['ResizeAug', 'DetRandomSelectAug', 'DetHorizontalFlipAug',
                     'DetRandomSelectAug', 'ForceResizeAug', 'CastAug', 'ColorJitterAug',
                     'HueJitterAug', 'LightingAug', 'RandomGrayAug', 'ColorNormalizeAug']
    assert [a.min_object_covered for a in augs[1].aug_list] == [0.1, 0.3, 0.5]
    assert augs[1].skip_prob == 0.5 and augs[3].aug_list[0].area_range == (1.0, 3.0)
    with pytest.raises(ValueError, match='one value or 3'):
        det.CreateMultiRandCropAugmenter(min_object_covered=[0.1, 0.3, 0.5],
                                         max_attempts=[1, 2])
    with pytest.raises(ValueError, match='mean must be True, None or a NumPy array'):
        det.CreateDetAugmenter((3, 30, 30), mean=[1, 2, 3])
    with pytest.warns(UserWarning, match='invalid area_range'):
        assert not det.DetRandomCropAug(area_range=(0.5, 0.2)).enabled
    with pytest.warns(UserWarning, match='invalid parameters'):
        assert not det.DetRandomPadAug(area_range=(1.0, 1.0)).enabled


def test_label_parsing_and_reshape():
    it = mx.image.ImageDetIter(2, (3, 16, 16), path_imglist=LST, path_root=DATA)
    assert it.label_shape == (4, 6) and it.provide_label[0][1] == (2, 4, 6)
    parsed = it._parse_label(np.array([2, 5, 1, 0.1, 0.1, 0.5, 0.5, 2, 0.3, 0.3, 0.3, 0.9]))
    np.testing.assert_allclose(parsed, [[1, 0.1, 0.1, 0.5, 0.5]])      # empty box dropped
    with pytest.raises(RuntimeError, match='Label shape is invalid'):
        it._parse_label(np.array([2, 5, 1, 0.1, 0.1, 0.5]))
    with pytest.raises(RuntimeError, match='inconsistent with annotation width 5'):
        it._parse_label(np.array([2, 5, 1, 0.1, 0.1, 0.5, 0.5, 3]))
    with pytest.raises(RuntimeError, match='no valid label'):
        it._parse_label(np.array([2, 5, 1, 0.5, 0.1, 0.5, 0.5]))
    # a new data_shape needs augmenters that make it (as in MXNet)
    it.reshape(data_shape=(3, 20, 18), label_shape=(7, 6))
    it.auglist = det.CreateDetAugmenter((3, 20, 18))
    assert it.provide_data[0][1] == (2, 3, 20, 18)
    batch = next(it)
    assert batch.data[0].shape == (2, 3, 20, 18) and batch.label[0].shape == (2, 7, 6)
    assert np.all(batch.label[0].asnumpy()[:, 4:] == -1)
    with pytest.raises(ValueError, match='reduce label count from 7 to 3'):
        it.reshape(label_shape=(3, 6))
    with pytest.raises(ValueError, match='object width inconsistent: 6 vs 5'):
        it.reshape(label_shape=(8, 5))
    val = mx.image.ImageDetIter(2, (3, 16, 16), imglist=[[2, 6, 1, 0.1, 0.1, 0.5, 0.5, 0,
                                                          'img0.png']], path_root=DATA)
    assert val.label_shape == (1, 6)
    assert it.sync_label_shape(val) is val and val.label_shape == (7, 6)
    with pytest.raises(TypeError, match='ImageDetIter'):
        it.sync_label_shape(object())


def test_mxnet_unit_test_flow(tmp_path):
    """MXNet's test_image_detiter / test_det_augmenters on the golden images."""
    images = [os.path.join(DATA, 'img%d.png' % i) for i in range(6)]
    rs = np.random.RandomState(0)

    def objects():
        num = rs.randint(1, 10)
        xy, wh = rs.rand(num, 2), rs.rand(num, 2) / 2
        boxes = np.clip(np.hstack((xy - wh, xy + wh)), 0, 1)
        return [2, 5] + np.hstack((rs.randint(0, 20, (num, 1)), boxes)).ravel().tolist()

    im_list = [objects() + [x] for x in images]
    it = mx.image.ImageDetIter(2, (3, 30, 30), imglist=im_list, path_root='')
    for _ in range(3):
        assert len(list(it)) == 3
        it.reset()
    it = mx.image.ImageDetIter(4, (3, 30, 30), imglist=im_list, path_root='',
                               resize=64, rand_crop=1, rand_pad=1, rand_gray=0.1,
                               rand_mirror=True, mean=True, std=np.array([1.1, 1.03, 1.05]),
                               brightness=0.1, contrast=0.1, saturation=0.1, pca_noise=0.1,
                               hue=0.1, inter_method=10, min_object_covered=0.5,
                               aspect_ratio_range=(0.2, 5), area_range=(0.1, 4.0),
                               min_eject_coverage=0.5, max_attempts=50)
    batches = list(it)
    assert [b.pad for b in batches] == [0, 2]
    label = batches[0].label[0].asnumpy()
    boxes = label[label[:, :, 0] >= 0]
    assert np.all(boxes[:, 1:5] >= 0) and np.all(boxes[:, 1:5] <= 1)
    assert np.all(boxes[:, 3] > boxes[:, 1]) and np.all(boxes[:, 4] > boxes[:, 2])
    lst = tmp_path / 'det.lst'
    lst.write_text(''.join('%d\t%s\t%s\n' % (k, '\t'.join(str(v) for v in objects()), x)
                           for k, x in enumerate(images)))
    for bs, handle, count in ((2, 'pad', 3), (4, 'discard', 1), (4, 'pad', 2),
                              (4, 'roll_over', 1)):
        it = mx.image.ImageDetIter(bs, (3, 20, 20), path_imglist=str(lst), path_root='',
                                   last_batch_handle=handle)
        assert len(list(it)) == count, handle


def test_records_and_scalar_pad_val(tmp_path):
    """ImageDetIter reads .rec/.idx records whose headers hold the detection labels (as
    im2rec --pack-label writes them); a scalar pad_val fills every channel."""
    rec = mx.recordio.MXIndexedRecordIO(str(tmp_path / 'd.idx'), str(tmp_path / 'd.rec'), 'w')
    with open(LST) as f:
        rows = [line.split('\t') for line in f]
    for row in rows:
        with open(os.path.join(DATA, row[-1].strip()), 'rb') as img:
            label = np.array(row[1:-1], np.float32)
            rec.write_idx(int(row[0]), mx.recordio.pack(
                mx.recordio.IRHeader(0, label, int(row[0]), 0), img.read()))
    rec.close()
    from_rec = mx.image.ImageDetIter(3, (3, 16, 16), path_imgrec=str(tmp_path / 'd.rec'),
                                     path_imgidx=str(tmp_path / 'd.idx'))
    from_lst = mx.image.ImageDetIter(3, (3, 16, 16), path_imglist=LST, path_root=DATA)
    assert from_rec.label_shape == from_lst.label_shape == (4, 6)
    for a, b in zip(from_rec, from_lst):
        np.testing.assert_array_equal(a.data[0].asnumpy(), b.data[0].asnumpy())
        np.testing.assert_allclose(a.label[0].asnumpy(), b.label[0].asnumpy(), rtol=1e-6)
    img = mx.nd.array(np.full((10, 10, 3), 9), dtype='uint8')
    label = np.array([[0, 0.2, 0.2, 0.8, 0.8]], np.float32)
    random.seed(0)
    out, lab = det.DetRandomPadAug(area_range=(2.0, 3.0), pad_val=77)(img, label)
    out = out.asnumpy()
    assert out.shape[0] * out.shape[1] >= 200 and (out == 77).all(axis=2).sum() > 90
    assert ((out == 9).all(axis=2)).sum() == 100
    with pytest.raises(TypeError, match='pad_val must be a number'):
        det.DetRandomPadAug(pad_val='grey')
