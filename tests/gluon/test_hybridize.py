"""HybridBlock.hybridize(): the traced graph run through the executor (CachedOp), against
the imperative path and MXNet 1.9.1's values; export and SymbolBlock."""
import json

import numpy as np
import pytest

import symgraph as mx
from symgraph import autograd, gluon
import gluon_core_probes


def _loaded_net(blocks, golden_file, hybridize=True, **flags):
    net = blocks['Net']()
    net.load_parameters(golden_file('net.params'))
    if hybridize:
        net.hybridize(**flags)
    return net


@pytest.mark.parametrize('flags', [{}, {'static_alloc': True, 'static_shape': True}])
def test_hybridized_forward_and_gradients_match_mxnet(blocks, golden, golden_file, flags):
    arrays, _ = golden
    net = _loaded_net(blocks, golden_file, **flags)
    y_eval = net(mx.nd.array(arrays['x']))
    np.testing.assert_allclose(y_eval.asnumpy(), arrays['y_eval'], rtol=1e-5, atol=1e-6)
    y, grads, xgrad, after = gluon_core_probes.run_net(mx, net, arrays['x'], arrays['head'])
    np.testing.assert_allclose(y, arrays['y'], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(xgrad, arrays['xgrad'], rtol=1e-5, atol=1e-6)
    for k, g in grads.items():
        np.testing.assert_allclose(g, arrays['grad:' + k], rtol=1e-4, atol=1e-6, err_msg=k)
    for k, v in after.items():
        np.testing.assert_allclose(v, arrays['after:' + k], rtol=1e-5, atol=1e-6, err_msg=k)


def test_hybridized_equals_imperative_in_float64(blocks):
    """Both paths, float64, several steps with grad_req 'add' on one parameter."""
    nets = []
    for hybrid in (False, True):
        with mx.name.NameManager():
            net = blocks['Net']()
        net.initialize(mx.init.Xavier())
        net(mx.nd.ones((2, 3, 5, 5)))
        net.cast('float64')
        nets.append(net)
    for (k, p), q in zip(nets[0].collect_params().items(), nets[1].collect_params().values()):
        q.set_data(p.data())
    nets[1].hybridize()
    for net in nets:
        net.conv.weight.grad_req = 'add'
    rng = np.random.RandomState(0)
    xs = [rng.randn(2, 3, 5, 5) for _ in range(3)]
    results = []
    for net in nets:
        outs = []
        for x in xs:
            with autograd.record():
                y = net(mx.nd.array(x, dtype='float64'))
                loss = (y * y).sum()
            loss.backward()
            outs.append(y.asnumpy())
        grads = {k[6:]: p.grad().asnumpy() for k, p in net.collect_params().items()
                 if p.grad_req != 'null'}
        stats = net.bn.running_var.data().asnumpy()
        results.append((outs, grads, stats))
    (o0, g0, s0), (o1, g1, s1) = results
    for a, b in zip(o0, o1):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    assert sorted(g0) == sorted(g1)
    for k in g0:
        np.testing.assert_allclose(g0[k], g1[k], rtol=1e-10, atol=1e-12, err_msg=k)
    np.testing.assert_allclose(s0, s1, rtol=1e-12)


def test_executors_are_reused_per_input_signature(blocks, golden_file):
    net = _loaded_net(blocks, golden_file, static_alloc=True, static_shape=True)
    x = mx.nd.ones((2, 3, 5, 5))
    net(x)
    op = net._cached_op
    key = next(iter(op._cache))
    exe = op._cache[key][0].exe
    for _ in range(3):
        net(x)
    assert op.num_binds == 1
    net(mx.nd.ones((4, 3, 5, 5)))       # another batch size: one more bind
    assert op.num_binds == 2
    net(x)
    assert op.num_binds == 2 and op._cache[key][0].exe is exe
    with autograd.record():             # computing gradients: an executor with them
        net(x)
    assert op.num_binds == 3
    with autograd.record():
        net(x)
    assert op.num_binds == 3
    net.hybridize(static_alloc=True)    # clear=True: a new graph and executors
    net(x)
    assert net._cached_op is not op


def test_two_calls_under_one_record_keep_their_own_arrays(blocks, golden_file):
    """A block called twice before backward (a siamese pair) gets two executors: the first
    call's saved arrays must survive the second."""
    rng = np.random.RandomState(1)
    x1, x2 = rng.randn(2, 3, 5, 5), rng.randn(2, 3, 5, 5)
    grads = []
    for hybrid in (False, True):
        with mx.name.NameManager():
            net = _loaded_net(blocks, golden_file, hybridize=hybrid)
        with autograd.record():
            loss = (net(mx.nd.array(x1)) * net(mx.nd.array(x2))).sum()
        loss.backward()
        grads.append({k[5:]: p.grad().asnumpy() for k, p in net.collect_params().items()
                      if p.grad_req != 'null'})
        if hybrid:
            assert net._cached_op.num_binds == 2
            # both executors are free again: a third recorded call binds nothing new
            with autograd.record():
                loss = net(mx.nd.array(x1)).sum()
            loss.backward()
            assert net._cached_op.num_binds == 2
    for k in grads[0]:
        np.testing.assert_allclose(grads[1][k], grads[0][k], rtol=1e-4, atol=1e-6, err_msg=k)


def test_outputs_inputs_and_gradients_are_not_overwritten_by_later_calls(blocks, golden_file):
    net = _loaded_net(blocks, golden_file)
    x = mx.nd.array(np.random.RandomState(2).randn(2, 3, 5, 5))
    x_copy = x.asnumpy()
    y1 = net(x)
    kept = y1.asnumpy()
    net(x * 2)
    np.testing.assert_array_equal(y1.asnumpy(), kept)
    np.testing.assert_array_equal(x.asnumpy(), x_copy)
    x.attach_grad()
    dx = []
    for scale in (1, 3):
        with autograd.record():
            y = net(x)
        dx.append(autograd.grad(y, [x], head_grads=mx.nd.ones((2, 3)) * scale)[0])
    first = dx[0].asnumpy()
    np.testing.assert_allclose(dx[1].asnumpy(), first * 3, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(x.asnumpy(), x_copy)


def test_strided_input_views(blocks):
    d = blocks['Dense'](2, in_units=3)
    d.initialize(mx.init.Xavier())
    # an NDArray over a strided array (an operator may return one)
    view = mx.nd.NDArray(np.arange(24, dtype=np.float32).reshape(4, 6)[:, 1:4])
    assert not view._data.flags.c_contiguous
    want = d(mx.nd.array(view.asnumpy())).asnumpy()
    d.hybridize()
    np.testing.assert_allclose(d(view).asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_backward_twice_through_a_hybridized_call_is_refused(blocks, golden_file):
    net = _loaded_net(blocks, golden_file)
    with autograd.record():
        y = net(mx.nd.ones((2, 3, 5, 5)))
    y.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match='backward through the hybridized block net0 a '
                                           'second time'):
        y.backward()


def test_inputs_without_gradient_and_inference_mode(blocks, golden_file):
    net = _loaded_net(blocks, golden_file)
    with autograd.record():
        y = net(mx.nd.ones((2, 3, 5, 5)))       # x needs no gradient: none is computed
    y.backward()
    bound = net._cached_op._cache[next(iter(net._cached_op._cache))][0]
    assert bound.grad_pos[0] is None
    # with every parameter frozen and no input gradient nothing is recorded
    net.collect_params().setattr('grad_req', 'null')
    with autograd.record():
        y = net(mx.nd.ones((2, 3, 5, 5)))
    with pytest.raises(RuntimeError, match='not in a computational graph'):
        y.backward()
    # train_mode outside record: BatchNorm uses the batch statistics, as imperatively
    with autograd.train_mode():
        a = net(mx.nd.ones((2, 3, 5, 5)) * 0.3).asnumpy()
    net.hybridize(active=False)
    with autograd.train_mode():
        b = net(mx.nd.ones((2, 3, 5, 5)) * 0.3).asnumpy()
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_deferred_init_through_the_first_hybridized_call(blocks):
    d = blocks['Dense'](4)
    d.initialize(mx.init.One())
    d.hybridize()
    out = d(mx.nd.ones((2, 7)))
    assert d.weight.shape == (4, 7)
    np.testing.assert_array_equal(out.asnumpy(), np.full((2, 4), 7))


def test_a_new_input_shape_rebinds_or_fails_clearly(blocks):
    d = blocks['Dense'](4, in_units=5)
    d.initialize()
    d.hybridize()
    assert d(mx.nd.ones((3, 5))).shape == (3, 4)
    assert d(mx.nd.ones((6, 5))).shape == (6, 4)
    with pytest.raises(ValueError, match='dense0_fwd|FullyConnected'):
        d(mx.nd.ones((3, 6)))


def test_several_inputs_none_and_nested_outputs():
    class Two(gluon.HybridBlock):
        def hybrid_forward(self, F, a, b=None, c=None):
            s = a + b
            return s, [a * b, F.relu(s)]
    t = Two()
    t.hybridize()
    a, b = mx.nd.array([1, -3]), mx.nd.array([2, 1])
    s, (p, r) = t(a, b)
    np.testing.assert_array_equal(s.asnumpy(), [3, -2])
    np.testing.assert_array_equal(p.asnumpy(), [2, -3])
    np.testing.assert_array_equal(r.asnumpy(), [3, 0])
    assert [v.name for v in t._cached_graph[0]] == ['data0', 'data1']
    with pytest.raises(ValueError, match='argument structure of HybridBlock does not match'):
        t(a, [b, b])
    a.attach_grad()
    b.attach_grad()
    with autograd.record():
        s, (p, r) = t(a, b)
        loss = (s + p * 2 + r).sum()
    loss.backward()
    # d/da: 1 + 2b + relu'(s); d/db: 1 + 2a + relu'(s)
    np.testing.assert_array_equal(a.grad.asnumpy(), [1 + 4 + 1, 1 + 2 + 0])
    np.testing.assert_array_equal(b.grad.asnumpy(), [1 + 2 + 1, 1 - 6 + 0])


def test_unused_input_and_parameter_warn(blocks):
    class Unused(gluon.HybridBlock):
        def __init__(self, **kw):
            super().__init__(**kw)
            self.w = self.params.get('w', shape=(2,))

        def hybrid_forward(self, F, a, b, w):
            return a * 2
    u = Unused()
    u.initialize()
    u.hybridize()
    with pytest.warns(UserWarning) as rec:
        u(mx.nd.ones((2,)), mx.nd.ones((2,)))
    text = ' '.join(str(w.message) for w in rec)
    assert 'The 1-th input to HybridBlock is not used' in text
    assert 'Parameter unused0_w is not used by any computation' in text


def test_infer_shape_and_type(blocks):
    net = blocks['Net']()
    net.infer_shape(mx.nd.ones((2, 3, 5, 5)))
    assert net.conv.weight.shape == (4, 3, 3, 3)
    assert net.head._children['0'].weight.shape == (8, 100)
    net.initialize()
    net.infer_type(mx.nd.ones((2, 3, 5, 5)))
    assert np.dtype(net.conv.weight.dtype) == np.float32
    # float64 data for float32 parameters: refused naming the operator, as MXNet
    with pytest.raises(TypeError, match='net0_conv0_fwd'):
        net.infer_type(mx.nd.ones((2, 3, 5, 5), dtype='float64'))


def test_export_writes_mxnets_files(blocks, golden, golden_file, tmp_path):
    arrays, _ = golden
    net = _loaded_net(blocks, golden_file)
    with pytest.raises(RuntimeError, match='run forward with this block at least once'):
        net.export(str(tmp_path / 'early'))
    gluon_core_probes.run_net(mx, net, arrays['x'], arrays['head'])
    net.export(str(tmp_path / 'net'), epoch=3)
    with open(golden_file('net-symbol.json')) as f:
        want = json.load(f)
    with open(str(tmp_path / 'net-symbol.json')) as f:
        got = json.load(f)

    def strip(graph):       # the third number of an input entry is MXNet's version: free
        for n in graph['nodes']:
            n['inputs'] = [e[:2] for e in n['inputs']]
        return graph
    assert strip(got) == strip(want)
    ours = mx.nd.load(str(tmp_path / 'net-0003.params'))
    theirs = mx.nd.load(golden_file('net-0003.params'))
    assert sorted(ours) == sorted(theirs)
    assert 'aux:net0_bn0_running_mean' in ours and 'arg:net0_conv0_weight' in ours
    for k in theirs:
        np.testing.assert_allclose(ours[k].asnumpy(), theirs[k].asnumpy(), rtol=1e-5,
                                   atol=1e-6, err_msg=k)


def test_symbol_block_imports_mxnets_export(golden, golden_file, blocks):
    arrays, _ = golden
    # MXNet exported after one training step: BatchNorm's statistics are the 'after' ones
    ref = blocks['Net']()
    ref.load_parameters(golden_file('net.params'))
    for k, p in ref.collect_params().items():
        p.set_data(mx.nd.array(arrays['after:' + k]))
    want = ref(mx.nd.array(arrays['x'])).asnumpy()
    for hybrid in (False, True):
        sb = gluon.SymbolBlock.imports(golden_file('net-symbol.json'), ['data'],
                                       golden_file('net-0003.params'))
        assert sorted(sb.collect_params().keys()) == sorted(ref.collect_params().keys())
        assert sb.collect_params()['net0_bn0_running_var'].grad_req == 'null'
        if hybrid:
            sb.hybridize()
        np.testing.assert_allclose(sb(mx.nd.array(arrays['x'])).asnumpy(), want, rtol=1e-5,
                                   atol=1e-6)
    assert repr(sb).startswith('SymbolBlock(\n<Symbol net0_seq0_dense1_fwd> : 1 -> 1')
    with pytest.raises(ValueError, match="'net0_conv0_weight' is missing"):
        gluon.SymbolBlock.imports(golden_file('net-symbol.json'), ['data'],
                                  golden_file('net.params'))


def test_symbol_block_gradients_and_symbol_inputs(blocks, golden, golden_file):
    arrays, _ = golden
    data = mx.sym.var('data')
    net = _loaded_net(blocks, golden_file, hybridize=False)
    sb = gluon.SymbolBlock(net(data), data, params=net.collect_params())
    assert sb.collect_params()['net0_conv0_weight'] is net.conv.weight
    y, grads, xgrad, _ = gluon_core_probes.run_net(mx, sb, arrays['x'], arrays['head'])
    np.testing.assert_allclose(y, arrays['y'], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(xgrad, arrays['xgrad'], rtol=1e-5, atol=1e-6)
    for k, g in grads.items():
        np.testing.assert_allclose(g, arrays['grad:' + k], rtol=1e-4, atol=1e-6, err_msg=k)
    composed = sb(mx.sym.var('other'))
    assert composed.list_arguments()[0] == 'other'
    with pytest.raises(ValueError, match='Input symbols must be variable'):
        gluon.SymbolBlock(net(data), mx.sym.relu(data))


def test_symbol_block_multiple_outputs_and_cast():
    data = mx.sym.var('data')
    fc = mx.sym.FullyConnected(data, num_hidden=3, name='fc')
    sb = gluon.SymbolBlock([fc, mx.sym.relu(fc)], data)
    sb.initialize(mx.init.One())        # (the bias too: a Parameter's init is by weight rule)
    a, b = sb(mx.nd.array([[1, -3]]))
    np.testing.assert_array_equal(a.asnumpy(), [[-1, -1, -1]])
    np.testing.assert_array_equal(b.asnumpy(), [[0, 0, 0]])
    a, b = sb(mx.nd.array([[1, 2]]))
    np.testing.assert_array_equal(b.asnumpy(), [[4, 4, 4]])
    sb.cast('float64')
    a, _ = sb(mx.nd.array([[1, 2]], dtype='float64'))
    assert a.dtype == np.float64


def test_op_hook_sees_the_operators(blocks, golden_file):
    net = _loaded_net(blocks, golden_file)
    seen = []
    net.register_op_hook(lambda name, op, arr: seen.append((name, op)))
    net(mx.nd.ones((2, 3, 5, 5)))
    assert ('net0_conv0_fwd_output', 'Convolution') in seen
    assert any(op == 'FullyConnected' for _, op in seen)
    # monitor_all: the inputs too, named after the operator's input (MXNet's names)
    d = gluon_core_probes.define(mx)['Dense'](2, in_units=3, prefix='dense_')
    d.initialize()
    d.hybridize()
    seen = []
    d.register_op_hook(lambda name, op, arr: seen.append(name), monitor_all=True)
    d(mx.nd.ones((1, 3)))
    assert seen[:4] == ['dense_fwd_data', 'dense_fwd_weight', 'dense_fwd_bias',
                        'dense_fwd_output']


def test_hybridize_refuses_backends(blocks):
    net = blocks['Net']()
    with pytest.raises(NotImplementedError, match='subgraph backends'):
        net.hybridize(backend='MKLDNN')
    with pytest.raises(NotImplementedError, match='subgraph backends'):
        net.optimize_for(mx.nd.ones((1, 3, 5, 5)), backend='MKLDNN')


def test_hybridize_with_hooks_warns(blocks):
    d = blocks['Dense'](2)
    d.register_forward_hook(lambda *a: None)
    with pytest.warns(UserWarning, match='is being hybridized while still having forward hook'):
        d.hybridize()


def test_data_parallel_over_two_contexts(blocks, golden, golden_file):
    """One copy of the parameters per context, one executor per context: each copy's
    gradient is that of its own half of the batch."""
    arrays, _ = golden
    x, head = arrays['x'], arrays['head']
    net = blocks['Net']()
    net.load_parameters(golden_file('net.params'), ctx=[mx.cpu(0), mx.cpu(1)])
    net.hybridize()
    outs = []
    with autograd.record():
        for k, ctx in enumerate((mx.cpu(0), mx.cpu(1))):
            y = net(mx.nd.array(x[k:k + 1], ctx=ctx))
            assert y.context == ctx
            outs.append((y, mx.nd.array(head[k:k + 1], ctx=ctx)))
    autograd.backward([y for y, _ in outs], [h for _, h in outs])
    assert {k[0] for k in net._cached_op._cache} == {mx.cpu(0), mx.cpu(1)}
    # the reference: each half alone on one context, not hybridized
    for k, ctx in enumerate((mx.cpu(0), mx.cpu(1))):
        with mx.name.NameManager():
            ref = blocks['Net']()
        ref.load_parameters(golden_file('net.params'))
        _, grads, _, _ = gluon_core_probes.run_net(mx, ref, x[k:k + 1], head[k:k + 1])
        for name, p in net.collect_params().items():
            if p.grad_req != 'null':
                np.testing.assert_allclose(p.grad(ctx).asnumpy(), grads[name], rtol=1e-4,
                                           atol=1e-6, err_msg='%s %s' % (name, ctx))


def test_an_output_listed_twice_sums_its_head_gradients():
    """MXNet's CachedOp sums the head gradients of an output returned twice (every RNN
    cell returns ``output, [output]``); the executor alone takes the last one's."""
    import symgraph as mx

    class Twice(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            y = x * 2
            return y, [y]
    for hybridize in (False, True):
        b = Twice()
        b.initialize()
        if hybridize:
            b.hybridize()
        x = mx.nd.ones((1,))
        x.attach_grad()
        with mx.autograd.record():
            o, s = b(x)
            loss = o * 3 + s[0] * 5
        loss.backward()
        assert x.grad.asscalar() == 16.0
        with mx.autograd.record():
            o, s = b(x)
            o2, _ = b(s[0])
            loss = o * 3 + o2 * 5
        loss.backward()
        assert x.grad.asscalar() == 26.0
