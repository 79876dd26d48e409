"""``mx.io.ImageRecordIter`` (and ``ImageRecordUInt8Iter``, ``ImageRecordInt8Iter``): batches
of images from a RecordIO file, decoded and augmented in a pool of threads, after MXNet
1.9.1's ``src/io/iter_image_recordio_2.cc`` and ``src/io/image_aug_default.cc``.

Pipeline, per image, as MXNet's (its OpenCV calls reproduced as ``mx.image`` does): decode
(colour, or gray for ``data_shape[0] == 1``; PNG alpha dropped), resize the shorter side to
``resize``, rotate / shear / scale / change the aspect ratio (``max_rotate_angle``,
``max_shear_ratio``, ``min/max_random_scale``, ``max_aspect_ratio``), ``pad`` with
``fill_value``, enlarge an image smaller than ``data_shape``, crop (centre, or random with
``rand_crop``), random brightness / contrast / saturation, hue / saturation / lightness
(``random_h/s/l``) and ``pca_noise``, then mirror
(``mirror``, or at random with ``rand_mirror``), subtract ``mean_r/g/b`` (or ``mean_img``),
multiply by ``scale / std``; CHW, RGB, of ``dtype``.

Batches: the records of the part ``part_index`` of ``num_parts`` (by record count with an
index file, by bytes without one, as dmlc-core splits them), in file order or shuffled per
epoch (``shuffle``, ``seed``); a short last batch is filled from the start of the next pass
with ``round_batch`` (``pad`` tells how many, and the next pass begins after them), else it
keeps the rows of the previous batch and ``pad`` tells how many.

Speed: the calling thread plans the batches and draws their random numbers; reading
(``os.pread``, one read per run of adjacent records), decoding and augmentation run in
``preprocess_threads`` threads (the kernel, OpenCV or Pillow, and NumPy release the GIL
while they work), up to ``prefetch_buffer`` batches ahead. Colour JPEGs are decoded by
OpenCV where ``cv2`` is installed (``pip install "symgraph[image-fast]"``), as MXNet
decodes them, else by Pillow (the same libjpeg-turbo: the same pixels, or within one grey
level across library versions).

Differences from MXNet (also in docs/differences.md): random augmentations take their
numbers from a NumPy generator seeded per pass from (``seed``, pass), or from ``seed_aug``
alone (then each position gets the same numbers at every pass, as MXNet's ``seed_aug``),
drawn in plan order: reproducible for any number of threads, with MXNet's distributions but
not its numbers; ``inter_method`` 2
(cubic) and 4 (Lanczos) within one grey level of OpenCV's (ops/_cv_resize.py); with ``round_batch=False`` ``pad`` counts the rows of a short last batch (MXNet
reports 0); without an index file the record offsets are found by one pass over the file
when the iterator is made.
"""
import io as _io
import logging
import os
import shutil
import struct
import tempfile
from concurrent.futures import ThreadPoolExecutor
from collections import deque

import numpy as np

from .. import ndarray as nd
from .. import recordio
from . import _decode_procs
from ..base import ArgumentError, ArgumentTypeError, MissingFileError
from ..context import cpu
from .native import MXDataIter, _as_bool, _as_int, _as_shape

__all__ = ['ImageRecordIter', 'ImageRecordUInt8Iter', 'ImageRecordInt8Iter']

_MAGIC = 0xced7230a
_LEN_MASK = (1 << 29) - 1
_HEAD = struct.Struct('<II')
#: MXNet's eigenvalue-scaled eigenvectors of ImageNet's RGB covariance (pca_noise)
_EIGVEC = np.array([[55.46 * -0.5675, 4.794 * 0.7192, 1.148 * 0.4009],
                    [55.46 * -0.5808, 4.794 * -0.0045, 1.148 * -0.8140],
                    [55.46 * -0.5836, 4.794 * -0.6948, 1.148 * 0.4203]], np.float32)
#: MXNet parameters taken and ignored (they tune MXNet's C++ threads and devices)
_IGNORED = frozenset(['verbose', 'ctx', 'dev_id', 'shuffle_chunk_size', 'shuffle_chunk_seed',
                      'aug_seq', 'silent', 'label_pad_width', 'label_pad_value',
                      'max_img_size', 'min_img_size', 'num_decode_threads', 'device_id'])


def _float(value, what):
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ArgumentError('%s must be a number, got %r' % (what, value)) from None


def _pillow():
    try:
        from PIL import Image
    except ImportError:
        from ..base import NotSupportedError
        raise NotSupportedError('ImageRecordIter decodes images with Pillow, which is not '
                                'installed: pip install "symgraph[image]"') from None
    return Image


# ------------------------------------------------------------------ record sources
def _scan_offsets(path):
    """The byte offsets of the records of the RecordIO file ``path`` (a record split
    across parts counts once, at its first part), reading only the 8-byte heads."""
    offsets = []
    size = os.path.getsize(path)
    head = struct.Struct('<II')
    with open(path, 'rb') as f:
        pos = 0
        while pos + 8 <= size:
            f.seek(pos)
            magic, lrec = head.unpack(f.read(8))
            if magic != _MAGIC:
                raise recordio.RecordIOError('%s: bad magic number 0x%08x at byte offset %d'
                                             % (path, magic, pos))
            cflag, length = lrec >> 29, lrec & ((1 << 29) - 1)
            if cflag in (0, 1):
                offsets.append(pos)
            pos += 8 + ((length + 3) & ~3)
    return offsets, size


def _part_keys(rec_path, idx_path, num_parts, part_index):
    """(index path, keys of this part in file order, temporary dir or None)."""
    if idx_path:
        reader = recordio.MXIndexedRecordIO(idx_path, rec_path, 'r')
        keys = sorted(reader.keys, key=lambda k: reader.idx[k])
        reader.close()
        step = (len(keys) + num_parts - 1) // num_parts
        return idx_path, keys[part_index * step:(part_index + 1) * step], None
    offsets, size = _scan_offsets(rec_path)
    # dmlc-core's InputSplitBase: equal byte ranges aligned to 4, each starting at the
    # first record head at or after its boundary
    step = (size + num_parts - 1) // num_parts
    step = (step + 3) // 4 * 4
    begin, end = min(step * part_index, size), min(step * (part_index + 1), size)
    tmp = tempfile.mkdtemp(prefix='symgraph-imagerecord-')
    idx_path = os.path.join(tmp, 'records.idx')
    with open(idx_path, 'w') as f:
        for i, off in enumerate(offsets):
            f.write('%d\t%d\n' % (i, off))
    keys = [i for i, off in enumerate(offsets) if begin <= off < end]
    return idx_path, keys, tmp


def _read_imglist(path, label_width):
    """{image index: float32 labels} of a ``.lst`` file (index, labels..., path)."""
    labels = {}
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            fields = line.strip().split('\t')
            if not fields or not fields[0]:
                continue
            if len(fields) < label_width + 2:
                raise ArgumentError('%s, line %d: expected an index, %d label(s) and a path, '
                                    'got %r' % (path, lineno, label_width, line.strip()))
            try:
                labels[int(float(fields[0]))] = np.array(fields[1:1 + label_width], np.float32)
            except ValueError:
                raise ArgumentError('%s, line %d: not numbers: %r' % (path, lineno,
                                                                       line.strip())) from None
    return labels


# ------------------------------------------------------------------ image operations
def _decode(buf, channels):
    """(H, W, C) uint8 RGB (or gray) of an encoded image, as MXNet's OpenCV decodes it."""
    if channels == 3:
        # the common case: an 8-bit colour JPEG decoded straight into an array (OpenCV's
        # where it is installed; else a view of Pillow's RGBX), without Pillow's
        # Python-level header parsing or a copy
        cv = recordio._decode_jpeg_cv(buf)
        if cv is not None:
            img, rgb = cv
            return img if rgb else img[..., ::-1]
        rgbx = recordio._decode_jpeg_rgbx(buf)
        if rgbx is not None:
            return rgbx[..., :3]
        Image = _pillow()
        img = Image.open(_io.BytesIO(buf))
        if img.mode == 'RGB':                   # the common case, without the operator
            img.load()
            return np.asarray(img)
    out = nd._internal._cvimdecode(nd.array(np.frombuffer(buf, np.uint8), dtype=np.uint8),
                                   flag=0 if channels == 1 else 1, to_rgb=True)
    return out.asnumpy()


def _resize(img, w, h, method):
    """``cv::resize`` with OpenCV's interpolation ``method`` (0-4: the operator's kernels)."""
    if (img.shape[1], img.shape[0]) == (w, h):
        return img
    return nd._internal._cvimresize(nd.array(img, dtype=np.uint8), w=w, h=h,
                                    interp=method).asnumpy()


def _saturate(v):
    return np.clip(np.rint(v), 0, 255).astype(np.uint8)


def _gray_of_bgr_as_rgb(img):
    # MXNet calls cvtColor(CV_RGB2GRAY) on its BGR pixels: the weights land swapped
    return (0.299 * img[..., 2] + 0.587 * img[..., 1] + 0.114 * img[..., 0])[..., None]


def _rgb_to_hls(img):
    """OpenCV's 8-bit RGB -> HLS: H in [0, 180), L and S in [0, 255] (int arrays), in
    float32 as OpenCV computes it (pixels times the float32 reciprocal of 255, then H / 2,
    L and S times 255 rounded): dividing instead leaves L one low on about an eighth of
    the pixels."""
    f32 = np.float32
    f = img.astype(f32) * f32(1.0 / 255)
    r, g, b = f[..., 0], f[..., 1], f[..., 2]
    vmax, vmin = f.max(axis=-1), f.min(axis=-1)
    diff = vmax - vmin
    l = (vmax + vmin) * f32(0.5)
    nz = diff > np.finfo(f32).eps
    sdiv = np.where(l < f32(0.5), vmax + vmin, f32(2) - vmax - vmin)
    s = np.where(nz, diff / np.where(nz, sdiv, f32(1)), f32(0))
    k = np.where(nz, f32(60) / np.where(nz, diff, f32(1)), f32(0))
    h = np.where(vmax == r, (g - b) * k,
                 np.where(vmax == g, (b - r) * k + f32(120), (r - g) * k + f32(240)))
    h = np.where(nz, np.where(h < 0, h + f32(360), h), f32(0))
    return (np.rint(h * f32(0.5)).astype(np.int32), np.rint(l * f32(255)).astype(np.int32),
            np.rint(s * f32(255)).astype(np.int32))


def _hls_to_rgb(h, l, s):
    """The inverse of :func:`_rgb_to_hls` (uint8 RGB)."""
    hd, lf, sf = h.astype(np.float32) * 2, l.astype(np.float32) / 255, s.astype(np.float32) / 255
    p2 = np.where(lf <= 0.5, lf * (1 + sf), lf + sf - lf * sf)
    p1 = 2 * lf - p2

    def channel(hh):
        hh = np.mod(hh, 360)
        return np.where(hh < 60, p1 + (p2 - p1) * hh / 60,
                        np.where(hh < 180, p2,
                                 np.where(hh < 240, p1 + (p2 - p1) * (240 - hh) / 60, p1)))
    rgb = np.stack([channel(hd + 120), channel(hd), channel(hd - 120)], axis=-1)
    rgb = np.where((sf == 0)[..., None], lf[..., None], rgb)
    return np.clip(np.rint(rgb * 255), 0, 255).astype(np.uint8)


#: uniform numbers drawn per image (more than any augmentation chain consumes)
_DRAWS = 40


class _Draws(object):
    """The random numbers of one image: a row of uniforms drawn in plan order by the
    calling thread, so that the result does not depend on which thread decodes the image
    (and no generator is made per image), read as NumPy's ``RandomState`` methods."""
    __slots__ = ('_u', '_i')

    def __init__(self, row):
        self._u, self._i = row, 0

    def rand(self):
        self._i += 1
        return float(self._u[self._i - 1])

    def uniform(self, low, high):
        return low + (high - low) * self.rand()

    def randint(self, low, high):
        """An int in [low, high), as ``RandomState.randint``."""
        return min(int(low + (high - low) * self.rand()), high - 1)

    def normal(self, loc, scale, size):
        # Box-Muller, one pair of uniforms per value
        return np.array([loc + scale * np.sqrt(-2 * np.log(1 - self.rand())) *
                         np.cos(2 * np.pi * self.rand()) for _ in range(size)])

    def permutation(self, n):
        return np.argsort([self.rand() for _ in range(n)], kind='stable')


class _Augmenter(object):
    """MXNet's DefaultImageAugmenter and the mirror / normalisation of ImageRecordIter."""

    def __init__(self, p):
        self.p = p

    def _method(self, method, old_w, old_h, new_w, new_h, rng):
        if method == 9:
            if new_w > old_w and new_h > old_h:
                return 2
            if new_w < old_w and new_h < old_h:
                return 3
            return 1
        if method == 10:
            return int(rng.randint(0, 5))
        return method

    def __call__(self, img, rng):
        p = self.p
        c, dh, dw = p['data_shape']
        if p['resize'] > 0:
            h, w = img.shape[:2]
            if h > w:
                nh, nw = p['resize'] * h // w, p['resize']
            else:
                nh, nw = p['resize'], p['resize'] * w // h
            img = _resize(img, nw, nh, self._method(p['inter_method'], w, h, nw, nh, rng))
        if p['affine']:
            img = self._affine(img, rng)
        if p['pad'] > 0:
            k = p['pad']
            img = np.pad(img, ((k, k), (k, k), (0, 0)), constant_values=p['fill_value'])
        h, w = img.shape[:2]
        method = self._method(p['inter_method'], w, h, dw, dh, rng)
        if h < dh:
            img = _resize(img, int(np.float32(dh) / np.float32(h) * np.float32(w)), dh, method)
            h, w = img.shape[:2]
        if w < dw:
            img = _resize(img, dw, int(np.float32(dw) / np.float32(w) * np.float32(h)), method)
            h, w = img.shape[:2]
        y, x = h - dh, w - dw
        if p['rand_crop']:
            y, x = int(rng.randint(0, y + 1)), int(rng.randint(0, x + 1))
        else:
            y, x = y // 2, x // 2
        img = img[y:y + dh, x:x + dw]
        if p['color'] and c == 3:
            img = self._color(img, rng)
        if (p['random_h'] or p['random_s'] or p['random_l']) and c == 3:
            img = self._hls(img, rng)
        if p['pca_noise'] > 0 and c == 3:
            alpha = rng.normal(0, p['pca_noise'], 3).astype(np.float32)
            noise = _EIGVEC.dot(alpha)
            img = np.clip(img.astype(np.int32) + noise.astype(np.int32), 0, 255).astype(np.uint8)
        mirrored = p['mirror'] or (p['rand_mirror'] and rng.rand() < 0.5)
        if mirrored:
            img = img[:, ::-1]
        return img

    def _affine(self, img, rng):
        """Rotation, shear, scale and aspect ratio (cv::warpAffine in MXNet; Pillow here)."""
        p = self.p
        s = rng.uniform(-p['max_shear_ratio'], p['max_shear_ratio'])
        angle = p['rotate'] if p['rotate'] > 0 else \
            int(rng.randint(-p['max_rotate_angle'], p['max_rotate_angle'] + 1))
        a, b = np.cos(np.radians(angle)), np.sin(np.radians(angle))
        scale = rng.uniform(p['min_random_scale'], p['max_random_scale'])
        ratio = rng.uniform(p['min_aspect_ratio'], p['max_aspect_ratio'])
        hs = 2 * scale / (1 + ratio)
        ws = ratio * hs
        h, w = img.shape[:2]
        nw, nh = int(max(1, scale * w)), int(max(1, scale * h))
        m = np.array([[hs * a - s * b * ws, hs * b + s * a * ws, 0],
                      [-b * ws, a * ws, 0], [0, 0, 1]], np.float64)
        m[0, 2] = (nw - (m[0, 0] * w + m[0, 1] * h)) / 2
        m[1, 2] = (nh - (m[1, 0] * w + m[1, 1] * h)) / 2
        inv = np.linalg.inv(m)
        # Pillow samples at pixel centres (+0.5) where OpenCV uses the integer grid
        shift = np.array([[1, 0, 0.5], [0, 1, 0.5], [0, 0, 1]])
        inv = shift.dot(inv).dot(np.linalg.inv(shift))
        Image = _pillow()
        src = Image.fromarray(img[..., 0] if img.shape[2] == 1 else img)
        fill = p['fill_value'] if img.shape[2] == 1 else (p['fill_value'],) * 3
        out = np.asarray(src.transform((nw, nh), Image.AFFINE, tuple(inv[:2].ravel()),
                                       resample=Image.BILINEAR, fillcolor=fill))
        return out[..., None] if out.ndim == 2 else out

    def _hls(self, img, rng):
        """Shift hue, lightness and saturation (OpenCV's 8-bit HLS: H in [0, 180])."""
        p = self.p
        shifts = []
        for key in ('random_h', 'random_s', 'random_l'):
            r = (rng.rand() + 4 * rng.rand()) / 5          # MXNet's peaked draw
            shifts.append(int(r * p[key] * 2 - p[key]))
        h, l, s = _rgb_to_hls(img)
        h = np.clip(h + shifts[0], 0, 180)
        l = np.clip(l + shifts[2], 0, 255)
        s = np.clip(s + shifts[1], 0, 255)
        return _hls_to_rgb(h, l, s)

    def _color(self, img, rng):
        p = self.p
        alphas = [1 + rng.uniform(-p['brightness'], p['brightness']),
                  1 + rng.uniform(-p['contrast'], p['contrast']),
                  1 + rng.uniform(-p['saturation'], p['saturation'])]
        for i in rng.permutation(3):
            f = img.astype(np.float32)
            if i == 0:
                img = _saturate(f * alphas[0])
            elif i == 1:
                gray = _saturate(_gray_of_bgr_as_rgb(f)).mean()
                img = _saturate(f * alphas[1] + (1 - alphas[1]) * gray)
            else:
                gray = _saturate(_gray_of_bgr_as_rgb(f)).astype(np.float32)
                img = _saturate(f * alphas[2] + gray * (1 - alphas[2]))
        return img


_F32 = np.dtype(np.float32)


class _Normalizer(object):
    """(H, W, C) uint8 -> (C, H, W) of the output dtype, as MXNet's ProcessImage."""

    def __init__(self, dtype, mean, std, scale, mean_img, max_contrast=0.0,
                 max_illumination=0.0):
        self.dtype = dtype
        self.mean_img = mean_img
        c = len(mean)
        self.mean = np.array(mean, np.float32).reshape(c, 1, 1)
        self.scale = np.float32(scale)
        self.std = np.array(std, np.float32).reshape(c, 1, 1)
        self.mult = self.scale / self.std
        # x - 0 and x * 1 are x: skip those passes
        self.unit = bool(np.all(self.mult == 1))
        self.nonzero_mean = bool(np.any(self.mean != 0))
        self.mean_int = np.round(np.array(mean, np.float64)).astype(np.int16).reshape(c, 1, 1)
        self.max_contrast = np.float32(max_contrast)
        self.max_illumination = np.float32(max_illumination)
        # the common case decided once: comparing dtypes costs ~0.3 us each, per image
        self._plain_f32 = (np.dtype(dtype) == np.float32 and not max_contrast and
                           not max_illumination)
        self._subtract = mean_img is not None or self.nonzero_mean
        self._mean = self.mean if mean_img is None else mean_img

    def __call__(self, img, out, rng=None):
        chw = img.transpose(2, 0, 1)
        if self._plain_f32 and out.dtype is _F32:
            # in place in the batch's row, no temporaries: the same float32 operations
            np.copyto(out, chw, casting='unsafe')              # uint8 -> float32, exact
            if self._subtract:
                np.subtract(out, self._mean, out=out)
            if not self.unit:
                np.multiply(out, self.mult, out=out)
            return
        if self.dtype == np.uint8:
            out[...] = chw
        elif self.dtype == np.int8:
            mean = self.mean_int if self.mean_img is None else \
                np.round(self.mean_img).astype(np.int16)
            out[...] = np.clip(chw.astype(np.int16) - mean, -128, 127)
        else:
            mean = self.mean if self.mean_img is None else self.mean_img
            if self.max_contrast or self.max_illumination:
                # MXNet's max_random_contrast / max_random_illumination (ProcessImage)
                c, i = self.max_contrast, self.max_illumination
                contrast = np.float32((rng.rand() * c * 2 - c + 1) * self.scale)
                light = np.float32((rng.rand() * i * 2 - i) * self.scale)
                out[...] = (chw.astype(np.float32) - mean) * (contrast / self.std) + \
                    light / self.std
                return
            if out.dtype == np.float32:
                # in place in the batch's row, no temporaries: the same float32 operations
                np.copyto(out, chw, casting='unsafe')          # uint8 -> float32, exact
                if self.mean_img is not None or self.nonzero_mean:
                    np.subtract(out, mean, out=out)
                if not self.unit:
                    np.multiply(out, self.mult, out=out)
                return
            np.multiply(chw.astype(np.float32) - mean, self.mult, out=out, casting='unsafe')


# ------------------------------------------------------------------ batching
class _Spans(object):
    """The records of ``keys`` (by position in ``keys``) as the decoding threads read them:
    ``os.pread`` on a descriptor of its own (no shared file position, so no lock; the GIL
    is released while the kernel copies), one read for a run of records that lie back to
    back in the file (a record ends where the index's next offset, or the file, begins).
    A record split in parts (its payload holds the magic number), a bad head or an offset
    past the end goes through the reader, which reports errors as MXRecordIO does."""

    def __init__(self, reader, keys):
        self._reader = reader
        self._keys = keys
        idx = reader.idx
        self._off = np.array([idx[k] for k in keys], np.int64)
        every = np.unique(np.fromiter(idx.values(), np.int64, len(idx)))
        after = np.searchsorted(every, self._off, 'right')
        self._end = np.where(after < len(every), every[np.minimum(after, len(every) - 1)],
                             np.int64(os.path.getsize(reader.uri)))
        self._fd = os.open(reader.uri, os.O_RDONLY)

    def read(self, positions):
        """The payloads (bytes) of the records at ``positions``, in order."""
        offs, ends = self._off[positions].tolist(), self._end[positions].tolist()
        out, n, i = [], len(positions), 0
        while i < n:
            start, stop, j = offs[i], ends[i], i + 1
            while j < n and offs[j] == stop:
                stop, j = ends[j], j + 1
            buf = os.pread(self._fd, stop - start, start) if stop > start else b''
            for k in range(i, j):
                out.append(self._record(buf, offs[k] - start, ends[k] - start, positions[k]))
            i = j
        return out

    def _record(self, buf, pos, end, position):
        if pos + 8 <= len(buf):
            magic, lrec = _HEAD.unpack_from(buf, pos)
            stop = pos + 8 + (lrec & _LEN_MASK)
            if magic == _MAGIC and lrec >> 29 == 0 and stop <= min(end, len(buf)):
                return buf[pos + 8:stop]
        return self._reader.read_idx(self._keys[position])

    def close(self):
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class _Work(object):
    """One decoding task: read the records at ``positions`` and write rows ``rows`` of a
    batch (a thread's or a decoding process's share of it)."""

    def __init__(self, spans, prepare):
        self._spans, self._prepare = spans, prepare

    def __call__(self, positions, draws, data, label, index, rows):
        prepare = self._prepare
        for raw, row, i in zip(self._spans.read(positions), draws, rows):
            label[i], index[i] = prepare(raw, row, data[i])


#: decode in forked processes where possible (:mod:`._decode_procs`) instead of threads.
#: Off: on the shared 2-core machine the processes used as much CPU per image as the
#: threads (with OpenCV; 0.87 of it with Pillow) but made half the images per second in
#: paired runs under load (their workers stayed runnable yet unscheduled twice as long);
#: they take the GIL out of the per-image Python, which may pay on machines with more
#: cores: measure there before switching it on. Tests switch it on.
_PROCESSES = False


class _RecordBatches(object):
    """The batch maker behind :class:`ImageRecordIter` (an MXDataIter handle): plans each
    pass's batches of records (positions in ``keys``) and has ``threads`` threads read and
    decode them (one task per thread and batch, each reading its run of the batch's
    records with :class:`_Spans` and writing its rows of the batch), ``prefetch`` batches
    ahead."""

    def __init__(self, reader, keys, batch_size, round_batch, shuffle, seed, prepare,
                 data_shape, label_width, dtype, threads, prefetch, tmpdir, seed_aug=None,
                 draws=_DRAWS):
        self._reader = reader
        self._ndraws = draws            # uniforms per image (ImageDetRecordIter's crops
                                        # may take more than _DRAWS)
        self._keys = list(keys)
        if not self._keys:
            raise ArgumentError('ImageRecordIter: the part has no record (fewer records '
                                'than num_parts?)')
        self._batch_size = batch_size
        self._round_batch = round_batch
        self._shuffle = shuffle
        self._rng = np.random.RandomState(seed)
        self._seed = seed
        self._seed_aug = seed_aug
        self._prepare = prepare
        self._data_shape = tuple(data_shape)
        self._label_shape = () if label_width == 1 else (label_width,)
        self._dtype = dtype
        self._threads = max(1, threads)
        self._prefetch = max(1, prefetch)
        self._tmpdir = tmpdir
        self._spans = _Spans(reader, self._keys)
        self._work = _Work(self._spans, prepare)
        self._pool = self._procs = None
        if _PROCESSES and _decode_procs.available() and \
                len(self._keys) >= _decode_procs.MIN_RECORDS:
            self._threads = min(self._threads, os.cpu_count() or 1)
            self._procs = _decode_procs.DecodePool(self._threads, self._work, batch_size,
                                                   self._data_shape, dtype,
                                                   self._label_shape, self._prefetch,
                                                   self._ndraws)
        else:
            self._pool = ThreadPoolExecutor(self._threads, thread_name_prefix='imagerecord')
        self._epoch = -1
        self._order = None              # this pass's order of records (positions)
        self._next_order = None         # the next pass's, once a wrap has begun it
        self._carry = 0                 # records of the next pass a wrap already used
        self._plan = deque()
        self._pending = deque()
        self._draws = None
        self.data = np.zeros((batch_size,) + self._data_shape, dtype)
        self.label = np.zeros((batch_size,) + self._label_shape, np.float32)
        self.index = np.zeros(batch_size, np.uint64)
        self.pad = 0
        self.before_first()

    def _new_order(self):
        if self._shuffle:
            return self._rng.permutation(len(self._keys)).tolist()
        return list(range(len(self._keys)))

    def before_first(self):
        for job in self._pending:
            # (a decoding process's batch keeps its slot until its tasks end)
            for fut in job[0] if self._pool is not None else ():
                fut.cancel()
        self._pending.clear()
        self._epoch += 1
        # the augmentations' numbers: with seed_aug the same for a position at every pass
        # (MXNet reseeds per image with seed_aug + position), else new at each pass
        self._draws = np.random.RandomState(
            [self._seed_aug] if self._seed_aug is not None else [self._seed, self._epoch])
        # a pass that ended on a wrapped batch began this one: go on after those records
        self._order = self._next_order or self._new_order()
        start, self._next_order, self._carry = self._carry, None, 0
        n, bs = len(self._order), self._batch_size
        plan = []
        for pos in range(start, n, bs):
            keys = self._order[pos:pos + bs]
            pad, wrap = bs - len(keys), None
            if pad and self._round_batch:
                if pad > n:
                    raise ArgumentError('ImageRecordIter: batch_size %d is too large for the '
                                        '%d records with round_batch=True' % (bs, n))
                wrap = self._new_order()
                keys = keys + wrap[:pad]
            plan.append((keys, pad, wrap))
        self._plan = deque(plan)

    def _schedule(self):
        while self._plan and len(self._pending) < self._prefetch:
            keys, pad, wrap = self._plan.popleft()
            draws = self._draws.random_sample((len(keys), self._ndraws))
            n, threads = len(keys), min(self._threads, len(keys))
            # a run of rows per thread: its records lie together in an unshuffled file
            runs = [(t * n // threads, (t + 1) * n // threads) for t in range(threads)]
            if self._procs is not None:
                batch, arrays = self._procs.submit(keys, draws, runs)
                self._pending.append((batch, pad, wrap, n, arrays))
                continue
            data = np.empty((self._batch_size,) + self._data_shape, self._dtype)
            label = np.empty((self._batch_size,) + self._label_shape, np.float32)
            index = np.empty(self._batch_size, np.uint64)
            futures = [self._pool.submit(self._work, keys[a:b], draws[a:b], data, label,
                                         index, range(a, b)) for a, b in runs]
            self._pending.append((futures, pad, wrap, len(keys), (data, label, index)))

    def next(self):
        self._schedule()
        if not self._pending:
            return False
        futures, pad, wrap, filled, arrays = self._pending.popleft()
        if wrap is not None:            # the next pass begins with this batch's tail
            self._next_order, self._carry = wrap, pad
        self._schedule()
        if self._procs is not None:
            self._procs.wait(futures)
        else:
            for fut in futures:
                fut.result()
        data, label, index = arrays
        # a short batch without round_batch keeps the previous batch's last rows (MXNet
        # reuses its buffer)
        data[filled:], label[filled:], index[filled:] = (self.data[filled:],
                                                         self.label[filled:],
                                                         self.index[filled:])
        self.data, self.label, self.index = data, label, index
        self.pad = pad
        return True

    def close(self):
        if getattr(self, '_pool', None) is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
        if getattr(self, '_procs', None) is not None:
            self._procs.close()
        spans = getattr(self, '_spans', None)
        if spans is not None:
            spans.close()
        if self._tmpdir:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None

    def __del__(self):
        try:
            self.close()
        except Exception:       # interpreter shutdown
            pass


def _create_mean_img(p, reader, keys, augment, channels):
    """MXNet's CreateMeanImg: the mean of the part's images as the iterator augments them
    (float32, CHW), saved to ``mean_img`` under the key 'mean_img' (``mx.nd.save``)."""
    logging.getLogger(__name__).info('ImageRecordIter: %s not found: creating the mean '
                                     'image of %d images', p['mean_img'], len(keys))
    draws = np.random.RandomState([p['seed']]).random_sample((len(keys), _DRAWS))

    total = np.zeros(tuple(p['data_shape']), np.float64)
    with ThreadPoolExecutor(p['preprocess_threads']) as pool:
        indices = range(len(keys))
        raws = [recordio.unpack(reader.read_idx(keys[i]))[1] for i in indices]
        for pixels in pool.map(lambda i: augment(_decode(raws[i], channels),
                                                 _Draws(draws[i])), indices):
            total += pixels.transpose(2, 0, 1)
    nd.save(p['mean_img'], {'mean_img': nd.array((total / len(keys)).astype(np.float32))})


_IR_HEAD = struct.Struct(recordio._IR_FORMAT)
#: take the crop-only fast path where it applies (tests compare it with the general one)
_FAST_CROP = True


def _crop_only(p, imglist):
    """A per-image function for the common settings (colour, no resize, affine, padding,
    colour or lighting changes; crop, centred or random, and mirror), or None: it parses
    the record's header with one ``struct`` call, decodes an 8-bit colour JPEG straight into
    an array (``recordio._decode_jpeg_cv`` where OpenCV is installed, else
    ``recordio._decode_jpeg_rgbx``), crops and mirrors views of it and writes the
    normalised pixels into the batch's row, drawing the same numbers in the same order as
    :class:`_Augmenter` (so the batches are the same). Fewer Python steps per image also
    means less time holding the GIL, which the decoding threads share. It returns None for
    a record it does not handle (another format, several labels, an image smaller than
    ``data_shape``), which then takes the general path."""
    c, dh, dw = p['data_shape']
    if (not _FAST_CROP or c != 3 or imglist is not None or p['label_width'] != 1 or
            p['affine'] or p['pad'] > 0 or p['resize'] > 0 or p['color'] or
            p['random_h'] or p['random_s'] or p['random_l'] or p['pca_noise'] > 0 or
            p['inter_method'] == 10 or p['max_random_contrast'] or
            p['max_random_illumination']):
        return None
    rand_crop, mirror, rand_mirror = p['rand_crop'], p['mirror'], p['rand_mirror']
    unpack_from, size = _IR_HEAD.unpack_from, recordio._IR_SIZE
    decode, decode_cv = recordio._decode_jpeg_rgbx, recordio._decode_jpeg_cv
    use_cv = recordio._opencv_jpeg() is not None

    def crop_only(raw, draws, out, normalize):
        if len(raw) <= size:
            return None
        flag, label, image_id, _ = unpack_from(raw)
        if flag:
            return None
        cv = decode_cv(memoryview(raw)[size:]) if use_cv else None
        if cv is None:
            rgbx, channels = decode(memoryview(raw)[size:]), slice(0, 3)
            if rgbx is None:
                return None
        else:                       # RGB, or BGR read backwards
            rgbx, channels = cv[0], slice(None) if cv[1] else slice(None, None, -1)
        h, w = rgbx.shape[0] - dh, rgbx.shape[1] - dw
        if h < 0 or w < 0:
            return None
        k = 0
        if rand_crop:               # _Draws.randint(0, n + 1), y then x
            y = min(int((h + 1) * float(draws[0])), h)
            x = min(int((w + 1) * float(draws[1])), w)
            k = 2
        else:
            y, x = h // 2, w // 2
        img = rgbx[y:y + dh, x:x + dw, channels]
        if mirror or (rand_mirror and float(draws[k]) < 0.5):
            img = img[:, ::-1]
        normalize(img, out)
        return label, image_id
    return crop_only


class ImageRecordIter(MXDataIter):
    """Batches of images from a RecordIO file (``.rec``, as im2rec writes it), decoded and
    augmented in threads; MXNet's ``mx.io.ImageRecordIter`` (see the module docstring).

    Parameters (keyword only, as MXNet's; values may be MXNet's strings)
    ----------
    path_imgrec : str
        The ``.rec`` file.
    data_shape : tuple of 3 ints
        (channels, height, width) of each image: 1 (gray) or 3 (RGB) channels.
    batch_size : int
    path_imgidx : str, optional
        The ``.idx`` file (random access: shuffling and sharding by record count).
    path_imglist : str, optional
        A ``.lst`` file whose labels replace the records' (matched by image id).
    label_width : int, default 1
    shuffle : bool, default False
    seed : int, default 0
    num_parts, part_index : int, default 1, 0
        Read only part ``part_index`` of ``num_parts`` (one per ``dist_sync`` worker).
    round_batch : bool, default True
    preprocess_threads : int, default 4
    prefetch_buffer : int, default 4
    resize : int, default -1
        Resize the shorter side to this first.
    rand_crop, rand_mirror, mirror : bool, default False
    max_rotate_angle, rotate : int, default 0, -1
    max_aspect_ratio, min_aspect_ratio, max_shear_ratio : float
    min_random_scale, max_random_scale : float, default 1
    pad : int, default 0
    fill_value : int, default 255
    inter_method : int, default 1
        0 nearest, 1 bilinear, 2 cubic, 3 area, 4 Lanczos, 9 auto, 10 random.
    mean_img : str, optional
        An NDArray file (``mx.nd.save``) with the mean image (key 'mean_img'), subtracted
        instead of ``mean_r/g/b``; made (from the augmented images) if it does not exist.
    mean_r, mean_g, mean_b, std_r, std_g, std_b, scale : float
    brightness, contrast, saturation, pca_noise : float, default 0
    random_h, random_s, random_l : int, default 0
        Shift hue, saturation, lightness (OpenCV's 8-bit HLS) by up to this much.
    max_random_contrast, max_random_illumination : float, default 0
    dtype : {'float32', 'float16', 'uint8', 'int8'}, default 'float32'
    seed_aug : int, optional
        The seed of the random augmentations (default: ``seed``).
    data_name, label_name : str, default 'data', 'softmax_label'

    Examples
    --------
    >>> import io, os, tempfile, numpy as np, symgraph as mx
    >>> from PIL import Image
    >>> d = tempfile.mkdtemp()
    >>> rec = mx.recordio.MXRecordIO(os.path.join(d, 'x.rec'), 'w')
    >>> for i in range(3):
    ...     png = io.BytesIO()
    ...     Image.fromarray(np.full((8, 10, 3), 40 * i, np.uint8)).save(png, 'PNG')
    ...     rec.write(mx.recordio.pack(mx.recordio.IRHeader(0, i, i, 0), png.getvalue()))
    >>> rec.close()
    >>> it = mx.io.ImageRecordIter(path_imgrec=os.path.join(d, 'x.rec'), data_shape=(3, 8, 8),
    ...                            batch_size=2, scale=1 / 40.)
    >>> [(b.data[0].shape, b.data[0][:, 0, 0, 0].asnumpy().tolist(),
    ...   b.label[0].asnumpy().tolist(), b.pad) for b in it]
    [((2, 3, 8, 8), [0.0, 1.0], [0.0, 1.0], 0), ((2, 3, 8, 8), [2.0, 0.0], [2.0, 0.0], 1)]
    """

    _DTYPE = None

    def __init__(self, **kwargs):
        p, names = self._parse(dict(kwargs))
        channels = p['data_shape'][0]
        rec = os.fspath(p['path_imgrec'])
        if not os.path.isfile(rec):
            raise MissingFileError('ImageRecordIter: path_imgrec %r is not a file' % rec)
        idx = p['path_imgidx']
        if idx and not os.path.isfile(idx):
            raise MissingFileError('ImageRecordIter: path_imgidx %r is not a file' % idx)
        idx_path, keys, tmp = _part_keys(rec, idx, p['num_parts'], p['part_index'])
        reader = recordio.MXIndexedRecordIO(idx_path, rec, 'r')
        imglist = _read_imglist(p['path_imglist'], p['label_width']) \
            if p['path_imglist'] else None
        augment = _Augmenter(p)
        mean_img = None
        if p['mean_img'] and p['dtype'] != np.uint8:
            if not os.path.isfile(p['mean_img']):
                _create_mean_img(p, reader, keys, augment, channels)
            loaded = nd.load(p['mean_img'])
            mean_img = (loaded['mean_img'] if isinstance(loaded, dict) else loaded[0])
            mean_img = mean_img.asnumpy().astype(np.float32)
            if mean_img.shape != tuple(p['data_shape']):
                raise ArgumentError('ImageRecordIter: the mean image of %s has the shape %s, '
                                    'not data_shape %s' % (p['mean_img'], mean_img.shape,
                                                           tuple(p['data_shape'])))
        ch = ['r', 'g', 'b'][:channels]
        normalize = _Normalizer(p['dtype'], [p['mean_' + k] for k in ch],
                                [p['std_' + k] for k in ch], p['scale'], mean_img,
                                p['max_random_contrast'], p['max_random_illumination'])
        label_width = p['label_width']

        crop_only = _crop_only(p, imglist)

        def prepare(raw, draws, out):
            if crop_only is not None:
                done = crop_only(raw, draws, out, normalize)
                if done is not None:
                    return done
            header, img = recordio.unpack(raw)
            if imglist is not None:
                if int(header.id) not in imglist:
                    raise KeyError('ImageRecordIter: image id %d is not in %s'
                                   % (header.id, p['path_imglist']))
                label = imglist[int(header.id)]
            elif header.flag > 0:
                label = header.label
                if len(label) != label_width:
                    raise ArgumentError('ImageRecordIter: the record of image %d has %d '
                                        'labels but label_width is %d'
                                        % (header.id, len(label), label_width))
            else:
                if label_width != 1:
                    raise ArgumentError('ImageRecordIter: label_width must be 1 unless an '
                                        'imglist is given or the records hold several labels')
                label = header.label
            rng = _Draws(draws)
            pixels = augment(_decode(img, channels), rng)
            normalize(pixels, out, rng)         # straight into the batch's row
            return label, header.id

        handle = _RecordBatches(reader, keys, p['batch_size'], p['round_batch'],
                                p['shuffle'], p['seed'], prepare, p['data_shape'],
                                label_width, p['dtype'], p['preprocess_threads'],
                                p['prefetch_buffer'], tmp, p['seed_aug'])
        super(ImageRecordIter, self).__init__(handle, **names)

    def _parse(self, kw):
        names = {'data_name': kw.pop('data_name', 'data'),
                 'label_name': kw.pop('label_name', 'softmax_label')}
        for key in ('path_imgrec', 'data_shape', 'batch_size'):
            if key not in kw:
                raise ArgumentError('%s: %s is required' % (type(self).__name__, key))
        p = {}
        p['path_imgrec'] = kw.pop('path_imgrec')
        p['path_imgidx'] = kw.pop('path_imgidx', '') or ''
        p['path_imglist'] = kw.pop('path_imglist', '') or ''
        p['mean_img'] = kw.pop('mean_img', '') or ''
        p['data_shape'] = _as_shape(kw.pop('data_shape'), 'data_shape')
        if len(p['data_shape']) != 3 or p['data_shape'][0] not in (1, 3):
            raise ArgumentError('data_shape must be (channels, height, width) with 1 or 3 '
                                'channels, got %r' % (p['data_shape'],))
        ints = dict(batch_size=(None, 1), label_width=(1, 1), seed=(0, 0), num_parts=(1, 1),
                    part_index=(0, 0), preprocess_threads=(4, 1), prefetch_buffer=(4, 1),
                    resize=(-1, -1), max_rotate_angle=(0, 0), rotate=(-1, -1), pad=(0, 0),
                    fill_value=(255, 0), inter_method=(1, 0))
        for key, (default, low) in ints.items():
            p[key] = _as_int(kw.pop(key, default), key, low)
        if p['part_index'] >= p['num_parts']:
            raise ArgumentError('part_index %d must be less than num_parts %d'
                                % (p['part_index'], p['num_parts']))
        if p['inter_method'] not in (0, 1, 2, 3, 4, 9, 10):
            raise ArgumentError('invalid inter_method %d: valid values are 0, 1, 2, 3, 4, 9, '
                                '10' % p['inter_method'])
        for key, default in dict(shuffle=False, round_batch=True, rand_crop=False,
                                 rand_mirror=False, mirror=False).items():
            p[key] = _as_bool(kw.pop(key, default), key)
        floats = dict(mean_r=0, mean_g=0, mean_b=0, mean_a=0, std_r=1, std_g=1, std_b=1,
                      std_a=1, scale=1, max_aspect_ratio=0, max_shear_ratio=0,
                      min_random_scale=1, max_random_scale=1, brightness=0, contrast=0,
                      saturation=0, pca_noise=0, random_h=0, random_s=0, random_l=0,
                      max_random_contrast=0, max_random_illumination=0)
        for key, default in floats.items():
            p[key] = _float(kw.pop(key, default), key)
        min_ar = kw.pop('min_aspect_ratio', None)
        if min_ar is None or min_ar == 'None':
            p['min_aspect_ratio'] = 1 - p['max_aspect_ratio']
            p['max_aspect_ratio'] = 1 + p['max_aspect_ratio']
        else:
            p['min_aspect_ratio'] = _float(min_ar, 'min_aspect_ratio')
        seed_aug = kw.pop('seed_aug', None)
        p['seed_aug'] = None if seed_aug in (None, 'None') else _as_int(seed_aug, 'seed_aug')
        dtype = kw.pop('dtype', None) if self._DTYPE is None else self._DTYPE
        dtype = 'float32' if dtype in (None, 'None') else dtype
        try:
            p['dtype'] = np.dtype(dtype)
        except TypeError:
            p['dtype'] = None
        if p['dtype'] not in (np.float32, np.float16, np.uint8, np.int8):
            raise ArgumentTypeError("dtype must be one of 'float32', 'float16', 'uint8', "
                                    "'int8', got %r" % (dtype,))
        p['affine'] = (p['max_rotate_angle'] > 0 or p['max_shear_ratio'] > 0 or
                       p['rotate'] > 0 or p['max_random_scale'] != 1 or
                       p['min_random_scale'] != 1 or p['min_aspect_ratio'] != 1 or
                       p['max_aspect_ratio'] != 1)
        p['color'] = p['brightness'] > 0 or p['contrast'] > 0 or p['saturation'] > 0
        unknown = sorted(k for k in kw if k not in _IGNORED)
        if unknown:
            raise ArgumentTypeError('%s: unknown argument(s) %s' % (
                type(self).__name__, ', '.join(repr(k) for k in unknown)))
        return p, names

    def close(self):
        """Stop the decoding threads and free the temporary index (also done when the
        iterator is garbage-collected)."""
        self.handle.close()

    def getdata(self):
        # each batch is a new array that the iterator never writes again: no copy
        return nd.NDArray(self.handle.data, cpu())

    def getlabel(self):
        return nd.NDArray(self.handle.label, cpu())


class ImageRecordUInt8Iter(ImageRecordIter):
    """:class:`ImageRecordIter` with ``dtype='uint8'``: raw pixels (no mean, std, scale)."""
    _DTYPE = 'uint8'


class ImageRecordInt8Iter(ImageRecordIter):
    """:class:`ImageRecordIter` with ``dtype='int8'``: pixels less the rounded mean,
    saturated to [-128, 127]."""
    _DTYPE = 'int8'
