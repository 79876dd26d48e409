"""Every optimizer against MXNet 1.9.1 (``tests/golden/make_optimizer.py``): the weights and
states after the first and the fifth of five aggregated updates (as Module's
``_update_params`` calls the updater) of four parameters, with weight decay, rescale_grad,
clipping, lr_mult/wd_mult from Variable attributes and ``set_lr_mult``, ``param_idx2name``,
a FactorScheduler, and float16 weights with multi_precision; states saved by MXNet loaded
here and continued; states saved here loaded by MXNet (``ours_optimizer/``)."""
import json
import os
import warnings

import numpy as np
import pytest

import symgraph as mx
import make_optimizer
import optimizer_cases as cases

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, '..', 'golden')
DATA = os.path.join(GOLDEN, 'data')

with np.load(os.path.join(DATA, 'optimizer.npz')) as _z:
    GOLD = {k: _z[k] for k in _z.files}

#: cases not reproduced bit for bit, with the relative tolerance that holds and why
TOLERANCE = {
    # nd.mean of the squared gradient rounds differently from MXNet's reduction
    'groupadagrad': 1e-6,
}


def _run(case):
    with warnings.catch_warnings():
        # float16 without multi_precision warns as in MXNet; not these cases
        warnings.simplefilter('error')
        return cases.run_optimizer(mx, case)[0]


def _compare(got, want_keys, tol, label):
    assert sorted(got) == sorted(want_keys), label
    for k in want_keys:
        want = GOLD[k]
        assert got[k].dtype == want.dtype and got[k].shape == want.shape, k
        if tol is None:
            np.testing.assert_array_equal(got[k], want, err_msg='%s %s' % (label, k))
        else:
            np.testing.assert_allclose(got[k], want, rtol=tol, atol=tol * 1e-3,
                                       err_msg='%s %s' % (label, k))


def test_golden_data_is_mxnet_1_9_1():
    with open(os.path.join(DATA, 'optimizer_meta.json')) as f:
        meta = json.load(f)
    assert meta['mxnet'] == '1.9.1'
    assert [c[0] for c in meta['optimizers']] == [c[0] for c in cases.OPTIMIZER_CASES]


@pytest.mark.parametrize('case', cases.OPTIMIZER_CASES, ids=[c[0] for c in cases.OPTIMIZER_CASES])
def test_optimizer_matches_mxnet(case):
    name = case[0]
    got = _run(case)
    keys = [k for k in GOLD if k.startswith(name + '/')]
    assert any('/step4/' in k for k in keys)
    _compare(got, keys, TOLERANCE.get(name), name)


def test_every_registered_optimizer_has_a_golden_case():
    covered = {c[1] for c in cases.OPTIMIZER_CASES}
    # SGLD adds noise from the random generator (tested in test_optimizer_api.py)
    # (importing mx.contrib.svrg_optimization registers its two optimizers, tested in
    # tests/contrib/test_svrg.py, as MXNet's does)
    assert set(mx.optimizer.Optimizer.opt_registry) - covered - {
        '_svrgoptimizer', '_assignmentoptimizer'} == {'sgld'}


# ------------------------------------------------------------------ MXNet's states here

STATE_TAGS = [n + s for n in cases.STATE_CASES for s in ('', '_opt')]


def _weights(prefix):
    return {int(k.rsplit('/w', 1)[1]): v for k, v in GOLD.items() if k.startswith(prefix)}


@pytest.mark.parametrize('tag', STATE_TAGS)
def test_states_saved_by_mxnet_load_and_continue(tag):
    name = tag[:-4] if tag.endswith('_opt') else tag
    with open(os.path.join(DATA, 'optimizer_states', tag + '.states'), 'rb') as f:
        blob = f.read()
    got = cases.continue_from_states(mx, name, blob, _weights('saved/%s/' % tag))
    got = {'cont/%s/%s' % (tag, k): v for k, v in got.items()}
    _compare(got, [k for k in GOLD if k.startswith('cont/%s/' % tag)], None, tag)


def test_pickled_optimizer_comes_back_as_symgraphs():
    with open(os.path.join(DATA, 'optimizer_states', 'adam_opt.states'), 'rb') as f:
        blob = f.read()
    updater = mx.optimizer.get_updater(mx.optimizer.SGD())
    updater.set_states(blob)
    opt = updater.optimizer
    assert type(opt) is mx.optimizer.Adam
    assert type(opt.lr_scheduler) is mx.lr_scheduler.FactorScheduler
    assert opt.num_update == cases.STEPS and opt.idx2name[0] == 'fc_weight'
    assert opt.lr_mult == {'fc_weight': 2.0, 'fc_bias': 0.5}
    assert opt.param_dict == {}
    # the aliasing of MXNet's counters survives: both names are one dict
    assert opt._index_update_count is opt._all_index_update_counts[0]
    state = updater.states[0]
    assert type(state[0]) is mx.nd.NDArray and state[0].shape == (3, 4)


def test_kvstore_states_saved_by_mxnet():
    kv = mx.kv.create('local')
    kv.init(['w', 'b'], [mx.nd.array(GOLD['kvsaved/w']), mx.nd.array(GOLD['kvsaved/b'])])
    kv.set_optimizer(mx.optimizer.create('adam', learning_rate=0.1))
    kv.load_optimizer_states(os.path.join(DATA, 'optimizer_states', 'kv_adam.states'))
    assert sorted(kv._updater.states) == ['b', 'w']
    kv.push(['w', 'b'], [mx.nd.ones((2, 3)) * 3, mx.nd.ones((3,)) * 0.25])
    outs = [mx.nd.zeros((2, 3)), mx.nd.zeros((3,))]
    kv.pull(['w', 'b'], out=outs)
    # a fresh optimizer counts from 0 again (as MXNet's did when it continued)
    np.testing.assert_array_equal(outs[0].asnumpy(), GOLD['kvcont/w'])
    np.testing.assert_array_equal(outs[1].asnumpy(), GOLD['kvcont/b'])


# ------------------------------------------------------------------ our states in MXNet

OURS = os.path.join(GOLDEN, 'ours_optimizer')


def test_mxnet_verified_our_states():
    with open(os.path.join(OURS, 'mxnet_verified.txt')) as f:
        text = f.read()
    for tag in STATE_TAGS:
        assert 'OK   %s: MXNet 1.9.1 continued' % tag in text, tag
    assert '%d file(s), 0 failure(s)' % len(STATE_TAGS) in text


def test_we_still_write_the_verified_states(tmp_path):
    expected = make_optimizer.write_ours(mx, str(tmp_path))
    with np.load(os.path.join(OURS, 'expected.npz')) as z:
        assert sorted(z.files) == sorted(expected)
        for k in z.files:
            np.testing.assert_array_equal(expected[k], z[k], err_msg=k)
    for tag in STATE_TAGS:
        with open(os.path.join(OURS, tag + '.states'), 'rb') as f1, \
                open(os.path.join(str(tmp_path), tag + '.states'), 'rb') as f2:
            assert f1.read() == f2.read(), tag


def test_states_only_pickles_are_byte_identical_to_mxnets():
    for name in cases.STATE_CASES:
        with open(os.path.join(OURS, name + '.states'), 'rb') as f1, \
                open(os.path.join(DATA, 'optimizer_states', name + '.states'), 'rb') as f2:
            assert f1.read() == f2.read(), name
