"""The Updater: an optimizer with its per-index states, called as ``updater(index, grad,
weight)`` by the kvstore and by Module (MXNet's ``mx.optimizer.Updater``).

``get_states`` / ``set_states`` pickle the states in MXNet 1.9.1's format (see
:mod:`symgraph.optimizer.pickling`): states saved by MXNet load here and the other way round.
"""
from ..ndarray import NDArray
from . import pickling
from .optimizer import Optimizer
from ..base import ArgumentError, ArgumentTypeError

__all__ = ['Updater', 'get_updater']


class Updater(object):
    """Updater for kvstore: creates the optimizer's state of an index on first use and
    updates weights from gradients.

    Parameters
    ----------
    optimizer : Optimizer
        The optimizer.
    """

    def __init__(self, optimizer):
        if not isinstance(optimizer, Optimizer):
            raise ArgumentTypeError('Updater needs an Optimizer, got %s' % type(optimizer).__name__)
        self.optimizer = optimizer
        self.states = {}
        self.states_synced = {}
        self.aggregate_updates = optimizer.aggregate_num > 0

    def __call__(self, index, grad, weight):
        """Update ``weight`` from ``grad``: one index (int or str) and one NDArray each, or
        lists of them (updated in groups of ``aggregate_num`` per dtype, as MXNet)."""
        if not isinstance(index, (list, tuple)):
            indices = [index]
            grads = [grad]
            weights = [weight]
        else:
            indices = list(index)
            grads = list(grad)
            weights = list(weight)
        if not len(indices) == len(grads) == len(weights):
            raise ArgumentError('Updater: %d indices, %d gradients and %d weights'
                                % (len(indices), len(grads), len(weights)))
        for what, arrays in (('gradient', grads), ('weight', weights)):
            for a in arrays:
                if not isinstance(a, NDArray):
                    raise ArgumentTypeError('Updater: each %s must be an NDArray, got %s'
                                            % (what, type(a).__name__))
        if weights:
            self.optimizer._set_current_context(weights[0].context.device_id)
        for i, idx in enumerate(indices):
            # a kvstore's string keys may arrive as bytes
            if isinstance(idx, bytes):
                indices[i] = idx.decode('utf-8')
                idx = indices[i]
            if idx not in self.states:
                self.states[idx] = self.optimizer.create_state_multi_precision(idx, weights[i])
                self.states_synced[idx] = True
            elif not self.states_synced[idx]:
                self.states[idx] = self.sync_state_context(self.states[idx], weights[i].context)
                self.states_synced[idx] = True
        if self.aggregate_updates:
            # group by dtype, then in chunks of aggregate_num
            type_map = {}
            for i, w, g in zip(indices, weights, grads):
                type_map.setdefault(w.dtype, []).append((i, w, g))
            step = self.optimizer.aggregate_num
            for group in type_map.values():
                g_indices, g_weights, g_grads = zip(*group)
                for start in range(0, len(g_indices), step):
                    states = [self.states[k] for k in g_indices[start:start + step]]
                    self.optimizer.update_multi_precision(
                        g_indices[start:start + step], g_weights[start:start + step],
                        g_grads[start:start + step], states)
        else:
            for i, w, g in zip(indices, weights, grads):
                self.optimizer.update_multi_precision(i, w, g, self.states[i])

    def sync_state_context(self, state, context):
        """``state`` (an NDArray, or tuples/lists of them) on ``context``."""
        if isinstance(state, NDArray):
            return state.as_in_context(context)
        if isinstance(state, (tuple, list)):
            synced_state = (self.sync_state_context(i, context) for i in state)
            if isinstance(state, tuple):
                return tuple(synced_state)
            return list(synced_state)
        return state

    def set_states(self, states):
        """Set the states from bytes of :meth:`get_states` (symgraph's or MXNet's); a pickle
        of ``(states, optimizer)`` replaces the optimizer too."""
        states = pickling.loads(states)
        if isinstance(states, tuple) and len(states) == 2:
            self.states, self.optimizer = states
            # (MXNet keeps the old optimizer's choice and loops forever when an optimizer
            # that aggregates is replaced by one that does not)
            self.aggregate_updates = self.optimizer.aggregate_num > 0
        else:
            self.states = states
        if not isinstance(self.states, dict):
            raise ArgumentTypeError('optimizer states must unpickle to a dict of index to state, '
                                    'got %s' % type(self.states).__name__)
        self.states_synced = dict.fromkeys(self.states.keys(), False)

    def get_states(self, dump_optimizer=False):
        """The states pickled in MXNet's format.

        Parameters
        ----------
        dump_optimizer : bool, default False
            Whether to also save the optimizer itself (its learning rate, weight decay and
            schedules).

        Returns
        -------
        bytes
        """
        return pickling.dumps((self.states, self.optimizer) if dump_optimizer
                              else self.states)


def get_updater(optimizer):
    """An :class:`Updater` of ``optimizer`` (the closure the kvstore calls).

    Parameters
    ----------
    optimizer : Optimizer
        The optimizer.

    Returns
    -------
    Updater
    """
    return Updater(optimizer)
