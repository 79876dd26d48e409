"""Golden data of MXNet 1.9.1's sparse arrays, for tests/ndarray/test_sparse_dense_backed.py.

Run from the repository root with MXNet's interpreter (numpy < 1.24, scipy)::

    MXNET_MKLDNN_ENABLED=0 $MXNET_PYTHON tests/golden/make_sparse_dense_backed.py

Writes ``tests/golden/data/sparse_dense_backed.json``: per case, what MXNet computed (storage
types, ``.data``/``.indices``/``.indptr``, dense values, the bytes ``mx.nd.save`` wrote, the
weights and states after one optimizer update of a row_sparse gradient, row_sparse pulls,
Gluon's sparse gradients and Trainer steps). Every input is written out beside its result, so
the test suite rebuilds it without MXNet.
"""
import json
import os
import tempfile

import numpy as np
import scipy.sparse as spsp
import mxnet as mx

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, 'data', 'sparse_dense_backed.json')

cases = {}


def lst(a):
    return np.asarray(a.asnumpy() if hasattr(a, 'asnumpy') else a).tolist()


def parts(a):
    """What a test compares of an MXNet array."""
    d = {'stype': a.stype, 'dense': lst(a), 'dtype': np.dtype(a.dtype).name}
    if a.stype == 'csr':
        d.update(data=lst(a.data), indices=lst(a.indices), indptr=lst(a.indptr))
    elif a.stype == 'row_sparse':
        d.update(data=lst(a.data), indices=lst(a.indices))
    return d


# ------------------------------------------------------------------------ construction
DATA = [1., 0., 3., 4.]          # an explicitly stored zero
INDICES = [0, 2, 1, 2]
INDPTR = [0, 2, 2, 4]
cases['csr_definition'] = parts(mx.nd.sparse.csr_matrix((np.array(DATA, 'f'), INDICES, INDPTR),
                                                        shape=(3, 3)))
cases['csr_definition_f64'] = parts(mx.nd.sparse.csr_matrix((np.array(DATA), INDICES, INDPTR),
                                                            shape=(3, 3)))
cases['csr_definition_inferred_shape'] = parts(mx.nd.sparse.csr_matrix(
    (np.array(DATA, 'f'), INDICES, INDPTR)))
COO = {'data': [1., 2., 5., 0.5], 'row': [0, 2, 0, 2], 'col': [1, 0, 1, 2]}
cases['csr_coo'] = dict(parts(mx.nd.sparse.csr_matrix(
    (COO['data'], (COO['row'], COO['col'])), shape=(3, 4))), input=COO)
sp = spsp.csr_matrix((np.array(DATA, 'f'), INDICES, INDPTR), shape=(3, 3))
cases['csr_scipy'] = parts(mx.nd.sparse.csr_matrix(sp))
cases['csr_scipy_array'] = parts(mx.nd.sparse.array(sp))
DENSE = [[0., 1., 0.], [0., 0., 0.], [2., 0., 3.], [0., 0., 0.]]
cases['csr_dense'] = parts(mx.nd.sparse.csr_matrix(np.array(DENSE, 'f')))
cases['csr_tostype'] = parts(mx.nd.array(DENSE).tostype('csr'))
cases['csr_cast_storage'] = parts(mx.nd.cast_storage(mx.nd.array(DENSE), stype='csr'))
cases['csr_shape_only'] = parts(mx.nd.sparse.csr_matrix((2, 3)))
cases['csr_zeros'] = parts(mx.nd.sparse.zeros('csr', (2, 3)))
RSP_DATA = [[1., 2.], [0., 0.], [3., 4.]]      # an explicitly stored zero row
RSP_IDX = [0, 2, 3]
cases['rsp_definition'] = parts(mx.nd.sparse.row_sparse_array(
    (np.array(RSP_DATA, 'f'), RSP_IDX), shape=(5, 2)))
cases['rsp_definition_inferred_shape'] = parts(mx.nd.sparse.row_sparse_array(
    (np.array(RSP_DATA, 'f'), RSP_IDX)))
cases['rsp_tostype'] = parts(mx.nd.array(DENSE).tostype('row_sparse'))
cases['rsp_zeros'] = parts(mx.nd.zeros((4, 2), stype='row_sparse'))
cases['rsp_shape_only'] = parts(mx.nd.sparse.row_sparse_array((4, 2)))
cases['rsp_back_to_default'] = parts(mx.nd.array(DENSE).tostype('row_sparse').tostype('default'))

# ------------------------------------------------------------------------ operators
csr = mx.nd.sparse.csr_matrix((np.array(DATA, 'f'), INDICES, INDPTR), shape=(3, 3))
cases['csr_slice'] = parts(csr[1:3])
cases['csr_row'] = parts(csr[2])
rsp = mx.nd.sparse.row_sparse_array((np.array(RSP_DATA, 'f'), RSP_IDX), shape=(5, 2))
cases['retain'] = dict(parts(mx.nd.sparse.retain(rsp, mx.nd.array([3, 0, 4], dtype='int64'))),
                       row_ids=[3, 0, 4])
RHS = np.arange(6, dtype='f').reshape(3, 2) + 1
cases['dot_csr_dense'] = parts(mx.nd.sparse.dot(csr, mx.nd.array(RHS)))
cases['dot_csrT_dense'] = parts(mx.nd.sparse.dot(csr, mx.nd.array(RHS), transpose_a=True))
cases['dot_dense_csr'] = parts(mx.nd.sparse.dot(mx.nd.array(RHS.T), csr))
rsp2 = mx.nd.sparse.row_sparse_array((np.array([[1., 1.]], 'f'), [1]), shape=(5, 2))
cases['add_rsp_rsp'] = parts(mx.nd.sparse.add(rsp, rsp2))
cases['subtract_rsp_rsp'] = parts(mx.nd.sparse.subtract(rsp, rsp2))
cases['multiply_rsp_rsp'] = parts(mx.nd.sparse.multiply(rsp, rsp))
COL = np.array([[2.], [3.], [4.]], 'f')
cases['multiply_csr_dense'] = parts(mx.nd.sparse.multiply(csr, mx.nd.array(COL)))
cases['divide_csr_dense'] = parts(mx.nd.sparse.divide(csr, mx.nd.array(COL)))
cases['add_csr_csr'] = parts(mx.nd.sparse.add(csr, csr))
cases['scalar_mul_rsp'] = parts(rsp * 2)
cases['scalar_mul_csr'] = parts(csr * 2)
cases['dense_op_of_rsp'] = parts(rsp + 1)
cases['csr_astype'] = parts(csr.astype('float64'))

# ------------------------------------------------------------------------ .params bytes
params_file = os.path.join(tempfile.mkdtemp(), 'sparse_golden.params')
saved = {'rsp': rsp, 'csr': csr, 'rsp_empty': mx.nd.zeros((3, 2), stype='row_sparse'),
         'csr_empty_rows': mx.nd.sparse.csr_matrix(([5.], [1], [0, 0, 1, 1]), shape=(3, 2)),
         'rsp_f64': mx.nd.array(DENSE, dtype='float64').tostype('row_sparse')}
mx.nd.save(params_file, saved)
with open(params_file, 'rb') as f:
    cases['params'] = {'hex': f.read().hex(), 'arrays': {k: parts(v) for k, v in saved.items()}}
os.remove(params_file)

# ------------------------------------------------------------------------ lazy updates
W = (np.arange(12, dtype='f').reshape(4, 3) / 10 + 0.5).tolist()
G_IDX = [1, 3]
G_DATA = [[0.5, -1.0, 0.25], [0.0, 0.0, 0.0]]       # row 3 stored with zero values


def grad_rsp():
    return mx.nd.sparse.row_sparse_array((np.array(G_DATA, 'f'), G_IDX), shape=(4, 3))


updates = {}
for name, kwargs, w_stype in [
        ('sgd_mom_lazy', dict(momentum=0.9, wd=0.1, learning_rate=0.5), 'default'),
        ('sgd_mom_std', dict(momentum=0.9, wd=0.1, learning_rate=0.5, lazy_update=False),
         'default'),
        ('sgd_lazy', dict(wd=0.1, learning_rate=0.5), 'default'),
        ('sgd_std', dict(wd=0.1, learning_rate=0.5, lazy_update=False), 'default'),
        ('sgd_mom_lazy_rsp_weight', dict(momentum=0.9, wd=0.1, learning_rate=0.5),
         'row_sparse'),
        ('adam_lazy', dict(wd=0.1, learning_rate=0.5), 'default'),
        ('adam_std', dict(wd=0.1, learning_rate=0.5, lazy_update=False), 'default'),
        ('adagrad', dict(learning_rate=0.5), 'default'),
        ('ftrl_rsp_weight', dict(learning_rate=0.5, wd=0.1), 'row_sparse')]:
    opt_name = name.split('_')[0]
    opt = mx.optimizer.create(opt_name, **kwargs)
    w = mx.nd.array(W).tostype(w_stype)
    state = opt.create_state(0, w)
    # the states start non-zero, so that a lazy update's untouched rows show
    states = [] if state is None else (list(state) if isinstance(state, tuple) else [state])
    for k, s in enumerate(states):
        s[:] = mx.nd.array(np.full((4, 3), 0.2 + 0.1 * k, 'f')).tostype(s.stype)
    for _ in range(2):
        opt.update(0, w, grad_rsp(), state)
    updates[name] = {'optimizer': opt_name, 'kwargs': kwargs, 'w_stype': w_stype,
                     'weight': lst(w), 'states': [lst(s) for s in states]}
cases['updates'] = {'weight': W, 'grad_indices': G_IDX, 'grad_data': G_DATA, 'steps': 2,
                    'cases': updates}

# ------------------------------------------------------------------------ kvstore
kv = mx.kv.create('local')
kv.init('w', mx.nd.array(W).tostype('row_sparse'))
out = mx.nd.sparse.zeros('row_sparse', (4, 3))
kv.row_sparse_pull('w', out=out, row_ids=mx.nd.array([3, 1, 3], dtype='int64'))
cases['row_sparse_pull'] = dict(parts(out), row_ids=[3, 1, 3])
kv2 = mx.kv.create('local')
kv2.init('g', mx.nd.sparse.zeros('row_sparse', (4, 3)))
pushed = [mx.nd.sparse.row_sparse_array((np.ones((1, 3), 'f'), [r]), shape=(4, 3))
          for r in (2, 0, 2)]
kv2.push('g', pushed)
got = mx.nd.sparse.zeros('row_sparse', (4, 3))
kv2.pull('g', out=got, ignore_sparse=False)
cases['push_rsp_sum'] = dict(parts(got), pushed_rows=[2, 0, 2])
ignored = mx.nd.ones((4, 3)).tostype('row_sparse')
kv2.pull('g', out=ignored)
cases['pull_ignore_sparse'] = parts(ignored)

# ------------------------------------------------------------------------ gluon
emb = mx.gluon.nn.Embedding(6, 2, sparse_grad=True)
emb.initialize(mx.init.Constant(0.5))
x = mx.nd.array([4, 1, 4])
with mx.autograd.record():
    (emb(x) * mx.nd.array([[1., 2.]])).sum().backward()
cases['embedding_sparse_grad'] = dict(parts(emb.weight.grad()), input=[4, 1, 4])

p = mx.gluon.Parameter('w', shape=(4, 3), grad_stype='row_sparse')
p.initialize(mx.init.Constant(1.0))
trainer = mx.gluon.Trainer([p], 'sgd', {'learning_rate': 0.5, 'momentum': 0.9, 'wd': 0.1})
for _ in range(2):
    with mx.autograd.record():
        y = mx.nd.Embedding(mx.nd.array([2]), p.data(), input_dim=4, output_dim=3,
                            sparse_grad=True)
        y.sum().backward()
    trainer.step(1)
cases['trainer_sparse_grad'] = {'weight': lst(p.data()), 'rows': [2], 'steps': 2}

q = mx.gluon.Parameter('q', shape=(4, 3), stype='row_sparse', grad_stype='row_sparse')
q.initialize(mx.init.Constant(1.0))
trainer = mx.gluon.Trainer([q], 'sgd', {'learning_rate': 0.5, 'momentum': 0.9, 'wd': 0.1})
for _ in range(2):
    rows = mx.nd.array([0, 2])
    with mx.autograd.record():
        w = q.row_sparse_data(rows)
        y = mx.nd.Embedding(rows, w, input_dim=4, output_dim=3,
                            sparse_grad=True)
        y.sum().backward()
    trainer.step(1)
full = q.row_sparse_data(mx.nd.arange(0, 4))
cases['trainer_sparse_weight'] = {'weight': lst(full), 'indices': lst(full.indices),
                                  'rows': [0, 2], 'steps': 2,
                                  'update_on_kvstore': trainer._update_on_kvstore}

with open(OUT, 'w') as f:
    json.dump({'mxnet': mx.__version__, 'cases': cases}, f, indent=0, sort_keys=True)
print('wrote', OUT)
