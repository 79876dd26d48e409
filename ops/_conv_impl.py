"""The array arithmetic behind ``symgraph.ops.conv`` (and Pooling's padding and windows).

A helper module, not an operator family. The arithmetic lives in a few pure functions over
``xp`` arrays of layout (N, C, *spatial): :func:`conv_forward`, :func:`conv_backward_data` and
:func:`conv_backward_weight`. Deconvolution is the same three functions with the roles of data
and output swapped (its forward is the convolution's backward-data and so on). The only
memory-layout transformation is :func:`_im2col` (and its adjoint :func:`_col2im`); on CuPy
arrays they call the CUDA kernels of ``symgraph.cuda.loader`` (1-D and 2-D, float32/float64)
and the GEMMs go to cuBLAS through ``xp.matmul``; the array code stays the reference.

Column matrices use layout (C, *kernel, N, *grid): one GEMM of (F, C*K) by (C*K, N*P) then
covers the whole batch. NumPy's batched ``matmul`` does not call BLAS when an operand is
broadcast over the batch, so one large GEMM is an order of magnitude faster here. The grid
is the output's spatial shape, or for unit strides on NumPy a slightly wider one that makes
the im2col copy run over long contiguous rows (:func:`_wide_cols`). On NumPy the columns
live in a reused per-thread workspace (:func:`_workspace`).

On NumPy float32 arrays the three functions first offer the case to the CPU backend
(oneDNN's kernels, :func:`symgraph.opdef.cpu_kernel`); the array code runs where it has none or
declines the geometry.

Each of the three takes ``dest``: an array (an executor's buffer) to write the result into
where it fits (:func:`_fits`); the result is then ``dest`` itself, else a new array.
"""
import threading
from math import prod

import numpy as np

from symgraph.opdef import gpu_kernel

from ._util import F32, KERNELS, on_backend

_TRANSPOSED_BWD = True
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
    cols = loader.im2col(x, kernel, stride, pad, dilate, layout='knl')
    ck, n, p = cols.shape
    return cols.reshape(ck, n * p)


def _gpu_col2im(xp, cols, shape, kernel, stride, pad, dilate):
    """Columns in (C*K, N*P) layout folded by the kernel onto (N, C, *S)."""
    from symgraph.cuda import loader
    ck, n = cols.shape[0], shape[0]
    return loader.col2im(cols.reshape(ck, n, -1), tuple(shape), kernel, stride, pad, dilate,
                         layout='knl')


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


def _col2im(xp, cols, shape, kernel, stride, pad, dilate, out, dest=None):
    """Adjoint of :func:`_im2col`: columns (C, *kernel, N, *out) summed into (N, C, *S).

    One strided accumulation per kernel offset; the result is built as (C, N, *S) so every
    accumulation reads a contiguous block of ``cols``.
    """
    if _use_kernels(xp, cols.dtype, kernel, pad):
        return _gpu_col2im(xp, cols, shape, kernel, stride, pad, dilate)     # (no dest)
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
    return _contiguous(xp, xp.swapaxes(acc[(Ellipsis,) + crop], 0, 1), dest)


def _fits(dest, shape, dtype):
    """Whether ``dest`` (None or an array) can take a C-contiguous result of ``shape`` and
    ``dtype``."""
    return dest is not None and tuple(dest.shape) == tuple(shape) and dest.dtype == dtype \
        and dest.flags.c_contiguous and getattr(dest.flags, 'writeable', True)   # (CuPy: none)


def _contiguous(xp, a, dest=None):
    """``a`` as a C-contiguous array: copied into ``dest`` where it fits."""
    if _fits(dest, a.shape, a.dtype):
        xp.copyto(dest, a)
        return dest
    return xp.ascontiguousarray(a)


def _channels_first(xp, y2d, f, n, grid, out, dest=None):
    """(F, N * prod(grid)) GEMM result -> contiguous (N, F, *out) (cropping the grid)."""
    y = y2d.reshape((f, n) + tuple(grid))
    if tuple(grid) != tuple(out):
        y = y[(Ellipsis,) + tuple(slice(0, o) for o in out)]
    return _contiguous(xp, xp.swapaxes(y, 0, 1), dest)


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


def _backend(xp, *arrays):
    """The CPU kernels (``ops/_util.py``'s :data:`KERNELS`) when every array is a NumPy
    float32 array and a backend is loaded, else None."""
    if xp is not np:
        return None
    for a in arrays:        # (a loop of identity tests: this runs at every call)
        if a is not None and a.dtype is not F32:
            return None
    return KERNELS if KERNELS.loaded() else None


def _cudnn(xp, name, off=False):
    """cuDNN's kernel ``name`` for CuPy arrays (:func:`symgraph.opdef.gpu_kernel`: None
    without the library or a GPU, one log line saying why), else None; None too where the
    node says ``cudnn_off`` (``off``)."""
    return None if xp is np or off else gpu_kernel(name)


def conv_forward(xp, x, w, b, stride, pad, dilate, groups, after=None, dest=None,
                 site=None, cudnn_off=False):
    """Cross-correlation of x (N, C, *S) with w (F, C/groups, *K), plus bias b (F,) or None.

    ``pad`` pads before each spatial axis and ``after`` (default ``pad``) after it; negative
    values crop. ``site``: (the Step's replays, tag) of a call the CPU backend may replay
    on the same arrays (see ``BackendCore.record``). ``cudnn_off``: CuPy arrays never go to
    cuDNN (the node's ``cudnn_off``), only to symgraph's own kernels.
    """
    kernel = w.shape[2:]
    after = pad if after is None else after

    def out_size():
        return tuple(conv_out_size(s, k, t, p, d) if p == a
                     else conv_out_size(s + p + a, k, t, 0, d)
                     for s, k, t, p, a, d in zip(x.shape[2:], kernel, stride, pad, after,
                                                 dilate))

    def onednn():
        be = _backend(xp, x, w, b)
        out = out_size()
        if be is None or min(pad) < 0 or min(out) <= 0:
            return None
        return be.conv_forward(x, w, b, stride, pad, dilate, groups,
                               x.shape[:1] + (w.shape[0],) + out, out=dest)
    if xp is np:
        y = on_backend(site, (x, w, b, dest), onednn)
        if y is not None:
            return y
    else:
        kern = _cudnn(xp, 'conv_forward', cudnn_off)
        y = None if kern is None or tuple(after) != tuple(pad) else kern(
            x, w, b, stride, pad, dilate, groups, out=dest)
        if y is not None:
            return y
    out = out_size()
    cols, grid = _im2col(xp, x, kernel, stride, pad, dilate, out, after)
    f = w.shape[0]
    y = _grouped_matmul(xp, w.reshape(f, -1), cols, groups)
    if b is not None:
        y += b.reshape(f, 1)
    return _channels_first(xp, y, f, x.shape[0], grid, out, dest)


def _flat_grad(xp, dy, grid=None):
    """(N, F, *O) -> contiguous (F, N * prod(grid)), the layout every GEMM here uses; grid
    positions outside O (a wide grid, default O) are zero."""
    f, n, out = dy.shape[1], dy.shape[0], dy.shape[2:]
    if grid is None or tuple(grid) == tuple(out):
        return xp.ascontiguousarray(xp.swapaxes(dy, 0, 1)).reshape(f, -1)
    dyt = xp.zeros((f, n) + tuple(grid), dtype=dy.dtype)
    dyt[(Ellipsis,) + tuple(slice(0, o) for o in out)] = xp.swapaxes(dy, 0, 1)
    return dyt.reshape(f, -1)


def conv_backward_data(xp, dy, w, shape, stride, pad, dilate, groups, dyt=None, dest=None,
                       site=None, cudnn_off=False):
    """Gradient of :func:`conv_forward` with respect to x of ``shape``, given dy (N, F, *O).

    With unit stride this is a convolution of the padded dy with the flipped, transposed
    kernel (an im2col and a GEMM); otherwise a GEMM and :func:`_col2im`. ``dyt`` is dy
    already in (F, N*P) layout when the caller has it. ``site``, ``cudnn_off``: as
    :func:`conv_forward`.
    """
    if xp is np:
        def onednn():
            be = _backend(xp, dy, w)
            return None if be is None else be.conv_backward_data(
                dy, w, tuple(shape), stride, pad, dilate, groups, out=dest)
        dx = on_backend(site, (dy, w, dest), onednn)
        if dx is not None:
            return dx
    else:
        kern = _cudnn(xp, 'conv_backward_data', cudnn_off)
        dx = None if kern is None else kern(dy, w, tuple(shape), stride, pad, dilate,
                                             groups, out=dest)
        if dx is not None:
            return dx
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
        return conv_forward(xp, dy, wt, None, stride, before, dilate, groups, after, dest,
                            cudnn_off=cudnn_off)
    dyt = _flat_grad(xp, dy) if dyt is None else dyt
    cols = _grouped_matmul(xp, w.reshape(f, -1), dyt, groups, trans_a=True)
    return _col2im(xp, cols, shape, kernel, stride, pad, dilate, out, dest)


def conv_backward_weight(xp, x, dy, kernel, stride, pad, dilate, groups, dyt=None,
                         dest=None, site=None, cudnn_off=False):
    """Gradient of :func:`conv_forward` with respect to w (F, C/groups, *kernel).
    ``site``, ``cudnn_off``: as :func:`conv_forward`."""
    if xp is np:
        def onednn():
            be = _backend(xp, x, dy)
            return None if be is None else be.conv_backward_weights(
                x, dy, (dy.shape[1], x.shape[1] // groups) + tuple(kernel), stride, pad,
                dilate, groups, out=dest)
        dw = on_backend(site, (x, dy, dest), onednn)
        if dw is not None:
            return dw
    else:
        kern = _cudnn(xp, 'conv_backward_weights', cudnn_off)
        dw = None if kern is None else kern(
            x, dy, (dy.shape[1], x.shape[1] // groups) + tuple(kernel), stride, pad, dilate,
            groups, out=dest)
        if dw is not None:
            return dw
    out = dy.shape[2:]
    cols, grid = _im2col(xp, x, kernel, stride, pad, dilate, out)
    if dyt is None or dyt.shape[1] != cols.shape[1]:
        dyt = _flat_grad(xp, dy, grid)
    # (C*K, NP) x (NP, F) is markedly faster in OpenBLAS than (F, NP) x (NP, C*K)
    dwt = _grouped_matmul(xp, cols, dyt, groups, trans_b=True)
    f = dy.shape[1]
    dwt = dwt.reshape(groups, -1, f // groups)
    shape = (f, x.shape[1] // groups) + tuple(kernel)
    dwt = xp.swapaxes(dwt, 1, 2)
    if _fits(dest, shape, dwt.dtype):
        xp.copyto(dest.reshape(dwt.shape), dwt)
        return dest
    return xp.ascontiguousarray(dwt).reshape(shape)
