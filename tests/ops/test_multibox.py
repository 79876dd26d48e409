"""MultiBoxPrior, MultiBoxTarget and MultiBoxDetection against naive loop references
(straight ports of MXNet's per-element CPU loops)."""
import math

import numpy as np
import pytest

import symgraph as mx
from harness import OpCase, check_forward, parametrize_cases
from symgraph.opdef import MXNetError, ShapeError, TypeInferenceError, get_op


# ----------------------------------------------------------------------------------
# naive references
# ----------------------------------------------------------------------------------
def naive_prior(sizes=(1.0,), ratios=(1.0,), clip=False, steps=(-1.0, -1.0),
                offsets=(0.5, 0.5)):
    def ref(data):
        h, w = data.shape[2], data.shape[3]
        sy, sx = steps if steps[0] > 0 and steps[1] > 0 else (1.0 / h, 1.0 / w)
        rows = []
        for r in range(h):
            cy = (r + offsets[0]) * sy
            for c in range(w):
                cx = (c + offsets[1]) * sx
                shapes = [(s, math.sqrt(ratios[0])) for s in sizes]
                shapes += [(sizes[0], math.sqrt(q)) for q in ratios[1:]]
                for s, q in shapes:
                    bw, bh = s * h / w * q / 2, s / q / 2
                    rows.append([cx - bw, cy - bh, cx + bw, cy + bh])
        out = np.array(rows)[None]
        return np.clip(out, 0, 1) if clip else out
    return ref


def _iou(a, b):
    w = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    h = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    u = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - w * h
    return 0.0 if u == 0 else w * h / u


def naive_target(overlap_threshold=0.5, ignore_label=-1.0, negative_mining_ratio=-1.0,
                 negative_mining_thresh=0.5, minimum_negative_samples=0,
                 variances=(0.1, 0.1, 0.2, 0.2)):
    def ref(anchor, label, cls_pred):
        anc = anchor.reshape(-1, 4).astype(np.float64)
        nb, na = label.shape[0], anc.shape[0]
        loc = np.zeros((nb, na, 4))
        mask = np.zeros((nb, na, 4))
        cls = np.full((nb, na), ignore_label)
        for b in range(nb):
            gts = []
            for row in label[b]:
                if row[0] == -1:
                    break
                gts.append(row)
            if not gts:
                continue
            ov = [[_iou(anc[j], g[1:5]) for g in gts] for j in range(na)]
            flag = [-1] * na
            match = [None] * na
            used = set()
            while len(used) < len(gts):
                best = (1e-6, None, None)
                for j in range(na):
                    for k in range(len(gts)):
                        if flag[j] != 1 and k not in used and ov[j][k] > best[0]:
                            best = (ov[j][k], j, k)
                if best[1] is None:
                    break
                flag[best[1]], match[best[1]] = 1, best[2]
                used.add(best[2])
            for j in range(na):
                if flag[j] != 1 and overlap_threshold > 0:
                    k = int(np.argmax(ov[j]))
                    if ov[j][k] > overlap_threshold:
                        flag[j], match[j] = 1, k
            if negative_mining_ratio > 0:
                npos = flag.count(1)
                nneg = min(int(npos * negative_mining_ratio), na - npos)
                cands = []
                for j in range(na):
                    if flag[j] != 1 and max(ov[j]) < negative_mining_thresh:
                        # MXNet's arithmetic: exps in the data's dtype, summed class by
                        # class; a float64 softmax would order near-ties differently
                        p = cls_pred[b, :, j]
                        e = [np.exp(np.float64(v - p.max())).astype(p.dtype) for v in p]
                        total = p.dtype.type(0)
                        for v in e:
                            total = total + v
                        cands.append((e[0] / total, j))
                cands.sort(key=lambda t: t[0])         # stable: ties in anchor order
                for _, j in cands[:nneg]:
                    flag[j] = 0
            else:
                flag = [f if f == 1 else 0 for f in flag]
            for j in range(na):
                if flag[j] == 0:
                    cls[b, j] = 0
                elif flag[j] == 1:
                    g = gts[match[j]]
                    cls[b, j] = g[0] + 1
                    mask[b, j] = 1
                    a = anc[j]
                    aw, ah = a[2] - a[0], a[3] - a[1]
                    gw, gh = g[3] - g[1], g[4] - g[2]
                    loc[b, j] = [((g[1] + g[3]) / 2 - (a[0] + a[2]) / 2) / aw / variances[0],
                                 ((g[2] + g[4]) / 2 - (a[1] + a[3]) / 2) / ah / variances[1],
                                 math.log(gw / aw) / variances[2],
                                 math.log(gh / ah) / variances[3]]
        return [loc.reshape(nb, -1), mask.reshape(nb, -1), cls]
    return ref


def naive_detection(clip=True, threshold=0.01, background_id=0, nms_threshold=0.5,
                    force_suppress=False, variances=(0.1, 0.1, 0.2, 0.2), nms_topk=-1):
    def ref(cls_prob, loc_pred, anchor):
        nb, nc, na = cls_prob.shape
        anc = anchor.reshape(-1, 4)
        out = -np.ones((nb, na, 6))
        for b in range(nb):
            rows = []
            for i in range(na):
                score, cid = -1.0, 0
                for j in range(1, nc):
                    if cls_prob[b, j, i] > score:
                        score, cid = cls_prob[b, j, i], j
                if cid == 0 or score < threshold:
                    continue
                a, p = anc[i], loc_pred[b, 4 * i:4 * i + 4]
                aw, ah = a[2] - a[0], a[3] - a[1]
                ox = p[0] * variances[0] * aw + (a[0] + a[2]) / 2
                oy = p[1] * variances[1] * ah + (a[1] + a[3]) / 2
                ow = math.exp(p[2] * variances[2]) * aw / 2
                oh = math.exp(p[3] * variances[3]) * ah / 2
                box = [ox - ow, oy - oh, ox + ow, oy + oh]
                if clip:
                    box = [min(max(v, 0.0), 1.0) for v in box]
                rows.append([cid - 1, score] + box)
            n = len(rows)
            for k, r in enumerate(rows):
                out[b, k] = r
            if n == 0 or not 0 < nms_threshold <= 1:
                continue
            ranked = sorted(rows, key=lambda r: -r[1])
            keep = n if nms_topk <= 0 else min(n, nms_topk)
            out[b, keep:n, 0] = -1
            out[b, :keep] = ranked[:keep]
            for i in range(keep):
                if out[b, i, 0] < 0:
                    continue
                for j in range(i + 1, keep):
                    if out[b, j, 0] >= 0 and (force_suppress or out[b, i, 0] == out[b, j, 0]):
                        if _iou(out[b, i, 2:], out[b, j, 2:]) >= nms_threshold:
                            out[b, j, 0] = -1
        return out
    return ref


# ----------------------------------------------------------------------------------
# inputs
# ----------------------------------------------------------------------------------
def _anchors(n, rng):
    xy = rng.uniform(0, 0.7, (n, 2))
    return np.concatenate([xy, xy + rng.uniform(0.1, 0.4, (n, 2))], 1)[None]


def _target_inputs(ties=False, empty_batch=False):
    def make(rng, shapes, dtype):
        (_, na, _), (nb, nl, w), (_, nc, _) = shapes
        lab = -np.ones((nb, nl, w))
        for b in range(nb):
            n = 0 if empty_batch and b == nb - 1 else rng.randint(1, nl + 1)
            xy = rng.uniform(0, 0.6, (n, 2))
            lab[b, :n, 0] = rng.randint(0, nc - 1, n)
            lab[b, :n, 1:3] = xy
            lab[b, :n, 3:5] = xy + rng.uniform(0.15, 0.4, (n, 2))
        cls = rng.randn(nb, nc, na)
        if ties:
            cls = np.round(cls)
        return [_anchors(na, rng), lab, cls]
    return make


def _det_inputs(ties=False):
    def make(rng, shapes, dtype):
        (nb, nc, na), _, _ = shapes
        p = rng.rand(nb, nc, na)
        if ties:
            p = np.round(p * 4) / 4 + 0.01
        anc = _anchors(na, rng)
        anc[0, 1::3] = anc[0, ::3][:anc[0, 1::3].shape[0]] + 0.01    # overlapping pairs
        return [p / p.sum(1, keepdims=True), rng.randn(nb, na * 4) * 0.3, anc]
    return make


def _prior_case(shape, **kw):
    return OpCase('_contrib_MultiBoxPrior', kw, shapes=[shape], ref=naive_prior(**kw),
                  grad=())


def _target_case(shapes, ties=False, empty_batch=False, **kw):
    return OpCase('_contrib_MultiBoxTarget', kw, shapes=shapes, ref=naive_target(**kw),
                  inputs=_target_inputs(ties, empty_batch), grad=(), rtol=1e-4, atol=1e-5)


def _det_case(shapes, ties=False, **kw):
    return OpCase('_contrib_MultiBoxDetection', kw, shapes=shapes, ref=naive_detection(**kw),
                  inputs=_det_inputs(ties), grad=(), rtol=1e-5, atol=1e-6)


T1 = [(1, 20, 4), (2, 4, 5), (2, 3, 20)]
T2 = [(1, 30, 4), (3, 3, 6), (3, 4, 30)]
D1 = [(2, 4, 24), (2, 96), (1, 24, 4)]
CASES = [
    _prior_case((1, 3, 2, 3)),
    _prior_case((2, 1, 4, 3), sizes=(0.5, 0.25), ratios=(2.0, 0.5, 1.0)),
    _prior_case((1, 2, 3, 5), sizes=(0.3, 0.6), ratios=(1.0, 3.0), clip=True,
                steps=(0.2, 0.1), offsets=(0.25, 0.75)),
    _prior_case((1, 1, 2, 2, 3), sizes=(0.7,), ratios=(0.5, 2.0)),
    _target_case(T1),
    _target_case(T1, overlap_threshold=0.3, variances=(0.2, 0.1, 0.3, 0.25)),
    _target_case(T2, negative_mining_ratio=3.0, ties=True),
    _target_case(T2, negative_mining_ratio=1.5, negative_mining_thresh=0.4,
                 ignore_label=-2.0, empty_batch=True),
    _target_case(T1, overlap_threshold=0.0, negative_mining_ratio=2.0),
    _target_case(T2, minimum_negative_samples=5, negative_mining_ratio=0.5),
    _det_case(D1),
    _det_case(D1, ties=True, nms_threshold=0.3),
    _det_case(D1, clip=False, threshold=0.3, force_suppress=True),
    _det_case(D1, nms_topk=5, ties=True),
    _det_case(D1, nms_threshold=1.5, variances=(0.2, 0.1, 0.3, 0.25)),
    _det_case([(3, 2, 10), (3, 40), (1, 10, 4)], nms_threshold=0.1, background_id=1),
]


@parametrize_cases(CASES)
def test_forward(case):
    check_forward(case)


# ----------------------------------------------------------------------------------
# shapes, types, errors, details
# ----------------------------------------------------------------------------------
def test_contrib_and_npx_names():
    d = mx.sym.var('d')
    with mx.name.NameManager():     # names counted from 0 whatever ran before
        s = mx.sym.contrib.MultiBoxPrior(d, sizes=(0.5, 0.25))
    assert s.list_outputs() == ['multiboxprior0_output']
    assert s.infer_shape(d=(2, 3, 4, 5))[1] == [(1, 40, 4)]
    for n in ('prior', 'target', 'detection'):
        assert get_op('_npx_multibox_' + n).name.startswith('_contrib_MultiBox')
    t = mx.sym.contrib.MultiBoxTarget(mx.sym.var('a'), mx.sym.var('l'), mx.sym.var('c'))
    assert t.list_outputs()[-1].endswith('_cls_target')


def test_shape_rules():
    prior = get_op('_contrib_MultiBoxPrior')(sizes=(0.5,), ratios=(1, 2, 3))
    assert prior.infer_shape([(1, 3, 4, 5)])[1] == [(1, 60, 4)]
    with pytest.raises(ShapeError, match='4D'):
        prior.infer_shape([(2, 3)])
    tgt = get_op('_contrib_MultiBoxTarget')()
    assert tgt.infer_shape([(1, 5, 4), (2, 3, 5), (2, 4, 5)])[1] == [(2, 20), (2, 20), (2, 5)]
    for bad in ([(2, 5, 4), (2, 3, 5), (2, 4, 5)], [(1, 5, 4), (2, 3, 4), (2, 4, 5)],
                [(1, 5, 4), (2, 3, 5), (2, 4, 6)], [(1, 5, 4), (2, 3, 5), (1, 4, 5)]):
        with pytest.raises(ShapeError):
            tgt.infer_shape(bad)
    det = get_op('_contrib_MultiBoxDetection')()
    assert det.infer_shape([(2, 4, 5), (2, 20), (1, 5, 4)])[1] == [(2, 5, 6)]
    for bad in ([(2, 4, 5), (2, 21), (1, 5, 4)], [(2, 4, 5), (2, 20), (1, 6, 4)],
                [(2, 4, 5, 1), (2, 20), (1, 5, 4)], [(2, 4, 5), (1, 20), (1, 5, 4)]):
        with pytest.raises(ShapeError):
            det.infer_shape(bad)


def test_types_and_parameters():
    f32, f16 = np.dtype('float32'), np.dtype('float16')
    assert get_op('_contrib_MultiBoxPrior')().infer_type([None]) == ([f32], [f32], [])
    with pytest.raises(TypeInferenceError):
        get_op('_contrib_MultiBoxDetection')().infer_type([f16, None, None])
    for kw in (dict(sizes=()), dict(steps=(0.1,)), dict(offsets=(0.1, 0.2, 0.3)),
               dict(steps=(0.1, -1))):
        with pytest.raises(MXNetError):
            get_op('_contrib_MultiBoxPrior')(**kw)
    with pytest.raises(MXNetError, match='variances'):
        get_op('_contrib_MultiBoxTarget')(variances=(1, 2, 3))


def _small_target():
    anc = np.array([[[0, 0, .5, .5], [.5, .5, 1, 1], [0, .5, .5, 1], [.5, 0, 1, .5],
                     [.2, .2, .7, .7], [.1, .1, .4, .4]]], 'f')
    lab = np.array([[[1, .05, .05, .45, .45], [-1, -1, -1, -1, -1],
                     [0, .5, .5, .9, .9]]], 'f')
    cls = np.random.RandomState(0).randn(1, 3, 6).astype('f')
    return anc, lab, cls


def test_target_mxnet_values():
    """Values printed by MXNet 1.9.1 for the same inputs (rows after a -1 row ignored,
    minimum_negative_samples ignored, mining thresholds)."""
    anc, lab, cls = _small_target()
    expect = {(): [2, 0, 0, 0, 0, 2], ((('negative_mining_ratio', 1),)): [2, 0, 0, -1, -1, 2],
              (('minimum_negative_samples', 3), ('negative_mining_ratio', 1)):
                  [2, 0, 0, -1, -1, 2],
              (('negative_mining_ratio', 0.5),): [2, 0, -1, -1, -1, 2],
              (('negative_mining_ratio', 2), ('overlap_threshold', 0)): [2, 0, 0, -1, -1, -1]}
    for kw, want in expect.items():
        op = get_op('_contrib_MultiBoxTarget')(**dict(kw))
        loc, mask, ct = op.forward(np, [anc, lab, cls], [], False)
        assert ct.ravel().tolist() == want, kw
    loc, mask, ct = get_op('_contrib_MultiBoxTarget')().forward(np, [anc, lab, cls], [], False)
    assert mask.ravel().tolist() == [1] * 4 + [0] * 16 + [1] * 4
    np.testing.assert_allclose(loc[0, :4], [0, 0, -1.115718, -1.115718], rtol=1e-6)


def test_target_errors():
    anc, lab, cls = _small_target()
    op = get_op('_contrib_MultiBoxTarget')(negative_mining_ratio=3,
                                           negative_mining_thresh=0.01)
    with pytest.raises(MXNetError, match='negatives'):
        op.forward(np, [anc, lab, cls], [], False)
    op = get_op('_contrib_MultiBoxTarget')(negative_mining_ratio=3, negative_mining_thresh=0)
    with pytest.raises(MXNetError, match='negative_mining_thresh'):
        op.forward(np, [anc, lab, cls], [], False)
    bad = lab.copy()
    bad[0, 1, 1] = 0.1
    with pytest.raises(MXNetError, match='padding'):
        get_op('_contrib_MultiBoxTarget')().forward(np, [anc, bad, cls], [], False)
    ct = get_op('_contrib_MultiBoxTarget')(ignore_label=-3).forward(
        np, [anc, -np.ones_like(lab), cls], [], False)[2]
    assert ct.ravel().tolist() == [-3] * 6


def test_detection_topk_rows_keep_unsorted_content():
    """MXNet 1.9.1's output for these inputs: rows past nms_topk get id -1 but keep the
    unsorted (anchor-order) content; without NMS the rows stay in anchor order."""
    p = np.array([[[.1, .2, .3, .4], [.05, .8, .005, .6]]], 'f')
    anc = np.array([[[0, 0, .1, .1], [.2, .2, .3, .3], [.4, .4, .5, .5], [.6, .6, .7, .7]]],
                   'f')
    loc = np.zeros((1, 16), 'f')
    out = get_op('_contrib_MultiBoxDetection')(nms_topk=1).forward(
        np, [p, loc, anc], [], False)[0]
    assert out[0, :, 0].tolist() == [0, -1, -1, -1]
    np.testing.assert_allclose(out[0, :, 1], [.8, .8, .6, -1])
    np.testing.assert_allclose(out[0, :3, 2], [.2, .2, .6], rtol=1e-6)
    out = get_op('_contrib_MultiBoxDetection')(nms_threshold=0).forward(
        np, [p, loc, anc], [], False)[0]
    assert out[0, :, 0].tolist() == [0, 0, 0, -1]
    np.testing.assert_allclose(out[0, :, 1], [.05, .8, .6, -1])


def test_no_gradient_zeros():
    for name, shapes in (('_contrib_MultiBoxPrior', [(1, 2, 2, 2)]),
                         ('_contrib_MultiBoxDetection', [(2, 4, 24), (2, 96), (1, 24, 4)])):
        sym = getattr(mx.sym, name)(*[mx.sym.var('x%d' % i) for i in range(len(shapes))])
        exe = sym.simple_bind(mx.cpu(), **{'x%d' % i: s for i, s in enumerate(shapes)})
        exe.forward(is_train=True)
        exe.backward([mx.nd.ones(o.shape) for o in exe.outputs])
        assert all(not g.asnumpy().any() for g in exe.grad_arrays)
