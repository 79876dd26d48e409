"""Imperative calls seen before skip parameter parsing and shape/type inference
(ndarray._SEEN): the key holds everything those checks read, so a repeated call gives the
same results and a call that differs in any of them is checked again."""
import numpy as np
import pytest

import symgraph as mx
from symgraph.base import SymgraphError
from symgraph.ndarray import ndarray as nd_impl


@pytest.fixture(autouse=True)
def empty_cache():
    nd_impl._SEEN.clear()
    yield
    nd_impl._SEEN.clear()


def test_repeated_call_is_cached_and_equal():
    a = mx.nd.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    mul = mx.nd._internal._mul_scalar      # (``a * 1.5`` takes NDArray._scalar_op's path)
    first = mul(a, scalar=1.5).asnumpy()
    assert len(nd_impl._SEEN) == 1
    second = mul(a, scalar=1.5)
    assert len(nd_impl._SEEN) == 1
    np.testing.assert_array_equal(second.asnumpy(), first)
    # a new array each time, never a view of the input (as MXNet)
    b = mx.nd.Flatten(a)
    c = mx.nd.Flatten(a)
    assert not np.shares_memory(b.asnumpy(), a.asnumpy()) and not np.shares_memory(
        c._data, a._data)


def test_other_parameters_shapes_dtypes_are_separate_entries():
    a = mx.nd.ones((2, 3))
    mul = mx.nd._internal._mul_scalar
    np.testing.assert_array_equal(mul(a, scalar=2).asnumpy(), 2)
    np.testing.assert_array_equal(mul(a, scalar=3).asnumpy(), 3)
    np.testing.assert_array_equal(mul(mx.nd.ones((4,)), scalar=2).asnumpy(), np.full(4, 2))
    d = mul(mx.nd.ones((2, 3), dtype='float64'), scalar=2)
    assert d.dtype == np.float64
    assert mx.nd.sum(a, axis=0).shape == (3,)
    assert mx.nd.sum(a, axis=1).shape == (2,)
    assert mx.nd.sum(a, axis=0, keepdims=True).shape == (1, 3)
    assert len(nd_impl._SEEN) >= 6
    # equal parameters that differ (0.0 and -0.0): MXNet's mod keeps the sign of a zero
    v = mx.nd.array([-1.0, 1.0])
    plus = mx.nd._internal._rmod_scalar(v, scalar=0.0).asnumpy()
    minus = mx.nd._internal._rmod_scalar(v, scalar=-0.0).asnumpy()
    assert np.signbit(plus).tolist() == [False, False]
    assert np.signbit(minus).tolist() == [False, True]


def test_a_bad_call_after_a_good_one_is_still_refused():
    a, b = mx.nd.ones((2, 3)), mx.nd.ones((2, 3))
    mx.nd.elemwise_add(a, b)
    with pytest.raises(SymgraphError, match='elemwise_add'):
        mx.nd.elemwise_add(a, mx.nd.ones((3, 2)))
    with pytest.raises(SymgraphError):
        mx.nd.elemwise_add(a, mx.nd.ones((2, 3), dtype='float64'))
    np.testing.assert_array_equal(mx.nd.elemwise_add(a, b).asnumpy(), 2)


def test_out_and_calls_without_inputs_are_not_cached():
    a = mx.nd.ones((2, 2))
    o = mx.nd.zeros((2, 2))
    mx.nd.elemwise_add(a, a, out=o)
    mx.nd.zeros((2, 2))
    assert not nd_impl._SEEN
    np.testing.assert_array_equal(o.asnumpy(), 2)


@pytest.mark.parametrize('dtype', ['float16', 'float32', 'float64', 'int32'])
@pytest.mark.parametrize('op', ['__iadd__', '__isub__', '__imul__'])
def test_in_place_arithmetic_equals_the_operator_and_keeps_views(dtype, op):
    """``a -= b`` on same-shape float arrays runs the ufunc into ``a`` (no new array):
    the operator's values bit for bit, the same object, views of ``a`` see it."""
    rng = np.random.RandomState(1)
    a0 = (rng.randn(4, 5) * 10).astype(dtype)
    b0 = (rng.randn(4, 5) * 10).astype(dtype)
    a, b = mx.nd.array(a0, dtype=dtype), mx.nd.array(b0, dtype=dtype)
    want = {'__iadd__': a + b, '__isub__': a - b, '__imul__': a * b}[op].asnumpy()
    view = a[1:3]
    got = getattr(a, op)(b)
    assert got is a and a.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(a.asnumpy(), want)
    np.testing.assert_array_equal(view.asnumpy(), want[1:3])
    # a broadcast operand still goes through the operator (and its shape check)
    c = mx.nd.array(a0[:1], dtype=dtype)
    getattr(c, op)(mx.nd.array(b0[:1], dtype=dtype))
    with pytest.raises(SymgraphError):
        getattr(c, op)(mx.nd.array(b0, dtype=dtype))
