"""ONNX converter of the fused ``RNN`` operator: one ONNX LSTM, GRU or RNN node per
layer (both directions in one node), MXNet's packed parameter vector split into ONNX's
W, R and B with the gates reordered.

MXNet packs every weight first (layer by layer, direction by direction: ``i2h`` (G*H, in),
``h2h`` (G*H, H)), then every bias in the same order (``i2h`` (G*H,), ``h2h`` (G*H,)).
Gate blocks: MXNet's LSTM is (i, f, g, o), ONNX's (i, o, f, c); MXNet's GRU is (r, z, n),
ONNX's (z, r, h) with ``linear_before_reset=1`` (MXNet applies the reset gate to
``Wh_n h + b_hn``). ``p`` (dropout between layers) acts in training only and is dropped;
``use_sequence_length`` becomes ONNX's ``sequence_lens`` (outputs past a length are 0 and
the states are those of the last valid step in both). Not expressible: LSTM projection
(LSTMP; ONNX's LSTM has none) and ``lstm_state_clip_*`` (ONNX's ``clip`` bounds the gates'
inputs, not the cell state) are export errors. The hidden ``reserve`` output (the
gradient's workspace) is not exported.
"""
import numpy as np

from ._convert_misc import cast, i64, reshape, slice_axis, unsqueeze
from ._registry import converter

__all__ = []

#: ONNX node, gates per step, MXNet's gate block for each ONNX block
_MODES = {'lstm': ('LSTM', 4, (0, 3, 1, 2)), 'gru': ('GRU', 3, (1, 0, 2)),
          'rnn_tanh': ('RNN', 1, (0,)), 'rnn_relu': ('RNN', 1, (0,))}


class _Packed:
    """The packed parameter vector: a NumPy array when the export's params give it
    (split here into initializers), else an ONNX tensor (split by Slice nodes)."""

    def __init__(self, g, node):
        self.g = g
        self.value = g.param_of(node, 1)
        self.name = g.inputs(node)[1]
        self.pos = 0

    def take(self, shape, order, gh):
        """The next ``prod(shape)`` values as ``shape`` with the gate blocks (each
        ``gh`` rows) in ``order``; an ONNX tensor of shape (1,) + shape."""
        g = self.g
        size = int(np.prod(shape))
        start, self.pos = self.pos, self.pos + size
        rows = np.concatenate([np.arange(b * gh, (b + 1) * gh) for b in order])
        if self.value is not None:
            part = np.asarray(self.value).reshape(-1)[start:start + size].reshape(shape)
            return g.const(part[rows][None])
        part = reshape(g, slice_axis(g, self.name, 0, start, start + size), list(shape))
        part = g.add('Gather', [part, g.const(rows.astype(np.int64))], axis=0)[0]
        return unsqueeze(g, part, [0])


def _layers(g, node, layout):
    """``[(W, R, B)]`` per layer, each (D, ...) as ONNX wants them."""
    mode, L, D, H, C = layout
    op, G, order = _MODES[mode]
    packed = _Packed(g, node)
    weights = []
    for layer in range(L):
        size_in = C if layer == 0 else D * H
        dirs = []
        for _ in range(D):
            dirs.append((packed.take((G * H, size_in), order, H),
                         packed.take((G * H, H), order, H)))
        weights.append(dirs)
    result = []
    for layer in range(L):
        biases = []
        for _ in range(D):
            bx = packed.take((G * H,), order, H)
            bh = packed.take((G * H,), order, H)
            biases.append(g.add('Concat', [bx, bh], axis=1)[0])
        cat = (lambda xs: xs[0] if len(xs) == 1 else g.add('Concat', xs, axis=0)[0])
        result.append((cat([w for w, _ in weights[layer]]),
                       cat([r for _, r in weights[layer]]), cat(biases)))
    return result


@converter('RNN')
def _rnn(g, node):
    mode = g.attr(node, 'mode')
    if g.attr(node, 'projection_size') is not None:
        g.error(node, 'LSTM projection (projection_size) is not expressible in ONNX: ONNX '
                      'LSTM has no projection of the hidden state')
    if g.attr(node, 'lstm_state_clip_min') is not None:
        g.error(node, "lstm_state_clip_min/max are not expressible in ONNX: ONNX LSTM's "
                      "clip bounds the gates' inputs, not the cell state")
    ins = g.inputs(node)
    names = node.op.list_arguments()
    x, state = ins[0], ins[names.index('state')]
    cell = ins[names.index('state_cell')] if mode == 'lstm' else None
    lengths = None
    if g.attr(node, 'use_sequence_length'):
        lengths = cast(g, ins[names.index('sequence_length')], np.int32)
    T, N, C = g.in_shape(node, 0)
    H = g.attr(node, 'state_size')
    L = g.attr(node, 'num_layers')
    D = 2 if g.attr(node, 'bidirectional') else 1
    op, _, _ = _MODES[mode]
    attrs = dict(hidden_size=H, direction='bidirectional' if D == 2 else 'forward')
    if mode == 'gru':
        attrs['linear_before_reset'] = 1
    if op == 'RNN':
        attrs['activations'] = ['Tanh' if mode == 'rnn_tanh' else 'Relu'] * D
    y = x
    hs, cs = [], []
    for layer, (w, r, b) in enumerate(_layers(g, node, (mode, L, D, H, C))):
        h0 = slice_axis(g, state, 0, layer * D, (layer + 1) * D)
        inputs = [y, w, r, b, lengths or '', h0]
        if cell is not None:
            inputs.append(slice_axis(g, cell, 0, layer * D, (layer + 1) * D))
        outs = g.add(op, inputs, 3 if cell is not None else 2, **attrs)
        # Y (T, D, N, H) -> (T, N, D * H): directions side by side, as MXNet's output
        y = g.add('Transpose', [outs[0]], perm=[0, 2, 1, 3])[0]
        y = g.add('Reshape', [y, i64(g, [0, 0, D * H])])[0]
        hs.append(outs[1])
        if cell is not None:
            cs.append(outs[2])
    out_names = g.outputs(node)
    g.add('Identity', [y], out_names[:1])
    if g.attr(node, 'state_outputs'):
        g.add('Concat', hs, out_names[1:2], axis=0)
        if cell is not None:
            g.add('Concat', cs, out_names[2:3], axis=0)
