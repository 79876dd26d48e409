"""How a kvstore sums the values pushed from several devices, and its 2-bit gradient
compression (MXNet's ``src/kvstore/comm.h`` and ``gradient_compression``).

* ``'local'`` stores (MXNet's CommCPU) copy every value to the CPU and add them in MXNet's
  order: ``v0 += v1 + v2 + v3 + v4``, then the next four, so float32 sums agree bit for bit.
* ``'device'`` stores (MXNet's CommDevice) sum with symgraph's ring all-reduce, which
  leaves the sum on every device; the rounding of three or more float values may differ
  from MXNet's in the last bit.
* 2-bit compression (``{'type': '2bit', 'threshold': t}``): each device keeps a residual
  per key; ``residual += grad``, then every element whose residual reaches ``t`` sends
  ``t`` (and ``residual -= t``), every element at or below ``-t`` sends ``-t`` (and
  ``residual += t``), every other element sends 0. The store sums what was sent. Only the
  values, not the 2-bit packing, are reproduced: nothing crosses a wire here.
"""
import warnings

import numpy

from ..context import cpu
from ..ndarray import NDArray
# the ring all-reduce: imported here and nowhere else in the kvstore
from ..dist import allreduce as ring_allreduce
from ..base import ArgumentError, ArgumentTypeError

__all__ = ['reduce_cpu', 'reduce_devices', 'allreduce_inplace', 'TwoBitCompression',
           'make_compression']

_RING_DTYPES = (numpy.float16, numpy.float32, numpy.float64)


def _host(data):
    return data if isinstance(data, numpy.ndarray) else data.get()


def reduce_cpu(datas, dtype):
    """The sum of ``datas`` (arrays of one shape, any devices) on the CPU, in MXNet's
    CommCPU order (``ReduceSumCPU``)."""
    total = numpy.array(_host(datas[0]), dtype=dtype, copy=True)
    rest = [numpy.asarray(_host(d), dtype=dtype) for d in datas[1:]]
    for i in range(0, len(rest), 4):
        group = rest[i]
        for d in rest[i + 1:i + 4]:
            group = group + d
        total += group
    return total


def allreduce_inplace(arrays):
    """Sum NDArrays of one shape, one per device, leaving the sum in each (the ring for
    float arrays; a plain sum copied back for the rest)."""
    datas = [a._data for a in arrays]
    one_kind = len({isinstance(d, numpy.ndarray) for d in datas}) == 1
    if one_kind and arrays[0].dtype in _RING_DTYPES and \
            all(d.flags.c_contiguous for d in datas):
        ring_allreduce(datas)
        return arrays
    # CPU and GPU arrays together (or other dtypes): summed on the host
    total = reduce_cpu(datas, numpy.dtype(arrays[0].dtype))
    for a in arrays:
        a[:] = total
    return arrays


def reduce_devices(arrays):
    """The sum of NDArrays (one per device) as a new NDArray on the first one's device,
    leaving the inputs untouched."""
    copies = []
    for a in arrays:
        with a.context.device_scope():
            copies.append(NDArray(a._data.copy(), a.context))
    allreduce_inplace(copies)
    return copies[0]


class TwoBitCompression(object):
    """MXNet's 2-bit gradient compression, with one residual per (key, device slot).

    Parameters
    ----------
    threshold : float
        The value sent for an element whose residual reaches it (> 0).
    """

    type = '2bit'

    def __init__(self, threshold=0.5):
        self.threshold = threshold
        self._residuals = {}

    def compress(self, key, slot, grad):
        """What device ``slot`` sends for ``grad`` under ``key``: an array of
        ``-threshold``, 0 and ``threshold`` (updating that slot's residual)."""
        data = grad._data
        with grad.context.device_scope():
            xp = grad.context.xp
            res = self._residuals.get((key, slot))
            if res is None or res.shape != data.shape or res.dtype != data.dtype:
                res = xp.zeros(data.shape, data.dtype)
                self._residuals[(key, slot)] = res
            t = data.dtype.type(self.threshold)
            res += data
            pos = res >= t
            neg = (res <= -t) & ~pos
            sent = xp.where(pos, t, xp.where(neg, -t, data.dtype.type(0)))
            res -= sent
            return NDArray(sent, grad.context)


def make_compression(params):
    """The compression of ``set_gradient_compression``'s dict, validated."""
    if not isinstance(params, dict):
        raise ArgumentTypeError('compression_params must be a dict such as {"type": "2bit", '
                                '"threshold": 0.5}, got %s' % type(params).__name__)
    if 'type' not in params:
        raise ArgumentError('compression_params needs a "type" ("2bit"); got %r' % (params,))
    kind = str(params['type'])
    if kind != '2bit':
        raise ArgumentError('Unknown type for gradient compression %s (supported: 2bit)' % kind)
    unknown = sorted(set(params) - {'type', 'threshold'})
    if unknown:
        # MXNet accepts and ignores them
        warnings.warn('gradient compression: unknown parameter(s) %s ignored; 2bit takes '
                      '"threshold"' % ', '.join(map(repr, unknown)), stacklevel=3)
    try:
        threshold = float(params.get('threshold', 0.5))
    except (TypeError, ValueError):
        raise ArgumentError('gradient compression threshold must be a number, got %r'
                            % (params['threshold'],)) from None
    if not threshold > 0:
        raise ArgumentError('gradient compression threshold must be greater than 0, got %r'
                            % (params.get('threshold'),))
    return TwoBitCompression(threshold)


#: where 'local' stores keep their values
STORE_CONTEXT = cpu(0)
