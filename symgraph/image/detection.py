"""Object detection in ``mx.image``: the detection augmenters, ``CreateDetAugmenter`` and
``ImageDetIter``, after MXNet 1.9.1's ``python/mxnet/image/detection.py``.

A detection augmenter is called with an (H, W, C) image NDArray and a NumPy label of shape
(objects, 5+) whose rows are ``[class id, xmin, ymin, xmax, ymax, extra...]`` with
coordinates relative to the image (0 to 1); it returns the pair, both transformed.
``DetBorrowAug`` applies a classification augmenter (``mx.image.Augmenter``) that leaves the
label as it is. Random draws come from Python's ``random`` as in MXNet (the borrowed
``LightingAug`` from NumPy's), so seeding both reproduces MXNet's draws.

``ImageDetIter`` reads raw labels ``[header_width, object_width, (extra header...),
objects...]`` (from a ``.rec``, a ``.lst`` or a Python list), drops the empty boxes,
augments, and writes batches of data (batch, C, H, W) and labels (batch, max objects,
object width) padded with -1; ``sync_label_shape`` and ``reshape`` give train and
validation iterators one label shape.
"""
import json
import logging
import numbers
import random
import warnings
from math import sqrt

import numpy as np

from .. import ndarray as nd
from ..base import ArgumentError, ArgumentTypeError
from .image import (Augmenter, CastAug, ColorJitterAug, ColorNormalizeAug, ForceResizeAug,
                    HueJitterAug, ImageIter, LightingAug, RandomGrayAug, ResizeAug,
                    copyMakeBorder, fixed_crop)

__all__ = ['DetAugmenter', 'DetBorrowAug', 'DetRandomSelectAug', 'DetHorizontalFlipAug',
           'DetRandomCropAug', 'DetRandomPadAug', 'CreateMultiRandCropAugmenter',
           'CreateDetAugmenter', 'ImageDetIter']

#: ImageNet's RGB PCA (AlexNet's lighting noise), as CreateDetAugmenter's pca_noise uses it
_EIGVAL = np.array([55.46, 4.794, 1.148])
_EIGVEC = np.array([[-0.5675, 0.7192, 0.4009],
                    [-0.5808, -0.0045, -0.8140],
                    [-0.5836, -0.6948, 0.4203]])
_MEAN = np.array([123.68, 116.28, 103.53])
_STD = np.array([58.395, 57.12, 57.375])


def _pair(value, what, owner):
    """A (low, high) range given as a pair or one number (both ends)."""
    if isinstance(value, (tuple, list)):
        if len(value) != 2:
            raise ArgumentError('%s: %s must be a number or a (low, high) pair, got %r'
                                % (owner, what, value))
        return tuple(value)
    if not isinstance(value, numbers.Number):
        raise ArgumentTypeError('%s: %s must be a number or a (low, high) pair, got %r'
                                % (owner, what, value))
    logging.info('Using fixed %s: %s in %s', what, value, owner)
    return (value, value)


def _areas(boxes):
    """Areas of (n, 4+) boxes ``[xmin, ymin, xmax, ymax, ...]`` (0 where empty)."""
    return np.maximum(0, boxes[:, 3] - boxes[:, 1]) * np.maximum(0, boxes[:, 2] - boxes[:, 0])


class DetAugmenter(object):
    """Detection augmenter base class: keeps its constructor's keyword arguments (arrays
    as lists) so that :meth:`dumps` can describe it as JSON; subclasses implement
    ``__call__(src, label) -> (src, label)``."""

    def __init__(self, **kwargs):
        self._kwargs = kwargs
        for k, v in self._kwargs.items():
            if isinstance(v, nd.NDArray):
                v = v.asnumpy()
            if isinstance(v, np.ndarray):
                self._kwargs[k] = v.tolist()

    def dumps(self):
        """The augmenter as a JSON string ``[class name in lower case, kwargs]``."""
        return json.dumps([self.__class__.__name__.lower(), self._kwargs])

    def __call__(self, src, label):
        raise NotImplementedError('%s must override __call__' % type(self).__name__)


class DetBorrowAug(DetAugmenter):
    """Apply the classification augmenter ``augmenter`` (an ``mx.image.Augmenter`` that
    does not move pixels: colour, cast, normalisation, or a resize of the whole image)
    and keep the label."""

    def __init__(self, augmenter):
        if not isinstance(augmenter, Augmenter):
            raise TypeError('DetBorrowAug: borrowing from invalid Augmenter %r (an '
                            'mx.image.Augmenter is needed)' % (augmenter,))
        super(DetBorrowAug, self).__init__(augmenter=augmenter.dumps())
        self.augmenter = augmenter

    def dumps(self):
        """``[name, the borrowed augmenter's dumps()]`` (a list, as MXNet's)."""
        return [self.__class__.__name__.lower(), self.augmenter.dumps()]

    def __call__(self, src, label):
        return self.augmenter(src), label


class DetRandomSelectAug(DetAugmenter):
    """Apply one of ``aug_list``, chosen at random, or (with probability ``skip_prob``)
    none; an empty list always skips."""

    def __init__(self, aug_list, skip_prob=0):
        super(DetRandomSelectAug, self).__init__(skip_prob=skip_prob)
        if not isinstance(aug_list, (list, tuple)):
            aug_list = [aug_list]
        for aug in aug_list:
            if not isinstance(aug, DetAugmenter):
                raise ValueError('DetRandomSelectAug: allows DetAugmenter in aug_list only, '
                                 'got %r' % (aug,))
        if not aug_list:
            skip_prob = 1
        self.aug_list = aug_list
        self.skip_prob = skip_prob

    def dumps(self):
        """``[name, [each augmenter's dumps()]]``."""
        return [self.__class__.__name__.lower(), [x.dumps() for x in self.aug_list]]

    def __call__(self, src, label):
        if random.random() < self.skip_prob:
            return src, label
        # MXNet shuffles the list in place and takes the first (same draws as choice())
        random.shuffle(self.aug_list)
        return self.aug_list[0](src, label)


class DetHorizontalFlipAug(DetAugmenter):
    """With probability ``p``, mirror the image and the boxes left-right."""

    def __init__(self, p):
        super(DetHorizontalFlipAug, self).__init__(p=p)
        self.p = p

    def __call__(self, src, label):
        if random.random() < self.p:
            src = nd.flip(src, axis=1)
            self._flip_label(label)
        return src, label

    def _flip_label(self, label):
        """Mirror the boxes of ``label`` in place."""
        tmp = 1.0 - label[:, 1]
        label[:, 1] = 1.0 - label[:, 3]
        label[:, 3] = tmp


class DetRandomCropAug(DetAugmenter):
    """Crop a random region that covers at least ``min_object_covered`` of every object
    it touches (and some object), of a relative area in ``area_range`` and an aspect
    ratio (width / height) in ``aspect_ratio_range``; objects left with less than
    ``min_eject_coverage`` of their area are dropped. After ``max_attempts`` failed
    proposals the image is left as it is. An empty or reversed range disables the
    augmenter with a warning (as MXNet)."""

    def __init__(self, min_object_covered=0.1, aspect_ratio_range=(0.75, 1.33),
                 area_range=(0.05, 1.0), min_eject_coverage=0.3, max_attempts=50):
        aspect_ratio_range = _pair(aspect_ratio_range, 'aspect_ratio_range',
                                   'DetRandomCropAug')
        area_range = _pair(area_range, 'area_range', 'DetRandomCropAug')
        super(DetRandomCropAug, self).__init__(min_object_covered=min_object_covered,
                                               aspect_ratio_range=aspect_ratio_range,
                                               area_range=area_range,
                                               min_eject_coverage=min_eject_coverage,
                                               max_attempts=max_attempts)
        self.min_object_covered = min_object_covered
        self.min_eject_coverage = min_eject_coverage
        self.max_attempts = max_attempts
        self.aspect_ratio_range = aspect_ratio_range
        self.area_range = area_range
        self.enabled = False
        if area_range[1] <= 0 or area_range[0] > area_range[1]:
            warnings.warn('Skip DetRandomCropAug due to invalid area_range: %s'
                          % (area_range,))
        elif aspect_ratio_range[0] > aspect_ratio_range[1] or aspect_ratio_range[0] <= 0:
            warnings.warn('Skip DetRandomCropAug due to invalid aspect_ratio_range: %s'
                          % (aspect_ratio_range,))
        else:
            self.enabled = True

    def __call__(self, src, label):
        crop = self._random_crop_proposal(label, src.shape[0], src.shape[1])
        if crop:
            x, y, w, h, label = crop
            src = fixed_crop(src, x, y, w, h, None)
        return src, label

    def _calculate_areas(self, label):
        return _areas(label)

    def _intersect(self, label, xmin, ymin, xmax, ymax):
        """The boxes clipped to the region (zeros where they miss it)."""
        left = np.maximum(label[:, 0], xmin)
        right = np.minimum(label[:, 2], xmax)
        top = np.maximum(label[:, 1], ymin)
        bot = np.minimum(label[:, 3], ymax)
        invalid = np.where(np.logical_or(left >= right, top >= bot))[0]
        out = label.copy()
        out[:, 0], out[:, 1], out[:, 2], out[:, 3] = left, top, right, bot
        out[invalid, :] = 0
        return out

    def _check_satisfy_constraints(self, label, xmin, ymin, xmax, ymax, width, height):
        """Whether the pixel region meets ``min_object_covered`` on the objects it
        touches (at least one)."""
        if (xmax - xmin) * (ymax - ymin) < 2:
            return False            # one pixel
        x1, y1 = float(xmin) / width, float(ymin) / height
        x2, y2 = float(xmax) / width, float(ymax) / height
        object_areas = _areas(label[:, 1:])
        valid_objects = np.where(object_areas * width * height > 2)[0]
        if valid_objects.size < 1:
            return False
        intersects = self._intersect(label[valid_objects, 1:], x1, y1, x2, y2)
        coverages = _areas(intersects) / object_areas[valid_objects]
        coverages = coverages[np.where(coverages > 0)[0]]
        return coverages.size > 0 and np.amin(coverages) > self.min_object_covered

    def _update_labels(self, label, crop_box, height, width):
        """The label in the crop's coordinates, without the objects it ejects (None when
        none is left)."""
        xmin, ymin = float(crop_box[0]) / width, float(crop_box[1]) / height
        w, h = float(crop_box[2]) / width, float(crop_box[3]) / height
        out = label.copy()
        out[:, (1, 3)] -= xmin
        out[:, (2, 4)] -= ymin
        out[:, (1, 3)] /= w
        out[:, (2, 4)] /= h
        out[:, 1:5] = np.minimum(1, np.maximum(0, out[:, 1:5]))
        coverage = _areas(out[:, 1:]) * w * h / _areas(label[:, 1:])
        valid = np.logical_and(out[:, 3] > out[:, 1], out[:, 4] > out[:, 2])
        valid = np.where(np.logical_and(valid, coverage > self.min_eject_coverage))[0]
        if valid.size < 1:
            return None
        return out[valid, :]

    def _random_crop_proposal(self, label, height, width):
        """(x, y, w, h, new label) of an accepted crop, or () after ``max_attempts``."""
        if not self.enabled or height <= 0 or width <= 0:
            return ()
        min_area = self.area_range[0] * height * width
        max_area = self.area_range[1] * height * width
        for _ in range(self.max_attempts):
            ratio = random.uniform(*self.aspect_ratio_range)
            if ratio <= 0:
                continue
            h = int(round(sqrt(min_area / ratio)))
            max_h = int(round(sqrt(max_area / ratio)))
            if round(max_h * ratio) > width:
                # the largest max_h with round(max_h * ratio) <= width
                max_h = int((width + 0.4999999) / ratio)
            max_h = min(max_h, height)
            h = min(h, max_h)
            if h < max_h:
                h = random.randint(h, max_h)
            w = int(round(h * ratio))
            # rounding may leave the area just outside the range: one step back in
            area = w * h
            if area < min_area:
                h += 1
                w = int(round(h * ratio))
                area = w * h
            if area > max_area:
                h -= 1
                w = int(round(h * ratio))
                area = w * h
            if not (min_area <= area <= max_area and 0 <= w <= width and 0 <= h <= height):
                continue
            y = random.randint(0, max(0, height - h))
            x = random.randint(0, max(0, width - w))
            if self._check_satisfy_constraints(label, x, y, x + w, y + h, width, height):
                new_label = self._update_labels(label, (x, y, w, h), height, width)
                if new_label is not None:
                    return (x, y, w, h, new_label)
        return ()


class DetRandomPadAug(DetAugmenter):
    """Place the image at a random spot of a larger canvas filled with ``pad_val``: the
    canvas's area is ``area_range`` times the image's (the upper end above 1) and its
    aspect ratio in ``aspect_ratio_range``; the boxes move with the image."""

    def __init__(self, aspect_ratio_range=(0.75, 1.33), area_range=(1.0, 3.0),
                 max_attempts=50, pad_val=(128, 128, 128)):
        if not isinstance(pad_val, (list, tuple)) and \
                not isinstance(pad_val, numbers.Number):
            raise ArgumentTypeError('DetRandomPadAug: pad_val must be a number or one per '
                                    'channel, got %r' % (pad_val,))
        aspect_ratio_range = _pair(aspect_ratio_range, 'aspect_ratio_range',
                                   'DetRandomPadAug')
        area_range = _pair(area_range, 'area_range', 'DetRandomPadAug')
        super(DetRandomPadAug, self).__init__(aspect_ratio_range=aspect_ratio_range,
                                              area_range=area_range, max_attempts=max_attempts,
                                              pad_val=pad_val)
        self.pad_val = pad_val
        self.aspect_ratio_range = aspect_ratio_range
        self.area_range = area_range
        self.max_attempts = max_attempts
        self.enabled = False
        if area_range[1] <= 1.0 or area_range[0] > area_range[1]:
            warnings.warn('Skip DetRandomPadAug due to invalid parameters: %s'
                          % (area_range,))
        elif aspect_ratio_range[0] <= 0 or aspect_ratio_range[0] > aspect_ratio_range[1]:
            warnings.warn('Skip DetRandomPadAug due to invalid aspect_ratio_range: %s'
                          % (aspect_ratio_range,))
        else:
            self.enabled = True

    def __call__(self, src, label):
        height, width, _ = src.shape
        pad = self._random_pad_proposal(label, height, width)
        if pad:
            x, y, w, h, label = pad
            # MXNet passes OpenCV's BORDER_ISOLATED (16), which pads as constant (0)
            fill = dict(values=tuple(self.pad_val)) \
                if isinstance(self.pad_val, (list, tuple)) else dict(value=self.pad_val)
            src = copyMakeBorder(src, y, h - y - height, x, w - x - width, 0, **fill)
        return src, label

    def _update_labels(self, label, pad_box, height, width):
        out = label.copy()
        out[:, (1, 3)] = (out[:, (1, 3)] * width + pad_box[0]) / pad_box[2]
        out[:, (2, 4)] = (out[:, (2, 4)] * height + pad_box[1]) / pad_box[3]
        return out

    def _random_pad_proposal(self, label, height, width):
        """(x, y, w, h, new label) of the canvas, or () after ``max_attempts``."""
        if not self.enabled or height <= 0 or width <= 0:
            return ()
        min_area = self.area_range[0] * height * width
        max_area = self.area_range[1] * height * width
        for _ in range(self.max_attempts):
            ratio = random.uniform(*self.aspect_ratio_range)
            if ratio <= 0:
                continue
            h = int(round(sqrt(min_area / ratio)))
            max_h = int(round(sqrt(max_area / ratio)))
            if round(h * ratio) < width:
                h = int((width + 0.499999) / ratio)
            h = min(max(h, height), max_h)
            if h < max_h:
                h = random.randint(h, max_h)
            w = int(round(h * ratio))
            if (h - height) < 2 or (w - width) < 2:
                continue            # a marginal pad does not help
            y = random.randint(0, max(0, h - height))
            x = random.randint(0, max(0, w - width))
            return (x, y, w, h, self._update_labels(label, (x, y, w, h), height, width))
        return ()


def CreateMultiRandCropAugmenter(min_object_covered=0.1, aspect_ratio_range=(0.75, 1.33),
                                 area_range=(0.05, 1.0), min_eject_coverage=0.3,
                                 max_attempts=50, skip_prob=0):
    """A :class:`DetRandomSelectAug` over several :class:`DetRandomCropAug`: each argument
    is one value for all or a list with one value per crop augmenter (lists of one value
    stretch to the longest).

    >>> aug = CreateMultiRandCropAugmenter(min_object_covered=[0.1, 0.5, 0.9],
    ...                                    area_range=(0.2, 1.0))
    >>> [a.min_object_covered for a in aug.aug_list]
    [0.1, 0.5, 0.9]
    """
    params = [min_object_covered, aspect_ratio_range, area_range, min_eject_coverage,
              max_attempts]
    params = [p if isinstance(p, list) else [p] for p in params]
    num = max(len(p) for p in params)
    for k, p in enumerate(params):
        if len(p) != num:
            if len(p) != 1:
                raise ArgumentError('CreateMultiRandCropAugmenter: every list argument must '
                                    'have one value or %d (the longest), got %r' % (num, p))
            params[k] = p * num
    augs = [DetRandomCropAug(min_object_covered=moc, aspect_ratio_range=arr, area_range=ar,
                             min_eject_coverage=mec, max_attempts=ma)
            for moc, arr, ar, mec, ma in zip(*params)]
    return DetRandomSelectAug(augs, skip_prob=skip_prob)


def _stat(value, default, what):
    if value is True:
        return default
    if value is not None and (not isinstance(value, np.ndarray) or
                              value.shape[0] not in (1, 3)):
        raise ArgumentError('CreateDetAugmenter: %s must be True, None or a NumPy array of '
                            '1 or 3 values, got %r' % (what, value))
    return value


def CreateDetAugmenter(data_shape, resize=0, rand_crop=0, rand_pad=0, rand_gray=0,
                       rand_mirror=False, mean=None, std=None, brightness=0, contrast=0,
                       saturation=0, pca_noise=0, hue=0, inter_method=2, min_object_covered=0.1,
                       aspect_ratio_range=(0.75, 1.33), area_range=(0.05, 3.0),
                       min_eject_coverage=0.3, max_attempts=50, pad_val=(127, 127, 127)):
    """The detection augmenters for ``data_shape`` (C, H, W), in MXNet's order: shorter-edge
    ``resize``; with probability ``rand_crop`` one of the crop augmenters
    (:func:`CreateMultiRandCropAugmenter` with ``min_object_covered``,
    ``aspect_ratio_range``, ``area_range`` (up to 1), ``min_eject_coverage``,
    ``max_attempts``); mirror with probability 0.5 (``rand_mirror``); with probability
    ``rand_pad`` a pad (area up to ``area_range[1]``, filled with ``pad_val``); resize to
    (W, H) ignoring the aspect ratio; cast to float32; colour jitter, hue, PCA noise,
    random gray; normalisation (``mean``/``std``: NumPy arrays, or True for ImageNet's).

    >>> augs = CreateDetAugmenter((3, 300, 300), rand_crop=0.5, rand_pad=0.5,
    ...                           rand_mirror=True, mean=True)
    >>> [type(a).__name__ for a in augs]     # doctest: +NORMALIZE_WHITESPACE
    ['DetRandomSelectAug', 'DetHorizontalFlipAug', 'DetRandomSelectAug', 'DetBorrowAug',
     'DetBorrowAug', 'DetBorrowAug']
    """
    auglist = []
    if resize > 0:
        auglist.append(DetBorrowAug(ResizeAug(resize, inter_method)))
    if rand_crop > 0:
        auglist.append(CreateMultiRandCropAugmenter(min_object_covered, aspect_ratio_range,
                                                    area_range, min_eject_coverage,
                                                    max_attempts, skip_prob=(1 - rand_crop)))
    if rand_mirror > 0:
        auglist.append(DetHorizontalFlipAug(0.5))
    # the pad as late as possible: fewer pixels to crop, mirror and jitter
    if rand_pad > 0:
        pad_aug = DetRandomPadAug(aspect_ratio_range, (1.0, area_range[1]), max_attempts,
                                  pad_val)
        auglist.append(DetRandomSelectAug([pad_aug], 1 - rand_pad))
    auglist.append(DetBorrowAug(ForceResizeAug((data_shape[2], data_shape[1]), inter_method)))
    auglist.append(DetBorrowAug(CastAug()))
    if brightness or contrast or saturation:
        auglist.append(DetBorrowAug(ColorJitterAug(brightness, contrast, saturation)))
    if hue:
        auglist.append(DetBorrowAug(HueJitterAug(hue)))
    if pca_noise > 0:
        auglist.append(DetBorrowAug(LightingAug(pca_noise, _EIGVAL, _EIGVEC)))
    if rand_gray > 0:
        auglist.append(DetBorrowAug(RandomGrayAug(rand_gray)))
    mean = _stat(mean, _MEAN, 'mean')
    std = _stat(std, _STD, 'std')
    if mean is not None or std is not None:
        auglist.append(DetBorrowAug(ColorNormalizeAug(mean, std)))
    return auglist


class ImageDetIter(ImageIter):
    """Batches of images and object-detection labels with MXNet's detection
    augmentations (see the module docstring).

    Parameters
    ----------
    batch_size : int
    data_shape : tuple
        (3, height, width) of the output images.
    path_imgrec, path_imglist, path_root, path_imgidx, imglist, shuffle, part_index,
    num_parts, data_name, last_batch_handle
        As :class:`ImageIter`; a label is ``[header_width, object_width, (extra header...),
        (id, xmin, ymin, xmax, ymax, extra...) x N]``.
    aug_list : list of DetAugmenter, optional
        Default: ``CreateDetAugmenter(data_shape, **kwargs)``.
    label_name : str, default 'label'
    kwargs
        Passed to :func:`CreateDetAugmenter` when ``aug_list`` is None.

    Attributes
    ----------
    label_shape : tuple
        (max objects, object width) over the data: the label of a batch is
        (batch_size,) + label_shape, missing objects -1.
    """

    def __init__(self, batch_size, data_shape,
                 path_imgrec=None, path_imglist=None, path_root=None, path_imgidx=None,
                 shuffle=False, part_index=0, num_parts=1, aug_list=None, imglist=None,
                 data_name='data', label_name='label', last_batch_handle='pad', **kwargs):
        super(ImageDetIter, self).__init__(batch_size=batch_size, data_shape=data_shape,
                                           path_imgrec=path_imgrec, path_imglist=path_imglist,
                                           path_root=path_root, path_imgidx=path_imgidx,
                                           shuffle=shuffle, part_index=part_index,
                                           num_parts=num_parts, aug_list=[], imglist=imglist,
                                           data_name=data_name, label_name=label_name,
                                           last_batch_handle=last_batch_handle)
        self.auglist = CreateDetAugmenter(data_shape, **kwargs) if aug_list is None \
            else aug_list
        # one pass over the labels for the largest object count
        label_shape = self._estimate_label_shape()
        self.provide_label = [(label_name, (self.batch_size,) + label_shape)]
        self.label_shape = label_shape

    def _check_valid_label(self, label):
        """RuntimeError for a label that is not (1+, 5+) or has no valid object."""
        if len(label.shape) != 2 or label.shape[1] < 5:
            raise RuntimeError('Label with shape (1+, 5+) required, %s received.' % (label,))
        valid = np.where(np.logical_and(label[:, 0] >= 0, label[:, 3] > label[:, 1],
                                        label[:, 4] > label[:, 2]))[0]
        if valid.size < 1:
            raise RuntimeError('Invalid label occurs.')

    def _estimate_label_shape(self):
        """(max objects, object width) over every image's parsed label."""
        max_count, width = 0, None
        self.reset()
        try:
            while True:
                label, _ = self.next_sample()
                label = self._parse_label(label)
                max_count = max(max_count, label.shape[0])
                width = label.shape[1]
        except StopIteration:
            pass
        self.reset()
        if width is None:
            raise ArgumentError('ImageDetIter: no image to read (empty list or record file)')
        return (max_count, width)

    def _parse_label(self, label):
        """The (objects, object_width) array of a raw label, empty boxes dropped;
        RuntimeError for a malformed label or one without a valid object."""
        if isinstance(label, nd.NDArray):
            label = label.asnumpy()
        raw = np.asarray(label).ravel()
        if raw.size < 7:
            raise RuntimeError('Label shape is invalid: ' + str(raw.shape))
        header_width, obj_width = int(raw[0]), int(raw[1])
        if obj_width < 1 or (raw.size - header_width) % obj_width != 0:
            raise RuntimeError('Label shape %s inconsistent with annotation width %d.'
                               % (str(raw.shape), obj_width))
        out = np.reshape(raw[header_width:], (-1, obj_width))
        valid = np.where(np.logical_and(out[:, 3] > out[:, 1], out[:, 4] > out[:, 2]))[0]
        if valid.size < 1:
            raise RuntimeError('Encounter sample with no valid label.')
        return out[valid, :]

    def reshape(self, data_shape=None, label_shape=None):
        """Give the batches a new ``data_shape`` (C, H, W) and/or ``label_shape``
        (objects, width) (the object count may only grow)."""
        if data_shape is not None:
            self.check_data_shape(data_shape)
            self.provide_data = [(self.provide_data[0][0], (self.batch_size,) + data_shape)]
            self.data_shape = data_shape
        if label_shape is not None:
            self.check_label_shape(label_shape)
            self.provide_label = [(self.provide_label[0][0],
                                   (self.batch_size,) + label_shape)]
            self.label_shape = label_shape

    def _batchify(self, batch_data, batch_label, start=0):
        """Fill rows ``start``... of the batch, skipping images whose label is invalid
        after augmentation; returns the number of rows filled."""
        i = start
        try:
            while i < self.batch_size:
                label, s = self.next_sample()
                data = self.imdecode(s)
                try:
                    self.check_valid_image([data])
                    label = self._parse_label(label)
                    data, label = self.augmentation_transform(data, label)
                    self._check_valid_label(label)
                except RuntimeError as e:
                    logging.debug('Invalid image, skipping:  %s', str(e))
                    continue
                batch_data[i] = self.postprocess_data(data)
                row = np.full(batch_label.shape[1:], -1, np.float32)
                if label.shape[0] > row.shape[0] or label.shape[1] != row.shape[1]:
                    raise ArgumentError('ImageDetIter: a label of shape %s does not fit '
                                        'label_shape %s' % (label.shape, row.shape))
                row[:label.shape[0]] = label
                batch_label[i] = row
                i += 1
        except StopIteration:
            if not i:
                raise
        return i

    def _new_label(self):
        """A batch's label array, -1 where no object is (``next`` is ImageIter's)."""
        return nd.full(self.provide_label[0][1], -1)

    def augmentation_transform(self, data, label):  # pylint: disable=arguments-differ
        """Apply the detection augmenters to an image and its label."""
        for aug in self.auglist:
            data, label = aug(data, label)
        return data, label

    def check_label_shape(self, label_shape):
        """ValueError unless ``label_shape`` is (objects, width) with no fewer objects
        than now and the same width."""
        if not len(label_shape) == 2:
            raise ValueError('label_shape should have length 2')
        if label_shape[0] < self.label_shape[0]:
            raise ValueError('Attempts to reduce label count from %d to %d, not allowed.'
                             % (self.label_shape[0], label_shape[0]))
        if label_shape[1] != self.provide_label[0][1][2]:
            raise ValueError('label_shape object width inconsistent: %d vs %d.'
                             % (self.provide_label[0][1][2], label_shape[1]))

    def draw_next(self, color=None, thickness=2, mean=None, std=None, clip=True,
                  waitKey=None, window_name='draw_next', id2labels=None):
        """Yield the next images, augmented, as uint8 (H, W, 3) BGR NumPy arrays with the
        boxes drawn (OpenCV needed: without it a warning and nothing); ``mean``/``std``
        (arrays or True) undo the normalisation; ``waitKey`` shows each image in a
        window."""
        try:
            import cv2
        except ImportError as e:
            warnings.warn('Unable to import cv2, skip drawing: %s' % e)
            return
        count = 0
        try:
            while True:
                label, s = self.next_sample()
                data = self.imdecode(s)
                try:
                    self.check_valid_image([data])
                    label = self._parse_label(label)
                except RuntimeError as e:
                    logging.debug('Invalid image, skipping:  %s', str(e))
                    continue
                count += 1
                data, label = self.augmentation_transform(data, label)
                image = data.asnumpy().astype(np.float64)
                std = _STD if std is True else std
                if std is not None:
                    image *= std
                mean = _MEAN if mean is True else mean
                if mean is not None:
                    image += mean
                image = image[:, :, ::-1].copy()        # RGB -> OpenCV's BGR
                if clip:
                    image = np.clip(image, 0, 255)
                if color:
                    color = color[::-1]
                image = image.astype(np.uint8)
                height, width, _ = image.shape
                for obj in label:
                    x1 = int(obj[1] * width)
                    if x1 < 0:
                        continue
                    y1, x2, y2 = int(obj[2] * height), int(obj[3] * width), \
                        int(obj[4] * height)
                    bc = np.random.rand(3) * 255 if not color else color
                    cv2.rectangle(image, (x1, y1), (x2, y2), bc, thickness)
                    if id2labels is not None and int(obj[0]) in id2labels:
                        text = '{:s}'.format(id2labels[int(obj[0])])
                        font = cv2.FONT_HERSHEY_SIMPLEX
                        text_height = cv2.getTextSize(text, font, 0.5, 2)[0][1]
                        cv2.putText(image, text, (x1 + 5, y1 + text_height + 5), font, 0.5,
                                    (255, 255, 255), 2)
                if waitKey is not None:
                    cv2.imshow(window_name, image)
                    cv2.waitKey(waitKey)
                yield image
        except StopIteration:
            if not count:
                return

    def sync_label_shape(self, it, verbose=False):
        """Give this iterator and ``it`` (another ImageDetIter, e.g. the validation one)
        the larger of their object counts; returns ``it``."""
        if not isinstance(it, ImageDetIter):
            raise TypeError('sync_label_shape: synchronize with an ImageDetIter, got %r'
                            % (it,))
        train_label_shape, val_label_shape = self.label_shape, it.label_shape
        if train_label_shape[1] != val_label_shape[1]:
            raise ValueError('sync_label_shape: object width mismatch: %d vs %d'
                             % (train_label_shape[1], val_label_shape[1]))
        max_count = max(train_label_shape[0], val_label_shape[0])
        if max_count > train_label_shape[0]:
            self.reshape(None, (max_count, train_label_shape[1]))
        if max_count > val_label_shape[0]:
            it.reshape(None, (max_count, val_label_shape[1]))
        if verbose and max_count > min(train_label_shape[0], val_label_shape[0]):
            logging.info('Resized label_shape to (%d, %d).', max_count, train_label_shape[1])
        return it
