"""Optimizers with adaptive per-element rates: Adam, AdaGrad, AdaDelta, RMSProp, Ftrl,
Adamax, Nadam, FTML, LAMB, and the Test optimizer.

Adam, RMSProp, Ftrl, FTML and LAMB call the update operators (``adam_update``,
``rmsprop_update`` / ``rmspropalex_update``, ``ftrl_update``, ``ftml_update``,
``lamb_update_phase1/2``); AdaGrad, AdaDelta, Adamax and Nadam are NDArray arithmetic, as
in MXNet 1.9.1 (including AdaDelta scaling the caller's gradient array in place).
"""
import math
import os

import numpy

from .. import ndarray as nd
from ..ndarray import zeros
from .optimizer import Optimizer, register, _check_arrays, sum_sq

__all__ = ['Adam', 'AdaGrad', 'AdaDelta', 'RMSProp', 'Ftrl', 'Adamax', 'Nadam', 'FTML',
           'LAMB', 'Test']


@register
class Adam(Optimizer):
    """The Adam optimizer (Kingma & Ba, http://arxiv.org/abs/1412.6980)::

        rescaled_grad = clip(grad * rescale_grad + wd * weight, clip_gradient)
        m = beta1 * m + (1 - beta1) * rescaled_grad
        v = beta2 * v + (1 - beta2) * (rescaled_grad**2)
        lr = learning_rate * sqrt(1 - beta2**t) / (1 - beta1**t)
        w = w - lr * m / (sqrt(v) + epsilon)

    Parameters
    ----------
    beta1 : float, optional
        Exponential decay rate for the first moment estimates.
    beta2 : float, optional
        Exponential decay rate for the second moment estimates.
    epsilon : float, optional
        Small value to avoid division by 0.
    lazy_update : bool, optional
        No effect on dense arrays.
    **kwargs
        The parameters of :class:`.Optimizer`.
    """

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 lazy_update=True, **kwargs):
        super(Adam, self).__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.lazy_update = lazy_update

    def create_state(self, index, weight):
        return (zeros(weight.shape, weight.context, dtype=weight.dtype),  # mean
                zeros(weight.shape, weight.context, dtype=weight.dtype))  # variance

    def update(self, index, weight, grad, state):
        _check_arrays(weight, grad)
        self._update_count(index)
        lr = self._get_lr(index)
        wd = self._get_wd(index)

        t = self._index_update_count[index]
        coef1 = 1. - self.beta1**t
        coef2 = 1. - self.beta2**t
        lr *= math.sqrt(coef2) / coef1

        kwargs = {'beta1': self.beta1, 'beta2': self.beta2, 'epsilon': self.epsilon,
                  'rescale_grad': self.rescale_grad}
        if self.clip_gradient:
            kwargs['clip_gradient'] = self.clip_gradient

        mean, var = state
        nd.adam_update(weight, grad, mean, var, out=weight, lazy_update=self.lazy_update,
                       lr=lr, wd=wd, **kwargs)


@register
class AdaGrad(Optimizer):
    """AdaGrad (Duchi et al. 2011)::

        grad = clip(grad * rescale_grad, clip_gradient)
        history += square(grad)
        div = grad / sqrt(history + float_stable_eps)
        weight += (div + weight * wd) * -lr

    Parameters
    ----------
    eps : float, optional
        Added to the history under the square root. Avoids division by 0.
    **kwargs
        The parameters of :class:`.Optimizer`.
    """

    def __init__(self, eps=1e-7, **kwargs):
        super(AdaGrad, self).__init__(**kwargs)
        self.float_stable_eps = eps

    def create_state(self, index, weight):
        return zeros(weight.shape, weight.context)  # history (float32, as MXNet)

    def update(self, index, weight, grad, state):
        _check_arrays(weight, grad)
        self._update_count(index)
        lr = self._get_lr(index)
        wd = self._get_wd(index)

        history = state
        if grad.stype == 'row_sparse':
            # MXNet's sparse AdaGrad: only the gradient's rows change (lazy)
            nd.sparse.adagrad_update(weight, grad, history, out=weight, lr=lr, wd=wd,
                                     epsilon=self.float_stable_eps,
                                     rescale_grad=self.rescale_grad,
                                     clip_gradient=self.clip_gradient)
            return
        grad = grad * self.rescale_grad
        if self.clip_gradient is not None:
            grad = nd.clip(grad, -self.clip_gradient, self.clip_gradient)
        history[:] += nd.square(grad)
        div = grad / nd.sqrt(history + self.float_stable_eps)
        weight[:] += (div + weight * wd) * -lr


@register
class RMSProp(Optimizer):
    """RMSProp: Tieleman & Hinton's (``centered=False``, ``rmsprop_update``) or Graves's
    centered version (``centered=True``, ``rmspropalex_update``).

    Parameters
    ----------
    gamma1 : float, optional
        Decay factor of the moving average over past squared gradients.
    gamma2 : float, optional
        A "momentum" factor; only used if ``centered`` is True.
    epsilon : float, optional
        Small value to avoid division by 0.
    centered : bool, optional
        Use Graves's centered RMSProp.
    clip_weights : float, optional
        Clips weights into ``[-clip_weights, clip_weights]``.
    **kwargs
        The parameters of :class:`.Optimizer`.
    """

    def __init__(self, learning_rate=0.001, gamma1=0.9, gamma2=0.9,
                 epsilon=1e-8, centered=False, clip_weights=None, **kwargs):
        super(RMSProp, self).__init__(learning_rate=learning_rate, **kwargs)
        self.gamma1 = gamma1
        self.gamma2 = gamma2
        self.centered = centered
        self.epsilon = epsilon
        self.clip_weights = clip_weights

    def create_state(self, index, weight):
        if self.centered:
            return (zeros(weight.shape, weight.context),   # n
                    zeros(weight.shape, weight.context),   # g
                    zeros(weight.shape, weight.context))   # delta
        return (zeros(weight.shape, weight.context),)      # n

    def update(self, index, weight, grad, state):
        _check_arrays(weight, grad)
        self._update_count(index)
        lr = self._get_lr(index)
        wd = self._get_wd(index)

        kwargs = {'gamma1': self.gamma1, 'epsilon': self.epsilon,
                  'rescale_grad': self.rescale_grad}
        if self.centered:
            kwargs['gamma2'] = self.gamma2
        if self.clip_gradient:
            kwargs['clip_gradient'] = self.clip_gradient
        if self.clip_weights:
            kwargs['clip_weights'] = self.clip_weights

        if not self.centered:
            (n, ) = state
            nd.rmsprop_update(weight, grad, n, out=weight, lr=lr, wd=wd, **kwargs)
        else:
            n, g, delta = state
            nd.rmspropalex_update(weight, grad, n, g, delta, out=weight, lr=lr, wd=wd,
                                  **kwargs)


@register
class AdaDelta(Optimizer):
    """AdaDelta (Zeiler 2012)::

        grad = clip(grad * rescale_grad, clip_gradient)
        acc_grad = rho * acc_grad + (1. - rho) * grad * grad
        delta = sqrt(acc_delta + epsilon) / sqrt(acc_grad + epsilon) * grad
        acc_delta = rho * acc_delta + (1. - rho) * delta * delta
        weight -= (delta + wd * weight)

    As in MXNet 1.9.1, ``grad *= rescale_grad`` scales the gradient array passed in.

    Parameters
    ----------
    rho : float
        Decay rate for both squared gradients and delta.
    epsilon : float
        Small value to avoid division by 0.
    **kwargs
        The parameters of :class:`.Optimizer`.
    """

    def __init__(self, rho=0.90, epsilon=1e-5, **kwargs):
        super(AdaDelta, self).__init__(**kwargs)
        self.rho = rho
        self.epsilon = epsilon

    def create_state(self, index, weight):
        return (zeros(weight.shape, weight.context),  # accumulated g
                zeros(weight.shape, weight.context))  # accumulated delta

    def update(self, index, weight, grad, state):
        _check_arrays(weight, grad)
        wd = self._get_wd(index)
        self._update_count(index)

        grad *= self.rescale_grad
        if self.clip_gradient is not None:
            grad = nd.clip(grad, - self.clip_gradient, self.clip_gradient)

        acc_g, acc_delta = state
        acc_g[:] *= self.rho
        acc_g[:] += (1. - self.rho) * grad * grad
        current_delta = nd.sqrt(acc_delta + self.epsilon) / nd.sqrt(acc_g + self.epsilon) \
            * grad
        acc_delta[:] *= self.rho
        acc_delta[:] += (1. - self.rho) * current_delta * current_delta
        weight[:] -= current_delta + wd * weight


@register
class Ftrl(Optimizer):
    """The Ftrl optimizer (McMahan et al., 'Ad Click Prediction: a View from the
    Trenches')::

        rescaled_grad = clip(grad * rescale_grad, clip_gradient)
        z += rescaled_grad - (sqrt(n + rescaled_grad**2) - sqrt(n)) * weight / lr
        n += rescaled_grad**2
        w = (sign(z) * lamda1 - z) / ((beta + sqrt(n)) / lr + wd) * (abs(z) > lamda1)

    Parameters
    ----------
    lamda1 : float, optional
        L1 regularization coefficient.
    learning_rate : float, optional
        The initial learning rate.
    beta : float, optional
        Per-coordinate learning rate correlation parameter.
    **kwargs
        The parameters of :class:`.Optimizer`.
    """

    def __init__(self, lamda1=0.01, learning_rate=0.1, beta=1, **kwargs):
        super(Ftrl, self).__init__(**kwargs)
        self.lamda1 = lamda1
        self.beta = beta
        self.lr = learning_rate

    def create_state(self, index, weight):
        return (zeros(weight.shape, weight.context, stype=weight.stype),  # z
                zeros(weight.shape, weight.context, stype=weight.stype))  # n

    def update(self, index, weight, grad, state):
        _check_arrays(weight, grad)
        self._update_count(index)
        wd = self._get_wd(index)
        lr = self._get_lr(index)

        kwargs = {'lamda1': self.lamda1, 'beta': self.beta, 'rescale_grad': self.rescale_grad}
        if self.clip_gradient:
            kwargs['clip_gradient'] = self.clip_gradient

        z, n = state
        nd.ftrl_update(weight, grad, z, n, out=weight, lr=lr, wd=wd, **kwargs)


@register
class Adamax(Optimizer):
    """AdaMax, Adam with the infinity norm (http://arxiv.org/abs/1412.6980 section 7)::

        grad = clip(grad * rescale_grad + wd * weight, clip_gradient)
        m = beta1 * m_t + (1 - beta1) * grad
        u = maximum(beta2 * u, abs(grad))
        weight -= lr / (1 - beta1**t) * m / u

    Parameters
    ----------
    beta1 : float, optional
        Exponential decay rate for the first moment estimates.
    beta2 : float, optional
        Exponential decay rate for the second moment estimates.
    **kwargs
        The parameters of :class:`.Optimizer`.
    """

    def __init__(self, learning_rate=0.002, beta1=0.9, beta2=0.999, **kwargs):
        super(Adamax, self).__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2

    def create_state(self, index, weight):
        return (zeros(weight.shape, weight.context, dtype=weight.dtype),  # mean
                zeros(weight.shape, weight.context, dtype=weight.dtype))  # variance

    def update(self, index, weight, grad, state):
        _check_arrays(weight, grad)
        self._update_count(index)
        lr = self._get_lr(index)
        wd = self._get_wd(index)

        t = self._index_update_count[index]
        lr /= (1. - self.beta1**t)

        grad = grad * self.rescale_grad + wd * weight
        if self.clip_gradient is not None:
            grad = nd.clip(grad, -self.clip_gradient, self.clip_gradient)

        m_t, u_t = state
        m_t[:] *= self.beta1
        m_t[:] += (1. - self.beta1) * grad
        u_t[:] = nd.maximum(self.beta2 * u_t, nd.abs(grad))
        weight[:] -= lr * m_t / u_t


@register
class Nadam(Optimizer):
    """Nesterov Adam (http://cs229.stanford.edu/proj2015/054_report.pdf).

    Parameters
    ----------
    beta1 : float, optional
        Exponential decay rate for the first moment estimates.
    beta2 : float, optional
        Exponential decay rate for the second moment estimates.
    epsilon : float, optional
        Small value to avoid division by 0.
    schedule_decay : float, optional
        Exponential decay rate for the momentum schedule.
    **kwargs
        The parameters of :class:`.Optimizer`.
    """

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 schedule_decay=0.004, **kwargs):
        super(Nadam, self).__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.schedule_decay = schedule_decay
        self.m_schedule = 1.

    def create_state(self, index, weight):
        return (zeros(weight.shape, weight.context, dtype=weight.dtype),  # mean
                zeros(weight.shape, weight.context, dtype=weight.dtype))  # variance

    def update(self, index, weight, grad, state):
        _check_arrays(weight, grad)
        self._update_count(index)
        lr = self._get_lr(index)
        wd = self._get_wd(index)

        t = self._index_update_count[index]

        grad = grad * self.rescale_grad + wd * weight
        if self.clip_gradient is not None:
            grad = nd.clip(grad, -self.clip_gradient, self.clip_gradient)

        # warming momentum schedule
        momentum_t = self.beta1 * (1. - 0.5 * (pow(0.96, t * self.schedule_decay)))
        momentum_t_1 = self.beta1 * (1. - 0.5 * (pow(0.96, (t + 1) * self.schedule_decay)))
        self.m_schedule = self.m_schedule * momentum_t
        m_schedule_next = self.m_schedule * momentum_t_1

        m_t, v_t = state
        m_t[:] *= self.beta1
        m_t[:] += (1. - self.beta1) * grad
        v_t[:] *= self.beta2
        v_t[:] += (1. - self.beta2) * grad * grad

        grad_prime = grad / (1. - self.m_schedule)
        m_t_prime = m_t / (1. - m_schedule_next)
        v_t_prime = v_t / (1. - pow(self.beta2, t))
        m_t_bar = (1. - momentum_t) * grad_prime + momentum_t_1 * m_t_prime

        weight[:] -= lr * m_t_bar / (nd.sqrt(v_t_prime) + self.epsilon)


@register
class FTML(Optimizer):
    """FTML, Follow the Moving Leader (Zheng & Kwok 2017)::

        rescaled_grad = clip(grad * rescale_grad + wd * weight, clip_gradient)
        v = beta2 * v + (1 - beta2) * square(rescaled_grad)
        d_t = (1 - power(beta1, t)) / lr * (square_root(v / (1 - power(beta2, t))) + epsilon)
        z = beta1 * z + (1 - beta1) * rescaled_grad - (d_t - beta1 * d_(t-1)) * weight
        weight = - z / d_t

    Parameters
    ----------
    beta1 : float, optional
        0 < beta1 < 1. Generally close to 0.5.
    beta2 : float, optional
        0 < beta2 < 1. Generally close to 1.
    epsilon : float, optional
        Small value to avoid division by 0.
    **kwargs
        The parameters of :class:`.Optimizer`.
    """

    def __init__(self, beta1=0.6, beta2=0.999, epsilon=1e-8, **kwargs):
        super(FTML, self).__init__(**kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon

    def create_state(self, index, weight):
        return (zeros(weight.shape, weight.context, dtype=weight.dtype),  # d_0
                zeros(weight.shape, weight.context, dtype=weight.dtype),  # v_0
                zeros(weight.shape, weight.context, dtype=weight.dtype))  # z_0

    def update(self, index, weight, grad, state):
        _check_arrays(weight, grad)
        self._update_count(index)
        lr = self._get_lr(index)
        wd = self._get_wd(index)
        t = self._index_update_count[index]

        kwargs = {'beta1': self.beta1, 'beta2': self.beta2, 'epsilon': self.epsilon,
                  'rescale_grad': self.rescale_grad, 't': t}
        if self.clip_gradient:
            kwargs['clip_grad'] = self.clip_gradient

        prev_d, prev_v, prev_z = state
        nd.ftml_update(weight, grad, prev_d, prev_v, prev_z, out=weight, lr=lr, wd=wd,
                       **kwargs)


@register
class LAMB(Optimizer):
    """LAMB (You et al., https://arxiv.org/abs/1904.00962): Adam's step, scaled per
    tensor by ``||weight|| / ||step||`` (``lamb_update_phase1`` and ``_phase2``).

    Parameters
    ----------
    beta1, beta2, epsilon : float, optional
        As Adam's.
    lower_bound, upper_bound : float, optional
        Bounds of the weight norm used in the ratio.
    bias_correction : bool, optional
        Divide the moments by ``1 - beta**t``.
    **kwargs
        The parameters of :class:`.Optimizer`.
    """

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-6,
                 lower_bound=None, upper_bound=None, bias_correction=True, **kwargs):
        super(LAMB, self).__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        self.bias_correction = bias_correction
        self.aggregate_num = max(1, min(45, int(os.getenv('MXNET_OPTIMIZER_AGGREGATION_SIZE',
                                                          "45"))))

    def create_state(self, index, weight):
        return (zeros(weight.shape, weight.context, dtype=weight.dtype),
                zeros(weight.shape, weight.context, dtype=weight.dtype))

    def _update_impl(self, index, weight, grad, state, multi_precision=False):
        # MXNet runs a list of indices through contrib.multi_lamb_update, whose per-tensor
        # arithmetic is that of lamb_update_phase1/2 with norms from multi_sum_sq; every
        # tensor goes through phase1/2 here
        if isinstance(index, (tuple, list)):
            for i, w, g, s in zip(index, weight, grad, state):
                self._update_one(i, w, g, s, multi_precision, True)
        else:
            self._update_one(index, weight, grad, state, multi_precision, False)

    @staticmethod
    def _norms(weight, g, multi):
        """(||weight||, ||g||) as (1,) arrays: multi_lamb_update takes them from
        multi_sum_sq (of the float16 weight under multi_precision), phase 2 from norm()."""
        if multi:
            return (nd.array([numpy.sqrt(sum_sq(weight))], ctx=weight.context),
                    nd.array([numpy.sqrt(sum_sq(g))], ctx=weight.context))
        return weight.norm(), g.norm()

    def _update_one(self, index, weight, grad, state, multi_precision, multi):
        _check_arrays(weight, grad)
        self._update_count(index)
        lr = self._get_lr(index)
        wd = self._get_wd(index)
        t = self._index_update_count[index]
        kwargs = {'beta1': self.beta1, 'beta2': self.beta2, 'epsilon': self.epsilon,
                  'bias_correction': self.bias_correction,
                  'rescale_grad': self.rescale_grad, 't': t}
        if self.clip_gradient:
            kwargs['clip_gradient'] = self.clip_gradient
        bounds = {}
        if self.lower_bound:
            bounds['lower_bound'] = self.lower_bound
        if self.upper_bound:
            bounds['upper_bound'] = self.upper_bound

        if multi_precision:
            mean, var = state[1]
            weight32 = state[0]
            g = nd.mp_lamb_update_phase1(weight, grad, mean, var, weight32, wd=wd, **kwargs)
            r_1, r_2 = self._norms(weight if multi else weight32, g, multi)
            # MXNet 1.9.1's mp_lamb_update_phase2 leaves weight32 as it was (its
            # multi_mp_lamb_update, which the Updater runs, updates it): update the master
            # copy in float32 and cast it into the weight
            nd.lamb_update_phase2(weight32, g, r_1, r_2, lr=lr, out=weight32, **bounds)
            nd.cast(weight32, dtype=weight.dtype, out=weight)
        else:
            mean, var = state
            g = nd.lamb_update_phase1(weight, grad, mean, var, wd=wd, **kwargs)
            r_1, r_2 = self._norms(weight, g, multi)
            nd.lamb_update_phase2(weight, g, r_1, r_2, lr=lr, out=weight, **bounds)

    def update(self, index, weight, grad, state):
        self._update_impl(index, weight, grad, state, multi_precision=False)

    def update_multi_precision(self, index, weight, grad, state):
        w = weight[0] if isinstance(weight, (tuple, list)) else weight
        self._update_impl(index, weight, grad, state,
                          multi_precision=self.multi_precision and w.dtype == numpy.float16)


@register
class Test(Optimizer):
    """The Test optimizer: ``weight += grad * rescale_grad``; the state copies the
    weight."""

    def __init__(self, **kwargs):
        super(Test, self).__init__(**kwargs)

    def create_state(self, index, weight):
        """A state to duplicate the weight."""
        return zeros(weight.shape, weight.context)

    def update(self, index, weight, grad, state):
        """Performs w += rescale_grad * grad."""
        weight[:] += grad * self.rescale_grad
        state[:] = weight
