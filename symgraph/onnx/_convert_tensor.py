"""ONNX converters of the tensor-shaping and indexing operators: Reshape (all of MXNet's
codes, lowered from the inferred shape), Flatten, transpose, expand_dims, squeeze,
Concat/stack/split, the slices, Pad, tile, repeat, reverse, take/pick/one_hot/where,
the creation operators, casts, identities, shapes, broadcasts and the reductions.

After MXNet 1.9.1's ``python/mxnet/onnx/mx2onnx/_op_translations/`` for which ONNX node
each operator becomes. Where MXNet needed the input's shape at run time (Reshape's -2,
-3, -4, ``reverse=True``; slices with None bounds) the converters use symgraph's
inferred shapes; with ``dynamic=True`` the batch axis is kept symbolic where the
operator keeps it (ONNX's copy code 0).
"""
import ast

import numpy as np

from ._common import (INT64_MIN, bool_of, cast, reduce, reshape, slice_, squeeze,
                      to_shape, unsqueeze, scalar_const)
from ._registry import converter


def _one(g, node):
    return g.inputs(node)[0], g.outputs(node)[0]


# ---------------------------------------------------------------------- shapes
@converter('Reshape')
def _reshape(g, node):
    x, out = _one(g, node)
    in_shape, out_shape = g.in_shape(node, 0), g.out_shape(node, 0)
    codes = tuple(g.attr(node, 'shape') or ())
    if g.dynamic and codes and not g.attr(node, 'reverse') and all(c >= -1 for c in codes) \
            and list(codes).count(-1) <= 1:
        # MXNet's codes 0 (copy) and -1 (the rest) are ONNX's: written as given, every
        # dynamic axis (not the batch alone) stays free
        reshape(g, x, list(codes), out)
        return
    shape = list(out_shape)
    if g.dynamic and shape and in_shape:
        # the batch axis stays symbolic: copied where it stays first (ONNX's 0), else
        # the first axis takes what is left (the batch merged into it: -3, -1 codes)
        shape[0] = 0 if in_shape[0] == out_shape[0] else -1
    reshape(g, x, shape, out)


@converter('reshape_like')
def _reshape_like(g, node):
    x, y = g.inputs(node)
    out = g.outputs(node)[0]
    plain = all(g.attr(node, k) is None for k in ('lhs_begin', 'lhs_end', 'rhs_begin',
                                                  'rhs_end'))
    if plain:
        g.add('Reshape', [x, g.add('Shape', [y])[0]], [out])
    else:
        to_shape(g, x, g.out_shape(node, 0), out)


@converter('Flatten')
def _flatten(g, node):
    x, out = _one(g, node)
    g.add('Flatten', [x], [out], axis=1)


@converter('transpose')
def _transpose(g, node):
    x, out = _one(g, node)
    axes = list(g.attr(node, 'axes') or ())
    rank = len(g.in_shape(node, 0))
    perm = [a % rank for a in axes] if axes else list(range(rank))[::-1]
    g.add('Transpose', [x], [out], perm=perm)


@converter('SwapAxis')
def _swap_axis(g, node):
    x, out = _one(g, node)
    rank = len(g.in_shape(node, 0))
    perm = list(range(rank))
    a, b = g.attr(node, 'dim1') % rank, g.attr(node, 'dim2') % rank
    perm[a], perm[b] = perm[b], perm[a]
    g.add('Transpose', [x], [out], perm=perm)


@converter('expand_dims')
def _expand_dims(g, node):
    x, out = _one(g, node)
    rank = len(g.in_shape(node, 0))
    axis = g.attr(node, 'axis')
    unsqueeze(g, x, [axis % (rank + 1)], out)


@converter('squeeze')
def _squeeze(g, node):
    x, out = _one(g, node)
    shape = g.in_shape(node, 0)
    axis = g.attr(node, 'axis')
    if axis is None:
        axes = [i for i, d in enumerate(shape) if d == 1]
    else:
        axes = [a % len(shape) for a in (axis if isinstance(axis, tuple) else (axis,))]
    if len(axes) == len(shape):         # MXNet keeps a 1-element result 1-D
        reshape(g, x, [1], out)
    elif not axes:
        g.add('Identity', [x], [out])
    else:
        squeeze(g, x, axes, out)


@converter('Concat', '_rnn_param_concat')
def _concat(g, node):
    rank = len(g.in_shape(node, 0))
    g.add('Concat', g.inputs(node), g.outputs(node), axis=g.attr(node, 'dim') % rank)


@converter('stack')
def _stack(g, node):
    rank = len(g.in_shape(node, 0)) + 1
    axis = g.attr(node, 'axis') % rank
    parts = [unsqueeze(g, x, [axis]) for x in g.inputs(node)]
    g.add('Concat', parts, g.outputs(node), axis=axis)


def _split(g, node, sizes):
    x, = g.inputs(node)
    outs = g.outputs(node)
    rank = len(g.in_shape(node, 0))
    axis = g.attr(node, 'axis') % rank
    squeeze_axis = g.attr(node, 'squeeze_axis')
    split = g.const(np.array(sizes, np.int64))
    if not squeeze_axis:
        g.add('Split', [x, split], outs, axis=axis)
        return
    parts = g.add('Split', [x, split], len(outs), axis=axis)
    for p, o in zip(parts, outs):
        squeeze(g, p, [axis], o)


@converter('SliceChannel')
def _slice_channel(g, node):
    shape = g.in_shape(node, 0)
    axis = g.attr(node, 'axis') % len(shape)
    k = int(g.attr(node, 'num_outputs'))
    _split(g, node, [shape[axis] // k] * k)


@converter('_split_v2')
def _split_v2(g, node):
    shape = g.in_shape(node, 0)
    axis = g.attr(node, 'axis') % len(shape)
    sizes = [g.out_shape(node, i)[axis] if not g.attr(node, 'squeeze_axis') else 1
             for i in range(len(g.outputs(node)))]
    _split(g, node, sizes)


# ---------------------------------------------------------------------- slices
def _bounds(begin, end, step, dim):
    """ONNX Slice (start, end, step) of MXNet's slice bounds (None allowed) on ``dim``."""
    step = 1 if step is None else int(step)
    start, stop, step = slice(begin, end, step).indices(dim)
    if step < 0 and stop < 0:
        stop = INT64_MIN            # past the front: ONNX's "to the beginning"
    return start, stop, step


def _tuple(v):
    """slice's bounds: a tuple, or its MXNet text ('(0, None)')."""
    if isinstance(v, str):
        v = ast.literal_eval(v.strip() or '()')
    if v is None:
        return ()
    return tuple(v) if isinstance(v, (tuple, list)) else (v,)


@converter('slice')
def _slice(g, node):
    x, out = _one(g, node)
    shape = g.in_shape(node, 0)
    begin, end, step = (_tuple(g.attr(node, k)) for k in ('begin', 'end', 'step'))
    starts, ends, axes, steps = [], [], [], []
    for i in range(len(begin)):
        s = step[i] if i < len(step) else None
        a, b, c = _bounds(begin[i], end[i], s, shape[i])
        starts.append(a), ends.append(b), axes.append(i), steps.append(c)
    slice_(g, x, starts, ends, axes, steps, out)


@converter('slice_axis')
def _slice_axis(g, node):
    x, out = _one(g, node)
    shape = g.in_shape(node, 0)
    axis = g.attr(node, 'axis') % len(shape)
    begin, end = g.attr(node, 'begin'), g.attr(node, 'end')
    if g.dynamic and (end is None or end != 0):
        # ONNX Slice counts negative bounds from the end as MXNet does: no size folded
        # (a dynamic axis stays free); None is the end
        slice_(g, x, [begin], [np.iinfo(np.int64).max if end is None else end], [axis],
               None, out)
        return
    a, b, _ = _bounds(begin, end, 1, shape[axis])
    slice_(g, x, [a], [b], [axis], None, out)


@converter('slice_like')
def _slice_like(g, node):
    x = g.inputs(node)[0]
    out = g.outputs(node)[0]
    in_shape, out_shape = g.in_shape(node, 0), g.out_shape(node, 0)
    axes = [i for i in range(len(in_shape)) if in_shape[i] != out_shape[i]]
    if not axes:
        g.add('Identity', [x], [out])
        return
    slice_(g, x, [0] * len(axes), [out_shape[i] for i in axes], axes, None, out)


@converter('clip')
def _clip(g, node):
    x, out = _one(g, node)
    dtype = g.in_dtype(node, 0)
    lo, hi = g.attr(node, 'a_min'), g.attr(node, 'a_max')
    g.add('Clip', [x, scalar_const(g, lo, dtype), scalar_const(g, hi, dtype)], [out])


@converter('Pad')
def _pad(g, node):
    x, out = _one(g, node)
    width = list(g.attr(node, 'pad_width'))
    pads = width[0::2] + width[1::2]
    mode = g.attr(node, 'mode')
    ins = [x, g.const(np.array(pads, np.int64))]
    if mode == 'constant':
        ins.append(scalar_const(g, g.attr(node, 'constant_value'), g.in_dtype(node, 0)))
    g.add('Pad', ins, [out], mode=mode)


@converter('tile')
def _tile(g, node):
    x, out = _one(g, node)
    shape = g.in_shape(node, 0)
    reps = list(g.attr(node, 'reps'))
    if len(reps) > len(shape):
        x = reshape(g, x, [1] * (len(reps) - len(shape)) + list(shape))
    reps = [1] * (len(shape) - len(reps)) + reps
    g.add('Tile', [x, g.const(np.array(reps, np.int64))], [out])


@converter('repeat')
def _repeat(g, node):
    x, out = _one(g, node)
    shape = list(g.in_shape(node, 0))
    r = int(g.attr(node, 'repeats'))
    axis = g.attr(node, 'axis')
    if axis is None:
        x = reshape(g, x, [-1])
        shape, axis = [int(np.prod(shape))], 0
    axis %= len(shape)
    # x[..., None, ...] tiled r times then merged: each element repeated in place
    u = unsqueeze(g, x, [axis + 1])
    reps = [1] * (len(shape) + 1)
    reps[axis + 1] = r
    t = g.add('Tile', [u, g.const(np.array(reps, np.int64))])[0]
    to_shape(g, t, g.out_shape(node, 0), out)


@converter('reverse')
def _reverse(g, node):
    x, out = _one(g, node)
    rank = len(g.in_shape(node, 0))
    axis = g.attr(node, 'axis')
    axes = [a % rank for a in (axis if isinstance(axis, tuple) else (axis,))]
    # an axis named twice is reversed twice (MXNet flips once per mention)
    axes = sorted(a for a in set(axes) if axes.count(a) % 2)
    if not axes:
        g.add('Identity', [x], [out])
        return
    slice_(g, x, [-1] * len(axes), [INT64_MIN] * len(axes), axes, [-1] * len(axes), out)


# ---------------------------------------------------------------------- indexing
def _index(g, idx, dtype, size, mode):
    """Indices as int64, clipped to [0, size) or wrapped, as MXNet's ``mode`` says."""
    idx = cast(g, idx, np.int64) if np.dtype(dtype) != np.int64 else idx
    if mode == 'clip':
        return g.add('Clip', [idx, g.const(np.array(0, np.int64)),
                              g.const(np.array(size - 1, np.int64))])[0]
    if mode == 'wrap':
        return g.add('Mod', [idx, g.const(np.array(size, np.int64))])[0]
    return idx


@converter('take')
def _take(g, node):
    a, idx = g.inputs(node)
    shape = g.in_shape(node, 0)
    axis = g.attr(node, 'axis') % len(shape)
    idx = _index(g, idx, g.in_dtype(node, 1), shape[axis], g.attr(node, 'mode'))
    g.add('Gather', [a, idx], g.outputs(node), axis=axis)


@converter('batch_take')
def _batch_take(g, node):
    a, idx = g.inputs(node)
    idx = _index(g, idx, g.in_dtype(node, 1), g.in_shape(node, 0)[1], 'clip')
    picked = g.add('GatherElements', [a, unsqueeze(g, idx, [1])], 1, axis=1)[0]
    squeeze(g, picked, [1], g.outputs(node)[0])


@converter('pick')
def _pick(g, node):
    data, idx = g.inputs(node)
    out = g.outputs(node)[0]
    shape = g.in_shape(node, 0)
    axis = g.attr(node, 'axis')
    axis = -1 if axis is None else axis
    axis %= len(shape)
    idx = _index(g, idx, g.in_dtype(node, 1), shape[axis], g.attr(node, 'mode'))
    if len(g.in_shape(node, 1)) < len(shape):
        idx = unsqueeze(g, idx, [axis])
    picked = g.add('GatherElements', [data, idx], 1, axis=axis)[0]
    if g.attr(node, 'keepdims'):
        g.add('Identity', [picked], [out])
    else:
        squeeze(g, picked, [axis], out)


@converter('one_hot')
def _one_hot(g, node):
    idx, out = _one(g, node)
    dtype = g.out_dtype(node, 0)
    # ONNX Runtime's OneHot kernels give float32 (and int64) values: cast to the rest
    kind = dtype if dtype in (np.float32, np.int64) else np.dtype(np.float32)
    values = g.const(np.array([g.attr(node, 'off_value'), g.attr(node, 'on_value')], kind))
    idx = cast(g, idx, np.int64) if g.in_dtype(node, 0) != np.int64 else idx
    # MXNet: a negative index is out of range (all off_value); ONNX counts it from the end
    depth = g.const(np.array(int(g.attr(node, 'depth')), np.int64))
    negative = g.add('Less', [idx, g.const(np.array(0, np.int64))])[0]
    idx = g.add('Where', [negative, depth, idx])[0]
    r = g.add('OneHot', [idx, g.const(np.array(int(g.attr(node, 'depth')), np.int64)), values],
              [out] if kind == dtype else 1, axis=-1)[0]
    if kind != dtype:
        cast(g, r, dtype, out)


@converter('where')
def _where(g, node):
    cond, x, y = g.inputs(node)
    c_shape, x_shape = g.in_shape(node, 0), g.in_shape(node, 1)
    cond = bool_of(g, cond, g.in_dtype(node, 0))
    if len(c_shape) == 1 and len(x_shape) > 1:
        # MXNet's 1-D condition picks whole rows
        cond = reshape(g, cond, [-1] + [1] * (len(x_shape) - 1))
    g.add('Where', [cond, x, y], g.outputs(node))


# ---------------------------------------------------------------------- creation
def _fill_like(g, node, value):
    x, out = _one(g, node)
    dtype = g.out_dtype(node, 0)
    shape = g.add('Shape', [x])[0]
    g.add('ConstantOfShape', [shape], [out], value=np.array([value], dtype))


@converter('zeros_like')
def _zeros_like(g, node):
    _fill_like(g, node, 0)


@converter('ones_like')
def _ones_like(g, node):
    _fill_like(g, node, 1)


def _constant(g, node, value):
    g.add('Identity', [g.const(value)], g.outputs(node)[:1])


@converter('_zeros', '_zeros_without_dtype')
def _zeros(g, node):
    _constant(g, node, np.zeros(g.out_shape(node, 0), g.out_dtype(node, 0)))


@converter('_ones')
def _ones(g, node):
    _constant(g, node, np.ones(g.out_shape(node, 0), g.out_dtype(node, 0)))


@converter('_full')
def _full(g, node):
    _constant(g, node, np.full(g.out_shape(node, 0), g.attr(node, 'value'),
                                g.out_dtype(node, 0)))


@converter('_arange')
def _arange(g, node):
    start, stop, step = g.attr(node, 'start'), g.attr(node, 'stop'), g.attr(node, 'step')
    if stop is None:
        start, stop = 0, start
    n = g.out_shape(node, 0)[0]
    rep = int(g.attr(node, 'repeat'))
    values = np.repeat(start + step * np.arange(n // rep, dtype=np.float64), rep)
    _constant(g, node, values.astype(g.out_dtype(node, 0)))


@converter('_linspace')
def _linspace(g, node):
    values = np.linspace(g.attr(node, 'start'), g.attr(node, 'stop'), int(g.attr(node, 'num')),
                         endpoint=bool(g.attr(node, 'endpoint')))
    _constant(g, node, values.astype(g.out_dtype(node, 0)))


@converter('_eye')
def _eye(g, node):
    n, m = int(g.attr(node, 'N')), int(g.attr(node, 'M')) or int(g.attr(node, 'N'))
    _constant(g, node, np.eye(n, m, int(g.attr(node, 'k')), dtype=g.out_dtype(node, 0)))


# ---------------------------------------------------------------------- casts, identities
@converter('Cast', 'amp_cast')
def _cast(g, node):
    x, out = _one(g, node)
    cast(g, x, g.out_dtype(node, 0), out)


@converter('amp_multicast')
def _amp_multicast(g, node):
    for i, (x, out) in enumerate(zip(g.inputs(node), g.outputs(node))):
        if g.in_dtype(node, i) == g.out_dtype(node, i):
            g.add('Identity', [x], [out])
        else:
            cast(g, x, g.out_dtype(node, i), out)


@converter('BlockGrad', '_copy', '_copyto', 'cast_storage', '_identity_with_attr_like_rhs')
def _identity(g, node):
    g.add('Identity', g.inputs(node)[:1], g.outputs(node)[:1])


@converter('shape_array')
def _shape_array(g, node):
    x, out = _one(g, node)
    shape = g.add('Shape', [x], [out] if g.out_dtype(node, 0) == np.int64 else 1)[0]
    if g.out_dtype(node, 0) != np.int64:
        cast(g, shape, g.out_dtype(node, 0), out)


@converter('size_array')
def _size_array(g, node):
    x, out = _one(g, node)
    size = g.add('Size', [x])[0]
    size = reshape(g, size, [1])
    if g.out_dtype(node, 0) != np.int64:
        size = cast(g, size, g.out_dtype(node, 0))
    g.add('Identity', [size], [out])


# ---------------------------------------------------------------------- broadcasts
@converter('broadcast_to', 'broadcast_axis')
def _broadcast_to(g, node):
    x, out = _one(g, node)
    shape = list(g.out_shape(node, 0))
    if g.dynamic and shape and g.in_shape(node, 0)[0] == shape[0]:
        shape[0] = 1        # Expand keeps the (symbolic) batch where the target says 1
    g.add('Expand', [x, g.const(np.array(shape, np.int64))], [out])


@converter('broadcast_like')
def _broadcast_like(g, node):
    x, y = g.inputs(node)
    out = g.outputs(node)[0]
    if g.attr(node, 'lhs_axes') is None and g.attr(node, 'rhs_axes') is None:
        g.add('Expand', [x, g.add('Shape', [y])[0]], [out])
    else:
        g.add('Expand', [x, g.const(np.array(g.out_shape(node, 0), np.int64))], [out])


# ---------------------------------------------------------------------- reductions
def _reduce_axes(g, node, rank):
    """MXNet's (axis, exclude) as a sorted list of axes, or None for all."""
    axis = g.attr(node, 'axis')
    if axis is None or axis == ():
        axes = None if not g.attr(node, 'exclude', False) else []
    else:
        axes = sorted({a % rank for a in (axis if isinstance(axis, tuple) else (axis,))})
    if g.attr(node, 'exclude', False):
        axes = [i for i in range(rank) if i not in (axes or [])]
    return axes


def _reduction(g, node, op_type, pre=None):
    x, out = _one(g, node)
    shape = g.in_shape(node, 0)
    axes = _reduce_axes(g, node, len(shape))
    keep = bool(g.attr(node, 'keepdims'))
    if axes is not None and not axes:       # nothing reduced (exclude of every axis)
        g.add('Identity', [x], [out])
        return
    if pre is not None:
        x = pre(x)
    if op_type == 'ReduceProd' and g.in_dtype(node, 0).kind in 'iu':
        _wrapping_prod(g, node, x, shape, axes, out)
        return
    full = axes is None or len(axes) == len(shape)
    if full and not keep:       # MXNet's full reduction is (1,), not a scalar
        r = reduce(g, op_type, x, axes, True)
        reshape(g, r, [1], out)
    else:
        reduce(g, op_type, x, axes, keep, out)


def _wrapping_prod(g, node, x, shape, axes, out):
    """An integer product that wraps around as MXNet's does (ONNX Runtime's ReduceProd
    saturates): the reduced axes brought to the front and halved by elementwise Mul."""
    axes = list(range(len(shape))) if axes is None else list(axes)
    rest = [i for i in range(len(shape)) if i not in axes]
    n = int(np.prod([shape[i] for i in axes]))
    x = g.add('Transpose', [x], 1, perm=axes + rest)[0]
    x = reshape(g, x, [n, -1])
    size = 1
    while size < n:
        size *= 2
    if size > n:
        one = scalar_const(g, 1, g.in_dtype(node, 0))
        x = g.add('Pad', [x, g.const(np.array([0, 0, size - n, 0], np.int64)), one], 1,
                  mode='constant')[0]
    while size > 1:
        size //= 2
        halves = g.add('Split', [x, g.const(np.array([size, size], np.int64))], 2, axis=0)
        x = g.add('Mul', halves)[0]
    to_shape(g, x, g.out_shape(node, 0), out)


_REDUCTIONS = {'sum': 'ReduceSum', 'mean': 'ReduceMean', 'max': 'ReduceMax',
               'min': 'ReduceMin', 'prod': 'ReduceProd', '_square_sum': 'ReduceSumSquare'}


@converter(*_REDUCTIONS)
def _reduce_op(g, node):
    _reduction(g, node, _REDUCTIONS[node.op.name])


@converter('nansum', 'nanprod')
def _nan_reduce(g, node):
    fill = 0 if node.op.name == 'nansum' else 1
    dtype = g.in_dtype(node, 0)

    def zero_nans(x):
        nan = g.add('IsNaN', [x])[0]
        return g.add('Where', [nan, scalar_const(g, fill, dtype), x])[0]
    _reduction(g, node, 'ReduceSum' if fill == 0 else 'ReduceProd', zero_nans)


@converter('norm')
def _norm(g, node):
    order = int(g.attr(node, 'ord'))
    if order not in (1, 2):
        g.error(node, 'ord=%d has no ONNX form (1 or 2)' % order)
    x, out = _one(g, node)
    out_dtype, dtype = g.out_dtype(node, 0), g.in_dtype(node, 0)
    target = out if out_dtype == dtype else g.fresh(out + '_norm')
    shape = g.in_shape(node, 0)
    axes = _reduce_axes(g, node, len(shape))
    op_type = 'ReduceL1' if order == 1 else 'ReduceL2'
    keep = bool(g.attr(node, 'keepdims'))
    if axes is None or (len(axes) == len(shape) and not keep):
        r = reduce(g, op_type, x, axes, True)
        reshape(g, r, [1], target)
    else:
        reduce(g, op_type, x, axes, keep, target)
    if target != out:
        cast(g, target, out_dtype, out)


def _arg_reduce(g, node, op_type):
    x, out = _one(g, node)
    shape = g.in_shape(node, 0)
    axis = g.attr(node, 'axis')
    keep = int(bool(g.attr(node, 'keepdims')))
    if axis is None:
        flat = reshape(g, x, [-1])
        r = g.add(op_type, [flat], 1, axis=0, keepdims=1)[0]
        if keep:
            r = reshape(g, r, [1] * len(shape))
    else:
        r = g.add(op_type, [x], 1, axis=axis % len(shape), keepdims=keep)[0]
        if not keep and len(shape) == 1:
            r = reshape(g, r, [1])
    cast(g, r, g.out_dtype(node, 0), out)


@converter('argmax')
def _argmax(g, node):
    _arg_reduce(g, node, 'ArgMax')


@converter('argmin')
def _argmin(g, node):
    _arg_reduce(g, node, 'ArgMin')


@converter('moments')
def _moments(g, node):
    x = g.inputs(node)[0]
    mean_out, var_out = g.outputs(node)
    shape = g.in_shape(node, 0)
    axes = g.attr(node, 'axes')
    axes = None if not axes else sorted(a % len(shape) for a in axes)
    keep = bool(g.attr(node, 'keepdims'))
    mean = reduce(g, 'ReduceMean', x, axes, True)
    d = g.add('Sub', [x, mean])[0]
    var = reduce(g, 'ReduceMean', g.add('Mul', [d, d])[0], axes, True)
    if keep:
        g.add('Identity', [mean], [mean_out])
        g.add('Identity', [var], [var_out])
    else:
        to_shape(g, mean, g.out_shape(node, 0), mean_out)
        to_shape(g, var, g.out_shape(node, 1), var_out)
