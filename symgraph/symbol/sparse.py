"""``mx.sym.sparse``: MXNet's sparse operator namespace for symbols.

The operators take the same symbols as their ``mx.sym`` counterparts (``mx.sym.sparse.dot``
is ``dot``): a graph binds dense-backed arrays (ndarray/sparse.py), so the values are
MXNet's; the storage types of the graph's arrays are the bound ones. Variables declare a
storage type with ``mx.sym.var(name, stype=...)`` (the ``__storage_type__`` attribute).
"""
from . import symbol as _symbol

__all__ = []


def __getattr__(name):
    if name.startswith('__'):
        raise AttributeError(name)
    return getattr(_symbol, name)
