"""Converters from ONNX operators to symgraph operators, one function per ONNX op_type.

After MXNet 1.9.1's ``python/mxnet/contrib/onnx/onnx2mx/_op_translations.py`` for the
operators it has (the same symgraph operators, named after the ONNX node), extended to
the operators PyTorch's ``torch.onnx`` and tf2onnx write for CNNs, detection heads and
transformers. A converter takes a :class:`~.import_onnx.ConvertContext` and returns the
Symbol of each ONNX output (or a NumPy constant, or None for an output nobody reads).
Constant-only nodes never reach a converter: the importer folds them.
"""
from __future__ import annotations

import itertools

import numpy as np

from .. import symbol as S

CONVERTERS = {}


def _register(*names):
    def deco(fn):
        for n in names:
            CONVERTERS[n] = fn
        return fn
    return deco


def _axis(axis, rank):
    return axis + rank if axis < 0 else axis


def _scalar(ctx, i):
    """The Python scalar of a one-element constant input ``i``, else None."""
    if ctx.is_const(i) and ctx.const(i).size == 1:
        v = ctx.const(i).reshape(-1)[0]
        return int(v) if np.issubdtype(ctx.const(i).dtype, np.integer) else float(v)
    return None


# --- element-wise ---------------------------------------------------------------------
_UNARY = {
    'Relu': lambda x, n: S.Activation(x, act_type='relu', name=n),
    'Sigmoid': lambda x, n: S.Activation(x, act_type='sigmoid', name=n),
    'Tanh': lambda x, n: S.Activation(x, act_type='tanh', name=n),
    'Softplus': lambda x, n: S.Activation(x, act_type='softrelu', name=n),
    'Softsign': lambda x, n: S.Activation(x, act_type='softsign', name=n),
    'Exp': lambda x, n: S.exp(x, name=n), 'Log': lambda x, n: S.log(x, name=n),
    'Sqrt': lambda x, n: S.sqrt(x, name=n), 'Abs': lambda x, n: S.abs(x, name=n),
    'Neg': lambda x, n: S.negative(x, name=n),
    'Reciprocal': lambda x, n: S.reciprocal(x, name=n),
    'Floor': lambda x, n: S.floor(x, name=n), 'Ceil': lambda x, n: S.ceil(x, name=n),
    'Round': lambda x, n: S.rint(x, name=n), 'Sign': lambda x, n: S.sign(x, name=n),
    'Erf': lambda x, n: S.erf(x, name=n), 'Not': lambda x, n: S.logical_not(x, name=n),
    'Sin': lambda x, n: S.sin(x, name=n), 'Cos': lambda x, n: S.cos(x, name=n),
    'Tan': lambda x, n: S.tan(x, name=n), 'Asin': lambda x, n: S.arcsin(x, name=n),
    'Acos': lambda x, n: S.arccos(x, name=n), 'Atan': lambda x, n: S.arctan(x, name=n),
    'Sinh': lambda x, n: S.sinh(x, name=n), 'Cosh': lambda x, n: S.cosh(x, name=n),
    'Asinh': lambda x, n: S.arcsinh(x, name=n), 'Acosh': lambda x, n: S.arccosh(x, name=n),
    'Atanh': lambda x, n: S.arctanh(x, name=n),
    'IsNaN': lambda x, n: S.broadcast_not_equal(x, x, name=n),
    'Identity': lambda x, n: S.identity(x, name=n),
}


def _unary(ctx):
    return _UNARY[ctx.op_type](ctx.sym(0), ctx.name)


for _name in _UNARY:
    CONVERTERS[_name] = _unary

#: ONNX binary op -> (broadcast operator, scalar operator, scalar operator with the
#: constant on the left)
_BINARY = {
    'Add': ('broadcast_add', '_plus_scalar', '_plus_scalar'),
    'Sub': ('broadcast_sub', '_minus_scalar', '_rminus_scalar'),
    'Mul': ('broadcast_mul', '_mul_scalar', '_mul_scalar'),
    'Div': ('broadcast_div', '_div_scalar', '_rdiv_scalar'),
    'Pow': ('broadcast_power', '_power_scalar', '_rpower_scalar'),
    'Max': ('broadcast_maximum', '_maximum_scalar', '_maximum_scalar'),
    'Min': ('broadcast_minimum', '_minimum_scalar', '_minimum_scalar'),
    'Equal': ('broadcast_equal', '_equal_scalar', '_equal_scalar'),
    'Greater': ('broadcast_greater', '_greater_scalar', '_lesser_scalar'),
    'Less': ('broadcast_lesser', '_lesser_scalar', '_greater_scalar'),
    'GreaterOrEqual': ('broadcast_greater_equal', '_greater_equal_scalar',
                       '_lesser_equal_scalar'),
    'LessOrEqual': ('broadcast_lesser_equal', '_lesser_equal_scalar',
                    '_greater_equal_scalar'),
    'And': ('broadcast_logical_and', '_logical_and_scalar', '_logical_and_scalar'),
    'Or': ('broadcast_logical_or', '_logical_or_scalar', '_logical_or_scalar'),
    'Xor': ('broadcast_logical_xor', '_logical_xor_scalar', '_logical_xor_scalar'),
    'Mod': ('broadcast_mod', '_mod_scalar', '_rmod_scalar'),
}


def _binary(ctx):
    full, scal, rscal = _BINARY[ctx.op_type]
    if ctx.op_type in ('Max', 'Min') and len(ctx.inputs) != 2:
        out = ctx.sym(0)
        for i in range(1, len(ctx.inputs)):
            out = getattr(S, full)(out, ctx.sym(i),
                                   name=ctx.name if i == len(ctx.inputs) - 1 else None)
        return out
    # a scalar constant keeps the other operand's shape only when that operand has at
    # least its rank (a (1,) constant broadcast against a 0-d value would add an axis)
    a, b = _scalar(ctx, 0), _scalar(ctx, 1)
    rank = ctx.imp.rank
    if b is not None and not ctx.is_const(0) and \
            ctx.const(1).ndim <= (rank(ctx.inputs[0]) or 0):
        return getattr(S, scal)(ctx.sym(0), scalar=b, name=ctx.name)
    if a is not None and not ctx.is_const(1) and \
            ctx.const(0).ndim <= (rank(ctx.inputs[1]) or 0):
        return getattr(S, rscal)(ctx.sym(1), scalar=a, name=ctx.name)
    return getattr(S, full)(ctx.sym(0), ctx.sym(1), name=ctx.name)


for _name in _BINARY:
    CONVERTERS[_name] = _binary


@_register('Sum', 'Mean')
def _variadic(ctx):
    xs = [ctx.sym(i) for i in range(len(ctx.inputs))]
    out = xs[0]
    for x in xs[1:]:
        out = S.broadcast_add(out, x)
    if ctx.op_type == 'Mean':
        out = out / float(len(xs))
    return S.identity(out, name=ctx.name)


@_register('Clip')
def _clip(ctx):
    lo = ctx.attr('min') if ctx.opset < 11 else _scalar(ctx, 1)
    hi = ctx.attr('max') if ctx.opset < 11 else _scalar(ctx, 2)
    if (ctx.has(1) and lo is None) or (ctx.has(2) and hi is None):
        raise ctx.error('min and max must be constants', NotImplementedError)
    x = ctx.sym(0)
    if lo is not None and hi is not None:
        return S.clip(x, a_min=lo, a_max=hi, name=ctx.name)
    if lo is not None:
        return S.maximum(x, lo, name=ctx.name)
    if hi is not None:
        return S.minimum(x, hi, name=ctx.name)
    return S.identity(x, name=ctx.name)


@_register('IsInf')
def _isinf(ctx):
    x = ctx.sym(0)
    pos, neg = ctx.attr('detect_positive', 1), ctx.attr('detect_negative', 1)
    if pos and neg:
        return S._equal_scalar(S.abs(x), scalar=float('inf'), name=ctx.name)
    if pos:
        return S._equal_scalar(x, scalar=float('inf'), name=ctx.name)
    if neg:
        return S._equal_scalar(x, scalar=float('-inf'), name=ctx.name)
    return S.zeros_like(x, name=ctx.name)


@_register('Where')
def _where(ctx):
    shape = ctx.out_shape()
    xs = [ctx.sym(i) for i in range(3)]
    if shape is None:
        raise ctx.error('the output shape must be static', NotImplementedError)
    for i in range(3):
        s = ctx.shape(i)
        if s != shape:
            if s is not None and len(s) < len(shape):
                xs[i] = S.reshape(xs[i], shape=(1,) * (len(shape) - len(s)) + tuple(s))
            xs[i] = S.broadcast_to(xs[i], shape=shape)
    return S.where(*xs, name=ctx.name)


# --- activations ----------------------------------------------------------------------
@_register('LeakyRelu')
def _leaky(ctx):
    return S.LeakyReLU(ctx.sym(0), act_type='leaky', slope=ctx.attr('alpha', 0.01),
                       name=ctx.name)


@_register('Elu')
def _elu(ctx):
    return S.LeakyReLU(ctx.sym(0), act_type='elu', slope=ctx.attr('alpha', 1.0),
                       name=ctx.name)


@_register('Selu')
def _selu(ctx):
    alpha, gamma = ctx.attr('alpha', 1.6732632), ctx.attr('gamma', 1.0507010)
    if abs(alpha - 1.6732632) < 1e-6 and abs(gamma - 1.0507010) < 1e-6:
        return S.LeakyReLU(ctx.sym(0), act_type='selu', name=ctx.name)
    x = ctx.sym(0)
    neg = (S.exp(S.minimum(x, 0.0)) - 1.0) * alpha
    return S.identity((S.relu(x) + neg) * gamma, name=ctx.name)


@_register('PRelu')
def _prelu(ctx):
    x_rank = ctx.rank(0)
    chans = (ctx.shape(0) or (None, None))[1] if x_rank >= 2 else None
    # MXNet's prelu has one slope per channel (axis 1): a constant slope of shape
    # (C, 1, ..., 1) broadcast over (N, C, ...); any other slope is written out
    per_channel = (chans,) + (1,) * (x_rank - 2)
    if ctx.opset < 7:       # PRelu-6 and older: a 1-D slope is per channel
        per_channel = (chans,)
    if chans is not None and ctx.is_const(1) and ctx.const(1).shape == per_channel:
        gamma = ctx.param('gamma', ctx.const(1).reshape(-1))
        return S.LeakyReLU(ctx.sym(0), gamma, act_type='prelu', name=ctx.name)
    x = ctx.sym(0)
    neg = S.broadcast_mul(S.minimum(x, 0.0), ctx.sym(1))
    return S.broadcast_add(S.relu(x), neg, name=ctx.name)


@_register('HardSigmoid')
def _hard_sigmoid(ctx):
    return S.hard_sigmoid(ctx.sym(0), alpha=ctx.attr('alpha', 0.2),
                          beta=ctx.attr('beta', 0.5), name=ctx.name)


@_register('HardSwish')
def _hard_swish(ctx):
    x = ctx.sym(0)
    return S.broadcast_mul(x, S.hard_sigmoid(x, alpha=1.0 / 6, beta=0.5), name=ctx.name)


@_register('Gelu')
def _gelu(ctx):
    x = ctx.sym(0)
    if ctx.attr('approximate', 'none') == 'tanh':
        inner = (x + (x ** 3) * 0.044715) * float(np.sqrt(2 / np.pi))
        return S.identity(x * 0.5 * (S.tanh(inner) + 1.0), name=ctx.name)
    return S.LeakyReLU(x, act_type='gelu', name=ctx.name)


@_register('Mish', 'Celu', 'ThresholdedRelu')
def _more_activations(ctx):
    x = ctx.sym(0)
    if ctx.op_type == 'Mish':
        return S.broadcast_mul(x, S.tanh(S.Activation(x, act_type='softrelu')),
                               name=ctx.name)
    if ctx.op_type == 'Celu':
        alpha = ctx.attr('alpha', 1.0)
        neg = (S.exp(S.minimum(x, 0.0) / alpha) - 1.0) * alpha
        return S.broadcast_add(S.relu(x), neg, name=ctx.name)
    alpha = ctx.attr('alpha', 1.0)
    return S.broadcast_mul(x, S._greater_scalar(x, scalar=alpha), name=ctx.name)


@_register('LpNormalization')
def _lp_normalization(ctx):
    p, axis = ctx.attr('p', 2), ctx.attr('axis', -1)
    x = ctx.sym(0)
    norm = S.norm(x, ord=p, axis=axis, keepdims=True)
    return S.broadcast_div(x, norm, name=ctx.name)


@_register('Hardmax')
def _hardmax(ctx):
    rank = ctx.rank(0)
    axis = _axis(ctx.attr('axis', -1 if ctx.opset >= 13 else 1), rank)
    if ctx.opset < 13 and axis != rank - 1:
        raise ctx.error('Hardmax before opset 13 over axes %d.. of a %d-D input'
                        % (axis, rank), NotImplementedError)
    depth = ctx.need_shape(0)[axis]
    hot = S.one_hot(S.argmax(ctx.sym(0), axis=axis), depth=depth)
    if axis != rank - 1:
        axes = list(range(rank - 1))
        axes.insert(axis, rank - 1)
        hot = S.transpose(hot, axes=tuple(axes))
    return S.identity(hot, name=ctx.name)


@_register('RandomUniform', 'RandomNormal', 'RandomUniformLike', 'RandomNormalLike')
def _random(ctx):
    # drawn from symgraph's generator (mx.random.seed), not from the ONNX seed attribute
    from onnx import helper
    dtype = np.dtype(helper.tensor_dtype_to_np_dtype(ctx.attr('dtype', 1))).name
    uniform = ctx.op_type.startswith('RandomUniform')
    a = ctx.attr('low', 0.0) if uniform else ctx.attr('mean', 0.0)
    b = ctx.attr('high', 1.0) if uniform else ctx.attr('scale', 1.0)
    if ctx.op_type.endswith('Like'):
        fn = S._random_uniform_like if uniform else S._random_normal_like
        kw = {'low': a, 'high': b} if uniform else {'loc': a, 'scale': b}
        return fn(ctx.sym(0), name=ctx.name, **kw)
    shape = tuple(ctx.attr('shape'))
    if uniform:
        return S.random.uniform(low=a, high=b, shape=shape, dtype=dtype, name=ctx.name)
    return S.random.normal(loc=a, scale=b, shape=shape, dtype=dtype, name=ctx.name)


@_register('Softmax', 'LogSoftmax')
def _softmax(ctx):
    fn = S.softmax if ctx.op_type == 'Softmax' else S.log_softmax
    rank = ctx.rank(0)
    axis = _axis(ctx.attr('axis', -1 if ctx.opset >= 13 else 1), rank)
    if ctx.opset >= 13 or axis == rank - 1:
        return fn(ctx.sym(0), axis=axis, name=ctx.name)
    # before opset 13: the input is coerced to 2-D at ``axis``
    shape = ctx.need_shape(0)
    x = S.reshape(ctx.sym(0), shape=(int(np.prod(shape[:axis])), -1))
    return S.reshape(fn(x, axis=-1), shape=shape, name=ctx.name)


# --- linear algebra -----------------------------------------------------------------
@_register('Gemm')
def _gemm(ctx):
    alpha, beta = ctx.attr('alpha', 1.0), ctx.attr('beta', 1.0)
    trans_a, trans_b = ctx.attr('transA', 0), ctx.attr('transB', 0)
    if not trans_a and alpha == 1.0 and (not ctx.has(2) or beta == 1.0) \
            and ctx.shape(1) is not None and (not ctx.has(2) or ctx.rank(2) == 1):
        w = ctx.sym(1) if trans_b else S.transpose(ctx.sym(1))
        hidden = ctx.shape(1)[0 if trans_b else 1]
        if ctx.has(2):
            return S.FullyConnected(ctx.sym(0), w, ctx.sym(2), num_hidden=hidden,
                                    name=ctx.name)
        return S.FullyConnected(ctx.sym(0), w, num_hidden=hidden, no_bias=True,
                                name=ctx.name)
    prod = S.linalg_gemm2(ctx.sym(0), ctx.sym(1), transpose_a=bool(trans_a),
                          transpose_b=bool(trans_b), alpha=alpha)
    if not ctx.has(2):
        return S.identity(prod, name=ctx.name)
    c = ctx.sym(2) if beta == 1.0 else ctx.sym(2) * beta
    return S.broadcast_add(prod, c, name=ctx.name)


@_register('MatMul')
def _matmul(ctx):
    ra, rb = ctx.rank(0), ctx.rank(1)
    a, b = ctx.sym(0), ctx.sym(1)
    if rb == 2:
        return S.dot(a, b, name=ctx.name)
    if ra == rb:
        sa, sb = ctx.shape(0), ctx.shape(1)
        if sa is not None and sb is not None and sa[:-2] != sb[:-2]:
            batch = tuple(max(x, y) for x, y in zip(sa[:-2], sb[:-2]))
            if sa[:-2] != batch:
                a = S.broadcast_to(a, shape=batch + sa[-2:])
            if sb[:-2] != batch:
                b = S.broadcast_to(b, shape=batch + sb[-2:])
        return S.linalg_gemm2(a, b, name=ctx.name)
    if ra > rb and ctx.shape(1) is not None:
        target = tuple(ctx.need_shape(0)[:-2]) + tuple(ctx.shape(1)[-2:])
        b = S.broadcast_to(S.reshape(b, shape=(1,) * (ra - rb) + ctx.shape(1)),
                           shape=target)
        return S.linalg_gemm2(a, b, name=ctx.name)
    raise ctx.error('MatMul of ranks %d and %d' % (ra, rb), NotImplementedError)


@_register('Einsum')
def _einsum(ctx):
    eq = ctx.attr('equation').replace(' ', '')
    lhs, out = eq.split('->')
    ops = lhs.split(',')
    if len(ops) != 2 or '.' in eq:
        raise ctx.error('only two-operand Einsum without ellipsis is supported: %s' % eq,
                        NotImplementedError)
    a, b = ops
    # matrix products over shared leading batch letters: "...ik,...kj->...ij" and the
    # transposed forms
    batch = a[:-2]
    if len(a) == len(b) == len(out) and b[:-2] == batch and out[:-2] == batch:
        (i, k1), (k2, j) = a[-2:], b[-2:]
        ta = tb = False
        if k1 == out[-2] or k1 == out[-1]:
            i, k1, ta = k1, i, True
        if k2 in out[-2:]:
            k2, j, tb = j, k2, True
        if k1 == k2 and out[-2:] == i + j:
            return S.linalg_gemm2(ctx.sym(0), ctx.sym(1), transpose_a=ta, transpose_b=tb,
                                  name=ctx.name)
    raise ctx.error('Einsum equation %r is not a batched matrix product' % eq,
                    NotImplementedError)


# --- convolution and pooling ----------------------------------------------------------
def _pads(ctx, kernel, strides, dilations, in_shape):
    """(begin, end) paddings, auto_pad worked out from the static input shape."""
    nd_ = len(kernel)
    auto = ctx.attr('auto_pad', 'NOTSET')
    if auto in ('NOTSET', 'VALID'):
        pads = list(ctx.attr('pads', [0] * (2 * nd_))) if auto == 'NOTSET' else [0] * 2 * nd_
        return pads[:nd_], pads[nd_:]
    if in_shape is None:
        raise ctx.error('auto_pad %s needs a static input shape' % auto, NotImplementedError)
    begin, end = [], []
    for d in range(nd_):
        size = in_shape[2 + d]
        out = -(-size // strides[d])
        total = max(0, (out - 1) * strides[d] + (kernel[d] - 1) * dilations[d] + 1 - size)
        small, big = total // 2, total - total // 2
        begin.append(small if auto == 'SAME_UPPER' else big)
        end.append(big if auto == 'SAME_UPPER' else small)
    return begin, end


def _pad_input(x, begin, end, value=0.0, shape=None):
    """Constant padding of the spatial axes (MXNet's pad takes 4-D and 5-D inputs: a 3-D
    one of known ``shape`` is padded as (N, C, 1, L))."""
    rank = 2 + len(begin)
    if rank == 3 and shape is not None:
        x = S.reshape(x, shape=(shape[0], shape[1], 1, shape[2]))
        out = _pad_input(x, [0] + list(begin), [0] + list(end), value)
        return S.reshape(out, shape=(shape[0], shape[1], shape[2] + begin[0] + end[0]))
    if rank not in (4, 5):
        raise NotImplementedError('asymmetric padding of a %d-D input' % rank)
    width = (0, 0, 0, 0) + tuple(v for pair in zip(begin, end) for v in pair)
    return S.pad(x, mode='constant', pad_width=width, constant_value=value)


@_register('Conv')
def _conv(ctx):
    wshape = ctx.need_shape(1)
    kernel = tuple(ctx.attr('kernel_shape', wshape[2:]))
    nd_ = len(kernel)
    strides = tuple(ctx.attr('strides', (1,) * nd_))
    dil = tuple(ctx.attr('dilations', (1,) * nd_))
    begin, end = _pads(ctx, kernel, strides, dil, ctx.shape(0))
    x = ctx.sym(0)
    if begin != end:
        x, begin = _pad_input(x, begin, end), [0] * nd_
    args = [x, ctx.sym(1)] + ([ctx.sym(2)] if ctx.has(2) else [])
    return S.Convolution(*args, kernel=kernel, stride=strides, dilate=dil, pad=tuple(begin),
                         num_filter=wshape[0], num_group=ctx.attr('group', 1),
                         no_bias=not ctx.has(2), name=ctx.name)


@_register('ConvTranspose')
def _deconv(ctx):
    wshape = ctx.need_shape(1)
    kernel = tuple(ctx.attr('kernel_shape', wshape[2:]))
    nd_ = len(kernel)
    group = ctx.attr('group', 1)
    strides = tuple(ctx.attr('strides', (1,) * nd_))
    dil = tuple(ctx.attr('dilations', (1,) * nd_))
    adj = tuple(ctx.attr('output_padding', (0,) * nd_))
    if ctx.attr('auto_pad', 'NOTSET') not in ('NOTSET', 'VALID') or 'output_shape' in ctx.attrs:
        raise ctx.error('auto_pad and output_shape are not supported', NotImplementedError)
    pads = list(ctx.attr('pads', [0] * (2 * nd_)))
    begin, end = pads[:nd_], pads[nd_:]
    args = [ctx.sym(0), ctx.sym(1)] + ([ctx.sym(2)] if ctx.has(2) else [])
    sym_pad = tuple(begin) if begin == end else (0,) * nd_
    out = S.Deconvolution(*args, kernel=kernel, stride=strides, dilate=dil, pad=sym_pad,
                          adj=adj, num_filter=wshape[1] * group, num_group=group,
                          no_bias=not ctx.has(2),
                          name=ctx.name if begin == end else ctx.sub('full'))
    if begin == end:
        return out
    # asymmetric: the full result cropped by the begin and end paddings
    return S.slice(out, begin=(None, None) + tuple(begin),
                   end=(None, None) + tuple(-e if e else None for e in end), name=ctx.name)


def _pool(ctx, pool_type):
    kernel = tuple(ctx.attr('kernel_shape'))
    nd_ = len(kernel)
    strides = tuple(ctx.attr('strides', (1,) * nd_))
    dil = tuple(ctx.attr('dilations', (1,) * nd_))
    begin, end = _pads(ctx, kernel, strides, dil, ctx.shape(0))
    if any(d != 1 for d in dil):
        if pool_type != 'max' or ctx.attr('ceil_mode', 0):
            raise ctx.error('dilated pooling other than max pooling with ceil_mode=0',
                            NotImplementedError)
        return _dilated_max_pool(ctx, kernel, strides, dil, begin, end)
    include = bool(ctx.attr('count_include_pad', 0))
    x = ctx.sym(0)
    if begin != end:
        if pool_type == 'avg' and not include:
            # the padding left out of the count: the mean of the zero-padded input over
            # the mean of zero-padded ones
            ones = _pad_input(S.ones_like(x), begin, end, 0.0, ctx.shape(0))
            x = _pad_input(x, begin, end, 0.0, ctx.shape(0))
            conv = 'full' if ctx.attr('ceil_mode', 0) else 'valid'
            pool = [S.Pooling(v, kernel=kernel, stride=strides, pool_type='avg',
                              pooling_convention=conv, count_include_pad=True)
                    for v in (x, ones)]
            return S.broadcast_div(pool[0], pool[1], name=ctx.name)
        x = _pad_input(x, begin, end, -np.inf if pool_type == 'max' else 0.0, ctx.shape(0))
        begin = [0] * nd_
    conv = 'full' if ctx.attr('ceil_mode', 0) else 'valid'
    return S.Pooling(x, kernel=kernel, stride=strides, pad=tuple(begin), pool_type=pool_type,
                     pooling_convention=conv, count_include_pad=include, name=ctx.name)


def _dilated_max_pool(ctx, kernel, strides, dil, begin, end):
    """MXNet's Pooling has no dilation: the maximum over one strided slice of the padded
    input per kernel offset."""
    shape = ctx.need_shape(0)
    x = ctx.sym(0)
    if any(begin) or any(end):
        x = _pad_input(x, begin, end, -np.inf, shape)
    size = [d + b + e for d, b, e in zip(shape[2:], begin, end)]
    out = [(n - dl * (k - 1) - 1) // st + 1 for n, k, st, dl in zip(size, kernel, strides, dil)]
    if all(st % dl == 0 for st, dl in zip(strides, dil)):
        # every window reads positions d * (i * s/d + k): one plain pool of x[::d]
        sub = S.slice(x, begin=(None, None) + (0,) * len(dil), end=(None,) * (2 + len(dil)),
                      step=(None, None) + tuple(dil))
        pooled = S.Pooling(sub, kernel=kernel, stride=tuple(st // dl for st, dl in
                                                           zip(strides, dil)),
                           pool_type='max')
        return S.slice(pooled, begin=(None, None) + (0,) * len(out),
                       end=(None, None) + tuple(out), name=ctx.name)
    if np.prod(kernel) > 64:
        raise ctx.error('dilated max pooling with a %s kernel and strides that are not '
                        'multiples of the dilation' % (kernel,), NotImplementedError)
    result = None
    for offsets in itertools.product(*[range(k) for k in kernel]):
        b = tuple(o * dl for o, dl in zip(offsets, dil))
        e = tuple(bi + (n - 1) * st + 1 for bi, n, st in zip(b, out, strides))
        part = S.slice(x, begin=(None, None) + b, end=(None, None) + e,
                       step=(None, None) + strides)
        result = part if result is None else S.broadcast_maximum(result, part)
    return S.identity(result, name=ctx.name)


CONVERTERS['MaxPool'] = lambda ctx: _pool(ctx, 'max')
CONVERTERS['AveragePool'] = lambda ctx: _pool(ctx, 'avg')


@_register('LpPool', 'GlobalLpPool')
def _lp_pool(ctx):
    p = ctx.attr('p', 2)
    if ctx.op_type == 'GlobalLpPool':
        return S.Pooling(ctx.sym(0), kernel=(1,) * (ctx.rank(0) - 2), global_pool=True,
                         pool_type='lp', p_value=p, name=ctx.name)
    kernel = tuple(ctx.attr('kernel_shape'))
    strides = tuple(ctx.attr('strides', (1,) * len(kernel)))
    begin, end = _pads(ctx, kernel, strides, (1,) * len(kernel), ctx.shape(0))
    x = ctx.sym(0)
    if begin != end:
        x, begin = _pad_input(x, begin, end), [0] * len(kernel)
    return S.Pooling(x, kernel=kernel, stride=strides, pad=tuple(begin), pool_type='lp',
                     p_value=p, name=ctx.name)


@_register('GlobalAveragePool', 'GlobalMaxPool')
def _global_pool(ctx):
    kind = 'avg' if ctx.op_type == 'GlobalAveragePool' else 'max'
    return S.Pooling(ctx.sym(0), kernel=(1,) * (ctx.rank(0) - 2), global_pool=True,
                     pool_type=kind, name=ctx.name)


# --- normalization --------------------------------------------------------------------
@_register('BatchNormalization')
def _batch_norm(ctx):
    args = [ctx.sym(i) for i in range(5)]
    return S.BatchNorm(*args, eps=ctx.attr('epsilon', 1e-5),
                       momentum=ctx.attr('momentum', 0.9), fix_gamma=False,
                       name=ctx.name)


@_register('InstanceNormalization')
def _instance_norm(ctx):
    return S.InstanceNorm(ctx.sym(0), ctx.sym(1), ctx.sym(2),
                          eps=ctx.attr('epsilon', 1e-5), name=ctx.name)


@_register('LayerNormalization')
def _layer_norm(ctx):
    rank = ctx.rank(0)
    axis = _axis(ctx.attr('axis', -1), rank)
    eps = ctx.attr('epsilon', 1e-5)
    beta = ctx.sym(2) if ctx.has(2) else None
    if axis == rank - 1 and ctx.rank(1) == 1:
        if beta is None:
            beta = ctx.param('beta', np.zeros(ctx.need_shape(1), np.float32))
        return S.LayerNorm(ctx.sym(0), ctx.sym(1), beta, axis=-1, eps=eps, name=ctx.name)
    axes = tuple(range(axis, rank))
    x = ctx.sym(0)
    centred = S.broadcast_sub(x, S.mean(x, axis=axes, keepdims=True))
    var = S.mean(S.square(centred), axis=axes, keepdims=True)
    out = S.broadcast_mul(S.broadcast_div(centred, S.sqrt(var + eps)), ctx.sym(1))
    if beta is not None:
        out = S.broadcast_add(out, beta)
    return S.identity(out, name=ctx.name)


@_register('LRN')
def _lrn(ctx):
    return S.LRN(ctx.sym(0), alpha=ctx.attr('alpha', 1e-4), beta=ctx.attr('beta', 0.75),
                 knorm=ctx.attr('bias', 1.0), nsize=ctx.attr('size'), name=ctx.name)


@_register('Dropout')
def _dropout(ctx):
    ratio = _scalar(ctx, 1) if ctx.opset >= 12 else ctx.attr('ratio', 0.5)
    out = S.Dropout(ctx.sym(0), p=0.5 if ratio is None else ratio, name=ctx.name)
    return [out] + [None] * (len(ctx.outputs) - 1)


# --- reductions -----------------------------------------------------------------------
_REDUCE = {'ReduceSum': 'sum', 'ReduceMean': 'mean', 'ReduceMax': 'max', 'ReduceMin': 'min',
           'ReduceProd': 'prod'}


@_register('ReduceSum', 'ReduceMean', 'ReduceMax', 'ReduceMin', 'ReduceProd', 'ReduceL1',
           'ReduceL2', 'ReduceSumSquare', 'ReduceLogSumExp', 'ReduceLogSum')
def _reduce(ctx):
    keep = bool(ctx.attr('keepdims', 1))
    axes = ctx.const_ints(1, 'axes')
    if not axes:
        if ctx.attr('noop_with_empty_axes', 0):
            return S.identity(ctx.sym(0), name=ctx.name)
        axes = list(range(ctx.rank(0)))
    axes = tuple(_axis(a, ctx.rank(0)) for a in axes)
    x, op = ctx.sym(0), ctx.op_type
    if op in _REDUCE:
        return getattr(S, _REDUCE[op])(x, axis=axes, keepdims=keep, name=ctx.name)
    if op == 'ReduceL1':
        return S.sum(S.abs(x), axis=axes, keepdims=keep, name=ctx.name)
    if op == 'ReduceL2':
        return S.sqrt(S.sum(S.square(x), axis=axes, keepdims=keep), name=ctx.name)
    if op == 'ReduceSumSquare':
        return S.sum(S.square(x), axis=axes, keepdims=keep, name=ctx.name)
    if op == 'ReduceLogSum':
        return S.log(S.sum(x, axis=axes, keepdims=keep), name=ctx.name)
    top = S.max(x, axis=axes, keepdims=True)
    lse = S.log(S.sum(S.exp(S.broadcast_sub(x, top)), axis=axes, keepdims=True))
    out = lse + top
    return S.identity(out if keep else S.squeeze(out, axis=axes), name=ctx.name)


@_register('ArgMax', 'ArgMin')
def _arg(ctx):
    if ctx.attr('select_last_index', 0):
        raise ctx.error('select_last_index=1 is not supported', NotImplementedError)
    fn = S.argmax if ctx.op_type == 'ArgMax' else S.argmin
    idx = fn(ctx.sym(0), axis=ctx.attr('axis', 0), keepdims=bool(ctx.attr('keepdims', 1)))
    return S.Cast(idx, dtype='int64', name=ctx.name)


@_register('TopK')
def _topk(ctx):
    k = ctx.const_ints(1, 'k')[0]
    out = S.topk(ctx.sym(0), axis=ctx.attr('axis', -1), k=k, ret_typ='both',
                 is_ascend=not ctx.attr('largest', 1), dtype='int64', name=ctx.name)
    return [out[0], out[1]]
