"""Convolution and Deconvolution (1-D, 2-D and 3-D): the operators.

Parameters, shape inference and the forward/backward wiring live here; the array arithmetic
(im2col/col2im, the grouped GEMMs, the CUDA dispatch) is in :mod:`symgraph.ops._conv_impl`.
Deconvolution is the convolution's arithmetic with the roles of data and output swapped:
its forward is :func:`conv_backward_data`, its data gradient :func:`conv_forward`.

Convolution also takes channels-last layouts (``layout`` NWC, NHWC, NDHWC: data
(N, *S, C), weight (num_filter, *kernel, C / num_group), out (N, *O, num_filter), MXNet
1.9.1's shapes). The arithmetic is the channels-first one on views with the channel axis
moved to position 1: the CPU backend takes such views of channels-last memory as they lie,
the array code reads any strides. MXNet 1.9.1 infers these shapes but runs them on GPUs
only; its CPU build refuses them at the first forward, as it refuses Deconvolution's
channels-last layouts, which symgraph refuses when the operator is made.
"""
import numpy as np

from symgraph.opdef import (Operator, Param, ShapeError, Step, register, same_type,
                            unify_shape)

from ._conv_impl import (_backend, conv_backward_data, conv_backward_weight, conv_forward,
                         conv_out_size)
from ._fused import FusedOperator, eltwise_post_ops
from symgraph.base import ParameterError

_LAYOUTS = ('None', 'NCW', 'NCHW', 'NCDHW', 'NWC', 'NHWC', 'NDHWC')
_FIRST = ('NCW', 'NCHW', 'NCDHW')
_LAST = ('NWC', 'NHWC', 'NDHWC')
_TUNE = ('None', 'fastest', 'limited_workspace', 'off')


class _ConvBase(Operator):
    """Parameters and shape checks shared by Convolution and Deconvolution."""

    kernel = Param('shape', doc='kernel size: (w,), (h, w) or (d, h, w)')
    stride = Param('shape', (), doc='stride, default 1 per axis')
    dilate = Param('shape', (), doc='dilation, default 1 per axis')
    pad = Param('shape', (), doc='zero padding, default 0 per axis')
    num_filter = Param(int, doc='number of output channels', minimum=1)
    num_group = Param(int, 1, doc='number of groups')
    cudnn_tune = Param(str, None, doc='ignored (cuDNN algorithm choice)', choices=_TUNE)
    cudnn_off = Param(bool, False, doc="don't use cuDNN for this node (symgraph's own CUDA "
                      'kernels on a GPU)')
    layout = Param(str, None, doc='NCW, NCHW or NCDHW; Convolution also NWC, NHWC or NDHWC',
                   choices=_LAYOUTS)

    #: whether the operator computes the channels-last layouts (Convolution only)
    takes_channels_last = False

    def check(self):
        nd = len(self.kernel)
        if nd not in (1, 2, 3):
            raise ParameterError('%s: kernel must have 1, 2 or 3 dimensions, got %s'
                                 % (self.name, self.kernel))
        for p in ('stride', 'dilate', 'pad') + (('adj',) if hasattr(self, 'adj') else ()):
            v = getattr(self, p)
            if v and len(v) != nd:
                raise ParameterError('%s: %s %s must have as many dimensions as kernel %s'
                                     % (self.name, p, v, self.kernel))
        if min(self.kernel) <= 0 or min(self.st) <= 0 or min(self.dl) <= 0:
            raise ParameterError('%s: kernel, stride and dilate must be positive' % self.name)
        valid = (_FIRST[nd - 1],) + ((_LAST[nd - 1],) if self.takes_channels_last else ())
        if self.layout not in (None, 'None') + valid:
            raise ParameterError('%s: a kernel of %d dimensions takes layout %s, got %s%s'
                                 % (self.name, nd, ' or '.join(valid), self.layout,
                                    '' if self.takes_channels_last or self.layout in _FIRST
                                    else ' (channels-last %s runs on GPUs only in MXNet '
                                    '1.9.1 and is not supported)' % self.name))
        if self.num_group <= 0 or self.num_filter % self.num_group:
            raise ParameterError('%s: num_filter %d must be divisible by num_group %d'
                                 % (self.name, self.num_filter, self.num_group))

    @property
    def channels_last(self):
        """Whether data, weight and output put the channels last (NWC, NHWC, NDHWC)."""
        return self.layout in _LAST

    def _shown(self, shape):
        """A channels-first data or weight shape (from the inference below) as the user's
        layout writes it, for messages."""
        shape = tuple(shape)
        return _last_shape(shape) if self.channels_last and shape else shape

    # stride, dilate and pad with MXNet's defaults filled in
    @property
    def st(self):
        return self.stride or (1,) * len(self.kernel)

    @property
    def dl(self):
        return self.dilate or (1,) * len(self.kernel)

    @property
    def pd(self):
        return self.pad or (0,) * len(self.kernel)

    def list_arguments(self):
        return ['data', 'weight'] + ([] if self.no_bias else ['bias'])

    def _check_data(self, dshape):
        """Checks the data's rank (``dshape`` in the operator's layout)."""
        nd = len(self.kernel)
        if len(dshape) != nd + 2:
            spatial = ('W', 'H, W', 'D, H, W')[nd - 1]
            raise ShapeError('data must be %d-D (%s) for a kernel of %s, got %s'
                             % (nd + 2, 'N, %s, C' % spatial if self.channels_last
                                else 'N, C, %s' % spatial, self.kernel, tuple(dshape)))

    def _check_channels(self, dshape):
        """Checks that the groups divide the data's channels (``dshape`` channels first)."""
        if dshape[1] and dshape[1] % self.num_group:
            raise ShapeError('data channels %d (shape %s) must be divisible by num_group %d'
                             % (dshape[1], self._shown(dshape), self.num_group))

    def _fill(self, in_shapes, i, shape, what):
        try:
            in_shapes[i] = unify_shape(in_shapes[i], shape)
        except ShapeError:
            show = self._shown if i == 1 else tuple
            raise ShapeError('%s has shape %s but %s is expected from data and parameters'
                             % (what, show(in_shapes[i]), show(shape))) from None

    def _channels_first_shapes(self, in_shapes, out_shapes):
        """(in_shapes, out_shapes) in channels-first order: data, weight and output have
        their last axis moved to position 1 (unknown shapes stay None)."""
        ins = [_first_shape(s) if i < 2 else s for i, s in enumerate(in_shapes)]
        return ins, [_first_shape(s) for s in (out_shapes or ())]

    def _channels_last_shapes(self, result):
        """:meth:`infer_shape`'s channels-first result in the channels-last layout."""
        ins, outs, aux = result
        return ([_last_shape(s) if i < 2 else s for i, s in enumerate(ins)],
                [_last_shape(s) for s in outs], aux)

    def infer_type(self, in_types):
        t = same_type(self, in_types)
        return [t] * len(in_types), [t], []

    #: forward computes into the executor's buffer, backward the data and weight gradients
    #: into theirs (the arithmetic's ``dest``): the outputs that backward keeps are then
    #: planned storage, reused by the gradients once read
    writes_into = True
    def backward_bias(self, xp, dy):
        return dy.reshape(dy.shape[0], dy.shape[1], -1).sum(axis=(0, 2))


@register
class Convolution(_ConvBase):
    """N-D convolution: out = correlate(data, weight) + bias.

    Shapes: data (N, C, *S), weight (num_filter, C / num_group, *kernel), bias (num_filter,),
    out (N, num_filter, *O) with O = (S + 2 pad - dilate (kernel - 1) - 1) // stride + 1;
    with a channels-last ``layout`` data (N, *S, C), weight (num_filter, *kernel,
    C / num_group), out (N, *O, num_filter).

    >>> import numpy as np
    >>> op = Convolution(kernel=(3,), num_filter=1, no_bias=True)
    >>> op.forward(np, [np.arange(5.).reshape(1, 1, 5), np.ones((1, 1, 3))], [], False)[0]
    array([[[3., 6., 9.]]])
    """

    name = 'Convolution'
    takes_channels_last = True
    workspace = Param(int, 1024, doc='ignored (MB of scratch space in MXNet)')
    no_bias = Param(bool, False, doc='no bias argument')
    param_order = ('kernel', 'stride', 'dilate', 'pad', 'num_filter', 'num_group',
                   'workspace', 'no_bias', 'cudnn_tune', 'cudnn_off', 'layout')

    #: a known output fills the data's batch size, and its spatial sizes where the stride
    #: is 1 (MXNet's ConvolutionShape does the same "incomplete shape inference")
    infer_shape_uses_outputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        dshape = in_shapes[0]
        if dshape is None:
            return list(in_shapes), [None], []
        self._check_data(dshape)
        if self.channels_last:
            ins, outs = self._channels_first_shapes(in_shapes, out_shapes)
            return self._channels_last_shapes(self._infer_first(ins, outs))
        return self._infer_first(list(in_shapes), out_shapes)

    def _infer_first(self, in_shapes, out_shapes):
        """:meth:`infer_shape` on channels-first shapes."""
        dshape = in_shapes[0]
        self._check_channels(dshape)
        oshape = out_shapes[0] if out_shapes else None
        if oshape is not None and len(oshape) == len(dshape) and 0 in dshape:
            dshape = list(dshape)
            dshape[0] = dshape[0] or oshape[0]
            for i, (k, t, p, d) in enumerate(zip(self.kernel, self.st, self.pd, self.dl)):
                if not dshape[2 + i] and oshape[2 + i] and t == 1:
                    dshape[2 + i] = oshape[2 + i] + d * (k - 1) - 2 * p
            in_shapes[0] = dshape = tuple(dshape)
        g, f = self.num_group, self.num_filter
        self._fill(in_shapes, 1, (f, dshape[1] // g) + tuple(self.kernel), 'weight')
        if not self.no_bias:
            self._fill(in_shapes, 2, (f,), 'bias')
        out = []
        for s, k, t, p, d in zip(dshape[2:], self.kernel, self.st, self.pd, self.dl):
            if s and d * (k - 1) + 1 > s + 2 * p:
                raise ShapeError('dilated kernel %s exceeds the padded input: data %s, pad %s'
                                 % (self.kernel, self._shown(dshape), self.pd))
            out.append(conv_out_size(s, k, t, p, d))
        return in_shapes, [(dshape[0], f) + tuple(out)], []

    def bind(self, ctx, in_shapes, in_dtypes):
        """A Step holding the CPU backend's recorded calls into the executor's arrays
        (:attr:`symgraph.opdef.Step.replays`), passed back as ``replays=``."""
        return Step(self, ctx, replays=True)

    def forward(self, xp, inputs, aux, is_train, out=None, replays=None):
        b = None if self.no_bias else inputs[2]
        dest = _offered(out, 0)
        if self.channels_last:
            view = _first_view(xp, dest)
            y = conv_forward(xp, _first(xp, inputs[0]), _first(xp, inputs[1]), b, self.st,
                             self.pd, self.dl, self.num_group, dest=view,
                             cudnn_off=self.cudnn_off)
            return [_last(xp, y, view, dest)]
        return [conv_forward(xp, inputs[0], inputs[1], b, self.st, self.pd, self.dl,
                             self.num_group, dest=dest, site=(replays, 'f'),
                             cudnn_off=self.cudnn_off)]

    def fast_forward(self, xp, is_train, in_dtypes=None):
        if self.channels_last:
            return None
        st, pd, dl, g, off = self.st, self.pd, self.dl, self.num_group, self.cudnn_off
        if self.no_bias:
            return lambda x, w: conv_forward(xp, x, w, None, st, pd, dl, g, cudnn_off=off)
        return lambda x, w, b: conv_forward(xp, x, w, b, st, pd, dl, g, cudnn_off=off)

    def backward(self, xp, out_grads, inputs, outputs, aux, need, grad_out=None,
                 replays=None):
        if self.channels_last:
            return self._backward_last(xp, out_grads[0], inputs, need, grad_out)
        x, w = inputs[0], inputs[1]
        dy = out_grads[0]
        grads = [None] * len(inputs)
        # each gradient lays dy out as its GEMM needs it (the weight's may be a wide grid)
        if need[0]:
            grads[0] = conv_backward_data(xp, dy, w, x.shape, self.st, self.pd, self.dl,
                                          self.num_group, dest=_offered(grad_out, 0),
                                          site=(replays, 'bd'), cudnn_off=self.cudnn_off)
        if need[1]:
            grads[1] = conv_backward_weight(xp, x, dy, self.kernel, self.st, self.pd,
                                            self.dl, self.num_group,
                                            dest=_offered(grad_out, 1),
                                            site=(replays, 'bw'), cudnn_off=self.cudnn_off)
        if not self.no_bias and need[2]:
            grads[2] = self.backward_bias(xp, dy)
        return grads

    def _backward_last(self, xp, dy, inputs, need, grad_out):
        """The channels-last gradients: the channels-first ones on moved-axis views
        (no replayed backend calls: the views are new objects at every call)."""
        x, w = _first(xp, inputs[0]), _first(xp, inputs[1])
        dyf = _first(xp, dy)
        grads = [None] * len(inputs)
        if need[0]:
            dest = _offered(grad_out, 0)
            view = _first_view(xp, dest)
            dx = conv_backward_data(xp, dyf, w, x.shape, self.st, self.pd, self.dl,
                                    self.num_group, dest=view, cudnn_off=self.cudnn_off)
            grads[0] = _last(xp, dx, view, dest)
        if need[1]:
            dest = _offered(grad_out, 1)
            view = _first_view(xp, dest)
            dw = conv_backward_weight(xp, x, dyf, self.kernel, self.st, self.pd, self.dl,
                                      self.num_group, dest=view, cudnn_off=self.cudnn_off)
            grads[1] = _last(xp, dw, view, dest)
        if not self.no_bias and need[2]:
            grads[2] = dy.reshape(-1, dy.shape[-1]).sum(axis=0)
        return grads


@register
class Deconvolution(_ConvBase):
    """Transposed convolution (the gradient of Convolution with respect to its data).

    Shapes: data (N, C, *S), weight (C, num_filter / num_group, *kernel), bias
    (num_filter,), out (N, num_filter, *O) with
    O = stride (S - 1) + dilate (kernel - 1) + 1 - 2 pad + adj. A nonzero ``target_shape``
    replaces ``pad`` and ``adj`` by the values giving that output, as MXNet computes them:
    total = stride (S - 1) + dilate (kernel - 1) + 1 - target, adj = total % 2,
    pad = (total + 1) // 2. ``no_bias`` defaults to True, as in MXNet.
    """

    name = 'Deconvolution'
    adj = Param('shape', (), doc='extra rows/columns at the end of the output')
    target_shape = Param('shape', (), doc='output spatial shape; overrides pad and adj')
    workspace = Param(int, 512, doc='ignored (MB of scratch space in MXNet)')
    no_bias = Param(bool, True, doc='no bias argument (MXNet default True)')
    param_order = ('kernel', 'stride', 'dilate', 'pad', 'adj', 'target_shape', 'num_filter',
                   'num_group', 'workspace', 'no_bias', 'cudnn_tune', 'cudnn_off', 'layout')

    def check(self):
        super().check()
        if self.target_shape and len(self.target_shape) != len(self.kernel):
            raise ParameterError('Deconvolution: target_shape %s must have as many dimensions '
                                 'as kernel %s' % (self.target_shape, self.kernel))

    def pad_adj(self, spatial):
        """(pad, adj) per axis for input spatial shape ``spatial`` (0 = unknown)."""
        nd = len(self.kernel)
        if self.target_shape and any(self.target_shape):
            pad, adj = [], []
            for s, k, t, d, tg in zip(spatial, self.kernel, self.st, self.dl,
                                      self.target_shape):
                total = t * (s - 1) + d * (k - 1) + 1
                if s and total < tg:
                    raise ShapeError('Deconvolution: target_shape %s is too big for data '
                                     'spatial shape %s' % (self.target_shape, tuple(spatial)))
                total -= tg
                pad.append((total + 1) // 2)
                adj.append(total % 2)
        else:
            pad, adj = list(self.pd), list(self.adj or (0,) * nd)
        for a, t in zip(adj, self.st):
            if a >= t:
                raise ShapeError('Deconvolution: adj %s must be smaller than stride %s'
                                 % (tuple(adj), self.st))
        return pad, adj

    def out_spatial(self, spatial):
        pad, adj = self.pad_adj(spatial)
        return tuple(t * (s - 1) + d * (k - 1) + 1 - 2 * p + a if s else 0
                     for s, k, t, d, p, a in zip(spatial, self.kernel, self.st, self.dl,
                                                 pad, adj))

    def infer_shape(self, in_shapes):
        in_shapes = list(in_shapes)
        dshape = in_shapes[0]
        if dshape is None:
            return in_shapes, [None], []
        self._check_data(dshape)
        self._check_channels(dshape)
        g, f = self.num_group, self.num_filter
        self._fill(in_shapes, 1, (dshape[1], f // g) + tuple(self.kernel), 'weight')
        if not self.no_bias:
            self._fill(in_shapes, 2, (f,), 'bias')
        out = self.out_spatial(dshape[2:])
        if any(o < 0 for o in out):
            raise ShapeError('Deconvolution: negative output shape %s for data %s'
                             % (out, tuple(dshape)))
        return in_shapes, [(dshape[0], f) + out], []

    def _forward(self, xp, x, w, b, dest=None):
        pad, _ = self.pad_adj(x.shape[2:])
        shape = (x.shape[0], self.num_filter) + self.out_spatial(x.shape[2:])
        y = conv_backward_data(xp, x, w, shape, self.st, pad, self.dl, self.num_group,
                               dest=dest, cudnn_off=self.cudnn_off)
        if b is not None:
            y += b.reshape((-1,) + (1,) * len(self.kernel))
        return y

    def forward(self, xp, inputs, aux, is_train, out=None):
        return [self._forward(xp, inputs[0], inputs[1],
                              None if self.no_bias else inputs[2], _offered(out, 0))]

    def backward(self, xp, out_grads, inputs, outputs, aux, need, grad_out=None):
        x, w = inputs[0], inputs[1]
        dy = out_grads[0]
        pad, _ = self.pad_adj(x.shape[2:])
        grads = [None] * len(inputs)
        if need[0]:
            grads[0] = conv_forward(xp, dy, w, None, self.st, pad, self.dl, self.num_group,
                                    dest=_offered(grad_out, 0), cudnn_off=self.cudnn_off)
        if need[1]:
            grads[1] = conv_backward_weight(xp, dy, x, self.kernel, self.st, pad, self.dl,
                                            self.num_group, dest=_offered(grad_out, 1),
                                            cudnn_off=self.cudnn_off)
        if not self.no_bias and need[2]:
            grads[2] = dy.sum(axis=(0,) + tuple(range(2, dy.ndim)))
        return grads


class FusedConvolution(FusedOperator):
    """Convolution with BatchNorm folded into its weights and residual sums and activations
    as post-ops of one oneDNN primitive (inference only; made by
    the ``fuse_post_ops`` and ``instead`` rows of ``ops/_cpu_rules.py`` for the inference
    passes)."""

    name = '_fused_Convolution'

    def __init__(self, base, post_ops, out_layout=None):
        super().__init__(base, post_ops)
        #: the memory order of the output (the layout pass's ``instead``); None: C order
        self._fix(out_layout=out_layout)
        # the residual's storage may take the output when it dies here (MXNet's in-place
        # sum): oneDNN's sum post-op then adds to it where it lies
        k = self._sum_input()
        self._fix(inplace=() if k is None else ((k, 0),))

    def _sum_input(self):
        """The index of the residual a 'sum' post-op adds, or None."""
        k = self._n_base()
        for p in self.post_ops:
            if p.kind == 'sum':
                return k
            k += len(p.inputs)
        return None

    def describe(self):
        text = super().describe()
        return text + ' -> channels last' if self.out_layout else text

    def compute(self, xp, base, per, state, dest=None):
        conv = self.base
        x, w = base[0], base[1]
        b = None if conv.no_bias else base[2]
        wf, bf, token = self.folded(xp, w, b, per, state, (-1,) + (1,) * (w.ndim - 1))
        k = self.n_affine
        rest = self.post_ops[k:]
        residual = next((a[0] for p, a in zip(rest, per[k:]) if p.kind == 'sum'), None)
        be = _backend(xp, x, wf, bf, residual)
        if be is not None and min(conv.pd) >= 0:
            # (the output shape and the oneDNN post-ops, worked out once per data shape)
            spec = None if state is None else state.get('spec')
            if spec is None or spec[0] != x.shape:
                out = tuple(conv_out_size(s, kk, t, p, d) for s, kk, t, p, d in
                            zip(x.shape[2:], w.shape[2:], conv.st, conv.pd, conv.dl))
                spec = (x.shape, out, x.shape[:1] + (w.shape[0],) + out,
                        eltwise_post_ops(rest))
                if state is not None:
                    state['spec'] = spec
            if min(spec[1]) > 0:
                y = be.conv_forward_fused(x, wf, bf, conv.st, conv.pd, conv.dl,
                                          conv.num_group, spec[2], spec[3], residual, token,
                                          None if state is None else state['primitives'],
                                          self.out_layout, dest,
                                          None if state is None else state['memo'])
                if y is not None:
                    return y
        # (straight into the plan's buffer when nothing follows; else the post-ops
        # write it last: the buffer may be the residual's own storage)
        y = conv_forward(xp, x, wf, bf, conv.st, conv.pd, conv.dl, conv.num_group,
                         dest=None if rest else dest, cudnn_off=conv.cudnn_off)
        return self.apply_rest(xp, y, per, k, dest)


def _offered(arrays, i):
    """The array offered for result ``i`` (``out=``/``grad_out=``), or None."""
    return arrays[i] if arrays and i < len(arrays) else None


def _first_shape(shape):
    """A channels-last shape (N, *S, C) as (N, C, *S); None (unknown) stays None."""
    if shape is None or len(shape) < 2:
        return shape
    shape = tuple(shape)
    return shape[:1] + shape[-1:] + shape[1:-1]


def _last_shape(shape):
    """A channels-first shape (N, C, *S) as (N, *S, C); None (unknown) stays None."""
    if shape is None or len(shape) < 2:
        return shape
    shape = tuple(shape)
    return shape[:1] + shape[2:] + shape[1:2]


def _first(xp, a):
    """A channels-last array as a channels-first view (no copy: the CPU backend takes a
    view of channels-last memory as it lies, the NumPy code any strides; CuPy's im2col
    kernels want C order, so a copy there)."""
    a = xp.moveaxis(a, -1, 1)
    return a if xp is np else xp.ascontiguousarray(a)


def _first_view(xp, dest):
    """The channels-first view of an offered channels-last result array, or None."""
    return None if dest is None else xp.moveaxis(dest, -1, 1)


def _last(xp, y, view, dest):
    """The channels-first result ``y`` in the channels-last layout: ``dest`` itself when
    ``y`` was computed into its ``view`` or fits it (copied), else a new C-order array."""
    if dest is not None:
        if y is view:
            return dest
        if view.shape == y.shape and view.dtype == y.dtype \
                and getattr(dest.flags, 'writeable', True):
            xp.copyto(view, y)
            return dest
    return xp.ascontiguousarray(xp.moveaxis(y, 1, -1))
