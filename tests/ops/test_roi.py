"""ROIPooling, ROIAlign (straight ports of MXNet's per-element loops) and RROIAlign (written from
MXNet 1.9.1's CPU kernel; golden cases splitidx_rroi* in
tests/golden/graphs_compute_split_index.py) of ops/roi.py against naive loop references, plus
shape errors."""
import math

import numpy as np
import pytest

import symgraph as mx
from _refs import _rois
from harness import case_tests, OpCase
from symgraph.opdef import ShapeError, get_op


# ----------------------------------------------------------------------------------
# ROI pooling references: straight ports of MXNet's per-element loops
# ----------------------------------------------------------------------------------
def _c_round(v):
    return math.floor(abs(v) + 0.5) * (1 if v >= 0 else -1)


def naive_roi_pool(pooled_size, spatial_scale):
    def ref(data, rois):
        n, c, h, w = data.shape
        ph_n, pw_n = pooled_size
        out = np.zeros((len(rois), c, ph_n, pw_n))
        s = float(np.float32(spatial_scale))
        for r, roi in enumerate(rois):
            b = int(roi[0])
            x1, y1, x2, y2 = (_c_round(v * s) for v in roi[1:])
            bh = max(y2 - y1 + 1, 1) / ph_n
            bw = max(x2 - x1 + 1, 1) / pw_n
            for ph in range(ph_n):
                for pw in range(pw_n):
                    hs = min(max(math.floor(ph * bh) + y1, 0), h)
                    he = min(max(math.ceil((ph + 1) * bh) + y1, 0), h)
                    ws = min(max(math.floor(pw * bw) + x1, 0), w)
                    we = min(max(math.ceil((pw + 1) * bw) + x1, 0), w)
                    if he > hs and we > ws:
                        out[r, :, ph, pw] = data[b, :, hs:he, ws:we].max(axis=(1, 2))
        return out
    return ref


def naive_roi_align(pooled_size, spatial_scale, sample_ratio=-1, position_sensitive=False,
                    aligned=False):
    def bilinear(img, y, x):
        h, w = img.shape
        if y < -1.0 or y > h or x < -1.0 or x > w:
            return 0.0
        y, x = max(y, 0.0), max(x, 0.0)
        yl, xl = int(y), int(x)
        if yl >= h - 1:
            yh = yl = h - 1
            y = float(yl)
        else:
            yh = yl + 1
        if xl >= w - 1:
            xh = xl = w - 1
            x = float(xl)
        else:
            xh = xl + 1
        ly, lx = y - yl, x - xl
        return ((1 - ly) * (1 - lx) * img[yl, xl] + (1 - ly) * lx * img[yl, xh]
                + ly * (1 - lx) * img[yh, xl] + ly * lx * img[yh, xh])

    def ref(data, rois):
        n, c, h, w = data.shape
        ph_n, pw_n = pooled_size
        cout = c // (ph_n * pw_n) if position_sensitive else c
        out = np.zeros((len(rois), cout, ph_n, pw_n))
        off = 0.5 if aligned else 0.0
        for r, roi in enumerate(rois):
            b = int(roi[0]) if len(roi) == 5 else 0
            if b < 0:
                continue
            x1, y1, x2, y2 = (v * spatial_scale - off for v in roi[-4:])
            rw, rh = x2 - x1, y2 - y1
            if not aligned:
                rw, rh = max(rw, 1.0), max(rh, 1.0)
            gh = sample_ratio if sample_ratio > 0 else math.ceil(rh / ph_n)
            gw = sample_ratio if sample_ratio > 0 else math.ceil(rw / pw_n)
            for co in range(cout):
                for ph in range(ph_n):
                    for pw in range(pw_n):
                        ci = (co * ph_n + ph) * pw_n + pw if position_sensitive else co
                        acc = 0.0
                        for iy in range(gh):
                            y = y1 + ph * rh / ph_n + (iy + 0.5) * rh / ph_n / gh
                            for ix in range(gw):
                                x = x1 + pw * rw / pw_n + (ix + 0.5) * rw / pw_n / gw
                                acc += bilinear(data[b, ci], y, x)
                        out[r, co, ph, pw] = acc / (gh * gw)
        return out
    return ref


def _roi_inputs(rois):
    def make(rng, shapes, dtype):
        return [rng.uniform(-1, 1, shapes[0]), np.array(rois, dtype)]
    return make


ROIS = [[0, 0.0, 0.0, 9.0, 7.0], [1, 2.5, 1.0, 6.4, 9.6], [0, -3.0, 4.0, 3.0, 30.0],
        [1, 5.2, 5.1, 5.3, 5.2], [0, 10.0, 1.0, 14.0, 3.0]]
ROIS4 = [r[1:] for r in ROIS]

ROI_CASES = [
    OpCase('ROIPooling', {'pooled_size': (2, 3), 'spatial_scale': 1.0}, shapes=[(2, 3, 7, 9),
           (5, 5)], inputs=_roi_inputs(ROIS), ref=naive_roi_pool((2, 3), 1.0), grad=(0,)),
    OpCase('ROIPooling', {'pooled_size': (3, 2), 'spatial_scale': 0.5}, shapes=[(2, 2, 5, 6),
           (5, 5)], inputs=_roi_inputs(ROIS), ref=naive_roi_pool((3, 2), 0.5), grad=(0,)),
    OpCase('_contrib_ROIAlign', {'pooled_size': (2, 3), 'spatial_scale': 1.0},
           shapes=[(2, 3, 7, 9), (5, 5)], inputs=_roi_inputs(ROIS),
           ref=naive_roi_align((2, 3), 1.0), grad=(0,)),
    OpCase('_contrib_ROIAlign', {'pooled_size': (3, 2), 'spatial_scale': 0.5,
                                 'sample_ratio': 2, 'aligned': True},
           shapes=[(2, 2, 5, 6), (5, 5)], inputs=_roi_inputs(ROIS),
           ref=naive_roi_align((3, 2), 0.5, 2, aligned=True), grad=(0,)),
    OpCase('_contrib_ROIAlign', {'pooled_size': (2, 2), 'spatial_scale': 0.5,
                                 'position_sensitive': True},
           shapes=[(2, 8, 5, 6), (5, 5)], inputs=_roi_inputs(ROIS),
           ref=naive_roi_align((2, 2), 0.5, position_sensitive=True), grad=(0,)),
    OpCase('_contrib_ROIAlign', {'pooled_size': (1, 2), 'spatial_scale': 1.0,
                                 'sample_ratio': 3},
           shapes=[(1, 2, 6, 5), (5, 4)], inputs=_roi_inputs(ROIS4),
           ref=naive_roi_align((1, 2), 1.0, 3), grad=(0,)),
    OpCase('_contrib_ROIAlign', {'pooled_size': (2, 2), 'spatial_scale': 1.0},
           shapes=[(2, 2, 5, 6), (2, 5)], inputs=_roi_inputs([[-1, 0, 0, 3, 3],
                                                             [1, 1, 1, 4, 4]]),
           ref=naive_roi_align((2, 2), 1.0), grad=(0,)),
]


# --- RROIAlign -------------------------------------------------------------------------------
def _rroi_ref(pooled, scale, ratio=-1):
    ph_n, pw_n = pooled

    def ref(x, rois):
        n, c, h, w = x.shape
        out = np.zeros((len(rois), c, ph_n, pw_n))
        for r, roi in enumerate(rois):
            b = int(roi[0])
            cx, cy = roi[1] * scale, roi[2] * scale
            rw, rh = max(roi[3] * scale, 1.0), max(roi[4] * scale, 1.0)
            th = roi[5] * math.pi / 180
            bh, bw = rh / ph_n, rw / pw_n
            gh = ratio if ratio > 0 else math.ceil(rh / ph_n)
            gw = ratio if ratio > 0 else math.ceil(rw / pw_n)
            for ph, pw in np.ndindex(ph_n, pw_n):
                acc = np.zeros(c)
                for iy, ix in np.ndindex(gh, gw):
                    yy = -rh / 2 + ph * bh + (iy + 0.5) * bh / gh
                    xx = -rw / 2 + pw * bw + (ix + 0.5) * bw / gw
                    y = yy * math.cos(th) - xx * math.sin(th) + cy
                    xq = yy * math.sin(th) + xx * math.cos(th) + cx
                    if y < -1 or y > h or xq < -1 or xq > w:
                        continue
                    y, xq = max(y, 0.0), max(xq, 0.0)
                    y0, x0 = int(y), int(xq)
                    if y0 >= h - 1:
                        y0 = y1 = h - 1
                        y = float(y0)
                    else:
                        y1 = y0 + 1
                    if x0 >= w - 1:
                        x0 = x1 = w - 1
                        xq = float(x0)
                    else:
                        x1 = x0 + 1
                    ly, lx = y - y0, xq - x0
                    acc += ((1 - ly) * (1 - lx) * x[b, :, y0, x0] + (1 - ly) * lx * x[b, :, y0, x1]
                            + ly * (1 - lx) * x[b, :, y1, x0] + ly * lx * x[b, :, y1, x1])
                out[r, :, ph, pw] = acc / (gh * gw)
        return out
    return ref


_RR = [[0, 3, 3, 4, 2, 30], [1, 2.2, 4.1, 5.5, 3.2, -60], [0, 6.5, 1, 4, 6, 135],
       [1, 0.5, 0.5, 2, 2, 0]]
RROI_CASES = [
    OpCase('_contrib_RROIAlign', dict(pooled_size=(2, 3), spatial_scale=1.0),
           [(2, 3, 6, 7), (4, 6)], inputs=_rois(_RR), ref=_rroi_ref((2, 3), 1.0), grad=(0,)),
    OpCase('_contrib_RROIAlign', dict(pooled_size='(3, 2)', spatial_scale=0.5,
                                      sampling_ratio=2),
           [(2, 2, 5, 4), (4, 6)], inputs=_rois(_RR), ref=_rroi_ref((3, 2), 0.5, 2),
           grad=(0,)),
]


CASES = ROI_CASES + RROI_CASES


test_forward, test_gradient = case_tests(CASES)


def test_rroi_align_shapes_and_errors():
    s = mx.sym.contrib.RROIAlign(mx.sym.var('x'), mx.sym.var('r'), pooled_size=(2, 2),
                                 spatial_scale=0.25)
    assert s.infer_shape(x=(1, 5, 8, 8), r=(3, 6))[1] == [(3, 5, 2, 2)]
    op = get_op('_contrib_RROIAlign')(pooled_size=(2, 2), spatial_scale=1.0)
    with pytest.raises(ShapeError, match=r"'rois' must be \(R, 6\)"):
        op.infer_shape([(1, 5, 8, 8), (3, 5)])
    with pytest.raises(Exception, match='pooled_size'):
        get_op('_contrib_RROIAlign')(pooled_size=(2,), spatial_scale=1.0)
