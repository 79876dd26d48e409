"""Compile a bound graph once into a plan: its data, order and backward steps.

The plan numbers every entry (an output of a node), fits each step's operator to the
inferred shapes and binds it to its node once (``Operator.bind``: the
:class:`~symgraph.opdef.Step` that owns what the operator keeps, dropped with the plan),
decides which entries need a gradient, generates the backward steps
(only for what needs a gradient) and which forward arrays backward reads, and holds the
head policy (which outputs take a head gradient). Two modules work from it: the storage
run (:mod:`.storage`: reference-count lifetimes with the real itemsize, buffers in one
arena, layouts) and code generation (:mod:`.codegen`: straight-line Python functions for
forward and backward); the plan makes each once and caches it.
"""
from __future__ import annotations

import numpy as np

from ..opdef import bind_step
from . import codegen
from .codegen import check_error
from .rules import instead
from .storage import allocate, plan_storage

__all__ = ['Plan', 'check_error']


class Plan:
    """Forward/backward program of a graph with fixed shapes and dtypes.

    order : topologically ordered nodes; arg_nodes / aux_nodes : Variables.
    shapes, dtypes : dict (node index, output) -> shape / dtype.
    grad_reqs : per argument, 'write', 'add' or 'null'.
    heads : list of (node, output index).
    ctx : the bind's context, handed to ``Operator.bind`` (opaque here).
    steps : id(node) -> :class:`~symgraph.opdef.Step`, those of another plan of the same
        bind (:attr:`bound`) this one reuses for the nodes it keeps (the training fusion's
        unfused plan, the inference passes' plan): one Step per node and bind.
    aliases : id(node) -> node of ``order`` standing for it (see
        :func:`symgraph.graph.passes.fuse_for_training`).
    """

    def __init__(self, order, arg_nodes, aux_nodes, heads, shapes, dtypes, grad_reqs, xp,
                 ctx=None, steps=None, aliases=None):
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
        # the operator each step runs (rules.instead): for its node (SyncBatchNorm's
        # default key is its node's name), then fitted to the inferred shapes
        # (mx.sym.zeros(shape=(0, H)) makes arrays of the shape its consumer gave)
        shape_of = self.shapes
        self.run_op = {}
        for n in self.steps:
            ins, outs, _ = self._io[id(n)]
            op = instead(instead(n.op, 'node', n.name), 'shapes',
                         [shape_of[e] for e in ins], [shape_of[e] for e in outs])
            in_dtypes = [self.dtypes[e] for e in ins]
            if in_dtypes and in_dtypes[0].kind == 'V':      # bfloat16 kernels' variants
                op = instead(op, 'bfloat16', in_dtypes)
            self.run_op[id(n)] = op
        # one Step per node (Operator.bind: what the operator keeps, its state, lives
        # there), bound with the plan, as MXNet's bind makes a Custom operator's CustomOp;
        # ``steps`` (id(node) -> Step) hands over those another plan of the same bind made
        # (the inference passes' plan and the unfused one reuse the bound plan's for the
        # nodes they keep)
        steps = steps or {}
        self.bound = {}
        for n in self.steps:
            ins = self._io[id(n)][0]
            got = steps.get(id(n))
            if got is None:
                got = bind_step(self.run_op[id(n)], ctx, [shape_of[e] for e in ins],
                                [self.dtypes[e] for e in ins])
                got.xp = xp
            self.bound[id(n)] = got
        self._requires_grad()
        self._fwd_cache = {}
        self._bwd_cache = {}
        # the storage run (Storage), planned at the first buffered forward_fn/backward_fn:
        # a pass that rewrites the steps (fusion, folding) must run before that
        self._storage = None

    def step(self, node):
        """The :class:`~symgraph.opdef.Step` bound for ``node`` (a step of the plan)."""
        return self.bound[id(node)]

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
            saved.update(needed(op.needs_inputs, ins[:n_args]))
            saved.update(ins[n_args:])
            saved.update(needed(op.needs_outputs, outs))
            saved.update(outs[op.num_visible_outputs():])   # hidden outputs are for backward
        self.saved = sorted(saved)
        self.saved_set = saved

    def backward_needs(self, n):
        """(argument entries, set of output entries) of node ``n`` that its backward step
        asks for (:attr:`~symgraph.opdef.Operator.needs_inputs` /
        :attr:`~symgraph.opdef.Operator.needs_outputs`; hidden outputs always)."""
        op = n.op
        n_args = len(op.list_arguments())
        ins, outs = self.in_entries(n), self.out_entries(n)
        return (needed(op.needs_inputs, ins[:n_args]),
                set(needed(op.needs_outputs, outs)) | set(outs[op.num_visible_outputs():]))

    def backward_reads(self, n):
        """The forward arrays (entry ids) the backward step of node ``n`` reads."""
        n_args = len(n.op.list_arguments())
        sel_in, sel_out = self.backward_needs(n)
        return set(sel_in) | set(self.in_entries(n)[n_args:]) | (sel_out & self.saved_set)

    def head_gradients(self):
        """The head policy: {head entry: ``j``}, the head gradient ``OG[j]`` backward
        starts from, in the order of the heads. None for loss layers and no-grad outputs
        (they make their own, or none) nor for outputs nothing differentiates; an output
        listed twice takes the last one's, as MXNet 1.9.1 does (:meth:`repeated_heads`)."""
        last = {}
        for j, (e, (node, _)) in enumerate(zip(self.head_entries, self.heads)):
            if self.requires[e] and not (node.op is not None
                                         and (node.op.is_loss or node.op.no_grad)):
                last[e] = j
        return last

    def repeated_heads(self):
        """The names of the outputs that take a head gradient and are listed again (one
        name per repetition), whose earlier head gradients backward ignores."""
        seen, names = set(), []
        for e, (node, _) in zip(self.head_entries, self.heads):
            if self.requires[e] and not (node.op is not None
                                         and (node.op.is_loss or node.op.no_grad)):
                if e in seen:
                    names.append(node.output_names()[self.entry_info[e][1]])
                seen.add(e)
        return names

    # ------------------------------------------------------------------ code
    def forward_fn(self, is_train, monitor=0, keep_saved=None, buffered=False, profile=False):
        """The compiled forward; it returns what backward needs when ``keep_saved``
        (default: in training), so that backward may also follow an inference forward,
        as MXNet allows.

        ``monitor``: 0 no monitor (the function takes no callback and does no per-node
        work for one); 1 the function calls ``M(name, array)`` on every output of every
        node, hidden ones included; 2 also on each node's inputs before it runs (MXNet's
        ``monitor_all``).

        ``buffered``: the function takes ``P``, the views of :meth:`storage` (from
        :meth:`allocate`), and computes the outputs the storage plan buffers into them.

        ``profile``: the profiler's instrumented variant (one more argument, ``T``: see
        :func:`~symgraph.graph.codegen.gen_forward`), generated apart from the plain one."""
        keep_saved = bool(is_train) if keep_saved is None else bool(keep_saved)
        key = (bool(is_train), int(monitor), keep_saved, bool(buffered), bool(profile))
        if key not in self._fwd_cache:
            self._fwd_cache[key] = codegen.gen_forward(self, *key)
        return self._fwd_cache[key]

    def backward_fn(self, monitor=0, buffered=False, ready=False, profile=False):
        """The compiled backward; with ``monitor`` (1 or 2, as for :meth:`forward_fn`) it
        takes a callback ``M`` and reports each backward step's input gradients as
        ``<node>_backward_output<i>`` (and with 2, its inputs before it runs).
        ``buffered``: as for :meth:`forward_fn` (gradients into the storage plan's buffers).
        Given the forward arrays ``S`` as a list, the function empties it and drops each
        array after its last use.

        With ``ready`` it also takes a callback ``R`` and calls ``R(j)`` as soon as the
        gradient of argument ``j`` is final (written into ``G[j]``), in the order of
        :meth:`grad_ready_order`; without, every gradient is written at the end and the
        function has no such calls at all.

        ``profile``: the profiler's instrumented variant (see :meth:`forward_fn`)."""
        key = (int(monitor), bool(buffered), bool(ready), bool(profile))
        if key not in self._bwd_cache:
            self._bwd_cache[key] = codegen.gen_backward(self, *key)
        return self._bwd_cache[key]

    def final_steps(self):
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
        final = self.final_steps()
        return sorted(final, key=lambda j: (final[j], j))

    # ------------------------------------------------------------------ storage run
    def storage(self):
        """The storage plan the executor runs (a :class:`~symgraph.graph.storage.Storage`),
        made once per plan."""
        if self._storage is None:
            self._storage = plan_storage(self)
        return self._storage

    def allocate(self):
        """The buffers of :meth:`storage`, allocated once: the list ``P`` of views that
        buffered :meth:`forward_fn` / :meth:`backward_fn` take (one per buffered entry, each
        at its offset in one arena, entries overlapping only where their lifetimes do not,
        or in place)."""
        return allocate(self.storage(), self.xp)


def needed(flag, entries):
    """The ``entries`` an operator's ``needs_inputs``/``needs_outputs`` names (True: all,
    False: none, else a tuple of positions); the plan's saved arrays and the autograd
    tape's use it alike."""
    if flag is True:
        return list(entries)
    if not flag:
        return []
    return [entries[i] for i in flag if i < len(entries)]
