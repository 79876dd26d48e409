"""export_model itself: MXNet 1.9.1's argument forms, the opset range, dynamic batch,
Custom operators (a registered exporter, else the custom domain with a warning), and the
error for an operator without a converter."""
import warnings

import numpy as np
import pytest

import symgraph as mx

onnx = pytest.importorskip('onnx')
ort = pytest.importorskip('onnxruntime')

from symgraph.onnx import ExportError, export_model  # noqa: E402
from symgraph.onnx.export import export_onnx_model, MIN_OPSET, DEFAULT_OPSET  # noqa: E402


def _net():
    x = mx.sym.var('data')
    c = mx.sym.Convolution(x, kernel=(3, 3), num_filter=4, pad=(1, 1), name='conv')
    b = mx.sym.BatchNorm(c, name='bn')          # fix_gamma=True by default
    r = mx.sym.Activation(b, act_type='relu', name='relu')
    p = mx.sym.Pooling(r, kernel=(2, 2), stride=(2, 2), pool_type='max', name='pool')
    f = mx.sym.Reshape(p, shape=(0, -3, -2), name='flat')
    return mx.sym.FullyConnected(f, num_hidden=3, name='fc')


def _params(sym, shape):
    rs = np.random.RandomState(0)
    arg_shapes, _, aux_shapes = sym.infer_shape(data=shape)
    args = {n: mx.nd.array(rs.uniform(-1, 1, s)) for n, s in
            zip(sym.list_arguments(), arg_shapes) if n != 'data'}
    aux = {n: mx.nd.array(rs.uniform(0.5, 1.5, s)) for n, s in
           zip(sym.list_auxiliary_states(), aux_shapes)}
    return args, aux


def _forward(sym, args, aux, x):
    exe = sym.bind(mx.cpu(), dict(args, data=mx.nd.array(x)), aux_states=aux,
                   grad_req='null')
    exe.forward(is_train=False)
    return exe.outputs[0].asnumpy()


def _run(path, x):
    sess = ort.InferenceSession(str(path), providers=['CPUExecutionProvider'])
    return sess.run(None, {sess.get_inputs()[0].name: x})[0]


def test_files_and_objects_give_the_same_model_and_fix_gamma_is_one(tmp_path):
    sym = _net()
    shape = (2, 3, 6, 6)
    args, aux = _params(sym, shape)
    args['bn_gamma'] = mx.nd.array([5.0, -3.0, 2.0, 7.0])     # ignored by fix_gamma
    x = np.random.RandomState(1).uniform(-1, 1, shape).astype(np.float32)
    ref = _forward(sym, args, aux, x)
    sym.save(str(tmp_path / 'net-symbol.json'))
    mx.nd.save(str(tmp_path / 'net-0000.params'),
               dict([('arg:' + k, v) for k, v in args.items()] +
                    [('aux:' + k, v) for k, v in aux.items()]))
    paths = [
        export_model(str(tmp_path / 'net-symbol.json'), str(tmp_path / 'net-0000.params'),
                     [shape], np.float32, str(tmp_path / 'a.onnx')),
        export_model(sym, dict(args, **aux), [shape], onnx_file_path=str(tmp_path / 'b.onnx')),
        export_model(sym, [args, aux], input_shape=[shape], input_type=np.float32,
                     onnx_file_path=str(tmp_path / 'c.onnx')),
    ]
    assert paths[0] == str(tmp_path / 'a.onnx')
    for path in paths:
        onnx.checker.check_model(path)
        np.testing.assert_allclose(_run(path, x), ref, rtol=1e-4, atol=1e-4)
    model = onnx.load(paths[0])
    assert [i.name for i in model.graph.input] == ['data']
    assert [o.name for o in model.graph.output] == ['fc']      # MXNet's naming
    gamma = [t for t in model.graph.initializer if 'bn_gamma' in t.name]
    assert not gamma      # the stored gamma is not what the model computes with


@pytest.mark.parametrize('opset', [MIN_OPSET, 17, onnx.defs.onnx_opset_version(), None])
def test_opset_versions(opset):
    sym = _net()
    shape = (1, 3, 4, 4)
    args, aux = _params(sym, shape)
    model = export_onnx_model(sym, dict(args, **aux), [shape], opset_version=opset)
    want = opset or min(DEFAULT_OPSET, onnx.defs.onnx_opset_version())
    assert model.opset_import[0].version == want
    onnx.checker.check_model(model)
    x = np.random.RandomState(2).uniform(-1, 1, shape).astype(np.float32)
    sess = ort.InferenceSession(model.SerializeToString(), providers=['CPUExecutionProvider'])
    np.testing.assert_allclose(sess.run(None, {'data': x})[0], _forward(sym, args, aux, x),
                               rtol=1e-4, atol=1e-4)


def test_bad_opset_and_shapes_are_clear_errors():
    sym = _net()
    with pytest.raises(ValueError, match='opset_version'):
        export_onnx_model(sym, {}, [(1, 3, 4, 4)], opset_version=9)
    with pytest.raises(ValueError, match='in_shapes'):
        export_onnx_model(sym, {}, [])
    with pytest.raises(TypeError, match='params'):
        export_onnx_model(sym, 3, [(1, 3, 4, 4)])


def test_dynamic_batch(tmp_path):
    sym = _net()
    shape = (2, 3, 6, 6)
    args, aux = _params(sym, shape)
    path = export_model(sym, dict(args, **aux), [shape], dynamic=True,
                        onnx_file_path=str(tmp_path / 'd.onnx'))
    model = onnx.load(path)
    dim0 = model.graph.input[0].type.tensor_type.shape.dim[0]
    assert not dim0.HasField('dim_value')
    for batch in (1, 5):
        x = np.random.RandomState(batch).uniform(-1, 1, (batch,) + shape[1:]).astype(np.float32)
        np.testing.assert_allclose(_run(path, x), _forward(sym, args, aux, x), rtol=1e-4,
                                   atol=1e-4)


def test_dynamic_input_shapes_name_free_axes(tmp_path):
    x = mx.sym.var('data')
    sym = mx.sym.softmax(mx.sym.broadcast_mul(mx.sym.sum(x, axis=1, keepdims=True), x), axis=-1)
    path = export_model(sym, {}, [(2, 3)], dynamic=True, dynamic_input_shapes=[(None, 3)],
                        onnx_file_path=str(tmp_path / 'e.onnx'))
    dims = onnx.load(path).graph.input[0].type.tensor_type.shape.dim
    assert not dims[0].HasField('dim_value') and dims[1].dim_value == 3
    v = np.random.RandomState(0).uniform(-1, 1, (4, 3)).astype(np.float32)
    s = v.sum(axis=1, keepdims=True) * v
    ref = np.exp(s - s.max(axis=-1, keepdims=True))
    ref /= ref.sum(axis=-1, keepdims=True)
    np.testing.assert_allclose(_run(path, v), ref, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match='dynamic'):
        export_onnx_model(sym, {}, [(2, 3)], dynamic_input_shapes=[(None, 3)])


def test_an_operator_without_converter_names_node_and_line():
    x = mx.sym.var('data')
    y = mx.sym.gammaln(x, name='lg')     # no ONNX form
    with pytest.raises(ExportError) as err:
        export_onnx_model(y, {}, [(2, 3)])
    msg = str(err.value)
    assert "'lg'" in msg and 'gammaln' in msg and 'test_export_core.py:' in msg
    assert isinstance(err.value, NotImplementedError)


class _Square(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0] * in_data[0] * float(self.k))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        pass


@mx.operator.register('onnx_test_scaled_square')
class _SquareProp(mx.operator.CustomOpProp):
    def __init__(self, k='1'):
        super().__init__(need_top_grad=True)
        self.k = k

    def list_arguments(self):
        return ['data']

    def list_outputs(self):
        return ['output']

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        op = _Square()
        op.k = self.k
        return op


@mx.onnx.register_custom_exporter('onnx_test_scaled_square')
def _square_exporter(g, node):
    x, = g.inputs(node)
    k = g.const(np.array(float(node.attrs['k']), np.float32))
    g.add('Mul', [g.add('Mul', [x, x])[0], k], g.outputs(node))


def test_custom_operator_with_registered_exporter():
    x = mx.sym.var('data')
    y = mx.sym.Custom(x, op_type='onnx_test_scaled_square', k='3', name='sq') + 1
    v = np.random.RandomState(0).uniform(-1, 1, (2, 3)).astype(np.float32)
    model = export_onnx_model(y, {}, [v.shape])
    onnx.checker.check_model(model)
    sess = ort.InferenceSession(model.SerializeToString(), providers=['CPUExecutionProvider'])
    ref = y.bind(mx.cpu(), {'data': mx.nd.array(v)}, grad_req='null')
    ref.forward()
    np.testing.assert_allclose(sess.run(None, {'data': v})[0], ref.outputs[0].asnumpy(),
                               rtol=1e-6)


def test_custom_operator_without_exporter_goes_to_the_custom_domain():
    x = mx.sym.var('data')
    y = mx.sym.Custom(x, op_type='onnx_test_unexported', k='2', name='cu')
    with pytest.warns(UserWarning, match="'cu'.*symgraph.custom"):
        model = export_onnx_model(y, {}, [(2, 3)])
    node, = [n for n in model.graph.node if n.domain == 'symgraph.custom']
    assert node.op_type == 'onnx_test_unexported'
    assert {a.name: a.s for a in node.attribute} == {'k': b'2'}
    assert any(o.domain == 'symgraph.custom' for o in model.opset_import)


@mx.operator.register('onnx_test_unexported')
class _UnexportedProp(_SquareProp):
    pass


def test_second_registration_is_an_error():
    from symgraph.onnx._registry import converter
    with pytest.raises(ValueError, match='registered already'):
        converter('Convolution')(lambda g, node: None)
    with pytest.raises(ValueError, match='registered already'):
        mx.onnx.register_custom_exporter('onnx_test_scaled_square')(lambda g, node: None)


def test_onnx_is_not_imported_with_symgraph():
    import subprocess
    import sys
    code = ('import sys, symgraph; print("onnx" in sys.modules, '
            '"onnxruntime" in sys.modules, symgraph.contrib.onnx is symgraph.onnx)')
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ['False', 'False', 'True']


def test_operator_support_lists_the_common_operators():
    ops = set(mx.onnx.get_operator_support())
    assert {'Convolution', 'Deconvolution', 'BatchNorm', 'Pooling', 'Reshape', 'take',
            'where', 'one_hot', 'amp_cast', 'LayerNorm', 'broadcast_like', 'norm'} <= ops
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        assert 'gammaln' not in ops
