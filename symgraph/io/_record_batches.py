"""Reading and batching for :class:`~.image_record.ImageRecordIter` (and
``ImageDetRecordIter``): the records of a part (:func:`_part_keys`, as dmlc-core splits a
file), the threads' reads (:class:`_Spans`) and the batch maker (:class:`_RecordBatches`)
that plans each pass, draws the augmentations' numbers and has threads (or the decoding
processes of :mod:`._decode_procs`) fill the batches ahead of the caller.
"""
import os
import shutil
import struct
import tempfile
from collections import deque
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .. import recordio
from . import _decode_procs
from ._image_aug import _DRAWS
from ..base import ArgumentError

__all__ = []

_MAGIC = 0xced7230a
_LEN_MASK = (1 << 29) - 1
_HEAD = struct.Struct('<II')


def _scan_offsets(path):
    """The byte offsets of the records of the RecordIO file ``path`` (a record split
    across parts counts once, at its first part), reading only the 8-byte heads."""
    offsets = []
    size = os.path.getsize(path)
    head = struct.Struct('<II')
    with open(path, 'rb') as f:
        pos = 0
        while pos + 8 <= size:
            f.seek(pos)
            magic, lrec = head.unpack(f.read(8))
            if magic != _MAGIC:
                raise recordio.RecordIOError('%s: bad magic number 0x%08x at byte offset %d'
                                             % (path, magic, pos))
            cflag, length = lrec >> 29, lrec & ((1 << 29) - 1)
            if cflag in (0, 1):
                offsets.append(pos)
            pos += 8 + ((length + 3) & ~3)
    return offsets, size


def _part_keys(rec_path, idx_path, num_parts, part_index):
    """(index path, keys of this part in file order, temporary dir or None)."""
    if idx_path:
        reader = recordio.MXIndexedRecordIO(idx_path, rec_path, 'r')
        keys = sorted(reader.keys, key=lambda k: reader.idx[k])
        reader.close()
        step = (len(keys) + num_parts - 1) // num_parts
        return idx_path, keys[part_index * step:(part_index + 1) * step], None
    offsets, size = _scan_offsets(rec_path)
    # dmlc-core's InputSplitBase: equal byte ranges aligned to 4, each starting at the
    # first record head at or after its boundary
    step = (size + num_parts - 1) // num_parts
    step = (step + 3) // 4 * 4
    begin, end = min(step * part_index, size), min(step * (part_index + 1), size)
    tmp = tempfile.mkdtemp(prefix='symgraph-imagerecord-')
    idx_path = os.path.join(tmp, 'records.idx')
    with open(idx_path, 'w') as f:
        for i, off in enumerate(offsets):
            f.write('%d\t%d\n' % (i, off))
    keys = [i for i, off in enumerate(offsets) if begin <= off < end]
    return idx_path, keys, tmp


def _read_imglist(path, label_width):
    """{image index: float32 labels} of a ``.lst`` file (index, labels..., path)."""
    labels = {}
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            fields = line.strip().split('\t')
            if not fields or not fields[0]:
                continue
            if len(fields) < label_width + 2:
                raise ArgumentError('%s, line %d: expected an index, %d label(s) and a path, '
                                    'got %r' % (path, lineno, label_width, line.strip()))
            try:
                labels[int(float(fields[0]))] = np.array(fields[1:1 + label_width], np.float32)
            except ValueError:
                raise ArgumentError('%s, line %d: not numbers: %r' % (path, lineno,
                                                                       line.strip())) from None
    return labels


class _Spans(object):
    """The records of ``keys`` (by position in ``keys``) as the decoding threads read them:
    ``os.pread`` on a descriptor of its own (no shared file position, so no lock; the GIL
    is released while the kernel copies), one read for a run of records that lie back to
    back in the file (a record ends where the index's next offset, or the file, begins).
    A record split in parts (its payload holds the magic number), a bad head or an offset
    past the end goes through the reader, which reports errors as MXRecordIO does."""

    def __init__(self, reader, keys):
        self._reader = reader
        self._keys = keys
        idx = reader.idx
        self._off = np.array([idx[k] for k in keys], np.int64)
        every = np.unique(np.fromiter(idx.values(), np.int64, len(idx)))
        after = np.searchsorted(every, self._off, 'right')
        self._end = np.where(after < len(every), every[np.minimum(after, len(every) - 1)],
                             np.int64(os.path.getsize(reader.uri)))
        self._fd = os.open(reader.uri, os.O_RDONLY)

    def read(self, positions):
        """The payloads (bytes) of the records at ``positions``, in order."""
        offs, ends = self._off[positions].tolist(), self._end[positions].tolist()
        out, n, i = [], len(positions), 0
        while i < n:
            start, stop, j = offs[i], ends[i], i + 1
            while j < n and offs[j] == stop:
                stop, j = ends[j], j + 1
            buf = os.pread(self._fd, stop - start, start) if stop > start else b''
            for k in range(i, j):
                out.append(self._record(buf, offs[k] - start, ends[k] - start, positions[k]))
            i = j
        return out

    def _record(self, buf, pos, end, position):
        if pos + 8 <= len(buf):
            magic, lrec = _HEAD.unpack_from(buf, pos)
            stop = pos + 8 + (lrec & _LEN_MASK)
            if magic == _MAGIC and lrec >> 29 == 0 and stop <= min(end, len(buf)):
                return buf[pos + 8:stop]
        return self._reader.read_idx(self._keys[position])

    def close(self):
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class _Work(object):
    """One decoding task: read the records at ``positions`` and write rows ``rows`` of a
    batch (a thread's or a decoding process's share of it)."""

    def __init__(self, spans, prepare):
        self._spans, self._prepare = spans, prepare

    def __call__(self, positions, draws, data, label, index, rows):
        prepare = self._prepare
        for raw, row, i in zip(self._spans.read(positions), draws, rows):
            label[i], index[i] = prepare(raw, row, data[i])


#: decode in forked processes where possible (:mod:`._decode_procs`) instead of threads.
#: Off: on the shared 2-core machine the processes used as much CPU per image as the
#: threads (with OpenCV; 0.87 of it with Pillow) but made half the images per second in
#: paired runs under load (their workers stayed runnable yet unscheduled twice as long);
#: they take the GIL out of the per-image Python, which may pay on machines with more
#: cores: measure there before switching it on. Re-measured with Pillow (same-run
#: alternating passes, load average ~6 on 2 cores): images/s 0.62 of MXNet's against the
#: threads' 0.68, and 1.00 against 1.14: still off. Tests switch it on.
_PROCESSES = False


class _RecordBatches(object):
    """The batch maker behind :class:`ImageRecordIter` (an MXDataIter handle): plans each
    pass's batches of records (positions in ``keys``) and has ``threads`` threads read and
    decode them (one task per thread and batch, each reading its run of the batch's
    records with :class:`_Spans` and writing its rows of the batch), ``prefetch`` batches
    ahead."""

    def __init__(self, reader, keys, batch_size, round_batch, shuffle, seed, prepare,
                 data_shape, label_width, dtype, threads, prefetch, tmpdir, seed_aug=None,
                 draws=_DRAWS):
        self._reader = reader
        self._ndraws = draws            # uniforms per image (ImageDetRecordIter's crops
                                        # may take more than _DRAWS)
        self._keys = list(keys)
        if not self._keys:
            raise ArgumentError('ImageRecordIter: the part has no record (fewer records '
                                'than num_parts?)')
        self._batch_size = batch_size
        self._round_batch = round_batch
        self._shuffle = shuffle
        self._rng = np.random.RandomState(seed)
        self._seed = seed
        self._seed_aug = seed_aug
        self._prepare = prepare
        self._data_shape = tuple(data_shape)
        self._label_shape = () if label_width == 1 else (label_width,)
        self._dtype = dtype
        self._threads = max(1, threads)
        self._prefetch = max(1, prefetch)
        self._tmpdir = tmpdir
        self._spans = _Spans(reader, self._keys)
        self._work = _Work(self._spans, prepare)
        self._pool = self._procs = None
        if _PROCESSES and _decode_procs.available() and \
                len(self._keys) >= _decode_procs.MIN_RECORDS:
            self._threads = min(self._threads, os.cpu_count() or 1)
            self._procs = _decode_procs.DecodePool(self._threads, self._work, batch_size,
                                                   self._data_shape, dtype,
                                                   self._label_shape, self._prefetch,
                                                   self._ndraws)
        else:
            self._pool = ThreadPoolExecutor(self._threads, thread_name_prefix='imagerecord')
        self._epoch = -1
        self._order = None              # this pass's order of records (positions)
        self._next_order = None         # the next pass's, once a wrap has begun it
        self._carry = 0                 # records of the next pass a wrap already used
        self._plan = deque()
        self._pending = deque()
        self._draws = None
        self.data = np.zeros((batch_size,) + self._data_shape, dtype)
        self.label = np.zeros((batch_size,) + self._label_shape, np.float32)
        self.index = np.zeros(batch_size, np.uint64)
        self.pad = 0
        self.before_first()

    def _new_order(self):
        if self._shuffle:
            return self._rng.permutation(len(self._keys)).tolist()
        return list(range(len(self._keys)))

    def before_first(self):
        for job in self._pending:
            # (a decoding process's batch keeps its slot until its tasks end)
            for fut in job[0] if self._pool is not None else ():
                fut.cancel()
        self._pending.clear()
        self._epoch += 1
        # the augmentations' numbers: with seed_aug the same for a position at every pass
        # (MXNet reseeds per image with seed_aug + position), else new at each pass
        self._draws = np.random.RandomState(
            [self._seed_aug] if self._seed_aug is not None else [self._seed, self._epoch])
        # a pass that ended on a wrapped batch began this one: go on after those records
        self._order = self._next_order or self._new_order()
        start, self._next_order, self._carry = self._carry, None, 0
        n, bs = len(self._order), self._batch_size
        plan = []
        for pos in range(start, n, bs):
            keys = self._order[pos:pos + bs]
            pad, wrap = bs - len(keys), None
            if pad and self._round_batch:
                if pad > n:
                    raise ArgumentError('ImageRecordIter: batch_size %d is too large for the '
                                        '%d records with round_batch=True' % (bs, n))
                wrap = self._new_order()
                keys = keys + wrap[:pad]
            plan.append((keys, pad, wrap))
        self._plan = deque(plan)

    def _schedule(self):
        while self._plan and len(self._pending) < self._prefetch:
            keys, pad, wrap = self._plan.popleft()
            draws = self._draws.random_sample((len(keys), self._ndraws))
            n, threads = len(keys), min(self._threads, len(keys))
            # a run of rows per thread: its records lie together in an unshuffled file
            runs = [(t * n // threads, (t + 1) * n // threads) for t in range(threads)]
            if self._procs is not None:
                batch, arrays = self._procs.submit(keys, draws, runs)
                self._pending.append((batch, pad, wrap, n, arrays))
                continue
            data = np.empty((self._batch_size,) + self._data_shape, self._dtype)
            label = np.empty((self._batch_size,) + self._label_shape, np.float32)
            index = np.empty(self._batch_size, np.uint64)
            futures = [self._pool.submit(self._work, keys[a:b], draws[a:b], data, label,
                                         index, range(a, b)) for a, b in runs]
            self._pending.append((futures, pad, wrap, len(keys), (data, label, index)))

    def next(self):
        self._schedule()
        if not self._pending:
            return False
        futures, pad, wrap, filled, arrays = self._pending.popleft()
        if wrap is not None:            # the next pass begins with this batch's tail
            self._next_order, self._carry = wrap, pad
        self._schedule()
        if self._procs is not None:
            self._procs.wait(futures)
        else:
            for fut in futures:
                fut.result()
        data, label, index = arrays
        # a short batch without round_batch keeps the previous batch's last rows (MXNet
        # reuses its buffer)
        data[filled:], label[filled:], index[filled:] = (self.data[filled:],
                                                         self.label[filled:],
                                                         self.index[filled:])
        self.data, self.label, self.index = data, label, index
        self.pad = pad
        return True

    def close(self):
        if getattr(self, '_pool', None) is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
        if getattr(self, '_procs', None) is not None:
            self._procs.close()
        spans = getattr(self, '_spans', None)
        if spans is not None:
            spans.close()
        if self._tmpdir:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None

    def __del__(self):
        try:
            self.close()
        except Exception:       # interpreter shutdown
            pass
