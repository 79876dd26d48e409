"""``mx.viz.plot_memory``: an executor's storage plan drawn over its step.

The x axis is the run: the forward steps, then the backward ones (as the storage plan
counts them, :func:`symgraph.graph.storage.plan_storage`); the y axis bytes. Each buffer
of the arena is a band at its offset over its lifetime (activations blue, gradients
orange, the scratch lent around a step grey); above the arena, the arrays the operators
return themselves (not buffers) are stacked at each step where they are alive. The top of
that stack at the fullest step is the plan's peak (``Storage.peak_bytes``, what
``exe.debug_str()`` prints as ``planned_bytes``); the report names the node of that step
(its operator and the user's file:line) and what liveness reuse and in-place sharing saved:
the arena without any sharing, with liveness reuse alone, and with in-place pairs too.

>>> import symgraph as mx
>>> net = mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=8, name='fc')
>>> net = mx.sym.Activation(net, act_type='relu', name='relu')
>>> exe = net.simple_bind(mx.cpu(), data=(4, 16))
>>> mp = mx.viz.plot_memory(exe)
>>> mp.peak_bytes == exe._plan.storage().peak_bytes
True
>>> mp.svg().startswith('<?xml')
True
"""
from __future__ import annotations

from ..base import ArgumentTypeError
from ..graph import storage as _storage
from .svg import Svg

__all__ = ['plot_memory', 'MemoryPlot']

_ALIGN = 64


def _aligned(n):
    return -(-n // _ALIGN) * _ALIGN


class Band:
    """One array over the run: ``name``, ``kind`` ('activation', 'gradient', 'scratch' or
    'array': returned by its operator, no buffer), ``first`` / ``last`` step, ``nbytes``,
    ``offset`` in the arena (None for arrays of their own), ``inplace_of`` (the name of
    the buffer whose storage it takes over in place, or None)."""

    __slots__ = ('name', 'kind', 'first', 'last', 'nbytes', 'offset', 'inplace_of')

    def __init__(self, name, kind, first, last, nbytes, offset=None, inplace_of=None):
        self.name, self.kind, self.first, self.last = name, kind, first, last
        self.nbytes, self.offset, self.inplace_of = nbytes, offset, inplace_of

    def __repr__(self):
        return '<Band %s %s [%d, %d] %d B @%s>' % (self.kind, self.name, self.first,
                                                   self.last, self.nbytes, self.offset)


class MemoryPlot:
    """What :func:`plot_memory` found: ``steps`` [(label, node name, operator, file:line)]
    (forward, then backward, then 'end'), ``bands`` (:class:`Band`), ``arena_bytes``,
    ``peak_bytes`` (the planned peak: the arena and the most bytes of the operators'
    own arrays alive at one step, ``peak_step``), ``live`` (bytes in use at each step:
    buffers alive and arrays alive), ``live_peak_step``, ``unshared_bytes`` (every buffer
    in storage of its own), ``reuse_bytes`` (arena with liveness reuse but no in-place
    pairs), ``naive_bytes`` (every array of the run in storage of its own), ``measured``
    (the executor's measured peak bytes of its last run, or None where it was not traced).
    ``str()`` is the text report, :meth:`svg` the drawing."""

    def __init__(self, **kw):
        self.__dict__.update(kw)

    def node_at(self, step):
        """(label, node name, operator, file:line) of a step of the run."""
        return self.steps[step]

    def text(self, top=10):
        """The report, with the ``top`` largest buffers."""
        n_fwd = self.n_forward
        lines = ['Memory plan: %d forward step(s), %d backward step(s), %d buffer(s) in one '
                 'arena, %d array(s) of their own'
                 % (n_fwd, len(self.steps) - n_fwd - 1,
                    sum(b.kind in ('activation', 'gradient') for b in self.bands),
                    sum(b.kind == 'array' for b in self.bands))]
        label, name, op, loc = self.steps[self.peak_step]
        lines.append('Planned peak: %s = arena %s + %s of arrays alive at step %d (%s)'
                     % (_mb(self.peak_bytes), _mb(self.arena_bytes),
                        _mb(self.peak_bytes - self.arena_bytes), self.peak_step, label))
        lines.append('  held by node %r (%s, created at %s)' % (name, op, loc))
        label, name, op, loc = self.steps[self.live_peak_step]
        lines.append('Most bytes in use: %s at step %d (%s: node %r, %s, created at %s)'
                     % (_mb(self.live[self.live_peak_step]), self.live_peak_step, label, name,
                        op, loc))
        saved_reuse = self.unshared_bytes - self.reuse_bytes
        saved_inplace = self.reuse_bytes - self.arena_used
        lines.append('Arena: %s without sharing, %s with liveness reuse (saves %s), %s with '
                     'in-place sharing too (saves %s more; %d in-place pair(s))'
                     % (_mb(self.unshared_bytes), _mb(self.reuse_bytes), _mb(saved_reuse),
                        _mb(self.arena_used), _mb(saved_inplace),
                        sum(b.inplace_of is not None for b in self.bands)))
        lines.append('Naive (every array of the run in storage of its own): %s; planned '
                     'peak is %.0f%% of it' % (_mb(self.naive_bytes),
                                               100.0 * self.peak_bytes / max(self.naive_bytes,
                                                                             1)))
        if self.measured is not None:
            lines.append('Measured peak of the last run (tracemalloc): %s' % _mb(self.measured))
        buffers = sorted((b for b in self.bands if b.offset is not None),
                         key=lambda b: -b.nbytes)[:top]
        if buffers:
            lines.append('Largest buffers (bytes, steps, offset):')
            for b in buffers:
                lines.append('  %-40s %12d  [%d, %d]  @%d%s'
                             % (b.name, b.nbytes, b.first, b.last, b.offset,
                                '  in place of %s' % b.inplace_of if b.inplace_of else ''))
        return '\n'.join(lines)

    def __str__(self):
        return self.text()

    def svg(self, title='memory plan'):
        """The drawing (an SVG document, a string)."""
        return _draw(self, title)

    def _repr_svg_(self):
        return self.svg()

    def save(self, fname, title='memory plan'):
        """Writes :meth:`svg` (``.svg``) or :meth:`text` (any other extension) to
        ``fname``."""
        from ..base import atomic_write
        data = self.svg(title) if str(fname).lower().endswith('.svg') else self.text() + '\n'
        with atomic_write(fname, 'w') as f:
            f.write(data)


def _mb(n):
    return '%d B' % n if n < 1 << 20 else '%.2f MiB (%d B)' % (n / float(1 << 20), n)


def _plan_of(exe, is_train):
    plan = getattr(exe, '_plan', None)
    if plan is None or not hasattr(plan, 'storage'):
        raise ArgumentTypeError('plot_memory needs an executor (from simple_bind or bind), '
                                'got %s' % type(exe).__name__)
    if is_train is None:
        is_train = bool(plan.bwd_steps)
    passes = getattr(exe, '_passes', None)
    if not is_train and passes is not None and passes.applies(False, 0, False):
        rewritten = passes.plan()       # forward(is_train=False) runs the inference plan
        if rewritten is not None:
            return rewritten, False
    return plan, is_train


def plot_memory(exe, is_train=None, output=None, title='memory plan'):
    """The storage plan of executor ``exe`` over its step, as a :class:`MemoryPlot`
    (``str()`` the report, ``.svg()`` the drawing).

    ``is_train``: draw the training plan (forward then backward steps) or the inference
    one (the plan ``forward(is_train=False)`` runs); default: training where the executor
    computes gradients. ``output``: also write the SVG (``.svg``) or the text (other
    extensions) there."""
    plan, is_train = _plan_of(exe, is_train)
    st = plan.storage()
    n_fwd = len(plan.steps)
    bwd = list(reversed(plan.bwd_steps)) if is_train else []
    end = n_fwd + len(bwd)
    steps = [('forward %s' % n.name, n.name, n.op.name, n.location) for n in plan.steps]
    steps += [('backward %s' % n.name, n.name, '_backward_%s' % n.op.name, n.location)
              for n in bwd]
    steps.append(('end', '(after the run)', '-', '-'))

    def name_of(k):
        if isinstance(k, tuple):
            e = k[1]
            node, i = plan.entry_info[e]
            base = node.output_names()[i]
            return ('grad(%s)' % base) if k[0] == 'g' else 'grad part(%s)@%d' % (base, k[2])
        node, i = plan.entry_info[k]
        return node.output_names()[i]

    bands = []
    for k, off in zip(st.keys, st.offset):
        first, last = st.lifetimes[k]
        if not is_train and (first >= n_fwd):
            continue
        bands.append(Band(name_of(k), 'gradient' if isinstance(k, tuple) else 'activation',
                          first, min(last, end), plan.nbytes(_storage._entry(k)), off))
    lend = dict(zip(sorted(getattr(st, 'scratch', {})), st.lend))
    for key, (T, size) in sorted(getattr(st, 'scratch', {}).items()):
        kind = key[1]
        where = lend.get(key, (0, size))
        label = steps[T][1] if T < len(steps) else str(T)
        bands.append(Band('scratch(%s %s)' % ('forward' if kind == 'f' else 'backward', label),
                          'scratch', T, T, size, where[0]))
    _mark_inplace(bands)
    for first, last, k in getattr(st, 'own_spans', ()):
        bands.append(Band(name_of(k), 'array', first, min(last, end),
                          plan.nbytes(_storage._entry(k))))
    own = [0] * (end + 1)
    live = [0] * (end + 1)
    for b in bands:
        for t in range(b.first, min(b.last, end) + 1):
            if b.kind == 'array':
                own[t] += b.nbytes
            live[t] += b.nbytes
    peak_step = max(range(end + 1), key=lambda t: (own[t], live[t], -t))
    live_peak = max(range(end + 1), key=lambda t: (live[t], -t))
    arena_used = st.arena - _ALIGN if st.arena else 0
    unshared, reuse = _counterfactuals(st, bands)
    got = MemoryPlot(steps=steps, bands=bands, n_forward=n_fwd, arena_bytes=st.arena,
                     arena_used=arena_used, peak_bytes=st.arena + max(own, default=0),
                     peak_step=peak_step, live=live, live_peak_step=live_peak, own=own,
                     unshared_bytes=unshared, reuse_bytes=reuse, naive_bytes=st.naive_bytes,
                     measured=_measured(exe), is_train=is_train)
    if output is not None:
        got.save(output, title)
    return got


def _mark_inplace(bands):
    """Sets ``inplace_of`` of the buffers that take over another's storage at the step
    where it dies: the only way two buffers may overlap in bytes and in steps at once."""
    buf = sorted((b for b in bands if b.offset is not None and b.kind != 'scratch'),
                 key=lambda b: (b.first, b.name))
    for i, b in enumerate(buf):
        for a in buf[:i]:
            if a.last == b.first and a.offset < b.offset + b.nbytes \
                    and b.offset < a.offset + a.nbytes and a.first < b.first:
                b.inplace_of = a.name
                break


def _counterfactuals(st, bands):
    """(every buffer in storage of its own, the arena placed with liveness reuse but no
    in-place pair), over the buffers and scratch of ``bands``."""
    keys, birth, death, sizes = [], {}, {}, {}
    for i, b in enumerate(bands):
        if b.offset is None:
            continue
        keys.append(i)
        birth[i], death[i], sizes[i] = b.first, b.last, b.nbytes
    unshared = sum(_aligned(sizes[k]) for k in keys)
    order = sorted(keys, key=lambda k: (birth[k], bands[k].name))
    reuse, _ = _storage._place(order, birth, death, sizes, {})
    return unshared, reuse


def _measured(exe):
    """The executor's measured peak of its last run (the buffers it allocated and the
    peak of the arrays its run made besides them, as ``debug_str`` prints it), or None."""
    peak = getattr(exe, '_peak', None)
    pool = getattr(exe, '_pool', None)
    if peak is None:
        return None
    allocated = 0 if pool is None else sum(
        {id(b): b.nbytes for b in (v.base if v.base is not None else v
                                   for v in pool)}.values())
    return allocated + max(peak)


# ---------------------------------------------------------------------- drawing
_COLOUR = {'activation': ('#9ec5e8', '#2f6ea5'), 'gradient': ('#f7c99b', '#c46a1b'),
           'scratch': ('#d5d8dc', '#7f8c8d'), 'array': ('#cdb4e6', '#6c3fa0')}
_LEFT, _RIGHT, _TOP, _BOTTOM, _PLOT_H = 90, 24, 58, 110, 420


def _draw(mp, title):
    n = len(mp.steps)
    dx = max(3.0, min(28.0, 1100.0 / n))
    W = int(_LEFT + n * dx + _RIGHT)
    H = _TOP + _PLOT_H + _BOTTOM
    top = max(mp.peak_bytes, max(mp.live, default=0), 1)
    scale = _PLOT_H / float(top)
    svg = Svg(max(W, 720), H, title)

    def y(b):
        return _TOP + _PLOT_H - b * scale
    svg.text(_LEFT, 20, '%s: planned peak %s at step %d (%s); arena %s'
             % (title, _mb(mp.peak_bytes), mp.peak_step, mp.steps[mp.peak_step][0],
                _mb(mp.arena_bytes)), font_size=13)
    svg.text(_LEFT, 38, 'saved: liveness reuse %s, in-place sharing %s (arena %s without '
             'sharing)' % (_mb(mp.unshared_bytes - mp.reuse_bytes),
                           _mb(mp.reuse_bytes - mp.arena_used), _mb(mp.unshared_bytes)),
             font_size=11, fill='#444444')
    # axes and byte ticks
    svg.line(_LEFT, _TOP, _LEFT, _TOP + _PLOT_H, stroke='#333333')
    svg.line(_LEFT, _TOP + _PLOT_H, _LEFT + n * dx, _TOP + _PLOT_H, stroke='#333333')
    for i in range(5):
        b = top * i / 4.0
        svg.line(_LEFT - 4, y(b), _LEFT + n * dx, y(b), stroke='#eeeeee')
        svg.text(_LEFT - 6, y(b) + 4, _short(b), text_anchor='end', font_size=10)
    # forward | backward
    if mp.n_forward < n - 1:
        x = _LEFT + mp.n_forward * dx
        svg.line(x, _TOP, x, _TOP + _PLOT_H, stroke='#555555', stroke_dasharray='4,3')
        svg.text(x + 4, _TOP + 12, 'backward', font_size=10, fill='#555555')
    svg.text(_LEFT + 4, _TOP + 12, 'forward', font_size=10, fill='#555555')
    # the arena's buffers at their offsets
    for b in mp.bands:
        if b.offset is None:
            continue
        fill, stroke = _COLOUR[b.kind]
        h = max(b.nbytes * scale, 0.5)
        svg.rect(_LEFT + b.first * dx, y(b.offset) - h, (b.last - b.first + 1) * dx, h,
                 tip='%s: %d bytes, steps %d-%d, offset %d%s'
                 % (b.name, b.nbytes, b.first, b.last, b.offset,
                    ', in place of %s' % b.inplace_of if b.inplace_of else ''),
                 fill=fill, stroke=stroke, stroke_width=0.4, fill_opacity=0.85)
    # the arena's top, then the operators' own arrays stacked above it at each step
    svg.line(_LEFT, y(mp.arena_bytes), _LEFT + n * dx, y(mp.arena_bytes), stroke='#2f6ea5',
             stroke_dasharray='6,3')
    svg.text(_LEFT + n * dx - 2, y(mp.arena_bytes) - 3, 'arena', text_anchor='end',
             font_size=10, fill='#2f6ea5')
    fill, stroke = _COLOUR['array']
    for t in range(n):
        base = mp.arena_bytes
        for b in sorted((b for b in mp.bands if b.kind == 'array' and b.first <= t <= b.last),
                        key=lambda b: (b.first, b.name)):
            h = b.nbytes * scale
            svg.rect(_LEFT + t * dx, y(base) - h, dx, h, fill=fill, stroke=stroke,
                     stroke_width=0.3, fill_opacity=0.8,
                     tip='%s (own array): %d bytes, steps %d-%d' % (b.name, b.nbytes,
                                                                     b.first, b.last))
            base += b.nbytes
    # the peak
    x = _LEFT + (mp.peak_step + 0.5) * dx
    svg.line(x, _TOP, x, _TOP + _PLOT_H, stroke='#c0392b', stroke_width=1.2)
    svg.line(_LEFT, y(mp.peak_bytes), _LEFT + n * dx, y(mp.peak_bytes), stroke='#c0392b',
             stroke_dasharray='2,2')
    label, name, op, loc = mp.steps[mp.peak_step]
    svg.text(min(x + 4, W - 300), _TOP + _PLOT_H + 34, 'peak: %s (%s, %s)' % (name, op, loc),
             font_size=11, fill='#c0392b')
    # step ticks
    every = max(1, int(40 / dx))
    for t in range(0, n, every):
        svg.text(_LEFT + (t + 0.5) * dx, _TOP + _PLOT_H + 14, str(t), text_anchor='middle',
                 font_size=9)
    svg.text(_LEFT, _TOP + _PLOT_H + 52, 'steps: forward then backward (hover a band for its '
             'array, steps and offset)', font_size=10, fill='#555555')
    x = _LEFT
    for kind, label in (('activation', 'activation buffer'), ('gradient', 'gradient buffer'),
                        ('scratch', 'scratch lent'), ('array', "operator's own array")):
        fill, stroke = _COLOUR[kind]
        svg.rect(x, _TOP + _PLOT_H + 66, 12, 12, fill=fill, stroke=stroke)
        svg.text(x + 16, _TOP + _PLOT_H + 76, label, font_size=10)
        x += 150
    return str(svg)


def _short(b):
    for unit, div in (('GiB', 1 << 30), ('MiB', 1 << 20), ('KiB', 1 << 10)):
        if b >= div:
            return '%.1f %s' % (b / float(div), unit)
    return '%d B' % b
