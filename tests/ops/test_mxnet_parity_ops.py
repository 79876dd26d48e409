"""Operator behaviours MXNet 1.9.1's own unit tests (test_operator.py, test_ndarray.py) rely
on, where symgraph differed (issue 29). MXNet-made values come from
tests/golden/make_mxnet_parity_opA.py."""
import json
import os

import numpy as np
import pytest

import symgraph as mx

GOLDEN = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'golden',
                      'data', 'mxnet_parity_opA.json')


@pytest.fixture(scope='module')
def golden():
    with open(GOLDEN) as f:
        return json.load(f)


def _nan(values):
    return np.array([np.nan if v is None else v for v in values], np.float32)


def test_relu_gradient_passes_nan_through(golden):
    case = golden['relu_nan_grad']
    x = mx.nd.array(_nan(case['x']))
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.relu(x)
    y.backward()
    want = case['cases']['relu']
    np.testing.assert_array_equal(y.asnumpy(), _nan(want['out']))
    np.testing.assert_array_equal(x.grad.asnumpy(), _nan(want['grad']))


def test_relu_gradient_in_a_bound_graph_passes_nan_through(golden):
    case = golden['relu_nan_grad']
    data = mx.sym.Variable('data')
    exe = mx.sym.relu(data).simple_bind(mx.cpu(), data=(len(case['x']),))
    exe.arg_dict['data'][:] = _nan(case['x'])
    exe.forward(is_train=True)
    exe.backward(mx.nd.ones((len(case['x']),)))
    np.testing.assert_array_equal(exe.grad_dict['data'].asnumpy(),
                                  _nan(case['cases']['relu']['grad']))


def test_broadcast_like_refuses_empty_axes():
    lhs, rhs = mx.nd.ones((1, 2, 1, 3)), mx.nd.ones((5, 6, 7, 8))
    with pytest.raises(mx.MXNetError, match='lhs_axes must name one axis'):
        mx.nd.broadcast_like(lhs, rhs, lhs_axes=(), rhs_axes=())
    assert mx.nd.broadcast_like(lhs, rhs, lhs_axes=(0, 2), rhs_axes=(1, 3)).shape == (6, 2, 8, 3)


@pytest.mark.parametrize('dtype', ['int32', 'float32'])
def test_mod_gradients_with_zero_divisors(golden, dtype):
    case = golden['mod_grad']
    want = case['cases'][dtype]
    a, b = mx.sym.Variable('a'), mx.sym.Variable('b')
    c = mx.sym.cast(a, dtype=dtype) % mx.sym.cast(b, dtype=dtype)
    ga, gb = mx.nd.empty((2, 3)), mx.nd.empty((2, 3))
    exe = c.bind(mx.cpu(), args={'a': mx.nd.array(case['a']), 'b': mx.nd.array(case['b'])},
                 args_grad=[ga, gb])
    exe.forward(is_train=True)
    exe.backward([mx.nd.ones((2, 3)) * 0.5])
    np.testing.assert_array_equal(exe.outputs[0].asnumpy().ravel(), _nan(want['out']))
    np.testing.assert_array_equal(ga.asnumpy().ravel(), _nan(want['grad_a']))
    np.testing.assert_array_equal(gb.asnumpy().ravel(), _nan(want['grad_b']))


def test_arange_casts_start_and_step_to_an_integer_dtype_first(golden):
    for args, repeat, dtype, values in golden['arange']:
        got = mx.nd.arange(*args, repeat=repeat, dtype=dtype)
        assert got.dtype == np.dtype(dtype), (args, dtype)
        np.testing.assert_array_equal(got.asnumpy(), np.array(values, dtype=dtype),
                                      err_msg=str((args, repeat, dtype)))


@pytest.mark.parametrize('op,shape', [('depth_to_space', (1, 4, 0, 3)),
                                      ('depth_to_space', (1, 0, 2, 3)),
                                      ('space_to_depth', (1, 0, 2, 2)),
                                      ('space_to_depth', (0, 1, 2, 2))])
def test_block_rearrangements_refuse_zero_size_data(op, shape):
    with mx.np_shape():
        data = mx.nd.zeros(shape)
    with pytest.raises(mx.MXNetError, match='dimension of size 0'):
        getattr(mx.nd, op)(data, 2)
    ok = mx.nd.array(np.arange(16.0).reshape(1, 4, 2, 2))
    np.testing.assert_array_equal(
        mx.nd.space_to_depth(mx.nd.depth_to_space(ok, 2), 2).asnumpy(), ok.asnumpy())


def test_index_array_of_a_scalar_is_empty():
    with mx.np_shape():
        got = mx.nd.contrib.index_array(mx.nd.ones(()))
    assert got.shape == (0,) and got.dtype == np.int64
    got = mx.nd.contrib.index_array(mx.nd.ones((2, 3)), axes=(1,))
    np.testing.assert_array_equal(got.asnumpy()[..., 0], np.indices((2, 3))[1])


def test_gather_nd_out_of_bounds_is_an_index_error():
    data = mx.nd.array([[0, 1, 2], [3, 4, 5]])
    for bad in ([[0, 1, 0], [0, 1, 3]], [[0, 1, 0], [0, 1, -5]]):
        with pytest.raises(IndexError, match='out of bounds for axis 1 with size 3'):
            mx.nd.gather_nd(data, mx.nd.array(bad)).asnumpy()
    wrapped = mx.nd.gather_nd(data, mx.nd.array([[0, 1, -1], [0, 1, -2]]))
    np.testing.assert_array_equal(wrapped.asnumpy(), [0, 4, 4])
