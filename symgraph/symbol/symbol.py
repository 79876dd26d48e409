"""Symbols: static graphs built from Variables and operators (MXNet's ``mx.sym``).

A :class:`Symbol` is a tuple of output entries ``(Node, index)``. Operator functions
(``mx.sym.FullyConnected``, ``mx.sym.contrib.box_nms``, ``mx.sym._internal._Plus``) are
resolved from the operator registry on attribute access, so user-registered operators
appear as soon as they are registered.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .. import opdef
from ..attribute import PLAIN_KEYS, AttrScope, check_attrs, plain_keys, with_plain_copies
from ..base import (MXNetError, user_location, ArgumentError, ArgumentTypeError,
                    ParameterError, UnknownNameError, MissingFileError, NameCollisionError,
                    NotImplementedForSymbol, rewrap, atomic_write, mx_type)
from ..graph import Node, topo_order, aux_variable_ids, TYPE_CODE, parse_shape_attr, \
    dtype_from_attr, variable_name_clash
from ..graph.infer import (infer_shapes, infer_types, shape_complete, warn_unknown_shapes,
                           warn_unknown_types)
from ..graph.json_format import SymbolFormatError, from_json, to_json
from ..name import NameManager
from ..util import is_np_shape
from ..namespaces import make_namespaces
from ..ndarray import NDArray
from ..visualization import repr_svg, to_networkx

__all__ = ['Symbol', 'SymbolGraph', 'Variable', 'var', 'Group', 'load', 'load_json',
           'maximum', 'minimum', 'pow', 'power', 'hypot', 'zeros', 'ones', 'full', 'arange']


class SymbolGraph(NamedTuple):
    """A Symbol's graph as the rest of the package reads it (:meth:`Symbol.graph`): the
    executor, the visualisation and the graph rewriters take the nodes from here, never from
    the Symbol's internals. Nodes are frozen; treat the lists as read-only."""
    #: every node, inputs before their readers, in MXNet's order (depth first over inputs)
    order: list
    #: the argument Variables, in :meth:`Symbol.list_arguments` order
    arguments: list
    #: the auxiliary-state Variables (BatchNorm's moving statistics, ...)
    aux_states: list
    #: the output entries ``(node, output index)``, in :meth:`Symbol.list_outputs` order
    outputs: tuple


#: the subgraph backends of :meth:`Symbol.get_backend_symbol`: name -> function(symbol,
#: name) -> Symbol, registered by the package that owns the passes (mx.contrib.quantization
#: registers MXNet's 'MKLDNN' and 'MKLDNN_QUANTIZE'), so that symbol/ imports none of them
BACKEND_PASSES = {}


class Symbol:
    """A symbolic graph with one or more outputs."""

    __slots__ = ('_outputs', '__weakref__')
    #: NumPy scalars on the left defer to the Symbol (``np.float32(2) * x``), as in MXNet
    __array_priority__ = 1000.0

    def __init__(self, outputs):
        self._outputs = tuple(outputs)

    # ------------------------------------------------------------------ structure
    @property
    def name(self):
        """The name of the head node (None for a group of several nodes)."""
        if len({id(n) for n, _ in self._outputs}) != 1:
            return None
        return self._outputs[0][0].name

    @property
    def output_entries(self):
        """The output entries ``(node, output index)`` (no sort: cheap)."""
        return self._outputs

    def graph(self, check_names=True):
        """The graph: a :class:`SymbolGraph` of the nodes in topological order, the
        argument and auxiliary Variables and the outputs (one sort).

        ``check_names``: refuse two different Variables with one name, as listing,
        inference and binding do (a ``NameCollisionError``); False only for what merely
        draws or counts the nodes.

        >>> import symgraph as mx
        >>> g = mx.sym.FullyConnected(mx.sym.var('x'), num_hidden=2, name='fc').graph()
        >>> [n.name for n in g.order], [n.name for n in g.arguments], g.outputs[0][1]
        (['x', 'fc_weight', 'fc_bias', 'fc'], ['x', 'fc_weight', 'fc_bias'], 0)
        """
        if check_names:
            order, args, aux = self._arg_aux()
        else:
            order = self._order()
            aux_ids = aux_variable_ids(order)
            args = [n for n in order if n.op is None and id(n) not in aux_ids]
            aux = [n for n in order if n.op is None and id(n) in aux_ids]
        return SymbolGraph(order, args, aux, self._outputs)

    def input_values(self, kind, given, graph=None):
        """What inference starts from: ``{Variable node: shape or dtype}`` from ``given``
        (``{input name: shape}`` for ``kind='shape'``, ``{name: dtype}`` for ``'type'``), then
        the Variables' ``__shape__`` / ``__dtype__`` attributes. ``graph``: this symbol's
        :meth:`graph`, where the caller has it (spares a sort). An unknown name is an
        ArgumentError listing the inputs."""
        return self._known((), dict(given), kind, graph)[3]

    def _order(self):
        return topo_order([n for n, _ in self._outputs])

    def _checked_order(self):
        """:meth:`_order`, refused when two different Variables share a name (they could
        not be told apart when bound by name; MXNet binds them ambiguously). Checked where a
        whole graph is used (listing, inference, bind, Group, composition), not at each
        operator call, which would make building a graph quadratic."""
        order = self._order()
        _check_names(order)
        return order

    def _arg_aux(self):
        order = self._checked_order()
        aux_ids = aux_variable_ids(order)
        args = [n for n in order if n.op is None and id(n) not in aux_ids]
        aux = [n for n in order if n.op is None and id(n) in aux_ids]
        return order, args, aux

    def list_arguments(self):
        """Names of the arguments, in MXNet's order (depth first over inputs)."""
        return [n.name for n in self._arg_aux()[1]]

    def list_auxiliary_states(self):
        """Names of the auxiliary states (e.g. BatchNorm's moving statistics)."""
        return [n.name for n in self._arg_aux()[2]]

    def list_inputs(self):
        """Names of all Variables: arguments and auxiliary states, in graph order."""
        return [n.name for n in self._checked_order() if n.op is None]

    def list_outputs(self):
        """Names of the outputs: ``<node>_output`` or ``<node>_<name>``."""
        return [n.output_names()[i] for n, i in self._outputs]

    def __len__(self):
        return len(self._outputs)

    def __iter__(self):
        return (Symbol([o]) for o in self._outputs)

    def __getitem__(self, index):
        if isinstance(index, str):
            names = self.list_outputs()
            matches = [i for i, n in enumerate(names) if n == index]
            if not matches:
                raise ArgumentError('cannot find output %r in %s' % (index, names))
            if len(matches) > 1:
                raise ArgumentError('there are multiple outputs named %r' % index)
            index = matches[0]
        if isinstance(index, slice):
            # as MXNet: each index in range(start, stop, step) must exist
            start = 0 if index.start is None else index.start
            stop = len(self._outputs) if index.stop is None else index.stop
            picked = [self[i] for i in range(start, stop, 1 if index.step is None
                                             else index.step)]
            if not picked:
                raise ArgumentTypeError('slice %r selects no output of %d' % (index, len(self)))
            return Symbol([o for p in picked for o in p._outputs])
        if not isinstance(index, int):
            raise ArgumentTypeError('Symbol index must be an int, a slice or an output name')
        if index >= len(self._outputs) or index < -len(self._outputs):
            raise IndexError('output index %d out of range (%d outputs)'
                             % (index, len(self._outputs)))
        return Symbol([self._outputs[index]])

    def get_internals(self):
        """A group of every output of every node (variables included)."""
        outs = []
        for n in self._order():
            outs.extend((n, i) for i in range(n.num_visible_outputs()))
        return Symbol(outs)

    def _gen_atomic_symbol(self):
        """The head node's operator alone: same operator and attributes, no inputs, an
        empty name, every visible output (MXNet's ``MXGenAtomicSymbolFromSymbol``).

        Raises
        ------
        ValueError
            For a Variable or a group of several nodes.
        """
        heads = {id(n): n for n, _ in self._outputs}
        head = self._outputs[0][0]
        if len(heads) != 1 or head.op is None:
            raise ArgumentError('_gen_atomic_symbol: the symbol must be one operator node, '
                                'got %s' % ('a Variable' if head.op is None else
                                            '%d nodes' % len(heads)))
        node = Node(head.op, '', head.attrs, (), head.location)
        return Symbol([(node, i) for i in range(node.num_visible_outputs())])

    def get_children(self):
        """The inputs of the head nodes as one group, or None for a variable."""
        inputs, seen = [], set()
        for node, _ in self._outputs:          # each head node once, as MXNet
            if id(node) not in seen:
                seen.add(id(node))
                inputs.extend(node.inputs)
        return Symbol(inputs) if inputs else None

    def __copy__(self):
        return self.__deepcopy__(None)      # MXNet's copy is a deep copy

    def __call__(self, *args, **kwargs):
        """Compose: a copy in which argument Variables are replaced by other symbols,
        ``net(data=other)``; ``name=`` renames the head node. As in MXNet 1.9.1 the
        replacements are given by keyword, each a single-output Symbol naming an argument
        of this symbol."""
        name = kwargs.pop('name', None)
        if args:
            raise ArgumentError('compose: give the replacement symbols by keyword '
                                '(argument=symbol); MXNet composes general symbols by keyword '
                                'only')
        arg_names = self.list_inputs()      # auxiliary states may be replaced too
        for k, v in kwargs.items():
            if k not in arg_names:
                raise UnknownNameError('compose: %r is not an input of this symbol; inputs are %s'
                                       % (k, arg_names))
            if not isinstance(v, Symbol):
                raise ArgumentTypeError('compose: argument %r must be a Symbol, got %s'
                                        % (k, type(v).__name__))
            if len(v._outputs) != 1:
                raise ArgumentError('compose: argument %r is a group of %d outputs; a single '
                                    'output is required' % (k, len(v._outputs)))
        # MXNet composes a copy of the whole graph: the Variables it keeps are new nodes
        # too (a group of two compositions lists their shared weight names twice)
        new = {}
        for n in self._order():
            if n.op is None:
                new[id(n)] = kwargs[n.name]._outputs[0] if n.name in kwargs else \
                    (Node(None, n.name, n.attrs, (), n.location, same_as=n), 0)
                continue
            inputs = [(new[id(src)][0], new[id(src)][1] if src.op is None else i)
                      for src, i in n.inputs]
            new[id(n)] = (Node(n.op, n.name, n.attrs, inputs, n.location), 0)
        outputs = [(new[id(n)][0], i) if n.op is not None else new[id(n)]
                   for n, i in self._outputs]
        if name is not None:
            heads = {id(n) for n, _ in outputs}
            if len(heads) != 1 or outputs[0][0].op is None:
                raise ArgumentError('compose: name= renames a single operator head')
            head = outputs[0][0]
            renamed = Node(head.op, name, head.attrs, head.inputs, head.location)
            outputs = [(renamed, i) for _, i in outputs]
        composed = Symbol(outputs)
        composed._checked_order()       # a replacement may bring a Variable's name again
        return composed

    def __deepcopy__(self, memo):
        self._checked_order()
        return _load_json_copy(self.tojson(remove_amp_cast=False))

    def __repr__(self):
        if len(self._outputs) == 1:
            return '<Symbol %s>' % self.name
        return '<Symbol group [%s]>' % ', '.join(self.list_outputs())

    def __hash__(self):
        return hash(self._outputs)

    def __bool__(self):
        raise NotImplementedForSymbol(self.__bool__, 'bool')

    # ------------------------------------------------------------------ attributes
    def attr(self, key):
        """The string attribute ``key`` of the head node, or None (also for the outputs of
        one multi-output node, as MXNet)."""
        if len({id(n) for n, _ in self._outputs}) != 1:
            return None
        return with_plain_copies(self._outputs[0][0].attrs).get(key)

    def list_attr(self, recursive=False):
        """Attributes of the head node (``recursive`` is deprecated, use attr_dict)."""
        if recursive:
            raise DeprecationWarning('list_attr(recursive=True) is deprecated; '
                                     'use attr_dict()')
        # as MXNet: the attributes of the first output's node
        return with_plain_copies(self._outputs[0][0].attrs)

    def attr_dict(self):
        """``{node name: {key: value}}`` for every node that has attributes."""
        return {n.name: with_plain_copies(n.attrs) for n in self._order() if n.attrs}

    def _set_attr(self, **kwargs):
        """Set string attributes of the head node; an operator parameter is parsed and
        the operator rebuilt with it, as MXNet re-parses its parameters."""
        for k, v in kwargs.items():
            if not isinstance(v, str):
                raise ArgumentError('Set Attr only accepts string values')
        heads = {id(n): n for n, _ in self._outputs}
        if len(heads) != 1:
            raise ArgumentError('_set_attr: the symbol has %d head nodes; set attributes on one '
                                'node at a time' % len(heads))
        (n,) = heads.values()
        attrs = check_attrs(kwargs)
        if n.op is not None:
            params = {k: v for k, v in attrs.items() if k in n.op._params}
            bad = [k for k in plain_keys(attrs) if k not in n.op._params]
            if bad and n.op._params and not n.op.free_params:
                raise UnknownNameError('operator %s: unknown parameter %s (other attributes must '
                                       'be __dunder__)' % (n.op.name, bad))
            if params:
                values = {k: v for k, v in n.attrs.items() if k in n.op._params}
                values.update(params)
                new_op = type(n.op)(**values)
                if new_op.list_arguments() != n.op.list_arguments():
                    raise ParameterError('operator %s: setting %s would change its inputs'
                                         % (n.op.name, sorted(params)))
                object.__setattr__(n, 'op', new_op)
        n.attrs.update(attrs)

    # ------------------------------------------------------------------ inference
    def _known(self, args, kwargs, kind, graph=None):
        """The inference problem: ``(order, arg_nodes, aux_nodes, known)``; ``graph``, a
        :meth:`graph` the caller already has, spares another sort."""
        order, arg_nodes, aux_nodes = graph[:3] if graph is not None else self._arg_aux()
        known = {}
        if args and kwargs:
            raise ArgumentError('infer_%s: give either positional or keyword arguments' % kind)
        if args:
            if len(args) > len(arg_nodes):
                raise ArgumentError('infer_%s: %d positional values for %d arguments %s'
                                    % (kind, len(args), len(arg_nodes),
                                       [n.name for n in arg_nodes]))
            for n, v in zip(arg_nodes, args):
                if v is not None:
                    known[n] = v
        by_name = {}
        for n in arg_nodes + aux_nodes:
            by_name.setdefault(n.name, []).append(n)     # Variables may share a name
        for k, v in kwargs.items():
            if k not in by_name:
                raise ArgumentError('infer_%s: %r is not an input of the symbol; inputs are %s'
                                    % (kind, k, list(by_name)))
            if v is not None:
                for n in by_name[k]:
                    known[n] = v
        for n in arg_nodes + aux_nodes:
            if n in known:
                known[n] = (_input_shape(n.name, known[n]) if kind == 'shape'
                            else opdef.as_dtype(known[n]))
            elif kind == 'shape' and '__shape__' in n.attrs:
                known[n] = parse_shape_attr(n.attrs['__shape__'])
                if is_np_shape():
                    # -1 is the unknown size under NumPy-shape semantics (0 to inference)
                    known[n] = tuple(0 if d == -1 else d for d in known[n])
            elif kind == 'type' and '__dtype__' in n.attrs:
                known[n] = dtype_from_attr(n.attrs['__dtype__'])
        return order, arg_nodes, aux_nodes, known

    def _infer_shape_impl(self, args, kwargs, answers=None):
        order, arg_nodes, aux_nodes, known = self._known(args, kwargs, 'shape')
        values = infer_shapes(order, known, answers)
        index = {id(n): k for k, n in enumerate(order)}

        def get(node, i=0):
            return values.get((index[id(node)], i))
        return ([get(n) for n in arg_nodes], [get(n, i) for n, i in self._outputs],
                [get(n) for n in aux_nodes])

    def infer_shape(self, *args, **kwargs):
        """Infer the shapes of all arguments, outputs and auxiliary states.

        Returns ``(arg_shapes, out_shapes, aux_shapes)``, lists of tuples, or
        ``(None, None, None)`` with a warning when the information given is not enough.

        >>> import symgraph as mx
        >>> fc = mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=3, name='fc')
        >>> fc.infer_shape(data=(2, 5))
        ([(2, 5), (3, 5), (3,)], [(2, 3)], [])
        """
        return self._infer_shape_complete(args, kwargs)

    def _infer_shape_complete(self, args, kwargs, answers=None, stacklevel=3):
        """:meth:`infer_shape` (``answers``: see ``infer_shapes``)."""
        arg, out, aux = self._infer_shape_impl(args, kwargs, answers)
        # with every input known, a 0 in an output is a real empty dimension (a slice)
        if all(shape_complete(s) for s in arg + aux) and all(s is not None for s in out):
            return arg, out, aux
        warn_unknown_shapes(self.list_arguments(), arg, stacklevel)
        return None, None, None

    def infer_shape_partial(self, *args, **kwargs):
        """Like :meth:`infer_shape` but unknown shapes are ``()`` and unknown dims 0; under
        NumPy-shape semantics (``mx.np_shape()``) they are None and -1, as in MXNet."""
        arg, out, aux = self._infer_shape_impl(args, kwargs)
        if is_np_shape():
            fix = lambda lst: [None if s is None else tuple(-1 if d == 0 else d  # noqa: E731
                                                            for d in s) for s in lst]
        else:
            fix = lambda lst: [() if s is None else tuple(s) for s in lst]  # noqa: E731
        return fix(arg), fix(out), fix(aux)

    def explain_shape(self, name, *args, **kwargs):
        """Why ``name`` (an input's or an output's name) has the shape inference gives it,
        from the input shapes given as for :meth:`infer_shape`: a
        :class:`~symgraph.graph.explain.ShapeExplanation`, whose ``str`` is the chain of
        rules (node, operator, the shapes it saw, the dimensions it fixed, the rule's
        file:line), or, where inference fails, the two sides that disagreed.

        >>> import symgraph as mx
        >>> fc = mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=3, name='fc')
        >>> fc.explain_shape('fc_weight', data=(2, 5)).shape
        (3, 5)
        """
        from ..graph.explain import explain_shape
        order, _, _, known = self._known(args, kwargs, 'shape')
        given = set(kwargs) | set(self.list_arguments()[:len(args)])
        return explain_shape(order, known, name, given)

    def infer_type(self, *args, **kwargs):
        """Infer dtypes: ``(arg_types, out_types, aux_types)`` of NumPy type objects."""
        return self._infer_type_complete(args, kwargs)

    def _infer_type_complete(self, args, kwargs, answers=None, stacklevel=3):
        """:meth:`infer_type` (``answers``: see ``infer_types``)."""
        order, arg_nodes, aux_nodes, known = self._known(args, kwargs, 'type')
        values = infer_types(order, known, answers)
        index = {id(n): k for k, n in enumerate(order)}

        def get(node, i=0):
            t = values.get((index[id(node)], i))
            return None if t is None else mx_type(t)
        arg = [get(n) for n in arg_nodes]
        out = [get(n, i) for n, i in self._outputs]
        aux = [get(n) for n in aux_nodes]
        if any(t is None for t in arg + out + aux):
            warn_unknown_types([n.name for n in arg_nodes], arg, stacklevel)
            return None, None, None
        return arg, out, aux

    def infer_type_partial(self, *args, **kwargs):
        """Like :meth:`infer_type` but unknown types are None (no warning)."""
        return self._infer_type_partial(args, kwargs)

    def _infer_type_partial(self, args, kwargs, answers=None):
        order, arg_nodes, aux_nodes, known = self._known(args, kwargs, 'type')
        values = infer_types(order, known, answers)
        index = {id(n): k for k, n in enumerate(order)}
        get = lambda n, i=0: values.get((index[id(n)], i))  # noqa: E731
        t = lambda x: None if x is None else mx_type(x)  # noqa: E731
        return ([t(get(n)) for n in arg_nodes], [t(get(n, i)) for n, i in self._outputs],
                [t(get(n)) for n in aux_nodes])

    # ------------------------------------------------------------------ JSON
    def get_backend_symbol(self, backend):
        """This symbol rewritten by a subgraph backend's passes, as MXNet's
        ``get_backend_symbol`` (``'MKLDNN'``: the oneDNN fusion of convolution, batch norm,
        sum and activation into ``_sg_mkldnn_conv`` nodes; ``'MKLDNN_QUANTIZE'``: the same
        for int8 graphs)."""
        try:
            rewrite = BACKEND_PASSES[backend]
        except KeyError:
            raise UnknownNameError('get_backend_symbol: unknown backend %r; the backends are '
                                   '%s' % (backend, ', '.join(sorted(BACKEND_PASSES))))
        return rewrite(self, backend)

    def tojson(self, remove_amp_cast=True):
        """The graph in MXNet's JSON format; as MXNet, without the ``amp_cast`` /
        ``amp_multicast`` nodes that feed other nodes unless ``remove_amp_cast=False``."""
        return to_json(self._outputs, remove_amp_cast=remove_amp_cast,
                       np_shape=bool(is_np_shape()))

    def save(self, fname, remove_amp_cast=True):
        """Write the JSON graph to ``fname`` (``remove_amp_cast`` as :meth:`tojson`)."""
        text = self.tojson(remove_amp_cast=remove_amp_cast)
        # UTF-8 whatever the locale, as MXNet writes it; all or nothing (atomic_write)
        with atomic_write(fname, 'w') as f:
            f.write(text)

    # ------------------------------------------------------------------ execution
    def simple_bind(self, ctx=None, grad_req='write', type_dict=None, stype_dict=None,
                    group2ctx=None, shared_arg_names=None, shared_exec=None,
                    shared_buffer=None, **kwargs):
        """Bind with zero-initialised arrays allocated from the given input shapes."""
        from ..executor import simple_bind
        return simple_bind(self, ctx, grad_req=grad_req, type_dict=type_dict,
                           group2ctx=group2ctx, shared_exec=shared_exec, shapes=kwargs)

    def bind(self, ctx, args, args_grad=None, grad_req='write', aux_states=None,
             group2ctx=None, shared_exec=None):
        """Bind arrays to the arguments and return an :class:`~symgraph.executor.Executor`."""
        from ..executor import Executor
        return Executor(self, ctx, args, args_grad, grad_req, aux_states, group2ctx)

    def eval(self, ctx=None, **kwargs):
        """Bind the given NDArrays and run forward; returns the outputs."""
        exe = self.bind(ctx, kwargs)
        return exe.forward()

    def debug_str(self):
        lines = []
        for n in self._order():
            if n.op is None:
                lines.append('Variable:%s' % n.name)
            else:
                lines.append('Op:%s, Name=%s (%s)' % (n.op.name, n.name, n.location))
                for j, (src, i) in enumerate(n.inputs):
                    lines.append('  arg[%d]=%s' % (j, src.output_names()[i]))
        return '\n'.join(lines)

    # ------------------------------------------------------------------ visualisation
    def to_networkx(self, shape=None):
        return to_networkx(self, shape=shape)

    def _repr_svg_(self):
        return repr_svg(self)

    # ------------------------------------------------------------------ operators
    def _bin(self, other, op, scalar_op, hint=None, scalar_hint=None):
        if isinstance(other, Symbol):
            # as MXNet's arithmetic, which calls mx.sym._internal: a function given there
            # in place of the operator (mx.contrib.amp.init's casting wrappers) is used
            fn = _internal.function(op) if op is not None else None
            if fn is not None:
                return fn(self, other)
            return _invoke(op, (self, other), {}, hint=hint)
        if isinstance(other, (int, float, np.number, bool)):
            return _invoke(scalar_op, (self,), {'scalar': other}, hint=scalar_hint)
        return NotImplemented

    def __add__(self, o):
        return self._bin(o, '_Plus', '_PlusScalar')

    __radd__ = __add__

    def __sub__(self, o):
        return self._bin(o, '_Minus', '_MinusScalar')

    def __rsub__(self, o):
        return self._bin(o, None, '_RMinusScalar')

    def __mul__(self, o):
        return self._bin(o, '_Mul', '_MulScalar')

    __rmul__ = __mul__

    def __truediv__(self, o):
        return self._bin(o, '_Div', '_DivScalar')

    def __rtruediv__(self, o):
        return self._bin(o, None, '_RDivScalar')

    __div__, __rdiv__ = __truediv__, __rtruediv__

    def __mod__(self, o):
        return self._bin(o, '_Mod', '_ModScalar')

    def __rmod__(self, o):
        return self._bin(o, None, '_RModScalar')

    def __pow__(self, o):
        return self._bin(o, '_Power', '_PowerScalar')

    def __rpow__(self, o):
        return self._bin(o, None, '_rpower_scalar')

    def __neg__(self):
        return _invoke('_MulScalar', (self,), {'scalar': -1.0})

    def __abs__(self):
        return _invoke('abs', (self,), {})

    def __eq__(self, o):
        return self._bin(o, '_equal', '_equal_scalar')

    def __ne__(self, o):
        return self._bin(o, '_not_equal', '_not_equal_scalar')

    def __gt__(self, o):
        return self._bin(o, '_greater', '_greater_scalar')

    def __ge__(self, o):
        return self._bin(o, '_greater_equal', '_greater_equal_scalar')

    def __lt__(self, o):
        return self._bin(o, '_lesser', '_lesser_scalar')

    def __le__(self, o):
        return self._bin(o, '_lesser_equal', '_lesser_equal_scalar')

    def __getattr__(self, name):
        # fluent methods: x.reshape(...), x.sum(...), x.exp() ...
        if name.startswith('_') or name not in _FLUENT:
            raise AttributeError(name)
        if name == 'astype':        # x.astype('int32') is a Cast node, as in MXNet
            return lambda dtype, **k: _invoke('Cast', (self,), dict(k, dtype=dtype),
                                              hint='cast')
        fn = _op_function(name)
        if name == 'reshape':       # x.reshape((2, 3)) as well as x.reshape(shape=(2, 3))
            return lambda *a, **k: fn(self, shape=a[0] if len(a) == 1 else a, **k) \
                if a else fn(self, **k)
        return lambda *a, **k: fn(self, *a, **k)

    def split_v2(self, *args, **kwargs):
        """Fluent :func:`split_v2` with this symbol as ``ary``."""
        return split_v2(self, *args, **kwargs)

    # attributes of MXNet's Symbol handled elsewhere
    def __reduce__(self):
        self._checked_order()
        return (_load_json_copy, (self.tojson(remove_amp_cast=False),))


_FLUENT = frozenset('''reshape reshape_like transpose flatten expand_dims squeeze sum mean
max min prod norm argmax argmin exp log sqrt square abs sign clip tile repeat broadcast_to
broadcast_axes slice slice_axis take pick one_hot softmax log_softmax relu sigmoid tanh
split swapaxes astype zeros_like ones_like round floor ceil topk sort argsort arccos arccosh
arcsin arcsinh arctan arctanh argmax_channel broadcast_like cbrt cos cosh degrees
depth_to_space diag expm1 fix flip log10 log1p log2 nanprod nansum pad radians rcbrt
reciprocal rint rsqrt shape_array sin sinh size_array slice_like softmin space_to_depth tan
trunc'''.split())


def _input_shape(name, shape):
    """A shape given for input ``name``: -1 (MXNet's unknown) becomes 0, ours."""
    try:
        dims = tuple(int(d) for d in shape)
    except TypeError:
        raise ArgumentError('the shape of %r must be a tuple of ints, got %r'
                            % (name, shape)) from None
    if any(d < -1 for d in dims):
        raise ArgumentError('the shape of %r has a dimension below -1: %s' % (name, dims))
    return tuple(max(d, 0) for d in dims)


# ---------------------------------------------------------------------- creation
def Variable(name, attr=None, shape=None, lr_mult=None, wd_mult=None, dtype=None,
             init=None, stype=None, **kwargs):
    """A placeholder for an input or a parameter.

    >>> import symgraph as mx
    >>> w = mx.sym.var('w', shape=(3, 4), lr_mult=2.0)
    >>> sorted(w.list_attr().items())     # lr_mult is stored as __lr_mult__, shown both ways
    [('__lr_mult__', '2.0'), ('__shape__', '(3, 4)'), ('lr_mult', '2.0')]
    """
    if not isinstance(name, str):
        raise ArgumentTypeError('Expect a string for variable `name`')
    attrs = AttrScope._get_current().get(check_attrs(attr))
    if shape is not None:
        # (an int is a 1-D shape, as MXNet's `var('b', shape=(1))` reads it)
        attrs['__shape__'] = str((int(shape),) if isinstance(shape, (int, np.integer))
                                 else tuple(shape))
    if lr_mult is not None:
        attrs['__lr_mult__'] = str(lr_mult)
    if wd_mult is not None:
        attrs['__wd_mult__'] = str(wd_mult)
    if dtype is not None:
        attrs['__dtype__'] = str(TYPE_CODE[opdef.as_dtype(dtype).name])
    if init is not None:
        attrs['__init__'] = init if isinstance(init, str) else init.dumps()
    if stype is not None:
        codes = {'default': '0', 'row_sparse': '1', 'csr': '2'}
        if stype not in codes:
            raise UnknownNameError('Variable %r: unknown storage type %r (MXNet knows %s)'
                                   % (name, stype, sorted(codes)))
        # (a sparse variable binds dense-backed arrays: ndarray/sparse.py)
        attrs['__storage_type__'] = codes[stype]
    for k, v in kwargs.items():
        if k.startswith('__') and k.endswith('__'):
            attrs[k] = str(v)
        else:
            raise ArgumentError('Attribute name=%s is not supported. Additional attributes '
                                'must start and end with double underscores, e.g, '
                                '__yourattr__' % k)
    return Symbol([(Node(None, name, attrs, (), user_location()), 0)])


var = Variable


def Group(symbols):
    """One symbol whose outputs are the outputs of ``symbols`` in order."""
    if not symbols or any(not isinstance(s, Symbol) for s in symbols):
        raise ArgumentTypeError('Expected a list of symbols as input')
    outs = []
    for s in symbols:
        outs.extend(s._outputs)
    group = Symbol(outs)
    group._checked_order()      # symbols built apart may each have their own 'fc1_weight'
    return group


def _check_names(order):
    """NameCollisionError naming the name and where both Variables were created."""
    clash = variable_name_clash(order)
    if clash is not None:
        a, b = clash
        raise NameCollisionError(
            'two different Variables are named %r in one graph: one created at %s, the other '
            'at %s; they could not be told apart when bound by name. Give the layers or '
            'Variables distinct names, or share a weight by passing the same Variable '
            '(weight=w) to both layers' % (a.name, a.location, b.location))


def _entry_of(sym, op_name, arg):
    if not isinstance(sym, Symbol):
        raise ArgumentTypeError('operator %s: input %r must be a Symbol, got %s'
                                % (op_name, arg, type(sym).__name__))
    if len(sym._outputs) != 1:
        raise ArgumentError('operator %s: input %r is a group of %d outputs %s; compose with '
                            'one output' % (op_name, arg, len(sym._outputs),
                                            sym.list_outputs()))
    return sym._outputs[0]


def _is_dunder(key):
    return len(key) > 4 and key.startswith('__') and key.endswith('__')


def _invoke(func_name, args, kwargs, hint=None):
    """Create an operator node: the body of every ``mx.sym.<op>`` function."""
    cls = opdef.get_op(func_name)
    # None for an input means "not given": MXNet then creates the input Variable itself
    # (conv(data, weight=None) helpers pass it straight through)
    # after the parameters, name, attr and out bind by position as in MXNet's generated
    # functions (mx.sym.BlockGrad(data, 'g')); out is accepted and ignored, as there
    # (where MXNet's signature has an input: split_positional tells it from a parameter
    # value None, mx.sym.sum(x, None))
    args, kwargs = opdef.split_positional(
        cls, args, lambda a: isinstance(a, Symbol) or _is_array(a), kwargs,
        trailing=('name', 'attr', 'out'))
    kwargs = dict(kwargs)
    name = kwargs.pop('name', None)
    attr = kwargs.pop('attr', None)
    kwargs.pop('out', None)
    # as MXNet: keyword arguments named __key__ (and its known plain keys, lr_mult...) are
    # node attributes, not parameters; attr= and the AttrScope override them
    kw_attrs = {k: kwargs.pop(k) for k in list(kwargs)
                if not isinstance(kwargs[k], Symbol) and k not in cls._params
                and (_is_dunder(k) or k in PLAIN_KEYS)}
    # arrays (an NDArray, a NumPy array) are inputs given as the wrong kind: refused below,
    # naming the input, once the operator knows its input names
    sym_kwargs = {k: v for k, v in kwargs.items()
                  if isinstance(v, Symbol) or (_is_array(v) and k not in cls._params)}
    # an explicit None is kept for a parameter: MXNet writes it as 'None' (e.g. axis=None)
    params = {k: v for k, v in kwargs.items() if k not in sym_kwargs
              and (v is not None or k in cls._params or cls.free_params)}
    if 'num_args' in cls._params and 'num_args' not in params:
        params['num_args'] = len(args) + len(sym_kwargs)
    # the name is taken before the operator is made: a call that fails still uses up its
    # counter, as in MXNet, so later automatic names match MXNet's
    hint = hint or func_name.lower()
    node_name = NameManager._get_current().get(name, hint)
    location = user_location()
    where = 'node %r (operator %s, created at %s)' % (node_name, cls.name, location)
    try:
        op = cls(**params)
    except MXNetError as e:
        raise rewrap(e, where) from None
    str_params = {k: opdef.format_value(v) for k, v in params.items()}
    attrs = check_attrs(kw_attrs)
    attrs.update(AttrScope._get_current().get(check_attrs(attr)))
    bad = [k for k in plain_keys(attrs) if k not in cls._params]
    if bad and not cls.free_params:
        raise UnknownNameError('%s: unknown parameter %s given through attr/AttrScope; '
                               'valid parameters are %s (other attributes must be __dunder__)'
                               % (where, bad, sorted(cls._params)))
    attrs.update(str_params)
    arg_names = op.list_arguments()
    in_names = arg_names + op.list_auxiliary_states()
    # a None past the inputs this operator takes (bias with no_bias=True) is left out
    while len(args) > len(in_names) and args[-1] is None:
        args = args[:-1]
    if len(args) > len(in_names):
        raise ArgumentError('operator %s: %d positional inputs but it takes %d: %s'
                            % (cls.name, len(args), len(in_names), in_names))
    for k in sym_kwargs:
        if k not in in_names:
            raise UnknownNameError('operator %s: unknown input %r; inputs are %s'
                                   % (cls.name, k, in_names))
    twice = [an for j, an in enumerate(in_names[:len(args)])
             if an in sym_kwargs and args[j] is not None]
    if twice:
        raise ArgumentError('operator %s: input %s given both by position and by keyword'
                            % (cls.name, ', '.join(repr(a) for a in twice)))
    default_init = op.input_init()
    inputs = []
    for j, an in enumerate(in_names):
        if an in sym_kwargs or (j < len(args) and args[j] is not None):
            given = sym_kwargs[an] if an in sym_kwargs else args[j]
            if not isinstance(given, Symbol):
                raise ArgumentTypeError(
                    '%s: input %r must be a Symbol, got %s (arrays go to mx.nd.%s)'
                    % (where, an, type(given).__name__, cls.name))
            entry = _entry_of(given, cls.name, an)
            src = entry[0]
            if an in default_init and src.op is None and '__init__' not in src.attrs:
                # MXNet gives the user's Variable the operator's initializer, in place
                src.attrs['__init__'] = default_init[an]
            inputs.append(entry)
        else:
            # MXNet creates the missing input, inheriting the node's attributes
            v_attrs = dict(attrs)
            if an in default_init:
                v_attrs['__init__'] = default_init[an]
            v = Node(None, '%s_%s' % (node_name, an), v_attrs, (), location)
            inputs.append((v, 0))
    node = Node(op, node_name, attrs, inputs, location)
    n = op.num_visible_outputs()
    return Symbol([(node, i) for i in range(n)])


def _is_array(v):
    """An NDArray or a NumPy array: never a parameter value of ``mx.sym`` functions."""
    return isinstance(v, (NDArray, np.ndarray))


def _op_function(func_name, hint=None):
    """The ``mx.sym.<func_name>`` function; nodes are named ``<hint><n>`` (default: the
    function name in lower case, as MXNet does)."""
    cls = opdef.get_op(func_name)

    def fn(*args, **kwargs):
        return _invoke(func_name, args, kwargs, hint=hint)
    fn.__name__ = func_name
    fn.__qualname__ = func_name
    fn.__doc__ = cls.__doc__
    return fn


def _scalar_or_sym(lhs, rhs, op, scalar_op, rscalar_op, np_fn):
    if isinstance(lhs, Symbol) and isinstance(rhs, Symbol):
        return _invoke(op, (lhs, rhs), {})
    if isinstance(lhs, Symbol):
        return _invoke(scalar_op, (lhs,), {'scalar': rhs})
    if isinstance(rhs, Symbol):
        return _invoke(rscalar_op, (rhs,), {'scalar': lhs})
    return np_fn(lhs, rhs)


def maximum(left, right):
    """Elementwise maximum of symbols and/or scalars."""
    return _scalar_or_sym(left, right, '_Maximum', '_MaximumScalar', '_MaximumScalar', max)


def minimum(left, right):
    """Elementwise minimum of symbols and/or scalars."""
    return _scalar_or_sym(left, right, '_Minimum', '_MinimumScalar', '_MinimumScalar', min)


def power(base, exp):
    """``base ** exp`` for symbols and/or scalars."""
    return _scalar_or_sym(base, exp, '_Power', '_PowerScalar', '_RPowerScalar',
                          lambda a, b: a ** b)


pow = power  # noqa: A001  (MXNet's name)


def hypot(left, right):
    return _scalar_or_sym(left, right, '_Hypot', '_HypotScalar', '_HypotScalar', np.hypot)


def _dtype_name(dtype):
    """MXNet's wrappers write the dtype (float32 when none is given)."""
    return 'float32' if dtype is None else opdef.as_dtype(dtype).name


def zeros(shape, dtype=None, **kwargs):
    """An array of zeros (no inputs), as ``mx.sym.zeros``."""
    return _invoke('_zeros', (), dict(kwargs, shape=shape, dtype=_dtype_name(dtype)))


def ones(shape, dtype=None, **kwargs):
    return _invoke('_ones', (), dict(kwargs, shape=shape, dtype=_dtype_name(dtype)))


def full(shape, val, dtype=None, **kwargs):
    return _invoke('_full', (), dict(kwargs, shape=shape, value=float(val),
                                     dtype=_dtype_name(dtype)))


def arange(start, stop=None, step=1.0, repeat=1, infer_range=False, name=None, dtype=None):
    """``repeat`` copies of each value of [start, stop) by ``step`` (stop=None: [0, start))."""
    return _invoke('_arange', (), dict(start=start, stop=stop, step=step, repeat=repeat,
                                       infer_range=infer_range, name=name,
                                       dtype=_dtype_name(dtype)))


def eye(N, M=0, k=0, dtype=None, **kwargs):
    return _invoke('_eye', (), dict(kwargs, N=N, M=M, k=k, dtype=_dtype_name(dtype)))


def linspace(start, stop, num, endpoint=True, name=None, dtype=None):
    return _invoke('_linspace', (), dict(start=start, stop=stop, num=num, endpoint=endpoint,
                                         name=name, dtype=_dtype_name(dtype)))


def _split_v2_params(indices_or_sections):
    """``(indices, sections)`` of ``_split_v2`` from the wrappers' one argument."""
    if isinstance(indices_or_sections, int):
        return [], indices_or_sections
    if isinstance(indices_or_sections, tuple):
        return [0] + list(indices_or_sections), 0
    raise ValueError('indices_or_sections must either int or tuple of ints')


def split_v2(ary, indices_or_sections, axis=0, squeeze_axis=False):
    """Split ``ary`` along ``axis`` into equal sections or at indices (``_split_v2``).

    Parameters
    ----------
    ary : Symbol
    indices_or_sections : int or tuple of ints
        The number of equal pieces, or the sorted indices where the axis is split.
    axis : int
        The axis to split (default 0, as MXNet's wrapper).
    squeeze_axis : bool
        Remove the split axis from pieces of length 1.
    """
    indices, sections = _split_v2_params(indices_or_sections)
    params = dict(indices=indices, axis=axis, squeeze_axis=squeeze_axis, sections=sections)
    # as MXNet's wrapper, which calls mx.sym._internal._split_v2: a function given there
    # (mx.contrib.amp.init's casting wrapper) is used
    fn = _internal.function('_split_v2')
    if fn is not None:
        return fn(ary, **params)
    return _invoke('_split_v2', (ary,), params)


def histogram(a, bins=10, range=None, **kwargs):
    """Counts of ``a`` in bins (``_histogram``): ``bins`` a Symbol of edges, or a number of
    equal bins over ``range`` (required in symbol mode, as MXNet)."""
    if isinstance(bins, Symbol):
        return _invoke('_histogram', (a,), dict(kwargs, bins=bins))
    if isinstance(bins, int):
        if range is None:
            raise ValueError('null range is not supported in symbol mode')
        return _invoke('_histogram', (a,), dict(kwargs, bin_cnt=bins, range=range))
    raise ValueError('bins argument should be either an integer or an NDArray')


def load_json(json_str):
    """A symbol from MXNet's JSON text (files written by MXNet 1.x load)."""
    return Symbol(from_json(json_str))


def _load_json_copy(json_str):
    """A copy (deepcopy, pickle) of a symbol from its JSON: same-named Variables in it
    stand for one another already (compositions), so no warning."""
    return Symbol(from_json(json_str, warn_duplicates=False))


def load(fname):
    """A symbol from a JSON file (``model-symbol.json``, UTF-8 as MXNet writes it)."""
    try:
        with open(fname, 'rb') as f:
            raw = f.read()
    except FileNotFoundError as e:
        raise MissingFileError(e.errno, 'mx.sym.load: no such file', fname) from None
    try:
        text = raw.decode('utf-8')
    except UnicodeDecodeError as e:
        hint = ''
        if raw[:8] == (0x112).to_bytes(8, 'little'):
            hint = ' (it looks like a .params file: load those with mx.nd.load)'
        raise SymbolFormatError('%s: not UTF-8 JSON text (byte %d)%s'
                                % (fname, e.start, hint)) from None
    return Symbol(from_json(text, source=fname))


#: mx.sym.random.uniform(...), mx.sym.contrib.box_nms, mx.sym.linalg.gemm2, ... (the table
#: is namespaces.NAMESPACES, shared with mx.nd)
random, contrib, linalg, _internal, image = make_namespaces('sym', Symbol, _invoke,
                                                           _op_function)


def __getattr__(name):
    if name.startswith('__'):
        raise AttributeError(name)
    try:
        return _op_function(name)
    except MXNetError:
        raise opdef.unknown_operator(name) from None


def __dir__():
    return sorted(set(globals()) | set(opdef.list_ops(aliases=True)))

