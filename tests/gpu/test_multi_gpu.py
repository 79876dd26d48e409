"""Several distinct GPUs: device scopes, copies between devices, per-device kernels, the
ring all-reduce with peer copies, and SyncBatchNorm over a data-parallel group.

Skipped below two visible GPUs. In CI they run on the strict CuPy stand-in with four
devices (``SYMGRAPH_STRICT_CUPY=4``, see ``tests/cuda/strict_cupy.py``), which raises
wherever a kernel touches an array of another device than the current one or a stream
is used off its device, as CUDA would.
"""
import numpy as np
import pytest

import symgraph as mx
from symgraph import dist
from symgraph.context import num_gpus

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(num_gpus() < 2, reason='needs two CUDA GPUs')]


def _on(arr):
    return arr.context


def test_copies_between_devices_land_on_the_target():
    a = mx.nd.array(np.arange(12.0).reshape(3, 4), ctx=mx.gpu(0))
    b = a.copyto(mx.gpu(1))
    assert _on(b) == mx.gpu(1) and b._data.device.id == 1
    np.testing.assert_array_equal(b.asnumpy(), a.asnumpy())
    c = mx.nd.zeros((3, 4), ctx=mx.gpu(1))
    a.copyto(c)
    assert c._data.device.id == 1
    np.testing.assert_array_equal(c.asnumpy(), a.asnumpy())
    d = b.as_in_context(mx.gpu(0))
    assert d._data.device.id == 0
    c[:] = a                      # assignment across devices copies
    np.testing.assert_array_equal(c.asnumpy(), a.asnumpy())


def _net():
    data = mx.sym.var('data')
    net = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=4, name='conv')
    net = mx.sym.BatchNorm(net, fix_gamma=False, name='bn')
    net = mx.sym.Activation(net, act_type='relu')
    net = mx.sym.Pooling(net, kernel=(2, 2), stride=(2, 2), pool_type='max')
    net = mx.sym.FullyConnected(net, num_hidden=3, name='fc')
    return mx.sym.SoftmaxOutput(net, name='softmax')


def _params(exe, seed):
    rng = np.random.RandomState(seed)
    return {k: rng.uniform(-0.5, 0.5, v.shape).astype(np.float32)
            for k, v in exe.arg_dict.items() if k not in ('data', 'softmax_label')}


@pytest.mark.parametrize('device', [1, 0])
def test_executor_on_a_second_device_matches_the_cpu(device):
    """Convolution and BatchNorm kernels are compiled and launched per device; inputs
    from the CPU and from another GPU are copied in."""
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, (4, 2, 6, 6)).astype(np.float32)
    y = np.array([0, 2, 1, 2], np.float32)
    net = _net()
    results = []
    for ctx in (mx.cpu(), mx.gpu(device)):
        exe = net.simple_bind(ctx, data=x.shape)
        exe.copy_params_from({k: mx.nd.array(v) for k, v in _params(exe, 1).items()})
        other = mx.gpu(1 - device) if ctx.is_gpu else mx.cpu()
        out = exe.forward(is_train=True, data=mx.nd.array(x, ctx=other),
                          softmax_label=mx.nd.array(y, ctx=other))[0]
        exe.backward()
        assert _on(out) == ctx
        if ctx.is_gpu:
            assert all(g._data.device.id == device for g in exe.grad_arrays if g is not None)
        results.append((out.asnumpy(), {k: g.asnumpy() for k, g in exe.grad_dict.items()
                                            if g is not None},
                        {k: a.asnumpy() for k, a in exe.aux_dict.items()}))
    (o1, g1, a1), (o2, g2, a2) = results
    np.testing.assert_allclose(o2, o1, rtol=1e-4, atol=1e-5)
    for k in g1:
        np.testing.assert_allclose(g2[k], g1[k], rtol=1e-4, atol=1e-5, err_msg=k)
    for k in a1:
        np.testing.assert_allclose(a2[k], a1[k], rtol=1e-5, atol=1e-6, err_msg=k)


class _Scale(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        assert in_data[0].context == self.ctx, (in_data[0].context, self.ctx)
        self.assign(out_data[0], req[0], in_data[0] * 3.0)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0] * 3.0)


@mx.operator.register('multi_gpu_scale')
class _ScaleProp(mx.operator.CustomOpProp):
    def __init__(self):
        super().__init__(need_top_grad=True)

    def create_operator(self, ctx, shapes, dtypes):
        op = _Scale()
        op.ctx = ctx
        return op


def test_custom_op_arrays_live_on_the_executor_device():
    x = mx.sym.var('x')
    sym = mx.sym.Custom(x, op_type='multi_gpu_scale')
    exe = sym.simple_bind(mx.gpu(1), x=(2, 3))
    out = exe.forward(is_train=True, x=np.ones((2, 3)))[0]
    assert _on(out) == mx.gpu(1)
    exe.backward([mx.nd.ones((2, 3), ctx=mx.gpu(1))])
    np.testing.assert_array_equal(out.asnumpy(), 3.0)
    np.testing.assert_array_equal(exe.grad_dict['x'].asnumpy(), 3.0)


@pytest.mark.parametrize('dtype', [np.float16, np.float32, np.float64])
@pytest.mark.parametrize('length', [1, 5, 1001])
def test_allreduce_over_distinct_devices(length, dtype):
    from symgraph.cuda import import_cupy
    cupy = import_cupy()
    n = num_gpus()
    rng = np.random.RandomState(length)
    host = [rng.uniform(-1, 1, length).astype(dtype) for _ in range(n)]
    bufs = []
    for k, a in enumerate(host):
        with cupy.cuda.Device(k):
            bufs.append(cupy.asarray(a))
    dist.allreduce(bufs)
    want = dist.allreduce([a.copy() for a in host])[0]    # same schedule on the host
    for k, b in enumerate(bufs):
        assert b.device.id == k
        np.testing.assert_array_equal(cupy.asnumpy(b), want)


def test_sync_batchnorm_over_distinct_devices_equals_batchnorm():
    ndev = num_gpus()
    rng = np.random.RandomState(4)
    x = rng.uniform(-1, 1, (2 * ndev + 1, 3, 4, 4)).astype(np.float32)
    dy = rng.uniform(-1, 1, x.shape).astype(np.float32)
    params = {'bn_gamma': rng.uniform(0.5, 1.5, 3).astype(np.float32),
              'bn_beta': rng.uniform(-1, 1, 3).astype(np.float32)}
    data = mx.sym.var('data')
    ref = mx.sym.BatchNorm(data, fix_gamma=False, name='bn').simple_bind(mx.cpu(),
                                                                         data=x.shape)
    ref.copy_params_from({k: mx.nd.array(v) for k, v in params.items()})
    want = ref.forward(is_train=True, data=x)[0].asnumpy()
    ref.backward([mx.nd.array(dy)])
    sym = mx.sym.contrib.SyncBatchNorm(data, fix_gamma=False, ndev=ndev,
                                       key='multi-gpu', name='bn')
    group = dist.DataParallelExecutor(sym, [mx.gpu(k) for k in range(ndev)],
                                          data=x.shape)
    group.set_params(params)
    got = group.forward(is_train=True, data=x)[0].asnumpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    group.backward([dy])
    np.testing.assert_allclose(group.get_input_grads()[0].asnumpy(),
                               ref.grad_dict['data'].asnumpy(), rtol=1e-4, atol=1e-5)
    for k, exe in enumerate(group.execs):
        assert exe.outputs[0]._data.device.id == k
        for name in params:
            np.testing.assert_allclose(exe.grad_dict[name].asnumpy(),
                                       ref.grad_dict[name].asnumpy(), rtol=1e-4, atol=1e-5)
        for name, a in exe.aux_dict.items():
            np.testing.assert_allclose(a.asnumpy(), ref.aux_dict[name].asnumpy(),
                                       rtol=1e-5, atol=1e-6)


def test_data_parallel_training_steps_allreduce_gradients_across_devices():
    """Every parameter gradient is the sum of the per-device slices' gradients (plain
    BatchNorm normalises per device), on every device; 'add' accumulates over steps."""
    ndev = num_gpus()
    net = _net()
    rng = np.random.RandomState(3)
    x = rng.uniform(-1, 1, (2 * ndev + 1, 2, 6, 6)).astype(np.float32)
    y = rng.randint(0, 3, x.shape[0]).astype(np.float32)
    params = _params(net.simple_bind(mx.cpu(), data=x.shape), 5)
    reqs = {k: 'write' for k in params}
    reqs['conv_weight'] = 'add'
    group = dist.DataParallelExecutor(net, [mx.gpu(k) for k in range(ndev)],
                                          grad_req=reqs, data=x.shape, softmax_label=y.shape)
    group.set_params(params)
    want = _per_device_sums(net, params, x, y, [s.stop - s.start for s in group.slices])
    for step in (1, 2):
        group.forward(is_train=True, data=x, softmax_label=y)
        group.backward()
        for k, g in want.items():
            scale = step if k == 'conv_weight' else 1
            for exe in group.execs:
                assert exe.grad_dict[k]._data.device.id == exe._ctx.device_id
                np.testing.assert_allclose(exe.grad_dict[k].asnumpy(), scale * g,
                                           rtol=1e-4, atol=1e-5, err_msg=k)


def _per_device_sums(net, params, x, y, sizes):
    """Parameter gradients summed over the devices' slices, each run alone on the CPU."""
    total, start = {}, 0
    for size in sizes:
        sl = slice(start, start + size)
        start += size
        exe = net.simple_bind(mx.cpu(), data=x[sl].shape)
        exe.copy_params_from({k: mx.nd.array(v) for k, v in params.items()})
        exe.forward(is_train=True, data=x[sl], softmax_label=y[sl])
        exe.backward()
        for k in params:
            total[k] = total.get(k, 0) + exe.grad_dict[k].asnumpy()
    return total


def test_reshape_and_params_from_another_device_stay_on_the_executor_device():
    net = mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=3, name='fc')
    exe = net.simple_bind(mx.gpu(1), data=(2, 4))
    w = mx.nd.array(np.arange(12.0).reshape(3, 4), ctx=mx.gpu(0))
    exe.copy_params_from({'fc_weight': w, 'fc_bias': mx.nd.zeros(3, ctx=mx.gpu(0))})
    assert exe.arg_dict['fc_weight']._data.device.id == 1
    bigger = exe.reshape(allow_up_sizing=True, data=(5, 4))
    assert all(a._data.device.id == 1 for a in bigger.arg_arrays)
    out = bigger.forward(data=np.ones((5, 4)))[0]
    assert out.context == mx.gpu(1)
    np.testing.assert_allclose(out.asnumpy(), np.tile(np.arange(12.0).reshape(3, 4).sum(1),
                                                      (5, 1)))
    mx.nd.waitall()
