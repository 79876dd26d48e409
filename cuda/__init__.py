"""CUDA kernels of symgraph, launched through CuPy.

Importing this package never imports CuPy: :func:`available` and the launchers
of :mod:`symgraph.cuda.loader` import it when first called, through
:func:`import_cupy`.
"""
import functools
import importlib
import logging
import os
import sys

__all__ = ['available', 'import_cupy']

_log = logging.getLogger(__name__)

_HERE = os.path.dirname(os.path.abspath(__file__))


def _unshadow_cuda_namespace():
    """Let ``import cuda`` find NVIDIA's namespace package, not this folder.

    In the source tree this package is a top-level folder named ``cuda``.
    When the tree's root is on ``sys.path`` (``python -m pytest`` or
    ``python -c`` run from the checkout), ``import cuda`` finds it -- a regular
    package always wins over a namespace package -- and CuPy's
    ``from cuda import pathfinder`` fails.  So import NVIDIA's ``cuda``
    (``cuda.pathfinder``) once with that root hidden; later imports reuse it.
    """
    root = os.path.normcase(os.path.dirname(_HERE))

    def is_root(entry):
        return os.path.normcase(os.path.abspath(entry or os.curdir)) == root

    mod = sys.modules.get('cuda')
    shadowed = mod is not None and os.path.normcase(os.path.dirname(
        os.path.abspath(getattr(mod, '__file__', None) or os.devnull))) == os.path.normcase(_HERE)
    could_shadow = os.path.basename(_HERE) == 'cuda' and any(is_root(p) for p in sys.path)
    if not (shadowed or (mod is None and could_shadow)):
        return  # NVIDIA's cuda is imported already, or this folder cannot hide it
    saved = list(sys.path)
    shadow = sys.modules.pop('cuda', None)
    try:
        sys.path[:] = [p for p in saved if not is_root(p)]
        importlib.invalidate_caches()
        try:
            importlib.import_module('cuda.pathfinder')
        except ImportError:
            pass  # an older CuPy that does not need it
    finally:
        sys.path[:] = saved
        if 'cuda' not in sys.modules and shadow is not None:
            sys.modules['cuda'] = shadow


def _tf32_to_cupy():
    """Hand ``SYMGRAPH_TF32`` to cuBLAS: CuPy's float32 matmuls (FullyConnected, dot,
    batch_dot) use TF32 tensor cores where its ``CUPY_TF32`` is above 0, which CuPy reads
    at its first float32 matmul. Set explicitly, ``SYMGRAPH_TF32`` decides; unset, a
    ``CUPY_TF32`` of the user's stays and otherwise TF32 is off (MXNet's float32 math).
    Done before CuPy is handed out, once per process."""
    if _TF32_DONE:
        return
    try:
        from .. import config          # symgraph.config: the one reader of the switches
    except ImportError:                # this folder loaded as a top-level ``cuda``
        return
    on = '1' if config.flag('TF32') else '0'
    if (config.raw('TF32') or '').strip():
        if os.environ.get('CUPY_TF32', on) != on:
            _log.info('SYMGRAPH_TF32=%s overrides CUPY_TF32=%s', config.raw('TF32'),
                      os.environ['CUPY_TF32'])
        os.environ['CUPY_TF32'] = on
    else:
        os.environ.setdefault('CUPY_TF32', on)
    _TF32_DONE.append(True)


_TF32_DONE = []


def import_cupy():
    """Import and return CuPy (raises ImportError where it is not installed), with
    ``CUPY_TF32`` set from ``SYMGRAPH_TF32`` first (:func:`_tf32_to_cupy`)."""
    _tf32_to_cupy()
    cupy = sys.modules.get('cupy')
    if cupy is None:
        _unshadow_cuda_namespace()
        import cupy
    return cupy


@functools.lru_cache(maxsize=None)
def available():
    """Whether CuPy imports and sees at least one CUDA device.

    The answer is computed once per process.

    Returns
    -------
    bool
    """
    try:
        cupy = import_cupy()
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception as exc:  # ImportError, or a CUDA error without a driver/device
        _log.debug('CUDA unavailable: %s', exc)
        return False
