"""Golden cases of the SSD operators (MultiBoxPrior / MultiBoxTarget / MultiBoxDetection).

None of them has a gradient: MXNet writes zeros for cls_pred (Target) and for every input
(Prior, Detection); Target leaves the anchor and label gradients as simple_bind made them
(zeros). Ties in scores and in the hard-negative probabilities are made on purpose.
"""
import numpy as np

from graphs_compute import case, op1
from graphs import const

for _nm, _kw, _shape in [
        ('default', {}, (1, 3, 2, 3)),
        ('sizes_ratios', {'sizes': (0.5, 0.25), 'ratios': (2, 0.5, 1)}, (2, 4, 4, 3)),
        ('clip_steps_offsets', {'sizes': (0.3, 0.6, 0.9), 'ratios': (1, 3), 'clip': True,
                                'steps': (0.2, 0.1), 'offsets': (0.25, 0.75)}, (1, 2, 3, 5)),
        ('5d', {'sizes': (0.7,), 'ratios': (0.5, 2)}, (1, 1, 2, 3, 2))]:
    case('multibox_prior_' + _nm, op1('contrib.MultiBoxPrior', **_kw), {'x': _shape})


def _anchors(n, seed):
    rng = np.random.RandomState(seed)
    xy = np.round(rng.uniform(0, 0.7, (n, 2)) * 8) / 8       # some anchors coincide
    return np.concatenate([xy, xy + np.round(rng.uniform(0.125, 0.4, (n, 2)) * 8) / 8],
                          1)[None]


def _labels(nb, nl, seed, empty_last=False):
    rng = np.random.RandomState(seed)
    lab = -np.ones((nb, nl, 5))
    for b in range(nb):
        n = 0 if empty_last and b == nb - 1 else rng.randint(1, nl + 1)
        xy = rng.uniform(0, 0.6, (n, 2))
        lab[b, :n, 0] = rng.randint(0, 3, n)
        lab[b, :n, 1:3] = xy
        lab[b, :n, 3:5] = xy + rng.uniform(0.15, 0.4, (n, 2))
    return lab


def _target(**kw):
    def build(mx):
        return mx.sym.contrib.MultiBoxTarget(
            mx.sym.Variable('anchor'), mx.sym.Variable('label'), mx.sym.Variable('cls_pred'),
            name='op', **kw)
    return build


def _rounded(rng, shape):
    return np.round(rng.standard_normal(shape)).astype(np.float32)   # many ties


_NA = 40
_TIN = {'anchor': const(_anchors(_NA, 1)), 'label': const(_labels(3, 4, 2, True)),
        'cls_pred': _rounded}
_TSH = {'anchor': (1, _NA, 4), 'label': (3, 4, 5), 'cls_pred': (3, 4, _NA)}
for _nm, _kw in [('default', {}),
                 ('threshold_variances', {'overlap_threshold': 0.3, 'ignore_label': -2,
                                          'variances': (0.2, 0.1, 0.3, 0.25)}),
                 ('mining', {'negative_mining_ratio': 3}),
                 ('mining_thresh', {'negative_mining_ratio': 1.5,
                                    'negative_mining_thresh': 0.3,
                                    'minimum_negative_samples': 10}),
                 ('mining_no_overlap', {'overlap_threshold': 0, 'negative_mining_ratio': 2})]:
    case('multibox_target_' + _nm, _target(**_kw), _TSH, inputs=_TIN)


def _detection(**kw):
    def build(mx):
        return mx.sym.contrib.MultiBoxDetection(
            mx.sym.Variable('cls_prob'), mx.sym.Variable('loc_pred'),
            mx.sym.Variable('anchor'), name='op', **kw)
    return build


def _probs(rng, shape):
    p = np.round(rng.uniform(0, 1, shape) * 4) / 4 + 0.01         # tied scores
    return (p / p.sum(1, keepdims=True)).astype(np.float32)


_DA = 30
_DIN = {'cls_prob': _probs, 'anchor': const(_anchors(_DA, 3)),
        'loc_pred': lambda rng, shape: (rng.standard_normal(shape) * 0.3).astype(np.float32)}
_DSH = {'cls_prob': (2, 4, _DA), 'loc_pred': (2, 4 * _DA), 'anchor': (1, _DA, 4)}
for _nm, _kw in [('default', {}),
                 ('nms03_noclip', {'nms_threshold': 0.3, 'clip': False}),
                 ('force_suppress', {'force_suppress': True, 'threshold': 0.2}),
                 ('topk', {'nms_topk': 6, 'nms_threshold': 0.2}),
                 ('no_nms', {'nms_threshold': 0, 'variances': (0.2, 0.1, 0.3, 0.25)}),
                 ('background_id', {'background_id': 2, 'threshold': 0.3})]:
    case('multibox_detection_' + _nm, _detection(**_kw), _DSH, inputs=_DIN)


def _ssd(mx):
    """A small SSD head: anchors from a feature map, targets, the two losses and the
    detections."""
    feat = mx.sym.Variable('feat')
    cls_pred = mx.sym.Variable('cls_pred')
    loc_pred = mx.sym.Variable('loc_pred')
    anchors = mx.sym.contrib.MultiBoxPrior(feat, sizes=(0.3, 0.6), ratios=(1, 2, 0.5),
                                           name='anchors')
    tgt = mx.sym.contrib.MultiBoxTarget(anchors, mx.sym.Variable('label'), cls_pred,
                                        negative_mining_ratio=3, name='target')
    cls_loss = mx.sym.SoftmaxOutput(cls_pred, tgt[2], ignore_label=-1, use_ignore=True,
                                    multi_output=True, normalization='valid',
                                    name='cls_loss')
    loc_loss = mx.sym.MakeLoss(mx.sym.smooth_l1((loc_pred - tgt[0]) * tgt[1], scalar=1.0),
                               name='loc_loss')
    det = mx.sym.contrib.MultiBoxDetection(mx.sym.softmax(cls_pred, axis=1), loc_pred,
                                           anchors, nms_threshold=0.45, name='det')
    return mx.sym.Group([cls_loss, loc_loss, mx.sym.BlockGrad(det)])


case('multibox_ssd_head', _ssd, {'feat': (2, 8, 3, 3), 'cls_pred': (2, 4, 36),
                                 'loc_pred': (2, 144), 'label': (2, 3, 5)},
     inputs={'label': const(_labels(2, 3, 5))},
     grad_req={'feat': 'write', 'cls_pred': 'write', 'loc_pred': 'write', 'label': 'null'})
