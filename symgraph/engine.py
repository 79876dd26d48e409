"""``mx.engine``: the execution engine's bulking switches, after MXNet 1.9.1's engine.py.

MXNet's threaded engine can group ("bulk") up to N imperative operations into one engine
task. symgraph runs every operation at once on the calling thread, so the bulk size is only
recorded: ``set_bulk_size`` returns the previous value as MXNet's does, and code written
for MXNet (``with mx.engine.bulk(10): ...``) runs unchanged with the same results.
"""
import threading

__all__ = ['set_bulk_size', 'bulk']

_state = threading.local()


def set_bulk_size(size):
    """Set this thread's engine bulk size (how many operations MXNet groups in one task).

    Parameters
    ----------
    size : int
        The new bulk size; 0 turns bulking off.

    Returns
    -------
    int
        The previous bulk size.

    Raises
    ------
    TypeError, ValueError
        ``size`` is not a non-negative int.

    Examples
    --------
    >>> prev = set_bulk_size(8)
    >>> set_bulk_size(prev)
    8
    """
    if isinstance(size, bool) or not isinstance(size, int):
        raise TypeError('set_bulk_size: size must be an int, not %r' % (size,))
    if size < 0:
        raise ValueError('set_bulk_size: size must be >= 0, not %d' % size)
    prev = getattr(_state, 'size', 0)
    _state.size = size
    return prev


class _BulkScope:
    """``with`` scope of :func:`bulk`: sets the bulk size and puts the old one back."""

    def __init__(self, size):
        self._size = size
        self._old = []

    def __enter__(self):
        self._old.append(set_bulk_size(self._size))
        return self

    def __exit__(self, *exc):
        set_bulk_size(self._old.pop())


def bulk(size):
    """A ``with`` scope in which the engine bulk size is ``size``.

    Examples
    --------
    >>> with bulk(10):
    ...     set_bulk_size(10)
    10
    """
    return _BulkScope(size)
