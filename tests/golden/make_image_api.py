"""Make the golden data of ``mx.image`` (functions, augmenters, ``ImageIter``) with the real
MXNet 1.9.1.

Run from anywhere with MXNet's interpreter (Pillow installed in it)::

    MXNET_MKLDNN_ENABLED=0 $MXNET_PYTHON tests/golden/make_image_api.py

Writes under ``tests/golden/data/image_api/``: ``imgs/*.png`` (6 small generated pictures,
one gray), ``images.rec``/``images.idx`` (the same PNGs packed with ``mx.recordio.pack``,
labels ``[i, 2 * i]``), ``images.lst``, ``cases.json`` (every case's arguments) and
``golden.npz`` (MXNet's outputs: resizes with every interpolation, crops, borders,
normalisation, rotations, the augmenters under fixed seeds of Python's ``random`` and
NumPy, ``dumps()`` strings, and ``ImageIter`` batches). ``tests/io/test_image_api.py``
compares symgraph with them.
"""
import json
import os
import random

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, 'data', 'image_api')
#: (height, width) of the pictures; index 3 is stored gray
SIZES = [(20, 26), (24, 18), (16, 16), (30, 22), (12, 20), (22, 22)]
#: imresize: (w, h) targets, each with interp 0-4, for uint8 and float32
RESIZES = [(40, 31), (13, 9), (26, 10), (11, 35), (26, 20)]  # float32: the first two


def picture(k, h, w):
    rng = np.random.RandomState(k)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    base = np.stack([255 * xx / (w - 1), 255 * yy / (h - 1),
                     127 + 100 * np.sin((xx * (k + 1) + yy) / 3.0)], axis=2)
    return np.clip(base + rng.randint(-30, 31, (h, w, 3)), 0, 255).astype(np.uint8)


def seeded(seed, fn):
    random.seed(seed)
    np.random.seed(seed)
    return fn()


def main():
    import mxnet as mx
    from PIL import Image
    os.makedirs(os.path.join(OUT, 'imgs'), exist_ok=True)
    gold, cases = {}, {}
    pics = [picture(k, h, w) for k, (h, w) in enumerate(SIZES)]
    names = []
    for k, p in enumerate(pics):
        name = 'img_%d.png' % k
        img = Image.fromarray(p[..., 0] if k == 3 else p)
        img.save(os.path.join(OUT, 'imgs', name), optimize=False)
        names.append(name)
    src = pics[0]
    gold['src'] = src
    nd_u8 = mx.nd.array(src, dtype='uint8')
    nd_f32 = mx.nd.array(src, dtype='float32')

    # ---- decoding
    for k, name in enumerate(names):
        path = os.path.join(OUT, 'imgs', name)
        gold['imread/%d' % k] = mx.image.imread(path).asnumpy()
        gold['imread_gray/%d' % k] = mx.image.imread(path, flag=0).asnumpy()
        with open(path, 'rb') as f:
            gold['imdecode_bgr/%d' % k] = mx.image.imdecode(f.read(), to_rgb=0).asnumpy()

    # ---- resizing
    for w, h in RESIZES:
        for interp in range(5):
            gold['imresize/uint8/%d/%d/%d' % (w, h, interp)] = mx.image.imresize(
                nd_u8, w, h, interp=interp).asnumpy()
            if (w, h) in RESIZES[:2]:
                gold['imresize/float32/%d/%d/%d' % (w, h, interp)] = mx.image.imresize(
                    nd_f32, w, h, interp=interp).asnumpy()
    cases['resizes'] = RESIZES
    cases['resize_short'] = [[s, i] for s in (8, 15, 33) for i in (0, 1, 2, 3, 4, 9)]
    for s, i in cases['resize_short']:
        gold['resize_short/%d/%d' % (s, i)] = mx.image.resize_short(nd_u8, s, i).asnumpy()

    # ---- crops, scale_down, borders, normalisation
    cases['fixed_crop'] = [[2, 3, 10, 8, None, 2], [0, 0, 26, 20, [13, 10], 3],
                           [5, 1, 12, 15, [20, 25], 9], [4, 4, 6, 6, [6, 6], 1]]
    for j, (x0, y0, w, h, size, interp) in enumerate(cases['fixed_crop']):
        gold['fixed_crop/%d' % j] = mx.image.fixed_crop(
            nd_u8, x0, y0, w, h, None if size is None else tuple(size), interp).asnumpy()
    cases['center_crop'] = [[[10, 10], 2], [[30, 12], 1], [[26, 20], 2], [[7, 19], 3],
                            [[40, 40], 9]]
    for j, (size, interp) in enumerate(cases['center_crop']):
        out, rect = mx.image.center_crop(nd_u8, tuple(size), interp)
        gold['center_crop/%d' % j] = out.asnumpy()
        gold['center_crop_rect/%d' % j] = np.array(rect)
    cases['scale_down'] = [[[640, 480], [720, 120]], [[360, 1000], [480, 500]],
                           [[300, 400], [0, 0]], [[20, 30], [25, 25]], [[7, 5], [3, 9]]]
    gold['scale_down'] = np.array([mx.image.scale_down(tuple(a), tuple(b))
                                   for a, b in cases['scale_down']])
    cases['borders'] = [[1, 2, 3, 4, t] for t in range(5)] + [[30, 0, 0, 41, 2],
                                                               [5, 5, 30, 30, 4]]
    for j, (t, b, l, r, typ) in enumerate(cases['borders']):
        gold['border/%d' % j] = mx.image.copyMakeBorder(nd_u8, t, b, l, r, type=typ,
                                                        values=[9, 99, 199]).asnumpy()
    mean, std = np.array([100.5, 120.25, 90.0]), np.array([50.0, 60.5, 55.25])
    gold['color_normalize'] = mx.image.color_normalize(
        nd_f32.copy(), mx.nd.array(mean), mx.nd.array(std)).asnumpy()
    gold['color_normalize_mean'] = mx.image.color_normalize(
        nd_f32.copy(), mx.nd.array(mean)).asnumpy()

    # ---- rotation
    chw = mx.nd.array(src[:12, :14].transpose(2, 0, 1).astype(np.float32) / 255)
    cases['imrotate'] = [[a, zi, zo] for a in (-30.0, 6.0, 90.0) for zi, zo in
                         ((False, False), (True, False), (False, True))]
    for j, (a, zi, zo) in enumerate(cases['imrotate']):
        gold['imrotate/%d' % j] = mx.image.imrotate(chw, a, zoom_in=zi, zoom_out=zo).asnumpy()
    batch = mx.nd.stack(chw, chw * 0.5, chw[::-1])
    gold['imrotate_batch'] = mx.image.imrotate(batch, mx.nd.array([10, -45, 180])).asnumpy()
    gold['random_rotate'] = seeded(5, lambda: mx.image.random_rotate(batch, (-20, 20))
                                   ).asnumpy()

    # ---- random functions and augmenters under fixed seeds (MXNet draws from Python's
    # random and NumPy's global generator; the same seeds give the same draws)
    small = mx.nd.array(src[:8, :10], dtype='float32')      # for the colour augmenters

    def many(fn, n=6):
        return np.stack([fn().asnumpy() for _ in range(n)])
    gold['random_crop'] = seeded(1, lambda: many(
        lambda: mx.image.random_crop(nd_u8, (10, 12), 2)[0]))
    gold['random_crop_rects'] = np.array(seeded(1, lambda: [
        mx.image.random_crop(nd_u8, (10, 12), 2)[1] for _ in range(6)]))
    gold['random_crop_up'] = seeded(2, lambda: many(
        lambda: mx.image.random_crop(nd_u8, (40, 30), 1)[0], 2))
    gold['random_size_crop'] = seeded(3, lambda: many(
        lambda: mx.image.random_size_crop(nd_u8, (14, 14), 0.3, (0.75, 1.33), 2)[0]))
    gold['random_size_crop_rects'] = np.array(seeded(3, lambda: [
        mx.image.random_size_crop(nd_u8, (14, 14), 0.3, (0.75, 1.33), 2)[1]
        for _ in range(6)]))
    gold['random_size_crop_fallback'] = np.array(seeded(4, lambda: [
        mx.image.random_size_crop(nd_u8, (14, 14), (5.0, 6.0), (1.0, 1.0), 2)[1]
        for _ in range(2)]))
    augs = {
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
        'lighting': mx.image.LightingAug(0.1, np.array([55.46, 4.794, 1.148]),
                                         np.array([[-0.5675, 0.7192, 0.4009],
                                                   [-0.5808, -0.0045, -0.8140],
                                                   [-0.5836, -0.6948, 0.4203]])),
        'color_normalize': mx.image.ColorNormalizeAug([1.0, 2.0, 3.0], [2.0, 4.0, 8.0]),
        'gray': mx.image.RandomGrayAug(0.5),
        'flip': mx.image.HorizontalFlipAug(0.5),
        'cast': mx.image.CastAug('float64'),
    }
    float_augs = ('brightness', 'contrast', 'saturation', 'hue', 'color_jitter', 'lighting',
                  'color_normalize', 'gray')
    for name, aug in augs.items():
        gold['dumps/' + name] = np.array(json.dumps(aug.dumps()))
        src_nd = small if name in float_augs else nd_u8
        gold['aug/' + name] = seeded(7, lambda: many(lambda: aug(src_nd.copy()),
                                                     1 if name == 'cast' else 4))
    cases['augs'] = sorted(augs)
    cases['float_augs'] = list(float_augs)

    # ---- CreateAugmenter: the list's dumps
    cases['create'] = [
        dict(data_shape=[3, 16, 16]),
        dict(data_shape=[3, 12, 10], resize=20, rand_crop=True, rand_resize=True,
             rand_mirror=True, mean=True, std=True, brightness=0.1, contrast=0.2,
             saturation=0.3, hue=0.1, pca_noise=0.05, rand_gray=0.2, inter_method=10),
        dict(data_shape=[3, 8, 8], rand_crop=True, mean=[1.0, 2.0, 3.0], inter_method=1),
    ]
    for j, kw in enumerate(cases['create']):
        kw = dict(kw, data_shape=tuple(kw['data_shape']))
        if isinstance(kw.get('mean'), list):
            kw['mean'] = np.array(kw['mean'])
        gold['create/%d' % j] = np.array(json.dumps(
            [a.dumps() for a in mx.image.CreateAugmenter(**kw)]))

    # ---- ImageIter: record and list sources
    rec, idx = os.path.join(OUT, 'images.rec'), os.path.join(OUT, 'images.idx')
    writer = mx.recordio.MXIndexedRecordIO(idx, rec, 'w')
    for k, name in enumerate(names):
        with open(os.path.join(OUT, 'imgs', name), 'rb') as f:
            header = mx.recordio.IRHeader(0, [float(k), 2.0 * k], k, 0)
            writer.write_idx(k, mx.recordio.pack(header, f.read()))
    writer.close()
    with open(os.path.join(OUT, 'images.lst'), 'w') as f:
        for k, name in enumerate(names):
            f.write('%d\t%d\t%s\n' % (k, 10 + k, name))
    cases['iters'] = {
        'rec_pad': dict(source='rec', batch_size=4, data_shape=[3, 10, 10], label_width=2,
                        epochs=2),
        'rec_idx_discard': dict(source='rec_idx', batch_size=4, data_shape=[3, 12, 8],
                                label_width=2, last_batch_handle='discard', epochs=2),
        'rec_shuffle_rollover': dict(source='rec_idx', batch_size=4, data_shape=[3, 8, 8],
                                     label_width=2, shuffle=True,
                                     last_batch_handle='roll_over', epochs=3),
        'rec_parts': dict(source='rec_idx', batch_size=2, data_shape=[3, 8, 8],
                          label_width=2, num_parts=2, part_index=1, epochs=1),
        'lst_aug': dict(source='lst', batch_size=3, data_shape=[3, 10, 12], rand_crop=True,
                        rand_mirror=True, brightness=0.2, mean=True, std=True, epochs=2),
        'list_rollover': dict(source='list', batch_size=4, data_shape=[3, 9, 9],
                              last_batch_handle='roll_over', dtype='int32', resize=12,
                              epochs=3),
    }
    for name, spec in cases['iters'].items():
        kw = {k: v for k, v in spec.items() if k not in ('source', 'epochs')}
        kw['data_shape'] = tuple(kw['data_shape'])
        if spec['source'] == 'rec':
            kw['path_imgrec'] = rec
        elif spec['source'] == 'rec_idx':
            kw.update(path_imgrec=rec, path_imgidx=idx)
        elif spec['source'] == 'lst':
            kw.update(path_imglist=os.path.join(OUT, 'images.lst'),
                      path_root=os.path.join(OUT, 'imgs'))
        else:
            kw.update(imglist=[[float(k) / 2, os.path.join(OUT, 'imgs', n)]
                               for k, n in enumerate(names)], path_root='')
        random.seed(11)
        np.random.seed(11)
        it = mx.image.ImageIter(**kw)
        for epoch in range(spec['epochs']):
            for b, batch in enumerate(it):
                key = 'iter/%s/%d/%d' % (name, epoch, b)
                gold[key + '/data'] = batch.data[0].asnumpy()
                gold[key + '/label'] = batch.label[0].asnumpy()
                gold[key + '/pad'] = np.array(batch.pad)
            it.reset()
    np.savez_compressed(os.path.join(OUT, 'golden.npz'), **gold)
    with open(os.path.join(OUT, 'cases.json'), 'w') as f:
        json.dump(cases, f, indent=1, sort_keys=True)
    print('wrote %d arrays to %s' % (len(gold), OUT))


if __name__ == '__main__':
    main()
