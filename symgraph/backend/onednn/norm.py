"""Batch normalisation through oneDNN (channels on axis 1, float32).

The primitive runs channels last; the caller's arrays may lie so (a training plan's
buffers) or in C order, reordered at the primitive's edges (cached, see :mod:`._core`): on
plain NCHW data oneDNN 3.2 only has its generic ``ncsp_bnorm:any`` kernel, 2-4x slower than
its jit kernel on NHWC even counting the reorders (forward 2.48 -> 0.58 ms, backward 1.85
-> 1.27 ms at (32, 16, 32, 32) on the project's AVX2 machine). The reorders' buffers are
the workspace or the executor's lent scratch (:meth:`NormMixin.bn_scratch_bytes`).

MXNet's BatchNorm keeps the running statistics and saves the mean and the inverse standard
deviation as outputs; oneDNN takes and gives the (biased) variance. The operator converts
(var = 1 / inv^2 - eps: oneDNN only ever uses var + eps, which this gives back to float32
rounding) and updates the running statistics itself.
"""
import ctypes

import numpy as np

from . import _lib
from ._core import Primitive, act_desc, act_dest, activation, as_f32, channels_last_desc, \
    dest, dest_layout, strided_desc
from ._lib import check

_VP = ctypes.c_void_p


class NormMixin:
    """Batch-norm methods of the backend (mixed into ``Backend``)."""

    @staticmethod
    def bn_scratch_bytes(xshape):
        """At most how many bytes of reorder buffers one batch-norm call (forward or
        backward) on data of ``xshape`` takes: three activations (backward's x, dy, dx),
        64-byte aligned each; 0 where the primitive runs on the plain layout itself."""
        if len(xshape) < 3:
            return 0
        n = 4
        for s in xshape:
            n *= s
        return 3 * (-(-n // 64) * 64)

    @staticmethod
    def _bn_layout(lib, shape):
        """The layout the primitive runs in: channels last for (N, C, *S) data."""
        return channels_last_desc(lib, shape) if len(shape) >= 3 else \
            strided_desc(lib, shape)

    def _bn_fwd_pd(self, md, eps, flags, prop):
        pd = _VP()
        check(self.lib.dnnl_batch_normalization_forward_primitive_desc_create(
            ctypes.byref(pd), self.engine, prop, md, md, eps, flags, None),
            'dnnl_batch_normalization_forward_primitive_desc_create')
        return pd

    def batch_norm_forward(self, x, gamma, beta, eps, mean=None, var=None, is_train=True,
                           out=None, relu=False, stats_out=(None, None), ws_out=None):
        """Normalised ``x`` (N, C, ...): (y, batch mean, batch variance) with the batch's
        statistics when ``mean`` is None, else y with the given ones; None when not taken.
        ``x`` may lie channels last (taken as it lies); y is written into ``out`` when it
        is a float32 array of ``x``'s shape in C order or channels last, else into a new
        array in ``x``'s layout.

        ``relu`` (batch statistics only): y is relu of the normalised data, and a fourth
        value comes back, the workspace (a uint8 array) :meth:`batch_norm_backward` takes
        to mask the gradient. ``stats_out``: arrays to write the batch mean and variance
        into (each used where it is a C-contiguous float32 array of shape (C,)).
        ``ws_out``: an array for the workspace (used where it is a contiguous uint8 array
        of its size: the workspace of an earlier call on the same arrays).
        """
        if x.ndim < 2 or x.ndim > 5 or not x.size:
            return None
        x, xlay = activation(x)
        c = x.shape[1]
        stats = mean is None
        relu = bool(relu) and stats
        flags = _lib.USE_SCALE | _lib.USE_SHIFT | (0 if stats else _lib.USE_GLOBAL_STATS) \
            | (_lib.FUSE_NORM_RELU if relu else 0)
        prop = _lib.FORWARD_TRAINING if is_train or stats else _lib.FORWARD_INFERENCE
        ylay = dest_layout(out, x.shape) if out is not None else xlay
        key = ('batch_norm_forward', x.shape, float(eps), flags, prop, xlay, ylay)

        def build():
            xmd, ymd = act_desc(self.lib, x.shape, xlay), act_desc(self.lib, x.shape, ylay)
            cmd = strided_desc(self.lib, (c,))
            lay = self._bn_layout(self.lib, x.shape)
            try:
                pd = self._bn_fwd_pd(lay, eps, flags, prop)
                args = [(_lib.ARG_SRC, xmd, False), (_lib.ARG_SCALE, cmd, False),
                        (_lib.ARG_SHIFT, cmd, False), (_lib.ARG_DST, ymd, True),
                        (_lib.ARG_MEAN, cmd, stats), (_lib.ARG_VARIANCE, cmd, stats)]
                if relu:        # the mask, in the primitive's own format
                    args.append((_lib.ARG_WORKSPACE, None, True))
                return Primitive(self, pd, args)
            finally:
                self._destroy([xmd, ymd, cmd, lay])

        prim = self.primitive(key, build)
        if prim is None:
            return None
        y = act_dest(out, x.shape, ylay)
        if stats:
            mean, var = (dest(a, (c,)) for a in stats_out)
        else:
            mean, var = as_f32(mean), as_f32(var)
        arrays = [x, as_f32(gamma), as_f32(beta), y, mean, var]
        if relu:
            ws = ws_out if isinstance(ws_out, np.ndarray) and ws_out.dtype == np.uint8 \
                and ws_out.nbytes == prim.sizes[-1] and ws_out.flags.c_contiguous \
                and ws_out.flags.writeable else np.empty(prim.sizes[-1], np.uint8)
            arrays.append(ws)
        self.execute(key, prim, arrays)
        if relu:
            return y, mean, var, ws
        return (y, mean, var) if stats else y

    def batch_norm_backward(self, x, dy, gamma, mean, var, eps, global_stats, dx_out=None,
                            ws=None, param_out=(None, None)):
        """(dx, dgamma, dbeta) of batch normalisation with the statistics ``mean``/``var``
        (the batch's, or the running ones when ``global_stats``); None when not taken.
        ``x`` and ``dy`` may lie channels last; dx is written into ``dx_out`` as
        :meth:`batch_norm_forward` writes y into ``out``. ``ws``: the workspace of a
        forward with ``relu`` on the same data (dy is then the gradient of the relu's
        output, masked here). ``param_out``: arrays to write dgamma and dbeta into (each
        used where it is a C-contiguous float32 array of shape (C,))."""
        if x.ndim < 2 or x.ndim > 5 or not x.size or (ws is not None and global_stats):
            return None
        x, xlay = activation(x)
        dy, dylay = activation(dy)
        c = x.shape[1]
        flags = _lib.USE_SCALE | _lib.USE_SHIFT | (_lib.USE_GLOBAL_STATS if global_stats
                                                   else 0) \
            | (_lib.FUSE_NORM_RELU if ws is not None else 0)
        dxlay = dest_layout(dx_out, x.shape) if dx_out is not None else xlay
        key = ('batch_norm_backward', x.shape, float(eps), flags, xlay, dylay, dxlay)

        def build():
            mds = [act_desc(self.lib, x.shape, a) for a in (xlay, dylay, dxlay)]
            cmd = strided_desc(self.lib, (c,))
            lay = self._bn_layout(self.lib, x.shape)
            hint = None
            try:
                hint = self._bn_fwd_pd(lay, eps, flags, _lib.FORWARD_TRAINING)
                pd = _VP()
                check(self.lib.dnnl_batch_normalization_backward_primitive_desc_create(
                    ctypes.byref(pd), self.engine, _lib.BACKWARD, lay, lay, lay, eps, flags,
                    hint, None),
                    'dnnl_batch_normalization_backward_primitive_desc_create')
                args = [(_lib.ARG_SRC, mds[0], False), (_lib.ARG_DIFF_DST, mds[1], False),
                        (_lib.ARG_SCALE, cmd, False), (_lib.ARG_MEAN, cmd, False),
                        (_lib.ARG_VARIANCE, cmd, False), (_lib.ARG_DIFF_SRC, mds[2], True),
                        (_lib.ARG_DIFF_SCALE, cmd, True), (_lib.ARG_DIFF_SHIFT, cmd, True)]
                if ws is not None:
                    args.append((_lib.ARG_WORKSPACE, None, False))
                return Primitive(self, pd, args)
            finally:
                if hint:
                    self.lib.dnnl_primitive_desc_destroy(hint)
                self._destroy(mds + [cmd, lay])

        dx = act_dest(dx_out, x.shape, dxlay)
        dg, db = (dest(a, (c,)) for a in param_out)
        arrays = [x, dy, as_f32(gamma), as_f32(mean), as_f32(var), dx, dg, db]
        if ws is not None:
            prim = self.primitive(key, build)
            if prim is None or ws.dtype != np.uint8 or ws.nbytes != prim.sizes[-1]:
                return None
            arrays.append(ws)
            self.execute(key, prim, arrays)
        elif not self.run(key, build, arrays):
            return None
        return dx, dg, db

