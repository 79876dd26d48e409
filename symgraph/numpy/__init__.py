"""``mx.np``: MXNet 1.9's NumPy-compatible array interface, which symgraph does not have.

The module exists so that MXNet-era files that import it (``import mxnet.numpy as _mx_np``)
load; any use of it raises :class:`~symgraph.base.NotSupportedError`. symgraph implements
MXNet 1.x's ``mx.nd``/``mx.sym`` interfaces (and ``mx.util``'s NumPy-shape switches); see
docs/differences.md.
"""
from ..base import NotSupportedError


class NumpyInterfaceError(NotSupportedError, AttributeError):
    """A name of ``mx.np`` asked for: not supported (an AttributeError too, so that
    ``hasattr(mx.np, name)`` is False and ``getattr(mx.np, name, default)`` works)."""


def __getattr__(name):
    if name.startswith('__'):
        raise AttributeError(name)
    raise NumpyInterfaceError('mx.np.%s: MXNet\'s NumPy interface (mx.np / mxnet.numpy) is not '
                            'supported; use mx.nd (or NumPy itself)' % name)
