"""Losses: ``SoftmaxOutput``, the regression outputs, ``SVMOutput``, ``MakeLoss``,
``make_loss``, ``smooth_l1`` and ``softmax_cross_entropy``.

A loss head's forward is the prediction (softmax, identity, sigmoid); its backward ignores
the head gradient and makes the gradient of the implied loss, scaled exactly as MXNet 1.9.1
does (see MXNET_SEMANTICS.md). The ``label`` argument gets a zero gradient.

``smooth_l1``, ``softmax_cross_entropy`` and ``SVMOutput`` (MXNet 1.9.1 semantics):

* ``smooth_l1(x, scalar=sigma)``: ``0.5 * (sigma * x) ** 2`` where ``|x| < 1 / sigma ** 2``,
  else ``|x| - 0.5 / sigma ** 2``.
* ``softmax_cross_entropy(data, label)``: data ``(N, K)``, label ``(N,)`` of class indices
  (same dtype as data); the output has shape ``(1,)``: the cross entropy summed over the
  batch. The gradient is ``(softmax(data) - onehot(label)) * head``; MXNet refuses a
  gradient for ``label`` (it gets zeros here). The label is not inferred from data (MXNet
  fails then too).
* ``SVMOutput(data, label)``: a loss head: forward is the identity; backward ignores the
  head gradient and gives the hinge-loss gradient per row of data viewed as
  ``(-1, K)`` (one label per row, label shape ``data.shape[:-1]``), with ``c`` the
  regularization coefficient, ``m`` the margin and ``k`` the row's label (a label out of
  range matches no class): L1 (``use_linear``): ``-c * (m > x_k)`` for the label's class,
  ``c * (m > -x_j)`` for the others; L2: ``-2c * (m - x_k) * (m > x_k)`` and
  ``2c * (m + x_j) * (m > -x_j)``.
"""
from math import prod

import numpy as np

from symgraph.opdef import Operator, Param, ShapeError, register, same_type

from ._util import f32, float_only


def softmax(xp, x, axis):
    e = xp.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _zeros_if(xp, need, x):
    return xp.zeros_like(x) if need else None


class _DataLabel(Operator):
    """An operator of ``(data, label)``: the loss heads and softmax_cross_entropy. Both
    inputs and the output share one type unless a subclass says otherwise."""

    def list_arguments(self):
        return ['data', 'label']

    def infer_type(self, in_types):
        t = same_type(self, in_types)
        return [t, t], [t], []


@register
class SoftmaxOutput(_DataLabel):
    """Softmax forward; backward is the cross-entropy gradient ``softmax - onehot(label)``.

    The softmax runs over all but the first axis, over axis 1 (``multi_output``) or over the
    last axis (``preserve_shape``). A label of the data's shape is a probability target.
    Gradients are scaled by ``grad_scale`` and divided per ``normalization``: ``batch`` by
    the batch size, ``valid`` by the number of labels not equal to ``ignore_label``; with
    ``multi_output``, ``null`` and ``batch`` also divide by the spatial size.
    ``use_ignore`` zeroes the gradient where the label is ``ignore_label``;
    ``smooth_alpha`` spreads that much target mass over the other classes (not with
    ``multi_output``). ``out_grad`` multiplies the gradient by the softmax output: that is
    what MXNet 1.9.1 does (its head gradient is never read).
    """

    name = 'SoftmaxOutput'
    aliases = ('Softmax',)
    grad_scale = Param(float, 1.0, doc='scale of the gradient')
    ignore_label = Param(float, -1.0, doc='label ignored when use_ignore')
    multi_output = Param(bool, False, doc='softmax over axis 1, one label per position')
    use_ignore = Param(bool, False, doc='give ignore_label a zero gradient')
    preserve_shape = Param(bool, False, doc='softmax over the last axis')
    normalization = Param(str, 'null', doc='gradient normalisation',
                          choices=('batch', 'null', 'valid'))
    out_grad = Param(bool, False, doc='multiply the gradient by the output (MXNet 1.9.1)')
    smooth_alpha = Param(float, 0.0, doc='label smoothing mass')
    needs_outputs = True

    is_loss = True

    infer_shape_uses_outputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        d, lab = in_shapes[:2]
        if d is None:
            return [d, lab], [None], []
        d = tuple(d)
        if lab is not None and tuple(lab) == d:
            return [d, d], [d], []
        if self.multi_output:
            if len(d) < 2:
                raise ShapeError('SoftmaxOutput: multi_output needs data with an axis 1, '
                                 'got %s' % (d,))
            spatial = prod(d[2:]) if all(d[2:]) else 0
            flat = (d[0], spatial)
            full = (d[0],) + d[2:]
            ones = d[:1] + (1,) + d[2:]
            if lab is None:
                lab = flat
            elif not any(_match(lab, s) for s in (flat, full, ones)):
                raise ShapeError('SoftmaxOutput: argument %r has shape %s; expecting %s or %s'
                                 % ('label', tuple(lab), flat, full))
        else:
            lab = _label_per_row(self, d, lab)
        return [d, tuple(lab)], [d], []

    def infer_type(self, in_types):
        t = in_types[0]
        return [t, in_types[1] if in_types[1] is not None else t], [t], []

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        if self.multi_output:
            y = softmax(xp, x.reshape(x.shape[0], x.shape[1], -1), 1)
        elif self.preserve_shape:
            y = softmax(xp, x, x.ndim - 1)
        else:
            y = softmax(xp, x.reshape(x.shape[0], -1), 1)
        return [y.reshape(x.shape)]

    def _class_grad(self, xp, y, lab, smooth):
        """``y - target(label)`` for rows of ``y`` (N, K, ...) with classes on axis 1."""
        k = y.shape[1]
        cls = xp.arange(k).reshape((1, k) + (1,) * (y.ndim - 2))
        hit = xp.expand_dims(lab.astype(np.int64), 1) == cls
        if smooth and self.smooth_alpha:
            on, off = 1.0 - self.smooth_alpha, self.smooth_alpha / (k - 1)
            target = xp.where(hit, y.dtype.type(on), y.dtype.type(off))
        else:
            target = hit.astype(y.dtype)
        g = y - target
        if self.use_ignore:
            g = g * xp.expand_dims(lab != lab.dtype.type(self.ignore_label), 1)
        return g

    def _valid_count(self, xp, lab):
        # MXNet compares int-cast labels with int(ignore_label), with or without use_ignore
        n = int((lab.astype(np.int64) != int(self.ignore_label)).sum())
        return max(n, 1)

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        x, lab = inputs
        y = outputs[0]
        dt = y.dtype
        if lab.shape == y.shape:
            g = (y - lab.astype(dt, copy=False)) * dt.type(self.grad_scale)
        elif self.multi_output:
            # MXNet applies no label smoothing on this path
            n, k = y.shape[0], y.shape[1]
            y3 = y.reshape(n, k, -1)
            lab2 = lab.reshape(n, -1)
            g = self._class_grad(xp, y3, lab2, False)
            if self.normalization == 'valid':
                scale = self.grad_scale / self._valid_count(xp, lab2)
            else:
                div = n if self.normalization == 'batch' else 1
                scale = self.grad_scale / y3.shape[2] / div
            g = g * dt.type(scale)
        else:
            lab1 = lab.reshape(-1)
            # MXNet's rows: (N, rest) as in forward, or (all but last, last) with
            # preserve_shape; row i takes the i-th label, so with an N-D label and
            # preserve_shape off only the first N labels act (as in MXNet).
            y2 = y.reshape(-1, y.shape[-1]) if self.preserve_shape else y.reshape(y.shape[0], -1)
            g = self._class_grad(xp, y2, lab1[:y2.shape[0]], True)
            if self.normalization == 'valid':
                div = self._valid_count(xp, lab1)
            else:
                div = lab1.size if self.normalization == 'batch' else 1
            g = g * dt.type(self.grad_scale / div)
        g = g.reshape(y.shape)
        if self.out_grad:
            # MXNet 1.9.1 multiplies by its output here, not by the head gradient
            g = g * y
        return [g.astype(x.dtype, copy=False) if need[0] else None,
                _zeros_if(xp, need[1], lab)]


def _match(shape, want):
    """Whether a partial shape agrees with ``want`` (0 = unknown on either side)."""
    return len(shape) == len(want) and all(a == b or not a or not b
                                           for a, b in zip(shape, want))


def _label_per_row(op, d, lab):
    """The label shape ``d[:-1]`` (one label per row of the last axis of data ``d``), with
    what a partly known ``lab`` adds; ShapeError when ``lab`` disagrees."""
    want = d[:-1]
    if lab is not None and not _match(lab, want):
        raise ShapeError('%s: argument %r has shape %s, expected %s for data %s'
                         % (op.name, 'label', tuple(lab), want, d))
    return want if lab is None else tuple(a or b for a, b in zip(lab, want))


class _Regression(_DataLabel):
    """Shared shape rules and scaling of the regression heads."""

    grad_scale = Param(float, 1.0, doc='scale of the gradient')
    is_loss = True
    needs_outputs = True

    infer_shape_uses_outputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        d, lab = in_shapes[:2]
        if d is None:
            return [d, lab], [None], []
        d = tuple(d)
        if lab is None:
            # a (N, 1) prediction takes a 1-D label by default
            lab = (d[0],) if len(d) == 2 and d[1] == 1 else d
        elif all(d) and all(lab) and (lab[0] != d[0] or prod(lab) != prod(d)):
            raise ShapeError('%s: argument %r has shape %s but data has %s (need the same '
                             'batch size and number of elements)'
                             % (self.name, 'label', tuple(lab), d))
        return [d, tuple(lab)], [d], []

    def infer_type(self, in_types):
        t = float_only(self, same_type(self, in_types))
        return [t, t], [t], []

    def fn(self, xp, x):
        return x

    def dloss(self, xp, y, lab):
        return y - lab

    def forward(self, xp, inputs, aux, is_train):
        return [self.fn(xp, inputs[0])]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        x, lab = inputs
        y = outputs[0]
        # MXNet divides by the number of outputs per example
        per_example = lab.size // lab.shape[0] if lab.ndim else 1
        g = self.dloss(xp, y, lab.reshape(y.shape)) * (self.grad_scale / per_example)
        return [g.astype(x.dtype, copy=False) if need[0] else None,
                _zeros_if(xp, need[1], lab)]


@register
class LinearRegressionOutput(_Regression):
    """Identity forward; gradient ``(out - label) * grad_scale / outputs_per_example``."""

    name = 'LinearRegressionOutput'


@register
class LogisticRegressionOutput(_Regression):
    """Sigmoid forward; gradient ``(out - label) * grad_scale / outputs_per_example``."""

    name = 'LogisticRegressionOutput'

    def fn(self, xp, x):
        e = xp.exp(-xp.abs(x))          # relative precision in the tails, as MXNet
        r = 1.0 / (e + 1.0)
        return xp.where(x >= 0, r, e * r).astype(x.dtype, copy=False)


@register
class MAERegressionOutput(_Regression):
    """Identity forward; gradient ``sign(out - label) * grad_scale / outputs_per_example``."""

    name = 'MAERegressionOutput'

    def dloss(self, xp, y, lab):
        return xp.sign(y - lab)


@register
class MakeLoss(Operator):
    """Turn any symbol into a loss: identity forward, gradient ``grad_scale`` per element
    divided by the batch size (``batch``) or the count of elements above ``valid_thresh``
    (``valid``).
    """

    name = 'MakeLoss'
    grad_scale = Param(float, 1.0, doc='scale of the gradient')
    valid_thresh = Param(float, 0.0, doc='elements above this count as valid')
    normalization = Param(str, 'null', doc='gradient normalisation',
                          choices=('batch', 'null', 'valid'))
    is_loss = True
    inplace = ((0, 0),)

    def forward(self, xp, inputs, aux, is_train):
        return [inputs[0]]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        x = inputs[0]
        scale = self.grad_scale
        if self.normalization == 'batch':
            # MXNet flattens to 2-D: every axis but the last counts as the batch
            scale /= int(np.prod(x.shape[:-1])) if x.ndim > 1 else 1
        elif self.normalization == 'valid':
            scale /= max(int((x > self.valid_thresh).sum()), 1)
        return [xp.full(x.shape, scale, dtype=x.dtype)]


@register
class MakeLossSimple(Operator):
    """``make_loss``: identity forward, gradient 1 for every element (MXNet's own op,
    distinct from ``MakeLoss`` and without parameters).
    """

    name = 'make_loss'
    is_loss = True
    inplace = ((0, 0),)

    def list_outputs(self):
        # MXNet 1.9.1 names this operator's output 'loss' (nll -> nll_loss); MakeLoss's
        # is 'output'
        return ['loss']

    def forward(self, xp, inputs, aux, is_train):
        return [inputs[0]]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        return [xp.ones_like(inputs[0])]


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
class SoftmaxCrossEntropy(_DataLabel):
    """Summed cross entropy of ``softmax(data)`` against class labels; output (1,)."""

    name = 'softmax_cross_entropy'
    needs_inputs = True

    infer_shape_uses_outputs = True

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

    infer_shape_uses_outputs = True

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
