"""The profiler's recorder: what is being profiled now, and the records kept until a dump.

The engine's hot paths read one module attribute here and do nothing else while it is
False: :data:`executor` at an executor's forward/backward entry (it then runs a separately
generated, instrumented variant of its step functions), :data:`imperative` at ``mx.nd``'s
operator call. The attributes are recomputed by :func:`update` whenever the state, the
mode or the pause changes, so that a check never combines several.

Records are small tuples appended to one list (``list.append`` is atomic under the GIL,
so threads record without a lock); they are turned into Chrome trace events and aggregate
statistics only when dumped (:mod:`._output`), so recording costs a clock read and an
append:

``('X', name, cat, t0_ns, t1_ns, tid, args)``
    a duration;
``('S', table, stamps, tid)``
    one run of an executor's instrumented code: ``stamps`` holds ``len(table) + 1`` clock
    readings, step ``i`` (``table[i] = (name, cat, args, live_bytes)``) ran from
    ``stamps[i]`` to ``stamps[i + 1]``;
``('C', name, cat, value, t_ns, tid)``
    a counter's new value;
``('i', name, cat, scope, t_ns, tid)``
    an instant marker;
``('P', pid, process_name, records, thread_names)``
    the records of another process (a data-loader worker), sent back to this one.

Clock: :func:`time.perf_counter_ns` (``CLOCK_MONOTONIC`` on Linux: one clock for every
process of the machine, so a worker's records line up with the parent's).
"""
from __future__ import annotations

import os
import threading
import time

__all__ = ['now', 'update', 'record', 'record_run', 'counter', 'instant', 'thread_row',
           'ONEDNN_ROW', 'KVSTORE_ROW', 'MODE_SYMBOLIC', 'MODE_IMPERATIVE', 'MODE_API',
           'MODE_MEMORY']

now = time.perf_counter_ns

#: MXNet's ProfilerMode bits (src/profiler/profiler.h)
MODE_SYMBOLIC, MODE_IMPERATIVE, MODE_API, MODE_MEMORY = 1, 2, 4, 8
#: MXNet's default mode: symbolic, API and memory
DEFAULT_MODE = MODE_SYMBOLIC | MODE_API | MODE_MEMORY

#: the flags the engine reads (see :func:`update`)
active = False        # running and not paused: user objects (Task, Counter, ...) record
executor = False      # an executor runs its instrumented variant
symbolic = False
imperative = False
api = False
memory = False

#: synthetic rows (thread ids no real thread has): oneDNN's OpenMP team, the kvstore's
#: all-reduces
ONEDNN_ROW = 1
KVSTORE_ROW = 2
ROW_NAMES = {ONEDNN_ROW: 'oneDNN primitives (OpenMP team)',
             KVSTORE_ROW: 'kvstore / MPI all-reduce'}


class _State:
    """The profiler's settings and state (one per process)."""

    def __init__(self):
        self.running = False
        self.paused = False
        self.mode = DEFAULT_MODE
        self.filename = 'profile.json'
        self.continuous_dump = False
        self.dump_period = 1.0
        self.aggregate_stats = False
        self.enable_output = False      # a dump writes the file (set by set_state('run'))
        self.dump_count = 0             # dumps into the current file
        self.events = []                # pending records (module docstring)
        self.threads = {}               # tid -> thread name
        self.lock = threading.RLock()   # dumps, configuration (never the recording)
        self.hooks = []                 # callables(on: bool) told when `executor` changes


STATE = _State()
_local = threading.local()


def update():
    """Recompute the flags from the state, mode and pause, and tell the hooks (the oneDNN
    primitives' timing) when profiling starts or stops."""
    global active, executor, symbolic, imperative, api, memory
    st = STATE
    was = active
    active = st.running and not st.paused
    mode = st.mode if active else 0
    symbolic = bool(mode & MODE_SYMBOLIC)
    imperative = bool(mode & MODE_IMPERATIVE)
    api = bool(mode & MODE_API)
    memory = bool(mode & MODE_MEMORY)
    executor = symbolic or api or memory
    if was != active:
        for hook in list(st.hooks):
            hook(active)


def thread_row():
    """This thread's row (its id), its name remembered for the trace's metadata."""
    tid = threading.get_ident()
    if tid not in STATE.threads:
        STATE.threads[tid] = threading.current_thread().name
    return tid


def record(name, cat, t0, t1, args=None, row=None):
    """A duration from ``t0`` to ``t1`` (:func:`now` readings) on this thread's row (or
    ``row``: :data:`ONEDNN_ROW`, :data:`KVSTORE_ROW`)."""
    STATE.events.append(('X', name, cat, t0, t1, thread_row() if row is None else row, args))


def record_run(table, stamps):
    """One run of an executor's instrumented code (see the module docstring)."""
    STATE.events.append(('S', table, stamps, thread_row()))


def counter(name, cat, value, t=None):
    STATE.events.append(('C', name, cat, value, now() if t is None else t, thread_row()))


def instant(name, cat, scope, t=None):
    STATE.events.append(('i', name, cat, scope, now() if t is None else t, thread_row()))


def take_events():
    """The pending records, removed (a worker process sends them to its parent)."""
    ev, STATE.events = STATE.events, []
    return ev


def add_process(pid, process_name, records, thread_names):
    """Records another process made (:func:`take_events` there), shown as its process."""
    if records:
        STATE.events.append(('P', pid, process_name, records, dict(thread_names)))


# ------------------------------------------------------------------ name scopes
def scope():
    """(prefix, category) of the imperative calls made on this thread now: ``('MyOp::',
    'Custom Operator')`` inside a custom operator's forward, ``('_backward_MyOp::', ...)``
    in its backward (MXNet's names), ``(name, 'operator')`` inside
    :func:`symgraph.profiler.scope`; ``('', 'operator')`` outside."""
    stack = getattr(_local, 'scopes', None)
    return stack[-1] if stack else ('', 'operator')


def push_scope(prefix, cat='operator'):
    stack = getattr(_local, 'scopes', None)
    if stack is None:
        stack = _local.scopes = []
    stack.append((prefix, cat))


def pop_scope():
    _local.scopes.pop()


def pid():
    return os.getpid()
