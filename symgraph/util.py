"""``mx.util``: NumPy-shape and NumPy-array semantics switches, and environment helpers.

After MXNet 1.9.1's ``python/mxnet/util.py``. Under NumPy-shape semantics (``np_shape``)
MXNet writes unknown dimensions as -1 and a wholly unknown shape as None, where its legacy
semantics writes 0 and ``()``; symgraph's inference keeps the legacy form inside and
converts at its edges (``Symbol.infer_shape*``, ``Symbol.tojson``), see docs/differences.md.
NumPy-array semantics (``np_array``) only records the flag: symgraph has no ``mx.np``
array type, so arrays stay ``NDArray`` under it.

Both flags are per thread, as MXNet keeps them; a thread starts with the value that
``set_np_shape`` / ``set_np`` last set in any thread (MXNet's global default).
"""
import functools
import inspect
import logging
import os
import threading

__all__ = ['set_np_shape', 'is_np_shape', 'np_shape', 'use_np_shape', 'np_array',
           'is_np_array', 'use_np_array', 'use_np', 'set_np', 'reset_np', 'getenv', 'setenv',
           'get_gpu_count', 'get_gpu_memory', 'get_cuda_compute_capability', 'set_module',
           'wraps_safely']

_LOG = logging.getLogger(__name__)
_state = threading.local()
_defaults = {'shape': False, 'array': False}


def _get(name):
    return getattr(_state, name, _defaults[name])


def _set(name, active, make_default=False):
    prev = _get(name)
    setattr(_state, name, bool(active))
    if make_default:
        _defaults[name] = bool(active)
    return prev


def set_np_shape(active):
    """Turn NumPy-shape semantics on or off in this thread; returns the previous state.

    Raises
    ------
    ValueError
        When turning it off while NumPy-array semantics is on (as MXNet).

    Examples
    --------
    >>> prev = set_np_shape(True)
    >>> is_np_shape()
    True
    >>> _ = set_np_shape(prev)
    """
    if not active and is_np_array():
        raise ValueError('Deactivating NumPy shape semantics while NumPy array semantics is '
                         'still active is not allowed. Please consider calling '
                         '`npx.reset_np()` to deactivate both of them.')
    # MXNet's integer modes: 2 turns it on in every thread (GlobalOn), 0 off in every thread
    glob = isinstance(active, int) and not isinstance(active, bool) and active in (0, 2)
    return _set('shape', active, make_default=glob)


def is_np_shape():
    """Whether NumPy-shape semantics is on in this thread (-1 unknown, 0 a zero size)."""
    return _get('shape')


class _Scope:
    """``with`` scope setting one flag and putting the previous value back on exit."""

    def __init__(self, name, active):
        self._name = name
        self._active = active
        self._prev = []

    def __enter__(self):
        if self._active is not None:
            self._prev.append(_set(self._name, self._active))
        return self

    def __exit__(self, *exc):
        if self._active is not None:
            _set(self._name, self._prev.pop())


def np_shape(active=True):
    """A ``with`` scope with NumPy-shape semantics on (or off, ``active=False``).

    Examples
    --------
    >>> with np_shape(True):
    ...     is_np_shape()
    True
    >>> is_np_shape()
    False
    """
    return _Scope('shape', active)


class _NumpyArrayScope:
    """MXNet's scope object of NumPy-array semantics (``util._NumpyArrayScope``; its tests
    build them directly): a ``with`` scope setting the flag for this thread."""
    _current = threading.local()

    def __init__(self, is_np_array):  # pylint: disable=redefined-outer-name
        self._is_np_array = is_np_array
        self._old_scope = None

    def __enter__(self):
        self._old_scope = _set('array', self._is_np_array)
        return self

    def __exit__(self, *exc):
        _set('array', self._old_scope)


def np_array(active=True):
    """A ``with`` scope with NumPy-array semantics on (or off)."""
    return _Scope('array', active)


def is_np_array():
    """Whether NumPy-array semantics is on in this thread."""
    return _get('array')


def _decorator(scopes, what):
    """A decorator running a function, or every method of a class, inside ``scopes()``."""
    def decorate(func):
        if inspect.isclass(func):
            for name, method in inspect.getmembers(
                    func, predicate=lambda f: inspect.isfunction(f) or inspect.ismethod(f)
                    or isinstance(f, property)):
                if isinstance(method, property):
                    setattr(func, name, property(decorate(method.__get__), method.__set__,
                                                 method.__delattr__, method.__doc__))
                else:
                    setattr(func, name, decorate(method))
            return func
        if not callable(func):
            raise TypeError('%s can only decorate classes and callable objects, while '
                            'received a %s' % (what, type(func)))

        @functools.wraps(func)
        def scoped(*args, **kwargs):
            with scopes[0](True):
                if len(scopes) > 1:
                    with scopes[1](True):
                        return func(*args, **kwargs)
                return func(*args, **kwargs)
        return scoped
    return decorate


def use_np_shape(func):
    """Decorator: run ``func`` (or every method of a class) with NumPy-shape semantics."""
    return _decorator((np_shape,), 'use_np_shape')(func)


def use_np_array(func):
    """Decorator: run ``func`` (or every method of a class) with NumPy-array semantics."""
    return _decorator((np_array,), 'use_np_array')(func)


def use_np(func):
    """Decorator: both NumPy-shape and NumPy-array semantics (``use_np_shape(use_np_array(f))``).

    Examples
    --------
    >>> @use_np
    ... def f():
    ...     return is_np_shape(), is_np_array()
    >>> f()
    (True, True)
    """
    return use_np_shape(use_np_array(func))


def set_np(shape=True, array=True):
    """Set both semantics for this thread and as the default of new threads.

    Raises
    ------
    ValueError
        ``array=True`` with ``shape=False`` (MXNet refuses it too).
    """
    if not shape and array:
        raise ValueError('NumPy Shape semantics is required in using NumPy array semantics.')
    _set('array', array, make_default=True)
    _set('shape', shape, make_default=True)


def reset_np():
    """Turn both semantics off (``set_np(shape=False, array=False)``)."""
    set_np(shape=False, array=False)


def getenv(name):
    """The value of the environment variable ``name``, or None."""
    return os.environ.get(name)


def setenv(name, value):
    """Set (a str) or unset (None) the environment variable ``name``."""
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = str(value)


def get_gpu_count():
    """The number of visible GPUs (0 without CuPy or a GPU)."""
    from .context import num_gpus
    return num_gpus()


def get_gpu_memory(gpu_dev_id):
    """``(free, total)`` bytes of GPU ``gpu_dev_id`` (CuPy's runtime)."""
    import cupy
    with cupy.cuda.Device(gpu_dev_id):
        return cupy.cuda.runtime.memGetInfo()


def get_cuda_compute_capability(ctx):
    """The CUDA compute capability of a GPU context as an int (e.g. 80).

    Raises
    ------
    ValueError
        ``ctx`` is not a GPU context.
    """
    if ctx.device_type != 'gpu':
        raise ValueError('Expecting a gpu context to get cuda compute capability, '
                         'while received ctx {}'.format(str(ctx)))
    import cupy
    with cupy.cuda.Device(ctx.device_id) as dev:
        return int(dev.compute_capability)


def set_module(module):
    """Decorator: set ``func.__module__`` (MXNet uses it for its public API's names)."""
    def decorator(func):
        if module is not None:
            func.__module__ = module
        return func
    return decorator


def wraps_safely(wrapped, assigned=functools.WRAPPER_ASSIGNMENTS):
    """``functools.wraps`` that skips attributes ``wrapped`` lacks."""
    return functools.wraps(wrapped, [a for a in assigned if hasattr(wrapped, a)])
