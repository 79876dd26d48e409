"""Resizing NCHW data, as in MXNet 1.9.1: ``_contrib_BilinearResize2D`` and
``_contrib_AdaptiveAvgPooling2D``.

The output size comes from ``mode``: 'size' (``height``/``width``, or the input size times
``scale_height``/``scale_width`` where given), 'odd_scale', 'like' (a second input's
height and width), and 'to_even_down' / 'to_even_up' / 'to_odd_down' / 'to_odd_up'.

Sampling follows MXNet: with ``align_corners`` (the default) output pixel ``o`` reads input
position ``o * (in - 1) / (out - 1)``; without, ``(o + 0.5) * in / out - 0.5`` clamped at 0.
Each output is ``(1 - ly) * ((1 - lx) * x00 + lx * x01) + ly * ((1 - lx) * x10 + lx * x11)``
from the two neighbouring rows and columns, computed along the width first, then the height,
in the data's dtype. The gradient scatters the same weights back; 'like' gets none.

``_contrib_AdaptiveAvgPooling2D``: NCHW averages over bins [floor(i*H/oh), ceil((i+1)*H/oh));
``output_size`` () gives 1x1, (s,) gives sxs, (h, w) gives hxw (and, as in MXNet, any
other length gives 1x1). Deliberate difference: it requires 4-D input in shape inference
and float input in type inference (MXNet fails at run time).
"""
import numpy as np

from symgraph.opdef import Operator, Param, ShapeError, TypeInferenceError, register

_MODES = ('size', 'odd_scale', 'like', 'to_even_down', 'to_even_up', 'to_odd_down',
          'to_odd_up')


def _axis_taps(n_in, n_out, align_corners, dtype):
    """(i0, i1, w1): input neighbours of each output index and the weight of i1."""
    o = np.arange(n_out, dtype=np.float64)
    if align_corners:
        scale = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
        src = o * scale
    else:
        # MXNet's area_pixel_compute_scale: 0 for a single output position
        scale = n_in / n_out if n_out > 1 else 0.0
        src = np.maximum((o + 0.5) * scale - 0.5, 0.0)
    i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    i1 = np.minimum(i0 + 1, n_in - 1)
    w1 = (src - i0).astype(dtype)
    return i0, i1, w1


def _sized(n, mode, scale):
    if mode == 'odd_scale':
        return int((n - 1) * scale + 1) if n % 2 else int(n * scale)
    if mode == 'to_even_down':
        return n - n % 2
    if mode == 'to_even_up':
        return n + n % 2
    if mode == 'to_odd_down':
        return n if n % 2 else n - 1
    return n if n % 2 else n + 1           # to_odd_up


@register
class BilinearResize2D(Operator):
    """Resize NCHW data by bilinear interpolation (see the module docstring)."""

    name = '_contrib_BilinearResize2D'
    height = Param(int, 1, doc='output height (mode "size" without scale_height)')
    width = Param(int, 1, doc='output width (mode "size" without scale_width)')
    scale_height = Param(float, None, doc='height factor (modes "size" and "odd_scale")')
    scale_width = Param(float, None, doc='width factor (modes "size" and "odd_scale")')
    mode = Param(str, 'size', choices=_MODES)
    align_corners = Param(bool, True, doc='sample so that corner pixels align')

    def list_arguments(self):
        return ['data', 'like'] if self.mode == 'like' else ['data']

    def _out_hw(self, data, like):
        h, w = data[2], data[3]
        if self.mode == 'like':
            return like[2], like[3]
        if self.mode == 'size':
            if (self.scale_height is None) != (self.scale_width is None):
                # MXNet 1.9.1 fails here too ('bad optional access')
                raise ShapeError('BilinearResize2D: give scale_height and scale_width '
                                 'together (or neither, for height and width)')
            if self.scale_height is not None:
                return int(h * self.scale_height), int(w * self.scale_width)
            return self.height, self.width
        if self.mode == 'odd_scale':
            if self.scale_height is None or self.scale_width is None:
                raise ShapeError('BilinearResize2D mode odd_scale needs scale_height and '
                                 'scale_width')
            return _sized(h, 'odd_scale', self.scale_height), _sized(w, 'odd_scale',
                                                                     self.scale_width)
        return _sized(h, self.mode, None), _sized(w, self.mode, None)

    def infer_shape(self, in_shapes):
        data = in_shapes[0]
        like = in_shapes[1] if self.mode == 'like' else None
        if data is not None and len(data) != 4:
            raise ShapeError('BilinearResize2D: data must be 4-D NCHW, got %s' % (tuple(data),))
        if like is not None and len(like) != 4:
            raise ShapeError('BilinearResize2D: like must be 4-D NCHW, got %s' % (tuple(like),))
        if data is None or (self.mode == 'like' and like is None):
            return list(in_shapes), [None], []
        oh, ow = self._out_hw(data, like)
        if oh <= 0 or ow <= 0:
            raise ShapeError('BilinearResize2D: output size (%d, %d) from data %s is not '
                             'positive' % (oh, ow, tuple(data)))
        return list(in_shapes), [(data[0], data[1], oh, ow)], []

    def infer_type(self, in_types):
        t = in_types[0]
        return [t] + ([in_types[1]] if self.mode == 'like' else []), [t], []

    def _taps(self, x_shape, out_shape, dtype):
        return (_axis_taps(x_shape[2], out_shape[2], self.align_corners, dtype),
                _axis_taps(x_shape[3], out_shape[3], self.align_corners, dtype))

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        oh, ow = self._out_hw(x.shape, inputs[1].shape if self.mode == 'like' else None)
        (y0, y1, ly), (x0, x1, lx) = self._taps(x.shape, (0, 0, oh, ow), x.dtype)
        ly, lx = xp.asarray(ly), xp.asarray(lx)
        one = x.dtype.type(1)
        # along the width, then the height (MXNet's order of the products and sums)
        tmp = x[..., xp.asarray(x0)] * (one - lx) + x[..., xp.asarray(x1)] * lx
        ly = ly[:, None]
        out = tmp[:, :, xp.asarray(y0), :] * (one - ly) + tmp[:, :, xp.asarray(y1), :] * ly
        return [out]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        x = inputs[0]
        dy = out_grads[0]
        grads = [None] * len(inputs)
        if need[0]:
            (y0, y1, ly), (x0, x1, lx) = self._taps(x.shape, dy.shape, dy.dtype)
            one = dy.dtype.type(1)
            ly = xp.asarray(ly)[:, None]
            dtmp = xp.zeros(x.shape[:3] + (dy.shape[3],), dtype=dy.dtype)
            xp.add.at(dtmp, (slice(None), slice(None), xp.asarray(y0)), dy * (one - ly))
            xp.add.at(dtmp, (slice(None), slice(None), xp.asarray(y1)), dy * ly)
            dx = xp.zeros(x.shape, dtype=dy.dtype)
            lx = xp.asarray(lx)
            xp.add.at(dx, (Ellipsis, xp.asarray(x0)), dtmp * (one - lx))
            xp.add.at(dx, (Ellipsis, xp.asarray(x1)), dtmp * lx)
            grads[0] = dx
        if self.mode == 'like' and need[1]:
            grads[1] = xp.zeros_like(inputs[1])
        return grads


def _bins(xp, n_in, n_out, dtype):
    """(n_out, n_in) averaging matrix over [floor(o*n_in/n_out), ceil((o+1)*n_in/n_out))."""
    o = xp.arange(n_out)
    start = (o * n_in) // n_out
    end = ((o + 1) * n_in + n_out - 1) // n_out
    r = xp.arange(n_in)[None, :]
    hit = (r >= start[:, None]) & (r < end[:, None])
    return hit.astype(dtype) / (end - start)[:, None].astype(dtype)


@register
class AdaptiveAvgPooling2D(Operator):
    """NCHW average pooling to ``output_size`` over adaptive bins."""

    name = '_contrib_AdaptiveAvgPooling2D'
    output_size = Param('shape', (), doc='int (square) or (height, width); () gives 1x1')

    def _size(self):
        s = tuple(self.output_size or ())
        return (s[0], s[0]) if len(s) == 1 else (s if len(s) == 2 else (1, 1))

    infer_shape_uses_outputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        d = in_shapes[0]
        if d is None:
            return [d], [None], []
        if len(d) != 4:
            raise ShapeError('_contrib_AdaptiveAvgPooling2D: argument %r has shape %s but '
                             'must be 4-D (N, C, H, W)' % ('data', tuple(d)))
        return [d], [tuple(d[:2]) + self._size()], []

    def infer_type(self, in_types):
        t = in_types[0]
        if t is not None and np.dtype(t).kind != 'f':
            raise TypeInferenceError('_contrib_AdaptiveAvgPooling2D: argument %r has type %s; '
                                     'only floating point types are supported'
                                     % ('data', np.dtype(t).name))
        return [t], [t], []

    def _mats(self, xp, x):
        oh, ow = self._size()
        return _bins(xp, x.shape[2], oh, x.dtype), _bins(xp, x.shape[3], ow, x.dtype)

    def forward(self, xp, inputs, aux, is_train):
        bh, bw = self._mats(xp, inputs[0])
        return [xp.matmul(xp.matmul(bh, inputs[0]), bw.T)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        bh, bw = self._mats(xp, inputs[0])
        return [xp.matmul(xp.matmul(bh.T, out_grads[0]), bw)]
