"""``_contrib_quantize`` / ``_contrib_dequantize`` (``mx.nd.contrib.quantize`` /
``dequantize``), after MXNet 1.9.1's src/operator/quantization/quantize-inl.h and
dequantize-inl.h (the first-generation operators, whose range comes in as arrays).

int8 is zero-centred: ``real = max(|min_range|, |max_range|)``, ``q = sign(x) *
min(|x| * 127 / real + 0.5, 127)`` truncated, range ``[-real, real]``; uint8 maps
``[min_range, max_range]`` onto 0..255: ``q = (x - min_range) * 255 / (max_range -
min_range) + 0.5`` truncated, range ``[min_range, max_range]``. Dequantizing multiplies
back (``q * real / 127``; ``q * (max - min) / 255 + min``). No gradient flows (MXNet
registers none).
"""
import numpy as np

from symgraph.opdef import Operator, Param, ShapeError, TypeInferenceError, register, \
    unify_shape

_LIMITS = {'int8': 127.0, 'uint8': 255.0}


def _range_shapes(name, shapes):
    for what, s in zip(('min_range', 'max_range'), shapes[1:]):
        if s is not None and int(np.prod(s)) != 1:
            raise ShapeError('%s: %s must hold one value, got shape %s' % (name, what, s))
    return [shapes[0], (1,), (1,)]


class _Quant(Operator):
    no_grad = True
    needs_inputs = False

    def list_arguments(self):
        return ['data', 'min_range', 'max_range']

    def list_outputs(self):
        # MXNet registers no output names for these: output<k> (its FListOutputNames default)
        return ['output0', 'output1', 'output2']

    def infer_shape(self, in_shapes):
        data = in_shapes[0]
        return _range_shapes(self.name, in_shapes), [data, (1,), (1,)], []


@register
class Quantize(_Quant):
    """float32 ``data`` in ``[min_range, max_range]`` -> int8/uint8, with the range kept."""

    name = '_contrib_quantize'
    out_type = Param(str, 'uint8', choices=('int8', 'uint8'), doc='the quantized type')

    def infer_type(self, in_types):
        t = in_types[0]
        if t is not None and np.dtype(t) != np.float32:
            raise TypeInferenceError('_contrib_quantize: data must be float32, got %s'
                                     % np.dtype(t).name)
        f = np.dtype(np.float32)
        return [f, f, f], [np.dtype(self.out_type), f, f], []

    def forward(self, xp, inputs, aux, is_train):
        x, lo, hi = inputs
        lo, hi = lo.reshape(()), hi.reshape(())
        f = np.float32
        if self.out_type == 'int8':
            real = xp.maximum(xp.abs(lo), xp.abs(hi)).astype(f)
            # a zero range (an all-zero bias) quantizes to zeros, as MXNet's kernel
            # leaves them (sign 0 times its NaN)
            with np.errstate(divide='ignore', invalid='ignore'):
                scale = f(127.0) / real
                q = xp.sign(x) * xp.minimum(xp.abs(x) * scale + f(0.5), f(127.0))
            q = xp.nan_to_num(q, nan=0.0)
            return [q.astype(np.int8), (-real).reshape(1), real.reshape(1)]
        scale = f(255.0) / (hi - lo)
        q = (x - lo) * scale + f(0.5)
        return [q.astype(np.uint8), lo.reshape(1).astype(f), hi.reshape(1).astype(f)]


@register
class Dequantize(_Quant):
    """int8/uint8 ``data`` with its range -> float32."""

    name = '_contrib_dequantize'
    out_type = Param(str, 'float32', choices=('float32',), doc='the output type')

    def list_outputs(self):
        return ['output']

    #: a known output shape fills the data's (the same shape)
    infer_shape_uses_outputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        ins = _range_shapes(self.name, in_shapes)
        ins[0] = unify_shape(ins[0], out_shapes[0] if out_shapes else None)
        return ins, [ins[0]], []

    def infer_type(self, in_types):
        t = in_types[0]
        if t is not None and np.dtype(t).name not in _LIMITS:
            raise TypeInferenceError('_contrib_dequantize: data must be int8 or uint8, got %s'
                                     % np.dtype(t).name)
        f = np.dtype(np.float32)
        return [t, f, f], [f], []

    def forward(self, xp, inputs, aux, is_train):
        q, lo, hi = inputs
        lo, hi = lo.reshape(()), hi.reshape(())
        f = np.float32
        if q.dtype == np.int8:
            real = xp.maximum(xp.abs(lo), xp.abs(hi)).astype(f)
            return [(q.astype(f) * (real / f(127.0))).astype(f)]
        scale = (hi - lo).astype(f) / f(255.0)
        return [(q.astype(f) * scale + lo).astype(f)]
