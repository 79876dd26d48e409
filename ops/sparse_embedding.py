"""``_contrib_SparseEmbedding`` (``mx.sym.contrib.SparseEmbedding``): MXNet's deprecated
Embedding whose weight gradient is row_sparse.

MXNet 1.9.1 registers it with Embedding's parameters (input_dim, output_dim, dtype,
sparse_grad); the lookup, its gradient and its inference are Embedding's. symgraph's sparse
arrays are dense-backed (symgraph/ndarray/sparse.py), so the gradient's values are those
MXNet's row_sparse gradient holds.
"""
from symgraph.opdef import register

from .indexing import Embedding

__all__ = ['SparseEmbedding']


@register
class SparseEmbedding(Embedding):
    """Look up rows of ``weight`` (input_dim, output_dim) at integer-valued ``data``."""

    name = '_contrib_SparseEmbedding'
