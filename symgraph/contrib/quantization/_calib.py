"""Calibration of MXNet 1.9.1's int8 flow (python/mxnet/contrib/quantization.py): the layer
output collectors (min/max, or histograms combined across batches as MXNet combines them),
the KL-divergence thresholds (``_contrib_calibrate_entropy``, MXNet's own kernel) and the
run of the float32 model that feeds them.

MXNet taps the outputs with an executor monitor; here the outputs to calibrate are made
heads of the float graph (``get_internals``) and one executor computes them per batch:
the same arrays, without a callback per node.
"""
import numpy as np

from ... import ndarray
from ...ndarray import NDArray
from ...symbol import Group

__all__ = ['LayerHistogramCollector', 'LayerOutputMinMaxCollector', 'collect_statistics',
           'combine_histogram', 'get_optimal_threshold', 'get_optimal_thresholds',
           'smooth_distribution']


def combine_histogram(old_hist, arr, new_min, new_max, new_th):
    """``old_hist`` (hist, edges, min, max, threshold) with ``arr`` added, widened
    symmetrically by whole bins when ``new_th`` exceeds its threshold (MXNet's rule)."""
    (old_hist, old_hist_edges, old_min, old_max, old_th) = old_hist
    if new_th <= old_th:
        hist, _ = np.histogram(arr, bins=len(old_hist), range=(-old_th, old_th))
        return (old_hist + hist, old_hist_edges, min(old_min, new_min),
                max(old_max, new_max), old_th)
    old_num_bins = len(old_hist)
    old_step = 2 * old_th / old_num_bins
    half_increased_bins = int((new_th - old_th) // old_step + 1)
    new_num_bins = half_increased_bins * 2 + old_num_bins
    new_th = half_increased_bins * old_step + old_th
    hist, hist_edges = np.histogram(arr, bins=new_num_bins, range=(-new_th, new_th))
    hist[half_increased_bins:new_num_bins - half_increased_bins] += old_hist
    return (hist, hist_edges, min(old_min, new_min), max(old_max, new_max), new_th)


def _numpy(arr):
    return arr.asnumpy() if isinstance(arr, NDArray) else np.asarray(arr)


class LayerHistogramCollector:
    """Histograms (8001 bins by default) of the named layer outputs, by name."""

    def __init__(self, num_bins=8001, include_layer=None, logger=None):
        self.hist_dict = {}
        self.num_bins = num_bins
        self.include_layer = include_layer
        self.logger = logger

    def collect(self, name, arr):
        """Add ``arr`` (NDArray or NumPy) to the histogram of layer ``name``."""
        if self.include_layer is not None and name not in self.include_layer:
            return
        arr = _numpy(arr)
        if self.logger:
            self.logger.debug('Collecting layer %s histogram of shape %s' % (name, arr.shape))
        min_range, max_range = np.min(arr), np.max(arr)
        th = max(abs(min_range), abs(max_range))
        if name in self.hist_dict:
            self.hist_dict[name] = combine_histogram(self.hist_dict[name], arr, min_range,
                                                     max_range, th)
        else:
            hist, hist_edges = np.histogram(arr, bins=self.num_bins, range=(-th, th))
            self.hist_dict[name] = (hist, hist_edges, min_range, max_range, th)


class LayerOutputMinMaxCollector:
    """The smallest and largest value of each named layer output."""

    def __init__(self, quantized_dtype, include_layer=None, logger=None):
        self.min_max_dict = {}
        self.quantized_dtype = quantized_dtype
        self.include_layer = include_layer
        self.logger = logger

    def collect(self, name, arr):
        """Widen layer ``name``'s (min, max) by ``arr``."""
        if self.include_layer is not None and name not in self.include_layer:
            return
        arr = _numpy(arr)
        min_range, max_range = float(np.min(arr)), float(np.max(arr))
        if name in self.min_max_dict:
            lo, hi = self.min_max_dict[name]
            self.min_max_dict[name] = (min(lo, min_range), max(hi, max_range))
        else:
            self.min_max_dict[name] = (min_range, max_range)
        if self.logger:
            self.logger.debug('Collecting layer %s min_range=%f, max_range=%f'
                              % (name, min_range, max_range))


def smooth_distribution(p, eps=0.0001):
    """``p`` with its zeros raised to ``eps`` and that mass taken evenly from the nonzero
    entries (ValueError when all are zero)."""
    is_zeros = (p == 0).astype(np.float32)
    is_nonzeros = (p != 0).astype(np.float32)
    n_zeros = is_zeros.sum()
    n_nonzeros = p.size - n_zeros
    if not n_nonzeros:
        raise ValueError('The discrete probability distribution is malformed. All entries '
                         'are 0.')
    eps1 = eps * float(n_zeros) / float(n_nonzeros)
    if eps1 >= 1.0:
        raise ValueError('n_zeros=%d, n_nonzeros=%d, eps1=%f' % (n_zeros, n_nonzeros, eps1))
    hist = p.astype(np.float32)
    hist += eps * is_zeros + (-eps1) * is_nonzeros
    if (hist <= 0).sum() != 0:
        raise ValueError('the smoothed distribution has entries <= 0')
    return hist


def get_optimal_threshold(hist_data, quantized_dtype, num_quantized_bins=255):
    """``(min, max, threshold, divergence)`` of one layer's histogram data (KL divergence,
    ``_contrib_calibrate_entropy``); a layer without negatives quantized to uint8/auto gets
    twice the bins."""
    (hist, hist_edges, min_val, max_val, _) = hist_data
    num_bins = len(hist)
    if num_bins % 2 != 1:
        raise ValueError('the histogram must have an odd number of bins, got %d' % num_bins)
    if min_val >= 0 and quantized_dtype in ['auto', 'uint8']:
        num_quantized_bins = num_quantized_bins * 2 + 1
    hist = ndarray.array(hist)
    hist_edges = ndarray.array(hist_edges)
    threshold, divergence = ndarray.contrib.calibrate_entropy(
        hist=hist, hist_edges=hist_edges, num_quantized_bins=num_quantized_bins)
    return min_val, max_val, threshold.asnumpy(), divergence.asnumpy()


def get_optimal_thresholds(hist_dict, quantized_dtype, num_quantized_bins=255, logger=None):
    """``{layer: (min, max)}`` thresholds of every histogram (emptying ``hist_dict`` as
    MXNet does)."""
    if not isinstance(hist_dict, dict):
        raise TypeError('hist_dict must be a dict, got %s' % type(hist_dict).__name__)
    if logger is not None:
        logger.info('Calculating optimal thresholds for quantization using KL divergence'
                    ' with num_quantized_bins=%d' % num_quantized_bins)
    th_dict = {}
    for name in list(hist_dict.keys()):
        min_val, max_val, th, divergence = get_optimal_threshold(
            hist_dict[name], quantized_dtype, num_quantized_bins=num_quantized_bins)
        th = float(np.asarray(th).reshape(-1)[0])
        if min_val >= 0 and quantized_dtype in ['auto', 'uint8']:
            th_dict[name] = (0, th)
        else:
            th_dict[name] = (-th, th)
        del hist_dict[name]
        if logger:
            logger.debug('layer=%s, min_val=%f, max_val=%f, th=%f, divergence=%f'
                         % (name, min_val, max_val, th, np.asarray(divergence).reshape(-1)[0]))
    return th_dict


def _calib_heads(sym, names):
    """The entries of ``sym``'s internals whose output names are in ``names``."""
    internals = sym.get_internals()
    outputs = internals.list_outputs()
    wanted = [i for i, n in enumerate(outputs) if n in set(names)]
    return [internals[i] for i in wanted], [outputs[i] for i in wanted]


def collect_statistics(sym, arg_params, aux_params, data, collector, data_names, ctx,
                       max_num_examples=None, logger=None):
    """Run the float32 ``sym`` on the batches of ``data`` (a DataIter) until
    ``max_num_examples`` examples, handing ``collector`` every layer output it calibrates
    (its ``include_layer``: all outputs where that is None). Returns the examples seen."""
    include = collector.include_layer
    if include is None:
        include = sym.get_internals().list_outputs()
    heads, names = _calib_heads(sym, include)
    if not heads:
        return 0
    group = Group(heads)
    # (descriptions may be DataDesc or plain (name, shape) pairs, as MXNet accepts)
    shapes = {d[0]: tuple(d[1]) for d in data.provide_data}
    label_shapes = {d[0]: tuple(d[1]) for d in (getattr(data, 'provide_label', None) or [])}
    args_needed = group.list_arguments()
    shapes.update({k: v for k, v in label_shapes.items() if k in args_needed})
    exe = group.simple_bind(ctx, grad_req='null',
                            **{k: v for k, v in shapes.items() if k in args_needed})
    for k, v in arg_params.items():
        if k in exe.arg_dict:
            exe.arg_dict[k][:] = v
    for k, v in aux_params.items():
        if k in exe.aux_dict:
            exe.aux_dict[k][:] = v
    names_in = [d[0] for d in data.provide_data]
    num_batches = num_examples = 0
    for batch in data:
        feed = dict(zip(names_in, batch.data))
        if batch.label and getattr(data, 'provide_label', None):
            feed.update(zip([d[0] for d in data.provide_label], batch.label))
        for k, v in feed.items():
            if k in exe.arg_dict:
                exe.arg_dict[k][:] = v
        outs = exe.forward(is_train=False)
        for name, out in zip(names, outs):
            collector.collect(name, out)
        num_batches += 1
        num_examples += data.batch_size
        if max_num_examples is not None and num_examples >= max_num_examples:
            break
    if logger is not None:
        logger.info('Collected statistics from %d batches with batch_size=%d'
                    % (num_batches, data.batch_size))
    return num_examples
