"""``mx.io.ImageDetRecordIter``: batches of images with object-detection labels from a
RecordIO file, decoded and augmented in a pool of threads, after MXNet 1.9.1's
``src/io/iter_image_det_recordio.cc``, ``src/io/image_det_aug_default.cc`` and the
``ImageDetNormalizeIter`` of ``src/io/iter_normalize.h``.

A detection label is ``[header_width, object_width, (extra header...), (id, xmin, ymin,
xmax, ymax, (extra...)) x N]`` with coordinates relative to the image (0 to 1), as the
record's labels (``IRHeader.flag`` > 0) or a ``.lst`` line (``path_imglist``). Objects whose
box is empty (``xmax <= xmin`` or ``ymax <= ymin``) are dropped, as MXNet drops them.

Pipeline per image, as MXNet's ``det_aug_default``: decode (colour, or gray for
``data_shape[0] == 1``), resize the shorter side to ``resize``; hue / saturation /
illumination in OpenCV's 8-bit HLS and contrast, each with its probability; mirror with
``rand_mirror_prob``; pad with ``fill_value`` to a random scale up to ``max_pad_scale``
with ``rand_pad_prob``; with ``rand_crop_prob``, one of ``num_crop_sampler`` crop samplers
(in random order) draws up to ``max_crop_trials`` boxes (scale, aspect ratio) until one
meets its IoU / coverage constraints on some object; objects are then kept by
``crop_emit_mode`` ('center' in the box, or 'overlap' above ``emit_overlap_thresh``) and
projected into the box; last, ``resize_mode`` 'force' (to ``data_shape``), 'shrink' (keep
the ratio, only larger images) or 'fit' (keep the ratio, fill one side); a smaller image
lies at the top left of zeros. Then ``mean_r/g/b`` (or ``mean_img``) is subtracted, the
result divided by ``std_r/g/b`` and multiplied by ``scale``.

Batch labels are ``(batch_size, label_pad_width + 4)`` float32: per image the channels,
height and width of the augmented image, the length of its label, then the label, padded
with ``label_pad_value``; ``label_pad_width`` 0 or -1 takes the widest label of the part.

Differences from MXNet (also in docs/differences.md): the random augmentations draw their
numbers from NumPy per pass (MXNet: a ``mt19937`` per decoding thread): the same
distributions, not the same numbers, and reproducible for any number of threads;
``shuffle`` permutes the whole part each pass (MXNet shuffles within 8 MB chunks);
``data_shape[0]`` 4 (RGBA) and ``shuffle_chunk_size`` are not supported.
"""
import logging
import os
import shutil

import numpy as np

from .. import ndarray as nd
from .. import recordio
from ..base import ArgumentError, ArgumentTypeError, MissingFileError, NotSupportedError
from ..context import cpu
from ._image_aug import _DRAWS, _Draws, _hls_to_rgb, _resize, _rgb_to_hls, _saturate
from ._image_decode import _decode
from ._record_batches import _RecordBatches, _part_keys
from .image_record import _float
from .native import MXDataIter, _as_bool, _as_int, _as_shape

__all__ = ['ImageDetRecordIter']

_RESIZE_MODES = ('force', 'shrink', 'fit')
_EMIT_MODES = ('center', 'overlap')
#: per-sampler parameters (MXNet's Tuple<float> fields) and their defaults
_SAMPLER_FLOATS = dict(min_crop_scales=0.0, max_crop_scales=1.0, min_crop_aspect_ratios=1.0,
                       max_crop_aspect_ratios=1.0, min_crop_overlaps=0.0,
                       max_crop_overlaps=1.0, min_crop_sample_coverages=0.0,
                       max_crop_sample_coverages=1.0, min_crop_object_coverages=0.0,
                       max_crop_object_coverages=1.0)
#: MXNet parameters taken and ignored (they tune MXNet's C++ threads and logging)
_IGNORED = frozenset(['verbose', 'ctx', 'dev_id', 'aug_seq', 'silent', 'prefetch_buffer_keep',
                      'device_id', 'path_imgidx', 'shuffle_chunk_seed'])
_F32 = np.float32


def _as_tuple(value, what, cast):
    """A parameter given as a number, a sequence or MXNet's string '(a, b)'."""
    if isinstance(value, str):
        parts = [v for v in value.strip().strip('()[]').replace(' ', '').split(',') if v]
    elif isinstance(value, (list, tuple, np.ndarray)):
        parts = list(value)
    else:
        parts = [value]
    if not parts:
        raise ArgumentError('%s must hold at least one value, got %r' % (what, value))
    return [cast(v, what) for v in parts]


# ------------------------------------------------------------------ labels
class _DetLabel(object):
    """A parsed detection label: the header and the objects, each ``[id, x0, y0, x1, y1,
    extra...]`` (MXNet's ImageDetLabel; float32 arithmetic as MXNet's floats)."""

    def __init__(self, raw, image_id=None):
        raw = [_F32(v) for v in raw]
        where = '' if image_id is None else ' (image %d)' % image_id
        if len(raw) < 7:
            raise ArgumentError('ImageDetRecordIter: a detection label needs at least 7 '
                                'values (a 2-value header and one object of 5), got %d%s'
                                % (len(raw), where))
        header_width, self.object_width = int(raw[0]), int(raw[1])
        if header_width < 2 or self.object_width < 5:
            raise ArgumentError('ImageDetRecordIter: the label header must give a header '
                                'width >= 2 and an object width >= 5, got %d and %d%s'
                                % (header_width, self.object_width, where))
        if (len(raw) - header_width) % self.object_width:
            raise ArgumentError('ImageDetRecordIter: a label of %d values does not hold '
                                'whole objects of %d after a header of %d%s'
                                % (len(raw), self.object_width, header_width, where))
        self.header = raw[:header_width]
        self.objects = []
        for i in range(header_width, len(raw), self.object_width):
            obj = raw[i:i + self.object_width]
            if obj[3] > obj[1] and obj[4] > obj[2]:
                self.objects.append(obj)

    def to_array(self):
        return self.header + [v for obj in self.objects for v in obj]

    @staticmethod
    def project(obj, box):
        """``obj`` in the coordinates of ``box`` (x, y, w, h), clipped to [0, 1]."""
        x, y, w, h = box
        return [obj[0], max(_F32(0), (obj[1] - x) / w), max(_F32(0), (obj[2] - y) / h),
                min(_F32(1), (obj[3] - x) / w), min(_F32(1), (obj[4] - y) / h)] + obj[5:]

    def mirror(self):
        self.objects = [[o[0], _F32(1) - o[3], o[2], _F32(1) - o[1]] + o[4:]
                        for o in self.objects]

    def pad(self, box):
        self.objects = [self.project(o, box) for o in self.objects]

    def try_crop(self, box, sampler, emit_mode, emit_thresh):
        """Crop to ``box`` if some object meets the sampler's constraints and some object
        survives ``emit_mode``; False (and no change) otherwise."""
        if not self.objects:
            return True
        (min_iou, max_iou, min_sample, max_sample, min_object, max_object) = sampler
        area = box[2] * box[3]
        if (min_iou > 0 or max_iou < 1 or min_sample > 0 or max_sample < 1 or
                min_object > 0 or max_object < 1):
            for obj in self.objects:
                gt = _rect(obj)
                inter = _intersect(box, gt)
                if min_iou > 0 or max_iou < 1:
                    iou = inter / (area + gt[2] * gt[3] - inter) if inter > 0 else 0
                    if iou < min_iou or iou > max_iou:
                        continue
                if min_sample > 0 or max_sample < 1:
                    c = inter / area
                    if c < min_sample or c > max_sample:
                        continue
                if min_object > 0 or max_object < 1:
                    c = inter / (gt[2] * gt[3])
                    if c < min_object or c > max_object:
                        continue
                break
            else:
                return False
        kept = []
        for obj in self.objects:
            if emit_mode == 0:
                cx, cy = (obj[1] + obj[3]) * _F32(0.5), (obj[2] + obj[4]) * _F32(0.5)
                if box[0] <= cx < box[0] + box[2] and box[1] <= cy < box[1] + box[3]:
                    kept.append(self.project(obj, box))
            else:
                gt = _rect(obj)
                if _intersect(box, gt) / (gt[2] * gt[3]) > emit_thresh:
                    kept.append(self.project(obj, box))
        if not kept:
            return False
        self.objects = kept
        return True


def _rect(obj):
    return (obj[1], obj[2], obj[3] - obj[1], obj[4] - obj[2])


def _intersect(a, b):
    """The area of the intersection of two (x, y, w, h) boxes (OpenCV's ``a & b``)."""
    w = min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0])
    h = min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1])
    return w * h if w > 0 and h > 0 else _F32(0)


def _read_det_imglist(path, label_width):
    """{image index: [labels]} of a detection ``.lst`` (index, labels..., path); every
    value between the index and the path is a label unless ``label_width`` > 0."""
    labels = {}
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            fields = line.split()
            if not fields:
                continue
            want = label_width + 2 if label_width > 0 else 3
            if len(fields) < want:
                raise ArgumentError('%s, line %d: expected an index, %s label(s) and a path, '
                                    'got %r' % (path, lineno, label_width if label_width > 0
                                                else 'one or more', line.strip()))
            values = fields[1:1 + label_width] if label_width > 0 else fields[1:-1]
            try:
                labels[int(float(fields[0]))] = [float(v) for v in values]
            except ValueError:
                raise ArgumentError('%s, line %d: not numbers: %r'
                                    % (path, lineno, line.strip())) from None
    return labels


# ------------------------------------------------------------------ augmentation
class _DetAugmenter(object):
    """MXNet's DefaultImageDetAugmenter on an (H, W, C) uint8 RGB image and its label."""

    def __init__(self, p):
        self.p = p
        self.samplers = list(zip(*[p[k] for k in ('min_crop_scales', 'max_crop_scales',
                                                    'min_crop_aspect_ratios',
                                                    'max_crop_aspect_ratios')]))
        self.constraints = list(zip(*[p[k] for k in (
            'min_crop_overlaps', 'max_crop_overlaps', 'min_crop_sample_coverages',
            'max_crop_sample_coverages', 'min_crop_object_coverages',
            'max_crop_object_coverages')]))

    def draws_needed(self):
        """An upper bound of the uniforms one image takes."""
        p = self.p
        return 16 + 3 * (p['inter_method'] == 10) + p['num_crop_sampler'] + \
            4 * sum(p['max_crop_trials'])

    def _method(self, old_w, old_h, new_w, new_h, rng):
        method = self.p['inter_method']
        if method == 9:
            if new_w > old_w and new_h > old_h:
                return 2
            if new_w < old_w and new_h < old_h:
                return 3
            return 1
        if method == 10:
            return rng.randint(0, 5)
        return method

    def __call__(self, img, label, rng):
        p = self.p
        if p['resize'] > 0:
            h, w = img.shape[:2]
            nh, nw = (p['resize'] * h // w, p['resize']) if h > w else \
                (p['resize'], p['resize'] * w // h)
            img = _resize(img, nw, nh, self._method(w, h, nw, nh, rng))
        if (p['random_hue_prob'] > 0 or p['random_saturation_prob'] > 0 or
                p['random_illumination_prob'] > 0 or p['random_contrast_prob'] > 0):
            img = self._color(img, rng)
        if p['rand_mirror_prob'] > 0 and rng.rand() < p['rand_mirror_prob']:
            label.mirror()
            img = img[:, ::-1]
        if p['rand_pad_prob'] > 0 and p['max_pad_scale'] > 1 and \
                rng.rand() < p['rand_pad_prob']:
            img = self._pad(img, label, rng)
        if p['rand_crop_prob'] > 0 and p['num_crop_sampler'] > 0 and \
                rng.rand() < p['rand_crop_prob']:
            img = self._crop(img, label, rng)
        return self._fit(img, rng)

    def _color(self, img, rng):
        p = self.p
        # int() truncates toward zero as C++'s float -> int conversion
        h = int(_F32(rng.uniform(-1, 1)) * p['max_random_hue'])
        s = int(_F32(rng.uniform(-1, 1)) * p['max_random_saturation'])
        l = int(_F32(rng.uniform(-1, 1)) * p['max_random_illumination'])
        c = _F32(rng.uniform(-1, 1)) * _F32(p['max_random_contrast'])
        h = h if rng.rand() < p['random_hue_prob'] else 0
        s = s if rng.rand() < p['random_saturation_prob'] else 0
        l = l if rng.rand() < p['random_illumination_prob'] else 0
        c = c if rng.rand() < p['random_contrast_prob'] else 0
        if (h or s or l) and img.shape[2] == 3:
            hh, ll, ss = _rgb_to_hls(img)
            img = _hls_to_rgb(np.clip(hh + h, 0, 180), np.clip(ll + l, 0, 255),
                              np.clip(ss + s, 0, 255))
        if abs(c) > 1e-3:
            img = _saturate(img.astype(np.float32) * (c + _F32(1)))
        return img

    def _pad(self, img, label, rng):
        p = self.p
        scale = _F32(rng.uniform(1, p['max_pad_scale']))
        if scale < _F32(1.05):
            return img
        x0 = _F32(rng.uniform(0, scale - 1))
        y0 = _F32(rng.uniform(0, scale - 1))
        label.pad((-x0, -y0, scale, scale))
        rows, cols = img.shape[:2]
        left, top = int(x0 * cols), int(y0 * rows)
        right = int((scale - x0 - 1) * cols)
        bottom = int((scale - y0 - 1) * rows)
        return np.pad(img, ((top, max(bottom, 0)), (left, max(right, 0)), (0, 0)),
                      constant_values=p['fill_value'])

    def _crop_box(self, sampler, rng, img_ratio):
        min_scale, max_scale, min_ar, max_ar = sampler
        scale = _F32(rng.uniform(min_scale, max_scale)) + _F32(1e-12)
        min_ratio = max(_F32(min_ar) / img_ratio, scale * scale)
        max_ratio = min(_F32(max_ar) / img_ratio, _F32(1) / (scale * scale))
        ratio = np.sqrt(_F32(rng.uniform(min_ratio, max_ratio)))
        w, h = min(_F32(1), scale * ratio), min(_F32(1), scale / ratio)
        return (_F32(rng.uniform(0, 1 - w)), _F32(rng.uniform(0, 1 - h)), w, h)

    def _crop(self, img, label, rng):
        p = self.p
        rows, cols = img.shape[:2]
        for idx in rng.permutation(p['num_crop_sampler']):
            for _ in range(p['max_crop_trials'][idx]):
                box = self._crop_box(self.samplers[idx], rng, _F32(cols) / _F32(rows))
                if label.try_crop(box, self.constraints[idx], p['crop_emit_mode'],
                                  p['emit_overlap_thresh']):
                    left, top = int(box[0] * cols), int(box[1] * rows)
                    width = max(1, int(box[2] * cols))
                    height = max(1, int(box[3] * rows))
                    return img[top:top + height, left:left + width]
        return img

    def _fit(self, img, rng):
        p = self.p
        rows, cols = img.shape[:2]
        h, w = _F32(p['data_shape'][1]), _F32(p['data_shape'][2])
        mode = p['resize_mode']
        if mode == 'force':
            nh, nw = p['data_shape'][1], p['data_shape'][2]
        elif mode == 'shrink' and not (rows > h or cols > w):
            return img
        else:
            ratio = min(h / _F32(rows), w / _F32(cols))
            nh, nw = int(ratio * _F32(rows)), int(ratio * _F32(cols))
        return _resize(img, nw, nh, self._method(cols, rows, nw, nh, rng))


class _DetNormalizer(object):
    """(H, W, C) uint8 -> the (C, H, W) float32 row of a batch (zeros beyond the image),
    as MXNet's ImageDetNormalizeIter."""

    def __init__(self, p, mean_img=None):
        c = p['data_shape'][0]
        ch = 'rgb'[:c]
        means = [p['mean_' + k] for k in ch]
        # MXNet subtracts the channel means only if one of them is positive
        self.mean = np.array(means, np.float32).reshape(c, 1, 1) \
            if any(m > 0 for m in means) else None
        self.mean_img = mean_img if self.mean is None else None
        std = [p['std_' + k] for k in ch]
        self.std = np.array([s if s > 0 else 1 for s in std], np.float32).reshape(c, 1, 1)
        self.scale = np.float32(p['scale'])

    def __call__(self, img, out):
        out[...] = 0
        rows, cols = img.shape[:2]
        out[:, :rows, :cols] = img.transpose(2, 0, 1)
        if self.mean is not None:
            out -= self.mean
        elif self.mean_img is not None:
            out -= self.mean_img
        out /= self.std
        out *= self.scale


# ------------------------------------------------------------------ the iterator
class ImageDetRecordIter(MXDataIter):
    """Batches of images and detection labels from a RecordIO file; MXNet's
    ``mx.io.ImageDetRecordIter`` (see the module docstring for the pipeline).

    Parameters (keyword only, as MXNet's; values may be MXNet's strings)
    ----------
    path_imgrec : str
    data_shape : tuple of 3 ints
        (channels, height, width): 1 (gray) or 3 (RGB) channels.
    batch_size : int
    path_imglist : str, optional
        A ``.lst`` file whose labels replace the records' (matched by image id).
    label_width : int, default -1
        The width every label must have; -1 for any.
    label_pad_width : int, default 0
        The label width of the batches (less 4); 0 or -1: the widest label of the part.
    label_pad_value : float, default -1
    shuffle, round_batch : bool, default False, True
    seed : int, default 0
    num_parts, part_index : int, default 1, 0
    preprocess_threads, prefetch_buffer : int, default 4
    resize : int, default -1
    rand_crop_prob : float, default 0
    min_crop_scales, max_crop_scales : floats, default (0,), (1,)
    min_crop_aspect_ratios, max_crop_aspect_ratios : floats, default (1,), (1,)
    min_crop_overlaps, max_crop_overlaps : floats, default (0,), (1,)
    min_crop_sample_coverages, max_crop_sample_coverages : floats, default (0,), (1,)
    min_crop_object_coverages, max_crop_object_coverages : floats, default (0,), (1,)
    num_crop_sampler : int, default 1
    crop_emit_mode : {'center', 'overlap'}, default 'center'
    emit_overlap_thresh : float, default 0.3
    max_crop_trials : ints, default (25,)
    rand_pad_prob, max_pad_scale : float, default 0, 1
    max_random_hue, max_random_saturation, max_random_illumination : int, default 0
    random_hue_prob, random_saturation_prob, random_illumination_prob : float, default 0
    max_random_contrast, random_contrast_prob : float, default 0
    rand_mirror_prob : float, default 0
    fill_value : int, default 127
    inter_method : int, default 1
    resize_mode : {'force', 'shrink', 'fit'}, default 'force'
    mean_img : str, optional
    mean_r, mean_g, mean_b, std_r, std_g, std_b : float, default 0 (0: not applied)
    scale : float, default 1
    data_name, label_name : str, default 'data', 'softmax_label'

    Examples
    --------
    >>> import io, os, tempfile, numpy as np, symgraph as mx
    >>> from PIL import Image
    >>> d = tempfile.mkdtemp()
    >>> rec = mx.recordio.MXRecordIO(os.path.join(d, 'x.rec'), 'w')
    >>> for i in range(2):
    ...     png = io.BytesIO()
    ...     Image.fromarray(np.full((8, 10, 3), 40, np.uint8)).save(png, 'PNG')
    ...     label = [2, 5] + [i, 0.1, 0.2, 0.5, 0.6] * (i + 1)
    ...     rec.write(mx.recordio.pack(mx.recordio.IRHeader(0, label, i, 0), png.getvalue()))
    >>> rec.close()
    >>> it = mx.io.ImageDetRecordIter(path_imgrec=os.path.join(d, 'x.rec'),
    ...                               data_shape=(3, 4, 4), batch_size=2)
    >>> batch = next(it)
    >>> batch.data[0].shape, batch.label[0].shape
    ((2, 3, 4, 4), (2, 16))
    >>> batch.label[0].asnumpy()[0, :8].tolist()
    [3.0, 4.0, 4.0, 7.0, 2.0, 5.0, 0.0, 0.10000000149011612]
    """

    def __init__(self, **kwargs):
        p, names = self._parse(dict(kwargs))
        rec = os.fspath(p['path_imgrec'])
        if not os.path.isfile(rec):
            raise MissingFileError('ImageDetRecordIter: path_imgrec %r is not a file' % rec)
        if p['path_imglist'] and not os.path.isfile(p['path_imglist']):
            raise MissingFileError('ImageDetRecordIter: path_imglist %r is not a file'
                                   % p['path_imglist'])
        # records are split by bytes, as MXNet's InputSplit (it reads no index)
        idx_path, keys, tmp = _part_keys(rec, '', p['num_parts'], p['part_index'])
        try:
            reader = recordio.MXIndexedRecordIO(idx_path, rec, 'r')
            imglist = _read_det_imglist(p['path_imglist'], p['label_width']) \
                if p['path_imglist'] else None
            pad_width = self._pad_width(p, reader, keys, imglist)
            augment = _DetAugmenter(p)
            channels = p['data_shape'][0]
            label_width = p['label_width']

            def prepare(raw, draws, out, normalize):
                header, img = recordio.unpack(raw)
                image_id = int(header.id)
                if imglist is not None:
                    if image_id not in imglist:
                        raise KeyError('ImageDetRecordIter: image id %d is not in %s'
                                       % (image_id, p['path_imglist']))
                    raw_label = imglist[image_id]
                else:
                    raw_label = _record_label(header, label_width)
                label = _DetLabel(raw_label, image_id)
                pixels = augment(_decode(img, channels), label, _Draws(draws))
                normalize(pixels, out)
                values = label.to_array()
                row = np.full(pad_width + 4, p['label_pad_value'], np.float32)
                row[:4] = (channels,) + pixels.shape[:2] + (len(values),)
                row[4:4 + len(values)] = values
                return row, header.id

            mean_img = self._mean_img(p, reader, keys, prepare, augment)
            normalize = _DetNormalizer(p, mean_img)
            handle = _RecordBatches(reader, keys, p['batch_size'], p['round_batch'],
                                    p['shuffle'], p['seed'],
                                    lambda raw, d, out: prepare(raw, d, out, normalize),
                                    p['data_shape'], pad_width + 4, np.dtype(np.float32),
                                    p['preprocess_threads'], p['prefetch_buffer'], tmp,
                                    draws=max(_DRAWS, augment.draws_needed()))
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        super(ImageDetRecordIter, self).__init__(handle, **names)

    @staticmethod
    def _pad_width(p, reader, keys, imglist):
        """MXNet's label padding width: the widest label (of the list, or of the part's
        records), or ``label_pad_width`` if larger."""
        if imglist is not None:
            widest = max((len(v) for v in imglist.values()), default=0)
        else:
            widest = 0
            for k in keys:
                header, _ = recordio.unpack(reader.read_idx(k))
                widest = max(widest, len(_record_label(header, p['label_width'])))
        if widest > p['label_pad_width'] > 0:
            raise ArgumentError('ImageDetRecordIter: label_pad_width %d is smaller than the '
                                'widest label, %d' % (p['label_pad_width'], widest))
        return max(widest, p['label_pad_width'])

    @staticmethod
    def _mean_img(p, reader, keys, prepare, augment):
        """The mean image of ``mean_img`` (loaded, or made as MXNet makes it: the mean of
        the augmented images with std and scale applied but no mean subtracted)."""
        if not p['mean_img']:
            return None
        shape = tuple(p['data_shape'])
        if not os.path.isfile(p['mean_img']):
            logging.getLogger(__name__).info('ImageDetRecordIter: %s not found: creating '
                                             'the mean image of %d images', p['mean_img'],
                                             len(keys))
            unmeaned = _DetNormalizer(dict(p, mean_r=0, mean_g=0, mean_b=0))
            draws = np.random.RandomState([p['seed']]).random_sample(
                (len(keys), max(_DRAWS, augment.draws_needed())))
            total, out = np.zeros(shape, np.float64), np.empty(shape, np.float32)
            for i, k in enumerate(keys):
                prepare(reader.read_idx(k), draws[i], out, unmeaned)
                total += out
            nd.save(p['mean_img'], {'mean_img': nd.array((total / len(keys))
                                                         .astype(np.float32))})
        loaded = nd.load(p['mean_img'])
        mean = (list(loaded.values()) if isinstance(loaded, dict) else loaded)
        if len(mean) != 1:
            raise ArgumentError('ImageDetRecordIter: %s must hold one array (the mean '
                                'image), it holds %d' % (p['mean_img'], len(mean)))
        mean = mean[0].asnumpy().astype(np.float32)
        if mean.shape != shape:
            raise ArgumentError('ImageDetRecordIter: the mean image of %s has the shape %s, '
                                'not data_shape %s' % (p['mean_img'], mean.shape, shape))
        return mean

    def _parse(self, kw):
        names = {'data_name': kw.pop('data_name', 'data'),
                 'label_name': kw.pop('label_name', 'softmax_label')}
        for key in ('path_imgrec', 'data_shape', 'batch_size'):
            if key not in kw:
                raise ArgumentError('ImageDetRecordIter: %s is required' % key)
        p = {'path_imgrec': kw.pop('path_imgrec'),
             'path_imglist': kw.pop('path_imglist', '') or '',
             'mean_img': kw.pop('mean_img', '') or '',
             'data_shape': _as_shape(kw.pop('data_shape'), 'data_shape')}
        if len(p['data_shape']) != 3 or p['data_shape'][0] not in (1, 3):
            if len(p['data_shape']) == 3 and p['data_shape'][0] == 4:
                raise NotSupportedError('ImageDetRecordIter: 4-channel (RGBA) data_shape is '
                                        'not supported; use 1 or 3 channels')
            raise ArgumentError('data_shape must be (channels, height, width) with 1 or 3 '
                                'channels, got %r' % (p['data_shape'],))
        ints = dict(batch_size=(None, 1), label_width=(-1, None), seed=(0, None),
                    num_parts=(1, 1), part_index=(0, 0), preprocess_threads=(4, 1),
                    prefetch_buffer=(4, 1), resize=(-1, None), label_pad_width=(0, None),
                    num_crop_sampler=(1, 0), max_random_hue=(0, None),
                    max_random_saturation=(0, None), max_random_illumination=(0, None),
                    fill_value=(127, None), inter_method=(1, 0), shuffle_chunk_size=(0, 0))
        for key, (default, low) in ints.items():
            p[key] = _as_int(kw.pop(key, default), key, low)
        if p['shuffle_chunk_size'] > 0:
            raise NotSupportedError('ImageDetRecordIter: shuffle_chunk_size is not supported '
                                    '(shuffle permutes the whole part)')
        if p['part_index'] >= p['num_parts']:
            raise ArgumentError('part_index %d must be less than num_parts %d'
                                % (p['part_index'], p['num_parts']))
        if p['inter_method'] not in (0, 1, 2, 3, 4, 9, 10):
            raise ArgumentError('invalid inter_method %d: valid values are 0, 1, 2, 3, 4, 9, '
                                '10' % p['inter_method'])
        for key, default in dict(shuffle=False, round_batch=True).items():
            p[key] = _as_bool(kw.pop(key, default), key)
        floats = dict(label_pad_value=-1, rand_crop_prob=0, emit_overlap_thresh=0.3,
                      rand_pad_prob=0, max_pad_scale=1, random_hue_prob=0,
                      random_saturation_prob=0, random_illumination_prob=0,
                      max_random_contrast=0, random_contrast_prob=0, rand_mirror_prob=0,
                      mean_r=0, mean_g=0, mean_b=0, mean_a=0, std_r=0, std_g=0, std_b=0,
                      std_a=0, scale=1)
        for key, default in floats.items():
            p[key] = _float(kw.pop(key, default), key)
        if p['emit_overlap_thresh'] < 0:
            raise ArgumentError('emit_overlap_thresh must be at least 0, got %g'
                                % p['emit_overlap_thresh'])
        for key, enum in (('resize_mode', _RESIZE_MODES), ('crop_emit_mode', _EMIT_MODES)):
            value = kw.pop(key, enum[0])
            if value not in enum:
                raise ArgumentError('%s must be one of %s, got %r' % (key, ', '.join(enum),
                                                                      value))
            p[key] = value if key == 'resize_mode' else enum.index(value)
        n = p['num_crop_sampler']
        tuples = dict(_SAMPLER_FLOATS, max_crop_trials=25)
        for key, default in tuples.items():
            cast = _as_int if key == 'max_crop_trials' else _float
            values = _as_tuple(kw.pop(key, default), key, cast)
            if n == 1 and len(values) != 1 or n > 1 and len(values) not in (1, n):
                raise ArgumentError('%s has %d values for %d crop sampler(s)'
                                    % (key, len(values), n))
            p[key] = values * n if len(values) == 1 else values
        for i in range(n):
            checks = [(p['min_crop_scales'][i] >= 0, 'min_crop_scales >= 0'),
                      (p['max_crop_scales'][i] <= 1, 'max_crop_scales <= 1'),
                      (p['max_crop_scales'][i] > p['min_crop_scales'][i],
                       'max_crop_scales > min_crop_scales'),
                      (p['min_crop_aspect_ratios'][i] >= 0, 'min_crop_aspect_ratios >= 0')]
            checks += [(p['max_' + k][i] >= p['min_' + k][i], 'max_%s >= min_%s' % (k, k))
                       for k in ('crop_aspect_ratios', 'crop_overlaps',
                                 'crop_sample_coverages', 'crop_object_coverages')]
            for ok, what in checks:
                if not ok:
                    raise ArgumentError('ImageDetRecordIter: crop sampler %d needs %s' % (i,
                                                                                       what))
        unknown = sorted(k for k in kw if k not in _IGNORED)
        if unknown:
            raise ArgumentTypeError('ImageDetRecordIter: unknown argument(s) %s' % ', '.join(
                repr(k) for k in unknown))
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


def _record_label(header, label_width):
    """The labels a record holds (``flag`` > 0), checked against ``label_width``."""
    if header.flag <= 0:
        raise ArgumentError('ImageDetRecordIter: the record of image %d holds no detection '
                            'label (pack it with IRHeader flag > 0, or give path_imglist)'
                            % header.id)
    label = np.atleast_1d(header.label)
    if label_width > 0 and len(label) != label_width:
        raise ArgumentError('ImageDetRecordIter: the record of image %d has %d labels but '
                            'label_width is %d' % (header.id, len(label), label_width))
    return label
