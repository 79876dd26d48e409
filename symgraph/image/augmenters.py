"""The image augmenters of ``mx.image`` and ``CreateAugmenter``, after MXNet 1.9.1's
``python/mxnet/image/image.py``.

An augmenter is called with one (H, W, C) NDArray and returns the augmented image. The
geometric ones (resize, crops, flip) keep the dtype; ``CastAug`` makes float32, after which
the colour ones (jitters, lighting, gray, normalisation) work, some in place as MXNet's do.
Random draws come from Python's ``random`` (crops, flips, jitters, gray, order) and NumPy's
global generator (``LightingAug``), as in MXNet, so seeding both reproduces MXNet's draws.
``dumps()`` describes an augmenter as JSON: ``[class name in lower case, kwargs]``.

>>> import symgraph as mx
>>> augs = mx.image.CreateAugmenter((3, 4, 4), rand_mirror=True, mean=True)
>>> [type(a).__name__ for a in augs]
['CenterCropAug', 'HorizontalFlipAug', 'CastAug', 'ColorNormalizeAug']
>>> augs[0].dumps()
'["centercropaug", {"size": [4, 4], "interp": 2}]'
>>> img = mx.nd.ones((6, 8, 3), dtype='uint8') * 124
>>> for aug in augs:
...     img = aug(img)
>>> img.shape, [round(float(v), 2) for v in img.asnumpy()[0, 0]]   # (124 - mean)
((4, 4, 3), [0.32, 7.72, 20.47])
"""
import json
import random
import warnings

import numpy as np

from .. import ndarray as nd
from ..base import ArgumentError, ArgumentTypeError
from .functions import (_get_interp_method, center_crop, color_normalize, imresize,
                        random_crop, random_size_crop, resize_short)

__all__ = ['Augmenter', 'SequentialAug', 'RandomOrderAug', 'ResizeAug', 'ForceResizeAug',
           'RandomCropAug', 'RandomSizedCropAug', 'CenterCropAug', 'BrightnessJitterAug',
           'ContrastJitterAug', 'SaturationJitterAug', 'HueJitterAug', 'ColorJitterAug',
           'LightingAug', 'ColorNormalizeAug', 'RandomGrayAug', 'HorizontalFlipAug', 'CastAug',
           'CreateAugmenter']

#: ITU-R 601 luma weights of (R, G, B), as MXNet's contrast and saturation jitters use
_LUMA = [[[0.299, 0.587, 0.114]]]


class Augmenter(object):
    """Image augmenter base class: keeps its constructor's keyword arguments (arrays as
    lists) so that :meth:`dumps` can describe it as JSON."""

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

    def __call__(self, src):
        raise NotImplementedError('%s must override __call__' % type(self).__name__)


class SequentialAug(Augmenter):
    """Apply the augmenters ``ts`` one after the other."""

    def __init__(self, ts):
        super(SequentialAug, self).__init__()
        self.ts = ts

    def dumps(self):
        """``[name, [each augmenter's dumps()]]`` (a list, as MXNet's, not a string)."""
        return [self.__class__.__name__.lower(), [x.dumps() for x in self.ts]]

    def __call__(self, src):
        for aug in self.ts:
            src = aug(src)
        return src


class RandomOrderAug(Augmenter):
    """Apply the augmenters ``ts`` in a random order (``ts`` is shuffled in place, as in
    MXNet)."""

    def __init__(self, ts):
        super(RandomOrderAug, self).__init__()
        self.ts = ts

    def dumps(self):
        """``[name, [each augmenter's dumps()]]``."""
        return [self.__class__.__name__.lower(), [x.dumps() for x in self.ts]]

    def __call__(self, src):
        random.shuffle(self.ts)
        for t in self.ts:
            src = t(src)
        return src


class ResizeAug(Augmenter):
    """Resize the shorter edge to ``size`` (see :func:`resize_short`)."""

    def __init__(self, size, interp=2):
        super(ResizeAug, self).__init__(size=size, interp=interp)
        self.size = size
        self.interp = interp

    def __call__(self, src):
        return resize_short(src, self.size, self.interp)


class ForceResizeAug(Augmenter):
    """Resize to ``size`` (w, h), ignoring the aspect ratio."""

    def __init__(self, size, interp=2):
        super(ForceResizeAug, self).__init__(size=size, interp=interp)
        self.size = size
        self.interp = interp

    def __call__(self, src):
        sizes = (src.shape[0], src.shape[1], self.size[1], self.size[0])
        return imresize(src, *self.size, interp=_get_interp_method(self.interp, sizes))


class RandomCropAug(Augmenter):
    """A random crop of ``size`` (w, h) (see :func:`random_crop`)."""

    def __init__(self, size, interp=2):
        super(RandomCropAug, self).__init__(size=size, interp=interp)
        self.size = size
        self.interp = interp

    def __call__(self, src):
        return random_crop(src, self.size, self.interp)[0]


class RandomSizedCropAug(Augmenter):
    """A crop of random area and aspect ratio resized to ``size`` (w, h) (see
    :func:`random_size_crop`)."""

    def __init__(self, size, area, ratio, interp=2, **kwargs):
        super(RandomSizedCropAug, self).__init__(size=size, area=area, ratio=ratio,
                                                 interp=interp)
        self.size = size
        if 'min_area' in kwargs:
            warnings.warn('`min_area` is deprecated. Please use `area` instead.',
                          DeprecationWarning)
            self.area = kwargs.pop('min_area')
        else:
            self.area = area
        self.ratio = ratio
        self.interp = interp
        if kwargs:
            raise ArgumentTypeError('unexpected keyword arguments for `RandomSizedCropAug`: '
                                    '%s' % sorted(kwargs))

    def __call__(self, src):
        return random_size_crop(src, self.size, self.area, self.ratio, self.interp)[0]


class CenterCropAug(Augmenter):
    """The centred crop of ``size`` (w, h) (see :func:`center_crop`)."""

    def __init__(self, size, interp=2):
        super(CenterCropAug, self).__init__(size=size, interp=interp)
        self.size = size
        self.interp = interp

    def __call__(self, src):
        return center_crop(src, self.size, self.interp)[0]


class BrightnessJitterAug(Augmenter):
    """Multiply by ``1 + U(-brightness, brightness)`` (in place)."""

    def __init__(self, brightness):
        super(BrightnessJitterAug, self).__init__(brightness=brightness)
        self.brightness = brightness

    def __call__(self, src):
        alpha = 1.0 + random.uniform(-self.brightness, self.brightness)
        src *= alpha
        return src


class ContrastJitterAug(Augmenter):
    """Blend with the image's mean luma: ``alpha * src + (1 - alpha) * mean gray`` with
    ``alpha = 1 + U(-contrast, contrast)`` (in place)."""

    def __init__(self, contrast):
        super(ContrastJitterAug, self).__init__(contrast=contrast)
        self.contrast = contrast
        self.coef = nd.array(_LUMA)

    def __call__(self, src):
        alpha = 1.0 + random.uniform(-self.contrast, self.contrast)
        gray = src * self.coef
        # 3 * mean of the weighted channels = the mean luma
        gray = (3.0 * (1.0 - alpha) / gray.size) * nd.sum(gray)
        src *= alpha
        src += gray
        return src


class SaturationJitterAug(Augmenter):
    """Blend each pixel with its luma: ``alpha * src + (1 - alpha) * gray`` with
    ``alpha = 1 + U(-saturation, saturation)`` (in place)."""

    def __init__(self, saturation):
        super(SaturationJitterAug, self).__init__(saturation=saturation)
        self.saturation = saturation
        self.coef = nd.array(_LUMA)

    def __call__(self, src):
        alpha = 1.0 + random.uniform(-self.saturation, self.saturation)
        gray = nd.sum(src * self.coef, axis=2, keepdims=True)
        gray *= (1.0 - alpha)
        src *= alpha
        src += gray
        return src


class HueJitterAug(Augmenter):
    """Rotate the hue by ``U(-hue, hue) * 180`` degrees: a rotation of the I/Q plane of
    YIQ (the linear approximation at https://beesbuzz.biz/code/hsv_color_transforms.php)."""

    def __init__(self, hue):
        super(HueJitterAug, self).__init__(hue=hue)
        self.hue = hue
        self.tyiq = np.array([[0.299, 0.587, 0.114],
                              [0.596, -0.274, -0.321],
                              [0.211, -0.523, 0.311]])
        self.ityiq = np.array([[1.0, 0.956, 0.621],
                               [1.0, -0.272, -0.647],
                               [1.0, -1.107, 1.705]])

    def __call__(self, src):
        alpha = random.uniform(-self.hue, self.hue)
        u, w = np.cos(alpha * np.pi), np.sin(alpha * np.pi)
        bt = np.array([[1.0, 0.0, 0.0],
                       [0.0, u, -w],
                       [0.0, w, u]])
        t = np.dot(np.dot(self.ityiq, bt), self.tyiq).T
        return nd.dot(src, nd.array(t))


class ColorJitterAug(RandomOrderAug):
    """Brightness, contrast and saturation jitters (those > 0) in a random order."""

    def __init__(self, brightness, contrast, saturation):
        ts = []
        if brightness > 0:
            ts.append(BrightnessJitterAug(brightness))
        if contrast > 0:
            ts.append(ContrastJitterAug(contrast))
        if saturation > 0:
            ts.append(SaturationJitterAug(saturation))
        super(ColorJitterAug, self).__init__(ts)


class LightingAug(Augmenter):
    """AlexNet's PCA lighting noise: add ``eigvec @ (alpha * eigval)`` with
    ``alpha ~ N(0, alphastd)`` per channel (NumPy's global generator; in place)."""

    def __init__(self, alphastd, eigval, eigvec):
        super(LightingAug, self).__init__(alphastd=alphastd, eigval=eigval, eigvec=eigvec)
        self.alphastd = alphastd
        self.eigval = eigval
        self.eigvec = eigvec

    def __call__(self, src):
        alpha = np.random.normal(0, self.alphastd, size=(3,))
        rgb = np.dot(self.eigvec * alpha, self.eigval)
        src += nd.array(rgb)
        return src


class ColorNormalizeAug(Augmenter):
    """``(src - mean) / std`` (see :func:`color_normalize`); arrays or lists are taken."""

    def __init__(self, mean, std):
        super(ColorNormalizeAug, self).__init__(mean=mean, std=std)
        self.mean = mean if mean is None or isinstance(mean, nd.NDArray) else nd.array(mean)
        self.std = std if std is None or isinstance(std, nd.NDArray) else nd.array(std)

    def __call__(self, src):
        return color_normalize(src, self.mean, self.std)


class RandomGrayAug(Augmenter):
    """With probability ``p``, replace every channel by the gray value
    ``0.21 R + 0.72 G + 0.07 B`` (the channel count stays)."""

    def __init__(self, p):
        super(RandomGrayAug, self).__init__(p=p)
        self.p = p
        self.mat = nd.array([[0.21, 0.21, 0.21],
                             [0.72, 0.72, 0.72],
                             [0.07, 0.07, 0.07]])

    def __call__(self, src):
        if random.random() < self.p:
            src = nd.dot(src, self.mat)
        return src


class HorizontalFlipAug(Augmenter):
    """With probability ``p``, mirror left-right."""

    def __init__(self, p):
        super(HorizontalFlipAug, self).__init__(p=p)
        self.p = p

    def __call__(self, src):
        if random.random() < self.p:
            src = nd.flip(src, axis=1)
        return src


class CastAug(Augmenter):
    """Cast to ``typ`` (float32 by default)."""

    def __init__(self, typ='float32'):
        super(CastAug, self).__init__(type=typ)
        self.typ = typ

    def __call__(self, src):
        return src.astype(self.typ)


#: ImageNet's RGB PCA (AlexNet's lighting noise), as CreateAugmenter's pca_noise uses it
_EIGVAL = np.array([55.46, 4.794, 1.148])
_EIGVEC = np.array([[-0.5675, 0.7192, 0.4009],
                    [-0.5808, -0.0045, -0.8140],
                    [-0.5836, -0.6948, 0.4203]])


def _check_stat(value, what):
    if not isinstance(value, (np.ndarray, nd.NDArray)) or value.shape[0] not in (1, 3):
        raise ArgumentError('CreateAugmenter: %s must be True, None or an array of 1 or 3 '
                            'values (one per channel), got %r' % (what, value))


def CreateAugmenter(data_shape, resize=0, rand_crop=False, rand_resize=False,
                    rand_mirror=False, mean=None, std=None, brightness=0, contrast=0,
                    saturation=0, hue=0, pca_noise=0, rand_gray=0, inter_method=2):
    """The list of augmenters for ``data_shape`` (C, H, W), in MXNet's order: shorter-edge
    ``resize``, crop to (W, H) (random sized with ``rand_resize``, which needs
    ``rand_crop``; random with ``rand_crop``; else centred), mirror, cast to float32,
    colour jitter, hue, PCA noise, random gray, normalisation (``mean``/``std``: arrays,
    or True for ImageNet's). ``inter_method``: interpolation of every resize (0-4, 9
    auto, 10 random)."""
    auglist = []
    if resize > 0:
        auglist.append(ResizeAug(resize, inter_method))
    crop_size = (data_shape[2], data_shape[1])
    if rand_resize:
        if not rand_crop:
            raise ArgumentError('CreateAugmenter: rand_resize needs rand_crop=True')
        auglist.append(RandomSizedCropAug(crop_size, 0.08, (3.0 / 4.0, 4.0 / 3.0),
                                          inter_method))
    elif rand_crop:
        auglist.append(RandomCropAug(crop_size, inter_method))
    else:
        auglist.append(CenterCropAug(crop_size, inter_method))
    if rand_mirror:
        auglist.append(HorizontalFlipAug(0.5))
    auglist.append(CastAug())
    if brightness or contrast or saturation:
        auglist.append(ColorJitterAug(brightness, contrast, saturation))
    if hue:
        auglist.append(HueJitterAug(hue))
    if pca_noise > 0:
        auglist.append(LightingAug(pca_noise, _EIGVAL, _EIGVEC))
    if rand_gray > 0:
        auglist.append(RandomGrayAug(rand_gray))
    if mean is True:
        mean = nd.array([123.68, 116.28, 103.53])
    elif mean is not None:
        _check_stat(mean, 'mean')
    if std is True:
        std = nd.array([58.395, 57.12, 57.375])
    elif std is not None:
        _check_stat(std, 'std')
    if mean is not None or std is not None:
        auglist.append(ColorNormalizeAug(mean, std))
    return auglist
