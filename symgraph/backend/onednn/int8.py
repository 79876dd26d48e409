"""int8 kernels of the oneDNN backend: convolution and inner product of uint8/int8 data
with int8 weights (``dnnl_u8``/``dnnl_s8`` in), which oneDNN runs with AVX-512 VNNI
(``vpdpbusd``) where the CPU has it, and the steps around them in a quantized network.

The convolution writes channels last (the layout oneDNN's int8 kernels work in) and takes
a channels-last input as it lies, so that the activations of a quantized plan stay
channels last between layers; a layer's int8 weights and int32 bias are constants
reordered once per token. The convolution gives either the exact int32 sums, or (a
fused ``_sg_mkldnn_conv``) the requantized result in the same primitive: ``float32(sums
+ bias) * scale`` per channel as a binary post-op, a relu, where the layer has one the
residual sum (oneDNN's sum post-op over the summand's own buffer where the caller gives
it as the output, MXNet's in-place sum, else over a copy: ``fma(s, sum_scale, y)``, one
rounding, as MXNet's build) and a relu, then oneDNN's conversion to
uint8/int8 (round to nearest even, saturate). :meth:`Int8Mixin.int8_requantize` does the
scaling in a reorder, :meth:`Int8Mixin.int8_add` a residual sum of a float32 result in a
binary primitive (``y + float32(s * scale)``, two roundings), :meth:`Int8Mixin.int8_pool`
max pooling on the integers. Each computes the bits of the NumPy arithmetic the quantized
operators (ops/quantized_nn.py, ops/subgraph_mkldnn.py) fall back to (the tests compare
them bit for bit). Mixed into ``conv.Backend``;
operators reach it through ``opdef.cpu_kernel('int8_conv')`` and the like.
"""
import ctypes

import numpy as np

from . import _lib
from ._core import Primitive
from ._lib import check
from .bf16 import desc

__all__ = ['Int8Mixin', 'S8', 'U8', 'S32']

#: oneDNN's dnnl_data_type_t codes
F32, S32, S8, U8 = 3, 4, 5, 6
_CODE = {np.dtype(np.int8): S8, np.dtype(np.uint8): U8, np.dtype(np.int32): S32,
         np.dtype(np.float32): F32}
#: DNNL_ARG_ATTR_SCALES | DNNL_ARG_SRC (_1): the runtime scales of a source
_ARG_SRC_SCALES = 4096 | _lib.ARG_SRC
_ARG_SRC_1_SCALES = 4096 | _lib.ARG_SRC_1


#: dnnl_binary_mul, and DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1: the tensor of
#: a primitive's first post-op, a binary one
_BINARY_MUL = 0x1fff1
_ARG_POST_OP_0_SRC_1 = 32768 | _lib.ARG_SRC_1


def _requant_attr(lib, channels, ndim, relu, sum_scale=None, post_relu=False):
    """A primitive attribute whose post-ops multiply the result by a per-channel float32
    tensor (1, C, 1, ...) (a binary post-op: one float32 multiply, as NumPy's) and, where
    ``relu``, apply a relu; with a ``sum_scale``, add what the destination held times that
    scale (oneDNN's sum post-op: one fused multiply-add, as MXNet's oneDNN does it) and,
    where ``post_relu``, apply another relu; and that tensor's descriptor. The caller
    destroys both."""
    fn = lib.dnnl_post_ops_append_binary
    fn.argtypes, fn.restype = [_VP, ctypes.c_int, _VP], ctypes.c_int
    md = desc(lib, (1, channels) + (1,) * (ndim - 2), F32)
    attr, ops = _VP(), _VP()
    try:
        check(lib.dnnl_primitive_attr_create(ctypes.byref(attr)), 'dnnl_primitive_attr_create')
        check(lib.dnnl_post_ops_create(ctypes.byref(ops)), 'dnnl_post_ops_create')
        check(fn(ops, _BINARY_MUL, md), 'dnnl_post_ops_append_binary')
        if relu:
            check(lib.dnnl_post_ops_append_eltwise(ops, _lib.ELTWISE_RELU, 0.0, 0.0),
                  'dnnl_post_ops_append_eltwise')
        if sum_scale is not None:
            # data type undef: the destination's own (the summand is copied into it)
            check(lib.dnnl_post_ops_append_sum(ops, float(sum_scale), 0, 0),
                  'dnnl_post_ops_append_sum')
            if post_relu:
                check(lib.dnnl_post_ops_append_eltwise(ops, _lib.ELTWISE_RELU, 0.0, 0.0),
                      'dnnl_post_ops_append_eltwise')
        check(lib.dnnl_primitive_attr_set_post_ops(attr, ops),
              'dnnl_primitive_attr_set_post_ops')
    except Exception:
        if attr:
            lib.dnnl_primitive_attr_destroy(attr)
        lib.dnnl_memory_desc_destroy(md)
        raise
    finally:
        if ops:
            lib.dnnl_post_ops_destroy(ops)
    return attr, md


def _set_scales_mask(lib, attr, arg, mask):
    fn = lib.dnnl_primitive_attr_set_scales_mask
    fn.argtypes, fn.restype = [_VP, ctypes.c_int, ctypes.c_int], ctypes.c_int
    check(fn(attr, arg, mask), 'dnnl_primitive_attr_set_scales_mask')


def _with_scales(backend, prim, md, arg, values):
    """``prim`` also given the float32 ``values`` as the runtime scales ``arg`` (a copy it
    keeps as ``prim.scales``: an argument Primitive does not know)."""
    prim.scales = np.array(values, np.float32)
    mem = prim._memory(backend, md, prim.scales.ctypes.data)
    prim.exec_args = (_lib.ExecArg * (prim.nargs + 1))(*list(prim.exec_args),
                                                       _lib.ExecArg(arg, mem))
    prim.nargs += 1
    return prim
_VP = ctypes.c_void_p


def _plain(a):
    return a if a.flags.c_contiguous else np.ascontiguousarray(a)


def _moved(a):
    """``a`` (N, C, *S) with its channels moved last."""
    return np.moveaxis(a, 1, -1)


def _activation(a):
    """``a`` as it lies when C order or channels last, else a C-order copy."""
    if a.flags.c_contiguous or _moved(a).flags.c_contiguous:
        return a
    return np.ascontiguousarray(a)


#: the axes order that views a channels-last array (N, *S, C) as (N, C, *S), by ndim
_TO_FIRST = {n: (0, n - 1) + tuple(range(1, n - 1)) for n in range(3, 6)}


def _channels_last(shape, dtype):
    """A new (N, C, *S) array of ``dtype`` lying channels last."""
    return np.moveaxis(np.empty((shape[0],) + tuple(shape[2:]) + (shape[1],), dtype), -1, 1)


def _lies_as(a, ycl, dtype):
    """Whether ``a`` is the (N, C, *S) view of a C-order (N, *S, C) array of shape
    ``ycl`` and ``dtype`` (what :meth:`Int8Mixin.int8_conv` writes)."""
    if not isinstance(a, np.ndarray) or a.dtype != dtype or a.ndim != len(ycl) \
            or a.shape != (ycl[0], ycl[-1]) + tuple(ycl[1:-1]):
        return False
    return _moved(a).flags.c_contiguous and a.flags.writeable and a.flags.aligned


def _same_array(a, b):
    """Whether ``a`` and ``b`` are the same elements (one memory, shape and strides)."""
    return a is b or (a.__array_interface__['data'][0] == b.__array_interface__['data'][0]
                      and a.shape == b.shape and a.strides == b.strides
                      and a.dtype.itemsize == b.dtype.itemsize)


class Int8Mixin:
    """The int8 kernels (see the module docstring)."""

    #: smallest multiply-adds (output elements x reduction length) sent to oneDNN; below,
    #: NumPy's exact float64 product is as quick
    INT8_MIN_MACS = 1 << 14

    @property
    def int8_dot_exact(self):
        """Whether oneDNN's int8 convolution and inner product give exact int32 sums on
        this CPU (VNNI; see :func:`_lib.has_vnni`): without, both kernels decline."""
        exact = self.__dict__.get('_int8_dot_exact')
        if exact is None:
            exact = self.__dict__['_int8_dot_exact'] = _lib.has_vnni(
                _lib.effective_isa(self.lib))
        return exact

    def int8_conv(self, x, w, bias, stride, pad, dilate, groups, token=None, cache=None,
                  scales=None, dtype=np.int32, relu=False, summand=None, sum_scale=1.0,
                  post_relu=False, out=None):
        """The exact int32 convolution of uint8/int8 ``x`` (N, C, *S) with int8 ``w``
        (F, C / groups, *K), plus int32 ``bias`` (F,) or None, or None (declined).

        The result is an (N, F, *S') view of a channels-last array (the layout oneDNN's
        int8 kernels write: no reorder after the primitive), and ``x`` is taken as it lies
        when it is such a view too. With a ``token`` the weights and bias are constants:
        reordered into the primitive's own buffer only when the token changes (``cache``,
        a dict of the caller's, keeps that primitive with one layer; see
        :meth:`primitive`).

        With per-channel float32 ``scales`` (and a ``token``) the sums are requantized in
        the same primitive: ``float32(sum) * scale`` (a binary post-op), a relu where
        ``relu``, written as ``dtype`` (float32, or int8/uint8 rounded to nearest even and
        saturated): the bits of :meth:`int8_requantize` on the int32 result.

        With a ``summand`` (int8/uint8, the output's shape, and ``dtype`` its type: MXNet's
        fused residual sum computes into the summand's buffer) that is added too, in the
        same primitive: ``fma(summand, sum_scale, y)`` (one rounding: oneDNN's sum post-op,
        what MXNet 1.9.1's build runs), then a relu where ``post_relu``, then the
        conversion. The summand is copied into the output first (a reorder), unless it is
        the output itself: ``out`` (an array lying as the result does: (N, F, *S') of
        ``dtype``, channels last) is written and returned instead of a new array where it
        does not overlap ``x``; given the summand's own storage (MXNet's in-place sum, an
        executor's storage plan giving the output that buffer), the sum is computed over
        it with no copy. Otherwise the summand stays unchanged."""
        if not self.int8_dot_exact:
            return None
        # what a call works out from its arguments' shapes, layouts and types, kept per
        # signature (a layer's calls repeat it every step: ~100 us of Python each)
        try:
            sig = (x.shape, x.strides, x.dtype, w.shape, w.strides, w.dtype,
                   None if bias is None else (bias.dtype, bias.shape), stride, pad, dilate,
                   groups, token, scales is None, dtype, relu,
                   None if summand is None else (summand.dtype, summand.shape), sum_scale,
                   post_relu)
            plans = self.__dict__.setdefault('_int8_conv_plans', {})
            plan = plans.get(sig, 0)
        except TypeError:           # an unhashable argument (a list): worked out each call
            sig, plans, plan = None, {}, 0
        if plan == 0:
            plan = self._int8_conv_plan(x, w, bias, stride, pad, dilate, groups, token,
                                        scales, dtype, relu, summand, sum_scale, post_relu)
            if sig is not None:
                if len(plans) >= 4096:
                    plans.clear()
                plans[sig] = plan
        if plan is None:
            return None
        key, build, ycl, ydtype, plain_x, plain_w = plan
        prim = self.primitive(key, lambda: build(scales), cache)
        if prim is None:
            return None
        if plain_x:
            x = np.ascontiguousarray(x)
        if plain_w:
            w = np.ascontiguousarray(w)
        y = out if out is not None and _lies_as(out, ycl, ydtype) \
            and not np.may_share_memory(out, x) else None
        if y is None or (summand is not None and not _same_array(summand, y)
                         and np.may_share_memory(summand, y)):
            y = np.empty(ycl, ydtype).transpose(_TO_FIRST[len(ycl)])
        if summand is not None and not _same_array(summand, y):
            self._int8_copy(summand, y)
        arrays = [x, w, y] + ([_plain(bias)] if bias is not None else [])
        self.execute(key, prim, arrays, token)
        return y

    def _int8_copy(self, src, dst):
        """``dst[...] = src`` (int8/uint8 arrays of one shape and dtype) by a oneDNN reorder
        (on the backend's threads: about twice NumPy's one-thread copy), else NumPy."""
        if src.dtype == dst.dtype and src.dtype in (np.int8, np.uint8) \
                and src.shape == dst.shape:
            key = ('int8_copy', src.shape, src.strides, dst.strides, src.dtype.str)
            code = _CODE[src.dtype]

            def build():
                mds = [desc(self.lib, src.shape, code, strides=src.strides),
                       desc(self.lib, dst.shape, code, strides=dst.strides)]
                try:
                    return self.reorder_primitive(mds[0], mds[1])
                finally:
                    self._destroy(mds)

            if self.run(key, build, [src, dst]):
                return
        np.copyto(dst, src)

    def _int8_conv_plan(self, x, w, bias, stride, pad, dilate, groups, token, scales, dtype,
                        relu, summand, sum_scale, post_relu):
        """(primitive key, its build(scales), the channels-last output shape and its dtype,
        whether ``x`` and ``w`` need a C-order copy) of an :meth:`int8_conv` call, or None
        (declined)."""
        dtype = np.dtype(dtype)
        if scales is not None and (token is None or dtype not in _CODE):
            return None
        if summand is not None and (scales is None or summand.dtype != dtype
                                    or dtype not in (np.int8, np.uint8)):
            return None
        if x.dtype not in (np.int8, np.uint8) or w.dtype != np.int8 or x.ndim not in (4, 5) \
                or (bias is not None and bias.dtype != np.int32):
            return None
        x0, w0 = x, w
        x, w = _activation(x), _plain(w)
        stride, pad, dilate = (tuple(int(v) for v in t) for t in (stride, pad, dilate))
        out = tuple((s + 2 * p - d * (k - 1) - 1) // t + 1 for s, k, t, p, d in
                    zip(x.shape[2:], w.shape[2:], stride, pad, dilate))
        yshape = (x.shape[0], w.shape[0]) + out
        if int(np.prod(yshape)) * int(np.prod(w.shape[1:])) < self.INT8_MIN_MACS:
            return None
        wshape = tuple(w.shape) if groups == 1 else \
            (groups, w.shape[0] // groups) + tuple(w.shape[1:])
        xstrides = tuple(s // x.itemsize for s in x.strides)
        last = _moved(x).flags.c_contiguous and x.shape[1] > 1
        if summand is not None and tuple(summand.shape) != yshape:
            return None
        y = _channels_last(yshape, dtype)
        ystrides = tuple(s // dtype.itemsize for s in y.strides)
        fused_sum = None if summand is None else float(np.float32(sum_scale))
        key = ('int8_conv', x.shape, x.dtype.str, xstrides, last, w.shape, stride, pad, dilate,
               groups, bias is not None, token is not None, dtype.str, bool(relu),
               token if scales is not None else None, fused_sum,
               bool(post_relu) and summand is not None)
        const = ('const',) if token is not None else ()

        def build(scales):
            lib = self.lib
            mds = []
            try:
                mds.append(desc(lib, x.shape, _CODE[x.dtype], strides=xstrides))
                mds.append(desc(lib, wshape, S8))
                mds.append(desc(lib, yshape, _CODE[dtype], strides=ystrides))
                # a C-order input: oneDNN's int8 kernels take channels last (or blocked),
                # the reference kernel anything else (~50x slower): reordered first
                mds.append(desc(lib, x.shape, _CODE[x.dtype], strides=xstrides,
                                any_layout=not last))
                mds.append(desc(lib, wshape, S8, any_layout=True))
                mds.append(desc(lib, yshape, _CODE[dtype], strides=ystrides))
                bmd = None
                if bias is not None:
                    bmd = desc(lib, bias.shape, S32)
                    mds.append(bmd)
                attr = smd = None
                if scales is not None:
                    attr, smd = _requant_attr(lib, yshape[1], len(yshape), relu, fused_sum,
                                              post_relu)
                    mds.append(smd)
                geom = self._geometry(x.shape, yshape, w.shape[2:], stride, pad, dilate)
                try:
                    pd = self._fwd_pd(_lib.FORWARD_INFERENCE, mds[3:6], geom, bmd, attr)
                finally:
                    if attr:
                        lib.dnnl_primitive_attr_destroy(attr)
                args = [(_lib.ARG_SRC, mds[0], False),
                        (_lib.ARG_WEIGHTS, mds[1], False) + const,
                        (_lib.ARG_DST, mds[2], True)]
                if bias is not None:
                    args.append((_lib.ARG_BIAS, bmd, False) + const)
                prim = Primitive(self, pd, args)
                if scales is not None:
                    _with_scales(self, prim, smd, _ARG_POST_OP_0_SRC_1, scales)
                return prim
            finally:
                self._destroy(mds)

        return key, build, (yshape[0],) + yshape[2:] + (yshape[1],), dtype, x is not x0, \
            w is not w0

    def int8_requantize(self, acc, scales, dtype, token, cache, channels_last=False):
        """``acc`` (int32 (N, C, *S), as :meth:`int8_conv` writes it, or float32: a
        quantization) times the float32 per-channel ``scales`` (C,), as float32 (``dtype``
        float32) or rounded to nearest even and saturated into int8/uint8, in one reorder
        that keeps ``acc``'s layout: ``float32(acc) * scale`` then oneDNN's conversion, the
        bits of NumPy's ``np.clip(np.rint(acc.astype(float32) * scales), lo,
        hi).astype(dtype)``. The scales are constants, fixed per ``token`` (kept in ``cache``, a dict of the
        caller's, or None: this thread's cache). ``channels_last``: an (N, C, *S) result
        lies channels last whatever ``acc``'s layout (the same reorder changes it: a
        quantized network's float32 input goes straight into the layout its int8
        convolutions read). None when declined."""
        dtype = np.dtype(dtype)
        if acc.dtype not in (np.int32, np.float32) or dtype not in _CODE or acc.ndim < 2 \
                or scales.shape != (acc.shape[1],):
            return None
        acc = _activation(acc)
        strides = tuple(s // 4 for s in acc.strides)
        last = not acc.flags.c_contiguous or (channels_last and acc.ndim in (4, 5))
        y = _channels_last(acc.shape, dtype) if last else np.empty(acc.shape, dtype)
        ystrides = tuple(s // dtype.itemsize for s in y.strides)
        key = ('int8_requantize', acc.shape, strides, acc.dtype.str, dtype.str, token, last)

        def build():
            lib = self.lib
            mds = [desc(lib, acc.shape, _CODE[acc.dtype], strides=strides),
                   desc(lib, acc.shape, _CODE[dtype], strides=ystrides),
                   desc(lib, scales.shape, F32)]
            attr = _VP()
            try:
                check(lib.dnnl_primitive_attr_create(ctypes.byref(attr)),
                      'dnnl_primitive_attr_create')
                _set_scales_mask(lib, attr, _lib.ARG_SRC, 2)
                prim = self.reorder_primitive(mds[0], mds[1], attr)
                return _with_scales(self, prim, mds[2], _ARG_SRC_SCALES, scales)
            finally:
                if attr:
                    lib.dnnl_primitive_attr_destroy(attr)
                self._destroy(mds)

        prim = self.primitive(key, build, cache)
        if prim is None:
            return None
        self.execute(key, prim, [acc, y])
        return y

    def int8_add(self, y, s, scale, relu, dtype, cache):
        """float32 ``y`` plus ``s`` (int8/uint8, the shape of ``y``) times the float32
        ``scale``, a relu where ``relu``, rounded to nearest even and saturated into
        int8/uint8 ``dtype`` (or float32), in one oneDNN binary primitive: ``y + float32(s * scale)``,
        each step rounded as NumPy's float32 arithmetic (the bits of
        ``saturate(maximum(y + s.astype(float32) * scale, 0), dtype)``). The result keeps
        ``y``'s layout; ``cache``: the caller's dict (one layer's). None when declined."""
        dtype = np.dtype(dtype)
        if y.dtype != np.float32 or s.dtype not in (np.int8, np.uint8) \
                or dtype not in _CODE or dtype == np.int32 or s.shape != y.shape \
                or y.ndim < 2:
            return None
        y, s = _activation(y), _activation(s)
        last = not y.flags.c_contiguous
        out = _channels_last(y.shape, dtype) if last else np.empty(y.shape, dtype)
        st = [tuple(v // a.itemsize for v in a.strides) for a in (y, s, out)]
        key = ('int8_add', y.shape, tuple(st), s.dtype.str, dtype.str, bool(relu))

        def build():
            lib = self.lib
            mds = [desc(lib, y.shape, F32, strides=st[0]),
                   desc(lib, y.shape, _CODE[s.dtype], strides=st[1]),
                   desc(lib, y.shape, _CODE[dtype], strides=st[2]), desc(lib, (1,), F32)]
            attr, pd = None, _VP()
            try:
                attr = self._post_ops_attr((('eltwise', 'relu', 0.0),) if relu else ())
                _set_scales_mask(lib, attr, _lib.ARG_SRC_1, 0)
                check(lib.dnnl_binary_primitive_desc_create(
                    ctypes.byref(pd), self.engine, _lib.BINARY_ADD, mds[0], mds[1], mds[2],
                    attr), 'dnnl_binary_primitive_desc_create')
                prim = Primitive(self, pd, [(_lib.ARG_SRC, mds[0], False),
                                            (_lib.ARG_SRC_1, mds[1], False),
                                            (_lib.ARG_DST, mds[2], True)])
                return _with_scales(self, prim, mds[3], _ARG_SRC_1_SCALES, [0.0])
            finally:
                if attr:
                    lib.dnnl_primitive_attr_destroy(attr)
                self._destroy(mds)

        prim = self.primitive(key, build, cache)
        if prim is None:
            return None
        prim.scales[0] = scale
        self.execute(key, prim, [y, s, out])
        return out

    def int8_pool(self, x, kind, kernel, stride, pad_l, pad_r, yshape):
        """Max pooling (``kind`` 'max': exact in any type) of int8/uint8 ``x`` (N, C, *S),
        taken as it lies (C order or channels last) and written in its layout, or None.
        The other kinds decline (the caller's NumPy average rounds as MXNet's)."""
        if kind != 'max' or x.dtype not in (np.int8, np.uint8) or x.ndim < 3:
            return None
        x = _activation(x)
        last = not x.flags.c_contiguous
        yshape = tuple(int(v) for v in yshape)
        y = _channels_last(yshape, x.dtype) if last else np.empty(yshape, x.dtype)
        xs = tuple(x.strides)
        ys = tuple(y.strides)
        key = ('int8_pool', x.shape, xs, x.dtype.str, yshape, tuple(kernel), tuple(stride),
               tuple(pad_l), tuple(pad_r))

        def build():
            code = _CODE[x.dtype]
            mds = [desc(self.lib, x.shape, code, strides=xs),
                   desc(self.lib, yshape, code, strides=ys)]
            try:
                pd = self._pool_fwd_pd(_lib.FORWARD_INFERENCE, _lib.POOLING_MAX, mds[0],
                                       mds[1], self._pool_geom(kernel, stride, pad_l, pad_r))
                return Primitive(self, pd, [(_lib.ARG_SRC, mds[0], False),
                                            (_lib.ARG_DST, mds[1], True)])
            finally:
                self._destroy(mds)

        return y if self.run(key, build, [x, y]) else None

    def int8_matmul(self, x, w, token=None, cache=None):
        """``x @ w.T`` of 2-D uint8/int8 ``x`` (M, K) and int8 ``w`` (N, K), exact in
        int32, or None (declined). With a ``token`` (and the caller's ``cache`` dict) ``w``
        is one layer's constant: oneDNN's inner product (MXNet's FullyConnected kernel)
        on the weights reordered into its own blocked layout only when the token changes.
        Without, a matmul on the weights as they lie (its brgemm kernel copies them into
        its layout every call: ~2x the inner product's time on 16x2048 by 1000x2048)."""
        if not self.int8_dot_exact:
            return None
        if x.dtype not in (np.int8, np.uint8) or w.dtype != np.int8 or x.ndim != 2 \
                or w.ndim != 2 or x.shape[1] != w.shape[1]:
            return None
        m, k = x.shape
        n = w.shape[0]
        if m * n * k < self.INT8_MIN_MACS:
            return None
        x, w = _plain(x), _plain(w)
        const = token is not None and _inner_product(self.lib) is not None
        key = ('int8_matmul', m, k, n, x.dtype.str, const)

        def build():
            lib = self.lib
            mds = []
            try:
                mds.append(desc(lib, (m, k), _CODE[x.dtype]))
                mds.append(desc(lib, (m, n), S32))
                pd = _VP()
                if const:
                    mds.append(desc(lib, (n, k), S8))
                    mds.append(desc(lib, (n, k), S8, any_layout=True))
                    check(_inner_product(lib)(
                        ctypes.byref(pd), self.engine, _lib.FORWARD_INFERENCE, mds[0],
                        mds[3], None, mds[1], None),
                        'dnnl_inner_product_forward_primitive_desc_create')
                    wspec = (_lib.ARG_WEIGHTS, mds[2], False, 'const')
                else:
                    # w (n, k) in C order is w.T (k, n) with strides (1, k)
                    mds.append(desc(lib, (k, n), S8, strides=(1, k)))
                    check(lib.dnnl_matmul_primitive_desc_create(
                        ctypes.byref(pd), self.engine, mds[0], mds[2], None, mds[1], None),
                        'dnnl_matmul_primitive_desc_create')
                    wspec = (_lib.ARG_WEIGHTS, mds[2], False)
                return Primitive(self, pd, [(_lib.ARG_SRC, mds[0], False), wspec,
                                            (_lib.ARG_DST, mds[1], True)])
            finally:
                self._destroy(mds)

        prim = self.primitive(key, build, cache if const else None)
        if prim is None:
            return None
        y = np.empty((m, n), np.int32)
        self.execute(key, prim, [x, w, y], token if const else None)
        return y


def _inner_product(lib):
    """``dnnl_inner_product_forward_primitive_desc_create`` of ``lib`` declared (not in
    _lib's table of signatures), or None where the library lacks it."""
    fn = getattr(lib, 'dnnl_inner_product_forward_primitive_desc_create', None)
    if fn is not None and fn.argtypes is None:
        fn.argtypes = [ctypes.POINTER(_VP), _VP, ctypes.c_int, _VP, _VP, _VP, _VP, _VP]
        fn.restype = ctypes.c_int
    return fn
