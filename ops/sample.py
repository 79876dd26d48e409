"""Sampling operators with structured outputs (MXNet 1.9.1
``src/operator/random/sample_multinomial_op.h``, ``unique_sample_op.h``):

* ``_sample_multinomial(data, shape=(), get_prob=False, dtype='int32')``: ``data`` holds
  probability vectors along its last axis; draws ``shape`` category indices per vector
  (output shape ``data.shape[:-1] + shape``). With ``get_prob`` a second output holds the
  log-probability of each draw, whose gradient flows back to ``data`` as MXNet's
  (``head_grad / p`` at the drawn index): the REINFORCE estimator.
* ``_sample_unique_zipfian(range_max, shape=(batch, n))``: per row, ``n`` distinct
  integers of ``[0, range_max)`` drawn from the log-uniform (Zipfian) distribution as
  MXNet's kernel draws it, ``round(exp(u * log(range_max))) - 1`` with ``u ~ U[0, 1)``
  (``P(k) = log((k+1.5)/(k+0.5)) / log(range_max)``, the ends adjusted), and the number of
  draws it took (int64, as MXNet).

The numbers come from symgraph's generator, not MXNet's; the distributions are MXNet's.
"""
import numpy as np

from symgraph.opdef import (MXNetError, Operator, Param, ShapeError, np_dtype, random_state,
                            register)

from ._util import scatter_add


@register
class SampleMultinomial(Operator):
    """Category indices drawn from the probability vectors of ``data``'s last axis."""

    name, aliases = '_sample_multinomial', ('sample_multinomial',)
    shape = Param('shape', (), doc='Shape to be sampled from each random distribution.')
    get_prob = Param(bool, False, doc='Whether to also return the log probability of '
                                      'sampled result.')
    dtype = Param('dtype', np_dtype('int32'), doc='DType of the output.',
                  choices=[np_dtype(t) for t in ('float16', 'float32', 'float64', 'int32',
                                                 'uint8')])
    needs_inputs = True
    needs_outputs = True

    def list_outputs(self):
        return ['output0', 'output1'] if self.get_prob else ['output']

    def infer_shape(self, in_shapes):
        s = in_shapes[0]
        if s is None:
            return [None], [None] * self.output_count(), []
        s = tuple(s)
        if len(s) < 1:
            raise ShapeError('_sample_multinomial: data must have at least one axis (the '
                             'categories), got shape %s' % (s,))
        return [s], [self._out_shape(s)] * self.output_count(), []

    def _out_shape(self, s):
        """``data.shape[:-1] + shape``; one draw of a single distribution is (1,), as
        MXNet's shape rule gives (it has no 0-d arrays)."""
        return (s[:-1] + tuple(self.shape)) or (1,)

    def infer_type(self, in_types):
        t = in_types[0]
        outs = [np.dtype(self.dtype)] + ([t] if self.get_prob else [])
        return [t], outs, []

    def forward(self, xp, inputs, aux, is_train):
        p = inputs[0]
        k = p.shape[-1]
        probs = p.reshape(-1, k).astype(np.float64)
        n = int(np.prod(self.shape)) if len(self.shape) else 1
        cdf = xp.cumsum(probs, axis=1)
        u = random_state(xp).random_sample((probs.shape[0], n))
        # the first category whose cumulative probability exceeds u (the last one if none)
        idx = (u[:, :, None] >= cdf[:, None, :]).sum(axis=2)
        idx = xp.minimum(idx, k - 1)
        out_shape = self._out_shape(tuple(p.shape))
        outs = [idx.reshape(out_shape).astype(np.dtype(self.dtype))]
        if self.get_prob:
            chosen = xp.take_along_axis(probs, idx, axis=1)
            outs.append(xp.log(chosen).reshape(out_shape).astype(p.dtype))
        return outs

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        if not need[0]:
            return [None]
        p = inputs[0]
        k = p.shape[-1]
        g = xp.zeros(p.shape, dtype=p.dtype).reshape(-1, k)
        if self.get_prob and out_grads[1] is not None:
            rows = g.shape[0]
            idx = outputs[0].reshape(rows, -1).astype(np.int64)
            head = out_grads[1].reshape(rows, -1)
            probs = p.reshape(rows, k)
            contrib = head / xp.take_along_axis(probs, idx, axis=1)
            r = xp.repeat(xp.arange(rows), idx.shape[1])
            scatter_add(xp, g, (r, idx.reshape(-1)), contrib.reshape(-1).astype(p.dtype))
        return [g.reshape(p.shape)]


@register
class SampleUniqueZipfian(Operator):
    """Distinct log-uniform integers of ``[0, range_max)`` per row, and the draw counts."""

    name = '_sample_unique_zipfian'
    range_max = Param(int, doc='The number of possible classes.')
    shape = Param('shape', None, doc='2-D shape of the output, where shape[0] is the batch '
                                     'size, and shape[1] is the number of candidates to '
                                     'sample for each batch.')
    no_grad = True
    needs_inputs = False

    def check(self):
        if self.shape is None or len(self.shape) != 2:
            raise MXNetError('_sample_unique_zipfian: shape must be (batch_size, num_sampled)'
                             ', got %s' % (self.shape,))
        if self.shape[1] > self.range_max:
            raise MXNetError('_sample_unique_zipfian: cannot draw %d distinct values from '
                             'range_max=%d' % (self.shape[1], self.range_max))

    def list_arguments(self):
        return []

    def list_outputs(self):
        return ['output0', 'output1']

    def infer_shape(self, in_shapes):
        return [], [tuple(self.shape), (self.shape[0],)], []

    def infer_type(self, in_types):
        return [], [np.dtype(np.int64)] * 2, []

    def forward(self, xp, inputs, aux, is_train):
        batch, n = self.shape
        rng = random_state(xp)
        log_range = np.log(float(self.range_max))
        samples = np.zeros((batch, n), np.int64)
        tries = np.zeros((batch,), np.int64)
        for b in range(batch):
            seen, order, count = set(), [], 0
            while len(order) < n:
                u = rng.random_sample(max(2 * (n - len(order)), 8))
                u = u.get() if hasattr(u, 'get') else np.asarray(u)     # CuPy: to the host
                # MXNet's kernel: lround(exp(u * log(range_max))) - 1 (round half away)
                for v in np.floor(np.exp(u * log_range) + 0.5).astype(np.int64) - 1:
                    count += 1
                    if v not in seen:
                        seen.add(int(v))
                        order.append(int(v))
                        if len(order) == n:
                            break
            samples[b] = order
            tries[b] = count
        return [xp.asarray(samples), xp.asarray(tries)]
