"""Symbolic recurrent cells, bucketing sentence iterator and RNN checkpoints: MXNet 1.9.1's
``mx.rnn`` (python/mxnet/rnn/)."""

from . import rnn_cell
from .rnn_cell import *  # noqa: F401,F403
from .base_cell import RNNParams, BaseRNNCell  # noqa: F401
from . import conv_rnn_cell
from .conv_rnn_cell import *  # noqa: F401,F403

from . import rnn
from .rnn import *  # noqa: F401,F403

from . import io
from .io import *  # noqa: F401,F403
