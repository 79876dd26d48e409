"""Automatic naming of operator nodes (MXNet's ``mx.name``)."""
import threading

__all__ = ['NameManager', 'Prefix']


class NameManager:
    """Gives operators without a name ``<hint><counter>``; use as a context manager.

    >>> import symgraph as mx
    >>> with mx.name.NameManager():
    ...     mx.sym.exp(mx.sym.var('x')).name
    'exp0'
    """

    _state = threading.local()

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
        self._old = NameManager.current()
        NameManager._state.value = self
        return self

    def __exit__(self, *exc):
        NameManager._state.value = self._old

    @staticmethod
    def current():
        v = getattr(NameManager._state, 'value', None)
        if v is None:
            v = NameManager._state.value = NameManager()
        return v


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
