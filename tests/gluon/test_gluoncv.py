"""GluonCV's resnetv1b.py, imported unchanged with ``mxnet`` meaning symgraph (the unit-test
harness's alias package), builds MXNet's networks with MXNet's parameter names and gives
MXNet 1.9.1's outputs and input gradients on the same parameters
(tests/golden/gluoncv_probes.py made them)."""
import importlib.util
import os
import sys

import numpy as np
import pytest

import symgraph as mx

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, '..', 'golden', 'data', 'gluoncv', 'resnetv1b.npz')
ALIAS = os.path.join(HERE, '..', 'mxnet_unittests', 'alias')


@pytest.fixture
def resnetv1b():
    """The unchanged GluonCV module, imported through the alias; the alias is removed after
    (the rest of the suite never sees an ``mxnet`` module)."""
    meta, path = list(sys.meta_path), list(sys.path)
    before = set(sys.modules)
    sys.path.insert(0, ALIAS)
    try:
        spec = importlib.util.spec_from_file_location(
            'gluoncv_resnetv1b', os.path.join(HERE, 'thirdparty', 'resnetv1b.py'))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        assert sys.modules['mxnet'] is mx
        yield module
    finally:
        sys.meta_path[:], sys.path[:] = meta, path
        for name in set(sys.modules) - before:
            if name == 'mxnet' or name.startswith('mxnet.'):
                del sys.modules[name]


def test_gluoncv_resnetv1b_matches_mxnet(resnetv1b):
    sys.path.insert(0, os.path.join(HERE, '..', 'golden'))
    try:
        import gluoncv_probes
    finally:
        sys.path.pop(0)
    golden = np.load(GOLDEN)
    ours = gluoncv_probes.probe(mx, resnetv1b)
    assert sorted(ours) == sorted(golden.files)
    for key in sorted(golden.files):
        if key.endswith(':names'):
            assert list(ours[key]) == list(golden[key]), key
            continue
        ref = golden[key]
        scale = np.abs(ref).max()
        np.testing.assert_allclose(ours[key], ref, rtol=1e-4, atol=1e-4 * scale, err_msg=key)
