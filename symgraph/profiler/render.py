"""A trace drawn as an SVG timeline: one lane per row (thread) of the trace, nested events
stacked, counters as step charts, a time axis in milliseconds.

A small renderer of the profiler's own (no plotting library): it reads the Chrome trace
JSON that :func:`symgraph.profiler.dump` writes (complete ``X`` events, ``B``/``E`` pairs,
``C`` counters and the ``M`` metadata that names processes and threads) and writes SVG
text, for a README picture or a quick look without a browser.

>>> from symgraph.profiler import render_svg
>>> svg = render_svg({'traceEvents': [{'name': 'Convolution', 'ph': 'X', 'ts': 0,
...                                    'dur': 10, 'pid': 1, 'tid': 1}]})
>>> svg.startswith('<svg')
True
"""
from __future__ import annotations

import hashlib
import json
import os
from xml.sax.saxutils import escape

__all__ = ['render_svg']

_PALETTE = ('#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1',
            '#ff9da7', '#9c755f', '#bab0ac', '#86bcb6', '#d37295', '#a0cbe8', '#ffbe7d')
_LANE = 18          # pixels per nested level
_LABEL = 230        # width of the lane labels
_COUNTER = 46       # height of a counter's chart


def _colour(name):
    # (stable across runs: the same operator has the same colour in every picture)
    base = name.split('::')[-1].replace('_backward_', '')
    return _PALETTE[int(hashlib.md5(base.encode()).hexdigest(), 16) % len(_PALETTE)]


def _load(trace):
    if isinstance(trace, (str, os.PathLike)):
        with open(trace) as f:
            trace = json.load(f)
    if isinstance(trace, dict):
        trace = trace.get('traceEvents')
    if not isinstance(trace, list):
        raise TypeError('render_svg: a trace is a dict with "traceEvents", its list of events '
                        'or the path of a trace file, got %s' % type(trace).__name__)
    return trace


def _spans(events):
    """{(pid, tid): [(ts, dur, name, cat)]} of the duration events, ``B``/``E`` paired."""
    rows, open_ = {}, {}
    for ev in events:
        ph, key = ev.get('ph'), (ev.get('pid'), ev.get('tid'))
        if ph == 'X':
            rows.setdefault(key, []).append((float(ev['ts']), float(ev.get('dur', 0)),
                                             ev.get('name', ''), ev.get('cat', '')))
        elif ph == 'B':
            open_.setdefault(key, []).append(ev)
        elif ph == 'E' and open_.get(key):
            b = open_[key].pop()
            rows.setdefault(key, []).append((float(b['ts']), float(ev['ts']) - float(b['ts']),
                                             b.get('name', ''), b.get('cat', '')))
    return rows


def _depths(spans):
    """Each span with its nesting depth in its row (spans inside another go one down)."""
    out, stack = [], []
    for ts, dur, name, cat in sorted(spans, key=lambda s: (s[0], -s[1])):
        # (an event that starts where the last one ended is its sibling: the end, a sum
        # of microsecond floats, may exceed the start by a rounding error)
        while stack and stack[-1] <= ts + 1e-3:
            stack.pop()
        out.append((ts, dur, name, cat, len(stack)))
        stack.append(ts + dur)
    return out


def render_svg(trace, path=None, width=1400, title='symgraph profile', start=None, end=None):
    """Draw ``trace`` (a trace dict, its event list or a trace file's path) as SVG text;
    written to ``path`` too when given. ``start``/``end`` (microseconds, the trace's
    clock) crop the time shown."""
    events = _load(trace)
    procs, threads, order = {}, {}, {}
    for ev in events:
        if ev.get('ph') == 'M':
            if ev.get('name') == 'process_name':
                procs[ev.get('pid')] = ev.get('args', {}).get('name', '')
            elif ev.get('name') == 'thread_name':
                threads[(ev.get('pid'), ev.get('tid'))] = ev.get('args', {}).get('name', '')
            elif ev.get('name') == 'thread_sort_index':
                order[(ev.get('pid'), ev.get('tid'))] = ev.get('args', {}).get('sort_index', 0)
    rows = _spans(events)
    counters = {}
    for ev in events:
        if ev.get('ph') == 'C':
            for k, v in ev.get('args', {}).items():
                counters.setdefault((ev.get('pid'), ev.get('name'), k), []).append(
                    (float(ev['ts']), float(v)))
    times = [t for spans in rows.values() for s in spans for t in (s[0], s[0] + s[1])]
    times += [t for pts in counters.values() for t, _ in pts]
    if not times:
        raise ValueError('render_svg: the trace has no duration or counter events to draw')
    t0 = min(times) if start is None else float(start)
    t1 = max(times) if end is None else float(end)
    t1 = max(t1, t0 + 1e-3)
    plot = width - _LABEL - 20
    x = lambda t: _LABEL + (min(max(t, t0), t1) - t0) / (t1 - t0) * plot  # noqa: E731
    body, y = [], 40
    # rows: by process, then the trace's sort index, then the first event
    for key in sorted(rows, key=lambda k: (k[0] is None, str(k[0]), order.get(k, 0),
                                           min(s[0] for s in rows[k]))):
        spans = [s for s in _depths(rows[key]) if s[0] + s[1] >= t0 and s[0] <= t1]
        if not spans:
            continue
        depth = max(s[4] for s in spans) + 1
        label = threads.get(key, 'thread %s' % (key[1],))
        proc = procs.get(key[0], 'pid %s' % (key[0],))
        body.append('<text x="6" y="%d" class="lane">%s</text>' % (y + 13, escape(label[:34])))
        body.append('<text x="6" y="%d" class="proc">%s</text>' % (y + 25, escape(proc[:40])))
        for ts, dur, name, cat, d in spans:
            x0, x1 = x(ts), x(ts + dur)
            w = max(x1 - x0, 0.6)
            yy = y + d * _LANE
            body.append('<rect x="%.2f" y="%d" width="%.2f" height="%d" fill="%s">'
                        '<title>%s (%s): %.1f us</title></rect>'
                        % (x0, yy, w, _LANE - 2, _colour(name), escape(name), escape(cat),
                           dur))
            if w > 7 * len(name) * 0.62:
                body.append('<text x="%.2f" y="%d" class="ev">%s</text>'
                            % (x0 + 2, yy + _LANE - 6, escape(name)))
        y += max(depth * _LANE, 30) + 10
        body.append('<line x1="0" x2="%d" y1="%d" y2="%d" class="sep"/>' % (width, y - 5,
                                                                            y - 5))
    for (pid, name, arg), pts in sorted(counters.items(), key=lambda kv: str(kv[0])):
        pts.sort()
        top = max(v for _, v in pts) or 1.0
        body.append('<text x="6" y="%d" class="lane">%s</text>' % (y + 13, escape(name[:34])))
        body.append('<text x="6" y="%d" class="proc">max %s</text>'
                    % (y + 25, escape(_amount(top, name))))
        path_d = ['M %.2f %.2f' % (x(pts[0][0]), y + _COUNTER)]
        for (t, v), nxt in zip(pts, pts[1:] + [(t1, None)]):
            yy = y + _COUNTER - v / top * (_COUNTER - 4)
            path_d.append('L %.2f %.2f L %.2f %.2f' % (x(t), yy, x(nxt[0]), yy))
        path_d.append('L %.2f %.2f Z' % (x(t1), y + _COUNTER))
        body.append('<path d="%s" class="counter"/>' % ' '.join(path_d))
        y += _COUNTER + 14
    # the time axis, in milliseconds from the first event shown
    span_ms = (t1 - t0) / 1e3
    step = _nice(span_ms / 8)
    k = 0
    while k * step <= span_ms + 1e-9:
        xx = x(t0 + k * step * 1e3)
        body.append('<line x1="%.2f" x2="%.2f" y1="30" y2="%d" class="tick"/>' % (xx, xx, y))
        body.append('<text x="%.2f" y="%d" class="axis">%s ms</text>'
                    % (xx + 2, y + 14, '%g' % round(k * step, 9)))
        k += 1
    height = y + 24
    head = ('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
            'viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif">\n'
            '<style>.lane{font-size:12px;fill:#222}.proc{font-size:10px;fill:#777}'
            '.ev{font-size:10px;fill:#fff}.axis{font-size:10px;fill:#555}'
            '.tick{stroke:#ddd;stroke-width:1}.sep{stroke:#eee}'
            '.counter{fill:#9ecae1;stroke:#3182bd;stroke-width:1}</style>\n'
            '<rect width="100%%" height="100%%" fill="#fff"/>\n'
            '<text x="6" y="20" font-size="14" font-weight="bold">%s</text>\n'
            % (width, height, width, height, escape(title)))
    svg = head + '\n'.join(body) + '\n</svg>\n'
    if path is not None:
        with open(path, 'w') as f:
            f.write(svg)
    return svg


def _nice(x):
    """A round step (1, 2 or 5 times a power of ten) at least ``x``."""
    if x <= 0:
        return 1.0
    p = 10 ** int(f'{x:e}'.split('e')[1])
    for m in (1, 2, 5, 10):
        if m * p >= x:
            return m * p
    return 10 * p


def _amount(v, name):
    if 'Memory' in name:
        for unit in ('B', 'kB', 'MB', 'GB'):
            if v < 1000 or unit == 'GB':
                return '%.3g %s' % (v, unit)
            v /= 1000
    return '%.4g' % v
