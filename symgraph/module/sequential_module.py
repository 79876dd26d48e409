"""``SequentialModule``: modules chained one after another (MXNet's
``mxnet.module.sequential_module``)."""
import copy
import logging
import warnings

from ..initializer import Uniform
from .base_module import BaseModule, _require
from .module import Module
from ..base import ArgumentError

__all__ = ['SequentialModule']


class SequentialModule(BaseModule):
    """A container that chains modules: each one's outputs are the next one's data.

    Building the whole network as one symbol is more flexible and faster; this is a
    convenience for composing modules (e.g. a :class:`PythonLossModule` on top).

    Parameters
    ----------
    logger : Logger

    Examples
    --------
    >>> import symgraph as mx
    >>> net = mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=4, name='fc')
    >>> seq = mx.mod.SequentialModule()
    >>> seq = seq.add(mx.mod.Module(net, label_names=None))
    >>> seq = seq.add(mx.mod.PythonLossModule(), take_labels=True, auto_wiring=True)
    >>> seq.bind([('data', (2, 3))], [('softmax_label', (2,))])
    >>> seq.output_shapes
    [('pyloss_output', (2, 4))]
    """

    META_TAKE_LABELS = 'take_labels'
    META_AUTO_WIRING = 'auto_wiring'

    def __init__(self, logger=logging):
        super().__init__(logger=logger)
        self._modules = []
        self._metas = []
        self._label_shapes = None
        self._data_shapes = None
        self._meta_keys = {getattr(SequentialModule, x) for x in dir(SequentialModule)
                           if x.startswith('META_')}

    def add(self, module, **kwargs):
        """Append ``module`` to the chain and return ``self``.

        Keyword arguments are meta information: ``take_labels=True`` gives the module the
        batch's labels (for its loss and the metric); ``auto_wiring=True`` renames the
        previous module's outputs to this module's data names.
        """
        for key in kwargs:
            if key not in self._meta_keys:
                raise ArgumentError('Unknown meta "%s", a typo? Known: %s'
                                    % (key, sorted(self._meta_keys)))
        self._modules.append(module)
        self._metas.append(kwargs)
        # a new module must be bound and initialized with the others
        self.binded = False
        self.params_initialized = False
        self.optimizer_initialized = False
        return self

    @property
    def data_names(self):
        """The first module's data names."""
        if self._modules:
            return self._modules[0].data_names
        return []

    @property
    def output_names(self):
        """The last module's output names."""
        if self._modules:
            return self._modules[-1].output_names
        return []

    @property
    def data_shapes(self):
        """The first module's data shapes."""
        _require(self.binded, 'data_shapes: the module is not bound')
        return self._modules[0].data_shapes

    @property
    def label_shapes(self):
        """The label shapes, or None when no module takes labels."""
        _require(self.binded, 'label_shapes: the module is not bound')
        return self._label_shapes

    @property
    def output_shapes(self):
        """The last module's output shapes."""
        _require(self.binded, 'output_shapes: the module is not bound')
        return self._modules[-1].output_shapes

    def get_params(self):
        """The parameters of all modules, merged."""
        _require(self.binded and self.params_initialized,
                 'get_params: bind the module and initialize its parameters first')
        arg_params = dict()
        aux_params = dict()
        for module in self._modules:
            arg, aux = module.get_params()
            arg_params.update(arg)
            aux_params.update(aux)
        return (arg_params, aux_params)

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        """Initialize every module's parameters; parameter names must be unique."""
        if self.params_initialized and not force_init:
            return
        _require(self.binded, 'call bind before initializing the parameters')
        if not allow_extra:
            # every module gets all the parameters and takes its own: only names that no
            # module has are extra
            known = set()
            for module in self._modules:
                sym = module.symbol if isinstance(module, Module) else None
                if sym is None:
                    known = None        # a module whose names are not known
                    break
                known |= set(sym.list_arguments()) | set(sym.list_auxiliary_states())
            extra = [] if known is None else \
                sorted(k for k in list(arg_params or {}) + list(aux_params or {})
                       if k not in known)
            if extra:
                warnings.warn('init_params: %s are not parameters of any module and are '
                              'ignored (pass allow_extra=True to silence this)' % extra,
                              stacklevel=2)
        for module in self._modules:
            module.init_params(initializer=initializer, arg_params=arg_params,
                               aux_params=aux_params, allow_missing=allow_missing,
                               force_init=force_init, allow_extra=True)

        def _check_name(known_names, new_names, modules, i):
            for name in new_names:
                if name in known_names:
                    raise ArgumentError(
                        'Duplicated parameter names: name "%s" in layer %d (%s) is already '
                        'used in layer %d (%s).' % (name, i, type(modules[i]),
                                                    known_names[name],
                                                    type(modules[known_names[name]])))
                known_names[name] = i
        arg_names = dict()
        aux_names = dict()
        for i_layer, module in enumerate(self._modules):
            arg_params, aux_params = module.get_params()
            _check_name(arg_names, arg_params.keys(), self._modules, i_layer)
            _check_name(aux_names, aux_params.keys(), self._modules, i_layer)
        self.params_initialized = True

    def bind(self, data_shapes, label_shapes=None, for_training=True,
             inputs_need_grad=False, force_rebind=False, shared_module=None,
             grad_req='write'):
        """Bind every module; each one's data shapes are the previous one's outputs."""
        if self.binded and not force_rebind:
            self.logger.warning('Already bound, ignoring bind()')
            return
        if inputs_need_grad and not for_training:
            raise ArgumentError('bind: inputs_need_grad=True needs for_training=True')
        if shared_module is not None:
            raise ArgumentError('Shared module is not supported')
        if not self._modules:
            raise ArgumentError('Attempting to bind an empty SequentialModule')
        self.binded = True
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        # the same label shapes are given to every module that takes labels
        self._label_shapes = label_shapes
        my_data_shapes = data_shapes
        anybody_ever_needs_label = False
        for i_layer, module in enumerate(self._modules):
            meta = self._metas[i_layer]
            if meta.get(SequentialModule.META_TAKE_LABELS, False):
                my_label_shapes = label_shapes
                anybody_ever_needs_label = True
            else:
                my_label_shapes = None
            my_inputs_need_grad = bool(inputs_need_grad or (for_training and i_layer > 0))
            if meta.get(SequentialModule.META_AUTO_WIRING, False):
                data_names = module.data_names
                if len(data_names) != len(my_data_shapes):
                    self.binded = False
                    raise ArgumentError('auto_wiring: module %d has data names %s for %d '
                                        'inputs %s' % (i_layer, data_names, len(my_data_shapes),
                                                       my_data_shapes))
                my_data_shapes = [(new_name, shape) for (new_name, (_, shape))
                                  in zip(data_names, my_data_shapes)]
            try:
                module.bind(data_shapes=my_data_shapes, label_shapes=my_label_shapes,
                            for_training=for_training, inputs_need_grad=my_inputs_need_grad,
                            force_rebind=force_rebind, shared_module=None,
                            grad_req=grad_req)
            except BaseException:
                self.binded = False
                raise
            my_data_shapes = module.output_shapes
        if not anybody_ever_needs_label:
            self._label_shapes = None

    def init_optimizer(self, kvstore='local', optimizer='sgd',
                       optimizer_params=(('learning_rate', 0.01),), force_init=False):
        """Install the optimizer on every module."""
        _require(self.binded and self.params_initialized,
                 'init_optimizer: bind the module and initialize its parameters first')
        if self.optimizer_initialized and not force_init:
            self.logger.warning('optimizer already initialized, ignoring.')
            return
        for module in self._modules:
            module.init_optimizer(kvstore=kvstore, optimizer=optimizer,
                                  optimizer_params=optimizer_params, force_init=force_init)
        self.optimizer_initialized = True

    def forward(self, data_batch, is_train=None):
        """Forward through the chain."""
        _require(self.binded and self.params_initialized,
                 'forward: bind the module and initialize its parameters first')
        data_batch = copy.copy(data_batch)
        for i_layer, module in enumerate(self._modules):
            module.forward(data_batch, is_train=is_train)
            if i_layer + 1 == len(self._modules):
                break
            data_batch.data = module.get_outputs()
            if hasattr(data_batch, 'provide_data'):
                data_names = [x[0] for x in module.output_shapes]
                data_batch.provide_data = [(name, x.shape) for name, x in
                                           zip(data_names, data_batch.data)]

    def backward(self, out_grads=None):
        """Backward through the chain, last module first."""
        _require(self.binded and self.params_initialized,
                 'backward: bind the module and initialize its parameters first')
        for i_layer, module in reversed(list(zip(range(len(self._modules)), self._modules))):
            module.backward(out_grads=out_grads)
            if i_layer == 0:
                break
            out_grads = module.get_input_grads()

    def update(self):
        """Update every module's parameters."""
        _require(self.binded and self.params_initialized,
                 'update: bind the module and initialize its parameters first')
        _require(self.optimizer_initialized,
                 'update: no optimizer installed; call init_optimizer first')
        for module in self._modules:
            module.update()

    def get_outputs(self, merge_multi_context=True):
        """The last module's outputs."""
        _require(self.binded and self.params_initialized,
                 'get_outputs: bind the module and initialize its parameters first')
        return self._modules[-1].get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        """The first module's input gradients."""
        _require(self.binded and self.params_initialized and self.inputs_need_grad,
                 'get_input_grads: bind with inputs_need_grad=True first')
        return self._modules[0].get_input_grads(merge_multi_context=merge_multi_context)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """Accumulate ``eval_metric`` on the modules that take labels."""
        _require(self.binded and self.params_initialized,
                 'update_metric: bind the module and initialize its parameters first')
        for meta, module in zip(self._metas, self._modules):
            if meta.get(SequentialModule.META_TAKE_LABELS, False):
                module.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon):
        """Install a monitor on every module."""
        _require(self.binded, 'install_monitor: the module is not bound')
        for module in self._modules:
            module.install_monitor(mon)
