"""``NDArray <op> number`` on float32/float64 CPU arrays skips the operator dispatch
(NDArray._scalar_op): its results must be the scalar operators' to the bit, in the array's
dtype, and everything else must still take the operator path."""
import numpy as np
import pytest

import symgraph as mx
from symgraph.ndarray import ndarray as nd_impl

OPS = [  # (expression, operator, reversed)
    (lambda a, s: a + s, '_plus_scalar', False),
    (lambda a, s: s + a, '_plus_scalar', False),
    (lambda a, s: a - s, '_minus_scalar', False),
    (lambda a, s: s - a, '_rminus_scalar', True),
    (lambda a, s: a * s, '_mul_scalar', False),
    (lambda a, s: s * a, '_mul_scalar', False),
    (lambda a, s: a / s, '_div_scalar', False),
    (lambda a, s: s / a, '_rdiv_scalar', True),
]
SCALARS = [0.001, 3, -0.0, 0, 1e300, float('inf'), float('nan'), 2 ** 70, -7.25]


@pytest.mark.parametrize('dtype', ['float32', 'float64'])
@pytest.mark.parametrize('k', range(len(OPS)))
def test_shortcut_matches_the_scalar_operator_bit_for_bit(dtype, k):
    expr, op, _ = OPS[k]
    x = np.array([[-2.5, -0.0, 0.0, 1.0], [3.0e-39, 7.0, np.inf, -np.inf]], dtype)
    a = mx.nd.array(x, dtype=dtype)
    fn = getattr(mx.nd._internal, op)
    with np.errstate(all='ignore'):
        for s in SCALARS:
            got = expr(a, s)
            want = fn(a, scalar=float(s))
            assert isinstance(got, mx.nd.NDArray) and got.dtype == np.dtype(dtype)
            assert got.shape == a.shape and got.context == a.context
            np.testing.assert_array_equal(got.asnumpy().view(np.uint8),
                                          want.asnumpy().view(np.uint8), err_msg=str(s))


def test_result_is_a_new_array():
    a = mx.nd.ones((3,))
    for r in (a + 0, a * 1, a - 0, a / 1):
        assert not np.shares_memory(r._data, a._data)
        r[:] = 5
    np.testing.assert_array_equal(a.asnumpy(), 1)


def test_other_operands_take_the_operator_path(monkeypatch):
    calls = []
    real = nd_impl._invoke
    monkeypatch.setattr(nd_impl, '_invoke', lambda *a: calls.append(a[0]) or real(*a))
    f32 = mx.nd.ones((2,))
    f32 * 2.0
    assert calls == []                          # the shortcut
    mx.nd.ones((2,), dtype='int32') * 2         # integer arithmetic (truncating scalar)
    mx.nd.ones((2,), dtype='float16') * 2.0
    f32 * np.float32(2)                         # a NumPy scalar
    with pytest.raises(TypeError, match='bool'):
        f32 * True                              # refused, as before the shortcut
    f32 * f32                                   # broadcasting operator
    assert calls == ['_mul_scalar', '_mul_scalar', '_mul_scalar', 'broadcast_mul']


def test_integer_arrays_keep_mxnet_semantics():
    a = mx.nd.array([7, -7], dtype='int32')
    np.testing.assert_array_equal((a * 1.5).asnumpy(), [7, -7])    # scalar truncated to 1
    np.testing.assert_array_equal((a / 2).asnumpy(), [3, -3])       # C division
