"""``mx.onnx.export_model``: a symgraph (MXNet) graph to an ONNX file.

After MXNet 1.9.1's ``python/mxnet/onnx/mx2onnx/_export_model.py`` and ``_export_onnx.py``
for the signature, the input and output naming (a node's output 0 is named after the node,
output ``i`` ``name + str(i)``) and the handling of ``params``; unlike MXNet, every
tensor's shape and dtype comes from symgraph's own inference for the export's input
shapes, so converters can fold what MXNet needed shapes at run time for (Reshape's special
codes, ``fix_gamma``), and graph outputs keep the Symbol's order (MXNet sorts them by
name).

``onnx`` is imported only when an export runs.
"""
import importlib
import logging
import warnings

import numpy as np

from ..base import ArgumentError, ArgumentTypeError
from ..graph.infer import infer_shapes, infer_types
from ..ndarray import NDArray, load as _nd_load
from ..symbol import Symbol, load as _sym_load
from ._dynamic_axes import check_dynamic_axes
from ._registry import CONVERTERS, CUSTOM_EXPORTERS, ExportError

__all__ = ['export_model', 'ExportGraph', 'get_operator_support', 'MIN_OPSET', 'DEFAULT_OPSET']

_LOG = logging.getLogger(__name__)

#: the oldest ONNX opset the converters write
MIN_OPSET = 13
#: the opset written when none is asked for (capped by the installed onnx's newest):
#: ONNX Runtime (1.19 to 1.32) has no CPU kernel for RandomNormal, RandomUniform(Like),
#: Multinomial and GlobalLpPool at their opset-22 versions, so a newer default would
#: write models it cannot run (MXNet 1.9.1 stamps the newest, which breaks the same way)
DEFAULT_OPSET = 21
#: the ONNX domain of Custom operators that have no registered exporter
CUSTOM_DOMAIN = 'symgraph.custom'
#: loss operators whose inference forward ignores their label input
_LOSS_LABELS = {'SoftmaxOutput': 1, 'LinearRegressionOutput': 1, 'LogisticRegressionOutput': 1,
                'MAERegressionOutput': 1, 'SVMOutput': 1}


def _onnx():
    try:
        import onnx
        from onnx import helper, numpy_helper  # noqa: F401
    except ImportError:
        raise ImportError('the ONNX export needs the onnx package: pip install '
                          '"symgraph[onnx]" (or pip install onnx)') from None
    return onnx


#: the modules holding converters, imported at the first export
CONVERTER_MODULES = ('_convert_nn', '_convert_tensor', '_convert_math', '_convert_extra',
                     '_convert_detection',
                     '_convert_rnn', '_convert_control', '_convert_misc')


def _load_converters():
    """Import the converter modules (each registers itself on import; the list is
    :data:`CONVERTER_MODULES`); a module not there yet is skipped."""
    for mod in CONVERTER_MODULES:
        try:
            importlib.import_module('.' + mod, __package__)
        except ModuleNotFoundError as e:
            if e.name != __package__ + '.' + mod:
                raise


def get_operator_support(opset_version=None):
    """The sorted MXNet operator names the exporter converts (MXNet's function)."""
    _load_converters()
    return sorted(CONVERTERS)


def _numpy(v):
    if isinstance(v, NDArray):
        return v.asnumpy()
    return np.asarray(v)


class ExportGraph:
    """The ONNX graph being built, handed to each converter as ``g`` (its contract is in
    :mod:`symgraph.onnx._registry`)."""

    def __init__(self, order, shapes, dtypes, params, opset, dynamic, names=None,
                 parent=None):
        from onnx import helper, numpy_helper
        self._helper, self._numpy_helper = helper, numpy_helper
        self.opset = opset
        self.dynamic = dynamic
        self._params = params
        self._index = {id(n): k for k, n in enumerate(order)}
        self._shapes, self._dtypes = shapes, dtypes
        self._parent = parent
        root = self if parent is None else parent._root
        self._root = root
        if parent is None:
            self._used = set()
            self._node_names = set()
            self.initializers = {}      # name -> TensorProto
            self.domains = set()
            self.origins = {}           # ONNX node name -> the symgraph node it is from
        self.nodes = []
        self._names = {}                # (id(node), i) -> ONNX name
        self.current = None
        for n in order:
            if n.op is None:
                self._names[(id(n), 0)] = (names or {}).get(n.name) or n.name
                root._used.add(self._names[(id(n), 0)])
        for n in order:
            if n.op is not None:
                base = self._unique(n.name or n.op.name.lower())
                for i in range(n.num_outputs()):
                    self._names[(id(n), i)] = base if i == 0 else \
                        self._unique('%s%d' % (base, i))

    # ------------------------------------------------------------------ names
    def _unique(self, hint):
        used = self._root._used
        name, k = hint, 0
        while name in used:
            k += 1
            name = '%s_%d' % (hint, k)
        used.add(name)
        return name

    def fresh(self, hint):
        """A tensor name not used yet, built from ``hint``."""
        return self._unique(str(hint))

    def name_of(self, entry):
        """The ONNX name of an entry ``(node, index)``; a parameter's initializer is made
        when first named."""
        node, i = entry
        name = self._names[(id(node), i)]
        if node.op is None and node.name in self._params:
            root = self._root
            if name not in root.initializers:
                value = self._params[node.name]
                root.initializers[name] = self._numpy_helper.from_array(
                    np.ascontiguousarray(value), name)
        return name

    def inputs(self, node):
        """ONNX names of the node's inputs (arguments then auxiliary states)."""
        return [self.name_of(e) for e in node.inputs]

    def outputs(self, node):
        """ONNX names of all the node's outputs, hidden ones included."""
        return [self._names[(id(node), i)] for i in range(node.num_outputs())]

    # ------------------------------------------------------------------ facts
    def _key(self, entry):
        node, i = entry
        return (self._index[id(node)], i)

    def in_shape(self, node, i):
        return tuple(self._shapes[self._key(node.inputs[i])])

    def out_shape(self, node, i=0):
        return tuple(self._shapes[self._key((node, i))])

    def in_dtype(self, node, i):
        return np.dtype(self._dtypes[self._key(node.inputs[i])])

    def out_dtype(self, node, i=0):
        return np.dtype(self._dtypes[self._key((node, i))])

    def attr(self, node, key, default=None):
        """The operator's parsed parameter ``key`` (``default`` when it has none)."""
        params = type(node.op)._params
        if key in params:
            return getattr(node.op, key)
        return default

    def param(self, name):
        """The NumPy value of a parameter given to the export, or None."""
        return self._params.get(name)

    def param_of(self, node, i):
        """The NumPy value of the node's input ``i`` when it is a given parameter, or
        None."""
        src, _ = node.inputs[i]
        if src.op is None:
            return self._params.get(src.name)
        return None

    def error(self, node, message):
        """Raise :class:`ExportError` naming the node, its operator and where it was
        created."""
        raise ExportError('ONNX export: %s: %s' % (node.describe(), message))

    # ------------------------------------------------------------------ building
    def _attr_value(self, v):
        if isinstance(v, np.ndarray):
            return self._numpy_helper.from_array(v)
        if isinstance(v, np.generic):
            return v.item()
        if isinstance(v, tuple):
            return list(v)
        return v

    def add(self, op_type, inputs, outputs=1, name=None, domain='', **attrs):
        """Add an ONNX node; returns its output names (see the registry's docstring)."""
        hint = self.current.name if self.current is not None and self.current.name \
            else op_type.lower()
        if isinstance(outputs, int):
            outputs = [self.fresh('%s_%s' % (hint, op_type.lower())) for _ in range(outputs)]
        else:
            outputs = list(outputs)
        node_name = name or '%s_%s' % (hint, op_type.lower())
        names = self._root._node_names
        base, k = node_name, 0
        while node_name in names:
            k += 1
            node_name = '%s_%d' % (base, k)
        names.add(node_name)
        self._root.origins[node_name] = self.current
        attrs = {k: self._attr_value(v) for k, v in attrs.items() if v is not None}
        self.nodes.append(self._helper.make_node(op_type, list(inputs), outputs,
                                                 name=node_name, domain=domain or None,
                                                 **attrs))
        if domain:
            self._root.domains.add(domain)
        return outputs

    def const(self, value, dtype=None, name=None):
        """The name of an initializer holding ``value``."""
        if dtype is None:
            arr = np.asarray(value)
            if arr.dtype == np.float64 and not isinstance(value, np.ndarray):
                arr = arr.astype(np.float32)
        else:
            arr = np.asarray(value, dtype=dtype)
        name = self.fresh(name or 'const')
        self._root.initializers[name] = self._numpy_helper.from_array(
            np.ascontiguousarray(arr), name)
        return name

    def subgraph(self, symbol, inputs, outputs=None, outer=None):
        """Export ``symbol`` (a control-flow body) as an ``onnx.GraphProto``.

        ``inputs``: ``[(variable name, shape, dtype)]``, the body's graph inputs in order;
        ``outer``: ``{variable name: (ONNX name, shape, dtype)}`` for variables read
        from the enclosing graph; the symbol's other variables must be given params.
        ``outputs``: ONNX names for the body's outputs, or None for fresh ones.
        """
        helper = self._helper
        graph = symbol.graph()
        order = graph.order
        outer = dict(outer or {})
        known_s, known_t, names = {}, {}, {}
        given = {v: (s, t) for v, s, t in inputs}
        body_inputs = []
        for v, s, t in inputs:
            onnx_name = self.fresh(v)
            names[v] = onnx_name
            body_inputs.append(helper.make_tensor_value_info(
                onnx_name, helper.np_dtype_to_tensor_dtype(np.dtype(t)),
                None if s is None else list(s)))
        for n in order:
            if n.op is not None:
                continue
            if n.name in given:
                s, t = given[n.name]
            elif n.name in outer:
                names[n.name], s, t = outer[n.name]
            elif n.name in self._params:
                s, t = self._params[n.name].shape, self._params[n.name].dtype
            else:
                raise ExportError('ONNX export: the subgraph reads %r, which is neither an '
                                  'input, an outer value nor a parameter' % n.name)
            known_s[n], known_t[n] = s, t
        shapes, dtypes = infer_shapes(order, known_s), infer_types(order, known_t)
        sub = ExportGraph(order, shapes, dtypes, self._params, self.opset, self.dynamic,
                          names=names, parent=self)
        sub._convert_all(order)
        out_names = sub._finish_outputs(graph.outputs, outputs)
        index = sub._index
        outs = [helper.make_tensor_value_info(
            nm, helper.np_dtype_to_tensor_dtype(np.dtype(dtypes[(index[id(n)], i)])),
            list(shapes[(index[id(n)], i)]))
            for nm, (n, i) in zip(out_names, graph.outputs)]
        return helper.make_graph(sub.nodes, self.fresh('body'), body_inputs, outs)

    # ------------------------------------------------------------------ the walk
    def _convert_all(self, order):
        for node in order:
            if node.op is None:
                continue
            self.current = node
            self._convert(node)
        self.current = None

    def _convert(self, node):
        op_name = node.op.name
        if op_name == 'Custom':
            op_type = node.attrs.get('op_type') or self.attr(node, 'op_type')
            fn = CUSTOM_EXPORTERS.get(op_type)
            if fn is None:
                _custom_node(self, node, op_type)
                return
        else:
            fn = CONVERTERS.get(op_name)
            if fn is None:
                self.error(node, 'no ONNX converter for operator %s (mx.onnx.'
                                 'get_operator_support() lists the ones there are)' % op_name)
        fn(self, node)

    def _finish_outputs(self, entries, names=None):
        """The ONNX names of the graph outputs ``entries``: an Identity where an output
        is a graph input or an initializer, or repeats another output, or must take a
        given name."""
        seen, out = set(), []
        for k, (node, i) in enumerate(entries):
            name = self.name_of((node, i))
            want = names[k] if names else None
            if want is not None and want != name:
                self.add('Identity', [name], [want], name=want)
                name = want
            elif node.op is None or name in seen:
                name = self.add('Identity', [name], [self.fresh(name + '_output')])[0]
            seen.add(name)
            out.append(name)
        return out


def _custom_node(g, node, op_type):
    """A Custom operator without a registered exporter: one node in the custom domain."""
    warnings.warn('ONNX export: %s has no registered exporter '
                  '(mx.onnx.register_custom_exporter(%r)); it is written as a node of '
                  'domain %r, which ONNX Runtime can run only with a kernel registered for '
                  'it' % (node.describe(), op_type, CUSTOM_DOMAIN), stacklevel=4)
    kwargs = {k: v for k, v in node.attrs.items()
              if not (k.startswith('__') and k.endswith('__')) and k != 'op_type'}
    g.add(op_type, g.inputs(node), g.outputs(node), domain=CUSTOM_DOMAIN,
          **{str(k): str(v) for k, v in kwargs.items()})


# ---------------------------------------------------------------------- export_model
def _load_inputs(sym, params):
    """(Symbol, {name: numpy array}) from objects or file names (MXNet's forms)."""
    if isinstance(sym, str):
        sym = _sym_load(sym)
    if not isinstance(sym, Symbol):
        raise ArgumentTypeError('export_model: sym must be a Symbol or the path of a '
                                'symbol JSON file, got %s' % type(sym).__name__)
    if isinstance(params, str):
        path, params = params, _nd_load(params)
        if isinstance(params, list):
            # a graph without parameters is saved as an empty file (nd.load gives [])
            if params:
                raise ArgumentTypeError('export_model: %s holds unnamed arrays; a .params '
                                        'file of named (arg:/aux:) arrays is needed' % path)
            params = {}
    if isinstance(params, (list, tuple)):
        if len(params) != 2 or not all(isinstance(p, dict) for p in params):
            raise ArgumentTypeError('export_model: params as a list must be '
                                    '[arg_params, aux_params]')
        merged = {}
        merged.update(params[0])
        merged.update(params[1])
        params = merged
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise ArgumentTypeError('export_model: params must be a dict, a [arg_params, '
                                'aux_params] list or the path of a .params file, got %s'
                                % type(params).__name__)
    out = {}
    for k, v in params.items():
        if k.startswith(('arg:', 'aux:')):
            k = k[4:]
        out[k] = _numpy(v)
    return sym, out


def _tensor_type(dtype):
    from onnx import helper
    dtype = np.dtype(dtype)
    try:
        return helper.np_dtype_to_tensor_dtype(dtype)
    except (KeyError, ValueError):
        raise ArgumentError('export_model: ONNX has no tensor type for dtype %s'
                            % dtype) from None


def _data_inputs(graph, params, n_given):
    """The Variables the caller gives shapes for: those not in params, in
    ``list_inputs`` order; when fewer shapes are given, the label inputs of loss
    operators (which their inference forward ignores) are left out."""
    names = [n for n in graph.order if n.op is None and n.name not in params]
    if len(names) <= n_given:
        return names, []
    labels = set()
    for n in graph.order:
        k = _LOSS_LABELS.get(n.op.name) if n.op is not None else None
        if k is not None and len(n.inputs) > k and n.inputs[k][0].op is None:
            labels.add(id(n.inputs[k][0]))
    kept = [n for n in names if id(n) not in labels]
    return kept, [n for n in names if id(n) in labels]


def export_model(sym, params, in_shapes=None, in_types=np.float32,
                 onnx_file_path='model.onnx', verbose=False, dynamic=False,
                 dynamic_input_shapes=None, run_shape_inference=False, input_type=None,
                 input_shape=None, opset_version=None, verify=False):
    """Export a symbol and its parameters to an ONNX file (MXNet 1.9.1's function).

    Parameters
    ----------
    sym : Symbol or str
        The graph, or the path of its JSON file.
    params : dict, [arg_params, aux_params] or str
        The parameters (names with or without ``arg:``/``aux:``), or a ``.params`` path.
    in_shapes : list of tuple
        Shapes of the graph's inputs that are not in ``params``, in ``list_inputs`` order.
    in_types : dtype or list of dtypes
        Their dtypes (one for all, or one each).
    onnx_file_path : str
        Where to write the model.
    verbose : bool
        Log each node converted.
    dynamic : bool
        Leave the input and output dimensions symbolic (``dynamic_input_shapes``: the
        inputs' shapes with None where a dimension is free; default all free).
    run_shape_inference : bool
        Run ONNX's shape inference on the result (kept only where it succeeds).
    input_type, input_shape :
        MXNet's old names of ``in_types`` and ``in_shapes``.
    opset_version : int
        The ONNX opset (13 to the newest the installed ``onnx`` knows; default
        :data:`DEFAULT_OPSET`, 21, or onnx's newest if older).
    verify : bool
        Check the file (:func:`symgraph.onnx.check.verify`: ``onnx.checker``, then ONNX
        Runtime against symgraph's forward on seeded inputs); a mismatch raises
        :class:`~symgraph.onnx.check.OnnxMismatchError` with the table (the file is
        written first).

    Returns
    -------
    str
        ``onnx_file_path``.
    """
    model = export_onnx_model(sym, params, in_shapes, in_types, verbose=verbose,
                              dynamic=dynamic, dynamic_input_shapes=dynamic_input_shapes,
                              input_type=input_type, input_shape=input_shape,
                              opset_version=opset_version)
    if run_shape_inference:
        from onnx import shape_inference
        try:
            model = shape_inference.infer_shapes(model)
        except Exception as e:      # ONNX's own inference: keep the export as it is
            _LOG.info('ONNX shape inference failed (%s); the model is kept as exported', e)
    with open(onnx_file_path, 'wb') as f:
        f.write(model.SerializeToString())
    _LOG.info('Exported ONNX file %s (input shapes %s)', onnx_file_path, in_shapes)
    if verify:
        _verify(model, sym, params, in_shapes if input_shape is None else input_shape,
                in_types if input_type is None else input_type)
    return onnx_file_path


def _verify(model, sym, params, in_shapes, in_types):
    """``export_model(verify=True)``: check.verify over the data inputs the export took."""
    from .check import verify
    sym, params = _load_inputs(sym, params)
    in_shapes = [tuple(int(d) for d in s) for s in (in_shapes or [])]
    data, _ = _data_inputs(sym.graph(), params, len(in_shapes))
    if not isinstance(in_types, (list, tuple)):
        in_types = [in_types] * len(in_shapes)
    verify(model, sym, params, {n.name: s for n, s in zip(data, in_shapes)},
           {n.name: np.dtype(t) for n, t in zip(data, in_types)}).raise_if_mismatch()


def export_onnx_model(sym, params, in_shapes=None, in_types=np.float32, verbose=False,
                      dynamic=False, dynamic_input_shapes=None, input_type=None,
                      input_shape=None, opset_version=None):
    """:func:`export_model` without the file: returns the ``onnx.ModelProto``."""
    onnx = _onnx()
    from onnx import helper
    _load_converters()
    if input_type is not None:
        in_types = input_type
    if input_shape is not None:
        in_shapes = input_shape
    newest = onnx.defs.onnx_opset_version()
    opset = min(newest, DEFAULT_OPSET) if opset_version is None else int(opset_version)
    if not MIN_OPSET <= opset <= newest:
        raise ArgumentError('export_model: opset_version must be between %d and %d (the '
                            'newest the installed onnx %s knows), got %s'
                            % (MIN_OPSET, newest, onnx.__version__, opset_version))
    sym, params = _load_inputs(sym, params)
    graph = sym.graph()
    order = graph.order
    in_shapes = [] if in_shapes is None else [tuple(int(d) for d in s) for s in in_shapes]
    data, labels = _data_inputs(graph, params, len(in_shapes))
    if not isinstance(in_types, (list, tuple)):
        in_types = [in_types] * len(in_shapes)
    if len(in_types) != len(in_shapes):
        raise ArgumentError('export_model: %d in_types for %d in_shapes'
                            % (len(in_types), len(in_shapes)))
    if len(in_shapes) != len(data):
        raise ArgumentError('export_model: the graph has %d inputs that are not in params '
                            '(%s), got %d in_shapes'
                            % (len(data), ', '.join(n.name for n in data), len(in_shapes)))
    if dynamic_input_shapes is not None:
        if not dynamic:
            raise ArgumentError('export_model: dynamic_input_shapes needs dynamic=True')
        if len(dynamic_input_shapes) != len(in_shapes) or any(
                len(a) != len(b) for a, b in zip(dynamic_input_shapes, in_shapes)):
            raise ArgumentError('export_model: dynamic_input_shapes must give one shape '
                                'of the same rank for each of in_shapes')
    g, shapes, dtypes, index = _convert_graph(order, data, labels, in_shapes, in_types,
                                              params, opset, dynamic, verbose)
    if dynamic and dynamic_input_shapes is not None:
        # every converter may fold a shape: the export at other sizes of the declared
        # dynamic axes must write the same model, else the node that differs is named
        check_dynamic_axes(g, in_shapes, dynamic_input_shapes, [n.name for n in data],
                           lambda alt: _convert_graph(order, data, labels, alt, in_types,
                                                      params, opset, dynamic, False)[0])
    out_names = g._finish_outputs(graph.outputs)
    # graph inputs: the data Variables (MXNet's order), with their given or free dims
    dims = dynamic_input_shapes if dynamic_input_shapes is not None else \
        [[None] * len(s) for s in in_shapes]
    inputs = [helper.make_tensor_value_info(
        n.name, _tensor_type(t), list(d) if dynamic else list(s))
        for n, s, t, d in zip(data, in_shapes, in_types, dims)]
    outputs = []
    for name, (n, i) in zip(out_names, graph.outputs):
        key = (index[id(n)], i)
        shape = [None] * len(shapes[key]) if dynamic else list(shapes[key])
        outputs.append(helper.make_tensor_value_info(name, _tensor_type(dtypes[key]), shape))
    used = {x for node in _walk_nodes(g.nodes) for x in node.input} | set(out_names)
    inits = [t for k, t in g.initializers.items() if k in used]
    onnx_graph = helper.make_graph(g.nodes, 'mxnet_converted_model', inputs, outputs,
                                   initializer=inits)
    opsets = [helper.make_opsetid('', opset)] + [helper.make_opsetid(d, 1)
                                                 for d in sorted(g.domains)]
    model = helper.make_model(onnx_graph, opset_imports=opsets,
                              producer_name='symgraph')
    model.ir_version = helper.find_min_ir_version_for(opsets, ignore_unknown=True)
    return model


def _convert_graph(order, data, labels, in_shapes, in_types, params, opset, dynamic,
                   verbose):
    """Infer the graph's shapes and dtypes for ``in_shapes`` and convert every node:
    (ExportGraph, shapes, dtypes, node index)."""
    known_s, known_t = {}, {}
    for n, s, t in zip(data, in_shapes, in_types):
        known_s[n], known_t[n] = s, np.dtype(t)
    for n in order:
        if n.op is None and n.name in params:
            known_s[n], known_t[n] = params[n.name].shape, params[n.name].dtype
    shapes = infer_shapes(order, known_s)
    dtypes = infer_types(order, known_t)
    index = {id(n): k for k, n in enumerate(order)}
    skip = {id(m) for m in labels}
    for n in order:
        if id(n) in skip:
            continue
        for i in range(n.num_outputs()):
            key = (index[id(n)], i)
            if shapes.get(key) is None or dtypes.get(key) is None:
                raise ArgumentError('export_model: cannot infer the shape and dtype of '
                                    'output %d of %s from in_shapes %s'
                                    % (i, n.describe(), in_shapes))
    g = ExportGraph(order, shapes, dtypes, params, opset, bool(dynamic))
    for node in order:
        if node.op is None:
            continue
        if verbose:
            _LOG.info('Converting %s %s', node.op.name, node.name)
        g.current = node
        g._convert(node)
    g.current = None
    return g, shapes, dtypes, index


def _walk_nodes(nodes):
    """Every node, those in Loop/If bodies included (their outer-scope reads count)."""
    stack = list(nodes)
    while stack:
        node = stack.pop()
        yield node
        for a in node.attribute:
            if a.g is not None and a.HasField('g'):
                stack.extend(a.g.node)
            for sub in a.graphs:
                stack.extend(sub.node)
