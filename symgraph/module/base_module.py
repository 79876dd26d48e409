"""``BaseModule``: the API every module implements, and the training loop on top of it
(MXNet's ``mxnet.module.base_module``)."""
import logging
import time
import warnings

import numpy as np

from .. import metric
from .. import ndarray as nd
from ..base import MXNetError, _as_list, ArgumentError, UsageError
from ..context import cpu
from ..initializer import Uniform
from ..io import DataDesc, DataIter, DataBatch
from ..model import BatchEndParam

__all__ = ['BaseModule', 'ModuleStateError']

#: the argument-name endings of parameters (not inputs) in MXNet's naming
_PARAM_ENDINGS = ('_weight', '_bias', '_gamma', '_beta')


class ModuleStateError(MXNetError, RuntimeError, AssertionError):
    """A module method called before the module is ready for it (not bound, parameters
    not initialized, no optimizer).  MXNet raises a bare ``AssertionError`` there, so
    this is one too."""


def _require(ok, what):
    if not ok:
        raise ModuleStateError(what)


def _check_input_names(symbol, names, typename, throw):
    """Check that every name is an argument of ``symbol`` (MXNet's message)."""
    args = symbol.list_arguments()
    for name in names:
        if name in args:
            continue
        candidates = [arg for arg in args if not arg.endswith(_PARAM_ENDINGS)]
        msg = "\033[91mYou created Module with Module(..., %s_names=%s) but " \
              "input with name '%s' is not found in symbol.list_arguments(). " \
              "Did you mean one of:\n\t%s\033[0m" % (
                  typename, str(names), name, '\n\t'.join(candidates))
        if throw:
            raise ArgumentError(msg)
        warnings.warn(msg, stacklevel=3)


def _check_names_match(data_names, data_shapes, name, throw):
    """Check that the names of the shapes are the module's names."""
    actual = [x[0] for x in data_shapes]
    if sorted(data_names) != sorted(actual):
        msg = "Data provided by %s_shapes don't match names specified by %s_names (%s vs. %s)" \
              % (name, name, str(data_shapes), str(data_names))
        if throw:
            raise ArgumentError(msg)
        warnings.warn(msg, stacklevel=4)


def _parse_data_desc(data_names, label_names, data_shapes, label_shapes):
    """The shapes as DataDesc lists, their names checked."""
    data_shapes = [x if isinstance(x, DataDesc) else DataDesc(*x) for x in data_shapes]
    _check_names_match(data_names, data_shapes, 'data', True)
    if label_shapes is not None:
        label_shapes = [x if isinstance(x, DataDesc) else DataDesc(*x) for x in label_shapes]
        _check_names_match(label_names, label_shapes, 'label', False)
    else:
        _check_names_match(label_names, [], 'label', False)
    return data_shapes, label_shapes


class BaseModule:
    """The base class of modules: a computation that can be bound to shapes, hold
    parameters, run forward and backward and update its parameters.

    A module goes through these states: created; bound (``bind``: shapes known, memory
    allocated); parameters initialized (``init_params``); optimizer installed
    (``init_optimizer``).  On top of ``bind``, ``init_params``, ``init_optimizer``,
    ``forward``, ``backward``, ``update``, ``get_outputs`` and ``update_metric``, which
    subclasses implement, it provides ``fit``, ``score``, ``predict`` and
    ``iter_predict``.

    Parameters
    ----------
    logger : Logger
        Where the training loop logs (default: the ``logging`` module, i.e. the root
        logger, as MXNet).

    Examples
    --------
    >>> import symgraph as mx
    >>> data = mx.sym.Variable('data')
    >>> fc = mx.sym.FullyConnected(data, name='fc', num_hidden=4)
    >>> mod = mx.mod.Module(mx.sym.SoftmaxOutput(fc, name='softmax'))
    >>> mod.data_names, mod.output_names
    (['data'], ['softmax_output'])
    """

    def __init__(self, logger=logging):
        self.logger = logger
        self.binded = False
        self.for_training = False
        self.inputs_need_grad = False
        self.params_initialized = False
        self.optimizer_initialized = False
        self._symbol = None
        self._total_exec_bytes = 0

    # ------------------------------------------------------------------ high level
    def forward_backward(self, data_batch):
        """``forward`` (training) then ``backward``."""
        self.forward(data_batch, is_train=True)
        self.backward()

    def score(self, eval_data, eval_metric, num_batch=None, batch_end_callback=None,
              score_end_callback=None, reset=True, epoch=0, sparse_row_id_fn=None):
        """Run prediction on ``eval_data`` and evaluate ``eval_metric``.

        Parameters
        ----------
        eval_data : DataIter
        eval_metric : EvalMetric, str or list
        num_batch : int, optional
            Stop after this many batches (default: all).
        batch_end_callback, score_end_callback : callable or list of callables
            Called with a ``BatchEndParam`` after each batch / at the end.
        reset : bool
            Reset ``eval_data`` first.
        epoch : int
            Passed to the callbacks.
        sparse_row_id_fn : callable, optional
            For row-sparse parameters (see :meth:`prepare`).

        Returns
        -------
        list of (str, float)
            ``eval_metric.get_name_value()``.
        """
        _require(self.binded and self.params_initialized,
                 'score: bind the module and initialize its parameters first')
        if reset:
            eval_data.reset()
        if not isinstance(eval_metric, metric.EvalMetric):
            eval_metric = metric.create(eval_metric)
        eval_metric.reset()
        actual_num_batch = 0
        for nbatch, eval_batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(eval_batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(eval_batch, is_train=False)
            if isinstance(eval_batch, list):
                self.update_metric(eval_metric, [eb.label for eb in eval_batch],
                                   pre_sliced=True)
            else:
                self.update_metric(eval_metric, eval_batch.label)
            if batch_end_callback is not None:
                batch_end_params = BatchEndParam(epoch=epoch, nbatch=nbatch,
                                                 eval_metric=eval_metric, locals=locals())
                for callback in _as_list(batch_end_callback):
                    callback(batch_end_params)
            actual_num_batch += 1
        if score_end_callback:
            params = BatchEndParam(epoch=epoch, nbatch=actual_num_batch,
                                   eval_metric=eval_metric, locals=locals())
            for callback in _as_list(score_end_callback):
                callback(params)
        return eval_metric.get_name_value()

    def iter_predict(self, eval_data, num_batch=None, reset=True, sparse_row_id_fn=None):
        """Yield ``(outputs, nbatch, batch)`` for each batch, padding removed."""
        _require(self.binded and self.params_initialized,
                 'iter_predict: bind the module and initialize its parameters first')
        if reset:
            eval_data.reset()
        for nbatch, eval_batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(eval_batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(eval_batch, is_train=False)
            pad = eval_batch.pad or 0     # (None in a DataBatch made without it)
            outputs = [out[0:out.shape[0] - pad] for out in self.get_outputs()]
            yield (outputs, nbatch, eval_batch)

    def predict(self, eval_data, num_batch=None, merge_batches=True, reset=True,
                always_output_list=False, sparse_row_id_fn=None):
        """Run prediction and collect the outputs, padding removed.

        Parameters
        ----------
        eval_data : DataIter, NDArray or numpy.ndarray
            An array is one batch.
        num_batch : int, optional
            Stop after this many batches (default: all).
        merge_batches : bool
            Concatenate the batches' outputs (default); else a list per batch.
        reset : bool
            Reset ``eval_data`` first.
        always_output_list : bool
            With one output and merged batches, return ``[out]`` instead of ``out``.

        Returns
        -------
        NDArray, list of NDArray, or list of lists of NDArray
        """
        _require(self.binded and self.params_initialized,
                 'predict: bind the module and initialize its parameters first')
        if isinstance(eval_data, (nd.NDArray, np.ndarray)):
            if isinstance(eval_data, np.ndarray):
                eval_data = nd.array(eval_data)
            self.forward(DataBatch([eval_data]))
            return self.get_outputs()[0]
        if not isinstance(eval_data, DataIter):
            raise ArgumentError('eval_data must be of type NDArray or DataIter')
        if reset:
            eval_data.reset()
        output_list = []
        for nbatch, eval_batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(eval_batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(eval_batch, is_train=False)
            pad = eval_batch.pad or 0     # (None in a DataBatch made without it)
            outputs = [out[0:out.shape[0] - pad].copy() for out in self.get_outputs()]
            output_list.append(outputs)
        if len(output_list) == 0:
            return output_list
        if merge_batches:
            num_outputs = len(output_list[0])
            for out in output_list:
                if len(out) != num_outputs:
                    raise ArgumentError('Cannot merge batches, as num of outputs is not the '
                                        'same in mini-batches. Maybe bucketing is used?')
            output_list2 = [nd.concat(*[out[i] for out in output_list], dim=0)
                            for i in range(num_outputs)]
            if num_outputs == 1 and not always_output_list:
                return output_list2[0]
            return output_list2
        return output_list

    def fit(self, train_data, eval_data=None, eval_metric='acc',
            epoch_end_callback=None, batch_end_callback=None, kvstore='local',
            optimizer='sgd', optimizer_params=(('learning_rate', 0.01),),
            eval_end_callback=None, eval_batch_end_callback=None,
            initializer=Uniform(0.01), arg_params=None, aux_params=None,
            allow_missing=False, force_rebind=False, force_init=False, begin_epoch=0,
            num_epoch=None, validation_metric=None, monitor=None, sparse_row_id_fn=None):
        """Train the module's parameters.

        Parameters
        ----------
        train_data : DataIter
        eval_data : DataIter, optional
            Evaluated with ``validation_metric`` after each epoch.
        eval_metric : str, EvalMetric or list
            The training metric (default ``'acc'``).
        epoch_end_callback : callable or list
            Called with ``(epoch, symbol, arg_params, aux_params)``.
        batch_end_callback : callable or list
            Called with a ``BatchEndParam`` after each batch.
        kvstore : str or KVStore
            Default ``'local'``.
        optimizer : str or Optimizer
            Default ``'sgd'``.
        optimizer_params : dict or tuple of pairs
            Arguments of the optimizer (default learning rate 0.01).
        eval_end_callback, eval_batch_end_callback : callable or list
            Passed to :meth:`score` as its end and batch callbacks.
        initializer : Initializer
            For parameters not given by ``arg_params``/``aux_params``.
        arg_params, aux_params : dict of str to NDArray, optional
            Initial values; they take precedence over ``initializer``.
        allow_missing : bool
            Whether ``arg_params``/``aux_params`` may lack parameters (initialized then).
        force_rebind, force_init : bool
            Rebind / re-initialize even if done before.
        begin_epoch : int
            The first epoch's number (e.g. N + 1 when resuming from epoch N).
        num_epoch : int
            Train until this epoch (required).
        validation_metric : str, EvalMetric or list, optional
            Default: ``eval_metric``.
        monitor : Monitor, optional
            Installed on the executors; ``tic``/``toc_print`` around each batch.
        sparse_row_id_fn : callable, optional
            See :meth:`prepare`.
        """
        if num_epoch is None:
            raise ArgumentError('fit: please specify number of epochs (num_epoch)')
        self.bind(data_shapes=train_data.provide_data, label_shapes=train_data.provide_label,
                  for_training=True, force_rebind=force_rebind)
        if monitor is not None:
            self.install_monitor(monitor)
        self.init_params(initializer=initializer, arg_params=arg_params,
                         aux_params=aux_params, allow_missing=allow_missing,
                         force_init=force_init)
        self.init_optimizer(kvstore=kvstore, optimizer=optimizer,
                            optimizer_params=optimizer_params)
        if validation_metric is None:
            validation_metric = eval_metric
        if not isinstance(eval_metric, metric.EvalMetric):
            eval_metric = metric.create(eval_metric)

        for epoch in range(begin_epoch, num_epoch):
            tic = time.time()
            eval_metric.reset()
            nbatch = 0
            data_iter = iter(train_data)
            end_of_batch = False
            next_data_batch = next(data_iter)
            while not end_of_batch:
                data_batch = next_data_batch
                if monitor is not None:
                    monitor.tic()
                self.forward_backward(data_batch)
                self.update()
                if isinstance(data_batch, list):
                    self.update_metric(eval_metric, [db.label for db in data_batch],
                                       pre_sliced=True)
                else:
                    self.update_metric(eval_metric, data_batch.label)
                try:
                    next_data_batch = next(data_iter)       # prefetch the next batch
                    self.prepare(next_data_batch, sparse_row_id_fn=sparse_row_id_fn)
                except StopIteration:
                    end_of_batch = True
                if monitor is not None:
                    monitor.toc_print()
                if end_of_batch:
                    eval_name_vals = eval_metric.get_global_name_value()
                if batch_end_callback is not None:
                    batch_end_params = BatchEndParam(epoch=epoch, nbatch=nbatch,
                                                     eval_metric=eval_metric,
                                                     locals=locals())
                    for callback in _as_list(batch_end_callback):
                        callback(batch_end_params)
                nbatch += 1

            eval_name_vals = _over_workers(eval_metric, eval_name_vals,
                                           getattr(self, '_kvstore', None))
            for name, val in eval_name_vals:
                self.logger.info('Epoch[%d] Train-%s=%f', epoch, name, val)
            toc = time.time()
            self.logger.info('Epoch[%d] Time cost=%.3f', epoch, (toc - tic))

            # sync aux params across devices
            arg_params, aux_params = self.get_params()
            self.set_params(arg_params, aux_params)

            if epoch_end_callback is not None:
                for callback in _as_list(epoch_end_callback):
                    callback(epoch, self.symbol, arg_params, aux_params)

            if eval_data is not None:
                res = self.score(eval_data, validation_metric,
                                 score_end_callback=eval_end_callback,
                                 batch_end_callback=eval_batch_end_callback, epoch=epoch)
                for name, val in res:
                    self.logger.info('Epoch[%d] Validation-%s=%f', epoch, name, val)

            train_data.reset()

    # ------------------------------------------------------------------ symbol info
    @property
    def data_names(self):
        """A list of names for data required by this module."""
        raise NotImplementedError()

    @property
    def output_names(self):
        """A list of names for the outputs of this module."""
        raise NotImplementedError()

    @property
    def data_shapes(self):
        """A list of (name, shape) pairs specifying the data inputs to this module."""
        raise NotImplementedError()

    @property
    def label_shapes(self):
        """A list of (name, shape) pairs of the label inputs (may be None or [])."""
        raise NotImplementedError()

    @property
    def output_shapes(self):
        """A list of (name, shape) pairs specifying the outputs of this module."""
        raise NotImplementedError()

    # ------------------------------------------------------------------ parameters
    def get_params(self):
        """``(arg_params, aux_params)``: dicts of name to NDArray (copies on the CPU)."""
        raise NotImplementedError()

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        """Initialize the parameters and auxiliary states."""
        raise NotImplementedError()

    def set_params(self, arg_params, aux_params, allow_missing=False, force_init=True,
                   allow_extra=False):
        """Assign parameter and auxiliary state values.

        Parameters
        ----------
        arg_params, aux_params : dict of str to NDArray
        allow_missing : bool
            Whether the dicts may lack parameters (they are then initialized).
        force_init : bool
            Whether to set them even if already initialized (default True).
        allow_extra : bool
            Whether the dicts may hold names the symbol does not use.
        """
        self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params,
                         allow_missing=allow_missing, force_init=force_init,
                         allow_extra=allow_extra)

    def save_params(self, fname):
        """Save the parameters to ``fname`` (``arg:``/``aux:`` keys, MXNet's format)."""
        arg_params, aux_params = self.get_params()
        save_dict = {('arg:%s' % k): v.as_in_context(cpu()) for k, v in arg_params.items()}
        save_dict.update({('aux:%s' % k): v.as_in_context(cpu())
                          for k, v in aux_params.items()})
        nd.save(fname, save_dict)

    def load_params(self, fname):
        """Load parameters saved by :meth:`save_params` and set them."""
        save_dict = nd.load(fname)
        arg_params = {}
        aux_params = {}
        for k, value in save_dict.items():
            arg_type, _, name = k.partition(':')
            if arg_type == 'arg':
                arg_params[name] = value
            elif arg_type == 'aux':
                aux_params[name] = value
            else:
                raise ArgumentError('Invalid param file %s: entry %r is neither arg:<name> nor '
                                    'aux:<name>' % (fname, k))
        self.set_params(arg_params, aux_params)

    def get_states(self, merge_multi_context=True):
        """The state arrays (modules without states return ``[]``)."""
        _require(self.binded and self.params_initialized,
                 'get_states: bind the module and initialize its parameters first')
        if merge_multi_context:
            raise UsageError('this module has no states to merge')
        return []

    def set_states(self, states=None, value=None):
        """Set the states (modules without states accept nothing)."""
        _require(self.binded and self.params_initialized,
                 'set_states: bind the module and initialize its parameters first')
        if states or value:
            raise UsageError('this module has no states to set')

    def install_monitor(self, mon):
        """Install a monitor on all executors."""
        raise NotImplementedError()

    # ------------------------------------------------------------------ computation
    def prepare(self, data_batch, sparse_row_id_fn=None):
        """Prepare for a batch (switch bucket, pull row-sparse parameters)."""
        if sparse_row_id_fn is not None:
            warnings.warn(UserWarning("sparse_row_id_fn is not invoked for BaseModule."))

    def forward(self, data_batch, is_train=None):
        """Forward computation; a batch of other shapes reshapes the module."""
        raise NotImplementedError()

    def backward(self, out_grads=None):
        """Backward computation (``out_grads`` for outputs that are not losses)."""
        raise NotImplementedError()

    def get_outputs(self, merge_multi_context=True):
        """The outputs of the last forward."""
        raise NotImplementedError()

    def get_input_grads(self, merge_multi_context=True):
        """The gradients of the inputs from the last backward."""
        raise NotImplementedError()

    def update(self):
        """Update the parameters with the installed optimizer."""
        raise NotImplementedError()

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """Accumulate ``eval_metric`` on the outputs of the last forward."""
        raise NotImplementedError()

    # ------------------------------------------------------------------ setup
    def bind(self, data_shapes, label_shapes=None, for_training=True,
             inputs_need_grad=False, force_rebind=False, shared_module=None,
             grad_req='write'):
        """Bind the symbols to executors for the given shapes."""
        raise NotImplementedError()

    def init_optimizer(self, kvstore='local', optimizer='sgd',
                       optimizer_params=(('learning_rate', 0.01),), force_init=False):
        """Install an optimizer (and a kvstore)."""
        raise NotImplementedError()

    @property
    def symbol(self):
        """The symbol of this module (for BucketingModule, the current bucket's)."""
        return self._symbol


def _metric_leaves(m):
    if isinstance(m, metric.CompositeEvalMetric):
        return [leaf for child in m.metrics for leaf in _metric_leaves(child)]
    return [m]


def _over_workers(eval_metric, local, kvstore):
    """The epoch's training metric over every worker of a multi-process kvstore
    (``'dist_sync'``): the (sum, count) of each metric summed over the workers. MXNet logs
    each worker's own; metrics whose value is not sum / count (F1, MCC, Pearson, custom
    ``get``) keep the worker's own values, as does one process."""
    if kvstore is None or not getattr(kvstore, 'fuses_lists', False) or \
            kvstore.num_workers == 1:
        return local
    leaves = _metric_leaves(eval_metric)
    plain = all(type(m).get is metric.EvalMetric.get and
                type(m).get_global is metric.EvalMetric.get_global and
                isinstance(m.name, str) for m in leaves)
    if not plain:
        return local
    use_global = [m._has_global_stats for m in leaves]
    sums = np.array([[m.global_sum_metric, m.global_num_inst] if g else
                     [m.sum_metric, m.num_inst] for m, g in zip(leaves, use_global)],
                    dtype=np.float64)
    kvstore.allreduce_host(sums)
    return [(m.name, float(s / n) if n else float('nan')) for m, (s, n) in zip(leaves, sums)]
