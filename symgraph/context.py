"""Devices (MXNet's ``mx.Context``): NumPy on the CPU, CuPy on NVIDIA GPUs."""
import threading

import numpy as np

from .base import MXNetError, ArgumentError, UnknownNameError

__all__ = ['Context', 'cpu', 'gpu', 'cpu_pinned', 'current_context', 'num_gpus']


def _cupy():
    try:
        from symgraph.cuda import import_cupy   # copes with the checkout's cuda/ folder
        cupy = import_cupy()
    except ImportError as e:
        raise MXNetError('GPU contexts need CuPy: pip install "symgraph[cuda12]" or '
                         '"symgraph[cuda13]" (import failed: %s)' % e) from None
    return cupy


class _ContextType(type):
    """``Context.default_ctx``: MXNet's class-level property, the thread's current context
    (read) or its new default (write)."""

    @property
    def default_ctx(cls):
        return current_context()

    @default_ctx.setter
    def default_ctx(cls, ctx):
        # as test_utils.set_default_context: the default outside any `with ctx:` scope
        # (inside one, the scope's own context, until it ends)
        if not isinstance(ctx, Context):
            raise ArgumentError('Context.default_ctx must be a Context, got %s'
                                % type(ctx).__name__)
        if getattr(cls._state, 'value', None) is not None:
            cls._state.value = ctx
        else:
            _set_default_context(ctx)


class Context(metaclass=_ContextType):
    """A device: ``Context('cpu', 0)`` or ``Context('gpu', 1)``; usable with ``with``."""

    devtype2str = {1: 'cpu', 2: 'gpu', 3: 'cpu_pinned', 5: 'cpu_shared'}
    devstr2type = {v: k for k, v in devtype2str.items()}
    _state = threading.local()

    def __init__(self, device_type, device_id=0):
        if isinstance(device_type, Context):
            device_type, device_id = device_type.device_type, device_type.device_id
        if device_type not in self.devstr2type:
            raise UnknownNameError('unknown device type %r; use one of %s'
                                   % (device_type, sorted(self.devstr2type)))
        self.device_type = device_type
        self.device_id = int(device_id)

    @property
    def device_typeid(self):
        return self.devstr2type[self.device_type]

    @property
    def is_gpu(self):
        return self.device_type == 'gpu'

    @property
    def xp(self):
        """The array module of this device (numpy or cupy)."""
        if self.device_type == 'gpu':
            cp = _cupy()
            n = num_gpus()
            if self.device_id >= n:
                raise ArgumentError('gpu(%d) requested but %d GPU(s) are visible'
                                    % (self.device_id, n))
            return cp
        return np

    def device_scope(self):
        """A context manager selecting this device for CuPy (a no-op on the CPU)."""
        if self.device_type == 'gpu':
            cp = self.xp            # checks CuPy and the device first, with a clear error
            return cp.cuda.Device(self.device_id)
        return _NullScope()

    def __eq__(self, other):
        return (isinstance(other, Context) and self.device_type == other.device_type
                and self.device_id == other.device_id)

    def __hash__(self):
        return hash((self.device_type, self.device_id))

    def __repr__(self):
        return '%s(%d)' % (self.device_type, self.device_id)

    __str__ = __repr__

    def __enter__(self):
        # the scope's own previous value (None outside any scope): leaving restores it, so
        # the default context keeps applying outside. A stack, per thread: one Context
        # object may be entered again inside its own scope, or on another thread
        stack = getattr(Context._state, 'olds', None)
        if stack is None:
            stack = Context._state.olds = []
        stack.append(getattr(Context._state, 'value', None))
        Context._state.value = self
        return self

    def __exit__(self, *exc):
        Context._state.value = Context._state.olds.pop()


class _NullScope:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def cpu(device_id=0):
    """The CPU context."""
    return Context('cpu', device_id)


def cpu_pinned(device_id=0):
    return Context('cpu_pinned', device_id)


def gpu(device_id=0):
    """A GPU context. Arrays on it are CuPy arrays; CuPy must be installed."""
    return Context('gpu', device_id)


#: the context of code outside any ``with ctx:`` (``test_utils.set_default_context``)
_default = [None]


def _set_default_context(ctx):
    _default[0] = None if ctx is None else Context(ctx)


def current_context():
    v = getattr(Context._state, 'value', None)
    if v is not None:
        return v
    return _default[0] if _default[0] is not None else Context('cpu', 0)


def num_gpus():
    """Number of visible CUDA GPUs (0 without CuPy or a driver)."""
    try:
        return _cupy().cuda.runtime.getDeviceCount()
    except Exception:       # no CuPy, or CuPy without a driver/device
        return 0


def array_module(arr):
    """numpy or cupy, whichever owns ``arr``."""
    if isinstance(arr, np.ndarray) or np.isscalar(arr):
        return np
    mod = type(arr).__module__
    if mod.startswith('cupy'):
        return _cupy()
    return np


def context_of(arr):
    if isinstance(arr, np.ndarray):
        return cpu()
    dev = getattr(arr, 'device', None)
    if dev is not None and hasattr(dev, 'id'):
        return gpu(dev.id)
    return cpu()
