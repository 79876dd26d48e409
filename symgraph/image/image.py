"""``mx.image`` / ``mx.img``: the image functions of MXNet 1.9.1's ``mxnet.image`` that its
OpenCV operators implement (ops/image_io.py): ``imread``, ``imdecode``, ``imresize`` and
``copyMakeBorder``, and the ``Augmenter`` base class. Decoding needs Pillow
(``pip install "symgraph[image]"``).

>>> import symgraph as mx
>>> img = mx.image.copyMakeBorder(mx.nd.ones((2, 3, 1), dtype='uint8'), 1, 0, 0, 2, value=7)
>>> img.shape, img.asnumpy()[..., 0].tolist()
((3, 5, 1), [[7, 7, 7, 7, 7], [1, 1, 1, 7, 7], [1, 1, 1, 7, 7]])
>>> mx.image.imresize(img, 10, 6, interp=0).shape
(6, 10, 1)
"""
import json

import numpy as np

from .. import ndarray as nd
from ..base import ArgumentTypeError

__all__ = ['imread', 'imdecode', 'imresize', 'copyMakeBorder', 'Augmenter']


def imread(filename, *args, **kwargs):
    """Read and decode an image file to a uint8 (H, W, 3) NDArray in RGB (``flag=0``: gray
    (H, W, 1); ``to_rgb=False``: BGR); ``out=`` as MXNet's."""
    return nd._internal._cvimread(filename, *args, **kwargs)


def imdecode(buf, *args, **kwargs):
    """Decode an encoded image (bytes, bytearray, a NumPy array or a uint8 NDArray) as
    :func:`imread` does; a ``str`` is refused, as in MXNet."""
    if not isinstance(buf, nd.NDArray):
        if not isinstance(buf, (bytes, bytearray, np.ndarray)):
            raise ArgumentTypeError('buf must be of type bytes, bytearray or numpy.ndarray, '
                                    'if you would like to input type str, please convert to '
                                    'bytes (got %s)' % type(buf).__name__)
        buf = nd.array(np.frombuffer(buf, dtype=np.uint8), dtype=np.uint8)
    return nd._internal._cvimdecode(buf, *args, **kwargs)


def imresize(src, w, h, *args, **kwargs):
    """Resize an (H, W, C) image to (h, w, C); ``interp`` 0 nearest or 1 bilinear (the
    default); OpenCV's other methods raise NotSupportedError."""
    return nd._internal._cvimresize(src, w, h, *args, **kwargs)


def copyMakeBorder(src, top, bot, left, right, *args, **kwargs):
    """Pad an (H, W, C) image; ``type`` 0 constant (``value`` / ``values``), 1 replicate,
    2 reflect, 3 wrap, 4 reflect-101 (OpenCV's border types)."""
    return nd._internal._cvcopyMakeBorder(src, top, bot, left, right, *args, **kwargs)


class Augmenter(object):
    """Image augmenter base class: keeps its constructor's keyword arguments (arrays as
    lists) so that :meth:`dumps` can describe it as JSON."""

    def __init__(self, **kwargs):
        self._kwargs = kwargs
        for k, v in self._kwargs.items():
            if isinstance(v, nd.NDArray):
                v = v.asnumpy()
            if isinstance(v, np.ndarray):
                self._kwargs[k] = v.tolist()

    def dumps(self):
        """The augmenter as a JSON string ``[class name in lower case, kwargs]``."""
        return json.dumps([self.__class__.__name__.lower(), self._kwargs])

    def __call__(self, src):
        raise NotImplementedError('%s must override __call__' % type(self).__name__)
