"""The metric base class, the registry, ``create``, CompositeEvalMetric and CustomMetric."""
from __future__ import annotations

import json
import warnings
from collections import OrderedDict

import numpy

from .. import ndarray as nd
from ..ndarray import NDArray
from ..base import numeric_types, string_types

__all__ = ['EvalMetric', 'CompositeEvalMetric', 'CustomMetric', 'np', 'create', 'register',
           'alias', 'check_label_shapes']


def _asnumpy(x):
    """NumPy view of an NDArray, or the NumPy array (or list) itself."""
    if isinstance(x, NDArray):
        return x.asnumpy()
    return numpy.asarray(x)


def _asnd(x):
    """NDArray of ``x`` (NumPy input keeps its dtype, as ``mx.nd.array(x, dtype=x.dtype)``)."""
    if isinstance(x, NDArray):
        return x
    x = numpy.asarray(x)
    return nd.array(x, dtype=x.dtype)


def _promote(value):
    """A NumPy float scalar as a Python float: MXNet (NumPy 1.x) accumulated such values in
    float64, where NumPy 2 would keep float32."""
    if isinstance(value, numpy.floating) and not isinstance(value, numpy.float64):
        return float(value)
    return value


def _plain(value):
    """A NumPy scalar result as the Python number it equals: MXNet returned NumPy scalars,
    which NumPy 1.x printed as plain numbers; NumPy 2 prints ``np.float64(...)``."""
    if isinstance(value, numpy.generic) and value.ndim == 0:
        return value.item()
    return value


def check_label_shapes(labels, preds, wrap=False, shape=False):
    """Check that labels and predictions agree in length (or in shape).

    Parameters
    ----------
    labels : list of NDArray, or NDArray
        The labels of the data.
    preds : list of NDArray, or NDArray
        Predicted values.
    wrap : bool
        If True, wrap a single NDArray (or NumPy array) in a list.
    shape : bool
        If True, compare ``.shape``; otherwise only ``len``.

    Returns
    -------
    (labels, preds)

    Raises
    ------
    ValueError
        ``Shape of labels ... does not match shape of predictions ...`` (MXNet's message).
    """
    if not shape:
        label_shape, pred_shape = len(labels), len(preds)
    else:
        label_shape, pred_shape = labels.shape, preds.shape

    if label_shape != pred_shape:
        raise ValueError("Shape of labels {} does not match shape of "
                         "predictions {}".format(label_shape, pred_shape))
    if wrap:
        if isinstance(labels, (NDArray, numpy.ndarray)):
            labels = [labels]
        if isinstance(preds, (NDArray, numpy.ndarray)):
            preds = [preds]
    return labels, preds


class EvalMetric(object):
    """Base class for all evaluation metrics.

    Parameters
    ----------
    name : str
        Name of this metric instance for display.
    output_names : list of str, or None
        Names of the predictions used by :meth:`update_dict` (default: all).
    label_names : list of str, or None
        Names of the labels used by :meth:`update_dict` (default: all).
    **kwargs
        Recorded for :meth:`get_config`; ``has_global_stats`` marks metrics that keep
        global statistics apart from the local ones (see :meth:`reset_local`).
    """

    def __init__(self, name, output_names=None, label_names=None, **kwargs):
        self.name = str(name)
        self.output_names = output_names
        self.label_names = label_names
        self._has_global_stats = kwargs.pop("has_global_stats", False)
        self._kwargs = kwargs
        self.reset()

    def __str__(self):
        return "EvalMetric: {}".format(dict(self.get_name_value()))

    def get_config(self):
        """Configuration from which ``metric.create(**config)`` recreates this metric."""
        config = self._kwargs.copy()
        config.update({
            'metric': self.__class__.__name__,
            'name': self.name,
            'output_names': self.output_names,
            'label_names': self.label_names})
        return config

    def update_dict(self, label, pred):
        """Update with named labels and predictions.

        Parameters
        ----------
        label : OrderedDict of str -> NDArray
            Name to array mapping for labels.
        pred : OrderedDict of str -> NDArray
            Name to array mapping of predicted outputs.
        """
        if self.output_names is not None:
            pred = [_lookup(pred, name, 'output') for name in self.output_names]
        else:
            pred = list(pred.values())
        if self.label_names is not None:
            label = [_lookup(label, name, 'label') for name in self.label_names]
        else:
            label = list(label.values())
        self.update(label, pred)

    def update(self, labels, preds):
        """Update the internal evaluation result.

        Parameters
        ----------
        labels : list of NDArray
            The labels of the data.
        preds : list of NDArray
            Predicted values.
        """
        raise NotImplementedError()

    def reset(self):
        """Reset the internal evaluation result (local and global) to its initial state."""
        self.num_inst = 0
        self.sum_metric = 0.0
        self.global_num_inst = 0
        self.global_sum_metric = 0.0

    def reset_local(self):
        """Reset the local portion of the evaluation result; global statistics are kept."""
        self.num_inst = 0
        self.sum_metric = 0.0

    def get(self):
        """``(name, value)`` of the local result; value is NaN before any update."""
        if self.num_inst == 0:
            return (self.name, float('nan'))
        return (self.name, _plain(self.sum_metric / self.num_inst))

    def get_global(self):
        """``(name, value)`` of the global result (since the last :meth:`reset`)."""
        if self._has_global_stats:
            if self.global_num_inst == 0:
                return (self.name, float('nan'))
            return (self.name, _plain(self.global_sum_metric / self.global_num_inst))
        return self.get()

    def get_name_value(self):
        """List of ``(name, value)`` tuples of the local result."""
        name, value = self.get()
        if not isinstance(name, list):
            name = [name]
        if not isinstance(value, list):
            value = [value]
        return list(zip(name, value))

    def get_global_name_value(self):
        """List of ``(name, value)`` tuples of the global result."""
        if self._has_global_stats:
            name, value = self.get_global()
            if not isinstance(name, list):
                name = [name]
            if not isinstance(value, list):
                value = [value]
            return list(zip(name, value))
        return self.get_name_value()


def _lookup(mapping, name, what):
    try:
        return mapping[name]
    except KeyError:
        raise KeyError('%s name %r is not among the given %ss %s'
                       % (what, name, what, list(mapping))) from None


# --------------------------------------------------------------------------- registry
_REGISTRY = {}


def register(klass, name=None):
    """Register a metric class under ``name`` (default: its class name, lower case).

    Parameters
    ----------
    klass : subclass of EvalMetric
    name : str, optional

    Returns
    -------
    klass
    """
    if not (isinstance(klass, type) and issubclass(klass, EvalMetric)):
        raise TypeError('Can only register subclass of EvalMetric, not %r' % (klass,))
    name = (klass.__name__ if name is None else name).lower()
    if name in _REGISTRY:
        old = _REGISTRY[name]
        warnings.warn("\033[91mNew metric %s.%s registered with name %s is"
                      "overriding existing metric %s.%s\033[0m"
                      % (klass.__module__, klass.__name__, name, old.__module__,
                         old.__name__), UserWarning, stacklevel=2)
    _REGISTRY[name] = klass
    return klass


def alias(*aliases):
    """Class decorator registering a metric class under each of ``aliases``."""
    def reg(klass):
        for name in aliases:
            register(klass, name)
        return klass
    return reg


def _create(*args, **kwargs):
    """MXNet's registry ``create``: a name, an instance, a config dict or a JSON string."""
    if args:
        name, args = args[0], args[1:]
    else:
        if 'metric' not in kwargs:
            raise TypeError('metric.create needs a metric (name, instance or config)')
        name = kwargs.pop('metric')
    if isinstance(name, EvalMetric):
        if args or kwargs:
            raise ValueError('metric is already an instance. Additional arguments are '
                             'invalid: %r %r' % (args, kwargs))
        return name
    if isinstance(name, dict):
        return _create(**name)
    if not isinstance(name, string_types):
        raise TypeError('metric must be a name (str), an EvalMetric, a callable or a list, '
                        'not %s' % type(name).__name__)
    if name.startswith('['):
        name, kwargs = json.loads(name)
        return _create(name, **kwargs)
    if name.startswith('{'):
        return _create(**json.loads(name))
    key = name.lower()
    if key not in _REGISTRY:
        raise ValueError('metric %r is not registered; valid names: %s. Register new ones '
                         'with metric.register' % (name, ', '.join(sorted(_REGISTRY))))
    return _REGISTRY[key](*args, **kwargs)


def create(metric, *args, **kwargs):
    """Create an evaluation metric from a name, an instance, a list or a function.

    Parameters
    ----------
    metric : str, EvalMetric, list or callable
        A registered metric name (``'acc'``, ``'ce'``, ``'rmse'``, ...), an instance
        (returned as is), a list of such (a :class:`CompositeEvalMetric`), or a function
        ``feval(label, pred)`` on NumPy arrays (a :class:`CustomMetric`).
    *args, **kwargs
        Arguments for the metric's constructor.

    Examples
    --------
    >>> import symgraph as mx
    >>> mx.metric.create('acc').name
    'accuracy'
    >>> mx.metric.create(['acc', 'ce']).get()[0]
    ['accuracy', 'cross-entropy']
    """
    if callable(metric):
        return CustomMetric(metric, *args, **kwargs)
    if isinstance(metric, list):
        composite_metric = CompositeEvalMetric()
        for child_metric in metric:
            composite_metric.add(create(child_metric, *args, **kwargs))
        return composite_metric
    return _create(metric, *args, **kwargs)


@register
@alias('composite')
class CompositeEvalMetric(EvalMetric):
    """Manages several evaluation metrics as one.

    Parameters
    ----------
    metrics : list of EvalMetric (or names), optional
        Child metrics.
    name, output_names, label_names
        As :class:`EvalMetric`.
    """

    def __init__(self, metrics=None, name='composite', output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.metrics = [create(i) for i in (metrics or [])]

    def add(self, metric):
        """Add a child metric (an instance or anything :func:`create` accepts)."""
        self.metrics.append(create(metric))

    def get_metric(self, index):
        """The child metric at ``index``.

        Raises
        ------
        ValueError
            When ``index`` is out of range (MXNet returns the error instead of raising).
        """
        try:
            return self.metrics[index]
        except IndexError:
            raise ValueError("Metric index {} is out of range 0 and {}".format(
                index, len(self.metrics))) from None

    def update_dict(self, labels, preds):  # pylint: disable=arguments-differ
        if self.label_names is not None:
            labels = OrderedDict([i for i in labels.items() if i[0] in self.label_names])
        if self.output_names is not None:
            preds = OrderedDict([i for i in preds.items() if i[0] in self.output_names])
        for metric in self.metrics:
            metric.update_dict(labels, preds)

    def update(self, labels, preds):
        for metric in self.metrics:
            metric.update(labels, preds)

    def reset(self):
        for metric in getattr(self, 'metrics', ()):
            metric.reset()

    def reset_local(self):
        for metric in getattr(self, 'metrics', ()):
            metric.reset_local()

    def _collect(self, getter):
        names, values = [], []
        for metric in self.metrics:
            name, value = getter(metric)
            if isinstance(name, string_types):
                name = [name]
            if isinstance(value, numeric_types):
                value = [value]
            names.extend(name)
            values.extend(value)
        return (names, values)

    def get(self):
        """``(names, values)``: lists over the child metrics."""
        return self._collect(lambda m: m.get())

    def get_global(self):
        """``(names, values)`` of the global results of the child metrics."""
        return self._collect(lambda m: m.get_global())

    def get_config(self):
        config = super().get_config()
        config.update({'metrics': [i.get_config() for i in self.metrics]})
        return config


@register
class CustomMetric(EvalMetric):
    """A metric computed by a function of NumPy arrays.

    Parameters
    ----------
    feval : callable(label, pred)
        Returns either ``sum_metric`` (counted as one instance) or a tuple
        ``(sum_metric, num_inst)`` for one (label, pred) pair of NumPy arrays.
    name : str, optional
        Defaults to ``feval.__name__`` (``custom(<lambda>)`` for a lambda).
    allow_extra_outputs : bool
        Allow more predictions than labels (e.g. RNN states among the outputs).
    output_names, label_names
        As :class:`EvalMetric`.

    Examples
    --------
    >>> import numpy as np, symgraph as mx
    >>> m = mx.metric.CustomMetric(lambda label, pred: (label + pred).mean())
    >>> m.update([mx.nd.array([2.5, 0., 2, 8])], [mx.nd.array([3, -0.5, 2, 7])])
    >>> m.get()
    ('custom(<lambda>)', 6.0)
    """

    def __init__(self, feval, name=None, allow_extra_outputs=False, output_names=None,
                 label_names=None):
        if not callable(feval):
            raise TypeError('CustomMetric: feval must be callable, not %s'
                            % type(feval).__name__)
        if name is None:
            name = feval.__name__
            if name.find('<') != -1:
                name = 'custom(%s)' % name
        super().__init__(name, feval=feval, allow_extra_outputs=allow_extra_outputs,
                         output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self._feval = feval
        self._allow_extra_outputs = allow_extra_outputs

    def update(self, labels, preds):
        if not self._allow_extra_outputs:
            labels, preds = check_label_shapes(labels, preds, True)
        for pred, label in zip(preds, labels):
            reval = self._feval(_asnumpy(label), _asnumpy(pred))
            if isinstance(reval, tuple):
                (sum_metric, num_inst) = reval
                sum_metric = _promote(sum_metric)
                self.sum_metric += sum_metric
                self.global_sum_metric += sum_metric
                self.num_inst += num_inst
                self.global_num_inst += num_inst
            else:
                reval = _promote(reval)
                self.sum_metric += reval
                self.global_sum_metric += reval
                self.num_inst += 1
                self.global_num_inst += 1

    def get_config(self):
        raise NotImplementedError("CustomMetric cannot be serialized")


def np(numpy_feval, name=None, allow_extra_outputs=False):  # pylint: disable=invalid-name
    """Create a :class:`CustomMetric` from a function of NumPy arrays.

    Parameters
    ----------
    numpy_feval : callable(label, pred)
        Returns the metric of one mini-batch as a float.
    name : str, optional
        Name of the metric (default: the function's name).
    allow_extra_outputs : bool
        Allow more predictions than labels.

    Returns
    -------
    CustomMetric
    """
    def feval(label, pred):
        """Internal eval function."""
        return numpy_feval(label, pred)
    feval.__name__ = numpy_feval.__name__
    return CustomMetric(feval, name, allow_extra_outputs)
