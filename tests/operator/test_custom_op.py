"""Custom operators written in Python (``mx.operator``) inside symbolic graphs and mx.nd."""
import warnings

import numpy as np
import pytest

import symgraph as mx
from symgraph.base import MXNetError
from symgraph.context import num_gpus

LOG = []


# ---------------------------------------------------------------------------------
# operators used by the tests (registered once at import)

class _MulAdd(mx.operator.CustomOp):
    """out0 = a * b + c, out1 = sin(a); the aux state counts training forwards."""

    def forward(self, is_train, req, in_data, out_data, aux):
        LOG.append(('forward', is_train, list(req)))
        a, b, c = in_data
        self.assign(out_data[0], req[0], a * b + c)
        self.assign(out_data[1], req[1], np.sin(a.asnumpy()))
        if aux and is_train:
            aux[0][:] = aux[0] + 1

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        LOG.append(('backward', list(req)))
        a, b, c = in_data
        g0, g1 = out_grad
        ga = g0 * b + g1 * mx.nd.array(np.cos(a.asnumpy()), dtype=a.dtype)
        self.assign(in_grad[0], req[0], ga)
        self.assign(in_grad[1], req[1], (g0 * a).asnumpy())     # NumPy source
        self.assign(in_grad[2], req[2], g0)                      # NDArray source


@mx.operator.register('t_muladd')
class _MulAddProp(mx.operator.CustomOpProp):
    def __init__(self, with_aux='False', **kwargs):
        super().__init__(need_top_grad=True)
        LOG.append(('prop', with_aux, dict(kwargs)))
        self.with_aux = with_aux == 'True'

    def list_arguments(self):
        return ['a', 'b', 'c']

    def list_outputs(self):
        return ['prod', 'sine']

    def list_auxiliary_states(self):
        return ['count'] if self.with_aux else []

    def infer_shape(self, in_shape):
        LOG.append(('infer_shape', [list(s) for s in in_shape]))
        s = in_shape[0]
        aux = [(1,)] if self.with_aux else []
        return [s, s, s], [s, s], aux

    def create_operator(self, ctx, in_shapes, in_dtypes):
        LOG.append(('create', str(ctx), in_shapes, in_dtypes))
        return _MulAdd()


class _Loss(mx.operator.CustomOp):
    """A squared-error loss head: grad = (x - label) * scale, no output gradient used."""

    def __init__(self, scale, fail):
        super().__init__()
        self.scale = scale
        self.fail = fail

    def forward(self, is_train, req, in_data, out_data, aux):
        if self.fail[0]:
            raise ValueError('deliberate failure in forward')
        self.assign(out_data[0], req[0], in_data[0])

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        if self.fail[1] == 'out_grad':
            out_grad[0].asnumpy()
        if self.fail[1] == 'in_data':
            in_data[0].shape
        diff = out_data[0] - in_data[1]
        self.assign(in_grad[0], req[0], diff * self.scale)
        self.assign(in_grad[1], req[1], 0)


FAIL = [False, None]


@mx.operator.register('t_loss')
class _LossProp(mx.operator.CustomOpProp):
    def __init__(self, scale='1'):
        super().__init__(need_top_grad=False)
        self.scale = float(scale)

    def list_arguments(self):
        return ['data', 'label']

    def infer_shape(self, in_shape):
        return [in_shape[0], in_shape[0]], [in_shape[0]]

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        # only the label and the output: data is freed after forward
        return [in_data[1], out_data[0]]

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return _Loss(self.scale, FAIL)


def _bad_prop(result):
    class Bad(mx.operator.CustomOpProp):
        def infer_shape(self, in_shape):
            return result(in_shape)
    return Bad


@pytest.fixture(autouse=True)
def _clear_log():
    LOG.clear()
    FAIL[:] = [False, None]
    yield


def _arrays(*shapes, seed=0, dtype=np.float32):
    rng = np.random.RandomState(seed)
    return [rng.uniform(-1, 1, s).astype(dtype) for s in shapes]


# ---------------------------------------------------------------------------------
# registry and symbol creation

def test_register_lists_and_replaces_with_warning():
    names = mx.operator.get_all_registered_operators()
    assert 't_muladd' in names and 'FullyConnected' in names and 'Custom' in names

    @mx.operator.register('t_twice_registered')
    class First(mx.operator.CustomOpProp):
        pass

    with pytest.warns(UserWarning, match='t_twice_registered'):
        @mx.operator.register('t_twice_registered')
        class Second(mx.operator.CustomOpProp):
            def list_outputs(self):
                return ['second']
    y = mx.sym.Custom(mx.sym.var('x'), op_type='t_twice_registered', name='tw')
    assert y.list_outputs() == ['tw_second']


def test_register_rejects_non_prop():
    with pytest.raises(TypeError, match='CustomOpProp'):
        mx.operator.register('t_not_a_prop')(object)


def test_unknown_op_type_fails_at_creation_naming_registered():
    with pytest.raises(MXNetError) as info:
        mx.sym.Custom(mx.sym.var('x'), op_type='t_no_such_op')
    msg = str(info.value)
    assert "'t_no_such_op'" in msg and 't_muladd' in msg and 't_loss' in msg
    with pytest.raises(MXNetError, match='op_type'):
        mx.sym.Custom(mx.sym.var('x'))


def test_kwargs_reach_prop_as_strings_and_attrs():
    y = mx.sym.Custom(mx.sym.var('x'), op_type='t_muladd', k=3, z=(1, 2), f=0.5,
                      name='m')
    assert LOG[0] == ('prop', 'False', {'k': '3', 'z': '(1, 2)', 'f': '0.5'})
    assert y[0].attr('op_type') == 't_muladd' and y[0].attr('k') == '3'
    assert y.list_outputs() == ['m_prod', 'm_sine']
    # every omitted input becomes a Variable <node>_<arg> carrying the node's attributes
    assert y.list_arguments() == ['x', 'm_b', 'm_c']
    assert y.attr_dict()['m_b']['op_type'] == 't_muladd'
    with mx.name.NameManager():
        auto = mx.sym.Custom(mx.sym.var('x'), op_type='t_muladd')
    assert auto[0].name == 'custom0' and auto.list_arguments() == ['x', 'custom0_b', 'custom0_c']


def test_keyword_inputs_follow_list_arguments_and_graph_arguments():
    a = mx.sym.var('a')
    fc = mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=4, name='fc')
    y = mx.sym.Custom(c=a, a=fc, op_type='t_muladd', name='m')
    # the graph's arguments: everything the inputs depend on, in MXNet's order
    assert y.list_arguments() == ['data', 'fc_weight', 'fc_bias', 'm_b', 'a']
    with pytest.raises(MXNetError, match='unknown input'):
        mx.sym.Custom(d=a, op_type='t_muladd')


def test_infer_shape_asks_only_the_prop():
    y = mx.sym.Custom(mx.sym.var('x'), op_type='t_muladd', name='m')
    arg, out, aux = y.infer_shape(x=(2, 3))
    assert arg == [(2, 3)] * 3 and out == [(2, 3), (2, 3)] and aux == []
    kinds = {e[0] for e in LOG}
    assert 'create' not in kinds and 'forward' not in kinds
    # unknown shapes reach the prop as [] (MXNet's convention)
    LOG.clear()
    assert y.infer_shape_partial() == ([(), (), ()], [(), ()], [])
    assert ('infer_shape', [[], [], []]) in LOG
    # the default infer_type gives outputs the first argument's type (MXNet's values)
    with pytest.warns(UserWarning, match='m_b'):
        assert y.infer_type(x='float64') == (None, None, None)
    assert y.infer_type_partial(x='float64') == ([np.float64, None, None],
                                                  [np.float64, np.float64], [])


@pytest.mark.parametrize('result, match', [
    (lambda s: ([s[0]], [s[0]], [], []), '2 or 3 lists'),
    (lambda s: ([s[0]], [s[0], s[0]]), r"returned 2 outputs but the prop lists 1"),
    (lambda s: ([], [s[0]]), r"returned 0 arguments"),
    (lambda s: ([s[0]], [5]), "tuple or list of ints"),
    (lambda s: ([s[0]], [(2, 'a')]), "tuple or list of ints"),
])
def test_infer_shape_result_errors_name_the_op(result, match):
    op_type = 't_bad_shape_%d' % len(mx.operator.get_all_registered_operators())
    mx.operator.register(op_type)(_bad_prop(result))
    y = mx.sym.Custom(mx.sym.var('x'), op_type=op_type, name='bad')
    with pytest.raises(MXNetError, match=match) as info:
        y.infer_shape(x=(2, 3))
    assert "'%s'" % op_type in str(info.value) and "'bad'" in str(info.value)


def test_prop_exception_in_infer_shape_is_chained():
    def boom(s):
        raise KeyError('no such key')
    mx.operator.register('t_boom_shape')(_bad_prop(lambda s: boom(s) if s[0] else (s, s)))
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        y = mx.sym.Custom(mx.sym.var('x'), op_type='t_boom_shape', name='bb')
        y.infer_shape_partial()        # unknown inputs: the failure waits for complete input
        with pytest.raises(MXNetError, match="t_boom_shape.*KeyError") as info:
            y.infer_shape(x=(2, 3))
    cause = info.value.__cause__
    while cause is not None and not isinstance(cause, KeyError):
        cause = cause.__cause__
    assert isinstance(cause, KeyError)


# ---------------------------------------------------------------------------------
# forward and backward

def _muladd_exe(grad_req='write', with_aux=False, shape=(3, 4), dtype=np.float32):
    y = mx.sym.Custom(mx.sym.var('a'), mx.sym.var('b'), mx.sym.var('c'), op_type='t_muladd',
                      with_aux=with_aux, name='m')
    vals = _arrays(shape, shape, shape, dtype=dtype)
    args = {k: mx.nd.array(v, dtype=dtype) for k, v in zip('abc', vals)}
    grads = {k: mx.nd.ones(shape, dtype=dtype) for k in 'abc'}
    aux = {'m_count': mx.nd.zeros((1,), dtype=dtype)} if with_aux else None
    return y.bind(mx.cpu(), args, args_grad=grads, grad_req=grad_req, aux_states=aux), vals


def test_forward_backward_values_and_protocol():
    exe, (a, b, c) = _muladd_exe()
    outs = exe.forward(is_train=True)
    np.testing.assert_allclose(outs[0].asnumpy(), a * b + c, rtol=1e-6)
    np.testing.assert_allclose(outs[1].asnumpy(), np.sin(a), rtol=1e-6)
    g0, g1 = _arrays((3, 4), (3, 4), seed=1)
    exe.backward([mx.nd.array(g0), mx.nd.array(g1)])
    gd = exe.grad_dict
    np.testing.assert_allclose(gd['a'].asnumpy(), g0 * b + g1 * np.cos(a), rtol=1e-5)
    np.testing.assert_allclose(gd['b'].asnumpy(), g0 * a, rtol=1e-6)
    np.testing.assert_allclose(gd['c'].asnumpy(), g0, rtol=1e-6)
    fwd = [e for e in LOG if e[0] == 'forward']
    assert fwd == [('forward', 1, ['write', 'write'])]
    assert type(fwd[0][1]) is int
    assert ('backward', ['write', 'write', 'write']) in LOG
    create = [e for e in LOG if e[0] == 'create']
    assert create == [('create', 'cpu(0)', [[3, 4]] * 3, [0, 0, 0])]


def test_operator_created_once_per_shapes():
    exe, _ = _muladd_exe()
    for _ in range(3):
        exe.forward(is_train=True)
        exe.backward([mx.nd.ones((3, 4)), mx.nd.ones((3, 4))])
    exe.forward(is_train=False)
    assert len([e for e in LOG if e[0] == 'create']) == 1
    exe2 = exe.reshape(a=(2, 4), b=(2, 4), c=(2, 4))
    exe2.forward(is_train=True)
    exe2.backward([mx.nd.ones((2, 4)), mx.nd.ones((2, 4))])
    create = [e for e in LOG if e[0] == 'create']
    assert len(create) == 2 and create[1][2] == [[2, 4]] * 3


def test_numeric_gradient_float64():
    y = mx.sym.Custom(mx.sym.var('a'), mx.sym.var('b'), mx.sym.var('c'), op_type='t_muladd',
                      name='m')
    a, b, c = _arrays((2, 3), (2, 3), (2, 3), seed=3, dtype=np.float64)
    mx.test_utils.check_numeric_gradient(y, {'a': a, 'b': b, 'c': c}, numeric_eps=1e-5,
                                         rtol=1e-5, atol=1e-7, dtype=np.float64)


def test_numeric_gradient_inside_a_graph():
    x = mx.sym.var('x')
    h = mx.sym.FullyConnected(x, num_hidden=3, name='fc')
    y = mx.sym.Custom(h, mx.sym.tanh(h), h * h,
                      op_type='t_muladd', name='m')
    out = y[0] + y[1] * 2.0
    loc = dict(zip(['x', 'fc_weight', 'fc_bias'],
                   _arrays((4, 5), (3, 5), (3,), seed=4, dtype=np.float64)))
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        arg_shapes, _, _ = out.infer_shape(x=(4, 5))
    assert arg_shapes is not None
    mx.test_utils.check_numeric_gradient(out, loc, numeric_eps=1e-5, rtol=1e-4, atol=1e-6,
                                         dtype=np.float64)


def test_aux_state_updated_in_training_only():
    exe, _ = _muladd_exe(with_aux=True)
    assert exe._symbol.list_auxiliary_states() == ['m_count']
    exe.forward(is_train=True)
    exe.forward(is_train=True)
    exe.forward(is_train=False)
    assert exe.aux_dict['m_count'].asnumpy().tolist() == [2.0]
    assert [e[3] for e in LOG if e[0] == 'create'] == [[0, 0, 0, 0]]


def test_add_req_accumulates_and_is_seen_by_the_op():
    exe, (a, b, c) = _muladd_exe(grad_req={'a': 'add', 'b': 'write', 'c': 'null'})
    heads = [mx.nd.ones((3, 4)), mx.nd.zeros((3, 4))]
    for _ in range(2):
        exe.forward(is_train=True)
        exe.backward(heads)
    assert ('backward', ['add', 'write', 'null']) in LOG
    np.testing.assert_allclose(exe.grad_dict['a'].asnumpy(), 1 + 2 * b, rtol=1e-6)
    np.testing.assert_allclose(exe.grad_dict['b'].asnumpy(), a, rtol=1e-6)
    # a gradient array bound with 'null' stays listed (as MXNet) and untouched
    np.testing.assert_array_equal(exe.grad_dict['c'].asnumpy(), np.ones((3, 4)))


def test_add_req_only_where_the_variable_feeds_the_op_directly():
    x = mx.sym.var('x')
    y = mx.sym.Custom(mx.sym.exp(x), x, mx.sym.var('c'), op_type='t_muladd', name='m')
    exe = y.simple_bind(mx.cpu(), grad_req='add', x=(2, 2))
    exe.forward(is_train=True)
    exe.backward([mx.nd.ones((2, 2)), mx.nd.ones((2, 2))])
    assert ('backward', ['write', 'add', 'add']) in LOG


@pytest.mark.parametrize('req', ['null', 'write', 'inplace', 'add'])
@pytest.mark.parametrize('kind', ['numpy', 'ndarray', 'scalar', 'list'])
def test_assign_accepts_numpy_ndarray_scalar_for_every_req(req, kind):
    dst = mx.nd.array(np.full((2, 3), 5.0))
    src_np = np.arange(6, dtype=np.float64).reshape(2, 3)
    src = {'numpy': src_np, 'ndarray': mx.nd.array(src_np), 'scalar': 2.0,
           'list': src_np.tolist()}[kind]
    mx.operator.CustomOp().assign(dst, req, src)
    val = 2.0 if kind == 'scalar' else src_np
    want = {'null': np.full((2, 3), 5.0), 'write': val + np.zeros((2, 3)),
            'inplace': val + np.zeros((2, 3)), 'add': 5.0 + val}[req]
    np.testing.assert_allclose(dst.asnumpy(), want)
    assert dst.dtype == np.float32


def test_assign_rejects_unknown_req():
    with pytest.raises(MXNetError, match='req'):
        mx.operator.CustomOp().assign(mx.nd.zeros((2,)), 'overwrite', 1.0)


def test_in_data_is_read_only():
    class Writer(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            in_data[0][:] = 0

    @mx.operator.register('t_writer')
    class WriterProp(mx.operator.CustomOpProp):
        def create_operator(self, ctx, in_shapes, in_dtypes):
            return Writer()
    with pytest.raises(MXNetError, match='read-only'):
        mx.nd.Custom(mx.nd.ones((2,)), op_type='t_writer')


def test_an_output_never_written_is_an_error_not_zeros():
    # MXNet hands back uninitialised memory; symgraph refuses (issue 14), naming the output
    class Lazy(mx.operator.CustomOp):
        pass

    @mx.operator.register('t_lazy')
    class LazyProp(mx.operator.CustomOpProp):
        def create_operator(self, ctx, in_shapes, in_dtypes):
            return Lazy()
    with pytest.raises(mx.operator.UnassignedResultError,
                       match=r"'t_lazy'.*forward never assigned output 'output'"):
        mx.nd.Custom(mx.nd.ones((3, 2)), op_type='t_lazy')


# ---------------------------------------------------------------------------------
# need_top_grad=False, backward dependencies, errors

def _loss_exe(scale='0.5'):
    data = mx.sym.var('data')
    fc = mx.sym.FullyConnected(data, num_hidden=3, name='fc')
    y = mx.sym.Custom(fc, op_type='t_loss', scale=scale, name='loss')
    assert y.list_arguments() == ['data', 'fc_weight', 'fc_bias', 'loss_label']
    exe = y.simple_bind(mx.cpu(), data=(4, 5), grad_req={'fc_weight': 'write'})
    vals = _arrays((4, 5), (3, 5), (4, 3), seed=5)
    for k, v in zip(['data', 'fc_weight', 'loss_label'], vals):
        exe.arg_dict[k][:] = v
    return exe, vals


def test_need_top_grad_false_is_a_loss_head():
    exe, (x, w, label) = _loss_exe()
    out = exe.forward(is_train=True)[0].asnumpy()
    np.testing.assert_allclose(out, x @ w.T, rtol=1e-5, atol=1e-6)
    exe.backward()                          # no head gradient needed
    want = 0.5 * (out - label).T @ x
    np.testing.assert_allclose(exe.grad_dict['fc_weight'].asnumpy(), want, rtol=1e-5,
                               atol=1e-6)


def test_undeclared_dependencies_are_freed_and_unavailable():
    exe, _ = _loss_exe()
    plan = exe._plan
    node = [n for n in plan.order if n.name == 'loss'][0]
    data_entry, label_entry = plan.in_entries(node)
    assert data_entry not in plan.saved and label_entry in plan.saved
    for what, match in (('out_grad', 'need_top_grad=False'),
                        ('in_data', "in_data 'data'.*declare_backward_dependency")):
        FAIL[1] = what
        exe.forward(is_train=True)
        with pytest.raises(MXNetError, match=match) as info:
            exe.backward()
        assert "'t_loss'" in str(info.value) and "'loss'" in str(info.value)


def test_exception_in_forward_names_op_and_node_and_keeps_traceback():
    exe, _ = _loss_exe()
    FAIL[0] = True
    with pytest.raises(MXNetError) as info:
        exe.forward(is_train=True)
    msg = str(info.value)
    assert "'t_loss'" in msg and "node 'loss'" in msg and 'deliberate failure' in msg
    cause = info.value
    while cause.__cause__ is not None:
        cause = cause.__cause__
    assert isinstance(cause, ValueError)
    frames = []
    tb = cause.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame.f_code.co_name)
        tb = tb.tb_next
    assert frames[-1] == 'forward'      # the user's own frame is in the traceback
    with pytest.raises(MXNetError, match='call forward'):
        exe.backward()
    FAIL[0] = False                         # the executor is still usable
    exe.forward(is_train=True)
    exe.backward()
    assert np.abs(exe.grad_dict['fc_weight'].asnumpy()).sum() > 0


def test_json_round_trip():
    y = mx.sym.Custom(mx.sym.var('a'), mx.sym.var('b'), op_type='t_muladd', with_aux=True,
                      tag=(1, 2), name='m')
    z = mx.sym.load_json(y.tojson())
    assert z.tojson() == y.tojson()
    assert z.list_arguments() == y.list_arguments() == ['a', 'b', 'm_c']
    assert z.list_auxiliary_states() == ['m_count']
    assert z[0].attr('tag') == '(1, 2)'
    vals = dict(zip(['a', 'b', 'm_c'], _arrays((2, 3), (2, 3), (2, 3))))
    outs = []
    for s in (y, z):
        exe = s.bind(mx.cpu(), {k: mx.nd.array(v) for k, v in vals.items()},
                     aux_states={'m_count': mx.nd.zeros((1,))})
        outs.append([o.asnumpy() for o in exe.forward()])
    np.testing.assert_array_equal(outs[0][0], outs[1][0])


def test_nd_custom_imperative():
    a, b, c = _arrays((2, 3), (2, 3), (2, 3))
    prod, sine = mx.nd.Custom(mx.nd.array(a), mx.nd.array(b), c=mx.nd.array(c),
                              op_type='t_muladd')
    np.testing.assert_allclose(prod.asnumpy(), a * b + c, rtol=1e-6)
    np.testing.assert_allclose(sine.asnumpy(), np.sin(a), rtol=1e-6)
    assert [e for e in LOG if e[0] == 'forward'] == [('forward', 0, ['write', 'write'])]
    with pytest.raises(MXNetError, match='missing inputs'):
        mx.nd.Custom(mx.nd.array(a), op_type='t_muladd')


def test_float64_graph_keeps_dtype():
    exe, (a, b, c) = _muladd_exe(dtype=np.float64)
    out = exe.forward(is_train=True)[0]
    assert out.dtype == np.float64
    assert [e[3] for e in LOG if e[0] == 'create'] == [[1, 1, 1]]


@pytest.mark.gpu
@pytest.mark.skipif(num_gpus() == 0, reason='needs a CUDA GPU and CuPy')
def test_gpu_forward_backward_match_cpu():
    import cupy
    results = []
    for ctx in (mx.cpu(), mx.gpu(0)):
        x = mx.sym.var('x')
        y = mx.sym.Custom(x, x * 2.0, x + 1.0, op_type='t_muladd', name='m')
        exe = y.simple_bind(ctx, x=(3, 4))
        exe.arg_dict['x'][:] = _arrays((3, 4))[0]
        outs = exe.forward(is_train=True)
        exe.backward([mx.nd.ones((3, 4), ctx=ctx), mx.nd.ones((3, 4), ctx=ctx)])
        results.append([o.asnumpy() for o in outs] + [exe.grad_dict['x'].asnumpy()])
        if ctx.is_gpu:
            assert isinstance(exe.outputs[0]._data, cupy.ndarray)
    assert any(e[:2] == ('create', 'gpu(0)') for e in LOG)
    for r_cpu, r_gpu in zip(*results):
        np.testing.assert_allclose(r_cpu, r_gpu, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------
# the examples (each registers its op once per session)

_EXAMPLES = {}


def _example(name):
    import importlib.util
    import os
    if name not in _EXAMPLES:
        path = os.path.join(os.path.dirname(__file__), '..', '..', 'examples', 'custom_op',
                            name + '.py')
        spec = importlib.util.spec_from_file_location('example_custom_' + name, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        _EXAMPLES[name] = mod
    return _EXAMPLES[name]


def test_example_proposal_target_samples_and_trains(capsys):
    mod = _example('proposal_target')
    history = mod.main(steps=12)
    assert np.mean([h[0] for h in history[-3:]]) < np.mean([h[0] for h in history[:3]])
    # the layer alone: 4 outputs, foreground labels/weights consistent with the IoUs
    rng = np.random.RandomState(0)
    img, rois, gt = mod.make_scene(rng)
    outs = mx.nd.Custom(mx.nd.array(rois), mx.nd.array(gt), op_type='proposal_target',
                        num_classes=4, batch_rois=16, seed=1)
    r, label, target, weight = [o.asnumpy() for o in outs]
    assert r.shape == (16, 5) and label.shape == (16,) and target.shape == (16, 16)
    fg = label > 0
    assert 0 < fg.sum() <= 4 and not fg[int(fg.sum()):].any()
    iou = mod.box_iou(r[:, 1:], gt[0, :, :4]).max(axis=1)
    assert (iou[fg] >= 0.5).all() and (iou[~fg] < 0.5).all()
    cols = weight.reshape(16, 4, 4).sum(axis=2)
    assert (cols[fg, label[fg].astype(int)] == 4).all() and cols.sum() == 4 * fg.sum()
    assert (target[weight == 0] == 0).all()


def test_example_softmax_matches_builtin(capsys):
    results = _example('softmax').main()
    assert abs(results['builtin'][1] - results['custom'][1]) <= 0.01
    assert results['custom'][0][-1] < results['custom'][0][0]
    assert 'custom softmax' in capsys.readouterr().out


def test_one_user_op_per_executor_and_backward_uses_its_own_forward():
    """MXNet creates the CustomOp per bind: two executors of one symbol keep separate
    state, and backward pairs with the same executor's forward."""
    made = []

    class Counter(mx.operator.CustomOp):
        def __init__(self):
            self.calls = 0

        def forward(self, is_train, req, in_data, out_data, aux):
            self.calls += 1
            self.assign(out_data[0], req[0], in_data[0] * self.calls)

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            self.assign(in_grad[0], req[0], out_grad[0] * self.calls)

    @mx.operator.register('t_counter')
    class CounterProp(mx.operator.CustomOpProp):
        def create_operator(self, ctx, in_shapes, in_dtypes):
            made.append(Counter())
            return made[-1]

    y = mx.sym.Custom(mx.sym.var('x'), op_type='t_counter', name='c')
    e1 = y.simple_bind(mx.cpu(), x=(2,))
    e2 = y.simple_bind(mx.cpu(), x=(2,))
    e1.arg_dict['x'][:] = 1
    e2.arg_dict['x'][:] = 1
    e1.forward(is_train=True)
    e1.forward(is_train=True)
    out2 = e2.forward(is_train=True)[0].asnumpy()
    assert len(made) == 2
    assert out2.tolist() == [1, 1]                      # e2's op has seen one call
    e1.backward([mx.nd.ones((2,))])
    assert e1.grad_dict['x'].asnumpy().tolist() == [2, 2]   # e1's op has seen two
