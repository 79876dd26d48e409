"""CUDA kernels of symgraph, launched through CuPy.

Importing this package never imports CuPy: :func:`available` and the launchers
of :mod:`symgraph.cuda.loader` import it when first called.
"""
import functools
import logging

__all__ = ['available']

_log = logging.getLogger(__name__)


@functools.lru_cache(maxsize=None)
def available():
    """Whether CuPy imports and sees at least one CUDA device.

    The answer is computed once per process.

    Returns
    -------
    bool
    """
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception as exc:  # ImportError, or a CUDA error without a driver/device
        _log.debug('CUDA unavailable: %s', exc)
        return False
