"""``mx.sym.contrib.foreach``, ``while_loop`` and ``cond``: graphs built from Python
functions, as MXNet 1.9.1's python/mxnet/symbol/contrib.py builds them.

The body function is called once on Variables made in an ``AttrScope`` with
``__subgraph_name__``; what it returns becomes a subgraph. Entries the body reads from
outside the scope (free variables, outer results) are cut: inside they become Variables
named after the entry (MXNet's ``MXSymbolCutSubgraph``), outside they are inputs of the
control-flow node. Node names, attributes and the ``*_locs`` parameters are MXNet's, so
the JSON is what MXNet writes.
"""
from __future__ import annotations

import copy

from .. import opdef
from ..attribute import AttrScope
from ..base import ArgumentError, MXNetError, flatten_nested, regroup_nested, user_location
from ..graph import Node
from ..graph.subgraph import GraphSubgraph
from ..name import NameManager
from .symbol import Symbol, Group, Variable, _invoke

__all__ = ['foreach', 'while_loop', 'cond']

_SUBG = '__subgraph_name__'


class UnusedLoopInputError(ArgumentError, AssertionError):
    """A ``foreach`` body that leaves a data array or a state unused: a ValueError, and
    the AssertionError MXNet 1.9.1 raises there (its tests catch that)."""


def _outputs_format(sym):
    n = len(sym.list_outputs())
    return n if n > 1 else 0


def _flatten(args, inout_str):
    return flatten_nested(args, Symbol, inout_str, _outputs_format)


_regroup = regroup_nested


def _uniq_name(sym):
    """MXNet's ``'{}-{}'.format(sym.name, sym.attr('_value_index'))``."""
    node, i = sym._outputs[0]
    return '%s-%d' % (node.name, i)


def _unique_subgraph_name(name):
    outer = AttrScope._get_current()._attr.get(_SUBG, '')
    if outer != '':
        name = ''.join([outer, '$', name])
    counts = AttrScope._subgraph_names      # (read each time: MXNet's tests replace it)
    counts[name] += 1
    return name + str(counts[name] - 1)


def _check_data(inputs, msg):
    items = inputs if isinstance(inputs, list) else [inputs]
    if not all(isinstance(i, Symbol) for i in items):
        raise TypeError(msg)


def _identity(sym):
    return _invoke('_copy', (sym,), {}, hint='identity')


def _in_scope(node, name):
    return node.attrs.get(_SUBG, '') == name


def _construct_subgraph(sym_out, sym_states, name):
    """The body's outputs then states as one group; an entry that is an input or from
    outside the scope (or a state that is also an output) goes through ``identity``."""
    all_input_names = Group(list(sym_out) + list(sym_states)).list_inputs() \
        if sym_out or sym_states else []
    output_names = {o.name for o in sym_out}
    flat = []
    for o in sym_out:
        if o.name in all_input_names or not _in_scope(o._outputs[0][0], name):
            flat.append(_identity(o))
        else:
            flat.append(o)
    for s in sym_states:
        if s.name in all_input_names or s.name in output_names \
                or not _in_scope(s._outputs[0][0], name):
            flat.append(_identity(s))
        else:
            flat.append(s)
    return flat


def _cut_subgraph(heads, name):
    """MXNet's MXSymbolCutSubgraph: the heads of a copy of the graph in which every input
    of an in-scope node that comes from outside the scope is a new Variable named after
    that entry, and {that name: the outside entry}."""
    if not _in_scope(heads[0][0], name):
        return list(heads), {}
    memo, cut = {}, {}

    def copy_of(node):
        if id(node) in memo:
            return memo[id(node)]
        stack = [node]
        while stack:
            n = stack[-1]
            todo = [s for s, _ in n.inputs if _in_scope(s, name) and id(s) not in memo]
            if todo:
                stack.extend(todo)
                continue
            stack.pop()
            if id(n) in memo:
                continue
            inputs = []
            for s, i in n.inputs:
                if _in_scope(s, name):
                    inputs.append((memo[id(s)], i))
                else:
                    entry_name = s.output_names()[i]
                    if entry_name not in cut:
                        cut[entry_name] = ((s, i), Node(None, entry_name, {}, (),
                                                        s.location))
                    elif cut[entry_name][0] != (s, i):
                        raise MXNetError('the loop body reads two different entries named '
                                         '%r from outside' % entry_name)
                    inputs.append((cut[entry_name][1], 0))
            memo[id(n)] = n if n.op is None else Node(n.op, n.name, n.attrs, inputs,
                                                      n.location)
        return memo[id(node)]

    new_heads = [(copy_of(n), i) if _in_scope(n, name) else (n, i) for n, i in heads]
    return new_heads, {k: Symbol([v[0]]) for k, v in cut.items()}


def _make_node(op_name, graphs, inputs, params):
    """The control-flow node, as ``symbol._internal._foreach(g, *ins, **params)``."""
    cls = opdef.get_op(op_name)
    params = dict(params, num_args=len(inputs) + len(graphs))
    op = cls(**params).with_subgraphs([GraphSubgraph(g) for g in graphs])
    attrs = dict(AttrScope._get_current().get(None))
    attrs.update({k: opdef.format_value(v) for k, v in params.items()})
    node_name = NameManager._get_current().get(None, op_name)
    entries = [s._outputs[0] for s in inputs]
    node = Node(op, node_name, attrs, entries, user_location())
    return Symbol([(node, i) for i in range(op.num_visible_outputs())])


def _graph_inputs(heads):
    return [n for n in Symbol(heads)._order() if n.op is None]


def foreach(body, data, init_states, name="foreach"):
    """Run a for loop with user-defined computation over Symbols on dimension 0.

    ``out, states = body(data_slice, states)`` builds one iteration; the outputs of all
    iterations are stacked along axis 0 and the states of the last one returned, as
    MXNet's ``mx.sym.contrib.foreach``.

    Parameters
    ----------
    body : callable
        ``body(data, states) -> (outputs, new_states)``.
    data : Symbol or nested list of Symbols
        The input data, iterated over along axis 0.
    init_states : Symbol or nested list of Symbols
        The initial values of the loop states.
    name : str
        The name of the subgraph (``__subgraph_name__``).

    Returns
    -------
    outputs, states : Symbol or nested lists of Symbols
    """
    flatten_data, data_fmt = _flatten(data, "foreach input")
    _check_data(flatten_data, "data should be a symbol or a nested list of symbols")
    init_flatten_states, init_state_fmt = _flatten(init_states, "foreach states")
    _check_data(init_flatten_states,
                "init_states should be a symbol or a nested list of symbols")
    name = _unique_subgraph_name(name)
    with AttrScope(__subgraph_name__=name):
        in_eles = [Variable(_uniq_name(sym)) for sym in flatten_data]
        in_eles, _ = _regroup(in_eles, data_fmt)
        states = [Variable(_uniq_name(s)) for s in init_flatten_states]
        states, _ = _regroup(states, copy.deepcopy(init_state_fmt))
        sym_out, sym_states = body(in_eles, states)
        sym_out, out_fmt = _flatten(sym_out, "foreach output")
        sym_states, state_fmt = _flatten(sym_states, "foreach loop_vars")
        if init_state_fmt != state_fmt:
            raise ValueError("The input and output loop_vars have different format")
        _check_data(sym_out, "the output should be an NDArray or a nested list of NDArrays")
        _check_data(sym_states,
                    "the output states should be an NDArray or a nested list of NDArrays")
        num_out_data = len(sym_out)
        num_states = len(sym_states)
        num_outputs = num_out_data + num_states
        flat = _construct_subgraph(sym_out, sym_states, name)
    heads = [s._outputs[0] for s in flat]
    heads, cut_map = _cut_subgraph(heads, name)
    inputs = _graph_inputs(heads)
    subg_input_names = [n.name for n in inputs]
    if len(set(subg_input_names)) != len(subg_input_names):
        raise MXNetError("The inputs of the subgraph don't have unique names: "
                         + str(subg_input_names))
    state_names = [_uniq_name(sym) for sym in init_flatten_states]
    data_names = [_uniq_name(sym) for sym in flatten_data]
    ordered_ins = list(flatten_data)
    in_data_locs = []
    for dname in data_names:
        if dname not in subg_input_names:
            raise UnusedLoopInputError("the data arrays have to be used in the loop body")
        in_data_locs.append(subg_input_names.index(dname))
    ordered_ins.extend(init_flatten_states)
    in_state_locs = []
    for sname in state_names:
        if sname not in subg_input_names:
            raise UnusedLoopInputError("the state arrays have to be used in the loop body")
        in_state_locs.append(subg_input_names.index(sname))
    remain_locs = []
    for k, in_name in enumerate(subg_input_names):
        if in_name in cut_map:
            ordered_ins.append(cut_map[in_name])
            remain_locs.append(k)
        elif in_name not in data_names and in_name not in state_names:
            ordered_ins.append(Symbol([(inputs[k], 0)]))
            remain_locs.append(k)
    ret = _make_node('_foreach', [heads], ordered_ins, dict(
        num_outputs=num_outputs, num_out_data=num_out_data, in_state_locs=in_state_locs,
        in_data_locs=in_data_locs, remain_locs=remain_locs))
    outs = [ret[i] for i in range(num_outputs - num_states)]
    outs, _ = _regroup(outs, out_fmt)
    states = [ret[num_outputs - num_states + i] for i in range(num_states)]
    states, _ = _regroup(states, state_fmt)
    return (outs, states)


def _create_subgraph(graph_vars, graph_func, subgraph_name):
    subgraph_name = _unique_subgraph_name(subgraph_name)
    with AttrScope(__subgraph_name__=subgraph_name):
        graph_vars, var_fmt = _flatten(graph_vars, "while loop_vars")
        new_graph_vars = [Variable(_uniq_name(sym)) for sym in graph_vars]
        new_graph_vars, _ = _regroup(new_graph_vars, var_fmt)
        outputs, final_state, out_fmt, var_fmt = graph_func(new_graph_vars)
        num_out_data = len(outputs)
        num_outputs = len(outputs) + len(final_state)
        all_input_names = Group(outputs + final_state).list_inputs()

        def make_identity(x):
            if x.name in all_input_names or not _in_scope(x._outputs[0][0], subgraph_name):
                return _identity(x)
            return x
        graph = [make_identity(x) for x in outputs + final_state]
    heads = [s._outputs[0] for s in graph]
    return (heads, subgraph_name), num_out_data, num_outputs, out_fmt, var_fmt


def _union_inputs(graphs, loop_vars):
    """MXNet's _union_inputs: the node's inputs and, per graph, the node input of each
    graph input and the graph input of each loop variable.

    As in MXNet, only the loop variables are shared between the graphs (one node input
    each); every other graph input (a cut entry, an outside Variable) is a node input of
    its own, even where it reads the same entry as a loop variable's initial value or as
    an input of the other graph: the loop updates a loop variable's input and must leave
    a free variable that reads the same entry as it was."""
    inputs, locs, input_id_to_loc = [], [], {}
    name_to_loop_vars = {_uniq_name(sym): sym for sym in loop_vars}
    name_to_var_locs = {_uniq_name(sym): i for i, sym in enumerate(loop_vars)}
    cut_heads = []
    for heads, subg_name in graphs:
        heads, cut = _cut_subgraph(heads, subg_name)
        cut_heads.append(heads)
        ins = _graph_inputs(heads)
        names = [n.name for n in ins]
        if len(set(names)) != len(names):
            raise MXNetError("The inputs of the subgraph don't have unique names: "
                             + str(names))
        input_locs, var_locs = [], [-1] * len(loop_vars)
        for node, name in zip(ins, names):
            if name in name_to_loop_vars:
                sym = name_to_loop_vars[name]
                key = id(sym)
            else:
                sym = cut[name] if name in cut else Symbol([(node, 0)])
                key = object()
            if key in input_id_to_loc:
                loc = input_id_to_loc[key]
            else:
                loc = len(input_id_to_loc)
                inputs.append(sym)
                input_id_to_loc[key] = loc
            input_locs.append(loc)
            if name in name_to_var_locs:
                var_locs[name_to_var_locs[name]] = len(input_locs) - 1
        locs.append((input_locs, var_locs))
    return inputs, locs, cut_heads


def while_loop(cond, func, loop_vars, max_iterations=None, name="while_loop"):
    """Run a while loop with user-defined computation and loop condition, as MXNet's
    ``mx.sym.contrib.while_loop``.

    Parameters
    ----------
    cond : callable
        ``cond(*loop_vars) -> Symbol`` (a scalar; the loop ends when it is zero).
    func : callable
        ``func(*loop_vars) -> (step_output, new_loop_vars)``.
    loop_vars : Symbol or nested list of Symbols
        The initial values of the loop variables.
    max_iterations : int
        The number of steps the outputs hold (axis 0); the loop stops there.
    name : str

    Returns
    -------
    outputs, states : Symbol or nested lists of Symbols
        The step outputs stacked (``max_iterations`` long, zero-padded) and the final
        loop variables.
    """
    def _to_python_scalar(inputs, type_, what):
        if hasattr(inputs, "asscalar"):
            inputs = inputs.asscalar()
        try:
            inputs = type_(inputs)
        except Exception:
            raise ValueError("Cannot convert %s to python %s" % (what, type_.__name__))
        return inputs

    def _cond_wrapper(loop_vars):
        result = cond(*loop_vars)
        if not isinstance(result, Symbol):
            raise ValueError("Return of cond must be a Symbol")
        return [], [result], [], []

    def _func_wrapper(loop_vars):
        step_output, new_loop_vars = func(*loop_vars)
        if step_output is None:
            step_output = []
        if new_loop_vars is None:
            new_loop_vars = []
        if isinstance(step_output, tuple):
            step_output = list(step_output)
        if isinstance(new_loop_vars, tuple):
            new_loop_vars = list(new_loop_vars)
        step_output, out_fmt = _flatten(step_output, "while output")
        new_loop_vars, var_fmt = _flatten(new_loop_vars, "while loop_vars")
        if len(loop_vars) != len(new_loop_vars):
            raise ValueError("The number of loop_vars should be consistent during the loop")
        return step_output, new_loop_vars, out_fmt, var_fmt

    flatten_loop_vars, init_loop_var_fmt = _flatten(loop_vars, "while loop_vars")
    _check_data(flatten_loop_vars, "loop_vars should be a symbol or a nested list of symbols")
    if max_iterations is None:
        raise ValueError("max_iterations should be specified")
    max_iterations = _to_python_scalar(max_iterations, int, "max_iteration")
    if len(loop_vars) == 0:
        raise ValueError("loop_vars should contain at least one element")
    cond_g, num_out_data, num_outputs, _, _ = \
        _create_subgraph(loop_vars, _cond_wrapper, name + "_cond")
    func_g, num_out_data, num_outputs, out_fmt, _ = \
        _create_subgraph(loop_vars, _func_wrapper, name + "_func")
    input_syms, ((cond_input_locs, _), (func_input_locs, func_var_locs)), heads = \
        _union_inputs([cond_g, func_g], flatten_loop_vars)
    for i_th, loc in enumerate(func_var_locs, 1):
        if loc == -1:
            raise ValueError("The %d-th loop_var doesn't involve into the computation" % i_th)
    result = _make_node('_while_loop', heads, input_syms, dict(
        max_iterations=max_iterations, cond_input_locs=cond_input_locs,
        func_input_locs=func_input_locs, func_var_locs=func_var_locs,
        num_out_data=num_out_data, num_outputs=num_outputs))
    outputs = [result[i] for i in range(num_out_data)]
    outputs, _ = _regroup(outputs, out_fmt)
    final_loop_vars = [result[i] for i in range(num_out_data, num_outputs)]
    final_loop_vars, _ = _regroup(final_loop_vars, init_loop_var_fmt)
    return outputs, final_loop_vars


def cond(pred, then_func, else_func, name="cond"):
    """Run an if-then-else using user-defined condition and computation, as MXNet's
    ``mx.sym.contrib.cond``.

    Parameters
    ----------
    pred : Symbol
        A scalar; ``then_func()`` is taken when it is non-zero, ``else_func()`` otherwise.
    then_func, else_func : callable
        Functions of no argument returning a Symbol or nested list of Symbols, both of the
        same structure, shapes and dtypes.
    name : str

    Returns
    -------
    Symbol or nested list of Symbols
    """
    def _create_subgraph(graph_vars, graph_func, subgraph_name):
        subgraph_name = _unique_subgraph_name(subgraph_name)
        with AttrScope(__subgraph_name__=subgraph_name):
            new_graph_vars = [Variable(_uniq_name(sym)) for sym in graph_vars]
            outputs = graph_func(*new_graph_vars)
            outputs, out_fmt = _flatten(outputs, "cond outputs")
            num_outputs = len(outputs)
            all_input_names = Group(outputs).list_inputs()

            def make_identity(x):
                if x.name in all_input_names or \
                        not _in_scope(x._outputs[0][0], subgraph_name):
                    return _identity(x)
                return x
            graph = [make_identity(x) for x in outputs]
        return ([s._outputs[0] for s in graph], subgraph_name), num_outputs, out_fmt

    def _union_cond_inputs(*graphs):
        inputs, locs, input_id_to_loc = [], [], {}
        cut_heads = []
        for heads, subg_name in graphs:
            heads, cut = _cut_subgraph(heads, subg_name)
            cut_heads.append(heads)
            ins = _graph_inputs(heads)
            names = [n.name for n in ins]
            if len(set(names)) != len(names):
                raise MXNetError("The inputs of the subgraph don't have unique names: "
                                 + str(names))
            input_locs = []
            for node, nm in zip(ins, names):
                sym = cut[nm] if nm in cut else Symbol([(node, 0)])
                key = (id(sym._outputs[0][0]), sym._outputs[0][1])
                if key in input_id_to_loc:
                    loc = input_id_to_loc[key]
                else:
                    loc = len(input_id_to_loc)
                    inputs.append(sym)
                    input_id_to_loc[key] = loc
                input_locs.append(loc)
            locs.append(input_locs)
        return inputs, locs, cut_heads

    cond_g, cond_num_outputs, _ = _create_subgraph([], lambda: pred, name + "_pred")
    if cond_num_outputs != 1:
        raise ValueError("pred should always be a single output")
    then_g, then_num_outputs, then_fmt = _create_subgraph([], then_func, name + "_then")
    else_g, else_num_outputs, _ = _create_subgraph([], else_func, name + "_else")
    if then_num_outputs != else_num_outputs:
        raise ValueError("Number of outputs differs between then-branch and else-branch")
    input_syms, (cond_input_locs, then_input_locs, else_input_locs), heads = \
        _union_cond_inputs(cond_g, then_g, else_g)
    result = _make_node('_cond', heads, input_syms, dict(
        cond_input_locs=cond_input_locs, then_input_locs=then_input_locs,
        else_input_locs=else_input_locs, num_outputs=then_num_outputs))
    outputs = [result[i] for i in range(then_num_outputs)]
    outputs, _ = _regroup(outputs, then_fmt)
    return outputs
