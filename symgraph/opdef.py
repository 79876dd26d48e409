"""The operator API: what ``symgraph.ops`` (and user code) builds operators with.

An operator is one small class deriving :class:`Operator`. Its typed parameters are
class attributes made with :class:`Param`; an instance holds parsed values and is a value
(equality and hash over the parameters). The core (inference, plan, executor, ``mx.nd``)
calls only the hooks declared on :class:`Operator`, each documented there with its
arguments, return value and default; nothing is discovered with ``getattr``/``hasattr``
and no behaviour depends on a method's signature. In short:

structure
    ``list_arguments()``, ``list_outputs()``, ``list_auxiliary_states()``,
    ``num_visible_outputs()``, ``input_init()``
inference (pure, never touching arrays)
    ``infer_shape(in_shapes[, out_shapes])`` (the second argument exactly when
    ``infer_shape_uses_outputs``), ``same_shape_io``, ``infer_type(in_types[, out_types])``
    (the second argument exactly when ``infer_type_uses_outputs``)
compute
    ``forward(xp, inputs, aux, is_train)``, ``backward(xp, out_grads, inputs, outputs,
    aux, need)`` with ``need`` a list of bool; ``fast_forward``;
    ``writes_into`` (``out=``/``grad_out=``); ``wants_req`` (``req=``);
    ``bind(ctx, in_shapes, in_dtypes)``: the :class:`Step` applying it, which owns what
    the operator keeps (passed as ``state=``)
planner data
    ``needs_inputs``, ``needs_outputs``, ``inplace``, ``no_grad``, ``is_loss``
what a pass asks (not here)
    post-op fusion in inference and training (a consumer's :class:`PostOp`), layouts read
    and written, gradient in-place/same/writes-into, scratch bytes, inference identities
    and unread inputs, and "which operator runs instead" (fitted to the inferred shapes,
    for a named node, for ``out=`` the first input, for unread outputs, for a layout) are
    rows of the passes' rule tables (``symgraph/graph/rules.py``), keyed by operator class
    and registered from one module (``ops/_cpu_rules.py``); see docs/operators.md
subgraphs (control flow)
    ``num_subgraphs``, ``subgraphs``, ``with_subgraphs(graphs)``: the graphs a node holds
    (MXNet's JSON ``subgraphs`` field), each a :class:`Subgraph` made by the core
runtime services an operator may use
    :func:`random_state` (the generator to draw from), :func:`device_group` (the other
    devices of a data-parallel step, for collective operators such as SyncBatchNorm) and
    :func:`cpu_kernel` (a kernel of the :class:`CpuKernels` protocol: oneDNN's for NumPy
    float32 arrays, or None; :func:`gpu_kernel` likewise cuDNN's for CuPy arrays;
    :func:`cpu_backend`, the backend object, is for tests and
    tools, never operators); the core lends the backend scratch memory with
    :func:`lend_scratch`; :class:`Kept` holds what a Step keeps for the very arrays it was
    made from; :func:`same_bits` and :class:`Snapshot` tell whether arrays changed since a
    cache was filled (a memcmp).
"""
from __future__ import annotations

import ast
import contextlib
import ctypes
import inspect
import re
import threading
import typing
import warnings
import weakref

import numpy as np

from .base import (MXNetError, ShapeError, TypeInferenceError, ArgumentError, ParameterError,
                   UnknownNameError, UnknownOperatorError, close_names, as_dtype, bfloat16,
                   is_bfloat16)

__all__ = ['Param', 'Operator', 'register', 'get_op', 'unknown_operator', 'list_ops',
           'OpNamespace', 'ShapeError',
           'TypeInferenceError', 'REQUIRED', 'elemwise_shape', 'same_type',
           'unify_shape', 'dtype_name', 'np_dtype', 'shape_known', 'reduce_to_shape',
           'random_state', 'using_random_state', 'DeviceGroup', 'device_group',
           'using_device_group', 'ProcessGroup', 'process_group', 'set_process_group',
           'Subgraph', 'SubgraphRunner', 'cpu_backend', 'PostOp', 'CpuKernels', 'cpu_kernel',
           'gpu_kernel',
           'lend_scratch', 'same_bits', 'Snapshot', 'Step', 'Kept', 'format_value', 'param_names',
           'positional_params', 'split_positional', 'bind_step', 'takes_bfloat16',
           'is_bfloat16', 'bfloat16', 'as_dtype']

REQUIRED = object()

_DTYPE_NAMES = ('float16', 'bfloat16', 'float32', 'float64', 'uint8', 'int8', 'int32', 'int64',
                'bool')


# ----------------------------------------------------------------------------------
# typed parameters
# ----------------------------------------------------------------------------------
def _parse_bool(v):
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return bool(v)
    s = str(v).strip()
    if s in ('True', 'true', '1'):
        return True
    if s in ('False', 'false', '0'):
        return False
    raise ArgumentError('expected a boolean, got %r' % (v,))


def _literal(v):
    if isinstance(v, str):
        s = v.strip()
        if s in ('None', ''):
            return None
        try:
            return ast.literal_eval(s)
        except (ValueError, SyntaxError):
            raise ArgumentError('cannot parse %r' % (v,)) from None
    return v


def _parse_shape(v):
    v = _literal(v)
    if v is None:
        return None
    if isinstance(v, (int, np.integer)):
        return (int(v),)
    if isinstance(v, (list, tuple)):
        return tuple(int(x) for x in v)
    raise ArgumentError('expected a tuple of ints, got %r' % (v,))


def _parse_int(v):
    if isinstance(v, str) and not re.fullmatch(r'\s*[+-]?\d+\s*|\s*(None)?\s*', v):
        raise ArgumentError('expected an int, got %r' % (v,))     # '2.0', '1e3', 'True'
    v = _literal(v)
    if v is None:
        return None
    if isinstance(v, (bool, np.bool_, float, np.floating)):
        # MXNet writes a Python float as '2.0', which its int parser refuses
        raise ArgumentError('expected an int, got %r' % (v.item() if isinstance(v, np.generic)
                                                          else v,))
    return int(v)


def _parse_float(v):
    v = _literal(v)
    if v is None:
        return None
    return float(v)


def _parse_axis(v):
    """An int, a tuple of ints, or None."""
    v = _literal(v)
    if v is None:
        return None
    if isinstance(v, (list, tuple)):
        return tuple(int(x) for x in v)
    return int(v)


def _parse_dtype(v):
    v = _literal(v) if isinstance(v, str) and v.strip() == 'None' else v
    if v is None:
        return None
    return as_dtype(v)


def _parse_str(v):
    return str(v)


def _parse_float_tuple(v):
    v = _literal(v)
    if v is None:
        return None
    if isinstance(v, (int, float)):
        return (float(v),)
    return tuple(float(x) for x in v)


_PARSERS = {
    bool: _parse_bool, int: _parse_int, float: _parse_float, str: _parse_str,
    'shape': _parse_shape, 'axis': _parse_axis, 'dtype': _parse_dtype,
    'floats': _parse_float_tuple,
}


class _Plain:
    """Shows a NumPy scalar as its value inside a container's repr: NumPy 2 writes
    ``np.int64(8)`` there, where MXNet's files (and NumPy 1) have ``8``."""

    __slots__ = ('text',)

    def __init__(self, value):
        self.text = str(value)

    def __repr__(self):
        return self.text


def _plain(v):
    if isinstance(v, np.generic):
        return _Plain(v)
    if isinstance(v, tuple):
        return tuple(_plain(x) for x in v)
    if isinstance(v, list):
        return [_plain(x) for x in v]
    return v


def format_value(v):
    """Format a value as MXNet writes parameters (``str(value)`` of the Python value)."""
    if isinstance(v, np.dtype):
        return v.name
    if isinstance(v, type) and issubclass(v, np.generic):
        return np.dtype(v).name
    if isinstance(v, (tuple, list)):
        return str(_plain(v))
    return str(v)


class Param:
    """A typed operator parameter.

    Parameters
    ----------
    kind : bool, int, float, str, or one of 'shape', 'axis', 'dtype', 'floats'
        how strings and Python values are parsed.
    default : object
        the value when not given; ``REQUIRED`` makes the parameter mandatory.
    doc : str
    choices : sequence of str, optional
        the accepted values of a string parameter.
    """

    __slots__ = ('kind', 'default', 'doc', 'choices', 'name', 'minimum', 'nullable')

    def __init__(self, kind, default=REQUIRED, doc='', choices=None, minimum=None,
                 nullable=None):
        self.kind = kind
        self.default = default
        self.doc = doc
        self.choices = tuple(choices) if choices else None
        self.name = None
        #: the smallest value accepted (MXNet's set_lower_bound)
        self.minimum = minimum
        #: None is a value (MXNet's optional<...>); by default when the default is None
        self.nullable = default is None if nullable is None else nullable

    def parse(self, value):
        if value is None and self.nullable:
            return None
        try:
            parsed = _PARSERS[self.kind](value)
        except (ValueError, TypeError) as e:
            raise ArgumentError('parameter %r: %s' % (self.name, e)) from None
        if parsed is None and not self.nullable and self.kind in (int, float, bool):
            # 'None' or '' where a number is needed (an int is not optional here)
            raise ArgumentError('parameter %r: expected %s, got %r'
                                % (self.name, self.kind.__name__, value))
        if self.choices is not None and parsed not in self.choices:
            raise ArgumentError('parameter %r must be one of %s, got %r'
                                % (self.name, list(self.choices), value))
        if self.minimum is not None and parsed is not None and parsed < self.minimum:
            raise ArgumentError('value %s for parameter %r should be greater equal to %s'
                                % (parsed, self.name, self.minimum))
        return parsed

    def __repr__(self):
        return 'Param(%s, default=%r)' % (getattr(self.kind, '__name__', self.kind),
                                          self.default)


# ----------------------------------------------------------------------------------
# operator base and registry
# ----------------------------------------------------------------------------------
_REGISTRY = {}      # every name and alias -> class
_CANONICAL = {}     # canonical name -> class


class Operator:
    """Base class of all operators. See the module docstring for the contract."""

    #: canonical MXNet name (written to JSON)
    name = None
    #: other names the operator is reachable under (``mx.sym.<alias>``)
    aliases = ()
    #: the operator makes its own head gradient (loss layers); ``backward`` gets None
    is_loss = False
    #: backward needs these forward arrays (True: all, False: none, or a tuple of indices)
    needs_inputs = True
    needs_outputs = False
    #: output i may reuse input j's storage: tuple of (j, i) pairs
    inplace = ()
    #: no gradient flows through this operator (BlockGrad, argmax, comparisons...)
    no_grad = False
    #: accept any parameter (Custom passes arbitrary kwargs on to the user's prop)
    free_params = False
    #: ``backward`` also takes ``req=``: per argument, MXNet's req string ('write', 'add'
    #: where the argument was bound with grad_req='add' and feeds this operator directly,
    #: 'null' where ``need`` is False). Default False: ``need`` (bools) only.
    wants_req = False
    #: ``forward`` takes ``out=`` and ``backward`` ``grad_out=``: lists (one entry per
    #: output, per argument) of None or an array of the inferred shape and dtype that
    #: the executor will hand to the user (an output NDArray, a gradient bound with
    #: grad_req='write') or that the storage plan gives the result (one of the executor's
    #: buffers, possibly the storage of an input that dies here when the operator declares
    #: that pair in :attr:`inplace`).  The operator may compute that result straight into
    #: it and return that very array, sparing the executor a copy (MXNet's ops write into
    #: their outputs); returning another array is always correct too (the executor copies
    #: it in).  Default False: neither keyword is passed.
    writes_into = False
    #: how many graphs a node of this operator holds (MXNet's ``subgraphs`` field of the
    #: node in JSON: ``_foreach`` 1, ``_while_loop`` 2, ``_cond`` 3). Default 0. The core
    #: gives them with :meth:`with_subgraphs`; the operator reads :attr:`subgraphs`.
    num_subgraphs = 0
    #: the :class:`Subgraph` objects of this node (empty unless :attr:`num_subgraphs`)
    subgraphs = ()
    _params = {}

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        params = {}
        for base in reversed(cls.__mro__[1:]):
            params.update(getattr(base, '_params', {}))
        for k, v in list(vars(cls).items()):
            if isinstance(v, Param):
                v.name = k
                params[k] = v
        cls._params = params

    def __init__(self, **kwargs):
        unknown = [k for k in kwargs if k not in self._params]
        if unknown and not self._params:
            # MXNet's operators without a parameter struct (relu, Flatten...) take any
            # keyword silently and store it as a node attribute; here it is ignored too
            warnings.warn('operator %s takes no parameters; %s ignored, as MXNet does'
                          % (self.name, ', '.join(repr(k) for k in unknown)), stacklevel=3)
            kwargs = {}
        elif unknown:
            raise UnknownNameError('operator %s: unknown parameter %s; valid parameters are %s'
                                   % (self.name, ', '.join(repr(k) for k in unknown),
                                      sorted(self._params)))
        values = {}
        for k, p in self._params.items():
            if k in kwargs:
                try:
                    values[k] = p.parse(kwargs[k])
                except ValueError as e:
                    raise ParameterError('operator %s: %s' % (self.name, e)) from None
            elif p.default is REQUIRED:
                raise ParameterError('operator %s: required parameter %r is missing'
                                     % (self.name, k))
            else:
                values[k] = p.default
        object.__setattr__(self, '_values', values)
        for k, v in values.items():
            object.__setattr__(self, k, v)
        self.check()

    def check(self):
        """Validate parameter combinations; raise MXNetError. Override when needed.

        Called when the operator is made, and again by :meth:`with_subgraphs` once it holds
        its :attr:`subgraphs` (then also validate the parameters against them: their
        numbers of inputs and outputs)."""

    def __setattr__(self, k, v):
        raise AttributeError('operator instances are immutable')

    def _fix(self, **attrs):
        """Set attributes an operator derives while it is made: in ``__init__`` or
        :meth:`check`, or on a fresh copy nobody holds yet (a fitted or fused variant).
        Operators are values, immutable once made: nothing is written into one later
        (per-application state lives in its :class:`Step`)."""
        for k, v in attrs.items():
            object.__setattr__(self, k, v)

    def __eq__(self, other):
        return type(self) is type(other) and self._values == other._values \
            and len(self.subgraphs) == len(other.subgraphs) \
            and all(a is b for a, b in zip(self.subgraphs, other.subgraphs))

    def with_subgraphs(self, graphs):
        """A copy of this operator holding ``graphs`` (a sequence of :class:`Subgraph`,
        exactly :attr:`num_subgraphs` of them), as the core makes a control-flow node
        (``mx.sym.contrib.foreach``, or a JSON node with a ``subgraphs`` field)."""
        graphs = tuple(graphs)
        if len(graphs) != self.num_subgraphs:
            raise MXNetError('operator %s holds %d subgraphs, got %d'
                             % (self.name, self.num_subgraphs, len(graphs)))
        for g in graphs:
            if not isinstance(g, Subgraph):
                raise TypeError('operator %s: a subgraph must be a Subgraph, got %s'
                                % (self.name, type(g).__name__))
        new = object.__new__(type(self))
        for k, v in self.__dict__.items():
            object.__setattr__(new, k, v)
        object.__setattr__(new, 'subgraphs', graphs)
        new.check()
        return new

    def __hash__(self):
        return hash((type(self), tuple(sorted((k, repr(v)) for k, v in self._values.items()))))

    def __repr__(self):
        return '%s(%s)' % (self.name, ', '.join('%s=%r' % kv for kv in self._values.items()))

    #: parameter order of MXNet's generated ``mx.sym``/``mx.nd`` functions, for
    #: positional parameters, where it differs from the declaration order
    param_order = None
    #: parameters MXNet 1.9.1's operator lacks (symgraph's extensions): keyword only, so
    #: that positional ``name``/``attr``/``out`` land where MXNet's signature puts them
    keyword_only_params = ()

    # --- structure ---------------------------------------------------------------
    def list_arguments(self):
        return ['data']

    def list_outputs(self):
        return ['output']

    def list_auxiliary_states(self):
        return []

    def num_visible_outputs(self):
        return len(self.list_outputs())

    def output_count(self):
        # (not ``num_outputs``: that is a parameter name of SliceChannel)
        return len(self.list_outputs())

    def input_init(self):
        """``{input name: initializer JSON}`` written as ``__init__`` on inputs that are
        created automatically (BatchNorm's moving_var gets '["one", {}]')."""
        return {}

    # --- inference ---------------------------------------------------------------
    #: ``infer_shape`` takes a second argument, the output shapes known so far (a list,
    #: ``None`` where unknown), so that it can infer inputs backwards from them
    #: (Reshape, FullyConnected's data from its output...). Default False: the rule gets
    #: the input shapes only.
    infer_shape_uses_outputs = False
    #: the same for ``infer_type``: it takes the output dtypes known so far as a second
    #: argument (control-flow operators pass them through their subgraphs to the inputs)
    infer_type_uses_outputs = False

    @property
    def same_shape_io(self):
        """Whether every visible output has the shape of every argument (elementwise).

        The inference pass then also copies a known output shape back into the
        arguments, as MXNet's elementwise rules do. Default: True exactly when the class
        keeps the base :meth:`infer_shape`; override with a class attribute (or a
        property when it depends on the parameters).
        """
        return type(self).infer_shape is Operator.infer_shape

    def infer_shape(self, in_shapes):
        s = elemwise_shape(self, in_shapes, self.output_count())
        n = len(self.list_arguments())
        return [s] * n, [s] * self.output_count(), [None] * (len(in_shapes) - n)

    def infer_type(self, in_types):
        t = same_type(self, in_types)
        n = len(self.list_arguments())
        return ([t] * n, [t] * self.output_count(),
                [t] * (len(in_types) - n))

    # --- compute -----------------------------------------------------------------
    def forward(self, xp, inputs, aux, is_train):
        """The outputs: a list with one array per entry of ``list_outputs()`` (hidden ones
        included).

        ``xp`` is numpy or cupy; ``inputs`` the argument arrays; ``aux`` the auxiliary
        states, which may be updated in place (moving statistics); ``is_train`` a bool.
        Also gets ``out=`` when :attr:`writes_into` and ``state=`` when its :meth:`bind`
        gave the Step a state. No default: every operator defines it.
        """
        raise NotImplementedError('operator %s has no forward' % self.name)

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        """The input gradients: a list with one entry per argument.

        ``need[i]`` (a bool) tells whether argument i's gradient is used; return None
        where it is not needed or not defined. ``out_grads[i]`` is None for hidden outputs
        and for loss operators (:attr:`is_loss`), which make their own head gradient;
        ``inputs``/``outputs`` hold None where :attr:`needs_inputs`/:attr:`needs_outputs`
        leave them out. Also gets ``grad_out=`` when :attr:`writes_into`, ``req=`` when
        :attr:`wants_req` and ``state=`` when its :meth:`bind` gave the Step a state.
        Default: raises NotImplementedError (no gradient).
        """
        raise NotImplementedError('operator %s has no gradient' % self.name)

    def bind(self, ctx, in_shapes, in_dtypes):
        """The :class:`Step` that applies this operator to arrays of these input shapes and
        dtypes (arguments then auxiliary states) on ``ctx`` (a
        :class:`~symgraph.context.Context`, opaque to the core): one object per applied
        operator, owning what it keeps between calls and between its forward and its
        backward (its ``state``: a Custom operator's ``CustomOp``, a control-flow node's
        compiled body, a fused layer's folded weights, BatchNorm's relu mask, max
        pooling's workspace). A bound executor asks once per node, after its storage plan
        is decided, and drops the Step with the executor; ``mx.nd`` calls and the autograd
        tape make one per call. Default: a :class:`Step` without state around
        :meth:`forward` and :meth:`backward`; an operator that keeps state returns
        ``Step(self, ctx, state)`` and takes ``state=`` in both."""
        return Step(self, ctx)

    def mxnet_input_order(self):
        """None, or MXNet's order of this node's inputs where it differs from symgraph's
        (arguments, then auxiliary states): a list ``p`` such that MXNet's input k is
        symgraph's input ``p[k]`` (MXNet's quantized BatchNorm and ``_sg_mkldnn_conv``
        list their moving statistics before later arguments). The JSON reader and writer
        permute by it."""
        return None

    def fast_forward(self, xp, is_train, in_dtypes=None):
        """Optionally a bare function ``f(*inputs) -> array`` (single output, no aux) that
        the executor calls directly (e.g. ``xp.exp``), or None (the default).
        ``in_dtypes``: the inputs' dtypes where the caller knows them (None: unknown), so
        that an operator may leave a per-call dtype check out of the function."""
        return None


class Step:
    """One operator applied to one set of inputs (PyTensor's thunk): the operator, its
    context and array module, and the ``state`` it keeps between calls (what
    :meth:`Operator.bind` gave it: None for most operators). :meth:`forward` and
    :meth:`backward` pass the state and the keywords the operator declares (``req=`` for
    :attr:`Operator.wants_req`), so that a caller (``mx.nd``, the autograd tape) needs to
    know nothing of the operator; :meth:`forward_function` and :meth:`backward_function`
    give the executor's generated code the same calls bound once.

    ``shareable``: the Step may serve several calls of its operator on arrays of its
    shapes in turn (``mx.nd`` then keeps one for all such calls), as a Step without state
    does, or one whose state is keyed by the arrays (:class:`Kept`: BatchNorm's relu mask,
    max pooling's workspace); default: exactly when ``state`` is None.

    ``replays``: True for an operator whose calls into the executor's arrays the CPU
    backend records and replays (``ops/_util.py``'s ``on_backend``: the convolutions,
    relu's backward, add+relu): the Step then holds them (:attr:`replays`, a dict the
    backend fills), and its bound functions pass it to the operator's forward and backward
    as ``replays=`` wherever they do not call a fast function. It is no state: the
    operator computes the same without it (``mx.nd``'s calls, which offer no arrays to
    write into, pass none)."""

    __slots__ = ('op', 'ctx', 'xp', 'state', 'n_args', 'shareable', 'replays')

    def __init__(self, op, ctx, state=None, shareable=None, replays=False):
        self.op = op
        self.ctx = ctx
        self.xp = None if ctx is None else ctx.xp
        self.n_args = len(op.list_arguments())
        self.state = state
        self.shareable = state is None if shareable is None else bool(shareable)
        self.replays = {} if replays else None

    def forward(self, arrays, is_train):
        """All outputs (hidden ones included) of the operator on ``arrays`` (arguments
        then auxiliary states, which a forward may update in place)."""
        n = self.n_args
        if self.state is None and self.replays is not None:
            return self.op.forward(self.xp, list(arrays[:n]), list(arrays[n:]), is_train,
                                   replays=self.replays)
        if self.state is None:
            return self.op.forward(self.xp, list(arrays[:n]), list(arrays[n:]), is_train)
        return self.op.forward(self.xp, list(arrays[:n]), list(arrays[n:]), is_train,
                               state=self.state)

    def backward(self, out_grads, inputs, outputs, aux, need):
        """The arguments' gradients (one entry per argument, None where ``need`` is
        False), as :meth:`Operator.backward` computes them."""
        op = self.op
        kw = {}
        if self.state is not None:
            kw['state'] = self.state
        if self.replays is not None:
            kw['replays'] = self.replays
        if op.wants_req:
            kw['req'] = ['write' if nd else 'null' for nd in need]
        return op.backward(self.xp, out_grads, inputs, outputs, aux, need, **kw)

    def forward_function(self, is_train, in_dtypes=None, into=False):
        """``(f, fast)``: ``f(*inputs, *aux) -> outputs``, the forward bound once for the
        executor's generated code; ``fast``: f is :meth:`Operator.fast_forward`'s bare
        function (one array out).

        Otherwise f wraps :meth:`Operator.forward` (passing ``state=`` and, for a
        :attr:`~Operator.writes_into` operator, ``out=``). ``in_dtypes`` (the inputs'
        dtypes, when the caller knows them) reaches :meth:`Operator.fast_forward`.
        ``into``: the caller will offer ``out=`` arrays (the storage plan's buffers), so an
        operator that writes into them gets its ``out=`` taking wrapper even where it has a
        fast function. An operator with a state has no fast function."""
        op, xp, state, n_args = self.op, self.xp, self.state, self.n_args
        fwd = op.forward
        if state is None and self.replays is not None:
            return self._replaying_forward(is_train, in_dtypes, into)
        if state is not None and op.writes_into:
            def run_stateful_into(*arrays, out=None):
                return fwd(xp, list(arrays[:n_args]), list(arrays[n_args:]), is_train,
                           state=state, out=out)
            return run_stateful_into, False
        if state is not None:
            def run_stateful(*arrays):
                return fwd(xp, list(arrays[:n_args]), list(arrays[n_args:]), is_train,
                           state=state)
            return run_stateful, False
        fast = None if into and op.writes_into else op.fast_forward(xp, is_train, in_dtypes)
        if fast is not None:
            return fast, True

        if op.writes_into:
            def run_into(*arrays, out=None):
                return fwd(xp, list(arrays[:n_args]), list(arrays[n_args:]), is_train,
                           out=out)
            return run_into, False

        def run(*arrays):
            return fwd(xp, list(arrays[:n_args]), list(arrays[n_args:]), is_train)
        return run, False

    def _replaying_forward(self, is_train, in_dtypes, into):
        """:meth:`forward_function` of a stateless Step with :attr:`replays`: the
        operator's fast function where the stateless Step would call it (it records
        nothing), else a wrapper passing ``replays=``."""
        op, xp, n_args, replays = self.op, self.xp, self.n_args, self.replays
        fwd = op.forward
        fast = None if into and op.writes_into else op.fast_forward(xp, is_train, in_dtypes)
        if fast is not None:
            return fast, True
        if op.writes_into:
            def run_replaying_into(*arrays, out=None):
                return fwd(xp, list(arrays[:n_args]), list(arrays[n_args:]), is_train,
                           out=out, replays=replays)
            return run_replaying_into, False

        def run_replaying(*arrays):
            return fwd(xp, list(arrays[:n_args]), list(arrays[n_args:]), is_train,
                       replays=replays)
        return run_replaying, False

    def backward_function(self, need, reqs=None, into=False):
        """``b(out_grads, inputs, outputs, aux[, grad_out=])``: the backward bound once for
        the executor's generated code, with the keywords the operator's declarations ask
        for (``state=``, ``req=`` given as ``reqs``, and ``grad_out=`` where ``into``: the
        operator takes offered gradient arrays, :attr:`Operator.writes_into` or the
        ``grad_writes_into`` rule)."""
        op, xp = self.op, self.xp
        bwd = op.backward
        kw = {}
        if self.state is not None:
            kw['state'] = self.state
        if self.replays is not None:
            kw['replays'] = self.replays
        if reqs is not None:
            kw['req'] = reqs
        if into and not kw:
            def run_into(out_grads, inputs, outputs, aux, grad_out=None):
                return bwd(xp, out_grads, inputs, outputs, aux, need, grad_out=grad_out)
            return run_into
        if into:
            def run_stateful_into(out_grads, inputs, outputs, aux, grad_out=None):
                return bwd(xp, out_grads, inputs, outputs, aux, need, grad_out=grad_out,
                           **kw)
            return run_stateful_into
        if kw:
            def run_stateful(out_grads, inputs, outputs, aux):
                return bwd(xp, out_grads, inputs, outputs, aux, need, **kw)
            return run_stateful

        def run(out_grads, inputs, outputs, aux):
            return bwd(xp, out_grads, inputs, outputs, aux, need)
        return run


#: operator classes that compute on bfloat16 inputs themselves (see :func:`bind_step`)
_TAKES_BFLOAT16 = set()


def takes_bfloat16(cls):
    """Class decorator: operator ``cls`` computes on bfloat16 arrays itself (a cast, a shape
    operator, one with a bfloat16 kernel). Other operators given bfloat16 inputs compute
    in float32 and round their results (:func:`bind_step`)."""
    _TAKES_BFLOAT16.add(cls)
    return cls


def bind_step(op, ctx, in_shapes, in_dtypes):
    """``op.bind(ctx, in_shapes, in_dtypes)``: what the executor and ``mx.nd`` call. Where
    a bfloat16 input meets an operator not declared with :func:`takes_bfloat16`, a
    :class:`WidenedStep`: the operator computes on float32 copies of its bfloat16 inputs
    and the outputs it types bfloat16 are rounded back, as MXNet runs an operator without
    a bf16 kernel between ``amp_cast`` nodes. (One loop over the dtypes at bind; no cost
    per call for other dtypes.)"""
    for t in in_dtypes:
        if t is not None and np.dtype(t).kind == 'V' and is_bfloat16(t):
            if type(op) in _TAKES_BFLOAT16:
                break
            return WidenedStep(op, ctx, in_shapes, in_dtypes)
    return op.bind(ctx, in_shapes, in_dtypes)


class WidenedStep(Step):
    """An operator's :class:`Step` on float32 copies of its bfloat16 inputs (see
    :func:`bind_step`): its ``state`` is the operator's own Step, bound for the widened
    dtypes. Outputs the operator types bfloat16 are rounded to it; auxiliary states that
    are bfloat16 get the forward's updates back; gradients take their inputs' dtypes."""

    __slots__ = ('wide', 'wide_dtypes', 'narrow')

    def __init__(self, op, ctx, in_shapes, in_dtypes):
        f32 = np.dtype(np.float32)
        self.wide = [is_bfloat16(t) for t in in_dtypes]
        self.wide_dtypes = [f32 if w else t for w, t in zip(self.wide, in_dtypes)]
        inner = op.bind(ctx, in_shapes, self.wide_dtypes)
        super().__init__(op, ctx, state=inner, shareable=inner.shareable)
        try:
            outs = op.infer_type(list(in_dtypes))[1]
            self.narrow = [is_bfloat16(t) for t in outs]
        except TypeInferenceError:
            # an operator refusing bfloat16 by name: float outputs round back to it
            outs = op.infer_type(list(self.wide_dtypes))[1]
            self.narrow = [t is not None and np.dtype(t) == f32 for t in outs]

    def _widen(self, arrays):
        return [a.astype(np.float32) if w and a is not None else a
                for a, w in zip(arrays, self.wide)]

    def _narrow(self, outs, wide, arrays):
        n = self.n_args
        for k in range(n, len(arrays)):         # moving statistics updated in the copies
            if self.wide[k] and wide[k] is not arrays[k]:
                arrays[k][...] = wide[k]
        bf, narrow = bfloat16(), self.narrow
        return [o.astype(bf) if k < len(narrow) and narrow[k] and o is not None
                and o.dtype != bf else o for k, o in enumerate(outs)]

    def forward(self, arrays, is_train):
        wide = self._widen(arrays)
        self.state.xp = self.xp
        return self._narrow(self.state.forward(wide, is_train), wide, arrays)

    def _backward_args(self, out_grads, inputs, outputs, aux):
        f32 = np.float32
        n = self.n_args
        wide_in = self._widen(list(inputs) + list(aux))
        bf, narrow = bfloat16(), self.narrow
        og = [g.astype(f32) if g is not None and g.dtype == bf else g for g in out_grads]
        outs = [o.astype(f32) if o is not None and k < len(narrow) and narrow[k] else o
                for k, o in enumerate(outputs)]
        return og, wide_in[:n], outs, wide_in[n:]

    def _grads_back(self, grads):
        bf = bfloat16()
        return [g.astype(bf) if g is not None and w else g
                for g, w in zip(grads, self.wide)]

    def backward(self, out_grads, inputs, outputs, aux, need):
        self.state.xp = self.xp
        return self._grads_back(self.state.backward(
            *self._backward_args(out_grads, inputs, outputs, aux), need))

    def forward_function(self, is_train, in_dtypes=None, into=False):
        self.state.xp = self.xp
        f, fast = self.state.forward_function(is_train, self.wide_dtypes, False)
        widen, narrow = self._widen, self._narrow

        def run_widened(*arrays, out=None):
            wide = widen(arrays)
            outs = f(*wide)
            return narrow([outs] if fast else outs, wide, arrays)
        return run_widened, False

    def backward_function(self, need, reqs=None, into=False):
        self.state.xp = self.xp
        b = self.state.backward_function(need, reqs, False)
        args, back = self._backward_args, self._grads_back

        def run_widened(out_grads, inputs, outputs, aux, grad_out=None):
            return back(b(*args(out_grads, inputs, outputs, aux)))
        return run_widened


class Kept:
    """What a :class:`Step`'s forward keeps for the backward of the same output made from
    the same input (oneDNN's max-pooling workspace, BatchNorm's relu mask and backward
    buffers): part of the Step's state, dropped with it.

    A value is given back only for the very output and input arrays it was kept with (an
    identity check of the two); the Step holds them by weak reference, so that a Step
    serving several ``mx.nd`` calls never keeps their arrays alive, and a new array at a
    dead one's address is never taken for it. A forward that keeps nothing for an output
    forgets what the Step had for it (an inference forward into a training buffer).
    Entries whose arrays died are dropped once there are ``limit``; there are no
    finalizers (Python code the garbage collector runs can take a pending
    KeyboardInterrupt, which Python then reports as ignored)."""

    __slots__ = ('_entries', 'limit')

    def __init__(self, limit=256):
        self._entries = {}
        self.limit = limit

    def keep(self, out, src, value):
        """Keep ``value`` for ``out`` made from ``src``."""
        entries = self._entries
        if len(entries) >= self.limit:
            for key, entry in list(entries.items()):
                if entry[0]() is None or entry[1]() is None:
                    entries.pop(key, None)
            if len(entries) >= self.limit:
                entries.clear()
        entries[id(out)] = (weakref.ref(out), weakref.ref(src), value)

    def get(self, out, src):
        """The value kept by the forward that made ``out`` from ``src``, or None."""
        entry = self._entries.get(id(out))
        if entry is None or entry[0]() is not out or entry[1]() is not src:
            return None
        return entry[2]

    def forget(self, out):
        """Drop what was kept for ``out``."""
        self._entries.pop(id(out), None)

    def __len__(self):
        return len(self._entries)


class Subgraph:
    """A graph held by a control-flow node (``_foreach``'s body), as an operator sees it.

    The core makes these (``symgraph.graph.subgraph``); an operator only calls the methods
    below, so that ``ops/`` never imports the core. Shapes are partial as in
    :meth:`Operator.infer_shape` (None unknown, dimension 0 unknown); dtypes are NumPy
    dtypes or None.
    """

    def list_inputs(self):
        """Names of the graph's input Variables in MXNet's order (``list_inputs``)."""
        raise NotImplementedError

    def num_outputs(self):
        """Number of outputs (heads) of the graph."""
        raise NotImplementedError

    def infer_shape(self, in_shapes, out_shapes):
        """Shape inference through the graph: ``(in_shapes, out_shapes)`` as completed
        from what is known of both (lists in :meth:`list_inputs` and output order).
        Raises ShapeError naming the node inside the graph."""
        raise NotImplementedError

    def infer_type(self, in_types, out_types):
        """Type inference through the graph, as :meth:`infer_shape`."""
        raise NotImplementedError

    def nodes(self):
        """The graph's nodes in MXNet's order, each ``(op, name, inputs)``: ``op`` the
        Operator (None for an input Variable), ``inputs`` ``(position in this list,
        output index)`` pairs; for operators that read a fused graph's layers
        (``_sg_mkldnn_conv``: its convolution, batch norm, activation)."""
        raise NotImplementedError

    def bind(self, ctx, xp, in_shapes, in_dtypes, need_grad):
        """A :class:`SubgraphRunner` for complete input shapes and dtypes; ``need_grad``
        (a bool per input) says which input gradients :meth:`SubgraphRunner.backward`
        computes. ``ctx`` is the bind's context (opaque), ``xp`` numpy or cupy."""
        raise NotImplementedError


class SubgraphRunner:
    """A :class:`Subgraph` compiled for fixed shapes and dtypes (see
    :meth:`Subgraph.bind`). One runner may run many times (once per loop step)."""

    def forward(self, inputs, is_train):
        """``(outputs, saved)``: the output arrays and what :meth:`backward` needs of
        this run (opaque; keep one per step of a loop)."""
        raise NotImplementedError

    def backward(self, saved, out_grads):
        """Gradients of the inputs (None where ``need_grad`` was False) for the run that
        gave ``saved``; ``out_grads`` has one array per output (None: zero)."""
        raise NotImplementedError


def param_names(cls):
    """The parameter names of operator class ``cls``, in declaration order."""
    return list(cls._params)


def positional_params(cls):
    """Parameter names in MXNet's signature order (positional arguments after the
    inputs bind to these)."""
    order = list(cls.param_order or ())
    return order + [k for k in cls._params
                    if k not in order and k not in cls.keyword_only_params]


def split_positional(cls, args, is_input, kwargs, trailing=()):
    """For operator class ``cls``: leading positional ``args`` that are inputs stay
    inputs; the rest bind to :func:`positional_params` in order, then to ``trailing``
    (``('name', 'attr', 'out')`` for ``mx.sym``, ``('out', 'name')`` for ``mx.nd``), as
    MXNet's generated functions do (``mx.nd.clip(x, 0, 1)``, ``mx.sym.BlockGrad(x, 'g')``). Returns
    (inputs, kwargs with those parameters).

    A None after the inputs stands where MXNet's signature has an input (that input
    not given, as ``mx.nd.FullyConnected(x, w, None, no_bias=True, num_hidden=4)``)
    when the operator, made from the other arguments, takes that many inputs; else it
    is a parameter value (``mx.nd.sum(x, None)``: axis=None). Such Nones are returned
    among the inputs."""
    k = 0
    while k < len(args) and is_input(args[k]):
        k += 1
    nones = 0
    while k + nones < len(args) and args[k + nones] is None:
        nones += 1
    if nones:
        k += _none_inputs(cls, k, nones, args[k + nones:], is_input, kwargs, trailing)
    inputs, rest = list(args[:k]), args[k:]
    if not rest:
        return inputs, kwargs
    return inputs, _bind_positional(cls, rest, is_input, kwargs, trailing)


def _none_inputs(cls, k, nones, tail, is_input, kwargs, trailing):
    """How many of the ``nones`` Nones after ``k`` inputs stand for inputs not given,
    the positional parameters ``tail`` following them: the most that the
    operator, made from the parameters, takes as inputs (with its boolean parameters
    as given or at their defaults: ``no_bias=True`` drops ``bias`` from the operator,
    not from MXNet's signature); where none fits so but the Nones do not fit as
    parameter values either (``mx.nd.SequenceMask(x, None)``, ``LeakyReLU(x, None,
    act_type='leaky')``: a parameter given twice, or None refused), the most that
    leave a valid operator. Variadic operators (``*data``) take no None."""
    if 'num_args' in cls._params:
        return 0
    made = {}
    for j in range(nones, -1, -1):
        made[j] = _made_from(cls, (None,) * (nones - j) + tuple(tail), is_input, kwargs,
                             trailing)
        if j and any(len(op.list_arguments()) + len(op.list_auxiliary_states())
                     >= k + j for op in made[j]):
            return j
    if made[0]:
        return 0
    return next((j for j in range(nones, 0, -1) if made[j]), 0)


def _made_from(cls, rest, is_input, kwargs, trailing):
    """The operators made from the positional parameters ``rest`` and ``kwargs``: as
    given, and with the boolean parameters at their defaults; [] when they make none."""
    try:
        given = _bind_positional(cls, rest, is_input, kwargs, trailing) if rest else kwargs
        params = {k: v for k, v in given.items() if k in cls._params}
        first = cls(**params)
    except (MXNetError, TypeError, ValueError):
        return []
    flags = {k: v for k, v in params.items() if cls._params[k].kind is not bool}
    try:
        return [first, cls(**flags)]
    except (MXNetError, TypeError, ValueError):
        return [first]


def _bind_positional(cls, rest, is_input, kwargs, trailing):
    names = positional_params(cls) + list(trailing)
    if len(rest) > len(names):
        raise ParameterError('operator %s: %d positional parameters given but it takes %d '
                             '(%s)' % (cls.name, len(rest), len(names), ', '.join(names)))
    kwargs = dict(kwargs)
    for name, value in zip(names, rest):
        if is_input(value) and name != 'out':
            raise ParameterError('operator %s: inputs must come before parameters, got an '
                                 'input for parameter %r' % (cls.name, name))
        if name in kwargs:
            raise ParameterError('operator %s: parameter %r given twice (by position and '
                                 'keyword)' % (cls.name, name))
        kwargs[name] = value
    return kwargs


def register(cls):
    """Class decorator: add an operator class under its name and aliases."""
    if not cls.name:
        raise MXNetError('operator class %s has no name' % cls.__name__)
    if cls.writes_into:
        # validates the declaration (the attribute decides; the signature switches nothing;
        # graph/rules.py checks a grad_writes_into row the same way)
        for method, kw in (('forward', 'out'), ('backward', 'grad_out')):
            if kw not in inspect.signature(getattr(cls, method)).parameters:
                raise MXNetError('operator %s sets writes_into but its %s takes no %r '
                                 'argument' % (cls.name, method, kw))
    # validates the declaration: a rule written to take the known output shapes that does not
    # say so would silently never see them (how mx.rnn's _rnn_param_concat lost its inputs)
    takes = len(inspect.signature(cls.infer_shape).parameters) - 1    # less self
    if takes >= 2 and not cls.infer_shape_uses_outputs:
        raise MXNetError('operator %s: infer_shape takes the output shapes but the class does '
                         'not set infer_shape_uses_outputs = True' % cls.name)
    if takes < 2 and cls.infer_shape_uses_outputs:
        raise MXNetError('operator %s sets infer_shape_uses_outputs but its infer_shape takes '
                         'no out_shapes argument' % cls.name)
    takes = len(inspect.signature(cls.infer_type).parameters) - 1
    if (takes >= 2) != bool(cls.infer_type_uses_outputs):
        raise MXNetError('operator %s: infer_type takes %d argument(s) but '
                         'infer_type_uses_outputs is %s (out_types exactly when set)'
                         % (cls.name, takes, cls.infer_type_uses_outputs))
    for n in (cls.name,) + tuple(cls.aliases):
        _REGISTRY[n] = cls
    _CANONICAL[cls.name] = cls
    return cls


def unknown_operator(name, prefix=''):
    """The error for an operator name that is not registered: a KeyError and an
    AttributeError, with the closest registered names."""
    full = prefix + str(name)
    near = close_names(full, _REGISTRY) or close_names(name, _REGISTRY)
    err = UnknownOperatorError(
        'operator %r is not registered%s (%d operators are: symgraph.opdef.list_ops())'
        % (full, '; did you mean %s?' % ', '.join(near) if near else '', len(_CANONICAL)))
    err.valid = sorted(_REGISTRY)
    return err


def get_op(name):
    """The operator class registered under ``name`` (canonical name or alias)."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise unknown_operator(name) from None


class OpNamespace:
    """Operator functions under a name prefix (``mx.sym.contrib.box_nms`` is
    ``_contrib_box_nms``); ``maker(op_name, hint)`` builds the function. ``functions``
    (name -> function) are given in place of the registered operators of those names."""

    def __init__(self, prefix, maker, functions=None):
        self._prefix = prefix
        self._maker = maker
        self._functions = dict(functions or {})

    def __getattr__(self, name):
        if name.startswith('__'):
            raise AttributeError(name)
        if name in self._functions:
            return self._functions[name]
        for cand in (self._prefix + name, name):
            if cand in _REGISTRY:
                return self._maker(cand, hint=name.lower())
        raise unknown_operator(name, self._prefix)

    def add_function(self, name, fn):
        """Give the Python function ``fn`` as ``<namespace>.<name>`` (in place of a
        registered operator of that name): ``mx.sym.contrib.foreach`` builds a graph."""
        self._functions[name] = fn

    def function(self, name):
        """The Python function given as ``<namespace>.<name>`` by :meth:`add_function`, or
        None."""
        return self._functions.get(name)

    def remove_function(self, name):
        """Take back what :meth:`add_function` gave (the registered operator of that name
        is found again)."""
        self._functions.pop(name, None)

    def __dir__(self):
        names = {n[len(self._prefix):] for n in _REGISTRY if n.startswith(self._prefix)}
        return sorted(names | set(self._functions))


def list_ops(aliases=False):
    """Names of registered operators (canonical only unless ``aliases``)."""
    return sorted(_REGISTRY if aliases else _CANONICAL)


# ----------------------------------------------------------------------------------
# helpers for shape and type rules
# ----------------------------------------------------------------------------------
def shape_known(s):
    return s is not None and all(d > 0 for d in s) if s is not None else False


_rng_local = threading.local()


def random_state(xp):
    """The generator an operator draws random numbers from.

    ``xp.random`` (NumPy's or CuPy's global generator, seeded by
    ``mx.random.seed``), unless the calling thread runs under
    :func:`using_random_state` -- as the device threads of a data-parallel step
    do, each with its own generator seeded from the global one, so that a
    seeded run is reproducible whatever order the threads run in.

    Parameters
    ----------
    xp : module
        numpy or cupy.

    Returns
    -------
    object
        Something with NumPy's ``RandomState`` sampling methods
        (``random_sample``, ``uniform``, ``normal``, ``randint``, ...).
    """
    states = getattr(_rng_local, 'states', None)
    if states:
        state = states.get(xp.__name__)
        if state is not None:
            return state
    return xp.random


@contextlib.contextmanager
def using_random_state(xp, state):
    """Make :func:`random_state` give ``state`` for ``xp`` in this thread."""
    previous = getattr(_rng_local, 'states', None)
    _rng_local.states = dict(previous or {}, **{xp.__name__: state})
    try:
        yield state
    finally:
        _rng_local.states = previous


class DeviceGroup:
    """The devices of one data-parallel step, as an operator on one of them sees them.

    The data-parallel runtime (``symgraph.dist``) runs each device's share of a step in
    its own thread under :func:`using_device_group`; a collective operator (SyncBatchNorm)
    reaches the others through :func:`device_group`, never by importing the runtime.

    Attributes
    ----------
    rank : int
        this device's slot, 0 .. size-1.
    size : int
        the number of devices of the step (the ``ndev`` of a collective operator).
    """

    rank = 0
    size = 1

    def allreduce(self, key, ndev, array, processes=None):
        """Sum ``array`` over the ``ndev`` devices that meet under ``key``.

        Every device calls it with an array of one shape and dtype; each gets the sum
        back (``array`` may be summed in place). With ``processes`` (a
        :class:`ProcessGroup`) the sum also spans the processes of a multi-process job
        (the devices of every process). Raises MXNetError when the others do not arrive
        in time or another device failed.
        """
        raise NotImplementedError


class ProcessGroup:
    """The processes of a multi-process job (``python -m symgraph.launch``), as an operator
    sees them: :func:`process_group` gives the one the runtime (``symgraph.dist``) set.

    Attributes
    ----------
    rank : int
        this process's rank, 0 .. size-1.
    size : int
        the number of processes.
    """

    rank = 0
    size = 1

    def allreduce(self, array):
        """The sum of ``array`` (NumPy or CuPy, one shape in every process) over the
        processes; every process calls it in the same order."""
        raise NotImplementedError


_process_group = []


def process_group():
    """The :class:`ProcessGroup` of this process's job, or None (one process)."""
    return _process_group[-1] if _process_group else None


def set_process_group(group):
    """Make :func:`process_group` give ``group`` (None: one process)."""
    if group is not None and not isinstance(group, ProcessGroup):
        raise TypeError('set_process_group takes a ProcessGroup or None, got %s'
                        % type(group).__name__)
    del _process_group[:]
    if group is not None:
        _process_group.append(group)


_group_local = threading.local()


def device_group():
    """The :class:`DeviceGroup` of the calling thread, or None outside a data-parallel
    step."""
    return getattr(_group_local, 'group', None)


@contextlib.contextmanager
def using_device_group(group):
    """Make :func:`device_group` give ``group`` in this thread."""
    previous = device_group()
    _group_local.group = group
    try:
        yield group
    finally:
        _group_local.group = previous


class PostOp:
    """What a ``post_op`` rule (``symgraph.graph.rules.POST_OP``) returns: one step a
    producer may fuse.

    kind : 'affine', 'eltwise' or 'sum'.
    op : the consumer's operator (its own forward is the reference for the fused one).
    inputs : indices of the consumer's inputs (arguments then auxiliary states) the fused
        operator takes besides the producer's output, in order.
    params : kind-specific values (see ``symgraph.graph.rules.POST_OP``).
    """

    __slots__ = ('kind', 'op', 'inputs', 'params')

    def __init__(self, kind, op, inputs=(), params=None):
        self.kind = kind
        self.op = op
        self.inputs = tuple(inputs)
        self.params = dict(params or {})

    def __repr__(self):
        return 'PostOp(%s %s)' % (self.kind, self.op.name)

def lend_scratch(buf):
    """Lend ``buf`` (a 1-D uint8 NumPy array: storage of the caller's that nothing uses
    until it calls ``lend_scratch(None)``) to the CPU backend as scratch space for the
    calling thread; None takes it back. The executor lends the free part of its buffers
    around each step of an operator that asks for scratch (the ``scratch_bytes`` rule table).
    Nothing happens when no backend is loaded."""
    be = _onednn().loaded()
    if be is not None:
        be.lend(buf)


# ---------------------------------------------------------------- array snapshots
def _libc_memcmp():
    try:
        fn = ctypes.CDLL(None).memcmp
    except (OSError, AttributeError, TypeError):       # no C library to ask (Windows)
        return None
    fn.restype = ctypes.c_int
    fn.argtypes = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)
    return fn


_MEMCMP = _libc_memcmp()


def same_bits(xp, a, b):
    """Whether ``a`` and ``b`` hold the same values bit for bit (same shape and dtype):
    a ``memcmp`` for C-contiguous NumPy arrays (no temporary; NaNs of one bit pattern
    compare equal), else ``array_equal`` (which is stricter with NaN: never equal, the
    conservative answer for a cache check)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if _MEMCMP is not None and xp is np and a.flags.c_contiguous and b.flags.c_contiguous:
        return a.nbytes == 0 or _MEMCMP(a.ctypes.data, b.ctypes.data, a.nbytes) == 0
    return bool(xp.array_equal(a, b))


class Snapshot:
    """Copies of some arrays, to tell later whether arrays hold the same bits
    (:func:`same_bits`). Where the arrays asked about are the very objects snapshotted
    (an executor's arguments, asked every forward) and C-contiguous NumPy arrays, the
    check is one ``memcmp`` per array on addresses worked out once."""

    def __init__(self, xp, arrays):
        self.xp = xp
        self.arrays = list(arrays)
        self.copies = [a.copy() for a in self.arrays]
        self.direct = None
        if _MEMCMP is not None and xp is np and all(
                a.flags.c_contiguous for a in self.arrays + self.copies):
            self.direct = [(a.ctypes.data, c.ctypes.data, a.nbytes)
                           for a, c in zip(self.arrays, self.copies) if a.nbytes]

    def same(self, arrays):
        """Whether ``arrays`` hold the snapshot's bits (same shapes and dtypes)."""
        if len(arrays) != len(self.copies):
            return False
        if self.direct is not None and all(a is b for a, b in zip(arrays, self.arrays)):
            cmp = _MEMCMP
            return all(cmp(p, q, n) == 0 for p, q, n in self.direct)
        return all(same_bits(self.xp, c, a) for c, a in zip(self.copies, arrays))


class CpuKernels(typing.Protocol):
    """The kernels a CPU backend offers operators (oneDNN's, ``symgraph.backend.onednn``),
    declared here as :class:`DeviceGroup` and :class:`ProcessGroup` are, so that ``ops/``
    never imports a backend.

    Each takes NumPy arrays and returns its result, or None to decline: a dtype, layout,
    axis or size it does not take, or a size at which NumPy is faster -- the size thresholds
    and the routing are the backend's, not the operators' (oneDNN's: its ``routing``
    module, measured with ``bench/bench_onednn.py --ops``). The operator then computes
    with NumPy, which stays the reference. An operator asks :func:`cpu_kernel` for one, as
    it asks ``symgraph.cuda``'s loader for a CUDA kernel. Where a plan must know before
    any call what a kernel takes (a storage mode, a layout), it asks the query kernels
    :meth:`takes` and :meth:`pool_takes`, which answer from the same tables.

    :meth:`record` and :meth:`replay` are the one way an operator has the backend replay
    its calls on the very arrays of an earlier one (``ops/_util.py``'s ``on_backend``).
    """

    def softmax_forward(self, x, axis, log=False):
        """softmax (log-softmax) of ``x`` along ``axis`` (non-negative), or None."""

    def lrn_forward(self, x, size, alpha, beta, k):
        """LRN's output across the channels of (N, C, H, W) ``x`` (``alpha`` divided by
        ``size`` as MXNet's formula), without ``tmp_norm``, or None."""

    def eltwise_forward(self, x, kind, alpha=0.0, beta=0.0, out=None):
        """f(x) elementwise (relu, tanh, sigmoid, softrelu, elu, gelu), or None."""

    def eltwise_backward(self, x, dy, kind, alpha=0.0, beta=0.0):
        """dy * f'(x), or None."""

    def relu_backward_from_output(self, y, dy, out=None):
        """dy * (y > 0), or None."""

    def add(self, a, b, relu=False, out=None):
        """a + b (relu'd), or None."""

    def matmul(self, a, b, out=None):
        """a @ b of 2-D arrays, or None."""

    def conv_forward(self, x, w, b, stride, pad, dilate, groups, yshape, is_train=True,
                     out=None):
        """An N-D convolution's output, or None."""

    def conv_backward_data(self, dy, w, xshape, stride, pad, dilate, groups, out=None):
        """A convolution's data gradient, or None."""

    def conv_backward_weights(self, x, dy, wshape, stride, pad, dilate, groups, out=None):
        """A convolution's weight gradient, or None."""

    def conv_forward_bf16(self, x, w, b, stride, pad, dilate, groups, yshape,
                          is_train=False, post_ops=()):
        """A convolution's output from bfloat16 data and weights, in bfloat16, or None."""

    def fc_forward_bf16(self, x, w, b):
        """``x @ w.T + b`` of 2-D bfloat16 ``x`` and ``w``, in bfloat16, or None."""

    def eltwise_forward_bf16(self, x, kind, alpha=0.0, beta=0.0):
        """f(x) elementwise of bfloat16 ``x``, in bfloat16, or None."""

    def softmax_forward_bf16(self, x, axis, log=False):
        """softmax (log-softmax) of bfloat16 ``x`` along ``axis``, in bfloat16, or None."""

    def pool_forward_bf16(self, x, kind, kernel, stride, pad_l, pad_r, yshape):
        """Inference pooling of bfloat16 ``x``, in bfloat16, or None."""

    def add_bf16(self, a, b, relu=False):
        """a + b (relu'd) of bfloat16 arrays, in bfloat16, or None."""

    def batch_norm_forward_bf16(self, x, gamma, beta, eps, mean=None, var=None):
        """Batch normalisation of bfloat16 ``x`` with float32 scale, shift and statistics:
        y (bfloat16) with the given ``mean``/``var``, or (y, batch mean, batch variance)
        when ``mean`` is None; or None."""

    def concat_bf16(self, arrays, axis):
        """bfloat16 ``arrays`` joined along ``axis`` (non-negative), or None."""

    def cast_bf16(self, x, dtype, out=None):
        """float32 ``x`` as ``dtype`` (ml_dtypes' bfloat16) or bfloat16 ``x`` as float32
        (``dtype`` float32), or None."""

    def pool_forward(self, x, kind, kernel, stride, pad_l, pad_r, yshape, is_train,
                     out_layout=None, global_pool=False):
        """(output, workspace) of max/avg pooling (``global_pool``: one window over all of
        the spatial axes), or None."""

    def pool_backward(self, dy, ws, kind, kernel, stride, pad_l, pad_r, xshape, out=None,
                      x=None):
        """Pooling's data gradient, or None; max pooling without the forward's workspace
        ``ws`` runs the forward on the data ``x`` for one."""

    def takes(self, name, size=None, kind=None):
        """Whether the kernel ``name`` (:meth:`eltwise_forward`, :meth:`eltwise_backward`,
        :meth:`relu_backward_from_output` or :meth:`add`) computes ``kind`` (the eltwise
        kind; for ``add``, 'relu' or None) for float32 arrays of ``size`` elements (None:
        of some size). Asked before a call the backend would record (``on_backend``) or
        where the plan must know in advance."""

    def pool_takes(self, xshape, pool_type, kernel, direction='forward', global_pool=False):
        """Whether :meth:`pool_forward` (``direction`` 'forward') or :meth:`pool_backward`
        ('backward') computes ``pool_type`` ('max' or 'avg') pooling of float32 data of
        ``xshape`` with windows of ``kernel``."""

    def batch_norm_forward(self, x, gamma, beta, eps, mean=None, var=None, is_train=True,
                           out=None, relu=False, stats_out=(None, None), ws_out=None):
        """Batch normalisation's outputs (channels on axis 1), or None."""

    def batch_norm_backward(self, x, dy, gamma, mean, var, eps, global_stats, dx_out=None,
                            ws=None, param_out=(None, None)):
        """Batch normalisation's gradients, or None."""

    def conv_forward_fused(self, x, w, b, stride, pad, dilate, groups, yshape, post_ops=(),
                           residual=None, token=None, cache=None, out_layout=None, out=None,
                           memo=None):
        """An inference convolution with its post-ops (oneDNN's: sums, eltwise) in one
        call, or None; ``cache``/``memo``: dicts of the caller's Step for its primitives
        (with reordered constant weights, changed with ``token``) and its last call."""

    def conv_scratch_bytes(self, xshape, wshape, yshape, weights_only=False):
        """At most how many bytes of internal buffers one convolution call of these
        shapes takes (the ``scratch_bytes`` rule; the executor lends them)."""

    def bn_scratch_bytes(self, xshape):
        """At most how many bytes of reorder buffers one batch-norm call on data of
        ``xshape`` takes."""

    def record(self, memo, tag, arrays, run, result):
        """``run()``, a call of these kernels into ``arrays`` that returns
        ``arrays[result]`` (an index, or a tuple of them), kept for :meth:`replay` in
        ``memo`` (a dict of the caller's Step: :attr:`Step.replays`) under ``tag`` where
        every array its primitives took is one of ``arrays``. Returns what ``run()``
        returned."""

    def replay(self, memo, tag, arrays):
        """Run again the call :meth:`record` kept in ``memo`` for ``tag`` when ``arrays``
        are its very arrays (all alive); True when it did, False when the caller must
        call."""


    def int8_conv(self, x, w, bias, stride, pad, dilate, groups, token=None, cache=None):
        """The exact int32 convolution of uint8/int8 ``x`` (N, C, *S) with int8 ``w``
        (F, C / groups, *K) plus an int32 ``bias`` (F,) or None, or None; with a ``token``
        the weights and bias are one layer's constants (``cache``: the caller's dict)."""

    def int8_matmul(self, x, w):
        """``x @ w.T`` of 2-D uint8/int8 ``x`` and int8 ``w``, exact in int32, or None."""

    def int8_requantize(self, acc, scales, dtype, token, cache):
        """int32 ``acc`` (N, C, *S) times per-channel float32 ``scales``: float32, or
        rounded to nearest even and saturated into int8/uint8 ``dtype``; or None."""

    def int8_pool(self, x, kind, kernel, stride, pad_l, pad_r, yshape):
        """Max pooling (``kind`` 'max') of int8/uint8 ``x`` into ``yshape``, or None."""

    def int8_add(self, y, s, scale, relu, dtype, cache):
        """float32 ``y`` plus int8/uint8 ``s`` times ``scale`` (a relu where ``relu``),
        rounded to nearest even and saturated into int8/uint8 ``dtype``; or None."""

    def rnn_forward(self, mode, x, w, hx, cx, H, L, D, is_train, spare=None):
        """The fused ``RNN`` operator's forward (float32; no projection, state clipping,
        sequence lengths or dropout): ``(y, hy, cy, kept)``, ``kept`` what
        :meth:`rnn_backward` takes, or None; ``spare``: the caller's list of workspaces
        no longer in use, which the kernel may take instead of allocating."""

    def rnn_backward(self, mode, x, w, hx, cx, H, L, D, kept, hy, cy, dy, dhy, dcy):
        """The fused ``RNN`` operator's gradients ``(dx, dw, dhx, dcx)`` from what
        :meth:`rnn_forward` kept and returned, or None."""


#: the kernel names of :class:`CpuKernels` (what :func:`cpu_kernel` may be asked)
CPU_KERNELS = frozenset(k for k in vars(CpuKernels) if not k.startswith('_'))


def cpu_kernel(name):
    """The CPU backend's kernel ``name`` (one of :class:`CpuKernels`: a function that
    returns None to decline), or None where no CPU backend is loaded.

    Operators ask at every call: one lookup in the backend's table of the kernels it gave
    (``symgraph.backend.onednn.KERNEL_TABLE``, emptied when the backend is reset)."""
    try:
        return _KERNEL_TABLE[0][name]
    except (IndexError, KeyError):
        pass
    if name not in CPU_KERNELS:
        raise KeyError('no CPU kernel %r; the kernels are %s'
                       % (name, ', '.join(sorted(CPU_KERNELS))))
    onednn = _onednn()
    if not _KERNEL_TABLE:
        _KERNEL_TABLE.append(onednn.KERNEL_TABLE)
    return onednn.kernel(name)


#: [the backend's kernel table] once :func:`cpu_kernel` was first asked
_KERNEL_TABLE = []


def gpu_kernel(name):
    """The GPU backend's kernel ``name`` for CuPy arrays (cuDNN's, through
    ``symgraph.backend.cudnn.kernel``: a function that returns None to decline), or None
    where cuDNN is off, missing or has no GPU (one log line says why); the operator then
    runs symgraph's own CUDA kernels. Ask only with CuPy arrays in hand (the backend finds
    CuPy among the imported modules, importing nothing)."""
    if not _CUDNN_MODULE:
        from symgraph.backend import cudnn
        _CUDNN_MODULE.append(cudnn)
    return _CUDNN_MODULE[0].kernel(name)


_CUDNN_MODULE = []


def cpu_backend():
    """The native CPU backend for NumPy float32 arrays (oneDNN), or None.

    ``symgraph.backend.onednn.backend()``: loaded on the first call (``import symgraph``
    makes it), None when the library is switched off (``SYMGRAPH_ONEDNN=0``), missing or
    fails its version check (one log line says which). Its methods return None for a case
    they do not take; the operator then computes with NumPy, which stays the reference.
    """
    return _onednn().backend()


_ONEDNN_MODULE = []


def _onednn():
    """``symgraph.backend.onednn``, imported at the first call (loading the library costs
    time; operators ask for it at every step, hence the module kept here)."""
    if not _ONEDNN_MODULE:
        from symgraph.backend import onednn
        _ONEDNN_MODULE.append(onednn)
    return _ONEDNN_MODULE[0]


def unify_shape(a, b, what='shape'):
    """Merge two partial shapes (None = unknown, dimension 0 = unknown dimension)."""
    if a is None:
        return None if b is None else tuple(b)
    if b is None:
        return tuple(a)
    if type(a) is tuple and type(b) is tuple and a == b and 0 not in a:
        # (the common case: what the loop below returns)
        return tuple(a)
    if len(a) != len(b):
        raise ShapeError('%s: %s vs %s' % (what, tuple(a), tuple(b)))
    out = []
    for x, y in zip(a, b):
        if x == 0:
            out.append(y)
        elif y == 0 or x == y:
            out.append(x)
        else:
            raise ShapeError('%s: %s vs %s' % (what, tuple(a), tuple(b)))
    return tuple(out)


def elemwise_shape(op, in_shapes, n_out=1, names=None):
    """The common shape of all inputs of an elementwise operator (or None)."""
    names = names or op.list_arguments()
    s = None
    for i, t in enumerate(in_shapes[:len(names)]):
        try:
            s = unify_shape(s, t)
        except ShapeError:
            raise ShapeError('inputs must have the same shape, but %r has %s and %s were '
                             'expected from the other inputs'
                             % (names[i], tuple(t), s)) from None
    return s


def same_type(op, in_types):
    t = None
    names = op.list_arguments()
    for i, x in enumerate(in_types[:len(names)]):
        if x is None:
            continue
        if t is None:
            t = x
        elif np.dtype(x) != np.dtype(t):
            raise TypeInferenceError('input %r has type %s but %s was expected'
                                     % (names[i], np.dtype(x).name, np.dtype(t).name))
    return None if t is None else np.dtype(t)


def dtype_name(t):
    return None if t is None else as_dtype(t).name


def np_dtype(t):
    return None if t is None else as_dtype(t)


def reduce_to_shape(xp, g, shape):
    """Sum a broadcast gradient ``g`` back to ``shape`` (the inverse of broadcasting)."""
    if g.shape == tuple(shape):
        return g
    nd = g.ndim - len(shape)
    if nd > 0:
        g = g.sum(axis=tuple(range(nd)))
    axes = tuple(i for i, (a, b) in enumerate(zip(g.shape, shape)) if b == 1 and a != 1)
    if axes:
        g = g.sum(axis=axes, keepdims=True)
    return g.reshape(shape)
