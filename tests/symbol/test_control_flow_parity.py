"""Control-flow bodies from MXNet 1.9.1's test_contrib_control_flow.py that symgraph got
wrong, against MXNet-made golden data (tests/golden/make_control_flow_parity.py): a body
listing one entry as two outputs (both head gradients count), a while_loop body reading
as a free variable the entry a loop variable starts from (the free one keeps its value),
foreach over 1-D data (slices of shape (1,)), a while_loop whose condition is false at
once (it runs no step); and the builders' bookkeeping (``AttrScope._subgraph_names``,
an unused state)."""
import collections
import json
import os

import numpy as np
import pytest

import symgraph as mx
from make_control_flow_parity import CASES, FORWARD_ONLY, fixed_inputs, control_flow_attrs

GOLDEN = os.path.join(os.path.dirname(__file__), '..', 'golden', 'data')
with open(os.path.join(GOLDEN, 'control_flow_parity.json')) as _f:
    META = json.load(_f)
ARRAYS = dict(np.load(os.path.join(GOLDEN, 'control_flow_parity.npz')))


def _run(sym, name, backward):
    args = {k: mx.nd.array(ARRAYS['%s/in/%s' % (name, k)]) for k in sym.list_arguments()}
    grads = {k: mx.nd.zeros(v.shape) for k, v in args.items()} if backward else None
    ex = sym.bind(mx.cpu(), args, args_grad=grads)
    outs = [o.asnumpy() for o in ex.forward(is_train=backward)]
    if backward:
        ex.backward([mx.nd.array(ARRAYS['%s/head/%d' % (name, j)])
                     for j in range(len(outs))])
    return outs, {k: g.asnumpy() for k, g in (grads or {}).items()}


@pytest.mark.parametrize('name', sorted(CASES))
def test_against_mxnet(name):
    sym, shapes = CASES[name](mx)
    meta = META[name]
    assert sym.list_arguments() == meta['arguments']
    assert control_flow_attrs(sym) == meta['attrs']
    assert sorted(fixed_inputs(shapes)) == sorted(
        k.split('/')[2] for k in ARRAYS if k.startswith(name + '/in/'))
    backward = name not in FORWARD_ONLY
    outs, grads = _run(sym, name, backward)
    assert [list(o.shape) for o in outs] == meta['out_shapes']
    for j, o in enumerate(outs):
        np.testing.assert_allclose(o, ARRAYS['%s/out/%d' % (name, j)], rtol=1e-5,
                                   atol=1e-6, err_msg='output %d' % j)
    for k, g in grads.items():
        np.testing.assert_allclose(g, ARRAYS['%s/grad/%s' % (name, k)], rtol=1e-5,
                                   atol=1e-5, err_msg=k)


@pytest.mark.parametrize('name', ['foreach_repeated_output', 'while_repeated_output',
                                  'cond_repeated_output'])
def test_repeated_outputs_sum_their_head_gradients_without_a_warning(name):
    # the compiled body would warn that it takes the last head gradient only (the rule
    # for an executor's own heads); the loop adds them first, so no warning (warnings are
    # errors in this suite) and the gradient is the float64 central difference
    sym, _ = CASES[name](mx)
    vals = {k: ARRAYS['%s/in/%s' % (name, k)].astype('float64')
            for k in sym.list_arguments()}
    heads = [ARRAYS['%s/head/%d' % (name, j)].astype('float64')
             for j in range(len(META[name]['out_shapes']))]
    args = {k: mx.nd.array(v, dtype='float64') for k, v in vals.items()}
    grads = {k: mx.nd.zeros(v.shape, dtype='float64') for k, v in vals.items()}
    ex = sym.bind(mx.cpu(), args, args_grad=grads)
    ex.forward(is_train=True)
    ex.backward([mx.nd.array(h, dtype='float64') for h in heads])

    def loss(k, x):
        a = dict(args, **{k: mx.nd.array(x, dtype='float64')})
        outs = sym.bind(mx.cpu(), a).forward()
        return sum(float((o.asnumpy() * h).sum()) for o, h in zip(outs, heads))
    eps = 1e-6
    for k, v in vals.items():
        num = np.zeros_like(v)
        for idx in np.ndindex(v.shape):
            up, down = v.copy(), v.copy()
            up[idx] += eps
            down[idx] -= eps
            num[idx] = (loss(k, up) - loss(k, down)) / (2 * eps)
        np.testing.assert_allclose(grads[k].asnumpy(), num, rtol=1e-6, atol=1e-7,
                                   err_msg=k)


def test_symbolic_and_imperative_while_loop_agree_when_the_body_repeats_an_output():
    # MXNet's test_while_loop_for_foreach compares the two; the imperative loop records
    # each step on the tape and so always summed
    name = 'while_repeated_output'
    vals = {k: ARRAYS['%s/in/%s' % (name, k)] for k in ('s', 'a', 'b')}
    heads = [ARRAYS['%s/head/%d' % (name, j)] for j in range(2)]
    s, a, b = (mx.nd.array(vals[k]) for k in ('s', 'a', 'b'))
    for v in (s, a, b):
        v.attach_grad()
    with mx.autograd.record():
        outs, st = mx.nd.contrib.while_loop(
            lambda s: (s < 1e35).prod(),
            lambda s: (a * 1.5 + b * 2.5 - s * 3.5,) * 2, [s], max_iterations=3)
        # (one step output: the NDArray itself, where mx.sym's is a one-output Symbol)
        loss = ((outs * 2) * mx.nd.array(heads[0])).sum() \
            + ((st[0] * 3) * mx.nd.array(heads[1])).sum()
    loss.backward()
    for k, v in (('s', s), ('a', a), ('b', b)):
        np.testing.assert_allclose(v.grad.asnumpy(), ARRAYS['%s/grad/%s' % (name, k)],
                                   rtol=1e-5, atol=1e-5, err_msg=k)


def test_while_loop_false_at_once_gives_zero_rows_of_the_inferred_shape():
    # MXNet hands on its step outputs uninitialised then; here they are zeros
    s, a = mx.sym.var('s'), mx.sym.var('a')
    outs, st = mx.sym.contrib.while_loop(
        lambda s: (s > 1e35).prod(), lambda s: (s * a, [s + a]), [s], max_iterations=4)
    ex = mx.sym.Group([outs[0], st[0]]).bind(
        mx.cpu(), {'s': mx.nd.array([1., 2.]), 'a': mx.nd.array([3., 4.])})
    steps, final = ex.forward()
    assert steps.shape == (4, 2) and not steps.asnumpy().any()
    np.testing.assert_array_equal(final.asnumpy(), [1., 2.])


def test_hybridized_while_loop_false_at_once():
    # MXNet's test_while_loop_simple_forward, case 2.3
    class Block(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, *loop_vars):
            return F.contrib.while_loop(
                cond=lambda i, s, false: false,
                func=lambda i, s, false: (i, (i + 1, s + i, false)),
                loop_vars=loop_vars, max_iterations=10)
    block = Block()
    block.hybridize()
    _, (i, s, _) = block(mx.nd.array([1], dtype='int64'), mx.nd.array([0], dtype='int64'),
                         mx.nd.array([0], dtype='int64'))
    assert i.asscalar() == 1 and s.asscalar() == 0


def test_subgraph_names_count_in_attrscope():
    # MXNet's test_scope resets AttrScope._subgraph_names and reads the counts back
    saved = mx.AttrScope._subgraph_names
    mx.AttrScope._subgraph_names = collections.defaultdict(int)
    try:
        data = mx.sym.var('data')
        for _ in range(2):
            mx.sym.contrib.cond(data > 0.5, lambda: data * 2, lambda: data * 3,
                                name='my_cond')
        assert dict(mx.AttrScope._subgraph_names) == {
            'my_cond_pred': 2, 'my_cond_then': 2, 'my_cond_else': 2}
    finally:
        mx.AttrScope._subgraph_names = saved


def test_foreach_with_an_unused_state_raises_assertion_error():
    # MXNet asserts; its test_foreach catches AssertionError. It is a ValueError too.
    data, s = mx.sym.var('data'), mx.sym.var('s')
    for error in (AssertionError, ValueError):
        with pytest.raises(error, match='state arrays have to be used'):
            mx.sym.contrib.foreach(lambda x, states: (x * 2, [x]), data, [s])


def test_head_gradient_of_another_shape_is_refused():
    # MXNet's test_foreach (step14) hands a (4, 2) head gradient to a (3, 2) head; MXNet
    # uses it as it is (shape-dependent, wrong gradients), symgraph refuses: a deliberate
    # difference (docs/differences.md, autograd)
    x = mx.nd.ones((3, 2))
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.contrib.foreach(lambda d, s: (d * 2, s), x, [])[0]
    with pytest.raises(ValueError, match=r'head gradient of shape \(4, 2\) for a head of '
                                         r'shape \(3, 2\)'):
        y.backward(mx.nd.ones((4, 2)))
