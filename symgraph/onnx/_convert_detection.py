"""ONNX converters for the detection operators MXNet 1.9.1 could not export (or exported
with other results): ``_contrib_box_nms``, ``_contrib_nms``, ``_contrib_MultiBoxPrior``,
``_contrib_MultiBoxDetection``, ``_contrib_Proposal``, ``_contrib_MultiProposal``,
``_contrib_box_iou``, ``_contrib_box_decode``, ``_contrib_box_encode`` and
``_contrib_bipartite_matching`` (the ROI operators are in
:mod:`symgraph.onnx._convert_roi`).

The suppression itself is ONNX ``NonMaxSuppression``, whose decisions are MXNet's: boxes in
descending score order, equal scores in index order, IoU > threshold suppresses (MXNet's
``>=`` of MultiBoxDetection is ``>`` the next float below), IoUs computed in float32 in
MXNet's order. Around it, ``TopK`` (stable: equal keys keep index order) and gathers and
scatters give each operator's own output layout (kept rows first in score order, -1 rows,
MultiBoxDetection's ids of -1, Proposal's repeated rows). Per-class suppression is
NonMaxSuppression's class axis: the class ids present (``Unique``) for box_nms, the known
classes for MultiBoxDetection.

ONNX Runtime's IoU orders each box's two corners (min/max), where MXNet gives a box of
negative extent an area of 0 that suppresses nothing; such boxes are made empty before the
suppression so that both agree.
"""
import numpy as np

from ._convert_misc import (cast, claim, fill_like, i64, onnx_type, reduce, reshape, scalar,
                            slice_axis, squeeze, unsqueeze)
from ._registry import converter
from . import _convert_roi

__all__ = []
#: the ROI operators' converters register when their module is imported (with this one)
_PARTS = (_convert_roi,)


_F32_LOWEST = float(np.finfo(np.float32).min)


def _f32(v):
    """A parameter as MXNet's C float holds it."""
    return float(np.float32(v))


def _col(g, x, k, axis=-1):
    """Column ``k`` along ``axis`` (the axis dropped)."""
    return g.add('Gather', [x, scalar(g, k, np.int64)], axis=axis)[0]


def _stack_last(g, cols):
    return g.add('Concat', [unsqueeze(g, c, [-1]) for c in cols], axis=-1)[0]


def _binary(g, op, a, b):
    return g.add(op, [a, b])[0]


def _rows_at(g, x, idx):
    """``x[b, idx[b, j]]`` for x (B, N, ...) and idx (B, M) int64: (B, M, ...)."""
    return g.add('GatherND', [x, unsqueeze(g, idx, [-1])], batch_dims=1)[0]


def _stable_order(g, key, n, largest=True):
    """Indices (B, n) sorting the float ``key`` (B, n) along axis 1, ties in index order."""
    return g.add('TopK', [key, i64(g, [n])], 2, axis=1, largest=int(largest), sorted=1)[1]


def _empty_flipped(g, boxes, center):
    """Boxes (..., 4) for NonMaxSuppression in which a box of negative width or height
    has no area (MXNet's arithmetic) instead of being flipped (ONNX Runtime's)."""
    a, b, c, d = (_col(g, boxes, k) for k in range(4))
    if center:
        zero = scalar(g, 0, np.float32)
        bad = g.add('Or', [_binary(g, 'Less', c, zero), _binary(g, 'Less', d, zero)])[0]
        fixed = _stack_last(g, [a, b, fill_like(g, c, 0, np.float32),
                                fill_like(g, d, 0, np.float32)])
    else:
        bad = g.add('Or', [_binary(g, 'Less', c, a), _binary(g, 'Less', d, b)])[0]
        fixed = _stack_last(g, [a, b, a, b])
    return g.add('Where', [unsqueeze(g, bad, [-1]), fixed, boxes])[0]


def _nms(g, boxes, scores, max_out, iou, center=False, score_threshold=None):
    """NonMaxSuppression of float32 boxes (B, N, 4) and scores (B, C, N): selected
    (K, 3) int64 rows (batch, class, box)."""
    inputs = [_empty_flipped(g, boxes, center), scores, i64(g, [max_out]),
              g.const(np.array([iou], np.float32))]
    if score_threshold is not None:
        inputs.append(g.const(np.array([score_threshold], np.float32)))
    return g.add('NonMaxSuppression', inputs, center_point_box=int(center))[0]


def _keep_mask(g, selected, like):
    """(B, N) bool: True at the (batch, box) pairs of ``selected``; ``like`` (B, N)."""
    pairs = g.add('Gather', [selected, i64(g, [0, 2])], axis=1)[0]
    zeros = fill_like(g, like, 0, np.float32)
    count = g.add('Shape', [pairs])[0]
    ones = g.add('Expand', [g.const(np.ones(1, np.float32)),
                            g.add('Slice', [count, i64(g, [0]), i64(g, [1])])[0]])[0]
    mask = g.add('ScatterND', [zeros, pairs, ones])[0]
    return cast(g, mask, np.bool_)


def _to_f32(g, x, dtype):
    return x if dtype == np.float32 else cast(g, x, np.float32)


# --------------------------------------------------------------------------- box_nms
@converter('_contrib_box_nms')
def _box_nms(g, node):
    """Valid rows (score > valid_thresh, id != background_id), the best ``topk`` of them
    per batch, NonMaxSuppression (per class id unless force_suppress), then the kept rows
    gathered to the top in score order, -1 elsewhere; ``out_format`` converts the kept
    rows whose first coordinate is >= 0 (MXNet's in-place conversion skips the others)."""
    x, = g.inputs(node)
    shape = g.in_shape(node, 0)
    dt = g.in_dtype(node, 0)
    n, w = shape[-2], shape[-1]
    outs = g.outputs(node)
    topk = n if g.attr(node, 'topk') < 0 else min(n, g.attr(node, 'topk'))
    lead = int(np.prod(shape[:-2]))
    if topk < 1 or n == 0:
        g.add('Identity', [x], outs[:1])
        rec = np.arange(lead * n, dtype=dt).reshape(tuple(shape[:-1]) + (1,))
        g.add('Identity', [g.const(rec)], outs[1:2])
        return
    cs, si, ii = (g.attr(node, k) for k in ('coord_start', 'score_index', 'id_index'))
    center_in = g.attr(node, 'in_format') == 'center'
    data = reshape(g, x, [-1, n, w])
    score = _col(g, data, si)
    valid = _binary(g, 'Greater', score, scalar(g, _f32(g.attr(node, 'valid_thresh')), dt))
    if ii >= 0:
        ids = _col(g, data, ii)
        bg = _binary(g, 'Equal', ids, scalar(g, g.attr(node, 'background_id'), dt))
        valid = g.add('And', [valid, g.add('Not', [bg])[0]])[0]
    score32 = _to_f32(g, score, dt)
    neg_inf = scalar(g, -np.inf, np.float32)
    key = g.add('Where', [valid, score32, neg_inf])[0]
    if topk < n:        # only the best topk valid rows of each batch take part
        best = g.add('TopK', [key, i64(g, [topk])], 2, axis=1, largest=1, sorted=1)[1]
        ones = g.add('Expand', [g.const(np.ones((1, 1), np.float32)),
                                g.add('Shape', [best])[0]])[0]
        top = g.add('ScatterElements', [fill_like(g, key, 0, np.float32), best, ones],
                    axis=1)[0]
        valid = g.add('And', [valid, cast(g, top, np.bool_)])[0]
        key = g.add('Where', [valid, score32, neg_inf])[0]
    boxes = _to_f32(g, slice_axis(g, data, 2, cs, cs + 4), dt)
    if ii >= 0 and not g.attr(node, 'force_suppress'):
        # one NonMaxSuppression class per class id present (ids cast to int, as MXNet)
        cls = cast(g, ids, np.int64)
        _, _, inverse, _ = g.add('Unique', [reshape(g, cls, [-1])], 4, sorted=1)
        kinds = g.add('Shape', [g.add('Unique', [inverse], 1, sorted=1)[0]])[0]
        classes = g.add('Range', [scalar(g, 0, np.int64), squeeze(g, kinds, [0]),
                                  scalar(g, 1, np.int64)])[0]
        inverse = g.add('Reshape', [inverse, g.add('Shape', [cls])[0]])[0]
        member = _binary(g, 'Equal', unsqueeze(g, inverse, [1]), unsqueeze(g, classes, [0, 2]))
        scores3 = g.add('Where', [member, unsqueeze(g, key, [1]), neg_inf])[0]
    else:
        scores3 = unsqueeze(g, key, [1])
    selected = _nms(g, boxes, scores3, n, _f32(g.attr(node, 'overlap_thresh')),
                    center=center_in, score_threshold=_F32_LOWEST)
    keep = _keep_mask(g, selected, key)
    order = _stable_order(g, g.add('Where', [keep, score32, neg_inf])[0], n)
    rows = _rows_at(g, data, order)
    kept = g.add('GatherElements', [keep, order], axis=1)[0]
    out = g.add('Where', [unsqueeze(g, kept, [-1]), rows, scalar(g, -1, dt)])[0]
    out_format = g.attr(node, 'out_format')
    if out_format != g.attr(node, 'in_format'):
        out = _convert_format(g, out, cs, w, out_format, dt)
    g.add('Reshape', [out, g.add('Shape', [x])[0]], outs[:1])
    # the hidden output: the flat input row of each output row, -1 elsewhere
    batches = g.add('Gather', [g.add('Shape', [data])[0], scalar(g, 0, np.int64)], axis=0)[0]
    base = g.add('Range', [scalar(g, 0, np.int64), batches, scalar(g, 1, np.int64)])[0]
    base = unsqueeze(g, g.add('Mul', [base, scalar(g, n, np.int64)])[0], [1])
    src = g.add('Where', [kept, g.add('Add', [order, base])[0], i64(g, -1)])[0]
    lead_shape = g.add('Slice', [g.add('Shape', [x])[0], i64(g, [0]), i64(g, [-1])])[0]
    rec_shape = g.add('Concat', [lead_shape, i64(g, [1])], axis=0)[0]
    g.add('Reshape', [cast(g, src, dt), rec_shape], outs[1:2])


def _convert_format(g, out, cs, w, to, dt):
    """MXNet's in-place box format conversion of (B, N, w) rows: rows whose first
    coordinate is < 0 (the -1 rows among them) are left as they are."""
    a, b, c, d = (_col(g, out, cs + k) for k in range(4))
    two = scalar(g, 2, dt)

    def op(kind, u, v):
        return g.add(kind, [u, v])[0]
    if to == 'center':
        new = [op('Div', op('Add', a, c), two), op('Div', op('Add', b, d), two),
               op('Sub', c, a), op('Sub', d, b)]
    else:
        half_w, half_h = op('Div', c, two), op('Div', d, two)
        new = [op('Sub', a, half_w), op('Sub', b, half_h), op('Add', a, half_w),
               op('Add', b, half_h)]
    skip = op('Less', a, scalar(g, 0, dt))
    coords = _stack_last(g, [g.add('Where', [skip, old, v])[0]
                             for old, v in zip((a, b, c, d), new)])
    parts = []
    if cs > 0:
        parts.append(slice_axis(g, out, 2, 0, cs))
    parts.append(coords)
    if cs + 4 < w:
        parts.append(slice_axis(g, out, 2, cs + 4, w))
    return g.add('Concat', parts, axis=2)[0] if len(parts) > 1 else parts[0]


@converter('_contrib_nms')
def _plain_nms(g, node):
    """symgraph's contrib.nms: the kept indices in score order, then -1 padding."""
    boxes, scores = g.inputs(node)
    n = g.in_shape(node, 0)[0]
    dt = g.in_dtype(node, 0)
    b = unsqueeze(g, _to_f32(g, boxes, dt), [0])
    s = unsqueeze(g, _to_f32(g, scores, g.in_dtype(node, 1)), [0, 1])
    selected = _nms(g, b, s, n, _f32(g.attr(node, 'iou_threshold')))
    kept = _col(g, selected, 2)
    padded = g.add('Concat', [kept, i64(g, [-1] * n)], axis=0)[0]
    g.add('Slice', [padded, i64(g, [0]), i64(g, [n])], g.outputs(node)[:1])


# ---------------------------------------------------------------------------- SSD
@converter('_contrib_MultiBoxPrior')
def _multibox_prior(g, node):
    """A constant: the anchors depend on the (static) height and width only; the values
    are the operator's own forward."""
    shape = g.in_shape(node, 0)
    dt = g.in_dtype(node, 0)
    anchors = node.op.forward(np, [np.zeros((1,) + tuple(shape[1:]), dt)], [], False)[0]
    g.add('Identity', [g.const(np.asarray(anchors, dt))], g.outputs(node)[:1])


def _decode_ssd(g, node, anchor, loc, na, dt):
    """MXNet's TransformLocations: corner boxes (B, A, 4) from anchors and offsets."""
    vx, vy, vw, vh = (scalar(g, _f32(v), dt) for v in g.attr(node, 'variances'))
    anc = g.add('Transpose', [slice_axis(g, reshape(g, anchor, [-1, 4]), 0, 0, na)],
                perm=[1, 0])[0]
    al, at, ar, ab = (_col(g, anc, k, axis=0) for k in range(4))
    two = scalar(g, 2, dt)

    def op(kind, u, v):
        return g.add(kind, [u, v])[0]
    aw, ah = op('Sub', ar, al), op('Sub', ab, at)
    ax, ay = op('Div', op('Add', al, ar), two), op('Div', op('Add', at, ab), two)
    lx, ly, lw, lh = (_col(g, loc, k) for k in range(4))
    ox = op('Add', op('Mul', op('Mul', lx, vx), aw), ax)
    oy = op('Add', op('Mul', op('Mul', ly, vy), ah), ay)
    ow = op('Div', op('Mul', g.add('Exp', [op('Mul', lw, vw)])[0], aw), two)
    oh = op('Div', op('Mul', g.add('Exp', [op('Mul', lh, vh)])[0], ah), two)
    boxes = _stack_last(g, [op('Sub', ox, ow), op('Sub', oy, oh), op('Add', ox, ow),
                            op('Add', oy, oh)])
    if g.attr(node, 'clip'):
        boxes = g.add('Max', [scalar(g, 0, dt), g.add('Min', [scalar(g, 1, dt),
                                                              boxes])[0]])[0]
    return boxes


@converter('_contrib_MultiBoxDetection')
def _multibox_detection(g, node):
    """The operator's forward step by step (ops/multibox.py): decode, best foreground
    class, valid rows to the top in anchor order, a stable sort by score, rows past
    nms_topk with id -1, then NonMaxSuppression (IoU >= nms_threshold, per class unless
    force_suppress) giving the suppressed rows id -1."""
    cls_prob, loc_pred, anchor = g.inputs(node)
    nb, nc, na = g.in_shape(node, 0)
    dt = g.in_dtype(node, 0)
    out_name = g.outputs(node)[:1]
    if nc < 2:      # no foreground class: every row is empty
        g.add('Expand', [scalar(g, -1, dt), i64(g, [nb, na, 6])], out_name)
        return
    if g.in_shape(node, 1)[0] != nb:
        loc_pred = slice_axis(g, loc_pred, 0, 0, nb)
    loc = reshape(g, loc_pred, [-1, na, 4])
    boxes = _decode_ssd(g, node, anchor, loc, na, dt)
    fg = slice_axis(g, cls_prob, 1, 1, nc)
    cid = g.add('ArgMax', [fg], axis=1, keepdims=0)[0]
    score = reduce(g, 'ReduceMax', fg, [1], keepdims=0)
    valid = g.add('And', [_binary(g, 'Greater', score, scalar(g, -1, dt)), g.add('Not', [
        _binary(g, 'Less', score, scalar(g, _f32(g.attr(node, 'threshold')), dt))])[0]])[0]
    rows = g.add('Concat', [unsqueeze(g, cast(g, cid, dt), [-1]), unsqueeze(g, score, [-1]),
                            boxes], axis=-1)[0]
    # valid rows to the top in anchor order (a stable sort of the valid flags)
    compact = _rows_at(g, rows, _stable_order(g, cast(g, valid, np.float32), na))
    count = reduce(g, 'ReduceSum', cast(g, valid, np.int64), [1], keepdims=1)
    slot = g.const(np.arange(na, dtype=np.int64).reshape(1, na))
    inside = _binary(g, 'Less', slot, count)
    minus1 = scalar(g, -1, dt)
    out = g.add('Where', [unsqueeze(g, inside, [-1]), compact, minus1])[0]
    if not 0 < np.float32(g.attr(node, 'nms_threshold')) <= 1:
        g.add('Identity', [out], out_name)
        return
    neg_inf = scalar(g, -np.inf, np.float32)
    key = g.add('Where', [inside, _to_f32(g, _col(g, out, 1), dt), neg_inf])[0]
    ranked = _rows_at(g, out, _stable_order(g, key, na))
    topk = g.attr(node, 'nms_topk')
    keep_n = count if topk <= 0 else g.add('Min', [count, i64(g, [[topk]])])[0]
    top = _binary(g, 'Less', slot, keep_n)
    cut = g.add('And', [inside, g.add('Not', [top])[0]])[0]
    out = g.add('Where', [unsqueeze(g, top, [-1]), ranked, out])[0]
    ids = g.add('Where', [cut, minus1, _col(g, out, 0)])[0]
    s = g.add('Where', [top, _to_f32(g, _col(g, out, 1), dt), neg_inf])[0]
    if g.attr(node, 'force_suppress'):
        scores3 = unsqueeze(g, s, [1])
    else:
        classes = g.const(np.arange(nc - 1, dtype=np.int64).reshape(1, nc - 1, 1))
        member = _binary(g, 'Equal', unsqueeze(g, cast(g, ids, np.int64), [1]), classes)
        scores3 = g.add('Where', [member, unsqueeze(g, s, [1]), neg_inf])[0]
    # IoU >= t is IoU > (the largest float32 below t)
    thresh = float(np.nextafter(np.float32(g.attr(node, 'nms_threshold')),
                                np.float32(-np.inf)))
    selected = _nms(g, _to_f32(g, slice_axis(g, out, 2, 2, 6), dt), scores3, na, thresh,
                    score_threshold=_F32_LOWEST)
    gone = g.add('And', [top, g.add('Not', [_keep_mask(g, selected, s)])[0]])[0]
    ids = g.add('Where', [gone, minus1, ids])[0]
    g.add('Concat', [unsqueeze(g, ids, [-1]), slice_axis(g, out, 2, 1, 6)], out_name, axis=-1)


# ----------------------------------------------------------------- region proposals
def _generate_anchors(stride, ratios, scales):
    """MXNet's GenerateAnchors (as ops/proposal.py computes them), float32 (A, 4)."""
    w = h = np.float32(stride - 1.0) + np.float32(1)
    size = np.float32(w * h)
    ctr = np.float32(0.5 * (float(w) - 1.0))
    r = np.repeat(np.asarray(ratios, np.float32), len(scales))
    s = np.tile(np.asarray(scales, np.float32), len(ratios))
    new_w = np.floor(np.sqrt(np.floor(size / r)) + np.float32(0.5)) * s
    new_h = np.floor(new_w / s * r + np.float32(0.5)) * s
    half_w = 0.5 * (new_w.astype(np.float64) - 1.0)
    half_h = 0.5 * (new_h.astype(np.float64) - 1.0)
    return np.stack([ctr - half_w, ctr - half_h, ctr + half_w, ctr + half_h],
                    axis=1).astype(np.float32)


def _proposal_boxes(g, node, cls, bbox, info, n, h, w, a):
    """(boxes (N, K, 4), scores (N, K)) before the sort: decoded, clipped to the image,
    -1 scores outside the real image and for boxes below the minimum size (which are
    enlarged by half of it), all in float32 as MXNet."""
    s = g.attr(node, 'feature_stride')
    k = h * w * a
    anchors = _generate_anchors(s, g.attr(node, 'ratios'), g.attr(node, 'scales'))
    sy, sx = np.meshgrid(np.arange(h, dtype=np.float32) * s,
                         np.arange(w, dtype=np.float32) * s, indexing='ij')
    shift = np.stack([sx, sy, sx, sy], axis=-1)
    anc = (shift[:, :, None, :] + anchors[None, None]).reshape(-1, 4)
    deltas = g.add('Transpose', [reshape(g, bbox, [-1, a, 4, h, w])], perm=[0, 3, 4, 1, 2])[0]
    deltas = reshape(g, deltas, [-1, k, 4])
    score = g.add('Transpose', [slice_axis(g, cls, 1, a, 2 * a)], perm=[0, 2, 3, 1])[0]
    score = reshape(g, score, [-1, k])
    d = [_col(g, deltas, i) for i in range(4)]
    f32, f64 = np.float32, np.float64

    def op(kind, u, v):
        return g.add(kind, [u, v])[0]
    if g.attr(node, 'iou_loss'):
        corners = [op('Add', g.const(anc[:, i].copy()), d[i]) for i in range(4)]
    else:
        bw = anc[:, 2] - anc[:, 0] + f32(1)
        bh = anc[:, 3] - anc[:, 1] + f32(1)
        cx = (anc[:, 0] + 0.5 * (bw.astype(f64) - 1.0)).astype(f32)
        cy = (anc[:, 1] + 0.5 * (bh.astype(f64) - 1.0)).astype(f32)
        pcx = op('Add', op('Mul', d[0], g.const(bw)), g.const(cx))
        pcy = op('Add', op('Mul', d[1], g.const(bh)), g.const(cy))
        pw = op('Mul', g.add('Exp', [d[2]])[0], g.const(bw))
        ph = op('Mul', g.add('Exp', [d[3]])[0], g.const(bh))
        # the half sizes and the corners in float64, as ops/proposal.py (and MXNet's
        # float arithmetic promoted by its 0.5 double constants)
        half = scalar(g, 0.5, f64)
        one = scalar(g, 1.0, f64)
        hw = op('Mul', half, op('Sub', cast(g, pw, f64), one))
        hh = op('Mul', half, op('Sub', cast(g, ph, f64), one))
        pcx64, pcy64 = cast(g, pcx, f64), cast(g, pcy, f64)
        corners = [cast(g, op(kind, c, hv), f32) for kind, c, hv in
                   (('Sub', pcx64, hw), ('Sub', pcy64, hh), ('Add', pcx64, hw),
                    ('Add', pcy64, hh))]
    zero = scalar(g, 0, f32)
    one32 = scalar(g, 1, f32)
    im_h, im_w, im_scale = (_col(g, info, i, axis=1) for i in range(3))
    mh = unsqueeze(g, op('Sub', im_h, one32), [1])
    mw = unsqueeze(g, op('Sub', im_w, one32), [1])
    x1, y1, x2, y2 = (g.add('Max', [g.add('Min', [v, m])[0], zero])[0]
                      for v, m in zip(corners, (mw, mh, mw, mh)))
    # cells outside the real image (int(im / stride)) score -1
    stride = scalar(g, s, f32)
    rh = unsqueeze(g, cast(g, op('Div', im_h, stride), np.int64), [1])
    rw = unsqueeze(g, cast(g, op('Div', im_w, stride), np.int64), [1])
    cell_h = g.const(np.repeat(np.arange(h), w * a).reshape(1, k).astype(np.int64))
    cell_w = g.const(np.tile(np.repeat(np.arange(w), a), h).reshape(1, k).astype(np.int64))
    outside = g.add('Or', [op('GreaterOrEqual', cell_h, rh), op('GreaterOrEqual', cell_w, rw)])[0]
    minus1 = scalar(g, -1, f32)
    score = g.add('Where', [outside, minus1, score])[0]
    mins = unsqueeze(g, op('Mul', scalar(g, g.attr(node, 'rpn_min_size'), f32), im_scale), [1])
    small = g.add('Or', [op('Less', op('Add', op('Sub', x2, x1), one32), mins),
                         op('Less', op('Add', op('Sub', y2, y1), one32), mins)])[0]
    half_min = op('Div', mins, scalar(g, 2, f32))
    grown = [op('Sub', x1, half_min), op('Sub', y1, half_min), op('Add', x2, half_min),
             op('Add', y2, half_min)]
    boxes = [g.add('Where', [small, big, v])[0] for big, v in zip(grown, (x1, y1, x2, y2))]
    score = g.add('Where', [small, minus1, score])[0]
    return boxes, score


def _proposal(g, node):
    """Proposal / MultiProposal: the sorted top ``rpn_pre_nms_top_n`` boxes, greedy NMS
    with MXNet's "+1" areas (the boxes' far corners moved by one) stopping at
    ``rpn_post_nms_top_n`` kept boxes, and each image's kept boxes repeated cyclically to
    fill its ``rpn_post_nms_top_n`` rows."""
    cls, bbox, info = g.inputs(node)
    dt = g.in_dtype(node, 0)
    n, ch, h, w = g.in_shape(node, 0)
    a = ch // 2
    k = h * w * a
    cls, bbox, info = (_to_f32(g, v, dt) for v in (cls, bbox, info))
    coords, score = _proposal_boxes(g, node, cls, bbox, info, n, h, w, a)
    pre_n = g.attr(node, 'rpn_pre_nms_top_n')
    pre = k if pre_n <= 0 else min(pre_n, k)
    post = g.attr(node, 'rpn_post_nms_top_n')
    top_score, order = g.add('TopK', [score, i64(g, [pre])], 2, axis=1, largest=1, sorted=1)
    boxes = _rows_at(g, _stack_last(g, coords), order)                   # (N, pre, 4)
    one = scalar(g, 1, np.float32)
    x1, y1, x2, y2 = (_col(g, boxes, i) for i in range(4))
    plus1 = _stack_last(g, [x1, y1, g.add('Add', [x2, one])[0], g.add('Add', [y2, one])[0]])
    selected = _nms(g, plus1, unsqueeze(g, top_score, [1]), post,
                    _f32(g.attr(node, 'threshold')))
    img, box = _col(g, selected, 0, axis=1), _col(g, selected, 2, axis=1)     # (M,)
    # kept boxes per image and where each image's run starts in ``selected`` (the images
    # counted at run time: the batch axis may be symbolic)
    images = g.add('Range', [scalar(g, 0, np.int64), g.add('Gather', [
        g.add('Shape', [cls])[0], scalar(g, 0, np.int64)], axis=0)[0],
        scalar(g, 1, np.int64)])[0]
    images = unsqueeze(g, images, [0])                                   # (1, N)
    counts = reduce(g, 'ReduceSum', cast(g, g.add('Equal', [unsqueeze(g, img, [1]),
                                                            images])[0], np.int64),
                    [0], keepdims=0)                                     # (N,)
    starts = g.add('CumSum', [counts, scalar(g, 0, np.int64)], exclusive=1)[0]
    i = g.const(np.arange(post, dtype=np.int64).reshape(1, post))
    safe = g.add('Max', [counts, i64(g, 1)])[0]
    pos = g.add('Add', [unsqueeze(g, starts, [1]),
                        g.add('Mod', [i, unsqueeze(g, safe, [1])])[0]])[0]    # (N, post)
    rows = g.add('Gather', [box, pos], axis=0)[0]                         # box per image
    image_col = g.add('Transpose', [images], perm=[1, 0])[0]             # (N, 1)
    flat = g.add('Add', [rows, g.add('Mul', [image_col, i64(g, pre)])[0]])[0]
    flat = reshape(g, flat, [-1])
    picked = g.add('Gather', [reshape(g, boxes, [-1, 4]), flat], axis=0)[0]
    scores = g.add('Gather', [reshape(g, top_score, [-1]), flat], axis=0)[0]
    batch = g.add('Expand', [image_col, g.add('Shape', [pos])[0]])[0]       # (N, post)
    batch = cast(g, reshape(g, batch, [-1, 1]), np.float32)
    out = g.add('Concat', [batch, picked], axis=1)[0]
    outs = g.outputs(node)
    if dt != np.float32:
        out, scores = cast(g, out, dt), cast(g, scores, dt)
    g.add('Identity', [out], outs[:1])
    g.add('Reshape', [scores, i64(g, [-1, 1])], outs[1:2])


converter('_contrib_Proposal', '_contrib_MultiProposal')(_proposal)


# ------------------------------------------------------------------ box utilities
def _corners_of(g, boxes, fmt, dt):
    """(x1, y1, x2, y2, area) of (..., 4) boxes; the area 0 for negative extents."""
    a, b, c, d = (_col(g, boxes, k) for k in range(4))
    if fmt == 'corner':
        x1, y1, x2, y2 = a, b, c, d
        w, h = g.add('Sub', [c, a])[0], g.add('Sub', [d, b])[0]
    else:
        dt_two = scalar(g, 2, dt)
        hw, hh = g.add('Div', [c, dt_two])[0], g.add('Div', [d, dt_two])[0]
        x1, x2 = g.add('Sub', [a, hw])[0], g.add('Add', [a, hw])[0]
        y1, y2 = g.add('Sub', [b, hh])[0], g.add('Add', [b, hh])[0]
        w, h = c, d
    zero = scalar(g, 0, dt)
    nonneg = g.add('And', [g.add('GreaterOrEqual', [w, zero])[0],
                           g.add('GreaterOrEqual', [h, zero])[0]])[0]
    area = g.add('Where', [nonneg, g.add('Mul', [w, h])[0], zero])[0]
    return x1, y1, x2, y2, area


@claim('_contrib_box_iou')
def _box_iou(g, node):
    """IoU of every lhs box with every rhs box, MXNet's arithmetic (0 where the boxes do
    not intersect)."""
    lhs, rhs = g.inputs(node)
    dt = g.in_dtype(node, 0)
    fmt = g.attr(node, 'format')
    ls, rs = g.in_shape(node, 0), g.in_shape(node, 1)
    left = _corners_of(g, reshape(g, lhs, [-1, 1, 4]), fmt, dt)     # (L, 1) each
    right = _corners_of(g, reshape(g, rhs, [1, -1, 4]), fmt, dt)    # (1, R) each
    zero, one = scalar(g, 0, dt), scalar(g, 1, dt)

    def op(kind, u, v):
        return g.add(kind, [u, v])[0]
    w = op('Sub', op('Min', left[2], right[2]), op('Max', left[0], right[0]))
    h = op('Sub', op('Min', left[3], right[3]), op('Max', left[1], right[1]))
    pos_w = g.add('Where', [op('Greater', w, zero), w, zero])[0]
    pos_h = g.add('Where', [op('Greater', h, zero), h, zero])[0]
    inter = op('Mul', pos_w, pos_h)
    hit = op('Greater', inter, zero)
    den = g.add('Where', [hit, op('Sub', op('Add', left[4], right[4]), inter), one])[0]
    iou = g.add('Where', [hit, op('Div', inter, den), zero])[0]
    g.add('Reshape', [iou, i64(g, list(ls[:-1]) + list(rs[:-1]))], g.outputs(node)[:1])


@claim('_contrib_box_decode')
def _box_decode(g, node):
    """``contrib.box_decode`` (ops/detection.py's arithmetic): corner boxes from offsets
    and (1, N, 4) anchors."""
    x, anchors = g.inputs(node)
    dt = g.in_dtype(node, 0)
    a = squeeze(g, anchors, [0])

    def op(kind, u, v):
        return g.add(kind, [u, v])[0]
    half = scalar(g, 0.5, dt)
    if g.attr(node, 'format') == 'corner':
        a0, a1, a2, a3 = (_col(g, a, k) for k in range(4))
        aw, ah = op('Sub', a2, a0), op('Sub', a3, a1)
        ax, ay = op('Add', a0, op('Mul', aw, half)), op('Add', a1, op('Mul', ah, half))
    else:
        ax, ay, aw, ah = (_col(g, a, k) for k in range(4))
    d = [_col(g, x, k) for k in range(4)]
    std = [scalar(g, _f32(g.attr(node, 'std%d' % k)), dt) for k in range(4)]
    ox = op('Add', op('Mul', op('Mul', d[0], std[0]), aw), ax)
    oy = op('Add', op('Mul', op('Mul', d[1], std[1]), ah), ay)
    dw, dh = op('Mul', d[2], std[2]), op('Mul', d[3], std[3])
    clip = g.attr(node, 'clip')
    if clip > 0:
        dw = op('Min', dw, scalar(g, _f32(clip), dt))
        dh = op('Min', dh, scalar(g, _f32(clip), dt))
    ow = op('Mul', op('Mul', g.add('Exp', [dw])[0], aw), half)
    oh = op('Mul', op('Mul', g.add('Exp', [dh])[0], ah), half)
    g.add('Concat', [unsqueeze(g, v, [-1]) for v in (op('Sub', ox, ow), op('Sub', oy, oh),
                                                     op('Add', ox, ow), op('Add', oy, oh))],
          g.outputs(node)[:1], axis=-1)


@claim('_contrib_box_encode')
def _box_encode(g, node):
    """``contrib.box_encode`` (training targets; ops/detection.py's arithmetic): the
    matched reference of every anchor gathered per batch, centre/size offsets, masked by
    samples > 0.5, normalised by means and stds."""
    samples, matches, anchors, refs, means, stds = g.inputs(node)
    dt = g.in_dtype(node, 2)

    def op(kind, *xs):
        return g.add(kind, list(xs))[0]

    def centres(b):
        c = [_col(g, b, k) for k in range(4)]
        w, h = op('Sub', c[2], c[0]), op('Sub', c[3], c[1])
        half = scalar(g, 0.5, dt)
        return op('Add', c[0], op('Mul', w, half)), op('Add', c[1], op('Mul', h, half)), w, h
    valid = cast(g, op('Greater', samples, scalar(g, 0.5, g.in_dtype(node, 0))), dt)
    ref = _rows_at(g, refs, cast(g, matches, np.int64))                  # (B, N, 4)
    ax, ay, aw, ah = centres(anchors)
    rx, ry, rw, rh = centres(ref)
    t = _stack_last(g, [op('Div', op('Sub', rx, ax), aw), op('Div', op('Sub', ry, ay), ah),
                        g.add('Log', [op('Div', rw, aw)])[0],
                        g.add('Log', [op('Div', rh, ah)])[0]])
    v = unsqueeze(g, valid, [-1])
    outs = g.outputs(node)
    g.add('Div', [op('Mul', v, op('Sub', t, means)), stds], outs[:1])
    g.add('Expand', [v, g.add('Shape', [t])[0]], outs[1:2])


@claim('_contrib_bipartite_matching')
def _bipartite_matching(g, node):
    """Greedy bipartite matching (no ONNX operator): an ONNX Loop of min(N, M) steps
    (topk + 1 with topk > 0, as MXNet) each taking, per batch, the best remaining pair
    (ArgMin over the flattened scores, in float64 and negated unless is_ascend: the first
    of equal scores in row-major order) while its score is within the threshold, then
    closing its row and column (ops/detection.py's forward)."""
    from onnx import helper
    x, = g.inputs(node)
    shape = g.in_shape(node, 0)
    dt = g.in_dtype(node, 0)
    n, m = shape[-2], shape[-1]
    topk = g.attr(node, 'topk')
    most = min(n, m) if topk <= 0 else min(n, m, topk + 1)
    ascend = g.attr(node, 'is_ascend')
    limit = g.attr(node, 'threshold') if ascend else -g.attr(node, 'threshold')
    f64, i64s = np.float64, np.int64
    score = cast(g, reshape(g, x, [-1, n * m]), f64)
    if not ascend:
        score = g.add('Neg', [score])[0]
    batch = g.add('Slice', [g.add('Shape', [score])[0], i64(g, [0]), i64(g, [1])])[0]
    rows0, cols0 = (g.add('Expand', [i64(g, [[-1]]), g.add('Concat', [batch, i64(g, [k])],
                                                              axis=0)[0]])[0] for k in (n, m))
    active0 = g.add('Expand', [g.const(np.array([True])), batch])[0]        # (B,)
    names = [g.fresh(k) for k in ('step', 'cond', 'score', 'rows', 'cols', 'active')]
    saved, g.nodes = g.nodes, []
    try:
        it, cond, sc, rows, cols, active = names

        def op(kind, *xs, **kw):
            return g.add(kind, list(xs), **kw)[0]
        best = op('ArgMin', sc, axis=1, keepdims=1)                          # (B, 1)
        value = squeeze(g, op('GatherElements', sc, best, axis=1), [1])
        act = op('And', active, op('LessOrEqual', value, scalar(g, limit, f64)))
        r, c = op('Div', best, i64(g, m)), op('Mod', best, i64(g, m))         # (B, 1)
        a1 = unsqueeze(g, act, [1])
        new_rows = op('ScatterElements', rows, r,
                      op('Where', a1, c, op('GatherElements', rows, r, axis=1)), axis=1)
        new_cols = op('ScatterElements', cols, c,
                      op('Where', a1, r, op('GatherElements', cols, c, axis=1)), axis=1)
        hit_r = op('And', op('Equal', g.const(np.arange(n, dtype=i64s).reshape(1, n)), r), a1)
        hit_c = op('And', op('Equal', g.const(np.arange(m, dtype=i64s).reshape(1, m)), c), a1)
        gone = op('Or', unsqueeze(g, hit_r, [2]), unsqueeze(g, hit_c, [1]))  # (B, N, M)
        new_sc = reshape(g, op('Where', gone, scalar(g, np.inf, f64),
                               reshape(g, sc, [-1, n, m])), [-1, n * m])
        outs = [op('Identity', cond), new_sc, new_rows, new_cols, act]
    finally:
        body_nodes, g.nodes = g.nodes, saved
    vi = helper.make_tensor_value_info
    b_t, i_t, f_t = onnx_type(np.bool_), onnx_type(i64s), onnx_type(f64)
    body = helper.make_graph(
        body_nodes, g.fresh('matching_body'),
        [vi(it, i_t, []), vi(cond, b_t, []), vi(sc, f_t, [None, n * m]),
         vi(rows, i_t, [None, n]), vi(cols, i_t, [None, m]), vi(active, b_t, [None])],
        [vi(outs[0], b_t, []), vi(outs[1], f_t, [None, n * m]), vi(outs[2], i_t, [None, n]),
         vi(outs[3], i_t, [None, m]), vi(outs[4], b_t, [None])])
    true = g.add('Constant', [], value=np.array(True))[0]
    _, rows_out, cols_out, _ = g.add('Loop', [scalar(g, most, i64s), true, score, rows0,
                                              cols0, active0], 4, body=body)
    lead = list(shape[:-2])
    res = g.outputs(node)
    g.add('Reshape', [cast(g, rows_out, dt), i64(g, lead + [n])], res[:1])
    g.add('Reshape', [cast(g, cols_out, dt), i64(g, lead + [m])], res[1:2])
