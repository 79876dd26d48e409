"""bfloat16 variants of the operators the CPU backend has bfloat16 kernels for:
Convolution (also as the inference passes' FusedConvolution: BatchNorm folded, activation
and residual sum after it), FullyConnected (also as FusedFullyConnected: BatchNorm folded),
Activation, softmax / log_softmax, Pooling, BatchNorm (float32 parameters and statistics,
as MXNet's bf16 lists keep them) and Concat.

A plan (or ``mx.nd``) given bfloat16 inputs asks the ``instead`` rule table with the reason
``'bfloat16'`` (rows in ``ops/_cpu_rules.py``) and runs the variant made here: its forward
goes through the backend's bfloat16 kernel (``cpu_kernel('conv_forward_bf16')``, ...:
bfloat16 in and out, float32 accumulation, as MXNet 1.9.1's MKLDNN bf16 operators), and
where the kernel declines (no backend, a case oneDNN refuses) computes in float32 and rounds,
as every operator without a bfloat16 kernel does (``opdef.bind_step``). Backward computes
in float32 and rounds the gradients to their inputs' types (MXNet's bf16 training runs its
backward kernels in float32 too, between ``amp_cast`` nodes). Variants are declared with
``opdef.takes_bfloat16``, so the dispatch does not widen their inputs first.
"""
import numpy as np

from symgraph.opdef import Step, cpu_kernel, is_bfloat16, takes_bfloat16

from ._fused import eltwise_post_ops
from .conv import Convolution, FusedConvolution
from ._util import norm_axis
from .nn import _ACT_ALPHA, Activation, FullyConnected, FusedFullyConnected
from .norm import BatchNorm
from .pooling import Pooling, PoolingChannelsLast
from .slicing import Concat
from .softmax import LogSoftmax, Softmax

_F32 = np.dtype(np.float32)


def _wide(a):
    return a.astype(np.float32) if a is not None and is_bfloat16(a.dtype) else a


class _Bf16Kernel:
    """The variant's compute: ``_bf16_forward`` (a kernel call, or None; ``dest``: the
    array offered for the output, which a kernel may write into), else the operator's own
    float32 forward on widened copies, rounded; backward likewise in float32. No state;
    other results are new arrays, which the executor copies in."""

    def bind(self, ctx, in_shapes, in_dtypes):
        return Step(self, ctx)

    def fast_forward(self, xp, is_train, in_dtypes=None):
        return None

    def forward(self, xp, inputs, aux, is_train, out=None, **kw):
        if xp is np:
            y = self._bf16_forward(inputs, is_train, out[0] if out else None)
            if y is not None:
                return [y]
        x_type = inputs[0].dtype
        outs = super().forward(xp, [_wide(a) for a in inputs], [_wide(a) for a in aux],
                               is_train)
        return [o.astype(x_type) if o.dtype == _F32 and is_bfloat16(x_type) else o
                for o in outs]

    def backward(self, xp, out_grads, inputs, outputs, aux, need, grad_out=None, **kw):
        kw.pop('replays', None)
        grads = super().backward(xp, [_wide(g) for g in out_grads],
                                 [_wide(a) for a in inputs], [_wide(o) for o in outputs],
                                 [_wide(a) for a in aux], need, **kw)
        return [g if g is None or x is None or g.dtype == x.dtype else g.astype(x.dtype)
                for g, x in zip(grads, inputs)]

    def _bf16_forward(self, inputs, is_train, dest=None):
        raise NotImplementedError


def _all_bf16(arrays):
    return all(a is None or is_bfloat16(a.dtype) for a in arrays)


@takes_bfloat16
class Bf16Convolution(_Bf16Kernel, Convolution):
    """Convolution in bfloat16 (oneDNN's bf16 convolution; float32 or bf16 bias)."""

    def _bf16_forward(self, inputs, is_train, dest=None):
        x, w = inputs[0], inputs[1]
        b = None if self.no_bias else inputs[2]
        kern = cpu_kernel('conv_forward_bf16')
        if kern is None or self.channels_last or not _all_bf16([x, w]):
            return None
        shapes = [x.shape, w.shape] + ([] if b is None else [b.shape])
        yshape = self.infer_shape([tuple(s) for s in shapes])[1][0]
        return kern(x, w, b, self.st, self.pd, self.dl, self.num_group, yshape, is_train)


@takes_bfloat16
class Bf16FullyConnected(_Bf16Kernel, FullyConnected):
    """FullyConnected in bfloat16 (oneDNN's bf16 matmul)."""

    def _bf16_forward(self, inputs, is_train, dest=None):
        x, w = inputs[0], inputs[1]
        b = None if self.no_bias else inputs[2]
        kern = cpu_kernel('fc_forward_bf16')
        if kern is None or not _all_bf16([x, w]) or w.ndim != 2 \
                or (b is not None and b.size != w.shape[0]):
            return None
        if self.flatten:
            x2, shape = x.reshape(x.shape[0], -1), (x.shape[0], w.shape[0])
        else:
            x2, shape = x.reshape(-1, x.shape[-1]), tuple(x.shape[:-1]) + (w.shape[0],)
        y = kern(x2, w, None if b is None else b.reshape(-1))
        return None if y is None else y.reshape(shape)


@takes_bfloat16
class Bf16Activation(_Bf16Kernel, Activation):
    """Activation in bfloat16 (oneDNN's bf16 eltwise; softsign in float32)."""

    def _bf16_forward(self, inputs, is_train, dest=None):
        kern = cpu_kernel('eltwise_forward_bf16')
        a = self.act_type
        if kern is None or a == 'softsign':
            return None
        return kern(inputs[0], a, _ACT_ALPHA.get(a, 0.0))


def _softmax_bf16(op, x, log):
    if op.temperature not in (None, 1.0) or op.use_length or op.dtype is not None:
        return None
    kern = cpu_kernel('softmax_forward_bf16')
    return None if kern is None else kern(x, op.axis % x.ndim, log)


@takes_bfloat16
class Bf16Softmax(_Bf16Kernel, Softmax):
    """softmax in bfloat16 (oneDNN's bf16 softmax)."""

    def _bf16_forward(self, inputs, is_train, dest=None):
        return _softmax_bf16(self, inputs[0], False)


@takes_bfloat16
class Bf16LogSoftmax(_Bf16Kernel, LogSoftmax):
    """log_softmax in bfloat16 (oneDNN's bf16 log-softmax)."""

    def _bf16_forward(self, inputs, is_train, dest=None):
        return _softmax_bf16(self, inputs[0], True)


@takes_bfloat16
class Bf16Pooling(_Bf16Kernel, Pooling):
    """Pooling in bfloat16 (oneDNN's bf16 pooling forward; max and average)."""

    def _bf16_forward(self, inputs, is_train, dest=None):
        x = inputs[0]
        kern = cpu_kernel('pool_forward_bf16')
        if kern is None or self.layout not in (None, 'NCW', 'NCHW', 'NCDHW'):
            return None
        spec = self._onednn_spec(tuple(x.shape), 'forward')
        if spec is None:
            return None
        kind, kernel, stride, pad_l, pad_r, out = spec
        return kern(x, kind, kernel, stride, pad_l, pad_r, out, self.out_layout, out=dest)


@takes_bfloat16
class Bf16PoolingChannelsLast(Bf16Pooling, PoolingChannelsLast):
    """The layout pass's channels-last pooling in bfloat16."""


@takes_bfloat16
class Bf16FusedConvolution(FusedConvolution):
    """The inference passes' fused convolution on bfloat16 data: BatchNorm folded into
    bfloat16 weights, the activations before a residual sum as oneDNN post-ops, the sum
    (and a relu after it) through oneDNN's bf16 binary add; anything else in float32,
    rounded."""

    def compute(self, xp, base, per, state, dest=None):
        x = base[0]
        if xp is np and _all_bf16(base[:2]) and min(self.base.pd) >= 0:
            y = self._bf16(base, per, state, dest)
            if y is not None:
                return y
        wide = super().compute(xp, [_wide(a) for a in base],
                               [[_wide(a) for a in arrays] for arrays in per], None)
        return wide.astype(x.dtype) if is_bfloat16(x.dtype) else wide

    def _spec(self, x, w, b, state):
        """(data shape, yshape, all oneDNN post-ops, index of the sum or None, the
        post-ops before it, after it), or None where the kernel does not take the chain;
        worked out once per data shape (kept in the Step's state)."""
        got = None if state is None else state.get('bf16_spec')
        if got is not None and got[0] == x.shape:
            return got[1]
        conv = self.base
        rest = self.post_ops[self.n_affine:]
        spec = None
        if all(p.kind in ('sum', 'eltwise') for p in rest):
            ops = eltwise_post_ops(rest)
            at = ops.index(('sum',)) if ('sum',) in ops else None
            post = () if at is None else ops[at + 1:]
            if post in ((), (('eltwise', 'relu', 0.0),)):
                shapes = [x.shape, w.shape] + ([] if b is None else [b.shape])
                yshape = conv.infer_shape([tuple(s) for s in shapes])[1][0]
                spec = (tuple(yshape), ops, at, ops if at is None else ops[:at], post)
        if state is not None:
            state['bf16_spec'] = (x.shape, spec)
        return spec

    def _bf16(self, base, per, state, dest):
        conv, x, w = self.base, base[0], base[1]
        b = None if conv.no_bias else base[2]
        spec = self._spec(x, w, b, state)
        if spec is None:
            return None
        yshape, ops, at, pre, post = spec
        kern = cpu_kernel('conv_forward_bf16')
        add = cpu_kernel('add_bf16')
        if kern is None or (at is not None and add is None):
            return None
        wf, bf, token = self.folded(np, w, b, per, state, (-1,) + (1,) * (w.ndim - 1))
        # (the folded weights are constants: reordered once per token, in this layer's
        # own primitive where the Step keeps one; a call on the same arrays as the last
        # one, every forward of an inference plan, is replayed from the memo)
        token = token if state is not None else None
        cache = None if state is None else state['primitives']
        memo = None if state is None else state['memo']
        k = self.n_affine
        if at is not None and self.out_layout is not None:
            # the sum as oneDNN's post-op (into the residual's memory where the plan
            # gives it): no second pass over the activations
            y = kern(x, wf, bf, conv.st, conv.pd, conv.dl, conv.num_group, yshape, False,
                     ops, self.out_layout, token, cache, per[k + at][0], dest, memo)
            if y is not None:
                return y
        y = kern(x, wf, bf, conv.st, conv.pd, conv.dl, conv.num_group, yshape, False, pre,
                 self.out_layout, token, cache, out=None if at is not None else dest,
                 memo=None if at is not None else memo)
        if y is None or at is None:
            return y
        return add(y, per[k + at][0], relu=bool(post))


@takes_bfloat16
class Bf16BatchNorm(_Bf16Kernel, BatchNorm):
    """BatchNorm on bfloat16 data (oneDNN's bf16 batch normalisation): gamma, beta and the
    running statistics stay float32, as do the mean and inverse std outputs (MXNet 1.9.1's
    bf16 lists keep BatchNorm's parameters in float32, and its MKLDNN kernel takes them
    so). Inference normalises with the running statistics; a training forward with the
    batch's (oneDNN accumulates them in float32) updates the running ones as the float32
    operator does. Anything the kernel declines, and backward, in float32, rounded."""

    def forward(self, xp, inputs, aux, is_train, out=None, state=None):
        if xp is np:
            outs = self._bf16_bn(inputs, aux, is_train)
            if outs is not None:
                return outs
        x_type = inputs[0].dtype
        wide = BatchNorm.forward(self, xp, [_wide(a) for a in inputs],
                                 [_wide(a) for a in aux], is_train)
        # (only the data output follows the data's type; mean and inverse std are the
        # parameters')
        return [wide[0].astype(x_type) if is_bfloat16(x_type) else wide[0]] + wide[1:]

    def _bf16_bn(self, inputs, aux, is_train):
        data, gamma, beta = inputs
        moving_mean, moving_var = aux
        kern = cpu_kernel('batch_norm_forward_bf16')
        if kern is None or not is_bfloat16(data.dtype) or not 2 <= data.ndim <= 5 \
                or self.axis % data.ndim != 1 \
                or any(a.dtype != _F32 for a in (gamma, beta, moving_mean, moving_var)):
            return None
        eps, mom, rest = self._f32_constants()
        if self.fix_gamma:
            gamma[...] = 1          # (as the float32 operator: what a checkpoint saves)
        if is_train and not self.use_global_stats:
            r = kern(data, gamma, beta, eps)
            if r is None:
                return None
            y, mean, var = r
            moving_mean *= mom
            moving_mean += mean * rest
            moving_var *= mom
            moving_var += var * rest
        else:
            y = kern(data, gamma, beta, eps, moving_mean, moving_var)
            if y is None:
                return None
            mean, var = moving_mean.copy(), moving_var
        inv = np.add(var, eps, dtype=np.float32)
        np.sqrt(inv, out=inv)
        return [y, mean, np.divide(1.0, inv, out=inv)]


@takes_bfloat16
class Bf16Concat(_Bf16Kernel, Concat):
    """Concat of bfloat16 arrays (oneDNN's concat primitive: a copy, exact)."""

    def _bf16_forward(self, inputs, is_train, dest=None):
        kern = cpu_kernel('concat_bf16')
        if kern is None or not _all_bf16(inputs):
            return None
        return kern(list(inputs), norm_axis(self.dim, inputs[0].ndim))


@takes_bfloat16
class Bf16FusedFullyConnected(FusedFullyConnected):
    """The inference passes' FullyConnected with BatchNorm folded in, on bfloat16 data:
    the folded weights and bias rounded to bfloat16 once per fold, the product through
    oneDNN's bf16 matmul; anything else in float32, rounded."""

    def compute(self, xp, base, per, state, dest=None):
        fc, x, w = self.base, base[0], base[1]
        if xp is np and _all_bf16(base[:2]) and w.ndim == 2:
            kern = cpu_kernel('fc_forward_bf16')
            if kern is not None:
                wf, bf, _ = self.folded(np, w, None if fc.no_bias else base[2], per, state,
                                        (-1, 1))
                x2 = x.reshape(x.shape[0], -1) if fc.flatten else x
                y = kern(x2, wf, bf) if x2.ndim == 2 else None
                if y is not None:
                    return y
        wide = super().compute(xp, [_wide(a) for a in base],
                               [[_wide(a) for a in arrays] for arrays in per], None)
        return wide.astype(x.dtype) if is_bfloat16(x.dtype) else wide


#: operator class -> its bfloat16 variant
VARIANTS = {Convolution: Bf16Convolution, FullyConnected: Bf16FullyConnected,
            Activation: Bf16Activation, Softmax: Bf16Softmax, LogSoftmax: Bf16LogSoftmax,
            Pooling: Bf16Pooling, PoolingChannelsLast: Bf16PoolingChannelsLast,
            BatchNorm: Bf16BatchNorm, Concat: Bf16Concat}


def bf16_instead(op, in_dtypes):
    """The bfloat16 variant of ``op`` where its data input is bfloat16, else None."""
    if not in_dtypes or not is_bfloat16(in_dtypes[0]):
        return None
    if type(op) is FusedConvolution:
        return Bf16FusedConvolution(op.base, op.post_ops, out_layout=op.out_layout)
    if type(op) is FusedFullyConnected:
        return Bf16FusedFullyConnected(op.base, op.post_ops)
    cls = VARIANTS.get(type(op))
    return None if cls is None else cls(**op._values)
