"""The image operators behind ``mx.nd.image`` / ``mx.sym.image`` (MXNet's ``_image_*``), as
MXNet 1.9.1's CPU kernels (src/operator/image/).

* ``to_tensor``: (H, W, C) or (N, H, W, C) of any dtype -> float32 (C, H, W) / (N, C, H, W)
  divided by 255. ``normalize``: (C, H, W) or (N, C, H, W) with 1 or 3 channels,
  ``(x - mean[c]) / std[c]`` (mean/std of 1 or C entries), gradient ``dy / std[c]``.
* ``crop(x, y, width, height)`` of (H, W, C) or (N, H, W, C); ``resize(size, keep_ratio,
  interp)`` of the same layouts, ``size`` (width, height) or one int (square, or with
  ``keep_ratio`` the shorter side), OpenCV's nearest (interp 0) and bilinear (interp 1;
  half-pixel centres; uint8 in OpenCV's 11-bit fixed point -- a few values next to the
  border can still differ by 1 from OpenCV's). No gradient for resize (as MXNet).
* The augmenters take one (H, W, C) image with 1 or 3 channels: ``flip_left_right``,
  ``flip_top_bottom`` and their ``random_*`` forms (flip with probability 1/2),
  ``random_brightness`` (``x * a``), ``random_contrast`` (``x * a + (1 - a) * mean gray``),
  ``random_saturation``, ``random_hue`` (through HLS), ``random_color_jitter`` (the four
  in random order, factors ``1 + U(-v, v)``, hue ``U(-v, v)``), ``adjust_lighting`` (AlexNet's
  PCA noise with the given alphas) and ``random_lighting`` (alphas ~ N(0, alpha_std)). Results
  are computed in float and cast back (uint8 clamped to [0, 255], then truncated). Their
  gradient is MXNet's ``_copy``: the head gradient unchanged (not flipped).

Kept from MXNet on purpose: ``random_saturation``'s gray value is the blue channel times
0.114 only (its loop assigns instead of adding); ``to_tensor``'s gradient is the head
gradient laid out in the input's shape (MXNet's ``_copy``). Deliberate differences: an odd
width (height) flipped out of place keeps its middle column (row) -- MXNet leaves it
unwritten; interpolation modes 2-4 (area, cubic, lanczos) are refused.
"""
import numpy as np

from symgraph.opdef import MXNetError, Operator, Param, ShapeError, random_state, register

from ._cv import cv_resize, saturate as _saturate

_GRAY = (np.float32(0.299), np.float32(0.587), np.float32(0.114))
_EIG = np.array([[55.46 * -0.5675, 4.794 * 0.7192, 1.148 * 0.4009],
                 [55.46 * -0.5808, 4.794 * -0.0045, 1.148 * -0.8140],
                 [55.46 * -0.5836, 4.794 * -0.6948, 1.148 * 0.4203]], np.float32)


def _hwc(op, s):
    if s is not None and (len(s) != 3 or s[2] not in (1, 3)):
        raise ShapeError('%s: input image must have shape (height, width, channels) with 1 or '
                         '3 channels, got %s' % (op.name, tuple(s)))


class _Aug(Operator):
    """One (H, W, C) image in, same shape and dtype out; gradient MXNet's ``_copy``."""

    needs_inputs = False
    inplace = ((0, 0),)

    def infer_shape(self, in_shapes):
        _hwc(self, in_shapes[0])
        return [in_shapes[0]], [in_shapes[0]], []

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        return [self.apply(xp, x)]

    def apply(self, xp, x):
        raise NotImplementedError

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        return [out_grads[0] if need[0] else None]


@register
class ToTensor(Operator):
    """(H, W, C) / (N, H, W, C) -> float32 (C, H, W) / (N, C, H, W) divided by 255."""

    name = '_image_to_tensor'
    needs_inputs = False

    def infer_shape(self, in_shapes):
        s = in_shapes[0]
        if s is None:
            return [None], [None], []
        s = tuple(s)
        if len(s) == 3:
            return [s], [(s[2], s[0], s[1])], []
        if len(s) == 4:
            return [s], [(s[0], s[3], s[1], s[2])], []
        raise ShapeError('%s: input image must have shape (height, width, channels), or (N, '
                         'height, width, channels) but got %s' % (self.name, s))

    def infer_type(self, in_types):
        return [in_types[0]], [np.dtype(np.float32)], []

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        y = xp.moveaxis(x.astype(np.float32), -1, -3) / np.float32(255)
        return [xp.ascontiguousarray(y)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        # MXNet: ElemwiseGradUseNone{"_copy"}, the head gradient's memory as the input
        g = out_grads[0]
        if not need[0]:
            return [None]
        shape = g.shape[:-3] + (g.shape[-2], g.shape[-1], g.shape[-3])
        return [xp.ascontiguousarray(g).reshape(shape)]


@register
class Normalize(Operator):
    """``(x - mean[c]) / std[c]`` on (C, H, W) or (N, C, H, W) tensors."""

    name = '_image_normalize'
    mean = Param('floats', (0.0, 0.0, 0.0, 0.0), doc='per-channel means (1 or C values)')
    std = Param('floats', (1.0, 1.0, 1.0, 1.0), doc='per-channel standard deviations')
    needs_inputs = False

    def infer_shape(self, in_shapes):
        s = in_shapes[0]
        if s is None:
            return [None], [None], []
        s = tuple(s)
        if len(s) not in (3, 4) or s[-3] not in (1, 3):
            raise ShapeError('%s: input tensor must have shape (channels, height, width) or '
                             '(N, channels, height, width) with 1 or 3 channels, got %s'
                             % (self.name, s))
        for p in ('mean', 'std'):
            if len(getattr(self, p)) not in (1, s[-3]):
                raise ShapeError('%s: invalid %s for input with shape %s: %s must have '
                                 'either 1 or %d elements, but got %s'
                                 % (self.name, p, s, p, s[-3], getattr(self, p)))
        return [s], [s], []

    def _per_channel(self, xp, values, c):
        v = np.array(values[:1] * c if len(values) == 1 else values[:c], np.float32)
        return xp.asarray(v.reshape(c, 1, 1))

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        c = x.shape[-3]
        f = x if x.dtype == np.float64 else x.astype(np.float32)
        y = (f - self._per_channel(xp, self.mean, c).astype(f.dtype)) / \
            self._per_channel(xp, self.std, c).astype(f.dtype)
        return [_saturate(xp, y, x.dtype) if x.dtype.kind in 'iu' else y.astype(x.dtype)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        g = out_grads[0]
        inv = 1.0 / self._per_channel(xp, self.std, g.shape[-3]).astype(np.float64)
        return [(g * inv).astype(g.dtype) if need[0] else None]


@register
class Crop(Operator):
    """``data[..., y:y + height, x:x + width, :]`` of (H, W, C) / (N, H, W, C) images."""

    name = '_image_crop'
    x = Param(int, doc='left edge')
    y = Param(int, doc='top edge')
    width = Param(int, doc='width of the crop')
    height = Param(int, doc='height of the crop')
    needs_inputs = True

    def infer_shape(self, in_shapes):
        s = in_shapes[0]
        if s is None:
            return [None], [None], []
        s = tuple(s)
        if len(s) not in (3, 4):
            raise ShapeError('%s: input image must have shape (height, width, channels) or '
                             '(N, height, width, channels), got %s' % (self.name, s))
        h, w = s[-3], s[-2]
        if not (0 <= self.x and self.width > 0 and self.x + self.width <= w
                and 0 <= self.y and self.height > 0 and self.y + self.height <= h):
            raise ShapeError('%s: the crop x=%d, y=%d, width=%d, height=%d does not fit an '
                             'image of width %d and height %d'
                             % (self.name, self.x, self.y, self.width, self.height, w, h))
        return [s], [s[:-3] + (self.height, self.width, s[-1])], []

    def _window(self):
        return (Ellipsis, slice(self.y, self.y + self.height), slice(self.x, self.x + self.width),
                slice(None))

    def forward(self, xp, inputs, aux, is_train):
        return [inputs[0][self._window()].copy()]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        if not need[0]:
            return [None]
        g = xp.zeros(inputs[0].shape, out_grads[0].dtype)
        g[self._window()] = out_grads[0]
        return [g]


def _resize_out(op, h, w):
    size = op.size
    if len(size) == 2:
        return size[1], size[0]
    if len(size) != 1:
        raise ShapeError('%s: size must be (width, height) or one int, got %s'
                         % (op.name, size))
    n = size[0]
    if not op.keep_ratio:
        return n, n
    if h < w:
        return n, int(w * n / h)
    return int(h * n / w), n


@register
class Resize(Operator):
    """Resize (H, W, C) / (N, H, W, C) images to ``size`` (OpenCV's interpolation)."""

    name = '_image_resize'
    size = Param('shape', (), doc='(width, height), or one int (see keep_ratio)')
    keep_ratio = Param(bool, False, doc='with one size: resize the shorter side to it')
    interp = Param(int, 1, doc='0 nearest, 1 bilinear (2-4 are not supported here)')
    needs_inputs = False

    def check(self):
        if not self.size or len(self.size) > 2 or min(self.size) <= 0:
            raise MXNetError('%s: size must be (width, height) or one positive int, got %s'
                             % (self.name, self.size))
        if self.interp not in (0, 1):
            raise MXNetError('%s: interp=%d (OpenCV area / cubic / lanczos) is not supported; '
                             'use 0 (nearest) or 1 (bilinear)' % (self.name, self.interp))

    def infer_shape(self, in_shapes):
        s = in_shapes[0]
        if s is None:
            return [None], [None], []
        s = tuple(s)
        if len(s) not in (3, 4):
            raise ShapeError('%s: input image must have shape (height, width, channels) or '
                             '(N, height, width, channels), got %s' % (self.name, s))
        oh, ow = _resize_out(self, s[-3], s[-2])
        return [s], [s[:-3] + (oh, ow, s[-1])], []

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        h, w = x.shape[-3], x.shape[-2]
        oh, ow = _resize_out(self, h, w)
        return [cv_resize(xp, x, oh, ow, self.interp)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        raise MXNetError('%s has no gradient (as in MXNet 1.9.1)' % self.name)


# ---- augmenters ---------------------------------------------------------------------------
def _flip(xp, x, axis):
    return xp.ascontiguousarray(xp.flip(x, axis=axis))


@register
class FlipLeftRight(_Aug):
    """Mirror an (H, W, C) image left-right."""

    name = '_image_flip_left_right'

    def apply(self, xp, x):
        return _flip(xp, x, 1)


@register
class FlipTopBottom(_Aug):
    """Mirror an (H, W, C) image top-bottom."""

    name = '_image_flip_top_bottom'

    def apply(self, xp, x):
        return _flip(xp, x, 0)


@register
class RandomFlipLeftRight(_Aug):
    """Mirror left-right with probability 1/2."""

    name = '_image_random_flip_left_right'

    def apply(self, xp, x):
        keep = random_state(np).random_sample() < 0.5
        return x.copy() if keep else _flip(xp, x, 1)


@register
class RandomFlipTopBottom(_Aug):
    """Mirror top-bottom with probability 1/2."""

    name = '_image_random_flip_top_bottom'

    def apply(self, xp, x):
        keep = random_state(np).random_sample() < 0.5
        return x.copy() if keep else _flip(xp, x, 0)


def _brightness(xp, x, a):
    return _saturate(xp, x.astype(np.float32) * np.float32(a), x.dtype)


def _contrast(xp, x, a):
    f = x.astype(np.float32)
    if x.shape[2] > 1:
        gray = (f[..., 0] * _GRAY[0] + f[..., 1] * _GRAY[1] + f[..., 2] * _GRAY[2]).mean()
    else:
        gray = f.mean()
    beta = (1 - np.float32(a)) * gray.astype(np.float32)    # stays on the device under CuPy
    return _saturate(xp, f * np.float32(a) + beta, x.dtype)


def _saturation(xp, x, a):
    if x.shape[2] == 1:
        return x.copy()
    f = x.astype(np.float32)
    gray = f[..., 2:3] * _GRAY[2] * (1 - np.float32(a))     # MXNet's loop keeps blue only
    return _saturate(xp, gray + f * np.float32(a), x.dtype)


def _rgb_to_hls(xp, r, g, b):
    r, g, b = r / np.float32(255), g / np.float32(255), b / np.float32(255)
    vmax = xp.maximum(xp.maximum(r, g), b)
    vmin = xp.minimum(xp.minimum(r, g), b)
    diff = vmax - vmin
    lum = (vmax + vmin) * np.float32(0.5)
    big = diff > np.finfo(np.float32).eps
    with np.errstate(divide='ignore', invalid='ignore'):
        s = xp.where(lum < 0.5, diff / (vmax + vmin), diff / (np.float32(2) - vmax - vmin))
        d = np.float32(60) / diff
        h = xp.where(vmax == r, (g - b) * d,
                     xp.where(vmax == g, (b - r) * d + np.float32(120),
                              (r - g) * d + np.float32(240)))
    h = xp.where(h < 0, h + np.float32(360), h)
    return xp.where(big, h, 0), lum, xp.where(big, s, 0)


def _hls_to_rgb(xp, h, lum, s):
    p2 = xp.where(lum <= 0.5, lum * (1 + s), lum + s - lum * s)
    p1 = 2 * lum - p2
    h = h / np.float32(60)
    h = xp.mod(h, np.float32(6))
    sector = xp.clip(h.astype(np.int64), 0, 5)
    h = h - sector
    tab = xp.stack([p2, p1, p1 + (p2 - p1) * (1 - h), p1 + (p2 - p1) * h])
    sectors = xp.asarray(np.array([[1, 3, 0], [1, 0, 2], [3, 0, 1], [0, 2, 1], [0, 1, 3],
                                   [2, 1, 0]]))
    pick = sectors[sector]                                      # (..., 3): b, g, r
    b, g, r = (xp.take_along_axis(tab, pick[None, ..., i], 0)[0] for i in range(3))
    grey = s == 0
    r, g, b = (xp.where(grey, lum, v) for v in (r, g, b))
    return r * np.float32(255), g * np.float32(255), b * np.float32(255)


def _hue(xp, x, a):
    if x.shape[2] == 1:
        return x.copy()
    f = x.astype(np.float32)
    h, lum, s = _rgb_to_hls(xp, f[..., 0], f[..., 1], f[..., 2])
    r, g, b = _hls_to_rgb(xp, h + np.float32(a) * np.float32(360), lum, s)
    return _saturate(xp, xp.stack([r, g, b], axis=-1), x.dtype)


def _lighting(xp, x, alpha):
    if x.shape[2] == 1:
        return x.copy()
    pca = (_EIG * np.asarray(alpha, np.float32)[None, :]).sum(axis=1)
    return _saturate(xp, x.astype(np.float32) + xp.asarray(pca), x.dtype)


class _RandomFactor(_Aug):
    min_factor = Param(float, doc='smallest factor')
    max_factor = Param(float, doc='largest factor')

    def check(self):
        if self.min_factor < 0 or self.max_factor < 0:
            raise MXNetError('%s: min_factor and max_factor must be >= 0, got %g, %g'
                             % (self.name, self.min_factor, self.max_factor))

    def apply(self, xp, x):
        a = np.float32(random_state(np).uniform(self.min_factor, self.max_factor))
        return self.adjust(xp, x, a)


@register
class RandomBrightness(_RandomFactor):
    """``x * a``, a ~ U(min_factor, max_factor)."""

    name = '_image_random_brightness'
    adjust = staticmethod(_brightness)


@register
class RandomContrast(_RandomFactor):
    """``x * a + (1 - a) * mean gray``, a ~ U(min_factor, max_factor)."""

    name = '_image_random_contrast'
    adjust = staticmethod(_contrast)


@register
class RandomSaturation(_RandomFactor):
    """Blend with the gray value, a ~ U(min_factor, max_factor)."""

    name = '_image_random_saturation'
    adjust = staticmethod(_saturation)


@register
class RandomHue(_RandomFactor):
    """Rotate the hue by ``a * 360`` degrees, a ~ U(min_factor, max_factor)."""

    name = '_image_random_hue'
    adjust = staticmethod(_hue)


@register
class RandomColorJitter(_Aug):
    """Brightness, contrast, saturation and hue jitter in a random order."""

    name = '_image_random_color_jitter'
    brightness = Param(float, doc='brightness factor 1 + U(-brightness, brightness)')
    contrast = Param(float, doc='contrast factor 1 + U(-contrast, contrast)')
    saturation = Param(float, doc='saturation factor 1 + U(-saturation, saturation)')
    hue = Param(float, doc='hue shift U(-hue, hue) turns')

    def apply(self, xp, x):
        rs = random_state(np)
        y = x
        for k in rs.permutation(4):
            v = (self.brightness, self.contrast, self.saturation, self.hue)[k]
            if v <= 0:
                continue
            a = np.float32(rs.uniform(-v, v))
            fn = (_brightness, _contrast, _saturation, _hue)[k]
            y = fn(xp, y, a if k == 3 else np.float32(1) + a)
        return y.copy() if y is x else y


@register
class AdjustLighting(_Aug):
    """AlexNet-style PCA lighting noise with the given alphas (R, G, B)."""

    name = '_image_adjust_lighting'
    alpha = Param('floats', doc='the three lighting alphas')

    def check(self):
        if len(self.alpha) != 3:
            raise MXNetError('%s: alpha must have 3 values, got %s' % (self.name, self.alpha))

    def apply(self, xp, x):
        return _lighting(xp, x, self.alpha)


@register
class RandomLighting(_Aug):
    """PCA lighting noise with alphas ~ N(0, alpha_std)."""

    name = '_image_random_lighting'
    alpha_std = Param(float, 0.05, doc='standard deviation of the alphas')

    def apply(self, xp, x):
        alpha = random_state(np).normal(0, self.alpha_std, 3).astype(np.float32)
        return _lighting(xp, x, alpha)
