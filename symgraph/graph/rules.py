"""The questions the graph passes ask of operators, as rule tables the passes own.

An operator answers what MXNet's per-operator contract holds (structure, shape and type
rules, forward/backward, in-place pairs, ...: :class:`symgraph.opdef.Operator`). What only
a pass asks -- may this node run as a post-op of its producer, may this producer write
channels last, which gradient may lie over which forward array, how much scratch the CPU
backend wants, which operator runs instead of this one -- is a row in one of the tables
below, keyed by operator class, as MXNet keeps its MKLDNN subgraph properties apart from
its operators. A new pass adds a table here; a new backend registers its rows (the CPU
backend's are all in ``ops/_cpu_rules.py``, which the package ``__init__`` hands to
:func:`register_rules` once the operators are registered). An operator class without a
row (and no base class with one) gets the table's default.

A rule is ``fn(op, *question)``; a row registered for a class serves its subclasses
unless one registers its own (``None`` as ``fn`` registers "no row": the default).
"""
from __future__ import annotations

import inspect

from ..base import MXNetError

__all__ = ['RuleTable', 'register_rule', 'register_rules', 'TABLES', 'instead',
           'INFERENCE_IDENTITY', 'INFERENCE_UNUSED_INPUTS', 'POST_OP', 'FUSE_POST_OPS',
           'FUSE_TRAINING', 'READS_LAYOUT', 'WRITES_LAYOUT', 'OUT_LAYOUT', 'INPLACE_ANY_DTYPE',
           'GRAD_INPLACE',
           'GRAD_SAME', 'GRAD_WRITES_INTO', 'SCRATCH_BYTES', 'INSTEAD']


class RuleTable:
    """One question a pass asks of operators: ``{operator class: fn(op, *question)}``
    with a default answer for the classes without a row."""

    __slots__ = ('name', 'default', 'doc', '_rows', '_resolved')

    def __init__(self, name, default, doc):
        self.name = name
        self.default = default
        self.doc = doc
        self._rows = {}
        self._resolved = {}         # type -> its row or None, through its bases

    def register(self, op_cls, fn):
        """Answer the question for ``op_cls`` (and its subclasses without a row of their
        own) with ``fn(op, *question)``; ``fn`` None: the default answer."""
        if not isinstance(op_cls, type):
            raise TypeError('rule table %s: rows are keyed by operator class, got %r'
                            % (self.name, op_cls))
        if fn is not None and not callable(fn):
            raise TypeError('rule table %s: the rule for %s must be callable or None, got %r'
                            % (self.name, op_cls.__name__, fn))
        self._rows[op_cls] = fn
        self._resolved.clear()

    def rule(self, op):
        """The row answering for ``op`` (its class's, else its nearest base's), or None."""
        t = type(op)
        try:
            return self._resolved[t]
        except KeyError:
            pass
        fn = None
        for klass in t.__mro__:
            if klass in self._rows:
                fn = self._rows[klass]
                break
        self._resolved[t] = fn
        return fn

    def has_rule(self, op):
        """Whether ``op``'s class has a row (a pass may skip asking the others at all)."""
        return self.rule(op) is not None

    def ask(self, op, *question):
        """The answer for ``op`` to ``question`` (the table's default without a row)."""
        fn = self.rule(op)
        return self.default if fn is None else fn(op, *question)

    def __repr__(self):
        return 'RuleTable(%s, %d rows)' % (self.name, len(self._rows))


# --- the inference passes (graph/passes.py) ---------------------------------------------
INFERENCE_IDENTITY = RuleTable('inference_identity', False, """\
fn(op) -> bool: forward with is_train=False returns input 0 unchanged (Dropout, BlockGrad,
identity): the dead-node pass reads the input directly.""")
INFERENCE_UNUSED_INPUTS = RuleTable('inference_unused_inputs', (), """\
fn(op) -> indices of the inputs forward with is_train=False does not read (a loss layer's
label): dead code for the inference pass, which hands forward another of the node's inputs
in their place (neither the value nor the shape of such an input may matter).""")
POST_OP = RuleTable('post_op', None, """\
fn(op, in_index) -> opdef.PostOp or None: how this node can run as a post-op of the node
producing its input in_index ('affine': BatchNorm with its running statistics, 'eltwise':
an activation, 'sum': a residual add). Asked by the inference fusion and the training
fusion.""")
FUSE_POST_OPS = RuleTable('fuse_post_ops', None, """\
fn(op, post_ops, in_shapes) -> an operator computing op followed by post_ops (a list of
PostOp) in an inference forward, or None. It takes op's inputs then each post-op's inputs
and has one output, the unfused result to float32 rounding.""")
FUSE_TRAINING = RuleTable('fuse_training_post_op', None, """\
fn(op, post_op, in_shapes) -> an operator computing op followed by post_op in a CPU
training plan, forward and backward, or None: op's inputs and outputs (output 0 being the
post-op's), the unfused values and gradients to float32 rounding.""")

# --- layouts (the inference layout pass and graph/storage.py's training layouts) ---------
READS_LAYOUT = RuleTable('reads_layout', False, """\
fn(op, in_index, layout, in_shapes) -> bool: forward reads that input in memory order
layout ('channels_last': an (N, C, *S) view of (N, *S, C) memory) without a reorder; in
training also: backward reads it so and writes its gradient into a grad_out= array of that
layout.""")
WRITES_LAYOUT = RuleTable('writes_layout', False, """\
fn(op, layout, in_shapes, in_layouts) -> bool: a training forward writes output 0 in that
layout into an out= array lying so, and backward reads that output's gradient so
(in_layouts: the layouts the plan chose for the inputs, None: C order). Asked of a
writes_into operator whose output every consumer reads in that layout (a node run as a
plain ufunc needs no row: it writes the layout its inputs share). True is never wrong,
only slower where the operator then copies.""")
OUT_LAYOUT = RuleTable('out_layout', None, """\
fn(op) -> the layout of output 0 as an inference layout variant writes it (None: C order):
the storage plan lays out the buffer it offers a writes_into operator's output so, and
gives an output the storage of an input (Operator.inplace) only in the same layout.""")
INPLACE_ANY_DTYPE = RuleTable('inplace_any_dtype', False, """\
fn(op) -> bool: the Operator.inplace pairs hold for an input of another dtype of the same
item size too (the operator computes over the input's bytes in the input's type, and those
bytes are the output: MXNet's fused residual sum into an int8 summand under a uint8
output). Without a row the storage plan shares storage in one dtype only.""")

# --- gradients in the storage plan (graph/storage.py, graph/codegen.py) ------------------
GRAD_INPLACE = RuleTable('grad_inplace', (), """\
fn(op) -> tuple of ('out' or 'in', i, j): the gradient of argument j may take the storage
of forward output/input i that backward reads. For a writes_into operator whose backward
may compute that gradient over the array it reads (each element read before it is
written, or a fresh result copied in): the storage plan offers it a buffer laid over that
array's where the array dies at this backward step (MXNet's in-place backward of
activations).""")
GRAD_SAME = RuleTable('grad_same', (), """\
fn(op) -> groups of arguments whose gradients backward returns as one array (relu(a + b):
both are the masked head gradient), e.g. ((0, 1),). For a writes_into operator the storage
plan then offers a buffer to one argument of a group whose gradient has no other
contribution and lets the others alias it (no copy); an operator with this row computes
into one of the group's grad_out= arrays, writes the values into every other array offered
(the executor may sum into an offered array in place) and returns the computed array for
the arguments offered none.""")
GRAD_WRITES_INTO = RuleTable('grad_writes_into', False, """\
fn(op) -> bool: backward alone takes grad_out= (forward returns new arrays): the storage
plan offers its buffers to the gradients.""")
SCRATCH_BYTES = RuleTable('scratch_bytes', 0, """\
fn(op, in_shapes, out_shapes, dtypes, layouts) -> bytes of scratch the CPU backend may
need in one forward or backward call (layouts: (input layouts, output layouts) of the
plan's buffers); the plan keeps that much free there and lends it (opdef.lend_scratch).""")

# --- which operator runs instead ---------------------------------------------------------
INSTEAD = RuleTable('instead', None, """\
fn(op, why, *facts) -> the operator that runs in place of op, or None (op itself). One
question, asked for these reasons:
  'node', node_name: a bound executor's node (SyncBatchNorm names its meeting point);
  'shapes', in_shapes, out_shapes: fitted to the inferred shapes (zeros(shape=(0, H)));
  'out_is_input': mx.nd's out= is the first input array itself (in-place update kernels);
  'unread', unread_outputs: an inference plan where nobody reads those outputs (LRN);
  'layout', layout, in_shapes: output 0 written in that layout (the inference layout pass);
  'bfloat16', in_dtypes: a bfloat16 input (a variant computing with bfloat16 kernels).
The result keeps op's inputs and outputs; the graph, its JSON and mx.nd keep op.""")

#: every table by name (what :func:`register_rules` rows name)
TABLES = {t.name: t for t in (
    INFERENCE_IDENTITY, INFERENCE_UNUSED_INPUTS, POST_OP, FUSE_POST_OPS, FUSE_TRAINING,
    READS_LAYOUT, WRITES_LAYOUT, OUT_LAYOUT, INPLACE_ANY_DTYPE, GRAD_INPLACE, GRAD_SAME, GRAD_WRITES_INTO,
    SCRATCH_BYTES, INSTEAD)}


def register_rule(table, op_cls, fn):
    """Register ``fn`` as ``table``'s row (a :class:`RuleTable` or its name) for
    ``op_cls``."""
    if isinstance(table, str):
        try:
            table = TABLES[table]
        except KeyError:
            raise KeyError('no rule table %r; the tables are %s'
                           % (table, ', '.join(sorted(TABLES)))) from None
    if table is GRAD_WRITES_INTO and fn is not None and isinstance(op_cls, type) and \
            'grad_out' not in inspect.signature(op_cls.backward).parameters:
        # (the row decides; a backward without the keyword would fail at the first plan)
        raise MXNetError('operator %s has a grad_writes_into rule but its backward takes no '
                         "'grad_out' argument" % getattr(op_cls, 'name', op_cls.__name__))
    table.register(op_cls, fn)


def register_rules(rows):
    """Register ``rows``: (table name, operator class, fn) triples (a backend's rules
    module, e.g. ``symgraph.ops._cpu_rules.RULES``)."""
    for name, op_cls, fn in rows:
        register_rule(name, op_cls, fn)


def instead(op, why, *facts):
    """The operator that runs in place of ``op`` for reason ``why`` (see :data:`INSTEAD`):
    ``op`` itself where no rule gives another."""
    fn = INSTEAD.rule(op)
    if fn is None:
        return op
    other = fn(op, why, *facts)
    return op if other is None else other
