"""The graph rewrites of MXNet 1.9.1's int8 flow, after its C++ passes
src/operator/quantization/quantize_graph_pass.cc (``QuantizeGraph``,
``SetCalibTableToQuantizedGraph``) and the operator attributes they read (``FQuantizedOp``,
``FQuantizable``, ``FNeedRequantize``, ``FAvoidQuantizeInput``, ``FNeedCalibrateInput`` /
``Output``), as registered in MXNet's CPU build.

:func:`quantize_symbol` gives the same graph node for node as MXNet's ``MXQuantizeSymbol``:
a quantizable node becomes ``quantized_<name>``; a float input of it gets a
``<producer>[_<output>]_quantize`` (``_contrib_quantize_v2``) node, an offline parameter
three Variables ``<param>_quantize``, ``_min``, ``_max``; an int32 result gets
``requantize_<name>``; a float consumer of a quantized result gets ``<name>_dequantize``.
The rules of each float operator live in :data:`QUANTIZE_RULES`, a table keyed by MXNet's
operator name (as MXNet keeps them in per-operator attributes).
"""
from ... import opdef
from ...base import ArgumentError, ParameterError
from ...graph import Node, topo_order
from ...symbol import Symbol

__all__ = ['QUANTIZE_RULES', 'quantize_symbol', 'set_calib_table', 'Rule']

MUST, SUPPORT = 'must', 'support'


class Rule:
    """How MXNet quantizes one float operator.

    ``qop``: the quantized operator's name, or a function of the node's attributes giving
    it (None: the node stays float); ``kind``: MUST (FQuantizable kMust) or SUPPORT;
    ``requantize``: an int32 result gets a requantize node; ``float_inputs``: indices of
    inputs passed on as they are (FAvoidQuantizeInput); ``calib_output``: the quantized
    node itself takes a calibrated output range (FNeedCalibrateOutput); ``extra_attrs``:
    attributes the quantized node adds (``quantized``). Inputs are in MXNet's order
    (``Operator.mxnet_input_order``; a function ``float_inputs(node)`` may give them).
    """

    def __init__(self, qop, kind=SUPPORT, requantize=False, float_inputs=(),
                 calib_output=False, extra_attrs=None):
        self.qop, self.kind, self.requantize = qop, kind, requantize
        self.float_inputs, self.calib_output = float_inputs, calib_output
        self.extra_attrs = extra_attrs or {}

    def quantized_op(self, attrs):
        return self.qop(attrs) if callable(self.qop) else self.qop

    def float_input_set(self, node):
        """Indices (MXNet's input order) of the inputs passed on as they are."""
        f = self.float_inputs
        return set(f(node) if callable(f) else f)


def _if_attr(key, test, qop, default=None):
    return lambda attrs: qop if test(attrs.get(key, default)) else None


def _avoid(attrs, index, granularity, node=None):
    return False


#: float operator name -> :class:`Rule` (MXNet 1.9.1's CPU build)
QUANTIZE_RULES = {
    'Convolution': Rule('_contrib_quantized_conv', MUST, requantize=True),
    'FullyConnected': Rule('_contrib_quantized_fully_connected', MUST, requantize=True),
    'Pooling': Rule(_if_attr('pool_type', lambda v: v in ('max', 'avg'),
                             '_contrib_quantized_pooling', 'max')),
    'Activation': Rule(_if_attr('act_type', lambda v: v == 'relu', '_contrib_quantized_act')),
    'Flatten': Rule('_contrib_quantized_flatten'),
    'Concat': Rule(_if_attr('dim', lambda v: int(v) > 0, '_contrib_quantized_concat', '1')),
    'elemwise_add': Rule('_contrib_quantized_elemwise_add', requantize=True),
    'elemwise_mul': Rule('_contrib_quantized_elemwise_mul', requantize=True),
    'BatchNorm': Rule('_contrib_quantized_batch_norm', float_inputs=(1, 2, 3, 4),
                      calib_output=True),
    'Embedding': Rule('_contrib_quantized_embedding', float_inputs=(0,)),
}

#: MXNet operators whose outputs carry registered names (FListOutputNames): a quantize
#: node reading them is named ``<node>_<output name>_quantize``; others ``<node>_<i>_...``
NAMED_OUTPUTS = frozenset((
    'Activation', 'Pooling', 'BatchNorm', 'Dropout', 'Concat', 'LeakyReLU', 'Convolution',
    'FullyConnected', 'softmax', 'log_softmax', 'SliceChannel', 'LRN', 'UpSampling',
    'Deconvolution', 'elemwise_add', 'SoftmaxOutput', 'InstanceNorm', 'LayerNorm', 'RNN',
    '_sg_mkldnn_conv', '_sg_mkldnn_fully_connected', '_contrib_quantized_conv',
    '_contrib_quantized_fully_connected', '_contrib_quantized_pooling',
    '_contrib_quantized_act', '_contrib_quantized_flatten', '_contrib_quantized_concat',
    '_contrib_quantized_elemwise_add', '_contrib_quantized_batch_norm'))

_CALIB_INPUT = ('_contrib_quantize_v2', '_contrib_requantize')


def make_node(op_name, name, attrs, inputs, subgraphs=()):
    """A graph node of operator ``op_name`` with MXNet's string ``attrs`` (its parameters
    parsed from those of them the operator takes; all kept as the node's attributes)."""
    cls = opdef.get_op(op_name)
    params = {k: v for k, v in attrs.items() if k in cls._params}
    op = cls(**params)
    if subgraphs:
        op = op.with_subgraphs(subgraphs)
    return Node(op, name, attrs, inputs)


def _sg_conv_float_inputs(node):
    """MXNet's SgMKLDNNAvoidConvQuantizeInput: all but the data and the sum operand."""
    op = node.op
    n = 1 + (0 if op.layers['conv'].no_bias else 1) + (4 if op.with_bn else 0)
    return range(1, n + 1)


QUANTIZE_RULES['_sg_mkldnn_conv'] = Rule('_sg_mkldnn_conv', MUST, requantize=True,
                                         float_inputs=_sg_conv_float_inputs,
                                         extra_attrs={'quantized': 'true'})
QUANTIZE_RULES['_sg_mkldnn_fully_connected'] = Rule('_sg_mkldnn_fully_connected', MUST,
                                                    requantize=True,
                                                    extra_attrs={'quantized': 'True'})


def mx_inputs(node):
    """``node``'s inputs in MXNet's order."""
    order = node.op.mxnet_input_order() if node.op is not None else None
    return list(node.inputs) if order is None else [node.inputs[p] for p in order]


def make_mx_node(op_name, name, attrs, inputs, subgraphs=()):
    """:func:`make_node` with ``inputs`` in MXNet's order."""
    node = make_node(op_name, name, attrs, inputs, subgraphs)
    order = node.op.mxnet_input_order()
    if order is None:
        return node
    ours = [None] * len(inputs)
    for k, p in enumerate(order):
        ours[p] = inputs[k]
    return Node(node.op, name, attrs, ours)


def _op_name(node):
    return None if node.op is None else node.op.name


def _visible(node):
    return node.num_visible_outputs()


def output_name(node, index):
    """MXNet's common::GetOutputName of entry (node, index)."""
    if node.op is None:
        return node.name
    return node.output_names()[index]


def _quantize_suffix(node, index):
    if node.op is None:
        return ''
    if node.op.name in NAMED_OUTPUTS:
        return '_' + node.op.list_outputs()[index]
    return '_%d' % index


class _Pass:
    """One run of MXNet's QuantizeGraph over the float graph ``sym``."""

    def __init__(self, sym, excluded_nodes, excluded_ops, offline, qdtype, mode,
                 granularity, rules):
        self.sym, self.order = sym, topo_order([n for n, _ in sym.output_entries])
        self.excluded_nodes, self.excluded_ops = set(excluded_nodes), set(excluded_ops)
        self.offline, self.qdtype, self.mode = set(offline), qdtype, mode
        self.granularity, self.rules = granularity, rules
        self.quantized = {}     # id(float node) -> (Rule, quantized op name)

    # --- which nodes ----------------------------------------------------------------
    def _need(self, node):
        rule = self.rules.get(_op_name(node))
        if rule is None:
            return None
        qop = rule.quantized_op(node.attrs)
        if qop is None:
            return None
        if node.name in self.excluded_nodes or node.op.name in self.excluded_ops:
            return None
        for g in node.op.subgraphs:
            for inner in g.order:
                if inner.op is not None and inner.name in self.excluded_nodes:
                    return None
        self.quantized[id(node)] = (rule, qop)
        return rule.kind

    def mark(self):
        must, support, consumers = [], {}, {}
        for node in self.order:
            kind = self._need(node)
            if kind == MUST:
                must.append(node)
            elif kind == SUPPORT:
                support[id(node)] = 0
            for src, _ in node.inputs:
                consumers.setdefault(id(src), []).append(node)
        if self.mode == 'full':
            return
        if self.mode != 'smart':
            raise ParameterError("quantize_mode must be 'full' or 'smart', got %r" % self.mode)
        queue = list(must)
        while queue:                    # from the inputs of every MUST node backwards
            node = queue.pop(0)
            for src, _ in node.inputs:
                if id(src) in support:
                    support[id(src)] |= 1
                    queue.append(src)
        queue = list(must)
        while queue:                    # and from its outputs forwards
            node = queue.pop(0)
            for out in consumers.get(id(node), ()):
                if id(out) in support:
                    support[id(out)] |= 2
                    queue.append(out)
        for k, bits in support.items():
            if bits != 3:
                del self.quantized[k]

    # --- the rewrite ----------------------------------------------------------------
    def run(self):
        self.mark()
        mirror = {}             # id(float node) -> its node in the new graph
        self.reverse = {}       # id(new node) -> float node
        quantize_of = {}        # (id(float node), index) -> the quantize node of that entry
        quantize_name = self.qdtype
        for node in self.order:
            if id(node) in self.quantized:
                rule, qop = self.quantized[id(node)]
                qname = 'quantized_' + node.name
                data_in, range_in = [], []
                floats = rule.float_input_set(node)
                node_inputs = mx_inputs(node)
                for i, (src, idx) in enumerate(node_inputs):
                    m = mirror[id(src)]
                    if i in floats:
                        data_in.append((m, idx))
                    elif id(src) not in self.quantized:
                        key = (id(src), idx)
                        if key not in quantize_of:
                            q = make_node('_contrib_quantize_v2', '%s%s_quantize' % (
                                src.name, _quantize_suffix(m, idx)),
                                {'out_type': quantize_name}, [(m, idx)])
                            quantize_of[key] = q
                        data_in.append((quantize_of[key], 0))
                    elif _op_name(m) == '_contrib_dequantize':
                        data_in.append((m.inputs[0][0], idx))
                    else:
                        data_in.append((m, idx))
                for i, (src, idx) in enumerate(node_inputs):
                    if i in floats:
                        continue
                    m = mirror[id(src)]
                    if _op_name(m) == '_contrib_dequantize':
                        m = m.inputs[0][0]
                    if id(src) in self.quantized:
                        n_out = _visible(m) - 2
                        lo, hi = n_out + 2 * idx, n_out + 2 * idx + 1
                    else:
                        lo, hi = 1, 2
                    if (id(src), idx) in quantize_of:
                        m = quantize_of[(id(src), idx)]
                    range_in += [(m, lo), (m, hi)]
                attrs = dict(node.attrs)
                attrs.update(rule.extra_attrs)
                new = make_mx_node(qop, qname, attrs, data_in + range_in, node.op.subgraphs)
                if rule.requantize:
                    self.reverse[id(new)] = node
                    new = make_node('_contrib_requantize', 'requantize_' + node.name,
                                    {'out_type': quantize_name}, [(new, i) for i in range(3)])
            else:
                inputs = []
                for src, idx in node.inputs:
                    m = mirror[id(src)]
                    if id(src) in self.quantized and _op_name(m) != '_contrib_dequantize':
                        n_out = _visible(m) - 2
                        deq = make_node('_contrib_dequantize', src.name + '_dequantize', {},
                                        [(m, idx), (m, n_out + 2 * idx),
                                         (m, n_out + 2 * idx + 1)])
                        inputs.append((deq, 0))
                        mirror[id(src)] = deq
                        self.reverse[id(deq)] = src
                    elif (id(src), idx) in quantize_of:
                        inputs.append((quantize_of[(id(src), idx)].inputs[0][0], idx))
                    else:
                        inputs.append((m, idx))
                if node.op is None:
                    new = node
                else:
                    new = Node(node.op, node.name, node.attrs, inputs, node.location)
            mirror[id(node)] = new
            self.reverse[id(new)] = node
        outputs = []
        for node, idx in self.sym.output_entries:
            m = mirror[id(node)]
            if id(node) in self.quantized:
                n_out = node.num_visible_outputs()
                deq = make_node('_contrib_dequantize', node.name + '_dequantize', {},
                                [(m, idx), (m, n_out + 2 * idx), (m, n_out + 2 * idx + 1)])
                outputs.append((deq, 0))
            else:
                outputs.append((m, idx))
        if self.offline:
            outputs = self._offline_params(outputs)
        return Symbol(outputs), self._calib_nodes(outputs)

    def _offline_params(self, outputs):
        """Quantize nodes of offline parameters become Variables ``<param>_quantize``,
        ``_min``, ``_max`` (MXNet's OfflineParams), copying every node above them."""
        made, var = {}, {}

        def entry(src, idx):
            if _op_name(src) == '_contrib_quantize_v2' and src.inputs[0][0].op is None \
                    and src.inputs[0][0].name in self.offline:
                key = (id(src), idx)
                if key not in var:
                    var[key] = Node(None, src.name + ('', '_min', '_max')[idx], {}, ())
                return var[key], 0
            return rebuilt(src), idx

        def rebuilt(node):
            if node.op is None:
                return node
            if id(node) not in made:
                for n in topo_order([node]):
                    if n.op is not None and id(n) not in made:
                        new = Node(n.op, n.name, n.attrs, [entry(s, i) for s, i in n.inputs],
                                   n.location)
                        made[id(n)] = new
                        if id(n) in self.reverse:
                            self.reverse[id(new)] = self.reverse[id(n)]
            return made[id(node)]

        return [entry(n, i) for n, i in outputs]

    def _calib_nodes(self, outputs):
        names = []
        for node in topo_order([n for n, _ in outputs]):
            name = _op_name(node)
            rule = self.rules.get(self.reverse[id(node)].op.name) \
                if id(node) in self.reverse and self.reverse[id(node)].op is not None else None
            if name in _CALIB_INPUT:
                src, idx = node.inputs[0]
                if name == '_contrib_requantize':
                    names.append(output_name(self.reverse[id(node)], idx))
                elif src.op is None:
                    names.append(src.name)
                elif id(src) in self.reverse:
                    names.append(output_name(self.reverse[id(src)], idx))
                else:
                    raise ArgumentError("can't find the calibration node for " + node.name)
            elif rule is not None and rule.calib_output and name.startswith('_contrib_'):
                names.append(output_name(self.reverse[id(node)], 0))
        return names


def quantize_symbol(sym, excluded_symbols=(), excluded_operators=(), offline_params=(),
                    quantized_dtype='int8', quantize_mode='smart',
                    quantize_granularity='tensor-wise', rules=None):
    """``(quantized symbol, calibration layer names)`` as MXNet's ``_quantize_symbol``."""
    if quantize_granularity not in ('tensor-wise', 'channel-wise'):
        raise ParameterError("quantize_granularity must be 'tensor-wise' or 'channel-wise', "
                             'got %r' % (quantize_granularity,))
    p = _Pass(sym, excluded_symbols, excluded_operators, offline_params, quantized_dtype,
              quantize_mode, quantize_granularity, QUANTIZE_RULES if rules is None else rules)
    return p.run()


def _calib_str(v):
    """std::to_string of a float: six decimals."""
    return '%f' % float(v)


def set_calib_table(qsym, table, rules=None):
    """A copy of ``qsym`` whose quantize/requantize nodes (and quantized layers that
    calibrate their own output) carry ``min_calib_range``/``max_calib_range`` from
    ``table`` (output name -> (min, max)), MXNet's SetCalibTableToQuantizedGraph."""
    rules = QUANTIZE_RULES if rules is None else rules
    calib_out = {r.quantized_op({'pool_type': 'max', 'act_type': 'relu', 'dim': '1'})
                 for r in rules.values() if r.calib_output}
    made = {}

    def entry_name(src, idx):
        name = output_name(src, idx)
        return name[len('quantized_'):] if src.name.startswith('quantized_') else name

    for node in topo_order([n for n, _ in qsym.output_entries]):
        if node.op is None:
            made[id(node)] = node
            continue
        inputs = [(made[id(s)], i) for s, i in node.inputs]
        attrs = dict(node.attrs)
        key = None
        if node.op.name in _CALIB_INPUT:
            key = entry_name(*node.inputs[0])
        elif node.op.name in calib_out:
            key = entry_name(node, 0)
        if key is not None and key in table:
            lo, hi = table[key]
            attrs['min_calib_range'] = _calib_str(lo)
            attrs['max_calib_range'] = _calib_str(hi)
            made[id(node)] = make_node(node.op.name, node.name, attrs, inputs,
                                       node.op.subgraphs)
        else:
            made[id(node)] = Node(node.op, node.name, node.attrs, inputs, node.location)
    return Symbol([(made[id(n)], i) for n, i in qsym.output_entries])
