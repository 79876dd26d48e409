"""``mx.recordio``: MXNet's RecordIO files, read and written byte for byte as MXNet 1.9.1
(after its ``python/mxnet/recordio.py`` and dmlc-core's ``src/recordio.cc``).

A RecordIO file is a sequence of records. Each record is stored as a little-endian
``uint32`` magic number ``0xced7230a``, a ``uint32`` whose upper 3 bits are a continuation
flag and whose lower 29 bits are the payload length, the payload, and zero padding up to a
multiple of 4 bytes. Where the payload holds the magic number at a 4-byte aligned offset,
the writer splits the record there (flags 1 start, 2 middle, 3 end) and drops that copy of
the magic number, so that a reader can always resynchronise on it; the reader puts it back.

An index file (``.idx``) lists ``key<TAB>byte offset`` lines, one per record.
:func:`pack` / :func:`unpack` put an :data:`IRHeader` (flag, label, id, id2; with
``flag`` > 0 float32 labels follow the header) in front of a payload, and
:func:`pack_img` / :func:`unpack_img` encode images (OpenCV when installed, else Pillow:
``pip install "symgraph[image]"``).

>>> import os, tempfile, symgraph as mx
>>> d = tempfile.mkdtemp()
>>> w = mx.recordio.MXIndexedRecordIO(os.path.join(d, 'a.idx'), os.path.join(d, 'a.rec'), 'w')
>>> for i in range(3):
...     w.write_idx(i, mx.recordio.pack(mx.recordio.IRHeader(0, [i, 2.5], i, 0), b'x' * i))
>>> w.close()
>>> r = mx.recordio.MXIndexedRecordIO(os.path.join(d, 'a.idx'), os.path.join(d, 'a.rec'), 'r')
>>> header, payload = mx.recordio.unpack(r.read_idx(2))
>>> header.flag, header.label.tolist(), header.id, payload
(2, [2.0, 2.5], 2, b'xx')
>>> r.close()
"""
import io
import numbers
import os
import struct
import threading
from collections import namedtuple

import numpy as np

from .base import SymgraphError, UsageError, ArgumentTypeError, ArgumentError

__all__ = ['MXRecordIO', 'MXIndexedRecordIO', 'IRHeader', 'pack', 'unpack', 'pack_img',
           'unpack_img', 'RecordIOError']

_MAGIC = 0xced7230a
_MAGIC_BYTES = struct.pack('<I', _MAGIC)
_LEN_MASK = (1 << 29) - 1
_HEAD = struct.Struct('<II')
#: after a record read directly from the file, only the next head (8 bytes) is read, and
#: the record behind it straight into its own bytes if its payload has at least this many
#: bytes (a smaller one starts a buffer again): an 8 KB refill for the head copied 8 KB in
#: vain per large record, and a 20-32 KB record after it was copied twice
_DIRECT_AFTER = 1 << 12
#: this process's id, kept by a fork handler: a read compares it with its opener's (a
#: getpid() system call per record was a tenth of the time of reading page-cached records)
_PID = [os.getpid()]
if hasattr(os, 'register_at_fork'):
    os.register_at_fork(after_in_child=lambda: _PID.__setitem__(0, os.getpid()))


class RecordIOError(SymgraphError, ValueError):
    """A RecordIO or index file that is not well formed (bad magic number, truncated record,
    an index offset past the end); the message names the file and the byte offset."""


def _encode_lrec(cflag, length):
    return (cflag << 29) | length


class MXRecordIO(object):
    """Sequential reading (``flag='r'``) or writing (``flag='w'``) of a RecordIO file.

    Parameters
    ----------
    uri : str or os.PathLike
        Path to the record file.
    flag : str
        ``'w'`` for write or ``'r'`` for read.

    Examples
    --------
    >>> import os, tempfile, symgraph as mx
    >>> path = os.path.join(tempfile.mkdtemp(), 'tmp.rec')
    >>> record = mx.recordio.MXRecordIO(path, 'w')
    >>> for i in range(3):
    ...     record.write(b'record_%d' % i)
    >>> record.close()
    >>> record = mx.recordio.MXRecordIO(path, 'r')
    >>> [record.read() for _ in range(4)]
    [b'record_0', b'record_1', b'record_2', None]
    >>> record.close()
    """

    #: the largest read into the buffer: one system call for many small records, each then
    #: sliced out of it (MXIndexedRecordIO, read at random, reads less: ``_SMALL_READ``
    #: after each seek outside the buffer, more only while the reads stay in order)
    _READ_BUFFER = 1 << 20
    #: a record payload of at least this many bytes is read straight from the file into its
    #: own bytes (one copy, the kernel's, as ``dd`` makes) rather than through the buffer
    #: (two copies; in Python's BufferedReader ~25% of the time of reading page-cached
    #: 20-120 KB records; one more system call for the next head costs less)
    _DIRECT = 1 << 15
    #: the first buffer read after a seek elsewhere, or after a direct read once a small
    #: record follows; the next reads double until ``_READ_BUFFER`` while small records
    #: follow
    _SMALL_READ = 1 << 13
    #: whether the file is read from start to end (posix_fadvise SEQUENTIAL: a larger
    #: read-ahead from disk); MXIndexedRecordIO reads at random
    _SEQUENTIAL = True

    def __init__(self, uri, flag):
        if not isinstance(uri, (str, bytes, os.PathLike)):
            raise ArgumentTypeError('uri must be a path (str or os.PathLike), got %r' % (uri,))
        self.uri = os.fsdecode(uri)
        self.flag = flag
        self.pid = None
        self.is_open = False
        self.writable = flag == 'w'
        self._file = None
        self._fd = -1
        # a reader's buffer: the file's bytes from offset _base (the last read, a bytes
        # object: a record is one slice of it), the next record's head at _buf[_lo]; the
        # reader keeps its own position (it reads with pread)
        self._buf = b''
        self._base = self._lo = 0
        self._chunk = self._READ_BUFFER
        # >= 0: the file offset of the next head, which read() reads alone (after a record
        # read directly; the buffer is then empty); -1: the buffer's state holds
        self._head = -1
        self._size = None
        self._pread = _pread_some
        # seek + read of read_idx as one step for threads sharing a reader (a DataLoader's
        # thread pool, decoding threads); not reentrant (cheaper): read_idx calls _next
        self._lock = threading.Lock()
        self.open()

    def open(self):
        """Opens the record file (``'w'`` truncates it)."""
        if self.flag == 'w':
            self._file = open(self.uri, 'wb')
            self.writable = True
        elif self.flag == 'r':
            self._file = open(self.uri, 'rb', buffering=0)
            self.writable = False
            self._fd = self._file.fileno()
            self._buf = b''
            self._base = self._lo = 0
            self._chunk = self._READ_BUFFER
            self._head = -1
            if self._file.seekable():
                self._size = os.fstat(self._fd).st_size
                self._pread = _pread_some
                if self._SEQUENTIAL and hasattr(os, 'posix_fadvise'):
                    try:
                        os.posix_fadvise(self._fd, 0, 0, os.POSIX_FADV_SEQUENTIAL)
                    except OSError:
                        pass
            else:
                # a pipe (a FIFO, /dev/stdin): read in order, as dmlc's stream does; the
                # size is unknown (a record cut by the end of the stream is still found)
                self._size = _UNKNOWN_SIZE
                self._pread = _PipeReader(self._fd, self.uri).pread
        else:
            raise ArgumentError("Invalid flag %r: 'r' (read) or 'w' (write)" % (self.flag,))
        self.pid = os.getpid()
        self.is_open = True

    def __del__(self):
        # the file may be half-built when __init__ failed (a bad flag, a missing file)
        if getattr(self, 'is_open', False):
            self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __getstate__(self):
        """Pickle the path, the flag and whether it is open (a worker process reopens the
        file); an open writer is refused, since reopening it would truncate the file."""
        if self.is_open and self.writable:
            raise TypeError('cannot pickle the RecordIO writer of %s while it is open: '
                            'reopening it in another process would truncate the file; '
                            'close it first' % self.uri)
        d = dict(self.__dict__)
        d['_file'] = None
        d['_lock'] = None
        d['_buf'] = b''
        d['_fd'] = -1
        d['_pread'] = None
        d['_head'] = -1
        return d

    def __setstate__(self, d):
        self.__dict__ = d
        self._lock = threading.Lock()
        self._pread = _pread_some
        is_open = d['is_open']
        self.is_open = False
        if is_open:
            self.open()

    def _check_pid(self, allow_reset=False):
        """A file object shared with a forked parent shares its offset: reopen (where the
        operation allows it) or refuse, as MXNet."""
        if self.pid != _PID[0]:
            if allow_reset:
                self.reset()
            else:
                raise UsageError('Forbidden operation in multiple processes: %s was opened '
                                 'in another process; call reset() (or read_idx) first'
                                 % self.uri)

    def close(self):
        """Closes the record file (a writer flushes it)."""
        if not self.is_open:
            return
        self._file.close()
        self._file = None
        self._fd = -1
        self._buf = b''
        self._head = -1
        self._pread = _pread_some
        self.is_open = False
        self.pid = None

    def reset(self):
        """Moves back to the first record (reopens the file; a writer truncates it)."""
        self.close()
        self.open()

    def _require(self, writing):
        if not self.is_open:
            raise UsageError('%s is closed' % self.uri)
        if writing != self.writable:
            raise io.UnsupportedOperation('%s is opened for %s' % (
                self.uri, 'writing' if self.writable else 'reading'))

    def write(self, buf):
        """Appends ``buf`` (bytes-like) as one record."""
        self._require(writing=True)
        self._check_pid(allow_reset=False)
        if isinstance(buf, str) or not isinstance(buf, (bytes, bytearray, memoryview)):
            raise ArgumentTypeError('a record is bytes-like, got %s (encode a str first)'
                                    % type(buf).__name__)
        buf = bytes(buf)
        size = len(buf)
        if size >= 1 << 29:
            raise ArgumentError('RecordIO only accepts records of less than 2**29 bytes '
                                '(got %d)' % size)
        write = self._file.write
        start = 0
        pos = buf.find(_MAGIC_BYTES)
        while pos >= 0:
            if pos % 4 == 0:
                # split here: the reader puts the magic number back between the parts
                write(_HEAD.pack(_MAGIC, _encode_lrec(1 if start == 0 else 2, pos - start)))
                write(buf[start:pos])
                start = pos + 4
                pos = buf.find(_MAGIC_BYTES, start)
            else:
                pos = buf.find(_MAGIC_BYTES, pos + 1)
        write(_HEAD.pack(_MAGIC, _encode_lrec(3 if start else 0, size - start)))
        write(buf[start:])
        write(b'\0' * (-size % 4))

    def read(self):
        """The next record as bytes, or None at the end of the file.

        Raises
        ------
        RecordIOError
            (a ValueError) on a bad magic number or a truncated record, naming the file
            and the offset of the record.
        """
        lock = self._lock
        lock.acquire()          # (not `with`: 0.2 us less a record in CPython 3.11)
        try:
            pos = self._head
            if pos >= 0 and self.pid == _PID[0]:
                # after a record read directly (close() and other processes end this
                # state): the next head alone, and the record behind it straight into its
                # own bytes if it is in one part and not small
                fd, pread = self._fd, self._pread
                head = pread(fd, 8, pos)
                if len(head) == 8:
                    magic, lrec = _HEAD.unpack(head)
                    if magic == _MAGIC and _DIRECT_AFTER <= lrec <= _LEN_MASK:
                        stop = pos + 8 + ((lrec + 3) & ~3)
                        if stop <= self._size:
                            data = pread(fd, lrec, pos + 8)
                            if len(data) == lrec:
                                self._head = stop
                                return data
                # a small record, a split one, an error or the end: the general path
                self._head = -1
                self._buf, self._base, self._lo = b'', pos, 0
                self._chunk = self._SMALL_READ
            return self._next()
        finally:
            lock.release()

    def _next(self):
        """:meth:`read` under the lock. The common case in few steps (Python's per-record
        cost is what separates reading page-cached records from dd): a record in one part,
        a slice of the buffer, or read straight from the file into its own bytes (one copy,
        the kernel's, as dd makes) if it is not in the buffer and large; after such a record
        :meth:`read` reads only the next head, and a record of ``_DIRECT_AFTER`` bytes or
        more behind it directly too. Split records, errors and the end take
        :meth:`_read`."""
        if not self.is_open or self.writable or self.pid != _PID[0]:
            self._require(writing=False)
            self._check_pid(allow_reset=False)
        buf = self._buf
        lo = self._lo
        if len(buf) - lo >= 8:
            magic, lrec = _HEAD.unpack_from(buf, lo)
        else:
            base = self._base + lo
            buf = self._pread(self._fd, self._chunk, base)
            self._buf, self._base, self._lo = buf, base, 0
            self._chunk = min(2 * self._chunk, self._READ_BUFFER)
            if len(buf) < 8:
                return self._read()         # the end of the file, or a truncated head
            lo = 0
            magic, lrec = _HEAD.unpack_from(buf, 0)
        if magic == _MAGIC:
            need = 8 + ((lrec + 3) & ~3)
            if lo + need <= len(buf):                       # one part, in the buffer
                if lrec >> 29 == 0:
                    self._lo = lo + need
                    return buf[lo + 8:lo + 8 + lrec]
            elif lrec < self._DIRECT:                       # one part, small
                buf = self._fill(need)
                if len(buf) < need:
                    return self._read()     # a truncated record
                self._lo = need
                return buf[8:8 + lrec]
            elif lrec >> 29 == 0:                           # one part, large
                start = self._base + lo + 8
                stop = start + need - 8
                if stop <= self._size:
                    data = self._pread(self._fd, lrec, start)
                    if len(data) == lrec:
                        self._buf, self._base, self._lo = b'', stop, 0
                        self._head = stop       # read() reads the next head alone
                        return data
        return self._read()

    def _skip_to(self, offset):
        """Empty the buffer, the next head at file byte ``offset`` (after a direct read)."""
        self._buf, self._base, self._lo = b'', offset, 0
        self._chunk = self._SMALL_READ

    def _fill(self, need):
        """Read the file again from the next head on, at least ``need`` bytes (fewer at the
        end of the file); returns the new buffer. A record cut at the end of the last buffer
        is read again whole (the kernel's copy, not one more of ours)."""
        self._base += self._lo
        self._lo = 0
        self._buf = _pread(self._pread, self._fd, max(need, self._chunk), self._base)
        self._chunk = min(2 * self._chunk, self._READ_BUFFER)
        return self._buf

    def _payload(self, length, pad):
        """The payload of the record whose head is the buffer's next 8 bytes (which it
        passes), and how many of its payload and padding bytes the file holds."""
        if length < self._DIRECT:
            buf = self._buf
            if self._lo + 8 + length + pad > len(buf):
                buf = self._fill(8 + length + pad)
            lo = self._lo + 8
            got = min(len(buf) - lo, length + pad)
            if got == length + pad:
                self._lo = lo + length + pad
            return buf[lo:lo + min(length, got)], got
        start = self._base + self._lo + 8
        data = _pread(self._pread, self._fd, length, start)
        if len(data) < length:
            return data, len(data)
        if start + length + pad > self._size:
            self._size = os.fstat(self._fd).st_size     # the file may have grown
        got = length + max(0, min(pad, self._size - start - length))
        if got == length + pad:
            self._skip_to(start + length + pad)
        return data, got

    def _read(self):
        self._require(writing=False)
        self._check_pid(allow_reset=False)
        parts = []
        while True:
            offset = self._base + self._lo
            have = len(self._buf) - self._lo
            if have < 8:
                have = len(self._fill(8))
            if not have and not parts:
                return None
            if have < 8:
                raise RecordIOError('%s: truncated record header at byte offset %d'
                                    % (self.uri, offset))
            magic, lrec = _HEAD.unpack_from(self._buf, self._lo)
            if magic != _MAGIC:
                raise RecordIOError('%s: bad magic number 0x%08x at byte offset %d (not a '
                                    'RecordIO file, or a wrong index offset)'
                                    % (self.uri, magic, offset))
            cflag, length = lrec >> 29, lrec & _LEN_MASK
            pad = -length % 4
            data, got = self._payload(length, pad)
            if got < length + pad:
                raise RecordIOError('%s: truncated record at byte offset %d (%d bytes of %d)'
                                    % (self.uri, offset, got, length + pad))
            if cflag == 0:
                return data
            parts.append(data)
            if cflag == 3:
                break
            if cflag not in (1, 2):
                raise RecordIOError('%s: bad continuation flag %d at byte offset %d'
                                    % (self.uri, cflag, offset))
        return _MAGIC_BYTES.join(parts)


if hasattr(os, 'pread'):
    _pread_some = os.pread
else:                                           # Windows: no pread (a reader's descriptor
    def _pread_some(fd, size, offset):          # position is its own, under its lock)
        os.lseek(fd, offset, os.SEEK_SET)
        return os.read(fd, size)

#: a pipe's size for the checks against the file's end (unknown: the reads find the end)
_UNKNOWN_SIZE = 1 << 62


def _pread(pread, fd, size, offset):
    """``size`` bytes of the file ``fd`` from byte ``offset`` (fewer at its end), read
    into a new bytes object by the kernel (no copy after its) with ``pread``
    (:func:`os.pread` or a :class:`_PipeReader`'s)."""
    data = pread(fd, size, offset)
    while len(data) < size:                     # a short read before the end of the file
        more = pread(fd, size - len(data), offset + len(data))
        if not more:
            break
        data += more
    return data


class _PipeReader(object):
    """:func:`os.pread` for a file that cannot seek (a FIFO, ``/dev/stdin``): reads it in
    order. It keeps the bytes of its last answer, since the reader may ask again from an
    offset inside them (a record cut at the end of its buffer is read again from its
    head); an offset before them is refused, one past the stream's position skips bytes
    (the padding after a record read directly)."""

    def __init__(self, fd, uri):
        self.fd = fd
        self.uri = uri
        self.start = 0          # the stream offset of data[0]
        self.data = b''
        self.eof = False

    def pread(self, fd, size, offset):
        if offset < self.start:
            raise io.UnsupportedOperation(
                '%s is not seekable (a pipe): cannot read byte offset %d again after byte '
                'offset %d (MXIndexedRecordIO needs a regular file)'
                % (self.uri, offset, self.start))
        pos = self.start + len(self.data)       # the stream's position
        if offset >= pos:
            while pos < offset and not self.eof:
                skipped = len(os.read(fd, min(offset - pos, 1 << 20)))
                self.eof = not skipped
                pos += skipped
            self.start, self.data = pos, b''
            if pos < offset:
                return b''
            have = b''
        else:
            have = self.data[offset - self.start:] if offset > self.start else self.data
            if len(have) >= size:
                self.start, self.data = offset, have
                return have[:size] if len(have) > size else have
        parts = [have] if have else []
        need = size - len(have)
        while need > 0 and not self.eof:
            more = os.read(fd, need)
            self.eof = not more
            need -= len(more)
            parts.append(more)
        data = parts[0] if len(parts) == 1 else b''.join(parts)
        self.start, self.data = offset, data
        return data


class MXIndexedRecordIO(MXRecordIO):
    """Random access to a RecordIO file through an index file of ``key<TAB>offset`` lines.

    Parameters
    ----------
    idx_path : str or os.PathLike
        Path to the index file.
    uri : str or os.PathLike
        Path to the record file.
    flag : str
        ``'w'`` for write or ``'r'`` for read.
    key_type : type
        The type of the keys (``int``: MXNet's default).

    Examples
    --------
    >>> import os, tempfile, symgraph as mx
    >>> d = tempfile.mkdtemp()
    >>> idx, rec = os.path.join(d, 't.idx'), os.path.join(d, 't.rec')
    >>> record = mx.recordio.MXIndexedRecordIO(idx, rec, 'w')
    >>> for i in range(5):
    ...     record.write_idx(i, b'record_%d' % i)
    >>> record.tell()
    80
    >>> record.close()
    >>> record = mx.recordio.MXIndexedRecordIO(idx, rec, 'r')
    >>> record.keys, record.read_idx(3)
    ([0, 1, 2, 3, 4], b'record_3')
    """

    _READ_BUFFER = 1 << 16
    _SEQUENTIAL = False

    def __init__(self, idx_path, uri, flag, key_type=int):
        self.idx_path = os.fsdecode(idx_path)
        self.idx = {}
        self.keys = []
        self.key_type = key_type
        self.fidx = None
        self._size = None
        super(MXIndexedRecordIO, self).__init__(uri, flag)

    def open(self):
        super(MXIndexedRecordIO, self).open()
        self.idx = {}
        self.keys = []
        if self.writable:
            self.fidx = open(self.idx_path, 'w')
            return
        with open(self.idx_path, 'r') as fidx:
            for lineno, line in enumerate(fidx, 1):
                line = line.strip()
                if not line:
                    continue
                fields = line.split('\t')
                try:
                    key, pos = self.key_type(fields[0]), int(fields[1])
                except (ValueError, IndexError) as err:
                    raise RecordIOError('%s, line %d: not a "key<TAB>offset" line: %r (%s)'
                                        % (self.idx_path, lineno, line, err)) from None
                self.idx[key] = pos
                self.keys.append(key)

    def close(self):
        """Closes the record file and the index file."""
        if not self.is_open:
            return
        super(MXIndexedRecordIO, self).close()
        if self.fidx is not None:
            self.fidx.close()
            self.fidx = None

    def __getstate__(self):
        d = super(MXIndexedRecordIO, self).__getstate__()
        d['fidx'] = None
        return d

    def seek(self, idx):
        """Moves the read position to the record of key ``idx``.

        Raises
        ------
        KeyError
            for a key the index does not hold.
        RecordIOError
            for an offset past the end of the record file.
        """
        self._require(writing=False)
        self._check_pid(allow_reset=True)
        try:
            pos = self.idx[idx]
        except KeyError:
            raise KeyError('%s has no record of key %r' % (self.idx_path, idx)) from None
        if not 0 <= pos < self._size:
            raise RecordIOError('%s: key %r points at byte offset %d, past the end of %s '
                                '(%d bytes)' % (self.idx_path, idx, pos, self.uri, self._size))
        self._head = -1
        if 0 <= pos - self._base < len(self._buf):     # already in the buffer
            self._lo = pos - self._base
        else:
            self._buf, self._base, self._lo = b'', pos, 0
            self._chunk = self._SMALL_READ

    def tell(self):
        """The current write position (bytes written so far)."""
        self._require(writing=True)
        return self._file.tell()

    def read_idx(self, idx):
        """The record of key ``idx``."""
        with self._lock:
            self.seek(idx)
            return self._next()

    def write_idx(self, idx, buf):
        """Appends ``buf`` as the record of key ``idx`` and indexes it."""
        key = self.key_type(idx)
        with self._lock:
            pos = self.tell()
            self.write(buf)
            self.fidx.write('%s\t%d\n' % (str(key), pos))
            self.idx[key] = pos
            self.keys.append(key)


IRHeader = namedtuple('HEADER', ['flag', 'label', 'id', 'id2'])
IRHeader.__doc__ = """The header :func:`pack` puts in front of a record (MXNet's ``HEADER``).

Parameters
----------
flag : int
    0 for one float ``label``; n > 0: ``label`` is n float32 values stored after the header.
label : float or array of float
    The label(s) of the record.
id : int
    Usually a unique id of the record.
id2 : int
    Higher order bits of the id (usually 0).
"""

_IR_FORMAT = '<IfQQ'
_IR_SIZE = struct.calcsize(_IR_FORMAT)


def pack(header, s):
    """Pack ``s`` (bytes) behind an :data:`IRHeader` into one record's payload.

    A number label is stored in the header (``flag`` 0); an array label is stored as
    float32 values after it, with ``flag`` its size (the header's own label is then 0).

    >>> import symgraph as mx
    >>> len(mx.recordio.pack(mx.recordio.IRHeader(0, [1, 2, 3], 7, 0), b'ab'))
    38
    """
    header = IRHeader(*header)
    if isinstance(s, str):
        raise ArgumentTypeError('pack takes bytes, got str (encode it first)')
    if isinstance(header.label, numbers.Number):
        header = header._replace(flag=0)
    else:
        label = np.asarray(header.label, dtype=np.float32)
        header = header._replace(flag=label.size, label=0)
        s = label.tobytes() + bytes(s)
    return struct.pack(_IR_FORMAT, *header) + bytes(s)


def unpack(s):
    """Split a record's payload into its :data:`IRHeader` and the rest (with ``flag`` > 0,
    ``label`` is a float32 array of ``flag`` values)."""
    if len(s) < _IR_SIZE:
        raise RecordIOError('a packed record is at least %d bytes (its header), got %d'
                            % (_IR_SIZE, len(s)))
    header = IRHeader(*struct.unpack(_IR_FORMAT, s[:_IR_SIZE]))
    s = s[_IR_SIZE:]
    if header.flag > 0:
        if len(s) < 4 * header.flag:
            raise RecordIOError('the header announces %d float32 labels, but only %d bytes '
                                'follow it' % (header.flag, len(s)))
        header = header._replace(label=np.frombuffer(s, np.float32, header.flag))
        s = s[header.flag * 4:]
    return header, s


#: JPEG start-of-frame markers (baseline, extended, progressive, lossless; Huffman or
#: arithmetic), whose segment holds the precision, height, width and component count
_SOF_MARKERS = frozenset([0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD,
                          0xCE, 0xCF])
_SOF = struct.Struct('>BHHB')
#: the largest image the fast JPEG path decodes (larger ones go through Pillow's checks)
_FAST_PIXELS = 1 << 24


def _jpeg_size(buf):
    """(height, width) of an 8-bit, 3-component JPEG in ``buf`` (bytes-like), read from its
    start-of-frame segment; None for anything else (not a JPEG, gray, CMYK, 12-bit, a
    height left to a DNL marker, malformed headers)."""
    n = len(buf)
    if n < 4 or buf[0] != 0xFF or buf[1] != 0xD8:
        return None
    pos = 2
    sof = _SOF_MARKERS
    for _ in range(64):                 # segments before the frame: APPn, DQT, DHT, COM...
        if pos + 10 > n or buf[pos] != 0xFF:
            return None
        marker = buf[pos + 1]
        if marker in sof:
            bits, h, w, comps = _SOF.unpack_from(buf, pos + 4)
            if bits != 8 or comps != 3 or not 0 < h * w <= _FAST_PIXELS:
                return None
            return h, w
        if marker == 0xFF:              # a fill byte
            pos += 1
        elif marker == 0xD9 or marker == 0xDA:  # the end, or scan data before any frame
            return None
        else:
            pos += 2 + (buf[pos + 2] << 8 | buf[pos + 3])
    return None


def _decode_jpeg_rgbx(buf):
    """An 8-bit colour JPEG decoded by Pillow's libjpeg decoder straight into a new
    (H, W, 4) uint8 array (RGB and one unused byte: Pillow's own pixel layout, so that no
    conversion or copy follows; ``[..., :3]`` is the RGB image, equal to what
    ``Image.open(...).convert('RGB')`` gives); None where the fast path does not apply (not
    such a JPEG, no Pillow, a decoding error): the caller then takes the general path,
    which reports errors."""
    size = _jpeg_size(buf)
    if size is None:
        return None
    try:
        from PIL import Image
    except ImportError:
        return None
    h, w = size
    out = np.empty((h, w, 4), np.uint8)
    try:
        # an image over our array's memory (Image.frombuffer's mapping, writable here);
        # the decoder releases the GIL while libjpeg works
        im = Image.core.map_buffer(out, (w, h), 'raw', 0, ('RGBX', 0, 1))
        decoder = Image.core.jpeg_decoder('RGBX', 'RGB', '')
        decoder.setimage(im, (0, 0, w, h))
        consumed, err = decoder.decode(buf)
        decoder.cleanup()
    except Exception:                   # a Pillow without these internals, bad data
        return None
    if consumed >= 0 or err != 0:       # truncated or failed: let Pillow raise
        return None
    return out


#: decode 8-bit colour JPEGs with OpenCV where ``cv2`` imports (``pip install
#: "symgraph[image-fast]"``): its libjpeg-turbo call costs ~10 us less per image than
#: Pillow's (the same library underneath: the same pixels here, and within one grey level
#: across libjpeg-turbo versions); False: always Pillow (tests compare the two)
_USE_OPENCV = True
_OPENCV = []            # [(cv2, imdecode flags, whether they give RGB)] once looked up


def _opencv_jpeg():
    """(cv2, flags, rgb) for decoding colour JPEGs, or None without OpenCV. The flags ask
    for RGB where OpenCV has IMREAD_COLOR_RGB (4.10+; else BGR comes back) and ignore
    the EXIF orientation, as MXNet's decoding and the Pillow path do."""
    if not _OPENCV:
        try:
            import cv2
            rgb = getattr(cv2, 'IMREAD_COLOR_RGB', None)
            flags = (cv2.IMREAD_COLOR if rgb is None else rgb) | cv2.IMREAD_IGNORE_ORIENTATION
            _OPENCV.append((cv2, flags, rgb is not None))
        except (ImportError, AttributeError):
            _OPENCV.append(None)
    return _OPENCV[0] if _USE_OPENCV else None


def _decode_jpeg_cv(buf):
    """An 8-bit colour JPEG decoded by OpenCV: ((H, W, 3) uint8, whether it is RGB rather
    than BGR), or None (no OpenCV, not such a JPEG, a decoding error). OpenCV releases the
    GIL while it decodes."""
    cv = _opencv_jpeg()
    if cv is None or _jpeg_size(buf) is None:
        return None
    cv2, flags, rgb = cv
    try:
        img = cv2.imdecode(np.frombuffer(buf, np.uint8), flags)
    except cv2.error:
        return None
    if img is None or img.ndim != 3 or img.shape[2] != 3:
        return None
    return img, rgb


def _decode_jpeg_rgb(buf):
    """An 8-bit colour JPEG as a contiguous (H, W, 3) uint8 RGB array (OpenCV's decoder
    where it is installed, else :func:`_decode_jpeg_rgbx`'s), or None."""
    cv = _decode_jpeg_cv(buf)
    if cv is not None:
        img, rgb = cv
        return img if rgb else np.ascontiguousarray(img[..., ::-1])
    rgbx = _decode_jpeg_rgbx(buf)
    if rgbx is None:
        return None
    out = np.empty(rgbx.shape[:2] + (3,), np.uint8)
    for c in range(3):          # a plane at a time: ~3x faster than one (H, W, 3) copy,
        out[..., c] = rgbx[..., c]      # whose innermost loop is 3 bytes long
    return out


def _cv2():
    try:
        import cv2
    except ImportError:
        return None
    return cv2


def _pillow():
    try:
        from PIL import Image
    except ImportError:
        raise ImportError('pack_img / unpack_img need OpenCV or Pillow: '
                          'pip install "symgraph[image]"') from None
    return Image


def unpack_img(s, iscolor=-1):
    """Unpack a record into its :data:`IRHeader` and its decoded image, a uint8 NumPy array
    in OpenCV's layout: (H, W, 3) BGR, (H, W) grey, (H, W, 4) BGRA.

    ``iscolor``: -1 keeps the stored channels, 1 gives BGR, 0 grey (OpenCV's flags).
    """
    header, s = unpack(s)
    buf = np.frombuffer(s, dtype=np.uint8)
    cv2 = _cv2()
    if cv2 is not None:
        return header, cv2.imdecode(buf, iscolor)
    Image = _pillow()
    with Image.open(io.BytesIO(s)) as im:
        if iscolor != -1:
            # OpenCV turns the image upright by its EXIF orientation unless asked not to
            from PIL import ImageOps
            im = ImageOps.exif_transpose(im)
        if iscolor == 0:
            im = im.convert('L')
        elif iscolor > 0 or im.mode not in ('L', 'RGB', 'RGBA'):
            im = im.convert('RGBA' if im.mode in ('RGBA', 'LA', 'PA') and iscolor < 0
                            else 'RGB')
        img = np.asarray(im)
    if img.ndim == 3:
        # RGB(A) -> OpenCV's BGR(A)
        img = np.ascontiguousarray(img[..., [2, 1, 0] + ([3] if img.shape[2] == 4 else [])])
    return header, img


def pack_img(header, img, quality=95, img_fmt='.jpg'):
    """Encode an image (uint8 NumPy array in OpenCV's layout: (H, W, 3) BGR or (H, W) grey)
    as JPEG or PNG and :func:`pack` it.

    ``quality``: JPEG quality 1-100, or the PNG compression level 0-9; ``img_fmt``
    ``'.jpg'``/``'.jpeg'`` or ``'.png'`` (any case).
    """
    fmt = img_fmt.upper()
    if fmt not in ('.JPG', '.JPEG', '.PNG'):
        raise ArgumentError("img_fmt must be '.jpg', '.jpeg' or '.png', got %r" % (img_fmt,))
    img = np.asarray(img)
    if not (img.ndim == 2 or (img.ndim == 3 and img.shape[2] in (1, 3, 4))):
        raise ArgumentError('pack_img encodes (H, W), (H, W, 1), (H, W, 3) or (H, W, 4) '
                            'images, got shape %s' % (img.shape,))
    cv2 = _cv2()
    if cv2 is not None:
        # OpenCV clamps a PNG level above 9 to 9 itself, with a warning each time
        params = ([cv2.IMWRITE_PNG_COMPRESSION, min(int(quality), 9)] if fmt == '.PNG'
                  else [cv2.IMWRITE_JPEG_QUALITY, int(quality)])
        ret, buf = cv2.imencode(img_fmt, img, params)
        if not ret:
            raise ArgumentError('failed to encode an image of shape %s' % (img.shape,))
        return pack(header, buf.tobytes())
    Image = _pillow()
    if img.dtype != np.uint8:
        raise ArgumentTypeError('pack_img encodes uint8 images, got %s' % img.dtype)
    if img.ndim == 3 and img.shape[2] == 1:
        img = img[..., 0]
    if img.ndim == 3:
        img = img[..., [2, 1, 0] + ([3] if img.shape[2] == 4 else [])]
    out = io.BytesIO()
    im = Image.fromarray(np.ascontiguousarray(img))
    if fmt == '.PNG':
        # OpenCV clamps the level to 0..9 (MXNet's default quality 95 means 9 for PNG)
        im.save(out, format='PNG', compress_level=min(max(int(quality), 0), 9))
    else:
        if im.mode == 'RGBA':
            raise ArgumentError('JPEG has no alpha channel: pass 3 channels')
        im.save(out, format='JPEG', quality=min(max(int(quality), 0), 100))
    return pack(header, out.getvalue())
