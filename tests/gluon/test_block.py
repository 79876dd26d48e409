"""gluon.Block and HybridBlock without hybridize: names, parameters, children, hooks,
repr and summary against MXNet 1.9.1 (tests/golden/gluon_core_probes.py), forward and
gradients of the imperative path against MXNet's."""
import json

import numpy as np
import pytest

import symgraph as mx
from symgraph import autograd, gluon
import gluon_core_probes


def test_names_repr_and_summary_are_mxnets(golden):
    """Every observation of the probes (automatic names with their counters, parameter
    names and structural keys, collect_params' selections, deferred shapes before and after
    the first forward, Variable attributes, the reprs, summary's table) equals MXNet's."""
    _, want = golden
    got = json.loads(json.dumps(gluon_core_probes.probes(mx)))
    assert sorted(got) == sorted(want)
    for key in want:
        assert got[key] == want[key], key


def test_summary_refuses_a_hybridized_block(blocks, capsys):
    net = blocks['Net']()
    net.initialize()
    net.hybridize()
    with pytest.raises(AssertionError, match='"net0_conv0" must not be hybridized'):
        net.summary(mx.nd.ones((1, 3, 5, 5)))
    # the hooks it attached are gone again
    assert not net.conv._forward_hooks


def test_imperative_forward_and_gradients_match_mxnet(blocks, golden, golden_file):
    arrays, _ = golden
    net = blocks['Net']()
    net.load_parameters(golden_file('net.params'))
    y_eval = net(mx.nd.array(arrays['x']))
    np.testing.assert_allclose(y_eval.asnumpy(), arrays['y_eval'], rtol=1e-5, atol=1e-6)
    y, grads, xgrad, after = gluon_core_probes.run_net(mx, net, arrays['x'], arrays['head'])
    np.testing.assert_allclose(y, arrays['y'], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(xgrad, arrays['xgrad'], rtol=1e-5, atol=1e-6)
    assert sorted(grads) == sorted(k[5:] for k in arrays.files if k.startswith('grad:'))
    for k, g in grads.items():
        np.testing.assert_allclose(g, arrays['grad:' + k], rtol=1e-4, atol=1e-6, err_msg=k)
    for k, v in after.items():      # BatchNorm's running statistics moved as MXNet's did
        np.testing.assert_allclose(v, arrays['after:' + k], rtol=1e-5, atol=1e-6, err_msg=k)


def test_deferred_shapes_come_from_the_first_forward(blocks):
    d = blocks['Dense'](4)
    d.initialize()
    assert d.weight.shape == (4, 0)
    with pytest.raises(gluon.DeferredInitializationError):
        d.weight.data()
    d(mx.nd.ones((2, 7)))
    assert d.weight.shape == (4, 7) and d.weight.data().shape == (4, 7)
    # a forward that the shapes do not fit fails naming the operator
    with pytest.raises(ValueError):
        d(mx.nd.ones((2, 6)))


def test_deferred_init_that_cannot_infer_says_so(blocks):
    class NoInfer(gluon.HybridBlock):
        def __init__(self, **kw):
            super().__init__(**kw)
            self.w = self.params.get('w', shape=(0,), allow_deferred_init=True)

        def hybrid_forward(self, F, x, w):
            return F.elemwise_add(F.sum(x), F.sum(w))
    b = NoInfer()
    b.initialize()
    with pytest.raises(ValueError, match='Deferred initialization failed because shape cannot '
                                         'be inferred'):
        b(mx.nd.ones((2,)))


def test_collect_params_select_and_sharing(blocks):
    net = blocks['Net']()
    assert list(net.collect_params('.*bias').keys()) == [
        'net0_conv0_bias', 'net0_seq0_dense0_bias', 'net0_seq0_dense1_bias']
    assert list(net.collect_params('.*dense1.*|.*gamma').keys()) == [
        'net0_bn0_gamma', 'net0_seq0_dense1_weight', 'net0_seq0_dense1_bias']
    assert not net.collect_params('nothing')
    # sharing: params= makes the new block's get() return the given Parameters
    d0 = blocks['Dense'](3, in_units=2)
    d1 = blocks['Dense'](3, in_units=2, params=d0.collect_params())
    assert d1.weight is d0.weight and d1.prefix == 'dense1_'
    assert list(d1.collect_params().keys()) == ['dense0_weight', 'dense0_bias']
    d0.initialize(mx.init.One())
    x = mx.nd.ones((1, 2))
    np.testing.assert_array_equal(d0(x).asnumpy(), d1(x).asnumpy())


def test_prefixes_and_name_scope():
    class Leaf(gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            return x
    a, b = Leaf(), Leaf(prefix='mine_')
    assert (a.name, a.prefix, b.name, b.prefix) == ('leaf0', 'leaf0_', 'mine', 'mine_')
    outer = Leaf()
    with outer.name_scope():
        inner = Leaf()
        other = Leaf()
        named = Leaf(prefix='x_')
    assert (inner.prefix, other.prefix, named.prefix) == \
        ('leaf1_leaf0_', 'leaf1_leaf1_', 'leaf1_x_')
    assert Leaf().prefix == 'leaf2_'
    empty = Leaf(prefix='')
    with empty.name_scope():
        top = Leaf()
    assert top.prefix == 'leaf3_'       # an empty prefix opens no scope
    # operator names inside a scope take the block's prefix
    with outer.name_scope():
        s = mx.sym.relu(mx.sym.var('x'))
    assert s.name == 'leaf1_relu0'


def test_setattr_registers_and_refuses_type_changes(blocks):
    net = blocks['Net']()
    assert list(net._children) == ['conv', 'bn', 'head']
    assert list(net.head._children) == ['0', '1']
    with pytest.raises(TypeError, match='Changing attribute type for conv'):
        net.conv = 3
    d = blocks['Dense'](2)
    with pytest.raises(AssertionError, match='Overriding Parameter attribute weight'):
        d.weight = gluon.Parameter('other', shape=(1,))
    plain = gluon.Block()
    with pytest.raises(ValueError, match='Children of HybridBlock must also be HybridBlock'):
        net.register_child(plain)
    plain.register_child(d)
    assert plain._children['0'] is d


def test_unregistered_container_warns(blocks):
    class Holder(gluon.Block):
        def __init__(self, dense):
            super().__init__()
            self.layers = [dense]
    h = Holder(blocks['Dense'](2))
    with pytest.warns(UserWarning, match='"Holder.layers" is an unregistered container'):
        h.collect_params()


def test_hooks_run_and_detach(blocks):
    d = blocks['Dense'](2, in_units=3)
    d.initialize()
    seen = []
    pre = d.register_forward_pre_hook(lambda blk, inp: seen.append(('pre', blk, inp)))
    post = d.register_forward_hook(lambda blk, inp, out: seen.append(('post', inp, out)))
    x = mx.nd.ones((1, 3))
    out = d(x)
    assert seen[0][0] == 'pre' and seen[0][1] is d and seen[0][2][0] is x
    assert seen[1][0] == 'post' and seen[1][2] is out
    pre.detach()
    d(x)
    assert [s[0] for s in seen] == ['pre', 'post', 'post']
    with post:
        pass                    # leaving the with statement detaches
    d(x)
    assert len(seen) == 3
    with pytest.raises(ValueError, match='cannot be attached twice'):
        post.attach(d._forward_hooks, print)


def test_apply_initialize_cast_zero_grad_reset_ctx(blocks):
    net = blocks['Net']()
    visited = []
    assert net.apply(lambda b: visited.append(b.name)) is net
    assert visited == ['net0_conv0', 'net0_bn0', 'net0_seq0_dense0', 'net0_seq0_dense1',
                       'net0_seq0', 'net0']
    net.initialize(mx.init.Xavier(), ctx=[mx.cpu(0), mx.cpu(1)])
    x = mx.nd.ones((2, 3, 5, 5))
    net(x)
    net.cast('float64')
    assert all(np.dtype(p.dtype) == np.float64 for p in net.collect_params().values())
    y = net(x.astype('float64'))
    assert y.dtype == np.float64
    with autograd.record():
        y = net(x.astype('float64'))
    y.backward()
    assert net.conv.weight.grad().asnumpy().any()
    net.zero_grad()
    assert not any(g.asnumpy().any() for p in net.collect_params().values()
                   if p.grad_req != 'null' for g in p.list_grad())
    net.reset_ctx(mx.cpu(3))
    assert all(p.list_ctx() == [mx.cpu(3)] for p in net.collect_params().values())
    with mx.cpu(3):
        assert net(mx.nd.ones((2, 3, 5, 5), dtype='float64', ctx=mx.cpu(3))).context == \
            mx.cpu(3)


def test_hybrid_block_with_symbols_and_errors(blocks):
    net = blocks['Net']()
    out = net(mx.sym.var('data'))
    assert isinstance(out, mx.sym.Symbol)
    assert out.list_arguments()[:2] == ['data', 'net0_conv0_weight']
    with pytest.raises(ValueError, match='mixed NDArrays and Symbols'):
        blocks['Seq']()(mx.nd.ones((1,)), mx.sym.var('a'))
    with pytest.raises(ValueError, match='there must be one NDArray or one Symbol'):
        blocks['Seq']()(1)
    with pytest.raises(NotImplementedError):
        gluon.Block()(mx.nd.ones((1,)))


def test_uninitialized_block_names_the_parameter(blocks):
    d = blocks['Dense'](2, in_units=3)
    with pytest.raises(RuntimeError, match="Parameter 'dense0_weight' has not been "
                                           "initialized"):
        d(mx.nd.ones((1, 3)))


def test_plain_block_forward(blocks):
    p = blocks['Plain']()
    p.initialize(mx.init.One())
    out = p(mx.nd.ones((2, 3, 5, 5)))
    assert out.shape == (2, 2)
    assert p.extra.weight.shape == (2, 3)
    assert 'Plain(\n  (body): Net(' in repr(p)
