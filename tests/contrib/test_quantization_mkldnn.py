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


def test_concat_inputs_share_one_calibrated_range():
    """MXNet's scale alignment: the calibrated convolutions feeding a quantized concat get
    the union of their ranges (so the concat needs no rescaling)."""
    data = mx.sym.var('data')
    convs = [mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=4, no_bias=True,
                                name='conv%d' % i) for i in range(3)]
    sym = mx.sym.Concat(*convs, dim=1, name='concat')
    rng = np.random.RandomState(0)
    args = {'conv%d_weight' % i: mx.nd.array(rng.uniform(-1, 1, (4, 3, 3, 3)) * (i + 1))
            for i in range(3)}
    x = rng.uniform(0, 1, (4, 3, 6, 6)).astype(np.float32)
    qsym, _, _ = mx.contrib.quant.quantize_model_mkldnn(
        sym, args, {}, label_names=None, calib_mode='naive',
        calib_data=mx.io.NDArrayIter(x, batch_size=4), num_calib_examples=4,
        quantized_dtype='auto', quantize_mode='full')
    ranges = {n['name']: (n['attrs']['min_calib_range'], n['attrs']['max_calib_range'])
              for n in json.loads(qsym.tojson())['nodes'] if n['op'] == '_sg_mkldnn_conv'}
    assert len(ranges) == 3 and len(set(ranges.values())) == 1
    # the union of the three convolutions' ranges
    outs = [_conv_np(x, args['conv%d_weight' % i].asnumpy()) for i in range(3)]
    lo, hi = list(ranges.values())[0]
    assert float(lo) == pytest.approx(min(o.min() for o in outs), rel=1e-4)
    assert float(hi) == pytest.approx(max(o.max() for o in outs), rel=1e-4)


def _conv_np(x, w):
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((x.shape[0], w.shape[0]) + x.shape[2:])
    for i in range(3):
        for j in range(3):
            out += np.einsum('nchw,fc->nfhw', xp[:, :, i:i + x.shape[2], j:j + x.shape[3]],
                             w[:, :, i, j])
    return out
