"""Contributed Gluon layers (``mx.gluon.contrib``), as MXNet 1.9.1's ``gluon/contrib``;
``contrib.nn`` is here (MXNet's ``contrib.rnn``, ``cnn``, ``data`` and ``estimator`` are
not)."""
from . import nn  # noqa: F401
