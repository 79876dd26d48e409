"""ONNX converters of the region-of-interest operators: ``ROIPooling``,
``_contrib_ROIAlign``, ``_contrib_RROIAlign``, ``_contrib_PSROIPooling`` and
``_contrib_DeformablePSROIPooling`` (imported by :mod:`symgraph.onnx._convert_detection`).

``MaxRoiPool`` and ``RoiAlign`` where ONNX Runtime runs them; otherwise (their opset-22
versions, which ONNX Runtime 1.32 has no kernels for, other dtypes, ROIAlign's half-pixel
mode before opset 16) and for PSROIPooling, which ONNX has no operator for, an ONNX Loop
over the ROIs whose body pools one ROI from plain operators (masked maxima; averaging
matrices and MatMuls). A ROI whose image index is outside the batch pools zeros, as
symgraph's operators.
"""
import numpy as np

from ._convert_misc import (cast, claim, i64, onnx_type, reduce, reshape, scalar, slice_axis,
                            unsqueeze)
from ._registry import converter

__all__ = []


def _f32(v):
    """A parameter as MXNet's C float holds it."""
    return float(np.float32(v))


def _col(g, x, k, axis=-1):
    return g.add('Gather', [x, scalar(g, k, np.int64)], axis=axis)[0]


def _binary(g, op, a, b):
    return g.add(op, [a, b])[0]


# ----------------------------------------------------------------------- ROI pooling
#: ONNX Runtime 1.32 has no kernels for the opset-22 versions of MaxRoiPool and RoiAlign
#: (their bfloat16 revisions): from opset 22 the ROI operators are exported as a Loop
#: over the ROIs of plain operators instead
_NATIVE_ROI_OPSET = 21


def _per_roi_loop(g, node, rois, body_fn, out_shape, dtype):
    """An ONNX Loop over the rows of ``rois`` whose body computes ``body_fn(roi)`` (roi
    the (cols,) row) as a (C, PH, PW) array; the results stacked (R, C, PH, PW)."""
    from onnx import helper
    it, cond = g.fresh('roi_index'), g.fresh('roi_cond')
    saved, g.nodes = g.nodes, []
    try:
        roi = g.add('Gather', [rois, it], axis=0)[0]
        result = body_fn(roi)
        cond_out = g.add('Identity', [cond])[0]
    finally:
        body_nodes, g.nodes = g.nodes, saved
    body = helper.make_graph(
        body_nodes, g.fresh('roi_body'),
        [helper.make_tensor_value_info(it, onnx_type(np.int64), []),
         helper.make_tensor_value_info(cond, onnx_type(np.bool_), [])],
        [helper.make_tensor_value_info(cond_out, onnx_type(np.bool_), []),
         helper.make_tensor_value_info(result, onnx_type(dtype), list(out_shape))])
    count = g.add('Gather', [g.add('Shape', [rois])[0], scalar(g, 0, np.int64)], axis=0)[0]
    true = g.add('Constant', [], value=np.array(True))[0]
    return g.add('Loop', [count, true], 1, body=body)[0]


def _c_round(g, v, wt):
    """C round (halves away from zero; ONNX Round takes them to even)."""
    mag = g.add('Floor', [g.add('Add', [g.add('Abs', [v])[0], scalar(g, 0.5, wt)])[0]])[0]
    return g.add('Mul', [g.add('Sign', [v])[0], mag])[0]


def _rounder(g, dt, wt):
    """``x -> x`` rounded to the data's dtype ``dt`` when the work dtype ``wt`` is wider
    (float16 data: ROIPooling's bin arithmetic is float16 arithmetic)."""
    if dt == wt:
        return lambda x: x
    return lambda x: cast(g, cast(g, x, dt), wt)


def _pool_bins(g, lo_coord, hi_coord, scale, pooled, size, dt, wt):
    """ROIPooling's clipped bin edges along one axis: (start, end) int64 (pooled,), the
    arithmetic in the data's dtype ``dt`` (computed in ``wt``)."""
    rnd = _rounder(g, dt, wt)
    lo = cast(g, _c_round(g, rnd(g.add('Mul', [lo_coord, scale])[0]), wt), np.int64)
    hi = cast(g, _c_round(g, rnd(g.add('Mul', [hi_coord, scale])[0]), wt), np.int64)
    length = g.add('Max', [g.add('Add', [g.add('Sub', [hi, lo])[0], i64(g, 1)])[0],
                           i64(g, 1)])[0]
    binsz = rnd(g.add('Div', [rnd(cast(g, length, wt)), scalar(g, pooled, wt)])[0])
    k = g.const(np.arange(pooled, dtype=wt))
    start = g.add('Floor', [rnd(g.add('Mul', [k, binsz])[0])])[0]
    end = g.add('Ceil', [rnd(g.add('Mul', [g.add('Add', [k, scalar(g, 1, wt)])[0],
                                           binsz])[0])])[0]
    bounds = []
    for v in (start, end):
        v = g.add('Add', [cast(g, v, np.int64), lo])[0]
        bounds.append(g.add('Clip', [v, i64(g, 0), i64(g, size)])[0])
    return bounds


def _roi_pool_loop(g, node, data, rois):
    """Max pooling of each ROI as separable masked maxima (columns, then rows) of its
    image, the bins computed as ROIPooling's: exact, as MaxRoiPool. float16 data is
    pooled in float32 (maxima are exact) with the bin arithmetic rounded to float16."""
    n, c, h, w = g.in_shape(node, 0)
    ph, pw = g.attr(node, 'pooled_size')
    dt = g.in_dtype(node, 0)
    wt = np.dtype(np.float64 if dt == np.float64 else np.float32)
    if dt != wt:
        data, rois = cast(g, data, wt), cast(g, rois, wt)
    scale = scalar(g, float(dt.type(_f32(g.attr(node, 'spatial_scale')))), wt)
    neg_inf = scalar(g, -np.inf, wt)

    def body(roi):
        b = cast(g, g.add('Gather', [roi, scalar(g, 0, np.int64)], axis=0)[0], np.int64)
        img = g.add('Gather', [data, b], axis=0)[0]                          # (C, H, W)
        coord = [g.add('Gather', [roi, scalar(g, k, np.int64)], axis=0)[0] for k in range(5)]
        ws, we = _pool_bins(g, coord[1], coord[3], scale, pw, w, dt, wt)
        hs, he = _pool_bins(g, coord[2], coord[4], scale, ph, h, dt, wt)

        def inside(start, end, size):
            pos = g.const(np.arange(size, dtype=np.int64).reshape(1, size))
            return g.add('And', [g.add('GreaterOrEqual', [pos, unsqueeze(g, start, [1])])[0],
                                 g.add('Less', [pos, unsqueeze(g, end, [1])])[0]])[0]
        cols = reshape(g, inside(ws, we, w), [1, 1, pw, w])
        rows = reshape(g, inside(hs, he, h), [1, ph, h, 1])
        m1 = reduce(g, 'ReduceMax', g.add('Where', [cols, unsqueeze(g, img, [2]), neg_inf])[0],
                    [3], keepdims=0)                                     # (C, H, PW)
        m2 = reduce(g, 'ReduceMax', g.add('Where', [rows, unsqueeze(g, m1, [1]), neg_inf])[0],
                    [2], keepdims=0)                                     # (C, PH, PW)
        empty = g.add('Or', [unsqueeze(g, g.add('LessOrEqual', [he, hs])[0], [1]),
                             unsqueeze(g, g.add('LessOrEqual', [we, ws])[0], [0])])[0]
        return g.add('Where', [empty, scalar(g, 0, wt), m2])[0]
    out = _per_roi_loop(g, node, rois, body, (c, ph, pw), wt)
    return out if dt == wt else cast(g, out, dt)


def _align_axis(g, start, size, pooled, grid, limit, dt):
    """ROIAlign's averaging matrix (pooled, limit) along one axis of one ROI: the bilinear
    weights of its ``grid`` samples per bin (ops/roi.py's arithmetic and order)."""
    t = dt.type
    binsz = g.add('Div', [size, scalar(g, pooled, dt)])[0]
    k = g.const(np.arange(pooled, dtype=dt).reshape(pooled, 1))
    gmax = g.add('Reshape', [grid, i64(g, [])])[0]
    i = cast(g, g.add('Range', [scalar(g, 0, np.int64), gmax, scalar(g, 1, np.int64)])[0], dt)
    i = unsqueeze(g, i, [0])                                            # (1, G)
    gf = cast(g, grid, dt)
    v = g.add('Add', [g.add('Add', [start, g.add('Mul', [k, binsz])[0]])[0],
                      g.add('Div', [g.add('Mul', [g.add('Add', [i, scalar(g, 0.5, dt)])[0],
                                                  binsz])[0], gf])[0]])[0]   # (P, G)
    ok = g.add('And', [g.add('GreaterOrEqual', [v, scalar(g, -1.0, dt)])[0],
                       g.add('LessOrEqual', [v, scalar(g, t(limit), dt)])[0]])[0]
    v = g.add('Max', [v, scalar(g, 0, dt)])[0]
    low = cast(g, g.add('Floor', [v])[0], np.int64)
    top = g.add('GreaterOrEqual', [low, i64(g, limit - 1)])[0]
    low = g.add('Where', [top, i64(g, limit - 1), low])[0]
    high = g.add('Where', [top, i64(g, limit - 1), g.add('Add', [low, i64(g, 1)])[0]])[0]
    v = g.add('Where', [top, cast(g, low, dt), v])[0]
    lw = g.add('Sub', [v, cast(g, low, dt)])[0]
    hw = g.add('Sub', [scalar(g, 1, dt), lw])[0]
    zero = scalar(g, 0, dt)
    pos = g.const(np.arange(limit, dtype=np.int64).reshape(1, 1, limit))

    def spread(index, weight):                                           # (P, limit)
        hit = cast(g, g.add('Equal', [unsqueeze(g, index, [2]), pos])[0], dt)
        wt = unsqueeze(g, g.add('Where', [ok, weight, zero])[0], [2])
        return reduce(g, 'ReduceSum', g.add('Mul', [hit, wt])[0], [1], keepdims=0)
    return g.add('Add', [spread(low, hw), spread(high, lw)])[0]


def _roi_align_loop(g, node, data, boxes, batch):
    """ROIAlign per ROI as two MatMuls with its averaging matrices (separable bilinear
    sampling), the sample grid adaptive or fixed as the operator's."""
    n, c, h, w = g.in_shape(node, 0)
    ph, pw = g.attr(node, 'pooled_size')
    dt = g.in_dtype(node, 0)
    rois = g.add('Concat', [unsqueeze(g, cast(g, batch, dt), [1]), boxes], axis=1)[0]
    aligned = g.attr(node, 'aligned')
    ratio = g.attr(node, 'sample_ratio')

    def body(roi):
        b = cast(g, g.add('Gather', [roi, scalar(g, 0, np.int64)], axis=0)[0], np.int64)
        img = g.add('Gather', [data, b], axis=0)[0]
        scale = scalar(g, _f32(g.attr(node, 'spatial_scale')), dt)
        off = scalar(g, 0.5 if aligned else 0.0, dt)
        x1, y1, x2, y2 = (g.add('Sub', [g.add('Mul', [g.add('Gather', [
            roi, scalar(g, k, np.int64)], axis=0)[0], scale])[0], off])[0] for k in range(1, 5))
        rw, rh = g.add('Sub', [x2, x1])[0], g.add('Sub', [y2, y1])[0]
        if not aligned:
            rw = g.add('Max', [rw, scalar(g, 1, dt)])[0]
            rh = g.add('Max', [rh, scalar(g, 1, dt)])[0]
        if ratio > 0:
            gh = gw = i64(g, [ratio])
        else:
            gh = cast(g, g.add('Ceil', [g.add('Div', [rh, scalar(g, ph, dt)])[0]])[0], np.int64)
            gw = cast(g, g.add('Ceil', [g.add('Div', [rw, scalar(g, pw, dt)])[0]])[0], np.int64)
            gh, gw = reshape(g, gh, [1]), reshape(g, gw, [1])
        ay = _align_axis(g, y1, rh, ph, gh, h, dt)                        # (PH, H)
        ax = _align_axis(g, x1, rw, pw, gw, w, dt)                        # (PW, W)
        count = cast(g, g.add('Mul', [gh, gw])[0], dt)
        rows = g.add('MatMul', [ay, img])[0]                              # (C, PH, W)
        out = g.add('MatMul', [rows, g.add('Transpose', [ax], perm=[1, 0])[0]])[0]
        return g.add('Div', [out, count])[0]
    return _per_roi_loop(g, node, rois, body, (c, ph, pw), dt)


def _roi_batch(g, node, rois, rows):
    """(batch indices int64 clamped to [0, N), (R, 1, 1, 1) 0/1 mask of the valid ones):
    a batch index outside the data pools nothing (zeros, as symgraph's operators)."""
    dt = g.in_dtype(node, 0)
    if rows == 4:
        return None, None
    # the batch size at run time (a symbolic batch axis may differ from the export's)
    n = g.add('Gather', [g.add('Shape', [g.inputs(node)[0]])[0], scalar(g, 0, np.int64)],
              axis=0)[0]
    b = cast(g, _col(g, rois, 0), np.int64)
    ok = g.add('And', [_binary(g, 'GreaterOrEqual', b, scalar(g, 0, np.int64)),
                       _binary(g, 'Less', b, n)])[0]
    clamped = g.add('Clip', [b, scalar(g, 0, np.int64),
                             g.add('Sub', [n, scalar(g, 1, np.int64)])[0]])[0]
    return clamped, reshape(g, cast(g, ok, dt), [-1, 1, 1, 1])


@converter('ROIPooling')
def _roi_pooling(g, node):
    """ONNX MaxRoiPool (its bins are MXNet's: C rounding of the scaled corners, floor and
    ceil of the bin edges, empty bins 0); from opset 22, and for data other than float32,
    a Loop over the ROIs (:func:`_roi_pool_loop`). The hidden ``maxidx`` output (for the
    gradient) is not exported."""
    data, rois = g.inputs(node)
    dt = g.in_dtype(node, 0)
    b, ok = _roi_batch(g, node, rois, 5)
    rois = g.add('Concat', [unsqueeze(g, cast(g, b, dt), [1]), slice_axis(g, rois, 1, 1, 5)],
                 axis=1)[0]
    if g.opset <= _NATIVE_ROI_OPSET and dt == np.float32:       # (ONNX Runtime: float32)
        out = g.add('MaxRoiPool', [data, rois], pooled_shape=list(g.attr(node, 'pooled_size')),
                    spatial_scale=_f32(g.attr(node, 'spatial_scale')))[0]
    else:
        out = _roi_pool_loop(g, node, data, rois)
    g.add('Mul', [out, ok], g.outputs(node)[:1])


@converter('_contrib_ROIAlign')
def _roi_align(g, node):
    """ONNX RoiAlign, average mode: aligned=False is 'output_half_pixel' (ROIs at least
    1x1), aligned=True 'half_pixel' (opset 16); sample_ratio <= 0 is the adaptive 0.
    position_sensitive (R-FCN) pools every channel and gathers, for each bin, its channel
    group's value. From opset 22 (and for aligned=True below opset 16) a Loop over the
    ROIs (:func:`_roi_align_loop`)."""
    data, rois = g.inputs(node)
    ph, pw = g.attr(node, 'pooled_size')
    rows = g.in_shape(node, 1)[1]
    b, ok = _roi_batch(g, node, rois, rows)
    if b is None:
        b = g.add('ConstantOfShape', [g.add('Slice', [g.add('Shape', [rois])[0], i64(g, [0]),
                                                      i64(g, [1])])[0]],
                  value=np.zeros(1, np.int64))[0]
        boxes = rois
    else:
        boxes = slice_axis(g, rois, 1, 1, 5)
    attrs = dict(mode='avg', output_height=ph, output_width=pw,
                 sampling_ratio=max(0, g.attr(node, 'sample_ratio')),
                 spatial_scale=_f32(g.attr(node, 'spatial_scale')))
    aligned = g.attr(node, 'aligned')
    if g.opset >= 16:
        attrs['coordinate_transformation_mode'] = 'half_pixel' if aligned \
            else 'output_half_pixel'
    # RoiAlign before opset 16 has no half-pixel offset: aligned=True takes the Loop form
    if g.opset <= _NATIVE_ROI_OPSET and (g.opset >= 16 or not aligned):
        out = g.add('RoiAlign', [data, boxes, b], **attrs)[0]
    else:
        out = _roi_align_loop(g, node, data, boxes, b)
    if g.attr(node, 'position_sensitive'):
        c = g.out_shape(node, 0)[1]
        k = ph * pw
        flat = reshape(g, out, [-1, c, k * k])          # (R, C', group * bins)
        out = g.add('Gather', [flat, g.const(np.arange(k, dtype=np.int64) * (k + 1))],
                    axis=2)[0]
        out = reshape(g, out, [-1, c, ph, pw])
    if ok is not None:
        out = g.add('Mul', [out, ok])[0]
    g.add('Identity', [out], g.outputs(node)[:1])


# ------------------------------------------------------------------ PSROIPooling
@claim('_contrib_PSROIPooling')
def _psroi_pooling(g, node):
    """Position-sensitive average pooling (R-FCN; no ONNX operator): per ROI the bin sums
    of every channel as two MatMuls with 0/1 bin matrices (in float64), then for each
    output channel and bin the sum of its channel group, divided by the bin's area (0 for
    an empty bin). The bins are ops/psroi.py's: corners rounded (halves away from zero),
    then scaled, the end + 1, floor/ceil of the bin edges clipped to the map."""
    data, rois = g.inputs(node)
    n, c, h, w = g.in_shape(node, 0)
    dt = g.in_dtype(node, 0)
    p = g.attr(node, 'pooled_size')
    grp = g.attr(node, 'group_size') or p
    dim = g.attr(node, 'output_dim')
    wt = np.dtype(np.float64 if dt == np.float64 else np.float32)
    rnd = _rounder(g, dt, wt)
    f64 = np.dtype(np.float64)
    if dt != wt:
        rois = cast(g, rois, wt)
    img_all = data if dt == f64 else cast(g, data, f64)
    b, ok = _roi_batch(g, node, rois, 5)
    rois = g.add('Concat', [unsqueeze(g, cast(g, b, wt), [1]), slice_axis(g, rois, 1, 1, 5)],
                 axis=1)[0]
    sc = scalar(g, float(dt.type(_f32(g.attr(node, 'spatial_scale')))), wt)
    gi = np.clip(np.floor(np.arange(p) * grp / p).astype(np.int64), 0, grp - 1)
    ch = (np.arange(dim)[:, None, None] * grp + gi[None, :, None]) * grp + gi[None, None, :]
    flat_idx = g.const((ch * p * p + np.arange(p)[None, :, None] * p
                        + np.arange(p)[None, None, :]).astype(np.int64))

    def bins(start, end, limit):
        size = rnd(g.add('Div', [rnd(g.add('Max', [rnd(g.add('Sub', [end, start])[0]),
                                                   scalar(g, float(dt.type(0.1)), wt)])[0]),
                                 scalar(g, p, wt)])[0])
        k = g.const(np.arange(p, dtype=wt))
        lo = g.add('Floor', [rnd(g.add('Add', [rnd(g.add('Mul', [k, size])[0]), start])[0])])[0]
        k1 = g.const(np.arange(1, p + 1, dtype=wt))
        hi = g.add('Ceil', [rnd(g.add('Add', [rnd(g.add('Mul', [k1, size])[0]), start])[0])])[0]
        lo, hi = (g.add('Clip', [cast(g, v, np.int64), i64(g, 0), i64(g, limit)])[0]
                  for v in (lo, hi))
        pos = g.const(np.arange(limit, dtype=np.int64).reshape(1, limit))
        mask = g.add('And', [g.add('GreaterOrEqual', [pos, unsqueeze(g, lo, [1])])[0],
                             g.add('Less', [pos, unsqueeze(g, hi, [1])])[0]])[0]
        return cast(g, mask, f64), g.add('Sub', [hi, lo])[0]

    def body(roi):
        bi = cast(g, g.add('Gather', [roi, scalar(g, 0, np.int64)], axis=0)[0], np.int64)
        img = g.add('Gather', [img_all, bi], axis=0)[0]                      # (C, H, W)
        one = scalar(g, 1, wt)
        x1, y1, x2, y2 = (_c_round(g, g.add('Gather', [roi, scalar(g, k, np.int64)],
                                             axis=0)[0], wt) for k in range(1, 5))
        x1, y1 = rnd(g.add('Mul', [x1, sc])[0]), rnd(g.add('Mul', [y1, sc])[0])
        x2 = rnd(g.add('Mul', [rnd(g.add('Add', [x2, one])[0]), sc])[0])
        y2 = rnd(g.add('Mul', [rnd(g.add('Add', [y2, one])[0]), sc])[0])
        rows, bh = bins(y1, y2, h)                                           # (P, H)
        cols, bw = bins(x1, x2, w)                                           # (P, W)
        sums = g.add('MatMul', [g.add('MatMul', [rows, img])[0],
                                g.add('Transpose', [cols], perm=[1, 0])[0]])[0]  # (C, P, P)
        picked = g.add('Gather', [reshape(g, sums, [-1]), flat_idx], axis=0)[0]
        area = g.add('Mul', [unsqueeze(g, bh, [1]), unsqueeze(g, bw, [0])])[0]   # (P, P)
        mean = g.add('Div', [picked, cast(g, g.add('Max', [area, i64(g, 1)])[0], f64)])[0]
        empty = g.add('LessOrEqual', [area, i64(g, 0)])[0]
        return g.add('Where', [empty, scalar(g, 0, f64), mean])[0]
    out = _per_roi_loop(g, node, rois, body, (dim, p, p), f64)
    out = out if dt == f64 else cast(g, out, dt)
    g.add('Mul', [out, ok], g.outputs(node)[:1])


# -------------------------------------------------------------------- RROIAlign
@claim('_contrib_RROIAlign')
def _rroi_align(g, node):
    """Rotated ROI align (no ONNX operator): a Loop over the ROIs whose body places each
    bin's sample grid in the ROI's rotated frame and gathers the four bilinear corners of
    every sample from the flattened image (ops/roi.py's arithmetic: samples more than a
    pixel outside read 0, the others are clamped)."""
    data, rois = g.inputs(node)
    n, c, h, w = g.in_shape(node, 0)
    dt = g.in_dtype(node, 0)
    ph, pw = g.attr(node, 'pooled_size')
    ratio = g.attr(node, 'sampling_ratio')
    i64s = np.int64

    def s(v):
        return scalar(g, v, dt)

    def op(kind, *xs):
        return g.add(kind, list(xs))[0]

    def body(roi):
        col = [g.add('Gather', [roi, scalar(g, k, i64s)], axis=0)[0] for k in range(6)]
        img = reshape(g, g.add('Gather', [data, cast(g, col[0], i64s)], axis=0)[0], [c, h * w])
        sc = s(float(dt.type(g.attr(node, 'spatial_scale'))))
        cx, cy = op('Mul', col[1], sc), op('Mul', col[2], sc)
        rw = op('Max', op('Mul', col[3], sc), s(1))
        rh = op('Max', op('Mul', col[4], sc), s(1))
        theta = op('Div', op('Mul', col[5], s(np.pi)), s(180.0))
        bh, bw = op('Div', rh, s(ph)), op('Div', rw, s(pw))
        if ratio > 0:
            gh = gw = scalar(g, ratio, i64s)
        else:
            gh = cast(g, op('Ceil', op('Div', rh, s(ph))), i64s)
            gw = cast(g, op('Ceil', op('Div', rw, s(pw))), i64s)

        def offsets(grid, binsz):            # (G,) sample offsets inside a bin
            k = cast(g, op('Range', scalar(g, 0, i64s), grid, scalar(g, 1, i64s)), dt)
            return op('Div', op('Mul', op('Add', k, s(0.5)), binsz), cast(g, grid, dt))
        two = s(2)
        ys = op('Add', op('Div', op('Neg', rh), two), op('Mul', g.const(
            np.arange(ph, dtype=dt).reshape(ph, 1, 1, 1)), bh))
        yy = op('Add', ys, reshape(g, offsets(gh, bh), [1, 1, -1, 1]))      # (ph,1,gh,1)
        xs = op('Add', op('Div', op('Neg', rw), two), op('Mul', g.const(
            np.arange(pw, dtype=dt).reshape(1, pw, 1, 1)), bw))
        xx = op('Add', xs, reshape(g, offsets(gw, bw), [1, 1, 1, -1]))      # (1,pw,1,gw)
        cos, sin = op('Cos', theta), op('Sin', theta)
        y = op('Add', op('Sub', op('Mul', yy, cos), op('Mul', xx, sin)), cy)
        x = op('Add', op('Add', op('Mul', yy, sin), op('Mul', xx, cos)), cx)
        outside = op('Or', op('Or', op('Less', y, s(-1)), op('Greater', y, s(h))),
                     op('Or', op('Less', x, s(-1)), op('Greater', x, s(w))))
        mask = cast(g, op('Not', outside), dt)

        def axis(v, size):
            v = op('Max', v, s(0))
            lo = cast(g, op('Floor', v), i64s)
            top = op('GreaterOrEqual', lo, i64(g, size - 1))
            lo = op('Where', top, i64(g, size - 1), lo)
            hi = op('Where', top, i64(g, size - 1), op('Add', lo, i64(g, 1)))
            frac = op('Where', top, s(0), op('Sub', v, cast(g, lo, dt)))
            return lo, hi, frac
        y0, y1, ly = axis(y, h)
        x0, x1, lx = axis(x, w)
        hy, hx = op('Sub', s(1), ly), op('Sub', s(1), lx)
        total = None
        for yi, xi, wt in ((y0, x0, op('Mul', hy, hx)), (y0, x1, op('Mul', hy, lx)),
                           (y1, x0, op('Mul', ly, hx)), (y1, x1, op('Mul', ly, lx))):
            idx = op('Add', op('Mul', yi, i64(g, w)), xi)                   # (ph,pw,gh,gw)
            vals = g.add('Gather', [img, idx], axis=1)[0]                   # (C,ph,pw,gh,gw)
            term = op('Mul', vals, unsqueeze(g, op('Mul', wt, mask), [0]))
            total = term if total is None else op('Add', total, term)
        summed = reduce(g, 'ReduceSum', total, [3, 4], keepdims=0)
        return op('Div', summed, cast(g, op('Mul', gh, gw), dt))
    g.add('Identity', [_per_roi_loop(g, node, rois, body, (c, ph, pw), dt)],
          g.outputs(node)[:1])


# ------------------------------------------------------ DeformablePSROIPooling
@claim('_contrib_DeformablePSROIPooling')
def _deformable_psroi_pooling(g, node):
    """Deformable position-sensitive ROI pooling (no ONNX operator), vectorised over
    (R, output_dim, P, P, S, S) samples as ops/psroi.py's forward: the bins moved by the
    trans offsets of their class and part, ``sample_per_part``**2 bilinear samples per bin
    gathered from the flattened data, samples more than half a pixel outside skipped. The
    hidden sample-count output is not exported."""
    ins = g.inputs(node)
    data, rois = ins[:2]
    n, c, h, w = g.in_shape(node, 0)
    dt = g.in_dtype(node, 0)
    t = dt.type
    p, grp, s = (g.attr(node, k) for k in ('pooled_size', 'group_size', 'sample_per_part'))
    q = g.attr(node, 'part_size') or p
    dim = g.attr(node, 'output_dim')
    i64s = np.int64

    def sc(v):
        return scalar(g, v, dt)

    def op(kind, *xs):
        return g.add(kind, list(xs))[0]

    def at(x, shape):
        return reshape(g, x, shape)
    r = [g.add('Gather', [rois, scalar(g, k, i64s)], axis=1)[0] for k in range(5)]
    scale = sc(float(t(g.attr(node, 'spatial_scale'))))
    half = sc(0.5)
    x1 = op('Sub', op('Mul', _c_round(g, r[1], dt), scale), half)
    y1 = op('Sub', op('Mul', _c_round(g, r[2], dt), scale), half)
    x2 = op('Sub', op('Mul', op('Add', _c_round(g, r[3], dt), sc(1)), scale), half)
    y2 = op('Sub', op('Mul', op('Add', _c_round(g, r[4], dt), sc(1)), scale), half)
    rw = op('Max', op('Sub', x2, x1), sc(float(t(0.1))))
    rh = op('Max', op('Sub', y2, y1), sc(float(t(0.1))))
    bw, bh = op('Div', rw, sc(p)), op('Div', rh, sc(p))
    r4 = [-1, 1, 1, 1]
    pf = np.arange(p).astype(dt)
    ws = op('Add', op('Mul', g.const(pf.reshape(1, 1, 1, p)), at(bw, r4)), at(x1, r4))
    hs = op('Add', op('Mul', g.const(pf.reshape(1, 1, p, 1)), at(bh, r4)), at(y1, r4))
    if not g.attr(node, 'no_trans'):
        trans = ins[2]
        ncls = g.in_shape(node, 2)[1] // 2
        cls = np.arange(dim) // (dim // ncls)
        part = np.floor(np.arange(p).astype(dt) / t(p) * t(q)).astype(i64s)
        std = sc(float(t(g.attr(node, 'trans_std'))))
        for k, (pos, size) in enumerate(((ws, rw), (hs, rh))):
            tr = g.add('Gather', [trans, g.const((2 * cls + k).astype(i64s))], axis=1)[0]
            tr = g.add('Gather', [tr, g.const(part)], axis=2)[0]
            tr = op('Mul', g.add('Gather', [tr, g.const(part)], axis=3)[0], std)
            moved = op('Add', pos, op('Mul', tr, at(size, r4)))
            if k == 0:
                ws = moved
            else:
                hs = moved
    sf = np.arange(s).astype(dt)
    r6 = [-1, 1, 1, 1, 1, 1]
    wpos = op('Add', unsqueeze(g, ws, [4, 5]), op('Mul', g.const(sf.reshape(1, 1, 1, 1, 1, s)),
                                                   at(op('Div', bw, sc(s)), r6)))
    hpos = op('Add', unsqueeze(g, hs, [4, 5]), op('Mul', g.const(sf.reshape(1, 1, 1, 1, s, 1)),
                                                   at(op('Div', bh, sc(s)), r6)))
    valid = op('And', op('And', op('GreaterOrEqual', wpos, sc(-0.5)),
                         op('LessOrEqual', wpos, sc(float(t(w - 0.5))))),
               op('And', op('GreaterOrEqual', hpos, sc(-0.5)),
                  op('LessOrEqual', hpos, sc(float(t(h - 0.5))))))
    wc = op('Max', op('Min', wpos, sc(w - 1)), sc(0))
    hc = op('Max', op('Min', hpos, sc(h - 1)), sc(0))
    y0f, x0f = g.add('Floor', [hc])[0], g.add('Floor', [wc])[0]
    y1i, x1i = cast(g, g.add('Ceil', [hc])[0], i64s), cast(g, g.add('Ceil', [wc])[0], i64s)
    y0i, x0i = cast(g, y0f, i64s), cast(g, x0f, i64s)
    dy, dx = op('Sub', hc, y0f), op('Sub', wc, x0f)
    one = sc(1)
    gi = np.clip(np.floor(np.arange(p) * grp / p).astype(i64s), 0, grp - 1)
    ch = (np.arange(dim)[:, None, None] * grp + gi[None, :, None]) * grp + gi[None, None, :]
    b = at(cast(g, r[0], i64s), r6)
    base = op('Mul', op('Add', op('Mul', b, i64(g, c)), g.const(ch.reshape(1, dim, p, p, 1, 1))),
              i64(g, h))
    flat = reshape(g, data, [-1])

    def value(yi, xi):
        idx = op('Add', op('Mul', op('Add', base, yi), i64(g, w)), xi)
        return g.add('Gather', [flat, idx], axis=0)[0]
    ndx, ndy = op('Sub', one, dx), op('Sub', one, dy)
    v = op('Mul', op('Mul', ndx, ndy), value(y0i, x0i))
    v = op('Add', v, op('Mul', op('Mul', ndx, dy), value(y1i, x0i)))
    v = op('Add', v, op('Mul', op('Mul', dx, ndy), value(y0i, x1i)))
    v = op('Add', v, op('Mul', op('Mul', dx, dy), value(y1i, x1i)))
    v = g.add('Where', [valid, v, sc(0)])[0]
    count = reduce(g, 'ReduceSum', cast(g, valid, dt), [4, 5], keepdims=0)
    total = reduce(g, 'ReduceSum', v, [4, 5], keepdims=0)
    mean = op('Div', total, op('Max', count, one))
    g.add('Where', [op('Greater', count, sc(0)), mean, sc(0)], g.outputs(node)[:1])
