"""Faster R-CNN region proposals: ``_contrib_Proposal`` and ``_contrib_MultiProposal``.

MXNet 1.9.1 semantics (src/operator/contrib/proposal.cc, multi_proposal.cc), checked
against MXNet by experiment:

* anchors: the classic ``generate_anchors`` with base box (0, 0, s-1, s-1), s =
  ``feature_stride``; for each ratio, for each scale: ``size_ratio = floor(s*s / ratio)``,
  ``w = round(sqrt(size_ratio)) * scale``, ``h = round(w / scale * ratio) * scale``, centred
  on ((s-1)/2, (s-1)/2); shifted by (x*s, y*s) for every feature cell. Proposal ``k`` of
  an image is cell (h, w), anchor a with k = (h*W + w)*A + a; its score is
  ``cls_prob[n, A + a, h, w]`` and its deltas ``bbox_pred[n, 4a:4a+4, h, w]``.
* decoding (legacy "+1" boxes): ``width = x2 - x1 + 1``, ``ctr = x1 + (width-1)/2``,
  ``pred_ctr = d*width + ctr``, ``pred_w = exp(dw)*width``, corners ``pred_ctr -/+
  (pred_w - 1)/2``; with ``iou_loss`` the four deltas are added to the corners. Corners are
  clipped to [0, im_w - 1] x [0, im_h - 1]. Cells with h >= int(im_h / s) or
  w >= int(im_w / s) (padding of a smaller image) get score -1; MXNet fails when
  int(im_h / s) > H or int(im_w / s) > W (an error here).
* min size: ``min = rpn_min_size * im_info[2]``; a box whose width or height (+1) is below
  it gets score -1 AND is enlarged by min/2 on every side (MXNet keeps it, so it may be
  output when too few boxes survive).
* the proposals are sorted by descending score (equal scores here in index order; MXNet's
  CPU sort gave index order in our experiments), the first ``rpn_pre_nms_top_n`` (<= 0:
  all) take part in greedy NMS with "+1" areas and intersections, suppressing IoU >
  ``threshold``, until ``rpn_post_nms_top_n`` boxes are kept (the pass stops there, as
  MXNet's: O(post * pre) work and O(pre) memory per image, however crowded the boxes).
* output: ``rpn_post_nms_top_n`` rows per image (batch index, x1, y1, x2, y2); when only
  k < post boxes were kept, row i repeats kept box ``i % k``; ``score`` (post, 1) likewise.
* ``_contrib_Proposal`` accepts only batch size 1 (MXNet fails in forward, not in shape
  inference); MXNet accepts only float32 inputs. No gradient (zeros).

Deliberate difference: the NMS intersections are formed as ``min(x2 + 1) - max(x1)`` in
float64 (ops/_nms.py with corners shifted by one) instead of MXNet's float32
``min(x2) - max(x1) + 1``; an IoU within one float32 ulp of the threshold may be decided
differently. float64 inputs are accepted as an extension (MXNet rejects them): they are
computed in float32, MXNet's arithmetic, and the outputs are float64. The sort and NMS run
on a host copy of CuPy arrays.
"""
import numpy as np

from symgraph.opdef import Operator, Param, ShapeError, register

from ._nms import to_host, greedy_nms_first
from symgraph.base import NotSupportedError, TypeInferenceError


def generate_anchors(stride, ratios, scales):
    """(len(ratios)*len(scales), 4) float32 anchors as MXNet's GenerateAnchors."""
    base = np.float32(stride - 1.0)
    w = h = base + np.float32(1)
    size = np.float32(w * h)
    ctr = np.float32(0.5 * (float(w) - 1.0))
    r = np.repeat(np.asarray(ratios, np.float32), len(scales))
    s = np.tile(np.asarray(scales, np.float32), len(ratios))
    size_ratios = np.floor(size / r)
    new_w = np.floor(np.sqrt(size_ratios) + np.float32(0.5)) * s
    new_h = np.floor(new_w / s * r + np.float32(0.5)) * s
    half_w = 0.5 * (new_w.astype(np.float64) - 1.0)
    half_h = 0.5 * (new_h.astype(np.float64) - 1.0)
    out = np.stack([ctr - half_w, ctr - half_h, ctr + half_w, ctr + half_h], axis=1)
    return out.astype(np.float32)


def _decode(anchors, deltas, im_h, im_w, iou_loss):
    """Decoded, clipped (N, K, 4) float32 boxes; anchors (K, 4), deltas (N, K, 4)."""
    x1, y1, x2, y2 = (anchors[None, :, i] for i in range(4))
    d = [deltas[..., i] for i in range(4)]
    if iou_loss:
        px1, py1, px2, py2 = x1 + d[0], y1 + d[1], x2 + d[2], y2 + d[3]
    else:
        one = np.float32(1)
        bw, bh = x2 - x1 + one, y2 - y1 + one
        cx = (x1 + 0.5 * (bw.astype(np.float64) - 1.0)).astype(np.float32)
        cy = (y1 + 0.5 * (bh.astype(np.float64) - 1.0)).astype(np.float32)
        pcx, pcy = d[0] * bw + cx, d[1] * bh + cy
        pw, ph = np.exp(d[2]) * bw, np.exp(d[3]) * bh
        hw, hh = 0.5 * (pw.astype(np.float64) - 1.0), 0.5 * (ph.astype(np.float64) - 1.0)
        px1, px2 = (pcx - hw).astype(np.float32), (pcx + hw).astype(np.float32)
        py1, py2 = (pcy - hh).astype(np.float32), (pcy + hh).astype(np.float32)
    zero = np.float32(0)
    mw, mh = (im_w - np.float32(1))[:, None], (im_h - np.float32(1))[:, None]
    px1, px2 = (np.maximum(np.minimum(v, mw), zero) for v in (px1, px2))
    py1, py2 = (np.maximum(np.minimum(v, mh), zero) for v in (py1, py2))
    return np.stack([px1, py1, px2, py2], axis=-1)


class _ProposalBase(Operator):
    """Shared parameters, shapes and forward of the two proposal operators."""

    rpn_pre_nms_top_n = Param(int, 6000, doc='boxes entering NMS (<= 0: all)')
    rpn_post_nms_top_n = Param(int, 300, doc='boxes output per image')
    threshold = Param(float, 0.7, doc='NMS: IoU above this suppresses')
    rpn_min_size = Param(int, 16, doc='minimum box side (times im_info[2])')
    scales = Param('floats', (4.0, 8.0, 16.0, 32.0), doc='anchor scales')
    ratios = Param('floats', (0.5, 1.0, 2.0), doc='anchor aspect ratios')
    feature_stride = Param(int, 16, doc='image pixels per feature cell (anchor base size)')
    output_score = Param(bool, False, doc='also output the scores')
    iou_loss = Param(bool, False, doc='deltas are corner offsets (IoU loss)')
    no_grad = True
    needs_inputs = False

    def list_arguments(self):
        return ['cls_prob', 'bbox_pred', 'im_info']

    def list_outputs(self):
        return ['output', 'score']

    def num_visible_outputs(self):
        return 2 if self.output_score else 1

    def _check_batch(self, n):
        pass

    def infer_shape(self, in_shapes):
        c = in_shapes[0]
        post = self.rpn_post_nms_top_n
        if c is None:
            return list(in_shapes), [None, None], []
        if len(c) != 4:
            raise ShapeError('%s: cls_prob must be 4D (batch, 2*anchors, height, width), '
                             'got %s' % (self.name, tuple(c)))
        n, ch, h, w = c
        a = len(self.scales) * len(self.ratios)
        if ch and ch != 2 * a:
            raise ShapeError('%s: cls_prob has %d channels, expected 2 * %d anchors'
                             % (self.name, ch, a))
        want = [tuple(c), (n, 2 * ch, h, w), (n, 3)]
        names = self.list_arguments()
        for k in (1, 2):
            s = in_shapes[k]
            if s is not None and (len(s) != len(want[k]) or any(
                    x and y and x != y for x, y in zip(s, want[k]))):
                raise ShapeError('%s: Shape inconsistent for %s, provided %s, inferred %s'
                                 % (self.name, names[k], tuple(s), want[k]))
        rows = post * n if self._multi else post
        return want, [(rows, 5), (rows, 1)], []

    def infer_type(self, in_types):
        known = [np.dtype(t) for t in in_types if t is not None]
        for name, t in zip(self.list_arguments(), in_types):
            if t is not None and np.dtype(t) not in (np.float32, np.float64):
                raise TypeInferenceError('%s: unsupported data type %s for %s (float32 only; '
                                         'float64 is a symgraph extension)'
                                         % (self.name, np.dtype(t).name, name))
        f = known[0] if known else np.dtype(np.float32)
        if any(t != f for t in known):
            raise TypeInferenceError('%s: inputs must have one dtype, got %s'
                                     % (self.name, [t.name for t in known]))
        return [f, f, f], [f, f], []

    def forward(self, xp, inputs, aux, is_train):
        dt = inputs[0].dtype
        cls, bbox, info = (to_host(a).astype(np.float32, copy=False) for a in inputs)
        n, ch, h, w = cls.shape
        self._check_batch(n)
        a = ch // 2
        s = self.feature_stride
        anchors = generate_anchors(s, self.ratios, self.scales)
        sy, sx = np.meshgrid(np.arange(h, dtype=np.float32) * s,
                             np.arange(w, dtype=np.float32) * s, indexing='ij')
        shift = np.stack([sx, sy, sx, sy], axis=-1)                    # (h, w, 4)
        anc = (shift[:, :, None, :] + anchors[None, None]).reshape(-1, 4)
        k = anc.shape[0]
        deltas = bbox.reshape(n, a, 4, h, w).transpose(0, 3, 4, 1, 2).reshape(n, k, 4)
        score = cls[:, a:].transpose(0, 2, 3, 1).reshape(n, k).copy()
        boxes = _decode(anc, deltas, info[:, 0], info[:, 1], self.iou_loss)
        # cells outside the real image (int(im / stride)) score -1
        rh = (info[:, 0] / np.float32(s)).astype(np.int64)
        rw = (info[:, 1] / np.float32(s)).astype(np.int64)
        if n and (rh.max() > h or rw.max() > w):
            raise ShapeError('%s: the feature map (%d, %d) must cover im_info / '
                             'feature_stride = (%d, %d) (check height >= real_height and '
                             'width >= real_width failed)'
                             % (self.name, h, w, rh.max(), rw.max()))
        cell_h = np.repeat(np.arange(h), w * a)
        cell_w = np.tile(np.repeat(np.arange(w), a), h)
        score[(cell_h[None] >= rh[:, None]) | (cell_w[None] >= rw[:, None])] = -1
        # boxes below the minimum size: score -1, enlarged by min/2 on every side
        mins = (np.float32(self.rpn_min_size) * info[:, 2])[:, None]
        one = np.float32(1)
        small = ((boxes[..., 2] - boxes[..., 0] + one < mins)
                 | (boxes[..., 3] - boxes[..., 1] + one < mins))
        half = np.broadcast_to((mins / np.float32(2))[..., None], boxes.shape)
        sign = np.array([-1, -1, 1, 1], np.float32)
        boxes = np.where(small[..., None], boxes + sign * half, boxes)
        score[small] = -1
        # sort per image, pre-NMS top n, greedy NMS ("+1" arithmetic)
        pre = k if self.rpn_pre_nms_top_n <= 0 else min(self.rpn_pre_nms_top_n, k)
        order = np.argsort(-score, axis=1, kind='stable')[:, :pre]
        bsel = np.take_along_axis(boxes, order[..., None], axis=1).reshape(-1, 4)
        ssel = np.take_along_axis(score, order, axis=1).reshape(-1)
        x1, y1, x2, y2 = (bsel[:, i].astype(np.float64) for i in range(4))
        area = ((bsel[:, 2] - bsel[:, 0] + one) * (bsel[:, 3] - bsel[:, 1] + one))
        area = area.astype(np.float64)
        post = self.rpn_post_nms_top_n
        thresh = float(np.float32(self.threshold))
        rows = []
        for b in range(n):          # per image: NMS until post boxes are kept, as MXNet
            sl = slice(b * pre, (b + 1) * pre)
            kept = b * pre + greedy_nms_first(x1[sl], y1[sl], x2[sl] + 1.0, y2[sl] + 1.0,
                                              area[sl], thresh, post)
            rows.append(kept[np.arange(post) % max(kept.size, 1)] if kept.size
                        else np.full(post, b * pre, np.int64))
        rows = np.concatenate(rows) if rows else np.zeros(0, np.int64)
        out = np.concatenate([np.repeat(np.arange(n, dtype=np.float32), post)[:, None],
                              bsel[rows.reshape(-1)]], axis=1)
        sc = ssel[rows.reshape(-1)][:, None]
        return [xp.asarray(out.astype(dt)), xp.asarray(sc.astype(dt))]


@register
class Proposal(_ProposalBase):
    """Region proposals of one image: (rpn_post_nms_top_n, 5) rois (+ scores)."""

    name = '_contrib_Proposal'
    _multi = False

    def _check_batch(self, n):
        if n != 1:
            raise NotSupportedError('_contrib_Proposal: cls_prob has batch size %d; multiple '
                                    'images each device is not implemented (use MultiProposal)' % n)


@register
class MultiProposal(_ProposalBase):
    """Region proposals of a batch: (N * rpn_post_nms_top_n, 5) rois (+ scores)."""

    name = '_contrib_MultiProposal'
    _multi = True
