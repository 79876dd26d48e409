"""The LSTM cell with a projected recurrent state and ``dynamic_unroll`` (a cell stepped
by the ``foreach`` control-flow operator), after MXNet 1.9.1's
python/mxnet/gluon/contrib/rnn/rnn_cell.py: the same parameters, names and computation as
the fused ``LSTM(projection_size=...)`` layer, one step at a time."""
from ....base import _as_list
from ...rnn.rnn_cell import HybridRecurrentCell, VariationalDropoutCell, _format_sequence

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


def dynamic_unroll(cell, inputs, begin_state, drop_inputs=0, drop_outputs=0, layout='TNC',
                   valid_length=None):
    """Unrolls ``cell`` over the time axis of ``inputs`` with ``F.contrib.foreach``: one
    loop in the graph instead of one copy of the cell per step.

    Parameters
    ----------
    cell : RecurrentCell
        The cell to run.
    inputs : Symbol or NDArray
        (N, T, ...) for layout 'NTC', (T, N, ...) for 'TNC' (the faster one).
    begin_state : list of Symbol or NDArray
        The starting states.
    drop_inputs, drop_outputs : float, default 0
        Dropout rates of the inputs and outputs, one mask along the time axis.
    layout : str, default 'TNC'
    valid_length : Symbol or NDArray of shape (N,), optional
        Length of each sequence: later steps keep the states and give zero outputs.

    Returns
    -------
    outputs : Symbol or NDArray
        Laid out as ``layout``.
    states : list of Symbol or NDArray
        The states after each sequence's last valid step.
    """
    # merged inputs: the length is not needed
    inputs, axis, F, _ = _format_sequence(0, inputs, layout, True)
    axes = None
    if axis != 0:
        axes = list(range(len(layout)))
        axes[0], axes[axis] = axes[axis], axes[0]
        inputs = F.transpose(inputs, axes=axes)
    states = begin_state
    if drop_inputs:
        inputs = F.Dropout(inputs, p=drop_inputs, axes=(axis,))

    if valid_length is None:
        def loop_body(inputs, states):
            return cell(inputs, states)
    else:
        states = list(_as_list(states))
        # the step number rides along as the last state
        states.append(F.zeros((1)))

        def loop_body(inputs, states):
            cell_states = states[:-1]
            iter_no = states[-1]
            out, new_states = cell(inputs, cell_states)
            for i, state in enumerate(cell_states):
                new_states[i] = F.where(F.broadcast_greater(valid_length, iter_no),
                                        new_states[i], state)
            new_states.append(iter_no + 1)
            return out, new_states

    outputs, states = F.contrib.foreach(loop_body, inputs, states)
    if drop_outputs:
        outputs = F.Dropout(outputs, p=drop_outputs, axes=(axis,))
    if axes is not None:
        outputs = F.transpose(outputs, axes)
    if valid_length is not None:
        outputs = F.SequenceMask(outputs, sequence_length=valid_length,
                                 use_sequence_length=True, axis=axis)
        return outputs, states[:-1]
    return outputs, states
