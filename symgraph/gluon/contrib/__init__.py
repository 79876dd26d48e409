"""Contributed Gluon layers (``mx.gluon.contrib``), as MXNet 1.9.1's ``gluon/contrib``;
``contrib.nn`` and ``contrib.rnn`` are here (MXNet's ``cnn``, ``data`` and ``estimator``
are not)."""
from . import nn  # noqa: F401
from . import rnn  # noqa: F401
