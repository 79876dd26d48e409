"""Decoding processes for :class:`~.image_record.ImageRecordIter` (and
``ImageDetRecordIter``): the batches' rows are read, decoded and augmented in forked worker
processes, which write them straight into batch buffers in shared memory.

Why processes: the decoding threads release the GIL inside the kernel, the JPEG decoder
and NumPy, but the per-image Python around those calls (a third of an image's CPU time for
small images) holds it, and on a busy machine a thread descheduled while holding the GIL
stalls the others. MXNet's decoding threads are C++ and never wait for one another.

Buffers: a batch lives in a *slot*, a file in shared memory (``/dev/shm`` where it exists)
holding the data, label and index arrays of one batch; the main process and the workers
keep their mappings, so a slot's pages are allocated once. The arrays handed to the caller
are views of the main process's mapping through a lease (a ctypes array over the mapping):
when the last of them is freed, the lease's finalizer puts the slot back on the free list.
A batch still being written when its pass is abandoned (``reset``) keeps its slot until
its tasks finish. Free slots beyond what prefetching needs are deleted (a worker drops its
mapping of a deleted slot when it next finds its file gone).

Each worker has its own pipe: the main process writes a batch's record positions and random
numbers into the slot and sends each worker a 12-byte task (the slot and its run of rows),
which answers when its rows are written (or with its exception and traceback). No pool
threads, no pickled arrays: ``multiprocessing.Pool``'s task and result threads cost the
main process ~25 us per image, as much as a third of the decoding itself.

Used only where ``_record_batches._PROCESSES`` is on (off by default: see there why), with
the 'fork' start method (the workers inherit the iterator's decoding function,
which need not be picklable) and for parts long enough to repay starting the processes
(:data:`MIN_RECORDS`); the iterator uses threads otherwise.
"""
import ctypes
import mmap
import multiprocessing
import os
import pickle
import shutil
import signal
import struct
import tempfile
import threading
import traceback
import warnings
import weakref

import numpy as np

__all__ = ['available', 'DecodePool', 'MIN_RECORDS']

#: the fewest records of a part that make the iterator start decoding processes (starting
#: them costs tens of milliseconds; a pass of 1,000 small JPEGs takes ~50 ms on 2 cores)
MIN_RECORDS = 1024
#: byte alignment of each array in a slot
_ALIGN = 64
#: seconds between looks at the workers' health while a batch is awaited
_POLL = 0.25
#: free slots kept beyond those the prefetching needs
_SPARE = 2
#: a task: slot number, first row, end row
_TASK = struct.Struct('<Iii')


def available():
    """Whether decoding processes can start here (the 'fork' start method)."""
    return 'fork' in multiprocessing.get_all_start_methods()


def _layout(batch_size, data_shape, dtype, label_shape, ndraws):
    """[(offset, shape, dtype)] of a slot's arrays (data, label, index, then the record
    positions and random numbers the main process writes), and the slot's size."""
    out, size = [], 0
    for shape, dt in (((batch_size,) + tuple(data_shape), np.dtype(dtype)),
                      ((batch_size,) + tuple(label_shape), np.dtype(np.float32)),
                      ((batch_size,), np.dtype(np.uint64)),
                      ((batch_size,), np.dtype(np.int64)),
                      ((batch_size, ndraws), np.dtype(np.float64))):
        size = -(-size // _ALIGN) * _ALIGN
        out.append((size, shape, dt))
        size += int(np.prod(shape)) * dt.itemsize
    return out, max(size, 1)


def _views(buf, layout):
    return tuple(np.ndarray(shape, dt, buffer=buf, offset=off) for off, shape, dt in layout)


def _slot_name(number):
    return 'batch-%d' % number


# ---------------------------------------------------------------- in the worker processes
def _worker(conn, others, work, directory, layout):
    """A decoding process: runs the tasks that come down ``conn`` until it closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)     # Ctrl-C is the main process's
    for other in others:                # the other workers' pipe ends, inherited
        other.close()
    maps = {}
    while True:
        try:
            number, start, stop = _TASK.unpack(conn.recv_bytes())
        except (EOFError, OSError):
            return
        try:
            name = _slot_name(number)
            buf = maps.get(name)
            if buf is None:
                if len(maps) > 8:       # drop the mappings of slots the main process deleted
                    for old in [k for k in maps
                                if not os.path.exists(os.path.join(directory, k))]:
                        maps.pop(old).close()
                fd = os.open(os.path.join(directory, name), os.O_RDWR)
                try:
                    buf = maps[name] = mmap.mmap(fd, os.fstat(fd).st_size)
                finally:
                    os.close(fd)
            data, label, index, positions, draws = _views(buf, layout)
            work(positions[start:stop].tolist(), draws[start:stop], data, label, index,
                 range(start, stop))
            answer = b'K'
        except Exception as err:        # the main process raises it again
            text = traceback.format_exc()
            try:
                answer = b'E' + pickle.dumps((err, text))
            except Exception:
                answer = b'E' + pickle.dumps((RuntimeError(repr(err)), text))
        try:
            conn.send_bytes(answer)
        except (EOFError, OSError):
            return


# ---------------------------------------------------------------- in the main process
class _Slots(object):
    """The main process's slots: files of ``size`` bytes in ``directory``, mapped."""

    def __init__(self, directory, size, keep):
        self.directory, self.size, self.keep = directory, size, keep
        self._free = []
        self._maps = {}
        self._count = 0
        self._lock = threading.Lock()

    def take(self):
        with self._lock:
            if self._free:
                number = self._free.pop()
                return number, self._maps[number]
            self._count += 1
            number = self._count
        fd = os.open(os.path.join(self.directory, _slot_name(number)),
                     os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.ftruncate(fd, self.size)
            buf = mmap.mmap(fd, self.size)
        finally:
            os.close(fd)
        with self._lock:
            self._maps[number] = buf
        return number, buf

    def give(self, number):
        """Slot ``number`` is free again (its batch's arrays are gone, its tasks done)."""
        with self._lock:
            if number not in self._maps:
                return
            if len(self._free) < self.keep:
                self._free.append(number)
                return
            self._maps.pop(number)
        try:
            os.unlink(os.path.join(self.directory, _slot_name(number)))
        except FileNotFoundError:
            pass

    def clear(self):
        with self._lock:
            self._free = []
            self._maps.clear()


class _Batch(object):
    """One batch being made: its slot, the workers it waits for, whether its arrays are
    gone (the slot is freed when both its answers are in and its arrays are gone)."""
    __slots__ = ('number', 'waiting', 'dropped', 'error')

    def __init__(self, number, waiting):
        self.number, self.waiting = number, set(waiting)
        self.dropped, self.error = False, None


def _dropped(lock, slots, batch):
    """A lease's finalizer: the batch's arrays are gone."""
    with lock:
        batch.dropped = True
        done = not batch.waiting
    if done:
        slots.give(batch.number)


def _stop(conns, procs, directory, slots):
    for conn in conns:
        conn.close()                    # the workers end at the closed pipe
    for proc in procs:
        proc.join(1.0)
        if proc.exitcode is None:
            proc.terminate()
            proc.join()
    slots.clear()
    shutil.rmtree(directory, ignore_errors=True)


class DecodePool(object):
    """``processes`` forked workers running ``work(positions, draws, data, label, index,
    rows)`` (the iterator's per-thread task) into slots; stopped by :meth:`close`, when
    garbage-collected, or at exit."""

    def __init__(self, processes, work, batch_size, data_shape, dtype, label_shape,
                 prefetch, ndraws):
        self._layout, size = _layout(batch_size, data_shape, dtype, label_shape, ndraws)
        root = '/dev/shm' if os.path.isdir('/dev/shm') and os.access('/dev/shm', os.W_OK) \
            else None
        self._directory = tempfile.mkdtemp(prefix='symgraph-imagerecord-', dir=root)
        self._slots = _Slots(self._directory, size, prefetch + _SPARE)
        self._lock = threading.Lock()
        self._queues = [[] for _ in range(processes)]     # each worker's batches, in order
        ctx = multiprocessing.get_context('fork')
        pipes = [ctx.Pipe() for _ in range(processes)]
        self._conns = [main for main, _ in pipes]
        self._procs = []
        try:
            with warnings.catch_warnings():
                # Python 3.12+ warns on fork() in a process with threads; the workers only
                # read, decode and write their slots (see gluon.data.workers)
                warnings.filterwarnings('ignore', r'.*multi-threaded, use of fork\(\)',
                                        DeprecationWarning)
                for t, (_, child) in enumerate(pipes):
                    others = [c for i, (m, c) in enumerate(pipes) if i != t] + self._conns
                    proc = ctx.Process(target=_worker, daemon=True,
                                       args=(child, others, work, self._directory,
                                             self._layout))
                    proc.start()
                    self._procs.append(proc)
        except BaseException:
            _stop(self._conns, self._procs, self._directory, self._slots)
            raise
        finally:
            for _, child in pipes:
                child.close()
        self._finalizer = weakref.finalize(self, _stop, self._conns, self._procs,
                                           self._directory, self._slots)

    def submit(self, positions, draws, runs):
        """Start a batch of the records at ``positions`` (a list) with ``draws`` (their
        random numbers), worker t making rows ``runs[t]`` (start, end). Returns the batch
        and its (data, label, index) arrays, valid once :meth:`wait` returns."""
        number, buf = self._slots.take()
        lease = (ctypes.c_char * len(buf)).from_buffer(buf)
        arrays = _views(lease, self._layout)
        n = len(positions)
        arrays[3][:n] = positions
        arrays[4][:n] = draws
        batch = _Batch(number, [t for t, (a, b) in enumerate(runs) if b > a])
        # the slot is free once the batch's arrays are gone and its answers are in (an
        # abandoned batch's workers may still be writing)
        weakref.finalize(lease, _dropped, self._lock, self._slots, batch).atexit = False
        for t, (a, b) in enumerate(runs):
            if b > a:
                self._queues[t].append(batch)
                try:
                    self._conns[t].send_bytes(_TASK.pack(number, a, b))
                except OSError:             # a broken pipe: the worker is gone
                    self._died(t, wait=5.0)
                    raise
        return batch, arrays[:3]

    def _answer(self, t):
        """Read worker t's next answer (for the first batch of its queue)."""
        answer = self._conns[t].recv_bytes()
        with self._lock:
            batch = self._queues[t].pop(0)
            batch.waiting.discard(t)
            if answer[:1] == b'E' and batch.error is None:
                batch.error = pickle.loads(answer[1:])
            done = not batch.waiting and batch.dropped
        if done:
            self._slots.give(batch.number)

    def wait(self, batch):
        """Wait for ``batch``'s rows; a worker's exception is raised here (with the
        worker's traceback as its cause), and a worker that died (killed, out of memory)
        raises RuntimeError."""
        for t in sorted(batch.waiting):
            while t in batch.waiting:
                if not self._conns[t].poll(_POLL):
                    self._died(t)
                    continue
                try:
                    self._answer(t)
                except (EOFError, OSError):
                    self._died(t, wait=5.0)
                    raise
        if batch.error is not None:
            err, text = batch.error
            raise err from RuntimeError('in the decoding process:\n' + text)

    def _died(self, t, wait=0.0):
        """Raise RuntimeError (and stop the pool) if worker t has exited."""
        proc = self._procs[t]
        proc.join(wait)
        if proc.exitcode is not None:
            self.close()
            raise RuntimeError('ImageRecordIter: decoding process %d exited with code %s '
                               'while making a batch (killed? out of memory?)'
                               % (proc.pid, proc.exitcode))

    def close(self):
        self._finalizer()
