"""Golden data of ``gluon.nn``, ``gluon.contrib.nn`` and ``gluon.loss`` from MXNet 1.9.1.

Run from any checkout with MXNet's interpreter (native operators: oneDNN's average pooling
backward with ``ceil_mode`` is wrong)::

    MXNET_MKLDNN_ENABLED=0 /path/to/mxnet/python tests/golden/gluon_nn_probes.py

Writes ``tests/golden/data/gluon_nn/arrays.npz`` (every array of the layer cases, then of
the loss cases, packed into one float32 vector each) and ``meta.json`` (where each array
lies, and the rest). For every case of :data:`LAYERS` (a block built by the same code here
and in the tests, under a fresh ``NameManager`` so that automatic names count from 0): the
parameter names, the reprs before and after the first forward, the inputs, the parameters
(random values set by name after the deferred initialization), the training forward's
output under ``autograd.record()``, the gradients of the input and of every parameter for a
random head gradient, the parameters after it (BatchNorm's running statistics), a
prediction forward after that, the Variables and outputs of the block called on Symbols,
and the nodes of the symbol file the hybridized block exports. For every case of
:data:`LOSSES`: inputs, output, and the gradients of the inputs marked differentiable.
:data:`REPRS` are compared without running; ``_names_net`` and ``_names_two`` give the
parameter names and prefixes of nested and top-level blocks.

This module imports MXNet only in :func:`main`: the tests import the tables from it.
"""
import json
import os
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, 'data', 'gluon_nn')


def _seq(mx):
    nn = mx.gluon.nn
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Conv2D(3, 3, padding=1), nn.BatchNorm(), nn.Activation('relu'),
                nn.MaxPool2D(), nn.Flatten(), nn.Dense(4))
    return net


def _concurrent(mx, hybrid):
    nn, cnn = mx.gluon.nn, mx.gluon.contrib.nn
    net = cnn.HybridConcurrent(axis=1) if hybrid else cnn.Concurrent(axis=1)
    with net.name_scope():
        net.add(nn.Dense(3), nn.Dense(2, activation='tanh'), cnn.Identity())
    return net


#: name -> (builder(mx) -> block, input specs [(shape, kind)], hybridizable).
#: kinds: 'n' standard normal, 'i<k>' integers in [0, k) (as float32, no gradient)
LAYERS = {
    'dense_relu': (lambda mx: mx.gluon.nn.Dense(5, activation='relu'), [((2, 3, 2), 'n')],
                   True),
    'dense_noflat_nobias': (lambda mx: mx.gluon.nn.Dense(4, use_bias=False, flatten=False,
                                                         in_units=3),
                            [((2, 2, 3), 'n')], True),
    'conv1d': (lambda mx: mx.gluon.nn.Conv1D(4, 3, strides=2, padding=1),
               [((2, 3, 9), 'n')], True),
    'conv2d': (lambda mx: mx.gluon.nn.Conv2D(4, (3, 2), strides=(2, 1), padding=(1, 0),
                                             dilation=(1, 2), groups=2, activation='tanh'),
               [((2, 4, 7, 6), 'n')], True),
    'conv3d': (lambda mx: mx.gluon.nn.Conv3D(2, 2, use_bias=False),
               [((1, 2, 3, 4, 3), 'n')], True),
    'conv1d_transpose': (lambda mx: mx.gluon.nn.Conv1DTranspose(3, 3, strides=2, padding=1,
                                                                output_padding=1),
                         [((2, 2, 5), 'n')], True),
    'conv2d_transpose': (lambda mx: mx.gluon.nn.Conv2DTranspose(4, (3, 2), strides=2,
                                                                padding=1, groups=2,
                                                                in_channels=4),
                         [((2, 4, 3, 4), 'n')], True),
    'conv3d_transpose': (lambda mx: mx.gluon.nn.Conv3DTranspose(2, 2, strides=2,
                                                                in_channels=2),
                         [((1, 2, 2, 3, 2), 'n')], True),
    'maxpool1d': (lambda mx: mx.gluon.nn.MaxPool1D(3, 2, padding=1), [((2, 3, 8), 'n')],
                  True),
    'maxpool2d_ceil': (lambda mx: mx.gluon.nn.MaxPool2D((3, 3), 2, ceil_mode=True),
                       [((2, 2, 8, 7), 'n')], True),
    'maxpool3d': (lambda mx: mx.gluon.nn.MaxPool3D(2, 1), [((1, 1, 3, 3, 3), 'n')], True),
    'avgpool1d_ceil': (lambda mx: mx.gluon.nn.AvgPool1D(3, 2, ceil_mode=True),
                       [((2, 2, 8), 'n')], True),
    'avgpool2d_nopad': (lambda mx: mx.gluon.nn.AvgPool2D(3, 2, padding=1,
                                                         count_include_pad=False),
                        [((2, 2, 7, 6), 'n')], True),
    'avgpool3d': (lambda mx: mx.gluon.nn.AvgPool3D(2), [((1, 2, 4, 4, 4), 'n')], True),
    'globalmax1d': (lambda mx: mx.gluon.nn.GlobalMaxPool1D(), [((2, 3, 5), 'n')], True),
    'globalmax2d': (lambda mx: mx.gluon.nn.GlobalMaxPool2D(), [((2, 3, 3, 4), 'n')], True),
    'globalmax3d': (lambda mx: mx.gluon.nn.GlobalMaxPool3D(), [((1, 2, 2, 3, 2), 'n')], True),
    'globalavg1d': (lambda mx: mx.gluon.nn.GlobalAvgPool1D(), [((2, 3, 5), 'n')], True),
    'globalavg2d': (lambda mx: mx.gluon.nn.GlobalAvgPool2D(), [((2, 3, 3, 4), 'n')], True),
    'globalavg3d': (lambda mx: mx.gluon.nn.GlobalAvgPool3D(), [((1, 2, 2, 3, 2), 'n')], True),
    'reflectionpad2d': (lambda mx: mx.gluon.nn.ReflectionPad2D(2), [((1, 2, 4, 5), 'n')],
                        True),
    'batchnorm': (lambda mx: mx.gluon.nn.BatchNorm(), [((4, 3, 2, 2), 'n')], True),
    'batchnorm_last_axis': (lambda mx: mx.gluon.nn.BatchNorm(axis=-1, scale=False,
                                                             momentum=0.8),
                            [((4, 3, 3), 'n')], True),
    'batchnorm_global_stats': (lambda mx: mx.gluon.nn.BatchNorm(use_global_stats=True,
                                                                center=False),
                               [((3, 2, 4), 'n')], True),
    'instancenorm': (lambda mx: mx.gluon.nn.InstanceNorm(scale=True), [((2, 3, 5), 'n')],
                     True),
    'instancenorm_axis2': (lambda mx: mx.gluon.nn.InstanceNorm(axis=2, scale=True,
                                                               in_channels=4),
                           [((2, 3, 4, 2), 'n')], True),
    'layernorm': (lambda mx: mx.gluon.nn.LayerNorm(), [((2, 3, 4), 'n')], True),
    'layernorm_axis1': (lambda mx: mx.gluon.nn.LayerNorm(axis=1, center=False),
                        [((2, 3, 4), 'n')], True),
    'groupnorm': (lambda mx: mx.gluon.nn.GroupNorm(num_groups=2), [((2, 4, 3), 'n')], True),
    'embedding': (lambda mx: mx.gluon.nn.Embedding(6, 3), [((2, 4), 'i6')], True),
    'flatten': (lambda mx: mx.gluon.nn.Flatten(), [((2, 3, 2, 2), 'n')], True),
    'tanh': (lambda mx: mx.gluon.nn.Activation('tanh'), [((2, 5), 'n')], True),
    'softrelu': (lambda mx: mx.gluon.nn.Activation('softrelu'), [((2, 5), 'n')], True),
    'sigmoid': (lambda mx: mx.gluon.nn.Activation('sigmoid'), [((2, 5), 'n')], True),
    'leakyrelu': (lambda mx: mx.gluon.nn.LeakyReLU(0.15), [((2, 5), 'n')], True),
    'prelu': (lambda mx: mx.gluon.nn.PReLU(), [((2, 5), 'n')], True),
    'prelu_channels': (lambda mx: mx.gluon.nn.PReLU(in_channels=3), [((2, 3, 4), 'n')], True),
    'elu': (lambda mx: mx.gluon.nn.ELU(0.7), [((2, 5), 'n')], True),
    'selu': (lambda mx: mx.gluon.nn.SELU(), [((2, 5), 'n')], True),
    'gelu': (lambda mx: mx.gluon.nn.GELU(), [((2, 5), 'n')], True),
    'swish': (lambda mx: mx.gluon.nn.Swish(1.5), [((2, 5), 'n')], True),
    'hybridlambda_str': (lambda mx: mx.gluon.nn.HybridLambda('tanh'), [((2, 5), 'n')], True),
    'hybridlambda_fn': (lambda mx: mx.gluon.nn.HybridLambda(
        lambda F, x: F.LeakyReLU(x, slope=0.1)), [((2, 5), 'n')], True),
    'lambda_str': (lambda mx: mx.gluon.nn.Lambda('sigmoid'), [((2, 5), 'n')], False),
    'sequential': (_seq, [((2, 2, 6, 6), 'n')], True),
    'hybridconcurrent': (lambda mx: _concurrent(mx, True), [((2, 4), 'n')], True),
    'concurrent': (lambda mx: _concurrent(mx, False), [((2, 4), 'n')], False),
    'identity': (lambda mx: mx.gluon.contrib.nn.Identity(), [((2, 3), 'n')], True),
    'pixelshuffle1d': (lambda mx: mx.gluon.contrib.nn.PixelShuffle1D(2), [((1, 4, 3), 'n')],
                       True),
    'pixelshuffle2d': (lambda mx: mx.gluon.contrib.nn.PixelShuffle2D((2, 3)),
                       [((1, 12, 2, 3), 'n')], True),
    'pixelshuffle3d': (lambda mx: mx.gluon.contrib.nn.PixelShuffle3D(2),
                       [((1, 16, 2, 1, 2), 'n')], True),
    'syncbatchnorm': (lambda mx: mx.gluon.contrib.nn.SyncBatchNorm(in_channels=3,
                                                                   num_devices=1),
                      [((4, 3, 2), 'n')], True),
}

#: blocks whose reprs are compared without running them
REPRS = {
    'dense_in': lambda mx: mx.gluon.nn.Dense(5, in_units=3),
    'dense_act': lambda mx: mx.gluon.nn.Dense(5, activation='sigmoid'),
    'conv2d_full': lambda mx: mx.gluon.nn.Conv2D(8, 3, strides=2, padding=1, dilation=2,
                                                 groups=2, use_bias=False,
                                                 activation='relu', in_channels=4),
    'conv2d_transpose': lambda mx: mx.gluon.nn.Conv2DTranspose(8, 4, strides=2, padding=1,
                                                               output_padding=1),
    'conv1d': lambda mx: mx.gluon.nn.Conv1D(3, 5),
    'maxpool2d': lambda mx: mx.gluon.nn.MaxPool2D(),
    'avgpool3d': lambda mx: mx.gluon.nn.AvgPool3D(3, 1, 1, ceil_mode=True),
    'globalavg2d': lambda mx: mx.gluon.nn.GlobalAvgPool2D(),
    'batchnorm': lambda mx: mx.gluon.nn.BatchNorm(in_channels=3),
    'batchnormrelu': lambda mx: mx.gluon.nn.BatchNormReLU(),
    'instancenorm': lambda mx: mx.gluon.nn.InstanceNorm(in_channels=2),
    'layernorm': lambda mx: mx.gluon.nn.LayerNorm(),
    'groupnorm': lambda mx: mx.gluon.nn.GroupNorm(3),
    'embedding': lambda mx: mx.gluon.nn.Embedding(10, 4),
    'flatten': lambda mx: mx.gluon.nn.Flatten(),
    'dropout': lambda mx: mx.gluon.nn.Dropout(0.3, axes=(1,)),
    'activation': lambda mx: mx.gluon.nn.Activation('relu'),
    'leakyrelu': lambda mx: mx.gluon.nn.LeakyReLU(0.1),
    'lambda': lambda mx: mx.gluon.nn.Lambda('tanh'),
    'hybridlambda': lambda mx: mx.gluon.nn.HybridLambda('tanh'),
    'sequential': _seq,
    'concurrent': lambda mx: _concurrent(mx, True),
    'pixelshuffle1d': lambda mx: mx.gluon.contrib.nn.PixelShuffle1D(3),
    'pixelshuffle2d': lambda mx: mx.gluon.contrib.nn.PixelShuffle2D(2),
    'sparse_embedding': lambda mx: mx.gluon.contrib.nn.SparseEmbedding(10, 4),
    'l2loss': lambda mx: mx.gluon.loss.L2Loss(),
    'softmaxce': lambda mx: mx.gluon.loss.SoftmaxCELoss(weight=0.5, batch_axis=1),
}


def _names_net(mx):
    """A network of nested containers whose automatic names are compared."""
    nn = mx.gluon.nn
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Conv2D(4, 3), nn.BatchNorm(), nn.Conv2DTranspose(2, 3), nn.PReLU())
        inner = nn.HybridSequential(prefix='block_')
        with inner.name_scope():
            inner.add(nn.Dense(3, activation='relu'), nn.LayerNorm(), nn.Embedding(4, 2))
        net.add(inner, nn.Dense(2), nn.InstanceNorm(), nn.GroupNorm())
    return net


def _names_two(mx):
    """Two top-level blocks of one kind and an explicit prefix: the counters go on."""
    nn = mx.gluon.nn
    return [nn.Dense(2), nn.Dense(3), nn.Conv1D(2, 1), nn.MaxPool1D(), nn.Activation('tanh'),
            nn.Dense(3, prefix='out_'), mx.gluon.contrib.nn.SyncBatchNorm(num_devices=1),
            nn.BatchNormReLU()]


#: name -> (builder(mx) -> (loss block), input specs [(shape, kind, differentiable)]).
#: kinds: 'n' normal, 'u' uniform(0.05, 0.95), 'p' a distribution along the last axis,
#: 'sign' -1/1, 'pos' uniform(0.5, 3), 'count' integers 0..5, 'count1' integers 1..5
#: (PoissonNLLLoss's Stirling term is NaN at a target of 0, in MXNet too), 'i<k>' integers
#: in [0, k),
#: 'w' uniform(0.5, 1.5) (sample weights), or a list: that constant array.
LOSSES = {
    'l2': (lambda mx: mx.gluon.loss.L2Loss(), [((3, 4), 'n', True), ((3, 4), 'n', True)]),
    'l2_weight_sw': (lambda mx: mx.gluon.loss.L2Loss(weight=0.7),
                     [((3, 2, 2), 'n', True), ((3, 4), 'n', False), ((3, 1, 1), 'w', False)]),
    'l1': (lambda mx: mx.gluon.loss.L1Loss(), [((3, 4), 'n', True), ((3, 4), 'n', True)]),
    'l1_batch_axis1': (lambda mx: mx.gluon.loss.L1Loss(weight=2.0, batch_axis=1),
                       [((4, 3), 'n', True), ((4, 3), 'n', False), ((1, 3), 'w', False)]),
    'sigmoid_bce': (lambda mx: mx.gluon.loss.SigmoidBinaryCrossEntropyLoss(),
                    [((3, 4), 'n', True), ((3, 4), 'u', True)]),
    'sigmoid_bce_from_sigmoid': (lambda mx: mx.gluon.loss.SigmoidBCELoss(from_sigmoid=True,
                                                                         weight=0.5),
                                 [((3, 4), 'u', True), ((3, 4), 'i2', False),
                                  ((3, 1), 'w', False)]),
    'sigmoid_bce_pos_weight': (lambda mx: mx.gluon.loss.SigmoidBCELoss(),
                               [((3, 4), 'n', True), ((3, 4), 'i2', False), None,
                                ((1, 4), 'pos', True)]),
    'sigmoid_bce_from_sigmoid_pos_weight': (
        lambda mx: mx.gluon.loss.SigmoidBCELoss(from_sigmoid=True),
        [((3, 4), 'u', True), ((3, 4), 'u', False), ((3, 1), 'w', False),
         ((1, 4), 'pos', True)]),
    'softmax_ce': (lambda mx: mx.gluon.loss.SoftmaxCrossEntropyLoss(),
                   [((3, 5), 'n', True), ((3,), 'i5', False)]),
    'softmax_ce_axis1': (lambda mx: mx.gluon.loss.SoftmaxCELoss(axis=1, weight=1.5),
                         [((2, 4, 3), 'n', True), ((2, 3), 'i4', False),
                          ((2, 1, 3), 'w', False)]),
    'softmax_ce_dense': (lambda mx: mx.gluon.loss.SoftmaxCELoss(sparse_label=False),
                         [((3, 5), 'n', True), ((3, 5), 'p', True)]),
    'softmax_ce_from_logits': (lambda mx: mx.gluon.loss.SoftmaxCELoss(from_logits=True),
                               [((3, 5), 'n', True), ((3,), 'i5', False)]),
    'softmax_ce_batch_axis1': (lambda mx: mx.gluon.loss.SoftmaxCELoss(axis=0, batch_axis=1,
                                                                      sparse_label=False),
                               [((4, 3), 'n', True), ((4, 3), 'p', False)]),
    'kldiv': (lambda mx: mx.gluon.loss.KLDivLoss(),
              [((3, 4), 'n', True), ((3, 4), 'p', True)]),
    'kldiv_softmax': (lambda mx: mx.gluon.loss.KLDivLoss(from_logits=False, axis=1,
                                                         weight=0.3),
                      [((2, 4, 3), 'n', True), ((2, 4, 3), 'p', False),
                       ((2, 1, 1), 'w', False)]),
    'ctc': (lambda mx: mx.gluon.loss.CTCLoss(),
            [((2, 6, 4), 'n', True), ([[0, 1, 1], [2, -1, -1]], None, False)]),
    'ctc_lengths_tnc': (lambda mx: mx.gluon.loss.CTCLoss(layout='TNC', label_layout='TN',
                                                         weight=2.0),
                        [((6, 2, 4), 'n', True), ([[1, 0], [2, 2], [0, 1]], None, False),
                         ([6, 5], None, False), ([2, 3], None, False),
                         ((2,), 'w', False)]),
    'huber': (lambda mx: mx.gluon.loss.HuberLoss(rho=0.8),
              [((3, 4), 'n', True), ((3, 4), 'n', True)]),
    'huber_sw': (lambda mx: mx.gluon.loss.HuberLoss(weight=0.5),
                 [((3, 4), 'n', True), ((3, 4), 'n', False), ((3, 1), 'w', False)]),
    'hinge': (lambda mx: mx.gluon.loss.HingeLoss(),
              [((3, 4), 'n', True), ((3, 4), 'sign', False)]),
    'hinge_margin': (lambda mx: mx.gluon.loss.HingeLoss(margin=0.5, weight=3.0),
                     [((3, 4), 'n', True), ((3, 4), 'sign', False), ((3, 1), 'w', False)]),
    'squared_hinge': (lambda mx: mx.gluon.loss.SquaredHingeLoss(margin=1.5),
                      [((3, 4), 'n', True), ((3, 4), 'sign', False)]),
    'logistic_signed': (lambda mx: mx.gluon.loss.LogisticLoss(),
                        [((3, 4), 'n', True), ((3, 4), 'sign', False)]),
    'logistic_binary': (lambda mx: mx.gluon.loss.LogisticLoss(label_format='binary',
                                                              weight=0.5),
                        [((3, 4), 'n', True), ((3, 4), 'i2', False), ((3, 1), 'w', False)]),
    'triplet': (lambda mx: mx.gluon.loss.TripletLoss(margin=2.0),
                [((3, 4), 'n', True), ((3, 4), 'n', True), ((3, 4), 'n', True)]),
    'triplet_weight': (lambda mx: mx.gluon.loss.TripletLoss(weight=0.5, batch_axis=1),
                       [((4, 3), 'n', True), ((4, 3), 'n', True), ((4, 3), 'n', True)]),
    'poisson_nll': (lambda mx: mx.gluon.loss.PoissonNLLLoss(),
                    [((3, 4), 'n', True), ((3, 4), 'count', False)]),
    'poisson_nll_rate_full': (lambda mx: mx.gluon.loss.PoissonNLLLoss(from_logits=False,
                                                                      compute_full=True,
                                                                      weight=2.0),
                              [((3, 4), 'pos', True), ((3, 4), 'count1', False),
                               ((3, 1), 'w', False)]),
    'cosine_embedding': (lambda mx: mx.gluon.loss.CosineEmbeddingLoss(),
                         [((4, 5), 'n', True), ((4, 5), 'n', True),
                          ([1, -1, 1, -1], None, False)]),
    'cosine_embedding_margin': (lambda mx: mx.gluon.loss.CosineEmbeddingLoss(margin=0.2,
                                                                             weight=0.5),
                                [((4, 5), 'n', True), ((4, 5), 'n', True),
                                 ([-1, -1, 1, -1], None, False), ((4, 1), 'w', False)]),
    'sdml': (lambda mx: mx.gluon.loss.SDMLLoss(),
             [((4, 3), 'n', True), ((4, 3), 'n', True)]),
    'sdml_smoothing': (lambda mx: mx.gluon.loss.SDMLLoss(smoothing_parameter=0.1, weight=2.0),
                       [((3, 5), 'n', True), ((3, 5), 'n', True)]),
}


#: losses MXNet 1.9.1 cannot differentiate: PoissonNLLLoss(compute_full=True) writes
#: ``loss += stirling_factor`` in place, which autograd refuses inside ``record()``
FORWARD_ONLY_LOSSES = ('poisson_nll_rate_full',)


def make_input(rng, shape, kind):
    """A float32 input array of ``kind`` (see :data:`LOSSES`)."""
    if isinstance(shape, list):
        return np.array(shape, dtype=np.float32)
    if kind == 'n':
        return rng.standard_normal(shape).astype(np.float32)
    if kind == 'u':
        return rng.uniform(0.05, 0.95, shape).astype(np.float32)
    if kind == 'p':
        e = np.exp(rng.standard_normal(shape))
        return (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)
    if kind == 'sign':
        return np.where(rng.uniform(size=shape) < 0.5, -1.0, 1.0).astype(np.float32)
    if kind == 'pos':
        return rng.uniform(0.5, 3.0, shape).astype(np.float32)
    if kind == 'count':
        return rng.randint(0, 6, shape).astype(np.float32)
    if kind == 'count1':
        return rng.randint(1, 6, shape).astype(np.float32)
    if kind == 'w':
        return rng.uniform(0.5, 1.5, shape).astype(np.float32)
    if kind.startswith('i'):
        return rng.randint(0, int(kind[1:]), shape).astype(np.float32)
    raise ValueError('unknown input kind %r' % (kind,))


def param_value(rng, name, shape):
    """The value a case's parameter is set to: running variances positive."""
    if name.endswith('running_var'):
        return rng.uniform(0.5, 1.5, shape).astype(np.float32)
    return rng.uniform(-1.0, 1.0, shape).astype(np.float32)


def pack(store):
    """``({key: [offset, shape]}, one float32 vector)`` holding every array of ``store``."""
    index, parts, offset = {}, [], 0
    for key in sorted(store):
        a = np.asarray(store[key], dtype=np.float32)
        index[key] = [offset, list(a.shape)]
        parts.append(a.ravel())
        offset += a.size
    return index, np.concatenate(parts)


def unpack(index, flat):
    """The arrays :func:`pack` packed, by key."""
    out = {}
    for key, (offset, shape) in index.items():
        size = int(np.prod(shape)) if shape else 1
        out[key] = flat[offset:offset + size].reshape(shape)
    return out


def case_seed(name):
    """A seed of its own for each case, stable across Python versions."""
    return sum((i + 1) * ord(c) for i, c in enumerate(name)) % (2 ** 31)


def run_layer(mx, name, inputs, param_of, head_of, hybridize=False):
    """Run layer case ``name`` with ``mx`` (MXNet or symgraph) as the golden data holds it.

    ``inputs`` are the case's input arrays (NumPy); ``param_of(name, shape)`` gives each
    parameter's value once the first (deferred-initializing) forward knows its shape;
    ``head_of(shape)`` the head gradient. Returns ``(results, meta)``: the arrays by key
    (``out``, ``grad_in|<i>``, ``grad|<param>``, ``after|<param>`` for parameters without
    gradient, ``eval``, ``param|<name>``) and the names, gradient requests and reprs.
    """
    build, specs, _ = LAYERS[name]
    with mx.name.NameManager():
        net = build(mx)
    fresh_repr = repr(net)
    net.initialize()
    if hybridize:
        net.hybridize()
    net(*[mx.nd.array(x) for x in inputs])      # deferred initialization
    params = net.collect_params()
    names = list(params.keys())
    res = {}
    for pname in names:
        value = param_of(pname, params[pname].shape)
        params[pname].set_data(mx.nd.array(value))
        res['param|' + pname] = value
    arrays = [mx.nd.array(x) for x in inputs]
    for (shape, kind), x in zip(specs, arrays):
        if kind == 'n':
            x.attach_grad()
    with mx.autograd.record():
        out = net(*arrays)
    head = head_of(out.shape)
    out.backward(mx.nd.array(head))
    res['head'] = head
    res['out'] = out.asnumpy()
    for i, x in enumerate(arrays):
        if specs[i][1] == 'n':
            res['grad_in|%d' % i] = x.grad.asnumpy()
    grads = []
    for pname in names:
        p = params[pname]
        if p.grad_req == 'null':
            res['after|' + pname] = p.data().asnumpy()
        else:
            res['grad|' + pname] = p.grad().asnumpy()
            grads.append(pname)
    res['eval'] = net(*arrays).asnumpy()
    meta = dict(names=names, grads=grads, repr_fresh=fresh_repr, repr=repr(net),
                grad_reqs={n: params[n].grad_req for n in names})
    return res, meta


def layer_symbol(mx, name):
    """The arguments, outputs and auxiliary states of case ``name``'s block (fresh, under
    a fresh NameManager) called on Variables ``data0``, ``data1``, ...: ``F`` is
    ``mx.sym``."""
    build, specs, _ = LAYERS[name]
    with mx.name.NameManager():
        net = build(mx)
        out = net(*[mx.sym.var('data%d' % i) for i in range(len(specs))])
    return dict(arguments=out.list_arguments(), outputs=out.list_outputs(),
                aux=out.list_auxiliary_states())


def exported_nodes(mx, name, folder):
    """The nodes of the ``-symbol.json`` that case ``name``'s block (fresh, hybridized, run
    once on ones) exports into ``folder``: ``[op, name, attrs, inputs as [node, output]]``
    each."""
    build, specs, _ = LAYERS[name]
    with mx.name.NameManager():
        net = build(mx)
    net.initialize()
    net.hybridize()
    net(*[mx.nd.ones(shape) for shape, _ in specs])
    prefix = os.path.join(folder, name)
    net.export(prefix)
    with open(prefix + '-symbol.json') as f:
        nodes = json.load(f)['nodes']
    return [[n['op'], n['name'], n.get('attrs', {}), [i[:2] for i in n['inputs']]]
            for n in nodes]


def _layer_case(mx, name, store, meta):
    rng = np.random.RandomState(case_seed(name))
    inputs = [make_input(rng, shape, kind) for shape, kind in LAYERS[name][1]]
    res, meta[name] = run_layer(
        mx, name, inputs, lambda pname, shape: param_value(rng, pname, shape),
        lambda shape: rng.standard_normal(shape).astype(np.float32))
    for i, x in enumerate(inputs):
        store['%s|in|%d' % (name, i)] = x
    if LAYERS[name][2]:
        meta[name]['symbol'] = layer_symbol(mx, name)
        with tempfile.TemporaryDirectory() as folder:
            meta[name]['exported'] = exported_nodes(mx, name, folder)
    for key, value in res.items():
        store['%s|%s' % (name, key)] = value


def loss_inputs(mx, name, arrays):
    """The positional arguments of loss case ``name``: NDArrays of ``arrays`` (by input
    position) with gradients attached where the case says, None where it passes None;
    and the list of (position, NDArray) with gradients."""
    args, diff = [], []
    for i, spec in enumerate(LOSSES[name][1]):
        if spec is None:
            args.append(None)
            continue
        nd = mx.nd.array(arrays[i], dtype=arrays[i].dtype)
        if spec[2]:
            nd.attach_grad()
            diff.append((i, nd))
        args.append(nd)
    return args, diff


def _loss_case(mx, name, store, meta):
    build, specs = LOSSES[name]
    rng = np.random.RandomState(case_seed(name))
    with mx.name.NameManager():
        loss = build(mx)
    arrays = {}
    for i, spec in enumerate(specs):
        if spec is not None:
            arrays[i] = make_input(rng, spec[0], spec[1])
            store['%s|in|%d' % (name, i)] = arrays[i]
    args, diff = loss_inputs(mx, name, arrays)
    if name in FORWARD_ONLY_LOSSES:
        out = loss(*args)
    else:
        with mx.autograd.record():
            out = loss(*args)
    head = rng.standard_normal(out.shape).astype(np.float32)
    store[name + '|head'] = head
    store[name + '|out'] = out.asnumpy()
    if name not in FORWARD_ONLY_LOSSES:
        out.backward(mx.nd.array(head))
        for i, nd in diff:
            store['%s|grad_in|%d' % (name, i)] = nd.grad.asnumpy()
    meta[name] = dict(repr=repr(loss))


# ----------------------------------------------------------------------------- for the tests
_GOLDEN = []


def golden():
    """``(meta, layers, losses)`` of the committed data: ``layers[case][key]`` and
    ``losses[case][key]`` are the arrays :func:`main` stored (keys without the case)."""
    if not _GOLDEN:
        with open(os.path.join(OUT, 'meta.json')) as f:
            meta = json.load(f)
        with np.load(os.path.join(OUT, 'arrays.npz')) as z:
            flat = {k: z[k] for k in z.files}
        split = []
        for part, index in (('layers', 'layer_index'), ('losses', 'loss_index')):
            cases = {}
            for key, value in unpack(meta[index], flat[part]).items():
                case, _, rest = key.partition('|')
                cases.setdefault(case, {})[rest] = value
            split.append(cases)
        _GOLDEN.append((meta, split[0], split[1]))
    return _GOLDEN[0]


def check_layer(mx, name, hybridize=False, rtol=1e-4, atol=1e-5):
    """Run layer case ``name`` with ``mx`` on the golden inputs and parameters and assert
    that everything :func:`run_layer` returns equals MXNet's (names and reprs exactly)."""
    meta, layers, _ = golden()
    want, want_meta = layers[name], meta['layers'][name]
    inputs = [want['in|%d' % i] for i in range(len(LAYERS[name][1]))]

    def param_of(pname, shape):
        value = want['param|' + pname]
        assert tuple(shape) == value.shape, (pname, shape, value.shape)
        return value

    got, got_meta = run_layer(mx, name, inputs, param_of, lambda shape: want['head'],
                              hybridize=hybridize)
    for key in ('names', 'grads', 'grad_reqs', 'repr_fresh', 'repr'):
        assert got_meta[key] == want_meta[key], (name, key, got_meta[key], want_meta[key])
    keys = sorted(k for k in want if not k.startswith(('in|', 'param|', 'head')))
    assert sorted(k for k in got if not k.startswith(('param|', 'head'))) == keys
    for key in keys:
        np.testing.assert_allclose(got[key], want[key], rtol=rtol, atol=atol,
                                   err_msg='%s: %s' % (name, key))


def hybridizable_loss(name):
    """Whether loss case ``name`` runs hybridized: no None among its arguments (a
    HybridBlock's inputs are arrays) and not SDMLLoss, which reads its inputs' shapes."""
    return None not in LOSSES[name][1] and not name.startswith('sdml')


def check_loss(mx, name, hybridize=False, rtol=1e-4, atol=1e-5):
    """Run loss case ``name`` with ``mx`` on the golden inputs and assert that its output
    and the gradients of its differentiable inputs equal MXNet's."""
    meta, _, losses = golden()
    want = losses[name]
    with mx.name.NameManager():
        loss = LOSSES[name][0](mx)
    assert repr(loss) == meta['losses'][name]['repr']
    if hybridize:
        loss.hybridize()
    arrays = {i: want['in|%d' % i] for i, spec in enumerate(LOSSES[name][1])
              if spec is not None}
    args, diff = loss_inputs(mx, name, arrays)
    with mx.autograd.record():
        out = loss(*args)
    np.testing.assert_allclose(out.asnumpy(), want['out'], rtol=rtol, atol=atol,
                               err_msg=name + ': out')
    out.backward(mx.nd.array(want['head']))
    if name in FORWARD_ONLY_LOSSES:
        return
    assert sorted('grad_in|%d' % i for i, _ in diff) == \
        sorted(k for k in want if k.startswith('grad_in|'))
    for i, nd in diff:
        np.testing.assert_allclose(nd.grad.asnumpy(), want['grad_in|%d' % i], rtol=rtol,
                                   atol=atol, err_msg='%s: gradient of input %d' % (name, i))


#: cases MXNet's native operators cannot run (3-D Deconvolution exists only in its oneDNN
#: build): made in a second process with oneDNN on
ONEDNN_LAYERS = ('conv3d_transpose',)


def _onednn_part():
    """The :data:`ONEDNN_LAYERS` cases, made by this process (oneDNN on), as JSON-able
    metadata and arrays written to ``OUT``'s temporary files."""
    import mxnet as mx
    store, meta = {}, {}
    for name in ONEDNN_LAYERS:
        _layer_case(mx, name, store, meta)
    np.savez(os.path.join(OUT, '_onednn.npz'), **store)
    with open(os.path.join(OUT, '_onednn.json'), 'w') as f:
        json.dump(meta, f)


def main():
    import subprocess
    import mxnet as mx
    os.makedirs(OUT, exist_ok=True)
    env = dict(os.environ, MXNET_MKLDNN_ENABLED='1')
    subprocess.run([sys.executable, os.path.abspath(__file__), '--onednn'], env=env,
                   check=True, timeout=600)
    with np.load(os.path.join(OUT, '_onednn.npz')) as z:
        layer_store = {k: z[k] for k in z.files}
    with open(os.path.join(OUT, '_onednn.json')) as f:
        layer_meta = json.load(f)
    os.remove(os.path.join(OUT, '_onednn.npz'))
    os.remove(os.path.join(OUT, '_onednn.json'))
    for name in sorted(LAYERS):
        if name not in ONEDNN_LAYERS:
            _layer_case(mx, name, layer_store, layer_meta)
    loss_store, loss_meta = {}, {}
    for name in sorted(LOSSES):
        _loss_case(mx, name, loss_store, loss_meta)
    reprs = {}
    for name in sorted(REPRS):
        with mx.name.NameManager():
            reprs[name] = repr(REPRS[name](mx))
    with mx.name.NameManager():
        net = _names_net(mx)
        two = _names_two(mx)
    names = dict(
        net=list(net.collect_params().keys()),
        net_prefixes=[net.prefix] + [c.prefix for c in net._children.values()]
        + [c.prefix for c in net[4]._children.values()],
        top_level=[b.prefix for b in two],
        top_level_params=[list(b.collect_params().keys()) for b in two])
    # one array per file (an npz member per small array would cost more than the data)
    layer_index, layer_flat = pack(layer_store)
    loss_index, loss_flat = pack(loss_store)
    np.savez_compressed(os.path.join(OUT, 'arrays.npz'), layers=layer_flat, losses=loss_flat)
    with open(os.path.join(OUT, 'meta.json'), 'w') as f:
        json.dump(dict(layers=layer_meta, losses=loss_meta, reprs=reprs, names=names,
                       layer_index=layer_index, loss_index=loss_index,
                       mxnet=mx.__version__, onednn_layers=list(ONEDNN_LAYERS)),
                  f, indent=0, sort_keys=True)
    sys.stdout.flush()


if __name__ == '__main__':
    if sys.argv[1:] == ['--onednn']:
        _onednn_part()
    else:
        main()
