"""``mx.contrib.quantization`` (``mx.contrib.quant``): int8 models from float32 ones, after
MXNet 1.9.1's python/mxnet/contrib/quantization.py.

:func:`quantize_model` rewrites the graph (``_graph.quantize_symbol``: the same nodes and
names as MXNet's C++ pass), calibrates the ranges of the requantize and quantize nodes on
data (``calib_mode='naive'``: the layers' min and max; ``'entropy'``: MXNet's KL-divergence
thresholds over 8001-bin histograms; ``'none'``: ranges found at run time) and quantizes
the weights offline. :func:`quantize_model_mkldnn` first fuses the graph as MXNet's oneDNN
backend does (``Symbol.get_backend_symbol('MKLDNN_QUANTIZE')``). :func:`quantize_net` /
:func:`quantize_net_v2` do the same for a Gluon HybridBlock and return a SymbolBlock.
"""
import logging
import os
import tempfile
import warnings

from ... import ndarray
from ...context import Context, cpu
from ...io import DataBatch, DataDesc, DataIter
from ... import symbol as _symbol
from ._graph import QUANTIZE_RULES, quantize_symbol, set_calib_table
from ._mkldnn import BACKENDS, backend_symbol
from ...symbol import symbol as _symbol_module
from ._calib import (LayerHistogramCollector, LayerOutputMinMaxCollector, collect_statistics,
                     combine_histogram, get_optimal_threshold, get_optimal_thresholds,
                     smooth_distribution)

__all__ = ['quantize_model', 'quantize_model_mkldnn', 'quantize_graph', 'calib_graph',
           'quantize_net', 'quantize_net_v2', 'combine_histogram', 'QUANTIZE_RULES']

for _name in BACKENDS:
    _symbol_module.BACKEND_PASSES[_name] = backend_symbol

# MXNet's private names, which its tests call
_LayerHistogramCollector = LayerHistogramCollector
_LayerOutputMinMaxCollector = LayerOutputMinMaxCollector
_smooth_distribution = smooth_distribution
_get_optimal_threshold = get_optimal_threshold
_get_optimal_thresholds = get_optimal_thresholds


def _backend_symbol(sym, backend):
    """``sym.get_backend_symbol(backend)``: the oneDNN fusion MXNet runs around its int8
    pass."""
    return sym.get_backend_symbol(backend)


def _maybe_fused(sym):
    """The oneDNN-fused graph (MXNet fuses on the CPU)."""
    return sym.get_backend_symbol('MKLDNN_QUANTIZE')


def _quantize_params(qsym, params, th_dict):
    """The parameters of ``qsym``: ``<name>weight_quantize``/``bias_quantize`` quantized to
    int8 over the parameter's own min and max (with ``_min``/``_max``), the others as
    given, and ``<output>_min``/``_max`` arguments from ``th_dict``."""
    quantized = {}
    for name in qsym.list_arguments():
        if name.endswith(('weight_quantize', 'bias_quantize')):
            param = params[name[:-len('_quantize')]]
            val, vmin, vmax = ndarray.contrib.quantize(
                data=param, min_range=ndarray.min(param), max_range=ndarray.max(param),
                out_type='int8')
            quantized[name] = val
            quantized[name + '_min'] = vmin
            quantized[name + '_max'] = vmax
        elif name in params:
            quantized[name] = params[name]
        elif name.endswith('_min'):
            output = name[:-len('_min')]
            if output in th_dict:
                quantized[name] = ndarray.array([th_dict[output][0]])
        elif name.endswith('_max'):
            output = name[:-len('_min')]     # (sic: MXNet strips four characters here too)
            if output in th_dict:
                quantized[name] = ndarray.array([th_dict[output][1]])
    return quantized


def _quantize_symbol(sym, ctx=None, excluded_symbols=None, excluded_operators=None,
                     offline_params=None, quantized_dtype='int8', quantize_mode='smart',
                     quantize_granularity='tensor-wise'):
    """``(quantized symbol, names of the layer outputs to calibrate)``."""
    for what, v in (('excluded_symbols', excluded_symbols),
                    ('excluded_operators', excluded_operators)):
        if v is not None and not isinstance(v, list):
            raise TypeError('%s must be a list of strings, got %s' % (what, type(v).__name__))
    return quantize_symbol(sym, excluded_symbols or (), excluded_operators or (),
                           offline_params or (), quantized_dtype, quantize_mode,
                           quantize_granularity)


def _calibrate_quantized_sym(qsym, th_dict):
    """``qsym`` with the thresholds of ``th_dict`` (output name -> (min, max)) set on its
    quantize, requantize and self-calibrating quantized nodes."""
    if not th_dict:
        return qsym
    return set_calib_table(qsym, th_dict)


def _check_names(what, names):
    if names is None:
        return []
    if not isinstance(names, list):
        raise ValueError('%s must be a list of strings representing the names of the '
                         'symbols that will not be quantized, while received type %s'
                         % (what, type(names)))
    return names


def _check_dtype(quantized_dtype, quantize_granularity):
    if quantized_dtype not in ('int8', 'uint8', 'auto'):
        raise ValueError('unknown quantized_dtype %s received, expected `int8`, `uint8` or '
                         '`auto`' % quantized_dtype)
    if quantize_granularity not in ('tensor-wise', 'channel-wise'):
        raise ValueError('unkonwn quantize_granularity %s received, expected `tensor-wise` '
                         'or `channel-wise`.' % quantize_granularity)


def _make_collector(calib_mode, quantized_dtype, calib_layer, logger, custom=None):
    if calib_mode == 'entropy':
        return LayerHistogramCollector(include_layer=calib_layer, logger=logger)
    if calib_mode == 'naive':
        return LayerOutputMinMaxCollector(quantized_dtype=quantized_dtype,
                                          include_layer=calib_layer, logger=logger)
    if calib_mode == 'customize' and custom is not None:
        return custom
    raise ValueError('unknown calibration mode %s received, expected `none`, `naive`, '
                     '`entropy` or `customize`' % calib_mode)


def _thresholds(collector, calib_mode, quantized_dtype, logger):
    if calib_mode == 'entropy':
        return get_optimal_thresholds(collector.hist_dict, quantized_dtype, logger=logger)
    if calib_mode in ('naive', 'customize'):
        return collector.min_max_dict
    raise ValueError('unknown calibration mode %s received, expected `none`, `naive`, '
                     '`entropy` or `customize`' % calib_mode)


def quantize_model(sym, arg_params, aux_params, data_names=('data',),
                   label_names=('softmax_label',), ctx=cpu(), excluded_sym_names=None,
                   excluded_op_names=None, calib_mode='entropy', calib_data=None,
                   num_calib_examples=None, quantized_dtype='int8', quantize_mode='smart',
                   quantize_granularity='tensor-wise', logger=None):
    """A quantized model ``(qsym, qarg_params, aux_params)`` from a float32 one, calibrated
    on ``calib_data`` (a DataIter) unless ``calib_mode='none'``. MXNet 1.9.1's arguments
    and defaults (see its docstring); returns the graph MXNet's pass writes."""
    excluded_sym_names = _check_names('excluded_sym_names', excluded_sym_names)
    excluded_op_names = _check_names('excluded_op_names', excluded_op_names)
    if logger:
        logger.info('Quantizing symbol')
    _check_dtype(quantized_dtype, quantize_granularity)
    qsym, calib_layer = _quantize_symbol(
        sym, ctx, excluded_symbols=excluded_sym_names, excluded_operators=excluded_op_names,
        offline_params=list(arg_params.keys()), quantized_dtype=quantized_dtype,
        quantize_mode=quantize_mode, quantize_granularity=quantize_granularity)
    th_dict = {}
    if calib_mode is not None and calib_mode != 'none':
        if not isinstance(ctx, Context):
            raise ValueError('currently only supports single ctx, while received %s'
                             % str(ctx))
        if calib_data is None:
            raise ValueError('calib_data must be provided when calib_mode=%s' % calib_mode)
        if not isinstance(calib_data, DataIter):
            raise ValueError('calib_data must be of DataIter type when calib_mode=%s, while '
                             'received type %s' % (calib_mode, str(type(calib_data))))
        collector = _make_collector(calib_mode, quantized_dtype, calib_layer, logger)
        num = collect_statistics(sym, arg_params, aux_params, calib_data, collector,
                                 data_names, ctx, num_calib_examples, logger)
        if logger:
            logger.info('Collected layer outputs from FP32 model using %d examples' % num)
        th_dict = _thresholds(collector, calib_mode, quantized_dtype, logger)
        qsym = _calibrate_quantized_sym(qsym, th_dict)
    if logger:
        logger.info('Quantizing parameters')
    return qsym, _quantize_params(qsym, arg_params, th_dict), aux_params


def quantize_model_mkldnn(sym, arg_params, aux_params, data_names=('data',),
                          label_names=('softmax_label',), ctx=cpu(), excluded_sym_names=None,
                          excluded_op_names=None, calib_mode='entropy', calib_data=None,
                          num_calib_examples=None, quantized_dtype='int8',
                          quantize_mode='smart', quantize_granularity='tensor-wise',
                          logger=None):
    """:func:`quantize_model` between two runs of the oneDNN fusion
    (``get_backend_symbol('MKLDNN_QUANTIZE')``), as MXNet's CPU flow."""
    if not isinstance(ctx, Context):
        raise ValueError('currently only supports single ctx, while received %s' % str(ctx))
    if ctx.device_type != 'cpu':
        raise ValueError('quantize_model_mkldnn only support Intel cpu platform with MKL-DNN '
                         'Backend')
    sym = _backend_symbol(sym, 'MKLDNN_QUANTIZE')
    qsym, qarg_params, aux_params = quantize_model(
        sym=sym, arg_params=arg_params, aux_params=aux_params, data_names=data_names,
        label_names=label_names, ctx=ctx, excluded_sym_names=excluded_sym_names,
        excluded_op_names=excluded_op_names, calib_mode=calib_mode, calib_data=calib_data,
        num_calib_examples=num_calib_examples, quantized_dtype=quantized_dtype,
        quantize_mode=quantize_mode, quantize_granularity=quantize_granularity,
        logger=logger)
    return _backend_symbol(qsym, 'MKLDNN_QUANTIZE'), qarg_params, aux_params


def quantize_graph(sym, arg_params, aux_params, ctx=cpu(), excluded_sym_names=None,
                   excluded_op_names=None, calib_mode='entropy', quantized_dtype='int8',
                   quantize_mode='full', quantize_granularity='tensor-wise',
                   LayerOutputCollector=None, logger=None):
    """``(qsym, qarg_params, aux_params, collector)``: the uncalibrated quantized model and
    a collector to fill (``collector.collect(name, array)``) before :func:`calib_graph`."""
    excluded_sym_names = _check_names('excluded_sym_names', excluded_sym_names)
    if not isinstance(ctx, Context):
        raise ValueError('currently only supports single ctx, while received %s' % str(ctx))
    _check_dtype(quantized_dtype, quantize_granularity)
    qsym, calib_layer = _quantize_symbol(
        sym, ctx, excluded_symbols=excluded_sym_names, excluded_operators=excluded_op_names,
        offline_params=list(arg_params.keys()), quantized_dtype=quantized_dtype,
        quantize_mode=quantize_mode, quantize_granularity=quantize_granularity)
    collector = None
    if calib_mode is not None and calib_mode != 'none':
        collector = _make_collector(calib_mode, quantized_dtype, calib_layer, logger,
                                    LayerOutputCollector)
    return qsym, _quantize_params(qsym, arg_params, {}), aux_params, collector


def calib_graph(qsym, arg_params, aux_params, collector, calib_mode='entropy',
                quantized_dtype='int8', logger=logging):
    """``(calibrated qsym, qarg_params, aux_params)`` from a filled collector."""
    if calib_mode is None or calib_mode == 'none':
        raise ValueError('please set calibration mode to naive or entropy.')
    th_dict = _thresholds(collector, calib_mode, quantized_dtype, logger)
    qsym = _calibrate_quantized_sym(qsym, th_dict)
    return qsym, _quantize_params(qsym, arg_params, th_dict), aux_params


class _DataIterWrapper(DataIter):
    """A DataIter over any iterable of batches (a Gluon DataLoader), as MXNet's."""

    def __init__(self, calib_data):
        super().__init__()
        self._data = calib_data
        try:
            first = next(iter(calib_data))
        except TypeError as e:
            raise TypeError('calib_data is not a valid iterator. {}'.format(str(e)))
        first = list(first) if isinstance(first, (list, tuple)) else [first]
        self.provide_data = [DataDesc(name='data', shape=first[0].shape)]
        self.provide_data += [DataDesc(name='data{}'.format(i), shape=x.shape)
                              for i, x in enumerate(first[1:])]
        if len(first) >= 3:
            self.provide_data = [DataDesc(name='data{}'.format(i), shape=x.shape)
                                 for i, x in enumerate(first)]
        self.batch_size = first[0].shape[0]
        self.reset()

    def reset(self):
        self._iter = iter(self._data)

    def next(self):
        batch = next(self._iter)
        batch = list(batch) if isinstance(batch, (list, tuple)) else [batch]
        return DataBatch(data=batch)


def quantize_net_v2(network, quantized_dtype='auto', quantize_mode='full',
                    quantize_granularity='tensor-wise', exclude_layers=None,
                    exclude_layers_match=None, exclude_operators=None, calib_data=None,
                    data_shapes=None, calib_mode='none', num_calib_examples=None, ctx=cpu(),
                    LayerOutputCollector=None, logger=None):
    """A quantized SymbolBlock from a Gluon HybridBlock (MXNet 1.9.1's quantize_net_v2)."""
    from ...gluon import SymbolBlock
    from ... import model
    network.hybridize()
    if calib_data is not None:
        if isinstance(calib_data, DataIter):
            dshapes = calib_data.provide_data
        else:
            calib_data = _DataIterWrapper(calib_data)
            dshapes = calib_data.provide_data
        if not data_shapes:
            data_shapes = dshapes
    if not data_shapes:
        raise ValueError('data_shapes required')
    data_shapes = [d if isinstance(d, DataDesc) else DataDesc(*d) for d in data_shapes]
    data_nd = [ndarray.zeros(d.shape) for d in data_shapes]
    while True:
        try:
            network(*data_nd)
        except TypeError:
            del data_nd[-1]
            del data_shapes[-1]
            continue
        break
    with tempfile.TemporaryDirectory() as tmp:
        prefix = os.path.join(tmp, 'tmp')
        network.export(prefix, epoch=0)
        symnet, args, auxs = model.load_checkpoint(prefix, 0)
    exclude_layers = list(exclude_layers or [])
    for match in exclude_layers_match or []:
        for layer in symnet.get_internals():
            if layer.name.find(match) != -1:
                exclude_layers.append(layer.name)
    if ctx == cpu():
        symnet = _maybe_fused(symnet)
    qsym, qarg_params, aux_params, collector = quantize_graph(
        sym=symnet, arg_params=args, aux_params=auxs, ctx=ctx,
        excluded_sym_names=exclude_layers, excluded_op_names=exclude_operators,
        calib_mode=calib_mode, quantized_dtype=quantized_dtype, quantize_mode=quantize_mode,
        quantize_granularity=quantize_granularity, LayerOutputCollector=LayerOutputCollector,
        logger=logger)
    data_names = [d.name for d in data_shapes]
    if calib_mode is not None and calib_mode != 'none':
        if calib_data is None:
            raise ValueError('calib_data must be provided when calib_mode=%s' % calib_mode)
        collect_statistics(symnet, args, auxs, calib_data, collector, data_names, ctx,
                           num_calib_examples, logger)
        qsym, qarg_params, aux_params = calib_graph(
            qsym=qsym, arg_params=args, aux_params=auxs, collector=collector,
            calib_mode=calib_mode, quantized_dtype=quantized_dtype, logger=logger)
    if ctx == cpu():
        qsym = _maybe_fused(qsym)
    net = SymbolBlock(qsym, [_symbol.var(n) for n in data_names])
    params = net.collect_params()
    for k, v in list(qarg_params.items()) + list(aux_params.items()):
        if k in params:
            params[k]._load_init(v, ctx, cast_dtype=True, dtype_source='saved') \
                if hasattr(params[k], '_load_init') else params[k].set_data(v)
    return net


def quantize_net(network, quantized_dtype='auto', quantize_mode='full', exclude_layers=None,
                 exclude_layers_match=None, exclude_operators=None, calib_data=None,
                 data_shapes=None, calib_mode='none', num_calib_examples=None, ctx=cpu(),
                 logger=None):
    """:func:`quantize_net_v2` with tensor-wise granularity (MXNet warns that it goes)."""
    warnings.warn('WARNING: This will be deprecated after MXNet 2.0, please use '
                  'quantize_net_v2.')
    return quantize_net_v2(network=network, quantized_dtype=quantized_dtype,
                           quantize_mode=quantize_mode, quantize_granularity='tensor-wise',
                           exclude_layers=exclude_layers,
                           exclude_layers_match=exclude_layers_match,
                           exclude_operators=exclude_operators, calib_data=calib_data,
                           data_shapes=data_shapes, calib_mode=calib_mode,
                           num_calib_examples=num_calib_examples, ctx=ctx, logger=logger)
