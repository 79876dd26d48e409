"""Small ONNX building blocks the converters share: opset-dependent node forms (axes as
an attribute or an input), casts, shape constants, broadcasting a per-channel vector.

Every helper takes the export graph ``g`` (see :mod:`symgraph.onnx._registry`) and
returns the name(s) of what it made.
"""
import numpy as np

__all__ = ['tensor_type', 'cast', 'reduce', 'unsqueeze', 'squeeze', 'reshape', 'to_shape',
           'slice_', 'channel_vector', 'bool_of', 'scalar_const', 'INT64_MAX', 'INT64_MIN',
           'ONNX_FLOATS']

INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min
#: dtypes ONNX's float-only operators (Gemm, Conv, Softmax, ...) take
ONNX_FLOATS = (np.dtype('float16'), np.dtype('float32'), np.dtype('float64'))
#: ONNX reductions whose ``axes`` became an input in opset 18 (ReduceSum's in 13)
_AXES_INPUT_FROM = {'ReduceSum': 13}


def tensor_type(dtype):
    """The ONNX TensorProto type of a NumPy dtype."""
    from onnx import helper
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def cast(g, x, dtype, out=None):
    """``x`` cast to ``dtype`` (one Cast node; ``out``: its output name)."""
    return g.add('Cast', [x], [out] if out else 1, to=tensor_type(dtype))[0]


def scalar_const(g, value, dtype):
    """A 0-d initializer of ``dtype`` (what a scalar operand of a binary op is)."""
    return g.const(np.array(value, dtype=np.dtype(dtype)))


def bool_of(g, x, dtype):
    """``x != 0`` as a bool tensor (``x`` of ``dtype``; a bool ``x`` passes through)."""
    if np.dtype(dtype) == np.bool_:
        return x
    return cast(g, x, np.bool_)


def reduce(g, op_type, x, axes, keepdims, out=None):
    """A Reduce* node over ``axes`` (None: all axes) in the opset's form."""
    outs = [out] if out else 1
    keep = int(bool(keepdims))
    if axes is None:
        return g.add(op_type, [x], outs, keepdims=keep)[0]
    axes = [int(a) for a in axes]
    if g.opset >= _AXES_INPUT_FROM.get(op_type, 18):
        return g.add(op_type, [x, g.const(np.array(axes, np.int64))], outs,
                     keepdims=keep)[0]
    return g.add(op_type, [x], outs, axes=axes, keepdims=keep)[0]


def unsqueeze(g, x, axes, out=None):
    return g.add('Unsqueeze', [x, g.const(np.array(list(axes), np.int64))],
                 [out] if out else 1)[0]


def squeeze(g, x, axes, out=None):
    ins = [x] if axes is None else [x, g.const(np.array(list(axes), np.int64))]
    return g.add('Squeeze', ins, [out] if out else 1)[0]


def reshape(g, x, shape, out=None):
    """Reshape to a constant ``shape`` (ONNX's 0 and -1 codes allowed)."""
    return g.add('Reshape', [x, g.const(np.array(list(shape), np.int64))],
                 [out] if out else 1)[0]


def to_shape(g, x, shape, out=None, keep_batch=False):
    """Reshape to the static ``shape``; with ``g.dynamic`` and ``keep_batch`` the first
    dimension is copied from ``x`` (ONNX's 0), so the batch stays symbolic."""
    shape = list(shape)
    if g.dynamic and keep_batch and shape:
        shape[0] = 0
    return reshape(g, x, shape, out)


def slice_(g, x, starts, ends, axes, steps=None, out=None):
    ins = [x, g.const(np.array(starts, np.int64)), g.const(np.array(ends, np.int64)),
           g.const(np.array(axes, np.int64))]
    if steps is not None:
        ins.append(g.const(np.array(steps, np.int64)))
    return g.add('Slice', ins, [out] if out else 1)[0]


def channel_vector(g, v, rank, axis, name=None):
    """A per-channel vector ``v`` (an ONNX name) reshaped to broadcast along ``axis`` of a
    tensor of ``rank`` dimensions: (C, 1, ..., 1) for the axis counted from the end."""
    axis = axis % rank
    trailing = rank - 1 - axis
    if trailing == 0:
        return v
    return reshape(g, v, [-1] + [1] * trailing)
