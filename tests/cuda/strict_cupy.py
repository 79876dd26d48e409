"""A strict CPU stand-in for CuPy, to run symgraph's GPU code paths without a GPU.

The arrays live in host memory and the arithmetic is NumPy's, but the stand-in refuses
what real CuPy refuses, so code that would only fail on a GPU fails here first:

* only names that CuPy 14 has exist (``cupy_api.json``, written by ``make_cupy_api.py``
  from the real package), and calls with a keyword CuPy does not take raise TypeError;
* a device array never turns into a NumPy one implicitly (``np.asarray(x)``,
  ``float(x)`` works, ``x[...] = numpy_array`` and ``cupy.add(x, numpy_array)`` raise);
  ``numpy.f(x)`` dispatches to ``cupy.f`` through ``__array_function__`` as in CuPy, and
  fails where CuPy has no ``f``;
* reductions and scalar indexing give 0-d device arrays, not NumPy scalars; there is
  no ``__index__``; ``ufunc.reduce``/``accumulate``/``at`` exist only where CuPy
  implements them;
* several devices: every array remembers the device it was made on, and a kernel
  (any ufunc, routine or raw kernel) touching an array of another device than the
  current one raises, as CuPy does without peer access; a stream can only be entered
  and used on its own device;
* ``empty`` memory is filled with NaN (integers with a 0x5A byte pattern), so a read
  of memory nobody wrote shows up;
* ``cupy.cuda.nccl``: the communicators of ``initAll`` (several devices of this process)
  sum at ``groupEnd`` and refuse a call outside a group (NCCL would wait forever), and
  check that every rank made the same calls; ``NcclCommunicator(ndev, commId, rank)``
  (one device per process) checks that every rank got rank 0's unique id and runs over
  mpi4py's world; every call takes device pointers into live arrays of the communicator's
  device and a stream of that device, as NCCL does;
* ``RawModule`` compiles the kernel text on the CPU emulator (``cuda_emu_harness``)
  and its kernels take exactly what CuPy passes: device arrays of the parameter's dtype
  on the current device, NumPy scalars of the parameter's exact C type, None for NULL.

``install(ndev)`` puts the stand-in into ``sys.modules`` as ``cupy`` (and the few
submodules symgraph imports); ``tests/conftest.py`` does so when the environment has
``SYMGRAPH_STRICT_CUPY=<devices>``, and ``scripts/run_tests.sh`` runs the GPU suite
that way.
"""
import contextlib
import functools
import json
import os
import sys
import tempfile
import threading
import types
import weakref


import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(_HERE, 'cupy_api.json'), encoding='utf-8') as _f:
    API = json.load(_f)

__version__ = API['cupy_version']
_NUMPY_MODULE = {'cupy': np, 'cupy.linalg': np.linalg, 'cupy.random': np.random,
                 'cupy.fft': np.fft,
                 'cupy.lib.stride_tricks': np.lib.stride_tricks}
#: ndarray methods that only make a view or read metadata (no kernel, no device check)
_NO_KERNEL = {'reshape', 'view', 'transpose', 'swapaxes', 'squeeze', 'diagonal',
              'tobytes'}
_MAX_DEVICES = 8


class CUDARuntimeError(RuntimeError):
    pass


class _State(threading.local):
    def __init__(self):
        self.device = 0
        self.streams = {}          # device id -> current Stream


_state = _State()
_config = {'ndev': 1}


def _current():
    return _state.device


# ---------------------------------------------------------------------------
# devices, streams, events, memory pointers


class Device:
    def __init__(self, device=None):
        self.id = _current() if device is None else int(device)
        if not 0 <= self.id < _config['ndev']:
            raise CUDARuntimeError('cudaErrorInvalidDevice: invalid device ordinal %d '
                                   '(%d devices)' % (self.id, _config['ndev']))
        self._saved = []

    def __enter__(self):
        self._saved.append(_state.device)
        _state.device = self.id
        return self

    def __exit__(self, *exc):
        _state.device = self._saved.pop()

    def use(self):
        _state.device = self.id

    def synchronize(self):
        _pending.flush()

    def __eq__(self, other):
        return isinstance(other, Device) and other.id == self.id

    def __hash__(self):
        return hash(self.id)

    def __repr__(self):
        return '<CUDA Device %d>' % self.id


class _Pending:
    """Work issued on non-null streams, run later in an adversarial valid order.

    CUDA runs a stream's work in issue order but gives no order between streams beyond
    the events they wait on. Here raw kernels and async copies issued while a non-null
    stream is current are queued with those dependencies and run only when the host
    synchronises (a stream, an event or a device): streams with a higher (device, serial)
    run as far ahead as their dependencies let them. A missing ``wait_event`` between two
    streams, or reading results before synchronising, then gives wrong numbers. Work on a
    null stream runs at once (the legacy default stream does not wait for non-blocking
    streams either).
    """

    def __init__(self):
        self.lock = threading.RLock()
        self.queues = {}           # stream -> list of [fn, deps], in issue order
        self.done = {}             # stream -> number of its ops that have run
        self.issued = {}           # stream -> number of its ops issued
        self.serial = 0

    def enqueue(self, stream, fn):
        with self.lock:
            deps = list(stream._waits)
            self.queues.setdefault(stream, []).append((fn, deps))
            self.issued[stream] = self.issued.get(stream, 0) + 1

    def position(self, stream):
        return self.issued.get(stream, 0)

    def flush(self):
        with self.lock:
            while any(self.queues.values()):
                ready = [st for st, q in self.queues.items() if q and all(
                    self.done.get(d, 0) >= n for d, n in q[0][1])]
                if not ready:
                    raise RuntimeError('stand-in: streams wait on each other in a cycle')
                st = max(ready, key=lambda x: (x.device_id, x._serial))
                fn, _ = self.queues[st].pop(0)
                fn()
                self.done[st] = self.done.get(st, 0) + 1

    def clear(self):
        with self.lock:
            self.queues.clear()


_pending = _Pending()


def _issue(fn):
    """Run ``fn`` now on a null stream, or queue it on the current non-null stream."""
    stream = get_current_stream()
    if stream.is_null:
        fn()
    else:
        _pending.enqueue(stream, fn)


class Event:
    def __init__(self, block=False, disable_timing=False, interprocess=False):
        self.device_id = _current()
        self.recorded = False
        self.stream = None
        self.position = 0

    def record(self, stream=None):
        stream = stream if stream is not None else get_current_stream()
        if stream.device_id != _current():
            raise CUDARuntimeError('cudaErrorInvalidResourceHandle: recording on a stream '
                                   'of device %d while device %d is current'
                                   % (stream.device_id, _current()))
        self.recorded = True
        self.stream = stream
        self.position = _pending.position(stream)

    def synchronize(self):
        _pending.flush()

    @property
    def done(self):
        return True


_STREAMS = {}            # Stream.ptr -> Stream (NCCL calls name streams by pointer)


class Stream:
    _count = 0

    def __init__(self, null=False, non_blocking=False, ptds=False, priority=None):
        self.device_id = _current()
        self.is_null = null
        self._saved = []
        self._waits = []           # (stream, position) that later work must follow
        Stream._count += 1
        self._serial = Stream._count
        # cudaStream_t as CuPy gives it: 0 for the legacy null stream
        self.ptr = 0 if null else 0x5000 + self._serial
        _STREAMS[self.ptr] = self

    def _check(self, what):
        if self.device_id != _current():
            raise RuntimeError('%s a stream of device %d while device %d is current'
                               % (what, self.device_id, _current()))

    def __enter__(self):
        self._check('entering')
        self._saved.append(_state.streams.get(self.device_id))
        _state.streams[self.device_id] = self
        return self

    def __exit__(self, *exc):
        _state.streams[self.device_id] = self._saved.pop()

    def use(self):
        self._check('using')
        _state.streams[self.device_id] = self
        return self

    def record(self, event=None):
        event = event if event is not None else Event()
        event.record(self)
        return event

    def wait_event(self, event):
        self._check('waiting on')
        if not event.recorded:
            raise RuntimeError('waiting on an event that was never recorded')
        if event.stream is not None and not event.stream.is_null and event.stream is not self:
            self._waits.append((event.stream, event.position))

    def synchronize(self):
        _pending.flush()


_null_streams = {}


class _NullStreamAttribute:
    """``cupy.cuda.Stream.null``: the current device's null stream (a class attribute in
    CuPy; ``bench/bench_gpu.py`` passes its ``ptr`` to NCCL)."""

    def __get__(self, obj, cls):
        return _null_stream(_current())


def _null_stream(d):
    if d not in _null_streams:
        with Device(d):
            _null_streams[d] = Stream(null=True)
    return _null_streams[d]


Stream.null = _NullStreamAttribute()


def get_current_stream(device_id=None):
    d = _current() if device_id is None else device_id
    s = _state.streams.get(d)
    return _null_stream(d) if s is None else s


def _check_stream():
    s = get_current_stream()
    if s.device_id != _current():
        raise CUDARuntimeError('cudaErrorInvalidResourceHandle')


_BUFFERS = {}            # id(owner) -> (weakref to the owning NumPy buffer, device)


def _owner(a):
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


class MemoryPointer:
    def __init__(self, arr):
        self._arr = arr
        self.device_id = arr._dev
        self.ptr = arr._a.__array_interface__['data'][0] if arr._a.size else 0
        if self.ptr:
            # what a raw pointer handed to NCCL may point into
            owner = _owner(arr._a)
            _BUFFERS[id(owner)] = (weakref.ref(owner), arr._dev)

    def _bytes(self, size):
        a = self._arr._a
        if not a.flags.c_contiguous:
            raise ValueError('stand-in: raw copies of a non-contiguous view')
        flat = a.reshape(-1).view(np.uint8)
        if size > flat.size:
            raise CUDARuntimeError('cudaErrorInvalidValue: copy of %d bytes from a '
                                   '%d-byte buffer' % (size, flat.size))
        return flat[:size]

    def copy_from_device_async(self, src, size, stream=None):
        stream = stream if stream is not None else get_current_stream()
        if stream.device_id != _current():
            raise CUDARuntimeError('cudaErrorInvalidResourceHandle: copy on a stream of '
                                   'device %d while device %d is current'
                                   % (stream.device_id, _current()))
        dst_bytes, src_bytes = self._bytes(size), src._bytes(size)

        def copy():
            dst_bytes[...] = src_bytes
        _issue(copy)

    def copy_from_device(self, src, size):
        self.copy_from_device_async(src, size)
        _pending.flush()


# ---------------------------------------------------------------------------
# arrays


def _reject_numpy(value, where):
    raise TypeError('Unsupported type %s (%s): CuPy takes no NumPy array here; '
                    'move it with cupy.asarray first' % (type(value), where))


def _check_device(arr, what):
    if arr._dev != _current():
        raise ValueError('The device where the array resides (%d) is different from the '
                         'current device (%d). Peer access is unavailable between these '
                         'devices. (%s)' % (arr._dev, _current(), what))


def _unwrap(value, what, allow_numpy=False, check=True):
    """Device arrays -> their NumPy storage (device-checked); NumPy arrays rejected."""
    if isinstance(value, ndarray):
        if check:
            _check_device(value, what)
        return value._a
    if isinstance(value, np.ndarray):
        if allow_numpy:
            return value
        _reject_numpy(value, what)
    if isinstance(value, (list, tuple)):
        return type(value)(_unwrap(v, what, allow_numpy, check) for v in value)
    return value


def _wrap(value, dev=None):
    dev = _current() if dev is None else dev
    if isinstance(value, np.ndarray):
        return ndarray._make(value, dev)
    if isinstance(value, np.generic):
        return ndarray._make(np.asarray(value), dev)
    if isinstance(value, tuple):
        return tuple(_wrap(v, dev) for v in value)
    if isinstance(value, list):
        return [_wrap(v, dev) for v in value]
    return value


def _check_kwargs(spec, name, args, kwargs):
    if spec is None or 'params' not in spec:
        return
    params = spec['params']
    if any(p.startswith('*') for p in params):
        positional = params[:[p.startswith('*') for p in params].index(True)]
        keywords = params[len(positional) + 1:]
    else:
        positional, keywords = params, params
        if len(args) > len(params):
            raise TypeError('%s() takes at most %d positional arguments in CuPy %s (%d '
                            'given)' % (name, len(params), __version__, len(args)))
    allowed = set(positional) | set(keywords)
    bad = [k for k in kwargs if k not in allowed]
    if bad and not spec.get('varkw'):
        raise TypeError('%s() got unexpected keyword argument(s) %s: CuPy %s takes %s'
                        % (name, ', '.join(bad), __version__, ', '.join(params)))


def _poison(a):
    if a.dtype.kind == 'f' or a.dtype.kind == 'c':
        a.fill(np.nan)
    elif a.size:
        a.view(np.uint8).reshape(-1).fill(0x5A)
    return a


class ndarray:
    """A device array of the stand-in: NumPy storage, CuPy's rules."""

    __array_priority__ = 100.0
    __hash__ = None

    def __init__(self, shape, dtype=float, memptr=None, strides=None, order='C'):
        self._a = _poison(np.empty(shape, dtype=dtype, order=order))
        self._dev = _current()

    @classmethod
    def _make(cls, a, dev):
        obj = cls.__new__(cls)
        obj._a = a
        obj._dev = dev
        return obj

    # conversions CuPy refuses or allows
    def __array__(self, dtype=None, copy=None):
        raise TypeError('Implicit conversion to a NumPy array is not allowed. Please use '
                        '`.get()` to construct a NumPy array explicitly.')

    def get(self, stream=None, order='C', out=None, blocking=True):
        return self._a.copy()

    def set(self, arr, stream=None):
        if not isinstance(arr, np.ndarray) or arr.shape != self._a.shape:
            raise ValueError('set needs a NumPy array of shape %r' % (self._a.shape,))
        self._a[...] = arr

    def item(self):
        return self._a.item()

    def tolist(self):
        return self._a.tolist()

    def __float__(self):
        return float(self._a)

    def __int__(self):
        return int(self._a)

    def __complex__(self):
        return complex(self._a)

    def __bool__(self):
        return bool(self._a)

    def __len__(self):
        return len(self._a)

    def __iter__(self):
        if self._a.ndim == 0:
            raise TypeError('iteration over a 0-d array')
        return (self[i] for i in range(len(self._a)))

    def __repr__(self):
        return repr(self._a).replace('array(', 'cupy_array(', 1)

    __str__ = __repr__

    # metadata
    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    itemsize = property(lambda self: self._a.itemsize)
    nbytes = property(lambda self: self._a.nbytes)
    strides = property(lambda self: self._a.strides)
    flags = property(lambda self: self._a.flags)
    T = property(lambda self: ndarray._make(self._a.T, self._dev))
    mT = property(lambda self: ndarray._make(np.swapaxes(self._a, -1, -2), self._dev))
    real = property(lambda self: ndarray._make(self._a.real, self._dev))
    imag = property(lambda self: ndarray._make(self._a.imag, self._dev))
    base = property(lambda self: None if self._a.base is None else
                    ndarray._make(self._a.base, self._dev))
    device = property(lambda self: Device(self._dev))
    data = property(lambda self: MemoryPointer(self))

    @shape.setter
    def shape(self, value):
        self._a.shape = value

    def __getattr__(self, name):
        spec = API['ndarray'].get(name)
        if spec is None or spec['kind'] != 'method' or not hasattr(self._a, name):
            raise AttributeError("'cupy.ndarray' object has no attribute %r (CuPy %s)"
                                 % (name, __version__))
        method = getattr(self._a, name)

        @functools.wraps(method)
        def call(*args, **kwargs):
            _check_kwargs(spec, 'ndarray.' + name, args, kwargs)
            if name not in _NO_KERNEL:
                _check_device(self, 'ndarray.%s' % name)
            a2 = _unwrap(args, 'ndarray.%s' % name)
            k2 = {k: _unwrap(v, 'ndarray.%s' % name) for k, v in kwargs.items()}
            if name in _STABLE:
                k2['kind'] = 'stable'
            return _wrap(method(*a2, **k2), self._dev)
        return call

    def fill(self, value):
        _check_device(self, 'ndarray.fill')
        if isinstance(value, np.ndarray) and value.shape != ():
            raise ValueError('non-scalar numpy.ndarray cannot be used for fill')
        self._a.fill(_unwrap(value, 'fill', allow_numpy=True))

    def astype(self, dtype, order='K', casting=None, subok=None, copy=True):
        if not copy and np.dtype(dtype) == self._a.dtype:
            return self                  # no kernel, as in CuPy
        _check_device(self, 'ndarray.astype')
        kw = {} if casting is None else {'casting': casting}
        return ndarray._make(self._a.astype(dtype, order=order, copy=copy, **kw), self._dev)

    # indexing
    def _key(self, key):
        key = key if isinstance(key, tuple) else (key,)
        advanced = any(isinstance(k, (ndarray, np.ndarray, list)) for k in key)
        return _unwrap(key, 'indexing', allow_numpy=True), advanced

    def __getitem__(self, key):
        k, advanced = self._key(key)
        if advanced:
            _check_device(self, 'advanced indexing')
        return _wrap(self._a[k], self._dev)

    def __setitem__(self, key, value):
        _check_device(self, '__setitem__')
        k, _ = self._key(key)
        if isinstance(value, np.ndarray) and value.shape != ():
            raise ValueError('non-scalar numpy.ndarray cannot be used for fill '
                             '(x[...] = numpy_array: use cupy.asarray first)')
        self._a[k] = _unwrap(value, '__setitem__', allow_numpy=True)

    # NumPy's protocols: numpy.f(device_array) runs cupy.f, as in CuPy
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        fn = getattr(_MODULES['cupy'], ufunc.__name__, None)
        if not isinstance(fn, _Ufunc):
            return NotImplemented
        return getattr(fn, method)(*inputs, **kwargs) if method != '__call__' \
            else fn(*inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        modname = {'numpy': 'cupy', 'np.linalg': 'cupy.linalg'}.get(func.__module__)
        try:
            fn = getattr(_MODULES[modname], func.__name__)
        except (KeyError, AttributeError):
            return NotImplemented
        return fn(*args, **kwargs)

    def copy(self, order='C'):
        """A copy on the current device (CuPy copies across devices here)."""
        return ndarray._make(self._a.copy(order=order), _current())


def _binop(name, reflected=False, inplace=False):
    def op(self, other):
        if isinstance(other, np.ndarray) and not inplace:
            _reject_numpy(other, 'operator %s' % name)
        fn = getattr(_MODULES['cupy'], name)
        if inplace:
            return fn(self, other, out=self)
        return fn(other, self) if reflected else fn(self, other)
    return op


for _dunder, _ufunc_name in (('add', 'add'), ('sub', 'subtract'), ('mul', 'multiply'),
                             ('truediv', 'true_divide'), ('floordiv', 'floor_divide'),
                             ('mod', 'remainder'), ('pow', 'power'), ('and', 'bitwise_and'),
                             ('or', 'bitwise_or'), ('xor', 'bitwise_xor'),
                             ('lshift', 'left_shift'), ('rshift', 'right_shift'),
                             ('matmul', 'matmul')):
    setattr(ndarray, '__%s__' % _dunder, _binop(_ufunc_name))
    setattr(ndarray, '__r%s__' % _dunder, _binop(_ufunc_name, reflected=True))
    setattr(ndarray, '__i%s__' % _dunder, _binop(_ufunc_name, inplace=True))
for _dunder, _ufunc_name in (('eq', 'equal'), ('ne', 'not_equal'), ('lt', 'less'),
                             ('le', 'less_equal'), ('gt', 'greater'),
                             ('ge', 'greater_equal')):
    setattr(ndarray, '__%s__' % _dunder, _binop(_ufunc_name))
for _dunder, _ufunc_name in (('neg', 'negative'), ('pos', 'positive'), ('abs', 'absolute'),
                             ('invert', 'invert')):
    setattr(ndarray, '__%s__' % _dunder,
            (lambda n: lambda self: getattr(_MODULES['cupy'], n)(self))(_ufunc_name))
ndarray.__module__ = 'cupy'


# ---------------------------------------------------------------------------
# functions and ufuncs


def _loop_exists(spec, arrays):
    """Whether CuPy has a type loop for these array operands (same-dtype case only)."""
    dtypes = {a.dtype for a in arrays}
    if len(arrays) != spec['nin'] or len(dtypes) != 1:
        return True
    dt = dtypes.pop()
    for t in spec['types']:
        ins = t.split('->')[0]
        try:
            if len(ins) == spec['nin'] and all(np.can_cast(dt, np.dtype(c)) for c in ins):
                return True
        except TypeError:
            # a type character NumPy does not know yet ('E': CuPy's bfloat16 loops, whose
            # dtype exists once ml_dtypes is imported): no array here has that dtype
            continue
    return False


class _Ufunc:
    def __init__(self, name, spec, npfunc):
        self.__name__ = self.name = name
        self._spec = spec
        self._np = npfunc
        self.nin, self.nout = spec['nin'], spec['nout']
        self.types = spec['types']

    def __call__(self, *args, **kwargs):
        bad = set(kwargs) - {'out', 'dtype', 'casting'}
        if bad:
            raise TypeError('Wrong arguments %s (cupy.%s takes out, dtype, casting)'
                            % ({k: kwargs[k] for k in bad}, self.name))
        ins = _unwrap(args, 'cupy.%s' % self.name)
        k2 = {k: _unwrap(v, 'cupy.%s' % self.name) for k, v in kwargs.items()}
        arrays = [a for a in ins[:self.nin] if isinstance(a, np.ndarray)]
        if 'dtype' not in kwargs and not _loop_exists(self._spec, arrays):
            raise TypeError('Wrong type (%s) of arguments for cupy_%s'
                            % (arrays[0].dtype, self.name))
        bad_in = [a for a in args[:self.nin] if isinstance(a, (list, tuple))]
        if bad_in:
            raise TypeError('Unsupported type %s (cupy.%s takes arrays and scalars)'
                            % (type(bad_in[0]), self.name))
        out = kwargs.get('out')
        res = self._np(*ins, **k2)
        if out is not None:
            return out[0] if isinstance(out, tuple) and self.nout == 1 else out
        return _wrap(res if not isinstance(res, np.generic) else np.asarray(res))

    def _method(self, method, array, *args, **kwargs):
        if not self._spec.get(method):
            raise NotImplementedError('`%s.%s` is not supported yet (CuPy %s)'
                                      % (self.name, method, __version__))
        ins = _unwrap((array,) + args, 'cupy.%s.%s' % (self.name, method))
        k2 = {k: _unwrap(v, self.name) for k, v in kwargs.items()}
        return _wrap(getattr(self._np, method)(*ins, **k2))

    def reduce(self, array, axis=0, dtype=None, out=None, keepdims=False):
        return self._method('reduce', array, axis=axis, dtype=dtype, keepdims=keepdims,
                            **({} if out is None else {'out': out}))

    def accumulate(self, array, axis=0, dtype=None, out=None):
        return self._method('accumulate', array, axis=axis, dtype=dtype)

    def at(self, a, indices, b=None):
        if not self._spec.get('at'):
            raise NotImplementedError('`%s.at` is not supported yet' % self.name)
        _check_device(a, 'cupy.%s.at' % self.name)
        idx = _unwrap(indices, 'at', allow_numpy=True)
        self._np.at(a._a, idx, *(() if b is None else (_unwrap(b, 'at'),)))

    def outer(self, A, B, **kwargs):
        return _wrap(self._np.outer(*_unwrap((A, B), 'outer'), **kwargs))


_CONVERTERS = {'array', 'asarray', 'asanyarray'}
_STABLE = {'sort', 'argsort'}
_EMPTY = {'empty', 'empty_like'}


def _convert(name, npfunc, args, kwargs):
    """cupy.array / asarray / asanyarray: host data is always copied to the current
    device; a device array stays where it is unless ``array`` copies it (onto the
    current device)."""
    src = args[0] if args else kwargs.pop('obj', kwargs.pop('a', None))
    rest = _unwrap(tuple(args[1:]), 'cupy.' + name, allow_numpy=True)
    kw = {k: v for k, v in kwargs.items() if k != 'blocking'}
    if isinstance(src, ndarray):
        if name != 'array' or kw.get('copy') is False:
            out = npfunc(src._a, *rest, **kw)
            return _wrap(out, src._dev)
        return _wrap(np.array(src._a, *rest, **kw))
    host = _unwrap(src, 'cupy.' + name, allow_numpy=True, check=False)
    kw.pop('copy', None)
    return _wrap(np.array(host, *rest, copy=True, **kw))


def _make_function(modname, name, spec, npfunc):
    qual = '%s.%s' % (modname, name)

    def fn(*args, **kwargs):
        _check_kwargs(spec, qual, args, kwargs)
        if modname == 'cupy' and name in _CONVERTERS:
            return _convert(name, npfunc, args, dict(kwargs))
        a2 = _unwrap(args, qual)
        k2 = {k: _unwrap(v, qual) for k, v in kwargs.items()}
        if name in _STABLE:
            if k2.get('kind') not in (None, 'stable'):
                raise ValueError('%s: kind=%r is not accepted by CuPy (its sorts are '
                                 'always stable)' % (qual, k2['kind']))
            k2['kind'] = 'stable'      # CuPy sorts with thrust's stable sorts
        dtype = None
        call = npfunc
        if modname == 'cupy.random':
            # CuPy keeps one generator per device: cupy.random.seed seeds the current one
            call = getattr(_device_random_state(_current()), name, npfunc)
            if 'dtype' in k2:
                dtype = k2.pop('dtype')
        res = call(*a2, **k2)
        if dtype is not None:
            res = np.asarray(res).astype(dtype)
        elif modname == 'cupy.random' and isinstance(res, (float, int)):
            res = np.asarray(res)
        if name in _EMPTY:
            _poison(res)
        return _wrap(res)
    fn.__name__ = name
    fn.__qualname__ = qual
    return fn


def _asnumpy(a, stream=None, order='C', out=None, blocking=True):
    if isinstance(a, ndarray):
        return a._a.copy()
    return np.asarray(a)


def get_array_module(*args):
    return _MODULES['cupy'] if any(isinstance(a, ndarray) for a in args) else np


# ---------------------------------------------------------------------------
# raw kernels on the CPU emulator


_emu_lock = threading.Lock()
_launch_lock = threading.Lock()
_emu_cache = {}


def _emu_library(code):
    import cuda_emu_harness
    with _emu_lock:
        lib = _emu_cache.get(code)
        if lib is None:
            workdir = tempfile.mkdtemp(prefix='strict_cupy_')
            lib = cuda_emu_harness.build({'kernels.cu': code}, workdir)['kernels.cu']
            _emu_cache[code] = lib
    return lib


class RawKernel:
    def __init__(self, module, name):
        self._module = module
        self.name = name
        if name not in module._lib.signatures:
            raise CUDARuntimeError('CUDA_ERROR_NOT_FOUND: named symbol not found: %s' % name)

    def __call__(self, grid, block, args, *, shared_mem=0, stream=None, enable_cooperative_groups=False):
        if self._module._device != _current():
            raise CUDARuntimeError('CUDA_ERROR_INVALID_HANDLE: kernel %s compiled for '
                                   'device %d launched on device %d'
                                   % (self.name, self._module._device, _current()))
        _check_stream()
        if not isinstance(args, tuple):
            raise TypeError('kernel args must be a tuple, got %s' % type(args))
        host = []
        for a in args:
            if isinstance(a, np.ndarray):
                _reject_numpy(a, 'kernel %s' % self.name)
            if isinstance(a, (int, float, bool)) and not isinstance(a, np.generic):
                raise TypeError('kernel %s: Python %s argument %r (CuPy passes it as a '
                                '64-bit value: give a NumPy scalar of the C type)'
                                % (self.name, type(a).__name__, a))
            host.append(_unwrap(a, 'kernel %s' % self.name))
        grid = tuple(grid) + (1,) * (3 - len(grid))
        block = tuple(block) + (1,) * (3 - len(block))
        lib, name = self._module._lib, self.name

        def launch():
            with _launch_lock:          # the emulator's scheduler is process-global
                lib.launch(name, grid, block, host)
        _issue(launch)
        self._module.launches.append(self.name)


class RawModule:
    def __init__(self, code=None, path=None, options=(), backend='nvrtc', translate_cucomplex=False,
                 enable_cooperative_groups=False, name_expressions=None, jitify=False):
        if code is None:
            raise NotImplementedError('stand-in RawModule takes code=')
        if not isinstance(options, tuple):
            raise TypeError('options must be a tuple of str, got %s' % type(options))
        self.code = code
        self.options = options
        self._device = _current()
        self._lib = _emu_library(code)
        self.launches = []

    def get_function(self, name):
        return RawKernel(self, name)


# ---------------------------------------------------------------------------
# modules


_MODULES = {}


_device_rngs = {}


def _device_random_state(dev):
    """The generator behind cupy.random's functions on device ``dev``."""
    rs = _device_rngs.get(dev)
    if rs is None:
        rs = _device_rngs.setdefault(dev, np.random.RandomState())
    return rs


def _random_state_class(methods):
    """``cupy.random.RandomState`` on NumPy's: a generator lives on the device current
    at its creation, and draws there (CuPy's methods only, device arrays out)."""
    class RandomState:
        def __init__(self, seed=None, method=None):
            self._rs = np.random.RandomState(seed)
            self._dev = _current()

        def __getattr__(self, name):
            if name.startswith('_') or name not in methods:
                raise AttributeError('cupy.random.RandomState has no method %r' % name)
            if name == 'shuffle':       # in place on a device array: not emulated
                raise AttributeError('stand-in: RandomState.shuffle is not emulated')
            target = getattr(self._rs, name)

            def method(*args, dtype=None, **kwargs):
                if _current() != self._dev:
                    raise ValueError('RandomState of device %d used on device %d'
                                     % (self._dev, _current()))
                res = target(*_unwrap(args, 'RandomState.' + name),
                             **{k: _unwrap(v, 'RandomState.' + name)
                                for k, v in kwargs.items()})
                if res is None:         # seed, shuffle
                    return None
                res = np.asarray(res)
                return _wrap(res.astype(dtype) if dtype is not None else res, self._dev)
            return method
    return RandomState


def _build_module(modname):
    mod = types.ModuleType(modname)
    api = API['modules'][modname]
    if modname == 'cupyx.scipy.special':
        import scipy.special as npmod
    else:
        npmod = _NUMPY_MODULE[modname]

    def lookup(name):
        spec = api.get(name)
        if spec is None:
            raise AttributeError('module %r has no attribute %r (not in CuPy %s, or a '
                                 'submodule the stand-in does not emulate)'
                                 % (modname, name, __version__))
        kind = spec['kind']
        target = getattr(npmod, name, None)
        if kind == 'ufunc':
            if target is None:
                raise AttributeError('stand-in: no NumPy/SciPy twin for %s.%s'
                                     % (modname, name))
            return _Ufunc(name, spec, target)
        if kind == 'class' and isinstance(target, type) and issubclass(target, Exception):
            return target               # e.g. cupy.linalg.LinAlgError is NumPy's
        if modname == 'cupy.random' and name == 'RandomState':
            return _random_state_class(spec['methods'])
        if kind in ('numpy_type', 'constant'):
            if target is None:
                raise AttributeError('stand-in: no NumPy twin for %s.%s' % (modname, name))
            return target
        if kind == 'function':
            if target is None:
                raise AttributeError('stand-in: %s.%s has no NumPy twin' % (modname, name))
            return _make_function(modname, name, spec, target)
        raise AttributeError('stand-in: %s.%s (%s) is not emulated' % (modname, name, kind))

    def module_getattr(name):
        if name.startswith('__'):
            raise AttributeError(name)
        value = lookup(name)
        setattr(mod, name, value)
        return value
    mod.__getattr__ = module_getattr
    _MODULES[modname] = mod
    return mod


# ---------------------------------------------------------------------------
# cupy.cuda.nccl: communicators of several devices in this process (initAll), and one
# device per process through MPI (NcclCommunicator(ndev, commId, rank), mpi4py's world)

_NCCL_DTYPES = {0: np.int8, 1: np.uint8, 2: np.int32, 3: np.uint32, 4: np.int64,
                5: np.uint64, 6: np.float16, 7: np.float32, 8: np.float64}
_NCCL_OPS = {0: np.add, 1: np.multiply, 2: np.maximum, 3: np.minimum}


class NcclError(RuntimeError):
    def __init__(self, status, message=''):
        self.status = status
        super().__init__('%s: %s' % ({2: 'NCCL_ERROR_SYSTEM_ERROR', 3: 'NCCL_ERROR_INTERNAL_ERROR',
                                      4: 'NCCL_ERROR_INVALID_ARGUMENT',
                                      5: 'NCCL_ERROR_INVALID_USAGE'}.get(status, status),
                                     message))


class _NcclGroupState(threading.local):
    def __init__(self):
        self.depth = 0
        self.calls = []


_nccl_group = _NcclGroupState()


def _device_bytes(ptr, nbytes, dev, what):
    """The bytes [ptr, ptr + nbytes) of a live device buffer of device ``dev``."""
    for key, (ref, d) in list(_BUFFERS.items()):
        owner = ref()
        if owner is None:
            del _BUFFERS[key]
            continue
        start = owner.__array_interface__['data'][0]
        if start <= ptr < start + owner.nbytes:
            if d != dev:
                raise NcclError(4, '%s: the buffer lives on device %d, the communicator on '
                                   'device %d' % (what, d, dev))
            if ptr + nbytes > start + owner.nbytes:
                raise NcclError(4, '%s: %d bytes from the pointer overrun its %d-byte buffer'
                                   % (what, nbytes, start + owner.nbytes - ptr))
            if not owner.flags.c_contiguous:
                raise NcclError(4, '%s: not a contiguous device buffer' % what)
            flat = owner.reshape(-1).view(np.uint8)
            return flat[ptr - start:ptr - start + nbytes]
    raise NcclError(4, '%s: %#x is not a pointer into a live device array (pass '
                       'array.data.ptr)' % (what, ptr))


class _Clique:
    """The communicators made by one initAll: ranks of this process."""

    def __init__(self, devices):
        self.devices = list(devices)


class NcclCommunicator:
    def __init__(self, ndev, commId, rank):
        if not isinstance(commId, tuple) or len(commId) != 128:
            raise AssertionError('commId must be the 128-tuple of get_unique_id()')
        ndev, rank = int(ndev), int(rank)
        if not 0 <= rank < ndev:
            raise NcclError(4, 'rank %d outside [0, %d)' % (rank, ndev))
        from mpi4py import MPI
        world = MPI.COMM_WORLD
        # ncclCommInitRank is collective: every rank must arrive with the same id
        seen = world.allgather((commId, ndev, rank))
        if len({c for c, _, _ in seen}) != 1:
            raise NcclError(5, 'the ranks were given different unique ids (broadcast rank '
                               "0's get_unique_id() to all)")
        if ndev != world.Get_size() or sorted(r for _, _, r in seen) != list(range(ndev)):
            raise NcclError(5, 'stand-in: a process communicator must span the MPI world '
                               'with ranks 0..%d once each, got %s' % (ndev - 1, seen))
        self._mpi = world.Dup()
        self._clique = None
        self._rank, self._size, self._dev = rank, ndev, _current()
        self._alive = True

    @staticmethod
    def initAll(devices):
        if isinstance(devices, list):
            devlist = [int(d) for d in devices]
        elif isinstance(devices, int):
            devlist = list(range(devices))
        else:
            raise ValueError('"devices" should be an int or a list of int.')
        if len(set(devlist)) != len(devlist):
            raise NcclError(4, 'initAll: duplicate GPU in %s' % devlist)
        for d in devlist:
            if not 0 <= d < _config['ndev']:
                raise NcclError(4, 'initAll: no device %d' % d)
        clique = _Clique(devlist)
        comms = []
        for r, d in enumerate(devlist):
            c = NcclCommunicator.__new__(NcclCommunicator)
            c._mpi, c._clique = None, clique
            c._rank, c._size, c._dev, c._alive = r, len(devlist), d, True
            comms.append(c)
        return comms

    def _check(self):
        if not self._alive:
            raise NcclError(4, 'the communicator was destroyed or aborted')

    def device_id(self):
        self._check()
        return self._dev

    def rank_id(self):
        self._check()
        return self._rank

    def size(self):
        self._check()
        return self._size

    def destroy(self):
        self._alive = False

    def abort(self):
        self._alive = False

    def check_async_error(self):
        self._check()

    def _stream(self, ptr):
        stream = _STREAMS.get(int(ptr)) if ptr else get_current_stream(self._dev)
        if stream is None:
            raise NcclError(4, 'stream %#x is not a CUDA stream' % ptr)
        if stream.device_id != self._dev:
            raise NcclError(4, 'a stream of device %d for the communicator of device %d'
                               % (stream.device_id, self._dev))
        return stream

    def _call(self, kind, send, recv, count, datatype, op, root, stream):
        self._check()
        if datatype not in _NCCL_DTYPES:
            raise NcclError(4, 'unknown datatype %r' % (datatype,))
        if kind != 'bcast' and op not in _NCCL_OPS:
            raise NcclError(4, 'unknown reduction %r' % (op,))
        if _current() != self._dev:
            raise NcclError(4, 'device %d is current, the communicator is on device %d'
                               % (_current(), self._dev))
        dtype = np.dtype(_NCCL_DTYPES[datatype])
        nbytes = int(count) * dtype.itemsize
        sbuf = _device_bytes(send, nbytes, self._dev, kind + ' send buffer').view(dtype)
        rbuf = _device_bytes(recv, nbytes, self._dev, kind + ' receive buffer').view(dtype)
        call = (self, kind, sbuf, rbuf, int(count), datatype, op, root, self._stream(stream))
        if self._clique is not None and self._size > 1:
            if _nccl_group.depth == 0:
                raise NcclError(5, 'stand-in: a call on one of several communicators of this '
                                   'process outside groupStart()/groupEnd(): NCCL would wait '
                                   'for the other devices forever')
            _nccl_group.calls.append(call)
            return
        if _nccl_group.depth:
            _nccl_group.calls.append(call)
            return
        self._run_process([call])

    def _run_process(self, calls):
        from mpi4py import MPI
        for comm, kind, sbuf, rbuf, count, datatype, op, root, stream in calls:
            def run(comm=comm, kind=kind, sbuf=sbuf, rbuf=rbuf, op=op, root=root):
                if kind == 'allreduce':
                    if op != 0:
                        raise NcclError(4, 'stand-in: only NCCL_SUM between processes')
                    out = np.array(sbuf, copy=True)
                    comm._mpi.Allreduce(MPI.IN_PLACE, out, op=MPI.SUM)
                    rbuf[...] = out
                else:
                    out = np.array(sbuf, copy=True)
                    comm._mpi.Bcast(out, root=root)
                    rbuf[...] = out
            with Device(comm._dev):
                with stream if not stream.is_null else contextlib.nullcontext():
                    _issue(run)

    def allReduce(self, sendbuf, recvbuf, count, datatype, op, stream):
        self._call('allreduce', sendbuf, recvbuf, count, datatype, op, None, stream)

    def broadcast(self, sendbuff, recvbuff, count, datatype, root, stream):
        self._call('bcast', sendbuff, recvbuff, count, datatype, None, int(root), stream)

    def bcast(self, buff, count, datatype, root, stream):
        self._call('bcast', buff, buff, count, datatype, None, int(root), stream)


def _nccl_group_start():
    _nccl_group.depth += 1


def _nccl_group_end():
    if _nccl_group.depth == 0:
        raise NcclError(5, 'groupEnd without groupStart')
    _nccl_group.depth -= 1
    if _nccl_group.depth:
        return
    calls, _nccl_group.calls = _nccl_group.calls, []
    process, cliques = [], {}
    for c in calls:
        if c[0]._clique is None or c[0]._size == 1:
            process.append(c)
        else:
            cliques.setdefault(id(c[0]._clique), []).append(c)
    for group in cliques.values():
        size = group[0][0]._size
        per_rank = {}
        for c in group:
            per_rank.setdefault(c[0]._rank, []).append(c)
        if sorted(per_rank) != list(range(size)):
            raise NcclError(5, 'stand-in: the group called ranks %s of %d; NCCL would wait '
                               'for the others forever' % (sorted(per_rank), size))
        shapes = {tuple((k, n, t, o, r) for _, k, _, _, n, t, o, r, _ in calls_)
                  for calls_ in per_rank.values()}
        if len(shapes) != 1:
            raise NcclError(5, 'stand-in: the ranks made different collective calls: %s'
                               % shapes)
        for step in zip(*[per_rank[r] for r in range(size)]):
            kind, op, root = step[0][1], step[0][6], step[0][7]
            sends = [np.array(c[2], copy=True) for c in step]

            def run(step=step, sends=sends, kind=kind, op=op, root=root):
                if kind == 'allreduce':
                    total = sends[0]
                    for x in sends[1:]:
                        total = _NCCL_OPS[op](total, x)
                    for c in step:
                        c[3][...] = total
                else:
                    for c in step:
                        c[3][...] = sends[root]
            # the collective runs when the last rank's stream reaches it
            last = step[-1]
            with Device(last[0]._dev):
                with last[8] if not last[8].is_null else contextlib.nullcontext():
                    _issue(run)
    if process:
        process[0][0]._run_process(process)


def _nccl_unique_id():
    return tuple(int(b) - 256 if b > 127 else int(b) for b in os.urandom(128))


def _build_nccl():
    nccl = types.ModuleType('cupy.cuda.nccl')
    nccl.available = True
    nccl.NcclError = NcclError
    nccl.NcclCommunicator = NcclCommunicator
    nccl.get_unique_id = _nccl_unique_id
    nccl.groupStart = _nccl_group_start
    nccl.groupEnd = _nccl_group_end
    nccl.get_version = lambda: 22000
    nccl.get_build_version = lambda: 22000
    for code, name in ((0, 'INT8'), (1, 'UINT8'), (2, 'INT32'), (3, 'UINT32'), (4, 'INT64'),
                       (5, 'UINT64'), (6, 'FLOAT16'), (7, 'FLOAT32'), (8, 'FLOAT64')):
        setattr(nccl, 'NCCL_' + name, code)
    nccl.NCCL_CHAR, nccl.NCCL_INT, nccl.NCCL_HALF = 0, 2, 6
    nccl.NCCL_FLOAT, nccl.NCCL_DOUBLE = 7, 8
    nccl.NCCL_SUM, nccl.NCCL_PROD, nccl.NCCL_MAX, nccl.NCCL_MIN = 0, 1, 2, 3
    return nccl


def _build():
    cupy = _build_module('cupy')
    linalg = _build_module('cupy.linalg')
    random = _build_module('cupy.random')
    fft = _build_module('cupy.fft')
    special = _build_module('cupyx.scipy.special')
    stride_tricks = _build_module('cupy.lib.stride_tricks')
    lib = types.ModuleType('cupy.lib')
    lib.stride_tricks = stride_tricks
    cupy.lib = lib
    cupy.__version__ = __version__
    cupy.__file__ = __file__
    cupy.ndarray = ndarray
    cupy.asnumpy = _asnumpy
    cupy.get_array_module = get_array_module
    cupy.RawModule = RawModule
    cupy.RawKernel = None
    cupy.linalg = linalg
    cupy.random = random
    cupy.fft = fft
    cupy.newaxis = None
    cupy.matmul = _make_function('cupy', 'matmul', {'kind': 'function'}, np.matmul)
    cupy.true_divide = cupy.divide

    runtime = types.ModuleType('cupy.cuda.runtime')
    runtime.getDeviceCount = lambda: _config['ndev']
    runtime.getDevice = _current
    runtime.deviceSynchronize = _pending.flush
    runtime.CUDARuntimeError = CUDARuntimeError
    runtime.getDeviceProperties = lambda device: {'name': b'strict CuPy stand-in (CPU)',
                                                  'totalGlobalMem': 1 << 30}
    cuda_mod = types.ModuleType('cupy.cuda')
    for name, value in (('Device', Device), ('Stream', Stream), ('Event', Event),
                        ('MemoryPointer', MemoryPointer), ('runtime', runtime),
                        ('get_current_stream', get_current_stream),
                        ('get_device_id', _current), ('is_available', lambda: True),
                        ('set_allocator', lambda allocator=None: None)):
        setattr(cuda_mod, name, value)
    cuda_mod.nccl = _build_nccl()
    cupy.cuda = cuda_mod

    cupyx = types.ModuleType('cupyx')
    scipy_mod = types.ModuleType('cupyx.scipy')
    scipy_mod.special = special
    cupyx.scipy = scipy_mod
    return {'cupy': cupy, 'cupy.linalg': linalg, 'cupy.random': random, 'cupy.fft': fft,
            'cupy.cuda': cuda_mod,
            'cupy.cuda.runtime': runtime, 'cupy.cuda.nccl': cuda_mod.nccl, 'cupy.lib': lib,
            'cupy.lib.stride_tricks': stride_tricks, 'cupyx': cupyx, 'cupyx.scipy': scipy_mod,
            'cupyx.scipy.special': special}


_modules = _build()
cupy = _modules['cupy']


def install(ndev=1):
    """Make ``import cupy`` give the stand-in with ``ndev`` devices."""
    if not 1 <= ndev <= _MAX_DEVICES:
        raise ValueError('ndev must be in [1, %d]' % _MAX_DEVICES)
    _config['ndev'] = ndev
    sys.modules.update(_modules)
    return cupy


def installed_names():
    """The ``sys.modules`` keys that :func:`install` sets."""
    return list(_modules)


@contextlib.contextmanager
def installed(ndev=1):
    """``install`` for a ``with`` block, restoring ``sys.modules`` after."""
    saved = {k: sys.modules.get(k) for k in _modules}
    old = _config['ndev']
    try:
        yield install(ndev)
    finally:
        _pending.flush()
        _config['ndev'] = old
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
