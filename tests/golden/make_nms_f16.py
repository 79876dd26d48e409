"""Golden data, from MXNet 1.9.1, of ``_contrib_box_nms`` on float16 boxes (ops/detection.py,
ops/_nms.py):

    cd tests/golden
    MXNET_MKLDNN_ENABLED=0 $MXNET_PYTHON make_nms_f16.py

writes ``data/nms_f16.npz``: per case ``<case>/data`` (the float16 input), ``<case>/attrs``
(JSON of the keyword arguments) and ``<case>/out`` (MXNet's output).

MXNet's CPU kernel (src/operator/contrib/bounding_box-common.h, ``nms_impl``) computes the
IoU in the data's type -- for float16 every ``half_t`` operation rounds to half -- and
compares it with the ``float`` threshold in float32 (``half_t > float`` converts both to
float). ``valid_thresh`` instead goes through ``ScalarExp<DType>``: the scores are compared
with the threshold rounded to half. The ``tie_*`` cases are one pair of boxes per batch
element whose float16 IoU is exactly the threshold rounded to float16 (or the float16 value
next to it): where that rounding goes up (0.7 -> 0.70019531) MXNet suppresses the second
box, a comparison in float16 would keep it. The ``random_*`` cases check float16 arithmetic
on larger inputs (classes, batches, centre format, valid_thresh).
"""
import json
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, 'data', 'nms_f16.npz')
R = np.random.RandomState(16)
H = np.float16


def iou16(a, b):
    """MXNet's IoU of corner boxes a, b (..., 4) with every operation rounded to float16."""
    w = np.minimum(a[..., 2], b[..., 2]) - np.maximum(a[..., 0], b[..., 0])
    h = np.minimum(a[..., 3], b[..., 3]) - np.maximum(a[..., 1], b[..., 1])
    inter = np.where(w > 0, w, H(0)) * np.where(h > 0, h, H(0))
    area_a = (a[..., 2] - a[..., 0]) * (a[..., 3] - a[..., 1])
    area_b = (b[..., 2] - b[..., 0]) * (b[..., 3] - b[..., 1])
    return inter / (area_a + area_b - inter)


def _random_pairs(n):
    xy = (R.randint(0, 64, (n, 2, 2)) / 16.0).astype(H)
    wh = (R.randint(8, 48, (n, 2, 2)) / 16.0 + R.randint(0, 16, (n, 2, 2)) / 512.0).astype(H)
    xy[n // 2:, 1] = xy[n // 2:, 0]                # half of them nested, sharing a corner
    return np.concatenate([xy, xy + wh], axis=2)            # (n, 2, 4) corners, float16


_PAIRS = _random_pairs(3000000)
_IOU = iou16(_PAIRS[:, 0], _PAIRS[:, 1])


def tie_case(t, per=6):
    """Pairs (one per batch element) whose float16 IoU is f16(t), the float16 value below
    it and the one above it; rows [id, score, x1, y1, x2, y2]."""
    at = H(np.float32(t))
    rows = []
    for target, k in ((at, per), (np.nextafter(at, H(0)), 3), (np.nextafter(at, H(1)), 3)):
        hit = np.flatnonzero(_IOU == target)
        assert hit.size >= k, (t, float(target), hit.size)
        rows.extend(_PAIRS[hit[:k]])
    pairs = np.stack(rows)
    data = np.zeros(pairs.shape[:2] + (6,), H)
    data[:, :, 1] = [0.9, 0.8]
    data[:, :, 2:] = pairs
    return data


def random_case(nb, n, fmt='corner'):
    c = R.uniform(0, 4, (nb, n, 2))
    wh = R.uniform(0.3, 1.5, (nb, n, 2))
    coords = np.concatenate([c, wh], 2) if fmt == 'center' else np.concatenate(
        [c - wh / 2, c + wh / 2], 2)
    ids = R.randint(0, 3, (nb, n, 1))
    score = R.randint(0, 64, (nb, n, 1)) / 64.0               # many equal scores
    return np.concatenate([ids, score, coords], 2).astype(H)


def cases():
    out = {}
    # 0.7, 0.3, 0.35, 0.6, 0.85 round up in float16; 0.45, 0.55, 0.9 round down; 0.5 and
    # 0.25 are exact
    for t in (0.7, 0.3, 0.35, 0.6, 0.85, 0.45, 0.55, 0.9, 0.5, 0.25):
        out['tie_%g' % t] = (tie_case(t), {'overlap_thresh': t})
    v = tie_case(0.7)
    v[:, 1, 1] = H(0.7)                    # the second score is 0.7 rounded to float16
    out['tie_valid'] = (v, {'overlap_thresh': 0.9, 'valid_thresh': 0.7})
    for t in (0.3, 0.5, 0.7):
        out['random_%g' % t] = (random_case(3, 150), {'overlap_thresh': t, 'id_index': 0,
                                                     'valid_thresh': 0.1})
    out['random_center'] = (random_case(2, 120, 'center'),
                            {'overlap_thresh': 0.45, 'in_format': 'center',
                             'out_format': 'corner', 'topk': 80})
    out['random_force'] = (random_case(1, 300), {'overlap_thresh': 0.65, 'id_index': 0,
                                                 'force_suppress': True})
    return out


def main():
    import mxnet as mx
    arrays = {}
    for name, (data, attrs) in sorted(cases().items()):
        kw = dict(attrs, coord_start=2, score_index=1)
        got = mx.nd.contrib.box_nms(mx.nd.array(data, dtype='float16'), **kw).asnumpy()
        assert got.dtype == np.float16
        arrays.update({name + '/data': data, name + '/attrs': np.array(json.dumps(kw)),
                       name + '/out': got})
        kept = int((got[..., 1] >= 0).sum())
        print('%-14s %s kept %d of %d' % (name, data.shape, kept, data.shape[0] * data.shape[1]))
        if name.startswith('tie_') and name != 'tie_valid':
            per_pair = (got[:, 1, 0] >= 0).astype(int).tolist()
            print('    second box kept per pair:', per_pair)
    np.savez_compressed(OUT, **arrays)


if __name__ == '__main__':
    main()
