"""Shape and type inference: alternating forward and backward sweeps to a fixed point.

Each operator's rule is a pure function of partial shapes (``None`` unknown, dimension 0
unknown). The core merges what the rules return, detects conflicts, and decorates every
error with the node, the operator, the argument, the shapes and the user's file:line.
"""
from __future__ import annotations

import inspect

import numpy as np

from .base import ShapeError, TypeInferenceError, MXNetError
from .opdef import Operator, unify_shape

_TAKES_OUTPUTS = {}


def _takes_outputs(fn):
    """Whether a rule accepts known output shapes as a second argument."""
    key = getattr(fn, '__func__', fn)
    r = _TAKES_OUTPUTS.get(key)
    if r is None:
        r = _TAKES_OUTPUTS[key] = len(inspect.signature(fn).parameters) >= 2
    return r

__all__ = ['infer_shapes', 'infer_types', 'shape_complete']


def shape_complete(s):
    return s is not None and all(d > 0 for d in s)


def _fmt(s):
    return '?' if s is None else str(tuple(s))


def _input_names(node):
    op = node.op
    return op.list_arguments() + op.list_auxiliary_states()


def _describe_inputs(node, ins, fmt):
    names = _input_names(node)
    return ', '.join('%s=%s' % (n, fmt(s)) for n, s in zip(names, ins))


def _unify_type(a, b, what):
    if a is None:
        return None if b is None else np.dtype(b)
    if b is None or np.dtype(a) == np.dtype(b):
        return np.dtype(a)
    raise TypeInferenceError('%s: %s vs %s' % (what, np.dtype(a).name, np.dtype(b).name))


class _Pass:
    """One inference problem (shapes or types) over a topologically ordered graph."""

    def __init__(self, order, kind):
        self.order = order
        self.kind = kind
        self.index = {id(n): k for k, n in enumerate(order)}
        self.values = {}
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
        """Merge ``value`` into entry ``key``; True if something was learnt."""
        if value is None:
            return False
        old = self.values.get(key)
        try:
            new = self.unify(old, value, what)
        except (ShapeError, TypeInferenceError):
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
        outs = [self.values.get((self.index[id(node)], i)) for i in range(op.output_count())]
        changed = False
        names = _input_names(node)
        same = getattr(op, 'same_shape_io', type(op).infer_shape is Operator.infer_shape)
        if self.kind == 'shape' and same and n_args:
            # elementwise: a known output tells the inputs (MXNet's backward inference)
            for o in outs[:op.num_visible_outputs()]:
                for j in range(n_args):
                    changed |= self.merge(in_keys[j], o, node, 'argument %r' % names[j])
            ins = [self.values.get(k) for k in in_keys]
        rule = op.infer_shape if self.kind == 'shape' else op.infer_type
        try:
            if _takes_outputs(rule):     # rules that infer inputs from known outputs
                new_ins, new_outs, new_aux = rule(list(ins), list(outs))
            else:
                new_ins, new_outs, new_aux = rule(list(ins))
        except (ShapeError, TypeInferenceError, MXNetError) as e:
            raise self.err('%s: %s (inputs: %s)'
                           % (node.describe(), e, _describe_inputs(node, ins, self.fmt))) \
                from None
        except Exception as e:  # a rule that cannot cope with unknown inputs yet
            if all(self.complete(x) for x in ins):
                raise self.err('%s: %s inference failed: %s: %s (inputs: %s)'
                               % (node.describe(), self.kind, type(e).__name__, e,
                                  _describe_inputs(node, ins, self.fmt))) from e
            return changed
        filled = list(new_ins or []) + list(new_aux or [])
        for j, (k, v) in enumerate(zip(in_keys, filled)):
            changed |= self.merge(k, v, node, 'argument %r' % names[j])
        for i, v in enumerate(new_outs or []):
            oname = op.list_outputs()[i] if i < op.output_count() else str(i)
            changed |= self.merge((self.index[id(node)], i), v, node, 'output %r' % oname)
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


def _run(order, known, kind):
    p = _Pass(order, kind)
    for node, value in known.items():
        p.merge((p.index[id(node)], 0), value, node, kind)
    return p.run()


def infer_shapes(order, known):
    """Shapes of all entries. ``known`` maps variable Node -> (partial) shape."""
    return _run(order, known, 'shape')


def infer_types(order, known):
    """dtypes of all entries. ``known`` maps variable Node -> dtype."""
    return _run(order, known, 'type')
