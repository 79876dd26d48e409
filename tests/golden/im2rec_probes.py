"""im2rec probes: MXNet 1.9.1's ``tools/im2rec.py`` run over a small folder of images, its
lists and records kept as golden files (tests/golden/data/im2rec/), which
tests/test_im2rec.py compares with ``python -m symgraph.im2rec``'s.

Run with MXNet's interpreter (OpenCV installed: ``pip install opencv-python-headless``) and
MXNet's sources (a git directory with the tag, or a checkout)::

    /path/to/mxnet/python tests/golden/im2rec_probes.py /path/to/mxnet.git

($MXNET_SRC may name the sources instead.)
"""
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, 'data', 'im2rec')
TAG = '1.9.1'

#: (prefix, im2rec options) of the list runs
LIST_RUNS = [('rec', ['--list', '--recursive']),
             ('split', ['--list', '--recursive', '--no-shuffle', '--train-ratio', '0.5',
                        '--test-ratio', '0.25']),
             ('flat', ['--list', '--chunks', '2', '--exts', '.png', '.jpg'])]
#: (prefix, im2rec options) of the packing runs, each over a copy of rec.lst
PACK_RUNS = [('pass', ['--pass-through']),
             ('png', ['--encoding', '.png', '--resize', '5', '--center-crop']),
             ('jpg', ['--quality', '80']),
             ('gray', ['--encoding', '.png', '--color', '0']),
             ('multi', ['--encoding', '.png', '--pack-label'])]


def make_images(root, cv2):
    """A folder of small images: two classes, three files at the top, one ignored file."""
    rng = np.random.RandomState(0)
    os.makedirs(os.path.join(root, 'cat'))
    os.makedirs(os.path.join(root, 'dog', 'deep'))
    shapes = [(9, 12), (12, 9), (10, 10), (7, 13)]
    names = ['cat/0.png', 'cat/1.png', 'cat/2.jpg', 'dog/0.png', 'dog/up.JPG',
             'dog/deep/z.png', 'top0.png', 'top1.png', 'top2.jpg']
    for i, name in enumerate(names):
        h, w = shapes[i % len(shapes)]
        y, x = np.mgrid[0:h, 0:w]
        img = np.stack([x * 20 + i, y * 25, (x + y) * 9], -1) + rng.randint(0, 30, (h, w, 3))
        cv2.imwrite(os.path.join(root, name), np.clip(img, 0, 255).astype(np.uint8))
    with open(os.path.join(root, 'dog', 'notes.txt'), 'w') as f:
        f.write('not an image\n')


def multi_list(src, dst):
    """A copy of the list ``src`` with three labels per line (for --pack-label)."""
    with open(src) as fin, open(dst, 'w') as fout:
        for line in fin:
            idx, label, path = line.rstrip('\n').split('\t')
            fout.write('%s\t%s\t%f\t%f\t%s\n' % (idx, label, int(idx) * 0.5, -1.0, path))


def main(argv):
    src = argv[1] if len(argv) > 1 else os.environ.get('MXNET_SRC')
    if not src:
        sys.exit('usage: im2rec_probes.py MXNET_SRC (or set $MXNET_SRC)')
    import cv2
    tmp = tempfile.mkdtemp()
    script = os.path.join(tmp, 'im2rec.py')
    if os.path.exists(os.path.join(src, 'tools', 'im2rec.py')):
        shutil.copy(os.path.join(src, 'tools', 'im2rec.py'), script)
    else:
        with open(script, 'wb') as f:
            f.write(subprocess.check_output(['git', '--git-dir', src, 'show',
                                             TAG + ':tools/im2rec.py']))
    shutil.rmtree(OUT, ignore_errors=True)
    root = os.path.join(OUT, 'images')
    make_images(root, cv2)

    def im2rec(prefix, opts):
        # the positionals first: --exts takes every word after it
        subprocess.check_call([sys.executable, script, os.path.join(OUT, prefix), root] + opts,
                              cwd=tmp)
    for prefix, opts in LIST_RUNS:
        im2rec(prefix, opts)
    for prefix, opts in PACK_RUNS:
        if prefix == 'multi':
            multi_list(os.path.join(OUT, 'rec.lst'), os.path.join(OUT, 'multi.lst'))
        else:
            shutil.copy(os.path.join(OUT, 'rec.lst'), os.path.join(OUT, prefix + '.lst'))
        im2rec(prefix, opts)
    shutil.rmtree(tmp)
    print('wrote', OUT)


if __name__ == '__main__':
    main(sys.argv)
