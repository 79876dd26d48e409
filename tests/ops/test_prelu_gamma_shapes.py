"""PReLU's gamma broadcasts onto data axes 0 and 1 as MXNet's expand_shape places it
(MXNet 1.9.1's test_operator.py test_prelu uses gamma of shape (N, C) with 4-D data):
forward and both gradients against NumPy, and a gamma that fits nowhere refused."""
import numpy as np
import pytest

import symgraph as mx
from symgraph.base import ShapeError
from symgraph.test_utils import check_numeric_gradient


@pytest.mark.parametrize('xshape, gshape, bshape', [
    ((3, 4), (4,), (1, 4)), ((3, 4), (3, 4), (3, 4)), ((3, 4, 4, 5), (4,), (1, 4, 1, 1)),
    ((3, 4, 4, 5), (3, 4), (3, 4, 1, 1)), ((3, 4, 4, 5), (1,), (1, 1, 1, 1))])
def test_prelu_gamma_broadcast_and_gradients(xshape, gshape, bshape):
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, xshape)
    x[np.abs(x) < 1e-3] = 0.5
    gamma = rng.uniform(0.1, 0.5, gshape)
    y = mx.sym.LeakyReLU(data=mx.sym.var('x'), gamma=mx.sym.var('gamma'), act_type='prelu')
    exe = y.bind(mx.cpu(), {'x': mx.nd.array(x, dtype='float64'),
                            'gamma': mx.nd.array(gamma, dtype='float64')},
                 args_grad={'x': mx.nd.zeros(xshape, dtype='float64'),
                            'gamma': mx.nd.zeros(gshape, dtype='float64')})
    gb = gamma.reshape(bshape)
    np.testing.assert_allclose(exe.forward(is_train=True)[0].asnumpy(),
                               np.where(x > 0, x, x * gb), rtol=1e-12)
    exe.backward(mx.nd.ones(xshape, dtype='float64'))
    np.testing.assert_allclose(exe.grad_dict['x'].asnumpy(),
                               np.where(x > 0, 1.0, np.broadcast_to(gb, xshape)), rtol=1e-12)
    axes = tuple(i for i in range(len(xshape)) if bshape[i] == 1)
    np.testing.assert_allclose(exe.grad_dict['gamma'].asnumpy(),
                               np.where(x > 0, 0, x).sum(axis=axes).reshape(gshape),
                               rtol=1e-10)
    check_numeric_gradient(y, [x, gamma], numeric_eps=1e-6, rtol=1e-4, atol=1e-6,
                           dtype=np.float64)


def test_a_gamma_that_fits_no_axis_is_refused():
    y = mx.sym.LeakyReLU(data=mx.sym.var('x'), gamma=mx.sym.var('gamma'), act_type='prelu')
    with pytest.raises(ShapeError, match='broadcast'):
        y.infer_shape(x=(3, 4, 5), gamma=(5,))
    assert y.infer_shape(x=(3, 4, 5))[0] == [(3, 4, 5), (4,)]
