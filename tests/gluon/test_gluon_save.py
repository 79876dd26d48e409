"""Block.save_parameters / load_parameters (and the legacy save_params / load_params) in
MXNet 1.9.1's ``.params`` format, both ways."""
import numpy as np
import pytest

import symgraph as mx
from symgraph import gluon


def _values(net):
    return {k: p.data().asnumpy() for k, p in net.collect_params().items()}


def test_our_file_is_byte_for_byte_mxnets(blocks, golden_file, tmp_path):
    net = blocks['Net']()
    net.load_parameters(golden_file('net.params'))
    out = str(tmp_path / 'net.params')
    net.save_parameters(out)
    with open(out, 'rb') as a, open(golden_file('net.params'), 'rb') as b:
        assert a.read() == b.read()
    assert sorted(mx.nd.load(out)) == [
        'bn.beta', 'bn.gamma', 'bn.running_mean', 'bn.running_var', 'conv.bias',
        'conv.weight', 'head.0.bias', 'head.0.weight', 'head.1.bias', 'head.1.weight']


def test_legacy_files_both_ways(blocks, golden_file, tmp_path):
    net = blocks['Net']()
    with pytest.warns(UserWarning, match='load_params is deprecated'):
        net.load_params(golden_file('net_legacy.params'))       # names without the prefix
    # load_parameters reads a legacy file too (no dots in its names)
    with mx.name.NameManager():
        other = blocks['Net']()
    other.load_parameters(golden_file('net_legacy.params'))
    for k, v in _values(net).items():
        np.testing.assert_array_equal(v, other.collect_params()[k].data().asnumpy())
    out = str(tmp_path / 'legacy.params')
    with pytest.warns(UserWarning, match='save_params is deprecated'):
        net.save_params(out)
    with open(out, 'rb') as a, open(golden_file('net_legacy.params'), 'rb') as b:
        assert a.read() == b.read()


def test_round_trip_onto_deferred_parameters_and_contexts(blocks, tmp_path):
    net = blocks['Net']()
    net.initialize(mx.init.Xavier())
    x = mx.nd.array(np.random.RandomState(0).randn(2, 3, 5, 5))
    want = net(x).asnumpy()
    f = str(tmp_path / 'n.params')
    net.save_parameters(f)
    with mx.name.NameManager():
        fresh = blocks['Net']()
    # shapes still unknown (deferred): the file fills them in, on both contexts
    fresh.load_parameters(f, ctx=[mx.cpu(0), mx.cpu(1)])
    assert fresh.conv.weight.shape == (4, 3, 3, 3)
    assert fresh.conv.weight.list_ctx() == [mx.cpu(0), mx.cpu(1)]
    # (float32: the sums may run in another order, e.g. in another oneDNN kernel)
    np.testing.assert_allclose(fresh(x).asnumpy(), want, rtol=1e-5, atol=1e-6)
    with mx.cpu(1):
        np.testing.assert_allclose(fresh(x.copyto(mx.cpu(1))).asnumpy(), want, rtol=1e-5,
                                   atol=1e-6)
    # initialized on cpu(0) and cpu(1): loading onto another context is refused
    with pytest.raises(ValueError, match='because it was previous initialized on'):
        fresh.load_parameters(f, ctx=mx.cpu(2))


def test_missing_and_extra_parameters(blocks, tmp_path):
    f = str(tmp_path / 'd.params')
    two = blocks['Seq']()
    with two.name_scope():
        two.add(blocks['Dense'](3, in_units=2), blocks['Dense'](3, in_units=3))
    mx.nd.save(f, {'0.weight': mx.nd.ones((3, 2)), '0.bias': mx.nd.ones((3,))})
    with pytest.raises(ValueError, match="Parameter '1.weight' is missing in file"):
        two.load_parameters(f)
    two.initialize()
    two.load_parameters(f, allow_missing=True)
    np.testing.assert_array_equal(two._children['0'].weight.data().asnumpy(), np.ones((3, 2)))
    mx.nd.save(f, {'0.weight': mx.nd.ones((3, 2)), '0.bias': mx.nd.ones((3,)),
                   '1.weight': mx.nd.ones((3, 3)), '1.bias': mx.nd.ones((3,)),
                   '2.weight': mx.nd.ones((1,))})
    with pytest.raises(ValueError, match="Parameter '2.weight' loaded from file .* is not "
                                         "present"):
        two.load_parameters(f)
    two.load_parameters(f, ignore_extra=True)
    mx.nd.save(f, {'0.weight': mx.nd.ones((4, 2)), '0.bias': mx.nd.ones((3,)),
                   '1.weight': mx.nd.ones((3, 3)), '1.bias': mx.nd.ones((3,))})
    with pytest.raises(AssertionError, match="'seq0_dense0_weight' from saved params: shape "
                                             "incompatible"):
        two.load_parameters(f)


def test_cast_dtype_and_dtype_source(blocks, tmp_path):
    d = blocks['Dense'](3, in_units=2)
    d.initialize()
    f = str(tmp_path / 'd.params')
    mx.nd.save(f, {'w.weight': mx.nd.ones((3, 2), dtype='float64')})
    holder = gluon.Block()
    holder.register_child(d, 'w')
    with pytest.raises(ValueError, match='dtype incompatible'):
        holder.load_parameters(f, allow_missing=True)
    holder.load_parameters(f, allow_missing=True, cast_dtype=True)
    assert d.weight.data().dtype == np.float32
    holder.load_parameters(f, allow_missing=True, cast_dtype=True, dtype_source='saved')
    assert d.weight.data().dtype == np.float64


def test_shared_parameters_and_deduplicate(blocks, tmp_path):
    seq = blocks['Seq']()
    with seq.name_scope():
        a = blocks['Dense'](2, in_units=2)
        b = blocks['Dense'](2, in_units=2, params=a.collect_params())
    seq.add(a, b)
    seq.initialize()
    full, dedup = str(tmp_path / 'full.params'), str(tmp_path / 'dedup.params')
    seq.save_parameters(full)
    seq.save_parameters(dedup, deduplicate=True)
    assert sorted(mx.nd.load(full)) == ['0.bias', '0.weight', '1.bias', '1.weight']
    assert len(mx.nd.load(dedup)) == 2
    with mx.name.NameManager():
        again = blocks['Seq']()
        with again.name_scope():
            a2 = blocks['Dense'](2, in_units=2)
            b2 = blocks['Dense'](2, in_units=2, params=a2.collect_params())
        again.add(a2, b2)
    again.initialize()
    again.load_parameters(dedup)        # one name per shared parameter is enough
    np.testing.assert_array_equal(b2.weight.data().asnumpy(), a.weight.data().asnumpy())


def test_load_errors_are_clear(blocks, tmp_path):
    d = blocks['Dense'](2, in_units=2)
    with pytest.raises(FileNotFoundError):
        d.load_parameters(str(tmp_path / 'absent.params'))
    f = str(tmp_path / 'list.params')
    mx.nd.save(f, [mx.nd.ones((1,))])
    with pytest.raises(TypeError, match='holds a list of arrays'):
        d.load_parameters(f)


def test_block_save_and_load_restore_names_and_traced_graphs(blocks, tmp_path):
    """``Block.save``/``load`` (MXNet's test_gluon_save): a model built again, with other
    automatic names, takes the saved names, graphs and values."""
    def build():
        outer = gluon.Block()
        inner = blocks['Seq']()
        inner.add(blocks['Dense'](4))
        outer.register_child(inner)
        outer.register_child(blocks['Dense'](3))
        outer.forward = lambda x: outer._children['1'](outer._children['0'](x))
        return outer
    net1 = build()
    net1.initialize(mx.init.Xavier())
    net1.hybridize()
    x = mx.nd.array(np.random.RandomState(0).randn(2, 5))
    out1 = net1(x).asnumpy()
    prefix = str(tmp_path / 'model')
    net1.save(prefix)
    net2 = build()          # made later: other automatic names (seq1_, dense2_, ...)
    assert net2._children['1'].name != net1._children['1'].name
    net2.load(prefix)
    assert net2._children['1'].name == net1._children['1'].name
    assert net2._children['0']._active and net2._children['0']._cached_graph
    assert sorted(net2.collect_params().keys()) == sorted(net1.collect_params().keys())
    np.testing.assert_allclose(net2(x).asnumpy(), out1, rtol=1e-5, atol=1e-6)
