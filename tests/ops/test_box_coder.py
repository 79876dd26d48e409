"""``_contrib_box_encode`` and ``_contrib_box_decode`` (ops/detection.py) against loop
references written from MXNet 1.9.1's formulas, shape rules and zero gradients. MXNet's
values: golden cases splitidx_box_* (tests/golden/graphs_compute_split_index.py)."""
import math

import numpy as np
import pytest

import symgraph as mx
from harness import case_tests, OpCase
from symgraph.opdef import ShapeError, get_op
from _refs import given


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


CASES = [
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

test_forward, test_gradient = case_tests(CASES)


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
