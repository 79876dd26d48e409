"""Optimizers and kvstores on GPUs: every golden optimizer case with the weights on gpu(0)
against MXNet 1.9.1's CPU numbers, states that stay on the device and pickle from it, and
'device' / 'local' stores over the visible GPUs (the ring all-reduce with two or more).

In CI they run on the strict CuPy stand-in (``SYMGRAPH_STRICT_CUPY=4``)."""
import os

import numpy as np
import pytest

import symgraph as mx
from symgraph.context import num_gpus
import optimizer_cases as cases

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(num_gpus() < 1, reason='needs a CUDA GPU')]

with np.load(os.path.join(os.path.dirname(__file__), '..', 'golden', 'data',
                          'optimizer.npz')) as _z:
    GOLD = {k: _z[k] for k in _z.files}


def _gpus():
    return [mx.gpu(i) for i in range(min(num_gpus(), 4))]


@pytest.mark.parametrize('case', cases.OPTIMIZER_CASES, ids=[c[0] for c in cases.OPTIMIZER_CASES])
def test_optimizer_on_gpu_matches_mxnet(case):
    name, opt_name, kwargs, options = case
    gpu = mx.gpu(0)
    dtype = 'float16' if 'mp' in options else 'float32'
    params = [p for p in cases.PARAMS if 'only2d' not in options or len(p[2]) == 2]
    upd = mx.optimizer.get_updater(cases.make_optimizer(mx, opt_name, kwargs, options))
    init = cases.initial_weights(dtype)
    ws = {i: mx.nd.array(init[i], ctx=gpu, dtype=dtype) for i, _, _ in params}
    idx = [i for i, _, _ in params]
    for step in range(cases.STEPS):
        g = cases.gradients(step, dtype)
        grads = [mx.nd.array(g[i], ctx=gpu, dtype=dtype) for i in idx]
        if 'single' in options:
            for i, gr in zip(idx, grads):
                upd(i, gr, ws[i])
        else:
            upd(idx, grads, [ws[i] for i in idx])
    for i in idx:
        assert ws[i].context == gpu
        # CUDA kernels may fuse multiply-adds: float32 rounding, not bit for bit
        tol = dict(rtol=2e-3, atol=2e-3) if dtype == 'float16' else dict(rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(ws[i].asnumpy(), GOLD['%s/step4/w%d' % (name, i)],
                                   err_msg='%s w%d' % (name, i), **tol)
        for s in (upd.states[i] if isinstance(upd.states[i], tuple) else (upd.states[i],)):
            if isinstance(s, mx.nd.NDArray):
                assert s.context == gpu


def test_states_pickled_on_gpu_load_anywhere():
    gpu = mx.gpu(0)
    upd = mx.optimizer.get_updater(mx.optimizer.Adam())
    w = mx.nd.ones((3,), ctx=gpu)
    upd(0, mx.nd.ones((3,), ctx=gpu), w)
    back = mx.optimizer.get_updater(mx.optimizer.SGD())
    back.set_states(upd.get_states(dump_optimizer=True))
    w2 = w.copy()
    upd(0, mx.nd.ones((3,), ctx=gpu), w)
    back(0, mx.nd.ones((3,), ctx=gpu), w2)
    assert back.states[0][0].context == gpu
    np.testing.assert_array_equal(w.asnumpy(), w2.asnumpy())


@pytest.mark.parametrize('kind', ['local', 'device'])
def test_store_over_gpus_sums_and_updates(kind):
    devs = _gpus() + [mx.cpu(0)]
    kv = mx.kv.create(kind)
    kv.init('w', mx.nd.zeros((6,)))
    vals = [mx.nd.ones((6,), ctx=d) * (k + 1) for k, d in enumerate(devs)]
    outs = [mx.nd.zeros((6,), ctx=d) for d in devs]
    kv.pushpull('w', vals, out=outs)
    total = sum(range(1, len(devs) + 1))
    for o, d in zip(outs, devs):
        assert o.context == d
        np.testing.assert_array_equal(o.asnumpy(), total)
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9))
    for _ in range(2):
        kv.push('w', vals)
    kv.pull('w', out=outs)
    want = total - 0.1 * total - (0.9 * 0.1 * total + 0.1 * total)
    for o in outs:
        np.testing.assert_allclose(o.asnumpy(), want, rtol=1e-6)


def test_device_store_all_reduces_gpu_values_in_place():
    devs = _gpus()
    kv = mx.kv.create('device')
    kv.init(0, mx.nd.zeros((5, 3)))
    rng = np.random.RandomState(0)
    host = [rng.uniform(-1, 1, (5, 3)).astype('f4') for _ in devs]
    vals = [mx.nd.array(h, ctx=d) for h, d in zip(host, devs)]
    kv.pushpull(0, vals)
    for v, d in zip(vals, devs):
        assert v.context == d
        np.testing.assert_allclose(v.asnumpy(), np.sum(host, axis=0), rtol=1e-6, atol=1e-7)


def test_two_bit_compression_on_gpu():
    kv = mx.kv.create('device')
    kv.set_gradient_compression({'type': '2bit', 'threshold': 0.5})
    kv.init(0, mx.nd.zeros((4,)))
    out = mx.nd.zeros((4,), ctx=mx.gpu(0))
    got = []
    for _ in range(2):
        kv.pushpull(0, mx.nd.array([0.3, 0.6, -0.7, 0.1], ctx=mx.gpu(0)), out=out)
        got.append(out.asnumpy().tolist())
    assert got == [[0, 0.5, -0.5, 0], [0.5, 0.5, -0.5, 0]]
