"""The fused ``RNN`` operator's layers through oneDNN's RNN primitives (float32).

One primitive per layer (both directions of a bidirectional layer in one,
``bidirectional_concat``): MXNet's layers differ in their input size (the first takes the
data's channels, the others ``D * H``), which one multi-layer oneDNN primitive does not
allow, and MXNet's own oneDNN path splits its layers the same way.

MXNet's packed parameter vector is read where it lies: a direction's ``i2h`` weights
(G*H, C) in C order are oneDNN's ``ldgoi`` with a direction stride of both of its matrices,
so the primitive's argument is a strided descriptor over the caller's vector and the cached
reorder of :class:`~._core.Primitive` repacks it into the layout the primitive chose at
each call (a training step changes the weights every step, so there is nothing to keep);
the weight gradients are written back through the same strides. LSTM's gates (i, f, g, o)
are oneDNN's (i, f, c~, o); the two biases MXNet keeps per gate are summed into oneDNN's
one. GRU: MXNet's gates (r, z, n) are oneDNN's (u, r, o) reordered (a copy), and MXNet's
"linear before reset" cell is oneDNN's ``lbr_gru``, whose fourth bias gate is MXNet's
``b_hn``. Vanilla RNNs: tanh or relu cells.

Training keeps, per layer, the layer's input and output, its last states and the
primitive's workspace (what the backward primitive reads): :meth:`RnnMixin.rnn_forward`
returns them for the operator to keep in its Step's state until the backward.
"""
import ctypes

import numpy as np

from . import _lib
from ._core import Primitive, any_desc, strided_desc
from ._lib import check

_VP = ctypes.c_void_p
_P = ctypes.POINTER

# dnnl_rnn_direction_t (3.x: 0 is 'undef')
L2R = 1
BIDIRECTIONAL_CONCAT = 3
# dnnl_rnn_flags_t: the backward writes the weight gradients instead of adding to them
DIFF_WEIGHTS_OVERWRITE = 0x1
# DNNL_ARG_* of the RNN primitives
ARG_SRC_LAYER, ARG_SRC_ITER, ARG_SRC_ITER_C = 1, 2, 3
ARG_DST_LAYER, ARG_DST_ITER, ARG_DST_ITER_C = 17, 18, 19
ARG_WEIGHTS_LAYER, ARG_WEIGHTS_ITER = 33, 34
ARG_BIAS = 41
ARG_WORKSPACE = 64
ARG_DIFF_SRC_LAYER, ARG_DIFF_SRC_ITER, ARG_DIFF_SRC_ITER_C = 129, 130, 131
ARG_DIFF_DST_LAYER, ARG_DIFF_DST_ITER, ARG_DIFF_DST_ITER_C = 145, 146, 147
ARG_DIFF_WEIGHTS_LAYER, ARG_DIFF_WEIGHTS_ITER = 161, 162
ARG_DIFF_BIAS = 169

#: gate counts of MXNet's modes
GATES = {'lstm': 4, 'gru': 3, 'rnn_tanh': 1, 'rnn_relu': 1}
#: vanilla cells' activations
_VANILLA = {'rnn_tanh': _lib.ELTWISE_TANH, 'rnn_relu': _lib.ELTWISE_RELU}
#: oneDNN's GRU gate k is MXNet's gate _GRU_ORDER[k] (u = z, r, o = n)
_GRU_ORDER = (1, 0, 2)

_SIGNATURES = {
    'dnnl_lstm_forward_primitive_desc_create': (
        (_P(_VP), _VP, ctypes.c_int, ctypes.c_int) + (_VP,) * 11 + (ctypes.c_uint, _VP)),
    'dnnl_lstm_backward_primitive_desc_create': (
        (_P(_VP), _VP, ctypes.c_int, ctypes.c_int) + (_VP,) * 22 + (ctypes.c_uint, _VP, _VP)),
    'dnnl_lbr_gru_forward_primitive_desc_create': (
        (_P(_VP), _VP, ctypes.c_int, ctypes.c_int) + (_VP,) * 7 + (ctypes.c_uint, _VP)),
    'dnnl_lbr_gru_backward_primitive_desc_create': (
        (_P(_VP), _VP, ctypes.c_int, ctypes.c_int) + (_VP,) * 14 + (ctypes.c_uint, _VP, _VP)),
    'dnnl_vanilla_rnn_forward_primitive_desc_create': (
        (_P(_VP), _VP, ctypes.c_int, ctypes.c_int, ctypes.c_int) + (_VP,) * 7
        + (ctypes.c_uint, ctypes.c_float, ctypes.c_float, _VP)),
    'dnnl_vanilla_rnn_backward_primitive_desc_create': (
        (_P(_VP), _VP, ctypes.c_int, ctypes.c_int, ctypes.c_int) + (_VP,) * 14
        + (ctypes.c_uint, ctypes.c_float, ctypes.c_float, _VP, _VP)),
}


def _functions(lib):
    """{name: declared function} of the RNN entry points (declared on first use: the
    backend loads without them)."""
    got = getattr(lib, '_symgraph_rnn', None)
    if got is None:
        got = {}
        for name, argtypes in _SIGNATURES.items():
            fn = getattr(lib, name)
            fn.argtypes = list(argtypes)
            fn.restype = ctypes.c_int
            got[name] = fn
        lib._symgraph_rnn = got
    return got


class _Geom:
    """Sizes of one layer: T, N, input size C, state size H, directions D, gates G, and
    the offsets of its weights in MXNet's vector."""

    def __init__(self, mode, T, N, C, H, D, wpos):
        self.mode, self.T, self.N, self.C, self.H, self.D = mode, T, N, C, H, D
        self.G = GATES[mode]
        gh = self.G * H
        self.dstride = gh * C + gh * H          # one direction's i2h and h2h
        self.wpos = wpos                        # the layer's first weight
        self.nbias = self.G + 1 if mode == 'gru' else self.G

    def weight_descs(self, lib):
        """(layer, iter) user descriptors over MXNet's vector at the layer's weights (None
        for GRU, whose weights are copied in oneDNN's gate order, ldgoi)."""
        G, H, C, D = self.G, self.H, self.C, self.D
        if self.mode == 'gru':
            return (strided_desc(lib, (1, D, C, G, H), (D * G * H * C, G * H * C, 1, H * C, C)),
                    strided_desc(lib, (1, D, H, G, H), (D * G * H * H, G * H * H, 1, H * H, H)))
        if D == 1:
            # one direction: the strides of the unit dimensions are dense ldgoi's, so that
            # the descriptor equals the backward's chosen layout and its weights and
            # weight gradients need no reorder
            return (strided_desc(lib, (1, 1, C, G, H), (G * H * C, G * H * C, 1, H * C, C)),
                    strided_desc(lib, (1, 1, H, G, H), (G * H * H, G * H * H, 1, H * H, H)))
        ds = self.dstride
        return (strided_desc(lib, (1, D, C, G, H), (D * ds, ds, 1, H * C, C)),
                strided_desc(lib, (1, D, H, G, H), (D * ds, ds, 1, H * H, H)))


def _take(spare, nbytes):
    """A uint8 array of ``nbytes``: one taken out of list ``spare`` (or None) when it has
    one of that size, else a new one."""
    if spare:
        for i, a in enumerate(spare):
            if a.nbytes == nbytes:
                return spare.pop(i)
    return np.empty(nbytes, np.uint8)


class RnnMixin:
    """``rnn_forward`` / ``rnn_backward`` of the backend (mixed into ``Backend``)."""

    # ------------------------------------------------------------------ descriptors
    def _rnn_descs(self, g):
        """Descriptors of one layer's arguments, in a dict (the caller destroys them)."""
        lib = self.lib
        T, N, C, H, D, G = g.T, g.N, g.C, g.H, g.D, g.G
        mds = {'src_layer': strided_desc(lib, (T, N, C)),
               'src_iter': strided_desc(lib, (1, D, N, H)),
               'w_layer_any': any_desc(lib, (1, D, C, G, H)),
               'w_iter_any': any_desc(lib, (1, D, H, G, H)),
               'bias': strided_desc(lib, (1, D, g.nbias, H)),
               'dst_layer': strided_desc(lib, (T, N, D * H)),
               'dst_iter': strided_desc(lib, (1, D, N, H))}
        mds['w_layer'], mds['w_iter'] = g.weight_descs(lib)
        return mds

    def _rnn_fwd_pd(self, g, prop, m):
        fns = _functions(self.lib)
        pd = _VP()
        direction = BIDIRECTIONAL_CONCAT if g.D == 2 else L2R
        common = (m['w_layer_any'], m['w_iter_any'])
        if g.mode == 'lstm':
            status = fns['dnnl_lstm_forward_primitive_desc_create'](
                ctypes.byref(pd), self.engine, prop, direction, m['src_layer'], m['src_iter'],
                m['src_iter'], *common, None, None, m['bias'], m['dst_layer'], m['dst_iter'],
                m['dst_iter'], 0, None)
        elif g.mode == 'gru':
            status = fns['dnnl_lbr_gru_forward_primitive_desc_create'](
                ctypes.byref(pd), self.engine, prop, direction, m['src_layer'], m['src_iter'],
                *common, m['bias'], m['dst_layer'], m['dst_iter'], 0, None)
        else:
            status = fns['dnnl_vanilla_rnn_forward_primitive_desc_create'](
                ctypes.byref(pd), self.engine, prop, _VANILLA[g.mode], direction,
                m['src_layer'], m['src_iter'], *common, m['bias'], m['dst_layer'],
                m['dst_iter'], 0, 0.0, 0.0, None)
        check(status, 'rnn forward primitive_desc_create (%s)' % g.mode)
        return pd

    def _rnn_forward_prim(self, g):
        # inference runs the training primitive too (its workspace then dropped): the
        # inference kernels (packed weights) round differently, and an output must not
        # depend on the mode where MXNet's semantics make them equal (one layer, or p=0);
        # the weights change between calls anyway, so packing them would gain nothing
        prop = _lib.FORWARD_TRAINING
        key = ('rnn_forward', g.mode, g.T, g.N, g.C, g.H, g.D, g.dstride, prop)

        def build():
            m = self._rnn_descs(g)
            try:
                pd = self._rnn_fwd_pd(g, prop, m)
                args = [(ARG_SRC_LAYER, m['src_layer'], False),
                        (ARG_SRC_ITER, m['src_iter'], False)]
                if g.mode == 'lstm':
                    args.append((ARG_SRC_ITER_C, m['src_iter'], False))
                args += [(ARG_WEIGHTS_LAYER, m['w_layer'], False),
                         (ARG_WEIGHTS_ITER, m['w_iter'], False),
                         (ARG_BIAS, m['bias'], False),
                         (ARG_DST_LAYER, m['dst_layer'], True),
                         (ARG_DST_ITER, m['dst_iter'], True)]
                if g.mode == 'lstm':
                    args.append((ARG_DST_ITER_C, m['dst_iter'], True))
                args.append((ARG_WORKSPACE, None, True))
                return Primitive(self, pd, args)
            finally:
                self._destroy(m.values())

        return key, self.primitive(key, build)

    def _rnn_backward_prim(self, g):
        key = ('rnn_backward', g.mode, g.T, g.N, g.C, g.H, g.D, g.dstride)

        def build():
            m = self._rnn_descs(g)
            lib = self.lib
            fns = _functions(lib)
            hint = None
            try:
                hint = self._rnn_fwd_pd(g, _lib.FORWARD_TRAINING, m)
                pd = _VP()
                direction = BIDIRECTIONAL_CONCAT if g.D == 2 else L2R
                wl, wi = m['w_layer_any'], m['w_iter_any']
                sl, si, b, dl, di = (m['src_layer'], m['src_iter'], m['bias'], m['dst_layer'],
                                     m['dst_iter'])
                if g.mode == 'lstm':
                    status = fns['dnnl_lstm_backward_primitive_desc_create'](
                        ctypes.byref(pd), self.engine, _lib.BACKWARD, direction,
                        sl, si, si, wl, wi, None, None, b, dl, di, di,
                        sl, si, si, wl, wi, None, None, b, dl, di, di,
                        DIFF_WEIGHTS_OVERWRITE, hint, None)
                elif g.mode == 'gru':
                    status = fns['dnnl_lbr_gru_backward_primitive_desc_create'](
                        ctypes.byref(pd), self.engine, _lib.BACKWARD, direction,
                        sl, si, wl, wi, b, dl, di, sl, si, wl, wi, b, dl, di,
                        DIFF_WEIGHTS_OVERWRITE, hint, None)
                else:
                    status = fns['dnnl_vanilla_rnn_backward_primitive_desc_create'](
                        ctypes.byref(pd), self.engine, _lib.BACKWARD, _VANILLA[g.mode],
                        direction, sl, si, wl, wi, b, dl, di, sl, si, wl, wi, b, dl, di,
                        DIFF_WEIGHTS_OVERWRITE, 0.0, 0.0, hint, None)
                check(status, 'rnn backward primitive_desc_create (%s)' % g.mode)
                lstm = g.mode == 'lstm'
                args = [(ARG_SRC_LAYER, sl, False), (ARG_SRC_ITER, si, False)]
                args += [(ARG_SRC_ITER_C, si, False)] if lstm else []
                args += [(ARG_WEIGHTS_LAYER, m['w_layer'], False),
                         (ARG_WEIGHTS_ITER, m['w_iter'], False),
                         (ARG_BIAS, b, False), (ARG_DST_LAYER, dl, False),
                         (ARG_DST_ITER, di, False)]
                args += [(ARG_DST_ITER_C, di, False)] if lstm else []
                args += [(ARG_DIFF_DST_LAYER, dl, False), (ARG_DIFF_DST_ITER, di, False)]
                args += [(ARG_DIFF_DST_ITER_C, di, False)] if lstm else []
                args += [(ARG_WORKSPACE, None, False),
                         (ARG_DIFF_SRC_LAYER, sl, True), (ARG_DIFF_SRC_ITER, si, True)]
                args += [(ARG_DIFF_SRC_ITER_C, si, True)] if lstm else []
                args += [(ARG_DIFF_WEIGHTS_LAYER, m['w_layer'], True),
                         (ARG_DIFF_WEIGHTS_ITER, m['w_iter'], True),
                         (ARG_DIFF_BIAS, b, True)]
                return Primitive(self, pd, args)
            finally:
                if hint:
                    lib.dnnl_primitive_desc_destroy(hint)
                self._destroy(m.values())

        return key, self.primitive(key, build)

    # ------------------------------------------------------------------ parameters
    @staticmethod
    def _rnn_layers(mode, C, H, L, D):
        """[(input size, first weight's offset)] per layer, and the offset of the biases."""
        G = GATES[mode]
        out, pos = [], 0
        for layer in range(L):
            cin = C if layer == 0 else D * H
            out.append((cin, pos))
            pos += D * (G * H * cin + G * H * H)
        return out, pos

    @staticmethod
    def _rnn_weights(g, w):
        """The (layer, iter) weight arrays a layer's primitive reads: views of ``w`` at the
        layer's weights (their descriptors are strided), or GRU's gate-reordered copies."""
        if g.mode != 'gru':
            return w[g.wpos:], w[g.wpos + g.G * g.H * g.C:]
        G, H, C, D = g.G, g.H, g.C, g.D
        wl = np.empty((D, G, H, C), np.float32)
        wi = np.empty((D, G, H, H), np.float32)
        for d in range(D):
            base = g.wpos + d * g.dstride
            wx = w[base:base + G * H * C].reshape(G, H, C)
            wh = w[base + G * H * C:base + g.dstride].reshape(G, H, H)
            wl[d] = wx[list(_GRU_ORDER)]
            wi[d] = wh[list(_GRU_ORDER)]
        return wl, wi

    @staticmethod
    def _rnn_bias(g, w, bpos, layer):
        """oneDNN's bias (1, D, nbias, H) of a layer from MXNet's two bias vectors per
        direction (which start at ``bpos``)."""
        G, H, D = g.G, g.H, g.D
        gh = G * H
        out = np.empty((1, D, g.nbias, H), np.float32)
        for d in range(D):
            k = layer * D + d
            bx = w[bpos + 2 * k * gh:bpos + (2 * k + 1) * gh].reshape(G, H)
            bh = w[bpos + (2 * k + 1) * gh:bpos + (2 * k + 2) * gh].reshape(G, H)
            if g.mode == 'gru':
                out[0, d, 0] = bx[1] + bh[1]
                out[0, d, 1] = bx[0] + bh[0]
                out[0, d, 2] = bx[2]
                out[0, d, 3] = bh[2]
            else:
                np.add(bx, bh, out=out[0, d])
        return out

    # ------------------------------------------------------------------ kernels
    def rnn_forward(self, mode, x, w, hx, cx, H, L, D, is_train, spare=None):
        """The fused RNN's forward over (T, N, C) float32 ``x`` with MXNet's parameter
        vector ``w``, initial states ``hx`` (L*D, N, H) and ``cx`` (LSTM; else None):
        ``(y, hy, cy, kept)`` -- ``kept`` is what :meth:`rnn_backward` takes: per layer
        (input, output, workspace) -- or None when oneDNN does not take it. Inference runs
        the training primitive too (see :meth:`_rnn_forward_prim`).

        ``spare``: a list of uint8 arrays no longer in use (workspaces of earlier calls,
        which the caller keeps): a workspace of the size a layer needs is taken from it
        (removed) instead of allocated. The workspaces are large (44 MB for a
        bidirectional 256-unit layer over T=35, N=32), and fresh ones cost the kernel's
        page faults at every call: the training step took twice its time."""
        T, N, C = x.shape
        layers, bpos = self._rnn_layers(mode, C, H, L, D)
        if w.shape != (bpos + L * D * 2 * GATES[mode] * H,):
            return None
        w = np.ascontiguousarray(w, np.float32)
        hx = np.ascontiguousarray(hx, np.float32)
        lstm = mode == 'lstm'
        cx = np.ascontiguousarray(cx, np.float32) if lstm else None
        hy = np.empty((L * D, N, H), np.float32)
        cy = np.empty((L * D, N, H), np.float32) if lstm else None
        inp = np.ascontiguousarray(x, np.float32)
        kept = []
        for layer, (cin, wpos) in enumerate(layers):
            g = _Geom(mode, T, N, cin, H, D, wpos)
            key, prim = self._rnn_forward_prim(g)
            if prim is None:
                return None
            wl, wi = self._rnn_weights(g, w)
            bias = self._rnn_bias(g, w, bpos, layer)
            y = np.empty((T, N, D * H), np.float32)
            s = slice(layer * D, (layer + 1) * D)
            arrays = [inp, hx[s]] + ([cx[s]] if lstm else []) + [wl, wi, bias, y, hy[s]]
            arrays += [cy[s]] if lstm else []
            ws = _take(spare, prim.sizes[len(arrays)])
            arrays.append(ws)
            self.execute(key, prim, arrays)
            kept.append((inp, y, ws))
            inp = y
        return inp, hy, cy, kept

    def rnn_backward(self, mode, x, w, hx, cx, H, L, D, kept, hy, cy, dy, dhy, dcy):
        """Gradients ``(dx, dw, dhx, dcx)`` of the fused RNN from what :meth:`rnn_forward`
        kept in training and returned (``hy``, ``cy``), and the output's and last states'
        gradients (``dhy`` / ``dcy`` None: zero); None when oneDNN does not take it."""
        T, N, C = x.shape
        layers, bpos = self._rnn_layers(mode, C, H, L, D)
        lstm = mode == 'lstm'
        w = np.ascontiguousarray(w, np.float32)
        hx = np.ascontiguousarray(hx, np.float32)
        cx = np.ascontiguousarray(cx, np.float32) if lstm else None
        dw = np.empty(w.shape, np.float32)     # (every entry is written below)
        dhx = np.empty(hx.shape, np.float32)
        dcx = np.empty(cx.shape, np.float32) if lstm else None
        zeros = np.zeros(hx.shape, np.float32)
        dhy = zeros if dhy is None else np.ascontiguousarray(dhy, np.float32)
        if lstm:
            dcy = zeros if dcy is None else np.ascontiguousarray(dcy, np.float32)
        dout = np.ascontiguousarray(dy, np.float32)
        G, gh = GATES[mode], GATES[mode] * H
        for layer in range(L - 1, -1, -1):
            cin, wpos = layers[layer]
            g = _Geom(mode, T, N, cin, H, D, wpos)
            key, prim = self._rnn_backward_prim(g)
            if prim is None:
                return None
            inp, y, ws = kept[layer]
            s = slice(layer * D, (layer + 1) * D)
            wl, wi = self._rnn_weights(g, w)
            bias = self._rnn_bias(g, w, bpos, layer)
            if ws.nbytes != prim.sizes[12 if lstm else 9]:    # (the workspace argument)
                return None
            din = np.empty((T, N, cin), np.float32)
            if mode == 'gru':
                dwl = np.empty((D, G, H, cin), np.float32)
                dwi = np.empty((D, G, H, H), np.float32)
            else:
                dwl, dwi = dw[wpos:], dw[wpos + gh * cin:]
            db = np.empty((1, D, g.nbias, H), np.float32)
            arrays = [inp, hx[s]] + ([cx[s]] if lstm else []) + [wl, wi, bias, y, hy[s]]
            arrays += [cy[s]] if lstm else []
            arrays += [dout, dhy[s]] + ([dcy[s]] if lstm else [])
            arrays += [ws, din, dhx[s]] + ([dcx[s]] if lstm else []) + [dwl, dwi, db]
            self.execute(key, prim, arrays)
            for d in range(D):
                k = layer * D + d
                bx = dw[bpos + 2 * k * gh:bpos + (2 * k + 1) * gh].reshape(G, H)
                bh = dw[bpos + (2 * k + 1) * gh:bpos + (2 * k + 2) * gh].reshape(G, H)
                if mode == 'gru':
                    base = wpos + d * g.dstride
                    order = list(_GRU_ORDER)
                    dw[base:base + gh * cin].reshape(G, H, cin)[order] = dwl[d]
                    dw[base + gh * cin:base + g.dstride].reshape(G, H, H)[order] = dwi[d]
                    bx[1] = bh[1] = db[0, d, 0]
                    bx[0] = bh[0] = db[0, d, 1]
                    bx[2] = db[0, d, 2]
                    bh[2] = db[0, d, 3]
                else:
                    bx[...] = db[0, d]
                    bh[...] = db[0, d]
            dout = din
        return dout, dw, dhx, dcx
