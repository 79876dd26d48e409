"""Contributed recurrent cells (``mx.gluon.contrib.rnn``, MXNet 1.9.1's): ``LSTMPCell``,
``VariationalDropoutCell``, the convolutional RNN, LSTM and GRU cells in 1-3D (these two
kinds live in ``gluon.rnn`` beside the other cells) and ``rnn_cell.dynamic_unroll``."""
from .rnn_cell import *  # noqa: F401,F403
from ...rnn.conv_rnn_cell import *  # noqa: F401,F403
from ...rnn import conv_rnn_cell
from . import rnn_cell

__all__ = conv_rnn_cell.__all__ + rnn_cell.__all__
