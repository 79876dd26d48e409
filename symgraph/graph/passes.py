"""Inference passes: a second, rewritten plan for ``forward(is_train=False)``.

An executor that computes no gradient, runs no monitor and is asked for an inference
forward runs this plan instead of its own (built on the first such forward). The passes
are functions over one rewrite form (:class:`Rewrite`: a mutable stand-in per node, the
steps and the heads), run in the order of :data:`INFERENCE`; four names switch them, each
by name in ``SYMGRAPH_INFERENCE_PASSES`` (a comma-separated list, read at
bind; unset means all, ``none`` or ``0`` none):

``dead_nodes``
    A node whose inference forward returns its input unchanged
    (:data:`~.rules.INFERENCE_IDENTITY`: Dropout, BlockGrad, identity) is bypassed; a node
    whose outputs reach no output -- through inputs forward reads
    (:data:`~.rules.INFERENCE_UNUSED_INPUTS`: a loss layer's label) -- is dropped.
``fold_bn``
    A producer followed by a per-channel affine consumer (BatchNorm with its running
    statistics) folds it into its weights.
``fuse``
    A producer followed by residual sums and activations runs them as post-ops (one oneDNN
    primitive for Convolution).
``layout``
    On the CPU, a producer whose every consumer reads channels-last data as it lies
    (:data:`~.rules.READS_LAYOUT`) writes that layout (:func:`~.rules.instead` for
    ``'layout'``): activations stay in the layout of
    the backend's kernels between its operators, and are reordered only where a run of
    them ends (an operator that wants C order copies its input; a head never changes
    layout). Such arrays are ordinary strided arrays of the logical shape, so an operator
    that was not asked still reads them correctly.

The passes know no operator: they ask the rule tables of :mod:`symgraph.graph.rules`
(rows keyed by operator class, registered from ``ops/_cpu_rules.py``). A consumer offers
itself as a post-op of its producer (:data:`~.rules.POST_OP`), and the producer makes the
fused operator (:data:`~.rules.FUSE_POST_OPS`) or declines. A chain only grows through
an output that one node reads, that is no output of the graph, and whose node's other
outputs nobody reads. The rewritten graph gives the unfused one's outputs to float32
rounding; :meth:`InferencePasses.describe` gives the ``debug_str`` lines.
"""
from __future__ import annotations

import collections

from .. import config
from ..opdef import cpu_backend
from . import rules
from .nodes import Node
from .plan import Plan
from .storage import LAYOUT, place_layout

__all__ = ['PASSES', 'ENV', 'enabled_passes', 'Rewrite', 'INFERENCE', 'InferencePasses',
           'TRAINING', 'TRAINING_FUSION_ENV', 'fuse_for_training']

#: every pass, in the order they run
PASSES = ('dead_nodes', 'fold_bn', 'fuse', 'layout')
#: the environment variable that selects them (its words: symgraph.config's table)
ENV = config.env_name('INFERENCE_PASSES')


def enabled_passes(value=None):
    """The passes ``value`` (default: the environment variable) switches on, as a tuple.

    Unset: all; ``''``, ``'0'``, ``'none'``, ``'off'``: none; else comma-separated names of
    :data:`PASSES` (:func:`symgraph.config.names`). An unknown name is a ValueError naming
    the variable and the passes."""
    if value is None:
        return config.names('INFERENCE_PASSES')
    return config.parse('INFERENCE_PASSES', value)


class _N:
    """A mutable stand-in for a node while the passes rewrite the graph."""

    __slots__ = ('op', 'name', 'inputs', 'orig', 'location', 'nout')

    def __init__(self, op, name, inputs, orig, location, nout):
        self.op, self.name, self.inputs = op, name, list(inputs)
        self.orig, self.location, self.nout = orig, location, nout


class Rewrite:
    """The one form the passes rewrite, inference and training alike: a stand-in
    (:class:`_N`) per node of a bound graph, the operator steps in order and the heads.

    A pass is a function ``pass_(g, on, report) -> bool`` (``on``: the enabled names of
    :data:`PASSES`; ``report``: the list of ``debug_str`` lines it appends to) that changes
    stand-ins in place -- an operator, an input, a step replaced by a new stand-in -- and
    says whether it changed anything; :data:`INFERENCE` and :data:`TRAINING` list them in
    the order they run.
    ``shapes`` are the bound graph's, keyed by (index in ``order``, output); ``xp`` its
    array module.
    """

    def __init__(self, order, heads, shapes, xp):
        self.order, self.shapes, self.xp = order, shapes, xp
        self.index = {id(n): k for k, n in enumerate(order)}
        nodes = {}
        for n in order:
            nodes[id(n)] = _N(n.op, n.name, [(nodes[id(s)], i) for s, i in n.inputs], n,
                              n.location, n.num_outputs())
        self.nodes = nodes
        self.heads = [(nodes[id(n)], i) for n, i in heads]
        self.steps = [nodes[id(n)] for n in order if n.op is not None]
        # what the dead_nodes passes did, for their report line (made when the others are)
        self.bypassed = []
        # what the training fusion did (see fuse_training)
        self.absorbed, self.fused = {}, []

    def consumers(self, steps=None):
        """{(id(stand-in), output): [(reader, input position)]} over ``steps`` (default:
        every step)."""
        cons = collections.defaultdict(list)
        for n in self.steps if steps is None else steps:
            for pos, (s, i) in enumerate(n.inputs):
                cons[(id(s), i)].append((n, pos))
        return cons

    def head_keys(self):
        return {(id(n), i) for n, i in self.heads}

    def shape(self, n, i):
        """The bound graph's shape of output ``i`` of stand-in ``n`` (a fused node's: its
        last member's)."""
        orig = n.orig
        if isinstance(orig, tuple):
            orig = orig[1]
        return self.shapes.get((self.index[id(orig)], i))

    def live(self):
        """ids of the stand-ins the heads need."""
        live, stack = set(), [n for n, _ in self.heads]
        while stack:
            n = stack.pop()
            if id(n) in live:
                continue
            live.add(id(n))
            stack += [s for s, _ in n.inputs]
        return live


# ------------------------------------------------------------------ the inference passes
def bypass_identities(g, on, report):
    """``dead_nodes``: a node whose inference forward returns its input unchanged
    (``rules.INFERENCE_IDENTITY``) hands that input to its readers."""
    head_keys = g.head_keys()
    cons = g.consumers()
    names = []
    for n in g.steps:
        if not rules.INFERENCE_IDENTITY.ask(n.op) or (id(n), 0) in head_keys or any(
                (id(n), i) in head_keys or cons.get((id(n), i)) for i in range(1, n.nout)):
            continue
        src = n.inputs[0]
        for c, pos in cons.get((id(n), 0), ()):
            c.inputs[pos] = src
            cons[(id(src[0]), src[1])].append((c, pos))
        cons[(id(n), 0)] = []
        names.append(n.name)
    g.bypassed = names
    return bool(names)


def variants(g, on, report):
    """``dead_nodes``: operators whose unread outputs need not be computed run their
    inference variant (``rules.instead(op, 'unread', outputs)``: LRN without tmp_norm)."""
    head_keys = g.head_keys()
    cons = g.consumers()
    names = []
    for n in g.steps:
        unread = tuple(i for i in range(n.nout)
                       if (id(n), i) not in head_keys and not cons.get((id(n), i)))
        variant = rules.instead(n.op, 'unread', unread) if unread else n.op
        if variant is not n.op:
            n.op = variant
            names.append(n.name)
    if names:
        report.append('dead_nodes: %d node(s) skip unread outputs (%s)'
                      % (len(names), ', '.join(names)))
    return bool(names)


def fuse(g, on, report):
    """``fold_bn`` and ``fuse``: a producer and the chain of post-ops after it (each
    offered by its consumer, ``rules.POST_OP``) become the one operator the producer
    makes of them (``rules.FUSE_POST_OPS``), named as the chain's last member."""
    steps, heads = g.steps, g.heads
    head_keys = g.head_keys()
    allow = {'affine': 'fold_bn' in on, 'sum': 'fuse' in on, 'eltwise': 'fuse' in on}
    gone = set()
    made = collections.Counter()
    folded = fused_ops = 0
    for p in list(steps):
        if id(p) in gone:
            continue
        cons = g.consumers([s for s in steps if id(s) not in gone])
        if any((id(p), i) in head_keys or cons.get((id(p), i)) for i in range(1, p.nout)):
            continue
        in_shapes = [g.shape(s, i) for s, i in p.inputs]
        chain, members, best, cur = [], [], None, p
        while True:
            key = (id(cur), 0)
            users = cons.get(key, [])
            if key in head_keys or len(users) != 1:
                break
            c, pos = users[0]
            if c.op is None or id(c) in gone:
                break
            po = rules.POST_OP.ask(c.op, pos)
            if po is None or not allow.get(po.kind) or any(
                    (id(c), i) in head_keys or cons.get((id(c), i))
                    for i in range(1, c.nout)):
                break
            fused = rules.FUSE_POST_OPS.ask(p.op, chain + [po], in_shapes)
            if fused is None:
                break
            chain.append(po)
            members.append(c)
            best, cur = fused, c
        if not chain:
            continue
        extra = []
        for c, po in zip(members, chain):
            extra += [c.inputs[j] for j in po.inputs]
        f = _N(best, cur.name, list(p.inputs) + extra, None, cur.location, 1)
        f.orig = ('fused', cur.orig)
        for c, pos in cons.get((id(cur), 0), ()):
            c.inputs[pos] = (f, 0)
        for k, (n, i) in enumerate(heads):
            if n is cur and i == 0:
                heads[k] = (f, 0)
        gone.add(id(p))
        gone.update(id(c) for c in members)
        steps[steps.index(cur)] = f
        for n in [p] + members[:-1]:
            steps.remove(n)
        folded += sum(1 for po in chain if po.kind == 'affine')
        fused_ops += 1
        made[best.describe()] += 1
    if 'fold_bn' in on:
        report.append('fold_bn: %d per-channel affine node(s) (BatchNorm) folded into '
                      'the weights of their producer' % folded)
    if 'fuse' in on or folded:
        report.append('fuse: %d fused node(s)%s' % (fused_ops, ''.join(
            '\n    %d x %s' % (k, d) for d, k in sorted(made.items()))))
    return bool(fused_ops)


def drop_unused_inputs(g, on, report):
    """``dead_nodes``: an input forward does not read is handed the node's first read
    input instead (``rules.INFERENCE_UNUSED_INPUTS``: a loss layer's label): what
    computed it may then be dead. (It changes nothing a plan runs by itself: the dead
    nodes it leaves are counted at the end.)"""
    for n in g.steps:
        unused = set(rules.INFERENCE_UNUSED_INPUTS.ask(n.op))
        used = [k for k in range(len(n.inputs)) if k not in unused]
        if unused and used:
            for k in unused:
                if k < len(n.inputs):
                    n.inputs[k] = n.inputs[used[0]]
    return False


def layout(g, on, report):
    """``layout`` (CPU plans only): a live producer whose every consumer reads channels-last
    data as it lies (``rules.READS_LAYOUT``) runs its variant that writes that layout
    (``rules.instead(op, 'layout', ...)``); see the module notes."""
    if getattr(g.xp, '__name__', None) != 'numpy':
        report.append('layout: off (not a CPU plan)')
        return False
    live = g.live()
    head_keys = g.head_keys()
    cons = g.consumers([n for n in g.steps if id(n) in live])
    names = []

    def readers(n):
        if id(n) not in live or (id(n), 0) in head_keys:
            return None
        return cons.get((id(n), 0))

    def writes(n):
        v = rules.instead(n.op, 'layout', LAYOUT, [g.shape(s, i) for s, i in n.inputs])
        return None if v is n.op else v

    def reads(c, pos):
        return rules.READS_LAYOUT.ask(c.op, pos, LAYOUT, [g.shape(s, i) for s, i in c.inputs])

    def keep(n, variant):
        n.op = variant
        names.append(n.name)
    place_layout(g.steps, readers, writes, reads, keep)
    report.append('layout: %d output(s) kept %s between the operators reading it%s'
                  % (len(names), LAYOUT.replace('_', ' '),
                     ' (%s)' % ', '.join(names) if names else ''))
    return bool(names)


#: the inference passes in the order they run: (the name in :data:`PASSES` that switches
#: it on, or the names of which any does; the pass)
INFERENCE = (('dead_nodes', bypass_identities), ('dead_nodes', variants),
             (('fold_bn', 'fuse'), fuse), ('dead_nodes', drop_unused_inputs),
             ('layout', layout))


class InferencePasses:
    """The inference plan of one bind, built on first use.

    The arguments are the executor's: the topological order, the argument and auxiliary
    Variables, the heads, the inferred shapes and dtypes (keyed by (index in ``order``,
    output)), the array module and the context. ``passes``: what :func:`enabled_passes`
    gives (read when the executor is bound). ``steps``: the bound plan's Steps
    (``Plan.bound``), which the nodes whose operator the passes leave unchanged share.
    """

    def __init__(self, order, arg_nodes, aux_nodes, heads, shapes, dtypes, xp, ctx=None,
                 passes=None, steps=None):
        self.bound_steps = steps    # the bound plan's Steps, shared (see Plan)
        self.order, self.arg_nodes, self.aux_nodes = order, arg_nodes, aux_nodes
        self.heads, self.shapes, self.dtypes = heads, shapes, dtypes
        self.xp, self.ctx = xp, ctx
        self.passes = enabled_passes() if passes is None else tuple(passes)
        self._plan = None
        self._built = False
        self.report = []

    def applies(self, is_train, monitor, keep_saved):
        """Whether a forward with these settings runs the inference plan."""
        return bool(self.passes) and not is_train and not monitor and not keep_saved

    def plan(self):
        """The inference :class:`~symgraph.graph.plan.Plan`, or None when the passes
        changed nothing (the executor's own plan is then as good)."""
        if not self._built:
            self._plan = self._build()
            self._built = True
        return self._plan

    def describe(self):
        """Lines for ``debug_str``: which passes are on and what each did."""
        if not self.passes:
            return ['Inference passes: none (%s)' % ENV]
        self.plan()
        return ['Inference passes (%s=%s):' % (ENV, ','.join(self.passes))] + \
            ['  ' + line for line in self.report]

    # ------------------------------------------------------------------ rewriting
    def _build(self):
        """:data:`INFERENCE` over the bound graph's :class:`Rewrite`; then the nodes the
        heads no longer need are dropped, and a plan is made of what changed."""
        g = Rewrite(self.order, self.heads, self.shapes, self.xp)
        before = len(g.steps)
        on = set(self.passes)
        changed = False
        for names, pass_ in INFERENCE:
            if on.intersection((names,) if isinstance(names, str) else names):
                changed |= pass_(g, on, self.report)
        live = g.live()
        if 'dead_nodes' in on:
            bypassed = set(g.bypassed)
            dead = [n.name for n in g.steps if id(n) not in live and n.op is not None
                    and n.name not in bypassed]
            self.report.append('dead_nodes: %d bypassed or removed%s'
                               % (len(g.bypassed) + len(dead),
                                  (' (%s)' % ', '.join(g.bypassed + dead))
                                  if g.bypassed or dead else ''))
            changed |= bool(dead)
        if not changed:
            self.report.append('inference plan: the bound plan (nothing to rewrite)')
            return None
        return self._make_plan(g.nodes, g.heads, live, g.index, before)

    def _make_plan(self, nodes, heads, live, index, before):
        variables = [n for n in self.order if n.op is None]
        made = {}
        shared = {}
        order = list(variables)
        for v in variables:
            made[id(nodes[id(v)])] = v
        shapes, dtypes = {}, {}

        def real(n):
            """The Node of stand-in ``n`` (new where it changed), after its inputs."""
            got = made.get(id(n))
            if got is not None:
                return got
            stack = [(n, False)]
            while stack:
                m, ready = stack.pop()
                if id(m) in made:
                    continue
                if not ready:
                    stack.append((m, True))
                    stack += [(s, False) for s, _ in m.inputs if id(s) not in made]
                    continue
                ins = tuple((made[id(s)], i) for s, i in m.inputs)
                o = m.orig
                if isinstance(o, Node) and ins == o.inputs and m.op is o.op:
                    node = o
                else:
                    src = o[1] if isinstance(o, tuple) else o
                    node = Node(m.op, m.name, {} if isinstance(o, tuple) else src.attrs, ins,
                                m.location)
                made[id(m)] = node
                if isinstance(o, Node) and m.op is o.op and self.bound_steps \
                        and id(o) in self.bound_steps:
                    shared[id(node)] = self.bound_steps[id(o)]   # same operator, new inputs
                k = len(order)
                order.append(node)
                src = o[1] if isinstance(o, tuple) else o
                for i in range(node.num_outputs()):
                    shapes[(k, i)] = self.shapes[(index[id(src)], i)]
                    dtypes[(k, i)] = self.dtypes[(index[id(src)], i)]
            return made[id(n)]

        for k, v in enumerate(variables):
            shapes[(k, 0)] = self.shapes[(index[id(v)], 0)]
            dtypes[(k, 0)] = self.dtypes[(index[id(v)], 0)]
        new_heads = [(real(n), i) for n, i in heads]
        steps = sum(1 for n in order if n.op is not None)
        self.report.append('inference plan: %d operator steps (bound plan: %d)'
                           % (steps, before))
        # nodes that keep their operator share the bound plan's Step (a Custom operator
        # is made once per node and bind, as in MXNet); fused ones get their own
        return Plan(order, self.arg_nodes, self.aux_nodes, new_heads, shapes, dtypes,
                    ['null'] * len(self.arg_nodes), self.xp, self.ctx, steps=shared)


#: the environment variable that switches the training fusion off (read at bind)
TRAINING_FUSION_ENV = config.env_name('TRAINING_FUSION')


def fuse_training(g, on, report):
    """The training pass over a :class:`Rewrite`: a producer whose output 0 one consumer
    reads as a post-op (``rules.POST_OP``, with no inputs of its own), and whose other
    outputs nobody reads (nor do the consumer's), becomes the operator
    ``rules.FUSE_TRAINING`` gives, in the consumer's stand-in: it takes the
    producer's operator inputs, and the producer's step goes (``g.absorbed``: id(consumer)
    -> producer stand-in; ``g.fused``: the consumers, in the order they fused). Readers are
    counted on the graph as bound (a head counts as one)."""
    cons = g.consumers()
    readers = collections.Counter({k: len(v) for k, v in cons.items()})
    readers.update((id(n), i) for n, i in g.heads)

    def others_unread(n):
        return not any(readers.get((id(n), i)) for i in range(1, n.nout))

    # producers whose operator has the hook (the others cannot fuse: not asked at all)
    hooked = [n for n in g.steps if rules.FUSE_TRAINING.has_rule(n.op)]
    absorbed, producers, fused_nodes = {}, set(), []
    for b in hooked:
        key = (id(b), 0)
        if readers.get(key) != 1 or not cons.get(key) or id(b) in absorbed:
            continue
        r, pos = cons[key][0]
        if len(r.inputs) != 1 or id(r) in producers:
            continue
        po = rules.POST_OP.ask(r.op, pos)
        if po is None or po.inputs or not others_unread(b) or not others_unread(r):
            continue
        fused = rules.FUSE_TRAINING.ask(b.op, po, [g.shape(s, i) for s, i in b.inputs])
        if fused is None or fused.output_count() != b.op.output_count():
            continue
        r.op, r.inputs, r.location = fused, list(b.inputs), b.location
        absorbed[id(r)] = b
        producers.add(id(b))
        fused_nodes.append(r)
    g.steps = [n for n in g.steps if id(n) not in producers]
    g.absorbed, g.fused = absorbed, fused_nodes
    return bool(absorbed)


#: the training passes over the bound graph, in order. (A training plan's channels-last
#: buffers follow at plan time, :func:`symgraph.graph.storage.training_layouts` with the
#: same rule as the ``layout`` pass, :func:`~symgraph.graph.storage.place_layout`: they
#: depend on which results the storage run buffers.)
TRAINING = (fuse_training,)


def fuse_for_training(order, heads, shapes, dtypes, xp):
    """The training fusion of a CPU plan that computes gradients (:func:`fuse_training`
    over the bound graph's :class:`Rewrite`; BatchNorm then relu: one oneDNN pass forward,
    the mask applied inside its backward), each fused node named as the consumer.

    Returns None (nothing fused, a GPU plan, no CPU backend loaded, or
    ``SYMGRAPH_TRAINING_FUSION`` one of 0/none/off/false/no), else ``(order, shapes,
    dtypes, aliases, fused)``: the order with each pair replaced by its fused node (every
    other node the original object), the shapes and dtypes keyed by position in it,
    ``aliases`` (id(consumer) -> fused node: what :class:`~symgraph.graph.plan.Plan` reads
    the consumer's output from, so that neither its readers nor the heads need new nodes)
    and the fused nodes' names."""
    if getattr(xp, '__name__', None) != 'numpy' or cpu_backend() is None \
            or not config.flag('TRAINING_FUSION'):
        return None     # (no CPU backend: nothing to fuse into, so nothing is asked)
    if not any(n.op is not None and rules.FUSE_TRAINING.has_rule(n.op) for n in order):
        return None
    g = Rewrite(order, heads, shapes, xp)
    changed = False
    for pass_ in TRAINING:
        changed |= pass_(g, {'fuse_training'}, [])
    if not changed:
        return None
    index = g.index
    gone = {id(b.orig) for b in g.absorbed.values()}
    new_order, new_shapes, new_dtypes, aliases = [], {}, {}, {}
    for n in order:
        if id(n) in gone:
            continue
        k = len(new_order)
        b = g.absorbed.get(id(g.nodes[id(n)]))
        if b is not None:
            r = g.nodes[id(n)]
            node = Node(r.op, r.name, {}, b.orig.inputs, r.location)
            aliases[id(n)] = node
            # output 0 is the consumer's, the others the producer's (hidden statistics)
            srcs = [index[id(n)]] + [index[id(b.orig)]] * (node.num_outputs() - 1)
            new_order.append(node)
        else:
            srcs = [index[id(n)]] * n.num_outputs()
            new_order.append(n)
        for i, src in enumerate(srcs):
            new_shapes[(k, i)] = shapes[(src, i)]
            new_dtypes[(k, i)] = dtypes[(src, i)]
    return new_order, new_shapes, new_dtypes, aliases, [r.name for r in g.fused]
