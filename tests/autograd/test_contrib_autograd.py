"""mx.contrib.autograd: MXNet's first autograd API (grad_and_loss, train_section, ...)."""
import numpy as np
import pytest

import symgraph as mx
from symgraph.contrib import autograd as cag


def test_reachable_as_mx_contrib_autograd():
    assert mx.contrib.autograd is cag


def test_grad_and_loss_matches_analytic_gradients():
    x = mx.nd.array(np.linspace(-1, 1, 6).reshape(2, 3))
    y = mx.nd.array(np.arange(6.0).reshape(2, 3))
    grads, out = cag.grad_and_loss(lambda a, b: a * b + mx.nd.exp(a))(x, y)
    np.testing.assert_allclose(out.asnumpy(), x.asnumpy() * y.asnumpy() + np.exp(x.asnumpy()),
                               rtol=1e-6)
    np.testing.assert_allclose(grads[0].asnumpy(), y.asnumpy() + np.exp(x.asnumpy()),
                               rtol=1e-6)
    np.testing.assert_allclose(grads[1].asnumpy(), x.asnumpy(), rtol=1e-6)


def test_grad_with_argnum_skips_other_arguments():
    def f(a, b, mode):
        return a + b if mode else a * b
    a, b = mx.nd.array([1.0, 2.0]), mx.nd.array([3.0, 5.0])
    ga, gb = cag.grad(f, argnum=[0, 1])(a, b, False)
    assert ga.asnumpy().tolist() == [3.0, 5.0]
    assert gb.asnumpy().tolist() == [1.0, 2.0]
    (only,) = cag.grad(f, argnum=1)(a, b, True)
    assert only.asnumpy().tolist() == [1.0, 1.0]


def test_grad_and_loss_refuses_a_non_array_argument():
    with pytest.raises(TypeError, match='argument 0'):
        cag.grad_and_loss(lambda a: a, argnum=0)(3.0)


def test_sections_set_training_and_recording_and_restore_them():
    assert not mx.autograd.is_recording() and not mx.autograd.is_training()
    with cag.train_section():
        assert mx.autograd.is_recording() and mx.autograd.is_training()
        with cag.test_section():
            assert not mx.autograd.is_recording() and not mx.autograd.is_training()
        assert mx.autograd.is_recording() and mx.autograd.is_training()
    assert not mx.autograd.is_recording() and not mx.autograd.is_training()
    prev = cag.set_is_training(True)
    try:
        assert prev is False and mx.autograd.is_recording() and mx.autograd.is_training()
    finally:
        cag.set_is_training(False)


def test_backward_with_none_and_given_head_gradients():
    x = mx.nd.ones((3, 5))
    dx = mx.nd.zeros_like(x)
    cag.mark_variables([x], [dx])
    with cag.train_section():
        a, b, c = mx.nd.split(x, axis=0, num_outputs=3, squeeze_axis=True)
        cag.backward([a, b, c], [None, mx.nd.array([1, 2, 3, 4, 5]),
                                 mx.nd.array([5, 4, 3, 2, 1])])
    np.testing.assert_array_equal(dx.asnumpy(), [[1] * 5, [1, 2, 3, 4, 5], [5, 4, 3, 2, 1]])


def test_backward_refuses_a_bare_array_and_mismatched_head_gradients():
    x = mx.nd.ones((2,))
    cag.mark_variables([x], [mx.nd.zeros((2,))])
    with cag.train_section():
        y = x * 2
    with pytest.raises(TypeError, match='list or tuple'):
        cag.backward(y)
    with pytest.raises(TypeError, match='1 outputs but 2 out_grads'):
        cag.backward([y], [None, None])


def test_grad_add_accumulates_and_second_backward_fails_without_retain():
    x = mx.nd.ones((2, 2))
    dx = mx.nd.zeros((2, 2))
    cag.mark_variables([x], [dx], grad_reqs='add')
    with cag.train_section():
        y = x * 3
        y.backward(retain_graph=True)
        y.backward()
    assert (dx.asnumpy() == 6).all()
    with cag.train_section():
        y = x + 1
    cag.compute_gradient([y])
    assert (dx.asnumpy() == 7).all()
    with pytest.raises(Exception):
        cag.compute_gradient([y])
