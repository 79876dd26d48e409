"""Make the golden ``.params`` files with the real MXNet 1.9.1, and check that MXNet reads ours.

Run from the repository root with MXNet's interpreter::

    MXNET_MKLDNN_ENABLED=0 $MXNET_PYTHON tests/golden/make_params.py

Writes into ``tests/golden/params/``:

* ``*.params``: files written by MXNet (``mx.nd.save``, ``mx.model.save_checkpoint``) and a few
  hand-made records in the older V1 and legacy layouts, which MXNet's loader is shown to read;
* ``expected.npz`` (key ``'<file>|<index>'``) and ``manifest.json``: what each file holds
  (list or dict, names in order, whether MXNet itself can load it, in which mode);
* ``mxnet_reads_ours.json``: for files written by symgraph's ``save_arrays`` (run with the
  system ``python3``, or ``$SYMGRAPH_PYTHON``, in a subprocess) from the same contents: whether
  MXNet loads the same names, shapes, dtypes and values, whether the bytes equal MXNet's own
  file, and the SHA-256 of our bytes (the tests check our writer still produces them).
"""
import ctypes
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np
import mxnet as mx

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, 'params')
ROOT = os.path.dirname(os.path.dirname(HERE))
BF16 = mx.ndarray.ndarray._DTYPE_MX_TO_NP[12]     # MXNet's numpy stand-in for bfloat16
rng = np.random.RandomState(20240601)

manifest = {}
expected = {}
manifest_det = {}      # file -> whether MXNet wrote the same bytes twice


def nd(a, dtype=None):
    return mx.nd.array(a, dtype=a.dtype if dtype is None else dtype)


def record(fname, content, mxnet_loads='legacy', note=''):
    """Remember what ``fname`` holds: content is a list or a dict of numpy arrays."""
    names = list(content.keys()) if isinstance(content, dict) else None
    values = list(content.values()) if isinstance(content, dict) else list(content)
    for i, v in enumerate(values):
        expected['%s|%d' % (fname, i)] = v
    manifest[fname] = {'kind': 'dict' if names else 'list', 'names': names,
                       'count': len(values), 'mxnet_loads': mxnet_loads, 'note': note}


def mx_save_twice(fname, data):
    """Save with MXNet twice; record whether the bytes are reproducible."""
    path = os.path.join(OUT, fname)
    mx.nd.save(path, data)
    first = open(path, 'rb').read()
    mx.nd.save(path, data)
    manifest_det[fname] = first == open(path, 'rb').read()
    return path


def check_mx_load(path, content, mode):
    """MXNet's loader gives exactly ``content`` (names, order, dtype, shape, values)."""
    if mode == 'np_shape':
        with mx.util.np_shape(True):
            got = mx.nd.load(path)
    else:
        got = mx.nd.load(path)
    if isinstance(content, dict):
        assert isinstance(got, dict) and list(got) == list(content), (list(got), list(content))
        pairs = [(got[k], content[k]) for k in content]
    else:
        assert isinstance(got, list) and len(got) == len(content), got
        pairs = list(zip(got, content))
    for g, want in pairs:
        assert g.stype == 'default'
        g = g.asnumpy()
        if want.dtype == np.uint16 and g.dtype == BF16:
            g = g.view(np.uint16)
        assert g.dtype == want.dtype and g.shape == want.shape, (g.dtype, g.shape, want.dtype,
                                                                 want.shape)
        np.testing.assert_array_equal(g, want)


# --------------------------------------------------------------------------------------------
def make():
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)

    # 1. a plain list, odd shapes
    content = [rng.randn(3, 4).astype(np.float32), rng.randn(5).astype(np.float32),
               rng.randn(2, 3, 2).astype(np.float32)]
    mx_save_twice('list_float32.params', [nd(a) for a in content])
    record('list_float32.params', content)

    # 2. a dict: order kept, a non-ASCII name with odd characters, a 6-d array
    content = {'fc1_weight': rng.randn(4, 3).astype(np.float32),
               'fc1_bias': rng.randn(4).astype(np.float32),
               'w\u00e9ight/name 0:x': rng.randn(2, 2).astype(np.float32),
               'a': rng.randn(1, 2, 1, 2, 1, 3).astype(np.float32)}
    mx_save_twice('dict_mixed.params', {k: nd(v) for k, v in content.items()})
    record('dict_mixed.params', content)

    # 3. every dtype MXNet's front end can hold, with edge values
    content = {
        'f32': np.array([0.0, -0.0, 1.5, np.inf, -np.inf, np.nan, 3.4e38, 1e-45], np.float32),
        'f64': np.array([[1e308, -2.5e-308], [np.pi, np.nan]], np.float64),
        'f16': np.array([65504.0, -0.5, 6e-8, np.inf], np.float16),
        'u8': np.array([[0, 1, 255]], np.uint8),
        'i8': np.array([-128, 0, 127], np.int8),
        'i32': np.array([-2 ** 31, 0, 2 ** 31 - 1], np.int32),
        'i64': np.array([-2 ** 63, 2 ** 53 + 1, 2 ** 63 - 1], np.int64),
        'bool': np.array([[True, False, True], [False, False, True]], np.bool_),
    }
    mx_save_twice('dtypes.params', {k: nd(v) for k, v in content.items()})
    record('dtypes.params', content)

    # 4. zero-size arrays
    content = [np.zeros((0, 3), np.float32), np.zeros((2, 0, 4), np.float32),
               np.zeros((0,), np.int64), np.ones((1, 1), np.float64)]
    mx_save_twice('empty_arrays.params', [nd(a) for a in content])
    record('empty_arrays.params', content)

    # 5. a 0-d array saved in legacy mode: MXNet writes ndim 0 plus the data, and its own
    # legacy-mode loader cannot read it back (it takes ndim 0 for "no array")
    content = {'s': np.array(5.0, np.float32), 'v': np.array([1.0, 2.0], np.float32),
               'i': np.array(-7, np.int64)}
    mx_save_twice('scalar_legacy.params', {k: nd(v) for k, v in content.items()})
    try:
        mx.nd.load(os.path.join(OUT, 'scalar_legacy.params'))
        mode = 'legacy'
    except mx.base.MXNetError:
        mode = 'np_shape_global'
    record('scalar_legacy.params', content, mxnet_loads=mode,
           note='MXNet 1.9.1 legacy-mode load fails on 0-d records; global np-shape reads it')

    # 6. V3 records: saved under np-shape semantics
    content = {'s': np.array(7.0, np.float32), 'e': np.zeros((0, 3), np.float32),
               'm': rng.randn(2, 2).astype(np.float32)}
    with mx.util.np_shape(True):
        mx_save_twice('npshape_v3.params', {k: nd(v) for k, v in content.items()})
    record('npshape_v3.params', content, mxnet_loads='np_shape')

    # 7. a checkpoint as mx.model.save_checkpoint writes it: arg:/aux: names, args first
    data = mx.sym.Variable('data')
    net = mx.sym.Convolution(data, num_filter=4, kernel=(3, 3), name='conv0')
    net = mx.sym.BatchNorm(net, name='bn0')
    net = mx.sym.Activation(net, act_type='relu', name='relu0')
    net = mx.sym.FullyConnected(net, num_hidden=3, name='fc1')
    arg_shapes, _, aux_shapes = net.infer_shape(data=(1, 2, 4, 4))
    args = {n: rng.randn(*s).astype(np.float32) for n, s in
            zip(net.list_arguments(), arg_shapes) if n != 'data'}
    auxs = {n: rng.rand(*s).astype(np.float32) for n, s in
            zip(net.list_auxiliary_states(), aux_shapes)}
    tmp = tempfile.mkdtemp()
    mx.model.save_checkpoint(os.path.join(tmp, 'net'), 1, net,
                             {k: nd(v) for k, v in args.items()},
                             {k: nd(v) for k, v in auxs.items()})
    shutil.copy(os.path.join(tmp, 'net-0001.params'), os.path.join(OUT, 'checkpoint-0001.params'))
    shutil.rmtree(tmp)
    content = dict([('arg:' + k, v) for k, v in args.items()]
                   + [('aux:' + k, v) for k, v in auxs.items()])
    record('checkpoint-0001.params', content)

    # 8. sparse storage (we refuse it, naming the array)
    rs = mx.nd.sparse.row_sparse_array(([[1., 2], [3, 4]], [1, 3]), shape=(5, 2))
    cs = mx.nd.sparse.csr_matrix(([1., 2, 3], [0, 2, 1], [0, 2, 3]), shape=(2, 3))
    mx_save_twice('sparse.params', {'rs': rs, 'dense': mx.nd.ones((2,)), 'cs': cs})
    manifest['sparse.params'] = {'kind': 'error', 'names': ['rs', 'dense', 'cs'], 'count': 3,
                                 'mxnet_loads': 'legacy', 'note': 'row_sparse and csr'}
    mx.nd.load(os.path.join(OUT, 'sparse.params'))

    # 9. bfloat16 (type flag 12): expected as the uint16 bit patterns
    vals = np.array([1.5, -2.25, 3.0, 1.0e10, -0.0], np.float32)
    mx_save_twice('bfloat16.params', [mx.nd.array(vals).astype(BF16)])
    back = mx.nd.load(os.path.join(OUT, 'bfloat16.params'))[0]
    record('bfloat16.params', [back.asnumpy().view(np.uint16).copy()],
           note='values as uint16 bit patterns; as float32: %s'
           % mx.nd.amp_cast(back, dtype='float32').asnumpy().tolist())

    # 10. empty containers: both load as an empty list
    mx_save_twice('empty_list.params', [])
    record('empty_list.params', [])
    mx_save_twice('empty_dict.params', {})
    record('empty_dict.params', [], note='written from {}; MXNet loads []')

    # 11. repeated names (only the C API can write them): dict keeps first position, last value
    a, b, c = (np.full((2,), v, np.float32) for v in (1.0, 2.0, 3.0))
    arrays = [nd(a), nd(b), nd(c)]     # kept alive: the handles below point into them
    handles = mx.base.c_handle_array(arrays)
    keys = mx.base.c_str_array(['x', 'y', 'x'])
    path = os.path.join(OUT, 'duplicate_names.params')
    mx.base.check_call(mx.base._LIB.MXNDArraySave(mx.base.c_str(path), mx.base.mx_uint(3),
                                                  handles, keys))
    got = mx.nd.load(path)
    assert list(got) == ['x', 'y'] and got['x'].asnumpy()[0] == 3.0, got
    record('duplicate_names.params', [a, b, c],
           note="names ['x', 'y', 'x']; MXNet loads {'x': third array, 'y': second}")
    manifest['duplicate_names.params'].update(kind='dict', names=['x', 'y', 'x'])

    # 12. older record layouts, written by hand per MXNet's LegacyLoad; MXNet must read them
    def list_file(records, names=()):
        out = struct.pack('<QQQ', 0x112, 0, len(records)) + b''.join(records)
        out += struct.pack('<Q', len(names))
        for n in names:
            out += struct.pack('<Q', len(n)) + n.encode()
        return out

    v1 = rng.randn(2, 3).astype(np.float32)
    v0 = np.arange(6, dtype=np.int32).reshape(3, 2)
    v0b = rng.randn(4).astype(np.float64)
    rec_v1 = struct.pack('<Iiqq', 0xF993FAC8, 2, 2, 3) + struct.pack('<iii', 1, 0, 0) + \
        v1.tobytes()
    rec_v0 = struct.pack('<III', 2, 3, 2) + struct.pack('<iii', 1, 0, 4) + v0.tobytes()
    rec_v0b = struct.pack('<II', 1, 4) + struct.pack('<iii', 1, 0, 1) + v0b.tobytes()
    for fname, blob, content in [
            ('legacy_v1.params', list_file([rec_v1], ['w']), {'w': v1}),
            ('legacy_v0.params', list_file([rec_v0, rec_v0b]), [v0, v0b])]:
        path = os.path.join(OUT, fname)
        with open(path, 'wb') as f:
            f.write(blob)
        check_mx_load(path, content, 'legacy')
        record(fname, content, note='hand-made older record layout; MXNet 1.9.1 reads it')

    # 13. a V2 record whose context says gpu(1): we load it on the host like a CPU build
    g = rng.randn(3).astype(np.float32)
    path = os.path.join(OUT, 'gpu_context.params')
    mx.nd.save(path, [nd(g)])
    blob = bytearray(open(path, 'rb').read())
    ctx_at = 24 + 4 + 4 + 4 + 8       # header, magic, stype, ndim, one dim
    assert struct.unpack_from('<ii', blob, ctx_at) == (1, 0)
    struct.pack_into('<ii', blob, ctx_at, 2, 1)
    with open(path, 'wb') as f:
        f.write(bytes(blob))
    try:
        check_mx_load(path, [g], 'legacy')
        mode = 'legacy'
    except mx.base.MXNetError as err:
        mode = 'no: %s' % str(err).splitlines()[-1][:100]
    record('gpu_context.params', [g], mxnet_loads=mode, note='context patched to gpu(1)')

    # every MXNet-loadable file loads as recorded
    for fname, m in manifest.items():
        if m['kind'] == 'error' or fname == 'duplicate_names.params':
            continue
        if m['mxnet_loads'] in ('legacy', 'np_shape'):
            names, n = m['names'], m['count']
            values = [expected['%s|%d' % (fname, i)] for i in range(n)]
            content = dict(zip(names, values)) if names else values
            check_mx_load(os.path.join(OUT, fname), content, m['mxnet_loads'])
        m['deterministic'] = manifest_det.get(fname)

    np.savez(os.path.join(OUT, 'expected.npz'), **expected)
    with open(os.path.join(OUT, 'manifest.json'), 'w') as f:
        json.dump({'mxnet_version': mx.__version__, 'files': manifest}, f, indent=1,
                  sort_keys=True)


# --------------------------------------------------------------------------------------------
OURS = r'''
import json, sys
import numpy as np
from symgraph.ndarray.serialization import save_arrays
src, dst, files = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
man = json.load(open(src + '/manifest.json'))['files']
exp = np.load(src + '/expected.npz')
for fname in files:
    m = man[fname]
    values = [exp['%s|%d' % (fname, i)] for i in range(m['count'])]
    data = dict(zip(m['names'], values)) if m['names'] else values
    save_arrays(dst + '/' + fname, data, np_shape=(m['mxnet_loads'] == 'np_shape'))
'''


def set_global_np_shape(on):
    prev = ctypes.c_int()
    mx.base.check_call(mx.base._LIB.MXSetIsNumpyShape(ctypes.c_int(2 if on else 0),
                                                      ctypes.byref(prev)))


def check_ours():
    man = json.load(open(os.path.join(OUT, 'manifest.json')))['files']
    exp = np.load(os.path.join(OUT, 'expected.npz'))
    files = sorted(f for f, m in man.items()
                   if m['kind'] != 'error' and not f.startswith(('legacy_', 'gpu_', 'bfloat',
                                                                  'duplicate')))
    tmp = tempfile.mkdtemp()
    python = os.environ.get('SYMGRAPH_PYTHON', 'python3')
    env = {k: v for k, v in os.environ.items() if not k.startswith('PYTHON')}
    subprocess.check_call([python, '-c', OURS, OUT, tmp, json.dumps(files)], cwd=ROOT, env=env)
    report = {}
    for fname in files:
        m = man[fname]
        path = os.path.join(tmp, fname)
        ours = open(path, 'rb').read()
        values = [exp['%s|%d' % (fname, i)] for i in range(m['count'])]
        content = dict(zip(m['names'], values)) if m['names'] else values
        mode = m['mxnet_loads']
        entry = {'mode': mode,
                 'identical_bytes_to_mxnet': ours == open(os.path.join(OUT, fname), 'rb').read(),
                 'sha256': hashlib.sha256(ours).hexdigest()}
        try:
            if mode == 'np_shape_global':
                set_global_np_shape(True)
                try:
                    check_mx_load(path, content, 'legacy')
                finally:
                    set_global_np_shape(False)
            else:
                check_mx_load(path, content, mode)
            entry['result'] = 'ok'
        except Exception as err:   # recorded, and the script fails below
            entry['result'] = 'FAILED: %s' % err
        report[fname] = entry
    shutil.rmtree(tmp)
    with open(os.path.join(OUT, 'mxnet_reads_ours.json'), 'w') as f:
        json.dump({'mxnet_version': mx.__version__, 'files': report}, f, indent=1,
                  sort_keys=True)
    bad = [f for f, e in report.items() if e['result'] != 'ok']
    if bad:
        sys.exit('MXNet did not read our files: %s' % bad)
    print('MXNet reads all %d files written by symgraph; byte-identical: %d'
          % (len(report), sum(e['identical_bytes_to_mxnet'] for e in report.values())))


if __name__ == '__main__':
    make()
    check_ours()
