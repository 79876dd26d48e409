"""The graphs that control-flow nodes hold (``_foreach``'s body, ``_cond``'s branches).

:class:`GraphSubgraph` implements :class:`symgraph.opdef.Subgraph` over graph nodes:
inference runs the core's sweeps inside the body, and :meth:`GraphSubgraph.bind` compiles
the body once into a :class:`~symgraph.graph.plan.Plan` that a loop runs once per step.
"""
from __future__ import annotations

import numpy as np

from .. import opdef
from ..base import ShapeError, TypeInferenceError
from .infer import infer_entries, shape_complete
from .nodes import topo_order, aux_variable_ids
from .plan import Plan, check_error

__all__ = ['GraphSubgraph']


class GraphSubgraph(opdef.Subgraph):
    """A subgraph given by its outputs, ``heads`` ((Node, output index) pairs)."""

    def __init__(self, heads):
        self.heads = tuple(heads)
        self.order = topo_order([n for n, _ in self.heads])
        self.inputs = [n for n in self.order if n.op is None]
        self._aux_ids = aux_variable_ids(self.order)
        self._index = {id(n): k for k, n in enumerate(self.order)}

    def list_inputs(self):
        return [n.name for n in self.inputs]

    def num_outputs(self):
        return len(self.heads)

    def nodes(self):
        return [(n.op, n.name, [(self._index[id(src)], i) for src, i in n.inputs])
                for n in self.order]

    def __repr__(self):
        return '<GraphSubgraph inputs=%s outputs=%d>' % (self.list_inputs(), len(self.heads))

    def _infer(self, ins, outs, kind):
        known = {}
        for n, v in zip(self.inputs, ins):
            if v is not None:
                known[(n, 0)] = v
        for (n, i), v in zip(self.heads, outs):
            if v is not None:
                if (n, i) in known:
                    known[(n, i)] = _unify(known[(n, i)], v, kind)
                else:
                    known[(n, i)] = v
        values = infer_entries(self.order, known, kind)
        new_ins = [values.get((self._index[id(n)], 0)) for n in self.inputs]
        new_outs = [values.get((self._index[id(n)], i)) for n, i in self.heads]
        return new_ins, new_outs

    def infer_shape(self, in_shapes, out_shapes):
        return self._infer(in_shapes, out_shapes, 'shape')

    def infer_type(self, in_types, out_types):
        return self._infer(in_types, out_types, 'type')

    def bind(self, ctx, xp, in_shapes, in_dtypes, need_grad):
        known = {(n, 0): tuple(s) for n, s in zip(self.inputs, in_shapes)}
        shapes = infer_entries(self.order, known, 'shape')
        dtypes = infer_entries(self.order, {(n, 0): np.dtype(t) for n, t in
                                            zip(self.inputs, in_dtypes)}, 'type')
        for k, n in enumerate(self.order):
            for i in range(n.num_outputs()):
                if not shape_complete(shapes.get((k, i))):
                    raise ShapeError('subgraph: the shape of %s output %d could not be '
                                     'inferred (got %s)' % (n.describe(), i,
                                                            shapes.get((k, i))))
                if dtypes.get((k, i)) is None:
                    raise TypeInferenceError('subgraph: the type of %s output %d could not '
                                             'be inferred' % (n.describe(), i))
        return _Runner(self, ctx, xp, shapes, dtypes, need_grad)


def _unify(a, b, kind):
    if kind == 'shape':
        return opdef.unify_shape(a, b)
    return a


class _Runner(opdef.SubgraphRunner):

    def __init__(self, graph, ctx, xp, shapes, dtypes, need_grad):
        self.xp = xp
        args = [k for k, n in enumerate(graph.inputs) if id(n) not in graph._aux_ids]
        aux = [k for k, n in enumerate(graph.inputs) if id(n) in graph._aux_ids]
        self.args, self.aux = args, aux
        self.need = [bool(need_grad[k]) for k in args]
        reqs = ['write' if nd else 'null' for nd in self.need]
        self.plan = Plan(graph.order, [graph.inputs[k] for k in args],
                         [graph.inputs[k] for k in aux], list(graph.heads), shapes, dtypes,
                         reqs, xp, ctx)
        self.n_in = len(graph.inputs)
        self.n_out = len(graph.heads)
        self._fwd = {}

    def forward(self, inputs, is_train):
        key = bool(is_train)
        if key not in self._fwd:
            self._fwd[key] = self.plan.forward_fn(is_train, keep_saved=True)
        fn, fname, line_step = self._fwd[key]
        A = [inputs[k] for k in self.args]
        X = [inputs[k] for k in self.aux]
        try:
            heads, saved = fn(A, X, [None] * self.n_out)
        except Exception as e:
            err = check_error(e, fname, line_step, 'forward (inside a subgraph)')
            if err is not None:
                raise err from e
            raise
        return list(heads), saved

    def backward(self, saved, out_grads):
        xp = self.xp
        plan = self.plan
        fn, fname, line_step = plan.backward_fn()
        og = []
        for e, g in zip(plan.head_entries, out_grads):
            og.append(xp.zeros(plan.shapes[e], dtype=plan.dtypes[e]) if g is None else g)
        G = [xp.zeros(plan.shapes[e], dtype=plan.dtypes[e]) if nd else None
             for e, nd in zip(plan.arg_entries, self.need)]
        try:
            fn(saved, og, G)
        except Exception as e:
            err = check_error(e, fname, line_step, 'backward (inside a subgraph)')
            if err is not None:
                raise err from e
            raise
        out = [None] * self.n_in
        for k, g in zip(self.args, G):
            out[k] = g
        return out
