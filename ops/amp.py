"""Mixed precision casts (MXNet 1.9.1 ``src/operator/tensor/amp_cast.h``): the nodes that
``mx.contrib.amp.convert_symbol`` / ``convert_model`` insert into a graph.

* ``amp_cast(data, dtype)`` casts *floating* inputs (float16, bfloat16, float32) to ``dtype``; any
  other input type (float64, integers) passes through unchanged, as MXNet's type rule
  says. The gradient is the head gradient cast back to the input's type.
* ``amp_multicast(*data, num_outputs, cast_narrow=False)`` casts its float16/bfloat16/float32
  inputs to the widest of them (float32 when any is float32, else the first input's type),
  or with ``cast_narrow`` to the narrowest (the last float16 or bfloat16 among them, as
  MXNet's loop picks it); other types pass through. One output per input.

bfloat16 is ``ml_dtypes.bfloat16`` (``symgraph.base.bfloat16()``).
"""
import numpy as np

from symgraph.opdef import (MXNetError, Operator, Param, TypeInferenceError, cpu_kernel,
                            is_bfloat16, np_dtype, register, takes_bfloat16)

_F16, _F32 = np.dtype(np.float16), np.dtype(np.float32)
_CAST_TYPES = ('float16', 'float32', 'float64', 'int32', 'int64', 'int8', 'uint8')


def _amp_float(t):
    """Whether dtype ``t`` is one amp_cast and amp_multicast cast (float16, bfloat16,
    float32), as MXNet's type rules list them."""
    return t == _F16 or t == _F32 or is_bfloat16(t)


@takes_bfloat16
@register
class AMPCast(Operator):
    """Cast float16/float32 ``data`` to ``dtype``; other types pass through."""

    name = 'amp_cast'
    dtype = Param('dtype', doc='Output data type.',
                  choices=[np_dtype(t) for t in _CAST_TYPES] + ['bfloat16'])
    inplace = ((0, 0),)
    needs_inputs = True

    def _out(self, t):
        return np.dtype(self.dtype) if _amp_float(np.dtype(t)) else np.dtype(t)

    def infer_shape(self, in_shapes):
        s = None if in_shapes[0] is None else tuple(in_shapes[0])
        return [s], [s], []

    same_shape_io = True

    def infer_type(self, in_types):
        t = in_types[0]
        return [t], [None if t is None else self._out(t)], []

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        t = self._out(x.dtype)
        if xp is np and t != x.dtype and (x.dtype == _F32 and is_bfloat16(t)
                                          or t == _F32 and is_bfloat16(x.dtype)):
            # between float32 and bfloat16 by oneDNN's reorder, as MXNet 1.9.1's CPU
            # amp_cast (one threaded pass; ml_dtypes' cast is a scalar loop). Like
            # MXNet's, it flushes float32 denormals to zero on the way to bfloat16.
            kern = cpu_kernel('cast_bf16')
            y = None if kern is None else kern(x, t)
            if y is not None:
                return [y]
        return [x.astype(t, copy=False)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        return [out_grads[0].astype(inputs[0].dtype, copy=False) if need[0] else None]


@takes_bfloat16
@register
class AMPMultiCast(Operator):
    """Cast float16/float32 inputs to their widest (or, ``cast_narrow``, narrowest) type."""

    name = 'amp_multicast'
    num_outputs = Param(int, doc='Number of input/output pairs to be casted to the widest '
                                 'type.')
    cast_narrow = Param(bool, False, doc='Whether to cast to the narrowest type')
    needs_inputs = True

    def check(self):
        if self.num_outputs < 1:
            raise MXNetError('amp_multicast: num_outputs must be >= 1, got %d'
                             % self.num_outputs)

    def list_arguments(self):
        return ['data_%d' % i for i in range(self.num_outputs)]

    def list_outputs(self):
        return ['output%d' % i for i in range(self.num_outputs)]

    def infer_shape(self, in_shapes):
        s = [None if x is None else tuple(x) for x in in_shapes]
        return s, list(s), []

    def _target(self, types):
        known = [np.dtype(t) for t in types if t is not None]
        if self.cast_narrow:
            # MXNet's loop: the last float16 or bfloat16 input decides
            target = _F32
            for t in known:
                if t == _F16 or is_bfloat16(t):
                    target = t
            return target
        return _F32 if (_F32 in known or not known) else np.dtype(types[0] or _F32)

    def infer_type(self, in_types):
        if len(in_types) != self.num_outputs:
            raise TypeInferenceError('amp_multicast: %d inputs for num_outputs=%d'
                                     % (len(in_types), self.num_outputs))
        target = self._target(in_types)
        outs = [None if t is None else (target if _amp_float(np.dtype(t))
                                        else np.dtype(t)) for t in in_types]
        return list(in_types), outs, []

    def forward(self, xp, inputs, aux, is_train):
        target = self._target([x.dtype for x in inputs])
        return [x.astype(target, copy=False) if _amp_float(x.dtype) else x
                for x in inputs]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        return [g.astype(x.dtype, copy=False) if n else None
                for g, x, n in zip(out_grads, inputs, need)]
