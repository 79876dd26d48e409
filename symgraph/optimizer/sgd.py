"""SGD and its relatives: SGD, ccSGD, NAG, Signum, LARS, LBSGD, DCASGD, SGLD.

Each calls the update operators (``mx.nd.sgd_mom_update``, ``nag_mom_update``,
``signum_update``, ...) where MXNet 1.9.1's optimizer calls them.

MXNet's SGD and LARS update dense arrays through the aggregated operators
``multi_sgd_update`` / ``multi_sgd_mom_update`` / ``multi_mp_sgd_*`` (and their
``preloaded_`` forms for LARS). Per element those kernels compute exactly what
``sgd_mom_update`` / ``mp_sgd_mom_update`` compute (``mom = momentum*mom - lr*wd*w -
lr*rescale_grad*g; w += mom``, with momentum and mom 0 when there is no momentum), so the
updates here go through those two operators and give MXNet's numbers; they differ from
``sgd_update``'s ``(1 - lr*wd)*w - ...`` in the last bit.
"""
import logging
import math
import os
import warnings

import numpy

from .. import ndarray as nd
from ..ndarray import zeros
from .optimizer import Optimizer, register, _as_lists, _check_arrays, sum_sq

__all__ = ['SGD', 'ccSGD', 'NAG', 'Signum', 'LARS', 'LBSGD', 'DCASGD', 'SGLD']


def _mp_state_with_warning(opt, index, weight, name):
    """``(state, weight32)`` for a float16 weight under multi_precision (the order SGD, NAG
    and LARS use), else ``create_state`` with MXNet's warning for float16."""
    if opt.multi_precision and weight.dtype == numpy.float16:
        weight_master_copy = weight.astype(numpy.float32)
        return (opt.create_state(index, weight_master_copy), weight_master_copy)
    if weight.dtype == numpy.float16 and not opt.multi_precision:
        warnings.warn("Accumulating with float16 in optimizer can lead to "
                      "poor accuracy or slow convergence. "
                      "Consider using multi_precision=True option of the "
                      "%s optimizer" % name)
    return opt.create_state(index, weight)


def _multi_sgd(weight, grad, state, lr, wd, kwargs, multi_precision):
    """One weight of MXNet's ``[preloaded_]multi_[mp_]sgd[_mom]_update``."""
    if not multi_precision:
        mom = state if 'momentum' in kwargs else zeros(weight.shape, weight.context,
                                                       dtype=weight.dtype)
        nd.sgd_mom_update(weight, grad, mom, out=weight, lr=lr, wd=wd, **kwargs)
    else:
        mom, weight32 = state
        if 'momentum' not in kwargs:
            mom = zeros(weight.shape, weight.context, dtype=numpy.float32)
        nd.mp_sgd_mom_update(weight, grad, mom, weight32, out=weight, lr=lr, wd=wd,
                             **kwargs)


def _use_mp(opt, weight):
    w = weight[0] if isinstance(weight, (tuple, list)) else weight
    return opt.multi_precision and w.dtype == numpy.float16


@register
class SGD(Optimizer):
    """The SGD optimizer with momentum and weight decay::

        rescaled_grad = lr * (rescale_grad * clip(grad, clip_gradient) + wd * weight)
        state = momentum * state + rescaled_grad
        weight = weight - state

    Parameters
    ----------
    momentum : float, optional
        The momentum value.
    lazy_update : bool, optional
        With a row_sparse gradient, update only the rows it holds (weight decay and
        momentum included), as MXNet; False updates every row.
    multi_precision : bool, optional
        Update a float32 master copy of float16 weights.
    **kwargs
        The parameters of :class:`.Optimizer`.
    """

    def __init__(self, momentum=0.0, lazy_update=True, **kwargs):
        super(SGD, self).__init__(**kwargs)
        self.momentum = momentum
        self.lazy_update = lazy_update
        self.aggregate_num = int(os.getenv('MXNET_OPTIMIZER_AGGREGATION_SIZE', "4"))

    def create_state_multi_precision(self, index, weight):
        return _mp_state_with_warning(self, index, weight, 'SGD')

    def create_state(self, index, weight):
        momentum = None
        if self.momentum != 0.0:
            momentum = zeros(weight.shape, weight.context, dtype=weight.dtype)
        return momentum

    def _update_impl(self, indices, weights, grads, states, multi_precision=False):
        indices, weights, grads, states = _as_lists(indices, weights, grads, states)
        for weight, grad in zip(weights, grads):
            _check_arrays(weight, grad)
        self._update_count(indices)
        lrs = self._get_lrs(indices)
        wds = self._get_wds(indices)

        kwargs = {'rescale_grad': self.rescale_grad}
        if self.momentum > 0:
            kwargs['momentum'] = self.momentum
        if self.clip_gradient:
            kwargs['clip_gradient'] = self.clip_gradient
        if any(g.stype == 'row_sparse' for g in grads):
            # a row_sparse gradient updates only its rows unless lazy_update=False
            kwargs['lazy_update'] = self.lazy_update
        for weight, grad, state, lr, wd in zip(weights, grads, states, lrs, wds):
            _multi_sgd(weight, grad, state, lr, wd, kwargs, multi_precision)

    def update(self, index, weight, grad, state):
        self._update_impl(index, weight, grad, state, multi_precision=False)

    def update_multi_precision(self, index, weight, grad, state):
        self._update_impl(index, weight, grad, state,
                          multi_precision=_use_mp(self, weight))


@register  # pylint: disable=invalid-name
class ccSGD(SGD):
    """[DEPRECATED] Same as `SGD`. Left here for backward compatibility."""

    def __init__(self, *args, **kwargs):
        super(ccSGD, self).__init__(*args, **kwargs)


@register
class NAG(Optimizer):
    """Nesterov accelerated gradient::

        state = momentum * state + grad + wd * weight
        weight = weight - (lr * (grad + momentum * state))

    Parameters
    ----------
    momentum : float, optional
        The momentum value.
    multi_precision : bool, optional
        Update a float32 master copy of float16 weights.
    **kwargs
        The parameters of :class:`.Optimizer`.
    """

    def __init__(self, momentum=0.0, **kwargs):
        super(NAG, self).__init__(**kwargs)
        self.momentum = momentum

    def create_state_multi_precision(self, index, weight):
        return _mp_state_with_warning(self, index, weight, 'NAG')

    def create_state(self, index, weight):
        momentum = None
        if self.momentum != 0.0:
            momentum = zeros(weight.shape, weight.context, dtype=weight.dtype)
        return momentum

    def _update_impl(self, index, weight, grad, state, multi_precision=False):
        _check_arrays(weight, grad)
        self._update_count(index)
        lr = self._get_lr(index)
        wd = self._get_wd(index)

        kwargs = {'rescale_grad': self.rescale_grad}
        if self.momentum > 0:
            kwargs['momentum'] = self.momentum
        if self.clip_gradient:
            kwargs['clip_gradient'] = self.clip_gradient

        if not multi_precision:
            if state is not None:
                nd.nag_mom_update(weight, grad, state, out=weight, lr=lr, wd=wd, **kwargs)
            else:
                nd.sgd_update(weight, grad, out=weight, lr=lr, wd=wd, **kwargs)
        else:
            if state[0] is not None:
                nd.mp_nag_mom_update(weight, grad, state[0], state[1], out=weight,
                                     lr=lr, wd=wd, **kwargs)
            else:
                nd.mp_sgd_update(weight, grad, state[1], out=weight, lr=lr, wd=wd, **kwargs)

    def update(self, index, weight, grad, state):
        self._update_impl(index, weight, grad, state, multi_precision=False)

    def update_multi_precision(self, index, weight, grad, state):
        use_multi_precision = self.multi_precision and weight.dtype == numpy.float16 \
            and isinstance(state, (tuple, list))
        self._update_impl(index, weight, grad, state, multi_precision=use_multi_precision)


@register
class Signum(Optimizer):
    r"""The Signum optimizer, which takes the sign of the gradient or momentum::

        rescaled_grad = rescale_grad * clip(grad, clip_gradient) + wd * weight
        state = momentum * state + (1-momentum)*rescaled_grad
        weight = (1 - lr * wd_lh) * weight - lr * sign(state)

    With ``momentum=0`` it is signSGD (``signsgd_update``).

    Parameters
    ----------
    momentum : float, optional
        The momentum value.
    wd_lh : float, optional
        The amount of decoupled weight decay regularization.
    **kwargs
        The parameters of :class:`.Optimizer`.
    """

    def __init__(self, learning_rate=0.01, momentum=0.9, wd_lh=0.0, **kwargs):
        super(Signum, self).__init__(learning_rate=learning_rate, **kwargs)
        self.momentum = momentum
        self.wd_lh = wd_lh

    def create_state(self, index, weight):
        momentum = None
        if self.momentum != 0.0:
            momentum = zeros(weight.shape, weight.context, dtype=weight.dtype)
        return momentum

    def _update_impl(self, index, weight, grad, state):
        _check_arrays(weight, grad)
        self._update_count(index)
        lr = self._get_lr(index)
        wd = self._get_wd(index)

        kwargs = {'rescale_grad': self.rescale_grad}
        if self.momentum > 0:
            kwargs['momentum'] = self.momentum
        if self.clip_gradient:
            kwargs['clip_gradient'] = self.clip_gradient
        if self.wd_lh:
            kwargs['wd_lh'] = self.wd_lh

        if state is not None:
            nd.signum_update(weight, grad, state, out=weight, lr=lr, wd=wd, **kwargs)
        else:
            nd.signsgd_update(weight, grad, out=weight, lr=lr, wd=wd, **kwargs)

    def update(self, index, weight, grad, state):
        self._update_impl(index, weight, grad, state)


@register
class LARS(Optimizer):
    """LARS ('Large Batch Training of Convolution Networks'): SGD with momentum whose
    learning rate is scaled per layer, except bias, beta and gamma::

        lr_layer = lr * lr_mult * eta * w_norm / (g_norm + wd * w_norm + eps)

    when both norms are positive.

    Parameters
    ----------
    momentum : float, optional
        The momentum value.
    lazy_update : bool, optional
        No effect on dense arrays.
    eta : float, optional
        LARS coefficient.
    eps : float, optional
        Added to the denominator.
    momentum_correction : bool, optional
        Scale the momentum by the change of the global learning rate.
    **kwargs
        The parameters of :class:`.Optimizer`.
    """

    def __init__(self, momentum=0.0, lazy_update=True, eta=0.001, eps=0,
                 momentum_correction=True, **kwargs):
        super(LARS, self).__init__(**kwargs)
        self.momentum = momentum
        self.momentum_correction = momentum_correction
        self.lazy_update = lazy_update
        self.aggregate_num = int(os.getenv('MXNET_OPTIMIZER_AGGREGATION_SIZE', "4"))
        self.eta = eta
        self.eps = eps
        self.skip = 0
        self.last_lr = None
        self.cur_lr = None

    def _get_lrs(self, indices):
        if self.cur_lr is not None:
            self.last_lr = self.cur_lr
        if self.lr_scheduler is not None:
            lr = self.lr_scheduler(self.num_update)
        else:
            lr = self.lr
        if self.cur_lr is None:
            self.last_lr = lr
        self.cur_lr = lr
        return self._apply_lr_mults(lr, indices)

    def set_wd_mult(self, args_wd_mult):
        self.wd_mult = {}
        for n in self.idx2name.values():
            if not n.endswith('_weight'):
                self.wd_mult[n] = 0.0
        if self.sym_info:
            attr, arg_names = self.sym_info
            for name in arg_names:
                if name in attr and '__wd_mult__' in attr[name]:
                    self.wd_mult[name] = float(attr[name]['__wd_mult__'])
        self.wd_mult.update(args_wd_mult)

    def create_state_multi_precision(self, index, weight):
        return _mp_state_with_warning(self, index, weight, 'SGD')

    def create_state(self, index, weight):
        momentum = None
        if self.momentum != 0.0:
            momentum = zeros(weight.shape, weight.context, dtype=weight.dtype)
        return momentum

    @staticmethod
    def _is_excluded(name):
        return name.endswith('gamma') or name.endswith('beta') or name.endswith('bias')

    def _update_impl(self, indices, weights, grads, states, multi_precision=False):
        indices, weights, grads, states = _as_lists(indices, weights, grads, states)
        for weight, grad in zip(weights, grads):
            _check_arrays(weight, grad)
        self._update_count(indices)
        lrs = self._get_lrs(indices)
        wds = self._get_wds(indices)

        kwargs = {'rescale_grad': self.rescale_grad}
        if self.momentum > 0:
            kwargs['momentum'] = (self.momentum * (self.cur_lr / self.last_lr)) \
                if (self.momentum_correction and self.last_lr != 0) else self.momentum
        if self.clip_gradient:
            kwargs['clip_gradient'] = self.clip_gradient

        names = [self.idx2name[i] if i in self.idx2name else str(i) for i in indices]
        lars_idx = [i for i in range(len(indices)) if not self._is_excluded(names[i])]
        no_lars_idx = [i for i in range(len(indices)) if self._is_excluded(names[i])]
        full_idx = lars_idx + no_lars_idx
        # MXNet keeps the rates in a float32 array that multi_lars scales
        new_lrs = numpy.array([lrs[i] for i in full_idx], dtype=numpy.float32)
        new_wds = numpy.array([wds[i] for i in full_idx], dtype=numpy.float32)
        new_lrs[:len(lars_idx)] = self._multi_lars(
            new_lrs[:len(lars_idx)], new_wds[:len(lars_idx)],
            [weights[i] for i in lars_idx], [grads[i] for i in lars_idx])
        for k, i in enumerate(full_idx):
            _multi_sgd(weights[i], grads[i], states[i], float(new_lrs[k]), float(new_wds[k]),
                       kwargs, multi_precision)

    def _multi_lars(self, lrs, wds, weights, grads):
        """MXNet's ``multi_sum_sq`` + ``multi_lars``: each rate times
        ``eta * w_norm / (g_norm * rescale_grad + wd * w_norm + eps)`` where both norms
        are positive (float32 arithmetic)."""
        f32 = numpy.float32
        out = lrs.copy()
        for k, (w, g) in enumerate(zip(weights, grads)):
            w_sq, g_sq = sum_sq(w), sum_sq(g)
            w_norm = numpy.sqrt(w_sq)
            if w_norm > 0 and g_sq > 0:
                out[k] = lrs[k] * f32(self.eta) * w_norm / (
                    numpy.sqrt(g_sq) * f32(self.rescale_grad) + wds[k] * w_norm
                    + f32(self.eps))
        return out

    def update(self, index, weight, grad, state):
        self._update_impl(index, weight, grad, state, multi_precision=False)

    def update_multi_precision(self, index, weight, grad, state):
        self._update_impl(index, weight, grad, state,
                          multi_precision=_use_mp(self, weight))


@register
class LBSGD(Optimizer):
    """The Large Batch SGD optimizer with momentum and weight decay (MXNet's LBSGD):
    gradients are accumulated over ``batch_scale`` calls, and the learning rate is
    warmed up by ``warmup_strategy`` ('linear', 'power2', 'sqrt' or 'lars').

    Parameters
    ----------
    momentum : float, optional
        The momentum value.
    multi_precision : bool, optional
        Update a float32 master copy of float16 weights.
    warmup_strategy : {'linear', 'power2', 'sqrt', 'lars'}
    warmup_epochs : int, default 5
    batch_scale : int, default 1
    updates_per_epoch : int, default 32
    begin_epoch : int, default 0
    num_epochs : int, default 60
    **kwargs
        The parameters of :class:`.Optimizer`.
    """

    def __init__(self, momentum=0.0, multi_precision=False, warmup_strategy='linear',
                 warmup_epochs=5, batch_scale=1, updates_per_epoch=32, begin_epoch=0,
                 num_epochs=60, **kwargs):
        super(LBSGD, self).__init__(**kwargs)
        logging.getLogger().info('Running Large-Batch SGD Algorithm')
        logging.getLogger().info(
            '(Batch_scale=%f, warmup_epochs=%d, warmup_strategy=%s, updates_per_epoch=%d)',
            batch_scale, warmup_epochs, warmup_strategy, updates_per_epoch)
        self.momentum = momentum
        self.multi_precision = multi_precision
        self.warmup_strategy = warmup_strategy
        self.warmup_epochs = warmup_epochs
        self.batch_scale = batch_scale
        self.updates_per_epoch = updates_per_epoch
        self.init_updates = begin_epoch * updates_per_epoch
        self.num_epochs = num_epochs
        self.lbmult = 1
        self.cumgrads = {}
        self.adaptive = False
        self.admult = 1

    def create_state(self, index, weight):
        momentum = None
        if self.multi_precision and weight.dtype == numpy.float16:
            weight_master_copy = nd.array(weight, ctx=weight.context, dtype=numpy.float32)
            if self.momentum != 0.0:
                momentum = zeros(weight.shape, weight.context, dtype=numpy.float32)
            return (momentum, weight_master_copy)
        if weight.dtype == numpy.float16 and not self.multi_precision:
            warnings.warn("Accumulating with float16 in optimizer can lead to "
                          "poor accuracy or slow convergence. "
                          "Consider using multi_precision=True option of the "
                          "SGD optimizer")
        if self.momentum != 0.0:
            momentum = zeros(weight.shape, weight.context, dtype=weight.dtype)
        return momentum

    def _get_lbmult(self, nup):
        """The learning rate factor of the warmup schedule after ``nup`` updates."""
        nwup = self.warmup_epochs * self.updates_per_epoch
        strategy = self.warmup_strategy
        maxmult = float(self.batch_scale)
        if nup >= nwup:
            mult = maxmult
        elif nwup <= 1:
            mult = 1.0
        elif strategy == 'linear':
            mult = 1.0 + (maxmult - 1) * nup / nwup
        elif strategy == 'power2':
            mult = 1.0 + (maxmult - 1) * (nup * nup) / (nwup * nwup)
        elif strategy == 'sqrt':
            mult = 1.0 + (maxmult - 1) * math.sqrt(float(nup) / nwup)
        else:
            mult = 1.0
        return mult

    def _get_lars(self, weight, g, wd):
        """The LARS factor of the learning rate, clipped to [0.01, 100]."""
        weight2 = self._l2norm(weight)
        grad2 = self._l2norm(g)
        lars = math.sqrt(weight2 / (grad2 + wd * weight2 + 1e-18))
        return min(max(lars, 0.01), 100)

    def _l2norm(self, v):
        """The inner product of ``v`` with itself."""
        return nd.multiply(v, v).asnumpy().sum()

    def _reset_cum_gradient(self, index):
        self.cumgrads[index]['cum_grad'] = 0

    def _get_cum_gradient(self, index):
        return self.cumgrads.get(index, {})

    def _put_cum_gradient(self, index, cgrad):
        self.cumgrads[index] = cgrad

    def _cumulate_gradient(self, grad, index):
        """Accumulate the gradient of ``index`` for the large-batch emulation."""
        cgrad = self._get_cum_gradient(index)
        if cgrad and cgrad['num_cums'] > 0:
            cum_grad = cgrad['cum_grad'] + grad
            num_cums = cgrad['num_cums'] + 1
        else:
            cum_grad = grad
            num_cums = self.init_updates + 1
        cgrad = {'cum_grad': cum_grad, 'num_cums': num_cums}
        self._put_cum_gradient(index, cgrad)
        return cgrad

    def update(self, index, weight, grad, state):
        _check_arrays(weight, grad)
        lr = self._get_lr(index)          # before the count, as MXNet's LBSGD
        wd = self._get_wd(index)
        self._update_count(index)

        cgrad = self._cumulate_gradient(grad, index)
        if (cgrad['num_cums'] % self.batch_scale) == 0:
            grad = cgrad['cum_grad'] / self.batch_scale
            if self.warmup_strategy == 'lars':
                lbmult = self._get_lars(weight, grad, wd)
            else:
                lbmult = self._get_lbmult(cgrad['num_cums'])
            lr = lr * lbmult
            kwargs = {'rescale_grad': self.rescale_grad}
            if self.momentum > 0:
                kwargs['momentum'] = self.momentum
            if self.clip_gradient:
                kwargs['clip_gradient'] = self.clip_gradient
            if not isinstance(state, (list, tuple)):
                if state is not None:
                    nd.sgd_mom_update(weight, grad, state, out=weight, lr=lr, wd=wd, **kwargs)
                else:
                    nd.sgd_update(weight, grad, out=weight, lr=lr, wd=wd, **kwargs)
            elif state[0] is not None:
                nd.mp_sgd_mom_update(weight, grad, state[0], state[1], out=weight, lr=lr,
                                     wd=wd, **kwargs)
            else:
                nd.mp_sgd_update(weight, grad, state[1], out=weight, lr=lr, wd=wd, **kwargs)
            self._reset_cum_gradient(index)
        else:
            nd.sgd_update(weight, grad, out=weight, lr=0.0, wd=wd)


@register
class DCASGD(Optimizer):
    """DCASGD (Asynchronous SGD with Delay Compensation)::

        mom = momentum * mom - lr * (grad + wd * weight
                                     + lamda * grad * grad * (weight - previous_weight))
        previous_weight = weight; weight += mom

    (MXNet 1.9.1 fails with momentum != 0 on arrays of more than one element, testing an
    NDArray's truth value; symgraph tests ``mom is not None`` and runs the formula.)

    Parameters
    ----------
    momentum : float, optional
        The momentum value.
    lamda : float, optional
        Scale of the delay compensation.
    **kwargs
        The parameters of :class:`.Optimizer`.
    """

    def __init__(self, momentum=0.0, lamda=0.04, **kwargs):
        super(DCASGD, self).__init__(**kwargs)
        self.momentum = momentum
        self.weight_previous = {}
        self.lamda = lamda

    def create_state(self, index, weight):
        if self.momentum == 0.0:
            return (None, weight.copy())     # previous weight
        return (zeros(weight.shape, weight.context, dtype=weight.dtype),  # momentum
                weight.copy())               # previous weight

    def update(self, index, weight, grad, state):
        _check_arrays(weight, grad)
        self._update_count(index)
        lr = self._get_lr(index)
        wd = self._get_wd(index)

        grad = grad * self.rescale_grad
        if self.clip_gradient is not None:
            grad = nd.clip(grad, -self.clip_gradient, self.clip_gradient)

        mom, previous_weight = state
        if mom is not None:
            mom[:] *= self.momentum
            mom[:] += -lr * (grad + wd * weight + self.lamda
                             * grad * grad * (weight - previous_weight))
        else:
            mom = -lr * (grad + wd * weight + self.lamda
                         * grad * grad * (weight - previous_weight))
        previous_weight[:] = weight
        weight[:] += mom


@register
class SGLD(Optimizer):
    """Stochastic Gradient Riemannian Langevin Dynamics::

        weight += -lr/2 * (rescale_grad * clip(grad) + wd * weight) + N(0, sqrt(lr))

    The noise comes from ``mx.random`` (symgraph's generator, not MXNet's stream).
    """

    def __init__(self, **kwargs):
        super(SGLD, self).__init__(**kwargs)

    def create_state(self, index, weight):
        return None

    def update(self, index, weight, grad, state):
        _check_arrays(weight, grad)
        self._update_count(index)
        lr = self._get_lr(index)
        wd = self._get_wd(index)

        grad = grad * self.rescale_grad
        if self.clip_gradient is not None:
            grad = nd.clip(grad, -self.clip_gradient, self.clip_gradient)
        weight[:] += - lr / 2 * (grad + wd * weight)
        weight[:] += nd.random.normal(0, math.sqrt(lr), shape=weight.shape,
                                      dtype=weight.dtype, ctx=weight.context)
