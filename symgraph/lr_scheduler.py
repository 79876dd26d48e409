"""Learning rate schedules (MXNet's ``mx.lr_scheduler``).

A scheduler is called with ``num_update``, the largest number of updates any weight has
received, and returns the learning rate. Every scheduler may start with a warmup of
``warmup_steps`` updates, rising linearly from ``warmup_begin_lr`` to ``base_lr`` or staying
at ``warmup_begin_lr`` (``warmup_mode='constant'``).

The step schedulers log each change on the root logger exactly as MXNet does
(``Update[12]: Change learning rate to 5.00000e-03``), without configuring logging.

>>> sched = FactorScheduler(step=2, factor=0.5, base_lr=1.0)
>>> [sched(n) for n in range(1, 7)]
[1.0, 1.0, 0.5, 0.5, 0.25, 0.25]
"""
import logging
from math import cos, pi
from .base import ArgumentError, ArgumentTypeError

__all__ = ['LRScheduler', 'FactorScheduler', 'MultiFactorScheduler', 'PolyScheduler',
           'CosineScheduler']

# MXNet logs through the root logger's functions (``logging.info``); the root logger itself
# gives the same records without ``logging.info``'s implicit ``basicConfig``.
_log = logging.getLogger()


def _check_int(value, what):
    # MXNet asserts isinstance(..., int); a clear TypeError names the argument instead
    if not isinstance(value, int) or isinstance(value, bool):
        raise ArgumentTypeError('%s must be an int, got %r' % (what, value))


class LRScheduler(object):
    """Base class of a learning rate scheduler.

    Parameters
    ----------
    base_lr : float, optional
        The initial learning rate.
    warmup_steps : int
        Number of warmup steps used before this scheduler starts decay.
    warmup_begin_lr : float
        If using warmup, the learning rate from which it starts warming up.
    warmup_mode : {'linear', 'constant'}
        ``'linear'`` increases the rate in equal steps; ``'constant'`` keeps it at
        ``warmup_begin_lr`` for ``warmup_steps``.
    """

    def __init__(self, base_lr=0.01, warmup_steps=0, warmup_begin_lr=0, warmup_mode='linear'):
        self.base_lr = base_lr
        _check_int(warmup_steps, 'warmup_steps')
        self.warmup_steps = warmup_steps

        self.warmup_final_lr = base_lr
        self.warmup_begin_lr = warmup_begin_lr
        if self.warmup_begin_lr > self.warmup_final_lr:
            raise ArgumentError("Base lr has to be higher than warmup_begin_lr")
        if self.warmup_steps < 0:
            raise ArgumentError("Warmup steps has to be positive or 0")
        if warmup_mode not in ['linear', 'constant']:
            raise ArgumentError("Supports only linear and constant modes of warmup (got "
                                "warmup_mode=%r)" % (warmup_mode,))
        self.warmup_mode = warmup_mode

    def get_warmup_lr(self, num_update):
        """The learning rate during warmup (``num_update < warmup_steps``)."""
        assert num_update < self.warmup_steps
        if self.warmup_mode == 'linear':
            increase = (self.warmup_final_lr - self.warmup_begin_lr) \
                * float(num_update) / float(self.warmup_steps)
            return self.warmup_begin_lr + increase
        if self.warmup_mode == 'constant':
            return self.warmup_begin_lr
        raise ArgumentError("Invalid warmup mode %s" % self.warmup_mode)

    def __call__(self, num_update):
        """The learning rate after ``num_update`` updates (the largest count of any weight).

        Parameters
        ----------
        num_update : int
            The maximal number of updates applied to a weight.
        """
        raise NotImplementedError("must override this")


class FactorScheduler(LRScheduler):
    """Multiply the learning rate by ``factor`` every ``step`` updates::

        base_lr * pow(factor, floor(num_update/step))

    Parameters
    ----------
    step : int
        Changes the learning rate every ``step`` updates.
    factor : float, optional
        The factor to change the learning rate (at most 1).
    stop_factor_lr : float, optional
        The rate does not fall below this value.
    base_lr, warmup_steps, warmup_begin_lr, warmup_mode
        See :class:`LRScheduler`.
    """

    def __init__(self, step, factor=1, stop_factor_lr=1e-8, base_lr=0.01,
                 warmup_steps=0, warmup_begin_lr=0, warmup_mode='linear'):
        super(FactorScheduler, self).__init__(base_lr, warmup_steps, warmup_begin_lr,
                                              warmup_mode)
        if step < 1:
            raise ArgumentError("Schedule step must be greater or equal than 1 round")
        if factor > 1.0:
            raise ArgumentError("Factor must be no more than 1 to make lr reduce")
        self.step = step
        self.factor = factor
        self.stop_factor_lr = stop_factor_lr
        self.count = 0

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)

        # a while rather than an if, for continuing training via load_epoch (as MXNet)
        while num_update > self.count + self.step:
            self.count += self.step
            self.base_lr *= self.factor
            if self.base_lr < self.stop_factor_lr:
                self.base_lr = self.stop_factor_lr
                _log.info("Update[%d]: now learning rate arrived at %0.5e, will not "
                          "change in the future", num_update, self.base_lr)
            else:
                _log.info("Update[%d]: Change learning rate to %0.5e",
                          num_update, self.base_lr)
        return self.base_lr


class MultiFactorScheduler(LRScheduler):
    """Multiply the learning rate by ``factor`` at each update count in ``step``.

    With ``step[k] <= num_update < step[k+1]`` the rate is ``base_lr * pow(factor, k+1)``.

    Parameters
    ----------
    step : list of int
        Increasing update counts at which the rate changes.
    factor : float
        The factor to change the learning rate (at most 1).
    base_lr, warmup_steps, warmup_begin_lr, warmup_mode
        See :class:`LRScheduler`.
    """

    def __init__(self, step, factor=1, base_lr=0.01, warmup_steps=0, warmup_begin_lr=0,
                 warmup_mode='linear'):
        super(MultiFactorScheduler, self).__init__(base_lr, warmup_steps,
                                                   warmup_begin_lr, warmup_mode)
        if not isinstance(step, list) or len(step) < 1:
            raise ArgumentError('step must be a non-empty list of int, got %r' % (step,))
        for i, _step in enumerate(step):
            if i != 0 and step[i] <= step[i - 1]:
                raise ArgumentError("Schedule step must be an increasing integer list")
            if _step < 1:
                raise ArgumentError("Schedule step must be greater or equal than 1 round")
        if factor > 1.0:
            raise ArgumentError("Factor must be no more than 1 to make lr reduce")
        self.step = step
        self.cur_step_ind = 0
        self.factor = factor
        self.count = 0

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)

        # a while rather than an if, for continuing training via load_epoch (as MXNet)
        while self.cur_step_ind <= len(self.step) - 1:
            if num_update > self.step[self.cur_step_ind]:
                self.count = self.step[self.cur_step_ind]
                self.cur_step_ind += 1
                self.base_lr *= self.factor
                _log.info("Update[%d]: Change learning rate to %0.5e",
                          num_update, self.base_lr)
            else:
                return self.base_lr
        return self.base_lr


class PolyScheduler(LRScheduler):
    """Polynomial decay after warmup::

        final_lr + (base_lr - final_lr) * (1 - nup / max_nup) ^ pwr   while nup <= max_update

    where ``nup`` and ``max_nup`` count from the end of warmup.

    Parameters
    ----------
    max_update : int
        Number of updates before the decay reaches ``final_lr``.
    base_lr : float
        Base learning rate to start from.
    pwr : int
        Power of the decay term.
    final_lr : float
        Final learning rate after all steps.
    warmup_steps, warmup_begin_lr, warmup_mode
        See :class:`LRScheduler`.
    """

    def __init__(self, max_update, base_lr=0.01, pwr=2, final_lr=0,
                 warmup_steps=0, warmup_begin_lr=0, warmup_mode='linear'):
        super(PolyScheduler, self).__init__(base_lr, warmup_steps, warmup_begin_lr,
                                            warmup_mode)
        _check_int(max_update, 'max_update')
        if max_update < 1:
            raise ArgumentError("maximum number of updates must be strictly positive")
        self.power = pwr
        self.base_lr_orig = self.base_lr
        self.max_update = max_update
        self.final_lr = final_lr
        self.max_steps = self.max_update - self.warmup_steps

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        if num_update <= self.max_update:
            self.base_lr = self.final_lr + (self.base_lr_orig - self.final_lr) * \
                pow(1 - float(num_update - self.warmup_steps) / float(self.max_steps),
                    self.power)
        return self.base_lr


class CosineScheduler(LRScheduler):
    """Cosine decay after warmup::

        final_lr + (base_lr - final_lr) * (1 + cos(pi * nup / max_nup)) / 2

    while ``num_update <= max_update``; ``nup`` and ``max_nup`` count from the end of warmup.

    Parameters
    ----------
    max_update : int
        Number of updates before the decay reaches ``final_lr``.
    base_lr : float
        Base learning rate.
    final_lr : float
        Final learning rate after all steps.
    warmup_steps, warmup_begin_lr, warmup_mode
        See :class:`LRScheduler`.
    """

    def __init__(self, max_update, base_lr=0.01, final_lr=0,
                 warmup_steps=0, warmup_begin_lr=0, warmup_mode='linear'):
        super(CosineScheduler, self).__init__(base_lr, warmup_steps, warmup_begin_lr,
                                              warmup_mode)
        _check_int(max_update, 'max_update')
        if max_update < 1:
            raise ArgumentError("maximum number of updates must be strictly positive")
        self.base_lr_orig = base_lr
        self.max_update = max_update
        self.final_lr = final_lr
        self.max_steps = self.max_update - self.warmup_steps

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        if num_update <= self.max_update:
            self.base_lr = self.final_lr + (self.base_lr_orig - self.final_lr) * \
                (1 + cos(pi * (num_update - self.warmup_steps) / self.max_steps)) / 2
        return self.base_lr
