"""OpenCV's image arithmetic that several image families share (private): MXNet's
``saturate_cast`` and ``cv::resize`` (bilinear here; nearest, cubic, area and Lanczos in
``_cv_resize.py``), as MXNet 1.9.1's CPU build (OpenCV 3.4.2) computes them on (..., H, W,
C) arrays."""
import numpy as np

from . import _cv_resize


def saturate(xp, v, dtype):
    """MXNet's ``saturate_cast``: uint8 clamped to [0, 255], then C's truncating cast."""
    if np.dtype(dtype) == np.uint8:
        v = xp.clip(v, 0, 255)
    if np.dtype(dtype).kind in 'iu':
        v = xp.trunc(v)
    return v.astype(dtype)



def cv_resize(xp, x, oh, ow, interp):
    """``cv::resize`` of (..., H, W, C) images to (..., oh, ow, C): interp 1 bilinear
    (half-pixel centres; uint8 in OpenCV's 11-bit fixed point, other integers rounded,
    floats with float32 weights); 0 nearest, 2 cubic, 3 area, 4 Lanczos as
    ``_cv_resize.resize``."""
    h, w = x.shape[-3], x.shape[-2]
    if interp != 1:
        return _cv_resize.resize(xp, x, oh, ow, interp)
    y0, y1, fy = _linear_taps(oh, h)
    x0, x1, fx = _linear_taps(ow, w)
    if x.dtype == np.uint8:
        return _resize_u8(xp, x, (y0, y1, fy), (x0, x1, fx))
    # float32 weights (1 - f computed in float32); sums in float32, float64 for double images
    f = x if x.dtype == np.float64 else x.astype(np.float32)
    wy0, wy1 = (xp.asarray(v.astype(f.dtype))[:, None, None] for v in (1 - fy, fy))
    wx0, wx1 = (xp.asarray(v.astype(f.dtype))[None, :, None] for v in (1 - fx, fx))
    rows0 = f[..., xp.asarray(y0), :, :]
    rows1 = f[..., xp.asarray(y1), :, :]
    top = rows0[..., xp.asarray(x0), :] * wx0 + rows0[..., xp.asarray(x1), :] * wx1
    bot = rows1[..., xp.asarray(x0), :] * wx0 + rows1[..., xp.asarray(x1), :] * wx1
    out = top * wy0 + bot * wy1
    if x.dtype.kind in 'iu':
        return saturate(xp, xp.floor(out + np.float32(0.5)), x.dtype)
    return out.astype(x.dtype)


def cv_resize_adjoint(xp, g, h, w, interp):
    """The adjoint of :func:`cv_resize` for float images (its gradient: the resize is linear
    in the image): the head gradient ``g`` (..., oh, ow, C) spread back onto (..., h, w, C)
    with the forward's own taps and weights (``Ry.T @ g @ Rx`` per channel)."""
    oh, ow = g.shape[-3], g.shape[-2]
    shrinks = interp == 3 and _cv_resize.area_shrinks(h, w, oh, ow)
    ry = xp.asarray(_resize_matrix(oh, h, interp, g.dtype, shrinks))
    rx = xp.asarray(_resize_matrix(ow, w, interp, g.dtype, shrinks))
    t = xp.matmul(xp.swapaxes(g, -1, -2), rx)               # (..., oh, C, w)
    t = xp.ascontiguousarray(xp.swapaxes(t, -1, -2))         # (..., oh, w, C)
    lead = t.shape[:-3]
    t = xp.matmul(ry.T, t.reshape(lead + (oh, -1)))         # (..., h, w * C)
    return t.reshape(lead + (h, w, g.shape[-1]))


def _resize_matrix(n_out, n_in, interp, dtype, shrinks=False):
    """(n_out, n_in): the weights :func:`cv_resize` gives each source row (column) of a
    float image (``shrinks``: INTER_AREA averages)."""
    if interp in (2, 3, 4):
        return _cv_resize.matrix(n_out, n_in, interp, shrinks).astype(dtype)
    m = np.zeros((n_out, n_in), dtype)
    rows = np.arange(n_out)
    if interp == 0:
        m[rows, _cv_resize.nearest_index(n_out, n_in)] = 1
        return m
    s0, s1, f = _linear_taps(n_out, n_in)
    np.add.at(m, (rows, s0), (1 - f).astype(dtype))
    np.add.at(m, (rows, s1), f.astype(dtype))
    return m


def _linear_taps(n_out, n_in):
    """OpenCV INTER_LINEAR source taps and weights along one axis (half-pixel centres)."""
    scale = n_in / n_out
    f = ((np.arange(n_out) + 0.5) * scale - 0.5).astype(np.float32)
    s = np.floor(f).astype(np.int64)
    f = (f - s.astype(np.float32)).astype(np.float32)
    low = s < 0
    f[low], s[low] = 0, 0
    high = s >= n_in - 1
    f[high], s[high] = 0, n_in - 1
    return s, np.minimum(s + 1, n_in - 1), f


def _resize_u8(xp, x, ys, xs):
    """OpenCV's fixed-point bilinear resize of uint8 images: 11-bit weights, the horizontal
    pass in integers, the vertical one as its vectorised kernel rounds. MXNet 1.9.1's
    OpenCV 3.4.2 differs by one grey level in a few per cent of the values (measured: up to
    4.3%, tests/ops/test_image_io.py) at up-scaling taps; the cause is not found (rounding
    the scalar tail of each row as OpenCV's FixedPtCast makes it worse)."""
    def coef(f):
        return (np.rint((np.float32(1) - f) * np.float32(2048)).astype(np.int64),
                np.rint(f * np.float32(2048)).astype(np.int64))
    y0, y1, fy = ys
    x0, x1, fx = xs
    a0, a1 = (xp.asarray(v)[:, None] for v in coef(fx))
    b0, b1 = (xp.asarray(v)[:, None, None] for v in coef(fy))
    i = x.astype(np.int64)
    row = i[..., xp.asarray(x0), :] * a0 + i[..., xp.asarray(x1), :] * a1
    s0 = row[..., xp.asarray(y0), :, :]
    s1 = row[..., xp.asarray(y1), :, :]
    out = (((b0 * (s0 >> 4)) >> 16) + ((b1 * (s1 >> 4)) >> 16) + 2) >> 2
    return xp.clip(out, 0, 255).astype(np.uint8)
