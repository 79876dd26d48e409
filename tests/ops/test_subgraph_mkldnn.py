"""``_sg_mkldnn_conv`` / ``_sg_mkldnn_fully_connected`` (ops/subgraph_mkldnn.py) built by
``get_backend_symbol``: float32 equal to the unfused graph; quantized (calibrated on the
data itself) within a few output steps of float32, the int8 data and output ranges as
MXNet's rules give them. MXNet-written models, bit for bit: tests/contrib/
test_quantization_mkldnn.py."""
import numpy as np
import pytest

import symgraph as mx

RNG = np.random.RandomState(3)


def _net(with_sum):
    data = mx.sym.var('data')
    c = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=8, name='conv')
    b = mx.sym.BatchNorm(c, fix_gamma=False, name='bn')
    if with_sum:
        # (a relu'd residual: a uint8 sum operand; an int8 one into a uint8 output is
        # capped at 127 as in MXNet's kernel, test_quantization_mkldnn checks that case)
        side = mx.sym.Activation(mx.sym.Convolution(data, kernel=(1, 1), num_filter=8,
                                                    no_bias=True, name='side'),
                                 act_type='relu', name='side_relu')
        b = mx.sym.elemwise_add(b, side, name='add')
    r = mx.sym.Activation(b, act_type='relu', name='relu')
    return mx.sym.FullyConnected(mx.sym.Flatten(r), num_hidden=5, name='fc')


def _params(sym, shape):
    arg_shapes, _, aux_shapes = sym.infer_shape(data=shape)
    args = {n: mx.nd.array(RNG.uniform(-0.5, 0.5, s)) for n, s in
            zip(sym.list_arguments(), arg_shapes) if n != 'data'}
    auxs = {n: mx.nd.array(RNG.uniform(0.5, 1.5, s) if n.endswith('var') else
                           RNG.uniform(-0.1, 0.1, s))
            for n, s in zip(sym.list_auxiliary_states(), aux_shapes)}
    return args, auxs


def _run(sym, args, auxs, x):
    exe = sym.simple_bind(mx.cpu(), grad_req='null', type_dict={'data': 'float32'},
                          data=x.shape)
    for k, v in args.items():
        exe.arg_dict[k][:] = v
    for k, v in auxs.items():
        exe.aux_dict[k][:] = v
    return exe.forward(is_train=False, data=mx.nd.array(x))[0].asnumpy()


@pytest.mark.parametrize('with_sum', [False, True])
def test_fused_float_equals_unfused(with_sum):
    sym = _net(with_sum)
    x = RNG.uniform(0, 1, (4, 3, 6, 6)).astype(np.float32)
    args, auxs = _params(sym, x.shape)
    fused = sym.get_backend_symbol('MKLDNN')
    ops = [n['op'] for n in __import__('json').loads(fused.tojson())['nodes']]
    assert '_sg_mkldnn_conv' in ops and '_sg_mkldnn_fully_connected' in ops
    assert 'BatchNorm' not in ops
    np.testing.assert_allclose(_run(fused, args, auxs, x), _run(sym, args, auxs, x),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize('with_sum', [False, True])
def test_quantized_close_to_float(with_sum):
    sym = _net(with_sum)
    x = RNG.uniform(0, 1, (8, 3, 6, 6)).astype(np.float32)
    args, auxs = _params(sym, x.shape)
    ref = _run(sym, args, auxs, x)
    it = mx.io.NDArrayIter(x, batch_size=8)
    qsym, qargs, qauxs = mx.contrib.quant.quantize_model_mkldnn(
        sym, args, auxs, label_names=None, calib_mode='naive', calib_data=it,
        num_calib_examples=8, quantized_dtype='auto')
    out = _run(qsym, qargs, qauxs, x)
    assert out.dtype == np.float32 and out.shape == ref.shape
    # int8 activations and weights: a few percent of the output's range
    assert np.abs(out - ref).max() <= 0.05 * np.abs(ref).max()
