"""Checkpoints written by MXNet 1.9.1 (tests/golden/make_amp.py) with ``amp_cast`` (an
AMP-converted ResNet, its float16 weights too), the four ``_contrib_interleaved_matmul_*``
operators (a transformer decoder layer, float32 and AMP-converted), ``_split_v2`` and
``_foreach``: ``mx.model.load_checkpoint`` reads them and the forward (and where MXNet
gave them, the gradients) match MXNet's.
"""
import json
import os

import numpy as np
import pytest

import symgraph as mx
from symgraph import cuda
from symgraph.contrib import amp
import make_amp
from test_golden import assert_close, assert_same_graph

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, 'data', 'amp')
#: model -> (rtol, atol) of the outputs; the float16 models at float16's precision (their
#: float16 GEMMs round differently from MXNet's reference: see test_amp_emulated_gemm)
MODELS = {'amp_resnet': (2e-3, 1e-3), 'amp_resnet_optional': (2e-3, 1e-3),
          'amp_transformer': (1e-2, 1e-2), 'transformer': (1e-5, 1e-5),
          'split_v2': (1e-6, 1e-6), 'foreach_rnn': (1e-5, 1e-6)}


def _io(name):
    with np.load(os.path.join(DATA, name + '-io.npz')) as z:
        return dict(z)


def _run(sym, arg, aux, io, ctx=None):
    """Forward (a training one followed by backward when ``io`` has head gradients) on
    ``ctx`` (default the CPU): outputs and gradients."""
    ctx = ctx or mx.cpu()
    ins = {k[3:]: v for k, v in io.items() if k.startswith('in:')}
    grads = [k[5:] for k in io if k.startswith('grad:')]
    args = {k: v.as_in_context(ctx) for k, v in arg.items()}
    args.update({k: mx.nd.array(v, ctx=ctx, dtype=v.dtype) for k, v in ins.items()})
    args = {k: args[k] for k in sym.list_arguments()}
    args_grad = {k: mx.nd.zeros(args[k].shape, ctx=ctx, dtype=args[k].dtype) for k in grads}
    exe = sym.bind(ctx, args, args_grad=args_grad or None,
                   grad_req={k: 'write' if k in grads else 'null' for k in args},
                   aux_states={k: v.as_in_context(ctx) for k, v in aux.items()})
    exe.forward(is_train=bool(grads))
    outs = [o.asnumpy() for o in exe.outputs]
    if grads:
        exe.backward([mx.nd.array(io['head:%d' % i], ctx=ctx) for i in range(len(outs))])
    return outs, {k: v.asnumpy() for k, v in args_grad.items()}


@pytest.mark.parametrize('name', sorted(MODELS))
def test_mxnet_checkpoint_loads_and_matches(name):
    _check_checkpoint(name)


@pytest.mark.gpu
@pytest.mark.skipif(not cuda.available(), reason='needs CuPy and a CUDA GPU')
@pytest.mark.parametrize('name', sorted(MODELS))
def test_mxnet_checkpoint_on_gpu(name):
    _check_checkpoint(name, mx.gpu(0))


def _check_checkpoint(name, ctx=None):
    rtol, atol = MODELS[name]
    prefix = os.path.join(DATA, name)
    sym, arg, aux = mx.model.load_checkpoint(prefix, 0)
    with open(prefix + '-symbol.json') as f:
        assert_same_graph(sym.tojson(remove_amp_cast=False), f.read(), name + ' round trip')
    io = _io(name)
    outs, grads = _run(sym, arg, aux, io, ctx)
    assert len(outs) == len([k for k in io if k.startswith('out:')])
    for i, o in enumerate(outs):
        assert_close(o, io['out:%d' % i], rtol, atol, '%s output %d' % (name, i))
    for k, g in grads.items():
        assert_close(g, io['grad:' + k], 1e-4, 1e-5, '%s gradient of %s' % (name, k))


def test_amp_checkpoints_hold_casts_and_float16_weights():
    sym, arg, _ = mx.model.load_checkpoint(os.path.join(DATA, 'amp_resnet'), 0)
    ops = [n['op'] for n in json.loads(sym.tojson(remove_amp_cast=False))['nodes']]
    assert ops.count('amp_cast') == 10
    assert {v.dtype for v in arg.values()} == {np.float32}
    sym, arg, _ = mx.model.load_checkpoint(os.path.join(DATA, 'amp_resnet_optional'), 0)
    assert arg['stage1_conv1_weight'].dtype == np.float16
    assert arg['bn0_gamma'].dtype == np.float32
    assert sym.attr_dict()['stage1_conv1_weight']['__dtype__'] == '2'
    _, out_types, _ = sym.infer_type(data='float32')
    assert out_types == [np.float32]
    internals = sym.get_internals()
    types = dict(zip(internals.list_outputs(), internals.infer_type(data='float32')[1]))
    assert types['stage1_conv1_output'] == np.float16
    assert types['fc_output'] == np.float16 and types['softmax_output'] == np.float32


@pytest.mark.parametrize('name', ['amp_resnet', 'amp_transformer'])
def test_amp_emulated_gemm(name):
    """MXNet 1.9.1 has no float16 GEMM on the CPU, so make_amp.py ran its float16
    Convolution / FullyConnected / interleaved_matmul nodes in float32 on float16 inputs,
    rounding the result to float16 (what MXNet's GPU GEMMs do by default). The same graph
    run by symgraph matches far more closely than the plain float16 one: what is left
    over there is that rounding, not a wrong operator."""
    prefix = os.path.join(DATA, name)
    sym, arg, aux = mx.model.load_checkpoint(prefix, 0)
    io = _io(name)
    ins = {k[3:]: v for k, v in io.items() if k.startswith('in:')}
    emulated = make_amp.emulate_float16_gemm(mx, sym, ins)
    outs, _ = _run(emulated, arg, aux, io)
    assert_close(outs[0], io['out:0'], 1e-3, 3e-4, name + ' emulated GEMMs')


def test_our_conversion_runs_like_mxnets():
    """symgraph's convert_model of MXNet's float32 ResNet with the checkpoint's parameters
    gives the graph MXNet saved and its output."""
    with open(os.path.join(DATA, 'convert.json')) as f:
        fp32 = mx.sym.load_json(json.dumps(json.load(f)['inputs']['resnet']))
    _, arg, aux = mx.model.load_checkpoint(os.path.join(DATA, 'amp_resnet'), 0)
    sym, arg, aux = amp.convert_model(fp32, arg, aux)
    with open(os.path.join(DATA, 'amp_resnet-symbol.json')) as f:
        assert_same_graph(sym.tojson(remove_amp_cast=False), f.read(), 'convert_model')
    io = _io('amp_resnet')
    outs, _ = _run(sym, arg, aux, io)
    assert_close(outs[0], io['out:0'], 1e-2, 1e-2, 'converted resnet')
