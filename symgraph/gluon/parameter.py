"""Gluon parameters: ``Parameter``, ``Constant`` and ``ParameterDict``.

After MXNet 1.9.1's ``python/mxnet/gluon/parameter.py``: a Parameter holds one NDArray per
context (and one gradient array each, marked as autograd variables), knows its shape with
0 for a dimension not known yet, and defers its initialization until the first forward
pass has told it that shape.
"""
from collections import OrderedDict
import warnings

import numpy as np

from ..base import ArgumentError, ArgumentTypeError, UsageError, as_dtype
from .. import autograd
from .. import initializer
from .. import ndarray
from .. import symbol
from ..context import Context, cpu, current_context
from ..ndarray import NDArray
from .utils import _indent, _brief_print_list, shape_is_known

__all__ = ['DeferredInitializationError', 'Parameter', 'Constant', 'ParameterDict',
           'tensor_types']

tensor_types = (symbol.Symbol, NDArray)


class DeferredInitializationError(UsageError):
    """A Parameter whose initialization waits for the first forward pass (its shape is not
    known yet) was asked for its data."""


class GluonArgumentError(ArgumentError, AssertionError):
    """A bad argument to a Gluon call. Also an ``AssertionError``: MXNet 1.9.1 checks these
    with ``assert``, and programs (and its tests) catch that."""


def _as_ctx_list(ctx):
    if ctx is None:
        return [current_context()]
    if isinstance(ctx, Context):
        return [ctx]
    ctx = list(ctx)
    for c in ctx:
        if not isinstance(c, Context):
            raise ArgumentTypeError('ctx must be a Context or a list of Contexts, got %r'
                                    % (c,))
    return ctx


_GRAD_REQS = ('write', 'add', 'null')
_STYPES = ('default', 'row_sparse', 'csr')


def _ctx_key(ctx):
    """Where a context's arrays are looked up: MXNet keys by the device type's lowest bit and
    the device id, so ``cpu_pinned(0)`` and ``cpu_shared(0)`` (a DataLoader worker's batches)
    find the ``cpu(0)`` copy; the last of repeated contexts wins, as MXNet's list does."""
    return ctx.device_typeid & 1, ctx.device_id


class Parameter:
    """A container holding the value (one copy per context) and gradient of a weight.

    Parameters
    ----------
    name : str
        Name of this parameter.
    grad_req : {'write', 'add', 'null'}, default 'write'
        How gradients are written into its gradient arrays ('null': none are allocated).
    shape : int or tuple of int, optional
        0 in a dimension means unknown until the first forward pass (deferred init).
    dtype : numpy.dtype or str, default 'float32'
    lr_mult, wd_mult : float, default 1.0
        Learning rate and weight decay multipliers.
    init : Initializer or str, optional
        Its own initializer (else the one given to :meth:`initialize`).
    allow_deferred_init : bool, default False
    differentiable : bool, default True
        False forces ``grad_req='null'``.
    stype, grad_stype : str, default 'default'
        Storage types; symgraph holds dense arrays only.

    >>> import symgraph as mx
    >>> w = mx.gluon.Parameter('fc_weight', shape=(2, 3), init=mx.init.One())
    >>> w.initialize()
    >>> w.data().asnumpy().tolist()
    [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
    """

    def __init__(self, name, grad_req='write', shape=None, dtype=np.float32,
                 lr_mult=1.0, wd_mult=1.0, init=None, allow_deferred_init=False,
                 differentiable=True, stype='default', grad_stype='default'):
        self._var = None
        self._data = None
        self._grad = None
        self._ctx_list = None
        self._ctx_map = None
        self._trainer = None
        self._deferred_init = ()
        self._differentiable = differentiable
        self._allow_deferred_init = allow_deferred_init
        self._grad_req = None
        if isinstance(shape, int):
            shape = (shape,)
        self._shape = tuple(shape) if shape is not None else None
        self.name = name
        self._dtype = dtype
        self.lr_mult = lr_mult
        self.wd_mult = wd_mult
        self.grad_req = grad_req
        self.init = init
        if grad_stype not in _STYPES:
            raise GluonArgumentError("grad_stype for Parameter '%s' must be one of 'default', "
                                     "'row_sparse', or 'csr', but got '%s'" % (name, grad_stype))
        if stype not in _STYPES:
            raise GluonArgumentError("stype for Parameter '%s' must be one of 'default', "
                                     "'row_sparse', or 'csr', but got '%s'" % (name, stype))
        self._grad_stype = grad_stype
        self._stype = stype

    def __repr__(self):
        return 'Parameter %s (shape=%s, dtype=%s)' % (self.name, self.shape, self.dtype)

    # ------------------------------------------------------------------ attributes
    @property
    def grad_req(self):
        return self._grad_req

    @grad_req.setter
    def grad_req(self, req):
        if req not in _GRAD_REQS:
            raise GluonArgumentError("grad_req must be one of 'write', 'add', or 'null', but "
                                     "got '%s'" % req)
        if not self._differentiable:
            req = 'null'
        if self._grad_req == req:
            return
        self._grad_req = req
        if req == 'null' and self._grad is not None:
            self._grad = None
            self._data = [i.detach() for i in self._data]
        elif self._data is not None:
            self._init_grad()

    @property
    def dtype(self):
        """The data type; setting it casts the parameter."""
        return self._dtype

    @dtype.setter
    def dtype(self, dtype):
        self.cast(dtype)

    @property
    def shape(self):
        """The shape, 0 in each dimension not known yet."""
        return self._shape

    @shape.setter
    def shape(self, new_shape):
        new_shape = tuple(new_shape) if new_shape is not None else None
        if self._shape is None:
            self._shape = new_shape
            return
        if new_shape is None or len(self._shape) != len(new_shape) or \
                not all(j in (0, i) for i, j in zip(new_shape, self._shape)):
            raise GluonArgumentError('Expected shape %s is incompatible with given shape %s '
                                     '(Parameter %r)' % (str(new_shape), str(self._shape),
                                                         self.name))
        self._shape = new_shape

    @property
    def stype(self):
        return self._stype

    def _set_trainer(self, trainer):
        """Set the Trainer this parameter is associated with."""
        if self._stype != 'default' and self._trainer and trainer and \
                self._trainer is not trainer:
            raise UsageError("Failed to set the trainer for Parameter '%s' because it was "
                             "already set. More than one trainers for a %s Parameter is not "
                             "supported." % (self.name, self._stype))
        self._trainer = trainer

    # ------------------------------------------------------------------ access
    def _check_and_get(self, arr_list, ctx):
        if arr_list is not None:
            if ctx is list:
                return arr_list
            if ctx is None:
                if len(arr_list) == 1:
                    return arr_list[0]
                ctx = current_context()
            idx = self._ctx_map.get(_ctx_key(ctx))
            if idx is not None:
                return arr_list[idx]
            raise UsageError("Parameter '%s' was not initialized on context %s. It was only "
                             "initialized on %s." % (self.name, str(ctx),
                                                     str(self._ctx_list)))
        if self._deferred_init:
            raise DeferredInitializationError(
                "Parameter '%s' has not been initialized yet because initialization was "
                "deferred. Actual initialization happens during the first forward pass. "
                "Please pass one batch of data through the network before accessing "
                "Parameters. You can also avoid deferred initialization by specifying "
                "in_units, num_features, etc., for network layers." % self.name)
        raise UsageError(
            "Parameter '%s' has not been initialized. Note that you should initialize "
            "parameters and create Trainer with Block.collect_params() instead of "
            "Block.params because the later does not include Parameters of nested child "
            "Blocks" % self.name)

    def data(self, ctx=None):
        """This parameter's array on ``ctx`` (the only one when it lives on one context).
        A sparse parameter refuses (:meth:`row_sparse_data`), as MXNet's."""
        if self._stype != 'default':
            raise UsageError("Cannot return a copy of Parameter '%s' on ctx %s via data() "
                             "because its storage type is %s. Please use row_sparse_data() "
                             "instead." % (self.name, str(ctx), self._stype))
        return self._check_and_get(self._data, ctx)

    def list_data(self):
        """Its arrays on every context, in the order of initialization (a sparse parameter
        refuses: :meth:`list_row_sparse_data`)."""
        if self._stype != 'default':
            raise UsageError("Cannot return copies of Parameter '%s' on all contexts via "
                             "list_data() because its storage type is %s. Please use "
                             "row_sparse_data() instead." % (self.name, self._stype))
        return self._check_and_get(self._data, list)

    def grad(self, ctx=None):
        """Its gradient array on ``ctx``."""
        if self._data is not None and self._grad is None:
            raise UsageError("Cannot get gradient array for Parameter '%s' because "
                             "grad_req='null'" % self.name)
        return self._check_and_get(self._grad, ctx)

    def list_grad(self):
        """Its gradient arrays on every context."""
        if self._data is not None and self._grad is None:
            raise UsageError("Cannot get gradient array for Parameter '%s' because "
                             "grad_req='null'" % self.name)
        return self._check_and_get(self._grad, list)

    def list_ctx(self):
        """The contexts this parameter is (or will be, when deferred) initialized on."""
        if self._data is None:
            if self._deferred_init:
                return self._deferred_init[1]
            raise UsageError("Parameter '%s' has not been initialized" % self.name)
        return self._ctx_list

    def _get_row_sparse(self, arr_list, ctx, row_id):
        """The parameter's own arrays (on ``ctx``, or all with ``list``) after the Trainer's
        store pulled the rows ``row_id`` into them (MXNet's row_sparse pull: those rows hold
        the weight, the others 0); a gradient recorded from them reaches this parameter."""
        if not isinstance(row_id, NDArray):
            raise TypeError('row_id must have NDArray type, but %s is given' % type(row_id))
        if not self._trainer:
            raise UsageError("Cannot get row_sparse data for Parameter '%s' when no Trainer "
                             "is created with it." % self.name)
        results = self._check_and_get(arr_list, ctx)
        self._trainer._row_sparse_pull(self, results, row_id)
        return results

    def row_sparse_data(self, row_id):
        """A copy of a ``'row_sparse'`` parameter on ``row_id``'s context keeping only the
        rows ``row_id`` (dense here: the other rows are zero)."""
        if self._stype != 'row_sparse':
            raise UsageError("Cannot return a copy of Parameter %s via row_sparse_data() "
                             "because its storage type is %s. Please use data() instead."
                             % (self.name, self._stype))
        ctx = row_id.context if isinstance(row_id, NDArray) else None
        return self._get_row_sparse(self._data, ctx, row_id)

    def list_row_sparse_data(self, row_id):
        """:meth:`row_sparse_data` on every context."""
        if self._stype != 'row_sparse':
            raise UsageError("Cannot return copies of Parameter '%s' on all contexts via "
                             "list_row_sparse_data() because its storage type is %s. Please "
                             "use data() instead." % (self.name, self._stype))
        return self._get_row_sparse(self._data, list, row_id)

    # ------------------------------------------------------------------ initialization
    def initialize(self, init=None, ctx=None, default_init=initializer.Uniform(),
                   force_reinit=False):
        """Allocate and fill the parameter (and its gradient) on ``ctx``.

        ``init`` overrides the parameter's own ``init``, which overrides ``default_init``.
        With an unknown shape and ``allow_deferred_init`` the work waits for the first
        forward pass.
        """
        if self._data is not None and not force_reinit:
            warnings.warn("Parameter '%s' is already initialized, ignoring. Set "
                          "force_reinit=True to re-initialize." % self.name, stacklevel=2)
            return
        self._data = self._grad = None
        ctx = _as_ctx_list(ctx)
        if init is None:
            init = default_init if self.init is None else self.init
        if not shape_is_known(self.shape):
            if self._allow_deferred_init:
                self._deferred_init = (init, ctx, default_init, None)
                return
            raise GluonArgumentError("Cannot initialize Parameter '%s' because it has invalid "
                                     "shape: %s." % (self.name, str(self.shape)))
        self._deferred_init = (init, ctx, default_init, None)
        self._finish_deferred_init()

    def _finish_deferred_init(self):
        """Initialize now that the shape is known (after the first forward's inference)."""
        if not self._deferred_init:
            return
        init, ctx, default_init, data = self._deferred_init
        self._deferred_init = ()
        if not shape_is_known(self.shape):
            raise GluonArgumentError(
                "Cannot initialize Parameter '%s' because it has invalid shape: %s. Please "
                "specify in_units, in_channels, etc for `Block`s." % (self.name,
                                                                     str(self.shape)))
        with autograd.pause():
            if data is None:
                data = ndarray.zeros(self.shape, dtype=self.dtype, ctx=cpu())
                initializer.create(default_init)(
                    initializer.InitDesc(self.name, {'__init__': init}), data)
            self._init_impl(data, ctx)

    def _init_impl(self, data, ctx_list):
        """Set the data (a copy per context) and the gradients."""
        self._ctx_list = list(ctx_list)
        self._ctx_map = {}
        for i, ctx in enumerate(self._ctx_list):
            self._ctx_map[_ctx_key(ctx)] = i
        if data.stype != self._stype:
            data = data.tostype(self._stype)     # a sparse parameter's arrays are sparse
        self._data = [data.copyto(ctx) for ctx in self._ctx_list]
        self._init_grad()

    def _init_grad(self):
        """Allocate the gradient arrays and mark the data as autograd variables."""
        if self.grad_req == 'null':
            self._grad = None
            return
        # (a sparse gradient's rows: those its values hold, whoever writes them)
        self._grad = [ndarray.zeros(i.shape, dtype=i.dtype, ctx=i.context).tostype(
            self._grad_stype) for i in self._data]
        autograd.mark_variables(self._check_and_get(self._data, list), self._grad,
                                self.grad_req)

    def _load_init(self, data, ctx, cast_dtype=False, dtype_source='current'):
        """(Re)initialize from the loaded array ``data``."""
        if cast_dtype and dtype_source not in ('current', 'saved'):
            raise GluonArgumentError("dtype_source must be 'current' or 'saved', got %r"
                                     % (dtype_source,))
        if self.shape:
            for self_dim, data_dim in zip(self.shape, data.shape):
                if self_dim not in (0, data_dim) or len(self.shape) != len(data.shape):
                    raise GluonArgumentError(
                        "Failed loading Parameter '%s' from saved params: shape incompatible "
                        "expected %s vs saved %s" % (self.name, str(self.shape),
                                                     str(data.shape)))
            self.shape = tuple(i if i != 0 else j for i, j in zip(self.shape, data.shape))
        if self.dtype:
            if cast_dtype and as_dtype(self.dtype) != as_dtype(data.dtype):
                if dtype_source == 'current':
                    data = data.astype(self.dtype, copy=False)
                else:
                    self.dtype = data.dtype
            elif as_dtype(self.dtype) != as_dtype(data.dtype):
                raise GluonArgumentError(
                    "Failed loading Parameter '%s' from saved params: dtype incompatible "
                    "expected %s vs saved %s. Set cast_dtype=True to cast the dtype of saved "
                    "params." % (self.name, str(self.dtype), str(data.dtype)))
        if isinstance(ctx, Context):
            ctx = [ctx]
        if self._data is None:
            if self._deferred_init:
                if ctx is not None and set(ctx) != set(self._deferred_init[1]):
                    raise GluonArgumentError(
                        "Failed to load Parameter '%s' on %s because it was previous "
                        "initialized on %s." % (self.name, str(ctx), str(self.list_ctx())))
                ctx = self._deferred_init[1]
            elif ctx is None:
                ctx = [cpu()]
            with autograd.pause():
                self._init_impl(data, ctx)
        else:
            if ctx is not None and set(ctx) != set(self.list_ctx()):
                raise GluonArgumentError(
                    "Failed to load Parameter '%s' on %s because it was previous initialized "
                    "on %s." % (self.name, str(ctx), str(self.list_ctx())))
            self.set_data(data)
        self._deferred_init = ()

    def _reduce(self):
        """The value on the CPU: the mean over the contexts (MXNet's reduce for saving)."""
        ctx = cpu()
        if self._stype != 'default':
            # every row, from the Trainer's store where the weight lives (as MXNet's)
            data = ndarray.zeros(self.shape, ctx=ctx, dtype=self.dtype, stype=self._stype)
            if self._trainer is not None:
                all_rows = ndarray.arange(0, self.shape[0], dtype='int64', ctx=ctx)
                self._trainer._row_sparse_pull(self, data, all_rows, full_idx=True)
            else:
                self._check_and_get(self._data, list)[0].copyto(data)
            return data
        with autograd.pause():
            block = self.list_data()
            if len(block) > 1:
                total = block[0].copyto(ctx)
                for w in block[1:]:
                    total += w.copyto(ctx)
                return total / len(block)
            return self.data().copyto(ctx)

    def reset_ctx(self, ctx):
        """Move the parameter to other contexts (a copy on each)."""
        ctx = _as_ctx_list(ctx)
        if self._data:
            data = self._reduce()
            with autograd.pause():
                self._init_impl(data, ctx)
        elif self._deferred_init:
            init, _, default_init, data = self._deferred_init
            self._deferred_init = (init, ctx, default_init, data)
        else:
            raise UsageError("Cannot reset context for Parameter '%s' because it has not "
                             "been initialized." % self.name)

    def set_data(self, data):
        """Set the value on every context (before a deferred init: keep it for then)."""
        self.shape = data.shape
        if self._data is None:
            if not self._deferred_init:
                raise UsageError("Parameter '%s' has not been initialized" % self.name)
            self._deferred_init = self._deferred_init[:3] + (data,)
            return
        trainer = self._trainer
        if trainer is not None and getattr(trainer, '_kv_initialized', False) and \
                getattr(trainer, '_update_on_kvstore', False):
            if self not in trainer._params_to_init:
                trainer._reset_kvstore()
        with autograd.pause():
            for arr in self._check_and_get(self._data, list):
                arr[:] = data

    def zero_grad(self):
        """Set the gradient arrays to 0 (nothing to do without gradients)."""
        if self._grad is None:
            return
        for g in self._grad:
            g[:] = 0

    def var(self):
        """The Symbol Variable standing for this parameter in a traced graph."""
        if self._var is None:
            self._var = symbol.var(self.name, shape=self.shape, dtype=self.dtype,
                                   lr_mult=self.lr_mult, wd_mult=self.wd_mult,
                                   init=self.init, stype=self._stype)
        return self._var

    def cast(self, dtype):
        """Cast the data and gradients to ``dtype``."""
        self._dtype = dtype
        if self._data is None:
            return
        with autograd.pause():
            self._data = [i.astype(dtype) for i in self._data]
            if self._grad is None:
                return
            self._grad = [i.astype(dtype) for i in self._grad]
            autograd.mark_variables(self._data, self._grad, self.grad_req)


class Constant(Parameter):
    """A parameter that autograd and Trainer leave alone (``grad_req`` is always 'null');
    :meth:`set_data` still changes it.

    >>> import symgraph as mx
    >>> c = mx.gluon.Constant('c', [[1, 2], [3, 4]])
    >>> c.initialize()
    >>> c.data().asnumpy().tolist()
    [[1.0, 2.0], [3.0, 4.0]]
    """

    def __init__(self, name, value):
        if not isinstance(value, NDArray):
            value = ndarray.array(value)
        self.value = value

        class Init(initializer.Initializer):
            def _init_weight(self, _, arr):
                value.copyto(arr)
        # registered under a unique name, as MXNet does, so that the Variable's __init__
        # attribute names it
        init_name = 'Constant_{}_{}'.format(name, id(self))
        initializer.alias(init_name)(Init)
        super().__init__(name, grad_req='null', shape=value.shape, dtype=value.dtype,
                         init=init_name)

    def __repr__(self):
        return 'Constant %s (shape=%s, dtype=%s)' % (self.name, self.shape, self.dtype)

    @property
    def grad_req(self):
        return 'null'

    @grad_req.setter
    def grad_req(self, req):
        if req != 'null':
            warnings.warn('Constant parameter "{}" does not support grad_req other than '
                          '"null", and new value "{}" is ignored.'.format(self.name, req),
                          stacklevel=2)


class ParameterDict:
    """An ordered dictionary of Parameters named with a common prefix.

    ``shared``: a ParameterDict whose parameters :meth:`get` returns before creating new
    ones (how Blocks share weights).

    >>> import symgraph as mx
    >>> d = mx.gluon.ParameterDict('net_')
    >>> d.get('weight', shape=(2, 2)).name
    'net_weight'
    """

    def __init__(self, prefix='', shared=None):
        self._prefix = prefix
        self._params = OrderedDict()
        self._shared = shared

    def __repr__(self):
        name = self._prefix + ' ' if self._prefix else ''
        return '{name}(\n{content}\n)'.format(
            name=name, content='\n'.join([_indent('  {0}'.format(v), 2)
                                          for v in self.values()]))

    def __getitem__(self, key):
        return self._params[key]

    def __iter__(self):
        return iter(self._params)

    def __len__(self):
        return len(self._params)

    def __contains__(self, key):
        return key in self._params

    def items(self):
        return self._params.items()

    def keys(self):
        return self._params.keys()

    def values(self):
        return self._params.values()

    @property
    def prefix(self):
        """What :meth:`get` prepends to the names it is given."""
        return self._prefix

    def _get_impl(self, name):
        if name in self._params:
            return self._params[name]
        if self._shared is not None and name in self._shared._params:
            self._params[name] = self._shared._params[name]
            return self._shared._params[name]
        return None

    def get(self, name, **kwargs):
        """The Parameter ``prefix + name``: this dict's, else the shared dict's, else a new
        one made with ``kwargs``. Given attributes must agree with an existing one's (a
        shape's 0 dimensions are filled in)."""
        name = self.prefix + name
        param = self._get_impl(name)
        if param is None:
            param = Parameter(name, **kwargs)
            self._params[name] = param
            return param
        for k, v in kwargs.items():
            existing = getattr(param, k, None)
            if existing is None:
                setattr(param, k, v)
                continue
            if k == 'shape' and v is not None:
                v = (v,) if isinstance(v, int) else tuple(v)
                if len(v) == len(existing):
                    inferred, matched = [], True
                    for dim1, dim2 in zip(v, existing):
                        if dim1 != dim2 and dim1 > 0 and dim2 > 0:
                            matched = False
                            break
                        inferred.append(dim2 if dim1 == 0 else dim1)
                    if matched:
                        param._shape = tuple(inferred)
                        continue
            elif k == 'dtype' and v is not None and np.dtype(v) == np.dtype(existing):
                continue
            if v is not None and v != existing:
                raise GluonArgumentError(
                    "Cannot retrieve Parameter '%s' because desired attribute does not match "
                    "with stored for attribute '%s': desired '%s' vs stored '%s'."
                    % (name, k, str(v), str(existing)))
        return param

    def get_constant(self, name, value=None):
        """The Constant ``prefix + name``, made from ``value`` when it does not exist."""
        name = self.prefix + name
        param = self._get_impl(name)
        if param is None:
            if value is None:
                raise KeyError("No constant named '{}'. Please specify value if you want to "
                               "create a new constant.".format(name))
            param = Constant(name, value)
            self._params[name] = param
        elif value is not None:
            if not isinstance(param, Constant):
                raise GluonArgumentError("Parameter '{}' already exists but it is not a "
                                         "constant.".format(name))
            if isinstance(value, NDArray):
                value = value.asnumpy()
            value = np.asarray(value)
            if param.shape != value.shape or not (param.value.asnumpy() == value).all():
                raise GluonArgumentError("Constant '{}' already exists but it's value doesn't "
                                         "match new value".format(name))
        return param

    def update(self, other):
        """Copy the Parameters of ``other`` in (a different one under a taken name is an
        error)."""
        for k, v in other.items():
            if k in self._params and self._params[k] is not v:
                raise GluonArgumentError("Cannot update self with other because they have "
                                         "different Parameters with the same name '%s'" % k)
        for k, v in other.items():
            self._params[k] = v

    def initialize(self, init=initializer.Uniform(), ctx=None, verbose=False,
                   force_reinit=False):
        """Initialize every Parameter (``init`` where a Parameter has no ``init`` of its
        own)."""
        if verbose:
            init.set_verbosity(verbose=verbose)
        for _, v in self.items():
            v.initialize(None, ctx, init, force_reinit=force_reinit)

    def zero_grad(self):
        """Set every Parameter's gradient arrays to 0."""
        for p in self.values():
            if p.grad_req != 'null' and p._grad is not None:
                for g in p._grad:
                    g[:] = 0

    def reset_ctx(self, ctx):
        """Move every Parameter to ``ctx``."""
        for i in self.values():
            i.reset_ctx(ctx)

    def list_ctx(self):
        """Every context some Parameter is initialized on."""
        s = set()
        for i in self.values():
            s.update(i.list_ctx())
        return list(s)

    def setattr(self, name, value):
        """Set attribute ``name`` of every Parameter (``'grad_req'``, ``'lr_mult'``...)."""
        for i in self.values():
            setattr(i, name, value)

    def save(self, filename, strip_prefix=''):
        """Save the Parameters by name (less ``strip_prefix``) in MXNet's ``.params``
        format."""
        arg_dict = {}
        for param in self.values():
            weight = param._reduce()
            if not param.name.startswith(strip_prefix):
                raise GluonArgumentError(
                    "Prefix '%s' is to be striped before saving, but Parameter's name '%s' "
                    "does not start with '%s'. this may be due to your Block shares "
                    "parameters from other Blocks or you forgot to use 'with name_scope()' "
                    "when creating child blocks." % (strip_prefix, param.name, strip_prefix))
            arg_dict[param.name[len(strip_prefix):]] = weight
        ndarray.save(filename, arg_dict)

    def load(self, filename, ctx=None, allow_missing=False, ignore_extra=False,
             restore_prefix='', cast_dtype=False, dtype_source='current'):
        """Load Parameters from a ``.params`` file (``arg:``/``aux:`` prefixes of
        checkpoints are dropped; ``restore_prefix`` is prepended to the stored names)."""
        if restore_prefix:
            for name in self.keys():
                if not name.startswith(restore_prefix):
                    raise GluonArgumentError(
                        "restore_prefix is '%s' but Parameters name '%s' does not start with "
                        "'%s'." % (restore_prefix, name, restore_prefix))
        self.load_dict(ndarray.load(filename), ctx, allow_missing, ignore_extra,
                       restore_prefix, filename, cast_dtype, dtype_source)

    def load_dict(self, param_dict, ctx=None, allow_missing=False, ignore_extra=False,
                  restore_prefix='', filename=None, cast_dtype=False,
                  dtype_source='current'):
        """:meth:`load` from a dict of NDArrays."""
        lprefix = len(restore_prefix)
        if not isinstance(param_dict, dict):
            raise ArgumentTypeError('load_dict needs a dict of name -> NDArray (the file %s '
                                    'holds a list)' % (filename or 'given'))
        loaded = [(k[4:] if k.startswith('arg:') or k.startswith('aux:') else k, v)
                  for k, v in param_dict.items()]
        arg_dict = {restore_prefix + k: v for k, v in loaded}
        error_str = 'file: %s' % filename if filename else 'param_dict'
        if not allow_missing:
            for name in self.keys():
                if name not in arg_dict:
                    raise GluonArgumentError(
                        "Parameter '%s' is missing in %s, which contains parameters: %s. "
                        "Please make sure source and target networks have the same prefix."
                        % (name[lprefix:], error_str, _brief_print_list(arg_dict.keys())))
        for name in arg_dict:
            if name not in self._params:
                if not ignore_extra:
                    raise GluonArgumentError(
                        "Parameter '%s' loaded from %s is not present in ParameterDict, "
                        "choices are: %s. Set ignore_extra to True to ignore. Please make "
                        "sure source and target networks have the same prefix."
                        % (name[lprefix:], error_str, _brief_print_list(self._params.keys())))
                continue
            self[name]._load_init(arg_dict[name], ctx, cast_dtype=cast_dtype,
                                  dtype_source=dtype_source)
