"""Gluon model-zoo networks (random weights) hybridized, exported to MXNet's files, exported
to ONNX from those files, and run by ONNX Runtime against symgraph's forward."""
import os

import numpy as np
import pytest

import symgraph as mx
from symgraph.gluon.model_zoo import vision

pytest.importorskip('onnx')
ort = pytest.importorskip('onnxruntime')

#: (name, constructor kwargs, input size); the first ones are fast, the rest slow
FAST = [('resnet18_v1', 64), ('mobilenet1.0', 64), ('mobilenetv2_1.0', 64)]
SLOW = [('resnet50_v2', 64), ('vgg11', 64), ('vgg11_bn', 64), ('alexnet', 224),
        ('densenet121', 224), ('inceptionv3', 299), ('resnet18_v2', 64),
        ('squeezenet1.0', 224), ('squeezenet1.1', 224)]


def _export_and_compare(tmp_path, name, size, batch=2):
    import onnx
    mx.random.seed(0)
    net = vision.get_model(name, classes=10)
    net.initialize(mx.init.Xavier(magnitude=2.0))
    net.hybridize()
    x = np.random.RandomState(0).uniform(-1, 1, (batch, 3, size, size)).astype(np.float32)
    net(mx.nd.array(x))         # the deferred shapes
    # BatchNorm running statistics that are not 0/1, so that a wrong fold shows
    for p_name, p in net.collect_params().items():
        rs = np.random.RandomState(len(p_name))
        if p_name.endswith('running_var'):
            p.set_data(mx.nd.array(rs.uniform(0.5, 2.0, p.shape)))
        elif p_name.endswith(('running_mean', 'beta')):
            p.set_data(mx.nd.array(rs.uniform(-0.2, 0.2, p.shape)))
    ref = net(mx.nd.array(x)).asnumpy()
    prefix = str(tmp_path / name.replace('.', '_'))
    net.export(prefix)
    onnx_file = mx.onnx.export_model(prefix + '-symbol.json', prefix + '-0000.params',
                                     [x.shape], np.float32,
                                     onnx_file_path=prefix + '.onnx')
    assert os.path.exists(onnx_file)
    onnx.checker.check_model(onnx_file)
    sess = ort.InferenceSession(onnx_file, providers=['CPUExecutionProvider'])
    got, = sess.run(None, {sess.get_inputs()[0].name: x})
    scale = float(np.abs(ref).max())
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4 * max(1.0, scale))


@pytest.mark.parametrize('name,size', FAST, ids=[n for n, _ in FAST])
def test_model_zoo_export_matches_onnxruntime(tmp_path, name, size):
    _export_and_compare(tmp_path, name, size)


@pytest.mark.slow
@pytest.mark.parametrize('name,size', SLOW, ids=[n for n, _ in SLOW])
def test_model_zoo_export_matches_onnxruntime_slow(tmp_path, name, size):
    _export_and_compare(tmp_path, name, size, batch=1)
