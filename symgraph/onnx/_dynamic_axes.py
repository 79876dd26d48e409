"""The check behind ``dynamic_input_shapes``: a declared dynamic axis other than the
batch must not be folded into the model.

Converters build shapes from the sizes symgraph inferred for the export's ``in_shapes``;
with ``dynamic=True`` they keep the batch axis symbolic, but a size that follows from
another dynamic axis (a sequence length) may still be written as a constant, and the
model would then break, or silently compute something else, at another size. So the
graph is converted a second time with every declared dynamic axis (the batch too, when
another axis is declared) at another size: the two ONNX graphs must be the same, node
for node and constant for constant; the first node that differs names the symgraph node
whose converter folded the size, in an :class:`ExportError`.
"""
import warnings

from ..base import ShapeError
from ._registry import ExportError

__all__ = ['check_dynamic_axes']


def _free_axes(in_shapes, dims):
    """``[(input index, axis)]`` of the dynamic axes (None or a name), empty where only
    axes 0 are (the batch, which the converters keep symbolic). Axes 0 are varied with
    the others: an RNN's begin state has the batch at axis 1, which must follow data's
    axis 0."""
    free = [(k, a) for k, d in enumerate(dims) for a in range(len(d))
            if not isinstance(d[a], int) and len(in_shapes[k]) > a]
    return free if any(a > 0 for _, a in free) else []


def _other_shapes(in_shapes, free, step):
    """``in_shapes`` with each free axis of size s at ``s + step`` (equal sizes stay
    equal, as inputs that share a sequence axis need)."""
    out = [list(s) for s in in_shapes]
    for k, a in free:
        out[k][a] = in_shapes[k][a] + step
    return [tuple(s) for s in out]


def _signature(g):
    """(nodes, initializers) of an ExportGraph, comparable across two conversions."""
    return list(g.nodes), {k: t.SerializeToString() for k, t in g.initializers.items()}


def _differs(node_a, node_b, inits_a, inits_b):
    if node_a.SerializeToString() != node_b.SerializeToString():
        return True
    return any(inits_a.get(x) != inits_b.get(x) for x in node_a.input if x)


def check_dynamic_axes(g, in_shapes, dims, names, convert):
    """Raise :class:`ExportError` when the export ``g`` (made for ``in_shapes``) folds a
    size that depends on a dynamic axis declared in ``dims`` (``dynamic_input_shapes``);
    ``convert(shapes)`` converts the graph again for other input shapes."""
    free = _free_axes(in_shapes, dims)
    if not free:
        return
    other, errors = None, []
    for step in (1, 2, 3):
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')     # the custom-domain warnings: given once
            try:
                other = convert(_other_shapes(in_shapes, free, step))
                break
            except (ShapeError, ValueError) as e:
                if isinstance(e, ExportError):
                    raise
                errors.append(e)
    axes = ', '.join('axis %d of %r' % (a, names[k]) for k, a in free)
    if other is None:
        raise ExportError('ONNX export: the graph does not accept other sizes of the '
                          'dynamic axes (%s, declared in dynamic_input_shapes): %s'
                          % (axes, errors[-1]))
    nodes_a, inits_a = _signature(g)
    nodes_b, inits_b = _signature(other)
    for node_a, node_b in zip(nodes_a, nodes_b):
        if _differs(node_a, node_b, inits_a, inits_b):
            break
    else:
        if len(nodes_a) == len(nodes_b):
            return
        node_a = (nodes_a + nodes_b)[min(len(nodes_a), len(nodes_b))]
    origin = g.origins.get(node_a.name)
    message = ('its ONNX form (node %r, %s) holds a size that depends on the dynamic axes '
               '(%s, declared in dynamic_input_shapes), so the model would not run at '
               'other sizes; export with the axis it depends on fixed'
               % (node_a.name, node_a.op_type, axes))
    if origin is None:
        raise ExportError('ONNX export: ' + message)
    g.error(origin, message)
