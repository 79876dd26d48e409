"""Write ``test_images.tar.gz``: the harness's stand-in for MXNet's
http://data.mxnet.io/data/test_images.tar.gz, which MXNet 1.9.1's test_image.py downloads
(the harness runs without a network; see ``mxu_downloads.py``).

Like MXNet's archive it holds 16 JPEG files in a ``test_images/`` folder; these are small
generated pictures (gradients, shapes and noise, landscape and portrait, 48 to 320 pixels a
side, one grayscale, one progressive, one with 4:4:4 chroma), not photographs, so that the
archive stays small (about 80 kB). Deterministic: the same Pillow writes the same bytes. Run with any
Python that has NumPy and Pillow::

    python tests/mxnet_unittests/shims/stand_ins/make_test_images.py
"""
import io
import os
import tarfile

import numpy as np
from PIL import Image, ImageDraw

HERE = os.path.dirname(os.path.abspath(__file__))
#: (height, width) of the 16 images
SIZES = [(240, 320), (320, 240), (64, 96), (96, 64), (180, 180), (48, 160), (160, 48),
         (256, 200), (120, 300), (300, 120), (75, 100), (100, 75), (224, 224), (50, 50),
         (200, 256), (140, 210)]


def picture(k, h, w):
    """An RGB uint8 picture: two gradients, a few shapes and some noise."""
    rng = np.random.RandomState(k)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    base = np.stack([255 * xx / max(w - 1, 1), 255 * yy / max(h - 1, 1),
                     127 + 120 * np.sin((xx + yy) / (7.0 + k))], axis=2)
    img = Image.fromarray(np.clip(base, 0, 255).astype(np.uint8))
    draw = ImageDraw.Draw(img)
    for _ in range(4):
        x0, y0 = rng.randint(0, w // 2), rng.randint(0, h // 2)
        x1, y1 = x0 + rng.randint(4, w // 2 + 5), y0 + rng.randint(4, h // 2 + 5)
        color = tuple(int(c) for c in rng.randint(0, 256, 3))
        (draw.ellipse if rng.rand() < 0.5 else draw.rectangle)([x0, y0, x1, y1], fill=color)
    a = np.asarray(img).astype(np.int64) + rng.randint(-4, 5, (h, w, 3))
    return Image.fromarray(np.clip(a, 0, 255).astype(np.uint8))


def main(out=os.path.join(HERE, 'test_images.tar.gz')):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode='w:gz', format=tarfile.USTAR_FORMAT) as tar:
        for k, (h, w) in enumerate(SIZES):
            img = picture(k, h, w)
            opts = {'quality': 85}
            if k == 5:
                img = img.convert('L')
            elif k == 6:
                opts['progressive'] = True
            elif k == 7:
                opts['subsampling'] = 0
            data = io.BytesIO()
            img.save(data, 'JPEG', **opts)
            info = tarfile.TarInfo('test_images/img_%02d.jpg' % k)
            info.size = len(data.getvalue())
            info.mtime = 0
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data.getvalue()))
    # gzip's header carries a time stamp: zero it so that reruns write the same bytes
    raw = bytearray(buf.getvalue())
    raw[4:8] = b'\0\0\0\0'
    with open(out, 'wb') as f:
        f.write(bytes(raw))
    print('wrote %s (%d bytes)' % (out, len(raw)))


if __name__ == '__main__':
    main()
