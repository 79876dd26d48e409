"""Optimizers (MXNet's ``mx.optimizer``): the :class:`Optimizer` base with its registry
(``create('sgd', ...)``), the built-in optimizers, and the :class:`Updater` the kvstore and
Module call."""
from . import optimizer  # noqa: F401  (mx.optimizer.optimizer, as MXNet)
from .optimizer import Optimizer, register, create
from .sgd import SGD, ccSGD, NAG, Signum, LARS, LBSGD, DCASGD, SGLD
from .adaptive import (Adam, AdaGrad, AdaDelta, RMSProp, Ftrl, Adamax, Nadam, FTML, LAMB,
                       Test)
from . import contrib
from .updater import Updater, get_updater
from . import pickling  # noqa: F401

__all__ = ['AdaDelta', 'AdaGrad', 'Adam', 'Adamax', 'DCASGD', 'FTML', 'Ftrl', 'LARS', 'LBSGD',
           'NAG', 'Nadam', 'Optimizer', 'RMSProp', 'SGD', 'SGLD', 'Signum', 'LAMB', 'Test',
           'Updater', 'ccSGD', 'create', 'get_updater', 'register', 'contrib']
