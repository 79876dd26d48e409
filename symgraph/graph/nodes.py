"""Graph nodes and the traversals everything else is built on."""
from __future__ import annotations

import numpy as np

from ..base import as_dtype

__all__ = ['Node', 'topo_order', 'aux_variable_ids', 'variable_name_clash', 'TYPE_CODE',
           'CODE_TYPE']

#: MXNet's type flags (``__dtype__`` attributes and ``.params`` files)
TYPE_CODE = {'float32': 0, 'float64': 1, 'float16': 2, 'uint8': 3, 'int32': 4, 'int8': 5,
             'int64': 6, 'bool': 7, 'int16': 8, 'uint16': 9, 'uint32': 10, 'uint64': 11,
             'bfloat16': 12}
CODE_TYPE = {v: k for k, v in TYPE_CODE.items()}


class Node:
    """One node of a graph. Frozen after creation except for string attributes.

    op : Operator instance, or None for a Variable.
    name : the node's name (free text, kept unchanged through JSON).
    attrs : dict of str -> str, everything MXNet writes under "attrs" (operator
        parameters as the user gave them, plus ``__dunder__`` and scope attributes).
    inputs : tuple of (Node, output index).
    location : 'file:line' of the user code that created the node.
    same_as : for a Variable, the Variable it stands for (the original of a copy made by
        composition, or the first of same-named Variables read from JSON), or None: such
        Variables share their name legitimately (see :func:`variable_name_clash`).
    """

    # (__weakref__: the JSON reader remembers, weakly, the input versions a file gave)
    __slots__ = ('op', 'name', 'attrs', 'inputs', 'location', 'same_as', '__weakref__')

    def __init__(self, op, name, attrs, inputs, location='<unknown>', same_as=None):
        object.__setattr__(self, 'op', op)
        object.__setattr__(self, 'name', name)
        object.__setattr__(self, 'attrs', dict(attrs or {}))
        object.__setattr__(self, 'inputs', tuple(inputs))
        object.__setattr__(self, 'location', location)
        object.__setattr__(self, 'same_as', None if same_as is None
                           else (same_as.same_as or same_as))

    def __setattr__(self, k, v):
        raise AttributeError('graph nodes are immutable')

    @property
    def is_variable(self):
        return self.op is None

    def num_outputs(self):
        return 1 if self.op is None else self.op.output_count()

    def num_visible_outputs(self):
        return 1 if self.op is None else self.op.num_visible_outputs()

    def output_names(self):
        """User-visible names of all outputs, hidden ones included."""
        if self.op is None:
            return [self.name]
        if not self.name:           # an unnamed node (_gen_atomic_symbol's): nnvm's names
            return list(self.op.list_outputs())
        return ['%s_%s' % (self.name, o) for o in self.op.list_outputs()]

    def describe(self):
        """'node <name> (operator <op>, created at <file:line>)' for error messages."""
        if self.op is None:
            return 'variable %r' % self.name
        return 'node %r (operator %s, created at %s)' % (self.name, self.op.name, self.location)

    def __repr__(self):
        return '<Node %s %s>' % ('null' if self.op is None else self.op.name, self.name)


def topo_order(head_nodes, inputs_of=None):
    """Nodes reachable from ``head_nodes`` in MXNet's order: depth-first post-order over
    inputs, heads in order. Iterative, so deep graphs need no recursion. ``inputs_of``
    (node -> list of (node, index)) replaces ``node.inputs`` (a rewired graph)."""
    visited = set()
    order = []
    for head in head_nodes:
        if id(head) in visited:
            continue
        visited.add(id(head))
        # (node, iterator over its inputs not yet looked at)
        stack = [(head, iter(head.inputs if inputs_of is None else inputs_of(head)))]
        while stack:
            node, ins = stack[-1]
            for entry in ins:
                child = entry[0]
                if id(child) not in visited:
                    visited.add(id(child))
                    stack.append((child, iter(child.inputs if inputs_of is None
                                              else inputs_of(child))))
                    break
            else:
                stack.pop()
                order.append(node)
    return order


def aux_variable_ids(order):
    """ids of Variables used as auxiliary states by some operator."""
    aux = set()
    for n in order:
        if n.op is None:
            continue
        n_args = len(n.op.list_arguments())
        for src, _ in n.inputs[n_args:]:
            aux.add(id(src))
    return aux


def variable_name_clash(order):
    """The first two different Variables of ``order`` that have the same name, or None.

    Variables are the same when they are one node, or one stands for the other
    (``same_as``: copies made by composition, same-named Variables read from JSON).
    One pass over the nodes: a dict lookup per Variable.
    """
    seen = {}
    for n in order:
        if n.op is not None:
            continue
        key = n.same_as or n
        first = seen.setdefault(n.name, (key, n))
        if first[0] is not key:
            return first[1], n
    return None


def parse_shape_attr(s):
    """``'(64, 0, 3, 3)'`` -> (64, 0, 3, 3); 0 means unknown."""
    s = s.strip().strip('()[]')
    if not s:
        return ()
    return tuple(int(x) for x in s.replace('L', '').split(',') if x.strip())


def dtype_from_attr(s):
    s = s.strip()
    if s.lstrip('-').isdigit():
        return as_dtype(CODE_TYPE[int(s)])
    return as_dtype(s)
