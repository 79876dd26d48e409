"""Argument checks shared by the Estimator and its event handlers.

After MXNet 1.9.1's ``gluon/contrib/estimator/utils.py``.
"""
from ....base import ArgumentError
from ....metric import Accuracy, EvalMetric, CompositeEvalMetric
from ...loss import SoftmaxCrossEntropyLoss


class EstimatorUsageError(ArgumentError, AssertionError):
    """A setting the Estimator cannot train with (an unavailable context, a checkpoint
    period that does not match the kind of iteration). MXNet checks these with ``assert``,
    so this is an AssertionError as well as a ValueError."""


def _check_metrics(metrics):
    """``metrics`` (None, an EvalMetric, a list of them, or a CompositeEvalMetric) as a flat
    list of EvalMetric; a composite contributes its members."""
    if isinstance(metrics, CompositeEvalMetric):
        metrics = [m for metric in metrics.metrics for m in _check_metrics(metric)]
    elif isinstance(metrics, EvalMetric):
        metrics = [metrics]
    else:
        metrics = metrics or []
        if not all(isinstance(metric, EvalMetric) for metric in metrics):
            raise ArgumentError("metrics must be a Metric or a list of Metric, "
                                "refer to mxnet.metric.EvalMetric: {}".format(metrics))
    return metrics


def _check_handler_metric_ref(handler, known_metrics):
    """Refuse a handler whose metric attributes hold a metric outside ``known_metrics``.

    As MXNet, only attributes whose name contains 'metric' are looked at (its keyword list
    ``['metric' or 'monitor']`` reduces to ``['metric']``), so a ``monitor`` is not checked;
    methods count too, so no handler method may have 'metric' in its name.
    """
    for attribute in dir(handler):
        if 'metric' not in attribute:
            continue
        reference = getattr(handler, attribute)
        if not reference:
            continue
        if isinstance(reference, list):
            for metric in reference:
                _check_metric_known(handler, metric, known_metrics)
        else:
            _check_metric_known(handler, reference, known_metrics)


def _check_metric_known(handler, metric, known_metrics):
    if metric not in known_metrics:
        raise ArgumentError(
            'Event handler {} refers to a metric instance {} outside of '
            'the known training and validation metrics. Please use the metrics from '
            'estimator.train_metrics and estimator.val_metrics '
            'instead.'.format(type(handler).__name__, metric))


def _suggest_metric_for_loss(loss):
    """The metric a loss implies when the user gives none: Accuracy for softmax
    cross-entropy, nothing otherwise."""
    if isinstance(loss, SoftmaxCrossEntropyLoss):
        return Accuracy()
    return None
