"""Convolutional recurrent cells (``mx.rnn.ConvRNNCell``, ``ConvLSTMCell``, ``ConvGRUCell``),
after MXNet 1.9.1's ``python/mxnet/rnn/rnn_cell.py``.

The input-to-hidden and hidden-to-hidden transforms are convolutions (Shi et al., 2015,
"Convolutional LSTM Network"); the hidden-to-hidden one keeps the spatial size (odd kernel,
"same" padding), so the state has the shape of the input-to-hidden convolution's output,
worked out once from ``input_shape`` with a batch size of 0 (unknown).
"""
from .. import symbol
from .base_cell import BaseRNNCell

__all__ = ['BaseConvRNNCell', 'ConvRNNCell', 'ConvLSTMCell', 'ConvGRUCell']



def _LEAKY(data, **kwargs):  # noqa: N802
    """The cells' default activation, MXNet's ``functools.partial(symbol.LeakyReLU,
    act_type='leaky', slope=0.2)``; a function because the operators register after this
    module is imported."""
    return symbol.LeakyReLU(data, act_type='leaky', slope=0.2, **kwargs)


class BaseConvRNNCell(BaseRNNCell):
    """Base class of the convolutional cells.

    Parameters
    ----------
    input_shape : tuple of int
        One step's input shape, batch included (e.g. ``(1, 3, 16, 10)`` for NCHW).
    num_hidden : int
        Channels of the hidden state.
    h2h_kernel, h2h_dilate : tuple of int
        Hidden-to-hidden convolution (odd kernel sizes only).
    i2h_kernel, i2h_stride, i2h_pad, i2h_dilate : tuple of int
        Input-to-hidden convolution.
    i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
    h2h_bias_initializer : str or Initializer
    activation : str or callable
        Applied to the candidate state (an ``Activation`` type or a symbol function).
    prefix : str
    params : RNNParams, optional
    conv_layout : str
        'NCHW' (or another layout the Convolution operator takes).

    Raises
    ------
    ValueError
        An even hidden-to-hidden kernel size.
    """

    def __init__(self, input_shape, num_hidden, h2h_kernel, h2h_dilate, i2h_kernel,
                 i2h_stride, i2h_pad, i2h_dilate, i2h_weight_initializer,
                 h2h_weight_initializer, i2h_bias_initializer, h2h_bias_initializer,
                 activation, prefix='', params=None, conv_layout='NCHW'):
        super().__init__(prefix=prefix, params=params)
        if h2h_kernel[0] % 2 != 1 or h2h_kernel[1] % 2 != 1:
            raise ValueError('Only support odd number, get h2h_kernel= %s' % str(h2h_kernel))
        self._h2h_kernel = h2h_kernel
        # "same" padding, so that the state keeps its spatial size
        self._h2h_pad = (h2h_dilate[0] * (h2h_kernel[0] - 1) // 2,
                         h2h_dilate[1] * (h2h_kernel[1] - 1) // 2)
        self._h2h_dilate = h2h_dilate
        self._i2h_kernel = i2h_kernel
        self._i2h_stride = i2h_stride
        self._i2h_pad = i2h_pad
        self._i2h_dilate = i2h_dilate
        self._num_hidden = num_hidden
        self._input_shape = input_shape
        self._conv_layout = conv_layout
        self._activation = activation
        conv = symbol.Convolution(data=symbol.Variable('data'), num_filter=num_hidden,
                                  kernel=i2h_kernel, stride=i2h_stride, pad=i2h_pad,
                                  dilate=i2h_dilate, layout=conv_layout)
        self._state_shape = (0,) + tuple(conv.infer_shape(data=input_shape)[1][0][1:])
        self._iW = self.params.get('i2h_weight', init=i2h_weight_initializer)
        self._hW = self.params.get('h2h_weight', init=h2h_weight_initializer)
        self._iB = self.params.get('i2h_bias', init=i2h_bias_initializer)
        self._hB = self.params.get('h2h_bias', init=h2h_bias_initializer)

    @property
    def _num_gates(self):
        return len(self._gate_names)

    @property
    def state_info(self):
        return [{'shape': self._state_shape, '__layout__': self._conv_layout}] * 2

    def _conv_forward(self, inputs, states, name):
        """The input-to-hidden and hidden-to-hidden convolutions of one step."""
        i2h = symbol.Convolution(name='%si2h' % name, data=inputs,
                                 num_filter=self._num_hidden * self._num_gates,
                                 kernel=self._i2h_kernel, stride=self._i2h_stride,
                                 pad=self._i2h_pad, dilate=self._i2h_dilate,
                                 weight=self._iW, bias=self._iB, layout=self._conv_layout)
        h2h = symbol.Convolution(name='%sh2h' % name, data=states[0],
                                 num_filter=self._num_hidden * self._num_gates,
                                 kernel=self._h2h_kernel, dilate=self._h2h_dilate,
                                 pad=self._h2h_pad, stride=(1, 1),
                                 weight=self._hW, bias=self._hB, layout=self._conv_layout)
        return i2h, h2h

    def __call__(self, inputs, states):
        raise NotImplementedError('BaseConvRNNCell is abstract class for convolutional RNN')


def _cell_init(cls):
    """The shared constructor of the three cells (only the prefix default differs)."""
    def __init__(self, input_shape, num_hidden, h2h_kernel=(3, 3), h2h_dilate=(1, 1),
                 i2h_kernel=(3, 3), i2h_stride=(1, 1), i2h_pad=(1, 1), i2h_dilate=(1, 1),
                 i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer='zeros', h2h_bias_initializer='zeros',
                 activation=_LEAKY, prefix=cls._default_prefix, params=None,
                 conv_layout='NCHW'):
        BaseConvRNNCell.__init__(
            self, input_shape=input_shape, num_hidden=num_hidden, h2h_kernel=h2h_kernel,
            h2h_dilate=h2h_dilate, i2h_kernel=i2h_kernel, i2h_stride=i2h_stride,
            i2h_pad=i2h_pad, i2h_dilate=i2h_dilate,
            i2h_weight_initializer=i2h_weight_initializer,
            h2h_weight_initializer=h2h_weight_initializer,
            i2h_bias_initializer=i2h_bias_initializer,
            h2h_bias_initializer=h2h_bias_initializer, activation=activation, prefix=prefix,
            params=params, conv_layout=conv_layout)
    __init__.__doc__ = BaseConvRNNCell.__doc__
    cls.__init__ = __init__
    return cls


@_cell_init
class ConvRNNCell(BaseConvRNNCell):
    """Convolutional RNN cell: ``h' = activation(conv(x) + conv(h))``."""
    _default_prefix = 'ConvRNN_'

    @property
    def _gate_names(self):
        return ('',)

    @property
    def state_info(self):
        return [{'shape': self._state_shape, '__layout__': self._conv_layout}]

    def __call__(self, inputs, states):
        self._counter += 1
        name = '%st%d_' % (self._prefix, self._counter)
        i2h, h2h = self._conv_forward(inputs, states, name)
        output = self._get_activation(i2h + h2h, self._activation, name='%sout' % name)
        return output, [output]


@_cell_init
class ConvLSTMCell(BaseConvRNNCell):
    """Convolutional LSTM cell (Shi et al., 2015): states ``[h, c]``."""
    _default_prefix = 'ConvLSTM_'

    @property
    def _gate_names(self):
        return ['_i', '_f', '_c', '_o']

    def __call__(self, inputs, states):
        self._counter += 1
        name = '%st%d_' % (self._prefix, self._counter)
        i2h, h2h = self._conv_forward(inputs, states, name)
        gates = symbol.SliceChannel(i2h + h2h, num_outputs=4,
                                    axis=self._conv_layout.find('C'), name='%sslice' % name)
        in_gate = symbol.Activation(gates[0], act_type='sigmoid', name='%si' % name)
        forget_gate = symbol.Activation(gates[1], act_type='sigmoid', name='%sf' % name)
        in_transform = self._get_activation(gates[2], self._activation, name='%sc' % name)
        out_gate = symbol.Activation(gates[3], act_type='sigmoid', name='%so' % name)
        next_c = symbol._internal._plus(forget_gate * states[1], in_gate * in_transform,
                                        name='%sstate' % name)
        next_h = symbol._internal._mul(out_gate, self._get_activation(next_c, self._activation),
                                       name='%sout' % name)
        return next_h, [next_h, next_c]


@_cell_init
class ConvGRUCell(BaseConvRNNCell):
    """Convolutional GRU cell: one state ``h``."""
    _default_prefix = 'ConvGRU_'

    @property
    def _gate_names(self):
        return ['_r', '_z', '_o']

    @property
    def state_info(self):
        return [{'shape': self._state_shape, '__layout__': self._conv_layout}]

    def __call__(self, inputs, states):
        self._counter += 1
        name = '%st%d_' % (self._prefix, self._counter)
        i2h, h2h = self._conv_forward(inputs, states, name)
        i2h_r, i2h_z, i2h = symbol.SliceChannel(i2h, num_outputs=3, name='%s_i2h_slice' % name)
        h2h_r, h2h_z, h2h = symbol.SliceChannel(h2h, num_outputs=3, name='%s_h2h_slice' % name)
        reset_gate = symbol.Activation(i2h_r + h2h_r, act_type='sigmoid',
                                       name='%s_r_act' % name)
        update_gate = symbol.Activation(i2h_z + h2h_z, act_type='sigmoid',
                                        name='%s_z_act' % name)
        next_h_tmp = self._get_activation(i2h + reset_gate * h2h, self._activation,
                                          name='%s_h_act' % name)
        next_h = symbol._internal._plus((1. - update_gate) * next_h_tmp,
                                        update_gate * states[0], name='%sout' % name)
        return next_h, [next_h]
