"""Files symgraph writes load in MXNet 1.9.1: ``ours/mxnet_verified.txt`` records MXNet
loading ``ours/`` (see make_ours.py); this test checks that we still write those files."""
import os

import numpy as np

import symgraph as mx
import make_ours

HERE = os.path.dirname(os.path.abspath(__file__))


def test_mxnet_verified_every_file():
    with open(os.path.join(HERE, 'ours', 'mxnet_verified.txt')) as f:
        text = f.read()
    prefixes = sorted(make_ours.build(mx))
    for p in prefixes:
        assert 'OK   %s:' % p in text, 'MXNet did not verify %s' % p
    assert '0 failure(s)' in text


#: the io values may move by this many times their float32 sensitivity (how far they move
#: when every input moves by one ulp): oneDNN's kernels round differently on AVX2, AVX-512
#: and AMX machines (an output moved by 2.6e-6 relative on an AVX-512 one)
SENSITIVITY_FACTOR = 8


def _sensitivity(tmp_path):
    """{file: {key: largest change}} over two one-ulp perturbations of the inputs."""
    spread = {}
    base = str(tmp_path)
    for seed in (1, 2):
        d = os.path.join(base + '_ulp%d' % seed)
        make_ours.write(mx, d, perturb=seed)
        for name in os.listdir(d):
            if name.endswith('.npz'):
                with np.load(os.path.join(d, name)) as moved, \
                        np.load(os.path.join(base, name)) as ours:
                    for k in ours.files:
                        s = spread.setdefault(name, {})
                        s[k] = max(s.get(k, 0.0), float(np.abs(moved[k] - ours[k]).max()))
    return spread


def test_we_still_write_the_verified_files(tmp_path):
    make_ours.write(mx, str(tmp_path))
    spread = _sensitivity(tmp_path)
    for name in sorted(os.listdir(os.path.join(HERE, 'ours'))):
        if name.endswith('.txt'):
            continue
        ours = os.path.join(HERE, 'ours', name)
        new = os.path.join(str(tmp_path), name)
        if name.endswith('.npz'):
            with np.load(ours) as a, np.load(new) as b:
                assert sorted(a.files) == sorted(b.files)
                for k in a.files:
                    # inputs and head gradients are written as drawn: exactly
                    exact = k.startswith(('in:', 'head:'))
                    np.testing.assert_allclose(
                        b[k], a[k], rtol=0 if exact else 1e-6,
                        atol=0 if exact else 1e-7 + SENSITIVITY_FACTOR * spread[name][k],
                        err_msg='%s %s' % (name, k))
        else:
            with open(new, 'rb') as f1, open(ours, 'rb') as f2:
                assert f1.read() == f2.read(), name
