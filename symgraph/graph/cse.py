"""Common subexpression elimination, after MXNet 1.9.1's
``src/nnvm/eliminate_common_expr_pass.cc``: what ``Executor.get_optimized_symbol`` shows. Over nodes only
(``graph/``): the executor wraps the result in a Symbol.

Two nodes merge when they apply equal operators (operator instances compare by their
parameters) with equal node attributes to the same inputs; the first one stays. Operators
that draw random numbers or keep per-bind state never merge (MXNet leaves out the
operators that ask for a random resource and the stateful ones). Where merging makes two
graph outputs one entry, the later outputs read a ``_copy`` of it, so that each output
stays an array of its own, as MXNet's pass does.
"""
from .. import opdef
from .nodes import Node, topo_order

__all__ = ['eliminate_common_expr']

#: operator-name marks of the operators that never merge: random draws, Dropout's mask, and
#: those with per-bind state (MXNet's stateful operators: a Custom operator's CustomOp, the
#: control-flow operators' compiled subgraphs)
_NEVER_PREFIXES = ('_random_', '_sample_', 'random_', 'sample_', '_shuffle', 'Dropout',
                   '_contrib_rand', 'Custom', '_foreach', '_while_loop', '_cond')


def _mergeable(node):
    return not node.op.name.startswith(_NEVER_PREFIXES)


def eliminate_common_expr(outputs):
    """The output entries ``(node, index)`` of the graph with common subexpressions merged.

    Examples
    --------
    >>> import symgraph as mx
    >>> a, b = mx.sym.var('a'), mx.sym.var('b')
    >>> s = (a + b) + (a + b)
    >>> len(s.get_internals().list_outputs())
    5
    >>> merged = mx.sym.Symbol(eliminate_common_expr(s.graph().outputs))
    >>> len(merged.get_internals().list_outputs())
    4
    """
    new = {}            # id(old node) -> its node in the merged graph
    first = {}          # merge key -> node
    for node in topo_order([n for n, _ in outputs]):
        if node.op is None:
            new[id(node)] = node
            continue
        inputs = tuple((new[id(src)], i) for src, i in node.inputs)
        key = None
        if _mergeable(node):
            key = (node.op, tuple((id(src), i) for src, i in inputs),
                   tuple(sorted(node.attrs.items())))
            if key in first:
                new[id(node)] = first[key]
                continue
        same = all(a is b for (a, _), (b, _) in zip(inputs, node.inputs))
        new[id(node)] = node if same else Node(node.op, node.name, node.attrs, inputs,
                                               node.location)
        if key is not None:
            first[key] = new[id(node)]
    result, taken = [], set()
    copy = opdef.get_op('_copy')
    for node, i in outputs:
        entry = (new[id(node)], i)
        if (id(entry[0]), i) in taken and entry[0].op is not None:
            entry = (Node(copy(), '%s_copy' % entry[0].name, {}, [entry], entry[0].location), 0)
        taken.add((id(entry[0]), entry[1]))
        result.append(entry)
    return result
