"""SSD operators: ``_contrib_MultiBoxPrior``, ``_contrib_MultiBoxTarget`` and
``_contrib_MultiBoxDetection``, as MXNet 1.9.1's CPU implementation computes them.

``MultiBoxPrior`` makes (1, H*W*(len(sizes) + len(ratios) - 1), 4) corner anchors from the
height and width of (N, C, H, W, ...) data: per location, every size with the first ratio,
then the first size with each further ratio; widths are ``size * H / W * sqrt(r) / 2``,
centres ``(i + offset) * step`` (step ``1/H``, ``1/W`` unless both steps are > 0); float32
arithmetic in MXNet's order; ``clip`` clips to [0, 1].

``MultiBoxTarget`` matches anchors to ground truth (label rows ``[cls, x1, y1, x2, y2, ...]``,
padding rows from the first row whose class is -1): bipartite greedy matching (the largest
IoU > 1e-6 first, ties to the lowest anchor then label), then anchors whose best IoU
> ``overlap_threshold``. With ``negative_mining_ratio`` > 0, ``int(positives * ratio)``
unmatched anchors whose best IoU < ``negative_mining_thresh`` and whose softmax background
probability is lowest become negatives (stable: ties in anchor order); otherwise all
unmatched anchors are negatives. As in MXNet's CPU code ``minimum_negative_samples`` is
ignored. cls_target is the class + 1 for positives, 0 for negatives, ``ignore_label``
otherwise; loc targets are the variance-scaled centre/size encodings.

``MultiBoxDetection`` decodes boxes, takes the best non-background class (score >
-1, below ``threshold`` dropped), moves valid rows to the top in anchor order, then (when
0 < nms_threshold <= 1) sorts them by score (stable), marks rows past ``nms_topk`` with id
-1 (they keep their unsorted content, as in MXNet) and suppresses with IoU >=
nms_threshold, per class unless ``force_suppress``; suppressed rows get id -1. MXNet's CPU
code ignores ``background_id`` (class 0 is always the background); so does this one.

None of them has a gradient (MXNet writes zeros). Deliberate differences: MXNet
accepts only float32 (float64 here is an extension, computed in float64); MXNet reads past
the end of a ``cls_pred`` / ``loc_pred`` with a smaller batch than the label / cls_prob
(a ShapeError here); under grad_req='add' MXNet overwrites the gradients with zeros (all of
Prior's and Detection's, Target's cls_pred) where here zeros are added.
"""
import numpy as np

from symgraph.opdef import Operator, Param, ShapeError, TypeInferenceError, register

from ._nms import to_host, greedy_nms_keep
from symgraph.base import ArgumentError, ParameterError

_V = (0.1, 0.1, 0.2, 0.2)


def _float_type(name, in_types, n):
    t = None
    for x in in_types[:n]:
        if x is None:
            continue
        x = np.dtype(x)
        if x not in (np.float32, np.float64):
            raise TypeInferenceError('%s supports float32 (and float64) inputs only, got %s'
                                     % (name, x.name))
        if t is not None and x != t:
            raise TypeInferenceError('%s: inputs must have one type, got %s and %s'
                                     % (name, t.name, x.name))
        t = x
    return t or np.dtype(np.float32)


def _f(dt, v):
    """A float parameter as MXNet holds it (float32), in the data's dtype."""
    return dt(np.float32(v))


def _zero_grads(xp, inputs, need):
    return [xp.zeros_like(a) if n and a is not None else None for a, n in zip(inputs, need)]


class _Variances(Operator):
    """Base of MultiBoxTarget and MultiBoxDetection (no gradient): their ``variances``
    parameter must have 4 values (x, y, w, h)."""

    no_grad = True

    def check(self):
        if len(self.variances) != 4:
            raise ParameterError('%s: variances must have 4 values, got %s'
                                 % (self.name, self.variances))


# ----------------------------------------------------------------------------------
# MultiBoxPrior
# ----------------------------------------------------------------------------------
@register
class MultiBoxPrior(Operator):
    """Anchor boxes (1, H*W*(len(sizes)+len(ratios)-1), 4) from the data's height/width."""

    name = '_contrib_MultiBoxPrior'
    aliases = ('_npx_multibox_prior',)
    sizes = Param('floats', (1.0,), doc='box sizes (relative to the image)')
    ratios = Param('floats', (1.0,), doc='aspect ratios')
    clip = Param(bool, False, doc='clip boxes to [0, 1]')
    steps = Param('floats', (-1.0, -1.0), doc='(step_y, step_x); <= 0: 1/H, 1/W')
    offsets = Param('floats', (0.5, 0.5), doc='(offset_y, offset_x) of the centres')
    no_grad = True

    def check(self):
        for k in ('sizes', 'ratios'):
            if not getattr(self, k):
                raise ParameterError('MultiBoxPrior: %s must not be empty' % k)
        for k in ('steps', 'offsets'):
            if len(getattr(self, k)) != 2:
                raise ParameterError('MultiBoxPrior: %s must have 2 values (y, x), got %s'
                                     % (k, getattr(self, k)))
        if self.steps[0] * self.steps[1] < 0:
            raise ParameterError('MultiBoxPrior: steps %s: give both step_y and step_x'
                                 % (self.steps,))

    def num_anchors(self):
        return len(self.sizes) + len(self.ratios) - 1

    def infer_shape(self, in_shapes):
        s = in_shapes[0]
        if s is None:
            return [None], [None], []
        if len(s) < 4:
            raise ShapeError('MultiBoxPrior: data must be 4D (batch, channel, y, x), got %s'
                             % (tuple(s),))
        h, w = s[2], s[3]
        out = (1, h * w * self.num_anchors(), 4) if h and w else None
        return [tuple(s)], [out], []

    def infer_type(self, in_types):
        t = _float_type('MultiBoxPrior', in_types, 1)
        return [t], [t], []

    def forward(self, xp, inputs, aux, is_train):
        data = inputs[0]
        dt = data.dtype.type
        h, w = data.shape[2], data.shape[3]
        f = [_f(dt, v) for v in self.steps]
        if f[0] > 0 and f[1] > 0:
            step_y, step_x = f
        else:
            step_y, step_x = dt(1) / dt(h), dt(1) / dt(w)
        off_y, off_x = (_f(dt, v) for v in self.offsets)
        cy = (xp.arange(h, dtype=dt) + off_y) * step_y
        cx = (xp.arange(w, dtype=dt) + off_x) * step_x
        sizes = np.asarray(self.sizes, dt)
        roots = np.sqrt(np.asarray(self.ratios, dt))
        size = np.concatenate([sizes, np.full(len(roots) - 1, sizes[0], dt)])
        root = np.concatenate([np.full(len(sizes), roots[0], dt), roots[1:]])
        hw = (size * dt(h) / dt(w) * root / dt(2)).astype(dt)
        hh = (size / root / dt(2)).astype(dt)
        hw, hh = xp.asarray(hw), xp.asarray(hh)
        k = hw.shape[0]
        cxg = xp.broadcast_to(cx[None, :, None], (h, w, k))
        cyg = xp.broadcast_to(cy[:, None, None], (h, w, k))
        out = xp.stack([cxg - hw, cyg - hh[None, None, :], cxg + hw,
                        cyg + hh[None, None, :]], axis=-1)
        if self.clip:
            out = xp.clip(out, dt(0), dt(1))
        return [out.reshape(1, h * w * k, 4).astype(dt, copy=False)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        return _zero_grads(xp, inputs, need)


# ----------------------------------------------------------------------------------
# MultiBoxTarget
# ----------------------------------------------------------------------------------
def _pairwise_iou(xp, anchors, gt):
    """IoU (B, A, L) of anchors (A, 4) with labels' boxes (B, L, 4), MXNet's arithmetic:
    0 where the union is 0."""
    a = [anchors[None, :, None, i] for i in range(4)]
    g = [gt[:, None, :, i] for i in range(4)]
    zero = anchors.dtype.type(0)
    iw = xp.maximum(zero, xp.minimum(a[2], g[2]) - xp.maximum(a[0], g[0]))
    ih = xp.maximum(zero, xp.minimum(a[3], g[3]) - xp.maximum(a[1], g[1]))
    inter = iw * ih
    union = (a[2] - a[0]) * (a[3] - a[1]) + (g[2] - g[0]) * (g[3] - g[1]) - inter
    safe = xp.where(union == 0, xp.ones_like(union), union)
    return xp.where(union == 0, xp.zeros_like(inter), inter / safe)


def _encode(xp, anc, gt, variances, dt):
    """MXNet's AssignLocTargets on matched rows: anc, gt (n, 4) -> (n, 4)."""
    vx, vy, vw, vh = (_f(dt, v) for v in variances)
    half = dt(0.5)
    aw, ah = anc[:, 2] - anc[:, 0], anc[:, 3] - anc[:, 1]
    ax, ay = (anc[:, 0] + anc[:, 2]) * half, (anc[:, 1] + anc[:, 3]) * half
    gw, gh = gt[:, 2] - gt[:, 0], gt[:, 3] - gt[:, 1]
    gx, gy = (gt[:, 0] + gt[:, 2]) * half, (gt[:, 1] + gt[:, 3]) * half
    with np.errstate(divide='ignore', invalid='ignore'):
        lw, lh = _rounded(xp, xp.log, gw / aw), _rounded(xp, xp.log, gh / ah)
        return xp.stack([(gx - ax) / aw / vx, (gy - ay) / ah / vy, lw / vw, lh / vh], axis=1)


def _rounded(xp, fn, x):
    """``fn`` (xp.exp, xp.log) of float32 ``x`` rounded from float64, as glibc's expf/logf
    (MXNet's) nearly always give; NumPy's float32 SIMD versions differ more often."""
    return fn(x.astype(np.float64)).astype(np.float32) if x.dtype == np.float32 else fn(x)


def _background_prob(xp, cls_pred):
    """Softmax probability of class 0 per anchor (B, A), summed class by class in the
    data's dtype as MXNet does."""
    m = cls_pred.max(axis=1)
    total = xp.zeros_like(m)
    for k in range(cls_pred.shape[1]):
        total = total + _rounded(xp, xp.exp, cls_pred[:, k] - m)
    return _rounded(xp, xp.exp, cls_pred[:, 0] - m) / total


@register
class MultiBoxTarget(_Variances):
    """Training targets (loc_target, loc_mask, cls_target) of anchors for labels."""

    name = '_contrib_MultiBoxTarget'
    aliases = ('_npx_multibox_target',)
    overlap_threshold = Param(float, 0.5, doc='IoU above which an anchor is positive')
    ignore_label = Param(float, -1.0, doc='cls_target of ignored anchors')
    negative_mining_ratio = Param(float, -1.0, doc='negatives per positive (-1: all)')
    negative_mining_thresh = Param(float, 0.5, doc='negatives need best IoU below this')
    minimum_negative_samples = Param(int, 0, doc='ignored by MXNet\'s CPU code (and here)')
    variances = Param('floats', _V, doc='encoding variances (x, y, w, h)')

    def list_arguments(self):
        return ['anchor', 'label', 'cls_pred']

    def list_outputs(self):
        return ['loc_target', 'loc_mask', 'cls_target']

    def infer_shape(self, in_shapes):
        a, lab, p = in_shapes
        if a is not None:
            if len(a) != 3 or a[0] not in (0, 1) or a[2] not in (0, 4):
                raise ShapeError('MultiBoxTarget: anchor must have shape (1, num_anchors, 4) '
                                 '(shared across the batch), got %s' % (tuple(a),))
        if lab is not None and (len(lab) != 3 or 0 < lab[2] < 5):
            raise ShapeError('MultiBoxTarget: label must have shape (batch, num_labels, '
                             'width >= 5), got %s' % (tuple(lab),))
        if p is not None:
            if len(p) != 3:
                raise ShapeError('MultiBoxTarget: cls_pred must have shape (batch, '
                                 'num_classes, num_anchors), got %s' % (tuple(p),))
            if a is not None and a[1] and p[2] and a[1] != p[2]:
                raise ShapeError('MultiBoxTarget: cls_pred %s and anchor %s disagree on the '
                                 'number of anchors' % (tuple(p), tuple(a)))
            if lab is not None and lab[0] and p[0] and p[0] < lab[0]:
                raise ShapeError('MultiBoxTarget: cls_pred %s has a smaller batch than label '
                                 '%s' % (tuple(p), tuple(lab)))
        if a is None or lab is None or not a[1] or not lab[0]:
            return [a, lab, p], [None, None, None], []
        n = a[1]
        return ([(1, n, 4), lab, p], [(lab[0], n * 4), (lab[0], n * 4), (lab[0], n)], [])

    def infer_type(self, in_types):
        t = _float_type('MultiBoxTarget', in_types, 3)
        return [t] * 3, [t] * 3, []

    def forward(self, xp, inputs, aux, is_train):
        anchor, label, cls_pred = inputs
        dt = anchor.dtype.type
        anc = anchor.reshape(-1, 4)
        nb, nl = label.shape[0], label.shape[1]
        na = anc.shape[0]
        loc_t = xp.zeros((nb, na, 4), anchor.dtype)
        mask = xp.zeros((nb, na, 4), anchor.dtype)
        cls_t = xp.full((nb, na), _f(dt, self.ignore_label), anchor.dtype)
        pad = label[:, :, 0] == -1
        n_valid = xp.where(pad.any(axis=1), xp.argmax(pad, axis=1), nl)
        first = label[xp.arange(nb), xp.minimum(n_valid, nl - 1), 1:5]
        if bool(((n_valid < nl)[:, None] & (first != -1)).any()):
            raise ArgumentError('MultiBoxTarget: a label row with class -1 (padding) must have '
                                'coordinates -1 too')
        nl = int(n_valid.max())          # padding columns take no part
        if not nl:
            return [loc_t.reshape(nb, -1), mask.reshape(nb, -1), cls_t]
        label = label[:, :nl]
        gt_ok = xp.arange(nl)[None, :] < n_valid[:, None]                 # (B, L)
        has_gt = n_valid > 0
        iou = _pairwise_iou(xp, anc, label[:, :, 1:5])                     # (B, A, L)
        neg_inf = dt(-np.inf)
        iou_v = xp.where(gt_ok[:, None, :], iou, neg_inf)
        pos = xp.zeros((nb, na), bool)
        match = xp.zeros((nb, na), np.int64)
        gt_free = gt_ok.copy()
        rows = xp.arange(nb)
        eps = _f(dt, 1e-6)
        for _ in range(nl):         # bipartite: one label per batch and round
            cand = xp.where(gt_free[:, None, :] & ~pos[:, :, None], iou_v, neg_inf)
            best = xp.argmax(cand.reshape(nb, -1), axis=1)
            val = cand.reshape(nb, -1)[rows, best]
            hit = val > eps
            if not bool(hit.any()):
                break
            j, k = best // nl, best % nl
            pos[rows[hit], j[hit]] = True
            match[rows[hit], j[hit]] = k[hit]
            gt_free[rows[hit], k[hit]] = False
        best_gt = xp.argmax(iou_v, axis=2)
        best_iou = xp.max(iou_v, axis=2)
        if self.overlap_threshold > 0:
            extra = ~pos & (best_iou > _f(dt, self.overlap_threshold)) & has_gt[:, None]
            match = xp.where(extra, best_gt, match)
            pos = pos | extra
        free = ~pos & has_gt[:, None]
        if self.negative_mining_ratio > 0:
            neg = self._mine(xp, cls_pred, pos, free, best_iou, has_gt, dt)
        else:
            neg = free
        b, j = xp.nonzero(pos)
        m = match[b, j]
        cls_t[b, j] = label[b, m, 0] + dt(1)
        cls_t = xp.where(neg, dt(0), cls_t)
        mask[b, j] = dt(1)
        loc_t[b, j] = _encode(xp, anc[j], label[b, m, 1:5], self.variances, dt).astype(dt)
        return [loc_t.reshape(nb, -1), mask.reshape(nb, -1), cls_t]

    def _mine(self, xp, cls_pred, pos, free, best_iou, has_gt, dt):
        """Hard negatives: the lowest background probabilities among the candidates."""
        if self.negative_mining_thresh <= 0:
            raise ParameterError('MultiBoxTarget: negative_mining_thresh must be > 0, got %s'
                                 % self.negative_mining_thresh)
        nb, na = pos.shape
        n_pos = pos.sum(axis=1)
        want = (n_pos.astype(np.float32) * np.float32(self.negative_mining_ratio))
        want = xp.minimum(want.astype(np.int64), na - n_pos)
        want = xp.where(has_gt, want, 0)
        cand = free & (best_iou < _f(dt, self.negative_mining_thresh))
        short = cand.sum(axis=1) < want
        if bool(short.any()):
            raise ArgumentError('MultiBoxTarget: %d negatives wanted but only %d anchors have '
                                'an IoU below negative_mining_thresh=%s'
                                % (int(want[short][0]), int(cand.sum(axis=1)[short][0]),
                                   self.negative_mining_thresh))
        prob = _background_prob(xp, cls_pred[:nb])
        key = xp.where(cand, prob, dt(np.inf))
        order = xp.argsort(key, axis=1, kind='stable')
        rank = xp.empty_like(order)
        rank[xp.arange(nb)[:, None], order] = xp.arange(na)[None, :]
        return cand & (rank < want[:, None])

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        return _zero_grads(xp, inputs, need)


# ----------------------------------------------------------------------------------
# MultiBoxDetection
# ----------------------------------------------------------------------------------
def _decode(xp, anc, loc, clip, variances, dt):
    """MXNet's TransformLocations: anc (A, 4), loc (B, A, 4) -> corners (B, A, 4)."""
    vx, vy, vw, vh = (_f(dt, v) for v in variances)
    two = dt(2)
    al, at, ar, ab = (anc[None, :, i] for i in range(4))
    aw, ah = ar - al, ab - at
    ax, ay = (al + ar) / two, (at + ab) / two
    ox = loc[..., 0] * vx * aw + ax
    oy = loc[..., 1] * vy * ah + ay
    ow = _rounded(xp, xp.exp, loc[..., 2] * vw) * aw / two
    oh = _rounded(xp, xp.exp, loc[..., 3] * vh) * ah / two
    out = xp.stack([ox - ow, oy - oh, ox + ow, oy + oh], axis=-1)
    if clip:
        out = xp.maximum(dt(0), xp.minimum(dt(1), out))
    return out


@register
class MultiBoxDetection(_Variances):
    """Detections (batch, num_anchors, 6) rows [class, score, x1, y1, x2, y2]; -1 rows
    are empty or suppressed."""

    name = '_contrib_MultiBoxDetection'
    aliases = ('_npx_multibox_detection',)
    clip = Param(bool, True, doc='clip boxes to [0, 1]')
    threshold = Param(float, 0.01, doc='lowest score of a detection')
    background_id = Param(int, 0, doc='ignored by MXNet\'s CPU code (class 0 is background)')
    nms_threshold = Param(float, 0.5, doc='IoU >= this suppresses (NMS off unless in (0, 1])')
    force_suppress = Param(bool, False, doc='suppress across classes')
    variances = Param('floats', _V, doc='decoding variances (x, y, w, h)')
    nms_topk = Param(int, -1, doc='only the topk best detections take part (-1: all)')

    def list_arguments(self):
        return ['cls_prob', 'loc_pred', 'anchor']

    def infer_shape(self, in_shapes):
        c, loc, a = in_shapes
        for nm, s, nd in (('cls_prob', c, 3), ('loc_pred', loc, 2), ('anchor', a, 3)):
            if s is not None and len(s) != nd:
                raise ShapeError('MultiBoxDetection: %s must have %d dimensions, got %s'
                                 % (nm, nd, tuple(s)))
        if a is not None and a[2] not in (0, 4):
            raise ShapeError('MultiBoxDetection: anchor must have shape (1, num_anchors, 4), '
                             'got %s' % (tuple(a),))
        if c is not None and a is not None and c[2] and a[1] and c[2] != a[1]:
            raise ShapeError('MultiBoxDetection: cls_prob %s and anchor %s disagree on the '
                             'number of anchors' % (tuple(c), tuple(a)))
        if c is not None and loc is not None:
            if c[2] and loc[1] and c[2] * 4 != loc[1]:
                raise ShapeError('MultiBoxDetection: loc_pred %s must have 4 * num_anchors '
                                 'columns (cls_prob %s)' % (tuple(loc), tuple(c)))
            if c[0] and loc[0] and loc[0] < c[0]:
                raise ShapeError('MultiBoxDetection: loc_pred %s has a smaller batch than '
                                 'cls_prob %s' % (tuple(loc), tuple(c)))
        if c is None or a is None or not c[0] or not a[1]:
            return [c, loc, a], [None], []
        return [c, loc, a], [(c[0], a[1], 6)], []

    def infer_type(self, in_types):
        t = _float_type('MultiBoxDetection', in_types, 3)
        return [t] * 3, [t], []

    def forward(self, xp, inputs, aux, is_train):
        cls_prob, loc_pred, anchor = inputs
        dt = cls_prob.dtype.type
        nb, nc, na = cls_prob.shape
        anc = anchor.reshape(-1, 4)[:na]
        boxes = _decode(xp, anc, loc_pred[:nb].reshape(nb, na, 4), self.clip,
                        self.variances, dt)
        if nc > 1:
            fg = cls_prob[:, 1:, :]
            cid = xp.argmax(fg, axis=1)
            score = xp.max(fg, axis=1)
            valid = (score > dt(-1)) & ~(score < _f(dt, self.threshold))
        else:
            cid = xp.zeros((nb, na), np.int64)
            score = xp.full((nb, na), dt(-1))
            valid = xp.zeros((nb, na), bool)
        rows = xp.concatenate([cid.astype(dt)[..., None], score[..., None], boxes], axis=-1)
        # valid rows to the top in anchor order
        order = xp.argsort(~valid, axis=1, kind='stable')
        bidx = xp.arange(nb)[:, None]
        compact = rows[bidx, order]
        count = valid.sum(axis=1)
        slot = xp.arange(na)[None, :]
        out = xp.where((slot < count[:, None])[..., None], compact, dt(-1))
        if not 0 < np.float32(self.nms_threshold) <= 1:
            return [out]
        # stable sort of the valid rows by descending score
        key = xp.where(slot < count[:, None], -out[..., 1], dt(np.inf))
        srt = xp.argsort(key, axis=1, kind='stable')
        ranked = out[bidx, srt]
        keep_n = count if self.nms_topk <= 0 else xp.minimum(count, self.nms_topk)
        top = slot < keep_n[:, None]
        cut = (slot >= keep_n[:, None]) & (slot < count[:, None])
        out = xp.where(top[..., None], ranked, out)
        out[..., 0] = xp.where(cut, dt(-1), out[..., 0])
        self._suppress(xp, out, top, nc, dt)
        return [out]

    def _suppress(self, xp, out, top, nc, dt):
        """Greedy NMS over the top rows (already in score order): IoU >= nms_threshold."""
        h_out = to_host(out)
        h_top = to_host(top)
        b, i = np.nonzero(h_top)
        if b.size < 2:
            return
        sel = h_out[b, i]
        key = b.astype(np.int64)
        if not self.force_suppress:
            key = key * nc + sel[:, 0].astype(np.int64)
        x1, y1, x2, y2 = (sel[:, 2 + k] for k in range(4))
        area = (x2 - x1) * (y2 - y1) * ((x2 >= x1) & (y2 >= y1))
        # IoU >= t  <=>  IoU > (the largest value below t) in the data's dtype
        thresh = float(np.nextafter(_f(dt, self.nms_threshold), dt(-np.inf)))
        keep = greedy_nms_keep(x1, y1, x2, y2, area, key, thresh)
        gone = ~keep
        if gone.any():
            out[xp.asarray(b[gone]), xp.asarray(i[gone]), 0] = dt(-1)

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        return _zero_grads(xp, inputs, need)
