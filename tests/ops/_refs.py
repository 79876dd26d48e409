"""NumPy references and input makers shared by several tests/ops files."""
import numpy as np


def _sm(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


F16 = ('float16', 'float32', 'float64')


GN = 'GroupNorm'
