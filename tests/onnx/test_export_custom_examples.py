"""The custom-operator examples (examples/custom_op) exported to ONNX and run by ONNX
Runtime against symgraph's forward.

- softmax.py registers an ONNX exporter for its ``softmax`` op (one ONNX ``Softmax``): its
  MLP, trained a few steps as the example trains it, exports and matches ONNX Runtime.
- proposal_target.py's layer samples RoIs at random from data-dependent foreground sets
  and exists only in the training graph; it has no ONNX form, so its training graph
  exports it in the ``symgraph.custom`` domain with a warning naming the node (ONNX
  Runtime refuses to load that without a kernel), and the deploy graph (RoIs fed to
  ROIPooling, no proposal_target) exports and matches.
"""
import importlib.util
import os
import warnings

import numpy as np
import pytest

import symgraph as mx
from onnx_special_check import export, forward, run_onnx

pytest.importorskip('onnx')
pytest.importorskip('onnxruntime')

EXAMPLES = os.path.join(os.path.dirname(__file__), '..', '..', 'examples', 'custom_op')
_LOADED = {}


def _example(name):
    if name not in _LOADED:
        spec = importlib.util.spec_from_file_location('onnx_example_custom_' + name,
                                                      os.path.join(EXAMPLES, name + '.py'))
        mod = importlib.util.module_from_spec(spec)
        with warnings.catch_warnings():
            # tests/operator may have run the example already: its op registered again
            warnings.filterwarnings('ignore', message='custom operator .* registered again')
            spec.loader.exec_module(mod)
        _LOADED[name] = mod
    return _LOADED[name]


@pytest.fixture(autouse=True, scope='module')
def _restore_registries():
    """The examples register their ops (and softmax its ONNX exporter) when loaded; the
    registries are put back afterwards, so that another test loading the examples later
    (tests/operator) registers them afresh, without a re-registration warning."""
    from symgraph.onnx._registry import CUSTOM_EXPORTERS
    from symgraph.operator import api
    names = ('softmax', 'proposal_target')
    saved = [(reg, {n: reg[n] for n in names if n in reg})
             for reg in (api._PROPS, CUSTOM_EXPORTERS)]
    yield
    for reg, old in saved:
        for n in names:
            reg.pop(n, None)
        reg.update(old)
    _LOADED.clear()


def _compare(ref, got, rtol=1e-4):
    assert len(ref) == len(got)
    for r, o in zip(ref, got):
        assert r.shape == o.shape and r.dtype == o.dtype
        np.testing.assert_allclose(o, r, rtol=rtol,
                                   atol=1e-5 * max(1.0, float(np.abs(r).max())))


def _train_softmax_mlp(mod, steps=20, batch=50, lr=0.1):
    """The example's custom-loss MLP after ``steps`` SGD steps (its update rule)."""
    rng = np.random.RandomState(0)
    x, y = mod.make_data(rng, steps * batch)
    net = mod.mlp('custom')
    params = ['fc1_weight', 'fc1_bias', 'fc2_weight', 'fc2_bias']
    req = {n: ('write' if n in params else 'null') for n in net.list_arguments()}
    exe = net.simple_bind(mx.cpu(), data=(batch, x.shape[1]), softmax_label=(batch,),
                          grad_req=req)
    for n in params:
        shape = exe.arg_dict[n].shape
        exe.arg_dict[n][:] = (rng.normal(0, 0.3, shape) if n.endswith('weight')
                              else np.zeros(shape)).astype(np.float32)
    for k in range(steps):
        exe.arg_dict['data'][:] = x[k * batch:(k + 1) * batch]
        exe.arg_dict['softmax_label'][:] = y[k * batch:(k + 1) * batch]
        exe.forward(is_train=True)
        exe.backward()
        for n in params:
            exe.arg_dict[n][:] = exe.arg_dict[n] - (lr / batch) * exe.grad_dict[n]
    return net, {n: exe.arg_dict[n].asnumpy() for n in params}


def test_softmax_example_exports_through_its_registered_exporter():
    mod = _example('softmax')
    net, params = _train_softmax_mlp(mod)
    assert np.abs(params['fc1_bias']).max() > 0          # it did train
    rng = np.random.RandomState(1)
    x, label = mod.make_data(rng, 7)
    inputs = {'data': x, 'softmax_label': label}
    with warnings.catch_warnings():
        warnings.simplefilter('error')                    # no custom-domain fallback
        model = export(net, inputs, params)
    assert [n.op_type for n in model.graph.node][-1] == 'Softmax'
    assert all(n.domain in ('', 'ai.onnx') for n in model.graph.node)
    ref = forward(net, inputs, params)
    got = run_onnx(model, inputs)
    _compare(ref, got)
    np.testing.assert_allclose(got[0].sum(axis=1), 1.0, rtol=1e-5)


def test_softmax_example_exports_with_a_dynamic_batch():
    mod = _example('softmax')
    net, params = _train_softmax_mlp(mod, steps=2)
    rng = np.random.RandomState(2)
    x, label = mod.make_data(rng, 4)
    model = export(net, {'data': x, 'softmax_label': label}, params, dynamic=True)
    x9, label9 = mod.make_data(rng, 9)
    inputs = {'data': x9, 'softmax_label': label9}
    _compare(forward(net, inputs, params), run_onnx(model, inputs))


def _scene():
    mod = _example('proposal_target')
    img, rois, gt = mod.make_scene(np.random.RandomState(0))
    return mod, img, rois, gt


def _seeded(sym, shapes, rng):
    arg_shapes, _, _ = sym.infer_shape(**shapes)
    out = {}
    for name, shape in zip(sym.list_arguments(), arg_shapes):
        if name in shapes or name.endswith('label'):
            continue
        scale = 0.0 if name.endswith('bias') else 1.0 / np.sqrt(np.prod(shape[1:]))
        out[name] = rng.uniform(-scale, scale, shape).astype(np.float32)
    return out


def test_proposal_target_training_graph_falls_back_to_the_custom_domain():
    onnx = pytest.importorskip('onnx')
    ort = pytest.importorskip('onnxruntime')
    mod, img, rois, gt = _scene()
    net = mod.build_net()
    inputs = {'data': img, 'rois': rois, 'gt_boxes': gt}
    params = _seeded(net, {k: v.shape for k, v in inputs.items()}, np.random.RandomState(3))
    from symgraph.onnx.export import export_onnx_model
    names = [n for n in net.list_inputs() if n not in params]
    with pytest.warns(UserWarning, match=r"ptarget.*register_custom_exporter\('proposal_"
                                         r"target'\).*symgraph\.custom"):
        model = export_onnx_model(net, params, [inputs[n].shape for n in names],
                                  [inputs[n].dtype for n in names])
    node, = [n for n in model.graph.node if n.domain == 'symgraph.custom']
    assert node.op_type == 'proposal_target'
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    assert attrs['num_classes'] == b'4' and attrs['batch_rois'] == b'32'
    assert list(node.input) == ['rois', 'gt_boxes'] and len(node.output) == 4
    assert any(o.domain == 'symgraph.custom' for o in model.opset_import)
    # ONNX Runtime has no kernel for it: it says so instead of running something else
    with pytest.raises(Exception, match='proposal_target|symgraph.custom'):
        ort.InferenceSession(model.SerializeToString(), providers=['CPUExecutionProvider'])


def _deploy_net(mod):
    """The example's network as deployed: proposals go straight to ROIPooling, the
    outputs are the class probabilities and the box deltas (no proposal_target)."""
    data = mx.sym.Variable('data')
    rois = mx.sym.Variable('rois')
    conv = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=8, name='conv')
    relu = mx.sym.Activation(conv, act_type='relu', name='relu')
    pool = mx.sym.ROIPooling(relu, rois, pooled_size=(3, 3), spatial_scale=1.0,
                             name='roi_pool')
    flat = mx.sym.Flatten(pool, name='flat')
    cls_score = mx.sym.FullyConnected(flat, num_hidden=mod.NUM_CLASSES, name='cls_score')
    cls_prob = mx.sym.SoftmaxActivation(cls_score, name='cls_prob')
    bbox_pred = mx.sym.FullyConnected(flat, num_hidden=4 * mod.NUM_CLASSES,
                                      name='bbox_pred')
    return mx.sym.Group([cls_prob, bbox_pred])


def test_proposal_target_deploy_graph_exports_and_matches():
    mod, img, rois, gt = _scene()
    train = mod.build_net()
    net = _deploy_net(mod)
    inputs = {'data': img, 'rois': rois}
    params = _seeded(train, {'data': img.shape, 'rois': rois.shape, 'gt_boxes': gt.shape},
                     np.random.RandomState(4))
    # the deploy graph takes exactly the training graph's weights
    assert set(net.list_arguments()) - set(inputs) == set(params)
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        model = export(net, inputs, params)
    _compare(forward(net, inputs, params), run_onnx(model, inputs))
