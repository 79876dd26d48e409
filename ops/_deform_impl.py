"""Bilinear sampling of deformable convolutions (a helper module, not a family).

``sample(xp, data, offset, geom, dg, zero_border)`` gathers the deformed im2col columns of
(N, C, H, W) data at ``base + offset`` positions and returns the values with everything the
gradients need; ``grads`` maps column gradients back to data and offsets. Two border rules,
as MXNet 1.9.1's two kernels:

* ``zero_border=False`` (``DeformableConvolution``, deformable_im2col.h): a position is
  sampled when ``0 <= h < H`` and ``0 <= w < W``; at the last row / column the high corner is
  clamped onto the low one (no interpolation weight toward outside);
* ``zero_border=True`` (``ModulatedDeformableConvolution``, DCNv2's kernel): sampled when
  ``-1 < h < H`` and ``-1 < w < W``, corners outside the map read 0.
"""
import numpy as np

from ._util import scatter_add


def positions(xp, offset, geom, dg, out_hw, dtype):
    """Sampling rows and columns (N, dg, K, Ho, Wo) of every kernel tap."""
    (kh, kw), (sh, sw), (dh, dw), (ph, pw) = geom
    n = offset.shape[0]
    ho, wo = out_hw
    off = offset.reshape(n, dg, kh * kw, 2, ho, wo).astype(dtype, copy=False)
    ki, kj = np.meshgrid(np.arange(kh), np.arange(kw), indexing='ij')
    base_h = (np.arange(ho)[None, :, None] * sh - ph + ki.reshape(-1, 1, 1) * dh)
    base_w = (np.arange(wo)[None, None, :] * sw - pw + kj.reshape(-1, 1, 1) * dw)
    h = xp.asarray(base_h.astype(dtype)) + off[:, :, :, 0]
    w = xp.asarray(base_w.astype(dtype)) + off[:, :, :, 1]
    return h, w


def _corners(xp, pos, size, zero_border):
    """Low/high integer corners, the fraction, and per-corner validity along one axis."""
    low = xp.floor(pos)
    if zero_border:
        frac = pos - low
        lo_i = low.astype(np.int64)
        hi_i = lo_i + 1
        lo_ok = lo_i >= 0
        hi_ok = hi_i <= size - 1
    else:
        clamp = low >= size - 1
        frac = xp.where(clamp, 0, pos - low)
        lo_i = low.astype(np.int64)
        hi_i = xp.where(clamp, size - 1, lo_i + 1)
        lo_ok = hi_ok = xp.ones(pos.shape, bool)
    return (xp.clip(lo_i, 0, size - 1), xp.clip(hi_i, 0, size - 1), frac.astype(pos.dtype),
            lo_ok, hi_ok)


def sample(xp, data, h, w, dg, zero_border):
    """Columns (N, dg, K, Ho, Wo, Cg) and the interpolation state for :func:`grads`."""
    n, c, hh, ww = data.shape
    if zero_border:
        valid = (h > -1) & (w > -1) & (h < hh) & (w < ww)
    else:
        valid = (h >= 0) & (w >= 0) & (h < hh) & (w < ww)
    hs = xp.where(valid, h, 0)
    ws = xp.where(valid, w, 0)
    h0, h1, lh, h0ok, h1ok = _corners(xp, hs, hh, zero_border)
    w0, w1, lw, w0ok, w1ok = _corners(xp, ws, ww, zero_border)
    d = data.reshape(n, dg, c // dg, hh, ww)
    ni = xp.arange(n).reshape(n, 1, 1, 1, 1)
    gi = xp.arange(dg).reshape(1, dg, 1, 1, 1)
    dt = data.dtype

    def at(hi, wi, ok):
        v = d[ni, gi, :, hi, wi]                                  # (N, dg, K, Ho, Wo, Cg)
        return v * (ok & valid)[..., None].astype(dt)
    v1, v2 = at(h0, w0, h0ok & w0ok), at(h0, w1, h0ok & w1ok)
    v3, v4 = at(h1, w0, h1ok & w0ok), at(h1, w1, h1ok & w1ok)
    lh_, lw_ = lh[..., None], lw[..., None]
    hh_, hw_ = 1 - lh_, 1 - lw_
    cols = hh_ * hw_ * v1 + hh_ * lw_ * v2 + lh_ * hw_ * v3 + lh_ * lw_ * v4
    state = (valid, (h0, h1, w0, w1), (h0ok, h1ok, w0ok, w1ok), lh_, lw_, (v1, v2, v3, v4),
             (ni, gi))
    return cols, state


def grads(xp, gcols, data_shape, state, need_data, need_offset, dtype):
    """Data gradient (N, C, H, W) and offset gradient (N, dg, K, 2, Ho, Wo) of columns
    gradient ``gcols`` (N, dg, K, Ho, Wo, Cg)."""
    valid, (h0, h1, w0, w1), (h0ok, h1ok, w0ok, w1ok), lh, lw, (v1, v2, v3, v4), (ni, gi) = \
        state
    n, c, hh, ww = data_shape
    dg = gi.shape[1]
    gd = goff = None
    if need_data:
        acc = xp.zeros((n, dg, c // dg, hh, ww), dtype)
        hh_, hw_ = 1 - lh, 1 - lw
        for hi, wi, ok, wt in ((h0, w0, h0ok & w0ok, hh_ * hw_), (h0, w1, h0ok & w1ok, hh_ * lw),
                               (h1, w0, h1ok & w0ok, lh * hw_), (h1, w1, h1ok & w1ok, lh * lw)):
            m = (ok & valid)[..., None].astype(dtype)
            scatter_add(xp, acc, (ni, gi, slice(None), hi, wi), gcols * wt * m)
        gd = acc.reshape(n, c, hh, ww)
    if need_offset:
        dval_h = (v3 - v1) * (1 - lw) + (v4 - v2) * lw
        dval_w = (v2 - v1) * (1 - lh) + (v4 - v3) * lh
        m = valid.astype(dtype)
        goff = xp.stack([(gcols * dval_h).sum(-1) * m, (gcols * dval_w).sum(-1) * m], axis=3)
    return gd, goff
