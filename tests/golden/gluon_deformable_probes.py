"""Golden data of ``gluon.contrib.cnn`` (DeformableConvolution, ModulatedDeformableConvolution)
from MXNet 1.9.1.

Run from any checkout with MXNet's interpreter (or set ``MXNET_PYTHON`` to it)::

    MXNET_PYTHON=/path/to/mxnet/python python tests/golden/gluon_deformable_probes.py

Writes ``tests/golden/data/gluon_deformable.npz``: for every case of :data:`CASES` (a layer
built by :func:`build`, the same code here and in the tests) the input ``<case>/x``, the
parameters ``<case>/param/<name>`` (random values, set by name after the deferred
initialization: nonzero offset weights, so that the samples do move), the output of a
hybridized training forward under ``autograd.record()`` ``<case>/y``, and, where MXNet's CPU
kernels compute them (its modulated layer's backward is GPU only), the gradients for the
head gradient ``<case>/dy`` of the input (``<case>/dx``) and of every parameter
(``<case>/grad/<name>``); and ``<case>/names``, the parameter names in order.

This module imports MXNet only when run: the tests import :func:`build` and :data:`CASES`.
"""
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, 'data', 'gluon_deformable.npz')

#: case name -> (layer class name, keyword arguments, input shape)
CASES = {
    'deform_3x3': ('DeformableConvolution', dict(channels=4, kernel_size=(3, 3), padding=1),
                   (2, 3, 6, 7)),
    'deform_groups_relu': ('DeformableConvolution',
                           dict(channels=4, kernel_size=(3, 2), num_deformable_group=2,
                                activation='relu', offset_use_bias=False), (1, 4, 6, 5)),
    'modulated_3x3': ('ModulatedDeformableConvolution',
                      dict(channels=4, kernel_size=3, strides=2, padding=1, use_bias=False),
                      (2, 2, 7, 6)),
}


def build(mx, case):
    """The case's layer, made under a fresh name scope, initialized and hybridized."""
    cls_name, kwargs, _ = CASES[case]
    with mx.name.NameManager():
        layer = getattr(mx.gluon.contrib.cnn, cls_name)(**kwargs)
    layer.initialize()
    layer.hybridize()
    return layer


def main():
    import mxnet as mx
    rng = np.random.RandomState(7)
    out = {}
    for case, (_, _, shape) in CASES.items():
        layer = build(mx, case)
        x = rng.uniform(-1, 1, shape).astype(np.float32)
        layer(mx.nd.array(x))                    # the deferred initialization
        params = layer.collect_params()
        out[case + '/names'] = np.array(list(params.keys()))
        for name, p in params.items():
            v = rng.uniform(-0.5, 0.5, p.shape).astype(np.float32)
            p.set_data(mx.nd.array(v))
            out['%s/param/%s' % (case, name)] = v
        xa = mx.nd.array(x)
        xa.attach_grad()
        with mx.autograd.record():
            y = layer(xa)
        out[case + '/x'] = x
        out[case + '/y'] = y.asnumpy()
        dy = rng.uniform(-1, 1, y.shape).astype(np.float32)
        try:
            y.backward(mx.nd.array(dy))
            mx.nd.waitall()
        except mx.base.MXNetError as err:
            # MXNet 1.9.1's CPU kernels lack some backward parts ("only implemented in GPU")
            print('%s: no gradients (%s)' % (case, str(err).strip().splitlines()[-1]))
            continue
        out[case + '/dy'] = dy
        out[case + '/dx'] = xa.grad.asnumpy()
        for name, p in params.items():
            out['%s/grad/%s' % (case, name)] = p.grad().asnumpy()
    np.savez_compressed(OUT, **out)
    print('wrote', OUT)


if __name__ == '__main__':
    try:
        import mxnet  # noqa: F401
    except ImportError:
        py = os.environ.get('MXNET_PYTHON')
        if not py:
            sys.exit('gluon_deformable_probes.py: mxnet is not importable here; set '
                     'MXNET_PYTHON to a Python with MXNet 1.9.1')
        sys.exit(subprocess.call([py] + sys.argv))
    main()
