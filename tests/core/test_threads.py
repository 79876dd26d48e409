"""Executors of one symbol used from several threads at once.

Two executors bound from the same symbol share its nodes and operator instances (a Custom
node's prop included); each has its own arrays, plan and per-bind operator state. Run in two
threads at the same time they give exactly what they give one after the other, and a custom
operator raising in one thread leaves the other thread's results, its own executor and new
binds intact.
"""
import threading

import numpy as np
import pytest

import symgraph as mx

STEPS = 50
BATCH = 4


class _Scale(mx.operator.CustomOp):
    """y = 2 x; raises when the input holds a value above 100 (a 'bad batch')."""

    def forward(self, is_train, req, in_data, out_data, aux):
        x = in_data[0].asnumpy()
        if x.max() > 100:
            raise RuntimeError('bad batch: max %g' % x.max())
        self.assign(out_data[0], req[0], in_data[0] * 2)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0] * 2)


@mx.operator.register('test_threads_scale')
class _ScaleProp(mx.operator.CustomOpProp):
    def __init__(self):
        super().__init__(need_top_grad=True)

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return _Scale()


def small_cnn(custom=False):
    data = mx.sym.Variable('data')
    if custom:
        data = mx.sym.Custom(data, op_type='test_threads_scale', name='scale')
    c = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4, pad=(1, 1), name='conv')
    c = mx.sym.Activation(c, act_type='relu', name='relu')
    c = mx.sym.Pooling(c, kernel=(2, 2), stride=(2, 2), pool_type='max', name='pool')
    f = mx.sym.FullyConnected(mx.sym.Flatten(c), num_hidden=3, name='fc')
    return mx.sym.SoftmaxOutput(f, name='softmax')


def make_executor(sym, seed):
    exe = sym.simple_bind(mx.cpu(), data=(BATCH, 1, 8, 8))
    rng = np.random.RandomState(seed)
    for name, arr in exe.arg_dict.items():
        if name.endswith(('_weight', '_bias')):
            arr[:] = rng.uniform(-0.3, 0.3, arr.shape)
    return exe


def batches(seed, bad_every=0):
    rng = np.random.RandomState(100 + seed)
    out = []
    for k in range(STEPS):
        x = rng.uniform(-1, 1, (BATCH, 1, 8, 8)).astype(np.float32)
        if bad_every and k % bad_every == bad_every - 1:
            x[0, 0, 0, 0] = 1000.0
        out.append((x, rng.randint(0, 3, BATCH).astype(np.float32)))
    return out


def train(exe, data, barrier=None):
    """STEPS of forward/backward/SGD; the outputs of each step and the final weights.

    A step whose forward raises is recorded as the error's text."""
    if barrier is not None:
        barrier.wait()
    record = []
    for x, y in data:
        exe.arg_dict['data'][:] = x
        exe.arg_dict['softmax_label'][:] = y
        try:
            exe.forward(is_train=True)
        except mx.MXNetError as e:      # the executor names the node and chains the cause
            record.append(str(e))
            continue
        exe.backward()
        record.append(exe.outputs[0].asnumpy().copy())
        for name, g in exe.grad_dict.items():
            if name.endswith(('_weight', '_bias')):
                exe.arg_dict[name][:] = exe.arg_dict[name] - 0.1 * g
    weights = {k: v.asnumpy().copy() for k, v in exe.arg_dict.items()}
    return record, weights


def run_threads(jobs):
    """Run ``jobs`` (callables) in threads started together; their results, in order."""
    results = [None] * len(jobs)
    errors = []

    def work(k, job):
        try:
            results[k] = job()
        except BaseException as e:     # reported by the test, not lost in the thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k, j)) for k, j in enumerate(jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), 'a thread hangs'
    assert not errors, errors
    return results


def assert_same(got, want):
    (rec_g, w_g), (rec_w, w_w) = got, want
    assert len(rec_g) == len(rec_w)
    for a, b in zip(rec_g, rec_w):
        if isinstance(b, str):
            assert a == b
        else:
            np.testing.assert_array_equal(a, b)
    assert w_g.keys() == w_w.keys()
    for k in w_w:
        np.testing.assert_array_equal(w_g[k], w_w[k], err_msg=k)


@pytest.mark.parametrize('custom', [False, True], ids=['builtin', 'with_custom_op'])
def test_two_executors_of_one_symbol_in_two_threads(custom):
    sym = small_cnn(custom)
    data = [batches(0), batches(1)]
    want = [train(make_executor(sym, s), data[s]) for s in (0, 1)]
    # the two runs differ from each other: a mix-up between threads would show
    assert not np.array_equal(want[0][1]['fc_weight'], want[1][1]['fc_weight'])
    exes = [make_executor(sym, s) for s in (0, 1)]
    barrier = threading.Barrier(2)
    got = run_threads([lambda s=s: train(exes[s], data[s], barrier) for s in (0, 1)])
    for s in (0, 1):
        assert_same(got[s], want[s])


def test_two_binds_in_two_threads():
    # binding itself (inference, planning, code generation) in two threads at once
    sym = small_cnn(custom=True)
    barrier = threading.Barrier(2)

    def bind_many(seed):
        barrier.wait()
        return [make_executor(sym, seed).arg_dict['conv_weight'].shape for _ in range(10)]
    shapes = run_threads([lambda: bind_many(0), lambda: bind_many(1)])
    assert shapes[0] == shapes[1] == [(4, 1, 3, 3)] * 10


def test_custom_op_raising_in_one_thread_leaves_the_other_intact():
    sym = small_cnn(custom=True)
    good, bad = batches(0), batches(1, bad_every=5)
    want_good = train(make_executor(sym, 0), good)
    want_bad = train(make_executor(sym, 1), bad)
    assert sum(isinstance(r, str) for r in want_bad[0]) == STEPS // 5
    assert "custom operator 'test_threads_scale'" in next(
        r for r in want_bad[0] if isinstance(r, str))
    exes = [make_executor(sym, 0), make_executor(sym, 1)]
    barrier = threading.Barrier(2)
    got_good, got_bad = run_threads([lambda: train(exes[0], good, barrier),
                                     lambda: train(exes[1], bad, barrier)])
    assert_same(got_good, want_good)
    assert_same(got_bad, want_bad)
    # the executor whose op raised still runs, and so do new binds of the symbol
    exes[1].arg_dict['data'][:] = good[0][0]
    exes[1].forward(is_train=True)
    exes[1].backward()
    fresh = make_executor(sym, 0)
    fresh.arg_dict['data'][:] = good[0][0]
    fresh.arg_dict['softmax_label'][:] = good[0][1]
    fresh.forward(is_train=False)
    np.testing.assert_array_equal(fresh.outputs[0].asnumpy(), want_good[0][0])
