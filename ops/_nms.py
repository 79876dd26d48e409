"""Greedy non-maximum suppression without the n x n IoU matrix (NumPy).

A uniform grid over the boxes yields only the pairs that can overlap; their IoUs are
computed vectorised with MXNet's arithmetic (in the boxes' dtype), and the greedy pass
resolves the sparse "i suppresses j" edges in vectorised rounds. Blocks of doubling size
are taken in score order, so in clustered detections the first kept boxes remove most of
the others before many pairs are formed. The result is exactly sequential greedy NMS:
suppress when IoU > threshold, boxes in descending score order, equal scores in input order.

Used by ``_contrib_box_nms`` and ``_contrib_nms`` (ops/detection.py). A GPU bitmask kernel
can replace :func:`greedy_nms_keep` without changing the operators.
"""
import numpy as np


def to_host(a):
    """A NumPy view/copy of an xp array (CuPy arrays have ``.get()``)."""
    return np.asarray(a) if isinstance(a, np.ndarray) or not hasattr(a, 'get') else a.get()


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
    # in score order over the boxes still involved: the undecided ones and the kept ones
    # whose suppressions are not applied yet
    for i in np.union1d(src, np.flatnonzero(state == 0)):
        if state[i] != 2:
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


def greedy_nms_first(x1, y1, x2, y2, area, thresh, limit):
    """Indices of the first ``limit`` boxes greedy NMS keeps (boxes in descending score
    order, one image), as MXNet's Proposal computes them.

    Each kept box is compared with the boxes still alive after it only, and the pass stops
    once ``limit`` boxes are kept: O(limit * n) work and O(n) memory however crowded the
    boxes are (:func:`greedy_nms_keep` forms every overlapping pair, which for thousands
    of large proposals in one image is most of the n^2). Same decisions as
    :func:`greedy_nms_keep`: suppressed when the IoU with a kept, higher-ranked box is
    > ``thresh``; a box whose IoUs are NaN (no positive extent) suppresses nothing.
    """
    alive = np.arange(x1.size)
    kept = []
    with np.errstate(invalid='ignore', divide='ignore'):
        while alive.size and len(kept) < limit:
            i, rest = alive[0], alive[1:]
            kept.append(i)
            alive = rest[~(pair_iou(x1, y1, x2, y2, area, i, rest) > thresh)]
    return np.asarray(kept, dtype=np.int64)


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
    b, s = to_host(boxes), to_host(scores)
    order = np.argsort(-s, kind='stable')
    x1, y1, x2, y2, area = box_corners(b[order], fmt)
    keep = greedy_nms_keep(x1, y1, x2, y2, area, np.zeros(order.size, np.int64), thresh)
    return xp.asarray(order[keep].astype(np.int64))
