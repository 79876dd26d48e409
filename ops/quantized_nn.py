"""The quantized layers with weights: ``_contrib_quantized_conv``,
``_contrib_quantized_fully_connected``, ``_contrib_quantized_batch_norm`` and
``_contrib_quantized_embedding``, after MXNet 1.9.1's src/operator/quantization/ and the
oneDNN kernels (mkldnn/) its CPU build runs.

Convolution and fully connected accumulate int8 x int8 (or uint8 x int8) products exactly
in int32 (computed here in float64, exact below 2**53, or by the CPU backend's int8 kernel)
and return the int32 sums with MXNet's range rule (``product_range``: one step of the data
times one step of the weight times MAX_INT). The bias differs as MXNet's kernels do: the
convolution adds the int8 bias values as they are (oneDNN's quantized_conv), the fully
connected layer first rescales them onto the product's levels (truncated toward zero).
"""
import numpy as np

from symgraph.opdef import CPU_KERNELS, Param, TypeInferenceError, cpu_kernel, register

from .conv import Convolution
from .indexing import Embedding
from .nn import FullyConnected
from .norm import BatchNorm
from .quantized import (F32, INT8_RANGE, UINT8_RANGE, QuantizedBase, _int_dtype, max_abs, on_host,
                        one_level, rng, saturate, scalar)


def product_range(data_dtype, lo_a, hi_a, lo_b, hi_b, all_sign=None):
    """(min, max) of the int32 result of ``data_dtype`` data times int8 weights: MXNet's
    QuantizationRangeForS8S8MultiplicationStruct for int8 data (or ``all_sign``), one
    step of each 1/127 of its range; its S8U8 struct for uint8 data, whose template types
    make the data's step 1/127 and the weight's 1/255 of their ranges."""
    signed = np.dtype(data_dtype) == np.int8 if all_sign is None else all_sign
    a = one_level(np.int8, lo_a, hi_a, signed)
    b = one_level(np.int8 if signed else np.uint8, lo_b, hi_b, signed)
    hi = F32(F32(a * b) * F32(2147483647))
    return -hi, hi


def _kernel(name):
    """The CPU backend's int8 kernel ``name``, or None (also where this core's CpuKernels
    protocol predates it)."""
    return cpu_kernel(name) if name in CPU_KERNELS else None


def int_matmul(x, w, token=None, cache=None):
    """x (M, K) @ w.T (N, K) of int8/uint8 arrays as exact int32 (the backend's int8
    inner product where it takes them, else float64 sums). With a ``token`` (and the
    caller's ``cache`` dict) ``w`` is one layer's constant, reordered by the backend only
    when the token changes."""
    kernel = _kernel('int8_matmul')
    if kernel is not None:
        y = kernel(x, w) if token is None else kernel(x, w, token=token, cache=cache)
        if y is not None:
            return y
    return (x.astype(np.float64) @ w.astype(np.float64).T).astype(np.int32)


class _WeightedBase(QuantizedBase):
    """Inputs data, weight[, bias], then a (min, max) pair for each."""

    def data_names(self):
        return ['data', 'weight'] if self.no_bias else ['data', 'weight', 'bias']

    def infer_type(self, in_types):
        n = self.n_data()
        _int_dtype(in_types[0], ('int8', 'uint8'), self.name)
        i8, f = np.dtype(np.int8), np.dtype(F32)
        return [in_types[0]] + [i8] * (n - 1) + [f] * (2 * n), \
            [np.dtype(np.int32), f, f], []

    def ranges(self, inputs):
        n = self.n_data()
        return [scalar(v) for v in inputs[n:]]


@register
class QuantizedConv(_WeightedBase, params_from=Convolution):
    """int8/uint8 convolution into int32 (MXNet's oneDNN quantized_conv: the int8 bias
    added unscaled, the range by the S8S8 rule for either data type)."""

    name = '_contrib_quantized_conv'

    def check(self):
        super().check()
        if self.num_group != 1:
            raise TypeInferenceError('_contrib_quantized_conv only supports num_group=1, '
                                     'got %d' % self.num_group)

    @on_host
    def forward(self, xp, inputs, aux, is_train):
        x, w = inputs[0], inputs[1]
        r = self.ranges(inputs)
        y = conv_int32(self.float_op, x, w)
        if not self.no_bias:
            y += inputs[2].astype(np.int32).reshape((1, -1) + (1,) * (y.ndim - 2))
        lo, hi = product_range(x.dtype, r[0], r[1], r[2], r[3], all_sign=True)
        return [y] + rng(lo, hi)


def conv_int32(conv, x, w, bias=None, token=None, cache=None):
    """The exact int32 convolution of integer arrays (``conv`` the float Convolution
    giving strides and padding), plus an int32 ``bias``. With a ``token`` (and the
    caller's ``cache`` dict) ``w`` and ``bias`` are one layer's constants, reordered by
    the backend only when the token changes."""
    kernel = _kernel('int8_conv')
    y = None
    if kernel is not None:
        y = kernel(x, w, bias, conv.st, conv.pd, conv.dl, conv.num_group, token=token,
                   cache=cache)
    if y is None:
        y = conv.forward(np, [x.astype(np.float64), w.astype(np.float64)]
                         + ([] if conv.no_bias else [np.zeros(w.shape[0])]), [], False)[0]
        y = y.astype(np.int32)
        if bias is not None:
            y += bias.reshape((1, -1) + (1,) * (y.ndim - 2))
    return y


def conv_requantized(conv, x, w, bias, token, cache, scales, dtype, relu, **fused_sum):
    """The backend's int8 convolution requantized in the same primitive
    (``float32(sums + bias) * scales``, a relu where ``relu``, as ``dtype``), or None
    where it declines or is missing (the caller then requantizes :func:`conv_int32`'s
    sums itself). ``fused_sum``: ``summand``, ``sum_scale`` and ``post_relu``, a
    residual sum in the same primitive (see ``int8_conv`` in backend/onednn/int8.py)."""
    kernel = _kernel('int8_conv')
    if kernel is None or token is None:
        return None
    return kernel(x, w, bias, conv.st, conv.pd, conv.dl, conv.num_group, token=token,
                  cache=cache, scales=scales, dtype=dtype, relu=relu, **fused_sum)


@register
class QuantizedFullyConnected(_WeightedBase, params_from=FullyConnected):
    """int8/uint8 data times int8 weights into int32 (MXNet's oneDNN quantized FC: the
    bias rescaled onto the product's levels, ``trunc(b * data_scale * weight_scale *
    max|bias| / 127.5)``; S8S8 range for int8 data, S8U8 for uint8)."""

    name = '_contrib_quantized_fully_connected'

    @on_host
    def forward(self, xp, inputs, aux, is_train):
        x, w = inputs[0], inputs[1]
        r = self.ranges(inputs)
        x2 = x.reshape(x.shape[0], -1) if self.flatten else x.reshape(-1, x.shape[-1])
        y = int_matmul(x2, w)
        if not self.no_bias:
            data_range = INT8_RANGE if x.dtype == np.int8 else UINT8_RANGE
            data_scale = F32(data_range / max_abs(r[0], r[1]))
            weight_scale = F32(INT8_RANGE / max_abs(r[2], r[3]))
            rescale = F32(F32(F32(data_scale * weight_scale) * max_abs(r[4], r[5]))
                          / INT8_RANGE)
            y += np.trunc(inputs[2].astype(F32) * rescale).astype(np.int32)
        oshape = (x.shape[0], w.shape[0]) if self.flatten else x.shape[:-1] + (w.shape[0],)
        lo, hi = product_range(x.dtype, r[0], r[1], r[2], r[3])
        return [y.reshape(oshape)] + rng(lo, hi)


@register
class QuantizedEmbedding(QuantizedBase, params_from=Embedding):
    """Rows of an int8 table; the table's range passes through."""

    name = '_contrib_quantized_embedding'

    def list_arguments(self):
        return ['data', 'weight', 'min_weight', 'max_weight']

    def infer_shape(self, in_shapes, out_shapes=None):
        ins, outs, _ = self.float_op.infer_shape(list(in_shapes[:2]))
        return list(ins) + [(1,), (1,)], [outs[0], (1,), (1,)], []

    def infer_type(self, in_types):
        f = np.dtype(F32)
        return [in_types[0], np.dtype(np.int8), f, f], [np.dtype(np.int8), f, f], []

    def forward(self, xp, inputs, aux, is_train):
        y = self.float_op.forward(np, inputs[:2], [], False)[0]
        return [y] + [a.copy() for a in inputs[2:4]]


@register
class QuantizedBatchNorm(QuantizedBase, params_from=BatchNorm):
    """Inference batch norm on int8 data onto a calibrated int8 range (oneDNN's: scale
    ``gamma / sqrt(var + eps) * max|data| / max|out|``, shift ``(beta - mean * gamma /
    sqrt(var + eps)) * 127.5 / max|out|``; uint8 data first reordered to int8)."""

    name = '_contrib_quantized_batch_norm'
    min_calib_range = Param(float, None, doc='calibrated minimum of the output')
    max_calib_range = Param(float, None, doc='calibrated maximum of the output')
    # MXNet's signature: BatchNorm's parameters, then the calibrated range
    param_order = ('eps', 'momentum', 'fix_gamma', 'use_global_stats', 'output_mean_var',
                   'axis', 'cudnn_off', 'min_calib_range', 'max_calib_range')

    def list_arguments(self):
        return ['data', 'gamma', 'beta', 'min_data', 'max_data']

    def list_auxiliary_states(self):
        return ['moving_mean', 'moving_var']

    def mxnet_input_order(self):
        # MXNet lists the moving statistics between beta and min_data (FMutateInputs 3, 4)
        return [0, 1, 2, 5, 6, 3, 4]

    def infer_shape(self, in_shapes, out_shapes=None):
        c = None
        if in_shapes[0] is not None and len(in_shapes[0]) > 1:
            c = (in_shapes[0][self.axis % len(in_shapes[0])],)
        return [in_shapes[0], c, c, (1,), (1,)], [in_shapes[0], (1,), (1,)], [c, c]

    def infer_type(self, in_types):
        _int_dtype(in_types[0], ('int8', 'uint8'), self.name)
        f = np.dtype(F32)
        return [in_types[0]] + [f] * 4, [np.dtype(np.int8), f, f], [f, f]

    @on_host
    def forward(self, xp, inputs, aux, is_train):
        if self.min_calib_range is None or self.max_calib_range is None:
            raise TypeInferenceError('_contrib_quantized_batch_norm needs min_calib_range '
                                     'and max_calib_range (MXNet refuses it uncalibrated)')
        x, gamma, beta = inputs[:3]
        mean, var = aux
        abs_data = max_abs(scalar(inputs[3]), scalar(inputs[4]))
        lo, hi = F32(self.min_calib_range), F32(self.max_calib_range)
        abs_out = max_abs(lo, hi)
        if x.dtype == np.uint8:
            x = saturate(x.astype(F32) * F32(INT8_RANGE / UINT8_RANGE), np.int8)
        invstd = (1.0 / np.sqrt(var.astype(F32) + F32(self.eps))).astype(F32)
        g = np.ones_like(gamma, dtype=F32) if self.fix_gamma else gamma.astype(F32)
        scale = (g * invstd * abs_data / abs_out).astype(F32)
        shift = ((beta - mean * g * invstd) * INT8_RANGE / abs_out).astype(F32)
        shape = [1] * x.ndim
        shape[self.axis % x.ndim] = -1
        # oneDNN normalises with the rescaled statistics mean 0, variance 1, and eps kept
        inv = F32(1.0 / np.sqrt(F32(1.0) + F32(self.eps)))
        y = (x.astype(F32) * inv) * scale.reshape(shape) + shift.reshape(shape)
        return [saturate(y, np.int8)] + rng(lo, hi)
