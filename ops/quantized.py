"""The int8 operators of MXNet 1.9.1's quantization flow: ``_contrib_quantize_v2``,
``_contrib_requantize`` and the quantized layers that carry a float range with their
integer data (``_contrib_quantized_act``, ``_pooling``, ``_flatten``, ``_concat``,
``_elemwise_add``, ``_elemwise_mul``, ``_embedding``), after MXNet 1.9.1's
src/operator/quantization/ (quantization_utils.h for the range rules, and the oneDNN kernels
under mkldnn/ that MXNet's CPU build runs).

Every quantized operator returns ``(output, min_output, max_output)``: an int8/uint8/int32
array and the float range it stands for, each range a (1,) float32 array; the inputs are the
data arrays followed by a (min, max) pair per data array. The convolution and the fully
connected layer live in ``quantized_nn.py``.

The arithmetic is that of MXNet's CPU build (the oneDNN kernels): a float maps onto int8
with the scale ``127.5 / max(|min|, |max|)`` (uint8: ``255.5 / ...``), rounded to nearest
even and saturated, as oneDNN's reorders do; scales are float32 products computed in
MXNet's order. The first-generation ``_contrib_quantize``/``_contrib_dequantize`` keep the
reference formulas (``quantize.py``).
"""
import functools

import numpy as np

from symgraph.opdef import CPU_KERNELS, Operator, Param, ShapeError, TypeInferenceError, \
    cpu_kernel, register, unify_shape

from .nn import Activation
from .pooling import Pooling
from .shape import Flatten
from .slicing import Concat

F32 = np.float32
#: MXNet's kInt8Range / kUint8Range (quantization_utils.h)
INT8_RANGE = F32(127.5)
UINT8_RANGE = F32(255.5)
INT32_MAX = 2147483647
_OUT_TYPES = ('auto', 'int8', 'uint8')


def saturate(x, dtype):
    """``x`` (float) rounded to nearest even and clipped into integer ``dtype``, as a
    oneDNN reorder with an output scale writes it."""
    info = np.iinfo(dtype)
    return np.clip(np.rint(x), info.min, info.max).astype(dtype)


def _scaled(x, scale, dtype):
    """float32 ``x`` (N, C, ...) times the float32 ``scale``, rounded to nearest even and
    saturated into int8/uint8 ``dtype`` (the bits of :func:`saturate`) by the CPU
    backend's scaled reorder (``int8_requantize``), or None. Images ((N, C, *S), 2 or 3
    spatial axes) come out lying channels last, the layout the backend's int8
    convolutions read (one reorder instead of a second one there)."""
    if x.dtype != F32 or x.ndim < 2 or 'int8_requantize' not in CPU_KERNELS:
        return None
    kernel = cpu_kernel('int8_requantize')
    if kernel is None:
        return None
    return kernel(x, np.full(x.shape[1], scale, F32), dtype, ('quantize', float(scale)), None,
                  channels_last=x.ndim in (4, 5))


def max_abs(a, b):
    return F32(max(abs(float(a)), abs(float(b))))


def quantize_scale(dtype, lo, hi):
    """MXNet's GetQuantizeScale: int8 127.5 (uint8 255.5) over ``max(|lo|, |hi|)``; MAX_INT
    for a zero range."""
    real = max_abs(lo, hi)
    q = INT8_RANGE if np.dtype(dtype) == np.int8 else UINT8_RANGE
    return F32(q / real) if real else F32(INT32_MAX)


def one_level(dtype, lo, hi, all_sign):
    """FloatForOneQuantizedLevel: the float one step of ``dtype`` stands for."""
    info = np.iinfo(dtype)
    rng = min(abs(info.min), abs(info.max)) if all_sign else info.max
    return F32(max_abs(lo, hi) / F32(rng))


def out_type_of(out_type, min_calib):
    """MXNet's GetQuantizeOutputType: 'auto' is uint8 for a calibrated range from 0 up,
    else int8."""
    if out_type == 'auto':
        return np.dtype(np.uint8 if min_calib is not None and min_calib >= 0 else np.int8)
    return np.dtype(out_type)


def scalar(a):
    return F32(np.asarray(a).reshape(-1)[0])


def rng(lo, hi):
    return [np.array([lo], F32), np.array([hi], F32)]


def _int_dtype(t, allowed, what):
    if t is not None and np.dtype(t).name not in allowed:
        raise TypeInferenceError('%s: %s must be %s, got %s'
                                 % (what, 'data', ' or '.join(allowed), np.dtype(t).name))


def on_host(forward):
    """``forward`` run in NumPy on host copies when called with CuPy (``xp`` not NumPy),
    its results and auxiliary updates copied back to the device. The int8 operators
    compute what MXNet 1.9.1's CPU build (oneDNN) computes, rounding step for step; on a
    GPU they give those same bits by computing on the host (MXNet's own GPU build runs
    only some of them, through cuDNN, with other rounding)."""
    @functools.wraps(forward)
    def run(self, xp, inputs, aux, is_train):
        if xp is np:
            return forward(self, xp, inputs, aux, is_train)
        host_aux = [xp.asnumpy(a) for a in aux]
        outs = forward(self, np, [xp.asnumpy(a) for a in inputs], host_aux, is_train)
        for a, h in zip(aux, host_aux):
            a[...] = xp.asarray(h)
        return [xp.asarray(o) for o in outs]
    return run


class QuantizedBase(Operator):
    """A quantized operator: ``n_data`` integer inputs, each followed (after all of them)
    by its float (min, max); outputs (data, min, max). ``params_from`` copies the float
    operator's parameters (MXNet parses a quantized node's attributes with the float
    operator's parser), and :attr:`float_op` is that operator, for shape rules and for the
    arithmetic done exactly in float64."""

    no_grad = True
    needs_inputs = False
    float_cls = None

    def __init_subclass__(cls, params_from=None, **kw):
        if params_from is not None:
            cls.float_cls = params_from
            for k, p in params_from._params.items():
                if k not in vars(cls):
                    setattr(cls, k, p)      # (the same Param: its name is k in both)
            if 'param_order' not in vars(cls):      # (a class may give its own order)
                cls.param_order = params_from.param_order
            cls.key_var_num_args = getattr(params_from, 'key_var_num_args', None)
        super().__init_subclass__(**kw)

    def check(self):
        if self.float_cls is not None:
            values = {k: v for k, v in self._values.items() if k in self.float_cls._params}
            self._fix(float_op=self.float_cls(**values))

    def data_names(self):
        return ['data']

    def list_arguments(self):
        names = self.data_names()
        ranges = []
        for n in names:
            ranges += ['min_' + n, 'max_' + n]
        return names + ranges

    def list_outputs(self):
        return ['output', 'min_output', 'max_output']

    def n_data(self):
        return len(self.data_names())

    #: a known output shape fills the data's (MXNet's quantized shape rules copy the
    #: output's batch size back, as the float operators do)
    infer_shape_uses_outputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        n = self.n_data()
        for name, s in zip(self.list_arguments()[n:], in_shapes[n:]):
            if s is not None and s and int(np.prod(s)) != 1:
                raise ShapeError('%s: %s must hold one value, got shape %s'
                                 % (self.name, name, s))
        out = out_shapes[0] if out_shapes else None
        data, out = self.data_shapes(list(in_shapes[:n]), out)
        return list(data) + [(1,)] * (2 * n), [out, (1,), (1,)], []

    def data_shapes(self, shapes, out=None):
        """(input data shapes, output shape) from the data shapes and what is known of the
        output: the float operator's rule."""
        if self.float_cls.infer_shape_uses_outputs:
            ins, outs, _ = self.float_op.infer_shape(shapes, [out])
        elif self.float_op.same_shape_io and out is not None:
            ins, outs, _ = self.float_op.infer_shape([unify_shape(s, out) for s in shapes])
        else:
            ins, outs, _ = self.float_op.infer_shape(shapes)
        return ins, outs[0]

    def infer_type(self, in_types):
        n = self.n_data()
        t = in_types[0]
        _int_dtype(t, ('int8', 'uint8'), self.name)
        return [t] + list(in_types[1:n]) + [np.dtype(F32)] * (2 * n), \
            [t, np.dtype(F32), np.dtype(F32)], []


@register
class QuantizeV2(Operator):
    """float32 data -> int8/uint8 with its range, from the calibrated range or the data's
    (oneDNN's quantize: ``rint(x * 127.5 / max|range|)`` saturated; uint8 ``255.5``).
    Integer data passes through with the calibrated range, else MXNet's defaults."""

    name = '_contrib_quantize_v2'
    no_grad = True
    needs_inputs = False
    out_type = Param(str, 'int8', choices=_OUT_TYPES, doc='int8, uint8 or auto')
    min_calib_range = Param(float, None, doc='calibrated minimum')
    max_calib_range = Param(float, None, doc='calibrated maximum')

    def list_outputs(self):
        return ['output0', 'output1', 'output2']

    def calibrated(self):
        return self.min_calib_range is not None and self.max_calib_range is not None

    infer_shape_uses_outputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        s = unify_shape(in_shapes[0], out_shapes[0] if out_shapes else None)
        return [s], [s, (1,), (1,)], []

    def infer_type(self, in_types):
        t = in_types[0]
        if t is not None and np.dtype(t).name not in ('float32', 'int8', 'uint8'):
            raise TypeInferenceError('_contrib_quantize_v2: data must be float32, int8 or '
                                     'uint8, got %s' % np.dtype(t).name)
        out = out_type_of(self.out_type, self.min_calib_range if self.calibrated() else None)
        return [t], [out, np.dtype(F32), np.dtype(F32)], []

    @on_host
    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        if x.dtype in (np.int8, np.uint8):
            if self.calibrated():
                lo, hi = self.min_calib_range, self.max_calib_range
            elif x.dtype == np.uint8:
                lo, hi = 0.0, UINT8_RANGE
            else:
                lo, hi = -INT8_RANGE, INT8_RANGE
            return [x.copy()] + rng(lo, hi)
        if self.calibrated():
            lo, hi = F32(self.min_calib_range), F32(self.max_calib_range)
        else:
            lo, hi = (F32(x.min()), F32(x.max())) if x.size else (F32(0), F32(0))
        out = out_type_of(self.out_type, self.min_calib_range if self.calibrated() else None)
        real = max_abs(lo, hi)
        scale = F32((INT8_RANGE if out == np.int8 else UINT8_RANGE) / real)
        # calibrated (one scale for every call): the backend's scaled reorder, else NumPy
        q = _scaled(x, scale, out) if self.calibrated() else None
        if q is None:
            q = saturate(x.astype(F32) * scale, out)
        if out == np.int8:
            return [q] + rng(-real, real)
        return [q] + rng(lo, hi)


@register
class Requantize(Operator):
    """int32 data with its range -> int8/uint8 over the calibrated range, or over the
    range the data actually holds (oneDNN's requantize: one float32 scale, rounded to
    nearest even, saturated)."""

    name = '_contrib_requantize'
    no_grad = True
    needs_inputs = False
    out_type = Param(str, 'int8', choices=_OUT_TYPES, doc='int8, uint8 or auto')
    min_calib_range = Param(float, None, doc='calibrated minimum')
    max_calib_range = Param(float, None, doc='calibrated maximum')

    def list_arguments(self):
        return ['data', 'min_range', 'max_range']

    def list_outputs(self):
        return ['output0', 'output1', 'output2']

    def calibrated(self):
        return self.min_calib_range is not None and self.max_calib_range is not None

    infer_shape_uses_outputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        for what, s in zip(('min_range', 'max_range'), in_shapes[1:]):
            if s is not None and s and int(np.prod(s)) != 1:
                raise ShapeError('_contrib_requantize: %s must hold one value, got shape %s'
                                 % (what, s))
        s = unify_shape(in_shapes[0], out_shapes[0] if out_shapes else None)
        return [s, (1,), (1,)], [s, (1,), (1,)], []

    def infer_type(self, in_types):
        _int_dtype(in_types[0], ('int32',), self.name)
        out = out_type_of(self.out_type, self.min_calib_range if self.calibrated() else None)
        f = np.dtype(F32)
        return [np.dtype(np.int32), f, f], [out, f, f], []

    @on_host
    def forward(self, xp, inputs, aux, is_train):
        x, lo, hi = inputs[0], scalar(inputs[1]), scalar(inputs[2])
        data_scale = max_abs(lo, hi)
        if self.calibrated():
            real = max_abs(self.min_calib_range, self.max_calib_range)
        else:
            # MXNet keeps the data's largest magnitude as an int32, then scales it
            top = int(max(abs(int(x.min())), abs(int(x.max())))) if x.size else 0
            real = F32(F32(F32(top) * data_scale) / F32(INT32_MAX))
        out = out_type_of(self.out_type, self.min_calib_range if self.calibrated() else None)
        first = F32(data_scale / F32(INT32_MAX))
        second = F32((127.0 if out == np.int8 else 255.0) / real) if real else F32(0)
        q = saturate(x.astype(F32) * F32(first * second), out)
        return [q] + rng(-real if out == np.int8 else 0.0, real)


@register
class QuantizedAct(QuantizedBase, params_from=Activation):
    """relu on quantized data; the range passes through. MXNet declares the output int8
    whatever the input (QuantizedActivationType): uint8 results keep their bits."""

    name = '_contrib_quantized_act'

    def infer_type(self, in_types):
        ins, outs, aux = super().infer_type(in_types)
        outs[0] = np.dtype(np.int8)
        return ins, outs, aux

    def check(self):
        super().check()
        if self.act_type != 'relu':
            raise TypeInferenceError('_contrib_quantized_act only supports act_type=relu, '
                                     'got %r' % self.act_type)

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        return [np.maximum(x, x.dtype.type(0)).view(np.int8)] + [a.copy() for a in inputs[1:3]]


@register
class QuantizedFlatten(QuantizedBase, params_from=Flatten):
    """Flatten of quantized data; the range passes through."""

    name = '_contrib_quantized_flatten'
    inplace = ((0, 0), (1, 1), (2, 2))

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        return [x.reshape(x.shape[0], -1)] + [a.copy() for a in inputs[1:3]]


@register
class QuantizedPooling(QuantizedBase, params_from=Pooling):
    """max/avg pooling of int8/uint8 data (an average rounded to nearest even); the range
    passes through."""

    name = '_contrib_quantized_pooling'

    def check(self):
        super().check()
        if self.pool_type not in ('max', 'avg'):
            raise TypeInferenceError('_contrib_quantized_pooling only supports pool_type '
                                     'max or avg, got %r' % self.pool_type)

    @on_host
    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        y = self._max_onednn(x) if self.pool_type == 'max' else self._global_average(x)
        if y is None:
            y = saturate(self.float_op.forward(np, [x.astype(np.float64)], [], False)[0],
                         x.dtype)
        return [y] + [a.copy() for a in inputs[1:3]]

    def _global_average(self, x):
        """Global average pooling of the integers, or None (not that): their exact int64
        sums over the count in float64, rounded and saturated (the bits of the float64
        mean, without a float64 copy of the data)."""
        op = self.float_op
        if not (op.global_pool and op.pool_type == 'avg') or x.ndim < 3 \
                or op._channels_last(x.ndim) or not x.size:
            return None
        s = x.sum(axis=tuple(range(2, x.ndim)), dtype=np.int64, keepdims=True)
        return saturate(s / float(np.prod(x.shape[2:])), x.dtype)

    def _max_onednn(self, x):
        """Max pooling by the backend on the integers as they lie, or None."""
        if 'int8_pool' not in CPU_KERNELS:
            return None
        kernel = cpu_kernel('int8_pool')
        spec = self.float_op._onednn_spec(x.shape, 'forward') if kernel else None
        return None if spec is None else kernel(x, *spec)


@register
class QuantizedConcat(QuantizedBase, params_from=Concat):
    """Concat of quantized arrays: each rescaled onto the widest range (oneDNN reorders),
    int8 when any input is int8; the range is (min of the minima, max of the maxima)."""

    name = '_contrib_quantized_concat'

    def data_names(self):
        return ['arg%d' % i for i in range(self.num_args)]

    def list_arguments(self):
        names = self.data_names()
        return names + [n + s for n in names for s in ('_min', '_max')]

    def infer_type(self, in_types):
        n = self.num_args
        for t in in_types[:n]:
            _int_dtype(t, ('int8', 'uint8'), self.name)
        known = [np.dtype(t) for t in in_types[:n] if t is not None]
        out = None
        if len(known) == n:
            out = np.dtype(np.int8) if any(t == np.int8 for t in known) else np.dtype(np.uint8)
        f = np.dtype(F32)
        return list(in_types[:n]) + [f] * (2 * n), [out, f, f], []

    @on_host
    def forward(self, xp, inputs, aux, is_train):
        n = self.num_args
        data = inputs[:n]
        mins = [scalar(inputs[n + 2 * i]) for i in range(n)]
        maxs = [scalar(inputs[n + 2 * i + 1]) for i in range(n)]
        lo, hi = min([F32(0)] + mins), max([F32(0)] + maxs)
        out = np.dtype(np.int8) if any(d.dtype == np.int8 for d in data) else np.dtype(np.uint8)
        out_scale = quantize_scale(out, lo, hi)
        parts = []
        for d, a, b in zip(data, mins, maxs):
            s = quantize_scale(d.dtype, a, b)
            if s == out_scale:
                parts.append(d.astype(out))
            else:
                parts.append(saturate(d.astype(F32) * F32(out_scale / s), out))
        return [np.concatenate(parts, axis=self.dim)] + rng(lo, hi)


class _QuantizedBinary(QuantizedBase):
    """Two quantized operands of one shape (``lhs``, ``rhs``) and an optional calibrated
    output range: int32 output uncalibrated, int8/uint8 calibrated."""

    min_calib_range = Param(float, None, doc='calibrated minimum of the output')
    max_calib_range = Param(float, None, doc='calibrated maximum of the output')

    def data_names(self):
        return ['lhs', 'rhs']

    def list_arguments(self):
        return ['lhs', 'rhs', 'lhs_min', 'lhs_max', 'rhs_min', 'rhs_max']

    def calibrated(self):
        return self.min_calib_range is not None and self.max_calib_range is not None

    def data_shapes(self, shapes, out=None):
        a, b = shapes
        s = unify_shape(unify_shape(a, b) if a is not None and b is not None else
                        (a if a is not None else b), out)
        if a is not None and b is not None and tuple(a) != tuple(b):
            raise ShapeError('%s: lhs %s and rhs %s differ' % (self.name, a, b))
        return [s, s], s

    def infer_type(self, in_types):
        for t in in_types[:2]:
            _int_dtype(t, ('int8', 'uint8'), self.name)
        a, b = in_types[0], in_types[1]
        f = np.dtype(F32)
        out = np.dtype(np.int32)
        if self.calibrated() and a is not None and b is not None:
            out = np.dtype(a) if np.dtype(a) == np.dtype(b) else np.dtype(np.int8)
        return [a, b, f, f, f, f], [out, f, f], []


@register
class QuantizedElemwiseAdd(_QuantizedBinary):
    """lhs + rhs as oneDNN's sum computes it: each operand times its float32 scale onto the
    output's levels (int32 over ``|lhs| + |rhs|`` uncalibrated), rounded to nearest even;
    a uint8 operand beside an int8 one is first reordered to int8."""

    name = '_contrib_quantized_elemwise_add'

    @on_host
    def forward(self, xp, inputs, aux, is_train):
        a, b = inputs[0], inputs[1]
        amin, amax, bmin, bmax = (scalar(v) for v in inputs[2:6])
        a_abs, b_abs = max_abs(amin, amax), max_abs(bmin, bmax)
        out = self.infer_type([a.dtype, b.dtype] + [None] * 4)[1][0]
        out_range = {np.dtype(np.int8): INT8_RANGE,
                     np.dtype(np.uint8): UINT8_RANGE}.get(out, F32(INT32_MAX))
        a_range = INT8_RANGE if a.dtype == np.int8 else UINT8_RANGE
        a_scale, b_scale = quantize_scale(a.dtype, amin, amax), quantize_scale(b.dtype, bmin,
                                                                                 bmax)
        if self.calibrated():
            lo, hi = F32(self.min_calib_range), F32(self.max_calib_range)
            out_scale = F32(out_range / max_abs(lo, hi))
        else:
            hi = F32(a_abs + b_abs)
            lo = -hi
        total = F32(a_abs + b_abs)
        sa = sb = F32(1)
        if a.dtype != b.dtype:
            a_int8 = a.dtype == np.int8
            if self.calibrated():
                reorder = F32(out_scale / (b_scale if a_int8 else a_scale))
                if a_int8:
                    sa = F32(out_scale / a_scale)
                else:
                    sb = F32(out_scale / b_scale)
            elif a_int8:
                reorder = F32(F32(b_abs * out_range) / F32(total * UINT8_RANGE))
                sa = F32(F32(a_abs * out_range) / F32(total * a_range))
            else:
                reorder = F32(F32(a_abs * out_range) / F32(total * a_range))
                sb = F32(F32(b_abs * out_range) / F32(total * INT8_RANGE))
            if a_int8:
                b = saturate(b.astype(F32) * reorder, np.int8)
            else:
                a = saturate(a.astype(F32) * reorder, np.int8)
        elif self.calibrated():
            sa, sb = F32(out_scale / a_scale), F32(out_scale / b_scale)
        else:
            sa = F32(F32(a_abs * out_range) / F32(total * a_range))
            sb = F32(F32(b_abs * out_range) / F32(total * a_range))
        y = a.astype(F32) * sa + b.astype(F32) * sb
        return [saturate(y, out)] + rng(lo, hi)


@register
class QuantizedElemwiseMul(_QuantizedBinary):
    """lhs * rhs of int8 operands: the int32 product with the S8S8 product range
    (uncalibrated); calibrated, the product times one float32 scale truncated to int8; with
    ``enable_float_output`` one float32 output (MXNet's quantized_elemwise_mul.cc)."""

    name = '_contrib_quantized_elemwise_mul'
    enable_float_output = Param(bool, False, doc='one float32 output instead of int8/int32')

    def list_outputs(self):
        if self.enable_float_output:
            return ['output']
        return ['output', 'min_output', 'max_output']

    def infer_shape(self, in_shapes, out_shapes=None):
        ins, outs, aux = super().infer_shape(in_shapes, out_shapes)
        return ins, outs[:len(self.list_outputs())], aux

    def infer_type(self, in_types):
        for t in in_types[:2]:
            _int_dtype(t, ('int8',), self.name)
        f = np.dtype(F32)
        if self.enable_float_output:
            return [np.dtype(np.int8)] * 2 + [f] * 4, [f], []
        out = np.dtype(np.int8 if self.calibrated() else np.int32)
        return [np.dtype(np.int8)] * 2 + [f] * 4, [out, f, f], []

    @on_host
    def forward(self, xp, inputs, aux, is_train):
        a, b = inputs[0], inputs[1]
        amin, amax, bmin, bmax = (scalar(v) for v in inputs[2:6])
        prod = a.astype(np.int32) * b.astype(np.int32)
        lhs_scale = F32(INT8_RANGE / max_abs(amin, amax))
        rhs_scale = F32(INT8_RANGE / max_abs(bmin, bmax))
        if self.enable_float_output:
            scale = F32(F32(F32(1.0) / lhs_scale) / rhs_scale)
            return [prod.astype(F32) * scale]
        if self.calibrated():
            lo, hi = F32(self.min_calib_range), F32(self.max_calib_range)
            scale = F32(F32(F32(INT8_RANGE / max_abs(lo, hi)) / lhs_scale) / rhs_scale)
            q = np.clip(np.trunc(prod.astype(F32) * scale), -128, 127).astype(np.int8)
            return [q] + rng(lo, hi)
        # QuantizationRangeForS8S8MultiplicationStruct: one step each 1/127 of its range
        hi = F32(F32(one_level(np.int8, amin, amax, True) * one_level(np.int8, bmin, bmax,
                                                                       True)) * F32(INT32_MAX))
        return [prod] + rng(-hi, hi)
