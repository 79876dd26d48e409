"""Predefined and pretrained models (``mx.gluon.model_zoo``, MXNet 1.9.1's API)."""
from . import model_store
from . import vision
