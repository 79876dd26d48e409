"""Make the golden data of ``mx.image.ImageDetIter`` and the detection augmenters with the
real MXNet 1.9.1.

Run from anywhere with MXNet's interpreter (Pillow installed in it)::

    MXNET_MKLDNN_ENABLED=0 $MXNET_PYTHON tests/golden/make_image_det_iter.py

Writes under ``tests/golden/data/image_det_iter/``: ``img<i>.png`` (6 small PNG images),
``det.lst`` (their detection labels, 1 to 4 objects of width 6), ``cases.json`` (the
iterator arguments and seeds of each case) and ``batches.npz``:

- for each iterator case, every batch's data, label and pad over two passes, with Python's
  ``random`` and NumPy's generator seeded first (the augmenters draw from them, so the
  draws are the same numbers here and in symgraph);
- ``crop/<k>`` and ``pad/<k>``: what ``DetRandomCropAug._random_crop_proposal`` and
  ``DetRandomPadAug._random_pad_proposal`` return for fixed labels under seeds 0..59
  (x, y, w, h followed by the new label, or nothing).

``tests/io/test_image_detection.py`` compares.
"""
import io
import json
import os
import random
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, 'data', 'image_det_iter')

SIZES = [(30, 40), (36, 28), (24, 24), (40, 50), (20, 33), (32, 30)]

#: name -> (ImageDetIter keyword arguments, seed)
CASES = {
    'plain': (dict(batch_size=4, data_shape=(3, 24, 24), inter_method=1), 0),
    'geometry': (dict(batch_size=4, data_shape=(3, 24, 24), inter_method=1, rand_crop=0.8,
                      rand_pad=0.6, rand_mirror=True, min_object_covered=[0.1, 0.5],
                      area_range=(0.2, 2.5), max_attempts=30, pad_val=(10, 200, 30)), 3),
    'normalize': (dict(batch_size=3, data_shape=(3, 20, 26), inter_method=1, resize=28,
                       mean=True, std=True, rand_mirror=True), 5),
    'roll_over': (dict(batch_size=4, data_shape=(3, 16, 16), inter_method=1,
                       last_batch_handle='roll_over'), 0),
    'discard': (dict(batch_size=4, data_shape=(3, 16, 16), inter_method=1,
                     last_batch_handle='discard', shuffle=True), 7),
}

#: the labels the proposal functions are asked about: (label rows, height, width)
PROPOSALS = [
    ([[1, 0.1, 0.2, 0.5, 0.6], [2, 0.4, 0.3, 0.9, 0.95]], 40, 60),
    ([[0, 0.0, 0.0, 1.0, 1.0]], 33, 27),
    ([[3, 0.6, 0.1, 0.7, 0.3, 0.5], [1, 0.2, 0.5, 0.45, 0.9, 1.5], [2, 0.1, 0.1, 0.9, 0.2,
                                                                     2.5]], 50, 50),
]


def image(h, w, seed):
    rs = np.random.RandomState(seed)
    yy, xx = np.mgrid[0:h, 0:w]
    base = np.stack([xx * 255.0 / w, yy * 255.0 / h, (xx + yy) * 127.0 / (h + w) + 60],
                    axis=-1)
    return np.clip(base + rs.randint(-30, 31, size=base.shape), 0, 255).astype(np.uint8)


def labels():
    rs = np.random.RandomState(11)
    out = []
    for i in range(len(SIZES)):
        width = 6                               # an extra value per object
        objs = []
        for k in range(1 + i % 4):
            x0, y0 = rs.uniform(0, 0.6, 2)
            obj = [float(rs.randint(0, 10)), x0, y0, min(1.0, x0 + rs.uniform(0.15, 0.4)),
                   min(1.0, y0 + rs.uniform(0.15, 0.4))]
            objs += [round(v, 4) for v in obj] + ([0.25 * k] if width == 6 else [])
        out.append([2, width] + objs)
    return out


def write_files():
    from PIL import Image
    os.makedirs(OUT, exist_ok=True)
    for i, (h, w) in enumerate(SIZES):
        Image.fromarray(image(h, w, i)).save(os.path.join(OUT, 'img%d.png' % i))
    with open(os.path.join(OUT, 'det.lst'), 'w') as f:
        for i, lab in enumerate(labels()):
            f.write('%d\t%s\timg%d.png\n' % (i, '\t'.join('%g' % v for v in lab), i))


def proposals(mx, arrays):
    det = mx.image.detection
    crop = det.DetRandomCropAug(min_object_covered=0.3, aspect_ratio_range=(0.5, 2.0),
                                area_range=(0.1, 1.0), min_eject_coverage=0.4,
                                max_attempts=20)
    pad = det.DetRandomPadAug(aspect_ratio_range=(0.6, 1.6), area_range=(1.0, 3.0),
                              max_attempts=20)
    for k, (rows, h, w) in enumerate(PROPOSALS):
        label = np.array(rows, np.float32)
        for name, aug in (('crop', crop), ('pad', pad)):
            found = []
            for seed in range(60):
                random.seed(seed)
                out = aug._random_crop_proposal(label, h, w) if name == 'crop' else \
                    aug._random_pad_proposal(label, h, w)
                found.append(np.concatenate([[seed], out[:4], out[4].ravel()]).astype(
                    np.float64) if out else np.array([seed], np.float64))
            arrays['%s/%d' % (name, k)] = np.concatenate(
                [np.concatenate([[len(f)], f]) for f in found])


def main(mx):
    write_files()
    arrays, cases = {}, {}
    for name, (kwargs, seed) in sorted(CASES.items()):
        cases[name] = dict(args=kwargs, seed=seed)
        random.seed(seed)
        np.random.seed(seed)
        it = mx.image.ImageDetIter(path_imglist=os.path.join(OUT, 'det.lst'), path_root=OUT,
                                   **kwargs)
        arrays[name + '/label_shape'] = np.array(it.label_shape)
        for epoch in range(2):
            if epoch:
                it.reset()
            for b, batch in enumerate(it):
                key = '%s/%d/%d/' % (name, epoch, b)
                arrays[key + 'data'] = batch.data[0].asnumpy()
                arrays[key + 'label'] = batch.label[0].asnumpy()
                arrays[key + 'pad'] = np.array(batch.pad)
        print(name, 'ok', it.label_shape)
    proposals(mx, arrays)
    with open(os.path.join(OUT, 'cases.json'), 'w') as f:
        json.dump({'mxnet_version': mx.__version__, 'cases': cases}, f, indent=1,
                  sort_keys=True)
        f.write('\n')
    np.savez_compressed(os.path.join(OUT, 'batches.npz'), **arrays)


if __name__ == '__main__':
    import mxnet
    main(mxnet)
    sys.stdout.flush()
    os._exit(0)     # MXNet may hang at interpreter exit
