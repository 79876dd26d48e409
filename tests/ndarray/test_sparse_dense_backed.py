"""Dense-backed sparse arrays (symgraph/ndarray/sparse*.py) against MXNet 1.9.1.

The golden values (storage types, ``.data``/``.indices``/``.indptr``, saved bytes, lazy
optimizer updates, row_sparse pulls, Gluon's sparse gradients and Trainer steps) come from
tests/golden/make_sparse_dense_backed.py run with MXNet 1.9.1.
"""
import json
import os

import numpy as np
import pytest

import symgraph as mx
from symgraph.base import MXNetError
from symgraph.ndarray import sparse
from symgraph.ndarray.serialization import dumps_arrays, loads_arrays

GOLDEN = os.path.join(os.path.dirname(os.path.dirname(__file__)), 'golden', 'data',
                      'sparse_dense_backed.json')
with open(GOLDEN) as _f:
    CASES = json.load(_f)['cases']

DATA = np.array([1., 0., 3., 4.], 'f')          # (an explicitly stored zero)
INDICES = [0, 2, 1, 2]
INDPTR = [0, 2, 2, 4]
DENSE = np.array([[0., 1., 0.], [0., 0., 0.], [2., 0., 3.], [0., 0., 0.]], 'f')
RSP_DATA = np.array([[1., 2.], [0., 0.], [3., 4.]], 'f')
RSP_IDX = [0, 2, 3]


def _csr():
    return sparse.csr_matrix((DATA, INDICES, INDPTR), shape=(3, 3))


def _rsp():
    return sparse.row_sparse_array((RSP_DATA, RSP_IDX), shape=(5, 2))


def check(arr, want):
    """``arr`` holds what MXNet's array held: storage type, dtype, values, structure."""
    assert arr.stype == want['stype']
    assert np.dtype(arr.dtype).name == want['dtype']
    np.testing.assert_allclose(arr.asnumpy(), np.array(want['dense']), rtol=1e-6)
    if want['stype'] == 'csr':
        assert isinstance(arr, sparse.CSRNDArray)
        np.testing.assert_allclose(arr.data.asnumpy(), want['data'], rtol=1e-6)
        assert arr.indices.asnumpy().tolist() == want['indices']
        assert arr.indptr.asnumpy().tolist() == want['indptr']
        assert arr.indices.dtype == np.int64 and arr.indptr.dtype == np.int64
    elif want['stype'] == 'row_sparse':
        assert isinstance(arr, sparse.RowSparseNDArray)
        got = arr.data.asnumpy()
        assert got.shape == (len(want['indices']),) + arr.shape[1:]
        np.testing.assert_allclose(got.reshape(-1), np.array(want['data']).reshape(-1),
                                   rtol=1e-6)
        assert arr.indices.asnumpy().tolist() == want['indices']
    else:
        assert type(arr) is mx.nd.NDArray


# ------------------------------------------------------------------------ construction
def _coo():
    c = CASES['csr_coo']['input']
    return sparse.csr_matrix((c['data'], (c['row'], c['col'])), shape=(3, 4))


def _scipy():
    spsp = pytest.importorskip('scipy.sparse')
    return spsp.csr_matrix((DATA, INDICES, INDPTR), shape=(3, 3))


BUILD = {
    'csr_definition': _csr,
    'csr_definition_f64': lambda: sparse.csr_matrix((DATA.astype('f8'), INDICES, INDPTR),
                                                    shape=(3, 3)),
    'csr_definition_inferred_shape': lambda: sparse.csr_matrix((DATA, INDICES, INDPTR)),
    'csr_coo': _coo,
    'csr_scipy': lambda: sparse.csr_matrix(_scipy()),
    'csr_scipy_array': lambda: sparse.array(_scipy()),
    'csr_dense': lambda: sparse.csr_matrix(DENSE),
    'csr_tostype': lambda: mx.nd.array(DENSE).tostype('csr'),
    'csr_cast_storage': lambda: mx.nd.cast_storage(mx.nd.array(DENSE), stype='csr'),
    'csr_shape_only': lambda: sparse.csr_matrix((2, 3)),
    'csr_zeros': lambda: sparse.zeros('csr', (2, 3)),
    'rsp_definition': _rsp,
    'rsp_definition_inferred_shape': lambda: sparse.row_sparse_array((RSP_DATA, RSP_IDX)),
    'rsp_tostype': lambda: mx.nd.array(DENSE).tostype('row_sparse'),
    'rsp_zeros': lambda: mx.nd.zeros((4, 2), stype='row_sparse'),
    'rsp_shape_only': lambda: sparse.row_sparse_array((4, 2)),
    'rsp_back_to_default': lambda: mx.nd.array(DENSE).tostype('row_sparse').tostype('default'),
    # operators
    'csr_slice': lambda: _csr()[1:3],
    'csr_row': lambda: _csr()[2],
    'retain': lambda: sparse.retain(_rsp(), mx.nd.array([3, 0, 4], dtype='int64')),
    'dot_csr_dense': lambda: sparse.dot(_csr(), mx.nd.array(_rhs())),
    'dot_csrT_dense': lambda: sparse.dot(_csr(), mx.nd.array(_rhs()), transpose_a=True),
    'dot_dense_csr': lambda: sparse.dot(mx.nd.array(_rhs().T), _csr()),
    'add_rsp_rsp': lambda: sparse.add(_rsp(), _rsp2()),
    'subtract_rsp_rsp': lambda: sparse.subtract(_rsp(), _rsp2()),
    'multiply_rsp_rsp': lambda: sparse.multiply(_rsp(), _rsp()),
    'multiply_csr_dense': lambda: sparse.multiply(_csr(), mx.nd.array(_col())),
    'divide_csr_dense': lambda: sparse.divide(_csr(), mx.nd.array(_col())),
    'add_csr_csr': lambda: sparse.add(_csr(), _csr()),
    'scalar_mul_rsp': lambda: _rsp() * 2,
    'scalar_mul_csr': lambda: _csr() * 2,
    'dense_op_of_rsp': lambda: _rsp() + 1,
    'csr_astype': lambda: _csr().astype('float64'),
}


def _rhs():
    return np.arange(6, dtype='f').reshape(3, 2) + 1


def _col():
    return np.array([[2.], [3.], [4.]], 'f')


def _rsp2():
    return sparse.row_sparse_array((np.array([[1., 1.]], 'f'), [1]), shape=(5, 2))


@pytest.mark.parametrize('case', sorted(BUILD))
def test_same_as_mxnet(case):
    check(BUILD[case](), CASES[case])


def test_cases_cover_the_golden_file():
    simple = {k for k, v in CASES.items() if isinstance(v, dict) and 'stype' in v}
    assert simple - {'row_sparse_pull', 'push_rsp_sum', 'pull_ignore_sparse',
                     'embedding_sparse_grad'} == set(BUILD)


def test_a_write_makes_the_structure_follow_the_values():
    a = _rsp()
    assert a.indices.asnumpy().tolist() == [0, 2, 3]          # explicit zero row kept
    a[:] = mx.nd.array(np.diag([1., 0., 0., 0., 5.])[:, :2] + 0)
    assert a.indices.asnumpy().tolist() == [0]
    a += 1
    assert a.indices.asnumpy().tolist() == [0, 1, 2, 3, 4]
    c = _csr()
    c[:] = 0
    assert c.indptr.asnumpy().tolist() == [0, 0, 0, 0] and c.data.size == 0


def test_copies_keep_type_and_structure():
    a = _rsp()
    for b in (a.copy(), a.copyto(mx.cpu(1)), a.astype('float64'), sparse.array(a)):
        assert b.stype == 'row_sparse' and b.indices.asnumpy().tolist() == [0, 2, 3]
    assert a.copyto(mx.cpu(1)).context == mx.cpu(1)
    dst = sparse.zeros('row_sparse', (5, 2))
    a.copyto(dst)
    assert dst.indices.asnumpy().tolist() == [0, 2, 3]
    dense = mx.nd.zeros((5, 2))
    a.copyto(dense)
    assert dense.stype == 'default'
    np.testing.assert_array_equal(dense.asnumpy(), a.asnumpy())


def test_asscipy_and_check_format():
    sp = _csr().asscipy()
    assert sp.shape == (3, 3) and sp.nnz == 4         # the stored zero too
    assert sp.indices.tolist() == INDICES and sp.indptr.tolist() == INDPTR
    _csr().check_format()
    _rsp().check_format()
    bad = sparse.csr_matrix((np.ones(2, 'f'), [2, 0], [0, 2, 2]), shape=(2, 3))
    bad.check_format(full_check=False)
    with pytest.raises(MXNetError, match='not sorted'):
        bad.check_format()
    with pytest.raises(MXNetError, match='not sorted'):
        sparse.row_sparse_array((np.ones((2, 2), 'f'), [3, 1]), shape=(4, 2)).check_format()


def test_sparse_gradient():
    x = mx.nd.ones((4, 3))
    x.attach_grad(stype='row_sparse')
    assert x.grad.stype == 'row_sparse' and x.grad.indices.size == 0
    with mx.autograd.record():
        y = mx.nd.Embedding(mx.nd.array([3, 1, 3]), x, input_dim=4, output_dim=3)
    y.backward()
    assert x.grad.indices.asnumpy().tolist() == [1, 3]
    np.testing.assert_array_equal(x.grad.data.asnumpy(), [[1] * 3, [2] * 3])


@pytest.mark.parametrize('call, error, match', [
    (lambda: sparse.csr_matrix(_rsp()), ValueError, 'RowSparseNDArray'),
    (lambda: sparse.row_sparse_array(_csr()), ValueError, 'CSRNDArray'),
    (lambda: sparse.array(np.ones((2, 2))), ValueError, 'mx.nd.array'),
    (lambda: sparse.array(mx.nd.ones((2, 2))), ValueError, 'tostype'),
    (lambda: _csr().tostype('row_sparse'), ValueError, 'csr to row_sparse'),
    (lambda: _rsp().tostype('csr'), ValueError, 'row_sparse to csr'),
    (lambda: mx.nd.ones(3).tostype('csr'), ValueError, '2-D'),
    (lambda: mx.nd.cast_storage(mx.nd.ones((2, 2)), stype='coo'), ValueError, 'stype'),
    (lambda: sparse.zeros('coo', (2, 2)), ValueError, 'unknown storage type'),
    (lambda: _csr()[::2], ValueError, 'continuous slicing'),
    (lambda: _rsp()[1], ValueError, r'only supports \[:\]'),
    (lambda: _rsp().reshape((10,)), MXNetError, 'reshape'),
    (lambda: sparse.csr_matrix((DATA, [0, 5, 1, 2], INDPTR), shape=(3, 3)), ValueError,
     r'column indices must lie in \[0, 3\)'),
    (lambda: sparse.row_sparse_array((RSP_DATA, [0, 2, 9]), shape=(5, 2)), ValueError,
     r'row indices must lie in \[0, 5\)'),
    (lambda: sparse.csr_matrix((DATA, INDICES, [0, 2, 3])), ValueError, 'do not make'),
    (lambda: sparse.retain(mx.nd.ones((2, 2)), mx.nd.array([0])), TypeError,
     'RowSparseNDArray'),
])
def test_refusals(call, error, match):
    with pytest.raises(error, match=match):
        call()


# ------------------------------------------------------------------------ .params
def test_params_bytes_are_mxnets():
    golden = bytes.fromhex(CASES['params']['hex'])
    loaded = mx.nd.load_frombuffer(golden)
    assert sorted(loaded) == sorted(CASES['params']['arrays'])
    for name, want in CASES['params']['arrays'].items():
        check(loaded[name], want)
    assert dumps_arrays(loads_arrays(golden)) == golden
    saved = {'rsp': _rsp(), 'csr': _csr(), 'rsp_empty': mx.nd.zeros((3, 2), stype='row_sparse'),
             'csr_empty_rows': sparse.csr_matrix(([5.], [1], [0, 0, 1, 1]), shape=(3, 2)),
             'rsp_f64': mx.nd.array(DENSE, dtype='float64').tostype('row_sparse')}
    path = os.path.join(os.environ.get('TMPDIR', '/tmp'), 'symgraph_sparse_%d.params'
                        % os.getpid())
    try:
        mx.nd.save(path, saved)
        with open(path, 'rb') as f:
            assert f.read() == golden
    finally:
        os.remove(path)


# ------------------------------------------------------------------------ lazy updates
@pytest.mark.parametrize('name', sorted(CASES['updates']['cases']))
def test_lazy_update_as_mxnet(name):
    u = CASES['updates']
    case = u['cases'][name]
    opt = mx.optimizer.create(case['optimizer'], **case['kwargs'])
    w = mx.nd.array(u['weight']).tostype(case['w_stype'])
    state = opt.create_state(0, w)
    states = [] if state is None else (list(state) if isinstance(state, tuple) else [state])
    for k, s in enumerate(states):
        s[:] = mx.nd.array(np.full((4, 3), 0.2 + 0.1 * k, 'f')).tostype(s.stype)
    for _ in range(u['steps']):
        g = sparse.row_sparse_array((np.array(u['grad_data'], 'f'), u['grad_indices']),
                                    shape=(4, 3))
        opt.update(0, w, g, state)
    np.testing.assert_allclose(w.asnumpy(), case['weight'], rtol=1e-5, atol=1e-6)
    for s, want in zip(states, case['states']):
        np.testing.assert_allclose(s.asnumpy(), want, rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------------ kvstore
def test_row_sparse_pull_and_sparse_push():
    w = np.array(CASES['updates']['weight'], 'f')
    kv = mx.kv.create('local')
    kv.init('w', mx.nd.array(w).tostype('row_sparse'))
    out = sparse.zeros('row_sparse', (4, 3))
    kv.row_sparse_pull('w', out=out, row_ids=mx.nd.array([3, 1, 3], dtype='int64'))
    check(out, CASES['row_sparse_pull'])
    kv2 = mx.kv.create('local')
    kv2.init('g', sparse.zeros('row_sparse', (4, 3)))
    kv2.push('g', [sparse.row_sparse_array((np.ones((1, 3), 'f'), [r]), shape=(4, 3))
                   for r in (2, 0, 2)])
    got = sparse.zeros('row_sparse', (4, 3))
    kv2.pull('g', out=got, ignore_sparse=False)
    check(got, CASES['push_rsp_sum'])
    ignored = mx.nd.ones((4, 3)).tostype('row_sparse')
    kv2.pull('g', out=ignored)                   # (ignore_sparse=True: left alone)
    check(ignored, CASES['pull_ignore_sparse'])


# ------------------------------------------------------------------------ gluon
def test_embedding_sparse_grad():
    emb = mx.gluon.nn.Embedding(6, 2, sparse_grad=True)
    emb.initialize(mx.init.Constant(0.5))
    with mx.autograd.record():
        (emb(mx.nd.array([4, 1, 4])) * mx.nd.array([[1., 2.]])).sum().backward()
    check(emb.weight.grad(), CASES['embedding_sparse_grad'])


def test_trainer_with_sparse_gradient_updates_lazily():
    p = mx.gluon.Parameter('w', shape=(4, 3), grad_stype='row_sparse')
    p.initialize(mx.init.Constant(1.0))
    trainer = mx.gluon.Trainer([p], 'sgd', {'learning_rate': 0.5, 'momentum': 0.9, 'wd': 0.1})
    for _ in range(2):
        with mx.autograd.record():
            y = mx.nd.Embedding(mx.nd.array([2]), p.data(), input_dim=4, output_dim=3,
                                sparse_grad=True)
            y.sum().backward()
        trainer.step(1)
    np.testing.assert_allclose(p.data().asnumpy(), CASES['trainer_sparse_grad']['weight'],
                               rtol=1e-6)


def test_trainer_with_sparse_weight_updates_in_the_store():
    q = mx.gluon.Parameter('q', shape=(4, 3), stype='row_sparse', grad_stype='row_sparse')
    q.initialize(mx.init.Constant(1.0))
    trainer = mx.gluon.Trainer([q], 'sgd', {'learning_rate': 0.5, 'momentum': 0.9, 'wd': 0.1})
    for _ in range(2):
        rows = mx.nd.array([0, 2])
        with mx.autograd.record():
            w = q.row_sparse_data(rows)
            mx.nd.Embedding(rows, w, input_dim=4, output_dim=3, sparse_grad=True).sum().backward()
        trainer.step(1)
    want = CASES['trainer_sparse_weight']
    assert trainer._update_on_kvstore is want['update_on_kvstore']
    full = q.row_sparse_data(mx.nd.arange(0, 4))
    np.testing.assert_allclose(full.asnumpy(), want['weight'], rtol=1e-6)
    assert full.indices.asnumpy().tolist() == want['indices']
    with pytest.raises(ValueError, match='update_on_kvstore=False'):
        r = mx.gluon.Parameter('r', shape=(4, 3), stype='row_sparse')
        r.initialize()
        mx.gluon.Trainer([r], 'sgd', update_on_kvstore=False)._init_kvstore()


def test_libsvm_iter_gives_csr_batches(tmp_path):
    path = tmp_path / 'data.libsvm'
    path.write_text('1 0:0.5 3:2\n0 2:1.5\n1 1:1 3:4\n')
    it = mx.io.LibSVMIter(data_libsvm=str(path), data_shape=(4,), batch_size=3)
    batch = next(iter(it))
    data = batch.data[0]
    assert isinstance(data, sparse.CSRNDArray)
    np.testing.assert_array_equal(data.asnumpy(), [[0.5, 0, 0, 2], [0, 0, 1.5, 0],
                                                   [0, 1, 0, 4]])
    assert data.indptr.asnumpy().tolist() == [0, 2, 3, 5]
    assert data.indices.asnumpy().tolist() == [0, 3, 2, 1, 3]
    assert batch.label[0].stype == 'default'
    np.testing.assert_array_equal(batch.label[0].asnumpy(), [1, 0, 1])


@pytest.mark.parametrize('stype', ['default', 'csr', 'row_sparse'])
def test_attach_grad_defaults_to_the_arrays_stype_and_detach_keeps_it(stype):
    x = mx.nd.zeros((2, 2), stype=stype)
    x.attach_grad()
    assert x.grad.stype == stype
    assert x.detach().stype == stype
    x.attach_grad(stype='row_sparse')
    assert x.grad.stype == 'row_sparse'


def test_dot_of_csr_gives_a_row_sparse_gradient():
    lhs = sparse.csr_matrix(DENSE[:3])
    rhs = mx.nd.ones((3, 2)).tostype('row_sparse')
    rhs.attach_grad()
    with mx.autograd.record():
        y = mx.nd.dot(lhs, rhs)
    y.backward()
    assert rhs.grad.stype == 'row_sparse'
    np.testing.assert_allclose(rhs.grad.asnumpy(), DENSE[:3].T @ np.ones((3, 2)))
    assert rhs.grad.indices.asnumpy().tolist() == [0, 1, 2]


def test_sparse_symbols_bind_dense_backed_values():
    x = mx.sym.var('data', stype='csr')
    w = mx.sym.var('w', shape=(3, 2), stype='row_sparse')
    b = mx.sym.var('b', shape=(1))                       # (an int: a 1-D shape, as MXNet)
    assert w.attr('__storage_type__') == '1' and x.attr('__storage_type__') == '2'
    assert b.attr('__shape__') == '(1,)'
    out = mx.sym.broadcast_add(mx.sym.sparse.dot(x, w), b)
    lhs = sparse.csr_matrix(DENSE[:3])
    wv = np.arange(6, dtype='f').reshape(3, 2)
    ex = out.bind(mx.cpu(), {'data': lhs, 'w': mx.nd.array(wv).tostype('row_sparse'),
                             'b': mx.nd.array([0.5])})
    np.testing.assert_allclose(ex.forward()[0].asnumpy(), DENSE[:3] @ wv + 0.5)


def test_module_gives_sparse_variables_sparse_parameters():
    x = mx.sym.var('data', stype='csr')
    v = mx.sym.var('v', shape=(3, 1), init=mx.init.Constant(0.5), stype='row_sparse')
    out = mx.sym.LinearRegressionOutput(mx.sym.dot(x, v), mx.sym.var('label'), name='out')
    it = mx.io.NDArrayIter(data=sparse.csr_matrix(DENSE), label={'label': mx.nd.ones((4, 1))},
                           batch_size=2, last_batch_handle='discard')
    mod = mx.mod.Module(out, data_names=['data'], label_names=['label'])
    mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
    mod.init_params()
    arg = mod.get_params()[0]['v']
    assert arg.stype == 'row_sparse'
    np.testing.assert_array_equal(arg.asnumpy(), np.full((3, 1), 0.5))
    mod.init_optimizer(optimizer='sgd', optimizer_params={'learning_rate': 0.1})
    for batch in it:
        mod.forward_backward(batch)
        mod.update()
    want = np.full((3, 1), 0.5, 'f')
    for rows in (DENSE[:2], DENSE[2:]):      # SGD over the two batches (rescale 1/batch)
        want = want - 0.1 / 2 * rows.T @ (rows @ want - 1)
    np.testing.assert_allclose(mod.get_params()[0]['v'].asnumpy(), want, rtol=1e-6)

