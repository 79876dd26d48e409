"""Contributed recurrent cells (``mx.gluon.contrib.rnn``, MXNet 1.9.1's): ``LSTMPCell`` and
``VariationalDropoutCell`` (the latter lives in ``gluon.rnn.rnn_cell`` with the other
modifier cells). MXNet's convolutional cells and ``dynamic_unroll`` are not here."""
from .rnn_cell import *  # noqa: F401,F403
from . import rnn_cell

__all__ = rnn_cell.__all__
