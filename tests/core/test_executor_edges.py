"""Executor edge cases found against MXNet 1.9.1: loss outputs that are also used
elsewhere, gradient arrays of the wrong dtype, names that are not inputs."""
import numpy as np
import pytest

import symgraph as mx
from symgraph.base import BindError


def _softmax_grads(net, x, lab):
    exe = net.simple_bind(mx.cpu(), x=x.shape, lab=lab.shape)
    exe.forward(is_train=True, x=x, lab=lab)
    exe.backward()
    return exe.grad_dict['x'].asnumpy()


@pytest.mark.parametrize('extra', ['blockgrad', 'twice', 'log'])
def test_a_loss_output_also_used_elsewhere_keeps_its_own_gradient(extra):
    """A loss layer makes its own head gradient, so it takes none from backward's list;
    listing it again, or feeding a BlockGrad from it, used to crash backward for good
    (None + array in the generated code)."""
    x, lab = mx.sym.var('x'), mx.sym.var('lab')
    so = mx.sym.SoftmaxOutput(x, lab, name='so')
    rng = np.random.RandomState(0)
    xv = rng.randn(2, 3).astype(np.float32)
    lv = np.array([0, 2], np.float32)
    want = _softmax_grads(so, xv, lv)
    other = {'blockgrad': mx.sym.BlockGrad(so * 1), 'twice': so,
             'log': mx.sym.BlockGrad(mx.sym.log(so))}[extra]
    group = mx.sym.Group([so, other])
    for _ in range(2):       # and the executor stays usable
        np.testing.assert_allclose(_softmax_grads(group, xv, lv), want, rtol=1e-6)


def test_makeloss_listed_twice():
    x = mx.sym.var('x')
    ml = mx.sym.MakeLoss(mx.sym.sum(x * x))
    exe = mx.sym.Group([ml, ml]).simple_bind(mx.cpu(), x=(3,))
    exe.forward(is_train=True, x=np.array([1.0, 2.0, 3.0]))
    exe.backward()
    np.testing.assert_allclose(exe.grad_dict['x'].asnumpy(), [2, 4, 6])


def test_a_gradient_array_of_another_dtype_is_refused():
    x = mx.sym.var('x')
    with pytest.raises(BindError, match="gradient array of 'x' has dtype int32 but the "
                                        "argument has dtype float32"):
        (x * 2).bind(mx.cpu(), {'x': mx.nd.ones(3)},
                     args_grad={'x': mx.nd.zeros(3, dtype='int32')})
    exe = (x * 2).bind(mx.cpu(), {'x': mx.nd.ones(3)}, args_grad={'x': mx.nd.zeros(3)})
    exe.forward(is_train=True)
    exe.backward(mx.nd.ones(3) * 0.7)
    np.testing.assert_allclose(exe.grad_dict['x'].asnumpy(), [1.4] * 3, rtol=1e-6)


def test_names_that_are_not_inputs_are_ignored_with_a_warning():
    """MXNet ignores them silently; a ported line giving a label shape to a symbol without
    a label keeps working, and a typo in grad_req is pointed out."""
    net = mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=2, name='fc')
    with pytest.warns(UserWarning, match=r"\['softmax_label'\] are not inputs"):
        exe = net.simple_bind(mx.cpu(), data=(4, 3), softmax_label=(4,))
    assert exe.arg_dict['data'].shape == (4, 3)
    with pytest.warns(UserWarning, match=r"grad_req names \['fc_wieght'\]"):
        exe = net.simple_bind(mx.cpu(), grad_req={'fc_wieght': 'write', 'fc_bias': 'write'},
                              data=(4, 3))
    assert exe.grad_dict['fc_weight'] is None and exe.grad_dict['fc_bias'] is not None
