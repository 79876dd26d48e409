"""gluon.contrib.nn: Concurrent, HybridConcurrent, Identity, SyncBatchNorm and PixelShuffle
against MXNet 1.9.1 (tests/golden/gluon_nn_probes.py), imperative and hybridized;
PixelShuffle against NumPy, SparseEmbedding (dense here), SyncBatchNorm without a device
count; errors."""
import warnings

import numpy as np
import pytest

import symgraph as mx
from symgraph import autograd
from symgraph.gluon import nn
from symgraph.gluon.contrib import nn as cnn
import gluon_nn_probes as probes

CASES = sorted(n for n in probes.LAYERS
               if n.startswith(('hybridconcurrent', 'concurrent', 'identity',
                                'pixelshuffle', 'syncbatchnorm')))


@pytest.mark.parametrize('case', CASES)
def test_layer_equals_mxnet(case):
    probes.check_layer(mx, case)


@pytest.mark.parametrize('case', [c for c in CASES if probes.LAYERS[c][2]])
def test_hybridized_layer_equals_mxnet(case):
    probes.check_layer(mx, case, hybridize=True)


@pytest.mark.parametrize('case', [c for c in CASES if probes.LAYERS[c][2]])
def test_layer_on_symbols_makes_mxnets_graph(case):
    assert probes.layer_symbol(mx, case) == probes.golden()[0]['layers'][case]['symbol']


@pytest.mark.parametrize('case', [c for c in CASES if probes.LAYERS[c][2]])
def test_exported_symbol_file_equals_mxnets(case, tmp_path):
    want = probes.golden()[0]['layers'][case]['exported']
    assert probes.exported_nodes(mx, case, str(tmp_path)) == want


def test_golden_cases_cover_every_layer():
    made = {type(probes.LAYERS[c][0](mx)).__name__ for c in CASES}
    # SparseEmbedding needs a Trainer in MXNet (row_sparse_data): tested below
    assert made == set(cnn.__all__) - {'SparseEmbedding'}


def _pixel_shuffle(x, factors):
    """NumPy reference: (N, C*prod(f), *S) -> (N, C, S1*f1, S2*f2, ...), the factors'
    channels of each output channel in row-major order."""
    n, cf = x.shape[:2]
    spatial = x.shape[2:]
    d = len(factors)
    c = cf // int(np.prod(factors))
    y = x.reshape((n, c) + tuple(factors) + spatial)
    # (N, C, f1..fd, S1..Sd) -> (N, C, S1, f1, S2, f2, ...)
    order = [0, 1] + [a for i in range(d) for a in (2 + d + i, 2 + i)]
    y = y.transpose(order)
    return y.reshape((n, c) + tuple(s * f for s, f in zip(spatial, factors)))


@pytest.mark.parametrize('layer, shape, factors', [
    (lambda: cnn.PixelShuffle1D(3), (2, 6, 4), (3,)),
    (lambda: cnn.PixelShuffle2D(2), (2, 8, 3, 2), (2, 2)),
    (lambda: cnn.PixelShuffle2D((1, 3)), (1, 6, 2, 2), (1, 3)),
    (lambda: cnn.PixelShuffle3D((2, 1, 3)), (1, 12, 2, 3, 1), (2, 1, 3))], ids=str)
def test_pixel_shuffle_against_numpy(layer, shape, factors):
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    block = layer()
    np.testing.assert_array_equal(block(mx.nd.array(x)).asnumpy(), _pixel_shuffle(x, factors))
    block.hybridize()
    np.testing.assert_array_equal(block(mx.nd.array(x)).asnumpy(), _pixel_shuffle(x, factors))


def test_pixel_shuffle_reprs_and_bad_factors():
    assert repr(cnn.PixelShuffle1D(2)) == 'PixelShuffle1D(2)'
    assert repr(cnn.PixelShuffle3D((1, 2, 3))) == 'PixelShuffle3D((1, 2, 3))'
    with pytest.raises(ValueError, match='PixelShuffle2D'):
        cnn.PixelShuffle2D((2, 2, 2))
    with pytest.raises(ValueError, match='positive'):
        cnn.PixelShuffle1D(0)


def test_sparse_embedding_is_a_dense_embedding():
    idx = mx.nd.array([[3, 0], [3, 4]])
    with mx.name.NameManager():
        emb = cnn.SparseEmbedding(5, 2)
    assert repr(emb) == 'SparseEmbedding(5 -> 2, float32)'
    assert list(emb.collect_params().keys()) == ['sparseembedding0_weight']
    emb.initialize()
    table = np.arange(10, dtype=np.float32).reshape(5, 2)
    emb.weight.set_data(mx.nd.array(table))
    with autograd.record():
        out = emb(idx)
    out.backward(mx.nd.ones(out.shape))
    np.testing.assert_array_equal(out.asnumpy(), table[[[3, 0], [3, 4]]])
    np.testing.assert_array_equal(emb.weight.grad().asnumpy()[:, 0], [1, 0, 0, 2, 1])


def test_sync_batchnorm_without_device_count_is_batchnorm_on_one_device():
    rng = np.random.RandomState(2)
    x0 = rng.standard_normal((4, 3, 5)).astype(np.float32)
    got = []
    for block in (cnn.SyncBatchNorm(), nn.BatchNorm()):
        block.initialize()
        block.gamma.set_data(mx.nd.array([0.5, 2.0, -1.0]))
        x = mx.nd.array(x0)
        x.attach_grad()
        with warnings.catch_warnings():
            warnings.simplefilter('error')      # no warning about num_devices
            with autograd.record():
                y = block(x)
        y.backward(mx.nd.array(x0[::-1].copy()))
        got.append([y.asnumpy(), x.grad.asnumpy(), block.gamma.grad().asnumpy(),
                    block.running_mean.data().asnumpy(), block(x).asnumpy()])
    for a, b in zip(*got):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_sync_batchnorm_symbol_carries_its_key_and_device_count():
    with mx.name.NameManager():
        sbn = cnn.SyncBatchNorm(num_devices=2)
        out = sbn(mx.sym.var('data'))
    attrs = out.attr_dict()['syncbatchnorm0_fwd']
    assert attrs['ndev'] == '2' and attrs['key'] == 'syncbatchnorm0_'
    assert 'ndev=2' in repr(sbn) and repr(sbn).startswith('SyncBatchNorm(eps=1e-05')


def test_concurrent_concatenates_its_children():
    with mx.name.NameManager():
        net = cnn.HybridConcurrent(axis=1)
        with net.name_scope():
            net.add(nn.Dense(2, in_units=3), cnn.Identity(), nn.Activation('relu'))
    net.initialize(mx.init.One())
    x = mx.nd.array([[1.0, -2.0, 3.0]])
    np.testing.assert_array_equal(net(x).asnumpy(), [[2, 2, 1, -2, 3, 1, 0, 3]])
    assert repr(net).startswith('HybridConcurrent(\n  (0): Dense(3 -> 2, linear)')
    assert list(net.collect_params().keys()) == ['hybridconcurrent0_dense0_weight',
                                                 'hybridconcurrent0_dense0_bias']
