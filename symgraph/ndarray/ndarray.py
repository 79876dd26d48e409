"""NDArray: a thin wrapper over a NumPy or CuPy array and its context (``mx.nd``).

Operator functions (``mx.nd.exp``, ``mx.nd.contrib.box_nms``, ``mx.nd.Custom``) run the
registered operator's forward imperatively.
"""
from __future__ import annotations

import math
import numbers
import operator
import sys
import warnings

import numpy as np

from .. import opdef
from ..base import (MXNetError, ArgumentError, ArgumentTypeError, NotSupportedError,
                    ParameterError, ShapeError, SymgraphError, TypeInferenceError,
                    UnknownNameError, user_location, mx_type)
from ..context import Context, current_context, cpu, context_of
from ..context import num_gpus as _num_gpus
from ..util import is_np_shape
from ..graph.plan import needed
from ..graph.rules import instead as _instead
from ..namespaces import make_namespaces
from ..profiler import _recorder as _prof
from . import tape
from .tape import STATE as _AG

__all__ = ['NDArray', 'array', 'zeros', 'ones', 'empty', 'full', 'arange', 'eye', 'linspace',
           'save', 'load', 'load_frombuffer',
           'concat', 'waitall', 'zeros_like', 'ones_like']

#: the builtin slice under the name MXNet's ndarray.py gives it (its tests import it)
py_slice = slice


#: MXNet's storage type codes (``__storage_type__`` attributes, ``.params`` headers);
#: symgraph stores every array dense ('default')
_STORAGE_TYPE_UNDEFINED = -1
_STORAGE_TYPE_DEFAULT = 0
_STORAGE_TYPE_ROW_SPARSE = 1
_STORAGE_TYPE_CSR = 2
_STORAGE_TYPE_STR_TO_ID = {'undefined': _STORAGE_TYPE_UNDEFINED,
                           'default': _STORAGE_TYPE_DEFAULT,
                           'row_sparse': _STORAGE_TYPE_ROW_SPARSE, 'csr': _STORAGE_TYPE_CSR}
_STORAGE_TYPE_ID_TO_STR = {v: k for k, v in _STORAGE_TYPE_STR_TO_ID.items()}


class NDArray:
    """An n-dimensional array on a device. ``_data`` is the NumPy/CuPy array."""

    # _ag: the array's autograd entry (ndarray/tape.py), None when it takes no part;
    # _ver: counts writes into the array, so that the tape can tell that an array its
    # backward reads was written in place since it was recorded
    __slots__ = ('_data', '_ctx', '_ag', '_ver', '__weakref__')
    __array_priority__ = 1000.0

    def __init__(self, data, ctx=None):
        self._data = data
        self._ctx = ctx if ctx is not None else context_of(data)
        self._ag = None
        self._ver = 0

    def __getstate__(self):
        """As MXNet's: ``{'handle': bytearray}`` holding the array's raw record (the
        ``.params`` format's record of one array), so MXNet and symgraph unpickle each
        other's arrays; autograd state is not kept."""
        from .serialization import dumps_record
        return {'handle': bytearray(dumps_record(self.asnumpy()))}

    def __setstate__(self, state):
        from .serialization import loads_record
        handle = state.get('handle') if isinstance(state, dict) else None
        if handle is None:
            raise ArgumentError('NDArray.__setstate__: a state {\'handle\': bytes} is '
                                'needed, got %r' % (type(state).__name__,))
        data, saved_on = loads_record(handle)
        ctx = cpu()
        if saved_on is not None and saved_on[0] == 2 and saved_on[1] < _num_gpus():
            ctx = Context('gpu', saved_on[1])   # a GPU array back onto its GPU, if present
        with ctx.device_scope():
            self._data = _to_xp(data, ctx)
        self._ctx = ctx
        self._ag = None
        self._ver = 0

    # ----------------------------------------------------------------- properties
    @property
    def shape(self):
        return tuple(self._data.shape)

    @property
    def dtype(self):
        t = self._data.dtype
        # bfloat16 (ml_dtypes) as MXNet spells it: np.dtype([('bfloat16', np.uint16)])
        return t.type if t.kind != 'V' else mx_type(t)

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
        """The transpose, a new array (MXNet's ``transpose``); a 1-D array itself."""
        if self.ndim < 2:
            return self
        if self._ag is not None and _AG.recording:
            return invoke('transpose', (self,), {})
        with self._ctx.device_scope():
            return NDArray(self._data.T.copy(), self._ctx)

    @property
    def grad(self):
        """The gradient buffer :meth:`attach_grad` made (None before it, as MXNet)."""
        e = self._ag
        return e.grad if e is not None and e.node is None else None

    def attach_grad(self, grad_req='write', stype=None):
        """Make this array a variable of autograd: a zero gradient buffer of its shape and
        dtype (:attr:`grad`) that ``backward`` writes (``'write'``), adds to (``'add'``)
        or leaves alone (``'null'``). The array's recorded history, if any, is cut."""
        if grad_req not in ('write', 'add', 'null'):
            raise ArgumentError("attach_grad: grad_req must be 'write', 'add' or 'null', "
                                "got %r" % (grad_req,))
        if stype is None:
            stype = self.stype        # (as MXNet: the array's own storage type)
        if stype not in ('default', 'row_sparse', 'csr'):
            raise ArgumentError("attach_grad: stype must be 'default', 'row_sparse' or "
                                "'csr', got %r" % (stype,))
        with self._ctx.device_scope():
            g = self._ctx.xp.zeros(self._data.shape, self._data.dtype)
            # a sparse gradient's stored rows/entries: those backward makes non-zero
            g = NDArray(g, self._ctx) if stype == 'default' else \
                _SPARSE['make'](stype, g, self._ctx)
        self._ag = tape.Entry(None, 0, g, grad_req)

    @property
    def _fresh_grad(self):
        """Whether a backward wrote this variable's gradient since the flag was last
        cleared (MXNet's flag, which gluon.Trainer reads to find stale gradients)."""
        e = self._ag
        return bool(e is not None and e.node is None and e.fresh)

    @_fresh_grad.setter
    def _fresh_grad(self, value):
        e = self._ag
        if e is None or e.node is not None:
            raise AttributeError('_fresh_grad: the array is not a variable of autograd '
                                 '(attach_grad first)')
        e.fresh = bool(value)

    def detach(self):
        """The same values (shared memory) outside the recorded graph."""
        return NDArray(self._data, self._ctx)

    def backward(self, out_grad=None, retain_graph=False, train_mode=True):
        """Gradients of this array with respect to the variables it was computed from
        (``autograd.backward([self], [out_grad])``), written into their :attr:`grad`."""
        g = None
        if out_grad is not None:
            g = out_grad._data if isinstance(out_grad, NDArray) else out_grad
        tape.backward_heads([self], [g], retain_graph, train_mode)

    @property
    def writable(self):
        return True

    @property
    def handle(self):
        return self._data

    # --- DLPack (the array's own protocol: NumPy's or CuPy's, no copy) -------------
    def __dlpack__(self, stream=None, **kwargs):
        """The DLPack capsule of the data (``numpy.from_dlpack(x)`` shares its memory)."""
        if stream is not None:
            kwargs['stream'] = stream
        return self._data.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._data.__dlpack_device__()

    def to_dlpack_for_read(self):
        """A DLPack capsule of the data for reading (MXNet waits for pending writes first;
        symgraph's writes are done when they return). A legacy ``dltensor`` capsule, as
        MXNet's, which every consumer takes; NumPy reads it as a read-only array."""
        return self.__dlpack__()

    def to_dlpack_for_write(self):
        """A DLPack capsule of the data for writing into it: a versioned capsule (DLPack
        1.0) where the array library makes one, so that consumers may write (NumPy makes
        legacy capsules' arrays read-only), else a legacy one."""
        try:
            return self.__dlpack__(max_version=(1, 0))
        except TypeError:                   # NumPy < 2.1, older CuPy
            return self.__dlpack__()

    def asnumpy(self):
        """A NumPy copy of the data."""
        d = self._data
        if isinstance(d, np.ndarray):
            return d.copy()
        return d.get()

    def asscalar(self):
        if self.size != 1:
            raise ArgumentError('The current array is not a scalar (shape %s)' % (self.shape,))
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
                raise ArgumentError('copyto: shape mismatch %s vs %s' % (self.shape, other.shape))
            other._wrote()
            with other._ctx.device_scope():
                other._data[...] = _to_xp(self._data, other._ctx)
            return other
        if isinstance(other, Context):
            with other.device_scope():
                xp = other.xp
                return NDArray(xp.array(_to_xp(self._data, other), copy=True), other)
        raise ArgumentTypeError('copyto does not support type %s' % type(other))

    def as_in_context(self, context):
        if context == self._ctx:
            return self
        return self.copyto(context)

    def astype(self, dtype, copy=True):
        dtype = opdef.as_dtype(dtype)
        if not copy and dtype == self._data.dtype:
            return self
        if self._ag is not None and _AG.recording:
            return invoke('Cast', (self,), {'dtype': dtype.name})
        with self._ctx.device_scope():
            return NDArray(self._data.astype(dtype), self._ctx)

    def copy(self):
        if self._ag is not None and _AG.recording:
            return invoke('_copy', (self,), {})
        with self._ctx.device_scope():
            return NDArray(self._data.copy(), self._ctx)

    def __copy__(self):
        return self.copy()       # as MXNet: a new array, not a second handle to the same

    def __deepcopy__(self, memo):
        return self.copy()

    def reshape(self, *shape, **kwargs):
        """A view of another shape; MXNet's special values (0 copies a dimension, -1
        infers one, -2 copies the rest, -3 merges two, -4 splits one) and ``reverse``."""
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        shape = kwargs.get('shape', shape)
        unknown = set(kwargs) - {'shape', 'reverse'}
        if unknown:
            raise ArgumentTypeError('reshape: unexpected keyword %s' % sorted(unknown))
        if self._ag is not None and _AG.recording:
            return invoke('Reshape', (self,), {'shape': tuple(shape),
                                               'reverse': kwargs.get('reverse', False)})
        op = opdef.get_op('Reshape')(shape=tuple(shape), reverse=kwargs.get('reverse', False))
        target = op.infer_shape([self.shape])[1][0]
        return NDArray(self._data.reshape(target), self._ctx)

    def _shape_op(self, name, inplace, **kw):
        """``name(self, **kw)``: a new array, or with ``inplace`` a view sharing memory."""
        if not inplace or (self._ag is not None and _AG.recording):
            return _op_function(name)(self, **kw)
        target = opdef.get_op(name)(**kw).infer_shape([self.shape])[1][0]
        return NDArray(self._data.reshape(target), self._ctx)

    def flatten(self, inplace=False):
        """Collapse all axes but the first; ``inplace`` gives a view sharing memory."""
        return self._shape_op('Flatten', inplace)

    def expand_dims(self, axis, inplace=False):
        """Insert a size-1 axis; ``inplace`` gives a view sharing memory."""
        return self._shape_op('expand_dims', inplace, axis=axis)

    def squeeze(self, axis=None, inplace=False):
        """Remove size-1 axes; ``inplace`` gives a view sharing memory."""
        return self._shape_op('squeeze', inplace, axis=axis)

    def tostype(self, stype):
        """This array as ``stype``: itself for 'default'; a sparse array (ndarray/sparse.py:
        values stored dense, the structure worked out from them) for 'row_sparse'/'csr'."""
        if stype == 'default':
            return self
        return _SPARSE['tostype'](self, stype)

    # ----------------------------------------------------------------- indexing
    @staticmethod
    def _basic_indexing_slice_is_contiguous(slc_key, shape):
        """Whether basic indexing with ``slc_key`` (one ``slice`` per axis of ``shape``)
        gives a contiguous array, as MXNet 1.9.1 decides it: from the last axis to the
        first, once an axis takes a proper subset, every axis before it takes at most one
        element; a strided or reversed slice of several elements is never contiguous."""
        if len(slc_key) != len(shape):
            raise ValueError('_basic_indexing_slice_is_contiguous: %d slices for a shape '
                             'of %d axes' % (len(slc_key), len(shape)))
        lengths = [len(range(*slc.indices(n))) for slc, n in zip(slc_key, shape)]
        if int(np.prod(lengths)) in (0, 1):
            return True
        is_subset = False
        for slc, n, num in zip(reversed(slc_key), reversed(shape), reversed(lengths)):
            step = slc.indices(n)[2]
            if num == 0:
                return True
            if num > 1 and step != 1:
                return False
            if is_subset:
                if num > 1:
                    return False
            elif num < n:
                is_subset = True
        return True

    def __getitem__(self, key):
        """As MXNet: a contiguous basic slice is a view that writes through; any other
        result is a new array; an integer per axis gives shape (1,), not a scalar."""
        key = _unwrap(key)
        with self._ctx.device_scope():       # advanced indexing runs a kernel
            r = self._data[key]
            if r.ndim == 0:
                key = _one_element(key)
                r = self._data[key]
            elif r.base is not None and not r.flags.c_contiguous:
                r = r.copy()
            res = NDArray(r, self._ctx)
        if _AG.recording and tape.needs_grad(self._ag):
            _record_getitem(self, key, res)
        return res

    def _wrote(self):
        """Called before a write into this array: counts it, and refuses it while
        recording where the array is part of the recorded graph (as MXNet, whose
        gradient would be undefined)."""
        if self._ag is not None and _AG.recording:
            raise ArgumentError(
                _INPLACE_REFUSED + ': cannot write into an array of the computational graph '
                '(shape %s) while recording: in-place operations (+=, x[:] = ..., out=x) inside '
                '`autograd.record()` would make its gradient undefined; write into a copy, '
                'or outside the recorded section' % (self.shape,))
        self._ver += 1

    def __setitem__(self, key, value):
        if _AG.recording:
            _check_recorded_write(self, key, value)
        self._wrote()
        key = _unwrap(key)
        if _is_element(key, self.ndim):
            key = _one_element(key)        # a (1,) target takes a size-1 array too
        if isinstance(value, NDArray):
            value = _to_xp(value._data, self._ctx)
        elif isinstance(value, numbers.Integral) and self._data.dtype.kind in 'iu':
            value = _wrap_int(value, self._data.dtype)
        elif isinstance(value, (list, tuple, np.ndarray, np.generic)):
            value = _to_xp(np.asarray(value), self._ctx)
        elif value is None:
            value = np.nan                    # as MXNet (np.asarray(None, float) is NaN)
        elif not isinstance(value, numbers.Real) and not hasattr(value, '__array__'):
            raise ArgumentTypeError('NDArray does not support assignment with non-array-like '
                                    'object %s of type %s' % (value, type(value)))
        with self._ctx.device_scope():
            self._data[key] = value

    # ----------------------------------------------------------------- arithmetic
    def _operand(self, other):
        """``other`` as MXNet's NDArray operators take it: a number or an NDArray (a NumPy
        array or a list becomes an NDArray of this dtype); anything else is refused."""
        if isinstance(other, NDArray) or (isinstance(other, numbers.Number)
                                          and not isinstance(other, bool)):
            return other
        if isinstance(other, (np.ndarray, list, tuple)):
            return array(other, self._ctx, self.dtype)
        method = sys._getframe(1).f_code.co_name          # __add__, __rsub__, ...
        sign = _OPERATOR_SIGNS.get(method.strip('_').lstrip('ri'), method)
        left, right = 'NDArray', type(other).__name__
        if method.startswith('__r') and method.strip('_').lstrip('ri') in _OPERATOR_SIGNS:
            left, right = right, left
        raise ArgumentTypeError(
            'unsupported operand types for %s: %s and %s (an NDArray operator takes numbers, '
            'NumPy arrays and NDArrays%s)' % (sign, left, right, '; Symbols combine with '
                                              'Symbols only' if _is_symbol(other) else ''))

    # Through the module's functions (add, subtract, ...), as MXNet's NDArray operators: a
    # number goes to the scalar operator, an NDArray to the broadcasting one (whose type
    # inference refuses mixed dtypes, as MXNet does).
    def _scalar_op(self, s, ufunc, reverse=False):
        """``self <ufunc> s`` (``s <ufunc> self`` when ``reverse``) for a float32/float64
        NumPy array and a Python int or float, as the scalar operator computes it (in the
        array's dtype), without its dispatch: an optimizer loop's ``lr * g``. None for
        anything else (the operator path)."""
        d = self._data
        if self._ag is not None and _AG.recording or _prof.imperative:
            # through the operator, which the tape records (and the profiler names)
            return None
        if (s.__class__ is not float and s.__class__ is not int) \
                or d.__class__ is not np.ndarray or d.dtype not in _SCALAR_FAST_DTYPES:
            return None
        s = float(s)
        r = ufunc(s, d) if reverse else ufunc(d, s)
        return NDArray(r.astype(d.dtype, copy=False), self._ctx)

    def __add__(self, o):
        r = self._scalar_op(o, np.add)
        return add(self, self._operand(o)) if r is None else r

    def __radd__(self, o):      # its own name, so that a refusal shows the operands' order
        r = self._scalar_op(o, np.add)
        return add(self, self._operand(o)) if r is None else r

    def __sub__(self, o):
        r = self._scalar_op(o, np.subtract)
        return subtract(self, self._operand(o)) if r is None else r

    def __rsub__(self, o):
        r = self._scalar_op(o, np.subtract, True)
        return subtract(self._operand(o), self) if r is None else r

    def __mul__(self, o):
        r = self._scalar_op(o, np.multiply)
        return multiply(self, self._operand(o)) if r is None else r

    def __rmul__(self, o):
        r = self._scalar_op(o, np.multiply)
        return multiply(self, self._operand(o)) if r is None else r

    def __truediv__(self, o):
        r = self._scalar_op(o, np.true_divide)
        return divide(self, self._operand(o)) if r is None else r

    def __rtruediv__(self, o):
        r = self._scalar_op(o, np.true_divide, True)
        return divide(self._operand(o), self) if r is None else r

    def __mod__(self, o):
        return modulo(self, self._operand(o))

    def __rmod__(self, o):
        return modulo(self._operand(o), self)

    def __pow__(self, o):
        return power(self, self._operand(o))

    def __rpow__(self, o):
        return power(self._operand(o), self)

    def __neg__(self):
        if self._ag is not None and _AG.recording or _prof.imperative:
            return invoke('_mul_scalar', (self,), {'scalar': -1.0})
        with self._ctx.device_scope():
            return NDArray(-self._data, self._ctx)

    def __abs__(self):
        if self._ag is not None and _AG.recording or _prof.imperative:
            return invoke('abs', (self,), {})
        with self._ctx.device_scope():
            return NDArray(abs(self._data), self._ctx)

    def __eq__(self, o):
        return equal(self, self._operand(o))

    def __ne__(self, o):
        return not_equal(self, self._operand(o))

    def __gt__(self, o):
        return greater(self, self._operand(o))

    def __ge__(self, o):
        return greater_equal(self, self._operand(o))

    def __lt__(self, o):
        return lesser(self, self._operand(o))

    def __le__(self, o):
        return lesser_equal(self, self._operand(o))

    __hash__ = object.__hash__

    def _inplace(self, o, fn):
        """``self <fn>= o``: the result written into this very array (same object, same
        dtype), as MXNet's ``out=self``; a result of another shape is refused."""
        ufunc = _INPLACE_UFUNCS.get(fn)
        if _AG.recording and (self._ag is not None or getattr(o, '_ag', None) is not None):
            ufunc = None                     # through the operator, which the tape records
        if ufunc is not None and isinstance(o, NDArray) and o._ctx == self._ctx \
                and not self._ctx.is_gpu and isinstance(self._data, np.ndarray) \
                and isinstance(o._data, np.ndarray) and o._data.shape == self._data.shape \
                and o._data.dtype == self._data.dtype \
                and self._data.dtype in (np.float32, np.float64):
            # the same-shape float case straight into this array: what the elementwise
            # operator computes, without its new array and the copy back (an optimizer
            # loop's ``w -= lr * g``)
            self._wrote()
            ufunc(self._data, o._data, out=self._data)
            return self
        r = fn(self, self._operand(o))
        if r.shape != self.shape:
            raise ShapeError('in-place %s: the result has shape %s, the array %s'
                             % (fn.__name__, r.shape, self.shape))
        if r._ag is not None and self._ag is None and r._data.dtype == self._data.dtype:
            # recorded (self is outside the graph, else _wrote refuses): this array becomes
            # the result, without writing over the memory the tape may read for backward
            self._data, self._ag = r._data, r._ag
            return self
        self._wrote()
        with self._ctx.device_scope():
            self._data[...] = r._data
        return self

    def __iadd__(self, o):
        return self._inplace(o, add)

    def __isub__(self, o):
        return self._inplace(o, subtract)

    def __imul__(self, o):
        return self._inplace(o, multiply)

    def __itruediv__(self, o):
        return self._inplace(o, divide)

    def __imod__(self, o):
        return self._inplace(o, modulo)

    def __bool__(self):
        if self.size == 0:                  # MXNet: an empty array is False
            return False
        if self.size != 1:
            raise ArgumentError('The truth value of an NDArray with multiple elements is '
                                'ambiguous.')
        return bool(self.asscalar())

    def split_v2(self, *args, **kwargs):
        """Fluent :func:`split_v2` with this array as ``ary``."""
        return split_v2(self, *args, **kwargs)

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


#: the start of MXNet's message for a write autograd cannot follow (its tests look for it)
_INPLACE_REFUSED = ('Inplace operations (+=, -=, x[:]=, etc) are not supported when '
                    'recording with autograd')


def _check_recorded_write(dst, key, value):
    """As MXNet's autograd under ``record()``: no write of a value autograd follows into
    part of an array (the tape cannot follow it); ``x[:] = v`` / ``x[...] = v`` /
    ``x[None] = v`` of a whole array is a copy and allowed. (A write into an array
    autograd follows is refused by :meth:`NDArray._wrote`.)"""
    whole = key is None or key is Ellipsis or (isinstance(key, slice) and key == slice(None))
    if isinstance(value, NDArray) and value._ag is not None and not whole:
        raise ArgumentError('%s: x[%r] = v writes a value of the computational graph into '
                            'part of an array (an in-place write autograd cannot follow); '
                            'build the result out of place (e.g. with mx.nd.concat or where)'
                            % (_INPLACE_REFUSED, key))


def _is_element(key, ndim):
    """Whether ``key`` picks one element: a plain integer for every axis."""
    k = key if isinstance(key, tuple) else (key,)
    return len(k) == ndim and ndim > 0 and all(
        isinstance(i, (numbers.Integral, np.integer)) and not isinstance(i, (bool, np.bool_))
        for i in k)


def _one_element(key):
    """``key`` (an integer per axis) selecting a (1,) view rather than a scalar."""
    return (key if isinstance(key, tuple) else (key,)) + (None,)


def _wrap_int(value, dtype):
    """A Python int as the integer ``dtype`` holds it, wrapping as C's cast does (MXNet);
    NumPy 2 refuses out-of-range Python ints."""
    return np.array(value).astype(np.int64).astype(dtype)[()] \
        if -2 ** 63 <= value < 2 ** 64 else np.array(float(value)).astype(dtype)[()]


def _index(k):
    """An NDArray used as an index: its data, float indices truncated to integers (MXNet
    indexes with float32 NDArrays, its default dtype)."""
    if isinstance(k, list) and k and all(isinstance(v, bool) for v in k):
        return [int(v) for v in k]      # MXNet takes a list of bools as integers 0/1
    if isinstance(k, (str, bytes, float, np.floating)):
        raise ArgumentError('NDArray does not support slicing with key %s of type %s.'
                            % (k, type(k)))
    if isinstance(k, (list, np.ndarray)):
        a = np.asarray(k)
        # MXNet indexes with the integer parts of float (and bool) arrays, as its NDArrays
        return a.astype(np.int64) if a.dtype.kind in 'fb' else k
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
    dtype = np.float32 if dtype is None else opdef.as_dtype(dtype)
    return _alloc(ctx, lambda xp: xp.array(src, dtype=dtype))


def _filled(func, fill, shape, ctx, dtype, kwargs):
    """``mx.nd.zeros``/``ones``: MXNet's ``_zeros``/``_ones`` operators, which take only
    ``out``, ``name`` and ``stype`` besides, and refuse a shape with a dimension that is not
    positive (0 is an unknown size in MXNet 1.x shapes) or no dimension at all."""
    # as MXNet's generated functions: __dunder__ keywords are attributes, dropped here
    unknown = sorted(k for k in set(kwargs) - {'out', 'name', 'stype'}
                     if not (len(k) > 4 and k.startswith('__') and k.endswith('__')))
    if unknown:
        raise UnknownNameError('%s: unknown argument %s; it takes shape, ctx, dtype, stype, '
                               'out and name' % (func, ', '.join(repr(k) for k in unknown)))
    if kwargs.get('stype') not in (None, 'default'):
        if func != 'zeros':
            raise NotSupportedError('%s: sparse storage types are not supported' % func)
        kw = {k: v for k, v in kwargs.items() if k != 'stype'}
        return _SPARSE['zeros'](kwargs['stype'], shape, ctx, dtype, **kw)
    dims = (shape,) if isinstance(shape, numbers.Integral) else tuple(shape)
    if is_np_shape():
        # NumPy-shape semantics: () is a scalar and 0 a zero size, as in NumPy
        if not all(isinstance(d, numbers.Integral) and d >= 0 for d in dims):
            raise ShapeError('%s: shape %s must have non-negative int dimensions'
                             % (func, (shape,)[0]))
    elif not dims or not all(isinstance(d, numbers.Integral) and d > 0 for d in dims):
        raise ShapeError('%s: shape %s must have one or more positive int dimensions (MXNet '
                         '1.9.1 reads 0 as an unknown size; mx.np_shape() makes it a zero size)'
                         % (func, (shape,)[0]))
    dtype = np.float32 if dtype is None else opdef.as_dtype(dtype)
    t0 = _prof.now() if _prof.imperative else None
    arr = _alloc(ctx, lambda xp: xp.full(dims, fill, dtype=dtype))
    if t0 is not None:      # (mx.profiler: MXNet's _zeros / _ones operators)
        prefix, cat = _prof.scope()
        _prof.record('%s_%s' % (prefix, func), cat, t0, _prof.now())
    out = kwargs.get('out')
    if out is not None:
        out[:] = arr
        return out
    return arr


def zeros(shape, ctx=None, dtype=None, **kwargs):
    """An array of zeros (the ``_zeros`` operator)."""
    return _filled('zeros', 0, shape, ctx, dtype, kwargs)


def empty(shape, ctx=None, dtype=None, stype=None):
    """Like :func:`zeros` (a zero size too, as MXNet's): symgraph never hands out
    uninitialised memory. A sparse ``stype`` gives an empty sparse array."""
    if stype not in (None, 'default'):
        return _SPARSE['zeros'](stype, shape, ctx, dtype)
    dtype = np.float32 if dtype is None else opdef.as_dtype(dtype)
    return _alloc(ctx, lambda xp: xp.zeros(shape, dtype=dtype))


def ones(shape, ctx=None, dtype=None, **kwargs):
    """An array of ones (the ``_ones`` operator)."""
    return _filled('ones', 1, shape, ctx, dtype, kwargs)


def full(shape, val, ctx=None, dtype=None, out=None):
    dtype = np.float32 if dtype is None else opdef.as_dtype(dtype)
    if isinstance(val, numbers.Integral) and np.dtype(dtype).kind in 'iu':
        val = _wrap_int(val, np.dtype(dtype))      # -1 in uint8 is 255, as MXNet
    arr = _alloc(ctx, lambda xp: xp.full(shape, val, dtype=dtype))
    if out is not None:
        out[:] = arr
        return out
    return arr


def arange(start, stop=None, step=1.0, repeat=1, infer_range=None, ctx=None,
           dtype=None):
    """``start + i * step`` for i = 0, 1, ... below ``stop`` (the ``_arange`` operator)."""
    op = opdef.get_op('_arange')(start=start, stop=stop, step=step, repeat=repeat,
                                 dtype=np.float32 if dtype is None else dtype)
    return _alloc(ctx, lambda xp: op.forward(xp, [], [], False)[0])


def eye(N, M=0, k=0, ctx=None, dtype=None, **kwargs):
    """N x M (M=0: N) with ones on diagonal k, as ``mx.nd.eye``."""
    dtype = np.float32 if dtype is None else dtype
    return _alloc(ctx, lambda xp: xp.eye(N, M or N, k=k, dtype=dtype))


def linspace(start, stop, num, endpoint=True, ctx=None, dtype=None):
    """``num`` evenly spaced values from start to stop, as ``mx.nd.linspace``."""
    dtype = np.float32 if dtype is None else dtype
    values = np.linspace(start, stop, num, endpoint=endpoint).astype(dtype)
    return _alloc(ctx, lambda xp: xp.asarray(values))


def split_v2(ary, indices_or_sections, axis=0, squeeze_axis=False):
    """Split ``ary`` along ``axis`` into equal sections or at indices (``_split_v2``).

    As MXNet's ``mx.nd.split_v2``: a number of sections becomes the indices of the pieces
    (so that the axis must divide evenly); a tuple gets a leading 0.
    """
    axis_size = ary.shape[axis]
    if isinstance(indices_or_sections, int):
        sections = indices_or_sections
        if axis_size % sections:
            raise ValueError('array split does not result in an equal division')
        section_size = int(axis_size / sections)
        indices = [i * section_size for i in range(sections)]
    elif isinstance(indices_or_sections, tuple):
        indices = [0] + list(indices_or_sections)
    else:
        raise ValueError('indices_or_sections must either int or tuple of ints')
    return invoke('_split_v2', (ary,), dict(indices=indices, axis=axis,
                                           squeeze_axis=squeeze_axis))


def histogram(a, bins=10, range=None):
    """Counts of ``a`` in bins and the bin edges (``_histogram``), as ``mx.nd.histogram``:
    ``bins`` an NDArray of edges, or a number of equal bins over ``range`` (None: NumPy's
    histogram of the values, with MXNet's warning)."""
    if isinstance(bins, NDArray):
        return invoke('_histogram', (a, bins), {})
    if isinstance(bins, int):
        if range is None:
            warnings.warn("range is not specified, using numpy's result to ensure "
                          "consistency with numpy")
            res, bin_bounds = np.histogram(a.asnumpy(), bins=bins)
            return array(res), array(bin_bounds)
        return invoke('_histogram', (a,), dict(bin_cnt=bins, range=range))
    raise ValueError('bins argument should be either an integer or an NDArray')


def zeros_like(a, out=None, name=None, **kwargs):
    """Zeros of ``a``'s shape, dtype and context (the ``zeros_like`` operator)."""
    if out is not None or kwargs or (_AG.recording and a._ag is not None):
        return invoke('zeros_like', (a,), dict(kwargs, out=out) if out is not None else kwargs)
    return _alloc(a._ctx, lambda xp: xp.zeros_like(a._data))


def ones_like(a, out=None, name=None, **kwargs):
    """Ones of ``a``'s shape, dtype and context (the ``ones_like`` operator)."""
    if out is not None or kwargs or (_AG.recording and a._ag is not None):
        return invoke('ones_like', (a,), dict(kwargs, out=out) if out is not None else kwargs)
    return _alloc(a._ctx, lambda xp: xp.ones_like(a._data))


def concat(*arrays, dim=1, num_args=None, out=None, name=None):
    '''Join NDArrays along ``dim`` (the ``Concat`` operator) on the first one's context
    (others are copied there).'''
    if not arrays:
        raise ArgumentError('concat needs at least one NDArray')
    if num_args is not None and num_args != len(arrays):
        raise ArgumentError('concat: num_args=%d but %d arrays were given'
                            % (num_args, len(arrays)))
    return invoke('Concat', arrays, {'dim': dim, 'out': out})


def waitall():
    """All computation is synchronous on the CPU; on GPUs, wait for every device.

    Without CuPy imported no GPU array exists, so there is nothing to wait for: CuPy is not
    imported here (that took 13 MiB and, where its import fails, a new attempt at every
    call of a CPU training loop)."""
    cupy = sys.modules.get('cupy')
    if cupy is None:
        return
    from ..context import num_gpus
    for i in range(num_gpus()):
        with cupy.cuda.Device(i):
            cupy.cuda.Device(i).synchronize()


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
#: in-place arithmetic that NDArray._inplace runs as the NumPy ufunc for same-shape float
#: operands (the broadcasting operators compute exactly that there)
_INPLACE_UFUNCS = {add: np.add, subtract: np.subtract, multiply: np.multiply}
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
    """``tensor`` with axes ``source`` (an int or a sequence) moved to ``destination``
    (a transpose), as MXNet's and NumPy's ``moveaxis``.

    Raises
    ------
    ValueError
        An axis out of range, or ``source`` and ``destination`` of different lengths.
    """
    def axes_of(value, what):
        seq = [value] if isinstance(value, numbers.Integral) else list(value)
        out = []
        for a in seq:
            if not -tensor.ndim <= int(a) < tensor.ndim:
                raise ArgumentError('moveaxis: %s axis %d is out of range for a %d-D array'
                                    % (what, a, tensor.ndim))
            out.append(int(a) % tensor.ndim)
        if len(set(out)) != len(out):
            raise ArgumentError('moveaxis: repeated %s axis in %r' % (what, value))
        return out
    source, destination = axes_of(source, 'source'), axes_of(destination, 'destination')
    if len(source) != len(destination):
        raise ArgumentError('`source` and `destination` arguments must have the same number '
                            'of elements')
    order = [n for n in range(tensor.ndim) if n not in source]
    for dest, src in sorted(zip(destination, source)):
        order.insert(dest, src)
    return invoke('transpose', (tensor,), {'axes': tuple(order)})


def concatenate(arrays, axis=0, always_copy=True):
    """Join a list of NDArrays along ``axis`` (MXNet's older name of :func:`concat`); with
    ``always_copy=False`` a single array is returned as it is.

    Raises
    ------
    ValueError
        An empty list, or shapes that differ off ``axis``.
    """
    if not isinstance(arrays, (list, tuple)) or not arrays:
        raise ArgumentError('concatenate: expected a non-empty list of NDArrays, got %r'
                            % (arrays,))
    if not always_copy and len(arrays) == 1:
        return arrays[0]
    return invoke('Concat', tuple(arrays), {'dim': axis, 'num_args': len(arrays)})


def from_numpy(ndarray, zero_copy=True):
    """An NDArray on the CPU holding ``ndarray`` (sharing its memory with ``zero_copy``,
    which needs a C-contiguous array, as MXNet)."""
    if not isinstance(ndarray, np.ndarray):
        raise ArgumentTypeError('from_numpy takes a numpy.ndarray, got %s' % type(ndarray).__name__)
    if zero_copy:
        if not ndarray.flags.c_contiguous:
            raise ArgumentError('from_numpy with zero_copy=True needs a C-contiguous array')
        # as MXNet: the NDArray now owns the memory, so the NumPy array turns read-only
        # (a write through it raises ValueError) while the NDArray writes through a view
        view = ndarray.view() if ndarray.flags.writeable else _writable_alias(ndarray)
        ndarray.flags.writeable = False
        return NDArray(view, cpu())
    return NDArray(ndarray.copy(), cpu())


class _MemoryOf:
    """Hands NumPy the memory of ``a`` as writable (``__array_interface__``) and keeps
    ``a`` alive for as long as an array made from it lives."""

    def __init__(self, a):
        self.base = a
        self.__array_interface__ = dict(a.__array_interface__, data=(a.ctypes.data, False))


def _writable_alias(a):
    """A writable array on the memory of the read-only ``a`` where that memory is NumPy's
    own (an array an earlier ``from_numpy`` turned read-only); else a read-only view (the
    memory of bytes or a read-only mapping must not be written)."""
    root = a
    while isinstance(root.base, np.ndarray):
        root = root.base
    if root.base is None and root.flags.owndata:
        return np.asarray(_MemoryOf(a))
    return a.view()


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
                raise ArgumentTypeError('save only accepts dict str->NDArray or list of NDArray')
            arrays[k] = _saved(v)
    elif isinstance(data, (list, tuple)):
        if any(not isinstance(v, NDArray) for v in data):
            raise ArgumentTypeError('save only accepts dict str->NDArray or list of NDArray')
        arrays = [_saved(v) for v in data]
    else:
        raise ArgumentTypeError('save only accepts dict str->NDArray or list of NDArray')
    # under np-shape semantics MXNet writes V3 records, which load only under them
    save_arrays(fname, arrays, np_shape=bool(is_np_shape()))


def _saved(v):
    """What serialization writes for an NDArray: its NumPy values, or for a sparse one
    its StoredSparse record (storage type, values, structure)."""
    return v.asnumpy() if v.stype == 'default' else _SPARSE['stored'](v)


def load(fname, ctx=None, bfloat16='bfloat16'):
    """Load a ``.params`` file written by MXNet or :func:`save`: a list or a dict.

    ``bfloat16``: what to do with bfloat16 arrays (MXNet's type flag 12): load them as
    bfloat16 arrays (``'bfloat16'``, ``ml_dtypes.bfloat16``), refuse them (``'error'``),
    widen them exactly (``'float32'``) or give the uint16 bit patterns (``'raw'``).
    """
    from .serialization import load_arrays
    return _wrap_loaded(load_arrays(fname, bfloat16=bfloat16,
                                    np_shape=bool(is_np_shape())), ctx)


def load_frombuffer(buf, ctx=None, bfloat16='bfloat16'):
    """:func:`load` from the bytes of such a file."""
    from .serialization import loads_arrays
    return _wrap_loaded(loads_arrays(buf, bfloat16=bfloat16,
                                     np_shape=bool(is_np_shape())), ctx)


def _wrap_loaded(data, ctx):
    c = cpu() if ctx is None else ctx

    def wrap(v):
        stype = getattr(v, 'stype', 'default')      # serialization.StoredSparse
        if stype != 'default':
            return _SPARSE['wrap_stored'](stype, np.array(v), c, v.structure)
        return array(v, c, dtype=v.dtype)
    if isinstance(data, dict):
        return {k: wrap(v) for k, v in data.items()}
    return [wrap(v) for v in data]


#: sparse storage: ndarray/sparse.py installs its functions here when it is imported (this
#: module cannot import it: sparse.py imports this one); mx.nd's package imports both
_SPARSE = {}
#: operator functions of mx.nd that sparse inputs change (cast_storage, the optimizer
#: updates' lazy row_sparse updates): name -> function, installed by ndarray/sparse.py
_SPARSE_FUNCTIONS = {}


def install_sparse(functions=(), **hooks):
    """Called by ndarray/sparse.py: the hooks tostype, zeros, make, wrap_stored, stored
    (an array's sparse record for save) and the operator ``functions`` (a dict)."""
    _SPARSE.update(hooks)
    _SPARSE_FUNCTIONS.update(functions)


# ---------------------------------------------------------------------- operators
#: NDArray's arithmetic methods (without __, r, i) -> the Python operator, for messages
_OPERATOR_SIGNS = {'add': '+', 'sub': '-', 'mul': '*', 'truediv': '/', 'div': '/',
                   'floordiv': '//', 'mod': '%', 'pow': '**', 'eq': '==', 'ne': '!=',
                   'lt': '<', 'le': '<=', 'gt': '>', 'ge': '>='}


def _is_symbol(v):
    """A Symbol (recognised by its methods: mx.nd does not import mx.sym)."""
    return hasattr(type(v), 'list_arguments') and hasattr(type(v), 'tojson')


def invoke(func_name, args, kwargs):
    """Run an operator imperatively on NDArrays (the body of ``mx.nd.<op>``). An error the
    call causes names, besides the operator and the argument, the user's file:line."""
    if _prof.imperative:        # one flag test: mx.profiler times the call
        return _invoke_profiled(func_name, args, kwargs)
    try:
        return _invoke(func_name, args, kwargs)
    except SymgraphError as e:
        _name_the_call(e, func_name)
        raise


def _name_the_call(e, func_name):
    """Complete the message of ``e`` (the same exception: class, attributes, traceback)
    with the user's file:line; an inner invoke (control flow) has already named it."""
    if (type(e).__str__ is BaseException.__str__ or isinstance(e, UnknownNameError)) \
            and len(e.args) == 1 and isinstance(e.args[0], str) \
            and ' called at ' not in e.args[0]:
        e.args = ('%s (mx.nd.%s called at %s)' % (e.args[0], func_name, user_location()),)


def _invoke_profiled(func_name, args, kwargs):
    """:func:`invoke` while mx.profiler records imperative calls: the call is an event
    named as MXNet names it (the operator's name; ``MyOp::<name>`` inside a custom
    operator), and with API profiling an ``MXImperativeInvokeEx`` event."""
    t0 = _prof.now()
    try:
        return _invoke(func_name, args, kwargs)
    except SymgraphError as e:
        _name_the_call(e, func_name)
        raise
    finally:
        t1 = _prof.now()
        try:
            name = opdef.get_op(func_name).name
        except KeyError:
            name = func_name
        prefix, cat = _prof.scope()
        _prof.record(prefix + name, cat, t0, t1)
        if _prof.api:
            _prof.record('MXImperativeInvokeEx', 'MXNET_C_API', t0, t1)


#: imperative calls seen before: (operator name, parameters, inputs' shapes, dtypes and
#: contexts) -> (operator instance, number of arguments, visible outputs). A call that
#: matches one skips parsing its parameters and inferring shapes and types (what it
#: checked is what the key holds): MXNet's optimizer loops call a few small operators per
#: parameter and step, and those checks were most of their 35 us each.
_SEEN = {}
_SEEN_MAX = 1024
#: the dtypes of :meth:`NDArray._scalar_op`'s shortcut
_SCALAR_FAST_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _param_key(v):
    """A parameter's value as a key that tells -0.0 from 0.0 (equal, with one hash)."""
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, (tuple, list)):
        return (type(v),) + tuple(_param_key(x) for x in v)
    return v


def _seen_key(func_name, args, kwargs):
    """The :data:`_SEEN` key of a call with NDArray inputs only and plain hashable
    parameters, else None."""
    try:
        if kwargs:
            if 'out' in kwargs or any(isinstance(v, NDArray) for v in kwargs.values()):
                return None
            params = tuple(sorted((k, type(v), _param_key(v)) for k, v in kwargs.items()))
        else:
            params = ()
        ins = tuple((a._data.shape, a._data.dtype, a._ctx) for a in args)
        key = (func_name, params, ins)
        hash(key)
    except (AttributeError, TypeError):
        return None
    return key


def _invoke(func_name, args, kwargs):
    key = _seen_key(func_name, args, kwargs) if args and all(
        isinstance(a, NDArray) for a in args) else None
    seen = _SEEN.get(key) if key is not None else None
    if seen is not None:
        op, n_args, n_out = seen[:3]
        ctx = args[0]._ctx
        with ctx.device_scope():
            datas = [_to_xp(v._data, ctx) for v in args]
            step = seen[4]
            if step is None or step.state is None:
                outs = op.forward(ctx.xp, datas[:n_args], datas[n_args:], _AG.training)
            else:       # (a shareable Step's state: BatchNorm's mask, pooling's workspace)
                outs = step.forward(datas, _AG.training)
        res = [NDArray(_own(o, datas, ctx), ctx) for o in outs[:n_out]]
        if _AG.recording:
            _record(op, None, args, datas, outs, res, ctx, seen)
        return res[0] if len(res) == 1 else res
    cls = opdef.get_op(func_name)
    # a NumPy array where an input goes is an input (refused below with its name), not
    # the first parameter
    # after the parameters, out and name bind by position as in MXNet's generated
    # functions (mx.nd.clip(x, 0, 1, y) writes into y)
    args, kwargs = opdef.split_positional(
        cls, args, lambda a: isinstance(a, (NDArray, np.ndarray)) or _is_symbol(a), kwargs,
        trailing=('out', 'name'))
    kwargs = dict(kwargs)
    out = kwargs.pop('out', None)
    kwargs.pop('name', None)
    # as MXNet: __key__ keyword arguments are attributes, which an imperative call drops
    for k in [k for k in kwargs if len(k) > 4 and k.startswith('__') and k.endswith('__')
              and k not in cls._params]:
        del kwargs[k]
    # a Symbol is an input of the wrong kind: refused below, naming the input
    nd_kwargs = {k: v for k, v in kwargs.items()
                 if isinstance(v, NDArray) or (_is_symbol(v) and k not in cls._params)}
    # an explicit None is kept for a parameter (axis=None flattens, end=None runs to the
    # end), as mx.sym does; for an input it means "not given"
    # a NumPy array as a parameter (broadcast_to(shape=np.array([2, 3]))) is its values, as
    # MXNet's generated functions read str() of it
    params = {k: v.tolist() if isinstance(v, np.ndarray) else v for k, v in kwargs.items()
              if k not in nd_kwargs and (v is not None or k in cls._params or cls.free_params)}
    if 'num_args' in cls._params and 'num_args' not in params:
        params['num_args'] = len(args) + len(nd_kwargs)
    op = cls(**params)
    names = op.list_arguments() + op.list_auxiliary_states()
    # a None by position is an input not given (split_positional): past the inputs this
    # operator takes (FullyConnected's bias with no_bias=True) it is simply left out
    while len(args) > len(names) and args[-1] is None:
        args = args[:-1]
    if len(args) > len(names):
        raise ArgumentError('operator %s: %d inputs given but it takes %d: %s'
                            % (cls.name, len(args), len(names), names))
    inputs = list(args) + [None] * (len(names) - len(args))
    for k, v in nd_kwargs.items():
        if k not in names:
            raise UnknownNameError('operator %s: unknown input %r; inputs are %s'
                                   % (cls.name, k, names))
        if names.index(k) < len(args):
            raise ArgumentError('operator %s: input %r given both by position and by keyword'
                                % (cls.name, k))
        inputs[names.index(k)] = v
    for n, v in zip(names, inputs):
        if v is not None and not isinstance(v, NDArray):
            raise ArgumentTypeError('operator %s: input %r must be an NDArray, got %s%s'
                                    % (cls.name, n, type(v).__name__,
                                       ' (Symbols go to mx.sym.%s)' % cls.name
                                       if _is_symbol(v) else ''))
    missing = [n for n, v in zip(names, inputs) if v is None]
    if missing:
        raise ArgumentError('operator %s: missing inputs %s' % (cls.name, missing))
    ctx = inputs[0]._ctx if inputs else current_context()
    n_args = len(op.list_arguments())
    if out is not None and inputs:
        # update operators whose kernels MXNet runs in place: out= the weight itself
        first = out[0] if isinstance(out, (list, tuple)) else out
        if isinstance(first, NDArray) and _roots(first._data) is _roots(inputs[0]._data):
            op = _instead(op, 'out_is_input')
    with ctx.device_scope():
        xp = ctx.xp
        datas = [_to_xp(v._data, ctx) for v in inputs]
        op.infer_shape([d.shape for d in datas])
        try:
            op.infer_type([d.dtype for d in datas])
        except opdef.TypeInferenceError as e:
            # MXNet refuses mixed dtypes too (float32 + float64, int8 + int32, ...)
            raise TypeInferenceError('operator %s: %s (inputs: %s)' % (cls.name, e, ', '.join(
                '%s=%s' % (n, d.dtype) for n, d in zip(names, datas)))) from None
        in_dtypes = [np.dtype(d.dtype) for d in datas]
        if in_dtypes and in_dtypes[0].kind == 'V':      # bfloat16 kernels' variants
            op = _instead(op, 'bfloat16', in_dtypes)
        step = opdef.bind_step(op, ctx, [d.shape for d in datas], in_dtypes)
        outs = step.forward(datas, _AG.training)
    res = [NDArray(_own(o, datas, ctx), ctx) for o in outs[:op.num_visible_outputs()]]
    if _AG.recording:
        _record(op, step, inputs, datas, outs, res, ctx)
    if key is not None and step.shareable and out is None and len(args) == len(names) \
            and not op.free_params:
        # the same call again skips everything above but forward (see _SEEN)
        if len(_SEEN) >= _SEEN_MAX:
            _SEEN.clear()
        # + the tape's recipe and Step for these calls (_record; a Step with a state
        # serves them all from here: Step.shareable)
        _SEEN[key] = [op, n_args, op.num_visible_outputs(), None,
                      None if step.state is None else step]
    if out is not None:
        outs_given = out if isinstance(out, (list, tuple)) else [out]
        for k, (dst, r) in enumerate(zip(outs_given, res)):
            # MXNet refuses an out= of another shape or dtype (no broadcast, no cast)
            if not isinstance(dst, NDArray) or dst.shape != r.shape or dst.dtype != r.dtype:
                raise ShapeError('operator %s: out=%s for output %d, which is %s %s'
                                 % (cls.name, '%s %s' % (dst.shape, np.dtype(dst.dtype).name)
                                    if isinstance(dst, NDArray) else type(dst).__name__, k,
                                    r.shape, np.dtype(r.dtype).name))
            dst[:] = r
            if r._ag is not None:       # recorded: the out= array stands for the result
                dst._ag = r._ag
        return out
    return res[0] if len(res) == 1 else res


def _record_getitem(src, key, res):
    """``src[key]`` on the tape: its gradient is the head gradient scattered (added,
    for repeated indices) into zeros of ``src``'s shape."""
    ctx, shape, dtype = src._ctx, src._data.shape, src._data.dtype
    xp = ctx.xp

    def run(og):
        g = xp.zeros(shape, dtype)
        if og[0] is not None:
            add_at = getattr(xp, 'add', None)
            try:
                add_at.at(g, key, og[0].reshape(g[key].shape))
            except (TypeError, AttributeError):
                g[key] += og[0].reshape(g[key].shape)
        return [g]
    node = tape.Node('__getitem__', [src._ag], [(res._data.shape, res._data.dtype)], run, (),
                     ctx, in_arrays=[src])
    res._ag = tape.Entry(node, 0)


def _recipe(op, n_outs):
    """What the tape keeps of a call of ``op`` (see :class:`tape.OpNode`); None where no
    gradient flows through the operator."""
    if op.no_grad:
        return None
    n_args = len(op.list_arguments())
    n_vis = op.num_visible_outputs()
    sel_in = tuple(needed(op.needs_inputs, range(n_args)))
    sel_out = tuple(sorted(set(needed(op.needs_outputs, range(n_outs)))
                           | set(range(n_vis, n_outs))))
    return n_args, n_vis, sel_in, sel_out, op.list_arguments(), op.is_loss


def _record(op, step, inputs, datas, outs, res, ctx, seen=None):
    """Put the call of ``op`` on the autograd tape, where one of ``inputs`` needs a
    gradient: its outputs ``res`` get entries of a node whose backward is the Step's.
    ``seen``: the call's :data:`_SEEN` row, which keeps the operator's recipe."""
    for a in inputs:
        e = a._ag
        if e is not None and (e.node is not None or e.req != 'null'):
            break
    else:
        return
    if seen is not None:
        recipe = seen[3]
        if recipe is None:
            recipe = seen[3] = _recipe(op, len(outs)) or False
            # the calls of one row are alike: they share one Step (shareable)
            if seen[4] is None:
                seen[4] = opdef.bind_step(op, ctx, [d.shape for d in datas],
                                          [d.dtype for d in datas])
        step = seen[4]
    else:
        recipe = _recipe(op, len(outs))
    if not recipe:
        return
    entries = [e if e is not None and (e.node is not None or e.req != 'null') else None
               for e in [a._ag for a in inputs]]
    node = tape.OpNode(op, step, entries, list(inputs), datas, outs, res, recipe, ctx)
    Entry = tape.Entry
    for k, r in enumerate(res):
        r._ag = Entry(node, k)


def _roots(a):
    """The array whose memory ``a`` views (``a`` itself when it owns it)."""
    while getattr(a, 'base', None) is not None:
        a = a.base
    return a


def _own(out, inputs, ctx):
    """``out``, copied when it views an input's memory: an operator may return a view
    (reverse, Flatten, slices), but an mx.nd result is a new array, as in MXNet. A NumPy
    scalar (a ufunc on a 0-d array) becomes a 0-d array."""
    if isinstance(out, np.generic):
        return np.asarray(out)
    root = _roots(out)
    if any(root is _roots(d) for d in inputs):
        with ctx.device_scope():
            return out.copy()
    return out


def _op_function(func_name, hint=None):
    sparse_fn = _SPARSE_FUNCTIONS.get(func_name)
    if sparse_fn is not None:      # sparse results or lazy row updates (ndarray/sparse*.py)
        return sparse_fn
    cls = opdef.get_op(func_name)

    def fn(*args, **kwargs):
        return invoke(func_name, args, kwargs)
    fn.__name__ = func_name
    fn.__doc__ = cls.__doc__
    return fn


def _adamw(func_name):
    """MXNet's Python ``contrib.adamw_update`` / ``mp_adamw_update``: ``rescale_grad`` may
    be a number (made an array on the weight's context) or an NDArray."""
    def fn(weight, grad, mean, var, *rest, rescale_grad=None, **kwargs):
        rest = list(rest)
        if func_name == '_mp_adamw_update' and rest and isinstance(rest[0], NDArray):
            kwargs['weight32'] = rest.pop(0)
        if rescale_grad is None and rest:
            rescale_grad = rest.pop(0)
        if rescale_grad is None:
            raise ParameterError('%s: rescale_grad is required' % func_name)
        if not isinstance(rescale_grad, NDArray):
            rescale_grad = array([float(rescale_grad)], weight._ctx, np.float32)
        return invoke(func_name, (weight, grad, mean, var) + tuple(rest),
                      dict(kwargs, rescale_grad=rescale_grad))
    fn.__name__ = func_name.lstrip('_')
    return fn


def _multi_update(func_name, roles):
    """MXNet's Python ``contrib.multi_adamw_update`` / ``multi_mp_adamw_update`` /
    ``multi_lamb_update`` / ``multi_mp_lamb_update``: lists of arrays per role, flattened
    per tensor into the operator's interleaved inputs."""
    adamw = 'adamw' in func_name

    def fn(weights, grads, mean, var, *rest, out=None, name=None, size=0, num_tensors=0,
           **kwargs):
        rest = list(rest)
        lists = [weights, grads, mean, var] + ([rest.pop(0)] if len(roles) == 5 else [])
        n = size or num_tensors or len(weights)
        if any(len(x) != len(weights) for x in lists):
            raise MXNetError('%s: the lists of %s differ in length (%s)'
                             % (func_name, ', '.join(roles), [len(x) for x in lists]))
        flat = [a for group in zip(*lists) for a in group]
        if adamw:
            names = ('rescale_grad', 'lrs', 'wds', 'etas')
            for k, v in zip(names, rest):
                kwargs[k] = v
            rescale = kwargs.pop('rescale_grad')
            if not isinstance(rescale, NDArray):
                rescale = array([float(rescale)], weights[0]._ctx, np.float32)
            flat.append(rescale)
            kwargs['num_weights'] = n
        else:
            for k, v in zip(('step_count', 'lrs', 'wds'), rest):
                kwargs[k] = v
            kwargs['learning_rates'] = kwargs.pop('lrs')
            kwargs['num_tensors'] = n
        return invoke(func_name, tuple(flat), dict(kwargs, out=out))
    fn.__name__ = func_name.lstrip('_')
    return fn


def _into(func_name):
    """MXNet's legacy NDArray functions ``_internal._copyto(x, out=y)`` /
    ``_internal._set_value(v, out=y)``: the operator's result (for ``_set_value`` of out's
    shape: the ``instead`` rule for ``'shapes'``) cast into ``out``'s dtype, as MXNet's
    ``CopyFromTo`` and ``SetValueOp`` write it; ``_copyto`` without ``out`` returns the copy."""
    def fn(*args, out=None, **kwargs):
        if out is not None and not isinstance(out, NDArray):
            raise ArgumentTypeError('%s: out must be an NDArray, got %s'
                                    % (func_name, type(out).__name__))
        if func_name == '_set_value':
            if out is None:
                raise ArgumentError('_set_value: out= is required (the array to fill)')
            if len(args) > 1:
                raise ArgumentError('_set_value takes one value, got %d' % len(args))
            kwargs.pop('name', None)
            if args:
                kwargs['src'] = args[0]
            op = _instead(opdef.get_op(func_name)(**kwargs), 'shapes', [], [out.shape])
            with out._ctx.device_scope():
                res = NDArray(op.forward(out._ctx.xp, [], [], False)[0], out._ctx)
        else:
            res = invoke(func_name, args, kwargs)
            if out is None:
                return res
            if out.shape != res.shape:
                raise ShapeError('%s: out=%s but the source is %s'
                                 % (func_name, out.shape, res.shape))
        out[:] = res
        return out
    fn.__name__ = func_name
    fn.__doc__ = 'MXNet\'s legacy NDArray function %s (writes into out=).' % func_name
    return fn


def onehot_encode(indices, out):
    """One-hot encoding of ``indices`` (N,) into ``out`` (N, K), float32 (MXNet's deprecated
    ``mx.nd.onehot_encode``, the ``_onehot_encode`` operator): returns ``out``."""
    return invoke('_onehot_encode', (indices, out), {'out': out})


#: mx.nd.random.uniform(...), mx.nd.contrib.box_nms, mx.nd.linalg.gemm2, ... (the table is
#: namespaces.NAMESPACES, shared with mx.sym)
random, contrib, linalg, _internal, image = make_namespaces(
    'nd', NDArray, invoke, _op_function,
    functions={'_internal': {'_copyto': _into('_copyto'), '_set_value': _into('_set_value')},
               'contrib': {
        'adamw_update': _adamw('_adamw_update'),
        'mp_adamw_update': _adamw('_mp_adamw_update'),
        'multi_adamw_update': _multi_update('_multi_adamw_update',
                                            ('weights', 'grads', 'mean', 'var')),
        'multi_mp_adamw_update': _multi_update(
            '_multi_mp_adamw_update', ('weights', 'grads', 'mean', 'var', 'weights32')),
        'multi_lamb_update': _multi_update('_multi_lamb_update',
                                           ('weights', 'grads', 'mean', 'var')),
        'multi_mp_lamb_update': _multi_update(
            '_multi_mp_lamb_update', ('weights', 'grads', 'mean', 'var', 'weights32'))}})


def __getattr__(name):
    if name.startswith('__'):
        raise AttributeError(name)
    try:
        return _op_function(name)
    except MXNetError:
        raise opdef.unknown_operator(name) from None
