"""``im2col`` and ``col2im`` (ops/im2col.py) against loop references, the adjoint identity
and shape errors. MXNet 1.9.1's values: golden cases splitidx_im2col* / splitidx_col2im
(2-D; MXNet's CPU build fails on 1-D im2col and 3-D col2im, which run here)."""
import itertools
from math import prod

import numpy as np
import pytest

import symgraph as mx
from harness import case_tests, OpCase
from symgraph.opdef import ShapeError, get_op


def _geom(kernel, stride, dilate, pad):
    nd = len(kernel)
    return stride or (1,) * nd, dilate or (1,) * nd, pad or (0,) * nd


def _im2col_ref(kernel, stride=(), dilate=(), pad=()):
    stride, dilate, pad = _geom(kernel, stride, dilate, pad)

    def ref(x):
        n, c = x.shape[:2]
        sp = x.shape[2:]
        out = [(s + 2 * p - d * (k - 1) - 1) // t + 1
               for s, k, t, d, p in zip(sp, kernel, stride, dilate, pad)]
        res = np.zeros((n, c * prod(kernel), prod(out)), x.dtype)
        for b, ch in itertools.product(range(n), range(c)):
            for ki, k in enumerate(itertools.product(*[range(v) for v in kernel])):
                for li, o in enumerate(itertools.product(*[range(v) for v in out])):
                    pos = [oo * t + kk * d - p for oo, kk, t, d, p
                           in zip(o, k, stride, dilate, pad)]
                    if all(0 <= q < s for q, s in zip(pos, sp)):
                        res[b, ch * prod(kernel) + ki, li] = x[(b, ch) + tuple(pos)]
        return res
    return ref


def _col2im_ref(output_size, kernel, stride=(), dilate=(), pad=()):
    stride, dilate, pad = _geom(kernel, stride, dilate, pad)

    def ref(cols):
        n = cols.shape[0]
        c = cols.shape[1] // prod(kernel)
        out = [(s + 2 * p - d * (k - 1) - 1) // t + 1
               for s, k, t, d, p in zip(output_size, kernel, stride, dilate, pad)]
        res = np.zeros((n, c) + tuple(output_size), cols.dtype)
        for b, ch in itertools.product(range(n), range(c)):
            for ki, k in enumerate(itertools.product(*[range(v) for v in kernel])):
                for li, o in enumerate(itertools.product(*[range(v) for v in out])):
                    pos = [oo * t + kk * d - p for oo, kk, t, d, p
                           in zip(o, k, stride, dilate, pad)]
                    if all(0 <= q < s for q, s in zip(pos, output_size)):
                        res[(b, ch) + tuple(pos)] += cols[b, ch * prod(kernel) + ki, li]
        return res
    return ref


CASES = [
    OpCase('im2col', dict(kernel=(2, 3), stride=(1, 2), pad=(1, 0)), [(2, 3, 4, 6)],
           ref=_im2col_ref((2, 3), (1, 2), (), (1, 0))),
    OpCase('im2col', dict(kernel='(3, 2)', dilate='(2, 1)', pad='(2, 1)'), [(1, 2, 5, 4)],
           ref=_im2col_ref((3, 2), (), (2, 1), (2, 1))),
    OpCase('im2col', dict(kernel=(3,), stride=(2,)), [(2, 3, 7)], ref=_im2col_ref((3,), (2,))),
    OpCase('im2col', dict(kernel=(2, 1, 2), pad=(0, 1, 0)), [(1, 2, 3, 2, 3)],
           ref=_im2col_ref((2, 1, 2), (), (), (0, 1, 0))),
    OpCase('col2im', dict(output_size=(4, 6), kernel=(2, 3), stride=(1, 2), pad=(1, 0)),
           [(2, 18, 10)], ref=_col2im_ref((4, 6), (2, 3), (1, 2), (), (1, 0))),
    OpCase('col2im', dict(output_size=(3, 4, 3), kernel=(2, 2, 2)), [(1, 16, 12)],
           ref=_col2im_ref((3, 4, 3), (2, 2, 2))),
    OpCase('col2im', dict(output_size=(7,), kernel=(3,), dilate=(2,), pad=(1,)), [(2, 6, 5)],
           ref=_col2im_ref((7,), (3,), (), (2,), (1,))),
]

test_forward, test_gradient = case_tests(CASES)


def test_col2im_is_the_adjoint_of_im2col():
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, (2, 3, 5, 6))
    kw = dict(kernel=(3, 2), stride=(2, 1), dilate=(1, 2), pad=(1, 1))
    cols = mx.nd.im2col(mx.nd.array(x, dtype='float64'), **kw).asnumpy()
    y = rng.uniform(-1, 1, cols.shape)
    back = mx.nd.col2im(mx.nd.array(y, dtype='float64'), output_size=(5, 6), **kw).asnumpy()
    np.testing.assert_allclose((cols * y).sum(), (x * back).sum(), rtol=1e-12)


def test_shapes_and_errors():
    s = mx.sym.im2col(mx.sym.var('x'), kernel=(3, 3), pad=(1, 1))
    assert s.infer_shape(x=(2, 4, 5, 6))[1] == [(2, 36, 30)]
    with pytest.raises(ShapeError, match='must have 4 dimensions'):
        get_op('im2col')(kernel=(3, 3)).infer_shape([(2, 4, 5)])
    with pytest.raises(ShapeError, match='stride .* as many dimensions'):
        get_op('im2col')(kernel=(3, 3), stride=(1,))
    with pytest.raises(ShapeError, match='does not fit'):
        get_op('im2col')(kernel=(3, 3)).infer_shape([(1, 1, 2, 5)])
    with pytest.raises(ShapeError, match=r'must be \(N, C \* 6, 10\)'):
        get_op('col2im')(kernel=(2, 3), output_size=(4, 6), stride=(1, 2), pad=(1, 0)
                         ).infer_shape([(2, 18, 9)])
    with pytest.raises(ShapeError, match='output_size'):
        get_op('col2im')(kernel=(2, 3), output_size=(4,))
