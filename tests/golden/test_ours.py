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


def test_we_still_write_the_verified_files(tmp_path):
    make_ours.write(mx, str(tmp_path))
    for name in sorted(os.listdir(os.path.join(HERE, 'ours'))):
        if name.endswith('.txt'):
            continue
        ours = os.path.join(HERE, 'ours', name)
        new = os.path.join(str(tmp_path), name)
        if name.endswith('.npz'):
            with np.load(ours) as a, np.load(new) as b:
                assert sorted(a.files) == sorted(b.files)
                for k in a.files:
                    np.testing.assert_allclose(b[k], a[k], rtol=1e-6, atol=1e-7, err_msg=k)
        else:
            with open(new, 'rb') as f1, open(ours, 'rb') as f2:
                assert f1.read() == f2.read(), name
