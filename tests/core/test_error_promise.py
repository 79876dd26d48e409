"""The error promise (issue 14): every error a user can cause is both ``mx.base.MXNetError``
and the fitting builtin (ValueError, TypeError, KeyError, FileNotFoundError), names what
went wrong, and leaves the engine usable."""
import numpy as np
import pytest

import symgraph as mx
from symgraph.base import MXNetError


def _usable():
    """A correct bind/forward/backward still works after an error."""
    x = mx.sym.var('x')
    y = mx.sym.FullyConnected(x, num_hidden=2, name='ok_fc')
    exe = y.simple_bind(mx.cpu(), x=(3, 4))
    exe.arg_dict['ok_fc_weight'][:] = 1
    exe.arg_dict['ok_fc_bias'][:] = 0
    out = exe.forward(is_train=True, x=np.ones((3, 4)))[0].asnumpy()
    assert out.tolist() == [[4.0, 4.0]] * 3
    exe.backward(mx.nd.ones((3, 2)))
    assert exe.grad_dict['ok_fc_weight'].asnumpy().tolist() == [[3.0] * 4] * 2


def _raises(builtin, fn, *needles):
    with pytest.raises(builtin) as info:
        fn()
    assert isinstance(info.value, MXNetError), type(info.value).__mro__
    assert isinstance(info.value, builtin)
    msg = str(info.value)
    for n in needles:
        assert n in msg, (n, msg)
    _usable()
    return info.value


x = mx.sym.var('x')
A = mx.nd.ones((2, 3))


# --------------------------------------------------------------------- ValueError
@pytest.mark.parametrize('make, needles', [
    (lambda: mx.sym.FullyConnected(x, name='fc1'),
     ["node 'fc1'", 'FullyConnected', "'num_hidden'", 'missing']),
    (lambda: mx.sym.FullyConnected(x, num_hidden='abc', name='fc1'),
     ["node 'fc1'", "'num_hidden'", "'abc'"]),
    (lambda: mx.sym.Convolution(x, kernel=(3, 3), num_filter=4, num_group=3, name='c1'),
     ["node 'c1'", 'Convolution', 'num_group']),
    (lambda: mx.sym.Pooling(x, kernel=(2, 2), stride=(0, 1)),
     ["node 'pooling", 'Pooling', 'stride']),
    (lambda: mx.sym.random.uniform(low=2, high=1, shape=(2,)), ['high', 'low']),
    (lambda: mx.sym.RNN(x, state_size=4, num_layers=1, mode='lstm', p=1.5), ['dropout']),
])
def test_bad_operator_parameters_are_value_errors_naming_the_node(make, needles):
    e = _raises(ValueError, make, *needles)
    assert isinstance(e, mx.base.ParameterError)


def test_the_automatic_node_name_and_the_users_line_are_named():
    e = _raises(ValueError, lambda: mx.sym.FullyConnected(x))
    assert "node 'fullyconnected" in str(e)
    assert 'test_error_promise.py:' in str(e)      # the user's file:line


def test_bad_shapes_and_bindings_are_value_errors():
    y = mx.sym.FullyConnected(x, num_hidden=2, name='fc')
    _raises(ValueError, lambda: y.simple_bind(mx.cpu(), x=(2, 3), fc_weight=(5, 5)), 'fc')
    exe = (x * 2).bind(mx.cpu(), {'x': mx.nd.ones((2,))})
    _raises(ValueError, lambda: exe.forward(x=np.ones(3)), "'x'", '(3,)', '(2,)')
    exe.forward(is_train=True)
    # a head gradient of the wrong shape names the output and both shapes
    g = mx.nd.ones((2,))
    exe2 = (x * 2).bind(mx.cpu(), {'x': mx.nd.ones((2,))}, args_grad={'x': g})
    exe2.forward(is_train=True)
    _raises(ValueError, lambda: exe2.backward(mx.nd.ones((5,))), '(5,)', '(2,)')
    # backward of a non-loss output without head gradients
    exe3 = (x * 2).bind(mx.cpu(), {'x': mx.nd.ones((2,))}, args_grad={'x': g})
    exe3.forward(is_train=True)
    _raises(ValueError, lambda: exe3.backward(), 'head gradient')


def test_bad_json_attribute_value_is_an_mxnet_error():
    # symgraph/graph/json_format.py (another branch) wraps it; it stays an MXNetError here
    js = ('{"nodes": [{"op": "null", "name": "x", "inputs": []}, {"op": "FullyConnected", '
          '"name": "fc", "attrs": {"num_hidden": "abc"}, "inputs": [[0, 0, 0]]}], '
          '"arg_nodes": [0], "heads": [[1, 0, 0]]}')
    with pytest.raises(MXNetError, match='num_hidden'):
        mx.sym.load_json(js)


# ---------------------------------------------------------------------- TypeError
def test_ndarray_into_a_sym_operator_is_a_type_error_naming_input_and_types():
    _raises(TypeError, lambda: mx.sym.FullyConnected(A, num_hidden=2, name='f'),
            "node 'f'", 'FullyConnected', "'data'", 'Symbol', 'NDArray')
    _raises(TypeError, lambda: mx.sym.FullyConnected(x, weight=A, num_hidden=2, name='f'),
            "'weight'", 'Symbol', 'NDArray')
    _raises(TypeError, lambda: mx.sym.relu(data=np.ones(2)), "'data'", 'ndarray')


def test_symbol_into_an_nd_operator_is_a_type_error_naming_input_and_types():
    _raises(TypeError, lambda: mx.nd.relu(x), 'relu', "'data'", 'NDArray', 'Symbol')
    _raises(TypeError, lambda: mx.nd.FullyConnected(data=x, num_hidden=2),
            'FullyConnected', "'data'", 'NDArray', 'Symbol')


def test_ndarray_plus_symbol_is_a_type_error_naming_both_types():
    _raises(TypeError, lambda: A + x, '+', 'NDArray', 'Symbol')
    _raises(TypeError, lambda: A - x, '-', 'NDArray', 'Symbol')
    _raises(TypeError, lambda: x - A, '-', 'Symbol', 'NDArray')


@pytest.mark.parametrize('op,sign', [(lambda a, b: a + b, '+'), (lambda a, b: a * b, '*'),
                                     (lambda a, b: a - b, '-'), (lambda a, b: a / b, '/')])
def test_operand_order_in_the_message_is_the_users(op, sign):
    # the reflected methods (__radd__, __rmul__) have names of their own, so a refusal
    # names the operands in the order the user wrote them
    with pytest.raises(TypeError) as e:
        op(x, A)
    assert 'for %s: Symbol and NDArray' % sign in str(e.value)
    with pytest.raises(TypeError) as e:
        op(A, x)
    assert 'for %s: NDArray and Symbol' % sign in str(e.value)


def test_nd_operator_errors_name_the_users_file_and_line():
    import inspect
    line = inspect.currentframe().f_lineno + 2
    with pytest.raises(ValueError) as e:
        mx.nd.Convolution(mx.nd.ones((1, 2, 3)), mx.nd.ones((2, 2, 3, 3)), mx.nd.ones(2),
                          kernel=(3, 3), num_filter=2)
    assert 'mx.nd.Convolution called at %s:%d' % (__file__, line) in str(e.value)
    with pytest.raises(KeyError) as e:
        mx.nd.FullyConnected(A, nohidden=3)
    assert 'mx.nd.FullyConnected called at %s:' % __file__ in str(e.value)
    assert "'num_hidden'" in str(e.value)
    _usable()


def test_bind_with_a_numpy_array_is_a_type_error():
    _raises(TypeError, lambda: x.bind(mx.cpu(), {'x': np.ones(3)}), "'x'", 'NDArray', 'ndarray')


# ----------------------------------------------------------------------- KeyError
def test_unknown_names_are_key_errors_listing_valid_names():
    e = _raises(KeyError, lambda: mx.sym.FullyConnected(x, num_hiden=2, name='fc1'),
                "node 'fc1'", "'num_hiden'", 'num_hidden', 'no_bias')
    assert not str(e).startswith('"')            # KeyError's quotes are not added
    _raises(KeyError, lambda: mx.sym.Custom(x, op_type='no_such_op_type'), 'no_such_op_type')
    exe = (x * 2).bind(mx.cpu(), {'x': mx.nd.ones((2,))})
    _raises(KeyError, lambda: exe.forward(y=np.ones(2)), "'y'", "['x']")
    _raises(KeyError, lambda: mx.sym.FullyConnected(x, num_hidden=2)(nope=x), "'nope'")


def test_unknown_operator_is_a_key_error_and_an_attribute_error():
    e = _raises(KeyError, lambda: mx.sym.FullyConect, 'FullyConect', 'FullyConnected')
    assert isinstance(e, AttributeError)
    _raises(KeyError, lambda: mx.nd.contrib.box_nmss, '_contrib_box_nms')
    _raises(KeyError, lambda: mx.opdef.get_op('Convolutin'), 'Convolution')
    assert not hasattr(mx.sym, 'FullyConect')
    assert getattr(mx.nd, 'FullyConect', None) is None


# -------------------------------------------------------------- FileNotFoundError
def test_missing_files_are_file_not_found_errors(tmp_path):
    missing = str(tmp_path / 'none')
    _raises(FileNotFoundError, lambda: mx.sym.load(missing + '.json'), missing)
    _raises(FileNotFoundError, lambda: mx.model.load_checkpoint(missing, 3), missing)
    x.save(missing + '-symbol.json')
    _raises(FileNotFoundError, lambda: mx.model.load_checkpoint(missing, 3),
            'none-0003.params')
    _raises(FileNotFoundError, lambda: mx.nd.load(missing + '.params'), 'none.params')


# ------------------------------------------------------------------ custom ops
class _Cfg:
    write_out = True
    write_grad = True
    out_shape = None


class _Op(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        if _Cfg.out_shape is not None:
            out_data[0][:] = np.ones(_Cfg.out_shape)
        elif _Cfg.write_out:
            self.assign(out_data[0], req[0], in_data[0] * 2)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        if _Cfg.write_grad:
            self.assign(in_grad[0], req[0], out_grad[0] * 2)


@mx.operator.register('t_promise')
class _Prop(mx.operator.CustomOpProp):
    def __init__(self):
        super().__init__(need_top_grad=True)

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return _Op()


@mx.operator.register('t_promise_bad_create')
class _BadCreateProp(mx.operator.CustomOpProp):
    def create_operator(self, ctx, in_shapes, in_dtypes):
        return 'not an op'


@pytest.fixture
def cfg():
    yield _Cfg
    _Cfg.write_out, _Cfg.write_grad, _Cfg.out_shape = True, True, None


def _custom_exe(grad_req='write'):
    y = mx.sym.Custom(x, op_type='t_promise', name='twice')
    return y.simple_bind(mx.cpu(), x=(2, 3), grad_req=grad_req)


def test_custom_forward_never_assigning_an_output_is_an_error(cfg):
    cfg.write_out = False
    exe = _custom_exe()
    with pytest.raises(RuntimeError) as info:
        exe.forward(x=np.ones((2, 3)))
    msg = str(info.value)
    assert isinstance(info.value, MXNetError)
    for needle in ("'t_promise'", "node 'twice'", "output 'output'"):
        assert needle in msg, msg
    cfg.write_out = True
    assert exe.forward(x=np.ones((2, 3)))[0].asnumpy().tolist() == [[2.0] * 3] * 2


@pytest.mark.parametrize('req', ['write', 'add'])
def test_custom_backward_never_assigning_a_gradient_is_an_error(cfg, req):
    cfg.write_grad = False
    exe = _custom_exe(req)
    exe.forward(is_train=True, x=np.ones((2, 3)))
    with pytest.raises(RuntimeError) as info:
        exe.backward(mx.nd.ones((2, 3)))
    assert isinstance(info.value, MXNetError)
    for needle in ("'t_promise'", "node 'twice'", "input 'data'", repr(req)):
        assert needle in str(info.value), str(info.value)
    cfg.write_grad = True
    exe.forward(is_train=True, x=np.ones((2, 3)))
    exe.backward(mx.nd.ones((2, 3)))
    assert exe.grad_dict['x'].asnumpy().max() >= 2.0


def test_custom_backward_with_req_null_need_not_assign(cfg):
    cfg.write_grad = False
    exe = _custom_exe('null')
    exe.forward(is_train=True, x=np.ones((2, 3)))
    exe.backward(mx.nd.ones((2, 3)))


def test_custom_op_assigning_a_wrong_shape_is_a_value_error(cfg):
    cfg.out_shape = (5, 7)
    exe = _custom_exe()
    with pytest.raises(ValueError) as info:
        exe.forward(x=np.ones((2, 3)))
    assert isinstance(info.value, MXNetError)
    assert "node 'twice'" in str(info.value)


def test_create_operator_returning_no_custom_op_is_a_type_error():
    y = mx.sym.Custom(x, op_type='t_promise_bad_create', name='bad')
    with pytest.raises(TypeError) as info:
        y.simple_bind(mx.cpu(), x=(2, 3)).forward()
    assert isinstance(info.value, MXNetError)
    assert "'t_promise_bad_create'" in str(info.value) and 'not a CustomOp' in str(info.value)
    _usable()


# -------------------------------------------------------------------- checkpoints
def test_checkpoint_with_mis_shaped_parameter_is_a_value_error(tmp_path):
    y = mx.sym.FullyConnected(x, num_hidden=2, name='fc')
    prefix = str(tmp_path / 'm')
    mx.model.save_checkpoint(prefix, 1, y, {'fc_weight': mx.nd.ones((3, 3)),
                                            'fc_bias': mx.nd.ones((2,))}, {})
    sym, args, aux = mx.model.load_checkpoint(prefix, 1)
    mod = mx.mod.Module(sym, data_names=['x'], label_names=None)
    mod.bind(data_shapes=[('x', (4, 3))])
    with pytest.raises(ValueError) as info:
        mod.set_params(args, aux)
    assert isinstance(info.value, MXNetError)
    for needle in ('fc_weight', '(3, 3)', '(2, 3)'):
        assert needle in str(info.value), str(info.value)
    mod.set_params({'fc_weight': mx.nd.ones((2, 3)), 'fc_bias': mx.nd.ones((2,))}, {})
    _usable()
