"""More losses and activations: ``smooth_l1``, ``softmax_cross_entropy``, ``hard_sigmoid``,
``softmin``, ``SVMOutput`` and ``GroupNorm``.

MXNet 1.9.1 semantics:

* ``smooth_l1(x, scalar=sigma)``: ``0.5 * (sigma * x) ** 2`` where ``|x| < 1 / sigma ** 2``,
  else ``|x| - 0.5 / sigma ** 2``.
* ``softmax_cross_entropy(data, label)``: data ``(N, K)``, label ``(N,)`` of class indices
  (same dtype as data); the output has shape ``(1,)``: the cross entropy summed over the
  batch. The gradient is ``(softmax(data) - onehot(label)) * head``; MXNet refuses a
  gradient for ``label`` (it gets zeros here). The label is not inferred from data (MXNet
  fails then too).
* ``hard_sigmoid``: ``clip(alpha * x + beta, 0, 1)``.
* ``softmin``: ``softmax(-x / temperature)`` with softmax's ``axis``, ``temperature`` and
  ``dtype``; like ``log_softmax`` it takes no ``length`` input, so ``use_length=True``
  cannot be used.
* ``SVMOutput(data, label)``: a loss head: forward is the identity; backward ignores the
  head gradient and gives the hinge-loss gradient per row of data viewed as
  ``(-1, K)`` (one label per row, label shape ``data.shape[:-1]``), with ``c`` the
  regularization coefficient, ``m`` the margin and ``k`` the row's label (a label out of
  range matches no class): L1 (``use_linear``): ``-c * (m > x_k)`` for the label's class,
  ``c * (m > -x_j)`` for the others; L2: ``-2c * (m - x_k) * (m > x_k)`` and
  ``2c * (m + x_j) * (m > -x_j)``.
* ``GroupNorm(data, gamma, beta)``: data ``(N, C, ...)`` with ``C`` divisible by
  ``num_groups`` ``G``, normalised over each ``(sample, group)``; in MXNet 1.9.1 gamma and
  beta have shape ``(G,)`` (one scale per group, not per channel). Hidden outputs mean and
  std (``sqrt(var + eps)``) of shape ``(N, G)`` are visible with ``output_mean_var``.
"""
import numpy as np

from symgraph.opdef import Operator, Param, ShapeError, register, same_type

from .loss import _DataLabel, _label_per_row, _zeros_if
from .norm_layers import _MeanStdNorm, _normalize_grad
from .softmax import _SoftmaxBase, softmax
from ._util import acc, f32, norm_axis


@register
class SmoothL1(Operator):
    """Smooth L1: quadratic near 0 (``|x| < 1 / sigma^2``), linear beyond."""

    name = 'smooth_l1'
    scalar = Param(float, 1.0, doc='sigma: the quadratic region is |x| < 1 / sigma^2')
    needs_inputs = True
    same_shape_io = True

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        s2 = self.scalar * self.scalar
        if s2 == 0:             # 1 / 0 is inf: every element is in the quadratic branch
            return [xp.zeros_like(x)]
        inner = xp.abs(x) < 1.0 / s2
        out = xp.where(inner, 0.5 * s2 * x * x, xp.abs(x) - 0.5 / s2)
        return [out.astype(x.dtype, copy=False)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        x = inputs[0]
        s2 = self.scalar * self.scalar
        if s2 == 0:
            return [xp.zeros_like(x)]
        d = xp.where(xp.abs(x) < 1.0 / s2, s2 * x, xp.sign(x))
        return [(out_grads[0] * d).astype(x.dtype, copy=False)]


@register
class HardSigmoid(Operator):
    """``max(0, min(1, alpha * x + beta))``."""

    name = 'hard_sigmoid'
    alpha = Param(float, 0.2, doc='slope')
    beta = Param(float, 0.5, doc='offset')
    needs_inputs = True
    same_shape_io = True

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        return [xp.clip(x * f32(self.alpha) + f32(self.beta), 0, 1).astype(x.dtype,
                                                                             copy=False)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        x = inputs[0]
        z = x * f32(self.alpha) + f32(self.beta)
        d = ((z > 0) & (z < 1)).astype(x.dtype) * x.dtype.type(f32(self.alpha))
        return [out_grads[0] * d]


@register
class Softmin(_SoftmaxBase):
    """``softmax(-x / T)`` along ``axis``."""

    name = 'softmin'
    needs_inputs = True
    same_shape_io = True

    def infer_shape(self, in_shapes, out_shapes=None):
        if self.use_length:
            # MXNet accepts the flag but gives softmin no `length` input, then fails
            raise ShapeError('softmin: use_length=True needs a length input, which softmin '
                             'does not take')
        return [in_shapes[0]], [in_shapes[0]], []

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        dt = np.dtype(self.dtype) if self.dtype is not None else x.dtype
        return [softmax(xp, -self._scaled(x, dt), norm_axis(self.axis, x.ndim))]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        y = outputs[0]
        g = out_grads[0].astype(y.dtype, copy=False)
        ax = norm_axis(self.axis, y.ndim)
        d = -y * (g - (g * y).sum(axis=ax, keepdims=True))
        return [self._scale_grad(d, inputs[0])]


@register
class SoftmaxCrossEntropy(_DataLabel):
    """Summed cross entropy of ``softmax(data)`` against class labels; output (1,)."""

    name = 'softmax_cross_entropy'
    needs_inputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        d, lab = in_shapes[:2]
        if d is not None and len(d) != 2:
            raise ShapeError('softmax_cross_entropy: argument %r must be 2-D, got %s'
                             % ('data', tuple(d)))
        if lab is not None and len(lab) != 1:
            raise ShapeError('softmax_cross_entropy: argument %r must be 1-D, got %s'
                             % ('label', tuple(lab)))
        if d is not None and lab is not None and d[0] and lab[0] and d[0] != lab[0]:
            raise ShapeError('softmax_cross_entropy: argument %r has shape %s but data %s '
                             'has %d rows' % ('label', tuple(lab), tuple(d), d[0]))
        return [d, lab], [(1,)], []

    def _probs(self, xp, x, lab):
        y = softmax(xp, x, 1)
        hit = lab.astype(np.int64)[:, None] == xp.arange(x.shape[1])[None, :]
        return y, hit

    def forward(self, xp, inputs, aux, is_train):
        x, lab = inputs
        y, hit = self._probs(xp, x, lab)
        picked = xp.where(hit, y, x.dtype.type(0)).sum(axis=1)
        # MXNet clamps the probability at 1e-8 (a row contributes at most 18.42)
        picked = xp.maximum(picked, x.dtype.type(1e-8))
        return [(-xp.log(picked)).sum(keepdims=True).reshape(1).astype(x.dtype, copy=False)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        x, lab = inputs
        dx = None
        if need[0]:
            y, hit = self._probs(xp, x, lab)
            dx = (y - hit.astype(x.dtype)) * out_grads[0].reshape(1, 1)
        return [dx, _zeros_if(xp, need[1], lab)]


@register
class SVMOutput(_DataLabel):
    """Identity forward; backward is the (L1 or L2) hinge-loss gradient (see above)."""

    name = 'SVMOutput'
    margin = Param(float, 1.0, doc='the margin')
    regularization_coefficient = Param(float, 1.0, doc='scale of the gradient')
    use_linear = Param(bool, False, doc='L1 hinge loss instead of L2')
    is_loss = True
    needs_inputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        d, lab = in_shapes[:2]
        if d is None:
            return [d, lab], [None], []
        d = tuple(d)
        return [d, _label_per_row(self, d, lab)], [d], []

    def forward(self, xp, inputs, aux, is_train):
        return [inputs[0]]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        x, lab = inputs
        dt = x.dtype
        k = x.shape[-1] if x.ndim else 1
        x2 = x.reshape(-1, k)
        hit = lab.reshape(-1).astype(np.int64)[:, None] == xp.arange(k)[None, :]
        # Python floats (rounded to C float as MXNet's parameters): the dtype stays dt
        m, c = f32(self.margin), f32(self.regularization_coefficient)
        below, above = (x2 < m).astype(dt), (-x2 < m).astype(dt)
        if self.use_linear:
            g = xp.where(hit, -below, above) * c
        else:
            g = xp.where(hit, (x2 - m) * below, (x2 + m) * above) * (2 * c)
        return [g.astype(dt, copy=False).reshape(x.shape), _zeros_if(xp, need[1], lab)]


@register
class GroupNorm(_MeanStdNorm):
    """Normalise each (sample, group of channels); gamma and beta are per group."""

    name = 'GroupNorm'
    num_groups = Param(int, 1, doc='number of channel groups')
    eps = Param(float, 1e-5, doc='added to the variance')
    output_mean_var = Param(bool, False, doc='also output the mean and the std')

    def infer_shape(self, in_shapes, out_shapes=None):
        d = in_shapes[0]
        g = self.num_groups
        if d is not None:
            if len(d) < 3:
                raise ShapeError('GroupNorm: argument %r must have rank 3 or greater '
                                 '(N, C, ...), got %s' % ('data', tuple(d)))
            if d[1] and d[1] % g:
                raise ShapeError('GroupNorm: the %d channels of data %s are not divisible by '
                                 'num_groups=%d' % (d[1], tuple(d), g))
        for i, nm in ((1, 'gamma'), (2, 'beta')):
            s = in_shapes[i]
            if s is not None and (len(s) != 1 or (s[0] and s[0] != g)):
                raise ShapeError('GroupNorm: argument %r has shape %s, expected (%d,) '
                                 '(num_groups)' % (nm, tuple(s), g))
        stat = None if d is None else (d[0], g)
        return [d, (g,), (g,)], [d, stat, stat], []

    def infer_type(self, in_types):
        t = same_type(self, in_types)
        return [t] * 3, [t] * 3, []

    def forward(self, xp, inputs, aux, is_train):
        data, gamma, beta = inputs
        n, g = data.shape[0], self.num_groups
        x = acc(data).reshape(n, g, -1)
        mean = x.mean(axis=2, keepdims=True)
        std = xp.sqrt(((x - mean) ** 2).mean(axis=2, keepdims=True) + f32(self.eps))
        out = (x - mean) / std * acc(gamma).reshape(1, g, 1) + acc(beta).reshape(1, g, 1)
        t = data.dtype
        return [out.reshape(data.shape).astype(t, copy=False),
                mean.reshape(n, g).astype(t, copy=False), std.reshape(n, g).astype(t, copy=False)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        data, gamma, _ = inputs
        n, g = data.shape[0], self.num_groups
        x = acc(data).reshape(n, g, -1)
        dy = acc(out_grads[0]).reshape(n, g, -1)
        inv = 1.0 / acc(outputs[2]).reshape(n, g, 1)
        xhat = (x - acc(outputs[1]).reshape(n, g, 1)) * inv
        dx = dgamma = dbeta = None
        if need[0]:
            dxhat = dy * acc(gamma).reshape(1, g, 1)
            dx = _normalize_grad(dxhat, xhat, inv, 2)
            dx = dx.reshape(data.shape).astype(data.dtype, copy=False)
        if need[1]:
            dgamma = (dy * xhat).sum(axis=(0, 2)).astype(gamma.dtype, copy=False)
        if need[2]:
            dbeta = dy.sum(axis=(0, 2)).astype(gamma.dtype, copy=False)
        return [dx, dgamma, dbeta]
