"""``_contrib_round_ste``, ``_contrib_sign_ste`` and ``_contrib_gradientmultiplier``
(ops/ste.py) against NumPy references. MXNet 1.9.1's values are golden cases splitidx_*
(tests/golden/graphs_compute_split_index.py)."""
import numpy as np

import symgraph as mx
from _refs import given
from harness import case_tests, OpCase


def _ones_grad(inputs, outputs, out_grads):
    return [out_grads[0]]


def _round_half_away(x):
    return np.where(x >= 0, np.floor(x + 0.5), -np.floor(-x + 0.5))


_H = [[-1.5, -0.5, 0.5, 0.0], [1.5, 2.5, 0.2, -0.7], [3.49, -2.51, 7.0, -0.0]]


CASES = [
    OpCase('_contrib_round_ste', {}, [(3, 4)], inputs=given(_H), ref=_round_half_away,
           grad_ref=_ones_grad),
    OpCase('_contrib_round_ste', {}, [(2, 5)], ref=_round_half_away, grad_ref=_ones_grad),
    OpCase('_contrib_sign_ste', {}, [(3, 4)], inputs=given(_H), ref=np.sign,
           grad_ref=_ones_grad),
    OpCase('_contrib_gradientmultiplier', {'scalar': -2.5}, [(3, 4)], ref=lambda x: x,
           grad_ref=lambda i, o, g: [g[0] * -2.5]),
    OpCase('_contrib_gradientmultiplier', {'scalar': '0.5', 'is_int': 'False'}, [(2, 3)],
           ref=lambda x: x, grad_ref=lambda i, o, g: [g[0] * 0.5]),
    OpCase('_contrib_gradientmultiplier', {'scalar': 2}, [(2, 3)], dtypes=('int32',),
           inputs=given([[-1, 0, 3], [4, -5, 6]]), ref=lambda x: x, grad=()),
]


test_forward, test_gradient = case_tests(CASES)


def test_gradient_multiplier_through_the_executor():
    x = mx.sym.var('x')
    y = mx.sym.contrib.gradientmultiplier(x, scalar=-1.0) * 3
    ex = y.simple_bind(mx.cpu(), x=(2, 2))
    ex.forward(is_train=True, x=mx.nd.ones((2, 2)))
    ex.backward(mx.nd.ones((2, 2)))
    np.testing.assert_array_equal(ex.grad_dict['x'].asnumpy(), -3 * np.ones((2, 2)))
