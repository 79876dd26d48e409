"""Shapes shared by the normalisation families (a helper module, not a family).

``channel_param_shapes`` and ``bshape`` serve ``ops/norm.py`` (BatchNorm),
``ops/norm_layers.py`` (LayerNorm, InstanceNorm, GroupNorm ...) and ``ops/syncbn.py``;
``BatchNormBase`` holds what BatchNorm and SyncBatchNorm share.
"""
import numpy as np

from symgraph.opdef import Operator, ShapeError, is_bfloat16, unify_shape


def channel_param_shapes(op, in_shapes, axis, n_params):
    """Data shape and the (C,) shape of ``n_params`` per-channel inputs along ``axis``.

    Returns ``(data_shape, param_shape, axis)`` with the axis made non-negative; unknown
    parts stay None or 0. The channel count may come from data or from any parameter.
    """
    data = in_shapes[0]

    def name(i):        # (spelt only for a message)
        return (op.list_arguments() + op.list_auxiliary_states())[i]
    c = None
    for i in range(1, 1 + n_params):
        try:
            c = unify_shape(c, in_shapes[i])
        except ShapeError:
            raise ShapeError('%r has shape %s but %s was expected from the other parameters'
                             % (name(i), tuple(in_shapes[i]), c)) from None
        if c is not None and len(c) != 1:
            raise ShapeError('%r must be 1-D, got %s' % (name(i), c))
    if data is None:
        return None, c, None
    ndim = len(data)
    if not -ndim <= axis < ndim:
        raise ShapeError('channel axis %d out of range for data of shape %s'
                         % (axis, tuple(data)))
    ax = axis % ndim
    try:
        c = unify_shape(c, (data[ax],))
    except ShapeError:
        raise ShapeError('parameters have shape %s but data %s has %d channels on axis %d'
                         % (c, tuple(data), data[ax], ax)) from None
    data = data[:ax] + (c[0],) + data[ax + 1:]
    return data, c, ax


def bshape(ndim, ax, c):
    """Shape that broadcasts a (C,) vector along axis ``ax`` of an ndim array."""
    s = [1] * ndim
    s[ax] = c
    return tuple(s)


class BatchNormBase(Operator):
    """What BatchNorm and SyncBatchNorm share: inputs, outputs, auxiliary states, types."""

    needs_inputs = True
    needs_outputs = True

    def channel_axis(self):
        return 1

    def list_arguments(self):
        return ['data', 'gamma', 'beta']

    def list_outputs(self):
        return ['output', 'mean', 'var']

    def list_auxiliary_states(self):
        return ['moving_mean', 'moving_var']

    def input_init(self):
        # MXNet marks the automatically created running statistics this way
        return {'moving_mean': '["zero", {}]', 'moving_var': '["one", {}]'}

    def num_visible_outputs(self):
        return 3 if self.output_mean_var else 1

    def infer_shape(self, in_shapes):
        data, c, _ = channel_param_shapes(self, in_shapes, self.channel_axis(), 4)
        return [data, c, c], [data, c, c], [c, c]

    def infer_type(self, in_types):
        # float16 and bfloat16 data keep float32 parameters and statistics, as in MXNet
        t = in_types[0]
        p = None
        for x in in_types[1:]:
            p = p if x is None else np.dtype(x)
        if t is None:
            return [None, p, p], [None, p, p], [p, p]
        t = np.dtype(t)
        p = np.dtype(np.float32) if t == np.float16 or is_bfloat16(t) else t
        return [t, p, p], [t, p, p], [p, p]
