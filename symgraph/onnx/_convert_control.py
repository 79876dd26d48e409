"""ONNX converters of the control-flow operators: ``_foreach`` (ONNX Scan),
``_while_loop`` (ONNX Loop) and ``_cond`` (ONNX If).

The bodies are exported with :meth:`ExportGraph.subgraph`; a body's free variables (the
``remain``/free inputs of the node) are read from the enclosing graph by name, as ONNX's
outer scope allows. A condition graph is inlined where its value is needed (before an If
or a Loop, and at the end of the Loop body on the new loop variables), its first element
cast to bool as MXNet tests ``pred != 0``. ``_while_loop``'s stacked step outputs are
padded with zeros to ``max_iterations`` rows, as symgraph's operator does (MXNet leaves
the padding uninitialised).
"""
import numpy as np

from ..symbol import Symbol
from ._convert_misc import i64, onnx_type, scalar, unsqueeze
from ._registry import converter

__all__ = []


def _helper():
    from onnx import helper
    return helper


def _outer(g, node, sub, locs):
    """``{variable name: (ONNX name, shape, dtype)}`` of a subgraph whose input ``i`` is
    the node's input ``locs[i]``."""
    ins = g.inputs(node)
    return {name: (ins[l], g.in_shape(node, l), g.in_dtype(node, l))
            for name, l in zip(sub.list_inputs(), locs)}


def _predicate(g, sub, outer, nodes):
    """Inline the condition graph ``sub`` (reading ``outer``) into ``nodes`` (a list of
    NodeProto to extend); returns the name of its value as a bool scalar."""
    helper = _helper()
    graph = g.subgraph(Symbol(list(sub.heads)), [], None, outer)
    nodes.extend(graph.node)
    value = graph.output[0].name
    flat = g.fresh(value + '_flat')
    first = g.fresh(value + '_first')
    pred = g.fresh(value + '_pred')
    nodes.append(helper.make_node('Reshape', [value, i64(g, [-1])], [flat],
                                  name=g.fresh('pred_reshape')))
    nodes.append(helper.make_node('Gather', [flat, scalar(g, 0, np.int64)], [first],
                                  name=g.fresh('pred_first'), axis=0))
    nodes.append(helper.make_node('Cast', [first], [pred], name=g.fresh('pred_cast'),
                                  to=onnx_type(np.bool_)))
    return pred


def _inline_predicate(g, sub, outer):
    """:func:`_predicate` into the graph ``g`` is building."""
    nodes = []
    pred = _predicate(g, sub, outer, nodes)
    g.nodes.extend(nodes)
    return pred


@converter('_foreach')
def _foreach(g, node):
    """ONNX Scan: the states are Scan's state variables, the data its scan inputs (a 1-D
    data array's steps are arrays of shape (1,) in MXNet, so it is viewed as (T, 1))."""
    op = node.op
    body = op.subgraphs[0]
    names = body.list_inputs()
    nd, ns, nod = len(op.in_data_locs), len(op.in_state_locs), op.num_out_data
    ins = g.inputs(node)
    states, scans, body_in = [], [], []
    for j, loc in enumerate(op.in_state_locs):
        k = nd + j
        states.append(ins[k])
        body_in.append((names[loc], g.in_shape(node, k), g.in_dtype(node, k)))
    for k, loc in enumerate(op.in_data_locs):
        shape = g.in_shape(node, k)
        x = ins[k]
        if len(shape) == 1:
            x, step = unsqueeze(g, x, [1]), (1,)
        else:
            step = shape[1:]
        scans.append(x)
        body_in.append((names[loc], step, g.in_dtype(node, k)))
    outer = {}
    for m, loc in enumerate(op.remain_locs):
        k = nd + ns + m
        outer[names[loc]] = (ins[k], g.in_shape(node, k), g.in_dtype(node, k))
    heads = list(body.heads)
    graph = g.subgraph(Symbol(heads[nod:] + heads[:nod]), body_in, None, outer)
    outs = g.outputs(node)
    g.add('Scan', states + scans, outs[nod:nod + ns] + outs[:nod], num_scan_inputs=nd,
          body=graph)


@converter('_cond')
def _cond(g, node):
    """ONNX If on the condition graph's first element; both branches read the node's
    inputs from the enclosing graph."""
    op = node.op
    cond_g, then_g, else_g = op.subgraphs
    pred = _inline_predicate(g, cond_g, _outer(g, node, cond_g, op.cond_input_locs))
    branches = []
    for sub, locs in ((then_g, op.then_input_locs), (else_g, op.else_input_locs)):
        branches.append(g.subgraph(Symbol(list(sub.heads)), [], None,
                                   _outer(g, node, sub, locs)))
    g.add('If', [pred], g.outputs(node)[:op.num_outputs], then_branch=branches[0],
          else_branch=branches[1])


@converter('_while_loop')
def _while_loop(g, node):
    """ONNX Loop with trip count ``max_iterations``: the condition on the initial loop
    variables starts it, the body computes the step outputs and the new variables and
    then the condition on them; the stacked step outputs are padded to max_iterations."""
    helper = _helper()
    op = node.op
    cond_g, func_g = op.subgraphs
    fnames = func_g.list_inputs()
    nod = op.num_out_data
    var_in = [op.func_input_locs[v] for v in op.func_var_locs]
    ins = g.inputs(node)
    pred0 = _inline_predicate(g, cond_g, _outer(g, node, cond_g, op.cond_input_locs))
    body_in = [(fnames[v], g.in_shape(node, l), g.in_dtype(node, l))
               for v, l in zip(op.func_var_locs, var_in)]
    outer = {fnames[k]: (ins[l], g.in_shape(node, l), g.in_dtype(node, l))
             for k, l in enumerate(op.func_input_locs) if k not in op.func_var_locs}
    new_vars = [g.fresh('%s_var%d' % (node.name, j)) for j in range(len(var_in))]
    steps = [g.fresh('%s_step%d' % (node.name, i)) for i in range(nod)]
    heads = list(func_g.heads)
    body = g.subgraph(Symbol(heads[nod:] + heads[:nod]), body_in, new_vars + steps, outer)
    # the condition on the new loop variables (and the free values it reads)
    cmap = {}
    for name, l in zip(cond_g.list_inputs(), op.cond_input_locs):
        if l in var_in:
            j = var_in.index(l)
            cmap[name] = (new_vars[j], g.in_shape(node, l), g.in_dtype(node, l))
        else:
            cmap[name] = (ins[l], g.in_shape(node, l), g.in_dtype(node, l))
    extra = []
    pred = _predicate(g, cond_g, cmap, extra)
    body.node.extend(extra)
    bool_t = onnx_type(np.bool_)
    body.output.insert(0, helper.make_tensor_value_info(pred, bool_t, []))
    body.input.insert(0, helper.make_tensor_value_info(g.fresh('iteration'),
                                                       onnx_type(np.int64), []))
    body.input.insert(1, helper.make_tensor_value_info(g.fresh('cond_in'), bool_t, []))
    outs = g.outputs(node)
    stacked = [g.fresh('%s_stacked%d' % (node.name, i)) for i in range(nod)]
    g.add('Loop', [scalar(g, op.max_iterations, np.int64), pred0] + [ins[l] for l in var_in],
          outs[nod:nod + len(var_in)] + stacked, body=body)
    for i, s in enumerate(stacked):
        rank = len(g.out_shape(node, i))
        ran = g.add('Gather', [g.add('Shape', [s])[0], i64(g, [0])], axis=0)[0]
        rest = g.add('Sub', [i64(g, [op.max_iterations]), ran])[0]
        pads = g.add('Concat', [i64(g, [0] * rank), rest, i64(g, [0] * (rank - 1))],
                     axis=0)[0]
        g.add('Pad', [s, pads], outs[i:i + 1])
