"""Gluon recurrent cells: one time step at a time, or unrolled over a sequence.

After MXNet 1.9.1's python/mxnet/gluon/rnn/rnn_cell.py (and ``VariationalDropoutCell`` of
gluon/contrib/rnn/rnn_cell.py): the same classes, parameter names (``lstm0_i2h_weight``),
node names (``t0_i2h``, ``t1_out``) and states. A cell called on NDArrays computes at
once; on Symbols it builds a graph; ``unroll`` steps it over a whole sequence, with
``valid_length`` masking padded steps and returning each sequence's last valid state.

``unroll``'s layout says where time lies in a single input tensor (``'NTC'``: batch,
time, channels; ``'TNC'``: time first); a list of per-step tensors of shape (N, C) is
taken as it is.
"""
from ... import ndarray, symbol
from ...base import numeric_types, string_types
from ..block import Block, HybridBlock
from ..nn import LeakyReLU
# the sequence helpers live in _sequence; MXNet's callers import them from here
from ._sequence import (tensor_types, _indent, _cells_state_info,  # noqa: F401
                        _cells_begin_state, _state_kwargs, _get_begin_state, _format_sequence,
                        _mask_sequence_variable_length, _reverse_sequences)

__all__ = ['RecurrentCell', 'HybridRecurrentCell', 'RNNCell', 'LSTMCell', 'GRUCell',
           'SequentialRNNCell', 'HybridSequentialRNNCell', 'DropoutCell', 'ModifierCell',
           'ZoneoutCell', 'ResidualCell', 'BidirectionalCell', 'VariationalDropoutCell']


class RecurrentCell(Block):
    """Abstract base class for RNN cells.

    Parameters
    ----------
    prefix : str, optional
        Prefix for names of ``Block``s (and of weights when ``params`` is None).
    params : ParameterDict or None
        Parameters to share with another cell; a new container when None.
    """

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._modified = False
        self.reset()

    def reset(self):
        """Reset before re-using the cell for another graph."""
        self._init_counter = -1
        self._counter = -1
        for cell in self._children.values():
            cell.reset()

    def state_info(self, batch_size=0):
        """Shape and layout information of the states."""
        raise NotImplementedError()

    def _check_unmodified(self):
        if self._modified:
            raise RuntimeError('after applying modifier cells (e.g. ZoneoutCell) the base '
                               'cell cannot be called directly; call the modifier cell instead')

    def begin_state(self, batch_size=0, func=ndarray.zeros, **kwargs):
        """Initial states for this cell.

        Parameters
        ----------
        batch_size : int, default 0
            Size of the batch ('N' in layout); needed for NDArrays.
        func : callable, default ``mx.nd.zeros``
            Makes each state: ``mx.sym.zeros``, ``mx.sym.var`` (to feed states as inputs),
            ``mx.nd.ones``, ...
        **kwargs
            More keywords for ``func`` (``dtype``, ``ctx``, ``mean``, ...).

        Returns
        -------
        list of Symbol or NDArray
            Starting states for the first step, named ``<prefix>begin_state_<i>``.
        """
        self._check_unmodified()
        states = []
        for info in self.state_info(batch_size):
            self._init_counter += 1
            if info is not None:
                info.update(kwargs)
            else:
                info = kwargs
            states.append(func(name='%sbegin_state_%d' % (self._prefix, self._init_counter),
                               **_state_kwargs(func, info)))
        return states

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None,
               valid_length=None):
        """Unrolls the cell across ``length`` time steps.

        Parameters
        ----------
        length : int
            Number of steps.
        inputs : Symbol, NDArray or list of them
            One tensor of shape (N, T, ...) for layout 'NTC' or (T, N, ...) for 'TNC', or
            a list of ``length`` tensors of shape (N, ...).
        begin_state : list of Symbol or NDArray, optional
            Starting states; ``begin_state()`` when None.
        layout : str, default 'NTC'
            Layout of ``inputs`` (and of merged outputs).
        merge_outputs : bool, optional
            True: one tensor laid out as ``layout``; False: a list of per-step outputs;
            None: whichever is cheaper.
        valid_length : Symbol or NDArray of shape (N,), optional
            Length of each sequence; outputs past it are zeros and the states returned are
            those of its last valid step.

        Returns
        -------
        outputs : Symbol, NDArray or list of them
        states : list of Symbol or NDArray
        """
        self.reset()
        inputs, axis, F, batch_size = _format_sequence(length, inputs, layout, False)
        begin_state = _get_begin_state(self, F, begin_state, inputs, batch_size)

        states = begin_state
        outputs = []
        all_states = []
        for i in range(length):
            output, states = self(inputs[i], states)
            outputs.append(output)
            if valid_length is not None:
                all_states.append(states)
        if valid_length is not None:
            states = [F.SequenceLast(F.stack(*ele_list, axis=0), sequence_length=valid_length,
                                     use_sequence_length=True, axis=0)
                      for ele_list in zip(*all_states)]
            outputs = _mask_sequence_variable_length(F, outputs, length, valid_length, axis,
                                                     True)
        outputs, _, _, _ = _format_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def _get_activation(self, F, inputs, activation, **kwargs):
        """Applies ``activation``: a name, a ``LeakyReLU`` block or any callable."""
        func = {'tanh': F.tanh, 'relu': F.relu, 'sigmoid': F.sigmoid,
                'softsign': F.softsign}.get(activation) \
            if isinstance(activation, string_types) else None
        if func:
            return func(inputs, **kwargs)
        if isinstance(activation, string_types):
            return F.Activation(inputs, act_type=activation, **kwargs)
        if isinstance(activation, LeakyReLU):
            return F.LeakyReLU(inputs, act_type='leaky', slope=activation._alpha, **kwargs)
        return activation(inputs, **kwargs)

    def forward(self, inputs, states):
        """Runs the cell for one time step: ``(output, new_states)``."""
        self._counter += 1
        return super().forward(inputs, states)


class HybridRecurrentCell(RecurrentCell, HybridBlock):
    """A recurrent cell that can be hybridized."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise NotImplementedError


class _GatedCell(HybridRecurrentCell):
    """The parameters every basic cell has: ``i2h``/``h2h`` weights and biases, ``gates``
    blocks of ``hidden_size`` rows each."""

    _gates = 1

    def __init__(self, hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                 i2h_bias_initializer, h2h_bias_initializer, input_size, prefix, params):
        super().__init__(prefix=prefix, params=params)
        self._hidden_size = hidden_size
        self._input_size = input_size
        rows = self._gates * hidden_size
        self.i2h_weight = self.params.get('i2h_weight', shape=(rows, input_size),
                                          init=i2h_weight_initializer,
                                          allow_deferred_init=True)
        self.h2h_weight = self.params.get('h2h_weight', shape=(rows, hidden_size),
                                          init=h2h_weight_initializer,
                                          allow_deferred_init=True)
        self.i2h_bias = self.params.get('i2h_bias', shape=(rows,),
                                        init=i2h_bias_initializer, allow_deferred_init=True)
        self.h2h_bias = self.params.get('h2h_bias', shape=(rows,),
                                        init=h2h_bias_initializer, allow_deferred_init=True)

    def state_info(self, batch_size=0):
        return [{'shape': (batch_size, self._hidden_size), '__layout__': 'NC'}]

    def __repr__(self):
        shape = self.i2h_weight.shape
        mapping = '{0} -> {1}'.format(shape[1] if shape[1] else None, shape[0])
        extra = ', %s' % self._activation if isinstance(self, RNNCell) else ''
        return '%s(%s%s)' % (self.__class__.__name__, mapping, extra)

    def _linear(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix = 't%d_' % self._counter
        rows = self._gates * self._hidden_size
        i2h = F.FullyConnected(data=inputs, weight=i2h_weight, bias=i2h_bias,
                               num_hidden=rows, name=prefix + 'i2h')
        h2h = F.FullyConnected(data=states[0], weight=h2h_weight, bias=h2h_bias,
                               num_hidden=rows, name=prefix + 'h2h')
        return prefix, i2h, h2h


class RNNCell(_GatedCell):
    r"""Elman RNN cell: :math:`h_t = act(W_{ih} x_t + b_{ih} + W_{hh} h_{t-1} + b_{hh})`.

    Parameters
    ----------
    hidden_size : int
        Number of units of the output.
    activation : str or callable, default 'tanh'
    i2h_weight_initializer, h2h_weight_initializer : str or Initializer
    i2h_bias_initializer, h2h_bias_initializer : str or Initializer, default 'zeros'
    input_size : int, default 0
        Input features; inferred from the first input when 0.
    prefix : str, default ``'rnn_'`` (numbered: ``rnn0_``)
    params : ParameterDict or None

    Inputs: ``data`` (N, C) and ``states``, a list of one (N, hidden_size) tensor.
    Outputs: ``out`` (N, hidden_size) and ``next_states`` (``[out]``).
    """

    def __init__(self, hidden_size, activation='tanh', i2h_weight_initializer=None,
                 h2h_weight_initializer=None, i2h_bias_initializer='zeros',
                 h2h_bias_initializer='zeros', input_size=0, prefix=None, params=None):
        super().__init__(hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, input_size, prefix,
                         params)
        self._activation = activation

    def _alias(self):
        return 'rnn'

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix, i2h, h2h = self._linear(F, inputs, states, i2h_weight, h2h_weight,
                                        i2h_bias, h2h_bias)
        i2h_plus_h2h = F.elemwise_add(i2h, h2h, name=prefix + 'plus0')
        output = self._get_activation(F, i2h_plus_h2h, self._activation, name=prefix + 'out')
        return output, [output]


class LSTMCell(_GatedCell):
    r"""Long short-term memory cell (gates i, f, g, o in that order of the weights' rows).

    .. math::
        c_t = \sigma(f) c_{t-1} + \sigma(i) \tanh(g), \quad h_t = \sigma(o) \tanh(c_t)

    Parameters as :class:`RNNCell` (prefix ``'lstm_'``), plus ``activation`` (default
    'tanh') and ``recurrent_activation`` (default 'sigmoid', for the gates).

    Inputs: ``data`` (N, C) and ``states`` ``[h, c]``, each (N, hidden_size).
    Outputs: ``out`` (N, hidden_size) and ``next_states`` ``[h, c]``.
    """

    _gates = 4

    def __init__(self, hidden_size, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer='zeros', h2h_bias_initializer='zeros', input_size=0,
                 prefix=None, params=None, activation='tanh', recurrent_activation='sigmoid'):
        super().__init__(hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, input_size, prefix,
                         params)
        self._activation = activation
        self._recurrent_activation = recurrent_activation

    def state_info(self, batch_size=0):
        return [{'shape': (batch_size, self._hidden_size), '__layout__': 'NC'},
                {'shape': (batch_size, self._hidden_size), '__layout__': 'NC'}]

    def _alias(self):
        return 'lstm'

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix, i2h, h2h = self._linear(F, inputs, states, i2h_weight, h2h_weight,
                                        i2h_bias, h2h_bias)
        gates = F.elemwise_add(i2h, h2h, name=prefix + 'plus0')
        slice_gates = F.SliceChannel(gates, num_outputs=4, name=prefix + 'slice')
        act, ract = self._activation, self._recurrent_activation
        in_gate = self._get_activation(F, slice_gates[0], ract, name=prefix + 'i')
        forget_gate = self._get_activation(F, slice_gates[1], ract, name=prefix + 'f')
        in_transform = self._get_activation(F, slice_gates[2], act, name=prefix + 'c')
        out_gate = self._get_activation(F, slice_gates[3], ract, name=prefix + 'o')
        next_c = F.elemwise_add(F.elemwise_mul(forget_gate, states[1], name=prefix + 'mul0'),
                                F.elemwise_mul(in_gate, in_transform, name=prefix + 'mul1'),
                                name=prefix + 'state')
        next_h = F.elemwise_mul(out_gate, F.Activation(next_c, act_type=act,
                                                       name=prefix + 'activation0'),
                                name=prefix + 'out')
        return next_h, [next_h, next_c]


class GRUCell(_GatedCell):
    r"""Gated recurrent unit cell, cuDNN's variant (the reset gate applied after the
    recurrent product; gates r, z, n in that order of the weights' rows).

    .. math::
        n_t = \tanh(W_{in} x_t + b_{in} + r_t (W_{hn} h_{t-1} + b_{hn})), \quad
        h_t = (1 - z_t) n_t + z_t h_{t-1}

    Parameters as :class:`RNNCell` (prefix ``'gru_'``).
    """

    _gates = 3

    def __init__(self, hidden_size, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer='zeros', h2h_bias_initializer='zeros', input_size=0,
                 prefix=None, params=None):
        super().__init__(hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, input_size, prefix,
                         params)

    def _alias(self):
        return 'gru'

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix, i2h, h2h = self._linear(F, inputs, states, i2h_weight, h2h_weight,
                                        i2h_bias, h2h_bias)
        prev_h = states[0]
        i2h_r, i2h_z, i2h = F.SliceChannel(i2h, num_outputs=3, name=prefix + 'i2h_slice')
        h2h_r, h2h_z, h2h = F.SliceChannel(h2h, num_outputs=3, name=prefix + 'h2h_slice')
        reset_gate = F.Activation(F.elemwise_add(i2h_r, h2h_r, name=prefix + 'plus0'),
                                  act_type='sigmoid', name=prefix + 'r_act')
        update_gate = F.Activation(F.elemwise_add(i2h_z, h2h_z, name=prefix + 'plus1'),
                                   act_type='sigmoid', name=prefix + 'z_act')
        next_h_tmp = F.Activation(
            F.elemwise_add(i2h, F.elemwise_mul(reset_gate, h2h, name=prefix + 'mul0'),
                           name=prefix + 'plus2'),
            act_type='tanh', name=prefix + 'h_act')
        # symgraph's mx.nd.ones_like takes no name (MXNet's ignores it)
        ones = (F.ones_like(update_gate, name=prefix + 'ones_like0')
                if isinstance(update_gate, symbol.Symbol) else F.ones_like(update_gate))
        next_h = F.elemwise_add(
            F.elemwise_mul(F.elemwise_sub(ones, update_gate, name=prefix + 'minus0'),
                           next_h_tmp, name=prefix + 'mul1'),
            F.elemwise_mul(update_gate, prev_h, name=prefix + 'mul20'),
            name=prefix + 'out')
        return next_h, [next_h]


class _StackMixin:
    """What both sequential cells share: children in order, states concatenated."""

    def __repr__(self):
        return '{name}(\n{modstr}\n)'.format(
            name=self.__class__.__name__,
            modstr='\n'.join('({i}): {m}'.format(i=i, m=_indent(repr(m), 2))
                             for i, m in self._children.items()))

    def add(self, cell):
        """Appends a cell to the stack."""
        self.register_child(cell)

    def state_info(self, batch_size=0):
        return _cells_state_info(self._children.values(), batch_size)

    def begin_state(self, **kwargs):
        self._check_unmodified()
        return _cells_begin_state(self._children.values(), **kwargs)

    def __call__(self, inputs, states):
        self._counter += 1
        next_states = []
        p = 0
        for cell in self._children.values():
            if isinstance(cell, BidirectionalCell):
                raise NotImplementedError('a stack holding a BidirectionalCell cannot be '
                                          'stepped; use unroll')
            n = len(cell.state_info())
            state = states[p:p + n]
            p += n
            inputs, state = cell(inputs, state)
            next_states.append(state)
        return inputs, sum(next_states, [])

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None,
               valid_length=None):
        self.reset()
        inputs, _, F, batch_size = _format_sequence(length, inputs, layout, None)
        num_cells = len(self._children)
        begin_state = _get_begin_state(self, F, begin_state, inputs, batch_size)
        p = 0
        next_states = []
        for i, cell in enumerate(self._children.values()):
            n = len(cell.state_info())
            states = begin_state[p:p + n]
            p += n
            inputs, states = cell.unroll(
                length, inputs=inputs, begin_state=states, layout=layout,
                merge_outputs=None if i < num_cells - 1 else merge_outputs,
                valid_length=valid_length)
            next_states.extend(states)
        return inputs, next_states

    def __getitem__(self, i):
        return self._children[str(i)]

    def __len__(self):
        return len(self._children)


class SequentialRNNCell(_StackMixin, RecurrentCell):
    """Stacks several RNN cells, the output of each the input of the next."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def hybrid_forward(self, *args, **kwargs):
        raise NotImplementedError


class HybridSequentialRNNCell(_StackMixin, HybridRecurrentCell):
    """Stacks several hybridizable RNN cells."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def hybrid_forward(self, F, inputs, states):
        return self.__call__(inputs, states)


class DropoutCell(HybridRecurrentCell):
    """Applies dropout to its input and passes the states through.

    Parameters
    ----------
    rate : float
        Fraction of the elements to drop.
    axes : tuple of int, default ()
        Axes along which one mask is shared; plain dropout when empty.
    """

    def __init__(self, rate, axes=(), prefix=None, params=None):
        super().__init__(prefix, params)
        if not isinstance(rate, numeric_types):
            raise TypeError('DropoutCell: rate must be a number, got %r' % (rate,))
        self._rate = rate
        self._axes = axes

    def __repr__(self):
        return '%s(rate=%s, axes=%s)' % (self.__class__.__name__, self._rate, self._axes)

    def state_info(self, batch_size=0):
        return []

    def _alias(self):
        return 'dropout'

    def hybrid_forward(self, F, inputs, states):
        if self._rate > 0:
            inputs = F.Dropout(data=inputs, p=self._rate, axes=self._axes,
                               name='t%d_fwd' % self._counter)
        return inputs, states

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None,
               valid_length=None):
        self.reset()
        inputs, _, F, _ = _format_sequence(length, inputs, layout, merge_outputs)
        if isinstance(inputs, tensor_types):
            return self.hybrid_forward(F, inputs, begin_state if begin_state else [])
        return super().unroll(length, inputs, begin_state=begin_state, layout=layout,
                              merge_outputs=merge_outputs, valid_length=None)


class ModifierCell(HybridRecurrentCell):
    """Base class of the cells that wrap a base cell (Zoneout, residual, ...). Once
    wrapped, the base cell is stepped only through its modifier."""

    def __init__(self, base_cell):
        if base_cell._modified:
            raise ValueError('cell %s is already modified; one cell cannot be modified twice'
                             % base_cell.name)
        base_cell._modified = True
        super().__init__(prefix=base_cell.prefix + self._alias(), params=None)
        self.base_cell = base_cell

    @property
    def params(self):
        return self.base_cell.params

    def state_info(self, batch_size=0):
        return self.base_cell.state_info(batch_size)

    def begin_state(self, func=symbol.zeros, **kwargs):
        self._check_unmodified()
        self.base_cell._modified = False
        try:
            begin = self.base_cell.begin_state(func=func, **kwargs)
        finally:
            self.base_cell._modified = True
        return begin

    def hybrid_forward(self, F, inputs, states):
        raise NotImplementedError

    def __repr__(self):
        return '%s(%s)' % (self.__class__.__name__, self.base_cell)


def _is_bidirectional_stack(cell):
    return isinstance(cell, (SequentialRNNCell, HybridSequentialRNNCell)) and any(
        isinstance(c, BidirectionalCell) for c in cell._children.values())


class ZoneoutCell(ModifierCell):
    """Zoneout (Krueger et al. 2016): each output and state keeps its previous value with
    probability ``zoneout_outputs`` / ``zoneout_states`` in training."""

    def __init__(self, base_cell, zoneout_outputs=0., zoneout_states=0.):
        if isinstance(base_cell, BidirectionalCell) or _is_bidirectional_stack(base_cell):
            raise TypeError("a bidirectional cell doesn't support zoneout since it cannot be "
                            "stepped; wrap the cells underneath in ZoneoutCell instead")
        super().__init__(base_cell)
        self.zoneout_outputs = zoneout_outputs
        self.zoneout_states = zoneout_states
        self._prev_output = None

    def __repr__(self):
        return '%s(p_out=%s, p_state=%s, %s)' % (self.__class__.__name__, self.zoneout_outputs,
                                                 self.zoneout_states, self.base_cell)

    def _alias(self):
        return 'zoneout'

    def reset(self):
        super().reset()
        self._prev_output = None

    def hybrid_forward(self, F, inputs, states):
        cell, p_outputs, p_states = self.base_cell, self.zoneout_outputs, self.zoneout_states
        next_output, next_states = cell(inputs, states)

        def mask(p, like):
            return F.Dropout(F.ones_like(like), p=p)

        prev_output = self._prev_output
        if prev_output is None:
            prev_output = F.zeros_like(next_output)
        output = (F.where(mask(p_outputs, next_output), next_output, prev_output)
                  if p_outputs != 0. else next_output)
        states = ([F.where(mask(p_states, new_s), new_s, old_s)
                   for new_s, old_s in zip(next_states, states)]
                  if p_states != 0. else next_states)
        self._prev_output = output
        return output, states


class ResidualCell(ModifierCell):
    """Adds the input to the base cell's output (Wu et al. 2016)."""

    def __init__(self, base_cell):
        # no _alias of its own: the prefix is the base cell's + 'residualcell', as MXNet's
        super().__init__(base_cell)

    def hybrid_forward(self, F, inputs, states):
        output, states = self.base_cell(inputs, states)
        output = F.elemwise_add(output, inputs, name='t%d_fwd' % self._counter)
        return output, states

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None,
               valid_length=None):
        self.reset()
        self.base_cell._modified = False
        try:
            outputs, states = self.base_cell.unroll(
                length, inputs=inputs, begin_state=begin_state, layout=layout,
                merge_outputs=merge_outputs, valid_length=valid_length)
        finally:
            self.base_cell._modified = True
        if merge_outputs is None:
            merge_outputs = isinstance(outputs, tensor_types)
        inputs, axis, F, _ = _format_sequence(length, inputs, layout, merge_outputs)
        if valid_length is not None:
            # padded steps of the input are zeros, as the outputs there are
            inputs = _mask_sequence_variable_length(F, inputs, length, valid_length, axis,
                                                    merge_outputs)
        if merge_outputs:
            outputs = F.elemwise_add(outputs, inputs)
        else:
            outputs = [F.elemwise_add(i, j) for i, j in zip(outputs, inputs)]
        return outputs, states


class BidirectionalCell(HybridRecurrentCell):
    """Runs ``l_cell`` forwards and ``r_cell`` backwards in time and concatenates their
    outputs on the channel axis; it can only be unrolled.

    Parameters
    ----------
    l_cell : RecurrentCell
        Cell for the forward direction.
    r_cell : RecurrentCell
        Cell for the backward direction.
    output_prefix : str, default 'bi_'
    """

    def __init__(self, l_cell, r_cell, output_prefix='bi_'):
        super().__init__(prefix='', params=None)
        self.register_child(l_cell, 'l_cell')
        self.register_child(r_cell, 'r_cell')
        self._output_prefix = output_prefix

    def __call__(self, inputs, states):
        raise NotImplementedError('Bidirectional cannot be stepped. Please use unroll')

    def __repr__(self):
        return '%s(forward=%s, backward=%s)' % (self.__class__.__name__,
                                                self._children['l_cell'],
                                                self._children['r_cell'])

    def state_info(self, batch_size=0):
        return _cells_state_info(self._children.values(), batch_size)

    def begin_state(self, **kwargs):
        self._check_unmodified()
        return _cells_begin_state(self._children.values(), **kwargs)

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None,
               valid_length=None):
        self.reset()
        inputs, axis, F, batch_size = _format_sequence(length, inputs, layout, False)
        reversed_inputs = list(_reverse_sequences(inputs, length, valid_length))
        states = _get_begin_state(self, F, begin_state, inputs, batch_size)

        l_cell, r_cell = self._children.values()
        n_l = len(l_cell.state_info(batch_size))
        l_outputs, l_states = l_cell.unroll(length, inputs=inputs, begin_state=states[:n_l],
                                            layout=layout, merge_outputs=merge_outputs,
                                            valid_length=valid_length)
        r_outputs, r_states = r_cell.unroll(length, inputs=reversed_inputs,
                                            begin_state=states[n_l:], layout=layout,
                                            merge_outputs=False, valid_length=valid_length)
        reversed_r_outputs = _reverse_sequences(r_outputs, length, valid_length)

        if merge_outputs is None:
            merge_outputs = isinstance(l_outputs, tensor_types)
            l_outputs, _, _, _ = _format_sequence(None, l_outputs, layout, merge_outputs)
            reversed_r_outputs, _, _, _ = _format_sequence(None, reversed_r_outputs, layout,
                                                           merge_outputs)
        if merge_outputs:
            reversed_r_outputs = F.stack(*reversed_r_outputs, axis=axis)
            outputs = F.concat(l_outputs, reversed_r_outputs, dim=2,
                               name='%sout' % self._output_prefix)
        else:
            outputs = [F.concat(l_o, r_o, dim=1, name='%st%d' % (self._output_prefix, i))
                       for i, (l_o, r_o) in enumerate(zip(l_outputs, reversed_r_outputs))]
        if valid_length is not None:
            outputs = _mask_sequence_variable_length(F, outputs, length, valid_length, axis,
                                                     merge_outputs)
        return outputs, l_states + r_states


class VariationalDropoutCell(ModifierCell):
    """Variational dropout (Gal and Ghahramani 2016, https://arxiv.org/abs/1512.05287): one
    dropout mask for all time steps, separately for the inputs, the first state and the
    outputs. The masks are drawn at the first step and kept until ``reset()`` (which
    ``unroll`` calls); call it yourself between sequences when stepping by hand.

    MXNet 1.9.1 has it as ``mx.gluon.contrib.rnn.VariationalDropoutCell``.

    Parameters
    ----------
    base_cell : RecurrentCell
    drop_inputs, drop_states, drop_outputs : float, default 0.
        Dropout rates; 0 applies none.
    """

    def __init__(self, base_cell, drop_inputs=0., drop_states=0., drop_outputs=0.):
        if drop_states and (isinstance(base_cell, BidirectionalCell)
                            or _is_bidirectional_stack(base_cell)):
            raise TypeError("a bidirectional cell doesn't support variational state dropout; "
                            "wrap the cells underneath in VariationalDropoutCell instead")
        super().__init__(base_cell)
        self.drop_inputs = drop_inputs
        self.drop_states = drop_states
        self.drop_outputs = drop_outputs
        self.drop_inputs_mask = None
        self.drop_states_mask = None
        self.drop_outputs_mask = None

    def _alias(self):
        return 'vardrop'

    def reset(self):
        super().reset()
        self.drop_inputs_mask = None
        self.drop_states_mask = None
        self.drop_outputs_mask = None

    def _initialize_input_masks(self, F, inputs, states):
        if self.drop_states and self.drop_states_mask is None:
            self.drop_states_mask = F.Dropout(F.ones_like(states[0]), p=self.drop_states)
        if self.drop_inputs and self.drop_inputs_mask is None:
            self.drop_inputs_mask = F.Dropout(F.ones_like(inputs), p=self.drop_inputs)

    def _initialize_output_mask(self, F, output):
        if self.drop_outputs and self.drop_outputs_mask is None:
            self.drop_outputs_mask = F.Dropout(F.ones_like(output), p=self.drop_outputs)

    def hybrid_forward(self, F, inputs, states):
        self._initialize_input_masks(F, inputs, states)
        if self.drop_states:
            states = list(states)
            # only h, always the first state, is dropped
            states[0] = states[0] * self.drop_states_mask
        if self.drop_inputs:
            inputs = inputs * self.drop_inputs_mask
        next_output, next_states = self.base_cell(inputs, states)
        self._initialize_output_mask(F, next_output)
        if self.drop_outputs:
            next_output = next_output * self.drop_outputs_mask
        return next_output, next_states

    def __repr__(self):
        return '%s(p_out = %s, p_state = %s)' % (self.__class__.__name__, self.drop_outputs,
                                                 self.drop_states)

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None,
               valid_length=None):
        # without state dropout the input and output masks apply to the whole sequence
        # at once (a mask shared along the time axis)
        if self.drop_states:
            return super().unroll(length, inputs, begin_state, layout, merge_outputs,
                                  valid_length=valid_length)
        self.reset()
        inputs, axis, F, batch_size = _format_sequence(length, inputs, layout, True)
        states = _get_begin_state(self, F, begin_state, inputs, batch_size)
        if self.drop_inputs:
            inputs = F.Dropout(inputs, p=self.drop_inputs, axes=(axis,))
        outputs, states = self.base_cell.unroll(length, inputs, states, layout,
                                                merge_outputs=True, valid_length=valid_length)
        if self.drop_outputs:
            outputs = F.Dropout(outputs, p=self.drop_outputs, axes=(axis,))
        if merge_outputs is None:
            merge_outputs = isinstance(outputs, tensor_types)
        outputs, _, _, _ = _format_sequence(length, outputs, layout, merge_outputs)
        if valid_length is not None:
            outputs = _mask_sequence_variable_length(F, outputs, length, valid_length, axis,
                                                     merge_outputs)
        return outputs, states
