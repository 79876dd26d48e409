"""Convolutional recurrent cells: RNN, LSTM and GRU cells whose input and recurrent
transforms are convolutions (Shi et al. 2015, https://arxiv.org/abs/1506.04214), in 1, 2
and 3 spatial dimensions.

After MXNet 1.9.1's python/mxnet/gluon/contrib/rnn/conv_rnn_cell.py (reached as
``mx.gluon.contrib.rnn.Conv2DLSTMCell`` and so on): the same parameters (``i2h_weight`` of
shape (gates * hidden_channels, in_channels, *i2h_kernel) for a channels-first layout),
prefixes (``conv_rnn``, ``conv_lstm``, ``conv_gru``), states and node names. The recurrent
convolution pads to keep the state's size, so its kernel must be odd.
"""
from math import floor

from ...base import numeric_types
from .rnn_cell import HybridRecurrentCell

__all__ = ['Conv1DRNNCell', 'Conv2DRNNCell', 'Conv3DRNNCell',
           'Conv1DLSTMCell', 'Conv2DLSTMCell', 'Conv3DLSTMCell',
           'Conv1DGRUCell', 'Conv2DGRUCell', 'Conv3DGRUCell']


def _get_conv_out_size(dimensions, kernels, paddings, dilations):
    """Spatial output size of a stride-1 convolution; 0 (unknown) stays 0."""
    return tuple(int(floor(x + 2 * p - d * (k - 1) - 1) + 1) if x else 0
                 for x, k, p, d in zip(dimensions, kernels, paddings, dilations))


def _tuple(spec, dims, what):
    if isinstance(spec, numeric_types):
        return (spec,) * dims
    if len(spec) != dims:
        raise ValueError('For {dims}D convolution, the convolution settings can only be '
                         'either int or list/tuple of length {dims}; {what} is {spec}'
                         .format(dims=dims, what=what, spec=spec))
    return tuple(spec)


class _BaseConvRNNCell(HybridRecurrentCell):
    """What the convolutional cells share: the two convolutions and the shapes.

    ``input_shape`` is one step's input without the batch axis, laid out as
    ``conv_layout`` says (``(C, H, W)`` for 'NCHW'); a 0 there is inferred from the data.
    """

    _gate_names = ('',)

    def __init__(self, input_shape, hidden_channels, i2h_kernel, h2h_kernel, i2h_pad,
                 i2h_dilate, h2h_dilate, i2h_weight_initializer, h2h_weight_initializer,
                 i2h_bias_initializer, h2h_bias_initializer, dims, conv_layout, activation,
                 prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._hidden_channels = hidden_channels
        self._input_shape = input_shape
        self._conv_layout = conv_layout
        self._activation = activation
        self._i2h_kernel = _tuple(i2h_kernel, dims, 'i2h_kernel')
        self._stride = (1,) * dims
        self._i2h_pad = _tuple(i2h_pad, dims, 'i2h_pad')
        self._i2h_dilate = _tuple(i2h_dilate, dims, 'i2h_dilate')
        self._h2h_kernel = _tuple(h2h_kernel, dims, 'h2h_kernel')
        if not all(k % 2 == 1 for k in self._h2h_kernel):
            raise ValueError('Only support odd number, get h2h_kernel= %s' % str(h2h_kernel))
        self._h2h_dilate = _tuple(h2h_dilate, dims, 'h2h_dilate')
        (self._channel_axis, self._in_channels, i2h_param_shape, h2h_param_shape,
         self._h2h_pad, self._state_shape) = self._decide_shapes()

        gates = hidden_channels * self._num_gates
        self.i2h_weight = self.params.get('i2h_weight', shape=i2h_param_shape,
                                          init=i2h_weight_initializer,
                                          allow_deferred_init=True)
        self.h2h_weight = self.params.get('h2h_weight', shape=h2h_param_shape,
                                          init=h2h_weight_initializer,
                                          allow_deferred_init=True)
        self.i2h_bias = self.params.get('i2h_bias', shape=(gates,),
                                        init=i2h_bias_initializer, allow_deferred_init=True)
        self.h2h_bias = self.params.get('h2h_bias', shape=(gates,),
                                        init=h2h_bias_initializer, allow_deferred_init=True)

    def _decide_shapes(self):
        channel_axis = self._conv_layout.find('C')
        input_shape = self._input_shape
        in_channels = input_shape[channel_axis - 1]
        hidden_channels = self._hidden_channels
        dimensions = input_shape[1:] if channel_axis == 1 else input_shape[:-1]
        total_out = hidden_channels * self._num_gates
        conv_out_size = _get_conv_out_size(dimensions, self._i2h_kernel, self._i2h_pad,
                                           self._i2h_dilate)
        # 'same' padding keeps the state's size through the recurrent convolution
        h2h_pad = tuple(d * (k - 1) // 2 for d, k in zip(self._h2h_dilate, self._h2h_kernel))
        if channel_axis == 1:
            i2h_param_shape = (total_out, in_channels) + self._i2h_kernel
            h2h_param_shape = (total_out, hidden_channels) + self._h2h_kernel
            state_shape = (hidden_channels,) + conv_out_size
        else:
            i2h_param_shape = (total_out,) + self._i2h_kernel + (in_channels,)
            h2h_param_shape = (total_out,) + self._h2h_kernel + (hidden_channels,)
            state_shape = conv_out_size + (hidden_channels,)
        return (channel_axis, in_channels, i2h_param_shape, h2h_param_shape, h2h_pad,
                state_shape)

    def __repr__(self):
        shape = self.i2h_weight.shape
        in_channels = shape[1 if self._channel_axis == 1 else -1]
        mapping = '{0} -> {1}'.format(in_channels if in_channels else None, shape[0])
        return '%s(%s, %s, %s)' % (self.__class__.__name__, mapping, self._activation,
                                   self._conv_layout)

    @property
    def _num_gates(self):
        return len(self._gate_names)

    def _conv_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias,
                      prefix):
        num_filter = self._hidden_channels * self._num_gates
        i2h = F.Convolution(data=inputs, num_filter=num_filter, kernel=self._i2h_kernel,
                            stride=self._stride, pad=self._i2h_pad, dilate=self._i2h_dilate,
                            weight=i2h_weight, bias=i2h_bias, layout=self._conv_layout,
                            name=prefix + 'i2h')
        h2h = F.Convolution(data=states[0], num_filter=num_filter, kernel=self._h2h_kernel,
                            dilate=self._h2h_dilate, pad=self._h2h_pad, stride=self._stride,
                            weight=h2h_weight, bias=h2h_bias, layout=self._conv_layout,
                            name=prefix + 'h2h')
        return i2h, h2h

    def state_info(self, batch_size=0):
        return [{'shape': (batch_size,) + self._state_shape, '__layout__': self._conv_layout}]

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        raise NotImplementedError('_BaseConvRNNCell is abstract class for convolutional RNN')


class _ConvRNNCell(_BaseConvRNNCell):
    r""":math:`h_t = act(W_i \ast x_t + R_i \ast h_{t-1} + b_i)`."""

    def _alias(self):
        return 'conv_rnn'

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix = 't%d_' % self._counter
        i2h, h2h = self._conv_forward(F, inputs, states, i2h_weight, h2h_weight, i2h_bias,
                                      h2h_bias, prefix)
        output = self._get_activation(F, i2h + h2h, self._activation, name=prefix + 'out')
        return output, [output]


class _ConvLSTMCell(_BaseConvRNNCell):
    r"""The LSTM recurrence (gates i, f, c, o on the channel axis) with convolutions; states
    ``[h, c]``."""

    _gate_names = ('_i', '_f', '_c', '_o')

    def state_info(self, batch_size=0):
        info = {'shape': (batch_size,) + self._state_shape, '__layout__': self._conv_layout}
        return [info, dict(info)]

    def _alias(self):
        return 'conv_lstm'

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix = 't%d_' % self._counter
        i2h, h2h = self._conv_forward(F, inputs, states, i2h_weight, h2h_weight, i2h_bias,
                                      h2h_bias, prefix)
        gates = i2h + h2h
        slice_gates = F.SliceChannel(gates, num_outputs=4, name=prefix + 'slice',
                                     axis=self._channel_axis)
        in_gate = F.Activation(slice_gates[0], act_type='sigmoid', name=prefix + 'i')
        forget_gate = F.Activation(slice_gates[1], act_type='sigmoid', name=prefix + 'f')
        in_transform = self._get_activation(F, slice_gates[2], self._activation,
                                            name=prefix + 'c')
        out_gate = F.Activation(slice_gates[3], act_type='sigmoid', name=prefix + 'o')
        next_c = F.elemwise_add(forget_gate * states[1], in_gate * in_transform,
                                name=prefix + 'state')
        next_h = F.elemwise_mul(out_gate, self._get_activation(F, next_c, self._activation),
                                name=prefix + 'out')
        return next_h, [next_h, next_c]


class _ConvGRUCell(_BaseConvRNNCell):
    r"""The GRU recurrence (gates r, z, o on the channel axis) with convolutions."""

    _gate_names = ('_r', '_z', '_o')

    def _alias(self):
        return 'conv_gru'

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix = 't%d_' % self._counter
        i2h, h2h = self._conv_forward(F, inputs, states, i2h_weight, h2h_weight, i2h_bias,
                                      h2h_bias, prefix)
        i2h_r, i2h_z, i2h = F.SliceChannel(i2h, num_outputs=3, name=prefix + 'i2h_slice',
                                           axis=self._channel_axis)
        h2h_r, h2h_z, h2h = F.SliceChannel(h2h, num_outputs=3, name=prefix + 'h2h_slice',
                                           axis=self._channel_axis)
        reset_gate = F.Activation(i2h_r + h2h_r, act_type='sigmoid', name=prefix + 'r_act')
        update_gate = F.Activation(i2h_z + h2h_z, act_type='sigmoid', name=prefix + 'z_act')
        next_h_tmp = self._get_activation(F, i2h + reset_gate * h2h, self._activation,
                                          name=prefix + 'h_act')
        next_h = F.elemwise_add((1. - update_gate) * next_h_tmp, update_gate * states[0],
                                name=prefix + 'out')
        return next_h, [next_h]


_LAYOUTS = {1: 'NCW', 2: 'NCHW', 3: 'NCDHW'}
_SPATIAL = {1: 'W', 2: 'H, W', 3: 'D, H, W'}
_PREFIXES = {'RNN': 'conv_rnn_', 'LSTM': 'conv_lstm_', 'GRU': 'conv_gru_'}


def _cell_class(base, dims, name, kind):
    """The public ``Conv<dims>D<kind>Cell``: ``base`` with MXNet's signature and defaults
    for ``dims`` spatial dimensions."""

    def __init__(self, input_shape, hidden_channels, i2h_kernel, h2h_kernel,
                 i2h_pad=(0,) * dims, i2h_dilate=(1,) * dims, h2h_dilate=(1,) * dims,
                 i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer='zeros', h2h_bias_initializer='zeros',
                 conv_layout=_LAYOUTS[dims], activation='tanh', prefix=None, params=None):
        base.__init__(self, input_shape=input_shape, hidden_channels=hidden_channels,
                      i2h_kernel=i2h_kernel, h2h_kernel=h2h_kernel, i2h_pad=i2h_pad,
                      i2h_dilate=i2h_dilate, h2h_dilate=h2h_dilate,
                      i2h_weight_initializer=i2h_weight_initializer,
                      h2h_weight_initializer=h2h_weight_initializer,
                      i2h_bias_initializer=i2h_bias_initializer,
                      h2h_bias_initializer=h2h_bias_initializer, dims=dims,
                      conv_layout=conv_layout, activation=activation, prefix=prefix,
                      params=params)

    doc = ('%dD convolutional %s cell.\n\n    Parameters\n    ----------\n'
           '    input_shape : tuple of int\n        One step\'s input without the batch axis, '
           'in ``conv_layout`` (e.g. (C, %s)).\n'
           '    hidden_channels : int\n        Channels of the state.\n'
           '    i2h_kernel, h2h_kernel : int or tuple of int\n        Kernel sizes of the '
           'input and recurrent convolutions (h2h: odd only).\n'
           '    i2h_pad, i2h_dilate, h2h_dilate : int or tuple of int\n'
           '    i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer, '
           'h2h_bias_initializer : str or Initializer\n'
           '    conv_layout : str, default %r\n        Channels first or last.\n'
           '    activation : str or Block, default \'tanh\'\n'
           '    prefix : str, default ``%r``\n    params : ParameterDict or None\n'
           % (dims, kind, _SPATIAL[dims], _LAYOUTS[dims], _PREFIXES[kind]))
    return type(name, (base,), {'__init__': __init__, '__doc__': doc,
                                '__module__': __name__})


Conv1DRNNCell = _cell_class(_ConvRNNCell, 1, 'Conv1DRNNCell', 'RNN')
Conv2DRNNCell = _cell_class(_ConvRNNCell, 2, 'Conv2DRNNCell', 'RNN')
Conv3DRNNCell = _cell_class(_ConvRNNCell, 3, 'Conv3DRNNCell', 'RNN')
Conv1DLSTMCell = _cell_class(_ConvLSTMCell, 1, 'Conv1DLSTMCell', 'LSTM')
Conv2DLSTMCell = _cell_class(_ConvLSTMCell, 2, 'Conv2DLSTMCell', 'LSTM')
Conv3DLSTMCell = _cell_class(_ConvLSTMCell, 3, 'Conv3DLSTMCell', 'LSTM')
Conv1DGRUCell = _cell_class(_ConvGRUCell, 1, 'Conv1DGRUCell', 'GRU')
Conv2DGRUCell = _cell_class(_ConvGRUCell, 2, 'Conv2DGRUCell', 'GRU')
Conv3DGRUCell = _cell_class(_ConvGRUCell, 3, 'Conv3DGRUCell', 'GRU')
