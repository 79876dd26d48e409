"""Deformable convolution layers (after MXNet 1.9.1's gluon/contrib/cnn/conv_layers.py).

Each layer computes its sampling offsets (and, for the modulated one, masks) with a
plain convolution of its input, then the deformable convolution. Channels-first (NCHW)
only: the operators compute no other layout (MXNet's layers accept NHWC and its CPU
kernels then fail).
"""
import numbers

from .... import symbol
from ...block import HybridBlock
from ...nn import Activation

__all__ = ['DeformableConvolution', 'ModulatedDeformableConvolution']


def _pair(value, n, what):
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return (int(value),) * n
    value = tuple(value)
    if len(value) != n or not all(isinstance(v, numbers.Integral) for v in value):
        raise ValueError('%s must be an int or %d ints, got %r' % (what, n, value))
    return value


class _DeformableBase(HybridBlock):
    """The parameters and keyword sets both layers share; ``offset_factor`` is the number
    of offset-convolution channels per kernel tap and deformable group (2: the offsets;
    3: the offsets and the mask)."""

    def __init__(self, channels, kernel_size, strides, padding, dilation, groups,
                 num_deformable_group, layout, use_bias, in_channels, activation,
                 weight_initializer, bias_initializer, offset_weight_initializer,
                 offset_bias_initializer, offset_use_bias, op_name, adj, offset_factor,
                 prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        if layout != 'NCHW':
            raise ValueError("%s: layout %r is not supported: the deformable convolution "
                             "operators compute 'NCHW' only" % (type(self).__name__, layout))
        kernel_size = _pair(kernel_size, 2, 'kernel_size')
        strides = _pair(strides, 2, 'strides')
        padding = _pair(padding, 2, 'padding')
        dilation = _pair(dilation, 2, 'dilation')
        with self.name_scope():
            self._channels = channels
            self._in_channels = in_channels
            self._op_name = op_name
            taps = kernel_size[0] * kernel_size[1]
            #: where the offsets end and the mask begins in the offset convolution's output
            self.offset_split_index = num_deformable_group * 2 * taps
            self._kwargs_offset = {
                'kernel': kernel_size, 'stride': strides, 'dilate': dilation, 'pad': padding,
                'num_filter': num_deformable_group * offset_factor * taps,
                'num_group': groups, 'no_bias': not offset_use_bias, 'layout': layout}
            self._kwargs_deformable_conv = {
                'kernel': kernel_size, 'stride': strides, 'dilate': dilation, 'pad': padding,
                'num_filter': channels, 'num_group': groups,
                'num_deformable_group': num_deformable_group, 'no_bias': not use_bias,
                'layout': layout}
            if adj:
                self._kwargs_offset['adj'] = adj
                self._kwargs_deformable_conv['adj'] = adj
            # MXNet's order of the parameters: the offsets' first in v1, last in v2
            for part in ('offset', 'conv') if offset_factor == 2 else ('conv', 'offset'):
                if part == 'conv':
                    self._conv_params(channels, kernel_size, use_bias, weight_initializer,
                                      bias_initializer)
                else:
                    self._offset_params(in_channels, offset_use_bias,
                                        offset_weight_initializer, offset_bias_initializer)
            self.act = Activation(activation, prefix=activation + '_') if activation else None

    def _conv_params(self, channels, kernel_size, use_bias, weight_init, bias_init):
        self.deformable_conv_weight = self.params.get(
            'deformable_conv_weight', shape=(channels, 0) + kernel_size, init=weight_init,
            allow_deferred_init=True)
        self.deformable_conv_bias = self.params.get(
            'deformable_conv_bias', shape=(channels,), init=bias_init,
            allow_deferred_init=True) if use_bias else None

    def _offset_params(self, in_channels, use_bias, weight_init, bias_init):
        # the offset convolution's parameter shapes, as its operator infers them
        offset = symbol.Convolution(symbol.var('data', shape=(1, in_channels, 0, 0)),
                                    **self._kwargs_offset)
        shapes = offset.infer_shape_partial()[0]
        self.offset_weight = self.params.get(
            'offset_weight', shape=shapes[1], init=weight_init, allow_deferred_init=True)
        self.offset_bias = self.params.get(
            'offset_bias', shape=shapes[2], init=bias_init,
            allow_deferred_init=True) if use_bias else None

    def _offset(self, F, x, offset_weight, offset_bias):
        if offset_bias is None:
            return F.Convolution(x, offset_weight, cudnn_off=True, **self._kwargs_offset)
        return F.Convolution(x, offset_weight, offset_bias, cudnn_off=True,
                             **self._kwargs_offset)

    def __repr__(self):
        kw = self._kwargs_deformable_conv
        s = '{name}({mapping}, kernel_size={kernel}, stride={stride}'
        if kw['pad'] != (0,) * len(kw['kernel']):
            s += ', padding={pad}'
        if kw['dilate'] != (1,) * len(kw['kernel']):
            s += ', dilation={dilate}'
        if kw['num_group'] != 1:
            s += ', groups={num_group}'
        if self.deformable_conv_bias is None:
            s += ', bias=False'
        if self.act:
            s += ', {}'.format(self.act)
        s += ')'
        shape = self.deformable_conv_weight.shape
        return s.format(name=type(self).__name__,
                        mapping='{0} -> {1}'.format(shape[1] if shape[1] else None, shape[0]),
                        **kw)


class DeformableConvolution(_DeformableBase):
    """2-D deformable convolution v1 (Dai et al., 2017): a convolution whose sampling
    positions move by offsets that a plain convolution of the input computes.

    Parameters as :class:`symgraph.gluon.nn.Conv2D`'s, plus ``num_deformable_group``
    (groups of channels sharing offsets), ``offset_weight_initializer``,
    ``offset_bias_initializer`` (zeros: no deformation at first) and ``offset_use_bias``.
    Its parameters are ``offset_weight``, ``offset_bias``, ``deformable_conv_weight`` and
    ``deformable_conv_bias``, as MXNet names them.
    """

    def __init__(self, channels, kernel_size=(1, 1), strides=(1, 1), padding=(0, 0),
                 dilation=(1, 1), groups=1, num_deformable_group=1, layout='NCHW',
                 use_bias=True, in_channels=0, activation=None, weight_initializer=None,
                 bias_initializer='zeros', offset_weight_initializer='zeros',
                 offset_bias_initializer='zeros', offset_use_bias=True,
                 op_name='DeformableConvolution', adj=None, prefix=None, params=None):
        super().__init__(channels, kernel_size, strides, padding, dilation, groups,
                         num_deformable_group, layout, use_bias, in_channels, activation,
                         weight_initializer, bias_initializer, offset_weight_initializer,
                         offset_bias_initializer, offset_use_bias, op_name, adj, 2,
                         prefix=prefix, params=params)

    def hybrid_forward(self, F, x, offset_weight, deformable_conv_weight, offset_bias=None,
                       deformable_conv_bias=None):
        offset = self._offset(F, x, offset_weight, offset_bias)
        kw = dict(data=x, offset=offset, weight=deformable_conv_weight, name='fwd',
                  **self._kwargs_deformable_conv)
        if deformable_conv_bias is not None:
            kw['bias'] = deformable_conv_bias
        act = F.contrib.DeformableConvolution(**kw)
        return self.act(act) if self.act else act

    def _alias(self):
        return 'deformable_conv'


class ModulatedDeformableConvolution(_DeformableBase):
    """2-D deformable convolution v2 (Zhu et al., 2018): :class:`DeformableConvolution`
    whose samples are also weighted by a mask in (0, 2) (twice the sigmoid of the offset
    convolution's last ``num_deformable_group * kh * kw`` channels)."""

    def __init__(self, channels, kernel_size=(1, 1), strides=(1, 1), padding=(0, 0),
                 dilation=(1, 1), groups=1, num_deformable_group=1, layout='NCHW',
                 use_bias=True, in_channels=0, activation=None, weight_initializer=None,
                 bias_initializer='zeros', offset_weight_initializer='zeros',
                 offset_bias_initializer='zeros', offset_use_bias=True,
                 op_name='ModulatedDeformableConvolution', adj=None, prefix=None,
                 params=None):
        super().__init__(channels, kernel_size, strides, padding, dilation, groups,
                         num_deformable_group, layout, use_bias, in_channels, activation,
                         weight_initializer, bias_initializer, offset_weight_initializer,
                         offset_bias_initializer, offset_use_bias, op_name, adj, 3,
                         prefix=prefix, params=params)

    def hybrid_forward(self, F, x, offset_weight, deformable_conv_weight, offset_bias=None,
                       deformable_conv_bias=None):
        offset = self._offset(F, x, offset_weight, offset_bias)
        offset_t = F.slice_axis(offset, axis=1, begin=0, end=self.offset_split_index)
        mask = F.slice_axis(offset, axis=1, begin=self.offset_split_index, end=None)
        mask = F.sigmoid(mask) * 2
        kw = dict(data=x, offset=offset_t, mask=mask, weight=deformable_conv_weight,
                  name='fwd', **self._kwargs_deformable_conv)
        if deformable_conv_bias is not None:
            kw['bias'] = deformable_conv_bias
        act = F.contrib.ModulatedDeformableConvolution(**kw)
        return self.act(act) if self.act else act

    def _alias(self):
        return 'modulated_deformable_conv'
