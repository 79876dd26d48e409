"""The Gluon Estimator: a training loop over a DataLoader whose steps are event handlers.

After MXNet 1.9.1's ``gluon/contrib/estimator/estimator.py``: the same arguments, default
metrics ('training '/'validation ' prefixes), default handlers (StoppingHandler,
GradientUpdateHandler, MetricHandler, ValidationHandler with validation data,
LoggingHandler), priority order, warnings and errors.
"""
import copy
import logging
import sys
import warnings

from ....base import ArgumentError
from ....context import Context, cpu, gpu, num_gpus
from ....metric import Loss as metric_loss
from ...data import DataLoader
from ...loss import Loss as gluon_loss
from ...trainer import Trainer
from ...utils import split_and_load
from .batch_processor import BatchProcessor
from .event_handler import (MetricHandler, ValidationHandler, LoggingHandler, StoppingHandler,
                            GradientUpdateHandler, TrainBegin, EpochBegin, BatchBegin,
                            BatchEnd, EpochEnd, TrainEnd, _check_event_handlers)
from .utils import (EstimatorUsageError, _check_metrics, _suggest_metric_for_loss,
                    _check_handler_metric_ref)

__all__ = ['Estimator']


class Estimator(object):
    """Train and evaluate a Gluon network with event handlers.

    Parameters
    ----------
    net : gluon.Block
        The model to train.
    loss : gluon.loss.Loss
        The loss to minimise.
    train_metrics : EvalMetric or list of EvalMetric, default None
        Training metrics; None: Accuracy for SoftmaxCrossEntropyLoss, and always an
        ``mx.metric.Loss`` named after the loss. Their names get the prefix 'training '.
    val_metrics : EvalMetric or list of EvalMetric, default None
        Validation metrics; None: copies of the training metrics. Names get 'validation '.
    initializer : Initializer, default None
        Initializes the net when not all of its parameters are initialized (a fully
        initialized net is left as is, with a warning if an initializer is given).
    trainer : gluon.Trainer, default None
        None: SGD with learning rate 0.001 over ``net.collect_params()`` (with a warning).
    context : Context or list of Context, default None
        Devices to train on; None: gpu(0) if a GPU is visible, else cpu().
    val_net : gluon.Block, default None
        The model used for validation (often sharing ``net``'s parameters); None: ``net``.
    val_loss : gluon.loss.Loss, default None
        The validation loss; None: ``loss``.
    batch_processor : BatchProcessor, default None
        Provides ``fit_batch`` and ``evaluate_batch``; None: a :class:`BatchProcessor`.

    Examples
    --------
    >>> est = Estimator(net, loss=gluon.loss.L2Loss(), trainer=trainer)   # doctest: +SKIP
    >>> est.fit(train_data=train_loader, val_data=val_loader, epochs=3)    # doctest: +SKIP
    """

    logger = None
    """The logging.Logger of this estimator and its handlers: a logger of its own (outside
    logging's hierarchy, as MXNet's), level INFO, writing to the ``sys.stdout`` of the time
    the Estimator was made. Add handlers to it to log elsewhere."""

    def __init__(self, net, loss, train_metrics=None, val_metrics=None, initializer=None,
                 trainer=None, context=None, val_net=None, val_loss=None,
                 batch_processor=None):
        self.net = net
        self.loss = self._check_loss(loss)
        self._train_metrics = _check_metrics(train_metrics)
        self._val_metrics = _check_metrics(val_metrics)
        self._add_default_training_metrics()
        self._add_validation_metrics()
        self.val_loss = self.loss
        if val_loss is not None:
            self.val_loss = self._check_loss(val_loss)
        self.val_net = self.net
        if val_net is not None:
            self.val_net = val_net

        # a Logger not registered with logging's manager: each estimator has its own
        # handlers and nothing propagates to the root logger (MXNet's choice)
        self.logger = logging.Logger(name='Estimator', level=logging.INFO)
        self.logger.addHandler(logging.StreamHandler(sys.stdout))

        self.context = self._check_context(context)
        self._initialize(initializer)
        self.trainer = self._check_trainer(trainer)
        self.batch_processor = self._check_batch_processor(batch_processor)
        self.max_epoch = None
        self.max_batch = None
        self.batch_axis = 0

    @staticmethod
    def _check_loss(loss):
        if not isinstance(loss, gluon_loss):
            raise ArgumentError("loss must be a Loss, "
                                "refer to gluon.loss.Loss:{}".format(loss))
        return loss

    @staticmethod
    def _check_context(context):
        gpus = num_gpus()
        available_gpus = [gpu(i) for i in range(gpus)]
        if not context:
            if gpus > 1:
                warnings.warn("You have multiple GPUs, gpu(0) will be used by default."
                              "To utilize all your GPUs, specify context as a list of gpus, "
                              "e.g. context=[mx.gpu(0), mx.gpu(1)] ")
            return [gpu(0)] if gpus > 0 else [cpu()]
        if isinstance(context, Context):
            context = [context]
        elif not (isinstance(context, list) and all(isinstance(c, Context) for c in context)):
            raise ArgumentError("context must be a Context or a list of Context, "
                                "for example mx.cpu() or [mx.gpu(0), mx.gpu(1)], "
                                "refer to mxnet.Context:{}".format(context))
        for ctx in context:
            if not (ctx in available_gpus or str(ctx).startswith('cpu')):
                raise EstimatorUsageError(
                    "%s is not available, please make sure your context is in one of: "
                    "mx.cpu(), %s" % (ctx, ", ".join(str(c) for c in available_gpus)))
        return context

    @staticmethod
    def _check_batch_processor(batch_processor):
        if batch_processor is None:
            return BatchProcessor()
        model_fit = getattr(batch_processor, 'fit_batch', None)
        model_evaluate = getattr(batch_processor, 'evaluate_batch', None)
        if not callable(model_fit) or not callable(model_evaluate):
            raise ArgumentError('Customized Batch Processor must contain fit_batch()'
                                ' and evaluate_batch() methods')
        return batch_processor

    def _initialize(self, initializer):
        if not self._is_initialized():
            # partly or not initialized: initialize what is missing (layers already
            # initialized keep their values; None means the default initializer)
            if initializer:
                self.net.initialize(init=initializer, ctx=self.context)
            else:
                self.net.initialize(ctx=self.context)
        elif initializer:
            warnings.warn("Network already fully initialized, skipping initialization. "
                          "You don't need to pass initializer if you already "
                          "initialized your net. "
                          "You can use net.initialize(init=your_initializer, force_reinit=True)"
                          "to force re-initialize.")

    def _check_trainer(self, trainer):
        if not trainer:
            warnings.warn("No trainer specified, default SGD optimizer "
                          "with learning rate 0.001 is used.")
            trainer = Trainer(self.net.collect_params(), 'sgd', {'learning_rate': 0.001})
        elif not isinstance(trainer, Trainer):
            raise ArgumentError("Trainer must be a Gluon Trainer instance, refer to "
                                "gluon.Trainer:{}".format(trainer))
        return trainer

    def _is_initialized(self):
        param_dict = self.net.collect_params()
        for param in param_dict:
            try:
                param_dict[param].list_ctx()
            except RuntimeError:
                return False
        return True

    def _get_data_and_label(self, batch, ctx, batch_axis=0):
        data = split_and_load(batch[0], ctx_list=ctx, batch_axis=batch_axis)
        label = split_and_load(batch[1], ctx_list=ctx, batch_axis=batch_axis)
        return data, label

    def _add_default_training_metrics(self):
        if not self._train_metrics:
            suggested_metric = _suggest_metric_for_loss(self.loss)
            if suggested_metric:
                self._train_metrics = [suggested_metric]
            loss_name = self.loss.name.rstrip('1234567890')
            self._train_metrics.append(metric_loss(loss_name))
        for metric in self._train_metrics:
            # the prefix tells handlers (LoggingHandler) training from validation metrics
            metric.name = 'training ' + metric.name

    def _add_validation_metrics(self):
        if not self._val_metrics:
            self._val_metrics = [copy.deepcopy(metric) for metric in self._train_metrics]
        for metric in self._val_metrics:
            if 'training' in metric.name:
                metric.name = metric.name.replace('training', 'validation')
            else:
                metric.name = 'validation ' + metric.name

    @property
    def train_metrics(self):
        """The training metrics (names prefixed 'training ')."""
        return self._train_metrics

    @property
    def val_metrics(self):
        """The validation metrics (names prefixed 'validation ')."""
        return self._val_metrics

    def evaluate(self, val_data, batch_axis=0, event_handlers=None):
        """Evaluate the model on validation data: ``batch_processor.evaluate_batch`` on each
        batch, between the epoch_begin / batch_begin / batch_end / epoch_end events.

        Parameters
        ----------
        val_data : DataLoader
            Validation data and labels.
        batch_axis : int, default 0
            Axis along which batches are split over the contexts.
        event_handlers : EventHandler or list of EventHandler, default None
            Handlers for the pass; a MetricHandler and a LoggingHandler over
            ``val_metrics`` are added unless given.
        """
        if not isinstance(val_data, DataLoader):
            raise ArgumentError("Estimator only support input as Gluon DataLoader. "
                                "Alternatively, you can transform your DataIter or any "
                                "NDArray into Gluon DataLoader. Refer to gluon.data.DataLoader")
        for metric in self.val_metrics:
            metric.reset()
        event_handlers = self._prepare_default_validation_handlers(event_handlers)
        _, epoch_begin, batch_begin, batch_end, epoch_end, _ = \
            self._categorize_handlers(event_handlers)

        for handler in epoch_begin:
            handler.epoch_begin(self)
        for batch in val_data:
            for handler in batch_begin:
                handler.batch_begin(self, batch=batch)
            _, label, pred, loss = self.batch_processor.evaluate_batch(self, batch, batch_axis)
            for handler in batch_end:
                handler.batch_end(self, batch=batch, pred=pred, label=label, loss=loss)
        for handler in epoch_end:
            handler.epoch_end(self)

    def fit(self, train_data, val_data=None, epochs=None, event_handlers=None, batches=None,
            batch_axis=0):
        """Train for ``epochs`` epochs or ``batches`` batches (exactly one of them).

        Each batch goes through ``batch_processor.fit_batch``; the event handlers do the
        rest (update the weights, the metrics, validate, log, stop).

        Parameters
        ----------
        train_data : DataLoader
            Training data and labels.
        val_data : DataLoader, default None
            Validation data; a ValidationHandler is added unless one is given.
        epochs : int, default None
            Number of epochs.
        event_handlers : EventHandler or list of EventHandler, default None
            Handlers besides the defaults (StoppingHandler, GradientUpdateHandler,
            MetricHandler, LoggingHandler), each default added unless one of its class is
            given.
        batches : int, default None
            Number of batches.
        batch_axis : int, default 0
            Axis along which batches are split over the contexts.
        """
        if not isinstance(train_data, DataLoader):
            raise ArgumentError("Estimator only support input as Gluon DataLoader. "
                                "Alternatively, you can transform your DataIter or any "
                                "NDArray into Gluon DataLoader. Refer to gluon.data.dataloader")
        if (not epochs) == (not batches):
            raise ArgumentError(
                "Fit only support exactly one type of iteration, "
                "train by number of epochs or number of batches."
                "Please specify one and only one of: epochs or batches.")

        self.max_epoch = epochs
        self.max_batch = batches
        self.batch_axis = batch_axis

        event_handlers = self._prepare_default_handlers(val_data, event_handlers)
        train_begin, epoch_begin, batch_begin, batch_end, epoch_end, train_end = \
            self._categorize_handlers(event_handlers)

        for handler in train_begin:
            handler.train_begin(self)
        while True:
            for handler in epoch_begin:
                handler.epoch_begin(self)
            for batch in train_data:
                for handler in batch_begin:
                    handler.batch_begin(self, batch=batch)
                _, label, pred, loss = self.batch_processor.fit_batch(self, batch, batch_axis)
                # every handler sees the batch end, then any of them may stop the epoch
                results = [handler.batch_end(self, batch=batch, pred=pred, label=label,
                                             loss=loss)
                           for handler in batch_end]
                if any(results):
                    break
            results = [handler.epoch_end(self) for handler in epoch_end]
            if any(results):
                break
        for handler in train_end:
            handler.train_end(self)

    def _prepare_default_handlers(self, val_data, event_handlers):
        """The user's handlers plus the missing defaults, sorted by priority."""
        event_handlers = _check_event_handlers(event_handlers)
        added_default_handlers = [StoppingHandler(self.max_epoch, self.max_batch)]
        if not any(isinstance(h, GradientUpdateHandler) for h in event_handlers):
            added_default_handlers.append(GradientUpdateHandler())
        if not any(isinstance(h, MetricHandler) for h in event_handlers):
            added_default_handlers.append(MetricHandler(metrics=self.train_metrics))
        if not any(isinstance(h, ValidationHandler) for h in event_handlers) and val_data:
            added_default_handlers.append(ValidationHandler(val_data=val_data,
                                                            eval_fn=self.evaluate))
        if not any(isinstance(h, LoggingHandler) for h in event_handlers):
            added_default_handlers.append(LoggingHandler(metrics=self.train_metrics))

        # user handlers mixed with defaults must share the estimator's metric objects, or
        # the defaults would update metrics the user's handlers never see
        mixing_handlers = event_handlers and added_default_handlers
        event_handlers.extend(added_default_handlers)
        if mixing_handlers:
            known_metrics = set(self.train_metrics + self.val_metrics)
            for handler in event_handlers:
                _check_handler_metric_ref(handler, known_metrics)
        event_handlers.sort(key=lambda handler: getattr(handler, 'priority', 0))
        return event_handlers

    def _prepare_default_validation_handlers(self, event_handlers):
        """The user's validation handlers plus a MetricHandler and a LoggingHandler over
        ``val_metrics`` where missing, sorted by priority."""
        event_handlers = _check_event_handlers(event_handlers)
        added_default_handlers = []
        if not any(isinstance(h, MetricHandler) for h in event_handlers):
            added_default_handlers.append(MetricHandler(metrics=self.val_metrics))
        if not any(isinstance(h, LoggingHandler) for h in event_handlers):
            added_default_handlers.append(LoggingHandler(metrics=self.val_metrics))
        mixing_handlers = event_handlers and added_default_handlers
        event_handlers.extend(added_default_handlers)
        if mixing_handlers:
            known_metrics = set(self.val_metrics)
            for handler in event_handlers:
                _check_handler_metric_ref(handler, known_metrics)
        event_handlers.sort(key=lambda handler: getattr(handler, 'priority', 0))
        return event_handlers

    @staticmethod
    def _categorize_handlers(event_handlers):
        """The handlers of each event (train_begin, epoch_begin, batch_begin, batch_end,
        epoch_end, train_end), by the mixins they inherit, so that no empty method is
        called."""
        kinds = (TrainBegin, EpochBegin, BatchBegin, BatchEnd, EpochEnd, TrainEnd)
        return tuple([h for h in event_handlers if isinstance(h, kind)] for kind in kinds)
