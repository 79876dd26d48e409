"""NumPy references and input makers shared by several tests/ops files."""
import numpy as np

import symgraph as mx


def _sm(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


F16 = ('float16', 'float32', 'float64')


GN = 'GroupNorm'


def _with_index(index, pos=1, dtype=None):
    """Inputs: uniform data, with the fixed ``index`` array at position ``pos``."""
    def make(rng, shapes, dt):
        arrs = [rng.uniform(-1, 1, s) for s in shapes]
        arrs[pos] = np.array(index, dtype=dtype or dt)
        return arrs
    return make


def _v(*names):
    return [mx.sym.var(n) for n in names]


def _infer(sym, **shapes):
    return sym.infer_shape(**shapes)[1]


X, Y = mx.sym.var('x'), mx.sym.var('y')


def given(*arrays):
    """Inputs: the given arrays, lists in the case's dtype (NumPy integer arrays kept)."""
    def make(rng, shapes, dtype):
        return [a if isinstance(a, np.ndarray) and a.dtype.kind in 'iu' else
                np.asarray(a, dtype=dtype) for a in arrays]
    return make


def _rois(rows):
    """Inputs: uniform data, then the fixed roi ``rows`` (float64)."""
    def make(rng, shapes, dtype):
        return [rng.uniform(-1, 1, shapes[0]), np.array(rows, dtype=np.float64)]
    return make
