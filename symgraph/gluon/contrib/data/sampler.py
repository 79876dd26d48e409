"""Contributed samplers (after MXNet 1.9.1's gluon/contrib/data/sampler.py)."""
from ...data import sampler

__all__ = ['IntervalSampler']


class IntervalSampler(sampler.Sampler):
    """Samples the indices of ``[0, length)`` at fixed intervals.

    Parameters
    ----------
    length : int
        Length of the sequence.
    interval : int
        The step between two samples (at most ``length``).
    rollover : bool, default True
        Start again from the first skipped index at the end, until every index is visited;
        else stop at the end. ``len()`` is ``length`` either way, as in MXNet.

    >>> list(IntervalSampler(13, interval=3))
    [0, 3, 6, 9, 12, 1, 4, 7, 10, 2, 5, 8, 11]
    >>> list(IntervalSampler(13, interval=3, rollover=False))
    [0, 3, 6, 9, 12]
    """

    def __init__(self, length, interval, rollover=True):
        for what, v in (('length', length), ('interval', interval)):
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError('IntervalSampler: %s must be an int, got %s'
                                % (what, type(v).__name__))
        if not 0 < interval <= length:
            raise ValueError('IntervalSampler: interval %d must be positive and at most the '
                             'length %d' % (interval, length))
        self._length = length
        self._interval = interval
        self._rollover = rollover

    def __iter__(self):
        for i in range(self._interval if self._rollover else 1):
            yield from range(i, self._length, self._interval)

    def __len__(self):
        return self._length
