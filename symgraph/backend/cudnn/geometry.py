"""The arithmetic of the cuDNN backend that needs neither the library nor a GPU.

Every function here takes shapes and strides (tuples of ints) and returns what a cuDNN
descriptor is set from, or None for a case cuDNN does not take (the operator then runs
symgraph's own CUDA kernels). They are tested in pure Python (tests/backend/test_cudnn.py),
and where cuDNN itself can answer without a GPU (output shapes of a convolution or a
pooling), against cuDNN's own answer.

Layouts: the operators hand the backend channels-first *views* (N, C, *S). A channels-last
(NHWC) buffer is such a view with the channel stride 1; cuDNN's tensor descriptors take
the strides as they are, so both layouts need no copy. Filters have no strides in cuDNN:
:func:`filter_format` tells NCHW from NHWC (``cudnnTensorFormat_t``) or refuses.
"""
from math import prod

import numpy as np

from . import _lib

__all__ = ['DTYPES', 'elem_strides', 'as_4d', 'tensor_desc', 'filter_format',
           'conv_out_shape', 'conv_params', 'conv_key', 'choose_algo', 'Workspace',
           'bn_shape', 'bn_epsilon', 'bn_factor', 'pool_params', 'softmax_shape']

#: numpy dtype -> cudnnDataType_t (the types the backend takes)
DTYPES = {np.dtype(np.float32): _lib.FLOAT, np.dtype(np.float64): _lib.DOUBLE,
          np.dtype(np.float16): _lib.HALF}


def elem_strides(byte_strides, itemsize):
    """Strides in elements, or None where one is negative or not a whole element."""
    out = []
    for s in byte_strides:
        if s < 0 or s % itemsize:
            return None
        out.append(s // itemsize)
    return tuple(out)


def as_4d(shape, strides):
    """(shape, strides) with at least 4 dimensions: cuDNN's Nd descriptors take 4 to 8. A
    3-D (N, C, W) gets a height of 1 before W (so a 1-D convolution is a 2-D one of kernel
    height 1); 2-D (N, C) gets two trailing 1s. The inserted axis's stride is the one that
    keeps the tensor packed where it was."""
    shape, strides = tuple(shape), tuple(strides)
    if len(shape) > _lib.DIM_MAX or len(shape) < 2:
        return None
    while len(shape) < 4:
        if len(shape) == 3:
            shape = shape[:2] + (1,) + shape[2:]
            strides = strides[:2] + (strides[2] * shape[3],) + strides[2:]
        else:
            shape, strides = shape + (1,), strides + (1,)
    return shape, strides


def tensor_desc(dtype, shape, byte_strides, itemsize=None):
    """(cudnnDataType_t, dims, strides) for ``cudnnSetTensorNdDescriptor``, or None."""
    dt = DTYPES.get(np.dtype(dtype))
    if dt is None or 0 in shape:
        return None
    s = elem_strides(byte_strides, itemsize or np.dtype(dtype).itemsize)
    if s is None:
        return None
    got = as_4d(shape, s)
    if got is None or max(got[0]) >= 2 ** 31 or max(got[1]) >= 2 ** 31:
        return None
    return (dt,) + got


def _packed_strides(shape, order):
    """Element strides of a packed array of channels-first ``shape`` lying in ``order``
    ('NCHW': C order; 'NHWC': channels last)."""
    if order == 'NCHW':
        dims = list(shape)
        perm = list(range(len(shape)))
    else:
        perm = [0] + list(range(2, len(shape))) + [1]
        dims = [shape[p] for p in perm]
    strides_mem = [prod(dims[i + 1:]) for i in range(len(dims))]
    out = [0] * len(shape)
    for pos, axis in enumerate(perm):
        out[axis] = strides_mem[pos]
    return tuple(out)


def filter_format(shape, strides):
    """cudnnTensorFormat_t of a filter view (F, C/g, *K) with element ``strides``: NCHW
    when C order, NHWC when channels last, None otherwise (cuDNN filters take no strides).
    Axes of length 1 may have any stride."""
    for fmt, order in ((_lib.NCHW, 'NCHW'), (_lib.NHWC, 'NHWC')):
        want = _packed_strides(shape, order)
        if all(n == 1 or s == w for n, s, w in zip(shape, strides, want)):
            return fmt
    return None


def is_packed(shape, strides):
    """'NCHW', 'NHWC' or None: how a channels-first view of element ``strides`` lies."""
    for order in ('NCHW', 'NHWC'):
        want = _packed_strides(shape, order)
        if all(n == 1 or s == w for n, s, w in zip(shape, strides, want)):
            return order
    return None


def conv_out_shape(xshape, wshape, pad, stride, dilate):
    """The forward's output (N, F, *O), as ``cudnnGetConvolutionNdForwardOutputDim``
    computes it: O = (S + 2 pad - dilate (K - 1) - 1) // stride + 1."""
    out = [(s + 2 * p - d * (k - 1) - 1) // t + 1
           for s, k, p, t, d in zip(xshape[2:], wshape[2:], pad, stride, dilate)]
    return (xshape[0], wshape[0]) + tuple(out)


def conv_params(xshape, wshape, pad, stride, dilate, groups, after=None):
    """(pad, stride, dilate) padded to 2-D for ``cudnnSetConvolutionNdDescriptor``, or None
    where cuDNN does not take the case: asymmetric padding (``after`` differing from
    ``pad``), negative padding (cropping), channels not divisible by the groups or the
    filter's input channels not C/groups, an empty output."""
    nd = len(xshape) - 2
    if not 1 <= nd <= 3 or len(wshape) != nd + 2 or groups < 1:
        return None
    pad, stride, dilate = tuple(pad), tuple(stride), tuple(dilate)
    if after is not None and tuple(after) != pad:
        return None
    if min(pad) < 0 or min(stride) < 1 or min(dilate) < 1:
        return None
    c, f = xshape[1], wshape[0]
    if c % groups or f % groups or wshape[1] * groups != c:
        return None
    if min(conv_out_shape(xshape, wshape, pad, stride, dilate)[2:]) <= 0:
        return None
    if nd == 1:
        pad, stride, dilate = (0,) + pad, (1,) + stride, (1,) + dilate
    return pad, stride, dilate


def conv_key(direction, dtype, xd, wd, yd, params, groups, math):
    """The algorithm cache's key: everything cudnnGet*Algorithm_v7's choice depends on
    (direction 'fwd', 'bwd_data' or 'bwd_filter'; the tensor descriptors' (dims, strides),
    the filter's (dims, format), the convolution's parameters, groups and math type)."""
    return (direction, np.dtype(dtype).str, tuple(map(tuple, xd)), tuple(wd),
            tuple(map(tuple, yd)), tuple(map(tuple, params)), int(groups), int(math))


def choose_algo(perfs, limit, allowed_math=None):
    """The first of cuDNN's ranked ``perfs`` (objects with algo, status, memory, mathType)
    that succeeded, needs at most ``limit`` bytes of workspace and uses a math type in
    ``allowed_math`` (None: any); (algo, memory, mathType) or None."""
    for p in perfs:
        if p.status != 0 or p.memory > limit:
            continue
        if allowed_math is not None and p.mathType not in allowed_math:
            continue
        return int(p.algo), int(p.memory), int(p.mathType)
    return None


def allowed_math(dtype, tf32):
    """The math types an algorithm may use: float32 without TF32 FMA only (MXNet's numbers;
    cuDNN's DEFAULT_MATH would allow TF32 on Ampere and later), else any."""
    if np.dtype(dtype) == np.float32 and not tf32:
        return (_lib.FMA_MATH,)
    return None


class Workspace:
    """Scratch memory lent to cuDNN calls, one buffer per device, grown to the largest
    size asked and kept (like MXNet's per-operator workspace, but shared: the calls of one
    device run one after another on its stream).

    ``alloc(nbytes)`` makes a buffer (CuPy: ``cupy.empty(nbytes, cupy.uint8)``); a caller
    that has free memory of its own (an executor's storage plan) lends it with
    :meth:`lend` and takes it back with ``lend(device, None)``: a lent buffer large enough
    is used before the kept one. ``limit`` bounds what an algorithm may ask
    (:func:`choose_algo`).
    """

    def __init__(self, alloc, limit=1 << 30):
        self._alloc = alloc
        self.limit = int(limit)
        self._kept = {}
        self._lent = {}

    def lend(self, device, buf):
        """Lend ``buf`` (1-D uint8, free until ``lend(device, None)``) for ``device``."""
        if buf is None:
            self._lent.pop(device, None)
        else:
            self._lent[device] = buf

    def take(self, device, nbytes):
        """A buffer of at least ``nbytes`` bytes for ``device`` (None for 0 bytes)."""
        if nbytes <= 0:
            return None
        lent = self._lent.get(device)
        if lent is not None and lent.nbytes >= nbytes:
            return lent
        kept = self._kept.get(device)
        if kept is None or kept.nbytes < nbytes:
            self._kept[device] = kept = None
            kept = self._kept[device] = self._alloc(int(nbytes))
        return kept

    def kept_bytes(self, device):
        """The size of the buffer kept for ``device`` (0: none)."""
        kept = self._kept.get(device)
        return 0 if kept is None else int(kept.nbytes)


def bn_shape(shape):
    """The 4-D (N, C, S, 1) view cuDNN's spatial BatchNorm normalises a C-order array of
    ``shape`` (channel axis 1) as, or None (fewer than 2 axes, empty)."""
    if len(shape) < 2 or 0 in shape:
        return None
    n, c = shape[:2]
    return (n, c, prod(shape[2:]), 1)


def bn_epsilon(eps):
    """MXNet's ``max(eps, CUDNN_BN_MIN_EPSILON)``."""
    return max(float(eps), _lib.BN_MIN_EPSILON)


def bn_factor(momentum):
    """cuDNN's exponentialAverageFactor for MXNet's momentum:
    running = (1 - factor) running + factor batch, MXNet's running = momentum running +
    (1 - momentum) batch."""
    return 1.0 - float(momentum)


def pool_params(xshape, kind, kernel, stride, pad, pad_r=None):
    """(cudnnPoolingMode_t, window, pad, stride) padded to 2-D, or None: cuDNN pools with
    symmetric padding only (``pad_r``, the padding the last window needs, must equal
    ``pad``), 1-3 spatial axes, kinds 'max', 'avg_include' and 'avg_exclude'."""
    modes = {'max': _lib.POOLING_MAX, 'avg_include': _lib.POOLING_AVG_INCLUDE_PADDING,
             'avg_exclude': _lib.POOLING_AVG_EXCLUDE_PADDING}
    nd = len(xshape) - 2
    if kind not in modes or not 1 <= nd <= 3 or len(kernel) != nd:
        return None
    kernel, stride, pad = tuple(kernel), tuple(stride), tuple(pad)
    if pad_r is not None and tuple(pad_r) != pad:
        return None
    if min(pad) < 0 or min(stride) < 1 or any(p >= k for p, k in zip(pad, kernel)):
        return None
    if nd == 1:
        kernel, pad, stride = (1,) + kernel, (0,) + pad, (1,) + stride
    return modes[kind], kernel, pad, stride


def pool_out_shape(xshape, kernel, stride, pad):
    """The pooling's output (N, C, *O), O = (S + 2 pad - K) // stride + 1 (cuDNN's
    ``cudnnGetPoolingNdForwardOutputDim``; MXNet's 'valid' convention)."""
    return tuple(xshape[:2]) + tuple((s + 2 * p - k) // t + 1 for s, k, t, p
                                     in zip(xshape[2:], kernel, stride, pad))


def softmax_shape(shape, axis):
    """The 4-D (pre, L, post, 1) view of a C-order array of ``shape`` that cuDNN's
    channel-mode softmax computes along ``axis`` of."""
    axis = axis % len(shape)
    return (prod(shape[:axis]), shape[axis], prod(shape[axis + 1:]), 1)
