"""ONNX converters of the neural-network layers: convolutions, dense layers, activations,
normalizations, pooling, softmax and the loss layers' inference forward, Embedding,
UpSampling, depth/space rearrangements.

After MXNet 1.9.1's ``python/mxnet/onnx/mx2onnx/_op_translations/_op_translations_opset12.py``
and ``_opset13.py`` for which ONNX node each layer becomes; here the shapes come from
symgraph's inference, so ``fix_gamma`` folds to a gamma of ones, ``pooling_convention=
'full'`` becomes ``ceil_mode`` and a Deconvolution's ``target_shape`` becomes its pads.
"""
import math

import numpy as np

from ._common import (cast, channel_vector, reduce, reshape, slice_, to_shape, unsqueeze,
                      scalar_const, ONNX_FLOATS)
from ._registry import converter


def _spatial(g, node, key, n, fill):
    v = tuple(g.attr(node, key) or ())
    return list(v) if v else [fill] * n


def _layout_nc(g, node):
    layout = g.attr(node, 'layout')
    if layout and not (layout.startswith('NC') or layout == 'NCW'):
        g.error(node, 'layout %s: only channels-first layouts (NCW, NCHW, NCDHW) export'
                % layout)


# ---------------------------------------------------------------------- convolutions
@converter('Convolution', 'Convolution_v1')
def _convolution(g, node):
    _layout_nc(g, node)
    ins = g.inputs(node)
    kernel = list(g.attr(node, 'kernel'))
    n = len(kernel)
    pad = _spatial(g, node, 'pad', n, 0)
    inputs = ins[:2] if g.attr(node, 'no_bias') else ins[:3]
    g.add('Conv', inputs, g.outputs(node)[:1], kernel_shape=kernel,
          strides=_spatial(g, node, 'stride', n, 1),
          dilations=_spatial(g, node, 'dilate', n, 1), pads=pad + pad,
          group=int(g.attr(node, 'num_group')))


@converter('Deconvolution')
def _deconvolution(g, node):
    _layout_nc(g, node)
    ins = g.inputs(node)
    kernel = list(g.attr(node, 'kernel'))
    n = len(kernel)
    stride = _spatial(g, node, 'stride', n, 1)
    dilate = _spatial(g, node, 'dilate', n, 1)
    pad = _spatial(g, node, 'pad', n, 0)
    adj = _spatial(g, node, 'adj', n, 0)
    target = tuple(g.attr(node, 'target_shape') or ())
    if target and any(target):
        # MXNet's InferPad: the padding (and adj) that make the output target_shape
        in_sp = g.in_shape(node, 0)[2:]
        pad, adj = [], []
        for i in range(n):
            total = stride[i] * (in_sp[i] - 1) + dilate[i] * (kernel[i] - 1) + 1 - target[i]
            adj.append(total % 2)
            pad.append((total + 1) // 2)
    inputs = ins[:2] if g.attr(node, 'no_bias') else ins[:3]
    g.add('ConvTranspose', inputs, g.outputs(node)[:1], kernel_shape=kernel, strides=stride,
          dilations=dilate, pads=pad + pad, output_padding=adj,
          group=int(g.attr(node, 'num_group')))


@converter('FullyConnected')
def _fully_connected(g, node):
    ins = g.inputs(node)
    x, w = ins[0], ins[1]
    out, = g.outputs(node)[:1]
    rank = len(g.in_shape(node, 0))
    flatten = g.attr(node, 'flatten')
    dtype = g.in_dtype(node, 0)
    has_bias = not g.attr(node, 'no_bias')
    if (flatten or rank <= 2) and dtype in ONNX_FLOATS:
        if rank != 2:
            x = g.add('Flatten', [x], 1, axis=1)[0]
        g.add('Gemm', [x, w] + ([ins[2]] if has_bias else []), [out], transB=1)
        return
    if flatten and rank != 2:
        x = g.add('Flatten', [x], 1, axis=1)[0]
    w_value = g.param_of(node, 1)
    wt = g.const(np.ascontiguousarray(w_value.T)) if w_value is not None else \
        g.add('Transpose', [w], 1, perm=[1, 0])[0]
    if not has_bias:
        g.add('MatMul', [x, wt], [out])
        return
    y = g.add('MatMul', [x, wt])[0]
    g.add('Add', [y, ins[2]], [out])


# ---------------------------------------------------------------------- activations
def _activation(g, kind, x, out, dtype):
    if kind == 'relu':
        return g.add('Relu', [x], [out])
    if kind == 'sigmoid':
        return g.add('Sigmoid', [x], [out])
    if kind == 'tanh':
        return g.add('Tanh', [x], [out])
    if kind == 'softrelu':
        return g.add('Softplus', [x], [out])
    if kind == 'softsign':
        return g.add('Softsign', [x], [out])
    if kind == 'log_sigmoid':
        neg = g.add('Neg', [x])[0]
        sp = g.add('Softplus', [neg])[0]
        return g.add('Neg', [sp], [out])
    if kind == 'mish':
        sp = g.add('Softplus', [x])[0]
        th = g.add('Tanh', [sp])[0]
        return g.add('Mul', [x, th], [out])
    return None


@converter('Activation')
def _activation_op(g, node):
    kind = g.attr(node, 'act_type')
    if _activation(g, kind, g.inputs(node)[0], g.outputs(node)[0],
                   g.in_dtype(node, 0)) is None:
        g.error(node, 'act_type %r has no ONNX form' % kind)


@converter('relu')
def _relu(g, node):
    g.add('Relu', g.inputs(node), g.outputs(node))


@converter('sigmoid')
def _sigmoid(g, node):
    g.add('Sigmoid', g.inputs(node), g.outputs(node))


@converter('tanh')
def _tanh(g, node):
    g.add('Tanh', g.inputs(node), g.outputs(node))


@converter('softsign')
def _softsign(g, node):
    g.add('Softsign', g.inputs(node), g.outputs(node))


@converter('hard_sigmoid')
def _hard_sigmoid(g, node):
    g.add('HardSigmoid', g.inputs(node), g.outputs(node),
          alpha=float(g.attr(node, 'alpha')), beta=float(g.attr(node, 'beta')))


def _gelu(g, x, out, dtype):
    """MXNet's exact GELU: 0.5 x (1 + erf(x / sqrt 2))."""
    scaled = g.add('Div', [x, scalar_const(g, math.sqrt(2.0), dtype)])[0]
    erf = g.add('Erf', [scaled])[0]
    one = g.add('Add', [erf, scalar_const(g, 1.0, dtype)])[0]
    half = g.add('Mul', [x, scalar_const(g, 0.5, dtype)])[0]
    return g.add('Mul', [half, one], [out])


@converter('LeakyReLU')
def _leaky_relu(g, node):
    kind = g.attr(node, 'act_type')
    ins, out = g.inputs(node), g.outputs(node)[0]
    x = ins[0]
    dtype = g.in_dtype(node, 0)
    if kind == 'leaky':
        g.add('LeakyRelu', [x], [out], alpha=float(g.attr(node, 'slope')))
    elif kind == 'rrelu':       # inference: the mean of the slope's range
        slope = (g.attr(node, 'lower_bound') + g.attr(node, 'upper_bound')) / 2.0
        g.add('LeakyRelu', [x], [out], alpha=float(slope))
        if len(g.outputs(node)) > 1:        # the drawn slopes: zeros at inference
            g.add('ConstantOfShape', [g.add('Shape', [x])[0]], [g.outputs(node)[1]],
                  value=np.zeros(1, dtype))
    elif kind == 'elu':
        g.add('Elu', [x], [out], alpha=float(g.attr(node, 'slope')))
    elif kind == 'selu':
        g.add('Selu', [x], [out], alpha=1.6732632423543772, gamma=1.0507009873554805)
    elif kind == 'gelu':
        _gelu(g, x, out, dtype)
    elif kind == 'prelu':
        rank = len(g.in_shape(node, 0))
        gamma_shape = g.in_shape(node, 1)
        slope = ins[1]
        if rank > 2 and gamma_shape[0] != 1:
            slope = channel_vector(g, slope, rank, 1)
        g.add('PRelu', [x, slope], [out])
    else:
        g.error(node, 'act_type %r has no ONNX form' % kind)


# ---------------------------------------------------------------------- normalization
def _const_like(g, node, i, value):
    """An initializer of ``value`` with the shape and dtype of the node's input ``i``."""
    return g.const(np.full(g.in_shape(node, i), value, dtype=g.in_dtype(node, i)))


@converter('BatchNorm', 'BatchNorm_v1', '_contrib_SyncBatchNorm',
           '_contrib_BatchNormWithReLU')
def _batch_norm(g, node):
    ins, outs = g.inputs(node), g.outputs(node)
    x, gamma, beta, mean, var = ins[:5]
    dtype = g.in_dtype(node, 0)
    rank = len(g.in_shape(node, 0))
    axis = g.attr(node, 'axis', 1) % rank
    eps = float(g.attr(node, 'eps'))
    if g.attr(node, 'fix_gamma'):
        # MXNet's forward reads gamma as 1 whatever it holds (MXNet's exporter wrote it)
        gamma = _const_like(g, node, 1, 1)
    relu = node.op.name == '_contrib_BatchNormWithReLU'
    y = g.fresh(outs[0] + '_bn') if relu else outs[0]
    params = [gamma, beta, mean, var]
    if any(g.in_dtype(node, i) != dtype for i in range(1, 5)) and g.opset < 15:
        params = [cast(g, p, dtype) for p in params]
    if axis == 1 and rank >= 2:
        g.add('BatchNormalization', [x] + params, [y], epsilon=eps)
    else:
        # another channel axis: (x - mean) / sqrt(var + eps) * gamma + beta, broadcast
        gamma, beta, mean, var = [channel_vector(g, cast(g, p, dtype), rank, axis)
                                  for p in params]
        std = g.add('Sqrt', [g.add('Add', [var, scalar_const(g, eps, dtype)])[0]])[0]
        norm = g.add('Div', [g.add('Sub', [x, mean])[0], std])[0]
        g.add('Add', [g.add('Mul', [norm, gamma])[0], beta], [y])
    if relu:
        g.add('Relu', [y], [outs[0]])
    if g.attr(node, 'output_mean_var') and len(outs) >= 3:
        # MXNet's inference outputs: the moving mean and 1 / sqrt(moving_var + eps)
        # (BatchNorm_v1: the moving variance itself)
        mean_in, var_in = ins[3], ins[4]
        g.add('Identity', [mean_in], [outs[1]])
        if node.op.name == 'BatchNorm_v1':
            g.add('Identity', [var_in], [outs[2]])
        else:
            shifted = g.add('Add', [var_in, scalar_const(g, eps, g.in_dtype(node, 4))])[0]
            g.add('Reciprocal', [g.add('Sqrt', [shifted])[0]], [outs[2]])


def _normalize(g, x, axes, eps, dtype):
    """(x - mean) / sqrt(var + eps) over ``axes``; returns (normalized, mean, std)."""
    mean = reduce(g, 'ReduceMean', x, axes, True)
    d = g.add('Sub', [x, mean])[0]
    var = reduce(g, 'ReduceMean', g.add('Mul', [d, d])[0], axes, True)
    std = g.add('Sqrt', [g.add('Add', [var, scalar_const(g, eps, dtype)])[0]])[0]
    return g.add('Div', [d, std])[0], mean, std


@converter('LayerNorm')
def _layer_norm(g, node):
    ins, outs = g.inputs(node), g.outputs(node)
    x, gamma, beta = ins
    shape = g.in_shape(node, 0)
    rank = len(shape)
    axis = g.attr(node, 'axis') % rank
    eps = float(g.attr(node, 'eps'))
    dtype = g.in_dtype(node, 0)
    want_stats = g.attr(node, 'output_mean_var')
    if axis == rank - 1 and g.opset >= 17 and not want_stats:
        g.add('LayerNormalization', [x, gamma, beta], [outs[0]], axis=-1, epsilon=eps)
        return
    norm, mean, std = _normalize(g, x, [axis], eps, dtype)
    gamma_b = channel_vector(g, gamma, rank, axis)
    beta_b = channel_vector(g, beta, rank, axis)
    g.add('Add', [g.add('Mul', [norm, gamma_b])[0], beta_b], [outs[0]])
    if want_stats:
        g.add('Identity', [mean], [outs[1]])
        g.add('Identity', [std], [outs[2]])


@converter('InstanceNorm')
def _instance_norm(g, node):
    x, gamma, beta = g.inputs(node)
    g.add('InstanceNormalization', [x, gamma, beta], g.outputs(node)[:1],
          epsilon=float(g.attr(node, 'eps')))


@converter('GroupNorm')
def _group_norm(g, node):
    x, gamma, beta = g.inputs(node)
    outs = g.outputs(node)
    shape = g.in_shape(node, 0)
    groups = int(g.attr(node, 'num_groups'))
    dtype = g.in_dtype(node, 0)
    grouped = reshape(g, x, [0, groups, -1])
    norm, mean, std = _normalize(g, grouped, [2], float(g.attr(node, 'eps')), dtype)
    gamma_b = reshape(g, gamma, [1, groups, 1])
    beta_b = reshape(g, beta, [1, groups, 1])
    y = g.add('Add', [g.add('Mul', [norm, gamma_b])[0], beta_b])[0]
    to_shape(g, y, shape, outs[0], keep_batch=True)
    if g.attr(node, 'output_mean_var'):
        reshape(g, mean, [0, groups], outs[1])
        reshape(g, std, [0, groups], outs[2])


@converter('L2Normalization')
def _l2_normalization(g, node):
    x, = g.inputs(node)
    rank = len(g.in_shape(node, 0))
    dtype = g.in_dtype(node, 0)
    mode = g.attr(node, 'mode')
    axes = {'instance': list(range(1, rank)), 'channel': [1],
            'spatial': list(range(2, rank))}[mode]
    sq = reduce(g, 'ReduceSum', g.add('Mul', [x, x])[0], axes, True)
    norm = g.add('Sqrt', [g.add('Add', [sq, scalar_const(g, g.attr(node, 'eps'), dtype)])[0]])
    g.add('Div', [x, norm[0]], g.outputs(node)[:1])


@converter('LRN')
def _lrn(g, node):
    x, = g.inputs(node)
    g.add('LRN', [x], g.outputs(node)[:1], alpha=float(g.attr(node, 'alpha')),
          beta=float(g.attr(node, 'beta')), bias=float(g.attr(node, 'knorm')),
          size=int(g.attr(node, 'nsize')))


@converter('Dropout')
def _dropout(g, node):
    # inference: the identity (mode='always' would drop at inference too: refuse it)
    if g.attr(node, 'mode') == 'always' and float(g.attr(node, 'p')) > 0:
        g.error(node, "Dropout with mode='always' is random at inference; ONNX models "
                      "are deterministic")
    g.add('Identity', g.inputs(node)[:1], g.outputs(node)[:1])


# ---------------------------------------------------------------------- pooling
@converter('Pooling', 'Pooling_v1')
def _pooling(g, node):
    _layout_nc(g, node)
    x, = g.inputs(node)
    out = g.outputs(node)[0]
    pool = g.attr(node, 'pool_type')
    shape = g.in_shape(node, 0)
    n = len(shape) - 2
    if g.attr(node, 'global_pool'):
        if pool == 'max':
            g.add('GlobalMaxPool', [x], [out])
        elif pool == 'avg':
            g.add('GlobalAveragePool', [x], [out])
        elif pool == 'sum':
            reduce(g, 'ReduceSum', x, list(range(2, 2 + n)), True, out)
        elif pool == 'lp':
            g.add('GlobalLpPool', [x], [out], p=int(g.attr(node, 'p_value') or 2))
        else:
            g.error(node, 'pool_type %r has no ONNX form' % pool)
        return
    kernel = list(g.attr(node, 'kernel'))
    stride = _spatial(g, node, 'stride', n, 1)
    pad = _spatial(g, node, 'pad', n, 0)
    convention = g.attr(node, 'pooling_convention')
    if convention == 'same':
        g.error(node, "pooling_convention='same' has no ONNX form")
    # 'full' (MXNet's ceil rounding) as explicit padding at the end: ONNX's ceil_mode
    # drops a last window that starts in the padding, MXNet keeps it. Windows that start
    # past the input hold no element: MXNet gives them the lowest value (max) or 0; they
    # are padded onto the result (ONNX Runtime wants pads smaller than the kernel)
    in_sp, out_sp = shape[2:], g.out_shape(node, 0)[2:]
    if convention == 'full':
        keep = [min(out_sp[i], -(-(in_sp[i] + pad[i]) // stride[i])) for i in range(n)]
        end = [max(0, (keep[i] - 1) * stride[i] - pad[i] + kernel[i] - in_sp[i])
               for i in range(n)]
    else:
        keep, end = list(out_sp), list(pad)
    attrs = dict(kernel_shape=kernel, strides=stride)
    dtype = g.in_dtype(node, 0)
    y = g.fresh(out + '_pool')
    if pool == 'max':
        g.add('MaxPool', [x], [y], pads=pad + end, **attrs)
    elif pool == 'sum':
        # the padded zeros add nothing and the divisor is the whole window
        avg = g.add('AveragePool', [x], 1, pads=pad + end, count_include_pad=1, **attrs)[0]
        g.add('Mul', [avg, scalar_const(g, float(np.prod(kernel)), dtype)], [y])
    elif pool == 'avg':
        include = g.attr(node, 'count_include_pad')
        include = True if include is None else include
        if include and any(e > p for e, p in zip(end, pad)):
            # MXNet counts the explicit padding, not the area past it that 'full' adds:
            # pad the zeros as data, leave the rest out of the divisor
            real = [min(p, e) for p, e in zip(pad, end)]
            x = g.add('Pad', [x, g.const(np.array([0, 0] + pad + [0, 0] + real, np.int64))],
                      1, mode='constant')[0]
            g.add('AveragePool', [x], [y], pads=[0] * n + [e - r for e, r in zip(end, real)],
                  count_include_pad=0, **attrs)
        else:
            g.add('AveragePool', [x], [y], pads=pad + end,
                  count_include_pad=int(bool(include)), **attrs)
    elif pool == 'lp':
        g.add('LpPool', [x], [y], p=int(g.attr(node, 'p_value') or 2), pads=pad + end,
              **attrs)
    else:
        g.error(node, 'pool_type %r has no ONNX form' % pool)
    got = [(in_sp[i] + pad[i] + end[i] - kernel[i]) // stride[i] + 1 for i in range(n)]
    if got != keep:
        y = slice_(g, y, [0] * n, keep, list(range(2, 2 + n)))
    if keep != list(out_sp):
        fill = np.finfo(dtype).min if pool == 'max' and dtype.kind == 'f' else 0
        missing = [o - k for o, k in zip(out_sp, keep)]
        y = g.add('Pad', [y, g.const(np.array([0] * (n + 2) + [0, 0] + missing, np.int64)),
                          scalar_const(g, fill, dtype)], 1, mode='constant')[0]
    g.add('Identity', [y], [out])


# ---------------------------------------------------------------------- softmax family
def _softmax_core(g, node, x, axis, out, negate=False, log=False):
    dtype = g.in_dtype(node, 0)
    if negate:
        x = g.add('Neg', [x])[0]
    t = g.attr(node, 'temperature')
    if t is not None and float(t) != 1.0:
        x = g.add('Div', [x, scalar_const(g, float(t), dtype)])[0]
    out_dtype = g.out_dtype(node, 0)
    target = out if out_dtype == dtype else g.fresh(out + '_' + str(dtype))
    g.add('LogSoftmax' if log else 'Softmax', [x], [target], axis=int(axis))
    if out_dtype != dtype:
        cast(g, target, out_dtype, out)


def _masked_softmax(g, node, log):
    """softmax with ``use_length``: positions past each length along ``axis`` get 0
    (MXNet's output there), the others the softmax over the valid ones."""
    x, length = g.inputs(node)
    out = g.outputs(node)[0]
    shape = g.in_shape(node, 0)
    rank = len(shape)
    axis = g.attr(node, 'axis') % rank
    dtype = g.in_dtype(node, 0)
    steps = g.const(np.arange(shape[axis], dtype=np.int64).reshape(
        [-1] + [1] * (rank - 1 - axis)))
    lens = cast(g, unsqueeze(g, length, [axis]), np.int64)
    valid = g.add('Less', [steps, lens])[0]
    low = scalar_const(g, np.finfo(dtype).min if dtype.kind == 'f' else -1e30, dtype)
    masked = g.add('Where', [valid, x, low])[0]
    t = g.attr(node, 'temperature')
    if t is not None and float(t) != 1.0:
        masked = g.add('Div', [masked, scalar_const(g, float(t), dtype)])[0]
    sm = g.add('LogSoftmax' if log else 'Softmax', [masked], 1, axis=axis)[0]
    zero = scalar_const(g, 0, dtype)
    res = g.add('Where', [valid, sm, zero], [out] if g.out_dtype(node, 0) == dtype else 1)[0]
    if g.out_dtype(node, 0) != dtype:
        cast(g, res, g.out_dtype(node, 0), out)


@converter('softmax')
def _softmax(g, node):
    if g.attr(node, 'use_length'):
        return _masked_softmax(g, node, log=False)
    _softmax_core(g, node, g.inputs(node)[0], g.attr(node, 'axis'), g.outputs(node)[0])


@converter('log_softmax')
def _log_softmax(g, node):
    if g.attr(node, 'use_length'):
        return _masked_softmax(g, node, log=True)
    _softmax_core(g, node, g.inputs(node)[0], g.attr(node, 'axis'), g.outputs(node)[0],
                  log=True)


@converter('softmin')
def _softmin(g, node):
    if g.attr(node, 'use_length'):
        g.error(node, 'softmin with use_length has no ONNX form here')
    _softmax_core(g, node, g.inputs(node)[0], g.attr(node, 'axis'), g.outputs(node)[0],
                  negate=True)


def _softmax_flat(g, node, x, out):
    """Softmax over all but the first axis (MXNet's 'instance' softmax of an N-D input)."""
    shape = g.in_shape(node, 0)
    if len(shape) <= 2:
        g.add('Softmax', [x], [out], axis=-1)
        return
    flat = g.add('Flatten', [x], 1, axis=1)[0]
    sm = g.add('Softmax', [flat], 1, axis=-1)[0]
    to_shape(g, sm, shape, out, keep_batch=True)


@converter('SoftmaxOutput')
def _softmax_output(g, node):
    # the inference forward: the label input is not read
    x = g.inputs(node)[0]
    out = g.outputs(node)[0]
    if g.attr(node, 'multi_output'):
        g.add('Softmax', [x], [out], axis=1)
    elif g.attr(node, 'preserve_shape'):
        g.add('Softmax', [x], [out], axis=-1)
    else:
        _softmax_flat(g, node, x, out)


@converter('SoftmaxActivation')
def _softmax_activation(g, node):
    x, = g.inputs(node)
    out = g.outputs(node)[0]
    if g.attr(node, 'mode') == 'channel':
        g.add('Softmax', [x], [out], axis=1)
    else:
        _softmax_flat(g, node, x, out)


@converter('LogisticRegressionOutput')
def _logistic_output(g, node):
    g.add('Sigmoid', g.inputs(node)[:1], g.outputs(node)[:1])


@converter('LinearRegressionOutput', 'MAERegressionOutput', 'SVMOutput', 'MakeLoss',
           'make_loss', 'IdentityAttachKLSparseReg')
def _identity_loss(g, node):
    g.add('Identity', g.inputs(node)[:1], g.outputs(node)[:1])


# ---------------------------------------------------------------------- embedding & co
@converter('Embedding', '_contrib_SparseEmbedding')
def _embedding(g, node):
    idx, weight = g.inputs(node)
    idx = cast(g, idx, np.int64) if g.in_dtype(node, 0) != np.int64 else idx
    g.add('Gather', [weight, idx], g.outputs(node)[:1], axis=0)


@converter('UpSampling')
def _upsampling(g, node):
    ins, out = g.inputs(node), g.outputs(node)[0]
    kind = g.attr(node, 'sample_type')
    scale = int(g.attr(node, 'scale'))
    if kind == 'bilinear':
        # MXNet's bilinear UpSampling is a depthwise Deconvolution with the given weight
        c = g.in_shape(node, 0)[1]
        k = 2 * scale - scale % 2
        p = int(math.ceil((scale - 1) / 2.0))
        g.add('ConvTranspose', ins[:2], [out], kernel_shape=[k, k], strides=[scale, scale],
              pads=[p, p, p, p], group=int(c))
        return
    out_shape = g.out_shape(node, 0)
    ups = []
    for i, x in enumerate(ins):
        h = g.in_shape(node, i)
        scales = [1.0, 1.0, out_shape[2] / h[2], out_shape[3] / h[3]]
        ups.append(g.add('Resize', [x, '', g.const(np.array(scales, np.float32))], 1,
                         mode='nearest', coordinate_transformation_mode='asymmetric',
                         nearest_mode='floor')[0])
    if len(ups) == 1:
        g.add('Identity', ups, [out])
    elif g.attr(node, 'multi_input_mode') == 'sum':
        g.add('Sum', ups, [out])
    else:
        g.add('Concat', ups, [out], axis=1)


@converter('depth_to_space')
def _depth_to_space(g, node):
    g.add('DepthToSpace', g.inputs(node), g.outputs(node),
          blocksize=int(g.attr(node, 'block_size')), mode='DCR')


@converter('space_to_depth')
def _space_to_depth(g, node):
    g.add('SpaceToDepth', g.inputs(node), g.outputs(node),
          blocksize=int(g.attr(node, 'block_size')))
