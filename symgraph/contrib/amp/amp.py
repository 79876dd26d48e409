"""Automatic mixed precision for symbolic models, as ``mxnet.contrib.amp`` of MXNet 1.9.1.

:func:`convert_symbol` / :func:`convert_model` rewrite a float32 graph with ``amp_cast``
and ``amp_multicast`` nodes (MXNet's ``ReducePrecision`` pass of
``src/nnvm/low_precision_pass.cc``: same node names, same placement, same ``__dtype__``
attributes on the parameters), so that the operators of :func:`list_lp16_ops` run in
float16 and those of :func:`list_fp32_ops` in float32. :func:`init` patches the operator
functions of ``mx.sym`` and ``mx.nd`` to insert the same casts as a model is built.

The op lists are MXNet's (``lists/symbol_fp16.py``, ``lists/symbol_bf16.py``, copied
unchanged); the ``list_*`` functions give the names among them that are registered here.

The Gluon parts (``init_trainer``, ``scale_loss``, ``unscale``, ``convert_hybrid_block``)
are in :mod:`.gluon_amp`; this module keeps the loss scaler that :func:`init` makes for the
imperative loss outputs and hands to the first Trainer. ``target_dtype='bfloat16'`` (MXNet's
CPU precision) converts with MXNet's bf16 lists through the same pass, as MXNet's does;
bfloat16 arrays are ``ml_dtypes.bfloat16``.
"""
import logging

import numpy as np

from ... import opdef
from ...base import ArgumentTypeError, ParameterError, UsageError, as_dtype, is_bfloat16, \
    user_location
from ...graph import Node, topo_order, TYPE_CODE
from ...graph.nodes import CODE_TYPE
from ...graph.infer import infer_types
from ...symbol import Symbol
from ... import symbol
from ... import ndarray
from ...ndarray import NDArray
from . import lists
from .loss_scaler import LossScaler

__all__ = ['init', 'convert_model', 'list_lp16_ops', 'list_fp32_ops',
           'list_lp16_fp32_ops', 'list_conditional_fp32_ops',
           'list_widest_type_cast', 'list_loss_output_functions', 'list_lp16_use_fp32_params',
           'convert_symbol', 'convert_bucketing_module']

_LOG = logging.getLogger(__name__)


class AMPListError(ParameterError, AssertionError):
    """Operator lists given to :func:`convert_symbol` that do not fit: an operator in two
    lists, or in none of AMP's. MXNet 1.9.1 checks these with ``assert`` statements (its
    tests expect AssertionError); this is also a ValueError, as symgraph's bad arguments
    are."""

#: operators whose outputs MXNet 1.9.1 names (``FListOutputNames``): a cast after output i
#: of such a node is named ``<node>_<output name>_amp_cast_<dtype>``, after any other
#: operator ``<node>_<i>_amp_cast_<dtype>``. Read from MXNet's sources: the operators
#: that set the attribute, and every legacy ``MXNET_REGISTER_OP_PROPERTY`` operator
#: (src/nnvm/legacy_op_util.cc sets it for all of them).
NAMED_OUTPUTS = frozenset((
    # nnvm operators that set FListOutputNames
    'Activation', 'BatchNorm', 'Concat', 'Convolution', 'CuDNNBatchNorm', 'Custom',
    'Deconvolution', 'Dropout', 'FullyConnected', 'GroupNorm', 'LRN', 'LayerNorm',
    'LeakyReLU', 'Pooling', 'RNN', 'SoftmaxActivation', 'SoftmaxOutput', 'UpSampling',
    '_CachedOp', '_contrib_BatchNormWithReLU', '_contrib_ROIAlign', '_contrib_RROIAlign',
    '_contrib_calibrate_entropy', '_contrib_hawkesll', '_contrib_index_array',
    '_contrib_interleaved_matmul_encdec_qk', '_contrib_interleaved_matmul_encdec_valatt',
    '_contrib_interleaved_matmul_selfatt_qk', '_contrib_interleaved_matmul_selfatt_valatt',
    '_rnn_param_concat', 'col2im', 'elemwise_add', 'im2col', 'make_loss', 'softmax',
    'softmin',
    # legacy OperatorProperty operators
    'BatchNorm_v1', 'BilinearSampler', 'Convolution_v1', 'Correlation', 'Crop',
    'GridGenerator', 'IdentityAttachKLSparseReg', 'InstanceNorm', 'L2Normalization',
    'MakeLoss', 'Pad', 'Pooling_v1', 'ROIPooling', 'SVMOutput', 'SequenceLast',
    'SequenceMask', 'SequenceReverse', 'SliceChannel', 'SpatialTransformer', 'SwapAxis',
    '_CrossDeviceCopy', '_NDArray', '_Native', '_contrib_DeformableConvolution',
    '_contrib_DeformablePSROIPooling', '_contrib_ModulatedDeformableConvolution',
    '_contrib_MultiBoxDetection', '_contrib_MultiBoxPrior', '_contrib_MultiBoxTarget',
    '_contrib_MultiProposal', '_contrib_PSROIPooling', '_contrib_Proposal',
    '_contrib_SyncBatchNorm', '_contrib_count_sketch', '_contrib_fft', '_contrib_ifft',
))

_F16, _F32 = np.dtype(np.float16), np.dtype(np.float32)


# --------------------------------------------------------------------------- op lists
def _target_name(target_dtype):
    """'float16' or 'bfloat16' for the ``target_dtype`` given (a name or a dtype)."""
    if is_bfloat16(target_dtype):
        return 'bfloat16'
    try:
        if np.dtype(target_dtype) == _F16:
            return 'float16'
    except TypeError:
        pass
    raise ParameterError("AMP: target_dtype must be 'float16' or 'bfloat16', got %r"
                         % (target_dtype,))


def _lists(target):
    """MXNet's op lists module of ``target`` ('float16' or 'bfloat16') and its names of
    the low precision and the either-precision lists."""
    if target == 'float16':
        return lists.symbol_fp16, 'FP16_FUNCS', 'FP16_FP32_FUNCS'
    return lists.symbol_bf16, 'BF16_FUNCS', 'BF16_FP32_FUNCS'


def _known():
    """Every registered operator name, aliases included."""
    return set(opdef.list_ops(aliases=True))


def _registered(names):
    known = _known()
    return [n for n in names if n in known]


def _mxnet_list(target_dtype, fp16_name, bf16_name=None):
    """MXNet's list ``fp16_name`` of symbol_fp16 (``bf16_name`` of symbol_bf16 for
    bfloat16, default the same name)."""
    if _target_name(target_dtype) == 'float16':
        return getattr(lists.symbol_fp16, fp16_name)
    return getattr(lists.symbol_bf16, bf16_name or fp16_name)


def list_lp16_ops(target_dtype):
    """The operators run in ``target_dtype`` (float16): MXNet's list, the names
    registered here."""
    return _registered(_mxnet_list(target_dtype, 'FP16_FUNCS', 'BF16_FUNCS'))


def list_fp32_ops(target_dtype):
    """The operators run in float32 (possible overflow in float16)."""
    return _registered(_mxnet_list(target_dtype, 'FP32_FUNCS'))


def list_lp16_fp32_ops(target_dtype):
    """The operators that run in whatever type their inputs have."""
    return _registered(_mxnet_list(target_dtype, 'FP16_FP32_FUNCS', 'BF16_FP32_FUNCS'))


def list_conditional_fp32_ops(target_dtype):
    """``(operator, parameter, [values])``: run in float32 when the parameter has one of
    the values (``Activation`` with ``act_type='softrelu'``)."""
    known = _known()
    return [c for c in _mxnet_list(target_dtype, 'CONDITIONAL_FP32_FUNCS') if c[0] in known]


def list_widest_type_cast(target_dtype):
    """The operators whose inputs are all cast to the widest type among them."""
    return _registered(_mxnet_list(target_dtype, 'WIDEST_TYPE_CASTS'))


def list_loss_output_functions(target_dtype):
    """The loss output operators (``SoftmaxOutput`` ...)."""
    return _registered(_mxnet_list(target_dtype, 'LOSS_OUTPUT_FUNCTIONS'))


def list_lp16_use_fp32_params(target_dtype):
    """None for float16; for bfloat16 MXNet's ``{operator: [flags]}`` of parameters that
    stay float32."""
    if _target_name(target_dtype) == 'float16':
        return None
    known = _known()
    return {k: v for k, v in lists.symbol_bf16.BF16_USE_FP32_PARAMS.items() if k in known}


def _all_names(mod, target):
    low = mod.FP16_FUNCS if target == 'float16' else mod.BF16_FUNCS
    both = mod.FP16_FP32_FUNCS if target == 'float16' else mod.BF16_FP32_FUNCS
    return set(low) | set(mod.FP32_FUNCS) | set(both) | \
        {c[0] for c in mod.CONDITIONAL_FP32_FUNCS}


# --------------------------------------------------------------------------- the pass
def _infer_node_types(node, first_type):
    """MXNet's call of an operator's type rule with only input 0 known: the types of all
    inputs and outputs (None where unknown), or None when the rule refuses."""
    op = node.op
    in_types = [first_type] + [None] * (len(node.inputs) - 1)
    try:
        if op.infer_type_uses_outputs:
            ins, outs, aux = op.infer_type(list(in_types), [None] * op.output_count())
        else:
            ins, outs, aux = op.infer_type(list(in_types))
    except Exception:  # noqa: BLE001  (a rule that cannot cope: MXNet's "false")
        return None
    ins = list(ins or []) + list(aux or [])
    ins += [None] * (len(node.inputs) - len(ins))
    return ([None if t is None else np.dtype(t) for t in ins],
            [None if t is None else np.dtype(t) for t in outs])


class _ReducePrecision:
    """MXNet 1.9.1's ReducePrecision pass over a graph of frozen nodes: a mirror of every
    node, with casts inserted where the op lists say."""

    def __init__(self, target, target_ops, fp32_ops, widest_ops, conditional, excluded,
                 data_names, cast_optional_params):
        self.target = target
        self.target_ops, self.fp32_ops, self.widest_ops = target_ops, fp32_ops, widest_ops
        self.conditional = conditional
        self.excluded = excluded
        self.data_names = data_names
        self.cast_optional = cast_optional_params
        self.mirror = {}            # id(original node) -> new node
        self.fp32 = {}              # (id(original node), index) -> new entry
        self.low = {}               # the same for entries known to be in target dtype
        self.location = user_location()

    def _mirror_entry(self, e):
        return self.mirror[id(e[0])], e[1]

    @staticmethod
    def _suffix(e):
        node, i = e
        if node.op is None:
            return ''
        if node.op.name in NAMED_OUTPUTS:
            return '_' + node.op.list_outputs()[i]
        return '_%d' % i

    def _cast(self, e, dtype, table):
        """An amp_cast of original entry ``e`` to ``dtype``, recorded in ``table``."""
        name = '%s%s_amp_cast_%s' % (e[0].name, self._suffix(e), dtype)
        op = opdef.get_op('amp_cast')(dtype=dtype)
        node = Node(op, name, {'dtype': dtype}, [self._mirror_entry(e)], self.location)
        table[(id(e[0]), e[1])] = (node, 0)
        return node, 0

    def _conditional_fp32(self, node):
        if node.op is None or node.name in self.excluded:
            return False
        for param, values in self.conditional.get(node.op.name, {}).items():
            if param in node.attrs and node.attrs[param] in values:
                return True
        return False

    def _record_outputs(self, node, new, out_types):
        for i, t in enumerate(out_types):
            if t == self.target:
                self.low[(id(node), i)] = (new, i)
            elif t == _F32:
                self.fp32[(id(node), i)] = (new, i)

    def visit(self, node):
        ins = []
        op_name = None if node.op is None else node.op.name
        mutable = set() if node.op is None else \
            set(range(len(node.op.list_arguments()), len(node.inputs)))
        key = lambda e: (id(e[0]), e[1])  # noqa: E731
        if (op_name in self.fp32_ops) or node.name in self.excluded:
            for e in node.inputs:
                if key(e) in self.fp32:
                    ins.append(self.fp32[key(e)])
                elif e[0].op is None:
                    ins.append(self._mirror_entry(e))
                else:
                    ins.append(self._cast(e, 'float32', self.fp32))
            new = self._copy(node, ins)
            for i in range(node.num_outputs()):
                self.fp32[(id(node), i)] = (new, i)
            return
        if op_name in self.target_ops:
            inferred = _infer_node_types(node, self.target)
            if inferred is None:
                raise UsageError('amp.convert_symbol: %s: its type rule fails with a %s '
                                 'first input' % (node.describe(), self.target.name))
            in_types, out_types = inferred
            pending = out_types
            for i, e in enumerate(node.inputs):
                if key(e) in self.low:
                    ins.append(self.low[key(e)])
                elif (self.cast_optional and e[0].op is None
                      and e[0].name not in self.data_names) or i in mutable \
                        or not (in_types[i] is None or in_types[i] == self.target):
                    m = self._mirror_entry(e)
                    ins.append(m)
                    if self.cast_optional and e[0].op is None:
                        self.low[key(e)] = m
                else:
                    ins.append(self._cast(e, self.target.name, self.low))
            new = self._copy(node, ins)
            self._record_outputs(node, new, pending)
            return
        if op_name in self.widest_ops and node.name not in self.excluded:
            if not node.inputs:
                raise UsageError('amp.convert_symbol: %s has no inputs' % node.describe())
            if any(k not in self.low and k not in self.fp32
                   for k in map(key, node.inputs)):
                e0 = node.inputs[0]
                name = '%s%s_amp_multicast' % (e0[0].name, self._suffix(e0))
                n = len(node.inputs)
                mc = Node(opdef.get_op('amp_multicast')(num_outputs=n), name,
                          {'num_outputs': str(n)},
                          [self._mirror_entry(e) for e in node.inputs], self.location)
                self._copy(node, [(mc, i) for i in range(n)])
                return
            wide = any(key(e) in self.fp32 for e in node.inputs)
            table, dtype = (self.fp32, 'float32') if wide else (self.low, self.target.name)
            for e in node.inputs:
                ins.append(table[key(e)] if key(e) in table else self._cast(e, dtype, table))
            new = self._copy(node, ins)
            for i in range(node.num_outputs()):
                table[(id(node), i)] = (new, i)
            return
        if self._conditional_fp32(node):
            for e_i, e in enumerate(node.inputs):
                if key(e) in self.fp32:
                    ins.append(self.fp32[key(e)])
                elif e_i in mutable:
                    ins.append(self._mirror_entry(e))
                else:
                    ins.append(self._cast(e, 'float32', self.fp32))
            new = self._copy(node, ins)
            for i in range(node.num_outputs()):
                self.fp32[(id(node), i)] = (new, i)
            return
        out_types = None
        if node.inputs and (key(node.inputs[0]) in self.fp32 or key(node.inputs[0]) in self.low):
            first = self.target if key(node.inputs[0]) in self.low else _F32
            inferred = _infer_node_types(node, first)
            if inferred is not None:
                out_types = inferred[1]
        new = self._copy(node, [self._mirror_entry(e) for e in node.inputs])
        if out_types is not None:
            self._record_outputs(node, new, out_types)

    def _copy(self, node, inputs):
        same_as = None
        if node.op is None and node.same_as is not None:
            same_as = self.mirror.get(id(node.same_as))
        new = Node(node.op, node.name, node.attrs, inputs, node.location, same_as)
        self.mirror[id(node)] = new
        return new

    def run(self, heads):
        for node in topo_order([n for n, _ in heads]):
            self.visit(node)
        out = []
        for e in heads:
            k = (id(e[0]), e[1])
            out.append(self.fp32[k] if k in self.fp32 else self._cast(e, 'float32', self.fp32))
        return out


def _check_list(value, what):
    if value is not None and not isinstance(value, list):
        raise ArgumentTypeError('amp.convert_symbol: %s must be a list, got %s'
                                % (what, type(value).__name__))
    return value


def convert_symbol(sym, target_dtype='float16', target_dtype_ops=None, fp32_ops=None,
                   conditional_fp32_ops=None, excluded_sym_names=None, data_names=None,
                   cast_optional_params=False):
    """A mixed precision copy of the float32 graph ``sym``: ``amp_cast`` /
    ``amp_multicast`` nodes inserted as MXNet 1.9.1's ``convert_symbol`` inserts them.

    Parameters
    ----------
    sym : Symbol
        The float32 network.
    target_dtype : {'float16', 'bfloat16'}
        The low precision type (bfloat16: MXNet's CPU lists, ``symbol_bf16.py``).
    target_dtype_ops, fp32_ops : list of str, optional
        Operators to run in ``target_dtype`` / float32, in place of the default lists
        (:func:`list_lp16_ops`, :func:`list_fp32_ops`).
    conditional_fp32_ops : list of (str, str, list of str), optional
        ``(operator, parameter, values)``: run in float32 when the parameter's value (as
        written in the graph) is one of ``values``; default :func:`list_conditional_fp32_ops`.
    excluded_sym_names : list of str, optional
        Names of nodes kept in float32.
    data_names : list of str, optional
        The inputs that are data (float32); the other inputs are parameters and get a
        ``__dtype__`` attribute with their type. Default: the inputs without ``__dtype__``.
    cast_optional_params : bool
        Leave parameters that feed ``target_dtype`` operators uncast (then they are
        expected in ``target_dtype``: :func:`convert_model` casts them).

    Returns
    -------
    Symbol

    Examples
    --------
    >>> import json
    >>> import symgraph as mx
    >>> from symgraph.contrib import amp
    >>> fc = mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=4, name='fc')
    >>> nodes = json.loads(amp.convert_symbol(fc).tojson(remove_amp_cast=False))['nodes']
    >>> [n['name'] for n in nodes]  # doctest: +NORMALIZE_WHITESPACE
    ['data', 'data_amp_cast_float16', 'fc_weight', 'fc_weight_amp_cast_float16', 'fc_bias',
     'fc_bias_amp_cast_float16', 'fc', 'fc_output_amp_cast_float32']
    """
    if not isinstance(sym, Symbol):
        raise ArgumentTypeError('amp.convert_symbol: the first argument must be a Symbol, '
                                'got %s' % type(sym).__name__)
    target = _target_name(target_dtype)
    mod, low_name, _ = _lists(target)
    target_dtype_ops = _check_list(target_dtype_ops, 'target_dtype_ops')
    fp32_ops = _check_list(fp32_ops, 'fp32_ops')
    conditional_fp32_ops = _check_list(conditional_fp32_ops, 'conditional_fp32_ops')
    excluded_sym_names = _check_list(excluded_sym_names, 'excluded_sym_names') or []
    data_names = _check_list(data_names, 'data_names')
    if target_dtype_ops is None:
        target_dtype_ops = list(getattr(mod, low_name))
    if fp32_ops is None:
        fp32_ops = list(mod.FP32_FUNCS)
    if conditional_fp32_ops is None:
        conditional_fp32_ops = list(mod.CONDITIONAL_FP32_FUNCS)
    conditional = {}
    for c in conditional_fp32_ops:
        if not (isinstance(c, (tuple, list)) and len(c) == 3 and isinstance(c[0], str)
                and isinstance(c[1], str) and isinstance(c[2], list)):
            raise ArgumentTypeError('amp.convert_symbol: conditional_fp32_ops must be a list '
                                    'of (str, str, list of str), got the entry %r' % (c,))
        conditional.setdefault(c[0], {}).setdefault(c[1], []).extend(c[2])
    for a, b, an, bn in ((target_dtype_ops, fp32_ops, 'target_dtype_ops', 'fp32_ops'),
                         (target_dtype_ops, list(conditional), 'target_dtype_ops',
                          'conditional_fp32_ops'),
                         (list(conditional), fp32_ops, 'conditional_fp32_ops', 'fp32_ops')):
        common = set(a) & set(b)
        if common:
            raise AMPListError('amp.convert_symbol: operators cannot be in two or more '
                                 'lists: %s are in %s and %s' % (sorted(common), an, bn))
    illegal = set(target_dtype_ops) | set(fp32_ops) | set(conditional)
    illegal -= _all_names(mod, target)
    if illegal:
        raise AMPListError('amp.convert_symbol: %s not in any of amp.list_lp16_ops, '
                             'list_fp32_ops, list_lp16_fp32_ops, list_conditional_fp32_ops'
                             % sorted(illegal))
    order = sym.graph().order
    variables = [n for n in order if n.op is None]
    if data_names is None:
        data_names = [n.name for n in variables if '__dtype__' not in n.attrs]
    model_params = {n.name for n in variables} - set(data_names)
    rp = _ReducePrecision(as_dtype(target), set(target_dtype_ops), set(fp32_ops),
                          set(mod.WIDEST_TYPE_CASTS), conditional, set(excluded_sym_names),
                          set(data_names), bool(cast_optional_params))
    heads = rp.run(list(sym.output_entries))
    _set_param_dtypes(heads, set(data_names), model_params,
                      as_dtype(target) if cast_optional_params else None)
    return Symbol(heads)


def _infer_unknown(order, index, types, target):
    """MXNet's AMPInferUnknown pass (``cast_optional_params``): an input of unknown type
    that only ``amp_cast`` nodes to one type read takes that type; the inputs of an
    ``amp_multicast`` whose inputs are all variables take ``target``; an input asked two
    types keeps the one inferred."""
    result = dict(types)
    visited = {}

    def check(var, dtype):
        key = (index[id(var)], 0)
        if var.name not in visited:
            if result.get(key) is None:
                visited[var.name] = dtype
                result[key] = dtype
        elif visited[var.name] != dtype:
            result[key] = types.get(key)

    for node in order:
        if node.op is None:
            continue
        if node.op.name == 'amp_cast' and 'dtype' in node.attrs:
            for src, _ in node.inputs:
                if src.op is None:
                    check(src, as_dtype(node.op.dtype))
        elif node.op.name == 'amp_multicast':
            if all(src.op is None for src, _ in node.inputs):
                for src, _ in node.inputs:
                    check(src, target)
    return result


def _set_param_dtypes(heads, data_names, model_params, target=None):
    """MXNet's type inference after the pass (data float32, ``__dtype__`` attributes not
    read) and its update of the inputs' ``__dtype__``: every parameter gets its inferred
    type (float32 where unknown); without parameters, inputs that had ``__dtype__`` keep
    it, updated to the inferred type. ``target``: the low precision type when
    ``cast_optional_params`` (then :func:`_infer_unknown` first, as MXNet)."""
    order = topo_order([n for n, _ in heads])
    variables = [n for n in order if n.op is None]
    known = {n: _F32 for n in variables if n.name in data_names}
    types = infer_types(order, known)
    index = {id(n): k for k, n in enumerate(order)}
    if target is not None:
        types = _infer_unknown(order, index, types, target)
    for n in variables:
        t = types.get((index[id(n)], 0))
        code = str(TYPE_CODE[np.dtype(t).name] if t is not None else 0)
        if model_params:
            if n.name in model_params:
                n.attrs['__dtype__'] = code
        elif '__dtype__' in n.attrs:
            n.attrs['__dtype__'] = code


def convert_model(sym, arg_params, aux_params, target_dtype='float16', target_dtype_ops=None,
                  fp32_ops=None, conditional_fp32_ops=None, excluded_sym_names=None,
                  cast_optional_params=False):
    """:func:`convert_symbol` with the parameters: every input not in ``arg_params`` /
    ``aux_params`` is data, and the parameters are cast to the ``__dtype__`` the
    converted graph gives them.

    Returns ``(symbol, arg_params, aux_params)``; unlike MXNet, the dicts given are not
    modified (new dicts are returned).
    """
    if not isinstance(sym, Symbol):
        raise ArgumentTypeError('amp.convert_model: the first argument must be a Symbol, '
                                'got %s' % type(sym).__name__)
    for value, what in ((arg_params, 'arg_params'), (aux_params, 'aux_params')):
        if not isinstance(value, dict):
            raise ArgumentTypeError('amp.convert_model: %s must be a dict of name to NDArray, '
                                    'got %s' % (what, type(value).__name__))
    params = set(arg_params) | set(aux_params)
    data_names = [n for n in dict.fromkeys(sym.list_inputs()) if n not in params]
    sym = convert_symbol(sym, target_dtype, target_dtype_ops, fp32_ops, conditional_fp32_ops,
                         excluded_sym_names, data_names, cast_optional_params)
    attrs = sym.attr_dict()

    def cast(params, names):
        out = dict(params)
        for name in names:
            code = attrs.get(name, {}).get('__dtype__', '-1')
            if name in out and code != '-1':
                out[name] = out[name].astype(as_dtype(CODE_TYPE[int(code)]))
        return out
    return (sym, cast(arg_params, sym.list_arguments()),
            cast(aux_params, sym.list_auxiliary_states()))


def convert_bucketing_module(bucketing_mod, target_dtype='float16', target_dtype_ops=None,
                             fp32_ops=None, conditional_fp32_ops=None,
                             excluded_sym_names=None, cast_optional_params=False):
    """A BucketingModule whose bucket symbols are converted by :func:`convert_model`
    (the module's parameters must be initialized)."""
    from ...module import BucketingModule
    if not isinstance(bucketing_mod, BucketingModule):
        raise ArgumentTypeError('amp.convert_bucketing_module: expected a BucketingModule, '
                                'got %s' % type(bucketing_mod).__name__)
    if not bucketing_mod._buckets:
        raise UsageError('amp.convert_bucketing_module: the BucketingModule has no buckets')
    if not bucketing_mod.params_initialized:
        raise UsageError('amp.convert_bucketing_module: the parameters of the module must be '
                         'initialized for mixed precision conversion')
    arg_params = bucketing_mod._curr_module._arg_params
    aux_params = bucketing_mod._curr_module._aux_params
    sym_dict = {}
    for key, mod in bucketing_mod._buckets.items():
        sym_dict[key], res_arg, res_aux = convert_model(
            mod.symbol, arg_params, aux_params, target_dtype=target_dtype,
            target_dtype_ops=target_dtype_ops, fp32_ops=fp32_ops,
            conditional_fp32_ops=conditional_fp32_ops, excluded_sym_names=excluded_sym_names,
            cast_optional_params=cast_optional_params)
    return BucketingModule.load_dict(
        sym_dict, sym_gen=bucketing_mod._sym_gen, arg_params=res_arg, aux_params=res_aux,
        default_bucket_key=bucketing_mod._default_bucket_key, logger=bucketing_mod.logger,
        context=bucketing_mod._context, work_load_list=bucketing_mod._work_load_list,
        fixed_param_names=bucketing_mod._fixed_param_names,
        state_names=bucketing_mod._state_names, group2ctxs=bucketing_mod._group2ctxs,
        compression_params=bucketing_mod._compression_params)


# --------------------------------------------------------------------------- init()
_initialized = False
#: the loss scaler init() makes: the imperative loss outputs scale their gradients by its
#: factor; the first Trainer given to amp.init_trainer takes it (take_global_loss_scaler)
_loss_scaler = None
_loss_scaler_taken = False
#: (owner, attribute name, previous value or _ABSENT) of every function init() replaced
_patched = []
_ABSENT = object()


def _cast_input(x, dtype):
    """``x`` cast to ``dtype`` when it is a Symbol (always) or a float16/float32 NDArray of
    another type; anything else unchanged."""
    if isinstance(x, Symbol):
        return symbol.amp_cast(x, dtype=np.dtype(dtype).name)
    if isinstance(x, NDArray) and x.dtype != dtype and (
            np.dtype(x.dtype) in (_F16, _F32) or is_bfloat16(np.dtype(x.dtype))):
        return ndarray.amp_cast(x, dtype=np.dtype(dtype).name)
    return x


def _symbol_wrapper(f, dtype, cond=None):
    def wrapped(*args, **kwargs):
        if cond is not None and kwargs.get(cond[0]) not in cond[1]:
            return f(*args, **kwargs)
        out = f(*args, **kwargs)
        heads = {id(n): n for n, _ in out.output_entries}
        if len(heads) != 1:
            return out
        (node,) = heads.values()
        n_args = len(node.op.list_arguments())
        ins = [e if j >= n_args else _cast_input(Symbol([e]), dtype).output_entries[0]
               for j, e in enumerate(node.inputs)]
        new = Node(node.op, node.name, node.attrs, ins, node.location)
        return Symbol([(new, i) for _, i in out.output_entries])
    return _named(wrapped, f)


def _ndarray_wrapper(f, dtype, cond=None):
    def wrapped(*args, **kwargs):
        if cond is not None and kwargs.get(cond[0]) not in cond[1]:
            return f(*args, **kwargs)
        args = [_cast_input(a, dtype) for a in args]
        kwargs = {k: _cast_input(v, dtype) for k, v in kwargs.items()}
        return f(*args, **kwargs)
    return _named(wrapped, f)


def _widest_wrapper(f, target):
    def wrapped(*args, **kwargs):
        args = list(args)
        where = [(args, i) for i, a in enumerate(args) if isinstance(a, (Symbol, NDArray))]
        where += [(kwargs, k) for k, v in kwargs.items() if isinstance(v, (Symbol, NDArray))]
        values = [c[k] for c, k in where]
        if any(isinstance(v, Symbol) for v in values):
            cast = symbol.amp_multicast(*values, num_outputs=len(values))
            for (c, k), s in zip(where, cast):
                c[k] = s
        elif values:
            wide = _F32 if any(np.dtype(v.dtype) == _F32 for v in values) else target
            for (c, k), v in zip(where, values):
                if np.dtype(v.dtype) == target and wide != target:
                    c[k] = ndarray.amp_cast(v, dtype=wide.name)
        return f(*args, **kwargs)
    return _named(wrapped, f)


def _named(wrapped, f):
    wrapped.__name__ = getattr(f, '__name__', 'amp_wrapped')
    wrapped.__doc__ = getattr(f, '__doc__', None)
    wrapped.__wrapped__ = f
    return wrapped


def _loss_warning(f):
    def wrapped(*args, **kwargs):
        _LOG.warning('%s does not support dynamic loss scaling in symbolic execution.',
                     getattr(f, '__name__', 'this loss'))
        return f(*args, **kwargs)
    return _named(wrapped, f)


def _loss_scaling(f):
    """``f`` (an imperative loss output) with its ``grad_scale`` multiplied by the current
    factor of :func:`init`'s loss scaler, as MXNet's ``amp.init`` wraps ``mx.nd``'s."""
    def wrapped(*args, **kwargs):
        kwargs['grad_scale'] = kwargs.get('grad_scale', 1.0) * _loss_scaler.loss_scale
        return f(*args, **kwargs)
    return _named(wrapped, f)


def is_initialized():
    """Whether :func:`init` ran (and was not undone)."""
    return _initialized


def take_global_loss_scaler():
    """The loss scaler :func:`init` made, the first time it is asked for (the first
    Trainer gets it, as in MXNet); None after that or before :func:`init`."""
    global _loss_scaler_taken
    if _loss_scaler is None or _loss_scaler_taken:
        return None
    _loss_scaler_taken = True
    return _loss_scaler


def _owner(module, name):
    """Where ``mx.sym`` / ``mx.nd`` finds the function of operator ``name``: the module,
    or a namespace (``_contrib_box_nms`` is ``contrib.box_nms``)."""
    for ns, prefix in (('contrib', '_contrib_'), ('linalg', '_linalg_'), ('image', '_image_')):
        if name.startswith(prefix):
            return getattr(module, ns), name[len(prefix):]
    if name.startswith('_'):
        return getattr(module, '_internal'), name
    return module, name


def _patch(owner, name, wrapped):
    if isinstance(owner, opdef.OpNamespace):
        prev = owner.function(name)
        _patched.append((owner, name, _ABSENT if prev is None else prev))
        owner.add_function(name, wrapped)
        return
    prev = owner.__dict__.get(name, _ABSENT)
    _patched.append((owner, name, prev))
    setattr(owner, name, wrapped)


def init(target_dtype='float16', target_precision_ops=None, conditional_fp32_ops=None,
         fp32_ops=None):
    """Make ``mx.sym`` and ``mx.nd`` insert AMP casts as a model is built (call it before
    building the model), as MXNet's ``amp.init``.

    The operator functions of :func:`list_lp16_ops` (or ``target_precision_ops``) cast
    their inputs to ``target_dtype``; those of :func:`list_fp32_ops` (``fp32_ops``) and,
    for the listed parameter values, :func:`list_conditional_fp32_ops`
    (``conditional_fp32_ops``) to float32; those of :func:`list_widest_type_cast` cast
    their inputs to the widest type among them (``amp_multicast`` for symbols). Symbols
    always get an ``amp_cast`` node; NDArrays are cast where their type (float16 or
    float32) differs. The loss outputs of :func:`list_loss_output_functions` log that
    dynamic loss scaling is not supported in symbolic execution (MXNet logs the same;
    loss scaling is Gluon-only); their ``mx.nd`` functions scale ``grad_scale`` by the
    factor of the loss scaler made here, which the first Trainer given to
    ``amp.init_trainer`` adapts. A second call does nothing.
    """
    global _initialized, _loss_scaler, _loss_scaler_taken
    if _initialized:
        return
    target = as_dtype(_target_name(target_dtype))
    low = list_lp16_ops(target) if target_precision_ops is None else target_precision_ops
    high = list_fp32_ops(target) if fp32_ops is None else fp32_ops
    cond = list_conditional_fp32_ops(target) if conditional_fp32_ops is None \
        else conditional_fp32_ops
    wanted = [(n, target, None) for n in low] + [(n, _F32, None) for n in high] + \
        [(c[0], _F32, (c[1], list(c[2]))) for c in cond]
    known = _known()
    missing = [n for n, _, _ in wanted if n not in known]
    if missing:
        raise ParameterError('amp.init: operators not registered: %s' % sorted(set(missing)))
    _initialized = True
    _LOG.info('Using AMP')
    for module, wrapper in ((symbol, _symbol_wrapper), (ndarray, _ndarray_wrapper)):
        for name, dtype, c in wanted:
            owner, attr = _owner(module, name)
            _patch(owner, attr, wrapper(getattr(owner, attr), dtype, c))
        for name in list_widest_type_cast(target):
            owner, attr = _owner(module, name)
            _patch(owner, attr, _widest_wrapper(getattr(owner, attr), target))
    _loss_scaler = LossScaler()
    _loss_scaler_taken = False
    for name in list_loss_output_functions(target):
        _patch(symbol, name, _loss_warning(getattr(symbol, name)))
        _patch(ndarray, name, _loss_scaling(getattr(ndarray, name)))


def _uninit():
    """Undo :func:`init` (tests): the functions it replaced come back."""
    global _initialized, _loss_scaler, _loss_scaler_taken
    while _patched:
        owner, name, prev = _patched.pop()
        if isinstance(owner, opdef.OpNamespace):
            if prev is _ABSENT:
                owner.remove_function(name)
            else:
                owner.add_function(name, prev)
        elif prev is _ABSENT:
            delattr(owner, name)
        else:
            setattr(owner, name, prev)
    _initialized = False
    _loss_scaler = None
    _loss_scaler_taken = False
