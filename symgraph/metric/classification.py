"""Classification metrics (MXNet 1.9.1's): Accuracy, TopKAccuracy, F1, MCC, PCC, Perplexity."""
from __future__ import annotations

import math

import numpy

from .. import ndarray as nd
from .base import EvalMetric, register, alias, check_label_shapes, _asnumpy, _asnd

__all__ = ['Accuracy', 'TopKAccuracy', 'F1', 'MCC', 'PCC', 'Perplexity']


@register
@alias('acc')
class Accuracy(EvalMetric):
    """Classification accuracy: the fraction of predictions equal to the label.

    Parameters
    ----------
    axis : int, default 1
        The axis of the predictions that holds the classes (argmax is taken over it when
        predictions and labels differ in shape).
    name, output_names, label_names
        As :class:`EvalMetric`.

    Examples
    --------
    >>> import symgraph as mx
    >>> acc = mx.metric.Accuracy()
    >>> acc.update([mx.nd.array([0, 1, 1])], [mx.nd.array([[0.3, 0.7], [0, 1.], [0.4, 0.6]])])
    >>> name, value = acc.get()
    >>> print(name, value)
    accuracy 0.6666666666666666
    """

    def __init__(self, axis=1, name='accuracy', output_names=None, label_names=None):
        super().__init__(name, axis=axis, output_names=output_names,
                         label_names=label_names, has_global_stats=True)
        self.axis = axis

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred_label in zip(labels, preds):
            pred_label = _asnumpy(pred_label)
            label = _asnumpy(label)
            if pred_label.shape != label.shape:
                pred_label = numpy.argmax(pred_label, axis=self.axis)
            pred_label = pred_label.astype('int32').flat
            label = label.astype('int32').flat
            check_label_shapes(label, pred_label)
            num_correct = (pred_label == label).sum()
            self.sum_metric += num_correct
            self.global_sum_metric += num_correct
            self.num_inst += len(pred_label)
            self.global_num_inst += len(pred_label)


@register
@alias('top_k_accuracy', 'top_k_acc')
class TopKAccuracy(EvalMetric):
    """Top-k accuracy: a prediction counts when the label is among the k highest scores.

    Parameters
    ----------
    top_k : int
        How many of the highest scores count (must be > 1; use Accuracy for 1).
    name, output_names, label_names
        As :class:`EvalMetric`; the name gets ``_<top_k>`` appended.
    """

    def __init__(self, top_k=1, name='top_k_accuracy', output_names=None, label_names=None):
        super().__init__(name, top_k=top_k, output_names=output_names,
                         label_names=label_names, has_global_stats=True)
        self.top_k = top_k
        if not self.top_k > 1:
            raise ValueError('Please use Accuracy if top_k is no more than 1 (top_k=%r)'
                             % (top_k,))
        self.name += '_%d' % self.top_k

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred_label in zip(labels, preds):
            pred_label = _asnumpy(pred_label)
            if len(pred_label.shape) > 2:
                raise ValueError('Predictions should be no more than 2 dims, got shape %s'
                                 % (pred_label.shape,))
            pred_label = numpy.argpartition(pred_label.astype('float32'), -self.top_k)
            label = _asnumpy(label).astype('int32')
            check_label_shapes(label, pred_label)
            num_samples = pred_label.shape[0]
            num_dims = len(pred_label.shape)
            if num_dims == 1:
                # as MXNet: the 1-d case adds to the local sum only
                self.sum_metric += (pred_label.flat == label.flat).sum()
            elif num_dims == 2:
                num_classes = pred_label.shape[1]
                top_k = min(num_classes, self.top_k)
                for j in range(top_k):
                    num_correct = (pred_label[:, num_classes - 1 - j].flat == label.flat).sum()
                    self.sum_metric += num_correct
                    self.global_sum_metric += num_correct
            self.num_inst += num_samples
            self.global_num_inst += num_samples


class _BinaryClassificationMetrics(object):
    """True/false positive/negative counts, local and global, over mini-batches."""

    _FIELDS = ('true_positives', 'false_negatives', 'false_positives', 'true_negatives')

    def __init__(self):
        self.reset_stats()

    def update_binary_stats(self, label, pred):
        """Add the counts of one (label, pred) pair; pred holds two class scores per row."""
        pred = _asnumpy(pred)
        label = _asnumpy(label).astype('int32')
        pred_label = numpy.argmax(pred, axis=1)
        check_label_shapes(label, pred)
        if len(numpy.unique(label)) > 2:
            raise ValueError("%s currently only supports binary classification."
                             % self.__class__.__name__)
        pred_true = (pred_label == 1)
        pred_false = 1 - pred_true
        label_true = (label == 1)
        label_false = 1 - label_true
        counts = ((pred_true * label_true).sum(), (pred_false * label_true).sum(),
                  (pred_true * label_false).sum(), (pred_false * label_false).sum())
        for field, c in zip(self._FIELDS, counts):
            setattr(self, field, getattr(self, field) + c)
            setattr(self, 'global_' + field, getattr(self, 'global_' + field) + c)

    @staticmethod
    def _ratio(num, other):
        return float(num) / (num + other) if num + other > 0 else 0.

    @staticmethod
    def _f(p, r):
        return 2 * p * r / (p + r) if p + r > 0 else 0.

    @property
    def precision(self):
        return self._ratio(self.true_positives, self.false_positives)

    @property
    def global_precision(self):
        return self._ratio(self.global_true_positives, self.global_false_positives)

    @property
    def recall(self):
        return self._ratio(self.true_positives, self.false_negatives)

    @property
    def global_recall(self):
        return self._ratio(self.global_true_positives, self.global_false_negatives)

    @property
    def fscore(self):
        return self._f(self.precision, self.recall)

    @property
    def global_fscore(self):
        return self._f(self.global_precision, self.global_recall)

    def matthewscc(self, use_global=False):
        """Matthews correlation coefficient (zero factors of the denominator count as 1)."""
        pre = 'global_' if use_global else ''
        if not (self.global_total_examples if use_global else self.total_examples):
            return 0.
        tp, fn, fp, tn = (float(getattr(self, pre + f)) for f in self._FIELDS)
        terms = [(tp + fp), (tp + fn), (tn + fp), (tn + fn)]
        denom = 1.
        for t in filter(lambda t: t != 0., terms):
            denom *= t
        return ((tp * tn) - (fp * fn)) / math.sqrt(denom)

    @property
    def total_examples(self):
        return (self.false_negatives + self.false_positives +
                self.true_negatives + self.true_positives)

    @property
    def global_total_examples(self):
        return (self.global_false_negatives + self.global_false_positives +
                self.global_true_negatives + self.global_true_positives)

    def local_reset_stats(self):
        for f in self._FIELDS:
            setattr(self, f, 0)

    def reset_stats(self):
        for f in self._FIELDS:
            setattr(self, f, 0)
            setattr(self, 'global_' + f, 0)


def _check_average(average):
    if average not in ('macro', 'micro'):
        raise ValueError("average must be 'macro' or 'micro', not %r" % (average,))


@register
class F1(EvalMetric):
    """F1 score of a binary classification: ``2 * precision * recall / (precision + recall)``.

    Parameters
    ----------
    name, output_names, label_names
        As :class:`EvalMetric`.
    average : {'macro', 'micro'}
        ``'macro'`` averages the per-batch scores; ``'micro'`` scores all batches together.
    """

    def __init__(self, name='f1', output_names=None, label_names=None, average="macro"):
        _check_average(average)
        self.average = average
        self.metrics = _BinaryClassificationMetrics()
        EvalMetric.__init__(self, name=name, output_names=output_names,
                            label_names=label_names, has_global_stats=True)

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            self.metrics.update_binary_stats(label, pred)
        if self.average == "macro":
            self.sum_metric += self.metrics.fscore
            self.global_sum_metric += self.metrics.global_fscore
            self.num_inst += 1
            self.global_num_inst += 1
            self.metrics.reset_stats()
        else:
            self.sum_metric = self.metrics.fscore * self.metrics.total_examples
            self.global_sum_metric = (self.metrics.global_fscore *
                                      self.metrics.global_total_examples)
            self.num_inst = self.metrics.total_examples
            self.global_num_inst = self.metrics.global_total_examples

    def reset(self):
        self.sum_metric = 0.
        self.num_inst = 0
        self.global_num_inst = 0
        self.global_sum_metric = 0.0
        self.metrics.reset_stats()

    def reset_local(self):
        self.sum_metric = 0.
        self.num_inst = 0
        self.metrics.local_reset_stats()


@register
class MCC(EvalMetric):
    """Matthews correlation coefficient of a binary classification (see :class:`PCC` for
    several classes).

    Parameters
    ----------
    name, output_names, label_names
        As :class:`EvalMetric`.
    average : {'macro', 'micro'}
        ``'macro'`` averages the per-batch values; ``'micro'`` uses all batches together.
    """

    def __init__(self, name='mcc', output_names=None, label_names=None, average="macro"):
        _check_average(average)
        self._average = average
        self._metrics = _BinaryClassificationMetrics()
        EvalMetric.__init__(self, name=name, output_names=output_names,
                            label_names=label_names, has_global_stats=True)

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            self._metrics.update_binary_stats(label, pred)
        if self._average == "macro":
            self.sum_metric += self._metrics.matthewscc()
            self.global_sum_metric += self._metrics.matthewscc(use_global=True)
            self.num_inst += 1
            self.global_num_inst += 1
            self._metrics.reset_stats()
        else:
            self.sum_metric = self._metrics.matthewscc() * self._metrics.total_examples
            self.global_sum_metric = (self._metrics.matthewscc(use_global=True) *
                                      self._metrics.global_total_examples)
            self.num_inst = self._metrics.total_examples
            self.global_num_inst = self._metrics.global_total_examples

    def reset(self):
        self.sum_metric = 0.
        self.num_inst = 0.
        self.global_sum_metric = 0.
        self.global_num_inst = 0.
        self._metrics.reset_stats()

    def reset_local(self):
        self.sum_metric = 0.
        self.num_inst = 0.
        self._metrics.local_reset_stats()


@register
class Perplexity(EvalMetric):
    """Perplexity: ``exp(-mean(log(p[label])))``, reduced in float32 NDArrays as MXNet.

    Parameters
    ----------
    ignore_label : int or None
        Label value whose entries are left out of the count (None: count all).
    axis : int, default -1
        The axis of the predictions that holds the classes.
    name, output_names, label_names
        As :class:`EvalMetric`.
    """

    def __init__(self, ignore_label, axis=-1, name='perplexity', output_names=None,
                 label_names=None):
        super().__init__(name, ignore_label=ignore_label, output_names=output_names,
                         label_names=label_names, has_global_stats=True)
        self.ignore_label = ignore_label
        self.axis = axis

    def update(self, labels, preds):
        if len(labels) != len(preds):
            raise ValueError("Shape of labels {} does not match shape of "
                             "predictions {}".format(len(labels), len(preds)))
        # float(): MXNet's NumPy 1.x promoted the float32 sums to float64 here
        loss = 0.
        num = 0
        for label, pred in zip(labels, preds):
            label, pred = _asnd(label), _asnd(pred)
            if label.size != pred.size / pred.shape[-1]:
                raise ValueError("shape mismatch: %s vs. %s" % (label.shape, pred.shape))
            label = label.as_in_context(pred.context).reshape((label.size,))
            pred = nd.pick(pred, label.astype(dtype='int32'), axis=self.axis)
            if self.ignore_label is not None:
                ignore = (label == self.ignore_label).astype(pred.dtype)
                num -= float(nd.sum(ignore).asscalar())
                pred = pred * (1 - ignore) + ignore
            loss -= float(nd.sum(nd.log(nd.maximum(1e-10, pred))).asscalar())
            num += pred.size
        self.sum_metric += loss
        self.global_sum_metric += loss
        self.num_inst += num
        self.global_num_inst += num

    def get(self):
        if self.num_inst == 0:
            return (self.name, float('nan'))
        return (self.name, math.exp(self.sum_metric / self.num_inst))

    def get_global(self):
        if self.global_num_inst == 0:
            return (self.name, float('nan'))
        return (self.name, math.exp(self.global_sum_metric / self.global_num_inst))


@register
class PCC(EvalMetric):
    """Pearson correlation of the confusion matrix: the multiclass generalisation of
    :class:`MCC` (the matrix grows as new classes appear).

    Parameters
    ----------
    name, output_names, label_names
        As :class:`EvalMetric`.
    has_global_stats : bool, default True
    """

    def __init__(self, name='pcc', output_names=None, label_names=None,
                 has_global_stats=True):
        self.k = 2
        super().__init__(name=name, output_names=output_names, label_names=label_names,
                         has_global_stats=has_global_stats)

    def _grow(self, inc):
        self.lcm = numpy.pad(self.lcm, ((0, inc), (0, inc)), 'constant', constant_values=(0))
        self.gcm = numpy.pad(self.gcm, ((0, inc), (0, inc)), 'constant', constant_values=(0))
        self.k += inc

    @staticmethod
    def _calc_mcc(cmat):
        n = cmat.sum()
        x = cmat.sum(axis=1)
        y = cmat.sum(axis=0)
        cov_xx = numpy.sum(x * (n - x))
        cov_yy = numpy.sum(y * (n - y))
        if cov_xx == 0 or cov_yy == 0:
            return float('nan')
        i = cmat.diagonal()
        cov_xy = numpy.sum(i * n - x * y)
        return cov_xy / (cov_xx * cov_yy) ** 0.5

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label = _asnumpy(label).astype('int32', copy=False)
            pred = _asnumpy(pred)
            if pred.shape != label.shape:
                pred = pred.argmax(axis=1)
            else:
                pred = pred.astype('int32', copy=False)
            n = max(pred.max(), label.max())
            if n >= self.k:
                self._grow(n + 1 - self.k)
            bcm = numpy.zeros((self.k, self.k))
            numpy.add.at(bcm, (pred, label), 1)
            self.lcm += bcm
            self.gcm += bcm
        self.num_inst += 1
        self.global_num_inst += 1

    @property
    def sum_metric(self):
        return self._calc_mcc(self.lcm) * self.num_inst

    @property
    def global_sum_metric(self):
        return self._calc_mcc(self.gcm) * self.global_num_inst

    def reset(self):
        self.global_num_inst = 0.
        self.gcm = numpy.zeros((self.k, self.k))
        self.reset_local()

    def reset_local(self):
        self.num_inst = 0.
        self.lcm = numpy.zeros((self.k, self.k))
