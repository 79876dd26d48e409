"""mx.monitor.Monitor against MXNet 1.9.1 on a bound MLP with BatchNorm (probes in
tests/golden/callback_probes.py): names, order, values and the log line's layout.

Like MXNet's executor, symgraph's reports the outputs of the backward nodes
(``fc1_backward_output0``), the hidden outputs of an operator (BatchNorm's ``bn_mean`` and
``bn_var``) and, with ``monitor_all``, each operator's inputs before it runs (``fc2_data``,
``fc2_backward_input0``); every comparison below takes MXNet's whole output."""
import json
import linecache
import math
import os

import numpy as np
import pytest

import symgraph as mx
import callback_probes

GOLDEN = os.path.join(os.path.dirname(__file__), '..', 'golden', 'data',
                      'metric_callbacks.json')
with open(GOLDEN) as _f:
    EXPECTED = json.load(_f)['probes']

COMPARABLE = ['monitor:default', 'monitor:weights_outputs_sorted', 'monitor:list_stat',
              'monitor:array_stat']


@pytest.fixture(scope='module')
def ours():
    return callback_probes.run_monitor(mx)


def _same(got, want):
    assert [g[:2] for g in got] == [w[:2] for w in want]          # steps and names, in order
    assert [g[3] for g in got] == [w[3] for w in want]            # 'Batch: {:7d} {:30s}'
    for g, w in zip(got, want):
        assert len(g[2]) == len(w[2]) and all(
            # abs_tol: a bias gradient's norm here is ~2e-6, what is left after summing O(1)
            # float32 terms over the batch; oneDNN's products round differently from
            # MXNet's native ones by up to ~5e-7 there (relative agreement elsewhere: 1e-5)
            math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-6) for a, b in zip(g[2], w[2])), (g, w)


@pytest.mark.parametrize('key', COMPARABLE)
def test_monitor_lines_match_mxnet(ours, key):
    assert len(EXPECTED[key]) >= 12
    _same(ours[key], EXPECTED[key])


@pytest.mark.parametrize('key', COMPARABLE[:3])      # array_stat's pattern matches neither
def test_monitor_reports_backward_and_hidden_outputs(ours, key):
    names = {e[1] for e in ours[key]}
    assert 'fc1_backward_output0' in names and 'fc2_backward_output2' in names
    if key == 'monitor:default':
        assert {'bn_mean', 'bn_var', 'relu1_backward_output', 'softmax_backward_output1',
                'bn_backward_output2'} <= names


def test_monitor_all_matches_mxnet(ours):
    # FullyConnected's backward reads (ograd, data, weight), never the bias, as MXNet's
    _same(ours['monitor:monitor_all'], EXPECTED['monitor:monitor_all'])


def test_monitor_all_reports_inputs_before_each_operator(ours):
    names = [e[1] for e in ours['monitor:monitor_all'] if e[0] == 1]
    assert names == ['fc2_data', 'fc2_weight', 'fc2_weight', 'fc2_bias', 'fc2_bias',
                     'fc2_output', 'fc2_backward_input0', 'fc2_backward_input1', 'fc2_weight',
                     'fc2_backward_input2', 'fc2_backward_output0', 'fc2_backward_output1',
                     'fc2_backward_output2', 'fc2_weight', 'fc2_bias']


def test_toc_matches_mxnet(ours):
    assert ours['monitor:toc_without_tic'] == EXPECTED['monitor:toc_without_tic'] == []
    got, want = ours['monitor:toc'], EXPECTED['monitor:toc']
    assert [g[:2] for g in got] == [w[:2] for w in want]
    np.testing.assert_allclose(got[0][2], want[0][2], rtol=1e-6)


def test_interval_decides_which_batches_are_collected():
    exe = callback_probes._bound(mx, np.random.RandomState(0))
    mon = mx.mon.Monitor(3, pattern='softmax_output')
    mon.install(exe)
    steps = []
    for _ in range(7):
        mon.tic()
        exe.forward()
        steps += [n for n, _, _ in mon.toc()]
    assert steps == [1, 4, 7]


def test_default_stat_is_norm_over_sqrt_size():
    exe = callback_probes._bound(mx, np.random.RandomState(0))
    mon = mx.mon.Monitor(1, pattern='fc1_weight$')
    mon.install(exe)
    mon.tic()
    exe.forward()
    (step, name, text), = mon.toc()
    w = exe.arg_dict['fc1_weight'].asnumpy()
    assert (step, name) == (1, 'fc1_weight') and text.endswith('\t')
    assert float(text) == pytest.approx(np.linalg.norm(w) / np.sqrt(w.size), rel=1e-6)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match='interval'):
        mx.mon.Monitor(0)
    with pytest.raises(TypeError, match='stat_func'):
        mx.mon.Monitor(1, stat_func='norm')
    exe = callback_probes._bound(mx, np.random.RandomState(0))
    mon = mx.mon.Monitor(1, stat_func=lambda x: x.asnumpy(), pattern='fc1_weight$')
    mon.install(exe)
    mon.tic()
    with pytest.raises(TypeError, match='stat_func must return an NDArray'):
        mon.toc()


def _plan_sources(exe):
    """The generated forward and backward functions of an executor's plan, as text."""
    plan = exe._plan
    fns = list(plan._fwd_cache.items()) + [(('bwd',) + (k,), v)
                                           for k, v in plan._bwd_cache.items()]
    return {key: ''.join(linecache.getlines(fname)) for key, (_, fname, _) in fns}


def test_no_monitoring_code_without_a_callback():
    exe = callback_probes._bound(mx, np.random.RandomState(0))
    exe.forward(is_train=True)
    exe.backward()
    plain = _plan_sources(exe)
    assert len(plain) == 2 and all('M(' not in src for src in plain.values())
    got = []
    exe.set_monitor_callback(lambda name, arr: got.append(name))
    exe.forward(is_train=True)
    exe.backward()
    assert 'bn_var' in got and 'fc1_backward_output2' in got and 'data' not in got
    monitored = {k: v for k, v in _plan_sources(exe).items() if k not in plain}
    assert len(monitored) == 2 and all('M(' in src for src in monitored.values())
    exe.set_monitor_callback(None)          # removed: back to the plain code
    del got[:]
    exe.forward(is_train=True)
    exe.backward()
    assert got == [] and len(_plan_sources(exe)) == 4


def test_gradients_not_computed_are_reported_as_zeros():
    # MXNet's backward nodes report one output per argument, those nobody differentiates
    # too (its test_module.py::test_monitor counts them; their memory holds anything
    # there, zeros here): in order, each with its argument's shape
    net = callback_probes._mlp(mx)
    req = {n: 'null' if n in ('data', 'softmax_label') else 'write'
           for n in net.list_arguments()}
    exe = net.simple_bind(mx.cpu(), data=(2, 5), softmax_label=(2,), grad_req=req)
    got = []
    exe.set_monitor_callback(lambda name, arr: got.append((name, arr.asnumpy())))
    exe.forward(is_train=True)
    exe.backward()
    names = [n for n, _ in got]
    fc1 = [n for n in names if n.startswith('fc1_backward_output')]
    assert fc1 == ['fc1_backward_output0', 'fc1_backward_output1', 'fc1_backward_output2']
    assert names.index('softmax_backward_output0') + 1 == \
        names.index('softmax_backward_output1')
    got = dict(got)
    assert got['fc1_backward_output0'].shape == (2, 5)
    assert not got['fc1_backward_output0'].any()
    assert got['softmax_backward_output1'].shape == (2,)
    assert not got['softmax_backward_output1'].any()
    assert got['fc1_backward_output1'].shape == (4, 5)
    assert got['softmax_backward_output0'].shape == (2, 3)


def test_callback_must_be_callable():
    exe = callback_probes._bound(mx, np.random.RandomState(0))
    with pytest.raises(TypeError, match='callback must be callable'):
        exe.set_monitor_callback('print')
