"""Spatial transformer operators: ``GridGenerator``, ``BilinearSampler`` and
``SpatialTransformer``, as in MXNet 1.9.1 (CPU kernels).

Grids are NCHW with two channels, x (the column) first, then y (the row), normalised so
that -1 is the centre of the first pixel and +1 that of the last one: a grid value ``g``
reads input column ``(g + 1) * (W - 1) / 2`` (rows alike with ``H``).

``GridGenerator``: 'affine' takes ``data`` of shape (N, 6), the row-major 2x3 matrices
``theta``, and gives (N, 2, H, W) for ``target_shape=(H, W)``: ``theta @ (x, y, 1)`` with
``x = -1 + j * 2 / (W - 1)`` and ``y = -1 + i * 2 / (H - 1)`` (a size of 1 divides by
zero and gives NaN, as in MXNet). 'warp' takes a flow (N, 2, H, W) in pixels and gives
``(flow + (j, i)) / ((W - 1) / 2, (H - 1) / 2) - 1``; ``target_shape`` is ignored. A
hidden second output ``grid_dst`` holds the target coordinates: (3, H*W) for 'affine',
(2, H, W) for 'warp'.

``BilinearSampler`` (data (N, C, H, W), grid (N, 2, OH, OW)) -> (N, C, OH, OW): bilinear
interpolation between the four pixels around each source position, the weights from
``floor`` of the position; pixels outside the image read zero (so the output fades to
zero across the border). Gradients: the data gets the four weights scattered back; the
grid gets the derivative of the interpolation w.r.t. the position (one-sided at integer
positions, from the cell ``floor`` picks) times (W - 1) / 2 or (H - 1) / 2. MXNet's
hidden output ``tmp`` (N, OH, OW, 2) is used only by cuDNN and is returned as zeros here;
``cudnn_off`` is accepted and ignored.

``SpatialTransformer`` (data, loc (N, 6); target_shape, transform_type='affine',
sampler_type='bilinear', both required as in MXNet) is the affine GridGenerator followed
by BilinearSampler, with hidden outputs ``grid_dst`` (3, H*W) and ``grid_src``
(N, 2, H*W). Deliberate difference: a ``loc`` whose batch differs from ``data``'s is a
shape error here (MXNet's shape rule accepts it and its kernel reads past or ignores rows).

``Correlation`` (FlowNet; data1, data2 (N, C, H, W); kernel_size=1, max_displacement=1,
stride1=1, stride2=1, pad_size=0, is_multiply=True): both inputs are zero-padded by
``pad_size``; output (N, D*D, TH, TW) with ``D = 2 * (max_displacement // stride2) + 1``,
``TH = ceil((H + 2 pad - 2 (max_displacement + (kernel_size - 1) // 2)) / stride1)`` (TW
alike). Channel ``t`` compares the kernel_size x kernel_size patch of data1 whose top-left
corner is ``(i * stride1 + max_displacement, j * stride1 + max_displacement)`` (padded
coordinates) with the patch of data2 displaced by ``((t // D - D // 2) * stride2,
(t % D - D // 2) * stride2)`` (rows, columns): the sum over the patch and all channels of
``a * b`` (or ``|a - b|``), divided by ``kernel_size**2 * C``. The gradient of ``|a - b|``
takes ``a >= b`` as positive. Hidden outputs ``tmp1``/``tmp2`` are the padded inputs in
NHWC. Deliberate differences: an even kernel_size (an error in MXNet's forward) and
inputs of different shapes (accepted by MXNet's shape rule, then read out of bounds) are
shape errors here.
"""
import numpy as np

from symgraph.base import ParameterError
from symgraph.opdef import Operator, Param, ShapeError, TypeInferenceError, register


def _check_types(op, in_types):
    t = None
    for name, x in zip(op.list_arguments(), in_types):
        if x is None:
            continue
        if t is None:
            t = np.dtype(x)
        elif np.dtype(x) != t:
            raise TypeInferenceError('%s: non-uniform data types, %r has %s but %s was '
                                     'expected' % (op.name, name, np.dtype(x).name, t.name))
    n = len(op.list_arguments())
    return [t] * n, [t] * len(op.list_outputs()), []


def _affine_dst(h, w, dtype, in_double):
    """The (3, h*w) target coordinates (x, y, 1) of an affine grid, as MXNet computes them:
    GridGenerator in the data's dtype, SpatialTransformer in double then rounded."""
    p = np.arange(h * w)
    col, row = (p % w).astype(np.float64), (p // w).astype(np.float64)
    with np.errstate(divide='ignore', invalid='ignore'):
        if in_double:
            gx = -1.0 + col * 2.0 / (w - 1) if w > 1 else col * 2.0 / 0.0 - 1.0
            gy = -1.0 + row * 2.0 / (h - 1) if h > 1 else row * 2.0 / 0.0 - 1.0
        else:
            t = np.dtype(dtype).type
            sx = t(2.0 / (w - 1)) if w > 1 else t(np.inf)
            sy = t(2.0 / (h - 1)) if h > 1 else t(np.inf)
            gx = t(-1.0) + col.astype(dtype) * sx
            gy = t(-1.0) + row.astype(dtype) * sy
    return np.stack([gx, gy, np.ones(h * w)]).astype(dtype)


def _corners(xp, data, grid):
    """The four neighbours of every grid position: [(flat index, valid, weight)] in the
    order top-left, top-right, bottom-left, bottom-right, plus (x weight, y weight) of the
    top-left pixel. Shapes (N, P) with P = OH * OW."""
    n, _, h, w = data.shape
    dt = data.dtype.type
    p = grid.shape[2] * grid.shape[3]
    g = grid.reshape(n, 2, p)
    xr = (g[:, 0] + dt(1)) * dt(w - 1) / dt(2)
    yr = (g[:, 1] + dt(1)) * dt(h - 1) / dt(2)
    xf, yf = xp.floor(xr), xp.floor(yr)
    wx = dt(1) - (xr - xf)                 # weight of the left column
    wy = dt(1) - (yr - yf)                 # weight of the top row
    x0 = xp.where(xp.isfinite(xf), xf, -2).astype(np.int64)
    y0 = xp.where(xp.isfinite(yf), yf, -2).astype(np.int64)
    base = (xp.arange(n, dtype=np.int64) * (h * w))[:, None]
    out = []
    for dy, dx, wgt in ((0, 0, wy * wx), (0, 1, wy * (dt(1) - wx)),
                        (1, 0, (dt(1) - wy) * wx), (1, 1, (dt(1) - wy) * (dt(1) - wx))):
        xi, yi = x0 + dx, y0 + dy
        ok = (xi >= 0) & (xi <= w - 1) & (yi >= 0) & (yi <= h - 1)
        idx = base + xp.clip(yi, 0, h - 1) * w + xp.clip(xi, 0, w - 1)
        out.append((idx, ok, wgt))
    return out, wx, wy


def _gather(xp, data, corners):
    """Values (N, P, C) of each corner (zero outside the image)."""
    n, c = data.shape[:2]
    flat = data.transpose(0, 2, 3, 1).reshape(-1, c)
    vals = []
    for idx, ok, _ in corners:
        v = flat[idx.reshape(-1)].reshape(idx.shape + (c,))
        vals.append(xp.where(ok[..., None], v, data.dtype.type(0)))
    return vals


def _sample(xp, data, grid):
    corners, _, _ = _corners(xp, data, grid)
    vals = _gather(xp, data, corners)
    out = sum(v * wgt[..., None] for v, (_, _, wgt) in zip(vals, corners))
    n, c = data.shape[:2]
    return out.reshape(n, grid.shape[2], grid.shape[3], c).transpose(0, 3, 1, 2)


def _sample_backward(xp, dy, data, grid, need_data, need_grid):
    """(d data, d grid) of the bilinear sampler for the head gradient ``dy``."""
    n, c, h, w = data.shape
    dt = data.dtype.type
    corners, wx, wy = _corners(xp, data, grid)
    g = dy.reshape(n, c, -1).transpose(0, 2, 1)          # (N, P, C)
    gdata = ggrid = None
    if need_data:
        acc = xp.zeros((n * h * w, c), dtype=data.dtype)
        for idx, ok, wgt in corners:
            xp.add.at(acc, idx.reshape(-1),
                      (g * xp.where(ok, wgt, dt(0))[..., None]).reshape(-1, c))
        gdata = acc.reshape(n, h, w, c).transpose(0, 3, 1, 2)
    if need_grid:
        tl, tr, bl, br = _gather(xp, data, corners)
        cross = tl - tr - bl + br
        gy = -(g * (tr - br + cross * wx[..., None])).sum(axis=2)
        gx = -(g * (bl - br + cross * wy[..., None])).sum(axis=2)
        ggrid = xp.stack([gx * dt(w - 1) / dt(2), gy * dt(h - 1) / dt(2)], axis=1)
        ggrid = ggrid.reshape(grid.shape)
    return gdata, ggrid


def _need_4d(op, what, shape, expect):
    if shape is not None and len(shape) != 4:
        raise ShapeError('%s: %r must be 4-D %s, got %s'
                         % (op.name, what, expect, tuple(shape)))


@register
class GridGenerator(Operator):
    """Sampling grids from affine matrices or optical flow (see the module docstring)."""

    name = 'GridGenerator'
    transform_type = Param(str, choices=('affine', 'warp'),
                           doc="'affine': data (N, 6); 'warp': flow (N, 2, H, W)")
    target_shape = Param('shape', (0, 0), doc='(H, W) of an affine grid')
    needs_inputs = False
    needs_outputs = False

    def list_outputs(self):
        return ['output', 'grid_dst']

    def num_visible_outputs(self):
        return 1

    def infer_shape(self, in_shapes):
        s = in_shapes[0]
        if s is None:
            return [None], [None, None], []
        if self.transform_type == 'affine':
            if len(s) != 2 or s[1] != 6:
                raise ShapeError("GridGenerator: with transform_type='affine' 'data' must be "
                                 "the affine matrices (batch, 6), got %s" % (tuple(s),))
            th = tuple(self.target_shape)
            if len(th) != 2 or th[0] <= 0 or th[1] <= 0:
                raise ShapeError("GridGenerator: transform_type='affine' needs a positive "
                                 "target_shape (H, W), got %s" % (th,))
            return [tuple(s)], [(s[0], 2) + th, (3, th[0] * th[1])], []
        if len(s) != 4 or s[1] != 2:
            raise ShapeError("GridGenerator: with transform_type='warp' 'data' must be the "
                             "optical flow (batch, 2, H, W), got %s" % (tuple(s),))
        return [tuple(s)], [tuple(s), (2, s[2], s[3])], []

    def infer_type(self, in_types):
        return _check_types(self, in_types)

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        dt = x.dtype.type
        if self.transform_type == 'affine':
            h, w = self.target_shape
            dst = xp.asarray(_affine_dst(h, w, x.dtype, False))
            out = xp.matmul(x.reshape(-1, 2, 3), dst)
            return [out.reshape(x.shape[0], 2, h, w), dst]
        n, _, h, w = x.shape
        cols = xp.broadcast_to(xp.arange(w, dtype=x.dtype), (h, w))
        rows = xp.broadcast_to(xp.arange(h, dtype=x.dtype)[:, None], (h, w))
        dst = xp.stack([cols, rows])
        with np.errstate(divide='ignore', invalid='ignore'):
            scale = xp.asarray(np.array([(dt(w) - 1.0) / 2.0, (dt(h) - 1.0) / 2.0],
                                        dtype=x.dtype).reshape(1, 2, 1, 1))
            out = (x + dst) / scale - dt(1)
        return [out, dst]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        if not need[0]:
            return [None]
        dy = out_grads[0]
        dt = dy.dtype.type
        if self.transform_type == 'affine':
            h, w = self.target_shape
            dst = xp.asarray(_affine_dst(h, w, dy.dtype, False))
            g = xp.matmul(dy.reshape(dy.shape[0], 2, h * w), dst.T)
            return [g.reshape(dy.shape[0], 6)]
        h, w = dy.shape[2:]
        with np.errstate(divide='ignore', invalid='ignore'):
            scale = xp.asarray(np.array([(dt(w) - 1.0) / 2.0, (dt(h) - 1.0) / 2.0],
                                        dtype=dy.dtype).reshape(1, 2, 1, 1))
            return [dy / scale]


@register
class BilinearSampler(Operator):
    """Bilinear sampling of NCHW data at normalised grid positions, zeros outside."""

    name = 'BilinearSampler'
    cudnn_off = Param(bool, None, doc='accepted and ignored (no cuDNN here)')
    needs_inputs = True
    needs_outputs = False

    def list_arguments(self):
        return ['data', 'grid']

    def list_outputs(self):
        return ['output', 'tmp']

    def num_visible_outputs(self):
        return 1

    def infer_shape(self, in_shapes):
        d, g = in_shapes[0], in_shapes[1]
        _need_4d(self, 'data', d, '(batch, channel, height, width)')
        _need_4d(self, 'grid', g, '(batch, 2, height, width)')
        if d is None or g is None:
            return [d, g], [None, None], []
        if d[0] != g[0] or g[1] != 2:
            raise ShapeError("BilinearSampler: 'grid' must be (batch, 2, H, W) with the batch "
                             "of 'data', got data %s and grid %s" % (tuple(d), tuple(g)))
        return [tuple(d), tuple(g)], [(d[0], d[1], g[2], g[3]), (g[0], g[2], g[3], 2)], []

    def infer_type(self, in_types):
        return _check_types(self, in_types)

    def forward(self, xp, inputs, aux, is_train):
        data, grid = inputs
        out = _sample(xp, data, grid)
        tmp = xp.zeros((grid.shape[0], grid.shape[2], grid.shape[3], 2), dtype=data.dtype)
        return [out, tmp]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        data, grid = inputs
        gd, gg = _sample_backward(xp, out_grads[0], data, grid, need[0], need[1])
        return [gd, gg]


@register
class SpatialTransformer(Operator):
    """Affine spatial transformer: GridGenerator + BilinearSampler in one operator."""

    name = 'SpatialTransformer'
    target_shape = Param('shape', (0, 0), doc='(H, W) of the output')
    transform_type = Param(str, choices=('affine',), doc="only 'affine'")
    sampler_type = Param(str, choices=('bilinear',), doc="only 'bilinear'")
    cudnn_off = Param(bool, None, doc='accepted and ignored (no cuDNN here)')
    needs_inputs = True
    needs_outputs = True

    def list_arguments(self):
        return ['data', 'loc']

    def list_outputs(self):
        return ['output', 'grid_dst', 'grid_src']

    def num_visible_outputs(self):
        return 1

    def infer_shape(self, in_shapes):
        d, loc = in_shapes[0], in_shapes[1]
        _need_4d(self, 'data', d, '(batch, channel, height, width)')
        if loc is not None and (len(loc) != 2 or loc[1] != 6):
            raise ShapeError("SpatialTransformer: 'loc' must be the affine matrices "
                             "(batch, 6), got %s" % (tuple(loc),))
        if d is None or loc is None:
            return [d, loc], [None, None, None], []
        th = tuple(self.target_shape)
        if len(th) != 2 or th[0] <= 0 or th[1] <= 0:
            raise ShapeError('SpatialTransformer: target_shape must be a positive (H, W), '
                             'got %s' % (th,))
        if d[0] != loc[0]:
            raise ShapeError("SpatialTransformer: 'loc' %s must have the batch of 'data' %s"
                             % (tuple(loc), tuple(d)))
        p = th[0] * th[1]
        return ([tuple(d), tuple(loc)],
                [(d[0], d[1]) + th, (3, p), (d[0], 2, p)], [])

    def infer_type(self, in_types):
        return _check_types(self, in_types)

    def forward(self, xp, inputs, aux, is_train):
        data, loc = inputs
        h, w = self.target_shape
        dst = xp.asarray(_affine_dst(h, w, data.dtype, True))
        src = xp.matmul(loc.reshape(-1, 2, 3), dst)
        out = _sample(xp, data, src.reshape(-1, 2, h, w))
        return [out, dst, src]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        data = inputs[0]
        dst, src = outputs[1], outputs[2]
        h, w = self.target_shape
        gd, gg = _sample_backward(xp, out_grads[0], data, src.reshape(-1, 2, h, w),
                                  need[0], need[1])
        gloc = None
        if need[1]:
            gloc = xp.matmul(gg.reshape(-1, 2, h * w), dst.T).reshape(-1, 6)
        return [gd, gloc]


@register
class Correlation(Operator):
    """FlowNet correlation of two NCHW feature maps (see the module docstring)."""

    name = 'Correlation'
    kernel_size = Param(int, 1, doc='odd size of the compared patches')
    max_displacement = Param(int, 1, doc='largest displacement compared')
    stride1 = Param(int, 1, doc='stride over data1 positions')
    stride2 = Param(int, 1, doc='stride of the displacements')
    pad_size = Param(int, 0, doc='zero padding of both inputs')
    is_multiply = Param(bool, True, doc='products (True) or absolute differences (False)')
    needs_inputs = True
    needs_outputs = False

    def check(self):
        for k in ('kernel_size', 'max_displacement', 'pad_size'):
            if getattr(self, k) < 0:
                raise ParameterError('operator Correlation: %s must be >= 0, got %d'
                                     % (k, getattr(self, k)))
        for k in ('stride1', 'stride2'):
            if getattr(self, k) < 1:
                raise ParameterError('operator Correlation: %s must be >= 1, got %d'
                                     % (k, getattr(self, k)))

    def list_arguments(self):
        return ['data1', 'data2']

    def list_outputs(self):
        return ['output', 'tmp1', 'tmp2']

    def num_visible_outputs(self):
        return 1

    def _geometry(self, h, w):
        """(top height, top width, grid radius, grid width)."""
        border = self.max_displacement + (self.kernel_size - 1) // 2
        th = -(-(h + 2 * self.pad_size - 2 * border) // self.stride1)
        tw = -(-(w + 2 * self.pad_size - 2 * border) // self.stride1)
        gr = self.max_displacement // self.stride2
        return th, tw, gr, 2 * gr + 1

    def infer_shape(self, in_shapes):
        d1, d2 = in_shapes[0], in_shapes[1]
        for name, s in (('data1', d1), ('data2', d2)):
            _need_4d(self, name, s, '(batch, channel, height, width)')
        if d1 is not None and d2 is not None and tuple(d1) != tuple(d2):
            raise ShapeError("Correlation: 'data1' %s and 'data2' %s must have the same shape"
                             % (tuple(d1), tuple(d2)))
        d = d1 if d1 is not None else d2
        if d is None:
            return [None, None], [None, None, None], []
        if self.kernel_size % 2 == 0:
            raise ShapeError('Correlation: kernel_size must be odd, got %d' % self.kernel_size)
        th, tw, _, gw = self._geometry(d[2], d[3])
        if th < 1 or tw < 1:
            raise ShapeError('Correlation: the neighbourhood (max_displacement=%d) and kernel '
                             '(kernel_size=%d) do not fit in data %s with pad_size=%d'
                             % (self.max_displacement, self.kernel_size, tuple(d),
                                self.pad_size))
        p = self.pad_size
        tmp = (d[0], d[2] + 2 * p, d[3] + 2 * p, d[1])
        return [tuple(d), tuple(d)], [(d[0], gw * gw, th, tw), tmp, tmp], []

    def infer_type(self, in_types):
        return _check_types(self, in_types)

    def _windows(self, th, tw):
        """For each output channel: [(slice of data1, slice of data2)] over the kernel."""
        md, s1, k = self.max_displacement, self.stride1, self.kernel_size
        _, _, gr, gw = self._geometry(0, 0)

        def sl(y, x):
            return (Ellipsis, slice(y, y + (th - 1) * s1 + 1, s1),
                    slice(x, x + (tw - 1) * s1 + 1, s1))
        out = []
        for tc in range(gw * gw):
            dx, dy = (tc % gw - gr) * self.stride2, (tc // gw - gr) * self.stride2
            out.append([(sl(md + i, md + j), sl(md + i + dy, md + j + dx))
                        for i in range(k) for j in range(k)])
        return out

    def _padded(self, xp, x):
        p = self.pad_size
        return xp.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))

    def forward(self, xp, inputs, aux, is_train):
        d1, d2 = inputs
        th, tw, _, _ = self._geometry(d1.shape[2], d1.shape[3])
        p1, p2 = self._padded(xp, d1), self._padded(xp, d2)
        n_sum = d1.dtype.type(self.kernel_size ** 2 * d1.shape[1])
        chans = []
        for taps in self._windows(th, tw):
            acc = 0
            for s1, s2 in taps:
                a, b = p1[s1], p2[s2]
                acc = acc + ((a * b) if self.is_multiply else xp.abs(a - b)).sum(axis=1)
            chans.append(acc / n_sum)
        out = xp.stack(chans, axis=1)
        return [out, p1.transpose(0, 2, 3, 1).copy(), p2.transpose(0, 2, 3, 1).copy()]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        d1, d2 = inputs
        n, c, h, w = d1.shape
        th, tw, _, _ = self._geometry(h, w)
        p1, p2 = self._padded(xp, d1), self._padded(xp, d2)
        g1, g2 = xp.zeros_like(p1), xp.zeros_like(p2)
        dy = out_grads[0] / d1.dtype.type(self.kernel_size ** 2 * c)
        for tc, taps in enumerate(self._windows(th, tw)):
            g = dy[:, tc:tc + 1]
            for s1, s2 in taps:
                if self.is_multiply:
                    g1[s1] += g * p2[s2]
                    g2[s2] += g * p1[s1]
                else:
                    sg = xp.where(p1[s1] >= p2[s2], g, -g)
                    g1[s1] += sg
                    g2[s2] -= sg
        p = self.pad_size
        crop = (Ellipsis, slice(p, p + h), slice(p, p + w))
        return [g1[crop] if need[0] else None, g2[crop] if need[1] else None]
