"""The Gluon Trainer: an optimizer applied to a set of Parameters after
``autograd.backward``, after MXNet 1.9.1's ``python/mxnet/gluon/trainer.py``.

The Trainer runs symgraph's optimizers (:mod:`symgraph.optimizer`, one
:class:`~symgraph.optimizer.Updater` per context) and key-value stores
(:mod:`symgraph.kvstore`, made by the same ``_create_kvstore`` Module uses): with one
context and a single-process store type there is no store at all; with several contexts the
gradients are summed over them by the store (``'device'``, ``'local'``, ``'nccl'``), which
also runs the optimizer when ``update_on_kvstore``; ``'dist_sync'`` sums them over the
worker processes of ``python -m symgraph.launch`` as well.

symgraph's arrays are dense: a Parameter declared with ``stype`` or ``grad_stype``
``'row_sparse'`` is trained as a dense one (its whole gradient array, every row updated;
MXNet's lazy updates touch only the rows a sparse gradient holds).

Parameters are keys ``0 .. n-1`` of the store in the order of the Trainer's list (a dict of
Parameters is sorted by name first, as MXNet). ``step(batch_size)`` sets the optimizer's
``rescale_grad`` to ``scale / batch_size``, sums the gradients and updates. A parameter whose
gradient no backward wrote since the last step is an error (``ignore_stale_grad=True`` skips
it instead): the autograd tape marks a variable's gradient fresh when backward writes it,
and the Trainer clears the mark when it updates that parameter.
"""
import numbers
import os

from .. import optimizer as opt
from ..kvstore import KVStore, KVStoreBase, create as _kv_create
from ..kvstore.training import _create_kvstore
from ..base import ArgumentError, ArgumentTypeError, UsageError
from .parameter import Parameter, ParameterDict

__all__ = ['Trainer', 'StaleGradientError']


class StaleGradientError(UsageError, UserWarning):
    """A parameter's gradient was not written by backward since the last step. MXNet
    raises a ``UserWarning`` there; this is one too (and a RuntimeError)."""


class TrainerUsageError(UsageError, AssertionError):
    """A Trainer call that its configuration does not allow. Also an AssertionError: MXNet
    1.9.1 checks these with ``assert``."""


def _clear_fresh_grad(data):
    data._fresh_grad = False


def _atomic_write(fname, write):
    """Call ``write(path)`` on a temporary file beside ``fname``, flush it to disk and rename
    it onto ``fname``: a crash leaves the old file or the new one, never half of one. A
    ``write`` that creates no file (a worker other than rank 0) leaves ``fname`` alone."""
    fname = os.path.abspath(os.path.expanduser(fname))
    tmp = '%s.%d.tmp' % (fname, os.getpid())
    try:
        write(tmp)
        if not os.path.exists(tmp):
            return
        with open(tmp, 'rb+') as f:
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, fname)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


class Trainer(object):
    """Applies an Optimizer to a set of Parameters; used with ``autograd``.

    Parameters
    ----------
    params : ParameterDict, dict of Parameters, or list of Parameters
        The parameters to optimize (a dict is taken in the order of its sorted keys).
    optimizer : str or Optimizer
        The optimizer (``'sgd'``, ``'adam'``, ... or an instance).
    optimizer_params : dict, optional
        Keyword arguments of the optimizer, e.g. ``{'learning_rate': 0.1}`` (only with an
        optimizer name).
    kvstore : str or KVStore, default 'device'
        The store that sums gradients over contexts (and workers): ``'device'``,
        ``'local'``, ``'nccl'``, ``'dist_sync'``, ``'dist_device_sync'``, a store, or None.
        With one context and a single-process type no store is made.
    compression_params : dict, optional
        Gradient compression of the store, e.g. ``{'type': '2bit', 'threshold': 0.5}``.
    update_on_kvstore : bool, optional
        Whether the store runs the optimizer (None: the store's choice, or
        ``$MXNET_UPDATE_ON_KVSTORE``).

    Examples
    --------
    >>> import symgraph as mx
    >>> w = mx.gluon.Parameter('w', shape=(2,), init=mx.init.One())
    >>> w.initialize()
    >>> trainer = mx.gluon.Trainer([w], 'sgd', {'learning_rate': 0.5})
    >>> with mx.autograd.record():
    ...     loss = (w.data() * w.data()).sum()
    >>> loss.backward()
    >>> trainer.step(1)
    >>> w.data().asnumpy().tolist()
    [0.0, 0.0]
    """

    def __init__(self, params, optimizer, optimizer_params=None, kvstore='device',
                 compression_params=None, update_on_kvstore=None):
        if isinstance(params, (dict, ParameterDict)):
            params = [params[key] for key in sorted(list(params.keys()))]
        if not isinstance(params, (list, tuple)):
            raise ArgumentTypeError('First argument must be a list or dict of Parameters, '
                                    'got %s.' % (type(params)))
        self._params = []
        self._contains_sparse_weight = False
        self._contains_sparse_grad = False
        self._param2idx = {}
        for i, param in enumerate(params):
            if not isinstance(param, Parameter):
                raise ArgumentTypeError('First argument must be a list or dict of Parameters, '
                                        'got list of %s.' % (type(param)))
            if param.name in self._param2idx:
                # MXNet keeps the last index: the first parameter then never gets updated
                raise ArgumentError('Trainer: two parameters are named %r; parameter names '
                                    'must be unique' % param.name)
            self._param2idx[param.name] = i
            self._params.append(param)
            param._set_trainer(self)
            if param._stype != 'default':
                self._contains_sparse_weight = True
            if param._grad_stype != 'default':
                self._contains_sparse_grad = True
        self._compression_params = compression_params
        self._contexts = self._check_contexts()
        optimizer_params = optimizer_params if optimizer_params else {}
        self._init_optimizer(optimizer, optimizer_params)
        self._scale = self._optimizer.rescale_grad
        self._kvstore_params = {'kvstore': kvstore, 'update_on_kvstore': update_on_kvstore}
        self._kv_initialized = False
        self._kvstore = None
        self._update_on_kvstore = None
        self._distributed = None
        self._params_to_init = []
        # dynamic loss scaling (contrib.amp.init_trainer sets these)
        self._amp_loss_scaler = None
        self._amp_original_scale = self._scale
        self._reset_kvstore()

    def _check_contexts(self):
        contexts = None
        for param in self._params:
            ctx = param.list_ctx()
            if contexts is not None and contexts != ctx:
                raise TrainerUsageError(
                    'All Parameters must be initialized on the same set of contexts, but '
                    'Parameter %s is initialized on %s while previous Parameters are '
                    'initialized on %s.' % (param.name, str(ctx), str(contexts)))
            contexts = ctx
        return contexts

    def _init_optimizer(self, optimizer, optimizer_params):
        param_dict = {i: param for i, param in enumerate(self._params)}
        if isinstance(optimizer, opt.Optimizer):
            if optimizer_params:
                raise ArgumentError('optimizer_params must be None if optimizer is an '
                                    'instance of Optimizer instead of str')
            self._optimizer = optimizer
            # not a copy: lr_mult / wd_mult set on a Parameter later take effect
            self._optimizer.param_dict = param_dict
        elif isinstance(optimizer, str):
            self._optimizer = opt.create(optimizer, param_dict=param_dict, **optimizer_params)
        else:
            raise ArgumentTypeError('optimizer must be an optimizer name or an Optimizer, '
                                    'got %s' % type(optimizer).__name__)
        self._updaters = [opt.get_updater(self._optimizer) for _ in self._contexts]

    # ------------------------------------------------------------------ kvstore
    def _init_params(self):
        """Put the initialized parameters into the store (the deferred ones wait)."""
        if not self._kv_initialized:
            raise TrainerUsageError('Cannot initialize parameters in KVStore when KVStore is '
                                    'not initialized.')
        params_to_init, keys, values, outs = [], [], [], []
        if self._kvstore:
            for param in self._params_to_init:
                if param._deferred_init:
                    params_to_init.append(param)
                else:
                    param_arrays = list(param._check_and_get(param._data, list))
                    keys.append(self._param2idx[param.name])
                    values.append(param_arrays[0])
                    outs.append(param_arrays)
        if keys and getattr(self._kvstore, 'fuses_lists', False):
            # one call for all keys: a multi-process store fuses their broadcasts
            self._kvstore.broadcast(keys, values, out=outs)
        else:
            for key, value, out in zip(keys, values, outs):
                self._kvstore.broadcast(key, value, out=out)
        self._params_to_init = params_to_init

    def _reset_kvstore(self):
        """Forget the store (a parameter's data was set anew): it is made again at the next
        step."""
        if self._kvstore and 'dist' in self._kvstore.type:
            raise UsageError('Cannot reset distributed KVStore.')
        self._kv_initialized = False
        self._kvstore = None
        self._distributed = None
        self._update_on_kvstore = None
        self._params_to_init = list(self._params)

    def _init_kvstore(self):
        """Create the store (if any) and decide where the optimizer runs."""
        config = self._kvstore_params
        if self._contains_sparse_weight or self._contains_sparse_grad:
            self._init_sparse_kvstore(config)
            return
        # (the store looks at the shapes only: Parameters serve, deferred ones included)
        kvstore, update_on_kvstore = _create_kvstore(
            config['kvstore'], len(self._contexts), {p.name: p for p in self._params})
        self._distributed = 'dist' in kvstore.type if kvstore else False
        if self._distributed and 'async' in kvstore.type:
            update_on_kvstore = True
            if config['update_on_kvstore'] is False:
                raise ArgumentError('Please set update_on_kvstore=True when training in '
                                    'async mode.')
        if config['update_on_kvstore'] is not None:
            update_on_kvstore = config['update_on_kvstore']
        if update_on_kvstore and not kvstore.is_capable(KVStoreBase.OPTIMIZER):
            if config['update_on_kvstore']:
                raise ArgumentError('Please set update_on_kvstore=False when training with '
                                    '{}'.format(type(kvstore)))
            update_on_kvstore = False
        self._use_kvstore(kvstore, update_on_kvstore)

    def _init_sparse_kvstore(self, config):
        """MXNet's choices with sparse parameters: row_sparse weights live in a store that
        runs the optimizer (always made; update_on_kvstore=False refused); dense weights
        with row_sparse gradients update locally unless asked otherwise (a store only for
        several contexts)."""
        if self._contains_sparse_weight:
            kv = config['kvstore']
            if isinstance(kv, str):
                kv = _kv_create(kv)
            elif not isinstance(kv, KVStoreBase):
                raise TypeError("Cannot create '%s' KVStore with row_sparse parameters. The "
                                "type must be KVStore or str." % (kv,))
            kvstore, update_on_kvstore = kv, True
            self._distributed = 'dist' in kvstore.type
            if config['update_on_kvstore'] is False:
                raise ValueError('Cannot set update_on_kvstore=False when sparse weights '
                                 'are present.')
        else:
            kvstore, _ = _create_kvstore(config['kvstore'], len(self._contexts),
                                         {p.name: p for p in self._params})
            self._distributed = 'dist' in kvstore.type if kvstore else False
            update_on_kvstore = self._distributed
            if config['update_on_kvstore'] is not None:
                if config['update_on_kvstore'] is False and self._distributed:
                    raise ValueError('Cannot set update_on_kvstore=False on dist kvstore '
                                     'when sparse gradients are present.')
                update_on_kvstore = config['update_on_kvstore']
            if kvstore is not None and not isinstance(kvstore, KVStore):
                raise ValueError('Cannot use {} for multi-device training with sparse '
                                 'gradients'.format(type(kvstore)))
        self._use_kvstore(kvstore, update_on_kvstore)

    def _use_kvstore(self, kvstore, update_on_kvstore):
        """Keep the chosen store (None: none) and whether it runs the optimizer."""
        if kvstore:
            if self._compression_params:
                kvstore.set_gradient_compression(self._compression_params)
            if update_on_kvstore:
                # before init, so that a multi-precision optimizer sees the weights' type
                kvstore.set_optimizer(self._optimizer)
            self._kvstore = kvstore
            self._update_on_kvstore = update_on_kvstore
        else:
            self._kvstore = None
            self._update_on_kvstore = None
        self._kv_initialized = True

    def _ready(self):
        """Make the store and put the parameters into it, on first use."""
        if not self._kv_initialized:
            self._init_kvstore()
        if self._params_to_init:
            self._init_params()

    # ------------------------------------------------------------------ properties
    @property
    def learning_rate(self):
        """The optimizer's current learning rate."""
        return self._optimizer.learning_rate

    @property
    def optimizer(self):
        """The Optimizer."""
        return self._optimizer

    def set_learning_rate(self, lr):
        """Set the optimizer's learning rate (not with an ``lr_scheduler``: MXNet raises a
        UserWarning then, as here)."""
        self._optimizer.set_learning_rate(lr)

    def _row_sparse_pull(self, parameter, out, row_id, full_idx=False):
        """Pull the rows ``row_id`` of a row_sparse parameter from the store into ``out``
        (every row with ``full_idx``), as MXNet's Trainer."""
        self._ready()
        idx = self._param2idx[parameter.name]
        if full_idx and 'dist' not in self._kvstore.type:
            if row_id.size != out.shape[0]:
                raise ValueError('full_idx: %d row ids for %d rows' % (row_id.size,
                                                                        out.shape[0]))
            self._kvstore.pull(idx, out=out, priority=-idx, ignore_sparse=False)
        else:
            self._kvstore.row_sparse_pull(idx, out=out, row_ids=row_id, priority=-idx)

    # ------------------------------------------------------------------ steps
    def _check_and_rescale_grad(self, scale):
        if self._update_on_kvstore and self._distributed and self._kv_initialized:
            if self._optimizer.rescale_grad != scale:
                raise UserWarning('Possible change in the `batch_size` from previous `step` '
                                  'detected. Optimizer gradient normalizing factor will not '
                                  'change w.r.t new batch_size when update_on_kvstore=True '
                                  'and when distributed kvstore is used.')
        self._optimizer.rescale_grad = scale

    @staticmethod
    def _check_batch_size(batch_size):
        if isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Real):
            raise ArgumentTypeError('batch_size must be a number, got %r' % (batch_size,))
        if not batch_size > 0:
            raise ArgumentError('batch_size must be > 0, got %r' % (batch_size,))

    def step(self, batch_size, ignore_stale_grad=False):
        """One update of the parameters: :meth:`allreduce_grads` then :meth:`update`.
        Call it after ``autograd.backward()``, outside ``record()``.

        Parameters
        ----------
        batch_size : int
            The gradients are scaled by ``1/batch_size`` (use 1 for a loss that is a
            mean already).
        ignore_stale_grad : bool, default False
            Skip the parameters whose gradient no backward wrote since the last step,
            instead of raising :class:`StaleGradientError`.
        """
        self._check_batch_size(batch_size)
        self._check_and_rescale_grad(self._scale / batch_size)
        self._ready()
        if self._amp_overflow():
            return
        self._allreduce_grads()
        self._update(ignore_stale_grad)

    def _amp_overflow(self):
        """With AMP's dynamic loss scaling: whether the gradients overflowed, in which case
        the step is skipped (the scaler then lowers its factor). Checked before the
        gradients reach the store, which may update the weights itself (MXNet checks after
        that, when a store running the optimizer has already applied them)."""
        scaler = self._amp_loss_scaler
        return scaler is not None and scaler.has_overflow(self._params)

    def allreduce_grads(self):
        """Sum every parameter's gradients over its contexts (and workers), in place.

        For manual steps (e.g. gradient clipping between the two): ``allreduce_grads()``,
        then :meth:`update`. Not when the store runs the optimizer.
        """
        self._ready()
        if self._kvstore and self._update_on_kvstore:
            raise TrainerUsageError('allreduce_grads() when parameters are updated on kvstore '
                                    'is not supported. Try setting `update_on_kvstore` to '
                                    'False when creating trainer.')
        self._allreduce_grads()

    def _allreduce_grads(self):
        if not self._kvstore:
            return
        indices = [i for i, p in enumerate(self._params) if p.grad_req != 'null']
        if not indices:
            return
        if self._contains_sparse_weight or self._contains_sparse_grad:
            self._allreduce_sparse(indices)
            return
        grads = [self._params[i].list_grad() for i in indices]
        outs = [self._params[i].list_data() for i in indices] \
            if self._update_on_kvstore else None
        if getattr(self._kvstore, 'fuses_lists', False):
            # a multi-process store packs the keys of one call into few all-reduces
            self._kvstore.pushpull(indices, [list(g) for g in grads],
                                   out=None if outs is None else [list(o) for o in outs])
            return
        for n, i in enumerate(indices):
            self._kvstore.pushpull(i, grads[n], out=None if outs is None else outs[n],
                                   priority=-i)

    def _allreduce_sparse(self, indices):
        """MXNet's loop with sparse parameters: row_sparse gradients are pushed, then pulled
        back (into dense weights updated in the store, else into the gradients); a sparse
        weight stays in the store (row_sparse_data pulls it); dense ones pushpull."""
        for i in indices:
            param = self._params[i]
            grads = param.list_grad()
            if grads[0].stype != 'default':
                self._kvstore.push(i, grads, priority=-i)
                if param._stype == 'default':
                    pull = param.list_data() if self._update_on_kvstore else grads
                    self._kvstore.pull(i, pull, priority=-i, ignore_sparse=self._distributed)
            elif self._update_on_kvstore:
                if param._stype == 'default':
                    self._kvstore.pushpull(i, grads, out=param.list_data(), priority=-i)
                else:
                    self._kvstore.push(i, grads, priority=-i)
            else:
                self._kvstore.pushpull(i, grads, priority=-i)

    def update(self, batch_size, ignore_stale_grad=False):
        """Update the parameters from their (already summed) gradients: the second half of
        :meth:`step`, after :meth:`allreduce_grads`. Not when the store runs the
        optimizer.

        Parameters
        ----------
        batch_size : int
            The gradients are scaled by ``1/batch_size``.
        ignore_stale_grad : bool, default False
            Skip the parameters with stale gradients instead of raising.
        """
        self._check_batch_size(batch_size)
        self._ready()
        if self._kvstore and self._update_on_kvstore:
            raise TrainerUsageError('update() when parameters are updated on kvstore is not '
                                    'supported. Try setting `update_on_kvstore` to False when '
                                    'creating trainer.')
        self._check_and_rescale_grad(self._scale / batch_size)
        if self._amp_overflow():
            return
        self._update(ignore_stale_grad)

    def _update(self, ignore_stale_grad=False):
        # one pass over the parameters with their attributes read directly: this loop runs
        # every step, and the accessors' checks (context lookups, the fresh flag's
        # properties) were most of the Trainer's own time
        on_kvstore = bool(self._kvstore and self._update_on_kvstore)
        updates = [[] for _ in self._updaters]
        for i, param in enumerate(self._params):
            if param.grad_req == 'null':    # (a Constant's is a property)
                continue
            datas = param._data
            if datas is None:
                datas = param.list_data()       # raises: deferred or not initialized
            if not ignore_stale_grad:
                for data in datas:
                    e = data._ag
                    if e is None or e.node is not None or not e.fresh:
                        raise StaleGradientError(
                            'Gradient of Parameter `%s` on context %s has not been updated '
                            'by backward since last `step`. This could mean a bug in your '
                            'model that made it only use a subset of the Parameters (Blocks) '
                            'for this iteration. If you are intentionally only using a '
                            'subset, call step with ignore_stale_grad=True to suppress this '
                            'warning and skip updating of Parameters with stale gradient'
                            % (param.name, str(data.context)))
            if on_kvstore:
                # the store updated the weights in _allreduce_grads already
                for data in datas:
                    _clear_fresh_grad(data)
                continue
            grads = param._grad if param._grad is not None else param.list_grad()
            for upd, data, grad in zip(updates, datas, grads):
                e = data._ag
                if e is not None and e.node is None and e.fresh:
                    upd.append((i, grad, data))
                    e.fresh = False
        if on_kvstore:
            return
        for updater, upd in zip(self._updaters, updates):
            if upd:
                i, g, w = zip(*upd)
                updater(i, g, w)

    # ------------------------------------------------------------------ states
    def save_states(self, fname):
        """Save the optimizer and its states (momentum, ...) to ``fname``, in MXNet's
        format (a file MXNet's ``Trainer.load_states`` reads). The file is written to a
        temporary name beside ``fname``, synced and renamed onto it. The Parameters'
        ``lr_mult``/``wd_mult`` are not saved.

        Parameters
        ----------
        fname : str
            The file.
        """
        self._ready()
        if self._update_on_kvstore:
            if self._params_to_init:
                raise TrainerUsageError('Cannot save trainer states when some parameters are '
                                        'not yet initialized in kvstore.')

            def write(path):
                self._kvstore.save_optimizer_states(path, dump_optimizer=True)
        else:
            states = self._updaters[0].get_states(dump_optimizer=True)

            def write(path):
                with open(path, 'wb') as fout:
                    fout.write(states)
        _atomic_write(fname, write)
        if self._distributed:
            # rank 0 renamed the file: the others may read it after this
            self._kvstore.barrier()

    def load_states(self, fname):
        """Load the optimizer and its states saved by :meth:`save_states` (or by MXNet).
        The Parameters' ``lr_mult``/``wd_mult`` come from this Trainer's Parameters.

        Raises
        ------
        FileNotFoundError
            No such file.
        """
        if not os.path.isfile(os.path.expanduser(fname)):
            raise FileNotFoundError('Trainer.load_states: no file %r' % (fname,))
        self._ready()
        if self._update_on_kvstore:
            self._kvstore.load_optimizer_states(fname)
            self._optimizer = self._kvstore._updater.optimizer
        else:
            with open(os.path.expanduser(fname), 'rb') as f:
                states = f.read()
            for updater in self._updaters:
                updater.set_states(states)
                updater.optimizer = self._updaters[0].optimizer
            self._optimizer = self._updaters[0].optimizer
        self._optimizer.param_dict = {i: param for i, param in enumerate(self._params)}
