"""mx.test_utils as MXNet 1.9.1 has it (each case passes or fails there the same way):
tolerances by dtype, broadcasting comparisons, NDArray results, the helpers ported test
scripts call."""
import numpy as np
import pytest

import symgraph as mx
from symgraph import test_utils as tu


def test_tolerances_follow_the_dtypes():
    a32 = np.ones(3, np.float32)
    tu.assert_almost_equal(a32, a32 * (1 + 5e-5))                    # float32: rtol 1e-4
    tu.assert_almost_equal(np.zeros(2, 'f'), np.full(2, 5e-4, 'f'))  # float32: atol 1e-3
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(np.ones(3), np.ones(3) * (1 + 5e-5))   # float64: 1e-5
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(np.array([100000]), np.array([100001]))  # integers: exact
    tu.assert_almost_equal(a32, a32 * 1.005, rtol={np.dtype('float32'): 1e-2})
    assert tu.get_tols(np.ones(1, np.float16), np.ones(1), None, None) == (1e-2, 1e-1)
    assert tu.get_rtol(None, np.float32) == 1e-4 and tu.get_atol(0.5) == 0.5


def test_comparisons_broadcast_unless_told_not_to():
    tu.assert_almost_equal(mx.nd.array([3.0]), np.sum(np.array([1., 2.])))
    tu.assert_almost_equal(np.ones((2, 2)), np.ones(2))
    with pytest.raises(AssertionError, match='shape mismatch'):
        tu.assert_almost_equal(np.ones((2, 2)), np.ones(2), use_broadcast=False)
    assert tu.almost_equal(np.array([1.0, np.nan]), np.array([1.0, np.nan]), equal_nan=True)
    tu.assert_almost_equal_ignore_nan(np.array([1.0, np.nan]), np.array([1.0, 5.0]))


def test_check_helpers_return_ndarrays_and_take_mxnet_arguments():
    x = mx.sym.var('x')
    outs = tu.check_symbolic_forward(mx.sym.sin(x), [np.array([np.pi, .5])],
                                     [np.sin([np.pi, .5])])
    assert isinstance(outs[0], mx.nd.NDArray)
    grads = tu.check_symbolic_backward(mx.sym.sin(x), [[np.pi / 2, .5]], [np.ones(2)],
                                       [np.cos([np.pi / 2, .5])])
    assert isinstance(grads['x'], mx.nd.NDArray)
    w = mx.sym.var('w')
    tu.check_symbolic_backward(x * w, [np.ones(2), np.full(2, 3.0)], [np.ones(2)],
                               {'x': np.full(2, 3.0)}, grad_req=['write', 'null'])
    tu.check_symbolic_forward(x * 2, [np.arange(3, dtype=np.int32)], [np.arange(3) * 2],
                              dtype='asnumpy')
    tu.check_numeric_gradient(mx.sym.square(x), [[.5, -.5, 1.]], dtype=np.float16)
    tu.check_numeric_gradient(mx.sym.square(x), [[.5, -.5, 1.]])


def test_helpers_ported_scripts_call():
    np.random.seed(0)
    assert all(1 <= d <= 4 for d in tu.rand_shape_2d(4, 4))
    assert len(tu.rand_shape_3d()) == 3 and len(tu.rand_shape_nd(5, 2)) == 5
    d = np.arange(24.).reshape(2, 3, 4)
    np.testing.assert_array_equal(tu.np_reduce(d, (0, 2), True, np.sum),
                                  d.sum(axis=(0, 2), keepdims=True))
    np.testing.assert_array_equal(tu.simple_forward(mx.sym.var('x') * 2, x=np.ones(2)), [2, 2])
    tu.assert_exception(lambda: 1 / 0, ZeroDivisionError)
    with pytest.raises(AssertionError):
        tu.assert_exception(lambda: 1, ZeroDivisionError)
    assert tu.random_arrays(()).shape == () and tu.random_arrays((2, 3)).dtype == np.float32
    np.random.seed(0)
    r = tu.rand_ndarray((2,))
    assert r.dtype == np.float32 and abs(float(r.asnumpy()[0]) - 1.7640524) < 1e-6
    c = tu.rand_ndarray((4, 5), 'csr', density=0.5)
    assert c.stype == 'csr' and c.shape == (4, 5) and (c.data.asnumpy() > 0).all()
    ex = mx.sym.var('x') * 1
    exe = ex.simple_bind(mx.cpu(), x=(3,))
    exe.arg_dict['x'][:] = 1
    assert tu.numeric_grad(exe, {'x': exe.arg_dict['x']})['x'] == pytest.approx([1, 1, 1],
                                                                                rel=1e-3)


def test_set_default_context_is_global():
    try:
        tu.set_default_context(mx.cpu(1))
        assert mx.nd.zeros(1).context == mx.cpu(1) and mx.current_context() == mx.cpu(1)
        with mx.cpu(2):
            assert mx.nd.zeros(1).context == mx.cpu(2)
    finally:
        tu.set_default_context(None)
    assert mx.current_context() == mx.cpu(0)


def test_a_numpy_array_for_an_input_is_named_not_taken_for_a_parameter():
    w = mx.nd.ones(2)
    with pytest.raises(TypeError, match="input 'weight' must be an NDArray, got ndarray"):
        mx.nd.sgd_update(w.asnumpy(), w, lr=.1)
