"""Neural network layers (``mx.gluon.nn``), as MXNet 1.9.1's ``gluon/nn`` package: the
Block classes again, the basic, convolution/pooling and activation layers."""
# pylint: disable=wildcard-import
from ..block import *  # noqa: F401,F403  (nn.Block, nn.HybridBlock, nn.SymbolBlock)
from .basic_layers import *  # noqa: F401,F403
from .conv_layers import *  # noqa: F401,F403
from .activations import *  # noqa: F401,F403
