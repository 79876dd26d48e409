"""Helpers of the recurrent cells: the shapes of an unrolled sequence (one tensor or a list
of steps), its masking and reversal by valid length, and the cells' begin states.

After the module-level functions of MXNet 1.9.1's python/mxnet/gluon/rnn/rnn_cell.py;
``rnn_cell`` imports them under the same names, where MXNet's callers (its contrib cells,
GluonNLP) find them.
"""
from ... import ndarray, symbol
from ...base import _as_list

tensor_types = (symbol.Symbol, ndarray.NDArray)


def _indent(text, spaces):
    """``text`` with every line but the first indented by ``spaces`` (for nested reprs)."""
    return text.replace('\n', '\n' + ' ' * spaces)


def _namespace(x):
    """``mx.sym`` for a Symbol (or a list starting with one), ``mx.nd`` otherwise."""
    first = x if isinstance(x, tensor_types) else x[0]
    return symbol if isinstance(first, symbol.Symbol) else ndarray


def _cells_state_info(cells, batch_size):
    return sum([c.state_info(batch_size) for c in cells], [])


def _cells_begin_state(cells, **kwargs):
    return sum([c.begin_state(**kwargs) for c in cells], [])


def _state_kwargs(func, info):
    """The keywords for ``func(name=..., **info)``: MXNet's NDArray functions take and
    ignore the ``__layout__`` attribute, symgraph's refuse unknown keywords, so dunder
    attributes reach only the functions that make Symbols."""
    if getattr(func, '__module__', '').startswith('symgraph.symbol') or \
            getattr(symbol, getattr(func, '__name__', ''), None) is func:
        return info
    return {k: v for k, v in info.items() if not (k.startswith('__') and k.endswith('__'))}


def _get_begin_state(cell, F, begin_state, inputs, batch_size):
    """``begin_state`` as given, or the cell's zero states on the inputs' device."""
    if begin_state is not None:
        return begin_state
    if F is ndarray:
        ctx = inputs.context if isinstance(inputs, tensor_types) else inputs[0].context
        with ctx:
            return cell.begin_state(func=F.zeros, batch_size=batch_size)
    return cell.begin_state(func=F.zeros, batch_size=batch_size)


def _format_sequence(length, inputs, layout, merge, in_layout=None):
    """Brings ``inputs`` (one tensor, or a list of per-step tensors) to the form asked for:
    a list of (N, ...) steps when ``merge`` is False, one tensor laid out as ``layout`` when
    True, as given when None. Returns ``(inputs, time_axis, F, batch_size)``."""
    if inputs is None:
        raise ValueError('unroll(inputs=None) has been deprecated; create the input '
                         'variables outside unroll')
    axis = layout.find('T')
    batch_axis = layout.find('N')
    batch_size = 0
    in_axis = in_layout.find('T') if in_layout is not None else axis
    if isinstance(inputs, symbol.Symbol):
        F = symbol
        if merge is False:
            if len(inputs.list_outputs()) != 1:
                raise ValueError("unroll doesn't allow a grouped symbol as input; convert it "
                                 "to a list with list(inputs) or let unroll split it")
            inputs = list(symbol.split(inputs, axis=in_axis, num_outputs=length,
                                       squeeze_axis=1))
    elif isinstance(inputs, ndarray.NDArray):
        F = ndarray
        batch_size = inputs.shape[batch_axis]
        if merge is False:
            if length is not None and length != inputs.shape[in_axis]:
                raise ValueError('unroll: length=%d but the inputs have %d steps on axis %d '
                                 '(layout %r)' % (length, inputs.shape[in_axis], in_axis,
                                                  in_layout or layout))
            inputs = _as_list(ndarray.split(inputs, axis=in_axis,
                                            num_outputs=inputs.shape[in_axis],
                                            squeeze_axis=1))
    else:
        if length is not None and len(inputs) != length:
            raise ValueError('unroll: length=%d but %d input steps were given'
                             % (length, len(inputs)))
        F = _namespace(inputs)
        if F is ndarray:
            batch_size = inputs[0].shape[0]
        if merge is True:
            inputs = F.stack(*inputs, axis=axis)
            in_axis = axis
    if isinstance(inputs, tensor_types) and axis != in_axis:
        inputs = F.swapaxes(inputs, dim1=axis, dim2=in_axis)
    return inputs, axis, F, batch_size


def _mask_sequence_variable_length(F, data, length, valid_length, time_axis, merge):
    """Zeros the steps of ``data`` past each sequence's ``valid_length``."""
    if not isinstance(data, tensor_types):
        data = F.stack(*data, axis=time_axis)
    outputs = F.SequenceMask(data, sequence_length=valid_length, use_sequence_length=True,
                             axis=time_axis)
    if not merge:
        outputs = _as_list(F.split(outputs, num_outputs=length, axis=time_axis,
                                   squeeze_axis=True))
    return outputs


def _reverse_sequences(sequences, unroll_step, valid_length=None):
    """A list of steps reversed in time; with ``valid_length``, each sequence's valid
    part reversed in place (padding stays at the end)."""
    F = _namespace(sequences)
    if valid_length is None:
        return list(reversed(sequences))
    reversed_sequences = F.SequenceReverse(F.stack(*sequences, axis=0),
                                           sequence_length=valid_length,
                                           use_sequence_length=True)
    if unroll_step > 1 or F is symbol:
        # a list of NDArrays, or a Symbol of unroll_step outputs: either way one per step
        return list(F.split(reversed_sequences, axis=0, num_outputs=unroll_step,
                            squeeze_axis=True))
    return [reversed_sequences[0]]
