"""bfloat16 kernels of the oneDNN backend: convolution, inner product (as a matmul),
eltwise activations, softmax, pooling, batch normalisation and concatenation on
``ml_dtypes.bfloat16`` arrays, and the casts between float32 and bfloat16 (a reorder).

oneDNN's bf16 primitives (data type ``dnnl_bf16`` = 2) read and write bfloat16 and
accumulate in float32 (AVX-512 BF16 instructions where the CPU has them, as this
project's machines do; emulated on AVX-512 cores without them), as MXNet 1.9.1's MKLDNN
bf16 operators do. Arrays come and go in plain C order; the primitives choose their own
layouts (``format_tag_any``) and the shared :class:`~._core.Primitive` reorders at their
edges, as the float32 kernels do. Biases may be float32 or bfloat16 (oneDNN takes both).
Where oneDNN's bf16 convolution is slower than its float32 one (AVX-512 BF16 without AMX;
timed once, ``Bf16Mixin.bf16_conv_widens``), convolutions run the float32 kernel on their
operands widened exactly at its edges, the output rounded to bfloat16: the same arithmetic.

Every method returns None where it does not take the case (not bfloat16, a geometry
oneDNN refuses): the operator then computes in float32 and rounds
(``symgraph.opdef.bind_step``). The dtype object is taken from the arrays themselves, so
this module never imports ml_dtypes.
"""
import ctypes
import sys
import threading

import numpy as np

from . import _lib
from ... import config
from ._core import Primitive
from ._core import _aligned, as_f32, channels_last_strides
from ._lib import check
from .layers import ELTWISE, POOL

_VP = ctypes.c_void_p
#: implementation names of oneDNN's slow kernels (reference; im2col + GEMM)
_SLOW = ('ref', 'gemm', 'x64:gemm')
#: oneDNN's data type enum (dnnl_data_type_t)
BF16 = 2
F32 = _lib.F32
#: DNNL_ARG_MULTIPLE_SRC: the concat primitive's i-th source is this + i
ARG_MULTIPLE_SRC = 1024


def is_bf16(a):
    """Whether ``a`` is a NumPy array of ml_dtypes' bfloat16."""
    dt = getattr(a, 'dtype', None)
    return dt is not None and dt.kind == 'V' and dt.name == 'bfloat16'


def _c_strides(shape):
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(strides))


def desc(lib, shape, dtype=BF16, strides=None, any_layout=False):
    """A ``dnnl_memory_desc_t`` of ``dtype`` (a oneDNN data type) for ``shape``: element
    ``strides`` (C order when None), or the layout the primitive chooses. The caller
    destroys it."""
    shape = tuple(int(s) for s in shape)
    md = _VP()
    if any_layout:
        check(lib.dnnl_memory_desc_create_with_tag(ctypes.byref(md), len(shape),
                                                   _lib.Dims(*shape), dtype,
                                                   _lib.FORMAT_TAG_ANY),
              'dnnl_memory_desc_create_with_tag%s' % (shape,))
    else:
        strides = _c_strides(shape) if strides is None else strides
        check(lib.dnnl_memory_desc_create_with_strides(ctypes.byref(md), len(shape),
                                                       _lib.Dims(*shape), dtype,
                                                       _lib.Dims(*strides)),
              'dnnl_memory_desc_create_with_strides%s' % (shape,))
    return md


def _dnnl_type(a):
    return BF16 if is_bf16(a) else F32


def _plain(a):
    """``a`` C-contiguous (a copy where it is not)."""
    return a if a.flags.c_contiguous else np.ascontiguousarray(a)


def _dense(a):
    """``a`` if it lies densely in C order or channels last (its memory, from its first
    element, is its values in memory order), else a C-order copy."""
    if a.flags.c_contiguous or (a.ndim > 2 and np.moveaxis(a, 1, -1).flags.c_contiguous):
        return a
    return np.ascontiguousarray(a)


def _elem_strides(a):
    return tuple(s // a.itemsize for s in a.strides)


def _new(shape, dtype):
    """An uninitialised C-order array, 64-byte aligned (a cache line: NumPy's own
    allocations are 16-byte aligned, and oneDNN's AVX-512 kernels then split every
    vector load and store of a row across two lines)."""
    dtype = np.dtype(dtype)
    n = dtype.itemsize
    for s in shape:
        n *= s
    return _aligned(n).view(dtype).reshape(shape)


def _empty(shape, dtype, layout):
    """An (N, C, *S) array, lying channels last where ``layout`` says so (64-byte
    aligned)."""
    if layout != 'channels_last':
        return _new(shape, dtype)
    return np.moveaxis(_new(shape[:1] + shape[2:] + shape[1:2], dtype), -1, 1)


def _layout_strides(shape, layout):
    """Element strides of ``shape`` in C order or, for ``'channels_last'``, channels
    last."""
    return channels_last_strides(shape) if layout == 'channels_last' else _c_strides(shape)


def _takes(out, shape, strides):
    """Whether ``out`` (an executor's buffer) can take a bfloat16 result of ``shape``
    lying with element ``strides`` as it is."""
    return out is not None and is_bf16(out) and out.shape == shape \
        and out.flags.writeable and _elem_strides(out) == strides


class Bf16Mixin:
    """The bfloat16 kernels, mixed into the backend (they use its engine, cache, the
    convolution geometry and post-op helpers of :mod:`.conv` and the pooling ones of
    :mod:`.layers`)."""

    def conv_forward_bf16(self, x, w, b, stride, pad, dilate, groups, yshape,
                          is_train=False, post_ops=(), out_layout=None, token=None,
                          cache=None, residual=None, out=None, memo=None, wide=None):
        """y = post_ops(conv(x, w) + b) in bfloat16 (x and w bfloat16; b None, float32 or
        bfloat16), or None. ``post_ops`` as the float32 fused convolution takes them
        (eltwise only). ``x`` is taken as it lies (C order or channels last: oneDNN's
        bf16 kernels read both); ``out_layout`` ``'channels_last'`` writes y so (an
        (N, C, *S) view of (N, *S, C) memory), else in C order. With a ``token`` the
        weights and bias are constants (inference): the primitive reorders them into its
        own buffer only when the token changes, and ``cache`` (a dict of the caller's,
        one layer's) keeps that primitive, as the float32 fused convolution does.

        y is written into ``out`` (the storage plan's buffer) when it is a bfloat16 array
        of y's shape lying as ``out_layout`` says and apart from ``x``, else into a new
        (64-byte aligned) array.

        A ``('sum',)`` post-op adds ``residual`` (bfloat16, of y's shape) and needs the
        channels-last output: y starts as the residual (``out`` itself when it is the
        residual's memory laid out as y, as the storage plan's in-place pair gives it,
        else a copy of it in ``out`` or a new array) and the primitive adds to it where it
        lies.

        ``memo``: a dict of the caller's (one layer's, as ``cache``) where a call with a
        ``token`` into ``out`` is kept, as the float32 fused convolution keeps it: a call
        on the very arrays of this thread's last one (an inference plan's buffers and
        folded weights, every forward) runs the primitive on them again at once.

        ``wide``: run oneDNN's float32 convolution on the operands widened to float32 (exact:
        a bfloat16 is a float32 with a shorter mantissa, and so is each product of two)
        by reorders at its edges, the post-ops and the sum applied in float32 as the bf16
        kernel applies them and y rounded to bfloat16 by the reorder after it: the bf16
        kernel's arithmetic (float32 accumulation) but for the order of the sums. None:
        as :meth:`bf16_conv_widens` finds it faster on this CPU (AVX-512 BF16 without AMX:
        oneDNN's bf16 kernels there are about 1.7x slower than its float32 ones)."""
        if memo is not None and out is not None:
            last = memo.get(threading.get_ident())
            if last is not None and last[0] is x and last[1] is w and last[2] is b \
                    and last[3] is residual and last[4] is out and last[5] == post_ops \
                    and last[6] == out_layout and token is not None:
                key, prim, arrays = last[7:]
                self.execute(key, prim, arrays, token)
                return out
        x_in, w_in, b_in, res_in = x, w, b, residual
        summed = any(p[0] == 'sum' for p in post_ops)
        if not (is_bf16(x) and is_bf16(w)) or (summed and (
                out_layout != 'channels_last' or residual is None or not is_bf16(residual))):
            return None
        x, w = _dense(x), _plain(w)
        xs = _elem_strides(x)
        b = None if b is None else _plain(b)
        yshape = tuple(int(s) for s in yshape)
        prop = _lib.FORWARD_TRAINING if is_train else _lib.FORWARD_INFERENCE
        wide = self.bf16_conv_widens(x.dtype) if wide is None else bool(wide)
        key = ('conv_forward_bf16', x.shape, xs, w.shape, yshape, tuple(stride), tuple(pad),
               tuple(dilate), groups, None if b is None else _dnnl_type(b), prop,
               tuple(post_ops), out_layout, wide)
        ystrides = _layout_strides(yshape, out_layout)
        if not _takes(out, yshape, ystrides) or np.may_share_memory(out, x):
            out = None
        in_place = summed and out is not None \
            and out.__array_interface__['data'][0] == \
            residual.__array_interface__['data'][0] and out.strides == residual.strides
        if in_place:
            y = out                     # the residual's own memory: added in place
        else:
            if out is not None and summed and np.may_share_memory(out, residual):
                out = None
            y = _empty(yshape, x.dtype, out_layout) if out is None else out
            if summed:
                np.copyto(y, residual)
        wshape = tuple(w.shape) if groups == 1 else \
            (groups, w.shape[0] // groups) + tuple(w.shape[1:])

        def build():
            lib = self.lib
            mds = []
            try:
                mds.append(desc(lib, x.shape, strides=xs))
                mds.append(desc(lib, wshape))
                mds.append(desc(lib, yshape, strides=_elem_strides(y)))
                # data and output as they lie when channels last (oneDNN's NHWC bf16
                # kernels are its fast ones), else the layouts oneDNN prefers
                cl = not x.flags.c_contiguous or out_layout == 'channels_last'
                mds.append(desc(lib, x.shape, strides=xs) if cl
                           else desc(lib, x.shape, any_layout=True))
                mds.append(desc(lib, wshape, any_layout=True))
                mds.append(desc(lib, yshape, strides=_elem_strides(y)) if cl
                           else desc(lib, yshape, any_layout=True))
                bmd = None
                if b is not None:
                    bmd = desc(lib, b.shape, _dnnl_type(b))
                    mds.append(bmd)
                geom = self._geometry(x.shape, yshape, w.shape[2:], stride, pad, dilate)
                attr = self._post_ops_attr(post_ops) if post_ops else None
                if wide:
                    prim = self._wide_conv(prop, mds, x, xs, wshape, y, yshape, b, bmd,
                                           geom, post_ops, token)
                    if prim is not None:
                        if attr is not None:
                            lib.dnnl_primitive_attr_destroy(attr)
                        return prim
                try:
                    pd = self._fwd_pd(prop, mds[3:6], geom, bmd, attr)
                    if cl and _lib.impl_name(lib, pd).startswith(_SLOW) \
                            and x.flags.c_contiguous:
                        # (few channels, C-order data: the first convolution) the data
                        # reordered channels last, the output written as it lies: no
                        # reorder of the (larger) output from oneDNN's blocked layout
                        mds.append(desc(lib, x.shape, strides=channels_last_strides(x.shape)))
                        mds.append(desc(lib, wshape, any_layout=True))
                        mds.append(desc(lib, yshape, strides=_elem_strides(y)))
                        pd2 = self._fwd_pd(prop, mds[-3:], geom, bmd, attr)
                        if _lib.impl_name(lib, pd2).startswith(_SLOW):
                            lib.dnnl_primitive_desc_destroy(pd2)
                        else:
                            lib.dnnl_primitive_desc_destroy(pd)
                            pd = pd2
                    if cl and _lib.impl_name(lib, pd).startswith(_SLOW):
                        # only a slow kernel for the layouts as they lie (few channels):
                        # oneDNN's own layouts, reordered at the edges
                        for sh in (x.shape, wshape, yshape):
                            mds.append(desc(lib, sh, any_layout=True))
                        lib.dnnl_primitive_desc_destroy(pd)
                        pd = self._fwd_pd(prop, mds[-3:], geom, bmd, attr)
                finally:
                    if attr is not None:
                        lib.dnnl_primitive_attr_destroy(attr)
                const = ('const',) if token is not None else ()
                args = [(_lib.ARG_SRC, mds[0], False),
                        (_lib.ARG_WEIGHTS, mds[1], False) + const,
                        (_lib.ARG_DST, mds[2], True)]
                if b is not None:
                    args.append((_lib.ARG_BIAS, bmd, False) + const)
                return Primitive(self, pd, args)
            finally:
                self._destroy(mds)

        arrays = [x, w, y] + ([b] if b is not None else [])
        prim = self.primitive(key, build) if token is None else \
            self.primitive(key + ('const',), build, cache)
        if prim is None:
            return None
        if len(prim.user) > len(arrays):
            arrays.append(y)            # (a widened sum's summand: y holds it)
        if token is None:
            self.execute(key, prim, arrays)
            return y
        self.execute(key, prim, arrays, token)
        if memo is not None and y is out and (not summed or in_place) and x is x_in \
                and w is w_in and b is b_in:
            # (no copy was made: the same arrays give the same call)
            memo[threading.get_ident()] = (x_in, w_in, b_in, res_in, out, tuple(post_ops),
                                           out_layout, key, prim, arrays)
        return y

    #: whether bfloat16 convolutions run as oneDNN's float32 kernel on their widened
    #: operands (see :meth:`conv_forward_bf16`): None until :meth:`bf16_conv_widens` has
    #: timed it on this CPU (a caller may set it)
    bf16_conv_f32 = None

    def bf16_conv_widens(self, dtype):
        """Whether bfloat16 convolutions run as oneDNN's float32 kernel on their widened
        operands: timed once per backend on a 3x3 convolution of 64 channels (ResNet-50's
        first stage at batch 8, channels last; the best of 5 timed runs of each, about
        0.3 s in all: smaller ones drown in a busy machine's noise), by the process's CPU
        time (which a busy machine disturbs far less than the wall clock). The float32
        route is taken where it is faster by a tenth than oneDNN's bf16 kernel (it took
        0.46-0.79 of the bf16 kernel's CPU time in six timings on the busy VM), as on this
        project's AVX-512 BF16 Intel VM without AMX (``vdpbf16ps`` does no more
        multiply-adds a cycle than two float32 FMAs there), not where the bf16 kernels
        are the fast ones (the AMD EPYC VM: ResNet-50 in bf16 took 0.54x its float32
        time, bench/RESULTS.md). ``dtype``: the caller's bfloat16 dtype (this module
        imports no ml_dtypes). ``SYMGRAPH_BF16_CONV=bf16|float32`` pins the route (for
        bit-for-bit runs across processes and machines)."""
        got = self.bf16_conv_f32
        if got is None:
            how = config.choice('BF16_CONV')        # SYMGRAPH_BF16_CONV pins the route
            got = (how == 'float32') if how != 'auto' else self._time_bf16_conv(dtype)
            self.bf16_conv_f32 = got
        return got

    def _time_bf16_conv(self, dtype):
        clock = _cpu_clock()
        if clock is None:
            return False
        rng = np.random.RandomState(0)
        shape = (8, 64, 56, 56)
        x = np.moveaxis(rng.normal(size=(8, 56, 56, 64)).astype(np.float32).astype(dtype),
                        -1, 1)
        w = rng.normal(0, 0.05, size=(64, 64, 3, 3)).astype(np.float32).astype(dtype)
        best = {False: float('inf'), True: float('inf')}
        caches = {False: {}, True: {}}
        for rep in range(6):
            for wide in (False, True):
                t = clock()
                y = self.conv_forward_bf16(x, w, None, (1, 1), (1, 1), (1, 1), 1, shape,
                                           out_layout='channels_last', token=1,
                                           cache=caches[wide], wide=wide)
                if y is None:
                    return False
                if rep:                 # (the first: building, reordering the weights)
                    best[wide] = min(best[wide], clock() - t)
        return best[True] < 0.9 * best[False]

    def _wide_conv(self, prop, mds, x, xs, wshape, y, yshape, b, bmd, geom, post_ops,
                   token):
        """The convolution of :meth:`conv_forward_bf16` by oneDNN's float32 kernel on the
        bfloat16 operands widened (exactly) by reorders at its edges, the output (post-ops
        applied in float32, as the bf16 kernel applies them) rounded to bfloat16 by the
        reorder after it; None where no fast float32 kernel takes the layouts. The sum
        is a binary add post-op reading the bfloat16 summand (``y``, which holds it) as
        it lies: no widened copy of it."""
        lib = self.lib
        at = next((i for i, p in enumerate(post_ops) if p[0] == 'sum'), None)
        attr = self._post_ops_attr(post_ops, None if at is None else mds[2]) \
            if post_ops else None
        try:
            return self._wide_conv_pd(prop, mds, x, xs, wshape, y, yshape, b, bmd, geom,
                                      attr, token, at)
        finally:
            if attr is not None:
                lib.dnnl_primitive_attr_destroy(attr)

    def _wide_conv_pd(self, prop, mds, x, xs, wshape, y, yshape, b, bmd, geom, attr, token,
                      at):
        lib = self.lib
        cl = not x.flags.c_contiguous or not y.flags.c_contiguous
        f32 = []
        try:
            if cl:
                f32.append(desc(lib, x.shape, F32, strides=xs))
                f32.append(desc(lib, wshape, F32, any_layout=True))
                f32.append(desc(lib, yshape, F32, strides=_elem_strides(y)))
            else:
                f32 += [desc(lib, sh, F32, any_layout=True)
                        for sh in (x.shape, wshape, yshape)]
            fbmd = None
            if b is not None:
                fbmd = desc(lib, b.shape, F32)
                f32.append(fbmd)
            try:
                pd = self._fwd_pd(prop, f32[:3], geom, fbmd, attr)
            except _lib.DnnlError:
                return None
            if _lib.impl_name(lib, pd).startswith(_SLOW):
                lib.dnnl_primitive_desc_destroy(pd)
                return None
            const = ('const',) if token is not None else ()
            args = [(_lib.ARG_SRC, mds[0], False),
                    (_lib.ARG_WEIGHTS, mds[1], False) + const,
                    (_lib.ARG_DST, mds[2], True)]
            if b is not None:
                args.append((_lib.ARG_BIAS, bmd, False) + const)
            if at is not None:
                # DNNL_ARG_ATTR_MULTIPLE_POST_OP(at) | DNNL_ARG_SRC_1 (oneDNN 3.2: base
                # 32768, as int8.py has it): the summand
                args.append((32768 * (at + 1) | _lib.ARG_SRC_1, mds[2], False))
            return Primitive(self, pd, args)
        finally:
            self._destroy(f32)

    def fc_forward_bf16(self, x, w, b):
        """y = x @ w.T + b for 2-D bfloat16 ``x`` (m, k) and ``w`` (n, k) (b: None,
        float32 or bfloat16 of (n,)), in bfloat16, or None."""
        if not (is_bf16(x) and is_bf16(w)) or x.ndim != 2 or w.ndim != 2 \
                or x.shape[1] != w.shape[1]:
            return None
        x, w = _plain(x), _plain(w)
        b = None if b is None else _plain(b).reshape(1, -1)
        m, k = x.shape
        n = w.shape[0]
        key = ('fc_forward_bf16', m, k, n, None if b is None else _dnnl_type(b))

        def build():
            lib = self.lib
            # w (n, k) in C order is w.T (k, n) with strides (1, k)
            mds = [desc(lib, (m, k)), desc(lib, (k, n), strides=(1, k)), desc(lib, (m, n))]
            try:
                bmd = None
                if b is not None:
                    bmd = desc(lib, (1, n), _dnnl_type(b))
                    mds.append(bmd)
                pd = _VP()
                check(lib.dnnl_matmul_primitive_desc_create(
                    ctypes.byref(pd), self.engine, mds[0], mds[1], bmd, mds[2], None),
                    'dnnl_matmul_primitive_desc_create')
                args = [(_lib.ARG_SRC, mds[0], False), (_lib.ARG_WEIGHTS, mds[1], False),
                        (_lib.ARG_DST, mds[2], True)]
                if b is not None:
                    args.append((_lib.ARG_BIAS, bmd, False))
                return Primitive(self, pd, args)
            finally:
                self._destroy(mds)

        y = np.empty((m, n), x.dtype)
        arrays = [x, w, y] + ([b] if b is not None else [])
        return y if self.run(key, build, arrays) else None

    def eltwise_forward_bf16(self, x, kind, alpha=0.0, beta=0.0):
        """f(x) elementwise in bfloat16 (``kind`` a key of ``layers.ELTWISE``), or
        None."""
        if not is_bf16(x) or kind not in ELTWISE:
            return None
        x = _dense(x)
        n = x.size
        key = ('eltwise_forward_bf16', n, kind, float(alpha), float(beta))

        def build():
            md = desc(self.lib, (n,))
            try:
                pd = _VP()
                check(self.lib.dnnl_eltwise_forward_primitive_desc_create(
                    ctypes.byref(pd), self.engine, _lib.FORWARD_INFERENCE, ELTWISE[kind], md,
                    md, alpha, beta, None), 'dnnl_eltwise_forward_primitive_desc_create')
                return Primitive(self, pd, [(_lib.ARG_SRC, md, False),
                                            (_lib.ARG_DST, md, True)])
            finally:
                self._destroy([md])

        y = np.empty_like(x)            # (in x's memory order)
        return y if n and self.run(key, build, [x, y]) else None

    def softmax_forward_bf16(self, x, axis, log=False):
        """softmax (log-softmax) of bfloat16 ``x`` along ``axis`` (non-negative), or
        None."""
        if not is_bf16(x) or not 0 <= axis < x.ndim or x.size == 0:
            return None
        x = _plain(x)
        # (LayerMixin's, on the same Backend)
        return self.softmax_forward_as(x, axis, log, 'softmax_forward_bf16',
                                       lambda: desc(self.lib, x.shape))

    def pool_forward_bf16(self, x, kind, kernel, stride, pad_l, pad_r, yshape,
                          out_layout=None, out=None):
        """Inference pooling of bfloat16 ``x`` (N, C, *S; taken as it lies, C order or
        channels last) into ``yshape`` (``kind`` as the float32 ``pool_forward`` takes it),
        written channels last where ``out_layout`` says so (into ``out`` when it is such
        an array apart from ``x``), or None."""
        if not is_bf16(x) or kind not in POOL:
            return None
        x = _dense(x)
        xs = _elem_strides(x)
        yshape = tuple(int(s) for s in yshape)
        if (out_layout == 'channels_last') != (not x.flags.c_contiguous):
            # oneDNN pools between two layouts only in its reference kernel: the output
            # takes the input's layout (the executor copies it where its buffer lies)
            out_layout = None if x.flags.c_contiguous else 'channels_last'
        key = ('pool_forward_bf16', x.shape, xs, yshape, kind, tuple(kernel), tuple(stride),
               tuple(pad_l), tuple(pad_r), out_layout)
        y = out if _takes(out, yshape, _layout_strides(yshape, out_layout)) \
            and not np.may_share_memory(out, x) else _empty(yshape, x.dtype, out_layout)

        def build():
            # (pooling takes its source's layout as given)
            mds = [desc(self.lib, x.shape, strides=xs),
                   desc(self.lib, yshape, strides=_elem_strides(y))]
            try:
                pd = self._pool_fwd_pd(_lib.FORWARD_INFERENCE, POOL[kind], mds[0], mds[1],
                                       self._pool_geom(kernel, stride, pad_l, pad_r))
                return Primitive(self, pd, [(_lib.ARG_SRC, mds[0], False),
                                            (_lib.ARG_DST, mds[1], True)])
            finally:
                self._destroy(mds)

        return y if self.run(key, build, [x, y]) else None

    def add_bf16(self, a, b, relu=False):
        """a + b (relu'd when ``relu``) of bfloat16 arrays of one shape, in bfloat16 (a
        residual sum after a bfloat16 convolution), or None."""
        if not (is_bf16(a) and is_bf16(b)) or a.shape != b.shape or not a.size:
            return None
        a, b = _dense(a), _dense(b)
        if a.strides != b.strides:
            a, b = _plain(a), _plain(b)
        n = a.size
        key = ('add_bf16', n, bool(relu))

        def build():
            md = desc(self.lib, (n,))
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

        y = np.empty_like(a)            # (in a's memory order)
        return y if self.run(key, build, [a, b, y]) else None

    def batch_norm_forward_bf16(self, x, gamma, beta, eps, mean=None, var=None):
        """Batch normalisation of bfloat16 ``x`` (N, C, ...; taken as it lies, C order or
        channels last; y in the same layout), the scale, shift and statistics float32 (as
        MXNet 1.9.1's MKLDNN BatchNorm keeps them for bf16 data): y (bfloat16) with the
        given ``mean``/``var`` (inference, the running statistics), or (y, batch mean,
        batch variance) when ``mean`` is None (a training forward; the statistics
        float32, accumulated in float32 by oneDNN); None when not taken. The primitive
        runs channels last (oneDNN's jit kernels), reordered at its edges for C-order
        data, as the float32 one."""
        if not is_bf16(x) or not 2 <= x.ndim <= 5 or not x.size:
            return None
        x = _dense(x)
        xs = _elem_strides(x)
        c = x.shape[1]
        stats = mean is None
        flags = _lib.USE_SCALE | _lib.USE_SHIFT | (0 if stats else _lib.USE_GLOBAL_STATS)
        prop = _lib.FORWARD_TRAINING if stats else _lib.FORWARD_INFERENCE
        key = ('batch_norm_forward_bf16', x.shape, xs, float(eps), flags)

        def build():
            lib = self.lib
            mds = [desc(lib, x.shape, strides=xs), desc(lib, (c,), F32)]
            try:
                lay = x.shape if x.ndim < 3 else channels_last_strides(x.shape)
                mds.append(desc(lib, x.shape, strides=None if x.ndim < 3 else lay))
                pd = self._bn_fwd_pd(mds[2], eps, flags, prop)
                cmd = mds[1]
                return Primitive(self, pd, [
                    (_lib.ARG_SRC, mds[0], False), (_lib.ARG_SCALE, cmd, False),
                    (_lib.ARG_SHIFT, cmd, False), (_lib.ARG_DST, mds[0], True),
                    (_lib.ARG_MEAN, cmd, stats), (_lib.ARG_VARIANCE, cmd, stats)])
            finally:
                self._destroy(mds)

        y = np.empty_like(x)            # (in x's memory order)
        if stats:
            mean, var = np.empty(c, np.float32), np.empty(c, np.float32)
        else:
            mean, var = as_f32(mean), as_f32(var)
        if not self.run(key, build, [x, as_f32(gamma), as_f32(beta), y, mean, var]):
            return None
        return (y, mean, var) if stats else y

    def concat_bf16(self, arrays, axis):
        """The bfloat16 ``arrays`` (of one ndim, equal but for ``axis``, non-negative)
        joined along ``axis`` by oneDNN's concat primitive (a copy: exact), in C order, or
        None."""
        if not arrays or not all(is_bf16(a) for a in arrays) \
                or not 0 <= axis < arrays[0].ndim:
            return None
        arrays = [_plain(a) for a in arrays]
        ref = arrays[0].shape
        if any(a.ndim != len(ref) or a.shape[:axis] != ref[:axis]
               or a.shape[axis + 1:] != ref[axis + 1:] for a in arrays):
            return None
        yshape = ref[:axis] + (sum(a.shape[axis] for a in arrays),) + ref[axis + 1:]
        if not all(yshape) or any(a.size == 0 for a in arrays):
            return None
        key = ('concat_bf16', tuple(a.shape for a in arrays), axis)

        def build():
            lib = self.lib
            mds = [desc(lib, a.shape) for a in arrays]
            try:
                mds.append(desc(lib, yshape))
                pd = _VP()
                check(_concat_pd_create(lib)(
                    ctypes.byref(pd), self.engine, mds[-1], len(arrays), axis,
                    (_VP * len(arrays))(*mds[:-1]), None),
                    'dnnl_concat_primitive_desc_create')
                return Primitive(self, pd, [(ARG_MULTIPLE_SRC + i, md, False)
                                            for i, md in enumerate(mds[:-1])]
                                 + [(_lib.ARG_DST, mds[-1], True)])
            finally:
                self._destroy(mds)

        y = np.empty(yshape, arrays[0].dtype)
        return y if self.run(key, build, arrays + [y]) else None


    def cast_bf16(self, x, dtype, out=None):
        """float32 ``x`` as bfloat16 (``dtype``: the caller's ml_dtypes bfloat16, as the
        backend imports nothing beyond NumPy; rounded to nearest even, as ml_dtypes'
        ``astype`` rounds), or bfloat16 ``x`` as float32 (``dtype`` float32), by oneDNN's
        reorder: one pass on the
        OpenMP threads, where ml_dtypes' cast is a scalar loop (an amp_cast of a batch
        of images). ``x`` taken as it lies (C order or channels last), the result in the
        same layout, into ``out`` when it is such an array of the result's type; None for
        other dtypes."""
        dtype = np.dtype(dtype)
        to_bf16 = x.dtype == np.float32 and dtype.name == 'bfloat16'
        if not (to_bf16 or is_bf16(x) and dtype == np.float32) or not x.size:
            return None
        x = _dense(x)
        xs = _elem_strides(x)
        if not (isinstance(out, np.ndarray) and out.dtype == dtype and out.shape == x.shape
                and out.flags.writeable and _elem_strides(out) == xs
                and not np.may_share_memory(out, x)):
            out = None
        key = ('cast_bf16', x.shape, xs, to_bf16)
        src, dst = (F32, BF16) if to_bf16 else (BF16, F32)

        def build():
            mds = [desc(self.lib, x.shape, src, strides=xs),
                   desc(self.lib, x.shape, dst, strides=xs)]
            try:
                return self.reorder_primitive(mds[0], mds[1])
            finally:
                self._destroy(mds)

        y = np.empty_like(x, dtype) if out is None else out     # (in x's memory order)
        return y if self.run(key, build, [x, y]) else None

class _Timespec(ctypes.Structure):
    _fields_ = [('sec', ctypes.c_long), ('nsec', ctypes.c_long)]


def _cpu_clock():
    """A function reading this process's CPU time (all threads) in seconds: libc's
    ``clock_gettime(CLOCK_PROCESS_CPUTIME_ID)`` (Linux; the backend imports no ``time``),
    or None elsewhere."""
    if not sys.platform.startswith('linux'):
        return None
    try:
        fn = ctypes.CDLL(None).clock_gettime
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.POINTER(_Timespec)]
    fn.restype = ctypes.c_int
    ts = _Timespec()

    def clock():
        fn(2, ctypes.byref(ts))         # CLOCK_PROCESS_CPUTIME_ID
        return ts.sec + 1e-9 * ts.nsec
    return clock


def _concat_pd_create(lib):
    """``dnnl_concat_primitive_desc_create`` of ``lib``, declared (once per library)."""
    fn = getattr(lib, '_sg_concat_pd_create', None)
    if fn is None:
        # (a function object of its own: the library's shared attribute stays as it is)
        fn = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(_VP), _VP, _VP, ctypes.c_int,
                              ctypes.c_int, ctypes.POINTER(_VP), _VP)(
            ('dnnl_concat_primitive_desc_create', lib))
        lib._sg_concat_pd_create = fn
    return fn

