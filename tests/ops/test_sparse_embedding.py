"""``_contrib_SparseEmbedding`` (ops/sparse_embedding.py): MXNet's Embedding under its
contrib name, with a row_sparse weight gradient (dense-backed)."""
import numpy as np

import symgraph as mx
from harness import case_tests, OpCase


def _inputs(idx, input_dim, output_dim):
    def make(rng, shapes, dtype):
        return [np.asarray(idx, dtype='float64'), rng.uniform(-1, 1, (input_dim, output_dim))]
    return make


def _ref(input_dim):
    def f(d, w):
        return w[np.clip(np.trunc(d).astype(np.int64), 0, input_dim - 1)]
    return f


#: the registry's rows: Embedding's forward (indices clipped) and a numerically checked
#: weight gradient, under the contrib name
CASES = [
    OpCase('_contrib_SparseEmbedding', dict(input_dim=5, output_dim=3, dtype='float64'),
           [(2, 3), (5, 3)], inputs=_inputs([[0, 4, 4], [7, -1, 2.5]], 5, 3), ref=_ref(5),
           grad=(1,), dtypes=('float64',)),
]

test_forward, test_gradient = case_tests(CASES)


def test_contrib_sparse_embedding_is_embedding():
    data = mx.sym.var('data')
    weight = mx.sym.var('embed_weight', stype='row_sparse')
    emb = mx.sym.contrib.SparseEmbedding(data=data, weight=weight, input_dim=5, output_dim=2,
                                         name='embed')
    assert emb.tojson().count('"_contrib_SparseEmbedding"') == 1
    wv = np.arange(10, dtype='f').reshape(5, 2)
    grad = mx.nd.zeros((5, 2)).tostype('row_sparse')
    ex = emb.bind(mx.cpu(), {'data': mx.nd.array([1, 3, 1]), 'embed_weight': mx.nd.array(wv)},
                  args_grad={'embed_weight': grad}, grad_req={'data': 'null',
                                                               'embed_weight': 'write'})
    np.testing.assert_array_equal(ex.forward(is_train=True)[0].asnumpy(), wv[[1, 3, 1]])
    ex.backward(mx.nd.ones((3, 2)))
    assert grad.indices.asnumpy().tolist() == [1, 3]
    np.testing.assert_array_equal(grad.data.asnumpy(), [[2, 2], [1, 1]])
