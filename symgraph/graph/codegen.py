"""Code generation: a plan's forward and backward as straight-line Python functions.

Each node becomes one line calling a function its Step bound once
(``Step.forward_function``/``backward_function``) on local variables, and a ``del``
frees an array right after its last use, so that NumPy's allocator reuses the memory of
dead arrays and the peak follows the plan's lifetimes; results the storage run buffers are
computed into their views of the arena. The emitters read only the
:class:`~symgraph.graph.plan.Plan` (entries, steps, backward steps, head policy) and its
:class:`~symgraph.graph.storage.Storage`; the plan caches what they make.
"""
from __future__ import annotations

import collections
import itertools
import linecache
import time
import warnings
import weakref

from ..opdef import lend_scratch
from . import rules
from ..base import (MXNetError, ArgumentError, ArgumentTypeError, NotSupportedError,
                    UnknownNameError, UsageError, rewrap)

__all__ = ['gen_forward', 'gen_backward', 'check_error', 'step_of']

# numbers the generated code's file names (next() on a count is atomic: binds may run in
# several threads)
_counter = itertools.count(1)


def gen_forward(plan, is_train, monitor, keep_saved, buffered=False, profile=False):
    """(function, file name, {generated line: node}) of a plan's forward: see
    :meth:`Plan.forward_fn <symgraph.graph.plan.Plan.forward_fn>`.

    ``profile``: the profiler's instrumented variant, which takes a list ``T`` and appends
    a clock reading (``time.perf_counter_ns``) at its start and after each step (its call,
    its copies and its ``del``), so that step ``s`` ran from ``T[s]`` to ``T[s + 1]``; the
    plain variant has no such line at all."""
    env = {}
    st = plan.storage() if buffered else None
    lines = ['def forward(A, X, O, M=None, P=None%s):' % (', T=None' if profile else '')]
    if st is not None:
        lines += ['    p%d = P[%d]' % (k, k) for k in st.forward_slots()]
    # heads an operator may compute straight into the user's output arrays O
    head_slot = {}
    for j, e in enumerate(plan.head_entries):
        head_slot.setdefault(e, j)
    line_step = {}
    for j, e in enumerate(plan.arg_entries):
        lines.append('    v%d = A[%d]' % (e, j))
    for j, e in enumerate(plan.aux_entries):
        lines.append('    v%d = X[%d]' % (e, j))
    stamp = ['    _t(_now())'] if profile else []
    if profile:
        lines += ['    _t = T.append'] + stamp
    keep = set(plan.head_entries) | set(plan.arg_entries) | set(plan.aux_entries)
    if keep_saved:
        keep |= set(plan.saved)
    last_use = {}
    for s, n in enumerate(plan.steps):
        for e in plan.in_entries(n):
            last_use[e] = s
    for s, n in enumerate(plan.steps):
        if monitor > 1:
            lines += _monitor_inputs(plan, n, plan.in_entries(n), n.op.list_arguments()
                                    + n.op.list_auxiliary_states())
        mode = st.node_mode.get(id(n)) if st is not None else None
        fn, fast = plan.step(n).forward_function(
            is_train, [plan.dtypes[e] for e in plan.in_entries(n)], into=mode == 'into')
        env['f%d' % s] = fn
        ins = ', '.join('v%d' % e for e in plan.in_entries(n))
        outs = plan.out_entries(n)
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
        dead = [e for e in set(plan.in_entries(n)) if last_use.get(e) == s and e not in keep]
        dead += [e for e in outs if e not in keep and e not in last_use]
        if dead:
            lines.append('    del %s' % ', '.join('v%d' % e for e in sorted(dead)))
        lines += stamp
    heads = ''.join('v%d, ' % e for e in plan.head_entries)
    saved = ''.join('v%d, ' % e for e in plan.saved) if keep_saved else ''
    lines.append('    return (%s), (%s)' % (heads, saved))
    env['_lend'] = lend_scratch
    env['_now'] = time.perf_counter_ns
    fn, fname = _compile('\n'.join(lines) + '\n', env, 'forward')
    return fn, fname, line_step


def _monitor_inputs(plan, node, entries, names, prefix=None):
    """Generated lines reporting a node's inputs before it runs, as MXNet's
    ``monitor_all`` does: an input that is a variable under the variable's name first,
    then every input as ``<node>_<input name>``. ``entries`` holds entry ids, or the
    names of generated locals."""
    lines = []
    for e, name in zip(entries, names):
        var = 'v%d' % e if isinstance(e, int) else e
        if isinstance(e, int) and plan.entry_info[e][0].op is None:
            lines.append('    M(%r, %s)' % (plan.entry_info[e][0].name, var))
        lines.append('    M(%r, %s)' % ('%s_%s' % (prefix or node.name, name), var))
    return lines


def gen_backward(plan, monitor=0, buffered=False, ready=False, profile=False):
    """(function, file name, {generated line: node}) of a plan's backward: see
    :meth:`Plan.backward_fn <symgraph.graph.plan.Plan.backward_fn>`.

    ``profile``: as for :func:`gen_forward` (``T``, one reading at the start and one after
    each backward step); without ``ready`` the gradients written at the end take one more
    reading, after them."""
    xp = plan.xp
    env = {}
    st = plan.storage() if buffered else None
    lines = ['def backward(S, OG, G, M=None, P=None, R=None%s):'
             % (', T=None' if profile else '')]
    stamp = ['    _t(_now())'] if profile else []
    if profile:
        lines += ['    _t = T.append'] + stamp
    line_step = {}
    if plan.saved:
        lines.append('    %s, = S' % ', '.join('v%d' % e for e in plan.saved))
        # S a list: it is used up, each forward array going after its last use here
        lines.append('    if S.__class__ is list:')
        lines.append('        S.clear()')
    if st is not None:
        lines += ['    p%d = P[%d]' % (k, k) for k in st.backward_slots()]
    slot = st.slot if st is not None else {}
    last_read = {}
    for t, n in enumerate(reversed(plan.bwd_steps)):
        for e in plan.backward_reads(n):
            last_read[e] = t
    # head gradients, as the plan's head policy gives them (an output listed twice takes
    # the last one's, as MXNet 1.9.1 does)
    for name in plan.repeated_heads():
        warnings.warn('output %s is listed more than once among the outputs: backward uses '
                      'the head gradient of the last one only, as MXNet does' % name,
                      stacklevel=4)
    last = plan.head_gradients()
    have = set()
    arg_set = set(plan.arg_entries)
    for e, j in last.items():
        lines.append('    g%d = OG[%d]' % (e, j))
        have.add(e)
    saved = set(plan.saved)
    # arguments bound with 'write' whose gradient has a single contribution: the
    # operator making it may write it straight into the user's gradient array
    contributions = collections.Counter(last)
    for n in plan.bwd_steps:
        n_args = len(n.op.list_arguments())
        contributions.update(e for e in plan.in_entries(n)[:n_args] if plan.requires[e])
    grad_slot = {e: j for j, (e, req) in enumerate(zip(plan.arg_entries, plan.grad_reqs))
                 if req == 'write' and contributions[e] == 1}

    def write_grad(j):
        """The lines that write argument j's gradient into G[j] (and, in ready mode,
        report it)."""
        e, req = plan.arg_entries[j], plan.grad_reqs[j]
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
        for j, s in plan.final_steps().items():
            final_at.setdefault(s, []).append(j)
        for j in sorted(final_at.pop(-1, [])):
            lines += write_grad(j)
    for s, n in enumerate(reversed(plan.bwd_steps)):
        op = n.op
        n_args = len(op.list_arguments())
        ins = plan.in_entries(n)
        outs = plan.out_entries(n)
        need = [plan.requires[e] for e in ins[:n_args]]
        og = []
        for i, e in enumerate(outs):
            if op.is_loss or i >= op.num_visible_outputs():
                og.append('None')
            elif e in have:
                og.append('g%d' % e)
            else:   # an output nobody differentiates: its gradient is zero
                env['z%d' % e] = (plan.shapes[e], plan.dtypes[e])
                og.append('_zeros(*z%d)' % e)
        sel_in, sel_out = plan.backward_needs(n)
        in_list = ', '.join('v%d' % e if e in sel_in else 'None' for e in ins[:n_args])
        out_list = ', '.join('v%d' % e if e in sel_out and e in saved else 'None'
                             for e in outs)
        aux_list = ', '.join('v%d' % e for e in ins[n_args:])
        reqs = None
        if op.wants_req:
            # operators that follow MXNet's req protocol (Custom) see 'add' where an
            # argument bound with grad_req='add' feeds them directly
            arg_req = dict(zip(plan.arg_entries, plan.grad_reqs))
            reqs = [('add' if arg_req.get(e) == 'add' else 'write') if nd else 'null'
                    for e, nd in zip(ins[:n_args], need)]
        env['b%d' % s] = plan.step(n).backward_function(
            need, reqs, into=op.writes_into or rules.GRAD_WRITES_INTO.ask(op))
        into = ''
        # the planned buffers offered per argument position (Storage.grad_offer): a
        # gradient's buffer to its first contribution, or to the second where the first
        # is another array; a buffer of its own to a later one (then summed in)
        offer = {j: 'p%d' % slot[st.grad_offer[(s, j)]] for j in range(n_args)
                 if st is not None and (s, j) in st.grad_offer}
        if (op.writes_into or rules.GRAD_WRITES_INTO.ask(op)) and (
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
            lines += _monitor_inputs(plan, n, seen, ['input%d' % k for k in range(len(seen))],
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
        # arguments (rules.GRAD_SAME), offered to one of them, whose sum then
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
        lines += stamp
    if not ready:
        for j, req in enumerate(plan.grad_reqs):
            if req != 'null':
                lines += write_grad(j)
        lines += stamp
    lines.append('    return None')
    env['_zeros'] = lambda shape, dtype: xp.zeros(shape, dtype=dtype)
    env['_add'] = xp.add
    env['_own'] = _own_gradient(xp)
    env['_lend'] = lend_scratch
    env['_now'] = time.perf_counter_ns
    fn, fname = _compile('\n'.join(lines) + '\n', env, 'backward')
    return fn, fname, line_step


def _compile(src, env, name):
    """Compile generated source ``src`` defining function ``name`` in ``env``: (the
    function, its file name)."""
    fname = '<symgraph-plan-%d-%s>' % (next(_counter), name)
    code = compile(src, fname, 'exec')
    # register the source so tracebacks show the generated line, for as long as the
    # function lives: linecache never drops such entries itself, and every bind
    # compiles new functions
    linecache.cache[fname] = (len(src), None, src.splitlines(True), fname)
    exec(code, env)
    weakref.finalize(env[name], linecache.cache.pop, fname, None)
    return env[name], fname


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
