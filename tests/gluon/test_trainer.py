"""gluon.Trainer: steps against MXNet 1.9.1's (tests/golden/gluon_trainer_probes.py), its
states file both ways, the stale-gradient check, manual allreduce/update, the stores
(device, local, none, a two-worker 'dist_sync' played in one process), and its errors."""
import glob
import json
import os
import sys

import numpy as np
import pytest

import symgraph as mx
from symgraph import autograd
from symgraph.gluon import Parameter, Trainer
from symgraph.gluon.trainer import StaleGradientError
from symgraph.kvstore.dist import DistKVStore
import gluon_trainer_probes as probes

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'golden', 'data',
                    'gluon_trainer')
STEPS = np.load(os.path.join(DATA, 'steps.npz'))


# ----------------------------------------------------------------------------- golden
@pytest.mark.parametrize('case', sorted(probes.CASES))
def test_steps_equal_mxnets(case):
    got = probes.run_case(mx, case)
    for name, values in got.items():
        want = STEPS['%s/%s' % (case, name)]
        assert values.shape == want.shape
        np.testing.assert_allclose(values, want, rtol=1e-6, atol=1e-7,
                                   err_msg='%s: %s' % (case, name))


def _params_at(values, lr_mult):
    params = probes.make_params(mx, [mx.cpu()], lr_mult, {})
    for name, p in params.items():
        p.set_data(mx.nd.array(values[name]))
    return params


def test_loads_mxnets_states_file_and_continues_as_mxnet(tmp_path):
    ref = np.load(os.path.join(DATA, 'states_case.npz'))
    mid = {n: ref['mid/' + n] for n in probes.SHAPES}
    params = _params_at(mid, {'b1': 0.5})
    trainer = Trainer(params, 'sgd', {'learning_rate': 0.1, 'momentum': 0.9, 'wd': 0.01})
    trainer.load_states(os.path.join(DATA, 'sgd_mom.states'))
    assert trainer.optimizer.momentum == 0.9 and trainer.learning_rate == 0.1
    # param_dict comes from this trainer, not from the file
    assert trainer.optimizer.param_dict[0] is params['b1']   # sorted: b1, w1, w2
    for step in range(3, 5):
        probes.backward(mx, params, [mx.cpu()], step)
        trainer.step(2)
    for n, p in params.items():
        np.testing.assert_allclose(p.data().asnumpy(), ref['end/' + n], rtol=1e-6, atol=1e-7)


def _sgd_run(trainer_kw=None, steps=5, save_at=None, load=None, path=None):
    params = probes.make_params(mx, [mx.cpu()], {'b1': 0.5}, {})
    trainer = Trainer(params, 'adam', {'learning_rate': 0.01, 'wd': 0.01},
                      **(trainer_kw or {}))
    for step in range(steps):
        if load is not None and step == load[0]:
            for n, p in params.items():
                p.set_data(mx.nd.array(load[1][n]))
            trainer.load_states(path)
        probes.backward(mx, params, [mx.cpu()], step)
        trainer.step(2)
        if save_at is not None and step == save_at:
            trainer.save_states(path)
            saved = {n: p.data().asnumpy() for n, p in params.items()}
    values = {n: p.data().asnumpy() for n, p in params.items()}
    return (values, saved) if save_at is not None else values


def test_save_and_load_states_resume_exactly(tmp_path):
    path = str(tmp_path / 'adam.states')
    straight, mid = _sgd_run(save_at=2, path=path)
    # a fresh trainer (other states) resumes from the file as if never stopped
    resumed = _sgd_run(load=(3, mid), path=path)
    for n in straight:
        np.testing.assert_array_equal(resumed[n], straight[n])
    # nothing else left beside the file (the temporary file was renamed onto it)
    assert os.listdir(str(tmp_path)) == ['adam.states']


def test_save_states_replaces_the_file_atomically(tmp_path, monkeypatch):
    path = str(tmp_path / 't.states')
    with open(path, 'wb') as f:
        f.write(b'previous')
    params = probes.make_params(mx, [mx.cpu()], {}, {})
    trainer = Trainer(params, 'sgd', {'learning_rate': 0.1, 'momentum': 0.9})
    probes.backward(mx, params, [mx.cpu()], 0)
    trainer.step(1)

    def failing(dump_optimizer=False):
        raise OSError('disk full')
    monkeypatch.setattr(trainer._updaters[0], 'get_states', failing)
    with pytest.raises(OSError, match='disk full'):
        trainer.save_states(path)
    with open(path, 'rb') as f:
        assert f.read() == b'previous'
    monkeypatch.undo()
    trainer.save_states(path)
    assert sorted(os.listdir(str(tmp_path))) == ['t.states']
    with open(path, 'rb') as f:
        assert f.read() == trainer._updaters[0].get_states(dump_optimizer=True)


def test_save_states_with_the_update_on_the_store(tmp_path, monkeypatch):
    path = str(tmp_path / 'kv.states')
    params = probes.make_params(mx, [mx.cpu(0), mx.cpu(1)], {}, {})
    trainer = Trainer(params, 'sgd', {'learning_rate': 0.1, 'momentum': 0.9})
    probes.backward(mx, params, [mx.cpu(0), mx.cpu(1)], 0)
    trainer.step(1)
    assert trainer._update_on_kvstore
    calls = []
    real = trainer._kvstore.save_optimizer_states

    def half_then_fail(fname, dump_optimizer=False):
        calls.append(fname)
        with open(fname, 'wb') as f:
            f.write(b'half')
        raise OSError('interrupted')
    monkeypatch.setattr(trainer._kvstore, 'save_optimizer_states', half_then_fail)
    with pytest.raises(OSError, match='interrupted'):
        trainer.save_states(path)
    assert calls and calls[0] != path       # written beside, never onto the target
    assert os.listdir(str(tmp_path)) == []
    monkeypatch.setattr(trainer._kvstore, 'save_optimizer_states', real)
    trainer.save_states(path)
    other = Trainer(probes.make_params(mx, [mx.cpu(0), mx.cpu(1)], {}, {}), 'sgd',
                    {'learning_rate': 0.5})
    other.load_states(path)
    assert other.learning_rate == 0.1 and other.optimizer.momentum == 0.9


def test_load_states_of_a_missing_file():
    params = probes.make_params(mx, [mx.cpu()], {}, {})
    with pytest.raises(FileNotFoundError, match='no_such.states'):
        Trainer(params, 'sgd').load_states('/nonexistent/no_such.states')


# ----------------------------------------------------------------------------- steps
def _one(shape=(3,), value=1.0, ctx=None, name='w', grad_req='write'):
    p = Parameter(name, shape=shape, init=mx.init.Constant(value), grad_req=grad_req)
    p.initialize(ctx=ctx or mx.cpu())
    return p


def _backward(params, grads):
    """Gradients ``grads`` (one NumPy array per parameter) through autograd."""
    with autograd.record():
        loss = mx.nd.add_n(*[(p.data() * mx.nd.array(g)).sum() for p, g in zip(params, grads)])
    loss.backward()


def test_step_rescales_by_the_batch_size():
    w = _one()
    trainer = Trainer([w], 'sgd', {'learning_rate': 0.5, 'rescale_grad': 3.0})
    g = np.array([1.0, -2.0, 4.0], np.float32)
    _backward([w], [g])
    trainer.step(4)
    np.testing.assert_allclose(w.data().asnumpy(), 1.0 - 0.5 * 3.0 / 4 * g, rtol=1e-6)
    assert trainer.optimizer.rescale_grad == 3.0 / 4


def test_stale_gradients_raise_unless_ignored():
    a, b = _one(name='a'), _one(name='b')
    trainer = Trainer([a, b], 'sgd', {'learning_rate': 1.0})
    _backward([a, b], [np.ones(3), np.ones(3)])
    trainer.step(1)
    # a second step without a backward: MXNet's message, a UserWarning raised
    with pytest.raises(StaleGradientError, match='Parameter `a` on context cpu'):
        trainer.step(1)
    with pytest.raises(UserWarning):
        trainer.step(1)
    # only b gets a new gradient: ignore_stale_grad updates b alone
    with autograd.record():
        loss = (b.data() * 2).sum()
    loss.backward()
    trainer.step(1, ignore_stale_grad=True)
    np.testing.assert_array_equal(a.data().asnumpy(), np.zeros(3))
    np.testing.assert_array_equal(b.data().asnumpy(), np.full(3, -2.0))
    # b's gradient was used up: both are stale now, and nothing moves
    trainer.step(1, ignore_stale_grad=True)
    np.testing.assert_array_equal(b.data().asnumpy(), np.full(3, -2.0))


def test_parameters_with_grad_req_null_are_left_alone():
    a, frozen = _one(name='a'), _one(name='frozen', grad_req='null')
    trainer = Trainer([a, frozen], 'sgd', {'learning_rate': 1.0})
    _backward([a], [np.ones(3)])
    trainer.step(1)
    np.testing.assert_array_equal(frozen.data().asnumpy(), np.ones(3))
    np.testing.assert_array_equal(a.data().asnumpy(), np.zeros(3))


def test_allreduce_grads_then_update_equals_step():
    ctxs = [mx.cpu(0), mx.cpu(1)]

    def run(manual):
        params = probes.make_params(mx, ctxs, {}, {})
        trainer = Trainer(params, 'sgd', {'learning_rate': 0.1, 'momentum': 0.9},
                          update_on_kvstore=False)
        for step in range(3):
            probes.backward(mx, params, ctxs, step)
            if manual:
                trainer.allreduce_grads()
                # the gradients are summed over the contexts in place
                g = [p.list_grad() for p in params.values()]
                for per_ctx in g:
                    np.testing.assert_array_equal(per_ctx[0].asnumpy(), per_ctx[1].asnumpy())
                trainer.update(2)
            else:
                trainer.step(2)
        return {n: p.data(mx.cpu(1)).asnumpy() for n, p in params.items()}

    manual, stepped = run(True), run(False)
    for n in manual:
        np.testing.assert_array_equal(manual[n], stepped[n])


def test_allreduce_and_update_refused_when_the_store_updates():
    params = probes.make_params(mx, [mx.cpu(0), mx.cpu(1)], {}, {})
    trainer = Trainer(params, 'sgd', update_on_kvstore=True)
    with pytest.raises(AssertionError, match='update_on_kvstore'):
        trainer.allreduce_grads()
    with pytest.raises(RuntimeError, match='update_on_kvstore'):
        trainer.update(1)


def test_one_context_has_no_store_and_several_get_one():
    single = Trainer(probes.make_params(mx, [mx.cpu()], {}, {}), 'sgd')
    single._ready()
    assert single._kvstore is None and single._update_on_kvstore is None
    multi = Trainer(probes.make_params(mx, [mx.cpu(0), mx.cpu(1)], {}, {}), 'sgd',
                    kvstore='local')
    multi._ready()
    assert multi._kvstore.type == 'local' and multi._update_on_kvstore
    off = Trainer(probes.make_params(mx, [mx.cpu(0), mx.cpu(1)], {}, {}), 'sgd',
                  update_on_kvstore=False)
    off._ready()
    assert off._kvstore.type == 'device' and off._update_on_kvstore is False


def test_update_on_kvstore_follows_the_environment(monkeypatch):
    monkeypatch.setenv('MXNET_UPDATE_ON_KVSTORE', '0')
    trainer = Trainer(probes.make_params(mx, [mx.cpu(0), mx.cpu(1)], {}, {}), 'sgd')
    trainer._ready()
    assert trainer._update_on_kvstore is False
    explicit = Trainer(probes.make_params(mx, [mx.cpu(0), mx.cpu(1)], {}, {}), 'sgd',
                       update_on_kvstore=True)
    explicit._ready()
    assert explicit._update_on_kvstore is True


def test_set_data_after_a_step_resets_the_store():
    """MXNet's test_trainer_reset_kv: new data of a parameter reaches every context."""
    ctxs = [mx.cpu(0), mx.cpu(1)]
    params = probes.make_params(mx, ctxs, {}, {})
    trainer = Trainer(params, 'sgd', {'learning_rate': 0.1})
    probes.backward(mx, params, ctxs, 0)
    trainer.step(1)
    assert trainer._kv_initialized
    params['w1'].set_data(mx.nd.zeros(probes.SHAPES['w1']))
    assert not trainer._kv_initialized
    probes.backward(mx, params, ctxs, 1)
    trainer.step(1)
    g = sum(probes.gradient('w1', 1, k) for k in range(2))
    for d in params['w1'].list_data():
        np.testing.assert_allclose(d.asnumpy(), -0.1 * g, rtol=1e-6, atol=1e-7)


def test_learning_rate_and_set_learning_rate():
    w = _one()
    trainer = Trainer([w], 'sgd', {'learning_rate': 0.3})
    assert trainer.learning_rate == 0.3
    trainer.set_learning_rate(0.1)
    assert trainer.learning_rate == 0.1 and trainer.optimizer.lr == 0.1
    sched = mx.lr_scheduler.FactorScheduler(step=1, factor=0.5, base_lr=1.0)
    w2 = _one(name='w2')
    scheduled = Trainer([w2], 'sgd', {'learning_rate': 1.0, 'lr_scheduler': sched})
    with pytest.raises(UserWarning, match='LRScheduler'):
        scheduled.set_learning_rate(0.1)


def test_lr_mult_changed_after_the_trainer_is_made_takes_effect():
    w = _one()
    trainer = Trainer([w], 'sgd', {'learning_rate': 1.0})
    w.lr_mult = 0.25
    _backward([w], [np.ones(3)])
    trainer.step(1)
    np.testing.assert_allclose(w.data().asnumpy(), np.full(3, 0.75))


def test_a_dict_of_parameters_is_taken_in_sorted_order():
    """MXNet's test_gluon_trainer_param_order."""
    names = ['b', 'c', 'a', 'e', 'd']
    params = {n: _one(name=n) for n in names}
    trainer = Trainer(params, 'sgd')
    assert [p.name for p in trainer._params] == sorted(names)
    assert trainer._param2idx == {n: i for i, n in enumerate(sorted(names))}


def test_optimizer_instance_and_its_params():
    w = _one()
    sgd = mx.optimizer.SGD(learning_rate=0.2)
    trainer = Trainer([w], sgd)
    assert trainer.optimizer is sgd and sgd.param_dict == {0: w}
    with pytest.raises(ValueError, match='optimizer_params must be None'):
        Trainer([w], mx.optimizer.SGD(), {'learning_rate': 0.1})
    with pytest.raises(ValueError, match='Cannot find optimizer'):
        Trainer([w], 'no_such_optimizer')
    with pytest.raises(TypeError, match='optimizer name or an Optimizer'):
        Trainer([w], 3)


def test_bad_parameter_lists():
    w = _one()
    with pytest.raises(TypeError, match='list or dict of Parameters'):
        Trainer(w, 'sgd')
    with pytest.raises(TypeError, match='got list of'):
        Trainer([w, mx.nd.ones(2)], 'sgd')
    with pytest.raises(ValueError, match="two parameters are named 'w'"):
        Trainer([w, _one()], 'sgd')
    other = _one(name='v', ctx=[mx.cpu(0), mx.cpu(1)])
    with pytest.raises(AssertionError, match='same set of contexts'):
        Trainer([w, other], 'sgd')
    trainer = Trainer([w], 'sgd')
    for bad in (0, -1.5):
        with pytest.raises(ValueError, match='batch_size must be > 0'):
            trainer.step(bad)
    for bad in (True, 'four', None):
        with pytest.raises(TypeError, match='batch_size must be a number'):
            trainer.update(bad)


def test_uninitialized_parameter():
    p = Parameter('late', shape=(2,))
    with pytest.raises(RuntimeError, match="'late' has not been initialized"):
        Trainer([p], 'sgd')


def test_deferred_parameters_join_the_store_once_initialized():
    ctxs = [mx.cpu(0), mx.cpu(1)]
    ready = _one(name='ready', ctx=ctxs)
    late = Parameter('late', shape=(0,), init=mx.init.One(), allow_deferred_init=True)
    late.initialize(ctx=ctxs)
    trainer = Trainer([ready, late], 'sgd', {'learning_rate': 1.0})
    trainer._ready()
    assert trainer._params_to_init == [late]
    late.shape = (3,)
    late._finish_deferred_init()
    for k, ctx in enumerate(ctxs):
        with autograd.record():
            loss = (ready.data(ctx) + late.data(ctx) * (k + 1)).sum()
        loss.backward()
    trainer.step(1)
    assert trainer._params_to_init == []
    for d in late.list_data():
        np.testing.assert_array_equal(d.asnumpy(), np.full(3, 1.0 - 3.0))


# ----------------------------------------------------------------------------- dist_sync
class TwinComm:
    """A second worker identical to this one: sums over the workers double."""
    rank, size, algorithm, timeout, thread_multiple = 0, 2, 'mpi', 5.0, True

    def bcast(self, array, root=0):
        return array

    def allreduce(self, array):
        array *= 2
        return array

    def barrier(self):
        pass

    def duplicate(self, algorithm=None):
        return self


@pytest.mark.parametrize('update_on_kvstore', [None, False])
def test_dist_sync_sums_over_the_workers(update_on_kvstore, tmp_path):
    """Two identical workers on 'dist_sync' step as one worker whose gradients are twice
    as large; the store fuses all keys of a step into one all-reduce."""
    store = DistKVStore('dist_sync', comm=TwinComm(), overlap=False)
    dist = probes.make_params(mx, [mx.cpu()], {'b1': 0.5}, {})
    single = probes.make_params(mx, [mx.cpu()], {'b1': 0.5}, {})
    t_dist = Trainer(dist, 'sgd', {'learning_rate': 0.1, 'momentum': 0.9}, kvstore=store,
                     update_on_kvstore=update_on_kvstore)
    t_single = Trainer(single, 'sgd', {'learning_rate': 0.1, 'momentum': 0.9})
    for step in range(3):
        probes.backward(mx, dist, [mx.cpu()], step)
        # the single worker's loss has twice the gradient
        probes.backward(mx, single, [mx.cpu()], step)
        for p in single.values():
            g = p.grad()
            g *= 2
        t_dist.step(2)
        t_single.step(2)
    assert t_dist._distributed
    assert t_dist._update_on_kvstore is (update_on_kvstore is None)
    for n in dist:
        np.testing.assert_allclose(dist[n].data().asnumpy(), single[n].data().asnumpy(),
                                   rtol=1e-6, atol=1e-7)
    # three pushes of three keys each, fused: one collective per push (plus the init)
    assert store.num_collectives == 4
    with pytest.raises(RuntimeError, match='Cannot reset distributed KVStore'):
        t_dist._reset_kvstore()
    path = str(tmp_path / 'dist.states')
    t_dist.save_states(path)
    assert os.path.isfile(path) and glob.glob(path + '*') == [path]


def test_a_store_without_an_optimizer_sums_only():
    """MXNet's test_trainer_with_teststore: the test store reduces, the updaters update;
    asking it to run the optimizer is refused."""
    x = Parameter('x', shape=(10,))
    x.initialize(ctx=[mx.cpu(0), mx.cpu(1)], init='zeros')
    kv = mx.kv.create('teststore')
    trainer = Trainer([x], 'sgd', {'learning_rate': 1.0, 'momentum': 0.5}, kvstore=kv)
    with autograd.record():
        for w in x.list_data():
            y = w + 1
            y.backward()
    trainer.step(1)
    assert trainer._update_on_kvstore is False
    assert len(x.list_data()) == 2
    for d in x.list_data():
        np.testing.assert_array_equal(d.asnumpy(), np.full(10, -2.0))
    invalid = Trainer([x], 'sgd', kvstore=kv, update_on_kvstore=True)
    with pytest.raises(ValueError, match='update_on_kvstore=False'):
        invalid._init_kvstore()


def test_sparse_declared_parameters_train_as_dense():
    x = Parameter('x', shape=(10,), grad_stype='row_sparse')
    x.initialize(ctx=[mx.cpu(0)], init='zeros')
    trainer = Trainer([x], 'sgd', {'learning_rate': 1.0, 'momentum': 0.5})
    with autograd.record():
        y = x.data() + 1
    y.backward()
    trainer.step(1)
    assert trainer._kvstore is None
    np.testing.assert_array_equal(x.data().asnumpy(), np.full(10, -1.0))


# ----------------------------------------------------------------------------- two processes
DIST_WORKER = '''
import json, sys
import numpy as np
import symgraph as mx
sys.path.insert(0, sys.argv[1])
import gluon_trainer_probes as probes
case = probes.CASES['two_ctx_device_on_kvstore']
opt, opt_params, kw, nctx, lr_mult, wd_mult, batch, _ = case
params = probes.make_params(mx, [mx.cpu()], lr_mult, wd_mult)
kv = mx.kv.create(sys.argv[2])
rank = kv.rank
trainer = mx.gluon.Trainer(params, opt, dict(opt_params), kvstore=kv)
out = {}
for step in range(probes.STEPS):
    # this worker's gradient is the one of context `rank` in the one-process case
    for n, p in sorted(params.items()):
        with mx.autograd.record():
            loss = (p.data() * mx.nd.array(probes.gradient(n, step, rank))).sum()
        loss.backward()
    trainer.step(batch)
    out[step] = {n: p.data().asnumpy().tolist() for n, p in params.items()}
trainer.save_states('trainer.states')
with open('out%d.json' % rank, 'w') as f:
    json.dump({'steps': out, 'update_on_kvstore': trainer._update_on_kvstore}, f)
'''


@pytest.mark.parametrize('kind', ['dist_sync', 'dist_device_sync'])
def test_dist_sync_over_two_processes_equals_mxnets_two_contexts(tmp_path, kind):
    """Two workers of ``python -m symgraph.launch``, each with the gradient of one
    context: every worker's parameters are MXNet's of one process with two contexts."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'dist'))
    try:
        from mpi_util import launch, check
    finally:
        sys.path.pop(0)
    golden = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'golden')
    check(launch(tmp_path, 2, DIST_WORKER, args=[golden, kind], bound=300))
    assert (tmp_path / 'trainer.states').is_file()
    for rank in range(2):
        with open(str(tmp_path / ('out%d.json' % rank))) as f:
            got = json.load(f)
        assert got['update_on_kvstore'] is True
        for step in range(probes.STEPS):
            for n in probes.SHAPES:
                want = STEPS['two_ctx_device_on_kvstore/%s' % n][step, 0]
                np.testing.assert_allclose(np.array(got['steps'][str(step)][n]), want,
                                           rtol=1e-6, atol=1e-7,
                                           err_msg='rank %d step %d %s' % (rank, step, n))


def test_stale_gradients_are_found_when_the_store_updates():
    ctxs = [mx.cpu(0), mx.cpu(1)]
    params = probes.make_params(mx, ctxs, {}, {})
    trainer = Trainer(params, 'sgd', {'learning_rate': 0.1})
    probes.backward(mx, params, ctxs, 0)
    trainer.step(1)
    assert trainer._update_on_kvstore
    # MXNet leaves the marks set on this path, and would update again from old gradients
    with pytest.raises(StaleGradientError, match='has not been updated by backward'):
        trainer.step(1)


def test_nccl_store_is_made_and_refuses_cpu_contexts():
    """'nccl' goes to the NCCL store (GPUs of this process); CPU gradients are refused
    naming the context, as MXNet's NCCL store refuses them."""
    ctxs = [mx.cpu(0), mx.cpu(1)]
    params = probes.make_params(mx, ctxs, {}, {})
    trainer = Trainer(params, 'sgd', kvstore='nccl')
    probes.backward(mx, params, ctxs, 0)
    with pytest.raises(ValueError, match="'nccl' kvstore reduces GPU arrays.*cpu"):
        trainer.step(1)
    assert trainer._kvstore.type == 'nccl'
