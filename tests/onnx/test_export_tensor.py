"""The tensor, arithmetic and reduction converters: small graphs exported, checked and run
by ONNX Runtime against symgraph's forward."""
import numpy as np
import pytest

import symgraph as mx

pytest.importorskip('onnx')
pytest.importorskip('onnxruntime')

from onnx_special_check import check  # noqa: E402  (tests/onnx/)

V = mx.sym.var
X, Y, Z = V('x'), V('y'), V('z')


def _x(*shape, seed=0, dtype=np.float32, low=-2.0, high=2.0):
    return np.random.RandomState(seed).uniform(low, high, shape).astype(dtype)


def _i(*shape, high=5, seed=0, dtype=np.int32):
    return np.random.RandomState(seed).randint(0, high, shape).astype(dtype)


A = _x(2, 3, 4)
CASES = [
    # --- shapes
    ('reshape_codes', mx.sym.Reshape(X, shape=(0, -1)), {'x': A}),
    ('reshape_m2', mx.sym.Reshape(X, shape=(-2, 1)), {'x': A}),
    ('reshape_m3', mx.sym.Reshape(X, shape=(-3, 4)), {'x': A}),
    ('reshape_m4', mx.sym.Reshape(X, shape=(0, 0, -4, 2, -1)), {'x': A}),
    ('reshape_reverse', mx.sym.Reshape(X, shape=(-1, 0), reverse=True), {'x': A}),
    ('reshape_like', mx.sym.reshape_like(X, Y), {'x': A, 'y': _x(6, 4)}),
    ('reshape_like_part', mx.sym.reshape_like(X, Y, lhs_begin=1, lhs_end=3, rhs_begin=0,
                                              rhs_end=1), {'x': A, 'y': _x(12, 5)}),
    ('flatten', mx.sym.Flatten(X), {'x': A}),
    ('transpose', mx.sym.transpose(X, axes=(2, 0, 1)), {'x': A}),
    ('transpose_default', mx.sym.transpose(X), {'x': A}),
    ('swapaxis', mx.sym.SwapAxis(X, dim1=0, dim2=2), {'x': A}),
    ('expand_dims', mx.sym.expand_dims(X, axis=-1), {'x': A}),
    ('squeeze', mx.sym.squeeze(X), {'x': _x(2, 1, 3, 1)}),
    ('squeeze_axis', mx.sym.squeeze(X, axis=1), {'x': _x(2, 1, 3, 1)}),
    ('squeeze_all', mx.sym.squeeze(X), {'x': _x(1, 1)}),
    ('concat', mx.sym.Concat(X, Y, dim=-1), {'x': A, 'y': _x(2, 3, 2)}),
    ('stack', mx.sym.stack(X, Y, axis=1), {'x': A, 'y': _x(2, 3, 4, seed=1)}),
    ('split', mx.sym.split(X, num_outputs=3, axis=1), {'x': A}),
    ('split_squeeze', mx.sym.split(X, num_outputs=3, axis=1, squeeze_axis=True), {'x': A}),
    ('split_v2', mx.sym.split_v2(X, indices_or_sections=(1, 3), axis=2), {'x': A}),
    # --- slices
    ('slice', mx.sym.slice(X, begin=(0, 1), end=(2, None)), {'x': A}),
    ('slice_step', mx.sym.slice(X, begin=(None, None, 3), end=(None, None, 0),
                                step=(1, -1, -2)), {'x': A}),
    ('slice_axis', mx.sym.slice_axis(X, axis=2, begin=1, end=-1), {'x': A}),
    ('slice_axis_none', mx.sym.slice_axis(X, axis=1, begin=-2, end=None), {'x': A}),
    ('slice_like', mx.sym.slice_like(X, Y, axes=(0, 2)), {'x': A, 'y': _x(1, 5, 2)}),
    ('clip', mx.sym.clip(X, a_min=-0.5, a_max=1.0), {'x': A}),
    ('pad_constant', mx.sym.Pad(X, mode='constant', pad_width=(0, 0, 0, 0, 1, 2, 2, 1),
                                constant_value=1.5), {'x': _x(1, 2, 3, 4)}),
    ('pad_edge', mx.sym.Pad(X, mode='edge', pad_width=(0, 0, 0, 0, 1, 2, 2, 1)),
     {'x': _x(1, 2, 3, 4)}),
    ('pad_reflect', mx.sym.Pad(X, mode='reflect', pad_width=(0, 0, 0, 0, 1, 2, 2, 1)),
     {'x': _x(1, 2, 3, 4)}),
    ('tile', mx.sym.tile(X, reps=(2, 1, 3)), {'x': A}),
    ('tile_more_reps', mx.sym.tile(X, reps=(2, 1, 1, 2)), {'x': A}),
    ('tile_fewer_reps', mx.sym.tile(X, reps=(2,)), {'x': A}),
    ('repeat', mx.sym.repeat(X, repeats=2, axis=1), {'x': A}),
    ('repeat_flat', mx.sym.repeat(X, repeats=3), {'x': _x(2, 2)}),
    ('reverse', mx.sym.reverse(X, axis=(0, 2)), {'x': A}),
    # --- indexing
    ('take', mx.sym.take(X, Y), {'x': _x(5, 3), 'y': np.array([[0, 4], [7, -1]], np.float32)}),
    ('take_wrap_axis', mx.sym.take(X, Y, axis=1, mode='wrap'),
     {'x': _x(2, 3), 'y': np.array([0, 4, -1], np.int32)}),
    ('pick', mx.sym.pick(X, Y, axis=1), {'x': _x(3, 4), 'y': np.array([0, 3, 1], np.float32)}),
    ('pick_keepdims', mx.sym.pick(X, Y, axis=0, keepdims=True),
     {'x': _x(3, 4), 'y': np.array([0, 2, 1, 9], np.float32)}),
    ('one_hot', mx.sym.one_hot(X, depth=5, on_value=2.0, off_value=-1.0),
     {'x': np.array([[0, 4], [2, 1]], np.float32)}),
    ('one_hot_int', mx.sym.one_hot(X, depth=3, dtype='int32'),
     {'x': np.array([0, 2, 1], np.int32)}),
    ('where', mx.sym.where(X, Y, Z), {'x': (_x(2, 3) > 0).astype(np.float32),
                                      'y': _x(2, 3, seed=1), 'z': _x(2, 3, seed=2)}),
    ('where_rows', mx.sym.where(X, Y, Z), {'x': np.array([1, 0], np.float32),
                                           'y': _x(2, 3, seed=1), 'z': _x(2, 3, seed=2)}),
    # --- creation, casts, identities
    ('zeros_like', mx.sym.zeros_like(X), {'x': A}),
    ('ones_like', mx.sym.ones_like(X) + X, {'x': A}),
    ('zeros', mx.sym.zeros((2, 3)) + X, {'x': _x(2, 3)}),
    ('ones_int', mx.sym.ones((2, 3), dtype='int32') + X, {'x': _i(2, 3)}),
    ('full', mx.sym.full((2, 3), 4.5) * X, {'x': _x(2, 3)}),
    ('arange', mx.sym.arange(1, 7, 2, repeat=2) + X, {'x': _x(6)}),
    ('cast', mx.sym.Cast(X, dtype='int32'), {'x': A * 3}),
    ('amp_cast', mx.sym.amp_cast(X, dtype='float16'), {'x': A}),
    ('amp_multicast', mx.sym.Group(list(mx.sym.amp_multicast(X, Y, num_outputs=2))),
     {'x': A.astype(np.float16), 'y': A}),
    ('blockgrad', mx.sym.BlockGrad(X) + mx.sym.identity(X), {'x': A}),
    ('shape_array', mx.sym.shape_array(X), {'x': A}),
    ('size_array', mx.sym.size_array(X), {'x': A}),
    # --- broadcasts
    ('broadcast_to', mx.sym.broadcast_to(X, shape=(2, 0, 4)), {'x': _x(1, 3, 1)}),
    ('broadcast_like', mx.sym.broadcast_like(X, Y), {'x': _x(1, 3, 1), 'y': A}),
    ('broadcast_like_axes', mx.sym.broadcast_like(X, Y, lhs_axes=(0,), rhs_axes=(1,)),
     {'x': _x(1, 4), 'y': _x(2, 3)}),
    ('broadcast_axis', mx.sym.broadcast_axis(X, axis=(0, 2), size=(2, 5)),
     {'x': _x(1, 3, 1)}),
    # --- reductions
    ('sum_all', mx.sym.sum(X), {'x': A}),
    ('sum_axis', mx.sym.sum(X, axis=1), {'x': A}),
    ('mean_keepdims', mx.sym.mean(X, axis=(0, 2), keepdims=True), {'x': A}),
    ('max_exclude', mx.sym.max(X, axis=1, exclude=True), {'x': A}),
    ('min', mx.sym.min(X, axis=-1), {'x': A}),
    ('prod', mx.sym.prod(X, axis=0), {'x': A}),
    ('prod_int_wraps', mx.sym.prod(X, axis=1), {'x': _i(2, 6, high=100) + 1}),
    ('prod_int64_wraps', mx.sym.prod(X, axis=(0, 2), keepdims=True),
     {'x': _i(4, 2, 6, high=100, dtype=np.int64) + 1}),
    ('prod_int_all', mx.sym.prod(X), {'x': _i(3, 5, high=100) + 1}),
    ('nansum', mx.sym.nansum(X, axis=1), {'x': np.where(A > 1, np.nan, A).astype(np.float32)}),
    ('norm_all', mx.sym.norm(X), {'x': A}),
    ('norm_l1_axis', mx.sym.norm(X, ord=1, axis=1, keepdims=True), {'x': A}),
    ('argmax', mx.sym.argmax(X, axis=1), {'x': A}),
    ('argmin_keepdims', mx.sym.argmin(X, axis=2, keepdims=True), {'x': A}),
    ('argmax_all', mx.sym.argmax(X), {'x': A}),
    ('moments', mx.sym.Group(list(mx.sym.moments(X, axes=(0, 2)))), {'x': A}),
    # --- arithmetic
    ('elemwise', (X + Y) * (X - Y) / (mx.sym.abs(Y) + 1), {'x': A, 'y': _x(2, 3, 4, seed=1)}),
    ('broadcast_arith', mx.sym.broadcast_add(X, Y) * mx.sym.broadcast_div(X, Y + 3),
     {'x': A, 'y': _x(3, 1, seed=1)}),
    ('broadcast_power_max_min', mx.sym.broadcast_power(mx.sym.abs(X) + 0.1, Y) +
     mx.sym.broadcast_maximum(X, Y) - mx.sym.broadcast_minimum(X, Y),
     {'x': A, 'y': _x(1, 4, seed=1)}),
    ('mod', mx.sym.broadcast_mod(X, Y), {'x': A * 3, 'y': np.array([[1.5, -1.0, 0.0, -2.5]],
                                                                   np.float32)}),
    ('mod_f16', mx.sym.broadcast_mod(X, Y), {'x': (A * 3).astype(np.float16),
                                             'y': np.array([[1.5, -1.0, 0.0, -2.5]],
                                                           np.float16)}),
    ('mod_int', mx.sym.broadcast_mod(X, Y), {'x': _i(2, 4, high=20) - 10,
                                             'y': np.array([[3, -3, 0, -5]], np.int32)}),
    ('hypot', mx.sym.broadcast_hypot(X, Y), {'x': A, 'y': _x(2, 3, 4, seed=1)}),
    ('scalars', ((X + 1) * 2 - 3) / 4 + (2 - X) + 3 / (mx.sym.abs(X) + 1), {'x': A}),
    ('scalar_pow', (mx.sym.abs(X) ** 1.5) + (2 ** X), {'x': A}),
    ('scalar_maxmin', mx.sym.maximum(X, 0.5) + mx.sym.minimum(X, -0.5), {'x': A}),
    ('scalar_mod', X % 1.5, {'x': A}),
    ('compare', (X > Y) + (X >= 0.5) + (X < Y) + (X <= Y) + (X == Y) + (X != 0.25),
     {'x': np.round(A), 'y': np.round(_x(2, 3, 4, seed=1))}),
    ('compare_int', mx.sym.broadcast_greater(X, Y), {'x': _i(2, 3), 'y': _i(1, 3, seed=1)}),
    ('logic', mx.sym.broadcast_logical_and(X, Y) + mx.sym.broadcast_logical_or(X, Y) +
     mx.sym.broadcast_logical_xor(X, Y) + mx.sym.logical_not(X),
     {'x': (A > 0).astype(np.float32), 'y': (_x(2, 3, 4, seed=1) > 0).astype(np.float32)}),
    ('add_n', mx.sym.add_n(X, Y, X), {'x': A, 'y': _x(2, 3, 4, seed=1)}),
    ('dot', mx.sym.dot(X, Y), {'x': _x(3, 4), 'y': _x(4, 5, seed=1)}),
    ('dot_transposed', mx.sym.dot(X, Y, transpose_a=True, transpose_b=True),
     {'x': _x(4, 3), 'y': _x(5, 4, seed=1)}),
    ('dot_nd', mx.sym.dot(X, Y), {'x': A, 'y': _x(4, 2, 3, seed=1)}),
    ('dot_vectors', mx.sym.dot(X, Y), {'x': _x(4), 'y': _x(4, seed=1)}),
    ('batch_dot', mx.sym.batch_dot(X, Y, transpose_b=True),
     {'x': A, 'y': _x(2, 5, 4, seed=1)}),
    ('batch_dot_ta', mx.sym.batch_dot(X, Y, transpose_a=True),
     {'x': A, 'y': _x(2, 3, 5, seed=1)}),
    ('smooth_l1', mx.sym.smooth_l1(X, scalar=1.5), {'x': A}),
    ('erf', mx.sym.erf(X), {'x': A}),
]
UNARY = ['abs', 'negative', 'exp', 'sin', 'cos', 'tan', 'arctan', 'sinh', 'cosh', 'tanh',
         'arcsinh', 'ceil', 'floor', 'sign', 'round', 'rint', 'fix', 'trunc', 'square', 'cbrt',
         'degrees', 'radians', 'sigmoid', 'relu', 'softsign', 'expm1']
POSITIVE = ['sqrt', 'rsqrt', 'log', 'log2', 'log10', 'log1p', 'reciprocal', 'rcbrt']
UNIT = ['arcsin', 'arccos', 'arctanh']
HALF = np.array([[-2.5, -1.5, -0.5, 0.5], [1.5, 2.5, 0.3, -0.7]], np.float32)
CASES += [('unary_' + f, getattr(mx.sym, f)(X), {'x': np.concatenate([_x(2, 4), HALF])})
          for f in UNARY]
CASES += [('unary_' + f, getattr(mx.sym, f)(X), {'x': _x(3, 4, low=0.2, high=3.0)})
          for f in POSITIVE]
CASES += [('unary_' + f, getattr(mx.sym, f)(X), {'x': _x(3, 4, low=-0.9, high=0.9)})
          for f in UNIT]
CASES += [('unary_arccosh', mx.sym.arccosh(X), {'x': _x(3, 4, low=1.1, high=3.0)})]


@pytest.mark.parametrize('case', CASES, ids=[c[0] for c in CASES])
def test_tensor_converter(case):
    _, sym, inputs = case
    check(sym, inputs)
