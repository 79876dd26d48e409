"""Control-flow graphs symgraph writes load in MXNet 1.9.1: ``ours_control_flow/
mxnet_verified.txt`` records MXNet loading them and comparing forward and gradients
(``make_control_flow.py --verify-ours``); this test checks that we still write those files."""
import os

import numpy as np

import symgraph as mx
import make_control_flow

HERE = os.path.dirname(os.path.abspath(__file__))
OURS = os.path.join(HERE, 'ours_control_flow')


def test_mxnet_verified_every_case():
    with open(os.path.join(OURS, 'mxnet_verified.txt')) as f:
        text = f.read()
    for name in sorted(make_control_flow.CASES):
        assert 'OK   %s:' % name in text, 'MXNet did not verify %s' % name
        assert os.path.isfile(os.path.join(OURS, name + '-symbol.json'))
    assert '%d file(s), 0 failure(s)' % len(make_control_flow.CASES) in text


def test_we_still_write_the_verified_files(tmp_path):
    make_control_flow.write_ours(mx, str(tmp_path))
    written = sorted(os.listdir(str(tmp_path)))
    assert written == sorted(n for n in os.listdir(OURS) if not n.endswith('.txt'))
    for name in written:
        ours = os.path.join(OURS, name)
        new = os.path.join(str(tmp_path), name)
        if name.endswith('.npz'):
            with np.load(ours) as a, np.load(new) as b:
                assert sorted(a.files) == sorted(b.files)
                for k in a.files:
                    np.testing.assert_allclose(b[k], a[k], rtol=1e-6, atol=1e-7, err_msg=k)
        else:
            with open(new, 'rb') as f1, open(ours, 'rb') as f2:
                assert f1.read() == f2.read(), name
