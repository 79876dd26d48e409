"""``mx.viz.diff``: two graphs compared (:mod:`symgraph.graph.diff` matches them), as text
and as an SVG drawing of the union of both with the changes coloured.

The drawing is made here, without Graphviz: layers by depth from the inputs, each layer
ordered by the mean position of its inputs (one sweep), edges as curves. Nodes of B only
are green, of A only red (dashed), changed ones orange (with what changed), renamed ones
show both names; parameter Variables are drawn only where they changed, or were added or
removed without the layer that reads them.

>>> import symgraph as mx
>>> a = mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=4, name='fc')
>>> b = mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=8, name='fc')
>>> print(mx.viz.diff(a, b).text())
Graph diff: 4 node(s) in A, 4 in B; 4 matched, 0 added, 0 removed, 1 changed, 0 renamed only
Changed:
  ~ fc: num_hidden: 4 -> 8
"""
from __future__ import annotations

from ..base import ArgumentTypeError
from ..graph.diff import GraphDiff, diff_graphs
from .svg import Svg

__all__ = ['diff', 'DiffResult']

#: fill, stroke and dash of each status
_STYLE = {'added': ('#d9f2d9', '#2e8b2e', None), 'removed': ('#f8d7d7', '#c0392b', '5,3'),
          'changed': ('#fde7c8', '#d9822b', None), 'renamed': ('#eef2f7', '#7f8c9d', None),
          'same': ('#ffffff', '#7f8c9d', None)}
_BOX_W, _BOX_H, _GAP_X, _GAP_Y, _TOP = 220, 48, 22, 34, 64


class DiffResult(GraphDiff):
    """:class:`~symgraph.graph.diff.GraphDiff` with an SVG drawing: :meth:`svg`, and
    ``_repr_svg_`` for notebooks."""

    def svg(self, title='graph diff'):
        """The SVG document (a string) of both graphs in one drawing, changes coloured."""
        return _draw(self, title)

    def _repr_svg_(self):
        return self.svg()

    def save_svg(self, fname, title='graph diff'):
        """Writes :meth:`svg` to ``fname``."""
        from ..base import atomic_write
        with atomic_write(fname, 'w') as f:
            f.write(self.svg(title))


def _graph(sym, which):
    try:
        return sym.graph(check_names=False)
    except (AttributeError, TypeError):
        raise ArgumentTypeError('diff: %s must be a Symbol, got %s'
                                % (which, type(sym).__name__)) from None


def diff(sym_a, sym_b, params_a=None, params_b=None, rtol=0.0):
    """What changed from ``sym_a`` to ``sym_b``: nodes added, removed and changed
    (operator, attributes, inputs), matched by structure where automatic names shifted or
    a prefix changed, and, given ``params_a`` / ``params_b`` ({name: NDArray or NumPy
    array}, ``arg:``/``aux:`` prefixes allowed), the parameters whose shapes differ or
    whose values differ by more than ``rtol`` of A's largest magnitude (max abs diff).

    Returns a :class:`DiffResult`: ``str()`` / ``.text()`` the report, ``.svg()`` the
    drawing; ``.added``, ``.removed``, ``.changed``, ``.renamed``, ``.params``."""
    ga, gb = _graph(sym_a, 'sym_a'), _graph(sym_b, 'sym_b')
    got = diff_graphs(ga.order, gb.order, params_a, params_b, rtol,
                      [n for n, _ in ga.outputs], [n for n, _ in gb.outputs])
    got.__class__ = DiffResult
    return got


def _is_param(node, readers):
    """A Variable only ever read as a later input (a weight, a bias, a running
    statistic), not as data."""
    return node.op is None and readers.get(id(node)) and all(j > 0 for j in readers[id(node)])


def _draw(d, title):
    status = {}
    for n in d.order_b:
        status[id(n)] = d.status(n)
    for n in d.removed:
        status[id(n)] = 'removed'
    back = {id(a): b for b, a in ((b, d.match[id(b)]) for b in d.order_b if id(b) in d.match)}
    # the union: B's nodes, then A's removed ones; edges of B, and A's edges at removed nodes
    nodes = list(d.order_b) + list(d.removed)
    removed_ids = {id(n) for n in d.removed}

    def as_union(n):                    # a node of A as the union's node
        return n if id(n) in removed_ids else back.get(id(n), n)
    edges = [(s, n, 'b') for n in d.order_b for s, _ in n.inputs]
    in_b = {(id(s), id(n)) for s, n, _ in edges}
    # A's edges that B lacks (at removed nodes, or an input replaced): drawn dashed
    for n in d.order_a:
        for s, _ in n.inputs:
            us, un = as_union(s), as_union(n)
            if (id(us), id(un)) not in in_b:
                in_b.add((id(us), id(un)))
                edges.append((us, un, 'a'))
    readers = {}            # id(node) -> the input positions it is read at
    reader_status = {}      # id(node) -> the statuses of the nodes that read it
    for n in nodes:
        for j, (src, _) in enumerate(n.inputs):
            src = as_union(src) if id(n) in removed_ids else src
            readers.setdefault(id(src), []).append(j)
            reader_status.setdefault(id(src), set()).add(status[id(n)])

    def hidden(n):
        # a parameter drawn only where it tells something: changed, or added or removed
        # on its own (not with the layer that reads it)
        if not _is_param(n, readers):
            return False
        st = status[id(n)]
        return st in ('same', 'renamed') or reader_status.get(id(n)) == {st}
    shown = [n for n in nodes if not hidden(n)]
    shown_ids = {id(n) for n in shown}
    edges = [(s, n, w) for s, n, w in edges if id(s) in shown_ids and id(n) in shown_ids]
    ins = {}
    for s, n, _ in edges:
        ins.setdefault(id(n), []).append(s)
    # layers by depth (B's order, then A's, is topological for the union: a removed node's
    # inputs come before it in A's order; place by repeated relaxation, bounded)
    depth = {id(n): 0 for n in shown}
    for _ in range(2):
        for n in shown:
            for s in ins.get(id(n), ()):
                depth[id(n)] = max(depth[id(n)], depth[id(s)] + 1)
    # an input Variable sits just above its first reader, not in the top row
    outs = {}
    for s_, n, _ in edges:
        outs.setdefault(id(s_), []).append(n)
    for n in shown:
        if n.op is None and outs.get(id(n)):
            depth[id(n)] = max(0, min(depth[id(c)] for c in outs[id(n)]) - 1)
    layers = {}
    for n in shown:
        layers.setdefault(depth[id(n)], []).append(n)
    x_of = {}
    for k in sorted(layers):
        row = layers[k]
        if k:
            def bary(n):
                xs = [x_of[id(s)] for s in ins.get(id(n), ()) if id(s) in x_of]
                return sum(xs) / len(xs) if xs else 0.0
            row.sort(key=bary)
        for i, n in enumerate(row):
            x_of[id(n)] = i
    width = max(len(r) for r in layers.values()) if layers else 1
    W = width * (_BOX_W + _GAP_X) + _GAP_X
    H = _TOP + len(layers) * (_BOX_H + _GAP_Y) + _GAP_Y
    svg = Svg(max(W, 640), H, title)
    pos = {}
    for k, row in layers.items():
        off = (max(W, 640) - len(row) * (_BOX_W + _GAP_X) + _GAP_X) / 2
        for i, n in enumerate(row):
            pos[id(n)] = (off + i * (_BOX_W + _GAP_X), _TOP + k * (_BOX_H + _GAP_Y))
    _legend(svg, d)
    for s, n, which in edges:
        x1, y1 = pos[id(s)]
        x2, y2 = pos[id(n)]
        x1, y1, x2 = x1 + _BOX_W / 2, y1 + _BOX_H, x2 + _BOX_W / 2
        mid = (y1 + y2) / 2
        gone = which == 'a'
        new = which == 'b' and (status[id(n)] == 'added' or status[id(s)] == 'added')
        colour = '#c0392b' if gone else '#2e8b2e' if new else '#8c96a3'
        # an edge that skips layers, or one of A's alone, bows aside so that it passes
        # beside the boxes and B's edges rather than over them
        skip = round((y2 - y1) / float(_BOX_H + _GAP_Y)) - 1     # layers skipped
        bow = (1 if gone else -1) * 0.9 * _BOX_W if (gone or skip > 0) and \
            abs(x1 - x2) < _BOX_W else 0
        svg.path('M%.1f,%.1f C%.1f,%.1f %.1f,%.1f %.1f,%.1f'
                 % (x1, y1, x1 + bow, mid, x2 + bow, mid, x2, y2),
                 fill='none', stroke=colour, stroke_width=1.3,
                 stroke_dasharray='5,3' if gone else None)
    changes = {id(c.b): c for c in d.changed + d.renamed}
    param_changes = {}          # B's parameter name -> its ParamChange
    for p in d.params:
        if p.name_b is not None:
            param_changes.setdefault(p.name_b, []).append(p)
    for n in shown:
        x, y = pos[id(n)]
        st = status[id(n)]
        fill, stroke, dash = _STYLE[st]
        c = changes.get(id(n))
        moved = [p for src, _ in n.inputs for p in param_changes.get(src.name, ())]
        tip = '%s: %s%s' % (st, c if c is not None else n.name,
                            ''.join('\nparameter %s' % p for p in moved))
        svg.rect(x, y, _BOX_W, _BOX_H, tip=tip, rx=6, fill=fill, stroke=stroke,
                 stroke_width=1.6 if st != 'same' else 1, stroke_dasharray=dash)
        svg.text(x + _BOX_W / 2, y + 15, _clip(n.name, 32), text_anchor='middle',
                 font_size=11, font_weight='bold')
        sub = 'Variable' if n.op is None else n.op.name
        if c is not None and st == 'changed':
            sub = '; '.join(['%s %s->%s' % (k, a, b) for k, (a, b) in sorted(c.attrs.items())]
                            + (['%s->%s' % c.op] if c.op else [])
                            + (['input %s' % ','.join(str(j) for j, _, _ in c.inputs)]
                               if c.inputs else [])) or sub
        svg.text(x + _BOX_W / 2, y + 29, _clip(sub, 36), text_anchor='middle', font_size=10,
                 fill='#333333')
        notes = []
        if c is not None and c.renamed:
            notes.append(('was ' + c.name_a, '#666666'))
        if moved:
            notes.append(('params: ' + ', '.join(_param_note(p) for p in moved), '#7d3c98'))
        if notes:
            text, colour = notes[-1] if len(notes) == 1 or not moved else (
                '%s; %s' % (notes[0][0], notes[1][0]), '#7d3c98')
            svg.text(x + _BOX_W / 2, y + 42, _clip(text, 40), text_anchor='middle',
                     font_size=9, fill=colour, font_style='italic')
    return str(svg)


def _legend(svg, d):
    x = 12
    svg.text(x, 20, 'A -> B: %d added, %d removed, %d changed, %d renamed only%s'
             % (len(d.added), len(d.removed), len(d.changed), len(d.renamed),
                '; %d parameter(s) differ' % len(d.params) if d.params else ''),
             font_size=13)
    for label in ('added', 'removed', 'changed', 'renamed', 'same'):
        fill, stroke, dash = _STYLE[label]
        svg.rect(x, 32, 14, 14, fill=fill, stroke=stroke, stroke_dasharray=dash)
        svg.text(x + 19, 44, label, font_size=11)
        x += 90


def _param_note(p):
    short = p.name_b.rsplit('_', 1)[-1]
    if p.name_a is None:
        return '%s new' % short
    if p.shape_a != p.shape_b:
        return '%s %s->%s' % (short, 'x'.join(map(str, p.shape_a or ())) or '-',
                              'x'.join(map(str, p.shape_b or ())))
    return '%s |d|<=%.3g' % (short, p.max_abs_diff)


def _clip(s, n):
    return s if len(s) <= n else s[:n - 1] + '\u2026'
