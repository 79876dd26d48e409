"""NDArray: a thin wrapper over a NumPy or CuPy array and its context (``mx.nd``).

Operator functions (``mx.nd.exp``, ``mx.nd.contrib.box_nms``, ``mx.nd.Custom``) run the
registered operator's forward imperatively.
"""
from __future__ import annotations

import math
import numbers
import operator

import numpy as np

from . import opdef
from .base import MXNetError
from .context import Context, current_context, cpu, context_of, array_module

__all__ = ['NDArray', 'array', 'zeros', 'ones', 'empty', 'full', 'arange', 'eye', 'linspace',
           'save', 'load',
           'concat', 'waitall', 'zeros_like', 'ones_like']


class NDArray:
    """An n-dimensional array on a device. ``_data`` is the NumPy/CuPy array."""

    __slots__ = ('_data', '_ctx', '__weakref__')
    __array_priority__ = 1000.0

    def __init__(self, data, ctx=None):
        self._data = data
        self._ctx = ctx if ctx is not None else context_of(data)

    # ----------------------------------------------------------------- properties
    @property
    def shape(self):
        return tuple(self._data.shape)

    @property
    def dtype(self):
        return self._data.dtype.type

    @property
    def size(self):
        return int(self._data.size)

    @property
    def ndim(self):
        return self._data.ndim

    @property
    def context(self):
        return self._ctx

    ctx = context

    @property
    def stype(self):
        return 'default'

    @property
    def T(self):
        return NDArray(self._data.T, self._ctx)

    @property
    def handle(self):
        return self._data

    def asnumpy(self):
        """A NumPy copy of the data."""
        d = self._data
        if isinstance(d, np.ndarray):
            return d.copy()
        return d.get()

    def asscalar(self):
        if self.size != 1:
            raise ValueError('The current array is not a scalar (shape %s)' % (self.shape,))
        return self.asnumpy().reshape(-1)[0]

    def wait_to_read(self):
        return self

    def __array__(self, dtype=None, copy=None):
        a = self.asnumpy()
        return a if dtype is None else a.astype(dtype)

    def __len__(self):
        return self.shape[0]

    def __repr__(self):
        return '\n%s\n<NDArray %s @%s>' % (self.asnumpy(), 'x'.join(map(str, self.shape)),
                                          self._ctx)

    # ----------------------------------------------------------------- conversion
    def copyto(self, other):
        """Copy into another NDArray (same shape) or onto a Context (a new array)."""
        if isinstance(other, NDArray):
            if other.shape != self.shape:
                raise ValueError('copyto: shape mismatch %s vs %s' % (self.shape, other.shape))
            with other._ctx.device_scope():
                other._data[...] = _to_xp(self._data, other._ctx)
            return other
        if isinstance(other, Context):
            with other.device_scope():
                xp = other.xp
                return NDArray(xp.array(_to_xp(self._data, other), copy=True), other)
        raise TypeError('copyto does not support type %s' % type(other))

    def as_in_context(self, context):
        if context == self._ctx:
            return self
        return self.copyto(context)

    def astype(self, dtype, copy=True):
        dtype = np.dtype(dtype)
        if not copy and dtype == self._data.dtype:
            return self
        with self._ctx.device_scope():
            return NDArray(self._data.astype(dtype), self._ctx)

    def copy(self):
        with self._ctx.device_scope():
            return NDArray(self._data.copy(), self._ctx)

    def reshape(self, *shape, **kwargs):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        shape = kwargs.get('shape', shape)
        return NDArray(self._data.reshape(shape), self._ctx)

    def tostype(self, stype):
        if stype != 'default':
            raise MXNetError('sparse storage types are not supported')
        return self

    # ----------------------------------------------------------------- indexing
    def __getitem__(self, key):
        key = _unwrap(key)
        with self._ctx.device_scope():       # advanced indexing runs a kernel
            return NDArray(self._data[key], self._ctx)

    def __setitem__(self, key, value):
        key = _unwrap(key)
        if isinstance(value, NDArray):
            value = _to_xp(value._data, self._ctx)
        elif not isinstance(value, numbers.Number):
            value = _to_xp(np.asarray(value), self._ctx) if isinstance(value, (list, tuple,
                                                                               np.ndarray)) \
                else _to_xp(value, self._ctx)
        with self._ctx.device_scope():
            self._data[key] = value

    # ----------------------------------------------------------------- arithmetic
    def _int_scalar(self, key, scalar):
        """``self <key> scalar`` on an integer array through the scalar operator, which
        follows MXNet: the scalar is cast to the array's dtype first."""
        op = opdef.get_op(_SCALAR_OPS[key])(scalar=float(scalar))
        with self._ctx.device_scope():
            return op.forward(self._ctx.xp, [self._data], [], False)[0]

    def _binary(self, other, fn, key=None):
        if key is not None and isinstance(other, numbers.Number) and self._data.dtype.kind in 'iu':
            return NDArray(self._int_scalar(key, other), self._ctx)
        xp = array_module(self._data)
        o = _to_xp(other._data, self._ctx) if isinstance(other, NDArray) else other
        with self._ctx.device_scope():
            r = fn(xp, self._data, o)
            if r.dtype != self._data.dtype and r.dtype.kind == self._data.dtype.kind:
                r = r.astype(self._data.dtype)
        return NDArray(r, self._ctx)

    def __add__(self, o):
        return self._binary(o, lambda xp, a, b: a + b, 'add')

    __radd__ = __add__

    def __sub__(self, o):
        return self._binary(o, lambda xp, a, b: a - b, 'sub')

    def __rsub__(self, o):
        return self._binary(o, lambda xp, a, b: b - a, 'rsub')

    def __mul__(self, o):
        return self._binary(o, lambda xp, a, b: a * b, 'mul')

    __rmul__ = __mul__

    def __truediv__(self, o):
        return self._binary(o, lambda xp, a, b: a / b, 'div')

    def __rtruediv__(self, o):
        return self._binary(o, lambda xp, a, b: b / a, 'rdiv')

    def __mod__(self, o):
        return self._binary(o, lambda xp, a, b: xp.mod(a, b), 'mod')

    def __rmod__(self, o):
        return self._binary(o, lambda xp, a, b: xp.mod(b, a), 'rmod')

    def __pow__(self, o):
        return self._binary(o, lambda xp, a, b: a ** b, 'pow')

    def __rpow__(self, o):
        return self._binary(o, lambda xp, a, b: b ** a, 'rpow')

    def __neg__(self):
        with self._ctx.device_scope():
            return NDArray(-self._data, self._ctx)

    def __abs__(self):
        with self._ctx.device_scope():
            return NDArray(abs(self._data), self._ctx)

    def _cmp(self, o, fn, key):
        return self._binary(o, lambda xp, a, b: fn(a, b).astype(a.dtype), key)

    def __eq__(self, o):
        return self._cmp(o, lambda a, b: a == b, 'eq')

    def __ne__(self, o):
        return self._cmp(o, lambda a, b: a != b, 'ne')

    def __gt__(self, o):
        return self._cmp(o, lambda a, b: a > b, 'gt')

    def __ge__(self, o):
        return self._cmp(o, lambda a, b: a >= b, 'ge')

    def __lt__(self, o):
        return self._cmp(o, lambda a, b: a < b, 'lt')

    def __le__(self, o):
        return self._cmp(o, lambda a, b: a <= b, 'le')

    __hash__ = object.__hash__

    def _inplace(self, o, fn, key):
        if isinstance(o, numbers.Number) and self._data.dtype.kind in 'iu':
            r = self._int_scalar(key, o)
            with self._ctx.device_scope():
                self._data[...] = r
            return self
        o = _to_xp(o._data, self._ctx) if isinstance(o, NDArray) else o
        with self._ctx.device_scope():
            fn(self._data, o)
        return self

    def __iadd__(self, o):
        return self._inplace(o, lambda a, b: a.__iadd__(b), 'add')

    def __isub__(self, o):
        return self._inplace(o, lambda a, b: a.__isub__(b), 'sub')

    def __imul__(self, o):
        return self._inplace(o, lambda a, b: a.__imul__(b), 'mul')

    def __itruediv__(self, o):
        return self._inplace(o, lambda a, b: a.__itruediv__(b), 'div')

    def __bool__(self):
        if self.size != 1:
            raise ValueError('The truth value of an NDArray with multiple elements is '
                             'ambiguous.')
        return bool(self.asscalar())

    def __getattr__(self, name):
        # fluent methods: x.sum(), x.exp(), x.reshape(...) through the operators
        if name.startswith('_'):
            raise AttributeError(name)
        try:
            opdef.get_op(name)
        except MXNetError:
            raise AttributeError("'NDArray' object has no attribute %r" % name) from None
        fn = _op_function(name)
        return lambda *a, **k: fn(self, *a, **k)


#: NDArray arithmetic with a scalar -> the scalar operator MXNet's NDArray uses
_SCALAR_OPS = {
    'add': '_plus_scalar', 'sub': '_minus_scalar', 'rsub': '_rminus_scalar',
    'mul': '_mul_scalar', 'div': '_div_scalar', 'rdiv': '_rdiv_scalar',
    'mod': '_mod_scalar', 'rmod': '_rmod_scalar', 'pow': '_power_scalar',
    'rpow': '_rpower_scalar', 'eq': '_equal_scalar', 'ne': '_not_equal_scalar',
    'gt': '_greater_scalar', 'ge': '_greater_equal_scalar', 'lt': '_lesser_scalar',
    'le': '_lesser_equal_scalar',
}




def _index(k):
    """An NDArray used as an index: its data, float indices truncated to integers (MXNet
    indexes with float32 NDArrays, its default dtype)."""
    if not isinstance(k, NDArray):
        return k
    d = k._data
    return d.astype(np.int64) if d.dtype.kind == 'f' else d


def _unwrap(key):
    if isinstance(key, tuple):
        return tuple(_index(k) for k in key)
    return _index(key)


def _to_xp(data, ctx):
    """``data`` as an array of ``ctx``'s array module (copying across devices)."""
    if ctx is None or not ctx.is_gpu:
        if isinstance(data, np.ndarray) or np.isscalar(data):
            return data
        if hasattr(data, 'get'):
            return data.get()
        return np.asarray(data)
    with ctx.device_scope():
        xp = ctx.xp
        if isinstance(data, xp.ndarray) and data.device.id != ctx.device_id:
            # asarray would keep the array on its own GPU; copy() lands on the current one
            return data.copy()
        return xp.asarray(data)


# ---------------------------------------------------------------------- creation
def _ctx(ctx):
    return current_context() if ctx is None else Context(ctx)


def _alloc(ctx, fn):
    ctx = _ctx(ctx)
    with ctx.device_scope():
        return NDArray(fn(ctx.xp), ctx)


def array(source_array, ctx=None, dtype=None):
    """An NDArray copied from an array-like: of ``dtype`` if given, else the source's
    dtype for an NDArray and float32 for anything else (NumPy arrays of any dtype too), as
    in MXNet 1.9.1.

    >>> import symgraph as mx, numpy as np
    >>> mx.nd.array([[1, 2], [3, 4]]).dtype
    <class 'numpy.float32'>
    >>> mx.nd.array(np.arange(3)).dtype, mx.nd.array(np.arange(3), dtype='int64').dtype
    (<class 'numpy.float32'>, <class 'numpy.int64'>)
    """
    if isinstance(source_array, NDArray):
        src = source_array.asnumpy()
        dtype = dtype or src.dtype
    else:
        src = source_array.get() if hasattr(source_array, 'get') and not isinstance(
            source_array, np.ndarray) else np.asarray(source_array)
    if dtype is None:
        dtype = np.float32
    return _alloc(ctx, lambda xp: xp.array(src, dtype=dtype))


def zeros(shape, ctx=None, dtype=None, **kwargs):
    dtype = np.float32 if dtype is None else dtype
    return _alloc(ctx, lambda xp: xp.zeros(shape, dtype=dtype))


def empty(shape, ctx=None, dtype=None):
    """Like :func:`zeros`: symgraph never hands out uninitialised memory."""
    return zeros(shape, ctx, dtype)


def ones(shape, ctx=None, dtype=None, **kwargs):
    dtype = np.float32 if dtype is None else dtype
    return _alloc(ctx, lambda xp: xp.ones(shape, dtype=dtype))


def full(shape, val, ctx=None, dtype=None, out=None):
    dtype = np.float32 if dtype is None else dtype
    arr = _alloc(ctx, lambda xp: xp.full(shape, val, dtype=dtype))
    if out is not None:
        out[:] = arr
        return out
    return arr


def arange(start, stop=None, step=1.0, repeat=1, infer_range=None, ctx=None,
           dtype=None):
    dtype = np.float32 if dtype is None else dtype

    def make(xp):
        a = xp.arange(start, stop, step, dtype=dtype) if stop is not None \
            else xp.arange(0, start, step, dtype=dtype)
        return xp.repeat(a, repeat) if repeat > 1 else a
    return _alloc(ctx, make)


def eye(N, M=0, k=0, ctx=None, dtype=None, **kwargs):
    """N x M (M=0: N) with ones on diagonal k, as ``mx.nd.eye``."""
    dtype = np.float32 if dtype is None else dtype
    return _alloc(ctx, lambda xp: xp.eye(N, M or N, k=k, dtype=dtype))


def linspace(start, stop, num, endpoint=True, ctx=None, dtype=None):
    """``num`` evenly spaced values from start to stop, as ``mx.nd.linspace``."""
    dtype = np.float32 if dtype is None else dtype
    values = np.linspace(start, stop, num, endpoint=endpoint).astype(dtype)
    return _alloc(ctx, lambda xp: xp.asarray(values))


def zeros_like(a):
    return _alloc(a._ctx, lambda xp: xp.zeros_like(a._data))


def ones_like(a):
    return _alloc(a._ctx, lambda xp: xp.ones_like(a._data))


def concat(*arrays, dim=1):
    '''Join NDArrays along ``dim`` on the first one's context (others are copied there).'''
    ctx = arrays[0]._ctx
    return _alloc(ctx, lambda xp: xp.concatenate([_to_xp(a._data, ctx) for a in arrays],
                                                 axis=dim))


def waitall():
    """All computation is synchronous on the CPU; on a GPU, wait for the device."""
    from .context import num_gpus, _cupy
    if num_gpus():
        _cupy().cuda.Device().synchronize()


# ---------------------------------------------------------------------- functions
def _ufunc(lhs, rhs, broadcast_op, py_op, scalar_op, rscalar_op):
    """MXNet's dispatch of ``mx.nd.add`` and friends: two numbers give a number, an array
    and a number the scalar operator, two arrays the broadcasting one."""
    if isinstance(lhs, numbers.Number) and isinstance(rhs, numbers.Number):
        return py_op(lhs, rhs)
    if isinstance(rhs, numbers.Number):
        return invoke(scalar_op, (lhs,), {'scalar': float(rhs)})
    if isinstance(lhs, numbers.Number):
        return invoke(rscalar_op, (rhs,), {'scalar': float(lhs)})
    return invoke(broadcast_op, (lhs, rhs), {})


def _make_ufunc(name, broadcast_op, py_op, scalar_op, rscalar_op):
    def fn(lhs, rhs):
        return _ufunc(lhs, rhs, broadcast_op, py_op, scalar_op, rscalar_op)
    fn.__name__ = name
    fn.__doc__ = ('``%s(lhs, rhs)``: NDArrays broadcast (%s), an NDArray and a number use '
                  '%s, two numbers give a number.' % (name, broadcast_op, scalar_op))
    return fn


add = _make_ufunc('add', 'broadcast_add', operator.add, '_plus_scalar', '_plus_scalar')
subtract = _make_ufunc('subtract', 'broadcast_sub', operator.sub, '_minus_scalar',
                       '_rminus_scalar')
multiply = _make_ufunc('multiply', 'broadcast_mul', operator.mul, '_mul_scalar',
                       '_mul_scalar')
divide = _make_ufunc('divide', 'broadcast_div', operator.truediv, '_div_scalar',
                     '_rdiv_scalar')
true_divide = divide
modulo = _make_ufunc('modulo', 'broadcast_mod', operator.mod, '_mod_scalar',
                     '_rmod_scalar')
power = _make_ufunc('power', 'broadcast_power', operator.pow, '_power_scalar',
                    '_rpower_scalar')
maximum = _make_ufunc('maximum', 'broadcast_maximum', max, '_maximum_scalar',
                      '_maximum_scalar')
minimum = _make_ufunc('minimum', 'broadcast_minimum', min, '_minimum_scalar',
                      '_minimum_scalar')
hypot = _make_ufunc('hypot', 'broadcast_hypot', math.hypot, '_hypot_scalar', '_hypot_scalar')
equal = _make_ufunc('equal', 'broadcast_equal', lambda a, b: float(a == b), '_equal_scalar',
                    '_equal_scalar')
not_equal = _make_ufunc('not_equal', 'broadcast_not_equal', lambda a, b: float(a != b),
                        '_not_equal_scalar', '_not_equal_scalar')
greater = _make_ufunc('greater', 'broadcast_greater', lambda a, b: float(a > b),
                      '_greater_scalar', '_lesser_scalar')
greater_equal = _make_ufunc('greater_equal', 'broadcast_greater_equal',
                            lambda a, b: float(a >= b), '_greater_equal_scalar',
                            '_lesser_equal_scalar')
lesser = _make_ufunc('lesser', 'broadcast_lesser', lambda a, b: float(a < b),
                     '_lesser_scalar', '_greater_scalar')
lesser_equal = _make_ufunc('lesser_equal', 'broadcast_lesser_equal',
                           lambda a, b: float(a <= b), '_lesser_equal_scalar',
                           '_greater_equal_scalar')
logical_and = _make_ufunc('logical_and', 'broadcast_logical_and',
                          lambda a, b: float(bool(a) and bool(b)), '_logical_and_scalar',
                          '_logical_and_scalar')
logical_or = _make_ufunc('logical_or', 'broadcast_logical_or',
                         lambda a, b: float(bool(a) or bool(b)), '_logical_or_scalar',
                         '_logical_or_scalar')
logical_xor = _make_ufunc('logical_xor', 'broadcast_logical_xor',
                          lambda a, b: float(bool(a) != bool(b)), '_logical_xor_scalar',
                          '_logical_xor_scalar')


def moveaxis(tensor, source, destination):
    """``tensor`` with axis ``source`` moved to ``destination`` (a transpose)."""
    axes = list(range(tensor.ndim))
    src = source % tensor.ndim
    axes.pop(src)
    axes.insert(destination % tensor.ndim, src)
    return invoke('transpose', (tensor,), {'axes': tuple(axes)})


def from_numpy(ndarray, zero_copy=True):
    """An NDArray on the CPU holding ``ndarray`` (sharing its memory with ``zero_copy``,
    which needs a C-contiguous array, as MXNet)."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError('from_numpy takes a numpy.ndarray, got %s' % type(ndarray).__name__)
    if zero_copy:
        if not ndarray.flags.c_contiguous:
            raise ValueError('from_numpy with zero_copy=True needs a C-contiguous array')
        return NDArray(ndarray, cpu())
    return NDArray(ndarray.copy(), cpu())


# ---------------------------------------------------------------------- files
def save(fname, data):
    """Save an NDArray, a list or a dict of NDArrays in MXNet's ``.params`` format."""
    from .serialization import save_arrays
    if isinstance(data, NDArray):
        data = [data]
    if isinstance(data, dict):
        arrays = {}
        for k, v in data.items():
            if not isinstance(k, str) or not isinstance(v, NDArray):
                raise TypeError('save only accepts dict str->NDArray or list of NDArray')
            arrays[k] = v.asnumpy()
    elif isinstance(data, (list, tuple)):
        if any(not isinstance(v, NDArray) for v in data):
            raise TypeError('save only accepts dict str->NDArray or list of NDArray')
        arrays = [v.asnumpy() for v in data]
    else:
        raise TypeError('save only accepts dict str->NDArray or list of NDArray')
    save_arrays(fname, arrays)


def load(fname, ctx=None):
    """Load a ``.params`` file written by MXNet or :func:`save`: a list or a dict."""
    from .serialization import load_arrays
    data = load_arrays(fname)
    c = cpu() if ctx is None else ctx
    if isinstance(data, dict):
        return {k: array(v, c, dtype=v.dtype) for k, v in data.items()}
    return [array(v, c, dtype=v.dtype) for v in data]


# ---------------------------------------------------------------------- operators
def invoke(func_name, args, kwargs):
    """Run an operator imperatively on NDArrays (the body of ``mx.nd.<op>``)."""
    cls = opdef.get_op(func_name)
    args, kwargs = cls.split_positional(args, lambda a: isinstance(a, NDArray), kwargs)
    kwargs = dict(kwargs)
    out = kwargs.pop('out', None)
    kwargs.pop('name', None)
    nd_kwargs = {k: v for k, v in kwargs.items() if isinstance(v, NDArray)}
    params = {k: v for k, v in kwargs.items() if not isinstance(v, NDArray) and v is not None}
    if 'num_args' in cls._params and 'num_args' not in params:
        params['num_args'] = len(args) + len(nd_kwargs)
    op = cls(**params)
    names = op.list_arguments() + op.list_auxiliary_states()
    inputs = list(args) + [None] * (len(names) - len(args))
    for k, v in nd_kwargs.items():
        if k not in names:
            raise MXNetError('operator %s: unknown input %r; inputs are %s'
                             % (cls.name, k, names))
        inputs[names.index(k)] = v
    missing = [n for n, v in zip(names, inputs) if v is None]
    if missing:
        raise MXNetError('operator %s: missing inputs %s' % (cls.name, missing))
    for n, v in zip(names, inputs):
        if not isinstance(v, NDArray):
            raise TypeError('operator %s: input %r must be an NDArray, got %s'
                            % (cls.name, n, type(v).__name__))
    ctx = inputs[0]._ctx if inputs else current_context()
    n_args = len(op.list_arguments())
    with ctx.device_scope():
        xp = ctx.xp
        datas = [_to_xp(v._data, ctx) for v in inputs]
        op.infer_shape([d.shape for d in datas])
        state = op.create_state()
        if state is None:
            outs = op.forward(xp, datas[:n_args], datas[n_args:], False)
        else:
            outs = op.forward(xp, datas[:n_args], datas[n_args:], False, state=state)
    res = [NDArray(_own(o, datas, ctx), ctx) for o in outs[:op.num_visible_outputs()]]
    if out is not None:
        outs_given = out if isinstance(out, (list, tuple)) else [out]
        for dst, r in zip(outs_given, res):
            dst[:] = r
        return out
    return res[0] if len(res) == 1 else res


def _roots(a):
    """The array whose memory ``a`` views (``a`` itself when it owns it)."""
    while getattr(a, 'base', None) is not None:
        a = a.base
    return a


def _own(out, inputs, ctx):
    """``out``, copied when it views an input's memory: an operator may return a view
    (reverse, Flatten, slices), but an mx.nd result is a new array, as in MXNet."""
    root = _roots(out)
    if any(root is _roots(d) for d in inputs):
        with ctx.device_scope():
            return out.copy()
    return out


def _op_function(func_name):
    cls = opdef.get_op(func_name)

    def fn(*args, **kwargs):
        return invoke(func_name, args, kwargs)
    fn.__name__ = func_name
    fn.__doc__ = cls.__doc__
    return fn


contrib = opdef.OpNamespace('_contrib_', lambda name, hint: _op_function(name))
linalg = opdef.OpNamespace('_linalg_', lambda name, hint: _op_function(name))
_internal = opdef.OpNamespace('', lambda name, hint: _op_function(name))


def __getattr__(name):
    if name.startswith('__'):
        raise AttributeError(name)
    if name == 'random':            # mx.nd.random.uniform(...), normal, randint ...
        from .sampling import namespace
        return namespace('nd')
    try:
        return _op_function(name)
    except MXNetError:
        raise AttributeError('module symgraph.ndarray has no attribute or operator %r'
                             % name) from None
