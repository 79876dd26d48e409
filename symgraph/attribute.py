"""Attribute scopes (MXNet's ``mx.AttrScope``)."""
import collections
import threading

from .base import ArgumentError, ArgumentTypeError
from .name import _CurrentMeta

__all__ = ['AttrScope']

#: plain (non-dunder) keys MXNet accepts in attributes; each is stored twice,
#: as ``key`` and ``__key__``
PLAIN_KEYS = ('ctx_group', 'lr_mult', 'wd_mult', 'force_mirroring', 'mirror_stage')


def check_attrs(attrs):
    """Validate user attributes and return them as MXNet stores them (strings).

    ``__dunder__`` keys are kept as they are; the plain keys MXNet knows (``lr_mult``...)
    are stored as ``__key__`` (reading shows both spellings, see :func:`with_plain_copies`);
    other plain keys are kept as given (an operator node then rejects them as unknown
    parameters, as MXNet does).
    """
    out = {}
    for k, v in (attrs or {}).items():
        if not isinstance(k, str):
            raise ArgumentTypeError('attribute names must be strings, got %r' % (k,))
        out['__%s__' % k if k in PLAIN_KEYS else k] = str(v)
    return out


def with_plain_copies(attrs):
    """``attrs`` plus ``key`` for every stored ``__key__`` of MXNet's plain keys."""
    out = dict(attrs)
    for k in PLAIN_KEYS:
        if '__%s__' % k in attrs:
            out[k] = attrs['__%s__' % k]
    return out


def plain_keys(attrs):
    """Attribute keys that are neither ``__dunder__`` nor one of MXNet's known plain keys."""
    return [k for k in attrs if not (k.startswith('__') and k.endswith('__'))
            and k not in PLAIN_KEYS]


class AttrScope(metaclass=_CurrentMeta):
    """Attributes given to every symbol created inside the scope.

    >>> import symgraph as mx
    >>> with mx.AttrScope(ctx_group='dev1'):
    ...     mx.sym.var('w').attr('ctx_group')
    'dev1'
    """

    _current = threading.local()
    #: how many subgraphs of each name the control-flow builders (mx.sym.contrib.foreach,
    #: while_loop, cond) have made, for their unique names (MXNet's class attribute; its
    #: tests reset it by assigning a new defaultdict)
    _subgraph_names = collections.defaultdict(int)

    def __init__(self, **kwargs):
        for v in kwargs.values():
            if not isinstance(v, str):
                raise ArgumentError('Attributes need to be string')
        self._attr = check_attrs(kwargs)
        self._old = None

    def get(self, attr):
        """Merge the scope's attributes with ``attr`` (``attr`` wins)."""
        if not self._attr:
            return dict(attr) if attr else {}
        ret = dict(self._attr)
        if attr:
            ret.update(attr)
        return ret

    def __enter__(self):
        self._old = AttrScope._get_current()
        merged = dict(self._old._attr)
        merged.update(self._attr)
        self._attr = merged
        AttrScope._current.value = self
        return self

    def __exit__(self, *exc):
        AttrScope._current.value = self._old

    @staticmethod
    def _get_current():
        v = getattr(AttrScope._current, 'value', None)
        if v is None:
            v = AttrScope._current.value = AttrScope()
        return v


AttrScope._scope = AttrScope
