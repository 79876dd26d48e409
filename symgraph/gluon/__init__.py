"""Gluon (``mx.gluon``): MXNet 1.9.1's imperative, object-oriented interface.

Blocks and Parameters (``block.py``, ``parameter.py``), hybridized blocks run through the
executor (``cached_op.py``), the layers (``nn``, ``rnn``, ``contrib``), losses, the
Trainer, data loading, utilities and the model zoo.
"""
from .parameter import (Parameter, Constant, ParameterDict, DeferredInitializationError,
                        tensor_types)
from .block import Block, HybridBlock, SymbolBlock
from . import utils
from . import nn
from . import rnn
from . import loss
from . import contrib
from . import data
from . import model_zoo
from .trainer import Trainer
