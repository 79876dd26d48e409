"""MXNet 1.9.1's example networks, as MXNet builds their deploy graphs
(tests/golden/data/onnx_examples, written by tests/golden/make_onnx_example_graphs.py),
exported to ONNX and run by ONNX Runtime against symgraph's forward with seeded weights:
SSD (VGG16-reduced, 300), Faster R-CNN's VGG16 test graph (MultiProposal, ROIPooling),
the LSTM-OCR network CTC trains (without the loss) and the bucketing LSTM language model.
"""
import os

import numpy as np
import pytest

import symgraph as mx
from onnx_special_check import export, forward, run_onnx

pytest.importorskip('onnx')
pytest.importorskip('onnxruntime')

DATA = os.path.join(os.path.dirname(__file__), '..', 'golden', 'data', 'onnx_examples')


def _load(name):
    return mx.sym.load(os.path.join(DATA, name + '-symbol.json'))


def _params(sym, shapes, rng, skip=()):
    """Seeded weights of a sensible scale: He-normal weights, small biases, L2Normalization
    scales of 20 (SSD's), the packed RNN vector uniform in +-0.3."""
    arg_shapes, _, aux_shapes = sym.infer_shape(**shapes)
    out = {}
    for name, shape in zip(sym.list_arguments(), arg_shapes):
        if name in shapes or name in skip:
            continue
        if name.endswith('_weight') and len(shape) > 1:
            fan_in = int(np.prod(shape[1:]))
            v = rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)
        elif name.endswith('_bias'):
            v = 0.01 * rng.standard_normal(shape)
        elif name.endswith('_scale'):
            v = np.full(shape, 20.0)
        else:
            v = rng.uniform(-0.3, 0.3, shape)
        out[name] = v.astype(np.float32)
    for name, shape in zip(sym.list_auxiliary_states(), aux_shapes):
        out[name] = (np.ones(shape) if name.endswith('var') else np.zeros(shape)) \
            .astype(np.float32)
    return out


def _compare(ref, got, rtol=1e-4, scale=1e-5):
    """Every output within ``rtol`` and an absolute tolerance of ``scale`` times its
    largest magnitude (deep float32 networks: 1e-4, the summation orders of two
    convolution libraries differ)."""
    assert len(ref) == len(got)
    for r, o in zip(ref, got):
        assert r.shape == o.shape and r.dtype == o.dtype
        np.testing.assert_allclose(o, r, rtol=rtol,
                                   atol=scale * max(1.0, float(np.abs(r).max())))


def _compare_detections(ref, got, share=0.98):
    """Detections (1, A, 6) of a deep float32 network: the kept rows as sets. Scores
    that differ in the last float32 bits between the two runtimes may swap two rows
    or, where the boxes overlap, which of them survives; all but a small share of the
    kept rows must agree (same id, score and box within 1e-3)."""
    r = ref[0][ref[0][:, 0] >= 0]
    o = got[0][got[0][:, 0] >= 0]
    assert r.shape[0] > 10 and abs(r.shape[0] - o.shape[0]) <= (1 - share) * r.shape[0]
    dist = np.abs(r[:, None, :] - o[None, :, :]).max(axis=-1)
    matched = (dist.min(axis=1) < 1e-3).mean()
    assert matched >= share, matched


@pytest.mark.slow
def test_ssd_vgg16_reduced_300():
    rng = np.random.RandomState(0)
    sym = _load('ssd_vgg16_reduced_300')
    shapes = {'data': (1, 3, 300, 300)}
    params = _params(sym, shapes, rng, skip=('label',))
    inputs = {'data': rng.uniform(-1, 1, shapes['data']).astype(np.float32)}
    ref = forward(sym, inputs, params)
    got = run_onnx(export(sym, inputs, params), inputs)
    _compare_detections(ref[0], got[0])


@pytest.mark.slow
def test_faster_rcnn_vgg16_test_graph():
    rng = np.random.RandomState(1)
    sym = _load('rcnn_vgg16_test')
    shapes = {'data': (1, 3, 192, 256), 'im_info': (1, 3)}
    params = _params(sym, shapes, rng)
    inputs = {'data': rng.uniform(-1, 1, shapes['data']).astype(np.float32),
              'im_info': np.array([[192, 240, 1.0]], np.float32)}
    ref = forward(sym, inputs, params)
    # MaxRoiPool runs in ONNX Runtime 1.32 up to opset 21
    got = run_onnx(export(sym, inputs, params, opset=21), inputs)
    _compare(ref, got, scale=1e-4)


def test_ctc_lstm_ocr_forward():
    rng = np.random.RandomState(2)
    sym = _load('ctc_lstm_ocr')
    n = 3
    shapes = {'data': (n, 10, 12)}
    for layer in range(2):
        shapes['l%d_init_c' % layer] = shapes['l%d_init_h' % layer] = (n, 16)
    params = _params(sym, shapes, rng)
    inputs = {k: rng.standard_normal(s).astype(np.float32) for k, s in shapes.items()}
    ref = forward(sym, inputs, params)
    got = run_onnx(export(sym, inputs, params), inputs)
    _compare(ref, got)


def test_rnn_bucketing_language_model():
    rng = np.random.RandomState(3)
    sym = _load('rnn_bucketing_lm')
    shapes = {'data': (4, 8), 'softmax_label': (4, 8)}
    params = _params(sym, shapes, rng)
    # the label reaches SoftmaxOutput through a Reshape: it is given (and ignored)
    inputs = {'data': rng.randint(0, 50, (4, 8)).astype(np.float32),
              'softmax_label': np.zeros((4, 8), np.float32)}
    ref = forward(sym, inputs, params)
    _compare(ref, run_onnx(export(sym, inputs, params), inputs))
