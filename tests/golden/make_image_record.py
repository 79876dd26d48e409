"""Make the golden data of ``mx.io.ImageRecordIter`` with the real MXNet 1.9.1.

Run from anywhere with MXNet's interpreter (Pillow installed in it; MXNet's own
``recordio.pack_img`` would need cv2, so the images are encoded with Pillow and packed with
``mx.recordio.pack``)::

    MXNET_MKLDNN_ENABLED=0 $MXNET_PYTHON tests/golden/make_image_record.py

Writes under ``tests/golden/data/image_record/``: ``png.rec``/``png.idx`` (10 PNG images of
varied sizes, one gray and one with alpha, labels ``1.5 * i``), ``jpg.rec``/``jpg.idx`` (the
same pixels as JPEG, quality 90), ``multi.rec``/``multi.idx`` (PNG with two labels each),
``list.lst`` (labels by image id for ``path_imglist``), ``cases.json`` (the iterator
arguments of each case) and ``batches.npz`` (for each case and epoch, every batch's data,
label and pad as MXNet returns them). ``tests/io/test_image_record_iter.py`` compares.
"""
import io
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, 'data', 'image_record')

#: (height, width, mode) of the images; (12, 20) and (14, 30) are smaller than the crop
SIZES = [(20, 26, 'RGB'), (24, 18, 'RGB'), (16, 16, 'RGB'), (30, 22, 'RGB'),
         (12, 20, 'RGB'), (22, 22, 'L'), (19, 27, 'RGBA'), (26, 17, 'RGB'),
         (14, 30, 'RGB'), (21, 23, 'RGB')]

#: name -> (record file, extra ImageRecordIter arguments, epochs)
CASES = {
    'center': ('png', dict(data_shape=(3, 16, 16), batch_size=4), 2),
    'no_round': ('png', dict(data_shape=(3, 16, 16), batch_size=4, round_batch=False), 2),
    'resize_norm': ('png', dict(data_shape=(3, 16, 16), batch_size=3, resize=18,
                                mean_r=123.68, mean_g=116.28, mean_b=103.53, std_r=58.395,
                                std_g=57.12, std_b=57.375, scale=0.5), 1),
    'jpeg_resize': ('jpg', dict(data_shape=(3, 16, 16), batch_size=5, resize=20), 1),
    'jpeg_center': ('jpg', dict(data_shape=(3, 12, 14), batch_size=5), 1),
    'gray': ('png', dict(data_shape=(1, 16, 16), batch_size=5), 1),
    'gray_jpeg': ('jpg', dict(data_shape=(1, 16, 16), batch_size=5), 1),
    'mirror_pad': ('png', dict(data_shape=(3, 16, 16), batch_size=5, mirror=True, pad=2,
                               fill_value=127), 1),
    'nearest': ('png', dict(data_shape=(3, 16, 16), batch_size=5, resize=17,
                            inter_method=0), 1),
    'uint8': ('png', dict(data_shape=(3, 16, 16), batch_size=5, dtype='uint8'), 1),
    'int8': ('png', dict(data_shape=(3, 16, 16), batch_size=5, dtype='int8', mean_r=100,
                         mean_g=120.4, mean_b=90.6), 1),
    'part_idx': ('png', dict(data_shape=(3, 16, 16), batch_size=2, num_parts=3,
                             part_index=1), 1),
    # round_batch=False: MXNet 1.9.1 loses a batch of a part without an index in its
    # first pass with round_batch
    'part_noidx': ('png', dict(data_shape=(3, 16, 16), batch_size=2, num_parts=3,
                               part_index=2, round_batch=False, _no_idx=True), 1),
    'multi_label': ('multi', dict(data_shape=(3, 16, 16), batch_size=5, label_width=2), 1),
    'imglist': ('png', dict(data_shape=(3, 16, 16), batch_size=5, label_width=3,
                            _imglist=True), 1),
}


def images():
    rs = np.random.RandomState(42)
    out = []
    for i, (h, w, mode) in enumerate(SIZES):
        yy, xx = np.mgrid[0:h, 0:w]
        base = np.stack([xx * 255.0 / w, yy * 255.0 / h, (xx + yy) * 127.0 / (h + w) + 60],
                        axis=-1)
        img = np.clip(base + rs.randint(-40, 41, size=base.shape), 0, 255).astype(np.uint8)
        if mode == 'L':
            img = img[..., 1]
        elif mode == 'RGBA':
            img = np.concatenate([img, rs.randint(0, 256, (h, w, 1)).astype(np.uint8)], -1)
        out.append((img, mode))
    return out


def encode(img, mode, fmt):
    from PIL import Image
    buf = io.BytesIO()
    im = Image.fromarray(img, mode)
    if fmt == 'jpg':
        im.convert('L' if mode == 'L' else 'RGB').save(buf, format='JPEG', quality=90)
    else:
        im.save(buf, format='PNG')
    return buf.getvalue()


def write_records(mx):
    os.makedirs(OUT, exist_ok=True)
    imgs = images()
    for kind in ('png', 'jpg', 'multi'):
        rec = mx.recordio.MXIndexedRecordIO(os.path.join(OUT, kind + '.idx'),
                                            os.path.join(OUT, kind + '.rec'), 'w')
        for i, (img, mode) in enumerate(imgs):
            label = np.array([i, 10 - i], np.float32) if kind == 'multi' else 1.5 * i
            header = mx.recordio.IRHeader(0, label, i, 0)
            rec.write_idx(i, mx.recordio.pack(header, encode(img, mode, 'jpg' if kind == 'jpg'
                                                             else 'png')))
        rec.close()
    with open(os.path.join(OUT, 'list.lst'), 'w') as f:
        for i in range(len(imgs)):
            f.write('%d\t%g\t%g\t%g\timg%d.png\n' % (i, i + 0.25, -i, 2 * i, i))


def iterator_args(kind, kwargs):
    """The arguments of ImageRecordIter for a case (paths relative to ``root``)."""
    args = dict(kwargs)
    no_idx = args.pop('_no_idx', False)
    imglist = args.pop('_imglist', False)
    args['path_imgrec'] = kind + '.rec'
    if not no_idx:
        args['path_imgidx'] = kind + '.idx'
    if imglist:
        args['path_imglist'] = 'list.lst'
    return args


def main(mx):
    write_records(mx)
    arrays, cases = {}, {}
    for name, (kind, kwargs, epochs) in sorted(CASES.items()):
        args = iterator_args(kind, kwargs)
        cases[name] = dict(args=args, epochs=epochs)
        real = {k: (os.path.join(OUT, v) if k.startswith('path_') else v)
                for k, v in args.items()}
        it = mx.io.ImageRecordIter(preprocess_threads=1, **real)
        for epoch in range(epochs):
            if epoch:       # MXNet's reset() right after construction races its prefetcher
                it.reset()
            for b, batch in enumerate(it):
                key = '%s/%d/%d/' % (name, epoch, b)
                data = batch.data[0].asnumpy()
                arrays[key + 'data'] = data
                arrays[key + 'label'] = batch.label[0].asnumpy()
                arrays[key + 'pad'] = np.array(batch.pad)
        print(name, 'ok', data.dtype, data.shape)
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
