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


# normalisation references (test_norm.py, test_norm_layers.py)
def F32(v):
    """A parameter as MXNet's C float holds it."""
    return float(np.float32(v))


def numeric_grad_of_first_output(ref, n_args, eps=1e-6):
    """grad_ref for operators whose extra visible outputs (mean, var) get no gradient in
    MXNet: central differences of sum(dy * ref(...)[0]) only."""
    def grad_ref(inputs, outputs, out_grads):
        w = out_grads[0]
        res = []
        for i in range(n_args):
            x = inputs[i].copy()
            g = np.zeros_like(x)
            args = [a.copy() for a in inputs]
            for k in range(x.size):
                for sgn in (1, -1):
                    xx = x.copy().reshape(-1)
                    xx[k] += sgn * eps
                    args[i] = xx.reshape(x.shape)
                    g.reshape(-1)[k] += sgn * float((ref(*args)[0] * w).sum()) / (2 * eps)
            res.append(g)
        return res
    return grad_ref
