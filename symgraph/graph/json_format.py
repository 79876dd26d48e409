"""MXNet's symbol JSON format: writing, and reading files from MXNet 1.x (and 0.x)."""
from __future__ import annotations

import json
import re
import warnings
import weakref

from .. import opdef
from ..attribute import PLAIN_KEYS
from ..base import MXNetError
from .nodes import TYPE_CODE, Node, dtype_from_attr, parse_shape_attr, topo_order
from .subgraph import GraphSubgraph

__all__ = ['to_json', 'from_json', 'mxnet_output_count', 'MXNET_VERSION']

MXNET_VERSION = 10901


class SymbolFormatError(MXNetError, ValueError):
    """A symbol JSON file that is corrupt, truncated or not a symbol."""


_AMP_CASTS = ('amp_cast', 'amp_multicast')


def _skip_amp_casts(entry):
    """The entry an amp_cast / amp_multicast output stands for: its (matching) input."""
    node, i = entry
    while node.op is not None and node.op.name in _AMP_CASTS:
        node, i = node.inputs[0 if node.op.name == 'amp_cast' else i]
    return node, i


def to_json(heads, remove_amp_cast=False, np_shape=False):
    """MXNet JSON text of the graph whose outputs are ``heads`` ((node, index) pairs).

    ``remove_amp_cast``: as MXNet's ``RemoveAmpCast`` pass (what ``Symbol.tojson`` and
    ``save`` apply by default), every input fed by an ``amp_cast`` / ``amp_multicast``
    is fed by that cast's input instead; casts that are outputs of the graph stay.
    ``np_shape``: written under NumPy-shape semantics, which MXNet marks with the graph
    attribute ``is_np_shape`` (a 0 in a shape is then a zero size, not unknown).
    """
    doc = _graph_doc(heads, remove_amp_cast)
    doc['attrs'] = {'mxnet_version': ['int', MXNET_VERSION]}
    if np_shape:
        doc['attrs'] = {'is_np_shape': ['int', 1], 'mxnet_version': ['int', MXNET_VERSION]}
    out = []
    _write(out, doc, 0)
    return ''.join(out)


def _quote(text):
    """A JSON string as dmlc's ``JSONWriter::WriteString`` writes it: only ``\\r``, ``\\n``,
    ``\\t``, ``\\\\`` and ``\\"`` escaped, everything else (non-ASCII included) as is."""
    text = _ESCAPES.sub(lambda m: _ESCAPE[m.group()], text)
    # a lone surrogate (no MXNet string holds one: they are UTF-8 bytes) cannot be encoded
    # to a file: written as a JSON escape, which reads back the same
    return '"%s"' % _SURROGATES.sub(lambda m: '\\u%04x' % ord(m.group()), text)


_ESCAPE = {'\r': '\\r', '\n': '\\n', '\t': '\\t', '\\': '\\\\', '"': '\\"'}
_ESCAPES = re.compile('[\r\n\t\\\\"]')
_SURROGATES = re.compile('[\ud800-\udfff]')


def _write(out, value, depth, key=None):
    """Append ``value`` to ``out`` laid out byte for byte as MXNet writes a symbol (dmlc's
    ``JSONWriter`` through NNVM's ``SaveJSON``), so that a graph saved here and the same
    graph saved by MXNet are the same file (MXNet's ``fit.py`` asserts that equality).

    dmlc puts a container on several lines when it is a structure (a graph, a node), a
    map of more than one entry (``attrs``) or an array of more than ten elements or of
    structures; the others go on one line. Items are separated by ``", "`` and, on
    several lines, a newline and two spaces per open container; ``attrs`` keys are written
    sorted (it is a ``std::map``). (dmlc leaves keys unescaped; ours are escaped as values,
    the same text for every key MXNet itself can write.)
    """
    if isinstance(value, str):
        out.append(_quote(value))
    elif isinstance(value, bool) or not isinstance(value, (int, list, dict)):
        raise TypeError('symbol JSON: cannot write %r (%s)' % (value, type(value).__name__))
    elif isinstance(value, int):
        out.append(str(value))
    else:
        is_map = isinstance(value, dict)
        if is_map:
            multi = len(value) > 1 if key == 'attrs' else True
            items = sorted(value.items()) if key == 'attrs' else list(value.items())
        else:
            multi = len(value) > 10 or any(isinstance(v, dict) for v in value)
            items = value
        out.append('{' if is_map else '[')
        pad = '\n' + '  ' * (depth + 1)
        for k, item in enumerate(items):
            if k:
                out.append(', ')
            if multi:
                out.append(pad)
            if is_map:
                out.append(_quote(item[0]) + ': ')
                _write(out, item[1], depth + 1, item[0])
            else:
                _write(out, item, depth + 1)
        if multi and items:
            out.append('\n' + '  ' * depth)
        out.append('}' if is_map else ']')


def _pooling_hidden(op):
    # the MXNet wheel's oneDNN build gives max pooling that oneDNN runs (1-3 spatial axes,
    # channels-first) a hidden workspace output (pooling.cc's GetNumOutputs)
    return int(op.pool_type == 'max' and 1 <= len(op.kernel) <= 3
               and op.layout in (None, 'NCW', 'NCHW', 'NCDHW'))


#: node -> (its inputs as read from a file, their versions there): what MXNet writes back
_LOADED_VERSIONS = weakref.WeakKeyDictionary()

#: operators whose number of hidden outputs in MXNet 1.9.1 (counted by ``node_row_ptr``)
#: is not symgraph's: an int, or a function of the operator. symgraph's own hidden outputs
#: (the draws of the random image operators, RNN's reserve) are not MXNet's.
_MXNET_HIDDEN_OUTPUTS = {
    'Pooling': _pooling_hidden,
    '_linalg_det': 2,                   # the LU factors and the pivots
    '_linalg_slogdet': 2,
    '_contrib_BatchNormWithReLU': 3,    # mean, var and oneDNN's workspace
    'RNN': 0,
    '_image_random_brightness': 0, '_image_random_contrast': 0, '_image_random_hue': 0,
    '_image_random_saturation': 0, '_image_random_color_jitter': 0,
    '_image_random_flip_left_right': 0, '_image_random_flip_top_bottom': 0,
}


def mxnet_output_count(op):
    """Number of outputs MXNet 1.9.1 gives operator ``op``, hidden ones included (what a
    saved symbol's ``node_row_ptr`` counts)."""
    hidden = _MXNET_HIDDEN_OUTPUTS.get(op.name)
    if hidden is None:
        return op.output_count()
    return op.num_visible_outputs() + (hidden(op) if callable(hidden) else hidden)


def _graph_doc(heads, remove_amp_cast=False):
    """The JSON object of a graph (a control-flow node's ``subgraphs`` entries are such
    objects without the graph ``attrs``, as MXNet writes them)."""
    if remove_amp_cast:
        rewired = {}

        def inputs_of(n):
            if id(n) not in rewired:
                rewired[id(n)] = [_skip_amp_casts(e) for e in n.inputs]
            return rewired[id(n)]
    else:
        def inputs_of(n):
            return n.inputs
    plain = inputs_of

    def inputs_of(n):      # (in MXNet's order where the operator says it differs)
        order = n.op.mxnet_input_order() if n.op is not None else None
        ins = plain(n)
        return ins if order is None else [ins[p] for p in order]
    order = topo_order([n for n, _ in heads], inputs_of)
    index = {id(n): k for k, n in enumerate(order)}
    nodes, arg_nodes, row_ptr = [], [], [0]
    # a Variable's version counts the operators that updated it so far (NNVM's
    # UpdateNodeVersion): an auxiliary state (a mutated input: BatchNorm's moving_mean) is
    # read at version 1 by its first updater, 2 by a second one, and so on
    versions = {}
    for k, n in enumerate(order):
        d = {'op': 'null' if n.op is None else n.op.name, 'name': n.name}
        if n.attrs:
            d['attrs'] = dict(n.attrs)
        n_args = len(n.op.list_arguments()) if n.op is not None else 0
        inputs = inputs_of(n)
        loaded = _LOADED_VERSIONS.get(n)
        if loaded is not None and loaded[0] == tuple((id(s), i) for s, i in inputs):
            # as read from a file: MXNet writes back the versions it read
            entries = [[index[id(src)], i, v] for (src, i), v in zip(inputs, loaded[1])]
        else:
            entries = []
            perm = n.op.mxnet_input_order() if n.op is not None else None
            for j, (src, i) in enumerate(inputs):
                version = 0
                if src.op is None:
                    is_aux = (j if perm is None else perm[j]) >= n_args
                    version = versions.get(id(src), 0) + is_aux
                    versions[id(src)] = version
                entries.append([index[id(src)], i, version])
        d['inputs'] = entries
        if n.op is not None and n.op.subgraphs:
            d['subgraphs'] = [_graph_doc(g.heads, remove_amp_cast) for g in n.op.subgraphs]
        nodes.append(d)
        if n.op is None:
            arg_nodes.append(k)
        row_ptr.append(row_ptr[-1] + (1 if n.op is None else mxnet_output_count(n.op)))
    return {'nodes': nodes, 'arg_nodes': arg_nodes, 'node_row_ptr': row_ptr,
            'heads': [[index[id(n)], i, 0] for n, i in heads]}


def _fail(source, msg):
    raise SymbolFormatError('%s: %s' % (source, msg))


def _split_attrs(cls, attrs, where):
    """Operator parameters and other (string) attributes of a node read from JSON."""
    params = {}
    free = cls.free_params
    for k, v in attrs.items():
        if k in cls._params or (free and not (k.startswith('__') and k.endswith('__'))
                                and k not in PLAIN_KEYS):
            params[k] = v
        elif (k.startswith('__') and k.endswith('__')) or k in PLAIN_KEYS or not cls._params:
            continue        # an operator without parameters keeps others as attributes (MXNet)
        else:
            raise SymbolFormatError('%s: unknown parameter %r of operator %s; valid '
                                    'parameters are %s' % (where, k, cls.name,
                                                           sorted(cls._params)))
    return params


# --- reading the file's structure -------------------------------------------------------

def _is_int(x):
    return isinstance(x, int) and not isinstance(x, bool)


class _Rec:
    """A node as the file gives it, before the legacy upgrade passes.

    ``inputs`` are ``[record, output index]`` pairs, so an upgrade pass can add a Variable
    that is in no list; ``cls`` is the operator class, None for a Variable.
    """

    __slots__ = ('index', 'name', 'cls', 'attrs', 'inputs', 'loc', 'subgraphs', 'versions')

    def __init__(self, index, name, cls, attrs, inputs, loc, subgraphs=None, versions=None):
        self.index, self.name, self.cls = index, name, cls
        self.attrs, self.inputs, self.loc = attrs, inputs, loc
        self.subgraphs = subgraphs
        # {id(input pair): the version the file gives it}; inputs an upgrade pass adds
        # are not in it (version 0)
        self.versions = versions or {}

    def where(self):
        return 'node %d (%s)' % (self.index, self.name)


def _entry(e, n_nodes):
    """``(node, output)`` of an ``[node, output(, version)]`` entry; None if malformed."""
    if not isinstance(e, list) or len(e) not in (2, 3) or not all(_is_int(x) for x in e) \
            or not 0 <= e[0] < n_nodes:
        return None
    return e[0], e[1]


def _read_nodes(doc, source):
    """Check the structure of ``doc['nodes']`` and return one :class:`_Rec` per node."""
    recs = []
    for k, d in enumerate(doc['nodes']):
        if not isinstance(d, dict) or 'op' not in d or 'name' not in d:
            _fail(source, 'node %d is malformed: %r' % (k, d))
        name, op_name = d['name'], d['op']
        if not isinstance(name, str):
            _fail(source, 'node %d: "name" must be a string, got %r' % (k, name))
        if not isinstance(op_name, str):
            _fail(source, 'node %d (%s): "op" must be a string, got %r' % (k, name, op_name))
        attrs = {}
        for key in ('attr', 'param', 'attrs'):       # 0.x used "param"/"attr"
            a = d.get(key) or {}
            if not isinstance(a, dict):
                _fail(source, 'node %d (%s): %r must be an object' % (k, name, key))
            attrs.update({str(x): str(y) for x, y in a.items()})
        _check_hidden(attrs, source, k, name)
        raw_inputs = d.get('inputs', [])
        if not isinstance(raw_inputs, list):
            _fail(source, 'node %d (%s): "inputs" must be a list, got %r'
                  % (k, name, raw_inputs))
        if op_name == 'null' and raw_inputs:
            _fail(source, 'node %d (%s) is a variable ("op": "null") but has inputs %r'
                  % (k, name, raw_inputs))
        inputs, versions = [], {}
        for e in raw_inputs:
            ent = _entry(e, k)
            if ent is None:
                _fail(source, 'node %d (%s) has a bad input entry %r (an input is [node, '
                              'output, version] of integers, and must refer to an earlier '
                              'node)' % (k, name, e))
            inputs.append([recs[ent[0]], ent[1]])
            versions[id(inputs[-1])] = e[2] if len(e) == 3 else 0
        cls = None
        if op_name != 'null':
            try:
                cls = opdef.get_op(op_name)
            except MXNetError:
                _fail(source, 'node %d (%s) uses operator %r, which is not registered'
                      % (k, name, op_name))
        subgraphs = d.get('subgraphs')
        if subgraphs is not None and (not isinstance(subgraphs, list) or not all(
                isinstance(g, dict) for g in subgraphs)):
            _fail(source, 'node %d (%s): "subgraphs" must be a list of graph objects'
                  % (k, name))
        recs.append(_Rec(k, name, cls, attrs, inputs, '%s:node %d' % (source, k), subgraphs,
                         versions))
    return recs


def _check_hidden(attrs, source, k, name):
    """``__shape__`` and ``__dtype__`` are read by inference long after the load: a corrupt
    value is reported now, as the file's error, not later as a parser's KeyError."""
    for key, parse in (('__shape__', parse_shape_attr), ('__dtype__', _known_dtype)):
        if key in attrs:
            try:
                parse(attrs[key])
            except (ValueError, TypeError, KeyError, OverflowError):
                _fail(source, 'node %d (%s): attribute %s=%r is not a valid %s'
                      % (k, name, key, attrs[key], key.strip('_')))


def _known_dtype(text):
    with warnings.catch_warnings():
        # NumPy warns about deprecated aliases ('a'); they name no MXNet type either
        warnings.simplefilter('ignore')
        dt = dtype_from_attr(text)
    if dt.name not in TYPE_CODE:
        raise ValueError(dt.name)


def _version(doc, source):
    """The ``mxnet_version`` a file was written by; files without one count as 0.8.0."""
    attrs = doc.get('attrs', {})
    if not isinstance(attrs, dict):
        _fail(source, 'graph "attrs" must be an object, got %r' % (attrs,))
    if 'mxnet_version' not in attrs:
        return 800
    v = attrs['mxnet_version']
    if not (isinstance(v, list) and len(v) == 2 and v[0] == 'int' and _is_int(v[1])):
        _fail(source, 'bad "mxnet_version" %r (expected ["int", <version>])' % (v,))
    return v[1]


# --- MXNet's upgrade of files from older versions (src/nnvm/legacy_json_util.cc) --------

#: Operators for which MXNet's 0.8 -> 0.9 upgrade creates the missing trailing inputs (those
#: with ``FListInputNames``); probed on MXNet 1.9.1 by tests/golden/make_json_legacy.py.
#: For the others MXNet leaves the node short (it fails later); here that is a load error.
_FILLS_MISSING_INPUTS = frozenset("""
BatchNorm BatchNorm_v1 BilinearSampler CTCLoss Concat Convolution Convolution_v1 Correlation
Crop Deconvolution Dropout Embedding FullyConnected GridGenerator GroupNorm
IdentityAttachKLSparseReg InstanceNorm L2Normalization LRN LayerNorm LeakyReLU
LinearRegressionOutput LogisticRegressionOutput MAERegressionOutput MakeLoss Pad Pooling
Pooling_v1 ROIPooling SVMOutput SequenceLast SequenceMask SequenceReverse SliceChannel
SoftmaxOutput SpatialTransformer SwapAxis UpSampling _contrib_BilinearResize2D
_contrib_MultiBoxDetection _contrib_MultiBoxPrior _contrib_MultiBoxTarget
_contrib_MultiProposal _contrib_Proposal _contrib_ROIAlign _contrib_SyncBatchNorm
_contrib_box_iou _contrib_index_copy _equal _grad_add _greater _greater_equal _hypot
_identity_with_attr_like_rhs _lesser _lesser_equal _linalg_det _linalg_extractdiag
_linalg_extracttrian _linalg_gemm _linalg_gemm2 _linalg_inverse _linalg_makediag
_linalg_maketrian _linalg_potrf _linalg_potri _linalg_slogdet _linalg_sumlogdiag
_linalg_syrk _linalg_trmm _linalg_trsm _logical_and _logical_or _logical_xor _maximum
_minimum _mod _not_equal _np_cumsum _power _sample_normal _sample_uniform
_scatter_elemwise_div _slice_assign add_n all_finite batch_dot batch_take broadcast_add
broadcast_div broadcast_equal broadcast_greater broadcast_greater_equal broadcast_hypot
broadcast_lesser broadcast_lesser_equal broadcast_like broadcast_logical_and
broadcast_logical_or broadcast_logical_xor broadcast_maximum broadcast_minimum broadcast_mod
broadcast_mul broadcast_not_equal broadcast_power broadcast_sub depth_to_space diag dot
elemwise_add elemwise_div elemwise_mul elemwise_sub gather_nd khatri_rao log_softmax moments
one_hot pick repeat reshape_like reverse scatter_nd slice_like softmax softmax_cross_entropy
space_to_depth squeeze stack take tile where
""".split())


def _make_op(rec, attrs, source):
    """The operator instance of an op record, parsed from ``attrs``."""
    params = _split_attrs(rec.cls, attrs, '%s: node %d (%r)' % (source, rec.index, rec.name))
    try:
        return rec.cls(**params)
    except (MXNetError, ValueError, TypeError, KeyError, OverflowError) as e:
        # a corrupt attribute value is a format error of the file, whatever its parser raised
        raise SymbolFormatError('%s: node %d (%r): %s' % (source, rec.index, rec.name, e)) \
            from None


def _input_names(op):
    return op.list_arguments() + op.list_auxiliary_states()


def _hidden_suffix(key):
    """Whether MXNet's upgrade sets ``key`` aside before parsing: it starts with one of the
    plain hidden keys (``lr_mult``...) or ends with one (``weight_lr_mult``)."""
    for h in PLAIN_KEYS:
        pos = key.rfind(h)
        if pos == 0 or (pos != -1 and pos == len(key) - len(h)):
            return True
    return False


def _upgrade_hidden_keys(rec, source):
    """Files before 1.9.1: ``lr_mult`` becomes ``__lr_mult__``, and an operator's
    ``<input>_lr_mult`` moves to that input's Variable as ``__lr_mult__`` (same for the
    other plain hidden keys); anything else is put back unchanged."""
    aside = {k: v for k, v in rec.attrs.items() if _hidden_suffix(k)}
    for k in aside:
        del rec.attrs[k]
    names = _input_names(_make_op(rec, rec.attrs, source)) if rec.cls is not None else []
    for key, value in aside.items():
        done = False
        for h in PLAIN_KEYS:
            pos = key.rfind(h)
            if pos == 0 and key == h:
                rec.attrs['__%s__' % h] = value
                done = True
                break
            if pos > 1 and pos == len(key) - len(h):
                # MXNet cuts one separator character, whatever it is
                arg = key[:pos - 1]
                if rec.cls is not None and arg in names:
                    i = names.index(arg)
                    if i < len(rec.inputs) and rec.inputs[i][0].cls is None:
                        rec.inputs[i][0].attrs['__%s__' % h] = value
                        done = True
                break
        if not done:
            rec.attrs[key] = value


def _add_missing_inputs(rec, op):
    """Files before 0.9 stored no auxiliary states: add ``<node>_<input>`` Variables for the
    missing trailing inputs, with a copy of the node's attributes."""
    if rec.cls.name not in _FILLS_MISSING_INPUTS:
        return
    names = _input_names(op)
    for an in names[len(rec.inputs):]:
        var_name = '%s_%s' % (rec.name, an) if rec.name else an
        rec.inputs.append([_Rec(rec.index, var_name, None, dict(rec.attrs), [], rec.loc), 0])


def _add_input_init(rec, op):
    """Files before 0.9.4: the initializer an operator gives its input Variables
    (BatchNorm's moving_mean ``["zero", {}]``), unless the Variable has one."""
    init = op.input_init()
    for an, (src, _) in zip(_input_names(op), rec.inputs):
        if an in init and src.cls is None and '__init__' not in src.attrs:
            src.attrs['__init__'] = init[an]


def _upgrade(recs, version, source):
    """MXNet's upgrade passes for files older than this format, in MXNet's order."""
    if version < MXNET_VERSION:
        for rec in recs:
            _upgrade_hidden_keys(rec, source)
    if version < 900:
        for rec in recs:
            if rec.cls is not None:
                _add_missing_inputs(rec, _make_op(rec, rec.attrs, source))
    if version < 904:
        for rec in recs:
            if rec.cls is not None:
                _add_input_init(rec, _make_op(rec, rec.attrs, source))
    if version < 905:
        for rec in recs:
            # int axis -1 meant "flatten" until optional<int> axis came in 0.9.5
            if rec.cls is not None and rec.cls.name in ('argmax', 'argmin') \
                    and rec.attrs.get('axis') == '-1':
                del rec.attrs['axis']


def _build(recs, source, version, warn_duplicates=True):
    """Frozen graph nodes from the (upgraded) records, in file order.

    MXNet writes (and binds by name) graphs in which different Variables share a name (a
    group of compositions, two layers given one name): they load, each later one standing
    for the first (``Node.same_as``), with a warning naming them unless
    ``warn_duplicates`` is false (our own copies)."""
    built = {}
    first_var = {}          # name -> the first Variable node of that name
    same_named = {}         # name -> file indices of its Variables, when more than one

    def node_of(rec):
        if id(rec) in built:
            return built[id(rec)]
        if rec.cls is None:
            first = first_var.get(rec.name)
            node = Node(None, rec.name, rec.attrs, (), rec.loc, same_as=first)
            if first is None:
                first_var[rec.name] = node
                same_named[rec.name] = [rec.index]
            else:
                same_named[rec.name].append(rec.index)
        else:
            op = _make_op(rec, rec.attrs, source)
            inputs = []
            for src, i in rec.inputs:
                src_node = node_of(src)
                if not 0 <= i < src_node.num_outputs():
                    _fail(source, '%s reads output %d of %r, which has %d outputs'
                          % (rec.where(), i, src.name, src_node.num_outputs()))
                inputs.append((src_node, i))
            if op.num_subgraphs or rec.subgraphs:
                if len(rec.subgraphs or ()) != op.num_subgraphs:
                    _fail(source, 'node %d (%s, operator %s) has %d subgraphs but the '
                          'operator holds %d' % (rec.index, rec.name, op.name,
                                                 len(rec.subgraphs or ()), op.num_subgraphs))
                graphs = [GraphSubgraph(_from_doc(g, '%s:node %d subgraph %d'
                                                  % (source, rec.index, j), version))
                          for j, g in enumerate(rec.subgraphs)]
                try:
                    op = op.with_subgraphs(graphs)
                except MXNetError as e:
                    _fail(source, 'node %d (%s): %s' % (rec.index, rec.name, e))
            n_inputs = len(op.list_arguments()) + len(op.list_auxiliary_states())
            if len(inputs) != n_inputs:
                _fail(source, 'node %d (%s, operator %s) has %d inputs but the operator '
                      'takes %d: %s' % (rec.index, rec.name, op.name, len(inputs),
                                        n_inputs, _input_names(op)))
            perm = op.mxnet_input_order()
            file_inputs = inputs
            if perm is not None:        # the file lists them in MXNet's order
                inputs = [None] * len(file_inputs)
                for k, p in enumerate(perm):
                    inputs[p] = file_inputs[k]
            node = Node(op, rec.name, rec.attrs, inputs, rec.loc)
            _LOADED_VERSIONS[node] = (tuple((id(n), i) for n, i in file_inputs),
                                      tuple(rec.versions.get(id(p), 0) for p in rec.inputs))
        built[id(rec)] = node
        return node

    nodes = [node_of(rec) for rec in recs]
    dups = [(name, idx) for name, idx in same_named.items() if len(idx) > 1]
    if dups and warn_duplicates:
        warnings.warn('%s: different Variables share a name (%s); binding by name gives them '
                      'one array, as in MXNet. If they are meant to be different parameters, '
                      'rename them' % (source, '; '.join(
                          '%r at nodes %s' % (name, ', '.join(str(i) for i in idx[:10]) +
                                              (', ...' if len(idx) > 10 else ''))
                          for name, idx in dups[:10]) + ('; ...' if len(dups) > 10 else '')),
                      UserWarning, stacklevel=4)
    return nodes


def from_json(text, source='<json>', warn_duplicates=True):
    """The outputs ((node, index) pairs) of the graph in MXNet JSON text; corrupt input
    gives SymbolFormatError (``symbol.load_json`` makes the Symbol).

    Files written by older MXNet versions (``attrs.mxnet_version`` below 10901, or none:
    0.8.0) are upgraded as MXNet 1.9.1 upgrades them. Different Variables with one name
    load with a UserWarning naming them and their node indices (``warn_duplicates``).
    """
    try:
        # strict=False: control characters inside strings are read as dmlc's reader reads
        # them (its writer, and ours, leave all but \\t \\n \\r unescaped)
        doc = json.loads(text, strict=False)
    except (ValueError, TypeError) as e:
        _fail(source, 'not valid JSON (truncated or corrupt?): %s' % e)
    except RecursionError:
        # the C decoder recurses per nesting level; no symbol file nests more than a few
        _fail(source, 'not a symbol file: JSON nested too deeply to parse')
    return _from_doc(doc, source, None, warn_duplicates)


def _from_doc(doc, source, version, warn_duplicates=True):
    """The outputs of the graph object ``doc``; ``version``: that of the enclosing file
    for a subgraph (None: read from ``doc``)."""
    if not isinstance(doc, dict) or not isinstance(doc.get('nodes'), list) \
            or not isinstance(doc.get('heads'), list):
        _fail(source, 'not an MXNet symbol file: expected an object with "nodes" and '
                      '"heads" lists')
    recs = _read_nodes(doc, source)
    n = len(recs)
    arg_nodes = doc.get('arg_nodes', [])
    if not isinstance(arg_nodes, list):
        _fail(source, '"arg_nodes" must be a list, got %r' % (arg_nodes,))
    for a in arg_nodes:
        if not _is_int(a) or not 0 <= a < n:
            _fail(source, 'bad arg_nodes entry %r (the file has %d nodes)' % (a, n))
        if recs[a].cls is not None:
            _fail(source, 'arg_nodes entry %d is node %r, which is not a variable'
                  % (a, recs[a].name))
    head_entries = []
    for h in doc['heads']:
        ent = _entry(h, n)
        if ent is None:
            _fail(source, 'bad head entry %r (a head is [node, output, version] of integers; '
                          'the file has %d nodes)' % (h, n))
        head_entries.append(ent)
    if not head_entries:
        _fail(source, 'the symbol has no outputs ("heads" is empty)')
    if version is None:
        version = _version(doc, source)
    _upgrade(recs, version, source)
    built = _build(recs, source, version, warn_duplicates)
    heads = []
    for k, i in head_entries:
        if not 0 <= i < built[k].num_outputs():
            _fail(source, 'head %r reads a missing output' % ([k, i],))
        heads.append((built[k], i))
    return heads
