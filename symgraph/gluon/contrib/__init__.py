"""Contributed Gluon layers (``mx.gluon.contrib``), as MXNet 1.9.1's ``gluon/contrib``;
``contrib.nn``, ``contrib.rnn``, ``contrib.cnn`` (deformable convolutions),
``contrib.data`` (its samplers) and ``contrib.estimator`` (the Estimator training loop) are
here."""
from . import cnn  # noqa: F401
from . import data  # noqa: F401
from . import nn  # noqa: F401
from . import rnn  # noqa: F401
from . import estimator  # noqa: F401
