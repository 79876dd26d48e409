"""Modules written in Python: ``PythonModule`` (the API as no-ops to override) and
``PythonLossModule`` (a loss computed by a Python function), as MXNet's
``mxnet.module.python_module``."""
import logging

from .. import ndarray as nd
from ..initializer import Uniform
from .base_module import BaseModule, _require
from ..base import ArgumentError, ArgumentTypeError, NotSupportedError

__all__ = ['PythonModule', 'PythonLossModule']


class PythonModule(BaseModule):
    """A module with no parameters whose computation subclasses write in Python.

    Parameters
    ----------
    data_names : list of str
    label_names : list of str or None
    output_names : list of str
    logger : Logger

    Subclasses implement ``_compute_output_shapes``, ``forward``, ``get_outputs`` and,
    for training, ``backward`` and ``get_input_grads``.
    """

    def __init__(self, data_names, label_names, output_names, logger=logging):
        super().__init__(logger=logger)
        if isinstance(data_names, tuple):
            data_names = list(data_names)
        if isinstance(label_names, tuple):
            label_names = list(label_names)
        self._data_names = data_names
        self._label_names = label_names
        self._output_names = output_names
        self._data_shapes = None
        self._label_shapes = None
        self._output_shapes = None

    @property
    def data_names(self):
        """A list of names for data required by this module."""
        return self._data_names

    @property
    def output_names(self):
        """A list of names for the outputs of this module."""
        return self._output_names

    @property
    def data_shapes(self):
        """The data shapes given to :meth:`bind`."""
        return self._data_shapes

    @property
    def label_shapes(self):
        """The label shapes given to :meth:`bind`."""
        return self._label_shapes

    @property
    def output_shapes(self):
        """The output shapes (from ``_compute_output_shapes``)."""
        return self._output_shapes

    def get_params(self):
        """``({}, {})``: no parameters (subclasses with parameters override this)."""
        return (dict(), dict())

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        """Nothing to initialize (subclasses with parameters override this)."""
        self.params_initialized = True

    def update(self):
        """Nothing to update (subclasses with parameters override this)."""

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """Accumulate ``eval_metric`` on the outputs (when bound with labels)."""
        if self._label_shapes is None:
            return
        if pre_sliced:
            raise NotSupportedError("PythonModule does not support presliced labels")
        eval_metric.update(labels, self.get_outputs())

    def bind(self, data_shapes, label_shapes=None, for_training=True,
             inputs_need_grad=False, force_rebind=False, shared_module=None,
             grad_req='write'):
        """Record the shapes and compute the output shapes."""
        if self.binded and not force_rebind:
            self.logger.warning('Already bound, ignoring bind()')
            return
        if grad_req != 'write':
            raise ArgumentError("Python module only support write gradient, not %r" % (grad_req,))
        data_names = [x[0] for x in data_shapes]
        if data_names != list(self._data_names):
            raise ArgumentError('bind: data_shapes name %s but the module takes %s'
                                % (data_names, self._data_names))
        if label_shapes is not None:
            label_names = [x[0] for x in label_shapes]
            if self._label_names is None or label_names != list(self._label_names):
                raise ArgumentError('bind: label_shapes name %s but the module takes %s'
                                    % (label_names, self._label_names))
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._data_shapes = data_shapes
        self._label_shapes = label_shapes
        self._output_shapes = self._compute_output_shapes()
        self.binded = True

    def _compute_output_shapes(self):
        """The ``(name, shape)`` of each output, from ``self._data_shapes`` and
        ``self._label_shapes`` (subclasses implement this)."""
        raise NotImplementedError()

    def init_optimizer(self, kvstore='local', optimizer='sgd',
                       optimizer_params=(('learning_rate', 0.01),), force_init=False):
        """Nothing to optimize (subclasses with parameters override this)."""
        self.optimizer_initialized = True


class PythonLossModule(PythonModule):
    """A loss layer in Python: the output is the scores it gets, the gradient comes from
    ``grad_func(scores, labels)``.

    Parameters
    ----------
    name : str
        The output is named ``name + '_output'``.
    data_names : list of str
        One name (default ``('data',)``).
    label_names : list of str
        One name (default ``('softmax_label',)``).
    logger : Logger
    grad_func : callable, optional
        ``grad_func(scores, labels)`` returns the gradient of the loss with respect to the
        scores (an NDArray or a NumPy array); else subclasses implement
        ``_backward_impl``.
    """

    def __init__(self, name='pyloss', data_names=('data',), label_names=('softmax_label',),
                 logger=logging, grad_func=None):
        super().__init__(data_names, label_names, [name + '_output'], logger=logger)
        self._name = name
        if len(data_names) != 1 or len(label_names) != 1:
            raise ArgumentError('PythonLossModule takes one data and one label, not %s and %s'
                                % (list(data_names), list(label_names)))
        self._scores = None
        self._labels = None
        self._scores_grad = None
        if grad_func is not None and not callable(grad_func):
            raise ArgumentTypeError('grad_func must be callable')
        self._grad_func = grad_func

    def _compute_output_shapes(self):
        return [(self._name + '_output', self._data_shapes[0][1])]

    def forward(self, data_batch, is_train=None):
        """Keep the scores (and, when training, the labels) for backward."""
        self._scores = data_batch.data[0]
        if is_train is None:
            is_train = self.for_training
        if is_train:
            self._labels = data_batch.label[0]

    def get_outputs(self, merge_multi_context=True):
        """``[scores]``."""
        if merge_multi_context is not True:
            raise ArgumentError('PythonLossModule runs on one context: merge_multi_context '
                                'must be True')
        return [self._scores]

    def backward(self, out_grads=None):
        """Compute the gradient of the scores with ``grad_func``."""
        if out_grads is not None:
            raise ArgumentError('For a loss module, out_grads should be None')
        _require(self.for_training, 'backward: bind with for_training=True first')
        self._backward_impl()

    def _backward_impl(self):
        if self._grad_func is not None:
            grad = self._grad_func(self._scores, self._labels)
            if not isinstance(grad, nd.NDArray):
                grad = nd.array(grad)
            self._scores_grad = grad
        else:
            raise NotImplementedError()

    def get_input_grads(self, merge_multi_context=True):
        """``[gradient of the scores]``."""
        if merge_multi_context is not True:
            raise ArgumentError('PythonLossModule runs on one context: merge_multi_context '
                                'must be True')
        return [self._scores_grad]

    def install_monitor(self, mon):
        """Not supported: there are no executors."""
        raise NotImplementedError()
