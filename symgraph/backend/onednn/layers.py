"""Pooling, eltwise activations, softmax and LRN through oneDNN (plain float32 arrays).

Every method takes and returns plain C-order NumPy float32 arrays and returns None when
oneDNN does not take the case (the operator then computes with NumPy). Elementwise
primitives see the array as 1-D, so one primitive serves every shape of the same size.

Max pooling in training returns oneDNN's workspace (the position of each window's
maximum, in the layout the primitive chose) beside the output; backward takes it back.
"""
import ctypes

import numpy as np

from . import _lib
from ._core import Primitive, act_desc, act_dest, activation, as_f32, channels_last_desc, \
    address, dense, dest, empty_act, layout_of, same_or_apart, strided_desc
from ._lib import check

_VP = ctypes.c_void_p

#: sizes (elements) from which a kernel below computes, the routing being the backend's
#: (an operator asks ``opdef.cpu_kernel(name)`` and takes None as "use NumPy"); None:
#: never. Measured with ``python bench/bench_onednn.py --ops`` on the project's shared
#: 2-core AVX2 machine (oneDNN / NumPy):
#:
#: - ``softmax`` / ``log_softmax`` (forward, last axis): softmax 2.2 at (64, 10), 1.36 at
#:   (64, 100), 0.54 at (64, 1000), 0.26 at (256, 4096); log_softmax 0.59 at (64, 1000).
#:   Over an axis other than the last the forward was 27-31x slower at (32, 16, 32, 32)
#:   axis 1 (its reference kernel), so only the last axis goes; oneDNN 3.2's backward for
#:   plain layouts was 5.5-18x slower, so it has no kernel here for operators.
#: - ``lrn`` (the inference output without ``tmp_norm``): 0.2-0.5 of the NumPy operator
#:   (channels last inside, (32, 64, 27, 27) and (8, 96, 55, 55), nsize 5).
LIMITS = {'softmax': 1 << 15, 'log_softmax': 1 << 15, 'lrn': 1 << 14}


def _declines(x, limit):
    """Whether a kernel declines ``x``: not float32, or fewer than ``limit`` elements
    (None: every size)."""
    return limit is None or x.dtype != np.float32 or x.size < limit

#: eltwise kinds: name -> oneDNN algorithm (backward reads the input)
ELTWISE = {
    'relu': _lib.ELTWISE_RELU,
    'tanh': _lib.ELTWISE_TANH,
    'sigmoid': _lib.ELTWISE_LOGISTIC,
    'softrelu': _lib.ELTWISE_SOFT_RELU,
    'elu': _lib.ELTWISE_ELU,
    'gelu': _lib.ELTWISE_GELU_ERF,
}

POOL = {'max': _lib.POOLING_MAX, 'avg_include': _lib.POOLING_AVG_INCLUDE_PADDING,
        'avg_exclude': _lib.POOLING_AVG_EXCLUDE_PADDING}


class LayerMixin:
    """Pooling, eltwise, softmax and LRN methods of the backend (mixed into ``Backend``)."""

    def _backward_primitive(self, mds, forward, backward, args):
        """A backward :class:`Primitive`: ``forward(ref)`` creates into ``ref`` the forward
        primitive descriptor oneDNN takes as the hint, ``backward(ref, hint)`` the backward
        one; ``args`` as Primitive takes them. The hint and the descriptors ``mds`` are
        destroyed afterwards, also when a step fails."""
        hint = _VP()
        try:
            forward(ctypes.byref(hint))
            pd = _VP()
            backward(ctypes.byref(pd), hint)
            return Primitive(self, pd, args)
        finally:
            if hint:
                self.lib.dnnl_primitive_desc_destroy(hint)
            self._destroy(mds)

    # ------------------------------------------------------------------ pooling
    def _pool_fwd_pd(self, prop, alg, src, dst, geom):
        pd = _VP()
        check(self.lib.dnnl_pooling_forward_primitive_desc_create(
            ctypes.byref(pd), self.engine, prop, alg, src, dst, *geom, None),
            'dnnl_pooling_forward_primitive_desc_create')
        return pd

    @staticmethod
    def _pool_geom(kernel, stride, pad_l, pad_r):
        nd = len(kernel)
        return (_lib.Dims(*stride), _lib.Dims(*kernel), _lib.Dims(*([0] * nd)),
                _lib.Dims(*pad_l), _lib.Dims(*pad_r))

    def pool_forward(self, x, kind, kernel, stride, pad_l, pad_r, yshape, is_train,
                     out_layout=None):
        """Pooling of x (N, C, *S) into ``yshape``: (y, workspace) -- the workspace is a
        uint8 array for max pooling in training, else None -- or None when not taken.

        ``kind``: 'max', 'avg_include' or 'avg_exclude' (padding counted in the divisor or
        not); ``pad_r`` may exceed ``pad_l`` (MXNet's 'full' convention). ``x`` may lie
        channels last (taken as it lies, as the primitive's own layout); ``out_layout``
        ``'channels_last'`` returns y so (None: C order)."""
        x, xlay = activation(x)
        yshape = tuple(yshape)
        train = bool(is_train and kind == 'max')
        prop = _lib.FORWARD_TRAINING if train else _lib.FORWARD_INFERENCE
        key = ('pool_forward', x.shape, yshape, kind, tuple(kernel), tuple(stride),
               tuple(pad_l), tuple(pad_r), prop, xlay, out_layout)

        def build():
            mds = [act_desc(self.lib, x.shape, xlay), act_desc(self.lib, yshape, out_layout),
                   channels_last_desc(self.lib, x.shape),
                   channels_last_desc(self.lib, yshape)]
            try:
                pd = self._pool_fwd_pd(prop, POOL[kind], mds[2], mds[3],
                                       self._pool_geom(kernel, stride, pad_l, pad_r))
                args = [(_lib.ARG_SRC, mds[0], False), (_lib.ARG_DST, mds[1], True)]
                if train:
                    args.append((_lib.ARG_WORKSPACE, None, True))
                return Primitive(self, pd, args)
            finally:
                self._destroy(mds)

        prim = self.primitive(key, build)
        if prim is None:
            return None
        y = empty_act(yshape, out_layout)
        ws = np.empty(prim.sizes[2], np.uint8) if train else None
        self.execute(key, prim, [x, y] + ([ws] if train else []))
        return y, ws

    def pool_backward(self, dy, ws, kind, kernel, stride, pad_l, pad_r, xshape, out=None):
        """dx of shape ``xshape`` from dy (and the forward's workspace for max pooling),
        into ``out`` when it fits; None when not taken."""
        dy = as_f32(dy)
        xshape = tuple(xshape)
        key = ('pool_backward', xshape, dy.shape, kind, tuple(kernel), tuple(stride),
               tuple(pad_l), tuple(pad_r))

        def build():
            mds = [strided_desc(self.lib, xshape), strided_desc(self.lib, dy.shape),
                   channels_last_desc(self.lib, xshape),
                   channels_last_desc(self.lib, dy.shape)]
            hint = None
            try:
                geom = self._pool_geom(kernel, stride, pad_l, pad_r)
                hint = self._pool_fwd_pd(_lib.FORWARD_TRAINING, POOL[kind], mds[2], mds[3],
                                         geom)
                pd = _VP()
                check(self.lib.dnnl_pooling_backward_primitive_desc_create(
                    ctypes.byref(pd), self.engine, POOL[kind], mds[2], mds[3], *geom, hint,
                    None), 'dnnl_pooling_backward_primitive_desc_create')
                args = [(_lib.ARG_DIFF_DST, mds[1], False), (_lib.ARG_DIFF_SRC, mds[0], True)]
                if kind == 'max':
                    args.append((_lib.ARG_WORKSPACE, None, False))
                return Primitive(self, pd, args)
            finally:
                if hint:
                    self.lib.dnnl_primitive_desc_destroy(hint)
                self._destroy(mds)

        prim = self.primitive(key, build)
        if prim is None or (kind == 'max' and (ws is None or ws.nbytes != prim.sizes[2])):
            return None
        dx = dest(out, xshape)
        self.execute(key, prim, [dy, dx] + ([ws] if kind == 'max' else []))
        return dx

    # ------------------------------------------------------------------ eltwise
    def eltwise_forward(self, x, kind, alpha=0.0, beta=0.0, out=None):
        """f(x) elementwise (``kind`` a key of :data:`ELTWISE`); None when not taken.

        ``out``: an array of ``x``'s shape, dtype and memory order (C order or channels
        last) to write into (it may be ``x`` itself); else the result is new, in ``x``'s
        layout (C order unless ``x`` lies channels last)."""
        x, lay = activation(x)
        y = act_dest(out, x.shape, lay)
        n = x.size
        key = ('eltwise_forward', n, kind, float(alpha), float(beta))

        def build():
            md = strided_desc(self.lib, (n,))
            try:
                pd = _VP()
                check(self.lib.dnnl_eltwise_forward_primitive_desc_create(
                    ctypes.byref(pd), self.engine, _lib.FORWARD_INFERENCE, ELTWISE[kind], md,
                    md, alpha, beta, None), 'dnnl_eltwise_forward_primitive_desc_create')
                return Primitive(self, pd, [(_lib.ARG_SRC, md, False),
                                            (_lib.ARG_DST, md, True)])
            finally:
                self._destroy([md])

        if not (dense(x) and dense(y) and same_or_apart(x, y)):
            return None
        return y if self.run(key, build, [x, y]) else None

    def relu_backward_from_output(self, y, dy, out=None):
        """dy * (y > 0), the gradient of relu from its output ``y``, through oneDNN; None
        when not taken. ``y``, ``dy`` and ``out`` (an array to write into, which may be
        ``y`` or ``dy`` itself) must share one memory order (C order or channels last)."""
        if y.dtype != np.float32 or dy.dtype != np.float32 or y.shape != dy.shape:
            return None
        dx = out if out is not None else empty_act(y.shape, layout_of(y))
        arrays = [y, dy, dx]
        if not all(dense(a) for a in arrays) or dx.shape != y.shape \
                or not dx.flags.writeable or len({layout_of(a) for a in arrays}) != 1 \
                or not (same_or_apart(dx, y) and same_or_apart(dx, dy)):
            return None
        n = y.size
        key = ('relu_backward_from_output', n)

        def build():
            md = strided_desc(self.lib, (n,))
            alg = _lib.ELTWISE_RELU_USE_DST_FOR_BWD
            return self._backward_primitive(
                [md],
                lambda ref: check(self.lib.dnnl_eltwise_forward_primitive_desc_create(
                    ref, self.engine, _lib.FORWARD_TRAINING, alg, md, md, 0.0, 0.0, None),
                    'dnnl_eltwise_forward_primitive_desc_create'),
                lambda ref, hint: check(self.lib.dnnl_eltwise_backward_primitive_desc_create(
                    ref, self.engine, alg, md, md, md, 0.0, 0.0, hint, None),
                    'dnnl_eltwise_backward_primitive_desc_create'),
                [(_lib.ARG_DST, md, False), (_lib.ARG_DIFF_DST, md, False),
                 (_lib.ARG_DIFF_SRC, md, True)])

        return dx if self.run(key, build, arrays) else None

    def add(self, a, b, relu=False, out=None):
        """a + b (relu'd when ``relu``) in one pass through oneDNN's binary primitive; None
        when not taken. ``a``, ``b`` and ``out`` (an array to write into, which may be
        ``a`` or ``b`` itself) must be float32 arrays of one shape lying in one memory
        order (C order or channels last); else the result is new, in ``a``'s layout."""
        if a.dtype != np.float32 or b.dtype != np.float32 or a.shape != b.shape \
                or not a.size:
            return None
        lay = layout_of(a)
        if layout_of(b) != lay or (lay is None and not (a.flags.c_contiguous
                                                         and b.flags.c_contiguous)):
            return None
        y = act_dest(out, a.shape, lay)
        if not y.flags.writeable:
            return None
        if not (dense(a) and dense(b) and dense(y)):
            return None
        # oneDNN computes in place over its first source only: the destination is exactly
        # a or b (add commutes, bit for bit) or overlaps neither
        if address(y) == address(b):
            a, b = b, a
            if address(y) == address(b):        # (a and b the same memory as well)
                return None
        if not (same_or_apart(a, y) and same_or_apart(b, y)):
            return None
        n = a.size
        key = ('add', n, bool(relu))

        def build():
            md = strided_desc(self.lib, (n,))
            attr = None
            try:
                attr = self._post_ops_attr([('eltwise', 'relu', 0.0)]) if relu else None
                pd = _VP()
                check(self.lib.dnnl_binary_primitive_desc_create(
                    ctypes.byref(pd), self.engine, _lib.BINARY_ADD, md, md, md, attr),
                    'dnnl_binary_primitive_desc_create')
                return Primitive(self, pd, [(_lib.ARG_SRC, md, False),
                                            (_lib.ARG_SRC_1, md, False),
                                            (_lib.ARG_DST, md, True)])
            finally:
                if attr:
                    self.lib.dnnl_primitive_attr_destroy(attr)
                self._destroy([md])

        return y if self.run(key, build, [a, b, y]) else None

    def eltwise_backward(self, x, dy, kind, alpha=0.0, beta=0.0):
        """dy * f'(x); None when not taken."""
        x, dy = as_f32(x), as_f32(dy)
        n = x.size
        key = ('eltwise_backward', n, kind, float(alpha), float(beta))

        def build():
            md = strided_desc(self.lib, (n,))
            return self._backward_primitive(
                [md],
                lambda ref: check(self.lib.dnnl_eltwise_forward_primitive_desc_create(
                    ref, self.engine, _lib.FORWARD_TRAINING, ELTWISE[kind], md, md, alpha,
                    beta, None), 'dnnl_eltwise_forward_primitive_desc_create'),
                lambda ref, hint: check(self.lib.dnnl_eltwise_backward_primitive_desc_create(
                    ref, self.engine, ELTWISE[kind], md, md, md, alpha, beta, hint, None),
                    'dnnl_eltwise_backward_primitive_desc_create'),
                [(_lib.ARG_SRC, md, False), (_lib.ARG_DIFF_DST, md, False),
                 (_lib.ARG_DIFF_SRC, md, True)])

        dx = np.empty(x.shape, np.float32)
        return dx if self.run(key, build, [x, dy, dx]) else None

    # ------------------------------------------------------------------ softmax
    def softmax_forward(self, x, axis, log=False):
        """softmax (or log-softmax) of x along ``axis`` (non-negative); None when not
        taken: another axis than the last, not float32, or smaller than :data:`LIMITS`
        says."""
        if axis != x.ndim - 1 or _declines(x, LIMITS.get('log_softmax' if log else 'softmax')):
            return None
        return self.softmax_forward_as(as_f32(x), axis, log, 'softmax_forward',
                                       lambda: strided_desc(self.lib, x.shape))

    def softmax_forward_as(self, x, axis, log, tag, make_desc):
        """The softmax (log-softmax) primitive on ``x`` as it is (float32 or bfloat16:
        ``make_desc()`` gives its memory descriptor), into a new array of its dtype, or
        None; ``tag`` keys the cached primitive."""
        alg = _lib.SOFTMAX_LOG if log else _lib.SOFTMAX_ACCURATE
        key = (tag, x.shape, axis, alg)

        def build():
            md = make_desc()
            try:
                pd = _VP()
                check(self.lib.dnnl_softmax_forward_primitive_desc_create(
                    ctypes.byref(pd), self.engine, _lib.FORWARD_INFERENCE, alg, md, md, axis,
                    None), 'dnnl_softmax_forward_primitive_desc_create')
                return Primitive(self, pd, [(_lib.ARG_SRC, md, False),
                                            (_lib.ARG_DST, md, True)])
            finally:
                self._destroy([md])

        y = np.empty(x.shape, x.dtype)
        return y if self.run(key, build, [x, y]) else None

    def softmax_backward(self, y, dy, axis, log=False):
        """The input gradient of softmax (log-softmax) from its output y and dy."""
        y, dy = as_f32(y), as_f32(dy)
        alg = _lib.SOFTMAX_LOG if log else _lib.SOFTMAX_ACCURATE
        key = ('softmax_backward', y.shape, axis, alg)

        def build():
            md = strided_desc(self.lib, y.shape)
            return self._backward_primitive(
                [md],
                lambda ref: check(self.lib.dnnl_softmax_forward_primitive_desc_create(
                    ref, self.engine, _lib.FORWARD_TRAINING, alg, md, md, axis, None),
                    'dnnl_softmax_forward_primitive_desc_create'),
                lambda ref, hint: check(self.lib.dnnl_softmax_backward_primitive_desc_create(
                    ref, self.engine, alg, md, md, md, axis, hint, None),
                    'dnnl_softmax_backward_primitive_desc_create'),
                [(_lib.ARG_DST, md, False), (_lib.ARG_DIFF_DST, md, False),
                 (_lib.ARG_DIFF_SRC, md, True)])

        dx = np.empty(y.shape, np.float32)
        return dx if self.run(key, build, [y, dy, dx]) else None

    # ------------------------------------------------------------------ LRN
    def _lrn_fwd_pd(self, prop, md, size, alpha, beta, k):
        pd = _VP()
        check(self.lib.dnnl_lrn_forward_primitive_desc_create(
            ctypes.byref(pd), self.engine, prop, _lib.LRN_ACROSS_CHANNELS, md, md, size,
            alpha, beta, k, None), 'dnnl_lrn_forward_primitive_desc_create')
        return pd

    def lrn_forward(self, x, size, alpha, beta, k):
        """Local response normalisation across channels of x (N, C, H, W) (inference
        kernel, channels last inside); None when not taken. ``alpha`` is divided by
        ``size`` as in MXNet's formula.

        Declines float32-less or smaller arrays than :data:`LIMITS` says. There is no
        backward here: oneDNN 3.2's LRN backward ran 5-10x slower than the NumPy operator's
        on the project's AVX2 machine (plain and channels-last layouts)."""
        if _declines(x, LIMITS.get('lrn')):
            return None
        x = as_f32(x)
        key = ('lrn_forward', x.shape, size, float(alpha), float(beta), float(k))

        def build():
            mds = [strided_desc(self.lib, x.shape), channels_last_desc(self.lib, x.shape)]
            try:
                pd = self._lrn_fwd_pd(_lib.FORWARD_INFERENCE, mds[1], size, alpha, beta, k)
                return Primitive(self, pd, [(_lib.ARG_SRC, mds[0], False),
                                            (_lib.ARG_DST, mds[0], True)])
            finally:
                self._destroy(mds)

        y = np.empty(x.shape, np.float32)
        return y if self.run(key, build, [x, y]) else None
