"""The encoded test images of ``tests/golden/data/image_io/`` (made once with Pillow, run in
symgraph's venv: ``python make_image_files.py``); ``make_hawkes_cv.py`` then records MXNet
1.9.1's decoding of them. Small pictures with smooth gradients, edges and noise."""
import io
import os

import numpy as np
from PIL import Image

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data', 'image_io')


def _picture(h, w, seed):
    r = np.random.RandomState(seed)
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([x * 255.0 / w, y * 255.0 / h, (x + y) * 127.0 / (h + w) + 60], -1)
    base[h // 3:h // 2, w // 4:w // 2] = (250, 20, 40)            # an edge JPEG must smear
    return np.clip(base + r.normal(0, 12, base.shape), 0, 255).astype(np.uint8)


def main():
    os.makedirs(OUT, exist_ok=True)
    rgb = _picture(10, 13, 0)
    files = {
        'rgb.png': (Image.fromarray(rgb), {}),
        'gray.png': (Image.fromarray(_picture(7, 9, 1)[..., 1]), {}),
        'rgba.png': (Image.fromarray(np.concatenate(
            [_picture(6, 8, 2), np.random.RandomState(3).randint(0, 256, (6, 8, 1))
             .astype(np.uint8)], -1), 'RGBA'), {}),
        'photo.jpg': (Image.fromarray(_picture(16, 24, 4)), {'quality': 90}),
        'gray.jpg': (Image.fromarray(_picture(12, 10, 5)[..., 0]), {'quality': 85}),
    }
    for name, (img, kw) in files.items():
        buf = io.BytesIO()
        img.save(buf, format='PNG' if name.endswith('.png') else 'JPEG', **kw)
        with open(os.path.join(OUT, name), 'wb') as f:
            f.write(buf.getvalue())
        print(name, img.mode, img.size, len(buf.getvalue()), 'bytes')


if __name__ == '__main__':
    main()
