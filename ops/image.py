"""The image operators behind ``mx.nd.image`` / ``mx.sym.image`` (MXNet's ``_image_*``), as
MXNet 1.9.1's CPU kernels (src/operator/image/).

* ``to_tensor``: (H, W, C) or (N, H, W, C) of any dtype -> float32 (C, H, W) / (N, C, H, W)
  divided by 255. ``normalize``: (C, H, W) or (N, C, H, W) with 1 or 3 channels,
  ``(x - mean[c]) / std[c]`` (mean/std of 1 or C entries).
* ``crop(x, y, width, height)`` of (H, W, C) or (N, H, W, C); ``resize(size, keep_ratio,
  interp)`` of the same layouts, ``size`` (width, height) or one int (square, or with
  ``keep_ratio`` the shorter side), OpenCV's nearest (interp 0), bilinear (interp 1;
  half-pixel centres; uint8 in OpenCV's 11-bit fixed point -- a few values next to the
  border can still differ by 1 from OpenCV's), cubic (2), area (3) and Lanczos (4) as
  ``_cv_resize.py`` (the kernels of ``_cvimresize``).
* The augmenters take one (H, W, C) image with 1 or 3 channels: ``flip_left_right``,
  ``flip_top_bottom`` and their ``random_*`` forms (flip with probability 1/2),
  ``random_brightness`` (``x * a``), ``random_contrast`` (``x * a + (1 - a) * mean gray``),
  ``random_saturation``, ``random_hue`` (through HLS), ``random_color_jitter`` (the four
  in random order, factors ``1 + U(-v, v)``, hue ``U(-v, v)``), ``adjust_lighting`` (AlexNet's
  PCA noise with the given alphas) and ``random_lighting`` (alphas ~ N(0, alpha_std)). Results
  are computed in float32 (float64 for float64 images) and cast back (uint8 clamped to
  [0, 255], then truncated).

Gradients are the derivatives (MXNet 1.9.1 registers ``_copy`` for every augmenter,
``to_tensor`` and ``resize``: the head gradient unchanged, neither flipped, transposed nor
scaled; resize's fails unless the size is unchanged): flips and crop move the head gradient back, ``to_tensor`` transposes it and
divides by 255, ``normalize`` divides by std, ``resize`` is the adjoint of its interpolation,
the colour augmenters differentiate their formulas (hue through the HLS round trip,
piecewise linear in the pixel) and lighting adds a constant (gradient the head). The random
augmenters differentiate with the values their forward drew, kept in a hidden output
``draws`` (the flip decision, the factor; color_jitter's order and four factors). Integer
images are not differentiable: where the operator scales or rounds the values their
gradient is 0; flips and crop, which only move pixels, move the head gradient back.

Kept from MXNet on purpose: ``random_saturation``'s gray value is the blue channel times
0.114 only (its loop assigns instead of adding). Deliberate differences: an odd width
(height) flipped out of place keeps its middle column (row) -- MXNet leaves it unwritten;
color_jitter with every factor 0 returns the image (MXNet never writes its output);
float64 images are computed in float64 (MXNet rounds through float32).
"""
import numpy as np

from symgraph.opdef import MXNetError, Operator, Param, ShapeError, random_state, register

from ._cv import cv_resize, cv_resize_adjoint, saturate as _saturate

_GRAY = (np.float32(0.299), np.float32(0.587), np.float32(0.114))
_EIG = np.array([[55.46 * -0.5675, 4.794 * 0.7192, 1.148 * 0.4009],
                 [55.46 * -0.5808, 4.794 * -0.0045, 1.148 * -0.8140],
                 [55.46 * -0.5836, 4.794 * -0.6948, 1.148 * 0.4203]], np.float32)


def _ct(dtype):
    """The dtype the arithmetic runs in: float64 for float64 images, else float32 (MXNet's)."""
    return np.dtype(np.float64) if dtype == np.float64 else np.dtype(np.float32)


def _is_int(dtype):
    return np.dtype(dtype).kind in 'biu'


def _host(a):
    return np.asarray(a.get() if hasattr(a, 'get') else a)


def _hwc(op, s):
    if s is not None and (len(s) != 3 or s[2] not in (1, 3)):
        raise ShapeError('%s: input image must have shape (height, width, channels) with 1 or '
                         '3 channels, got %s' % (op.name, tuple(s)))


class _Aug(Operator):
    """One (H, W, C) image in, same shape and dtype out.

    A random augmenter draws ``n_draws`` values per call (``draw``) and keeps them in the
    hidden float32 output ``draws``, from which backward differentiates; ``grad`` is the
    derivative for float images, ``moves_pixels`` says the gradient of an integer image is
    the head moved back (flips) rather than 0.
    """

    needs_inputs = False
    inplace = ((0, 0),)
    n_draws = 0
    moves_pixels = False

    def list_outputs(self):
        return ['output', 'draws'] if self.n_draws else ['output']

    def num_visible_outputs(self):
        return 1

    def infer_shape(self, in_shapes):
        _hwc(self, in_shapes[0])
        extra = [(self.n_draws,)] if self.n_draws else []
        return [in_shapes[0]], [in_shapes[0]] + extra, []

    def infer_type(self, in_types):
        extra = [np.dtype(np.float32)] if self.n_draws else []
        return [in_types[0]], [in_types[0]] + extra, []

    def draw(self):
        return None

    def forward(self, xp, inputs, aux, is_train):
        d = self.draw()
        y = self.apply(xp, inputs[0], d)
        return [y] if d is None else [y, xp.asarray(d)]

    def apply(self, xp, x, d):
        raise NotImplementedError

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        if not need[0]:
            return [None]
        g = out_grads[0]
        d = _host(outputs[1]) if self.n_draws else None
        if _is_int(g.dtype) and not self.moves_pixels:
            return [xp.zeros(g.shape, g.dtype)]     # rounded values: no derivative
        x = inputs[0] if self.needs_inputs else None
        if _is_int(g.dtype):
            return [self.grad(xp, x, g, d)]
        ct = _ct(g.dtype)
        return [self.grad(xp, x if x is None else x.astype(ct), g.astype(ct), d)
                .astype(g.dtype, copy=False)]

    def grad(self, xp, x, g, d):
        """The input gradient from the head ``g`` (computing dtype), the input ``x`` (where
        ``needs_inputs``) and the draws ``d``."""
        raise NotImplementedError


@register
class ToTensor(Operator):
    """(H, W, C) / (N, H, W, C) -> float32 (C, H, W) / (N, C, H, W) divided by 255."""

    name = '_image_to_tensor'
    needs_inputs = True        # its dtype: the gradient's

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
        # the derivative: the head transposed back and divided by 255 (MXNet 1.9.1: _copy);
        # the gradient takes the input's dtype, 0 for an integer image (not differentiable)
        if not need[0]:
            return [None]
        g = out_grads[0]
        shape = g.shape[:-3] + (g.shape[-2], g.shape[-1], g.shape[-3])
        dtype = inputs[0].dtype
        if _is_int(dtype):
            return [xp.zeros(shape, dtype)]
        ct = _ct(dtype)
        back = xp.moveaxis(g.astype(ct), -3, -1) / ct.type(255)
        return [xp.ascontiguousarray(back).astype(dtype, copy=False)]
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
        # dy / std[c] (the output has the input's dtype: 0 for an integer image, whose
        # values are rounded)
        g = out_grads[0]
        if not need[0]:
            return [None]
        if _is_int(g.dtype):
            return [xp.zeros(g.shape, g.dtype)]
        std = self._per_channel(xp, self.std, g.shape[-3]).astype(_ct(g.dtype))
        return [(g.astype(std.dtype) / std).astype(g.dtype, copy=False)]


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
    interp = Param(int, 1, doc='0 nearest, 1 bilinear, 2 cubic, 3 area, 4 Lanczos')
    needs_inputs = True         # its shape: the gradient's

    def check(self):
        if not self.size or len(self.size) > 2 or min(self.size) <= 0:
            raise MXNetError('%s: size must be (width, height) or one positive int, got %s'
                             % (self.name, self.size))
        if self.interp not in (0, 1, 2, 3, 4):
            raise MXNetError('%s: unknown interpolation method interp=%d (OpenCV: 0 nearest, '
                             '1 bilinear, 2 cubic, 3 area, 4 Lanczos)'
                             % (self.name, self.interp))

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
        # the adjoint of the interpolation (resize is linear in the image; MXNet 1.9.1's
        # _copy fails on the other size); 0 for an integer image (rounded values)
        if not need[0]:
            return [None]
        g = out_grads[0]
        h, w = inputs[0].shape[-3], inputs[0].shape[-2]
        if _is_int(g.dtype):
            return [xp.zeros(g.shape[:-3] + (h, w, g.shape[-1]), g.dtype)]
        back = cv_resize_adjoint(xp, g.astype(_ct(g.dtype)), h, w, self.interp)
        return [back.astype(g.dtype, copy=False)]


# ---- augmenters ---------------------------------------------------------------------------
def _flip(xp, x, axis):
    return xp.ascontiguousarray(xp.flip(x, axis=axis))


class _Flip(_Aug):
    axis = 1
    moves_pixels = True

    def apply(self, xp, x, d):
        return _flip(xp, x, self.axis)

    def grad(self, xp, x, g, d):
        return _flip(xp, g, self.axis)


@register
class FlipLeftRight(_Flip):
    """Mirror an (H, W, C) image left-right."""

    name = '_image_flip_left_right'
    axis = 1


@register
class FlipTopBottom(_Flip):
    """Mirror an (H, W, C) image top-bottom."""

    name = '_image_flip_top_bottom'
    axis = 0


class _RandomFlip(_Flip):
    n_draws = 1
    needs_outputs = (1,)

    def draw(self):
        # draws[0]: 1 where the image is flipped
        return np.array([random_state(np).random_sample() >= 0.5], np.float32)

    def apply(self, xp, x, d):
        return _flip(xp, x, self.axis) if d[0] else x.copy()

    def grad(self, xp, x, g, d):
        return _flip(xp, g, self.axis) if d[0] else g


@register
class RandomFlipLeftRight(_RandomFlip):
    """Mirror left-right with probability 1/2."""

    name = '_image_random_flip_left_right'
    axis = 1


@register
class RandomFlipTopBottom(_RandomFlip):
    """Mirror top-bottom with probability 1/2."""

    name = '_image_random_flip_top_bottom'
    axis = 0


# The colour adjustments of MXNet's kernels: ``fn(xp, x, a)`` the image, ``fn_grad(xp, x, g,
# a)`` its input gradient for a float image (x and g in the computing dtype).
def _brightness(xp, x, a):
    return _saturate(xp, x.astype(_ct(x.dtype)) * np.float32(a), x.dtype)


def _brightness_grad(xp, x, g, a):
    return g * np.float32(a)


def _gray_weights(c):
    return _GRAY if c > 1 else (np.float32(1),)


def _contrast(xp, x, a):
    f = x.astype(_ct(x.dtype))
    if x.shape[2] > 1:
        gray = (f[..., 0] * _GRAY[0] + f[..., 1] * _GRAY[1] + f[..., 2] * _GRAY[2]).mean()
    else:
        gray = f.mean()
    beta = (1 - np.float32(a)) * gray.astype(f.dtype)       # stays on the device under CuPy
    return _saturate(xp, f * np.float32(a) + beta, x.dtype)


def _contrast_grad(xp, x, g, a):
    # y = a x + (1 - a) mean_pixels(sum_c w_c x_c): every pixel's gray shares the sum
    c = g.shape[2]
    w = xp.asarray(np.array(_gray_weights(c), g.dtype))
    total = g.sum() * ((1 - np.float32(a)) / np.float32(g.shape[0] * g.shape[1]))
    return g * np.float32(a) + total * w


def _saturation(xp, x, a):
    if x.shape[2] == 1:
        return x.copy()
    f = x.astype(_ct(x.dtype))
    gray = f[..., 2:3] * _GRAY[2] * (1 - np.float32(a))     # MXNet's loop keeps blue only
    return _saturate(xp, gray + f * np.float32(a), x.dtype)


def _saturation_grad(xp, x, g, a):
    if g.shape[2] == 1:
        return g
    # y_c = a x_c + (1 - a) 0.114 x_blue
    blue = g.sum(axis=2) * (_GRAY[2] * (1 - np.float32(a)))
    return g * np.float32(a) + xp.stack([xp.zeros_like(blue), xp.zeros_like(blue), blue],
                                        axis=-1)


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


_SECTORS = np.array([[1, 3, 0], [1, 0, 2], [3, 0, 1], [0, 2, 1], [0, 1, 3], [2, 1, 0]])


def _hue_sector(xp, h):
    """OpenCV's sector (0-5) of a hue in degrees and the fraction into it."""
    h = xp.mod(h / np.float32(60), np.float32(6))
    sector = xp.clip(h.astype(np.int64), 0, 5)
    return sector, h - sector


def _hls_to_rgb(xp, h, lum, s):
    p2 = xp.where(lum <= 0.5, lum * (1 + s), lum + s - lum * s)
    p1 = 2 * lum - p2
    sector, h = _hue_sector(xp, h)
    tab = xp.stack([p2, p1, p1 + (p2 - p1) * (1 - h), p1 + (p2 - p1) * h])
    pick = xp.asarray(_SECTORS)[sector]                         # (..., 3): b, g, r
    b, g, r = (xp.take_along_axis(tab, pick[None, ..., i], 0)[0] for i in range(3))
    grey = s == 0
    r, g, b = (xp.where(grey, lum, v) for v in (r, g, b))
    return r * np.float32(255), g * np.float32(255), b * np.float32(255)


def _hue(xp, x, a):
    if x.shape[2] == 1:
        return x.copy()
    f = x.astype(_ct(x.dtype))
    h, lum, s = _rgb_to_hls(xp, f[..., 0], f[..., 1], f[..., 2])
    r, g, b = _hls_to_rgb(xp, h + np.float32(a) * np.float32(360), lum, s)
    return _saturate(xp, xp.stack([r, g, b], axis=-1), x.dtype)


def _hue_grad(xp, x, g, a):
    """The hue rotation's input gradient. Through the HLS round trip (same lightness and
    saturation) every output channel is one of vmax, vmin, vmin + diff (1 - f),
    vmin + diff f of the pixel (u = x / 255, diff = vmax - vmin), f the fraction of the
    rotated hue into its sector, and f moves with num / diff (num = g - b, b - r or r - g
    as vmax is r, g or b): piecewise linear in the pixel; grey pixels (diff <= float32's
    eps) give their lightness (vmax + vmin) / 2 to all three channels."""
    if x.shape[2] == 1:
        return g
    u = x / np.float32(255)
    r, gr, b = u[..., 0], u[..., 1], u[..., 2]
    vmax = xp.maximum(xp.maximum(r, gr), b)
    vmin = xp.minimum(xp.minimum(r, gr), b)
    diff = vmax - vmin
    grey = ~(diff > np.finfo(np.float32).eps)
    imax = xp.where(vmax == r, 0, xp.where(vmax == gr, 1, 2))   # the forward's priority
    imin = xp.where(vmin == r, 0, xp.where(vmin == gr, 1, 2))
    num = xp.where(imax == 0, gr - b, xp.where(imax == 1, b - r, r - gr))
    h, _, _ = _rgb_to_hls(xp, x[..., 0], x[..., 1], x[..., 2])
    sector, f = _hue_sector(xp, h + np.float32(a) * np.float32(360))
    pick = xp.asarray(_SECTORS)[sector]                          # (..., 3): b, g, r
    head = (g[..., 2], g[..., 1], g[..., 0])                     # in pick's order
    gt = [sum((pick[..., i] == k) * head[i] for i in range(3)) for k in range(4)]
    safe = xp.where(grey, 1, diff)
    gnum = gt[3] - gt[2]
    gdiff = gt[2] * (1 - f) + gt[3] * f - gnum * num / safe
    gmax = gt[0] + gdiff
    gmin = gt[1] + gt[2] + gt[3] - gdiff
    lum = (g[..., 0] + g[..., 1] + g[..., 2]) * np.float32(0.5)
    gmax, gmin = xp.where(grey, lum, gmax), xp.where(grey, lum, gmin)
    gnum = xp.where(grey, 0, gnum)
    # num's partials: imax 0: g - b, 1: b - r, 2: r - g
    plus, minus = (1, 2, 0), (2, 0, 1)
    out = []
    for c in range(3):
        v = (imax == c) * gmax + (imin == c) * gmin
        v = v + sum((imax == m) * gnum for m in range(3) if plus[m] == c)
        v = v - sum((imax == m) * gnum for m in range(3) if minus[m] == c)
        out.append(v)
    return xp.stack(out, axis=-1).astype(g.dtype, copy=False)


def _lighting(xp, x, alpha):
    if x.shape[2] == 1:
        return x.copy()
    pca = (_EIG * np.asarray(alpha, np.float32)[None, :]).sum(axis=1)
    return _saturate(xp, x.astype(_ct(x.dtype)) + xp.asarray(pca), x.dtype)


class _RandomFactor(_Aug):
    min_factor = Param(float, doc='smallest factor')
    max_factor = Param(float, doc='largest factor')
    n_draws = 1
    needs_outputs = (1,)

    def check(self):
        if self.min_factor < 0 or self.max_factor < 0:
            raise MXNetError('%s: min_factor and max_factor must be >= 0, got %g, %g'
                             % (self.name, self.min_factor, self.max_factor))

    def draw(self):
        return np.array([random_state(np).uniform(self.min_factor, self.max_factor)],
                        np.float32)

    def apply(self, xp, x, d):
        return self.adjust(xp, x, d[0])

    def grad(self, xp, x, g, d):
        return self.adjust_grad(xp, x, g, d[0])


@register
class RandomBrightness(_RandomFactor):
    """``x * a``, a ~ U(min_factor, max_factor)."""

    name = '_image_random_brightness'
    adjust = staticmethod(_brightness)
    adjust_grad = staticmethod(_brightness_grad)


@register
class RandomContrast(_RandomFactor):
    """``x * a + (1 - a) * mean gray``, a ~ U(min_factor, max_factor)."""

    name = '_image_random_contrast'
    adjust = staticmethod(_contrast)
    adjust_grad = staticmethod(_contrast_grad)


@register
class RandomSaturation(_RandomFactor):
    """Blend with the gray value, a ~ U(min_factor, max_factor)."""

    name = '_image_random_saturation'
    adjust = staticmethod(_saturation)
    adjust_grad = staticmethod(_saturation_grad)


@register
class RandomHue(_RandomFactor):
    """Rotate the hue by ``a * 360`` degrees, a ~ U(min_factor, max_factor)."""

    name = '_image_random_hue'
    needs_inputs = True
    adjust = staticmethod(_hue)
    adjust_grad = staticmethod(_hue_grad)


_JITTER = ((_brightness, _brightness_grad), (_contrast, _contrast_grad),
           (_saturation, _saturation_grad), (_hue, _hue_grad))


@register
class RandomColorJitter(_Aug):
    """Brightness, contrast, saturation and hue jitter in a random order."""

    name = '_image_random_color_jitter'
    brightness = Param(float, doc='brightness factor 1 + U(-brightness, brightness)')
    contrast = Param(float, doc='contrast factor 1 + U(-contrast, contrast)')
    saturation = Param(float, doc='saturation factor 1 + U(-saturation, saturation)')
    hue = Param(float, doc='hue shift U(-hue, hue) turns')
    n_draws = 8
    needs_inputs = True
    needs_outputs = (1,)

    def _steps(self, d):
        """[(adjustment index, factor)] in the order applied."""
        limits = (self.brightness, self.contrast, self.saturation, self.hue)
        return [(int(k), d[4 + int(k)]) for k in d[:4] if limits[int(k)] > 0]

    def draw(self):
        # draws: the order (4), then the factor of each adjustment (brightness, contrast,
        # saturation, hue; 0 where its limit is <= 0 and it is skipped)
        rs = random_state(np)
        d = np.zeros(8, np.float32)
        d[:4] = rs.permutation(4)
        for k in d[:4].astype(int):
            v = (self.brightness, self.contrast, self.saturation, self.hue)[k]
            if v > 0:
                a = np.float32(rs.uniform(-v, v))
                d[4 + k] = a if k == 3 else np.float32(1) + a
        return d

    def apply(self, xp, x, d):
        y = x
        for k, a in self._steps(d):
            y = _JITTER[k][0](xp, y, a)
        return y.copy() if y is x else y

    def grad(self, xp, x, g, d):
        steps = self._steps(d)
        images = [x]
        for k, a in steps[:-1]:
            images.append(_JITTER[k][0](xp, images[-1], a))
        for (k, a), y in reversed(list(zip(steps, images))):
            g = _JITTER[k][1](xp, y, g, a)
        return g


class _Lighting(_Aug):
    def grad(self, xp, x, g, d):
        return g            # a constant per channel is added


@register
class AdjustLighting(_Lighting):
    """AlexNet-style PCA lighting noise with the given alphas (R, G, B)."""

    name = '_image_adjust_lighting'
    alpha = Param('floats', doc='the three lighting alphas')

    def check(self):
        if len(self.alpha) != 3:
            raise MXNetError('%s: alpha must have 3 values, got %s' % (self.name, self.alpha))

    def apply(self, xp, x, d):
        return _lighting(xp, x, self.alpha)


@register
class RandomLighting(_Lighting):
    """PCA lighting noise with alphas ~ N(0, alpha_std)."""

    name = '_image_random_lighting'
    alpha_std = Param(float, 0.05, doc='standard deviation of the alphas')

    def apply(self, xp, x, d):
        alpha = random_state(np).normal(0, self.alpha_std, 3).astype(np.float32)
        return _lighting(xp, x, alpha)
