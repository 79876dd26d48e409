"""Copies between contexts, binding arrays of another context, and GPU contexts without
CuPy or without a device (logical CPU devices stand in for GPUs here)."""
import sys

import numpy as np
import pytest

import symgraph as mx
from symgraph.base import MXNetError


def test_copyto_and_as_in_context_between_logical_devices():
    a = mx.nd.array([[1, 2, 3]], ctx=mx.cpu(0))
    b = a.as_in_context(mx.cpu(1))
    assert b.context == mx.cpu(1) and b is not a
    np.testing.assert_array_equal(b.asnumpy(), a.asnumpy())
    b[:] = 7                                     # a copy, not a view
    np.testing.assert_array_equal(a.asnumpy(), [[1, 2, 3]])
    c = mx.nd.zeros((1, 3), ctx=mx.cpu(2))
    assert a.copyto(c) is c and c.context == mx.cpu(2)
    np.testing.assert_array_equal(c.asnumpy(), [[1, 2, 3]])
    assert a.as_in_context(mx.cpu(0)) is a


def _bn_net():
    fc = mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=3, name='fc')
    return mx.sym.BatchNorm(fc, fix_gamma=False, name='bn')


def test_binding_arrays_of_another_context_copies_them_at_every_run():
    """As in MXNet: the bound arrays stay the user's; values cross devices each run."""
    rng = np.random.RandomState(0)
    shapes = {'data': (4, 5), 'fc_weight': (3, 5), 'fc_bias': (3,), 'bn_gamma': (3,),
              'bn_beta': (3,)}
    values = {k: rng.uniform(-1, 1, s) for k, s in shapes.items()}
    aux_values = {'bn_moving_mean': np.zeros(3), 'bn_moving_var': np.ones(3)}
    net = _bn_net()

    def bind(ctx_of_arrays, grad_req):
        args = {k: mx.nd.array(v, ctx=ctx_of_arrays) for k, v in values.items()}
        grads = {k: mx.nd.ones(v.shape, ctx=ctx_of_arrays) for k, v in values.items()}
        aux = {k: mx.nd.array(v, ctx=ctx_of_arrays) for k, v in aux_values.items()}
        return net.bind(mx.cpu(1), args, args_grad=grads, grad_req=grad_req,
                        aux_states=aux), args, grads, aux

    ref, *_ = bind(mx.cpu(1), 'add')
    exe, args, grads, aux = bind(mx.cpu(0), 'add')
    assert exe.arg_dict['data'] is args['data']          # the user's array stays bound
    head = rng.uniform(-1, 1, (4, 3))
    for e in (ref, exe):
        e.arg_dict['data'][:] = values['data'] * 2       # written after bind: seen by forward
        e.forward(is_train=True)
        e.backward([mx.nd.array(head)])
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), ref.outputs[0].asnumpy())
    assert exe.outputs[0].context == mx.cpu(1)
    for k in values:     # gradients land in the user's arrays, added to their ones
        assert grads[k].context == mx.cpu(0)
        np.testing.assert_allclose(grads[k].asnumpy(), ref.grad_dict[k].asnumpy(), err_msg=k)
    assert not np.allclose(grads['fc_weight'].asnumpy(), 1)
    for k in aux_values:  # running statistics written back to the user's aux arrays
        np.testing.assert_allclose(aux[k].asnumpy(), ref.aux_dict[k].asnumpy(), err_msg=k)
    assert not np.allclose(aux['bn_moving_mean'].asnumpy(), 0)


def test_gpu_without_cupy_fails_clearly_and_cpu_still_works(monkeypatch):
    monkeypatch.delitem(sys.modules, 'cupy', raising=False)
    monkeypatch.setitem(sys.modules, 'cupy', None)       # `import cupy` raises ImportError
    assert mx.context.num_gpus() == 0
    with pytest.raises(MXNetError, match=r'CuPy.*pip install "symgraph\[cuda12\]"'):
        mx.nd.zeros((2, 2), ctx=mx.gpu(0))
    with pytest.raises(MXNetError, match='CuPy'):
        mx.sym.var('x').simple_bind(mx.gpu(), x=(2,))
    x = mx.nd.array([1.0, 2.0])                           # the CPU is unaffected
    np.testing.assert_allclose((x * 2).asnumpy(), [2, 4])


@pytest.mark.skipif(mx.context.num_gpus() > 0, reason='a GPU is visible')
def test_gpu_without_a_device_fails_clearly():
    pytest.importorskip('cupy')
    with pytest.raises(MXNetError, match=r'gpu\(0\) requested but 0 GPU'):
        mx.nd.zeros((2,), ctx=mx.gpu())


def test_data_parallel_group_refuses_mixed_device_kinds():
    with pytest.raises(MXNetError, match='all-CPU or all-GPU'):
        mx.dist.DataParallelExecutor(mx.sym.var('x'), [mx.cpu(0), mx.gpu(0)], x=(2, 1))


def test_default_ctx_class_property():
    """MXNet's Context.default_ctx: the thread's current context, and settable."""
    import symgraph as mx
    assert getattr(mx.Context._state, 'value', None) is None     # no scope left open
    assert mx.Context.default_ctx == mx.current_context()
    with mx.cpu(3):
        assert mx.Context.default_ctx == mx.cpu(3)
    try:
        mx.Context.default_ctx = mx.cpu(2)
        assert mx.current_context() == mx.cpu(2)
        assert mx.nd.zeros((1,)).context == mx.cpu(2)
        with mx.cpu(4):
            mx.Context.default_ctx = mx.cpu(5)       # the scope's, until it ends
            assert mx.current_context() == mx.cpu(5)
        assert mx.current_context() == mx.cpu(2)
    finally:
        mx.test_utils.set_default_context(None)
    assert mx.current_context() == mx.cpu(0)
    import pytest
    with pytest.raises(ValueError):
        mx.Context.default_ctx = 'cpu'


def test_one_context_object_entered_twice_restores_the_outer_scope():
    import symgraph as mx
    ctx, other = mx.cpu(6), mx.cpu(7)
    with ctx:
        with other:
            with ctx:
                assert mx.current_context() == ctx
            assert mx.current_context() == other
        assert mx.current_context() == ctx
    assert getattr(mx.Context._state, 'value', None) is None
