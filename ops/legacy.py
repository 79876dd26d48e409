"""Legacy operators MXNet 1.9.1 still registers for old checkpoints (``*-symbol.json``).

``Convolution_v1`` and ``Pooling_v1`` are the modern operators' maths with the old
parameter sets (``Pooling_v1``: no ``p_value``, ``count_include_pad``, ``layout``,
``cudnn_off``; pool types max/avg/sum, conventions valid/full; average pooling counts the
padding). ``BatchNorm_v1`` normalises over every axis but 1 like ``BatchNorm`` but:

* its hidden/optional output ``var`` is the batch VARIANCE (BatchNorm gives 1/sqrt(var+eps));
* the moving statistics are updated in BACKWARD, not in the training forward (as in MXNet's
  batch_norm_v1: a forward alone leaves moving_mean/moving_var untouched);
* with ``fix_gamma`` MXNet writes 1 into the gamma argument; here gamma acts as 1 without
  being overwritten (deliberate difference), and its gradient is 0 in both.

``IdentityAttachKLSparseReg`` is the identity whose backward adds a KL sparseness penalty:
backward first updates the auxiliary state ``moving_avg`` (C,) to
``momentum * moving_avg + (1 - momentum) * mean(data, axis=0)`` and then returns
``dy + penalty * (-target / moving_avg + (1 - target) / (1 - moving_avg))``. MXNet's
backward only works for 2-D data (N, C) (it fails in mshadow otherwise), so other ranks
are refused by shape inference here; MXNet accepts only float32, here any float type.

Internal helpers: ``_identity_with_attr_like_rhs`` (lhs, gradient to lhs only),
``_scatter_plus_scalar`` / ``_scatter_minus_scalar`` / ``_scatter_elemwise_div`` (the sparse
variants; on dense arrays they equal ``_plus_scalar`` / ``_minus_scalar`` / ``elemwise_div``),
and the forward-only ``_grad_add`` (lhs + rhs), ``_slice_assign`` (alias ``_crop_assign``:
lhs with ``lhs[begin:end:step] = rhs``) and ``_slice_assign_scalar`` (alias
``_crop_assign_scalar``: the slice set to ``scalar``). MXNet registers no gradient for the
last three (``backward`` raises there); here they are ``no_grad`` (zero gradients).

``Crop`` (``num_args`` 1 or 2, inputs ``arg0``/``arg1``): NCHW data cropped to ``h_w``
or to the height and width of the second input, at ``offset`` (y, x) or centred
(``(H - h) // 2``); the second input gets a zero gradient. Deliberate difference: ``Crop``
accepts any floating point type (MXNet only float32) and checks offsets and the crop_like
size in shape inference (MXNet at run time).
"""
import numpy as np

from symgraph.opdef import (Operator, Param, ShapeError, Step, TypeInferenceError,
                            register, unify_shape)

from ._util import sliced_len
from .binary import ElemwiseAdd, ElemwiseDiv
from .conv import Convolution
from .norm import BatchNorm
from .pooling import Pooling
from .scalar import MinusScalar, PlusScalar
from .slicing import Slice
from symgraph.base import ParameterError


@register
class ConvolutionV1(Convolution):
    """``Convolution`` under its MXNet 0.x name: same parameters and maths, 2-D or 3-D."""

    name = 'Convolution_v1'

    def check(self):
        if len(self.kernel) not in (2, 3):
            raise ParameterError('Convolution_v1: kernel must be (h, w) or (d, h, w), got %s'
                                 % (self.kernel,))
        super().check()


class PoolingV1(Pooling):
    """``Pooling`` with the parameters of MXNet 0.x's pooling (2-D or 3-D windows)."""

    name = 'Pooling_v1'
    pool_type = Param(str, 'max', choices=('max', 'avg', 'sum'))
    pooling_convention = Param(str, 'valid', choices=('valid', 'full'))
    # fixed values of the modern parameters Pooling_v1 does not have
    p_value = None
    count_include_pad = None
    layout = None
    cudnn_off = False

    def check(self):
        if not self.global_pool and len(self.kernel) not in (2, 3):
            raise ParameterError('Pooling_v1: kernel must be (y, x) or (d, y, x), got %s'
                                 % (self.kernel,))
        super().check()


PoolingV1._params = {k: v for k, v in PoolingV1._params.items()
                     if k in ('kernel', 'pool_type', 'global_pool', 'pooling_convention',
                              'stride', 'pad')}
PoolingV1.param_order = ('kernel', 'pool_type', 'global_pool', 'pooling_convention',
                         'stride', 'pad')
register(PoolingV1)


class BatchNormV1(BatchNorm):
    """MXNet 0.x batch normalisation over axis 1 (data 2-D or 4-D); see the module notes."""

    name = 'BatchNorm_v1'
    aliases = ()
    writes_into = False     # its own forward/backward below return new arrays
    axis = 1
    cudnn_off = False
    min_calib_range = None
    max_calib_range = None

    def infer_shape(self, in_shapes):
        d = in_shapes[0]
        if d is not None and len(d) not in (2, 4):
            raise ShapeError('BatchNorm_v1: data must be 2-D (N, C) or 4-D (N, C, H, W), '
                             'got %s' % (tuple(d),))
        return super().infer_shape(in_shapes)

    def bind(self, ctx, in_shapes, in_dtypes):
        # (its own forward/backward keep nothing: the plain Step, not BatchNorm's)
        return Step(self, ctx)

    def _stats(self, xp, x):
        axes = tuple(i for i in range(x.ndim) if i != 1)
        mean = x.mean(axis=axes)
        bs = (1, -1) + (1,) * (x.ndim - 2)
        xc = x - mean.reshape(bs)
        return mean, (xc * xc).mean(axis=axes), bs

    def forward(self, xp, inputs, aux, is_train):
        data, gamma, beta = inputs
        x = data
        if is_train and not self.use_global_stats:
            mean, var, bs = self._stats(xp, x)
        else:
            bs = (1, -1) + (1,) * (x.ndim - 2)
            mean = aux[0].astype(x.dtype, copy=False)
            var = aux[1].astype(x.dtype, copy=False)
        g = xp.ones_like(gamma) if self.fix_gamma else gamma
        inv = 1.0 / xp.sqrt(var + x.dtype.type(self.eps))
        out = (x - mean.reshape(bs)) * (g * inv).reshape(bs) + beta.reshape(bs)
        return [out.astype(data.dtype, copy=False), mean, var]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        data, gamma, _ = inputs
        x, dy = data, out_grads[0]
        bs = (1, -1) + (1,) * (x.ndim - 2)
        axes = tuple(i for i in range(x.ndim) if i != 1)
        mean, var = outputs[1], outputs[2]
        if not self.use_global_stats:
            mom = x.dtype.type(self.momentum)
            aux[0][...] = aux[0] * mom + mean * (1 - mom)
            aux[1][...] = aux[1] * mom + var * (1 - mom)
        g = xp.ones_like(gamma) if self.fix_gamma else gamma
        inv = 1.0 / xp.sqrt(var + x.dtype.type(self.eps))
        xhat = (x - mean.reshape(bs)) * inv.reshape(bs)
        sum_dy = dy.sum(axis=axes)
        sum_dy_xhat = (dy * xhat).sum(axis=axes)
        dx = None
        if need[0]:
            if self.use_global_stats:
                dx = dy * (g * inv).reshape(bs)
            else:
                m = x.size // x.shape[1]
                dx = (g * inv).reshape(bs) * (dy - (sum_dy / m).reshape(bs)
                                              - xhat * (sum_dy_xhat / m).reshape(bs))
        dgamma = (xp.zeros_like(gamma) if self.fix_gamma else sum_dy_xhat) if need[1] else None
        return [dx, dgamma, sum_dy if need[2] else None]


BatchNormV1._params = {k: v for k, v in BatchNormV1._params.items()
                       if k in ('eps', 'momentum', 'fix_gamma', 'use_global_stats',
                                'output_mean_var')}
register(BatchNormV1)


@register
class IdentityWithAttrLikeRhs(Operator):
    """out = lhs (shape and type from lhs, which must match rhs); gradient to lhs only."""

    name = '_identity_with_attr_like_rhs'
    needs_inputs = False

    def list_arguments(self):
        return ['lhs', 'rhs']

    def forward(self, xp, inputs, aux, is_train):
        return [inputs[0].copy()]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        dy = out_grads[0]
        return [dy if need[0] else None, xp.zeros_like(dy) if need[1] else None]


@register
class ScatterPlusScalar(PlusScalar):
    """``_plus_scalar`` (the sparse-storage variant; dense arrays give the same)."""
    name, aliases = '_scatter_plus_scalar', ()


@register
class ScatterMinusScalar(MinusScalar):
    """``_minus_scalar`` (the sparse-storage variant; dense arrays give the same)."""
    name, aliases = '_scatter_minus_scalar', ()


@register
class ScatterElemwiseDiv(ElemwiseDiv):
    """``elemwise_div`` (the sparse-storage variant; dense arrays give the same)."""
    name, aliases = '_scatter_elemwise_div', ()


@register
class GradAdd(ElemwiseAdd):
    """lhs + rhs as the executor accumulates gradients; MXNet defines no gradient."""
    name, aliases = '_grad_add', ()
    no_grad = True

    def grads(self, xp, a, b, y, dy):
        return xp.zeros_like(a), xp.zeros_like(b)


@register
class SliceAssign(Slice):
    """lhs with ``lhs[begin:end:step] = rhs``; rhs must have the slice's shape."""

    name = '_slice_assign'
    aliases = ('_crop_assign',)
    no_grad = True
    needs_inputs = False

    def list_arguments(self):
        return ['lhs', 'rhs']

    infer_shape_uses_outputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        d = in_shapes[0] if out_shapes is None else unify_shape(in_shapes[0], out_shapes[0])
        if d is None:
            return list(in_shapes), [None], []
        sl = self._sl(d)
        want = tuple(sliced_len(s, n) for s, n in zip(sl, d)) + tuple(d[len(sl):])
        try:
            r = unify_shape(in_shapes[1], want)
        except ShapeError:
            raise ShapeError('_slice_assign: rhs has shape %s but the slice of lhs %s is %s'
                             % (tuple(in_shapes[1]), tuple(d), want)) from None
        return [d, r], [d], []

    def forward(self, xp, inputs, aux, is_train):
        out = inputs[0].copy()
        out[self._sl(out.shape)] = inputs[1]
        return [out]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        return [xp.zeros_like(x) if n else None for x, n in zip(inputs, need)]


@register
class SliceAssignScalar(SliceAssign):
    """data with ``data[begin:end:step] = scalar``."""

    name = '_slice_assign_scalar'
    aliases = ('_crop_assign_scalar',)
    scalar = Param(float, 0.0, doc='the value written into the slice')
    param_order = ('scalar', 'begin', 'end', 'step')

    def list_arguments(self):
        return ['data']

    infer_shape_uses_outputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        d = in_shapes[0] if out_shapes is None else unify_shape(in_shapes[0], out_shapes[0])
        if d is not None:
            self._sl(d)
        return [d], [d], []

    def forward(self, xp, inputs, aux, is_train):
        out = inputs[0].copy()
        out[self._sl(out.shape)] = np.asarray(self.scalar).astype(out.dtype)
        return [out]


@register
class IdentityAttachKLSparseReg(Operator):
    """Identity forward; backward adds the KL sparseness penalty (see the module notes)."""

    name = 'IdentityAttachKLSparseReg'
    sparseness_target = Param(float, 0.1, doc='the target mean activation')
    penalty = Param(float, 0.001, doc='weight of the KL penalty')
    momentum = Param(float, 0.9, doc='decay of the moving average of activations')
    needs_inputs = True

    def list_auxiliary_states(self):
        return ['moving_avg']

    def input_init(self):
        return {'moving_avg': '["zero", {}]'}

    def infer_shape(self, in_shapes):
        d = in_shapes[0]
        if d is None:
            return [None], [None], [in_shapes[1]]
        if len(d) != 2:
            raise ShapeError('IdentityAttachKLSparseReg: data must be 2-D (N, C) (MXNet\'s '
                             'backward fails otherwise), got %s' % (tuple(d),))
        try:
            a = unify_shape(in_shapes[1], (d[1],))
        except ShapeError:
            raise ShapeError('IdentityAttachKLSparseReg: moving_avg has shape %s but (%d,) '
                             'is expected from data %s'
                             % (tuple(in_shapes[1]), d[1], tuple(d))) from None
        return [d], [d], [a]

    def infer_type(self, in_types):
        t = in_types[0] if in_types[0] is not None else in_types[1]
        t = None if t is None else np.dtype(t)
        return [t], [t], [t]

    def forward(self, xp, inputs, aux, is_train):
        return [inputs[0].copy()]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        x, dy = inputs[0], out_grads[0]
        mom = x.dtype.type(self.momentum)
        avg = aux[0]
        avg[...] = avg * mom + x.mean(axis=0) * (1 - mom)
        t = x.dtype.type(self.sparseness_target)
        reg = x.dtype.type(self.penalty) * (-t / avg + (1 - t) / (1 - avg))
        return [dy + reg.reshape(1, -1).astype(dy.dtype, copy=False) if need[0] else None]


# --- Crop --------------------------------------------------------------------------------
@register
class Crop(Operator):
    """Crop NCHW data to ``h_w`` or to the second input's height and width."""

    name = 'Crop'
    key_var_num_args = 'num_args'
    num_args = Param(int, doc='1: crop to h_w; 2: crop to the second input (crop_like)')
    offset = Param('shape', (0, 0), doc='crop offset (y, x)')
    h_w = Param('shape', (0, 0), doc='crop height and width (h, w)')
    center_crop = Param(bool, False, doc='crop the centre instead of at offset')

    def check(self):
        if self.num_args not in (1, 2):
            raise ParameterError('Crop: num_args must be 1 or 2, got %d' % self.num_args)

    def list_arguments(self):
        return ['arg%d' % i for i in range(self.num_args)]

    def _hw(self, data, like):
        if self.num_args == 1:
            h, w = self.h_w
            for v, d, what in ((h, data[2], 'height'), (w, data[3], 'width')):
                if v < 1:
                    raise ShapeError('Crop: the crop %s in h_w=%s must be at least 1'
                                     % (what, self.h_w))
                if d > 0 and v > d:
                    raise ShapeError('Crop: the crop %s in h_w=%s exceeds that of data %s'
                                     % (what, self.h_w, tuple(data)))
            return h, w
        return like[2], like[3]

    def _offsets(self, data, h, w):
        if self.center_crop:
            return (data[2] - h) // 2, (data[3] - w) // 2
        for i, (d, v, what) in enumerate(((data[2], h, 'height'), (data[3], w, 'width'))):
            if v > d:
                raise ShapeError('Crop: data %s is smaller than the crop (%d, %d)'
                                 % (tuple(data), h, w))
            if not 0 <= self.offset[i] <= d - v:
                raise ShapeError('Crop: offset %s leaves the data %s for a crop of (%d, %d)'
                                 % (self.offset, tuple(data), h, w))
        return self.offset[0], self.offset[1]

    def infer_shape(self, in_shapes):
        data = in_shapes[0]
        like = in_shapes[1] if self.num_args == 2 else None
        if data is not None and len(data) != 4:
            raise ShapeError('Crop: data must be 4-D NCHW, got %s' % (tuple(data),))
        if like is not None and len(like) != 4:
            raise ShapeError('Crop: crop_like must be 4-D NCHW, got %s' % (tuple(like),))
        ins = list(in_shapes[:self.num_args])
        if data is None or (self.num_args == 2 and like is None):
            return ins, [None], []
        h, w = self._hw(data, like)
        if all(d > 0 for d in (data[2], data[3], h, w)):
            self._offsets(data, h, w)
        return ins, [(data[0], data[1], h, w)], []

    def infer_type(self, in_types):
        return list(in_types[:self.num_args]), [in_types[0]], []

    def _window(self, x, like):
        h, w = self._hw(x.shape, like)
        oy, ox = self._offsets(x.shape, h, w)
        return (slice(None), slice(None), slice(oy, oy + h), slice(ox, ox + w))

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        like = inputs[1].shape if self.num_args == 2 else None
        return [x[self._window(x, like)]]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        x = inputs[0]
        like = inputs[1].shape if self.num_args == 2 else None
        grads = [None] * self.num_args
        if need[0]:
            gx = xp.zeros(x.shape, dtype=out_grads[0].dtype)
            gx[self._window(x, like)] = out_grads[0]
            grads[0] = gx
        if self.num_args == 2 and need[1]:
            grads[1] = xp.zeros_like(inputs[1])
        return grads


# ---- the legacy imperative NDArray functions -----------------------------------------------
@register
class CopyTo(Operator):
    """``_copyto(data)``: a copy of data (what ``NDArray.copyto`` runs in MXNet); gradient
    the head gradient (MXNet's ``ElemwiseGradUseNone{"_copyto"}``). ``mx.nd._internal.
    _copyto(x, out=y)`` casts into y's dtype, as MXNet's ``CopyFromTo``."""

    name = '_copyto'
    needs_inputs = False

    def list_arguments(self):
        return ['data']

    def infer_shape(self, in_shapes):
        return [in_shapes[0]], [in_shapes[0]], []

    def forward(self, xp, inputs, aux, is_train):
        return [inputs[0].copy()]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        return [out_grads[0] if need[0] else None]


@register
class SetValue(Operator):
    """``_set_value(src)``: an array filled with ``src`` as a float32 (MXNet's ``real_t``),
    of the shape its consumer gives (MXNet's node has no shape; ``mx.nd._internal.
    _set_value(v, out=y)`` fills y, cast to y's dtype: 2.75 into int32 is 2)."""

    name = '_set_value'
    src = Param(float, doc='the value (a float32, as MXNet\'s real_t)')
    no_grad = True
    needs_inputs = False
    infer_shape_uses_outputs = True

    def list_arguments(self):
        return []

    def infer_shape(self, in_shapes, out_shapes=None):
        return [], [out_shapes[0] if out_shapes else None], []

    def infer_type(self, in_types):
        return [], [np.dtype(np.float32)], []

    def fitted(self, in_shapes, out_shapes):
        want = out_shapes[0]
        if want is None or 0 in tuple(want):
            raise ShapeError('_set_value: the array\'s shape comes from its consumer, which did '
                             'not give one (inferred %s)' % (want,))
        op = type(self)(**self._values)
        op._fix(_shape=tuple(want))
        return op

    def forward(self, xp, inputs, aux, is_train):
        shape = getattr(self, '_shape', None)
        if shape is None:
            raise ShapeError('_set_value: no shape; give out= (mx.nd) or a consumer that '
                             'fixes it (mx.sym)')
        return [xp.full(shape, np.float32(self.src), dtype=np.float32)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        return []


@register
class OneHotEncode(Operator):
    """``_onehot_encode(lhs, rhs)`` (``mx.nd.onehot_encode(indices, out)``): (N, K) of rhs's
    dtype with ``out[i, k] = (k == int(lhs[i]))`` for lhs (N,) and rhs (N, K) (only its shape
    counts); an index outside [0, K) gives a row of zeros; no gradient, as MXNet's. Here it
    also composes in ``mx.sym`` (MXNet's fails: "Not enough argument") and takes any
    floating point type (MXNet: float32 only; integers are refused in both)."""

    name = '_onehot_encode'
    no_grad = True
    needs_inputs = False

    def list_arguments(self):
        return ['lhs', 'rhs']

    def infer_shape(self, in_shapes):
        lhs, rhs = (None if s is None else tuple(s) for s in in_shapes[:2])
        if lhs is not None and len(lhs) != 1 or rhs is not None and len(rhs) != 2:
            raise ShapeError('_onehot_encode: lhs must be 1-D and rhs 2-D (OneHotEncode only '
                             'support 1d index), got %s and %s' % (lhs, rhs))
        if lhs is not None and rhs is not None and lhs[0] != rhs[0]:
            raise ShapeError('_onehot_encode: lhs has %d entries but rhs %d rows'
                             % (lhs[0], rhs[0]))
        if rhs is not None and lhs is None:
            lhs = rhs[:1]
        return [lhs, rhs], [rhs], []

    def infer_type(self, in_types):
        for k, t in zip(('lhs', 'rhs'), in_types[:2]):
            if t is not None and np.dtype(t).kind != 'f':
                raise TypeInferenceError('_onehot_encode: %r is %s; one_hot_encode only '
                                         'support float32 (here: floating point) as '
                                         'input/output' % (k, np.dtype(t).name))
        t = in_types[1] if in_types[1] is not None else np.dtype(np.float32)
        return [in_types[0], t], [t], []

    def forward(self, xp, inputs, aux, is_train):
        lhs, rhs = inputs
        i = xp.trunc(lhs).astype(np.int64)
        return [(xp.arange(rhs.shape[1])[None, :] == i[:, None]).astype(rhs.dtype)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        return [None, None]
