"""Contributed neural network layers (``mx.gluon.contrib.nn``), as MXNet 1.9.1's."""
# pylint: disable=wildcard-import
from . import basic_layers
from .basic_layers import *  # noqa: F401,F403

__all__ = basic_layers.__all__
