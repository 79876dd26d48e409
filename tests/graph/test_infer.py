"""Shape and type inference (symgraph/graph/infer.py): a sweep skips the nodes whose step
would learn nothing (settled), and that changes nothing else: every rule is asked the same
questions in the same order, with the same results and errors, as when every sweep steps
every node (the plain fixed point, which these tests run by never letting a node settle)."""
import pytest

import symgraph as mx
import symgraph.graph.infer as infer
from symgraph.graph.nodes import Node
from symgraph.opdef import Operator
from symgraph.symbol.symbol import Symbol

from harness import resnet_block


class _NeverSettled(set):
    """A ``settled`` set that holds nothing: every sweep steps every node."""

    def add(self, item):
        pass


def _record(monkeypatch, graph):
    """Logs (operator, method, arguments, result) of every rule call of ``graph``'s
    operators, in order (the classes are patched for the test)."""
    calls = []
    # each rule where a class defines it (Operator's own included), so that the
    # default-rule tests (``type(op).infer_type is Operator.infer_type``) still hold
    owners = {(c, name) for n in graph._order() if n.op is not None
              for c in type(n.op).__mro__
              for name in ('infer_shape', 'infer_type') if name in vars(c)}
    for cls, name in owners:
        rule = vars(cls)[name]

        def logged(self, *args, _rule=rule, _name=name):
            try:
                out = _rule(self, *args)
            except Exception as e:
                calls.append((type(self).__name__, _name, repr(args), type(e).__name__))
                raise
            calls.append((type(self).__name__, _name, repr(args), repr(out)))
            return out
        logged.__wrapped__ = rule
        monkeypatch.setattr(cls, name, logged)
    return calls


def _run_both(monkeypatch, graph, action):
    """``action()``'s result or error and the rule calls it made, with settled nodes
    skipped and with every node stepped in every sweep."""
    calls = _record(monkeypatch, graph)
    init = infer._Pass.__init__
    got = []
    for plain in (False, True):
        def patched(self, *a, **k):
            init(self, *a, **k)
            if plain:
                self.settled = _NeverSettled()
        monkeypatch.setattr(infer._Pass, '__init__', patched)
        del calls[:]
        try:
            out = repr(action())
        except mx.MXNetError as e:
            out = '%s: %s' % (type(e).__name__, e)
        got.append((out, list(calls)))
    monkeypatch.setattr(infer._Pass, '__init__', init)
    return got


def _backwards():
    # shapes and types that flow backwards: from an elementwise output to its inputs, from
    # Reshape's output, from a later node into an input an earlier node already used
    a, b, c = mx.sym.var('a'), mx.sym.var('b'), mx.sym.var('c')
    y = mx.sym.exp(a * 2) + b
    z = mx.sym.Reshape(y, shape=(-1,)) * c
    return mx.sym.Group([mx.sym.tanh(a), z, mx.sym.FullyConnected(y, num_hidden=2)])


class _Widen(Operator):
    """Elementwise by declaration (same_shape_io), but its rule names only its output's
    shape: that reaches the input when the step, run again, copies the output back."""
    name = '_test_widen'
    same_shape_io = True

    def infer_shape(self, in_shapes):
        return [None], [(2, 3)], []


def _widen():
    x = mx.sym.var('x')
    w = Symbol([(Node(_Widen(), 'w', {}, [x._outputs[0]]), 0)])
    return mx.sym.Group([w, mx.sym.exp(x)])


CASES = [
    (_widen, lambda s: s.infer_shape_partial()),
    (resnet_block, lambda s: s.infer_shape(data=(2, 4, 5, 5))),
    (resnet_block, lambda s: s.infer_type(data='float64')),
    (resnet_block, lambda s: s.infer_shape_partial(data=(0, 4, 5, 5))),
    (resnet_block, lambda s: s.infer_shape(data=(2, 4, 5, 5), c1_weight=(4, 3, 3, 3))),
    (resnet_block, lambda s: [a.shape for a in s.simple_bind(
        mx.cpu(), data=(2, 4, 5, 5)).arg_arrays]),
    (_backwards, lambda s: s.infer_shape(c=(6,), a=(2, 3))),
    (_backwards, lambda s: s.infer_shape_partial(c=(6,))),
    (_backwards, lambda s: s.infer_type(c='float16')[1]),
    (_backwards, lambda s: s.infer_shape(a=(2, 3), c=(5,))),       # a conflict
]


@pytest.mark.parametrize('make, action', CASES)
def test_skipping_settled_nodes_asks_every_rule_the_same_questions(monkeypatch, make,
                                                                     action):
    g = make()
    (skip, skip_calls), (plain, plain_calls) = _run_both(monkeypatch, g, lambda: action(g))
    assert skip == plain
    assert skip_calls == plain_calls
    assert skip_calls        # the rules were asked (the log works)


def test_a_settled_node_is_stepped_again_when_an_entry_of_it_changes(monkeypatch):
    # tanh(e) comes first and learns nothing (e unknown) and settles; e + f then gives e's
    # shape, which unsettles tanh: the backward sweep asks its rule again and its output
    # gets the shape
    e, f = mx.sym.var('e'), mx.sym.var('f')
    t = mx.sym.tanh(e, name='t')
    g = mx.sym.Group([t, e + f])
    tanh_op = type(t._outputs[0][0].op).__name__
    calls = _record(monkeypatch, g)
    arg, out, _ = g.infer_shape(f=(3, 2))
    assert arg == [(3, 2), (3, 2)] and out == [(3, 2), (3, 2)]
    asked = [c[2] for c in calls if c[0] == tanh_op and c[1] == 'infer_shape']
    assert asked == [repr(([None],)), repr(([(3, 2)],))]


def test_an_output_known_after_the_step_reaches_the_inputs():
    # the step that learnt w's output (2, 3) copied nothing into x yet: it must not settle
    arg, out, _ = _widen().infer_shape_partial()
    assert arg == [(2, 3)] and out == [(2, 3), (2, 3)]


def test_shape_complete():
    assert infer.shape_complete((2, 3)) and infer.shape_complete(())
    assert not infer.shape_complete(None) and not infer.shape_complete((2, 0))
    assert not infer.shape_complete((-1, 3))


def test_wiring_is_shared_and_rebuilt_for_another_order():
    s = resnet_block()
    order = s._order()
    w = infer.Wiring(order)
    assert [n for n, *_ in w.nodes] == [n for n in order if n.op is not None]
    # every entry an operator reads or writes lists that operator
    for pos, (n, k, in_keys, out_keys, n_args) in enumerate(w.nodes):
        assert n_args == len(n.op.list_arguments())
        assert all(pos in w.touch[key] for key in in_keys + out_keys)
    known = {order[0]: (2, 4, 5, 5)}
    assert infer.infer_shapes(order, known, wiring=w) == infer.infer_shapes(order, known)
    # a wiring of another order is not used
    other = infer.Wiring(mx.sym.exp(mx.sym.var('q'))._order())
    assert infer.infer_shapes(order, known, wiring=other) == infer.infer_shapes(order, known)
