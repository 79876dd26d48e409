"""``mx.image.image``: MXNet 1.9.1's ``mxnet.image.image`` module, the functions, augmenters
and ``ImageIter`` of ``mx.image`` in one namespace (``from .image import ImageIter,
Augmenter, ...`` works as in MXNet). They live in ``functions.py`` (decoding, resizing,
crops, rotation), ``augmenters.py`` (the augmenters and ``CreateAugmenter``) and
``iterator.py`` (``ImageIter``).
"""
from .functions import *  # noqa: F401,F403
from .functions import __all__ as _functions
from .functions import _get_interp_method  # noqa: F401  (detection's augmenters use it)
from .augmenters import *  # noqa: F401,F403
from .augmenters import __all__ as _augmenters
from .iterator import ImageIter

__all__ = list(_functions) + list(_augmenters) + ['ImageIter']
