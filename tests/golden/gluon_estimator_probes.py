"""Gluon Estimator runs under MXNet 1.9.1, for ``tests/gluon/test_gluon_estimator_api.py``.

``run(mx, model_dir)`` trains a small linear model (Dense(1) on 3 inputs, fixed data, fixed
initial weights, SGD) with ``Estimator.fit`` three times: 3 epochs with validation, a
LoggingHandler every 2 batches and a CheckpointHandler that keeps the best and the newest 2
checkpoints; 5 epochs resuming from those checkpoints; and a run stopped early by an
EarlyStoppingHandler. It returns the log lines (times replaced by ``<t>``, ``model_dir`` by
``<dir>``), the training loss after each epoch, the checkpoint files after each run and the
early-stopping counters. The test runs the same function under symgraph and compares.

Write the data with an interpreter that has MXNet 1.9.1::

    MXNET_PYTHON=/path/to/mxnet/python python tests/golden/gluon_estimator_probes.py

(or pass the interpreter as the first argument; run directly with that interpreter, it
writes the file itself). Output: ``tests/golden/data/gluon_estimator/runs.json``.
"""
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, 'data', 'gluon_estimator', 'runs.json')


def data(mx, n=16, batch_size=4):
    """A DataLoader of ``y = x . (1, -2, 0.5) + 0.3`` on fixed inputs, in order."""
    x = (np.sin(np.arange(n * 3, dtype=np.float64) * 0.37) * 1.5).reshape(n, 3)
    y = (x @ np.array([1.0, -2.0, 0.5]) + 0.3).reshape(n, 1)
    dataset = mx.gluon.data.ArrayDataset(mx.nd.array(x.astype(np.float32)),
                                         mx.nd.array(y.astype(np.float32)))
    return mx.gluon.data.DataLoader(dataset, batch_size=batch_size)


def estimator(mx, lr=0.05, context=None):
    """A hybridized Dense(1) with weights 0.1 and bias 0, its SGD trainer and an Estimator
    with the default metrics (training loss) on ``context`` (default: the CPU)."""
    context = context or mx.cpu()
    net = mx.gluon.nn.Dense(1, in_units=3)
    net.initialize(mx.init.Constant(0.1), ctx=context)
    net.hybridize()
    trainer = mx.gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': lr})
    est = mx.gluon.contrib.estimator.Estimator(net, loss=mx.gluon.loss.L2Loss(),
                                               trainer=trainer, context=context)
    return est


class _Lines(logging.Handler):
    """Collects the formatted messages of a logger."""

    def __init__(self):
        super().__init__()
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def normalise(line, model_dir):
    """A log line without its timings and temporary folder."""
    line = line.replace(model_dir, '<dir>')
    line = re.sub(r'\d+\.\d+s\b', '<t>s', line)
    return re.sub(r'total \d+s', 'total <t>s', line)


def run(mx, model_dir):
    """The three runs described in the module docstring, as a JSON-able dict."""
    handlers = mx.gluon.contrib.estimator.event_handler
    record = {}

    class LossTrace(handlers.EpochEnd):
        """The first training metric after each epoch (called after the MetricHandler)."""

        def __init__(self):
            self.values = []

        def epoch_end(self, est, *args, **kwargs):
            self.values.append(float(est.train_metrics[0].get()[1]))

    def fit(est, epochs, extra):
        lines = _Lines()
        est.logger.addHandler(lines)
        trace = LossTrace()
        est.fit(data(mx), val_data=data(mx, n=8), epochs=epochs,
                event_handlers=extra + [trace])
        est.logger.removeHandler(lines)
        return [normalise(line, model_dir) for line in lines.lines], trace.values

    est = estimator(mx)
    logging_handler = handlers.LoggingHandler(log_interval=2, metrics=est.train_metrics)
    checkpoint = handlers.CheckpointHandler(model_dir, model_prefix='tiny',
                                            monitor=est.val_metrics[0], save_best=True,
                                            mode='min', max_checkpoints=2)
    lines, losses = fit(est, 3, [logging_handler, checkpoint])
    record['fit'] = {'lines': lines, 'losses': losses, 'files': sorted(os.listdir(model_dir)),
                     'metric_names': [m.name for m in est.train_metrics + est.val_metrics]}

    est = estimator(mx)
    resume = handlers.CheckpointHandler(model_dir, model_prefix='tiny', max_checkpoints=2,
                                        resume_from_checkpoint=True)
    lines, losses = fit(est, 5, [resume])
    record['resume'] = {'lines': lines, 'losses': losses, 'max_epoch': est.max_epoch,
                        'files': sorted(os.listdir(model_dir))}

    est = estimator(mx)
    stop = handlers.EarlyStoppingHandler(monitor=est.train_metrics[0], patience=1, mode='max')
    lines, losses = fit(est, 6, [stop])
    record['early_stopping'] = {'lines': lines, 'losses': losses,
                                'current_epoch': stop.current_epoch,
                                'stopped_epoch': stop.stopped_epoch}
    return record


def main():
    try:
        import mxnet as mx
    except ImportError:
        python = os.environ.get('MXNET_PYTHON') or (sys.argv[1] if len(sys.argv) > 1 else None)
        if not python:
            sys.exit('pass an interpreter with MXNet 1.9.1 (MXNET_PYTHON or first argument)')
        subprocess.check_call([python, os.path.abspath(__file__)])
        return
    model_dir = tempfile.mkdtemp()
    try:
        record = run(mx, model_dir)
    finally:
        shutil.rmtree(model_dir)
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, 'w') as f:
        json.dump(record, f, indent=1)
        f.write('\n')


if __name__ == '__main__':
    main()
