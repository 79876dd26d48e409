"""PSROIPooling and DeformablePSROIPooling (ops/psroi.py) against loop references written from
MXNet 1.9.1's CPU kernels, plus shape errors. MXNet's values: golden cases splitidx_psroi*,
splitidx_dpsroi* (tests/golden/graphs_compute_split_index.py)."""
import math

import numpy as np
import pytest

import symgraph as mx
from _refs import _rois
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
