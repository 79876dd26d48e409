"""Golden data of mx.io from MXNet 1.9.1 (run: MXNET_MKLDNN_ENABLED=0
$MXNET_PYTHON tests/golden/make_io.py). Writes tests/golden/data/io/:

- ndarray_iter.json: every case of iter_cases.CASES, three epochs each (batches, pads,
  indices, dtypes, provide_data/label);
- native_iters.json: CSVIter, LibSVMIter and MNISTIter cases (their keyword arguments
  and three, or two for MNIST, passes of batches); their small input files are written
  here, deterministically, under data/io/files/ and committed.
"""
import json
import os
import sys

import numpy as np
import mxnet as mx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import iter_cases  # noqa: E402

OUT = os.path.join(HERE, 'data', 'io')


def nd_array(a, dtype):
    return mx.nd.array(a, dtype=dtype)


def ndarray_iter():
    out = {}
    for name, case in sorted(iter_cases.CASES.items()):
        data, label = iter_cases.make_inputs(case, nd_array)
        if 'seed' in case:
            np.random.seed(case['seed'])
        it = mx.io.NDArrayIter(data, label, **iter_cases.iter_kwargs(case))
        out[name] = iter_cases.record(it, hard_reset_after=case.get('hard_reset_after'))
    return out


# ---------------------------------------------------------------- input files
FILES = os.path.join(OUT, 'files')

CSV_FILES = {
    'd4x3.csv': '1,2,3\n2,3,4\n3,4,5\n4,5,6\n',
    'l4.csv': '10\n20\n30\n40\n',
    'l4x2.csv': '10,11\n20,21\n30,31\n40,41\n',
    'l6.csv': '1\n2\n3\n4\n5\n6\n',
    'd7x4.csv': ''.join('%s\n' % ','.join(str(i * 4 + j + 0.5) for j in range(4))
                        for i in range(7)),
    'fmt.csv': ' 1 , 2 ,3\n\n2.5e1,-3,4\n3,4,5,\n-1.5,0.25,7\n',
}
LIBSVM_FILES = {
    'data.t': '1.0 0:0.5 2:1.2\n-2.0\n-3.0 0:0.6 1:2.4 2:1.2\n4 2:-1.2\n',
    'label.t': '1.0\n-2.0 0:0.125\n-3.0 2:1.2\n4 1:1.0 2:-1.2\n',
    'big.t': ''.join('%d %d:%d\n' % (i, i % 3, i) for i in range(23)),
    'fmt.t': '1.5 0:1e2 2:-2.5e-1\n\n  2   1:1  \n3 qid:5 1:7\n4 2:1 0:3\n',
}


def write_files():
    """The small input files (deterministic; committed with the JSON)."""
    import struct
    for sub, files in (('csv', CSV_FILES), ('libsvm', LIBSVM_FILES)):
        os.makedirs(os.path.join(FILES, sub), exist_ok=True)
        for name, text in files.items():
            with open(os.path.join(FILES, sub, name), 'w') as f:
                f.write(text)
    os.makedirs(os.path.join(FILES, 'mnist'), exist_ok=True)
    rng = np.random.RandomState(12)
    for prefix, n, rows, cols in (('tiny', 10, 28, 28), ('small', 100, 4, 4)):
        img = rng.randint(0, 256, size=(n, rows, cols)).astype(np.uint8)
        lab = rng.permutation(n).astype(np.uint8)
        with open(os.path.join(FILES, 'mnist', prefix + '-images-idx3-ubyte'), 'wb') as f:
            f.write(struct.pack('>iiii', 2051, n, rows, cols) + img.tobytes())
        with open(os.path.join(FILES, 'mnist', prefix + '-labels-idx1-ubyte'), 'wb') as f:
            f.write(struct.pack('>ii', 2049, n) + lab.tobytes())


def record_native(it, epochs, encode_data=None):
    """provide_data/label and every batch of ``epochs`` passes (reset between them)."""
    out = {'provide_data': [repr(d) for d in it.provide_data],
           'provide_label': [repr(d) for d in it.provide_label],
           'batch_size': it.batch_size, 'epochs': []}
    for _ in range(epochs):
        batches = []
        for b in it:
            d = b.data[0].asnumpy()
            batches.append({
                'data': encode_data(d) if encode_data else d.tolist(),
                'label': b.label[0].asnumpy().tolist(),
                'shapes': [list(d.shape), list(b.label[0].shape)],
                'dtypes': [str(b.data[0].dtype), str(b.label[0].dtype)],
                'pad': b.pad, 'index': None if b.index is None else
                [int(i) for i in b.index]})
        out['epochs'].append(batches)
        it.reset()
    return out


# name -> keyword arguments; paths relative to data/io/files
CSV_CASES = {}
for _rb in (True, False):
    for _bs in (2, 3):
        CSV_CASES['d4x3_b%d_rb%d' % (_bs, _rb)] = dict(
            data_csv='csv/d4x3.csv', data_shape=(3,), batch_size=_bs, round_batch=_rb)
CSV_CASES['d4x3_b6_rb1'] = dict(data_csv='csv/d4x3.csv', data_shape=(3,), batch_size=6)
CSV_CASES['label'] = dict(data_csv='csv/d4x3.csv', data_shape=(3,), batch_size=3,
                          label_csv='csv/l4.csv')
CSV_CASES['label_longer'] = dict(data_csv='csv/d4x3.csv', data_shape=(3,), batch_size=2,
                                 label_csv='csv/l6.csv')
CSV_CASES['label_shape2'] = dict(data_csv='csv/d4x3.csv', data_shape=(1, 3), batch_size=2,
                                 label_csv='csv/l4x2.csv', label_shape=(2,))
CSV_CASES['int32'] = dict(data_csv='csv/d4x3.csv', data_shape=(3,), batch_size=3,
                          label_csv='csv/l4.csv', dtype='int32', round_batch=False)
CSV_CASES['int64_nolabel'] = dict(data_csv='csv/d4x3.csv', data_shape=(3,), batch_size=3,
                                  dtype='int64')
CSV_CASES['float_int32'] = dict(data_csv='csv/d7x4.csv', data_shape=(4,), batch_size=3,
                                dtype='int32')
CSV_CASES['shape2x2'] = dict(data_csv='csv/d7x4.csv', data_shape=(2, 2), batch_size=3,
                             data_name='x', label_name='y')
CSV_CASES['format'] = dict(data_csv='csv/fmt.csv', data_shape=(3,), batch_size=2)
CSV_CASES['strings'] = dict(data_csv='csv/d4x3.csv', data_shape='(3,)', batch_size='2',
                            round_batch='0')

LIBSVM_CASES = {}
for _bs in (2, 3, 5):
    LIBSVM_CASES['data_b%d' % _bs] = dict(data_libsvm='libsvm/data.t', data_shape=(3,),
                                          batch_size=_bs)
LIBSVM_CASES['label_file'] = dict(data_libsvm='libsvm/data.t', data_shape=(3,),
                                  label_libsvm='libsvm/label.t', label_shape=(3,),
                                  batch_size=3)
LIBSVM_CASES['format'] = dict(data_libsvm='libsvm/fmt.t', data_shape=(3,), batch_size=2)
for _np in (2, 3, 4):
    for _pi in range(_np):
        LIBSVM_CASES['parts%d_%d' % (_np, _pi)] = dict(
            data_libsvm='libsvm/big.t', data_shape=(3,), batch_size=2, num_parts=_np,
            part_index=_pi)

MNIST_CASES = {
    'tiny': dict(image='mnist/tiny-images-idx3-ubyte', label='mnist/tiny-labels-idx1-ubyte',
                 batch_size=3, shuffle=False, silent=True),
    'tiny_flat': dict(image='mnist/tiny-images-idx3-ubyte',
                      label='mnist/tiny-labels-idx1-ubyte', batch_size=4, shuffle=False,
                      flat=True, silent=True),
    'tiny_shuffle': dict(image='mnist/tiny-images-idx3-ubyte',
                         label='mnist/tiny-labels-idx1-ubyte', batch_size=5, seed=3,
                         flat=True, silent=True),
}
for _seed in (0, 1, 10, 12345, -1):
    MNIST_CASES['small_seed%d' % _seed] = dict(
        image='mnist/small-images-idx3-ubyte', label='mnist/small-labels-idx1-ubyte',
        batch_size=25, seed=_seed, flat=True, silent=True)
MNIST_CASES['small_default'] = dict(image='mnist/small-images-idx3-ubyte',
                                    label='mnist/small-labels-idx1-ubyte', batch_size=30,
                                    silent=True)
for _pi in range(3):
    MNIST_CASES['small_part%d' % _pi] = dict(
        image='mnist/small-images-idx3-ubyte', label='mnist/small-labels-idx1-ubyte',
        batch_size=7, seed=3, num_parts=3, part_index=_pi, silent=True)


def _in_files(kwargs):
    keys = ('data_csv', 'label_csv', 'data_libsvm', 'label_libsvm', 'image', 'label')
    return {k: os.path.join(FILES, v) if k in keys else v for k, v in kwargs.items()}


def encode_mnist(d):
    """MNIST batches as bytes (each value is k/256 exactly), hex per example."""
    b = d * 256
    assert (b == np.round(b)).all() and b.max() < 256
    return [row.astype(np.uint8).tobytes().hex() for row in b.reshape(len(b), -1)]


ITERS = {'csv': ('CSVIter', CSV_CASES, 3), 'libsvm': ('LibSVMIter', LIBSVM_CASES, 3),
         'mnist': ('MNISTIter', MNIST_CASES, 2)}


def one_case(kind, name):
    """Record one case (run in its own process: MXNet 1.9.1's LibSVMIter crashes with a
    segmentation fault at times, more often when several have lived in one process)."""
    cls, cases, epochs = ITERS[kind]
    it = getattr(mx.io, cls)(**_in_files(cases[name]))
    return record_native(it, epochs, encode_mnist if kind == 'mnist' else None)


def native():
    import subprocess
    write_files()
    out = {}
    for kind, (_, cases, _) in sorted(ITERS.items()):
        out[kind] = {}
        for name in sorted(cases):
            for _ in range(20):     # LibSVMIter with batch_size > rows crashes at times
                res = subprocess.run([sys.executable, os.path.abspath(__file__), '--case',
                                      kind, name], stdout=subprocess.PIPE, timeout=120)
                if res.returncode == 0:
                    break
            else:
                raise RuntimeError('%s %s keeps failing' % (kind, name))
            out[kind][name] = json.loads(res.stdout.decode().strip().splitlines()[-1])
    return out


def write(name, obj):
    with open(os.path.join(OUT, name), 'w') as f:
        json.dump(obj, f, indent=None, separators=(',', ':'), sort_keys=True)
        f.write('\n')


def main():
    os.makedirs(OUT, exist_ok=True)
    write('ndarray_iter.json', ndarray_iter())
    write('native_iters.json', {'cases': {'csv': CSV_CASES, 'libsvm': LIBSVM_CASES,
                                          'mnist': MNIST_CASES}, 'results': native()})
    sys.stdout.flush()


if __name__ == '__main__':
    if sys.argv[1:2] == ['--case']:
        print(json.dumps(one_case(sys.argv[2], sys.argv[3])))
        sys.stdout.flush()
        os._exit(0)
    main()
