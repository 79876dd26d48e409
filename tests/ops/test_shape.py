"""Shape, slicing and indexing operators (ops/shape.py, ops/slicing.py, ops/indexing.py)."""
import numpy as np
import pytest

import symgraph as mx
from _refs import _infer, X, Y
from harness import case_tests, OpCase
from symgraph.base import MXNetError
from symgraph.opdef import ShapeError, get_op
from symgraph.ops.shape import infer_reshape


def _swap(i, j):
    def f(x):
        return np.swapaxes(x, i, j)
    return f


def _concat(axis):
    return lambda *xs: np.concatenate(xs, axis=axis)


def _stack(axis):
    return lambda *xs: np.stack(xs, axis=axis)


def _split(n, axis, squeeze=False):
    def f(x):
        parts = np.split(x, n, axis=axis)
        return [np.squeeze(p, axis=axis) for p in parts] if squeeze else parts
    return f


def _indices(idx):
    """Input maker: a float array and fixed (float) indices."""
    def make(rng, shapes, dtype):
        return [rng.uniform(-1, 1, shapes[0]), np.asarray(idx, dtype='float64')]
    return make


def _take_ref(axis, mode):
    def f(a, idx):
        i = np.trunc(idx).astype(np.int64)
        n = a.shape[axis]
        i = np.clip(i, 0, n - 1) if mode == 'clip' else np.mod(i, n)
        return np.take(a, i, axis=axis)
    return f


def _emb_inputs(idx, input_dim, output_dim):
    def make(rng, shapes, dtype):
        return [np.asarray(idx, dtype='float64'), rng.uniform(-1, 1, (input_dim, output_dim))]
    return make


def _emb_ref(input_dim):
    def f(d, w):
        return w[np.clip(np.trunc(d).astype(np.int64), 0, input_dim - 1)]
    return f


def _one_hot_ref(depth, on, off, dtype):
    def f(idx):
        i = np.trunc(idx).astype(np.int64)
        out = np.full(idx.shape + (depth,), off, dtype=dtype)
        for pos in np.ndindex(idx.shape):
            if 0 <= i[pos] < depth:
                out[pos + (i[pos],)] = on
        return out
    return f


def _where_inputs(cond):
    def make(rng, shapes, dtype):
        return [np.asarray(cond, dtype='float64')] + [rng.uniform(-1, 1, s) for s in shapes[1:]]
    return make


def _where_ref(c, x, y):
    m = c.reshape(c.shape + (1,) * (x.ndim - c.ndim)) != 0
    return np.where(m, x, y)


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
    OpCase('tile', dict(reps=(2, 1, 3)), [(2, 3)], ref=lambda x: np.tile(x, (2, 1, 3))),
    OpCase('tile', dict(reps=(3,)), [(2, 3)], ref=lambda x: np.tile(x, 3)),
    OpCase('repeat', dict(repeats=3), [(2, 3)], ref=lambda x: np.repeat(x.ravel(), 3)),
    OpCase('repeat', dict(repeats=2, axis=-2), [(2, 3, 2)],
           ref=lambda x: np.repeat(x, 2, axis=1)),
    # slicing.py
    OpCase('Concat', dict(num_args=3, dim=1), [(2, 3, 2), (2, 1, 2), (2, 4, 2)],
           ref=_concat(1)),
    OpCase('concat', dict(num_args=2, dim=-1), [(2, 3), (2, 5)], ref=_concat(-1)),
    OpCase('Concat', dict(num_args=1, dim=0), [(3, 2)], ref=_concat(0)),
    OpCase('stack', dict(num_args=2, axis=-1), [(2, 3), (2, 3)], ref=_stack(-1)),
    OpCase('stack', dict(num_args=3), [(4,), (4,), (4,)], ref=_stack(0)),
    OpCase('SliceChannel', dict(num_outputs=3), [(2, 6, 2)], ref=_split(3, 1)),
    OpCase('split', dict(num_outputs=3, axis=-1, squeeze_axis=True), [(2, 4, 3)],
           ref=_split(3, -1, True)),
    OpCase('slice', dict(begin=(None, -1), end=(None, 0), step=(1, -1)), [X234],
           ref=lambda x: x[:, -1:0:-1]),
    OpCase('slice', dict(begin=(1, 0, -3), end=(2, 3, None)), [X234],
           ref=lambda x: x[1:2, 0:3, -3:]),
    OpCase('crop', dict(begin=(0, None, 3), end=(2, None, 0), step=(1, 2, -2)), [(2, 5, 4)],
           ref=lambda x: x[0:2, ::2, 3:0:-2]),
    OpCase('slice', dict(begin='(1,)', end='(3,)'), [(4, 3)], ref=lambda x: x[1:3]),
    OpCase('slice_axis', dict(axis=-1, begin=-3, end=None), [X234], ref=lambda x: x[..., -3:]),
    OpCase('slice_axis', dict(axis=1, begin=0, end=2), [X234], ref=lambda x: x[:, 0:2]),
    # indexing.py
    OpCase('take', {}, [(5, 3), (2, 3)], inputs=_indices([[0, 7, -2], [4, 4, 1.5]]),
           ref=_take_ref(0, 'clip'), grad=(0,)),
    OpCase('take', dict(mode='wrap', axis=-1), [(2, 5, 3), (5,)],
           inputs=_indices([2, 0, 2, -4, 3.7]), ref=_take_ref(-1, 'wrap'), grad=(0,)),
    OpCase('take', dict(mode='wrap', axis=1), [(2, 5, 3), (2, 2)],
           inputs=_indices([[6, -1], [1, 1]]), ref=_take_ref(1, 'wrap'), grad=(0,)),
    OpCase('take', dict(mode='raise', axis=1), [(2, 5, 3), (4,)],
           inputs=_indices([2, 0, 2, 4]), ref=_take_ref(1, 'clip'), grad=(0,)),
    # weight must have the type `dtype` (float64 here: the symbolic run uses float64)
    OpCase('Embedding', dict(input_dim=5, output_dim=3, dtype='float64'), [(2, 3), (5, 3)],
           inputs=_emb_inputs([[0, 4, 4], [7, -1, 2.5]], 5, 3), ref=_emb_ref(5), grad=(1,),
           dtypes=('float64',)),
    OpCase('Embedding', dict(input_dim=4, output_dim=2, dtype='float64'), [(5,), (4, 2)],
           inputs=_emb_inputs([3, 1, 3, 3, 0], 4, 2), ref=_emb_ref(4), grad=(1,),
           dtypes=('float64',)),
    OpCase('one_hot', dict(depth=4, on_value=2.5, off_value=-1, dtype='float64'), [(2, 3)],
           inputs=lambda rng, s, d: [np.array([[0, 3, -1], [5, 1.9, 2]])],
           ref=_one_hot_ref(4, 2.5, -1, 'float64'), grad=()),
    OpCase('one_hot', dict(depth=3), [(4,)], inputs=lambda rng, s, d: [np.array([2, 0, 0, 1])],
           ref=_one_hot_ref(3, 1, 0, 'float32'), grad=()),
    OpCase('where', {}, [(3, 4), (3, 4), (3, 4)],
           inputs=_where_inputs([[1, 0, 0, 2], [0, 0, 1, 1], [1, 1, 1, 0]]),
           ref=_where_ref, grad=(1, 2)),
    OpCase('where', {}, [(3,), (3, 2), (3, 2)], inputs=_where_inputs([1, 0, -2]),
           ref=_where_ref, grad=(1, 2)),
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


def test_concat_fills_unknown_inputs():
    op = get_op('Concat')(num_args=3, dim=1)
    ins, outs, _ = op.infer_shape([(2, 3), (0, 4), None])
    assert ins == [(2, 3), (2, 4), (2, 0)]
    assert outs == [(2, 0)]
    # a known output gives the one missing size along dim
    ins, outs, _ = op.infer_shape([(2, 3), (2, 4), (2, 0)], [(2, 9)])
    assert ins[2] == (2, 2) and outs == [(2, 9)]


def test_concat_mismatch_names_argument():
    op = get_op('Concat')(num_args=2, dim=1)
    with pytest.raises(ShapeError, match="'arg1'"):
        op.infer_shape([(2, 3), (3, 4)])


def test_split_shape_errors():
    with pytest.raises(ShapeError, match='does not divide'):
        get_op('SliceChannel')(num_outputs=4).infer_shape([(2, 6)])
    with pytest.raises(ShapeError, match='squeeze_axis'):
        get_op('SliceChannel')(num_outputs=3, squeeze_axis=True).infer_shape([(2, 6)])


def test_squeeze_rejects_long_axis():
    with pytest.raises(ShapeError, match='length 3'):
        get_op('squeeze')(axis=1).infer_shape([(1, 3)])


def test_embedding_fills_weight_and_checks_it():
    op = get_op('Embedding')(input_dim=7, output_dim=3)
    ins, outs, _ = op.infer_shape([(4, 2), None])
    assert ins[1] == (7, 3) and outs == [(4, 2, 3)]
    with pytest.raises(ShapeError, match="'weight'"):
        op.infer_shape([(4, 2), (7, 4)])


def test_embedding_types():
    op = get_op('Embedding')(input_dim=3, output_dim=2, dtype='float64')
    ins, outs, _ = op.infer_type([np.dtype('int32'), None])
    assert ins == [np.dtype('int32'), np.dtype('float64')] and outs == [np.dtype('float64')]
    op = get_op('Embedding')(input_dim=3, output_dim=2)
    assert op.infer_type([np.dtype('float64'), None])[1] == [np.dtype('float32')]
    # a given weight's type wins over dtype, as in MXNet 1.9.1 (float16 exports keep
    # dtype='float32' on their Embedding nodes)
    assert op.infer_type([np.dtype('float32'), np.dtype('float16')])[1] == [np.dtype('float16')]
    w = np.arange(6, dtype='float32').reshape(3, 2)
    out, = op.forward(np, [np.array([2, 0], dtype='float32'), w], [], False)
    assert out.dtype == np.float32 and out.tolist() == [[4, 5], [0, 1]]


def test_where_shapes():
    op = get_op('where')()
    assert op.infer_shape([(3,), (3, 4), None]) == ([(3,), (3, 4), (3, 4)], [(3, 4)], [])
    with pytest.raises(ShapeError, match="'condition'"):
        op.infer_shape([(2, 4), (3, 4), (3, 4)])


def test_slice_params_written_as_tuples():
    op = get_op('slice')(begin=[1, None], end='(3, -1)')
    assert (op.begin, op.end, op.step) == ('(1, None)', '(3, -1)', '()')
    assert op == get_op('slice')(begin=(1, None), end=(3, -1))


def test_empty_slice_is_allowed():
    # MXNet 1.9.1 infers (2, 0, 4) here (golden case slice_empty); slice_axis refuses
    op = get_op('slice')(begin=(1, None, 0), end=(4, 5, None), step=(2, -1, None))
    assert op.infer_shape([(5, 6, 4)])[1] == [(2, 0, 4)]
    x = np.ones((5, 6, 4))
    y, = op.forward(np, [x], [], False)
    assert y.shape == (2, 0, 4)
    assert op.backward(np, [y], [x], [y], [], [True])[0].sum() == 0
    with pytest.raises(ShapeError, match='empty'):
        get_op('slice_axis')(axis=1, begin=3, end=3).infer_shape([(2, 5)])


def test_take_raise_mode_out_of_range():
    op = get_op('take')(mode='raise')
    with pytest.raises(MXNetError):
        op.forward(np, [np.zeros((3, 2)), np.array([0.0, 3.0])], [], False)


def test_take_gradient_accumulates_repeated_indices():
    op = get_op('take')(axis=1)
    a = np.zeros((2, 3))
    idx = np.array([[2, 2], [2, 0]], dtype='float64')
    g = np.ones((2, 2, 2))
    ga, gi = op.backward(np, [g], [a, idx], None, [], [True, True])
    np.testing.assert_array_equal(ga, [[1, 0, 3], [1, 0, 3]])
    np.testing.assert_array_equal(gi, np.zeros_like(idx))


def test_embedding_gradient_accumulates_and_clips():
    op = get_op('Embedding')(input_dim=3, output_dim=2)
    w = np.zeros((3, 2), dtype='float32')
    d = np.array([0, 0, 9, -4], dtype='float32')    # 9 -> row 2, -4 -> row 0
    g = np.arange(8, dtype='float32').reshape(4, 2)
    gd, gw = op.backward(np, [g], [d, w], None, [], [False, True])
    np.testing.assert_array_equal(gw, [[0 + 2 + 6, 1 + 3 + 7], [0, 0], [4, 5]])
    assert gd is None and gw.dtype == np.float32


def test_argument_and_output_names():
    x = mx.sym.var('x')
    assert mx.sym.Concat(x, x, x, dim=0, name='c').list_outputs() == ['c_output']
    assert mx.sym.Concat(num_args=2, name='c').list_arguments() == ['c_arg0', 'c_arg1']
    assert mx.sym.stack(num_args=2, name='s').list_arguments() == ['s_arg0', 's_arg1']
    assert mx.sym.split(x, num_outputs=3, name='s').list_outputs() == \
        ['s_output0', 's_output1', 's_output2']
    assert mx.sym.take(name='t').list_arguments() == ['t_a', 't_indices']
    assert mx.sym.where(name='w').list_arguments() == ['w_condition', 'w_x', 'w_y']
    assert mx.sym.one_hot(name='o', depth=3).list_arguments() == ['o_indices']
    assert mx.sym.Embedding(x, input_dim=3, output_dim=4, name='e').list_arguments() == \
        ['x', 'e_weight']


def test_embedding_weight_through_symbol():
    x = mx.sym.var('x')
    e = mx.sym.Embedding(x, input_dim=7, output_dim=3, name='e')
    args, outs, _ = e.infer_shape(x=(4, 2))
    assert args == [(4, 2), (7, 3)] and outs == [(4, 2, 3)]


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
