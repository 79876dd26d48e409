"""Box operators: ``_contrib_box_nms``, ``_contrib_box_iou``, ``_contrib_nms``, and the box
coders ``_contrib_box_encode`` / ``_contrib_box_decode``.

The greedy NMS itself is in ``ops/_nms.py`` (:func:`nms_indices`,
:func:`greedy_nms_keep`): it never builds the n x n IoU matrix and reproduces MXNet's result
exactly (IoU > threshold suppresses, equal scores keep input order, MXNet's IoU arithmetic in
the data's dtype, compared with the float32 threshold exactly: for float16 data in float32,
as MXNet's ``half_t > float`` does, not in float16). ``valid_thresh`` is rounded to the
data's dtype first (MXNet's ``ScalarExp<DType>``). On CuPy arrays the sorting and
bookkeeping run on a host copy and the suppression itself -- the O(n^2) part -- runs the
bitmask kernel of ``symgraph.cuda.loader``
(:func:`_nms_keep`); IoUs are then recomputed from corners in the kernel, so a ``center``
box whose IoU equals the threshold to the last bit may be decided differently.
"""
import numpy as np

from symgraph.opdef import Operator, Param, ShapeError, register, same_type

from ._nms import to_host, box_corners, dtype_threshold, greedy_nms_keep, nms_indices
from ._util import f32
from symgraph.base import ParameterError

_FORMATS = ('center', 'corner')


def _nms_keep(xp, x1, y1, x2, y2, area, key, thresh):
    """Keep mask of greedy NMS over host arrays in score order (within each key).

    NumPy: :func:`greedy_nms_keep`. CuPy: the bitmask kernel, with the keys (batch and
    class) renumbered densely so that they fit the kernel's float class ids exactly; the
    kernel suppresses only within one id and walks the boxes in index order, which is
    score order inside each key. Negative thresholds (where disjoint boxes suppress each
    other) and float16 stay on the host. The kernel compares in the boxes' dtype, so it
    gets :func:`dtype_threshold`: the same decisions as the host's exact comparison.
    """
    if xp.__name__ != 'cupy' or thresh < 0 or x1.dtype not in (np.float32, np.float64):
        return greedy_nms_keep(x1, y1, x2, y2, area, key, thresh)
    from symgraph.cuda import loader
    ids = None
    if key.size and key.min() != key.max():
        ids = xp.asarray(np.unique(key, return_inverse=True)[1].astype(x1.dtype))
    boxes = xp.asarray(np.stack([x1, y1, x2, y2], axis=1))
    return to_host(loader.nms_keep(boxes, dtype_threshold(thresh, x1.dtype), ids))


def _nms_indices(xp, boxes, scores, thresh):
    """:func:`nms_indices` with the suppression of :func:`_nms_keep`.

    On CuPy with float32/float64 boxes and a threshold >= 0 everything stays on the
    device: a stable sort by decreasing score (CuPy's sorts are stable, so equal scores keep
    input order, as in MXNet), then the bitmask kernel; the result is a device array.
    Otherwise the result is a host array.
    """
    if xp.__name__ != 'cupy':
        return nms_indices(np, boxes, scores, thresh)
    if thresh >= 0 and boxes.dtype in (np.float32, np.float64):
        from symgraph.cuda import loader
        order = xp.argsort(-scores)
        keep = loader.nms_keep(xp.ascontiguousarray(boxes[order]),
                               dtype_threshold(thresh, boxes.dtype))
        return order[keep].astype(np.int64)
    b, s = to_host(boxes), to_host(scores)
    order = np.argsort(-s, kind='stable')
    x1, y1, x2, y2, area = box_corners(b[order], 'corner')
    keep = _nms_keep(xp, x1, y1, x2, y2, area, np.zeros(order.size, np.int64), thresh)
    return order[keep].astype(np.int64)


# ----------------------------------------------------------------------------------
# operators
# ----------------------------------------------------------------------------------
def _convert(coords, to):
    """MXNet's in-place format conversion, which skips rows whose first coordinate < 0."""
    a, b, c, d = (coords[..., i].copy() for i in range(4))
    if to == 'center':
        new = ((a + c) / 2, (b + d) / 2, c - a, d - b)
    else:
        new = (a - c / 2, b - d / 2, a + c / 2, b + d / 2)
    skip = a < 0
    for k in range(4):
        coords[..., k] = np.where(skip, coords[..., k], new[k])


@register
class BoxNMS(Operator):
    """Greedy NMS over the rows (score, id, box...) of the last two axes; kept rows move
    to the top in descending score order, the other rows become -1."""

    name = '_contrib_box_nms'
    aliases = ('_contrib_box_non_maximum_suppression',)
    overlap_thresh = Param(float, 0.5, doc='IoU above which the lower score is suppressed')
    valid_thresh = Param(float, 0.0, doc='rows need score > valid_thresh')
    topk = Param(int, -1, doc='only the topk valid rows per batch take part (-1: all)')
    coord_start = Param(int, 2, doc='first of the 4 coordinates')
    score_index = Param(int, 1, doc='column of the score')
    id_index = Param(int, -1, doc='column of the class id (-1: none)')
    background_id = Param(int, -1, doc='rows of this class are dropped (with id_index)')
    force_suppress = Param(bool, False, doc='suppress across classes')
    in_format = Param(str, 'corner', choices=_FORMATS, doc='input box encoding')
    out_format = Param(str, 'corner', choices=_FORMATS, doc='output box encoding')
    needs_inputs = False
    needs_outputs = True

    def check(self):
        if self.id_index >= 0 and self.id_index == self.score_index:
            raise ParameterError('box_nms: id_index %d conflicts with score_index'
                                 % self.id_index)

    def list_outputs(self):
        # the hidden second output records which input row each output row came from
        return ['output0', 'output1']

    def num_visible_outputs(self):
        return 1

    def infer_shape(self, in_shapes):
        s = in_shapes[0]
        if s is None:
            return [None], [None, None], []
        if len(s) < 2:
            raise ShapeError('box_nms data must have >= 2 dimensions (..., num_box, width), '
                             'got %s' % (tuple(s),))
        w = s[-1]
        if w:
            cols = {'coord_start': (self.coord_start, self.coord_start + 3),
                    'score_index': (self.score_index, self.score_index)}
            if self.id_index >= 0:
                cols['id_index'] = (self.id_index, self.id_index)
            for k, (lo, hi) in cols.items():
                if lo < 0 or hi >= w:
                    raise ShapeError('box_nms %s=%d is out of range for rows of width %d'
                                     % (k, lo, w))
            c0 = self.coord_start
            for k in ('score_index', 'id_index'):
                if k in cols and c0 <= cols[k][0] <= c0 + 3:
                    raise ShapeError('box_nms %s overlaps the coordinates' % k)
        return [s], [s, tuple(s[:-1]) + (1,)], []

    def infer_type(self, in_types):
        t = same_type(self, in_types)
        return [t], [t, t], []

    def forward(self, xp, inputs, aux, is_train):
        data = to_host(inputs[0])
        shape = data.shape
        n, w = shape[-2], shape[-1]
        flat = data.reshape(-1, w)
        nb = flat.shape[0] // n if n else 0
        topk = n if self.topk < 0 else min(n, self.topk)
        if topk < 1:
            rec = np.arange(flat.shape[0], dtype=data.dtype)
            return [xp.asarray(data.copy()), xp.asarray(rec.reshape(shape[:-1] + (1,)))]
        score = flat[:, self.score_index]
        # a Python float against a float array: compared in the data's dtype, i.e. with
        # valid_thresh rounded to it first, as MXNet's ScalarExp<DType> does (for float16
        # unlike overlap_thresh, which MXNet compares in float32: _nms.dtype_threshold)
        valid = score > f32(self.valid_thresh)
        if self.id_index >= 0:
            valid &= flat[:, self.id_index] != self.background_id
        rows = np.flatnonzero(valid)
        if nb == 1:
            rows = rows[np.argsort(-score[rows], kind='stable')][:topk]   # ties: input order
            batch = np.zeros(rows.size, np.int64)
        else:
            batch = rows // n
            rows = rows[np.lexsort((-score[rows], batch))]   # stable: ties in input order
            batch = rows // n
            first = np.searchsorted(batch, np.arange(nb))
            rank = np.arange(rows.size) - first[batch]
            rows, batch = rows[rank < topk], batch[rank < topk]
        key = batch.astype(np.int64) << 32
        if self.id_index >= 0 and not self.force_suppress:
            ids = np.nan_to_num(flat[rows, self.id_index].astype(np.float64))
            cls = np.clip(ids, -2.0 ** 31, 2.0 ** 31 - 1).astype(np.int64)  # C int cast
            key += cls + 2 ** 31
        # one contiguous array per coordinate (gathers from the strided columns)
        coords = np.stack([flat[:, self.coord_start + k][rows] for k in range(4)])
        x1, y1, x2, y2, area = box_corners(coords, self.in_format, axis=0)
        keep = _nms_keep(xp, x1, y1, x2, y2, area, key, f32(self.overlap_thresh))
        rows, batch = rows[keep], batch[keep]
        if nb == 1:
            pos = np.arange(rows.size)
        else:
            pos = batch * n + np.arange(rows.size) - np.searchsorted(batch, batch)
        out = np.full_like(flat, -1)
        out[pos] = flat[rows]
        rec = np.full(flat.shape[0], -1, data.dtype)
        rec[pos] = rows
        if self.in_format != self.out_format:
            _convert(out[:, self.coord_start:self.coord_start + 4], self.out_format)
        return [xp.asarray(out.reshape(shape)), xp.asarray(rec.reshape(shape[:-1] + (1,)))]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        dy = out_grads[0]
        w = dy.shape[-1]
        rec = outputs[1].reshape(-1).astype(np.int64)
        src = xp.flatnonzero(rec >= 0)
        dx = xp.zeros((rec.size, w), dy.dtype)
        dx[rec[src]] = dy.reshape(-1, w)[src]
        return [dx.reshape(dy.shape)]


@register
class BoxIOU(Operator):
    """IoU of every box of ``lhs`` (..., 4) with every box of ``rhs`` (..., 4)."""

    name = '_contrib_box_iou'
    format = Param(str, 'corner', choices=_FORMATS, doc='box encoding')
    no_grad = True
    needs_inputs = False

    def list_arguments(self):
        return ['lhs', 'rhs']

    def infer_shape(self, in_shapes):
        lhs, rhs = in_shapes
        for name, s in (('lhs', lhs), ('rhs', rhs)):
            if s is not None and (len(s) < 2 or s[-1] not in (0, 4)):
                raise ShapeError('box_iou %s must have shape (..., 4), got %s'
                                 % (name, tuple(s)))
        out = None if lhs is None or rhs is None else tuple(lhs[:-1]) + tuple(rhs[:-1])
        return [lhs, rhs], [out], []

    def forward(self, xp, inputs, aux, is_train):
        lhs, rhs = inputs
        left = box_corners(lhs.reshape(-1, 4), self.format)
        r = box_corners(rhs.reshape(-1, 4), self.format)
        lx1, ly1, lx2, ly2, la = (v[:, None] for v in left)
        w = xp.minimum(lx2, r[2]) - xp.maximum(lx1, r[0])
        h = xp.minimum(ly2, r[3]) - xp.maximum(ly1, r[1])
        inter = xp.where(w > 0, w, 0) * xp.where(h > 0, h, 0)
        pos = inter > 0
        # MXNet writes 0 wherever the intersection is empty (no 0/0)
        den = xp.where(pos, la + r[4] - inter, 1)
        out = xp.where(pos, inter / den, 0).astype(lhs.dtype, copy=False)
        return [out.reshape(lhs.shape[:-1] + rhs.shape[:-1])]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        return [xp.zeros_like(inputs[0]) if need[0] else None,
                xp.zeros_like(inputs[1]) if need[1] else None]


@register
class BipartiteMatching(Operator):
    """Greedy matching of rows to columns by score: ``data`` (..., N, M) gives the column
    of each row (..., N) and the row of each column (..., M), -1 where unmatched.

    Pairs are taken best score first (highest, or lowest with ``is_ascend``; ties in row-
    major order), each row and column once, while the score is not past ``threshold``.
    As MXNet 1.9.1 does, ``topk = k > 0`` stops after k + 1 matches.
    """

    name = '_contrib_bipartite_matching'
    is_ascend = Param(bool, False, doc='match the lowest scores first')
    threshold = Param(float, doc='scores below it (above it with is_ascend) never match')
    topk = Param(int, -1, doc='limit on the matches (-1: none)')
    no_grad = True
    needs_inputs = False

    def list_outputs(self):
        return ['output0', 'output1']

    def infer_shape(self, in_shapes):
        s = in_shapes[0]
        if s is None:
            return [None], [None, None], []
        if len(s) < 2:
            raise ShapeError('bipartite_matching needs data of shape (..., N, M), got %s'
                             % (tuple(s),))
        return [s], [tuple(s[:-1]), tuple(s[:-2]) + (s[-1],)], []

    def forward(self, xp, inputs, aux, is_train):
        data = inputs[0]
        *lead, n, m = data.shape
        b = int(np.prod(lead, dtype=np.int64))
        # in double, as MXNet compares the float score with its double threshold
        score = data.reshape(b, n * m).astype(np.float64)
        if not self.is_ascend:
            score = -score                      # best first = smallest here
        limit = -self.threshold if not self.is_ascend else self.threshold
        rows = xp.full((b, n), -1, dtype=np.int64)
        cols = xp.full((b, m), -1, dtype=np.int64)
        active = xp.ones(b, dtype=bool)
        batch = xp.arange(b)
        most = min(n, m) if self.topk <= 0 else min(n, m, self.topk + 1)
        # one match per batch and step: the best pair whose row and column are free (the
        # greedy sweep over the sorted pairs, one match at a time)
        for _ in range(most):
            best = xp.argmin(score, axis=1)     # first of equal scores: row-major order
            value = score[batch, best]
            active &= value <= limit
            r, c = best // m, best % m
            rows[batch[active], r[active]] = c[active]
            cols[batch[active], c[active]] = r[active]
            done = score.reshape(b, n, m)
            done[batch[active], r[active], :] = np.inf
            done[batch[active], :, c[active]] = np.inf
        dt = data.dtype
        return [rows.reshape(tuple(lead) + (n,)).astype(dt),
                cols.reshape(tuple(lead) + (m,)).astype(dt)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        return [xp.zeros_like(inputs[0]) if need[0] else None]


@register
class NMS(Operator):
    """symgraph's plain NMS (not an MXNet operator): ``contrib.nms(boxes, scores)``.

    ``boxes`` (N, 4) corner, ``scores`` (N,). The output (N,) int64 holds the kept indices
    in descending score order, then -1 padding: a static graph cannot give a result whose
    length depends on the data. No gradient.
    """

    name = '_contrib_nms'
    iou_threshold = Param(float, 0.5, doc='IoU above which the lower score is suppressed')
    no_grad = True
    needs_inputs = False

    def list_arguments(self):
        return ['boxes', 'scores']

    def infer_shape(self, in_shapes):
        boxes, scores = in_shapes
        if boxes is not None and (len(boxes) != 2 or boxes[1] not in (0, 4)):
            raise ShapeError('nms boxes must have shape (N, 4), got %s' % (tuple(boxes),))
        if scores is not None and len(scores) != 1:
            raise ShapeError('nms scores must have shape (N,), got %s' % (tuple(scores),))
        n = boxes[0] if boxes is not None else None
        if scores is not None:
            if n and scores[0] and n != scores[0]:
                raise ShapeError('nms boxes %s and scores %s disagree on N'
                                 % (tuple(boxes), tuple(scores)))
            n = n or scores[0]
        if n is None:
            return [boxes, scores], [None], []
        return [(n, 4), (n,)], [(n,)], []

    def infer_type(self, in_types):
        return list(in_types), [np.dtype(np.int64)], []

    def forward(self, xp, inputs, aux, is_train):
        boxes, scores = inputs
        kept = _nms_indices(xp, boxes, scores, self.iou_threshold)
        out = xp.full(boxes.shape[0], -1, dtype=np.int64)
        out[:kept.size] = xp.asarray(kept)
        return [out]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        return [xp.zeros_like(inputs[0]) if need[0] else None,
                xp.zeros_like(inputs[1]) if need[1] else None]


class _BoxCoder(Operator):
    """Shared by box_encode / box_decode: MXNet gives every input a zero gradient."""

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        return [xp.zeros_like(a) if n else None for a, n in zip(inputs, need)]


def _centers(b):
    """(x, y, w, h) of corner boxes (last axis)."""
    w = b[..., 2] - b[..., 0]
    h = b[..., 3] - b[..., 1]
    return b[..., 0] + w * 0.5, b[..., 1] + h * 0.5, w, h


@register
class BoxEncode(_BoxCoder):
    """Training targets of matched anchors (``contrib.box_encode``), as MXNet 1.9.1.

    samples (B, N): > 0.5 marks a positive anchor; matches (B, N): the matched row of refs;
    anchors (B, N, 4) and refs (B, M, 4) corner boxes; means, stds (4,). Outputs the
    targets ``((rx - ax) / aw - m0) / s0``, ``((ry - ay) / ah - m1) / s1``,
    ``(log(rw / aw) - m2) / s2``, ``(log(rh / ah) - m3) / s3`` times the 0/1 positive mask,
    and that mask, both (B, N, 4).
    """

    name = '_contrib_box_encode'

    def list_arguments(self):
        return ['samples', 'matches', 'anchors', 'refs', 'means', 'stds']

    def list_outputs(self):
        return ['output0', 'output1']

    def infer_shape(self, in_shapes):
        s, m, a, r, mu, sd = in_shapes
        names = self.list_arguments()

        def need(i, shape, ndim, last=None):
            if shape is not None and (len(shape) != ndim or (last and shape[-1] != last)):
                raise ShapeError('_contrib_box_encode: argument %r must be %d-D%s, got %s'
                                 % (names[i], ndim, ' ending in %d' % last if last else '',
                                    tuple(shape)))
        for i, (shape, nd, last) in enumerate(((s, 2, None), (m, 2, None), (a, 3, 4),
                                               (r, 3, 4), (mu, 1, 4), (sd, 1, 4))):
            need(i, shape, nd, last)
        bn = s or m or (a[:2] if a is not None else None)
        if bn is not None:
            bn = tuple(bn)
            for i, shape in ((0, s), (1, m), (2, a)):
                if shape is not None and tuple(shape[:2]) != bn:
                    raise ShapeError('_contrib_box_encode: argument %r %s does not match '
                                     '(B, N) = %s' % (names[i], tuple(shape), bn))
        out = None if bn is None else bn + (4,)
        return ([bn, bn, out, r, (4,), (4,)], [out, out], [])

    def forward(self, xp, inputs, aux, is_train):
        samples, matches, anchors, refs, means, stds = inputs
        dt = anchors.dtype.type
        valid = (samples > dt(0.5)).astype(anchors.dtype)
        idx = matches.astype(np.int64)
        b = xp.arange(refs.shape[0])[:, None]
        ref = refs[b, idx]
        ax, ay, aw, ah = _centers(anchors)
        rx, ry, rw, rh = _centers(ref)
        with np.errstate(divide='ignore', invalid='ignore'):
            t = xp.stack([(rx - ax) / aw, (ry - ay) / ah, xp.log(rw / aw), xp.log(rh / ah)],
                         axis=-1)
            t = valid[..., None] * (t - means) / stds
        mask = xp.broadcast_to(valid[..., None], t.shape).copy()
        return [t.astype(anchors.dtype, copy=False), mask]


@register
class BoxDecode(_BoxCoder):
    """Corner boxes from predicted offsets and anchors (``contrib.box_decode``).

    As MXNet 1.9.1: data (B, N, 4), anchors (1, N, 4) in ``format``; ``x = d0 * std0 * aw +
    ax``, ``y = d1 * std1 * ah + ay``, ``w = exp(min(d2 * std2, clip)) * aw`` (clip only when
    > 0), likewise h; output (B, N, 4) corner boxes; zero gradients.
    """

    name = '_contrib_box_decode'
    std0 = Param(float, 1.0, doc='scale of the x offset')
    std1 = Param(float, 1.0, doc='scale of the y offset')
    std2 = Param(float, 1.0, doc='scale of the width offset')
    std3 = Param(float, 1.0, doc='scale of the height offset')
    clip = Param(float, -1.0, doc='upper bound of the scaled width/height offsets if > 0')
    format = Param(str, 'center', doc="anchor encoding: 'center' or 'corner'",
                   choices=list(_FORMATS))

    def list_arguments(self):
        return ['data', 'anchors']

    def infer_shape(self, in_shapes):
        d, a = in_shapes
        for name, s in (('data', d), ('anchors', a)):
            if s is not None and (len(s) != 3 or s[2] != 4):
                raise ShapeError('_contrib_box_decode: argument %r must be (B, N, 4), got %s'
                                 % (name, tuple(s)))
        if d is not None and a is not None and (a[0] != 1 or a[1] != d[1]):
            raise ShapeError('_contrib_box_decode: anchors %s must be (1, N, 4) with N of '
                             'data %s' % (tuple(a), tuple(d)))
        return [d, a], [d], []

    def forward(self, xp, inputs, aux, is_train):
        x, anchors = inputs
        dt = x.dtype.type
        a = anchors[0]
        if self.format == 'corner':
            ax, ay, aw, ah = _centers(a)
        else:
            ax, ay, aw, ah = a[..., 0], a[..., 1], a[..., 2], a[..., 3]
        ox = x[..., 0] * dt(f32(self.std0)) * aw + ax
        oy = x[..., 1] * dt(f32(self.std1)) * ah + ay
        dw = x[..., 2] * dt(f32(self.std2))
        dh = x[..., 3] * dt(f32(self.std3))
        if self.clip > 0:
            dw = xp.minimum(dw, dt(f32(self.clip)))
            dh = xp.minimum(dh, dt(f32(self.clip)))
        ow = xp.exp(dw) * aw * dt(0.5)
        oh = xp.exp(dh) * ah * dt(0.5)
        return [xp.stack([ox - ow, oy - oh, ox + ow, oy + oh], axis=-1).astype(x.dtype,
                                                                              copy=False)]
