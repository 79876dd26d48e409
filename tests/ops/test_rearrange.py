"""Pad, reverse, depth_to_space, space_to_depth, tile and repeat (ops/rearrange.py) against
NumPy / loop references, plus their shape rules and errors (values from MXNet 1.9.1 are in
tests/golden, cases shapex_*)."""
import numpy as np
import pytest

import symgraph as mx
from _refs import F16, _infer, X
from harness import case_tests, OpCase
from symgraph.base import MXNetError
from symgraph.opdef import ShapeError, TypeInferenceError


def _pad_ref(mode, pw, value=0.0):
    def src(j, n):
        if mode == 'edge':
            return min(max(j, 0), n - 1)
        while j < 0 or j >= n:                  # reflect without repeating the border
            j = -j if j < 0 else 2 * (n - 1) - j
        return j

    def ref(x):
        pads = [(pw[2 * i], pw[2 * i + 1]) for i in range(x.ndim)]
        shape = tuple(d + b + a for d, (b, a) in zip(x.shape, pads))
        out = np.empty(shape, x.dtype)
        for pos in np.ndindex(shape):
            q = [p - b for p, (b, _) in zip(pos, pads)]
            if mode == 'constant':
                inside = all(0 <= j < n for j, n in zip(q, x.shape))
                out[pos] = x[tuple(q)] if inside else value
            else:
                out[pos] = x[tuple(src(j, n) for j, n in zip(q, x.shape))]
        return out
    return ref


def _reverse_ref(axes):
    def ref(x):
        out = x.copy()
        for a in axes:
            out = np.flip(out, a)
        return out
    return ref


def _d2s_ref(b):
    def ref(x):
        n, c, h, w = x.shape
        out = np.empty((n, c // (b * b), h * b, w * b), x.dtype)
        for i, k, y, z in np.ndindex(out.shape):
            ch = ((y % b) * b + z % b) * (c // (b * b)) + k
            out[i, k, y, z] = x[i, ch, y // b, z // b]
        return out
    return ref


def _s2d_ref(b):
    def ref(x):
        n, c, h, w = x.shape
        out = np.empty((n, c * b * b, h // b, w // b), x.dtype)
        for i, ch, y, z in np.ndindex(out.shape):
            blk, k = divmod(ch, c)
            out[i, ch, y, z] = x[i, k, y * b + blk // b, z * b + blk % b]
        return out
    return ref


def _spatial(*pads):
    """pad_width with zero padding on the batch and channel axes."""
    return (0, 0, 0, 0) + tuple(pads)


CASES = [
    OpCase('Pad', dict(mode='constant', pad_width=_spatial(1, 2, 2, 1), constant_value=1.5),
           [(2, 2, 3, 4)], ref=_pad_ref('constant', _spatial(1, 2, 2, 1), 1.5), dtypes=F16),
    OpCase('pad', dict(mode='constant', pad_width=_spatial(1, 0, 0, 2, 1, 1)),
           [(1, 2, 2, 3, 2)], ref=_pad_ref('constant', _spatial(1, 0, 0, 2, 1, 1))),
    OpCase('Pad', dict(mode='edge', pad_width=_spatial(3, 1, 0, 4)), [(1, 2, 2, 3)],
           ref=_pad_ref('edge', _spatial(3, 1, 0, 4))),
    OpCase('Pad', dict(mode='edge', pad_width=_spatial(1, 2, 2, 0, 1, 1)),
           [(1, 1, 2, 3, 2)], ref=_pad_ref('edge', _spatial(1, 2, 2, 0, 1, 1))),
    OpCase('Pad', dict(mode='reflect', pad_width=_spatial(2, 1, 3, 3)), [(1, 2, 3, 4)],
           ref=_pad_ref('reflect', _spatial(2, 1, 3, 3)), dtypes=F16),
    OpCase('pad', dict(mode='reflect', pad_width=_spatial(1, 1, 0, 2, 2, 1)),
           [(1, 1, 2, 3, 3)], ref=_pad_ref('reflect', _spatial(1, 1, 0, 2, 2, 1))),
    OpCase('reverse', dict(axis=1), [(2, 3, 4)], ref=_reverse_ref((1,))),
    OpCase('flip', dict(axis=(0, 2)), [(2, 3, 4)], ref=_reverse_ref((0, 2)), dtypes=F16),
    OpCase('reverse', dict(axis=(1, 1)), [(2, 3)], ref=lambda x: x.copy()),
    OpCase('depth_to_space', dict(block_size=2), [(2, 8, 2, 3)], ref=_d2s_ref(2)),
    OpCase('depth_to_space', dict(block_size=3), [(1, 18, 2, 1)], ref=_d2s_ref(3)),
    OpCase('space_to_depth', dict(block_size=2), [(2, 3, 4, 6)], ref=_s2d_ref(2)),
    OpCase('space_to_depth', dict(block_size=3), [(1, 2, 3, 6)], ref=_s2d_ref(3)),
]


TILE_REPEAT_CASES = [
    OpCase('tile', dict(reps=(2, 1, 3)), [(2, 3)], ref=lambda x: np.tile(x, (2, 1, 3))),
    OpCase('tile', dict(reps=(3,)), [(2, 3)], ref=lambda x: np.tile(x, 3)),
    OpCase('repeat', dict(repeats=3), [(2, 3)], ref=lambda x: np.repeat(x.ravel(), 3)),
    OpCase('repeat', dict(repeats=2, axis=-2), [(2, 3, 2)],
           ref=lambda x: np.repeat(x, 2, axis=1)),
]


test_forward, test_gradient = case_tests(CASES + TILE_REPEAT_CASES)


def test_pad_shapes_and_errors_as_in_mxnet():
    pw = (0, 0, 0, 0, 1, 2, 2, 1)
    assert _infer(mx.sym.Pad(X, mode='constant', pad_width=pw), x=(2, 2, 3, 4)) == [(2, 2, 6, 7)]
    assert mx.sym.Pad(X, mode='edge', pad_width=pw).infer_shape_partial(
        x=(0, 2, 3, 4))[1] == [(0, 2, 6, 7)]
    with pytest.raises(ShapeError, match='4-D or 5-D'):
        mx.sym.Pad(X, mode='constant', pad_width=(0, 0, 1, 1)).infer_shape(x=(3, 4))
    with pytest.raises(ShapeError, match='first two axes'):
        mx.sym.Pad(X, mode='constant', pad_width=(0, 0, 1, 0, 1, 1, 1, 1)).infer_shape(
            x=(2, 2, 3, 4))
    with pytest.raises(ShapeError, match='entries'):
        mx.sym.Pad(X, mode='constant', pad_width=(0, 0, 0, 0, 1, 1)).infer_shape(
            x=(2, 2, 3, 4))
    with pytest.raises(ShapeError, match='reflect'):
        mx.sym.Pad(X, mode='reflect', pad_width=(0, 0, 0, 0, 3, 3, 1, 1)).infer_shape(
            x=(2, 2, 3, 4))
    # edge padding may be wider than the axis
    assert _infer(mx.sym.Pad(X, mode='edge', pad_width=(0, 0, 0, 0, 3, 3, 1, 1)),
                  x=(2, 2, 3, 4)) == [(2, 2, 9, 6)]
    with pytest.raises(TypeInferenceError, match='floating point'):
        mx.sym.Pad(X, mode='constant', pad_width=pw).infer_type(x='int32')
    with pytest.raises(MXNetError, match='mode'):
        mx.sym.Pad(X, pad_width=pw)
    with pytest.raises(MXNetError):
        mx.sym.Pad(X, mode='wrap', pad_width=pw)


def test_pad_node_name_and_json():
    with mx.name.NameManager():         # MXNet 1.9.1 names these pad0, pad1, flip0
        pw = (0, 0, 0, 0, 1, 1, 1, 1)
        names = [mx.sym.pad(X, mode='edge', pad_width=pw).name,
                 mx.sym.Pad(X, mode='edge', pad_width=pw).name,
                 mx.sym.flip(X, axis=1).name]
        sym = mx.sym.pad(X, mode='edge', pad_width=pw)
    assert names == ['pad0', 'pad1', 'flip0']
    assert '"op": "Pad"' in sym.tojson()


def test_reverse_axes():
    x = mx.nd.array(np.arange(24).reshape(2, 3, 4))
    np.testing.assert_array_equal(mx.nd.flip(x, axis=(0, 2)).asnumpy(),
                                  np.arange(24).reshape(2, 3, 4)[::-1, :, ::-1])
    np.testing.assert_array_equal(mx.nd.reverse(x, axis=()).asnumpy(), x.asnumpy())
    with pytest.raises(ShapeError, match='axis 3'):
        mx.sym.reverse(X, axis=3).infer_shape(x=(2, 3, 4))
    with pytest.raises(ShapeError, match='negative'):
        mx.sym.reverse(X, axis=-1).infer_shape(x=(2, 3, 4))
    with pytest.raises(MXNetError, match='axis'):
        mx.sym.reverse(X)


def test_block_ops_shapes_and_errors():
    assert _infer(mx.sym.depth_to_space(X, block_size=2), x=(1, 8, 2, 3)) == [(1, 2, 4, 6)]
    assert _infer(mx.sym.space_to_depth(X, block_size=2), x=(1, 2, 4, 6)) == [(1, 8, 2, 3)]
    with pytest.raises(ShapeError, match='multiple of block_size'):
        mx.sym.depth_to_space(X, block_size=2).infer_shape(x=(1, 6, 2, 3))
    with pytest.raises(ShapeError, match='width 5'):
        mx.sym.space_to_depth(X, block_size=2).infer_shape(x=(1, 2, 4, 5))
    with pytest.raises(ShapeError, match='4-D'):
        mx.sym.space_to_depth(X, block_size=2).infer_shape(x=(2, 4, 6))
    with pytest.raises(MXNetError, match='positive'):
        mx.sym.space_to_depth(X, block_size=0)
    x = np.random.RandomState(0).rand(2, 3, 4, 6)
    back = mx.nd.depth_to_space(mx.nd.space_to_depth(mx.nd.array(x), block_size=2),
                                block_size=2)
    np.testing.assert_allclose(back.asnumpy(), x.astype(np.float32))


