"""Golden cases of ``_contrib_Proposal`` and ``_contrib_MultiProposal`` (no gradient: MXNet
writes zeros for every input). Scores are uniform random float32 except in ``ties``, where
they are multiples of 1/3: MXNet's CPU sort kept equal scores in index order in every
experiment (240 boxes in 4 tie groups included), as symgraph does. The cases cover padding
by repetition (fewer kept boxes than rpn_post_nms_top_n), min-size filtering (score -1,
enlarged boxes), cells outside a smaller image (score -1), iou_loss decoding and defaults.
"""
import numpy as np

from graphs_compute import case
from graphs import const, uniform


def _deltas(scale):
    return lambda rng, shape: (rng.standard_normal(shape) * scale).astype(np.float32)


def _thirds(rng, shape):
    return (np.round(rng.uniform(0, 1, shape) * 3) / 3).astype(np.float32)


def _build(opname, **kw):
    def build(mx):
        return getattr(mx.sym.contrib, opname)(
            mx.sym.Variable('cls_prob'), mx.sym.Variable('bbox_pred'),
            mx.sym.Variable('im_info'), name='op', **kw)
    return build


for _nm, _op, _n, _hw, _info, _d, _kw in [
        ('default', 'Proposal', 1, (6, 7), [[90, 100, 1.2]], 0.3, {}),
        ('small_scores', 'Proposal', 1, (5, 6), [[80, 96, 1.0]], 0.3,
         dict(rpn_pre_nms_top_n=50, rpn_post_nms_top_n=30, scales=(2, 4), rpn_min_size=4,
              output_score=True)),
        ('repeat', 'Proposal', 1, (4, 5), [[64, 80, 1.0]], 0.3,
         dict(rpn_pre_nms_top_n=20, rpn_post_nms_top_n=25, scales=(2,), threshold=0.5,
              output_score=True)),
        ('iou_loss', 'Proposal', 1, (6, 6), [[40, 44, 1.0]], 3.0,
         dict(rpn_pre_nms_top_n=-1, rpn_post_nms_top_n=40, scales=(1, 2), ratios=(1,),
              iou_loss=True, feature_stride=8, rpn_min_size=2, output_score=True)),
        ('multi', 'MultiProposal', 3, (5, 5), [[80, 80, 1.0], [50, 70, 0.5], [30, 80, 2.0]],
         0.3, dict(rpn_pre_nms_top_n=40, rpn_post_nms_top_n=20, scales=(2, 3),
                   ratios=(0.5, 2), threshold=0.6, rpn_min_size=8, output_score=True)),
        ('multi_default', 'MultiProposal', 2, (12, 14), [[190, 220, 1.0], [150, 224, 1.0]],
         0.3, dict(rpn_post_nms_top_n=500, scales=(8,))),
        ('ties', 'MultiProposal', 2, (8, 10), [[128, 160, 1.0], [100, 150, 1.0]], 0.3,
         dict(rpn_pre_nms_top_n=200, rpn_post_nms_top_n=150, scales=(1, 2), threshold=0.8,
              rpn_min_size=4, output_score=True))]:
    _a = len(_kw.get('scales', (4, 8, 16, 32))) * len(_kw.get('ratios', (0.5, 1, 2)))
    case('proposal_' + _nm, _build(_op, **_kw),
         {'cls_prob': (_n, 2 * _a) + _hw, 'bbox_pred': (_n, 4 * _a) + _hw,
          'im_info': (_n, 3)},
         inputs={'cls_prob': _thirds if _nm == 'ties' else uniform(0, 1), 'bbox_pred': _deltas(_d),
                 'im_info': const(np.array(_info, np.float32))},
         note='region proposals: sorted, NMS, padded by repetition; zero gradients')
