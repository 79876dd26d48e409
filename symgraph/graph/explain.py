"""Why an entry has its shape: shape inference re-run with a recorder.

:func:`explain_shape` runs the very sweep of :mod:`.infer` (a subclass of its pass, so the
normal inference pays nothing for it) and records every time an entry learnt something:
the node whose step taught it, the operator, the shapes that step saw, which dimensions
became known, and the rule (the operator's ``infer_shape`` at its file:line, or the
elementwise copy of a known output into the inputs, or the shape the user gave). The
answer for one entry is the chain of those records it depends on, in the order they
happened; on a conflict, the two sides that disagreed, each with its own chain.

>>> import symgraph as mx
>>> fc = mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=10, name='fc1')
>>> why = fc.explain_shape('fc1_weight', data=(32, 784))
>>> why.shape
(10, 784)
>>> [r.node for r in why.chain]
['data', 'fc1']
"""
from __future__ import annotations

import functools
import inspect
import os

from ..base import ShapeError, MXNetError, UnknownNameError
from .infer import _Pass, _input_names

__all__ = ['explain_shape', 'ShapeExplanation', 'ShapeRule']

#: the folder above the package: rule locations are shown relative to it
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class ShapeRule:
    """One thing inference learnt: entry ``entry`` (its name) went from ``old`` to ``new``
    (dimensions ``fixed`` became known) at the step of ``node`` (operator ``op``, made at
    ``location``), which saw ``seen`` ([(input or output name, shape or None)]), by
    ``rule`` (words) defined at ``rule_location``. ``kind``: 'given' (the caller's shape),
    'attribute' (a Variable's ``__shape__``), 'rule' (the operator's infer_shape) or
    'copy' (an elementwise operator's known output copied into its inputs)."""

    __slots__ = ('index', 'key', 'entry', 'old', 'new', 'fixed', 'node', 'op', 'location', 'seen',
                 'rule', 'rule_location', 'kind', 'depends', 'claim')

    def __init__(self, **kw):
        for k in self.__slots__:
            setattr(self, k, kw.get(k))

    def __str__(self):
        if self.kind in ('given', 'attribute'):
            return '%s = %s: %s' % (self.entry, _fmt(self.new), self.rule)
        dims = ('dimension%s %s' % ('s' if len(self.fixed) > 1 else '',
                                    ', '.join(map(str, self.fixed)))) if self.fixed else 'nothing'
        seen = ', '.join('%s=%s' % (n, _fmt(s)) for n, s in self.seen)
        if self.claim:      # what a step said against a value already known
            return ('%s would be %s (it holds %s) by node %r (%s, created at %s), which saw '
                    '%s: %s (%s)' % (self.entry, _fmt(self.new), _fmt(self.old), self.node,
                                     self.op, self.location, seen or 'nothing', self.rule,
                                     self.rule_location))
        return ('%s = %s (%s fixed%s) by node %r (%s, created at %s), which saw %s: %s (%s)'
                % (self.entry, _fmt(self.new), dims,
                   '' if self.old is None else ', was %s' % _fmt(self.old), self.node,
                   self.op, self.location, seen or 'nothing', self.rule, self.rule_location))

    def __repr__(self):
        return '<ShapeRule %s = %s by %s>' % (self.entry, _fmt(self.new), self.node)


class ShapeExplanation:
    """The answer of :func:`explain_shape`: ``name``, its ``shape`` (None where inference
    left it unknown, or stopped at a conflict), ``chain`` (the :class:`ShapeRule` records
    the shape depends on, in the order inference made them; the last ones are about
    ``name`` itself) and, where inference failed, ``conflict``: a dict with ``message``,
    ``node`` (whose step failed), ``rule`` (what that step said, a :class:`ShapeRule`, or
    None where the operator's own rule raised) and ``earlier`` (the records the failing
    step disagreed with: what the entry held, or the step's inputs), and ``chain`` (all
    records those depend on)."""

    def __init__(self, name, shape, chain, conflict=None):
        self.name = name
        self.shape = shape
        self.chain = chain
        self.conflict = conflict

    def __str__(self):
        lines = []
        if self.conflict is not None:
            c = self.conflict
            lines.append('Shape inference failed before %s was settled: %s'
                         % (self.name, c['message']))
            lines.append('The rule that disagreed:')
            lines.append('  ' + (str(c['rule']) if c['rule'] is not None else
                                 'node %r (%s, created at %s): %s (%s)'
                                 % (c['node'], c['op'], c['location'], c['said'],
                                    c['rule_location'])))
            lines.append('What it disagreed with:')
            lines += ['  ' + str(r) for r in c['earlier']] or ['  (nothing recorded)']
            lines.append('How those came about:')
            lines += ['  %d. %s' % (i + 1, r) for i, r in enumerate(c['chain'])]
            return '\n'.join(lines)
        lines.append('%s: %s' % (self.name, 'unknown' if self.shape is None
                                 else _fmt(self.shape)))
        if not self.chain:
            lines.append('  nothing tells its shape: give it, or an input it follows from')
        lines += ['  %d. %s' % (i + 1, r) for i, r in enumerate(self.chain)]
        return '\n'.join(lines)

    def __repr__(self):
        return '<ShapeExplanation %s: %s, %d rule(s)%s>' % (
            self.name, _fmt(self.shape), len(self.chain),
            ', conflict' if self.conflict else '')


def _fmt(s):
    return '?' if s is None else str(tuple(s))


def _fixed(old, new):
    """The dimensions known in ``new`` that ``old`` (None: nothing) did not know."""
    if old is None or len(old) != len(new):
        return [d for d, v in enumerate(new) if v]
    return [d for d, (a, b) in enumerate(zip(old, new)) if not a and b]


@functools.lru_cache(maxsize=None)
def _where(fn):
    """'file:line' of a function, relative to the source tree where it lies inside it
    (the function's first line: its code object's, read without the source)."""
    fn = inspect.unwrap(fn)
    try:
        path = inspect.getsourcefile(fn) or fn.__code__.co_filename
        line = fn.__code__.co_firstlineno
    except (TypeError, OSError, AttributeError):
        return getattr(fn, '__qualname__', str(fn))
    rel = os.path.relpath(path, _ROOT)
    return '%s:%d' % (path if rel.startswith('..') else rel, line)


class _Recorder(_Pass):
    """The shape pass of :mod:`.infer`, recording what each merge taught (``records``,
    ``by_key``: key -> indices of its records) and the first conflict (``conflict``).

    The pass calls ``question`` once per rule call, after copying known outputs into the
    inputs and before asking the rule: the recorder marks there where a step's copies end
    and its rule's answer begins."""

    def __init__(self, order):
        super().__init__(order, 'shape')
        self.records = []
        self.by_key = {}
        self.conflict = None
        self._pos = None            # the step being run
        self._seen = None           # (keys, shapes) its rule saw: None while copying
        self._plain_question = self.question
        self.question = self._question
        self.names = {}             # entry key -> its name
        for k, n in enumerate(order):
            for i, name in enumerate(n.output_names()):
                self.names[(k, i)] = name

    def _question(self, values):
        if self._seen is None and self._pos is not None:
            node, _, in_keys, out_keys, _, _, with_outs = self.steps[self._pos]
            keys = list(in_keys) + (list(out_keys) if with_outs else [])
            self._seen = (keys, [self.values.get(k) for k in keys])
        return self._plain_question(values)

    def seed(self, key, value, node, kind):
        self.values[key] = tuple(value)
        self._record(key, None, tuple(value), node, kind, [], [])

    def step(self, pos):
        self._pos, self._seen = pos, None
        try:
            return super().step(pos)
        except ShapeError as e:
            if self.conflict is None:       # the rule itself refused what it saw
                node = self.steps[pos][0]
                keys, shapes = self._seen or self._step_keys(pos)
                self.conflict = dict(message=str(e), node=node.name, op=node.op.name,
                                     location=node.location, rule=None,
                                     said='%s.infer_shape raised' % type(node.op).__name__,
                                     rule_location=_where(type(node.op).infer_shape),
                                     earlier_keys=[k for k, s in zip(keys, shapes)
                                                   if s is not None])
            raise
        finally:
            self._pos = self._seen = None

    def _step_keys(self, pos):
        _, _, in_keys, out_keys, _, _, _ = self.steps[pos]
        keys = list(in_keys) + list(out_keys)
        return keys, [self.values.get(k) for k in keys]

    def merge(self, key, value, node, what):
        old = self.values.get(key)
        try:
            learnt = super().merge(key, value, node, what)
        except ShapeError as e:
            if self.conflict is None:
                rec = self._make(key, old, tuple(value), node, self._kind(), *self._context())
                rec.claim = True
                self.conflict = dict(message=str(e), node=node.name, op=node.op.name,
                                     location=node.location, rule=rec, said=None,
                                     rule_location=rec.rule_location, earlier_keys=[key])
            raise
        if learnt:
            self._record(key, old, self.values[key], node, self._kind(), *self._context())
        return learnt

    def _kind(self):
        return 'rule' if self._seen is not None else 'copy'

    def _context(self):
        """(keys, shapes) the current step's merge depends on: what its rule saw, or, while
        it copies its known outputs into its inputs, those outputs."""
        if self._seen is not None:
            return self._seen
        _, _, _, out_keys, _, back, _ = self.steps[self._pos]
        keys = list(out_keys[:back])
        return keys, [self.values.get(k) for k in keys]

    def _make(self, key, old, new, node, kind, keys, shapes):
        op = node.op
        if kind == 'given':
            rule, where = 'given by the caller', ''
        elif kind == 'attribute':
            rule, where = "the Variable's __shape__ attribute", ''
        elif kind == 'copy':
            rule = '%s is elementwise: a known output shape is every input\'s' % op.name
            where = _where(type(op).infer_shape)
        else:
            rule = '%s.infer_shape' % type(op).__name__
            if isinstance(getattr(op, 'op_type', None), str):     # a Custom operator's prop
                rule = '%s(op_type=%r).infer_shape' % (type(op).__name__, op.op_type)
            where = _where(type(op).infer_shape)
        seen = []
        if kind in ('rule', 'copy'):
            k_node = self.index[id(node)]
            ins = _input_names(node)
            for k, s in zip(keys, shapes):
                if k[0] == k_node:
                    name = 'output %s' % (op.list_outputs()[k[1]]
                                          if k[1] < len(op.list_outputs()) else k[1])
                else:
                    pos = [n for (src, i), n in zip(node.inputs, ins)
                           if (self.index[id(src)], i) == k]
                    name = pos[0] if pos else self.names.get(k, str(k))
                seen.append((name, s))
        deps = [k for k, s in zip(keys, shapes) if s is not None]
        return ShapeRule(index=len(self.records), key=key, entry=self.names.get(key, str(key)),
                         old=old, new=new, fixed=_fixed(old, new), node=node.name,
                         op='Variable' if op is None else op.name, location=node.location,
                         seen=seen, rule=rule, rule_location=where, kind=kind,
                         depends=deps)

    def _record(self, key, old, new, node, kind, keys, shapes):
        rec = self._make(key, old, new, node, kind, keys, shapes)
        self.by_key.setdefault(key, []).append(rec.index)
        self.records.append(rec)

    def chain(self, keys, before=None):
        """The records the entries ``keys`` owe their values to (made before record
        index ``before``), with those they depend on, in the order they were made."""
        want, todo = set(), [(k, before) for k in keys]
        while todo:
            key, limit = todo.pop()
            for i in self.by_key.get(key, ()):
                if (limit is None or i < limit) and i not in want:
                    want.add(i)
                    todo += [(k, i) for k in self.records[i].depends]
        return [self.records[i] for i in sorted(want)]


def explain_shape(order, known, name, given=()):
    """Why the entry ``name`` of the graph ``order`` has its shape, given ``known``
    ({Variable node: shape}, as :func:`~symgraph.graph.infer.infer_shapes` takes it;
    ``given``: the names the caller gave, the others coming from ``__shape__``).

    ``name`` is a Variable's name or an output's (``fc1_output``, ``fc1`` for a node's only
    output). Returns a :class:`ShapeExplanation`; an unknown name is an UnknownNameError
    listing some of the names."""
    rec = _Recorder(order)
    key = _find(rec, order, name)
    for node, value in known.items():
        if value is not None:
            k = (rec.index[id(node)], 0)
            rec.seed(k, value, node, 'given' if node.name in given else 'attribute')
    try:
        rec.run()
    except (ShapeError, MXNetError):
        if rec.conflict is None:
            raise
        c = rec.conflict
        keys = c.pop('earlier_keys')
        # (the record that gave each entry the value the failing step disagreed with)
        c['earlier'] = [rec.records[rec.by_key[k][-1]] for k in keys if k in rec.by_key]
        c['chain'] = rec.chain(keys + (c['rule'].depends if c['rule'] is not None else []))
        return ShapeExplanation(name, rec.values.get(key), rec.chain([key]), c)
    return ShapeExplanation(name, rec.values.get(key), rec.chain([key]))


def _find(rec, order, name):
    """The entry key named ``name``: a node's output name, or the node's name where it has
    one visible output."""
    for key, n in rec.names.items():
        if n == name:
            return key
    for k, node in enumerate(order):
        if node.name == name and node.num_visible_outputs() == 1:
            return (k, 0)
    names = [n.name for n in order if n.op is None] + \
        [rec.names[(k, 0)] for k, n in enumerate(order) if n.op is not None]
    raise UnknownNameError('explain_shape: %r names no input or output of the graph; some '
                           'are %s' % (name, names[:20]))
