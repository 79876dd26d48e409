"""Property-based tests: no byte stream breaks the ``.params`` loader.

Every outcome of ``mx.nd.load_frombuffer`` / ``mx.nd.load`` / ``mx.model.load_checkpoint`` is
either a correct load or the loader's format error (:class:`ParamsFormatError`, a ValueError):
never another exception, a hang (the profile's deadline) or an allocation larger than the file
(a header may claim 2**40 elements; it is refused before anything is allocated).

Seeds are the committed golden files written by MXNet 1.9.1 and by symgraph; the mutations
are truncations, byte flips, 4- and 8-byte fields overwritten with huge counts, sizes and
dtype codes, inserted and deleted bytes. ``--hypothesis-profile=long`` runs many more examples
(see tests/conftest.py).
"""
import glob
import os
import struct
import tempfile
import time
import tracemalloc
import warnings

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import symgraph as mx
from symgraph.graph.json_format import SymbolFormatError
from symgraph.ndarray.serialization import (V1_MAGIC, V2_MAGIC, V3_MAGIC, ParamsFormatError,
                                            dumps_arrays, loads_arrays)

GOLDEN = os.path.join(os.path.dirname(os.path.dirname(__file__)), 'golden')
SEED_FILES = sorted(glob.glob(os.path.join(GOLDEN, '**', '*.params'), recursive=True))


def read(path):
    with open(path, 'rb') as f:
        return f.read()


SEEDS = [read(f) for f in SEED_FILES]
# fields a corrupt file is likely to hold: counts, sizes, ndims, dtype codes, magics
INTERESTING = [0, 1, 2, 3, 7, 11, 12, 13, 64, 65, 255, 2**31 - 1, 2**31, 2**32 - 1, 2**32,
               2**40, 2**62, 2**63 - 1, 2**63, 2**64 - 1, V1_MAGIC, V2_MAGIC, V3_MAGIC, 0x112]
HEADER = struct.pack('<QQ', 0x112, 0)


def test_seed_corpus_is_there():
    # the fuzz tests below mean little without their seeds
    assert len(SEEDS) >= 20
    assert any(s[24:28] == struct.pack('<I', V3_MAGIC) for s in SEEDS)


@st.composite
def mutation(draw, size):
    kind = draw(st.sampled_from(['truncate', 'flip', 'field4', 'field8', 'insert', 'delete']))
    if size == 0:
        return ('insert', 0, draw(st.binary(min_size=1, max_size=16)))
    pos = draw(st.integers(0, size - 1))
    if kind == 'truncate':
        return (kind, pos)
    if kind == 'flip':
        return (kind, pos, draw(st.integers(1, 255)))
    if kind in ('field4', 'field8'):
        nbytes = 4 if kind == 'field4' else 8
        value = draw(st.sampled_from(INTERESTING) | st.integers(0, 2**(8 * nbytes) - 1))
        return (kind, pos, value % 2**(8 * nbytes))
    if kind == 'insert':
        return (kind, pos, draw(st.binary(min_size=1, max_size=16)))
    return (kind, pos, draw(st.integers(1, 16)))


def apply(blob, mut):
    b = bytearray(blob)
    kind, pos = mut[0], mut[1]
    if kind == 'truncate':
        del b[pos:]
    elif kind == 'flip':
        b[pos] ^= mut[2]
    elif kind in ('field4', 'field8'):
        n = 4 if kind == 'field4' else 8
        b[pos:pos + n] = mut[2].to_bytes(n, 'little')
    elif kind == 'insert':
        b[pos:pos] = mut[2]
    else:
        del b[pos:pos + mut[2]]
    return bytes(b)


@st.composite
def mutated_file(draw):
    blob = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(1, 4))):
        blob = apply(blob, draw(mutation(len(blob))))
    return blob


def check_outcome(blob, **kwargs):
    """Load ``blob``: a correct load or ParamsFormatError, nothing else, never big."""
    try:
        out = loads_arrays(blob, **kwargs)
    except ParamsFormatError as e:
        assert isinstance(e, ValueError) and isinstance(e, mx.MXNetError)
        assert str(e)
        return None
    arrays = list(out.values()) if isinstance(out, dict) else out
    # a load makes no more data than the file holds (bfloat16 widening aside)
    assert sum(a.nbytes for a in arrays) <= len(blob) * (2 if kwargs else 1)
    for a in arrays:
        assert isinstance(a, np.ndarray) and a.dtype.isnative
        if a.dtype == np.bool_:
            assert set(np.unique(a.view(np.uint8))) <= {0, 1}
    # what loaded saves back and loads again to the same arrays (when MXNet can hold them)
    if not kwargs and all(a.dtype.kind != 'u' or a.dtype == np.uint8 for a in arrays) \
            and all(a.dtype.kind != 'i' or a.dtype.itemsize != 2 for a in arrays):
        again = loads_arrays(dumps_arrays(out))
        assert type(again) is type(out)
        pairs = zip(again.values(), out.values()) if isinstance(out, dict) else zip(again, out)
        for x, y in pairs:
            assert x.dtype == y.dtype and x.shape == y.shape
            np.testing.assert_array_equal(x, y)
    return out


# regression examples: what the fuzzing found
_BOOL_BYTE_2 = (HEADER + struct.pack('<QIiiqiii', 1, V2_MAGIC, 0, 1, 3, 1, 0, 7)
                + b'\x02\x00\x01' + struct.pack('<Q', 0))


@given(mutated_file())
@example(_BOOL_BYTE_2)       # a bool byte of 2 loaded as a bool that is not True
def test_mutated_files_load_or_raise_format_error(blob):
    out = check_outcome(blob)
    if blob == _BOOL_BYTE_2:
        np.testing.assert_array_equal(out[0], [True, False, True])


@given(mutated_file(), st.sampled_from(['float32', 'raw']))
def test_mutated_files_with_bfloat16_modes(blob, mode):
    check_outcome(blob, bfloat16=mode)


@given(st.sampled_from(SEEDS), st.data())
def test_every_truncation_is_a_format_error(blob, data):
    # a file cut anywhere before its name table ends is refused, never half-loaded
    cut = data.draw(st.integers(0, max(len(blob) - 9, 0)))
    with pytest.raises(ParamsFormatError):
        loads_arrays(blob[:cut])


@st.composite
def claimed_header(draw):
    """One record whose header claims any shape / ndim / dtype code, with a little data."""
    magic = draw(st.sampled_from([V1_MAGIC, V2_MAGIC, V3_MAGIC, 3]))
    dims = draw(st.lists(st.sampled_from([0, 1, 2, 2**20, 2**31, 2**40, 2**62, 2**63 - 1])
                         | st.integers(0, 2**63 - 1), min_size=0, max_size=6))
    flag = draw(st.sampled_from([0, 1, 2, 3, 4, 5, 6, 7, 8, 11, 12, 13, -1, 2**31 - 1]))
    stype = draw(st.sampled_from([0, 0, 0, 1, 2, 3, -1]))
    if magic == 3:       # legacy: uint32 ndim in place of the magic, uint32 dims
        dims = [d % 2**32 for d in dims[:3]] + [0] * (3 - len(dims[:3]))
        head = struct.pack('<I3I', 3, *dims)
    elif magic == V1_MAGIC:
        head = struct.pack('<Ii%dq' % len(dims), magic, len(dims), *dims)
    else:
        head = struct.pack('<Iii%dq' % len(dims), magic, stype, len(dims), *dims)
        if stype in (1, 2):   # sparse: storage shape first, then shape
            head = struct.pack('<Iiiq', magic, stype, 1, dims[0] if dims else 0) + head[8:]
    tail = struct.pack('<iii', 1, 0, flag)
    if stype in (1, 2) and magic in (V2_MAGIC, V3_MAGIC):
        tail += struct.pack('<iiq', 6, 1, draw(st.sampled_from([1, 2**40])))
    filler = draw(st.binary(max_size=64))
    return HEADER + struct.pack('<Q', 1) + head + tail + filler + struct.pack('<Q', 0)


@given(claimed_header())
@example(HEADER + struct.pack('<QIiiqiii', 1, V2_MAGIC, 0, 1, 2**40, 1, 0, 0) + bytes(64))
@example(HEADER + struct.pack('<QIiiqqqiii', 1, V2_MAGIC, 0, 3, 0, 2**62, 2**62, 1, 0, 0)
         + struct.pack('<Q', 0))
@example(HEADER + struct.pack('<Q', 2**40))        # 2**40 arrays in a 24-byte file
@example(b'\x12\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00'
         b'\x00\x00\x00\x00\xc8\xfa\x93\xf9\x04\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00'
         b'\xe5\x1d\x00\x00\x00\x00\x00\x00\x11\xf7\x18\x00\x00\x00\x00\x00z\xfd\xf9\n\x00'
         b'\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x0c\x00\x00\x00\x00\x00\x00\x00'
         b'\x00\x00\x00\x00')    # zero-size bfloat16 whose float32 widening NumPy 2.5 refused
def test_claimed_sizes_are_checked_before_allocating(blob):
    tracemalloc.start()
    start = time.perf_counter()
    try:
        check_outcome(blob)
        check_outcome(blob, bfloat16='float32')
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    # a few kB of parsing whatever the header claims; well under a second
    assert peak < 256 * 1024 + 8 * len(blob), peak
    assert time.perf_counter() - start < 2.0


@given(st.lists(st.binary(max_size=12), min_size=1, max_size=4))
@example([b'\xff\xfe'])                                # not UTF-8
@example(['\ud800'.encode('utf-8', 'surrogatepass')])  # an encoded surrogate: not UTF-8
@example([b'arg:w\x00eight'])                          # NUL inside: a valid name
def test_names_of_any_bytes(raw_names):
    recs = b''.join(struct.pack('<Iii', V2_MAGIC, 0, 1) + struct.pack('<qiii', 1, 1, 0, 0)
                    + struct.pack('<f', i) for i in range(len(raw_names)))
    names = b''.join(struct.pack('<Q', len(n)) + n for n in raw_names)
    blob = HEADER + struct.pack('<Q', len(raw_names)) + recs + struct.pack('<Q', len(raw_names)) \
        + names
    try:
        text = [n.decode('utf-8') for n in raw_names]
    except UnicodeDecodeError:
        with pytest.raises(ParamsFormatError, match='not UTF-8'):
            loads_arrays(blob)
        return
    out = check_outcome(blob)
    assert list(out) == list(dict.fromkeys(text))
    for i, t in enumerate(text):
        if text.count(t) == 1:
            assert out[t][0] == i


@st.composite
def arrays_to_save(draw):
    dtype = draw(st.sampled_from(['float32', 'float64', 'float16', 'uint8', 'int8', 'int32',
                                  'int64', 'bool']))
    shape = draw(st.lists(st.integers(0, 4), max_size=4))
    n = int(np.prod(shape))
    raw = draw(st.binary(min_size=n * np.dtype(dtype).itemsize,
                         max_size=n * np.dtype(dtype).itemsize))
    a = np.frombuffer(raw, np.uint8 if dtype == 'bool' else dtype).reshape(shape)
    return a.astype(bool) if dtype == 'bool' else a


@given(st.lists(arrays_to_save(), max_size=4), st.booleans(), st.booleans())
def test_what_is_saved_loads_back(arrays, named, np_shape):
    data = {'arg:p%d' % i: a for i, a in enumerate(arrays)} if named else arrays
    out = check_outcome(dumps_arrays(data, np_shape=np_shape))
    # (an empty dict loads as an empty list, as in MXNet)
    got = list(out.values()) if named and arrays else out
    assert len(got) == len(arrays)
    for x, y in zip(got, arrays):
        assert x.dtype == y.dtype and x.shape == y.shape
        np.testing.assert_array_equal(x, y)


CHECKPOINTS = [os.path.join(GOLDEN, 'ours', n) for n in ('mlp', 'softmax', 'convbn')] + \
    [os.path.join(GOLDEN, 'data', 'rnn_export', 'gru')]


@given(st.sampled_from(CHECKPOINTS), st.sampled_from(['params', 'json']), st.data())
def test_corrupt_checkpoints(prefix, which, data):
    """``mx.model.load_checkpoint`` (files on disk): a checkpoint or a format error."""
    params = read(prefix + '-0000.params')
    text = read(prefix + '-symbol.json')
    if which == 'params':
        for _ in range(data.draw(st.integers(1, 3))):
            params = apply(params, data.draw(mutation(len(params))))
    else:
        for _ in range(data.draw(st.integers(1, 3))):
            text = apply(text, data.draw(mutation(len(text))))
    with tempfile.TemporaryDirectory() as tmp:
        new = os.path.join(tmp, 'model')
        with open(new + '-0000.params', 'wb') as f:
            f.write(params)
        with open(new + '-symbol.json', 'wb') as f:
            f.write(text)
        with warnings.catch_warnings():
            # a corrupt name gives "lacks parameters"/"unused entries" warnings: fine
            warnings.simplefilter('ignore', UserWarning)
            try:
                sym, args, aux = mx.model.load_checkpoint(new, 0)
            except (ParamsFormatError, SymbolFormatError) as e:
                assert isinstance(e, ValueError)
                return
            assert isinstance(sym, mx.sym.Symbol)
            assert all(isinstance(v, mx.nd.NDArray) for v in list(args.values())
                       + list(aux.values()))
            # the file as loaded by mx.nd.load holds the same arrays
            raw = mx.nd.load(new + '-0000.params')
            for k, v in args.items():
                np.testing.assert_array_equal(v.asnumpy(), raw['arg:' + k].asnumpy())
