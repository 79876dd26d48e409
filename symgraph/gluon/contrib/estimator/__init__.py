"""Gluon Estimator (``mx.gluon.contrib.estimator``): a training loop driven by event handlers.

After MXNet 1.9.1's ``gluon/contrib/estimator/__init__.py``: the submodules ``estimator``,
``event_handler`` and ``batch_processor``, and their public names at the package level.
"""
# pylint: disable=wildcard-import
from . import estimator  # noqa: F401
from . import event_handler  # noqa: F401
from . import batch_processor  # noqa: F401
from .estimator import *  # noqa: F401,F403
from .event_handler import *  # noqa: F401,F403
from .batch_processor import *  # noqa: F401,F403
