"""Shape operators (ops/shape.py): Flatten, Reshape, transpose, SwapAxis, expand_dims, squeeze,
reshape_like, shape_array, size_array and cast_storage (values from MXNet 1.9.1 are in
tests/golden, cases shapex_* and splitidx_*)."""
import numpy as np
import pytest

import symgraph as mx
from _refs import _infer, X, Y
from harness import case_tests, OpCase
from symgraph.opdef import ShapeError, get_op
from symgraph.ops.shape import infer_reshape


def _swap(i, j):
    def f(x):
        return np.swapaxes(x, i, j)
    return f


X234 = (2, 3, 4)
CASES = [
    OpCase('Flatten', shapes=[(2, 3, 4)], ref=lambda x: x.reshape(2, 12)),
    OpCase('flatten', shapes=[(5,)], ref=lambda x: x.reshape(5, 1)),
    OpCase('Reshape', dict(shape=(4, -1)), [(2, 3, 4)], ref=lambda x: x.reshape(4, 6)),
    OpCase('Reshape', dict(shape=(-4, 1, 2, -3, -2)), [(2, 3, 4, 5)],
           ref=lambda x: x.reshape(1, 2, 12, 5)),
    OpCase('reshape', dict(shape=(0, -1), reverse=True), [(2, 3, 4, 5)],
           ref=lambda x: x.reshape(4, 30)),
    OpCase('Reshape', dict(shape=(-3, -1), reverse=True), [(2, 3, 4, 5)],
           ref=lambda x: x.reshape(12, 10)),
    OpCase('Reshape', dict(shape=(0, -4, -1, 3, -2)), [(2, 6, 5)],
           ref=lambda x: x.reshape(2, 2, 3, 5)),
    OpCase('Reshape', dict(shape=(-2, 1, 1)), [(3, 2)], ref=lambda x: x.reshape(3, 2, 1, 1)),
    OpCase('Reshape', dict(target_shape=(0, 4)), [(2, 3, 4)], ref=lambda x: x.reshape(6, 4)),
    OpCase('Reshape', dict(target_shape=(7, 4, 0), keep_highest=True), [(2, 3, 4)],
           ref=lambda x: x.reshape(2, 4, 3)),
    OpCase('transpose', {}, [X234], ref=lambda x: x.transpose()),
    OpCase('transpose', dict(axes=(1, 2, 0)), [X234], ref=lambda x: x.transpose(1, 2, 0)),
    OpCase('SwapAxis', dict(dim1=0, dim2=2), [X234], ref=_swap(0, 2)),
    OpCase('swapaxes', dict(dim1=-1, dim2=1), [(2, 3, 5)], ref=_swap(-1, 1)),
    OpCase('expand_dims', dict(axis=-1), [(2, 3)], ref=lambda x: x[..., None]),
    OpCase('expand_dims', dict(axis=1), [(2, 3)], ref=lambda x: x[:, None]),
    OpCase('squeeze', {}, [(1, 3, 1, 2)], ref=lambda x: x.reshape(3, 2)),
    OpCase('squeeze', dict(axis=(0, -2)), [(1, 3, 1, 2)], ref=lambda x: x.reshape(3, 2)),
    OpCase('squeeze', {}, [(1, 1)], ref=lambda x: x.reshape(1)),
    # slicing.py
    # indexing.py
    # weight must have the type `dtype` (float64 here: the symbolic run uses float64)
]


SHAPE_LIKE_CASES = [
    OpCase('reshape_like', {}, [(2, 3, 4), (6, 4)], ref=lambda x, y: x.reshape(6, 4),
           grad=(0,)),
    OpCase('reshape_like', dict(lhs_begin=1, lhs_end=3, rhs_begin=-1), [(2, 3, 4), (5, 12)],
           ref=lambda x, y: x.reshape(2, 12), grad=(0,)),
    OpCase('reshape_like', dict(lhs_begin=0, lhs_end=1, rhs_begin=0, rhs_end=2),
           [(6, 4), (2, 3, 7)], ref=lambda x, y: x.reshape(2, 3, 4), grad=(0,)),
    OpCase('shape_array', {}, [(2, 3, 4)], ref=lambda x: np.array([2, 3, 4]), grad=()),
    OpCase('size_array', {}, [(2, 3, 4)], ref=lambda x: np.array([24]), grad=()),
]


CAST_STORAGE_CASES = [
    OpCase('cast_storage', dict(stype='default'), [(3, 4)], ref=lambda x: x),
]


test_forward, test_gradient = case_tests(CASES + SHAPE_LIKE_CASES + CAST_STORAGE_CASES)


# ----------------------------------------------------------------------------------------
# shape inference
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize('spec, reverse, dshape, expected', [
    ((-4, 1, 2, -3, -2), False, (2, 3, 4, 5), (1, 2, 12, 5)),
    ((0, -1), True, (2, 3, 4, 5), (4, 30)),
    ((-1, 0), True, (2, 3, 4), (6, 4)),
    ((0, 0, -1), True, (2, 3, 4, 5), (3, 4, 10)),
    ((2, -1, 0), True, (2, 3, 4), (2, 3, 4)),
    ((-4, -1, 2, -2), False, (6, 5), (3, 2, 5)),
    ((0, -1), False, (-1, 3, 4), (-1, -1)),       # unknown batch: -1 stays unknown
])
def test_reshape_special_values(spec, reverse, dshape, expected):
    """Values observed on MXNet 1.9.1."""
    assert infer_reshape(spec, dshape, reverse) == expected


@pytest.mark.parametrize('spec', [(-1, -1), (-4, -1, -1, 4), (-4, 4, 4, 3), (5, 5)])
def test_reshape_errors(spec):
    op = get_op('Reshape')(shape=spec)
    with pytest.raises(ShapeError):
        op.infer_shape([(4, 3)])


def test_reshape_fills_one_unknown_input_dim():
    op = get_op('Reshape')(shape=(4, 6))
    assert op.infer_shape([(0, 3, 4)])[0] == [(2, 3, 4)]


def test_squeeze_rejects_long_axis():
    with pytest.raises(ShapeError, match='length 3'):
        get_op('squeeze')(axis=1).infer_shape([(1, 3)])


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
