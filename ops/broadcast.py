"""Broadcasting one array to a shape: ``broadcast_to``, ``broadcast_axis``, ``broadcast_like``.

The binary broadcasting operators (``broadcast_add``...) are in ``ops/binary.py``.
Gradients are summed back to the input's shape; ``broadcast_like``'s ``rhs`` only lends
its shape (of any type) and gets a zero gradient, as in MXNet.
"""
from symgraph.base import ParameterError
from symgraph.opdef import Operator, Param, ShapeError, register, reduce_to_shape


class _BroadcastOne(Operator):
    """Broadcast ``data`` (the first argument) to ``self.target(shapes)``."""

    needs_inputs = True

    def target(self, shapes):
        raise NotImplementedError

    def infer_shape(self, in_shapes):
        if any(s is None for s in in_shapes):
            return list(in_shapes), [None], []
        return list(in_shapes), [self.target([tuple(s) for s in in_shapes])], []

    def forward(self, xp, inputs, aux, is_train):
        out = self.target([x.shape for x in inputs])
        # broadcast_to gives a read-only view; the output must own its memory
        return [xp.broadcast_to(inputs[0], out).copy()]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        grads = [reduce_to_shape(xp, out_grads[0], inputs[0].shape) if need[0] else None]
        return grads + [xp.zeros_like(x) if n else None for x, n in zip(inputs[1:], need[1:])]


@register
class BroadcastTo(_BroadcastOne):
    """Broadcast to ``shape`` (same ndim as data); 0 keeps data's dimension."""

    name = 'broadcast_to'
    shape = Param('shape', (), doc='The shape of the desired array; 0 keeps the input dim.')

    def target(self, shapes):
        data = shapes[0]
        if len(data) != len(self.shape):
            raise ShapeError('data of shape %s cannot be broadcast to %s: the number of '
                             'dimensions differs' % (data, self.shape))
        out = []
        for d, t in zip(data, self.shape):
            if t != 0 and d not in (0, 1, t):
                raise ShapeError('data of shape %s cannot be broadcast to %s'
                                 % (data, self.shape))
            out.append(t if t != 0 else d)
        return tuple(out)


@register
class BroadcastAxis(_BroadcastOne):
    """Broadcast size-1 ``axis`` dimensions to ``size``."""

    name, aliases = 'broadcast_axis', ('broadcast_axes',)
    axis = Param('shape', (), doc='The axes to perform the broadcasting.')
    size = Param('shape', (), doc='Target sizes of the broadcasting axes.')

    def check(self):
        if len(self.axis) != len(self.size):
            raise ParameterError('broadcast_axis: axis %s and size %s differ in length'
                                 % (self.axis, self.size))

    def target(self, shapes):
        out = list(shapes[0])
        for ax, size in zip(self.axis, self.size):
            if not -len(out) <= ax < len(out):
                raise ShapeError('broadcast_axis: axis %d out of range for data of shape %s'
                                 % (ax, shapes[0]))
            if out[ax] not in (0, 1):
                raise ShapeError('broadcast_axis: axis %d of data of shape %s must have '
                                 'size 1' % (ax, shapes[0]))
            out[ax] = size
        return tuple(out)


@register
class BroadcastLike(_BroadcastOne):
    """Broadcast lhs like rhs (on ``lhs_axes`` taken from ``rhs_axes`` when given)."""

    name = 'broadcast_like'
    lhs_axes = Param('shape', None, doc='Axes to perform broadcast on in the first input.')
    rhs_axes = Param('shape', None, doc='Axes to copy from the second input.')

    def list_arguments(self):
        return ['lhs', 'rhs']

    def infer_type(self, in_types):
        # rhs only lends its shape: any type, as in MXNet; the output has lhs's type
        return [in_types[0], in_types[1]], [in_types[0]], []

    def target(self, shapes):
        lhs, rhs = shapes
        if self.lhs_axes is None and self.rhs_axes is None:
            if len(lhs) != len(rhs):
                raise ShapeError('broadcast_like: lhs of shape %s and rhs of shape %s '
                                 'differ in ndim' % (lhs, rhs))
            pairs = [(i, i) for i in range(len(lhs))]
        else:
            la, ra = self.lhs_axes or (), self.rhs_axes or ()
            if not la:
                # MXNet: "Empty axes tuple is not allowed" (an empty tuple is no "all axes")
                raise ShapeError('broadcast_like: lhs_axes must name one axis or more, got %s'
                                 % (self.lhs_axes,))
            if len(la) != len(ra):
                raise ShapeError('broadcast_like: lhs_axes %s and rhs_axes %s differ in '
                                 'length' % (la, ra))
            pairs = list(zip(la, ra))
        out = list(lhs)
        for i, j in pairs:
            if out[i] != rhs[j] and out[i] not in (0, 1):
                raise ShapeError('broadcast_like: lhs of shape %s cannot be broadcast '
                                 'like rhs of shape %s' % (lhs, rhs))
            out[i] = rhs[j]
        return tuple(out)
