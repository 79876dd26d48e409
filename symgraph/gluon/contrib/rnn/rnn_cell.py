"""The LSTM cell with a projected recurrent state, after MXNet 1.9.1's
python/mxnet/gluon/contrib/rnn/rnn_cell.py (same parameters, names and computation as the
fused ``LSTM(projection_size=...)`` layer, one step at a time)."""
from ...rnn.rnn_cell import HybridRecurrentCell, VariationalDropoutCell

__all__ = ['VariationalDropoutCell', 'LSTMPCell']


class LSTMPCell(HybridRecurrentCell):
    r"""Long short-term memory cell with a projected recurrent state (LSTMP,
    https://arxiv.org/abs/1402.1128): the gates read the projection
    :math:`r_{t-1} = W_{hr} h_{t-1}` instead of :math:`h_{t-1}`, and the cell outputs
    :math:`r_t`.

    Parameters
    ----------
    hidden_size : int
        Units of the cell state.
    projection_size : int
        Units of the output (the projected state).
    i2h_weight_initializer, h2h_weight_initializer, h2r_weight_initializer : str or
        Initializer
    i2h_bias_initializer, h2h_bias_initializer : str or Initializer, default 'zeros'
    input_size : int, default 0
        Input features; inferred from the first input when 0.
    prefix : str, default ``'lstmp_'`` (numbered: ``lstmp0_``)
    params : ParameterDict or None

    Inputs: ``data`` (N, C) and ``states`` ``[r, c]`` of shapes (N, projection_size) and
    (N, hidden_size). Outputs: ``out`` (N, projection_size) and ``[r, c]``.
    """

    def __init__(self, hidden_size, projection_size, i2h_weight_initializer=None,
                 h2h_weight_initializer=None, h2r_weight_initializer=None,
                 i2h_bias_initializer='zeros', h2h_bias_initializer='zeros', input_size=0,
                 prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._hidden_size = hidden_size
        self._input_size = input_size
        self._projection_size = projection_size
        self.i2h_weight = self.params.get('i2h_weight', shape=(4 * hidden_size, input_size),
                                          init=i2h_weight_initializer,
                                          allow_deferred_init=True)
        self.h2h_weight = self.params.get('h2h_weight',
                                          shape=(4 * hidden_size, projection_size),
                                          init=h2h_weight_initializer,
                                          allow_deferred_init=True)
        self.h2r_weight = self.params.get('h2r_weight', shape=(projection_size, hidden_size),
                                          init=h2r_weight_initializer,
                                          allow_deferred_init=True)
        self.i2h_bias = self.params.get('i2h_bias', shape=(4 * hidden_size,),
                                        init=i2h_bias_initializer, allow_deferred_init=True)
        self.h2h_bias = self.params.get('h2h_bias', shape=(4 * hidden_size,),
                                        init=h2h_bias_initializer, allow_deferred_init=True)

    def state_info(self, batch_size=0):
        return [{'shape': (batch_size, self._projection_size), '__layout__': 'NC'},
                {'shape': (batch_size, self._hidden_size), '__layout__': 'NC'}]

    def _alias(self):
        return 'lstmp'

    def __repr__(self):
        shape = self.i2h_weight.shape
        mapping = '{0} -> {1} -> {2}'.format(shape[1] if shape[1] else None, shape[0],
                                             self.h2r_weight.shape[0])
        return '%s(%s)' % (self.__class__.__name__, mapping)

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, h2r_weight, i2h_bias,
                       h2h_bias):
        prefix = 't%d_' % self._counter
        i2h = F.FullyConnected(data=inputs, weight=i2h_weight, bias=i2h_bias,
                               num_hidden=self._hidden_size * 4, name=prefix + 'i2h')
        h2h = F.FullyConnected(data=states[0], weight=h2h_weight, bias=h2h_bias,
                               num_hidden=self._hidden_size * 4, name=prefix + 'h2h')
        gates = i2h + h2h
        slice_gates = F.SliceChannel(gates, num_outputs=4, name=prefix + 'slice')
        in_gate = F.Activation(slice_gates[0], act_type='sigmoid', name=prefix + 'i')
        forget_gate = F.Activation(slice_gates[1], act_type='sigmoid', name=prefix + 'f')
        in_transform = F.Activation(slice_gates[2], act_type='tanh', name=prefix + 'c')
        out_gate = F.Activation(slice_gates[3], act_type='sigmoid', name=prefix + 'o')
        next_c = F.elemwise_add(forget_gate * states[1], in_gate * in_transform,
                                name=prefix + 'state')
        hidden = F.elemwise_mul(out_gate, F.Activation(next_c, act_type='tanh'),
                                name=prefix + 'hidden')
        next_r = F.FullyConnected(data=hidden, num_hidden=self._projection_size,
                                  weight=h2r_weight, no_bias=True, name=prefix + 'out')
        return next_r, [next_r, next_c]
