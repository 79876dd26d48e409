"""``_contrib_calibrate_entropy``: the KL-divergence (entropy) threshold search of MXNet's int8
calibration (``mx.contrib.quantization``), as an operator over a histogram.

As MXNet 1.9.1: ``hist`` (N,) counts over ``hist_edges`` (N + 1,), symmetric about the
middle bin; for every half width i from ``num_quantized_bins // 2`` to ``N // 2`` the
reference distribution p is the slice of 2 i + 1 bins around the middle with the outliers
added to its end bins, the candidate q is that slice merged into ``num_quantized_bins`` bins
(the last takes the remainder) and spread evenly back over the nonzero bins of p; both are
smoothed (zeros get 1e-4, the mass taken evenly from the nonzero bins) and compared by KL
divergence. Outputs (each (1,), float32): the threshold ``hist_edges[N // 2 + i + 1]`` of the
smallest divergence and that divergence (named ``threshold`` and ``divergence``). The
divergence matches MXNet's to about 1e-3 relative, 1e-2 for histograms with many empty bins
(MXNet's float32 arithmetic and order differ); the threshold exactly. No gradient.
"""
import numpy as np

from symgraph.opdef import MXNetError, Operator, Param, ShapeError, register


def _smooth(p, eps=0.0001):
    zero = p == 0
    n_zero = int(zero.sum())
    n_nonzero = p.size - n_zero
    if n_nonzero == 0:
        return None
    eps1 = eps * n_zero / n_nonzero
    if eps1 >= 1.0:
        return None
    return p + eps * zero - eps1 * ~zero


def _divergence(sliced, p, nq):
    m = sliced.size // nq
    nonzero = p != 0
    merged = sliced[:nq * m].reshape(nq, m).sum(axis=1)
    merged[-1] += sliced[nq * m:].sum()
    counts = nonzero[:nq * m].reshape(nq, m).sum(axis=1)
    counts[-1] += nonzero[nq * m:].sum()
    with np.errstate(divide='ignore', invalid='ignore'):
        per = np.where(counts > 0, merged / np.maximum(counts, 1), 0.0)
    owner = np.minimum(np.arange(sliced.size) // m, nq - 1)
    q = np.where(nonzero, per[owner], 0.0)
    ps, qs = _smooth(p), _smooth(q)
    if ps is None or qs is None:
        return np.inf
    ps, qs = ps / ps.sum(), qs / qs.sum()
    keep = ps > 0
    return float((ps[keep] * np.log(ps[keep] / qs[keep])).sum())


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
        if h is not None and h[0] // 2 < self.num_quantized_bins // 2:
            raise ShapeError('%s: hist %s has fewer bins than num_quantized_bins=%d'
                             % (self.name, tuple(h), self.num_quantized_bins))
        return [h, e], [(1,), (1,)], []

    def infer_type(self, in_types):
        f = np.dtype(np.float32)
        return list(in_types), [f, f], []

    def forward(self, xp, inputs, aux, is_train):
        hist = np.asarray(inputs[0].get() if hasattr(inputs[0], 'get') else inputs[0],
                          np.float64)
        edges = np.asarray(inputs[1].get() if hasattr(inputs[1], 'get') else inputs[1])
        n, nq = hist.size, self.num_quantized_bins
        zero, half = n // 2, nq // 2
        cumsum = np.concatenate([[0.0], np.cumsum(hist)])
        best, best_i = np.inf, half
        for i in range(half, zero + 1):
            lo, hi = zero - i, zero + i + 1
            sliced = hist[lo:hi]
            p = sliced.copy()
            p[0] += cumsum[lo]
            p[-1] += cumsum[n] - cumsum[hi]
            d = _divergence(sliced, p, nq)
            if d < best:
                best, best_i = d, i
        thr = np.float32(edges[zero + best_i + 1])
        return [xp.asarray(np.array([thr], np.float32)),
                xp.asarray(np.array([best], np.float32))]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        return [None, None]
