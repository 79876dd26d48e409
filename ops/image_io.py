"""The OpenCV operators of MXNet 1.9.1's src/io/image_io.cc, behind ``mx.image.imdecode``,
``imread``, ``imresize`` and ``copyMakeBorder``: ``_cvimdecode``, ``_cvimread``,
``_cvimresize`` and ``_cvcopyMakeBorder``. Images are (H, W, C) arrays of uint8, int32,
float32 or float64 (OpenCV's types in MXNet's table; float16 is refused as MXNet refuses it,
and int8/int64/bool are refused where MXNet reads past its type table).

* ``_cvcopyMakeBorder(src, top, bot, left, right, type=0, value=0, values=())``: the image
  with margins; ``type`` 0 constant (channel c gets ``values[c]``, or ``value`` in the first
  three channels and 0 in a fourth, as MXNet's ``cv::Scalar(value, value, value)``; rounded
  half to even and clamped for integer images, as ``saturate_cast``), 1 replicate, 2 reflect
  (``fedcba|abcdef|fedcba``), 3 wrap, 4 reflect-101 (``fedcb|abcdef|edcba``); margins larger
  than the image reflect or wrap again, as ``cv::borderInterpolate``. No gradient (as MXNet).
* ``_cvimresize(src, w, h, interp=1)``: ``cv::resize`` to (h, w, C): interp 1 bilinear as
  OpenCV 3.4.2 computes it (``ops/_cv.py``), 0 nearest, 2 cubic, 3 area and 4 Lanczos as
  ``ops/_cv_resize.py`` (nearest and area exact, cubic and Lanczos within one grey level),
  shared with ``_image_resize``; int32 images are refused (OpenCV 3.4.2 has no kernel for
  them: "func != 0"). No gradient.
* ``_cvimdecode(buf, flag=1, to_rgb=True)`` decodes the encoded image in the uint8 array
  ``buf``; ``_cvimread(filename, flag=1, to_rgb=True)`` reads a file. Output uint8 (H, W, 3)
  in RGB (BGR with ``to_rgb=False``) or, with ``flag=0``, (H, W, 1) gray. Decoding needs
  Pillow (optional: ``pip install "symgraph[image]"``; without it these raise
  NotSupportedError saying so). As OpenCV: PNG alpha is dropped and PNG colour becomes gray
  with libpng's truncating 9797/19234/3737 weights (/ 32768), a colour JPEG read as gray
  is its decoded luma, other formats use OpenCV's BGR2GRAY weights; 16-bit PNG samples
  keep their high byte. EXIF orientation is not applied (MXNet ignores it for JPEG/PNG).
  The output's shape depends on the data: these run in ``mx.nd`` only (in MXNet too, where
  they have no graph kernel).

``_imdecode`` (the legacy NDArray function with the image as a C-string parameter) is not
registered: MXNet 1.9.1's Python cannot pass binary data through it (it fails "OpenCV Failed
to decode image" for every image), see tests/ops/test_mxnet_registry.py.
"""
import io

import numpy as np

from symgraph.base import MissingFileError, NotSupportedError, ParameterError
from symgraph.opdef import MXNetError, Operator, Param, ShapeError, TypeInferenceError, register

from ._cv import cv_resize

#: the element types of MXNet's OpenCV table (DTYPE[] = {CV_32F, CV_64F, -1, CV_8U, CV_32S})
_CV_TYPES = tuple(np.dtype(t) for t in ('float32', 'float64', 'uint8', 'int32'))
_BORDER_TYPES = {0: 'constant', 1: 'replicate', 2: 'reflect', 3: 'wrap', 4: 'reflect_101'}


def _image_shape(op, s):
    if s is not None and len(s) != 3:
        raise ShapeError('%s: src must be one image of shape (height, width, channels), got %s'
                         % (op.name, tuple(s)))


def _cv_type(op, t, allowed=_CV_TYPES):
    if t is not None and np.dtype(t) not in allowed:
        raise TypeInferenceError('%s: images of type %s are not supported (OpenCV types: %s)'
                                 % (op.name, np.dtype(t).name,
                                    ', '.join(a.name for a in allowed)))
    return t


class _NoGrad(Operator):
    needs_inputs = False

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        raise MXNetError('%s has no gradient (as in MXNet 1.9.1)' % self.name)


@register
class CvImresize(_NoGrad):
    """Resize one (H, W, C) image to (h, w, C) with OpenCV's interpolation."""

    name = '_cvimresize'
    w = Param(int, doc='width of the resized image', minimum=1)
    h = Param(int, doc='height of the resized image', minimum=1)
    interp = Param(int, 1, doc='interpolation: 0 nearest, 1 bilinear (cv2.INTER_LINEAR), '
                               '2 cubic, 3 area, 4 Lanczos')

    def check(self):
        if self.interp not in (0, 1, 2, 3, 4):
            raise ParameterError('%s: unknown interpolation method interp=%d (OpenCV: 0-4)'
                                 % (self.name, self.interp))

    def list_arguments(self):
        return ['src']

    def infer_shape(self, in_shapes):
        s = in_shapes[0]
        _image_shape(self, s)
        return [s], [None if s is None else (self.h, self.w, s[2])], []

    def infer_type(self, in_types):
        t = _cv_type(self, in_types[0], _CV_TYPES[:3])
        return [t], [t], []

    def forward(self, xp, inputs, aux, is_train):
        return [cv_resize(xp, inputs[0], self.h, self.w, self.interp)]


def _border_index(p, n, kind):
    """``cv::borderInterpolate`` for the positions ``p`` (may lie outside [0, n))."""
    out = []
    for q in p:
        if kind == 1:
            q = min(max(q, 0), n - 1)
        elif kind in (2, 4):
            delta = int(kind == 4)
            if n == 1:
                q = 0
            while not 0 <= q < n:
                q = -q - 1 + delta if q < 0 else n - 1 - (q - n) - delta
        else:
            q %= n
        out.append(q)
    return np.array(out, dtype=np.int64)


@register
class CvCopyMakeBorder(_NoGrad):
    """Pad one (H, W, C) image with margins (OpenCV's ``copyMakeBorder``)."""

    name = '_cvcopyMakeBorder'
    top = Param(int, doc='top margin', minimum=0)
    bot = Param(int, doc='bottom margin', minimum=0)
    left = Param(int, doc='left margin', minimum=0)
    right = Param(int, doc='right margin', minimum=0)
    type = Param(int, 0, doc='0 constant, 1 replicate, 2 reflect, 3 wrap, 4 reflect-101')
    value = Param(float, 0.0, doc='(deprecated: use values) the fill value')
    values = Param('floats', (), doc='fill value per channel (RGB[A] or gray), up to 4')

    def check(self):
        if self.type not in _BORDER_TYPES:
            raise ParameterError('%s: unknown border type %d (0 constant, 1 replicate, 2 '
                                 'reflect, 3 wrap, 4 reflect-101)' % (self.name, self.type))
        if len(self.values) > 4:
            raise ParameterError('%s: values has %d entries; at most 4 (one per channel)'
                                 % (self.name, len(self.values)))

    def list_arguments(self):
        return ['src']

    def infer_shape(self, in_shapes):
        s = in_shapes[0]
        _image_shape(self, s)
        if s is None:
            return [None], [None], []
        if self.type == 0 and self.values and s[2] > len(self.values):
            raise ShapeError('%s: %d channels but values has %d entries (MXNet reads past '
                             'them)' % (self.name, s[2], len(self.values)))
        if self.type == 0 and s[2] > 4 and len(set(self._scalar())) > 1:
            raise ShapeError('%s: a constant border of %d channels needs one value for all '
                             '(OpenCV: value[0] == value[1] == value[2] == value[3])'
                             % (self.name, s[2]))
        return [s], [(s[0] + self.top + self.bot, s[1] + self.left + self.right, s[2])], []

    def infer_type(self, in_types):
        t = _cv_type(self, in_types[0])
        return [t], [t], []

    def _scalar(self):
        """OpenCV's cv::Scalar of the fill: 4 doubles."""
        if self.values:
            return tuple(self.values) + (0.0,) * (4 - len(self.values))
        return (self.value,) * 3 + (0.0,)

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        H, W, C = x.shape
        if self.type == 0:
            s = self._scalar()
            fill = np.array([s[min(c, 3)] for c in range(C)], np.float64)
            if x.dtype.kind in 'iu':
                info = np.iinfo(x.dtype)
                fill = np.clip(np.rint(fill), info.min, info.max)
            out = xp.empty((H + self.top + self.bot, W + self.left + self.right, C), x.dtype)
            out[...] = xp.asarray(fill.astype(x.dtype))
            out[self.top:self.top + H, self.left:self.left + W] = x
            return [out]
        rows = _border_index(range(-self.top, H + self.bot), H, self.type)
        cols = _border_index(range(-self.left, W + self.right), W, self.type)
        return [x[xp.asarray(rows)][:, xp.asarray(cols)]]


# ---- decoders -------------------------------------------------------------------------------
def _pillow():
    try:
        from PIL import Image
    except ImportError:
        raise NotSupportedError('image decoding needs Pillow, which is not installed: '
                                'pip install "symgraph[image]" (or pip install pillow)') from None
    return Image


def decode(data, flag, to_rgb, what):
    """(H, W, 1 or 3) uint8 of the encoded image ``data`` (bytes), as OpenCV decodes it."""
    Image = _pillow()
    try:
        img = Image.open(io.BytesIO(data))
        if flag == 0 and img.format == 'JPEG' and img.mode != 'L':
            img.draft('L', img.size)               # libjpeg's own luma, as OpenCV asks for
        img.load()
    except Exception as e:                        # Pillow raises many kinds
        raise ParameterError('%s: decoding failed, not an image Pillow can read (%s: %s)'
                             % (what, type(e).__name__, e)) from None
    if img.mode in ('I;16', 'I;16B', 'I;16L', 'I'):
        a = (np.asarray(img).astype(np.int64) >> 8).astype(np.uint8)   # png_set_strip_16
        rgb = np.repeat(a[..., None], 3, axis=2)
    elif img.mode == 'L':
        rgb = np.repeat(np.asarray(img)[..., None], 3, axis=2)
    else:
        rgb = np.asarray(img.convert('RGB'))
    if flag == 0:
        if img.mode == 'L' or img.mode.startswith('I'):
            gray = rgb[..., 0]
        elif img.format == 'PNG':                  # png_set_rgb_to_gray(1, 0.299, 0.587)
            r, g, b = (rgb[..., k].astype(np.int64) for k in range(3))
            gray = np.where((r == g) & (g == b), r, (9797 * r + 19234 * g + 3737 * b) >> 15)
        else:                                      # cvtColor(BGR2GRAY), fixed point
            r, g, b = (rgb[..., k].astype(np.int64) for k in range(3))
            gray = (4899 * r + 9617 * g + 1868 * b + 8192) >> 14
        return gray.astype(np.uint8)[..., None]
    return np.ascontiguousarray(rgb if to_rgb else rgb[..., ::-1])


class _Decoder(_NoGrad):
    flag = Param(int, 1, doc='0: decode to gray (H, W, 1); 1: colour (H, W, 3)', minimum=0)
    to_rgb = Param(bool, True, doc='RGB (MXNet\'s default) instead of OpenCV\'s BGR')

    def check(self):
        if self.flag not in (0, 1):
            raise ParameterError('%s: flag must be 0 (gray) or 1 (colour), got %d (MXNet '
                                 '1.9.1 fails for other flags)' % (self.name, self.flag))

    def infer_type(self, in_types):
        return [np.dtype(np.uint8)] * len(in_types), [np.dtype(np.uint8)], []


@register
class CvImdecode(_Decoder):
    """Decode the image in a uint8 buffer (``mx.image.imdecode``)."""

    name = '_cvimdecode'

    def list_arguments(self):
        return ['buf']

    def infer_shape(self, in_shapes):
        return [in_shapes[0]], [None], []       # the decoded shape depends on the data

    def infer_type(self, in_types):
        if in_types[0] is not None and np.dtype(in_types[0]) != np.uint8:
            raise TypeInferenceError('%s: buf must be a uint8 buffer, got %s'
                                     % (self.name, np.dtype(in_types[0]).name))
        return super().infer_type(in_types)

    def forward(self, xp, inputs, aux, is_train):
        buf = getattr(xp, 'asnumpy', np.asarray)(inputs[0])
        if buf.size == 0:
            raise ParameterError('%s: buf is empty' % self.name)
        return [xp.asarray(decode(buf.tobytes(), self.flag, self.to_rgb, self.name))]


@register
class CvImread(_Decoder):
    """Read and decode an image file (``mx.image.imread``)."""

    name = '_cvimread'
    filename = Param(str, doc='the image file')
    param_order = ('filename', 'flag', 'to_rgb')

    def list_arguments(self):
        return []

    def infer_shape(self, in_shapes):
        return [], [None], []

    def forward(self, xp, inputs, aux, is_train):
        try:
            with open(self.filename, 'rb') as f:
                data = f.read()
        except FileNotFoundError:
            raise MissingFileError('%s: %r: no such file' % (self.name, self.filename)) from None
        return [xp.asarray(decode(data, self.flag, self.to_rgb, '%s(%r)'
                                  % (self.name, self.filename)))]
