"""OpenCV's ``cv::resize`` with nearest (0), cubic (2), area (3) and Lanczos (4)
interpolation, as MXNet 1.9.1's OpenCV 3.4.2 computes them, on (..., H, W, C) arrays of any
array module ``xp`` (NumPy, CuPy): the kernels of ``_cvimresize`` (ops/image_io.py),
``_image_resize`` (ops/image.py) and so of ``mx.image.imresize`` and ``ImageRecordIter``'s
``inter_method`` (bilinear, 1, is ops/_cv.py's).

Nearest takes the source pixel ``floor(d * scale)``, with OpenCV's ``scale = 1 / (n_out /
n_in)`` in doubles (as every kernel here: ``n_in / n_out`` differs in the last bit, which
can move a floor by one pixel).

Each axis is a resize matrix (output pixel x source pixel) built on the host from OpenCV's
taps and weights: source coordinate ``(d + 0.5) * scale - 0.5`` with 4 cubic taps (A =
-0.75) or 8 Lanczos taps, edges replicated; area averaging over the source cells a
destination pixel covers when shrinking (``computeResizeAreaTab``; uint8 halving rounds
halves up, as the vectorised 2x2 kernel), and OpenCV's area-mode linear taps when enlarging
(uint8: its fixed-point linear kernel). uint8 images use OpenCV's 11-bit fixed-point
weights for cubic and Lanczos (an integer horizontal pass, then the vertical sum rounded);
the result is rounded and saturated. Measured against MXNet (tests/io/test_image_api.py):
nearest and area equal on the golden cases, cubic and Lanczos within one grey level in up
to 5% of the values (OpenCV's SIMD kernels round some sums differently); float images are
computed in float32 (float64 for float64), within 1e-3.
"""
import numpy as np

#: OpenCV's INTER_RESIZE_COEF_BITS: fixed-point weights of uint8 resizes
_COEF_SCALE = 2048


def _cubic_coeffs(x):
    """OpenCV's interpolateCubic (A = -0.75) for the fractions ``x`` (float32): (n, 4)."""
    a = np.float32(-0.75)
    x = x.astype(np.float32)
    c0 = ((a * (x + 1) - 5 * a) * (x + 1) + 8 * a) * (x + 1) - 4 * a
    c1 = ((a + 2) * x - (a + 3)) * x * x + 1
    c2 = ((a + 2) * (1 - x) - (a + 3)) * (1 - x) * (1 - x) + 1
    c3 = np.float32(1) - c0 - c1 - c2
    return np.stack([c0, c1, c2, c3], axis=1).astype(np.float32)


def _lanczos4_coeffs(x):
    """OpenCV's interpolateLanczos4 for the fractions ``x``: (n, 8), normalised to sum 1."""
    s45 = 0.70710678118654752440084436210485
    cs = np.array([[1, 0], [-s45, -s45], [0, 1], [s45, -s45], [-1, 0], [s45, s45],
                   [0, -1], [-s45, s45]])
    x = x.astype(np.float64)
    y0 = -(x + 3) * np.pi * 0.25
    s0, c0 = np.sin(y0), np.cos(y0)
    i = np.arange(8)
    y = -(x[:, None] + 3 - i[None, :]) * np.pi * 0.25
    with np.errstate(divide='ignore', invalid='ignore'):
        c = ((cs[:, 0][None, :] * s0[:, None] + cs[:, 1][None, :] * c0[:, None])
             / (y * y)).astype(np.float32)
        c = c / c.sum(axis=1, keepdims=True, dtype=np.float32)
    exact = x < np.finfo(np.float32).eps            # on a source pixel: that pixel alone
    c[exact] = 0
    c[exact, 3] = 1
    return c.astype(np.float32)


def _kernel_taps(n_out, n_in, ksize):
    """(first source index per output, fraction) for an interpolation kernel of ``ksize``
    taps at OpenCV's half-pixel centres."""
    scale = 1.0 / (n_out / n_in)                # OpenCV: 1 / inv_scale, in doubles
    f = ((np.arange(n_out) + 0.5) * scale - 0.5).astype(np.float32)
    s = np.floor(f).astype(np.int64)
    return s - (ksize // 2 - 1), (f - s.astype(np.float32)).astype(np.float32)


def _area_down_matrix(n_out, n_in):
    """computeResizeAreaTab: each output averages the source cells it covers."""
    scale = 1.0 / (n_out / n_in)                # OpenCV: 1 / inv_scale, in doubles
    m = np.zeros((n_out, n_in), np.float64)
    for d in range(n_out):
        f1 = d * scale
        f2 = f1 + scale
        cell = min(scale, n_in - f1)
        s1 = int(np.ceil(f1))
        s2 = min(int(np.floor(f2)), n_in - 1)
        s1 = min(s1, s2)
        if s1 - f1 > 1e-3:
            m[d, s1 - 1] += (s1 - f1) / cell
        m[d, s1:s2] += 1.0 / cell
        if f2 - s2 > 1e-3:
            m[d, s2] += min(min(f2 - s2, 1.0), cell) / cell
    return m.astype(np.float32)


def _area_up_taps(n_out, n_in):
    """The linear taps INTER_AREA uses on an axis that is not shrunk: (n_out, 2) indices and
    weights."""
    scale = 1.0 / (n_out / n_in)                # OpenCV: 1 / inv_scale, in doubles
    inv = n_out / n_in
    d = np.arange(n_out)
    s = np.floor(d * scale).astype(np.int64)
    f = ((d + 1) - (s + 1) * inv).astype(np.float32)
    f = np.where(f <= 0, np.float32(0), f - np.floor(f)).astype(np.float32)
    high = s >= n_in - 1
    f[high], s[high] = 0, n_in - 1
    idx = np.stack([s, np.minimum(s + 1, n_in - 1)], axis=1)
    return idx, np.stack([1 - f, f], axis=1).astype(np.float32)


def _matrix(n_out, n_in, interp, area_shrinks):
    """(n_out, n_in) float32 resize matrix of one axis: each output's source weights."""
    if interp == 3 and area_shrinks:
        return _area_down_matrix(n_out, n_in)
    if interp == 3:
        idx, wts = _area_up_taps(n_out, n_in)
    else:
        ksize = 4 if interp == 2 else 8
        first, frac = _kernel_taps(n_out, n_in, ksize)
        wts = _cubic_coeffs(frac) if interp == 2 else _lanczos4_coeffs(frac)
        idx = np.clip(first[:, None] + np.arange(ksize)[None, :], 0, n_in - 1)  # replicate
    m = np.zeros((n_out, n_in), np.float32)
    np.add.at(m, (np.repeat(np.arange(n_out), idx.shape[1]), idx.ravel()), wts.ravel())
    return m


def _taps(m):
    """The resize matrix ``m`` as (indices, weights) of its nonzero taps per output, (n_out,
    k) each (rows with fewer taps padded with zero weights): a gather per tap is much
    cheaper than a dense product (and needs no BLAS threads, which a busy machine starves)."""
    nonzero = m != 0
    k = max(int(nonzero.sum(axis=1).max()), 1)
    idx = np.argsort(~nonzero, axis=1, kind='stable')[:, :k]
    return idx, np.take_along_axis(m, idx, axis=1)


def _apply(xp, img, my, mx):
    """``my @ img @ mx.T`` over the (H, W) axes of a (..., H, W, C) array: a gather per
    nonzero tap (much cheaper than a dense product, and no BLAS threads, which a busy
    machine starves)."""
    xi, xw = (xp.asarray(a) for a in _taps(mx))
    yi, yw = (xp.asarray(a) for a in _taps(my))
    rows = img[..., xi[:, 0], :] * xw[:, 0, None]
    for k in range(1, xi.shape[1]):
        rows += img[..., xi[:, k], :] * xw[:, k, None]
    out = rows[..., yi[:, 0], :, :] * yw[:, 0, None, None]
    for k in range(1, yi.shape[1]):
        out += rows[..., yi[:, k], :, :] * yw[:, k, None, None]
    return out


def _area_up_u8(xp, img, w, h):
    """INTER_AREA's linear taps on uint8 as OpenCV's fixed-point linear kernel runs them:
    11-bit weights, an integer horizontal pass and its vectorised vertical rounding."""
    xi, xw = _area_up_taps(w, img.shape[-2])
    yi, yw = _area_up_taps(h, img.shape[-3])
    a = xp.asarray(np.rint(xw * np.float32(_COEF_SCALE)).astype(np.int64))
    b = xp.asarray(np.rint(yw * np.float32(_COEF_SCALE)).astype(np.int64))
    xi, yi = xp.asarray(xi), xp.asarray(yi)
    src = img.astype(np.int64)
    row = src[..., xi[:, 0], :] * a[:, 0, None] + src[..., xi[:, 1], :] * a[:, 1, None]
    s0, s1 = row[..., yi[:, 0], :, :] >> 4, row[..., yi[:, 1], :, :] >> 4
    out = (((b[:, 0, None, None] * s0) >> 16) + ((b[:, 1, None, None] * s1) >> 16) + 2) >> 2
    return xp.clip(out, 0, 255).astype(np.uint8)


def nearest_index(n_out, n_in):
    """resizeNN's source index: ``floor(d * (1 / (n_out / n_in)))`` in doubles, as OpenCV
    writes it (``d * (n_in / n_out)`` differs in the last bit at some positions, which can
    move a floor by one pixel)."""
    return np.minimum(np.floor(np.arange(n_out) * (1.0 / (n_out / n_in))).astype(np.int64),
                      n_in - 1)


def area_shrinks(h, w, oh, ow):
    """Whether INTER_AREA averages (OpenCV: both scales >= 1) rather than interpolates."""
    return w >= ow and h >= oh


def matrix(n_out, n_in, interp, shrinks):
    """(n_out, n_in) float32 matrix of one axis for interp 2-4 (``shrinks``: INTER_AREA
    averages, see :func:`area_shrinks`): each output's source weights (the adjoint of the
    resize uses it)."""
    return _matrix(n_out, n_in, interp, shrinks)


def resize(xp, img, h, w, interp):
    """``cv::resize`` of the (..., H, W, C) array ``img`` to (..., h, w, C) with ``interp`` 0
    (nearest), 2 (cubic), 3 (area) or 4 (Lanczos); same dtype (uint8, float32 or float64;
    other integers are rounded and saturated)."""
    sh, sw = img.shape[-3], img.shape[-2]
    if (sh, sw) == (h, w):
        return img.copy()                               # cv::resize copies
    if interp == 0:
        ys, xs = xp.asarray(nearest_index(h, sh)), xp.asarray(nearest_index(w, sw))
        return img[..., ys, :, :][..., xs, :]
    if interp not in (2, 3, 4):
        raise ValueError('resize: interp must be 0, 2, 3 or 4 here, got %r' % (interp,))
    shrinks = interp == 3 and area_shrinks(sh, sw, h, w)
    if img.dtype == np.uint8 and interp == 3 and not shrinks:
        return _area_up_u8(xp, img, w, h)
    if img.dtype == np.uint8 and interp == 3 and (sh, sw) == (2 * h, 2 * w):
        # resizeAreaFast's vectorised 2x2 kernel rounds halves up: (a + b + c + d + 2) >> 2
        q = img.astype(np.int32)
        q = (q[..., 0::2, 0::2, :] + q[..., 0::2, 1::2, :] + q[..., 1::2, 0::2, :] +
             q[..., 1::2, 1::2, :])
        return ((q + 2) >> 2).astype(np.uint8)
    mx = _matrix(w, sw, interp, shrinks)
    my = _matrix(h, sh, interp, shrinks)
    if img.dtype == np.uint8 and interp in (2, 4):
        # OpenCV's fixed point: integer weights (each tap rounded on its own, so they need
        # not sum to 2048); float64 holds every integer sum exactly
        bx = np.clip(np.rint(mx * _COEF_SCALE), -32768, 32767)
        by = np.clip(np.rint(my * _COEF_SCALE), -32768, 32767)
        out = _apply(xp, img.astype(np.float64), by, bx)
        return xp.clip(xp.rint(out / float(_COEF_SCALE * _COEF_SCALE)), 0, 255).astype(
            np.uint8)
    ftype = np.float64 if img.dtype == np.float64 else np.float32
    out = _apply(xp, img.astype(ftype), my.astype(ftype), mx.astype(ftype))
    if img.dtype.kind in 'iu':
        info = np.iinfo(img.dtype)
        return xp.clip(xp.rint(out), info.min, info.max).astype(img.dtype)
    return out.astype(img.dtype)
