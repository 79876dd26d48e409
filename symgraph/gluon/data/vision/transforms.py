"""Image transforms (MXNet's ``mx.gluon.data.vision.transforms``), after MXNet 1.9.1's
``python/mxnet/gluon/data/vision/transforms.py``: Blocks over the ``mx.nd.image``
operators, applied to one (H, W, C) image or an (N, H, W, C) batch.

>>> import numpy as np, symgraph as mx
>>> from symgraph.gluon.data.vision import transforms
>>> img = mx.nd.array(np.full((4, 6, 3), 255), dtype='uint8')
>>> t = transforms.Compose([transforms.Resize((3, 2)), transforms.ToTensor(),
...                         transforms.Normalize(0.5, 0.5)])
>>> out = t(img)
>>> out.shape, out.dtype.__name__, float(out.asnumpy().max())
((3, 2, 3), 'float32', 1.0)
"""
import random

import numpy as np

from .... import autograd
from .... import image
from .... import ndarray as nd
from ...block import Block, HybridBlock
from ...nn import Sequential, HybridSequential

__all__ = ['Compose', 'Cast', 'ToTensor', 'Normalize', 'Rotate', 'RandomRotation',
           'RandomResizedCrop', 'CropResize',
           'CenterCrop', 'Resize', 'RandomFlipLeftRight', 'RandomFlipTopBottom',
           'RandomBrightness', 'RandomContrast', 'RandomSaturation', 'RandomHue',
           'RandomColorJitter', 'RandomLighting', 'RandomApply']

_NUMBERS = (int, float, np.integer, np.floating)


class Compose(Sequential):
    """Apply the transforms in turn; runs of consecutive HybridBlocks are grouped into one
    hybridized HybridSequential, as MXNet does.

    Parameters
    ----------
    transforms : list of Block
        The transforms.
    """

    def __init__(self, transforms):
        super(Compose, self).__init__()
        hybrid = []
        for t in list(transforms) + [None]:
            if isinstance(t, HybridBlock):
                hybrid.append(t)
                continue
            if len(hybrid) == 1:
                self.add(hybrid[0])
            elif len(hybrid) > 1:
                hblock = HybridSequential()
                for h in hybrid:
                    hblock.add(h)
                hblock.hybridize()
                self.add(hblock)
            hybrid = []
            if t is not None:
                self.add(t)

    def forward(self, x):
        for block in self._children.values():
            fast = _tensor_normalize(block, x)
            x = block(x) if fast is None else fast
        return x


def _channel_values(values, c):
    """Normalize's per-channel float32 values as its operator takes them (one value for
    all channels, or one per channel), shaped (c, 1, 1); None where the operator would
    refuse them (it then reports the error)."""
    values = tuple(values) if isinstance(values, (tuple, list)) else (values,)
    if len(values) not in (1, c):
        return None
    return np.array(values * c if len(values) == 1 else values, np.float32).reshape(c, 1, 1)


def _same_values(old, new):
    """Whether Normalize's mean/std values ``new`` are those cached as ``old`` (numbers and
    tuples compared by value; lists and arrays, which may change in place, never match)."""
    if len(old) != len(new):
        return False
    for a, b in zip(old, new):
        if not isinstance(b, (int, float, tuple)) or type(a) is not type(b) or a != b:
            return False
    return True


def _tensor_normalize(block, x):
    """The common run of :class:`Compose`, ``ToTensor`` then ``Normalize``, computed here in
    NumPy, in place in one new array, for a CPU uint8 image (or batch) outside
    ``autograd.record()`` (a DataLoader worker calls it once per sample: the graph call
    costs more than the arithmetic); the float32 operations are the operators' own, so the
    values are the same bit for bit. None where it does not apply (``block`` is then
    called)."""
    if type(block) is not HybridSequential or block._forward_hooks or \
            block._forward_pre_hooks or not isinstance(x, nd.NDArray):
        return None
    blocks = list(block._children.values())
    if (len(blocks) < 2 or type(blocks[0]) is not ToTensor
            or any(type(b) is not Normalize for b in blocks[1:])
            or any(b._forward_hooks or b._forward_pre_hooks for b in blocks)
            or type(x._data) is not np.ndarray or x._data.dtype != np.uint8
            or x.ndim not in (3, 4) or x.context.device_type != 'cpu'
            or autograd.is_recording()):
        return None
    src = x._data.transpose((2, 0, 1) if x.ndim == 3 else (0, 3, 1, 2))
    c = src.shape[-3]
    if c not in (1, 3):
        return None
    key = [c]
    for b in blocks[1:]:
        key += [b._mean, b._std]
    norms = block.__dict__.get('_symgraph_norms')
    if norms is None or not _same_values(norms[0], key):
        values = []
        for b in blocks[1:]:
            mean, std = _channel_values(b._mean, c), _channel_values(b._std, c)
            if mean is None or std is None:
                return None
            values.append((mean, std))
        block.__dict__['_symgraph_norms'] = norms = (key, values)
    out = np.empty(src.shape, np.float32)
    np.copyto(out, src, casting='unsafe')                   # exact
    np.divide(out, np.float32(255), out=out)                # ToTensor
    for mean, std in norms[1]:                              # Normalize
        np.subtract(out, mean, out=out)
        np.divide(out, std, out=out)
    return nd.NDArray(out, x.context)


class Cast(HybridBlock):
    """Cast the input to ``dtype`` (default ``'float32'``)."""

    def __init__(self, dtype='float32'):
        super(Cast, self).__init__()
        self._dtype = dtype

    def hybrid_forward(self, F, x):
        return F.cast(x, self._dtype)


class ToTensor(HybridBlock):
    """(H, W, C) uint8 in [0, 255] -> (C, H, W) float32 in [0, 1] (batches alike)."""

    def hybrid_forward(self, F, x):
        return F.image.to_tensor(x)


class Normalize(HybridBlock):
    """``(x - mean) / std`` per channel of a (C, H, W) tensor (or a batch of them).

    Parameters
    ----------
    mean : float or tuple of float
        The mean of each channel (one value for all).
    std : float or tuple of float
        The standard deviation of each channel (one value for all).
    """

    def __init__(self, mean=0.0, std=1.0):
        super(Normalize, self).__init__()
        self._mean = mean
        self._std = std

    def hybrid_forward(self, F, x):
        return F.image.normalize(x, self._mean, self._std)


def _imrotate(src, degrees, zoom_in=False, zoom_out=False):
    """MXNet's ``image.imrotate``: rotate float32 (C, H, W) images or (N, C, H, W) batches
    counter-clockwise about their centres (bilinear sampling, zero padding); ``zoom_in``
    scales so that no padding shows, ``zoom_out`` so that the whole image stays in view."""
    if zoom_in and zoom_out:
        raise ValueError('`zoom_in` and `zoom_out` cannot be both True')
    if src.dtype != np.float32:
        raise TypeError('Only `float32` images are supported by this function')
    single = src.ndim == 3
    if single:
        src = src.expand_dims(axis=0)
    elif src.ndim != 4:
        raise ValueError('Only 3D and 4D are supported by this function')
    rad = np.pi * np.broadcast_to(np.asarray(degrees, dtype=np.float64), (src.shape[0],)) / 180
    rad = rad.reshape(-1, 1, 1)
    h, w = src.shape[2], src.shape[3]
    hscale, wscale = (h - 1) / 2., (w - 1) / 2.
    hm = np.arange(h, dtype=np.float64).reshape(h, 1).repeat(w, axis=1)[None] - hscale
    wm = np.arange(w, dtype=np.float64).reshape(1, w).repeat(h, axis=0)[None] - wscale
    # rotate the centred grid, then normalise it (after, so that the aspect ratio holds)
    wrot = (wm * np.cos(rad) - hm * np.sin(rad)) / wscale
    hrot = (wm * np.sin(rad) + hm * np.cos(rad)) / hscale
    scale = 1.
    if zoom_in or zoom_out:
        rho, ang = np.sqrt(h * h + w * w), np.arctan(h / float(w))
        max_x = np.maximum(np.abs(rho * np.cos(ang + np.abs(rad))),
                           np.abs(rho * np.cos(ang - np.abs(rad))))
        max_y = np.maximum(np.abs(rho * np.sin(ang + np.abs(rad))),
                           np.abs(rho * np.sin(ang - np.abs(rad))))
        if zoom_out:
            scale = np.maximum(max_x / w, max_y / h)[:, None]
        else:
            scale = np.minimum(w / max_x, h / max_y)[:, None]
    grid = np.stack([wrot, hrot], axis=1) * scale
    out = nd.BilinearSampler(src, nd.array(grid.astype(np.float32), ctx=src.context))
    return out[0] if single else out


class Rotate(Block):
    """Rotate float32 (C, H, W) images (or (N, C, H, W) batches) by ``rotation_degrees``
    counter-clockwise; see ``zoom_in`` / ``zoom_out`` of MXNet's ``image.imrotate``."""

    def __init__(self, rotation_degrees, zoom_in=False, zoom_out=False):
        super(Rotate, self).__init__()
        self._args = (rotation_degrees, zoom_in, zoom_out)

    def forward(self, x):
        if x.dtype != np.float32:
            raise TypeError('This transformation only supports float32. '
                            'Consider calling it after ToTensor')
        return _imrotate(x, *self._args)


class RandomRotation(Block):
    """Rotate by an angle drawn uniformly from ``angle_limits`` (NumPy's global generator, as
    MXNet), with probability ``rotate_with_proba``."""

    def __init__(self, angle_limits, zoom_in=False, zoom_out=False, rotate_with_proba=1.0):
        super(RandomRotation, self).__init__()
        lower, upper = angle_limits
        if lower >= upper:
            raise ValueError('`angle_limits` must be an ordered tuple')
        if rotate_with_proba < 0 or rotate_with_proba > 1:
            raise ValueError('Probability of rotating the image should be between 0 and 1')
        self._args = (angle_limits, zoom_in, zoom_out)
        self._rotate_with_proba = rotate_with_proba

    def forward(self, x):
        if np.random.random() > self._rotate_with_proba:
            return x
        if x.dtype != np.float32:
            raise TypeError('This transformation only supports float32. '
                            'Consider calling it after ToTensor')
        limits, zoom_in, zoom_out = self._args
        size = None if x.ndim == 3 else x.shape[0]
        return _imrotate(x, np.random.uniform(*limits, size=size), zoom_in, zoom_out)


def _pair(size, what):
    if isinstance(size, _NUMBERS):
        return (int(size), int(size))
    if len(size) != 2:
        raise ValueError('%s is an int or a (width, height) pair, got %r' % (what, size))
    return tuple(int(s) for s in size)


class RandomResizedCrop(Block):
    """Crop a random area fraction (``scale``) of a random aspect ratio (``ratio``) from an
    (H, W, C) image and resize it to ``size``.

    Parameters
    ----------
    size : int or (int, int)
        The output (width, height).
    scale : (float, float)
        The range of the crop's area fraction.
    ratio : (float, float)
        The range of the crop's aspect ratio (width / height), sampled log-uniformly.
    interpolation : int
        0 nearest, 1 bilinear.
    """

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0),
                 interpolation=1):
        super(RandomResizedCrop, self).__init__()
        self._args = (_pair(size, 'size'), scale, ratio, interpolation)

    def forward(self, x):
        return image.random_size_crop(x, *self._args)[0]


class CropResize(HybridBlock):
    """Crop the (x, y, width, height) window and optionally resize it to ``size``."""

    def __init__(self, x, y, width, height, size=None, interpolation=None):
        super(CropResize, self).__init__()
        self._x = x
        self._y = y
        self._width = width
        self._height = height
        self._size = size
        self._interpolation = interpolation

    def hybrid_forward(self, F, x):
        out = F.image.crop(x, self._x, self._y, self._width, self._height)
        if self._size:
            interp = 1 if self._interpolation is None else self._interpolation
            out = F.image.resize(out, self._size, False, interp)
        return out


class CenterCrop(Block):
    """Crop the centre of an (H, W, C) image to ``size`` (width, height); an image smaller
    than that is cropped to the aspect ratio and resized up."""

    def __init__(self, size, interpolation=1):
        super(CenterCrop, self).__init__()
        self._args = (_pair(size, 'size'), interpolation)

    def forward(self, x):
        return image.center_crop(x, *self._args)[0]


class Resize(HybridBlock):
    """Resize to ``size`` (an int: the short side with ``keep_ratio``, else both sides;
    a pair: (width, height))."""

    def __init__(self, size, keep_ratio=False, interpolation=1):
        super(Resize, self).__init__()
        self._keep = keep_ratio
        self._size = size
        self._interpolation = interpolation

    def hybrid_forward(self, F, x):
        return F.image.resize(x, self._size, self._keep, self._interpolation)


class RandomFlipLeftRight(HybridBlock):
    """Flip the image left to right with probability 0.5."""

    def hybrid_forward(self, F, x):
        return F.image.random_flip_left_right(x)


class RandomFlipTopBottom(HybridBlock):
    """Flip the image top to bottom with probability 0.5."""

    def hybrid_forward(self, F, x):
        return F.image.random_flip_top_bottom(x)


class _RandomFactor(HybridBlock):
    """Scale a property by a factor drawn from [max(0, 1 - v), 1 + v]."""
    _op = None

    def __init__(self, value):
        super(_RandomFactor, self).__init__()
        self._args = (max(0, 1 - value), 1 + value)

    def hybrid_forward(self, F, x):
        return getattr(F.image, self._op)(x, *self._args)


class RandomBrightness(_RandomFactor):
    """Scale the brightness by a factor in [max(0, 1 - brightness), 1 + brightness]."""
    _op = 'random_brightness'


class RandomContrast(_RandomFactor):
    """Scale the contrast by a factor in [max(0, 1 - contrast), 1 + contrast]."""
    _op = 'random_contrast'


class RandomSaturation(_RandomFactor):
    """Scale the saturation by a factor in [max(0, 1 - saturation), 1 + saturation]."""
    _op = 'random_saturation'


class RandomHue(_RandomFactor):
    """Shift the hue by a factor in [max(0, 1 - hue), 1 + hue]."""
    _op = 'random_hue'


class RandomColorJitter(HybridBlock):
    """Random brightness, contrast, saturation and hue changes (each 0: unchanged)."""

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0):
        super(RandomColorJitter, self).__init__()
        self._args = (brightness, contrast, saturation, hue)

    def hybrid_forward(self, F, x):
        return F.image.random_color_jitter(x, *self._args)


class RandomLighting(HybridBlock):
    """AlexNet-style PCA lighting noise of standard deviation ``alpha``."""

    def __init__(self, alpha):
        super(RandomLighting, self).__init__()
        self._alpha = alpha

    def hybrid_forward(self, F, x):
        return F.image.random_lighting(x, self._alpha)


class RandomApply(Sequential):
    """Apply ``transforms`` with probability ``p``."""

    def __init__(self, transforms, p=0.5):
        super(RandomApply, self).__init__()
        self.transforms = transforms
        self.p = p

    def forward(self, x):
        if self.p < random.random():
            return x
        return self.transforms(x)
