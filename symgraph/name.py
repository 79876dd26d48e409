"""Automatic naming of operator nodes (MXNet's ``mx.name``)."""
import threading
import warnings

__all__ = ['NameManager', 'Prefix']


class _CurrentMeta(type):
    """``NameManager.current`` / ``AttrScope.current`` as MXNet has them: a (deprecated)
    class property with a setter; symgraph itself calls ``_get_current()``."""

    @property
    def current(cls):
        warnings.warn('%s.current has been deprecated; use the with statement'
                      % cls._scope.__name__, DeprecationWarning, stacklevel=2)
        return cls._get_current()

    @current.setter
    def current(cls, value):
        warnings.warn('%s.current has been deprecated; use the with statement'
                      % cls._scope.__name__, DeprecationWarning, stacklevel=2)
        cls._scope._current.value = value


class NameManager(metaclass=_CurrentMeta):
    """Gives operators without a name ``<hint><counter>``; use as a context manager.

    >>> import symgraph as mx
    >>> with mx.name.NameManager():
    ...     mx.sym.exp(mx.sym.var('x')).name
    'exp0'
    """

    #: the active manager of each thread (``_current.value``, as MXNet's Gluon code reads)
    _current = threading.local()

    def __init__(self):
        self._counter = {}
        self._old = None

    def get(self, name, hint):
        """The name for a new node: ``name`` if given, else ``hint`` plus a counter."""
        if name:
            return name
        n = self._counter.get(hint, 0)
        self._counter[hint] = n + 1
        return '%s%d' % (hint, n)

    def __enter__(self):
        self._old = NameManager._get_current()
        NameManager._current.value = self
        return self

    def __exit__(self, *exc):
        NameManager._current.value = self._old

    @staticmethod
    def _get_current():
        v = getattr(NameManager._current, 'value', None)
        if v is None:
            v = NameManager._current.value = NameManager()
        return v


NameManager._scope = NameManager


class Prefix(NameManager):
    """Adds a prefix to automatic and explicit operator names (not to Variables).

    >>> import symgraph as mx
    >>> with mx.name.Prefix('net_'):
    ...     mx.sym.FullyConnected(mx.sym.var('x'), num_hidden=2, name='fc').name
    'net_fc'
    """

    def __init__(self, prefix):
        super().__init__()
        self._prefix = prefix

    def get(self, name, hint):
        return self._prefix + super().get(name, hint)
