"""Regression and loss metrics (MXNet 1.9.1's): MAE, MSE, RMSE, CrossEntropy,
NegativeLogLikelihood, PearsonCorrelation, Loss, Torch, Caffe."""
from __future__ import annotations

import numpy

from .. import ndarray as nd
from ..ndarray import NDArray
from .base import EvalMetric, register, alias, check_label_shapes, _asnumpy, _asnd, _plain

__all__ = ['MAE', 'MSE', 'RMSE', 'CrossEntropy', 'NegativeLogLikelihood',
           'PearsonCorrelation', 'Loss', 'Torch', 'Caffe']


class _PerBatchRegression(EvalMetric):
    """MAE/MSE/RMSE: the mean of a per-batch value (one instance per (label, pred) pair);
    1-d labels and predictions are read as columns, as MXNet does."""

    def __init__(self, name, output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    @staticmethod
    def _value(label, pred):
        raise NotImplementedError()

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label = _asnumpy(label)
            pred = _asnumpy(pred)
            if len(label.shape) == 1:
                label = label.reshape(label.shape[0], 1)
            if len(pred.shape) == 1:
                pred = pred.reshape(pred.shape[0], 1)
            # float(): MXNet's NumPy 1.x promoted the float32 value to float64 here
            value = float(self._value(label, pred))
            self.sum_metric += value
            self.global_sum_metric += value
            self.num_inst += 1
            self.global_num_inst += 1


@register
class MAE(_PerBatchRegression):
    """Mean absolute error, averaged over batches.

    Parameters
    ----------
    name, output_names, label_names
        As :class:`EvalMetric`.

    Examples
    --------
    >>> import symgraph as mx
    >>> m = mx.metric.MAE()
    >>> m.update([mx.nd.array([2.5, 0.0, 2, 8])], [mx.nd.array([3, -0.5, 2, 7])])
    >>> m.get()
    ('mae', 0.5)
    """

    def __init__(self, name='mae', output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)

    @staticmethod
    def _value(label, pred):
        return numpy.abs(label - pred).mean()


@register
class MSE(_PerBatchRegression):
    """Mean squared error, averaged over batches.

    Parameters
    ----------
    name, output_names, label_names
        As :class:`EvalMetric`.
    """

    def __init__(self, name='mse', output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)

    @staticmethod
    def _value(label, pred):
        return ((label - pred) ** 2.0).mean()


@register
class RMSE(_PerBatchRegression):
    """Root mean squared error of each batch, averaged over batches.

    Parameters
    ----------
    name, output_names, label_names
        As :class:`EvalMetric`.
    """

    def __init__(self, name='rmse', output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)

    @staticmethod
    def _value(label, pred):
        return numpy.sqrt(((label - pred) ** 2.0).mean())


class _LogLikelihood(EvalMetric):
    """CrossEntropy/NegativeLogLikelihood: ``-sum(log(p[label] + eps))`` per sample."""

    def __init__(self, eps, name, output_names=None, label_names=None):
        super().__init__(name, eps=eps, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.eps = eps

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label = _asnumpy(label).ravel()
            pred = _asnumpy(pred)
            num_examples = pred.shape[0]
            if label.shape[0] != num_examples:
                raise ValueError('%s: %d labels for %d predictions (shapes %s and %s)'
                                 % (type(self).__name__, label.shape[0], num_examples,
                                    label.shape, pred.shape))
            prob = pred[numpy.arange(num_examples, dtype=numpy.int64), numpy.int64(label)]
            loss = float((-numpy.log(prob + self.eps)).sum())
            self.sum_metric += loss
            self.global_sum_metric += loss
            self.num_inst += num_examples
            self.global_num_inst += num_examples


@register
@alias('ce')
class CrossEntropy(_LogLikelihood):
    """Cross entropy of predicted class probabilities, averaged over samples.

    Parameters
    ----------
    eps : float, default 1e-12
        Added to the probabilities before the log.
    name, output_names, label_names
        As :class:`EvalMetric`.

    Examples
    --------
    >>> import symgraph as mx
    >>> ce = mx.metric.CrossEntropy()
    >>> ce.update([mx.nd.array([0, 1, 1])], [mx.nd.array([[0.3, 0.7], [0, 1.], [0.4, 0.6]])])
    >>> print('%.6f' % ce.get()[1])
    0.571599
    """

    def __init__(self, eps=1e-12, name='cross-entropy', output_names=None, label_names=None):
        super().__init__(eps, name, output_names=output_names, label_names=label_names)


@register
@alias('nll_loss')
class NegativeLogLikelihood(_LogLikelihood):
    """Negative log-likelihood of predicted class probabilities, averaged over samples.

    Parameters
    ----------
    eps : float, default 1e-12
        Added to the probabilities before the log.
    name, output_names, label_names
        As :class:`EvalMetric`.
    """

    def __init__(self, eps=1e-12, name='nll-loss', output_names=None, label_names=None):
        super().__init__(eps, name, output_names=output_names, label_names=label_names)


@register
@alias('pearsonr')
class PearsonCorrelation(EvalMetric):
    """Pearson correlation between predictions and labels.

    Parameters
    ----------
    name, output_names, label_names
        As :class:`EvalMetric`.
    average : {'macro', 'micro'}
        ``'macro'`` averages the per-batch correlations; ``'micro'`` computes one
        correlation over all batches (Welford's online variances, as MXNet).
    """

    def __init__(self, name='pearsonr', output_names=None, label_names=None,
                 average='macro'):
        if average not in ('macro', 'micro'):
            raise ValueError("average must be 'macro' or 'micro', not %r" % (average,))
        self.average = average
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        if self.average == 'micro':
            self.reset_micro()

    def reset_micro(self):
        """Reset the running moments of the 'micro' average."""
        self._sse_p = 0
        self._mean_p = 0
        self._sse_l = 0
        self._mean_l = 0
        self._pred_nums = 0
        self._label_nums = 0
        self._conv = 0

    def reset(self):
        self.num_inst = 0
        self.sum_metric = 0.0
        self.global_num_inst = 0
        self.global_sum_metric = 0.0
        if self.average == 'micro':
            self.reset_micro()

    @staticmethod
    def update_variance(new_values, *aggregate):
        """Welford's online update of ``(count, mean, m_2)`` by ``new_values``."""
        count, mean, m_2 = aggregate
        count += len(new_values)
        delta = new_values - mean
        mean += numpy.sum(delta / count)
        delta_2 = new_values - mean
        m_2 += numpy.sum(delta * delta_2)
        return count, mean, m_2

    def update_cov(self, label, pred):
        """Add the batch's co-moment about the current means."""
        self._conv = self._conv + numpy.sum((label - self._mean_l) * (pred - self._mean_p))

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label, pred = _asnumpy(label), _asnumpy(pred)
            check_label_shapes(label, pred, False, True)
            label = label.ravel().astype(numpy.float64)
            pred = pred.ravel().astype(numpy.float64)
            if self.average == 'macro':
                pearson_corr = numpy.corrcoef(pred, label)[0, 1]
                self.sum_metric += pearson_corr
                self.global_sum_metric += pearson_corr
                self.num_inst += 1
                self.global_num_inst += 1
            else:
                self.global_num_inst += 1
                self.num_inst += 1
                self._label_nums, self._mean_l, self._sse_l = \
                    self.update_variance(label, self._label_nums, self._mean_l, self._sse_l)
                self.update_cov(label, pred)
                self._pred_nums, self._mean_p, self._sse_p = \
                    self.update_variance(pred, self._pred_nums, self._mean_p, self._sse_p)

    def get(self):
        if self.num_inst == 0:
            return (self.name, float('nan'))
        if self.average == 'macro':
            return (self.name, _plain(self.sum_metric / self.num_inst))
        n = self._label_nums
        pearsonr = self._conv / ((n - 1) * numpy.sqrt(self._sse_p / (n - 1)) *
                                 numpy.sqrt(self._sse_l / (n - 1)))
        return (self.name, _plain(pearsonr))


@register
class Loss(EvalMetric):
    """The mean of the predictions themselves (for outputs that are losses).

    Parameters
    ----------
    name, output_names, label_names
        As :class:`EvalMetric`.
    """

    def __init__(self, name='loss', output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def update(self, _, preds):
        if isinstance(preds, (NDArray, numpy.ndarray)):
            preds = [preds]
        for pred in preds:
            pred = _asnd(pred)
            loss = float(nd.sum(pred).asscalar())
            self.sum_metric += loss
            self.global_sum_metric += loss
            self.num_inst += pred.size
            self.global_num_inst += pred.size


@register
class Torch(Loss):
    """Dummy metric for torch criterions (a :class:`Loss` named 'torch')."""

    def __init__(self, name='torch', output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)


@register
class Caffe(Loss):
    """Dummy metric for caffe criterions (a :class:`Loss` named 'caffe')."""

    def __init__(self, name='caffe', output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)
