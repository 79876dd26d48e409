"""``BucketingModule``: one Module per bucket key, all sharing one set of parameters
(MXNet's ``mxnet.module.bucketing_module``)."""
import logging
import warnings

import numpy as np

from .. import context as ctx
from .. import ndarray as nd
from .. import symbol as sym
from ..initializer import Uniform
from ..model import load_params
from ..name import NameManager
from .base_module import BaseModule, _check_input_names, _require
from .module import Module
from ..base import ArgumentError

__all__ = ['BucketingModule']


class BucketingModule(BaseModule):
    """A module for inputs of varying length: a symbol per bucket key, parameters shared.

    Parameters
    ----------
    sym_gen : callable
        ``sym_gen(bucket_key)`` returns ``(symbol, data_names, label_names)``.
    default_bucket_key : hashable
        The key of the default (largest) bucket, bound first; the other buckets share its
        parameter arrays.
    logger : Logger
    context : Context or list of Context
    work_load_list : list of number, optional
    fixed_param_names : list of str, optional
    state_names : list of str, optional
    group2ctxs : dict or list, optional
    compression_params : dict, optional
        As for :class:`Module`.

    Examples
    --------
    >>> import symgraph as mx
    >>> def sym_gen(seq_len):
    ...     data = mx.sym.var('data')
    ...     emb = mx.sym.Embedding(data, input_dim=20, output_dim=4, name='embed')
    ...     pooled = mx.sym.sum(emb, axis=1) / seq_len
    ...     fc = mx.sym.FullyConnected(pooled, num_hidden=2, name='fc')
    ...     return mx.sym.SoftmaxOutput(fc, name='softmax'), ('data',), ('softmax_label',)
    >>> mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=10)
    >>> mod.bind([('data', (3, 10))], [('softmax_label', (3,))])
    >>> mod.init_params()
    >>> mod.switch_bucket(5, [('data', (3, 5))], [('softmax_label', (3,))])
    >>> sorted(mod._buckets)
    [5, 10]
    """

    def __init__(self, sym_gen, default_bucket_key=None, logger=logging,
                 context=ctx.cpu(), work_load_list=None, fixed_param_names=None,
                 state_names=None, group2ctxs=None, compression_params=None):
        super().__init__(logger=logger)
        if default_bucket_key is None:
            raise ArgumentError('BucketingModule needs a default_bucket_key')
        self._default_bucket_key = default_bucket_key
        self._sym_gen = sym_gen
        symbol, data_names, label_names = self._call_sym_gen(default_bucket_key)
        data_names = list(data_names) if data_names is not None else []
        label_names = list(label_names) if label_names is not None else []
        state_names = list(state_names) if state_names is not None else []
        fixed_param_names = list(fixed_param_names) if fixed_param_names is not None else []
        _check_input_names(symbol, data_names, 'data', True)
        _check_input_names(symbol, label_names, 'label', False)
        _check_input_names(symbol, state_names, 'state', True)
        _check_input_names(symbol, fixed_param_names, 'fixed_param', True)
        self._compression_params = compression_params
        self._fixed_param_names = fixed_param_names
        self._state_names = state_names
        self._context = context
        self._work_load_list = work_load_list
        self._group2ctxs = group2ctxs
        self._buckets = {}
        self._curr_module = None
        self._curr_bucket_key = None
        self._params_dirty = False
        self._monitor = None
        self._grad_req = None

    def _reset_bind(self):
        self.binded = False
        self._buckets = {}
        self._curr_module = None
        self._curr_bucket_key = None

    def _call_sym_gen(self, *args, **kwargs):
        with NameManager():     # the same automatic names in every bucket
            return self._sym_gen(*args, **kwargs)

    def _new_module(self, symbol, data_names, label_names):
        return Module(symbol, data_names, label_names, logger=self.logger,
                      context=self._context, work_load_list=self._work_load_list,
                      fixed_param_names=self._fixed_param_names,
                      state_names=self._state_names, group2ctxs=self._group2ctxs,
                      compression_params=self._compression_params)

    # ------------------------------------------------------------------ info
    @property
    def data_names(self):
        """The data names of the current bucket (the default one before binding)."""
        if self.binded:
            return self._curr_module.data_names
        _, data_names, _ = self._call_sym_gen(self._default_bucket_key)
        return data_names

    @property
    def output_names(self):
        """The output names of the current bucket (the default one before binding)."""
        if self.binded:
            return self._curr_module.output_names
        symbol, _, _ = self._call_sym_gen(self._default_bucket_key)
        return symbol.list_outputs()

    @property
    def data_shapes(self):
        """The current bucket's data shapes."""
        _require(self.binded, 'data_shapes: the module is not bound')
        return self._curr_module.data_shapes

    @property
    def label_shapes(self):
        """The current bucket's label shapes."""
        _require(self.binded, 'label_shapes: the module is not bound')
        return self._curr_module.label_shapes

    @property
    def output_shapes(self):
        """The current bucket's output shapes."""
        _require(self.binded, 'output_shapes: the module is not bound')
        return self._curr_module.output_shapes

    # ------------------------------------------------------------------ parameters
    def get_params(self):
        """``(arg_params, aux_params)`` shared by all buckets."""
        _require(self.params_initialized, 'get_params: the parameters are not initialized')
        self._curr_module._params_dirty = self._params_dirty
        params = self._curr_module.get_params()
        self._params_dirty = False
        return params

    def set_params(self, arg_params, aux_params, allow_missing=False, force_init=True,
                   allow_extra=False):
        """Assign parameter values (see :meth:`Module.set_params`)."""
        if not allow_missing:
            self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params,
                             allow_missing=allow_missing, force_init=force_init,
                             allow_extra=allow_extra)
            return
        if self.params_initialized and not force_init:
            warnings.warn("Parameters already initialized and force_init=False. "
                          "set_params call ignored.", stacklevel=2)
            return
        self._curr_module.set_params(arg_params, aux_params, allow_missing=allow_missing,
                                     force_init=force_init, allow_extra=allow_extra)
        self._params_dirty = True
        self.params_initialized = True

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        """Initialize the shared parameters (see :meth:`Module.init_params`)."""
        if self.params_initialized and not force_init:
            return
        _require(self.binded, 'call bind before initializing the parameters')
        self._curr_module.init_params(initializer=initializer, arg_params=arg_params,
                                      aux_params=aux_params, allow_missing=allow_missing,
                                      force_init=force_init, allow_extra=allow_extra)
        self._params_dirty = False
        self.params_initialized = True

    def get_states(self, merge_multi_context=True):
        """The current bucket's states."""
        _require(self.binded and self.params_initialized,
                 'get_states: bind the module and initialize its parameters first')
        return self._curr_module.get_states(merge_multi_context=merge_multi_context)

    def set_states(self, states=None, value=None):
        """Set the current bucket's states."""
        _require(self.binded and self.params_initialized,
                 'set_states: bind the module and initialize its parameters first')
        self._curr_module.set_states(states, value)

    # ------------------------------------------------------------------ binding
    def bind(self, data_shapes, label_shapes=None, for_training=True,
             inputs_need_grad=False, force_rebind=False, shared_module=None,
             grad_req='write'):
        """Bind the default bucket; the others are bound by :meth:`switch_bucket`."""
        if shared_module is not None:
            raise ArgumentError('shared_module for BucketingModule is not supported')
        if self.params_initialized:
            arg_params, aux_params = self.get_params()
        if force_rebind:
            self._reset_bind()
        if self.binded:
            self.logger.warning('Already bound, ignoring bind()')
            return
        symbol, data_names, label_names = self._call_sym_gen(self._default_bucket_key)
        module = self._buckets.get(self._default_bucket_key)
        if module is None:
            module = self._new_module(symbol, data_names, label_names)
        module.bind(data_shapes, label_shapes, for_training, inputs_need_grad,
                    force_rebind=False, shared_module=None, grad_req=grad_req)
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self.binded = True
        self._grad_req = grad_req
        self._curr_module = module
        self._curr_bucket_key = self._default_bucket_key
        self._buckets[self._default_bucket_key] = module
        if self.params_initialized:
            self.set_params(arg_params, aux_params)

    def switch_bucket(self, bucket_key, data_shapes, label_shapes=None):
        """Make ``bucket_key`` current, binding its module (sharing the default bucket's
        parameters) the first time."""
        _require(self.binded, 'call bind before switching bucket')
        if bucket_key not in self._buckets:
            symbol, data_names, label_names = self._call_sym_gen(bucket_key)
            module = self._new_module(symbol, data_names, label_names)
            module.bind(data_shapes, label_shapes, self._curr_module.for_training,
                        self._curr_module.inputs_need_grad, force_rebind=False,
                        shared_module=self._buckets[self._default_bucket_key],
                        grad_req=self._grad_req)
            if self._monitor is not None:
                module.install_monitor(self._monitor)
            self._buckets[bucket_key] = module
        else:
            module = self._buckets[bucket_key]
            if not module.binded:
                module.bind(data_shapes, label_shapes, self._curr_module.for_training,
                            self._curr_module.inputs_need_grad, force_rebind=False,
                            shared_module=self._buckets[self._default_bucket_key],
                            grad_req=self._grad_req)
        self._curr_module = self._buckets[bucket_key]
        self._curr_bucket_key = bucket_key

    def init_optimizer(self, kvstore='local', optimizer='sgd',
                       optimizer_params=(('learning_rate', 0.01),), force_init=False):
        """Install one optimizer, shared by every bucket."""
        _require(self.binded and self.params_initialized,
                 'init_optimizer: bind the module and initialize its parameters first')
        if self.optimizer_initialized and not force_init:
            self.logger.warning('optimizer already initialized, ignoring.')
            return
        self._curr_module.init_optimizer(kvstore, optimizer, optimizer_params,
                                         force_init=force_init)
        for mod in self._buckets.values():
            if mod is not self._curr_module:
                mod.borrow_optimizer(self._curr_module)
        self.optimizer_initialized = True

    # ------------------------------------------------------------------ computation
    def prepare(self, data_batch, sparse_row_id_fn=None):
        """Bind the batch's bucket if it is new (the current bucket stays current)."""
        _require(self.binded and self.params_initialized,
                 'prepare: bind the module and initialize its parameters first')
        bucket_key = data_batch.bucket_key
        original_bucket_key = self._curr_bucket_key
        self.switch_bucket(bucket_key, data_batch.provide_data, data_batch.provide_label)
        self._curr_module.prepare(data_batch, sparse_row_id_fn=sparse_row_id_fn)
        self.switch_bucket(original_bucket_key, None, None)

    def forward(self, data_batch, is_train=None):
        """Switch to the batch's bucket (``data_batch.bucket_key``) and run forward."""
        _require(self.binded and self.params_initialized,
                 'forward: bind the module and initialize its parameters first')
        if getattr(data_batch, 'bucket_key', None) is None:
            raise ArgumentError('BucketingModule.forward: the batch has no bucket_key (give '
                                'DataBatch(..., bucket_key=..., provide_data=..., '
                                'provide_label=...))')
        self.switch_bucket(data_batch.bucket_key, data_batch.provide_data,
                           data_batch.provide_label)
        self._curr_module.forward(data_batch, is_train=is_train)

    def backward(self, out_grads=None):
        """Backward on the current bucket."""
        _require(self.binded and self.params_initialized,
                 'backward: bind the module and initialize its parameters first')
        self._curr_module.backward(out_grads=out_grads)

    def update(self):
        """Update the shared parameters from the current bucket's gradients."""
        _require(self.binded and self.params_initialized,
                 'update: bind the module and initialize its parameters first')
        _require(self.optimizer_initialized,
                 'update: no optimizer installed; call init_optimizer first')
        self._params_dirty = True
        self._curr_module.update()

    def get_outputs(self, merge_multi_context=True):
        """The current bucket's outputs."""
        _require(self.binded and self.params_initialized,
                 'get_outputs: bind the module and initialize its parameters first')
        return self._curr_module.get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        """The current bucket's input gradients."""
        _require(self.binded and self.params_initialized and self.inputs_need_grad,
                 'get_input_grads: bind with inputs_need_grad=True first')
        return self._curr_module.get_input_grads(merge_multi_context=merge_multi_context)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """Accumulate ``eval_metric`` on the current bucket's outputs."""
        _require(self.binded and self.params_initialized,
                 'update_metric: bind the module and initialize its parameters first')
        self._curr_module.update_metric(eval_metric, labels, pre_sliced)

    @property
    def symbol(self):
        """The symbol of the current bucket."""
        _require(self.binded, 'symbol: the module is not bound')
        return self._curr_module.symbol

    def install_monitor(self, mon):
        """Install a monitor on every bucket's executors (and later buckets')."""
        _require(self.binded, 'install_monitor: the module is not bound')
        self._monitor = mon
        for mod in self._buckets.values():
            mod.install_monitor(mon)

    # ------------------------------------------------------------------ files
    def save_checkpoint(self, prefix, epoch, remove_amp_cast=False):
        """Save the shared parameters, each bucket's symbol
        (``prefix-<key>-symbol.json``) and the bucket keys (``prefix.buckets``)."""
        if not self._buckets:
            raise ArgumentError('Empty BucketingModule cannot be saved')
        param_name = '%s-%04d.params' % (prefix, epoch)
        self.save_params(param_name)
        for bucket_key in self._buckets:
            symbol, _, _ = self._sym_gen(bucket_key)
            symbol.save('%s-%s-symbol.json' % (prefix, bucket_key),
                        remove_amp_cast=remove_amp_cast)
        nd.save('%s.buckets' % prefix, nd.array(list(self._buckets.keys()), dtype=np.int32))

    @staticmethod
    def load(prefix, epoch, sym_gen=None, default_bucket_key=None, **kwargs):
        """A BucketingModule from :meth:`save_checkpoint`'s files."""
        if sym_gen is None:
            raise ArgumentError('sym_gen is required for loading BucketingModule')
        if default_bucket_key is None:
            raise ArgumentError('default_bucket_key is required for loading BucketingModule')
        buckets = nd.load('%s.buckets' % prefix)
        buckets = list(buckets[0].asnumpy().astype('int32'))
        bucketing_mod = BucketingModule(sym_gen, default_bucket_key, **kwargs)
        for bucket_key in buckets:
            _, data_names, label_names = sym_gen(bucket_key)
            symbol = sym.load('%s-%s-symbol.json' % (prefix, bucket_key))
            bucketing_mod._buckets[bucket_key] = Module(symbol, data_names, label_names,
                                                        **kwargs)
            if bucket_key == default_bucket_key:
                bucketing_mod._curr_module = bucketing_mod._buckets[bucket_key]
        if bucketing_mod._curr_module is None:
            raise ArgumentError('%s.buckets has no bucket %r (it has %s)'
                                % (prefix, default_bucket_key, buckets))
        arg_params, aux_params = load_params(prefix, epoch)
        bucketing_mod._curr_module._arg_params = arg_params
        bucketing_mod._curr_module._aux_params = aux_params
        bucketing_mod._curr_module.params_initialized = True
        bucketing_mod.params_initialized = True
        return bucketing_mod

    @staticmethod
    def load_dict(sym_dict=None, sym_gen=None, default_bucket_key=None, arg_params=None,
                  aux_params=None, **kwargs):
        """A BucketingModule from a dict of bucket key to symbol and shared parameters."""
        for value, what in ((sym_dict, 'sym_dict'), (arg_params, 'arg_params'),
                            (aux_params, 'aux_params'),
                            (default_bucket_key, 'default_bucket_key')):
            if value is None:
                raise ArgumentError('%s needs to be provided for BucketingModule.load_dict'
                                    % what)
        bucketing_mod = BucketingModule(sym_gen, default_bucket_key, **kwargs)
        for bucket_key, loaded_sym in sym_dict.items():
            _, data_names, label_names = sym_gen(default_bucket_key)
            bucketing_mod._buckets[bucket_key] = Module(loaded_sym, data_names, label_names,
                                                        **kwargs)
            if bucket_key == default_bucket_key:
                bucketing_mod._curr_module = bucketing_mod._buckets[bucket_key]
        bucketing_mod._curr_module._arg_params = arg_params
        bucketing_mod._curr_module._aux_params = aux_params
        bucketing_mod._curr_module.params_initialized = True
        bucketing_mod.params_initialized = True
        return bucketing_mod
