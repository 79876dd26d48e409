"""mx.kv: store types, keys, values over devices, optimizers in the store, saved states,
errors for bad input, and the model-level helpers Module uses."""
import numpy as np
import pytest

import symgraph as mx
from symgraph.kvstore import training as model
from symgraph.kvstore import comm


def test_create_types_and_properties():
    for name in ('local', 'device', 'local_update_cpu', 'local_allreduce_cpu',
                 'local_allreduce_device', 'LOCAL'):
        kv = mx.kv.create(name)
        assert kv.type == name.lower() and kv.rank == 0 and kv.num_workers == 1
        assert isinstance(kv, mx.kv.KVStoreBase) and kv.is_capable('optimizer')
    assert mx.kvstore is mx.kv
    assert mx.kv.create().type == 'local'
    assert isinstance(mx.kv.create('teststore'), mx.kv.TestStore)


@pytest.mark.parametrize('name', ['dist_async', 'dist_device_async'])
def test_dist_async_is_refused_naming_dist_sync(name):
    with pytest.raises(ValueError, match=r"%r is not supported: .* no parameter server .*; "
                                         r"use 'dist_sync'" % name):
        mx.kv.create(name)


@pytest.mark.parametrize('name', ['horovod', 'byteps', 'p3'])
def test_other_multi_process_types_name_the_available_ones(name):
    with pytest.raises(ValueError, match=r"%r is not available; the multi-process types are "
                                         r"'dist_device_sync', 'dist_sync', "
                                         r"'dist_sync_device'" % name):
        mx.kv.create(name)


def test_dist_sync_types_are_the_mpi_store():
    # (made over MPI processes in tests/dist/test_kvstore_dist.py)
    from symgraph.kvstore.base import MULTI_PROCESS_TYPES
    from symgraph.kvstore.dist import DistKVStore
    assert MULTI_PROCESS_TYPES == {k: DistKVStore for k in ('dist_sync', 'dist_device_sync',
                                                             'dist_sync_device')}


def test_unknown_and_unavailable_types():
    with pytest.raises(ValueError, match=r"unknown kvstore type 'foo'; the types are 'local', "
                                         r"'device'"):
        mx.kv.create('foo')
    # 'nccl' exists (tests/gpu/test_nccl.py); it takes GPU values only
    kv = mx.kv.create('nccl')
    assert (kv.type, kv.rank, kv.num_workers) == ('nccl', 0, 1)
    kv.init(0, mx.nd.zeros((2,)))
    with pytest.raises(ValueError, match="the 'nccl' kvstore reduces GPU arrays, got one on "
                                         r"cpu\(0\)"):
        kv.push(0, [mx.nd.ones((2,)), mx.nd.ones((2,), ctx=mx.cpu(1))])
    with pytest.raises(ValueError, match="not supported for the 'nccl' kvstore"):
        kv.set_gradient_compression({'type': '2bit'})
    with pytest.raises(TypeError, match='name must be a string'):
        mx.kv.create(3)
    with pytest.raises(ValueError, match='Unknown capability: foo'):
        mx.kv.create().is_capable('foo')


@pytest.mark.parametrize('kind', ['local', 'device'])
def test_push_sums_devices_and_pull_broadcasts(kind):
    kv = mx.kv.create(kind)
    kv.init('w', mx.nd.zeros((2, 3)))
    kv.push('w', [mx.nd.ones((2, 3)), mx.nd.ones((2, 3), ctx=mx.cpu(1)) * 2])
    outs = [mx.nd.zeros((2, 3)), mx.nd.zeros((2, 3), ctx=mx.cpu(1))]
    kv.pull('w', out=outs)
    for o in outs:
        np.testing.assert_array_equal(o.asnumpy(), 3)
    assert outs[1].context == mx.cpu(1)
    # pushed values are not changed, and a later change of them does not reach the store
    a = mx.nd.ones((2, 3))
    kv.push('w', a)
    a[:] = 7
    kv.pull('w', out=outs[0])
    np.testing.assert_array_equal(outs[0].asnumpy(), 1)


def test_device_store_reduces_with_the_ring(monkeypatch):
    calls = []
    real = comm.ring_allreduce
    monkeypatch.setattr(comm, 'ring_allreduce', lambda a: calls.append(len(a)) or real(a))
    kv = mx.kv.create('device')
    kv.init(0, mx.nd.zeros((4,)))
    vals = [mx.nd.ones((4,), ctx=mx.cpu(k)) * (k + 1) for k in range(3)]
    kv.pushpull(0, vals)
    assert calls == [3]
    for v in vals:
        np.testing.assert_array_equal(v.asnumpy(), 6)
    kv.push(0, vals)
    assert calls == [3, 3]
    np.testing.assert_array_equal(vals[0].asnumpy(), 6)     # push leaves the values alone


def test_lists_of_keys_and_repeated_keys():
    kv = mx.kv.create('local')
    kv.init([1, 2], [mx.nd.zeros((2,)), mx.nd.zeros((3,))])
    kv.push([1, 2, 1], [mx.nd.ones((2,)), mx.nd.ones((3,)), mx.nd.ones((2,))])
    a, b = mx.nd.zeros((2,)), mx.nd.zeros((3,))
    kv.pull([1, 2], out=[a, b])
    np.testing.assert_array_equal(a.asnumpy(), 2)
    np.testing.assert_array_equal(b.asnumpy(), 1)


def test_updater_order_and_str_keys_as_bytes():
    seen = []
    kv = mx.kv.create('local')
    kv.init(['c', 'a', 'b'], [mx.nd.zeros((1,))] * 3)
    kv._set_updater(lambda k, g, w: seen.append(k))
    kv.push(['a', 'b', 'c'], [mx.nd.ones((1,))] * 3)
    assert seen == [b'c', b'a', b'b']           # MXNet: init order, keys as bytes
    seen.clear()
    kv = mx.kv.create('local')
    kv.init([3, 1, 2], [mx.nd.zeros((1,))] * 3)
    kv.set_updater(lambda k, g, w: seen.append(k))
    kv.push([3, 1, 2], [mx.nd.ones((1,))] * 3)
    assert seen == [1, 2, 3]


def test_optimizer_in_the_store_and_saved_states(tmp_path):
    kv = mx.kv.create('local')
    kv.init(3, mx.nd.ones((2, 3)))
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9))
    for _ in range(2):
        kv.push(3, [mx.nd.ones((2, 3)), mx.nd.ones((2, 3), ctx=mx.cpu(1)) * 2])
    out = mx.nd.zeros((2, 3))
    kv.pull(3, out=out)
    np.testing.assert_allclose(out.asnumpy(), 1 - 0.3 - (0.27 + 0.3), rtol=1e-6)
    fname = str(tmp_path / 'kv.states')
    kv.save_optimizer_states(fname, dump_optimizer=True)
    kv2 = mx.kv.create('local')
    kv2.init(3, out)
    kv2.set_optimizer(mx.optimizer.SGD())
    kv2.load_optimizer_states(fname)
    assert kv2._updater.optimizer.momentum == 0.9
    np.testing.assert_allclose(kv2._updater.states[3].asnumpy(), -0.57, rtol=1e-6)


def test_states_need_an_optimizer(tmp_path):
    kv = mx.kv.create('local')
    with pytest.raises(RuntimeError, match='call set_optimizer first'):
        kv.save_optimizer_states(str(tmp_path / 'x'))
    with pytest.raises(RuntimeError, match='call set_optimizer first'):
        kv.load_optimizer_states(str(tmp_path / 'x'))
    kv.set_optimizer(mx.optimizer.SGD())
    with pytest.raises(FileNotFoundError):
        kv.load_optimizer_states(str(tmp_path / 'missing'))
    with pytest.raises(TypeError, match=r'set_optimizer takes an Optimizer \(mx.optimizer'):
        kv.set_optimizer('sgd')


def test_key_errors_name_the_key():
    kv = mx.kv.create('local')
    kv.init(3, mx.nd.ones((2,)))
    with pytest.raises(KeyError, match='key 5 has not been inited'):
        kv.push(5, mx.nd.ones((2,)))
    with pytest.raises(KeyError, match="key 7 has not been inited"):
        kv.pull(7, out=mx.nd.ones((2,)))
    with pytest.raises(ValueError, match='duplicate init of key 3'):
        kv.init(3, mx.nd.ones((2,)))
    with pytest.raises(ValueError, match='duplicate init of key 4'):
        kv.init([4, 4], [mx.nd.ones((2,))] * 2)
    with pytest.raises(TypeError, match="Mixed key types are not allowed: this store has int "
                                        "keys, got 'a'"):
        kv.init('a', mx.nd.ones((2,)))
    with pytest.raises(TypeError, match='keys are int or str, got 1.5'):
        kv.push(1.5, mx.nd.ones((2,)))
    with pytest.raises(TypeError, match='keys are int or str, got True'):
        kv.push(True, mx.nd.ones((2,)))
    # the store still works
    kv.push(3, mx.nd.ones((2,)) * 4)
    out = mx.nd.zeros((2,))
    kv.pull(3, out=out)
    np.testing.assert_array_equal(out.asnumpy(), 4)


def test_shape_and_value_errors():
    kv = mx.kv.create('local')
    kv.init('w', mx.nd.ones((2, 3)))
    with pytest.raises(ValueError, match=r"push: key 'w' holds shape \(2, 3\), got an array of "
                                         r"shape \(3, 3\)"):
        kv.push('w', [mx.nd.ones((2, 3)), mx.nd.ones((3, 3))])
    with pytest.raises(ValueError, match=r"pull: key 'w' holds shape \(2, 3\), got an array of "
                                         r"shape \(4,\)"):
        kv.pull('w', out=mx.nd.zeros((4,)))
    with pytest.raises(ValueError, match='pull needs out='):
        kv.pull('w')
    with pytest.raises(ValueError, match='2 keys need a list of 2 values'):
        kv.push(['w', 'w'], [mx.nd.ones((2, 3))])
    with pytest.raises(TypeError, match="value of key 'w' must be an NDArray"):
        kv.push('w', np.ones((2, 3)))
    out = mx.nd.zeros((2, 3))
    kv.pull('w', out=out)
    np.testing.assert_array_equal(out.asnumpy(), 1)


def test_gradient_compression_validation():
    with pytest.raises(ValueError, match=r"not supported for this type of kvstore \('local'\)"):
        mx.kv.create('local').set_gradient_compression({'type': '2bit'})
    kv = mx.kv.create('device')
    with pytest.raises(ValueError, match='Unknown type for gradient compression 1bit'):
        kv.set_gradient_compression({'type': '1bit'})
    with pytest.raises(ValueError, match='greater than 0'):
        kv.set_gradient_compression({'type': '2bit', 'threshold': -1})
    with pytest.raises(ValueError, match='needs a "type"'):
        kv.set_gradient_compression({'threshold': 1})
    with pytest.raises(TypeError, match='must be a dict'):
        kv.set_gradient_compression('2bit')
    with pytest.warns(UserWarning, match="unknown parameter\\(s\\) 'foo' ignored"):
        kv.set_gradient_compression({'type': '2bit', 'foo': 1})
    kv.set_gradient_compression({'type': '2bit', 'threshold': '0.25'})
    kv.init(0, mx.nd.zeros((3,)))
    out = mx.nd.zeros((3,))
    kv.pushpull(0, mx.nd.array([0.3, -0.2, -0.3]), out=out)
    np.testing.assert_array_equal(out.asnumpy(), [0.25, 0, -0.25])
    kv.pushpull(0, mx.nd.array([0.3, -0.2, -0.3]), out=out)    # residuals carried over
    np.testing.assert_array_equal(out.asnumpy(), [0.25, -0.25, -0.25])


def test_row_sparse_pull():
    kv = mx.kv.create('local')
    kv.init('r', mx.nd.array([[1, 1], [2, 2], [3, 3]]))
    a = (mx.nd.ones((3, 2)) * 9).tostype('row_sparse')
    b = (mx.nd.ones((3, 2)) * 9).tostype('row_sparse')
    kv.row_sparse_pull('r', out=[a, b], row_ids=mx.nd.array([2, 0], dtype='int64'))
    for o in (a, b):
        np.testing.assert_array_equal(o.asnumpy(), [[1, 1], [0, 0], [3, 3]])
        np.testing.assert_array_equal(o.indices.asnumpy(), [0, 2])
    with pytest.raises(ValueError, match='out must be a RowSparseNDArray'):
        kv.row_sparse_pull('r', out=mx.nd.zeros((3, 2)), row_ids=mx.nd.array([0]))
    with pytest.raises(IndexError, match=r"row ids of key 'r' must lie in \[0, 3\)"):
        kv.row_sparse_pull('r', out=a, row_ids=mx.nd.array([3]))
    with pytest.raises(ValueError, match='needs out= and row_ids='):
        kv.row_sparse_pull('r', out=a)
    with pytest.raises(ValueError, match=r'number of row_ids \(2\) does not match'):
        kv.row_sparse_pull('r', out=a, row_ids=[mx.nd.array([0]), mx.nd.array([1])])


def test_broadcast_barrier_and_teststore():
    kv = mx.kv.create('device')
    outs = [mx.nd.zeros((2,)), mx.nd.zeros((2,), ctx=mx.cpu(1))]
    kv.broadcast('p', mx.nd.array([1.0, 2.0]), out=outs)
    for o in outs:
        np.testing.assert_array_equal(o.asnumpy(), [1, 2])
    kv.barrier()
    kv._barrier()
    ts = mx.kv.create('teststore')
    vals = [mx.nd.ones((2,)), mx.nd.ones((2,)) * 2]
    ts.pushpull('k', vals)
    np.testing.assert_array_equal(vals[1].asnumpy(), 3)
    assert not ts.is_capable('optimizer')


def test_register_a_store():
    @mx.kv.KVStoreBase.register
    class MyStore(mx.kv.TestStore):
        pass
    try:
        assert isinstance(mx.kv.create('MyStore'), MyStore)
    finally:
        del mx.kv.KVStoreBase.kv_registry['mystore']


# ------------------------------------------------------------------ model helpers

def test_create_kvstore_rules():
    params = {'w': mx.nd.zeros((10, 10))}
    assert model._create_kvstore('local', 1, params) == (None, False)
    kv, on_kv = model._create_kvstore('local', 2, params)
    assert kv.type == 'local' and on_kv is True
    kv, on_kv = model._create_kvstore('device', 2, params)
    assert kv.type == 'device' and on_kv is True
    big = {'w': mx.nd.zeros((1, 1024 * 1024 * 16 + 1))}
    kv, on_kv = model._create_kvstore('local', 2, big)
    assert kv is not None and on_kv is False
    given = mx.kv.create('device')
    assert model._create_kvstore(given, 1, params) == (given, True)
    assert model._create_kvstore(None, 4, params) == (None, False)
    with pytest.raises(TypeError, match='kvstore must be KVStore, str or None'):
        model._create_kvstore(3, 2, params)
    # a dist type makes a store even with one device (over MPI: tests/dist/)
    with pytest.raises(ValueError, match="'dist_async' is not supported"):
        model._create_kvstore('dist_async', 1, params)


def test_create_kvstore_honours_the_environment(monkeypatch):
    monkeypatch.setenv('MXNET_UPDATE_ON_KVSTORE', '0')
    kv, on_kv = model._create_kvstore('device', 2, {'w': mx.nd.zeros((2,))})
    assert kv is not None and on_kv is False


def _two_device_params():
    rng = np.random.RandomState(0)
    names = ['fc_weight', 'fc_bias']
    init = {'fc_weight': rng.uniform(-1, 1, (3, 4)), 'fc_bias': rng.uniform(-1, 1, (4,))}
    args = {n: mx.nd.array(v) for n, v in init.items()}
    devs = [mx.cpu(0), mx.cpu(1)]
    params = [[mx.nd.zeros(args[n].shape, ctx=d) for d in devs] for n in names]
    grads = [[mx.nd.array(rng.uniform(-1, 1, args[n].shape), ctx=d) for d in devs]
             for n in names]
    return names, args, params, grads


@pytest.mark.parametrize('kind', ['local', 'device'])
def test_update_on_kvstore_equals_updating_the_summed_gradient(kind):
    names, args, params, grads = _two_device_params()
    kv, on_kv = model._create_kvstore(kind, 2, args)
    assert on_kv
    model._initialize_kvstore(kv, params, args, names, on_kv)
    for p, n in zip(params, names):
        for a in p:
            np.testing.assert_array_equal(a.asnumpy(), args[n].asnumpy())
    opt = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, rescale_grad=0.5,
                           param_idx2name=dict(enumerate(names)), wd=0.01)
    kv.set_optimizer(opt)
    for _ in range(3):
        model._update_params_on_kvstore(params, grads, kv, names)
    # the same with one updater on the summed gradients
    ref = mx.optimizer.get_updater(mx.optimizer.SGD(
        learning_rate=0.1, momentum=0.9, rescale_grad=0.5,
        param_idx2name=dict(enumerate(names)), wd=0.01))
    ws = [args[n].copy() for n in names]
    for _ in range(3):
        for i, g in enumerate(grads):
            ref(i, g[0] + g[1].as_in_context(mx.cpu(0)), ws[i])
    for p, w in zip(params, ws):
        for a in p:
            np.testing.assert_array_equal(a.asnumpy(), w.asnumpy())


def test_update_params_with_kvstore_sums_then_updates_each_device():
    names, args, params, grads = _two_device_params()
    kv, _ = model._create_kvstore('device', 2, args)
    model._initialize_kvstore(kv, params, args, names, False)
    for p, n in zip(params, names):
        for a in p:
            a[:] = args[n]
    opt = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9)
    updater = mx.optimizer.get_updater(opt)
    summed = [(g[0].asnumpy() + g[1].asnumpy()) for g in grads]
    model._update_params(params, grads, updater, 2, kvstore=kv, param_names=names)
    # indices i*num_device + k, one state per copy
    assert sorted(updater.states) == [0, 1, 2, 3]
    for g, s in zip(grads, summed):
        for a in g:
            np.testing.assert_array_equal(a.asnumpy(), s)
    for p, n, s in zip(params, names, summed):
        want = args[n].asnumpy() - np.float32(0.1) * s
        for a in p:
            np.testing.assert_allclose(a.asnumpy(), want, rtol=1e-6, atol=1e-7)


def test_update_params_skips_missing_gradients():
    names, args, params, grads = _two_device_params()
    grads[1] = [None, None]
    before = [a.asnumpy() for a in params[1]]
    updater = mx.optimizer.get_updater(mx.optimizer.SGD(learning_rate=0.1))
    model._update_params(params, grads, updater, 2)
    assert sorted(updater.states) == [0, 1]
    for a, b in zip(params[1], before):
        np.testing.assert_array_equal(a.asnumpy(), b)


def test_model_reexports_the_helpers_where_mxnet_has_them():
    for name in ('_create_kvstore', '_initialize_kvstore', '_update_params_on_kvstore',
                 '_update_params_on_kvstore_nccl', '_update_params'):
        assert getattr(mx.model, name) is getattr(model, name)


def test_pushpull_pushes_every_key_before_pulling_any():
    """MXNet's test_kvstore_custom.py test_pushpull_single_kv_pair: the keys' value lists
    are one list repeated, so every key must push the values before any pull writes them
    (4 devices x 2.0 = 8 for each key, not 8, 32, 128)."""
    kv = mx.kv.create('device')
    keys = [5, 7, 11]
    kv.init(keys, [mx.nd.zeros((4, 4))] * 3)
    devs = [mx.cpu(i) for i in range(4)]
    vals = [[mx.nd.ones((4, 4), d) * 2.0 for d in devs]] * 3
    kv.pushpull(keys, vals)
    for v in vals[0]:
        np.testing.assert_array_equal(v.asnumpy(), np.full((4, 4), 8.0))
    # distinct lists keep the in-place path and the same sums
    vals = [[mx.nd.ones((4, 4), d) * 2.0 for d in devs] for _ in keys]
    kv.pushpull(keys, vals)
    for per_key in vals:
        for v in per_key:
            np.testing.assert_array_equal(v.asnumpy(), np.full((4, 4), 8.0))
