"""``_contrib_calibrate_entropy``: the KL-divergence (entropy) threshold search of MXNet's int8
calibration (``mx.contrib.quantization``), as an operator over a histogram.

MXNet 1.9.1's kernel (src/operator/quantization/calibrate.cc), step for step: ``hist`` (N,)
counts over ``hist_edges`` (N + 1,), N odd, symmetric about the middle bin ``N // 2``. For
every half width i from ``num_quantized_bins // 2`` to ``N // 2``, with the slice
``[start, stop) = [N // 2 - i, N // 2 + i + 1)``:

* the reference p is the slice with everything up to and including bin ``start`` summed into
  its first bin and everything from ``stop`` on added to its last (float32 sums, in order);
* the candidate q comes from the slice as whole counts (each count truncated toward zero, as
  MXNet stores them in ``size_t``) with its first bin set to 0 (MXNet's loop gives bin
  ``start`` to p's first bin only); merged into ``num_quantized_bins`` groups of
  ``len // num_quantized_bins`` bins (the last takes the remainder), each group's sum spread
  evenly over the bins where p is nonzero, divided by the number of nonzero counts of that
  group of the slice;
* both are smoothed (zeros get 1e-4, that mass taken evenly from the nonzero bins; q with
  no nonzero bin gives divergence inf), normalised and compared by KL divergence, float32.

Outputs (each (1,), float32): the threshold ``hist_edges[stop]`` of the first smallest
divergence, and that divergence (float32's largest value when every divergence is inf, as
MXNet). Matches MXNet 1.9.1 on its golden cases: the threshold exactly, the divergence to
float32 rounding (``tests/golden/make_calibrate.py``). Even N is refused (MXNet reads past
the end of ``hist_edges``; its Python caller asserts odd N), as are negative or non-finite
counts (MXNet converts them to ``size_t``: undefined). No gradient.
"""
import numpy as np

from symgraph.opdef import MXNetError, Operator, Param, ParameterError, ShapeError, register

_F = np.float32
_EPS = _F(1e-4)


def _sum(a):
    """float32 sum added in order from 0, as ``std::accumulate(..., 0.f)``."""
    return np.cumsum(a, dtype=_F)[-1] if a.size else _F(0)


def _smooth(p):
    """MXNet's SmoothDistribution in float32; None where MXNet returns an empty vector."""
    zero = p == 0
    n_zero = int(zero.sum())
    n_nonzero = p.size - n_zero
    if n_nonzero == 0:
        return None
    eps1 = _EPS * _F(n_zero) / _F(n_nonzero)
    if eps1 >= 1.0:
        return None
    return p + (_EPS * zero.astype(_F) - eps1 * (~zero).astype(_F))


def _entropy(p, q):
    p = p / _sum(p)
    q = q / _sum(q)
    if not ((p > 0).all() and (q > 0).all()):
        # MXNet: CHECK(p[i] > 0 && q[i] > 0) fails
        raise ParameterError('_contrib_calibrate_entropy: a smoothed distribution has a '
                             'bin <= 0 (counts smaller than the smoothing mass); MXNet '
                             'refuses the same histogram')
    return _sum(p * np.log(p / q))


def _divergence(hist, counts, start, stop, nq):
    p = hist[start:stop].copy()
    p[0] = _sum(hist[:start + 1])
    p[-1] = _sum(hist[stop - 1:])
    sliced = counts[start:stop].copy()
    sliced[0] = 0
    size = sliced.size
    m = size // nq
    groups = sliced[:nq * m].reshape(nq, m)
    merged = groups.sum(axis=1).astype(_F)
    merged[-1] += _F(sliced[nq * m:].sum())
    norm = (groups != 0).sum(axis=1)
    norm[-1] += int((sliced[nq * m:] != 0).sum())
    owner = np.minimum(np.arange(size) // m, nq - 1)      # size >= nq, so m >= 1
    per = np.where(norm > 0, merged / np.maximum(norm, 1).astype(_F), _F(0)).astype(_F)
    q = np.where((p != 0) & (norm[owner] > 0), per[owner], _F(0)).astype(_F)
    ps, qs = _smooth(p), _smooth(q)
    if qs is None:
        return _F(np.inf)
    return _entropy(ps, qs)


@register
class CalibrateEntropy(Operator):
    """The int8 calibration threshold of minimal KL divergence for a histogram."""

    name = '_contrib_calibrate_entropy'
    num_quantized_bins = Param(int, 255, doc='number of int8 bins (odd)')
    no_grad = True
    needs_inputs = False

    def check(self):
        if self.num_quantized_bins < 1:
            raise MXNetError('%s: num_quantized_bins must be positive, got %d'
                             % (self.name, self.num_quantized_bins))

    def list_arguments(self):
        return ['hist', 'hist_edges']

    def list_outputs(self):
        return ['threshold', 'divergence']

    def infer_shape(self, in_shapes):
        h, e = in_shapes
        for name, s in (('hist', h), ('hist_edges', e)):
            if s is not None and len(s) != 1:
                raise ShapeError('%s: input %r must be 1-D, got %s' % (self.name, name,
                                                                      tuple(s)))
        if h is not None and e is not None and e[0] != h[0] + 1:
            raise ShapeError('%s: hist_edges %s must have one more entry than hist %s'
                             % (self.name, tuple(e), tuple(h)))
        if h is not None and h[0] % 2 == 0:
            raise ShapeError('%s: hist %s must have an odd number of bins, symmetric about '
                             'the middle one (MXNet reads past the end of hist_edges for an '
                             'even number)' % (self.name, tuple(h)))
        if h is not None and h[0] // 2 < self.num_quantized_bins // 2:
            raise ShapeError('%s: hist %s has fewer bins than num_quantized_bins=%d'
                             % (self.name, tuple(h), self.num_quantized_bins))
        return [h, e], [(1,), (1,)], []

    def infer_type(self, in_types):
        f = np.dtype(np.float32)
        return list(in_types), [f, f], []

    def forward(self, xp, inputs, aux, is_train):
        host = [np.asarray(a.get() if hasattr(a, 'get') else a) for a in inputs]
        hist = host[0].astype(_F)
        edges = host[1].astype(_F)
        if not np.isfinite(hist).all() or (hist < 0).any():
            raise ParameterError('%s: hist must hold finite counts >= 0, got %s'
                                 % (self.name, hist[~(np.isfinite(hist) & (hist >= 0))][:3]))
        counts = np.trunc(hist).astype(np.int64)
        n, nq = hist.size, self.num_quantized_bins
        zero = n // 2
        best, best_i = np.finfo(_F).max, nq // 2
        for i in range(nq // 2, zero + 1):
            d = _divergence(hist, counts, zero - i, zero + i + 1, nq)
            if d < best:
                best, best_i = d, i
        return [xp.asarray(np.array([edges[zero + best_i + 1]], _F)),
                xp.asarray(np.array([best], _F))]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        return [None, None]
