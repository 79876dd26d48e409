"""The storage run of a plan: which entries live in the executor's buffers, where, and in
which memory layout.

:func:`plan_storage` takes a :class:`~symgraph.graph.plan.Plan` (its entries, steps,
backward steps and head policy) and decides, from reference-count lifetimes over the
forward then the backward steps, which results are computed into buffers of one arena and
at which offsets (:func:`_place`), which gradients an operator is offered, the scratch
lent around a step, and which activations a CPU training plan keeps channels last
(:func:`training_layouts`). The lifetimes also give the planned peak that ``debug_str``
prints. :func:`allocate` makes the arena and its views. This module reads the plan and
never generates code (:mod:`.codegen` does).
"""
from __future__ import annotations

import collections
import itertools

import numpy as np

from .. import config
from . import rules

__all__ = ['Storage', 'plan_storage', 'allocate', 'training_layouts', 'place_layout',
           'LAYOUT']

#: the activation layout a training plan keeps between operators that read it
LAYOUT = 'channels_last'


class Storage:
    """A plan's storage run: the buffered entries (forward entry ids and ``('g', entry)``
    gradients), each with a slot (its index in the views list ``P``), a byte ``offset`` in
    the ``arena`` (bytes), and how it is written (``mode``: 'into', 'ufunc' or 'sum');
    ``node_mode`` maps a node's id to 'into' or 'ufunc' (how its forward writes).

    Made by :func:`plan_storage`, which also sets ``lifetimes``, ``grad_offer``,
    ``lend_step``, ``peak_bytes`` (the planned peak of a run: the arena and the arrays the
    operators return, alive at one step, each counted as an array of its own even where it
    is a view) and ``naive_bytes`` (every array of a run in storage of its own).
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
        # per entry: the memory order of its buffer (None: C order; see rules.OUT_LAYOUT)
        self.layouts = [(layout or {}).get(k) for k in keys]

    def forward_slots(self):
        return [i for i, k in enumerate(self.keys) if not isinstance(k, tuple)]

    def backward_slots(self):
        return [i for i, k in enumerate(self.keys) if isinstance(k, tuple)]

    @property
    def planned_bytes(self):
        return int(self.arena)



def plan_storage(plan):
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
    (or item size: ``rules.INPLACE_ANY_DTYPE``), size and layout. Entries are placed at offsets in one arena (:func:`_place`), so that the
    storage freed by several small arrays serves a larger one (separate blocks reused
    best-fit took 17% more on the CIFAR ResNet: its gradients grow as backward nears the
    input, while the arrays it frees are smaller).

    The same lifetimes give the run's planned peak (:attr:`Storage.peak_bytes`): the arena
    plus the most bytes of the arrays it leaves to the operators that are alive at one step.
    """
    xp = plan.xp
    n_fwd = len(plan.steps)
    heads = set(plan.head_entries)
    ufunc = _ufunc_class(xp)
    mode, node_mode, roots, birth, death, inplace_src = {}, {}, {}, {}, {}, {}
    layout = {}         # buffered entries laid out other than in C order
    any_dtype = set()   # outputs whose in-place source may have another dtype of its size
    for s, n in enumerate(plan.steps):
        op = plan.run_op[id(n)]
        ins, outs = plan.in_entries(n), plan.out_entries(n)
        for e in ins:
            death[e] = max(death.get(e, s), s)
        in_roots = set().union(*(roots.get(e, ()) for e in ins))
        cand = [e for e in outs if e not in heads and plan.nbytes(e) > 0]
        how = None
        if cand and op.writes_into:         # (with a state: an inference variant)
            how = 'into'
        elif cand and len(outs) == 1 and ins and \
                all(plan.dtypes[e] == plan.dtypes[outs[0]] for e in ins):
            # (the Step's forward function is the operator's fast one where it has one: an
            # operator that keeps a state has none)
            dts = [plan.dtypes[e] for e in ins]
            fns = [op.fast_forward(xp, t, dts) for t in (False, True)]
            if all(isinstance(f, ufunc) and f.nout == 1 and f.nin == len(ins) for f in fns):
                how = 'ufunc'
        if how:
            node_mode[id(n)] = how
        for i, e in enumerate(outs):
            birth[e] = s
            death.setdefault(e, s)
            if how and e in cand:
                mode[e] = how
                roots[e] = {e}
                lay = rules.OUT_LAYOUT.ask(op) if i == 0 else None
                if lay is not None:
                    layout[e] = lay
                src = [ins[j] for j, i2 in n.op.inplace if i2 == i and j < len(ins)]
                if src:
                    inplace_src[e] = src
                    if rules.INPLACE_ANY_DTYPE.ask(n.op):
                        any_dtype.add(e)
            else:
                roots[e] = set(in_roots)
    layout.update(training_layouts(plan, mode, node_mode, layout))
    end = n_fwd + len(plan.bwd_steps)
    # (a head the user holds dies with the forward, unless backward reads it)
    head_death = {e: end if e in plan.saved_set else n_fwd - 1 for e in heads}
    for e in heads:
        death[e] = end
    # backward: gradients ('g', entry)
    users = [('g', e) for e in plan.head_gradients()]    # the user's head gradients
    for k in users:
        birth[k] = death[k] = n_fwd
        roots[k] = set()
    # a summed gradient's first contribution where another array: (first, last step, key)
    first_arrays = []
    persistent = set(plan.arg_entries) | set(plan.aux_entries)
    # (backward step, argument position) -> the buffer offered for that gradient
    grad_offer = {}
    n_readers = collections.Counter(e for n in plan.steps for e in plan.in_entries(n))
    for t, n in enumerate(reversed(plan.bwd_steps)):
        T = n_fwd + t
        op = n.op
        n_args = len(op.list_arguments())
        ins, outs = plan.in_entries(n), plan.out_entries(n)
        reads = [e for e in plan.backward_reads(n) if e in death]
        og = [('g', e) for e in outs if ('g', e) in birth]
        for k in reads + og:
            death[k] = max(death[k], T)
        in_roots = set().union(*(roots.get(k, ()) for k in reads + og))
        offers = (op.writes_into or rules.GRAD_WRITES_INTO.ask(op)) and not op.wants_req
        # arguments whose gradient is the very array backward returns for another
        # (rules.GRAD_SAME): one whose gradient has no other contribution (its entry
        # read by this node alone, no head, no argument of the user's) is offered the
        # buffer, the others alias it (else each is offered its own, and copied into)
        alias_of = {}
        for group in (rules.GRAD_SAME.ask(op) if offers else ()):
            owner = next((j for j in group if j < n_args and plan.requires[ins[j]]
                          and ins[j] not in persistent and ins[j] not in heads
                          and n_readers[ins[j]] == 1 and ('g', ins[j]) not in birth
                          and plan.nbytes(ins[j]) > 0), None)
            if owner is not None:
                alias_of.update((j, owner) for j in group if j != owner and j < n_args)

        def over_saved(k, j, ins=ins, outs=outs, op=op):
            # the buffer may lie over a forward array this step reads for the last
            # time (rules.GRAD_INPLACE; _place checks that it dies here)
            src = [(outs if w == 'out' else ins)[i] for w, i, j2 in rules.GRAD_INPLACE.ask(op)
                   if j2 == j and i < len(outs if w == 'out' else ins)]
            if src:
                inplace_src[k] = src
        for j, e in enumerate(ins[:n_args]):
            if not plan.requires[e] or e in persistent:
                continue
            k = ('g', e)
            offer_j = offers and j not in alias_of
            if k not in birth:          # first contribution
                birth[k] = death[k] = T
                if offer_j and plan.nbytes(e) > 0:
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
                    first_arrays.append((birth[k], T, k))
                    birth[k] = T
                    if offer_j and plan.nbytes(e) > 0:
                        grad_offer[(t, j)] = k
                        over_saved(k, j)
                elif offer_j and plan.nbytes(e) > 0:
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
    own = [(birth[k], head_death.get(k, death[k]), k) for k in birth
           if k not in mode and k not in users] + first_arrays
    # a gradient's buffers lie as its forward array does (the operators that wrote
    # that layout read its gradient so: rules.WRITES_LAYOUT)
    for k in mode:
        if isinstance(k, tuple) and k[1] in layout:
            layout[k] = layout[k[1]]
    # a buffer lives as long as any array that may alias it
    for k, rs in roots.items():
        for r in rs:
            if r != k:
                death[r] = max(death[r], death[k])
    keys = sorted(mode, key=lambda k: (birth[k], str(k)))
    sizes = {k: plan.nbytes(k[1] if isinstance(k, tuple) else k) for k in keys}
    same = {k: [s for s in inplace_src.get(k, ()) if s in sizes and sizes[s] == sizes[k]
                and (plan.dtypes[s] == plan.dtypes[_entry(k)] or (
                    k in any_dtype
                    and plan.dtypes[s].itemsize == plan.dtypes[_entry(k)].itemsize))
                and layout.get(s) == layout.get(k)]
            for k in keys}
    # scratch the CPU backend may need at a step (rules.SCRATCH_BYTES; NumPy arrays
    # only): placed as entries live at that step alone, so the arena keeps room there
    scratch = {}
    if xp is np:
        bsteps = [('b', t, n) for t, n in enumerate(reversed(plan.bwd_steps))]
        for kind, s, n in [('f', s, n) for s, n in enumerate(plan.steps)] + bsteps:
            ins, outs = plan.in_entries(n), plan.out_entries(n)
            need = rules.SCRATCH_BYTES.ask(
                plan.run_op[id(n)], [plan.shapes[e] for e in ins],
                [plan.shapes[e] for e in outs], [plan.dtypes[e] for e in ins],
                ([layout.get(e) for e in ins], [layout.get(e) for e in outs]))
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
    st = Storage(plan, keys, mode, node_mode, arena, offset, lend, layout)
    st.lifetimes = {k: (birth[k], death[k]) for k in keys}
    st.grad_offer = grad_offer
    st.lend_step = {(kind, s): T for (_, kind, s), T in scratch.items()}
    st.peak_bytes = arena + _most_alive(own, plan, end)
    # for drawings of the plan (symgraph.viz.memory): the arrays the operators return,
    # (first step, last step, key), and the scratch asked for at a step, {key: (step, bytes)}
    st.own_spans = own
    st.scratch = {k: (T, sizes[k]) for k, T in scratch.items()}
    st.naive_bytes = sum(plan.nbytes(_entry(k)) for k in birth if k not in users
                         and (not isinstance(k, tuple) or k[0] == 'g'))
    return st

#: the activation layout a training plan keeps between operators that read it


def training_layouts(plan, mode, node_mode, fixed):
    """{forward entry: LAYOUT} of a CPU plan that computes gradients: the buffered
    outputs (``mode``) whose producer writes :data:`LAYOUT` given its inputs' layouts
    (:data:`~symgraph.graph.rules.WRITES_LAYOUT`; a node run as a plain ufunc writes
    the layout all its inputs share) and whose every consumer reads it as it lies
    (:data:`~symgraph.graph.rules.READS_LAYOUT`, or a ufunc node). Heads, the
    user's arrays and entries of ``fixed`` layout (inference variants) stay as they
    are; their gradients then lie as they do. ``SYMGRAPH_TRAINING_LAYOUT=0`` turns
    this off (read at each plan). Such arrays are strided arrays of the logical shape:
    an operator that was not asked reads them correctly, at the cost of a copy."""
    if plan.xp is not np or not plan.bwd_steps or _training_layout_off():
        return {}
    lay = LAYOUT
    users = collections.defaultdict(list)
    for n in plan.steps:
        for pos, e in enumerate(plan.in_entries(n)):
            users[e].append((n, pos))
    heads = set(plan.head_entries)
    shapes = plan.shapes
    chosen = {}

    def readers(n):
        return users.get(plan.out_entries(n)[0])

    def writes(n):
        e = plan.out_entries(n)[0]
        if e not in mode or e in heads or e in fixed \
                or not 3 <= len(shapes[e]) <= 5 or plan.dtypes[e] != np.float32:
            return None
        ins = plan.in_entries(n)
        if node_mode.get(id(n)) == 'ufunc':
            ok = all(chosen.get(i) == lay and shapes[i] == shapes[e] for i in ins)
        else:
            ok = rules.WRITES_LAYOUT.ask(plan.run_op[id(n)], lay, [shapes[i] for i in ins],
                                         [chosen.get(i) for i in ins])
        return True if ok else None

    def reads(c, pos):
        return node_mode.get(id(c)) == 'ufunc' or rules.READS_LAYOUT.ask(
            plan.run_op[id(c)], pos, lay, [shapes[i] for i in plan.in_entries(c)])

    def keep(n, _):
        chosen[plan.out_entries(n)[0]] = lay
    place_layout(plan.steps, readers, writes, reads, keep)
    return chosen


def place_layout(nodes, readers, writes, reads, keep):
    """The one rule of channels-last placement, for the inference ``layout`` pass
    (:func:`symgraph.graph.passes.layout`) and a training plan's buffers
    (:func:`training_layouts`) alike: for each of ``nodes`` in order, whose output 0 has
    readers (``readers(node)``: [(reader, input position)], or None), whose producer
    writes :data:`LAYOUT` (``writes(node)``: None to decline, else what ``keep`` is
    given) and that every reader reads as it lies (``reads(reader, position)``), calls
    ``keep(node, what writes gave)`` at once (a later node's answers may depend on it).
    """
    for n in nodes:
        users = readers(n)
        if not users:
            continue
        how = writes(n)
        if how is not None and all(reads(c, pos) for c, pos in users):
            keep(n, how)


def allocate(st, xp):
    """The buffers of storage plan ``st`` on array module ``xp``, allocated once: the list
    ``P`` of views that buffered forward and backward functions take (one per buffered
    entry, each at its offset in one arena, entries overlapping only where their
    lifetimes do not, or in place), then the scratch views lent around steps."""
    arena = xp.empty(st.arena, dtype=np.uint8)
    # offsets count from a 64-byte boundary (st.arena has the room; CuPy's memory is
    # aligned already)
    if xp is np and st.arena:
        arena = arena[-arena.ctypes.data % _ALIGN:]
    return [_view(arena[o:o + n].view(dt), shape, lay) for o, n, dt, shape, lay
            in zip(st.offset, st.nbytes, st.dtypes, st.shapes, st.layouts)] \
        + [arena[o:o + n] for o, n in st.lend]


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


def _training_layout_off():
    """Whether ``SYMGRAPH_TRAINING_LAYOUT`` switches the training plans' layouts off
    (:mod:`symgraph.config`'s table: an unknown value is a ValueError)."""
    return not config.flag('TRAINING_LAYOUT')


def _entry(k):
    """The entry id of a storage key (an entry id, or a tuple naming one second)."""
    return k[1] if isinstance(k, tuple) else k


def _ufunc_class(xp):
    """The ufunc type of the array module (NumPy's or CuPy's)."""
    try:
        return xp.ufunc
    except AttributeError:      # an array module without ufunc objects: none is buffered
        return ()


def _most_alive(spans, plan, end):
    """The most bytes of ``spans`` [(first step, last step, storage key)] alive at one of
    the steps 0..``end``."""
    change = [0] * (end + 2)
    for first, last, k in spans:
        size = plan.nbytes(_entry(k))
        change[first] += size
        change[last + 1] -= size
    return max(itertools.accumulate(change), default=0)
