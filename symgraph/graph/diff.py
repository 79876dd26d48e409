"""What changed between two graphs: nodes matched by structure and by name, and the
parameters whose shapes or values differ.

:func:`diff_graphs` matches the nodes of graph B to those of graph A in steps, the surest
first:

1. from the inputs forward, each operator of B (in topological order) to an unmatched one
   of A with the same operator and attributes whose inputs are the matches of its own (an
   input Variable not paired yet is a wildcard, then paired with A's: renamed weights
   follow their layer), the nearest in position among equals: so a graph whose automatic
   names shifted by one (``convolution3`` for ``convolution4``), or whose prefix changed,
   matches node for node;
2. the operators left, aligned as sequences in topological order by operator and
   attributes (:class:`difflib.SequenceMatcher`): units inserted into or removed from a
   chain of layers leave the layers around them in step (ResNet-18 against ResNet-34);
3. to a fixed point: the same forward step, from the outputs backward (an unmatched
   operator read where its match's reader in A reads an unmatched one), and forward again
   loosely (an input inserted or removed before a node); then, one pair at a time with
   step 3 run again after each, operators whose attributes changed;
4. what is left by name (without each graph's common prefix), Variables last.

Unmatched nodes of A are removed, of B added; matched ones may differ in operator,
attributes or inputs, or only in name. The text report is here.

The SVG drawing is :mod:`symgraph.viz.diff`'s.
"""
from __future__ import annotations

import difflib
import os

import numpy as np

from ..base import ArgumentTypeError
from ..opdef import format_value, param_names

__all__ = ['diff_graphs', 'GraphDiff', 'NodeChange', 'ParamChange']


class NodeChange:
    """A matched pair of nodes that differ: ``a`` and ``b`` (the nodes), ``name_a`` /
    ``name_b``, ``op`` ((A's, B's) operator names, or None where equal), ``attrs``
    ({key: (A's value or None, B's value or None)}) and ``inputs`` ([(position, A's input
    name or None, B's input name or None)] where they do not correspond)."""

    __slots__ = ('a', 'b', 'name_a', 'name_b', 'op', 'attrs', 'inputs')

    def __init__(self, a, b, op, attrs, inputs):
        self.a, self.b = a, b
        self.name_a, self.name_b = a.name, b.name
        self.op, self.attrs, self.inputs = op, attrs, inputs

    @property
    def renamed(self):
        return self.name_a != self.name_b

    def __str__(self):
        head = self.name_b if not self.renamed else '%s (was %s)' % (self.name_b, self.name_a)
        parts = []
        if self.op:
            parts.append('operator %s -> %s' % self.op)
        for k, (x, y) in sorted(self.attrs.items()):
            parts.append('%s: %s -> %s' % (k, '(unset)' if x is None else x,
                                          '(unset)' if y is None else y))
        for j, x, y in self.inputs:
            parts.append('input %d: %s -> %s' % (j, x or '(none)', y or '(none)'))
        return '%s: %s' % (head, '; '.join(parts))


class ParamChange:
    """A parameter that differs: ``name_a`` / ``name_b`` (None where one side lacks it),
    ``shape_a`` / ``shape_b`` and ``max_abs_diff`` (None where the shapes differ or a side
    is missing)."""

    __slots__ = ('name_a', 'name_b', 'shape_a', 'shape_b', 'max_abs_diff')

    def __init__(self, name_a, name_b, shape_a, shape_b, max_abs_diff):
        self.name_a, self.name_b = name_a, name_b
        self.shape_a, self.shape_b, self.max_abs_diff = shape_a, shape_b, max_abs_diff

    def __str__(self):
        name = self.name_b or self.name_a
        if self.name_a and self.name_b and self.name_a != self.name_b:
            name = '%s (was %s)' % (self.name_b, self.name_a)
        if self.name_a is None:
            return '%s: only in B, shape %s' % (name, self.shape_b)
        if self.name_b is None:
            return '%s: only in A, shape %s' % (name, self.shape_a)
        if self.shape_a != self.shape_b:
            return '%s: shape %s -> %s' % (name, self.shape_a, self.shape_b)
        return '%s: values differ, max abs diff %.6g' % (name, self.max_abs_diff)


class GraphDiff:
    """The result of :func:`diff_graphs`. ``order_a`` / ``order_b``: both graphs' nodes in
    topological order; ``match``: {id(node of B): node of A}; ``added`` (nodes of B),
    ``removed`` (nodes of A), ``changed`` (:class:`NodeChange`, operator, attributes or
    inputs differ), ``renamed`` (:class:`NodeChange` that differ in name alone), ``params``
    (:class:`ParamChange`; empty where no parameters were given)."""

    def __init__(self, order_a, order_b, match, added, removed, changed, renamed, params):
        self.order_a, self.order_b, self.match = order_a, order_b, match
        self.added, self.removed, self.changed = added, removed, changed
        self.renamed, self.params = renamed, params

    @property
    def same(self):
        """True where nothing but names differ."""
        return not (self.added or self.removed or self.changed or self.params)

    def status(self, node):
        """'added', 'removed', 'changed', 'renamed' or 'same' for a node of either graph."""
        if getattr(self, '_status', None) is None:
            st = {}
            for c in self.renamed:
                st[id(c.a)] = st[id(c.b)] = 'renamed'
            for c in self.changed:
                st[id(c.a)] = st[id(c.b)] = 'changed'
            st.update((id(n), 'added') for n in self.added)
            st.update((id(n), 'removed') for n in self.removed)
            self._status = st
        return self._status.get(id(node), 'same')

    def text(self, renames=True):
        """The differences as lines of text (``renames``: list the renamed nodes too)."""
        lines = ['Graph diff: %d node(s) in A, %d in B; %d matched, %d added, %d removed, '
                 '%d changed, %d renamed only'
                 % (len(self.order_a), len(self.order_b), len(self.match), len(self.added),
                    len(self.removed), len(self.changed), len(self.renamed))]
        for title, nodes, sign in (('Added (in B only)', self.added, '+'),
                                   ('Removed (in A only)', self.removed, '-')):
            if nodes:
                lines.append(title + ':')
                for n in nodes:
                    lines.append('  %s %s (%s)%s' % (
                        sign, n.name, 'Variable' if n.op is None else n.op.name,
                        '' if n.op is None else ' <- ' + ', '.join(_entry_name(s, i)
                                                                     for s, i in n.inputs)))
        if self.changed:
            lines.append('Changed:')
            lines += ['  ~ %s' % c for c in self.changed]
        if self.renamed and renames:
            lines.append('Renamed only (same operator, attributes and inputs):')
            lines += ['  = %s -> %s' % (c.name_a, c.name_b) for c in self.renamed]
        if self.params:
            lines.append('Parameters:')
            lines += ['  * %s' % p for p in self.params]
        if self.same:
            lines.append('No differences%s.' % (' but names' if self.renamed else ''))
        return '\n'.join(lines)

    def __str__(self):
        return self.text()

    def __repr__(self):
        return '<GraphDiff +%d -%d ~%d =%d params %d>' % (
            len(self.added), len(self.removed), len(self.changed), len(self.renamed),
            len(self.params))


def _entry_name(node, i):
    names = node.output_names()
    return names[i] if i < len(names) else '%s[%d]' % (node.name, i)


def node_attrs(node):
    """{key: string value} of a node: its operator's typed parameters as MXNet writes
    them, and the other attributes (``__dunder__`` ones, a Custom operator's keywords) as
    given. A Variable's are its ``__dunder__`` attributes alone (the plain ones a weight
    inherits from its layer are the layer's)."""
    op = node.op
    if op is None:
        return {k: v for k, v in node.attrs.items() if k.startswith('__')}
    out = {}
    for k in param_names(type(op)):
        out[k] = format_value(getattr(op, k, None))
    for k, v in node.attrs.items():
        out.setdefault(k, v)
    return out


def diff_graphs(order_a, order_b, params_a=None, params_b=None, rtol=0.0, heads_a=None,
                heads_b=None):
    """Match graph B's nodes (``order_b``, topologically ordered) to graph A's and list
    what differs (a :class:`GraphDiff`). ``params_a`` / ``params_b``: {name: array} (names
    as a checkpoint writes them, ``arg:``/``aux:`` prefixes allowed; arrays anything with
    ``asnumpy()`` or NumPy arrays); parameters are paired through the matched Variables,
    and a pair is listed where the shapes differ or the largest absolute difference of the
    values exceeds ``rtol`` times the largest absolute value of A's. ``heads_a`` /
    ``heads_b``: the output nodes (default: the nodes nothing reads), paired by position
    where their operators agree."""
    attrs_a = {id(n): node_attrs(n) for n in order_a}
    attrs_b = {id(n): node_attrs(n) for n in order_b}
    pos_a = {id(n): k for k, n in enumerate(order_a)}
    pos_b = {id(n): k for k, n in enumerate(order_b)}
    # names without each graph's common prefix (a Gluon export's 'resnetv10_'), for the
    # tie-breaks and the matches by name
    key_a, key_b = _name_keys(order_a), _name_keys(order_b)
    match, taken = {}, set()

    def pair(b, a):
        match[id(b)] = a
        taken.add(id(a))
        if b.op is not None and a.op is not None:
            _pair_inputs(b, a, match, taken)

    by_op = {}
    for n in order_a:
        if n.op is not None:
            by_op.setdefault(n.op.name, []).append(n)

    def fits(b, a, loose):
        """How many inputs of ``b`` and ``a`` correspond, or None where the pair is ruled
        out. Strictly every input must correspond (an input Variable not paired yet on
        both sides is a wildcard); loosely, an unmatched input of B (a node inserted
        there) or of A (one removed) passes too, but an input matched elsewhere on both
        sides must be outweighed by inputs that correspond."""
        if len(a.inputs) != len(b.inputs):
            return None
        hits = misses = 0
        for (sb, ib), (sa, ia) in zip(b.inputs, a.inputs):
            m = match.get(id(sb))
            if m is sa and ib == ia:
                hits += 1
            elif m is None and sb.op is None and sa.op is None and id(sa) not in taken:
                hits += key_b[id(sb)] == key_a[id(sa)]  # a Variable not paired yet: a wildcard
            elif not loose:
                return None
            elif m is not None and id(sa) in taken:
                misses += 1
        if misses > hits:
            return None
        return hits

    def forward(loose, same_attrs):
        """One sweep over B's unmatched operators, inputs first: each paired with the best
        unmatched operator of A that fits (most inputs corresponding, then equal
        attributes, the same name, the nearest position)."""
        found = False
        for b in order_b:
            if b.op is None or id(b) in match:
                continue
            ab, scored = attrs_b[id(b)], []
            for a in by_op.get(b.op.name, ()):
                if id(a) in taken:
                    continue
                aa = attrs_a[id(a)]
                if same_attrs and aa != ab:
                    continue
                hits = fits(b, a, loose)
                if hits is None:
                    continue
                equal = sum(aa.get(k) == v for k, v in ab.items()) - \
                    sum(k not in ab for k in aa)
                scored.append(((-hits, -equal, key_a[id(a)] != key_b[id(b)],
                                abs(pos_a[id(a)] - pos_b[id(b)]), pos_a[id(a)]), a))
            if scored:
                pair(b, min(scored, key=lambda t: t[0])[1])
                found = True
        return found

    heads_a = _sinks(order_a) if heads_a is None else list(heads_a)
    heads_b = _sinks(order_b) if heads_b is None else list(heads_b)

    def backward(same_attrs):
        """From the outputs backward: an unmatched operator of B read where its match's
        reader in A reads an unmatched one of the same operator (the outputs themselves
        pair by position)."""
        found = False
        todo = list(zip(heads_b, heads_a))
        for c in reversed(order_b):
            ca = match.get(id(c))
            if c.op is not None and ca is not None and ca.op is not None:
                todo += [(sb, sa) for (sb, ib), (sa, ia) in zip(c.inputs, ca.inputs)
                         if ib == ia]
        for sb, sa in todo:
            if id(sb) in match or id(sa) in taken or sb.op is None or sa.op is None \
                    or sb.op.name != sa.op.name \
                    or (same_attrs and attrs_a[id(sa)] != attrs_b[id(sb)]):
                continue
            pair(sb, sa)
            found = True
        return found

    def settle():
        """The sure matches (equal attributes) to a fixed point: strictly forward, from
        the outputs backward, loosely forward (a node inserted or removed before)."""
        while forward(False, True) or backward(True) or forward(True, True):
            pass

    def align():
        """The operators left, aligned as sequences in topological order by operator and
        attributes (difflib's longest matching runs): blocks of layers inserted or
        removed leave the layers around them in step."""
        left_a = [n for n in order_a if n.op is not None and id(n) not in taken]
        left_b = [n for n in order_b if n.op is not None and id(n) not in match]
        sig = lambda n, attrs: (n.op.name, tuple(sorted(attrs[id(n)].items())))  # noqa: E731
        sm = difflib.SequenceMatcher(None, [sig(n, attrs_a) for n in left_a],
                                     [sig(n, attrs_b) for n in left_b], autojunk=False)
        for i, j, size in sm.get_matching_blocks():
            for a, b in zip(left_a[i:i + size], left_b[j:j + size]):
                pair(b, a)

    # 1. operators with equal attributes and inputs, from the inputs forward; the rest
    # aligned by sequence; then, one at a time with the sure ones settled after each,
    # those whose attributes changed (strictly forward, then backward)
    while forward(False, True):
        pass
    align()
    settle()
    while forward(False, False) or backward(False):
        settle()
    # 2. what is left by name (without the graph's common prefix), then settled again
    name_a = {}
    for n in order_a:
        name_a.setdefault(key_a[id(n)], n)
    for b in order_b:
        a = name_a.get(key_b[id(b)])
        if b.op is not None and id(b) not in match and a is not None \
                and a.op is not None and id(a) not in taken:
            pair(b, a)
            settle()
    # 3. Variables no operator paired: by name
    for b in order_b:
        a = name_a.get(key_b[id(b)])
        if b.op is None and id(b) not in match and a is not None and a.op is None \
                and id(a) not in taken:
            pair(b, a)

    # 5. what differs
    added = [n for n in order_b if id(n) not in match]
    removed = [n for n in order_a if id(n) not in taken]
    changed, renamed = [], []
    for b in order_b:
        a = match.get(id(b))
        if a is None:
            continue
        op = None
        if (a.op is None) != (b.op is None) or (a.op is not None and a.op.name != b.op.name):
            op = ('Variable' if a.op is None else a.op.name,
                  'Variable' if b.op is None else b.op.name)
        aa, ab = attrs_a[id(a)], attrs_b[id(b)]
        attrs = {k: (aa.get(k), ab.get(k)) for k in set(aa) | set(ab)
                 if aa.get(k) != ab.get(k)}
        inputs = []
        for j in range(max(len(a.inputs), len(b.inputs))):
            ea = a.inputs[j] if j < len(a.inputs) else None
            eb = b.inputs[j] if j < len(b.inputs) else None
            if ea is not None and eb is not None and match.get(id(eb[0])) is ea[0] \
                    and ea[1] == eb[1]:
                continue
            inputs.append((j, ea and _entry_name(*ea), eb and _entry_name(*eb)))
        c = NodeChange(a, b, op, attrs, inputs)
        if op or attrs or inputs:
            changed.append(c)
        elif a.name != b.name:
            renamed.append(c)
    params = _diff_params(order_a, order_b, match, params_a, params_b, rtol) \
        if params_a is not None or params_b is not None else []
    return GraphDiff(order_a, order_b, match, added, removed, changed, renamed, params)


def _sinks(order):
    """The nodes of ``order`` that no other node reads, in order."""
    read = {id(s) for n in order for s, _ in n.inputs}
    return [n for n in order if id(n) not in read]


def _name_keys(order):
    """{id(node): its name without the prefix that every name of the graph shares, cut
    after its last '_'} (the names themselves where that leaves any empty)."""
    names = [n.name for n in order]
    common = os.path.commonprefix(names) if len(names) > 1 else ''
    cut = common.rfind('_') + 1
    if cut and all(len(x) > cut for x in names):
        return {id(n): n.name[cut:] for n in order}
    return {id(n): n.name for n in order}


def _pair_inputs(b, a, match, taken):
    """Pairs the unmatched input Variables of matched operators ``b`` and ``a`` position
    by position (renamed weights)."""
    for (sb, _), (sa, _) in zip(b.inputs, a.inputs):
        if sb.op is None and sa.op is None and id(sb) not in match and id(sa) not in taken:
            match[id(sb)] = sa
            taken.add(id(sa))


def _as_numpy(v, name):
    if hasattr(v, 'asnumpy'):
        return v.asnumpy()
    if isinstance(v, np.ndarray):
        return v
    raise ArgumentTypeError('parameter %r must be an array, got %s' % (name, type(v).__name__))


def _strip(params):
    """{name without ``arg:``/``aux:``: array}."""
    out = {}
    for k, v in (params or {}).items():
        name = k.split(':', 1)[1] if k.startswith(('arg:', 'aux:')) else k
        out[name] = _as_numpy(v, k)
    return out


def _diff_params(order_a, order_b, match, params_a, params_b, rtol):
    pa, pb = _strip(params_a), _strip(params_b)
    # B's name -> A's name through the matched Variables (renamed weights), else the same
    to_a = {b.name: match[id(b)].name for b in order_b
            if b.op is None and id(b) in match}
    out, seen_a = [], set()
    for nb, vb in pb.items():
        na = to_a.get(nb, nb)
        va = pa.get(na)
        if va is None:
            out.append(ParamChange(None, nb, None, vb.shape, None))
            continue
        seen_a.add(na)
        if va.shape != vb.shape:
            out.append(ParamChange(na, nb, va.shape, vb.shape, None))
            continue
        if va.size == 0:
            continue
        d = float(np.max(np.abs(va.astype(np.float64) - vb.astype(np.float64))))
        scale = float(np.max(np.abs(va.astype(np.float64))))
        if d > rtol * scale or (d > 0 and rtol == 0) or np.isnan(d):
            out.append(ParamChange(na, nb, va.shape, vb.shape, d))
    for na, va in pa.items():
        if na not in seen_a:
            out.append(ParamChange(na, None, va.shape, None, None))
    return out
