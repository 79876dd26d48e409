"""RecordIO probes, written once for MXNet 1.9.1 and symgraph (``write(mx, dir)`` takes the
framework module): records of awkward lengths (empty, unpadded, holding the magic number at
aligned and unaligned offsets), packed headers with one and with several labels, and
images packed as PNG and JPEG.

Three uses, each its own interpreter::

    # MXNet 1.9.1 (with OpenCV: pip install opencv-python-headless): write the golden files
    # (tests/golden/data/recordio/)
    /path/to/mxnet/python tests/golden/recordio_probes.py generate
    # symgraph: write the same records into DIR
    python tests/golden/recordio_probes.py write-ours DIR
    # MXNet 1.9.1: read DIR's files and check them against the recipe
    /path/to/mxnet/python tests/golden/recordio_probes.py verify DIR

``all`` runs the three in turn, with MXNet's interpreter from $MXNET_PYTHON.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, 'data', 'recordio')
MAGIC = (0xced7230a).to_bytes(4, 'little')


def payloads():
    """The plain records: each one an edge of the format."""
    return [b'', b'a', b'abc', b'abcd', b'abcde', MAGIC, MAGIC + b'tail',
            b'1234' + MAGIC + b'5678' + MAGIC, b'xy' + MAGIC + b'zz', MAGIC + MAGIC + b'!',
            b'x' * 7 + MAGIC, bytes(range(256)) * 3]


def headers():
    """(flag, label, id, id2, payload) for the packed records; a list label is multi-label."""
    return [(0, 3.0, 7, 0, b'payload'), (0, [1.0, 2.5, -3.0], 8, 1, b'multi'),
            (5, 4.0, 2 ** 40 + 3, 9, b''), (0, [0.5], 10, 0, MAGIC * 2)]


def image():
    """A small BGR image with distinct pixels (OpenCV's channel order)."""
    y, x = np.mgrid[0:7, 0:5]
    return np.stack([x * 50, y * 30 + 10, (x * y * 7) % 256], axis=-1).astype(np.uint8)


IMAGES = (('png', '.png', 3, False), ('jpg', '.jpg', 90, False), ('gray', '.png', 9, True))


def write(mx, out):
    """Write plain.rec, packed.idx/.rec and images.idx/.rec into ``out``."""
    rec = mx.recordio.MXRecordIO(os.path.join(out, 'plain.rec'), 'w')
    for p in payloads():
        rec.write(p)
    rec.close()
    rec = mx.recordio.MXIndexedRecordIO(os.path.join(out, 'packed.idx'),
                                        os.path.join(out, 'packed.rec'), 'w')
    for i, (flag, label, id_, id2, p) in enumerate(headers()):
        rec.write_idx(10 * i, mx.recordio.pack(mx.recordio.IRHeader(flag, label, id_, id2), p))
    rec.close()
    rec = mx.recordio.MXIndexedRecordIO(os.path.join(out, 'images.idx'),
                                        os.path.join(out, 'images.rec'), 'w')
    for i, (_, fmt, quality, gray) in enumerate(IMAGES):
        img = image()[..., 1] if gray else image()
        rec.write_idx(i, mx.recordio.pack_img(mx.recordio.IRHeader(0, float(i), i, 0), img,
                                              quality=quality, img_fmt=fmt))
    rec.close()


def decoded(mx, out):
    """{name: image decoded by unpack_img} of ``out``'s images.rec."""
    rec = mx.recordio.MXIndexedRecordIO(os.path.join(out, 'images.idx'),
                                        os.path.join(out, 'images.rec'), 'r')
    res = {}
    for i, (name, _, _, _) in enumerate(IMAGES):
        header, img = mx.recordio.unpack_img(rec.read_idx(i))
        assert header.label == float(i) and header.id == i, header
        res[name] = img
    rec.close()
    return res


def verify(mx, out):
    """Read ``out``'s files with ``mx`` and check them against the recipe."""
    rec = mx.recordio.MXRecordIO(os.path.join(out, 'plain.rec'), 'r')
    for p in payloads():
        assert rec.read() == p
    assert rec.read() is None
    rec.close()
    rec = mx.recordio.MXIndexedRecordIO(os.path.join(out, 'packed.idx'),
                                        os.path.join(out, 'packed.rec'), 'r')
    for i, (flag, label, id_, id2, p) in reversed(list(enumerate(headers()))):
        header, rest = mx.recordio.unpack(rec.read_idx(10 * i))
        assert rest == p and header.id == id_ and header.id2 == id2
        np.testing.assert_array_equal(header.label, label)
        assert header.flag == (0 if np.ndim(label) == 0 else len(label))
    rec.close()
    imgs = decoded(mx, out)
    np.testing.assert_array_equal(imgs['png'], image())
    np.testing.assert_array_equal(imgs['gray'], image()[..., 1])
    assert imgs['jpg'].shape == image().shape
    assert np.abs(imgs['jpg'].astype(int) - image()).mean() < 8
    print('verified', out)


def main(argv):
    cmd = argv[1] if len(argv) > 1 else 'all'
    if cmd == 'generate':
        import mxnet as mx
        os.makedirs(OUT, exist_ok=True)
        write(mx, OUT)
        np.savez(os.path.join(OUT, 'images_decoded.npz'), **decoded(mx, OUT))
        with open(os.path.join(OUT, 'README.json'), 'w') as f:
            json.dump({'made_by': 'mxnet %s, opencv %s' % (mx.__version__,
                                                           __import__('cv2').__version__),
                       'script': 'tests/golden/recordio_probes.py'}, f, indent=1)
        print('wrote', OUT)
    elif cmd == 'write-ours':
        sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))
        import symgraph as mx
        write(mx, argv[2])
    elif cmd == 'verify':
        import mxnet as mx
        verify(mx, argv[2])
    elif cmd == 'all':
        mxpy = os.environ.get('MXNET_PYTHON', sys.executable)
        subprocess.check_call([mxpy, __file__, 'generate'])
        with tempfile.TemporaryDirectory() as d:
            subprocess.check_call([sys.executable, __file__, 'write-ours', d])
            subprocess.check_call([mxpy, __file__, 'verify', d])
    else:
        sys.exit('usage: recordio_probes.py generate | write-ours DIR | verify DIR | all')


if __name__ == '__main__':
    main(sys.argv)
