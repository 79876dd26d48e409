"""Shape and type inference: alternating forward and backward sweeps to a fixed point.

Each operator's rule is a pure function of partial shapes (``None`` unknown, dimension 0
unknown). The core merges what the rules return, detects conflicts, and decorates every
error with the node, the operator, the argument, the shapes and the user's file:line.
"""
from __future__ import annotations

import itertools
import warnings

import numpy as np

from ..base import ShapeError, TypeInferenceError, MXNetError
from ..opdef import unify_shape, Operator

__all__ = ['infer_shapes', 'infer_types', 'infer_entries', 'shape_complete', 'Wiring',
           'warn_unknown_shapes', 'warn_unknown_types']


def shape_complete(s):
    return s is not None and (not s or min(s) > 0)     # (every dimension known)


def warn_unknown_shapes(names, shapes, stacklevel):
    """MXNet's warning for the arguments ``names`` whose ``shapes`` inference left
    incomplete (``infer_shape`` and ``simple_bind`` give it); ``stacklevel`` counts from
    the caller."""
    missing = {n for n, s in zip(names, shapes) if not shape_complete(s)}
    warnings.warn('Cannot decide shape for the following arguments (0s in shape means '
                  'unknown dimensions). Consider providing them as input:\n\t' +
                  '\n\t'.join('%s: %s' % (n, s) for n, s in zip(names, shapes)
                              if n in missing), stacklevel=stacklevel + 1)


def warn_unknown_types(names, types, stacklevel):
    """MXNet's warning for the arguments ``names`` whose ``types`` are None."""
    warnings.warn('Cannot decide type for the following arguments. Consider providing them '
                  'as input:\n\t' + '\n\t'.join('%s: %s' % (n, t) for n, t in zip(names, types)
                                                  if t is None), stacklevel=stacklevel + 1)


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


def _type_question(values):
    """dtypes (None unknown, as a pass holds them: np.dtype) as a tuple that compares by
    value: by name, since ``np.dtype('float64') == None`` is True (np.dtype(None) is
    float64) and a float64 input learnt after None would look like the question already
    asked. (A shape pass holds tuples: its question is the tuple of them.)"""
    return tuple([None if v is None else v.str for v in values])


class Wiring:
    """What an inference pass needs of the structure of ``order`` (a topologically ordered
    graph), worked out once for the shape and the type pass of a bind: per operator node
    (node, index in ``order``, input keys, output keys, number of arguments), and which of
    them read or write each entry. An entry's key is (index of its node, output index)."""

    def __init__(self, order):
        self.order = order
        self.index = index = {id(n): k for k, n in enumerate(order)}
        self.nodes = []
        #: entry key -> positions in ``nodes`` of the nodes that read or write the entry
        self.touch = touch = {}
        for k, n in enumerate(order):
            op = n.op
            if op is None:
                continue
            pos = len(self.nodes)
            in_keys = [(index[id(s)], i) for s, i in n.inputs]
            out_keys = [(k, i) for i in range(op.output_count())]
            for key in in_keys + out_keys:
                touch.setdefault(key, []).append(pos)
            self.nodes.append((n, k, in_keys, out_keys, len(op.list_arguments())))


class _Pass:
    """One inference problem (shapes or types) over a topologically ordered graph
    (``wiring``: its :class:`Wiring`, when the caller has it already)."""

    def __init__(self, order, kind, answers=None, wiring=None):
        if wiring is None or wiring.order is not order:
            wiring = Wiring(order)
        self.order = order
        self.kind = kind
        self.index = wiring.index
        self.values = {}
        #: node index -> the question (inputs, and outputs for rules that take them) its rule
        #: last saw in this pass: the same question learns nothing new, so it is skipped
        self.asked = {}
        #: id(node) -> (question, answer or None when the rule gave up), possibly shared
        #: by the passes of one bind: a pure rule is not asked the same question twice, so
        #: a CustomOpProp runs once per node and bind, as in MXNet, not once per sweep
        self.answers = {} if answers is None else answers
        shape = kind == 'shape'
        if shape:
            self.unify, self.fmt, self.err = unify_shape, _fmt, ShapeError
            self.fresh = tuple
            self.complete = shape_complete
            self.question = tuple
            self.rule = 'infer_shape'
        else:
            self.unify = _unify_type
            self.fresh = np.dtype
            self.fmt = lambda t: '?' if t is None else np.dtype(t).name
            self.err = TypeInferenceError
            self.complete = lambda t: t is not None
            self.question = _type_question
            self.rule = 'infer_type'
        #: per operator node, in order, what its step reads: (node, index, input keys,
        #: output keys, number of arguments, visible outputs whose value a known output
        #: tells the arguments (0: none), whether the rule takes the known outputs)
        self.steps = []
        for n, k, in_keys, out_keys, n_args in wiring.nodes:
            op = n.op
            if shape:
                # elementwise: a known output tells the inputs (MXNet's backward inference)
                back = n_args and op.same_shape_io
                with_outs = op.infer_shape_uses_outputs
            else:
                # the default rule (every input and output one type, MXNet's ElemwiseType):
                # a known output type tells the inputs, as in MXNet
                back = n_args and type(op).infer_type is Operator.infer_type
                with_outs = op.infer_type_uses_outputs
            self.steps.append((n, k, in_keys, out_keys, n_args,
                               op.num_visible_outputs() if back else 0, with_outs))
        #: entry key -> positions in ``steps`` of the nodes that read or write the entry
        self.touch = wiring.touch
        #: positions in ``steps`` of the nodes whose step would learn nothing now: their
        #: step left every entry as it was (or provably would if run again) and no entry
        #: of theirs changed since; a sweep skips them, which changes nothing else
        self.settled = set()

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
            # (unify with nothing known is the value as a tuple or np.dtype: ``fresh``)
            new = self.fresh(value) if old is None else self.unify(old, value, what)
        except (ShapeError, TypeInferenceError):
            what = _spell(node, what)
            raise self.err('%s: %s %s inferred as %s but %s was already known'
                           % (node.describe(), what, self.kind, self.fmt(value),
                              self.fmt(old))) from None
        if old is None or new != old:   # (dtype('float64') == None is True)
            self.values[key] = new
            touched = self.touch.get(key)
            if touched:
                self.settled.difference_update(touched)
            return True
        return False

    def step(self, pos):
        """Runs the rule of ``steps[pos]`` where its question is new and merges what it
        says; True if something was learnt."""
        node, k_node, in_keys, out_keys, n_args, back, with_outs = self.steps[pos]
        values = self.values
        changed = False
        if back:
            for k in out_keys[:back]:
                o = values.get(k)
                if o is not None:
                    for j in range(n_args):
                        changed |= self.merge(in_keys[j], o, node, ('argument', j))
        ins = list(map(values.get, in_keys))
        if with_outs:
            outs = list(map(values.get, out_keys))
            question = (self.question(ins), self.question(outs))
        else:
            question = self.question(ins)
        if self.asked.get(k_node, self) == question:
            return self._settle(pos, changed, False)
        self.asked[k_node] = question
        known = self.answers.get(id(node))
        if known is not None and known[0] == question:
            if known[1] is None:
                return self._settle(pos, changed, False)
            new_ins, new_outs, new_aux = known[1]
        else:
            try:
                rule = getattr(node.op, self.rule)
                if with_outs:   # rules that infer inputs from known outputs
                    said = rule(list(ins), list(outs))
                else:
                    said = rule(list(ins))
                new_ins, new_outs, new_aux = said
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
                return self._settle(pos, changed, False)
            self.answers[id(node)] = (question, said if type(said) is tuple
                                      else (new_ins, new_outs, new_aux))
        # (merge's own first test inline: most of what a rule says is known already)
        learnt_ins = False
        for j, (k, v) in enumerate(zip(in_keys, itertools.chain(new_ins or (), new_aux or ()))):
            if v is not None:
                old = values.get(k)
                if old is None or type(old) is not type(v) or old != v:
                    learnt_ins |= self.merge(k, v, node, ('argument', j))
        learnt_outs = False
        for i, v in enumerate(new_outs or ()):
            if v is not None:
                k = out_keys[i] if i < len(out_keys) else (k_node, i)
                old = values.get(k)
                if old is None or type(old) is not type(v) or old != v:
                    learnt_outs |= self.merge(k, v, node, ('output', i))
        if learnt_ins or (learnt_outs and with_outs):
            # what the rule says about its inputs (or outputs it reads) changes its question:
            # it is asked again
            return True
        if not back:        # (what _settle does then)
            self.settled.add(pos)
            return changed or learnt_outs
        return self._settle(pos, changed or learnt_outs, True)

    def _settle(self, pos, changed, check):
        """Marks ``steps[pos]`` settled where its step, run again now, would learn nothing
        (the rule would see the question it was just asked); returns ``changed``."""
        if changed or check:
            # run again, the step would copy its known outputs into its arguments first:
            # only a no-op where each already holds that very value
            _, _, in_keys, out_keys, n_args, back, _ = self.steps[pos]
            values = self.values
            for k in out_keys[:back]:
                o = values.get(k)
                if o is not None:
                    for j in range(n_args):
                        v = values.get(in_keys[j])
                        if v is None or not (v == o and type(v) is type(o)):
                            return changed
        self.settled.add(pos)
        return changed

    def run(self):
        n = len(self.steps)
        forward = range(n)
        backward = range(n - 1, -1, -1)
        settled = self.settled
        step = self.step
        for _ in range(n + 2):
            changed = False
            for p in forward:
                if p not in settled:
                    changed |= step(p)
            for p in backward:
                if p not in settled:
                    changed |= step(p)
            if not changed:
                break
        return self.values


def _run(order, known, kind, answers, wiring=None):
    p = _Pass(order, kind, answers, wiring)
    values, fresh, index = p.values, p.fresh, p.index
    for node, value in known.items():
        # (what merge does with entries that know nothing yet, each one once)
        if value is not None:
            values[(index[id(node)], 0)] = fresh(value)
    return p.run()


def infer_shapes(order, known, answers=None, wiring=None):
    """Shapes of all entries. ``known`` maps variable Node -> (partial) shape.

    ``answers``, a dict shared by the passes of one bind, keeps each rule's answer so that
    a later pass over the same nodes asks no rule the same question again. ``wiring``:
    the :class:`Wiring` of ``order``, shared by the passes of one bind.
    """
    return _run(order, known, 'shape', answers, wiring)


def infer_types(order, known, answers=None, wiring=None):
    """dtypes of all entries. ``known`` maps variable Node -> dtype (``answers`` and
    ``wiring``: as in :func:`infer_shapes`)."""
    return _run(order, known, 'type', answers, wiring)


def infer_entries(order, known, kind):
    """Shapes (``kind`` 'shape') or dtypes ('type') of all entries, from ``known``:
    {(node, output index): value} for any entries, not only Variables (a subgraph's
    outputs known from the loop around it)."""
    p = _Pass(order, kind)
    for (node, i), value in known.items():
        p.merge((p.index[id(node)], i), value, node, kind)
    return p.run()
