"""``Module``: a Symbol bound to one executor per device (MXNet's ``mxnet.module.module``)."""
import logging
import warnings

from .. import context as ctx
from .. import ndarray as nd
from .. import optimizer as opt
from .. import kvstore as kvs
from ..base import MXNetError, ArgumentError, ArgumentTypeError, UsageError, atomic_write
from ..initializer import Uniform, InitDesc
from ..io import DataDesc
from ..model import (load_checkpoint, _create_kvstore, _initialize_kvstore, _update_params,
                     _update_params_on_kvstore)
from .base_module import (BaseModule, _check_input_names, _parse_data_desc, _require,
                          _PARAM_ENDINGS)
from .executor_group import DataParallelExecutorGroup

__all__ = ['Module']

#: the kvstore types MXNet knows (it makes a 'local' store of any other name, silently)
KVSTORE_TYPES = ('local', 'device', 'nccl', 'dist_sync', 'dist_async', 'dist_sync_device',
                 'dist_async_device', 'dist_device_sync', 'dist_device_async', 'horovod',
                 'byteps', 'local_update_cpu', 'local_allreduce_cpu', 'local_allreduce_device')


def _check_kvstore_type(kvstore):
    """A kvstore type name must exist, even on one device, where none is created."""
    if isinstance(kvstore, str) and kvstore.lower() not in KVSTORE_TYPES and \
            kvstore.lower() not in kvs.KVStoreBase.kv_registry:
        raise ArgumentError('kvstore %r is not a kvstore type; use one of %s (or None, or a '
                            'KVStore)' % (kvstore, ', '.join(KVSTORE_TYPES)))


class Module(BaseModule):
    """A module wrapping a Symbol: functionally MXNet's ``FeedForward`` under the
    module API.

    Parameters
    ----------
    symbol : Symbol
    data_names : list of str
        Default ``('data',)``.
    label_names : list of str
        Default ``('softmax_label',)``; names the symbol lacks are warned about.
    logger : Logger
        Default: the ``logging`` module (the root logger).
    context : Context or list of Context
        Default ``cpu()``.  With several, each batch is split among them.
    work_load_list : list of number, optional
        Relative batch share of each context (default: equal).
    fixed_param_names : list of str, optional
        Parameters that are not trained.
    state_names : list of str, optional
        Inputs that are not given by the data iterator but set with :meth:`set_states`.
    group2ctxs : dict or list, optional
        Accepted as MXNet's (symgraph runs each executor on one device).
    compression_params : dict, optional
        Gradient compression for the kvstore, e.g. ``{'type': '2bit', 'threshold': 0.5}``.

    Examples
    --------
    >>> import symgraph as mx
    >>> net = mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=3, name='fc')
    >>> mod = mx.mod.Module(mx.sym.SoftmaxOutput(net, name='softmax'))
    >>> mod.bind(data_shapes=[('data', (4, 5))], label_shapes=[('softmax_label', (4,))])
    >>> mod.init_params()
    >>> mod.output_shapes
    [('softmax_output', (4, 3))]
    """

    def __init__(self, symbol, data_names=('data',), label_names=('softmax_label',),
                 logger=logging, context=ctx.cpu(), work_load_list=None,
                 fixed_param_names=None, state_names=None, group2ctxs=None,
                 compression_params=None):
        super().__init__(logger=logger)
        if isinstance(context, ctx.Context):
            context = [context]
        self._context = list(context)
        if not self._context:
            raise ArgumentError('Module: context is an empty list')
        if work_load_list is None:
            work_load_list = [1] * len(self._context)
        if len(work_load_list) != len(self._context):
            raise ArgumentError('Module: work_load_list has %d entries for %d contexts'
                                % (len(work_load_list), len(self._context)))
        self._work_load_list = work_load_list
        self._group2ctxs = group2ctxs
        self._symbol = symbol

        data_names = list(data_names) if data_names is not None else []
        label_names = list(label_names) if label_names is not None else []
        state_names = list(state_names) if state_names is not None else []
        fixed_param_names = list(fixed_param_names) if fixed_param_names is not None else []
        _check_input_names(symbol, data_names, 'data', True)
        _check_input_names(symbol, label_names, 'label', False)
        _check_input_names(symbol, state_names, 'state', True)
        _check_input_names(symbol, fixed_param_names, 'fixed_param', True)

        arg_names = symbol.list_arguments()
        input_names = data_names + label_names + state_names
        self._param_names = [x for x in arg_names if x not in input_names]
        self._fixed_param_names = fixed_param_names
        self._aux_names = symbol.list_auxiliary_states()
        self._data_names = data_names
        self._label_names = label_names
        self._state_names = state_names
        self._output_names = symbol.list_outputs()

        self._arg_params = None
        self._aux_params = None
        self._params_dirty = False
        self._compression_params = compression_params
        self._optimizer = None
        self._kvstore = None
        self._update_on_kvstore = None
        self._overlap = None            # the store's GradientOverlap, if it overlaps
        self._updater = None
        self._preload_opt_states = None
        self._grad_req = None
        self._exec_group = None
        self._data_shapes = None
        self._label_shapes = None

    @staticmethod
    def load(prefix, epoch, load_optimizer_states=False, **kwargs):
        """A Module from a checkpoint (``prefix-symbol.json``, ``prefix-%04d.params`` and,
        with ``load_optimizer_states``, ``prefix-%04d.states``).

        The other keyword arguments go to :class:`Module` (``data_names``,
        ``label_names``, ``context``, ...).  The parameters are set at ``bind``.
        """
        sym, args, auxs = load_checkpoint(prefix, epoch)
        mod = Module(symbol=sym, **kwargs)
        mod._arg_params = args
        mod._aux_params = auxs
        mod.params_initialized = True
        if load_optimizer_states:
            mod._preload_opt_states = '%s-%04d.states' % (prefix, epoch)
        return mod

    def save_checkpoint(self, prefix, epoch, save_optimizer_states=False,
                        remove_amp_cast=True):
        """Save ``prefix-symbol.json``, ``prefix-%04d.params`` and, with
        ``save_optimizer_states``, ``prefix-%04d.states``.

        With a multi-process kvstore (``'dist_sync'``) rank 0 writes them, and every worker
        waits for it (a barrier)."""
        kv = self._kvstore
        if kv is not None and 'dist' in kv.type and kv.num_workers > 1:
            if kv.rank == 0:
                self._save_checkpoint(prefix, epoch, save_optimizer_states and
                                      not self._update_on_kvstore, remove_amp_cast)
            if save_optimizer_states and self._update_on_kvstore:
                # the store's own save: rank 0 writes, then a barrier
                state_name = '%s-%04d.states' % (prefix, epoch)
                self.save_optimizer_states(state_name)
                if kv.rank == 0:
                    logging.info('Saved optimizer state to \"%s\"', state_name)
            kv.barrier()
            return
        self._save_checkpoint(prefix, epoch, save_optimizer_states, remove_amp_cast)

    def _save_checkpoint(self, prefix, epoch, save_optimizer_states, remove_amp_cast):
        self._symbol.save('%s-symbol.json' % prefix, remove_amp_cast=remove_amp_cast)
        param_name = '%s-%04d.params' % (prefix, epoch)
        self.save_params(param_name)
        logging.info('Saved checkpoint to \"%s\"', param_name)
        if save_optimizer_states:
            state_name = '%s-%04d.states' % (prefix, epoch)
            self.save_optimizer_states(state_name)
            logging.info('Saved optimizer state to \"%s\"', state_name)

    def _reset_bind(self):
        self.binded = False
        self._exec_group = None
        self._data_shapes = None
        self._label_shapes = None

    # ------------------------------------------------------------------ info
    @property
    def data_names(self):
        """A list of names for data required by this module."""
        return self._data_names

    @property
    def label_names(self):
        """A list of names for labels required by this module."""
        return self._label_names

    @property
    def output_names(self):
        """A list of names for the outputs of this module."""
        return self._output_names

    @property
    def data_shapes(self):
        """The data shapes (DataDesc list) the module is bound to."""
        _require(self.binded, 'data_shapes: the module is not bound')
        return self._data_shapes

    @property
    def label_shapes(self):
        """The label shapes (DataDesc list), or None without labels."""
        _require(self.binded, 'label_shapes: the module is not bound')
        return self._label_shapes

    @property
    def output_shapes(self):
        """``(name, shape)`` of each output for the whole batch."""
        _require(self.binded, 'output_shapes: the module is not bound')
        return self._exec_group.get_output_shapes()

    # ------------------------------------------------------------------ parameters
    def get_params(self):
        """``(arg_params, aux_params)``, copies on the CPU of the devices' values."""
        _require(self.params_initialized,
                 'get_params: the parameters are not initialized (call init_params)')
        if self._params_dirty:
            self._sync_params_from_devices()
        return (self._arg_params, self._aux_params)

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        """Initialize the parameters and auxiliary states.

        Parameters
        ----------
        initializer : Initializer
            Called for parameters not in ``arg_params``/``aux_params``.
        arg_params, aux_params : dict of str to NDArray, optional
            Values to copy (they take precedence over ``initializer``).
        allow_missing : bool
            Whether the dicts may lack parameters (else a ``RuntimeError`` naming the
            first missing one, as MXNet).
        force_init : bool
            Re-initialize even if already initialized.
        allow_extra : bool
            Whether the dicts may hold names the symbol does not use (else a
            ``ValueError``).
        """
        if self.params_initialized and not force_init:
            warnings.warn("Parameters already initialized and force_init=False. "
                          "init_params call ignored.", stacklevel=2)
            return
        _require(self.binded, 'call bind before initializing the parameters')

        def _impl(name, arr, cache):
            if cache is not None:
                if name in cache:
                    cache_arr = cache[name]
                    if cache_arr is not arr:
                        if tuple(cache_arr.shape) != arr.shape:
                            raise ArgumentError('init_params: %r has shape %s but the module '
                                                'needs %s' % (str(name),
                                                              tuple(cache_arr.shape),
                                                              arr.shape))
                        cache_arr.copyto(arr)
                else:
                    if not allow_missing:
                        raise UsageError("%s is not presented" % name)
                    if initializer is not None:
                        initializer(name, arr)
            else:
                initializer(name, arr)

        # fill copies first: a failure (a missing or misshapen parameter) leaves the
        # module as it was
        new_args = {k: v.copy() for k, v in self._arg_params.items()}
        new_aux = {k: v.copy() for k, v in self._aux_params.items()}
        attrs = self._symbol.attr_dict()
        for name, arr in sorted(new_args.items()):
            _impl(InitDesc(name, attrs.get(name, None)), arr, arg_params)
        for name, arr in sorted(new_aux.items()):
            _impl(InitDesc(name, attrs.get(name, None)), arr, aux_params)
        if not allow_extra:
            extra = self._extra_names(arg_params, aux_params)
            if extra:       # MXNet ignores them silently; a misnamed parameter is likely
                warnings.warn('init_params: %s are not parameters of the symbol and are '
                              'ignored (pass allow_extra=True to silence this)' % extra,
                              stacklevel=2)
        for params, new in ((self._arg_params, new_args), (self._aux_params, new_aux)):
            for k, v in new.items():
                v.copyto(params[k])
        self.params_initialized = True
        self._params_dirty = False
        self._exec_group.set_params(self._arg_params, self._aux_params,
                                    allow_extra=allow_extra)

    def _extra_names(self, arg_params, aux_params):
        """Names in the dicts that are not arguments / auxiliary states of the symbol."""
        args = set(self._symbol.list_arguments())
        return sorted([k for k in (arg_params or {}) if k not in args] +
                      [k for k in (aux_params or {}) if k not in self._aux_names])

    def set_params(self, arg_params, aux_params, allow_missing=False, force_init=True,
                   allow_extra=False):
        """Assign parameter and auxiliary state values (see :meth:`init_params`)."""
        if not allow_missing:
            self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params,
                             allow_missing=allow_missing, force_init=force_init,
                             allow_extra=allow_extra)
            return
        if self.params_initialized and not force_init:
            warnings.warn("Parameters already initialized and force_init=False. "
                          "set_params call ignored.", stacklevel=2)
            return
        if not allow_extra:     # MXNet's error, raised before anything is set
            for params, names, what in ((arg_params, self._symbol.list_arguments(),
                                         'argument'),
                                        (aux_params, self._aux_names, 'auxiliary state')):
                for k in (params or {}):
                    if k not in names:
                        raise ArgumentError('Find name "%s" that is not in the %ss' % (k, what))
        self._exec_group.set_params(arg_params, aux_params, allow_extra=allow_extra)
        # self._arg_params were not updated: they are dirty now
        self._params_dirty = True
        self.params_initialized = True

    # ------------------------------------------------------------------ binding
    def bind(self, data_shapes, label_shapes=None, for_training=True,
             inputs_need_grad=False, force_rebind=False, shared_module=None,
             grad_req='write'):
        """Bind the symbol to one executor per device.

        Parameters
        ----------
        data_shapes : list of (str, tuple) or DataDesc
            Typically ``data_iter.provide_data``.
        label_shapes : list of (str, tuple) or DataDesc, optional
            Typically ``data_iter.provide_label``.
        for_training : bool
            Whether gradients are computed (default True).
        inputs_need_grad : bool
            Whether the gradients of the data inputs are computed.
        force_rebind : bool
            Rebind even if bound (e.g. to switch from training to prediction).
        shared_module : Module, optional
            A bound module (another bucket) whose parameters this one shares.
        grad_req : str, list or dict
            ``'write'``, ``'add'`` or ``'null'``.
        """
        if self.binded and not force_rebind:
            self.logger.warning('Already bound, ignoring bind()')
            return
        # (a rebinding that fails below leaves the module bound as it was)
        if not for_training and inputs_need_grad:
            raise ArgumentError('bind: inputs_need_grad=True needs for_training=True')
        data_shapes, label_shapes = _parse_data_desc(
            self.data_names, self.label_names, data_shapes, label_shapes)
        args = self._symbol.list_arguments()
        for desc in label_shapes or []:
            if desc.name not in args:
                raise ArgumentError(
                    "bind: label %r (from label_shapes %s) is not an argument of the "
                    "symbol, whose inputs are %s; create the Module with label_names "
                    "naming the symbol's labels (label_names=None for none)"
                    % (desc.name, [d.name for d in label_shapes],
                       [a for a in args if not a.endswith(_PARAM_ENDINGS)]))
        if shared_module is None and self.params_initialized:
            # parameters from Module.load or an earlier bind: MXNet binds with the gaps
            # left as zeros and fails later with a KeyError
            missing = [n for n in self._param_names if n not in self._arg_params] + \
                [n for n in self._aux_names if n not in self._aux_params]
            if missing:
                raise UsageError(
                    'bind: the parameters loaded for this module lack %s; load the '
                    'checkpoint with mx.model.load_checkpoint and pass its arg_params and '
                    'aux_params to fit or init_params with allow_missing=True to initialize '
                    'the missing ones' % missing)
        if shared_module is not None:
            if not isinstance(shared_module, Module) or not shared_module.binded or \
                    not shared_module.params_initialized:
                raise ArgumentError('bind: shared_module must be a bound Module with '
                                    'initialized parameters')
            shared_group = shared_module._exec_group
            if len(shared_group.execs) < len(self._context):
                raise ArgumentError('bind: shared_module has %d devices, this module %d'
                                    % (len(shared_group.execs), len(self._context)))
        else:
            shared_group = None

        group = DataParallelExecutorGroup(
            self._symbol, self._context, self._work_load_list, data_shapes, label_shapes,
            self._param_names, for_training, inputs_need_grad, shared_group,
            logger=self.logger, fixed_param_names=self._fixed_param_names,
            grad_req=grad_req, group2ctxs=self._group2ctxs, state_names=self._state_names)
        if self.params_initialized and shared_module is None:
            # re-binding (or parameters loaded from a checkpoint): copy them to the devices
            if self._params_dirty:
                self._sync_params_from_devices()
            group.set_params(self._arg_params, self._aux_params)
        self._reset_bind()
        self._exec_group = group
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._grad_req = grad_req
        self._data_shapes, self._label_shapes = data_shapes, label_shapes
        self._total_exec_bytes = self._exec_group._total_exec_bytes
        if shared_module is not None:
            self.params_initialized = True
            self._arg_params = shared_module._arg_params
            self._aux_params = shared_module._aux_params
        elif not self.params_initialized:
            # (MXNet asserts here that there are none yet, which fails on a force_rebind
            # before init_params; the parameters of the old binding were never set)
            # (a variable declared sparse, mx.sym.var(stype=...), gets a sparse array, as
            # MXNet's executor gives it; dense-backed: ndarray/sparse.py)
            stypes = {k: {'1': 'row_sparse', '2': 'csr'}.get(v.get('__storage_type__'),
                                                              'default')
                      for k, v in self._symbol.attr_dict().items()}
            self._arg_params = {name: nd.zeros(x[0].shape, dtype=x[0].dtype).tostype(
                stypes.get(name, 'default')) for name, x in zip(self._param_names,
                                                                self._exec_group.param_arrays)}
            self._aux_params = {name: nd.zeros(x[0].shape, dtype=x[0].dtype)
                                for name, x in zip(self._aux_names,
                                                   self._exec_group.aux_arrays)}
        if shared_module is not None and shared_module.optimizer_initialized:
            self.borrow_optimizer(shared_module)
        elif self.optimizer_initialized and self._kvstore:
            self._setup_overlap()       # a rebinding: the new executors report too
        self.binded = True

    def reshape(self, data_shapes, label_shapes=None):
        """Reshape the module for new input shapes (the parameters are kept)."""
        _require(self.binded, 'reshape: the module is not bound')
        data_shapes, label_shapes = _parse_data_desc(
            self.data_names, self.label_names, data_shapes, label_shapes)
        self._exec_group.reshape(data_shapes, label_shapes)
        self._data_shapes, self._label_shapes = data_shapes, label_shapes

    # ------------------------------------------------------------------ optimizer
    def init_optimizer(self, kvstore='local', optimizer='sgd',
                       optimizer_params=(('learning_rate', 0.01),), force_init=False):
        """Install an optimizer and, with several devices, a kvstore.

        Parameters
        ----------
        kvstore : str or KVStore
            Default ``'local'`` (with one device no store is used, as MXNet).
        optimizer : str or Optimizer
            Default ``'sgd'``; by name it gets ``rescale_grad = 1 / batch_size`` and the
            symbol (for ``lr_mult``/``wd_mult`` and wd only on weights and gammas).
        optimizer_params : dict or tuple of pairs
            Arguments of the optimizer.
        force_init : bool
            Replace an installed optimizer.
        """
        _require(self.binded and self.params_initialized,
                 'init_optimizer: bind the module and initialize its parameters first')
        if self.optimizer_initialized and not force_init:
            self.logger.warning('optimizer already initialized, ignoring...')
            return
        if self._params_dirty:
            self._sync_params_from_devices()
        _check_kvstore_type(kvstore)
        (kvstore, update_on_kvstore) = \
            _create_kvstore(kvstore, len(self._context), self._arg_params)
        batch_size = self._exec_group.batch_size
        if kvstore and 'dist' in kvstore.type and '_sync' in kvstore.type:
            batch_size *= kvstore.num_workers
        rescale_grad = 1.0 / batch_size

        idx2name = {}
        if update_on_kvstore:
            idx2name.update(enumerate(self._exec_group.param_names))
        else:
            for k in range(len(self._context)):
                idx2name.update({i * len(self._context) + k: n
                                 for i, n in enumerate(self._exec_group.param_names)})
        if isinstance(optimizer, str):
            optimizer_params = dict(optimizer_params)
            if 'rescale_grad' not in optimizer_params:
                optimizer_params['rescale_grad'] = rescale_grad
            optimizer = opt.create(optimizer, sym=self.symbol, param_idx2name=idx2name,
                                   **optimizer_params)
        else:
            if not isinstance(optimizer, opt.Optimizer):
                raise ArgumentTypeError('init_optimizer: optimizer must be a name or an Optimizer, '
                                        'not %s' % type(optimizer).__name__)
            if optimizer.rescale_grad != rescale_grad:
                warnings.warn(
                    "Optimizer created manually outside Module but rescale_grad " +
                    "is not normalized to 1.0/batch_size/num_workers (%s vs. %s). " % (
                        optimizer.rescale_grad, rescale_grad) +
                    "Is this intended?", stacklevel=2)
            if not optimizer.idx2name:
                optimizer.idx2name = idx2name.copy()

        self._optimizer = optimizer
        self._kvstore = kvstore
        self._update_on_kvstore = update_on_kvstore
        self._updater = None
        if kvstore:
            if self._compression_params:
                kvstore.set_gradient_compression(self._compression_params)
            if update_on_kvstore:
                kvstore.set_optimizer(self._optimizer)
            # copy the initialized local parameters to the kvstore
            _initialize_kvstore(kvstore=kvstore, param_arrays=self._exec_group.param_arrays,
                                arg_params=self._arg_params, param_names=self._param_names,
                                update_on_kvstore=update_on_kvstore)
        if not update_on_kvstore:
            self._updater = opt.get_updater(optimizer)
        self.optimizer_initialized = True
        self._setup_overlap()
        if self._preload_opt_states is not None:
            self.load_optimizer_states(self._preload_opt_states)
            self._preload_opt_states = None

    def _setup_overlap(self):
        """With a store that can (``'dist_sync'``: :meth:`DistKVStore.gradient_overlap`),
        start the all-reduce of the gradients while backward runs: the executors report
        each parameter's gradient as it becomes final and the store starts a bucket's
        all-reduce when all its gradients are; :meth:`update` waits for them. Not with
        ``grad_req='add'`` (the gradients are final only at the update)."""
        group, kv = self._exec_group, self._kvstore
        self._overlap = None
        group.set_grad_ready_callback(None)
        if not kv or not hasattr(kv, 'gradient_overlap') or not self.for_training or \
                group.grad_arrays is None or \
                any(group.grad_req.get(n) == 'add' for n in self._param_names):
            return
        order = [p for p in group.grad_ready_order() if group.grad_arrays[p][0] is not None]
        overlap = kv.gradient_overlap([group.param_names[p] for p in order],
                                      [group.grad_arrays[p] for p in order])
        if overlap is None:
            return
        self._overlap = overlap
        position = {p: i for i, p in enumerate(order)}

        def ready(p, device, grad):
            i = position.get(p)
            if i is not None:
                overlap.ready(i, device, grad)
        group.set_grad_ready_callback(ready)

    def borrow_optimizer(self, shared_module):
        """Use ``shared_module``'s optimizer, kvstore and updater (bucketing)."""
        _require(shared_module.optimizer_initialized,
                 'borrow_optimizer: the shared module has no optimizer')
        self._optimizer = shared_module._optimizer
        self._kvstore = shared_module._kvstore
        self._update_on_kvstore = shared_module._update_on_kvstore
        self._updater = shared_module._updater
        self.optimizer_initialized = True

    # ------------------------------------------------------------------ computation
    def forward(self, data_batch, is_train=None):
        """Forward computation; a batch of other shapes reshapes the module first.

        Parameters
        ----------
        data_batch : DataBatch
            Or anything with ``data`` (and ``label``, ``provide_data``,
            ``provide_label``), or a list of such batches, one per device.
        is_train : bool, optional
            Default: ``for_training``.
        """
        _require(self.binded and self.params_initialized,
                 'forward: bind the module and initialize its parameters first')
        curr_data_shapes = tuple(i.shape for i in self._data_shapes)
        if isinstance(data_batch, list):
            if not data_batch:
                raise ArgumentError('forward: Encountered empty data batch')
            new_data_shapes = []
            for i in range(len(data_batch[0].data)):
                shape = data_batch[0].data[i].shape
                for db in data_batch:
                    if shape != db.data[i].shape:
                        raise ArgumentError('All data batches in a list need to have the same '
                                            'shape')
                new_batch_size = len(data_batch) * shape[0]
                new_data_shapes.append((new_batch_size,) + shape[1:])
            new_data_shapes = tuple(new_data_shapes)
        else:
            new_data_shapes = tuple(i.shape for i in data_batch.data)
        if curr_data_shapes != new_data_shapes:
            if getattr(data_batch, 'provide_data', None):
                new_dshape = data_batch.provide_data
            else:
                new_dshape = [DataDesc(i.name, shape, i.dtype, i.layout)
                              for i, shape in zip(self._data_shapes, new_data_shapes)]
            if getattr(data_batch, 'provide_label', None):
                new_lshape = data_batch.provide_label
            elif getattr(data_batch, 'label', None):
                new_lshape = [DataDesc(i.name, j.shape, i.dtype, i.layout)
                              for i, j in zip(self._label_shapes, data_batch.label)]
            else:
                new_lshape = None
            try:
                self.reshape(new_dshape, new_lshape)
            except (MXNetError, ValueError) as e:
                raise type(e)('forward: the batch has data shapes %s, which the module '
                              'bound to %s cannot take: %s'
                              % ([(d[0], tuple(d[1])) for d in new_dshape],
                                 [(d.name, d.shape) for d in self._data_shapes], e)) from e
        self._exec_group.forward(data_batch, is_train)

    def backward(self, out_grads=None):
        """Backward computation (``out_grads`` for outputs that are not losses)."""
        _require(self.binded and self.params_initialized,
                 'backward: bind the module and initialize its parameters first')
        self._exec_group.backward(out_grads=out_grads)

    def update(self):
        """Update the parameters from the last backward's gradients with the optimizer
        (through the kvstore where there is one)."""
        _require(self.binded and self.params_initialized,
                 'update: bind the module and initialize its parameters first')
        _require(self.optimizer_initialized,
                 'update: no optimizer installed; call init_optimizer first')
        self._params_dirty = True
        group = self._exec_group
        if self._update_on_kvstore:
            _update_params_on_kvstore(group.param_arrays, group.grad_arrays,
                                      self._kvstore, group.param_names)
        else:
            _update_params(group.param_arrays, group.grad_arrays, updater=self._updater,
                           num_device=len(self._context), kvstore=self._kvstore,
                           param_names=group.param_names)

    def get_outputs(self, merge_multi_context=True):
        """The outputs of the last forward, merged over devices or per device."""
        _require(self.binded and self.params_initialized,
                 'get_outputs: bind the module and initialize its parameters first')
        return self._exec_group.get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        """The gradients of the data inputs (bind with ``inputs_need_grad=True``)."""
        _require(self.binded and self.params_initialized and self.inputs_need_grad,
                 'get_input_grads: bind with inputs_need_grad=True and initialize the '
                 'parameters first')
        return self._exec_group.get_input_grads(merge_multi_context=merge_multi_context)

    def get_states(self, merge_multi_context=True):
        """The state arrays."""
        _require(self.binded and self.params_initialized,
                 'get_states: bind the module and initialize its parameters first')
        return self._exec_group.get_states(merge_multi_context=merge_multi_context)

    def set_states(self, states=None, value=None):
        """Set the states from per-device arrays or to a scalar ``value``."""
        _require(self.binded and self.params_initialized,
                 'set_states: bind the module and initialize its parameters first')
        self._exec_group.set_states(states, value)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """Accumulate ``eval_metric`` on the last forward's outputs and ``labels``."""
        self._exec_group.update_metric(eval_metric, labels, pre_sliced)

    def _sync_params_from_devices(self):
        """Copy the devices' parameters into ``_arg_params``/``_aux_params``."""
        self._exec_group.get_params(self._arg_params, self._aux_params)
        self._params_dirty = False

    def save_optimizer_states(self, fname):
        """Save the optimizer (updater) states to ``fname``."""
        _require(self.optimizer_initialized,
                 'save_optimizer_states: no optimizer installed (init_optimizer)')
        if self._update_on_kvstore:
            self._kvstore.save_optimizer_states(fname)
        else:
            states = self._updater.get_states()
            with atomic_write(fname, 'wb') as fout:
                fout.write(states)

    def load_optimizer_states(self, fname):
        """Load optimizer (updater) states saved by :meth:`save_optimizer_states`."""
        _require(self.optimizer_initialized,
                 'load_optimizer_states: no optimizer installed (init_optimizer)')
        if self._update_on_kvstore:
            self._kvstore.load_optimizer_states(fname)
        else:
            with open(fname, 'rb') as f:
                self._updater.set_states(f.read())

    def install_monitor(self, mon):
        """Install a monitor on all executors."""
        _require(self.binded, 'install_monitor: the module is not bound')
        self._exec_group.install_monitor(mon)

    def prepare(self, data_batch, sparse_row_id_fn=None):
        """Prepare for a batch: symgraph's parameters are dense, so only MXNet's warning
        about a ``sparse_row_id_fn`` that has nothing to do remains."""
        _require(self.binded, 'prepare: the module is not bound')
        if sparse_row_id_fn is not None:
            if not self._kvstore or not self._update_on_kvstore:
                warnings.warn(UserWarning("Parameters are not updated in the KVStore. "
                                          "No need to call sparse_row_id_fn."))
            else:
                row_ids = sparse_row_id_fn(data_batch)
                if not isinstance(row_ids, dict):
                    raise ArgumentTypeError('Expected dict output from sparse_row_id_fn')
                for param_name in row_ids:
                    warnings.warn(UserWarning("%s.stype is not 'row_sparse'. No need to "
                                              "perform row_sparse_pull." % param_name))
