"""Position-sensitive and deformable operators of MXNet's contrib (R-FCN / Deformable ConvNets
detection models): ``_contrib_PSROIPooling`` ... (more below as they are added).

``PSROIPooling(data, rois)``, as MXNet 1.9.1's CPU kernel (src/operator/contrib/
psroi_pooling.cc): rois (R, 5) ``[batch, x1, y1, x2, y2]`` are rounded (halves away from zero)
and scaled by ``spatial_scale``, the end +1; each roi is cut into ``pooled_size`` squared
bins (floor of the start, ceil of the end, clipped to the map); bin (ph, pw) of output
channel k averages input channel ``(k * group_size + gh) * group_size + gw`` with
``g = floor(p * group_size / pooled_size)``; an empty bin gives 0. ``group_size`` 0 means
``pooled_size``; data must have ``output_dim * group_size**2`` channels. The data gradient
spreads each output gradient evenly over its bin; rois get none. The bin sums use
summed-area tables (in float64 for float32 data), so the last bits may differ from MXNet's
running sums.
"""
import numpy as np

from symgraph.opdef import MXNetError, Operator, Param, ShapeError, register

from ._util import scatter_add


def _c_round(xp, v):
    """C ``round``: halves away from zero."""
    return xp.where(v >= 0, xp.floor(v + 0.5), -xp.floor(-v + 0.5))


def _psroi_bins(xp, rois, scale, pooled, height, width, dtype):
    """Integer bin bounds (R, P) of every roi: hs, he along H and ws, we along W."""
    dt = np.dtype(dtype).type
    r = rois.astype(dtype, copy=False)
    sc = dt(scale)
    x1 = _c_round(xp, r[:, 1]) * sc
    y1 = _c_round(xp, r[:, 2]) * sc
    x2 = (_c_round(xp, r[:, 3]) + dt(1)) * sc
    y2 = (_c_round(xp, r[:, 4]) + dt(1)) * sc
    rw = xp.maximum(x2 - x1, dt(0.1))
    rh = xp.maximum(y2 - y1, dt(0.1))
    bw = rw / dt(pooled)
    bh = rh / dt(pooled)
    p = xp.arange(pooled).astype(dtype)

    def bounds(start, size, limit):
        lo = xp.floor(p[None, :] * size[:, None] + start[:, None]).astype(np.int64)
        hi = xp.ceil((p[None, :] + dt(1)) * size[:, None] + start[:, None]).astype(np.int64)
        return xp.clip(lo, 0, limit), xp.clip(hi, 0, limit)
    hs, he = bounds(y1, bh, height)
    ws, we = bounds(x1, bw, width)
    return hs, he, ws, we


@register
class PSROIPooling(Operator):
    """Position-sensitive average pooling of regions (R-FCN)."""

    name = '_contrib_PSROIPooling'
    spatial_scale = Param(float, doc='ratio of the feature map to the image size')
    output_dim = Param(int, doc='number of output channels')
    pooled_size = Param(int, doc='bins per side of every roi')
    group_size = Param(int, 0, doc='position-sensitive groups per side (0: pooled_size)')
    needs_outputs = False

    def check(self):
        if self.output_dim <= 0 or self.pooled_size <= 0 or self.group_size < 0:
            raise MXNetError('%s: output_dim and pooled_size must be positive and group_size '
                             '>= 0, got %d, %d, %d' % (self.name, self.output_dim,
                                                       self.pooled_size, self.group_size))

    def _group(self):
        return self.group_size or self.pooled_size

    def list_arguments(self):
        return ['data', 'rois']

    def infer_shape(self, in_shapes):
        d, r = in_shapes
        if d is not None:
            want = self.output_dim * self._group() ** 2
            if len(d) != 4 or (d[1] and d[1] != want):
                raise ShapeError('%s: input %r must be (N, output_dim * group_size**2 = %d, H, '
                                 'W), got %s' % (self.name, 'data', want, tuple(d)))
        if r is not None and (len(r) != 2 or r[1] != 5):
            raise ShapeError('%s: input %r must be (R, 5), got %s' % (self.name, 'rois',
                                                                      tuple(r)))
        out = None if r is None else (r[0], self.output_dim, self.pooled_size,
                                      self.pooled_size)
        return [d, r], [out], []

    def infer_type(self, in_types):
        t = in_types[0] if in_types[0] is not None else in_types[1]
        return [t, t], [t], []

    def _index(self, xp, data, rois):
        """Bin bounds and the input channel of every output element (R, D, P, P)."""
        n, c, h, w = data.shape
        p, g, dim = self.pooled_size, self._group(), self.output_dim
        hs, he, ws, we = _psroi_bins(xp, rois, self.spatial_scale, p, h, w, data.dtype)
        pi = np.arange(p)
        gi = np.clip(np.floor(pi * g / p).astype(np.int64), 0, g - 1)
        ch = ((np.arange(dim)[:, None, None] * g + gi[None, :, None]) * g
              + gi[None, None, :])                                   # (D, P, P)
        b = rois[:, 0].astype(np.int64)
        return b, xp.asarray(ch), hs[:, None, :, None], he[:, None, :, None], \
            ws[:, None, None, :], we[:, None, None, :]

    def forward(self, xp, inputs, aux, is_train):
        data, rois = inputs
        acc_t = np.float64 if data.dtype != np.float64 else data.dtype
        sat = xp.zeros(data.shape[:2] + (data.shape[2] + 1, data.shape[3] + 1), acc_t)
        sat[:, :, 1:, 1:] = data.astype(acc_t).cumsum(axis=2).cumsum(axis=3)
        b, ch, hs, he, ws, we = self._index(xp, data, rois)
        bb = b[:, None, None, None]
        total = (sat[bb, ch, he, we] - sat[bb, ch, hs, we] - sat[bb, ch, he, ws]
                 + sat[bb, ch, hs, ws])
        area = (he - hs) * (we - ws)
        out = xp.where(area > 0, total / xp.maximum(area, 1), 0)
        return [out.astype(data.dtype)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        data, rois = inputs
        dr = xp.zeros_like(rois) if need[1] else None
        if not need[0]:
            return [None, dr]
        b, ch, hs, he, ws, we = self._index(xp, data, rois)
        area = (he - hs) * (we - ws)
        v = xp.where(area > 0, out_grads[0] / xp.maximum(area, 1), 0).astype(np.float64)
        n, c, h, w = data.shape
        diff = xp.zeros((n, c, h + 1, w + 1), np.float64)
        bb = xp.broadcast_to(b[:, None, None, None], v.shape)
        chb = xp.broadcast_to(ch, v.shape)
        shape = v.shape
        for hh, ww, sign in ((hs, ws, 1), (hs, we, -1), (he, ws, -1), (he, we, 1)):
            scatter_add(xp, diff, (bb, chb, xp.broadcast_to(hh, shape),
                                   xp.broadcast_to(ww, shape)), sign * v)
        grad = diff.cumsum(axis=2).cumsum(axis=3)[:, :, :h, :w]
        return [grad.astype(data.dtype), dr]
