"""The fused ``RNN`` operator's layers through oneDNN's RNN primitives (float32, and
bfloat16 where the routing sends it: ``routing.RNN_BF16``).

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
``b_hn``. Vanilla RNNs: tanh or relu cells. LSTMP (``projection_size`` P): a direction's
weights are ``i2h`` (4H, C), ``h2h`` (4H, P) and ``h2r`` (P, H), the last read in place as
oneDNN's ``weights_projection`` (H, P) 'io' through strides (1, H); the layers carry P-sized
states and outputs. Dropout between layers: the operator's masks multiply each layer's
input here, and the gradient passed down in the backward.

bfloat16: data, states and weights bf16, bias float32 (MXNet's two summed in float32),
every gradient float32 (oneDNN 3.2's bf16 RNN backward takes no other: its reference
implementation with bf16 GEMMs); no bf16 LSTMP training (its execution is 'unimplemented').

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
ARG_WEIGHTS_LAYER, ARG_WEIGHTS_ITER, ARG_WEIGHTS_PROJECTION = 33, 34, 36
ARG_BIAS = 41
ARG_WORKSPACE = 64
ARG_DIFF_SRC_LAYER, ARG_DIFF_SRC_ITER, ARG_DIFF_SRC_ITER_C = 129, 130, 131
ARG_DIFF_DST_LAYER, ARG_DIFF_DST_ITER, ARG_DIFF_DST_ITER_C = 145, 146, 147
ARG_DIFF_WEIGHTS_LAYER, ARG_DIFF_WEIGHTS_ITER, ARG_DIFF_WEIGHTS_PROJECTION = 161, 162, 164
#: dnnl_data_type_t
F32, BF16 = _lib.F32, 2
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


def _desc(lib, shape, dt, strides=None):
    """A ``dnnl_memory_desc_t`` of oneDNN data type ``dt`` over ``shape`` with element
    ``strides`` (C order when None). The caller destroys it."""
    if dt == F32:
        return strided_desc(lib, shape, strides)
    shape = tuple(int(v) for v in shape)
    if strides is None:
        strides, acc = [], 1
        for v in reversed(shape):
            strides.append(acc)
            acc *= max(v, 1)
        strides = tuple(reversed(strides))
    md = _VP()
    check(lib.dnnl_memory_desc_create_with_strides(ctypes.byref(md), len(shape),
                                                   _lib.Dims(*shape), dt,
                                                   _lib.Dims(*strides)),
          'dnnl_memory_desc_create_with_strides%s' % (shape,))
    return md


def _any(lib, shape, dt):
    """A descriptor of data type ``dt`` whose layout the primitive chooses."""
    if dt == F32:
        return any_desc(lib, shape)
    shape = tuple(int(v) for v in shape)
    md = _VP()
    check(lib.dnnl_memory_desc_create_with_tag(ctypes.byref(md), len(shape),
                                               _lib.Dims(*shape), dt, _lib.FORMAT_TAG_ANY),
          'dnnl_memory_desc_create_with_tag%s' % (shape,))
    return md


class _Geom:
    """Sizes of one layer: T, N, input size C, state size H, output (projected) size P,
    directions D, gates G, the offsets of its weights in MXNet's vector, and the data type
    (``F32`` or ``BF16``: data, states and weights; the bias is float32 either way, and a
    bfloat16 backward writes float32 gradients)."""

    def __init__(self, mode, T, N, C, H, D, wpos, P=None, dt=F32):
        self.mode, self.T, self.N, self.C, self.H, self.D = mode, T, N, C, H, D
        self.proj = P is not None
        self.P = H if P is None else P
        self.dt = dt
        self.G = GATES[mode]
        gh = self.G * H
        # one direction's i2h, h2h and (LSTMP) h2r
        self.dstride = gh * C + gh * self.P + (self.P * H if self.proj else 0)
        self.wpos = wpos                        # the layer's first weight
        self.nbias = self.G + 1 if mode == 'gru' else self.G

    def key(self):
        return (self.mode, self.T, self.N, self.C, self.H, self.P, self.proj, self.D,
                self.dstride, self.dt)

    def weight_descs(self, lib, dt=None):
        """(layer, iter, projection) user descriptors over MXNet's vector at the layer's
        weights (projection None without it; GRU's weights are copied in oneDNN's gate
        order, ldgoi), of data type ``dt`` (the layer's by default)."""
        G, H, C, D, P = self.G, self.H, self.C, self.D, self.P
        dt = self.dt if dt is None else dt
        if self.mode == 'gru':
            return (_desc(lib, (1, D, C, G, H), dt, (D * G * H * C, G * H * C, 1, H * C, C)),
                    _desc(lib, (1, D, H, G, H), dt, (D * G * H * H, G * H * H, 1, H * H, H)),
                    None)
        # MXNet's h2r (P, H) of a direction is oneDNN's (H, P) 'io' read with strides (1, H)
        ds = self.dstride
        if D == 1:
            # one direction: the strides of the unit dimensions are dense ldgoi's, so that
            # the descriptor equals the backward's chosen layout and its weights and
            # weight gradients need no reorder
            layer = (G * H * C, G * H * C, 1, H * C, C)
            it = (G * H * P, G * H * P, 1, H * P, P)
            pr = (P * H, P * H, 1, H)
        else:
            layer = (D * ds, ds, 1, H * C, C)
            it = (D * ds, ds, 1, H * P, P)
            pr = (D * ds, ds, 1, H)
        return (_desc(lib, (1, D, C, G, H), dt, layer),
                _desc(lib, (1, D, P, G, H), dt, it),
                _desc(lib, (1, D, H, P), dt, pr) if self.proj else None)


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
    #: the data types of a bfloat16 layer's arguments by role (the others are bfloat16):
    #: the bias and every gradient are float32 (oneDNN's bf16 RNN accumulates its
    #: gradients in float32; the operator rounds them to the inputs' type)
    _BF16_F32_ROLES = frozenset(('bias', 'diff_layer', 'diff_iter', 'diff_iter_c',
                                 'diff_weights', 'diff_bias'))

    def _rnn_descs(self, g):
        """Descriptors of one layer's arguments, in a dict (the caller destroys them):
        the forward's by role ('src_layer' ...) and the backward's gradients ('diff_...')."""
        lib = self.lib
        T, N, C, H, P, D, G = g.T, g.N, g.C, g.H, g.P, g.D, g.G
        lstm = g.mode == 'lstm'

        def dt(role):
            if g.dt == F32 or role in self._BF16_F32_ROLES:
                return F32
            return g.dt
        mds = {}
        for pre in ('', 'diff_'):
            t = dt(pre + 'layer')
            mds[pre + 'src_layer'] = _desc(lib, (T, N, C), t)
            mds[pre + 'dst_layer'] = _desc(lib, (T, N, D * P), t)
            t = dt(pre + 'iter')
            mds[pre + 'src_iter'] = _desc(lib, (1, D, N, P), t)
            mds[pre + 'dst_iter'] = _desc(lib, (1, D, N, P), t)
            t = dt(pre + 'iter_c')
            mds[pre + 'src_iter_c'] = _desc(lib, (1, D, N, H), t) if lstm else None
            mds[pre + 'dst_iter_c'] = _desc(lib, (1, D, N, H), t) if lstm else None
            mds[pre + 'bias'] = _desc(lib, (1, D, g.nbias, H), dt(pre + 'bias'))
            wt = dt(pre + 'weights')
            mds[pre + 'w_layer_any'] = _any(lib, (1, D, C, G, H), wt)
            mds[pre + 'w_iter_any'] = _any(lib, (1, D, P, G, H), wt)
            mds[pre + 'w_proj_any'] = _any(lib, (1, D, H, P), wt) if g.proj else None
            (mds[pre + 'w_layer'], mds[pre + 'w_iter'],
             mds[pre + 'w_proj']) = g.weight_descs(lib, wt)
        return mds

    def _rnn_fwd_pd(self, g, prop, m):
        fns = _functions(self.lib)
        pd = _VP()
        direction = BIDIRECTIONAL_CONCAT if g.D == 2 else L2R
        common = (m['w_layer_any'], m['w_iter_any'])
        if g.mode == 'lstm':
            status = fns['dnnl_lstm_forward_primitive_desc_create'](
                ctypes.byref(pd), self.engine, prop, direction, m['src_layer'], m['src_iter'],
                m['src_iter_c'], *common, None, m['w_proj_any'], m['bias'], m['dst_layer'],
                m['dst_iter'], m['dst_iter_c'], 0, None)
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

    @staticmethod
    def _rnn_args(g, m, backward):
        """(DNNL_ARG_*, descriptor, is_output) of a layer's primitive, in the order the
        kernels below pass arrays."""
        lstm, proj = g.mode == 'lstm', g.proj
        out = not backward
        args = [(ARG_SRC_LAYER, m['src_layer'], False), (ARG_SRC_ITER, m['src_iter'], False)]
        args += [(ARG_SRC_ITER_C, m['src_iter_c'], False)] if lstm else []
        args += [(ARG_WEIGHTS_LAYER, m['w_layer'], False),
                 (ARG_WEIGHTS_ITER, m['w_iter'], False)]
        args += [(ARG_WEIGHTS_PROJECTION, m['w_proj'], False)] if proj else []
        args += [(ARG_BIAS, m['bias'], False), (ARG_DST_LAYER, m['dst_layer'], out),
                 (ARG_DST_ITER, m['dst_iter'], out)]
        args += [(ARG_DST_ITER_C, m['dst_iter_c'], out)] if lstm else []
        if not backward:
            return args + [(ARG_WORKSPACE, None, True)]
        args += [(ARG_DIFF_DST_LAYER, m['diff_dst_layer'], False),
                 (ARG_DIFF_DST_ITER, m['diff_dst_iter'], False)]
        args += [(ARG_DIFF_DST_ITER_C, m['diff_dst_iter_c'], False)] if lstm else []
        args += [(ARG_WORKSPACE, None, False),
                 (ARG_DIFF_SRC_LAYER, m['diff_src_layer'], True),
                 (ARG_DIFF_SRC_ITER, m['diff_src_iter'], True)]
        args += [(ARG_DIFF_SRC_ITER_C, m['diff_src_iter_c'], True)] if lstm else []
        args += [(ARG_DIFF_WEIGHTS_LAYER, m['diff_w_layer'], True),
                 (ARG_DIFF_WEIGHTS_ITER, m['diff_w_iter'], True)]
        args += [(ARG_DIFF_WEIGHTS_PROJECTION, m['diff_w_proj'], True)] if proj else []
        return args + [(ARG_DIFF_BIAS, m['diff_bias'], True)]

    def _rnn_forward_prim(self, g):
        # inference runs the training primitive too (its workspace then dropped): the
        # inference kernels (packed weights) round differently, and an output must not
        # depend on the mode where MXNet's semantics make them equal (one layer, or p=0);
        # the weights change between calls anyway, so packing them would gain nothing
        prop = _lib.FORWARD_TRAINING
        key = ('rnn_forward',) + g.key() + (prop,)

        def build():
            m = self._rnn_descs(g)
            try:
                pd = self._rnn_fwd_pd(g, prop, m)
                return Primitive(self, pd, self._rnn_args(g, m, False))
            finally:
                self._destroy([v for v in m.values() if v is not None])

        return key, self.primitive(key, build)

    def _rnn_backward_prim(self, g):
        key = ('rnn_backward',) + g.key()

        def build():
            m = self._rnn_descs(g)
            lib = self.lib
            fns = _functions(lib)
            hint = None
            try:
                hint = self._rnn_fwd_pd(g, _lib.FORWARD_TRAINING, m)
                pd = _VP()
                direction = BIDIRECTIONAL_CONCAT if g.D == 2 else L2R
                fwd = [m[k] for k in ('src_layer', 'src_iter', 'src_iter_c', 'w_layer_any',
                                      'w_iter_any', 'w_proj_any', 'bias', 'dst_layer',
                                      'dst_iter', 'dst_iter_c')]
                bwd = [m['diff_' + k] for k in (
                    'src_layer', 'src_iter', 'src_iter_c', 'w_layer_any', 'w_iter_any',
                    'w_proj_any', 'bias', 'dst_layer', 'dst_iter', 'dst_iter_c')]
                sl, si, _, wl, wi, _, b, dl, di, _ = fwd
                dsl, dsi, _, dwl, dwi, _, db, ddl, ddi, _ = bwd
                if g.mode == 'lstm':
                    status = fns['dnnl_lstm_backward_primitive_desc_create'](
                        ctypes.byref(pd), self.engine, _lib.BACKWARD, direction,
                        *fwd[:5], None, *fwd[5:], *bwd[:5], None, *bwd[5:],
                        DIFF_WEIGHTS_OVERWRITE, hint, None)
                elif g.mode == 'gru':
                    status = fns['dnnl_lbr_gru_backward_primitive_desc_create'](
                        ctypes.byref(pd), self.engine, _lib.BACKWARD, direction,
                        sl, si, wl, wi, b, dl, di, dsl, dsi, dwl, dwi, db, ddl, ddi,
                        DIFF_WEIGHTS_OVERWRITE, hint, None)
                else:
                    status = fns['dnnl_vanilla_rnn_backward_primitive_desc_create'](
                        ctypes.byref(pd), self.engine, _lib.BACKWARD, _VANILLA[g.mode],
                        direction, sl, si, wl, wi, b, dl, di, dsl, dsi, dwl, dwi, db, ddl,
                        ddi, DIFF_WEIGHTS_OVERWRITE, 0.0, 0.0, hint, None)
                check(status, 'rnn backward primitive_desc_create (%s)' % g.mode)
                return Primitive(self, pd, self._rnn_args(g, m, True))
            finally:
                if hint:
                    lib.dnnl_primitive_desc_destroy(hint)
                self._destroy([v for v in m.values() if v is not None])

        return key, self.primitive(key, build)

    # ------------------------------------------------------------------ parameters
    @staticmethod
    def _rnn_layers(mode, C, H, L, D, P=None):
        """[(input size, first weight's offset)] per layer, and the offset of the biases
        (``P``: the projection size of an LSTMP, whose directions add an h2r (P, H))."""
        G = GATES[mode]
        out, pos = [], 0
        R = H if P is None else P
        for layer in range(L):
            cin = C if layer == 0 else D * R
            out.append((cin, pos))
            pos += D * (G * H * cin + G * H * R + (0 if P is None else P * H))
        return out, pos

    @staticmethod
    def _rnn_weights(g, w):
        """The (layer, iter, projection) weight arrays a layer's primitive reads: views of
        ``w`` at the layer's weights (their descriptors are strided), or GRU's
        gate-reordered copies (projection None where there is none)."""
        gh = g.G * g.H
        if g.mode != 'gru':
            proj = w[g.wpos + gh * (g.C + g.P):] if g.proj else None
            return w[g.wpos:], w[g.wpos + gh * g.C:], proj
        G, H, C, D = g.G, g.H, g.C, g.D
        wl = np.empty((D, G, H, C), w.dtype)
        wi = np.empty((D, G, H, H), w.dtype)
        for d in range(D):
            base = g.wpos + d * g.dstride
            wx = w[base:base + G * H * C].reshape(G, H, C)
            wh = w[base + G * H * C:base + g.dstride].reshape(G, H, H)
            wl[d] = wx[list(_GRU_ORDER)]
            wi[d] = wh[list(_GRU_ORDER)]
        return wl, wi, None

    @staticmethod
    def _rnn_bias(g, w, bpos, layer):
        """oneDNN's float32 bias (1, D, nbias, H) of a layer from MXNet's two bias vectors
        per direction (which start at ``bpos``; summed in float32)."""
        G, H, D = g.G, g.H, g.D
        gh = G * H
        out = np.empty((1, D, g.nbias, H), np.float32)
        k0 = layer * D
        b = w[bpos + 2 * k0 * gh:bpos + 2 * (k0 + D) * gh]
        if b.dtype != np.float32:
            b = b.astype(np.float32)
        for d in range(D):
            bx = b[2 * d * gh:(2 * d + 1) * gh].reshape(G, H)
            bh = b[(2 * d + 1) * gh:(2 * d + 2) * gh].reshape(G, H)
            if g.mode == 'gru':
                out[0, d, 0] = bx[1] + bh[1]
                out[0, d, 1] = bx[0] + bh[0]
                out[0, d, 2] = bx[2]
                out[0, d, 3] = bh[2]
            else:
                np.add(bx, bh, out=out[0, d])
        return out

    @staticmethod
    def _rnn_type(x, w):
        """oneDNN's data type of a call (``F32``, ``BF16`` when data and parameters are
        ml_dtypes' bfloat16), or None for other dtypes."""
        if x.dtype == np.float32 and w.dtype == np.float32:
            return F32
        if x.dtype == w.dtype and x.dtype.kind == 'V' and x.dtype.name == 'bfloat16':
            return BF16
        return None

    # ------------------------------------------------------------------ kernels
    def rnn_forward(self, mode, x, w, hx, cx, H, L, D, is_train, spare=None, P=None,
                    masks=None):
        """The fused RNN's forward over (T, N, C) ``x`` with MXNet's parameter vector
        ``w``, initial states ``hx`` (L*D, N, P) and ``cx`` (L*D, N, H; LSTM, else None):
        ``(y, hy, cy, kept)`` -- ``kept`` is what :meth:`rnn_backward` takes: per layer
        (input, output, workspace) -- or None when oneDNN does not take it. Inference runs
        the training primitive too (see :meth:`_rnn_forward_prim`).

        float32, or bfloat16 (ml_dtypes) data, parameters and states: outputs and states
        of the same type (oneDNN's bf16 RNN accumulates in float32; its bias is the
        float32 sum of MXNet's two). ``P``: LSTM's projection size (LSTMP), or None.
        ``masks``: per layer, None or the (T, N, D*P) float32 factors the layer's input
        (the previous layer's output) is multiplied by: MXNet's dropout between layers.

        ``spare``: a list of uint8 arrays no longer in use (workspaces of earlier calls,
        which the caller keeps): a workspace of the size a layer needs is taken from it
        (removed) instead of allocated. The workspaces are large (44 MB for a
        bidirectional 256-unit layer over T=35, N=32), and fresh ones cost the kernel's
        page faults at every call: the training step took twice its time."""
        T, N, C = x.shape
        dt = self._rnn_type(x, w)
        if dt is None or (P is not None and (mode != 'lstm' or (dt == BF16 and is_train))):
            # (oneDNN 3.2 has no bf16 LSTMP backward: its execution is 'unimplemented')
            return None
        R = H if P is None else P
        layers, bpos = self._rnn_layers(mode, C, H, L, D, P)
        if w.shape != (bpos + L * D * 2 * GATES[mode] * H,):
            return None
        ty = x.dtype
        w = np.ascontiguousarray(w)
        hx = np.ascontiguousarray(hx, ty)
        lstm = mode == 'lstm'
        cx = np.ascontiguousarray(cx, ty) if lstm else None
        hy = np.empty((L * D, N, R), ty)
        cy = np.empty((L * D, N, H), ty) if lstm else None
        inp = np.ascontiguousarray(x)
        kept = []
        for layer, (cin, wpos) in enumerate(layers):
            if layer and masks is not None and masks[layer] is not None:
                inp = (np.multiply(inp, masks[layer]) if dt == F32 else
                       np.multiply(inp.astype(np.float32), masks[layer]).astype(ty))
            g = _Geom(mode, T, N, cin, H, D, wpos, P, dt)
            key, prim = self._rnn_forward_prim(g)
            if prim is None:
                return None
            wl, wi, wp = self._rnn_weights(g, w)
            bias = self._rnn_bias(g, w, bpos, layer)
            y = np.empty((T, N, D * R), ty)
            s = slice(layer * D, (layer + 1) * D)
            arrays = [inp, hx[s]] + ([cx[s]] if lstm else []) + [wl, wi]
            arrays += ([wp] if g.proj else []) + [bias, y, hy[s]]
            arrays += [cy[s]] if lstm else []
            ws = _take(spare, prim.sizes[len(arrays)])
            arrays.append(ws)
            self.execute(key, prim, arrays)
            kept.append((inp, y, ws))
            inp = y
        return inp, hy, cy, kept

    def rnn_backward(self, mode, x, w, hx, cx, H, L, D, kept, hy, cy, dy, dhy, dcy, P=None,
                     masks=None):
        """Gradients ``(dx, dw, dhx, dcx)`` of the fused RNN from what :meth:`rnn_forward`
        kept in training and returned (``hy``, ``cy``), and the output's and last states'
        gradients (``dhy`` / ``dcy`` None: zero); None when oneDNN does not take it.
        ``P`` and ``masks`` as the forward was given them. Gradients are float32 (a
        bfloat16 call's too: the operator rounds them to its inputs' type)."""
        T, N, C = x.shape
        dt = self._rnn_type(x, w)
        if dt is None or (P is not None and (mode != 'lstm' or dt == BF16)):
            return None
        R = H if P is None else P
        layers, bpos = self._rnn_layers(mode, C, H, L, D, P)
        lstm = mode == 'lstm'
        ty = x.dtype
        f32 = np.float32
        w = np.ascontiguousarray(w)
        hx = np.ascontiguousarray(hx, ty)
        cx = np.ascontiguousarray(cx, ty) if lstm else None
        dw = np.empty(w.shape, f32)     # (every entry is written below)
        dhx = np.empty(hx.shape, f32)
        dcx = np.empty(cx.shape, f32) if lstm else None
        # the incoming gradients in the primitive's diff type (float32 either way)
        dhy = np.zeros(hx.shape, f32) if dhy is None else np.ascontiguousarray(dhy, f32)
        if lstm:
            dcy = np.zeros(cx.shape, f32) if dcy is None else np.ascontiguousarray(dcy, f32)
        dout = np.ascontiguousarray(dy, f32)
        G, gh = GATES[mode], GATES[mode] * H
        for layer in range(L - 1, -1, -1):
            cin, wpos = layers[layer]
            g = _Geom(mode, T, N, cin, H, D, wpos, P, dt)
            key, prim = self._rnn_backward_prim(g)
            if prim is None:
                return None
            inp, y, ws = kept[layer]
            s = slice(layer * D, (layer + 1) * D)
            wl, wi, wp = self._rnn_weights(g, w)
            bias = self._rnn_bias(g, w, bpos, layer)
            # (the workspace argument: after the forward's arguments and the gradients of
            # the outputs)
            iws = (12 if lstm else 9) + g.proj
            if ws.nbytes != prim.sizes[iws]:
                return None
            din = np.empty((T, N, cin), f32)
            if mode == 'gru':
                dwl = np.empty((D, G, H, cin), f32)
                dwi = np.empty((D, G, H, H), f32)
            else:
                dwl, dwi = dw[wpos:], dw[wpos + gh * cin:]
            db = np.empty((1, D, g.nbias, H), f32)
            arrays = [inp, hx[s]] + ([cx[s]] if lstm else []) + [wl, wi]
            arrays += ([wp] if g.proj else []) + [bias, y, hy[s]]
            arrays += [cy[s]] if lstm else []
            arrays += [dout, dhy[s]] + ([dcy[s]] if lstm else [])
            arrays += [ws, din, dhx[s]] + ([dcx[s]] if lstm else []) + [dwl, dwi]
            arrays += ([dw[wpos + gh * (cin + R):]] if g.proj else []) + [db]
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
            if layer and masks is not None and masks[layer] is not None:
                din *= masks[layer]
            dout = din
        return dout, dw, dhx, dcx
