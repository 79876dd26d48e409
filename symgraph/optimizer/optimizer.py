"""The optimizer base class, its registry and ``create`` (MXNet's ``mx.optimizer``).

An optimizer updates weights in place from their gradients: ``update(index, weight, grad,
state)`` with the state ``create_state(index, weight)`` made once per index. Learning
rate and weight decay of an index come from ``lr``/``lr_scheduler`` and ``wd`` times the
multipliers set by :meth:`Optimizer.set_lr_mult` / :meth:`Optimizer.set_wd_mult` (and the
``__lr_mult__`` / ``__wd_mult__`` attributes of ``sym``'s Variables). With
``param_idx2name`` (as Module gives it), weight decay applies only to parameters named
``*_weight`` or ``*_gamma``, as in MXNet.

The attributes carry MXNet's names (``lr``, ``idx2name``, ``sym_info``,
``_index_update_count``, ...), so that an optimizer pickled by MXNet 1.9.1 loads here and
the other way round (see :mod:`symgraph.optimizer.pickling`).
"""
import inspect
import warnings

import numpy

from .. import ndarray as nd
from ..ndarray import NDArray
from ..base import ArgumentError, ArgumentTypeError

__all__ = ['Optimizer', 'register', 'create']


def _flatten_list(nested_list):
    return [item for sublist in nested_list for item in sublist]


def _as_lists(indices, weights, grads, states):
    """One index (and its arrays) as lists of one, as MXNet's aggregated updates take."""
    if not isinstance(indices, (tuple, list)):
        return [indices], [weights], [grads], [states]
    return list(indices), list(weights), list(grads), list(states)


def _check_arrays(weight, grad):
    if not isinstance(weight, NDArray) or not isinstance(grad, NDArray):
        raise ArgumentTypeError('an optimizer updates NDArrays: got weight %s and grad %s'
                                % (type(weight).__name__, type(grad).__name__))
    if weight.shape != grad.shape:
        raise ArgumentError('weight and gradient shapes differ: weight %s, grad %s'
                            % (weight.shape, grad.shape))


def sum_sq(array):
    """MXNet's ``multi_sum_sq`` of one NDArray (what LARS and the aggregated LAMB take norms
    from): the squares in the array's dtype, added one after the other in float32."""
    a = array.asnumpy().reshape(-1)
    if not a.size:
        return numpy.float32(0)
    return numpy.cumsum(numpy.square(a), dtype=numpy.float32)[-1]


def _init_params(klass):
    """The keyword parameters ``klass(...)`` accepts: its ``__init__``'s and those of the
    bases it passes ``**kwargs`` on to (for the message of an unknown parameter)."""
    names = []
    for c in klass.__mro__:
        init = c.__dict__.get('__init__')
        if init is None:
            continue
        params = inspect.signature(init).parameters.values()
        names += [p.name for p in params if p.name != 'self'
                  and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]
        if c is Optimizer or not any(p.kind == p.VAR_KEYWORD for p in params):
            break
    return sorted(set(names))


class Optimizer(object):
    """The base class inherited by all optimizers.

    Parameters
    ----------
    rescale_grad : float, optional, default 1.0
        Multiply the gradient with ``rescale_grad`` before updating (Module sets it to
        ``1.0/batch_size``).
    param_idx2name : dict from int to string, optional, default None
        Maps an index to a parameter name; with it, weight decay is 0 for parameters whose
        name does not end with ``_weight`` or ``_gamma``.
    wd : float, optional, default 0.0
        The weight decay (L2 regularization) coefficient.
    clip_gradient : float, optional, default None
        Clip the gradient into ``[-clip_gradient, clip_gradient]``.
    learning_rate : float, optional, default None
        The initial learning rate; it overrides the ``lr_scheduler``'s ``base_lr``. 0.01 when
        neither is given.
    lr_scheduler : LRScheduler, optional, default None
        The learning rate scheduler.
    sym : Symbol, optional, default None
        The symbol whose Variables' ``__lr_mult__`` / ``__wd_mult__`` attributes set the
        multipliers of their parameters.
    begin_num_update : int, optional, default 0
        The initial number of updates.
    multi_precision : bool, optional, default False
        Keep a float32 master copy of float16 weights and update it in float32.
    param_dict : dict of int to gluon.Parameter, default None
        Parameters whose ``lr_mult`` and ``wd_mult`` are looked up by index (Gluon).

    Attributes
    ----------
    learning_rate : float
        The current learning rate.
    """

    opt_registry = {}

    def __init__(self, rescale_grad=1., param_idx2name=None, wd=0.,
                 clip_gradient=None, learning_rate=None,
                 lr_scheduler=None, sym=None, begin_num_update=0,
                 multi_precision=False, param_dict=None, **kwargs):
        if kwargs:
            # MXNet: "__init__() got an unexpected keyword argument"; name them and the
            # parameters the optimizer takes
            raise ArgumentTypeError('optimizer %s got unknown parameter(s) %s; it takes %s'
                                    % (type(self).__name__, ', '.join(map(repr, sorted(kwargs))),
                                       ', '.join(_init_params(type(self)))))
        self.rescale_grad = rescale_grad
        self.lr_scheduler = lr_scheduler
        if self.lr_scheduler is None and learning_rate is None:
            learning_rate = 0.01
        self.lr = learning_rate
        if self.lr_scheduler is not None and learning_rate is not None:
            if self.lr_scheduler.base_lr != learning_rate:
                # MXNet prints this UserWarning object rather than warning
                print(UserWarning("learning rate from ``lr_scheduler`` has been "
                                  "overwritten by ``learning_rate`` in optimizer."))
                self.lr_scheduler.base_lr = learning_rate

        self.wd = wd
        self.lr_mult = {}
        self.wd_mult = {}
        self.begin_num_update = begin_num_update
        self.num_update = begin_num_update
        self._all_index_update_counts = {0: {}}
        self._index_update_count = self._all_index_update_counts[0]
        self.clip_gradient = clip_gradient
        self.multi_precision = multi_precision
        self.aggregate_num = 0

        if param_idx2name is None:
            param_idx2name = {}
        if not isinstance(param_idx2name, dict):
            raise ArgumentTypeError('param_idx2name should be a dict of param indexes to names, '
                                    'got %s' % type(param_idx2name).__name__)
        self.idx2name = param_idx2name.copy()
        self.sym_info = (sym.attr_dict(), sym.list_arguments()) if sym is not None else ()
        self.param_dict = param_dict if param_dict else {}
        self.allow_np_array = False

        self.set_lr_mult({})
        self.set_wd_mult({})

    # ------------------------------------------------------------------ registry
    @staticmethod
    def register(klass):
        """Register an optimizer class under its lower-cased class name.

        Examples
        --------
        >>> import symgraph as mx
        >>> @mx.optimizer.Optimizer.register
        ... class MyOptimizer(mx.optimizer.Optimizer):
        ...     pass
        >>> type(mx.optimizer.Optimizer.create_optimizer('MyOptimizer')).__name__
        'MyOptimizer'
        >>> del mx.optimizer.Optimizer.opt_registry['myoptimizer']
        """
        if not isinstance(klass, type):
            raise ArgumentTypeError('register takes an optimizer class, got %r' % (klass,))
        name = klass.__name__.lower()
        if name in Optimizer.opt_registry:
            warnings.warn('WARNING: New optimizer %s.%s is overriding '
                          'existing optimizer %s.%s' %
                          (klass.__module__, klass.__name__,
                           Optimizer.opt_registry[name].__module__,
                           Optimizer.opt_registry[name].__name__))
        Optimizer.opt_registry[name] = klass
        return klass

    @staticmethod
    def create_optimizer(name, **kwargs):
        """An optimizer by its registered name (case insensitive), built with ``kwargs``.

        Raises
        ------
        ValueError
            No optimizer of that name (the message lists the registered ones).
        TypeError
            A parameter the optimizer does not take.

        Examples
        --------
        >>> import symgraph as mx
        >>> type(mx.optimizer.create('adam', learning_rate=.1)).__name__
        'Adam'
        """
        if not isinstance(name, str):
            raise ArgumentTypeError('optimizer name must be a str, got %s' % type(name).__name__)
        if name.lower() in Optimizer.opt_registry:
            return Optimizer.opt_registry[name.lower()](**kwargs)
        raise ArgumentError('Cannot find optimizer %s (registered optimizers: %s)'
                            % (name, ', '.join(sorted(Optimizer.opt_registry))))

    # ------------------------------------------------------------------ states
    @property
    def learning_rate(self):
        """The current learning rate (the scheduler's at ``num_update`` if there is one)."""
        if self.lr_scheduler is not None:
            return self.lr_scheduler(self.num_update)
        return self.lr

    def create_state(self, index, weight):
        """The auxiliary state (momentum, moments ...) of one weight, or None.

        Parameters
        ----------
        index : int
            A unique index to identify the weight.
        weight : NDArray
            The weight.
        """

    def create_state_multi_precision(self, index, weight):
        """:meth:`create_state`, with a float32 master copy first for a float16 weight when
        ``multi_precision`` is set: ``(weight32, state)``."""
        if self.multi_precision and weight.dtype == numpy.float16:
            weight_master_copy = weight.astype(numpy.float32)
            return (weight_master_copy,) + (self.create_state(index, weight_master_copy),)
        if weight.dtype == numpy.float16 and not self.multi_precision:
            warnings.warn("Accumulating with float16 in optimizer can lead to "
                          "poor accuracy or slow convergence. "
                          "Consider using multi_precision=True option of the "
                          "optimizer")
        return self.create_state(index, weight)

    def update(self, index, weight, grad, state):
        """Update ``weight`` in place from ``grad`` and ``state`` (made by
        :meth:`create_state`).

        Parameters
        ----------
        index : int
            The index of the parameter (for its learning rate and weight decay).
        weight : NDArray
            The parameter to be updated.
        grad : NDArray
            The gradient of the objective with respect to this parameter.
        state : any obj
            The state returned by :meth:`create_state`.
        """
        raise NotImplementedError()

    def update_multi_precision(self, index, weight, grad, state):
        """:meth:`update`, on the float32 master copy of a float16 weight when
        ``multi_precision`` is set (the weight then receives its cast)."""
        if self.multi_precision and weight.dtype == numpy.float16:
            weight_master_copy = state[0]
            original_state = state[1]
            grad32 = grad.astype(numpy.float32)
            self.update(index, weight_master_copy, grad32, original_state)
            nd.cast(weight_master_copy, dtype=weight.dtype, out=weight)
        else:
            self.update(index, weight, grad, state)

    # ------------------------------------------------------------------ lr and wd
    def set_learning_rate(self, lr):
        """Set the learning rate (only without an ``lr_scheduler``, as MXNet).

        Raises
        ------
        UserWarning
            Raised, as MXNet does, when the optimizer has a scheduler.
        """
        if self.lr_scheduler is not None:
            raise UserWarning("LRScheduler of the optimizer has already been "
                              "defined. Note that set_learning_rate can mutate "
                              "the value of the learning rate of the optimizer "
                              "only when the LRScheduler of the optimizer is "
                              "undefined.")
        self.lr = lr

    def set_lr_scale(self, args_lrscale):  # pylint: disable=unused-argument
        """[DEPRECATED] Sets lr scale. Use set_lr_mult instead."""
        raise DeprecationWarning

    def set_lr_mult(self, args_lr_mult):
        """Set a learning rate multiplier per parameter (by name, or by index).

        The ``__lr_mult__`` attributes of ``sym``'s Variables come first; ``args_lr_mult``
        overrides them.

        Parameters
        ----------
        args_lr_mult : dict of str/int to float
            Multipliers of the parameters named (or indexed) by the keys.
        """
        self.lr_mult = {}
        if self.sym_info:
            attr, arg_names = self.sym_info
            for name in arg_names:
                if name in attr and '__lr_mult__' in attr[name]:
                    self.lr_mult[name] = float(attr[name]['__lr_mult__'])
        self.lr_mult.update(args_lr_mult)

    def set_wd_mult(self, args_wd_mult):
        """Set a weight decay multiplier per parameter (by name, or by index).

        With ``param_idx2name``, every parameter whose name does not end with ``_weight``
        or ``_gamma`` gets 0; then the ``__wd_mult__`` attributes of ``sym``'s Variables,
        then ``args_wd_mult``.

        Parameters
        ----------
        args_wd_mult : dict of str/int to float
            Multipliers of the parameters named (or indexed) by the keys.
        """
        self.wd_mult = {}
        for n in self.idx2name.values():
            if not (n.endswith('_weight') or n.endswith('_gamma')):
                self.wd_mult[n] = 0.0
        if self.sym_info:
            attr, arg_names = self.sym_info
            for name in arg_names:
                if name in attr and '__wd_mult__' in attr[name]:
                    self.wd_mult[name] = float(attr[name]['__wd_mult__'])
        self.wd_mult.update(args_wd_mult)

    def _set_current_context(self, device_id):
        """Count updates separately for device ``device_id`` (as MXNet's Updater does)."""
        if device_id not in self._all_index_update_counts:
            self._all_index_update_counts[device_id] = {}
        self._index_update_count = self._all_index_update_counts[device_id]

    def _update_count(self, index):
        """Count one more update of ``index`` (an int or a list of them); ``num_update``
        is the largest count."""
        if not isinstance(index, (list, tuple)):
            index = [index]
        for idx in index:
            if idx not in self._index_update_count:
                self._index_update_count[idx] = self.begin_num_update
            self._index_update_count[idx] += 1
            self.num_update = max(self._index_update_count[idx], self.num_update)

    def _get_lrs(self, indices):
        """The learning rates of ``indices`` (the scheduler's rate times the multipliers)."""
        if self.lr_scheduler is not None:
            lr = self.lr_scheduler(self.num_update)
        else:
            lr = self.lr
        return self._apply_lr_mults(lr, indices)

    def _apply_lr_mults(self, lr, indices):
        lrs = [lr for _ in indices]
        for i, index in enumerate(indices):
            if index in self.param_dict:
                lrs[i] *= self.param_dict[index].lr_mult
            elif index in self.lr_mult:
                lrs[i] *= self.lr_mult[index]
            elif index in self.idx2name:
                lrs[i] *= self.lr_mult.get(self.idx2name[index], 1.0)
        return lrs

    def _get_lr(self, index):
        """The learning rate of one index."""
        return self._get_lrs([index])[0]

    def _get_wds(self, indices):
        """The weight decays of ``indices`` (``wd`` times the multipliers)."""
        wds = [self.wd for _ in indices]
        for i, index in enumerate(indices):
            if index in self.param_dict:
                wds[i] *= self.param_dict[index].wd_mult
            elif index in self.wd_mult:
                wds[i] *= self.wd_mult[index]
            elif index in self.idx2name:
                wds[i] *= self.wd_mult.get(self.idx2name[index], 1.0)
        return wds

    def _get_wd(self, index):
        """The weight decay of one index."""
        return self._get_wds([index])[0]

    # ------------------------------------------------------------------ pickling
    def __getstate__(self):
        ret = self.__dict__.copy()
        # do not include param_dict in the state (as MXNet)
        del ret['param_dict']
        return ret

    def __setstate__(self, state):
        self.__dict__ = state
        # param_dict needs to be explicitly set by the trainer
        self.param_dict = {}


# convenience wrapper for Optimizer.register
register = Optimizer.register   # pylint: disable=invalid-name
#: ``create('sgd', learning_rate=0.1)``: :meth:`Optimizer.create_optimizer`
create = Optimizer.create_optimizer  # pylint: disable=invalid-name
