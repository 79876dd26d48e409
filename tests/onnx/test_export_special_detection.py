"""ONNX export of the detection operators (symgraph/onnx/_convert_detection.py): box_nms
and contrib.nms compared exactly (the -1 rows included), MultiBox{Prior,Detection},
ROIPooling, ROIAlign and the proposal operators against symgraph's forward in ONNX
Runtime; an SSD-style deploy graph and a Faster R-CNN test graph end to end."""
import numpy as np
import pytest

import symgraph as mx
from onnx_special_check import check

pytest.importorskip('onnx')
pytest.importorskip('onnxruntime')

#: MaxRoiPool / RoiAlign (to opset 21) and the Loop form the converters write from opset
#: 22 (ONNX Runtime 1.32 has no kernels for those operators' opset-22 versions)
ROI_OPSETS = [21, None]


def _boxes(rng, n, lo=0.0, hi=10.0, size=(0.5, 4.0)):
    xy = rng.uniform(lo, hi, (n, 2))
    wh = rng.uniform(size[0], size[1], (n, 2))
    return np.concatenate([xy, xy + wh], axis=1)


def _nms_data(rng, batch, n, classes=3, ties=False):
    """(batch, n, 6) rows [id, score, x1, y1, x2, y2] with crowded boxes."""
    rows = []
    for _ in range(batch):
        score = rng.randint(0, 5, n) / 5.0 if ties else rng.uniform(-0.2, 1, n)
        ids = rng.randint(-1, classes, n)
        rows.append(np.column_stack([ids, score, _boxes(rng, n)]))
    return np.stack(rows).astype(np.float32)


# --------------------------------------------------------------------------- box_nms
@pytest.mark.parametrize('kw', [
    dict(),
    dict(id_index=0, overlap_thresh=0.3),
    dict(id_index=0, force_suppress=True, topk=7),
    dict(id_index=0, background_id=0, valid_thresh=0.2, topk=5),
    dict(id_index=0, out_format='center'),
    dict(in_format='center', out_format='corner', overlap_thresh=0.2),
    dict(overlap_thresh=0.0, topk=0),
])
def test_box_nms_exact(kw):
    rng = np.random.RandomState(1)
    x = mx.sym.var('x')
    y = mx.sym.contrib.box_nms(x, coord_start=2, score_index=1, **kw)
    data = _nms_data(rng, 3, 20, ties=True)
    data[0, 3, 2:] = [5, 5, 4, 6]          # a box of negative width: area 0 for MXNet
    ref, _ = check(y, {'x': data}, exact=True)
    if kw.get('topk') != 0:                 # (topk=0 hands the data on unchanged)
        assert (ref[0] == -1).all(axis=-1).any()       # some rows were suppressed


def test_box_nms_more_batch_axes_and_columns():
    rng = np.random.RandomState(2)
    x = mx.sym.var('x')
    data = np.concatenate([rng.uniform(0, 1, (2, 3, 15, 1)),
                           _nms_data(rng, 6, 15).reshape(2, 3, 15, 6)[..., 1:],
                           rng.uniform(0, 3, (2, 3, 15, 1))], axis=-1)
    data = data[..., [0, 2, 3, 4, 5, 1, 6]].astype(np.float32)   # coords at 1, score at 5
    y = mx.sym.contrib.box_nms(x, coord_start=1, score_index=5, id_index=6,
                               overlap_thresh=0.4)
    check(y, {'x': data}, exact=True)


def test_contrib_nms():
    rng = np.random.RandomState(3)
    b, s = mx.sym.var('b'), mx.sym.var('s')
    y = mx.sym.contrib.nms(b, s, iou_threshold=0.3)
    check(y, {'b': _boxes(rng, 30).astype(np.float32),
              's': rng.uniform(0, 1, 30).astype(np.float32)}, exact=True)


# ------------------------------------------------------------------------------ SSD
def _ssd_head(num_classes=3, **det_kw):
    """A small SSD-style deploy graph: two feature maps, MultiBoxPrior anchors, class and
    box predictions, softmax and MultiBoxDetection."""
    data = mx.sym.var('data')
    feats = [mx.sym.Activation(mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1),
                                                  num_filter=8, name='c1'), act_type='relu')]
    feats.append(mx.sym.Pooling(feats[0], kernel=(2, 2), stride=(2, 2), pool_type='max'))
    anchors, cls, loc = [], [], []
    for i, f in enumerate(feats):
        a = mx.sym.contrib.MultiBoxPrior(f, sizes=(0.2 + 0.3 * i, 0.5), ratios=(1, 2, 0.5),
                                         clip=i == 0)
        k = 4
        c = mx.sym.Convolution(f, kernel=(3, 3), pad=(1, 1), num_filter=k * num_classes,
                               name='cls%d' % i)
        box = mx.sym.Convolution(f, kernel=(3, 3), pad=(1, 1), num_filter=k * 4,
                                 name='loc%d' % i)
        cls.append(mx.sym.flatten(mx.sym.transpose(c, axes=(0, 2, 3, 1))))
        loc.append(mx.sym.flatten(mx.sym.transpose(box, axes=(0, 2, 3, 1))))
        anchors.append(mx.sym.reshape(a, shape=(0, -1)))
    anchor = mx.sym.reshape(mx.sym.concat(*anchors, dim=1), shape=(0, -1, 4))
    cls = mx.sym.transpose(mx.sym.reshape(mx.sym.concat(*cls, dim=1),
                                          shape=(0, -1, num_classes)), axes=(0, 2, 1))
    loc = mx.sym.concat(*loc, dim=1)
    return mx.sym.contrib.MultiBoxDetection(mx.sym.softmax(cls, axis=1), loc, anchor,
                                            name='det', **det_kw)


def _ssd_params(sym, shape, rng):
    arg_shapes, _, _ = sym.infer_shape(data=shape)
    return {n: (0.3 * rng.standard_normal(s)).astype(np.float32)
            for n, s in zip(sym.list_arguments(), arg_shapes) if n != 'data'}


@pytest.mark.parametrize('kw', [dict(), dict(force_suppress=True, nms_topk=20),
                                dict(nms_threshold=0.3, threshold=0.3, clip=False),
                                dict(nms_threshold=1.5)])
def test_ssd_multibox_detection(kw):
    rng = np.random.RandomState(4)
    sym = _ssd_head(**kw)
    shape = (2, 3, 8, 8)
    params = _ssd_params(sym, shape, rng)
    inputs = {'data': rng.standard_normal(shape).astype(np.float32)}
    ref, got = check(sym, inputs, params)
    # the class ids (and so every -1 row) exactly
    np.testing.assert_array_equal(got[0][..., 0], ref[0][..., 0])
    assert (ref[0][..., 0] == -1).any() and (ref[0][..., 0] >= 0).any()


def test_multibox_prior_constant():
    x = mx.sym.var('x')
    y = mx.sym.contrib.MultiBoxPrior(x, sizes=(0.5, 0.25, 0.1), ratios=(1, 2, 0.5),
                                     steps=(0.2, 0.1), offsets=(0.4, 0.6), clip=True)
    check(y, {'x': np.zeros((1, 2, 5, 7), np.float32)}, exact=True)


# ---------------------------------------------------------------------- ROI operators
def _rois(rng, r, n, h, w, scale):
    b = rng.randint(0, n, (r, 1))
    xy = rng.uniform(-2, [w / scale, h / scale], (r, 2))
    wh = rng.uniform(0, [w / scale / 2, h / scale / 2], (r, 2))
    return np.concatenate([b, xy, xy + wh], axis=1).astype(np.float32)


@pytest.mark.parametrize('opset', ROI_OPSETS)
def test_roi_pooling(opset):
    rng = np.random.RandomState(5)
    data, rois = mx.sym.var('data'), mx.sym.var('rois')
    y = mx.sym.ROIPooling(data, rois, pooled_size=(3, 4), spatial_scale=0.5)
    r = _rois(rng, 12, 2, 9, 11, 0.5)
    r[0, 0] = 5                                # a batch index past the data: zeros
    check(y, {'data': rng.standard_normal((2, 3, 9, 11)).astype(np.float32), 'rois': r},
          exact=True, opset=opset)


@pytest.mark.parametrize('kw', [dict(), dict(sample_ratio=2), dict(aligned=True),
                                dict(position_sensitive=True, sample_ratio=1)])
@pytest.mark.parametrize('opset', ROI_OPSETS)
def test_roi_align(kw, opset):
    rng = np.random.RandomState(6)
    data, rois = mx.sym.var('data'), mx.sym.var('rois')
    y = mx.sym.contrib.ROIAlign(data, rois, pooled_size=(2, 3), spatial_scale=0.25, **kw)
    r = _rois(rng, 8, 2, 10, 12, 0.25)
    r[:, 3:] += 1.0                             # positive sizes (aligned=True needs them)
    r[1, 0] = -1                                # no image: zeros
    check(y, {'data': rng.standard_normal((2, 12, 10, 12)).astype(np.float32), 'rois': r},
          opset=opset)


@pytest.mark.parametrize('opset', ROI_OPSETS)
def test_roi_align_four_columns(opset):
    rng = np.random.RandomState(7)
    data, rois = mx.sym.var('data'), mx.sym.var('rois')
    y = mx.sym.contrib.ROIAlign(data, rois, pooled_size=(3, 3), spatial_scale=1.0)
    r = _rois(rng, 5, 1, 8, 8, 1.0)[:, 1:]
    check(y, {'data': rng.standard_normal((1, 2, 8, 8)).astype(np.float32), 'rois': r},
          opset=opset)


# ---------------------------------------------------------------- region proposals
def _rpn_inputs(rng, n, a, h, w, stride):
    cls = rng.uniform(0, 1, (n, 2 * a, h, w)).astype(np.float32)
    bbox = (0.2 * rng.standard_normal((n, 4 * a, h, w))).astype(np.float32)
    info = np.array([[h * stride - 5, w * stride, 1.0], [h * stride, w * stride - 20, 1.5]]
                    [:n], np.float32)
    return cls, bbox, info


@pytest.mark.parametrize('multi', [False, True])
@pytest.mark.parametrize('kw', [dict(rpn_pre_nms_top_n=60, rpn_post_nms_top_n=20),
                                dict(rpn_pre_nms_top_n=-1, rpn_post_nms_top_n=150,
                                     threshold=0.5, rpn_min_size=8),
                                dict(iou_loss=True, rpn_post_nms_top_n=10)])
def test_proposal(multi, kw):
    rng = np.random.RandomState(8)
    n = 2 if multi else 1
    scales, ratios, stride = (2.0, 4.0), (0.5, 1.0, 2.0), 8
    cls, bbox, info = _rpn_inputs(rng, n, 6, 5, 6, stride)
    op = mx.sym.contrib.MultiProposal if multi else mx.sym.contrib.Proposal
    y = op(mx.sym.var('cls'), mx.sym.var('bbox'), mx.sym.var('info'), scales=scales,
           ratios=ratios, feature_stride=stride, output_score=True, **kw)
    check(y, {'cls': cls, 'bbox': bbox, 'info': info})


@pytest.mark.parametrize('opset', ROI_OPSETS)
def test_faster_rcnn_test_graph(opset):
    """Faster R-CNN's test graph: RPN head, Proposal, ROIPooling and the two heads."""
    rng = np.random.RandomState(9)
    data, info = mx.sym.var('data'), mx.sym.var('im_info')
    feat = mx.sym.Activation(mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1),
                                                num_filter=8, stride=(4, 4), name='conv'),
                             act_type='relu')
    a = 6
    rpn_cls = mx.sym.Convolution(feat, kernel=(1, 1), num_filter=2 * a, name='rpn_cls')
    rpn_box = mx.sym.Convolution(feat, kernel=(1, 1), num_filter=4 * a, name='rpn_box')
    prob = mx.sym.Reshape(mx.sym.SoftmaxActivation(mx.sym.Reshape(rpn_cls, shape=(0, 2, -1, 0)),
                                                   mode='channel'), shape=(0, 2 * a, -1, 0))
    rois = mx.sym.contrib.Proposal(prob, rpn_box, info, feature_stride=4, scales=(2, 4),
                                   ratios=(0.5, 1, 2), rpn_pre_nms_top_n=100,
                                   rpn_post_nms_top_n=16, threshold=0.7, rpn_min_size=4)
    pool = mx.sym.ROIPooling(feat, rois, pooled_size=(3, 3), spatial_scale=0.25)
    fc = mx.sym.FullyConnected(pool, num_hidden=16, name='fc')
    cls = mx.sym.softmax(mx.sym.FullyConnected(fc, num_hidden=3, name='cls'))
    box = mx.sym.FullyConnected(fc, num_hidden=12, name='box')
    sym = mx.sym.Group([rois, cls, box])
    shape = (1, 3, 24, 32)
    arg_shapes, _, _ = sym.infer_shape(data=shape, im_info=(1, 3))
    params = {n: (0.3 * rng.standard_normal(s)).astype(np.float32)
              for n, s in zip(sym.list_arguments(), arg_shapes) if n not in ('data', 'im_info')}
    inputs = {'data': rng.standard_normal(shape).astype(np.float32),
              'im_info': np.array([[24, 30, 1.0]], np.float32)}
    check(sym, inputs, params, opset=opset)


@pytest.mark.parametrize('fmt', ['corner', 'center'])
def test_box_iou_and_decode(fmt):
    rng = np.random.RandomState(10)
    lhs, rhs, d, anc = (mx.sym.var(n) for n in ('lhs', 'rhs', 'd', 'anc'))
    y = mx.sym.Group([mx.sym.contrib.box_iou(lhs, rhs, format=fmt),
                      mx.sym.contrib.box_decode(d, anc, std0=0.1, std1=0.1, std2=0.2,
                                                std3=0.2, clip=1.5, format=fmt)])
    boxes = _boxes(rng, 12).astype(np.float32)
    boxes[3, 2] = boxes[3, 0] - 1                                # negative width: area 0
    anchors = _boxes(rng, 5, 0, 1, (0.1, 0.5)).astype(np.float32)[None]
    check(y, {'lhs': boxes.reshape(2, 6, 4), 'rhs': _boxes(rng, 7).astype(np.float32),
              'd': rng.standard_normal((3, 5, 4)).astype(np.float32) * 3, 'anc': anchors})


def test_box_nms_float64_and_topk_int32():
    """float64 rows (the suppression runs in float32: coordinates on a coarse grid keep
    every IoU exact) and int32 data sorted by TopK."""
    rng = np.random.RandomState(11)
    x, k = mx.sym.var('x'), mx.sym.var('k')
    data = _nms_data(rng, 2, 25).astype(np.float64)
    data[..., 2:] = np.round(data[..., 2:] * 4) / 4
    y = mx.sym.Group([mx.sym.contrib.box_nms(x, id_index=0, overlap_thresh=0.25),
                      mx.sym.topk(k, k=3, ret_typ='both', dtype='int64')])
    check(y, {'x': data, 'k': rng.randint(-5, 5, (4, 6)).astype(np.int32)}, exact=True)


@pytest.mark.parametrize('dtype', [np.float16, np.float64])
@pytest.mark.parametrize('opset', ROI_OPSETS)
def test_roi_pooling_other_dtypes(dtype, opset):
    """float16 (MXNet's own export test: its bin arithmetic in float16) and float64 data
    through the Loop form."""
    rng = np.random.RandomState(12)
    data, rois = mx.sym.var('data'), mx.sym.var('rois')
    y = mx.sym.ROIPooling(data, rois, pooled_size=(3, 2), spatial_scale=0.7)
    r = _rois(rng, 9, 2, 8, 6, 0.7).astype(dtype)
    check(y, {'data': np.arange(2 * 3 * 8 * 6).reshape(2, 3, 8, 6).astype(dtype) / 7,
              'rois': r}, exact=True, opset=opset)


@pytest.mark.parametrize('kw', [dict(output_dim=2, pooled_size=3),
                                dict(output_dim=3, pooled_size=4, group_size=2)])
def test_psroi_pooling(kw):
    rng = np.random.RandomState(13)
    data, rois = mx.sym.var('data'), mx.sym.var('rois')
    y = mx.sym.contrib.PSROIPooling(data, rois, spatial_scale=0.5, **kw)
    g = kw.get('group_size') or kw['pooled_size']
    r = _rois(rng, 7, 2, 9, 10, 0.5)
    r[2, 1:] = [30, 30, 34, 33]                 # past the map: empty bins
    check(y, {'data': rng.standard_normal((2, kw['output_dim'] * g * g, 9, 10))
              .astype(np.float32), 'rois': r})


@pytest.mark.parametrize('ratio', [-1, 2])
def test_rroi_align(ratio):
    rng = np.random.RandomState(14)
    data, rois = mx.sym.var('data'), mx.sym.var('rois')
    y = mx.sym.contrib.RROIAlign(data, rois, pooled_size=(2, 3), spatial_scale=0.5,
                                 sampling_ratio=ratio)
    r = np.column_stack([rng.randint(0, 2, 6), rng.uniform(0, 20, (6, 2)),
                         rng.uniform(1, 12, (6, 2)), rng.uniform(-90, 90, 6)])
    check(y, {'data': rng.standard_normal((2, 3, 9, 11)).astype(np.float32),
              'rois': r.astype(np.float32)})


@pytest.mark.parametrize('no_trans', [False, True])
def test_deformable_psroi_pooling(no_trans):
    rng = np.random.RandomState(15)
    data, rois, trans = mx.sym.var('data'), mx.sym.var('rois'), mx.sym.var('trans')
    args = [data, rois] if no_trans else [data, rois, trans]
    y = mx.sym.contrib.DeformablePSROIPooling(*args, spatial_scale=0.5, output_dim=4,
                                              group_size=3, pooled_size=3, part_size=2,
                                              sample_per_part=2, trans_std=0.2,
                                              no_trans=no_trans)
    r = _rois(rng, 5, 2, 9, 10, 0.5)
    inputs = {'data': rng.standard_normal((2, 36, 9, 10)).astype(np.float32), 'rois': r}
    if not no_trans:
        inputs['trans'] = rng.standard_normal((5, 4, 2, 2)).astype(np.float32)
    check(y, inputs)


def test_box_encode():
    rng = np.random.RandomState(16)
    names = ('samples', 'matches', 'anchors', 'refs', 'means', 'stds')
    y = mx.sym.contrib.box_encode(*[mx.sym.var(n) for n in names])
    inputs = {'samples': rng.choice([-1.0, 0.0, 1.0], (2, 6)).astype(np.float32),
              'matches': rng.randint(0, 3, (2, 6)).astype(np.float32),
              'anchors': np.stack([_boxes(rng, 6) for _ in range(2)]).astype(np.float32),
              'refs': np.stack([_boxes(rng, 3) for _ in range(2)]).astype(np.float32),
              'means': np.array([0, 0.1, 0, -0.1], np.float32),
              'stds': np.array([0.1, 0.1, 0.2, 0.2], np.float32)}
    check(y, inputs)


@pytest.mark.parametrize('kw', [dict(threshold=0.2), dict(threshold=0.5, is_ascend=True),
                                dict(threshold=-1.0, topk=2)])
def test_bipartite_matching(kw):
    rng = np.random.RandomState(17)
    x = mx.sym.var('x')
    y = mx.sym.contrib.bipartite_matching(x, **kw)
    data = np.round(rng.uniform(0, 1, (2, 3, 5, 4)) * 8) / 8       # ties: row-major first
    check(y, {'x': data.astype(np.float32)}, exact=True)
