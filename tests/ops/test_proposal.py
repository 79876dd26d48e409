"""Proposal / MultiProposal against a naive loop reference (a straight port of MXNet's
CPU loops in proposal.cc), plus shapes, types, errors and MXNet values."""
import math

import numpy as np
import pytest

import symgraph as mx
from harness import OpCase, check_forward, parametrize_cases
from symgraph.opdef import MXNetError, ShapeError, get_op

_DEF = dict(rpn_pre_nms_top_n=6000, rpn_post_nms_top_n=300, threshold=0.7, rpn_min_size=16,
            scales=(4.0, 8.0, 16.0, 32.0), ratios=(0.5, 1.0, 2.0), feature_stride=16,
            iou_loss=False)


# ----------------------------------------------------------------------------------
# naive reference
# ----------------------------------------------------------------------------------
def naive_anchors(stride, ratios, scales):
    out = []
    for r in ratios:
        for s in scales:
            size = stride * stride
            ws = math.floor(math.sqrt(math.floor(size / r)) + 0.5) * s
            hs = math.floor(ws / s * r + 0.5) * s
            c = (stride - 1) / 2.0
            out.append([c - (ws - 1) / 2, c - (hs - 1) / 2, c + (ws - 1) / 2, c + (hs - 1) / 2])
    return out


def _one_image(cls, bbox, info, p):
    a2, h, w = cls.shape
    a = a2 // 2
    s = p['feature_stride']
    anc = naive_anchors(s, p['ratios'], p['scales'])
    im_h, im_w, scale = (float(v) for v in info)
    props = []
    for y in range(h):
        for x in range(w):
            for k in range(a):
                b = [anc[k][0] + x * s, anc[k][1] + y * s, anc[k][2] + x * s, anc[k][3] + y * s]
                d = [float(bbox[4 * k + i, y, x]) for i in range(4)]
                if p['iou_loss']:
                    box = [b[i] + d[i] for i in range(4)]
                else:
                    bw, bh = b[2] - b[0] + 1, b[3] - b[1] + 1
                    cx, cy = b[0] + (bw - 1) / 2, b[1] + (bh - 1) / 2
                    pcx, pcy = d[0] * bw + cx, d[1] * bh + cy
                    pw, ph = math.exp(d[2]) * bw, math.exp(d[3]) * bh
                    box = [pcx - (pw - 1) / 2, pcy - (ph - 1) / 2,
                           pcx + (pw - 1) / 2, pcy + (ph - 1) / 2]
                box = [min(max(box[0], 0), im_w - 1), min(max(box[1], 0), im_h - 1),
                       min(max(box[2], 0), im_w - 1), min(max(box[3], 0), im_h - 1)]
                sc = float(cls[a + k, y, x])
                if y >= int(im_h / s) or x >= int(im_w / s):
                    sc = -1.0
                m = p['rpn_min_size'] * scale
                if box[2] - box[0] + 1 < m or box[3] - box[1] + 1 < m:
                    box = [box[0] - m / 2, box[1] - m / 2, box[2] + m / 2, box[3] + m / 2]
                    sc = -1.0
                props.append(box + [sc])
    order = sorted(range(len(props)), key=lambda i: -props[i][4])     # stable
    pre = p['rpn_pre_nms_top_n']
    pre = len(props) if pre <= 0 else min(pre, len(props))
    dets = [props[i] for i in order[:pre]]
    area = [(d[2] - d[0] + 1) * (d[3] - d[1] + 1) for d in dets]
    sup, keep = [False] * len(dets), []
    for i in range(len(dets)):
        if len(keep) >= p['rpn_post_nms_top_n']:
            break
        if sup[i]:
            continue
        keep.append(i)
        for j in range(i + 1, len(dets)):
            iw = max(0.0, min(dets[i][2], dets[j][2]) - max(dets[i][0], dets[j][0]) + 1)
            ih = max(0.0, min(dets[i][3], dets[j][3]) - max(dets[i][1], dets[j][1]) + 1)
            inter = iw * ih
            if inter / (area[i] + area[j] - inter) > p['threshold']:
                sup[j] = True
    rows = [dets[keep[i % len(keep)]] for i in range(p['rpn_post_nms_top_n'])]
    return [r[:4] for r in rows], [[r[4]] for r in rows]


def naive_proposal(**kw):
    p = dict(_DEF, **kw)

    def ref(cls, bbox, info):
        rois, scores = [], []
        for n in range(cls.shape[0]):
            r, s = _one_image(cls[n], bbox[n], info[n], p)
            rois += [[n] + x for x in r]
            scores += s
        out = [np.array(rois)]
        return out + [np.array(scores)] if kw.get('output_score') else out
    return ref


def _inputs(im_info, delta=0.3, ties=False):
    def make(rng, shapes, dtype):
        c, b, _ = shapes
        cls = rng.uniform(0, 1, c)
        if ties:                                 # equal scores keep index order
            cls = np.round(cls * 3) / 3
        return [cls.astype(np.float32).astype(dtype),
                (rng.standard_normal(b) * delta).astype(dtype),
                np.asarray(im_info, dtype).reshape(shapes[2])]
    return make


def _case(op, n, hw, im_info, delta=0.3, ties=False, **kw):
    a = len(kw.get('scales', _DEF['scales'])) * len(kw.get('ratios', _DEF['ratios']))
    shapes = [(n, 2 * a) + hw, (n, 4 * a) + hw, (n, 3)]
    return OpCase(op, attrs=kw, shapes=shapes, ref=naive_proposal(**kw),
                  inputs=_inputs(im_info, delta, ties), dtypes=('float32', 'float64'), grad=(),
                  rtol=1e-5, atol=2e-4)


CASES = [
    _case('_contrib_Proposal', 1, (5, 6), [[80, 96, 1.0]], rpn_pre_nms_top_n=50,
          rpn_post_nms_top_n=30, scales=(2, 4), rpn_min_size=4, output_score=True),
    _case('_contrib_Proposal', 1, (4, 5), [[60, 70, 1.2]], rpn_post_nms_top_n=40),
    _case('_contrib_Proposal', 1, (4, 5), [[64, 80, 1.0]], rpn_pre_nms_top_n=20,
          rpn_post_nms_top_n=25, scales=(2,), threshold=0.5, output_score=True),
    _case('_contrib_Proposal', 1, (5, 5), [[40, 44, 1.0]], delta=3.0, rpn_pre_nms_top_n=-1,
          rpn_post_nms_top_n=40, scales=(1, 2), ratios=(1,), iou_loss=True,
          feature_stride=8, rpn_min_size=2, output_score=True),
    _case('_contrib_MultiProposal', 3, (4, 4), [[64, 64, 1.0], [40, 60, 0.5], [30, 64, 2.0]],
          rpn_pre_nms_top_n=40, rpn_post_nms_top_n=20, scales=(2, 3), ratios=(0.5, 2),
          threshold=0.6, rpn_min_size=8, output_score=True),
    _case('_contrib_MultiProposal', 2, (6, 7), [[96, 112, 1.0], [80, 100, 1.0]],
          rpn_post_nms_top_n=50, scales=(8,)),
    _case('_contrib_MultiProposal', 2, (6, 8), [[96, 128, 1.0], [80, 100, 1.0]], ties=True,
          rpn_pre_nms_top_n=100, rpn_post_nms_top_n=80, scales=(1, 2), threshold=0.8,
          rpn_min_size=4, output_score=True),
]


@parametrize_cases(CASES)
def test_forward(case):
    check_forward(case)


# ----------------------------------------------------------------------------------
# shapes, types, errors, details
# ----------------------------------------------------------------------------------
def test_anchors_match_classic_generate_anchors():
    from symgraph.ops.proposal import generate_anchors
    got = generate_anchors(16, (0.5, 1, 2), (8, 16, 32))
    # py-faster-rcnn's generate_anchors() printout
    want = [[-84, -40, 99, 55], [-176, -88, 191, 103], [-360, -184, 375, 199],
            [-56, -56, 71, 71], [-120, -120, 135, 135], [-248, -248, 263, 263],
            [-36, -80, 51, 95], [-80, -168, 95, 183], [-168, -344, 183, 359]]
    np.testing.assert_array_equal(got, want)


def test_symbol_outputs_and_shapes():
    c, b, i = mx.sym.var('c'), mx.sym.var('b'), mx.sym.var('i')
    with mx.name.NameManager():     # names counted from 0 whatever ran before
        s = mx.sym.contrib.Proposal(c, b, i, output_score=True, rpn_post_nms_top_n=7)
    assert s.list_arguments() == ['c', 'b', 'i']
    assert s.list_outputs() == ['proposal0_output', 'proposal0_score']
    assert s.infer_shape(c=(1, 24, 4, 5)) == (
        [(1, 24, 4, 5), (1, 48, 4, 5), (1, 3)], [(7, 5), (7, 1)], [])
    assert len(mx.sym.contrib.Proposal(c, b, i).list_outputs()) == 1
    m = mx.sym.contrib.MultiProposal(c, b, i, rpn_post_nms_top_n=7, scales=(1,))
    assert m.infer_shape(c=(2, 6, 4, 5))[1] == [(14, 5)]


def test_shape_errors():
    op = get_op('_contrib_Proposal')()
    with pytest.raises(ShapeError, match='channels'):
        op.infer_shape([(1, 10, 4, 5), None, None])
    with pytest.raises(ShapeError, match='bbox_pred'):
        op.infer_shape([(1, 24, 4, 5), (1, 40, 4, 5), None])
    with pytest.raises(ShapeError, match='im_info'):
        op.infer_shape([(1, 24, 4, 5), None, (1, 4)])
    with pytest.raises(ShapeError, match='4D'):
        op.infer_shape([(24, 4, 5), None, None])


def test_float32_only_and_batch_one():
    op = get_op('_contrib_MultiProposal')()
    with pytest.raises(MXNetError, match='float32'):
        op.infer_type([np.float16, None, None])
    with pytest.raises(MXNetError, match='one dtype'):
        op.infer_type([np.float32, np.float64, None])
    assert op.infer_type([None, None, None])[1] == [np.float32, np.float32]
    # float64: an extension, computed in float32
    assert op.infer_type([np.float64, None, None])[1] == [np.float64, np.float64]
    p = get_op('_contrib_Proposal')(scales=(1,), ratios=(1,))
    x = [np.ones((2, 2, 3, 3), np.float32), np.zeros((2, 4, 3, 3), np.float32),
         np.array([[48, 48, 1]] * 2, np.float32)]
    with pytest.raises(MXNetError, match='multiple images'):
        p.forward(np, x, [], False)


def test_mxnet_values_padding_and_min_size():
    """Values from MXNet 1.9.1: one cell and anchor per image row; the small boxes get
    score -1 and grow by rpn_min_size/2; too few boxes: rows repeat."""
    cls = np.array([.2, .9, .3, .6], np.float32).reshape(1, 2, 1, 2)
    bbox = np.zeros((1, 4, 1, 2), np.float32)
    bbox[0, 2:, 0, 1] = -3.0                     # second cell: a tiny box
    info = np.array([[16, 40, 1]], np.float32)
    out = get_op('_contrib_Proposal')(scales=(1,), ratios=(1,), rpn_post_nms_top_n=5,
                                      output_score=True).forward(np, [cls, bbox, info],
                                                                 [], False)
    rois, sc = out
    np.testing.assert_allclose(sc.ravel(), [.3, -1, .3, -1, .3])
    np.testing.assert_allclose(rois[0], [0, 0, 0, 15, 15])
    # enlarged after clipping: y2 = 15.398 > im_h - 1
    np.testing.assert_allclose(rois[1], [0, 15.601704, -0.39829636, 31.398296, 15.398296],
                               rtol=1e-6)
    np.testing.assert_array_equal(rois[2], rois[0])
    with pytest.raises(MXNetError, match='real_height'):
        get_op('_contrib_MultiProposal')(scales=(1,), ratios=(1,)).forward(
            np, [cls, bbox, np.array([[32, 32, 1]], np.float32)], [], False)


def test_no_gradient_zeros():
    c, b, i = mx.sym.var('c'), mx.sym.var('b'), mx.sym.var('i')
    sym = mx.sym.contrib.MultiProposal(c, b, i, scales=(1,), ratios=(1,),
                                       rpn_post_nms_top_n=4, output_score=True)
    exe = sym.simple_bind(mx.cpu(), c=(2, 2, 3, 3), b=(2, 4, 3, 3), i=(2, 3))
    exe.arg_dict['c'][:] = np.random.RandomState(0).rand(2, 2, 3, 3)
    exe.arg_dict['i'][:] = np.array([[48, 48, 1], [40, 48, 1]])
    exe.forward(is_train=True)
    exe.backward([mx.nd.ones(o.shape) for o in exe.outputs])
    assert all(not g.asnumpy().any() for g in exe.grad_arrays)
