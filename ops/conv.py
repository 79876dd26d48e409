"""Convolution and Deconvolution (1-D, 2-D and 3-D, channels first).

The arithmetic lives in a few pure functions over ``xp`` arrays of layout (N, C, *spatial):
:func:`conv_forward`, :func:`conv_backward_data` and :func:`conv_backward_weight`.
Deconvolution is the same three functions with the roles of data and output swapped
(its forward is the convolution's backward-data and so on). The only memory-layout
transformation is :func:`_im2col` (and its adjoint :func:`_col2im`); on CuPy arrays they
call the CUDA kernels of ``symgraph.cuda.loader`` (1-D and 2-D, float32/float64) and the
GEMMs go to cuBLAS through ``xp.matmul``; the array code stays the reference.

Column matrices use layout (C, *kernel, N, *grid): one GEMM of (F, C*K) by (C*K, N*P) then
covers the whole batch. NumPy's batched ``matmul`` does not call BLAS when an operand is
broadcast over the batch, so one large GEMM is an order of magnitude faster here. The grid
is the output's spatial shape, or for unit strides on NumPy a slightly wider one that makes
the im2col copy run over long contiguous rows (:func:`_wide_cols`).
"""
import threading
from math import prod

import numpy as np

from symgraph.opdef import (MXNetError, Operator, Param, ShapeError, register, same_type,
                            unify_shape)

_LAYOUTS = ('None', 'NCW', 'NCHW', 'NCDHW', 'NHWC', 'NDHWC')
_TRANSPOSED_BWD = True
_TUNE = ('None', 'fastest', 'limited_workspace', 'off')
# largest grid / output size ratio for which unit-stride convolutions use the wide columns:
# the extra columns cost GEMM time; measured on 2 cores, 3x3 pad 1 on 32x32 (1.06) and 16x16
# (1.13) maps gain, on 8x8 maps (1.25) the extra GEMM work eats the faster copy
_WIDE_MAX_RATIO = 1.15
_WORKSPACE = threading.local()


def _workspace(slot, shape, dtype):
    """An uninitialised NumPy array in reused per-thread scratch memory ``slot``.

    Like MXNet's convolution workspace: im2col buffers live only until the GEMM that reads
    them, and a fresh multi-megabyte array costs the kernel a page-zeroing fault per (huge)
    page, about as slow as the copy itself. Each slot keeps the largest size seen.
    """
    nbytes = prod(shape) * np.dtype(dtype).itemsize
    slots = _WORKSPACE.__dict__.setdefault('slots', {})
    if slots.get(slot) is None or slots[slot].size < nbytes:
        slots[slot] = np.empty(nbytes, np.uint8)
    return slots[slot][:nbytes].view(dtype).reshape(shape)


def _columns(xp, view):
    """A contiguous copy of the column ``view`` (on NumPy in workspace slot 0)."""
    if xp.__name__ != 'numpy':
        return xp.ascontiguousarray(view)
    out = _workspace(0, view.shape, view.dtype)
    np.copyto(out, view)
    return out


# ----------------------------------------------------------------------------------
# pure array functions
# ----------------------------------------------------------------------------------
def conv_out_size(size, kernel, stride, pad, dilate):
    """Output length of a convolution along one axis (0 stays 0 = unknown)."""
    if size == 0:
        return 0
    return (size + 2 * pad - (dilate * (kernel - 1) + 1)) // stride + 1


def _pad(xp, x, before, after=None, value=0.0):
    """Pad (positive) or crop (negative) the trailing spatial axes of ``x``."""
    after = before if after is None else after
    nd = len(before)
    if not any(before) and not any(after):
        return x
    crop = tuple(slice(max(-b, 0), x.shape[x.ndim - nd + i] - max(-a, 0))
                 for i, (b, a) in enumerate(zip(before, after)))
    x = x[(Ellipsis,) + crop]
    lo = [max(b, 0) for b in before]
    hi = [max(a, 0) for a in after]
    if any(lo) or any(hi):
        # zeros + one copy: several times faster than xp.pad for small pads
        shape = x.shape[:x.ndim - nd] + tuple(s + b + a for s, b, a
                                               in zip(x.shape[x.ndim - nd:], lo, hi))
        out = xp.full(shape, value, dtype=x.dtype) if value else xp.zeros(shape, x.dtype)
        out[(Ellipsis,) + tuple(slice(b, b + s) for b, s
                                in zip(lo, x.shape[x.ndim - nd:]))] = x
        x = out
    return x


def _windows(xp, x, kernel, stride, dilate, out, order):
    """Strided view of the windows of a padded (N, C, *S) array, without copying.

    ``order='col'`` gives (C, *kernel, N, *out) (im2col layout); ``order='pool'`` gives
    (N, C, *out, *kernel).
    """
    sn, sc = x.strides[:2]
    sp = x.strides[2:]
    ks = tuple(s * d for s, d in zip(sp, dilate))
    os_ = tuple(s * t for s, t in zip(sp, stride))
    n, c = x.shape[:2]
    if order == 'col':
        shape = (c,) + tuple(kernel) + (n,) + tuple(out)
        strides = (sc,) + ks + (sn,) + os_
    else:
        shape = (n, c) + tuple(out) + tuple(kernel)
        strides = (sn, sc) + os_ + ks
    return xp.lib.stride_tricks.as_strided(x, shape=shape, strides=strides)


def _use_kernels(xp, dtype, kernel, pad):
    """Whether the CUDA im2col/col2im kernels take this case: CuPy arrays, 1-D or 2-D,
    float32/float64, no cropping pad (everything else runs the array code below)."""
    return (xp.__name__ == 'cupy' and len(kernel) in (1, 2) and min(pad) >= 0
            and np.dtype(dtype) in (np.float32, np.float64))


def _gpu_im2col(xp, x, kernel, stride, pad, dilate):
    """The kernel's (N, C*K, P) columns in this module's (C*K, N*P) layout."""
    from symgraph.cuda import loader
    cols = loader.im2col(x, kernel, stride, pad, dilate)
    n, ck, p = cols.shape
    return xp.ascontiguousarray(xp.swapaxes(cols, 0, 1)).reshape(ck, n * p)


def _gpu_col2im(xp, cols, shape, kernel, stride, pad, dilate):
    """Columns in (C*K, N*P) layout folded by the kernel onto (N, C, *S)."""
    from symgraph.cuda import loader
    ck, n = cols.shape[0], shape[0]
    cols = xp.ascontiguousarray(xp.swapaxes(cols.reshape(ck, n, -1), 0, 1))
    return loader.col2im(cols, tuple(shape), kernel, stride, pad, dilate)


def _wide_grid(xp, shape, kernel, stride, before, after, dilate, out):
    """The wide grid (out[0], *padded[1:]) of :func:`_wide_cols`, or None where the exact
    output grid is used: strides other than 1, CuPy, or too many extra columns."""
    if xp.__name__ != 'numpy' or any(s != 1 for s in stride) or len(kernel) < 2:
        return None
    grid = (out[0],) + tuple(s + b + a for s, b, a in zip(shape[3:], before[1:], after[1:]))
    if min(grid) <= 0 or prod(grid) > _WIDE_MAX_RATIO * prod(out):
        return None
    return grid


def _wide_cols(xp, x, kernel, before, after, dilate, grid):
    """Unit-stride columns (C * prod(kernel), N * prod(grid)) over the wide ``grid``.

    The input is padded once into a flat buffer of layout (N, C, *padded) with a zero tail.
    With unit stride, kernel offset k at grid position g reads the padded element at flat
    index offset(k) + flat(g), and over the grid (out[0], *padded[1:]) these indices are
    consecutive: each (channel, offset, sample) is one contiguous run instead of one short
    run per output row, which is what makes NumPy's strided copy slow. Grid positions past
    the output on the inner axes read wrapped-around (finite) values: the forward crops
    them and the weight gradient multiplies them by the zeros :func:`_flat_grad` puts there.
    """
    n, c = x.shape[:2]
    x = _pad(xp, x, [min(b, 0) for b in before], [min(a, 0) for a in after])   # crops only
    before = [max(b, 0) for b in before]
    padded = tuple(s + b + max(a, 0) for s, b, a in zip(x.shape[2:], before, after))
    elem = [prod(padded[i + 1:]) for i in range(len(padded))]   # element strides
    tail = sum((k - 1) * d * e for k, d, e in zip(kernel[1:], dilate[1:], elem[1:]))
    size = prod(padded)
    buf = _workspace(1, (n * c * size + tail,), x.dtype)
    buf[n * c * size:] = 0
    xpad = buf[:n * c * size].reshape((n, c) + padded)
    for i, (b, s) in enumerate(zip(before, x.shape[2:])):     # zero only the borders
        xpad[(Ellipsis, slice(0, b)) + (slice(None),) * (len(padded) - 1 - i)] = 0
        xpad[(Ellipsis, slice(b + s, None)) + (slice(None),) * (len(padded) - 1 - i)] = 0
    xpad[(Ellipsis,) + tuple(slice(b, b + s) for b, s in zip(before, x.shape[2:]))] = x
    it = buf.itemsize
    strides = ((size * it,) + tuple(d * e * it for d, e in zip(dilate, elem))
               + (c * size * it, it))
    view = xp.lib.stride_tricks.as_strided(
        buf, shape=(c,) + tuple(kernel) + (n, prod(grid)), strides=strides)
    return _columns(xp, view).reshape(c * prod(kernel), -1)


def _im2col(xp, x, kernel, stride, pad, dilate, out, after=None):
    """(N, C, *S) -> (contiguous columns (C * prod(kernel), N * prod(grid)), grid).

    ``pad`` pads (or crops, if negative) before each spatial axis and ``after`` (default
    ``pad``) after it. ``grid`` is ``out``, or the wider grid of :func:`_wide_cols`. On NumPy
    the columns live in a workspace, valid until the next call in this thread.
    """
    after = pad if after is None else after
    if _use_kernels(xp, x.dtype, kernel, (0,)):
        # the kernels take one non-negative pad per axis: anything else is padded here
        if tuple(after) != tuple(pad) or min(pad) < 0:
            x, pad = _pad(xp, x, pad, after), (0,) * len(kernel)
        return _gpu_im2col(xp, x, kernel, stride, pad, dilate), tuple(out)
    grid = _wide_grid(xp, x.shape, kernel, stride, pad, after, dilate, out)
    if grid is not None:
        return _wide_cols(xp, x, kernel, pad, after, dilate, grid), grid
    xpad = _pad(xp, x, pad, after)
    cols = _columns(xp, _windows(xp, xpad, kernel, stride, dilate, out, 'col'))
    return cols.reshape(x.shape[1] * prod(kernel), -1), tuple(out)


def _col2im(xp, cols, shape, kernel, stride, pad, dilate, out):
    """Adjoint of :func:`_im2col`: columns (C, *kernel, N, *out) summed into (N, C, *S).

    One strided accumulation per kernel offset; the result is built as (C, N, *S) so every
    accumulation reads a contiguous block of ``cols``.
    """
    if _use_kernels(xp, cols.dtype, kernel, pad):
        return _gpu_col2im(xp, cols, shape, kernel, stride, pad, dilate)
    n, c = shape[:2]
    spatial = shape[2:]
    nd = len(kernel)
    cols = cols.reshape((c,) + tuple(kernel) + (n,) + tuple(out))
    acc = xp.zeros((c, n) + tuple(s + 2 * p for s, p in zip(spatial, pad)), dtype=cols.dtype)
    for k in np.ndindex(*kernel):
        sl = tuple(slice(k[i] * dilate[i], k[i] * dilate[i] + stride[i] * (out[i] - 1) + 1,
                         stride[i]) for i in range(nd))
        acc[(slice(None), slice(None)) + sl] += cols[(slice(None),) + k]
    crop = tuple(slice(p, p + s) for p, s in zip(pad, spatial))
    return xp.ascontiguousarray(xp.swapaxes(acc[(Ellipsis,) + crop], 0, 1))


def _channels_first(xp, y2d, f, n, grid, out):
    """(F, N * prod(grid)) GEMM result -> contiguous (N, F, *out) (cropping the grid)."""
    y = y2d.reshape((f, n) + tuple(grid))
    if tuple(grid) != tuple(out):
        y = y[(Ellipsis,) + tuple(slice(0, o) for o in out)]
    return xp.ascontiguousarray(xp.swapaxes(y, 0, 1))


def _grouped_matmul(xp, a, b, groups, trans_a=False, trans_b=False):
    """Per-group product of (G*m, k) and (G*k, n) blocks stacked along the first axis."""
    a = a.reshape((groups, -1) + a.shape[1:])
    b = b.reshape((groups, -1) + b.shape[1:])
    if trans_a:
        a = xp.swapaxes(a, 1, 2)
    if trans_b:
        b = xp.swapaxes(b, 1, 2)
    if groups == 1:
        return a[0] @ b[0]
    r = xp.matmul(a, b)
    return r.reshape((-1,) + r.shape[2:])


def conv_forward(xp, x, w, b, stride, pad, dilate, groups, after=None):
    """Cross-correlation of x (N, C, *S) with w (F, C/groups, *K), plus bias b (F,) or None.

    ``pad`` pads before each spatial axis and ``after`` (default ``pad``) after it; negative
    values crop.
    """
    kernel = w.shape[2:]
    after = pad if after is None else after
    out = tuple(conv_out_size(s, k, t, p, d) if p == a else conv_out_size(s + p + a, k, t, 0, d)
                for s, k, t, p, a, d in zip(x.shape[2:], kernel, stride, pad, after, dilate))
    cols, grid = _im2col(xp, x, kernel, stride, pad, dilate, out, after)
    f = w.shape[0]
    y = _grouped_matmul(xp, w.reshape(f, -1), cols, groups)
    if b is not None:
        y += b.reshape(f, 1)
    return _channels_first(xp, y, f, x.shape[0], grid, out)


def _flat_grad(xp, dy, grid=None):
    """(N, F, *O) -> contiguous (F, N * prod(grid)), the layout every GEMM here uses; grid
    positions outside O (a wide grid, default O) are zero."""
    f, n, out = dy.shape[1], dy.shape[0], dy.shape[2:]
    if grid is None or tuple(grid) == tuple(out):
        return xp.ascontiguousarray(xp.swapaxes(dy, 0, 1)).reshape(f, -1)
    dyt = xp.zeros((f, n) + tuple(grid), dtype=dy.dtype)
    dyt[(Ellipsis,) + tuple(slice(0, o) for o in out)] = xp.swapaxes(dy, 0, 1)
    return dyt.reshape(f, -1)


def conv_backward_data(xp, dy, w, shape, stride, pad, dilate, groups, dyt=None):
    """Gradient of :func:`conv_forward` with respect to x of ``shape``, given dy (N, F, *O).

    With unit stride this is a convolution of the padded dy with the flipped, transposed
    kernel (an im2col and a GEMM); otherwise a GEMM and :func:`_col2im`. ``dyt`` is dy
    already in (F, N*P) layout when the caller has it.
    """
    kernel = w.shape[2:]
    out = dy.shape[2:]
    f = w.shape[0]
    # the transposed convolution copies dy once per kernel offset (F channels), _col2im
    # reads and writes dx once per offset (C channels, about twice the traffic)
    if all(s == 1 for s in stride) and f <= 2 * shape[1] and _TRANSPOSED_BWD:
        wt = w.reshape((groups, f // groups) + w.shape[1:])
        wt = xp.swapaxes(wt, 1, 2)[(Ellipsis,) + (slice(None, None, -1),) * len(kernel)]
        wt = wt.reshape((-1, f // groups) + tuple(kernel))
        before = [d * (k - 1) - p for k, p, d in zip(kernel, pad, dilate)]
        # rows the forward never reached (larger input than the output needs) get zero
        after = [s - o - b + d * (k - 1) for s, o, b, k, d
                 in zip(shape[2:], out, before, kernel, dilate)]
        return conv_forward(xp, dy, wt, None, stride, before, dilate, groups, after)
    dyt = _flat_grad(xp, dy) if dyt is None else dyt
    cols = _grouped_matmul(xp, w.reshape(f, -1), dyt, groups, trans_a=True)
    return _col2im(xp, cols, shape, kernel, stride, pad, dilate, out)


def conv_backward_weight(xp, x, dy, kernel, stride, pad, dilate, groups, dyt=None):
    """Gradient of :func:`conv_forward` with respect to w (F, C/groups, *kernel)."""
    out = dy.shape[2:]
    cols, grid = _im2col(xp, x, kernel, stride, pad, dilate, out)
    if dyt is None or dyt.shape[1] != cols.shape[1]:
        dyt = _flat_grad(xp, dy, grid)
    # (C*K, NP) x (NP, F) is markedly faster in OpenBLAS than (F, NP) x (NP, C*K)
    dwt = _grouped_matmul(xp, cols, dyt, groups, trans_b=True)
    f = dy.shape[1]
    dwt = dwt.reshape(groups, -1, f // groups)
    return xp.ascontiguousarray(xp.swapaxes(dwt, 1, 2)).reshape(
        (f, x.shape[1] // groups) + tuple(kernel))


# ----------------------------------------------------------------------------------
# operators
# ----------------------------------------------------------------------------------
class _ConvBase(Operator):
    """Parameters and shape checks shared by Convolution and Deconvolution."""

    kernel = Param('shape', doc='kernel size: (w,), (h, w) or (d, h, w)')
    stride = Param('shape', (), doc='stride, default 1 per axis')
    dilate = Param('shape', (), doc='dilation, default 1 per axis')
    pad = Param('shape', (), doc='zero padding, default 0 per axis')
    num_filter = Param(int, doc='number of output channels')
    num_group = Param(int, 1, doc='number of groups')
    cudnn_tune = Param(str, None, doc='ignored (cuDNN algorithm choice)', choices=_TUNE)
    cudnn_off = Param(bool, False, doc='ignored')
    layout = Param(str, None, doc='NCW, NCHW or NCDHW (channels-last is GPU-only in '
                   'MXNet and not supported)', choices=_LAYOUTS)

    def check(self):
        nd = len(self.kernel)
        if nd not in (1, 2, 3):
            raise MXNetError('%s: kernel must have 1, 2 or 3 dimensions, got %s'
                             % (self.name, self.kernel))
        for p in ('stride', 'dilate', 'pad') + (('adj',) if hasattr(self, 'adj') else ()):
            v = getattr(self, p)
            if v and len(v) != nd:
                raise MXNetError('%s: %s %s must have as many dimensions as kernel %s'
                                 % (self.name, p, v, self.kernel))
        if min(self.kernel) <= 0 or min(self.st) <= 0 or min(self.dl) <= 0:
            raise MXNetError('%s: kernel, stride and dilate must be positive' % self.name)
        if self.layout not in (None, 'None', ('NCW', 'NCHW', 'NCDHW')[nd - 1]):
            raise MXNetError('%s: only NCW, NCHW and NCDHW layouts are supported, got %s'
                             % (self.name, self.layout))
        if self.num_group <= 0 or self.num_filter % self.num_group:
            raise MXNetError('%s: num_filter %d must be divisible by num_group %d'
                             % (self.name, self.num_filter, self.num_group))

    # stride, dilate and pad with MXNet's defaults filled in
    @property
    def st(self):
        return self.stride or (1,) * len(self.kernel)

    @property
    def dl(self):
        return self.dilate or (1,) * len(self.kernel)

    @property
    def pd(self):
        return self.pad or (0,) * len(self.kernel)

    def list_arguments(self):
        return ['data', 'weight'] + ([] if self.no_bias else ['bias'])

    def _check_data(self, dshape):
        nd = len(self.kernel)
        if len(dshape) != nd + 2:
            raise ShapeError('data must be %d-D (N, C, %s) for a kernel of %s, got %s'
                             % (nd + 2, ('W', 'H, W', 'D, H, W')[nd - 1], self.kernel,
                                tuple(dshape)))
        if dshape[1] and dshape[1] % self.num_group:
            raise ShapeError('data channels %d (shape %s) must be divisible by num_group %d'
                             % (dshape[1], tuple(dshape), self.num_group))

    def _fill(self, in_shapes, i, shape, what):
        try:
            in_shapes[i] = unify_shape(in_shapes[i], shape)
        except ShapeError:
            raise ShapeError('%s has shape %s but %s is expected from data and parameters'
                             % (what, tuple(in_shapes[i]), shape)) from None

    def infer_type(self, in_types):
        t = same_type(self, in_types)
        return [t] * len(in_types), [t], []

    def backward_bias(self, xp, dy):
        return dy.reshape(dy.shape[0], dy.shape[1], -1).sum(axis=(0, 2))


@register
class Convolution(_ConvBase):
    """N-D convolution: out = correlate(data, weight) + bias, channels first.

    Shapes: data (N, C, *S), weight (num_filter, C / num_group, *kernel), bias (num_filter,),
    out (N, num_filter, *O) with O = (S + 2 pad - dilate (kernel - 1) - 1) // stride + 1.

    >>> import numpy as np
    >>> op = Convolution(kernel=(3,), num_filter=1, no_bias=True)
    >>> op.forward(np, [np.arange(5.).reshape(1, 1, 5), np.ones((1, 1, 3))], [], False)[0]
    array([[[3., 6., 9.]]])
    """

    name = 'Convolution'
    workspace = Param(int, 1024, doc='ignored (MB of scratch space in MXNet)')
    no_bias = Param(bool, False, doc='no bias argument')

    def infer_shape(self, in_shapes):
        in_shapes = list(in_shapes)
        dshape = in_shapes[0]
        if dshape is None:
            return in_shapes, [None], []
        self._check_data(dshape)
        g, f = self.num_group, self.num_filter
        self._fill(in_shapes, 1, (f, dshape[1] // g) + tuple(self.kernel), 'weight')
        if not self.no_bias:
            self._fill(in_shapes, 2, (f,), 'bias')
        out = []
        for s, k, t, p, d in zip(dshape[2:], self.kernel, self.st, self.pd, self.dl):
            if s and d * (k - 1) + 1 > s + 2 * p:
                raise ShapeError('dilated kernel %s exceeds the padded input: data %s, pad %s'
                                 % (self.kernel, tuple(dshape), self.pd))
            out.append(conv_out_size(s, k, t, p, d))
        return in_shapes, [(dshape[0], f) + tuple(out)], []

    def forward(self, xp, inputs, aux, is_train):
        b = None if self.no_bias else inputs[2]
        return [conv_forward(xp, inputs[0], inputs[1], b, self.st, self.pd, self.dl,
                             self.num_group)]

    def fast_forward(self, xp, is_train):
        st, pd, dl, g = self.st, self.pd, self.dl, self.num_group
        if self.no_bias:
            return lambda x, w: conv_forward(xp, x, w, None, st, pd, dl, g)
        return lambda x, w, b: conv_forward(xp, x, w, b, st, pd, dl, g)

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        x, w = inputs[0], inputs[1]
        dy = out_grads[0]
        grads = [None] * len(inputs)
        # each gradient lays dy out as its GEMM needs it (the weight's may be a wide grid)
        if need[0]:
            grads[0] = conv_backward_data(xp, dy, w, x.shape, self.st, self.pd, self.dl,
                                          self.num_group)
        if need[1]:
            grads[1] = conv_backward_weight(xp, x, dy, self.kernel, self.st, self.pd,
                                            self.dl, self.num_group)
        if not self.no_bias and need[2]:
            grads[2] = self.backward_bias(xp, dy)
        return grads


@register
class Deconvolution(_ConvBase):
    """Transposed convolution (the gradient of Convolution with respect to its data).

    Shapes: data (N, C, *S), weight (C, num_filter / num_group, *kernel), bias
    (num_filter,), out (N, num_filter, *O) with
    O = stride (S - 1) + dilate (kernel - 1) + 1 - 2 pad + adj. A nonzero ``target_shape``
    replaces ``pad`` and ``adj`` by the values giving that output, as MXNet computes them:
    total = stride (S - 1) + dilate (kernel - 1) + 1 - target, adj = total % 2,
    pad = (total + 1) // 2. ``no_bias`` defaults to True, as in MXNet.
    """

    name = 'Deconvolution'
    adj = Param('shape', (), doc='extra rows/columns at the end of the output')
    target_shape = Param('shape', (), doc='output spatial shape; overrides pad and adj')
    workspace = Param(int, 512, doc='ignored (MB of scratch space in MXNet)')
    no_bias = Param(bool, True, doc='no bias argument (MXNet default True)')

    def check(self):
        super().check()
        if self.target_shape and len(self.target_shape) != len(self.kernel):
            raise MXNetError('Deconvolution: target_shape %s must have as many dimensions '
                             'as kernel %s' % (self.target_shape, self.kernel))

    def pad_adj(self, spatial):
        """(pad, adj) per axis for input spatial shape ``spatial`` (0 = unknown)."""
        nd = len(self.kernel)
        if self.target_shape and any(self.target_shape):
            pad, adj = [], []
            for s, k, t, d, tg in zip(spatial, self.kernel, self.st, self.dl,
                                      self.target_shape):
                total = t * (s - 1) + d * (k - 1) + 1
                if s and total < tg:
                    raise ShapeError('Deconvolution: target_shape %s is too big for data '
                                     'spatial shape %s' % (self.target_shape, tuple(spatial)))
                total -= tg
                pad.append((total + 1) // 2)
                adj.append(total % 2)
        else:
            pad, adj = list(self.pd), list(self.adj or (0,) * nd)
        for a, t in zip(adj, self.st):
            if a >= t:
                raise ShapeError('Deconvolution: adj %s must be smaller than stride %s'
                                 % (tuple(adj), self.st))
        return pad, adj

    def out_spatial(self, spatial):
        pad, adj = self.pad_adj(spatial)
        return tuple(t * (s - 1) + d * (k - 1) + 1 - 2 * p + a if s else 0
                     for s, k, t, d, p, a in zip(spatial, self.kernel, self.st, self.dl,
                                                 pad, adj))

    def infer_shape(self, in_shapes):
        in_shapes = list(in_shapes)
        dshape = in_shapes[0]
        if dshape is None:
            return in_shapes, [None], []
        self._check_data(dshape)
        g, f = self.num_group, self.num_filter
        self._fill(in_shapes, 1, (dshape[1], f // g) + tuple(self.kernel), 'weight')
        if not self.no_bias:
            self._fill(in_shapes, 2, (f,), 'bias')
        out = self.out_spatial(dshape[2:])
        if any(o < 0 for o in out):
            raise ShapeError('Deconvolution: negative output shape %s for data %s'
                             % (out, tuple(dshape)))
        return in_shapes, [(dshape[0], f) + out], []

    def _forward(self, xp, x, w, b):
        pad, _ = self.pad_adj(x.shape[2:])
        shape = (x.shape[0], self.num_filter) + self.out_spatial(x.shape[2:])
        y = conv_backward_data(xp, x, w, shape, self.st, pad, self.dl, self.num_group)
        if b is not None:
            y += b.reshape((-1,) + (1,) * len(self.kernel))
        return y

    def forward(self, xp, inputs, aux, is_train):
        return [self._forward(xp, inputs[0], inputs[1],
                              None if self.no_bias else inputs[2])]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        x, w = inputs[0], inputs[1]
        dy = out_grads[0]
        pad, _ = self.pad_adj(x.shape[2:])
        grads = [None] * len(inputs)
        if need[0]:
            grads[0] = conv_forward(xp, dy, w, None, self.st, pad, self.dl, self.num_group)
        if need[1]:
            grads[1] = conv_backward_weight(xp, dy, x, self.kernel, self.st, pad, self.dl,
                                            self.num_group)
        if not self.no_bias and need[2]:
            grads[2] = dy.sum(axis=(0,) + tuple(range(2, dy.ndim)))
        return grads
