"""The image operations of :class:`~.image_record.ImageRecordIter` (and
``ImageDetRecordIter``): MXNet 1.9.1's DefaultImageAugmenter (``src/io/image_aug_default.cc``:
resize, affine warp, padding, crop, colour and HLS changes, PCA noise, mirror), the
per-image random numbers it reads (:class:`_Draws`) and the conversion of a crop into a
batch row (:class:`_Normalizer`, MXNet's ProcessImage). OpenCV's calls are reproduced as
``mx.image`` does (the resize kernels of ops/_cv_resize.py through ``mx.nd``).
"""
import numpy as np

from .. import ndarray as nd

__all__ = []

#: MXNet's eigenvalue-scaled eigenvectors of ImageNet's RGB covariance (pca_noise)
_EIGVEC = np.array([[55.46 * -0.5675, 4.794 * 0.7192, 1.148 * 0.4009],
                    [55.46 * -0.5808, 4.794 * -0.0045, 1.148 * -0.8140],
                    [55.46 * -0.5836, 4.794 * -0.6948, 1.148 * 0.4203]], np.float32)


def _pillow():
    try:
        from PIL import Image
    except ImportError:
        from ..base import NotSupportedError
        raise NotSupportedError('ImageRecordIter decodes images with Pillow, which is not '
                                'installed: pip install "symgraph[image]"') from None
    return Image



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
