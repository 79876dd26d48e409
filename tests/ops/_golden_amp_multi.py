"""Shared by the test modules of ops/amp.py, ops/multi_tensor.py, ops/random_pdf.py and
ops/sample.py: replays the MXNet 1.9.1 cases of ``tests/golden/make_amp_multi.py``
(``tests/golden/data/amp_multi.npz``) and compares."""
import os

import numpy as np

import symgraph as mx
from symgraph.opdef import get_op
import make_amp_multi as G

DATA = np.load(os.path.join(os.path.dirname(G.__file__), 'data', 'amp_multi.npz'))


def names(prefixes):
    return [n for n in G.CASES if n.startswith(prefixes)]


def check(name, rtol=0.0, atol=0.0):
    """Outputs, in-place updated inputs and gradients of case ``name`` equal MXNet's
    (bit for bit when rtol = atol = 0), dtypes and shapes included."""
    outs, states, grads = G.replay(mx, get_op, name, DATA)
    n_out = len([k for k in DATA.files if k.startswith(name + '/out')])
    assert len(outs) == n_out, '%s: %d outputs, MXNet has %d' % (name, len(outs), n_out)
    pairs = [('out%d' % i, o) for i, o in enumerate(outs)]
    pairs += [('st%d' % i, s) for i, s in enumerate(states)]
    pairs += [('grad%d' % i, g) for i, g in grads.items()]
    for key, got in pairs:
        want = DATA['%s/%s' % (name, key)]
        assert got is not None, '%s: no %s' % (name, key)
        assert got.dtype == want.dtype and got.shape == want.shape, \
            '%s %s: %s %s, MXNet %s %s' % (name, key, got.dtype, got.shape, want.dtype,
                                           want.shape)
        if rtol == 0 and atol == 0:
            np.testing.assert_array_equal(got, want, err_msg='%s %s' % (name, key))
        else:
            np.testing.assert_allclose(got.astype(np.float64), want, rtol=rtol, atol=atol,
                                       err_msg='%s %s' % (name, key))
