"""ONNX converters for operators MXNet 1.9.1 could not export, or exported wrongly: the
sorts (``topk``, ``sort``, ``argsort``), the resizes (``_contrib_AdaptiveAvgPooling2D``,
``_contrib_BilinearResize2D``), the sequence operators, BERT's fused attention products,
the spatial transformer pieces, the deformable convolutions, FlowNet's Correlation and a
few tensor operators.

Each converter follows the operator's own forward in ``ops/`` (the reference the tests
compare ONNX Runtime's outputs with), not MXNet's exporter; the module also holds the
small helpers the other ``_convert_*`` files of the special operators share.
"""
import math

import numpy as np

from ._registry import CONVERTERS, converter

__all__ = []


def claim(*op_names):
    """:func:`converter` for operators outside this module set's brief (the deformable
    convolutions, SpatialTransformer, Correlation, box_iou/box_decode, PSROIPooling,
    RROIAlign): a name another
    converter module registered first keeps that converter (the core's modules load
    first), so that two modules never fight over a name at import."""
    def register(fn):
        free = [n for n in op_names if n not in CONVERTERS]
        if free:
            converter(*free)(fn)
        return fn
    return register


# ------------------------------------------------------------------------ helpers
def onnx_type(dtype):
    """The ONNX TensorProto element type of a NumPy dtype."""
    from onnx import helper
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def i64(g, values):
    """An int64 initializer (a 1-D list or a scalar)."""
    return g.const(np.asarray(values, dtype=np.int64), name='ints')


def scalar(g, value, dtype):
    """A 0-d tensor of ``dtype`` (a Constant node: initializers made by ``g.const`` pass
    through ``np.ascontiguousarray``, which makes 0-d arrays 1-d)."""
    return g.add('Constant', [], value=np.asarray(value, dtype=np.dtype(dtype)))[0]


def unsqueeze(g, x, axes):
    return g.add('Unsqueeze', [x, i64(g, list(axes))])[0]


def squeeze(g, x, axes):
    return g.add('Squeeze', [x, i64(g, list(axes))])[0]


def reshape(g, x, shape):
    return g.add('Reshape', [x, i64(g, list(shape))])[0]


def cast(g, x, dtype):
    return g.add('Cast', [x], to=onnx_type(dtype))[0]


def reduce(g, op, x, axes, keepdims=1):
    """``Reduce*`` over ``axes``: ReduceSum takes its axes as an input from opset 13, the
    others from opset 18 (an attribute before)."""
    if op == 'ReduceSum' or g.opset >= 18:
        return g.add(op, [x, i64(g, list(axes))], keepdims=keepdims)[0]
    return g.add(op, [x], axes=list(axes), keepdims=keepdims)[0]


def slice_axis(g, x, axis, start, end, step=1):
    return g.add('Slice', [x, i64(g, [start]), i64(g, [end]), i64(g, [axis]),
                           i64(g, [step])])[0]


def dim(g, x, axis):
    """Dimension ``axis`` of ``x`` as an int64 tensor of shape (1,) (symbolic)."""
    shape = g.add('Shape', [x])[0]
    return g.add('Gather', [shape, i64(g, [axis])], axis=0)[0]


def batch_shape(g, x, known, axes_from_x=1):
    """A shape tensor: the first ``axes_from_x`` dimensions of ``x`` (symbolic where the
    export is dynamic), then the ints ``known``."""
    if not g.dynamic:
        return None
    shape = g.add('Shape', [x])[0]
    head = g.add('Slice', [shape, i64(g, [0]), i64(g, [axes_from_x]), i64(g, [0])])[0]
    return g.add('Concat', [head, i64(g, list(known))], axis=0)[0]


def dynamic_reshape(g, x, shape, like=None, lead=1):
    """Reshape ``x`` to ``shape``; with a dynamic export the first ``lead`` dimensions are
    taken from ``like`` (``x`` when None) at run time."""
    if g.dynamic:
        target = batch_shape(g, like or x, shape[lead:], lead)
        return g.add('Reshape', [x, target])[0]
    return reshape(g, x, shape)


def output(g, node, k, value):
    """Make ``value`` the node's output ``k`` (an Identity under the output's name)."""
    g.add('Identity', [value], [g.outputs(node)[k]])


def fill_like(g, x, value, dtype):
    """An array of the shape of ``x`` filled with ``value`` of ``dtype``."""
    shape = g.add('Shape', [x])[0]
    return g.add('ConstantOfShape', [shape], value=np.asarray([value], np.dtype(dtype)))[0]


def axis_of(axis, ndim):
    return axis + ndim if axis < 0 else axis


# -------------------------------------------------------------------------- sorting
def _sorted(g, node, largest):
    """(values, int64 indices, axis, viewed x) of a full or top-k sort along the axis."""
    x, = g.inputs(node)[:1]
    shape = g.in_shape(node, 0)
    axis = g.attr(node, 'axis', -1)
    if axis is None:
        x = reshape(g, x, [-1])
        axis, n = 0, int(np.prod(shape))
    else:
        axis = axis_of(axis, len(shape))
        n = shape[axis]
    k = n
    if node.op.name == 'topk' and g.attr(node, 'k') >= 1:
        k = g.attr(node, 'k')
    if g.in_dtype(node, 0).kind in 'ub':
        g.error(node, 'ONNX TopK does not sort %s data' % g.in_dtype(node, 0).name)
    values, idx = g.add('TopK', [x, i64(g, [k])], 2, axis=axis, largest=int(largest),
                        sorted=1)
    return values, idx, axis, x


@converter('topk')
def _topk(g, node):
    """TopK (stable for ties, as ours: ONNX takes the lower index first); 'mask' scatters
    ones at the selected positions."""
    ret = g.attr(node, 'ret_typ')
    values, idx, axis, x = _sorted(g, node, not g.attr(node, 'is_ascend'))
    outs = g.outputs(node)
    dtype = g.attr(node, 'dtype')
    if ret == 'indices':
        g.add('Cast', [idx], [outs[0]], to=onnx_type(dtype))
    elif ret == 'value':
        g.add('Identity', [values], [outs[0]])
        g.add('Identity', [idx], [outs[1]])
    elif ret == 'both':
        g.add('Identity', [values], [outs[0]])
        g.add('Cast', [idx], [outs[1]], to=onnx_type(dtype))
    else:   # mask
        dt = g.in_dtype(node, 0)
        zeros = fill_like(g, x, 0, dt)
        ones = fill_like(g, values, 1, dt)
        mask = g.add('ScatterElements', [zeros, idx, ones], axis=axis)[0]
        g.add('Reshape', [mask, g.add('Shape', [g.inputs(node)[0]])[0]], [outs[0]])


@converter('sort')
def _sort(g, node):
    values, idx, _, _ = _sorted(g, node, not g.attr(node, 'is_ascend'))
    outs = g.outputs(node)
    g.add('Identity', [values], [outs[0]])
    g.add('Identity', [idx], [outs[1]])


@converter('argsort')
def _argsort(g, node):
    _, idx, _, _ = _sorted(g, node, not g.attr(node, 'is_ascend'))
    g.add('Cast', [idx], g.outputs(node)[:1], to=onnx_type(g.attr(node, 'dtype')))


# --------------------------------------------------------------------------- resizes
@converter('_contrib_AdaptiveAvgPooling2D')
def _adaptive_avg_pool(g, node):
    """Two MatMuls with the averaging matrices of the exact bins [floor(i H / oh),
    ceil((i + 1) H / oh)): any sizes, dividing or not (ops/resize.py's forward)."""
    x, = g.inputs(node)
    _, _, h, w = g.in_shape(node, 0)
    _, _, oh, ow = g.out_shape(node, 0)
    dt = g.in_dtype(node, 0)

    def bins(n_in, n_out):
        o = np.arange(n_out)
        start, end = (o * n_in) // n_out, ((o + 1) * n_in + n_out - 1) // n_out
        r = np.arange(n_in)[None, :]
        hit = (r >= start[:, None]) & (r < end[:, None])
        return hit.astype(dt) / (end - start)[:, None].astype(dt)
    rows = g.add('MatMul', [g.const(bins(h, oh)), x])[0]
    g.add('MatMul', [rows, g.const(bins(w, ow).T.copy())], g.outputs(node)[:1])


@converter('_contrib_BilinearResize2D')
def _bilinear_resize(g, node):
    """ONNX Resize (linear): align_corners=True is 'align_corners'; False is MXNet's
    ``(o + 0.5) * in / out - 0.5`` clamped at 0 with position 0 for a single output,
    which is 'pytorch_half_pixel'."""
    x = g.inputs(node)[0]
    _, _, oh, ow = g.out_shape(node, 0)
    mode = 'align_corners' if g.attr(node, 'align_corners') else 'pytorch_half_pixel'
    shape = g.add('Shape', [x])[0]
    head = g.add('Slice', [shape, i64(g, [0]), i64(g, [2]), i64(g, [0])])[0]
    sizes = g.add('Concat', [head, i64(g, [oh, ow])], axis=0)[0]
    g.add('Resize', [x, '', '', sizes], g.outputs(node)[:1], mode='linear',
          coordinate_transformation_mode=mode)


# ------------------------------------------------------------------ sequence operators
def _lengths(g, node, lo=None):
    """(batch,) int64 lengths (truncated toward zero as MXNet's cast), clipped to
    [lo, max_len] when ``lo`` is given."""
    ln = cast(g, g.inputs(node)[1], np.int64)
    if lo is None:
        return ln
    n = g.in_shape(node, 0)[g.attr(node, 'axis')]
    return g.add('Clip', [ln, i64(g, lo), i64(g, n)])[0]


@converter('SequenceMask')
def _sequence_mask(g, node):
    x = g.inputs(node)[0]
    out = g.outputs(node)[:1]
    if not g.attr(node, 'use_sequence_length'):
        g.add('Identity', [x], out)
        return
    shape = g.in_shape(node, 0)
    axis = g.attr(node, 'axis')
    pos = i64(g, np.arange(shape[axis]))
    ln = _lengths(g, node)
    if axis == 0:
        m = g.add('Less', [unsqueeze(g, pos, [1]), unsqueeze(g, ln, [0])])[0]
    else:
        m = g.add('Less', [unsqueeze(g, pos, [0]), unsqueeze(g, ln, [1])])[0]
    if len(shape) > 2:
        m = unsqueeze(g, m, range(2, len(shape)))
    value = scalar(g, g.attr(node, 'value'), g.in_dtype(node, 0))
    g.add('Where', [m, x, value], out)


@converter('SequenceLast')
def _sequence_last(g, node):
    x = g.inputs(node)[0]
    out = g.outputs(node)[:1]
    shape = g.in_shape(node, 0)
    axis = g.attr(node, 'axis')
    if not g.attr(node, 'use_sequence_length'):
        g.add('Gather', [x, scalar(g, shape[axis] - 1, np.int64)], out, axis=axis)
        return
    if axis == 0:
        x = g.add('Transpose', [x], perm=[1, 0] + list(range(2, len(shape))))[0]
    idx = g.add('Sub', [_lengths(g, node, 1), i64(g, 1)])[0]
    g.add('GatherND', [x, unsqueeze(g, idx, [1])], out, batch_dims=1)


@converter('SequenceReverse')
def _sequence_reverse(g, node):
    x = g.inputs(node)[0]
    out = g.outputs(node)[:1]
    if not g.attr(node, 'use_sequence_length'):
        g.add('Slice', [x, i64(g, [-1]), i64(g, [-(2 ** 63)]), i64(g, [0]), i64(g, [-1])],
              out)
        return
    g.add('ReverseSequence', [x, _lengths(g, node, 0)], out, batch_axis=1, time_axis=0)


# ------------------------------------------------------------- BERT's fused attention
def _heads_view(g, x, shape, heads, parts):
    """(seq, batch, heads, parts, head_dim) view of an interleaved projection."""
    s, b, e = shape
    return reshape(g, x, [s, b, heads, parts, e // (heads * parts)]), e // (heads * parts)


def _part(g, x5, k):
    """Part ``k`` of a (seq, batch, heads, parts, d) view: (batch, heads, seq, d)."""
    p = g.add('Gather', [x5, scalar(g, k, np.int64)], axis=3)[0]
    return g.add('Transpose', [p], perm=[1, 2, 0, 3])[0]


def _scaled_scores(g, node, q, k, d, dt):
    """(batch * heads, sq, sk) of ``q / sqrt(d)`` against ``k`` (both (b, h, s, d))."""
    q = g.add('Mul', [q, scalar(g, 1.0 / math.sqrt(d), dt)])[0]
    kt = g.add('Transpose', [k], perm=[0, 1, 3, 2])[0]
    scores = g.add('MatMul', [q, kt])[0]
    _, sq, sk = g.out_shape(node, 0)
    g.add('Reshape', [scores, i64(g, [-1, sq, sk])], g.outputs(node)[:1])


def _apply_attention(g, node, att, v, att_shape):
    """attention (b * h, sq, sk) to values (b, h, sk, d): (sq, b, h * d)."""
    heads = g.attr(node, 'heads')
    a = reshape(g, att, [-1, heads, att_shape[1], att_shape[2]])
    out = g.add('MatMul', [a, v])[0]                       # (b, h, sq, d)
    out = g.add('Transpose', [out], perm=[2, 0, 1, 3])[0]   # (sq, b, h, d)
    g.add('Reshape', [out, i64(g, [0, 0, -1])], g.outputs(node)[:1])


@converter('_contrib_interleaved_matmul_selfatt_qk')
def _selfatt_qk(g, node):
    x5, d = _heads_view(g, g.inputs(node)[0], g.in_shape(node, 0), g.attr(node, 'heads'), 3)
    _scaled_scores(g, node, _part(g, x5, 0), _part(g, x5, 1), d, g.in_dtype(node, 0))


@converter('_contrib_interleaved_matmul_selfatt_valatt')
def _selfatt_valatt(g, node):
    x, att = g.inputs(node)
    x5, _ = _heads_view(g, x, g.in_shape(node, 0), g.attr(node, 'heads'), 3)
    _apply_attention(g, node, att, _part(g, x5, 2), g.in_shape(node, 1))


@converter('_contrib_interleaved_matmul_encdec_qk')
def _encdec_qk(g, node):
    q, kv = g.inputs(node)
    heads = g.attr(node, 'heads')
    q5, d = _heads_view(g, q, g.in_shape(node, 0), heads, 1)
    kv5, _ = _heads_view(g, kv, g.in_shape(node, 1), heads, 2)
    _scaled_scores(g, node, _part(g, q5, 0), _part(g, kv5, 0), d, g.in_dtype(node, 0))


@converter('_contrib_interleaved_matmul_encdec_valatt')
def _encdec_valatt(g, node):
    kv, att = g.inputs(node)
    kv5, _ = _heads_view(g, kv, g.in_shape(node, 0), g.attr(node, 'heads'), 2)
    _apply_attention(g, node, att, _part(g, kv5, 1), g.in_shape(node, 1))


@converter('_contrib_div_sqrt_dim')
def _div_sqrt_dim(g, node):
    x, = g.inputs(node)
    dt = g.in_dtype(node, 0)
    if dt.kind in 'iu':
        g.error(node, 'integer data: ONNX Div rounds integer quotients differently from '
                      "MXNet's truncation of data / sqrt(dim)")
    root = scalar(g, math.sqrt(g.in_shape(node, 0)[-1]), dt)
    g.add('Div', [x, root], g.outputs(node)[:1])


@converter('_contrib_arange_like')
def _arange_like(g, node):
    """A constant: the values depend on the (static) shape only."""
    shape = g.out_shape(node, 0)
    dt = g.out_dtype(node, 0)
    start, step = g.attr(node, 'start'), g.attr(node, 'step')
    if dt == np.float16:
        start, step = math.trunc(start), math.trunc(step)
    if g.dynamic and g.attr(node, 'axis') is None:
        g.error(node, 'arange_like over the whole data has the shape of the data; '
                      'export it with dynamic=False (or give axis)')
    k = (np.arange(int(np.prod(shape)), dtype=np.int64) // g.attr(node, 'repeat')).astype(dt)
    value = (dt.type(start) + k * dt.type(step)).astype(dt).reshape(shape)
    g.add('Identity', [g.const(value)], g.outputs(node)[:1])


# ---------------------------------------------------------------- tensor operators
@converter('erfinv')
def _erfinv(g, node):
    """No ONNX operator: Giles' single-precision approximation ("Approximating the erfinv
    function", GPU Computing Gems, 2011) refined by two Newton steps on ONNX Erf, in
    float32 (float64 data too: ONNX Runtime has no float64 Erf, so float64 results are
    good to float32 precision only); +-1 gives +-inf and |x| > 1 NaN as in MXNet."""
    x, = g.inputs(node)
    dt = g.in_dtype(node, 0)
    if dt.kind != 'f':
        g.error(node, 'erfinv of %s data' % dt.name)
    # float32 throughout: ONNX Runtime has no float64 Erf (float64 data is rounded)
    work = np.float32
    if dt != work:
        x = cast(g, x, work)

    def c(v):
        return scalar(g, v, work)

    def poly(t, coeffs):
        acc = c(coeffs[0])
        for a in coeffs[1:]:
            acc = g.add('Add', [g.add('Mul', [acc, t])[0], c(a)])[0]
        return acc
    one = c(1.0)
    # w = -log((1 - x) (1 + x)), clamped so that the log stays finite inside (-1, 1)
    prod = g.add('Mul', [g.add('Sub', [one, x])[0], g.add('Add', [one, x])[0]])[0]
    prod = g.add('Max', [prod, c(np.finfo(work).tiny)])[0]
    w = g.add('Neg', [g.add('Log', [prod])[0]])[0]
    small = g.add('Less', [w, c(5.0)])[0]
    ws = g.add('Sub', [w, c(2.5)])[0]
    wl = g.add('Sub', [g.add('Sqrt', [w])[0], c(3.0)])[0]
    ps = poly(ws, [2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                   0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941])
    pl = poly(wl, [-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                   0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682])
    y = g.add('Mul', [g.add('Where', [small, ps, pl])[0], x])[0]
    two_over_root_pi = c(2.0 / math.sqrt(math.pi))
    for _ in range(2):
        # Newton: y -= (erf(y) - x) / (2/sqrt(pi) exp(-y^2))
        err = g.add('Sub', [g.add('Erf', [y])[0], x])[0]
        slope = g.add('Mul', [two_over_root_pi, g.add('Exp', [g.add('Neg', [
            g.add('Mul', [y, y])[0]])[0]])[0]])[0]
        y = g.add('Sub', [y, g.add('Div', [err, slope])[0]])[0]
    absx = g.add('Abs', [x])[0]
    inf = g.add('Mul', [g.add('Sign', [x])[0], c(np.inf)])[0]
    y = g.add('Where', [g.add('Equal', [absx, one])[0], inf, y])[0]
    y = g.add('Where', [g.add('Greater', [absx, one])[0], c(np.nan), y])[0]
    if dt != work:
        y = cast(g, y, dt)
    g.add('Identity', [y], g.outputs(node)[:1])


def _index_rows_last(g, node, i, wrap=False):
    """MXNet's (M, ...) index array as ONNX's (..., M) int64 one; with ``wrap`` (gather_nd)
    negative float indices count from the end before they are truncated, as the
    operator does (-1.5 on an axis of 4 is 2)."""
    idx = g.inputs(node)[i]
    shape = g.in_shape(node, i)
    nd = len(shape)
    dt = g.in_dtype(node, i)
    if wrap and dt.kind == 'f':
        m = shape[0]
        n = g.const(np.array(g.in_shape(node, 0)[:m], dt).reshape((m,) + (1,) * (nd - 1)))
        neg = g.add('Less', [idx, scalar(g, 0, dt)])[0]
        idx = g.add('Where', [neg, g.add('Add', [idx, n])[0], idx])[0]
    if dt != np.int64:
        idx = cast(g, idx, np.int64)
    if nd > 1:
        idx = g.add('Transpose', [idx], perm=list(range(1, nd)) + [0])[0]
    return idx


@converter('gather_nd')
def _gather_nd(g, node):
    data = g.inputs(node)[0]
    g.add('GatherND', [data, _index_rows_last(g, node, 1, wrap=True)], g.outputs(node)[:1])


@converter('scatter_nd')
def _scatter_nd(g, node):
    data = g.inputs(node)[0]
    shape = g.out_shape(node, 0)
    zeros = g.const(np.zeros(shape, g.in_dtype(node, 0)))
    g.add('ScatterND', [zeros, _index_rows_last(g, node, 1), data], g.outputs(node)[:1])


@converter('_linalg_gemm2')
def _gemm2(g, node):
    a, b = g.inputs(node)
    nd = len(g.in_shape(node, 0))
    axis = axis_of(g.attr(node, 'axis'), nd)
    perm = None
    if axis != nd - 2:      # the matrix rows at ``axis``, columns last: rows to -2
        perm = [i for i in range(nd - 1) if i != axis] + [axis, nd - 1]
        a = g.add('Transpose', [a], perm=perm)[0]
        b = g.add('Transpose', [b], perm=perm)[0]
    swap = list(range(nd - 2)) + [nd - 1, nd - 2]
    if g.attr(node, 'transpose_a'):
        a = g.add('Transpose', [a], perm=swap)[0]
    if g.attr(node, 'transpose_b'):
        b = g.add('Transpose', [b], perm=swap)[0]
    out = g.add('MatMul', [a, b])[0]
    alpha = g.attr(node, 'alpha')
    if alpha != 1.0:
        out = g.add('Mul', [out, scalar(g, alpha, g.in_dtype(node, 0))])[0]
    if perm is not None:
        out = g.add('Transpose', [out], perm=list(np.argsort(perm)))[0]
    g.add('Identity', [out], g.outputs(node)[:1])


@converter('diag')
def _diag(g, node):
    """Gathers with constant indices (the shape is static): a 1-D input becomes the
    k-th diagonal of a square matrix, otherwise the diagonal of axes (axis1, axis2)
    becomes the last axis."""
    x, = g.inputs(node)
    shape = g.in_shape(node, 0)
    k = g.attr(node, 'k')
    dt = g.in_dtype(node, 0)
    out = g.outputs(node)[:1]
    if len(shape) == 1:
        n = shape[0]
        m = n + abs(k)
        rows, cols = np.arange(n) + max(-k, 0), np.arange(n) + max(k, 0)
        src = np.zeros((m, m), np.int64)
        on = np.zeros((m, m), bool)
        src[rows, cols] = np.arange(n)
        on[rows, cols] = True
        vals = g.add('Gather', [x, g.const(src)], axis=0)[0]
        g.add('Where', [g.const(on), vals, scalar(g, 0, dt)], out)
        return
    nd = len(shape)
    a1 = axis_of(g.attr(node, 'axis1'), nd)
    a2 = axis_of(g.attr(node, 'axis2'), nd)
    rest = [i for i in range(nd) if i not in (a1, a2)]
    t = g.add('Transpose', [x], perm=rest + [a1, a2])[0]
    h, w = shape[a1], shape[a2]
    n = g.out_shape(node, 0)[-1]
    flat = reshape(g, t, [shape[i] for i in rest] + [h * w])
    i = np.arange(n)
    g.add('Gather', [flat, g.const(((i + max(-k, 0)) * w + i + max(k, 0)).astype(np.int64))],
          out, axis=len(rest))


@converter('argmax_channel')
def _argmax_channel(g, node):
    x, = g.inputs(node)
    idx = g.add('ArgMax', [x], axis=1, keepdims=0)[0]
    g.add('Cast', [idx], g.outputs(node)[:1], to=onnx_type(g.out_dtype(node, 0)))


@converter('Crop')
def _crop(g, node):
    x = g.inputs(node)[0]
    shape = g.in_shape(node, 0)
    _, _, h, w = g.out_shape(node, 0)
    if g.attr(node, 'center_crop'):
        y0, x0 = (shape[2] - h) // 2, (shape[3] - w) // 2
    else:
        y0, x0 = g.attr(node, 'offset')
    g.add('Slice', [x, i64(g, [y0, x0]), i64(g, [y0 + h, x0 + w]), i64(g, [2, 3])],
          g.outputs(node)[:1])


@converter('GridGenerator')
def _grid_generator(g, node):
    """'affine': a MatMul of the (N, 2, 3) matrices with the constant (3, H*W) target
    coordinates; 'warp': (flow + pixel coordinates) / ((W - 1) / 2, (H - 1) / 2) - 1."""
    x, = g.inputs(node)
    dt = g.in_dtype(node, 0)
    t = dt.type
    outs = g.outputs(node)
    if g.attr(node, 'transform_type') == 'affine':
        h, w = g.attr(node, 'target_shape')
        p = np.arange(h * w)
        with np.errstate(divide='ignore', invalid='ignore'):
            sx = t(2.0 / (w - 1)) if w > 1 else t(np.inf)
            sy = t(2.0 / (h - 1)) if h > 1 else t(np.inf)
            gx = t(-1.0) + (p % w).astype(dt) * sx
            gy = t(-1.0) + (p // w).astype(dt) * sy
        dst = np.stack([gx, gy, np.ones(h * w, dt)]).astype(dt)
        theta = reshape(g, x, [-1, 2, 3])
        grid = g.add('MatMul', [theta, g.const(dst)])[0]
        g.add('Reshape', [grid, i64(g, [-1, 2, h, w])], outs[:1])
        return
    _, _, h, w = g.in_shape(node, 0)
    cols = np.broadcast_to(np.arange(w, dtype=dt), (h, w))
    rows = np.broadcast_to(np.arange(h, dtype=dt)[:, None], (h, w))
    with np.errstate(divide='ignore', invalid='ignore'):
        scale = np.array([(t(w) - 1.0) / 2.0, (t(h) - 1.0) / 2.0], dtype=dt).reshape(1, 2, 1, 1)
    shifted = g.add('Add', [x, g.const(np.stack([cols, rows])[None].astype(dt))])[0]
    scaled = g.add('Div', [shifted, g.const(scale)])[0]
    g.add('Sub', [scaled, scalar(g, 1, dt)], outs[:1])


@converter('BilinearSampler')
def _bilinear_sampler(g, node):
    """ONNX GridSample (opset 16): bilinear, zeros outside, align_corners=1 (a grid value
    of -1 is the centre of the first pixel, as MXNet's)."""
    if g.opset < 16:
        g.error(node, 'BilinearSampler needs ONNX GridSample (opset 16 or newer; opset %d '
                      'was asked)' % g.opset)
    data, grid = g.inputs(node)[:2]
    grid = g.add('Transpose', [grid], perm=[0, 2, 3, 1])[0]
    mode = 'linear' if g.opset >= 20 else 'bilinear'
    g.add('GridSample', [data, grid], g.outputs(node)[:1], mode=mode,
          padding_mode='zeros', align_corners=1)


@converter('CTCLoss')
def _ctc_loss(g, node):
    g.error(node, 'CTCLoss is not expressible in ONNX (no CTC operator; the loss is a '
                  'dynamic program over label alignments). Export the network without '
                  'the loss: its forward up to the activations CTCLoss reads')


@claim('SpatialTransformer')
def _spatial_transformer(g, node):
    """The affine grid (target coordinates computed in double, then rounded, as MXNet's
    SpatialTransformer) and ONNX GridSample (opset 16)."""
    if g.opset < 16:
        g.error(node, 'SpatialTransformer needs ONNX GridSample (opset 16 or newer; opset %d '
                      'was asked)' % g.opset)
    data, loc = g.inputs(node)[:2]
    dt = g.in_dtype(node, 0)
    h, w = g.attr(node, 'target_shape')
    p = np.arange(h * w)
    col, row = (p % w).astype(np.float64), (p // w).astype(np.float64)
    with np.errstate(divide='ignore', invalid='ignore'):
        gx = -1.0 + col * 2.0 / (w - 1) if w > 1 else col * 2.0 / 0.0 - 1.0
        gy = -1.0 + row * 2.0 / (h - 1) if h > 1 else row * 2.0 / 0.0 - 1.0
    dst = np.stack([gx, gy, np.ones(h * w)]).astype(dt)
    grid = g.add('MatMul', [reshape(g, loc, [-1, 2, 3]), g.const(dst)])[0]
    grid = g.add('Transpose', [reshape(g, grid, [-1, 2, h, w])], perm=[0, 2, 3, 1])[0]
    g.add('GridSample', [data, grid], g.outputs(node)[:1],
          mode='linear' if g.opset >= 20 else 'bilinear', padding_mode='zeros',
          align_corners=1)


@claim('_contrib_DeformableConvolution', '_contrib_ModulatedDeformableConvolution')
def _deformable_conv(g, node):
    """ONNX DeformConv (opset 19), whose sampling is DCNv2's (ModulatedDeformable-
    Convolution's). For DeformableConvolution (v1) the offsets are adjusted first so that
    DeformConv samples as MXNet's v1 kernel: a position outside [0, H) x [0, W) is moved
    to -2 (sampled as 0), one in [H - 1, H) onto H - 1 (the last row without interpolation
    toward the outside); columns alike."""
    if g.opset < 19:
        g.error(node, 'deformable convolution needs ONNX DeformConv (opset 19 or newer; '
                      'opset %d was asked)' % g.opset)
    names = node.op.list_arguments()
    arg = dict(zip(names, g.inputs(node)))
    n, c, h, w = g.in_shape(node, 0)
    dt = g.in_dtype(node, 0)
    kh, kw = g.attr(node, 'kernel')
    sh, sw = g.attr(node, 'stride') or (1, 1)
    dh, dw = g.attr(node, 'dilate') or (1, 1)
    ph, pw = g.attr(node, 'pad') or (0, 0)
    dg = g.attr(node, 'num_deformable_group')
    _, _, ho, wo = g.out_shape(node, 0)
    offset = arg['offset']
    if node.op.name == '_contrib_DeformableConvolution':
        off = reshape(g, offset, [-1, dg, kh * kw, 2, ho, wo])
        ki, kj = np.meshgrid(np.arange(kh), np.arange(kw), indexing='ij')
        base_h = (np.arange(ho)[None, :, None] * sh - ph + ki.reshape(-1, 1, 1) * dh)
        base_w = (np.arange(wo)[None, None, :] * sw - pw + kj.reshape(-1, 1, 1) * dw)
        bases = [g.const(np.broadcast_to(b, (kh * kw, ho, wo)).astype(dt)[None, None])
                 for b in (base_h, base_w)]
        offs = [g.add('Gather', [off, scalar(g, k, np.int64)], axis=3)[0] for k in range(2)]
        pos = [g.add('Add', [b, o])[0] for b, o in zip(bases, offs)]
        zero = scalar(g, 0, dt)
        out_of = None
        for p, size in zip(pos, (h, w)):
            bad = g.add('Or', [g.add('Less', [p, zero])[0],
                               g.add('GreaterOrEqual', [p, scalar(g, size, dt)])[0]])[0]
            out_of = bad if out_of is None else g.add('Or', [out_of, bad])[0]
        fixed = []
        for p, o, b, size in zip(pos, offs, bases, (h, w)):
            last = g.add('GreaterOrEqual', [p, scalar(g, size - 1, dt)])[0]
            o = g.add('Where', [last, g.add('Sub', [scalar(g, size - 1, dt), b])[0], o])[0]
            o = g.add('Where', [out_of, g.add('Sub', [scalar(g, -2, dt), b])[0], o])[0]
            fixed.append(unsqueeze(g, o, [3]))
        offset = reshape(g, g.add('Concat', fixed, axis=3)[0], [-1, dg * 2 * kh * kw, ho, wo])
    inputs = [arg['data'], arg['weight'], offset, arg.get('bias', '')]
    if 'mask' in arg:
        inputs.append(arg['mask'])
    while inputs[-1] == '':
        inputs.pop()
    g.add('DeformConv', inputs, g.outputs(node)[:1], kernel_shape=[kh, kw],
          strides=[sh, sw], dilations=[dh, dw], pads=[ph, pw, ph, pw],
          group=g.attr(node, 'num_group'), offset_group=dg)


@claim('Correlation')
def _correlation(g, node):
    """FlowNet's correlation (no ONNX operator): for every displacement and kernel tap a
    strided Slice of each zero-padded input, their product (or absolute difference)
    summed over the channels, the taps added and divided by kernel_size**2 * channels, as
    ops/spatial.py's forward."""
    d1, d2 = g.inputs(node)[:2]
    _, c, h, w = g.in_shape(node, 0)
    _, _, th, tw = g.out_shape(node, 0)
    dt = g.in_dtype(node, 0)
    k, md = g.attr(node, 'kernel_size'), g.attr(node, 'max_displacement')
    s1, s2, p = g.attr(node, 'stride1'), g.attr(node, 'stride2'), g.attr(node, 'pad_size')
    gr = md // s2
    gw = 2 * gr + 1
    pads = i64(g, [0, 0, p, p, 0, 0, p, p])
    p1, p2 = (g.add('Pad', [x, pads])[0] if p else x for x in (d1, d2))

    def window(x, y0, x0):
        return g.add('Slice', [x, i64(g, [y0, x0]), i64(g, [y0 + (th - 1) * s1 + 1,
                                                            x0 + (tw - 1) * s1 + 1]),
                               i64(g, [2, 3]), i64(g, [s1, s1])])[0]
    first = {(i, j): window(p1, md + i, md + j) for i in range(k) for j in range(k)}
    n_sum = scalar(g, k * k * c, dt)
    chans = []
    for tc in range(gw * gw):
        dx, dy = (tc % gw - gr) * s2, (tc // gw - gr) * s2
        acc = None
        for i in range(k):
            for j in range(k):
                a, b = first[(i, j)], window(p2, md + i + dy, md + j + dx)
                v = g.add('Mul', [a, b])[0] if g.attr(node, 'is_multiply') else \
                    g.add('Abs', [g.add('Sub', [a, b])[0]])[0]
                v = reduce(g, 'ReduceSum', v, [1], keepdims=1)
                acc = v if acc is None else g.add('Add', [acc, v])[0]
        chans.append(g.add('Div', [acc, n_sum])[0])
    g.add('Concat', chans, g.outputs(node)[:1], axis=1)
