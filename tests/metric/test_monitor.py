"""mx.monitor.Monitor against MXNet 1.9.1 on a bound MLP with BatchNorm (probes in
tests/golden/callback_probes.py): names, order, values and the log line's layout.

MXNet's executor also reports the outputs of its backward nodes (``fc1_backward_output0``),
the hidden outputs of an operator (BatchNorm's ``bn_mean``/``bn_var``) and, with
``monitor_all``, each operator's inputs before it runs (``fc2_data``); symgraph's executor
reports only the visible forward outputs (and, with ``monitor_all``, the arguments once before
the first operator). The comparison below leaves those entries out; the strict xfail tests
show the gap and will fail once the executor reports them."""
import json
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

HIDDEN = ('bn_mean', 'bn_var')
COMPARABLE = ['monitor:default', 'monitor:weights_outputs_sorted', 'monitor:list_stat',
              'monitor:array_stat']


@pytest.fixture(scope='module')
def ours():
    return callback_probes.run_monitor(mx)


def _reported_by_our_executor(entries):
    return [e for e in entries if '_backward_' not in e[1] and e[1] not in HIDDEN]


def _same(got, want):
    assert [g[:2] for g in got] == [w[:2] for w in want]          # steps and names, in order
    assert [g[3] for g in got] == [w[3] for w in want]            # 'Batch: {:7d} {:30s}'
    for g, w in zip(got, want):
        assert len(g[2]) == len(w[2]) and all(
            math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-7) for a, b in zip(g[2], w[2])), (g, w)


@pytest.mark.parametrize('key', COMPARABLE)
def test_monitor_lines_match_mxnet(ours, key):
    want = _reported_by_our_executor(EXPECTED[key])
    assert len(want) >= 12
    _same(ours[key], want)


@pytest.mark.parametrize('key', COMPARABLE[:3])      # array_stat's pattern matches neither
@pytest.mark.xfail(strict=True, reason='the executor reports neither backward nodes nor '
                   'hidden outputs to the monitor callback')
def test_monitor_reports_backward_and_hidden_outputs_as_mxnet(ours, key):
    _same(ours[key], EXPECTED[key])


@pytest.mark.xfail(strict=True, reason="monitor_all: MXNet reports each operator's inputs "
                   "(as '<node>_<input>' and under the variable's name) before it runs")
def test_monitor_all_matches_mxnet(ours):
    _same(ours['monitor:monitor_all'], EXPECTED['monitor:monitor_all'])


def test_monitor_all_reports_the_arguments_too(ours):
    names = [e[1] for e in ours['monitor:monitor_all'] if e[0] == 1]
    assert names == ['fc2_weight', 'fc2_bias', 'fc2_output', 'fc2_weight', 'fc2_bias']


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
