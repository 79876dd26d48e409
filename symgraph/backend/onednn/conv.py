"""Convolution forward, backward-data and backward-weights through oneDNN (1-D, 2-D, 3-D).

The caller's arrays are plain: data (N, C, *S) and weights (F, C/g, *k) as the NumPy path
holds them (grouped weights described as (g, F/g, C/g, *k) over the same memory). The
primitives are created with the layouts oneDNN prefers and reorder at their edges (cached
reorders, see :mod:`._core`): with plain layouts oneDNN 3.2 falls back to its im2col + GEMM
kernels, whose weight gradient was up to 17x slower than its blocked ones here. Geometry
oneDNN refuses (e.g. a negative right padding some MXNet shapes imply) gives None and the
caller runs NumPy.
"""
import ctypes
import threading

import numpy as np

from . import _lib
from ._core import BackendCore, Primitive, act_desc, act_dest, activation, any_desc, \
    as_f32, dest, dest_layout, strided_desc
from ._lib import check
from .bf16 import Bf16Mixin
from .int8 import Int8Mixin
from .layers import ELTWISE, LayerMixin
from .norm import NormMixin
from .rnn import RnnMixin
from .routing import RoutingMixin

_VP = ctypes.c_void_p


def _right_pad(size_in, size_out, k, s, p, d):
    """The right padding that makes oneDNN's output size ``size_out``."""
    return (size_out - 1) * s + (k - 1) * d + 1 - size_in - p


def _weight_shape(wshape, groups):
    if groups == 1:
        return tuple(wshape)
    f = wshape[0]
    return (groups, f // groups) + tuple(wshape[1:])


class Backend(BackendCore, NormMixin, LayerMixin, RoutingMixin, Bf16Mixin, Int8Mixin,
              RnnMixin):
    """oneDNN's CPU backend: what ``symgraph.opdef.cpu_backend()`` returns.

    Every method takes and returns plain C-order NumPy float32 arrays; it returns None when
    oneDNN does not take the case (the caller then computes with NumPy). ``out``, where a
    method takes it, is an array to compute the result into (an executor's buffer), used
    when it is a C-contiguous float32 array of the result's shape (else a new array is
    returned); it must not overlap the inputs.
    """

    #: data with fewer channels per group than this is given to oneDNN in its plain layout
    PLAIN_DATA_BELOW = 4

    def _descs(self, xshape, wshape, yshape, groups, layouts=(None, None)):
        """(plain descriptors, 'any' descriptors) of data, weights and output.

        ``layouts``: the memory order of the caller's data and output arrays (None: C
        order). A channels-last one is handed to the primitive as it lies (its 'any'
        descriptor is that layout too): oneDNN's NHWC kernels run as fast as its blocked
        ones here, and no reorder is needed at either edge."""
        lib = self.lib
        shapes = (xshape, _weight_shape(wshape, groups), yshape)
        lays = (layouts[0], None, layouts[1])
        plain, free = [], []
        try:
            for sh, lay in zip(shapes, lays):
                plain.append(act_desc(lib, sh, lay))
            for k, sh in enumerate(shapes):
                # data with few channels (a first layer: 1 or 3) stays plain: oneDNN's
                # blocked layouts pad channels to 8 or 16, which made the reorder and the
                # weight gradient of LeNet's conv1 (C=1) cost more than the whole layer
                # (reordered to channels last when the output is: oneDNN has no fast
                # kernel from plain data to a channels-last output)
                few = k == 0 and xshape[1] // groups < self.PLAIN_DATA_BELOW
                if few:
                    free.append(act_desc(lib, sh, lays[k] or lays[2]))
                else:
                    free.append(any_desc(lib, sh) if lays[k] is None
                                else act_desc(lib, sh, lays[k]))
        except Exception:
            self._destroy(plain + free)
            raise
        return plain, free

    def _destroy(self, mds):
        for md in mds:
            self.lib.dnnl_memory_desc_destroy(md)

    @staticmethod
    def _geometry(xshape, yshape, kernel, stride, pad, dilate):
        pr = [_right_pad(i, o, k, s, p, d) for i, o, k, s, p, d
              in zip(xshape[2:], yshape[2:], kernel, stride, pad, dilate)]
        return (_lib.Dims(*stride), _lib.Dims(*[d - 1 for d in dilate]), _lib.Dims(*pad),
                _lib.Dims(*pr))

    def _fwd_pd(self, prop, mds, geom, bias_md=None, attr=None):
        pd = _VP()
        x, w, y = mds
        check(self.lib.dnnl_convolution_forward_primitive_desc_create(
            ctypes.byref(pd), self.engine, prop, _lib.CONVOLUTION_DIRECT, x, w, bias_md, y,
            *geom, attr),
            'dnnl_convolution_forward_primitive_desc_create')
        return pd

    def _fast_fwd_pd(self, prop, free, geom, bias_md, attr, shapes):
        """:meth:`_fwd_pd`, except that where the given layouts (channels last) found only
        oneDNN's reference kernel (hundreds of times slower), the layouts oneDNN prefers
        (the caller's primitive then reorders at its edges). ``shapes``: data, weights
        (grouped) and output."""
        return self._prefer_fast(
            lambda mds: self._fwd_pd(prop, mds, geom, bias_md, attr), free, shapes,
            ('ref',))

    def _prefer_fast(self, create, free, shapes, slow=('ref', 'x64:gemm')):
        """``create(descriptors)`` -> primitive descriptor on ``free`` (the descriptors
        the caller's layouts gave), or, where its kernel's name starts with one of
        ``slow`` (oneDNN's reference kernel; its im2col + GEMM one, up to 17x slower on
        the weight gradient) and the layouts oneDNN prefers (``shapes``: data, grouped
        weights, output) find a kernel that is not, that one (the caller's primitive then
        reorders at its edges)."""
        pd = create(free)
        if not _lib.impl_name(self.lib, pd).startswith(slow):
            return pd
        mds = [any_desc(self.lib, sh) for sh in shapes]
        try:
            other = create(mds)
        except _lib.DnnlError:
            return pd
        finally:
            self._destroy(mds)
        if _lib.impl_name(self.lib, other).startswith(slow):
            self.lib.dnnl_primitive_desc_destroy(other)
            return pd
        self.lib.dnnl_primitive_desc_destroy(pd)
        return other

    def _backward_pd(self, which, free, geom, shapes, groups):
        """The backward-data (``which`` 'data') or backward-weights primitive descriptor
        on ``free`` (data, weights, output descriptors), made with its forward hint;
        :meth:`_prefer_fast` decides between those layouts and oneDNN's own (except for
        data with few channels, which :meth:`_descs` keeps plain on purpose)."""
        lib = self.lib

        def create(mds):
            hint = self._fwd_pd(_lib.FORWARD_TRAINING, mds, geom)
            try:
                pd = _VP()
                if which == 'data':
                    check(lib.dnnl_convolution_backward_data_primitive_desc_create(
                        ctypes.byref(pd), self.engine, _lib.CONVOLUTION_DIRECT, mds[0],
                        mds[1], mds[2], *geom, hint, None),
                        'dnnl_convolution_backward_data_primitive_desc_create')
                else:
                    check(lib.dnnl_convolution_backward_weights_primitive_desc_create(
                        ctypes.byref(pd), self.engine, _lib.CONVOLUTION_DIRECT, mds[0],
                        mds[1], None, mds[2], *geom, hint, None),
                        'dnnl_convolution_backward_weights_primitive_desc_create')
                return pd
            finally:
                lib.dnnl_primitive_desc_destroy(hint)
        if shapes[0][1] // groups < self.PLAIN_DATA_BELOW:
            return create(free)
        return self._prefer_fast(create, free, shapes)

    def _post_ops_attr(self, post_ops, sum_md=None):
        """A primitive attribute holding ``post_ops``: ('sum',) adds what the destination
        held before (with ``sum_md``, as a binary add post-op reading the tensor that
        memory descriptor describes, in its own data type); ('eltwise', kind, alpha)
        applies an activation of :data:`.layers.ELTWISE`. The caller destroys it."""
        lib = self.lib
        if sum_md is not None:
            binary = lib.dnnl_post_ops_append_binary
            binary.argtypes, binary.restype = [_VP, ctypes.c_int, _VP], ctypes.c_int
        attr, ops = _VP(), _VP()
        check(lib.dnnl_primitive_attr_create(ctypes.byref(attr)), 'dnnl_primitive_attr_create')
        try:
            check(lib.dnnl_post_ops_create(ctypes.byref(ops)), 'dnnl_post_ops_create')
            try:
                for op in post_ops:
                    if op[0] == 'sum' and sum_md is not None:
                        check(binary(ops, _lib.BINARY_ADD, sum_md),
                              'dnnl_post_ops_append_binary')
                    elif op[0] == 'sum':
                        check(lib.dnnl_post_ops_append_sum(ops, 1.0, 0, 0),
                              'dnnl_post_ops_append_sum')
                    else:
                        check(lib.dnnl_post_ops_append_eltwise(ops, ELTWISE[op[1]], op[2],
                                                               0.0),
                              'dnnl_post_ops_append_eltwise')
                check(lib.dnnl_primitive_attr_set_post_ops(attr, ops),
                      'dnnl_primitive_attr_set_post_ops')
            finally:
                lib.dnnl_post_ops_destroy(ops)
        except Exception:
            lib.dnnl_primitive_attr_destroy(attr)
            raise
        return attr

    def conv_forward_fused(self, x, w, b, stride, pad, dilate, groups, yshape, post_ops=(),
                           residual=None, token=None, cache=None, out_layout=None,
                           out=None, memo=None):
        """Inference convolution y = post_ops(conv(x, w) + b) in one primitive.

        ``post_ops`` as :meth:`_post_ops_attr` takes them; with a ('sum',) the output starts
        as a copy of ``residual``. With a ``token`` the weights and bias are constants: the
        cached primitive reorders them into its own buffer only when the token differs
        from its last call's; ``cache`` (see :meth:`primitive`) keeps that primitive with
        one layer, so that layers of the same geometry do not reorder each other's
        weights. ``x`` and ``residual`` may lie channels last (taken as they lie);
        ``out_layout`` ``'channels_last'`` returns y in that layout (None: C order), into
        ``out`` when it is such an array (an executor's buffer; with a sum it may be the
        residual's own storage, which then is not copied). None when not taken.

        ``memo``: a dict of the caller's (one layer's, as ``cache``) where a call into
        ``out`` is recorded: a call on the very arrays of this thread's last one (an
        inference plan's buffers and folded weights, every forward) runs the primitive on
        them again without working the call out anew."""
        if memo is not None and out is not None:
            last = memo.get(threading.get_ident())
            if last is not None and last[0] is x and last[1] is w and last[2] is b \
                    and last[3] is residual and last[4] is out and last[5] == post_ops \
                    and last[6] == (token is None):
                key, prim, arrays = last[7:]
                self.execute(key, prim, arrays, token)
                return arrays[3]
        x_in, w_in, b_in, res_in = x, w, b, residual
        x, xlay = activation(x)
        w, b = as_f32(w), as_f32(b)
        yshape = tuple(yshape)
        post_ops = tuple(post_ops)
        has_sum = any(p[0] == 'sum' for p in post_ops)
        rlay = None
        if has_sum:
            if residual is None or tuple(residual.shape) != yshape:
                return None
            residual, rlay = activation(residual)
        key = ('conv_forward_fused', x.shape, w.shape, yshape, tuple(stride), tuple(pad),
               tuple(dilate), groups, post_ops, token is not None, xlay, out_layout, rlay)
        const = ('const',) if token is not None else ()

        def build():
            plain, free = self._descs(x.shape, w.shape, yshape, groups, (xlay, out_layout))
            bmd = strided_desc(self.lib, (w.shape[0],))
            rmd = act_desc(self.lib, yshape, rlay) if has_sum else None
            attr = None
            try:
                attr = self._post_ops_attr(post_ops)
                geom = self._geometry(x.shape, yshape, w.shape[2:], stride, pad, dilate)
                pd = self._fast_fwd_pd(_lib.FORWARD_INFERENCE, free, geom, bmd, attr,
                                       (x.shape, _weight_shape(w.shape, groups), yshape))
                return Primitive(self, pd, [
                    (_lib.ARG_SRC, plain[0], False),
                    (_lib.ARG_WEIGHTS, plain[1], False) + const,
                    (_lib.ARG_BIAS, bmd, False) + const,
                    (_lib.ARG_DST, plain[2], ('inout', rmd) if has_sum else True)])
            finally:
                if attr:
                    self.lib.dnnl_primitive_attr_destroy(attr)
                self._destroy(plain + free + [bmd] + ([rmd] if rmd else []))

        prim = self.primitive(key, build, cache)
        if prim is None:
            return None
        extra = []
        y = act_dest(out, yshape, out_layout)
        if has_sum:
            same = y.ctypes.data == residual.ctypes.data and y.strides == residual.strides
            if not same and np.may_share_memory(y, residual):
                y = act_dest(None, yshape, out_layout)
            if prim.inout_src:      # reordered from the residual straight into the primitive's
                extra = [residual]  # own layout: the caller need not copy it first
            elif not same:          # the output is the primitive's own layout: it starts
                np.copyto(y, residual)      # as the residual (in place: it is)
        arrays = [x, w, b, y] + extra
        self.execute(key, prim, arrays, token)
        if memo is not None and y is out and (not has_sum or extra or same):
            # (the same arrays give the same decisions above: replayed as they are)
            memo[threading.get_ident()] = (x_in, w_in, b_in, res_in, out, post_ops,
                                           token is None, key, prim, arrays)
        return y

    def conv_forward(self, x, w, b, stride, pad, dilate, groups, yshape, is_train=True,
                     out=None):
        """y = conv(x, w) + b with output shape ``yshape`` (into ``out`` when it fits);
        None when not taken. ``x`` may lie channels last (taken as it lies); so may
        ``out`` (y is then written channels last: a training plan's buffer)."""
        x, xlay = activation(x)
        w = as_f32(w)
        yshape = tuple(yshape)
        bias = b is not None
        ylay = dest_layout(out, yshape)
        prop = _lib.FORWARD_TRAINING if is_train else _lib.FORWARD_INFERENCE
        key = ('conv_forward', x.shape, w.shape, yshape, tuple(stride), tuple(pad),
               tuple(dilate), groups, bias, prop, xlay, ylay)

        def build():
            plain, free = self._descs(x.shape, w.shape, yshape, groups, (xlay, ylay))
            bmd = strided_desc(self.lib, (w.shape[0],)) if bias else None
            try:
                geom = self._geometry(x.shape, yshape, w.shape[2:], stride, pad, dilate)
                pd = self._fast_fwd_pd(prop, free, geom, bmd, None,
                                       (x.shape, _weight_shape(w.shape, groups), yshape))
                args = [(_lib.ARG_SRC, plain[0], False), (_lib.ARG_WEIGHTS, plain[1], False),
                        (_lib.ARG_DST, plain[2], True)]
                return Primitive(self, pd, args + ([(_lib.ARG_BIAS, bmd, False)]
                                                   if bias else []))
            finally:
                self._destroy(plain + free + ([bmd] if bias else []))

        y = act_dest(out, yshape, ylay)
        arrays = [x, w, y] + ([as_f32(b)] if bias else [])
        return y if self.run(key, build, arrays) else None

    @staticmethod
    def conv_scratch_bytes(xshape, wshape, yshape, weights_only=False):
        """At most how many bytes of internal buffers one convolution call (forward, or
        either backward) of these shapes (of either orientation: deconvolution swaps data
        and output) takes: data, weights and output in blocked layouts, channels padded to
        16 (weights on both channel axes), 64-byte aligned each (``weights_only``: the
        weights alone, for data and output lying channels last)."""
        def padded(shape, axes):
            n = 1
            for i, s in enumerate(shape):
                n *= -(-s // 16) * 16 if i in axes else s
            return -(-n * 4 // 64) * 64
        if weights_only:
            return padded(wshape, (0, 1))
        return padded(xshape, (1,)) + padded(wshape, (0, 1)) + padded(yshape, (1,))

    def conv_backward_data(self, dy, w, xshape, stride, pad, dilate, groups, out=None):
        """dx of shape ``xshape`` from dy and the weights (into ``out`` when it fits); None
        when not taken. dy and ``out`` may lie channels last (taken and written so)."""
        dy, dylay = activation(dy)
        w = as_f32(w)
        xshape = tuple(xshape)
        dxlay = dest_layout(out, xshape)
        key = ('conv_backward_data', dy.shape, w.shape, xshape, tuple(stride), tuple(pad),
               tuple(dilate), groups, dylay, dxlay)

        def build():
            plain, free = self._descs(xshape, w.shape, dy.shape, groups, (dxlay, dylay))
            try:
                geom = self._geometry(xshape, dy.shape, w.shape[2:], stride, pad, dilate)
                pd = self._backward_pd('data', free, geom,
                                       (xshape, _weight_shape(w.shape, groups), dy.shape),
                                       groups)
                return Primitive(self, pd, [(_lib.ARG_DIFF_DST, plain[2], False),
                                            (_lib.ARG_WEIGHTS, plain[1], False),
                                            (_lib.ARG_DIFF_SRC, plain[0], True)])
            finally:
                self._destroy(plain + free)

        dx = act_dest(out, xshape, dxlay)
        return dx if self.run(key, build, [dy, w, dx]) else None

    def conv_backward_weights(self, x, dy, wshape, stride, pad, dilate, groups, out=None):
        """dw of shape ``wshape`` from x and dy (into ``out`` when it fits); None when not
        taken. x and dy may lie channels last (taken as they lie)."""
        x, xlay = activation(x)
        dy, dylay = activation(dy)
        wshape = tuple(wshape)
        key = ('conv_backward_weights', x.shape, dy.shape, wshape, tuple(stride), tuple(pad),
               tuple(dilate), groups, xlay, dylay)

        def build():
            plain, free = self._descs(x.shape, wshape, dy.shape, groups, (xlay, dylay))
            try:
                geom = self._geometry(x.shape, dy.shape, wshape[2:], stride, pad, dilate)
                pd = self._backward_pd('weights', free, geom,
                                       (x.shape, _weight_shape(wshape, groups), dy.shape),
                                       groups)
                return Primitive(self, pd, [(_lib.ARG_SRC, plain[0], False),
                                            (_lib.ARG_DIFF_DST, plain[2], False),
                                            (_lib.ARG_DIFF_WEIGHTS, plain[1], True)])
            finally:
                self._destroy(plain + free)

        dw = dest(out, wshape)
        return dw if self.run(key, build, [x, dy, dw]) else None

    #: smallest m * k * n sent to oneDNN's matmul: smaller products run single-threaded
    #: in OpenBLAS (no pool woken) and cost less than a ctypes call
    MATMUL_MIN_WORK = 1 << 16

    def matmul(self, a, b, out=None):
        """a @ b for 2-D float32 arrays (strided views such as ``w.T`` taken as they are),
        into ``out`` when it fits; None when not taken (small products, odd strides).

        Large matrix products go through oneDNN so that one thread pool (OpenMP) does the
        heavy work: OpenBLAS's threads spin after each GEMM and took the cores from the
        convolution that followed (bench/bench_onednn.py).
        """
        if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0] \
                or a.shape[0] * a.shape[1] * b.shape[1] < self.MATMUL_MIN_WORK:
            return None
        a, b = _strided(a), _strided(b)
        m, n = a.shape[0], b.shape[1]
        sa = tuple(s // 4 for s in a.strides)
        sb = tuple(s // 4 for s in b.strides)
        key = ('matmul', a.shape, sa, b.shape, sb)

        def build():
            mds = [strided_desc(self.lib, a.shape, sa), strided_desc(self.lib, b.shape, sb),
                   strided_desc(self.lib, (m, n))]
            try:
                pd = _VP()
                check(self.lib.dnnl_matmul_primitive_desc_create(
                    ctypes.byref(pd), self.engine, mds[0], mds[1], None, mds[2], None),
                    'dnnl_matmul_primitive_desc_create')
                return Primitive(self, pd, [(_lib.ARG_SRC, mds[0], False),
                                            (_lib.ARG_WEIGHTS, mds[1], False),
                                            (_lib.ARG_DST, mds[2], True)])
            finally:
                self._destroy(mds)

        y = dest(out, (m, n))
        return y if self.run(key, build, [a, b, y]) else None


def _strided(a):
    """``a`` as float32 with positive element strides (a view when it already is one)."""
    a = np.asarray(a, dtype=np.float32)
    if any(s <= 0 or s % 4 for s in a.strides):
        a = np.ascontiguousarray(a)
    return a
