"""``_contrib_BatchNormWithReLU`` (ops/norm.py): BatchNorm's reference (tests/ops/test_norm.py)
followed by relu, with the numeric gradient of that composition. No golden data: MXNet
1.9.1's CPU build has no compute for this operator without oneDNN and crashes with it."""
import numpy as np

import symgraph as mx
from harness import case_tests, OpCase
from test_norm import _bn_inputs, bn_ref, numeric_grad_of_first_output


def _relu_of(ref):
    def f(*args):
        out = ref(*args)
        if isinstance(out, list):
            return [np.maximum(out[0], 0)] + out[1:]
        return np.maximum(out, 0)
    return f


def _case(data, train, axis=1, **attrs):
    c = data[axis % len(data)]
    kw = dict(attrs, axis=axis)
    ref = _relu_of(bn_ref(axis=axis, train=train, **attrs))
    full = _relu_of(bn_ref(axis=axis, train=train, output_mean_var=True, **attrs))
    return OpCase('_contrib_BatchNormWithReLU', kw, shapes=[data, (c,), (c,), (c,), (c,)],
                  ref=ref, inputs=_bn_inputs, grad=(0, 1, 2), is_train=train,
                  grad_ref=numeric_grad_of_first_output(full, 3), rtol=1e-4, atol=1e-5,
                  id='BatchNormWithReLU[%s,train=%s]%s' % (kw, train, data))


CASES = [
    _case((4, 3, 2, 5), True, fix_gamma=False, eps=1e-5),
    _case((4, 3, 5), True),
    _case((3, 4), True, axis=-1, fix_gamma=False),
]

test_forward, test_gradient = case_tests(CASES)


def test_names_and_outputs_are_batchnorms():
    s = mx.sym.contrib.BatchNormWithReLU(mx.sym.var('x'), name='bn')
    assert s.list_arguments() == ['x', 'bn_gamma', 'bn_beta']
    assert s.list_auxiliary_states() == ['bn_moving_mean', 'bn_moving_var']
    assert s.list_outputs() == ['bn_output']
    ex = s.simple_bind(mx.cpu(), x=(4, 2, 3))
    ex.forward(is_train=True, x=mx.nd.array(np.random.RandomState(0).normal(size=(4, 2, 3))))
    out = ex.outputs[0].asnumpy()
    assert out.min() == 0 and (out == 0).mean() > 0.3      # relu of a normalised batch
