"""cuDNN as symgraph's GPU backend for CuPy arrays, through ctypes (no compiled code).

NOT YET EXECUTED ON A GPU: written and tested on a machine without one (see docs/gpu.md:
what is tested where). :func:`backend` loads ``libcudnn.so.9`` (or ``.so.8``) once -- from
the ``nvidia-cudnn-cu13`` / ``-cu12`` wheels (``pip install symgraph[cudnn13]``), a
``nvidia/cudnn/lib`` folder on ``sys.path``, the system's CUDA folders or the dynamic
loader's path -- and returns a :class:`~symgraph.backend.cudnn.core.Backend`, or None with
ONE log line saying why: switched off (``SYMGRAPH_CUDNN=0``), CuPy missing or without a
device (the strict CPU stand-in of the test suite counts as without), the library missing
or unloadable, older than 8.0, built for a newer CUDA than the driver supports, or
``cudnnCreate`` failing.

Operators reach it only through ``symgraph.opdef.gpu_kernel`` (:func:`kernel`: one of
:data:`KERNELS`, a function that returns None to decline, or None without a backend);
symgraph's own CUDA kernels (``symgraph.cuda.loader``) stay the reference and the
fallback. ``SYMGRAPH_TF32=1`` lets
float32 convolutions use TF32 tensor cores (off by default, as MXNet).
"""
import logging
import os
import sys
import threading

from . import _lib, routing
from ... import config

__all__ = ['backend', 'loaded', 'reset', 'kernel', 'KERNELS', 'MIN_VERSION', 'reason']

#: the oldest library accepted (the ``_v7`` algorithm queries and group counts: cuDNN 7;
#: the status codes and the BN epsilon floor assumed here: cuDNN 8)
MIN_VERSION = (8, 0)

#: the kernels operators may ask :func:`kernel` for
KERNELS = ('conv_forward', 'conv_backward_data', 'conv_backward_weights',
           'batchnorm_forward', 'batchnorm_backward', 'pool_forward', 'pool_backward',
           'softmax_forward', 'softmax_backward', 'activation_forward',
           'activation_backward')

_logger = logging.getLogger(__name__)
_lock = threading.Lock()
_state = {}


def _cupy_with_device():
    """(cupy, None) when CuPy is imported (the backend imports nothing: operators ask
    with CuPy arrays in hand) and sees a device, else (None, why)."""
    cp = sys.modules.get('cupy')
    if cp is None:
        return None, 'CuPy is not imported (no GPU arrays)'
    if getattr(cp, '__path__', None) is None:
        # not the CuPy package: the test suite's strict stand-in (tests/cuda/strict_cupy.py,
        # one module, arrays in host memory)
        return None, 'CuPy is the strict CPU stand-in (no GPU memory)'
    try:
        n = cp.cuda.runtime.getDeviceCount()
    except Exception as e:             # no driver
        return None, 'no CUDA device (%s)' % (e,)
    if n < 1:
        return None, 'no CUDA device'
    return cp, None


def _open():
    """(lib, path) of the first candidate that loads, or (None, why)."""
    errors = []
    for path in _lib.candidates():
        if os.sep in path and not os.path.exists(path):
            continue
        try:
            return _lib.load(path), path
        except OSError as e:
            if os.sep in path:
                errors.append('%s: %s' % (path, e))
    if errors:
        return None, 'cuDNN could not be loaded (%s)' % '; '.join(errors)
    return None, 'cuDNN not found (pip install symgraph[cudnn12] or [cudnn13])'


def _load():
    """(Backend or None, why: None or the reason it is None)."""
    if not config.flag('CUDNN'):
        return None, 'cuDNN off (%s=%s)' % (config.env_name('CUDNN'), config.raw('CUDNN'))
    lib, path = _open()
    if lib is None:
        return None, path
    found = _lib.version(lib)
    if found[:2] < MIN_VERSION:
        return None, 'cuDNN %s at %s is older than %d.%d' % (
            '.'.join(map(str, found)), path, MIN_VERSION[0], MIN_VERSION[1])
    cp, why = _cupy_with_device()
    if cp is None:
        return None, why
    # cuDNN carries its own CUDA runtime (cudnnGetCudartVersion: the one it was built
    # with); it shares the device's primary context, streams and memory with CuPy's
    # runtime, whatever CuPy's version, but the driver must support cuDNN's. (Mixing a
    # CUDA 13 cuDNN, the one torch+cu130 installs, with cupy-cuda12x is what the GPU
    # machine of bench/RESULTS.md has: untested until a GPU run.)
    built = _lib.cudart_version(lib)
    try:
        driver = cp.cuda.runtime.driverGetVersion()
    except Exception as e:
        return None, 'CuPy cannot tell the CUDA driver version (%s)' % (e,)
    if driver // 1000 < built // 1000:
        return None, 'cuDNN %s at %s is built for CUDA %d.%d, the driver supports %d.%d' % (
            '.'.join(map(str, found)), path, built // 1000, built % 1000 // 10,
            driver // 1000, driver % 1000 // 10)
    from .core import Backend
    be = Backend(lib, path, cp, tf32=config.flag('TF32'))
    try:
        be.handle()
    except _lib.CudnnError as e:
        return None, 'cuDNN %s at %s: %s' % ('.'.join(map(str, found)), path, e)
    _logger.info('cuDNN %s from %s (TF32 %s)', '.'.join(map(str, found)), path,
                 'allowed' if be.tf32 else 'off')
    return be, None


def backend():
    """The loaded cuDNN backend, or None (loaded on the first call, then cached; the
    first None logs one line saying why, at INFO where cuDNN was switched off or is not
    installed, at WARNING where it is installed but cannot be used)."""
    try:
        return _state['backend']
    except KeyError:
        pass
    with _lock:
        if 'backend' not in _state:
            be, why = _load()
            _state['backend'], _state['reason'] = be, why
            if be is None:
                quiet = why.startswith(('cuDNN off', 'cuDNN not found', 'CuPy'))
                _logger.log(logging.INFO if quiet else logging.WARNING,
                            '%s: GPU operators run on symgraph\'s CUDA kernels', why)
    return _state['backend']


def reason():
    """Why :func:`backend` is None (None when it is loaded or was not asked yet)."""
    return _state.get('reason')


def kernel(name):
    """The backend's kernel ``name`` (one of :data:`KERNELS`), routed by
    :mod:`.routing`, or None where no backend is loaded: the operator runs its own."""
    try:
        return _state['kernels'][name]
    except KeyError:
        pass
    if name not in KERNELS:
        raise KeyError('no cuDNN kernel %r; the kernels are %s' % (name, ', '.join(KERNELS)))
    be = backend()
    table = _state.setdefault('kernels', {})
    table[name] = got = None if be is None else routing.routed(be, name)
    return got


def loaded():
    """The backend when it is loaded (None when it is not, or not yet: loads nothing)."""
    return _state.get('backend')


def reset():
    """Forget the loaded backend: the next :func:`backend` call loads (and logs) anew.
    For tests that switch ``SYMGRAPH_CUDNN``."""
    with _lock:
        be = _state.get('backend')
        if be is not None:
            be.close()
        _state.clear()
