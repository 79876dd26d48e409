"""The position-sensitive / deformable detection operators of ops/deformable.py against loop
references written from MXNet 1.9.1's CPU kernels, plus shape errors. MXNet's values: golden
cases splitidx_psroi* (tests/golden/graphs_compute_split_index.py)."""
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
