"""Basic neural-network layers: ``FullyConnected``, ``Activation``, ``LeakyReLU``,
``hard_sigmoid``, ``Dropout``.

Softmax-like operators live in :mod:`symgraph.ops.softmax`, matrix products in
:mod:`symgraph.ops.dot`.

``hard_sigmoid`` is ``clip(alpha * x + beta, 0, 1)`` (alpha and beta as C floats).
"""
import math
from math import prod

import numpy as np

from symgraph.opdef import (Operator, Param, ShapeError, Step, cpu_kernel, gpu_kernel,
                            random_state, register, same_type, unify_shape)

from ._fused import FusedOperator
from ._specfun import erf
from ._util import f32, float_only, relu_grad_from_output


@register
class FullyConnected(Operator):
    """``out = data @ weight.T + bias``; ``data`` is flattened to 2-D unless ``flatten=False``.

    Shapes: ``weight`` (num_hidden, K) and ``bias`` (num_hidden,), filled from ``data``; K is
    the product of data's trailing axes (``flatten=True``) or its last axis.
    """

    name = 'FullyConnected'
    num_hidden = Param(int, doc='number of output units', minimum=1)
    no_bias = Param(bool, False, doc='leave out the bias')
    flatten = Param(bool, True, doc='collapse all but the first axis of data')
    #: as MXNet's _backward_FullyConnected: (ograd, data, weight), never the bias
    needs_inputs = (0, 1)
    #: a bias bound as (num_hidden, 1) (Caffe conversions): its gradient's shape
    _bias_shape = None

    def list_arguments(self):
        return ['data', 'weight'] if self.no_bias else ['data', 'weight', 'bias']

    infer_shape_uses_outputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        names = self.list_arguments()
        shapes = list(in_shapes[:len(names)])
        d = shapes[0]
        o = out_shapes[0] if out_shapes else None
        if d is None:
            return shapes, [None], []
        d = list(d)
        w = shapes[1]
        # a known weight gives the one input dimension it determines
        if w is not None and len(w) == 2 and w[1]:
            if not self.flatten and d[-1] == 0:
                d[-1] = w[1]
            elif self.flatten and len(d) == 2 and d[1] == 0:
                d[1] = w[1]
        trail = d[-1:] if not self.flatten else d[1:]
        k = prod(trail) if all(trail) else 0
        h = self.num_hidden
        try:
            shapes[1] = unify_shape(w, (h, k))
        except ShapeError:
            raise ShapeError('FullyConnected: argument %r has shape %s, expected %s from '
                             'num_hidden=%d and data %s' % ('weight', tuple(w), (h, k or '?'),
                                                            h, tuple(d))) from None
        if not self.no_bias:
            b = shapes[2]
            if b is not None and len(b) == 2:
                ok = b[0] in (0, h) and b[1] in (0, 1)
                shapes[2] = (h, 1)
            else:
                ok = b is None or (len(b) == 1 and b[0] in (0, h))
                shapes[2] = (h,)
            if not ok:
                raise ShapeError('FullyConnected: argument %r has shape %s, expected (%d,)'
                                 % ('bias', tuple(b), h))
        if o is not None and len(o) and o[0] and not d[0]:
            d[0] = o[0]
        shapes[0] = tuple(d)
        out = tuple(d[:-1]) + (h,) if not self.flatten else (d[0], h)
        return shapes, [out], []

    def fitted(self, in_shapes, out_shapes):
        """The operator a bind runs (the ``instead`` rule for ``'shapes'``)."""
        # backward does not read the bias; a 2-D one must still get a 2-D gradient
        if self.no_bias or in_shapes[2] is None or len(in_shapes[2]) == 1:
            return self
        op = type(self)(**self._values)
        op._fix(_bias_shape=tuple(in_shapes[2]))
        return op

    #: the output and the data and weight gradients are computed into the executor's
    #: arrays (2-D products only: an N-D data with flatten=False is a batched product)
    writes_into = True

    def forward(self, xp, inputs, aux, is_train, out=None):
        x, w = inputs[0], inputs[1]
        x2 = x.reshape(x.shape[0], -1) if self.flatten else x
        d = _as_2d(out, 0, (x2.shape[0], self.num_hidden), x.dtype) if x2.ndim == 2 \
            else None
        y = _matmul(xp, x2, w.T, d)
        if not self.no_bias:
            y += inputs[2].reshape(-1)
        return [out[0] if d is not None and y is d else y]

    def backward(self, xp, out_grads, inputs, outputs, aux, need, grad_out=None):
        x, w = inputs[0], inputs[1]
        g = out_grads[0]
        g2 = g.reshape(-1, self.num_hidden)
        x2 = x.reshape(x.shape[0], -1) if self.flatten else x.reshape(-1, x.shape[-1])
        grads = [None] * len(inputs)
        if need[0]:
            d = _as_2d(grad_out, 0, (g2.shape[0], w.shape[1]), g.dtype)
            dx = _matmul(xp, g2, w, d)
            grads[0] = grad_out[0] if d is not None and dx is d else dx.reshape(x.shape)
        if need[1]:
            d = _as_2d(grad_out, 1, w.shape, g.dtype)
            dw = _matmul(xp, g2.T, x2, d)
            grads[1] = grad_out[1] if d is not None and dw is d else dw
        if not self.no_bias and need[2]:
            gb = g2.sum(axis=0)
            grads[2] = gb if self._bias_shape is None else gb.reshape(self._bias_shape)
        return grads


class FusedFullyConnected(FusedOperator):
    """FullyConnected with BatchNorm folded into its weights and bias (inference only;
    made by the ``fuse_post_ops`` row of ``ops/_cpu_rules.py`` for the inference passes)."""

    name = '_fused_FullyConnected'

    def compute(self, xp, base, per, state, dest=None):
        fc = self.base
        x, w = base[0], base[1]
        wf, bf, _ = self.folded(xp, w, None if fc.no_bias else base[2], per, state, (-1, 1))
        x2 = x.reshape(x.shape[0], -1) if fc.flatten else x
        y = _matmul(xp, x2, wf.T, _as_2d([dest], 0, (x2.shape[0], wf.shape[0]), x2.dtype)
                    if x2.ndim == 2 else None)
        y += bf
        return y


def _matmul(xp, a, b, dest=None):
    """a @ b; large 2-D NumPy float32 products through the CPU backend (oneDNN), so that
    its OpenMP pool, not OpenBLAS's spinning one, holds the cores between convolutions.
    Into ``dest`` (from :func:`_as_2d`) when given and of the product's dtype."""
    if xp is np and a.ndim == 2 and b.ndim == 2 and a.dtype == np.float32 \
            and b.dtype == np.float32:
        matmul = cpu_kernel('matmul')
        if matmul is not None:
            out = matmul(a, b, out=dest)
            if out is not None:
                return out
    if dest is not None and dest.dtype == xp.result_type(a, b):
        return xp.matmul(a, b, out=dest)
    return xp.matmul(a, b)


#: Activation's alpha for oneDNN's eltwise kinds (soft_relu: 1, the plain log(1 + e^x);
#: the others take none)
_ACT_ALPHA = {'softrelu': 1.0}

#: LeakyReLU's kinds as oneDNN's eltwise kernels name them (leaky: relu with the slope);
#: which kinds and sizes the kernels take is the backend's routing (its ``routing``
#: module), the others stay on NumPy
_LEAKY_KINDS = {'leaky': 'relu', 'elu': 'elu', 'gelu': 'gelu'}


def _onednn_act(xp, x, kind, alpha, backward=False, dy=None):
    """f(x) (or dy * f'(x)) through the CPU kernel (oneDNN's ``kind`` with ``alpha``) where
    it takes x, else None."""
    if xp is not np:
        return None
    kern = cpu_kernel('eltwise_backward' if backward else 'eltwise_forward')
    if kern is None:
        return None
    if backward:
        return kern(x, dy, kind, alpha)
    return kern(x, kind, alpha)


def _as_2d(arrays, i, shape, dtype):
    """The array offered for result ``i`` (``out=``/``grad_out=``) as a 2-D view of
    ``shape`` when it is a C-contiguous array of ``dtype`` with as many elements, else
    None."""
    d = arrays[i] if arrays and i < len(arrays) else None
    if d is None or d.dtype != dtype or not d.flags.c_contiguous or d.size != prod(shape):
        return None
    return d.reshape(shape)


def _softrelu(xp, x):
    # log(1 + exp(x)) without overflow
    return xp.maximum(x, 0.0) + xp.log1p(xp.exp(-xp.abs(x)))


def _sigmoid(xp, x):
    # through exp(-|x|): 0.5 (tanh(x / 2) + 1) rounds the negative tail to 0
    e = xp.exp(-xp.abs(x))
    r = 1.0 / (e + 1.0)
    return xp.where(x >= 0, r, e * r).astype(x.dtype, copy=False)


def _cudnn_activation():
    """cuDNN's activation forward (:func:`symgraph.opdef.gpu_kernel`; it declines the kinds
    its routing table keeps on CuPy's elementwise kernels), or None."""
    return gpu_kernel('activation_forward')


@register
class Activation(Operator):
    """Elementwise ``relu``, ``sigmoid``, ``tanh``, ``softrelu`` or ``softsign``."""

    name = 'Activation'

    def infer_type(self, in_types):
        t = float_only(self, same_type(self, in_types))
        return [t], [t], []
    act_type = Param(str, doc='activation function',
                     choices=('relu', 'sigmoid', 'softrelu', 'softsign', 'tanh'))
    inplace = ((0, 0),)

    def _fn(self, xp):
        return {
            'relu': lambda x: xp.maximum(x, x.dtype.type(0)),
            'sigmoid': lambda x: _sigmoid(xp, x),
            'tanh': xp.tanh,
            'softrelu': lambda x: _softrelu(xp, x),
            'softsign': lambda x: x / (1.0 + xp.abs(x)),
        }[self.act_type]

    #: forward computes into the executor's buffer (in place where the storage plan gives
    #: the input's storage to the output), backward into the data gradient's, which may lie
    #: over the output it reads (each element read before it is written: the grad_inplace
    #: row of ops/_cpu_rules.py)
    writes_into = True

    def bind(self, ctx, in_shapes, in_dtypes):
        """relu's Step holds the CPU backend's recorded calls of its backward into the
        executor's arrays (:attr:`symgraph.opdef.Step.replays`); the other kinds' Steps
        are the default."""
        return Step(self, ctx, replays=self.act_type == 'relu')

    def forward(self, xp, inputs, aux, is_train, out=None, replays=None):
        x = inputs[0]
        dest = out[0] if out and out[0] is not None and out[0].dtype == x.dtype \
            and out[0].shape == x.shape else None
        a = self.act_type
        if dest is None:
            # the CPU kernel where it takes the kind and size (it declines softsign: none
            # in oneDNN); on CuPy cuDNN's where its routing sends the kind there
            kern = cpu_kernel('eltwise_forward') if xp is np else _cudnn_activation()
            y = None if kern is None else kern(x, a, _ACT_ALPHA.get(a, 0.0))
            return [self._fn(xp)(x) if y is None else y]
        if a == 'relu':
            # oneDNN (both cores) where it takes x and dest as they lie (one layout)
            kern = cpu_kernel('eltwise_forward') if xp is np else None
            if kern is None or kern(x, 'relu', out=dest) is not dest:
                xp.maximum(x, x.dtype.type(0), out=dest)
        elif a == 'tanh':
            xp.tanh(x, out=dest)
        else:
            dest[...] = self.fast_forward(xp, is_train)(x)
        return [dest]

    def fast_forward(self, xp, is_train, in_dtypes=None):
        # the kinds the CPU kernel may take get a function that asks it (not a plain
        # ufunc: the storage plan then writes no buffer for it); the others are fn itself
        fn = self._fn(xp)
        takes = cpu_kernel('takes') if xp is np else None
        kind = self.act_type
        if takes is None or not takes('eltwise_forward', None, kind):
            return fn

        alpha = _ACT_ALPHA.get(kind, 0.0)

        def act(x):
            y = _onednn_act(xp, x, kind, alpha)
            return fn(x) if y is None else y
        return act

    # backward reads the output, as MXNet's does, except for softsign (the input): the
    # input then dies at this node, so its storage can take the output (in place) and
    # BatchNorm -> relu keeps one array for backward, not two
    @property
    def needs_inputs(self):
        return self.act_type == 'softsign'

    @property
    def needs_outputs(self):
        return self.act_type != 'softsign'

    def backward(self, xp, out_grads, inputs, outputs, aux, need, grad_out=None,
                 replays=None):
        g = out_grads[0]
        a = self.act_type
        # from the output (the input is not kept): relu through oneDNN's
        # relu_use_dst_for_bwd where large enough, the rest in NumPy
        if a == 'softsign':
            d = 1.0 / (1.0 + xp.abs(inputs[0])) ** 2
            return [g * d]
        y = outputs[0]
        dest = grad_out[0] if grad_out and grad_out[0] is not None \
            and grad_out[0].dtype == g.dtype and grad_out[0].shape == g.shape else None
        if a == 'relu':
            return [relu_grad_from_output(xp, y, g, dest, site=(replays, 'b'))]
        if a in ('sigmoid', 'tanh') and y.dtype == g.dtype:
            # y (1 - y) or 1 - y^2, then times g, in one array (the same roundings as the
            # three expressions, without two temporaries the size of the activation)
            # (dest may be y's own storage, grad_inplace: tanh reads y once before writing,
            # sigmoid twice)
            t = dest if dest is not None and not xp.may_share_memory(dest, g) and (
                a == 'tanh' or not xp.may_share_memory(dest, y)) else xp.empty_like(g)
            one = g.dtype.type(1)
            if a == 'sigmoid':
                xp.subtract(one, y, out=t)
                xp.multiply(y, t, out=t)
            else:
                xp.multiply(y, y, out=t)
                xp.subtract(one, t, out=t)
            return [xp.multiply(g, t, out=t if dest is None or t is dest else dest)]
        elif a == 'sigmoid':
            d = y * (1.0 - y)
        elif a == 'tanh':
            d = 1.0 - y * y
        else:   # softrelu: y = log(1 + e^x), dy/dx = sigmoid(x) = 1 - e^-y
            d = -xp.expm1(-y)
        return [g * d if dest is None else xp.multiply(g, d, out=dest)]


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_LAMBDA = 1.0507009873554804934193349852946


def _prelu_gamma_shape(gshape, dshape):
    """PReLU's gamma as it broadcasts against data, or None: gamma's axes go, from the
    right, onto data axes 1 and 0 where the sizes agree or gamma's is 1 (MXNet's
    ``expand_shape`` in leaky_relu-inl.h: (C,) -> (1, C, 1, 1), (N, C) -> (N, C, 1, 1)).
    A data size of 0 (unknown) agrees with anything."""
    result = [1] * len(dshape)
    s = len(gshape) - 1
    for i in range(len(dshape) - 1, -1, -1):
        if s >= 0 and i <= 1 and (dshape[i] in (gshape[s], 0) or gshape[s] == 1):
            result[i] = gshape[s]
            s -= 1
    return tuple(result) if s == -1 else None


@register
class LeakyReLU(Operator):
    """Leaky rectifiers: ``leaky``, ``elu``, ``selu``, ``gelu`` (erf form), ``prelu``, ``rrelu``.

    ``prelu`` has a learned ``gamma`` of shape (channels,) (axis 1) or (1,). ``rrelu`` draws
    a slope in [lower_bound, upper_bound) per element in training and uses their mean
    otherwise; its second (visible) output ``mask`` holds the drawn slopes (zeros when not
    training, as in MXNet).
    """

    name = 'LeakyReLU'
    act_type = Param(str, 'leaky', doc='activation function',
                     choices=('elu', 'gelu', 'leaky', 'prelu', 'rrelu', 'selu'))
    slope = Param(float, 0.25, doc='negative slope (leaky) or scale (elu)')
    lower_bound = Param(float, 0.125, doc='lower bound of the random slope (rrelu)')
    upper_bound = Param(float, 0.334, doc='upper bound of the random slope (rrelu)')
    needs_outputs = True  # rrelu reads the drawn slopes, selu the output

    @property
    def same_shape_io(self):
        # a known output shape is the data shape (the core's backward inference)
        return self.act_type != 'prelu'

    def list_arguments(self):
        return ['data', 'gamma'] if self.act_type == 'prelu' else ['data']

    def list_outputs(self):
        return ['output', 'mask'] if self.act_type == 'rrelu' else ['output']

    def input_init(self):
        # MXNet gives an automatically created gamma this initializer, whatever `slope` is
        return {'gamma': '["Constant", {"value": 0.25}]'} if self.act_type == 'prelu' else {}

    infer_shape_uses_outputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        d = in_shapes[0]
        outs = [d] * len(self.list_outputs())
        if self.act_type != 'prelu':
            return [d], outs, []
        g = in_shapes[1]
        if d is None:
            return [d, g], outs, []
        if len(d) < 2:
            raise ShapeError('LeakyReLU(prelu): input %r must have a channel axis 1, got %s'
                             % ('data', tuple(d)))
        if g is None or (len(g) == 1 and g[0] == 0):
            g = (d[1],)
        elif _prelu_gamma_shape(g, d) is None:
            raise ShapeError('LeakyReLU(prelu): argument %r has shape %s, which does not '
                             'broadcast onto axes 0 and 1 of data %s (e.g. (%d,) or (1,))'
                             % ('gamma', tuple(g), tuple(d), d[1]))
        return [d, g], outs, []

    def infer_type(self, in_types):
        t = float_only(self, same_type(self, in_types))
        n = len(self.list_arguments())
        return [t] * n, [t] * len(self.list_outputs()), []

    def _gamma(self, gamma, x):
        # (C,) broadcasts along axis 1, (1,) everywhere, (N, C) along axes 0 and 1
        return gamma.reshape(_prelu_gamma_shape(gamma.shape, x.shape))

    def _onednn_act(self, xp, x, backward=False, dy=None):
        """This activation of x (or its gradient) through the CPU kernel where it takes
        them, else None (the kinds without one in oneDNN: None)."""
        kind = _LEAKY_KINDS.get(self.act_type)
        if kind is None or xp is not np:
            return None
        alpha = self.slope if kind != 'gelu' else 0.0
        if backward:
            kern = cpu_kernel('eltwise_backward')
            return None if kern is None else kern(x, dy, kind, alpha)
        kern = cpu_kernel('eltwise_forward')
        return None if kern is None else kern(x, kind, alpha)

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        a = self.act_type
        y = self._onednn_act(xp, x)
        if y is not None:
            return [y]
        if a == 'leaky':
            return [xp.where(x > 0, x, x * self.slope)]
        if a == 'elu':
            return [xp.where(x > 0, x, self.slope * xp.expm1(xp.minimum(x, 0.0)))]
        if a == 'selu':
            neg = _SELU_ALPHA * xp.expm1(xp.minimum(x, 0.0))
            return [_SELU_LAMBDA * xp.where(x > 0, x, neg)]
        if a == 'gelu':
            xf = x.astype(np.float32) if x.dtype == np.float16 else x   # as MXNet's kernel
            y = 0.5 * xf * (1.0 + erf(xp, xf * (1.0 / math.sqrt(2.0))))
            return [y.astype(x.dtype, copy=False)]
        if a == 'prelu':
            return [xp.where(x > 0, x, x * self._gamma(inputs[1], x))]
        # rrelu
        if is_train:
            u = random_state(xp).random_sample(x.shape).astype(x.dtype)
            mask = self.lower_bound + (self.upper_bound - self.lower_bound) * u
            return [xp.where(x > 0, x, x * mask), mask.astype(x.dtype, copy=False)]
        mid = (self.lower_bound + self.upper_bound) / 2.0
        return [xp.where(x > 0, x, x * mid), xp.zeros_like(x)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        x, g = inputs[0], out_grads[0]
        a = self.act_type
        dx = self._onednn_act(xp, x, True, g)
        if dx is not None:
            return [dx] + [None] * (len(inputs) - 1)
        pos = x > 0
        one = g.dtype.type(1)
        if a == 'leaky':
            return [g * xp.where(pos, one, g.dtype.type(self.slope))]
        if a == 'elu':
            return [g * xp.where(pos, one, self.slope * xp.exp(xp.minimum(x, 0.0)))]
        if a == 'selu':
            # MXNet 1.9.1 uses lambda * (out + alpha) for x <= 0, where the true derivative
            # is lambda * alpha * exp(x) = out + lambda * alpha: matched on purpose.
            y = outputs[0]
            return [g * _SELU_LAMBDA * xp.where(pos, one, y + _SELU_ALPHA)]
        if a == 'gelu':
            xf = x.astype(np.float32) if x.dtype == np.float16 else x
            cdf = 0.5 * (1.0 + erf(xp, xf * (1.0 / math.sqrt(2.0))))
            pdf = xp.exp(-0.5 * xf * xf) * (1.0 / math.sqrt(2.0 * math.pi))
            return [(g * (cdf + xf * pdf)).astype(x.dtype, copy=False)]
        if a == 'prelu':
            gamma = inputs[1]
            gb = self._gamma(gamma, x)
            dx = g * xp.where(pos, one, gb) if need[0] else None
            dg = None
            if need[1]:
                t = xp.where(pos, g.dtype.type(0), g * x)
                bshape = _prelu_gamma_shape(gamma.shape, x.shape)
                axes = tuple(i for i in range(x.ndim) if bshape[i] == 1)
                dg = t.sum(axis=axes).reshape(gamma.shape)
            return [dx, dg]
        # rrelu: the slopes drawn in training are the mask output (zeros when not training)
        mid = g.dtype.type((self.lower_bound + self.upper_bound) / 2.0)
        slope = xp.where(outputs[1] != 0, outputs[1], mid)
        return [g * xp.where(pos, one, slope)]


@register
class Dropout(Operator):
    """Zero elements with probability ``p`` and scale the rest by 1/(1-p); ``p=1`` gives
    NaN everywhere, as MXNet (0 * inf).

    Active in training, or always with ``mode='always'``; ``axes`` shares one draw along the
    given axes (variational dropout). The hidden second output is the scaled mask.
    """

    name = 'Dropout'
    p = Param(float, 0.5, doc='fraction of the input that is dropped')
    mode = Param(str, 'training', doc='when dropout is active', choices=('always', 'training'))
    axes = Param('shape', (), doc='axes along which one mask value is shared')
    cudnn_off = Param(bool, False, doc='ignored (no cuDNN dropout here)')
    needs_inputs = False
    needs_outputs = True
    inplace = ((0, 0),)
    same_shape_io = True

    def list_outputs(self):
        return ['output', 'mask']

    def num_visible_outputs(self):
        return 1

    infer_shape_uses_outputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        d = in_shapes[0]
        return [d], [d, d], []

    def infer_type(self, in_types):
        t = in_types[0]
        return [t], [t, t], []

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        if not (is_train or self.mode == 'always') or self.p <= 0:
            return [x, xp.ones_like(x)]
        shape = list(x.shape)
        for a in self.axes:
            shape[a] = 1
        if self.p >= 1:
            # MXNet's mask is keep * (1 / (1 - p)) = 0 * inf: NaN, and so are the output
            # and the gradient (its test_dropout checks this)
            mask = xp.full(tuple(shape), np.nan if x.dtype.kind == 'f' else 0, dtype=x.dtype)
        else:
            keep = random_state(xp).random_sample(tuple(shape)) >= self.p
            mask = (keep * (1.0 / (1.0 - self.p))).astype(x.dtype)
        return [x * mask, xp.ascontiguousarray(xp.broadcast_to(mask, x.shape))]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        return [out_grads[0] * outputs[1]]


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
