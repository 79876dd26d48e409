"""What Gluon's Blocks are built with: the naming scope of ``name_scope()``
(``BlockScope``), the flattening of nested inputs and outputs, the dtype inference of
SymbolBlock's parameters, the table of ``Block.summary`` and the model files of
``Block.save``/``Block.load``.

After MXNet 1.9.1's ``python/mxnet/gluon/block.py``.
"""
from collections import OrderedDict
import json
import threading
import warnings

import numpy as np

from .. import name as _name
from ..ndarray import NDArray
from ..symbol import Symbol, load_json
from .parameter import ParameterDict, GluonArgumentError

class BlockScope:
    """The scope of ``with block.name_scope():``: children made inside are named after
    the block, with counters of their own per block (MXNet's ``BlockScope``)."""

    _current = threading.local()

    def __init__(self, block):
        self._block = block
        self._counter = {}
        self._old_scope = None
        self._name_scope = None

    @staticmethod
    def create(prefix, params, hint):
        """The prefix and ParameterDict of a new Block whose alias is ``hint``."""
        current = getattr(BlockScope._current, 'value', None)
        if current is None:
            if prefix is None:
                # outside any block: the operator names' counters (dense0_, dense1_, ...)
                prefix = _name.NameManager._get_current().get(None, hint) + '_'
            if params is None:
                params = ParameterDict(prefix)
            else:
                params = ParameterDict(params.prefix, params)
            return prefix, params
        if prefix is None:
            count = current._counter.get(hint, 0)
            prefix = '%s%d_' % (hint, count)
            current._counter[hint] = count + 1
        if params is None:
            parent = current._block.params
            params = ParameterDict(parent.prefix + prefix, parent._shared)
        else:
            params = ParameterDict(params.prefix, params)
        return current._block.prefix + prefix, params

    def __enter__(self):
        if self._block._empty_prefix:
            return self
        self._old_scope = getattr(BlockScope._current, 'value', None)
        BlockScope._current.value = self
        self._name_scope = _name.Prefix(self._block.prefix)
        self._name_scope.__enter__()
        return self

    def __exit__(self, ptype, value, trace):
        if self._block._empty_prefix:
            return
        self._name_scope.__exit__(ptype, value, trace)
        self._name_scope = None
        BlockScope._current.value = self._old_scope


def _flatten(args, inout_str):
    """(flat list of NDArray/Symbol/None, format) of a nested argument structure."""
    if isinstance(args, NDArray):
        return [args], 0
    if isinstance(args, Symbol):
        length = len(args.list_outputs())
        return [args], (length if length > 1 else 0)
    if args is None:
        return [None], -1
    if not isinstance(args, (list, tuple)):
        raise GluonArgumentError('When hybridized, the input of HybridBlock {} must be (nested) '
                                 'list of Symbol or NDArray, but got {} of type {}'
                                 .format(inout_str, str(args), str(type(args))))
    flat, fmts = [], []
    for i in args:
        arg, fmt = _flatten(i, inout_str)
        flat.extend(arg)
        fmts.append(fmt)
    return flat, fmts


def _regroup(args, fmt):
    """The structure ``fmt`` (of :func:`_flatten`) rebuilt from the flat ``args``."""
    def merge(args, fmt):
        if isinstance(fmt, int):
            if fmt < -1:
                raise GluonArgumentError('Unsupported encoded format {}.'.format(fmt))
            if fmt == 0:
                return args[0], args[1:]
            if fmt == -1:
                if args[0] is not None:
                    raise GluonArgumentError(
                        'We do not support passing types that are not None when the initial '
                        'HybridBlock has received NoneType and has been hybridized. Received '
                        'arg = {}, fmt = {}.'.format(args[0], fmt))
                return None, args[1:]
            return args[:fmt], args[fmt:]
        if not isinstance(args, (list, tuple)):
            raise GluonArgumentError('When hybridized, the output of HybridBlock must be '
                                     '(nested) list of Symbol or NDArray, but got {} of type {}'
                                     .format(args, type(args)))
        ret = []
        for i in fmt:
            res, args = merge(args, i)
            ret.append(res)
        return ret, args
    return merge(args, fmt)[0]


def _gather_type_ctx_info(args):
    """(has a Symbol, has an NDArray, set of contexts, first context) of nested args."""
    if isinstance(args, NDArray):
        return False, True, {args.context}, args.context
    if isinstance(args, Symbol):
        return True, False, set(), None
    if isinstance(args, (list, tuple)):
        has_symbol = has_ndarray = False
        ctx_set, first_ctx = set(), None
        for ele in args:
            s, n, c, f = _gather_type_ctx_info(ele)
            has_symbol, has_ndarray = has_symbol or s, has_ndarray or n
            if first_ctx is None and f is not None:
                first_ctx = f
            ctx_set |= c
            if has_symbol and has_ndarray:
                break
        return has_symbol, has_ndarray, ctx_set, first_ctx
    return False, False, set(), None


def _is_sequential(block):
    """Whether ``block`` is a (Hybrid)Sequential of gluon.nn, by its classes' names: this
    module cannot import gluon.nn, which imports it (summary leaves containers out)."""
    return any(c.__name__ in ('Sequential', 'HybridSequential') and
               c.__module__.startswith(__name__.rpartition('.')[0] + '.nn')
               for c in type(block).__mro__)


def _common_prefix(names):
    """The longest common prefix of ``names``."""
    if not names:
        return ''
    prefix = names[0]
    for name in names:
        i = 0
        while i < len(prefix) and i < len(name) and prefix[i] == name[i]:
            i += 1
        prefix = prefix[:i]
    return prefix


def _infer_param_types(in_params, out_params, arg_params, aux_params,
                       default_dtype=np.float32):
    """The dtypes of the arguments and auxiliary states of ``out_params`` from those of
    the input Variables, float32 where they cannot be inferred."""
    arg_types = aux_types = None
    names = [p.name for p in in_params]
    types = []
    for p in in_params:
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            t = p.infer_type()[0]
        if not t or t[0] is None:
            types = None
            break
        types.append(t[0])
    if types is not None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter('ignore')
                arg_types, _, aux_types = out_params.infer_type(**dict(zip(names, types)))
        except (ValueError, TypeError):
            arg_types = aux_types = None
    if arg_types is None or len(arg_types) != len(arg_params) or \
            any(t is None for t in arg_types):
        arg_types = [default_dtype] * len(arg_params)
    if aux_types is None or len(aux_types) != len(aux_params) or \
            any(t is None for t in aux_types):
        aux_types = [default_dtype] * len(aux_params)
    return arg_types, aux_types


def print_summary(net, inputs):
    """Print MXNet's table of each layer's output shape and parameter count for
    ``net(*inputs)`` (:meth:`Block.summary`)."""
    summary = OrderedDict()
    seen = set()
    hooks = []

    def shape_str(args):
        def flatten(args):
            if not isinstance(args, (list, tuple)):
                return [args], 0
            flat, fmts = [], []
            for i in args:
                arg, fmt = flatten(i)
                flat.extend(arg)
                fmts.append(fmt)
            return flat, fmts

        def regroup(args, fmt):
            if isinstance(fmt, int):
                if fmt == 0:
                    return args[0], args[1:]
                return args[:fmt], args[fmt:]
            ret = []
            for i in fmt:
                res, args = regroup(args, i)
                ret.append(res)
            return ret, args
        flat, fmts = flatten(args)
        shapes = regroup([x.shape if isinstance(x, NDArray) else x for x in flat], fmts)[0]
        text = str(shapes)[1:-1] if isinstance(shapes, list) else str(shapes)
        return text.replace('L', '')

    def register(block):
        if getattr(block, '_active', False):
            raise GluonArgumentError('"{}" must not be hybridized to print summary.'
                                     .format(block.name))

        def hook(block, _, outputs):
            key = '%s-%i' % (block.__class__.__name__, len(summary))
            summary[key] = OrderedDict()
            summary[key]['output_shape'] = shape_str(outputs)
            params = 0
            summary[key]['trainable'] = 0
            summary[key]['shared'] = 0
            for p in block.params.values():
                params += p.data().size
                summary[key]['trainable'] += 0 if p.grad_req == 'null' else p.data().size
                if p in seen:
                    summary[key]['shared'] += p.data().size
                else:
                    seen.add(p)
            summary[key]['n_params'] = params
        if not _is_sequential(block):
            hooks.append(block.register_forward_hook(hook))

    summary['Input'] = OrderedDict(output_shape=shape_str(inputs), n_params=0,
                                   trainable=0, shared=0)
    try:
        net.apply(register)
        net(*inputs)
        line_format = '{:>20}  {:>42} {:>15}'
        print('-' * 80)
        print(line_format.format('Layer (type)', 'Output Shape', 'Param #'))
        print('=' * 80)
        total = trainable = shared = 0
        for layer in summary:
            print(line_format.format(layer, str(summary[layer]['output_shape']),
                                     summary[layer]['n_params']))
            total += summary[layer]['n_params']
            trainable += summary[layer]['trainable']
            shared += summary[layer]['shared']
        print('=' * 80)
        print('Parameters in forward computation graph, duplicate included')
        print('   Total params: ' + str(total))
        print('   Trainable params: ' + str(trainable))
        print('   Non-trainable params: ' + str(total - trainable))
        print('Shared params in forward computation graph: ' + str(shared))
        print('Unique parameters in model: ' + str(total - shared))
        print('-' * 80)
    finally:
        for h in hooks:
            h.detach()


def save_structure(net, prefix):
    """``Block.save``: ``prefix-model.json`` (each block's original name, its children's
    names and, for a hybridized block, its traced graph and argument formats) and
    ``prefix-model.params``. Blocks are keyed by class name and creation order, so the
    model must be rebuilt in the same order to load it."""
    model = {}

    def walk(blk, index, structure):
        mdl = {'orig_name': blk.name}
        structure[type(blk).__name__.lower() + str(index[0])] = mdl
        if hasattr(blk, '_cached_graph'):         # a HybridBlock
            if blk._cached_graph:
                mdl['in_format'] = blk._in_format
                mdl['out_format'] = blk._out_format
                syms, out = blk._cached_graph
                mdl['inputs'] = [sym.tojson() for sym in syms]
                mdl['symbol'] = out.tojson()
                mdl['hybridized'] = True
            else:
                mdl['hybridized'] = False
        children = {}
        mdl['children'] = children
        for ch_name, child in blk._children.items():
            index[0] += 1
            children[child.name] = ch_name
            walk(child, index, mdl)
    walk(net, [0], model)
    with open(prefix + '-model.json', 'w') as fp:
        json.dump(model, fp)
    net.save_parameters(prefix + '-model.params')


def load_structure(net, prefix):
    """``Block.load``: restore the names (and traced graphs) :func:`save_structure` wrote
    onto a model built again in the same order, then its parameters."""
    with open(prefix + '-model.json') as fp:
        model = json.load(fp)

    def walk(blk, index, structure):
        key = type(blk).__name__.lower() + str(index[0])
        if key not in structure:
            raise GluonArgumentError('load: %s-model.json has no block %r here (it has %s); '
                                     'build the model in the order it was saved'
                                     % (prefix, key, sorted(structure)))
        mdl = structure[key]
        blk._name = mdl['orig_name']
        if hasattr(blk, '_cached_graph') and mdl.get('hybridized'):
            blk._in_format = mdl['in_format']
            blk._out_format = mdl['out_format']
            blk._cached_graph = ([load_json(s) for s in mdl['inputs']],
                                 load_json(mdl['symbol']))
            blk._active = True
        for p in list(blk.params.keys()):
            param = blk.params._params.pop(p)
            blk.params._params[blk.name + '_' + p[len(blk.params._prefix):]] = param
        for child in blk._children.values():
            index[0] += 1
            walk(child, index, mdl)
        children = mdl['children']
        for ch_name in list(blk._children.keys()):
            child = blk._children.pop(ch_name)
            blk._children[children[child.name]] = child
    walk(net, [0], model)
    net.load_parameters(prefix + '-model.params')
