"""Executor.get_optimized_symbol with MXNet's common subexpression elimination (MXNet
1.9.1's test_symbol.py test_eliminate_common_expr: its expected savings per graph)."""
import numpy as np
import pytest

import symgraph as mx
from symgraph.graph.cse import eliminate_common_expr
from symgraph.test_utils import environment


def _internals(sym, cse, **shapes):
    with environment({'MXNET_ELIMINATE_COMMON_EXPR': '1' if cse else '0'}):
        exe = sym.simple_bind(mx.cpu(), **shapes)
    return len(exe.get_optimized_symbol().get_internals().list_outputs()), exe


a, b, c = mx.sym.var('a'), mx.sym.var('b'), mx.sym.var('c')
d = a + 1
CASES = [((a + 1) + (a + 2), 0), ((a + b) + (a + b), 1), (((a + b) + c) + ((a + b) + c), 2),
         (mx.sym.Group([a * d, a * d]), 0), (mx.sym.Group([a * d + b, a * d + b]), 1),
         (mx.sym.Dropout(a) + mx.sym.Dropout(a), 0),
         (mx.sym.random.uniform(shape=(3,)) + mx.sym.random.uniform(shape=(3,)), 0)]


@pytest.mark.parametrize('sym, savings', CASES)
def test_savings_as_mxnet(sym, savings):
    shapes = {n: (3,) for n in sym.list_arguments()}
    n_orig, _ = _internals(sym, False, **shapes)
    n_cse, exe = _internals(sym, True, **shapes)
    assert n_cse + savings == n_orig
    # the merged graph computes what the original does, one array per output
    merged = exe.get_optimized_symbol()
    assert merged.list_arguments() == sym.list_arguments()
    if 'Dropout' in sym.tojson() or '_random' in sym.tojson():
        return
    args = {n: mx.nd.array(np.random.uniform(size=(3,))) for n in shapes}
    want = [o.asnumpy() for o in sym.bind(mx.cpu(), args).forward()]
    got = merged.bind(mx.cpu(), args).forward()
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.asnumpy(), w, rtol=1e-6)


def _merged(sym):
    return mx.sym.Symbol(eliminate_common_expr(sym.graph().outputs))


def test_different_parameters_or_attributes_do_not_merge():
    s = mx.sym.FullyConnected(a, num_hidden=2, no_bias=True, weight=b) + \
        mx.sym.FullyConnected(a, num_hidden=2, no_bias=True, weight=b, flatten=False)
    assert len(_merged(s).get_internals().list_outputs()) == \
        len(s.get_internals().list_outputs())
    with mx.AttrScope(ctx_group='dev1'):
        e = a * 2
    s = e + a * 2
    assert len(_merged(s).get_internals().list_outputs()) == \
        len(s.get_internals().list_outputs())
