"""MXNet NDArray files (``.params``): golden files written by MXNet 1.9.1, round trips, and
corrupt input.

The golden files and their expected contents come from ``tests/golden/make_params.py``.
"""
import hashlib
import io
import json
import os
import pathlib
import struct

import numpy as np
import pytest

import symgraph as mx
from symgraph.base import MXNetError
from symgraph.ndarray.serialization import (ParamsFormatError, dumps_arrays, load_arrays,
                                            loads_arrays, save_arrays)

GOLDEN = os.path.join(os.path.dirname(os.path.dirname(__file__)), 'golden', 'params')
with open(os.path.join(GOLDEN, 'manifest.json')) as _f:
    MANIFEST = json.load(_f)['files']
with open(os.path.join(GOLDEN, 'mxnet_reads_ours.json')) as _f:
    OURS = json.load(_f)['files']
with np.load(os.path.join(GOLDEN, 'expected.npz')) as _z:
    EXPECTED = {k: _z[k] for k in _z.files}


def golden_path(fname):
    return os.path.join(GOLDEN, fname)


def golden_bytes(fname):
    with open(golden_path(fname), 'rb') as f:
        return f.read()


def expected_content(fname):
    m = MANIFEST[fname]
    values = [EXPECTED['%s|%d' % (fname, i)] for i in range(m['count'])]
    return dict(zip(m['names'], values)) if m['names'] else values


def assert_same(got, want):
    """Same container kind, names in order, dtype, shape and values (NaN where NaN)."""
    assert type(got) is type(want)
    if isinstance(want, dict):
        assert list(got) == list(want)
        pairs = [(got[k], want[k]) for k in want]
    else:
        assert len(got) == len(want)
        pairs = list(zip(got, want))
    for g, w in pairs:
        assert isinstance(g, np.ndarray)
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, g.shape, w.dtype, w.shape)
        np.testing.assert_array_equal(g, w)


LOADABLE = sorted(f for f, m in MANIFEST.items()
                  if m['kind'] != 'error' and f not in ('bfloat16.params',
                                                        'duplicate_names.params'))


def test_golden_set_is_complete():
    # the script's coverage is what these tests rely on: a lost file must not go unnoticed
    for fname in ('list_float32.params', 'dict_mixed.params', 'dtypes.params',
                  'empty_arrays.params', 'scalar_legacy.params', 'npshape_v3.params',
                  'checkpoint-0001.params', 'sparse.params', 'bfloat16.params',
                  'legacy_v0.params', 'legacy_v1.params', 'empty_list.params',
                  'empty_dict.params', 'duplicate_names.params', 'gpu_context.params'):
        assert fname in MANIFEST and os.path.isfile(golden_path(fname)), fname
        assert os.path.getsize(golden_path(fname)) < 4096
    dtypes = {v.dtype for k, v in EXPECTED.items() if k.startswith('dtypes.params|')}
    assert dtypes == {np.dtype(t) for t in ('f4', 'f8', 'f2', 'u1', 'i1', 'i4', 'i8', '?')}


# ---------------------------------------------------------------------------------------------
# reading what MXNet wrote

@pytest.mark.parametrize('fname', LOADABLE)
def test_load_mxnet_file(fname):
    want = expected_content(fname)
    got = load_arrays(golden_path(fname))
    assert_same(got, want)
    # the same from bytes, from a file object and from a pathlib path
    assert_same(loads_arrays(golden_bytes(fname)), want)
    with open(golden_path(fname), 'rb') as f:
        assert_same(load_arrays(f), want)
    assert_same(load_arrays(pathlib.Path(golden_path(fname))), want)


def test_loaded_arrays_are_owned_native_and_writable():
    got = load_arrays(golden_path('dtypes.params'))
    for arr in got.values():
        assert arr.flags.owndata or arr.base is not None and arr.base.flags.owndata
        assert arr.flags.writeable and arr.flags.c_contiguous
        assert arr.dtype.isnative
        arr[...] = 0      # not a view of the (closed) file mapping


def test_checkpoint_names_and_order():
    got = load_arrays(golden_path('checkpoint-0001.params'))
    assert list(got) == ['arg:conv0_weight', 'arg:conv0_bias', 'arg:bn0_gamma', 'arg:bn0_beta',
                         'arg:fc1_weight', 'arg:fc1_bias',
                         'aux:bn0_moving_mean', 'aux:bn0_moving_var']
    assert got['arg:conv0_weight'].shape == (4, 2, 3, 3)
    assert got['arg:fc1_weight'].shape == (3, 16)


def test_scalar_and_empty_shapes():
    got = load_arrays(golden_path('scalar_legacy.params'))
    assert got['s'].shape == () and got['s'] == 5.0 and got['i'].dtype == np.int64
    got = load_arrays(golden_path('npshape_v3.params'))
    assert got['s'].shape == () and got['e'].shape == (0, 3)
    got = load_arrays(golden_path('empty_arrays.params'))
    assert [a.shape for a in got] == [(0, 3), (2, 0, 4), (0,), (1, 1)]


def test_empty_dict_loads_as_empty_list():
    assert load_arrays(golden_path('empty_dict.params')) == []
    assert load_arrays(golden_path('empty_list.params')) == []
    assert dumps_arrays({}) == dumps_arrays([]) == golden_bytes('empty_dict.params')


def test_duplicate_names_keep_first_position_last_value():
    # the three arrays, in file order
    raw = [EXPECTED['duplicate_names.params|%d' % i] for i in range(3)]
    got = load_arrays(golden_path('duplicate_names.params'))
    assert list(got) == ['x', 'y']
    np.testing.assert_array_equal(got['x'], raw[2])
    np.testing.assert_array_equal(got['y'], raw[1])


def test_bfloat16():
    bits = EXPECTED['bfloat16.params|0']
    got = load_arrays(golden_path('bfloat16.params'))[0]       # bfloat16 by default
    assert got.dtype.name == 'bfloat16'
    np.testing.assert_array_equal(got.view(np.uint16), bits)
    with pytest.raises(ParamsFormatError, match=r"array #0 has dtype bfloat16"):
        load_arrays(golden_path('bfloat16.params'), bfloat16='error')
    raw = load_arrays(golden_path('bfloat16.params'), bfloat16='raw')[0]
    assert raw.dtype == np.uint16
    np.testing.assert_array_equal(raw, bits)
    wide = load_arrays(golden_path('bfloat16.params'), bfloat16='float32')[0]
    assert wide.dtype == np.float32
    # the values MXNet's own amp_cast to float32 gives (see the manifest note)
    np.testing.assert_array_equal(wide, [1.5, -2.25, 3.0, 9999220736.0, -0.0])
    assert np.signbit(wide[-1])
    with pytest.raises(ValueError, match='bfloat16 must be'):
        load_arrays(golden_path('bfloat16.params'), bfloat16='half')


def test_sparse_records_load_with_their_structure():
    # MXNet 1.9.1 wrote rs = row_sparse_array(([[1, 2], [3, 4]], [1, 3]), shape=(5, 2)) and
    # cs = csr_matrix(([1, 2, 3], [0, 2, 1], [0, 2, 3]), shape=(2, 3)) (make_params.py)
    got = load_arrays(golden_path('sparse.params'))
    assert list(got) == ['rs', 'dense', 'cs']
    rs, cs = got['rs'], got['cs']
    assert rs.stype == 'row_sparse' and cs.stype == 'csr'
    assert type(got['dense']) is np.ndarray
    np.testing.assert_array_equal(rs, [[0, 0], [1, 2], [0, 0], [3, 4], [0, 0]])
    np.testing.assert_array_equal(rs.structure, [1, 3])
    np.testing.assert_array_equal(cs, [[1, 0, 2], [0, 3, 0]])
    np.testing.assert_array_equal(cs.structure[0], [0, 2, 1])
    np.testing.assert_array_equal(cs.structure[1], [0, 2, 3])
    # written back: the very bytes MXNet wrote
    assert dumps_arrays(got) == golden_bytes('sparse.params')


def test_sparse_csr_record_alone():
    # rebuild the file without the row_sparse record: the csr one loads by itself
    blob = golden_bytes('sparse.params')
    # records: rs starts at 24; find the dense record's magic after it
    v2 = struct.pack('<I', 0xF993FAC9)
    starts = [i for i in range(24, len(blob) - 3) if blob[i:i + 4] == v2]
    assert len(starts) == 3
    names_at = len(blob) - (8 + (8 + 2) + (8 + 5) + (8 + 2))     # 3 names: rs, dense, cs
    assert blob[names_at:names_at + 8] == struct.pack('<Q', 3)
    new = (struct.pack('<QQQ', 0x112, 0, 2) + blob[starts[1]:names_at]
           + struct.pack('<Q', 2) + struct.pack('<Q', 5) + b'dense' + struct.pack('<Q', 2)
           + b'cs')
    got = loads_arrays(new)
    assert got['cs'].stype == 'csr'
    np.testing.assert_array_equal(got['cs'], [[1, 0, 2], [0, 3, 0]])


def test_sparse_record_that_does_not_fit_is_named():
    blob = bytearray(golden_bytes('sparse.params'))
    # the row_sparse record's first row index (int64 1 after its values) made 7 (>= 5 rows)
    at = blob.index(struct.pack('<qq', 1, 3))
    blob[at:at + 8] = struct.pack('<q', 7)
    with pytest.raises(ParamsFormatError, match='row_sparse array of shape'):
        loads_arrays(bytes(blob))


# ---------------------------------------------------------------------------------------------
# writing what MXNet writes

@pytest.mark.parametrize('fname', sorted(OURS))
def test_writer_matches_mxnet_bytes(fname):
    entry = OURS[fname]
    assert entry['result'] == 'ok'       # MXNet loaded our file (tests/golden/make_params.py)
    ours = dumps_arrays(expected_content(fname), np_shape=(entry['mode'] == 'np_shape'))
    # still the bytes MXNet was shown to read, and the very bytes MXNet itself wrote
    assert hashlib.sha256(ours).hexdigest() == entry['sha256']
    assert entry['identical_bytes_to_mxnet'] and ours == golden_bytes(fname)


def test_save_to_path_and_fileobj(tmp_path):
    content = expected_content('dict_mixed.params')
    save_arrays(str(tmp_path / 'a.params'), content)
    save_arrays(tmp_path / 'b.params', content)
    buf = io.BytesIO()
    save_arrays(buf, content)
    want = golden_bytes('dict_mixed.params')
    assert (tmp_path / 'a.params').read_bytes() == want
    assert (tmp_path / 'b.params').read_bytes() == want
    assert buf.getvalue() == want


ROUND_TRIP_DTYPES = ['float32', 'float64', 'float16', 'uint8', 'int8', 'int32', 'int64', 'bool']


@pytest.mark.parametrize('dtype', ROUND_TRIP_DTYPES)
@pytest.mark.parametrize('shape', [(), (1,), (0,), (3, 5), (2, 0, 3), (2, 3, 1, 4, 1, 2, 3)])
def test_round_trip(dtype, shape):
    rng = np.random.RandomState(len(shape))
    a = np.asarray(rng.randn(*shape) * 100).astype(dtype)
    for data in ([a, a[..., ::-1] if a.ndim else a], {'x': a, 'y\u00fc': a.T}):
        got = loads_arrays(dumps_arrays(data))
        assert_same(got, {k: np.asarray(v) for k, v in data.items()}
                    if isinstance(data, dict) else [np.asarray(v) for v in data])
        got3 = loads_arrays(dumps_arrays(data, np_shape=True))
        assert_same(got3, got)


def test_round_trip_noncontiguous_and_byteswapped():
    base = np.arange(24, dtype=np.float64).reshape(4, 6)
    views = [base.T, base[::2, 1::3], base.astype('>f8'), np.asfortranarray(base),
             np.float32(2.5), np.int64(-3)]
    got = loads_arrays(dumps_arrays(views))
    for g, v in zip(got, views):
        v = np.asarray(v)
        assert g.shape == v.shape and g.dtype == v.dtype.newbyteorder('=')
        np.testing.assert_array_equal(g, v)
    # a big-endian input writes the same bytes as its native twin
    assert dumps_arrays([base.astype('>f8')]) == dumps_arrays([base])


def test_single_array_saves_as_list():
    a = np.ones((2, 2), np.float32)
    assert dumps_arrays(a) == dumps_arrays([a])
    assert dumps_arrays((a,)) == dumps_arrays([a])


@pytest.mark.parametrize('bad', [np.zeros(2, np.complex64), np.zeros(2, np.int16),
                                 np.zeros(2, np.uint32), np.array(['a']),
                                 np.array([object()], dtype=object)])
def test_writer_rejects_unsupported_dtype(bad, tmp_path):
    with pytest.raises(TypeError, match=r"array 'w' has dtype"):
        save_arrays(tmp_path / 'x.params', {'ok': np.ones(1), 'w': bad})
    assert not (tmp_path / 'x.params').exists()       # nothing half-written
    with pytest.raises(TypeError, match=r'array #1 has dtype'):
        dumps_arrays([np.ones(1), bad])


def test_writer_rejects_bad_containers():
    with pytest.raises(TypeError, match='names must be str'):
        dumps_arrays({1: np.ones(1)})
    with pytest.raises(TypeError, match='data must be'):
        dumps_arrays(3)


# ---------------------------------------------------------------------------------------------
# corrupt, truncated and foreign input

SMALL = ['dtypes.params', 'dict_mixed.params', 'npshape_v3.params', 'sparse.params',
         'legacy_v0.params', 'legacy_v1.params', 'scalar_legacy.params', 'bfloat16.params']


@pytest.mark.parametrize('fname', SMALL)
def test_every_truncation_is_a_format_error(fname):
    blob = golden_bytes(fname)
    for n in range(len(blob)):
        with pytest.raises(ParamsFormatError) as err:
            loads_arrays(blob[:n], source='cut.params')
        assert str(err.value).startswith('cut.params: '), str(err.value)


def test_truncation_messages_name_array_and_sizes(tmp_path):
    blob = golden_bytes('list_float32.params')
    # cut inside the data of the third array: shape (2, 3, 2) float32 = 48 bytes
    cut = blob[:len(blob) - 8 - 20]
    path = tmp_path / 'cut.params'
    path.write_bytes(cut)
    with pytest.raises(ParamsFormatError) as err:
        load_arrays(path)
    msg = str(err.value)
    assert str(path) in msg and 'array #2' in msg
    assert 'data of float32 array of shape (2, 3, 2) needs 48 bytes, 28 remain' in msg
    assert isinstance(err.value, MXNetError) and isinstance(err.value, ValueError)


def test_empty_file(tmp_path):
    path = tmp_path / 'empty.params'
    path.write_bytes(b'')
    with pytest.raises(ParamsFormatError, match='not an MXNet NDArray file.*only 0 bytes'):
        load_arrays(path)


@pytest.mark.parametrize('fname', ['dtypes.params', 'sparse.params', 'legacy_v0.params',
                                   'npshape_v3.params'])
def test_byte_corruption_never_escapes(fname):
    blob = bytearray(golden_bytes(fname))
    for i in range(len(blob)):
        for value in (0x00, 0x7F, 0xFF):
            bad = bytearray(blob)
            bad[i] = value
            try:
                loads_arrays(bytes(bad))
            except ParamsFormatError:
                pass


def test_random_garbage_never_escapes():
    rng = np.random.RandomState(7)
    head = struct.pack('<QQQ', 0x112, 0, 1)
    for n in range(300):
        tail = rng.randint(0, 256, size=rng.randint(0, 80)).astype(np.uint8).tobytes()
        for blob in (tail, head + tail, head + struct.pack('<I', 0xF993FAC9) + tail):
            try:
                loads_arrays(blob)
            except ParamsFormatError:
                pass


@pytest.mark.parametrize('blob, hint', [
    (b'PK\x03\x04' + b'\0' * 40, 'zip/.npz'),
    (b'\x93NUMPY\x01\x00' + b'\0' * 40, '.npy'),
    (b'{\n  "nodes": []}' + b' ' * 20, 'JSON'),
    (struct.pack('<QQQ', 0x113, 0, 0), ''),
])
def test_wrong_magic(blob, hint):
    with pytest.raises(ParamsFormatError, match='not an MXNet NDArray file') as err:
        loads_arrays(blob, source='x.bin')
    assert hint in str(err.value)
    assert 'x.bin' in str(err.value)


def _v2_record(shape_fmt_values, flag=0, stype=0, data=b''):
    return (struct.pack('<Ii', 0xF993FAC9, stype) + shape_fmt_values
            + struct.pack('<iii', 1, 0, flag) + data)


def _file(records, count=None, names=b'\0' * 8):
    n = len(records) if count is None else count
    return struct.pack('<QQQ', 0x112, 0, n) + b''.join(records) + names


@pytest.mark.parametrize('blob, match', [
    (_file([], count=2 ** 60), 'array count 1152921504606846976 cannot fit'),
    (_file([struct.pack('<Iii', 0xF993FAC9, 0, 2 ** 31 - 1)]),
     r'array #0: truncated: shape \(2147483647 dims\) needs 17179869176 bytes'),
    (_file([_v2_record(struct.pack('<iqq', 2, 2 ** 40, 2 ** 40))]),
     r'data of float32 array of shape \(1099511627776, 1099511627776\) needs '
     r'4835703278458516698824704 bytes, 8 remain'),
    (_file([_v2_record(struct.pack('<iqq', 2, 0, 2 ** 62))]),
     r'array #0: float32 array of shape \(0, 4611686018427387904\) cannot be made'),
    (_file([_v2_record(struct.pack('<i65q', 65, *[1] * 65), data=b'\0' * 4)]),
     'shape has 65 dimensions; NumPy arrays have at most 64'),
    (_file([_v2_record(struct.pack('<iq', 1, -5))]), r'shape: negative dimension'),
    (_file([_v2_record(struct.pack('<iq', 1, 1), flag=99, data=b'\0' * 4)]),
     'unknown type flag 99'),
    (_file([_v2_record(struct.pack('<iq', 1, 1), stype=5)]), 'unknown storage type 5'),
    (_file([struct.pack('<Iii', 0xF993FACA, 0, -1)]),
     r"array #0 is an uninitialised NDArray \(unknown shape"),
    (_file([struct.pack('<Ii', 0xF993FACA, 0) + struct.pack('<i', -4)]), 'invalid ndim -4'),
    (_file([struct.pack('<I', 0)], names=struct.pack('<QQ', 1, 1) + b'w'),
     r"array 'w' \(#0\) is an uninitialised NDArray \(ndim 0 in a pre-V2 record\)"),
    (_file([struct.pack('<I', 0xDEADBEEF)]), 'unknown array record magic 0xDEADBEEF'),
    (_file([_v2_record(struct.pack('<iq', 1, 1), data=b'\0' * 4)],
           names=struct.pack('<Q', 3)), '3 names for 1 arrays'),
    (_file([_v2_record(struct.pack('<iq', 1, 1), data=b'\0' * 4)],
           names=struct.pack('<QQ', 1, 2 ** 63)),
     'name #0: truncated: name text needs 9223372036854775808 bytes, 0 remain'),
    (_file([_v2_record(struct.pack('<iq', 1, 1), data=b'\0' * 4)],
           names=struct.pack('<QQ', 1, 2) + b'\xff\xfe'), 'name #0: name is not UTF-8'),
])
def test_corrupt_headers(blob, match):
    with pytest.raises(ParamsFormatError, match=match):
        loads_arrays(blob)


def test_trailing_bytes_are_ignored_like_mxnet():
    blob = golden_bytes('list_float32.params')
    assert_same(loads_arrays(blob + b'\x01\x02junk'), expected_content('list_float32.params'))


def test_nd_load_takes_the_bfloat16_choice_its_error_suggests_and_load_frombuffer():
    path = golden_path('bfloat16.params')
    with pytest.raises(ParamsFormatError, match=r"'float32' \(exact widening\)"):
        mx.nd.load(path, bfloat16='error')
    assert mx.nd.load(path)[0].asnumpy().dtype.name == 'bfloat16'
    wide = mx.nd.load(path, bfloat16='float32')[0]
    assert wide.dtype == np.float32
    np.testing.assert_array_equal(wide.asnumpy(), [1.5, -2.25, 3.0, 9999220736.0, -0.0])
    with open(golden_path('checkpoint-0001.params'), 'rb') as f:
        buf = f.read()
    from_buf = mx.nd.load_frombuffer(buf)
    from_file = mx.nd.load(golden_path('checkpoint-0001.params'))
    assert sorted(from_buf) == sorted(from_file)
    for k in from_file:
        np.testing.assert_array_equal(from_buf[k].asnumpy(), from_file[k].asnumpy())


def test_symbol_load_of_a_params_file_or_non_utf8_text_is_a_clear_error(tmp_path):
    from symgraph.graph.json_format import SymbolFormatError
    with pytest.raises(SymbolFormatError, match='not UTF-8 JSON text.*looks like a .params'):
        mx.sym.load(golden_path('checkpoint-0001.params'))
    # UTF-8 names load whatever the locale's encoding
    net = mx.sym.exp(mx.sym.var('d\u00e5ta'), name='e')
    p = tmp_path / 'net-symbol.json'
    p.write_bytes(net.tojson().encode('utf-8'))
    assert mx.sym.load(str(p)).list_arguments() == ['d\u00e5ta']


def test_a_checkpoint_entry_without_arg_or_aux_is_skipped_with_a_warning(tmp_path):
    prefix = str(tmp_path / 'm')
    mx.nd.save(prefix + '-0001.params', {'arg:w': mx.nd.ones(2), 'foo:bar': mx.nd.zeros(1)})
    with pytest.warns(UserWarning, match="'foo:bar' is neither arg:<name> nor aux:<name>"):
        arg, aux = mx.model.load_params(prefix, 1)
    assert list(arg) == ['w'] and aux == {}
