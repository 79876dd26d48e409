"""The single-process key-value store (MXNet's ``KVStoreLocal``): ``'local'`` and
``'device'`` types, and ``create``.

Keys are ints or strs (not both in one store); a value is an NDArray or a list of NDArrays,
one per device, which ``push`` sums. Without an optimizer the store keeps the sum; with one
(``set_optimizer``) it runs the update in the store, as MXNet's local store does:
``updater(key, summed_gradient, stored_weight)``, and ``pull`` copies the weight out.
Lists of keys are processed in MXNet's order: int keys sorted, str keys in the order they
were first initialised.
"""
from .. import optimizer as opt
from ..ndarray import NDArray
from ..ndarray.ndarray import _to_xp
from ..ndarray.sparse_array import RowSparseNDArray, sum_row_sparse, pulled_rows
from . import comm
from .base import KVStoreBase, LOCAL_TYPES, MULTI_PROCESS, MULTI_PROCESS_TYPES, NCCL_TYPES
from ..base import ArgumentError, ArgumentTypeError, UnknownNameError, UsageError, atomic_write

__all__ = ['KVStore', 'create']


def _write_out(stored, out):
    """Copy a stored value into a user's array. Not an operation of autograd (MXNet's
    pulls are not recorded): allowed inside record() on a variable (Gluon's Trainer
    initialises and pulls Parameters there, and pulls the same values into a weight that a
    recorded operator read: not counted as a write for the tape, as MXNet's engine does not
    either). A row_sparse ``out`` takes the stored rows."""
    with out.context.device_scope():
        out._data[...] = _to_xp(stored._data, out.context)
    if isinstance(out, RowSparseNDArray):
        out._set_structure(pulled_rows(stored, range(stored.shape[0])))


def _check_key(key):
    if isinstance(key, bool) or not isinstance(key, (int, str)):
        raise ArgumentTypeError('kvstore keys are int or str, got %r (%s)'
                                % (key, type(key).__name__))
    return key


def _pairs(keys, values, what):
    """[(key, [NDArray, ...]), ...] from MXNet's key/value arguments."""
    if isinstance(keys, (tuple, list)):
        if not isinstance(values, (tuple, list)) or len(values) != len(keys):
            raise ArgumentError('%s: %d keys need a list of %d values (one NDArray or a list of '
                                'NDArrays per key), got %s' % (
                                    what, len(keys), len(keys),
                                    '%d values' % len(values)
                                    if isinstance(values, (tuple, list)) else
                                    type(values).__name__))
        out = []
        for k, v in zip(keys, values):
            out += _pairs(k, v, what)
        kinds = {isinstance(k, str) for k, _ in out}
        if len(kinds) > 1:
            raise ArgumentTypeError('%s: inconsistent types of keys detected (int and str)' % what)
        return out
    _check_key(keys)
    if isinstance(values, NDArray):
        return [(keys, [values])]
    if isinstance(values, (tuple, list)) and values and \
            all(isinstance(v, NDArray) for v in values):
        return [(keys, list(values))]
    raise ArgumentTypeError('%s: the value of key %r must be an NDArray or a non-empty list of '
                            'NDArrays, got %r' % (what, keys, values))


class KVStore(KVStoreBase):
    """A key-value store over the devices of one process.

    Made by :func:`create`; ``type`` is the name it was created with.
    """

    def __init__(self, name='local'):
        if name not in LOCAL_TYPES:
            raise ArgumentError('KVStore: unknown type %r (use create())' % (name,))
        self._type = name
        self._device_comm = 'device' in name
        self._store = {}
        self._str_ids = {}          # str key -> order of first init (MXNet's internal id)
        self._key_is_str = None
        self._compression = None
        self._updater = None
        self._is_p3 = False

    # ----------------------------------------------------------------- keys
    def _check_key_type(self, key):
        is_str = isinstance(key, str)
        if self._key_is_str is None:
            self._key_is_str = is_str
        elif self._key_is_str != is_str:
            raise ArgumentTypeError('Mixed key types are not allowed: this store has %s keys, '
                                    'got %r'
                                    % ('str' if self._key_is_str else 'int', key))

    def _stored(self, key):
        self._check_key_type(key)
        try:
            return self._store[key]
        except KeyError:
            raise UnknownNameError('key %r has not been inited (call kv.init first)'
                                   % (key,)) from None

    def _grouped(self, pairs):
        """(key, values) with the values of repeated keys together, in MXNet's key order."""
        groups = {}
        for k, vals in pairs:
            self._check_key_type(k)
            groups.setdefault(k, []).extend(vals)
        order = sorted(groups, key=lambda k: self._str_ids.get(k, -1) if isinstance(k, str)
                       else k)
        return [(k, groups[k]) for k in order]

    @staticmethod
    def _check_shapes(key, stored, arrays, what):
        for a in arrays:
            if a.shape != stored.shape:
                raise ArgumentError('%s: key %r holds shape %s, got an array of shape %s'
                                    % (what, key, stored.shape, a.shape))

    # ----------------------------------------------------------------- operations
    def init(self, key, value):
        """Initialise keys with values (copied into the store).

        Parameters
        ----------
        key : int, str, or list of int or str
            The keys.
        value : NDArray or list of NDArray
            One value per key.

        Raises
        ------
        ValueError
            A key initialised twice.
        """
        pairs = _pairs(key, value, 'init')
        seen = set()
        for k, vals in pairs:
            self._check_key_type(k)
            if k in self._store or k in seen or len(vals) != 1:
                raise ArgumentError('duplicate init of key %r. Please double check if you called '
                                    'kv.init or kv.broadcast with this key multiple times' % (k,))
            seen.add(k)
        for k, vals in pairs:
            if isinstance(k, str) and k not in self._str_ids:
                self._str_ids[k] = len(self._str_ids)
            self._store[k] = vals[0].copyto(comm.STORE_CONTEXT) if not self._device_comm \
                else vals[0].copy()

    def _merge(self, key, vals):
        """The sum of the values pushed for ``key`` (MXNet's Comm::Reduce). A single value
        without compression is passed on as it is, as MXNet does."""
        sparse = all(isinstance(v, RowSparseNDArray) for v in vals)
        if self._compression is not None:
            vals = [self._compression.compress(key, i, v) for i, v in enumerate(vals)]
        elif len(vals) == 1:
            return vals[0]
        if self._device_comm:
            total = self._reduce_devices(vals)
        else:
            total = NDArray(comm.reduce_cpu([v._data for v in vals], vals[0]._data.dtype),
                            comm.STORE_CONTEXT)
        # row_sparse values sum to a row_sparse one holding the union of their rows (the
        # updater then updates those rows lazily, as MXNet's)
        return sum_row_sparse(total, vals) if sparse else total

    @staticmethod
    def _reduce_devices(vals):
        """The sum of NDArrays (one per device) on the first one's device (a device
        store's reduction: the ring all-reduce)."""
        return comm.reduce_devices(vals)

    @staticmethod
    def _allreduce_inplace(vals):
        """Sum NDArrays (one per device), leaving the sum in each."""
        comm.allreduce_inplace(vals)

    def push(self, key, value, priority=0):
        """Push values: the values of each key are summed (over devices); with an optimizer
        the store updates its weight from the sum, else it keeps the sum.

        Parameters
        ----------
        key : int, str, or list of int or str
            The keys.
        value : NDArray, list of NDArray, or list of list of NDArray
            Per key, an NDArray or a list of NDArrays (one per device).
        priority : int, optional
            Accepted for MXNet compatibility; operations run in order.

        Raises
        ------
        KeyError
            A key that was never initialised.
        ValueError
            A value whose shape is not the stored one.
        """
        for k, vals in self._grouped(_pairs(key, value, 'push')):
            stored = self._stored(k)
            self._check_shapes(k, stored, vals, 'push')
            self._push_one(k, stored, vals)

    def _push_one(self, k, stored, vals):
        self._apply(k, stored, self._merge(k, vals))

    def _apply(self, k, stored, merged):
        """Store the summed value of key ``k``, or update the stored weight from it."""
        if self._updater is None:
            merged.copyto(stored)       # (a row_sparse store takes the merged rows)
            return
        if merged.context != stored.context:
            # MXNet moves the stored weight to the device of the merged gradient
            stored = self._store[k] = stored.copyto(merged.context)
        self._updater(k.encode('utf-8') if isinstance(k, str) else k, merged, stored)

    def pull(self, key, out=None, priority=0, ignore_sparse=True):
        """Copy the stored values of keys into ``out``.

        Parameters
        ----------
        key : int, str, or list of int or str
            The keys.
        out : NDArray, list of NDArray, or list of list of NDArray
            Per key, an NDArray or a list of NDArrays (one per device) to fill.
        priority : int, optional
            Accepted for MXNet compatibility.
        ignore_sparse : bool, optional
            Leave sparse ``out`` arrays alone (MXNet's default); False copies into them too
            (a row_sparse one then holds the stored rows).

        Raises
        ------
        KeyError
            A key that was never initialised.
        ValueError
            No ``out``, or an ``out`` whose shape is not the stored one.
        """
        if out is None:
            raise ArgumentError('pull needs out= (the arrays to fill)')
        for k, outs in _pairs(key, out, 'pull'):
            stored = self._stored(k)
            self._check_shapes(k, stored, outs, 'pull')
            for o in outs:
                if ignore_sparse and o.stype != 'default':
                    continue
                _write_out(stored, o)

    def pushpull(self, key, value, out=None, priority=0):
        """:meth:`push` then :meth:`pull` into ``out`` (or back into ``value``)."""
        pairs = _pairs(key, value, 'pushpull')
        out_pairs = pairs if out is None else _pairs(key, out, 'pushpull')
        if self._device_comm and self._updater is None and self._compression is None:
            # the all-reduce leaves the sum on every device: reduce the values in place
            # when they are also where the result goes
            in_place = out is None or all(
                len(o) == len(v) and all(a is b for a, b in zip(o, v))
                for (_, v), (_, o) in zip(pairs, out_pairs))
            # MXNet pushes every key before it pulls any: where keys share arrays (a list
            # repeated, ``[[a, b]] * 3``), reducing one key in place would change what the
            # next one pushes, so those go through push then pull
            ids = [id(a) for _, v in pairs for a in v]
            if in_place and len(ids) == len(set(ids)):
                for k, vals in self._grouped(pairs):
                    stored = self._stored(k)
                    self._check_shapes(k, stored, vals, 'pushpull')
                for k, vals in self._grouped(pairs):
                    if len(vals) > 1:
                        self._allreduce_inplace(vals)
                    self._store[k][:] = vals[0]
                return
        self.push(key, value, priority)
        self.pull(key, out if out is not None else value, priority)

    def broadcast(self, key, value, out, priority=0):
        """Initialise keys with ``value`` and pull them into ``out`` (MXNet: Init + Pull)."""
        self.init(key, value)
        self.pull(key, out, priority)

    def row_sparse_pull(self, key, out=None, priority=0, row_ids=None):
        """Pull the rows ``row_ids`` of the stored values into ``out`` (RowSparseNDArrays,
        as MXNet's): they hold those rows (the stored value's, for a row_sparse one), the
        others 0.

        Parameters
        ----------
        key : int, str, or list of int or str
            The keys.
        out : NDArray, list of NDArray, or list of list of NDArray
            The arrays to fill.
        priority : int, optional
            Accepted for MXNet compatibility.
        row_ids : NDArray or list of NDArray
            1-D row indices per output (one for all outputs of a key is allowed).
        """
        if out is None or row_ids is None:
            raise ArgumentError('row_sparse_pull needs out= and row_ids=')
        if isinstance(row_ids, NDArray):
            row_ids = [row_ids]
        if not isinstance(row_ids, list):
            raise ArgumentTypeError('row_ids should be NDArray or list of NDArray')
        if any(isinstance(r, (list, tuple)) for r in row_ids):
            # per key, a list per device (as MXNet flattens them)
            row_ids = [x for r in row_ids for x in (r if isinstance(r, (list, tuple)) else [r])]
        first_out = out
        single_rowid = len(row_ids) == 1 and isinstance(out, list)
        if single_rowid:
            first_out = [out[0]]
        pairs = _pairs(key, first_out, 'row_sparse_pull')
        outs = [o for _, os_ in pairs for o in os_]
        if len(outs) != len(row_ids):
            raise ArgumentError('the number of row_ids (%d) does not match the number of values '
                                '(%d)' % (len(row_ids), len(outs)))
        ids = iter(row_ids)
        for k, os_ in pairs:
            stored = self._stored(k)
            self._check_shapes(k, stored, os_, 'row_sparse_pull')
            for o in os_:
                if not isinstance(o, RowSparseNDArray):
                    raise ArgumentError('row_sparse_pull of key %r: out must be a '
                                        'RowSparseNDArray (as MXNet), got storage type %r; '
                                        'use pull for dense arrays' % (k, o.stype))
            for o in os_:
                rows = next(ids).asnumpy().astype('int64').reshape(-1)
                if rows.size and (rows.min() < 0 or rows.max() >= stored.shape[0]):
                    raise IndexError('row_sparse_pull: row ids of key %r must lie in [0, %d)'
                                     % (k, stored.shape[0]))
                kept = stored.asnumpy()
                dense = kept * 0
                dense[rows] = kept[rows]
                # not an operation of autograd (as MXNet's pull): a Parameter's array pulled
                # inside record() (Gluon's row_sparse_data) takes the rows (see _write_out)
                with o.context.device_scope():
                    o._data[...] = o.context.xp.asarray(dense)
                if isinstance(o, RowSparseNDArray):
                    # MXNet's retain: the requested rows the stored value holds
                    o._set_structure(pulled_rows(stored, rows))
        if single_rowid:
            for out_i in out[1:]:
                out[0].copyto(out_i)

    # ----------------------------------------------------------------- configuration
    def set_gradient_compression(self, compression_params):
        """Compress pushed gradients with MXNet's 2-bit scheme (device stores only, as in
        MXNet): ``{'type': '2bit', 'threshold': 0.5}``.

        Raises
        ------
        ValueError
            A ``'local'`` store, an unknown type, or a threshold that is not > 0.
        TypeError
            ``compression_params`` is not a dict.
        """
        if 'device' not in self.type:
            raise ArgumentError('Gradient compression is not supported for this type of kvstore '
                                '(%r); create a \'device\' kvstore' % self.type)
        self._compression = comm.make_compression(compression_params)

    def set_optimizer(self, optimizer):
        """Run ``optimizer`` in the store: pushes update the stored weights.

        Parameters
        ----------
        optimizer : Optimizer
            The optimizer.
        """
        if not isinstance(optimizer, opt.Optimizer):
            raise ArgumentTypeError('set_optimizer takes an Optimizer (mx.optimizer.create(...)), '
                                    'got %s' % type(optimizer).__name__)
        self._set_updater(opt.get_updater(optimizer))

    def _set_updater(self, updater):
        """Set the function ``updater(key, merged_gradient, stored_weight)`` that pushes
        run (str keys reach it as bytes, as in MXNet)."""
        if not callable(updater):
            raise ArgumentTypeError('the updater must be callable, got %s' % type(updater).__name__)
        self._updater = updater

    set_updater = _set_updater

    def is_capable(self, capability):
        """Whether the store can run an optimizer (``'optimizer'``): yes."""
        if capability.lower() == KVStoreBase.OPTIMIZER:
            return not self._is_p3
        raise ArgumentError('Unknown capability: {}'.format(capability))

    @property
    def type(self):
        """The type this store was created with."""
        return self._type

    @property
    def rank(self):
        """0: one process."""
        return 0

    @property
    def num_workers(self):
        """1: one process."""
        return 1

    def _barrier(self):
        """A barrier among workers: nothing to wait for in one process."""

    barrier = _barrier

    def _send_command_to_servers(self, head, body):
        raise ArgumentError('a %r kvstore has no servers to send commands to' % self.type)

    def _updater_or_error(self):
        if not isinstance(self._updater, opt.Updater):
            raise UsageError('this kvstore has no optimizer states: call set_optimizer '
                             'first')
        return self._updater

    def save_optimizer_states(self, fname, dump_optimizer=False):
        """Save the optimizer states (pickled in MXNet's format) to ``fname``.

        Parameters
        ----------
        fname : str
            Path to the output states file.
        dump_optimizer : bool, default False
            Whether to also save the optimizer itself.
        """
        states = self._updater_or_error().get_states(dump_optimizer)
        with atomic_write(fname, 'wb') as fout:
            fout.write(states)

    def load_optimizer_states(self, fname):
        """Load optimizer states saved by :meth:`save_optimizer_states` (or MXNet's)."""
        updater = self._updater_or_error()
        with open(fname, 'rb') as f:
            updater.set_states(f.read())


def create(name='local'):
    """A new key-value store.

    Parameters
    ----------
    name : str
        ``'local'`` (reduce and update on the CPU), ``'device'`` (reduce with the ring
        all-reduce and update on a device), the aliases ``'local_update_cpu'``,
        ``'local_allreduce_cpu'``, ``'local_allreduce_device'``, ``'nccl'`` (GPUs of this
        process, reduced with NCCL: :mod:`symgraph.kvstore.nccl`), ``'dist_sync'`` /
        ``'dist_device_sync'`` (several processes over MPI: :mod:`symgraph.kvstore.dist`),
        or a registered store (``'teststore'``). Case insensitive.

    Returns
    -------
    KVStoreBase

    Raises
    ------
    ValueError
        ``'dist_async'`` (no parameter server), ``'horovod'``, ``'byteps'``, ``'p3'``, or
        an unknown type.

    Examples
    --------
    >>> import symgraph as mx
    >>> kv = mx.kv.create('local')
    >>> kv.type, kv.rank, kv.num_workers
    ('local', 0, 1)
    """
    if not isinstance(name, str):
        raise ArgumentTypeError('name must be a string, got %s' % type(name).__name__)
    name = name.lower()
    if name in KVStoreBase.kv_registry:
        return KVStoreBase.kv_registry[name]()
    if name in LOCAL_TYPES:
        return KVStore(name)
    if name in MULTI_PROCESS_TYPES:
        return MULTI_PROCESS_TYPES[name](name)
    if 'dist' in name and 'async' in name:
        raise ArgumentError("kvstore type %r is not supported: symgraph's workers reduce their "
                            "gradients among themselves over MPI, with no parameter server to "
                            "apply them asynchronously; use 'dist_sync' (or 'dist_device_sync')"
                            % name)
    if any(p in name for p in MULTI_PROCESS):
        raise ArgumentError("kvstore type %r is not available; the multi-process types are %s "
                            "(python -m symgraph.launch), in one process use 'local' or 'device'"
                            % (name, ', '.join(map(repr, sorted(MULTI_PROCESS_TYPES)))))
    if name in NCCL_TYPES:
        return NCCL_TYPES[name]()
    raise ArgumentError('unknown kvstore type %r; the types are %s' % (
        name, ', '.join(repr(t) for t in LOCAL_TYPES + tuple(sorted(KVStoreBase.kv_registry)))))
