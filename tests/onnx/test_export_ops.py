"""Each common operator's ONNX converter: a small graph exported, checked by
``onnx.checker`` and run by ONNX Runtime on seeded inputs, against symgraph's forward."""
import numpy as np
import pytest

import symgraph as mx

pytest.importorskip('onnx')
pytest.importorskip('onnxruntime')

from onnx_special_check import check, forward, run_onnx  # noqa: E402  (tests/onnx/)

V = mx.sym.var


def _rng(seed=0):
    return np.random.RandomState(seed)


def _x(*shape, seed=0, dtype=np.float32, low=-2.0, high=2.0):
    return _rng(seed).uniform(low, high, shape).astype(dtype)


def _pos(*shape, seed=0):
    return _x(*shape, seed=seed, low=0.1, high=2.0)


X = V('x')
Y = V('y')

# (id, symbol, inputs, params)
CASES = [
    # --- convolutions, dense
    ('conv2d', mx.sym.Convolution(X, kernel=(3, 3), num_filter=4, pad=(1, 1), name='c'),
     {'x': _x(2, 3, 5, 6)}, {'c_weight': _x(4, 3, 3, 3, seed=1), 'c_bias': _x(4, seed=2)}),
    ('conv2d_group_dilate_stride',
     mx.sym.Convolution(X, kernel=(3, 2), num_filter=4, num_group=2, dilate=(2, 1),
                        stride=(2, 1), no_bias=True, name='c'),
     {'x': _x(1, 4, 9, 7)}, {'c_weight': _x(4, 2, 3, 2, seed=1)}),
    ('conv1d', mx.sym.Convolution(X, kernel=(3,), num_filter=2, name='c'),
     {'x': _x(2, 3, 8)}, {'c_weight': _x(2, 3, 3, seed=1), 'c_bias': _x(2, seed=2)}),
    ('conv3d', mx.sym.Convolution(X, kernel=(2, 2, 2), num_filter=2, pad=(1, 0, 1), name='c'),
     {'x': _x(1, 2, 4, 5, 3)}, {'c_weight': _x(2, 2, 2, 2, 2, seed=1),
                                'c_bias': _x(2, seed=2)}),
    ('deconv', mx.sym.Deconvolution(X, kernel=(3, 3), num_filter=3, stride=(2, 2),
                                    pad=(1, 1), adj=(1, 1), name='d'),
     {'x': _x(1, 2, 4, 5)}, {'d_weight': _x(2, 3, 3, 3, seed=1)}),
    ('deconv_target_shape', mx.sym.Deconvolution(X, kernel=(4, 4), num_filter=2,
                                                 stride=(2, 2), target_shape=(9, 10),
                                                 no_bias=False, name='d'),
     {'x': _x(1, 2, 4, 5)}, {'d_weight': _x(2, 2, 4, 4, seed=1), 'd_bias': _x(2, seed=2)}),
    ('fc_flatten', mx.sym.FullyConnected(X, num_hidden=5, name='f'),
     {'x': _x(2, 3, 4)}, {'f_weight': _x(5, 12, seed=1), 'f_bias': _x(5, seed=2)}),
    ('fc_noflatten', mx.sym.FullyConnected(X, num_hidden=5, flatten=False, name='f'),
     {'x': _x(2, 3, 4)}, {'f_weight': _x(5, 4, seed=1), 'f_bias': _x(5, seed=2)}),
    ('fc_nobias_weight_input', mx.sym.FullyConnected(X, Y, num_hidden=3, no_bias=True,
                                                     flatten=False, name='f'),
     {'x': _x(2, 4), 'y': _x(3, 4, seed=1)}, {}),
    # --- activations
] + [('act_' + a, mx.sym.Activation(X, act_type=a), {'x': _x(3, 4)}, {})
     for a in ('relu', 'sigmoid', 'tanh', 'softrelu', 'softsign')] + [
    ('leaky_' + a, mx.sym.LeakyReLU(X, act_type=a, slope=0.3), {'x': _x(3, 4)}, {})
    for a in ('leaky', 'elu', 'selu', 'gelu', 'rrelu')] + [
    ('prelu', mx.sym.LeakyReLU(X, act_type='prelu', name='p'), {'x': _x(2, 3, 4, 4)},
     {'p_gamma': _x(3, seed=1)}),
    ('hard_sigmoid', mx.sym.hard_sigmoid(X, alpha=0.3, beta=0.4), {'x': _x(3, 4)}, {}),
    # --- normalization
    ('batchnorm_fix_gamma', mx.sym.BatchNorm(X, name='bn'), {'x': _x(2, 3, 4, 5)},
     {'bn_gamma': _x(3, seed=1), 'bn_beta': _x(3, seed=2), 'bn_moving_mean': _x(3, seed=3),
      'bn_moving_var': _pos(3, seed=4)}),
    ('batchnorm_axis_last', mx.sym.BatchNorm(X, axis=-1, fix_gamma=False, eps=1e-5,
                                             name='bn'),
     {'x': _x(2, 4, 3)}, {'bn_gamma': _x(3, seed=1), 'bn_beta': _x(3, seed=2),
                          'bn_moving_mean': _x(3, seed=3), 'bn_moving_var': _pos(3, seed=4)}),
    ('layernorm', mx.sym.LayerNorm(X, name='ln'), {'x': _x(2, 3, 6)},
     {'ln_gamma': _x(6, seed=1), 'ln_beta': _x(6, seed=2)}),
    ('layernorm_axis1', mx.sym.LayerNorm(X, axis=1, name='ln'), {'x': _x(2, 3, 6)},
     {'ln_gamma': _x(3, seed=1), 'ln_beta': _x(3, seed=2)}),
    ('instancenorm', mx.sym.InstanceNorm(X, name='i'), {'x': _x(2, 3, 4, 5)},
     {'i_gamma': _x(3, seed=1), 'i_beta': _x(3, seed=2)}),
    ('groupnorm', mx.sym.GroupNorm(X, num_groups=2, name='gn'), {'x': _x(2, 4, 3, 3)},
     {'gn_gamma': _x(2, seed=1), 'gn_beta': _x(2, seed=2)}),
] + [('l2norm_' + m, mx.sym.L2Normalization(X, mode=m), {'x': _x(2, 3, 4)}, {})
     for m in ('instance', 'channel', 'spatial')] + [
    ('lrn', mx.sym.LRN(X, nsize=3, alpha=0.01), {'x': _x(2, 5, 3, 3)}, {}),
    ('dropout', mx.sym.Dropout(X, p=0.5), {'x': _x(3, 4)}, {}),
    # --- pooling
    ('maxpool', mx.sym.Pooling(X, kernel=(3, 3), stride=(2, 2), pool_type='max'),
     {'x': _x(1, 2, 7, 8)}, {}),
    ('maxpool_full', mx.sym.Pooling(X, kernel=(3, 3), stride=(2, 2), pool_type='max',
                                    pooling_convention='full'), {'x': _x(1, 2, 8, 8)}, {}),
    # windows that start in the padding or past it: ONNX's ceil_mode drops them, MXNet
    # keeps them (the lowest value or 0 where they hold no element)
    ('maxpool_full_last_window', mx.sym.Pooling(X, kernel=(3, 3), stride=(3, 4),
                                                pool_type='max', pooling_convention='full'),
     {'x': _x(1, 2, 8, 16)}, {}),
    ('maxpool_full_pad_window', mx.sym.Pooling(X, kernel=(2, 3), stride=(3, 3), pad=(1, 1),
                                               pool_type='max', pooling_convention='full'),
     {'x': _x(1, 2, 7, 6)}, {}),
    ('avgpool_full_last_window', mx.sym.Pooling(X, kernel=(2, 3), stride=(3, 3), pad=(1, 1),
                                                pool_type='avg', pooling_convention='full'),
     {'x': _x(1, 2, 7, 6)}, {}),
    ('sumpool_full_last_window', mx.sym.Pooling(X, kernel=(3, 3), stride=(3, 4),
                                                pool_type='sum', pooling_convention='full'),
     {'x': _x(1, 2, 8, 16)}, {}),
    ('avgpool_full_exclude', mx.sym.Pooling(X, kernel=(3, 3), stride=(2, 2), pad=(1, 1),
                                            pool_type='avg', pooling_convention='full',
                                            count_include_pad=False), {'x': _x(1, 2, 8, 8)},
     {}),
    ('sumpool_full', mx.sym.Pooling(X, kernel=(3, 3), stride=(2, 2), pad=(1, 1),
                                    pool_type='sum', pooling_convention='full'),
     {'x': _x(1, 2, 8, 8)}, {}),
    ('maxpool3d_full', mx.sym.Pooling(X, kernel=(2, 2, 2), stride=(2, 3, 2), pool_type='max',
                                      pooling_convention='full'), {'x': _x(1, 2, 5, 7, 4)}, {}),
    ('avgpool_full_pad', mx.sym.Pooling(X, kernel=(3, 3), stride=(2, 2), pad=(1, 1),
                                        pool_type='avg', pooling_convention='full'),
     {'x': _x(1, 2, 8, 8)}, {}),
    ('avgpool_exclude_pad', mx.sym.Pooling(X, kernel=(3, 3), pad=(1, 1), pool_type='avg',
                                           count_include_pad=False), {'x': _x(1, 2, 5, 5)}, {}),
    ('sumpool', mx.sym.Pooling(X, kernel=(2, 2), pool_type='sum'), {'x': _x(1, 2, 4, 6)}, {}),
    ('lppool', mx.sym.Pooling(X, kernel=(2, 2), pool_type='lp', p_value=2),
     {'x': _x(1, 2, 4, 6)}, {}),
    ('global_lp', mx.sym.Pooling(X, kernel=(1, 1), global_pool=True, pool_type='lp',
                                 p_value=2), {'x': _x(2, 3, 4, 5)}, {}),
    ('global_avg', mx.sym.Pooling(X, kernel=(1, 1), global_pool=True, pool_type='avg'),
     {'x': _x(2, 3, 4, 5)}, {}),
    ('global_max', mx.sym.Pooling(X, kernel=(1, 1), global_pool=True, pool_type='max'),
     {'x': _x(2, 3, 4, 5)}, {}),
    ('maxpool1d', mx.sym.Pooling(X, kernel=(2,), pool_type='max'), {'x': _x(2, 3, 8)}, {}),
    # --- softmax family and loss layers
    ('softmax_axis_temp', mx.sym.softmax(X, axis=1, temperature=2.0), {'x': _x(2, 3, 4)}, {}),
    ('log_softmax', mx.sym.log_softmax(X), {'x': _x(2, 5)}, {}),
    ('softmin', mx.sym.softmin(X), {'x': _x(2, 5)}, {}),
    ('softmax_length', mx.sym.softmax(X, Y, axis=-1, use_length=True),
     {'x': _x(3, 5), 'y': np.array([1, 5, 3], np.int32)}, {}),
    # --- embedding, upsampling, rearrangements
    ('embedding', mx.sym.Embedding(X, input_dim=6, output_dim=3, name='e'),
     {'x': np.array([[0, 5], [2, 1]], np.float32)}, {'e_weight': _x(6, 3, seed=1)}),
    ('upsampling_nearest', mx.sym.UpSampling(X, scale=2, sample_type='nearest'),
     {'x': _x(1, 2, 3, 4)}, {}),
    ('upsampling_bilinear', mx.sym.UpSampling(X, scale=2, sample_type='bilinear',
                                              num_filter=2, name='u'),
     {'x': _x(1, 2, 3, 4)}, {'u_weight': _x(2, 1, 4, 4, seed=1)}),
    ('depth_to_space', mx.sym.depth_to_space(X, block_size=2), {'x': _x(1, 8, 2, 3)}, {}),
    ('space_to_depth', mx.sym.space_to_depth(X, block_size=2), {'x': _x(1, 2, 4, 6)}, {}),
]


@pytest.mark.parametrize('case', CASES, ids=[c[0] for c in CASES])
def test_nn_converter(case):
    _, sym, inputs, params = case
    check(sym, inputs, params)


LOSSES = [
    ('softmax_output', mx.sym.SoftmaxOutput(X, name='so'), (2, 3, 4)),
    ('softmax_output_multi', mx.sym.SoftmaxOutput(X, multi_output=True, name='so'), (2, 3, 4)),
    ('softmax_output_preserve', mx.sym.SoftmaxOutput(X, preserve_shape=True, name='so'),
     (2, 3, 4)),
    ('logistic_output', mx.sym.LogisticRegressionOutput(X, name='lo'), (2, 3)),
    ('linear_output', mx.sym.LinearRegressionOutput(X, name='lo'), (2, 3)),
    ('mae_output', mx.sym.MAERegressionOutput(X, name='lo'), (2, 3)),
]


@pytest.mark.parametrize('case', LOSSES, ids=[c[0] for c in LOSSES])
def test_loss_layers_export_their_inference_forward_without_the_label(case):
    # MXNet 1.9.1's exporter fails on graphs ending in SoftmaxOutput (it skips the label
    # variable, then looks it up); here the label is simply not an input of the model
    from symgraph.onnx.export import export_onnx_model
    _, sym, shape = case
    x = _x(*shape)
    model = export_onnx_model(sym, {}, [shape])
    assert [i.name for i in model.graph.input] == ['x']
    arg_shapes, _, _ = sym.infer_shape(x=shape)
    label = dict(zip(sym.list_arguments(), arg_shapes))[sym.list_arguments()[1]]
    ref = forward(sym, {'x': x, sym.list_arguments()[1]: np.zeros(label, np.float32)})
    got = run_onnx(model, {'x': x})
    np.testing.assert_allclose(got[0], ref[0], rtol=1e-5, atol=1e-6)
