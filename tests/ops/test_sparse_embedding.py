"""``_contrib_SparseEmbedding`` (ops/sparse_embedding.py): MXNet's Embedding under its
contrib name, with a row_sparse weight gradient (dense-backed)."""
import numpy as np

import symgraph as mx


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
