"""NCCL through cupy.cuda.nccl: the 'nccl' kvstore (several GPUs in one process) equals
'device', and DeviceClique's all-reduce. In CI on the strict CuPy stand-in
(``SYMGRAPH_STRICT_CUPY=4``), whose cupy.cuda.nccl checks pointers, devices, streams and
groups as NCCL needs them; the 2-process runs are in tests/dist/test_nccl_processes.py."""
import numpy as np
import pytest

import symgraph as mx
from symgraph.context import num_gpus
from symgraph.dist import nccl as dnccl

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(num_gpus() < 2, reason='needs two CUDA GPUs')]


def _gpus():
    return [mx.gpu(i) for i in range(min(num_gpus(), 4))]


@pytest.mark.parametrize('dtype', ['float16', 'float32', 'float64'])
@pytest.mark.parametrize('length', [1, 7, 1000])
def test_clique_allreduce_sums_over_devices(dtype, length):
    import cupy
    devs = [g.device_id for g in _gpus()]
    rng = np.random.RandomState(length)
    host = [rng.uniform(-1, 1, length).astype(dtype) for _ in devs]
    arrays = []
    for d, h in zip(devs, host):
        with cupy.cuda.Device(d):
            arrays.append(cupy.asarray(h))
    dnccl.clique(devs).allreduce(arrays)
    want = np.sum([h.astype('f8') for h in host], axis=0)
    tol = 2e-3 if dtype == 'float16' else 1e-6
    for d, a in zip(devs, arrays):
        assert a.device.id == d
        np.testing.assert_allclose(a.get().astype('f8'), want, rtol=tol, atol=tol)


def test_clique_refuses_shared_or_misplaced_devices():
    with pytest.raises(ValueError, match='NCCL needs distinct GPUs'):
        dnccl.DeviceClique([0, 0])
    import cupy
    with cupy.cuda.Device(1):
        wrong = cupy.zeros(3, 'f')
    with cupy.cuda.Device(0):
        right = cupy.zeros(3, 'f')
    with pytest.raises(ValueError, match=r'an array on gpu\(1\) where gpu\(0\)'):
        dnccl.clique([0, 1]).allreduce([wrong, right])


@pytest.mark.parametrize('update', [False, True])
def test_nccl_store_equals_device_store(update):
    devs = _gpus()
    rng = np.random.RandomState(3)
    host = {k: [rng.uniform(-1, 1, shape).astype('f') for _ in devs]
            for k, shape in ((3, (4, 5)), (9, (7,)))}
    results = {}
    for kind in ('nccl', 'device'):
        kv = mx.kv.create(kind)
        assert kv.type == kind
        keys = sorted(host)
        kv.init(keys, [mx.nd.ones(host[k][0].shape) for k in keys])
        if update:
            kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9))
        outs = {k: [mx.nd.zeros(host[k][0].shape, ctx=d) for d in devs] for k in keys}
        for _ in range(2):
            kv.push(keys, [[mx.nd.array(h, ctx=d) for h, d in zip(host[k], devs)]
                           for k in keys])
        kv.pull(keys, out=[outs[k] for k in keys])
        # pushpull in place (the all-reduce leaves the sum on every device)
        vals = [mx.nd.array(h, ctx=d) for h, d in zip(host[3], devs)]
        if not update:
            kv.pushpull(3, vals)
            for v, d in zip(vals, devs):
                assert v.context == d
        results[kind] = ({k: [o.asnumpy() for o in outs[k]] for k in keys},
                         [v.asnumpy() for v in vals])
    want = {k: np.sum(host[k], axis=0) for k in host}
    for k in host:
        for got, ref in zip(results['nccl'][0][k], results['device'][0][k]):
            np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6)
            if not update:
                np.testing.assert_allclose(got, want[k], rtol=1e-6, atol=1e-6)
    for got, ref in zip(*(results[k][1] for k in ('nccl', 'device'))):
        np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6)


def test_module_fit_with_the_nccl_store_equals_device():
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, (16, 6)).astype('f')
    y = rng.randint(0, 3, 16).astype('f')
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=3,
                                                     name='fc'), name='softmax')
    params = {}
    for kind in ('nccl', 'device'):
        mx.random.seed(1)
        np.random.seed(1)
        mod = mx.mod.Module(net, context=_gpus()[:2])
        mod.fit(mx.io.NDArrayIter(x, y, 8), num_epoch=2, kvstore=kind,
                optimizer_params={'learning_rate': 0.5})
        params[kind] = {k: v.asnumpy() for k, v in mod.get_params()[0].items()}
    for k in params['device']:
        np.testing.assert_allclose(params['nccl'][k], params['device'][k], rtol=1e-5,
                                   atol=1e-6)
