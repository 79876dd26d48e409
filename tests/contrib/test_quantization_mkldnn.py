"""Models written by MXNet 1.9.1's oneDNN int8 flow load and run here
(tests/golden/make_quantization.py make_mkldnn_model: a CIFAR-style ResNet through
``get_backend_symbol('MKLDNN')`` and ``quantize_model_mkldnn`` with naive and entropy
calibration): the fused ``_sg_mkldnn_conv`` / ``_sg_mkldnn_fully_connected`` nodes with
their subgraphs, the quantized ones bit for bit against MXNet's outputs."""
import json
import os

import numpy as np
import pytest

import symgraph as mx

DATA = os.path.join(os.path.dirname(__file__), '..', 'golden', 'data', 'quantization')
with open(os.path.join(DATA, 'mkldnn_model.json')) as _f:
    DOC = json.load(_f)
NPZ = np.load(os.path.join(DATA, 'mkldnn_model.npz'))
TEST = NPZ['test']


def _params(prefix):
    return {k[len(prefix):]: mx.nd.array(NPZ[k], dtype=NPZ[k].dtype) for k in NPZ.files
            if k.startswith(prefix)}


def _run(js, args, auxs):
    sym = mx.sym.load_json(js)
    exe = sym.simple_bind(mx.cpu(), grad_req='null', type_dict={'data': 'float32'},
                          data=TEST.shape)
    for k, v in args.items():
        if k in exe.arg_dict:
            exe.arg_dict[k][:] = v
    for k, v in auxs.items():
        if k in exe.aux_dict:
            exe.aux_dict[k][:] = v
    return exe.forward(is_train=False, data=mx.nd.array(TEST))[0].asnumpy()


def test_fused_float_model_matches_mxnet():
    out = _run(DOC['fused'], _params('arg:'), _params('aux:'))
    np.testing.assert_allclose(out, NPZ['out:fused'], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out, NPZ['out:fp32'], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('mode', ['naive', 'entropy'])
def test_quantized_model_matches_mxnet_exactly(mode):
    """Every int8 layer equal to MXNet's, hence the float output too (tolerance 0)."""
    out = _run(DOC[mode], _params(mode + ':arg:'), _params('aux:'))
    np.testing.assert_array_equal(out, NPZ['out:' + mode])
    # (the network's weights are random: entropy's clipped ranges move its near-equal
    # class scores, in MXNet as here; agreement with float32 is tested on a trained one)


def test_quantized_json_round_trips():
    """MXNet's file written back unchanged (inputs in MXNet's order: the moving statistics
    of a fused batch norm before the ranges, the subgraphs kept)."""
    for key in ('fused', 'naive'):
        sym = mx.sym.load_json(DOC[key])
        ours, theirs = json.loads(sym.tojson()), json.loads(DOC[key])
        assert [(n['op'], n['name'], n.get('attrs'), [i[:2] for i in n['inputs']])
                for n in ours['nodes']] == \
            [(n['op'], n['name'], n.get('attrs'), [i[:2] for i in n['inputs']])
             for n in theirs['nodes']]
        assert [len(n.get('subgraphs', ())) for n in ours['nodes']] == \
            [len(n.get('subgraphs', ())) for n in theirs['nodes']]
        assert sym.list_auxiliary_states() == [n for n in sym.list_inputs()
                                               if n.endswith(('moving_mean', 'moving_var'))]


def _structure(js):
    doc = json.loads(js)
    return [(n['op'], n['name'], n.get('attrs'), [i[:2] for i in n['inputs']],
             [[(m['op'], m['name'], m.get('attrs'), [i[:2] for i in m['inputs']])
               for m in g['nodes']] for g in n.get('subgraphs', [])])
            for n in doc['nodes']]


def test_backend_symbol_fuses_as_mxnet():
    """get_backend_symbol('MKLDNN'): MXNet's fused graph node for node (names, attributes,
    subgraphs with their cut Variables)."""
    sym = mx.sym.load_json(DOC['fp32'])
    assert _structure(sym.get_backend_symbol('MKLDNN').tojson()) == _structure(DOC['fused'])
    with pytest.raises(KeyError, match='backend'):
        sym.get_backend_symbol('TensorRT')


@pytest.mark.parametrize('mode', ['naive', 'entropy'])
def test_quantize_model_mkldnn_writes_mxnets_model(mode):
    """quantize_model_mkldnn on MXNet's parameters and calibration batches: MXNet's
    quantized graph (thresholds to its six decimals included), its parameter names, and
    its outputs bit for bit."""
    sym = mx.sym.load_json(DOC['fp32'])
    calib = NPZ['calib'].reshape((-1,) + TEST.shape[1:])
    it = mx.io.NDArrayIter(calib, batch_size=TEST.shape[0])
    qsym, qargs, qauxs = mx.contrib.quant.quantize_model_mkldnn(
        sym, _params('arg:'), _params('aux:'), label_names=None, calib_mode=mode,
        calib_data=it, num_calib_examples=16, quantized_dtype='auto')
    assert _structure(qsym.tojson()) == _structure(DOC[mode])
    assert sorted(qargs) == sorted(_params(mode + ':arg:'))
    out = _run(qsym.tojson(), qargs, qauxs)
    np.testing.assert_array_equal(out, NPZ['out:' + mode])
