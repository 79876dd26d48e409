"""Box operators: ``_contrib_box_nms``, ``_contrib_box_iou`` and ``_contrib_nms``.

Greedy non-maximum suppression lives in pure NumPy functions (:func:`nms_indices`,
:func:`greedy_nms_keep`) that never build the full n x n IoU matrix: a uniform grid over the
boxes yields the pairs that can overlap, their IoUs are computed vectorised, and the greedy
pass resolves the sparse "i suppresses j" edges in vectorised rounds. The result is exactly
sequential greedy NMS (suppress when IoU > threshold, boxes in descending score order, equal
scores in input order), with MXNet's IoU arithmetic in the data's dtype.

On CuPy arrays box_nms currently runs this host algorithm on a copy (a GPU bitmask kernel
can replace :func:`greedy_nms_keep` without changing the operators).
"""
import numpy as np

from symgraph.opdef import Operator, Param, ShapeError, register, same_type

_FORMATS = ('center', 'corner')


def _host(a):
    """A NumPy view/copy of an xp array (CuPy arrays have ``.get()``)."""
    return np.asarray(a) if isinstance(a, np.ndarray) or not hasattr(a, 'get') else a.get()


def _f32(v):
    return float(np.float32(v))


# ----------------------------------------------------------------------------------
# box arithmetic as MXNet does it (bounding_box-common.h)
# ----------------------------------------------------------------------------------
def box_corners(coords, fmt):
    """(x1, y1, x2, y2) and MXNet's areas (0 for negative extents) of (..., 4) boxes."""
    a, b, c, d = (coords[..., i] for i in range(4))
    if fmt == 'corner':
        w, h = c - a, d - b
        x1, y1, x2, y2 = a, b, c, d
    else:
        w, h = c, d
        x1, x2 = a - c / 2, a + c / 2
        y1, y2 = b - d / 2, b + d / 2
    area = (w * h) * ((w >= 0) & (h >= 0))
    return x1, y1, x2, y2, area


def pair_iou(x1, y1, x2, y2, area, i, j):
    """IoU of boxes ``i[k]`` and ``j[k]`` (index arrays), MXNet's formula and dtype."""
    w = np.minimum(x2[i], x2[j]) - np.maximum(x1[i], x1[j])
    h = np.minimum(y2[i], y2[j]) - np.maximum(y1[i], y1[j])
    inter = np.where(w > 0, w, 0) * np.where(h > 0, h, 0)
    with np.errstate(invalid='ignore', divide='ignore'):
        return inter / (area[i] + area[j] - inter)


# ----------------------------------------------------------------------------------
# greedy NMS without the n x n matrix
# ----------------------------------------------------------------------------------
class _Grid:
    """A uniform grid over boxes with a positive, finite extent (float64 copies).

    A box is entered in every cell it touches; cells are per key (batch and class), so
    boxes of different keys never meet. A pair of boxes is reported once, by the cell
    holding the top-left corner of their intersection.
    """

    def __init__(self, x1, y1, x2, y2, key, max_factor=16):
        self.x1, self.y1 = x1.astype(np.float64), y1.astype(np.float64)
        self.x2, self.y2 = x2.astype(np.float64), y2.astype(np.float64)
        self.ox, self.oy = self.x1.min(), self.y1.min()
        span = max(self.x2.max() - self.ox, self.y2.max() - self.oy)
        side = np.maximum(self.x2 - self.x1, self.y2 - self.y1)
        cs = max(float(np.median(side)), span / 4096.0)
        while True:
            self.cs = cs
            cx0, cy0, nx, ny = self._span(slice(None))
            if (nx * ny).sum() <= max_factor * x1.size + 4096:
                break
            cs *= 2.0       # a few very large boxes: coarser cells, fewer replicas
        self.cx0, self.cy0 = cx0, cy0
        self.gx = int((cx0 + nx).max()) + 1
        self.gy = int((cy0 + ny).max()) + 1
        self.kr = np.unique(key, return_inverse=True)[1].reshape(-1).astype(np.int64)

    def _cell(self, v, o):
        return np.floor((v - o) / self.cs).astype(np.int64)

    def _span(self, sel):
        if isinstance(sel, slice):
            cx0, cy0 = self._cell(self.x1, self.ox), self._cell(self.y1, self.oy)
        else:
            cx0, cy0 = self.cx0[sel], self.cy0[sel]
        nx = self._cell(self.x2[sel], self.ox) - cx0 + 1
        ny = self._cell(self.y2[sel], self.oy) - cy0 + 1
        return cx0, cy0, nx, ny

    def entries(self, sel):
        """(box, cell, cx, cy) of boxes ``sel`` (ascending), sorted by cell then box."""
        cx0, cy0, nx, ny = self._span(sel)
        per = nx * ny
        i = np.repeat(np.arange(sel.size), per)
        local = np.arange(i.size) - np.repeat(np.cumsum(per) - per, per)
        cx, cy = cx0[i] + local % nx[i], cy0[i] + local // nx[i]
        box = sel[i]
        cell = (self.kr[box] * self.gy + cy) * self.gx + cx
        order = np.argsort(cell, kind='stable')
        return box[order], cell[order], cx[order], cy[order]

    def _owned(self, a, b, cx, cy):
        """Pairs reported by the cell (cx, cy) that owns them and that truly overlap.

        floor is monotonic, so the cell of the intersection's corner is the larger of the
        two boxes' first cells: the ownership test needs integers only.
        """
        own = ((np.maximum(self.cx0[a], self.cx0[b]) == cx)
               & (np.maximum(self.cy0[a], self.cy0[b]) == cy))
        a, b = a[own], b[own]
        ok = ((np.minimum(self.x2[a], self.x2[b]) > np.maximum(self.x1[a], self.x1[b]))
              & (np.minimum(self.y2[a], self.y2[b]) > np.maximum(self.y1[a], self.y1[b])))
        return a[ok], b[ok]

    def pairs_within(self, sel):
        """Overlapping pairs (i, j), i < j, among boxes ``sel``."""
        box, cell, cx, cy = self.entries(sel)
        bounds = np.flatnonzero(np.diff(cell)) + 1
        sizes = np.diff(np.concatenate(([0], bounds, [cell.size])))
        cnt = np.repeat(np.append(bounds, cell.size), sizes) - np.arange(cell.size) - 1
        first = np.repeat(np.arange(cell.size), cnt)
        second = first + 1 + np.arange(first.size) - np.repeat(np.cumsum(cnt) - cnt, cnt)
        return self._owned(box[first], box[second], cx[first], cy[first])

    def pairs_between(self, sel_a, sel_b):
        """Overlapping pairs (i, j), i from ``sel_a``, j from ``sel_b``."""
        abox, acell, acx, acy = self.entries(sel_a)
        bbox, bcell = self.entries(sel_b)[:2]
        lo = np.searchsorted(bcell, acell, 'left')
        cnt = np.searchsorted(bcell, acell, 'right') - lo
        first = np.repeat(np.arange(acell.size), cnt)
        second = np.repeat(lo - np.cumsum(cnt) + cnt, cnt) + np.arange(first.size)
        return self._owned(abox[first], bbox[second], acx[first], acy[first])


def _resolve_greedy(n, src, dst, max_rounds=64):
    """Keep mask of sequential greedy suppression given edges ``src < dst`` (src suppresses
    dst when src is kept). Vectorised rounds decide every box whose suppressors are all
    decided; a long chain left after ``max_rounds`` is finished by a sweep over kept boxes.
    """
    state = np.zeros(n, np.int8)                   # 0 undecided, 1 kept, 2 suppressed
    for _ in range(max_rounds):
        live = (state[dst] == 0) & (state[src] != 2)
        src, dst = src[live], dst[live]
        hit = state[src] == 1
        state[dst[hit]] = 2
        live = (state[dst] == 0) & (state[src] != 2)
        src, dst = src[live], dst[live]
        has_in = np.zeros(n, bool)
        has_in[dst] = True
        state[(state == 0) & ~has_in] = 1
        if not src.size:
            return state == 1
    order = np.argsort(src, kind='stable')
    src, dst = src[order], dst[order]
    starts = np.searchsorted(src, np.arange(n + 1))
    for i in np.flatnonzero(state == 0):           # in score order; only the chain's boxes
        if state[i] == 0:
            state[i] = 1
            state[dst[starts[i]:starts[i + 1]]] = 2
    return state == 1


def _dense_greedy(x1, y1, x2, y2, area, key, thresh):
    """Reference greedy loop (used for negative thresholds, where disjoint boxes
    suppress each other too)."""
    n = x1.shape[0]
    alive = np.ones(n, bool)
    keep = np.zeros(n, bool)
    for i in range(n):
        if not alive[i]:
            continue
        keep[i] = True
        j = np.arange(i + 1, n)
        j = j[alive[j] & (key[j] == key[i])]
        with np.errstate(invalid='ignore'):
            alive[j[pair_iou(x1, y1, x2, y2, area, np.full(j.size, i), j) > thresh]] = False
    return keep


def greedy_nms_keep(x1, y1, x2, y2, area, key, thresh, first_block=256):
    """Keep mask of greedy NMS over boxes already in descending score order.

    Parameters
    ----------
    x1, y1, x2, y2, area : ndarray, shape (n,)
        corner coordinates and areas (MXNet's: 0 for negative extents), one dtype.
    key : ndarray of int64, shape (n,)
        boxes only suppress boxes of the same key (batch and class).
    thresh : float
        a box is suppressed when its IoU with a kept, higher-ranked box is > thresh.

    Notes
    -----
    Blocks of doubling size are taken in score order: greedy within the block's surviving
    boxes, then the block's kept boxes suppress the later boxes they overlap. In clustered
    detections the first blocks remove most boxes, so few pairs are ever formed.
    """
    n = x1.shape[0]
    if thresh < 0:
        return _dense_greedy(x1, y1, x2, y2, area, key, thresh)
    with np.errstate(invalid='ignore'):
        ok = (x2 > x1) & (y2 > y1)
    ok &= np.isfinite(x1) & np.isfinite(x2) & np.isfinite(y1) & np.isfinite(y2)
    # a box without a positive finite extent has IoU 0 or NaN with everything: kept
    keep = ~ok
    pos = np.flatnonzero(ok)
    if pos.size < 2:
        return keep | ok
    cx1, cy1, cx2, cy2, ca = x1[pos], y1[pos], x2[pos], y2[pos], area[pos]
    grid = _Grid(cx1, cy1, cx2, cy2, key[pos])
    m = pos.size
    alive = np.ones(m, bool)
    start, size = 0, first_block
    while start < m:
        stop = min(m, start + size)
        block = start + np.flatnonzero(alive[start:stop])
        i, j = grid.pairs_within(block)
        with np.errstate(invalid='ignore'):
            sup = pair_iou(cx1, cy1, cx2, cy2, ca, i, j) > thresh
        kb = _resolve_greedy(m, i[sup], j[sup])[block]
        alive[block[~kb]] = False
        later = stop + np.flatnonzero(alive[stop:])
        if later.size and kb.any():
            i, j = grid.pairs_between(block[kb], later)
            with np.errstate(invalid='ignore'):
                alive[j[pair_iou(cx1, cy1, cx2, cy2, ca, i, j) > thresh]] = False
        start, size = stop, size * 2
    keep[pos[alive]] = True
    return keep


def nms_indices(xp, boxes, scores, thresh=0.5, fmt='corner'):
    """Indices of the boxes greedy NMS keeps, highest score first.

    Parameters
    ----------
    xp : module
        numpy or cupy (a CuPy input is processed on the host).
    boxes : array, shape (n, 4)
        corner (x1, y1, x2, y2) or center (x, y, w, h) boxes.
    scores : array, shape (n,)
    thresh : float
        IoU above which the lower-scored box is suppressed.

    Returns
    -------
    ndarray of int64 (on ``xp``), kept indices in descending score order (equal scores in
    input order).

    Examples
    --------
    >>> b = np.array([[0, 0, 2, 2], [0, 0, 2, 2.1], [5, 5, 6, 6]], np.float32)
    >>> nms_indices(np, b, np.array([0.8, 0.9, 0.1], np.float32)).tolist()
    [1, 2]
    """
    b, s = _host(boxes), _host(scores)
    order = np.argsort(-s, kind='stable')
    x1, y1, x2, y2, area = box_corners(b[order], fmt)
    keep = greedy_nms_keep(x1, y1, x2, y2, area, np.zeros(order.size, np.int64), thresh)
    return xp.asarray(order[keep].astype(np.int64))


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
        data = _host(inputs[0])
        shape = data.shape
        n, w = shape[-2], shape[-1]
        flat = data.reshape(-1, w)
        nb = flat.shape[0] // n if n else 0
        topk = n if self.topk < 0 else min(n, self.topk)
        if topk < 1:
            rec = np.arange(flat.shape[0], dtype=data.dtype)
            return [xp.asarray(data.copy()), xp.asarray(rec.reshape(shape[:-1] + (1,)))]
        score = flat[:, self.score_index]
        valid = score > _f32(self.valid_thresh)
        if self.id_index >= 0:
            valid &= flat[:, self.id_index] != self.background_id
        rows = np.flatnonzero(valid)
        batch = rows // n
        rows = rows[np.lexsort((-score[rows], batch))]       # stable: ties in input order
        batch = rows // n
        first = np.searchsorted(batch, np.arange(nb))
        rank = np.arange(rows.size) - first[batch]
        rows, batch = rows[rank < topk], batch[rank < topk]
        key = batch.astype(np.int64) << 32
        if self.id_index >= 0 and not self.force_suppress:
            ids = np.nan_to_num(flat[rows, self.id_index].astype(np.float64))
            cls = np.clip(ids, -2.0 ** 31, 2.0 ** 31 - 1).astype(np.int64)  # C int cast
            key += cls + 2 ** 31
        coords = flat[rows, self.coord_start:self.coord_start + 4]
        x1, y1, x2, y2, area = box_corners(coords, self.in_format)
        keep = greedy_nms_keep(x1, y1, x2, y2, area, key, _f32(self.overlap_thresh))
        rows, batch = rows[keep], batch[keep]
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
        l = box_corners(lhs.reshape(-1, 4), self.format)
        r = box_corners(rhs.reshape(-1, 4), self.format)
        lx1, ly1, lx2, ly2, la = (v[:, None] for v in l)
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
        kept = nms_indices(np, boxes, scores, self.iou_threshold)
        out = np.full(boxes.shape[0], -1, np.int64)
        out[:kept.size] = kept
        return [xp.asarray(out)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        return [xp.zeros_like(inputs[0]) if need[0] else None,
                xp.zeros_like(inputs[1]) if need[1] else None]
