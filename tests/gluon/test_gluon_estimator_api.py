"""mx.gluon.contrib.estimator: training runs against MXNet 1.9.1's
(tests/golden/gluon_estimator_probes.py, data/gluon_estimator/runs.json): log lines, loss
per epoch, checkpoint file names, resuming, early stopping; and the argument checks and
warnings of the Estimator and its handlers."""
import json
import os
import re
import warnings

import numpy as np
import pytest

import symgraph as mx
from symgraph.gluon.contrib.estimator import (Estimator, BatchProcessor, CheckpointHandler,
                                              EarlyStoppingHandler, LoggingHandler,
                                              BatchEnd)
from symgraph.gluon.contrib.estimator import event_handler
import gluon_estimator_probes as probes

GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'golden', 'data',
                      'gluon_estimator', 'runs.json')
NUMBER = re.compile(r'\d+\.\d+')


@pytest.fixture(scope='module')
def golden():
    with open(GOLDEN) as f:
        return json.load(f)


@pytest.fixture(scope='module')
def ours(tmp_path_factory):
    """The probe's three runs under symgraph."""
    model_dir = str(tmp_path_factory.mktemp('estimator'))
    return probes.run(mx, model_dir)


def assert_lines_match(lines, expected):
    """Same text, and the %.4f metric values within one unit in the last place shown."""
    assert [NUMBER.sub('#', x) for x in lines] == [NUMBER.sub('#', x) for x in expected]
    for line, want in zip(lines, expected):
        got = [float(v) for v in NUMBER.findall(line)]
        ref = [float(v) for v in NUMBER.findall(want)]
        np.testing.assert_allclose(got, ref, atol=1.5e-4, err_msg=line)


@pytest.mark.parametrize('run', ['fit', 'resume', 'early_stopping'])
def test_log_lines_match_mxnet(ours, golden, run):
    assert_lines_match(ours[run]['lines'], golden[run]['lines'])


@pytest.mark.parametrize('run', ['fit', 'resume', 'early_stopping'])
def test_loss_falls_as_in_mxnet(ours, golden, run):
    losses = ours[run]['losses']
    assert all(b < a for a, b in zip(losses, losses[1:])), losses
    np.testing.assert_allclose(losses, golden[run]['losses'], rtol=1e-4)


def test_loss_falls_over_the_runs(ours):
    # the resumed run starts from the checkpoint: below where the first run ended
    assert ours['resume']['losses'][0] < ours['fit']['losses'][-1]
    assert ours['fit']['losses'][-1] < 0.2 * ours['fit']['losses'][0]


def test_checkpoint_files_and_resume(ours, golden):
    assert ours['fit']['files'] == golden['fit']['files']
    assert 'tiny-epoch0batch4.params' not in ours['fit']['files']   # max_checkpoints=2
    assert ours['resume']['files'] == golden['resume']['files']
    assert ours['resume']['max_epoch'] == golden['resume']['max_epoch'] == 2
    assert ours['fit']['metric_names'] == golden['fit']['metric_names']


def test_early_stopping_counters(ours, golden):
    run = ours['early_stopping']
    assert (run['current_epoch'], run['stopped_epoch']) == (2, 1)
    assert (run['current_epoch'], run['stopped_epoch']) == \
        (golden['early_stopping']['current_epoch'], golden['early_stopping']['stopped_epoch'])


def test_caplog_records_and_levels(caplog, golden, tmp_path):
    # the estimator's logger is outside logging's hierarchy (as MXNet's): attach caplog
    est = probes.estimator(mx)
    est.logger.addHandler(caplog.handler)
    handler = LoggingHandler(log_interval=2, metrics=est.train_metrics)
    with caplog.at_level('INFO'):
        est.fit(probes.data(mx), val_data=probes.data(mx, n=8), epochs=3,
                event_handlers=[handler])
    lines = [probes.normalise(m, str(tmp_path)) for m in caplog.messages]
    assert_lines_match(lines, golden['fit']['lines'])
    assert {r.levelname for r in caplog.records} == {'INFO'}
    assert lines[0] == 'Training begin: using optimizer SGD with current learning rate 0.0500 '
    assert re.fullmatch(r'\[Epoch 2\] Finished in \d+\.\d{3}s, training l2loss: \d\.\d{4}',
                        caplog.messages[-2])

    caplog.clear()
    est.logger.addHandler(caplog.handler)
    CheckpointHandler(str(tmp_path), model_prefix='tiny')._save_checkpoint(est)
    resume = CheckpointHandler(str(tmp_path), model_prefix='tiny', resume_from_checkpoint=True)
    est.fit(probes.data(mx), epochs=3, event_handlers=[resume])
    warning = [r for r in caplog.records if r.levelname == 'WARNING']
    assert [r.getMessage() for r in warning] == [
        'CheckpointHandler: Checkpoint resumed from epoch 0 batch 0, continue to train for '
        '2 epochs ']
    assert est.max_epoch == 2


def test_logger_writes_to_stdout(capsys):
    est = probes.estimator(mx)
    est.fit(probes.data(mx), batches=3)
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == ['Training begin: using optimizer SGD with current learning rate 0.0500 ',
                       'Train for 3 batches.']
    # stopping after batch 3 still ends the (partial) epoch: one epoch counted, as MXNet
    assert re.fullmatch(r'Train finished using total \d+s with 1 epochs\. training l2loss: '
                        r'\d\.\d{4}', out[-1]), out[-1]


def test_two_contexts_train_as_one(golden):
    # each batch is split over the devices, the step is over the whole batch: the same run
    class Trace(event_handler.EpochEnd):
        def __init__(self):
            self.values = []

        def epoch_end(self, estimator, *args, **kwargs):
            self.values.append(estimator.train_metrics[0].get()[1])

    est = probes.estimator(mx, context=[mx.cpu(0), mx.cpu(1)])
    trace = Trace()
    est.fit(probes.data(mx), val_data=probes.data(mx, n=8), epochs=3, event_handlers=[trace])
    np.testing.assert_allclose(trace.values, golden['fit']['losses'], rtol=1e-4)
    assert len(est.net.weight.list_data()) == 2


def test_batches_stop_mid_epoch():
    class Count(BatchEnd):
        def __init__(self):
            self.seen = 0

        def batch_end(self, estimator, *args, **kwargs):
            self.seen += 1
            assert len(kwargs['loss']) == 1 and kwargs['loss'][0].shape == (4,)

    est = probes.estimator(mx)
    before = est.net.weight.data().asnumpy().copy()
    count = Count()
    est.fit(probes.data(mx), batches=6, event_handlers=[count])   # 4 batches an epoch
    assert count.seen == 6
    assert not np.allclose(est.net.weight.data().asnumpy(), before)


def test_fit_and_evaluate_refuse_bad_input():
    est = probes.estimator(mx)
    loader = probes.data(mx)
    with pytest.raises(ValueError, match='Gluon DataLoader'):
        est.fit([mx.nd.ones((4, 3))], epochs=1)
    with pytest.raises(ValueError, match='one and only one'):
        est.fit(loader, epochs=1, batches=2)
    with pytest.raises(ValueError, match='one and only one'):
        est.fit(loader)
    with pytest.raises(ValueError, match='Gluon DataLoader'):
        est.evaluate(mx.io.NDArrayIter(mx.nd.ones((4, 3)), batch_size=2))
    with pytest.raises(ValueError, match='EventHandler'):
        est.fit(loader, epochs=1, event_handlers=['log'])
    # a user handler mixed with the defaults must use the estimator's metric objects
    with pytest.raises(ValueError, match='outside of the known'):
        est.fit(loader, epochs=1, event_handlers=[LoggingHandler(metrics=mx.metric.MAE())])


def test_estimator_argument_checks():
    net = mx.gluon.nn.Dense(1, in_units=3)
    net.initialize()
    trainer = mx.gluon.Trainer(net.collect_params(), 'sgd')
    loss = mx.gluon.loss.L2Loss()
    with pytest.raises(ValueError, match='loss must be a Loss'):
        Estimator(net, loss='l2', trainer=trainer)
    with pytest.raises(ValueError, match='metrics must be a Metric'):
        Estimator(net, loss, train_metrics='mae', trainer=trainer)
    with pytest.raises(ValueError, match='Gluon Trainer'):
        Estimator(net, loss, trainer='sgd')
    with pytest.raises(ValueError, match='context must be a Context'):
        Estimator(net, loss, trainer=trainer, context='cpu')
    with pytest.raises(AssertionError, match='not available'):
        Estimator(net, loss, trainer=trainer, context=[mx.gpu(100)])
    with pytest.raises(ValueError, match='fit_batch'):
        Estimator(net, loss, trainer=trainer, batch_processor=object())
    with pytest.warns(UserWarning, match='No trainer specified'):
        est = Estimator(net, loss)
    assert est.trainer.learning_rate == 0.001
    with pytest.warns(UserWarning, match='already fully initialized'):
        Estimator(net, loss, trainer=trainer, initializer=mx.init.Xavier())
    # composite metrics are flattened; the default for softmax CE adds accuracy
    comp = mx.metric.CompositeEvalMetric([mx.metric.MAE(), mx.metric.RMSE()])
    est = Estimator(net, loss, train_metrics=comp, trainer=trainer)
    assert [m.name for m in est.train_metrics] == ['training mae', 'training rmse']
    assert [m.name for m in est.val_metrics] == ['validation mae', 'validation rmse']
    est = Estimator(net, mx.gluon.loss.SoftmaxCrossEntropyLoss(), trainer=trainer)
    assert [m.name for m in est.train_metrics] == ['training accuracy',
                                                   'training softmaxcrossentropyloss']
    assert isinstance(est.batch_processor, BatchProcessor)


def test_default_handler_order():
    est = probes.estimator(mx)
    stop = EarlyStoppingHandler(monitor=est.val_metrics[0], mode='min')
    handlers = est._prepare_default_handlers(val_data=probes.data(mx), event_handlers=stop)
    assert [type(h).__name__ for h in handlers] == [
        'GradientUpdateHandler', 'MetricHandler', 'ValidationHandler', 'EarlyStoppingHandler',
        'StoppingHandler', 'LoggingHandler']


def test_handler_argument_checks(tmp_path):
    acc = mx.metric.Accuracy()
    with pytest.raises(ValueError, match='log_interval'):
        LoggingHandler(log_interval='batch')
    with pytest.raises(ValueError, match='as monitor'):
        CheckpointHandler(str(tmp_path), save_best=True)
    with pytest.raises(ValueError, match='as monitor'):
        EarlyStoppingHandler(monitor='accuracy')
    with pytest.raises(ValueError, match='CompositeEvalMetric'):
        EarlyStoppingHandler(monitor=mx.metric.CompositeEvalMetric([acc]))
    with pytest.warns(RuntimeWarning, match='mode sideways is unknown'):
        with warnings.catch_warnings():
            warnings.filterwarnings('ignore', message='`greater`')
            EarlyStoppingHandler(monitor=acc, mode='sideways')
    # 'auto' takes 'max' for accuracy and F1, 'min' for other metrics (see differences.md)
    with pytest.warns(UserWarning, match='`greater` operator'):
        assert EarlyStoppingHandler(monitor=acc).monitor_op is np.greater
    with pytest.warns(UserWarning, match='`less` operator'):
        assert EarlyStoppingHandler(monitor=mx.metric.MAE()).monitor_op is np.less
    with pytest.warns(UserWarning, match='`less` operator'):
        handler = CheckpointHandler(str(tmp_path / 'new'), monitor=mx.metric.Loss(),
                                    save_best=True)
    assert handler.monitor_op is np.less and handler.best == np.inf
    assert os.path.isdir(str(tmp_path / 'new'))


def test_resume_refuses_mismatched_period_and_finished_training(tmp_path):
    est = probes.estimator(mx)
    by_batch = CheckpointHandler(str(tmp_path), batch_period=2, resume_from_checkpoint=True)
    with pytest.raises(AssertionError, match='same type of period'):
        est.fit(probes.data(mx), epochs=2, event_handlers=[by_batch])
    est.fit(probes.data(mx), epochs=2, event_handlers=[CheckpointHandler(str(tmp_path))])
    assert sorted(os.listdir(str(tmp_path)))[:2] == ['model-epoch0batch4.params',
                                                     'model-epoch0batch4.states']
    done = CheckpointHandler(str(tmp_path), resume_from_checkpoint=True)
    with pytest.raises(ValueError, match='maximum number of epoch 2 reached'):
        est.fit(probes.data(mx), epochs=2, event_handlers=[done])
    os.remove(str(tmp_path / 'model-epoch1batch8.states'))
    with pytest.raises(FileNotFoundError, match='epoch1batch8.states does not exist'):
        est.fit(probes.data(mx), epochs=4, event_handlers=[
            CheckpointHandler(str(tmp_path), resume_from_checkpoint=True)])


def test_early_stopping_warns_when_monitor_never_updated():
    est = probes.estimator(mx)
    unused = mx.metric.MAE()
    stop = EarlyStoppingHandler(monitor=unused, mode='min')
    with pytest.warns(RuntimeWarning, match='mae is not updated'):
        est.fit(probes.data(mx), epochs=2, event_handlers=[stop])
    assert stop.stopped_epoch == 0 and stop.current_epoch == 2


def test_module_layout():
    # MXNet's import paths
    assert mx.gluon.contrib.estimator.Estimator is Estimator
    assert event_handler.GradientUpdateHandler.__module__.endswith('estimator.event_handler')
    assert mx.gluon.contrib.estimator.batch_processor.BatchProcessor is BatchProcessor


def test_validation_handler_periods_and_custom_batch_processor():
    class Counting(BatchProcessor):
        def __init__(self):
            self.fits = self.evals = 0

        def fit_batch(self, estimator, train_batch, batch_axis=0):
            self.fits += 1
            return super().fit_batch(estimator, train_batch, batch_axis)

        def evaluate_batch(self, estimator, val_batch, batch_axis=0):
            self.evals += 1
            return super().evaluate_batch(estimator, val_batch, batch_axis)

    reference = probes.estimator(mx)
    processor = Counting()
    est = Estimator(reference.net, reference.loss, trainer=reference.trainer,
                    context=mx.cpu(), batch_processor=processor)
    calls = []

    def eval_fn(val_data, batch_axis, event_handlers):
        calls.append((batch_axis, event_handlers))
        est.evaluate(val_data, batch_axis=batch_axis, event_handlers=event_handlers)

    val = probes.data(mx, n=8)                                    # 2 batches
    every_three = event_handler.ValidationHandler(val, eval_fn, epoch_period=None,
                                                batch_period=3)
    est.fit(probes.data(mx), epochs=2, event_handlers=[every_three])   # 8 batches
    assert processor.fits == 8 and len(calls) == 2 and processor.evals == 4
    # an evaluation pass leaves the validation metric at the mean L2 loss over val's samples
    est.evaluate(val)
    name, value = est.val_metrics[0].get()
    x = np.concatenate([b[0].asnumpy() for b in val]).astype(np.float64)
    y = np.concatenate([b[1].asnumpy() for b in val]).astype(np.float64)
    pred = x @ est.net.weight.data().asnumpy().T + est.net.bias.data().asnumpy()
    assert name == 'validation l2loss'
    np.testing.assert_allclose(value, np.mean(0.5 * (pred - y) ** 2), rtol=1e-5)
    each_epoch = event_handler.ValidationHandler(val, eval_fn)
    est.fit(probes.data(mx), batches=9, event_handlers=[each_epoch])  # ends in epoch 3
    assert len(calls) == 2 + 3
