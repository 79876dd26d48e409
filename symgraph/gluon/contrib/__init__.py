"""Contributed Gluon layers (``mx.gluon.contrib``), as MXNet 1.9.1's ``gluon/contrib``;
``contrib.nn``, ``contrib.rnn``, ``contrib.cnn`` (deformable convolutions) and
``contrib.data`` (its samplers) are here (MXNet's ``estimator`` is not)."""
from . import cnn  # noqa: F401
from . import data  # noqa: F401
from . import nn  # noqa: F401
from . import rnn  # noqa: F401
