"""Deformable convolutions of MXNet's contrib (Deformable ConvNets v1 and v2):
``_contrib_DeformableConvolution`` and ``_contrib_ModulatedDeformableConvolution``; the
sampling arithmetic (and the two border rules of MXNet's kernels) is in
``ops/_deform_impl.py``.

Both take NCHW data and 2-D kernels only (MXNet's CPU kernels: "not implemented"
otherwise); offsets are (N, num_deformable_group * 2 * kh * kw, Ho, Wo) with (dh, dw) per
tap, the v2 mask (N, num_deformable_group * kh * kw, Ho, Wo). Gradients of every input are
analytic (MXNet 1.9.1's CPU backward is "only implemented in GPU").
"""
from symgraph.opdef import MXNetError, Operator, Param, ShapeError, register

from ._deform_impl import grads, positions, sample


class _DeformConv(Operator):
    """Shared parameters and arithmetic of the two deformable convolutions (2-D kernels)."""

    kernel = Param('shape', doc='kernel size (kh, kw)')
    stride = Param('shape', (), doc='stride (default 1)')
    dilate = Param('shape', (), doc='dilation (default 1)')
    pad = Param('shape', (), doc='zero padding (default 0)')
    num_filter = Param(int, doc='number of output channels')
    num_group = Param(int, 1, doc='groups of the convolution')
    num_deformable_group = Param(int, 1, doc='groups of channels sharing one offset field')
    workspace = Param(int, 1024, doc='ignored (MXNet: workspace limit in MB)')
    no_bias = Param(bool, False, doc='no bias input')
    layout = Param(str, None, doc="'NCHW' (the only layout MXNet's CPU kernel takes)",
                   choices=[None, 'NCDHW', 'NCHW', 'NCW'])
    zero_border = False
    has_mask = False

    def check(self):
        if len(self.kernel) != 2:
            raise MXNetError('%s: only 2-D kernels are supported (MXNet: "not implemented"), '
                             'got kernel=%s' % (self.name, self.kernel))
        for p in ('stride', 'dilate', 'pad'):
            if getattr(self, p) and len(getattr(self, p)) != 2:
                raise MXNetError('%s: %s %s must have 2 entries like kernel'
                                 % (self.name, p, getattr(self, p)))
        if self.layout not in (None, 'NCHW'):
            raise MXNetError('%s: layout %r is not supported (NCHW only)'
                             % (self.name, self.layout))
        if self.num_filter <= 0 or self.num_group <= 0 or self.num_deformable_group <= 0:
            raise MXNetError('%s: num_filter, num_group and num_deformable_group must be '
                             'positive' % self.name)

    def list_arguments(self):
        args = ['data', 'offset'] + (['mask'] if self.has_mask else []) + ['weight']
        return args + ([] if self.no_bias else ['bias'])

    def _geom(self):
        return (tuple(self.kernel), tuple(self.stride or (1, 1)), tuple(self.dilate or (1, 1)),
                tuple(self.pad or (0, 0)))

    def _out_hw(self, h, w):
        (kh, kw), (sh, sw), (dh, dw), (ph, pw) = self._geom()
        return ((h + 2 * ph - dh * (kh - 1) - 1) // sh + 1,
                (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1)

    def infer_shape(self, in_shapes):
        names = self.list_arguments()
        shapes = dict(zip(names, in_shapes))
        d = shapes['data']
        k = self.kernel[0] * self.kernel[1]
        dg, g, f = self.num_deformable_group, self.num_group, self.num_filter
        if d is None:
            return list(in_shapes), [None], []
        d = tuple(d)
        if len(d) != 4:
            raise ShapeError('%s: input %r must be (N, C, H, W), got %s' % (self.name, 'data', d))
        n, c, h, w = d
        if c % g or c % dg or f % g:
            raise ShapeError('%s: channels %d of %r must be divisible by num_group=%d and '
                             'num_deformable_group=%d, num_filter=%d by num_group'
                             % (self.name, c, 'data', g, dg, f))
        ho, wo = self._out_hw(h, w)
        if ho <= 0 or wo <= 0:
            raise ShapeError('%s: kernel %s does not fit input %r %s' % (self.name,
                                                                       self.kernel, 'data', d))
        want = {'data': d, 'offset': (n, dg * 2 * k, ho, wo), 'mask': (n, dg * k, ho, wo),
                'weight': (f, c // g) + tuple(self.kernel), 'bias': (f,)}
        for name, s in shapes.items():
            # (a dimension 0 is unknown: Gluon's deferred weight (channels, 0, kh, kw))
            if s is not None and (len(s) != len(want[name]) or any(
                    a not in (0, b) for a, b in zip(s, want[name]))):
                raise ShapeError('%s: argument %r has shape %s, expected %s'
                                 % (self.name, name, tuple(s), want[name]))
        return [want[a] for a in names], [(n, f, ho, wo)], []

    def _split(self, inputs):
        names = self.list_arguments()
        a = dict(zip(names, inputs))
        return a['data'], a['offset'], a.get('mask'), a['weight'], a.get('bias')

    def _columns(self, xp, data, offset, mask):
        n, c, h, w = data.shape
        ho, wo = self._out_hw(h, w)
        dg = self.num_deformable_group
        hp, wp = positions(xp, offset, self._geom(), dg, (ho, wo), data.dtype)
        cols, state = sample(xp, data, hp, wp, dg, self.zero_border)
        if mask is not None:
            m = mask.reshape(n, dg, -1, ho, wo)[..., None]
            state = state + (cols, m)
            cols = cols * m
        return cols, state, (ho, wo)

    @staticmethod
    def _as_matrix(xp, cols, c):
        """(N, dg, K, Ho, Wo, Cg) -> (N, C * K, Ho * Wo), row c * K + k."""
        n, dg, k, ho, wo, cg = cols.shape
        return xp.ascontiguousarray(cols.transpose(0, 1, 5, 2, 3, 4)).reshape(n, c * k,
                                                                              ho * wo)

    def forward(self, xp, inputs, aux, is_train):
        data, offset, mask, weight, bias = self._split(inputs)
        n, c = data.shape[:2]
        cols, _, (ho, wo) = self._columns(xp, data, offset, mask)
        mat = self._as_matrix(xp, cols, c)
        g = self.num_group
        wm = weight.reshape(g, self.num_filter // g, -1)
        out = xp.matmul(wm[None], mat.reshape(n, g, -1, ho * wo))       # (N, G, F/G, L)
        out = out.reshape(n, self.num_filter, ho, wo)
        if bias is not None:
            out = out + bias.reshape(1, -1, 1, 1)
        return [out.astype(data.dtype, copy=False)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        names = self.list_arguments()
        data, offset, mask, weight, bias = self._split(inputs)
        n, c, h, w = data.shape
        cols, state, (ho, wo) = self._columns(xp, data, offset, mask)
        g, f = self.num_group, self.num_filter
        dy = out_grads[0].reshape(n, g, f // g, ho * wo)
        mat = self._as_matrix(xp, cols, c).reshape(n, g, -1, ho * wo)
        res = dict.fromkeys(names)
        if need[names.index('weight')]:
            res['weight'] = xp.einsum('ngfl,ngkl->gfk', dy, mat).reshape(weight.shape)
        if 'bias' in names and need[names.index('bias')]:
            res['bias'] = out_grads[0].sum(axis=(0, 2, 3))
        nd, no = need[0], need[1]
        nm = self.has_mask and need[names.index('mask')]
        if nd or no or nm:
            wm = weight.reshape(g, f // g, -1)
            gmat = xp.matmul(xp.swapaxes(wm, 1, 2)[None], dy).reshape(n, c, -1, ho, wo)
            dg = self.num_deformable_group
            k = gmat.shape[2]
            gcols = gmat.reshape(n, dg, c // dg, k, ho, wo).transpose(0, 1, 3, 4, 5, 2)
            if mask is not None:
                raw, m = state[-2], state[-1]
                if nm:
                    res['mask'] = (gcols * raw).sum(-1).reshape(mask.shape)
                gcols = gcols * m
                state = state[:-2]
            gd, goff = grads(xp, gcols, data.shape, state, nd, no, data.dtype)
            res['data'] = gd
            if goff is not None:
                res['offset'] = goff.reshape(offset.shape)
        return [None if r is None else r.astype(data.dtype, copy=False) if need[i] else None
                for i, r in enumerate(res[a] for a in names)]


@register
class DeformableConvolution(_DeformConv):
    """Deformable convolution v1 (``contrib.DeformableConvolution``): a convolution whose
    taps sample the data at learned offsets (bilinear, MXNet's clamped border)."""

    name = '_contrib_DeformableConvolution'


@register
class ModulatedDeformableConvolution(_DeformConv):
    """Deformable convolution v2 (``contrib.ModulatedDeformableConvolution``): the taps are
    also scaled by ``mask`` (N, dg * K, Ho, Wo); positions within one pixel outside the map
    interpolate toward zeros (DCNv2's border)."""

    name = '_contrib_ModulatedDeformableConvolution'
    im2col_step = Param(int, 64, doc='ignored (MXNet: images per im2col batch)')
    param_order = ('kernel', 'stride', 'dilate', 'pad', 'num_filter', 'num_group',
                   'num_deformable_group', 'workspace', 'no_bias', 'im2col_step', 'layout')
    zero_border = True
    has_mask = True
