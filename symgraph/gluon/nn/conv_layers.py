"""Convolution, pooling and padding layers of ``mx.gluon.nn``, after MXNet 1.9.1's
``gluon/nn/conv_layers.py``.

A convolution layer calls the ``Convolution`` (or, transposed, ``Deconvolution``)
operator through ``F``; its weight's shape, with 0 for the input channels not known yet,
comes from the operator's own shape inference on a data Variable of shape
``(1, in_channels, 0, ...)``, as in MXNet. Pooling layers call ``Pooling``
(``ceil_mode`` is ``pooling_convention='full'``), ReflectionPad2D calls ``pad``.

Convolution layers take channels-last layouts too (``layout`` 'NWC', 'NHWC', 'NDHWC':
data (N, *S, C), weight (channels, *kernel, in_channels / groups), as MXNet's operator
infers them; MXNet 1.9.1 runs them on GPUs only, and its Conv1D refuses 'NWC'). The
transposed layers compute channels first only: a channels-last one fails with the
``Deconvolution`` operator's ValueError when it is made (MXNet 1.9.1's CPU build fails
at the first forward). Pooling layers take both layouts.
"""
from ... import symbol
from ...base import ArgumentError, numeric_types
from ..block import HybridBlock
from .activations import Activation

__all__ = ['Conv1D', 'Conv2D', 'Conv3D',
           'Conv1DTranspose', 'Conv2DTranspose', 'Conv3DTranspose',
           'MaxPool1D', 'MaxPool2D', 'MaxPool3D',
           'AvgPool1D', 'AvgPool2D', 'AvgPool3D',
           'GlobalMaxPool1D', 'GlobalMaxPool2D', 'GlobalMaxPool3D',
           'GlobalAvgPool1D', 'GlobalAvgPool2D', 'GlobalAvgPool3D',
           'ReflectionPad2D']


def _infer_weight_shape(op_name, data_shape, kwargs):
    """The shapes of ``op_name``'s inputs (data, weight[, bias]) for data of
    ``data_shape`` (0: unknown), as the operator's shape inference gives them."""
    data = symbol.var('data', shape=data_shape)
    return getattr(symbol, op_name)(data, **kwargs).infer_shape_partial()[0]


def _check_layout(layout, valid, what):
    if layout not in valid:
        raise ArgumentError('%s: only %s layouts are supported, got %r'
                            % (what, ' and '.join(valid), layout))


def _tuple_of(value, n, what):
    """``value`` as a tuple of ``n`` ints: a number is repeated ``n`` times."""
    if isinstance(value, numeric_types):
        value = (value,) * n
    value = tuple(value)
    if len(value) != n:
        raise ArgumentError('%s must be a number or a list of %d ints, got %r'
                            % (what, n, value))
    return value


class _Conv(HybridBlock):
    """Abstract nD convolution layer (private, MXNet's implementation base).

    Parameters
    ----------
    channels : int
        The number of output channels (filters).
    kernel_size : tuple of int
        The dimensions of the convolution window.
    strides, padding, dilation : int or tuple of int
        Strides, implicit zero padding on both sides, and dilation of the window.
    groups : int
        Number of groups: the input and output channels split into that many independent
        convolutions, concatenated.
    layout : str
        Dimension ordering of data and weight: 'NCW', 'NCHW', 'NCDHW' or channels last
        ('NWC', 'NHWC', 'NDHWC'; convolutions only, not the transposed layers).
    in_channels : int, default 0
        The number of input channels; 0 defers initialization to the first forward.
    activation : str
        Activation applied to the output (see :class:`Activation`); None: none.
    use_bias : bool
        Whether the layer uses a bias vector.
    weight_initializer, bias_initializer : str or Initializer
    op_name : str
        ``'Convolution'`` or ``'Deconvolution'``.
    adj : tuple of int
        The transposed convolution's output padding.
    """

    def __init__(self, channels, kernel_size, strides, padding, dilation,
                 groups, layout, in_channels=0, activation=None, use_bias=True,
                 weight_initializer=None, bias_initializer='zeros',
                 op_name='Convolution', adj=None, prefix=None, params=None):
        super(_Conv, self).__init__(prefix=prefix, params=params)
        with self.name_scope():
            self._channels = channels
            self._in_channels = in_channels
            if isinstance(strides, numeric_types):
                strides = (strides,) * len(kernel_size)
            if isinstance(padding, numeric_types):
                padding = (padding,) * len(kernel_size)
            if isinstance(dilation, numeric_types):
                dilation = (dilation,) * len(kernel_size)
            self._op_name = op_name
            self._kwargs = {
                'kernel': kernel_size, 'stride': strides, 'dilate': dilation,
                'pad': padding, 'num_filter': channels, 'num_group': groups,
                'no_bias': not use_bias, 'layout': layout}
            if adj is not None:
                self._kwargs['adj'] = adj

            dshape = [0] * (len(kernel_size) + 2)
            dshape[layout.find('N')] = 1
            dshape[layout.find('C')] = in_channels
            wshapes = _infer_weight_shape(op_name, tuple(dshape), self._kwargs)
            self.weight = self.params.get('weight', shape=wshapes[1],
                                          init=weight_initializer,
                                          allow_deferred_init=True)
            if use_bias:
                self.bias = self.params.get('bias', shape=wshapes[2],
                                            init=bias_initializer,
                                            allow_deferred_init=True)
            else:
                self.bias = None

            if activation is not None:
                self.act = Activation(activation, prefix=activation + '_')
            else:
                self.act = None

    def hybrid_forward(self, F, x, weight, bias=None):
        op = getattr(F, self._op_name)
        if bias is None:
            act = op(x, weight, name='fwd', **self._kwargs)
        else:
            act = op(x, weight, bias, name='fwd', **self._kwargs)
        if self.act is not None:
            act = self.act(act)
        return act

    def _alias(self):
        return 'conv'

    def __repr__(self):
        s = '{name}({mapping}, kernel_size={kernel}, stride={stride}'
        len_kernel_size = len(self._kwargs['kernel'])
        if self._kwargs['pad'] != (0,) * len_kernel_size:
            s += ', padding={pad}'
        if self._kwargs['dilate'] != (1,) * len_kernel_size:
            s += ', dilation={dilate}'
        # MXNet 1.9.1 tests ``out_pad`` while the transposed layers store ``outpad``, so
        # its repr never shows the output padding; kept so that reprs compare equal
        if hasattr(self, 'out_pad') and self.out_pad != (0,) * len_kernel_size:
            s += ', output_padding={out_pad}'.format(out_pad=self.out_pad)
        if self._kwargs['num_group'] != 1:
            s += ', groups={num_group}'
        if self.bias is None:
            s += ', bias=False'
        if self.act:
            s += ', {}'.format(self.act)
        s += ')'
        shape = self.weight.shape
        return s.format(name=self.__class__.__name__,
                        mapping='{0} -> {1}'.format(shape[1] if shape[1] else None, shape[0]),
                        **self._kwargs)


class _ConvND(_Conv):
    """A convolution of ``ndim`` spatial dimensions: checks the layout and the kernel,
    then :class:`_Conv` (what Conv1D/2D/3D's constructors share in MXNet)."""

    _ndim = 0
    _layouts = ()

    def __init__(self, channels, kernel_size, strides, padding, dilation, groups, layout,
                 activation, use_bias, weight_initializer, bias_initializer, in_channels,
                 **kwargs):
        name = self.__class__.__name__
        _check_layout(layout, self._layouts, name)
        kernel_size = _tuple_of(kernel_size, self._ndim, 'kernel_size')
        op_name = kwargs.pop('op_name', 'Convolution')
        super(_ConvND, self).__init__(
            channels, kernel_size, strides, padding, dilation, groups, layout,
            in_channels, activation, use_bias, weight_initializer, bias_initializer,
            op_name, **kwargs)


class _ConvNDTranspose(_Conv):
    """A transposed convolution (``Deconvolution``) of ``ndim`` spatial dimensions."""

    _ndim = 0
    _layouts = ()

    def __init__(self, channels, kernel_size, strides, padding, output_padding, dilation,
                 groups, layout, activation, use_bias, weight_initializer, bias_initializer,
                 in_channels, **kwargs):
        _check_layout(layout, self._layouts, self.__class__.__name__)
        kernel_size = _tuple_of(kernel_size, self._ndim, 'kernel_size')
        output_padding = _tuple_of(output_padding, self._ndim, 'output_padding')
        op_name = kwargs.pop('op_name', 'Deconvolution')
        super(_ConvNDTranspose, self).__init__(
            channels, kernel_size, strides, padding, dilation, groups, layout,
            in_channels, activation, use_bias, weight_initializer, bias_initializer,
            op_name=op_name, adj=output_padding, **kwargs)
        self.outpad = output_padding


class Conv1D(_ConvND):
    r"""1D convolution layer (e.g. temporal convolution) over ``(batch, channels, width)``
    data; ``out_width = floor((width + 2*padding - dilation*(kernel_size-1) - 1)/stride) + 1``.

    Parameters as :class:`_Conv`, with `kernel_size`, `strides`, `padding` and `dilation`
    an int or a tuple of 1 int; ``layout`` 'NCW' or 'NWC' ((batch, width, channels) data;
    MXNet 1.9.1's Conv1D takes 'NCW' only).
    """

    _ndim, _layouts = 1, ('NCW', 'NWC')

    def __init__(self, channels, kernel_size, strides=1, padding=0, dilation=1,
                 groups=1, layout='NCW', activation=None, use_bias=True,
                 weight_initializer=None, bias_initializer='zeros',
                 in_channels=0, **kwargs):
        super(Conv1D, self).__init__(
            channels, kernel_size, strides, padding, dilation, groups, layout, activation,
            use_bias, weight_initializer, bias_initializer, in_channels, **kwargs)


class Conv2D(_ConvND):
    r"""2D convolution layer (e.g. spatial convolution over images) over
    ``(batch, channels, height, width)`` data.

    Parameters as :class:`_Conv`, with `kernel_size`, `strides`, `padding` and `dilation`
    an int or a tuple of 2 ints.

    Examples
    --------
    >>> import symgraph as mx
    >>> mx.gluon.nn.Conv2D(8, 3, padding=1, in_channels=4)
    Conv2D(4 -> 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))
    """

    _ndim, _layouts = 2, ('NCHW', 'NHWC')

    def __init__(self, channels, kernel_size, strides=(1, 1), padding=(0, 0),
                 dilation=(1, 1), groups=1, layout='NCHW',
                 activation=None, use_bias=True, weight_initializer=None,
                 bias_initializer='zeros', in_channels=0, **kwargs):
        super(Conv2D, self).__init__(
            channels, kernel_size, strides, padding, dilation, groups, layout, activation,
            use_bias, weight_initializer, bias_initializer, in_channels, **kwargs)


class Conv3D(_ConvND):
    """3D convolution layer (e.g. spatial convolution over volumes) over
    ``(batch, channels, depth, height, width)`` data.

    Parameters as :class:`_Conv`, with `kernel_size`, `strides`, `padding` and `dilation`
    an int or a tuple of 3 ints.
    """

    _ndim, _layouts = 3, ('NCDHW', 'NDHWC')

    def __init__(self, channels, kernel_size, strides=(1, 1, 1), padding=(0, 0, 0),
                 dilation=(1, 1, 1), groups=1, layout='NCDHW',
                 activation=None, use_bias=True, weight_initializer=None,
                 bias_initializer='zeros', in_channels=0, **kwargs):
        super(Conv3D, self).__init__(
            channels, kernel_size, strides, padding, dilation, groups, layout, activation,
            use_bias, weight_initializer, bias_initializer, in_channels, **kwargs)


class Conv1DTranspose(_ConvNDTranspose):
    """Transposed 1D convolution layer (sometimes called Deconvolution); its weight is
    ``(in_channels, channels // groups, kernel)``; `output_padding` adds to one side of
    the output."""

    _ndim, _layouts = 1, ('NCW',)

    def __init__(self, channels, kernel_size, strides=1, padding=0, output_padding=0,
                 dilation=1, groups=1, layout='NCW', activation=None, use_bias=True,
                 weight_initializer=None, bias_initializer='zeros',
                 in_channels=0, **kwargs):
        super(Conv1DTranspose, self).__init__(
            channels, kernel_size, strides, padding, output_padding, dilation, groups,
            layout, activation, use_bias, weight_initializer, bias_initializer, in_channels,
            **kwargs)


class Conv2DTranspose(_ConvNDTranspose):
    """Transposed 2D convolution layer (sometimes called Deconvolution).

    Examples
    --------
    The repr reads the weight's shape as a convolution's, so the channels show swapped
    (``in_channels -> channels / groups`` is ``weight.shape[1] -> weight.shape[0]``), as in
    MXNet 1.9.1:

    >>> import symgraph as mx
    >>> mx.gluon.nn.Conv2DTranspose(8, 4, strides=2, padding=1, in_channels=4)
    Conv2DTranspose(8 -> 4, kernel_size=(4, 4), stride=(2, 2), padding=(1, 1))
    """

    _ndim, _layouts = 2, ('NCHW', 'NHWC')

    def __init__(self, channels, kernel_size, strides=(1, 1), padding=(0, 0),
                 output_padding=(0, 0), dilation=(1, 1), groups=1, layout='NCHW',
                 activation=None, use_bias=True, weight_initializer=None,
                 bias_initializer='zeros', in_channels=0, **kwargs):
        super(Conv2DTranspose, self).__init__(
            channels, kernel_size, strides, padding, output_padding, dilation, groups,
            layout, activation, use_bias, weight_initializer, bias_initializer, in_channels,
            **kwargs)


class Conv3DTranspose(_ConvNDTranspose):
    """Transposed 3D convolution layer (sometimes called Deconvolution)."""

    _ndim, _layouts = 3, ('NCDHW', 'NDHWC')

    def __init__(self, channels, kernel_size, strides=(1, 1, 1), padding=(0, 0, 0),
                 output_padding=(0, 0, 0), dilation=(1, 1, 1), groups=1, layout='NCDHW',
                 activation=None, use_bias=True, weight_initializer=None,
                 bias_initializer='zeros', in_channels=0, **kwargs):
        super(Conv3DTranspose, self).__init__(
            channels, kernel_size, strides, padding, output_padding, dilation, groups,
            layout, activation, use_bias, weight_initializer, bias_initializer, in_channels,
            **kwargs)


class _Pooling(HybridBlock):
    """Abstract class for different pooling layers: one ``Pooling`` call."""

    def __init__(self, pool_size, strides, padding, ceil_mode, global_pool,
                 pool_type, layout, count_include_pad=None, **kwargs):
        super(_Pooling, self).__init__(**kwargs)
        if strides is None:
            strides = pool_size
        if isinstance(strides, numeric_types):
            strides = (strides,) * len(pool_size)
        if isinstance(padding, numeric_types):
            padding = (padding,) * len(pool_size)
        self._kwargs = {
            'kernel': pool_size, 'stride': strides, 'pad': padding,
            'global_pool': global_pool, 'pool_type': pool_type,
            'layout': layout,
            'pooling_convention': 'full' if ceil_mode else 'valid'}
        if count_include_pad is not None:
            self._kwargs['count_include_pad'] = count_include_pad

    def _alias(self):
        return 'pool'

    def hybrid_forward(self, F, x):
        return F.Pooling(x, name='fwd', **self._kwargs)

    def __repr__(self):
        s = '{name}(size={kernel}, stride={stride}, padding={pad}, ceil_mode={ceil_mode}'
        s += ', global_pool={global_pool}, pool_type={pool_type}, layout={layout})'
        return s.format(name=self.__class__.__name__,
                        ceil_mode=self._kwargs['pooling_convention'] == 'full',
                        **self._kwargs)


class _LocalPool(_Pooling):
    """Max or average pooling of ``ndim`` spatial dimensions (MXNet's MaxPool1D ...
    AvgPool3D constructors, which differ only in these class attributes)."""

    _ndim, _layouts, _pool_type = 0, (), None

    def __init__(self, pool_size, strides, padding, ceil_mode, layout,
                 count_include_pad=None, **kwargs):
        _check_layout(layout, self._layouts, '%dD Pooling' % self._ndim)
        pool_size = _tuple_of(pool_size, self._ndim, 'pool_size')
        super(_LocalPool, self).__init__(
            pool_size, strides, padding, ceil_mode, False, self._pool_type, layout,
            count_include_pad, **kwargs)


class MaxPool1D(_LocalPool):
    """Max pooling operation for one dimensional data ``(batch, channels, width)``;
    ``out_width = floor((width + 2*padding - pool_size)/strides) + 1`` (ceil with
    `ceil_mode`). `strides` None defaults to `pool_size`."""

    _ndim, _layouts, _pool_type = 1, ('NCW', 'NWC'), 'max'

    def __init__(self, pool_size=2, strides=None, padding=0, layout='NCW',
                 ceil_mode=False, **kwargs):
        super(MaxPool1D, self).__init__(pool_size, strides, padding, ceil_mode, layout,
                                        **kwargs)


class MaxPool2D(_LocalPool):
    """Max pooling operation for two dimensional (spatial) data.

    Examples
    --------
    >>> import symgraph as mx
    >>> mx.gluon.nn.MaxPool2D()
    MaxPool2D(size=(2, 2), stride=(2, 2), padding=(0, 0), ceil_mode=False, \
global_pool=False, pool_type=max, layout=NCHW)
    """

    _ndim, _layouts, _pool_type = 2, ('NCHW', 'NHWC'), 'max'

    def __init__(self, pool_size=(2, 2), strides=None, padding=0, layout='NCHW',
                 ceil_mode=False, **kwargs):
        super(MaxPool2D, self).__init__(pool_size, strides, padding, ceil_mode, layout,
                                        **kwargs)


class MaxPool3D(_LocalPool):
    """Max pooling operation for 3D data (spatial or spatio-temporal)."""

    _ndim, _layouts, _pool_type = 3, ('NCDHW', 'NDHWC'), 'max'

    def __init__(self, pool_size=(2, 2, 2), strides=None, padding=0,
                 ceil_mode=False, layout='NCDHW', **kwargs):
        super(MaxPool3D, self).__init__(pool_size, strides, padding, ceil_mode, layout,
                                        **kwargs)


class AvgPool1D(_LocalPool):
    """Average pooling operation for temporal data; `count_include_pad` False leaves the
    padding out of the divisor."""

    _ndim, _layouts, _pool_type = 1, ('NCW', 'NWC'), 'avg'

    def __init__(self, pool_size=2, strides=None, padding=0, layout='NCW',
                 ceil_mode=False, count_include_pad=True, **kwargs):
        super(AvgPool1D, self).__init__(pool_size, strides, padding, ceil_mode, layout,
                                        count_include_pad, **kwargs)


class AvgPool2D(_LocalPool):
    """Average pooling operation for spatial data."""

    _ndim, _layouts, _pool_type = 2, ('NCHW', 'NHWC'), 'avg'

    def __init__(self, pool_size=(2, 2), strides=None, padding=0,
                 ceil_mode=False, layout='NCHW', count_include_pad=True, **kwargs):
        super(AvgPool2D, self).__init__(pool_size, strides, padding, ceil_mode, layout,
                                        count_include_pad, **kwargs)


class AvgPool3D(_LocalPool):
    """Average pooling operation for 3D data (spatial or spatio-temporal)."""

    _ndim, _layouts, _pool_type = 3, ('NCDHW', 'NDHWC'), 'avg'

    def __init__(self, pool_size=(2, 2, 2), strides=None, padding=0,
                 ceil_mode=False, layout='NCDHW', count_include_pad=True, **kwargs):
        super(AvgPool3D, self).__init__(pool_size, strides, padding, ceil_mode, layout,
                                        count_include_pad, **kwargs)


class _GlobalPool(_Pooling):
    """Global max or average pooling: the spatial axes reduce to 1 (MXNet writes these
    with ``kernel=(1, ...)``, ``global_pool=True``, ``pooling_convention='full'``)."""

    _ndim, _layouts, _pool_type = 0, (), None

    def __init__(self, layout, **kwargs):
        _check_layout(layout, self._layouts, '%dD Pooling' % self._ndim)
        super(_GlobalPool, self).__init__(
            (1,) * self._ndim, None, 0, True, True, self._pool_type, layout, **kwargs)


class GlobalMaxPool1D(_GlobalPool):
    """Global max pooling operation for one dimensional (temporal) data."""

    _ndim, _layouts, _pool_type = 1, ('NCW', 'NWC'), 'max'

    def __init__(self, layout='NCW', **kwargs):
        super(GlobalMaxPool1D, self).__init__(layout, **kwargs)


class GlobalMaxPool2D(_GlobalPool):
    """Global max pooling operation for two dimensional (spatial) data."""

    _ndim, _layouts, _pool_type = 2, ('NCHW', 'NHWC'), 'max'

    def __init__(self, layout='NCHW', **kwargs):
        super(GlobalMaxPool2D, self).__init__(layout, **kwargs)


class GlobalMaxPool3D(_GlobalPool):
    """Global max pooling operation for 3D data (spatial or spatio-temporal)."""

    _ndim, _layouts, _pool_type = 3, ('NCDHW', 'NDHWC'), 'max'

    def __init__(self, layout='NCDHW', **kwargs):
        super(GlobalMaxPool3D, self).__init__(layout, **kwargs)


class GlobalAvgPool1D(_GlobalPool):
    """Global average pooling operation for temporal data."""

    _ndim, _layouts, _pool_type = 1, ('NCW', 'NWC'), 'avg'

    def __init__(self, layout='NCW', **kwargs):
        super(GlobalAvgPool1D, self).__init__(layout, **kwargs)


class GlobalAvgPool2D(_GlobalPool):
    """Global average pooling operation for spatial data."""

    _ndim, _layouts, _pool_type = 2, ('NCHW', 'NHWC'), 'avg'

    def __init__(self, layout='NCHW', **kwargs):
        super(GlobalAvgPool2D, self).__init__(layout, **kwargs)


class GlobalAvgPool3D(_GlobalPool):
    """Global average pooling operation for 3D data."""

    _ndim, _layouts, _pool_type = 3, ('NCDHW', 'NDHWC'), 'avg'

    def __init__(self, layout='NCDHW', **kwargs):
        super(GlobalAvgPool3D, self).__init__(layout, **kwargs)


class ReflectionPad2D(HybridBlock):
    r"""Pads the input tensor ``(N, C, H, W)`` using the reflection of the input boundary:
    ``(N, C, H + 2*padding, W + 2*padding)``.

    Parameters
    ----------
    padding : int or tuple of 8 ints
        The padding size, or the ``pad`` operator's full ``pad_width``.
    """

    def __init__(self, padding=0, **kwargs):
        super(ReflectionPad2D, self).__init__(**kwargs)
        if isinstance(padding, numeric_types):
            padding = (0, 0, 0, 0, padding, padding, padding, padding)
        if len(padding) != 8:
            raise ArgumentError('ReflectionPad2D: padding must be an int or 8 ints, got %r'
                                % (padding,))
        self._padding = padding

    def hybrid_forward(self, F, x):
        return F.pad(x, mode='reflect', pad_width=self._padding)
