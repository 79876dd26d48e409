"""mx.recordio against files MXNet 1.9.1 wrote (tests/golden/recordio_probes.py made them):
read here, written here byte for byte the same, plus the error paths MXNet leaves to a
C++ CHECK."""
import io
import multiprocessing
import os
import pickle
import shutil
import sys

import numpy as np
import pytest

import symgraph as mx
from symgraph import recordio

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'golden'))
import recordio_probes as probes  # noqa: E402

GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'golden', 'data',
                      'recordio')


def _golden(name):
    return os.path.join(GOLDEN, name)


def _bytes(path):
    with open(path, 'rb') as f:
        return f.read()


def _read_all(path):
    rec = recordio.MXRecordIO(path, 'r')
    out = []
    while True:
        item = rec.read()
        if item is None:
            break
        out.append(item)
    rec.close()
    return out


def test_reads_mxnet_plain_file():
    assert _read_all(_golden('plain.rec')) == probes.payloads()


def test_writes_mxnet_bytes(tmp_path):
    probes.write(mx, str(tmp_path))
    for name in ('plain.rec', 'packed.rec', 'packed.idx', 'images.idx'):
        with open(tmp_path / name, 'rb') as f, open(_golden(name), 'rb') as g:
            assert f.read() == g.read(), name


def test_split_record_layout(tmp_path):
    # a payload holding the magic number at an aligned offset is split there (flags 1, 3)
    path = str(tmp_path / 'x.rec')
    with recordio.MXRecordIO(path, 'w') as rec:
        rec.write(b'abcd' + probes.MAGIC + b'ef')
    data = _bytes(path)
    assert data == (probes.MAGIC + ((1 << 29) | 4).to_bytes(4, 'little') + b'abcd'
                    + probes.MAGIC + ((3 << 29) | 2).to_bytes(4, 'little') + b'ef\0\0')
    assert _read_all(path) == [b'abcd' + probes.MAGIC + b'ef']


def test_reads_mxnet_packed_headers():
    rec = recordio.MXIndexedRecordIO(_golden('packed.idx'), _golden('packed.rec'), 'r')
    assert rec.keys == [0, 10, 20, 30]
    for i, (flag, label, id_, id2, payload) in reversed(list(enumerate(probes.headers()))):
        header, rest = recordio.unpack(rec.read_idx(10 * i))
        assert rest == payload
        assert (header.id, header.id2) == (id_, id2)
        if np.ndim(label):
            assert header.flag == len(label)
            assert header.label.dtype == np.float32
            np.testing.assert_array_equal(header.label, label)
        else:
            assert header.flag == 0 and header.label == label
    rec.close()


def test_unpack_img_mxnet_records():
    pytest.importorskip('PIL')
    want = np.load(_golden('images_decoded.npz'))
    rec = recordio.MXIndexedRecordIO(_golden('images.idx'), _golden('images.rec'), 'r')
    for i, (name, _, _, _) in enumerate(probes.IMAGES):
        header, img = recordio.unpack_img(rec.read_idx(i))
        assert header.label == i and img.dtype == np.uint8
        assert img.shape == want[name].shape
        tol = 1 if name == 'jpg' else 0   # OpenCV's and Pillow's libjpeg may round apart
        assert np.abs(img.astype(int) - want[name]).max() <= tol, name
    _, gray = recordio.unpack_img(rec.read_idx(0), iscolor=0)
    assert gray.shape == (7, 5)
    _, bgr = recordio.unpack_img(rec.read_idx(2), iscolor=1)
    np.testing.assert_array_equal(bgr, np.repeat(want['gray'][..., None], 3, axis=2))
    rec.close()


def test_pack_img_round_trip_and_quality():
    pytest.importorskip('PIL')
    img = probes.image()
    header = recordio.IRHeader(0, [1, 2], 3, 0)
    back_header, back = recordio.unpack_img(recordio.pack_img(header, img, 9, '.PNG'))
    np.testing.assert_array_equal(back, img)     # BGR in, BGR out
    np.testing.assert_array_equal(back_header.label, [1, 2])
    _, gray = recordio.unpack_img(recordio.pack_img(header, img[..., 0], img_fmt='.png'))
    np.testing.assert_array_equal(gray, img[..., 0])
    big = np.random.RandomState(0).randint(0, 256, (32, 32, 3)).astype(np.uint8)
    sizes = [len(recordio.pack_img(header, big, q, '.jpg')) for q in (10, 95)]
    assert sizes[0] < sizes[1]
    _, jpg = recordio.unpack_img(recordio.pack_img(header, img, 100, '.jpeg'))
    assert np.abs(jpg.astype(int) - img).mean() < 8
    with pytest.raises(ValueError, match='img_fmt'):
        recordio.pack_img(header, img, img_fmt='.bmp')
    with pytest.raises(ValueError, match='shape'):
        recordio.pack_img(header, np.zeros((2, 2, 2), np.uint8), img_fmt='.png')


def test_pack_unpack_labels():
    s = recordio.pack((0, np.arange(5), 1, 2), b'xyz')
    header, rest = recordio.unpack(s)
    assert header.flag == 5 and rest == b'xyz'
    np.testing.assert_array_equal(header.label, np.arange(5, dtype=np.float32))
    header, rest = recordio.unpack(recordio.pack(recordio.IRHeader(9, 1.5, 4, 0), b''))
    assert header == recordio.IRHeader(0, 1.5, 4, 0) and rest == b''
    with pytest.raises(ValueError, match='at least 24 bytes'):
        recordio.unpack(b'short')
    with pytest.raises(ValueError, match='3 float32 labels'):
        recordio.unpack(recordio.pack((0, [1, 2, 3], 0, 0), b'')[:-4])
    with pytest.raises(TypeError, match='str'):
        recordio.pack((0, 1, 0, 0), 'text')


def _damaged(tmp_path, cut=None, poke=None):
    path = str(tmp_path / 'bad.rec')
    shutil.copy(_golden('plain.rec'), path)
    data = bytearray(_bytes(path))
    if poke is not None:
        data[poke] ^= 0xff
    if cut is not None:
        data = data[:cut]
    with open(path, 'wb') as f:
        f.write(bytes(data))
    return path


def _offsets(tmp_path):
    """The byte offset of each record of plain.rec (each record written alone)."""
    out, pos = [], 0
    for i, p in enumerate(probes.payloads()):
        out.append(pos)
        with recordio.MXRecordIO(str(tmp_path / ('one%d.rec' % i)), 'w') as rec:
            rec.write(p)
        pos += os.path.getsize(str(tmp_path / ('one%d.rec' % i)))
    assert pos == os.path.getsize(_golden('plain.rec'))
    return out


def test_truncated_record_names_file_and_offset(tmp_path):
    offsets = _offsets(tmp_path)
    path = _damaged(tmp_path, cut=offsets[-1] + 20)
    rec = recordio.MXRecordIO(path, 'r')
    for p in probes.payloads()[:-1]:
        assert rec.read() == p      # the earlier records stay readable
    with pytest.raises(ValueError, match='bad.rec: truncated record at byte offset %d'
                       % offsets[-1]):
        rec.read()
    rec.reset()
    assert rec.read() == b''
    rec.close()
    path = _damaged(tmp_path, cut=offsets[3] + 5)
    rec = recordio.MXRecordIO(path, 'r')
    [rec.read() for _ in range(3)]
    with pytest.raises(recordio.RecordIOError, match='truncated record header at byte '
                       'offset %d' % offsets[3]):
        rec.read()


def test_bad_magic_names_file_and_offset(tmp_path):
    offsets = _offsets(tmp_path)
    path = _damaged(tmp_path, poke=offsets[4])
    rec = recordio.MXRecordIO(path, 'r')
    assert [rec.read() for _ in range(4)] == probes.payloads()[:4]
    with pytest.raises(ValueError, match='bad.rec: bad magic number 0x.* at byte offset %d'
                       % offsets[4]):
        rec.read()


def _mixed_payloads():
    """Records around the reader's thresholds: tiny, around the direct-read size, large,
    split ones (the magic number at an aligned offset) small and large, empty."""
    rng = np.random.RandomState(3)
    direct = recordio.MXRecordIO._DIRECT
    sizes = [0, 1, 5, 700, direct - 9, direct - 1, direct, direct + 3, 3 * direct + 2, 17,
             5 * direct, 2, 9000, 40000]
    out = [rng.bytes(int(n)) for n in sizes]
    out.append(b'abcd' + probes.MAGIC + rng.bytes(direct + 7))
    out.append(rng.bytes(2 * direct) + probes.MAGIC + b'xy')
    out.append(b'')
    return out


@pytest.mark.parametrize('read_buffer', [None, 64, 4096])
def test_reads_records_of_every_size(tmp_path, read_buffer):
    # large records are read straight into their bytes, small ones sliced out of the
    # buffer; a record cut at the buffer's end is read again from its head
    path, idx = str(tmp_path / 'm.rec'), str(tmp_path / 'm.idx')
    payloads = _mixed_payloads()
    with recordio.MXIndexedRecordIO(idx, path, 'w') as rec:
        for i, p in enumerate(payloads):
            rec.write_idx(i, p)

    class Reader(recordio.MXRecordIO):
        _READ_BUFFER = read_buffer or recordio.MXRecordIO._READ_BUFFER
        _SMALL_READ = min(read_buffer or 1 << 13, 1 << 13)
    for _ in range(2):
        reader = Reader(path, 'r')
        assert [reader.read() for _ in payloads] + [reader.read()] == payloads + [None]
        reader.reset()      # and again from the start
        assert reader.read() == payloads[0]
        reader.close()
    indexed = recordio.MXIndexedRecordIO(idx, path, 'r')
    order = list(range(len(payloads)))
    for keys in (order, order[::-1], list(np.random.RandomState(0).permutation(order))):
        assert [indexed.read_idx(int(k)) for k in keys] == [payloads[k] for k in keys]
    # sequential reads after a read_idx go on from the record after it
    indexed.read_idx(7)
    assert indexed.read() == payloads[8]


def test_truncated_large_record(tmp_path):
    path = str(tmp_path / 'big.rec')
    payloads = _mixed_payloads()[:9]            # ends with a large record (3 * _DIRECT + 2)
    with recordio.MXRecordIO(path, 'w') as rec:
        for p in payloads:
            rec.write(p)
    size = os.path.getsize(path)
    start = size - 8 - len(payloads[-1]) - 2
    for cut, got in ((size - 1, len(payloads[-1]) + 1), (size - 2, len(payloads[-1])),
                     (start + 100, 92)):
        with open(path, 'r+b') as f:
            f.truncate(cut)
        rec = recordio.MXRecordIO(path, 'r')
        assert [rec.read() for _ in payloads[:-1]] == payloads[:-1]
        with pytest.raises(recordio.RecordIOError, match=r'big.rec: truncated record at byte '
                           r'offset %d \(%d bytes of %d\)' % (start, got,
                                                               len(payloads[-1]) + 2)):
            rec.read()
        rec.close()


def test_index_past_the_end(tmp_path):
    idx = str(tmp_path / 'p.idx')
    with open(_golden('packed.idx')) as f:
        lines = f.read().splitlines()
    lines.append('40\t100000')
    lines.append('50\t4')             # inside a record: no magic number there
    with open(idx, 'w') as f:
        f.write('\n'.join(lines) + '\n')
    rec = recordio.MXIndexedRecordIO(idx, _golden('packed.rec'), 'r')
    with pytest.raises(ValueError, match=r"p.idx: key 40 points at byte offset 100000, past "
                       r"the end of .*packed.rec \(176 bytes\)"):
        rec.read_idx(40)
    with pytest.raises(ValueError, match='bad magic number .* at byte offset 4'):
        rec.read_idx(50)
    assert recordio.unpack(rec.read_idx(10))[1] == b'multi'
    with pytest.raises(KeyError, match='no record of key 60'):
        rec.read_idx(60)
    with open(idx, 'a') as f:
        f.write('oops\n')
    with pytest.raises(ValueError, match=r'p.idx, line 7: not a "key<TAB>offset" line'):
        recordio.MXIndexedRecordIO(idx, _golden('packed.rec'), 'r')


def test_usage_errors(tmp_path):
    with pytest.raises(ValueError, match='Invalid flag'):
        recordio.MXRecordIO(str(tmp_path / 'a.rec'), 'a')
    with pytest.raises(FileNotFoundError):
        recordio.MXRecordIO(str(tmp_path / 'missing.rec'), 'r')
    rec = recordio.MXIndexedRecordIO(str(tmp_path / 'a.idx'), str(tmp_path / 'a.rec'), 'w')
    with pytest.raises(TypeError, match='bytes-like'):
        rec.write('text')
    with pytest.raises(io.UnsupportedOperation, match='opened for writing'):
        rec.read()
    assert rec.tell() == 0
    rec.write_idx('7', b'abcde')
    assert rec.tell() == 16 and rec.keys == [7]
    rec.close()
    rec.close()                      # closing twice is fine
    with pytest.raises(RuntimeError, match='closed'):
        rec.write(b'x')
    rec = recordio.MXIndexedRecordIO(str(tmp_path / 'a.idx'), str(tmp_path / 'a.rec'), 'r')
    with pytest.raises(io.UnsupportedOperation, match='opened for reading'):
        rec.tell()
    assert rec.read_idx(7) == b'abcde' and rec.read() is None
    rec.close()


def test_reopen_and_pickle(tmp_path):
    idx, path = str(tmp_path / 'k.idx'), str(tmp_path / 'k.rec')
    writer = recordio.MXIndexedRecordIO(idx, path, 'w', key_type=str)
    for i in range(4):
        writer.write_idx('k%d' % i, b'r%d' % i)
    with pytest.raises(TypeError, match='truncate'):
        pickle.dumps(writer)
    del writer                       # __del__ closes (MXNet's test_recordio relies on it)
    reader = recordio.MXIndexedRecordIO(idx, path, 'r', key_type=str)
    assert reader.keys == ['k0', 'k1', 'k2', 'k3']
    assert reader.read_idx('k2') == b'r2'
    clone = pickle.loads(pickle.dumps(reader))
    assert clone.read_idx('k1') == b'r1' and clone.read() == b'r2'
    assert reader.read() == b'r3'     # the original is untouched
    reader.close()
    closed = pickle.loads(pickle.dumps(reader))
    assert not closed.is_open
    plain = recordio.MXRecordIO(path, 'r')
    plain.read()
    again = pickle.loads(pickle.dumps(plain))
    assert again.read() == b'r0'      # a worker's copy starts from the first record


def _child_reads(reader, queue):
    try:
        reader.read()
    except RuntimeError as err:
        queue.put(('refused', str(err), reader.read_idx(3)))
    else:
        queue.put(('read',))


@pytest.mark.skipif(sys.platform != 'linux', reason='fork')
def test_forked_child_reopens(tmp_path):
    idx, path = str(tmp_path / 'f.idx'), str(tmp_path / 'f.rec')
    with recordio.MXIndexedRecordIO(idx, path, 'w') as writer:
        for i in range(5):
            writer.write_idx(i, b'rec%d' % i)
    reader = recordio.MXIndexedRecordIO(idx, path, 'r')
    assert reader.read_idx(1) == b'rec1'
    ctx = multiprocessing.get_context('fork')
    queue = ctx.Queue()
    proc = ctx.Process(target=_child_reads, args=(reader, queue))
    proc.start()
    result = queue.get(timeout=30)
    proc.join(30)
    assert result[0] == 'refused' and 'multiple processes' in result[1]
    assert result[2] == b'rec3'
    assert reader.read() == b'rec2'   # the child's reads did not move the parent's offset


def test_threads_share_one_reader(tmp_path):
    # seek + read is one step: without the reader's lock, threads switching every
    # microsecond read each other's offsets (records beyond the 8 KiB buffer release the GIL)
    import threading
    idx, path = str(tmp_path / 't.idx'), str(tmp_path / 't.rec')

    def payload(i):
        return b'%d:' % i + bytes([i]) * (9000 + i * 37 % 5000)
    with recordio.MXIndexedRecordIO(idx, path, 'w') as writer:
        for i in range(64):
            writer.write_idx(i, payload(i))
    reader = recordio.MXIndexedRecordIO(idx, path, 'r')
    bad = []

    def work(seed):
        rng = np.random.RandomState(seed)
        for k in rng.randint(0, 64, 300):
            try:
                if reader.read_idx(int(k)) != payload(k):
                    bad.append(int(k))
            except ValueError as err:
                bad.append(err)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert not bad


def test_head_alone_after_a_direct_read(tmp_path):
    # after a record read straight from the file, read() reads the next head alone (8
    # bytes) and a record of _DIRECT_AFTER bytes or more behind it directly; a smaller
    # one, a split one or the end go back to the buffer
    direct, after = recordio.MXRecordIO._DIRECT, recordio._DIRECT_AFTER
    rng = np.random.RandomState(5)
    sizes = [direct + 5, after, after - 1, 9001, 2 * direct, 0, direct + 1, after + 3,
             direct + 2, 6, 3 * direct]
    payloads = [rng.bytes(n) for n in sizes]
    payloads.insert(9, rng.bytes(direct) + probes.MAGIC + b'split')   # after direct + 2
    path = str(tmp_path / 'h.rec')
    offsets = []
    with recordio.MXRecordIO(path, 'w') as rec:
        for p in payloads:
            offsets.append(rec._file.tell())
            rec.write(p)
    size = os.path.getsize(path)

    class Reader(recordio.MXRecordIO):
        _READ_BUFFER = 1 << 14          # the first record is cut at the buffer's end
    reader = Reader(path, 'r')
    calls = []

    def pread(fd, n, offset):
        calls.append((n, offset))
        return os.pread(fd, n, offset)
    reader._pread = pread
    got = []
    for i in range(len(payloads) + 1):
        del calls[:]
        got.append(reader.read())
        if i in (1, 7, 8):                  # directly, behind a head read alone
            assert calls == [(8, offsets[i]), (len(payloads[i]), offsets[i] + 8)]
        if i == 2:                          # 4095 bytes: a buffer again
            assert calls[0] == (8, offsets[i]) and calls[1][1] == offsets[i]
            assert calls[1][0] >= recordio.MXRecordIO._SMALL_READ
        if i == 3:                          # 9001 bytes after a small one: buffered
            assert calls == [(16384, offsets[i])]
    assert got == payloads + [None]
    assert calls[0] == (8, size)            # the end, found by a head read alone
    # a file cut in a record read behind a head alone
    cut = offsets[3] + 8 + 5000
    with open(path, 'r+b') as f:
        f.truncate(cut)
    reader = recordio.MXRecordIO(path, 'r')
    assert [reader.read() for _ in range(3)] == payloads[:3]
    with pytest.raises(recordio.RecordIOError, match=r'h.rec: truncated record at byte '
                       r'offset %d \(5000 bytes of 9004\)' % offsets[3]):
        reader.read()
    # a closed reader, another process's reader, a seek: none reads at the kept head
    with open(str(tmp_path / 'h.idx'), 'w') as f:
        f.write(''.join('%d\t%d\n' % (i, o) for i, o in enumerate(offsets[:3])))

    class Indexed(recordio.MXIndexedRecordIO):
        _READ_BUFFER = 1 << 14
    reader = Indexed(str(tmp_path / 'h.idx'), path, 'r')
    assert reader.read() == payloads[0] and reader._head >= 0
    assert reader.read_idx(1) == payloads[1] and reader.read() == payloads[2]
    assert reader.read_idx(0) == payloads[0] and reader._head >= 0
    reader.pid = -1
    with pytest.raises(RuntimeError, match='multiple processes'):
        reader.read()
    reader.close()
    with pytest.raises(RuntimeError, match='closed'):
        reader.read()


def _feed(path, fifo, chunk):
    """Write the file's bytes into the FIFO, ``chunk`` bytes at a time (a slow writer: the
    reader sees short reads)."""
    data = _bytes(path)
    with open(fifo, 'wb', buffering=0) as f:
        for i in range(0, len(data), chunk):
            f.write(data[i:i + chunk])


@pytest.mark.skipif(not hasattr(os, 'mkfifo'), reason='FIFOs')
@pytest.mark.parametrize('chunk', [1 << 20, 4093])
def test_reads_a_pipe(tmp_path, chunk):
    # a file that cannot seek (a FIFO, /dev/stdin) is read in order, as dmlc's stream does
    import threading
    path, fifo = str(tmp_path / 'p.rec'), str(tmp_path / 'fifo')
    payloads = _mixed_payloads()
    offsets = []
    with recordio.MXRecordIO(path, 'w') as rec:
        for p in payloads:
            offsets.append(rec._file.tell())
            rec.write(p)
    os.mkfifo(fifo)
    writer = threading.Thread(target=_feed, args=(path, fifo, chunk))
    writer.start()
    try:
        reader = recordio.MXRecordIO(fifo, 'r')
        assert [reader.read() for _ in payloads] + [reader.read()] == payloads + [None]
        reader.close()
    finally:
        writer.join(30)
    # a stream cut inside a large record (3 * _DIRECT + 2 bytes)
    cut = str(tmp_path / 'cut.rec')
    with open(cut, 'wb') as f:
        f.write(_bytes(path)[:offsets[8] + 8 + 1000])
    writer = threading.Thread(target=_feed, args=(cut, fifo, chunk))
    writer.start()
    try:
        reader = recordio.MXRecordIO(fifo, 'r')
        assert [reader.read() for _ in payloads[:8]] == payloads[:8]
        with pytest.raises(recordio.RecordIOError, match=r'fifo: truncated record at byte '
                           r'offset %d \(1000 bytes of %d\)' % (offsets[8],
                                                                   len(payloads[8]) + 2)):
            reader.read()
        reader.close()
    finally:
        writer.join(30)


def test_threads_share_sequential_reads(tmp_path):
    # read() from several threads: each record once, whole (the pread of a large record
    # releases the GIL between reading its head and moving on)
    import threading
    path = str(tmp_path / 's.rec')
    rng = np.random.RandomState(1)
    payloads = [b'%d:' % i + rng.bytes(int(n)) for i, n in
                enumerate(rng.choice([3000, 9000, 40000, 70000], 200))]
    with recordio.MXRecordIO(path, 'w') as rec:
        for p in payloads:
            rec.write(p)
    reader = recordio.MXRecordIO(path, 'r')
    got, bad = [], []

    def work():
        try:
            while True:
                data = reader.read()
                if data is None:
                    return
                got.append(data)
        except Exception as err:        # noqa: BLE001 - reported below
            bad.append(err)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert not bad
    assert sorted(got) == sorted(payloads)
