"""``Symbol.get_backend_symbol('MKLDNN')`` / ``('MKLDNN_QUANTIZE')``: MXNet 1.9.1's oneDNN
graph fusion, after src/operator/subgraph/mkldnn/ (mkldnn_conv_property.h,
mkldnn_fc_property.h, mkldnn_post_quantize_property.h, mkldnn_fc_post_quantize_property.h)
and the generic partitioner's naming (build_subgraph.cc).

* convolution property: a 2-D/3-D Convolution followed, each the only reader of the one
  before, by a BatchNorm, an ``elemwise_add`` (the residual sum) and an activation (relu,
  sigmoid, tanh, softrelu; relu only for MKLDNN_QUANTIZE; LeakyReLU leaky/gelu; ``clip`` from
  0) becomes ``sg_mkldnn_conv_[bn_][add_][act_]<k>``, a ``_sg_mkldnn_conv`` node holding
  them as its subgraph, whose inputs are Variables named after the entries they cut
  (``<output name><n>``, n counting repeats);
* fully connected property: FullyConnected and an activation after it (those of the
  convolution, elu, abs; square, sqrt and exp in float32) become
  ``sg_mkldnn_fully_connected_[eltwise_]<k>``;
* after quantization (MKLDNN_QUANTIZE on a quantized graph): a quantized
  ``_sg_mkldnn_conv`` or ``_contrib_quantized_elemwise_add`` takes over the calibrated
  range of the requantize node after it; a quantized ``_sg_mkldnn_fully_connected`` that of
  its requantize, or, when a dequantize follows, returns float32 (``enable_float_output``);
  and the calibrated layers feeding a quantized concat take one range (scale alignment).

MXNet's identity property drops a ``_copy`` or a training-mode Dropout after an operator
node; its transformer properties are not applied.
"""
from ...base import UnknownNameError
from ...graph import Node, topo_order
from ...graph.subgraph import GraphSubgraph
from ...symbol import Symbol
from ._graph import make_mx_node, mx_inputs, output_name

__all__ = ['backend_symbol', 'BACKENDS']

_FLOAT_ACTS = ('relu', 'sigmoid', 'tanh', 'softrelu')


def _consumers(order, heads):
    """id(node) -> the distinct nodes reading it (a head counts as one more reader)."""
    readers = {}
    for n in order:
        seen = set()
        for src, _ in n.inputs:
            if id(src) not in seen:
                seen.add(id(src))
                readers.setdefault(id(src), []).append(n)
    for n, _ in heads:
        readers.setdefault(id(n), []).append(None)
    return readers


def _act_ok(node, quantize, after_sum):
    name = node.op.name
    if name == 'Activation':
        return node.op.act_type == 'relu' if quantize else node.op.act_type in _FLOAT_ACTS
    if name == 'LeakyReLU':
        return node.op.act_type in ('leaky', 'gelu')
    if name == 'clip':
        return node.op.a_min == 0 and not (quantize and after_sum)
    return False


def _conv_chain(seed, readers, quantize, taken):
    """The nodes MXNet's SgMKLDNNConvSelector takes from Convolution ``seed`` (none that
    an earlier fused node took)."""
    chain, state = [seed], 'start'
    while True:
        nxt = readers.get(id(chain[-1]), [])
        if len(nxt) != 1 or nxt[0] is None or nxt[0].op is None or id(nxt[0]) in taken:
            return chain
        node = nxt[0]
        name = node.op.name
        if state == 'start' and name == 'BatchNorm' and node.inputs[0][0] is chain[-1]:
            chain.append(node)
            state = 'bn'
            continue
        if state in ('start', 'bn') and name == 'elemwise_add' and \
                node.inputs[0][0] is not node.inputs[1][0]:
            chain.append(node)
            state = 'sum'
            continue
        if _act_ok(node, quantize, state == 'sum'):
            chain.append(node)
        return chain


def _fc_chain(seed, readers, quantize, taken):
    nxt = readers.get(id(seed), [])
    if len(nxt) == 1 and nxt[0] is not None and nxt[0].op is not None and \
            id(nxt[0]) not in taken:
        node = nxt[0]
        if node.op.name == 'Activation' and _act_ok(node, quantize, False):
            return [seed, node]
        if node.op.name == 'LeakyReLU' and node.op.act_type in ('leaky', 'elu', 'gelu'):
            return [seed, node]
        if (not quantize and node.op.name in ('square', 'sqrt', 'exp')) or \
                node.op.name == 'abs' or (node.op.name == 'clip' and node.op.a_min == 0):
            return [seed, node]
    return [seed]


def _cut(chain, resolve):
    """(inner graph's last node, the outer input entries) of a chain: external entries
    become Variables ``<output name><n>`` in the partitioner's order; a residual sum whose
    first operand is external is turned round, that operand moved last (MXNet's
    ConnectSubgraphInputs)."""
    members = {id(n) for n in chain}
    entries, counts, var_of = [], {}, {}

    def visit(node):
        for j, (src, idx) in enumerate(node.inputs):
            if id(src) in members:
                visit(src)
            else:
                src, idx = resolve(src, idx)    # (earlier fused nodes stand in already)
                name = output_name(src, idx)
                counts[name] = counts.get(name, -1) + 1
                var_of[(id(node), j)] = Node(None, '%s%d' % (name, counts[name]), {}, ())
                entries.append((src, idx))
    visit(chain[-1])
    made = {}
    for node in chain:
        inputs = []
        for j, (src, idx) in enumerate(node.inputs):
            inputs.append((made[id(src)], idx) if id(src) in members
                          else (var_of[(id(node), j)], 0))
        if node.op.name == 'elemwise_add' and id(node.inputs[1][0]) in members:
            inputs = inputs[::-1]
            entries = entries[1:] + entries[:1]
        made[id(node)] = Node(node.op, node.name, node.attrs, inputs, node.location)
    return made[id(chain[-1])], entries


def _conv_node(chain, k, resolve):
    last, entries = _cut(chain, resolve)
    parts, attrs, with_sum = [], {}, False
    for n in topo_order([last]):
        if n.op is None:
            continue
        name = n.op.name
        if name == 'Convolution':
            parts.append('conv_')
        elif name == 'BatchNorm':
            parts.append('bn_')
            attrs['with_bn'] = 'true'
        elif name == 'elemwise_add':
            parts.append('add_')
            attrs['with_sum'] = 'true'
            with_sum = True
        else:
            parts.append('act_')
            attrs['with_postsum_act' if with_sum else 'with_act'] = 'true'
    name = 'sg_mkldnn_%s%d' % (''.join(parts), k)
    return make_mx_node('_sg_mkldnn_conv', name, attrs, entries,
                        [GraphSubgraph([(last, 0)])])


def _fc_node(chain, k, resolve):
    last, entries = _cut(chain, resolve)
    attrs = {'with_eltwise': 'True'} if len(chain) > 1 else {}
    name = 'sg_mkldnn_fully_connected_%s%d' % ('eltwise_' if len(chain) > 1 else '', k)
    return make_mx_node('_sg_mkldnn_fully_connected', name, attrs, entries,
                        [GraphSubgraph([(last, 0)])])


def _resolve(replace, src, idx):
    while id(src) in replace:
        src, idx = replace[id(src)](idx)
    return src, idx


def _rewire(heads, replace):
    """The graph with entries read from replaced nodes redirected (``replace``: id(node) ->
    function(output index) -> the entry now read), every operator node rebuilt."""
    def resolve(src, idx):
        while id(src) in replace:
            src, idx = replace[id(src)](idx)
        return src, idx

    heads = [resolve(n, i) for n, i in heads]
    made = {}
    for n in topo_order([n for n, _ in heads], lambda m: [resolve(s, i) for s, i in m.inputs]):
        if n.op is None:
            made[id(n)] = n
            continue
        ins = [resolve(s, i) for s, i in n.inputs]
        made[id(n)] = Node(n.op, n.name, n.attrs, [(made[id(s)], i) for s, i in ins],
                           n.location)
    return [(made[id(n)], i) for n, i in heads]


def _partition(heads, seed_op, chain_of, node_of, quantize):
    order = topo_order([n for n, _ in heads])
    readers = _consumers(order, heads)
    taken, replace, k = set(), {}, 0
    for node in order:
        if node.op is None or node.op.name != seed_op or id(node) in taken:
            continue
        if seed_op == 'Convolution' and len(node.op.kernel) not in (2, 3):
            continue
        chain = chain_of(node, readers, quantize, taken)
        new = node_of(chain, k, lambda src, idx: _resolve(replace, src, idx))
        k += 1
        taken.update(id(n) for n in chain)
        replace[id(chain[-1])] = (lambda new: lambda idx: (new, 0))(new)
    if not replace:
        return heads
    return _rewire(heads, replace)


def _post_quantize(heads):
    """Requantize (and, after a fully connected layer, dequantize) nodes folded into the
    quantized node before them."""
    order = topo_order([n for n, _ in heads])
    readers = _consumers(order, heads)
    replace = {}
    for node in order:
        if node.op is None:
            continue
        name = node.op.name
        fc = name == '_sg_mkldnn_fully_connected' and node.op.quantized
        if not (fc or name == '_contrib_quantized_elemwise_add' or
                (name == '_sg_mkldnn_conv' and node.op.quantized)):
            continue
        nxt = readers.get(id(node), [])
        if len(nxt) != 1 or nxt[0] is None or nxt[0].op is None or \
                nxt[0].op.name != '_contrib_requantize' or \
                nxt[0].op.min_calib_range is None or nxt[0].op.max_calib_range is None:
            continue
        req = nxt[0]
        attrs = dict(node.attrs)
        after = readers.get(id(req), [])
        deq = None
        if fc and len(after) == 1 and after[0] is not None and after[0].op is not None \
                and after[0].op.name == '_contrib_dequantize':
            deq = after[0]
            attrs['enable_float_output'] = 'True'
        else:
            attrs['min_calib_range'] = req.attrs['min_calib_range']
            attrs['max_calib_range'] = req.attrs['max_calib_range']
        fused = make_mx_node(name, node.name, attrs, mx_inputs(node), node.op.subgraphs)
        replace[id(req)] = (lambda f: lambda idx: (f, idx))(fused)
        if deq is not None:
            replace[id(deq)] = (lambda f: lambda idx: (f, 0))(fused)
    if not replace:
        return heads
    return _rewire(heads, replace)


def _remove_identities(heads):
    """MXNet's identity property: a ``_copy``, or a Dropout in training mode (inference
    does nothing), read only from an operator node that nothing else reads, is dropped:
    its readers read that node."""
    order = topo_order([n for n, _ in heads])
    readers = _consumers(order, heads)
    replace = {}
    for node in order:
        if node.op is None or not (node.op.name == '_copy' or (
                node.op.name == 'Dropout' and node.op.mode == 'training')):
            continue
        src, idx = node.inputs[0]
        if src.op is None or len(readers.get(id(src), [])) != 1:
            continue
        replace[id(node)] = (lambda e: lambda i: e)((src, idx))
    return _rewire(heads, replace) if replace else heads


_ALIGN_THROUGH = ('_contrib_quantized_concat', '_contrib_quantized_pooling')


def _align_scales(heads):
    """MXNet's scale alignment: the calibrated layers feeding a quantized concat (through
    other quantized concats and poolings), each read by those alone, take one range, the
    union of theirs, so that the concat needs no rescaling."""
    order = topo_order([n for n, _ in heads])
    readers = _consumers(order, heads)
    replace = {}
    for head in order:
        if head.op is None or head.op.name != '_contrib_quantized_concat':
            continue
        visit, matched, queue = {id(head)}, [], [head]
        select_output = len(readers.get(id(head), [])) <= 1
        while queue:
            node = queue.pop(0)
            for src, _ in node.inputs:
                if src.op is None or id(src) in visit or any(src is m for m in matched):
                    continue
                if any(r is None or id(r) not in visit for r in readers.get(id(src), [])):
                    continue
                if 'min_calib_range' in src.attrs and 'max_calib_range' in src.attrs:
                    matched.append(src)
                elif src.op.name in _ALIGN_THROUGH:
                    visit.add(id(src))
                    queue.append(src)
            if select_output:
                for r in readers.get(id(node), []):
                    if r is not None and r.op is not None and id(r) not in visit and \
                            r.op.name in _ALIGN_THROUGH:
                        visit.add(id(r))
                        queue.append(r)
        if len(matched) < 2:
            continue
        lo = min(float(m.attrs['min_calib_range']) for m in matched)
        hi = max(float(m.attrs['max_calib_range']) for m in matched)
        for m in matched:
            attrs = dict(m.attrs, min_calib_range='%f' % lo, max_calib_range='%f' % hi)
            new = make_mx_node(m.op.name, m.name, attrs, mx_inputs(m), m.op.subgraphs)
            replace[id(m)] = (lambda f: lambda idx: (f, idx))(new)
    return _rewire(heads, replace) if replace else heads


def backend_symbol(sym, backend):
    """``sym`` rewritten by MXNet's ``backend`` subgraph properties ('MKLDNN' or
    'MKLDNN_QUANTIZE')."""
    if backend not in BACKENDS:
        raise UnknownNameError('get_backend_symbol: unknown backend %r; symgraph has %s'
                               % (backend, ', '.join(sorted(BACKENDS))))
    quantize = backend == 'MKLDNN_QUANTIZE'
    heads = _remove_identities(list(sym.output_entries))
    heads = _partition(heads, 'Convolution', _conv_chain, _conv_node, quantize)
    heads = _partition(heads, 'FullyConnected', _fc_chain, _fc_node, quantize)
    if quantize:
        heads = _align_scales(_post_quantize(heads))
    return Symbol(heads)


BACKENDS = ('MKLDNN', 'MKLDNN_QUANTIZE')
