"""DeformableConvolution and ModulatedDeformableConvolution (ops/deformable.py) against loop
references written from MXNet 1.9.1's CPU kernels, plus shape errors. MXNet's values: golden
cases splitidx_dconv*, splitidx_mdconv* (tests/golden/graphs_compute_split_index.py)."""
import math

import numpy as np
import pytest

import symgraph as mx
from harness import case_tests, OpCase
from symgraph.opdef import ShapeError, get_op


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
