"""oneDNN 3.x as symgraph's CPU backend, through ctypes.

:func:`backend` loads ``libdnnl.so.3`` once (from the ``onednn-cpu-gomp`` wheel, a default
dependency on x86-64 Linux) and returns a :class:`~symgraph.backend.onednn.conv.Backend`, or
None -- with one log line saying why -- when the library is switched off
(``SYMGRAPH_ONEDNN=0``), missing, unloadable or older than 3.0 (or 4.x and newer, whose C
API may differ). Operators reach its kernels only through :func:`symgraph.opdef.cpu_kernel`
(:func:`kernel`: routed by the size tables of :mod:`.routing`); NumPy stays the reference
and the fallback.
"""
import logging
import os
import threading

from . import _lib
from .conv import Backend
from ... import config

__all__ = ['backend', 'loaded', 'reset', 'kernel', 'KERNEL_TABLE', 'MIN_VERSION', 'Backend']

#: the oldest library accepted (the C API used here is oneDNN 3.0's); major 4 is refused
MIN_VERSION = (3, 0)

_logger = logging.getLogger(__name__)
_lock = threading.Lock()
_state = {}

#: name -> the kernel :func:`kernel` gave for it (None: no backend), of the backend loaded
#: now: ``symgraph.opdef.cpu_kernel`` reads this very dict first (one lookup per call);
#: :func:`reset` empties it
KERNEL_TABLE = {}


def _gomp_loaded():
    """Whether GNU libgomp is already mapped into this process (Linux; False elsewhere)."""
    try:
        with open('/proc/self/maps') as f:
            return any('libgomp' in line for line in f)
    except OSError:
        return False


#: libgomp's spins before a thread that finished a parallel region sleeps (its default,
#: 300,000, when the user sets nothing): see :func:`_dlopen`
SPIN_COUNT = 30000


def _dlopen(path):
    """:func:`_lib.load` with libgomp told to spin briefly when a parallel region ends.

    A training step calls a hundred or more primitives back to back, each a few parallel
    regions: threads that slept at once (``OMP_WAIT_POLICY=passive``) were woken for every
    one, which cost 20-30 us per call and made the ResNet-14 step's oneDNN time 15-30%
    longer than with a short spin (bench/RESULTS.md). A long spin (libgomp's default) takes
    the cores from NumPy's OpenBLAS threads when a large NumPy matmul follows (the engine's
    own go through oneDNN) and, on a busy machine, makes every call wait for a descheduled
    thread. libgomp reads ``GOMP_SPINCOUNT`` once, when it is loaded, so it is set to
    :data:`SPIN_COUNT` for that moment only, unless the user set it (or
    ``OMP_WAIT_POLICY``) or libgomp is already in the process; the environment is restored
    right after.
    """
    if 'OMP_WAIT_POLICY' in os.environ or 'GOMP_SPINCOUNT' in os.environ \
            or _gomp_loaded():
        return _lib.load(path)
    os.environ['GOMP_SPINCOUNT'] = str(SPIN_COUNT)
    try:
        return _lib.load(path)
    finally:
        del os.environ['GOMP_SPINCOUNT']


def _load():
    if not config.flag('ONEDNN'):
        _logger.info('oneDNN backend off (%s=%s): operators run on NumPy',
                     config.env_name('ONEDNN'), config.raw('ONEDNN'))
        return None
    errors = []
    for path in _lib.candidates():
        if not os.path.exists(path):
            continue
        try:
            lib = _dlopen(path)
            found = _lib.version(lib)
        except OSError as e:
            errors.append('%s: %s' % (path, e))
            continue
        if not MIN_VERSION <= found[:2] < (MIN_VERSION[0] + 1, 0):
            _logger.warning('oneDNN %s at %s is not 3.x (need >= %d.%d, < %d): operators run '
                            'on NumPy', '.'.join(map(str, found)), path, MIN_VERSION[0],
                            MIN_VERSION[1], MIN_VERSION[0] + 1)
            return None
        try:
            return Backend(lib, path)
        except _lib.DnnlError as e:
            errors.append('%s: %s' % (path, e))
    if errors:
        _logger.warning('oneDNN could not be loaded (%s): operators run on NumPy',
                        '; '.join(errors))
    else:
        _logger.info('oneDNN not found (pip install onednn-cpu-gomp): operators run on NumPy')
    return None


def backend():
    """The loaded oneDNN backend, or None (loaded on the first call, then cached)."""
    try:
        return _state['backend']
    except KeyError:
        pass
    with _lock:
        if 'backend' not in _state:
            _state['backend'] = _load()
    return _state['backend']


def kernel(name):
    """The loaded backend's kernel ``name`` as operators get it (``Backend.kernel``: routed
    by :mod:`.routing`'s size tables), or None without a backend; kept in
    :data:`KERNEL_TABLE`."""
    be = backend()
    got = None if be is None else be.kernel(name)
    KERNEL_TABLE[name] = got
    return got


def loaded():
    """The backend when it is loaded (None when it is not, or not yet: loads nothing)."""
    return _state.get('backend')


def reset():
    """Forget the loaded backend: the next :func:`backend` call loads (and logs) anew.

    For tests that switch ``SYMGRAPH_ONEDNN`` or patch the version check.
    """
    with _lock:
        _state.clear()
        KERNEL_TABLE.clear()
