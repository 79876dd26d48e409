"""Event handlers of the Gluon Estimator: the mixins naming the six events, and the handlers
that update metrics, validate, log, save checkpoints, stop early and apply gradients.

After MXNet 1.9.1's ``gluon/contrib/estimator/event_handler.py``. A handler takes part in an
event by inheriting its mixin (``TrainBegin``, ``EpochEnd`` ...); the Estimator calls the
handlers of each event in ascending ``priority`` (default 0). ``batch_end`` and ``epoch_end``
return True to stop training. Three slips of MXNet's are not repeated (see
docs/differences.md): ``mode='auto'`` picks 'max' only for accuracy and F1 metrics (MXNet's
test ``'acc' or 'f1' in name`` is always true), the warnings about a metric that was never
updated are formatted, and CheckpointHandler's verbose lines name the previous best and the
epoch.
"""
import os
import time
import warnings

import numpy as np

from ....base import ArgumentError, MissingFileError
from ....metric import CompositeEvalMetric, EvalMetric
from ....metric import Loss as metric_loss
from .utils import EstimatorUsageError, _check_metrics

__all__ = ['TrainBegin', 'TrainEnd', 'EpochBegin', 'EpochEnd', 'BatchBegin', 'BatchEnd',
           'StoppingHandler', 'MetricHandler', 'ValidationHandler',
           'LoggingHandler', 'CheckpointHandler', 'EarlyStoppingHandler', 'GradientUpdateHandler']


class CheckpointNotFoundError(MissingFileError, AssertionError):
    """A checkpoint to resume from lacks its .params or .states file (MXNet asserts)."""


class EventHandler(object):
    """Base of every event handler (what ``event_handlers=`` accepts)."""


def _check_event_handlers(handlers):
    """``handlers`` (None, an EventHandler or a list of them) as a new list."""
    if isinstance(handlers, EventHandler):
        return [handlers]
    handlers = list(handlers or [])
    if not all(isinstance(handler, EventHandler) for handler in handlers):
        raise ArgumentError("handlers must be an EventHandler or a list of EventHandler, "
                            "got: {}".format(handlers))
    return handlers


class TrainBegin(EventHandler):
    """Called once before the first epoch."""

    def train_begin(self, estimator, *args, **kwargs):
        pass


class TrainEnd(EventHandler):
    """Called once after training stopped."""

    def train_end(self, estimator, *args, **kwargs):
        pass


class EpochBegin(EventHandler):
    """Called before each epoch (and before an evaluation pass)."""

    def epoch_begin(self, estimator, *args, **kwargs):
        pass


class EpochEnd(EventHandler):
    """Called after each epoch (and after an evaluation pass); True stops training."""

    def epoch_end(self, estimator, *args, **kwargs):
        return False


class BatchBegin(EventHandler):
    """Called before each batch with ``batch=``."""

    def batch_begin(self, estimator, *args, **kwargs):
        pass


class BatchEnd(EventHandler):
    """Called after each batch with ``batch``, ``pred``, ``label`` and ``loss``; True stops
    the epoch (and training, when a handler's epoch_end then says so)."""

    def batch_end(self, estimator, *args, **kwargs):
        return False


def _monitor_op(monitor, mode, who):
    """np.less or np.greater: how ``monitor``'s value improves under ``mode``.

    'auto' takes 'max' for accuracy and F1 metrics and 'min' otherwise, with MXNet's
    warning naming the choice; an unknown mode warns and falls back to 'auto'.
    """
    if mode not in ('auto', 'min', 'max'):
        warnings.warn('%s mode %s is unknown, '
                      'fallback to auto mode. CheckpointHandler will use'
                      'max mode for f1 and accuracy metric comparison and '
                      'use min mode other wise' % (who, mode), RuntimeWarning)
        mode = 'auto'
    if mode == 'min':
        return np.less
    if mode == 'max':
        return np.greater
    name = monitor.get()[0]
    if 'acc' in name.lower() or 'f1' in name.lower():
        warnings.warn("`greater` operator will be used to determine if {} has improved. "
                      "Please specify `mode='min'` to use the `less` operator. "
                      "Specify `mode='max' to disable this warning.`".format(name))
        return np.greater
    warnings.warn("`less` operator will be used to determine if {} has improved. "
                  "Please specify `mode='max'` to use the `greater` operator. "
                  "Specify `mode='min' to disable this warning.`".format(name))
    return np.less


class StoppingHandler(TrainBegin, BatchEnd, EpochEnd):
    """Stop training once the maximum number of batches or epochs is reached.

    The Estimator always adds one; it reads ``estimator.max_epoch`` and
    ``estimator.max_batch`` at train begin.

    Parameters
    ----------
    max_epoch : int, default None
        Number of epochs to train.
    max_batch : int, default None
        Number of batches to train.
    """

    def __init__(self, max_epoch=None, max_batch=None):
        self.max_epoch = max_epoch
        self.max_batch = max_batch
        self.current_batch = 0
        self.current_epoch = 0
        self.stop_training = False

    def train_begin(self, estimator, *args, **kwargs):
        self.max_epoch = estimator.max_epoch
        self.max_batch = estimator.max_batch
        self.current_batch = 0
        self.current_epoch = 0

    def batch_end(self, estimator, *args, **kwargs):
        self.current_batch += 1
        if self.current_batch == self.max_batch:
            self.stop_training = True
        return self.stop_training

    def epoch_end(self, estimator, *args, **kwargs):
        self.current_epoch += 1
        if self.current_epoch == self.max_epoch:
            self.stop_training = True
        return self.stop_training


class MetricHandler(EpochBegin, BatchEnd):
    """Reset the metrics at epoch begin and update them at batch end.

    A :class:`mx.metric.Loss` is updated with the batch's loss values, every other metric
    with its labels and predictions.

    Parameters
    ----------
    metrics : list of EvalMetric
        The metrics to update.
    priority : scalar, default -1000
        Order among the handlers (ascending): the metrics must be up to date before the
        handlers that read them.
    """

    def __init__(self, metrics, priority=-1000):
        self.metrics = _check_metrics(metrics)
        self.priority = priority

    def epoch_begin(self, estimator, *args, **kwargs):
        for metric in self.metrics:
            metric.reset()

    def batch_end(self, estimator, *args, **kwargs):
        pred = kwargs['pred']
        label = kwargs['label']
        loss = kwargs['loss']
        for metric in self.metrics:
            if isinstance(metric, metric_loss):
                metric.update(0, loss)
            else:
                metric.update(label, pred)


class ValidationHandler(TrainBegin, BatchEnd, EpochEnd):
    """Evaluate the model on validation data every so many epochs or batches.

    Parameters
    ----------
    val_data : DataLoader
        The validation data.
    eval_fn : callable
        Called as ``eval_fn(val_data=, batch_axis=, event_handlers=)``, typically
        ``estimator.evaluate``.
    epoch_period : int, default 1
        Validate every ``epoch_period`` epochs (None or 0: never at epoch end).
    batch_period : int, default None
        Validate every ``batch_period`` batches (None: never at batch end).
    priority : scalar, default -1000
        Order among the handlers: validation metrics are ready before the others run.
    event_handlers : EventHandler or list of EventHandler
        Handlers passed on to ``eval_fn``.
    """

    def __init__(self, val_data, eval_fn, epoch_period=1, batch_period=None, priority=-1000,
                 event_handlers=None):
        self.val_data = val_data
        self.eval_fn = eval_fn
        self.epoch_period = epoch_period
        self.batch_period = batch_period
        self.current_batch = 0
        self.current_epoch = 0
        self.priority = priority
        self.event_handlers = event_handlers

    def train_begin(self, estimator, *args, **kwargs):
        self.current_batch = 0
        self.current_epoch = 0

    def batch_end(self, estimator, *args, **kwargs):
        self.current_batch += 1
        if self.batch_period and self.current_batch % self.batch_period == 0:
            self.eval_fn(val_data=self.val_data, batch_axis=estimator.batch_axis,
                         event_handlers=self.event_handlers)

    def epoch_end(self, estimator, *args, **kwargs):
        self.current_epoch += 1
        if self.epoch_period and self.current_epoch % self.epoch_period == 0:
            self.eval_fn(val_data=self.val_data, batch_axis=estimator.batch_axis,
                         event_handlers=self.event_handlers)


class LoggingHandler(TrainBegin, TrainEnd, EpochBegin, EpochEnd, BatchBegin, BatchEnd):
    """Log the optimizer, progress and metric values through ``estimator.logger``, in
    MXNet's words.

    Parameters
    ----------
    log_interval : int or 'epoch', default 'epoch'
        'epoch': log at epoch begin and end; an integer k: also log every k batches.
    metrics : list of EvalMetric
        The metrics to log.
    priority : scalar, default inf
        Order among the handlers: last, so that every state it reports is updated.
    """

    def __init__(self, log_interval='epoch', metrics=None, priority=np.inf):
        super().__init__()
        # bool is an int, as in MXNet's check
        if not isinstance(log_interval, int) and log_interval != 'epoch':
            raise ArgumentError("log_interval must be either an integer or string 'epoch'")
        self.metrics = _check_metrics(metrics)
        self.batch_index = 0
        self.current_epoch = 0
        self.processed_samples = 0
        self.priority = priority
        self.log_interval = log_interval
        self.log_interval_time = 0
        self.train_start = self.batch_start = self.epoch_start = None

    def _values_text(self):
        return ''.join('%s: %.4f, ' % metric.get() for metric in self.metrics)

    def train_begin(self, estimator, *args, **kwargs):
        self.train_start = time.time()
        trainer = estimator.trainer
        optimizer = trainer.optimizer.__class__.__name__
        estimator.logger.info("Training begin: using optimizer %s "
                              "with current learning rate %.4f ",
                              optimizer, trainer.learning_rate)
        if estimator.max_epoch:
            estimator.logger.info("Train for %d epochs.", estimator.max_epoch)
        else:
            estimator.logger.info("Train for %d batches.", estimator.max_batch)
        self.current_epoch = 0
        self.batch_index = 0
        self.processed_samples = 0
        self.log_interval_time = 0

    def train_end(self, estimator, *args, **kwargs):
        train_time = time.time() - self.train_start
        msg = 'Train finished using total %ds with %d epochs. ' % (train_time, self.current_epoch)
        estimator.logger.info((msg + self._values_text()).rstrip(', '))

    def batch_begin(self, estimator, *args, **kwargs):
        if isinstance(self.log_interval, int):
            self.batch_start = time.time()

    def batch_end(self, estimator, *args, **kwargs):
        if isinstance(self.log_interval, int):
            batch_time = time.time() - self.batch_start
            msg = '[Epoch %d][Batch %d]' % (self.current_epoch, self.batch_index)
            # MXNet counts samples along axis 0 of the data, whatever the batch axis
            self.processed_samples += kwargs['batch'][0].shape[0]
            msg += '[Samples %s] ' % (self.processed_samples)
            self.log_interval_time += batch_time
            if self.batch_index % self.log_interval == 0:
                msg += 'time/interval: %.3fs ' % self.log_interval_time
                self.log_interval_time = 0
                estimator.logger.info((msg + self._values_text()).rstrip(', '))
        self.batch_index += 1

    def epoch_begin(self, estimator, *args, **kwargs):
        # the Estimator prefixes its metrics' names with 'training' or 'validation': an
        # evaluation pass logs 'Validation Begin' instead of an epoch
        is_training = any('training' in metric.name for metric in self.metrics)
        self.epoch_start = time.time()
        if is_training:
            estimator.logger.info("[Epoch %d] Begin, current learning rate: %.4f",
                                  self.current_epoch, estimator.trainer.learning_rate)
        else:
            estimator.logger.info("Validation Begin")

    def epoch_end(self, estimator, *args, **kwargs):
        epoch_time = time.time() - self.epoch_start
        msg = '[Epoch %d] Finished in %.3fs, ' % (self.current_epoch, epoch_time)
        estimator.logger.info((msg + self._values_text()).rstrip(', '))
        self.current_epoch += 1
        self.batch_index = 0


class CheckpointHandler(TrainBegin, BatchEnd, EpochEnd):
    """Save the model's parameters and the trainer's states every so many epochs or batches.

    Files go to ``model_dir`` as ``{prefix}-epoch{E}batch{B}.params`` and ``.states``
    (``E`` the 0-based epoch, ``B`` the number of batches trained so far), the best as
    ``{prefix}-best.params``/``.states``, and a hybridized net's symbol as
    ``{prefix}-symbol.json`` after the first batch.

    Parameters
    ----------
    model_dir : str
        Folder of the checkpoint files (created if missing).
    model_prefix : str, default 'model'
        Prefix of every file name.
    monitor : EvalMetric, default None
        The metric that decides whether the model improved (for ``save_best``).
    verbose : int, default 0
        1: log every save.
    save_best : bool, default False
        Also keep the parameters with the best ``monitor`` value (``monitor`` required).
    mode : {'auto', 'min', 'max'}, default 'auto'
        How ``monitor`` improves; 'auto': 'max' for accuracy and F1, 'min' otherwise.
    epoch_period : int, default 1
        Save every ``epoch_period`` epochs (None: not at epoch end).
    batch_period : int, default None
        Save every ``batch_period`` batches (None: not at batch end).
    max_checkpoints : int, default 5
        Keep the newest ``max_checkpoints`` checkpoints, delete older ones (the best is not
        counted).
    resume_from_checkpoint : bool, default False
        Load the newest checkpoint in ``model_dir`` at train begin and train only the
        remaining epochs or batches.
    """

    def __init__(self, model_dir, model_prefix='model', monitor=None, verbose=0,
                 save_best=False, mode='auto', epoch_period=1, batch_period=None,
                 max_checkpoints=5, resume_from_checkpoint=False):
        self.monitor = monitor
        self.verbose = verbose
        if not os.path.exists(model_dir):
            os.makedirs(model_dir)
        self.model_dir = model_dir
        self.model_prefix = model_prefix
        self.save_best = save_best
        if self.save_best and not isinstance(self.monitor, EvalMetric):
            raise ArgumentError("To save best model only, please provide one of the metric "
                                "objects from estimator.train_metrics and "
                                "estimator.val_metrics as monitor.")
        self.epoch_period = epoch_period
        self.batch_period = batch_period
        self.current_batch = 0
        self.current_epoch = 0
        self.max_checkpoints = max_checkpoints
        self.resume_from_checkpoint = resume_from_checkpoint
        self.saved_checkpoints = []
        self.trained_epoch = self.trained_batch = -1
        self.monitor_op = None
        self.best = None
        if self.save_best:
            self.monitor_op = _monitor_op(monitor, mode, 'ModelCheckpoint')
            self.best = np.inf if self.monitor_op is np.less else -np.inf

    def train_begin(self, estimator, *args, **kwargs):
        self.current_epoch = 0
        self.current_batch = 0
        if self.save_best:
            self.best = np.inf if self.monitor_op is np.less else -np.inf
        if self.resume_from_checkpoint:
            error_msg = "To use resume from checkpoint, you must only specify " \
                        "the same type of period you used for training." \
                        "For example, if you are training based on number of epochs," \
                        "you must save only based on epochs, and set batch_period to None."
            if estimator.max_batch and (not self.batch_period or self.epoch_period):
                raise EstimatorUsageError(error_msg)
            if estimator.max_epoch and (not self.epoch_period or self.batch_period):
                raise EstimatorUsageError(error_msg)
            self._resume_from_checkpoint(estimator)

    def batch_end(self, estimator, *args, **kwargs):
        if self.current_batch == 0:
            self._save_symbol(estimator)
        if self.batch_period and (self.current_batch + 1) % self.batch_period == 0:
            self._save_checkpoint(estimator)
        self.current_batch += 1

    def epoch_end(self, estimator, *args, **kwargs):
        if self.epoch_period and (self.current_epoch + 1) % self.epoch_period == 0:
            self._save_checkpoint(estimator)
        self.current_epoch += 1

    def _save_checkpoint(self, estimator):
        if self.resume_from_checkpoint:
            # numbering continues from the checkpoint resumed
            save_epoch_number = self.current_epoch + self.trained_epoch + 1
            if estimator.max_epoch:
                # saved at epoch end: current_batch already counts this epoch's last batch
                save_batch_number = self.current_batch + self.trained_batch
            else:
                save_batch_number = self.current_batch + self.trained_batch + 1
        else:
            save_epoch_number = self.current_epoch
            save_batch_number = self.current_batch
        prefix = "%s-epoch%dbatch%d" % (self.model_prefix, save_epoch_number, save_batch_number)
        self._save_params_and_trainer(estimator, prefix)
        if self.verbose > 0:
            estimator.logger.info('[Epoch %d] CheckpointHandler: trained total %d batches, '
                                  'saving model at %s with prefix: %s',
                                  self.current_epoch, self.current_batch + 1, self.model_dir,
                                  prefix)
        if self.save_best:
            self._save_if_best(estimator)

    def _save_if_best(self, estimator):
        monitor_name, monitor_value = self.monitor.get()
        if np.isnan(monitor_value):
            warnings.warn(RuntimeWarning(
                'Skipping save best because %s is not updated, make sure you pass one of the '
                'metric objects estimator.train_metrics and estimator.val_metrics as monitor'
                % monitor_name))
        elif self.monitor_op(monitor_value, self.best):
            prefix = self.model_prefix + '-best'
            self._save_params_and_trainer(estimator, prefix)
            previous, self.best = self.best, monitor_value
            if self.verbose > 0:
                estimator.logger.info('[Epoch %d] CheckpointHandler: '
                                      '%s improved from %0.5f to %0.5f, '
                                      'updating best model at %s with prefix: %s',
                                      self.current_epoch, monitor_name, previous,
                                      monitor_value, self.model_dir, prefix)
        elif self.verbose > 0:
            estimator.logger.info('[Epoch %d] CheckpointHandler: '
                                  '%s did not improve from %0.5f, '
                                  'skipping updating best model',
                                  self.current_epoch, monitor_name, self.best)

    def _save_symbol(self, estimator):
        symbol_file = os.path.join(self.model_dir, self.model_prefix + '-symbol.json')
        cached = getattr(estimator.net, '_cached_graph', None)
        if cached:
            cached[1].save(symbol_file)
        else:
            estimator.logger.info(
                "Model architecture(symbol file) is not saved, please use HybridBlock "
                "to construct your model, and call net.hybridize() before passing to "
                "Estimator in order to save model architecture as %s.",
                symbol_file)

    def _save_params_and_trainer(self, estimator, file_prefix):
        param_file = os.path.join(self.model_dir, file_prefix + '.params')
        trainer_file = os.path.join(self.model_dir, file_prefix + '.states')
        estimator.net.save_parameters(param_file)
        estimator.trainer.save_states(trainer_file)
        # only numbered checkpoints count towards max_checkpoints
        if 'best' not in file_prefix:
            self.saved_checkpoints.append(file_prefix)
        if len(self.saved_checkpoints) > self.max_checkpoints:
            prefix = self.saved_checkpoints.pop(0)
            for fname in os.listdir(self.model_dir):
                if fname.startswith(prefix):
                    os.remove(os.path.join(self.model_dir, fname))

    def _resume_from_checkpoint(self, estimator):
        prefix = self.model_prefix + '-epoch'
        self.trained_epoch = self._find_max_iteration(
            dir=self.model_dir, prefix=prefix, start='epoch', end='batch',
            saved_checkpoints=self.saved_checkpoints)
        prefix += str(self.trained_epoch)
        self.trained_batch = self._find_max_iteration(
            dir=self.model_dir, prefix=prefix, start='batch', end='.params')

        if self.trained_epoch == -1:
            msg = "CheckpointHandler: No checkpoint found, training from scratch for "
            if estimator.max_batch:
                msg += "%d batches" % estimator.max_batch
            else:
                msg += "%d epochs" % estimator.max_epoch
            estimator.logger.info(msg)
            return
        msg = "CheckpointHandler: Checkpoint resumed from epoch %d batch %d, " \
              "continue to train for " % (self.trained_epoch, self.trained_batch)
        # train only what remains of the epochs or batches asked for
        if estimator.max_epoch:
            if self.trained_epoch >= estimator.max_epoch - 1:
                raise ArgumentError(
                    "Found checkpoint with maximum number of epoch %d reached, please "
                    "specify resume_from_checkpoint=False (default value) if you wan to "
                    "train from scratch." % estimator.max_epoch)
            estimator.max_epoch = estimator.max_epoch - self.trained_epoch - 1
            msg += "%d epochs " % estimator.max_epoch
        if estimator.max_batch:
            if self.trained_batch >= estimator.max_batch - 1:
                raise ArgumentError(
                    "Found checkpoint with maximum number of batch %d reached, please "
                    "specify resume_from_checkpoint=False (default value) if you wan to "
                    "train from scratch." % self.trained_batch)
            estimator.max_batch = estimator.max_batch - self.trained_batch - 1
            msg += "%d batches " % estimator.max_batch
        stem = "%s-epoch%dbatch%d" % (self.model_prefix, self.trained_epoch, self.trained_batch)
        param_file = os.path.join(self.model_dir, stem + '.params')
        trainer_file = os.path.join(self.model_dir, stem + '.states')
        for fname in (param_file, trainer_file):
            if not os.path.exists(fname):
                raise CheckpointNotFoundError(
                    "Failed to load checkpoint, %s does not exist" % fname)
        estimator.net.load_parameters(param_file, ctx=estimator.context)
        estimator.trainer.load_states(trainer_file)
        estimator.logger.warning(msg)

    def _find_max_iteration(self, dir, prefix, start, end,  # pylint: disable=redefined-builtin
                            saved_checkpoints=None):
        """The largest number between ``start`` and ``end`` in the names of the .params
        files in ``dir`` that begin with ``prefix`` (-1 if none); their stems are appended
        to ``saved_checkpoints`` when it is given and not empty (as MXNet: an empty list
        is not filled)."""
        error_msg = "Error parsing checkpoint file, please check your " \
                    "checkpoints have the format: " \
                    "{model_name}-epoch{epoch_number}batch{batch_number}.params, " \
                    "there should also be a .states file for each .params file "
        max_iter = -1
        for fname in os.listdir(dir):
            if fname.startswith(prefix) and '.params' in fname:
                if saved_checkpoints:
                    saved_checkpoints.append(fname[:fname.find('.params')])
                try:
                    iteration = int(fname[fname.find(start) + len(start): fname.find(end)])
                except ValueError:
                    raise ArgumentError(error_msg) from None
                max_iter = max(max_iter, iteration)
        return max_iter


class EarlyStoppingHandler(TrainBegin, EpochEnd, TrainEnd):
    """Stop training when the monitored metric stops improving.

    Parameters
    ----------
    monitor : EvalMetric
        The metric to watch (one of ``estimator.train_metrics`` / ``val_metrics``; not a
        CompositeEvalMetric).
    min_delta : float, default 0
        Smallest change that counts as an improvement.
    patience : int, default 0
        Epochs without improvement to wait before stopping.
    mode : {'auto', 'min', 'max'}, default 'auto'
        How ``monitor`` improves; 'auto': 'max' for accuracy and F1, 'min' otherwise.
    baseline : float, default None
        Value to improve on at the start (default: +-inf).
    """

    def __init__(self, monitor, min_delta=0, patience=0, mode='auto', baseline=None):
        super().__init__()
        if not isinstance(monitor, EvalMetric):
            raise ArgumentError(
                "Please provide one of the metric objects from estimator.train_metrics and "
                "estimator.val_metrics as monitor.")
        if isinstance(monitor, CompositeEvalMetric):
            raise ArgumentError("CompositeEvalMetric is not supported for "
                                "EarlyStoppingHandler, please specify a simple metric instead.")
        self.monitor = monitor
        self.baseline = baseline
        self.patience = patience
        self.wait = 0
        self.stopped_epoch = 0
        self.current_epoch = 0
        self.stop_training = False
        self.best = None
        self.monitor_op = _monitor_op(monitor, mode, 'EarlyStopping')
        # compare value - min_delta with the best: the delta is against the improvement
        self.min_delta = min_delta if self.monitor_op is np.greater else -min_delta

    def train_begin(self, estimator, *args, **kwargs):
        self.wait = 0
        self.stopped_epoch = 0
        self.current_epoch = 0
        self.stop_training = False
        if self.baseline is not None:
            self.best = self.baseline
        else:
            self.best = np.inf if self.monitor_op is np.less else -np.inf

    def epoch_end(self, estimator, *args, **kwargs):
        monitor_name, monitor_value = self.monitor.get()
        if np.isnan(monitor_value):
            warnings.warn(RuntimeWarning(
                '%s is not updated, make sure you pass one of the metric objects from '
                'estimator.train_metrics and estimator.val_metrics as monitor.'
                % monitor_name))
        elif self.monitor_op(monitor_value - self.min_delta, self.best):
            self.best = monitor_value
            self.wait = 0
        else:
            self.wait += 1
            if self.wait >= self.patience:
                self.stopped_epoch = self.current_epoch
                self.stop_training = True
        self.current_epoch += 1
        return self.stop_training

    def train_end(self, estimator, *args, **kwargs):
        if self.stopped_epoch > 0:
            # 'Hanlder' is MXNet's spelling in this log line
            estimator.logger.info('[Epoch %d] EarlyStoppingHanlder: '
                                  'early stopping due to %s not improving',
                                  self.stopped_epoch, self.monitor.get()[0])


class GradientUpdateHandler(BatchEnd):
    """Apply the gradients at batch end: ``estimator.trainer.step`` over the batch size (the
    summed first dimension of the losses).

    Parameters
    ----------
    priority : scalar, default -2000
        Order among the handlers: first, before the metrics are updated.
    """

    def __init__(self, priority=-2000):
        self.priority = priority

    def batch_end(self, estimator, *args, **kwargs):
        loss = kwargs['loss']
        if not isinstance(loss, list):
            loss = [loss]
        batch_size = sum(part.shape[0] for part in loss)
        estimator.trainer.step(batch_size)
