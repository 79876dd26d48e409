"""DataParallelExecutor's contract at its edges: wrong-sized batches, grad_req='add'
precision, a device failing in backward, an interrupted call, and get_params (logical CPU
devices; the same code runs on GPUs)."""
import signal
import threading
import time

import numpy as np
import pytest

import symgraph as mx
from symgraph import dist
from symgraph.base import MXNetError

_FAIL = {'rank': None, 'sleep_rank': None}


class _Probe(mx.operator.CustomOp):
    """Identity; fails in backward, or sleeps in forward, on a chosen rank."""

    def forward(self, is_train, req, in_data, out_data, aux):
        if _FAIL['sleep_rank'] is not None and _FAIL['sleep_rank'] == dist.current_rank():
            time.sleep(1.0)
        self.assign(out_data[0], req[0], in_data[0])

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        if _FAIL['rank'] is not None and _FAIL['rank'] == dist.current_rank():
            raise RuntimeError('planted failure on rank %d' % dist.current_rank())
        self.assign(in_grad[0], req[0], out_grad[0])


@mx.operator.register('dp_probe')
class _ProbeProp(mx.operator.CustomOpProp):
    def __init__(self):
        super().__init__(need_top_grad=True)

    def create_operator(self, ctx, shapes, dtypes):
        return _Probe()


@pytest.fixture(autouse=True)
def _reset():
    _FAIL.update(rank=None, sleep_rank=None)
    yield
    _FAIL.update(rank=None, sleep_rank=None)


def _fc_group(n=4, batch=8, **kw):
    net = mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=2, name='fc')
    group = dist.DataParallelExecutor(net, [mx.cpu(k) for k in range(n)],
                                          data=(batch, 3), **kw)
    group.set_params({'fc_weight': np.ones((2, 3)), 'fc_bias': np.zeros(2)})
    return group


@pytest.mark.parametrize('rows', [7, 9, 6])
def test_a_batch_of_the_wrong_size_is_refused_not_broadcast(rows):
    group = _fc_group()
    with pytest.raises(MXNetError, match=r"'data' has shape \(%d, 3\), the group was bound "
                                         r"for \(8, 3\)" % rows):
        group.forward(is_train=True, data=np.ones((rows, 3)))
    with pytest.raises(MXNetError, match=r'\(8, 1\)'):
        group.forward(is_train=True, data=np.ones((8, 1)))
    out = group.forward(is_train=True, data=np.arange(24.0).reshape(8, 3))[0].asnumpy()
    np.testing.assert_allclose(out[:, 0], np.arange(24.0).reshape(8, 3).sum(axis=1))
    with pytest.raises(MXNetError, match=r'head gradient 0 has shape \(9, 2\)'):
        group.backward([np.ones((9, 2))])
    group.backward([np.ones((8, 2))])     # still usable
    np.testing.assert_allclose(group.grad_dict['fc_bias'].asnumpy(), [8, 8])


def test_add_accumulates_each_step_exactly_as_one_executor_does():
    """The accumulated gradient is set aside while the step's gradient is all-reduced:
    subtracting it afterwards lost a whole float16 step (2048 + 3.6 stayed 2048)."""
    w = mx.sym.var('w', shape=(1,), dtype='float16')
    net = mx.sym.MakeLoss(mx.sym.sum(mx.sym.broadcast_mul(mx.sym.var('data'), w)))
    types = {'data': 'float16', 'w': 'float16'}
    reqs = {'data': 'null', 'w': 'add'}
    group = dist.DataParallelExecutor(net, [mx.cpu(k) for k in range(4)], grad_req=reqs,
                                          type_dict=types, data=(4, 1))
    single = net.simple_bind(mx.cpu(), grad_req=reqs, type_dict=types, data=(4, 1))
    group.set_params({'w': np.ones(1, np.float16)})
    single.copy_params_from({'w': mx.nd.array(np.ones(1), dtype='float16')})
    for value in (512.0, 0.9):
        batch = np.full((4, 1), value, np.float16)
        group.forward(is_train=True, data=batch)
        group.backward()
        single.forward(is_train=True, data=batch)
        single.backward()
        for exe in group.execs:
            np.testing.assert_array_equal(exe.grad_dict['w'].asnumpy(),
                                          single.grad_dict['w'].asnumpy())
    assert float(single.grad_dict['w'].asnumpy()[0]) == 2052.0


def test_a_device_failing_in_backward_leaves_gradients_and_moving_stats_as_they_were():
    data = mx.sym.var('data')
    h = mx.sym.contrib.SyncBatchNorm(data, ndev=2, key='dp_fail_a', fix_gamma=False,
                                     name='bn')
    h = mx.sym.Custom(h, op_type='dp_probe', name='probe')
    h = mx.sym.contrib.SyncBatchNorm(h, ndev=2, key='dp_fail_b', fix_gamma=False, name='bn2')
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, (6, 3, 2)).astype(np.float32)
    dy = rng.uniform(-1, 1, x.shape).astype(np.float32)
    group = dist.DataParallelExecutor(h, [mx.cpu(0), mx.cpu(1)], grad_req='add',
                                          data=x.shape)
    group.set_params({k: np.ones(v.shape) for k, v in group.execs[0].arg_dict.items()
                      if k != 'data'})
    group.forward(is_train=True, data=x)
    group.backward([dy])

    def state():
        return [{k: v.asnumpy().copy() for k, v in list(exe.grad_dict.items())
                 + list(exe.aux_dict.items())} for exe in group.execs]
    before = state()
    _FAIL['rank'] = 1
    group.forward(is_train=True, data=x)
    with pytest.raises(MXNetError, match='planted failure on rank 1'):
        group.backward([dy])
    after = state()
    for b, a in zip(before, after):
        # the accumulated gradients are put back; 'bn' (whose backward comes after the
        # failing node) keeps its moving statistics on both devices
        for k in list(group.execs[0].grad_dict) + ['bn_moving_mean', 'bn_moving_var']:
            np.testing.assert_array_equal(a[k], b[k], err_msg=k)
    # 'bn2' finished its backward on both devices: its copies moved together
    for k in ('bn_moving_mean', 'bn_moving_var', 'bn2_moving_mean', 'bn2_moving_var'):
        np.testing.assert_array_equal(after[0][k], after[1][k], err_msg=k)
    assert not np.array_equal(after[0]['bn2_moving_mean'], before[0]['bn2_moving_mean'])
    _FAIL['rank'] = None
    group.forward(is_train=True, data=x)
    group.backward([dy])
    np.testing.assert_allclose(group.grad_dict['bn2_beta'].asnumpy(),
                               2 * before[0]['bn2_beta'], rtol=1e-6)


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread()
                    or not hasattr(signal, 'pthread_kill'),
                    reason='needs the main thread and signal.pthread_kill')
def test_an_interrupted_call_leaves_no_worker_at_the_rendezvous():
    """Ctrl-C while the devices run: the workers leave their rendezvous before the
    KeyboardInterrupt reaches the caller, so the next call starts clean (it used to fail
    with 'two participants claim rank 0', then hang until the timeout)."""
    sym = mx.sym.contrib.SyncBatchNorm(mx.sym.Custom(mx.sym.var('data'), op_type='dp_probe'),
                                       ndev=2, key='dp_interrupt', output_mean_var=True,
                                       name='bn')
    group = dist.DataParallelExecutor(sym, [mx.cpu(0), mx.cpu(1)], data=(4, 2))
    _FAIL['sleep_rank'] = 1
    main = threading.main_thread().ident
    timer = threading.Timer(0.3, lambda: signal.pthread_kill(main, signal.SIGINT))
    # a suite started as a background job of a non-interactive shell (`cmd &`) inherits
    # SIGINT ignored, and Python then installs no handler for it: Ctrl-C's, here
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            group.forward(is_train=True, data=np.zeros((4, 2), np.float32))
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, old)
    _FAIL['sleep_rank'] = None
    x = np.array([[1, 1], [1, 1], [3, 3], [3, 3]], np.float32)
    t0 = time.perf_counter()
    group.forward(is_train=True, data=x)
    assert time.perf_counter() - t0 < 5.0
    for mean in group.get_outputs(merge=False)[1]:
        np.testing.assert_allclose(mean.asnumpy(), [2, 2])


def test_get_params_averages_auxiliary_states_over_devices_as_mxnet_does():
    net = mx.sym.BatchNorm(mx.sym.var('data'), name='bn')
    group = dist.DataParallelExecutor(net, [mx.cpu(0), mx.cpu(1)], data=(4, 2))
    x = np.array([[0, 0], [0, 0], [10, 20], [10, 20]], np.float32)
    group.forward(is_train=True, data=x)
    arg, aux = {}, {}
    group.get_params(arg, aux)
    assert sorted(arg) == ['bn_beta', 'bn_gamma'] and sorted(aux) == ['bn_moving_mean',
                                                                       'bn_moving_var']
    # device 0 saw means (0, 0), device 1 (10, 20): each moved 10 percent of the way
    np.testing.assert_allclose(group.execs[1].aux_dict['bn_moving_mean'].asnumpy(), [1, 2],
                               rtol=1e-6)
    np.testing.assert_allclose(aux['bn_moving_mean'].asnumpy(), [0.5, 1.0], rtol=1e-6)
    assert aux['bn_moving_mean'].dtype == np.float32
    # into existing NDArrays, in place
    target = mx.nd.zeros(2)
    group.get_params({}, {'bn_moving_mean': target})
    np.testing.assert_allclose(target.asnumpy(), [0.5, 1.0], rtol=1e-6)


def _dropout_group(contexts):
    h = mx.sym.var('data')
    for i in range(3):
        h = mx.sym.Dropout(mx.sym.FullyConnected(h, num_hidden=64, name='fc%d' % i), p=0.5)
    group = dist.DataParallelExecutor(h, contexts, data=(256, 32))
    rng = np.random.RandomState(0)
    group.set_params({k: rng.uniform(-0.2, 0.2, v.shape)
                      for k, v in group.execs[0].arg_dict.items() if k != 'data'})
    return group


def _seeded_runs(group, seed, runs):
    x = np.ones((256, 32), np.float32)
    out = []
    for _ in range(runs):
        mx.random.seed(seed)
        out.append(group.forward(is_train=True, data=x)[0].asnumpy())
    return out


def test_seeded_random_draws_do_not_depend_on_thread_order():
    """Each device draws from its own generator, seeded from the global one on the calling
    thread: with one global generator shared by the device threads, 7 of 8 seeded runs
    differed."""
    group = _dropout_group([mx.cpu(k) for k in range(4)])
    runs = _seeded_runs(group, 0, 6)
    for r in runs[1:]:
        np.testing.assert_array_equal(r, runs[0])
    assert not np.array_equal(_seeded_runs(group, 1, 1)[0], runs[0])
    # the devices' masks differ from each other (not one seed for all)
    per = [m.asnumpy() for m in group.get_outputs(merge=False)[0]]
    assert not np.array_equal(per[0] != 0, per[1] != 0)


@pytest.mark.gpu
@pytest.mark.skipif(mx.context.num_gpus() < 1, reason='needs a CUDA GPU')
def test_seeded_random_draws_on_gpus_are_reproducible():
    n = mx.context.num_gpus()
    group = _dropout_group([mx.gpu(k % n) for k in range(4)])
    runs = _seeded_runs(group, 3, 3)
    for r in runs[1:]:
        np.testing.assert_array_equal(r, runs[0])


@pytest.mark.gpu
@pytest.mark.skipif(mx.context.num_gpus() < 2, reason='needs two CUDA GPUs')
def test_random_seed_reaches_every_gpu_or_the_one_named():
    def draw(dev):
        with mx.gpu(dev):
            return mx.nd.random.uniform(shape=(8,), ctx=mx.gpu(dev)).asnumpy()
    mx.random.seed(5)
    first = draw(1)
    mx.random.seed(5)
    np.testing.assert_array_equal(draw(1), first)      # cupy.random.seed seeded gpu(0) only
    mx.random.seed(6, ctx=mx.gpu(1))
    other = draw(1)
    assert not np.array_equal(other, first)
    mx.random.seed(6, ctx=mx.gpu(1))
    np.testing.assert_array_equal(draw(1), other)
    cpu = np.random.get_state()[1].copy()
    mx.random.seed(7, ctx=mx.gpu(0))                    # the NumPy generator is untouched
    np.testing.assert_array_equal(np.random.get_state()[1], cpu)
    with pytest.raises(ValueError, match="'all'"):
        mx.random.seed(1, ctx='cpu')
