"""Custom operators at their edges, each checked against MXNet 1.9.1's behaviour: how
parameters reach the prop, props that keep state from infer_shape, inputs given twice,
unknown (-1) dimensions, prop methods that fail, attributes of multi-output symbols."""
import numpy as np
import pytest

import symgraph as mx
from symgraph.base import MXNetError
from symgraph.operator import CustomOpError

SEEN = {}


class _Fill(mx.operator.CustomOp):
    def __init__(self, value):
        self.value = value

    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], mx.nd.ones(out_data[0].shape) * self.value)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0])


@mx.operator.register('edge_batch')
class _BatchProp(mx.operator.CustomOpProp):
    """Remembers the batch size infer_shape saw and fills the output with it."""

    def infer_shape(self, in_shape):
        self.batch = in_shape[0][0]
        return in_shape, [in_shape[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        return _Fill(self.batch)


@mx.operator.register('edge_params')
class _ParamsProp(mx.operator.CustomOpProp):
    def __init__(self, **kwargs):
        super().__init__()
        SEEN.update(kwargs)

    def create_operator(self, ctx, shapes, dtypes):
        return _Fill(1.0)


@mx.operator.register('edge_unknown')
class _UnknownProp(mx.operator.CustomOpProp):
    def infer_shape(self, in_shape):
        return in_shape, [(-1, 3)], []

    def create_operator(self, ctx, shapes, dtypes):
        return _Fill(0.0)


@mx.operator.register('edge_bad')
class _BadProp(mx.operator.CustomOpProp):
    def __init__(self, fail='deps'):
        super().__init__()
        self.fail = fail

    def list_outputs(self):
        if self.fail == 'outputs':
            raise RuntimeError('no outputs today')
        return ['output']

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        if self.fail == 'deps':
            return None         # a forgotten return
        return out_grad

    def create_operator(self, ctx, shapes, dtypes):
        return None if self.fail == 'create' else _Fill(0.0)


def test_tuples_of_numpy_scalars_reach_the_prop_and_the_json_as_mxnet_writes_them():
    SEEN.clear()
    x = mx.sym.var('x')
    y = mx.sym.Custom(x, op_type='edge_params', scales=tuple(np.array([8, 16, 32])),
                      ratios=[np.float32(0.5), np.float64(2.0)])
    assert SEEN == {'scales': '(8, 16, 32)', 'ratios': '[0.5, 2.0]'}
    r = mx.sym.Reshape(x, shape=(np.int64(2), 3), name='r')
    assert r.attr('shape') == '(2, 3)'
    assert mx.sym.load_json(r.tojson()).attr('shape') == '(2, 3)'
    assert y.attr('scales') == '(8, 16, 32)'


def test_a_prop_keeping_state_from_infer_shape_sees_the_shapes_of_its_own_bind():
    """create_operator runs right after an infer_shape for this bind's shapes (it used to
    see whatever the last inference, of another executor, left: [3 3] for a batch of 2)."""
    y = mx.sym.Custom(mx.sym.var('x'), op_type='edge_batch')
    ea, eb = y.simple_bind(mx.cpu(), x=(2,)), y.simple_bind(mx.cpu(), x=(3,))
    ec, ed = y.simple_bind(mx.cpu(), x=(2,)), y.simple_bind(mx.cpu(), x=(4,))
    for exe, n in ((ea, 2), (eb, 3), (ec, 2), (ed, 4)):
        exe.forward()
    for exe, n in ((ea, 2), (eb, 3), (ec, 2), (ed, 4)):
        np.testing.assert_array_equal(exe.outputs[0].asnumpy(), [n] * n)


def test_an_input_given_by_position_and_by_keyword_is_refused():
    x, y = mx.sym.var('x'), mx.sym.var('y')
    with pytest.raises(MXNetError, match="'data' given both by position and by keyword"):
        mx.sym.FullyConnected(x, data=y, num_hidden=2)
    with pytest.raises(MXNetError, match='both by position and by keyword'):
        mx.sym.Custom(x, op_type='edge_params', data=y)
    a = mx.nd.ones(2)
    with pytest.raises(MXNetError, match="'lhs' given both by position and by keyword"):
        mx.nd.elemwise_add(a, a * 2, lhs=a * 3)


def test_too_many_inputs_to_nd_custom_are_refused():
    a = mx.nd.ones(2)
    with pytest.raises(MXNetError, match='3 inputs given but it takes 1'):
        mx.nd.Custom(a, a, a, op_type='edge_params')


@pytest.mark.filterwarnings('ignore:Cannot decide shape')
def test_a_minus_one_dimension_from_a_prop_is_unknown():
    y = mx.sym.Custom(mx.sym.var('x'), op_type='edge_unknown')
    assert y.infer_shape(x=(2, 3))[1] is None
    with pytest.raises(MXNetError, match='cannot'):
        mx.sym.FullyConnected(y, num_hidden=2).simple_bind(mx.cpu(), x=(2, 3))


@pytest.mark.parametrize('fail, match', [
    ('deps', r"'edge_bad'.*declare_backward_dependency must return a list"),
    ('outputs', r"'edge_bad' \(_BadProp.list_outputs\) raised RuntimeError: no outputs"),
])
def test_prop_methods_failing_at_symbol_creation_name_the_operator(fail, match):
    with pytest.raises(CustomOpError, match=match):
        mx.sym.Custom(mx.sym.var('x'), op_type='edge_bad', fail=fail)
    # the engine goes on
    ok = mx.sym.Custom(mx.sym.var('x'), op_type='edge_bad', fail='none')
    assert ok.list_outputs() == ['custom%s_output' % ok.name[len('custom'):]]


def test_create_operator_must_return_a_custom_op():
    with pytest.raises(MXNetError, match=r'create_operator returned None, not a CustomOp'):
        mx.nd.Custom(mx.nd.ones(2), op_type='edge_bad', fail='create')


def test_attributes_of_a_multi_output_node():
    x = mx.sym.var('x')
    assert mx.sym.SliceChannel(x, num_outputs=2).attr('num_outputs') == '2'
    assert mx.sym.Group([x, mx.sym.exp(x)]).attr('num_outputs') is None


def test_nd_custom_passes_none_keywords_as_mxnet():
    SEEN.clear()
    mx.nd.Custom(mx.nd.ones(2), op_type='edge_params', e=None, f=1)
    assert SEEN == {'e': 'None', 'f': '1'}
