"""Contributed Gluon layers (``mx.gluon.contrib``), as MXNet 1.9.1's ``gluon/contrib``;
``contrib.nn``, ``contrib.rnn`` and ``contrib.data`` (its samplers) are here (MXNet's
``cnn`` and ``estimator`` are not)."""
from . import data  # noqa: F401
from . import nn  # noqa: F401
from . import rnn  # noqa: F401
