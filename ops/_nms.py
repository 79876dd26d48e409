"""Greedy non-maximum suppression without the n x n IoU matrix (NumPy).

A computed IoU above the threshold t bounds how far apart two boxes' centres can be,
relative to the smaller box (:func:`_window_factor`), so each box only meets the boxes
whose centres lie in a window about its own size: rows of centres sorted by x per key
(:class:`_Rows`) give them by ``searchsorted``. Their IoUs are computed vectorised with
MXNet's arithmetic (in the boxes' dtype) and compared with the threshold exactly, as
MXNet compares a ``half_t`` IoU with its ``float`` threshold (in float32, not float16;
:func:`dtype_threshold`). Three ways to resolve the greedy order:

* one pass: every candidate pair once (half windows), then :func:`_resolve_greedy`
  over the suppression edges (few neighbours per box);
* sparse blocks in score order: a block's live boxes against the later live boxes, so
  that boxes suppressed early are never searched from (many neighbours per box);
* dense blocks: greedy over the top live boxes of every key from all their same-key
  pairs, then their kept boxes against the later boxes in their windows (or all later
  boxes, where the windows hold most of them), while the boxes are so crowded that
  windows hold many of them; the rows are then rebuilt over the boxes left.

The result is exactly sequential greedy NMS: suppress when IoU > threshold, boxes in
descending score order, equal scores in input order.

Used by ``_contrib_box_nms`` and ``_contrib_nms`` (ops/detection.py) and by
MultiBoxDetection. On CuPy the operators use the bitmask kernel instead (float16 and
negative thresholds excepted).
"""
import numpy as np


def to_host(a):
    """A NumPy view/copy of an xp array (CuPy arrays have ``.get()``)."""
    return np.asarray(a) if isinstance(a, np.ndarray) or not hasattr(a, 'get') else a.get()


# ----------------------------------------------------------------------------------
# box arithmetic as MXNet does it (bounding_box-common.h)
# ----------------------------------------------------------------------------------
def box_corners(coords, fmt, axis=-1):
    """(x1, y1, x2, y2) and MXNet's areas (0 for negative extents) of (..., 4) boxes
    (``axis=0``: of (4, ...) boxes)."""
    a, b, c, d = (coords[i] if axis == 0 else coords[..., i] for i in range(4))
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


def dtype_threshold(thresh, dtype):
    """The largest value of ``dtype`` that is <= ``thresh`` (a float): for every IoU ``x``
    of that dtype, ``x > dtype_threshold(thresh)`` (compared in the dtype) exactly when the
    real number x exceeds ``thresh``.

    MXNet's box_nms compares its float16 IoU (``half_t``) with the ``float`` threshold in
    float32 (mshadow's mixed ``half_t > float``), so 0.7002 (0.7 rounded to float16) is
    above 0.7f; comparing in float16 with the threshold rounded to nearest, as NumPy does
    with a Python float, would keep such a box. Non-float dtypes get ``thresh`` back.

    >>> dtype_threshold(0.7, np.dtype(np.float16)) < 0.7 < float(np.float16(0.7))
    True
    """
    if not np.issubdtype(dtype, np.floating):
        return thresh
    with np.errstate(over='ignore'):                    # beyond the range: +-inf
        t = np.asarray(thresh, dtype=dtype)[()]
    if float(t) > thresh:
        t = np.nextafter(t, dtype.type(-np.inf))
    return float(t)


# ----------------------------------------------------------------------------------
# greedy NMS without the n x n matrix
# ----------------------------------------------------------------------------------
#: candidate pairs one search step holds at once (memory bound of the sparse path)
_CHUNK = 1 << 21
#: the sparse path runs when its candidate pairs are at most this many ...
_SPARSE_MAX = 1 << 23
#: ... and at most this share of the same-key pairs (or below _SPARSE_SMALL): denser
#: boxes first go through blocks of the dense path, whose kept boxes remove most others
_SPARSE_SHARE = 0.1
_SPARSE_SMALL = 1 << 17
_ROWDIV = 2.0
#: one pass over all candidate pairs when there are at most this many per box; more
#: neighbours mean more suppression, and blocks in score order skip suppressed boxes
_ONE_PASS = 24
#: boxes in the first block of the sparse blocks (256 searched from 4x more boxes than
#: needed when most are suppressed: issue 13's boxes at threshold 0, clusters at 0.5)
_SPARSE_FIRST = 64


def _window_factor(thresh, dtype, min_area):
    """``f`` such that a computed IoU > ``thresh`` implies ``|cx_i - cx_j| < f * min(rx_i,
    rx_j)`` for centres cx and half-widths rx (likewise in y); ``inf`` where no such bound
    is safe.

    Exactly, the IoU is at most the 1-D IoU of the x intervals, iw / (w_i + w_j - iw)
    (equal, aligned heights maximise it), so IoU > u needs min(rx) > u max(rx) (iw <=
    2 min(rx)) and, with iw <= rx_i + rx_j - |d|, |d| < (rx_i + rx_j)(1 - u)/(1 + u) <
    min(rx)(1 - u)/u; nested boxes sharing an edge reach the bound. ``u`` is ``thresh``
    less a margin of 64 ulps of the dtype, far more than the few roundings of MXNet's
    IoU; overflow only lowers a computed IoU (to 0 or NaN), and boxes whose products may
    be subnormal (where roundings are not relative) get no bound.
    """
    if not np.issubdtype(dtype, np.floating):
        return np.inf
    fi = np.finfo(dtype)
    u = thresh * (1.0 - 64.0 * float(fi.eps))
    if u <= 0 or not u * min_area > float(fi.tiny) * 2.0 ** (fi.nmant + 4):
        return np.inf
    return max(0.0, (1.0 - u) / u)


class _Rows:
    """Boxes in rows of their centres' y (per key), sorted by centre x within a row.

    ``query`` gives, for every box, the boxes whose centre lies in its window (centre x
    within ``hx`` -- or, with ``half``, in [x, x + hx] only, so that each pair is found
    once, by its left box -- and centre y within ``hy``), as ranges of the sorted order.
    Coordinates are float64, normalised to the unit square; windows get a slack of a few
    ulps of the sort key, so the ranges hold every box whose centre is in the window.
    """

    def __init__(self, cx, cy, hx, hy, kr):
        self.cx, self.cy, self.hx, self.hy, self.kr = cx, cy, hx, hy, kr
        n = cx.size
        oy = cy.min()
        tall = 2.0 * hy
        mid = tall.size // 2
        s = max(float(np.partition(tall, mid)[mid]) / _ROWDIV, (cy.max() - oy) / 4096.0,
                1e-12)
        while True:             # a few very tall windows: coarser rows, fewer queries
            r0 = np.floor((cy - hy - oy) / s - 1e-7).astype(np.int64)
            r1 = np.floor((cy + hy - oy) / s + 1e-7).astype(np.int64)
            row = np.floor((cy - oy) / s).astype(np.int64)
            nrows = int(row.max()) + 1
            np.clip(r0, 0, nrows - 1, out=r0)
            np.clip(r1, 0, nrows - 1, out=r1)
            nq = r1 - r0 + 1
            if nq.sum() <= 16 * n + 1024:
                break
            s *= 2.0
        width = 2.0 + 2.0 * float(hx.max())
        comp = (kr * nrows + row) * width + cx
        self.order = np.argsort(comp, kind='stable')
        self.comp = comp[self.order]
        self.slack = 8.0 * float(np.spacing(max(abs(self.comp[-1]), 1.0))) + 1e-12
        self.nq, self.qstart = nq, np.cumsum(nq) - nq
        self.qbox = np.repeat(np.arange(n), nq)
        local = np.arange(self.qbox.size) - np.repeat(self.qstart, nq)
        self.base = ((kr * nrows)[self.qbox] + r0[self.qbox] + local) * width

    def query(self, half, boxes=None):
        """(qbox, lo, cnt): box ``qbox[k]`` meets the sorted boxes lo[k] .. lo[k]+cnt[k]-1
        (for all boxes, or for the boxes ``boxes``, ascending)."""
        qbox, base = self.qbox, self.base
        if boxes is not None:
            nq = self.nq[boxes]
            at = np.repeat(self.qstart[boxes] - (np.cumsum(nq) - nq), nq) + np.arange(
                nq.sum())
            qbox, base = qbox[at], base[at]
        x = base + self.cx[qbox]
        h = self.hx[qbox] + self.slack
        lo = np.searchsorted(self.comp, x - (self.slack if half else h), 'left')
        hi = np.searchsorted(self.comp, x + h, 'right')
        return qbox, lo, np.maximum(hi - lo, 0)

    def sorted_boxes(self, *arrays):
        """``arrays`` (one value per box) in the sorted order of the rows."""
        return [np.take(v, self.order) for v in arrays]


def _iou_block(x1, y1, x2, y2, area, i, j):
    """IoU matrix of boxes ``i`` (rows) against ``j`` (columns): :func:`pair_iou`'s
    arithmetic, broadcast."""
    w = np.minimum(x2[i][:, None], x2[j]) - np.maximum(x1[i][:, None], x1[j])
    h = np.minimum(y2[i][:, None], y2[j]) - np.maximum(y1[i][:, None], y1[j])
    inter = np.where(w > 0, w, 0) * np.where(h > 0, h, 0)
    with np.errstate(invalid='ignore', divide='ignore'):
        return inter / (area[i][:, None] + area[j] - inter)


def _greedy_small(sup):
    """Greedy keep mask of a small square block, ``sup[a, b]``: a suppresses b if kept
    (only a < b set). Rows become Python ints used as bit sets."""
    n = sup.shape[0]
    packed = np.packbits(sup, axis=1, bitorder='little')
    keep = np.zeros(n, bool)
    gone = 0
    for a in range(n):
        if not (gone >> a) & 1:
            keep[a] = True
            gone |= int.from_bytes(packed[a].tobytes(), 'little')
    return keep


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


def greedy_nms_keep(x1, y1, x2, y2, area, key, thresh, first_block=64):
    """Keep mask of greedy NMS over boxes already in descending score order.

    Parameters
    ----------
    x1, y1, x2, y2, area : ndarray, shape (n,)
        corner coordinates and areas (MXNet's: 0 for negative extents), one dtype.
    key : ndarray of int64, shape (n,)
        boxes only suppress boxes of the same key (batch and class).
    thresh : float
        a box is suppressed when its IoU with a kept, higher-ranked box (computed in the
        boxes' dtype) is > thresh, compared exactly (:func:`dtype_threshold`).
    first_block : int
        boxes in the first block of the dense path (see Notes).

    Notes
    -----
    Sparse path: the pairs that can have an IoU above ``thresh`` (centres close enough,
    :func:`_window_factor`) come from rows of centres sorted by x (:class:`_Rows`), their
    IoUs are computed with MXNet's formula, and :func:`_resolve_greedy` resolves the
    edges. When that finds too many pairs (boxes crowded together, or low thresholds,
    whose windows are wide), blocks of the highest-ranked live boxes of every key
    (``first_block``, doubling) go through the dense path first: greedy inside the
    block, and the kept boxes' IoUs with the later boxes of their keys, which in
    clusters removes most of them; then the search is rebuilt over the boxes left.
    """
    negative = thresh < 0
    thresh = dtype_threshold(thresh, x1.dtype)
    if negative:
        return _dense_greedy(x1, y1, x2, y2, area, key, thresh)
    with np.errstate(invalid='ignore'):
        ok = (x2 > x1) & (y2 > y1)
    ok &= np.isfinite(x1) & np.isfinite(x2) & np.isfinite(y1) & np.isfinite(y2)
    # a box without a positive finite extent has IoU 0 or NaN with everything: kept
    keep = ~ok
    pos = np.flatnonzero(ok)
    if pos.size < 2:
        return keep | ok
    whole = pos.size == x1.size
    kr = np.zeros(pos.size, np.int64)
    k = key[pos]
    if k.min() != k.max():
        kr = np.unique(k, return_inverse=True)[1].reshape(-1).astype(np.int64)
        perm = np.argsort(kr, kind='stable')            # key-major, score order inside
        pos, kr = pos[perm], kr[perm]
        whole = False
    nkeys = int(kr[-1]) + 1 if kr.size else 1
    if whole:
        bx1, by1, bx2, by2, ba = x1, y1, x2, y2, area
    else:
        bx1, by1, bx2, by2, ba = x1[pos], y1[pos], x2[pos], y2[pos], area[pos]
    fx1, fy1 = bx1.astype(np.float64), by1.astype(np.float64)
    fx2, fy2 = bx2.astype(np.float64), by2.astype(np.float64)
    rx, ry = (fx2 - fx1) * 0.5, (fy2 - fy1) * 0.5
    f = _window_factor(thresh, bx1.dtype, float((4.0 * rx * ry).min()))
    ox, oy = fx1.min(), fy1.min()
    span = max(fx2.max() - ox, fy2.max() - oy)
    span = span if 0 < span < np.inf else 1.0
    cx, cy = ((fx1 + fx2) * 0.5 - ox) / span, ((fy1 + fy2) * 0.5 - oy) / span
    rx, ry = rx / span, ry / span
    hx = np.minimum(f * rx, rx + rx.max()) if f < np.inf else rx + rx.max()
    hy = np.minimum(f * ry, ry + ry.max()) if f < np.inf else ry + ry.max()

    m = pos.size
    kept = np.zeros(m, bool)
    alive = np.arange(m)
    block = max(1, int(first_block))
    sblock = _SPARSE_FIRST
    while alive.size:
        rows = _Rows(cx[alive], cy[alive], hx[alive], hy[alive], kr[alive])
        qbox, lo, cnt = rows.query(half=True)
        total = int(cnt.sum())
        same = np.bincount(kr[alive], minlength=nkeys)
        if total > max(_SPARSE_SMALL, min(_SPARSE_MAX, _SPARSE_SHARE * float(
                (same * (same - 1.0) / 2).sum()))):
            alive = _dense_step(rows, total, alive, block, kept, (bx1, by1, bx2, by2, ba),
                                thresh)
            block = min(2 * block, 1024)
            continue
        boxes = [v if alive.size == m else v[alive] for v in (bx1, by1, bx2, by2, ba)]
        if total <= _ONE_PASS * alive.size:
            src, dst = _sparse_edges(rows, qbox, lo, cnt, *boxes, thresh=thresh)
            kept[alive[_resolve_greedy(alive.size, src, dst)]] = True
            break
        alive, sblock = _sparse_blocks(rows, alive, kept, sblock, *boxes, thresh=thresh)
    keep[pos[kept]] = True
    return keep


def _chunks(qbox, lo, cnt):
    """The candidate pairs of the ranges ``qbox, lo, cnt`` (:meth:`_Rows.query`), about
    _CHUNK at a time: (query box, position in the rows' sorted order)."""
    ends = np.cumsum(cnt)
    start = 0
    while start < qbox.size:
        done = int(ends[start - 1]) if start else 0
        stop = max(start + 1, int(np.searchsorted(ends, done + _CHUNK, 'right')))
        c = cnt[start:stop]
        a = np.repeat(qbox[start:stop], c)
        at = np.arange(done, done + a.size) - np.repeat(ends[start:stop] - c - lo[start:stop],
                                                        c)
        yield a, at
        start = stop


def _iou_above(a, at, boxes, sorted_boxes, thresh):
    """Positions k where the IoU of box ``a[k]`` and sorted box ``at[k]`` is > thresh.

    MXNet's IoU (:func:`pair_iou`) except that negative overlaps are clipped with
    ``maximum``, which can give -0.0 where ``where`` gives 0.0: the same decisions for
    thresholds >= 0.
    """
    x1, y1, x2, y2, area = boxes
    sx1, sy1, sx2, sy2, sa = sorted_boxes
    w = np.minimum(np.take(x2, a), np.take(sx2, at))
    w -= np.maximum(np.take(x1, a), np.take(sx1, at))
    h = np.minimum(np.take(y2, a), np.take(sy2, at))
    h -= np.maximum(np.take(y1, a), np.take(sy1, at))
    np.maximum(w, 0, out=w)
    np.maximum(h, 0, out=h)
    w *= h                                              # intersection
    h = np.take(area, a)
    h += np.take(sa, at)
    h -= w                                              # union
    with np.errstate(invalid='ignore', divide='ignore'):
        w /= h
    return np.flatnonzero(w > thresh)


def _sparse_edges(rows, qbox, lo, cnt, x1, y1, x2, y2, area, thresh):
    """Suppression edges (src < dst) among the boxes of ``rows`` (local indices) from the
    candidate ranges ``qbox, lo, cnt`` of :meth:`_Rows.query` (half windows: each pair
    once, or twice where centres tie). The boxes met are read from copies in row order,
    so that each range is contiguous."""
    boxes = (x1, y1, x2, y2, area)
    sboxes = rows.sorted_boxes(*boxes)
    src, dst = [np.zeros(0, np.intp)], [np.zeros(0, np.intp)]
    for a, at in _chunks(qbox, lo, cnt):
        hit = _iou_above(a, at, boxes, sboxes, thresh)
        a, b = a[hit], rows.order[at[hit]]
        self_pair = a == b
        if self_pair.any():
            a, b = a[~self_pair], b[~self_pair]
        src.append(np.minimum(a, b))
        dst.append(np.maximum(a, b))
    return np.concatenate(src), np.concatenate(dst)


def _sparse_blocks(rows, alive, kept, block, x1, y1, x2, y2, area, thresh):
    """Greedy over the boxes of ``rows`` (``alive``, local indices) in blocks of doubling
    size in score order: the candidates of a block's live boxes (full windows) among the
    later live boxes, greedy inside the block, then its kept boxes suppress the later
    ones. Boxes suppressed early are never searched from, which is what saves time when
    most boxes are suppressed. Returns the boxes still undecided, once fewer than half of
    those searched over are (the caller then rebuilds the rows), and the next block size.
    """
    boxes = (x1, y1, x2, y2, area)
    sboxes = rows.sorted_boxes(*boxes)
    n = alive.size
    live = np.ones(n, bool)
    ptr = 0
    while ptr < n:
        end = min(n, ptr + block)
        q = ptr + np.flatnonzero(live[ptr:end])
        src, dst = [np.zeros(0, np.intp)], [np.zeros(0, np.intp)]
        for a, at in _chunks(*rows.query(False, q)):
            b = rows.order[at]
            sel = np.flatnonzero((b > a) & live[b])
            a, at, b = a[sel], at[sel], b[sel]
            hit = _iou_above(a, at, boxes, sboxes, thresh)
            src.append(a[hit])
            dst.append(b[hit])
        src, dst = np.concatenate(src), np.concatenate(dst)
        inside = dst < end
        kb = _resolve_greedy(end - ptr, src[inside] - ptr, dst[inside] - ptr)
        kb &= live[ptr:end]
        kept[alive[ptr + np.flatnonzero(kb)]] = True
        is_kept = np.zeros(n, bool)
        is_kept[ptr:end] = kb
        live[ptr:end] = False
        out = ~inside
        live[dst[out][is_kept[src[out]]]] = False
        ptr, block = end, block * 2
        left = ptr + np.flatnonzero(live[ptr:])
        if left.size < n // 2:
            return alive[left], block
    return alive[:0], block


def _dense_step(rows, pairs, alive, block, kept, boxes, thresh):
    """Greedy over the first ``block`` live boxes of every key, from all their same-key
    pairs, then their kept boxes suppress the later live boxes of their keys, found in
    their windows of ``rows`` (built over ``alive``); returns the boxes left alive.

    Every key advances at once (its own prefix in score order), so a step costs about
    keys x block^2 / 2 IoUs and kept x window ones. (A block of the first live boxes in
    key-major order, and the kept boxes against all later boxes, made issue 13's
    clustered boxes with 5 classes at threshold 0 take 6x longer: the block doubled to
    1024 while it moved through the keys, though each key's first 64 boxes remove most
    of that key.)
    """
    n = alive.size
    k = rows.kr
    first = np.flatnonzero(np.concatenate(([True], k[1:] != k[:-1])))
    sizes = np.diff(np.append(first, n))
    while block > 8 and float((np.minimum(sizes, block) ** 2.0).sum()) > 4.0 * _CHUNK:
        block //= 2                                 # at most about 2 _CHUNK pairs inside
    b = np.minimum(sizes, block)
    if b.size == 1:                                 # one key: the IoU matrix
        q = np.arange(b[0])
        with np.errstate(invalid='ignore'):
            sup = np.triu(_iou_block(*boxes, alive[q], alive[q]) > thresh, 1)
        kq = q[_greedy_small(sup)]
    else:                                           # the same-key pairs
        bstart = np.cumsum(b) - b
        local = np.arange(b.sum()) - np.repeat(bstart, b)
        q = np.repeat(first, b) + local             # ascending: key-major, score order
        c = np.repeat(b, b) - local - 1             # later boxes of the same key in q
        i = np.repeat(np.arange(q.size), c)
        j = i + 1 + np.arange(i.size) - np.repeat(np.cumsum(c) - c, c)
        hit = _iou_above(alive[q[i]], alive[q[j]], boxes, boxes, thresh)
        kq = q[_resolve_greedy(q.size, i[hit], j[hit])]
    kept[alive[kq]] = True
    gone = np.zeros(n, bool)
    gone[q] = True                                  # decided (the rest of a key: later)
    rest = np.flatnonzero(~gone)
    if not rest.size:
        return alive[rest]
    # a box meets about 2 * pairs / n boxes in its window (``pairs``: half windows)
    if rest.size <= 4.0 * pairs / n:
        # the windows hold most later boxes (crowds): the IoU matrix costs less
        hit = np.zeros(rest.size, bool)
        kr = k[rest]
        step = max(1, (1 << 20) // max(rest.size, 1))
        for s in range(0, kq.size, step):
            c = kq[s:s + step]
            with np.errstate(invalid='ignore'):
                sup = _iou_block(*boxes, alive[c], alive[rest]) > thresh
            if first.size > 1:
                sup &= k[c][:, None] == kr
            hit |= sup.any(axis=0)
        gone[rest[hit]] = True
        return alive[~gone]
    for a, at in _chunks(*rows.query(False, kq)):
        bb = rows.order[at]
        sel = np.flatnonzero(~gone[bb])
        a, bb = a[sel], bb[sel]
        gone[bb[_iou_above(alive[a], alive[bb], boxes, boxes, thresh)]] = True
    return alive[~gone]


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
    thresh = dtype_threshold(thresh, x1.dtype)
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
