"""gluon.model_zoo.vision against MXNet 1.9.1 (tests/golden/gluon_zoo_probes.py): every
architecture's traced graph (its JSON, byte for byte), parameter names, shapes, saved names
and output shape; outputs on fixed parameters (MXNet's own ``.params`` file for
mobilenet0.25); ``pretrained=True`` from a local root, and its errors; the fine-tuning
example. Nothing is downloaded."""
import json
import logging
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import symgraph as mx
from symgraph.gluon.model_zoo import model_store, vision
import gluon_zoo_probes as probes

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'golden', 'data',
                    'gluon_zoo')
OUTPUTS = np.load(os.path.join(DATA, 'zoo.npz'))
with open(os.path.join(DATA, 'zoo_names.json')) as _f:
    NAMES = json.load(_f)
MOBILENET_FILE = os.path.join(DATA, 'mobilenet0.25.params')

#: cases whose parameters and forward take over 5 seconds here
SLOW = {'resnet50_v1', 'resnet50_v2', 'vgg11', 'vgg11_bn', 'alexnet', 'densenet121'}


@pytest.mark.parametrize('name', probes.ALL_MODELS)
def test_graph_parameter_names_shapes_and_output_shape_equal_mxnets(name):
    got = probes.zoo_names(mx, name)
    want = NAMES[name]
    # the traced graph's JSON is MXNet's byte for byte (operators, names, attributes)
    assert got['json_sha1'] == want['json_sha1']
    assert got['params'] == want['params']
    assert got['shapes'] == want['shapes']
    assert got['saved'] == want['saved']
    assert got['out_shape'] == want['out_shape']


@pytest.mark.parametrize('case', [pytest.param(c, marks=pytest.mark.slow) if c in SLOW else c
                                  for c in sorted(probes.ZOO_CASES)])
def test_outputs_on_fixed_parameters_equal_mxnets(case):
    net = probes.zoo_net(mx, vision, case)
    got = probes.zoo_output(mx, net, case)
    np.testing.assert_allclose(got, OUTPUTS[case], rtol=1e-4, atol=2e-6 * np.abs(
        OUTPUTS[case]).max())


def test_hybridized_equals_imperative():
    net = probes.zoo_net(mx, vision, 'resnet18_v1_thumbnail')
    want = probes.zoo_output(mx, net, 'resnet18_v1_thumbnail')
    net.hybridize()
    got = probes.zoo_output(mx, net, 'resnet18_v1_thumbnail')
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got, OUTPUTS['resnet18_v1_thumbnail'], rtol=1e-4, atol=1e-6)


# ----------------------------------------------------------------------------- pretrained
def _root_with_mobilenet(tmp_path):
    root = tmp_path / 'models'
    root.mkdir()
    shutil.copy(MOBILENET_FILE, root / 'mobilenet0.25-9f83e440.params')
    return str(root)


def test_pretrained_reads_mxnets_file_from_root(tmp_path, caplog):
    root = _root_with_mobilenet(tmp_path)
    with caplog.at_level(logging.WARNING, logger=model_store.__name__):
        net = vision.get_model('mobilenet0.25', pretrained=True, root=root, ctx=mx.cpu())
    # MXNet's file, not the published one: used, with a warning naming it
    assert 'not the published mobilenet0.25' in caplog.text
    got = probes.zoo_output(mx, net, 'mobilenet0.25')
    np.testing.assert_allclose(got, OUTPUTS['mobilenet0.25'], rtol=1e-4, atol=1e-6)
    # the constructor itself, and MXNET_HOME as the default root
    assert isinstance(vision.mobilenet0_25(pretrained=True, root=root), vision.MobileNet)


def test_default_root_is_mxnet_home_models(tmp_path, monkeypatch):
    monkeypatch.setenv('MXNET_HOME', str(tmp_path))
    _root_with_mobilenet(tmp_path)
    path = model_store.get_model_file('mobilenet0.25')
    assert path == os.path.join(str(tmp_path), 'models', 'mobilenet0.25-9f83e440.params')
    vision.get_model('mobilenet0.25', pretrained=True)


def test_missing_file_names_file_and_url(tmp_path, monkeypatch):
    monkeypatch.delenv('MXNET_GLUON_REPO', raising=False)
    with pytest.raises(FileNotFoundError) as err:
        vision.get_model('resnet18_v1', pretrained=True, root=str(tmp_path))
    msg = str(err.value)
    assert os.path.join(str(tmp_path), 'resnet18_v1-a0666292.params') in msg
    assert ('https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/gluon/models/'
            'resnet18_v1-a0666292.zip') in msg
    monkeypatch.setenv('MXNET_GLUON_REPO', 'http://mirror.example/x')
    with pytest.raises(FileNotFoundError, match='http://mirror.example/x/gluon/models/'
                                                'vgg16_bn-7f01cf05.zip'):
        vision.vgg16_bn(pretrained=True, root=str(tmp_path))
    assert not os.listdir(str(tmp_path))      # nothing downloaded or created


def test_model_store_names():
    assert model_store.short_hash('squeezenet1.1') == '33ba0f93'
    assert model_store.model_file_name('mobilenetv2_0.5') == 'mobilenetv2_0.5-aabd26cd.params'
    with pytest.raises(ValueError, match='resnet19_v1 is not available'):
        model_store.get_model_file('resnet19_v1')
    # every get_model name with published parameters is in the table, and vice versa
    assert sorted(model_store._model_sha1) == sorted(probes.ALL_MODELS)


def test_purge(tmp_path):
    root = _root_with_mobilenet(tmp_path)
    (tmp_path / 'models' / 'notes.txt').write_text('kept')
    model_store.purge(root)
    assert os.listdir(root) == ['notes.txt']


def test_get_model_errors_and_kwargs():
    with pytest.raises(ValueError, match='(?s)resnet19_v1 is not supported.*resnet18_v1'):
        vision.get_model('resnet19_v1')
    net = vision.get_model('ResNet18_V2', classes=7, prefix='r_')
    _, out_shapes, _ = net(mx.sym.var('data')).infer_shape(data=(1, 3, 32, 32))
    assert out_shapes == [(1, 7)]
    assert next(iter(net.collect_params())) == 'r_batchnorm0_gamma'
    with pytest.raises(ValueError, match='version'):
        vision.get_resnet(3, 18)
    with pytest.raises(ValueError, match='SqueezeNet version 1.2'):
        vision.SqueezeNet('1.2')
    with pytest.raises(ValueError, match='Invalid number of layers: 12'):
        vision.get_vgg(12)


def test_inception_v3_builds_and_gives_class_scores():
    net = vision.inception_v3(classes=11)
    sym = net(mx.sym.var('data'))
    _, out_shapes, _ = sym.infer_shape(data=(2, 3, 299, 299))
    assert out_shapes == [(2, 11)]


@pytest.mark.slow
def test_finetune_example_loads_pretrained_and_trains():
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'examples',
                          'gluon', 'finetune.py')
    proc = subprocess.run([sys.executable, script, '--steps', '40'], capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert re.search(r'^loaded mobilenet0\.25 from \S+mobilenet0\.25-9f83e440\.params '
                     r'\(symgraph\)$', proc.stdout, re.M)
    first, last = map(float, re.search(r'^loss fell from ([\d.]+) to ([\d.]+)$',
                                       proc.stdout, re.M).groups())
    assert last < first
    assert 'not the published mobilenet0.25' in proc.stderr
