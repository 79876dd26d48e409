"""mx.profiler: where the time goes, as MXNet 1.9.1's profiler reports it.

After MXNet 1.9.1's ``python/mxnet/profiler.py`` (its API, defaults and names) and
``src/profiler/`` (the trace file and the aggregate statistics: see :mod:`._output`).

>>> import symgraph as mx
>>> mx.profiler.set_config(profile_all=True, filename='profile.json',
...                        aggregate_stats=True)                   # doctest: +SKIP
>>> mx.profiler.set_state('run')                                    # doctest: +SKIP
>>> exe.forward(is_train=True); exe.backward()                     # doctest: +SKIP
>>> mx.profiler.set_state('stop')                                   # doctest: +SKIP
>>> mx.profiler.dump()           # profile.json: open in Perfetto    # doctest: +SKIP
>>> print(mx.profiler.dumps())   # Count, Time, Min, Max, Avg per operator  # doctest: +SKIP

What is recorded (each while its mode is on, ``profile_all`` turning on every mode):

- ``profile_symbolic``: every step of an executor's forward (``Convolution``) and backward
  (``_backward_Convolution``), category ``operator``; a custom operator's node by its
  ``op_type`` (``MyOp``, ``_backward_MyOp``), with MXNet's ``MyOp::pure_python`` events
  (category ``Custom Operator``) for its Python code and ``MyOp::<op>`` for the ``mx.nd``
  calls it makes; the oneDNN primitives each step runs, on a row of their own, their time
  inside each step in its event's ``args.onednn_us``; the kvstore's all-reduce buckets,
  on a row of their own; the batches DataLoader worker processes make, in those
  processes' own rows (they send their records back with each batch).
- ``profile_imperative``: every ``mx.nd`` operator call, by the operator's name.
- ``profile_memory``: the bytes alive in the executor's buffers (its arena and the arrays
  its operators return) at each step, a counter ``Memory: cpu/0`` (``Device Storage``).
- ``profile_api``: MXNet's C API names for the calls that stand for them
  (``MXExecutorForward``, ``MXExecutorBackwardEx``, ``MXImperativeInvokeEx``,
  ``MXNDArrayWaitAll``), category ``MXNET_C_API``.

Profiling off costs one flag test where an executor's forward/backward starts and where an
``mx.nd`` operator call starts: the executor then runs a separately generated variant of
its step functions that reads the clock after each step (see
:func:`symgraph.graph.codegen.gen_forward`).

``MXNET_PROFILER_AUTOSTART=1`` starts the profiler at import (and dumps ``profile.json``
at exit); ``MXNET_PROFILER_MODE`` sets the mode bits (1 symbolic, 2 imperative, 4 API, 8
memory), as in MXNet.
"""
from __future__ import annotations

import atexit
import contextlib
import os
import threading
import warnings

from .. import opdef
from ..base import ArgumentError, ArgumentTypeError, UnknownNameError
from . import _recorder as rec
from ._output import Aggregate, TraceFile, expand
from .render import render_svg

__all__ = ['set_config', 'profiler_set_config', 'set_state', 'profiler_set_state', 'state',
           'get_state', 'dump', 'dump_profile', 'dumps', 'pause', 'resume', 'scope',
           'set_kvstore_handle', 'Domain', 'Task', 'Frame', 'Event', 'Counter', 'Marker',
           'render_svg']

_CONFIG_KEYS = ('profile_all', 'profile_symbolic', 'profile_imperative', 'profile_memory',
                'profile_api', 'filename', 'continuous_dump', 'dump_period',
                'aggregate_stats', 'profile_process')
_PROCESSES = ('worker', 'server')
_SORT_BY = ('total', 'avg', 'min', 'max', 'count')

_agg = Aggregate()
_trace = [None]          # the TraceFile of the current configuration
_timer = [None]          # the continuous dump's thread (threading.Event to stop it)
profiler_kvstore_handle = None


def set_kvstore_handle(handle):
    """Kept for MXNet's API (its kvstore server profiling); a handle is remembered only."""
    global profiler_kvstore_handle
    profiler_kvstore_handle = handle


def _bool(key, value):
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ('1', 'true'):
        return True
    if text in ('0', 'false'):
        return False
    raise ArgumentError('profiler.set_config: %s must be a boolean, got %r' % (key, value))


def _process(profile_process):
    if profile_process not in _PROCESSES:
        raise ArgumentError("profile_process must be 'worker' or 'server', got %r"
                            % (profile_process,))
    if profile_process == 'server':
        # (symgraph's dist kvstore has no server processes: MPI all-reduce between workers)
        raise ArgumentError("profile_process='server': symgraph's distributed kvstore has "
                            'no server processes to profile (its workers all-reduce over '
                            "MPI); profile the workers ('worker')")


def set_config(**kwargs):
    """Set up the profiler's configuration (keyword arguments only, MXNet's defaults for
    the rest).

    Parameters
    ----------
    filename : str
        the trace file (default ``'profile.json'``); an existing one is removed.
    profile_all : bool
        every mode below.
    profile_symbolic, profile_imperative, profile_memory, profile_api : bool
        the modes (default True each, as MXNet's parameter defaults).
    continuous_dump : bool
        append to the file at each dump (and every ``dump_period`` seconds while
        running) instead of writing it whole (default True).
    dump_period : float
        seconds between continuous dumps (default 1).
    aggregate_stats : bool
        keep the statistics :func:`dumps` prints (default False).
    profile_process : str
        ``'worker'`` (``'server'``: no such process in symgraph).
    """
    unknown = sorted(set(kwargs) - set(_CONFIG_KEYS))
    if unknown:
        raise UnknownNameError('profiler.set_config: unknown argument %s; it takes %s'
                               % (', '.join(map(repr, unknown)), ', '.join(_CONFIG_KEYS)))
    _process(kwargs.get('profile_process', 'worker'))
    flags = {k: _bool(k, kwargs.get(k, k != 'profile_all'))
             for k in ('profile_all', 'profile_symbolic', 'profile_imperative',
                       'profile_memory', 'profile_api')}
    mode = 0
    for key, bit in (('profile_symbolic', rec.MODE_SYMBOLIC),
                     ('profile_imperative', rec.MODE_IMPERATIVE),
                     ('profile_api', rec.MODE_API), ('profile_memory', rec.MODE_MEMORY)):
        if flags[key] or flags['profile_all']:
            mode |= bit
    continuous = _bool('continuous_dump', kwargs.get('continuous_dump', True))
    try:
        period = float(kwargs.get('dump_period', 1.0))
    except (TypeError, ValueError):
        raise ArgumentError('profiler.set_config: dump_period must be a number of seconds, '
                            'got %r' % (kwargs.get('dump_period'),)) from None
    if continuous and not period > 0:
        raise ArgumentError('profiler.set_config: dump_period must be > 0 seconds with '
                            'continuous_dump, got %r' % (period,))
    filename = kwargs.get('filename', 'profile.json')
    if not isinstance(filename, (str, os.PathLike)):
        raise ArgumentTypeError('profiler.set_config: filename must be a path, got %s'
                                % type(filename).__name__)
    st = rec.STATE
    with st.lock:
        st.mode = mode
        st.filename = os.fspath(filename)
        if st.filename and os.path.exists(st.filename):
            os.unlink(st.filename)
        st.dump_count = 0
        _trace[0] = TraceFile(st.filename)
        st.continuous_dump = continuous
        st.dump_period = period
        st.aggregate_stats = _bool('aggregate_stats', kwargs.get('aggregate_stats', False))
        if not st.aggregate_stats:
            _agg.clear()
        rec.update()
    _continuous(continuous)


def profiler_set_config(mode='symbolic', filename='profile.json'):
    """Set up the profiler (deprecated: use :func:`set_config`)."""
    warnings.warn('profiler.profiler_set_config() is deprecated. '
                  'Please use profiler.set_config() instead', DeprecationWarning, stacklevel=2)
    if mode not in ('symbolic', 'imperative', 'api', 'memory', 'all'):
        raise ArgumentError("profiler_set_config: mode must be 'symbolic' or 'all', got %r"
                            % (mode,))
    set_config(**{'profile_' + mode: True, 'filename': filename})


def set_state(state='stop', profile_process='worker'):
    """Run (``'run'``) or stop (``'stop'``) the profiler."""
    if state not in ('run', 'stop'):
        raise ArgumentError("profiler.set_state: state must be 'run' or 'stop', got %r"
                            % (state,))
    _process(profile_process)
    st = rec.STATE
    with st.lock:
        st.running = state == 'run'
        if st.running:
            st.enable_output = True
            st.paused = False
        rec.update()


def profiler_set_state(state='stop'):
    """Run or stop the profiler (deprecated: use :func:`set_state`)."""
    warnings.warn('profiler.profiler_set_state() is deprecated. '
                  'Please use profiler.set_state() instead', DeprecationWarning, stacklevel=2)
    set_state(state)


def state():
    """``'run'`` or ``'stop'``."""
    return 'run' if rec.STATE.running else 'stop'


get_state = state


def pause(profile_process='worker'):
    """Pause profiling: nothing is recorded until :func:`resume`."""
    _process(profile_process)
    with rec.STATE.lock:
        rec.STATE.paused = True
        rec.update()


def resume(profile_process='worker'):
    """Resume paused profiling."""
    _process(profile_process)
    with rec.STATE.lock:
        rec.STATE.paused = False
        rec.update()


def _dump(finished):
    """MXNet's ``DumpProfile``: write the records since the last dump (and fold them into
    the aggregate statistics)."""
    st = rec.STATE
    with st.lock:
        if not st.enable_output:
            return
        if finished:
            _continuous(False)
        records = rec.take_events()
        st.dump_count += 1
        first = st.dump_count == 1
        last = finished or not st.continuous_dump
        events = []
        rows, procs = expand(records, os.getpid(), events,
                             _agg if st.aggregate_stats else None)
        if _trace[0] is None or _trace[0].filename != st.filename:
            _trace[0] = TraceFile(st.filename)
        _trace[0].write(events, rows, procs, first, last, st.continuous_dump)
        if last:
            st.dump_count = 0
        st.enable_output = st.continuous_dump and not last


def dump(finished=True, profile_process='worker'):
    """Write the trace file (with ``finished``, the last time: the file is complete and
    output stops until the profiler runs again)."""
    _process(profile_process)
    _dump(bool(finished))


def dump_profile():
    """Dump the profile (deprecated: use :func:`dump`)."""
    warnings.warn('profiler.dump_profile() is deprecated. '
                  'Please use profiler.dump() instead', DeprecationWarning, stacklevel=2)
    dump(True)


def dumps(reset=False, format='table', sort_by='total', ascending=False):
    """The aggregate statistics (``set_config(aggregate_stats=True)``) as MXNet prints them.

    Parameters
    ----------
    reset : bool
        clear the statistics after printing them.
    format : str
        ``'table'`` (MXNet's text table: per category, Name, Total Count, Time, Min, Max and
        Avg Time in ms; memory in kB) or ``'json'``.
    sort_by : str
        ``'total'``, ``'avg'``, ``'min'``, ``'max'`` or ``'count'``.
    ascending : bool
    """
    if format not in ('table', 'json'):
        raise ArgumentError("Invalid value provided for format: %r. Support: 'table', 'json'"
                            % (format,))
    if sort_by not in _SORT_BY:
        raise ArgumentError("Invalid value provided for sort_by: %r. Support: 'total', "
                            "'avg', 'min', 'max', 'count'" % (sort_by,))
    for name, v in (('ascending', ascending), ('reset', reset)):
        if v not in (False, True):
            raise ArgumentError('Invalid value provided for %s: %r. Support: False, True'
                                % (name, v))
    st = rec.STATE
    with st.lock:
        if st.enable_output:       # as MXNet: the records so far are dumped (and counted)
            _dump(False)
        if not st.aggregate_stats:
            return ''
        text = _agg.table(sort_by, ascending) if format == 'table' else \
            _agg.json(sort_by, ascending)
        if reset:
            _agg.clear()
    return text


def _continuous(on):
    """Start or stop the thread dumping every ``dump_period`` seconds."""
    stop = _timer[0]
    if stop is not None:
        stop.set()
        _timer[0] = None
    if not on:
        return
    stop = _timer[0] = threading.Event()

    def run():
        while not stop.wait(rec.STATE.dump_period):
            if rec.STATE.running and rec.STATE.enable_output:
                _dump(False)
    threading.Thread(target=run, name='DumpProfileTimer', daemon=True).start()


@contextlib.contextmanager
def scope(name='<unk>:', append_mode=False):
    """Name the imperative calls made inside: their events are ``<name><operator>``
    (MXNet 2's ``profiler.scope``; with ``append_mode`` the name adds to the enclosing
    scope's)."""
    name = str(name)
    if not name.endswith(':'):
        name += ':'
    outer, cat = rec.scope()
    rec.push_scope(outer + name if append_mode else name, cat)
    try:
        yield
    finally:
        rec.pop_scope()


# ------------------------------------------------------------------ user objects
class Domain:
    """A profiling domain: the category of the tasks, frames, counters and markers made in
    it (Chrome's ``cat``, a table of its own in :func:`dumps`)."""

    def __init__(self, name):
        self.name = str(name)

    def __str__(self):
        return self.name

    def new_task(self, name):
        return Task(self, name)

    def new_frame(self, name):
        return Frame(self, name)

    def new_counter(self, name, value=None):
        return Counter(self, name, value)

    def new_marker(self, name):
        return Marker(self, name)


def _domain(domain, what):
    if not isinstance(domain, Domain):
        raise ArgumentTypeError('profiler.%s: domain must be a profiler.Domain, got %s'
                                % (what, type(domain).__name__))
    return domain


class _Duration:
    """A named span of time, recorded from :meth:`start` to :meth:`stop` (while the
    profiler runs, unpaused, at the start)."""
    _cat = None

    def __init__(self, name):
        self.name = str(name)
        self._t0 = None

    def start(self):
        self._t0 = rec.now() if rec.active else None

    def stop(self):
        t0, self._t0 = self._t0, None
        if t0 is not None and rec.active:
            rec.record(self.name, self._cat, t0, rec.now())

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def __str__(self):
        return self.name


class Task(_Duration):
    """A task: a logical unit of work of one thread (its passes accumulate in one row of
    :func:`dumps`)."""

    def __init__(self, domain, name):
        super().__init__(name)
        self.domain = _domain(domain, 'Task')
        self._cat = self.domain.name


class Frame(_Duration):
    """A frame: a span shown per pass (category ``<domain>,frame``)."""

    def __init__(self, domain, name):
        super().__init__(name)
        self.domain = _domain(domain, 'Frame')
        self._cat = self.domain.name + ',frame'


class Event(_Duration):
    """An event: a span of the calling thread (category ``event``)."""
    _cat = 'event'


class Counter:
    """A counter whose values over time make a ``C`` track (``+=``, ``-=``,
    :meth:`increment`, :meth:`decrement`, :meth:`set_value`)."""

    def __init__(self, domain, name, value=None):
        self.domain = _domain(domain, 'Counter')
        self.name = str(name)
        self.value = 0
        if value is not None:
            self.set_value(value)

    def _send(self):
        if rec.active:
            rec.counter(self.name, self.domain.name, self.value)

    def set_value(self, value):
        self.value = int(value)
        self._send()

    def increment(self, delta=1):
        self.value += int(delta)
        self._send()

    def decrement(self, delta=1):
        if int(delta) > self.value:
            # (MXNet's counter is unsigned and checks this)
            raise ArgumentError('profiler.Counter %r: decrement by %d below zero (value %d)'
                                % (self.name, int(delta), self.value))
        self.value -= int(delta)
        self._send()

    def __iadd__(self, delta):
        self.increment(delta)
        return self

    def __isub__(self, delta):
        self.decrement(delta)
        return self

    def __str__(self):
        return self.name


class Marker:
    """An instant in time (``mark(scope)``: ``'global'``, ``'process'``, ``'thread'``,
    ``'task'`` or ``'marker'``)."""

    def __init__(self, domain, name):
        self.domain = _domain(domain, 'Marker')
        self.name = str(name)

    def mark(self, scope='process'):
        if scope not in ('global', 'process', 'thread', 'task', 'marker'):
            raise ArgumentError("profiler.Marker.mark: scope must be 'global', 'process', "
                                "'thread', 'task' or 'marker', got %r" % (scope,))
        if rec.active:
            rec.instant(self.name, self.domain.name + ',instant_marker', scope)


# ------------------------------------------------------------------ oneDNN
def _onednn_primitive(impl, t0, t1):
    # (the calling thread in args: a dump adds each step's oneDNN time to its event)
    rec.record(impl, 'oneDNN', t0, t1, {'thread': rec.thread_row()}, row=rec.ONEDNN_ROW)


def _time_onednn(on):
    """While profiling runs, the CPU backend reports each oneDNN primitive it runs (on
    the row of oneDNN's OpenMP team); otherwise its runs carry no timing at all."""
    backend = opdef.cpu_backend()
    if backend is not None:
        backend.time_primitives(_onednn_primitive if on else None, rec.now)


rec.STATE.hooks.append(_time_onednn)


# ------------------------------------------------------------------ environment
def _from_environment():
    """MXNET_PROFILER_MODE (mode bits) and MXNET_PROFILER_AUTOSTART, read at import as
    MXNet's Profiler constructor reads them."""
    mode = os.environ.get('MXNET_PROFILER_MODE')
    if mode:
        try:
            rec.STATE.mode = int(mode)
        except ValueError:
            raise ArgumentError('MXNET_PROFILER_MODE must be an integer of mode bits (1 '
                                'symbolic, 2 imperative, 4 API, 8 memory), got %r'
                                % mode) from None
    auto = os.environ.get('MXNET_PROFILER_AUTOSTART', '0').strip()
    if auto not in ('', '0'):
        rec.STATE.running = True
        rec.STATE.enable_output = True
        rec.update()


def _at_exit(pid=os.getpid()):
    # MXNet's Profiler destructor dumps what is left (in this process: a forked child that
    # runs its exit handlers must not write its parent's file)
    if rec.STATE.enable_output and os.getpid() == pid:
        try:
            _dump(True)
        except OSError:
            pass


_from_environment()
atexit.register(_at_exit)
