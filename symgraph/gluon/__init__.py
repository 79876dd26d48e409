"""Gluon (``mx.gluon``): MXNet 1.9.1's imperative, object-oriented interface.

Blocks and Parameters (``block.py``, ``parameter.py``), hybridized blocks run through the
executor (``cached_op.py``), the layers (``nn``, ``rnn``, ``contrib``), losses, the
Trainer, data loading, utilities and the model zoo.
"""
import importlib

from .parameter import (Parameter, Constant, ParameterDict, DeferredInitializationError,
                        tensor_types)
from .block import Block, HybridBlock, SymbolBlock
from . import utils


def _optional(name):
    """Import submodule ``name``; while it is being written (absent), leave it out."""
    try:
        return importlib.import_module('.' + name, __name__)
    except ModuleNotFoundError as e:
        if e.name != __name__ + '.' + name:
            raise
        return None


nn = _optional('nn')
rnn = _optional('rnn')
loss = _optional('loss')
contrib = _optional('contrib')
data = _optional('data')
model_zoo = _optional('model_zoo')
_trainer = _optional('trainer')
if _trainer is not None:
    from .trainer import Trainer  # noqa: E402
del _optional, _trainer
