"""The profiler's outputs: the Chrome trace file and the aggregate statistics.

After MXNet 1.9.1's ``src/profiler/profiler.cc`` (``DumpProfile``: the trace file, written
whole or, with ``continuous_dump``, appended to and closed by the last dump) and
``src/profiler/aggregate_stats.cc`` (the table and JSON that ``profiler.dumps()``
returns: per category, per name, Count, Total, Min, Max and Avg, times in ms and memory in
kB, sorted by one of them).

The trace follows the Trace Event Format that Chrome's ``about:tracing`` and Perfetto
read: complete events (``ph: 'X'``, ``ts``/``dur`` in microseconds), counters
(``'C'``), instant markers (``'i'``) and metadata (``'M'``) naming each process and each
row (thread), one row per thread.
"""
from __future__ import annotations

import bisect
import json
import os

from . import _recorder as rec
from ..progress import progress

__all__ = ['expand', 'Aggregate', 'TraceFile']

#: categories whose aggregate rows are memory (kB), as MXNet's
MEMORY_CATEGORIES = ('Device Storage', 'Pool Memory')
#: the memory counter of the executor's buffers (MXNet's name for a CPU device's)
MEMORY_COUNTER = 'Memory: cpu/0'
#: a dump writing this many events or more draws a progress line
LONG_TRACE = 200000
_MARKER_SCOPE = {'global': 'g', 'process': 'p', 'thread': 't', 'task': 't', 'marker': 't'}


def expand(records, pid, out, agg=None):
    """Append the Chrome trace events of ``records`` (the recorder's tuples) made by process
    ``pid`` to ``out``, and add their statistics to ``agg`` (an :class:`Aggregate` or
    None). Returns {(pid, tid)} of the rows used, and {pid: name} of other processes."""
    rows, procs = set(), {}
    add = out.append
    stat = agg.add if agg is not None else None
    onednn = _onednn_spans(records)
    for r in records:
        kind = r[0]
        if kind == 'X':
            _, name, cat, t0, t1, tid, args = r
            ev = {'name': name, 'cat': cat, 'ph': 'X', 'ts': t0 / 1e3, 'dur': (t1 - t0) / 1e3,
                  'pid': pid, 'tid': tid}
            if args:
                ev['args'] = args
            add(ev)
            rows.add((pid, tid))
            if stat:
                stat(cat, name, (t1 - t0) / 1e3)
        elif kind == 'S':
            _, table, stamps, tid = r
            rows.add((pid, tid))
            spans = onednn.get(tid)
            for (name, cat, args, live), t0, t1 in zip(table, stamps, stamps[1:]):
                if name is not None:        # (None: memory alone is profiled)
                    ev = {'name': name, 'cat': cat, 'ph': 'X', 'ts': t0 / 1e3,
                          'dur': (t1 - t0) / 1e3, 'pid': pid, 'tid': tid}
                    if args:
                        ev['args'] = args
                    if spans:
                        inside = _inside(spans, t0, t1)
                        if inside:
                            ev['args'] = dict(args or (), onednn_us=inside / 1e3)
                    add(ev)
                    if stat:
                        stat(cat, name, (t1 - t0) / 1e3)
                if live is not None:
                    add({'name': MEMORY_COUNTER, 'cat': 'Device Storage', 'ph': 'C',
                         'ts': t0 / 1e3, 'args': {MEMORY_COUNTER: live}, 'pid': pid,
                         'tid': tid})
                    if stat:
                        agg.counter('Device Storage', MEMORY_COUNTER, live)
        elif kind == 'C':
            _, name, cat, value, t, tid = r
            add({'name': name, 'cat': cat, 'ph': 'C', 'ts': t / 1e3, 'args': {name: value},
                 'pid': pid, 'tid': tid})
            rows.add((pid, tid))
            if agg is not None:
                agg.counter(cat, name, value)
        elif kind == 'i':
            _, name, cat, scope, t, tid = r
            add({'name': name, 'cat': cat, 'ph': 'i', 'ts': t / 1e3,
                 's': _MARKER_SCOPE.get(scope, 'p'), 'pid': pid, 'tid': tid})
            rows.add((pid, tid))
        elif kind == 'P':
            _, other, pname, recs, names = r
            procs[other] = pname
            got, more = expand(recs, other, out, agg)
            rows |= got
            procs.update(more)
            for tid, tname in names.items():
                rec.STATE.threads.setdefault(('remote', other, tid), tname)
    return rows, procs


def _onednn_spans(records):
    """{calling thread: ([starts], [ends])} of the oneDNN primitives in ``records``."""
    spans = {}
    for r in records:
        if r[0] == 'X' and r[5] == rec.ONEDNN_ROW and r[6]:
            got = spans.setdefault(r[6]['thread'], [])
            got.append((r[3], r[4]))
    out = {}
    for tid, got in spans.items():
        got.sort()
        out[tid] = ([a for a, _ in got], [b for _, b in got])
    return out


def _inside(spans, t0, t1):
    """Nanoseconds of the primitives that ran within [t0, t1]."""
    starts, ends = spans
    k = bisect.bisect_left(starts, t0)
    total = 0
    while k < len(starts) and starts[k] < t1:
        total += min(ends[k], t1) - starts[k]
        k += 1
    return total


class Aggregate:
    """Per category and name: [kind ('d' duration, 'c' counter), count, total, min, max]
    (durations in microseconds, counters as recorded), as MXNet's ``AggregateStats``."""

    def __init__(self):
        self.stats = {}

    def add(self, cat, name, dur):
        row = self.stats.setdefault(cat, {}).get(name)
        if row is None:
            self.stats[cat][name] = ['d', 1, dur, dur, dur]
            return
        row[1] += 1
        row[2] += dur
        if dur < row[3]:
            row[3] = dur
        if dur > row[4]:
            row[4] = dur

    def counter(self, cat, name, value):
        # (MXNet's counter statistic: its total is the last value)
        row = self.stats.setdefault(cat, {}).get(name)
        if row is None:
            self.stats[cat][name] = ['c', 1, value, value, value]
            return
        row[1] += 1
        row[2] = value
        row[3] = min(row[3], value)
        row[4] = max(row[4], value)

    def clear(self):
        self.stats.clear()

    @staticmethod
    def _values(row):
        """(count, total, min, max, avg) as MXNet prints them: ms or kB (both /1000); a
        counter's avg is (max - min) / 2, as MXNet computes it."""
        kind, count, total, lo, hi = row
        avg = (hi - lo) / 2 if kind == 'c' else total / count
        return count, total / 1e3, lo / 1e3, hi / 1e3, avg / 1e3

    def _sorted(self, rows, sort_by, ascending):
        key = {'total': lambda r: r[2], 'count': lambda r: r[1], 'min': lambda r: r[3],
               'max': lambda r: r[4],
               'avg': lambda r: (r[4] - r[3]) / 2 if r[0] == 'c' else r[2] / r[1]}[sort_by]
        sign = -1 if ascending else 1
        # MXNet's heap pops the largest (value, name) first; ascending negates the value
        return sorted(rows.items(), key=lambda kv: (sign * key(kv[1]), kv[0]), reverse=True)

    def table(self, sort_by='total', ascending=False):
        """MXNet's ``AggregateStats::DumpTable`` text."""
        out = ['\nProfile Statistics:\n\tNote the difference in units for different entries.\n']
        for cat, rows in self.stats.items():
            mem = cat in MEMORY_CATEGORIES
            out.append('%s\n=================\n' % cat)
            out.append('Name'.ljust(25) + 'Total Count'.rjust(16) + ' '
                       + ('' if mem else 'Time (ms)'.rjust(16) + ' ')
                       + ('Min Use  (kB)' if mem else 'Min Time (ms)').rjust(16) + ' '
                       + ('Max Use  (kB)' if mem else 'Max Time (ms)').rjust(16) + ' '
                       + ('Avg Use  (kB)' if mem else 'Avg Time (ms)').rjust(16) + '\n')
            out.append('----'.ljust(25) + '-----------'.rjust(16) + ' '
                       + ('' if mem else '---------'.rjust(16) + ' ')
                       + ' '.join(['-------------'.rjust(16)] * 3) + '\n')
            for name, row in self._sorted(rows, sort_by, ascending):
                count, total, lo, hi, avg = self._values(row)
                out.append(name.ljust(25) + str(count).rjust(16) + ' '
                           + ('' if mem else ('%.4f' % total).rjust(16) + ' ')
                           + ' '.join(('%.4f' % v).rjust(16) for v in (lo, hi, avg)) + '\n')
            out.append('\n')
        return ''.join(out)

    def json(self, sort_by='total', ascending=False):
        """MXNet's ``AggregateStats::DumpJson``: {"Time": {category: {name: {"Count",
        "Total", "Min", "Max", "Avg"}}}, "Memory": {... without "Total"}, "Unit": ...},
        values to 4 significant digits."""
        time, memory = {}, {}
        for cat, rows in self.stats.items():
            mem = cat in MEMORY_CATEGORIES
            block = (memory if mem else time).setdefault(cat, {})
            for name, row in self._sorted(rows, sort_by, ascending):
                count, total, lo, hi, avg = self._values(row)
                item = {'Count': count}
                if not mem:
                    item['Total'] = _g4(total)
                item.update(Min=_g4(lo), Max=_g4(hi), Avg=_g4(avg))
                block[name] = item
        return json.dumps({'Time': time, 'Memory': memory,
                           'Unit': {'Time': 'ms', 'Memory': 'kB'}}, indent=4) + '\n'


def _g4(v):
    """``v`` to 4 significant digits (MXNet's ``std::setprecision(4)``)."""
    return float('%.4g' % v)


class TraceFile:
    """The trace file of one configuration: written whole by each dump, or (continuous
    dump) opened by the first, appended to by the next ones and closed by the last, as
    MXNet's ``DumpProfile`` does. Metadata naming a process or a row is written once per
    file, before the row's first event."""

    def __init__(self, filename):
        self.filename = filename
        self.named = set()
        self.any = False

    def write(self, events, rows, procs, first, last, continuous):
        """Write ``events`` (from :func:`expand`) into the file; ``rows``/``procs`` say which
        rows and processes they use."""
        mode = 'a' if (not first and continuous) else 'w'
        if mode == 'w':
            self.named = set()
            self.any = False
        meta = self._metadata(rows, procs)
        with open(self.filename, mode) as f:
            if mode == 'w':
                f.write('{\n    "traceEvents": [\n')
            items = meta + events
            if len(items) >= LONG_TRACE:
                items = progress(items, len(items), 'profiler dump: %s' % self.filename,
                                 unit='events')
            for ev in items:
                f.write(('        ' if not self.any else ',\n        ') + json.dumps(ev))
                self.any = True
            if last:
                f.write('\n    ],\n    "displayTimeUnit": "ms"\n}\n')

    def _metadata(self, rows, procs):
        me = os.getpid()
        out = []
        for pid in sorted({p for p, _ in rows} | {me}):
            if ('p', pid) in self.named:
                continue
            self.named.add(('p', pid))
            name = procs.get(pid, 'symgraph (pid %d): cpu/0' % pid if pid == me else
                             'process %d' % pid)
            out.append({'name': 'process_name', 'ph': 'M', 'pid': pid, 'args': {'name': name}})
            out.append({'name': 'process_sort_index', 'ph': 'M', 'pid': pid,
                        'args': {'sort_index': 0 if pid == me else pid}})
        threads = rec.STATE.threads
        for pid, tid in sorted(rows):
            if (pid, tid) in self.named:
                continue
            self.named.add((pid, tid))
            if tid in rec.ROW_NAMES:
                name, index = rec.ROW_NAMES[tid], tid
            elif pid == me:
                name, index = threads.get(tid, 'thread %d' % tid), 0
            else:
                name, index = threads.get(('remote', pid, tid), 'thread %d' % tid), 0
            out.append({'name': 'thread_name', 'ph': 'M', 'pid': pid, 'tid': tid,
                        'args': {'name': name}})
            out.append({'name': 'thread_sort_index', 'ph': 'M', 'pid': pid, 'tid': tid,
                        'args': {'sort_index': index}})
        return out
