"""The worker pool of :class:`~.dataloader.DataLoader` and the shared-memory transport of
its batches (the machinery behind ``num_workers > 0``, after the design of MXNet 1.9.1's
``python/mxnet/gluon/data/dataloader.py``).

A worker process makes a batch (reads the samples, runs the batchify function), then writes
every array of the batch into a *slot*, a file in shared memory (``/dev/shm`` where it
exists, the temporary directory elsewhere), and returns only the slot's name and the arrays'
shapes, dtypes and offsets: the arrays are never pickled. The main process maps the slot
(the first time it sees it; it unlinks the file at once) and rebuilds the NDArrays as views
of the mapping, through a lease that lives as long as any of them (no copy on this side).

Slots are recycled: both processes keep their mappings, and when the last array of a batch
is freed the lease's finalizer clears the slot's busy byte (its first byte, in the shared
memory itself), which tells the worker that made it that the slot may take another batch.
A fresh file per batch cost the worker its pages (allocated and zeroed by the kernel) and
the main process its page faults and unmapping, every batch: ~35 us per 48 KB image, more
than a quarter of the worker's time for 64x64 JPEG samples. A worker retires a slot that
stayed free through ``_SLOT_IDLE`` of its batches (it unmaps it and names it with its next
batch, so the main process drops its mapping too): the slots in use while the caller keeps
a few batches stay, those of a burst of kept batches go.

Each batch is a :class:`_Ticket`: when the iterator that asked for it is dropped before the
batch arrives, the pool's result thread frees the slot on arrival, so an abandoned epoch
leaks nothing; the pool's own directory is removed when the pool shuts down (which also
catches the files of workers killed mid-batch).

Start methods: 'fork' where the platform has it (MXNet's choice: the dataset is inherited,
not pickled), else the platform's default; ``DataLoader(multiprocessing_context='spawn')``
or the environment variable ``SYMGRAPH_DATALOADER_START_METHOD`` choose another, and then
the dataset and the batchify function must be picklable (module-level functions, no
lambdas), as with PyTorch's DataLoader. Python 3.14 makes 'forkserver' the default on Linux
and 3.12+ warns about fork() in a process with threads; symgraph keeps MXNet's 'fork' (and
silences that warning for its pool): a program whose own threads hold locks while the
workers start (logging from threads, for example), or that must not fork, should pass
``multiprocessing_context='forkserver'`` or ``'spawn'``.
"""
import collections
import ctypes
import mmap
import multiprocessing
import multiprocessing.pool
import os
import shutil
import signal
import tempfile
import threading
import time
import warnings
import weakref

import numpy as np

from ... import config
from ...context import Context
from ...ndarray import NDArray
from ...base import ArgumentError, SymgraphError
from ...profiler import _recorder as _prof

__all__ = ['WorkerPool', 'WorkerDiedError', 'default_start_method']

#: the byte alignment of each array inside a batch file (a cache line)
_ALIGN = 64
#: seconds between two looks at the workers' health while a batch is awaited
_POLL = 0.25
#: the bytes before a slot's first array: the busy byte, then padding to an alignment
_SLOT_HEAD = _ALIGN
#: a worker retires a slot left free through this many of its batches (keeping only a
#: couple of free slots made new ones, and their page faults, every few batches)
_SLOT_IDLE = 8
#: a new slot's size is rounded up to this (a later, slightly larger batch still fits)
_SLOT_GRAIN = 1 << 16


class WorkerDiedError(SymgraphError, RuntimeError):
    """A DataLoader worker process died (a signal, ``os._exit``) while a batch was
    awaited; the pool is stopped (the next epoch starts a new one)."""


def default_start_method():
    """The start method of the worker processes: the switch ``DATALOADER_START_METHOD``
    (docs/config.md) if set, else 'fork' where available (as MXNet), else the platform's
    default."""
    method = config.choice('DATALOADER_START_METHOD')
    methods = multiprocessing.get_all_start_methods()
    if method:
        if method not in methods:
            raise ArgumentError('%s=%r: this platform has the start methods %s'
                                % (config.env_name('DATALOADER_START_METHOD'), method,
                                   methods))
        return method
    return 'fork' if 'fork' in methods else multiprocessing.get_start_method()


def _shm_root():
    """Where batch files go: RAM-backed ``/dev/shm`` if writable, else the temp dir."""
    if os.path.isdir('/dev/shm') and os.access('/dev/shm', os.W_OK):
        return '/dev/shm'
    return tempfile.gettempdir()


# ---------------------------------------------------------------- the transport
class _Slot(object):
    """Where one array of a batch lies in the batch file (pickled instead of the array)."""
    __slots__ = ('offset', 'shape', 'dtype', 'ctx')

    def __init__(self, offset, shape, dtype, ctx):
        self.offset, self.shape, self.dtype, self.ctx = offset, shape, dtype, ctx

    def __getstate__(self):
        return (self.offset, self.shape, self.dtype, self.ctx)

    def __setstate__(self, state):
        self.offset, self.shape, self.dtype, self.ctx = state


class Stacked(object):
    """A field of a batch left unstacked by a batchify function's ``shared_plan``: the
    samples' contiguous arrays of one shape and dtype, which :func:`to_shared` writes one
    after another into the batch file, making the stack there (one copy instead of a stack
    and then a copy); the main process gets an NDArray of context ``ctx``."""
    __slots__ = ('arrays', 'ctx')

    def __init__(self, arrays, ctx):
        self.arrays, self.ctx = arrays, ctx


def _plan(obj, arrays, size):
    """``obj`` with each NDArray / NumPy array (or :class:`Stacked`) replaced by a
    :class:`_Slot`; the arrays go to ``arrays`` as (offset, contiguous array or list of
    them); returns (tree, new size)."""
    if isinstance(obj, Stacked):
        first = obj.arrays[0]
        offset = -(-size // _ALIGN) * _ALIGN
        arrays.append((offset, obj.arrays))
        return (_Slot(offset, (len(obj.arrays),) + first.shape, first.dtype.str, obj.ctx),
                offset + first.nbytes * len(obj.arrays))
    if isinstance(obj, NDArray) or (isinstance(obj, np.ndarray) and not obj.dtype.hasobject):
        if isinstance(obj, NDArray):
            ctx = (obj.context.device_type, obj.context.device_id)
            # a CPU array is written out as it is (asnumpy would copy it once more)
            arr = np.ascontiguousarray(obj._data if isinstance(obj._data, np.ndarray)
                                       else obj.asnumpy())
        else:
            ctx, arr = None, np.ascontiguousarray(obj)
        offset = -(-size // _ALIGN) * _ALIGN
        arrays.append((offset, arr))
        return _Slot(offset, arr.shape, arr.dtype.str, ctx), offset + arr.nbytes
    if isinstance(obj, (list, tuple)) and type(obj) in (list, tuple):
        items = []
        for item in obj:
            item, size = _plan(item, arrays, size)
            items.append(item)
        return type(obj)(items), size
    if type(obj) is dict:
        out = {}
        for key, item in obj.items():
            out[key], size = _plan(item, arrays, size)
        return out, size
    return obj, size


def to_shared(batch, directory):
    """Write the arrays of ``batch`` into a new file of ``directory``; returns the
    picklable (path, tree) that :func:`from_shared` turns back into the batch."""
    arrays = []
    tree, size = _plan(batch, arrays, 0)
    if not arrays:
        return None, tree
    fd, path = tempfile.mkstemp(prefix='batch-', dir=directory)
    try:
        os.ftruncate(fd, max(size, 1))
        for offset, parts in arrays:
            for arr in parts if isinstance(parts, list) else (parts,):
                view = memoryview(arr.reshape(-1).view(np.uint8))
                while len(view):                # pwrite may write less than asked
                    done = os.pwrite(fd, view, offset)
                    view, offset = view[done:], offset + done
    except BaseException:
        os.unlink(path)
        raise
    finally:
        os.close(fd)
    return path, tree


def _rebuild(tree, buf):
    if isinstance(tree, _Slot):
        arr = np.ndarray(tree.shape, np.dtype(tree.dtype), buffer=buf, offset=tree.offset)
        if tree.ctx is None:
            return arr
        ctx = Context(*tree.ctx)
        if ctx.device_type == 'gpu':
            return NDArray(arr, Context('cpu_shared', 0)).as_in_context(ctx)
        return NDArray(arr, ctx)
    if type(tree) in (list, tuple):
        return type(tree)(_rebuild(t, buf) for t in tree)
    if type(tree) is dict:
        return {k: _rebuild(v, buf) for k, v in tree.items()}
    return tree


def from_shared(path, tree):
    """The batch that :func:`to_shared` wrote: its arrays are views of the mapped file
    (unlinked here; the mapping is freed with the last array)."""
    if path is None:
        return tree
    try:
        with open(path, 'r+b') as f:
            buf = mmap.mmap(f.fileno(), os.fstat(f.fileno()).st_size)
    except FileNotFoundError:
        raise RuntimeError('DataLoader: the batch file %s is gone (its worker pool was shut '
                           'down while the batch was waiting)' % path) from None
    finally:
        _discard(path)
    return _rebuild(tree, buf)


def _discard(path):
    if path is not None:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


def _write_arrays(buf, arrays, base):
    """Copy the arrays that :func:`_plan` listed into the writable mapping ``buf``, the
    first at byte ``base``: NumPy copies into views of the mapping (no system call, and no
    page fault once the slot's pages exist)."""
    for offset, parts in arrays:
        if isinstance(parts, list):             # a Stacked field: the stack is made here
            first = parts[0]
            dst = np.ndarray((len(parts),) + first.shape, first.dtype, buffer=buf,
                             offset=base + offset)
            for i, part in enumerate(parts):
                dst[i] = part
        else:
            np.copyto(np.ndarray(parts.shape, parts.dtype, buffer=buf, offset=base + offset),
                      parts)


class _ShmSlot(object):
    """One of a worker's slots: a shared-memory file of ``capacity`` bytes, mapped."""
    __slots__ = ('name', 'buf', 'capacity', 'handed', 'idle')

    def __init__(self, name, buf, capacity):
        self.name, self.buf, self.capacity = name, buf, capacity
        self.handed = False             # seen by the main process (which unlinked it)
        self.idle = 0                   # batches made since it was last taken


class _WorkerSlots(object):
    """A worker process's slots (see the module docstring): :meth:`take` gives a free one
    that fits, or a new one; the main process frees them by clearing their busy byte."""

    def __init__(self, directory):
        self.directory = directory
        self.slots = []
        self.retired = []
        self._count = 0

    def take(self, size):
        need = _SLOT_HEAD + size
        free = [s for s in self.slots if s.buf[0] == 0]
        fits = [s for s in free if s.capacity >= need]
        if fits:
            slot = min(fits, key=lambda s: s.capacity)
            free.remove(slot)
        else:
            slot = self._new(need)
        # retire the slots that stayed free too long (their memory goes back to the system
        # once the main process drops its mapping too)
        for old in free:
            old.idle += 1
            if old.idle > _SLOT_IDLE:
                self.slots.remove(old)
                old.buf.close()
                self.retired.append(old.name)
        slot.idle = 0
        slot.buf[0] = 1
        return slot

    def _new(self, need):
        capacity = -(-need // _SLOT_GRAIN) * _SLOT_GRAIN
        self._count += 1
        name = 'slot-%d-%d' % (os.getpid(), self._count)
        fd = os.open(os.path.join(self.directory, name), os.O_RDWR | os.O_CREAT | os.O_EXCL,
                     0o600)
        try:
            os.ftruncate(fd, capacity)
            buf = mmap.mmap(fd, capacity)
        except BaseException:
            os.unlink(os.path.join(self.directory, name))
            raise
        finally:
            os.close(fd)
        slot = _ShmSlot(name, buf, capacity)
        self.slots.append(slot)
        return slot

    def give_back(self, slot):
        """A slot whose batch failed: free again (or deleted, if never handed over)."""
        if slot.handed:
            slot.buf[0] = 0
            return
        self.slots.remove(slot)
        slot.buf.close()
        _discard(os.path.join(self.directory, slot.name))

    def pop_retired(self):
        retired, self.retired = self.retired, []
        return retired


def to_slot(batch, slots):
    """Write the arrays of ``batch`` into a slot of ``slots`` (a :class:`_WorkerSlots`);
    returns the picklable (slot name or None, tree, retired slot names) that
    :meth:`SlotMaps.receive` turns back into the batch."""
    arrays = []
    tree, size = _plan(batch, arrays, 0)
    if not arrays:
        return None, tree, slots.pop_retired()
    slot = slots.take(size)
    try:
        _write_arrays(slot.buf, arrays, _SLOT_HEAD)
    except BaseException:
        slots.give_back(slot)
        raise
    slot.handed = True
    return slot.name, tree, slots.pop_retired()


def _free_slot(buf):
    """A lease's finalizer: the batch's arrays are gone, its slot may be written again."""
    if not buf.closed:
        buf[0] = 0


class SlotMaps(object):
    """The main process's side of the slots of one pool: a mapping per slot, made (and the
    file unlinked) the first time a batch comes in it, dropped when its worker retires it."""

    def __init__(self, directory):
        self.directory = directory
        self._maps = {}
        self._lock = threading.Lock()

    def _map(self, name, retired):
        with self._lock:
            for old in retired:
                self._maps.pop(old, None)
            if name is None:
                return None
            buf = self._maps.get(name)
            if buf is None:
                path = os.path.join(self.directory, name)
                try:
                    fd = os.open(path, os.O_RDWR)
                except FileNotFoundError:
                    raise RuntimeError('DataLoader: the batch file %s is gone (its worker pool '
                                       'was shut down while the batch was waiting)'
                                       % path) from None
                try:
                    buf = mmap.mmap(fd, os.fstat(fd).st_size)
                finally:
                    os.close(fd)
                    _discard(path)
                self._maps[name] = buf
            return buf

    def receive(self, value):
        """The batch of a worker's :func:`to_slot` value: its arrays are views of the slot,
        through a lease whose end frees the slot."""
        name, tree, retired = value
        buf = self._map(name, retired)
        if buf is None:
            return tree
        lease = (ctypes.c_char * (len(buf) - _SLOT_HEAD)).from_buffer(buf, _SLOT_HEAD)
        weakref.finalize(lease, _free_slot, buf).atexit = False
        return _rebuild(tree, lease)

    def release(self, value):
        """Free the slot of a batch nobody will take (an abandoned epoch's)."""
        name, _, retired = value
        try:
            buf = self._map(name, retired)
        except RuntimeError:            # the pool is gone, and its files with it
            return
        if buf is not None:
            _free_slot(buf)

    def clear(self):
        with self._lock:
            self._maps.clear()


# ---------------------------------------------------------------- worker functions
_WORKER = {}


#: glibc's mallopt parameters: M_TRIM_THRESHOLD, M_MMAP_THRESHOLD
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3


def _keep_freed_heap():
    """Have glibc's malloc keep up to 64 MB of freed heap (and serve blocks below 32 MB from
    it). A worker frees a batch's samples (a few MB of arrays of some 10-100 KB each) at
    once; with the default 128 KB trim threshold malloc hands that memory back to the
    system and the next batch faults every page in again (zeroed by the kernel): about a
    third more CPU per small image, measured. The main process reaches similar settings by
    itself (glibc raises both thresholds when it frees a large mapped block, such as a
    stacked batch); a worker, which never frees one, does not. No-op without glibc."""
    try:
        import ctypes
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    mallopt(_M_TRIM_THRESHOLD, 64 << 20)
    mallopt(_M_MMAP_THRESHOLD, 32 << 20)


def _process_initializer(dataset, batchify_fn, directory):
    # Ctrl-C is the main process's to handle: it shuts the pool down
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _keep_freed_heap()
    _WORKER.update(dataset=dataset, batchify_fn=batchify_fn, directory=directory,
                   slots=_WorkerSlots(directory))


def _process_worker(samples):
    batchify_fn = _WORKER['batchify_fn']
    samples = [_WORKER['dataset'][i] for i in samples]
    # a batchify function may say how its batch goes to shared memory without being made
    # first (the default one: each field stacked in the batch file; None where it cannot)
    plan = getattr(batchify_fn, 'shared_plan', None)
    batch = plan(samples) if plan is not None else None
    if batch is None:
        batch = batchify_fn(samples)
    return to_slot(batch, _WORKER['slots'])


class _Profiled(object):
    """A worker process's batch value with the profiler's records it made meanwhile."""
    __slots__ = ('value', 'pid', 'records', 'threads')

    def __init__(self, value, pid, records, threads):
        self.value, self.pid, self.records, self.threads = value, pid, records, threads


def _profiled_work(work, samples, mode, parent):
    """``work(samples)`` while the parent's mx.profiler runs: the batch is an event
    (``DataLoader batch``, on the worker's row). A worker process records with the
    parent's mode for the time of this batch and sends its records back with the value
    (:class:`_Profiled`); a thread of the parent's process records in place."""
    own = os.getpid() != parent
    st = _prof.STATE
    if own:
        st.mode, st.running, st.paused = mode, True, False
        _prof.update()
    t0 = _prof.now()
    try:
        value = work(samples)
    finally:
        _prof.record('DataLoader batch', 'dataloader', t0, _prof.now(),
                     {'samples': len(samples)})
        if own:
            st.running = False
            _prof.update()
    if not own:
        return value
    records = _prof.take_events()
    used = {r[-2] if r[0] == 'X' else r[-1] for r in records if r[0] in 'XSCi'}
    return _Profiled(value, os.getpid(), records,
                     {tid: name for tid, name in st.threads.items() if tid in used})


def _arrived_profiled(arrived, value):
    """The pool's callback for a batch made by :func:`_profiled_work`: the records of a
    worker process go to this process's profiler (as that process's), then the value on."""
    if value.__class__ is _Profiled:
        _prof.add_process(value.pid, 'DataLoader worker (pid %d)' % value.pid, value.records,
                          value.threads)
        value = value.value
    arrived(value)


class _ThreadWorker(object):
    """The work of a thread pool: the batch itself travels (same process)."""

    def __init__(self, dataset, batchify_fn):
        self._dataset, self._batchify_fn = dataset, batchify_fn

    def __call__(self, samples):
        return None, self._batchify_fn([self._dataset[i] for i in samples]), ()


class _Pool(multiprocessing.pool.Pool):
    """``multiprocessing.Pool`` whose worker-handler thread waits only for a worker's exit
    or the pool's own notices. The stock handler (CPython 3.8-3.13) also waits on the
    result pipe, so each result wakes it and it loops until the result thread has read the
    result: measured ~0.8 ms of the main process's CPU per 64-image batch (~12 us per
    image, a tenth of a worker's time per 64x64 JPEG). Its wake-ups on a result serve
    ``maxtasksperchild``, which the DataLoader does not use."""

    def _get_sentinels(self):
        notifier = getattr(self, '_change_notifier', None)
        if notifier is None:            # another Pool implementation: leave it alone
            return super(_Pool, self)._get_sentinels()
        return [notifier._reader]


def _shutdown(pool, directory, maps):
    pool.terminate()            # terminate() joins the workers: no zombies are left
    pool.join()
    if maps is not None:
        maps.clear()            # a slot's memory lives on while a batch's lease does
    if directory is not None:
        shutil.rmtree(directory, ignore_errors=True)


def _no_release(value):
    """A thread pool's batches hold no shared memory."""


class _Ticket(object):
    """One batch asked of the pool. The pool's result thread calls :meth:`arrived`; the
    iterator :meth:`take`-s the result or :meth:`drop`-s it (its slot is then freed, now
    or on arrival, by ``release``)."""
    __slots__ = ('result', '_lock', '_value', '_dropped', '_release')

    def __init__(self, release):
        self.result = None
        self._lock = threading.Lock()
        self._value = None
        self._dropped = False
        self._release = release

    def arrived(self, value):
        with self._lock:
            if not self._dropped:
                self._value = value
                return
        self._release(value)

    def take(self, timeout):
        self.result.get(timeout)         # raises the worker's exception, or times out
        return self.claim()

    def claim(self):
        """The value of an arrived result (after ``result.get``), now the caller's."""
        with self._lock:
            value, self._value, self._dropped = self._value, None, True
        return value

    def drop(self):
        with self._lock:
            value, self._value, self._dropped = self._value, None, True
        if value is not None:
            self._release(value)


class WorkerPool(object):
    """``num_workers`` processes (or threads) making batches of ``dataset`` with
    ``batchify_fn``; shut down by :meth:`close`, when garbage-collected, or at exit."""

    def __init__(self, num_workers, dataset, batchify_fn, thread_pool=False,
                 start_method=None):
        self.thread_pool = bool(thread_pool)
        self.directory = None
        self._procs = []
        self._maps = None
        if self.thread_pool:
            self._pool = multiprocessing.pool.ThreadPool(num_workers)
            self._work = _ThreadWorker(dataset, batchify_fn)
        else:
            method = start_method or default_start_method()
            self.directory = tempfile.mkdtemp(prefix='symgraph-dataloader-', dir=_shm_root())
            in_main = threading.current_thread() is threading.main_thread()
            # workers ignore SIGINT from birth (forked before their initializer runs)
            old = signal.signal(signal.SIGINT, signal.SIG_IGN) if in_main else None
            before = set(multiprocessing.active_children())
            try:
                with warnings.catch_warnings():
                    # Python 3.12+ warns on fork() in a process with threads (another
                    # DataLoader's pool, decoding threads): a lock one of them holds stays
                    # locked in the child. MXNet's and PyTorch's loaders fork all the same
                    # (the workers rarely take such locks); the module docstring tells
                    # who must not to choose 'forkserver' or 'spawn'
                    warnings.filterwarnings('ignore', r'.*multi-threaded, use of fork\(\)',
                                            DeprecationWarning)
                    self._pool = _Pool(num_workers, initializer=_process_initializer,
                                       initargs=(dataset, batchify_fn, self.directory),
                                       context=multiprocessing.get_context(method))
            except Exception as err:
                shutil.rmtree(self.directory, ignore_errors=True)
                if method != 'fork':
                    raise type(err)('DataLoader: starting %d worker processes with start '
                                    "method %r failed; with 'spawn' and 'forkserver' the "
                                    'dataset and batchify_fn are pickled to the workers (no '
                                    'lambdas or local functions): %s'
                                    % (num_workers, method, err)) from err
                raise
            finally:
                if in_main:
                    signal.signal(signal.SIGINT, old)
            self._work = _process_worker
            self._maps = SlotMaps(self.directory)
            # the pool's processes (the pool replaces one that dies: a batch it was making
            # is then never made, which BatchStream notices by their exit codes)
            self._procs = [p for p in multiprocessing.active_children() if p not in before]
        self._finalizer = weakref.finalize(self, _shutdown, self._pool, self.directory,
                                           self._maps)

    @property
    def alive(self):
        return self._finalizer.alive

    def dead_worker(self):
        """A worker process that has exited (killed, out of memory, ``os._exit``), or
        None."""
        for proc in self._procs:
            if proc.exitcode is not None:
                return proc
        return None

    def submit(self, samples):
        """Ask for the batch of the sample indices ``samples``; returns its ticket."""
        # the ticket holds the slot maps, not the pool (which must stay collectable)
        ticket = _Ticket(_no_release if self._maps is None else self._maps.release)
        if _prof.active:        # (one flag test: mx.profiler times the batch in the worker)
            ticket.result = self._pool.apply_async(
                _profiled_work, (self._work, list(samples), _prof.STATE.mode, os.getpid()),
                callback=lambda value, arrived=ticket.arrived: _arrived_profiled(arrived,
                                                                                 value))
            return ticket
        ticket.result = self._pool.apply_async(self._work, (list(samples),),
                                               callback=ticket.arrived)
        return ticket

    def receive(self, value):
        """The batch of a ticket's value (views of its slot's shared memory)."""
        if self._maps is None:
            return value[1]
        return self._maps.receive(value)

    def close(self):
        """Stop the workers now (idempotent)."""
        self._finalizer()


class BatchStream(object):
    """The batches of one epoch, in order, ``prefetch`` of them asked ahead (MXNet's
    ``_MultiWorkerIter``). :meth:`close` (also on garbage collection) drops the batches
    still on their way."""

    def __init__(self, pool, batch_sampler, prefetch, timeout, finish, on_timeout):
        self._pool = pool
        self._indices = iter(batch_sampler)
        self._pending = collections.deque()
        self._timeout = timeout
        self._finish = finish
        self._on_timeout = on_timeout
        for _ in range(prefetch):
            self._push_next()

    def _push_next(self):
        samples = next(self._indices, None)
        if samples is not None:
            self._pending.append(self._pool.submit(samples))

    def __iter__(self):
        return self

    def __next__(self):
        self._push_next()
        if not self._pending:
            raise StopIteration
        ticket = self._pending.popleft()
        try:
            value = self._wait(ticket)
        except multiprocessing.TimeoutError:
            ticket.drop()
            self.close()
            raise self._on_timeout() from None
        except WorkerDiedError:
            ticket.drop()
            self.close()
            self._pool.close()
            raise
        except BaseException:           # a worker's error, or Ctrl-C while waiting
            ticket.drop()
            self.close()
            raise
        return self._finish(self._pool.receive(value))

    def _wait(self, ticket):
        """The ticket's value; a worker's exception; a TimeoutError after ``timeout``
        seconds; or WorkerDiedError as soon as a worker process is seen to have died while
        the batch is awaited (its batch would never come)."""
        deadline = time.monotonic() + self._timeout
        while True:
            remaining = deadline - time.monotonic()
            ticket.result.wait(max(0.0, min(remaining, _POLL)))
            if ticket.result.ready():
                return ticket.take(0)
            dead = self._pool.dead_worker()
            if dead is not None:
                code = dead.exitcode
                how = ('killed by signal %d' % -code if code < 0 else
                       'exited with code %d' % code)
                raise WorkerDiedError('DataLoader worker process %d %s while making a batch '
                                      '(out of memory? os._exit in the dataset?)'
                                      % (dead.pid, how))
            if remaining <= 0:
                raise multiprocessing.TimeoutError()

    def close(self):
        while self._pending:
            self._pending.popleft().drop()

    def __del__(self):
        self.close()
