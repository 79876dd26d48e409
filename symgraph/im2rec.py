"""``python -m symgraph.im2rec``: make image lists (``.lst``) and pack images into RecordIO
files (``.rec`` + ``.idx``), MXNet's ``tools/im2rec.py`` command line (after MXNet 1.9.1's
``tools/im2rec.py``).

Two steps, as MXNet's::

    # list the images under ROOT (one label per folder with --recursive) into PREFIX.lst
    python -m symgraph.im2rec --list --recursive PREFIX ROOT
    # pack the images named by every PREFIX*.lst into PREFIX*.rec / .idx
    python -m symgraph.im2rec --resize 64 --quality 90 --num-thread 2 PREFIX ROOT

The lists are MXNet's to the byte (the same shuffle with seed 100, the same ``%f`` labels).
Images are read, cropped, resized and encoded with OpenCV when it is installed (then the
records are MXNet's to the byte, for the same OpenCV), else with Pillow (decoding and
encoding) and symgraph's OpenCV-exact bilinear resize: the records then hold the same
headers in the same order, and images that decode within a grey level or two of MXNet's.
Records are written in list order whatever ``--num-thread`` is (MXNet's writer reorders
them too); images that cannot be read are reported and skipped.
"""
import argparse
import os
import random
import sys
import time

import numpy as np

from . import image, recordio
from . import ndarray as nd

__all__ = ['list_image', 'write_list', 'make_list', 'read_list', 'image_encode', 'main']


def list_image(root, recursive, exts):
    """Yield (index, path relative to ``root``, label) of the images under ``root``: with
    ``recursive`` one label per folder (in walk order), else the files of ``root`` alone
    with label 0."""
    i = 0
    if recursive:
        cat = {}
        for path, dirs, files in os.walk(root, followlinks=True):
            dirs.sort()
            files.sort()
            for fname in files:
                fpath = os.path.join(path, fname)
                suffix = os.path.splitext(fname)[1].lower()
                if os.path.isfile(fpath) and (suffix in exts):
                    if path not in cat:
                        cat[path] = len(cat)
                    yield (i, os.path.relpath(fpath, root), cat[path])
                    i += 1
        for k, v in sorted(cat.items(), key=lambda x: x[1]):
            print(os.path.relpath(k, root), v)
    else:
        for fname in sorted(os.listdir(root)):
            fpath = os.path.join(root, fname)
            suffix = os.path.splitext(fname)[1].lower()
            if os.path.isfile(fpath) and (suffix in exts):
                yield (i, os.path.relpath(fpath, root), 0)
                i += 1


def write_list(path_out, image_list):
    """Write ``index<TAB>label(s) as %f<TAB>path`` lines."""
    with open(path_out, 'w') as fout:
        for item in image_list:
            line = '%d\t' % item[0]
            for j in item[2:]:
                line += '%f\t' % j
            line += '%s\n' % item[1]
            fout.write(line)


def make_list(args):
    """Write ``<prefix>.lst`` (or ``_train``/``_val``/``_test`` lists, per chunk)."""
    image_list = list(list_image(args.root, args.recursive, args.exts))
    if args.shuffle is True:
        random.seed(100)        # MXNet's seed: the same order as its lists
        random.shuffle(image_list)
    n = len(image_list)
    chunk_size = (n + args.chunks - 1) // args.chunks
    for i in range(args.chunks):
        chunk = image_list[i * chunk_size:(i + 1) * chunk_size]
        str_chunk = '_%d' % i if args.chunks > 1 else ''
        sep = int(chunk_size * args.train_ratio)
        sep_test = int(chunk_size * args.test_ratio)
        if args.train_ratio == 1.0:
            write_list(args.prefix + str_chunk + '.lst', chunk)
        else:
            if args.test_ratio:
                write_list(args.prefix + str_chunk + '_test.lst', chunk[:sep_test])
            if args.train_ratio + args.test_ratio < 1.0:
                write_list(args.prefix + str_chunk + '_val.lst', chunk[sep_test + sep:])
            write_list(args.prefix + str_chunk + '_train.lst', chunk[sep_test:sep_test + sep])


def read_list(path_in):
    """Yield ``[index, path, label, ...]`` items of a ``.lst`` file (malformed lines are
    reported and skipped, as MXNet)."""
    with open(path_in) as fin:
        for lineno, line in enumerate(fin, 1):
            line = [i.strip() for i in line.strip().split('\t')]
            if len(line) < 3:
                print('%s, line %d: a .lst line has at least three parts, got %d: %s'
                      % (path_in, lineno, len(line), line))
                continue
            try:
                item = [int(line[0])] + [line[-1]] + [float(i) for i in line[1:-1]]
            except ValueError as err:
                print('%s, line %d: cannot parse %s: %s' % (path_in, lineno, line, err))
                continue
            yield item


def _cv2():
    try:
        import cv2
    except ImportError:
        return None
    return cv2


def _imread(path, color):
    """The image at ``path`` as OpenCV's ``imread(path, color)`` gives it (BGR, grey 2-D,
    or as stored for -1), or None when it cannot be read or decoded."""
    cv2 = _cv2()
    if cv2 is not None:
        return cv2.imread(path, color)
    try:
        with open(path, 'rb') as f:
            data = f.read()
        return recordio.unpack_img(recordio.pack(_NO_HEADER, data), color)[1]
    except ImportError:
        raise
    except (OSError, ValueError):   # Pillow's UnidentifiedImageError is an OSError
        return None


_NO_HEADER = recordio.IRHeader(0, 0, 0, 0)


def _resize(img, width, height):
    """Bilinear resize of an (H, W[, C]) uint8 image, as ``cv2.resize`` computes it
    (symgraph's ``mx.image.imresize`` is OpenCV's arithmetic)."""
    cv2 = _cv2()
    if cv2 is not None:
        return cv2.resize(img, (width, height))
    flat = img.ndim == 2
    src = nd.array(img[..., None] if flat else img, dtype=np.uint8)
    out = image.imresize(src, width, height, interp=1).asnumpy()
    return out[..., 0] if flat else out


def image_encode(args, i, item):
    """(i, packed record or None, item) for one list item: read, crop, resize, encode."""
    fullpath = os.path.join(args.root, item[1])
    if len(item) > 3 and args.pack_label:
        header = recordio.IRHeader(0, item[2:], item[0], 0)
    else:
        header = recordio.IRHeader(0, item[2], item[0], 0)
    if args.pass_through:
        try:
            with open(fullpath, 'rb') as fin:
                return i, recordio.pack(header, fin.read()), item
        except OSError as err:
            print('pack error on file %s: %s' % (fullpath, err))
            return i, None, item
    img = _imread(fullpath, args.color)
    if img is None:
        print('imread read blank (None) image for file: %s' % fullpath)
        return i, None, item
    if args.center_crop:
        if img.shape[0] > img.shape[1]:
            margin = (img.shape[0] - img.shape[1]) // 2
            img = img[margin:margin + img.shape[1], :]
        else:
            margin = (img.shape[1] - img.shape[0]) // 2
            img = img[:, margin:margin + img.shape[0]]
    if args.resize:
        if img.shape[0] > img.shape[1]:
            newsize = (args.resize, img.shape[0] * args.resize // img.shape[1])
        else:
            newsize = (img.shape[1] * args.resize // img.shape[0], args.resize)
        img = _resize(img, *newsize)
    try:
        return i, recordio.pack_img(header, img, quality=args.quality,
                                    img_fmt=args.encoding), item
    except (ValueError, TypeError, OSError) as err:
        print('pack_img error on file %s: %s' % (fullpath, err))
        return i, None, item


class _Encoder(object):
    """A picklable ``image_encode`` bound to the arguments (for worker processes)."""

    def __init__(self, args):
        self.args = args

    def __call__(self, job):
        return image_encode(self.args, *job)


class _Progress(object):
    """A one-line progress report on stderr (redrawn on a terminal, else every 1000)."""

    def __init__(self, total, name):
        self.total, self.name, self.count = total, name, 0
        self.start = self.last = time.time()
        self.tty = sys.stderr.isatty()

    def step(self):
        self.count += 1
        now = time.time()
        if (self.tty and now - self.last > 0.2) or (not self.tty and self.count % 1000 == 0):
            self.last = now
            self.show()

    def show(self, end=''):
        rate = self.count / max(time.time() - self.start, 1e-9)
        sys.stderr.write('%s%s: %d/%d images (%.0f images/s)%s' % (
            '\r' if self.tty else '', self.name, self.count, self.total, rate,
            end or ('' if self.tty else '\n')))
        sys.stderr.flush()


def write_record(args, fname, working_dir):
    """Pack the images of the list ``fname`` into ``working_dir``'s .rec and .idx."""
    items = list(read_list(fname))
    base = os.path.splitext(os.path.basename(fname))[0]
    record = recordio.MXIndexedRecordIO(os.path.join(working_dir, base + '.idx'),
                                        os.path.join(working_dir, base + '.rec'), 'w')
    progress = _Progress(len(items), base + '.rec')
    encoder = _Encoder(args)
    jobs = list(enumerate(items))
    pool = None
    if args.num_thread > 1:
        import multiprocessing
        import threading
        # fork (MXNet's way on Linux) starts workers at once; spawn re-imports symgraph in
        # each, but is the safe choice once threads run (fork copies their locks)
        method = ('fork' if 'fork' in multiprocessing.get_all_start_methods()
                  and threading.active_count() == 1 else 'spawn')
        pool = multiprocessing.get_context(method).Pool(args.num_thread)
        results = pool.imap(encoder, jobs, chunksize=8)    # ordered: the list's order
    else:
        results = map(encoder, jobs)
    try:
        skipped = 0
        for _, s, item in results:
            if s is None:
                skipped += 1
            else:
                record.write_idx(item[0], s)
            progress.step()
    finally:
        if pool is not None:
            pool.terminate()
            pool.join()
        record.close()
    progress.show(end='\n')
    if skipped:
        print('%d of %d images could not be packed (reported above)' % (skipped, len(items)))


def parse_args(argv=None):
    """MXNet's im2rec arguments (``prefix`` and ``root`` made absolute)."""
    parser = argparse.ArgumentParser(
        prog='python -m symgraph.im2rec',
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description='Create an image list or make a record database by reading from an '
                    'image list')
    parser.add_argument('prefix', help='prefix of input/output lst and rec files.')
    parser.add_argument('root', help='path to folder containing images.')
    cgroup = parser.add_argument_group('Options for creating image lists')
    cgroup.add_argument('--list', action='store_true',
                        help='create image list(s) by traversing root folder and output to '
                             '<prefix>.lst; otherwise read <prefix>.lst and create a '
                             'database at <prefix>.rec')
    cgroup.add_argument('--exts', nargs='+', default=['.jpeg', '.jpg', '.png'],
                        help='list of acceptable image extensions.')
    cgroup.add_argument('--chunks', type=int, default=1, help='number of chunks.')
    cgroup.add_argument('--train-ratio', type=float, default=1.0,
                        help='Ratio of images to use for training.')
    cgroup.add_argument('--test-ratio', type=float, default=0,
                        help='Ratio of images to use for testing.')
    cgroup.add_argument('--recursive', action='store_true',
                        help='recursively walk through subdirs and assign an unique label to '
                             'images in each folder; otherwise only include images in the '
                             'root folder and give them label 0.')
    cgroup.add_argument('--no-shuffle', dest='shuffle', action='store_false',
                        help='do not randomize the image order in <prefix>.lst')
    rgroup = parser.add_argument_group('Options for creating database')
    rgroup.add_argument('--pass-through', action='store_true',
                        help='whether to skip transformation and save image as is')
    rgroup.add_argument('--resize', type=int, default=0,
                        help='resize the shorter edge of image to the newsize, original '
                             'images will be packed by default.')
    rgroup.add_argument('--center-crop', action='store_true',
                        help='specify whether to crop the center image to make it square.')
    rgroup.add_argument('--quality', type=int, default=95,
                        help='JPEG quality for encoding, 1-100; or PNG compression, 1-9')
    rgroup.add_argument('--num-thread', type=int, default=1,
                        help='number of processes to use for encoding (records keep the '
                             'list order).')
    rgroup.add_argument('--color', type=int, default=1, choices=[-1, 0, 1],
                        help='1: colour (alpha dropped); 0: greyscale; -1: as stored')
    rgroup.add_argument('--encoding', type=str, default='.jpg', choices=['.jpg', '.png'],
                        help='specify the encoding of the images.')
    rgroup.add_argument('--pack-label', action='store_true',
                        help='Whether to also pack multi dimensional label in the record file')
    args = parser.parse_args(argv)
    if args.chunks < 1:
        parser.error('--chunks must be at least 1')
    args.prefix = os.path.abspath(args.prefix)
    args.root = os.path.abspath(args.root)
    return args


def main(argv=None):
    """The command line; returns the exit status."""
    args = parse_args(argv)
    if not os.path.isdir(os.path.dirname(args.prefix)):
        print('the folder of prefix %s does not exist' % args.prefix, file=sys.stderr)
        return 1
    if args.list:
        if not os.path.isdir(args.root):
            print('%s is not a folder' % args.root, file=sys.stderr)
            return 1
        make_list(args)
        return 0
    working_dir = args.prefix if os.path.isdir(args.prefix) else os.path.dirname(args.prefix)
    files = sorted(os.path.join(working_dir, f) for f in os.listdir(working_dir)
                   if os.path.isfile(os.path.join(working_dir, f)))
    count = 0
    for fname in files:
        if fname.startswith(args.prefix) and fname.endswith('.lst'):
            print('Creating .rec file from', fname, 'in', working_dir)
            count += 1
            write_record(args, fname, working_dir)
    if not count:
        print('Did not find and list file with prefix %s' % args.prefix, file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
