"""Cell configurations shared by tests/golden/make_rnn_cells.py (run on MXNet) and the tests
(run on symgraph): ``build(mx) -> (cell, layout)``."""
LENGTH = 3
DATA_SHAPE = {'NTC': (2, LENGTH, 5), 'TNC': (LENGTH, 2, 5)}


def flatten(states):
    """The states of nested cells as one list."""
    if isinstance(states, (list, tuple)):
        return [s for x in states for s in flatten(x)]
    return [states]


def _seq(mx):
    c = mx.rnn.SequentialRNNCell()
    c.add(mx.rnn.LSTMCell(4, prefix='l0_'))
    c.add(mx.rnn.DropoutCell(0.3, prefix='d0_'))
    c.add(mx.rnn.ResidualCell(mx.rnn.LSTMCell(4, prefix='l1_')))
    return c, 'NTC'


CELLS = {
    'rnn_tanh': lambda mx: (mx.rnn.RNNCell(4, prefix='rnn_'), 'NTC'),
    'rnn_relu': lambda mx: (mx.rnn.RNNCell(3, activation='relu', prefix='r_'), 'TNC'),
    'lstm': lambda mx: (mx.rnn.LSTMCell(4, prefix='lstm_', forget_bias=2.0), 'NTC'),
    'gru': lambda mx: (mx.rnn.GRUCell(4, prefix='gru_'), 'TNC'),
    'fused_lstm': lambda mx: (mx.rnn.FusedRNNCell(4, num_layers=2, prefix='lstm_',
                                                  get_next_state=True), 'TNC'),
    'fused_bigru': lambda mx: (mx.rnn.FusedRNNCell(3, num_layers=2, mode='gru',
                                                   bidirectional=True, prefix='gru_',
                                                   get_next_state=True), 'NTC'),
    'fused_rnn': lambda mx: (mx.rnn.FusedRNNCell(3, mode='rnn_tanh', prefix='f_',
                                                 get_next_state=True), 'TNC'),
    'bidirectional': lambda mx: (mx.rnn.BidirectionalCell(
        mx.rnn.LSTMCell(3, prefix='fw_'), mx.rnn.GRUCell(3, prefix='bw_')), 'NTC'),
    'sequential': _seq,
    'zoneout': lambda mx: (mx.rnn.ZoneoutCell(mx.rnn.GRUCell(4, prefix='z_'), 0.2, 0.3),
                           'TNC'),
}
