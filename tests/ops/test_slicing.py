"""Concat, stack, SliceChannel, slice, slice_axis, slice_like and ``_split_v2`` (ops/slicing.py)
against NumPy / loop references, plus their Python wrappers, names, shape rules and errors
(values from MXNet 1.9.1 are in tests/golden, cases shapex_* and splitidx_*)."""
import numpy as np
import pytest

import symgraph as mx
from _refs import _infer, X, Y
from harness import case_tests, OpCase
from symgraph.base import MXNetError
from symgraph.opdef import ShapeError, get_op


def _slice_like_ref(axes):
    def ref(x, like):
        ax = [a % x.ndim for a in axes] or range(x.ndim)
        return x[tuple(slice(0, like.shape[i]) if i in ax else slice(None)
                       for i in range(x.ndim))]
    return ref


CASES = [
    OpCase('slice_like', {}, [(4, 5, 3), (2, 3, 3)], ref=_slice_like_ref(()), grad=(0,)),
    OpCase('slice_like', dict(axes=(0, -1)), [(4, 5, 6), (2, 7, 4)],
           ref=_slice_like_ref((0, -1)), grad=(0,)),
    OpCase('slice_like', dict(axes=(1,)), [(3, 5), (1, 2, 9)], ref=_slice_like_ref((1,)),
           grad=(0,)),
]


def _pieces(bounds, axis, squeeze=False):
    def ref(x):
        out = []
        for b, e in bounds:
            p = np.take(x, range(b, e), axis=axis)
            out.append(np.squeeze(p, axis) if squeeze else p)
        return out
    return ref


SPLIT_V2_CASES = [
    OpCase('_split_v2', dict(indices=(0, 1, 3), axis=1), [(2, 5, 3)],
           ref=_pieces([(0, 1), (1, 3), (3, 5)], 1)),
    OpCase('_split_v2', dict(indices='(0, 2)', axis=-1), [(3, 2, 5)],
           ref=_pieces([(0, 2), (2, 5)], 2)),
    OpCase('_split_v2', dict(indices=(0,), sections=3, axis=0, squeeze_axis=True), [(3, 4)],
           ref=_pieces([(0, 1), (1, 2), (2, 3)], 0, squeeze=True)),
    OpCase('_split_v2', dict(indices=(0, 1, 2), axis=2, squeeze_axis=True), [(2, 4, 3)],
           ref=_pieces([(0, 1), (1, 2), (2, 3)], 2, squeeze=True)),
    OpCase('_split_v2', dict(indices=(0, 2, 2), axis=1), [(2, 4)],
           ref=_pieces([(0, 2), (2, 2), (2, 4)], 1), id='_split_v2[empty piece]'),
]


X234 = (2, 3, 4)

def _concat(axis):
    return lambda *xs: np.concatenate(xs, axis=axis)

def _stack(axis):
    return lambda *xs: np.stack(xs, axis=axis)

def _split(n, axis, squeeze=False):
    def f(x):
        parts = np.split(x, n, axis=axis)
        return [np.squeeze(p, axis=axis) for p in parts] if squeeze else parts
    return f


CONCAT_SLICE_CASES = [
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
]


test_forward, test_gradient = case_tests(CONCAT_SLICE_CASES + CASES + SPLIT_V2_CASES)


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


def test_split_v2_wrappers_as_in_mxnet():
    a = mx.nd.array(np.arange(30).reshape(2, 5, 3))
    out = mx.nd.split_v2(a, (1, 3), axis=1)
    assert [o.shape for o in out] == [(2, 1, 3), (2, 2, 3), (2, 2, 3)]
    np.testing.assert_array_equal(out[1].asnumpy(), a.asnumpy()[:, 1:3])
    assert [o.shape for o in a.split_v2(5, axis=1)] == [(2, 1, 3)] * 5
    with pytest.raises(ValueError, match='equal division'):
        mx.nd.split_v2(a, 2, axis=1)
    with pytest.raises(ValueError, match='int or tuple'):
        mx.nd.split_v2(a, [1, 2])
    x = mx.sym.var('x')
    with mx.name.NameManager():         # automatic names counted from 0, as in a fresh process
        s = mx.sym.split_v2(x, (1, 3), axis=1)
    # MXNet 1.9.1: names, shapes and attributes of the node
    assert s.list_outputs() == ['_split_v20_output0', '_split_v20_output1',
                                '_split_v20_output2']
    assert s.infer_shape(x=(2, 5, 3))[1] == [(2, 1, 3), (2, 2, 3), (2, 2, 3)]
    attrs = s.attr_dict()['_split_v20']
    assert attrs['indices'] == '[0, 1, 3]' and attrs['sections'] == '0'
    s = x.split_v2(3, axis=-1, squeeze_axis=True)
    assert s.infer_shape(x=(2, 5, 3))[1] == [(2, 5)] * 3
    assert mx.sym.load_json(s.tojson()).tojson() == s.tojson()


@pytest.mark.parametrize('attrs, shape, match', [
    (dict(indices=(0, 3, 2), axis=1), (2, 5), r'piece 1 \[3, 2\)'),
    (dict(indices=(0, 7), axis=1), (2, 5), r'piece 0 \[0, 7\)'),
    (dict(indices=(2, 4), axis=1), (2, 5), 'must start with 0'),
    (dict(indices=(0,), sections=3, axis=1), (2, 5), 'not divisible by sections=3'),
    (dict(indices=(0, 2), axis=1, squeeze_axis=True), (2, 5), 'pieces of length 1'),
    (dict(indices=(0, 2), axis=2), (2, 5), 'axis 2 is out of range'),
])
def test_split_v2_shape_errors(attrs, shape, match):
    with pytest.raises(ShapeError, match=match):
        get_op('_split_v2')(**attrs).infer_shape([shape])


def test_split_v2_parameter_errors_and_absent_head_gradients():
    with pytest.raises(MXNetError, match='indices'):
        get_op('_split_v2')(axis=1)
    with pytest.raises(MXNetError, match='give indices'):
        get_op('_split_v2')(indices=())
    op = get_op('_split_v2')(indices=(0, 1, 3), axis=1)
    x = np.arange(10.0).reshape(2, 5)
    g = op.backward(np, [None, np.ones((2, 2)), None], [x], None, [], [True])[0]
    np.testing.assert_array_equal(g, [[0, 1, 1, 0, 0]] * 2)


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
