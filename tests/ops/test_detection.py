"""box_nms, box_iou, nms, bipartite_matching, box_encode and box_decode against naive loop
references (box_encode / box_decode: MXNet 1.9.1's values are golden cases splitidx_box_* in
tests/golden/graphs_compute_split_index.py; box_nms on float16: tests/golden/make_nms_f16.py,
data/nms_f16.npz).

The references compare as MXNet's box_nms does: the IoU, computed in the boxes' dtype, with
the float32 threshold as exact numbers (MXNet's ``half_t > float`` converts both to float32),
the scores with valid_thresh rounded to the scores' dtype (``ScalarExp<DType>``)."""
import json
import math
import os

import hypothesis as hyp
import numpy as np
import pytest
from hypothesis import strategies as st

import symgraph as mx
from _refs import given
from harness import case_tests, OpCase
from symgraph.opdef import get_op, ShapeError
from symgraph.ops import _nms as det


# ----------------------------------------------------------------------------------
# naive references
# ----------------------------------------------------------------------------------
def naive_iou(a, b, fmt='corner'):
    """MXNet's IoU of two boxes, element by element."""
    def corners(v):
        if fmt == 'corner':
            return v[0], v[1], v[2], v[3], v[2] - v[0], v[3] - v[1]
        return v[0] - v[2] / 2, v[1] - v[3] / 2, v[0] + v[2] / 2, v[1] + v[3] / 2, v[2], v[3]
    ax1, ay1, ax2, ay2, aw, ah = corners(a)
    bx1, by1, bx2, by2, bw, bh = corners(b)
    w = max(min(ax2, bx2) - max(ax1, bx1), 0)
    h = max(min(ay2, by2) - max(ay1, by1), 0)
    inter = w * h
    area_a = aw * ah if aw >= 0 and ah >= 0 else 0
    area_b = bw * bh if bw >= 0 and bh >= 0 else 0
    with np.errstate(invalid='ignore', divide='ignore'):
        return np.divide(inter, area_a + area_b - inter)


def naive_box_nms(data, overlap_thresh=0.5, valid_thresh=0.0, topk=-1, coord_start=2,
                  score_index=1, id_index=-1, background_id=-1, force_suppress=False,
                  in_format='corner', out_format='corner'):
    """Returns (output, record): record[k] = flat input row of output row k, or -1."""
    shape = data.shape
    n, w = shape[-2], shape[-1]
    flat = data.reshape(-1, n, w)
    out = np.full_like(flat, -1)
    rec = np.full(flat.shape[:2], -1)
    thr = float(np.float32(overlap_thresh))
    vthr = data.dtype.type(np.float32(valid_thresh))
    for b in range(flat.shape[0]):
        rows = [i for i in range(n) if flat[b, i, score_index] > vthr
                and (id_index < 0 or flat[b, i, id_index] != background_id)]
        rows.sort(key=lambda i: -flat[b, i, score_index])          # stable
        if topk >= 0:
            rows = rows[:topk]
        kept = []
        for i in rows:
            ok = True
            for k in kept:
                if (id_index >= 0 and not force_suppress
                        and int(flat[b, k, id_index]) != int(flat[b, i, id_index])):
                    continue
                c = coord_start
                if float(naive_iou(flat[b, k, c:c + 4], flat[b, i, c:c + 4], in_format)) > thr:
                    ok = False
                    break
            if ok:
                kept.append(i)
        for pos, i in enumerate(kept):
            out[b, pos] = flat[b, i]
            rec[b, pos] = b * n + i
            c = out[b, pos, coord_start:coord_start + 4].copy()
            if in_format != out_format and c[0] >= 0:      # MXNet skips x < 0 rows
                if out_format == 'center':
                    c = [(c[0] + c[2]) / 2, (c[1] + c[3]) / 2, c[2] - c[0], c[3] - c[1]]
                else:
                    c = [c[0] - c[2] / 2, c[1] - c[3] / 2, c[0] + c[2] / 2, c[1] + c[3] / 2]
                out[b, pos, coord_start:coord_start + 4] = c
    if topk == 0:
        return data.copy(), np.arange(data.size // w)
    return out.reshape(shape), rec.reshape(-1)


def _nms_grad_ref(attrs):
    """MXNet copies each output row's gradient to the input row it came from."""
    def grad_ref(inputs, outputs, out_grads):
        data = inputs[0]
        _, rec = naive_box_nms(data, **attrs)
        w = data.shape[-1]
        g = np.zeros((data.size // w, w))
        dy = out_grads[0].reshape(-1, w)
        for k, r in enumerate(rec):
            if r >= 0:
                g[r] = dy[k]
        return [g.reshape(data.shape)]
    return grad_ref


def _boxes(n, seed=0, size=10.0, clusters=3, id_col=True, ties=False, fmt='corner'):
    rng = np.random.RandomState(seed)
    centres = rng.uniform(2, size - 2, (clusters, 2))
    c = centres[rng.randint(0, clusters, n)] + rng.normal(0, 0.6, (n, 2))
    wh = rng.uniform(1.0, 3.0, (n, 2))
    score = rng.randint(0, 4, n) / 4.0 if ties else rng.permutation(n) / float(n) + 0.01
    coords = np.concatenate([c, wh], 1) if fmt == 'center' else np.concatenate(
        [c - wh / 2, c + wh / 2], 1)
    ids = rng.randint(0, 3, (n, 1)).astype(float) if id_col else np.zeros((n, 1))
    return np.concatenate([ids, score[:, None], coords], 1)


def _nms_case(shape, attrs=None, seed=0, ties=False, numeric=False, **kw):
    attrs = attrs or {}

    def inputs(rng, shapes, dtype):
        n = int(np.prod(shapes[0][:-1]))
        return [_boxes(n, seed, ties=ties, fmt=attrs.get('in_format', 'corner'), **kw)
                .reshape(shapes[0])]
    return OpCase('_contrib_box_nms', attrs, shapes=[shape], inputs=inputs,
                  ref=lambda d: naive_box_nms(d, **attrs)[0],
                  grad_ref=None if numeric else _nms_grad_ref(attrs),
                  id='box_nms[%s,seed=%d,ties=%s]%s' % (attrs, seed, ties, shape))


NMS_CASES = [
    _nms_case((12, 6), numeric=True),
    _nms_case((12, 6), {'overlap_thresh': 0.3}, seed=1, numeric=True),
    _nms_case((15, 6), ties=True, seed=2),
    _nms_case((15, 6), {'valid_thresh': 0.5}, ties=True, seed=3),
    _nms_case((15, 6), {'topk': 4}, seed=4, numeric=True),
    _nms_case((9, 6), {'topk': 0}, seed=4, numeric=True),
    _nms_case((15, 6), {'id_index': 0}, seed=5),
    _nms_case((15, 6), {'id_index': 0, 'force_suppress': True}, seed=5),
    _nms_case((15, 6), {'id_index': 0, 'background_id': 1}, seed=6),
    _nms_case((15, 6), {'background_id': 1}, seed=6),   # no effect without id_index
    _nms_case((15, 6), {'in_format': 'center', 'out_format': 'center'}, seed=7, numeric=True),
    _nms_case((15, 6), {'in_format': 'center', 'out_format': 'corner'}, seed=8),
    _nms_case((15, 6), {'out_format': 'center'}, seed=8),
    _nms_case((2, 3, 7, 6), {'topk': 5, 'id_index': 0}, seed=9),
    _nms_case((3, 8, 6), {'overlap_thresh': 0.0}, seed=10),
    _nms_case((10, 6), {'overlap_thresh': -0.1}, seed=11),
    _nms_case((10, 6), {'valid_thresh': 5.0}, seed=11),    # nothing valid
]


def _nms_dense_inputs(rng, shapes, dtype):
    d = _boxes(shapes[0][0], seed=12)
    return [d[:, 2:6], d[:, 1]]


def naive_nms(boxes, scores, iou_threshold=0.5):
    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    kept = []
    for i in order:
        if all(not float(naive_iou(boxes[k], boxes[i])) > iou_threshold for k in kept):
            kept.append(i)
    return np.array(kept + [-1] * (len(scores) - len(kept)), np.int64)


def naive_box_iou(fmt):
    def ref(lhs, rhs):
        l, r = lhs.reshape(-1, 4), rhs.reshape(-1, 4)
        out = np.zeros((len(l), len(r)))
        for i in range(len(l)):
            for j in range(len(r)):
                v = naive_iou(l[i], r[j], fmt)
                out[i, j] = v if v > 0 else 0
        return out.reshape(lhs.shape[:-1] + rhs.shape[:-1])
    return ref


def _iou_inputs(rng, shapes, dtype):
    res = []
    for s in shapes:
        a = rng.uniform(0, 4, s)
        a[..., 2:] = a[..., :2] + rng.uniform(-0.5, 3, s[:-1] + (2,))
        res.append(a)
    return res


def naive_bipartite(threshold, is_ascend=False, topk=-1):
    """The greedy sweep as MXNet 1.9.1 runs it: pairs sorted (stable) best first, each row
    and column once, stopping at the threshold and after topk + 1 matches."""
    def ref(data):
        *lead, n, m = data.shape
        rows_all, cols_all = [], []
        for d in data.reshape(-1, n, m).astype(np.float64):
            key = d.ravel() if is_ascend else -d.ravel()
            rows, cols, count = [-1] * n, [-1] * m, 0
            for k in np.argsort(key, kind='stable'):
                v = d.ravel()[k]
                if (v > threshold) if is_ascend else (v < threshold):
                    break
                r, c = divmod(int(k), m)
                if rows[r] == -1 and cols[c] == -1:
                    rows[r], cols[c] = c, r
                    count += 1
                    if 0 < topk < count:
                        break
            rows_all.append(rows)
            cols_all.append(cols)
        return [np.array(rows_all, data.dtype).reshape(tuple(lead) + (n,)),
                np.array(cols_all, data.dtype).reshape(tuple(lead) + (m,))]
    return ref


def _rounded_scores(r, shapes, dtype):
    return [np.round(r.uniform(0, 1, shapes[0]), 1).astype(dtype)]     # many ties


OTHER_CASES = [
    OpCase('_contrib_bipartite_matching', {'threshold': 0.3}, shapes=[(2, 4, 5)],
           inputs=_rounded_scores, ref=naive_bipartite(0.3), grad=()),
    OpCase('_contrib_bipartite_matching', {'threshold': 0.2, 'is_ascend': True, 'topk': 2},
           shapes=[(3, 5, 3)], inputs=_rounded_scores,
           ref=naive_bipartite(0.2, True, 2), grad=()),
    OpCase('_contrib_bipartite_matching', {'threshold': 0.0}, shapes=[(1, 6)],
           inputs=_rounded_scores, ref=naive_bipartite(0.0), grad=()),
    OpCase('_contrib_nms', {}, shapes=[(30, 4), (30,)], inputs=_nms_dense_inputs,
           ref=naive_nms, grad=()),
    OpCase('_contrib_nms', {'iou_threshold': 0.2}, shapes=[(17, 4), (17,)],
           inputs=_nms_dense_inputs, ref=lambda b, s: naive_nms(b, s, 0.2), grad=()),
    OpCase('_contrib_box_iou', {}, shapes=[(2, 3, 4), (5, 4)], inputs=_iou_inputs,
           ref=naive_box_iou('corner'), grad=()),
    OpCase('_contrib_box_iou', {'format': 'center'}, shapes=[(3, 4), (2, 2, 4)],
           inputs=_iou_inputs, ref=naive_box_iou('center'), grad=()),
]


CASES = NMS_CASES + OTHER_CASES


def _center(b):
    w, h = b[2] - b[0], b[3] - b[1]
    return b[0] + w / 2, b[1] + h / 2, w, h


def _encode_ref(samples, matches, anchors, refs, means, stds):
    t = np.zeros(anchors.shape, anchors.dtype)
    m = np.zeros(anchors.shape, anchors.dtype)
    for b, n in np.ndindex(*samples.shape):
        if samples[b, n] <= 0.5:
            continue
        ax, ay, aw, ah = _center(anchors[b, n])
        rx, ry, rw, rh = _center(refs[b, int(matches[b, n])])
        raw = [(rx - ax) / aw, (ry - ay) / ah, math.log(rw / aw), math.log(rh / ah)]
        t[b, n] = [(v - means[k]) / stds[k] for k, v in enumerate(raw)]
        m[b, n] = 1
    return [t, m]


def _decode_ref(std, clip=-1.0, fmt='center'):
    def ref(x, anchors):
        out = np.empty(x.shape, x.dtype)
        for b, n in np.ndindex(*x.shape[:2]):
            a = anchors[0, n]
            ax, ay, aw, ah = _center(a) if fmt == 'corner' else a
            cx = x[b, n, 0] * std[0] * aw + ax
            cy = x[b, n, 1] * std[1] * ah + ay
            dw, dh = x[b, n, 2] * std[2], x[b, n, 3] * std[3]
            if clip > 0:
                dw, dh = min(dw, clip), min(dh, clip)
            w, h = math.exp(dw) * aw / 2, math.exp(dh) * ah / 2
            out[b, n] = [cx - w, cy - h, cx + w, cy + h]
        return out
    return ref


def _zero_grads(inputs, outputs, out_grads):
    return [np.zeros_like(a) for a in inputs]


_ANCH = [[[0, 0, 2, 2], [1, 1, 4, 3], [2, 0, 5, 5]], [[0.5, 0.5, 1.5, 2], [1, 0, 2, 1],
                                                      [0, 0, 3, 3]]]


_ENC = given([[1, -1, 1], [0, 1, 1]], [[0, 1, 1], [1, 0, 1]], _ANCH,
             [[[0.2, 0.1, 2.5, 1.8], [1, 2, 4, 4.5]], [[0, 0.5, 1, 2.5], [0.5, 0.2, 3.5, 2]]],
             [0.1, -0.1, 0.05, 0], [0.1, 0.1, 0.2, 0.2])


def _decode_inputs(fmt):
    def make(rng, shapes, dtype):
        x = rng.uniform(-1, 1, shapes[0])
        a = rng.uniform(0, 2, shapes[1])
        a[..., 2:] += 1 + (a[..., :2] if fmt == 'corner' else 0)
        return [x.astype(dtype), a.astype(dtype)]
    return make


BOX_CODER_CASES = [
    OpCase('_contrib_box_encode', {}, [(2, 3), (2, 3), (2, 3, 4), (2, 2, 4), (4,), (4,)],
           inputs=_ENC, ref=_encode_ref, grad_ref=_zero_grads),
    OpCase('_contrib_box_decode', {'std0': 0.1, 'std1': 0.1, 'std2': 2.0, 'std3': 2.0,
                                   'clip': 1.0}, [(2, 3, 4), (1, 3, 4)],
           inputs=_decode_inputs('center'),
           ref=_decode_ref((0.1, 0.1, 2.0, 2.0), clip=1.0), grad_ref=_zero_grads),
    OpCase('_contrib_box_decode', {'format': 'corner'}, [(1, 4, 4), (1, 4, 4)],
           inputs=_decode_inputs('corner'), ref=_decode_ref((1, 1, 1, 1), fmt='corner'),
           grad_ref=_zero_grads),
]


test_forward, test_gradient = case_tests(CASES + BOX_CODER_CASES)


# ----------------------------------------------------------------------------------
# float16 against MXNet 1.9.1 (tests/golden/make_nms_f16.py)
# ----------------------------------------------------------------------------------
NMS_F16 = np.load(os.path.join(os.path.dirname(__file__), os.pardir, 'golden', 'data',
                               'nms_f16.npz'))
NMS_F16_CASES = sorted({k.split('/')[0] for k in NMS_F16.files})


@pytest.mark.parametrize('name', NMS_F16_CASES)
def test_box_nms_float16_equals_mxnet(name):
    # tie_<t>: pairs whose float16 IoU is t rounded to float16 (or a neighbour of it);
    # where that rounding goes up (0.7 -> 0.70019531) MXNet suppresses the second box,
    # because it compares the half IoU with the float threshold in float32
    data, want = NMS_F16[name + '/data'], NMS_F16[name + '/out']
    attrs = json.loads(str(NMS_F16[name + '/attrs']))
    got = mx.nd.contrib.box_nms(mx.nd.array(data, dtype='float16'), **attrs).asnumpy()
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(naive_box_nms(data, **attrs)[0], want)


def test_box_nms_float16_ties_are_decided_in_float32():
    # the golden ties really are ties: IoU == the threshold rounded to float16
    data = NMS_F16['tie_0.7/data']
    x1, y1, x2, y2, area = det.box_corners(data[:, :, 2:], 'corner')
    iou = det.pair_iou(x1, y1, x2, y2, area, (slice(None), 0), (slice(None), 1))
    assert iou.dtype == np.float16 and (iou[:6] == np.float16(0.7)).all()
    assert (NMS_F16['tie_0.7/out'][:6, 1] == -1).all()            # all six suppressed
    assert det.dtype_threshold(0.7, np.dtype(np.float16)) == float(
        np.nextafter(np.float16(0.7), np.float16(0)))
    assert det.dtype_threshold(0.5, np.dtype(np.float16)) == 0.5
    assert det.dtype_threshold(float(np.float32(0.3)), np.dtype(np.float32)) == float(
        np.float32(0.3))
    assert det.dtype_threshold(0.3, np.dtype(np.float32)) == float(
        np.nextafter(np.float32(0.3), np.float32(0)))
    assert det.dtype_threshold(1e6, np.dtype(np.float16)) == 65504.0
    assert det.dtype_threshold(0.5, np.dtype(np.int32)) == 0.5


# ----------------------------------------------------------------------------------
# the fast NMS against the O(n^2) greedy loop
# ----------------------------------------------------------------------------------
def naive_greedy(boxes, scores, classes, thresh):
    order = np.argsort(-scores, kind='stable')
    kept = []
    for i in order:
        if all(classes[k] != classes[i] or not float(naive_iou(boxes[k], boxes[i])) > thresh
               for k in kept):
            kept.append(i)
    return kept


@pytest.mark.parametrize('seed', range(6))
def test_fast_nms_equals_naive_greedy(seed):
    rng = np.random.RandomState(seed)
    n = 300
    d = _boxes(n, seed, size=30.0, clusters=4 + seed, ties=seed % 2 == 0)
    d[:20, 4:6] = d[:20, 2:4] + rng.uniform(10, 25, (20, 2))     # a few very large boxes
    d[20:25, 4] = d[20:25, 2]                                     # zero-width boxes
    d[25:30, 4] = d[25:30, 2] - 1                                 # negative width
    boxes = d[:, 2:6].astype(np.float32)
    scores = d[:, 1].astype(np.float32)
    classes = d[:, 0].astype(int) if seed % 3 == 0 else np.zeros(n, int)
    for thresh in (0.0, 0.3, 0.5, 0.8):
        expected = naive_greedy(boxes, scores, classes, np.float32(thresh))
        order = np.argsort(-scores, kind='stable')
        x1, y1, x2, y2, area = det.box_corners(boxes[order], 'corner')
        keep = det.greedy_nms_keep(x1, y1, x2, y2, area, classes[order].astype(np.int64),
                                   float(np.float32(thresh)), first_block=16)
        assert order[keep].tolist() == expected, thresh
        if seed % 3 != 0:
            got = det.nms_indices(np, boxes, scores, float(np.float32(thresh)))
            assert got.tolist() == expected


def test_resolve_greedy_long_chain():
    # each box suppresses only the next one: 0 kept, 1 suppressed, 2 kept, ...
    n = 200
    src = np.arange(n - 1)
    keep = det._resolve_greedy(n, src, src + 1, max_rounds=3)
    assert keep.tolist() == [i % 2 == 0 for i in range(n)]


def test_box_nms_structure_and_backward_zero_for_suppressed():
    op = get_op('_contrib_box_non_maximum_suppression')(topk=2)
    assert op.list_outputs() == ['output0', 'output1'] and op.num_visible_outputs() == 1
    d = np.array([[0, .9, 0, 0, 1, 1], [0, .8, 0, 0, 1, 1], [0, .7, 2, 2, 3, 3]], 'f')
    outs = op.forward(np, [d], [], True)
    assert outs[1].ravel().tolist() == [0, -1, -1]
    dx = op.backward(np, [np.ones_like(d), None], [d], outs, [], [True])[0]
    assert dx.sum(axis=1).tolist() == [6, 0, 0]


def test_box_iou_and_nms_have_zero_gradients():
    lhs, rhs = np.random.RandomState(0).rand(3, 4), np.random.RandomState(1).rand(2, 4)
    op = get_op('_contrib_box_iou')()
    outs = op.forward(np, [lhs, rhs], [], True)
    g = op.backward(np, [np.ones((3, 2))], [lhs, rhs], outs, [], [True, True])
    assert not g[0].any() and not g[1].any()
    assert get_op('_contrib_nms')().infer_type([np.dtype('f'), np.dtype('f')])[1] == [
        np.dtype(np.int64)]


@pytest.mark.parametrize('max_rounds', [0, 1, 2, 64])
def test_resolve_greedy_random_edges(max_rounds):
    rng = np.random.RandomState(max_rounds)
    n = 120
    a, b = rng.randint(0, n, 400), rng.randint(0, n, 400)
    src, dst = np.minimum(a, b)[a != b], np.maximum(a, b)[a != b]
    expected = np.zeros(n, bool)
    for i in range(n):
        expected[i] = not any(expected[s] for s in src[dst == i])
    assert det._resolve_greedy(n, src, dst, max_rounds).tolist() == expected.tolist()


# the paths of greedy_nms_keep: as chosen, one pass over all candidate pairs, sparse
# blocks in score order, dense blocks until nothing is left (per key: the IoU matrix of
# one key or the same-key pairs of several; kept boxes against the later ones by matrix
# or by windows), and dense blocks first with sparse blocks for the rest
_NEVER_DENSE = {'_SPARSE_SMALL': 1 << 62, '_SPARSE_SHARE': 1.0}
_PATHS = {'chosen': {},
          'one pass': dict(_NEVER_DENSE, _ONE_PASS=float('inf')),
          'blocks': dict(_NEVER_DENSE, _ONE_PASS=0, _SPARSE_FIRST=3),
          'dense': {'_SPARSE_SMALL': 0, '_SPARSE_SHARE': 0.0},
          # small steps: dense blocks halved to fit the pair budget, many chunks
          'dense small': {'_SPARSE_SMALL': 0, '_SPARSE_SHARE': 0.0, '_CHUNK': 512},
          'mixed': {'_SPARSE_SMALL': 0, '_SPARSE_SHARE': 0.02, '_ONE_PASS': 0,
                    '_SPARSE_FIRST': 5}}


def _keep_on_path(monkeypatch, path, boxes, keys, thresh, first_block=64):
    """greedy_nms_keep's kept indices (into ``boxes``, in keep order) on one path."""
    with monkeypatch.context() as m:
        for name, value in _PATHS[path].items():
            m.setattr(det, name, value)
        order = np.arange(len(boxes))
        x1, y1, x2, y2, area = det.box_corners(boxes, 'corner')
        keep = det.greedy_nms_keep(x1, y1, x2, y2, area, keys.astype(np.int64), thresh,
                                   first_block=first_block)
    return order[keep].tolist()


def naive_greedy_sorted(boxes, keys, thresh):
    """Sequential greedy NMS over boxes already in score order (MXNet's IoU, elementwise
    in the boxes' dtype, compared with ``thresh`` as exact numbers, as MXNet compares a
    float16 IoU with its float threshold in float32)."""
    kept = []
    for i in range(len(boxes)):
        if all(keys[k] != keys[i] or not float(naive_iou(boxes[k], boxes[i])) > thresh
               for k in kept):
            kept.append(i)
    return kept


_THRESHOLDS = [0.0, 0.25, 1 / 3, 0.5, 0.6, 0.75, 1.0]


@hyp.settings(max_examples=60)
@hyp.given(st.data())
def test_greedy_nms_keep_equals_naive_on_a_grid(data):
    # small integer boxes: many equal scores and many IoUs exactly at the threshold
    # (1/4, 1/3, 1/2, ... are exact), zero and negative extents, several keys
    n = data.draw(st.integers(2, 60), 'n')
    dtype = data.draw(st.sampled_from([np.float16, np.float32, np.float64]), 'dtype')
    rng = np.random.RandomState(data.draw(st.integers(0, 2 ** 31), 'seed'))
    xy = rng.randint(0, data.draw(st.integers(1, 12), 'extent'), (n, 2))
    wh = rng.randint(-1, 6, (n, 2))
    boxes = np.concatenate([xy, xy + wh], 1).astype(dtype)
    keys = rng.randint(0, data.draw(st.integers(1, 3), 'keys'), n)
    t = data.draw(st.sampled_from(_THRESHOLDS), 'thresh')
    thresh = float(np.float32(t))
    if data.draw(st.booleans(), 'below'):          # IoU >= t, as MultiBoxDetection asks
        thresh = float(np.nextafter(dtype(thresh), dtype(-np.inf)))
    want = naive_greedy_sorted(boxes, keys, thresh)
    for path in _PATHS:
        with pytest.MonkeyPatch.context() as mp:
            got = _keep_on_path(mp, path, boxes, keys, thresh,
                                first_block=data.draw(st.integers(1, 8), 'block'))
        assert got == want, path


@pytest.mark.parametrize('dtype', [np.float16, np.float32, np.float64])
@pytest.mark.parametrize('seed', range(4))
def test_greedy_nms_keep_at_a_measured_iou(monkeypatch, dtype, seed):
    # the threshold is the IoU of one pair as computed in the dtype, or the value below
    # it: the pair's fate turns on the last bit, which the windows must not decide
    rng = np.random.RandomState(seed)
    n = 200
    c = rng.uniform(0, 6, (n, 2))
    wh = rng.uniform(0.5, 2.5, (n, 2))
    boxes = np.concatenate([c - wh / 2, c + wh / 2], 1).astype(dtype)
    keys = np.zeros(n, np.int64)
    x1, y1, x2, y2, area = det.box_corners(boxes, 'corner')
    i = np.arange(n)
    ious = det.pair_iou(x1, y1, x2, y2, area, i[:, None], i[None, :])
    picks = np.sort(ious[np.triu(ious > 0.2, 1)])
    for q in (0.3, 0.6, 0.9):
        at = picks[int(q * (picks.size - 1))]
        for thresh in (float(at), float(np.nextafter(at, dtype(-np.inf)))):
            want = naive_greedy_sorted(boxes, keys, thresh)
            for path in _PATHS:
                assert _keep_on_path(monkeypatch, path, boxes, keys, thresh) == want


def _crowd(kind, n, rng):
    """corner boxes of several kinds: uniform (issue 13's benchmark), one dense crowd,
    near-duplicates of a few objects, very different sizes, tiny (subnormal areas)."""
    if kind == 'uniform':
        xy, wh = rng.uniform(0, 1, (n, 2)), rng.uniform(0.02, 0.2, (n, 2))
    elif kind == 'crowd':
        xy, wh = rng.uniform(0.45, 0.55, (n, 2)), rng.uniform(0.1, 0.3, (n, 2))
        xy -= wh / 2
    elif kind == 'duplicates':
        obj = rng.uniform(0.2, 0.8, (5, 2))
        wh = 0.2 * rng.uniform(0.9, 1.1, (n, 2))
        xy = obj[rng.randint(0, 5, n)] + rng.normal(0, 0.01, (n, 2)) - wh / 2
    elif kind == 'sizes':
        xy = rng.uniform(0, 1, (n, 2))
        wh = np.exp(rng.uniform(np.log(1e-3), np.log(2), (n, 2)))
    else:                                              # tiny: products are subnormal
        xy = rng.uniform(0, 1e-18, (n, 2))
        wh = rng.uniform(1e-21, 1e-19, (n, 2))
    return np.concatenate([xy, xy + wh], 1).astype(np.float32)


@pytest.mark.parametrize('kind', ['uniform', 'crowd', 'duplicates', 'sizes', 'tiny'])
@pytest.mark.parametrize('nkeys', [1, 3])
def test_greedy_nms_keep_equals_the_loop_on_crowds(monkeypatch, kind, nkeys):
    # larger inputs against the plain loop (one box at a time against all later ones)
    rng = np.random.RandomState(len(kind) + nkeys)
    n = 1500
    boxes = _crowd(kind, n, rng)
    zero = rng.rand(n) < 0.02
    boxes[zero, 2] = boxes[zero, 0]                                    # zero widths
    keys = rng.randint(0, nkeys, n).astype(np.int64)
    x1, y1, x2, y2, area = det.box_corners(boxes, 'corner')
    for t in (0.0, 0.3, 0.5, 0.7):
        thresh = float(np.float32(t))
        # _dense_greedy takes thresholds < 0 only in greedy_nms_keep; it is the loop
        want = np.flatnonzero(det._dense_greedy(x1, y1, x2, y2, area, keys, thresh))
        for path in _PATHS:
            assert _keep_on_path(monkeypatch, path, boxes, keys, thresh) == want.tolist(), \
                (path, t)


@pytest.mark.parametrize('dtype', [np.float16, np.float32, np.float64])
@pytest.mark.parametrize('axis', [0, 1])
def test_greedy_nms_keep_at_the_window_bound(monkeypatch, dtype, axis):
    # the pairs that reach the bound of _window_factor: aligned in the other axis, nested
    # with a shared edge (|d| = min(r)(1 - IoU)/IoU) or of equal size; the threshold is
    # their IoU as computed, or just below it (which the 64-ulp margin must cover)
    rng = np.random.RandomState(axis)
    for _ in range(60):
        x, w = rng.uniform(-50, 50), rng.uniform(0.5, 4)
        other = rng.uniform(1, 3)
        if rng.rand() < 0.5:
            b = (x, x + w * rng.uniform(1.05, 5))
        else:
            d = w * rng.uniform(0.05, 0.9)
            b = (x + d, x + d + w)
        rows = [[x, 0, x + w, other], [b[0], 0, b[1], other]]
        boxes = np.array(rows, dtype)[::1 if rng.rand() < 0.5 else -1]
        if axis:
            boxes = boxes[:, [1, 0, 3, 2]]
        keys = np.zeros(2, np.int64)
        x1, y1, x2, y2, area = det.box_corners(boxes, 'corner')
        iou = det.pair_iou(x1, y1, x2, y2, area, np.array([0]), np.array([1]))[0]
        for thresh in (float(iou), float(np.nextafter(iou, dtype(-np.inf)))):
            want = naive_greedy_sorted(boxes, keys, thresh)
            assert want == ([0] if thresh < iou else [0, 1])
            for path in _PATHS:
                assert _keep_on_path(monkeypatch, path, boxes, keys, thresh) == want


def test_window_factor_bounds():
    f32 = np.float32
    assert det._window_factor(0.5, np.dtype(f32), 1.0) == pytest.approx(1.0, rel=1e-4)
    assert det._window_factor(0.75, np.dtype(f32), 1.0) == pytest.approx(1 / 3, rel=1e-4)
    assert det._window_factor(0.25, np.dtype(f32), 1.0) == pytest.approx(3.0, rel=1e-4)
    assert det._window_factor(0.0, np.dtype(f32), 1.0) == np.inf
    assert det._window_factor(2.0, np.dtype(f32), 1.0) == 0.0
    assert det._window_factor(0.5, np.dtype(f32), 1e-40) == np.inf      # subnormal areas
    assert det._window_factor(0.5, np.dtype(np.int32), 1.0) == np.inf


def test_box_encode_names_and_shapes_as_in_mxnet():
    names = ['samples', 'matches', 'anchors', 'refs', 'means', 'stds']
    s = mx.sym.contrib.box_encode(*[mx.sym.var(n) for n in names], name='enc')
    assert s.list_arguments() == names
    assert s.list_outputs() == ['enc_output0', 'enc_output1']
    shapes = s.infer_shape(samples=(2, 3), matches=(2, 3), anchors=(2, 3, 4), refs=(2, 5, 4),
                           means=(4,), stds=(4,))
    assert shapes[1] == [(2, 3, 4), (2, 3, 4)]
    with pytest.raises(ShapeError, match="'anchors' .* does not match"):
        get_op('_contrib_box_encode')().infer_shape([(2, 3), (2, 3), (2, 4, 4), None, None,
                                                     None])
    with pytest.raises(ShapeError, match="'refs' must be 3-D ending in 4"):
        get_op('_contrib_box_encode')().infer_shape([(2, 3), None, None, (2, 5), None, None])


def test_box_decode_shapes_and_errors():
    with pytest.raises(ShapeError, match=r'must be \(1, N, 4\)'):
        get_op('_contrib_box_decode')().infer_shape([(2, 3, 4), (2, 3, 4)])
    with pytest.raises(ShapeError, match=r"'data' must be \(B, N, 4\)"):
        get_op('_contrib_box_decode')().infer_shape([(2, 3, 5), None])
    with pytest.raises(Exception, match='format'):
        get_op('_contrib_box_decode')(format='xywh')
