"""The position-sensitive, deformable and rotated roi operators (ops/psroi.py,
ops/deformable.py, RROIAlign in ops/roi.py) against loop references written from MXNet
1.9.1's CPU kernels, plus shape errors. MXNet's values: golden cases splitidx_psroi*,
splitidx_dpsroi*, splitidx_dconv*, splitidx_mdconv*, splitidx_rroi*
(tests/golden/graphs_compute_split_index.py)."""
import math

import numpy as np
import pytest

import symgraph as mx
from harness import case_tests, OpCase
from symgraph.opdef import ShapeError, get_op


def _cround(v):
    return math.floor(v + 0.5) if v >= 0 else -math.floor(-v + 0.5)


def _psroi_ref(scale, dim, pooled, group=0):
    group = group or pooled

    def ref(x, rois):
        n, c, h, w = x.shape
        out = np.zeros((len(rois), dim, pooled, pooled), x.dtype)
        for r, roi in enumerate(rois):
            b = int(roi[0])
            x1, y1 = _cround(roi[1]) * scale, _cround(roi[2]) * scale
            x2, y2 = (_cround(roi[3]) + 1) * scale, (_cround(roi[4]) + 1) * scale
            bw, bh = max(x2 - x1, 0.1) / pooled, max(y2 - y1, 0.1) / pooled
            for k in range(dim):
                for ph in range(pooled):
                    for pw in range(pooled):
                        hs = min(max(math.floor(ph * bh + y1), 0), h)
                        he = min(max(math.ceil((ph + 1) * bh + y1), 0), h)
                        ws = min(max(math.floor(pw * bw + x1), 0), w)
                        we = min(max(math.ceil((pw + 1) * bw + x1), 0), w)
                        gh = min(max(math.floor(ph * group / pooled), 0), group - 1)
                        gw = min(max(math.floor(pw * group / pooled), 0), group - 1)
                        ch = (k * group + gh) * group + gw
                        if he > hs and we > ws:
                            out[r, k, ph, pw] = x[b, ch, hs:he, ws:we].mean()
        return out
    return ref


def _rois(rows):
    def make(rng, shapes, dtype):
        return [rng.uniform(-1, 1, shapes[0]), np.array(rows, dtype=np.float64)]
    return make


_R = [[0, 0, 0, 4, 4], [0, 1, 1, 5, 3], [1, 2.5, 0.4, 7, 6.6], [1, 6, 6, 9, 9],
      [0, 3, 3, 3, 3]]

CASES = [
    OpCase('_contrib_PSROIPooling', dict(spatial_scale=1.0, output_dim=2, pooled_size=2),
           [(2, 8, 6, 7), (5, 5)], inputs=_rois(_R), ref=_psroi_ref(1.0, 2, 2), grad=(0,)),
    OpCase('_contrib_PSROIPooling', dict(spatial_scale=0.5, output_dim=3, pooled_size=3,
                                         group_size=2),
           [(2, 12, 5, 5), (5, 5)], inputs=_rois(_R), ref=_psroi_ref(0.5, 3, 3, 2),
           grad=(0,)),
    OpCase('_contrib_PSROIPooling', dict(spatial_scale=0.25, output_dim=1, pooled_size=4),
           [(1, 16, 4, 4), (2, 5)], inputs=_rois([[0, 1, 2, 13, 9], [0, -3, -2, 20, 30]]),
           ref=_psroi_ref(0.25, 1, 4), grad=(0,)),
]

test_forward, test_gradient = case_tests(CASES)


def test_psroi_shapes_and_errors():
    s = mx.sym.contrib.PSROIPooling(mx.sym.var('x'), mx.sym.var('r'), spatial_scale=0.5,
                                    output_dim=4, pooled_size=3)
    assert s.list_arguments() == ['x', 'r']
    assert s.infer_shape(x=(1, 36, 8, 8), r=(7, 5))[1] == [(7, 4, 3, 3)]
    op = get_op('_contrib_PSROIPooling')(spatial_scale=1, output_dim=2, pooled_size=2)
    with pytest.raises(ShapeError, match=r'output_dim \* group_size\*\*2 = 8'):
        op.infer_shape([(1, 9, 4, 4), (2, 5)])
    with pytest.raises(ShapeError, match=r"'rois' must be \(R, 5\)"):
        op.infer_shape([(1, 8, 4, 4), (2, 4)])


# --- deformable convolutions ----------------------------------------------------------------
def _bilinear(img, h, w, zero_border):
    """One sample of a (H, W) map as MXNet's two kernels take it."""
    hh, ww = img.shape
    if zero_border:
        if not (-1 < h < hh and -1 < w < ww):
            return 0.0
        h0, w0 = math.floor(h), math.floor(w)
        lh, lw = h - h0, w - w0

        def v(i, j):
            return img[i, j] if 0 <= i < hh and 0 <= j < ww else 0.0
        return ((1 - lh) * (1 - lw) * v(h0, w0) + (1 - lh) * lw * v(h0, w0 + 1)
                + lh * (1 - lw) * v(h0 + 1, w0) + lh * lw * v(h0 + 1, w0 + 1))
    if not (0 <= h < hh and 0 <= w < ww):
        return 0.0
    h0, w0 = math.floor(h), math.floor(w)
    if h0 >= hh - 1:
        h, h1 = h0, hh - 1
    else:
        h1 = h0 + 1
    if w0 >= ww - 1:
        w, w1 = w0, ww - 1
    else:
        w1 = w0 + 1
    lh, lw = h - h0, w - w0
    return ((1 - lh) * (1 - lw) * img[h0, w0] + (1 - lh) * lw * img[h0, w1]
            + lh * (1 - lw) * img[h1, w0] + lh * lw * img[h1, w1])


def _dconv_ref(kernel, num_filter, stride=(1, 1), dilate=(1, 1), pad=(0, 0), groups=1, dg=1,
               mask=False, bias=True):
    kh, kw = kernel

    def ref(*args):
        x, off = args[0], args[1]
        m = args[2] if mask else None
        wt = args[3 if mask else 2]
        b = args[-1] if bias else None
        n, c, h, w = x.shape
        ho = (h + 2 * pad[0] - dilate[0] * (kh - 1) - 1) // stride[0] + 1
        wo = (w + 2 * pad[1] - dilate[1] * (kw - 1) - 1) // stride[1] + 1
        cols = np.zeros((n, c, kh * kw, ho, wo))
        for bb, ch, i, j, oh, ow in np.ndindex(n, c, kh, kw, ho, wo):
            g = ch // (c // dg)
            k = i * kw + j
            dh = off[bb, g * 2 * kh * kw + 2 * k, oh, ow]
            dw = off[bb, g * 2 * kh * kw + 2 * k + 1, oh, ow]
            hp = oh * stride[0] - pad[0] + i * dilate[0] + dh
            wp = ow * stride[1] - pad[1] + j * dilate[1] + dw
            v = _bilinear(x[bb, ch], hp, wp, mask)
            if mask:
                v *= m[bb, g * kh * kw + k, oh, ow]
            cols[bb, ch, k, oh, ow] = v
        out = np.zeros((n, num_filter, ho, wo))
        fg, cg = num_filter // groups, c // groups
        for bb, f in np.ndindex(n, num_filter):
            gg = f // fg
            out[bb, f] = np.einsum('ck,ckhw->hw', wt[f].reshape(cg, -1),
                                   cols[bb, gg * cg:(gg + 1) * cg])
            if b is not None:
                out[bb, f] += b[f]
        return out
    return ref


def _dconv_inputs(scale):
    def make(rng, shapes, dtype):
        arrs = [rng.uniform(-1, 1, s) for s in shapes]
        arrs[1] = rng.normal(0, scale, shapes[1])
        return arrs
    return make


CASES_DCONV = [
    OpCase('_contrib_DeformableConvolution', dict(kernel=(3, 3), pad=(1, 1), num_filter=4),
           [(2, 4, 5, 6), (2, 18, 5, 6), (4, 4, 3, 3), (4,)], inputs=_dconv_inputs(1.5),
           ref=_dconv_ref((3, 3), 4, pad=(1, 1)), rtol=1e-4, atol=1e-5),
    OpCase('_contrib_DeformableConvolution', dict(kernel=(2, 3), stride=(2, 1), dilate=(1, 2),
                                                  num_filter=4, num_group=2,
                                                  num_deformable_group=2, no_bias=True),
           [(1, 4, 6, 7), (1, 24, 3, 3), (4, 2, 2, 3)], inputs=_dconv_inputs(2.0),
           ref=_dconv_ref((2, 3), 4, (2, 1), (1, 2), groups=2, dg=2, bias=False),
           rtol=1e-4, atol=1e-5),
    OpCase('_contrib_ModulatedDeformableConvolution', dict(kernel=(3, 3), pad=(1, 1),
                                                           num_filter=3),
           [(2, 4, 5, 6), (2, 18, 5, 6), (2, 9, 5, 6), (3, 4, 3, 3), (3,)],
           inputs=_dconv_inputs(1.5), ref=_dconv_ref((3, 3), 3, pad=(1, 1), mask=True),
           rtol=1e-4, atol=1e-5),
    OpCase('_contrib_ModulatedDeformableConvolution',
           dict(kernel=(2, 2), stride=(2, 2), num_filter=4, num_group=2,
                num_deformable_group=2, no_bias=True),
           [(1, 4, 6, 7), (1, 16, 3, 3), (1, 8, 3, 3), (4, 2, 2, 2)],
           inputs=_dconv_inputs(2.0),
           ref=_dconv_ref((2, 2), 4, (2, 2), groups=2, dg=2, mask=True, bias=False),
           rtol=1e-4, atol=1e-5),
]

test_forward_dconv, test_gradient_dconv = case_tests(CASES_DCONV)


def test_deformable_convolution_shapes_and_errors():
    s = mx.sym.contrib.DeformableConvolution(mx.sym.var('x'), mx.sym.var('o'), kernel=(3, 3),
                                             num_filter=5, name='dc')
    assert s.list_arguments() == ['x', 'o', 'dc_weight', 'dc_bias']
    _, out, _ = s.infer_shape(x=(2, 4, 7, 8), o=(2, 18, 5, 6))
    assert out == [(2, 5, 5, 6)]
    s = mx.sym.contrib.ModulatedDeformableConvolution(
        mx.sym.var('x'), mx.sym.var('o'), mx.sym.var('m'), kernel=(3, 3), num_filter=5,
        no_bias=True, name='mdc')
    assert s.list_arguments() == ['x', 'o', 'm', 'mdc_weight']
    arg, _, _ = s.infer_shape(x=(2, 4, 7, 8))
    assert arg == [(2, 4, 7, 8), (2, 18, 5, 6), (2, 9, 5, 6), (5, 4, 3, 3)]
    op = get_op('_contrib_DeformableConvolution')(kernel=(3, 3), num_filter=4)
    with pytest.raises(ShapeError, match="'offset' has shape"):
        op.infer_shape([(1, 4, 5, 5), (1, 9, 3, 3), None, None])
    with pytest.raises(Exception, match='only 2-D kernels'):
        get_op('_contrib_DeformableConvolution')(kernel=(3,), num_filter=4)
    with pytest.raises(ShapeError, match='divisible'):
        get_op('_contrib_DeformableConvolution')(kernel=(1, 1), num_filter=4,
                                                 num_group=3).infer_shape([(1, 4, 5, 5)] +
                                                                          [None] * 3)


# --- DeformablePSROIPooling -------------------------------------------------------------------
def _dpsroi_ref(scale, dim, group, pooled, part=0, spp=1, std=0.0, no_trans=False):
    part = part or pooled

    def ref(x, rois, trans=None):
        n, c, h, w = x.shape
        out = np.zeros((len(rois), dim, pooled, pooled))
        ncls = 1 if no_trans else trans.shape[1] // 2
        for r, roi in enumerate(rois):
            b = int(roi[0])
            x1 = _cround(roi[1]) * scale - 0.5
            y1 = _cround(roi[2]) * scale - 0.5
            x2 = (_cround(roi[3]) + 1) * scale - 0.5
            y2 = (_cround(roi[4]) + 1) * scale - 0.5
            rw, rh = max(x2 - x1, 0.1), max(y2 - y1, 0.1)
            bw, bh = rw / pooled, rh / pooled
            for k, ph, pw in np.ndindex(dim, pooled, pooled):
                cls = k // (dim // ncls)
                qh, qw = math.floor(ph / pooled * part), math.floor(pw / pooled * part)
                tx = 0 if no_trans else trans[r, 2 * cls, qh, qw] * std
                ty = 0 if no_trans else trans[r, 2 * cls + 1, qh, qw] * std
                ws = pw * bw + x1 + tx * rw
                hs = ph * bh + y1 + ty * rh
                gh = min(max(math.floor(ph * group / pooled), 0), group - 1)
                gw = min(max(math.floor(pw * group / pooled), 0), group - 1)
                ch = (k * group + gh) * group + gw
                total, count = 0.0, 0
                for ih, iw in np.ndindex(spp, spp):
                    sw, sh = ws + iw * bw / spp, hs + ih * bh / spp
                    if sw < -0.5 or sw > w - 0.5 or sh < -0.5 or sh > h - 0.5:
                        continue
                    sw, sh = min(max(sw, 0), w - 1), min(max(sh, 0), h - 1)
                    xa, xb, ya, yb = (math.floor(sw), math.ceil(sw), math.floor(sh),
                                      math.ceil(sh))
                    ddx, ddy = sw - xa, sh - ya
                    img = x[b, ch]
                    total += ((1 - ddx) * (1 - ddy) * img[ya, xa] + (1 - ddx) * ddy * img[yb, xa]
                              + ddx * (1 - ddy) * img[ya, xb] + ddx * ddy * img[yb, xb])
                    count += 1
                out[r, k, ph, pw] = total / count if count else 0.0
        return out
    return ref


def _dps_inputs(rows):
    def make(rng, shapes, dtype):
        arrs = [rng.uniform(-1, 1, shapes[0]), np.array(rows, np.float64)]
        return arrs + [rng.normal(0, 1, s) for s in shapes[2:]]
    return make


_DR = [[0, 0, 0, 4, 4], [0, 1, 1, 5, 3], [1, 2.5, 0.4, 7, 6.6], [1, 5, 5, 9, 8]]
CASES_DPS = [
    OpCase('_contrib_DeformablePSROIPooling',
           dict(spatial_scale=1.0, output_dim=2, group_size=2, pooled_size=2, trans_std=0.1),
           [(2, 8, 6, 7), (4, 5), (4, 2, 2, 2)], inputs=_dps_inputs(_DR),
           ref=_dpsroi_ref(1.0, 2, 2, 2, std=0.1), grad=(0, 2), rtol=1e-4, atol=1e-5),
    OpCase('_contrib_DeformablePSROIPooling',
           dict(spatial_scale=0.5, output_dim=4, group_size=3, pooled_size=3, part_size=2,
                sample_per_part=2, trans_std=0.2),
           [(2, 36, 5, 5), (4, 5), (4, 4, 2, 2)], inputs=_dps_inputs(_DR),
           ref=_dpsroi_ref(0.5, 4, 3, 3, part=2, spp=2, std=0.2), grad=(0, 2),
           rtol=1e-4, atol=1e-5),
    OpCase('_contrib_DeformablePSROIPooling',
           dict(spatial_scale=1.0, output_dim=2, group_size=2, pooled_size=2, no_trans=True),
           [(2, 8, 6, 7), (4, 5)], inputs=_dps_inputs(_DR),
           ref=_dpsroi_ref(1.0, 2, 2, 2, no_trans=True), grad=(0,), rtol=1e-4, atol=1e-5),
]

test_forward_dps, test_gradient_dps = case_tests(CASES_DPS)


def test_deformable_psroi_structure_and_errors():
    s = mx.sym.contrib.DeformablePSROIPooling(mx.sym.var('x'), mx.sym.var('r'),
                                              mx.sym.var('t'), spatial_scale=1.0,
                                              output_dim=2, group_size=2, pooled_size=2)
    assert s.list_arguments() == ['x', 'r', 't'] and len(s.list_outputs()) == 1
    assert s.infer_shape(x=(1, 8, 5, 5), r=(3, 5), t=(3, 2, 2, 2))[1] == [(3, 2, 2, 2)]
    op = get_op('_contrib_DeformablePSROIPooling')(spatial_scale=1.0, output_dim=2,
                                                   group_size=2, pooled_size=2, no_trans=True)
    assert op.list_arguments() == ['data', 'rois']
    op = get_op('_contrib_DeformablePSROIPooling')(spatial_scale=1.0, output_dim=2,
                                                   group_size=2, pooled_size=2)
    with pytest.raises(ShapeError, match="'trans' must be"):
        op.infer_shape([(1, 8, 5, 5), (3, 5), (3, 2, 3, 3)])


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
CASES_RROI = [
    OpCase('_contrib_RROIAlign', dict(pooled_size=(2, 3), spatial_scale=1.0),
           [(2, 3, 6, 7), (4, 6)], inputs=_rois(_RR), ref=_rroi_ref((2, 3), 1.0), grad=(0,)),
    OpCase('_contrib_RROIAlign', dict(pooled_size='(3, 2)', spatial_scale=0.5,
                                      sampling_ratio=2),
           [(2, 2, 5, 4), (4, 6)], inputs=_rois(_RR), ref=_rroi_ref((3, 2), 0.5, 2),
           grad=(0,)),
]

test_forward_rroi, test_gradient_rroi = case_tests(CASES_RROI)


def test_rroi_align_shapes_and_errors():
    s = mx.sym.contrib.RROIAlign(mx.sym.var('x'), mx.sym.var('r'), pooled_size=(2, 2),
                                 spatial_scale=0.25)
    assert s.infer_shape(x=(1, 5, 8, 8), r=(3, 6))[1] == [(3, 5, 2, 2)]
    op = get_op('_contrib_RROIAlign')(pooled_size=(2, 2), spatial_scale=1.0)
    with pytest.raises(ShapeError, match=r"'rois' must be \(R, 6\)"):
        op.infer_shape([(1, 5, 8, 8), (3, 5)])
    with pytest.raises(Exception, match='pooled_size'):
        get_op('_contrib_RROIAlign')(pooled_size=(2,), spatial_scale=1.0)
