"""Operators that make arrays from their parameters: ``_zeros``, ``_zeros_without_dtype``,
``_ones``, ``_full``, ``_arange``, ``_eye`` and ``_linspace`` (behind ``mx.sym.zeros``,
``mx.sym.arange`` ...), and ``_contrib_arange_like`` (shaped like its input).

As in MXNet 1.9.1: a 0 in the ``shape`` of ``_zeros``/``_ones``/``_full`` is an unknown
dimension that shape inference fills from the consumer, and a bound executor makes the
array of the inferred shape (``fitted``: the ``instead`` rule for ``'shapes'``); the dtype
defaults to float32; ``_arange`` takes ``stop=None`` as ``[0, start)`` and repeats each
value ``repeat`` times; ``infer_range`` (the length taken from the consumer) is not
supported and says so; ``ctx`` is accepted and ignored (the executor's context decides).

``_contrib_arange_like``: ``start + (i // repeat) * step`` in data's dtype (start and step
cast to it first; for float16 MXNet truncates both to integers), shaped like data, or 1-D
along ``axis``; zero gradient.
"""
import math

import numpy as np

from symgraph.opdef import Operator, Param, ShapeError, np_dtype, register
from symgraph.base import ParameterError

_DTYPES = [np_dtype(t) for t in ('float16', 'float32', 'float64', 'uint8', 'int8', 'int32',
                                 'int64', 'bool')]


class _Init(Operator):
    """No inputs, one output of a shape and dtype known from the parameters."""

    ctx = Param(str, None, doc='ignored: the executor context decides')
    dtype = Param('dtype', np.dtype(np.float32), doc='output dtype', choices=_DTYPES)
    no_grad = True
    needs_inputs = False

    def list_arguments(self):
        return []

    def out_shape(self):
        raise NotImplementedError

    def infer_shape(self, in_shapes):
        return [], [self.out_shape()], []

    def infer_type(self, in_types):
        return [], [self.dtype], []

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        return []


class _Filled(_Init):
    shape = Param('shape', (), doc='output shape')
    param_order = ('shape', 'ctx', 'dtype')

    def out_shape(self):
        return tuple(self.shape)

    def fitted(self, in_shapes, out_shapes):
        # MXNet: a 0 in ``shape`` is unknown; inference fills it from the consumer and
        # the bound operator makes an array of the inferred shape
        want = out_shapes[0]
        if want is None or 0 in tuple(want):
            raise ShapeError('%s: shape %s has unknown (0) dimensions that inference could '
                             'not fill from the consumers (inferred %s); give them in shape'
                             % (self.name, tuple(self.shape), want))
        if tuple(want) == tuple(self.shape):
            return self
        values = dict(self._values)
        values['shape'] = tuple(want)
        return type(self)(**values)


@register
class Zeros(_Filled):
    name = '_zeros'

    def forward(self, xp, inputs, aux, is_train):
        return [xp.zeros(self.out_shape(), dtype=self.dtype)]


@register
class ZerosWithoutDtype(_Filled):
    """``_zeros_without_dtype``: zeros whose ``dtype`` is MXNet's type flag, -1 (the
    default) meaning float32 (0 float32, 1 float64, 2 float16, 3 uint8, 4 int32, 5 int8,
    6 int64, 7 bool)."""

    name = '_zeros_without_dtype'
    dtype = Param(int, -1, doc='type flag of the output (-1: float32)')

    def check(self):
        if self.dtype not in _TYPE_FLAGS:
            raise ParameterError('_zeros_without_dtype: dtype must be one of the type flags %s, '
                                 'got %d' % (sorted(_TYPE_FLAGS), self.dtype))

    def infer_type(self, in_types):
        return [], [np.dtype(_TYPE_FLAGS[self.dtype])], []

    def forward(self, xp, inputs, aux, is_train):
        return [xp.zeros(self.out_shape(), dtype=_TYPE_FLAGS[self.dtype])]


_TYPE_FLAGS = {-1: 'float32', 0: 'float32', 1: 'float64', 2: 'float16', 3: 'uint8',
               4: 'int32', 5: 'int8', 6: 'int64', 7: 'bool'}


@register
class Ones(_Filled):
    name = '_ones'

    def forward(self, xp, inputs, aux, is_train):
        return [xp.ones(self.out_shape(), dtype=self.dtype)]


@register
class Full(_Filled):
    name = '_full'
    value = Param(float, doc='fill value')
    param_order = ('shape', 'ctx', 'dtype', 'value')

    def forward(self, xp, inputs, aux, is_train):
        return [xp.full(self.out_shape(), self.value, dtype=self.dtype)]


@register
class Arange(_Init):
    """``repeat`` copies of each of start, start + step, ... below stop."""

    name = '_arange'
    start = Param(float, doc='first value (the end, with stop=None)')
    stop = Param(float, None, doc='end (exclusive); None: [0, start)')
    step = Param(float, 1.0, doc='spacing')
    repeat = Param(int, 1, doc='copies of each value')
    infer_range = Param(bool, False, doc='take the length from the consumer (unsupported)')
    param_order = ('start', 'stop', 'step', 'repeat', 'infer_range', 'ctx', 'dtype')

    def check(self):
        if self.infer_range:
            raise ParameterError('_arange: infer_range=True (the length taken from the consumer) '
                                 'is not supported; give stop')
        if self.step == 0:
            raise ParameterError('_arange: step must not be 0')
        if self.repeat < 1:
            raise ParameterError('_arange: repeat must be >= 1, got %d' % self.repeat)

    def _bounds(self):
        return (0.0, self.start) if self.stop is None else (self.start, self.stop)

    def out_shape(self):
        lo, hi = self._bounds()
        n = max(int(math.ceil((hi - lo) / self.step)), 0)
        return (n * self.repeat,)

    def forward(self, xp, inputs, aux, is_train):
        lo, _ = self._bounds()
        n = self.out_shape()[0] // self.repeat
        dtype = np.dtype(self.dtype)
        if dtype.kind == 'f':
            # MXNet's kernel: start + i * step, each operation in the dtype
            t = dtype.type
            a = np.arange(n, dtype=dtype) * t(self.step)
            a += t(lo)
        else:
            # MXNet casts start and step to the integer dtype first (truncating toward
            # zero), then steps in it, wrapping as C does: arange(1.3, 10, 1.3) is 1, 2, 3...
            a = (int(lo) + np.arange(n, dtype=np.int64) * int(self.step)).astype(dtype)
        if self.repeat > 1:
            a = np.repeat(a, self.repeat)
        return [xp.asarray(a)]


@register
class Eye(_Init):
    """N x M with ones on diagonal k."""

    name = '_eye'
    N = Param(int, doc='rows')
    M = Param(int, 0, doc='columns (0: N)')
    k = Param(int, 0, doc='diagonal: 0 main, > 0 above, < 0 below')
    param_order = ('N', 'M', 'k', 'ctx', 'dtype')

    def out_shape(self):
        if self.N < 0 or self.M < 0:
            raise ShapeError('_eye: N and M must be >= 0, got %d and %d' % (self.N, self.M))
        return (self.N, self.M or self.N)

    def forward(self, xp, inputs, aux, is_train):
        n, m = self.out_shape()
        return [xp.eye(n, m, k=self.k, dtype=self.dtype)]


@register
class Linspace(_Init):
    """``num`` evenly spaced values from start to stop (included with ``endpoint``)."""

    name = '_linspace'
    start = Param(float, doc='first value')
    stop = Param(float, doc='last value (or the end, without endpoint)')
    num = Param(int, doc='number of values')
    endpoint = Param(bool, True, doc='include stop')
    param_order = ('start', 'stop', 'num', 'endpoint', 'ctx', 'dtype')

    def out_shape(self):
        if self.num < 0:
            raise ShapeError('_linspace: num must be >= 0, got %d' % self.num)
        return (self.num,)

    def forward(self, xp, inputs, aux, is_train):
        a = np.linspace(self.start, self.stop, self.num, endpoint=self.endpoint)
        return [xp.asarray(a.astype(self.dtype))]


@register
class ArangeLike(Operator):
    """``start + (i // repeat) * step`` shaped like ``data`` (or 1-D along ``axis``)."""

    name = '_contrib_arange_like'
    start = Param(float, 0.0, doc='Start of interval.')
    step = Param(float, 1.0, doc='Spacing between values.')
    repeat = Param(int, 1, doc='The repeating time of all elements.')
    ctx = Param(str, '', doc='Context of output (ignored: the graph has one context).')
    axis = Param(int, None, doc='Arange elements along this axis (default: all of data).')
    no_grad = True

    def check(self):
        if self.repeat < 1:
            raise ParameterError('_contrib_arange_like: repeat must be positive, got %d'
                                 % self.repeat)

    def _out_shape(self, d):
        if self.axis is None:
            return tuple(d)
        ax = self.axis + len(d) if self.axis < 0 else self.axis
        if not 0 <= ax < len(d):
            raise ShapeError('_contrib_arange_like: axis=%d is out of range for argument %r '
                             'of shape %s' % (self.axis, 'data', tuple(d)))
        return (d[ax],)

    infer_shape_uses_outputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        d = in_shapes[0]
        return [d], [None if d is None else self._out_shape(d)], []

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        dt = x.dtype
        start, step = self.start, self.step
        if dt == np.float16:            # MXNet 1.9.1 truncates them for float16 (only)
            start, step = math.trunc(start), math.trunc(step)
        shape = self._out_shape(x.shape)
        k = (xp.arange(int(np.prod(shape)), dtype=np.int64) // self.repeat).astype(dt)
        return [(dt.type(start) + k * dt.type(step)).astype(dt).reshape(shape)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        return [xp.zeros_like(inputs[0]) if need[0] else None]
