"""The four ``_contrib_interleaved_matmul_*`` operators (ops/attention.py) against loop
references written from MXNet's layout description, plus shape errors. MXNet 1.9.1's values
are in tests/golden (cases splitidx_selfatt_* / splitidx_encdec_*)."""
import math

import numpy as np
import pytest

import symgraph as mx
from harness import case_tests, OpCase
from symgraph.base import MXNetError
from symgraph.opdef import ShapeError, get_op


def _proj(x, heads, parts, part):
    """x[i, b, h * parts * d + part * d + k] as (seq, batch, heads, d)."""
    s, b, e = x.shape
    d = e // (heads * parts)
    out = np.empty((s, b, heads, d), x.dtype)
    for h in range(heads):
        out[:, :, h] = x[:, :, h * parts * d + part * d:h * parts * d + (part + 1) * d]
    return out


def _qk_ref(q, k, heads):
    sq, b, _, d = q.shape
    sk = k.shape[0]
    out = np.zeros((b * heads, sq, sk), q.dtype)
    for bb in range(b):
        for h in range(heads):
            for i in range(sq):
                for j in range(sk):
                    out[bb * heads + h, i, j] = (q[i, bb, h] / q.dtype.type(math.sqrt(d))
                                                 ) @ k[j, bb, h]
    return out


def _att_ref(att, v, heads):
    sk, b, _, d = v.shape
    sq = att.shape[1]
    out = np.zeros((sq, b, heads * d), v.dtype)
    for bb in range(b):
        for h in range(heads):
            out[:, bb, h * d:(h + 1) * d] = att[bb * heads + h] @ v[:, bb, h]
    return out


CASES = [
    OpCase('_contrib_interleaved_matmul_selfatt_qk', dict(heads=2), [(4, 3, 30)],
           ref=lambda x: _qk_ref(_proj(x, 2, 3, 0), _proj(x, 2, 3, 1), 2)),
    OpCase('_contrib_interleaved_matmul_selfatt_qk', dict(heads='1'), [(2, 1, 6)],
           ref=lambda x: _qk_ref(_proj(x, 1, 3, 0), _proj(x, 1, 3, 1), 1)),
    OpCase('_contrib_interleaved_matmul_selfatt_valatt', dict(heads=2), [(4, 3, 30), (6, 4, 4)],
           ref=lambda x, a: _att_ref(a, _proj(x, 2, 3, 2), 2)),
    OpCase('_contrib_interleaved_matmul_encdec_qk', dict(heads=3), [(2, 2, 12), (5, 2, 24)],
           ref=lambda q, kv: _qk_ref(_proj(q, 3, 1, 0), _proj(kv, 3, 2, 0), 3)),
    OpCase('_contrib_interleaved_matmul_encdec_valatt', dict(heads=3), [(5, 2, 24), (6, 2, 5)],
           ref=lambda kv, a: _att_ref(a, _proj(kv, 3, 2, 1), 3)),
    OpCase('_contrib_interleaved_matmul_encdec_valatt', dict(heads=1), [(3, 2, 4), (2, 4, 3)],
           ref=lambda kv, a: _att_ref(a, _proj(kv, 1, 2, 1), 1)),
]

test_forward, test_gradient = case_tests(CASES)


def test_contrib_names_and_shapes_through_the_symbol_api():
    x, y = mx.sym.var('x'), mx.sym.var('y')
    s = mx.sym.contrib.interleaved_matmul_selfatt_qk(x, heads=4, name='qk')
    assert s.list_arguments() == ['x'] and s.infer_shape(x=(7, 2, 4 * 3 * 8))[1] == [(8, 7, 7)]
    s = mx.sym.contrib.interleaved_matmul_encdec_valatt(x, y, heads=2)
    assert s.infer_shape(x=(5, 3, 2 * 2 * 4), y=(6, 7, 5))[1] == [(7, 3, 8)]
    assert mx.sym.load_json(s.tojson()).tojson() == s.tojson()


@pytest.mark.parametrize('op, shapes, match', [
    ('_contrib_interleaved_matmul_selfatt_qk', [(4, 3, 29)], 'divisible by heads \\* 3 = 6'),
    ('_contrib_interleaved_matmul_selfatt_qk', [(4, 30)], 'must be 3-D'),
    ('_contrib_interleaved_matmul_selfatt_valatt', [(4, 3, 30), (6, 4, 5)], "'attention'"),
    ('_contrib_interleaved_matmul_encdec_qk', [(2, 2, 12), (5, 3, 24)], 'differ in batch'),
    ('_contrib_interleaved_matmul_encdec_valatt', [(5, 2, 24), (6, 2, 4)], "'attention'"),
])
def test_shape_errors(op, shapes, match):
    with pytest.raises(ShapeError, match=match):
        get_op(op)(heads=2 if 'selfatt' in op else 3).infer_shape(shapes)


def test_heads_must_be_positive():
    with pytest.raises(MXNetError, match='heads must be positive'):
        get_op('_contrib_interleaved_matmul_selfatt_qk')(heads=0)
