"""ONNX files into symgraph graphs: ``import_model``, ``get_model_metadata``, ``import_to_gluon``.

After MXNet 1.9.1's ``python/mxnet/contrib/onnx/onnx2mx/`` (``import_model.py``,
``import_onnx.py``, ``import_to_gluon.py``): the same results (``(sym, arg_params,
aux_params)``, parameters named after the ONNX initializers, each symgraph node after its
ONNX node, the metadata lists), with three differences of method:

* every node whose inputs are all known constants (initializers, ``Constant`` nodes, the
  results of earlier folds) is evaluated once by ONNX's reference evaluator and becomes a
  constant itself; ``Shape`` and ``Size`` of a tensor whose shape is static (by ONNX's
  shape inference or by symgraph's) are constants too. So the shape arithmetic that
  PyTorch, tf2onnx and MXNet's own exporter write (``Shape -> Gather -> Concat ->
  Reshape``, the parameter slicing before an ``LSTM``) disappears from the graph;
* a scalar constant operand of an arithmetic node becomes a scalar operator
  (``x * 0.5``) instead of a parameter;
* the converters (``_import_ops.py``, ``_import_tensor.py``) follow the current ONNX
  operator definitions (attributes that became inputs in later opsets are read from
  either place), and cover the operators PyTorch's and tf2onnx's exports use besides
  MXNet's list.

``onnx`` is imported only when these functions run.
"""
from __future__ import annotations

import logging
import os

import numpy as np

from .. import symbol
from .. import ndarray as nd

_LOG = logging.getLogger(__name__)

#: ONNX operators never evaluated at import time (random draws)
_NO_FOLD = frozenset(('RandomUniform', 'RandomNormal', 'RandomUniformLike',
                      'RandomNormalLike', 'Multinomial', 'Bernoulli', 'Dropout'))
#: largest constant (elements) that folding may create
_FOLD_LIMIT = 1 << 24


def _onnx():
    try:
        import onnx
    except ImportError:
        raise ImportError('the onnx package is needed to import ONNX models: '
                          'pip install "symgraph[onnx]" (or pip install onnx)') from None
    return onnx


def _load(model_file):
    """The ModelProto of ``model_file`` (a path, or a ModelProto passed through)."""
    onnx = _onnx()
    if isinstance(model_file, onnx.ModelProto):
        return model_file
    if not isinstance(model_file, (str, os.PathLike)):
        raise TypeError('model_file must be the path of an ONNX file, got %s'
                        % type(model_file).__name__)
    if not os.path.isfile(model_file):
        raise FileNotFoundError('ONNX model file not found: %s' % model_file)
    return onnx.load_model(model_file)


def _np_dtype(elem_type):
    from onnx import helper
    return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type))


class ConvertContext:
    """What a converter sees of one ONNX node: its inputs as Symbols or constants, its
    attributes, the static shapes known for its tensors, names for the nodes it makes."""

    def __init__(self, importer, node, name):
        self.imp = importer
        self.node = node
        self.op_type = node.op_type
        self.name = name
        self.inputs = list(node.input)
        self.outputs = list(node.output)
        self.opset = importer.opset
        from onnx import TensorProto, helper, numpy_helper
        attrs = {}
        for a in node.attribute:
            v = helper.get_attribute_value(a)
            if isinstance(v, TensorProto):
                v = numpy_helper.to_array(v)
            elif isinstance(v, bytes):
                v = v.decode('utf-8')
            elif isinstance(v, list) and v and isinstance(v[0], bytes):
                v = [s.decode('utf-8') for s in v]
            attrs[a.name] = v
        self.attrs = attrs

    # -- inputs ---------------------------------------------------------------------
    def has(self, i):
        """Whether optional input ``i`` is given."""
        return i < len(self.inputs) and self.inputs[i] != ''

    def is_const(self, i):
        return self.has(i) and self.inputs[i] in self.imp.consts

    def const(self, i, default=None):
        """The constant value of input ``i`` (``default`` when the input is absent)."""
        if not self.has(i):
            return default
        name = self.inputs[i]
        if name not in self.imp.consts:
            raise self.error('input %d (%r) must be a constant (an initializer or a value '
                             'computable at import time); it depends on the graph inputs'
                             % (i, name), NotImplementedError)
        return self.imp.consts[name]

    def const_ints(self, i, attr=None, default=None):
        """Integer list from input ``i`` or, in older opsets, attribute ``attr``."""
        if self.has(i):
            return [int(v) for v in np.asarray(self.const(i)).reshape(-1)]
        if attr is not None and attr in self.attrs:
            return [int(v) for v in self.attrs[attr]]
        return default

    def sym(self, i):
        """Input ``i`` as a Symbol (a constant becomes a parameter Variable)."""
        return self.imp.symbol_of(self.inputs[i])

    def attr(self, key, default=None):
        return self.attrs.get(key, default)

    # -- shapes ---------------------------------------------------------------------
    def shape(self, i):
        """Static shape of input ``i``, or None."""
        return self.imp.static_shape(self.inputs[i])

    def rank(self, i):
        r = self.imp.rank(self.inputs[i])
        if r is None:
            raise self.error('the rank of input %r is unknown' % self.inputs[i])
        return r

    def need_shape(self, i):
        s = self.shape(i)
        if s is None:
            raise self.error('the shape of input %r must be static (give the graph inputs '
                             'fixed dimensions)' % self.inputs[i], NotImplementedError)
        return s

    def dtype(self, i):
        """NumPy dtype of input ``i`` where known (a constant, or ONNX's inference), else
        None."""
        name = self.inputs[i]
        if name in self.imp.consts:
            return self.imp.consts[name].dtype
        code = self.imp._dtypes.get(name)
        if code is None:
            return None
        from onnx import helper
        return np.dtype(helper.tensor_dtype_to_np_dtype(code))

    def out_shape(self, j=0):
        return self.imp.static_shape(self.outputs[j]) if j < len(self.outputs) else None

    # -- making nodes -----------------------------------------------------------------
    def sub(self, suffix):
        """Name for a helper node (automatic when the ONNX node has no name)."""
        return None if self.name is None else '%s_%s' % (self.name, suffix)

    def param(self, suffix, value):
        """A new parameter Variable holding ``value`` (a converted constant)."""
        base = self.name or (self.outputs[0] if self.outputs else self.op_type)
        return self.imp.new_param('%s_%s' % (base, suffix), np.asarray(value))

    def error(self, what, kind=ValueError):
        return kind('ONNX node %r (op_type %s) in %s: %s'
                    % (self.node.name, self.op_type, self.imp.source, what))


class OnnxImporter:
    """One import: ONNX tensors by name, each a Symbol or a NumPy constant."""

    def __init__(self, model, source='<model>'):
        from ._import_ops import CONVERTERS
        from ._import_tensor import TENSOR_CONVERTERS
        self._converters = dict(CONVERTERS, **TENSOR_CONVERTERS)
        self.model = model
        self.graph = model.graph
        self.source = source
        self.opset = max([o.version for o in model.opset_import
                          if o.domain in ('', 'ai.onnx')] or [1])
        self.consts = {}            # tensor name -> np.ndarray
        self.syms = {}              # tensor name -> single-output Symbol
        self.params = {}            # Variable name -> np.ndarray (args and aux alike)
        self._vars = {}             # constant name -> its Variable
        self._names = set()
        self._shapes = {}           # tensor name -> tuple (dims None where unknown)
        self._dtypes = {}           # tensor name -> ONNX elem_type, where ONNX inferred it
        self._input_shapes = {}     # static graph-input shapes, for symgraph inference

    # -- tensors ------------------------------------------------------------------
    def symbol_of(self, name):
        if name in self.syms:
            return self.syms[name]
        if name in self.consts:
            if name not in self._vars:
                value = self.consts[name]
                if value.ndim == 0:
                    value = value.reshape(1)
                self._vars[name] = self._variable(name, value)
            return self._vars[name]
        raise KeyError('ONNX tensor %r is used before it is produced (in %s)'
                       % (name, self.source))

    def _variable(self, name, value):
        self.params[name] = value
        kwargs = {'shape': value.shape}
        if value.dtype != np.float32:
            kwargs['dtype'] = value.dtype
        self._names.add(name)
        return symbol.Variable(name, **kwargs)

    def new_param(self, name, value):
        base, k = name, 0
        while name in self._names or name in self.consts or name in self.syms:
            k += 1
            name = '%s%d' % (base, k)
        return self._variable(name, value)

    def static_shape(self, name):
        if name in self.consts:
            return tuple(self.consts[name].shape)
        s = self._shapes.get(name)
        if s is not None and None not in s:
            return s
        if name in self.syms:
            sym = self.syms[name]
            shapes = self._arg_shapes(sym)
            if set(sym.list_inputs()) - set(shapes):
                return None         # an input of dynamic shape: not static
            try:
                _, out, _ = sym.infer_shape(**shapes)
            except Exception:       # noqa: BLE001 - any failure means "not static"
                out = None
            if out and out[0] and all(d > 0 for d in out[0]):
                self._shapes[name] = tuple(int(d) for d in out[0])
                return self._shapes[name]
        return None

    def rank(self, name):
        if name in self.consts:
            return self.consts[name].ndim
        s = self._shapes.get(name)
        if s is not None:
            return len(s)
        s = self.static_shape(name)
        return None if s is None else len(s)

    def _arg_shapes(self, sym):
        shapes = {}
        for arg in sym.list_inputs():
            if arg in self.params:
                shapes[arg] = self.params[arg].shape
            elif arg in self._input_shapes:
                shapes[arg] = self._input_shapes[arg]
        return shapes

    # -- the graph ------------------------------------------------------------------
    def _infer_onnx_shapes(self):
        from onnx import shape_inference
        try:
            inferred = shape_inference.infer_shapes(self.model, data_prop=True).graph
        except Exception as e:      # noqa: BLE001 - a model ONNX cannot infer still imports
            _LOG.info('ONNX shape inference failed on %s: %s', self.source, e)
            inferred = self.graph
        for vi in list(inferred.value_info) + list(inferred.input) + list(inferred.output) \
                + _body_value_infos(inferred):
            t = vi.type.tensor_type
            if t.elem_type:
                self._dtypes[vi.name] = t.elem_type
            if not t.HasField('shape'):
                continue
            self._shapes[vi.name] = tuple(d.dim_value if d.HasField('dim_value')
                                          and d.dim_value > 0 else None
                                          for d in t.shape.dim)

    def _unique(self, name):
        if not name:
            return None
        base, k = name, 0
        while name in self._names:
            k += 1
            name = '%s_%d' % (base, k)
        self._names.add(name)
        return name

    def run(self):
        from onnx import numpy_helper
        self._infer_onnx_shapes()
        for t in self.graph.initializer:
            if not t.name.strip():
                raise ValueError("an initializer of %s has no name" % self.source)
            self.consts[t.name] = numpy_helper.to_array(t)
        for i in self.graph.input:
            if i.name in self.consts:
                continue
            t = i.type.tensor_type
            kwargs = {}
            if t.elem_type and _np_dtype(t.elem_type) != np.float32:
                kwargs['dtype'] = _np_dtype(t.elem_type)
            self._names.add(i.name)
            self.syms[i.name] = symbol.Variable(i.name, **kwargs)
            dims = [d.dim_value for d in t.shape.dim]
            if t.HasField('shape') and all(d > 0 for d in dims):
                self._input_shapes[i.name] = tuple(dims)
        for node in self.graph.node:
            self._node(node)
        outs = []
        for o in self.graph.output:
            if o.name in self.syms:
                outs.append(self.syms[o.name])
            elif o.name in self.consts:
                outs.append(symbol.identity(self.symbol_of(o.name), name=o.name))
            else:
                raise KeyError('graph output %r of %s is produced by no node'
                               % (o.name, self.source))
        sym = outs[0] if len(outs) == 1 else symbol.Group(outs)
        return sym, self._split_params(sym)

    def _split_params(self, sym):
        args = {k: nd.array(self.params[k], dtype=self.params[k].dtype)
                for k in sym.list_arguments() if k in self.params}
        aux = {k: nd.array(self.params[k], dtype=self.params[k].dtype)
               for k in sym.list_auxiliary_states() if k in self.params}
        return args, aux

    def _node(self, node):
        if node.domain not in ('', 'ai.onnx'):
            raise NotImplementedError(
                'ONNX node %r (op_type %s, domain %s) in %s: no converter for operators of '
                'this domain' % (node.name, node.op_type, node.domain, self.source))
        if self._fold(node):
            return
        conv = self._converters.get(node.op_type)
        if conv is None:
            raise NotImplementedError(
                'ONNX node %r (op_type %s) in %s: symgraph has no converter for this ONNX '
                'operator' % (node.name, node.op_type, self.source))
        ctx = ConvertContext(self, node, self._unique(node.name.strip()))
        result = conv(ctx)
        if not isinstance(result, (list, tuple)):
            result = [result]
        for name, value in zip(node.output, result):
            if name == '' or value is None:
                continue
            if isinstance(value, np.ndarray):
                self.consts[name] = value
            else:
                self.syms[name] = value

    def _fold(self, node):
        """Evaluate ``node`` now when its inputs are constants; True when it was."""
        op = node.op_type
        if op in _NO_FOLD:
            return False
        if op in ('Shape', 'Size') and node.input[0] not in self.consts:
            shape = self.static_shape(node.input[0])
            if shape is None:
                return False
            if op == 'Size':
                self.consts[node.output[0]] = np.array(int(np.prod(shape)), np.int64)
                return True
            attrs = {a.name: a.i for a in node.attribute}
            start, end = attrs.get('start', 0), attrs.get('end', len(shape))
            self.consts[node.output[0]] = np.array(shape[start:end], np.int64)
            return True
        ins = [i for i in node.input if i]
        if any(i not in self.consts for i in ins) or any(
                a.type == a.GRAPH or a.type == a.GRAPHS for a in node.attribute):
            return False
        from onnx.reference import ReferenceEvaluator
        try:
            ev = ReferenceEvaluator(node, opsets={'': self.opset})
            outs = ev.run(None, {i: self.consts[i] for i in ins})
        except Exception as e:      # noqa: BLE001 - convert the node instead
            _LOG.info('could not fold ONNX node %r (%s): %s', node.name, op, e)
            return False
        if sum(np.asarray(o).size for o in outs) > _FOLD_LIMIT:
            return False
        for name, value in zip(node.output, outs):
            if name:
                self.consts[name] = np.asarray(value)
        return True

    def subgraph(self, graph, inputs=(), shapes=None):
        """The outputs of a control-flow body (an ``If`` branch, a ``Scan`` body) as
        Symbols: its graph inputs are ``inputs`` (Symbols, in order), its nodes see this
        graph's tensors; the parameters they make are this import's. ``shapes``: the
        inputs' shapes where they are not the body's declared ones (None: declared)."""
        from onnx import numpy_helper
        child = OnnxImporter.__new__(OnnxImporter)
        child.__dict__.update(self.__dict__)
        child.syms, child.consts = dict(self.syms), dict(self.consts)
        child._shapes = dict(self._shapes)
        child._input_shapes = dict(self._input_shapes)
        for k, (vi, sym) in enumerate(zip(graph.input, inputs)):
            child.syms[vi.name] = sym
            child.consts.pop(vi.name, None)
            t = vi.type.tensor_type
            shape = shapes[k] if shapes is not None and shapes[k] is not None else None
            if shape is None and t.HasField('shape'):     # the body's declared shapes
                shape = tuple(d.dim_value if d.dim_value > 0 else None for d in t.shape.dim)
            if shape is not None:
                child._shapes[vi.name] = shape
                # a body variable (a while_loop's loop variable): symgraph's inference
                # of the body's values needs its shape
                if None not in shape and sym.list_inputs() == [sym.name]:
                    child._input_shapes[sym.name] = shape
        for t in graph.initializer:
            child.consts[t.name] = numpy_helper.to_array(t)
        for node in graph.node:
            child._node(node)
        return [child.symbol_of(o.name) for o in graph.output]

    def metadata(self):
        """MXNet's ``get_graph_metadata``: input (name, shape, elem type), output (name,
        shape) lists, dimensions as ``dim_value`` (0 where symbolic)."""
        inits = set(t.name for t in self.graph.initializer)
        ins = []
        for g in self.graph.input:
            if g.name not in inits:
                t = g.type.tensor_type
                ins.append((g.name, tuple(d.dim_value for d in t.shape.dim), t.elem_type))
        outs = [(g.name, tuple(d.dim_value for d in g.type.tensor_type.shape.dim))
                for g in self.graph.output]
        return {'input_tensor_data': ins, 'output_tensor_data': outs}


def _body_value_infos(graph):
    """The value infos of every control-flow body nested in ``graph`` (ONNX names are
    unique across a model's scopes, so they key one table with the outer graph's)."""
    out = []
    for node in graph.node:
        for a in node.attribute:
            for body in ([a.g] if a.type == a.GRAPH else list(a.graphs)):
                out += list(body.value_info) + list(body.output) + _body_value_infos(body)
    return out


def _source(model_file):
    return model_file if isinstance(model_file, (str, os.PathLike)) else '<ModelProto>'


def import_model(model_file):
    """Imports an ONNX model file into a Symbol and its parameters.

    Parameters
    ----------
    model_file : str
        The ONNX file (a loaded ``onnx.ModelProto`` is accepted too).

    Returns
    -------
    sym : Symbol
        The graph; its inputs are the ONNX graph inputs that are not initializers.
    arg_params : dict of str to NDArray
        Parameters, named as the ONNX initializers (constants that conversion made, such
        as an LSTM's packed weights, are named after their node).
    aux_params : dict of str to NDArray
        Auxiliary states (BatchNormalization's mean and variance).

    Raises
    ------
    NotImplementedError
        For an ONNX operator without a converter, naming the node, its op_type and the file.

    Examples
    --------
    >>> sym, arg_params, aux_params = mx.onnx.import_model('model.onnx')  # doctest: +SKIP
    """
    model = _load(model_file)
    imp = OnnxImporter(model, _source(model_file))
    sym, (args, aux) = imp.run()
    return sym, args, aux


def get_model_metadata(model_file):
    """Names, shapes and types of an ONNX model's inputs and outputs, as MXNet gives them.

    Returns
    -------
    dict
        ``'input_tensor_data'``: a list of ``(name, shape, onnx elem_type)`` for the graph
        inputs that are not initializers; ``'output_tensor_data'``: ``(name, shape)`` for
        each output. Symbolic dimensions are 0.
    """
    model = _load(model_file)
    return OnnxImporter(model, _source(model_file)).metadata()


def import_to_gluon(model_file, ctx):
    """Imports an ONNX model into a Gluon ``SymbolBlock`` holding its parameters.

    Parameters
    ----------
    model_file : str
        The ONNX file.
    ctx : Context or list of Context
        Where the parameters live.
    """
    from ..gluon import SymbolBlock
    model = _load(model_file)
    imp = OnnxImporter(model, _source(model_file))
    sym, (args, aux) = imp.run()
    # inputs folded away (only their shape was read) are no inputs of the block
    used = set(sym.list_inputs())
    names = [d[0] for d in imp.metadata()['input_tensor_data'] if d[0] in used]
    net = SymbolBlock(outputs=sym, inputs=[symbol.var(n) for n in names])
    net_params = net.collect_params()
    for params in (args, aux):
        for name, value in params.items():
            if name in net_params:
                net_params[name].shape = value.shape
                net_params[name]._load_init(value, ctx=ctx)
    return net
