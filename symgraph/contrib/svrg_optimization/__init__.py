"""``mx.contrib.svrg_optimization``: SVRG (stochastic variance reduced gradient) training
with a Module, after MXNet 1.9.1's ``python/mxnet/contrib/svrg_optimization``."""
from . import svrg_optimizer
from . import svrg_module
from .svrg_module import SVRGModule

__all__ = ['SVRGModule', 'svrg_module', 'svrg_optimizer']
