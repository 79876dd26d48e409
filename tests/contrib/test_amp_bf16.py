"""bfloat16 AMP (``mx.contrib.amp`` with ``target_dtype='bfloat16'``) against MXNet 1.9.1's
CPU build (tests/golden/make_amp_bf16.py): ``convert_symbol`` / ``convert_model`` give
MXNet's graphs node for node, refuse what MXNet refuses, ``amp.init`` builds MXNet's
graphs, and a converted checkpoint MXNet wrote loads and runs close to MXNet's bfloat16
outputs."""
import json
import os

import numpy as np
import pytest

import symgraph as mx
from symgraph.base import bfloat16, is_bfloat16
from symgraph.contrib import amp
from symgraph.contrib.amp import amp as amp_module
from test_golden import assert_same_graph

pytest.importorskip('ml_dtypes')

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'golden', 'data',
                    'amp_bf16')
with open(os.path.join(DATA, 'convert.json')) as _f:
    CONVERT = json.load(_f)
with open(os.path.join(DATA, 'init.json')) as _f:
    INIT = json.load(_f)
BF = 'bfloat16'


def _name(dtype):
    """A dtype's name, 'bfloat16' for bfloat16 however spelt (MXNet's NDArray.dtype:
    np.dtype([('bfloat16', np.uint16)]), named 'void16')."""
    return BF if is_bfloat16(dtype) else np.dtype(dtype).name


def _graph(name):
    return mx.sym.load_json(json.dumps(CONVERT['inputs'][name]))


def _kwargs(rec):
    kw = dict(rec['kwargs'])
    if 'conditional_fp32_ops' in kw:
        kw['conditional_fp32_ops'] = [tuple(c) for c in kw['conditional_fp32_ops']]
    return kw


def _params(rec, seed=0):
    rng = np.random.RandomState(seed)
    return ({k: mx.nd.array(rng.normal(size=s)) for k, s in rec['params']['arg'].items()},
            {k: mx.nd.array(rng.uniform(0.5, 1, s)) for k, s in rec['params']['aux'].items()})


def test_the_golden_file_covers_graphs_models_and_refusals():
    cases = CONVERT['cases']
    assert {'resnet_excluded', 'resnet_model_optional', 'others', 'foreach_rnn'} <= set(cases)
    assert sum('error' in rec for rec in cases.values()) >= 2
    assert sum('error' not in rec for rec in cases.values()) >= 10


@pytest.mark.parametrize('case', sorted(c for c, r in CONVERT['cases'].items()
                                        if 'error' not in r))
def test_conversion_matches_mxnet(case):
    rec = CONVERT['cases'][case]
    sym = _graph(rec['graph'])
    if rec['function'] == 'symbol':
        out = amp.convert_symbol(sym, target_dtype=BF, **_kwargs(rec))
    else:
        arg, aux = _params(rec)
        out, arg2, aux2 = amp.convert_model(sym, arg, aux, target_dtype=BF, **_kwargs(rec))
        dtypes = {'arg': {k: _name(v.dtype) for k, v in arg2.items()},
                  'aux': {k: _name(v.dtype) for k, v in aux2.items()}}
        # (MXNet's bfloat16 is the NumPy type [('bfloat16', uint16)], named 'void16')
        assert dtypes == {kind: {k: BF if t == 'void16' else t for k, t in names.items()}
                          for kind, names in rec['param_dtypes'].items()}
        for k, v in arg2.items():
            if is_bfloat16(v.dtype):
                # rounded to nearest even, as MXNet's amp_cast
                want = arg[k].asnumpy().astype(bfloat16())
                np.testing.assert_array_equal(v.asnumpy().view(np.uint16),
                                              want.view(np.uint16))
    assert_same_graph(out.tojson(remove_amp_cast=False), rec['output'], case)
    assert_same_graph(out.tojson(), rec['output_removed'], case + ' (casts removed)')


@pytest.mark.parametrize('case', sorted(c for c, r in CONVERT['cases'].items() if 'error' in r))
def test_conversion_refused_where_mxnet_refuses(case):
    """MXNet's bf16 lists leave Concat and the interleaved matmuls out of the widest-type
    casts: a graph mixing bfloat16 and float32 inputs there fails its type inference."""
    rec = CONVERT['cases'][case]
    op_name = rec['error'].split('Error in operator ')[1].split(':')[0]
    with pytest.raises(TypeError, match=op_name):
        amp.convert_symbol(_graph(rec['graph']), target_dtype=BF, **_kwargs(rec))


def test_lists_are_the_bfloat16_ones():
    assert amp.list_lp16_ops(BF) == ['Convolution', 'FullyConnected']
    assert 'BatchNorm' in amp.list_lp16_fp32_ops(BF)
    assert 'Concat' not in amp.list_widest_type_cast(BF)
    assert set(amp.list_lp16_use_fp32_params(BF)) >= {'BatchNorm'}


def test_init_builds_mxnets_graphs():
    import make_amp
    try:
        amp.init(target_dtype=BF)
        for graph in (make_amp.resnet, make_amp.mixed):
            with mx.name.NameManager():
                got = graph(mx).tojson(remove_amp_cast=False)
            assert_same_graph(got, INIT[graph.__name__], graph.__name__)
        # NDArrays are cast as MXNet casts them on the CPU: float32 and bfloat16
        x = mx.nd.ones((2, 3))
        w = mx.nd.ones((4, 3))
        y = mx.nd.FullyConnected(x, w, num_hidden=4, no_bias=True)
        assert is_bfloat16(y.dtype)
        np.testing.assert_array_equal(y.asnumpy().astype(np.float32), np.full((2, 4), 3.0))
    finally:
        amp_module._uninit()


def test_mxnet_checkpoint_runs_close_to_mxnets_bfloat16_outputs():
    """The resnet MXNet converted (bfloat16 weights in the .params file) and saved with
    its casts: loaded and run here, the outputs are MXNet's within bfloat16 rounding of
    the layers (both compute bf16 products with float32 accumulation)."""
    sym, arg, aux = mx.model.load_checkpoint(os.path.join(DATA, 'resnet_bf16'), 0)
    assert {_name(v.dtype) for v in arg.values()} == {'bfloat16', 'float32'}
    io = np.load(os.path.join(DATA, 'resnet_bf16-io.npz'))
    args = dict(arg, data=mx.nd.array(io['in:data']), softmax_label=mx.nd.zeros((2,)))
    exe = sym.bind(mx.cpu(), {k: args[k] for k in sym.list_arguments()},
                   aux_states=aux)
    out = exe.forward(is_train=False)[0].asnumpy()
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, io['out:0'], rtol=0, atol=0.03)
    # and both are the float32 model's within bfloat16's precision
    np.testing.assert_allclose(out, io['f32:0'], rtol=0, atol=0.06)


def test_converted_model_trains_in_bfloat16_with_float32_gradients_flowing():
    """A converted model's bfloat16 weights get bfloat16 gradients (computed in float32
    and rounded), close to the float32 model's."""
    rec = CONVERT['cases']['resnet_model']
    sym = _graph('resnet')
    arg, aux = _params(rec)
    csym, carg, caux = amp.convert_model(sym, arg, aux, target_dtype=BF,
                                         cast_optional_params=True)
    rng = np.random.RandomState(5)
    data = mx.nd.array(rng.normal(size=(2, 3, 10, 10)))
    label = mx.nd.array([1, 3])
    grads = {}
    for s, a in ((sym, arg), (csym, carg)):
        args = dict(a, data=data, softmax_label=label)
        args = {k: args[k] for k in s.list_arguments()}
        g = {k: mx.nd.zeros(v.shape, dtype=v.dtype) for k, v in args.items()
             if k not in ('data', 'softmax_label')}
        exe = s.bind(mx.cpu(), args, args_grad=g, aux_states=dict(aux if s is sym else caux))
        exe.forward(is_train=True)
        exe.backward()
        grads[s is sym] = {k: v.asnumpy().astype(np.float32) for k, v in g.items()}
    assert is_bfloat16(carg['fc_weight'].dtype)
    cos = {}
    for k, ref in grads[True].items():
        got = grads[False][k].ravel()
        ref = ref.ravel()
        cos[k] = got @ ref / (np.linalg.norm(got) * np.linalg.norm(ref) + 1e-12)
    # the weights' gradients point where the float32 ones do; a BatchNorm gamma's, a sum
    # of terms that nearly cancel, less so
    assert min(v for k, v in cos.items() if k.endswith('weight')) > 0.98, cos
    assert min(cos.values()) > 0.85, cos


with open(os.path.join(DATA, 'casting.json')) as _f:
    CASTING = json.load(_f)


@pytest.mark.parametrize('case', sorted(CASTING))
def test_cast_optional_params_infers_unknown_inputs_as_mxnet(case):
    """MXNet's AMPInferUnknown: an input of unknown type that casts read takes their type
    (the first of two different ones leaves it as inferred); the variable inputs of an
    amp_multicast of variables only take bfloat16."""
    rec = CASTING[case]
    sym = mx.sym.load_json(json.dumps(rec['input']))
    out = amp.convert_symbol(sym, target_dtype=BF, cast_optional_params=True,
                             **rec['kwargs'])
    assert_same_graph(out.tojson(remove_amp_cast=False), rec['output'], case)


def test_convert_hybrid_block_to_bfloat16_runs_close_to_float32():
    from symgraph.gluon import nn
    net = nn.HybridSequential()
    net.add(nn.Conv2D(8, 3, padding=1, in_channels=3), nn.BatchNorm(in_channels=8),
            nn.Activation('relu'), nn.Dense(5, in_units=8 * 6 * 6))
    net.initialize(mx.init.Xavier())
    net.hybridize()
    x = mx.nd.array(np.random.RandomState(7).normal(size=(2, 3, 6, 6)))
    ref = net(x).asnumpy()
    conv = amp.convert_hybrid_block(net, target_dtype=BF, cast_optional_params=True)
    params = conv.collect_params()
    assert any(is_bfloat16(p.data().dtype) for p in params.values())
    got = conv(x).asnumpy()
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, ref, rtol=0, atol=0.05 * np.abs(ref).max())
