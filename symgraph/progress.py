"""Progress lines for long runs: tqdm's bar where tqdm is installed, else one plain line.

:func:`progress` wraps an iterable (``for x in progress(items, len(items), 'packing')``);
:func:`bar` makes a bar to advance by hand (``update``, ``set_postfix``, ``close``), as
``mx.callback.TqdmProgress`` does per batch. Without tqdm (or with ``use_tqdm=False``)
the line is redrawn in place with a carriage return on a terminal, and written as whole
lines at most every few seconds elsewhere (a log file), always once at the end::

    packing: 370/1000 [37%] 812.4 it/s

The module stands on the standard library alone (tqdm is imported when a bar starts), so
any part of the package may report progress through it.

>>> import io
>>> out = io.StringIO()
>>> sum(progress(range(5), desc='adding', file=out, use_tqdm=False))
10
>>> out.getvalue().splitlines()[-1].startswith('adding: 5/5 [100%]')
True
"""
from __future__ import annotations

import importlib
import sys
import time

__all__ = ['progress', 'bar', 'LineBar', 'have_tqdm']


def have_tqdm():
    """Whether the tqdm package can be imported."""
    try:
        importlib.import_module('tqdm')
    except ImportError:
        return False
    return True


class LineBar:
    """A progress line without tqdm, with the part of tqdm's interface a caller here uses:
    ``update(n)``, ``set_postfix(pairs or dict, refresh)``, ``close()``, ``n``, ``total``.

    Parameters
    ----------
    total : int or None
        Items expected (None: counted without a percentage).
    desc : str
        The line's label.
    file : file object
        Where to write (default ``sys.stderr``).
    unit : str
        The items' name in the rate (``'it'``, ``'batch'``, ``'events'``).
    interval : float, optional
        Seconds between redraws (default 0.1 on a terminal, 5 elsewhere).
    """

    def __init__(self, total=None, desc='', file=None, unit='it', interval=None):
        self.total, self.desc, self.unit = total, desc, unit
        self.file = sys.stderr if file is None else file
        try:
            self.tty = bool(self.file.isatty())
        except (AttributeError, ValueError):
            self.tty = False
        self.interval = (0.1 if self.tty else 5.0) if interval is None else interval
        self.n = 0
        self.postfix = ''
        self.start = self._last = time.monotonic()
        self.closed = False

    def update(self, n=1):
        """Count ``n`` more items; redraw where the interval has passed."""
        self.n += n
        now = time.monotonic()
        if now - self._last >= self.interval:
            self._last = now
            self._draw()

    def set_postfix(self, pairs=None, refresh=True, **kwargs):
        """Show ``name=value`` pairs (a dict or a list of pairs, as tqdm takes them) after
        the count."""
        items = list(pairs.items() if isinstance(pairs, dict) else (pairs or ())) + \
            list(kwargs.items())
        self.postfix = ', '.join('%s=%s' % (k, '%.4g' % v if isinstance(v, float) else v)
                                 for k, v in items)
        if refresh:
            self._draw()

    def line(self):
        """The text of the line as it stands."""
        rate = self.n / max(time.monotonic() - self.start, 1e-9)
        count = '%d/%d [%d%%]' % (self.n, self.total, 100 * self.n // self.total) \
            if self.total else '%d' % self.n
        return '%s%s %.1f %s/s%s' % ('%s: ' % self.desc if self.desc else '', count, rate,
                                     self.unit, ' ' + self.postfix if self.postfix else '')

    def _draw(self, end=''):
        if self.tty:
            self.file.write('\r' + self.line() + end)
        else:
            self.file.write(self.line() + '\n')
        self.file.flush()

    def close(self):
        """Draw the final line (once)."""
        if not self.closed:
            self.closed = True
            self._draw(end='\n')


def bar(total=None, desc='', file=None, unit='it', use_tqdm=None, **tqdm_kwargs):
    """A progress bar to advance by hand: tqdm's (with ``tqdm_kwargs``) where tqdm is
    installed and ``use_tqdm`` is not False, else a :class:`LineBar`. ``use_tqdm=True``
    insists on tqdm (an ImportError naming the extra where it is missing)."""
    if use_tqdm is not False:
        try:
            tqdm = importlib.import_module('tqdm')
        except ImportError as e:
            if use_tqdm:
                raise ImportError('the tqdm package is not installed: pip install '
                                  'symgraph[tqdm] (or pip install tqdm)') from e
        else:
            return tqdm.tqdm(total=total, desc=desc or None, file=file, unit=unit,
                             **tqdm_kwargs)
    return LineBar(total, desc, file, unit, tqdm_kwargs.get('mininterval'))


def progress(iterable, total=None, desc='', file=None, unit='it', use_tqdm=None):
    """Yields the items of ``iterable`` while drawing a progress line (see :func:`bar`);
    ``total`` defaults to ``len(iterable)`` where it has one. The line is finished when the
    iteration ends, early or not."""
    if total is None:
        try:
            total = len(iterable)
        except TypeError:
            total = None
    b = bar(total, desc, file, unit, use_tqdm)
    try:
        for item in iterable:
            yield item
            b.update(1)
    finally:
        b.close()
