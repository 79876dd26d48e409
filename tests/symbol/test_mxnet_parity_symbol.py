"""Symbol behaviours MXNet 1.9.1's own tests/python/unittest/test_symbol.py relies on
(issue 29). MXNet-made values come from tests/golden/make_mxnet_parity_opA.py."""
import json
import os

import numpy as np
import pytest

import symgraph as mx

GOLDEN = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'golden',
                      'data', 'mxnet_parity_opA.json')


@pytest.fixture(scope='module')
def golden():
    with open(GOLDEN) as f:
        return json.load(f)


def _net():
    w = mx.sym.var('weight', shape=(128, 0))
    return mx.sym.FullyConnected(mx.sym.var('data'), w, num_hidden=128, name='fc')


@pytest.mark.parametrize('flag', [False, True])
def test_tojson_marks_np_shape_semantics_as_mxnet(golden, flag):
    with mx.np_shape(flag):
        text = _net().tojson()
    assert text == golden['np_shape_json']['on' if flag else 'off']
    assert ('is_np_shape' in json.loads(text)['attrs']) == flag


def test_legacy_file_zero_dims_stay_unknown_under_np_shape(golden, tmp_path):
    fname = str(tmp_path / 'net.json')
    with open(fname, 'w') as f:
        f.write(golden['np_shape_json']['off'])
    for flag in (False, True):
        with mx.np_shape(flag):
            arg, out, aux = mx.sym.load(fname).infer_shape(data=(10, 784))
        assert arg == [(10, 784), (128, 784), (128,)] and out == [(10, 128)] and aux == []


def test_executor_reshape_shares_memory_as_mxnet():
    y = mx.sym.FullyConnected(mx.sym.Variable('x'), num_hidden=4)
    exe = y.simple_bind(mx.cpu(), x=(5, 4), grad_req='write')
    exe.arg_arrays[0][:] = np.arange(20).reshape(5, 4)
    exe.arg_arrays[1][:] = np.eye(4)
    exe.arg_arrays[2][:] = 0
    small = exe.reshape(x=(3, 4))
    # a shrunk argument (and its gradient) is the start of the old one's memory
    np.testing.assert_array_equal(small.arg_arrays[0].asnumpy(), np.arange(12).reshape(3, 4))
    small.arg_arrays[0][:] = -1
    assert (exe.arg_arrays[0].asnumpy()[:3] == -1).all()
    assert (exe.arg_arrays[0].asnumpy()[3:] >= 12).all()
    assert small.arg_arrays[1] is exe.arg_arrays[1]
    # its outputs are the start of the old executor's outputs
    small.forward(is_train=True)
    small.backward(mx.nd.ones((3, 4)))
    assert (exe.outputs[0].asnumpy()[:3] == -1).all()
    assert (exe.grad_arrays[0].asnumpy()[:3] == 1).all()
    exe.forward(is_train=False)
    np.testing.assert_array_equal(small.outputs[0].asnumpy(), exe.outputs[0].asnumpy()[:3])
    # a grown argument is new memory; an unchanged one stays shared
    big = exe.reshape(allow_up_sizing=True, x=(6, 4))
    big.arg_arrays[0][:] = 0
    assert (exe.arg_arrays[0].asnumpy()[3:] >= 12).all()
    assert big.arg_arrays[1] is exe.arg_arrays[1]
    with pytest.raises(mx.MXNetError, match='allow_up_sizing'):
        exe.reshape(x=(6, 4))


def test_get_operator_arguments(golden):
    for name, (narg, names, types) in golden['operator_arguments'].items():
        got = mx.operator.get_operator_arguments(name)
        assert isinstance(got, mx.operator.OperatorArguments)
        assert (got.narg, got.names) == (narg, names), name
        assert got.types[0] == types[0]     # the first input
    for name in ('Activation', 'transpose', 'FullyConnected'):
        assert mx.operator.get_operator_arguments(name).types == \
            golden['operator_arguments'][name][2]
    with pytest.raises(mx.MXNetError, match='NoSuchOp'):
        mx.operator.get_operator_arguments('NoSuchOp')


class _Square(mx.operator.NumpyOp):
    def forward(self, in_data, out_data):
        assert isinstance(in_data[0], np.ndarray)
        out_data[0][:] = in_data[0] ** 2

    def backward(self, out_grad, in_data, out_data, in_grad):
        in_grad[0][:] = 2 * in_data[0] * out_grad[0]


class _Twice(mx.operator.NDArrayOp):
    def forward(self, in_data, out_data):
        assert isinstance(in_data[0], mx.nd.NDArray)
        out_data[0][:] = in_data[0] * 2


@pytest.mark.filterwarnings('ignore:PythonOp has been deprecated')
def test_numpy_op_and_ndarray_op_make_symbols():
    x = mx.sym.Variable('X')
    # the default forward copies, the default backward writes ones (MXNet's test_python_op)
    s = mx.operator.NumpyOp().get_symbol(x, name='numpy_op')
    assert s.list_arguments() == ['X'] and s.name == 'numpy_op'
    dx = mx.nd.zeros((4,))
    exe = s.bind(mx.cpu(), args=[mx.nd.ones((4,)) * 10], args_grad={'X': dx})
    exe.forward(is_train=True)
    np.testing.assert_array_equal(exe.outputs[0].asnumpy(), np.full(4, 10.0))
    exe.backward(mx.nd.ones((4,)) * 3)
    np.testing.assert_array_equal(dx.asnumpy(), np.ones(4))
    # an overridden forward/backward on NumPy arrays
    sq = _Square()(x)
    dx = mx.nd.zeros((2, 3))
    data = np.arange(6.0).reshape(2, 3)
    exe = sq.bind(mx.cpu(), args=[mx.nd.array(data)], args_grad={'X': dx})
    exe.forward(is_train=True)
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), data ** 2)
    exe.backward(mx.nd.ones((2, 3)))
    np.testing.assert_allclose(dx.asnumpy(), 2 * data)
    tw = _Twice().get_symbol(x)
    out = tw.bind(mx.cpu(), args=[mx.nd.array(data)]).forward()[0]
    np.testing.assert_allclose(out.asnumpy(), 2 * data)


def test_python_op_warns_as_mxnet():
    with pytest.warns(UserWarning, match='deprecated'):
        mx.operator.NumpyOp()


def test_partial_shape_of_a_variable_with_unknown_dims_under_np_shape():
    with mx.np_shape():
        v = mx.sym.var('data', shape=(-1, 20))
        out = mx.sym.slice(v, begin=(None, 3), end=(None, 10))
        assert out.infer_shape_partial()[1] == [(-1, 7)]
        w = mx.sym.var('data', shape=(10, -1))
        assert mx.sym.slice_axis(w, axis=0, begin=0, end=5).infer_shape_partial()[1] \
            == [(5, -1)]
    v = mx.sym.var('data', shape=(0, 20))
    assert mx.sym.slice(v, begin=(None, 3), end=(None, 10)).infer_shape_partial()[1] == \
        [(0, 7)]
