"""CSVIter, LibSVMIter and MNISTIter against MXNet 1.9.1 (tests/golden/data/io/
native_iters.json and the input files beside it, made by tests/golden/make_io.py), and
their errors."""
import gzip
import json
import logging
import os
import shutil

import numpy as np
import pytest

import symgraph as mx

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, '..', 'golden', 'data', 'io')
FILES = os.path.join(DATA, 'files')
with open(os.path.join(DATA, 'native_iters.json')) as f:
    GOLDEN = json.load(f)
CASES, RESULTS = GOLDEN['cases'], GOLDEN['results']
ITERS = {'csv': mx.io.CSVIter, 'libsvm': mx.io.LibSVMIter, 'mnist': mx.io.MNISTIter}
PATH_KEYS = ('data_csv', 'label_csv', 'data_libsvm', 'label_libsvm', 'image', 'label')
WARNS = {('csv', 'label_longer'): r"label_csv .*l6.csv' has 6 rows but data_csv .* 4"}


def _files(kwargs, root=FILES):
    return {k: os.path.join(root, v) if k in PATH_KEYS else v for k, v in kwargs.items()}


def _kwargs(kwargs):
    # JSON made the shapes lists; MXNet's iterators take either
    return {k: tuple(v) if isinstance(v, list) else v for k, v in kwargs.items()}


def _record(it, epochs, mnist):
    out = {'provide_data': [repr(d) for d in it.provide_data],
           'provide_label': [repr(d) for d in it.provide_label],
           'batch_size': it.batch_size, 'epochs': []}
    for _ in range(epochs):
        batches = []
        for b in it:
            d = b.data[0].asnumpy()
            if mnist:
                data = [row.tobytes().hex() for row in
                        (d * 256).astype(np.uint8).reshape(len(d), -1)]
            else:
                data = d.tolist()
            batches.append({'data': data, 'label': b.label[0].asnumpy().tolist(),
                            'shapes': [list(d.shape), list(b.label[0].shape)],
                            'dtypes': [str(b.data[0].dtype), str(b.label[0].dtype)],
                            'pad': b.pad,
                            'index': None if b.index is None else [int(i) for i in b.index]})
        out['epochs'].append(batches)
        it.reset()
    return out


def _make(kind, name, root=FILES):
    kwargs = _kwargs(_files(CASES[kind][name], root))
    if (kind, name) in WARNS:
        with pytest.warns(UserWarning, match=WARNS[kind, name]):
            return ITERS[kind](**kwargs)
    return ITERS[kind](**kwargs)


ALL = [(k, n) for k in sorted(CASES) for n in sorted(CASES[k])]


@pytest.mark.parametrize('kind,name', ALL, ids=['%s-%s' % kn for kn in ALL])
def test_matches_mxnet(kind, name):
    want = RESULTS[kind][name]
    it = _make(kind, name)
    got = _record(it, len(want['epochs']), kind == 'mnist')
    for key in ('provide_data', 'provide_label', 'batch_size'):
        assert got[key] == want[key], key
    for e, (g_epoch, w_epoch) in enumerate(zip(got['epochs'], want['epochs'])):
        assert [b['pad'] for b in g_epoch] == [b['pad'] for b in w_epoch], 'pass %d' % e
        for i, (g, w) in enumerate(zip(g_epoch, w_epoch)):
            for key in ('shapes', 'dtypes', 'pad', 'index', 'label'):
                assert g[key] == w[key], (e, i, key)
            if kind == 'mnist':
                assert g['data'] == w['data'], (e, i)
            else:
                np.testing.assert_array_equal(np.array(g['data']), np.array(w['data']),
                                              err_msg='pass %d batch %d' % (e, i))


def test_gzipped_mnist_reads_the_same(tmp_path):
    for name in ('tiny-images-idx3-ubyte', 'tiny-labels-idx1-ubyte'):
        with open(os.path.join(FILES, 'mnist', name), 'rb') as src, \
                gzip.open(str(tmp_path / (name + '.gz')), 'wb') as dst:
            shutil.copyfileobj(src, dst)
    it = mx.io.MNISTIter(image=str(tmp_path / 'tiny-images-idx3-ubyte.gz'),
                         label=str(tmp_path / 'tiny-labels-idx1-ubyte.gz'),
                         **{k: v for k, v in CASES['mnist']['tiny_shuffle'].items()
                            if k not in ('image', 'label')})
    assert _record(it, 2, True) == RESULTS['mnist']['tiny_shuffle']


def test_mnist_logs_as_mxnet(caplog):
    kw = _files(CASES['mnist']['tiny'])
    with caplog.at_level(logging.INFO):
        mx.io.MNISTIter(image=kw['image'], label=kw['label'], batch_size=3, flat=True)
        mx.io.MNISTIter(image=kw['image'], label=kw['label'], batch_size=2, shuffle=False)
        mx.io.MNISTIter(image=kw['image'], label=kw['label'], batch_size=2, silent=True)
    assert [r.getMessage() for r in caplog.records] == [
        'MNISTIter: load 10 images, shuffle=1, shape=(3,784)',
        'MNISTIter: load 10 images, shuffle=0, shape=(2,1,28,28)']


# ------------------------------------------------------------- the MXDataIter protocol
def test_native_iterators_are_mxdataiters():
    it = _make('csv', 'label')
    assert isinstance(it, mx.io.MXDataIter) and isinstance(it, mx.io.DataIter)
    assert it.batch_size == 3


def test_first_batch_is_read_at_creation():
    it = _make('csv', 'd4x3_b2_rb1')
    # as MXNet: iter_next() reports the batch read at creation without moving on
    assert it.iter_next() and it.iter_next()
    first = it.next()
    assert first.data[0].asnumpy()[:, 0].tolist() == [1, 2]
    assert it.next().data[0].asnumpy()[:, 0].tolist() == [3, 4]
    with pytest.raises(StopIteration):
        it.next()
    it.reset()
    assert it.iter_next()
    assert isinstance(it.getdata(), mx.nd.NDArray)       # one NDArray, as MXNet
    assert it.getdata().asnumpy()[:, 0].tolist() == [1, 2]
    assert it.getlabel().shape == (2,) and it.getpad() == 0
    assert it.getindex().dtype == np.uint64 and it.getindex().tolist() == [0, 1]


def test_debug_skip_load_repeats_a_batch():
    it = _make('csv', 'd4x3_b2_rb1')
    it.next()
    it.next()
    it.debug_skip_load()
    for _ in range(3):
        assert it.next().data[0].asnumpy()[:, 0].tolist() == [3, 4]


def test_csv_round_batch_false_leftover_starts_as_zeros(tmp_path):
    # MXNet leaves uninitialised memory there; symgraph zeros
    path = tmp_path / 'd.csv'
    path.write_text('1,2\n3,4\n')
    b = mx.io.CSVIter(data_csv=str(path), data_shape=(2,), batch_size=3,
                      round_batch=False).next()
    assert b.pad == 1 and b.data[0].asnumpy().tolist() == [[1, 2], [3, 4], [0, 0]]


def test_csv_directory_reads_every_file_in_name_order(tmp_path):
    (tmp_path / 'b.csv').write_text('3,3\n')
    (tmp_path / 'a.csv').write_text('1,1\n2,2\n')
    it = mx.io.CSVIter(data_csv=str(tmp_path), data_shape=(2,), batch_size=3)
    assert it.next().data[0].asnumpy()[:, 0].tolist() == [1, 2, 3]


def test_prefetching_a_native_iterator():
    ref = _record(_make('libsvm', 'label_file'), 2, False)
    with mx.io.PrefetchingIter(_make('libsvm', 'label_file')) as it:
        assert it.provide_label == _make('libsvm', 'label_file').provide_label
        got = [[(b.data[0].asnumpy().tolist(), b.label[0].asnumpy().tolist(), b.pad)
                for b in it] for _ in range(1)]
    assert got[0] == [(b['data'], b['label'], b['pad']) for b in ref['epochs'][0]]


# ------------------------------------------------------------------------ errors
def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_csv_row_of_wrong_length(tmp_path):
    path = _write(tmp_path, 'bad.csv', '1,2,3\n2,3,4\n3,4\n4,5,6\n')
    with pytest.raises(ValueError, match=r"line 3 of '.*bad.csv' has 2 values, but the "
                                         r"shape \(3,\) needs 3"):
        mx.io.CSVIter(data_csv=path, data_shape=(3,), batch_size=2)
    with pytest.raises(ValueError, match=r"line 1 of '.*bad.csv' has 3 values, but the "
                                         r"shape \(2, 2\) needs 4"):
        mx.io.CSVIter(data_csv=path, data_shape=(2, 2), batch_size=2)


def test_csv_field_not_a_number(tmp_path):
    path = _write(tmp_path, 'txt.csv', '1,2\n3,x\n')
    with pytest.raises(ValueError, match=r"line 2 of '.*txt.csv': 'x' is not a number"):
        mx.io.CSVIter(data_csv=path, data_shape=(2,), batch_size=1)


def test_missing_files(tmp_path):
    missing = str(tmp_path / 'nope.csv')
    with pytest.raises(FileNotFoundError, match=r"CSVIter: data_csv: no such file.*nope.csv"):
        mx.io.CSVIter(data_csv=missing, data_shape=(3,), batch_size=2)
    good = _write(tmp_path, 'd.csv', '1\n2\n')
    with pytest.raises(FileNotFoundError, match=r"label_csv.*nope.csv"):
        mx.io.CSVIter(data_csv=good, data_shape=(1,), label_csv=missing, batch_size=2)
    with pytest.raises(FileNotFoundError, match=r"data_libsvm.*nope.t"):
        mx.io.LibSVMIter(data_libsvm=str(tmp_path / 'nope.t'), data_shape=(3,),
                         batch_size=2)
    with pytest.raises(FileNotFoundError, match=r"MNISTIter: image.*nope-images"):
        mx.io.MNISTIter(image=str(tmp_path / 'nope-images'), batch_size=2)
    try:
        mx.io.CSVIter(data_csv=missing, data_shape=(3,), batch_size=2)
    except FileNotFoundError as err:
        assert err.filename == missing


def test_csv_label_file_shorter(tmp_path):
    data = _write(tmp_path, 'd.csv', '1\n2\n3\n')
    label = _write(tmp_path, 'l.csv', '1\n2\n')
    with pytest.raises(ValueError, match=r"data_csv .*d.csv' has 3 rows but label_csv "
                                         r".*l.csv' only 2"):
        mx.io.CSVIter(data_csv=data, label_csv=label, data_shape=(1,), batch_size=2)


def test_csv_batch_too_large_for_round_batch(tmp_path):
    data = _write(tmp_path, 'd.csv', '1\n2\n3\n4\n')
    with pytest.raises(ValueError, match='batch_size 9 is too large for the 4 examples'):
        mx.io.CSVIter(data_csv=data, data_shape=(1,), batch_size=9)


@pytest.mark.parametrize('kwargs,match', [
    (dict(dtype='float16'), "dtype 'float16' is not supported; use one of None, 'float32'"),
    (dict(data_shape=(0,)), 'data_shape must be a shape of positive integers'),
    (dict(batch_size=0), 'batch_size must be at least 1'),
    (dict(round_batch='maybe'), 'round_batch must be a boolean'),
])
def test_csv_bad_parameters(tmp_path, kwargs, match):
    args = dict(data_csv=_write(tmp_path, 'd.csv', '1\n2\n'), data_shape=(1,), batch_size=2)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        mx.io.CSVIter(**args)


def test_keyword_arguments_only_and_unknown_ones(tmp_path):
    path = _write(tmp_path, 'd.csv', '1\n2\n')
    with pytest.raises(TypeError):
        mx.io.CSVIter(path, (1,), 2)
    with pytest.warns(UserWarning, match=r"CSVIter: unknown argument\(s\) 'lable_csv' are "
                                         r"ignored"):
        it = mx.io.CSVIter(data_csv=path, data_shape=(1,), batch_size=2, lable_csv=path)
    assert it.next().label[0].asnumpy().tolist() == [0, 0]
    # parameters of MXNet's other iterators pass silently, as in MXNet
    it = mx.io.CSVIter(data_csv=path, data_shape=(1,), batch_size=2, shuffle=True,
                       prefetch_buffer=2, ctx='cpu')
    assert it.batch_size == 2


@pytest.mark.parametrize('line,match', [
    ('1 0:1 3:2', r"line 1 of '.*bad.t': index 3 is outside the shape \(3,\)"),
    ('1 1:1 1:2', 'index 1 appears twice'),
    ('1 a:1', r"'a:1' is not an index:value pair"),
    ('1 2', r"'2' is not an index:value pair"),
    ('x 0:1', r"starts with 'x', not a label"),
])
def test_libsvm_bad_lines(tmp_path, line, match):
    path = _write(tmp_path, 'bad.t', line + '\n')
    with pytest.raises(ValueError, match=match):
        mx.io.LibSVMIter(data_libsvm=path, data_shape=(3,), batch_size=1)


def test_libsvm_bad_parameters(tmp_path):
    path = _write(tmp_path, 'd.t', '1 0:1\n2 1:1\n')
    base = dict(data_libsvm=path, data_shape=(3,), batch_size=1)
    with pytest.raises(ValueError, match='round_batch=False is not supported'):
        mx.io.LibSVMIter(round_batch=False, **base)
    with pytest.raises(ValueError, match=r'label_shape is expected to be \(1,\)'):
        mx.io.LibSVMIter(label_shape=(2,), **base)
    with pytest.raises(ValueError, match='part_index 2 must be below num_parts 2'):
        mx.io.LibSVMIter(num_parts=2, part_index=2, **base)
    with pytest.raises(ValueError, match='data_shape must have one dimension'):
        mx.io.LibSVMIter(data_libsvm=path, data_shape=(3, 1), batch_size=1)
    with pytest.raises(ValueError, match="dtype 'int32' is not supported"):
        mx.io.LibSVMIter(dtype='int32', **base)


def _idx(tmp_path, n, magic_img=2051, magic_lab=2049, n_lab=None):
    import struct
    img, lab = tmp_path / 'img', tmp_path / 'lab'
    img.write_bytes(struct.pack('>iiii', magic_img, n, 2, 2) + bytes(range(4 * n)))
    n_lab = n if n_lab is None else n_lab
    lab.write_bytes(struct.pack('>ii', magic_lab, n_lab) + bytes(range(n_lab)))
    return str(img), str(lab)


def test_mnist_bad_files(tmp_path):
    img, lab = _idx(tmp_path, 4, magic_img=2049)
    with pytest.raises(ValueError, match=r"image file '.*img' is not an idx3-ubyte file "
                                         r"\(magic number 2049, expected 2051\)"):
        mx.io.MNISTIter(image=img, label=lab, batch_size=2)
    img, lab = _idx(tmp_path, 4, n_lab=3)
    with pytest.raises(ValueError, match=r"has 4 images but label file '.*lab' 3 labels"):
        mx.io.MNISTIter(image=img, label=lab, batch_size=2)
    img, lab = _idx(tmp_path, 4)
    with pytest.raises(ValueError, match=r"batch_size 5 is larger than the 4 images"):
        mx.io.MNISTIter(image=img, label=lab, batch_size=5)
    with open(img, 'r+b') as f:
        f.truncate(20)
    with pytest.raises(ValueError, match=r"image file '.*img' is truncated"):
        mx.io.MNISTIter(image=img, label=lab, batch_size=2)


def test_mnist_values_and_whole_batches_only(tmp_path):
    img, lab = _idx(tmp_path, 5)
    it = mx.io.MNISTIter(image=img, label=lab, batch_size=2, shuffle=False, silent=True)
    batches = list(it)
    assert len(batches) == 2 and [b.pad for b in batches] == [0, 0]
    d = batches[1].data[0].asnumpy()
    assert d.shape == (2, 1, 2, 2) and d.dtype == np.float32
    np.testing.assert_array_equal(d.ravel() * 256, np.arange(8, 16))
    assert batches[1].label[0].asnumpy().tolist() == [2, 3]
