"""Shape and type inference: alternating forward and backward sweeps to a fixed point.

Each operator's rule is a pure function of partial shapes (``None`` unknown, dimension 0
unknown). The core merges what the rules return, detects conflicts, and decorates every
error with the node, the operator, the argument, the shapes and the user's file:line.
"""
from __future__ import annotations

import numpy as np

from ..base import ShapeError, TypeInferenceError, MXNetError
from ..opdef import unify_shape, Operator

__all__ = ['infer_shapes', 'infer_types', 'infer_entries', 'shape_complete']


def shape_complete(s):
    return s is not None and all(d > 0 for d in s)


def _fmt(s):
    return '?' if s is None else str(tuple(s))


def _input_names(node):
    op = node.op
    return op.list_arguments() + op.list_auxiliary_states()


def _spell(node, what):
    """``what`` of :meth:`_Pass.merge` as words: 'argument 'weight'', 'output 'output''."""
    if isinstance(what, str):
        return what
    kind, i = what
    if kind == 'argument':
        return 'argument %r' % _input_names(node)[i]
    outs = node.op.list_outputs()
    return 'output %r' % (outs[i] if i < len(outs) else str(i))


def _describe_inputs(node, ins, fmt):
    names = _input_names(node)
    return ', '.join('%s=%s' % (n, fmt(s)) for n, s in zip(names, ins))


def _unify_type(a, b, what):
    if a is None:
        return None if b is None else np.dtype(b)
    if b is None or np.dtype(a) == np.dtype(b):
        return np.dtype(a)
    raise TypeInferenceError('%s: %s vs %s' % (what, np.dtype(a).name, np.dtype(b).name))


def _question(values):
    """``values`` (shapes or dtypes, None unknown) as a tuple that compares by value: dtypes
    by name, since ``np.dtype('float64') == None`` is True (np.dtype(None) is float64) and a
    float64 input learnt after None would look like the question already asked."""
    return tuple(v if v is None or isinstance(v, tuple) else
                 (np.dtype(v).str if isinstance(v, (np.dtype, type, str)) else v)
                 for v in values)


class _Pass:
    """One inference problem (shapes or types) over a topologically ordered graph."""

    def __init__(self, order, kind, answers=None):
        self.order = order
        self.kind = kind
        self.index = {id(n): k for k, n in enumerate(order)}
        self.values = {}
        #: node index -> the question (inputs, and outputs for rules that take them) its rule
        #: last saw in this pass: the same question learns nothing new, so it is skipped
        self.asked = {}
        #: id(node) -> (question, answer or None when the rule gave up), possibly shared
        #: by the passes of one bind: a pure rule is not asked the same question twice, so
        #: a CustomOpProp runs once per node and bind, as in MXNet, not once per sweep
        self.answers = {} if answers is None else answers
        if kind == 'shape':
            self.unify, self.fmt, self.err = unify_shape, _fmt, ShapeError
            self.complete = shape_complete
        else:
            self.unify = _unify_type
            self.fmt = lambda t: '?' if t is None else np.dtype(t).name
            self.err = TypeInferenceError
            self.complete = lambda t: t is not None

    def key(self, node, i):
        return (self.index[id(node)], i)

    def merge(self, key, value, node, what):
        """Merge ``value`` into entry ``key``; True if something was learnt. ``what`` names
        the entry in messages: a string, or (kind, index) of an argument or output, spelt
        only when a message needs it (inference runs every node twice per bind)."""
        if value is None:
            return False
        old = self.values.get(key)
        if old is not None and old == value and type(old) is type(value):
            return False                # nothing new (the common case)
        try:
            new = self.unify(old, value, what)
        except (ShapeError, TypeInferenceError):
            what = _spell(node, what)
            raise self.err('%s: %s %s inferred as %s but %s was already known'
                           % (node.describe(), what, self.kind, self.fmt(value),
                              self.fmt(old))) from None
        if old is None or new != old:   # (dtype('float64') == None is True)
            self.values[key] = new
            return True
        return False

    def step(self, node):
        op = node.op
        n_args = len(op.list_arguments())
        in_keys = [self.key(s, i) for s, i in node.inputs]
        ins = [self.values.get(k) for k in in_keys]
        k_node = self.index[id(node)]
        outs = [self.values.get((k_node, i)) for i in range(op.output_count())]
        changed = False
        shape = self.kind == 'shape'
        if shape and op.same_shape_io and n_args:
            # elementwise: a known output tells the inputs (MXNet's backward inference)
            for o in outs[:op.num_visible_outputs()]:
                for j in range(n_args):
                    changed |= self.merge(in_keys[j], o, node, ('argument', j))
            ins = [self.values.get(k) for k in in_keys]
        if not shape and n_args and type(op).infer_type is Operator.infer_type:
            # the default rule (every input and output one type, MXNet's ElemwiseType):
            # a known output type tells the inputs, as in MXNet
            for o in outs[:op.num_visible_outputs()]:
                for j in range(n_args):
                    changed |= self.merge(in_keys[j], o, node, ('argument', j))
            ins = [self.values.get(k) for k in in_keys]
        with_outs = op.infer_shape_uses_outputs if shape else op.infer_type_uses_outputs
        question = (_question(ins), _question(outs)) if with_outs else _question(ins)
        if self.asked.get(k_node, self) == question:
            return changed
        self.asked[k_node] = question
        known = self.answers.get(id(node))
        if known is not None and known[0] == question:
            if known[1] is None:
                return changed
            new_ins, new_outs, new_aux = known[1]
        else:
            try:
                if shape and with_outs:     # rules that infer inputs from known outputs
                    new_ins, new_outs, new_aux = op.infer_shape(list(ins), list(outs))
                elif shape:
                    new_ins, new_outs, new_aux = op.infer_shape(list(ins))
                elif with_outs:
                    new_ins, new_outs, new_aux = op.infer_type(list(ins), list(outs))
                else:
                    new_ins, new_outs, new_aux = op.infer_type(list(ins))
            except (ShapeError, TypeInferenceError, MXNetError) as e:
                raise self.err('%s: %s (inputs: %s)'
                               % (node.describe(), e, _describe_inputs(node, ins, self.fmt))) \
                    from None
            except Exception as e:  # a rule that cannot cope with unknown inputs yet
                if all(self.complete(x) for x in ins):
                    raise self.err('%s: %s inference failed: %s: %s (inputs: %s)'
                                   % (node.describe(), self.kind, type(e).__name__, e,
                                      _describe_inputs(node, ins, self.fmt))) from e
                self.answers[id(node)] = (question, None)
                return changed
            self.answers[id(node)] = (question, (new_ins, new_outs, new_aux))
        filled = list(new_ins or []) + list(new_aux or [])
        for j, (k, v) in enumerate(zip(in_keys, filled)):
            changed |= self.merge(k, v, node, ('argument', j))
        for i, v in enumerate(new_outs or []):
            changed |= self.merge((k_node, i), v, node, ('output', i))
        return changed

    def run(self):
        ops = [n for n in self.order if n.op is not None]
        for _ in range(len(ops) + 2):
            changed = False
            for n in ops:
                changed |= self.step(n)
            for n in reversed(ops):
                changed |= self.step(n)
            if not changed:
                break
        return self.values


def _run(order, known, kind, answers):
    p = _Pass(order, kind, answers)
    for node, value in known.items():
        p.merge((p.index[id(node)], 0), value, node, kind)
    return p.run()


def infer_shapes(order, known, answers=None):
    """Shapes of all entries. ``known`` maps variable Node -> (partial) shape.

    ``answers``, a dict shared by the passes of one bind, keeps each rule's answer so that
    a later pass over the same nodes asks no rule the same question again.
    """
    return _run(order, known, 'shape', answers)


def infer_types(order, known, answers=None):
    """dtypes of all entries. ``known`` maps variable Node -> dtype (``answers``: as in
    :func:`infer_shapes`)."""
    return _run(order, known, 'type', answers)


def infer_entries(order, known, kind):
    """Shapes (``kind`` 'shape') or dtypes ('type') of all entries, from ``known``:
    {(node, output index): value} for any entries, not only Variables (a subgraph's
    outputs known from the loop around it)."""
    p = _Pass(order, kind)
    for (node, i), value in known.items():
        p.merge((p.index[id(node)], i), value, node, kind)
    return p.run()
