"""mx.callback against MXNet 1.9.1 (tests/golden/callback_probes.py, data made by
tests/golden/make_metric.py): Speedometer's lines (the speed itself is checked on a fake
clock), log_train_metric, ProgressBar, LogValidationMetricsCallback, do_checkpoint,
module_checkpoint; and the tqdm progress bar, which MXNet lacks."""
import io
import json
import logging
import os
import sys
import types

import pytest

import symgraph as mx
import callback_probes

GOLDEN = os.path.join(os.path.dirname(__file__), '..', 'golden', 'data',
                      'metric_callbacks.json')
with open(GOLDEN) as _f:
    EXPECTED = json.load(_f)['probes']


@pytest.fixture(scope='module')
def ours():
    return callback_probes.run_callbacks(mx)


CALLBACK_KEYS = sorted(k for k in EXPECTED if not k.startswith('monitor:'))


@pytest.mark.parametrize('key', CALLBACK_KEYS)
def test_callback_output_matches_mxnet(ours, key):
    assert ours[key] == EXPECTED[key]


def test_golden_lines_are_mxnets_format():
    lines = EXPECTED['callback:speedometer_composite']
    assert lines[0] == ('Epoch[0] Batch [0-2]\tSpeed: <speed> samples/sec\taccuracy=0.333333'
                        '\tcross-entropy=1.444733')
    assert EXPECTED['do_checkpoint:files'] == ['ck-0002.params', 'ck-0004.params',
                                               'ck-symbol.json']


def _param(epoch, nbatch, metric):
    return mx.model.BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=metric,
                                  locals=None)


def _fake_clock(monkeypatch, times):
    clock = iter(times)
    monkeypatch.setattr(mx.callback, 'time', types.SimpleNamespace(time=lambda: next(clock)))


def test_speedometer_speed_is_samples_per_second(monkeypatch):
    _fake_clock(monkeypatch, [100.0, 100.5, 101.5])
    metric = mx.metric.Accuracy()
    metric.update([mx.nd.array([0, 1])], [mx.nd.array([[0.9, 0.1], [0.8, 0.2]])])
    sp = mx.callback.Speedometer(batch_size=10, frequent=2)
    with callback_probes.capture_root_log() as lines:
        sp(_param(0, 0, metric))      # starts the clock at 100.0
        sp(_param(0, 1, metric))      # not a multiple of frequent: nothing
        sp(_param(0, 2, metric))      # 2 batches x 10 samples in 0.5 s
    assert lines == ['Epoch[0] Batch [0-2]\tSpeed: 40.00 samples/sec\taccuracy=0.500000']
    # auto_reset cleared the local statistics, not the global ones
    assert metric.num_inst == 0 and metric.global_num_inst == 2


def test_speedometer_restarts_when_the_batch_count_goes_back(monkeypatch):
    _fake_clock(monkeypatch, [0.0, 1.0, 1.0, 5.0, 6.0, 6.0])
    sp = mx.callback.Speedometer(batch_size=3, frequent=1)
    with callback_probes.capture_root_log() as lines:
        sp(_param(0, 0, None))
        sp(_param(0, 1, None))        # 3 samples in 1 s
        sp(_param(1, 0, None))        # new epoch: only restarts the clock (at 5.0)
        sp(_param(1, 1, None))
    assert lines == ['Iter[0] Batch [1]\tSpeed: 3.00 samples/sec',
                     'Iter[1] Batch [1]\tSpeed: 3.00 samples/sec']


def test_callbacks_log_through_the_root_logger_without_configuring_it():
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    mx.callback.LogValidationMetricsCallback()(_param(0, 0, mx.metric.Accuracy()))
    assert root.handlers == handlers and root.level == level


def test_batch_end_param_is_mxnets_namedtuple():
    p = _param(1, 2, None)
    assert type(p).__name__ == 'BatchEndParams'
    assert p._fields == ('epoch', 'nbatch', 'eval_metric', 'locals')
    assert p == (1, 2, None, None)


# ------------------------------------------------------------------------------ tqdm
def _fit_with(cb, epochs=2, batches=3, metric=None):
    for epoch in range(epochs):
        for nbatch in range(batches):
            if metric is not None:
                metric.update([mx.nd.array([nbatch % 2])], [mx.nd.array([[0.4, 0.6]])])
            cb(_param(epoch, nbatch, metric))


def test_tqdm_progress_draws_one_bar_per_epoch():
    pytest.importorskip('tqdm')
    out = io.StringIO()
    bar = mx.callback.TqdmProgress(total=3, file=out, mininterval=0, ascii=True)
    _fit_with(bar, metric=mx.metric.Accuracy())
    text = out.getvalue()
    assert 'Epoch[0]' in text and 'Epoch[1]' in text
    assert '3/3' in text and 'accuracy=' in text
    assert bar.bar is None            # the bar closed itself on reaching total


def test_tqdm_progress_without_total_closes_on_the_next_epoch():
    pytest.importorskip('tqdm')
    out = io.StringIO()
    bar = mx.callback.TqdmProgress(file=out, mininterval=0, show_metric=False)
    _fit_with(bar, epochs=2, batches=4)
    assert bar.bar is not None and bar.bar.n == 4 and bar.bar.desc.startswith('Epoch[1]')
    bar.close()
    assert bar.bar is None
    text = out.getvalue()
    assert '4batch' in text.replace(' ', '') and 'accuracy' not in text


def test_tqdm_progress_draws_a_plain_line_without_tqdm(monkeypatch):
    monkeypatch.setitem(sys.modules, 'tqdm', None)     # what an absent package looks like
    out = io.StringIO()
    bar = mx.callback.TqdmProgress(total=3, file=out, mininterval=0)
    _fit_with(bar, metric=mx.metric.Accuracy())
    lines = out.getvalue().splitlines()
    # (not a terminal: whole lines) each epoch ends on its full count with the metric
    finals = [line for line in lines if line.startswith(('Epoch[0]: 3/3', 'Epoch[1]: 3/3'))]
    assert len(finals) >= 2 and all('[100%]' in f and 'batch/s' in f for f in finals)
    assert finals[-1].endswith('accuracy=0.3333')      # labels 0, 1, 0; predicted 1
    with pytest.raises(ImportError, match=r'pip install symgraph\[tqdm\]'):
        mx.callback.TqdmProgress(total=3, use_tqdm=True)


def test_tqdm_progress_rejects_a_bad_total():
    pytest.importorskip('tqdm')
    with pytest.raises(ValueError, match='total'):
        mx.callback.TqdmProgress(total=0)
