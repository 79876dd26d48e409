"""Readers of the files behind CSVIter, LibSVMIter and MNISTIter: each returns NumPy arrays
with one row per example and reports a bad file naming it and the line.

They follow MXNet 1.9.1's C++ readers (dmlc-core's CSV and LibSVM parsers, MXNet's
``iter_mnist.cc``) where those are well defined, and refuse what those read as garbage.
"""
import gzip
import os
import struct
import warnings

import numpy as np
from ..base import ArgumentError, MissingFileError

__all__ = []

_EOL = b'\r\n'


def list_files(path, what):
    """The files of ``path`` (a file, or a directory whose files are all read, in name
    order), each checked to exist; ``what`` names the parameter in errors."""
    if os.path.isdir(path):
        names = sorted(n for n in os.listdir(path)
                       if os.path.isfile(os.path.join(path, n)) and not n.startswith('.'))
        if not names:
            raise MissingFileError('%s: the directory %r has no files' % (what, path))
        return [os.path.join(path, n) for n in names]
    if not os.path.exists(path):
        raise MissingFileError(2, '%s: no such file' % what, path)
    return [path]


def _read_bytes(paths):
    """The files' bytes joined, each ending with a newline, and where each file starts:
    ``[(path, start_offset)]``."""
    chunks, where, offset = [], [], 0
    for p in paths:
        with open(p, 'rb') as f:
            b = f.read()
        if b and b[-1:] not in (b'\n', b'\r'):
            b += b'\n'
        where.append((p, offset))
        chunks.append(b)
        offset += len(b)
    return b''.join(chunks), where


def _lines(paths, num_parts=1, part_index=0):
    """``(path, line_number, text)`` of every non-blank line of ``paths`` in the part
    ``part_index`` of ``num_parts``.

    Parts split the bytes as dmlc-core's line splitter does: part r gets the lines that
    start in ``(r*step, (r+1)*step]`` (the first line in part 0), ``step`` being the
    total size over ``num_parts`` rounded up, so parts need not be even.
    """
    data, where = _read_bytes(paths)
    total = len(data)
    step = max(1, -(-total // num_parts))
    lo, hi = step * part_index, step * (part_index + 1)
    out = []
    for fi, (path, fstart) in enumerate(where):
        fend = where[fi + 1][1] if fi + 1 < len(where) else total
        pos = fstart
        for n, raw in enumerate(data[fstart:fend].splitlines(keepends=True), 1):
            start = pos
            pos += len(raw)
            text = raw.rstrip(_EOL)
            if not text.strip():
                continue
            if num_parts > 1 and not (lo < start <= hi or (start == 0 and part_index == 0)):
                continue
            out.append((path, n, text.decode('utf-8', errors='replace')))
    return out


def _int_field(s):
    """An integer field as ``strtoll`` reads a number: '1.5' is 1 (its integer part)."""
    try:
        return int(s, 10)
    except ValueError:
        v = float(s)
        if not np.isfinite(v):
            raise
        return int(v)


def read_csv(path, shape, dtype, what):
    """The rows of a CSV file (or directory) as an array ``(rows,) + shape`` of ``dtype``.

    Fields are numbers separated by commas; spaces around them and a trailing comma are
    ignored, blank lines skipped. A row whose length differs from ``prod(shape)`` or a
    field that is not a number is a ValueError naming the file and line.
    """
    size = int(np.prod(shape))
    dtype = np.dtype(dtype)
    paths = list_files(path, what)
    if len(paths) == 1:      # fast path; a file it cannot read is read again line by line
        try:
            with warnings.catch_warnings():
                warnings.simplefilter('ignore')
                a = np.loadtxt(paths[0], delimiter=',', comments=None, ndmin=2,
                               dtype=np.float64 if dtype.kind == 'f' else dtype)
            if a.shape[1] == size or a.size == 0:
                return a.astype(dtype, copy=False).reshape((a.shape[0],) + tuple(shape))
        except ValueError:
            pass
    conv = float if dtype.kind == 'f' else _int_field
    rows = []
    for p, n, text in _lines(paths):
        fields = [f.strip() for f in text.split(',')]
        if len(fields) > 1 and fields[-1] == '':
            fields.pop()
        if len(fields) != size:
            raise ArgumentError('%s: line %d of %r has %d values, but the shape %s needs %d'
                                % (what, n, p, len(fields), tuple(shape), size))
        try:
            rows.append([conv(f) for f in fields])
        except ValueError:
            bad = next(f for f in fields if not _is_number(f, conv))
            raise ArgumentError('%s: line %d of %r: %r is not a number'
                                % (what, n, p, bad)) from None
    return np.array(rows, dtype=dtype).reshape((len(rows),) + tuple(shape))


def _is_number(f, conv):
    try:
        conv(f)
        return True
    except ValueError:
        return False


def read_libsvm(path, dim, what, num_parts=1, part_index=0):
    """The rows of a LibSVM file (or directory) as ``(labels, dense)``: the first number
    of each line and a float32 ``(rows, dim)`` array of its ``index:value`` pairs
    (zero-based indices; ``qid:`` pairs and ``#`` comments are skipped)."""
    labels, rows = [], []
    for p, n, text in _lines(list_files(path, what), num_parts, part_index):
        tokens = text.split('#', 1)[0].split()
        if not tokens:
            continue
        try:
            labels.append(float(tokens[0]))
        except ValueError:
            raise ArgumentError('%s: line %d of %r starts with %r, not a label'
                                % (what, n, p, tokens[0])) from None
        row = np.zeros(dim, np.float32)
        seen = set()
        for tok in tokens[1:]:
            key, sep, val = tok.partition(':')
            if key == 'qid':
                continue
            try:
                if not sep:
                    raise ValueError
                idx, v = int(key), float(val)
            except ValueError:
                raise ArgumentError('%s: line %d of %r: %r is not an index:value pair'
                                    % (what, n, p, tok)) from None
            if not 0 <= idx < dim:
                raise ArgumentError('%s: line %d of %r: index %d is outside the shape (%d,) '
                                    '(indices are zero-based)' % (what, n, p, idx, dim))
            if idx in seen:
                raise ArgumentError('%s: line %d of %r: index %d appears twice'
                                    % (what, n, p, idx))
            seen.add(idx)
            row[idx] = v
        rows.append(row)
    dense = np.stack(rows) if rows else np.zeros((0, dim), np.float32)
    return np.array(labels, np.float32), dense


def _open_idx(path, what):
    list_files(path, what)
    with open(path, 'rb') as f:
        head = f.read(2)
    return gzip.open(path, 'rb') if head == b'\x1f\x8b' else open(path, 'rb')


def _part(count, num_parts, part_index):
    """MNISTIter's split of ``count`` examples (computed in double, as MXNet)."""
    start = int(float(count) / num_parts * part_index)
    end = int(float(count) / num_parts * (part_index + 1))
    return start, end


def read_idx_images(path, num_parts, part_index):
    """The images of an MNIST idx3-ubyte file (optionally gzipped) as uint8
    ``(count, rows, cols)``, the part ``part_index`` of ``num_parts``."""
    with _open_idx(path, 'MNISTIter: image') as f:
        head = f.read(16)
        if len(head) < 16:
            raise ArgumentError('MNISTIter: image file %r is too short for an idx header'
                                % path)
        magic, count, rows, cols = struct.unpack('>iiii', head)
        if magic != 2051:
            raise ArgumentError('MNISTIter: image file %r is not an idx3-ubyte file (magic '
                                'number %d, expected 2051)' % (path, magic))
        start, end = _part(count, num_parts, part_index)
        f.read(start * rows * cols)
        body = f.read((end - start) * rows * cols)
    if len(body) != (end - start) * rows * cols:
        raise ArgumentError('MNISTIter: image file %r is truncated: its header promises %d '
                            'images of %dx%d' % (path, count, rows, cols))
    return np.frombuffer(body, np.uint8).reshape(end - start, rows, cols)


def read_idx_labels(path, num_parts, part_index):
    """The labels of an MNIST idx1-ubyte file (optionally gzipped) as uint8, the part
    ``part_index`` of ``num_parts``."""
    with _open_idx(path, 'MNISTIter: label') as f:
        head = f.read(8)
        if len(head) < 8:
            raise ArgumentError('MNISTIter: label file %r is too short for an idx header'
                                % path)
        magic, count = struct.unpack('>ii', head)
        if magic != 2049:
            raise ArgumentError('MNISTIter: label file %r is not an idx1-ubyte file (magic '
                                'number %d, expected 2049)' % (path, magic))
        start, end = _part(count, num_parts, part_index)
        f.read(start)
        body = f.read(end - start)
    if len(body) != end - start:
        raise ArgumentError('MNISTIter: label file %r is truncated: its header promises %d '
                            'labels' % (path, count))
    return np.frombuffer(body, np.uint8)


def std_shuffle_permutation(n, seed):
    """The order ``std::shuffle(v.begin(), v.end(), std::mt19937(seed))`` leaves
    ``0..n-1`` in, as the libstdc++ that built MXNet 1.9.1 does it (one draw per
    position, from ``uniform_int_distribution`` by rejection and division): how MNISTIter
    shuffles."""
    key = np.random.RandomState(seed & 0xFFFFFFFF).get_state()[1]   # mt19937's seeding
    gen = np.random.MT19937()
    gen.state = {'bit_generator': 'MT19937', 'state': {'key': key, 'pos': 624}}
    urng_range = 0xFFFFFFFF
    v = list(range(n))
    for i in range(1, n):
        erange = i + 1
        scaling = urng_range // erange
        past = erange * scaling
        while True:
            r = int(gen.random_raw())
            if r < past:
                break
        j = r // scaling
        v[i], v[j] = v[j], v[i]
    return np.array(v, dtype=np.int64)
