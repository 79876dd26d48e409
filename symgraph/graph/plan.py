"""Compile a bound graph once into a plan, then run it with little per-node overhead.

The plan numbers every entry (an output of a node), decides which forward arrays
backward needs, generates the backward steps (summing gradients on fan-out, only for
what needs a gradient), computes reference-count liveness and a storage assignment with
the real itemsize, and emits straight-line Python functions for forward and backward:
each node becomes one line calling a prebound function on local variables, and a
``del`` frees an array right after its last use. NumPy's allocator then reuses the
memory of dead arrays, so the peak memory follows the liveness plan.
"""
from __future__ import annotations

import collections
import itertools
import linecache
import os
import warnings
import weakref
import numpy as np

from ..opdef import lend_scratch
from ..base import (MXNetError, ArgumentError, ArgumentTypeError, NotSupportedError,
                    UnknownNameError, UsageError, rewrap)

__all__ = ['Plan']

# numbers the generated code's file names (next() on a count is atomic: binds may run in
# several threads)
_counter = itertools.count(1)


class Plan:
    """Forward/backward program of a graph with fixed shapes and dtypes.

    order : topologically ordered nodes; arg_nodes / aux_nodes : Variables.
    shapes, dtypes : dict (node index, output) -> shape / dtype.
    grad_reqs : per argument, 'write', 'add' or 'null'.
    heads : list of (node, output index).
    ctx : the bind's context, handed to ``Operator.create_state`` (opaque here).
    aliases : id(node) -> node of ``order`` standing for it (see
        :func:`symgraph.graph.passes.fuse_for_training`).
    """

    def __init__(self, order, arg_nodes, aux_nodes, heads, shapes, dtypes, grad_reqs, xp,
                 ctx=None, states=None, aliases=None):
        self.order = order
        self.xp = xp
        self.index = {id(n): k for k, n in enumerate(order)}
        # aliases: id(node) -> the node of ``order`` whose outputs stand for that node's
        # (a fused node for the consumer it replaced: its readers and the heads keep
        # naming the consumer)
        for k, n in (aliases or {}).items():
            self.index[k] = self.index[id(n)]
        self.entry = {}                     # (node idx, out idx) -> entry id
        self.entry_info = []                # entry id -> (node, out idx)
        entry, info = self.entry, self.entry_info
        for k, n in enumerate(order):
            for i in range(1 if n.op is None else n.op.output_count()):    # (n.num_outputs())
                entry[(k, i)] = len(info)
                info.append((n, i))
        # (the entry ids follow the keys of ``entry``, which are those of shapes and dtypes)
        self.shapes = [shapes[key] for key in self.entry]
        self.dtypes = [t if isinstance(t, np.dtype) else np.dtype(t)
                       for t in [dtypes[key] for key in self.entry]]
        self.arg_entries = [self._e(n, 0) for n in arg_nodes]
        self.aux_entries = [self._e(n, 0) for n in aux_nodes]
        self.head_entries = [self._e(n, i) for n, i in heads]
        self.heads = heads
        self.grad_reqs = list(grad_reqs)
        self.steps = [n for n in order if n.op is not None]
        #: id(step node) -> (its input entries, its output entries, its number of
        #: arguments), worked out once (the nodes are immutable and the plan holds them)
        self._io = {}
        entry, index = self.entry, self.index
        for n in self.steps:
            self._io[id(n)] = ([entry[(index[id(s)], i)] for s, i in n.inputs],
                               [entry[(index[id(n)], i)] for i in range(n.op.output_count())],
                               len(n.op.list_arguments()))
        # the operator each step runs, fitted to the inferred shapes (Operator.specialize:
        # mx.sym.zeros(shape=(0, H)) makes arrays of the shape its consumer gave)
        # (Operator.for_node: SyncBatchNorm's default key is its node's name)
        shape_of = self.shapes
        self.run_op = {}
        for n in self.steps:
            ins, outs, _ = self._io[id(n)]
            self.run_op[id(n)] = n.op.for_node(n.name).specialize(
                [shape_of[e] for e in ins], [shape_of[e] for e in outs])
        # per-executor state of stateful operators (Custom), shared by forward and backward;
        # ``states`` (id(node) -> state) hands over those another plan of the same bind
        # made (the inference passes' plan reuses the bound plan's: one per node and bind)
        states = states or {}
        self.op_state = {}
        for n in self.steps:
            ins = self._io[id(n)][0]
            self.op_state[id(n)] = states[id(n)] if id(n) in states else \
                self.run_op[id(n)].create_state(ctx, [shape_of[e] for e in ins],
                                                [self.dtypes[e] for e in ins])
        self._requires_grad()
        self._fwd_cache = {}
        self._bwd_cache = {}
        # the storage run (Storage), planned at the first buffered forward_fn/backward_fn:
        # a pass that rewrites the steps (fusion, folding) must run before that
        self._storage = None

    def _e(self, node, i):
        return self.entry[(self.index[id(node)], i)]

    def in_entries(self, node):
        got = self._io.get(id(node))
        if got is not None:
            return list(got[0])
        return [self._e(s, i) for s, i in node.inputs]

    def out_entries(self, node):
        got = self._io.get(id(node))
        if got is not None:
            return list(got[1])
        return [self._e(node, i) for i in range(node.num_outputs())]

    def nbytes(self, e):
        return int(np.prod(self.shapes[e], dtype=np.int64)) * self.dtypes[e].itemsize

    # ------------------------------------------------------------------ gradients
    def _requires_grad(self):
        req = [False] * len(self.entry_info)
        for e, r in zip(self.arg_entries, self.grad_reqs):
            req[e] = r != 'null'
        self.bwd_steps = []
        io = self._io
        for n in self.steps:
            if n.op.no_grad:
                continue
            ins, outs, n_args = io[id(n)]
            if not any([req[e] for e in ins[:n_args]]):
                continue
            for e in outs:
                req[e] = True
            self.bwd_steps.append(n)
        self.requires = req
        # forward arrays that backward reads
        saved = set()
        for n in self.bwd_steps:
            op = n.op
            ins, outs, n_args = io[id(n)]
            saved.update(_select(op.needs_inputs, ins[:n_args]))
            saved.update(ins[n_args:])
            saved.update(_select(op.needs_outputs, outs))
            saved.update(outs[op.num_visible_outputs():])   # hidden outputs are for backward
        self.saved = sorted(saved)
        self._saved_set = saved

    def _backward_reads(self, n):
        """The forward arrays (entry ids) the backward step of node ``n`` reads."""
        op = n.op
        n_args = len(op.list_arguments())
        ins, outs = self.in_entries(n), self.out_entries(n)
        reads = set(_select(op.needs_inputs, ins[:n_args])) | set(ins[n_args:])
        sel_out = set(_select(op.needs_outputs, outs)) | set(outs[op.num_visible_outputs():])
        return reads | (sel_out & self._saved_set)

    # ------------------------------------------------------------------ code
    def _compile(self, src, env, name):
        fname = '<symgraph-plan-%d-%s>' % (next(_counter), name)
        code = compile(src, fname, 'exec')
        # register the source so tracebacks show the generated line, for as long as the
        # function lives: linecache never drops such entries itself, and every bind
        # compiles new functions
        linecache.cache[fname] = (len(src), None, src.splitlines(True), fname)
        exec(code, env)
        weakref.finalize(env[name], linecache.cache.pop, fname, None)
        return env[name], fname

    def forward_fn(self, is_train, monitor=0, keep_saved=None, buffered=False):
        """The compiled forward; it returns what backward needs when ``keep_saved``
        (default: in training), so that backward may also follow an inference forward,
        as MXNet allows.

        ``monitor``: 0 no monitor (the function takes no callback and does no per-node
        work for one); 1 the function calls ``M(name, array)`` on every output of every
        node, hidden ones included; 2 also on each node's inputs before it runs (MXNet's
        ``monitor_all``).

        ``buffered``: the function takes ``P``, the views of :meth:`storage` (from
        :meth:`allocate`), and computes the outputs the storage plan buffers into them."""
        keep_saved = bool(is_train) if keep_saved is None else bool(keep_saved)
        key = (bool(is_train), int(monitor), keep_saved, bool(buffered))
        if key not in self._fwd_cache:
            self._fwd_cache[key] = self._gen_forward(*key)
        return self._fwd_cache[key]

    def _gen_forward(self, is_train, monitor, keep_saved, buffered=False):
        xp = self.xp
        env = {}
        st = self.storage() if buffered else None
        lines = ['def forward(A, X, O, M=None, P=None):']
        if st is not None:
            lines += ['    p%d = P[%d]' % (k, k) for k in st.forward_slots()]
        # heads an operator may compute straight into the user's output arrays O
        head_slot = {}
        for j, e in enumerate(self.head_entries):
            head_slot.setdefault(e, j)
        line_step = {}
        for j, e in enumerate(self.arg_entries):
            lines.append('    v%d = A[%d]' % (e, j))
        for j, e in enumerate(self.aux_entries):
            lines.append('    v%d = X[%d]' % (e, j))
        keep = set(self.head_entries) | set(self.arg_entries) | set(self.aux_entries)
        if keep_saved:
            keep |= set(self.saved)
        last_use = {}
        for s, n in enumerate(self.steps):
            for e in self.in_entries(n):
                last_use[e] = s
        for s, n in enumerate(self.steps):
            if monitor > 1:
                lines += self._monitor_inputs(n, self.in_entries(n), n.op.list_arguments()
                                              + n.op.list_auxiliary_states())
            mode = st.node_mode.get(id(n)) if st is not None else None
            fn, fast = self.run_op[id(n)].make_forward(
                xp, is_train, state=self.op_state[id(n)],
                in_dtypes=[self.dtypes[e] for e in self.in_entries(n)], into=mode == 'into')
            env['f%d' % s] = fn
            ins = ', '.join('v%d' % e for e in self.in_entries(n))
            outs = self.out_entries(n)
            lend = st.lend_slot.get(('f', s)) if st is not None else None
            if lend is not None:
                lines.append('    _lend(P[%d])' % lend)
            line_step[len(lines) + 1] = n
            into = ''
            slot = st.slot if st is not None else {}
            if (n.op.writes_into and not fast and any(e in head_slot for e in outs)) \
                    or mode == 'into':
                into = '%sout=[%s]' % (', ' if ins else '', ', '.join(
                    'O[%d]' % head_slot[e] if e in head_slot else
                    'p%d' % slot[e] if e in slot else 'None' for e in outs))
            if fast and mode == 'ufunc':
                lines.append('    v%d = f%d(%s, out=p%d)' % (outs[0], s, ins, slot[outs[0]]))
            elif fast:
                lines.append('    v%d = f%d(%s)' % (outs[0], s, ins))
            else:
                lines.append('    %s, = f%d(%s%s)' % (', '.join('v%d' % e for e in outs), s,
                                                     ins, into))
            if lend is not None:
                lines.append('    _lend(None)')
            if mode == 'into':
                # an operator may decline the buffer (another path, another dtype): its
                # result is copied in, so that the entry is its buffer, as planned
                for e in outs:
                    if e in slot:
                        lines.append('    if v%d is not p%d:' % (e, slot[e]))
                        lines.append('        p%d[...] = v%d' % (slot[e], e))
                        lines.append('        v%d = p%d' % (e, slot[e]))
            if monitor:
                # every output, hidden ones too (BatchNorm's mean and var), as MXNet's
                # executor reports them
                lines += ['    M(%r, v%d)' % (name, e)
                          for name, e in zip(n.output_names(), outs)]
            dead = [e for e in set(self.in_entries(n)) if last_use.get(e) == s and e not in keep]
            dead += [e for e in outs if e not in keep and e not in last_use]
            if dead:
                lines.append('    del %s' % ', '.join('v%d' % e for e in sorted(dead)))
        heads = ''.join('v%d, ' % e for e in self.head_entries)
        saved = ''.join('v%d, ' % e for e in self.saved) if keep_saved else ''
        lines.append('    return (%s), (%s)' % (heads, saved))
        env['_lend'] = lend_scratch
        fn, fname = self._compile('\n'.join(lines) + '\n', env, 'forward')
        return fn, fname, line_step

    def _monitor_inputs(self, node, entries, names, prefix=None):
        """Generated lines reporting a node's inputs before it runs, as MXNet's
        ``monitor_all`` does: an input that is a variable under the variable's name first,
        then every input as ``<node>_<input name>``. ``entries`` holds entry ids, or the
        names of generated locals."""
        lines = []
        for e, name in zip(entries, names):
            var = 'v%d' % e if isinstance(e, int) else e
            if isinstance(e, int) and self.entry_info[e][0].op is None:
                lines.append('    M(%r, %s)' % (self.entry_info[e][0].name, var))
            lines.append('    M(%r, %s)' % ('%s_%s' % (prefix or node.name, name), var))
        return lines

    def backward_fn(self, monitor=0, buffered=False, ready=False):
        """The compiled backward; with ``monitor`` (1 or 2, as for :meth:`forward_fn`) it
        takes a callback ``M`` and reports each backward step's input gradients as
        ``<node>_backward_output<i>`` (and with 2, its inputs before it runs).
        ``buffered``: as for :meth:`forward_fn` (gradients into the storage plan's buffers).
        Given the forward arrays ``S`` as a list, the function empties it and drops each
        array after its last use.

        With ``ready`` it also takes a callback ``R`` and calls ``R(j)`` as soon as the
        gradient of argument ``j`` is final (written into ``G[j]``), in the order of
        :meth:`grad_ready_order`; without, every gradient is written at the end and the
        function has no such calls at all."""
        key = (int(monitor), bool(buffered), bool(ready))
        if key not in self._bwd_cache:
            self._bwd_cache[key] = self._gen_backward(*key)
        return self._bwd_cache[key]

    def _final_steps(self):
        """Per argument with a gradient (index ``j``), the backward step (position in
        ``reversed(bwd_steps)``) after which its gradient is final; -1 where it is known
        before the first step (a head gradient alone, or none: zero)."""
        last = {}
        for s, n in enumerate(reversed(self.bwd_steps)):
            n_args = len(n.op.list_arguments())
            for e in self.in_entries(n)[:n_args]:
                if self.requires[e]:
                    last[e] = s
        return {j: last.get(e, -1) for j, (e, req) in
                enumerate(zip(self.arg_entries, self.grad_reqs)) if req != 'null'}

    def grad_ready_order(self):
        """The argument indices whose gradients backward computes, in the order a ready
        callback reports them (the order they become final)."""
        final = self._final_steps()
        return sorted(final, key=lambda j: (final[j], j))

    def _gen_backward(self, monitor=0, buffered=False, ready=False):
        xp = self.xp
        env = {}
        st = self.storage() if buffered else None
        lines = ['def backward(S, OG, G, M=None, P=None, R=None):']
        line_step = {}
        if self.saved:
            lines.append('    %s, = S' % ', '.join('v%d' % e for e in self.saved))
            # S a list: it is used up, each forward array going after its last use here
            lines.append('    if S.__class__ is list:')
            lines.append('        S.clear()')
        if st is not None:
            lines += ['    p%d = P[%d]' % (k, k) for k in st.backward_slots()]
        slot = st.slot if st is not None else {}
        last_read = {}
        for t, n in enumerate(reversed(self.bwd_steps)):
            for e in self._backward_reads(n):
                last_read[e] = t
        # head gradients: none for loss layers and no-grad outputs (they make their own, or
        # none); an output listed twice takes the last one's, as MXNet 1.9.1 does
        last = {}
        for j, (e, (node, _)) in enumerate(zip(self.head_entries, self.heads)):
            if self.requires[e] and not (node.op is not None
                                         and (node.op.is_loss or node.op.no_grad)):
                if e in last:
                    warnings.warn(
                        'output %s is listed more than once among the outputs: backward uses '
                        'the head gradient of the last one only, as MXNet does'
                        % node.output_names()[self.entry_info[e][1]], stacklevel=4)
                last[e] = j
        have = set()
        arg_set = set(self.arg_entries)
        for e, j in last.items():
            lines.append('    g%d = OG[%d]' % (e, j))
            have.add(e)
        saved = set(self.saved)
        # arguments bound with 'write' whose gradient has a single contribution: the
        # operator making it may write it straight into the user's gradient array
        contributions = collections.Counter(last)
        for n in self.bwd_steps:
            n_args = len(n.op.list_arguments())
            contributions.update(e for e in self.in_entries(n)[:n_args] if self.requires[e])
        grad_slot = {e: j for j, (e, req) in enumerate(zip(self.arg_entries, self.grad_reqs))
                     if req == 'write' and contributions[e] == 1}

        def write_grad(j):
            """The lines that write argument j's gradient into G[j] (and, in ready mode,
            report it)."""
            e, req = self.arg_entries[j], self.grad_reqs[j]
            out = []
            if e not in have:
                if req == 'write':
                    out.append('    G[%d][...] = 0' % j)
            elif req == 'add':
                out.append('    G[%d] += g%d' % (j, e))
            elif e in grad_slot:
                out.append('    if g%d is not G[%d]:' % (e, j))
                out.append('        G[%d][...] = g%d' % (j, e))
            else:
                out.append('    G[%d][...] = g%d' % (j, e))
            if ready:
                out.append('    R(%d)' % j)
            return out
        final_at = {}
        if ready:
            # each gradient written and reported right after its last contribution (the
            # arguments' gradients are never freed early, so the storage plan holds)
            for j, s in self._final_steps().items():
                final_at.setdefault(s, []).append(j)
            for j in sorted(final_at.pop(-1, [])):
                lines += write_grad(j)
        for s, n in enumerate(reversed(self.bwd_steps)):
            op = n.op
            n_args = len(op.list_arguments())
            ins = self.in_entries(n)
            outs = self.out_entries(n)
            need = [self.requires[e] for e in ins[:n_args]]
            og = []
            for i, e in enumerate(outs):
                if op.is_loss or i >= op.num_visible_outputs():
                    og.append('None')
                elif e in have:
                    og.append('g%d' % e)
                else:   # an output nobody differentiates: its gradient is zero
                    env['z%d' % e] = (self.shapes[e], self.dtypes[e])
                    og.append('_zeros(*z%d)' % e)
            sel_in = _select(op.needs_inputs, ins[:n_args])
            in_list = ', '.join('v%d' % e if e in sel_in else 'None' for e in ins[:n_args])
            sel_out = set(_select(op.needs_outputs, outs)) | set(outs[op.num_visible_outputs():])
            out_list = ', '.join('v%d' % e if e in sel_out and e in saved else 'None'
                                 for e in outs)
            aux_list = ', '.join('v%d' % e for e in ins[n_args:])
            reqs = None
            if op.wants_req:
                # operators that follow MXNet's req protocol (Custom) see 'add' where an
                # argument bound with grad_req='add' feeds them directly
                arg_req = dict(zip(self.arg_entries, self.grad_reqs))
                reqs = [('add' if arg_req.get(e) == 'add' else 'write') if nd else 'null'
                        for e, nd in zip(ins[:n_args], need)]
            env['b%d' % s] = _bind_backward(self.run_op[id(n)], xp, need,
                                            self.op_state[id(n)], reqs)
            into = ''
            # the planned buffers offered per argument position (Storage.grad_offer): a
            # gradient's buffer to its first contribution, or to the second where the first
            # is another array; a buffer of its own to a later one (then summed in)
            offer = {j: 'p%d' % slot[st.grad_offer[(s, j)]] for j in range(n_args)
                     if st is not None and (s, j) in st.grad_offer}
            if (op.writes_into or op.grad_writes_into) and (
                    offer or any(nd and e in grad_slot for e, nd in zip(ins, need))):
                into = ', grad_out=[%s]' % ', '.join(
                    'G[%d]' % grad_slot[e] if nd and e in grad_slot else
                    offer[j] if nd and j in offer else 'None'
                    for j, (e, nd) in enumerate(zip(ins[:n_args], need)))
            if monitor > 1:
                # MXNet's backward node '<node>_backward' reads (in the common layout) the
                # head gradients, then the forward inputs and outputs it needs; its inputs
                # have no names of their own: 'input<i>'
                seen = []
                for k, g in enumerate(og):
                    if g.startswith('_zeros'):
                        lines.append('    t%d = %s' % (k, g))
                        og[k] = 't%d' % k
                    if og[k] != 'None':
                        seen.append(og[k])
                seen += [e for e in ins[:n_args] if e in sel_in] + list(ins[n_args:])
                seen += [e for e in outs if e in sel_out and e in saved]
                lines += self._monitor_inputs(n, seen, ['input%d' % k for k in range(len(seen))],
                                              n.name + '_backward')
            lend = st.lend_slot.get(('b', s)) if st is not None else None
            if lend is not None:
                lines.append('    _lend(P[%d])' % lend)
            line_step[len(lines) + 1] = n
            lines.append('    r = b%d([%s], [%s], [%s], [%s]%s)'
                         % (s, ', '.join(og), in_list, out_list, aux_list, into))
            if lend is not None:
                lines.append('    _lend(None)')
            if monitor:
                # one output per argument of the forward node, as MXNet's backward node
                # has: 'output' alone, else 'output0', 'output1', ...
                lines += ['    M(%r, r[%d])' % ('%s_backward_output%s' % (
                    n.name, j if n_args > 1 else ''), j)
                    for j in range(n_args) if need[j]]
            # the user's arguments first: an operator may return one array for several
            # arguments (Operator.grad_same), offered to one of them, whose sum then
            # goes on in place; an argument's own value is taken (copied) before that
            order = sorted(range(n_args), key=lambda j: ins[j] not in arg_set)
            for j in order:
                e = ins[j]
                if not need[j]:
                    continue
                if e in have and ('g', e) in slot:     # summed into its buffer
                    lines.append('    g%d = _add(g%d, r[%d], out=p%d)'
                                 % (e, e, j, slot[('g', e)]))
                elif e in have:
                    lines.append('    g%d = g%d + r[%d]' % (e, e, j))
                else:
                    lines.append('    g%d = r[%d]' % (e, j))
                    if j in offer:      # declined: copied in, the entry is its buffer
                        lines.append('    if g%d is not %s:' % (e, offer[j]))
                        lines.append('        %s[...] = g%d' % (offer[j], e))
                        lines.append('        g%d = %s' % (e, offer[j]))
                    elif e in grad_slot:
                        # an argument's only contribution goes into the user's array now:
                        # it may be (a view of) a buffer a later step reuses (elemwise_add
                        # hands its head gradient on), and the storage plan does not track
                        # the user's arrays
                        lines.append('    if g%d is not G[%d]:' % (e, grad_slot[e]))
                        lines.append('        G[%d][...] = g%d' % (grad_slot[e], e))
                        lines.append('        g%d = G[%d]' % (e, grad_slot[e]))
                    elif e in arg_set and st is not None:
                        # (summed or added later: a copy where it lies in the buffers)
                        lines.append('    g%d = _own(g%d, P)' % (e, e))
                    have.add(e)
            for j in sorted(final_at.get(s, [])):
                lines += write_grad(j)
            # this node's output gradients and the forward arrays read for the last time
            # are used up: free them now (reference-count liveness, as in forward)
            dead = ['g%d' % e for e in outs if e in have and e not in arg_set]
            dead += ['v%d' % e for e, t in last_read.items() if t == s]
            lines.append('    del r%s' % ''.join(', ' + g for g in dead))
            have.difference_update(e for e in outs if e not in arg_set)
        if not ready:
            for j, req in enumerate(self.grad_reqs):
                if req != 'null':
                    lines += write_grad(j)
        lines.append('    return None')
        env['_zeros'] = lambda shape, dtype: xp.zeros(shape, dtype=dtype)
        env['_add'] = xp.add
        env['_own'] = _own_gradient(xp)
        env['_lend'] = lend_scratch
        fn, fname = self._compile('\n'.join(lines) + '\n', env, 'backward')
        return fn, fname, line_step


    # ------------------------------------------------------------------ storage run
    def storage(self):
        """The storage plan the executor runs (a :class:`Storage`), made once per plan."""
        if self._storage is None:
            self._storage = self._plan_storage()
        return self._storage

    def allocate(self):
        """The buffers of :meth:`storage`, allocated once: the list ``P`` of views that
        buffered :meth:`forward_fn` / :meth:`backward_fn` take (one per buffered entry, each
        at its offset in one arena, entries overlapping only where their lifetimes do not,
        or in place)."""
        st = self.storage()
        arena = self.xp.empty(st.arena, dtype=np.uint8)
        # offsets count from a 64-byte boundary (st.arena has the room; CuPy's memory is
        # aligned already)
        if self.xp is np and st.arena:
            arena = arena[-arena.ctypes.data % _ALIGN:]
        return [_view(arena[o:o + n].view(dt), shape, lay) for o, n, dt, shape, lay
                in zip(st.offset, st.nbytes, st.dtypes, st.shapes, st.layouts)] \
            + [arena[o:o + n] for o, n in st.lend]

    def _plan_storage(self):
        """Which entries live in the executor's buffers, and where.

        Buffered are the outputs of operators that write into ``out=`` arrays
        (:attr:`writes_into`: the executor copies a declined result in, so the entry is its
        buffer) or whose fast forward is a ufunc of matching dtypes, the gradients that a
        ``writes_into`` / ``grad_writes_into`` backward is offered (first contribution; the
        second, into the sum's buffer, where the first is another array; later ones into
        a buffer of their own for that step: ``Storage.grad_offer``) and gradients summed
        over fan-out. Every other result is adopted as the operator returns it and dropped after
        its last use; since it may be a view of its inputs (Reshape, BlockGrad), the
        buffers it may alias stay alive as long as it does. Lifetimes run over forward then
        backward steps; the forward arrays backward reads die at their last backward use
        (backward uses them up); outputs the user holds and the user's arguments,
        auxiliary states and gradients are never buffers. A declared in-place pair gives
        an output its input's storage when the input dies at that step with the same dtype
        and size. Entries are placed at offsets in one arena (:func:`_place`), so that the
        storage freed by several small arrays serves a larger one (separate blocks reused
        best-fit, as :meth:`memory_plan` counts, took 17% more on the CIFAR ResNet: its
        gradients grow as backward nears the input, while the arrays it frees are smaller).
        """
        xp = self.xp
        n_fwd = len(self.steps)
        heads = set(self.head_entries)
        ufunc = _ufunc_class(xp)
        mode, node_mode, roots, birth, death, inplace_src = {}, {}, {}, {}, {}, {}
        layout = {}         # buffered entries laid out other than in C order
        for s, n in enumerate(self.steps):
            op = self.run_op[id(n)]
            ins, outs = self.in_entries(n), self.out_entries(n)
            for e in ins:
                death[e] = max(death.get(e, s), s)
            in_roots = set().union(*(roots.get(e, ()) for e in ins))
            cand = [e for e in outs if e not in heads and self.nbytes(e) > 0]
            how = None
            if cand and op.writes_into:         # (with a state: an inference variant)
                how = 'into'
            elif cand and self.op_state[id(n)] is None:
                if len(outs) == 1 and ins and \
                        all(self.dtypes[e] == self.dtypes[outs[0]] for e in ins):
                    dts = [self.dtypes[e] for e in ins]
                    fns = [op.make_forward(xp, t, in_dtypes=dts) for t in (False, True)]
                    if all(fast and isinstance(f, ufunc) and f.nout == 1 and f.nin == len(ins)
                           for f, fast in fns):
                        how = 'ufunc'
            if how:
                node_mode[id(n)] = how
            for i, e in enumerate(outs):
                birth[e] = s
                death.setdefault(e, s)
                if how and e in cand:
                    mode[e] = how
                    roots[e] = {e}
                    if i == 0 and op.out_layout is not None:
                        layout[e] = op.out_layout
                    src = [ins[j] for j, i2 in n.op.inplace if i2 == i and j < len(ins)]
                    if src:
                        inplace_src[e] = src
                else:
                    roots[e] = set(in_roots)
        layout.update(self._training_layouts(mode, node_mode, layout))
        end = n_fwd + len(self.bwd_steps)
        for e in heads:
            death[e] = end
        # backward: gradients ('g', entry)
        for e, (node, _) in zip(self.head_entries, self.heads):
            if self.requires[e] and not (node.op is not None
                                         and (node.op.is_loss or node.op.no_grad)):
                birth[('g', e)] = death[('g', e)] = n_fwd      # the user's head gradient
                roots[('g', e)] = set()
        persistent = set(self.arg_entries) | set(self.aux_entries)
        # (backward step, argument position) -> the buffer offered for that gradient
        grad_offer = {}
        n_readers = collections.Counter(e for n in self.steps for e in self.in_entries(n))
        for t, n in enumerate(reversed(self.bwd_steps)):
            T = n_fwd + t
            op = n.op
            n_args = len(op.list_arguments())
            ins, outs = self.in_entries(n), self.out_entries(n)
            reads = [e for e in self._backward_reads(n) if e in death]
            og = [('g', e) for e in outs if ('g', e) in birth]
            for k in reads + og:
                death[k] = max(death[k], T)
            in_roots = set().union(*(roots.get(k, ()) for k in reads + og))
            offers = (op.writes_into or op.grad_writes_into) and self.op_state[id(n)] is None \
                and not op.wants_req
            # arguments whose gradient is the very array backward returns for another
            # (Operator.grad_same): one whose gradient has no other contribution (its entry
            # read by this node alone, no head, no argument of the user's) is offered the
            # buffer, the others alias it (else each is offered its own, and copied into)
            alias_of = {}
            for group in (op.grad_same if offers else ()):
                owner = next((j for j in group if j < n_args and self.requires[ins[j]]
                              and ins[j] not in persistent and ins[j] not in heads
                              and n_readers[ins[j]] == 1 and ('g', ins[j]) not in birth
                              and self.nbytes(ins[j]) > 0), None)
                if owner is not None:
                    alias_of.update((j, owner) for j in group if j != owner and j < n_args)

            def over_saved(k, j, ins=ins, outs=outs, op=op):
                # the buffer may lie over a forward array this step reads for the last
                # time (Operator.grad_inplace; _place checks that it dies here)
                src = [(outs if w == 'out' else ins)[i] for w, i, j2 in op.grad_inplace
                       if j2 == j and i < len(outs if w == 'out' else ins)]
                if src:
                    inplace_src[k] = src
            for j, e in enumerate(ins[:n_args]):
                if not self.requires[e] or e in persistent:
                    continue
                k = ('g', e)
                offer_j = offers and j not in alias_of
                if k not in birth:          # first contribution
                    birth[k] = death[k] = T
                    if offer_j and self.nbytes(e) > 0:
                        mode[k] = 'into'
                        roots[k] = {k}
                        grad_offer[(t, j)] = k
                        over_saved(k, j)
                    elif j in alias_of:
                        roots[k] = {('g', ins[alias_of[j]])}
                    else:
                        roots[k] = set(in_roots)
                else:                       # summed into its buffer
                    if k not in mode:
                        # written first by this sum: the buffer is needed from here (the
                        # first contribution is another array, kept alive by roots); an
                        # operator that writes into offered arrays computes this
                        # contribution straight into it, and the sum adds the first one
                        # to it there (a + b, the same bits as before)
                        birth[k] = T
                        if offer_j and self.nbytes(e) > 0:
                            grad_offer[(t, j)] = k
                            over_saved(k, j)
                    elif offer_j and self.nbytes(e) > 0:
                        # the buffer holds the sum so far: the contribution is computed
                        # into a buffer of its own, live at this step only, then added
                        tk = ('gt', e, T, j)
                        birth[tk] = death[tk] = T
                        mode[tk] = 'into'
                        roots[tk] = {tk}
                        grad_offer[(t, j)] = tk
                    mode.setdefault(k, 'sum')
                    roots[k] = roots[k] | {k}
                    death[k] = max(death[k], T)
        # a gradient's buffers lie as its forward array does (the operators that wrote
        # that layout read its gradient so: Operator.writes_layout)
        for k in mode:
            if isinstance(k, tuple) and k[1] in layout:
                layout[k] = layout[k[1]]
        # a buffer lives as long as any array that may alias it
        for k, rs in roots.items():
            for r in rs:
                if r != k:
                    death[r] = max(death[r], death[k])
        keys = sorted(mode, key=lambda k: (birth[k], str(k)))
        sizes = {k: self.nbytes(k[1] if isinstance(k, tuple) else k) for k in keys}
        same = {k: [s for s in inplace_src.get(k, ()) if s in sizes and sizes[s] == sizes[k]
                    and self.dtypes[s] == self.dtypes[_entry(k)]
                    and layout.get(s) == layout.get(k)]
                for k in keys}
        # scratch the CPU backend may need at a step (Operator.scratch_bytes; NumPy arrays
        # only): placed as entries live at that step alone, so the arena keeps room there
        scratch = {}
        if xp is np:
            bsteps = [('b', t, n) for t, n in enumerate(reversed(self.bwd_steps))]
            for kind, s, n in [('f', s, n) for s, n in enumerate(self.steps)] + bsteps:
                ins, outs = self.in_entries(n), self.out_entries(n)
                need = self.run_op[id(n)].scratch_bytes(
                    [self.shapes[e] for e in ins], [self.shapes[e] for e in outs],
                    [self.dtypes[e] for e in ins],
                    layouts=([layout.get(e) for e in ins], [layout.get(e) for e in outs]))
                if need > 0:
                    T = s if kind == 'f' else n_fwd + s
                    scratch[('scratch', kind, s)] = T
                    birth[('scratch', kind, s)] = death[('scratch', kind, s)] = T
                    sizes[('scratch', kind, s)] = need
        order = sorted(keys + list(scratch), key=lambda k: (birth[k], str(k)))
        arena, offset = _place(order, birth, death, sizes, same)
        # each such step is lent the largest stretch free there (at least its scratch)
        lend = {}
        for (_, kind, s), T in scratch.items():
            spans = sorted((offset[k], offset[k] + -(-sizes[k] // _ALIGN) * _ALIGN)
                           for k in keys if birth[k] <= T <= death[k] and sizes[k])
            lend[(kind, s)] = _largest_gap(spans, arena)
        # room to start the offsets at a 64-byte boundary of the allocation
        arena += _ALIGN if arena else 0
        st = Storage(self, keys, mode, node_mode, arena, offset, lend, layout)
        st.lifetimes = {k: (birth[k], death[k]) for k in keys}
        st.grad_offer = grad_offer
        st.lend_step = {(kind, s): T for (_, kind, s), T in scratch.items()}
        return st

    #: the activation layout a training plan keeps between operators that read it
    LAYOUT = 'channels_last'

    def _training_layouts(self, mode, node_mode, fixed):
        """{forward entry: LAYOUT} of a CPU plan that computes gradients: the buffered
        outputs (``mode``) whose producer writes :attr:`LAYOUT` given its inputs' layouts
        (:meth:`~symgraph.opdef.Operator.writes_layout`; a node run as a plain ufunc writes
        the layout all its inputs share) and whose every consumer reads it as it lies
        (:meth:`~symgraph.opdef.Operator.reads_layout`, or a ufunc node). Heads, the
        user's arrays and entries of ``fixed`` layout (inference variants) stay as they
        are; their gradients then lie as they do. ``SYMGRAPH_TRAINING_LAYOUT=0`` turns
        this off (read at each plan). Such arrays are strided arrays of the logical shape:
        an operator that was not asked reads them correctly, at the cost of a copy."""
        if self.xp is not np or not self.bwd_steps or _training_layout_off():
            return {}
        lay = self.LAYOUT
        users = collections.defaultdict(list)
        for n in self.steps:
            for pos, e in enumerate(self.in_entries(n)):
                users[e].append((n, pos))
        heads = set(self.head_entries)
        shapes = self.shapes
        chosen = {}
        for n in self.steps:
            outs = self.out_entries(n)
            e = outs[0]
            if e not in mode or e in heads or e in fixed or not users.get(e) \
                    or not 3 <= len(shapes[e]) <= 5 or self.dtypes[e] != np.float32:
                continue
            ins = self.in_entries(n)
            if node_mode.get(id(n)) == 'ufunc':
                writes = all(chosen.get(i) == lay and shapes[i] == shapes[e] for i in ins)
            else:
                op = self.run_op[id(n)]
                writes = op.writes_layout(lay, [shapes[i] for i in ins],
                                          [chosen.get(i) for i in ins])
            if writes and all(node_mode.get(id(c)) == 'ufunc' or self.run_op[id(c)].reads_layout(
                    pos, lay, [shapes[i] for i in self.in_entries(c)]) for c, pos in users[e]):
                chosen[e] = lay
        return chosen

    # ------------------------------------------------------------------ memory
    def memory_plan(self, is_train=True):
        """Storage ids by liveness: returns (assignment, planned bytes, naive bytes).

        Lifetimes run over forward steps and, in training, the backward steps; gradients
        are entries too. Freed blocks are reused best-fit; an operator's declared in-place
        pair lets an output take over the block of an input that dies at that step.
        """
        steps = self.steps
        n_fwd = len(steps)
        birth, death = {}, {}
        persistent = set(self.arg_entries) | set(self.aux_entries)
        for s, n in enumerate(steps):
            for e in self.out_entries(n):
                birth[e] = s
                death[e] = s
            for e in self.in_entries(n):
                death[e] = max(death.get(e, s), s)
        end = n_fwd + (len(self.bwd_steps) if is_train else 0)
        for e in self.head_entries:
            death[e] = end
        grads = {}
        if is_train:
            for e in self.saved:
                pos = [n_fwd + t for t, n in enumerate(reversed(self.bwd_steps))
                       if e in self.in_entries(n) or e in self.out_entries(n)]
                death[e] = max([death.get(e, 0)] + pos)
            for t, n in enumerate(reversed(self.bwd_steps)):
                for e in self.in_entries(n)[:len(n.op.list_arguments())]:
                    if self.requires[e] and e not in persistent:
                        key = ('g', e)
                        grads.setdefault(key, [n_fwd + t, n_fwd + t])
                        grads[key][0] = min(grads[key][0], n_fwd + t)
                producer = {self._e(n, i): n_fwd + t for i in range(n.num_outputs())}
                for e, t2 in producer.items():
                    if ('g', e) in grads:
                        grads[('g', e)][1] = max(grads[('g', e)][1], t2)
        items = [(birth[e], death[e], e, self.nbytes(e)) for e in birth if e not in persistent]
        items += [(b, d, k, self.nbytes(k[1])) for k, (b, d) in grads.items()]
        items.sort(key=lambda t: (t[0], str(t[2])))
        free, blocks, assign = [], [], {}
        live = []
        naive = sum(t[3] for t in items)
        inplace_of = {}
        for n in steps:
            ins, outs = self.in_entries(n), self.out_entries(n)
            for j, i in n.op.inplace:
                if j < len(ins) and i < len(outs):
                    inplace_of[outs[i]] = ins[j]
        for b, d, key, size in items:
            for item in [x for x in live if x[1] < b]:
                live.remove(item)
                free.append(assign[item[2]])
            src = inplace_of.get(key) if not isinstance(key, tuple) else None
            sid = None
            if src is not None and src in assign and death.get(src) == b \
                    and blocks[assign[src]] >= size:
                sid = assign[src]
                live = [x for x in live if x[2] != src]
            if sid is None:
                fits = [f for f in free if blocks[f] >= size]
                if fits:
                    sid = min(fits, key=lambda f: blocks[f])
                    free.remove(sid)
                else:
                    sid = len(blocks)
                    blocks.append(size)
            assign[key] = sid
            live.append((b, d, key))
        return assign, int(sum(blocks)), int(naive)


class Storage:
    """A plan's storage run: the buffered entries (forward entry ids and ``('g', entry)``
    gradients), each with a slot (its index in the views list ``P``), a byte ``offset`` in
    the ``arena`` (bytes), and how it is written (``mode``: 'into', 'ufunc' or 'sum');
    ``node_mode`` maps a node's id to 'into' or 'ufunc' (how its forward writes).
    """

    def __init__(self, plan, keys, mode, node_mode, arena, offset, lend=None, layout=None):
        self.keys = keys
        self.mode = mode
        self.node_mode = node_mode
        self.arena = arena
        self.slot = {k: i for i, k in enumerate(keys)}
        self.offset = [offset[k] for k in keys]
        # (offset, bytes) of the scratch lent around a step, by ('f' or 'b', step index):
        # the views follow the entries' in ``P`` (lend_slot); lend_step gives the step's
        # index in the run (forward steps, then backward ones) and lifetimes each entry's
        # (first, last) step in that count
        steps = sorted(lend or {})
        self.lend = [lend[k] for k in steps]
        self.lend_slot = {k: len(keys) + i for i, k in enumerate(steps)}
        ents = [k[1] if isinstance(k, tuple) else k for k in keys]
        self.nbytes = [plan.nbytes(e) for e in ents]
        self.dtypes = [plan.dtypes[e] for e in ents]
        self.shapes = [tuple(plan.shapes[e]) for e in ents]
        # per entry: the memory order of its buffer (None: C order; see Operator.out_layout)
        self.layouts = [(layout or {}).get(k) for k in keys]

    def forward_slots(self):
        return [i for i, k in enumerate(self.keys) if not isinstance(k, tuple)]

    def backward_slots(self):
        return [i for i, k in enumerate(self.keys) if isinstance(k, tuple)]

    @property
    def planned_bytes(self):
        return int(self.arena)


def _view(flat, shape, layout):
    """``flat`` (a 1-D view of the arena) as an array of logical ``shape`` lying in
    ``layout``: C order, or ``'channels_last'`` ((N, C, *S) with memory (N, *S, C))."""
    if layout != 'channels_last':
        return flat.reshape(shape)
    nd = len(shape)
    lay = flat.reshape((shape[0],) + tuple(shape[2:]) + (shape[1],))
    return lay.transpose((0, nd - 1) + tuple(range(1, nd - 1)))


#: byte alignment of every buffer in the arena (a cache line; oneDNN's and AVX-512's)
_ALIGN = 64


def _largest_gap(spans, arena):
    """(offset, bytes) of the largest stretch of [0, arena) that no (lo, hi) span covers
    (spans sorted by lo)."""
    best, end = (0, 0), 0
    for lo, hi in spans + [(arena, arena)]:
        if lo - end > best[1]:
            best = (end, lo - end)
        end = max(end, hi)
    return best


def _place(keys, birth, death, sizes, inplace):
    """Offsets in one arena for entries live over steps [birth, death] (both included).

    Entries are placed in ``keys`` order (by birth), each in the smallest gap left between
    the entries live at its birth that holds it (best fit; at the top, growing the arena,
    when none does), or at the offset of an ``inplace`` source that dies at its birth.
    The entries sharing storage so (in place) are then placed again as one, largest
    size x lifetime first, each at the lowest offset free over its lifetime
    (:func:`_place_by_area`), and that placement is taken where its arena is smaller
    (LeNet's training plan: 10.4 MB instead of 18.0: by birth, early small arrays split
    the storage that the larger later ones need).
    Returns (arena bytes, {key: offset}); two entries overlap only if their lifetimes do
    not, or in place.
    """
    offset, live, top = {}, [], 0
    group = {}          # key -> the first key of the entries sharing its storage in place
    for k in keys:
        b = birth[k]
        live = [x for x in live if death[x] >= b]
        size = -(-sizes[k] // _ALIGN) * _ALIGN
        if size == 0:
            offset[k] = 0
            continue
        src = next((s for s in inplace.get(k, ()) if s in live and death[s] == b), None)
        if src is not None:
            live.remove(src)
            offset[k] = offset[src]
            group[k] = group[src]
        else:
            spans = sorted((offset[x], offset[x] + -(-sizes[x] // _ALIGN) * _ALIGN)
                           for x in live)
            best, end = None, 0
            for lo, hi in spans:
                if lo - end >= size and (best is None or lo - end < best[0]):
                    best = (lo - end, end)
                end = max(end, hi)
            offset[k] = best[1] if best is not None else end
            group[k] = k
        top = max(top, offset[k] + size)
        live.append(k)
    members = {}
    for k, g in group.items():
        members.setdefault(g, []).append(k)
    spans = [(-(-sizes[g] // _ALIGN) * _ALIGN, min(birth[k] for k in ks),
              max(death[k] for k in ks), g) for g, ks in members.items()]
    top2, at = _place_by_area(spans, top)
    if top2 < top:
        for g, ks in members.items():
            for k in ks:
                offset[k] = at[g]
        top = top2
    return top, offset


def _place_by_area(spans, limit):
    """Offsets for blocks ``spans`` [(bytes, first step, last step, name)], largest
    bytes x steps first, each at the lowest offset where it overlaps no block placed
    before it whose steps overlap its own: (top, {name: offset}), or (``limit``, None) as
    soon as the top reaches ``limit``."""
    spans = sorted(spans, key=lambda t: (-t[0] * (t[2] - t[1] + 1), t[1], t[2]))
    n = len(spans)
    lo_a, hi_a = np.zeros(n, np.int64), np.zeros(n, np.int64)
    first_a, last_a = np.zeros(n, np.int64), np.zeros(n, np.int64)
    at, top = {}, 0
    for i, (size, first, last, name) in enumerate(spans):
        hit = np.flatnonzero((first_a[:i] <= last) & (last_a[:i] >= first))
        off = 0
        if hit.size:
            by_lo = hit[np.argsort(lo_a[hit], kind='stable')]
            ends = np.maximum.accumulate(hi_a[by_lo])       # the top below each block
            below = np.concatenate(([0], ends[:-1]))
            gaps = np.flatnonzero(lo_a[by_lo] - below >= size)
            off = int(below[gaps[0]] if gaps.size else ends[-1])
        top = max(top, off + size)
        if top >= limit:
            return limit, None
        lo_a[i], hi_a[i], first_a[i], last_a[i] = off, off + size, first, last
        at[name] = off
    return top, at


#: what a switch variable holding one of these means: off (``SYMGRAPH_TRAINING_LAYOUT``
#: here, ``SYMGRAPH_INFERENCE_PASSES`` in :mod:`.passes`)
OFF_WORDS = ('0', 'none', 'off', 'false', 'no')


def _training_layout_off():
    """Whether ``SYMGRAPH_TRAINING_LAYOUT`` switches the training plans' layouts off."""
    return os.environ.get('SYMGRAPH_TRAINING_LAYOUT', '').strip().lower() in OFF_WORDS


def _entry(k):
    """The entry id of a storage key (an entry id, or a tuple naming one second)."""
    return k[1] if isinstance(k, tuple) else k


def _ufunc_class(xp):
    """The ufunc type of the array module (NumPy's or CuPy's)."""
    try:
        return xp.ufunc
    except AttributeError:      # an array module without ufunc objects: none is buffered
        return ()


def _select(flag, entries):
    if flag is True:
        return list(entries)
    if not flag:
        return []
    return [entries[i] for i in flag if i < len(entries)]


def _own_gradient(xp):
    """``own(g, P)``: ``g``, or a copy of it where it lies in the executor's buffers
    (``P``, their views: storage that later steps reuse), for a plan on ``xp``."""
    def own(g, P):
        if P:
            arena = P[0]
            while getattr(arena.base, 'shape', None) is not None:     # (the allocation)
                arena = arena.base
            if isinstance(g, type(arena)) and xp.may_share_memory(g, arena):
                return g.copy()
        return g
    return own


def _bind_backward(op, xp, need, state=None, reqs=None):
    """``op.backward`` with the keywords its declared hooks ask for (``state=``,
    ``req=``, ``grad_out=``), bound once."""
    bwd = op.backward
    if (op.writes_into or op.grad_writes_into) and state is None and reqs is None:
        def run_into(out_grads, inputs, outputs, aux, grad_out=None):
            return bwd(xp, out_grads, inputs, outputs, aux, need, grad_out=grad_out)
        return run_into
    if state is not None or reqs is not None:
        kw = {}
        if state is not None:
            kw['state'] = state
        if reqs is not None:
            kw['req'] = reqs

        def run_stateful(out_grads, inputs, outputs, aux):
            return bwd(xp, out_grads, inputs, outputs, aux, need, **kw)
        return run_stateful

    def run(out_grads, inputs, outputs, aux):
        return bwd(xp, out_grads, inputs, outputs, aux, need)
    return run


def step_of(exc, fname, line_step):
    """The node whose generated line raised ``exc`` (or None)."""
    tb = exc.__traceback__
    node = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == fname:
            node = line_step.get(tb.tb_lineno)
        tb = tb.tb_next
    return node


def check_error(exc, fname, line_step, phase):
    node = step_of(exc, fname, line_step)
    if node is None:
        return None
    if isinstance(exc, MXNetError) and str(exc).startswith('Error in'):
        return None
    msg = 'Error in %s of %s: %s: %s' % (phase, node.describe(), type(exc).__name__, exc)
    # the same class where it is a symgraph error, else the symgraph class of its builtin,
    # so that ``except ValueError`` and the like keep working through the executor
    if isinstance(exc, MXNetError):
        return rewrap(exc, msg, whole=True)
    for builtin, cls in ((KeyError, UnknownNameError), (ValueError, ArgumentError),
                         (TypeError, ArgumentTypeError), (NotImplementedError, NotSupportedError),
                         (RuntimeError, UsageError)):
        if isinstance(exc, builtin):
            return cls(msg)
    return MXNetError(msg)
