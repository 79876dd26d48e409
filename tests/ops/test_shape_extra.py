"""Pad, reverse, slice_like, reshape_like, shape_array, size_array, depth_to_space,
space_to_depth, diag, cumsum, moments and Crop (ops/rearrange.py, ops/shape.py, ops/slicing.py,
ops/diagonal.py, ops/reduce.py, ops/legacy.py)
against loop references, plus their shape rules and errors (values from MXNet 1.9.1 are
in tests/golden, cases shapex_*)."""
import numpy as np
import pytest

import symgraph as mx
from harness import case_tests, OpCase
from symgraph.base import MXNetError
from symgraph.opdef import ShapeError, TypeInferenceError


# --- loop references ---------------------------------------------------------------------
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


def _slice_like_ref(axes):
    def ref(x, like):
        ax = [a % x.ndim for a in axes] or range(x.ndim)
        return x[tuple(slice(0, like.shape[i]) if i in ax else slice(None)
                       for i in range(x.ndim))]
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


def _diag_ref(k=0, axis1=0, axis2=1):
    def ref(x):
        if x.ndim == 1:
            n = x.shape[0] + abs(k)
            out = np.zeros((n, n), x.dtype)
            for i in range(x.shape[0]):
                out[i + max(-k, 0), i + max(k, 0)] = x[i]
            return out
        a1, a2 = axis1 % x.ndim, axis2 % x.ndim
        rest = [i for i in range(x.ndim) if i not in (a1, a2)]
        vals = []
        for i in range(x.shape[a1] + x.shape[a2]):
            r, c = i + max(-k, 0), i + max(k, 0)
            if r >= x.shape[a1] or c >= x.shape[a2]:
                break
            idx = [slice(None)] * x.ndim
            idx[a1], idx[a2] = r, c
            vals.append(x[tuple(idx)])
        return np.stack(vals, axis=-1).reshape([x.shape[i] for i in rest] + [len(vals)])
    return ref


def _cumsum_ref(axis=None, dtype=None):
    def ref(x):
        x = x.reshape(-1) if axis is None else x
        ax = 0 if axis is None else axis % x.ndim
        out = np.zeros(x.shape, dtype or x.dtype)
        acc = np.zeros(x.shape[:ax] + x.shape[ax + 1:], dtype or x.dtype)
        for i in range(x.shape[ax]):
            acc = acc + np.take(x, i, axis=ax)
            idx = [slice(None)] * x.ndim
            idx[ax] = i
            out[tuple(idx)] = acc
        return out
    return ref


def _moments_ref(axes, keepdims=False):
    def ref(x):
        ax = tuple(a % x.ndim for a in axes)
        n = np.prod([x.shape[a] for a in ax])
        mean = x.astype(np.float64).sum(axis=ax, keepdims=True) / n
        var = ((x - mean) ** 2).sum(axis=ax, keepdims=keepdims) / n
        mean = mean if keepdims else mean.reshape(var.shape)
        return [mean.astype(x.dtype), var.astype(x.dtype)]
    return ref


def _crop_ref(h=None, w=None, offset=(0, 0), center=False):
    def ref(x, *like):
        hh, ww = (like[0].shape[2], like[0].shape[3]) if like else (h, w)
        oy, ox = ((x.shape[2] - hh) // 2, (x.shape[3] - ww) // 2) if center else offset
        out = np.empty(x.shape[:2] + (hh, ww), x.dtype)
        for i in range(hh):
            for j in range(ww):
                out[:, :, i, j] = x[:, :, oy + i, ox + j]
        return out
    return ref


def _spatial(*pads):
    """pad_width with zero padding on the batch and channel axes."""
    return (0, 0, 0, 0) + tuple(pads)


_F16 = ('float16', 'float32', 'float64')

CASES = [
    OpCase('Pad', dict(mode='constant', pad_width=_spatial(1, 2, 2, 1), constant_value=1.5),
           [(2, 2, 3, 4)], ref=_pad_ref('constant', _spatial(1, 2, 2, 1), 1.5), dtypes=_F16),
    OpCase('pad', dict(mode='constant', pad_width=_spatial(1, 0, 0, 2, 1, 1)),
           [(1, 2, 2, 3, 2)], ref=_pad_ref('constant', _spatial(1, 0, 0, 2, 1, 1))),
    OpCase('Pad', dict(mode='edge', pad_width=_spatial(3, 1, 0, 4)), [(1, 2, 2, 3)],
           ref=_pad_ref('edge', _spatial(3, 1, 0, 4))),
    OpCase('Pad', dict(mode='edge', pad_width=_spatial(1, 2, 2, 0, 1, 1)),
           [(1, 1, 2, 3, 2)], ref=_pad_ref('edge', _spatial(1, 2, 2, 0, 1, 1))),
    OpCase('Pad', dict(mode='reflect', pad_width=_spatial(2, 1, 3, 3)), [(1, 2, 3, 4)],
           ref=_pad_ref('reflect', _spatial(2, 1, 3, 3)), dtypes=_F16),
    OpCase('pad', dict(mode='reflect', pad_width=_spatial(1, 1, 0, 2, 2, 1)),
           [(1, 1, 2, 3, 3)], ref=_pad_ref('reflect', _spatial(1, 1, 0, 2, 2, 1))),
    OpCase('reverse', dict(axis=1), [(2, 3, 4)], ref=_reverse_ref((1,))),
    OpCase('flip', dict(axis=(0, 2)), [(2, 3, 4)], ref=_reverse_ref((0, 2)), dtypes=_F16),
    OpCase('reverse', dict(axis=(1, 1)), [(2, 3)], ref=lambda x: x.copy()),
    OpCase('slice_like', {}, [(4, 5, 3), (2, 3, 3)], ref=_slice_like_ref(()), grad=(0,)),
    OpCase('slice_like', dict(axes=(0, -1)), [(4, 5, 6), (2, 7, 4)],
           ref=_slice_like_ref((0, -1)), grad=(0,)),
    OpCase('slice_like', dict(axes=(1,)), [(3, 5), (1, 2, 9)], ref=_slice_like_ref((1,)),
           grad=(0,)),
    OpCase('reshape_like', {}, [(2, 3, 4), (6, 4)], ref=lambda x, y: x.reshape(6, 4),
           grad=(0,)),
    OpCase('reshape_like', dict(lhs_begin=1, lhs_end=3, rhs_begin=-1), [(2, 3, 4), (5, 12)],
           ref=lambda x, y: x.reshape(2, 12), grad=(0,)),
    OpCase('reshape_like', dict(lhs_begin=0, lhs_end=1, rhs_begin=0, rhs_end=2),
           [(6, 4), (2, 3, 7)], ref=lambda x, y: x.reshape(2, 3, 4), grad=(0,)),
    OpCase('shape_array', {}, [(2, 3, 4)], ref=lambda x: np.array([2, 3, 4]), grad=()),
    OpCase('size_array', {}, [(2, 3, 4)], ref=lambda x: np.array([24]), grad=()),
    OpCase('depth_to_space', dict(block_size=2), [(2, 8, 2, 3)], ref=_d2s_ref(2)),
    OpCase('depth_to_space', dict(block_size=3), [(1, 18, 2, 1)], ref=_d2s_ref(3)),
    OpCase('space_to_depth', dict(block_size=2), [(2, 3, 4, 6)], ref=_s2d_ref(2)),
    OpCase('space_to_depth', dict(block_size=3), [(1, 2, 3, 6)], ref=_s2d_ref(3)),
    OpCase('diag', {}, [(4,)], ref=_diag_ref()),
    OpCase('diag', dict(k=2), [(3,)], ref=_diag_ref(2)),
    OpCase('diag', dict(k=-1), [(3,)], ref=_diag_ref(-1)),
    OpCase('diag', {}, [(3, 4)], ref=_diag_ref()),
    OpCase('diag', dict(k=1), [(3, 4)], ref=_diag_ref(1), dtypes=_F16),
    OpCase('diag', dict(k=-2), [(4, 3)], ref=_diag_ref(-2)),
    OpCase('diag', dict(axis1=2, axis2=0), [(2, 3, 4)], ref=_diag_ref(0, 2, 0)),
    OpCase('diag', dict(k=1, axis1=-1, axis2=1), [(2, 3, 4)], ref=_diag_ref(1, -1, 1)),
    OpCase('cumsum', {}, [(2, 3, 2)], ref=_cumsum_ref()),
    OpCase('cumsum', dict(axis=1), [(2, 3, 4)], ref=_cumsum_ref(1)),
    OpCase('_np_cumsum', dict(axis=-1), [(3, 4)], ref=_cumsum_ref(-1)),
    OpCase('cumsum', dict(axis=0, dtype='float64'), [(4, 3)], ref=_cumsum_ref(0, 'float64')),
    OpCase('moments', dict(axes=(1,)), [(2, 3, 4)], ref=_moments_ref((1,)), dtypes=_F16),
    OpCase('moments', dict(axes=(0, 2), keepdims=True), [(2, 3, 4)],
           ref=_moments_ref((0, 2), True)),
    OpCase('moments', dict(axes=(-1, 0)), [(3, 5)], ref=_moments_ref((-1, 0))),
    OpCase('Crop', dict(num_args=1, h_w=(2, 3), offset=(1, 2)), [(2, 2, 5, 6)],
           ref=_crop_ref(2, 3, (1, 2))),
    OpCase('Crop', dict(num_args=1, h_w=(3, 2), center_crop=True), [(1, 2, 6, 5)],
           ref=_crop_ref(3, 2, center=True)),
    OpCase('Crop', dict(num_args=2, offset=(2, 1)), [(2, 2, 5, 6), (1, 3, 3, 4)],
           ref=_crop_ref(offset=(2, 1)), grad=(0,)),
    OpCase('Crop', dict(num_args=2, center_crop=True), [(1, 2, 5, 6), (2, 1, 2, 2)],
           ref=_crop_ref(center=True), grad=(0,)),
]


test_forward, test_gradient = case_tests(CASES)


def _infer(sym, **shapes):
    return sym.infer_shape(**shapes)[1]


X, Y = mx.sym.var('x'), mx.sym.var('y')


# --- Pad -----------------------------------------------------------------------------------
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


# --- reverse / slice_like / reshape_like ------------------------------------------------------
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


def test_slice_like_shapes_and_errors():
    sl = mx.sym.slice_like
    assert _infer(sl(X, Y), x=(4, 5, 6), y=(2, 3, 4)) == [(2, 3, 4)]
    assert _infer(sl(X, Y, axes=(0,)), x=(4, 5, 6), y=(2, 3)) == [(2, 5, 6)]
    assert _infer(sl(X, Y, axes=(1, -1)), x=(4, 5, 6), y=(2, 3, 4)) == [(4, 3, 4)]
    with pytest.raises(ShapeError, match='same number of dimensions'):
        sl(X, Y).infer_shape(x=(4, 5, 6), y=(2, 3))
    with pytest.raises(ShapeError, match='exceeds shape_like'):
        sl(X, Y, axes=(2,)).infer_shape(x=(4, 5, 6), y=(2, 3))
    with pytest.raises(ShapeError, match='exceeds data'):
        sl(X, Y, axes=(3,)).infer_shape(x=(4, 5, 6), y=(2, 3, 4))
    with pytest.raises(ShapeError, match='longer'):
        sl(X, Y).infer_shape(x=(4, 5, 6), y=(2, 3, 7))
    types = sl(X, Y).infer_type(x='float32', y='int32')
    assert types[0] == [np.float32, np.int32] and types[1] == [np.float32]


@pytest.mark.parametrize('kw, match', [
    (dict(lhs_begin=1), 'sizes differ'), (dict(lhs_end=5), 'invalid end'),
    (dict(lhs_begin=-4), 'invalid begin'), (dict(lhs_begin=2, lhs_end=1), 'invalid range'),
    (dict(lhs_begin=3, rhs_begin=2), 'invalid range'),
    (dict(rhs_begin=1, rhs_end=-1), 'invalid range')])
def test_reshape_like_errors_as_in_mxnet(kw, match):
    with pytest.raises(ShapeError, match=match):
        mx.sym.reshape_like(X, Y, **kw).infer_shape(x=(2, 3, 4), y=(6, 4))


def test_reshape_like_shapes():
    rl = mx.sym.reshape_like
    assert _infer(rl(X, Y, lhs_end=2, rhs_end=1), x=(2, 3, 4), y=(6, 4)) == [(6, 4)]
    assert _infer(rl(X, Y, lhs_begin=0, lhs_end=-1, rhs_begin=0, rhs_end=-1),
                  x=(2, 3, 4), y=(6, 12)) == [(6, 4)]
    assert '"rhs_end": "None"' in rl(X, Y, rhs_end=None).tojson()


# --- shape_array / size_array -----------------------------------------------------------------
def test_shape_and_size_array_are_int64_without_gradient():
    for op, shape, expect in (('shape_array', (3,), [2, 3, 4]), ('size_array', (1,), [24])):
        sym = getattr(mx.sym, op)(X)
        assert _infer(sym, x=(2, 3, 4)) == [shape]
        assert sym.infer_type(x='float16')[1] == [np.int64]
        out = getattr(mx.nd, op)(mx.nd.ones((2, 3, 4), dtype='int32'))
        assert out.dtype == np.int64 and out.asnumpy().tolist() == expect
    assert mx.sym.shape_array(X).infer_shape_partial(x=(0, 3, 4))[1] == [(3,)]
    net = mx.sym.broadcast_add(mx.sym.sum(X * X), mx.sym.cast(mx.sym.size_array(X), 'float32'))
    exe = net.simple_bind(mx.cpu(), x=(2, 3))
    exe.forward(is_train=True, x=np.ones((2, 3)))
    exe.backward([mx.nd.ones((1,))])
    np.testing.assert_allclose(exe.grad_dict['x'].asnumpy(), 2 * np.ones((2, 3)))


# --- depth_to_space / space_to_depth ------------------------------------------------------
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


# --- diag ----------------------------------------------------------------------------------
def test_diag_shapes_and_errors_as_in_mxnet():
    assert _infer(mx.sym.diag(X, k=-2), x=(3,)) == [(5, 5)]
    assert _infer(mx.sym.diag(X, k=4), x=(3, 4)) == [(0,)]      # empty, as MXNet
    assert _infer(mx.sym.diag(X, k=-3), x=(3, 4)) == [(0,)]
    assert _infer(mx.sym.diag(X), x=(2, 3, 4)) == [(4, 2)]
    for k in (5, -4):
        with pytest.raises(ShapeError, match='does not exist'):
            mx.sym.diag(X, k=k).infer_shape(x=(3, 4))
    with pytest.raises(ShapeError, match='same axis'):
        mx.sym.diag(X, axis1=1, axis2=-2).infer_shape(x=(2, 3, 4))
    with pytest.raises(ShapeError, match='out of range'):
        mx.sym.diag(X, axis1=3).infer_shape(x=(2, 3, 4))
    out = mx.nd.diag(mx.nd.array([1, 2, 3], dtype='int32'))
    assert out.dtype == np.int32 and out.asnumpy().tolist() == np.diag([1, 2, 3]).tolist()


# --- cumsum ----------------------------------------------------------------------------------
def test_cumsum_types_shapes_and_json():
    with mx.name.NameManager():
        sym = mx.sym.cumsum(X, axis=1)
    assert '"op": "_np_cumsum"' in sym.tojson() and sym.list_outputs() == ['cumsum0_output']
    assert _infer(mx.sym.cumsum(X), x=(2, 3, 4)) == [(24,)]
    assert mx.sym.cumsum(X, dtype='float64').infer_type(x='float32')[1] == [np.float64]
    assert mx.sym.cumsum(X).infer_type(x='int8')[1] == [np.int8]
    assert mx.sym.cumsum(X).infer_type(x='bool')[1] == [np.int64]
    with pytest.raises(ShapeError, match='out of range'):
        mx.sym.cumsum(X, axis=3).infer_shape(x=(2, 3, 4))
    with pytest.raises(MXNetError, match='dtype'):
        mx.sym.cumsum(X, dtype='uint8')
    out = mx.nd.cumsum(mx.nd.array([[1, 2], [3, 4]], dtype='int32'), axis=0)
    assert out.dtype == np.int32 and out.asnumpy().tolist() == [[1, 2], [4, 6]]
    assert mx.sym.cumsum(name='c').list_arguments() == ['c_a']


# --- moments ---------------------------------------------------------------------------------
def test_moments_outputs_and_errors():
    sym = mx.sym.moments(X, axes=(2, 0), name='m')
    assert sym.list_outputs() == ['m_output0', 'm_output1']
    assert _infer(sym, x=(2, 3, 4)) == [(3,), (3,)]
    assert _infer(mx.sym.moments(X, axes=(0, 1, 2)), x=(2, 3, 4)) == [(1,), (1,)]
    for kw, match in ((dict(), 'empty axes'), (dict(axes=(1, 1)), 'duplicate'),
                      (dict(axes=(3,)), 'out of range'), (dict(axes=()), 'empty axes')):
        with pytest.raises(ShapeError, match=match):
            mx.sym.moments(X, **kw).infer_shape(x=(2, 3, 4))
    # integer data: truncated mean and variance, as MXNet (values from MXNet 1.9.1)
    a = (np.arange(24).reshape(2, 3, 4) ** 1.5).astype(np.int32)
    mean, var = mx.nd.moments(mx.nd.array(a, dtype='int32'), axes=(0,))
    assert mean.dtype == np.int32
    assert mean.asnumpy().ravel()[:6].tolist() == [20, 23, 27, 31, 36, 40]
    assert var.asnumpy().ravel()[:6].tolist() == [420, 506, 625, 702, 784, 870]


def test_moments_gradient_of_one_output_through_the_executor():
    sym = mx.sym.moments(X, axes=(1,))[1]
    exe = sym.simple_bind(mx.cpu(), x=(2, 3))
    x = np.random.RandomState(0).rand(2, 3)
    exe.forward(is_train=True, x=x)
    exe.backward([mx.nd.ones((2,))])
    m = x.mean(1, keepdims=True)
    np.testing.assert_allclose(exe.grad_dict['x'].asnumpy(), 2 * (x - m) / 3, rtol=1e-5)


# --- Crop ------------------------------------------------------------------------------------
def test_crop_arguments_shapes_and_errors_as_in_mxnet():
    sym = mx.sym.Crop(X, Y, name='c')
    assert sym.list_arguments() == ['x', 'y']
    assert mx.sym.Crop(name='c', num_args=2).list_arguments() == ['c_arg0', 'c_arg1']
    assert '"num_args": "2"' in sym.tojson()
    assert _infer(sym, x=(1, 2, 5, 6), y=(3, 3, 2, 2)) == [(1, 2, 2, 2)]
    crop1 = mx.sym.Crop(X, h_w=(2, 3), offset=(3, 3))
    assert '"num_args": "1"' in crop1.tojson()
    assert _infer(crop1, x=(1, 2, 5, 6)) == [(1, 2, 2, 3)]
    with pytest.raises(ShapeError, match='offset'):
        mx.sym.Crop(X, h_w=(2, 3), offset=(4, 0)).infer_shape(x=(1, 1, 5, 6))
    with pytest.raises(ShapeError, match='offset'):
        mx.sym.Crop(X, h_w=(2, 3), offset=(-1, 0)).infer_shape(x=(1, 1, 5, 6))
    with pytest.raises(ShapeError, match='exceeds'):
        mx.sym.Crop(X, h_w=(6, 3)).infer_shape(x=(1, 1, 5, 6))
    with pytest.raises(ShapeError, match='at least 1'):
        mx.sym.Crop(X, num_args=1).infer_shape(x=(1, 1, 5, 6))
    with pytest.raises(ShapeError, match='smaller'):
        mx.sym.Crop(X, Y).infer_shape(x=(1, 1, 5, 6), y=(1, 1, 6, 2))
    with pytest.raises(ShapeError, match='4-D'):
        mx.sym.Crop(X, h_w=(2, 2)).infer_shape(x=(1, 5, 6))
    with pytest.raises(MXNetError, match='1 or 2'):
        mx.sym.Crop(X, Y, X)
    out = mx.nd.Crop(mx.nd.array(np.arange(30).reshape(1, 1, 5, 6)), num_args=1,
                     h_w=(4, 4), center_crop=True)
    assert out.asnumpy()[0, 0, :, 0].tolist() == [1, 7, 13, 19]
