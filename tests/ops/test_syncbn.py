"""contrib.SyncBatchNorm: OpCases for one device, and ndev = 1, 2, 3 logical CPU devices
through DataParallelExecutor against BatchNorm over the concatenated batch."""
import json
import threading
import time

import numpy as np
import pytest

import symgraph as mx
from harness import case_tests, OpCase
from symgraph import dist
from symgraph.base import ParameterError
from symgraph.graph.rules import instead
from symgraph.opdef import MXNetError, get_op


def F32(v):
    return float(np.float32(v))


def _inputs(rng, shapes, dtype):
    data, c = shapes[0], shapes[1]
    return [rng.uniform(-1, 1, data) * 2 + 0.5, rng.uniform(0.5, 1.5, c),
            rng.uniform(-1, 1, c), rng.uniform(-0.5, 0.5, c), rng.uniform(0.5, 1.5, c)]


def sync_ref(eps=1e-3, fix_gamma=True, train=False, use_global_stats=False,
             output_mean_var=False):
    """Per-channel loop; the third output is the variance (MXNet's SyncBatchNorm)."""
    def ref(x, g, b, mm, mv):
        x = x.astype(np.float64)
        out = np.empty_like(x)
        means, variances = [], []
        for c in range(x.shape[1]):
            xc = x[:, c]
            if train and not use_global_stats:
                m = xc.sum() / xc.size
                v = ((xc - m) ** 2).sum() / xc.size
            else:
                m, v = float(mm[c]), float(mv[c])
            gc = 1.0 if fix_gamma else float(g[c])
            out[:, c] = (xc - m) / np.sqrt(v + F32(eps)) * gc + float(b[c])
            means.append(m)
            variances.append(v)
        return [out, np.array(means), np.array(variances)] if output_mean_var else out
    return ref


CASES = []
for data in [(3, 4, 2, 3), (5, 3), (4, 2, 5)]:
    c = data[1]
    for kw, train in [({'key': 'a'}, True), ({'key': 'a', 'fix_gamma': False}, True),
                      ({'key': 'a', 'fix_gamma': False, 'output_mean_var': True}, True),
                      ({'key': 'a', 'use_global_stats': True, 'fix_gamma': False}, True),
                      ({'key': 'a', 'eps': 0.01, 'ndev': 1}, False)]:
        ref_kw = {k: v for k, v in kw.items() if k not in ('key', 'ndev')}
        # after an inference forward MXNet's backward has no meaningful statistics, and
        # it ignores the head gradients of the mean and var outputs (not d/dx of them)
        grad = (0, 1, 2) if train and not kw.get('output_mean_var') else ()
        CASES.append(OpCase('_contrib_SyncBatchNorm', kw,
                            shapes=[data, (c,), (c,), (c,), (c,)],
                            ref=sync_ref(train=train, **ref_kw), inputs=_inputs,
                            is_train=train, grad=grad, rtol=1e-5, atol=1e-5,
                            grad_rtol=1e-5, grad_atol=1e-7,
                            id='SyncBatchNorm[%s,train=%s]%s' % (kw, train, data)))


test_forward, test_gradient = case_tests(CASES)


def test_names_and_params_match_mxnet():
    op = get_op('_contrib_SyncBatchNorm')(key='k')
    assert op.list_arguments() == ['data', 'gamma', 'beta']
    assert op.list_outputs() == ['output', 'mean', 'var']
    assert op.list_auxiliary_states() == ['moving_mean', 'moving_var']
    assert op.num_visible_outputs() == 1
    assert (op.eps, op.momentum, op.fix_gamma, op.ndev) == (1e-3, 0.9, True, None)
    sym = mx.sym.contrib.SyncBatchNorm(mx.sym.var('x'), key='k', name='bn')
    assert sym.list_arguments() == ['x', 'bn_gamma', 'bn_beta']
    assert sym.list_auxiliary_states() == ['bn_moving_mean', 'bn_moving_var']
    # unlike MXNet, key and ndev may be left out: inferred from the node and the group
    op = get_op('_contrib_SyncBatchNorm')()
    assert (op.key, op.ndev) == (None, None)
    assert instead(op, 'node', 'bn1').key == 'bn1'
    assert instead(get_op('_contrib_SyncBatchNorm')(key='k'), 'node', 'bn1').key == 'k'
    with pytest.raises(MXNetError, match='ndev must be >= 1'):
        get_op('_contrib_SyncBatchNorm')(ndev=0)


def test_inferred_key_and_ndev_are_not_written_to_json():
    sym = mx.sym.contrib.SyncBatchNorm(mx.sym.var('x'), name='bn')
    node = [n for n in json.loads(sym.tojson())['nodes'] if n['op'] == '_contrib_SyncBatchNorm']
    assert 'key' not in node[0].get('attrs', {}) and 'ndev' not in node[0].get('attrs', {})
    back = mx.sym.load_json(sym.tojson())
    assert back.tojson() == sym.tojson()


def test_moving_statistics_are_updated_in_backward():
    """MXNet 1.9.1 updates SyncBatchNorm's running statistics in backward, not forward."""
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, (4, 3, 2, 2))
    op = get_op('_contrib_SyncBatchNorm')(key='m', momentum=0.8)
    mm, mv = np.zeros(3), np.ones(3)
    outs = op.forward(np, [x, np.ones(3), np.zeros(3)], [mm, mv], True)
    np.testing.assert_array_equal(mm, 0)
    np.testing.assert_array_equal(mv, 1)
    op.backward(np, [np.ones_like(x), None, None], [x, np.ones(3), None], outs, [mm, mv],
                [True, False, False])
    np.testing.assert_allclose(mm, 0.2 * x.mean(axis=(0, 2, 3)), rtol=1e-6)
    np.testing.assert_allclose(mv, 0.8 + 0.2 * x.var(axis=(0, 2, 3)), rtol=1e-6)


# --------------------------------------------------------------------------------------
# several logical devices
# --------------------------------------------------------------------------------------
def _net(sync, ndev, key):
    data = mx.sym.var('data')
    conv = mx.sym.Convolution(data, num_filter=4, kernel=(3, 3), pad=(1, 1), name='conv')
    if sync:
        bn = mx.sym.contrib.SyncBatchNorm(conv, fix_gamma=False, momentum=0.7, ndev=ndev,
                                          key=key, name='bn')
    else:
        bn = mx.sym.BatchNorm(conv, fix_gamma=False, momentum=0.7, name='bn')
    return mx.sym.Activation(bn, act_type='tanh', name='act')


def _params(dtype):
    rng = np.random.RandomState(1)
    return ({'conv_weight': rng.uniform(-0.5, 0.5, (4, 3, 3, 3)).astype(dtype),
             'conv_bias': rng.uniform(-1, 1, 4).astype(dtype),
             'bn_gamma': rng.uniform(0.5, 1.5, 4).astype(dtype),
             'bn_beta': rng.uniform(-1, 1, 4).astype(dtype)},
            {'bn_moving_mean': rng.uniform(-0.5, 0.5, 4).astype(dtype),
             'bn_moving_var': rng.uniform(0.5, 1.5, 4).astype(dtype)})


@pytest.mark.parametrize('explicit', [True, False], ids=['ndev_key_given', 'inferred'])
@pytest.mark.parametrize('dtype,tol', [('float64', 1e-10), ('float32', 2e-5)])
@pytest.mark.parametrize('ndev,batch', [(1, 4), (2, 6), (3, 7), (3, 3)])
def test_sync_over_devices_equals_batchnorm_of_whole_batch(ndev, batch, dtype, tol, explicit):
    shape = (batch, 3, 5, 4)
    rng = np.random.RandomState(ndev * 10 + batch)
    x = (rng.uniform(-1, 1, shape) * 3 + 1).astype(dtype)
    dy = rng.uniform(-1, 1, (batch, 4, 5, 4)).astype(dtype)
    args, aux = _params(dtype)
    types = {'data': dtype}

    ref = _net(False, 1, None).simple_bind(mx.cpu(), data=shape, type_dict=types)
    ref.copy_params_from({k: mx.nd.array(v, dtype=dtype) for k, v in args.items()},
                         {k: mx.nd.array(v, dtype=dtype) for k, v in aux.items()})
    want = ref.forward(is_train=True, data=x)[0].asnumpy()
    ref.backward([mx.nd.array(dy, dtype=dtype)])

    key = 'test-%d-%d-%s' % (ndev, batch, dtype)
    net = _net(True, ndev, key) if explicit else _net(True, None, None)
    group = dist.DataParallelExecutor(net,
                                          [mx.cpu(k) for k in range(ndev)],
                                          type_dict=types, data=shape)
    group.set_params(args, aux)
    got = group.forward(is_train=True, data=x)[0].asnumpy()
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    group.backward([dy])
    np.testing.assert_allclose(group.get_input_grads()[0].asnumpy(),
                               ref.grad_dict['data'].asnumpy(), rtol=tol, atol=tol)
    for k in args:
        for exe in group.execs:     # every device holds the whole batch's gradient
            np.testing.assert_allclose(exe.grad_dict[k].asnumpy(),
                                       ref.grad_dict[k].asnumpy(), rtol=tol, atol=tol,
                                       err_msg=k)
    for k in aux:
        for exe in group.execs:
            np.testing.assert_allclose(exe.aux_dict[k].asnumpy(), ref.aux_dict[k].asnumpy(),
                                       rtol=tol, atol=tol, err_msg=k)
    # the devices share one set of statistics: mean and var outputs agree everywhere
    per = group.get_outputs(merge=False)
    assert len(per[0]) == ndev


def test_sync_statistics_are_stable_for_a_large_mean():
    """float32 data with mean 1e4 and spread 1: E[x^2] - E[x]^2 would lose every digit."""
    rng = np.random.RandomState(5)
    x = (rng.standard_normal((6, 2, 8, 8)) + 1e4).astype(np.float32)
    sym = mx.sym.contrib.SyncBatchNorm(mx.sym.var('data'), ndev=2, key='stable',
                                       output_mean_var=True, name='bn')
    group = dist.DataParallelExecutor(sym, [mx.cpu(0), mx.cpu(1)], data=x.shape)
    group.forward(is_train=True, data=x)
    var = group.get_outputs(merge=False)[2][0].asnumpy()
    np.testing.assert_allclose(var, x.astype(np.float64).var(axis=(0, 2, 3)), rtol=1e-4)


def test_uneven_slices_give_the_exact_global_statistics():
    x = np.arange(5 * 2 * 3, dtype=np.float64).reshape(5, 2, 3) ** 1.5
    sym = mx.sym.contrib.SyncBatchNorm(mx.sym.var('data'), ndev=2, key='uneven',
                                       output_mean_var=True, name='bn')
    group = dist.DataParallelExecutor(sym, [mx.cpu(0), mx.cpu(1)], type_dict={
        'data': 'float64'}, data=x.shape)
    group.forward(is_train=True, data=x)
    outs = group.get_outputs(merge=False)
    for k in range(2):
        np.testing.assert_allclose(outs[1][k].asnumpy(), x.mean(axis=(0, 2)), rtol=1e-13)
        np.testing.assert_allclose(outs[2][k].asnumpy(), x.var(axis=(0, 2)), rtol=1e-13)


def test_rendezvous_times_out_naming_key_and_arrivals():
    r = dist.Rendezvous('lonely', 3)
    with pytest.raises(MXNetError, match=r"'lonely'.*1 of 3 devices arrived"):
        r.allreduce(np.ones(2), rank=0, timeout=0.2)
    # the failed round left nothing behind: a full round still works
    results = [None] * 3

    def go(k):
        results[k] = r.allreduce(np.full(2, float(k + 1)), rank=k, timeout=10)
    threads = [threading.Thread(target=go, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for res in results:
        np.testing.assert_array_equal(res, [6.0, 6.0])


def test_rendezvous_rejects_inconsistent_use():
    dist.rendezvous('ndev-check', 2)
    with pytest.raises(MXNetError, match='ndev=2'):
        dist.rendezvous('ndev-check', 3)
    with pytest.raises(MXNetError, match='rank 5'):
        dist.Rendezvous('r', 2).allreduce(np.ones(1), rank=5)


def test_sync_batchnorm_with_ndev_above_one_outside_a_group_is_a_clear_error():
    sym = mx.sym.contrib.SyncBatchNorm(mx.sym.var('data'), ndev=2, key='nogroup', name='bn')
    exe = sym.simple_bind(mx.cpu(), data=(2, 3))
    with pytest.raises(ParameterError, match="'nogroup': ndev=2 but the operator runs outside "
                                             "a data-parallel group.*ndev=1"):
        exe.forward(is_train=True)
    # inferred: one device alone is plain BatchNorm over its batch
    sym = mx.sym.contrib.SyncBatchNorm(mx.sym.var('data'), name='bn', output_mean_var=True)
    x = np.arange(6.0).reshape(2, 3)
    exe = sym.simple_bind(mx.cpu(), data=(2, 3), type_dict={'data': 'float64'})
    exe.forward(is_train=True, data=x)
    np.testing.assert_allclose(exe.outputs[1].asnumpy(), x.mean(axis=0))


@pytest.mark.parametrize('ndev', [1, 3])
def test_a_wrong_explicit_ndev_fails_at_once_on_every_device(monkeypatch, ndev):
    """ndev says 1 or 3 but the group has 2 devices: a ParameterError on every device at
    once, not a wait until the rendezvous times out (nor, for 1, statistics of one slice)."""
    monkeypatch.setattr(dist.workers, 'SYNC_TIMEOUT', 30.0)
    sym = mx.sym.contrib.SyncBatchNorm(mx.sym.var('data'), ndev=ndev, key='short', name='bn')
    group = dist.DataParallelExecutor(sym, [mx.cpu(0), mx.cpu(1)], data=(4, 2))
    start = time.monotonic()
    with pytest.raises(ParameterError, match=r"'short': ndev=%d but the operator runs in a "
                                             r"data-parallel group of 2 devices" % ndev):
        group.forward(is_train=True, data=np.ones((4, 2)))
    assert time.monotonic() - start < 5
    # the group is still usable with the inferred value
    group = dist.DataParallelExecutor(mx.sym.contrib.SyncBatchNorm(mx.sym.var('data'),
                                                                   name='bn'),
                                      [mx.cpu(0), mx.cpu(1)], data=(4, 2))
    group.forward(is_train=True, data=np.ones((4, 2)))


def test_groups_of_different_sizes_with_one_node_name_do_not_meet():
    """Inferred keys are node names; each group call has its own meeting points, so a
    2-device and a 3-device group of the same net (both 'bn') run one after the other."""
    rng = np.random.RandomState(3)
    x = rng.uniform(-1, 1, (6, 2, 3))
    sym = mx.sym.contrib.SyncBatchNorm(mx.sym.var('data'), name='bn', output_mean_var=True)
    for n in (2, 3, 2):
        group = dist.DataParallelExecutor(sym, [mx.cpu(k) for k in range(n)],
                                          type_dict={'data': 'float64'}, data=x.shape)
        group.forward(is_train=True, data=x)
        for mean in group.get_outputs(merge=False)[1]:
            np.testing.assert_allclose(mean.asnumpy(), x.mean(axis=(0, 2)), rtol=1e-13)


def test_two_layers_with_inferred_keys_meet_separately():
    rng = np.random.RandomState(4)
    x = rng.uniform(-1, 1, (5, 2, 3))
    net = mx.sym.contrib.SyncBatchNorm(mx.sym.var('data'), fix_gamma=False, name='bn1')
    net = mx.sym.contrib.SyncBatchNorm(net * 3 + 1, fix_gamma=False, name='bn2')
    ref = mx.sym.BatchNorm(mx.sym.var('data'), fix_gamma=False, name='bn1')
    ref = mx.sym.BatchNorm(ref * 3 + 1, fix_gamma=False, name='bn2')
    rexe = ref.simple_bind(mx.cpu(), data=x.shape, type_dict={'data': 'float64'})
    want = rexe.forward(is_train=True, data=x)[0].asnumpy()
    group = dist.DataParallelExecutor(net, [mx.cpu(0), mx.cpu(1)],
                                      type_dict={'data': 'float64'}, data=x.shape)
    group.set_params({k: v.asnumpy() for k, v in rexe.arg_dict.items() if k != 'data'})
    got = group.forward(is_train=True, data=x)[0].asnumpy()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_module_on_two_devices_infers_ndev_and_equals_batchnorm():
    """Module's device threads run in a device group: SyncBatchNorm without ndev/key
    normalises over the whole batch (before, Module could not run it on several devices)."""
    rng = np.random.RandomState(7)
    x = (rng.uniform(-1, 1, (6, 3, 3, 3)) * 2 + 1).astype('float32')
    outs = {}
    for sync in (True, False):
        sym = _net(sync, None, None)
        ctxs = [mx.cpu(0), mx.cpu(1)] if sync else [mx.cpu(0)]
        mod = mx.mod.Module(sym, data_names=['data'], label_names=None, context=ctxs)
        mod.bind(data_shapes=[('data', (6, 3, 3, 3))], for_training=True)
        args, aux = _params('float32')
        mod.init_params(arg_params={k: mx.nd.array(v) for k, v in args.items()},
                        aux_params={k: mx.nd.array(v) for k, v in aux.items()})
        mod.forward(mx.io.DataBatch([mx.nd.array(x)]), is_train=True)
        outs[sync] = mod.get_outputs()[0].asnumpy()
    np.testing.assert_allclose(outs[True], outs[False], rtol=2e-5, atol=2e-5)


def test_group_splits_and_allreduces_plain_gradients():
    net = mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=3, name='fc')
    net = mx.sym.MakeLoss(mx.sym.sum(net * net))
    rng = np.random.RandomState(2)
    x = rng.uniform(-1, 1, (5, 4))
    params = {'fc_weight': rng.uniform(-1, 1, (3, 4)), 'fc_bias': rng.uniform(-1, 1, 3)}
    ref = net.simple_bind(mx.cpu(), data=(5, 4))
    ref.copy_params_from({k: mx.nd.array(v) for k, v in params.items()})
    ref.forward(is_train=True, data=x)
    ref.backward()
    group = dist.DataParallelExecutor(net, [mx.cpu(0), mx.cpu(1), mx.cpu(2)],
                                          grad_req={'data': 'null', 'fc_weight': 'add',
                                                    'fc_bias': 'write'}, data=(5, 4))
    assert [e.arg_dict['data'].shape[0] for e in group.execs] == [2, 2, 1]
    group.set_params(params)
    for step in (1, 2):          # 'add' accumulates the all-reduced gradient once per step
        group.forward(is_train=True, data=x)
        group.backward()
        np.testing.assert_allclose(group.grad_dict['fc_weight'].asnumpy(),
                                   step * ref.grad_dict['fc_weight'].asnumpy(), rtol=1e-5)
        np.testing.assert_allclose(group.grad_dict['fc_bias'].asnumpy(),
                                   ref.grad_dict['fc_bias'].asnumpy(), rtol=1e-5)


def test_group_allreduces_all_parameter_gradients_in_one_bucket(monkeypatch):
    """Every parameter gradient of one dtype is a view of one flat buffer per device, so a
    backward step runs one all-reduce per dtype, not one per parameter."""
    net = mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=3, name='fc1')
    net = mx.sym.FullyConnected(net, num_hidden=2, name='fc2')
    net = mx.sym.MakeLoss(mx.sym.sum(net * net))
    rng = np.random.RandomState(6)
    x = rng.uniform(-1, 1, (4, 5))
    group = dist.DataParallelExecutor(net, [mx.cpu(0), mx.cpu(1)], data=(4, 5))
    params = {k: rng.uniform(-1, 1, v.shape) for k, v in group.execs[0].arg_dict.items()
              if k != 'data'}
    group.set_params(params)
    calls = []
    real = dist.allreduce
    monkeypatch.setattr(dist.executor_group, 'allreduce', lambda arrays: calls.append(
        [a.size for a in arrays]) or real(arrays))
    group.forward(is_train=True, data=x)
    group.backward()
    assert calls == [[3 * 5 + 3 + 2 * 3 + 2] * 2]
    for exe, (flat,) in zip(group.execs, group._buckets):
        for k in params:
            assert np.shares_memory(exe.grad_dict[k]._data, flat)
    # the summed gradients are those of the whole batch
    ref = net.simple_bind(mx.cpu(), data=(4, 5))
    ref.copy_params_from({k: mx.nd.array(v) for k, v in params.items()})
    ref.forward(is_train=True, data=x)
    ref.backward()
    for k in params:
        for exe in group.execs:
            np.testing.assert_allclose(exe.grad_dict[k].asnumpy(),
                                       ref.grad_dict[k].asnumpy(), rtol=1e-5, err_msg=k)


def test_group_buckets_by_dtype():
    data = mx.sym.var('data')
    w64 = mx.sym.var('w64', shape=(3,), dtype='float64')
    net = mx.sym.Group([mx.sym.MakeLoss(mx.sym.sum(mx.sym.FullyConnected(
        data, num_hidden=2, name='fc'))), mx.sym.MakeLoss(mx.sym.sum(w64 * w64))])
    group = dist.DataParallelExecutor(net, [mx.cpu(0), mx.cpu(1)], data=(2, 3))
    assert sorted((str(b.dtype), b.size) for b in group._buckets[0]) == [
        ('float32', 2 * 3 + 2), ('float64', 3)]
    group.set_params({'w64': np.arange(3.0), 'fc_weight': np.ones((2, 3)),
                      'fc_bias': np.zeros(2)})
    group.forward(is_train=True, data=np.ones((2, 3)))
    group.backward()
    np.testing.assert_allclose(group.grad_dict['w64'].asnumpy(), 2 * 2 * np.arange(3.0))
    np.testing.assert_allclose(group.grad_dict['fc_bias'].asnumpy(), [2.0, 2.0])
