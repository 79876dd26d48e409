"""Region-of-interest pooling: ``ROIPooling`` (max), ``_contrib_ROIAlign`` (bilinear) and
``_contrib_RROIAlign`` (rotated rois, see its class).

``rois`` is (R, 5): batch index, x1, y1, x2, y2 in image coordinates, scaled onto the
feature map by ``spatial_scale``. Both operators gather every sample of every bin at once
(in chunks of ROIs that bound the temporary memory) and scatter the gradient back with
``bincount``; the ROIs get a zero gradient, as in MXNet.
"""
import numpy as np

from symgraph.opdef import Operator, Param, ShapeError, register, same_type
from symgraph.base import ArgumentError, MXNetError, ParameterError

from ._util import scatter_add

_CHUNK_ELEMENTS = 1 << 24       # temporaries per chunk of ROIs


def _chunks(n_rois, per_roi):
    step = max(1, _CHUNK_ELEMENTS // max(1, per_roi))
    return [slice(s, min(n_rois, s + step)) for s in range(0, n_rois, step)]


def _c_round(xp, v):
    """C ``round``: halves away from zero (NumPy rounds them to even)."""
    return xp.sign(v) * xp.floor(xp.abs(v) + 0.5)


def _roi_shapes(op, in_shapes, out_channels):
    data, rois = in_shapes
    if data is not None and len(data) != 4:
        raise ShapeError('%s data must be 4-D (N, C, H, W), got %s' % (op.name, tuple(data)))
    if rois is not None and (len(rois) != 2 or rois[1] not in (0, 5)):
        raise ShapeError('%s rois must be (R, 5), got %s' % (op.name, tuple(rois)))
    if data is None or rois is None:
        return [data, rois], [None, None], []
    out = (rois[0], out_channels(data[1])) + tuple(op.pooled_size)
    return [data, rois], [out, out], []


def _scatter_add(xp, shape, index, weights, dtype):
    """Dense gradient of shape ``shape`` from flat ``index`` and ``weights``."""
    size = int(np.prod(shape))
    g = xp.bincount(index.reshape(-1), weights=weights.reshape(-1), minlength=size)
    return g[:size].astype(dtype, copy=False).reshape(shape)


class _ROIBase(Operator):
    needs_inputs = True
    needs_outputs = True

    def check(self):
        if self.pooled_size is None or len(self.pooled_size) != 2 or min(self.pooled_size) < 1:
            raise ParameterError('%s: pooled_size must be two positive ints, got %r'
                                 % (self.name, self.pooled_size))

    def list_arguments(self):
        return ['data', 'rois']

    def num_visible_outputs(self):
        return 1

    def infer_type(self, in_types):
        t = same_type(self, in_types)
        return [t, t], [t, t], []


@register
class ROIPooling(_ROIBase):
    """Max pooling of each ROI into a ``pooled_size`` grid of bins (Fast R-CNN)."""

    name = 'ROIPooling'
    aliases = ('_npx_roi_pooling',)
    pooled_size = Param('shape', doc='(height, width) of the output')
    spatial_scale = Param(float, doc='feature-map size / image size')

    def list_outputs(self):
        return ['output', 'maxidx']

    def infer_shape(self, in_shapes):
        return _roi_shapes(self, in_shapes, lambda c: c)

    def _bins(self, xp, rois, size, axis, dtype):
        """Clipped [start, end) of every bin along one axis, shape (R, P)."""
        scale = float(np.float32(self.spatial_scale))
        lo = _c_round(xp, rois[:, 1 + axis] * scale).astype(np.int64)
        hi = _c_round(xp, rois[:, 3 + axis] * scale).astype(np.int64)
        p = self.pooled_size[1 - axis]
        length = xp.maximum(hi - lo + 1, 1).astype(dtype)
        binsz = length / dtype.type(p)
        k = xp.arange(p, dtype=dtype)
        start = xp.floor(k * binsz[:, None]).astype(np.int64) + lo[:, None]
        end = xp.ceil((k + 1) * binsz[:, None]).astype(np.int64) + lo[:, None]
        return xp.clip(start, 0, size), xp.clip(end, 0, size)

    def forward(self, xp, inputs, aux, is_train):
        data, rois = inputs
        n, c, h, w = data.shape
        ph, pw = self.pooled_size
        r = rois.shape[0]
        out = xp.zeros((r, c, ph, pw), data.dtype)
        idx = xp.full((r, c, ph, pw), -1, np.int64)
        if r == 0:
            return [out, idx.astype(data.dtype)]
        hs, he = self._bins(xp, rois, h, 1, data.dtype)
        ws, we = self._bins(xp, rois, w, 0, data.dtype)
        kh = max(1, int((he - hs).max()))
        kw = max(1, int((we - ws).max()))
        batch = rois[:, 0].astype(np.int64)
        good = (batch >= 0) & (batch < n)
        flat_data = data.reshape(-1)
        for sl in _chunks(r, c * ph * pw * kh * kw):
            yy = hs[sl, :, None] + xp.arange(kh)                        # (r, ph, kh)
            xx = ws[sl, :, None] + xp.arange(kw)                        # (r, pw, kw)
            vy = yy < he[sl, :, None]
            vx = xx < we[sl, :, None]
            pos = (xp.minimum(yy, h - 1)[:, :, None, :, None] * w
                   + xp.minimum(xx, w - 1)[:, None, :, None, :])        # (r, ph, pw, kh, kw)
            valid = vy[:, :, None, :, None] & vx[:, None, :, None, :]
            valid = valid & good[sl, None, None, None, None]
            base = (xp.clip(batch[sl], 0, n - 1)[:, None] * c + xp.arange(c)) * (h * w)
            pos = pos.reshape(pos.shape[:3] + (kh * kw,))
            valid = valid.reshape(pos.shape)
            vals = flat_data[base[:, :, None, None, None] + pos[:, None]]  # (r,c,ph,pw,k)
            vals = xp.where(valid[:, None], vals, -xp.inf)
            # argmax takes the first maximum in row-major order, as MXNet's strict '>'
            am = xp.argmax(vals, axis=-1)
            best = xp.take_along_axis(vals, am[..., None], axis=-1)[..., 0]
            hit = valid.any(axis=-1)[:, None]
            out[sl] = xp.where(hit, best, 0)
            where = xp.take_along_axis(xp.broadcast_to(pos[:, None], vals.shape),
                                       am[..., None], axis=-1)[..., 0]
            idx[sl] = xp.where(hit, where, -1)
        return [out, idx.astype(data.dtype)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        data, rois = inputs
        n, c, h, w = data.shape
        dx = drois = None
        if need[0]:
            idx = outputs[1].astype(np.int64)
            batch = xp.clip(rois[:, 0].astype(np.int64), 0, n - 1)
            base = (batch[:, None] * c + xp.arange(c)) * (h * w)
            flat = base[:, :, None, None] + xp.maximum(idx, 0)
            dx = _scatter_add(xp, data.shape, flat, xp.where(idx >= 0, out_grads[0], 0),
                              data.dtype)
        if need[1]:
            drois = xp.zeros_like(rois)
        return [dx, drois]


@register
class ROIAlign(_ROIBase):
    """Average of bilinear samples in each bin of each ROI (Mask R-CNN); optionally
    position-sensitive (R-FCN) and center-aligned (Detectron2).

    ``rois`` may be (R, 5) or (R, 4) (then every ROI is on image 0). A negative batch index
    gives a zero output and no gradient.
    """

    name = '_contrib_ROIAlign'
    pooled_size = Param('shape', doc='(height, width) of the output')
    spatial_scale = Param(float, doc='feature-map size / image size')
    sample_ratio = Param(int, -1, doc='samples per bin side (<= 0: adaptive)')
    position_sensitive = Param(bool, False, doc='channel group per bin (PSRoIAlign)')
    aligned = Param(bool, False, doc='shift by half a pixel (Detectron2)')

    def list_outputs(self):
        return ['output']

    def infer_shape(self, in_shapes):
        data, rois = in_shapes
        if rois is not None and (len(rois) != 2 or rois[1] not in (0, 4, 5)):
            raise ShapeError('ROIAlign rois must be (R, 5) or (R, 4), got %s' % (tuple(rois),))
        ph, pw = self.pooled_size

        def channels(c):
            if not self.position_sensitive:
                return c
            if c % (ph * pw):
                raise ShapeError('position-sensitive ROIAlign needs channels (%d) divisible '
                                 'by pooled height x width (%d)' % (c, ph * pw))
            return c // (ph * pw)
        args, outs, aux = _roi_shapes(self, [data, None if rois is None else
                                             (rois[0], 0)], channels)
        return [data, rois], outs[:1], aux

    def infer_type(self, in_types):
        t = same_type(self, in_types)
        return [t, t], [t], []

    def _axis_samples(self, xp, start, size, n_bins, grid, gmax, limit, dtype):
        """Per (roi, bin, sample): low/high index and their weights along one axis."""
        binsz = size / dtype.type(n_bins)
        k = xp.arange(n_bins, dtype=dtype)[None, :, None]
        i = xp.arange(gmax, dtype=dtype)[None, None, :]
        g = grid.astype(dtype)[:, None, None]
        # same evaluation order as MXNet: start + p * bin + (i + .5) * bin / grid
        v = (start[:, None, None] + k * binsz[:, None, None]) + (i + 0.5) * binsz[:, None, None] / g
        inside = (v >= -1.0) & (v <= limit) & (i < g)
        v = xp.maximum(v, 0)
        low = xp.floor(v).astype(np.int64)
        top = low >= limit - 1
        low = xp.where(top, limit - 1, low)
        high = xp.where(top, limit - 1, low + 1)
        v = xp.where(top, low.astype(dtype), v)
        lw = v - low.astype(dtype)
        hw = 1.0 - lw
        zero = xp.zeros_like(lw)
        return low, high, xp.where(inside, hw, zero), xp.where(inside, lw, zero)

    def _samples(self, xp, data, rois):
        """Flat data indices (R, Cout, PH, PW, S) and weights (R, 1|Cout, PH, PW, S)."""
        n, c, h, w = data.shape
        ph, pw = self.pooled_size
        dt = data.dtype
        r = rois.shape[0]
        if rois.shape[1] == 5:
            batch = rois[:, 0].astype(np.int64)
            box = rois[:, 1:]
        else:
            batch = xp.zeros(r, np.int64)
            box = rois
        off = 0.5 if self.aligned else 0.0
        scale = dt.type(np.float32(self.spatial_scale))
        x1, y1, x2, y2 = (box[:, k] * scale - dt.type(off) for k in range(4))
        rw, rh = x2 - x1, y2 - y1
        if self.aligned:
            if bool(((rw <= 0) | (rh <= 0))[batch >= 0].any()):
                raise ArgumentError('ROIAlign with aligned=True needs ROIs of positive size')
        else:
            rw, rh = xp.maximum(rw, dt.type(1)), xp.maximum(rh, dt.type(1))
        if self.sample_ratio > 0:
            gh = gw = xp.full(r, self.sample_ratio, np.int64)
        else:
            gh = xp.ceil(rh / dt.type(ph)).astype(np.int64)
            gw = xp.ceil(rw / dt.type(pw)).astype(np.int64)
        ghm = max(1, int(gh.max())) if r else 1
        gwm = max(1, int(gw.max())) if r else 1
        yl, yh, wyl, wyh = self._axis_samples(xp, y1, rh, ph, gh, ghm, h, dt)
        xl, xh, wxl, wxh = self._axis_samples(xp, x1, rw, pw, gw, gwm, w, dt)
        # a batch index outside [0, N) pools nothing (zeros, as ROIPooling here)
        ok = ((batch >= 0) & (batch < n)).astype(dt) / (gh * gw).astype(dt)
        # (r, ph, pw, gy, gx, 4) positions and weights of the four corners
        ys = xp.stack([yl, yl, yh, yh], -1)[:, :, None, :, None, :]
        xs = xp.stack([xl, xh, xl, xh], -1)[:, None, :, None, :, :]
        wy = xp.stack([wyl, wyl, wyh, wyh], -1)[:, :, None, :, None, :]
        wx = xp.stack([wxl, wxh, wxl, wxh], -1)[:, None, :, None, :, :]
        pos = (ys * w + xs).reshape(r, ph, pw, -1)
        wt = (wy * wx).reshape(r, ph, pw, -1) * ok[:, None, None, None]
        cout = c // (ph * pw) if self.position_sensitive else c
        chan = xp.arange(cout)[:, None, None]
        if self.position_sensitive:
            chan = (chan * ph + xp.arange(ph)[:, None]) * pw + xp.arange(pw)
        base = (xp.clip(batch, 0, n - 1)[:, None, None, None] * c + chan[None]) * (h * w)
        return base[..., None] + pos[:, None], wt[:, None]

    def forward(self, xp, inputs, aux, is_train):
        data, rois = inputs
        idx, wt = self._samples(xp, data, rois)
        flat = data.reshape(-1)
        out = xp.empty(idx.shape[:4], data.dtype)
        for sl in _chunks(idx.shape[0], int(np.prod(idx.shape[1:]))):
            out[sl] = (flat[idx[sl]] * wt[sl]).sum(axis=-1)
        return [out]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        data, rois = inputs
        dx = None
        if need[0]:
            idx, wt = self._samples(xp, data, rois)
            dx = _scatter_add(xp, data.shape, xp.broadcast_to(idx, idx.shape),
                              xp.broadcast_to(out_grads[0][..., None] * wt, idx.shape),
                              data.dtype)
        return [dx, xp.zeros_like(rois) if need[1] else None]


@register
class RROIAlign(Operator):
    """Rotated roi align (``contrib.RROIAlign``), as MXNet 1.9.1's CPU kernel.

    rois (R, 6) ``[batch, cx, cy, w, h, angle in degrees]`` scaled by ``spatial_scale``
    (no rounding; w and h at least 1); each of the ``pooled_size`` bins averages a grid of
    ``sampling_ratio`` (<= 0: ``ceil(roi size / bins)``) samples per side, taken in the roi's
    frame and rotated by the angle about its centre (``y = yy cos - xx sin + cy``,
    ``x = yy sin + xx cos + cx``); samples beyond one pixel outside the map count as 0, the
    others are clamped and interpolated bilinearly. Gradient: data (bilinear weights); rois
    none. Deliberate difference: MXNet 1.9.1 registers no gradient (binding one fails).
    """

    name = '_contrib_RROIAlign'
    pooled_size = Param('shape', doc='output bins (height, width)')
    spatial_scale = Param(float, doc='ratio of the feature map to the image size')
    sampling_ratio = Param(int, -1, doc='samples per bin side (<= 0: adaptive)')

    def check(self):
        if len(self.pooled_size) != 2 or min(self.pooled_size) <= 0:
            raise ParameterError('%s: pooled_size must be (height, width) of positive ints, '
                                 'got %s' % (self.name, self.pooled_size))

    def list_arguments(self):
        return ['data', 'rois']

    def infer_shape(self, in_shapes):
        d, r = in_shapes
        if d is not None and len(d) != 4:
            raise ShapeError('%s: input %r must be (N, C, H, W), got %s' % (self.name, 'data',
                                                                            tuple(d)))
        if r is not None and (len(r) != 2 or r[1] != 6):
            raise ShapeError('%s: input %r must be (R, 6), got %s' % (self.name, 'rois',
                                                                      tuple(r)))
        out = None if d is None or r is None else (r[0], d[1]) + tuple(self.pooled_size)
        return [d, r], [out], []

    def infer_type(self, in_types):
        t = in_types[0] if in_types[0] is not None else in_types[1]
        return [t, t], [t], []

    def _taps(self, rois, h, w, dtype):
        """Per roi (host loop; the grid size depends on the roi): corner indices, weights."""
        ph, pw = self.pooled_size
        dt = np.dtype(dtype).type
        out = []
        for roi in rois:
            sc = dt(self.spatial_scale)
            cx, cy = dt(roi[1]) * sc, dt(roi[2]) * sc
            rw = max(dt(roi[3]) * sc, dt(1))
            rh = max(dt(roi[4]) * sc, dt(1))
            theta = dt(roi[5]) * dt(np.pi) / dt(180.0)
            bh, bw = rh / dt(ph), rw / dt(pw)
            gh = self.sampling_ratio if self.sampling_ratio > 0 else int(np.ceil(rh / ph))
            gw = self.sampling_ratio if self.sampling_ratio > 0 else int(np.ceil(rw / pw))
            iy = (np.arange(gh) + dt(0.5)).astype(dtype) * bh / dt(gh)
            ix = (np.arange(gw) + dt(0.5)).astype(dtype) * bw / dt(gw)
            yy = (-rh / dt(2) + np.arange(ph).astype(dtype) * bh)[:, None, None, None] + \
                iy[None, None, :, None]
            xx = (-rw / dt(2) + np.arange(pw).astype(dtype) * bw)[None, :, None, None] + \
                ix[None, None, None, :]
            cos, sin = np.cos(theta), np.sin(theta)
            y = yy * cos - xx * sin + cy
            x = yy * sin + xx * cos + cx                        # (ph, pw, gh, gw)
            inside = ~((y < -1) | (y > h) | (x < -1) | (x > w))
            y = np.maximum(y, 0)
            x = np.maximum(x, 0)
            y0 = y.astype(np.int64)
            x0 = x.astype(np.int64)
            yc = y0 >= h - 1
            xc = x0 >= w - 1
            y0 = np.where(yc, h - 1, y0)
            x0 = np.where(xc, w - 1, x0)
            y1 = np.where(yc, h - 1, y0 + 1)
            x1 = np.where(xc, w - 1, x0 + 1)
            ly = np.where(yc, 0, y - y0).astype(dtype)
            lx = np.where(xc, 0, x - x0).astype(dtype)
            m = inside.astype(dtype)
            wts = [(1 - ly) * (1 - lx) * m, (1 - ly) * lx * m, ly * (1 - lx) * m, ly * lx * m]
            out.append((int(roi[0]), [(y0, x0), (y0, x1), (y1, x0), (y1, x1)], wts, gh * gw))
        return out

    def forward(self, xp, inputs, aux, is_train):
        data, rois = inputs
        n, c, h, w = data.shape
        host = rois.get() if hasattr(rois, 'get') else np.asarray(rois)
        res = []
        for b, corners, wts, count in self._taps(host, h, w, data.dtype):
            acc = 0
            for (yi, xi), wt in zip(corners, wts):
                acc = acc + data[b][:, xp.asarray(yi), xp.asarray(xi)] * xp.asarray(wt)
            res.append(acc.sum(axis=(3, 4)) / data.dtype.type(count))
        out = xp.stack(res) if res else xp.zeros((0, c) + tuple(self.pooled_size), data.dtype)
        return [out.astype(data.dtype, copy=False)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        data, rois = inputs
        res = [None, xp.zeros_like(rois) if need[1] else None]
        if not need[0]:
            return res
        n, c, h, w = data.shape
        host = rois.get() if hasattr(rois, 'get') else np.asarray(rois)
        gd = xp.zeros(data.shape, data.dtype)
        for r, (b, corners, wts, count) in enumerate(self._taps(host, h, w, data.dtype)):
            g = out_grads[0][r][:, :, :, None, None] / data.dtype.type(count)
            for (yi, xi), wt in zip(corners, wts):
                shape = (c,) + yi.shape
                ci = xp.broadcast_to(xp.arange(c)[:, None, None, None, None], shape)
                yb = xp.broadcast_to(xp.asarray(yi)[None], shape)
                xb = xp.broadcast_to(xp.asarray(xi)[None], shape)
                scatter_add(xp, gd[b], (ci, yb, xb), (g * xp.asarray(wt)).astype(data.dtype))
        res[0] = gd
        return res
