"""ONNX converters of the less common operators with a plain ONNX form: random sampling
(ONNX's Random* and Multinomial: the same distributions, not the same numbers), cumulative
sums, slice assignment, index arithmetic, Khatri-Rao products, the straight-through and
gradient-only operators (their forward), image tensor conversion and normalization, and
the finiteness checks.
"""
import numpy as np

from ._common import (bool_of, cast, reduce, reshape, scalar_const, tensor_type,
                      unsqueeze)
from ._convert_tensor import _tuple
from ._registry import converter


# ---------------------------------------------------------------------- random
def _float_dtype(g, node, ops):
    dtype = g.out_dtype(node, 0)
    if dtype.kind != 'f':
        g.error(node, '%s draws floats in ONNX; dtype %s has no ONNX form' % (ops, dtype))
    return tensor_type(dtype)


def _random(g, node, op_type, **attrs):
    """Random* drawing float32 or float64 (ONNX Runtime's kernels), cast to the output's
    dtype."""
    out = g.outputs(node)[0]
    dtype = g.out_dtype(node, 0)
    _float_dtype(g, node, op_type)
    kind = dtype if dtype in (np.float32, np.float64) else np.dtype(np.float32)
    r = g.add(op_type, [], [out] if kind == dtype else 1, shape=list(g.out_shape(node, 0)),
              dtype=tensor_type(kind), **attrs)[0]
    if kind != dtype:
        cast(g, r, dtype, out)


@converter('_random_uniform')
def _random_uniform(g, node):
    _random(g, node, 'RandomUniform', low=float(g.attr(node, 'low')),
            high=float(g.attr(node, 'high')))


@converter('_random_normal')
def _random_normal(g, node):
    _random(g, node, 'RandomNormal', mean=float(g.attr(node, 'loc')),
            scale=float(g.attr(node, 'scale')))


def _random_like(g, node, op_type, **attrs):
    """Random*Like drawing float32 (ONNX Runtime's kernels: float and double), cast to
    the output's dtype."""
    x, = g.inputs(node)
    out = g.outputs(node)[0]
    dtype = g.out_dtype(node, 0)
    _float_dtype(g, node, op_type)
    kind = dtype if dtype in (np.float32, np.float64) else np.dtype(np.float32)
    r = g.add(op_type, [x], [out] if kind == dtype else 1, dtype=tensor_type(kind),
              **attrs)[0]
    if kind != dtype:
        cast(g, r, dtype, out)


@converter('_random_uniform_like')
def _random_uniform_like(g, node):
    _random_like(g, node, 'RandomUniformLike', low=float(g.attr(node, 'low')),
                 high=float(g.attr(node, 'high')))


@converter('_random_normal_like')
def _random_normal_like(g, node):
    _random_like(g, node, 'RandomNormalLike', mean=float(g.attr(node, 'loc')),
                 scale=float(g.attr(node, 'scale')))


@converter('_sample_multinomial')
def _sample_multinomial(g, node):
    if g.attr(node, 'get_prob'):
        g.error(node, 'get_prob=True (the log-likelihood output) has no ONNX form')
    x, = g.inputs(node)
    out = g.outputs(node)[0]
    in_shape, out_shape = g.in_shape(node, 0), g.out_shape(node, 0)
    if len(in_shape) != 2:
        g.error(node, 'only (batch, classes) probabilities export (ONNX Multinomial)')
    samples = int(np.prod(out_shape[1:])) if len(out_shape) > 1 else 1
    dtype = g.out_dtype(node, 0)
    kind = dtype if dtype in (np.int32, np.int64) else np.dtype(np.int32)
    logp = g.add('Log', [cast(g, x, np.float32) if g.in_dtype(node, 0) != np.float32
                         else x])[0]
    r = g.add('Multinomial', [logp], 1, sample_size=samples, dtype=tensor_type(kind))[0]
    if kind != dtype:
        r = cast(g, r, dtype)
    reshape(g, r, list(out_shape), out)


# ---------------------------------------------------------------------- cumulative, index
@converter('_np_cumsum')
def _cumsum(g, node):
    x, = g.inputs(node)
    out = g.outputs(node)[0]
    axis = g.attr(node, 'axis')
    if axis is None:
        x, axis = reshape(g, x, [-1]), 0
    if g.out_dtype(node, 0) != g.in_dtype(node, 0):
        x = cast(g, x, g.out_dtype(node, 0))
    g.add('CumSum', [x, g.const(np.array(axis, np.int64))], [out])


@converter('_contrib_index_array')
def _index_array(g, node):
    shape = g.in_shape(node, 0)
    axes = g.attr(node, 'axes')
    axes = list(range(len(shape))) if axes is None else [a % len(shape) for a in axes]
    grid = np.stack(np.indices(shape), axis=-1)[..., axes]
    g.add('Identity', [g.const(grid.astype(g.out_dtype(node, 0)))], g.outputs(node))


@converter('_ravel_multi_index')
def _ravel_multi_index(g, node):
    x, = g.inputs(node)
    shape = list(g.attr(node, 'shape'))
    strides = np.cumprod([1] + shape[::-1][:-1])[::-1].astype(g.in_dtype(node, 0))
    r = g.add('MatMul', [g.const(strides.reshape(1, -1)), x])[0]
    # MXNet truncates the flat index to an integer (toward zero)
    r = cast(g, cast(g, reshape(g, r, [-1]), np.int64), g.in_dtype(node, 0))
    g.add('Identity', [r], g.outputs(node))


@converter('_unravel_index')
def _unravel_index(g, node):
    x, = g.inputs(node)
    dtype = g.in_dtype(node, 0)
    shape = list(g.attr(node, 'shape'))
    strides = np.cumprod([1] + shape[::-1][:-1])[::-1]
    # MXNet's C arithmetic: the index truncated, then / and % toward zero, and the first
    # coordinate not reduced modulo its size
    xi = unsqueeze(g, cast(g, x, np.int64), [0])
    q = g.add('Div', [xi, g.const(strides.reshape(-1, 1).astype(np.int64))])[0]
    sizes = np.array([np.iinfo(np.int64).max] + shape[1:], np.int64).reshape(-1, 1)
    r = g.add('Mod', [q, g.const(sizes)], 1, fmod=1)[0]
    cast(g, r, dtype, g.outputs(node)[0])


def _region(g, node, shape):
    """The ScatterND indices of MXNet's ``begin``/``end``/``step`` region of ``shape``."""
    begin, end, step = (_tuple(g.attr(node, k)) for k in ('begin', 'end', 'step'))
    ranges = []
    for i, d in enumerate(shape):
        if i < len(begin):
            s = step[i] if i < len(step) and step[i] is not None else 1
            ranges.append(np.arange(d)[slice(begin[i], end[i], s)])
        else:
            ranges.append(np.arange(d))
    grid = np.meshgrid(*ranges, indexing='ij')
    return np.stack(grid, axis=-1).astype(np.int64), tuple(len(r) for r in ranges)


@converter('_slice_assign')
def _slice_assign(g, node):
    lhs, rhs = g.inputs(node)
    idx, _ = _region(g, node, g.in_shape(node, 0))
    g.add('ScatterND', [lhs, g.const(idx), rhs], g.outputs(node))


@converter('_slice_assign_scalar')
def _slice_assign_scalar(g, node):
    x, = g.inputs(node)
    idx, region = _region(g, node, g.in_shape(node, 0))
    values = g.const(np.full(region, g.attr(node, 'scalar'), g.in_dtype(node, 0)))
    g.add('ScatterND', [x, g.const(idx), values], g.outputs(node))


@converter('khatri_rao')
def _khatri_rao(g, node):
    """Column-wise Kronecker product: (m, k) and (n, k) give (m n, k), row i n + j."""
    ins = g.inputs(node)
    acc, rows = ins[0], g.in_shape(node, 0)[0]
    for i, b in enumerate(ins[1:], 1):
        n = g.in_shape(node, i)[0]
        prod = g.add('Mul', [unsqueeze(g, acc, [1]), unsqueeze(g, b, [0])])[0]
        rows *= n
        acc = reshape(g, prod, [rows, -1])
    g.add('Identity', [acc], g.outputs(node))


# ---------------------------------------------------------------------- forward-only forms
@converter('_contrib_gradientmultiplier')
def _gradient_multiplier(g, node):
    g.add('Identity', g.inputs(node), g.outputs(node))


@converter('_contrib_sign_ste')
def _sign_ste(g, node):
    g.add('Sign', g.inputs(node), g.outputs(node))


@converter('_contrib_round_ste')
def _round_ste(g, node):
    x, = g.inputs(node)
    dtype = g.in_dtype(node, 0)
    mag = g.add('Floor', [g.add('Add', [g.add('Abs', [x])[0],
                                        scalar_const(g, 0.5, dtype)])[0]])[0]
    g.add('Mul', [g.add('Sign', [x])[0], mag], g.outputs(node))


@converter('_scatter_plus_scalar', '_scatter_minus_scalar')
def _scatter_scalar(g, node):
    x, = g.inputs(node)
    op_type = 'Add' if node.op.name == '_scatter_plus_scalar' else 'Sub'
    g.add(op_type, [x, scalar_const(g, g.attr(node, 'scalar'), g.in_dtype(node, 0))],
          g.outputs(node))


@converter('_scatter_elemwise_div')
def _scatter_div(g, node):
    g.add('Div', g.inputs(node), g.outputs(node))


@converter('softmax_cross_entropy')
def _softmax_cross_entropy(g, node):
    data, label = g.inputs(node)
    logp = g.add('LogSoftmax', [data], 1, axis=1)[0]
    idx = unsqueeze(g, cast(g, label, np.int64), [1])
    picked = g.add('GatherElements', [logp, idx], 1, axis=1)[0]
    total = reduce(g, 'ReduceSum', g.add('Neg', [picked])[0], None, True)
    reshape(g, total, [1], g.outputs(node)[0])


# ---------------------------------------------------------------------- checks
def _flag(g, node, bad_bool):
    """The output (its shape and dtype): 1 where no element is ``bad``, else 0."""
    dtype = g.out_dtype(node, 0)
    any_bad = reduce(g, 'ReduceMax', cast(g, bad_bool, np.float32), None, True)
    ok = g.add('Sub', [g.const(np.array(1.0, np.float32)), any_bad])[0]
    flat = reshape(g, ok, list(g.out_shape(node, 0)))
    cast(g, flat, dtype, g.outputs(node)[0])


@converter('all_finite')
def _all_finite(g, node):
    x, = g.inputs(node)
    bad = g.add('Or', [g.add('IsNaN', [x])[0], g.add('IsInf', [x])[0]])[0]
    _flag(g, node, bad)


@converter('_contrib_allclose')
def _allclose(g, node):
    a, b = g.inputs(node)
    dtype = g.in_dtype(node, 0)
    diff = g.add('Abs', [g.add('Sub', [a, b])[0]])[0]
    tol = g.add('Add', [scalar_const(g, g.attr(node, 'atol'), dtype),
                        g.add('Mul', [scalar_const(g, g.attr(node, 'rtol'), dtype),
                                      g.add('Abs', [b])[0]])[0]])[0]
    bad = g.add('Greater', [diff, tol])[0]
    nan_a, nan_b = g.add('IsNaN', [a])[0], g.add('IsNaN', [b])[0]
    if g.attr(node, 'equal_nan'):
        both = g.add('And', [nan_a, nan_b])[0]
        one = g.add('Xor', [nan_a, nan_b])[0]
        bad = g.add('Or', [g.add('And', [bad, g.add('Not', [both])[0]])[0], one])[0]
    else:
        bad = g.add('Or', [bad, g.add('Or', [nan_a, nan_b])[0]])[0]
    _flag(g, node, bool_of(g, bad, np.bool_))


# ---------------------------------------------------------------------- images
@converter('_image_to_tensor')
def _image_to_tensor(g, node):
    """(H, W, C) or (N, H, W, C) of 0..255 to channels-first float32 in [0, 1]."""
    x, = g.inputs(node)
    rank = len(g.in_shape(node, 0))
    perm = [2, 0, 1] if rank == 3 else [0, 3, 1, 2]
    xf = cast(g, x, np.float32)
    scaled = g.add('Div', [xf, g.const(np.array(255.0, np.float32))])[0]
    g.add('Transpose', [scaled], g.outputs(node), perm=perm)


@converter('_image_normalize')
def _image_normalize(g, node):
    x, = g.inputs(node)
    shape = g.in_shape(node, 0)
    channels = shape[0] if len(shape) == 3 else shape[1]
    dtype = g.in_dtype(node, 0)

    def per_channel(values):
        values = list(values)
        values = values[:channels] if len(values) >= channels else values * channels
        return g.const(np.array(values[:channels], dtype).reshape(-1, 1, 1))
    centered = g.add('Sub', [x, per_channel(g.attr(node, 'mean'))])[0]
    g.add('Div', [centered, per_channel(g.attr(node, 'std'))], g.outputs(node))


@converter('_image_flip_left_right', '_image_flip_top_bottom')
def _image_flip(g, node):
    x, = g.inputs(node)
    rank = len(g.in_shape(node, 0))
    # (H, W, C) images (a leading batch axis counts from the end too)
    axis = rank - 2 if node.op.name == '_image_flip_left_right' else rank - 3
    g.add('Slice', [x, g.const(np.array([-1], np.int64)),
                    g.const(np.array([np.iinfo(np.int64).min], np.int64)),
                    g.const(np.array([axis], np.int64)), g.const(np.array([-1], np.int64))],
          g.outputs(node))


@converter('_image_crop')
def _image_crop(g, node):
    x, = g.inputs(node)
    rank = len(g.in_shape(node, 0))
    top, left = int(g.attr(node, 'y')), int(g.attr(node, 'x'))
    h, w = int(g.attr(node, 'height')), int(g.attr(node, 'width'))
    g.add('Slice', [x, g.const(np.array([top, left], np.int64)),
                    g.const(np.array([top + h, left + w], np.int64)),
                    g.const(np.array([rank - 3, rank - 2], np.int64))], g.outputs(node))


# ---------------------------------------------------------------------- linear algebra
@converter('_linalg_gemm')
def _linalg_gemm(g, node):
    a, b, c = g.inputs(node)
    out = g.outputs(node)[0]
    dtype = g.in_dtype(node, 0)
    rank = len(g.in_shape(node, 0))
    axis = g.attr(node, 'axis') % rank
    swap = None
    if axis != rank - 2:
        # the rows lie along ``axis``: swap it with the second last, as MXNet does
        swap = list(range(rank))
        swap[axis], swap[rank - 2] = swap[rank - 2], swap[axis]
        a, b, c = (g.add('Transpose', [t], 1, perm=swap)[0] for t in (a, b, c))
    perm = list(range(rank - 2)) + [rank - 1, rank - 2]
    if g.attr(node, 'transpose_a'):
        a = g.add('Transpose', [a], 1, perm=perm)[0]
    if g.attr(node, 'transpose_b'):
        b = g.add('Transpose', [b], 1, perm=perm)[0]
    ab = g.add('Mul', [g.add('MatMul', [a, b])[0],
                       scalar_const(g, g.attr(node, 'alpha'), dtype)])[0]
    bc = g.add('Mul', [c, scalar_const(g, g.attr(node, 'beta'), dtype)])[0]
    if swap is None:
        g.add('Add', [ab, bc], [out])
    else:
        g.add('Transpose', [g.add('Add', [ab, bc])[0]], [out], perm=swap)


def _diag_positions(rows, cols, offset):
    """Flat positions (row * cols + col) of the ``offset`` diagonal of a rows x cols
    matrix."""
    i = np.arange(max(0, -offset), min(rows, cols - offset))
    return i * cols + i + offset


@converter('_linalg_extractdiag')
def _linalg_extractdiag(g, node):
    a, = g.inputs(node)
    shape = g.in_shape(node, 0)
    rows, cols = shape[-2:]
    flat = reshape(g, a, list(shape[:-2]) + [rows * cols])
    pos = _diag_positions(rows, cols, int(g.attr(node, 'offset')))
    g.add('Gather', [flat, g.const(pos.astype(np.int64))], g.outputs(node), axis=-1)


@converter('_linalg_makediag')
def _linalg_makediag(g, node):
    """(..., k) to (..., n, n) with the vector on the ``offset`` diagonal: a product with
    a 0/1 placement matrix (exact: one nonzero term per element)."""
    a, = g.inputs(node)
    shape = g.in_shape(node, 0)
    k = shape[-1]
    offset = int(g.attr(node, 'offset'))
    n = k + abs(offset)
    place = np.zeros((k, n * n), g.in_dtype(node, 0))
    place[np.arange(k), _diag_positions(n, n, offset)] = 1
    flat = g.add('MatMul', [a, g.const(place)])[0]
    reshape(g, flat, list(shape[:-1]) + [n, n], g.outputs(node)[0])


@converter('_contrib_index_copy')
def _index_copy(g, node):
    old, index, new = g.inputs(node)
    idx = unsqueeze(g, cast(g, index, np.int64), [1])
    g.add('ScatterND', [old, idx, new], g.outputs(node))
