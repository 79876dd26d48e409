"""The backend's routing: which sizes and kinds the kernels operators ask for compute.

An operator asks ``symgraph.opdef.cpu_kernel(name)`` for a kernel and takes None from it
as "compute with NumPy". What it gets is :meth:`RoutingMixin.kernel`'s: for the kernels
below, a function that first declines what oneDNN does not compute faster here (a kind it
does not take, an array smaller than the tables say) and otherwise calls the backend's own
method of that name. The backend's methods themselves (``Backend.eltwise_forward`` ...)
stay direct, unrouted entries: they take every size (the backend's tests call them on
small arrays). Where a plan must know in advance what a kernel will take (the storage
plan's ufunc mode, the layout pass's channels-last pooling), it asks the query kernels
:func:`takes` and :func:`pool_takes`, which answer from the same tables.

The sizes are where oneDNN's time fell below the NumPy operators' in
``python bench/bench_onednn.py --ops`` on the project's shared 2-core AVX2 machine
(oneDNN / NumPy); below them waking the OpenMP threads costs more than the work.
"""
import math

import numpy as np

__all__ = ['ELTWISE_FORWARD_MIN', 'ELTWISE_BACKWARD_MIN', 'RELU_BACKWARD_FROM_OUTPUT_MIN',
           'ADD_RELU_MIN', 'ADD_MIN', 'POOL_MIN', 'POOL_GLOBAL_MIN', 'RNN_MODES', 'takes',
           'pool_takes', 'RoutingMixin']

_F32 = np.dtype(np.float32)

#: elementwise kinds through oneDNN's eltwise forward (``eltwise_forward``), from this
#: many elements; kinds not listed stay on NumPy. Activation (oneDNN / NumPy, forward /
#: backward): relu 1.26 / 1.97 at 2^16, 0.56 / 1.50 at 2^18, 0.35 / 0.69 at 2^20 with
#: libgomp's threads sleeping at once; with the short spin the loader now sets, 0.78 / 1.66
#: at 2^16, 0.45 / 1.27 at 2^18 on hot data; sigmoid 1.47 / 1.37 at 2^12, 0.68 / 0.67 at
#: 2^14; tanh 0.9-1.07 at every size (NumPy's tanh is SIMD too), so it stays on NumPy.
#: softrelu would be faster (0.27 at 2^14) but oneDNN 3.2's soft_relu errs by up to 7.6e-6
#: absolute for x < -3.85 (tests/ops/test_nn_onednn.py), far beyond float32 rounding:
#: NumPy. LeakyReLU (same run): leaky (oneDNN's relu with a slope) 1.25 / 1.43 at 2^14,
#: 0.17 / 0.25 at 2^16; elu 0.81 / 1.63 at 2^12, 0.19 / 0.73 at 2^14; gelu (erf form)
#: 0.15 / 0.15 at 2^12.
ELTWISE_FORWARD_MIN = {'relu': 1 << 16, 'sigmoid': 1 << 14, 'elu': 1 << 12, 'gelu': 1 << 10}

#: the same for ``eltwise_backward`` (dy * f'(x), from the input: LeakyReLU's kinds)
ELTWISE_BACKWARD_MIN = {'relu': 1 << 16, 'sigmoid': 1 << 14, 'elu': 1 << 14,
                        'gelu': 1 << 10}

#: relu's gradient from its output (``relu_backward_from_output``: Activation's relu and
#: ElemwiseAddReLU's backward): inside the ResNet-14 training step (arrays fresh from
#: memory) oneDNN's relu_use_dst_for_bwd took 400 us against NumPy's 664 at 2^19, the same
#: at 2^17
RELU_BACKWARD_FROM_OUTPUT_MIN = 1 << 18

#: relu(a + b) in one binary primitive (``add`` with ``relu``: ElemwiseAddReLU's forward),
#: against NumPy's add and maximum: 81 against 530 us at 2^19 elements, 44 against 126 at
#: 2^17; a plain add is not routed to oneDNN (None)
ADD_RELU_MIN = 1 << 14
ADD_MIN = None

#: pooling through oneDNN (max or avg, not global): (smallest kernel size prod(kernel),
#: smallest input size) per direction (channels-last kernels with reorders at the edges):
#: forward 3x3 stride 2 max on (32, 64, 56, 56) 0.31, 3x3 avg on (32, 64, 28, 28) 0.35,
#: but 2x2 stride 2 max on (64, 20, 24, 24) 1.95 (NumPy's four strided maxima beat two
#: reorders); backward max (with oneDNN's forward for the workspace when the forward ran on
#: NumPy) 0.20 on (64, 20, 24, 24), 0.17 on (32, 64, 56, 56), 1.02 on (8, 8, 8, 8);
#: backward avg 3x3 0.26 on (32, 64, 28, 28). Global pooling stayed on NumPy then (1.7x
#: forward, 5.3x backward at (64, 64, 8, 8) in an earlier run: its mean is one reduction);
#: see POOL_GLOBAL_MIN for its average's forward since.
POOL_MIN = {'forward': (9, 1 << 16), 'backward_max': (1, 1 << 15),
            'backward_avg': (9, 1 << 16)}

#: smallest input of global average pooling's forward (one window over all of S): 18
#: against NumPy's 60 us at (32, 64, 8, 8) lying channels last (a training plan's buffer),
#: 24 against 113 us at (64, 64, 8, 8), 64 against 149 us in C order; its backward (a
#: broadcast) stays on NumPy, 30 against oneDNN's 49 us, and so do global max and sum
POOL_GLOBAL_MIN = 1 << 14


#: the fused RNN's modes through oneDNN's RNN primitives (``rnn_forward`` /
#: ``rnn_backward``: float32, bfloat16 with ``RNN_BF16``; projection and dropout between
#: layers included); the others, and the cases these kernels do not take (state
#: clipping, sequence lengths: oneDNN has neither), run on NumPy. An empty tuple
#: sends every RNN to NumPy (bench/bench_rnn.py's ``--numpy-rnn`` lifts it to compare).
RNN_MODES = ('lstm', 'gru', 'rnn_tanh', 'rnn_relu')
#: bfloat16 RNNs through oneDNN's bf16 RNN primitives (where the CPU has AVX-512 BF16);
#: off, they compute in float32 on oneDNN's float32 primitives and round, as MXNet 1.9.1
#: runs RNN in a bf16 network (it has no bf16 RNN). Off: at the bench's 2x256 LSTM (T=35,
#: N=32; loaded 2-core AVX-512 BF16 machine, CPU time per training step) the bf16
#: primitives took 126 ms (BiLSTM 298 ms), float32-and-round 67 ms (177 ms), float32 63
#: (154): oneDNN 3.2's bf16 RNN backward is its reference implementation, twice the
#: float32 one's time, and its forward 1.3x (bench/bench_rnn.py --dtype bfloat16 times both)
RNN_BF16 = False


def takes(name, size=None, kind=None):
    """Whether the routed kernel ``name`` ('eltwise_forward', 'eltwise_backward',
    'relu_backward_from_output' or 'add') computes ``kind`` (the eltwise kind; for 'add',
    'relu' or None) for float32 arrays of ``size`` elements (None: of some size)."""
    if name == 'relu_backward_from_output':
        limit = RELU_BACKWARD_FROM_OUTPUT_MIN
    elif name == 'add':
        limit = ADD_RELU_MIN if kind == 'relu' else ADD_MIN
    elif name == 'eltwise_forward':
        limit = ELTWISE_FORWARD_MIN.get(kind)
    elif name == 'eltwise_backward':
        limit = ELTWISE_BACKWARD_MIN.get(kind)
    else:
        raise KeyError('no routed CPU kernel %r' % (name,))
    return limit is not None and (size is None or size >= limit)


def pool_takes(xshape, pool_type, kernel, direction='forward', global_pool=False):
    """Whether the routed ``pool_forward`` (``direction`` 'forward') or ``pool_backward``
    ('backward') computes ``pool_type`` ('max' or 'avg') pooling of float32 data of
    ``xshape`` with windows of ``kernel`` (for ``global_pool``: the whole of S)."""
    if global_pool:
        return direction == 'forward' and pool_type == 'avg' \
            and math.prod(xshape) >= POOL_GLOBAL_MIN
    limits = POOL_MIN.get(direction if direction == 'forward'
                          else direction + '_' + pool_type)
    return limits is not None and pool_type in ('max', 'avg') \
        and math.prod(kernel) >= limits[0] and math.prod(xshape) >= limits[1]


def _pool_type(kind):
    return 'max' if kind == 'max' else 'avg'


class RoutingMixin:
    """:meth:`kernel`: the backend's kernels as operators get them (mixed into
    ``Backend``)."""

    def kernel(self, name):
        """The kernel ``name`` as ``symgraph.opdef.cpu_kernel`` gives it: routed by the
        tables of this module where it has them (declining what NumPy computes faster),
        else the backend's method itself (None for a kernel of the protocol this backend
        does not have: the operator computes with NumPy)."""
        routed = getattr(self, '_routed', None)
        if routed is None:
            routed = self._routed = _routed_kernels(self)
        got = routed.get(name)
        return got if got is not None else getattr(self, name, None)


def _routed_kernels(be):
    """{name: routed function} over backend ``be``'s methods."""
    eltwise_fwd, eltwise_bwd = be.eltwise_forward, be.eltwise_backward
    relu_bwd, add_, pool_fwd, pool_bwd = (be.relu_backward_from_output, be.add,
                                          be.pool_forward, be.pool_backward)
    # (the tables are read at each call, as module globals: tests lift them)

    def eltwise_forward(x, kind, alpha=0.0, beta=0.0, out=None):
        limit = ELTWISE_FORWARD_MIN.get(kind)
        if limit is None or x.dtype is not _F32 or x.size < limit:
            return None
        return eltwise_fwd(x, kind, alpha, beta, out=out)

    def eltwise_backward(x, dy, kind, alpha=0.0, beta=0.0):
        limit = ELTWISE_BACKWARD_MIN.get(kind)
        if limit is None or x.dtype is not _F32 or dy.dtype is not _F32 or x.size < limit:
            return None
        return eltwise_bwd(x, dy, kind, alpha, beta)

    def relu_backward_from_output(y, dy, out=None):
        limit = RELU_BACKWARD_FROM_OUTPUT_MIN
        if limit is None or y.dtype is not _F32 or y.size < limit:
            return None
        return relu_bwd(y, dy, out=out)

    def add(a, b, relu=False, out=None):
        limit = ADD_RELU_MIN if relu else ADD_MIN
        if limit is None or a.dtype is not _F32 or a.size < limit:
            return None
        return add_(a, b, relu=relu, out=out)

    def pool_forward(x, kind, kernel, stride, pad_l, pad_r, yshape, is_train,
                     out_layout=None, global_pool=False):
        if x.dtype is not _F32 or not pool_takes(x.shape, _pool_type(kind), kernel,
                                                 'forward', global_pool):
            return None
        return pool_fwd(x, kind, kernel, stride, pad_l, pad_r, yshape, is_train, out_layout)

    def pool_backward(dy, ws, kind, kernel, stride, pad_l, pad_r, xshape, out=None, x=None):
        if dy.dtype is not _F32 or not pool_takes(xshape, _pool_type(kind), kernel,
                                                  'backward'):
            return None
        if kind == 'max' and ws is None:
            # the workspace from oneDNN's forward on the data (unrouted: the backward's
            # size decides), when the forward that made the output kept none
            if x is None or x.dtype is not _F32:
                return None
            r = pool_fwd(x, kind, kernel, stride, pad_l, pad_r, dy.shape, True)
            if r is None:
                return None
            ws = r[1]
        return pool_bwd(dy, ws, kind, kernel, stride, pad_l, pad_r, xshape, out=out)

    rnn_fwd, rnn_bwd = be.rnn_forward, be.rnn_backward
    # the RNN kernels take float32, and bfloat16 with RNN_BF16 where oneDNN has its native
    # bf16 kernels (AVX-512 BF16; otherwise the operator computes in float32 and rounds).
    # Projection
    # (LSTMP), dropout between layers (the operator's masks) and both directions are the
    # kernels' own; state clipping and sequence lengths have no oneDNN counterpart and
    # stay on NumPy (the operator never asks for them: ops/rnn.py's ``_onednn``)
    from ._lib import effective_isa, has_bf16
    rnn_bf16 = has_bf16(effective_isa(be.lib))

    def rnn_takes(x, w):
        if x.dtype is _F32 and w.dtype is _F32:
            return True
        return RNN_BF16 and rnn_bf16 and x.dtype == w.dtype and x.dtype.name == 'bfloat16'

    def rnn_forward(mode, x, w, hx, cx, H, L, D, is_train, spare=None, P=None,
                    masks=None):
        if mode not in RNN_MODES or not rnn_takes(x, w):
            return None
        return rnn_fwd(mode, x, w, hx, cx, H, L, D, is_train, spare, P, masks)

    def rnn_backward(mode, x, w, hx, cx, H, L, D, kept, hy, cy, dy, dhy, dcy, P=None,
                     masks=None):
        if mode not in RNN_MODES or not rnn_takes(x, w):
            return None
        return rnn_bwd(mode, x, w, hx, cx, H, L, D, kept, hy, cy, dy, dhy, dcy, P, masks)

    return {'rnn_forward': rnn_forward, 'rnn_backward': rnn_backward,
            'eltwise_forward': eltwise_forward, 'eltwise_backward': eltwise_backward,
            'relu_backward_from_output': relu_backward_from_output, 'add': add,
            'pool_forward': pool_forward, 'pool_backward': pool_backward,
            'takes': takes, 'pool_takes': pool_takes}
