"""Recurrent layers: the fused ``RNN`` operator and ``_rnn_param_concat``.

MXNet 1.9.1 semantics (src/operator/rnn-inl.h, rnn_impl.h):

* inputs ``data`` (T, N, C), ``parameters`` (the flat vector below), ``state``
  (L*D, N, P), ``state_cell`` (L*D, N, H; LSTM only) and ``sequence_length`` (N,;
  only with ``use_sequence_length``), where H is ``state_size``, P is ``projection_size``
  (H without projection), L ``num_layers`` and D 2 when ``bidirectional``;
* outputs ``output`` (T, N, D*P) and, with ``state_outputs``, ``state_output``
  (L*D, N, P) and ``statecell_output`` (L*D, N, H; LSTM);
* the packing of ``parameters``: first every weight, layer by layer and direction by
  direction (``i2h`` (G*H, in), ``h2h`` (G*H, P), with projection ``h2r`` (P, H)), then
  every bias in the same order (``i2h`` (G*H,), ``h2h`` (G*H,)); G is 4 (LSTM, gates
  i, f, g, o), 3 (GRU, gates r, z, n) or 1;
* GRU: ``n = tanh(Wx_n x + b_xn + r * (Wh_n h + b_hn))``, ``h' = (1 - z) n + z h``;
* ``p``: dropout on the output of every layer but the last, in training only;
* ``lstm_state_clip_min/max``: the LSTM cell state clipped after each step (NaN
  becomes ``lstm_state_clip_min`` with ``lstm_state_clip_nan``, otherwise it stays NaN);
* ``use_sequence_length``: each sequence runs over its first ``length`` steps (the
  reverse direction starts at its own last step); outputs past the length are 0 and the
  returned states are those of the last valid step.

MXNet runs state clipping and sequence lengths on the GPU (cuDNN) only, and projection
on the GPU and, in inference only, on the CPU; here all of them run, forward and backward,
on both array modules. Differences: dropout draws from NumPy's/CuPy's generator (MXNet:
std::mt19937), so the dropped positions differ for the same seed.

On the CPU the layers run on oneDNN's RNN primitives where the backend takes the call
(``cpu_kernel('rnn_forward')``): float32, projection, and dropout applied between the
layers with masks drawn as the NumPy path draws them; bfloat16 in float32 on widened copies,
rounded (MXNet 1.9.1 has no bfloat16 RNN and runs it so in a bf16 network), or, where the
backend routes it (``routing.RNN_BF16``, AVX-512 BF16), on oneDNN's bf16 primitives; state
clipping and sequence lengths, which oneDNN has no option for, stay on NumPy.

The backward pass reads what the forward kept in a hidden output ``reserve`` (MXNet's
reserve space): gate activations, carried states, layer inputs and dropout masks.
"""
import math

import numpy as np

from symgraph.opdef import (Kept, Operator, Param, ShapeError, Step, TypeInferenceError,
                            cpu_kernel, is_bfloat16, np_dtype, random_state, register,
                            takes_bfloat16, unify_shape)
from symgraph.base import ParameterError

_GATES = {'rnn_relu': 1, 'rnn_tanh': 1, 'lstm': 4, 'gru': 3}


def _sigmoid(xp, a, out=None):
    """A logistic sigmoid that never overflows: (tanh(a/2) + 1) / 2, in place if asked."""
    out = xp.multiply(a, 0.5, out=out)
    xp.tanh(out, out=out)
    out += 1
    out *= 0.5
    return out


class _Layout:
    """Sizes of one RNN configuration given the data shape (T, N, C)."""

    def __init__(self, op, T, N, C):
        self.T, self.N, self.C = T, N, C
        self.G = _GATES[op.mode]
        self.H = op.state_size
        self.P = op.projection_size or op.state_size
        self.L = op.num_layers
        self.D = 2 if op.bidirectional else 1
        self.mode = op.mode
        self.proj = op.projection_size is not None
        self.clip = op.lstm_state_clip_min is not None and op.mode == 'lstm'
        self.dropout = op.p > 0 and self.L > 1
        # plain LSTM (no projection, clipping or sequence lengths): the fast time loop
        self.fast = (self.mode == 'lstm' and not self.proj and not self.clip
                     and not op.use_sequence_length)

    def layer_input(self, layer):
        return self.C if layer == 0 else self.D * self.P

    def weight_shapes(self, layer):
        """(i2h, h2h[, h2r]) weight shapes of one direction of ``layer``."""
        gh = self.G * self.H
        shapes = [(gh, self.layer_input(layer)), (gh, self.P)]
        if self.proj:
            shapes.append((self.P, self.H))
        return shapes

    def param_size(self):
        w = sum(self.D * sum(a * b for a, b in self.weight_shapes(l)) for l in range(self.L))
        return w + self.L * self.D * 2 * self.G * self.H

    def split_params(self, w):
        """Views ``[(weights, (bx, bh)) for each (layer, direction)]`` of the flat vector."""
        out, pos = [], 0
        for l in range(self.L):
            for _ in range(self.D):
                mats = []
                for a, b in self.weight_shapes(l):
                    mats.append(w[pos:pos + a * b].reshape(a, b))
                    pos += a * b
                out.append([mats, None])
        gh = self.G * self.H
        for k in range(self.L * self.D):
            out[k][1] = (w[pos:pos + gh], w[pos + gh:pos + 2 * gh])
            pos += 2 * gh
        return out

    def segments(self):
        """``[(key, shape)]`` of the reserve: what backward reads from the forward."""
        T, N, H, P, G = self.T, self.N, self.H, self.P, self.G
        segs = []
        for l in range(self.L):
            if l > 0:
                segs.append((('x', l), (T, N, self.D * P)))
                if self.dropout:
                    segs.append((('mask', l), (T, N, self.D * P)))
            for d in range(self.D):
                k = (l, d)
                segs.append((('gates', k), (T, N, G * H)))
                segs.append((('h', k), (T, N, P)))         # carried (projected) state
                if self.mode == 'lstm':
                    segs.append((('c', k), (T, N, H)))     # carried cell state
                    if self.fast:
                        segs.append((('tc', k), (T, N, H)))    # tanh(cell state)
                    if self.proj:
                        segs.append((('hh', k), (T, N, H)))    # h before projection
                    if self.clip:
                        segs.append((('craw', k), (T, N, H)))  # cell state before clipping
                if self.mode == 'gru':
                    segs.append((('ghn', k), (T, N, H)))   # Wh_n h + b_hn
        return segs

    def reserve_size(self):
        return sum(math.prod(s) for _, s in self.segments())

    def views(self, buf):
        out, pos = {}, 0
        for key, shape in self.segments():
            n = math.prod(shape)
            out[key] = buf[pos:pos + n].reshape(shape)
            pos += n
        return out


class _Kept(Kept):
    """The RNN Step's state: what oneDNN's training forwards keep for their backward (a
    :class:`Kept`, holding at most a few calls: each keeps tens of MB of workspaces), and
    ``spare``, the workspaces of calls whose output is gone or that kept nothing, which
    the next forward takes instead of allocating (fresh memory made the step 2x slower:
    the kernel's page faults)."""

    __slots__ = ('spare',)

    def __init__(self):
        super().__init__(limit=4)
        self.spare = []

    def recycle(self):
        """Move the workspaces of entries whose arrays died into :attr:`spare`; return
        it."""
        for key, entry in list(self._entries.items()):
            if entry[0]() is None or entry[1]() is None:
                del self._entries[key]
                self.spare.extend(ws for _, _, ws in entry[2][0])
        del self.spare[8:]
        return self.spare


def _widen(arrays):
    """float32 copies of the bfloat16 arrays of a list (the others as they are)."""
    return [a.astype(np.float32) if a is not None and is_bfloat16(a.dtype) else a
            for a in arrays]


def _narrow_grads(grads, inputs):
    """Gradients in their inputs' types (a bfloat16 input's rounded)."""
    return [g if g is None or g.dtype == x.dtype else g.astype(x.dtype)
            for g, x in zip(grads, inputs)]


@register
@takes_bfloat16
class RNN(Operator):
    """Fused multi-layer recurrent layers (vanilla RNN, LSTM, GRU) over (T, N, C) data."""

    name = 'RNN'
    aliases = ('_npx_rnn',)
    state_size = Param(int, doc='size of the state for each layer', minimum=0)
    num_layers = Param(int, doc='number of stacked layers', minimum=0)
    bidirectional = Param(bool, False, doc='whether to use bidirectional recurrent layers')
    mode = Param(str, doc='the type of RNN to compute', choices=tuple(_GATES))
    p = Param(float, 0.0, doc='drop rate of the dropout on the outputs of each RNN layer, '
              'except the last layer', minimum=0)
    state_outputs = Param(bool, False, doc='whether to have the states as symbol outputs')
    projection_size = Param(int, None, doc='size of the projection (LSTMP)')
    lstm_state_clip_min = Param(float, None, doc='minimum clip value of LSTM states')
    lstm_state_clip_max = Param(float, None, doc='maximum clip value of LSTM states')
    lstm_state_clip_nan = Param(bool, False, doc='clip NaN states to the minimum')
    use_sequence_length = Param(bool, False, doc='take an extra input `sequence_length`')
    needs_inputs = True
    needs_outputs = True

    def check(self):
        if self.p >= 1:
            raise ParameterError('RNN: unsupported dropout value p=%s, should be 0 <= p < 1'
                                 % self.p)
        if self.num_layers < 1 or self.state_size < 1:
            raise ParameterError('RNN: num_layers and state_size must be positive, got %d and %d'
                                 % (self.num_layers, self.state_size))
        if self.projection_size is not None:
            if self.mode != 'lstm':
                raise ParameterError('RNN: projection is only supported for LSTM (mode=%r)'
                                     % self.mode)
            if not 0 < self.projection_size <= self.state_size:
                raise ParameterError('RNN: projection_size=%d must be in [1, state_size=%d]'
                                     % (self.projection_size, self.state_size))
        lo, hi = self.lstm_state_clip_min, self.lstm_state_clip_max
        if lo is not None or hi is not None:
            if self.mode != 'lstm':
                raise ParameterError('RNN: state clipping is only supported for LSTM (mode=%r)'
                                     % self.mode)
            if lo is None or hi is None:
                raise ParameterError('RNN: lstm_state_clip_min and lstm_state_clip_max must be '
                                     'specified together')
            if hi < lo:
                raise ParameterError('RNN: lstm_state_clip_max=%s must be greater or equal to '
                                     'lstm_state_clip_min=%s' % (hi, lo))

    # --- structure -------------------------------------------------------------------
    def list_arguments(self):
        args = ['data', 'parameters', 'state']
        if self.mode == 'lstm':
            args.append('state_cell')
        if self.use_sequence_length:
            args.append('sequence_length')
        return args

    def list_outputs(self):
        names = ['output']
        if self.state_outputs:
            names.append('state_output')
            if self.mode == 'lstm':
                names.append('statecell_output')
        return names + ['reserve']

    def num_visible_outputs(self):
        return len(self.list_outputs()) - 1

    # --- inference -------------------------------------------------------------------
    infer_shape_uses_outputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        names = self.list_arguments()
        shapes = list(in_shapes[:len(names)])
        d = shapes[0]
        nout = len(self.list_outputs())
        if d is None:
            return shapes, [None] * nout, []
        if len(d) != 3:
            raise ShapeError('RNN: argument %r should be a rank-3 tensor (sequence length, '
                             'batch size, input size), got %s' % ('data', tuple(d)))
        T, N, C = d
        lay = _Layout(self, T, N, C)
        want = {'state': (lay.L * lay.D, N, lay.P),
                'state_cell': (lay.L * lay.D, N, lay.H),
                'sequence_length': (N,)}
        if C:
            want['parameters'] = (lay.param_size(),)
        for i, name in enumerate(names[1:], 1):
            if name not in want:
                continue
            try:
                shapes[i] = unify_shape(shapes[i], want[name])
            except ShapeError:
                raise ShapeError(
                    'RNN: argument %r has shape %s, expected %s for data %s (mode=%s, '
                    'state_size=%d, num_layers=%d, bidirectional=%s%s)'
                    % (name, tuple(shapes[i]), want[name], tuple(d), self.mode,
                       self.state_size, self.num_layers, self.bidirectional,
                       '' if self.projection_size is None
                       else ', projection_size=%d' % self.projection_size)) from None
        outs = [(T, N, lay.D * lay.P)]
        if self.state_outputs:
            outs.append(want['state'])
            if self.mode == 'lstm':
                outs.append(want['state_cell'])
        known = all(x > 0 for x in d)
        outs.append((lay.reserve_size(),) if known else None)
        return shapes, outs, []

    def infer_type(self, in_types):
        names = self.list_arguments()
        types = list(in_types[:len(names)])
        float_idx = [i for i, n in enumerate(names) if n != 'sequence_length']
        t = next((types[i] for i in float_idx if types[i] is not None), None)
        if t is None:
            return types, [None] * len(self.list_outputs()), []
        t = np_dtype(t)
        for i in float_idx:
            if types[i] is None:
                types[i] = t
            elif np_dtype(types[i]) != t:
                raise TypeInferenceError('RNN: input %r has type %s but %s was expected (the '
                                         'type of the other inputs)'
                                         % (names[i], np_dtype(types[i]).name, t.name))
        if self.use_sequence_length and types[-1] is None:
            types[-1] = t
        return types, [t] * len(self.list_outputs()), []

    # --- compute ---------------------------------------------------------------------
    def _lengths_mask(self, xp, inputs, T, N):
        """(T, N, 1) boolean mask of valid steps, or None when every step is valid."""
        if not self.use_sequence_length:
            return None
        ln = inputs[-1].astype(np.int64)
        return (xp.arange(T)[:, None] < ln[None, :])[:, :, None]

    def bind(self, ctx, in_shapes, in_dtypes):
        """A Step whose state keeps the oneDNN forward's per-layer workspaces of training
        forwards for backward, by output and data (a :class:`symgraph.opdef.Kept`)."""
        return Step(self, ctx, _Kept(), shareable=True)

    def _onednn(self, xp, lay, inputs):
        """Whether this call may go through the CPU kernels (oneDNN's RNN primitives, which
        take projection and, layer by layer, the dropout between layers): NumPy arrays and
        neither state clipping nor sequence lengths, which oneDNN has no option for (they
        stay on the NumPy path)."""
        return xp is np and not (lay.clip or self.use_sequence_length) \
            and isinstance(inputs[0], np.ndarray)

    def _draw_masks(self, xp, lay, shape):
        """The dropout factors between layers of a training forward: per layer, None
        (the first) or a (T, N, D*P) float64 array of 0 and 1/(1-p) (each path rounds it
        to its type), drawn in order from the operator's generator (a seeded run drops
        the same positions on both paths)."""
        masks = [None]
        for _ in range(1, lay.L):
            keep = random_state(xp).random_sample(shape) >= self.p
            masks.append(keep * (1.0 / (1.0 - self.p)))
        return masks

    def _forward_onednn(self, lay, inputs, is_train, state, masks, narrow=None):
        """The outputs from oneDNN's RNN primitives, or None where they decline.

        ``masks``: the dropout masks of a training forward (:meth:`_draw_masks`), kept
        with the workspaces and written to the reserve's mask views (ones in inference),
        from which a backward that finds nothing kept takes them to run the training
        forward again. ``narrow``: the bfloat16 inputs ``inputs`` are float32 copies of
        (float32 primitives on them): the outputs are rounded to their type, and the entry
        kept under them holds the float32 copies, on which the backward computes."""
        kernel = cpu_kernel('rnn_forward')
        if kernel is None:
            return None
        x, w, hx = inputs[0], inputs[1], inputs[2]
        cx = inputs[3] if self.mode == 'lstm' else None
        if masks is not None:
            masks = [None] + [m.astype(np.float32) for m in masks[1:]]
        spare = state.recycle() if isinstance(state, _Kept) else None
        got = kernel(self.mode, x, w, hx, cx, lay.H, lay.L, lay.D, is_train, spare,
                     self.projection_size, masks)
        if got is None:
            return None
        y, hy, cy, kept = got
        src = x if narrow is None else narrow[0]
        if narrow is not None:
            ty = src.dtype
            outs = [y.astype(ty), hy.astype(ty)] + ([] if cy is None else [cy.astype(ty)])
        else:
            outs = [y, hy] + ([] if cy is None else [cy])
        reserve = np.empty((lay.reserve_size(),), src.dtype)
        if lay.dropout:
            r = lay.views(reserve)
            for l in range(1, lay.L):
                if masks is None:
                    r[('mask', l)].fill(1)
                else:
                    r[('mask', l)][...] = masks[l]
        if is_train and state is not None:
            if narrow is None:
                # (the last layer's output is ``y`` itself, which the entry holds weakly)
                kept[-1] = (kept[-1][0], None, kept[-1][2])
            state.keep(outs[0], src, (kept, hy, cy, masks,
                                      None if narrow is None else inputs))
        elif spare is not None:
            spare.extend(ws for _, _, ws in kept)
        if not self.state_outputs:
            outs = outs[:1]
        # the rest of the reserve (the NumPy backward's) stays unwritten: the backward of
        # this forward reads what the state kept, or runs oneDNN's training forward again
        return outs + [reserve]

    def forward(self, xp, inputs, aux, is_train, state=None):
        x, w, hx = inputs[0], inputs[1], inputs[2]
        T, N, C = x.shape
        lay = _Layout(self, T, N, C)
        if w.shape != (lay.param_size(),):
            raise ShapeError('RNN: argument %r has shape %s, expected %s'
                             % ('parameters', tuple(w.shape), (lay.param_size(),)))
        return self._forward(xp, lay, inputs, is_train, state)

    def _forward(self, xp, lay, inputs, is_train, state, masks=None):
        """The outputs, on oneDNN where it takes the call, else on NumPy (``masks``:
        dropout masks already drawn, or None to draw them when training)."""
        x = inputs[0]
        if masks is None and lay.dropout and is_train:
            masks = self._draw_masks(xp, lay, (lay.T, lay.N, lay.D * lay.P))
        if self._onednn(xp, lay, inputs):
            got = self._forward_onednn(lay, inputs, is_train, state, masks)
            if got is not None:
                return got
        if is_bfloat16(x.dtype):
            # no bfloat16 kernel here (the CPU lacks AVX-512 BF16, routing.RNN_BF16 is
            # off, or oneDNN declines the case): float32 on widened copies, outputs
            # rounded, as MXNet 1.9.1 runs RNN (AMP's FP32_FUNCS) between casts
            wide = _widen(inputs)
            if self._onednn(xp, lay, wide):
                got = self._forward_onednn(lay, wide, is_train, state, masks, inputs)
                if got is not None:
                    return got
            return [o.astype(x.dtype) for o in self._forward_numpy(xp, lay, wide, is_train,
                                                                   masks)]
        return self._forward_numpy(xp, lay, inputs, is_train, masks)

    def _forward_numpy(self, xp, lay, inputs, is_train, masks=None):
        x, w, hx = inputs[0], inputs[1], inputs[2]
        cx = inputs[3] if self.mode == 'lstm' else None
        T, N = lay.T, lay.N
        mask = self._lengths_mask(xp, inputs, T, N)
        reserve = xp.empty((lay.reserve_size(),), dtype=x.dtype)
        r = lay.views(reserve)
        params = lay.split_params(w)
        hy = xp.empty((lay.L * lay.D, N, lay.P), dtype=x.dtype)
        cy = xp.empty((lay.L * lay.D, N, lay.H), dtype=x.dtype) if cx is not None else None
        inp = x
        for l in range(lay.L):
            if l > 0:
                if lay.dropout and is_train:
                    m = r[('mask', l)]
                    if masks is None:
                        keep = random_state(xp).random_sample(inp.shape) >= self.p
                        m[...] = keep * (1.0 / (1.0 - self.p))
                    else:
                        m[...] = masks[l]
                    inp = inp * m
                elif lay.dropout:
                    r[('mask', l)].fill(1)
                r[('x', l)][...] = inp
            y = xp.empty((T, N, lay.D * lay.P), dtype=x.dtype)
            for d in range(lay.D):
                k = l * lay.D + d
                self._forward_dir(xp, lay, r, (l, d), inp, params[k],
                                  hx[k], None if cx is None else cx[k], mask,
                                  y[:, :, d * lay.P:(d + 1) * lay.P])
                hy[k] = r[('h', (l, d))][T - 1 if d == 0 else 0]
                if cy is not None:
                    cy[k] = r[('c', (l, d))][T - 1 if d == 0 else 0]
            inp = y
        outs = [inp]
        if self.state_outputs:
            outs.append(hy)
            if cy is not None:
                outs.append(cy)
        return outs + [reserve]

    def _forward_dir(self, xp, lay, r, key, x, params, h0, c0, mask, y):
        """One direction of one layer; fills the reserve views and ``y`` (T, N, P)."""
        (wx, wh, *wr), (bx, bh) = params
        T, N, H, G = lay.T, lay.N, lay.H, lay.G
        gates, hs = r[('gates', key)], r[('h', key)]
        gx = (x.reshape(T * N, -1) @ wx.T).reshape(T, N, G * H)
        if lay.mode == 'gru':
            gx += bx
            gx[:, :, :2 * H] += bh[:2 * H]
            ghn = r[('ghn', key)]
        else:
            gx += bx + bh
        reverse = key[1] == 1
        if lay.fast and mask is None:
            self._forward_lstm(xp, lay, r, key, gx, wh, h0, c0, y, reverse)
            return
        h, c = h0, c0
        lo, hi = self.lstm_state_clip_min, self.lstm_state_clip_max
        for t in (range(T - 1, -1, -1) if reverse else range(T)):
            a = gates[t]
            xp.matmul(h, wh.T, out=a)
            if lay.mode == 'gru':
                ghn[t] = a[:, 2 * H:] + bh[2 * H:]
                a[:, :2 * H] += gx[t, :, :2 * H]
                _sigmoid(xp, a[:, :2 * H], out=a[:, :2 * H])
                rr, z = a[:, :H], a[:, H:2 * H]
                n = a[:, 2 * H:]
                xp.multiply(rr, ghn[t], out=n)
                n += gx[t, :, 2 * H:]
                xp.tanh(n, out=n)
                hn = n + z * (h - n)
            else:
                a += gx[t]
                if lay.mode == 'lstm':
                    _sigmoid(xp, a[:, :2 * H], out=a[:, :2 * H])
                    g = xp.tanh(a[:, 2 * H:3 * H], out=a[:, 2 * H:3 * H])
                    _sigmoid(xp, a[:, 3 * H:], out=a[:, 3 * H:])
                    cn = a[:, H:2 * H] * c
                    cn += a[:, :H] * g
                    if lay.clip:
                        r[('craw', key)][t] = cn
                        if self.lstm_state_clip_nan:
                            cn = xp.where(xp.isnan(cn), xp.asarray(lo, dtype=cn.dtype), cn)
                        cn = xp.clip(cn, lo, hi)
                    hn = a[:, 3 * H:] * xp.tanh(cn)
                    if lay.proj:
                        r[('hh', key)][t] = hn
                        hn = hn @ wr[0].T
                elif lay.mode == 'rnn_tanh':
                    hn = xp.tanh(a, out=a)
                else:
                    hn = xp.maximum(a, 0, out=a)
            if mask is not None:
                m = mask[t]
                y[t] = xp.where(m, hn, 0)
                hn = xp.where(m, hn, h)
                if c is not None:
                    cn = xp.where(m, cn, c)
            else:
                y[t] = hn
            hs[t] = hn
            h = hs[t]
            if c is not None:
                r[('c', key)][t] = cn
                c = r[('c', key)][t]

    @staticmethod
    def _gate_scale(xp, H, dtype):
        """Per-column factors of the LSTM gate block (i, f, g, o): 0.5 for the sigmoid gates
        (sigmoid(a) = (tanh(a/2) + 1) / 2), 1 for g, and the offsets 0.5 and 0."""
        scale = xp.full((4 * H,), 0.5, dtype=dtype)
        scale[2 * H:3 * H] = 1
        offset = xp.full((4 * H,), 0.5, dtype=dtype)
        offset[2 * H:3 * H] = 0
        return scale, offset

    def _forward_lstm(self, xp, lay, r, key, gx, wh, h0, c0, y, reverse):
        """The plain LSTM's time loop: ten array calls a step, no allocation.

        The sigmoid gates' halving (exact in binary floating point) is folded into the
        recurrent weights and the input projections, so one ``tanh`` over the whole gate
        block and one multiply-add give all four activations, bit for bit as
        ``_sigmoid`` and ``tanh`` gate by gate."""
        T, N, H = lay.T, lay.N, lay.H
        gates, hs, cs, tcs = r[('gates', key)], r[('h', key)], r[('c', key)], r[('tc', key)]
        scale, offset = self._gate_scale(xp, H, gx.dtype)
        gx *= scale
        whs_t = xp.ascontiguousarray((wh * scale[:, None]).T)    # (P, 4H): a faster GEMM
        tmp = xp.empty((N, H), dtype=gx.dtype)
        h, c = h0, c0
        for t in (range(T - 1, -1, -1) if reverse else range(T)):
            a = gates[t]
            xp.matmul(h, whs_t, out=a)
            a += gx[t]
            xp.tanh(a, out=a)
            a *= scale
            a += offset
            ct = cs[t]
            xp.multiply(a[:, H:2 * H], c, out=ct)
            xp.multiply(a[:, :H], a[:, 2 * H:3 * H], out=tmp)
            ct += tmp
            xp.tanh(ct, out=tcs[t])
            xp.multiply(a[:, 3 * H:], tcs[t], out=hs[t])
            h, c = hs[t], ct
        y[...] = hs

    def _backward_lstm(self, xp, lay, r, key, wh, c0, dy, dh, dc, dgx, reverse):
        """Backward through time of the plain LSTM into ``dgx`` (T, N, 4H): every factor
        that does not depend on the incoming gradients is computed for all steps at once
        before the loop, which then makes seven array calls a step."""
        T, N, H = lay.T, lay.N, lay.H
        gates, cs, tcs = r[('gates', key)], r[('c', key)], r[('tc', key)]
        dt = dy.dtype
        i, f, g, o = (gates[:, :, k * H:(k + 1) * H] for k in range(4))
        if reverse:
            c_prev = xp.concatenate([cs[1:], c0[None]], axis=0)
        else:
            c_prev = xp.concatenate([c0[None], cs[:-1]], axis=0)
        # d gate pre-activations = dct * k (i, f, g) or dh * ao (o); dct = dh * b + dc
        k3 = xp.empty((T, N, 3, H), dtype=dt)
        one_minus = xp.subtract(1, i, dtype=dt)
        xp.multiply(i, one_minus, out=k3[:, :, 0])
        k3[:, :, 0] *= g
        xp.subtract(1, f, out=one_minus)
        xp.multiply(f, one_minus, out=k3[:, :, 1])
        k3[:, :, 1] *= c_prev
        xp.multiply(g, g, out=one_minus)
        xp.subtract(1, one_minus, out=one_minus)
        xp.multiply(i, one_minus, out=k3[:, :, 2])
        ao = xp.subtract(1, o, dtype=dt)
        ao *= o
        ao *= tcs
        b = xp.multiply(tcs, tcs, dtype=dt)
        xp.subtract(1, b, out=b)
        b *= o
        dgx4 = dgx.reshape(T, N, 4, H)
        steps = list(range(T) if reverse else range(T - 1, -1, -1))
        dht = xp.empty((N, H), dtype=dt)
        if dh is None:
            dht[...] = dy[steps[0]]
        else:
            xp.add(dh, dy[steps[0]], out=dht)
        dcn = xp.zeros((N, H), dtype=dt) if dc is None else dc.astype(dt, copy=True)
        dct = xp.empty((N, H), dtype=dt)
        for j, t in enumerate(steps):
            xp.multiply(dht, b[t], out=dct)
            dct += dcn
            xp.multiply(k3[t], dct[:, None, :], out=dgx4[t, :, :3])
            xp.multiply(dht, ao[t], out=dgx4[t, :, 3])
            xp.multiply(dct, f[t], out=dcn)
            xp.matmul(dgx[t], wh, out=dht)
            if j + 1 < T:
                dht += dy[steps[j + 1]]
        return dht, dcn

    def _backward_onednn(self, lay, out_grads, inputs, outputs, need, state):
        """The gradients from oneDNN's RNN primitives (float32), or None where they
        decline."""
        kernel = cpu_kernel('rnn_backward')
        if kernel is None:
            return None
        x, w, hx = inputs[0], inputs[1], inputs[2]
        is_lstm = self.mode == 'lstm'
        cx = inputs[3] if is_lstm else None
        got = None if state is None else state.get(outputs[0], x)
        if got is not None and got[4] is not None:
            # a bfloat16 forward computed in float32 (see _forward_onednn): its copies
            x, w, hx = got[4][0], got[4][1], got[4][2]
            cx = got[4][3] if is_lstm else None
        elif got is None:
            # the forward that made the outputs kept nothing (an inference forward, or
            # another Step's): oneDNN's training forward again, for its workspaces, with
            # the dropout masks the forward left in the reserve
            masks = None
            if lay.dropout:
                r = lay.views(outputs[-1])
                masks = [None] + [r[('mask', l)].astype(np.float32)
                                  for l in range(1, lay.L)]
            fwd = cpu_kernel('rnn_forward')(self.mode, x, w, hx, cx, lay.H, lay.L, lay.D,
                                            True, None, self.projection_size, masks)
            if fwd is None:
                return None
            got = (fwd[3], fwd[1], fwd[2], masks, None)
        kept, hy, cy, masks, _ = got
        if kept[-1][1] is None:         # (a kept training forward's: its output)
            kept = kept[:-1] + [(kept[-1][0], outputs[0], kept[-1][2])]
        dhy = dcy = None
        if self.state_outputs:
            dhy = out_grads[1]
            dcy = out_grads[2] if is_lstm else None
        dy = out_grads[0]
        dy = np.zeros(outputs[0].shape, np.float32) if dy is None else dy
        res = kernel(self.mode, x, w, hx, cx, lay.H, lay.L, lay.D, kept, hy, cy, dy, dhy,
                     dcy, self.projection_size, masks)
        if res is None:
            return None
        grads = [g if nd else None for g, nd in zip(res[:3], need)]
        if is_lstm:
            grads.append(res[3] if need[3] else None)
        if self.use_sequence_length:
            grads.append(np.zeros_like(inputs[-1]) if need[-1] else None)
        return grads

    def backward(self, xp, out_grads, inputs, outputs, aux, need, state=None):
        x, w, hx = inputs[0], inputs[1], inputs[2]
        is_lstm = self.mode == 'lstm'
        cx = inputs[3] if is_lstm else None
        T, N, C = x.shape
        lay = _Layout(self, T, N, C)
        if self._onednn(xp, lay, inputs):
            got = self._backward_onednn(lay, out_grads, inputs, outputs, need, state)
            if got is not None:
                return _narrow_grads(got, inputs)
            if not is_bfloat16(x.dtype):
                # the forward may have run on oneDNN, which leaves the reserve unwritten
                # but for its dropout masks
                masks = None
                if lay.dropout:
                    r = lay.views(outputs[-1])
                    masks = [None] + [r[('mask', l)] for l in range(1, lay.L)]
                outputs = self._forward_numpy(xp, lay, inputs, True, masks)
        if is_bfloat16(x.dtype):
            # float32 on widened copies, the gradients rounded to the inputs' type
            return _narrow_grads(self.backward(xp, _widen(out_grads), _widen(inputs),
                                               _widen(outputs), aux, need), inputs)
        r = lay.views(outputs[-1])
        params = lay.split_params(w)
        mask = self._lengths_mask(xp, inputs, T, N)
        dw = xp.zeros_like(w)
        dparams = lay.split_params(dw)
        dhx = xp.zeros_like(hx)
        dcx = xp.zeros_like(cx) if is_lstm else None
        dy = out_grads[0]
        dy = xp.zeros(outputs[0].shape, x.dtype) if dy is None else dy
        dhy = dcy = None
        if self.state_outputs:
            dhy = out_grads[1]
            dcy = out_grads[2] if is_lstm else None
        dx = None
        for l in range(lay.L - 1, -1, -1):
            inp = x if l == 0 else r[('x', l)]
            dinp = xp.zeros(inp.shape, dtype=x.dtype) if (l > 0 or need[0]) else None
            for d in range(lay.D):
                k = l * lay.D + d
                dyk = dy[:, :, d * lay.P:(d + 1) * lay.P]
                if mask is not None:
                    dyk = xp.where(mask, dyk, 0)
                dh = None if dhy is None else dhy[k]
                dc = None if dcy is None else dcy[k]
                dh0, dc0 = self._backward_dir(
                    xp, lay, r, (l, d), inp, params[k], dparams[k], hx[k],
                    None if cx is None else cx[k], mask, dyk, dh, dc, dinp)
                dhx[k] = dh0
                if is_lstm:
                    dcx[k] = dc0
            if l > 0:
                dy = dinp * r[('mask', l)] if lay.dropout else dinp
            else:
                dx = dinp
        grads = [dx if need[0] else None, dw if need[1] else None,
                 dhx if need[2] else None]
        if is_lstm:
            grads.append(dcx if need[3] else None)
        if self.use_sequence_length:
            grads.append(xp.zeros_like(inputs[-1]) if need[-1] else None)
        return grads

    def _backward_dir(self, xp, lay, r, key, x, params, dparams, h0, c0, mask, dy, dh, dc,
                      dx_out):
        """Backward through time of one direction; accumulates into ``dparams`` and
        ``dx_out``; returns the gradients of the initial states."""
        (wx, wh, *wr), (bx, bh) = params
        (dwx, dwh, *dwr), (dbx, dbh) = dparams
        T, N, H, G = lay.T, lay.N, lay.H, lay.G
        gates, hs = r[('gates', key)], r[('h', key)]
        reverse = key[1] == 1
        is_lstm, is_gru = lay.mode == 'lstm', lay.mode == 'gru'
        dh = xp.zeros(h0.shape, dtype=dy.dtype) if dh is None else dh
        if is_lstm:
            cs = r[('c', key)]
            dc = xp.zeros(c0.shape, dtype=dy.dtype) if dc is None else dc
        dgx = xp.empty((T, N, G * H), dtype=dy.dtype)
        dgh = xp.empty((T, N, G * H), dtype=dy.dtype) if is_gru else dgx
        if lay.fast and mask is None:
            dh, dc = self._backward_lstm(xp, lay, r, key, wh, c0, dy, dh, dc, dgx, reverse)
            steps = ()
        else:
            steps = range(T) if reverse else range(T - 1, -1, -1)
        lo, hi = self.lstm_state_clip_min, self.lstm_state_clip_max
        for t in steps:
            tp = t + 1 if reverse else t - 1     # the step that came before
            first = tp < 0 or tp >= T
            h_prev = h0 if first else hs[tp]
            m = None if mask is None else mask[t]
            dcarry = dh + dy[t]         # the gradient of the state carried out of step t
            dht = dcarry
            a = gates[t]
            da = dgx[t]
            if is_lstm:
                c_prev = c0 if first else cs[tp]
                if lay.proj:
                    dwr[0] += (dht if m is None else dht * m).T @ r[('hh', key)][t]
                    dht = dht @ wr[0]
                i, f, g, o = a[:, :H], a[:, H:2 * H], a[:, 2 * H:3 * H], a[:, 3 * H:]
                tc = xp.tanh(cs[t])
                dct = dc + dht * o * (1 - tc * tc)
                if lay.clip:
                    craw = r[('craw', key)][t]
                    dct = dct * ((craw > lo) & (craw < hi))
                da[:, 3 * H:] = dht * tc * o * (1 - o)
                da[:, :H] = dct * g * i * (1 - i)
                da[:, H:2 * H] = dct * c_prev * f * (1 - f)
                da[:, 2 * H:3 * H] = dct * i * (1 - g * g)
                dc_new = dct * f
            elif is_gru:
                rr, z, n = a[:, :H], a[:, H:2 * H], a[:, 2 * H:]
                dn = dht * (1 - z) * (1 - n * n)
                da[:, 2 * H:] = dn
                dgh[t, :, 2 * H:] = dn * rr
                da[:, :H] = dn * r[('ghn', key)][t] * rr * (1 - rr)
                da[:, H:2 * H] = dht * (h_prev - n) * z * (1 - z)
                dgh[t, :, :2 * H] = da[:, :2 * H]
            else:
                hcur = hs[t]
                if lay.mode == 'rnn_tanh':
                    xp.multiply(dht, 1 - hcur * hcur, out=da)
                else:
                    xp.multiply(dht, hcur > 0, out=da)
            dh_new = dgh[t] @ wh
            if is_gru:
                dh_new += dht * z
            if m is not None:
                da *= m
                if is_gru:
                    dgh[t] *= m
                dh_new = xp.where(m, dh_new, dcarry)
                if is_lstm:
                    dc_new = xp.where(m, dc_new, dc)
            dh = dh_new
            if is_lstm:
                dc = dc_new
        # the gradients of the weights for all steps at once
        if reverse:
            hprev = xp.concatenate([hs[1:], h0[None]], axis=0)
        else:
            hprev = xp.concatenate([h0[None], hs[:-1]], axis=0)
        dgx2, dgh2 = dgx.reshape(T * N, G * H), dgh.reshape(T * N, G * H)
        dwx += dgx2.T @ x.reshape(T * N, -1)
        dwh += dgh2.T @ hprev.reshape(T * N, -1)
        db = dgx2.sum(axis=0)
        dbx += db
        dbh += db if dgh is dgx else dgh2.sum(axis=0)
        if dx_out is not None:
            dx_out[:, :, :] += (dgx2 @ wx).reshape(T, N, -1)
        return dh, (dc if is_lstm else None)


@register
class RNNParamConcat(Operator):
    """Concatenate RNN parameters (Gluon's fused layers export this); like ``Concat``, but
    shape inference fills one or two inputs of unknown size from the output's size."""

    name = '_rnn_param_concat'
    aliases = ('_npi_rnn_param_concat',)
    num_args = Param(int, doc='number of inputs to concatenate', minimum=1)
    dim = Param(int, 1, doc='the axis to concatenate along')
    needs_inputs = True

    def list_arguments(self):
        return ['arg%d' % i for i in range(self.num_args)]

    def _axis(self, ndim):
        a = self.dim + ndim if self.dim < 0 else self.dim
        if not 0 <= a < ndim:
            raise ShapeError('%s: dim %d is out of range for %d dimensions'
                             % (self.name, self.dim, ndim))
        return a

    infer_shape_uses_outputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        shapes = list(in_shapes[:self.num_args])
        out = out_shapes[0] if out_shapes else None
        ref = next((s for s in shapes + [out] if s is not None), None)
        if ref is None:
            return shapes, [None], []
        ax = self._axis(len(ref))
        common = tuple(0 if i == ax else v for i, v in enumerate(ref))
        for i, s in enumerate(shapes + [out]):
            if s is None:
                continue
            try:
                common = unify_shape(common, tuple(0 if j == ax else v
                                                   for j, v in enumerate(s)))
            except ShapeError:
                what = 'arg%d' % i if i < len(shapes) else 'output'
                raise ShapeError('%s: %r has shape %s, incompatible with %s (all dimensions '
                                 'but dim=%d must agree)'
                                 % (self.name, what, tuple(s), common, ax)) from None
        sizes = [0 if s is None else s[ax] for s in shapes]
        unknown = [i for i, v in enumerate(sizes) if not v]
        total = sum(sizes)
        if out is not None and out[ax] and unknown:
            residual = out[ax] - total
            if residual <= 0 or len(unknown) > 2:
                raise ShapeError('%s: cannot infer the sizes of inputs %s from the output %s '
                                 '(the known inputs already sum to %d)'
                                 % (self.name, ['arg%d' % i for i in unknown], tuple(out),
                                    total))
            for i in unknown:
                sizes[i] = residual // len(unknown)
            unknown, total = [], out[ax]
        elif out is not None and out[ax] and total != out[ax]:
            raise ShapeError('%s: the inputs sum to %d along dim %d but the output has %d'
                             % (self.name, total, ax, out[ax]))
        shapes = [common[:ax] + (v,) + common[ax + 1:] for v in sizes]
        return shapes, [common[:ax] + (0 if unknown else total,) + common[ax + 1:]], []

    def infer_type(self, in_types):
        t = next((x for x in in_types if x is not None), None)
        if t is None:
            return list(in_types), [None], []
        t = np_dtype(t)
        for i, x in enumerate(in_types):
            if x is not None and np_dtype(x) != t:
                raise TypeInferenceError('%s: input %r has type %s but %s was expected'
                                         % (self.name, 'arg%d' % i, np_dtype(x).name,
                                            t.name))
        return [t] * len(in_types), [t], []

    def forward(self, xp, inputs, aux, is_train):
        return [xp.concatenate(inputs, axis=self._axis(inputs[0].ndim))]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        g = out_grads[0]
        ax = self._axis(g.ndim)
        grads, pos = [], 0
        for x, nd in zip(inputs, need):
            n = x.shape[ax]
            idx = (slice(None),) * ax + (slice(pos, pos + n),)
            grads.append(g[idx] if nd else None)
            pos += n
        return grads
