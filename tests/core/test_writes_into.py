"""The ``writes_into`` protocol: the executor offers an operator the arrays it hands to the
user (output NDArrays; gradients bound with grad_req='write' that have one contribution)
or the storage plan's buffers (intermediate results), and skips its copy when the
operator returns that very array."""
import numpy as np
import pytest

import symgraph as mx
from symgraph.opdef import MXNetError, Operator, Param, register

SEEN = {'out': [], 'grad_out': []}


@register
class _ScaleInto(Operator):
    """y = k * x, computed into the offered array when ``use_dest`` (else a new one)."""

    name = '_test_scale_into'
    k = Param(float, 2.0)
    use_dest = Param(bool, True)
    writes_into = True

    def list_arguments(self):
        return ['data']

    def infer_shape(self, in_shapes):
        return [in_shapes[0]], [in_shapes[0]], []

    def forward(self, xp, inputs, aux, is_train, out=None):
        SEEN['out'].append(out)
        dest = out[0] if out and self.use_dest else None
        return [xp.multiply(inputs[0], self.k, out=dest)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need, grad_out=None):
        SEEN['grad_out'].append(grad_out)
        dest = grad_out[0] if grad_out and self.use_dest else None
        return [xp.multiply(out_grads[0], self.k, out=dest)]


@pytest.fixture(autouse=True)
def _clear():
    SEEN['out'].clear()
    SEEN['grad_out'].clear()


@pytest.mark.parametrize('use_dest', [True, False])
def test_a_head_and_a_written_gradient_are_offered_and_used(use_dest):
    x = mx.sym.var('x')
    net = mx.sym._test_scale_into(x, k=3.0, use_dest=use_dest, name='s')
    exe = net.simple_bind(mx.cpu(), x=(2, 3))
    out_buf, grad_buf = exe.outputs[0]._data, exe.grad_dict['x']._data
    xv = np.arange(6.0).reshape(2, 3)
    exe.forward(is_train=True, x=xv)
    (offered,) = SEEN['out'][-1]
    assert offered is out_buf
    exe.backward([mx.nd.ones((2, 3))])
    (goffered,) = SEEN['grad_out'][-1]
    assert goffered is grad_buf
    # whether the operator used the arrays or returned new ones, the user sees the values
    # in the arrays they hold
    assert exe.outputs[0]._data is out_buf and exe.grad_dict['x']._data is grad_buf
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), 3 * xv)
    np.testing.assert_allclose(exe.grad_dict['x'].asnumpy(), np.full((2, 3), 3.0))


def test_nothing_of_the_users_is_offered_where_the_result_is_not_the_users_alone():
    x = mx.sym.var('x')
    inner = mx.sym._test_scale_into(x, k=2.0, name='inner')      # not a head
    twice = inner + mx.sym._test_scale_into(x, k=5.0, name='b')   # x gets two gradients
    exe = twice.simple_bind(mx.cpu(), x=(3,))
    exe.forward(is_train=True, x=np.ones(3))
    # intermediate results get the storage plan's buffers, never a user's array; the two
    # live at once (the sum reads both), so they are two buffers
    users = [a._data for a in exe.outputs + exe.arg_arrays + exe.grad_arrays]
    offered = [o[0] for o in SEEN['out']]
    assert all(o is not None and not any(np.shares_memory(o, u) for u in users)
               for o in offered)
    assert not np.shares_memory(offered[0], offered[1])
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), np.full(3, 7.0))
    exe.backward([mx.nd.ones(3)])
    assert SEEN['grad_out'] == [None, None]
    np.testing.assert_allclose(exe.grad_dict['x'].asnumpy(), np.full(3, 7.0))
    # grad_req='add' accumulates: the gradient array is not offered either
    SEEN['grad_out'].clear()
    net = mx.sym._test_scale_into(x, k=2.0)
    exe = net.simple_bind(mx.cpu(), grad_req='add', x=(3,))
    for _ in range(2):
        exe.forward(is_train=True, x=np.ones(3))
        exe.backward([mx.nd.ones(3)])
    assert SEEN['grad_out'] == [None, None]
    np.testing.assert_allclose(exe.grad_dict['x'].asnumpy(), np.full(3, 4.0))


def test_the_same_entry_twice_among_the_heads_fills_both_outputs():
    y = mx.sym._test_scale_into(mx.sym.var('x'), k=2.0)
    exe = mx.sym.Group([y, y]).simple_bind(mx.cpu(), x=(2,))
    exe.forward(x=np.array([1.0, 2.0]))
    for out in exe.outputs:
        np.testing.assert_allclose(out.asnumpy(), [2.0, 4.0])
    assert exe.outputs[0]._data is not exe.outputs[1]._data


def test_batchnorm_values_are_the_same_through_the_offered_arrays():
    """BatchNorm (which takes the offer on the GPU) as a head and as an inner node."""
    rng = np.random.RandomState(0)
    x = rng.standard_normal((4, 3, 5)).astype(np.float32)
    dy = rng.standard_normal((4, 3, 5)).astype(np.float32)
    data = mx.sym.var('data')
    head = mx.sym.BatchNorm(data, fix_gamma=False, name='bn')
    inner = mx.sym.BatchNorm(data, fix_gamma=False, name='bn') * 1.0
    results = []
    for net in (head, inner):
        exe = net.simple_bind(mx.cpu(), data=x.shape)
        exe.arg_dict['bn_gamma'][:] = 1.5
        exe.forward(is_train=True, data=x)
        exe.backward([mx.nd.array(dy)])
        results.append((exe.outputs[0].asnumpy(), exe.grad_dict['data'].asnumpy()))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def test_an_operator_claiming_writes_into_must_take_the_arrays():
    class Bad(Operator):
        name = '_test_bad_writes_into'
        writes_into = True

        def forward(self, xp, inputs, aux, is_train):
            return inputs

    with pytest.raises(MXNetError, match="_test_bad_writes_into sets writes_into but its "
                                         "forward takes no 'out'"):
        register(Bad)


def test_an_output_aware_shape_rule_must_be_declared():
    """A rule taking out_shapes without infer_shape_uses_outputs would never see them."""
    class Undeclared(Operator):
        name = '_test_undeclared_out_shapes'

        def infer_shape(self, in_shapes, out_shapes):
            return in_shapes, out_shapes, []

    class Overclaimed(Operator):
        name = '_test_overclaimed_out_shapes'
        infer_shape_uses_outputs = True

        def infer_shape(self, in_shapes):
            return in_shapes, in_shapes, []

    with pytest.raises(MXNetError, match='_test_undeclared_out_shapes: infer_shape takes the '
                                         'output shapes but the class does not set'):
        register(Undeclared)
    with pytest.raises(MXNetError, match='_test_overclaimed_out_shapes sets '
                                         'infer_shape_uses_outputs'):
        register(Overclaimed)
    assert '_test_undeclared_out_shapes' not in mx.opdef.list_ops()


@pytest.mark.gpu
@pytest.mark.skipif(mx.context.num_gpus() < 1, reason='needs a CUDA GPU')
def test_batchnorm_kernels_write_into_the_executor_arrays_on_a_gpu(monkeypatch):
    """On a GPU BatchNorm's fused kernels write the output and the data gradient straight
    into the executor's arrays: two full-size copies fewer per training step."""
    from symgraph.cuda import loader
    given = []
    fwd, bwd = loader.batchnorm_forward, loader.batchnorm_backward

    def spy_fwd(*args, out=None, **kw):
        given.append(('out', out is not None))
        return fwd(*args, out=out, **kw)

    def spy_bwd(*args, dx_out=None, **kw):
        given.append(('dx_out', dx_out is not None))
        return bwd(*args, dx_out=dx_out, **kw)
    monkeypatch.setattr(loader, 'batchnorm_forward', spy_fwd)
    monkeypatch.setattr(loader, 'batchnorm_backward', spy_bwd)
    rng = np.random.RandomState(1)
    x = rng.standard_normal((4, 3, 6)).astype(np.float32)
    dy = rng.standard_normal(x.shape).astype(np.float32)
    net = mx.sym.BatchNorm(mx.sym.var('data'), fix_gamma=False, name='bn')
    results = []
    for ctx in (mx.gpu(0), mx.cpu()):
        exe = net.simple_bind(ctx, data=x.shape)
        exe.forward(is_train=True, data=x)
        exe.backward([mx.nd.array(dy, ctx=ctx)])
        results.append((exe.outputs[0].asnumpy(), exe.grad_dict['data'].asnumpy()))
    assert given == [('out', True), ('dx_out', True)]
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
