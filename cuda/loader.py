"""Compile and launch symgraph's CUDA kernels.

This is the only module that knows the kernel file names, the compile options
and the launch geometry.  The ``*.cu`` files are package data: plain
``extern "C" __global__`` kernels and no host code.  Each is compiled once per
(file, device, options) into a ``cupy.RawModule``; CuPy is imported lazily, so
importing this module never needs CuPy or a GPU.

Every public launcher takes arrays of one array module and an optional
``backend``.  The default backend launches on the current CuPy device and
stream.  The tests pass a backend whose ``xp`` is NumPy and whose ``launch``
runs the very same kernel source on the CPU emulator (``cuda/emu``), so the
geometry and argument marshalling below are exercised without a GPU.

A backend needs two members: ``xp`` (the array module used to allocate
outputs) and ``launch(filename, kernel_name, grid, block, args)`` where grid
and block are 3-tuples and ``args`` holds arrays, ``None`` (a NULL pointer) and
NumPy scalars whose dtypes match the kernel's C parameter types exactly
(CuPy would pass a Python int as a 64-bit integer).
"""
import importlib.resources
import math
import threading

import numpy

from . import import_cupy

__all__ = [
    'KERNEL_FILES', 'PREAMBLE_FILE', 'compile_options', 'source', 'get_kernel',
    'im2col', 'col2im', 'conv_output_shape',
    'batchnorm_stats', 'batchnorm_forward', 'batchnorm_update_moving', 'batchnorm_backward',
    'nms_keep', 'ring_add',
]

#: Threads per block of the per-channel reduction kernels (their shared
#: arrays are sized by it, so it reaches them as -DSG_REDUCE_THREADS).
REDUCE_THREADS = 256
#: Boxes per NMS block: one bit of a 64-bit mask word per box.
NMS_THREADS = 64
#: Threads per block of the elementwise (grid-stride) kernels.
BLOCK = 256
#: Cap on blocks of a grid-stride kernel; more elements loop inside a thread.
MAX_BLOCKS = 8192
#: Cap on the blocks that share one channel in the reduction kernels.
MAX_PARTS = 64

#: Prepended to every kernel file (half type, geometry checks).
PREAMBLE_FILE = 'common.h'

#: Kernel files and the extern "C" kernels each one defines.
KERNEL_FILES = {
    'conv.cu': ('im2col_f32', 'im2col_f64', 'col2im_f32', 'col2im_f64'),
    'batchnorm.cu': tuple(
        'bn_%s_%s' % (stage, suffix)
        for stage in ('stats_partial', 'stats_final', 'forward', 'update_moving',
                      'backward_partial', 'backward_final', 'backward_dx')
        for suffix in ('f32', 'f64')),
    'nms.cu': ('nms_mask_f32', 'nms_mask_f64', 'nms_sweep'),
    'allreduce.cu': ('ring_add_f16', 'ring_add_f32', 'ring_add_f64'),
}


_SUFFIX = {numpy.dtype(numpy.float16): 'f16', numpy.dtype(numpy.float32): 'f32',
           numpy.dtype(numpy.float64): 'f64'}

_lock = threading.Lock()
_modules = {}
_sources = {}


def compile_options(arch=None):
    """NVRTC options of every kernel file.

    Parameters
    ----------
    arch : str or None
        A virtual architecture such as ``'compute_80'``.  ``None`` (what the
        loader itself uses) leaves the architecture to CuPy, which targets the
        current device and adds ``-arch`` itself.

    Returns
    -------
    tuple of str

    Notes
    -----
    CuPy adds options of its own at run time (include paths, ``-ftz=true``,
    ``-arch=sm_XX``, ``--device-as-default-execution-space``); the CI test
    ``test_kernels_compile_through_cupys_own_pipeline`` compiles with exactly
    that set.  Under ``-ftz=true`` float32 subnormals flush to zero on the
    GPU, which the CPU emulator does not do: kernel tests use normal numbers.
    """
    # read at each call: the launches use the module's current block sizes, so the
    # shared arrays they size must come from the same values (and the cache key with them)
    base = ('--std=c++14', '-DSG_REDUCE_THREADS=%d' % REDUCE_THREADS,
            '-DSG_NMS_THREADS=%d' % NMS_THREADS)
    if arch is None:
        return base
    return base + ('--gpu-architecture=%s' % arch,)


def source(filename):
    """Full text compiled for ``filename``: the preamble, then the file.

    A ``#line`` directive keeps compiler messages pointing at the ``.cu``
    file's own lines.
    """
    if filename not in KERNEL_FILES:
        raise KeyError('unknown kernel file %r; known: %s' % (filename, sorted(KERNEL_FILES)))
    with _lock:
        text = _sources.get(filename)
        if text is None:
            files = importlib.resources.files(__name__.rpartition('.')[0])
            preamble = (files / PREAMBLE_FILE).read_text(encoding='utf-8')
            body = (files / filename).read_text(encoding='utf-8')
            text = '%s\n#line 1 "%s"\n%s' % (preamble, filename, body)
            _sources[filename] = text
    return text


def get_kernel(filename, name):
    """The ``cupy.RawKernel`` ``name`` of ``filename`` on the current device."""
    cupy = import_cupy()
    device = cupy.cuda.Device().id
    options = compile_options()
    key = (filename, device, options)
    with _lock:
        module = _modules.get(key)
    if module is None:
        module = cupy.RawModule(code=source(filename), options=options)
        with _lock:
            module = _modules.setdefault(key, module)
    return module.get_function(name)


class _CupyBackend:
    """Launch on the current CuPy device and stream."""

    @property
    def xp(self):
        return import_cupy()

    def launch(self, filename, name, grid, block, args):
        get_kernel(filename, name)(grid, block, args)


_CUPY = _CupyBackend()


def _backend(backend):
    return _CUPY if backend is None else backend


def _suffix(dtype, allowed=('f32', 'f64')):
    suffix = _SUFFIX.get(numpy.dtype(dtype))
    if suffix not in allowed:
        names = sorted(str(d) for d, s in _SUFFIX.items() if s in allowed)
        raise TypeError('CUDA kernel takes %s, got %s' % (' or '.join(names), dtype))
    return suffix


def _grid(total, block=BLOCK):
    """1-D grid for a grid-stride loop over ``total`` elements."""
    return (max(1, min(-(-total // block), MAX_BLOCKS)), 1, 1)


#: Cap on gridDim.y of the plane kernels (CUDA's limit); more planes loop in a thread.
MAX_PLANE_BLOCKS = 65535


def _plane_launch(planes, length):
    """(grid, block) for the plane kernels (im2col, col2im): x strides over the
    ``length`` positions of a plane, y over the ``planes``.  A warp-rounded x extent
    keeps small planes (a 7 x 7 output) from idling most of a block."""
    bx = min(BLOCK, 32 * max(1, -(-length // 32)))
    by = BLOCK // bx
    grid = (max(1, min(-(-length // bx), MAX_BLOCKS)),
            max(1, min(-(-planes // by), MAX_PLANE_BLOCKS)), 1)
    return grid, (bx, by, 1)


def _same_dtype(*arrays):
    dtype = arrays[0].dtype
    for a in arrays[1:]:
        if a.dtype != dtype:
            raise TypeError('mixed dtypes %s and %s' % (dtype, a.dtype))
    return dtype


def _i32(v):
    if not -2 ** 31 <= v < 2 ** 31:
        raise ValueError('%d does not fit the kernel\'s 32-bit index' % v)
    return numpy.int32(v)


# ---------------------------------------------------------------------------
# convolution


def _tuple(value, nd, default, what):
    if value is None or value == ():
        return (default,) * nd
    value = tuple(int(v) for v in value)
    if len(value) != nd:
        raise ValueError('%s must have %d entries, got %r' % (what, nd, value))
    return value


def _conv_geometry(x_shape, kernel, stride, pad, dilate):
    """(N, C, H, W), (KH, KW), (SH, SW), (PH, PW), (DH, DW), (OH, OW)."""
    nd = len(kernel)
    if nd not in (1, 2) or len(x_shape) != nd + 2:
        raise ValueError('im2col handles 1-D and 2-D convolution: data %r, kernel %r'
                         % (tuple(x_shape), tuple(kernel)))
    kernel = _tuple(kernel, nd, 1, 'kernel')
    stride = _tuple(stride, nd, 1, 'stride')
    pad = _tuple(pad, nd, 0, 'pad')
    dilate = _tuple(dilate, nd, 1, 'dilate')
    if min(stride + dilate + kernel) < 1 or min(pad) < 0:
        raise ValueError('kernel, stride and dilate must be >= 1 and pad >= 0')
    spatial = tuple(x_shape[2:])
    out = tuple((s + 2 * p - d * (k - 1) - 1) // st + 1
                for s, k, st, p, d in zip(spatial, kernel, stride, pad, dilate))
    if min(out) < 1:
        raise ValueError('kernel %r (dilate %r) is larger than padded data %r'
                         % (kernel, dilate, spatial))
    if nd == 1:  # 1-D is 2-D with a height of 1
        spatial, kernel, stride, pad, dilate, out = (
            (1,) + spatial, (1,) + kernel, (1,) + stride, (0,) + pad, (1,) + dilate,
            (1,) + out)
    return tuple(x_shape[:2]), spatial, kernel, stride, pad, dilate, out


def conv_output_shape(x_shape, kernel, stride=None, pad=None, dilate=None):
    """Spatial output shape of a convolution over data of ``x_shape``.

    >>> conv_output_shape((2, 3, 7, 5), (3, 3), stride=(2, 1), pad=(1, 0))
    (4, 3)
    """
    out = _conv_geometry(x_shape, kernel, stride, pad, dilate)[-1]
    return out[1:] if len(kernel) == 1 else out


#: Column layouts of im2col/col2im: batch-major (N, C*K, P) or channel-major (C*K, N, P).
LAYOUTS = ('nkl', 'knl')


def _conv_args(x_shape, channels, c0, kernel, stride, pad, dilate, layout='nkl'):
    (n, c_total), (h, w), (kh, kw), (sh, sw), (ph, pw), (dh, dw), (oh, ow) = \
        _conv_geometry(x_shape, kernel, stride, pad, dilate)
    if channels is None:
        channels = c_total - c0
    if c0 < 0 or channels < 0 or c0 + channels > c_total:
        raise ValueError('channels [%d, %d) outside the data\'s %d channels'
                         % (c0, c0 + channels, c_total))
    if layout not in LAYOUTS:
        raise ValueError('layout must be one of %s, got %r' % (LAYOUTS, layout))
    knl = layout == 'knl'
    ints = (n, c_total, c0, channels, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow, knl)
    # the kernels index within a plane and a column block in 32 bits
    k = int(_i32(channels * kh * kw))
    _i32(oh * ow)
    _i32(h * w)
    return tuple(_i32(v) for v in ints), ((k, n, oh * ow) if knl else (n, k, oh * ow))


def im2col(x, kernel, stride=None, pad=None, dilate=None, c0=0, channels=None, layout='nkl',
           backend=None):
    """Unfold convolution patches into columns.

    Parameters
    ----------
    x : array, shape (N, C, H, W) or (N, C, W)
        float32 or float64 data.
    kernel, stride, pad, dilate : tuple of int
        One entry per spatial axis, as in MXNet's Convolution (symmetric pad).
    c0, channels : int
        Unfold channels ``[c0, c0 + channels)`` only (one group of a grouped
        convolution); by default all of them.
    layout : {'nkl', 'knl'}
        ``'nkl'``: columns of shape (N, K, P); ``'knl'``: (K, N, P), so that
        ``cols.reshape(K, N * P)`` is one GEMM operand for the whole batch.
    backend : object, optional
        See the module docstring; default CuPy.

    Returns
    -------
    array, shape (N, K, P) or (K, N, P)
        K = channels * prod(kernel), P = prod(output spatial shape).  Row
        ``(c * KH + kh) * KW + kw`` holds tap (kh, kw) of channel c, so a
        convolution is ``weight.reshape(F, -1) @ cols``.
    """
    be = _backend(backend)
    xp = be.xp
    x = xp.ascontiguousarray(x)
    name = 'im2col_' + _suffix(x.dtype)
    ints, shape = _conv_args(x.shape, channels, c0, kernel, stride, pad, dilate, layout)
    cols = xp.empty(shape, dtype=x.dtype)
    if cols.size:
        grid, block = _plane_launch(cols.size // shape[2], shape[2])
        be.launch('conv.cu', name, grid, block, (x, cols) + ints)
    return cols


def col2im(cols, x_shape, kernel, stride=None, pad=None, dilate=None, c0=0, out=None,
           layout='nkl', backend=None):
    """Fold columns back onto data: the adjoint of :func:`im2col`.

    Each data element receives the sum of the column entries that read it
    (summed in a fixed order, without atomics).  Channels ``[c0, c0 + C)`` of
    ``out`` are overwritten, with C = K // prod(kernel) (K is the columns'
    axis 1 in the ``'nkl'`` layout, axis 0 in ``'knl'``); the other channels
    are left as they are (zero when ``out`` is None).

    Returns
    -------
    array of shape ``x_shape``
    """
    be = _backend(backend)
    xp = be.xp
    cols = xp.ascontiguousarray(cols)
    name = 'col2im_' + _suffix(cols.dtype)
    taps = math.prod(int(k) for k in kernel)
    if taps < 1:
        raise ValueError('kernel must be >= 1 on every axis, got %r' % (tuple(kernel),))
    rows = cols.shape[0 if layout == 'knl' else 1] if cols.ndim == 3 else 0
    ints, shape = _conv_args(tuple(x_shape), rows // taps, c0, kernel, stride, pad,
                             dilate, layout)
    if tuple(cols.shape) != shape or rows % taps:
        raise ValueError('columns of shape %r do not match data %r (expected %r)'
                         % (tuple(cols.shape), tuple(x_shape), shape))
    if out is None:
        out = xp.zeros(tuple(x_shape), dtype=cols.dtype)
    elif out.dtype != cols.dtype or tuple(out.shape) != tuple(x_shape) \
            or not out.flags.c_contiguous:
        raise ValueError('out must be a C-contiguous %s array of shape %r'
                         % (cols.dtype, tuple(x_shape)))
    # one thread per pixel of the channels written
    planes, plane = int(ints[0]) * int(ints[3]), int(ints[4]) * int(ints[5])
    if planes * plane:
        grid, block = _plane_launch(planes, plane)
        be.launch('conv.cu', name, grid, block, (cols, out) + ints)
    return out


# ---------------------------------------------------------------------------
# batch normalisation, on data laid out as (N, C, S)


def _check3d(x):
    if x.ndim != 3:
        raise ValueError('batch-norm kernels take (N, C, spatial) data, got shape %r'
                         % (tuple(x.shape),))
    n, c, s = (int(v) for v in x.shape)
    return _i32(n), _i32(c), numpy.int64(s)


def _check_channels(c, **arrays):
    # per-channel arrays shorter than C would be read past their end on the device
    for name, a in arrays.items():
        if a.shape != (c,):
            raise ValueError('%s must have shape (%d,) (one entry per channel), got %r'
                             % (name, c, tuple(a.shape)))


def _parts(m):
    """Blocks sharing one channel: enough for >= 16 elements per thread."""
    return max(1, min(MAX_PARTS, -(-m // (REDUCE_THREADS * 16))))


def _scalar(dtype, value):
    return numpy.dtype(dtype).type(value)


def batchnorm_stats(x, eps=0.0, backend=None):
    """Per-channel mean, biased variance and ``1 / sqrt(var + eps)`` of ``x`` (N, C, S).

    Welford per thread, merged pairwise: stable when the mean is large against
    the spread.  An empty batch gives mean 0 and variance 0.

    Returns
    -------
    (mean, var, inv_std) : arrays of shape (C,) and the dtype of ``x``
    """
    be = _backend(backend)
    xp = be.xp
    x = xp.ascontiguousarray(x)
    suffix = _suffix(x.dtype)
    n, c, s = _check3d(x)
    mean, var, inv_std = (xp.empty((int(c),), dtype=x.dtype) for _ in range(3))
    if c == 0:
        return mean, var, inv_std
    parts = _parts(int(n) * int(s))
    partial = xp.empty((int(c), parts, 3), dtype=x.dtype)
    block = (REDUCE_THREADS, 1, 1)
    be.launch('batchnorm.cu', 'bn_stats_partial_' + suffix, (int(c), parts, 1), block,
              (x, partial, n, c, s))
    be.launch('batchnorm.cu', 'bn_stats_final_' + suffix, (int(c), 1, 1), block,
              (partial, _i32(parts), _scalar(x.dtype, eps), mean, var, inv_std))
    return mean, var, inv_std


def batchnorm_forward(x, mean, inv_std, gamma, beta, fix_gamma, out=None, backend=None):
    """``(x - mean) * inv_std * gamma + beta`` per channel, fused.

    ``x`` has shape (N, C, S); the statistics and parameters shape (C,);
    ``inv_std`` is ``1 / sqrt(var + eps)`` (:func:`batchnorm_stats` gives it).
    With ``fix_gamma`` gamma acts as 1 whatever it holds (MXNet).
    """
    be = _backend(backend)
    xp = be.xp
    x, mean, inv_std, gamma, beta = (xp.ascontiguousarray(a)
                                     for a in (x, mean, inv_std, gamma, beta))
    dtype = _same_dtype(x, mean, inv_std, gamma, beta)
    suffix = _suffix(dtype)
    n, c, s = _check3d(x)
    _check_channels(int(c), mean=mean, inv_std=inv_std, gamma=gamma, beta=beta)
    if out is None:
        out = xp.empty(x.shape, dtype=dtype)
    elif out.dtype != dtype or out.shape != x.shape or not out.flags.c_contiguous:
        raise ValueError('out must be a C-contiguous %s array of shape %r'
                         % (dtype, tuple(x.shape)))
    if x.size:
        be.launch('batchnorm.cu', 'bn_forward_' + suffix, _grid(x.size), (BLOCK, 1, 1),
                  (x, out, mean, inv_std, gamma, beta, numpy.int32(bool(fix_gamma)), n, c, s))
    return out


def batchnorm_update_moving(moving_mean, moving_var, mean, var, momentum, backend=None):
    """In place: ``moving = moving * momentum + batch * (1 - momentum)``.

    MXNet updates ``moving_var`` with the biased batch variance.
    """
    be = _backend(backend)
    dtype = _same_dtype(moving_mean, moving_var, mean, var)
    suffix = _suffix(dtype)
    for a in (moving_mean, moving_var):
        if not a.flags.c_contiguous:
            raise ValueError('moving statistics must be C-contiguous (updated in place)')
    xp = be.xp
    mean, var = xp.ascontiguousarray(mean), xp.ascontiguousarray(var)
    c = moving_mean.size
    _check_channels(c, moving_mean=moving_mean.reshape(-1), moving_var=moving_var,
                    mean=mean, var=var)
    if c:
        be.launch('batchnorm.cu', 'bn_update_moving_' + suffix, _grid(c), (BLOCK, 1, 1),
                  (moving_mean, moving_var, mean, var, _scalar(dtype, momentum), _i32(c)))
    return moving_mean, moving_var


def batchnorm_backward(dy, x, mean, inv_std, gamma, fix_gamma, use_global_stats=False,
                       dx_out=None, backend=None):
    """Gradients of :func:`batchnorm_forward`.

    ``mean`` and ``inv_std`` are what the forward pass used: the batch's (then
    the gradient flows through them too) or, with ``use_global_stats``, those
    of the moving statistics (treated as constants).

    ``dx_out``: a C-contiguous array of ``x``'s shape and dtype to write dx
    into (then returned as dx), or None for a new one.

    Returns
    -------
    (dx, dgamma, dbeta)
        ``dgamma`` is zero under ``fix_gamma``, as in MXNet.
    """
    be = _backend(backend)
    xp = be.xp
    dy, x, mean, inv_std, gamma = (xp.ascontiguousarray(a) for a in (dy, x, mean, inv_std,
                                                                      gamma))
    dtype = _same_dtype(dy, x, mean, inv_std, gamma)
    suffix = _suffix(dtype)
    if dy.shape != x.shape:
        raise ValueError('dy %r and x %r differ' % (tuple(dy.shape), tuple(x.shape)))
    n, c, s = _check3d(x)
    _check_channels(int(c), mean=mean, inv_std=inv_std, gamma=gamma)
    if dx_out is None:
        dx = xp.empty(x.shape, dtype=dtype)
    elif dx_out.dtype != dtype or dx_out.shape != x.shape or not dx_out.flags.c_contiguous:
        raise ValueError('dx_out must be a C-contiguous %s array of shape %r'
                         % (dtype, tuple(x.shape)))
    else:
        dx = dx_out
    dgamma = xp.empty((int(c),), dtype=dtype)
    dbeta = xp.empty((int(c),), dtype=dtype)
    if c == 0:
        return dx, dgamma, dbeta
    parts = _parts(int(n) * int(s))
    partial = xp.empty((int(c), parts, 2), dtype=dtype)
    sums = xp.empty((int(c), 2), dtype=dtype)
    fix = numpy.int32(bool(fix_gamma))
    block = (REDUCE_THREADS, 1, 1)
    be.launch('batchnorm.cu', 'bn_backward_partial_' + suffix, (int(c), parts, 1), block,
              (dy, x, mean, inv_std, partial, n, c, s))
    be.launch('batchnorm.cu', 'bn_backward_final_' + suffix, (int(c), 1, 1), block,
              (partial, _i32(parts), fix, sums, dgamma, dbeta))
    if x.size:
        be.launch('batchnorm.cu', 'bn_backward_dx_' + suffix, _grid(x.size), (BLOCK, 1, 1),
                  (dy, x, mean, inv_std, gamma, sums, fix,
                   numpy.int32(bool(use_global_stats)), dx, n, c, s))
    return dx, dgamma, dbeta


# ---------------------------------------------------------------------------
# non-maximum suppression


def nms_keep(boxes, thresh, ids=None, backend=None):
    """Greedy NMS over boxes already sorted by decreasing score.

    Parameters
    ----------
    boxes : array, shape (n, 4)
        Corners (x1, y1, x2, y2), float32 or float64.
    thresh : float
        A box is suppressed by an earlier kept box when their IoU exceeds it.
    ids : array, shape (n,), optional
        Class ids (same dtype as ``boxes``): only boxes of one class suppress
        each other.  ``None``: all boxes compete.

    Returns
    -------
    array of bool, shape (n,)
        ``True`` where the box is kept; ``flatnonzero`` gives the indices.
    """
    be = _backend(backend)
    xp = be.xp
    boxes = xp.ascontiguousarray(boxes)
    if boxes.ndim != 2 or boxes.shape[1] != 4:
        raise ValueError('boxes must have shape (n, 4), got %r' % (tuple(boxes.shape),))
    suffix = _suffix(boxes.dtype)
    n = int(boxes.shape[0])
    if ids is not None:
        ids = xp.ascontiguousarray(ids)
        _same_dtype(boxes, ids)
        if ids.shape != (n,):
            raise ValueError('ids must have shape (%d,), got %r' % (n, tuple(ids.shape)))
    keep = xp.zeros((n,), dtype=numpy.uint8)
    if n == 0:
        return keep.view(numpy.bool_)
    blocks = -(-n // NMS_THREADS)
    if blocks > 65535:
        raise ValueError('nms_keep handles at most %d boxes' % (65535 * NMS_THREADS))
    mask = xp.empty((n, blocks), dtype=numpy.uint64)  # lower-triangle words: never read
    removed = xp.empty((blocks,), dtype=numpy.uint64)
    be.launch('nms.cu', 'nms_mask_' + suffix, (blocks, blocks, 1), (NMS_THREADS, 1, 1),
              (boxes, ids, _i32(n), _scalar(boxes.dtype, thresh), mask))
    # one thread per later mask word (at least the 64 boxes of a block), whole warps
    sweep_threads = max(NMS_THREADS, min(256, -(-blocks // 32) * 32))
    be.launch('nms.cu', 'nms_sweep', (1, 1, 1), (sweep_threads, 1, 1),
              (mask, _i32(n), removed, keep))
    return keep.view(numpy.bool_)


# ---------------------------------------------------------------------------
# all-reduce


def ring_add(dst, src, backend=None):
    """``dst += src`` elementwise, in place, for float16/32/64.

    Both arrays are C-contiguous, of one shape and dtype and on the current
    device (a chunk of a ring all-reduce step).
    """
    be = _backend(backend)
    suffix = _suffix(_same_dtype(dst, src), ('f16', 'f32', 'f64'))
    if dst.shape != src.shape:
        raise ValueError('ring_add of shapes %r and %r' % (tuple(dst.shape), tuple(src.shape)))
    if not (dst.flags.c_contiguous and src.flags.c_contiguous):
        raise ValueError('ring_add needs C-contiguous chunks')
    if dst.size:
        be.launch('allreduce.cu', 'ring_add_' + suffix, _grid(dst.size), (BLOCK, 1, 1),
                  (dst, src, numpy.int64(dst.size)))
    return dst
