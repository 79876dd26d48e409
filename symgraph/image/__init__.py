"""``mx.image`` / ``mx.img``: image decoding, the image functions and augmenters, and the
image iterators, laid out as MXNet 1.9.1's ``mxnet.image`` package (``image.py`` here;
``detection.py`` for the detection iterator and augmenters)."""
from . import image
from .image import *  # noqa: F401,F403

from . import detection
from . import detection as det
from .detection import *  # noqa: F401,F403
