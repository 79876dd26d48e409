"""gluon.Parameter, Constant and ParameterDict (MXNet 1.9.1's parameter.py semantics)."""
import numpy as np
import pytest

import symgraph as mx
from symgraph import autograd, gluon
from symgraph.gluon import Constant, DeferredInitializationError, Parameter, ParameterDict


# ----------------------------------------------------------------------------- Parameter
def test_parameter_on_two_contexts():
    # MXNet's test_parameter
    p = Parameter('weight', shape=(10, 10))
    p.initialize(init='xavier', ctx=[mx.cpu(0), mx.cpu(1)])
    assert len(p.list_data()) == 2 and len(p.list_grad()) == 2
    assert p.data(mx.cpu(1)).context == mx.cpu(1)
    assert p.data(mx.cpu(0)).shape == (10, 10)
    assert p.var().name == 'weight'
    assert p.grad(mx.cpu(0)).stype == 'default' and p.data(mx.cpu(0)).stype == 'default'
    # the copies are equal, independent arrays
    np.testing.assert_array_equal(p.data(mx.cpu(0)).asnumpy(), p.data(mx.cpu(1)).asnumpy())
    assert p.data(mx.cpu(0)) is not p.data(mx.cpu(1))
    p.reset_ctx(ctx=[mx.cpu(1), mx.cpu(2)])
    assert p.list_ctx() == [mx.cpu(1), mx.cpu(2)]
    with pytest.raises(RuntimeError, match="'weight' was not initialized on context cpu"):
        p.data(mx.cpu(0))


def test_invalid_stypes_and_grad_req_are_refused():
    for kw in ({'stype': 'invalid'}, {'grad_stype': 'invalid'}, {'grad_req': 'sometimes'}):
        with pytest.raises(AssertionError):         # what MXNet raises
            Parameter('weight', shape=(10, 10), **kw)
        with pytest.raises(ValueError, match='weight|grad_req'):
            Parameter('weight', shape=(10, 10), **kw)


def test_uninitialized_and_deferred_errors_name_the_parameter():
    p = Parameter('fc_weight', shape=(2, 3))
    with pytest.raises(RuntimeError, match="Parameter 'fc_weight' has not been initialized"):
        p.data()
    with pytest.raises(RuntimeError, match='fc_weight'):
        p.list_ctx()
    q = Parameter('fc_weight', shape=(2, 0), allow_deferred_init=True)
    q.initialize()
    with pytest.raises(DeferredInitializationError, match="'fc_weight'.*deferred"):
        q.data()
    assert isinstance(DeferredInitializationError('x'), mx.MXNetError)
    assert q.list_ctx() == [mx.cpu()]
    r = Parameter('fc_bias', shape=(0,))
    with pytest.raises(ValueError, match="Cannot initialize Parameter 'fc_bias'.*invalid shape"):
        r.initialize()


def test_deferred_init_finishes_with_the_shape_and_a_value_set_meanwhile():
    p = Parameter('w', shape=(3, 0), allow_deferred_init=True, init=mx.init.One())
    p.initialize(ctx=[mx.cpu(0), mx.cpu(1)])
    p.shape = (3, 2)
    p._finish_deferred_init()
    np.testing.assert_array_equal(p.data(mx.cpu(1)).asnumpy(), np.ones((3, 2)))
    # set_data before the deferred init is kept for it
    q = Parameter('w', shape=(0, 2), allow_deferred_init=True)
    q.initialize()
    value = np.arange(6, dtype=np.float32).reshape(3, 2)
    q.set_data(mx.nd.array(value))
    assert q.shape == (3, 2)
    q._finish_deferred_init()
    np.testing.assert_array_equal(q.data().asnumpy(), value)
    with pytest.raises(ValueError, match='incompatible'):
        q.shape = (4, 2)


def test_initializer_precedence_and_name_rules():
    # init= beats the parameter's own init, which beats the default
    p = Parameter('a_weight', shape=(2,), init=mx.init.Constant(3))
    p.initialize(default_init=mx.init.One())
    np.testing.assert_array_equal(p.data().asnumpy(), [3, 3])
    p.initialize(init=mx.init.Zero(), force_reinit=True)
    np.testing.assert_array_equal(p.data().asnumpy(), [0, 0])
    with pytest.warns(UserWarning, match="'a_weight' is already initialized"):
        p.initialize()
    # as in MXNet, a Parameter's initializer is its weight rule whatever the name: a bias
    # without init= gets the default's distribution too (layers pass bias init='zeros')
    b = Parameter('a_bias', shape=(50,))
    b.initialize(default_init=mx.init.Uniform(5.0))
    v = b.data().asnumpy()
    assert np.abs(v).max() <= 5.0 and np.abs(v).max() > 1.0
    z = Parameter('a_bias', shape=(4,), init='zeros')
    z.initialize(default_init=mx.init.Uniform(5.0))
    np.testing.assert_array_equal(z.data().asnumpy(), np.zeros(4))


def test_gradients_follow_grad_req():
    p = Parameter('w', shape=(3,), init=mx.init.One())
    p.initialize()
    for _ in range(2):
        with autograd.record():
            y = (p.data() * mx.nd.array([1, 2, 3])).sum()
        y.backward()
    np.testing.assert_array_equal(p.grad().asnumpy(), [1, 2, 3])       # write
    p.grad_req = 'add'
    for _ in range(2):
        with autograd.record():
            y = (p.data() * mx.nd.array([1, 2, 3])).sum()
        y.backward()
    # a new gradient array (zeros) on switching, then two steps added
    np.testing.assert_array_equal(p.grad().asnumpy(), [2, 4, 6])
    p.zero_grad()
    np.testing.assert_array_equal(p.grad().asnumpy(), [0, 0, 0])
    p.grad_req = 'null'
    with pytest.raises(RuntimeError, match="'w' because grad_req='null'"):
        p.grad()
    with pytest.raises(RuntimeError, match="grad_req='null'"):
        p.list_grad()
    p.zero_grad()       # nothing to do, no error
    # not differentiable: grad_req stays 'null'
    q = Parameter('q', shape=(2,), differentiable=False)
    q.grad_req = 'write'
    assert q.grad_req == 'null'


def test_set_data_cast_and_reduce_over_contexts():
    p = Parameter('w', shape=(2, 2))
    p.initialize(ctx=[mx.cpu(0), mx.cpu(1)])
    p.set_data(mx.nd.ones((2, 2)) * 4)
    for d in p.list_data():
        np.testing.assert_array_equal(d.asnumpy(), np.full((2, 2), 4))
    p.data(mx.cpu(1))[:] = 2         # copies may drift apart; saving takes their mean
    np.testing.assert_array_equal(p._reduce().asnumpy(), np.full((2, 2), 3))
    assert p._reduce().context == mx.cpu()
    p.cast('float64')
    assert p.dtype == 'float64'
    assert all(d.dtype == np.float64 for d in p.list_data())
    assert all(g.dtype == np.float64 for g in p.list_grad())
    with autograd.record():
        y = (p.data(mx.cpu(0)) * 2).sum()
    y.backward()
    np.testing.assert_array_equal(p.grad(mx.cpu(0)).asnumpy(), np.full((2, 2), 2))
    with pytest.raises(RuntimeError, match="reset context for Parameter 'v'"):
        Parameter('v', shape=(1,)).reset_ctx(mx.cpu())


def test_var_carries_mxnets_attributes(golden):
    _, probes = golden
    attrs = probes['var_attrs']
    p = Parameter('net0_conv0_weight', shape=(4, 0, 3, 3), allow_deferred_init=True)
    assert p.var().list_attr() == attrs['net0_conv0_weight']
    b = Parameter('net0_conv0_bias', shape=(4,), init='zeros')
    assert b.var().list_attr() == attrs['net0_conv0_bias']
    s = Parameter('s', shape=(1,), lr_mult=2.0, wd_mult=0.0, dtype='float16',
                  init=mx.init.Xavier(magnitude=2))
    a = s.var().list_attr()
    assert a['__lr_mult__'] == '2.0' and a['__wd_mult__'] == '0.0'
    assert a['__dtype__'] == '2'        # MXNet's type code of float16
    assert mx.init.create(a['__init__']).dumps() == mx.init.Xavier(magnitude=2).dumps()
    assert s.var() is s.var()


def test_repr_is_mxnets(golden):
    _, probes = golden
    p = Parameter('mydense_weight', shape=(5, 4))
    assert repr(p) == probes['repr_param']


# ----------------------------------------------------------------------------- Constant
def test_constant():
    c = Constant('const', [[1, 2], [3, 4]])
    assert c.grad_req == 'null' and c.shape == (2, 2)
    c.initialize()
    np.testing.assert_array_equal(c.data().asnumpy(), [[1, 2], [3, 4]])
    with pytest.warns(UserWarning, match='does not support grad_req'):
        c.grad_req = 'write'
    assert c.grad_req == 'null'
    assert repr(c) == "Constant const (shape=(2, 2), dtype=<class 'numpy.float32'>)"
    c.set_data(mx.nd.zeros((2, 2)))
    np.testing.assert_array_equal(c.data().asnumpy(), np.zeros((2, 2)))
    # its initializer is registered by name, so that the Variable can name it
    assert c.var().list_attr()['__init__'].startswith('Constant_const_')


# ----------------------------------------------------------------------------- ParameterDict
def test_parameter_dict_get_shares_and_merges_shapes():
    d = ParameterDict('net_')
    w = d.get('weight', shape=(2, 0))
    assert w.name == 'net_weight' and list(d.keys()) == ['net_weight']
    assert d.get('weight', shape=(0, 5)) is w and w.shape == (2, 5)   # 0s filled in
    with pytest.raises(AssertionError, match="desired attribute does not match.*'shape'"):
        d.get('weight', shape=(3, 5))
    with pytest.raises(ValueError, match="attribute 'lr_mult'"):
        d.get('weight', lr_mult=2.0)
    assert d.get('weight', dtype='float32') is w
    shared = ParameterDict('net_', shared=d)
    assert shared.get('weight') is w
    assert 'net_weight' in shared and len(shared) == 1
    other = ParameterDict('net_')
    other.get('weight')
    with pytest.raises(ValueError, match="different Parameters with the same name 'net_weight'"):
        d.update(other)


def test_parameter_dict_constants():
    d = ParameterDict('b_')
    c = d.get_constant('c', [1, 2])
    assert isinstance(c, Constant) and c.name == 'b_c'
    assert d.get_constant('c') is c
    assert d.get_constant('c', [1, 2]) is c
    with pytest.raises(ValueError, match="Constant 'b_c' already exists"):
        d.get_constant('c', [1, 3])
    with pytest.raises(KeyError, match="No constant named 'b_missing'"):
        d.get_constant('missing')
    d.get('w', shape=(1,))
    with pytest.raises(ValueError, match="'b_w' already exists but it is not a constant"):
        d.get_constant('w', [1])


def test_parameter_dict_initialize_zero_grad_setattr_and_repr(golden):
    _, probes = golden
    d = ParameterDict('mydense_')
    d.get('weight', shape=(5, 4))
    d.get('bias', shape=(5,))
    assert repr(d) == probes['repr_params']
    d.initialize(mx.init.One(), ctx=[mx.cpu(0), mx.cpu(1)])
    assert set(d.list_ctx()) == {mx.cpu(0), mx.cpu(1)}
    np.testing.assert_array_equal(d['mydense_weight'].data(mx.cpu(1)).asnumpy(),
                                  np.ones((5, 4)))
    np.testing.assert_array_equal(d['mydense_bias'].data(mx.cpu(0)).asnumpy(), np.ones(5))
    for p in d.values():
        for g in p.list_grad():
            g[:] = 7
    d.zero_grad()
    assert all((g.asnumpy() == 0).all() for p in d.values() for g in p.list_grad())
    d.setattr('lr_mult', 0.5)
    assert all(p.lr_mult == 0.5 for p in d.values())
    d.setattr('grad_req', 'null')
    d.zero_grad()
    d.reset_ctx(mx.cpu(2))
    assert d.list_ctx() == [mx.cpu(2)]


def test_parameter_dict_save_and_load(tmp_path):
    d = ParameterDict('net_')
    d.get('weight', shape=(2, 3))
    d.get('bias', shape=(2,))
    d.initialize(mx.init.Uniform(1.0))
    f = str(tmp_path / 'p.params')
    d.save(f, strip_prefix='net_')
    assert sorted(mx.nd.load(f)) == ['bias', 'weight']
    with pytest.raises(ValueError, match="Prefix 'other_' is to be striped"):
        d.save(f + 'x', strip_prefix='other_')
    e = ParameterDict('net_')
    e.get('weight', shape=(2, 0), allow_deferred_init=True)
    e.get('bias', shape=(2,))
    e.load(f, restore_prefix='net_')
    assert e['net_weight'].shape == (2, 3)
    np.testing.assert_array_equal(e['net_weight'].data().asnumpy(),
                                  d['net_weight'].data().asnumpy())
    # arg:/aux: prefixes (checkpoints, exports) are dropped
    e.load_dict({'arg:net_weight': mx.nd.ones((2, 3)), 'aux:net_bias': mx.nd.ones((2,))})
    np.testing.assert_array_equal(e['net_bias'].data().asnumpy(), [1, 1])
    with pytest.raises(ValueError, match="'net_bias' is missing in param_dict"):
        e.load_dict({'net_weight': mx.nd.ones((2, 3))})
    e.load_dict({'net_weight': mx.nd.zeros((2, 3))}, allow_missing=True)
    with pytest.raises(ValueError, match="'extra' loaded from param_dict is not present"):
        e.load_dict({'net_weight': mx.nd.ones((2, 3)), 'net_bias': mx.nd.ones((2,)),
                     'extra': mx.nd.ones((1,))})
    e.load_dict({'net_weight': mx.nd.ones((2, 3)), 'net_bias': mx.nd.ones((2,)),
                 'extra': mx.nd.ones((1,))}, ignore_extra=True)
    with pytest.raises(ValueError, match="shape incompatible expected \\(2, 3\\) vs saved"):
        e.load_dict({'net_weight': mx.nd.ones((3, 3)), 'net_bias': mx.nd.ones((2,))})
    with pytest.raises(ValueError, match='dtype incompatible'):
        e.load_dict({'net_weight': mx.nd.ones((2, 3), dtype='float64'),
                     'net_bias': mx.nd.ones((2,))})
    e.load_dict({'net_weight': mx.nd.ones((2, 3), dtype='float64'),
                 'net_bias': mx.nd.ones((2,))}, cast_dtype=True)
    assert e['net_weight'].dtype == np.float32
    e.load_dict({'net_weight': mx.nd.ones((2, 3), dtype='float64'),
                 'net_bias': mx.nd.ones((2,))}, cast_dtype=True, dtype_source='saved')
    assert np.dtype(e['net_weight'].dtype) == np.float64
    with pytest.raises(ValueError, match="restore_prefix is 'zz_'"):
        e.load(f, restore_prefix='zz_')


def test_tensor_types():
    assert gluon.parameter.tensor_types == (mx.sym.Symbol, mx.nd.NDArray)


def test_sparse_parameter_is_row_sparse_and_pulled_through_its_trainer():
    p = Parameter('emb_weight', shape=(4, 2), stype='row_sparse', grad_stype='row_sparse')
    p.initialize(ctx=[mx.cpu(0), mx.cpu(1)])
    assert p.grad(mx.cpu(0)).stype == 'row_sparse'
    assert p.var().list_attr()['__storage_type__'] == '1'
    with pytest.raises(RuntimeError, match='via data.*storage type is row_sparse'):
        p.data(mx.cpu(0))
    with pytest.raises(RuntimeError, match='via list_data'):
        p.list_data()
    rows = mx.nd.array([2, 0], ctx=mx.cpu(1))
    with pytest.raises(RuntimeError, match="no Trainer is created with it"):
        p.row_sparse_data(rows)
    mx.gluon.Trainer([p], 'sgd')
    full = p._data[0].asnumpy()          # (the initialised values, the same on both)
    got = p.row_sparse_data(rows)        # MXNet's row_sparse pull from the Trainer's store
    assert got.context == mx.cpu(1) and got.stype == 'row_sparse'
    np.testing.assert_array_equal(got.indices.asnumpy(), [0, 2])
    want = full.copy()
    want[[1, 3]] = 0
    np.testing.assert_array_equal(got.asnumpy(), want)
    assert len(p.list_row_sparse_data(rows)) == 2
    with pytest.raises(TypeError, match='row_id must have NDArray type'):
        p.row_sparse_data([0])
    dense = Parameter('w', shape=(4, 2))
    dense.initialize()
    with pytest.raises(RuntimeError, match='via row_sparse_data.*storage type is default'):
        dense.row_sparse_data(rows)
    with pytest.raises(RuntimeError, match='via list_row_sparse_data'):
        dense.list_row_sparse_data(rows)
