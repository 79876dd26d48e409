"""Pooling and UpSampling.

Pooling reads its windows through a strided view of the padded input (no copy) and
reduces them one kernel offset at a time, so every step is a whole-array operation;
backward scatters through the same offsets. Windows that run past the edge under the
'full' convention read padding that never counts: -max for max pooling, zero and no
share of the divisor for average pooling (explicit padding counts in the divisor when
``count_include_pad``), as MXNet does.

Large max and average pooling of NumPy float32 arrays goes through oneDNN instead (the
CPU kernels ``pool_forward``/``pool_backward``; which sizes is the backend's routing, see
``pool_takes``), max pooling's backward with the workspace of the oneDNN forward that made
the output.
"""
import math

import numpy as np

from symgraph.opdef import Kept, Operator, Param, ShapeError, Step, cpu_kernel, gpu_kernel, \
    register, same_type

from ._conv_impl import _pad, _windows
from .conv import Deconvolution
from symgraph.base import ParameterError

_LAYOUTS = ('None', 'NCW', 'NCHW', 'NCDHW', 'NWC', 'NHWC', 'NDHWC')


def pool_out_size(size, kernel, stride, pad, convention):
    """Output length along one axis (0 stays 0 = unknown)."""
    if size == 0:
        return 0
    if convention == 'valid':
        return (size + 2 * pad - kernel) // stride + 1
    if convention == 'full':
        return 1 + int(math.ceil((size + 2 * pad - kernel) / stride))
    return int(math.ceil((size + 2 * pad) / stride))      # 'same'


def _offsets(kernel):
    """Every kernel offset as an index tuple, row-major (MXNet's scan order)."""
    return list(np.ndindex(*kernel))


@register
class Pooling(Operator):
    """Max, average, sum or Lp pooling over 1-D, 2-D or 3-D windows.

    Shapes: data (N, C, *S) (or channels last with ``layout``), out (N, C, *O) with
    O = (S + 2 pad - kernel) // stride + 1 ('valid') or 1 + ceil((S + 2 pad - kernel) /
    stride) ('full'); ``global_pool`` reduces all of S and ignores kernel, stride and pad.
    The max-pooling gradient goes to the first maximum of each window (row-major).

    >>> import numpy as np
    >>> op = Pooling(kernel=(2,), stride=(2,), pool_type='avg', pooling_convention='full')
    >>> op.forward(np, [np.arange(5.).reshape(1, 1, 5)], [], False)[0]
    array([[[0.5, 2.5, 4. ]]])
    """

    name = 'Pooling'
    needs_outputs = True
    kernel = Param('shape', (), doc='window size: (w,), (h, w) or (d, h, w)')
    pool_type = Param(str, 'max', choices=('max', 'avg', 'sum', 'lp'))
    global_pool = Param(bool, False, doc='pool over the whole spatial extent')
    cudnn_off = Param(bool, False, doc="don't use cuDNN for this node (symgraph's own CUDA "
                      'kernels on a GPU)')
    pooling_convention = Param(str, 'valid', choices=('valid', 'full', 'same'))
    stride = Param('shape', (), doc='stride, default 1 per axis')
    pad = Param('shape', (), doc='padding, default 0 per axis')
    p_value = Param(int, None, doc='p of Lp pooling (1, 2 or 3)')
    count_include_pad = Param(bool, None, doc='average counts explicit padding (default '
                                              'True)')
    layout = Param(str, None, choices=_LAYOUTS, doc='NCW/NCHW/NCDHW or channels last')

    def check(self):
        nd = len(self.kernel)
        if not self.global_pool and nd not in (1, 2, 3):
            raise ParameterError('Pooling: kernel must have 1, 2 or 3 dimensions, got %s'
                                 % (self.kernel,))
        for p in ('stride', 'pad'):
            # MXNet reads the first len(kernel) entries: longer is accepted, shorter fails
            v = getattr(self, p)
            if v and nd and len(v) < nd and not self.global_pool:
                raise ParameterError('Pooling: %s %s has fewer dimensions than kernel %s'
                                     % (p, v, self.kernel))
        if self.stride and min(self.stride) <= 0:
            raise ParameterError('Pooling: stride must be positive, got %s' % (self.stride,))
        if self.pool_type == 'lp' and self.p_value not in (1, 2, 3):
            raise ParameterError('Pooling: lp pooling needs p_value 1, 2 or 3, got %r'
                                 % (self.p_value,))
        if self.pooling_convention == 'same' and (any(self.pad) or nd not in (0, 1)):
            raise ParameterError("Pooling: pooling_convention='same' supports only 1-D pooling "
                                 "without pad")

    # ---- geometry -----------------------------------------------------------------
    def _channels_last(self, ndim):
        return self.layout in ('NWC', 'NHWC', 'NDHWC') and ndim >= 3

    def geometry(self, spatial):
        """(kernel, stride, pad, out) for the spatial shape, after MXNet's defaults."""
        nd = len(spatial)
        if self.global_pool:
            return tuple(spatial), (1,) * nd, (0,) * nd, (1,) * nd
        kernel = tuple(self.kernel)
        stride = tuple(self.stride[:nd]) or (1,) * nd
        pad = tuple(self.pad[:nd]) or (0,) * nd
        out = tuple(pool_out_size(s, k, t, p, self.pooling_convention)
                    for s, k, t, p in zip(spatial, kernel, stride, pad))
        return kernel, stride, pad, out

    def infer_shape(self, in_shapes):
        dshape = in_shapes[0]
        if dshape is None:
            return [None], [None], []
        if not 3 <= len(dshape) <= 5:
            raise ShapeError('Pooling: data must be 3-D, 4-D or 5-D, got %s' % (dshape,))
        last = self._channels_last(len(dshape))
        spatial = dshape[1:-1] if last else dshape[2:]
        if not self.global_pool:
            if not self.kernel:
                return [tuple(dshape)], [None], []
            if len(self.kernel) != len(spatial):
                raise ShapeError('Pooling: kernel %s does not fit data %s'
                                 % (self.kernel, tuple(dshape)))
        kernel, stride, pad, out = self.geometry(spatial)
        for s, k, p in zip(spatial, kernel, pad):
            if s and k > s + 2 * p:
                raise ShapeError('Pooling: kernel %s exceeds the padded input: data %s, '
                                 'pad %s' % (kernel, tuple(dshape), pad))
        out = tuple(o if s else 0 for o, s in zip(out, spatial))
        oshape = ((dshape[0],) + out + (dshape[-1],) if last
                  else tuple(dshape[:2]) + out)
        return [tuple(dshape)], [oshape], []

    def infer_type(self, in_types):
        t = same_type(self, in_types)
        return [t], [t], []

    # ---- compute ------------------------------------------------------------------
    def _padded(self, xp, x, kernel, stride, pad, out, value):
        """x padded by ``pad`` plus whatever the last windows need past the far edge."""
        extra = [max(0, (o - 1) * t + k - (s + 2 * p))
                 for s, k, t, p, o in zip(x.shape[2:], kernel, stride, pad, out)]
        return _pad(xp, x, list(pad), [p + e for p, e in zip(pad, extra)], value)

    def _divisor(self, xp, spatial, kernel, stride, pad, out, dtype):
        """Per-window element counts of average pooling, shape (*out)."""
        cip = self.count_include_pad is not False
        div = np.ones((), dtype=np.float64)
        for s, k, t, p, o in zip(spatial, kernel, stride, pad, out):
            start = np.arange(o) * t - p
            end = np.minimum(start + k, s + p)
            if not cip:
                start, end = np.maximum(start, 0), np.minimum(end, s)
            div = np.multiply.outer(div, np.maximum(end - start, 1))
        return xp.asarray(div.astype(dtype))

    def bind(self, ctx, in_shapes, in_dtypes):
        """A Step whose state keeps max pooling's oneDNN workspaces of training forwards
        for backward, by output and input (a :class:`symgraph.opdef.Kept`)."""
        return Step(self, ctx, Kept(), shareable=True)

    def _onednn_spec(self, shape, direction):
        """(kind, kernel, stride, pad_l, pad_r, out) when this pooling of NumPy float32
        data of ``shape`` may go through the CPU kernels in ``direction`` ('forward' or
        'backward'), else None (also the layout pass's question: whether the forward goes
        through oneDNN).

        Declined: sum / lp pooling, what the backend's routing does not take
        (``pool_takes``: sizes), and average pooling whose last windows run past the
        padding (the 'full' convention) while padding counts: MXNet does not count that
        overhang, oneDNN would."""
        ptype = self.pool_type
        if ptype not in ('max', 'avg'):
            return None
        takes = cpu_kernel('pool_takes')
        if takes is None:
            return None
        if self.global_pool:
            if direction != 'forward' or ptype != 'avg' or len(shape) < 3 \
                    or not takes(shape, ptype, shape[2:], direction, True) or not all(shape):
                return None
            nd = len(shape) - 2
            zero = (0,) * nd
            return 'avg_include', tuple(shape[2:]), (1,) * nd, zero, zero, \
                tuple(shape[:2]) + (1,) * nd
        if not takes(shape, ptype, self.kernel, direction):
            return None
        kernel, stride, pad, out = self.geometry(shape[2:])
        if not all(out):
            return None
        need = [(o - 1) * t + k - s - p for o, t, k, s, p in
                zip(out, stride, kernel, shape[2:], pad)]
        over = any(r > p for r, p in zip(need, pad))
        pad_r = [max(r, p) for r, p in zip(need, pad)]
        if ptype == 'max':
            kind = 'max'
        elif self.count_include_pad is not False:
            if over and any(pad):
                return None
            kind = 'avg_exclude' if over else 'avg_include'
        else:
            kind = 'avg_exclude'
        return kind, kernel, stride, pad, pad_r, tuple(shape[:2]) + tuple(out)

    def _pool_onednn(self, xp, x, is_train, state=None):
        """The oneDNN forward (keeping max pooling's workspace for backward in the Step's
        ``state``), or None."""
        if xp is not np or x.dtype != np.float32:
            return None
        spec = self._onednn_spec(x.shape, 'forward')
        if spec is None:
            return None
        kind, kernel, stride, pad_l, pad_r, yshape = spec
        r = cpu_kernel('pool_forward')(x, kind, kernel, stride, pad_l, pad_r, yshape,
                                       is_train, None if is_train else self.out_layout,
                                       global_pool=self.global_pool)
        if r is None:
            return None
        y, ws = r
        if ws is not None and state is not None:
            state.keep(y, x, ws)
        return y

    def _pool_grad_onednn(self, xp, x, y, dy, dest=None, state=None):
        """The oneDNN backward (into ``dest`` when given), or None. Max pooling takes the
        workspace its oneDNN forward kept for this very output and input, else the kernel
        runs oneDNN's forward on x again for one."""
        if xp is not np or x.dtype != np.float32:
            return None
        spec = self._onednn_spec(x.shape, 'backward')
        if spec is None or dy.dtype != np.float32:
            return None
        kind, kernel, stride, pad_l, pad_r, yshape = spec
        ws = None
        if kind == 'max' and state is not None:
            ws = state.get(y, x)
        return cpu_kernel('pool_backward')(dy, ws, kind, kernel, stride, pad_l, pad_r,
                                           x.shape, out=dest, x=x)

    def _cudnn_spec(self, xp, x):
        """(kind, kernel, stride, pad) when this pooling of CuPy array ``x`` may go through
        cuDNN (:func:`symgraph.opdef.gpu_kernel`), else None: max / avg, not global, and windows
        that stay inside the symmetric padding (cuDNN's output size is the 'valid' one), and
        not where the node says ``cudnn_off``."""
        if (xp is np or self.cudnn_off or self.global_pool
                or self.pool_type not in ('max', 'avg')):
            return None
        kernel, stride, pad, out = self.geometry(x.shape[2:])
        if any((s + 2 * p - k) // t + 1 != o
               for s, k, t, p, o in zip(x.shape[2:], kernel, stride, pad, out)):
            return None
        if self.pool_type == 'max':
            kind = 'max'
        else:
            kind = 'avg_exclude' if self.count_include_pad is False else 'avg_include'
        return kind, tuple(kernel), tuple(stride), tuple(pad)

    def _pool_cudnn(self, xp, x, y=None, dy=None, dest=None):
        """cuDNN's forward (``y`` None) or backward, or None."""
        spec = self._cudnn_spec(xp, x)
        if spec is None:
            return None
        if y is None:
            kern = gpu_kernel('pool_forward')
            return None if kern is None else kern(x, *spec)
        kern = gpu_kernel('pool_backward')
        return None if kern is None else kern(x, y, dy, *spec, out=dest)

    def _pool(self, xp, x, is_train=False, state=None):
        y = self._pool_onednn(xp, x, is_train, state)
        if y is None:
            y = self._pool_cudnn(xp, x)
        if y is not None:
            return y
        kernel, stride, pad, out = self.geometry(x.shape[2:])
        ptype = self.pool_type
        if self.global_pool:
            axes = tuple(range(2, x.ndim))
            if ptype == 'max':
                return x.max(axis=axes, keepdims=True)
            if ptype == 'avg':
                return x.mean(axis=axes, keepdims=True)
            if ptype == 'sum':
                return x.sum(axis=axes, keepdims=True)
        low = float(np.finfo(x.dtype).min) if ptype == 'max' else 0.0
        xpad = self._padded(xp, x, kernel, stride, pad, out, low)
        view = _windows(xp, xpad, kernel, stride, (1,) * len(kernel), out, 'pool')
        offs = _offsets(kernel)
        y = view[(Ellipsis,) + offs[0]].copy()
        if ptype == 'max':
            for k in offs[1:]:
                xp.maximum(y, view[(Ellipsis,) + k], out=y)
            return y
        p = self.p_value if ptype == 'lp' else 1
        if p != 1:
            y = y ** p
        for k in offs[1:]:
            y += view[(Ellipsis,) + k] if p == 1 else view[(Ellipsis,) + k] ** p
        if ptype == 'avg':
            y /= self._divisor(xp, x.shape[2:], kernel, stride, pad, out, x.dtype)
        elif p == 2:
            y = xp.sqrt(y)
        elif p == 3:
            y = xp.cbrt(y)
        return y

    def _pool_grad(self, xp, x, y, dy, dest=None, state=None):
        """dx; computed into ``dest`` (an array of x's shape and dtype: C-contiguous, but
        for global average/sum pooling, which copies into any layout) where the path
        allows, else a new array."""
        dx = self._pool_grad_onednn(xp, x, y, dy, dest, state)
        if dx is None:
            dx = self._pool_cudnn(xp, x, y, dy, dest)
        if dx is not None:
            return dx
        kernel, stride, pad, out = self.geometry(x.shape[2:])
        ptype = self.pool_type
        if self.global_pool and ptype in ('max', 'avg', 'sum'):
            flat = x.reshape(x.shape[:2] + (-1,))
            if ptype == 'max':
                hit = xp.arange(flat.shape[2]) == flat.argmax(axis=2)[..., None]
                return (hit * dy.reshape(dy.shape[:2] + (1,))).reshape(x.shape)
            scale = 1.0 / flat.shape[2] if ptype == 'avg' else 1.0
            if dest is not None:
                xp.copyto(dest, xp.broadcast_to(dy * scale, x.shape))
                return dest
            return xp.broadcast_to(dy * scale, x.shape).astype(x.dtype)
        low = float(np.finfo(x.dtype).min) if ptype == 'max' else 0.0
        xpad = self._padded(xp, x, kernel, stride, pad, out, low)
        view = _windows(xp, xpad, kernel, stride, (1,) * len(kernel), out, 'pool')
        if dest is not None and xpad is x:       # no padding: accumulated in dest itself
            dxpad = dest
            dxpad[...] = 0
        else:
            dxpad = xp.zeros_like(xpad)
        dview = _windows(xp, dxpad, kernel, stride, (1,) * len(kernel), out, 'pool')
        if ptype == 'avg':
            dy = dy / self._divisor(xp, x.shape[2:], kernel, stride, pad, out, x.dtype)
        elif ptype == 'lp' and self.p_value > 1:
            ysafe = xp.where(y == 0, 1, y)
        if ptype == 'max' and all(t >= k for t, k in zip(stride, kernel)):
            # windows do not overlap: each offset writes its own positions, so the gradient
            # is copied in place (about twice as fast as the general path below)
            free = None
            for k in _offsets(kernel):
                idx = (Ellipsis,) + k
                hit = view[idx] == y
                if free is None:
                    free = ~hit
                else:
                    hit &= free
                    free &= ~hit
                xp.copyto(dview[idx], dy, where=hit)
            crop = tuple(slice(p, p + s) for p, s in zip(pad, x.shape[2:]))
            return dxpad[(Ellipsis,) + crop]
        taken = None
        for k in _offsets(kernel):
            idx = (Ellipsis,) + k
            if ptype == 'max':
                # the first offset holding the maximum takes the gradient (MXNet's scan)
                hit = view[idx] == y
                if taken is None:
                    taken = hit
                else:
                    hit &= ~taken
                    taken |= hit
                g = xp.where(hit, dy, 0)
            elif ptype == 'lp' and self.p_value > 1:
                g = dy * (view[idx] / ysafe) ** (self.p_value - 1)
            else:
                g = dy
            # windows overlap when stride < kernel: the view aliases, so add per offset
            dview[idx] += g
        if dxpad is dest:
            return dest
        crop = tuple(slice(p, p + s) for p, s in zip(pad, x.shape[2:]))
        return dxpad[(Ellipsis,) + crop]

    #: the memory order of the inference output (the layout pass's ``instead`` row)
    out_layout = None

    def forward(self, xp, inputs, aux, is_train, state=None):
        x = inputs[0]
        if self._channels_last(x.ndim):
            return [xp.moveaxis(self._pool(xp, xp.moveaxis(x, -1, 1)), 1, -1)]
        return [self._pool(xp, x, is_train, state)]

    # (backward computes the data gradient into the executor's buffer, forward returns
    # new arrays: the grad_writes_into row of ops/_cpu_rules.py)

    def backward(self, xp, out_grads, inputs, outputs, aux, need, grad_out=None, state=None):
        if not need[0]:
            return [None]
        x, y, dy = inputs[0], outputs[0], out_grads[0]
        if self._channels_last(x.ndim):
            mv = [xp.moveaxis(a, -1, 1) for a in (x, y, dy)]
            return [xp.ascontiguousarray(xp.moveaxis(self._pool_grad(xp, *mv), 1, -1))]
        # global average/sum pooling copies its gradient into the offered array as it lies
        # (a training plan's buffer may lie channels last); the other paths need C order
        dest = grad_out[0] if grad_out and grad_out[0] is not None \
            and grad_out[0].dtype == x.dtype and grad_out[0].shape == x.shape \
            and (grad_out[0].flags.c_contiguous
                 or (self.global_pool and self.pool_type in ('avg', 'sum'))) else None
        dx = self._pool_grad(xp, x, y, dy, dest, state)
        if dest is None:
            return [xp.ascontiguousarray(dx)]
        if dx is not dest:
            xp.copyto(dest, dx)
        return [dest]


class PoolingChannelsLast(Pooling):
    """Pooling whose inference output lies channels last (made by
    the ``instead`` row of ``ops/_cpu_rules.py`` for the ``layout`` inference pass; not
    registered)."""

    out_layout = 'channels_last'


@register
class UpSampling(Operator):
    """Nearest-neighbour or bilinear upsampling of NCHW data by an integer ``scale``.

    'nearest' takes ``num_args`` inputs, each repeated up to the first input's size
    times ``scale``, then concatenated along channels or summed
    (``multi_input_mode``). 'bilinear' is a grouped Deconvolution with arguments
    (data, weight), weight (num_filter, 1, 2 scale - scale % 2, same), as in MXNet.
    """

    name = 'UpSampling'
    scale = Param(int, doc='upsampling factor')
    num_filter = Param(int, 0, doc='channels (bilinear only)')
    sample_type = Param(str, choices=('nearest', 'bilinear'))
    multi_input_mode = Param(str, 'concat', choices=('concat', 'sum'))
    num_args = Param(int, 1, doc='number of inputs')
    workspace = Param(int, 512, doc='ignored')

    def check(self):
        if self.scale < 1:
            raise ParameterError('UpSampling: scale must be positive, got %d' % self.scale)
        if self.sample_type == 'bilinear' and self.num_args not in (1, 2):
            raise ParameterError('UpSampling: bilinear takes data and weight only')

    def _deconv(self):
        s = self.scale
        k = 2 * s - s % 2
        p = int(math.ceil((s - 1) / 2.0))
        return Deconvolution(kernel=(k, k), stride=(s, s), pad=(p, p),
                             num_filter=self.num_filter, num_group=self.num_filter,
                             no_bias=True)

    def input_init(self):
        # MXNet marks whatever feeds input 1 (the bilinear weight, or the second
        # nearest-mode input alike) with a bilinear initializer
        names = self.list_arguments()
        return {names[1]: '["bilinear", {}]'} if len(names) > 1 else {}

    def list_arguments(self):
        if self.sample_type == 'bilinear':
            return ['data', 'weight']
        return ['arg%d' % i for i in range(self.num_args)]

    def infer_shape(self, in_shapes):
        if self.sample_type == 'bilinear':
            return self._deconv().infer_shape(in_shapes)
        in_shapes = list(in_shapes)
        first = in_shapes[0]
        if first is None or any(s is None for s in in_shapes):
            return in_shapes, [None], []
        for i, s in enumerate(in_shapes):
            if len(s) != 4:
                raise ShapeError('UpSampling: input arg%d must be 4-D (batch, channel, y, x), '
                                 'got %s' % (i, tuple(s)))
        oh, ow = first[2] * self.scale, first[3] * self.scale
        chans = 0
        for i, s in enumerate(in_shapes):
            if len(s) != 4:
                raise ShapeError('UpSampling: input arg%d must be 4-D NCHW, got %s' % (i, s))
            if s[2] and oh % s[2] or s[3] and ow % s[3]:
                raise ShapeError('UpSampling: input arg%d %s does not divide the output size '
                                 '(%d, %d)' % (i, s, oh, ow))
            if self.multi_input_mode == 'sum':
                if chans and s[1] != chans:
                    raise ShapeError('UpSampling: inputs summed must have the same channels, '
                                     'got %s' % (in_shapes,))
                chans = s[1]
            else:
                chans += s[1]
        return in_shapes, [(first[0], chans, oh, ow)], []

    def infer_type(self, in_types):
        t = same_type(self, in_types)
        return [t] * len(in_types), [t], []

    def _factors(self, inputs):
        oh = inputs[0].shape[2] * self.scale
        return [oh // a.shape[2] for a in inputs], [inputs[0].shape[3] * self.scale //
                                                   a.shape[3] for a in inputs]

    def forward(self, xp, inputs, aux, is_train):
        if self.sample_type == 'bilinear':
            return self._deconv().forward(xp, inputs, aux, is_train)
        fh, fw = self._factors(inputs)
        ups = []
        for a, sh, sw in zip(inputs, fh, fw):
            n, c, h, w = a.shape
            ups.append(xp.broadcast_to(a[:, :, :, None, :, None], (n, c, h, sh, w, sw))
                       .reshape(n, c, h * sh, w * sw))
        if len(ups) == 1:
            return [xp.ascontiguousarray(ups[0])]
        if self.multi_input_mode == 'sum':
            y = ups[0].copy()
            for u in ups[1:]:
                y += u
            return [y]
        return [xp.concatenate(ups, axis=1)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        if self.sample_type == 'bilinear':
            return self._deconv().backward(xp, out_grads, inputs, outputs, aux, need)
        dy = out_grads[0]
        fh, fw = self._factors(inputs)
        grads, c0 = [], 0
        for a, sh, sw, nd in zip(inputs, fh, fw, need):
            n, c, h, w = a.shape
            part = dy if self.multi_input_mode == 'sum' else dy[:, c0:c0 + c]
            c0 += c
            grads.append(part.reshape(n, c, h, sh, w, sw).sum(axis=(3, 5)) if nd else None)
        return grads
