"""Contrib optimizers: GroupAdaGrad (as MXNet 1.9.1's ``mx.optimizer.contrib``) and AdamW.

AdamW is not an optimizer class of MXNet 1.9.1 (which has only the
``mx.nd.contrib.adamw_update`` operator); it is registered here as ``'adamw'`` and follows
MXNet 2.0's ``AdamW``: the bias-corrected rate is the operator's ``eta`` (``lr=1``), so::

    eta = learning_rate * sqrt(1 - beta2**t) / (1 - beta1**t)      (correct_bias=True)
    m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g**2
    w -= eta * (m / (sqrt(v) + epsilon) + wd * w)

with ``g = clip(rescale_grad * grad, clip_gradient)``.
"""
import math

import numpy

from .. import ndarray as nd
from ..ndarray import zeros
from .optimizer import Optimizer, register, _check_arrays
from ..base import ArgumentError

__all__ = ['GroupAdaGrad', 'AdamW']


@register
class GroupAdaGrad(Optimizer):
    """AdaGrad with one learning rate per row (2-D weights)::

        grad = clip(grad * rescale_grad, clip_gradient)
        history += mean(square(grad), axis=1, keepdims=True)
        div = grad / sqrt(history + float_stable_eps)
        weight -= div * lr

    Weight decay is not supported.

    Parameters
    ----------
    eps : float, optional
        Added to the history under the square root.
    **kwargs
        The parameters of :class:`.Optimizer`.
    """

    def __init__(self, eps=1e-5, **kwargs):
        super(GroupAdaGrad, self).__init__(**kwargs)
        self.float_stable_eps = eps

    def create_state(self, index, weight):
        if len(weight.shape) != 2:
            raise ArgumentError('GroupAdaGrad updates 2-D weights; index %r has shape %s'
                                % (index, weight.shape))
        return zeros((weight.shape[0], 1), weight.context)

    def update(self, index, weight, grad, state):
        _check_arrays(weight, grad)
        self._update_count(index)
        lr = self._get_lr(index)
        wd = self._get_wd(index)
        if wd != 0:
            raise ArgumentError('Weight decay is not supported for GroupAdaGrad (index %r has '
                                'wd=%g)' % (index, wd))
        grad = grad * self.rescale_grad
        if self.clip_gradient is not None:
            grad = nd.clip(grad, -self.clip_gradient, self.clip_gradient)
        state[:] += nd.mean(nd.square(grad), axis=1, keepdims=True)
        div = lr * grad / nd.sqrt(state + self.float_stable_eps)
        weight[:] -= div


@register
class AdamW(Optimizer):
    """AdamW (Loshchilov & Hutter, decoupled weight decay) on ``contrib.adamw_update``.

    Parameters
    ----------
    learning_rate : float, optional
        The learning rate.
    beta1, beta2 : float, optional
        Exponential decay rates of the moment estimates.
    epsilon : float, optional
        Small value to avoid division by 0.
    correct_bias : bool, optional
        Scale the rate by ``sqrt(1 - beta2**t) / (1 - beta1**t)``.
    **kwargs
        The parameters of :class:`.Optimizer` (``multi_precision`` uses
        ``contrib.mp_adamw_update``).
    """

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-6,
                 correct_bias=True, **kwargs):
        super(AdamW, self).__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.correct_bias = correct_bias

    def create_state(self, index, weight):
        return (zeros(weight.shape, weight.context, dtype=weight.dtype),  # mean
                zeros(weight.shape, weight.context, dtype=weight.dtype))  # variance

    def _update_impl(self, index, weight, grad, state, multi_precision):
        _check_arrays(weight, grad)
        self._update_count(index)
        lr = self._get_lr(index)
        wd = self._get_wd(index)
        t = self._index_update_count[index]
        if self.correct_bias:
            lr *= math.sqrt(1. - self.beta2**t) / (1. - self.beta1**t)
        kwargs = {'beta1': self.beta1, 'beta2': self.beta2, 'epsilon': self.epsilon}
        if self.clip_gradient:
            kwargs['clip_gradient'] = self.clip_gradient
        rescale = nd.full((1,), self.rescale_grad, ctx=weight.context)
        if multi_precision:
            weight32, (mean, var) = state
            nd.contrib.mp_adamw_update(weight, grad, mean, var, weight32, rescale,
                                       out=weight, lr=1, wd=wd, eta=lr, **kwargs)
        else:
            mean, var = state
            nd.contrib.adamw_update(weight, grad, mean, var, rescale, out=weight, lr=1,
                                    wd=wd, eta=lr, **kwargs)

    def update(self, index, weight, grad, state):
        self._update_impl(index, weight, grad, state, False)

    def update_multi_precision(self, index, weight, grad, state):
        self._update_impl(index, weight, grad, state,
                          self.multi_precision and weight.dtype == numpy.float16)
