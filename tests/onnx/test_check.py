"""The ONNX proof: check.verify, export_model(verify=True) and ``python -m symgraph
onnx-check`` (onnx.checker, ONNX Runtime against symgraph's forward, per-node search)."""
import os

import numpy as np
import pytest

import symgraph as mx

onnx = pytest.importorskip('onnx')
pytest.importorskip('onnxruntime')

from symgraph.onnx import check, onnx_check  # noqa: E402
from symgraph.onnx._registry import CONVERTERS  # noqa: E402

DATA = os.path.join(os.path.dirname(__file__), '..', 'golden', 'data', 'onnx')
SYMBOL = os.path.join(DATA, 'cnn-symbol.json')
PARAMS = os.path.join(DATA, 'cnn-0000.params')
SHAPE = {'data': (2, 3, 16, 16)}
NODES = ['conv0', 'bn0', 'relu0', 'pool0', 'conv1', 'bn1', 'relu1', 'pool1', 'flat', 'fc',
         'prob']


def test_verify_per_node_agrees_on_an_mxnet_checkpoint():
    report, _ = onnx_check.run(SYMBOL, PARAMS, SHAPE, per_node=True)
    assert report.ok and report.checker_error is None and report.first_bad is None
    assert [r.name for r in report.outputs] == ['prob']
    assert [r.name for r in report.nodes] == NODES      # every node, in topological order
    assert all(r.max_abs < 1e-5 for r in report.nodes)
    text = report.summary()
    assert 'max abs diff' in text and 'every node agrees' in text and text.endswith('OK')


def _tampered_model(initializer, factor):
    sym, args, aux = mx.model.load_checkpoint(os.path.join(DATA, 'cnn'), 0)
    params = dict(args, **aux)
    model = mx.onnx.export.export_onnx_model(sym, params, [SHAPE['data']])
    for t in model.graph.initializer:
        if t.name == initializer:
            value = onnx.numpy_helper.to_array(t) * factor
            t.CopyFrom(onnx.numpy_helper.from_array(value.astype(np.float32), t.name))
    return model, sym, params


def test_per_node_names_the_first_node_that_differs():
    model, sym, params = _tampered_model('bn1_gamma', 1.5)
    names = onnx_check.export_names(sym, check._param_arrays(params), 13)
    report = check.verify(model, sym, params, SHAPE, per_node=True, names=names)
    assert not report.ok
    assert report.first_bad.name == 'bn1' and report.first_bad.node == 'bn1 (BatchNorm)'
    # the nodes before it agree, the output differs
    before = report.nodes[:report.nodes.index(report.first_bad)]
    assert [r.name for r in before] == NODES[:5] and all(r.ok for r in before)
    assert not report.outputs[0].ok
    assert 'first node that differs: bn1 (BatchNorm)' in report.summary()
    with pytest.raises(check.OnnxMismatchError, match='MISMATCH'):
        report.raise_if_mismatch()


def test_per_node_needs_the_names():
    model, sym, params = _tampered_model('fc_bias', 1.0)
    with pytest.raises(ValueError, match='names'):
        check.verify(model, sym, params, SHAPE, per_node=True)


def test_checker_failure_is_reported():
    model, sym, params = _tampered_model('fc_bias', 1.0)
    model.graph.node[0].input.append('')          # Conv with an empty 4th input
    model.graph.node[0].input.append('no_such_tensor')
    assert check._checker(model)


def test_export_model_verify(tmp_path, monkeypatch):
    sym, args, aux = mx.model.load_checkpoint(os.path.join(DATA, 'cnn'), 0)
    path = str(tmp_path / 'cnn.onnx')
    assert mx.onnx.export_model(sym, [args, aux], [SHAPE['data']], onnx_file_path=path,
                                verify=True) == path
    # a converter that writes the wrong operator is caught
    relu = CONVERTERS['Activation']

    def wrong(g, node):
        if g.attr(node, 'act_type') == 'relu':
            g.add('Sigmoid', g.inputs(node), g.outputs(node))
        else:
            relu(g, node)
    monkeypatch.setitem(CONVERTERS, 'Activation', wrong)
    with pytest.raises(check.OnnxMismatchError, match='prob'):
        mx.onnx.export_model(sym, [args, aux], [SHAPE['data']], onnx_file_path=path,
                             verify=True)


def test_compare_rows():
    r = check.compare('y', np.ones((2, 3), np.float32), np.ones((2, 3), np.float32) + 1e-6)
    assert r.ok and r.max_abs == pytest.approx(1e-6, rel=0.1)
    assert not check.compare('y', np.ones(3), np.ones(4)).ok
    r = check.compare('y', np.ones((1,)), np.ones(()))          # same values, other shape
    assert r.ok and 'symgraph shape' in r.note
    assert not check.compare('i', np.array([1, 2]), np.array([1, 3])).ok
    assert not check.compare('y', np.array([np.nan, 1.0]), np.array([0.0, 1.0])).ok
    assert check.compare('y', np.array([np.inf, 1.0]), np.array([np.inf, 1.0])).ok
    assert not check.compare('y', np.array([10.0]), np.array([10.1]), rtol=1e-4).ok


def test_seeded_inputs_are_reproducible():
    a = check.seeded_inputs({'x': (2, 3), 'i': (4,)}, {'i': np.int64}, seed=3)
    b = check.seeded_inputs({'x': (2, 3), 'i': (4,)}, {'i': np.int64}, seed=3)
    np.testing.assert_array_equal(a['x'], b['x'])
    assert a['i'].dtype == np.int64 and a['x'].dtype == np.float32


def _cli(argv, capsys):
    from symgraph.__main__ import main
    rc = main(argv)
    return rc, capsys.readouterr()


def test_onnx_check_command(tmp_path, capsys):
    out = str(tmp_path / 'cnn.onnx')
    rc, cap = _cli(['onnx-check', SYMBOL, PARAMS, '--shape', 'data=2,3,16,16', '-o', out,
                    '--per-node', '--opset', '13'], capsys)
    assert rc == 0, cap.err
    assert 'onnx.checker: ok' in cap.out and 'conv0 (Convolution)' in cap.out
    assert 'every node agrees' in cap.out and 'OK' in cap.out
    model = onnx.load(out)
    assert [o.version for o in model.opset_import if o.domain == ''] == [13]


def test_onnx_check_command_mismatch_and_errors(tmp_path, capsys, monkeypatch):
    def wrong(g, node):
        g.add('Identity', g.inputs(node), g.outputs(node))
    monkeypatch.setitem(CONVERTERS, 'softmax', wrong)
    rc, cap = _cli(['onnx-check', SYMBOL, PARAMS, '--shape', 'data=2,3,16,16', '--per-node'],
                   capsys)
    assert rc == 1
    assert 'first node that differs: prob (softmax)' in cap.out and 'MISMATCH' in cap.out
    rc, cap = _cli(['onnx-check', SYMBOL, PARAMS, '--shape', 'x=1,2'], capsys)
    assert rc == 1 and 'x' in cap.err
    rc, cap = _cli(['onnx-check', SYMBOL, PARAMS], capsys)
    assert rc == 1 and '--shape' in cap.err


def test_a_model_onnxruntime_cannot_run_is_an_error(capsys):
    model, sym, params = _tampered_model('fc_bias', 1.0)
    model.graph.node[-1].op_type = 'NoSuchOperator'
    with pytest.raises(check.OnnxMismatchError, match='ONNX Runtime cannot run'):
        check.verify(model, sym, params, SHAPE)
