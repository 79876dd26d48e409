"""The models PyTorch's exporter wrote that the onnx package ships with its backend tests
(onnx/backend/test/data/pytorch-converted and pytorch-operator: model.onnx, inputs and
PyTorch's outputs), imported by mx.onnx.import_model and run here."""
import glob
import os

import numpy as np
import pytest

import symgraph as mx

onnx = pytest.importorskip('onnx')

DATA = os.path.join(os.path.dirname(onnx.__file__), 'backend', 'test', 'data')
DIRS = sorted(glob.glob(os.path.join(DATA, 'pytorch-converted', 'test_*')) +
              glob.glob(os.path.join(DATA, 'pytorch-operator', 'test_*')))
def _tensor(path):
    t = onnx.TensorProto()
    with open(path, 'rb') as f:
        t.ParseFromString(f.read())
    return onnx.numpy_helper.to_array(t)


def _check(d):
    model = onnx.load(os.path.join(d, 'model.onnx'))
    data = sorted(glob.glob(os.path.join(d, 'test_data_set_*')))[0]
    inits = {t.name for t in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in inits]
    inputs = [_tensor(p) for p in sorted(glob.glob(os.path.join(data, 'input_*.pb')))]
    want = [_tensor(p) for p in sorted(glob.glob(os.path.join(data, 'output_*.pb')))]
    sym, args, aux = mx.onnx.import_model(os.path.join(d, 'model.onnx'))
    used = set(sym.list_arguments())
    arrays = dict(args, **{n: mx.nd.array(v, dtype=v.dtype) for n, v in zip(names, inputs)
                           if n in used})
    exe = sym.bind(mx.cpu(), arrays, aux_states=aux, grad_req='null')
    got = [o.asnumpy() for o in exe.forward(is_train=False)]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if w.ndim == 0:
            g = g.reshape(())           # symgraph has no 0-d values: (1,) stands for ()
        assert g.shape == w.shape
        scale = max(float(np.abs(w[np.isfinite(w)]).max()) if np.isfinite(w).any() else 1, 1)
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-4 * scale, equal_nan=True)


@pytest.mark.parametrize('d', DIRS, ids=os.path.basename)
def test_pytorch_written_file(d):
    if os.path.basename(d) in ('test_operator_pow', 'test_operator_sqrt'):
        # their inputs are negative: NaN (and NumPy's warning, an error in this suite)
        with np.errstate(invalid='ignore'):
            _check(d)
    else:
        _check(d)


def test_the_files_are_there():
    if not DIRS:
        pytest.skip('this onnx package ships no backend test data')
    assert len(DIRS) > 100


@pytest.mark.parametrize('name', ['light_squeezenet', 'light_inception_v1',
                                  'light_shufflenet'])
def test_onnx_light_models_against_onnxruntime(name):
    # the onnx package's opset-9 classics (weights made by ConstantOfShape at run time);
    # inception_v1 pools with asymmetric padding left out of the average
    ort = pytest.importorskip('onnxruntime')
    path = os.path.join(DATA, 'light', name + '.onnx')
    if not os.path.exists(path):
        pytest.skip('this onnx package has no %s' % path)
    model = onnx.load(path)
    inits = {t.name for t in model.graph.initializer}
    rng = np.random.RandomState(0)
    feeds = {i.name: rng.uniform(0, 1, [d.dim_value for d in i.type.tensor_type.shape.dim])
             .astype(np.float32) for i in model.graph.input if i.name not in inits}
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    want = ort.InferenceSession(path, opts, providers=['CPUExecutionProvider']).run(None,
                                                                                    feeds)
    sym, args, aux = mx.onnx.import_model(path)
    arrays = dict(args, **{k: mx.nd.array(v) for k, v in feeds.items()})
    got = sym.bind(mx.cpu(), arrays, aux_states=aux, grad_req='null').forward()
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.asnumpy(), w, rtol=1e-4, atol=1e-6)
