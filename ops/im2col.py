"""``im2col`` and ``col2im``: the sliding-window patch matrices of a convolution, as MXNet
1.9.1 (src/operator/nn/im2col.cc).

``im2col(data)``: data (N, C, *S) with a 1-D, 2-D or 3-D ``kernel`` gives (N, C * prod(kernel),
L), L = prod(out) the number of windows; row ``c * prod(kernel) + k`` holds kernel offset k of
channel c (offsets row-major). ``col2im(data)`` is its adjoint: data (N, C * prod(kernel), L)
summed back into (N, C, *output_size) (overlapping windows add up). Each is the other's
gradient. ``stride``/``dilate`` default to 1 and ``pad`` to 0 per axis (MXNet's empty
tuples).
"""
from math import prod

from symgraph.opdef import Operator, Param, ShapeError, register

from ._conv_impl import _col2im, _pad, _windows, conv_out_size


class _Patches(Operator):
    kernel = Param('shape', doc='window size (1, 2 or 3 dimensions)')
    stride = Param('shape', (), doc='window step per axis (default 1)')
    dilate = Param('shape', (), doc='window dilation per axis (default 1)')
    pad = Param('shape', (), doc='zero padding per axis (default 0)')
    needs_inputs = False

    def check(self):
        nd = len(self.kernel)
        if not 1 <= nd <= 3:
            raise ShapeError('%s: kernel must have 1, 2 or 3 dimensions, got %s'
                             % (self.name, self.kernel))
        for p in ('stride', 'dilate', 'pad'):
            v = getattr(self, p)
            if v and len(v) != nd:
                raise ShapeError('%s: %s %s must have as many dimensions as kernel %s'
                                 % (self.name, p, v, self.kernel))

    def _geom(self):
        nd = len(self.kernel)
        return (tuple(self.kernel), tuple(self.stride or (1,) * nd),
                tuple(self.dilate or (1,) * nd), tuple(self.pad or (0,) * nd))

    def _out(self, spatial):
        k, s, d, p = self._geom()
        out = tuple(conv_out_size(n, kk, ss, pp, dd) for n, kk, ss, pp, dd
                    in zip(spatial, k, s, p, d))
        if any(o <= 0 for o, n in zip(out, spatial) if n):
            raise ShapeError('%s: kernel %s (dilate %s) does not fit the padded input %s'
                             % (self.name, k, d, tuple(spatial)))
        return out

    def _im2col(self, xp, x):
        k, s, d, p = self._geom()
        out = self._out(x.shape[2:])
        win = _windows(xp, _pad(xp, x, p), k, s, d, out, 'col')    # (C, *k, N, *out)
        nd = len(k)
        n, c = x.shape[:2]
        perm = (1 + nd,) + (0,) + tuple(range(1, 1 + nd)) + tuple(range(2 + nd, 2 + 2 * nd))
        return xp.ascontiguousarray(win.transpose(perm)).reshape(n, c * prod(k), prod(out))

    def _col2im(self, xp, cols, shape):
        k, s, d, p = self._geom()
        out = self._out(shape[2:])
        n, ck, L = cols.shape
        flat = xp.ascontiguousarray(cols.transpose(1, 0, 2)).reshape(ck, n * L)
        return _col2im(xp, flat, tuple(shape), k, s, p, d, out)


@register
class Im2col(_Patches):
    """Patches of ``data`` as columns: (N, C, *S) -> (N, C * prod(kernel), L)."""

    name = 'im2col'
    needs_inputs = True     # the data's spatial shape (not its values) places the gradient

    def infer_shape(self, in_shapes):
        d = in_shapes[0]
        nd = len(self.kernel)
        if d is None:
            return [None], [None], []
        if len(d) != nd + 2:
            raise ShapeError('im2col: input %r %s must have %d dimensions (N, C and the %d '
                             'of kernel %s)' % ('data', tuple(d), nd + 2, nd, self.kernel))
        out = self._out(d[2:])
        return [tuple(d)], [(d[0], d[1] * prod(self.kernel), prod(out))], []

    def forward(self, xp, inputs, aux, is_train):
        return [self._im2col(xp, inputs[0])]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        if not need[0]:
            return [None]
        return [self._col2im(xp, out_grads[0], inputs[0].shape)]


@register
class Col2im(_Patches):
    """Columns summed back into images: (N, C * prod(kernel), L) -> (N, C, *output_size)."""

    name = 'col2im'
    output_size = Param('shape', doc='spatial shape of the output')
    param_order = ('output_size', 'kernel', 'stride', 'dilate', 'pad')

    def check(self):
        super().check()
        if len(self.output_size) != len(self.kernel):
            raise ShapeError('col2im: output_size %s must have as many dimensions as kernel '
                             '%s' % (self.output_size, self.kernel))

    def infer_shape(self, in_shapes):
        d = in_shapes[0]
        if d is None:
            return [None], [None], []
        if len(d) != 3:
            raise ShapeError('col2im: input %r must be (N, C * prod(kernel), L), got %s'
                             % ('data', tuple(d)))
        k = prod(self.kernel)
        out = self._out(self.output_size)
        if d[1] % k or d[2] != prod(out):
            raise ShapeError('col2im: input %r %s must be (N, C * %d, %d) for kernel %s and '
                             'output_size %s' % ('data', tuple(d), k, prod(out), self.kernel,
                                                 self.output_size))
        return [tuple(d)], [(d[0], d[1] // k) + tuple(self.output_size)], []

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        shape = (x.shape[0], x.shape[1] // prod(self.kernel)) + tuple(self.output_size)
        return [self._col2im(xp, x, shape)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        return [self._im2col(xp, out_grads[0]) if need[0] else None]
