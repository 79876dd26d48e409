"""Make the golden data of ``mx.io.ImageDetRecordIter`` with the real MXNet 1.9.1.

Run from anywhere with MXNet's interpreter (Pillow and OpenCV's cv2 installed in it; the
images are encoded with Pillow and packed with ``mx.recordio.pack``)::

    MXNET_MKLDNN_ENABLED=0 $MXNET_PYTHON tests/golden/make_image_det_record.py

Writes under ``tests/golden/data/image_det_record/``:

- ``det.rec`` (8 PNG images of varied sizes, each with a detection label
  ``[header_width, object_width, (extra header), (id, x0, y0, x1, y1, extra...) x N]`` of a
  varying number of objects, one of them empty (x1 <= x0) that MXNet drops), ``det.idx``;
- ``det.lst`` (labels of variable width by image id for ``path_imglist``);
- ``stat.rec`` (one 40x60 image with one object, 100 times) for the random augmentations;
- ``cases.json`` (the iterator arguments of each case) and ``batches.npz``: for the
  deterministic cases every batch's data, label and pad as MXNet returns them; for the random
  ones (``stat_*``) the labels of several passes over ``stat.rec`` with
  ``resize_mode='shrink'`` into a large ``data_shape``, whose header (channels, rows,
  columns, label length) shows the size of each crop / pad MXNet drew, and the per-channel
  means of each image (``stat_color``: the hue / saturation / illumination / contrast
  draws); ``hls/*``: OpenCV's RGB <-> HLS of random pixels.

``tests/io/test_image_det_record.py`` compares.
"""
import io
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, 'data', 'image_det_record')

#: (height, width) of the images of det.rec
SIZES = [(30, 40), (36, 28), (24, 24), (40, 50), (20, 33), (44, 30), (27, 27), (33, 45)]

#: name -> (record file, extra ImageDetRecordIter arguments, epochs)
CASES = {
    'force': ('det', dict(data_shape=(3, 32, 32), batch_size=3), 2),
    'no_round': ('det', dict(data_shape=(3, 32, 32), batch_size=3, round_batch=False), 2),
    'pad_width': ('det', dict(data_shape=(3, 24, 28), batch_size=4, label_pad_width=40,
                              label_pad_value=-2.5), 1),
    'shrink': ('det', dict(data_shape=(3, 30, 36), batch_size=4, resize_mode='shrink'), 1),
    'fit': ('det', dict(data_shape=(3, 30, 36), batch_size=4, resize_mode='fit'), 1),
    'mirror': ('det', dict(data_shape=(3, 32, 32), batch_size=4, rand_mirror_prob=1.0), 1),
    'resize_norm': ('det', dict(data_shape=(3, 32, 32), batch_size=4, resize=26,
                                mean_r=123.68, mean_g=116.28, mean_b=103.53, std_r=58.395,
                                std_g=57.12, std_b=57.375, scale=0.5), 1),
    'nearest': ('det', dict(data_shape=(3, 29, 31), batch_size=4, inter_method=0), 1),
    'gray': ('det', dict(data_shape=(1, 32, 32), batch_size=4), 1),
    'imglist': ('det', dict(data_shape=(3, 32, 32), batch_size=4, _imglist=True), 1),
    'part': ('det', dict(data_shape=(3, 32, 32), batch_size=2, num_parts=2, part_index=1,
                         round_batch=False), 1),
    'mean_only': ('det', dict(data_shape=(3, 32, 32), batch_size=4, mean_g=100.0), 1),
    # random augmentations: the sizes MXNet draws, seen through 'shrink' into 64x64
    'stat_crop': ('stat', dict(data_shape=(3, 64, 64), batch_size=100, resize_mode='shrink',
                               rand_crop_prob=1.0, min_crop_scales=0.3, max_crop_scales=0.9,
                               min_crop_aspect_ratios=0.5, max_crop_aspect_ratios=2.0), 5),
    'stat_crop_iou': ('stat', dict(data_shape=(3, 64, 64), batch_size=100,
                                   resize_mode='shrink', rand_crop_prob=0.7,
                                   min_crop_scales=(0.2, 0.5), max_crop_scales=(0.8, 1.0),
                                   min_crop_overlaps=(0.5, 0.1), num_crop_sampler=2,
                                   max_crop_trials=(10, 20), crop_emit_mode='overlap',
                                   emit_overlap_thresh=0.4), 5),
    'stat_pad': ('stat', dict(data_shape=(3, 160, 160), batch_size=100, resize_mode='shrink',
                              rand_pad_prob=0.8, max_pad_scale=2.5, fill_value=50), 5),
    'stat_mirror': ('stat', dict(data_shape=(3, 64, 64), batch_size=100, resize_mode='shrink',
                                 rand_mirror_prob=0.3), 5),
    # colour: the per-channel means of each image (stat_*/means) show the draws
    'stat_color': ('stat', dict(data_shape=(3, 40, 60), batch_size=100,
                                random_hue_prob=0.5, max_random_hue=30,
                                random_saturation_prob=0.5, max_random_saturation=60,
                                random_illumination_prob=0.5, max_random_illumination=40,
                                random_contrast_prob=0.5, max_random_contrast=0.4), 20),
}

#: the object of stat.rec: (id, x0, y0, x1, y1)
STAT_OBJECT = [3.0, 0.2, 0.3, 0.6, 0.8]


def image(h, w, seed, noise=40):
    rs = np.random.RandomState(seed)
    yy, xx = np.mgrid[0:h, 0:w]
    base = np.stack([xx * 255.0 / w, yy * 255.0 / h, (xx + yy) * 127.0 / (h + w) + 60],
                    axis=-1)
    return np.clip(base + rs.randint(-noise, noise + 1, size=base.shape), 0, 255).astype(np.uint8)


def labels():
    """The detection label of each image of det.rec (lists of floats)."""
    rs = np.random.RandomState(7)
    out = []
    for i in range(len(SIZES)):
        extra_header = i % 3 == 2               # header_width 4 with two extra values
        object_width = 6 if i % 4 == 1 else 5   # an extra value per object
        head = [4.0, float(object_width), 9.0, -1.0] if extra_header else \
            [2.0, float(object_width)]
        objs = []
        for k in range(1 + (i * 5) % 4):
            x0, y0 = rs.uniform(0, 0.6, 2)
            x1, y1 = x0 + rs.uniform(0.1, 0.4), y0 + rs.uniform(0.1, 0.4)
            obj = [float(rs.randint(0, 20)), x0, y0, min(x1, 1.0), min(y1, 1.0)]
            if i == 3 and k == 1:
                obj[3] = obj[1]                  # empty: MXNet drops it
            objs.append(obj + ([0.5 + k] if object_width == 6 else []))
        out.append(head + [float(np.float32(v)) for o in objs for v in o])
    return out


def png(img):
    from PIL import Image
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format='PNG')
    return buf.getvalue()


def write_records(mx):
    os.makedirs(OUT, exist_ok=True)
    labs = labels()
    rec = mx.recordio.MXIndexedRecordIO(os.path.join(OUT, 'det.idx'),
                                        os.path.join(OUT, 'det.rec'), 'w')
    for i, (h, w) in enumerate(SIZES):
        header = mx.recordio.IRHeader(0, np.array(labs[i], np.float32), i, 0)
        rec.write_idx(i, mx.recordio.pack(header, png(image(h, w, i))))
    rec.close()
    with open(os.path.join(OUT, 'det.lst'), 'w') as f:
        for i, lab in enumerate(labs):
            # a different label of its own width: the first objects only, ids shifted
            head = int(lab[0])
            width = int(lab[1])
            keep = lab[:head] + lab[head:head + width]
            keep[head] += 100
            f.write('%d\t%s\timg%d.png\n' % (i, '\t'.join('%.6g' % v for v in keep), i))
    rec = mx.recordio.MXRecordIO(os.path.join(OUT, 'stat.rec'), 'w')
    stat = png(image(40, 60, 99, noise=0))     # smooth: a small file
    for i in range(100):
        header = mx.recordio.IRHeader(0, np.array([2, 5] + STAT_OBJECT, np.float32), i, 0)
        rec.write(mx.recordio.pack(header, stat))
    rec.close()


def iterator_args(kind, kwargs):
    """The arguments of ImageDetRecordIter for a case (paths relative to the data folder)."""
    args = dict(kwargs)
    if args.pop('_imglist', False):
        args['path_imglist'] = kind + '.lst'
    args['path_imgrec'] = kind + '.rec'
    return args


def hls_probe(arrays):
    """OpenCV's 8-bit BGR <-> HLS (the colour draws' conversion) on random pixels, and back
    after shifting H, L, S as the augmenter does (``hls/*``)."""
    import cv2
    rs = np.random.RandomState(5)
    rgb = rs.randint(0, 256, (1, 4096, 3)).astype(np.uint8)
    hls = cv2.cvtColor(np.ascontiguousarray(rgb[..., ::-1]), cv2.COLOR_BGR2HLS)
    shifted = hls.astype(np.int32) + rs.randint(-40, 41, (1, 4096, 3))
    shifted = np.clip(shifted, 0, [180, 255, 255]).astype(np.uint8)
    arrays['hls/rgb'], arrays['hls/hls'], arrays['hls/shifted'] = rgb, hls, shifted
    arrays['hls/back'] = cv2.cvtColor(shifted, cv2.COLOR_HLS2BGR)[..., ::-1]


def main(mx):
    write_records(mx)
    arrays, cases = {}, {}
    for name, (kind, kwargs, epochs) in sorted(CASES.items()):
        args = iterator_args(kind, kwargs)
        cases[name] = dict(args=args, epochs=epochs)
        real = {k: (os.path.join(OUT, v) if k.startswith('path_') else v)
                for k, v in args.items()}
        it = mx.io.ImageDetRecordIter(preprocess_threads=1, **real)
        stat = name.startswith('stat_')
        labels_seen, means_seen = [], []
        for epoch in range(epochs):
            if epoch:
                it.reset()
            for b, batch in enumerate(it):
                label = batch.label[0].asnumpy()
                if stat:
                    labels_seen.append(label)
                    means_seen.append(batch.data[0].asnumpy().mean(axis=(2, 3)))
                    continue
                key = '%s/%d/%d/' % (name, epoch, b)
                arrays[key + 'data'] = batch.data[0].asnumpy()
                arrays[key + 'label'] = label
                arrays[key + 'pad'] = np.array(batch.pad)
        if stat:
            arrays[name + '/labels'] = np.concatenate(labels_seen)
            arrays[name + '/means'] = np.concatenate(means_seen)
        print(name, 'ok', label.shape)
    hls_probe(arrays)
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
