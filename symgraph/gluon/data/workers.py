"""The worker pool of :class:`~.dataloader.DataLoader` and the shared-memory transport of
its batches (the machinery behind ``num_workers > 0``, after the design of MXNet 1.9.1's
``python/mxnet/gluon/data/dataloader.py``).

A worker process makes a batch (reads the samples, runs the batchify function), then writes
every array of the batch into one file in shared memory (``/dev/shm`` where it exists, the
temporary directory elsewhere) and returns only the file's name and the arrays' shapes,
dtypes and offsets: the arrays are never pickled. The main process maps the file, unlinks
it at once, and rebuilds the NDArrays as views of the mapping, which lives as long as any
of them (no copy on this side).

Each batch is a :class:`_Ticket`: when the iterator that asked for it is dropped before the
batch arrives, the pool's result thread deletes the file on arrival, so an abandoned epoch
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

__all__ = ['WorkerPool', 'WorkerDiedError', 'default_start_method']

#: the byte alignment of each array inside a batch file (a cache line)
_ALIGN = 64
#: seconds between two looks at the workers' health while a batch is awaited
_POLL = 0.25


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
    _WORKER.update(dataset=dataset, batchify_fn=batchify_fn, directory=directory)


def _process_worker(samples):
    batchify_fn = _WORKER['batchify_fn']
    samples = [_WORKER['dataset'][i] for i in samples]
    # a batchify function may say how its batch goes to shared memory without being made
    # first (the default one: each field stacked in the batch file; None where it cannot)
    plan = getattr(batchify_fn, 'shared_plan', None)
    batch = plan(samples) if plan is not None else None
    if batch is None:
        batch = batchify_fn(samples)
    return to_shared(batch, _WORKER['directory'])


class _ThreadWorker(object):
    """The work of a thread pool: the batch itself travels (same process)."""

    def __init__(self, dataset, batchify_fn):
        self._dataset, self._batchify_fn = dataset, batchify_fn

    def __call__(self, samples):
        return None, self._batchify_fn([self._dataset[i] for i in samples])


def _shutdown(pool, directory):
    pool.terminate()            # terminate() joins the workers: no zombies are left
    pool.join()
    if directory is not None:
        shutil.rmtree(directory, ignore_errors=True)


class _Ticket(object):
    """One batch asked of the pool. The pool's result thread calls :meth:`arrived`; the
    iterator :meth:`take`-s the result or :meth:`drop`-s it (its file is then deleted,
    now or on arrival)."""
    __slots__ = ('result', '_lock', '_value', '_dropped')

    def __init__(self):
        self.result = None
        self._lock = threading.Lock()
        self._value = None
        self._dropped = False

    def arrived(self, value):
        with self._lock:
            if not self._dropped:
                self._value = value
                return
        _discard(value[0])

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
            _discard(value[0])


class WorkerPool(object):
    """``num_workers`` processes (or threads) making batches of ``dataset`` with
    ``batchify_fn``; shut down by :meth:`close`, when garbage-collected, or at exit."""

    def __init__(self, num_workers, dataset, batchify_fn, thread_pool=False,
                 start_method=None):
        self.thread_pool = bool(thread_pool)
        self.directory = None
        self._procs = []
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
                    self._pool = multiprocessing.get_context(method).Pool(
                        num_workers, initializer=_process_initializer,
                        initargs=(dataset, batchify_fn, self.directory))
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
            # the pool's processes (the pool replaces one that dies: a batch it was making
            # is then never made, which BatchStream notices by their exit codes)
            self._procs = [p for p in multiprocessing.active_children() if p not in before]
        self._finalizer = weakref.finalize(self, _shutdown, self._pool, self.directory)

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
        ticket = _Ticket()
        ticket.result = self._pool.apply_async(self._work, (list(samples),),
                                               callback=ticket.arrived)
        return ticket

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
        return self._finish(from_shared(*value))

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
