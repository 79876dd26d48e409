"""A Faster R-CNN proposal-target layer as a Python custom operator.

The layer takes region proposals (``rois``, rows ``[batch_index, x1, y1, x2, y2]``) and the
ground-truth boxes (``gt_boxes``, rows ``[x1, y1, x2, y2, class]``, class 0 = padding) and
samples ``batch_rois`` RoIs per batch: at most ``fg_fraction`` of them foreground (IoU with
a ground-truth box >= ``fg_overlap``, labelled with that box's class), the rest background
(label 0). For foreground RoIs it also gives the box-regression targets (centre shift and
log size ratio, divided by ``box_stds``) in the 4 columns of the RoI's class, with weight 1
there and 0 elsewhere. It has no gradient (``need_top_grad=False``, no backward
dependencies): it only makes training targets.

A small synthetic detection network is trained on its outputs: a convolution, ROIPooling
of the sampled RoIs, a classifier (``SoftmaxOutput`` on the sampled labels) and a box
regressor (a ``MakeLoss`` of the weighted squared error). Everything is seeded.

The same script runs on MXNet 1.9.1 with ``import mxnet as mx`` instead of symgraph.
"""
import numpy as np

import symgraph as mx


def box_iou(boxes, gt):
    """IoU of every box (R, 4) with every ground-truth box (G, 4): (R, G).

    >>> float(box_iou(np.array([[0., 0, 9, 9]]), np.array([[0., 0, 4, 9]]))[0, 0])
    0.5
    """
    area = lambda b: (b[:, 2] - b[:, 0] + 1) * (b[:, 3] - b[:, 1] + 1)  # noqa: E731
    ix1 = np.maximum(boxes[:, None, 0], gt[None, :, 0])
    iy1 = np.maximum(boxes[:, None, 1], gt[None, :, 1])
    ix2 = np.minimum(boxes[:, None, 2], gt[None, :, 2])
    iy2 = np.minimum(boxes[:, None, 3], gt[None, :, 3])
    inter = np.clip(ix2 - ix1 + 1, 0, None) * np.clip(iy2 - iy1 + 1, 0, None)
    return inter / (area(boxes)[:, None] + area(gt)[None, :] - inter)


def box_targets(boxes, gt, stds):
    """Regression targets from ``boxes`` to their matched ``gt`` (both (R, 4)), / stds."""
    def centre_size(b):
        w = b[:, 2] - b[:, 0] + 1.0
        h = b[:, 3] - b[:, 1] + 1.0
        return b[:, 0] + 0.5 * (w - 1), b[:, 1] + 0.5 * (h - 1), w, h
    bx, by, bw, bh = centre_size(boxes)
    gx, gy, gw, gh = centre_size(gt)
    t = np.stack([(gx - bx) / bw, (gy - by) / bh, np.log(gw / bw), np.log(gh / bh)], axis=1)
    return t / np.asarray(stds)


def sample_rois(rois, gt_boxes, num_classes, rois_per_image, fg_rois_per_image,
                fg_overlap, box_stds, rng):
    """Sample RoIs of one image; returns rois, labels, bbox targets and weights."""
    overlaps = box_iou(rois[:, 1:5], gt_boxes[:, :4])
    gt_assignment = overlaps.argmax(axis=1)
    max_overlaps = overlaps.max(axis=1)
    labels = gt_boxes[gt_assignment, 4]
    fg = np.where(max_overlaps >= fg_overlap)[0]
    n_fg = min(fg_rois_per_image, len(fg))
    if len(fg) > n_fg:
        fg = rng.choice(fg, size=n_fg, replace=False)
    bg = np.where(max_overlaps < fg_overlap)[0]
    n_bg = min(rois_per_image - n_fg, len(bg))
    if len(bg) > n_bg:
        bg = rng.choice(bg, size=n_bg, replace=False)
    keep = np.append(fg, bg)
    if len(keep) < rois_per_image:       # too few proposals: repeat some at random
        keep = np.append(keep, rng.choice(len(rois), rois_per_image - len(keep)))
    labels = labels[keep].copy()
    labels[n_fg:] = 0
    rois = rois[keep]
    targets = box_targets(rois[:, 1:5], gt_boxes[gt_assignment[keep], :4], box_stds)
    bbox_target = np.zeros((rois_per_image, 4 * num_classes), dtype=np.float32)
    bbox_weight = np.zeros_like(bbox_target)
    rows = np.arange(n_fg)[:, None]
    cols = 4 * labels[:n_fg].astype(np.int64)[:, None] + np.arange(4)[None, :]
    bbox_target[rows, cols] = targets[:n_fg]
    bbox_weight[rows, cols] = 1.0
    return rois, labels, bbox_target, bbox_weight


class ProposalTargetOperator(mx.operator.CustomOp):
    def __init__(self, num_classes, batch_images, batch_rois, fg_fraction, fg_overlap,
                 box_stds, seed):
        super(ProposalTargetOperator, self).__init__()
        self._num_classes = num_classes
        self._batch_images = batch_images
        self._rois_per_image = batch_rois // batch_images
        self._fg_rois_per_image = int(round(fg_fraction * self._rois_per_image))
        self._fg_overlap = fg_overlap
        self._box_stds = box_stds
        self._rng = np.random.RandomState(seed)

    def forward(self, is_train, req, in_data, out_data, aux):
        assert self._batch_images == in_data[1].shape[0], 'check batch size of gt_boxes'
        all_rois = in_data[0].asnumpy()
        all_gt = in_data[1].asnumpy()
        results = []
        for i in range(self._batch_images):      # a handful of images, not elements
            rois = all_rois[all_rois[:, 0] == i]
            gt = all_gt[i][all_gt[i][:, 4] > 0]
            # ground-truth boxes are candidates too
            gt_rois = np.hstack([np.full((len(gt), 1), i, dtype=gt.dtype), gt[:, :4]])
            results.append(sample_rois(np.vstack([rois, gt_rois]), gt, self._num_classes,
                                       self._rois_per_image, self._fg_rois_per_image,
                                       self._fg_overlap, self._box_stds, self._rng))
        for k in range(4):
            self.assign(out_data[k], req[k],
                        np.concatenate([r[k] for r in results]).astype(np.float32))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], 0)
        self.assign(in_grad[1], req[1], 0)


@mx.operator.register('proposal_target')
class ProposalTargetProp(mx.operator.CustomOpProp):
    def __init__(self, num_classes='21', batch_images='1', batch_rois='128',
                 fg_fraction='0.25', fg_overlap='0.5', box_stds='(0.1, 0.1, 0.2, 0.2)',
                 seed='0'):
        super(ProposalTargetProp, self).__init__(need_top_grad=False)
        self._num_classes = int(num_classes)
        self._batch_images = int(batch_images)
        self._batch_rois = int(batch_rois)
        self._fg_fraction = float(fg_fraction)
        self._fg_overlap = float(fg_overlap)
        self._box_stds = tuple(float(v) for v in box_stds.strip('()[] ').split(','))
        self._seed = int(seed)

    def list_arguments(self):
        return ['rois', 'gt_boxes']

    def list_outputs(self):
        return ['rois_output', 'label', 'bbox_target', 'bbox_weight']

    def infer_shape(self, in_shape):
        assert self._batch_rois % self._batch_images == 0, \
            'batch_images {} must divide batch_rois {}'.format(self._batch_images,
                                                              self._batch_rois)
        n, c4 = self._batch_rois, self._num_classes * 4
        return [in_shape[0], in_shape[1]], [(n, 5), (n,), (n, c4), (n, c4)]

    def create_operator(self, ctx, shapes, dtypes):
        return ProposalTargetOperator(self._num_classes, self._batch_images,
                                      self._batch_rois, self._fg_fraction, self._fg_overlap,
                                      self._box_stds, self._seed)

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        return []


# ----------------------------------------------------------------------------------
# a synthetic detection problem
# ----------------------------------------------------------------------------------
NUM_CLASSES = 4          # background + 3 object classes
BATCH_ROIS = 32
IMAGE = (1, 3, 40, 56)


def make_scene(rng):
    """An image with 3 coloured boxes, their ground truth, and 60 proposals."""
    gt = np.array([[4, 5, 19, 22, 1], [24, 3, 47, 17, 2], [30, 22, 51, 37, 3]], np.float32)
    img = rng.normal(0, 0.1, IMAGE).astype(np.float32)
    for x1, y1, x2, y2, c in gt.astype(int):
        img[0, c - 1, y1:y2 + 1, x1:x2 + 1] += 1.0
    jitter = gt[rng.randint(0, 3, 36), :4] + rng.normal(0, 2.5, (36, 4))
    x1 = rng.uniform(0, 40, 24)
    y1 = rng.uniform(0, 26, 24)
    random = np.stack([x1, y1, x1 + rng.uniform(6, 16, 24), y1 + rng.uniform(6, 14, 24)], 1)
    boxes = np.vstack([jitter, random])
    boxes[:, 0::2] = np.clip(boxes[:, 0::2], 0, IMAGE[3] - 1)
    boxes[:, 1::2] = np.clip(boxes[:, 1::2], 0, IMAGE[2] - 1)
    rois = np.hstack([np.zeros((len(boxes), 1)), boxes]).astype(np.float32)
    return img, rois, gt[None]


def build_net():
    data = mx.sym.Variable('data')
    rois = mx.sym.Variable('rois')
    gt_boxes = mx.sym.Variable('gt_boxes')
    group = mx.sym.Custom(rois=rois, gt_boxes=gt_boxes, op_type='proposal_target',
                          num_classes=NUM_CLASSES, batch_images=1, batch_rois=BATCH_ROIS,
                          fg_fraction=0.25, fg_overlap=0.5, box_stds=(0.1, 0.1, 0.2, 0.2),
                          seed=7, name='ptarget')
    rois_out, label, bbox_target, bbox_weight = group[0], group[1], group[2], group[3]
    conv = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=8, name='conv')
    relu = mx.sym.Activation(conv, act_type='relu', name='relu')
    pool = mx.sym.ROIPooling(relu, rois_out, pooled_size=(3, 3), spatial_scale=1.0,
                             name='roi_pool')
    flat = mx.sym.Flatten(pool, name='flat')
    cls_score = mx.sym.FullyConnected(flat, num_hidden=NUM_CLASSES, name='cls_score')
    cls_prob = mx.sym.SoftmaxOutput(cls_score, label, normalization='batch', name='cls_prob')
    bbox_pred = mx.sym.FullyConnected(flat, num_hidden=4 * NUM_CLASSES, name='bbox_pred')
    sq = bbox_weight * mx.sym.square(bbox_pred - bbox_target)
    bbox_loss = mx.sym.MakeLoss(mx.sym.sum(sq) / BATCH_ROIS, name='bbox_loss')
    return mx.sym.Group([cls_prob, bbox_loss, mx.sym.BlockGrad(label, name='label_out'),
                         mx.sym.BlockGrad(bbox_weight, name='weight_out')])


def main(steps=40, lr=0.2):
    rng = np.random.RandomState(0)
    img, rois, gt = make_scene(rng)
    net = build_net()
    print('arguments:', net.list_arguments())
    print('outputs:  ', net.list_outputs())
    params = ['conv_weight', 'conv_bias', 'cls_score_weight', 'cls_score_bias',
              'bbox_pred_weight', 'bbox_pred_bias']
    req = {n: ('write' if n in params else 'null') for n in net.list_arguments()}
    exe = net.simple_bind(mx.cpu(), grad_req=req, data=img.shape, rois=rois.shape,
                          gt_boxes=gt.shape)
    exe.arg_dict['data'][:] = img
    exe.arg_dict['rois'][:] = rois
    exe.arg_dict['gt_boxes'][:] = gt
    for n in params:
        shape = exe.arg_dict[n].shape
        scale = 0.0 if n.endswith('bias') else 1.0 / np.sqrt(np.prod(shape[1:]))
        exe.arg_dict[n][:] = rng.uniform(-scale, scale, shape).astype(np.float32)
    history = []
    for step in range(steps):
        prob, bbox_loss, label, weight = [o.asnumpy() for o in exe.forward(is_train=True)]
        exe.backward()
        for n in params:
            exe.arg_dict[n][:] = exe.arg_dict[n] - lr * exe.grad_dict[n]
        n_fg = int((label > 0).sum())
        assert n_fg <= int(round(0.25 * BATCH_ROIS)) and n_fg > 0
        assert int(weight.sum()) == 4 * n_fg       # 4 weights per foreground RoI
        xent = -np.log(prob[np.arange(BATCH_ROIS), label.astype(int)] + 1e-12).mean()
        acc = (prob.argmax(axis=1) == label).mean()
        history.append((xent, float(bbox_loss.ravel()[0]), acc))
        if step % 5 == 0 or step == steps - 1:
            print('step %2d  fg %2d/%d  cls loss %.4f  bbox loss %.4f  accuracy %.3f'
                  % (step, n_fg, BATCH_ROIS, history[-1][0], history[-1][1], acc))
    first = np.mean([h[0] for h in history[:5]])
    last = np.mean([h[0] for h in history[-5:]])
    print('classification loss, first 5 steps %.4f -> last 5 steps %.4f' % (first, last))
    return history


if __name__ == '__main__':
    main()
