"""``mx.model.FeedForward``: MXNet's older model API (``create``, ``fit``, ``predict``,
``score``, ``save``, ``load``), here running on :class:`~symgraph.module.Module`.

MXNet 1.9.1 deprecates it (a ``DeprecationWarning`` when one is made) but scripts still
use it; its training loop and log lines are those of MXNet's ``_train_multi_device``.
"""
import logging
import time
import warnings

import numpy as np

from .. import io
from .. import metric
from .. import ndarray as nd
from .. import optimizer as opt
from ..base import ArgumentError, ArgumentTypeError, ShapeError, TypeInferenceError
from ..callback import LogValidationMetricsCallback
from ..context import Context, cpu
from ..initializer import Uniform, InitDesc
from ..io import DataDesc
from ..model import BatchEndParam, save_checkpoint, load_checkpoint, _create_kvstore
from ..symbol import Symbol
from .module import Module

__all__ = ['FeedForward']


def _multiple_callbacks(callbacks, *args, **kwargs):
    """Call ``callbacks`` (None, one callable or a list) with the arguments."""
    if isinstance(callbacks, list):
        for cb in callbacks:
            cb(*args, **kwargs)
        return
    if callbacks:
        callbacks(*args, **kwargs)


def _check_arguments(symbol):
    """MXNet's check that argument and auxiliary state names are unique."""
    for names, what in ((symbol.list_arguments(), 'argument'),
                        (symbol.list_auxiliary_states(), 'auxiliary state')):
        seen = set()
        for name in names:
            if name in seen:
                raise ArgumentError(('Find duplicated %s name "%s", please make the weight name '
                                     'non-duplicated(using name arguments), arguments are %s')
                                    % (what, name, str(names)))
            seen.add(name)


class FeedForward:
    """A feed-forward model: one data input, one output (MXNet's ``FeedForward``).

    Parameters
    ----------
    symbol : Symbol or callable
        The network, or ``sym_gen(bucket_key)`` returning it.
    ctx : Context or list of Context, optional
        Default ``cpu()``; training splits each batch among several.
    num_epoch : int, optional
        Number of training epochs.
    epoch_size : int, optional
        Batches per epoch (default: one pass over the data).
    optimizer : str or Optimizer
        Default ``'sgd'``.
    initializer : Initializer
        Default ``Uniform(0.01)``.
    numpy_batch_size : int
        Batch size when training data are arrays (default 128).
    arg_params, aux_params : dict of str to NDArray, optional
        Initial parameters.
    allow_extra_params : bool
        Drop entries of ``arg_params``/``aux_params`` the symbol does not use.
    begin_epoch : int
        Number of the first epoch.
    **kwargs
        Arguments of the optimizer (``learning_rate``, ``momentum``, ``wd``, ...).
    """

    def __init__(self, symbol, ctx=None, num_epoch=None, epoch_size=None, optimizer='sgd',
                 initializer=Uniform(0.01), numpy_batch_size=128, arg_params=None,
                 aux_params=None, allow_extra_params=False, begin_epoch=0, **kwargs):
        warnings.warn('\033[91mmxnet.model.FeedForward has been deprecated. ' +
                      'Please use mxnet.mod.Module instead.\033[0m',
                      DeprecationWarning, stacklevel=2)
        if isinstance(symbol, Symbol):
            self.symbol = symbol
            self.sym_gen = None
        else:
            if not callable(symbol):
                raise ArgumentTypeError('FeedForward: symbol must be a Symbol or a callable '
                                        'sym_gen, not %s' % type(symbol).__name__)
            self.symbol = None
            self.sym_gen = symbol
        self.arg_params = arg_params
        self.aux_params = aux_params
        self.allow_extra_params = allow_extra_params
        self.argument_checked = False
        if self.sym_gen is None:
            self._check_arguments()
        if ctx is None:
            ctx = [cpu()]
        elif isinstance(ctx, Context):
            ctx = [ctx]
        self.ctx = ctx
        self.num_epoch = num_epoch
        self.epoch_size = epoch_size
        self.kwargs = kwargs.copy()
        self.optimizer = optimizer
        self.initializer = initializer
        self.numpy_batch_size = numpy_batch_size
        self._pred_exec = None      # the prediction Module (MXNet keeps an executor)
        self.begin_epoch = begin_epoch

    def _check_arguments(self):
        if self.argument_checked:
            return
        self.argument_checked = True
        _check_arguments(self.symbol)
        if self.allow_extra_params:
            if self.arg_params:
                arg_names = set(self.symbol.list_arguments())
                self.arg_params = {k: v for k, v in self.arg_params.items()
                                   if k in arg_names}
            if self.aux_params:
                aux_names = set(self.symbol.list_auxiliary_states())
                self.aux_params = {k: v for k, v in self.aux_params.items()
                                   if k in aux_names}

    @staticmethod
    def _is_data_arg(name):
        """Whether ``name`` is a data argument (ends with 'data' or 'label')."""
        return name.endswith('data') or name.endswith('label')

    def _init_params(self, inputs, overwrite=False):
        """Create the parameters: copies of the given ones, else from the initializer."""
        inputs = [x if isinstance(x, DataDesc) else DataDesc(*x) for x in inputs]
        input_shapes = {item.name: item.shape for item in inputs}
        arg_shapes, _, aux_shapes = self.symbol.infer_shape(**input_shapes)
        if arg_shapes is None:
            raise ShapeError('FeedForward: cannot infer the parameter shapes from %s'
                             % input_shapes)
        input_dtypes = {item.name: item.dtype for item in inputs}
        arg_dtypes, _, aux_dtypes = self.symbol.infer_type(**input_dtypes)
        if arg_dtypes is None:
            raise TypeInferenceError('FeedForward: cannot infer the parameter dtypes from %s'
                                     % input_dtypes)
        arg_names = self.symbol.list_arguments()
        param_names = [key for key in arg_names if key not in input_shapes]
        aux_names = self.symbol.list_auxiliary_states()
        arg_params = {k: nd.zeros(shape=s, dtype=t)
                      for k, s, t in zip(arg_names, arg_shapes, arg_dtypes)
                      if k in param_names}
        aux_params = {k: nd.zeros(shape=s, dtype=t)
                      for k, s, t in zip(aux_names, aux_shapes, aux_dtypes)}
        for mine, given in ((arg_params, self.arg_params), (aux_params, self.aux_params)):
            for k, v in mine.items():
                if given and k in given and not overwrite:
                    v[:] = given[k][:]
                else:
                    # by name only, as MXNet's init(str, arr), without its deprecation
                    self.initializer(InitDesc(k), v)
        self.arg_params = arg_params
        self.aux_params = aux_params
        return (arg_names, list(param_names), aux_names)

    def __getstate__(self):
        this = self.__dict__.copy()
        this['_pred_exec'] = None
        return this

    def __setstate__(self, state):
        self.__dict__.update(state)

    def _init_predictor(self, input_shapes, type_dict=None):
        """A Module on the first context, bound for prediction to ``input_shapes``."""
        input_shapes = [x if isinstance(x, DataDesc) else DataDesc(*x) for x in input_shapes]
        data_names = [x.name for x in input_shapes]
        shapes = {name: self.arg_params[name].shape for name in self.arg_params}
        shapes.update({x.name: tuple(x.shape) for x in input_shapes})
        arg_shapes, _, _ = self.symbol.infer_shape(**shapes)
        if arg_shapes is None:
            raise ShapeError('FeedForward: incomplete input shapes %s' % shapes)
        if self._pred_exec is not None and \
                [tuple(d.shape) for d in self._pred_exec.data_shapes] == \
                [tuple(x.shape) for x in input_shapes]:
            return
        arg_names = self.symbol.list_arguments()
        # the arguments that are neither data nor parameters are the labels: bound to their
        # inferred shapes, so that prediction needs none
        label_shapes = [(n, s) for n, s in zip(arg_names, arg_shapes)
                        if n not in data_names and n not in self.arg_params]
        mod = Module(self.symbol, data_names=data_names,
                     label_names=[n for n, _ in label_shapes], context=self.ctx[0],
                     logger=logging)
        mod.bind(input_shapes, label_shapes or None, for_training=False)
        mod.set_params(self.arg_params, self.aux_params or {})
        _check_arguments(self.symbol)
        self._pred_exec = mod

    def _init_iter(self, X, y, is_train):
        """A DataIter for arrays ``X``, ``y`` (or ``X`` itself when it is one)."""
        if isinstance(X, (np.ndarray, nd.NDArray)):
            if y is None:
                if is_train:
                    raise ArgumentError('y must be specified when X is numpy.ndarray')
                y = np.zeros(X.shape[0])
            if not isinstance(y, (np.ndarray, nd.NDArray)):
                raise ArgumentTypeError('y must be ndarray when X is numpy.ndarray')
            if X.shape[0] != y.shape[0]:
                raise ArgumentError("The numbers of data points and labels not equal")
            if y.ndim == 2 and y.shape[1] == 1:
                y = y.flatten() if isinstance(y, np.ndarray) else y.reshape((-1,))
            if y.ndim != 1:
                raise ArgumentError("Label must be 1D or 2D (with 2nd dimension being 1)")
            if is_train:
                return io.NDArrayIter(X, y, min(X.shape[0], self.numpy_batch_size),
                                      shuffle=is_train, last_batch_handle='roll_over')
            return io.NDArrayIter(X, y, min(X.shape[0], self.numpy_batch_size),
                                  shuffle=False)
        if not isinstance(X, io.DataIter):
            raise ArgumentTypeError('X must be DataIter, NDArray or numpy.ndarray')
        return X

    def _init_eval_iter(self, eval_data):
        if eval_data is None:
            return eval_data
        if isinstance(eval_data, (tuple, list)) and len(eval_data) == 2:
            if eval_data[0] is not None:
                if eval_data[1] is None and isinstance(eval_data[0], io.DataIter):
                    return eval_data[0]
                input_data = (np.array(eval_data[0]) if isinstance(eval_data[0], list)
                              else eval_data[0])
                input_label = (np.array(eval_data[1]) if isinstance(eval_data[1], list)
                               else eval_data[1])
                return self._init_iter(input_data, input_label, is_train=True)
            raise ArgumentError("Eval data is NONE")
        if not isinstance(eval_data, io.DataIter):
            raise ArgumentTypeError('Eval data must be DataIter, or NDArray/numpy.ndarray/list '
                                    'pair (i.e. tuple/list of length 2)')
        return eval_data

    def predict(self, X, num_batch=None, return_data=False, reset=True):
        """Run prediction (on the first context only).

        Returns
        -------
        numpy.ndarray, or a list of them with several outputs; with ``return_data``,
        ``(outputs, data, label)``.
        """
        X = self._init_iter(X, None, is_train=False)
        if reset:
            X.reset()
        self._init_predictor(X.provide_data)
        batch_size = X.batch_size
        mod = self._pred_exec
        output_list = [[] for _ in range(len(mod.output_names))]
        if return_data:
            data_list = [[] for _ in X.provide_data]
            label_list = [[] for _ in X.provide_label]
        i = 0
        for batch in X:
            mod.forward(io.DataBatch(batch.data), is_train=False)
            real_size = batch_size - batch.pad
            for o_list, o_nd in zip(output_list, mod.get_outputs()):
                o_list.append(o_nd[0:real_size].asnumpy())
            if return_data:
                for j, x in enumerate(batch.data):
                    data_list[j].append(x[0:real_size].asnumpy())
                for j, x in enumerate(batch.label):
                    label_list[j].append(x[0:real_size].asnumpy())
            i += 1
            if num_batch is not None and i == num_batch:
                break
        outputs = [np.concatenate(x) for x in output_list]
        if len(outputs) == 1:
            outputs = outputs[0]
        if return_data:
            data = [np.concatenate(x) for x in data_list]
            label = [np.concatenate(x) for x in label_list]
            if len(data) == 1:
                data = data[0]
            if len(label) == 1:
                label = label[0]
            return outputs, data, label
        return outputs

    def score(self, X, eval_metric='acc', num_batch=None, batch_end_callback=None,
              reset=True):
        """Evaluate ``eval_metric`` on ``X``; returns its value."""
        if not isinstance(eval_metric, metric.EvalMetric):
            eval_metric = metric.create(eval_metric)
        X = self._init_iter(X, None, is_train=False)
        if reset:
            X.reset()
        self._init_predictor(X.provide_data)
        mod = self._pred_exec
        for i, batch in enumerate(X):
            if num_batch is not None and i == num_batch:
                break
            mod.forward(io.DataBatch(batch.data), is_train=False)
            eval_metric.update(batch.label, mod.get_outputs())
            if batch_end_callback is not None:
                batch_end_params = BatchEndParam(epoch=0, nbatch=i, eval_metric=eval_metric,
                                                 locals=locals())
                _multiple_callbacks(batch_end_callback, batch_end_params)
        return eval_metric.get()[1]

    def fit(self, X, y=None, eval_data=None, eval_metric='acc', epoch_end_callback=None,
            batch_end_callback=None, kvstore='local', logger=None, work_load_list=None,
            monitor=None, eval_end_callback=LogValidationMetricsCallback(),
            eval_batch_end_callback=None):
        """Train the model.

        Parameters
        ----------
        X : DataIter, numpy.ndarray or NDArray
            Training data (arrays need ``y``).
        y : numpy.ndarray or NDArray, optional
            Labels, 1-D (or 2-D with one column).
        eval_data : DataIter or (data, label) pair, optional
        eval_metric : str, EvalMetric or callable
        epoch_end_callback : callable or list
            ``(epoch, symbol, arg_params, aux_params)``.
        batch_end_callback : callable or list
            A ``BatchEndParam`` (``nbatch`` counts from 1, as MXNet's FeedForward).
        kvstore : str or KVStore
        logger : Logger, optional
            Default: the ``logging`` module.
        work_load_list : list of number, optional
        monitor : Monitor, optional
        eval_end_callback, eval_batch_end_callback : callable or list
            Called after the validation pass / each validation batch.
        """
        data = self._init_iter(X, y, is_train=True)
        eval_data = self._init_eval_iter(eval_data)
        if self.sym_gen:
            self.symbol = self.sym_gen(data.default_bucket_key)
            self._check_arguments()
        self.kwargs['sym'] = self.symbol
        arg_names, param_names, aux_names = \
            self._init_params(data.provide_data + data.provide_label)
        if not isinstance(eval_metric, metric.EvalMetric):
            eval_metric = metric.create(eval_metric)
        (kvstore, update_on_kvstore) = _create_kvstore(kvstore, len(self.ctx),
                                                       self.arg_params)
        param_idx2name = {}
        if update_on_kvstore:
            param_idx2name.update(enumerate(param_names))
        else:
            for i, n in enumerate(param_names):
                for k in range(len(self.ctx)):
                    param_idx2name[i * len(self.ctx) + k] = n
        self.kwargs['param_idx2name'] = param_idx2name
        if isinstance(self.optimizer, str):
            batch_size = data.batch_size
            if kvstore and 'dist' in kvstore.type and '_async' not in kvstore.type:
                batch_size *= kvstore.num_workers
            optimizer = opt.create(self.optimizer, rescale_grad=(1.0 / batch_size),
                                   **(self.kwargs))
        elif isinstance(self.optimizer, opt.Optimizer):
            optimizer = self.optimizer
            if not optimizer.idx2name:
                optimizer.idx2name = param_idx2name.copy()
        else:
            raise ArgumentTypeError('FeedForward: optimizer must be a name or an Optimizer, not %s'
                                    % type(self.optimizer).__name__)
        self._train(data, eval_data, eval_metric, optimizer, kvstore, arg_names,
                    epoch_end_callback, batch_end_callback, logger or logging,
                    work_load_list, monitor, eval_end_callback, eval_batch_end_callback)

    def _train(self, train_data, eval_data, eval_metric, optimizer, kvstore, arg_names,
               epoch_end_callback, batch_end_callback, logger, work_load_list, monitor,
               eval_end_callback, eval_batch_end_callback):
        """MXNet's ``_train_multi_device`` on a Module."""
        data_names = [x[0] for x in train_data.provide_data]
        label_names = [x[0] for x in train_data.provide_label]
        mod = Module(self.symbol, data_names=data_names,
                     label_names=[n for n in label_names if n in arg_names],
                     context=self.ctx, work_load_list=work_load_list, logger=logger)
        logger.info('Start training with %s', str(self.ctx))
        mod.bind(train_data.provide_data, train_data.provide_label, for_training=True)
        if monitor:
            mod.install_monitor(monitor)
        mod.init_params(arg_params=self.arg_params, aux_params=self.aux_params)
        with warnings.catch_warnings():
            # rescale_grad is the batch of the data iterator, as Module would set it
            warnings.filterwarnings('ignore', 'Optimizer created manually outside Module')
            mod.init_optimizer(kvstore=kvstore, optimizer=optimizer)
        self._pred_exec = None
        end_epoch = self.num_epoch
        epoch_size = self.epoch_size
        train_data.reset()
        for epoch in range(self.begin_epoch, end_epoch):
            tic = time.time()
            eval_metric.reset()
            nbatch = 0
            while True:
                do_reset = True
                for data_batch in train_data:
                    if monitor is not None:
                        monitor.tic()
                    mod.forward_backward(data_batch)
                    mod.update()
                    if monitor is not None:
                        monitor.toc_print()
                    mod.update_metric(eval_metric, data_batch.label)
                    nbatch += 1
                    if batch_end_callback is not None:
                        batch_end_params = BatchEndParam(epoch=epoch, nbatch=nbatch,
                                                         eval_metric=eval_metric,
                                                         locals=locals())
                        _multiple_callbacks(batch_end_callback, batch_end_params)
                    if epoch_size is not None and nbatch >= epoch_size:
                        do_reset = False
                        break
                if do_reset:
                    logger.info('Epoch[%d] Resetting Data Iterator', epoch)
                    train_data.reset()
                if epoch_size is None or nbatch >= epoch_size:
                    break
            toc = time.time()
            logger.info('Epoch[%d] Time cost=%.3f', epoch, (toc - tic))
            if epoch_end_callback or epoch + 1 == end_epoch:
                arg_params, aux_params = mod.get_params()
                for mine, new in ((self.arg_params, arg_params),
                                  (self.aux_params, aux_params)):
                    for k, v in new.items():
                        v.copyto(mine[k])
            _multiple_callbacks(epoch_end_callback, epoch, self.symbol, self.arg_params,
                                self.aux_params)
            if eval_data:
                eval_metric.reset()
                eval_data.reset()
                total_num_batch = 0
                for i, eval_batch in enumerate(eval_data):
                    mod.forward(eval_batch, is_train=False)
                    mod.update_metric(eval_metric, eval_batch.label)
                    if eval_batch_end_callback is not None:
                        batch_end_params = BatchEndParam(epoch=epoch, nbatch=i,
                                                         eval_metric=eval_metric,
                                                         locals=locals())
                        _multiple_callbacks(eval_batch_end_callback, batch_end_params)
                    total_num_batch += 1
                if eval_end_callback is not None:
                    eval_end_params = BatchEndParam(epoch=epoch, nbatch=total_num_batch,
                                                    eval_metric=eval_metric,
                                                    locals=locals())
                    _multiple_callbacks(eval_end_callback, eval_end_params)
                eval_data.reset()

    def save(self, prefix, epoch=None, remove_amp_cast=True):
        """Save ``prefix-symbol.json`` and ``prefix-%04d.params`` (epoch default:
        ``num_epoch``)."""
        if epoch is None:
            epoch = self.num_epoch
        if epoch is None:
            raise ArgumentError('FeedForward.save: give the epoch (num_epoch is not set)')
        save_checkpoint(prefix, epoch, self.symbol, self.arg_params or {},
                        self.aux_params or {}, remove_amp_cast=remove_amp_cast)

    @staticmethod
    def load(prefix, epoch, ctx=None, **kwargs):
        """A FeedForward from a checkpoint; ``kwargs`` go to the constructor."""
        symbol, arg_params, aux_params = load_checkpoint(prefix, epoch)
        return FeedForward(symbol, ctx=ctx, arg_params=arg_params, aux_params=aux_params,
                           begin_epoch=epoch, **kwargs)

    @staticmethod
    def create(symbol, X, y=None, ctx=None, num_epoch=None, epoch_size=None,
               optimizer='sgd', initializer=Uniform(0.01), eval_data=None,
               eval_metric='acc', epoch_end_callback=None, batch_end_callback=None,
               kvstore='local', logger=None, work_load_list=None,
               eval_end_callback=LogValidationMetricsCallback(),
               eval_batch_end_callback=None, **kwargs):
        """Make a FeedForward and fit it (the functional style)."""
        model = FeedForward(symbol, ctx=ctx, num_epoch=num_epoch, epoch_size=epoch_size,
                            optimizer=optimizer, initializer=initializer, **kwargs)
        model.fit(X, y, eval_data=eval_data, eval_metric=eval_metric,
                  epoch_end_callback=epoch_end_callback,
                  batch_end_callback=batch_end_callback, kvstore=kvstore, logger=logger,
                  work_load_list=work_load_list, eval_end_callback=eval_end_callback,
                  eval_batch_end_callback=eval_batch_end_callback)
        return model
