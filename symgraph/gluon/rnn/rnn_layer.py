"""Gluon's fused recurrent layers ``RNN``, ``LSTM`` and ``GRU`` over the ``RNN`` operator.

After MXNet 1.9.1's python/mxnet/gluon/rnn/rnn_layer.py: the same parameters
(``l0_i2h_weight``, ``r0_h2h_bias``, ``l0_h2r_weight`` with projection; prefix ``lstm0_``),
the same packing of them into the operator's flat vector (``_rnn_param_concat``), the
same ``.params`` keys (``_unfused.0.i2h_weight``, ``_unfused.0.l_cell.i2h_weight`` when
bidirectional: the names of the stacked cells that ``_unfuse`` builds), and the same calling
convention: ``layer(x)`` returns the output, ``layer(x, states)`` ``(output, new_states)``.
"""
import re

from ... import ndarray, symbol
from ..block import HybridBlock
from . import rnn_cell

__all__ = ['RNN', 'LSTM', 'GRU']

_KEY = re.compile(r'(l|r)(\d+)_(i2h|h2h|h2r)_(weight|bias)\Z')


class _RNNLayer(HybridBlock):
    """The fused recurrent layers' common part; ``mode`` picks the recurrence."""

    def __init__(self, hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                 i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                 h2h_bias_initializer, mode, projection_size, h2r_weight_initializer,
                 lstm_state_clip_min, lstm_state_clip_max, lstm_state_clip_nan, dtype,
                 use_sequence_length=False, **kwargs):
        super().__init__(**kwargs)
        if layout not in ('TNC', 'NTC'):
            raise ValueError("Invalid layout %s; must be one of ['TNC' or 'NTC']" % layout)
        self._hidden_size = hidden_size
        self._projection_size = projection_size if projection_size else None
        self._num_layers = num_layers
        self._mode = mode
        self._layout = layout
        self._dropout = dropout
        self._dir = 2 if bidirectional else 1
        self._input_size = input_size
        self._i2h_weight_initializer = i2h_weight_initializer
        self._h2h_weight_initializer = h2h_weight_initializer
        self._i2h_bias_initializer = i2h_bias_initializer
        self._h2h_bias_initializer = h2h_bias_initializer
        self._h2r_weight_initializer = h2r_weight_initializer
        self._lstm_state_clip_min = lstm_state_clip_min
        self._lstm_state_clip_max = lstm_state_clip_max
        self._lstm_state_clip_nan = lstm_state_clip_nan
        self._dtype = dtype
        self._use_sequence_length = use_sequence_length
        self.skip_states = None
        self._gates = {'rnn_relu': 1, 'rnn_tanh': 1, 'lstm': 4, 'gru': 3}[mode]

        ng, ni, nh = self._gates, input_size, hidden_size
        # the recurrent input of each layer is the (projected) state
        nr = self._projection_size or nh
        for i in range(num_layers):
            for j in ['l', 'r'][:self._dir]:
                self._register_param('%s%d_i2h_weight' % (j, i), (ng * nh, ni),
                                     i2h_weight_initializer, dtype)
                self._register_param('%s%d_h2h_weight' % (j, i), (ng * nh, nr),
                                     h2h_weight_initializer, dtype)
                self._register_param('%s%d_i2h_bias' % (j, i), (ng * nh,),
                                     i2h_bias_initializer, dtype)
                self._register_param('%s%d_h2h_bias' % (j, i), (ng * nh,),
                                     h2h_bias_initializer, dtype)
                if self._projection_size:
                    self._register_param('%s%d_h2r_weight' % (j, i), (nr, nh),
                                         h2r_weight_initializer, dtype)
            ni = nr * self._dir

    def _register_param(self, name, shape, init, dtype):
        p = self.params.get(name, shape=shape, init=init, allow_deferred_init=True,
                            dtype=dtype)
        setattr(self, name, p)
        return p

    def __repr__(self):
        s = '{name}({mapping}, {_layout}'
        if self._num_layers != 1:
            s += ', num_layers={_num_layers}'
        if self._dropout != 0:
            s += ', dropout={_dropout}'
        if self._dir == 2:
            s += ', bidirectional'
        s += ')'
        shape = self.l0_i2h_weight.shape
        mapping = '{0} -> {1}'.format(shape[1] if shape[1] else None, shape[0] // self._gates)
        return s.format(name=self.__class__.__name__, mapping=mapping, **self.__dict__)

    def _collect_params_with_prefix(self, prefix=''):
        """The structural names of ``save_parameters``: those of the stacked cells the
        layer stands for (MXNet keeps them so that older files still load)."""
        if prefix:
            prefix += '.'
        bidirectional = any(_KEY.match(k).group(1) == 'r' for k in self._reg_params)

        def convert_key(m):
            d, layer, g, t = [m.group(i) for i in range(1, 5)]
            if bidirectional:
                return '_unfused.{}.{}_cell.{}_{}'.format(layer, d, g, t)
            return '_unfused.{}.{}_{}'.format(layer, g, t)

        ret = {prefix + convert_key(_KEY.match(key)): val
               for key, val in self._reg_params.items()}
        for name, child in self._children.items():
            ret.update(child._collect_params_with_prefix(prefix + name))
        return ret

    def state_info(self, batch_size=0):
        raise NotImplementedError

    def _unfuse(self):
        """The layer as a stack of cells sharing its parameters."""
        if self._projection_size:
            raise NotImplementedError('_unfuse does not support projection layer yet!')
        if self._lstm_state_clip_min or self._lstm_state_clip_max:
            raise NotImplementedError('_unfuse does not support state clipping yet!')
        get_cell = {
            'rnn_relu': lambda **kw: rnn_cell.RNNCell(self._hidden_size, activation='relu',
                                                      **kw),
            'rnn_tanh': lambda **kw: rnn_cell.RNNCell(self._hidden_size, activation='tanh',
                                                      **kw),
            'lstm': lambda **kw: rnn_cell.LSTMCell(self._hidden_size, **kw),
            'gru': lambda **kw: rnn_cell.GRUCell(self._hidden_size, **kw)}[self._mode]

        stack = rnn_cell.HybridSequentialRNNCell(prefix=self.prefix, params=self.params)
        with stack.name_scope():
            ni = self._input_size
            for i in range(self._num_layers):
                kwargs = {'input_size': ni,
                          'i2h_weight_initializer': self._i2h_weight_initializer,
                          'h2h_weight_initializer': self._h2h_weight_initializer,
                          'i2h_bias_initializer': self._i2h_bias_initializer,
                          'h2h_bias_initializer': self._h2h_bias_initializer}
                if self._dir == 2:
                    stack.add(rnn_cell.BidirectionalCell(
                        get_cell(prefix='l%d_' % i, **kwargs),
                        get_cell(prefix='r%d_' % i, **kwargs)))
                else:
                    stack.add(get_cell(prefix='l%d_' % i, **kwargs))
                if self._dropout > 0 and i != self._num_layers - 1:
                    stack.add(rnn_cell.DropoutCell(self._dropout))
                ni = self._hidden_size * self._dir
        return stack

    def cast(self, dtype):
        super().cast(dtype)
        self._dtype = dtype

    def begin_state(self, batch_size=0, func=ndarray.zeros, **kwargs):
        """Initial states, named ``<prefix>h0_<i>``.

        Parameters
        ----------
        batch_size : int
            Size of the batch ('N' in layout); needed for NDArrays.
        func : callable, default ``mx.nd.zeros``
            ``mx.sym.zeros``, ``mx.sym.var`` (to feed the states as inputs), ``mx.nd.ones``...
        **kwargs
            More keywords for ``func`` (``ctx``, ``dtype``, ...).
        """
        states = []
        for i, info in enumerate(self.state_info(batch_size)):
            if info is not None:
                info.update(kwargs)
            else:
                info = kwargs
            states.append(func(name='%sh0_%d' % (self.prefix, i),
                               **rnn_cell._state_kwargs(func, info)))
        return states

    def __call__(self, inputs, states=None, sequence_length=None, **kwargs):
        self.skip_states = states is None
        if states is None:
            if isinstance(inputs, ndarray.NDArray):
                batch_size = inputs.shape[self._layout.find('N')]
                states = self.begin_state(batch_size, ctx=inputs.context, dtype=inputs.dtype)
            else:
                states = self.begin_state(0, func=symbol.zeros)
        if isinstance(states, rnn_cell.tensor_types):
            states = [states]
        if self._use_sequence_length:
            return super().__call__(inputs, states, sequence_length, **kwargs)
        return super().__call__(inputs, states, **kwargs)

    def hybrid_forward(self, F, inputs, states, sequence_length=None, **kwargs):
        if isinstance(inputs, ndarray.NDArray):
            batch_size = inputs.shape[self._layout.find('N')]
            for state, info in zip(states, self.state_info(batch_size)):
                if state.shape != info['shape']:
                    raise ValueError('Invalid recurrent state shape. Expecting %s, got %s.'
                                     % (str(info['shape']), str(state.shape)))
        out = self._forward_kernel(F, inputs, states, sequence_length, **kwargs)
        # out is (output, states)
        return out[0] if self.skip_states else out

    def _forward_kernel(self, F, inputs, states, sequence_length, **kwargs):
        """One ``RNN`` operator call over the packed parameters."""
        if self._layout == 'NTC':
            inputs = F.swapaxes(inputs, 0, 1)
        # the operator's packing: every weight (layer by layer, direction by direction),
        # then every bias; h2r has no bias
        gates = ['i2h', 'h2h', 'h2r'] if self._projection_size else ['i2h', 'h2h']
        params = [kwargs['%s%d_%s_%s' % (d, layer, g, t)].reshape(-1)
                  for t in ['weight', 'bias']
                  for layer in range(self._num_layers)
                  for d in ['l', 'r'][:self._dir]
                  for g in gates
                  if g != 'h2r' or t != 'bias']
        params = F._internal._rnn_param_concat(*params, dim=0)
        rnn_args = list(states)
        if self._use_sequence_length:
            rnn_args.append(sequence_length)
        rnn = F.RNN(inputs, params, *rnn_args, use_sequence_length=self._use_sequence_length,
                    state_size=self._hidden_size, projection_size=self._projection_size,
                    num_layers=self._num_layers, bidirectional=self._dir == 2,
                    p=self._dropout, state_outputs=True, mode=self._mode,
                    lstm_state_clip_min=self._lstm_state_clip_min,
                    lstm_state_clip_max=self._lstm_state_clip_max,
                    lstm_state_clip_nan=self._lstm_state_clip_nan)
        if self._mode == 'lstm':
            outputs, states = rnn[0], [rnn[1], rnn[2]]
        else:
            outputs, states = rnn[0], [rnn[1]]
        if self._layout == 'NTC':
            outputs = F.swapaxes(outputs, 0, 1)
        return outputs, states


def _state_info(layer, batch_size, sizes):
    return [{'shape': (layer._num_layers * layer._dir, batch_size, size),
             '__layout__': 'LNC', 'dtype': layer._dtype} for size in sizes]


class RNN(_RNNLayer):
    r"""Multi-layer Elman RNN with ``tanh`` or ``relu``:
    :math:`h_t = act(W_{ih} x_t + b_{ih} + W_{hh} h_{t-1} + b_{hh})`.

    Parameters
    ----------
    hidden_size : int
        Number of features of the hidden state h.
    num_layers : int, default 1
    activation : {'relu', 'tanh'}, default 'relu'
    layout : {'TNC', 'NTC'}, default 'TNC'
        Layout of the input and output (T: time, N: batch, C: features).
    dropout : float, default 0
        Dropout on the outputs of each layer but the last.
    bidirectional : bool, default False
    i2h_weight_initializer, h2h_weight_initializer : str or Initializer
    i2h_bias_initializer, h2h_bias_initializer : str or Initializer, default 'zeros'
    input_size : int, default 0
        Input features; inferred from the first input when 0.
    dtype : str, default 'float32'
    prefix : str or None
    params : ParameterDict or None

    Inputs: ``data`` (T, N, C) in layout TNC, and optionally ``states``, one tensor of
    shape (num_layers * D, N, hidden_size) (D = 2 when bidirectional).
    Outputs: ``out`` (T, N, D * hidden_size) and, when states were given, ``out_states``.

    Examples
    --------
    >>> import symgraph as mx
    >>> layer = mx.gluon.rnn.RNN(100, 3)
    >>> layer.initialize()
    >>> layer(mx.nd.random.uniform(shape=(5, 3, 10))).shape
    (5, 3, 100)
    >>> output, hn = layer(mx.nd.random.uniform(shape=(5, 3, 10)),
    ...                    mx.nd.random.uniform(shape=(3, 3, 100)))
    >>> hn[0].shape
    (3, 3, 100)
    """

    def __init__(self, hidden_size, num_layers=1, activation='relu', layout='TNC', dropout=0,
                 bidirectional=False, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer='zeros', h2h_bias_initializer='zeros', input_size=0,
                 dtype='float32', **kwargs):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, 'rnn_' + activation, None, None, None, None,
                         False, dtype, **kwargs)

    def state_info(self, batch_size=0):
        return _state_info(self, batch_size, [self._hidden_size])


class LSTM(_RNNLayer):
    r"""Multi-layer long short-term memory RNN (gates i, f, g, o), optionally with a
    projection of the hidden state (LSTMP) and clipping of the cell state.

    Parameters as :class:`RNN` (without ``activation``), plus

    projection_size : int, default None
        Features of the projected state (``h2r_weight``, shape (projection_size,
        hidden_size)).
    h2r_weight_initializer : str or Initializer, default None
    state_clip_min, state_clip_max : float or None, default None
        Bounds of the cell state, clipped after each step; both or neither.
    state_clip_nan : bool, default False
        Whether NaN cell states become ``state_clip_min``.

    Inputs: ``data`` and optionally ``states`` ``[h0, c0]``, h0 (num_layers * D, N, P)
    with P the projection size (else hidden_size), c0 (num_layers * D, N, hidden_size).
    Outputs: ``out`` (T, N, D * P) and, when states were given, ``[hn, cn]``.
    """

    def __init__(self, hidden_size, num_layers=1, layout='TNC', dropout=0, bidirectional=False,
                 input_size=0, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer='zeros', h2h_bias_initializer='zeros',
                 projection_size=None, h2r_weight_initializer=None, state_clip_min=None,
                 state_clip_max=None, state_clip_nan=False, dtype='float32', **kwargs):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, 'lstm', projection_size, h2r_weight_initializer,
                         state_clip_min, state_clip_max, state_clip_nan, dtype, **kwargs)

    def state_info(self, batch_size=0):
        return _state_info(self, batch_size,
                           [self._projection_size or self._hidden_size, self._hidden_size])


class GRU(_RNNLayer):
    r"""Multi-layer gated recurrent unit RNN, cuDNN's variant (the reset gate applied
    after the recurrent product; gates r, z, n).

    Parameters as :class:`RNN` (without ``activation``).
    Inputs: ``data`` and optionally ``states``, one (num_layers * D, N, hidden_size) tensor.
    Outputs: ``out`` (T, N, D * hidden_size) and, when states were given, ``out_states``.
    """

    def __init__(self, hidden_size, num_layers=1, layout='TNC', dropout=0, bidirectional=False,
                 input_size=0, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer='zeros', h2h_bias_initializer='zeros', dtype='float32',
                 **kwargs):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, 'gru', None, None, None, None, False, dtype,
                         **kwargs)

    def state_info(self, batch_size=0):
        return _state_info(self, batch_size, [self._hidden_size])
