"""Position-sensitive roi pooling of R-FCN detection models: ``_contrib_PSROIPooling`` and
``_contrib_DeformablePSROIPooling``.

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


@register
class DeformablePSROIPooling(Operator):
    """Deformable position-sensitive roi pooling (``contrib.DeformablePSROIPooling``), as
    MXNet 1.9.1's CPU kernel.

    rois (R, 5) are rounded, scaled and shifted by -0.5; every bin (ph, pw) of output
    channel k is moved by ``trans[r, 2 * cls + (0, 1), part_h, part_w] * trans_std`` times
    the roi width / height (``cls = k // (output_dim / num_classes)``, ``num_classes =
    trans.shape[1] / 2``, ``part = floor(p / pooled_size * part_size)``), then averages
    ``sample_per_part``**2 bilinear samples of input channel ``(k * group_size + gh) *
    group_size + gw``; samples more than half a pixel outside the map are skipped (a bin
    with none gives 0), the others are clamped onto it. ``no_trans`` drops the trans input.
    A hidden second output holds the sample counts. Gradients: data, and trans through the
    sample positions (zero where a sample is clamped); rois none.
    """

    name = '_contrib_DeformablePSROIPooling'
    spatial_scale = Param(float, doc='ratio of the feature map to the image size')
    output_dim = Param(int, doc='number of output channels')
    group_size = Param(int, doc='position-sensitive groups per side')
    pooled_size = Param(int, doc='bins per side of every roi')
    part_size = Param(int, 0, doc='offset parts per side (0: pooled_size)')
    sample_per_part = Param(int, 1, doc='samples per bin side')
    trans_std = Param(float, 0.0, doc='scale of the offsets')
    no_trans = Param(bool, False, doc='no offsets (no trans input)')

    def check(self):
        for p in ('output_dim', 'group_size', 'pooled_size', 'sample_per_part'):
            if getattr(self, p) <= 0:
                raise MXNetError('%s: %s must be positive, got %d'
                                 % (self.name, p, getattr(self, p)))

    def list_arguments(self):
        return ['data', 'rois'] + ([] if self.no_trans else ['trans'])

    def list_outputs(self):
        return ['output', 'top_count']

    def num_visible_outputs(self):
        return 1

    def _part(self):
        return self.part_size or self.pooled_size

    def infer_shape(self, in_shapes):
        d, r = in_shapes[:2]
        t = None if self.no_trans else in_shapes[2]
        if d is not None:
            want = self.output_dim * self.group_size ** 2
            if len(d) != 4 or (d[1] and d[1] != want):
                raise ShapeError('%s: input %r must be (N, output_dim * group_size**2 = %d, '
                                 'H, W), got %s' % (self.name, 'data', want, tuple(d)))
        if r is not None and (len(r) != 2 or r[1] != 5):
            raise ShapeError('%s: input %r must be (R, 5), got %s' % (self.name, 'rois',
                                                                      tuple(r)))
        if t is not None:
            q = self._part()
            if (len(t) != 4 or t[1] % 2 or tuple(t[2:]) != (q, q)
                    or self.output_dim % (t[1] // 2)
                    or (r is not None and t[0] != r[0])):
                raise ShapeError('%s: input %r must be (R, 2 * num_classes, %d, %d) with '
                                 'num_classes dividing output_dim=%d, got %s'
                                 % (self.name, 'trans', q, q, self.output_dim, tuple(t)))
        out = None if r is None else (r[0], self.output_dim, self.pooled_size,
                                      self.pooled_size)
        args = [d, r] + ([] if self.no_trans else [t])
        return args, [out, out], []

    def infer_type(self, in_types):
        t = next((x for x in in_types if x is not None), None)
        return [t] * len(in_types), [t, t], []

    def _samples(self, xp, data, rois, trans):
        """Sample positions, validity and channels, all (R, D, P, P, S, S)."""
        dt = data.dtype.type
        n, c, h, w = data.shape
        p, g, s, q = self.pooled_size, self.group_size, self.sample_per_part, self._part()
        dim = self.output_dim
        r = rois.astype(data.dtype, copy=False)
        sc = dt(self.spatial_scale)
        x1 = _c_round(xp, r[:, 1]) * sc - dt(0.5)
        y1 = _c_round(xp, r[:, 2]) * sc - dt(0.5)
        x2 = (_c_round(xp, r[:, 3]) + dt(1)) * sc - dt(0.5)
        y2 = (_c_round(xp, r[:, 4]) + dt(1)) * sc - dt(0.5)
        rw = xp.maximum(x2 - x1, dt(0.1))
        rh = xp.maximum(y2 - y1, dt(0.1))
        bw, bh = rw / dt(p), rh / dt(p)
        pi = np.arange(p)
        part = np.floor(pi.astype(data.dtype) / dt(p) * dt(q)).astype(np.int64)
        k = np.arange(dim)
        if trans is None:
            tx = ty = xp.zeros((len(rois), dim, p, p), data.dtype)
        else:
            ncls = trans.shape[1] // 2
            cls = k // (dim // ncls)
            tr = trans.astype(data.dtype, copy=False)
            std = dt(self.trans_std)
            tx = tr[:, 2 * cls][:, :, part][:, :, :, part] * std          # (R, D, P, P)
            ty = tr[:, 2 * cls + 1][:, :, part][:, :, :, part] * std
        pf = xp.asarray(pi.astype(data.dtype))
        sf = xp.asarray(np.arange(s).astype(data.dtype))
        col = (slice(None), None, None, None, None, None)
        ws = (pf[None, None, None, :] * bw[:, None, None, None] + x1[:, None, None, None]
              + tx * rw[:, None, None, None])
        hs = (pf[None, None, :, None] * bh[:, None, None, None] + y1[:, None, None, None]
              + ty * rh[:, None, None, None])
        wpos = ws[..., None, None] + sf[None, None, None, None, None, :] * \
            (bw / dt(s))[col]
        hpos = hs[..., None, None] + sf[None, None, None, None, :, None] * \
            (bh / dt(s))[col]
        valid = ((wpos >= dt(-0.5)) & (wpos <= dt(w - 0.5)) & (hpos >= dt(-0.5))
                 & (hpos <= dt(h - 0.5)))
        wc = xp.clip(wpos, 0, w - 1)
        hc = xp.clip(hpos, 0, h - 1)
        gi = np.clip(np.floor(pi * g / p).astype(np.int64), 0, g - 1)
        ch = (k[:, None, None] * g + gi[None, :, None]) * g + gi[None, None, :]
        ch = xp.asarray(ch)[None, :, :, :, None, None]
        b = rois[:, 0].astype(np.int64)[col]
        return b, ch, hc, wc, valid, (wpos, hpos, rw, rh)

    def forward(self, xp, inputs, aux, is_train):
        data, rois = inputs[:2]
        trans = None if self.no_trans else inputs[2]
        b, ch, hc, wc, valid, _ = self._samples(xp, data, rois, trans)
        y0, x0 = xp.floor(hc), xp.floor(wc)
        y1, x1 = xp.ceil(hc), xp.ceil(wc)
        dy, dx = hc - y0, wc - x0
        y0, x0, y1, x1 = (a.astype(np.int64) for a in (y0, x0, y1, x1))
        v = ((1 - dx) * (1 - dy) * data[b, ch, y0, x0] + (1 - dx) * dy * data[b, ch, y1, x0]
             + dx * (1 - dy) * data[b, ch, y0, x1] + dx * dy * data[b, ch, y1, x1])
        v = xp.where(valid, v, 0)
        count = valid.sum(axis=(4, 5)).astype(data.dtype)
        out = xp.where(count > 0, v.sum(axis=(4, 5)) / xp.maximum(count, 1), 0)
        return [out.astype(data.dtype, copy=False), count]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        data, rois = inputs[:2]
        trans = None if self.no_trans else inputs[2]
        b, ch, hc, wc, valid, (wpos, hpos, rw, rh) = self._samples(xp, data, rois, trans)
        count = outputs[1]
        g = xp.where(count > 0, out_grads[0] / xp.maximum(count, 1), 0)[..., None, None]
        g = g * valid
        y0f, x0f = xp.floor(hc), xp.floor(wc)
        dy, dx = hc - y0f, wc - x0f
        y0, x0 = y0f.astype(np.int64), x0f.astype(np.int64)
        y1, x1 = xp.ceil(hc).astype(np.int64), xp.ceil(wc).astype(np.int64)
        res = [None] * len(inputs)
        if need[0]:
            gd = xp.zeros(data.shape, data.dtype)
            shape = g.shape
            bb, cc = xp.broadcast_to(b, shape), xp.broadcast_to(ch, shape)
            for yy, xx, wt in ((y0, x0, (1 - dx) * (1 - dy)), (y1, x0, (1 - dx) * dy),
                               (y0, x1, dx * (1 - dy)), (y1, x1, dx * dy)):
                scatter_add(xp, gd, (bb, cc, yy, xx), (g * wt).astype(data.dtype))
            res[0] = gd
        if need[1]:
            res[1] = xp.zeros_like(rois)
        if trans is not None and need[2]:
            v00, v10 = data[b, ch, y0, x0], data[b, ch, y1, x0]
            v01, v11 = data[b, ch, y0, x1], data[b, ch, y1, x1]
            dval_x = (1 - dy) * (v01 - v00) + dy * (v11 - v10)
            dval_y = (1 - dx) * (v10 - v00) + dx * (v11 - v01)
            w = data.shape[3]
            h = data.shape[2]
            dval_x = xp.where((wpos > 0) & (wpos < w - 1), dval_x, 0)
            dval_y = xp.where((hpos > 0) & (hpos < h - 1), dval_y, 0)
            std = self.trans_std
            gx = (g * dval_x).sum(axis=(4, 5)) * std * rw[:, None, None, None]
            gy = (g * dval_y).sum(axis=(4, 5)) * std * rh[:, None, None, None]
            gt = xp.zeros(trans.shape, trans.dtype)
            p, q, dim = self.pooled_size, self._part(), self.output_dim
            ncls = trans.shape[1] // 2
            part = np.floor(np.arange(p).astype(data.dtype) / data.dtype.type(p)
                            * data.dtype.type(q)).astype(np.int64)
            cls = np.arange(dim) // (dim // ncls)
            ri = xp.arange(len(rois))[:, None, None, None]
            ci = xp.asarray(cls)[None, :, None, None]
            ph = xp.asarray(part)[None, None, :, None]
            pw = xp.asarray(part)[None, None, None, :]
            shape = gx.shape
            idx = tuple(xp.broadcast_to(a, shape) for a in (ri, 2 * ci, ph, pw))
            scatter_add(xp, gt, idx, gx.astype(trans.dtype))
            idx = (idx[0], idx[1] + 1, idx[2], idx[3])
            scatter_add(xp, gt, idx, gy.astype(trans.dtype))
            res[2] = gt
        return res
