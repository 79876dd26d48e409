"""Converters of the ONNX shape, indexing, resizing and recurrent operators.

The companion of ``_import_ops.py`` (same contract: a function of a ConvertContext per
ONNX op_type, returning a Symbol per output). Shape arguments (Reshape's shape, Slice's
starts and ends, Squeeze's axes, ...) must be constants by the time a node is converted;
the importer has folded every constant-only subgraph before, so the shape arithmetic that
exporters write around them usually is.
"""
from __future__ import annotations

import numpy as np

from .. import symbol as S

TENSOR_CONVERTERS = {}


def _register(*names):
    def deco(fn):
        for n in names:
            TENSOR_CONVERTERS[n] = fn
        return fn
    return deco


def _axis(axis, rank):
    return axis + rank if axis < 0 else axis


@_register('Flatten')
def _flatten(ctx):
    axis = _axis(ctx.attr('axis', 1), ctx.rank(0))
    if axis == 1:
        return S.Flatten(ctx.sym(0), name=ctx.name)
    if axis == 0:
        return S.reshape(ctx.sym(0), shape=(1, -1), name=ctx.name)
    lead = int(np.prod(ctx.need_shape(0)[:axis]))
    return S.reshape(ctx.sym(0), shape=(lead, -1), name=ctx.name)


@_register('Reshape')
def _reshape(ctx):
    shape = ctx.const_ints(1, 'shape')
    if ctx.attr('allowzero', 0) and 0 in shape:
        raise ctx.error('allowzero=1 with a 0 in the shape', NotImplementedError)
    return S.reshape(ctx.sym(0), shape=tuple(shape), name=ctx.name)


@_register('Transpose')
def _transpose(ctx):
    perm = ctx.attr('perm')
    if perm is None:
        perm = list(range(ctx.rank(0)))[::-1]
    return S.transpose(ctx.sym(0), axes=tuple(perm), name=ctx.name)


@_register('Concat')
def _concat(ctx):
    xs = [ctx.sym(i) for i in range(len(ctx.inputs)) if ctx.has(i)]
    axis = _axis(ctx.attr('axis'), ctx.rank(0))
    return S.Concat(*xs, dim=axis, num_args=len(xs), name=ctx.name)


@_register('Split')
def _split(ctx):
    rank = ctx.rank(0)
    axis = _axis(ctx.attr('axis', 0), rank)
    n = len(ctx.outputs)
    sizes = ctx.const_ints(1, 'split')
    if sizes is None:
        dim = (ctx.shape(0) or [None] * rank)[axis]
        if dim is not None and dim % n:
            # opset 18's num_outputs: the last part is the smaller one
            step = -(-dim // n)
            sizes = [step] * (n - 1) + [dim - step * (n - 1)]
    if sizes is None or len(set(sizes)) == 1:
        out = S.split(ctx.sym(0), num_outputs=n, axis=axis, name=ctx.name)
    else:
        cuts = (0,) + tuple(int(v) for v in np.cumsum(sizes)[:-1])   # MXNet: 0 first
        out = S._split_v2(ctx.sym(0), indices=cuts, axis=axis, sections=0, name=ctx.name)
    return [out[i] for i in range(n)] if n > 1 else [out]


@_register('Slice')
def _slice(ctx):
    rank = ctx.rank(0)
    if ctx.opset < 10:
        starts, ends = ctx.attr('starts'), ctx.attr('ends')
        axes, steps = ctx.attr('axes'), None
    else:
        starts, ends = ctx.const_ints(1), ctx.const_ints(2)
        axes, steps = ctx.const_ints(3), ctx.const_ints(4)
    axes = list(range(len(starts))) if axes is None else axes
    steps = [1] * len(starts) if steps is None else steps
    shape = ctx.shape(0) or (None,) * rank
    begin, end, step = [None] * rank, [None] * rank, [None] * rank
    big = 1 << 62
    for a, b, e, s in zip(axes, starts, ends, steps):
        a = _axis(a, rank)
        dim = shape[a]
        if dim is not None:
            b, e, s = slice(b, e, s).indices(dim)
            e = None if e < 0 else e
        else:
            b = None if (s > 0 and b <= -big) or (s < 0 and b >= big) else b
            e = None if abs(e) >= big else e
        begin[a], end[a], step[a] = b, e, s
    return S.slice(ctx.sym(0), begin=tuple(begin), end=tuple(end), step=tuple(step),
                   name=ctx.name)


@_register('Squeeze')
def _squeeze(ctx):
    axes = ctx.const_ints(1, 'axes')
    if not axes:
        return S.squeeze(ctx.sym(0), name=ctx.name)
    rank = ctx.rank(0)
    return S.squeeze(ctx.sym(0), axis=tuple(_axis(a, rank) for a in axes), name=ctx.name)


@_register('Unsqueeze')
def _unsqueeze(ctx):
    axes = ctx.const_ints(1, 'axes')
    out_rank = ctx.rank(0) + len(axes)
    axes = sorted(_axis(a, out_rank) for a in axes)
    x = ctx.sym(0)
    for k, a in enumerate(axes):
        x = S.expand_dims(x, axis=a, name=ctx.name if k == len(axes) - 1 else None)
    return x


@_register('Cast', 'CastLike')
def _cast(ctx):
    from onnx import helper
    if ctx.op_type == 'CastLike':
        dtype = np.dtype(ctx.const(1).dtype) if ctx.is_const(1) else None
        if dtype is None:
            return S.identity(ctx.sym(0), name=ctx.name)
    else:
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(ctx.attr('to')))
    return S.Cast(ctx.sym(0), dtype=dtype.name, name=ctx.name)


@_register('Gather')
def _gather(ctx):
    rank = ctx.rank(0)
    axis = _axis(ctx.attr('axis', 0), rank)
    if ctx.is_const(1) and ctx.const(1).ndim == 0:
        i = int(ctx.const(1))
        dim = (ctx.shape(0) or [None] * rank)[axis]
        if i < 0 and dim is None:
            raise ctx.error('a negative index into an axis of unknown size',
                            NotImplementedError)
        i = i + dim if i < 0 else i
        part = S.slice_axis(ctx.sym(0), axis=axis, begin=i, end=i + 1)
        if rank == 1:
            return S.identity(part, name=ctx.name)       # symgraph has no 0-d values
        return S.squeeze(part, axis=axis, name=ctx.name)
    return S.take(ctx.sym(0), ctx.sym(1), axis=axis, mode='wrap', name=ctx.name)


@_register('GatherElements')
def _gather_elements(ctx):
    rank = ctx.rank(0)
    axis = _axis(ctx.attr('axis', 0), rank)
    ishape = ctx.need_shape(1)
    grids = np.meshgrid(*[np.arange(d) for d in ishape], indexing='ij')
    idx = ctx.sym(1)
    dim = ctx.need_shape(0)[axis]
    # negative indices count from the end, as in ONNX
    idx = S.broadcast_add(idx, S.broadcast_lesser(idx, S.zeros_like(idx)) * dim)
    parts = []
    for d in range(rank):
        if d == axis:
            parts.append(S.expand_dims(S.Cast(idx, dtype='int64'), axis=0))
        else:
            parts.append(ctx.param('grid%d' % d, grids[d][None].astype(np.int64)))
    index = S.Concat(*parts, dim=0, num_args=rank)
    return S.gather_nd(ctx.sym(0), index, name=ctx.name)


@_register('OneHot')
def _one_hot(ctx):
    depth = int(ctx.const(1).reshape(-1)[0])
    off, on = [v.item() for v in ctx.const(2).reshape(-1)]
    dtype = ctx.const(2).dtype
    idx = ctx.sym(0)
    # ONNX counts negative indices from the end; MXNet's one_hot leaves them all off
    idx = S.broadcast_add(idx, S.broadcast_lesser(idx, S.zeros_like(idx)) * depth)
    out = S.one_hot(idx, depth=depth, on_value=on, off_value=off, dtype=dtype.name)
    rank = ctx.rank(0) + 1
    axis = _axis(ctx.attr('axis', -1), rank)
    if axis == rank - 1:
        return S.identity(out, name=ctx.name)
    axes = list(range(rank - 1))
    axes.insert(axis, rank - 1)
    return S.transpose(out, axes=tuple(axes), name=ctx.name)


def _batch_grid(ctx, lead, batch_dims):
    """Constant coordinates of the ``batch_dims`` leading axes over index shape ``lead``,
    as a (batch_dims, *lead) parameter."""
    grids = np.meshgrid(*[np.arange(d) for d in lead], indexing='ij')[:batch_dims]
    return ctx.param('batch_grid', np.stack(grids).astype(np.int64))


@_register('GatherND')
def _gather_nd(ctx):
    batch_dims = ctx.attr('batch_dims', 0)
    # ONNX puts the coordinates on the last axis of the indices, MXNet on the first
    rank = ctx.rank(1)
    idx = S.transpose(ctx.sym(1), axes=(rank - 1,) + tuple(range(rank - 1)))
    if batch_dims:
        lead = ctx.need_shape(1)[:-1]
        idx = S.Concat(_batch_grid(ctx, lead, batch_dims), S.Cast(idx, dtype='int64'),
                       dim=0, num_args=2)
    return S.gather_nd(ctx.sym(0), idx, name=ctx.name)


def _scatter(ctx, index):
    """``data`` with ``updates`` written at the MXNet-layout coordinates ``index``."""
    shape = ctx.need_shape(0)
    upd = ctx.sym(2)
    if ctx.attr('reduction', 'none') != 'none':
        raise ctx.error('reduction %r' % ctx.attr('reduction'), NotImplementedError)
    written = S.scatter_nd(upd, index, shape=shape)
    mask = S.scatter_nd(S.ones_like(upd), index, shape=shape)
    kept = S.broadcast_mul(ctx.sym(0), 1 - mask)
    return S.broadcast_add(kept, written, name=ctx.name)


@_register('ScatterND')
def _scatter_nd(ctx):
    rank = ctx.rank(1)
    idx = S.transpose(ctx.sym(1), axes=(rank - 1,) + tuple(range(rank - 1)))
    return _scatter(ctx, S.Cast(idx, dtype='int64'))


@_register('ScatterElements', 'Scatter')
def _scatter_elements(ctx):
    rank = ctx.rank(0)
    axis = _axis(ctx.attr('axis', 0), rank)
    ishape = ctx.need_shape(1)
    grids = np.meshgrid(*[np.arange(d) for d in ishape], indexing='ij')
    idx = ctx.sym(1)
    dim = ctx.need_shape(0)[axis]
    idx = S.broadcast_add(idx, S.broadcast_lesser(idx, S.zeros_like(idx)) * dim)
    parts = [S.expand_dims(S.Cast(idx, dtype='int64'), axis=0) if d == axis else
             ctx.param('grid%d' % d, grids[d][None].astype(np.int64)) for d in range(rank)]
    return _scatter(ctx, S.Concat(*parts, dim=0, num_args=rank))


@_register('ReverseSequence')
def _reverse_sequence(ctx):
    time_axis, batch_axis = ctx.attr('time_axis', 0), ctx.attr('batch_axis', 1)
    x = ctx.sym(0)
    if (time_axis, batch_axis) == (1, 0):
        x = S.swapaxes(x, dim1=0, dim2=1)
    lens = S.Cast(ctx.sym(1), dtype='float32')
    out = S.SequenceReverse(x, lens, use_sequence_length=True)
    if (time_axis, batch_axis) == (1, 0):
        out = S.swapaxes(out, dim1=0, dim2=1)
    return S.identity(out, name=ctx.name)


@_register('Trilu')
def _trilu(ctx):
    shape = ctx.need_shape(0)
    k = int(ctx.const(1).reshape(-1)[0]) if ctx.has(1) else 0
    rows, cols = shape[-2:]
    keep = np.triu(np.ones((rows, cols)), k) if ctx.attr('upper', 1) else \
        np.tril(np.ones((rows, cols)), k)
    mask = ctx.param('mask', keep.astype(np.float32))
    return S.broadcast_mul(ctx.sym(0), mask, name=ctx.name)


@_register('CumSum')
def _cumsum(ctx):
    axis = _axis(int(ctx.const(1).reshape(-1)[0]), ctx.rank(0))
    x = ctx.sym(0)
    if ctx.attr('reverse', 0):
        x = S.reverse(x, axis=axis)
    out = S.cumsum(x, axis=axis)
    if ctx.attr('exclusive', 0):
        out = out - x
    if ctx.attr('reverse', 0):
        out = S.reverse(out, axis=axis)
    return S.identity(out, name=ctx.name)


@_register('RoiAlign', 'MaxRoiPool')
def _roi(ctx):
    scale = ctx.attr('spatial_scale', 1.0)
    if ctx.op_type == 'MaxRoiPool':
        return S.ROIPooling(ctx.sym(0), ctx.sym(1), pooled_size=tuple(ctx.attr('pooled_shape')),
                            spatial_scale=scale, name=ctx.name)
    if ctx.attr('mode', 'avg') != 'avg':
        raise ctx.error('RoiAlign mode %r' % ctx.attr('mode'), NotImplementedError)
    coord = ctx.attr('coordinate_transformation_mode',
                     'half_pixel' if ctx.opset >= 16 else 'output_half_pixel')
    # MXNet's rois carry their batch index first
    index = S.Cast(S.expand_dims(ctx.sym(2), axis=1), dtype='float32')
    rois = S.Concat(index, ctx.sym(1), dim=1, num_args=2)
    return S.contrib.ROIAlign(ctx.sym(0), rois, pooled_size=(ctx.attr('output_height', 1),
                                                             ctx.attr('output_width', 1)),
                              spatial_scale=scale, sample_ratio=ctx.attr('sampling_ratio', 0),
                              aligned=coord == 'half_pixel', name=ctx.name)


@_register('Expand')
def _expand(ctx):
    target = ctx.const_ints(1)
    rank = ctx.rank(0)
    x = ctx.sym(0)
    if len(target) < rank:
        target = [1] * (rank - len(target)) + target
    for _ in range(len(target) - rank):
        x = S.expand_dims(x, axis=0)
    # ONNX broadcasts both ways: a 1 in the target keeps the input's size (0 for
    # broadcast_to)
    return S.broadcast_to(x, shape=tuple(0 if t == 1 else t for t in target), name=ctx.name)


@_register('Tile')
def _tile(ctx):
    return S.tile(ctx.sym(0), reps=tuple(ctx.const_ints(1)), name=ctx.name)


@_register('Pad')
def _pad(ctx):
    mode = ctx.attr('mode', 'constant')
    rank = ctx.rank(0)
    pads = ctx.const_ints(1, 'pads') if ctx.opset >= 11 else list(ctx.attr('pads'))
    value = ctx.attr('value', 0.0)
    if ctx.opset >= 11 and ctx.has(2):
        value = float(ctx.const(2).reshape(-1)[0])
    axes = ctx.const_ints(3)
    if axes is not None:
        full = [0] * (2 * rank)
        for k, a in enumerate(axes):
            a = _axis(a, rank)
            full[a], full[rank + a] = pads[k], pads[len(axes) + k]
        pads = full
    begin, end = pads[:rank], pads[rank:]
    if any(p < 0 for p in pads):
        raise ctx.error('negative pads', NotImplementedError)
    if mode not in ('constant', 'edge', 'reflect'):
        raise ctx.error('pad mode %r' % mode, NotImplementedError)
    dtype = ctx.dtype(0)
    if mode == 'constant' and dtype is not None and dtype.kind not in 'f':
        # symgraph's Pad (MXNet's) takes floating point data only: integer and boolean
        # tensors are padded by concatenating constant blocks along each padded axis
        return _pad_by_concat(ctx, ctx.sym(0), ctx.need_shape(0), begin, end, value, dtype)
    lift = max(0, 4 - rank)
    begin, end = [0] * lift + begin, [0] * lift + end
    if len(begin) > 5 or any(begin[:2]) or any(end[:2]):
        raise ctx.error('padding of the first two axes of a %d-D input' % rank,
                        NotImplementedError)
    x = ctx.sym(0)
    if lift:
        x = S.reshape(x, shape=(1,) * lift + tuple(ctx.need_shape(0)))
    width = tuple(v for pair in zip(begin, end) for v in pair)
    out = S.pad(x, mode=mode, pad_width=width, constant_value=value,
                name=None if lift else ctx.name)
    if lift:
        out_shape = tuple(d + b + e for d, b, e in zip(ctx.need_shape(0), pads[:rank],
                                                       pads[rank:]))
        out = S.reshape(out, shape=out_shape, name=ctx.name)
    return out


def _pad_by_concat(ctx, x, shape, begin, end, value, dtype):
    cur = list(shape)
    padded = [a for a in range(len(cur)) if begin[a] or end[a]]
    for k, axis in enumerate(padded):
        parts = []
        for width, where in ((begin[axis], 'begin'), (None, None), (end[axis], 'end')):
            if where is None:
                parts.append(x)
            elif width:
                block = tuple(cur[:axis] + [width] + cur[axis + 1:])
                parts.append(S.full(shape=block, val=value, dtype=dtype.name,
                                    name=ctx.sub('pad%d_%s' % (axis, where))))
        cur[axis] += begin[axis] + end[axis]
        last = k == len(padded) - 1
        x = S.concat(*parts, dim=axis, name=ctx.name if last else ctx.sub('pad%d' % axis))
    return x


@_register('Resize', 'Upsample')
def _resize(ctx):
    shape = ctx.need_shape(0)
    if ctx.op_type == 'Upsample' and ctx.opset < 9:
        scales = list(ctx.attr('scales'))
    elif ctx.op_type == 'Upsample' or ctx.opset == 10:
        scales = [float(v) for v in ctx.const(1).reshape(-1)]
    else:
        scales = [float(v) for v in ctx.const(2).reshape(-1)] if ctx.has(2) else []
        if not scales:
            sizes = ctx.const_ints(3)
            scales = [o / i for o, i in zip(sizes, shape)]
    out_hw = [int(np.floor(d * s)) for d, s in zip(shape[2:], scales[2:])]
    mode = ctx.attr('mode', 'nearest')
    coord = ctx.attr('coordinate_transformation_mode',
                     'half_pixel' if ctx.op_type == 'Resize' and ctx.opset >= 11
                     else 'asymmetric')
    if len(shape) != 4 or scales[:2] != [1.0, 1.0]:
        raise ctx.error('resizing other than the two spatial axes of a 4-D input',
                        NotImplementedError)
    if mode == 'nearest':
        s = scales[2]
        nearest = ctx.attr('nearest_mode', 'round_prefer_floor')
        ok = s == scales[3] and float(s).is_integer() and coord in (
            'half_pixel', 'pytorch_half_pixel', 'asymmetric', 'tf_half_pixel_for_nn')
        if coord == 'asymmetric' and ctx.opset >= 11 and nearest != 'floor' and s > 2:
            ok = False
        if not ok:
            raise ctx.error('nearest resizing by %s (%s) is not an integer upsampling'
                            % (scales[2:], coord), NotImplementedError)
        return S.UpSampling(ctx.sym(0), scale=int(s), sample_type='nearest', num_args=1,
                            name=ctx.name)
    if mode == 'linear' and coord in ('half_pixel', 'pytorch_half_pixel', 'align_corners'):
        return S.contrib.BilinearResize2D(ctx.sym(0), height=out_hw[0], width=out_hw[1],
                                          align_corners=coord == 'align_corners',
                                          name=ctx.name)
    raise ctx.error('Resize mode %r with coordinate_transformation_mode %r'
                    % (mode, coord), NotImplementedError)


@_register('DepthToSpace', 'SpaceToDepth')
def _depth_space(ctx):
    b = ctx.attr('blocksize')
    if ctx.op_type == 'SpaceToDepth':
        return S.space_to_depth(ctx.sym(0), block_size=b, name=ctx.name)
    if ctx.attr('mode', 'DCR') == 'DCR':
        return S.depth_to_space(ctx.sym(0), block_size=b, name=ctx.name)
    n, c, h, w = ctx.need_shape(0)
    x = S.reshape(ctx.sym(0), shape=(n, c // (b * b), b, b, h, w))
    x = S.transpose(x, axes=(0, 1, 4, 2, 5, 3))
    return S.reshape(x, shape=(n, c // (b * b), h * b, w * b), name=ctx.name)


def _static_only(ctx):
    raise ctx.error('its inputs depend on the graph inputs, so it cannot be computed at '
                    'import time; symgraph graphs have static shapes (give the graph '
                    'inputs fixed dimensions)', NotImplementedError)


for _name in ('Shape', 'Size', 'Range', 'NonZero'):
    TENSOR_CONVERTERS[_name] = _static_only


@_register('ConstantOfShape')
def _constant_of_shape(ctx):
    if not ctx.is_const(0):
        _static_only(ctx)
    # a constant too large to fold into a parameter: made at run time
    value = ctx.attr('value')
    value = np.zeros(1, np.float32) if value is None else np.asarray(value).reshape(-1)
    return S.full(shape=tuple(ctx.const_ints(0)), val=value[0].item(),
                  dtype=value.dtype.name, name=ctx.name)


@_register('GridSample')
def _grid_sample(ctx):
    mode = ctx.attr('mode', 'linear' if ctx.opset >= 20 else 'bilinear')
    if mode not in ('linear', 'bilinear') or ctx.attr('padding_mode', 'zeros') != 'zeros' \
            or ctx.rank(0) != 4:
        raise ctx.error('GridSample other than bilinear with zero padding on 4-D inputs',
                        NotImplementedError)
    grid = ctx.sym(1)
    if not ctx.attr('align_corners', 0):
        # MXNet's BilinearSampler maps -1..1 onto the corner pixels' centres
        # (align_corners=1): with 0, the same pixel lies at x * W / (W - 1)
        h, w = ctx.need_shape(0)[2:]
        scale = np.array([w / (w - 1.0), h / (h - 1.0)], np.float32)
        grid = S.broadcast_mul(grid, ctx.param('grid_scale', scale))
    grid = S.transpose(grid, axes=(0, 3, 1, 2))
    return S.BilinearSampler(ctx.sym(0), grid, name=ctx.name)


@_register('If')
def _if(ctx):
    branches = ctx.attr('then_branch'), ctx.attr('else_branch')
    if ctx.is_const(0):         # a condition known at import: the branch taken, inlined
        taken = branches[0] if bool(np.asarray(ctx.const(0)).reshape(-1)[0]) else branches[1]
        return [S.identity(o, name=ctx.sub('out%d' % k) if ctx.name else None)
                for k, o in enumerate(ctx.imp.subgraph(taken))]
    n = len(ctx.outputs)

    def body(graph):
        def build():
            outs = ctx.imp.subgraph(graph)
            return outs if n > 1 else outs[0]
        return build
    out = S.contrib.cond(ctx.sym(0), body(branches[0]), body(branches[1]),
                         name=ctx.name or 'cond')
    return [out[k] for k in range(n)] if n > 1 else [out]


@_register('Scan')
def _scan(ctx):
    m = ctx.attr('num_scan_inputs')
    n_states = len(ctx.inputs) - m
    for key in ('scan_input_axes', 'scan_output_axes', 'scan_input_directions',
                'scan_output_directions'):
        if any(ctx.attr(key) or ()):
            raise ctx.error('%s other than 0' % key, NotImplementedError)
    body_graph = ctx.attr('body')
    states = [ctx.sym(i) for i in range(n_states)]
    data = [ctx.sym(i) for i in range(n_states, len(ctx.inputs))]

    def body(slices, carried):
        slices = slices if isinstance(slices, list) else [slices]
        outs = ctx.imp.subgraph(body_graph, list(carried) + slices)
        return outs[n_states:], outs[:n_states]
    outputs, final = S.contrib.foreach(body, data, states, name=ctx.name or 'foreach')
    outputs = outputs if isinstance(outputs, list) else [outputs]
    final = final if isinstance(final, list) else [final]
    return list(final) + list(outputs)


@_register('Loop')
def _loop(ctx):
    """ONNX Loop as ``while_loop``. Loop tests its condition after each step (the body's
    first output) and stops at the trip count M, so two loop variables are added before
    the Loop's own: a step counter and the condition flag; ``cond`` is ``flag and counter
    < M``. M must be a constant (``max_iterations``, which a symgraph graph needs for the
    size of its stacked outputs); they are zero-padded to M rows where ONNX stops earlier.
    The body sees the counter as an int64 array of shape (1,), not a scalar."""
    if not ctx.has(0) or not ctx.is_const(0):
        raise ctx.error('a Loop without a constant trip count M (a symgraph while_loop '
                        'needs max_iterations, the size of its stacked outputs)',
                        NotImplementedError)
    trips = int(np.asarray(ctx.const(0)).reshape(-1)[0])
    if trips < 1:
        raise ctx.error('trip count M=%d: a while_loop runs at least one step' % trips,
                        NotImplementedError)
    body_graph = ctx.attr('body')
    n_vars = len(ctx.inputs) - 2
    n_scan = len(body_graph.output) - 1 - n_vars
    if ctx.has(1):
        flag0 = S.reshape(S.cast(ctx.sym(1), dtype='float32'), shape=(1,))
    else:
        flag0 = S.ones(shape=(1,), dtype='float32')
    counter0 = S.zeros(shape=(1,), dtype='float32')
    init = [counter0, flag0] + [ctx.sym(2 + k) for k in range(n_vars)]

    def cond(counter, flag, *_):
        return flag * (counter < trips)

    def func(counter, flag, *loop_vars):
        outs = ctx.imp.subgraph(body_graph, [S.cast(counter, dtype='int64'),
                                             S.cast(flag, dtype='bool')] + list(loop_vars),
                                shapes=[(1,), (1,)] + [None] * n_vars)
        # times the old flag (1 whenever a step runs): while_loop wants every loop
        # variable read by the step
        new_flag = flag * S.reshape(S.cast(outs[0], dtype='float32'), shape=(1,))
        return outs[1 + n_vars:], [counter + 1, new_flag] + outs[1:1 + n_vars]
    outputs, states = S.contrib.while_loop(cond, func, init, max_iterations=trips,
                                           name=ctx.name or 'while_loop')
    outputs = outputs if isinstance(outputs, list) else [outputs]
    return list(states[2:]) + outputs[:n_scan]


@_register('NonMaxSuppression')
def _nms(ctx):
    raise ctx.error('its output has a data-dependent number of rows, which a symgraph '
                    'graph (static shapes) cannot hold; use mx.sym.contrib.box_nms',
                    NotImplementedError)


# --- recurrent layers -----------------------------------------------------------------
#: ONNX gate blocks in MXNet's order: LSTM ONNX iofc -> MXNet ifco(g), GRU zrh -> rzn
_GATES = {'LSTM': (4, (0, 2, 3, 1)), 'GRU': (3, (1, 0, 2)), 'RNN': (1, (0,))}


def _reorder(w, op):
    n, order = _GATES[op]
    blocks = np.split(w, n, axis=0)
    return np.concatenate([blocks[k] for k in order], axis=0)


def _packed_weights(ctx, op, dirs, gates, hidden):
    """MXNet's flat RNN parameter vector built in the graph from W, R, B that are not
    constants: per direction the gate blocks reordered, weights then biases."""
    order = _GATES[op][1]

    def blocks(sym, d):
        part = S.reshape(S.slice_axis(sym, axis=0, begin=d, end=d + 1), shape=(-3, -2))
        if gates == 1:
            return [part]
        pieces = S.split(part, num_outputs=gates, axis=0)
        return [pieces[k] for k in order]

    weights, biases = [], []
    for d in range(dirs):
        for i in (1, 2):
            weights.append(S.reshape(S.Concat(*blocks(ctx.sym(i), d), dim=0,
                                              num_args=gates), shape=(-1,)))
        if ctx.has(3):          # the input-side bias blocks, then the hidden-side ones
            row = S.reshape(S.slice_axis(ctx.sym(3), axis=0, begin=d, end=d + 1),
                            shape=(-1,))
            parts = S.split(row, num_outputs=2 * gates, axis=0)
            seq = [parts[k] for k in order] + [parts[gates + k] for k in order]
            biases.append(S.Concat(*seq, dim=0, num_args=len(seq)))
        else:
            biases.append(ctx.param('bias%d' % d, np.zeros(2 * gates * hidden, np.float32)))
    flat = weights + biases
    return S.Concat(*flat, dim=0, num_args=len(flat))


@_register('LSTM', 'GRU', 'RNN')
def _rnn(ctx):
    op = ctx.op_type
    hidden = ctx.attr('hidden_size')
    direction = ctx.attr('direction', 'forward')
    if direction == 'reverse':
        raise ctx.error("direction='reverse' is not supported", NotImplementedError)
    dirs = 2 if direction == 'bidirectional' else 1
    if ctx.attr('clip') is not None or ctx.attr('input_forget', 0) or ctx.has(7):
        raise ctx.error('clip, input_forget and peepholes are not supported',
                        NotImplementedError)
    acts = ctx.attr('activations')
    if op == 'RNN':
        act = (acts or ['Tanh'])[0]
        mode = {'Tanh': 'rnn_tanh', 'Relu': 'rnn_relu'}.get(act)
        if mode is None or (acts and len(set(acts)) > 1):
            raise ctx.error('RNN activations %s' % acts, NotImplementedError)
    else:
        mode = op.lower()
        default = ['Sigmoid', 'Tanh', 'Tanh'] if op == 'LSTM' else ['Sigmoid', 'Tanh']
        if acts and list(acts) != default * dirs:
            raise ctx.error('activations %s' % acts, NotImplementedError)
    if op == 'GRU' and not ctx.attr('linear_before_reset', 0):
        raise ctx.error('linear_before_reset=0 (MXNet applies the reset gate after the '
                        'hidden transform)', NotImplementedError)
    batch_first = ctx.attr('layout', 0) == 1
    gates = _GATES[op][0]
    if all(ctx.is_const(i) or not ctx.has(i) for i in (1, 2, 3)):
        w, r = ctx.const(1), ctx.const(2)
        b = ctx.const(3, np.zeros((dirs, 2 * gates * hidden), w.dtype))
        weights = [np.concatenate([_reorder(w[d], op).ravel(), _reorder(r[d], op).ravel()])
                   for d in range(dirs)]
        biases = [np.concatenate([_reorder(b[d][:gates * hidden], op),
                                  _reorder(b[d][gates * hidden:], op)]) for d in range(dirs)]
        params = ctx.param('parameters', np.concatenate(weights + biases).astype(w.dtype))
    else:
        params = _packed_weights(ctx, op, dirs, gates, hidden)
    x = ctx.sym(0)
    if batch_first:
        x = S.swapaxes(x, dim1=0, dim2=1)
    lengths = None
    if ctx.has(4):
        xs = ctx.shape(0)
        seq = None if xs is None else xs[1 if batch_first else 0]
        if not (ctx.is_const(4) and seq is not None and np.all(ctx.const(4) == seq)):
            # steps past a sequence's length: zero outputs, states of its last step
            lengths = S.Cast(ctx.sym(4), dtype='int32')
    xshape = ctx.shape(0)
    batch = 0 if xshape is None else xshape[0 if batch_first else 1]

    def state(i):
        if ctx.has(i):
            s = ctx.sym(i)
            return S.swapaxes(s, dim1=0, dim2=1) if batch_first else s
        return S.zeros(shape=(dirs, batch, hidden))
    args = [x, params, state(5)] + ([state(6)] if op == 'LSTM' else [])
    if lengths is not None:
        args.append(lengths)
    out = S.RNN(*args, state_size=hidden, num_layers=1, bidirectional=dirs == 2, mode=mode,
                state_outputs=True, use_sequence_length=lengths is not None, name=ctx.name)
    # MXNet: (seq, batch, dirs * hidden); ONNX: (seq, dirs, batch, hidden)
    y = S.reshape(out[0], shape=(0, 0, dirs, hidden))
    y = S.transpose(y, axes=(1, 0, 2, 3) if batch_first else (0, 2, 1, 3))
    states = [out[1]] + ([out[2]] if op == 'LSTM' else [])
    if batch_first:
        states = [S.swapaxes(s, dim1=0, dim2=1) for s in states]
    return [y] + states
