"""The converter registry of the ONNX exporter and the error it raises.

A converter turns one symgraph node into ONNX nodes. It is registered for one or more
MXNet operator names::

    from ._registry import converter

    @converter('relu', 'sigmoid')
    def _unary(g, node):
        x, = g.inputs(node)
        g.add(node.op.name.capitalize(), [x], g.outputs(node))

``g`` is the export graph (:class:`symgraph.onnx.export.ExportGraph`); what a converter
may ask of it:

``g.inputs(node)``
    the ONNX tensor names of the node's inputs (arguments then auxiliary states, in
    MXNet's input order);
``g.outputs(node)``
    the ONNX names the converter must produce for the node's outputs (all of them,
    hidden ones too);
``g.in_shape(node, i)``, ``g.out_shape(node, i)``
    tuples of ints, inferred by symgraph for the export's input shapes (with
    ``g.dynamic`` the batch axis is the size given for the export: build anything that
    depends on it from ``Shape`` where it must stay symbolic);
``g.in_dtype(node, i)``, ``g.out_dtype(node, i)``
    NumPy dtypes;
``g.attr(node, key, default=None)``
    the operator's parsed parameter (a tuple for ``kernel``, a bool for ``fix_gamma``);
    ``node.op.name`` and ``node.attrs`` (raw strings) are there too;
``g.add(op_type, inputs, outputs=1, name=None, domain='', **attrs)``
    adds an ONNX node and returns the list of its output names (``outputs``: a count of
    fresh names, or a list of names); ``attrs`` become ONNX attributes (ints, floats,
    strings, lists of them, NumPy arrays as tensors, ``onnx.GraphProto`` for Loop/If);
    an input name ``''`` is an omitted optional input;
``g.const(value, dtype=None, name=None)``
    the name of an initializer holding ``value`` (array, scalar or list; Python floats
    become float32 and Python ints int64 unless ``dtype`` says otherwise);
``g.param(name)``
    the NumPy value of an argument or auxiliary state given in the export's params, or
    None (for folding: ``fix_gamma``, shapes);
``g.fresh(hint)``
    a tensor name not used yet; ``g.opset``: the opset (int); ``g.dynamic``: whether the
    batch axis is symbolic;
``g.error(node, message)``
    raises :class:`ExportError` naming the node, its operator and where it was created.
``g.subgraph(symbol, inputs, outputs)``
    exports a :class:`~symgraph.symbol.Symbol` (a control-flow body) as an
    ``onnx.GraphProto``: ``inputs`` is a list of ``(variable name, shape, dtype)``
    giving the body's inputs in the order the ONNX graph takes them, ``outputs`` the ONNX
    names of the body's outputs, in order (``None``: fresh names). Names from the outer
    graph may be read inside (ONNX's outer scope).

Custom operators (``Custom`` nodes) look up :data:`CUSTOM_EXPORTERS` by their
``op_type``; see :func:`register_custom_exporter`.
"""
from ..base import SymgraphError

__all__ = ['CONVERTERS', 'CUSTOM_EXPORTERS', 'ExportError', 'converter',
           'register_custom_exporter']

#: MXNet operator name -> ``fn(g, node)``
CONVERTERS = {}
#: Custom operator ``op_type`` -> ``fn(g, node)`` (node.attrs holds the op's kwargs)
CUSTOM_EXPORTERS = {}


class ExportError(SymgraphError, NotImplementedError):
    """An operator or a parameter the ONNX export cannot express (it names the node, its
    operator and the file:line where the node was created)."""


def converter(*op_names):
    """Decorator registering ``fn(g, node)`` as the converter of each MXNet operator name.
    A second registration of one name is an error (two files would fight over it)."""
    if not op_names or not all(isinstance(n, str) and n for n in op_names):
        raise TypeError('converter() takes one or more operator names, got %r' % (op_names,))

    def register(fn):
        for name in op_names:
            if name in CONVERTERS:
                raise ValueError('an ONNX converter for operator %r is registered already '
                                 '(%s.%s)' % (name, CONVERTERS[name].__module__,
                                              CONVERTERS[name].__name__))
            CONVERTERS[name] = fn
        return fn
    return register


def register_custom_exporter(op_type):
    """Decorator registering ``fn(g, node)`` as the ONNX exporter of the Custom operator
    registered (``mx.operator.register``) as ``op_type``; the node's ``attrs`` hold the
    kwargs (strings) the prop was made with. A second registration is an error.

    For example, for an op_type ``'square'`` computing ``x * x``::

        @mx.onnx.register_custom_exporter('square')
        def _square(g, node):
            x, = g.inputs(node)
            g.add('Mul', [x, x], g.outputs(node))
    """
    if not isinstance(op_type, str) or not op_type:
        raise TypeError('register_custom_exporter() takes the op_type string, got %r'
                        % (op_type,))

    def register(fn):
        if op_type in CUSTOM_EXPORTERS:
            raise ValueError('an ONNX exporter for Custom op_type %r is registered already'
                             % op_type)
        CUSTOM_EXPORTERS[op_type] = fn
        return fn
    return register
