"""The image functions of ``mx.image``, after MXNet 1.9.1's ``python/mxnet/image/image.py``:
decoding (``imread``, ``imdecode``), resizing and padding (``imresize``, ``resize_short``,
``copyMakeBorder``), crops (``fixed_crop``, ``random_crop``, ``center_crop``,
``random_size_crop``, ``scale_down``), ``color_normalize`` and rotation (``imrotate``,
``random_rotate``).

Images are (H, W, C) NDArrays (``imrotate``: float32 (C, H, W) or (N, C, H, W)). Decoding,
bilinear resizing and padding are the OpenCV operators of ops/image_io.py; nearest, cubic,
area and Lanczos resizing (``interp`` 0, 2, 3, 4: MXNet's default is 2) are OpenCV's
arithmetic in NumPy (``_resize.py``: nearest exact, the others within one grey level of
MXNet's). Random choices use
Python's ``random`` (crops, ``interp=10``) and NumPy's global generator (``random_rotate``),
as MXNet's do, so seeding those reproduces MXNet's draws.

>>> import symgraph as mx
>>> img = mx.image.copyMakeBorder(mx.nd.ones((2, 3, 1), dtype='uint8'), 1, 0, 0, 2, value=7)
>>> img.shape, img.asnumpy()[..., 0].tolist()
((3, 5, 1), [[7, 7, 7, 7, 7], [1, 1, 1, 7, 7], [1, 1, 1, 7, 7]])
>>> mx.image.imresize(img, 10, 6, interp=0).shape
(6, 10, 1)
>>> mx.image.scale_down((640, 480), (720, 120))
(640, 106)
"""
import numbers
import random
import warnings

import numpy as np

from .. import ndarray as nd
from ..base import ArgumentError, ArgumentTypeError, NotSupportedError
from . import _resize

__all__ = ['imread', 'imdecode', 'imresize', 'copyMakeBorder', 'scale_down', 'resize_short',
           'fixed_crop', 'random_crop', 'center_crop', 'color_normalize', 'random_size_crop',
           'imrotate', 'random_rotate']


def imread(filename, *args, **kwargs):
    """Read and decode an image file to a uint8 (H, W, 3) NDArray in RGB (``flag=0``: gray
    (H, W, 1); ``to_rgb=False``: BGR); ``out=`` as MXNet's."""
    return nd._internal._cvimread(filename, *args, **kwargs)


def imdecode(buf, *args, **kwargs):
    """Decode an encoded image (bytes, bytearray, a NumPy array or a uint8 NDArray) as
    :func:`imread` does; a ``str`` is refused, as in MXNet."""
    if not isinstance(buf, nd.NDArray):
        if not isinstance(buf, (bytes, bytearray, np.ndarray)):
            raise ArgumentTypeError('buf must be of type bytes, bytearray or numpy.ndarray, '
                                    'if you would like to input type str, please convert to '
                                    'bytes (got %s)' % type(buf).__name__)
        buf = nd.array(np.frombuffer(buf, dtype=np.uint8), dtype=np.uint8)
    return nd._internal._cvimdecode(buf, *args, **kwargs)


def imresize(src, w, h, *args, **kwargs):
    """Resize an (H, W, C) image to (h, w, C) as OpenCV's ``cv::resize``: ``interp`` 0
    nearest, 1 bilinear (the default), 2 cubic, 3 area, 4 Lanczos; ``out=`` optional."""
    interp = kwargs.get('interp', args[0] if args else 1)
    if interp not in (0, 2, 3, 4):
        return nd._internal._cvimresize(src, w, h, *args, **kwargs)
    if len(args) > 1:
        raise ArgumentTypeError('imresize takes interp and out as keywords after w and h')
    out = kwargs.pop('out', None)
    unknown = set(kwargs) - {'interp'}
    if unknown:
        raise ArgumentTypeError('imresize got unexpected keyword arguments %s'
                                % sorted(unknown))
    if not isinstance(src, nd.NDArray):
        raise ArgumentTypeError('imresize: src must be an NDArray, got %s'
                                % type(src).__name__)
    if src.ndim != 3:
        raise ArgumentError('imresize: src must be one image of shape (height, width, '
                            'channels), got %s' % (src.shape,))
    if int(w) < 1 or int(h) < 1:
        raise ArgumentError('imresize: w and h must be at least 1, got w=%s, h=%s' % (w, h))
    if np.dtype(src.dtype) not in (np.uint8, np.float32, np.float64):
        raise NotSupportedError('imresize: images of type %s are not supported (OpenCV '
                                'types: uint8, float32, float64)' % np.dtype(src.dtype).name)
    res = _resize.resize(src.asnumpy(), int(w), int(h), interp)
    if out is None:
        return nd.array(res, ctx=src.context, dtype=res.dtype)
    out[:] = res
    return out


def copyMakeBorder(src, top, bot, left, right, *args, **kwargs):
    """Pad an (H, W, C) image; ``type`` 0 constant (``value`` / ``values``), 1 replicate,
    2 reflect, 3 wrap, 4 reflect-101 (OpenCV's border types)."""
    return nd._internal._cvcopyMakeBorder(src, top, bot, left, right, *args, **kwargs)


def scale_down(src_size, size):
    """Shrink the crop ``size`` (w, h) to fit ``src_size`` (w, h), keeping its aspect
    ratio; returns ints (truncated, as MXNet's)."""
    w, h = size
    sw, sh = src_size
    if sh < h:
        w, h = float(w * sh) / h, sh
    if sw < w:
        w, h = sw, float(h * sw) / w
    return int(w), int(h)


def _get_interp_method(interp, sizes=()):
    """The OpenCV method 0-4 for ``interp``: 9 picks cubic to enlarge, area to shrink and
    bilinear otherwise (``sizes`` = (old h, old w, new h, new w); cubic without them); 10
    picks one of 0-4 at random (Python's ``random``)."""
    if interp == 9:
        if sizes:
            if len(sizes) != 4:
                raise ArgumentError('sizes must be (old_h, old_w, new_h, new_w), got %r'
                                    % (sizes,))
            oh, ow, nh, nw = sizes
            if nh > oh and nw > ow:
                return 2
            if nh < oh and nw < ow:
                return 3
            return 1
        return 2
    if interp == 10:
        return random.randint(0, 4)
    if interp not in (0, 1, 2, 3, 4):
        raise ArgumentError('Unknown interp method %d' % interp)
    return interp


def resize_short(src, size, interp=2):
    """Resize so that the shorter edge is ``size`` (the longer one scaled, truncated)."""
    h, w, _ = src.shape
    if h > w:
        new_h, new_w = size * h // w, size
    else:
        new_h, new_w = size, size * w // h
    return imresize(src, new_w, new_h, interp=_get_interp_method(interp, (h, w, new_h, new_w)))


def fixed_crop(src, x0, y0, w, h, size=None, interp=2):
    """The (w, h) crop at (x0, y0), resized to ``size`` (w, h) when given and different."""
    out = src[y0:y0 + h, x0:x0 + w]
    if size is not None and (w, h) != tuple(size):
        sizes = (h, w, size[1], size[0])
        out = imresize(out, *size, interp=_get_interp_method(interp, sizes))
    return out


def random_crop(src, size, interp=2):
    """A random crop of ``size`` (w, h), scaled down to fit and then resized up to ``size``
    when the image is smaller; returns (image, (x0, y0, w, h) of the crop)."""
    h, w, _ = src.shape
    new_w, new_h = scale_down((w, h), size)
    x0 = random.randint(0, w - new_w)
    y0 = random.randint(0, h - new_h)
    out = fixed_crop(src, x0, y0, new_w, new_h, size, interp)
    return out, (x0, y0, new_w, new_h)


def center_crop(src, size, interp=2):
    """The centred crop of ``size`` (w, h) (scaled down to fit, then resized up to
    ``size``); returns (image, (x0, y0, w, h) of the crop)."""
    h, w, _ = src.shape
    new_w, new_h = scale_down((w, h), size)
    x0 = int((w - new_w) / 2)
    y0 = int((h - new_h) / 2)
    out = fixed_crop(src, x0, y0, new_w, new_h, size, interp)
    return out, (x0, y0, new_w, new_h)


def color_normalize(src, mean, std=None):
    """``(src - mean) / std`` in place (either may be None); returns ``src``."""
    if mean is not None:
        src -= mean
    if std is not None:
        src /= std
    return src


def random_size_crop(src, size, area, ratio, interp=2, **kwargs):
    """A crop of random area (``area``: min fraction, or (min, max)) and aspect ratio
    (``ratio`` (min, max), drawn log-uniformly), resized to ``size`` (w, h); after 10
    draws that do not fit, the centre crop. Returns (image, (x0, y0, w, h))."""
    h, w, _ = src.shape
    src_area = h * w
    if 'min_area' in kwargs:
        warnings.warn('`min_area` is deprecated. Please use `area` instead.',
                      DeprecationWarning)
        area = kwargs.pop('min_area')
    if kwargs:
        raise ArgumentTypeError('unexpected keyword arguments for `random_size_crop`: %s'
                                % sorted(kwargs))
    if isinstance(area, numbers.Number):
        area = (area, 1.0)
    for _ in range(10):
        target_area = random.uniform(area[0], area[1]) * src_area
        log_ratio = (np.log(ratio[0]), np.log(ratio[1]))
        new_ratio = np.exp(random.uniform(*log_ratio))
        new_w = int(round(np.sqrt(target_area * new_ratio)))
        new_h = int(round(np.sqrt(target_area / new_ratio)))
        if new_w <= w and new_h <= h:
            x0 = random.randint(0, w - new_w)
            y0 = random.randint(0, h - new_h)
            out = fixed_crop(src, x0, y0, new_w, new_h, size, interp)
            return out, (x0, y0, new_w, new_h)
    return center_crop(src, size, interp)


def _zoom_scale(h, w, rad, zoom_out):
    """The per-image grid scale of ``imrotate``'s zoom: (N, 1, 1, 1)."""
    rho = nd.sqrt(h * h + w * w)
    ang = nd.arctan(h / w)
    x1 = nd.abs(rho * nd.cos(ang + nd.abs(rad)))
    y1 = nd.abs(rho * nd.sin(ang + nd.abs(rad)))
    x2 = nd.abs(rho * nd.cos(ang - nd.abs(rad)))
    y2 = nd.abs(rho * nd.sin(ang - nd.abs(rad)))
    max_x, max_y = nd.maximum(x1, x2), nd.maximum(y1, y2)
    if zoom_out:
        scale = nd.maximum(max_x / w, max_y / h)
    else:
        scale = nd.minimum(w / max_x, h / max_y)
    return scale.expand_dims(axis=3)


def imrotate(src, rotation_degrees, zoom_in=False, zoom_out=False):
    """Rotate a float32 (C, H, W) image by ``rotation_degrees`` (a number), or a float32
    (N, C, H, W) batch by a number or an (N,) NDArray of degrees, counter-clockwise about
    the centre with bilinear sampling (zeros outside). ``zoom_in`` scales so that no
    padding shows, ``zoom_out`` so that the whole image stays inside (not both)."""
    if zoom_in and zoom_out:
        raise ValueError('`zoom_in` and `zoom_out` cannot be both True')
    if np.dtype(src.dtype) != np.float32:
        raise TypeError('Only `float32` images are supported by this function (got %s)'
                        % np.dtype(src.dtype).name)
    expanded = False
    if src.ndim == 3:
        expanded = True
        src = src.expand_dims(axis=0)
        if not isinstance(rotation_degrees, numbers.Number):
            raise TypeError('When a single image is passed the rotation angle is required '
                            'to be a scalar (got %s).' % type(rotation_degrees).__name__)
    elif src.ndim != 4:
        raise ValueError('Only 3D and 4D are supported by this function (got %dD)' % src.ndim)
    if isinstance(rotation_degrees, numbers.Number):
        rotation_degrees = nd.array([rotation_degrees] * len(src), ctx=src.context)
    if len(src) != len(rotation_degrees):
        raise ValueError('The number of images must be equal to the number of rotation '
                         'angles (%d images, %d angles)' % (len(src), len(rotation_degrees)))
    rad = rotation_degrees.as_in_context(src.context) * (np.pi / 180)
    rad = rad.expand_dims(axis=1).expand_dims(axis=2)               # (N, 1, 1)
    _, _, h, w = src.shape
    # a grid centred on the image, rotated, then normalised to [-1, 1] (after the rotation,
    # so that the aspect ratio holds)
    hscale, wscale = float(h - 1) / 2, float(w - 1) / 2
    hm = (nd.repeat(nd.arange(h, ctx=src.context).astype('float32').reshape(h, 1), w, axis=1)
          - hscale).expand_dims(axis=0)
    wm = (nd.repeat(nd.arange(w, ctx=src.context).astype('float32').reshape(1, w), h, axis=0)
          - wscale).expand_dims(axis=0)
    cos, sin = nd.cos(rad), nd.sin(rad)
    w_rot = (wm * cos - hm * sin) / wscale
    h_rot = (wm * sin + hm * cos) / hscale
    grid = nd.concat(w_rot.expand_dims(axis=1), h_rot.expand_dims(axis=1), dim=1)
    if zoom_in or zoom_out:
        hh, ww = nd.array([h], ctx=src.context), nd.array([w], ctx=src.context)
        grid = grid * _zoom_scale(hh, ww, rad, zoom_out)
    rot = nd.BilinearSampler(src, grid)
    return rot[0] if expanded else rot


def random_rotate(src, angle_limits, zoom_in=False, zoom_out=False):
    """:func:`imrotate` by angles drawn uniformly from ``angle_limits`` (low, high) degrees
    with NumPy's global generator (one per image of a batch)."""
    if src.ndim == 3:
        degrees = np.random.uniform(*angle_limits)
    else:
        degrees = nd.array(np.random.uniform(*angle_limits, size=src.shape[0]))
    return imrotate(src, degrees, zoom_in=zoom_in, zoom_out=zoom_out)
