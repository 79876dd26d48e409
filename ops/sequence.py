"""Sequence operators: ``SequenceMask``, ``SequenceLast``, ``SequenceReverse``.

MXNet 1.9.1 semantics: data has the time axis ``axis`` (0, the default: layout
``(max_len, batch, ...)``; 1: ``(batch, max_len, ...)``, not for ``SequenceReverse``) and
the batch axis is the other of the first two. Data must have at least 2 dimensions. With
``use_sequence_length=True`` a second input ``sequence_length`` of shape ``(batch,)``
gives each sequence's length (any dtype; its values are truncated to integers); without
it every sequence has the full length.

* ``SequenceMask``: positions at or past the length become ``value``.
* ``SequenceLast``: the element at ``length - 1`` of each sequence; the output drops the
  time axis.
* ``SequenceReverse``: the first ``length`` steps of each sequence reversed, the rest kept.

Gradients flow to ``data`` only; ``sequence_length`` gets zeros (MXNet 1.9.1 leaves its
gradient buffer unwritten).

Deliberate differences: where MXNet reads out of bounds (``SequenceLast`` with a length of
0, ``SequenceReverse`` with a length above ``max_len``) the length is clipped here to
``[1, max_len]`` / ``[0, max_len]``.
"""
import numpy as np

from symgraph.opdef import Operator, Param, ShapeError, register


class _SequenceBase(Operator):
    use_sequence_length = Param(bool, False, doc='take the lengths from `sequence_length`')
    axis = Param(int, 0, doc='the time axis (0 or 1)')
    needs_inputs = True
    #: the axes this operator supports
    axes = (0, 1)

    def list_arguments(self):
        if self.use_sequence_length:
            return ['data', 'sequence_length']
        return ['data']

    def _check_data(self, d):
        if self.axis not in self.axes:
            raise ShapeError('%s: axis=%d is not supported (the time axis must be %s)'
                             % (self.name, self.axis, ' or '.join(map(str, self.axes))))
        if d is not None and len(d) < 2:
            raise ShapeError('%s: argument %r must have rank 2 or greater, got %s'
                             % (self.name, 'data', tuple(d)))

    def _length_shape(self, in_shapes):
        """The (batch,) shape of ``sequence_length``, checked against the given one."""
        d = in_shapes[0]
        if not self.use_sequence_length:
            return []
        ln = in_shapes[1]
        if d is None:
            return [ln]
        want = (d[1 - self.axis],)
        if ln is not None and (len(ln) != 1 or (ln[0] and want[0] and ln[0] != want[0])):
            raise ShapeError('%s: argument %r has shape %s, expected %s (the batch size) for '
                             'data %s with axis=%d' % (self.name, 'sequence_length',
                                                       tuple(ln), want, tuple(d), self.axis))
        return [want if ln is None or not ln[0] else tuple(ln)]

    infer_shape_uses_outputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        d = in_shapes[0]
        self._check_data(d)
        return [d] + self._length_shape(in_shapes), [self._out_shape(d)], []

    def _out_shape(self, d):
        return d

    def infer_type(self, in_types):
        t = in_types[0]
        types = [t]
        if self.use_sequence_length:
            types.append(in_types[1] if in_types[1] is not None else t)
        return types, [t], []

    def _lengths(self, xp, inputs, lo=None):
        """Integer lengths (batch,), clipped to [lo, max_len] when ``lo`` is given."""
        x = inputs[0]
        n, batch = x.shape[self.axis], x.shape[1 - self.axis]
        if not self.use_sequence_length:
            return xp.full((batch,), n, dtype=np.int64)
        ln = inputs[1].astype(np.int64)     # truncation, as MXNet's integer cast
        return ln if lo is None else xp.clip(ln, lo, n)

    def _length_grad(self, xp, inputs, need):
        if not self.use_sequence_length:
            return []
        return [xp.zeros_like(inputs[1]) if need[1] else None]


def _expand(m, ndim):
    return m.reshape(m.shape + (1,) * (ndim - m.ndim))


@register
class SequenceMask(_SequenceBase):
    """Set the steps at or past each sequence's length to ``value``."""

    name = 'SequenceMask'
    value = Param(float, 0.0, doc='the value of masked steps')
    param_order = ('use_sequence_length', 'value', 'axis')

    def _mask(self, xp, inputs):
        x = inputs[0]
        ln = self._lengths(xp, inputs)
        pos = xp.arange(x.shape[self.axis])
        if self.axis == 0:
            m = pos[:, None] < ln[None, :]
        else:
            m = pos[None, :] < ln[:, None]
        return _expand(m, x.ndim)

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        m = self._mask(xp, inputs)
        return [xp.where(m, x, xp.asarray(self.value, dtype=x.dtype))]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        g = out_grads[0]
        dx = xp.where(self._mask(xp, inputs), g, xp.zeros((), dtype=g.dtype)) \
            if need[0] else None
        return [dx] + self._length_grad(xp, inputs, need)


@register
class SequenceLast(_SequenceBase):
    """The last valid step of each sequence; the output has no time axis."""

    name = 'SequenceLast'

    def _out_shape(self, d):
        return None if d is None else tuple(d[:self.axis]) + tuple(d[self.axis + 1:])

    def _index(self, xp, inputs):
        x = inputs[0]
        idx = self._lengths(xp, inputs, lo=1) - 1
        b = xp.arange(x.shape[1 - self.axis])
        return (idx, b) if self.axis == 0 else (b, idx)

    def forward(self, xp, inputs, aux, is_train):
        return [inputs[0][self._index(xp, inputs)]]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        dx = None
        if need[0]:
            x = inputs[0]
            dx = xp.zeros(x.shape, dtype=out_grads[0].dtype)
            # (index, batch) pairs are distinct, so plain assignment scatters
            dx[self._index(xp, inputs)] = out_grads[0]
        return [dx] + self._length_grad(xp, inputs, need)


@register
class SequenceReverse(_SequenceBase):
    """Reverse the first ``length`` steps of each sequence (time axis 0 only)."""

    name = 'SequenceReverse'
    axes = (0,)

    def _source(self, xp, inputs):
        """Index pair picking out[t, b] = x[src[t, b], b] (an involution per column)."""
        x = inputs[0]
        ln = self._lengths(xp, inputs, lo=0)[None, :]
        t = xp.arange(x.shape[0])[:, None]
        src = xp.where(t < ln, ln - 1 - t, t)
        return src, xp.arange(x.shape[1])[None, :]

    def forward(self, xp, inputs, aux, is_train):
        return [inputs[0][self._source(xp, inputs)]]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        # the permutation is its own inverse
        dx = out_grads[0][self._source(xp, inputs)] if need[0] else None
        return [dx] + self._length_grad(xp, inputs, need)
