"""Real networks of MXNet 1.9.1's examples, run the same way by ``make_real_nets.py``
(MXNet) and ``test_real_nets.py`` (symgraph).

``mxnet_symbols/`` holds ``example/image-classification/symbols/googlenet.py`` and
``resnext.py`` from MXNet 1.9.1 (git tag 1.9.1, commit 3f8f3be), unchanged; they
``import mxnet as mx`` and :func:`build` runs them with ``mx`` bound to the given module.

Parameters come from ``numpy.random.RandomState`` (its stream is the same under NumPy 1.23
and 2.x), so the suite regenerates them without storing the networks' millions of weights.
A gradient is stored as a digest: its L2 norm, its values at 32 fixed positions, and its
dot products with 4 fixed standard-normal vectors (any change of more than rounding moves
the projections by about the change's own L2 norm).

Runs under Python 3.8 / NumPy 1.23 (MXNet) and Python 3.11 / NumPy 2 (symgraph).
"""
import importlib.util
import os
import sys
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SYMBOLS = os.path.join(HERE, 'mxnet_symbols')

#: name -> (file, get_symbol keywords, data shape); batch 2, small images (global pooling
#: at the end makes googlenet's size free down to 64x64)
NETS = {
    'googlenet': ('googlenet.py', {'num_classes': 10}, (2, 3, 64, 64)),
    'resnext26_cifar': ('resnext.py', {'num_classes': 10, 'num_layers': 26,
                                       'image_shape': '3,32,32'}, (2, 3, 32, 32)),
}
N_SAMPLES = 32
N_PROJ = 4


def build(mx, net):
    """``get_symbol(...)`` of the example file, with ``import mxnet`` giving ``mx``; the
    automatic names (``pooling0``, ...) do not depend on what was built before."""
    fname, kwargs, _ = NETS[net]
    saved = sys.modules.get('mxnet')
    sys.modules['mxnet'] = mx
    try:
        spec = importlib.util.spec_from_file_location('mxnet_example_' + net,
                                                      os.path.join(SYMBOLS, fname))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        with mx.name.NameManager():     # fresh automatic names (pooling0, ...) every time
            return module.get_symbol(**kwargs)
    finally:
        if saved is None:
            del sys.modules['mxnet']
        else:
            sys.modules['mxnet'] = saved


def _rs(net, name):
    return np.random.RandomState(zlib.crc32(('%s/%s' % (net, name)).encode()))


def arg_value(net, name, shape):
    """The value of argument ``name``: activations stay of order one through the network
    (He-scaled weights), so the softmax is not saturated and every gradient is alive."""
    rs = _rs(net, name)
    if name == 'softmax_label':
        return rs.randint(0, 10, size=shape).astype(np.float64)
    if name == 'data':
        return rs.standard_normal(shape)
    if name.endswith('weight') and len(shape) > 1:
        return rs.standard_normal(shape) * np.sqrt(2.0 / np.prod(shape[1:]))
    if name.endswith('gamma'):
        return 1 + 0.1 * rs.standard_normal(shape)
    return 0.1 * rs.standard_normal(shape)


def aux_value(net, name, shape):
    rs = _rs(net, name)
    if name.endswith('moving_var'):
        return 1 + 0.1 * np.abs(rs.standard_normal(shape))
    return 0.1 * rs.standard_normal(shape)


def digest(net, name, g):
    """(norm, samples, projections) of gradient ``g`` (float64)."""
    g = np.asarray(g, dtype=np.float64).ravel()
    rs = _rs(net, 'digest:' + name)
    idx = rs.randint(0, g.size, size=N_SAMPLES)
    proj = np.array([rs.standard_normal(g.size).dot(g) for _ in range(N_PROJ)])
    return np.linalg.norm(g), g[idx], proj
