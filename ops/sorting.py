"""Sorting: ``topk``, ``sort`` and ``argsort``; counting into bins: ``_histogram``.

``axis=None`` works on the flattened array. Sorts are stable in both directions: equal
elements keep their input order (MXNet's order for ties, descending included). Indices
are returned in the ``dtype`` parameter (float32 by default, as MXNet does). The value
outputs pass their gradient back to the positions they came from; indices and masks
give a zero gradient.
"""
from math import prod

import numpy as np

from symgraph.base import MXNetError, ParameterError
from symgraph.opdef import Operator, Param, ShapeError, register, np_dtype

_INDEX_DTYPES = [np_dtype(t) for t in ('float16', 'float32', 'float64', 'int32', 'int64',
                                       'uint8')]


def sort_order(xp, x, axis, is_ascend):
    """Stable argsort along ``axis``; descending keeps ties in input order too."""
    key = x.astype('int64') if x.dtype.kind in 'ub' else x
    return xp.argsort(key if is_ascend else -key, axis=axis, kind='stable')


class _Sorting(Operator):
    """Shared geometry: the data viewed along one axis (flattened when axis is None)."""

    needs_inputs = True

    def check(self):
        if isinstance(self.axis, tuple):
            raise ParameterError('%s: axis must be an int or None, got %s'
                                 % (self.name, self.axis))

    def along(self, shape):
        """(axis in the viewed data, length along it, shape of the viewed data)."""
        if self.axis is None:
            n = prod(shape)
            return 0, n, (n,)
        if not -len(shape) <= self.axis < len(shape):
            raise ShapeError('axis %d is out of range for data of shape %s'
                             % (self.axis, tuple(shape)))
        axis = self.axis % len(shape)
        return axis, shape[axis], tuple(shape)

    def count(self, n):
        return n

    def out_shape(self, shape):
        axis, n, view = self.along(shape)
        out = list(view)
        out[axis] = self.count(n)
        return tuple(out)

    def view(self, x):
        return x.reshape(-1) if self.axis is None else x

    def scatter(self, xp, x, idx, dy):
        """Gradient of x: ``dy`` put at the positions ``idx`` along the axis."""
        axis, _, _ = self.along(x.shape)
        g = xp.zeros_like(self.view(x))
        xp.put_along_axis(g, idx.astype('int64'), dy.reshape(idx.shape), axis)
        return g.reshape(x.shape)


@register
class TopK(_Sorting):
    """The ``k`` largest (or smallest) elements along ``axis``.

    ``ret_typ``: ``'indices'`` (default), ``'value'``, ``'both'`` (values and indices) or
    ``'mask'`` (1 at the selected positions). ``k < 1`` selects every element.
    """

    name = 'topk'
    axis = Param('axis', -1, doc='Axis along which to choose the top k; None flattens.')
    k = Param(int, 1, doc='Number of top elements to select.')
    ret_typ = Param(str, 'indices', doc='The return type.',
                    choices=('both', 'indices', 'mask', 'value'))
    is_ascend = Param(bool, False, doc='Select the smallest elements instead.')
    dtype = Param('dtype', np_dtype('float32'), doc='Data type of the indices.',
                  choices=_INDEX_DTYPES)
    needs_outputs = True

    def list_outputs(self):
        # 'value' keeps the indices as a hidden second output for the gradient
        if self.ret_typ in ('indices', 'mask'):
            return ['output']
        return ['output0', 'output1']

    def num_visible_outputs(self):
        return 2 if self.ret_typ == 'both' else 1

    def count(self, n):
        if self.k > n:
            raise ShapeError('topk: k=%d is larger than the %d elements along the axis'
                             % (self.k, n))
        return n if self.k < 1 else self.k

    def infer_shape(self, in_shapes):
        s = in_shapes[0]
        if s is None:
            return [None], [None] * len(self.list_outputs()), []
        if self.ret_typ == 'mask':
            self.out_shape(s)   # validates k and axis
            return [s], [tuple(s)], []
        out = self.out_shape(s)
        return [s], [out] * len(self.list_outputs()), []

    def infer_type(self, in_types):
        t = in_types[0]
        return [t], {'indices': [self.dtype], 'mask': [t], 'both': [t, self.dtype],
                     'value': [t, np_dtype('int64')]}[self.ret_typ], []

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        axis, n, _ = self.along(x.shape)
        xv = self.view(x)
        order = sort_order(xp, xv, axis, self.is_ascend)
        idx = xp.take(order, xp.arange(self.count(n)), axis=axis)
        if self.ret_typ == 'indices':
            return [idx.astype(self.dtype)]
        if self.ret_typ == 'mask':
            mask = xp.zeros_like(xv)
            xp.put_along_axis(mask, idx, 1, axis)
            return [mask.reshape(x.shape)]
        values = xp.take_along_axis(xv, idx, axis)
        hidden = self.dtype if self.ret_typ == 'both' else 'int64'
        return [values, idx.astype(hidden)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        if not need[0]:
            return [None]
        x = inputs[0]
        if self.ret_typ in ('indices', 'mask'):
            return [xp.zeros_like(x)]
        return [self.scatter(xp, x, outputs[1], out_grads[0])]


@register
class Sort(_Sorting):
    """Sorted values along ``axis`` (ascending by default)."""

    name = 'sort'
    axis = Param('axis', -1, doc='Axis along which to sort; None flattens.')
    is_ascend = Param(bool, True, doc='Sort in ascending order.')
    needs_outputs = True

    def list_outputs(self):
        # the hidden second output holds the order, for the gradient
        return ['output0', 'output1']

    def num_visible_outputs(self):
        return 1

    def infer_shape(self, in_shapes):
        s = in_shapes[0]
        out = None if s is None else self.out_shape(s)
        return [s], [out, out], []

    def infer_type(self, in_types):
        return [in_types[0]], [in_types[0], np_dtype('int64')], []

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        axis, _, _ = self.along(x.shape)
        xv = self.view(x)
        order = sort_order(xp, xv, axis, self.is_ascend)
        return [xp.take_along_axis(xv, order, axis), order]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        if not need[0]:
            return [None]
        return [self.scatter(xp, inputs[0], outputs[1], out_grads[0])]


@register
class Argsort(_Sorting):
    """Indices that sort ``data`` along ``axis``, in ``dtype``; zero gradient."""

    name = 'argsort'
    axis = Param('axis', -1, doc='Axis along which to sort; None flattens.')
    is_ascend = Param(bool, True, doc='Sort in ascending order.')
    dtype = Param('dtype', np_dtype('float32'), doc='Data type of the indices.',
                  choices=_INDEX_DTYPES)
    no_grad = True

    def infer_shape(self, in_shapes):
        s = in_shapes[0]
        return [s], [None if s is None else self.out_shape(s)], []

    def infer_type(self, in_types):
        return [in_types[0]], [self.dtype], []

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        axis, _, _ = self.along(x.shape)
        return [sort_order(xp, self.view(x), axis, self.is_ascend).astype(self.dtype)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        return [xp.zeros_like(inputs[0]) if need[0] else None]


@register
class Histogram(Operator):
    """Counts of ``data`` in ``bin_cnt`` equal bins over ``range`` or between the sorted
    edges ``bins`` (``mx.nd.histogram``); outputs the int64 counts and the edges.

    As MXNet 1.9.1: with ``bin_cnt`` (and then ``range``, which MXNet requires with it) the
    operator has the single input ``data``; values outside the range and NaN are not
    counted, the last bin includes its right edge; a value's bin is
    ``int((x - lo) * bin_cnt / (hi - lo))`` computed in data's dtype; no gradient (MXNet
    refuses to bind one).
    """

    name = '_histogram'
    bin_cnt = Param(int, None, doc='number of equal bins (None: the bins input gives edges)')
    range = Param('floats', None, doc='(lower, upper) of the bins; given with bin_cnt')
    no_grad = True
    needs_inputs = False

    def check(self):
        if (self.bin_cnt is None) != (self.range is None):
            # MXNet 1.9.1's shape function: "cnt and range should both or neither specified"
            raise ParameterError('_histogram: bin_cnt and range must both be given or both '
                                 'be absent (bin_cnt=%s, range=%s)' % (self.bin_cnt, self.range))
        if self.bin_cnt is not None and self.bin_cnt <= 0:
            raise MXNetError('_histogram: bin_cnt must be positive, got %d' % self.bin_cnt)
        if self.range is not None and (len(self.range) != 2 or
                                       not self.range[0] < self.range[1]):
            raise MXNetError('_histogram: range must be (lower, upper) with lower < upper, '
                             'got %s' % (self.range,))

    def list_arguments(self):
        return ['data'] if self.bin_cnt is not None else ['data', 'bins']

    def list_outputs(self):
        return ['output0', 'output1']

    def infer_shape(self, in_shapes):
        if self.bin_cnt is not None:
            return [in_shapes[0]], [(self.bin_cnt,), (self.bin_cnt + 1,)], []
        b = in_shapes[1]
        if b is not None and len(b) != 1:
            raise ShapeError('_histogram: argument %r must be 1-D, got %s' % ('bins', tuple(b)))
        if b is None or not b[0]:
            return list(in_shapes[:2]), [None, b], []
        if b[0] < 2:
            raise ShapeError('_histogram: argument %r needs at least 2 edges, got %s'
                             % ('bins', tuple(b)))
        return list(in_shapes[:2]), [(b[0] - 1,), tuple(b)], []

    def infer_type(self, in_types):
        t = in_types[0]
        return list(in_types), [np.dtype(np.int64), t], []

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0].reshape(-1)
        if self.bin_cnt is not None:
            n = self.bin_cnt
            lo, hi = self.range
            edges = xp.asarray((lo + np.arange(n + 1) * ((hi - lo) / n)).astype(x.dtype))
            dt = x.dtype.type
            inside = (x >= dt(lo)) & (x <= dt(hi))
            xs = x[inside]
            k = ((xs - dt(lo)) * dt(n) / (dt(hi) - dt(lo))).astype(np.int64)
        else:
            edges = inputs[1]
            n = edges.shape[0] - 1
            inside = (x >= edges[0]) & (x <= edges[n])
            xs = x[inside]
            k = xp.searchsorted(edges, xs, side='right') - 1
        k = xp.minimum(k, n - 1)
        return [xp.bincount(k, minlength=n).astype(np.int64), edges]
