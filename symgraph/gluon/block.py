"""Gluon's containers: ``Block``, ``HybridBlock`` and ``SymbolBlock``.

After MXNet 1.9.1's ``python/mxnet/gluon/block.py``. A Block names itself and its
parameters with MXNet 1.x's prefixes (``dense0_``, ``hybridsequential0_conv0_``), holds
children and parameters, saves and loads them in MXNet's ``.params`` format. A HybridBlock
runs ``hybrid_forward(F, x, ...)`` with ``F = mx.nd`` imperatively; hybridized, it traces
``hybrid_forward`` once with ``F = mx.sym`` into a Symbol and runs that through the
executor (:mod:`symgraph.gluon.cached_op`), one tape node per call under
``autograd.record()``.
"""
from collections import OrderedDict, defaultdict
import re
import warnings

import numpy as np

from ..base import ArgumentTypeError, NotSupportedError, UsageError, as_dtype, is_bfloat16
from .. import initializer
from .. import ndarray
from .. import symbol
from ..ndarray import NDArray
from ..symbol import Symbol
from .cached_op import CachedOp
from .parameter import (Parameter, ParameterDict, DeferredInitializationError,
                        GluonArgumentError)
from .utils import _indent, _brief_print_list, HookHandle
from .block_utils import (BlockScope, _flatten, _regroup, _gather_type_ctx_info,
                          _common_prefix, _infer_param_types, print_summary,
                          save_structure, load_structure)

__all__ = ['Block', 'HybridBlock', 'SymbolBlock']


class Block:
    """Base class of all neural network layers and models.

    Children Blocks and Parameters assigned as attributes are registered; create children
    inside ``with self.name_scope():`` so that they are named after this block.

    Parameters
    ----------
    prefix : str, optional
        The prefix of this block's name and of its parameters' names (by default the
        class's lower-case name and a counter, e.g. ``model0_``).
    params : ParameterDict, optional
        Parameters to share (``Dense(20, params=dense0.collect_params())``).
    """

    def __init__(self, prefix=None, params=None):
        self._empty_prefix = prefix == ''
        self._prefix, self._params = BlockScope.create(prefix, params, self._alias())
        self._name = self._prefix[:-1] if self._prefix.endswith('_') else self._prefix
        self._scope = BlockScope(self)
        self._children = OrderedDict()
        self._reg_params = {}
        self._forward_hooks = OrderedDict()
        self._forward_pre_hooks = OrderedDict()

    def __repr__(self):
        modstr = '\n'.join(['  ({key}): {block}'.format(key=key,
                                                        block=_indent(block.__repr__(), 2))
                            for key, block in self.__dict__.items()
                            if isinstance(block, Block)])
        return '{name}(\n{modstr}\n)'.format(name=self.__class__.__name__, modstr=modstr)

    def __setattr__(self, name, value):
        """Registers children Blocks and Parameters."""
        if hasattr(self, name):
            existing = getattr(self, name)
            if isinstance(existing, (Parameter, Block)) and not isinstance(value, type(existing)):
                raise TypeError('Changing attribute type for {name} from {type1} to {type2}'
                                'is not allowed.'.format(name=name, type1=type(existing),
                                                         type2=type(value)))
        if isinstance(value, Block):
            self.register_child(value, name)
        elif isinstance(value, Parameter):
            if name in self._reg_params:
                raise GluonArgumentError(
                    'Overriding Parameter attribute %s is not allowed. If you want to share '
                    "parameters between blocks, please set 'params' at Block construction "
                    'instead.' % name)
            self._reg_params[name] = value
        super().__setattr__(name, value)

    def _check_container_with_block(self):
        children = set(id(c) for c in self._children.values())

        def unregistered(data):
            if isinstance(data, (list, tuple)):
                return any(unregistered(e) for e in data)
            if isinstance(data, dict):
                return any(unregistered(v) for v in data.values())
            if isinstance(data, Block):
                return id(data) not in children
            return False
        for k, v in self.__dict__.items():
            if isinstance(v, (list, tuple, dict)) and not (k.startswith('__') or
                                                           k == '_children'):
                if unregistered(v):
                    warnings.warn('"{name}" is an unregistered container with Blocks. Note that '
                                  'Blocks inside the list, tuple or dict will not be registered '
                                  'automatically. Make sure to register them using '
                                  'register_child() or switching to '
                                  'nn.Sequential/nn.HybridSequential instead. '
                                  .format(name=self.__class__.__name__ + '.' + k),
                                  stacklevel=3)

    def _alias(self):
        return self.__class__.__name__.lower()

    @property
    def prefix(self):
        """Prefix of this Block."""
        return self._prefix

    @property
    def name(self):
        """Name of this Block, without the trailing '_'."""
        return self._name

    def name_scope(self):
        """The scope (``with`` statement) in which children are named after this block."""
        return self._scope

    @property
    def params(self):
        """This Block's own ParameterDict (without its children's parameters)."""
        return self._params

    def collect_params(self, select=None):
        """A ParameterDict of this Block's and all its children's Parameters; ``select``: a
        regular expression the names must match (``'.*weight|.*bias'``)."""
        self._check_container_with_block()
        ret = ParameterDict(self._params.prefix)
        if not select:
            ret.update(self.params)
        else:
            pattern = re.compile(select)
            ret.update({name: value for name, value in self.params.items()
                        if pattern.match(name)})
        for cld in self._children.values():
            ret.update(cld.collect_params(select=select))
        return ret

    def _collect_params_with_prefix(self, prefix=''):
        """{structural name ('features.0.weight'): Parameter} as save_parameters keys it."""
        if prefix:
            prefix += '.'
        ret = {prefix + key: val for key, val in self._reg_params.items()}
        for name, child in self._children.items():
            ret.update(child._collect_params_with_prefix(prefix + name))
        return ret

    # ------------------------------------------------------------------ files
    def save_parameters(self, filename, deduplicate=False):
        """Save the parameters under their structural names (``0.weight``) in MXNet's
        ``.params`` format; ``deduplicate``: a shared parameter once."""
        params = self._collect_params_with_prefix()
        if deduplicate:
            reverse = {v: k for k, v in params.items()}
            params = {v: k for k, v in reverse.items()}
        ndarray.save(filename, {key: val._reduce() for key, val in params.items()})

    def save_params(self, filename):
        """[Deprecated] Save the parameters under their names less this block's prefix."""
        warnings.warn('save_params is deprecated. Please use save_parameters. Note that if '
                      'you want load from SymbolBlock later, please use export instead. For '
                      'details, see https://mxnet.apache.org/tutorials/gluon/save_load_params'
                      '.html', stacklevel=2)
        try:
            self.collect_params().save(filename, strip_prefix=self.prefix)
        except ValueError as e:
            raise GluonArgumentError('%s\nsave_params is deprecated. Using save_parameters '
                                     'may resolve this error.' % e) from None

    def load_parameters(self, filename, ctx=None, allow_missing=False, ignore_extra=False,
                        cast_dtype=False, dtype_source='current'):
        """Load parameters saved by :meth:`save_parameters` (or, with names without dots,
        by the legacy :meth:`save_params`)."""
        loaded = ndarray.load(filename)
        if not isinstance(loaded, dict):
            raise ArgumentTypeError('load_parameters: %s holds a list of arrays, not named '
                                    'parameters' % filename)
        params = self._collect_params_with_prefix()
        if not loaded and not params:
            return
        if not any('.' in i for i in loaded.keys()):
            # legacy files: names less the block's prefix
            del loaded
            self.collect_params().load(filename, ctx, allow_missing, ignore_extra,
                                       self.prefix, cast_dtype=cast_dtype,
                                       dtype_source=dtype_source)
            return
        if not allow_missing:
            # a shared parameter may be stored under one of its names only
            params_inv = defaultdict(list)
            for k, v in params.items():
                params_inv[v].append(k)
            for name, param in params.items():
                if not any(p in loaded for p in params_inv[param]):
                    raise GluonArgumentError(
                        "Parameter '%s' is missing in file '%s', which contains parameters: "
                        "%s. Set allow_missing=True to ignore missing parameters."
                        % (name, filename, _brief_print_list(loaded.keys())))
        for name in loaded:
            if not ignore_extra and name not in params:
                raise GluonArgumentError(
                    "Parameter '%s' loaded from file '%s' is not present in ParameterDict, "
                    "which contains parameters %s. Set ignore_extra=True to ignore. "
                    % (name, filename, _brief_print_list(self._params.keys())))
            if name in params:
                params[name]._load_init(loaded[name], ctx, cast_dtype=cast_dtype,
                                        dtype_source=dtype_source)

    def load_params(self, filename, ctx=None, allow_missing=False, ignore_extra=False):
        """[Deprecated] :meth:`load_parameters`."""
        warnings.warn('load_params is deprecated. Please use load_parameters.', stacklevel=2)
        self.load_parameters(filename, ctx, allow_missing, ignore_extra)

    def save(self, prefix):
        """Save the model's structure (``prefix-model.json``: names, traced graphs) and
        parameters (``prefix-model.params``); :meth:`load` restores them onto a model built
        again in the same order."""
        save_structure(self, prefix)

    def load(self, prefix):
        """Load what :meth:`save` wrote (see there)."""
        load_structure(self, prefix)

    # ------------------------------------------------------------------ structure
    def register_child(self, block, name=None):
        """Register ``block`` as a child (attributes do this by themselves)."""
        if name is None:
            name = str(len(self._children))
        self._children[name] = block

    def register_forward_pre_hook(self, hook):
        """Call ``hook(block, inputs)`` before each forward; returns a HookHandle."""
        handle = HookHandle()
        handle.attach(self._forward_pre_hooks, hook)
        return handle

    def register_forward_hook(self, hook):
        """Call ``hook(block, inputs, outputs)`` after each forward; returns a HookHandle."""
        handle = HookHandle()
        handle.attach(self._forward_hooks, hook)
        return handle

    def apply(self, fn):
        """Call ``fn(block)`` on every child (recursively), then on this block."""
        for cld in self._children.values():
            cld.apply(fn)
        fn(self)
        return self

    def initialize(self, init=initializer.Uniform(), ctx=None, verbose=False,
                   force_reinit=False):
        """``collect_params().initialize(...)``."""
        self.collect_params().initialize(init, ctx, verbose, force_reinit)

    def hybridize(self, active=True, **kwargs):
        """Hybridize the HybridBlock children (see :meth:`HybridBlock.hybridize`)."""
        for cld in self._children.values():
            cld.hybridize(active, **kwargs)

    def cast(self, dtype):
        """Cast the parameters (this block's and its children's) to ``dtype``."""
        for child in self._children.values():
            child.cast(dtype)
        for _, param in self.params.items():
            param.cast(dtype)

    def zero_grad(self):
        """Set the gradients of all parameters to 0."""
        self.collect_params().zero_grad()

    def reset_ctx(self, ctx):
        """Move all parameters to ``ctx``."""
        self.collect_params().reset_ctx(ctx)

    def __call__(self, *args):
        """Run :meth:`forward` between the hooks."""
        for hook in self._forward_pre_hooks.values():
            hook(self, args)
        out = self.forward(*args)
        for hook in self._forward_hooks.values():
            hook(self, args, out)
        return out

    def forward(self, *args):
        """The computation, on NDArrays; subclasses override it."""
        raise NotImplementedError

    def register_op_hook(self, callback, monitor_all=False):
        """Install ``callback(name, op_name, array)`` on the hybridized children."""
        for cld in self._children.values():
            cld.register_op_hook(callback, monitor_all)

    def summary(self, *inputs):
        """Print MXNet's table of each layer's output shape and parameter count (the
        network must be initialized and not hybridized)."""
        print_summary(self, inputs)

class HybridBlock(Block):
    """A Block whose ``hybrid_forward(F, x, *args, **params)`` runs on NDArrays
    (``F = mx.nd``) and on Symbols (``F = mx.sym``); :meth:`hybridize` makes it trace
    itself once into a Symbol and run that graph through the executor.

    >>> import symgraph as mx
    >>> class Scale(mx.gluon.HybridBlock):
    ...     def __init__(self, **kwargs):
    ...         super().__init__(**kwargs)
    ...         with self.name_scope():
    ...             self.w = self.params.get('w', shape=(1,), init=mx.init.Constant(3))
    ...     def hybrid_forward(self, F, x, w):
    ...         return F.broadcast_mul(x, w)
    >>> net = Scale(prefix='scale_')
    >>> net.initialize()
    >>> net.hybridize()
    >>> net(mx.nd.array([1, 2])).asnumpy().tolist()
    [3.0, 6.0]
    """

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._cached_graph = ()
        self._cached_op = None
        self._cached_op_args = []
        self._out_format = None
        self._in_format = None
        self._active = False
        self._flags = []
        self._callback = None
        self._monitor_all = False
        self._backend = None
        self._backend_opts = {}

    def __setattr__(self, name, value):
        """Registers parameters (and forgets the traced graph when a child changes)."""
        super().__setattr__(name, value)
        if isinstance(value, HybridBlock):
            self._clear_cached_op()

    def _get_graph(self, *args):
        """The traced graph: (input Variables, output Symbol), traced at the first call."""
        if not self._cached_graph:
            flat_args, self._in_format = _flatten(args, 'input')
            real = sum(ele is not None for ele in flat_args)
            if real == 0:
                raise GluonArgumentError('All args are None and we do not support such a '
                                         'case. Received args={}'.format(args))
            flat_inputs, symbol_inputs = [], []
            cnt = 0
            for arg in flat_args:
                if arg is None:
                    flat_inputs.append(None)
                    continue
                # MXNet's input names: 'data' alone, else data0, data1, ...
                sym = symbol.var('data{}'.format(cnt) if real > 1 else 'data')
                cnt += 1
                flat_inputs.append(sym)
                symbol_inputs.append(sym)
            grouped = _regroup(flat_inputs, self._in_format)
            params = {i: j.var() for i, j in self._reg_params.items()}
            with self.name_scope():
                out = self.hybrid_forward(symbol, *grouped, **params)
            out, self._out_format = _flatten(out, 'output')
            self._cached_graph = symbol_inputs, symbol.Group(out)
        return self._cached_graph

    def _build_cache(self, *args):
        data, out = self._get_graph(*args)
        data_names = {d.name: i for i, d in enumerate(data)}
        input_names = out.list_inputs()
        expected = set(input_names)
        if self._cached_op_args:
            params = {p.name: p for is_arg, p in self._cached_op_args if not is_arg}
        else:
            params = self.collect_params()
        param_names = set(params.keys())
        for name in expected:
            if name not in param_names and name not in data_names:
                raise GluonArgumentError('Unknown input to HybridBlock: %s' % name)
        used_data = [i for i in data_names if i in expected]
        if len(used_data) != len(data_names):
            unused = ', '.join(['%d-th' % i for name, i in data_names.items()
                                if name not in expected])
            warnings.warn('The %s input to HybridBlock is not used by any computation. Is '
                          'this intended?' % unused, stacklevel=4)
        used_params = [i for i in param_names if i in expected]
        if len(used_params) != len(param_names):
            unused = ', '.join(sorted(param_names - set(used_params)))
            warnings.warn('Parameter %s is not used by any computation. Is this intended?'
                          % unused, stacklevel=4)
        flat, _ = _flatten(args, 'input')
        try:
            for name in input_names:
                if name in params:
                    params[name].data()
        except DeferredInitializationError:
            self._deferred_infer_shape(*flat)
            for name in input_names:
                if name in params:
                    params[name]._finish_deferred_init()
        self._cached_op_args = [(True, data_names[name]) if name in data_names
                                else (False, params[name]) for name in input_names]
        self._cached_op = CachedOp(out, self._cached_op_args, dict(self._flags),
                                   name=self.name)
        if self._callback is not None:
            self._cached_op.register_op_hook(self._callback, self._monitor_all)

    def _deferred_infer_shape(self, *args):
        try:
            self.infer_shape(*args)
        except Exception as e:
            raise GluonArgumentError('Deferred initialization failed because shape cannot be '
                                     'inferred. {}'.format(e)) from e

    def _call_cached_op(self, *args):
        if self._cached_op is None:
            self._build_cache(*args)
        args, fmt = _flatten(args, 'input')
        if fmt != self._in_format:
            # a structure that differs only by trailing None (default arguments) is fine
            n, m = len(self._in_format), len(fmt)
            if n > m:
                valid = all(self._in_format[i] == -1 for i in range(m, n)) and \
                    fmt == self._in_format[:m]
            elif n < m:
                valid = all(fmt[i] == -1 for i in range(n, m)) and \
                    fmt[:n] == self._in_format
            else:
                valid = False
            if not valid:
                raise GluonArgumentError('The argument structure of HybridBlock does not match '
                                         'the cached version. Stored format = {}, input format '
                                         '= {}'.format(fmt, self._in_format))
        data = [ele for ele in args if ele is not None]
        out = self._cached_op(data)
        return _regroup(out, self._out_format)

    def _clear_cached_op(self):
        self._cached_graph = ()
        self._cached_op = None
        self._cached_op_args = []

    def register_child(self, block, name=None):
        if not isinstance(block, HybridBlock):
            raise GluonArgumentError(
                'Children of HybridBlock must also be HybridBlock, but %s has type %s. If you '
                'are using Sequential, please try HybridSequential instead.'
                % (str(block), str(type(block))))
        super().register_child(block, name)
        self._clear_cached_op()

    def hybridize(self, active=True, backend=None, clear=True, static_alloc=False,
                  static_shape=False, inline_limit=2, forward_bulk_size=None,
                  backward_bulk_size=None, **kwargs):
        """Turn hybrid execution on (or off), recursively.

        Parameters
        ----------
        active : bool, default True
        backend : str, optional
            MXNet's subgraph backends are not available: anything but None is an error.
        clear : bool, default True
            Forget the traced graph and its executors.
        static_alloc, static_shape : bool, default False
            Accepted as MXNet has them; symgraph keeps each input signature's bound
            executor and its buffers across calls in every mode.
        inline_limit, forward_bulk_size, backward_bulk_size
            Accepted and ignored (MXNet's engine tuning).
        """
        if backend is not None:
            raise NotSupportedError('hybridize(backend=%r): symgraph has no subgraph backends '
                                    '(its executor applies its own fusion passes)' % (backend,))
        if kwargs:
            self._backend_opts = kwargs
        self._active = active
        self._flags = [('static_alloc', static_alloc), ('static_shape', static_shape),
                       ('inline_limit', inline_limit)]
        if forward_bulk_size is not None:
            self._flags.append(('forward_bulk_size', forward_bulk_size))
        if backward_bulk_size is not None:
            self._flags.append(('backward_bulk_size', backward_bulk_size))
        if clear:
            self._clear_cached_op()
        if active and self._forward_hooks or self._forward_pre_hooks:
            warnings.warn('"{block}" is being hybridized while still having forward '
                          'hook/pre-hook. If "{block}" is a child of HybridBlock, the hooks '
                          'will not take effect.'.format(block=self), stacklevel=2)
        super().hybridize(active, static_alloc=static_alloc, static_shape=static_shape,
                          inline_limit=inline_limit, forward_bulk_size=forward_bulk_size,
                          backward_bulk_size=backward_bulk_size)

    def optimize_for(self, x, *args, backend=None, **kwargs):
        """MXNet's partitioning for a subgraph backend: not available in symgraph."""
        raise NotSupportedError('optimize_for(backend=%r): symgraph has no subgraph backends; '
                                'hybridize() runs the graph through its executor, whose '
                                'fusion and inference passes apply by themselves' % (backend,))

    def cast(self, dtype):
        self._clear_cached_op()
        super().cast(dtype)

    def _infer_attrs(self, infer_fn, attr, *args):
        """Set ``attr`` (shape or dtype) of every parameter from the traced graph."""
        inputs, out = self._get_graph(*args)
        args, _ = _flatten(args, 'input')
        args = [ele for ele in args if ele is not None]
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter('always')
            arg_attrs, _, aux_attrs = getattr(out, infer_fn)(
                **{i.name: getattr(j, attr) for i, j in zip(inputs, args)})
        if arg_attrs is None:
            raise GluonArgumentError(str(w[0].message) if w else
                                     '%s failed for %s' % (infer_fn, self.name))
        sdict = dict(zip(out.list_arguments(), arg_attrs))
        sdict.update(zip(out.list_auxiliary_states(), aux_attrs))
        for i in self.collect_params().values():
            if i.name not in sdict:
                raise GluonArgumentError('Parameter %r of %s is not used by its graph, so its '
                                         '%s cannot be inferred' % (i.name, self.name, attr))
            setattr(i, attr, sdict[i.name])

    def infer_shape(self, *args):
        """Infer the parameters' shapes from inputs."""
        self._infer_attrs('infer_shape', 'shape', *args)

    def infer_type(self, *args):
        """Infer the parameters' dtypes from inputs."""
        self._infer_attrs('infer_type', 'dtype', *args)

    def export(self, path, epoch=0, remove_amp_cast=True):
        """Write ``path-symbol.json`` and ``path-%04d.params`` (``arg:``/``aux:`` names), as
        MXNet does, for ``SymbolBlock.imports``, ``mx.mod.Module`` and MXNet itself. The
        block must have been hybridized and run once."""
        if not self._cached_graph:
            raise UsageError('Please first call block.hybridize() and then run forward with '
                             'this block at least once before calling export.')
        sym = self._cached_graph[1]
        sym.save('%s-symbol.json' % path, remove_amp_cast=remove_amp_cast)
        arg_names = set(sym.list_arguments())
        aux_names = set(sym.list_auxiliary_states())
        arg_dict = {}
        for is_arg, param in self._cached_op_args:
            if is_arg:
                continue
            if param.name in arg_names:
                arg_dict['arg:%s' % param.name] = param._reduce()
            elif param.name in aux_names:
                arg_dict['aux:%s' % param.name] = param._reduce()
            else:
                warnings.warn('Parameter "{name}" is not found in the graph. '
                              .format(name=param.name), stacklevel=2)
        ndarray.save('%s-%04d.params' % (path, epoch), arg_dict)

    def register_op_hook(self, callback, monitor_all=False):
        """Install ``callback(name, op_name, array)`` on this block's graph (and the
        children's), called with each operator's outputs (and inputs with
        ``monitor_all``) as the hybridized graph runs."""
        self._callback = callback
        self._monitor_all = monitor_all
        if self._cached_op is not None:
            self._cached_op.register_op_hook(callback, monitor_all)
        for cld in self._children.values():
            cld._callback = callback
            cld._monitor_all = monitor_all

    def forward(self, x, *args):
        """Run ``hybrid_forward``: through the cached graph when hybridized, else with
        ``F = mx.nd`` (NDArrays) or ``F = mx.sym`` (Symbols)."""
        has_symbol, has_ndarray, ctx_set, first_ctx = _gather_type_ctx_info([x] + list(args))
        if has_symbol and has_ndarray:
            raise GluonArgumentError('In HybridBlock, we do not support mixed NDArrays and '
                                     'Symbols types for the input. Please check the type of '
                                     'the args.\n')
        if not has_symbol and not has_ndarray:
            raise GluonArgumentError('In HybridBlock, there must be one NDArray or one Symbol '
                                     'in the input. Please check the type of the args.\n')
        if has_ndarray:
            ctx = first_ctx
            if self._active:
                if len(ctx_set) > 1:
                    raise GluonArgumentError(
                        'Find multiple contexts in the input, After hybridized, the '
                        'HybridBlock only supports one input context. You can print the '
                        'ele.ctx in the input arguments to inspect their contexts. Find all '
                        'contexts = {}'.format(ctx_set))
                with ctx:
                    return self._call_cached_op(x, *args)
            with ctx:
                try:
                    params = {k: v.data(ctx) for k, v in self._reg_params.items()}
                except DeferredInitializationError:
                    self._deferred_infer_shape(x, *args)
                    for _, v in self.params.items():
                        v._finish_deferred_init()
                    params = {k: v.data(ctx) for k, v in self._reg_params.items()}
                return self.hybrid_forward(ndarray, x, *args, **params)
        params = {i: j.var() for i, j in self._reg_params.items()}
        with self.name_scope():
            return self.hybrid_forward(symbol, x, *args, **params)

    def hybrid_forward(self, F, x, *args, **kwargs):
        """The computation with ``F`` the operator namespace (``mx.nd`` or ``mx.sym``);
        parameters come as keyword arguments by their attribute names."""
        raise NotImplementedError


class SymbolBlock(HybridBlock):
    """A Block made from a Symbol: ``outputs`` computed from the Variables ``inputs``; the
    other arguments and auxiliary states become Parameters (shared from ``params`` where
    it has them).

    >>> import symgraph as mx
    >>> x = mx.sym.var('data')
    >>> net = mx.gluon.SymbolBlock(mx.sym.FullyConnected(x, num_hidden=2, name='fc'), x)
    >>> sorted(net.collect_params().keys())
    ['fc_bias', 'fc_weight']
    """

    @staticmethod
    def imports(symbol_file, input_names, param_file=None, ctx=None, allow_missing=False,
                ignore_extra=False):
        """A SymbolBlock from files written by ``HybridBlock.export`` or
        ``Module.save_checkpoint`` (``arg:``/``aux:`` prefixes are dropped)."""
        sym = symbol.load(symbol_file)
        if isinstance(input_names, str):
            input_names = [input_names]
        if param_file is None:
            inputs = [symbol.var(i, dtype=np.float32) for i in input_names]
        else:
            # the types come from the saved parameters
            inputs = [symbol.var(i) for i in input_names]
        ret = SymbolBlock(sym, inputs)
        if param_file is not None:
            ret.collect_params().load(param_file, ctx, allow_missing, ignore_extra,
                                      cast_dtype=True, dtype_source='saved')
        return ret

    def __repr__(self):
        modstr = '{block} : {numinputs} -> {numoutputs}'.format(
            block=self._cached_graph[1], numinputs=len(self._cached_graph[0]),
            numoutputs=len(self._cached_graph[1].list_outputs()))
        return '{name}(\n{modstr}\n)'.format(name=self.__class__.__name__, modstr=modstr)

    def __init__(self, outputs, inputs, params=None):
        super().__init__(prefix=None, params=None)
        self._prefix = ''
        self._params = ParameterDict('', params)
        if isinstance(inputs, Symbol) and len(inputs.list_outputs()) == 1:
            inputs = [inputs]
        if isinstance(outputs, (list, tuple)) and len(outputs) == 1:
            outputs = outputs[0]
        syms, self._in_format = _flatten(inputs, 'input')
        out, self._out_format = _flatten(outputs, 'output')
        input_names = set()
        for i in syms:
            if len(i.get_internals().list_outputs()) != 1:
                raise GluonArgumentError('Input symbols must be variable, but %s is an output '
                                         'of operators' % str(i))
            input_names.add(i.name)
        out = symbol.Group(out) if len(out) > 1 else out[0]
        for j in out.get_internals():
            # as MXNet's: a SymbolBlock has no row_sparse Parameters (they need a Trainer's
            # row_sparse pulls, which a SymbolBlock's forward does not make)
            assert j.attr('__storage_type__') != '1', \
                "SymbolBlock doesn't support Parameter '%s' because its storage type is " \
                "'row_sparse'." % j.name
        arg_params = out.list_arguments()
        aux_params = out.list_auxiliary_states()
        arg_types, aux_types = _infer_param_types(syms, out, arg_params, aux_params)
        for i, arg in enumerate(arg_params):
            if arg not in input_names:
                self.params.get(arg, allow_deferred_init=True, dtype=arg_types[i])
        for i, aux in enumerate(aux_params):
            if aux not in input_names:
                self.params.get(aux, grad_req='null', allow_deferred_init=True,
                                dtype=aux_types[i])
        self._cached_graph = syms, out
        len_prefix = len(_common_prefix(list(self._params.keys())))
        self._reg_params = {key[len_prefix:]: val for key, val in self._params.items()}

    def forward(self, x, *args):
        if isinstance(x, NDArray):
            with x.context:
                return self._call_cached_op(x, *args)
        if not isinstance(x, Symbol):
            raise ArgumentTypeError('HybridBlock requires the first argument to forward be '
                                    'either Symbol or NDArray, but got %s' % type(x))
        args, in_fmt = _flatten([x] + list(args), 'input')
        if in_fmt != self._in_format:
            raise GluonArgumentError('Invalid input format: %s, the block takes %s'
                                     % (in_fmt, self._in_format))
        ret = self._cached_graph[1](**{k.name: v for k, v in zip(self._cached_graph[0], args)})
        return _regroup(list(ret), self._out_format)

    def _clear_cached_op(self):
        tmp = self._cached_graph
        super()._clear_cached_op()
        self._cached_graph = tmp

    def cast(self, dtype):
        self._clear_cached_op()
        super().cast(dtype)
        if as_dtype(dtype).name == 'float16' or is_bfloat16(dtype):
            # BatchNorm's statistics and scale stay float32 (its float16 and bfloat16
            # kernels want that)
            out = self._cached_graph[1]
            names = out.get_internals().list_inputs()
            for node in names:
                for stat, n in (('running_var', 11), ('moving_var', 10)):
                    if node.endswith(stat):
                        prefix = node[:-n]
                        mean = stat.replace('var', 'mean')
                        sibs = [prefix + t for t in (mean, 'gamma', 'beta')]
                        if all(p in names for p in sibs):
                            self.params.get(node).cast('float32')
                            for sib in sibs:
                                self.params.get(sib).cast('float32')

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise NotImplementedError

    def reset_ctx(self, ctx):
        """Move all parameters to ``ctx``."""
        for p in self.collect_params().values():
            p.reset_ctx(ctx)
